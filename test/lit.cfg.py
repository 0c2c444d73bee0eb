# -*- Python -*-
"""lit configuration for Torsor's FileCheck/IR/numerics suites.

Features:
  ptxas     - CUDA's ptxas is installed (PTX can be assembled)
  libdevice - CUDA's libdevice bitcode is present
  cuda      - a GPU is present (libcuda.so.1 loads and reports a device);
              only test/Integration/ uses it.
"""
import ctypes
import os
import shutil

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "Torsor"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".tsr", ".test", ".py"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "lib", "Inputs", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.torsor_obj_root, "test")

# CUDA: gpu-module-to-binary silently skips libdevice unless CUDA_HOME is set.
cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
config.environment["CUDA_HOME"] = cuda_home
if os.path.exists(os.path.join(cuda_home, "bin", "ptxas")):
    config.available_features.add("ptxas")
if os.path.exists(os.path.join(cuda_home, "nvvm", "libdevice", "libdevice.10.bc")):
    config.available_features.add("libdevice")


def _has_gpu():
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return False
    return count.value > 0


# ml_dtypes (bf16 references) is installed by scripts/setup-deps.sh; tests
# that need it say `REQUIRES: ml_dtypes` and are reported UNSUPPORTED, not
# passed, where it is missing.
import subprocess
if subprocess.run([config.python_executable, "-c", "import ml_dtypes"],
                  capture_output=True).returncode == 0:
    config.available_features.add("ml_dtypes")


if _has_gpu():
    config.available_features.add("cuda")

llvm_config.use_default_substitutions()
# lit's defaults map %python to lit's own interpreter; the tests need the one
# CMake found (with numpy/scipy/mpmath).
config.substitutions = [(k, v) for k, v in config.substitutions if k != "%python"]
# Sanitizer builds (cmake -DTORSOR_SANITIZE=ON, docs/reliability.md): any
# report aborts, so `not tool` cannot mistake a sanitizer finding for the
# expected error. Python is not instrumented: it preloads the shared ASan
# runtime to load libtorsor_runtime.so through ctypes, and does not check
# its own leaks. allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons
# its slabs when inlined into our instrumented code, but Debian's
# uninstrumented libMLIR allocates from the same slabs without unpoisoning,
# which ASan would report as use-after-poison.
python_command = config.python_executable
if getattr(config, "torsor_sanitize", "OFF").upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("sanitize")
    config.environment["ASAN_OPTIONS"] = "abort_on_error=1:detect_leaks=1:allow_user_poisoning=0"
    config.environment["UBSAN_OPTIONS"] = "abort_on_error=1:print_stacktrace=1"
    python_command = ("env LD_PRELOAD=%s ASAN_OPTIONS=abort_on_error=1:detect_leaks=0:allow_user_poisoning=0 %s"
                      % (config.torsor_asan_runtime, config.python_executable))
config.torsor_python_command = python_command
config.substitutions.append(("%python", python_command))
config.substitutions.append(("%torsor_src", config.torsor_src_root))
config.substitutions.append(("%torsor_bin", config.torsor_tools_dir))
config.environment["PYTHONPATH"] = os.path.join(config.torsor_src_root, "test", "lib")
config.environment["TORSOR_BIN"] = config.torsor_tools_dir

# Our tools first, then LLVM's (FileCheck, not, count).
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.torsor_tools_dir, append_path=True)
# torsorc verifies the IR only after its whole pipeline unless asked to do
# so after every pass, as torsor-opt does; the tests ask.
tools = [
    "torsor-opt",
    ToolSubst("torsorc", extra_args=["--verify-each"]),
    "torsor-run",
    "FileCheck",
    "not",
    "count",
]
llvm_config.add_tool_substitutions(tools, [config.torsor_tools_dir, config.llvm_tools_dir])
