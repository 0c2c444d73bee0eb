#!/usr/bin/env bash
#===- fuzz.sh - Run every torsor-fuzz-* target for a fixed time -----------===#
#
# Usage: scripts/fuzz.sh BUILD_DIR SECONDS
# Each target runs alone (-jobs=1; CI machines have two cores) on a scratch
# copy of its seed corpus fuzz/corpus/<name>/ (the committed corpus is never
# written), with fuzz/dict/<name>.dict when there is one. Prints executions
# per target and the total; exits non-zero on any crash, timeout, leak, OOM
# or sanitizer report, leaving the reproducer in BUILD_DIR/fuzz-artifacts/.
#
# FUZZ_SEED: libFuzzer's seed (default 1, repeatable; 0 asks for a fresh
# one). FUZZ_KEEP_CORPUS=DIR: grow the corpus in DIR/<name>/ and keep it
# for the next run instead of a scratch directory (make fuzz-nightly).
# FUZZ_TARGETS: space-separated names to run (default: every target).
#
#===----------------------------------------------------------------------===#
set -uo pipefail
BUILD=${1:?usage: fuzz.sh BUILD_DIR SECONDS}
SECONDS_EACH=${2:?usage: fuzz.sh BUILD_DIR SECONDS}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARTIFACTS=$BUILD/fuzz-artifacts
mkdir -p "$ARTIFACTS"
# allocator_may_return_null: a failed allocation returns NULL, as it does
# outside ASan, so the runtime's out-of-memory paths are what gets tested
# (the capi target binds tensors whose outputs need hundreds of GB).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allow_user_poisoning=0:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

shopt -s nullglob
targets=("$BUILD"/bin/torsor-fuzz-*)
if ((${#targets[@]} == 0)); then
  echo "fuzz: no torsor-fuzz-* targets in $BUILD/bin" >&2
  exit 1
fi
total=0
failed=0
printf '%-24s %12s %10s %8s\n' target executions exec/s cov
for exe in "${targets[@]}"; do
  name=${exe##*/torsor-fuzz-}
  if [ -n "${FUZZ_TARGETS:-}" ] && [[ " $FUZZ_TARGETS " != *" $name "* ]]; then
    continue
  fi
  seeds=$ROOT/fuzz/corpus/$name
  if [ -n "${FUZZ_KEEP_CORPUS:-}" ]; then
    work=$FUZZ_KEEP_CORPUS/$name
    mkdir -p "$work"
  else
    work=$(mktemp -d)
  fi
  log=$BUILD/fuzz-$name.log
  # A fixed seed (FUZZ_SEED, default 1) makes CI runs repeatable; 0 asks
  # libFuzzer for a fresh one.
  args=(-seed="${FUZZ_SEED:-1}" -max_total_time="$SECONDS_EACH" -timeout=60 -rss_limit_mb=4096
        -print_final_stats=1 -artifact_prefix="$ARTIFACTS/$name-")
  [ -f "$ROOT/fuzz/dict/$name.dict" ] && args+=(-dict="$ROOT/fuzz/dict/$name.dict")
  [ -d "$seeds" ] || seeds=
  # A target linked against the shared ASan runtime needs it first in the
  # initial library list; libFuzzer's own libstdc++ dependency can come
  # earlier, so preload it (the message ASan gives otherwise says the same).
  asan_rt=$(ldd "$exe" 2>/dev/null | awk '/libclang_rt\.asan/ { print $3; exit }')
  LD_PRELOAD=${asan_rt:+$asan_rt}${LD_PRELOAD:+:$LD_PRELOAD} \
    "$exe" "${args[@]}" "$work" ${seeds:+"$seeds"} >"$log" 2>&1
  rc=$?
  [ -n "${FUZZ_KEEP_CORPUS:-}" ] || rm -rf "$work"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  printf '%-24s %12s %10s %8s\n' "$name" "${execs:-?}" "${rate:-?}" "${cov:-?}"
  total=$((total + ${execs:-0}))
  if ((rc != 0)); then
    failed=1
    echo "fuzz: torsor-fuzz-$name failed (exit $rc); log $log, reproducer in $ARTIFACTS/" >&2
    grep -E "ERROR|==== torsor fuzz|SUMMARY|runtime error" "$log" | head -5 >&2
  fi
done
printf '%-24s %12s\n' total "$total"
exit $failed
