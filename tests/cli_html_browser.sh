#!/usr/bin/env bash
# The HTML report in a real browser: headless Chromium loads the file from
# disk (the page's Content Security Policy forbids any network load), runs
# its script and dumps the DOM it rendered. The test checks that
#   - the script ran to its end (<body data-rendered="1">) and the browser
#     logged no console message at all (no script error, no blocked load);
#   - every model has a latency chart with one bar and one p10-p90 whisker
#     per ok conversion of its table, and a throughput chart likewise;
#   - the table has a row per conversion, and markup in an error message
#     stayed text (the page holds exactly one <script>).
# Pages: the hand-built report of tests/test_report_formats.c (every
# status, markup in names and errors) and, when `modelbench bench` has the
# --html option, the report of a real run.
#
# Needs /usr/bin/chromium (Debian `chromium`, installed by `make test`).
# Without it the test is skipped, unless MB_WITH_BROWSER=1 says it must
# run. Environment (set by ctest): MB_CLI, MB_TEST_MODELS, MB_BUILD_DIR.
set -u

chromium=${MB_CHROMIUM:-/usr/bin/chromium}
python=/usr/bin/python3
if [ ! -x "$chromium" ]; then
  if [ "${MB_WITH_BROWSER:-0}" = 1 ]; then
    echo "FAIL: $chromium is missing (apt-get install chromium), and" \
      "MB_WITH_BROWSER=1 requires the browser test"
    exit 1
  fi
  echo "SKIP: no $chromium (set MB_WITH_BROWSER=1 or run 'make test' to" \
    "install it)"
  exit 0
fi

build=${MB_BUILD_DIR:?set MB_BUILD_DIR to the build folder}
cli=${MB_CLI:?set MB_CLI to the modelbench binary}
models=${MB_TEST_MODELS:?set MB_TEST_MODELS to the bundled models folder}
fixture_writer=$build/bin/test_report_formats
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MODELBENCH_CACHE_DIR=$tmp/cache
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"

# render PAGE NAME: loads PAGE in headless Chromium; the DOM goes to
# $tmp/NAME.dom, the browser's log to $tmp/NAME.log.
render() {
  local page=$1 name=$2
  timeout 60 "$chromium" --headless --no-sandbox --disable-gpu \
    --disable-dev-shm-usage --no-first-run --no-default-browser-check \
    --disable-extensions --disable-background-networking --disable-sync \
    --disable-component-update --user-data-dir="$tmp/profile-$name" \
    --enable-logging=stderr --v=0 --virtual-time-budget=2000 \
    --dump-dom "file://$page" >"$tmp/$name.dom" 2>"$tmp/$name.log"
}

# console_messages NAME: the console lines Chromium logged for the page.
console_messages() {
  grep -E ':CONSOLE[(:]|Uncaught' "$tmp/$1.log"
}

# check_dom NAME [fixture]: the structural checks, in Python (stdlib only).
check_dom() {
  "$python" - "$tmp/$1.dom" "${2:-}" <<'EOF'
import sys
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link",
        "meta", "source", "track", "wbr"}


