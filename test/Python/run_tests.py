#!/usr/bin/env python3
"""run_tests.py - the Python package's test suite, as ctest runs it.

1. Creates a fresh virtual environment in <build>/python-venv (with the
   system site-packages, so NumPy/SciPy come from scripts/setup-deps.sh and
   nothing is downloaded; PyTorch is used only if it is already installed
   there — make test never installs it).
2. Installs the package from a copy of python/ into it with pip (offline:
   --no-index --no-build-isolation --no-deps), recording <build> as the
   Torsor build it belongs to.
3. Runs test/Python/test_*.py with the venv's interpreter, from a scratch
   folder, with TORSOR_* variables removed: the installed package must find
   torsorc and the runtime on its own. Compiled models are cached in a
   fresh <build>/python-cache.

    run_tests.py --build BUILD [--source SRC] [--in-place] [-k PATTERN]

--in-place skips the venv and tests python/ from the source tree with the
current interpreter (quick iteration, or an interpreter that has torch).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="the Torsor build folder")
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(HERE)))
    ap.add_argument("--in-place", action="store_true")
    ap.add_argument("-k", dest="pattern", help="only tests matching this")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    source = os.path.abspath(args.source)

    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TORSOR_") and k != "PYTHONPATH"}
    cache = os.path.join(build, "python-cache")
    shutil.rmtree(cache, ignore_errors=True)
    env["TORSOR_CACHE_DIR"] = cache
    env["TORSOR_TEST_SOURCE"] = source
    env["TORSOR_TEST_BUILD"] = build

    if args.in_place:
        python = sys.executable
        env["PYTHONPATH"] = os.path.join(source, "python")
        env["TORSOR_BUILD_DIR"] = build
        env["TORSOR_TEST_IN_PLACE"] = "1"
    else:
        venv = os.path.join(build, "python-venv")
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.check_call([sys.executable, "-m", "venv", "--system-site-packages",
                               "--without-pip", venv])
        python = os.path.join(venv, "bin", "python")
        pkg = os.path.join(build, "python-src")
        shutil.rmtree(pkg, ignore_errors=True)
        shutil.copytree(os.path.join(source, "python"), pkg,
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        install_env = dict(env, TORSOR_BUILD_DIR=build, PIP_ROOT_USER_ACTION="ignore")
        # The venv has no pip of its own; the system pip installs into the
        # venv because it runs under the venv's interpreter.
        subprocess.check_call([python, "-m", "pip", "install", "-q", "--no-index",
                               "--no-build-isolation", "--no-deps",
                               "--disable-pip-version-check", pkg], env=install_env)
        env["TORSOR_TEST_VENV"] = venv

    cmd = [python, "-m", "unittest", "discover", "-s", HERE, "-t", HERE,
           "-p", "test_*.py", "-v"]
    if args.pattern:
        cmd += ["-k", args.pattern]
    with tempfile.TemporaryDirectory(prefix="torsor-pytest-") as scratch:
        return subprocess.call(cmd, env=env, cwd=scratch)


if __name__ == "__main__":
    sys.exit(main())
