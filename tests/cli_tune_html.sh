#!/usr/bin/env bash
# modelbench tune --html: the search as one page. On sensitive_mlp.onnx
# (tools/gen_models.c; int8 candidates only, as in cli_tune.sh, so the
# winner keeps sensitive_matmul in float) the page has one chart whose
# winner is the --json log's winner, marked and labelled, the budget line
# at --max-error, one table row per step of the log, no script, and the
# model path (copied to a name with <&") escaped. A page that cannot be
# written is a failure (exit 1) naming its path, and the log is still
# written. No timing is asserted.
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

model=$tmp/'odd<&"name.onnx'
cp "$models/sensitive_mlp.onnx" "$model"
quick=(--round-time 0.05 --calibration-samples 32 --no-record)
convs=INT8_STATIC+REFERENCE
for c in INT8_STATIC+ORT_CPU INT8_STATIC+XNNPACK; do
  available "$c" && convs=$convs,$c
done

# ---- the page ----
run 0 tune "$model" --max-error 1e-3 -c "$convs" "${quick[@]}" \
  --json "$tmp/log.json" --html "$tmp/tune.html" && {
  py "the page shows the search log's winner, budget and steps" '
import html.parser, json, sys
log = json.load(open(sys.argv[1]))
text = open(sys.argv[2], encoding="utf-8").read()
assert log["found"] and log["winner"] is not None, log["summary"]
w = log["winner"]
winner = log["steps"][w]

class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.rows, self.winner, self.budget = [], [], [], []
        self.stack, self.label = [], ""
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        cls = (a.get("class") or "").split()
        if tag == "tr" and "step" in cls:
            self.rows.append(a)
        if tag == "g" and "tpoint" in cls and "winner" in cls:
            self.winner.append(a)
        if tag == "line" and "budget" in cls:
            self.budget.append(a)
        self.stack.append(cls)
    def handle_endtag(self, tag):
        if self.stack:
            self.stack.pop()
    def handle_data(self, data):
        if self.stack and "winner-label" in self.stack[-1]:
            self.label += data

p = Page()
p.feed(text)
assert p.tags.count("svg") == 1, p.tags.count("svg")
assert "script" not in p.tags and "<script" not in text.lower()
assert len(p.winner) == 1, p.winner
assert p.winner[0]["data-conversion"] == winner["conversion"], p.winner
assert p.winner[0]["data-step"] == str(w), p.winner
assert p.label.startswith("winner: " + winner["conversion"]), p.label
assert len(p.budget) == 1 and float(p.budget[0]["data-max-error"]) == 1e-3
assert len(p.rows) == len(log["steps"]), (len(p.rows), len(log["steps"]))
for i, (row, s) in enumerate(zip(p.rows, log["steps"])):
    assert row["data-step"] == str(i) and row["data-phase"] == s["phase"], row
    assert row["data-estimated"] == ("1" if s["estimated"] else "0"), row
    assert row["data-conversion"] == s["conversion"], row
assert "winner" in p.rows[w]["class"].split(), p.rows[w]
# The model path: escaped wherever it appears, never raw.
assert "odd&lt;&amp;&quot;name.onnx" in text
assert "odd<&" not in text
' "$tmp/log.json" "$tmp/tune.html"
}

# ---- a page that cannot be written ----
run 1 tune "$model" --max-error 1e-3 -c INT8_STATIC+REFERENCE "${quick[@]}" \
  --json "$tmp/bad.json" --html "$tmp/no-such-dir/tune.html" && {
  expect_in "$tmp/err" "$tmp/no-such-dir/tune.html" "the error names the page"
  py "the search log is written all the same" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kind"] == "tune" and d["steps"], d
' "$tmp/bad.json"
}

"$cli" tune --help >"$tmp/help"
expect_in "$tmp/help" "--html FILE" "tune --help names --html"

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
