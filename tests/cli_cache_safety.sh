#!/usr/bin/env bash
# Issue 27, a cache that cannot be turned against its owner, seen from
# `bench` and `cache clean`:
#   - a state.json (ok or failed) listing "sub/victim.txt" with "sub" a
#     symlink to a folder outside the cache: the next bench rebuilds, warns
#     naming the path, removes the link, and the target survives (a failed
#     state made bench delete it before);
#   - a fresh cache folder, results database, build folder, state.json, log
#     folder and run folder are private (0700/0600 under umask 022), and
#     group-shared (02770/0660) with MODELBENCH_CACHE_SHARED=1;
#   - `cache clean` and `cache delete` remove a symlink planted in a build
#     folder, not what it points to.
#
# Environment (set by ctest): MB_CLI, MB_TEST_MODELS.
set -u

cli=${MB_CLI:?set MB_CLI to the modelbench binary}
models=${MB_TEST_MODELS:?set MB_TEST_MODELS to the bundled models folder}
python=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
umask 022
export MODELBENCH_CACHE_DIR=$tmp/cache
export HOME=$tmp/home
unset MODELBENCH_CACHE_SHARED
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"

fast=(--warmup 1 --warmup-time 0 --min-iterations 3 --min-time 0)
conv=ORT_CPU_NO_OPT
cp "$models/small_cnn.onnx" "$tmp/model.onnx"
mkdir "$tmp/outside"
echo "keep me" >"$tmp/outside/victim.txt"

# mode PATH EXPECTED DESCRIPTION
mode() {
  checks=$((checks + 1))
  local got
  got=$(stat -c %a "$1" 2>/dev/null)
  [ "$got" = "$2" ] || fail "$3: $1 has mode ${got:-(missing)}, expected $2"
}

run 0 bench "$tmp/model.onnx" -c "$conv" "${fast[@]}" --json "$tmp/1.json"
state=$(find "$tmp/cache/builds" -name state.json | head -1)
[ -n "$state" ] || fail "bench left no state.json under $tmp/cache/builds"
folder=$(dirname "$state")

# ---- modes of what a first bench made ----
mode "$tmp/cache" 700 "cache folder"
mode "$tmp/cache/builds" 700 "builds folder"
mode "$folder" 700 "build folder"
mode "$state" 600 "state.json"
mode "$tmp/cache/results.db" 600 "results database"
mode "$tmp/cache/logs" 700 "log folder"

# ---- a state.json whose artifact goes through a symlink ----
# poison STATUS: adds "sub/victim.txt" to the build's artifacts with that
# status, and makes "sub" a symlink to $tmp/outside. A failed build's
# artifacts are deleted by the next bench without being looked at.
poison() {
  py "add sub/victim.txt to $state" '
import json, sys
s = json.load(open(sys.argv[1]))
s["artifacts"].append({"name": "sub/victim.txt", "bytes": 8})
s["status"] = sys.argv[2]
s["error"] = "planted" if sys.argv[2] == "failed" else None
json.dump(s, open(sys.argv[1], "w"))' "$state" "$1"
  ln -s "$tmp/outside" "$folder/sub"
}
n=2
for status in ok failed; do
  poison "$status"
  run 0 bench "$tmp/model.onnx" -c "$conv" "${fast[@]}" --json "$tmp/$n.json"
  checks=$((checks + 1))
  [ -f "$tmp/outside/victim.txt" ] ||
    fail "($status) the next bench deleted $tmp/outside/victim.txt through $folder/sub"
  checks=$((checks + 1))
  [ -L "$folder/sub" ] && fail "($status) the symlink $folder/sub was left in the build"
  cat "$tmp/out" "$tmp/err" >"$tmp/both"
  expect_in "$tmp/both" "sub/victim.txt: sub is a symbolic link (not followed)" \
    "($status) bench warns naming the path"
  py "($status) the build was rebuilt, saying why" '
import json, sys
r = [r for r in json.load(open(sys.argv[1]))["results"] if r["conversion"] == sys.argv[2]][0]
assert r["status"] == "ok", r
assert r["cache_hit"] is False, r
assert "sub is a symbolic link" in r["build_reason"], r["build_reason"]
assert any("sub is a symbolic link" in w for w in r["warnings"]), r["warnings"]
' "$tmp/$n.json" "$conv"
  rm -f "$folder/sub"
  n=$((n + 1))
done

# ---- cache clean and cache delete: a planted link goes, its target
# stays ----
ln -s "$tmp/outside" "$folder/link"
mv "$tmp/model.onnx" "$tmp/model.away" # the build is now an orphan
run 0 cache clean
checks=$((checks + 1))
[ -f "$tmp/outside/victim.txt" ] || fail "cache clean deleted the target"
checks=$((checks + 1))
[ -e "$folder" ] && fail "cache clean left $folder"
mv "$tmp/model.away" "$tmp/model.onnx"
run 0 bench "$tmp/model.onnx" -c "$conv" "${fast[@]}" --json "$tmp/5.json"
folder=$(dirname "$(find "$tmp/cache/builds" -name state.json | head -1)")
ln -s "$tmp/outside" "$folder/link"
run 0 cache delete --all
checks=$((checks + 1))
[ -f "$tmp/outside/victim.txt" ] || fail "cache delete --all deleted the target"

# ---- a run's own log folder and a shared cache ----
MODELBENCH_CACHE_SHARED=1 MODELBENCH_CACHE_DIR=$tmp/shared \
  run 0 bench "$tmp/model.onnx" -c "$conv" "${fast[@]}" --json "$tmp/6.json"
shared_state=$(find "$tmp/shared/builds" -name state.json | head -1)
mode "$tmp/shared" 2770 "shared cache folder"
mode "$tmp/shared/builds" 2770 "shared builds folder"
mode "$(dirname "$shared_state")" 2770 "shared build folder"
mode "$shared_state" 660 "shared state.json"
mode "$tmp/shared/results.db" 660 "shared results database"

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
