# Helpers shared by the CLI test scripts (tests/cli_*.sh source it; it is
# not a test itself). The script sets `cli` (the modelbench binary),
# `python` and `tmp` (a scratch folder) first; checks and failures are
# counted in `checks` and `failures`, and the script ends with
#   echo "$checks checks, $failures failures"; [ "$failures" -eq 0 ]
failures=0
checks=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

show() {
  sed 's/^/    /' "$@" | head -30
}

# run CODE ARGS...: runs the CLI with stdout/stderr in $tmp/out, $tmp/err;
# checks the exit code and that no sanitizer spoke. Returns 1 on failure.
# The next run (or usage_error) overwrites both files: read them right
# after, or give the command files of its own with run_to.
run() {
  run_to "" "$@"
}

# run_to NAME CODE ARGS...: run, with stdout in $tmp/NAME.out and stderr
# in $tmp/NAME.err (NAME empty: $tmp/out and $tmp/err, as run). A check
# later in the script reads those, never a file a section in between (one
# that runs only where something is installed, say) may have rewritten.
run_to() {
  local out=$tmp/out err=$tmp/err
  if [ -n "$1" ]; then
    out=$tmp/$1.out
    err=$tmp/$1.err
  fi
  local code=$2
  shift 2
  checks=$((checks + 1))
  "$cli" "$@" >"$out" 2>"$err"
  local rc=$?
  if grep -qE "AddressSanitizer|LeakSanitizer|runtime error" "$err"; then
    fail "modelbench $*: sanitizer report"
    show "$err"
    return 1
  fi
  if [ "$rc" -ne "$code" ]; then
    fail "modelbench $*: exit $rc, expected $code"
    show "$err" "$out"
    return 1
  fi
  return 0
}

# expect_in FILE NEEDLE DESCRIPTION
expect_in() {
  checks=$((checks + 1))
  if ! grep -qF -- "$2" "$1"; then
    fail "$3: '$2' not found"
    show "$1"
    return 1
  fi
}

# usage_error NEEDLE ARGS...: exit 2 with NEEDLE on stderr.
usage_error() {
  local needle=$1
  shift
  run 2 "$@" || return
  expect_in "$tmp/err" "$needle" "modelbench $*"
}

# py DESCRIPTION SCRIPT ARGS...: a Python check; a failure is counted.
py() {
  local what=$1
  shift
  checks=$((checks + 1))
  if ! "$python" -c "$@" >"$tmp/py" 2>&1; then
    fail "$what"
    show "$tmp/py"
    return 1
  fi
}

# available NAME: is conversion NAME available here?
available() {
  "$cli" list --json | "$python" -c '
import json, sys
rows = {c["name"]: c for c in json.load(sys.stdin)["conversions"]}
sys.exit(0 if rows[sys.argv[1]]["available"] else 1)' "$1"
}

# one_line_error NEEDLE DESCRIPTION: stderr ($tmp/err) is a single line,
# naming NEEDLE: every error the CLI prints is one line.
one_line_error() {
  checks=$((checks + 1))
  local lines
  lines=$(wc -l <"$tmp/err")
  if [ "$lines" -ne 1 ]; then
    fail "$2: $lines lines on stderr, expected 1"
    show "$tmp/err"
    return 1
  fi
  expect_in "$tmp/err" "$1" "$2"
}

# usage_error_line NEEDLE ARGS...: usage_error, with NEEDLE's line all of
# stderr.
usage_error_line() {
  local needle=$1
  shift
  run 2 "$@" || return
  one_line_error "$needle" "modelbench $*"
}

# py_has MODULE WHAT: can $python import MODULE? When it cannot, WHAT is
# skipped with a line that says so, and the caller leaves that section
# out; the rest of the script runs the same either way. Under make test
# (MB_WITH_TORCH=1 installs python3-onnx and python3-torch) a missing
# module is a failure instead.
py_has() {
  if "$python" -c "import $1" >/dev/null 2>&1; then
    return 0
  fi
  if [ "${MB_WITH_TORCH:-0}" = 1 ]; then
    fail "$2: $python cannot import $1 (MB_WITH_TORCH=1 installs it)"
  else
    echo "SKIP: $2: $python lacks $1"
  fi
  return 1
}
