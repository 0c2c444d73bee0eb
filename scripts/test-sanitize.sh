#!/usr/bin/env bash
#===- test-sanitize.sh - Unit and lit suites on the ASan+UBSan build ------===#
#
# Usage: scripts/test-sanitize.sh BUILD_DIR JOBS
# BUILD_DIR was configured with -DTORSOR_SANITIZE=ON (make test-sanitize).
# Runs the GoogleTest binaries and the lit suite there; lit.cfg.py sets
# ASAN_OPTIONS/UBSAN_OPTIONS so any report aborts the tool that made it.
# The format, dependency and Python-package checks test sources or a pip
# install, not our code paths, and stay in `make test` only.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
BUILD=${1:?usage: test-sanitize.sh BUILD_DIR JOBS}
JOBS=${2:-2}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:allow_user_poisoning=0
export UBSAN_OPTIONS=abort_on_error=1:print_stacktrace=1

# The unit tests (every ctest entry but lit and the source checks).
ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" \
  -E '^(lit|clang-format|runtime-has-no-llvm-includes|python-package)$'

# lit, minus the suites listed in test/sanitize-excludes.txt (one regular
# expression per line, with the reason; docs/reliability.md).
filter=$(grep -vE '^\s*(#|$)' "$ROOT/test/sanitize-excludes.txt" | sed 's/\s*#.*//' | paste -sd'|')
"${PYTHON:-python3}" /usr/lib/llvm-22/bin/lit -s -j "$JOBS" \
  ${filter:+--filter-out "$filter"} "$BUILD/test"
