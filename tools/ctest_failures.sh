#!/usr/bin/env bash
# Prints, after a failed `ctest -j`, each failed test's own output again
# (its last lines), so that the end of a CI log says why a test failed and
# not only which: with -j the output of a failure is printed when the test
# ends, often far above the summary that a log's tail shows.
# Usage: tools/ctest_failures.sh BUILD_DIR [LINES]
set -u
dir=${1:?usage: tools/ctest_failures.sh BUILD_DIR [LINES]}
lines=${2:-80}
failed=$dir/Testing/Temporary/LastTestsFailed.log
log=$dir/Testing/Temporary/LastTest.log
[ -s "$failed" ] && [ -f "$log" ] || exit 0
while IFS=: read -r _ name; do
  [ -n "$name" ] || continue
  echo "==== the output of the failed test $name (its last $lines lines) ===="
  awk -v t="$name" '
    $0 == "\"" t "\" start time:" || index($0, "\"" t "\" start time:") == 1 { on = 1; next }
    on && /^<end of output>$/ { exit }
    on && seen { print }
    on && /^-+$/ && !seen { seen = 1 }
  ' "$log" | tail -n "$lines"
done <"$failed"
