#!/usr/bin/env bash
# `modelbench cache` end to end on a temporary cache folder: location, list
# (text and JSON), stats by id and prefix, report (RFC 4180, every empty
# cell explained), clean (dry run, stale and orphaned builds, saying why),
# delete (by prefix, --all) and the usage errors. Builds and results are
# made by the test helper (test_build_cache --make-build / --make-result),
# since bench does not fill the build cache yet.
#
# Environment (set by ctest): MB_CLI, the modelbench binary; MB_BUILD_DIR,
# the build folder holding bin/test_build_cache.
set -u

cli=${MB_CLI:?set MB_CLI to the modelbench binary}
build=${MB_BUILD_DIR:?set MB_BUILD_DIR to the build folder}
helper=$build/bin/test_build_cache
python=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cache=$tmp/cache
export MODELBENCH_CACHE_DIR=$tmp/env-cache
export HOME=$tmp/home
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"

# expect_not_in FILE NEEDLE DESCRIPTION
expect_not_in() {
  checks=$((checks + 1))
  if grep -qF -- "$2" "$1"; then
    fail "$3: '$2' found"
    show "$1"
    return 1
  fi
}

# helper ARGS...: the test helper; prints what it prints (a build id).
helper() {
  "$helper" "$@" 2>"$tmp/helper.err" || {
    fail "test_build_cache $*"
    show "$tmp/helper.err"
  }
}

[ -x "$helper" ] || {
  echo "FAIL: $helper not built"
  exit 1
}

# ---- location ----
run 0 cache location --cache-dir "$cache" &&
  expect_in "$tmp/out" "$cache" "location with --cache-dir"
[ -d "$cache" ] || fail "location did not create $cache"
run 0 cache location && expect_in "$tmp/out" "$tmp/env-cache" \
  "location from MODELBENCH_CACHE_DIR"
MODELBENCH_CACHE_DIR= run 0 cache location &&
  expect_in "$tmp/out" "$tmp/home/.cache/modelbench" "location from HOME"

# ---- an empty cache ----
run 0 cache list --cache-dir "$cache" &&
  expect_in "$tmp/out" "no builds in $cache" "empty list"
run 0 cache list --json --cache-dir "$cache" &&
  py "empty list --json" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["builds"] == [], d
' "$tmp/out"
run 0 cache clean --cache-dir "$cache" &&
  expect_in "$tmp/out" "nothing to clean" "clean of an empty cache"
run 0 cache report --cache-dir "$cache" &&
  py "empty report" '
import sys
data = open(sys.argv[1], "rb").read()
assert data == b"model,model_sha256,conversion,status,median_ms,p90_ms," \
    b"throughput_sps,max_abs_err,build_status,build_ms,cache_hits," \
    b"last_run_time,script,class,parameters,labels\r\n", data
' "$tmp/out"

# ---- some builds and results ----
a=$tmp/models/alpha.onnx
b=$tmp/models/beta.onnx
gone=$tmp/models/gone.onnx
mkdir -p "$tmp/models"
echo "alpha model" >"$a"
echo "beta model" >"$b"
echo "a model that will be deleted" >"$gone"
id_ok=$(helper --make-build "$cache" "$a" ORT_CPU --hits 3)
id_ref=$(helper --make-build "$cache" "$a" REFERENCE)
id_failed=$(helper --make-build "$cache" "$a" XNNPACK \
  --fail "node 'conv1' (Conv): no kernel, sorry")
id_old=$(helper --make-build "$cache" "$b" ORT_CPU --version 0.0.9)
id_lean=$(helper --make-build "$cache" "$b" FP16+XNNPACK --lean)
id_gone=$(helper --make-build "$cache" "$gone" ORT_CPU)
rm -f "$gone"
mkdir -p "$cache/builds/orphan-000000000000/X-000000000000"
helper --make-result "$cache" "$a" ORT_CPU ok 3.0
helper --make-result "$cache" "$a" ORT_CPU ok 2.0 # the latest
helper --make-result "$cache" "$a" XNNPACK error 0 'node "conv1", Conv: no kernel'
helper --make-result "$cache" "$b" ONEDNN unavailable 0 "oneDNN is not installed"
case $id_ok in
alpha-*/ORT_CPU-*) ;;
*) fail "build id '$id_ok' is not alpha-SHA12/ORT_CPU-HASH12" ;;
esac

