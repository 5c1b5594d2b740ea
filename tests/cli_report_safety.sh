#!/usr/bin/env bash
# Reports that cannot be turned against their readers (issue 27), from the
# command line, on models built to attack them:
#   - a model whose input and output names hold terminal escape sequences
#     and newlines: `analyze` (and the errors that echo names) print them
#     escaped, as \xNN, on one line each;
#   - a model whose symbolic dimension is named like a script tag, swept
#     with --sweep dim:NAME and written with --html: the page holds no
#     <script> but its own, and its CSP allows no other inline script;
#   - --label 'owner==HYPERLINK(...)' and a model path starting with '=':
#     the CSV cells start with a single quote, so no spreadsheet runs them.
#
# Environment (set by ctest): MB_CLI.
set -u

cli=${MB_CLI:?set MB_CLI to the modelbench binary}
python=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MODELBENCH_CACHE_DIR=$tmp/cache
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"

if ! "$python" -c 'import onnx' 2>/dev/null; then
  echo "SKIP: python3 onnx is not available to build the models"
  exit 0
fi

dim='s<script>alert(7)</script>'
"$python" - "$tmp" "$dim" <<'EOF' || fail "model generator failed"
import os, sys
import onnx
from onnx import helper, TensorProto as T

out, dim = sys.argv[1], sys.argv[2]

def save(path, nodes, inputs, outputs):
    g = helper.make_graph(nodes, "g", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="cli_report_safety")
    m.ir_version = 8
    onnx.save(m, os.path.join(out, path))

x = "in\x1b[31mRED\nfake line"
y = "out\x1b]0;title\x07\x9b2J"
save("escapes.onnx", [helper.make_node("Relu", [x], [y], name="relu")],
     [helper.make_tensor_value_info(x, T.FLOAT, [2, 3])],
     [helper.make_tensor_value_info(y, T.FLOAT, [2, 3])])
ghost = "gh\x1b[2Jost\nmodelbench: all good"
save("dangling.onnx", [helper.make_node("Relu", [ghost], ["y"], name="relu")],
     [helper.make_tensor_value_info("x", T.FLOAT, [2, 3])],
     [helper.make_tensor_value_info("y", T.FLOAT, [2, 3])])
save("dim.onnx", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
     [helper.make_tensor_value_info("x", T.FLOAT, [dim, 4])],
     [helper.make_tensor_value_info("y", T.FLOAT, [dim, 4])])
os.symlink(os.path.join(out, "dim.onnx"), os.path.join(out, "=1+1.onnx"))
EOF

# no_control FILE WHAT: FILE holds no ESC, BEL, CSI (C1) or DEL byte.
no_control() {
  checks=$((checks + 1))
  if LC_ALL=C grep -q $'[\x1b\x07\x7f]\|\xc2\x9b' "$1"; then
    fail "$2: a raw control character reached the terminal"
    show "$1" | cat -v
    return 1
  fi
}

# 1. analyze: the names escaped, each on its own line.
if run 0 analyze "$tmp/escapes.onnx"; then
  no_control "$tmp/out" "analyze"
  expect_in "$tmp/out" 'in\x1b[31mRED\x0afake line' "input name escaped"
  expect_in "$tmp/out" 'out\x1b]0;title\x07\u009b2J' "output name escaped"
  checks=$((checks + 1))
  if grep -q '^fake line' "$tmp/out"; then
    fail "analyze: a newline in a name started a line of output"
    show "$tmp/out"
  fi
fi
# JSON stays exact: the names round-trip.
if run 0 analyze "$tmp/escapes.onnx" --json; then
  py "analyze --json keeps the names" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["inputs"][0]["name"] == "in\x1b[31mRED\nfake line", d["inputs"]
assert d["outputs"][0]["name"] == "out\x1b]0;title\x07\x9b2J", d["outputs"]
' "$tmp/out"
fi

# 2. An error that echoes a name: one line, escaped.
if run 1 analyze "$tmp/dangling.onnx"; then
  no_control "$tmp/err" "analyze error"
  one_line_error 'gh\x1b[2Jost\x0amodelbench: all good' "error naming a value"
fi

# 3. HTML: the sweep over a dimension named like a script tag.
# 4. CSV: a formula in a label and in the model's path.
cd "$tmp" || exit 1 # the model by a relative path that starts with '='
if run 0 bench "=1+1.onnx" -c REFERENCE --sweep "dim:$dim=1,2" \
  --warmup 1 --warmup-time 0 --min-iterations 3 --min-time 0 --no-record \
  --label 'owner==HYPERLINK("http://evil/","x")' \
  --html "$tmp/r.html" --csv "$tmp/r.csv"; then
  no_control "$tmp/out" "bench table"
  expect_in "$tmp/r.html" 'data-x="s&lt;script&gt;alert(7)&lt;/script&gt;"' \
    "dimension escaped in data-x"
  py "the page holds only its own script, and its CSP says so" '
import base64, hashlib, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
assert "<script>alert" not in page, "raw script tag"
assert page.count("<script") == 1, page.count("<script")
assert "sweep-dim-" in page, "no dimension chart"
csp = re.search(r"Content-Security-Policy\" content=\"([^\"]*)\"", page).group(1)
assert "unsafe-inline" not in csp, csp
script = re.search(r"<script>(.*?)</script>", page, re.S).group(1)
style = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
def h(text):
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
assert "script-src \x27%s\x27" % h(script) in csp, csp
assert "style-src \x27%s\x27" % h(style) in csp, csp
for m in re.finditer(r"\bid=\"([^\"]*)\"", page):
    assert re.fullmatch(r"[A-Za-z0-9_-]+", m.group(1)), m.group(1)
' "$tmp/r.html"
  py "CSV cells never start a formula" '
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="", encoding="utf-8")))
head = rows[0]
for row in rows[1:]:
    cells = dict(zip(head, row))
    assert cells["label:owner"] == "\x27=HYPERLINK(\"http://evil/\",\"x\")", cells
    assert cells["model"] == "\x27=1+1.onnx", cells["model"]
    assert float(cells["median_ms"]) > 0, cells["median_ms"]
    for k, v in cells.items():
        assert not v or v[0] not in "=+@\t\r", (k, v)
' "$tmp/r.csv"
fi

# 5. The results database is data too: `history` and `compare` print the
# model's path (here a file name with an escape sequence and a newline)
# escaped.
esc=$'e\x1b[31mvil\nline.onnx'
ln -s "$tmp/escapes.onnx" "$tmp/$esc"
quick=(-c REFERENCE --warmup 1 --warmup-time 0 --min-iterations 3 --min-time 0)
if run 0 bench "$tmp/$esc" "${quick[@]}" && run 0 bench "$tmp/$esc" "${quick[@]}"; then
  if run 0 history; then
    no_control "$tmp/out" "history"
    expect_in "$tmp/out" 'e\x1b[31mvil\x0aline.onnx' "history: the path escaped"
  fi
  if run 0 compare 1 2; then
    no_control "$tmp/out" "compare"
    expect_in "$tmp/out" 'e\x1b[31mvil\x0aline.onnx' "compare: the path escaped"
  fi
fi

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
