#!/usr/bin/env bash
# Runs the model-loader fuzzer: fuzz/run.sh BUILD_DIR SECONDS
# BUILD_DIR was configured with -DMB_FUZZ=ON and clang (see `make fuzz`).
# Crashing inputs are saved under fuzz/crashes/; reproduce one with
#   BUILD_DIR/bin/fuzz_loader fuzz/crashes/crash-...
# and, once fixed, move it to fuzz/regressions/, which
# tests/test_fuzz_regressions.c replays in every test run.
# FUZZ_FLAGS adds libFuzzer flags (later flags win), e.g. -jobs=2.
set -euo pipefail
build=${1:?usage: fuzz/run.sh BUILD_DIR SECONDS}
seconds=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
bin=$build/bin/fuzz_loader
[ -x "$bin" ] || { echo "fuzz/run.sh: $bin not built (make fuzz)" >&2; exit 2; }
max_len=131072

corpus=$(mktemp -d)
log=$(mktemp)
trap 'rm -rf "$corpus" "$log"' EXIT
"$here/make_corpus.sh" "$corpus" "$max_len"
mkdir -p "$here/crashes"

rc=0
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} MODELBENCH_LOG=error \
  "$bin" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 \
  -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 \
  -artifact_prefix="$here/crashes/" ${FUZZ_FLAGS:-} "$corpus" >"$log" 2>&1 || rc=$?

execs=$(grep -oE "stat::number_of_executed_units: [0-9]+" "$log" | grep -oE "[0-9]+$" || echo "?")
if [ "$rc" -eq 0 ]; then
  grep -E "^#[0-9]+.*DONE|stat::" "$log" | tail -8
  echo "fuzz: $execs executions in ${seconds}s, no crash"
else
  # The report: the first error line and the top of its stack.
  grep -m1 -A14 -E "ERROR: |runtime error|Sanitizer" "$log" | grep -vE "^ *#([1-9][0-9])"
  grep -E "Test unit written|SUMMARY" "$log"
  echo "fuzz: FAILED after $execs executions (exit $rc); reproducer in $here/crashes/"
fi
exit "$rc"
