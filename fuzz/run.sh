#!/usr/bin/env bash
# Runs fuzz targets, FUZZ_JOBS at a time (default: one per CPU; each
# libFuzzer run uses one), their reports printed in the list's order:
#   fuzz/run.sh BUILD_DIR SECONDS [TARGET...]   (default: every target)
# BUILD_DIR was configured with -DMB_FUZZ=ON and clang (see `make fuzz`).
# Each target starts from its seed corpus (fuzz/make_corpus.sh, made fresh
# in a temporary folder) and its saved crashes, fuzz/regressions/TARGET/.
# A crashing input is saved under fuzz/crashes/TARGET/; reproduce it with
#   BUILD_DIR/bin/fuzz_TARGET fuzz/crashes/TARGET/crash-...
# and, once fixed, move it to fuzz/regressions/TARGET/, which
# tests/test_fuzz_regressions.c replays in every test run.
# FUZZ_FLAGS adds libFuzzer flags (later flags win), e.g. -seed=1.
# FUZZ_LOG_DIR keeps each target's libFuzzer log there as TARGET.log.
# Exit status: 0 when no target crashed, else that of the last failure.
set -euo pipefail
build=${1:?usage: fuzz/run.sh BUILD_DIR SECONDS [TARGET...]}
seconds=${2:-60}
shift 2 || shift $#
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -eq 0 ]; then
  # The list in fuzz/targets.h, in its order.
  set -- $(awk '/^#define MB_FUZZ_TARGET_LIST/ { on = 1 }
                on { print; if (!/\\$/) exit }' "$here/targets.h" |
    grep -oE ' X\([a-z_0-9]+\)' | sed 's/ X(\(.*\))/\1/')
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# One target: its seeds, the run, its report on stdout; exit status that of
# libFuzzer (0: no crash).
fuzz_one() {
  local target=$1 bin=$build/bin/fuzz_$1
  local corpus=$work/$target log=$work/$target.log
  if [ -n "${FUZZ_LOG_DIR:-}" ]; then
    mkdir -p "$FUZZ_LOG_DIR"
    log=$FUZZ_LOG_DIR/$target.log
  fi
  local max_len
  max_len=$("$here/make_corpus.sh" "$target" "$corpus" "$build")
  local dirs=("$corpus")
  [ -d "$here/regressions/$target" ] && dirs+=("$here/regressions/$target")
  local dict=()
  [ -f "$corpus.dict" ] && dict=(-dict="$corpus.dict")
  mkdir -p "$here/crashes/$target"
  echo "fuzz $target: $(find "$corpus" -type f | wc -l) seeds, ${seconds}s"
  local rc=0
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} MODELBENCH_LOG=error \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
    "$bin" -max_total_time="$seconds" -max_len="$max_len" -timeout=25 \
    -rss_limit_mb=2560 -malloc_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$here/crashes/$target/" "${dict[@]}" ${FUZZ_FLAGS:-} \
    "${dirs[@]}" >"$log" 2>&1 || rc=$?
  local execs
  execs=$(grep -oE "stat::number_of_executed_units: [0-9]+" "$log" | grep -oE "[0-9]+$" || echo "?")
  if [ "$rc" -eq 0 ]; then
    echo "fuzz $target: $execs executions in ${seconds}s, no crash;" \
      "$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)"
  else
    # The report: the first error line and the top of its stack.
    grep -m1 -A14 -E "ERROR: |runtime error|Sanitizer" "$log" | grep -vE "^ *#([1-9][0-9])" || tail -20 "$log"
    grep -E "Test unit written|SUMMARY" "$log" || true
    echo "fuzz $target: FAILED after $execs executions (exit $rc);" \
      "reproducer in $here/crashes/$target/"
  fi
  return "$rc"
}

for target in "$@"; do
  [ -x "$build/bin/fuzz_$target" ] || { echo "fuzz/run.sh: $build/bin/fuzz_$target not built (make fuzz)" >&2; exit 2; }
done
jobs_max=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$jobs_max" -ge 1 ] 2>/dev/null || jobs_max=1
overall=0
running=0
for target in "$@"; do
  # At most jobs_max at once: wait for any one to end.
  if [ "$running" -ge "$jobs_max" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  ( rc=0; fuzz_one "$target" >"$work/$target.out" 2>&1 || rc=$?
    echo "$rc" >"$work/$target.rc" ) &
  running=$((running + 1))
done
wait
for target in "$@"; do
  cat "$work/$target.out"
  rc=$(cat "$work/$target.rc" 2>/dev/null || echo 1)
  [ "$rc" -eq 0 ] || overall=$rc
done
exit "$overall"
