#!/usr/bin/env bash
#===- gpu-check-prepare.sh - Stage the GPU check (run on the build machine) -===#
#
# Compiles every example for the CPU and for NVPTX (and the pose-attention
# examples' backward, torsorc --grad, for both), makes seeded inputs,
# weights and cotangents, computes the CPU reference outputs and gradients, and stages everything
# scripts/gpu-check.sh needs on a GPU machine that has no LLVM/MLIR into one
# folder: the models (.so + manifests), torsor-run and libtorsor_runtime.so
# (installed with an $ORIGIN rpath), the data, the check script, and
# bench/gpu_attention.py with its SO(3)/SE(3) models (-O2, nvptx), and the
# nvptx models torsor.nn / torsor.distributed load on CUDA tensors
# (prebuilt/, see scripts/gpu_ring_check.py --stage-models; torch needed:
# $TORSOR_TORCH_PYTHON). The folder is checked to be small enough to carry
# (< 60 MiB).
#
# usage: scripts/gpu-check-prepare.sh [--build DIR] [--out DIR] [--gpu-arch sm_90]
#                                     [--size N]
#   --build DIR     the build folder with torsorc and torsor-run (default build)
#   --out DIR       the stage folder (default BUILD/gpu-check)
#   --gpu-arch A    the chip to compile for (default sm_90, the H200)
#   --size N        the extent of every symbolic dim (default 256)
#
# Exit status: 0 when every example has both models; 3 when the stage is
# complete except for nvptx models the compiler could not build (the
# message says which and why); 1 on any other failure.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
OUT=
ARCH=sm_90
SIZE=256
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --gpu-arch) ARCH=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    -h|--help) sed -n '3,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check-prepare: unknown argument '$1' (see --help)" >&2; exit 1 ;;
  esac
done
BUILD=$(cd "$BUILD" && pwd)
OUT=${OUT:-$BUILD/gpu-check}
PY=${PYTHON:-python3}

for tool in torsorc torsor-run; do
  if [ ! -x "$BUILD/bin/$tool" ]; then
    echo "gpu-check-prepare: $BUILD/bin/$tool is missing; run 'make build' first" >&2
    exit 1
  fi
done

rm -rf "$OUT"
mkdir -p "$OUT/models"

# The runtime, as installed: bin/torsor-run finds lib/ through $ORIGIN.
cmake --install "$BUILD" --component TorsorRuntime --prefix "$OUT" >/dev/null
rm -rf "$OUT/include" "$OUT/lib/cmake" "$OUT/lib/pkgconfig"