# ---- list ----
if run 0 cache list --cache-dir "$cache"; then
  for id in "$id_ok" "$id_ref" "$id_failed" "$id_old" "$id_lean" "$id_gone"; do
    expect_in "$tmp/out" "$id" "list shows $id"
  done
  expect_in "$tmp/out" "7 builds in $cache" "list counts builds"
  expect_in "$tmp/out" "failed: node 'conv1' (Conv): no kernel, sorry" \
    "list says why a failed build is stale"
  expect_in "$tmp/out" "built by modelbench 0.0.9" \
    "list flags another version's build"
  expect_in "$tmp/out" "gone.onnx no longer exists" \
    "list flags a build of a deleted model"
  expect_in "$tmp/out" "no state.json" "list flags an orphan folder"
  expect_in "$tmp/out" "ok (lean)" "list shows a lean build"
  grep -F "$id_ok" "$tmp/out" >"$tmp/line"
  expect_in "$tmp/line" " 3 " "list shows the hits"
  expect_in "$tmp/line" "$a" "list shows the model"
fi
run 0 cache list --json --cache-dir "$cache" &&
  py "list --json" '
import json, sys
d = json.load(open(sys.argv[1]))
builds = {b["id"]: b for b in d["builds"]}
assert len(builds) == 7, builds.keys()
ok = builds[sys.argv[2]]
assert ok["status"] == "ok" and ok["hits"] == 3 and ok["stale"] is None, ok
assert ok["conversion"] == "ORT_CPU" and ok["model"]["path"] == sys.argv[4]
assert len(ok["model"]["sha256"]) == 64 and ok["disk_bytes"] > 0, ok
failed = builds[sys.argv[3]]
assert failed["status"] == "failed", failed
assert failed["stale"]["kind"] == "failed", failed
assert "no kernel" in failed["error"], failed
' "$tmp/out" "$id_ok" "$id_failed" "$a"

# ---- stats ----
if run 0 cache stats "$id_ok" --cache-dir "$cache"; then
  expect_in "$tmp/out" "modelbench version   " "stats shows the key"
  expect_in "$tmp/out" "model.onnx" "stats shows the artifacts"
  expect_in "$tmp/out" "convert" "stats shows the stages"
  expect_in "$tmp/out" "hits         3" "stats shows the hits"
fi
prefix=${id_ok%??????}
run 0 cache stats "$prefix" --cache-dir "$cache" &&
  expect_in "$tmp/out" "$id_ok" "stats by a unique prefix"
run 0 cache stats "$id_failed" --json --cache-dir "$cache" &&
  py "stats --json" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "failed", d
for k in ("model_sha256", "inputs", "conversion", "steps", "options",
          "modelbench_version", "runtime", "runtime_version", "machine"):
    assert k in d["key"], k
assert d["key"]["conversion"] == "XNNPACK"
assert d["stages"][0]["name"] == "convert"
assert d["build_ms"] == 12.5
' "$tmp/out"
run 1 cache stats alpha- --cache-dir "$cache" &&
  expect_in "$tmp/err" "matches 3 builds" "an ambiguous prefix"
run 1 cache stats nope --cache-dir "$cache" &&
  expect_in "$tmp/err" "no build 'nope'" "an unknown build"

# ---- report ----
run 0 cache report --cache-dir "$cache" &&
  py "report to stdout" '
import csv, io, sys
data = open(sys.argv[1], "rb").read().decode()
assert data.endswith("\r\n") and "\n" not in data.replace("\r\n", ""), data
rows = list(csv.DictReader(io.StringIO(data, newline="")))
by = {(r["model"].rsplit("/", 1)[-1], r["conversion"]): r for r in rows}
for r in rows:
    for k, v in r.items():
        assert v != "", (k, r)
ok = by[("alpha.onnx", "ORT_CPU")]
assert ok["status"] == "ok" and float(ok["median_ms"]) == 2.0, ok
assert ok["build_status"] == "ok" and ok["cache_hits"] == "3", ok
assert float(ok["build_ms"]) == 12.5 and ok["last_run_time"].endswith("Z")
ref = by[("alpha.onnx", "REFERENCE")]
assert ref["median_ms"] == "n/a: not run" and ref["build_status"] == "ok", ref
bad = by[("alpha.onnx", "XNNPACK")]
assert bad["status"] == "error", bad
assert bad["median_ms"] == "n/a: failed (node \"conv1\", Conv: no kernel)", bad
assert bad["build_status"] == "failed", bad
un = by[("beta.onnx", "ONEDNN")]
assert un["median_ms"].startswith("n/a: unavailable"), un
assert un["build_status"] == "n/a: no build", un
assert by[("beta.onnx", "FP16+XNNPACK")]["build_status"] == "ok (lean)"
# The quoted cell is quoted as RFC 4180 says.
assert "\"n/a: failed (node \"\"conv1\"\", Conv: no kernel)\"" in data
' "$tmp/out"
run 0 cache report -o "$tmp/report.csv" --cache-dir "$cache" &&
  expect_in "$tmp/err" "wrote $tmp/report.csv" "report -o says where"
