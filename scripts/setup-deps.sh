#!/usr/bin/env bash
#===- setup-deps.sh - Install everything Torsor builds and tests with ----===#
#
# Idempotent: checks first and only calls apt/pip for what is missing, so a
# warm machine pays a second or two. Works as root (CI, sessions) or through
# sudo. Note: libmlir-22-dev conflicts with every other libmlir-N-dev; apt
# removes the other one.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

APT_PACKAGES=(
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools lld-22 clang-22
  ninja-build ccache cmake g++ libgtest-dev clang-format pkgconf
  libclang-rt-22-dev  # ASan/UBSan and libFuzzer runtimes (make test-sanitize, make fuzz)
)
PY_PACKAGES=(numpy scipy mpmath ml_dtypes wheel)  # wheel: pip builds python/ offline in make test
PYTHON=${PYTHON:-python3}

missing=()
for p in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "setup-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi

pymissing=()
for p in "${PY_PACKAGES[@]}"; do
  "$PYTHON" -c "import $p" 2>/dev/null || pymissing+=("$p")
done
if ((${#pymissing[@]})); then
  echo "setup-deps: pip installing ${pymissing[*]}"
  "$PYTHON" -m pip install -q "${pymissing[@]}"
fi
