#!/usr/bin/env bash
#===- check-format.sh - Fail on C++ that clang-format would change -------===#
#
# Checks every tracked (and new, unignored) C/C++ file against .clang-format.
# `--fix` rewrites them in place instead.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
mode=(--dry-run -Werror)
[ "${1:-}" = "--fix" ] && mode=(-i)
mapfile -t files < <(git ls-files --cached --others --exclude-standard \
  -- '*.cpp' '*.h' '*.c' | while read -r f; do [ -f "$f" ] && echo "$f"; done)
[ ${#files[@]} -eq 0 ] && { echo "check-format: no C++ files"; exit 0; }
if ! "$CLANG_FORMAT" "${mode[@]}" "${files[@]}"; then
  echo "check-format: run 'make format' to fix the files above" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files clean"
