#!/usr/bin/env bash
#===- check-runtime-deps.sh - The runtime stays free of LLVM/MLIR --------===#
#
# Fails if anything under runtime/ includes an LLVM or MLIR header or names
# an LLVM/MLIR library in its CMake files, or includes a CUDA header or
# links a CUDA library (CUDA is reached through dlopen alone; docs/runtime.md).
#
#===----------------------------------------------------------------------===#
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
if grep -rnE '#[[:space:]]*include[[:space:]]*[<"](llvm|mlir|llvm-c|mlir-c)/' \
    "$root/runtime"; then
  echo "error: runtime/ must not include LLVM or MLIR headers" >&2
  exit 1
fi
if grep -rnE '\b(LLVM[A-Za-z]*|MLIR[A-Za-z]*)\b' --include=CMakeLists.txt \
    "$root/runtime" | grep -v '^\s*#'; then
  echo "error: runtime/ CMake must not link LLVM or MLIR" >&2
  exit 1
fi
if grep -rnE '#[[:space:]]*include[[:space:]]*[<"](cuda|cuda_runtime|cuda_runtime_api|cudaTypedefs)\.h' \
    "$root/runtime"; then
  echo "error: runtime/ must not include CUDA headers (declare what it needs in src/cuda/CudaDriver.h)" >&2
  exit 1
fi
if grep -rnE '\b(CUDA::|CUDAToolkit|cudart|-lcuda)' --include=CMakeLists.txt \
    "$root/runtime" | grep -v '^\s*#'; then
  echo "error: runtime/ CMake must not link CUDA (it dlopens libcuda.so.1)" >&2
  exit 1
fi
echo "runtime is free of LLVM/MLIR and CUDA headers"
