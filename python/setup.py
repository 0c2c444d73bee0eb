"""setup.py - records the Torsor build a package install belongs to.

Everything else is in pyproject.toml. The package calls two things from a
Torsor build: `torsorc` (torsor.compile) and `libtorsor_runtime.so` (every
model call). At install time this writes `torsor/_build_config.py` with the
build directory, taken from $TORSOR_BUILD_DIR or else `../build` next to
this file (where `make build` puts it). At run time $TORSOR_BUILD_DIR,
$TORSOR_BIN and $TORSOR_RUNTIME_LIB still override it (torsor/_locate.py).
"""
import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def find_build_dir():
    """The build directory to record, or "" when none is found."""
    candidates = [os.environ.get("TORSOR_BUILD_DIR", ""),
                  os.path.join(os.path.dirname(HERE), "build")]
    for c in candidates:
        if c and os.path.exists(os.path.join(c, "lib", "libtorsor_runtime.so")):
            return os.path.abspath(c)
    return ""


class BuildPyWithConfig(build_py):
    """build_py that also writes torsor/_build_config.py into the build."""

    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "torsor", "_build_config.py")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as f:
            f.write('"""Written by setup.py at install time."""\n')
            f.write("BUILD_DIR = %r\n" % find_build_dir())


setup(cmdclass={"build_py": BuildPyWithConfig})
