#!/usr/bin/env bash
# The layer map of docs/ARCHITECTURE.md is a check (tools/check_layers.py):
# no file under src/ includes, or links against, a layer above its own.
# Then the check itself is checked: an upward include planted in a copy of
# the tree, a call climbing the layers, a folder's private header included
# from another and a file no layer holds must each fail it, naming what is
# wrong.
set -uo pipefail
: "${MB_SOURCE_DIR:?MB_SOURCE_DIR must name the source tree}"
: "${MB_BUILD_DIR:?MB_BUILD_DIR must name the build tree}"
py=/usr/bin/python3
check=$MB_SOURCE_DIR/tools/check_layers.py
objects=$MB_BUILD_DIR/CMakeFiles/mb_objects.dir
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# The tree as it is: sources and, when this build has them, its objects.
args=(--root "$MB_SOURCE_DIR")
[ -d "$objects" ] && args+=(--objects "$objects")
out=$("$py" "$check" "${args[@]}" 2>&1)
rc=$?
echo "$out" | tail -n 20
[ "$rc" -eq 0 ] || fail "the tree climbs the documented layers (exit $rc)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
plant() { # a fresh copy of src/ and the map under $tmp/tree
  rm -rf "$tmp/tree" && mkdir -p "$tmp/tree/docs" &&
    cp -r "$MB_SOURCE_DIR/src" "$tmp/tree/" &&
    cp "$MB_SOURCE_DIR/docs/ARCHITECTURE.md" "$tmp/tree/docs/"
}

# An upward include: core reaching for the CLI.
plant
echo '#include "cli/cli_common.h"' >>"$tmp/tree/src/core/status.c"
out=$("$py" "$check" --root "$tmp/tree" 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "a planted upward include: exit $rc, expected 1"
echo "$out" | grep -q 'src/core/status.c (core) uses src/cli/cli_common.h (CLI)' ||
  fail "the planted include is not named: $out"

# An upward call through the public header (no include to see): a runtime
# object using a symbol the benchmark layer defines.
if [ -d "$objects" ] && command -v cc >/dev/null; then
  plant
  mkdir -p "$tmp/objs/src/runtime" "$tmp/objs/src/bench"
  printf 'int mb_up(void);\nint mb_user(void) { return mb_up(); }\n' >"$tmp/user.c"
  printf 'int mb_up(void) { return 1; }\n' >"$tmp/up.c"
  touch "$tmp/tree/src/runtime/user.c" "$tmp/tree/src/bench/up.c"
  cc -c "$tmp/user.c" -o "$tmp/objs/src/runtime/user.c.o" &&
    cc -c "$tmp/up.c" -o "$tmp/objs/src/bench/up.c.o" ||
    fail "could not compile the planted objects"
  out=$("$py" "$check" --root "$tmp/tree" --objects "$tmp/objs" 2>&1)
  rc=$?
  [ "$rc" -eq 1 ] || fail "a planted upward call: exit $rc, expected 1"
  echo "$out" | grep -q 'src/runtime/user.c (runtimes) uses src/bench/up.c (benchmark): mb_up' ||
    fail "the planted call is not named: $out"
fi

# A folder's private header used from another folder, though not upward.
plant
echo '#include "bench/bench_internal.h"' >>"$tmp/tree/src/cli/main.c"
out=$("$py" "$check" --root "$tmp/tree" 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "a planted private include: exit $rc, expected 1"
echo "$out" | grep -q 'src/cli/main.c uses src/bench/bench_internal.h, private to src/bench/' ||
  fail "the planted private include is not named: $out"

# A folder the map does not name.
plant
mkdir -p "$tmp/tree/src/stray" && echo 'int x;' >"$tmp/tree/src/stray/x.c"
out=$("$py" "$check" --root "$tmp/tree" 2>&1)
rc=$?
[ "$rc" -eq 2 ] || fail "a file in no layer: exit $rc, expected 2"
echo "$out" | grep -q 'src/stray/x.c: in no layer' || fail "the stray file is not named: $out"

[ "$fails" -eq 0 ] && echo "layers: ok" || exit 1