class Collector(HTMLParser):
    """Every element with its attributes and the ids of its ancestors."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.elements, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        el = {"tag": tag, "attrs": dict(attrs),
              "ancestors": [a["attrs"].get("id") for a in self.stack]}
        el["class"] = (el["attrs"].get("class") or "").split()
        self.elements.append(el)
        if tag not in VOID:
            self.stack.append(el)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i]["tag"] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        self.text.append(data)


dom_path, mode = sys.argv[1], sys.argv[2]
c = Collector()
c.feed(open(dom_path, encoding="utf-8").read())
errors = []


def check(cond, message):
    if not cond:
        errors.append(message)


def find(tag=None, cls=None, inside=None, **attrs):
    out = []
    for el in c.elements:
        if tag and el["tag"] != tag:
            continue
        if cls and cls not in el["class"]:
            continue
        if inside and inside not in el["ancestors"]:
            continue
        if any(el["attrs"].get(k.replace("_", "-")) != v
               for k, v in attrs.items()):
            continue
        out.append(el)
    return out


def number(el, attr):
    try:
        return float(el["attrs"].get(attr, ""))
    except ValueError:
        errors.append("%s %s=%r is not a number"
                      % (el["tag"], attr, el["attrs"].get(attr)))
        return float("nan")


body = find("body")
check(len(body) == 1, "one <body>")
body = body[0]["attrs"] if body else {}
check(body.get("data-rendered") == "1",
      "the page's script did not finish (no data-rendered on <body>)")
check("data-script-error" not in body,
      "script error: %s" % body.get("data-script-error"))
check(len(find("script")) == 1,
      "%d <script> elements, want exactly 1" % len(find("script")))

sections = find("section", cls="model")
check(sections, "no <section class=model>")
total_bars = 0
for s, section in enumerate(sections):
    sid = section["attrs"].get("id")
    check(sid == "model-%d" % s, "section %d has id %r" % (s, sid))
    rows = find("tr", cls="result", inside="results-%d" % s)
    ok = [r["attrs"].get("data-conversion") for r in rows
          if r["attrs"].get("data-status") == "ok"]
    check(rows, "model %d: no result rows" % s)
    if not ok:
        continue
    lat, thr = "latency-chart-%d" % s, "throughput-chart-%d" % s
    check(find("svg", id=lat), "model %d: no <svg id=%s>" % (s, lat))
    check(find("svg", id=thr), "model %d: no <svg id=%s>" % (s, thr))
    bars = find("rect", cls="bar", inside=lat)
    names = [b["attrs"].get("data-conversion") for b in bars]
    check(sorted(names) == sorted(ok),
          "model %d: latency bars %s, ok rows %s" % (s, names, ok))
    medians = {}
    for b in bars:
        m = number(b, "data-median-ms")
        medians[b["attrs"].get("data-conversion")] = m
        check(m >= 0, "bar %s: median %r" % (names, m))
        check(number(b, "width") > 0, "bar without width")
    whiskers = find("line", cls="whisker", inside=lat)
    check(sorted(w["attrs"].get("data-conversion") for w in whiskers)
          == sorted(ok), "model %d: one whisker per bar" % s)
    for w in whiskers:
        lo, hi = number(w, "data-lo-ms"), number(w, "data-hi-ms")
        check(0 <= lo <= hi, "whisker %s: %r..%r"
              % (w["attrs"].get("data-conversion"), lo, hi))
        check(number(w, "x1") <= number(w, "x2"), "whisker drawn backwards")
    tbars = find("rect", cls="bar", inside=thr)
    check(sorted(b["attrs"].get("data-conversion") for b in tbars)
          == sorted(ok), "model %d: throughput bars" % s)
    for b in tbars:
        check(number(b, "data-throughput-sps") > 0, "throughput bar <= 0")
    total_bars += len(bars) + len(tbars)
    # Ok rows come first, fastest first: the chart follows the table.
    ordered = [medians[n] for n in names]
    check(ordered == sorted(ordered), "model %d: bars not by median" % s)
check(body.get("data-bars") == str(total_bars),
      "script counted %s bars, the DOM has %d"
      % (body.get("data-bars"), total_bars))

if mode == "fixture":
    text = "".join(c.text)
    rows = find("tr", cls="result", inside="results-0")
    check(len(rows) == 10, "fixture: %d rows, want 10" % len(rows))
    check('<script>alert("x")</script>' in text,
          "fixture: the error's markup is not shown as text")
    check(len(find("rect", cls="bar", inside="latency-chart-0")) == 6,
          "fixture: want 6 latency bars")
    check(find("rect", cls="best", inside="latency-chart-0",
               data_conversion="BF16+ORT_CPU"),
          "fixture: BF16+ORT_CPU is not marked as the recommendation")
    check(find("tr", data_conversion='WEIRD|<b>"NAME",`x`'),
          "fixture: the odd conversion name did not survive")

if mode == "sweep":
    # A load sweep over batch and QPS (tests/cli_html_browser.sh, part 3):
    # 2 conversions x 2 batches x 2 QPS, one line per conversion and value
    # of the other swept setting, one point per value of the chart's own.
    check(len(find("section", cls="sweep", id="sweep-0")) == 1,
          "sweep: no <section class=sweep id=sweep-0>")
    check(len(sections) == 4, "sweep: %d point sections, want 4"
          % len(sections))
    for chart, xs in (("sweep-batch-latency-0", {1.0, 2.0}),
                      ("sweep-batch-throughput-0", {1.0, 2.0}),
                      ("sweep-qps-latency-0", {20.0, 40.0})):
        check(find("svg", id=chart), "sweep: no <svg id=%s>" % chart)
        series = find("g", cls="series", inside=chart)
        names = sorted(g["attrs"].get("data-conversion") for g in series)
        check(names == ["ORT_CPU", "ORT_CPU", "REFERENCE", "REFERENCE"],
              "sweep: %s has series %s" % (chart, names))
        points = find("circle", cls="point", inside=chart)
        check(len(points) == 8, "sweep: %s has %d points, want 8"
              % (chart, len(points)))
        for p in points:
            check(number(p, "data-x") in xs, "sweep: %s point at x=%r"
                  % (chart, p["attrs"].get("data-x")))
            check(number(p, "data-y") > 0, "sweep: %s point at y=%r"
                  % (chart, p["attrs"].get("data-y")))
    check(find("line", cls="slo", inside="sweep-qps-latency-0",
               data_slo_ms="500"), "sweep: no SLO line on the QPS chart")
    check(len(find("tr", cls="sweep-row", inside="sweep-0")) == 8,
          "sweep: want 8 rows in the sweep table")
    check(find("div", cls="recommendation", id="slo-recommendation-0-0"),
          "sweep: no SLO recommendation")

for e in errors:
    print("  " + e)
sys.exit(1 if errors else 0)
EOF
}

# check_page PAGE NAME [fixture]: renders and runs every check.
check_page() {
  local page=$1 name=$2
  checks=$((checks + 1))
  if ! render "$page" "$name"; then
    fail "$name: chromium failed or timed out"
    sed 's/^/    /' "$tmp/$name.log" | grep -v dbus | tail -20
    return
  fi
  if console_messages "$name" >"$tmp/$name.console"; then
    fail "$name: the browser console is not silent"
    sed 's/^/    /' "$tmp/$name.console"
  fi
  checks=$((checks + 1))
  if ! check_dom "$name" "${3:-}"; then
    fail "$name: rendered DOM (above)"
  fi
}

# 0. The harness itself: a page whose script throws must be caught.
cat >"$tmp/broken.html" <<'EOF'
<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>x</title>
</head><body><script>no_such_function();
document.body.setAttribute("data-rendered", "1");</script></body></html>
EOF
checks=$((checks + 1))
render "$tmp/broken.html" broken
if ! console_messages broken | grep -q no_such_function ||
  grep -q '<body[^>]*data-rendered' "$tmp/broken.dom"; then
  fail "a script error went unnoticed: this Chromium logs differently"
  grep -v dbus "$tmp/broken.log" | sed 's/^/    /' | tail -10
fi

# 1. The hand-built report: every status, markup in names and errors.
checks=$((checks + 1))
if [ ! -x "$fixture_writer" ]; then
  fail "no $fixture_writer (build the tests first)"
elif ! "$fixture_writer" --write-html "$tmp/fixture.html"; then
  fail "test_report_formats --write-html failed"
else
  check_page "$tmp/fixture.html" fixture fixture
fi

# 2. A real run, once `modelbench bench` writes HTML.
if "$cli" bench --help 2>&1 | grep -q -- '--html'; then
  checks=$((checks + 1))
  "$cli" bench "$models/mlp.onnx" -c REFERENCE,ORT_CPU --min-time 0.05 \
    --warmup 1 --warmup-time 0 --min-iterations 5 \
    --html "$tmp/real.html" >"$tmp/real.out" 2>&1
  rc=$?
  if [ "$rc" -gt 1 ] || [ ! -s "$tmp/real.html" ]; then
    fail "modelbench bench --html exited $rc without a report"
    sed 's/^/    /' "$tmp/real.out" | tail -20
  else
    check_page "$tmp/real.html" real
  fi
else
  echo "note: 'modelbench bench' has no --html option yet; real-run page" \
    "not checked"
fi

# 3. A load sweep: the sweep section's line charts, table and SLO
# recommendation over one report per point.
if "$cli" load --help >/dev/null 2>&1; then
  checks=$((checks + 1))
  "$cli" load "$models/mlp.onnx" -c REFERENCE,ORT_CPU --scenario server \
    --sweep batch=1,2 --sweep qps=20,40 --slo p99=500ms --min-duration 0.3 \
    --min-queries 10 --warmup 1 --warmup-time 0 --no-record \
    --html "$tmp/sweep.html" >"$tmp/sweep.out" 2>&1
  rc=$?
  if [ "$rc" -gt 1 ] || [ ! -s "$tmp/sweep.html" ]; then
    fail "modelbench load --sweep --html exited $rc without a report"
    sed 's/^/    /' "$tmp/sweep.out" | tail -20
  else
    check_page "$tmp/sweep.html" sweep sweep
  fi
fi

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
