#!/usr/bin/env bash
# Several models in one bench run: files, folders (--recursive), PATH::HASH
# filters; one report per model in JSON/CSV/HTML; a model that fails does
# not stop the others; labels stored with each model's run.
#
# Environment (set by ctest): MB_CLI, MB_TEST_MODELS.
set -u

cli=${MB_CLI:?set MB_CLI to the modelbench binary}
models=${MB_TEST_MODELS:?set MB_TEST_MODELS to the bundled models folder}
python=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MODELBENCH_CACHE_DIR=$tmp/cache
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"

fast=(-c REFERENCE --warmup 1 --warmup-time 0 --min-iterations 3
  --min-time 0)
mkdir -p "$tmp/zoo/a/deep" "$tmp/zoo/b" "$tmp/zoo/empty"
cp "$models/mlp.onnx" "$tmp/zoo/mlp.onnx"
cp "$models/small_cnn.onnx" "$tmp/zoo/a/small_cnn.onnx"
cp "$models/transformer_block.onnx" "$tmp/zoo/a/deep/transformer.onnx"
printf 'not a model' >"$tmp/zoo/b/broken.onnx"
echo "not onnx" >"$tmp/zoo/readme.txt"

# A folder without --recursive: its own .onnx files only.
if run 0 bench "$tmp/zoo" "${fast[@]}" --no-record --json "$tmp/one.json"; then
  py "folder without --recursive" '
import json, sys
d = json.load(open(sys.argv[1]))
assert "results" in d and "reports" not in d, d.keys()
assert d["model"]["path"].endswith("zoo/mlp.onnx"), d["model"]
' "$tmp/one.json"
fi
# --recursive: every model below, sorted, sub-folders after files; the
# broken one fails (exit 1) without stopping the others.
if run 1 bench "$tmp/zoo" --recursive "${fast[@]}" --label suite=zoo \
  --json "$tmp/all.json" --csv "$tmp/all.csv" --html "$tmp/all.html"; then
  expect_in "$tmp/err" "broken.onnx" "the broken model is named"
  expect_in "$tmp/out" "3 models benchmarked, 1 failed" "summary line"
  py "--recursive JSON" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema_version"] == 1 and d["tool"] == "modelbench", d.keys()
paths = [r["model"]["path"] for r in d["reports"]]
want = ["zoo/mlp.onnx", "zoo/a/small_cnn.onnx", "zoo/a/deep/transformer.onnx"]
assert len(paths) == 3 and all(p.endswith(w) for p, w in zip(paths, want)), paths
for r in d["reports"]:
    (res,) = r["results"]
    assert res["status"] == "ok", res
' "$tmp/all.json"
  py "--recursive CSV" '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 3, rows
' "$tmp/all.csv"
  expect_in "$tmp/all.html" "small_cnn.onnx" "HTML covers every model"
  expect_in "$tmp/all.html" "transformer.onnx" "HTML covers every model"
fi
# Each model is its own run in the results database, with the labels.
if run 0 history --json --label suite=zoo; then
  py "history of the multi-model run" '
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
assert len(runs) == 3, runs
assert all(r["labels"].get("suite") == "zoo" for r in runs), runs
' "$tmp/out"
fi

# PATH::HASH keeps the models whose sha256 starts with HASH.
sha=$("$cli" analyze "$models/small_cnn.onnx" --json |
  "$python" -c 'import json, sys; print(json.load(sys.stdin)["sha256"])')
if run 0 bench "$tmp/zoo::${sha:0:10}" --recursive "${fast[@]}" --no-record \
  --json "$tmp/hash.json"; then
  py "PATH::HASH" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["model"]["path"].endswith("small_cnn.onnx"), d["model"]
assert d["model"]["sha256"].startswith(sys.argv[2]), d["model"]
' "$tmp/hash.json" "${sha:0:10}"
fi
run 0 bench "$models/small_cnn.onnx::${sha:0:8}" "${fast[@]}" --no-record
run 2 bench "$tmp/zoo::0000ffff" --recursive "${fast[@]}" --no-record &&
  expect_in "$tmp/err" "no model with a sha256 starting with 0000ffff" \
    "a filter matching nothing"
run 2 bench "$tmp/zoo::xyz" "${fast[@]}" --no-record &&
  expect_in "$tmp/err" "hex digits" "a malformed filter"
run 2 bench "$tmp/zoo/empty" "${fast[@]}" --no-record &&
  expect_in "$tmp/err" "no .onnx files" "a folder without models"
# Two files on the line, in the given order; compare refuses the
# multi-model file with a clear message.
if run 0 bench "$models/small_cnn.onnx" "$models/mlp.onnx" "${fast[@]}" \
  --no-record --json "$tmp/two.json"; then
  py "two files" '
import json, sys
paths = [r["model"]["path"] for r in json.load(open(sys.argv[1]))["reports"]]
assert paths[0].endswith("small_cnn.onnx") and paths[1].endswith("mlp.onnx")
' "$tmp/two.json"
  run 1 compare "$tmp/two.json" "$tmp/two.json" &&
    expect_in "$tmp/err" "holds the reports of 2 models" "compare a multi file"
fi

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