cmp -s "$tmp/out" "$tmp/report.csv" && fail "report -o wrote to stdout too"
run 0 cache report --cache-dir "$cache" && cp "$tmp/out" "$tmp/stdout.csv"
cmp -s "$tmp/stdout.csv" "$tmp/report.csv" ||
  fail "report -o and stdout differ"
run 1 cache report -o "$tmp/no/such/dir/r.csv" --cache-dir "$cache"

# ---- clean ----
if run 0 cache clean --dry-run --cache-dir "$cache"; then
  expect_in "$tmp/out" "would remove $id_failed" "dry run: failed build"
  expect_in "$tmp/out" "would remove $id_old" "dry run: other version"
  expect_in "$tmp/out" "would remove $id_gone" "dry run: deleted model"
  expect_in "$tmp/out" "would remove orphan-000000000000/X-000000000000" \
    "dry run: orphan folder"
  expect_in "$tmp/out" "would remove 4 items" "dry run summary"
  expect_not_in "$tmp/out" "$id_ok" "dry run keeps a good build"
fi
[ -d "$cache/builds/$id_failed" ] || fail "clean --dry-run removed a build"
if run 0 cache clean --cache-dir "$cache"; then
  expect_in "$tmp/out" "removed $id_failed" "clean: failed build"
  expect_in "$tmp/out" "failed: node 'conv1'" "clean says why"
  expect_in "$tmp/out" "removed $id_gone" "clean: deleted model"
  expect_in "$tmp/out" "removed 4 items" "clean summary"
fi
[ -d "$cache/builds/$id_failed" ] && fail "clean left the failed build"
[ -d "$cache/builds/orphan-000000000000" ] &&
  fail "clean left the orphan's model folder"
[ -d "$cache/builds/$id_ok" ] || fail "clean removed a good build"
run 0 cache clean --cache-dir "$cache" &&
  expect_in "$tmp/out" "nothing to clean" "second clean"
# A model whose bytes change orphans its builds.
echo "beta model, edited" >"$b"
run 0 cache clean --cache-dir "$cache" &&
  expect_in "$tmp/out" "removed $id_lean" "clean: changed model"

# ---- delete ----
run 0 cache delete "${id_ref%??????}" --cache-dir "$cache" &&
  expect_in "$tmp/out" "removed $id_ref" "delete by prefix"
[ -d "$cache/builds/$id_ref" ] && fail "delete left the build"
run 1 cache delete "$id_ref" --cache-dir "$cache" &&
  expect_in "$tmp/err" "no build" "delete of a deleted build"
# Kept calibrations (<cache>/calibration) go with --all, nothing else there.
mkdir -p "$cache/calibration"
echo '{}' >"$cache/calibration/0123abcd.json"
echo keep >"$cache/calibration/notes.txt"
run 0 cache delete --all --cache-dir "$cache" &&
  expect_in "$tmp/out" "removed $id_ok" "delete --all" &&
  expect_in "$tmp/out" "removed 1 kept calibration" "delete --all: calibrations"
[ -f "$cache/calibration/0123abcd.json" ] &&
  fail "delete --all left a kept calibration"
[ -f "$cache/calibration/notes.txt" ] ||
  fail "delete --all removed a file that is no calibration"
run 0 cache list --cache-dir "$cache" &&
  expect_in "$tmp/out" "no builds" "nothing left after delete --all"
[ -f "$cache/results.db" ] || fail "delete --all removed the results database"

# ---- usage errors ----
usage_error "missing command" cache
usage_error "unknown command 'bogus'" cache bogus
usage_error "did you mean 'cache stats BUILD'" cache print
usage_error "options go after" cache --cache-dir "$cache" list
usage_error "unknown option '--bogus'" cache list --bogus
usage_error "unknown option '--dry-run'" cache list --dry-run
run 0 cache list extra --cache-dir "$cache" &&
  expect_in "$tmp/out" "no builds of extra" "cache list MODEL without builds"
usage_error "missing BUILD" cache stats
usage_error "requires an argument" cache list --cache-dir
usage_error "missing BUILD argument (or --all)" cache delete
usage_error "not both" cache delete --all x
usage_error "requires an argument" cache report -o
run 0 cache --help && expect_in "$tmp/out" "Usage: modelbench cache" "help"
run 0 cache clean --help && expect_in "$tmp/out" "--dry-run" "clean --help"

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