# Every example, for both targets. An nvptx failure is recorded, not fatal,
# so the rest of the stage is still made and the reason reaches the plan.
missing=()
for tsr in "$ROOT"/examples/*.tsr; do
  name=$(basename "$tsr" .tsr)
  "$BUILD/bin/torsorc" "$tsr" -o "$OUT/models/$name.cpu.so" --target=cpu
  if ! "$BUILD/bin/torsorc" "$tsr" -o "$OUT/models/$name.nvptx.so" \
      --target=nvptx --gpu-arch="$ARCH" 2>"$OUT/models/$name.nvptx.err"; then
    rm -f "$OUT/models/$name.nvptx.so" "$OUT/models/$name.nvptx.json"
    missing+=("$name")
  else
    rm -f "$OUT/models/$name.nvptx.err"
  fi
done

# The backward (torsorc --grad) of the pose-attention examples, whose
# gradients go through the flash backward of Lie attention.
for name in se3_pose_attention se2_planar; do
  tsr=$ROOT/examples/$name.tsr
  "$BUILD/bin/torsorc" "$tsr" --grad -o "$OUT/models/$name.grad.cpu.so" --target=cpu
  if ! "$BUILD/bin/torsorc" "$tsr" --grad -o "$OUT/models/$name.grad.nvptx.so" \
      --target=nvptx --gpu-arch="$ARCH" 2>"$OUT/models/$name.grad.nvptx.err"; then
    rm -f "$OUT/models/$name.grad.nvptx.so" "$OUT/models/$name.grad.nvptx.json"
    missing+=("$name (--grad)")
  else
    rm -f "$OUT/models/$name.grad.nvptx.err"
  fi
done
"$PY" "$ROOT/scripts/gpu_check_stage.py" "$OUT" "$BUILD/bin/torsor-run" "$ROOT" \
  "$SIZE" "$ARCH"

# torsor.torch on CUDA tensors (gpu-check.sh step 2b): the package, pure
# Python, and the check script.
mkdir -p "$OUT/python"
cp -r "$ROOT/python/torsor" "$OUT/python/torsor"
rm -rf "$OUT/python/torsor/__pycache__" "$OUT/python/torsor/_build_config.py"
cp "$ROOT/scripts/gpu_torch_check.py" "$OUT/torch_check.py"
# torsor.distributed over NCCL (gpu-check.sh step 2c), with the tests'
# reference block kernels.
cp "$ROOT/scripts/gpu_ring_check.py" "$OUT/ring_check.py"
cp "$ROOT/test/Python/ring_reference.py" "$OUT/ring_reference.py"
# ... and the compiled kernels torsor.nn / torsor.distributed load on CUDA
# tensors there: the nvptx block forward/backward and GrassmannMix models
# (and the cpu models of the single-process reference and the groups'
# bases), prebuilt into $OUT/prebuilt, since the GPU machine has no
# torsorc. torsor.nn needs torch: $TORSOR_TORCH_PYTHON (default $PYTHON)
# runs it; without torch the compiled runs are skipped there.
TORCH_PY=${TORSOR_TORCH_PYTHON:-$PY}
if ! PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" TORSOR_BUILD_DIR="$BUILD" \
    TORSOR_CACHE_DIR="$OUT/.cache" "$TORCH_PY" "$ROOT/scripts/gpu_ring_check.py" \
    --stage-models "$OUT" "$ARCH" >"$OUT/prebuilt.log" 2>&1; then
  echo "gpu-check-prepare: prebuilding torsor.nn's nvptx models failed:" >&2
  tail -8 "$OUT/prebuilt.log" | sed 's/^/    /' >&2
  exit 1
fi
grep -h "SKIPPED" "$OUT/prebuilt.log" >&2 || true
rm -rf "$OUT/.cache"
cp "$ROOT/scripts/gpu-check.sh" "$OUT/gpu-check.sh"
chmod +x "$OUT/gpu-check.sh"
# The attention benchmark with its sibling modules (harness, peers), and
# its SO(3)/SE(3) lie_attention models compiled for the GPU at -O2 (the
# fused kernel of geo-map-attention-to-gpu) into bench/gpu-models, where
# gpu_attention.py looks by default.
if [ -f "$ROOT/bench/gpu_attention.py" ]; then
  mkdir -p "$OUT/bench"
  cp "$ROOT"/bench/*.py "$OUT/bench/"
  if ! "$PY" "$ROOT/bench/gpu_attention.py" --build-models "$OUT/bench/gpu-models" \
      --torsorc "$BUILD/bin/torsorc" --gpu-arch "$ARCH" >"$OUT/bench/build.log" 2>&1; then
    echo "gpu-check-prepare: compiling the attention benchmark's models failed:" >&2
    tail -5 "$OUT/bench/build.log" | sed 's/^/    /' >&2
    exit 1
  fi
  rm -f "$OUT/bench/build.log"
fi

bytes=$(du -sb "$OUT" | cut -f1)
mib=$(( (bytes + 1048575) / 1048576 ))
if [ "$bytes" -gt $((60 * 1048576)) ]; then
  echo "gpu-check-prepare: the stage is $mib MiB, over the 60 MiB that can be carried; use a smaller --size" >&2
  exit 1
fi

rel=${OUT#"$ROOT"/}
echo "gpu-check-prepare: staged $OUT ($mib MiB)"
echo "  check it here:   $OUT/gpu-check.sh --dry-run"
echo "  on the GPU:      carry [\"$rel\"], command: bash $rel/gpu-check.sh (timeout_s 480)"
if [ ${#missing[@]} -gt 0 ]; then
  echo "gpu-check-prepare: no nvptx model for ${#missing[@]} example(s): ${missing[*]}." >&2
  echo "  torsorc --target=nvptx said, for ${missing[0]}:" >&2
  sed 's/^/    /' "$OUT/models/${missing[0]}.nvptx.err" | head -3 >&2
  echo "  The NVPTX compiler side is needed for those; gpu-check.sh will report them as not compiled." >&2
  exit 3
fi
