"""_locate.py - where the Torsor build's torsorc and runtime library are.

Search order (first hit wins):
  1. $TORSOR_RUNTIME_LIB (the library file) / $TORSOR_BIN (the folder with
     torsorc, as the lit tests use it);
  2. $TORSOR_BUILD_DIR (a build folder: bin/ and lib/ under it);
  3. the build folder recorded when the package was installed
     (_build_config.py, written by setup.py);
  4. ../../build next to this file (a source checkout used in place, e.g.
     `pip install -e ./python` or PYTHONPATH=python);
  5. PATH (torsorc only), and lib/ next to that torsorc.
"""
import os
import shutil

from .errors import TorsorError

_HERE = os.path.dirname(os.path.abspath(__file__))


def _build_dirs():
    """Candidate build folders, most specific first."""
    dirs = [os.environ.get("TORSOR_BUILD_DIR", "")]
    try:
        from ._build_config import BUILD_DIR  # written at install time
        dirs.append(BUILD_DIR)
    except ImportError:
        pass
    dirs.append(os.path.join(os.path.dirname(os.path.dirname(_HERE)), "build"))
    return [d for d in dirs if d]


def torsorc_path():
    """Path of torsorc; raises TorsorError naming every place looked at."""
    looked = []
    env_bin = os.environ.get("TORSOR_BIN")
    candidates = [os.path.join(env_bin, "torsorc")] if env_bin else []
    candidates += [os.path.join(d, "bin", "torsorc") for d in _build_dirs()]
    for c in candidates:
        looked.append(c)
        if os.access(c, os.X_OK):
            return c
    on_path = shutil.which("torsorc")
    if on_path:
        return on_path
    raise TorsorError("cannot find torsorc (looked in %s and on PATH); run "
                      "`make build` and set TORSOR_BUILD_DIR to the build folder"
                      % ", ".join(looked))


def runtime_library_path():
    """Path of libtorsor_runtime.so; raises TorsorError when missing."""
    explicit = os.environ.get("TORSOR_RUNTIME_LIB")
    if explicit:
        if not os.path.exists(explicit):
            raise TorsorError("TORSOR_RUNTIME_LIB=%s does not exist" % explicit)
        return explicit
    looked = []
    env_bin = os.environ.get("TORSOR_BIN")
    dirs = [os.path.join(env_bin, os.pardir, "lib")] if env_bin else []
    dirs += [os.path.join(d, "lib") for d in _build_dirs()]
    on_path = shutil.which("torsorc")
    if on_path:
        dirs.append(os.path.join(os.path.dirname(on_path), os.pardir, "lib"))
    for d in dirs:
        c = os.path.normpath(os.path.join(d, "libtorsor_runtime.so"))
        looked.append(c)
        if os.path.exists(c):
            return c
    raise TorsorError("cannot find libtorsor_runtime.so (looked at %s); run "
                      "`make build` and set TORSOR_BUILD_DIR to the build folder"
                      % ", ".join(looked))
