#!/usr/bin/env bash
#===- bench/setup-venv.sh - Python venv for the benchmark peers ------------===#
#
# Part of the Torsor project.
#
#===------------------------------------------------------------------------===#
#
# Creates the virtual environment the benchmarks run their peers in:
# PyTorch 2.x (CPU), JAX (jax[cpu]), numpy, scipy, matplotlib, psutil.
# Never used by `make test` (benchmarks are not tests).
#
# Usage: bench/setup-venv.sh [VENV_DIR]      (default: $TORSOR_BENCH_VENV or
#                                             /work/bench-venv)
#
# PyTorch comes from its CPU-only wheel index when that is reachable (no CUDA
# libraries); otherwise from PyPI, whose Linux wheel also pulls the NVIDIA
# runtime packages (a few GB, unused on the CPU).
#
#===------------------------------------------------------------------------===#
set -euo pipefail

VENV="${1:-${TORSOR_BENCH_VENV:-/work/bench-venv}}"
PYTHON="${PYTHON:-python3}"
CPU_INDEX="https://download.pytorch.org/whl/cpu"

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "creating $VENV with $($PYTHON --version)"
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip)
"${PIP[@]}" install --upgrade pip wheel

# Torch first: try the CPU-only index, fall back to PyPI.
if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
  if curl -sf --max-time 15 -o /dev/null "$CPU_INDEX/torch/"; then
    echo "installing torch from the CPU-only index"
    "${PIP[@]}" install torch --index-url "$CPU_INDEX"
  else
    echo "CPU-only torch index unreachable; installing torch from PyPI"
    "${PIP[@]}" install torch
  fi
fi

"${PIP[@]}" install "jax[cpu]" numpy scipy matplotlib psutil

"$VENV/bin/python" - <<'PY'
import jax, matplotlib, numpy, psutil, scipy, torch
print("torch", torch.__version__, "jax", jax.__version__, "numpy",
      numpy.__version__, "matplotlib", matplotlib.__version__)
assert int(torch.__version__.split(".")[0]) >= 2, "need PyTorch 2.x"
print("jax devices:", jax.devices())
PY
echo "bench venv ready: $VENV"
