/* The HTML report: one self-contained file that a browser opens without a
 * network (no external CSS, JavaScript, fonts or images; a Content Security
 * Policy in the page forbids loading any). Per model:
 *   - the recommendation (mb_bench_recommend);
 *   - an SVG bar chart of median latency per conversion, with a whisker
 *     from p10 to p90 of the timed iterations (min to p90 when the raw
 *     samples are missing), and an SVG chart of throughput;
 *   - the results table with the accuracy columns, statuses and errors;
 *   - warnings, machine and settings.
 * Stable hooks for tests and scripts: <section id="model-N">, <svg
 * id="latency-chart-N"> and id="throughput-chart-N", bars <rect class="bar"
 * data-conversion="NAME" data-median-ms="..."> (data-throughput-sps in the
 * throughput chart), <line class="whisker" data-lo-ms data-hi-ms>, table
 * rows <tr class="result" data-conversion data-status>. The small script at
 * the end only adds hover highlighting and sets <body data-rendered="1">.
 *
 * Inline SVG needs no xmlns in HTML5, so the file names no URL at all.
 *
 * Every piece of text from the report (paths, names, errors) is escaped
 * through mb__html_put_n, here and in html_sweep.c, and made valid UTF-8;
 * ids from outside text go through mb__html_id_part. The script reads data
 * from attributes and never from text spliced into it, and the CSP lets
 * only this file's own <style> and <script> apply, named by their SHA-256
 * (no 'unsafe-inline'). */
#include "report/report_util.h"

#include <math.h>
#include <stdlib.h>

/* Chart geometry, in SVG user units (the SVG scales to the page width). */
#define CHART_WIDTH 760
#define CHART_LABEL_WIDTH 200 /* conversion names, right-aligned */
#define CHART_PLOT_WIDTH 440  /* bars; the rest holds the value labels */
#define CHART_ROW_HEIGHT 26
#define CHART_BAR_HEIGHT 16
#define CHART_TOP 8
#define CHART_AXIS_HEIGHT 34
#define CHART_LABEL_CHARS 28 /* longer names are cut with an ellipsis */

/* ---- text ---- */

/* Writes at most max_chars characters of s (all when < 0), escaped for
 * element text and double- or single-quoted attributes alike. Control
 * characters become spaces (newlines too unless keep_newlines), invalid
 * UTF-8 becomes U+FFFD. Returns true when s was cut. */
bool mb__html_put_n(FILE *f, const char *s, int max_chars, bool keep_newlines) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  for (int chars = 0; *p; chars++) {
    if (max_chars >= 0 && chars == max_chars)
      return true;
    size_t n = mb__report_utf8_length((const char *)p);
    if (n == 0) {
      fputs(MB_REPORT_REPLACEMENT_CHAR, f);
      p++;
      continue;
    }
    if (n > 1) {
      fwrite(p, 1, n, f);
      p += n;
      continue;
    }
    switch (*p) {
    case '&':
      fputs("&amp;", f);
      break;
    case '<':
      fputs("&lt;", f);
      break;
    case '>':
      fputs("&gt;", f);
      break;
    case '"':
      fputs("&quot;", f);
      break;
    case '\'':
      fputs("&#39;", f);
      break;
    case '\n':
      fputc(keep_newlines ? '\n' : ' ', f);
      break;
    default:
      fputc(*p < 0x20 || *p == 0x7f ? ' ' : *p, f);
    }
    p++;
  }
  return false;
}

static void put_html(FILE *f, const char *s) {
  mb__html_put_n(f, s, -1, false);
}

/* An id fragment from outside text (a dimension's name): letters, digits,
 * '-' and '_' stay, every other byte becomes "_xx" (hex), so the id needs
 * no escaping in HTML, in a URL fragment or in a CSS selector. */
const char *mb__html_id_part(const char *s, char *buf, size_t size) {
  size_t used = 0;
  if (size == 0)
    return buf;
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                 (*p >= '0' && *p <= '9') || *p == '-' || *p == '_';
    size_t need = plain ? 1 : 3;
    if (used + need >= size)
      break;
    if (plain)
      buf[used++] = (char)*p;
    else
      used += (size_t)snprintf(buf + used, size - used, "_%02x", *p);
  }
  buf[used] = '\0';
  return buf;
}

/* A number for a data-* attribute: plain C-locale decimal, "" unknown. */
void mb__html_put_number(FILE *f, const char *attr, double v) {
  if (isfinite(v))
    fprintf(f, " %s=\"%.6g\"", attr, v);
  else
    fprintf(f, " %s=\"\"", attr);
}

/* ---- page frame ---- */

const char mb__html_page_style[] =
    ":root{--fg:#1d2127;--muted:#5b6470;--bg:#fff;--panel:#f5f7fa;"
    "--line:#d9dee5;--bar:#4a78c2;--best:#2f9a5d;--bad:#c98a1b;"
    "--fail:#c0392b}\n"
    "@media (prefers-color-scheme:dark){:root{--fg:#e6e9ee;--muted:#9aa4b1;"
    "--bg:#15181c;--panel:#1e2228;--line:#363c45;--bar:#6b97de;"
    "--best:#4cc283;--bad:#e0a94a;--fail:#e86a5c}}\n"
    "body{margin:0;font:15px/1.45 system-ui,-apple-system,'Segoe UI',"
    "Roboto,sans-serif;color:var(--fg);background:var(--bg)}\n"
    "header,main{max-width:1100px;margin:0 auto;padding:0 20px}\n"
    "header{padding-top:18px}h1{margin:0 0 4px;font-size:24px}\n"
    "h2{margin:32px 0 4px;font-size:19px;word-break:break-all}\n"
    "h3{margin:22px 0 8px;font-size:16px}\n"
    ".sub,.meta,figcaption,.legend{color:var(--muted);font-size:13px}\n"
    "nav a{margin-right:12px}\n"
    "section.model{border-top:1px solid var(--line);padding-bottom:12px}\n"
    "section.script{border-top:3px solid var(--line);margin-top:28px}\n"
    "section.script>h2{font-size:21px}"
    "section.script section.model{margin-left:18px}\n"
    "code{font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}\n"
    ".recommendation{background:var(--panel);border-left:4px solid "
    "var(--best);padding:10px 14px;margin:14px 0}\n"
    ".recommendation p{margin:0 0 6px}\n"
    ".recommendation dl{margin:0;display:grid;grid-template-columns:max-"
    "content auto;gap:2px 14px;font-size:13px}\n"
    ".recommendation dt{color:var(--muted)}.recommendation dd{margin:0}\n"
    "figure{margin:0}svg.chart{width:100%;max-width:900px;height:auto;"
    "display:block}\n"
    "svg .bar{fill:var(--bar)}svg .bar.best{fill:var(--best)}"
    "svg .bar.inaccurate{fill:var(--bad)}\n"
    "svg .row.hl .bar{stroke:var(--fg);stroke-width:1.5}\n"
    "svg .whisker,svg .whisker-cap{stroke:var(--fg);stroke-width:1.5}\n"
    "svg .grid{stroke:var(--line);stroke-width:1}\n"
    "svg text{fill:var(--fg);font-size:12px}"
    "svg text.tick,svg text.axis-title{fill:var(--muted);font-size:11px}\n"
    ".swatch{display:inline-block;width:10px;height:10px;margin:0 4px "
    "0 12px;vertical-align:middle;background:var(--bar)}\n"
    ".swatch.best{background:var(--best)}"
    ".swatch.inaccurate{background:var(--bad)}\n"
    ".no-data{color:var(--muted);font-style:italic}\n"
    "table{border-collapse:collapse;font-size:13px;width:100%}\n"
    "th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:"
    "right;vertical-align:top}\ntd{white-space:nowrap}td:first-child{white-"
    "space:normal}\n"
    "th{background:var(--panel);position:sticky;top:0}\n"
    "th:nth-child(-n+4),td:nth-child(-n+4),td.error{text-align:left}\n"
    "td.error{color:var(--fail);white-space:pre-wrap;word-break:break-word}\n"
    "tr.hl td{background:var(--panel)}\n"
    ".status-ok .status{color:var(--best)}"
    ".status-error .status,.status-timeout .status,.status-crashed .status"
    "{color:var(--fail);font-weight:600}\n"
    ".status-unavailable .status,.status-skipped .status{color:var(--muted)}"
    ".status-built .status{color:var(--best)}"
    "\n.no{color:var(--bad);font-weight:600}\n"
    "details pre{white-space:pre-wrap;color:var(--fg);font-size:12px}\n"
    "ul.warnings{padding-left:20px}\n"
    "dl.facts{display:grid;grid-template-columns:max-content auto;gap:2px "
    "14px;font-size:13px}dl.facts dt{color:var(--muted)}"
    "dl.facts dd{margin:0}\n"
    ".wrap{overflow-x:auto}\n"
    "svg .roof{stroke:var(--fg);stroke-width:2}"
    "svg .roof.int8{stroke:var(--best)}svg .roof.bf16{stroke:var(--bar)}"
    "svg .roof.memory{stroke:var(--muted)}\n"
    "svg .rpoint{stroke:var(--bg);stroke-width:1;fill:var(--bar)}"
    "svg .rpoint.compute{fill:var(--best)}svg .rpoint.overhead{fill:"
    "var(--bad)}\nsvg text.roof-label,svg text.point-label{font-size:11px}"
    "\n";

/* Hover: a bar and its table row light up together. Data comes from the
 * attributes; conversion names are compared as strings, never put into a
 * selector. The last line tells a headless browser the script finished. */
static const char page_script[] =
    "(function () {\n"
    "  \"use strict\";\n"
    "  var body = document.body;\n"
    "  window.addEventListener(\"error\", function (e) {\n"
    "    body.setAttribute(\"data-script-error\", String(e.message));\n"
    "  });\n"
    "  function mark(section, name, on) {\n"
    "    var items = section.querySelectorAll(\"[data-conversion]\");\n"
    "    for (var i = 0; i < items.length; i++) {\n"
    "      var el = items[i];\n"
    "      if (el.getAttribute(\"data-conversion\") !== name) continue;\n"
    "      var target = el.tagName.toLowerCase() === \"tr\" ? el :\n"
    "          el.closest(\"g.row\");\n"
    "      if (target) target.classList.toggle(\"hl\", on);\n"
    "    }\n"
    "  }\n"
    "  var sections = document.querySelectorAll(\"section.model\");\n"
    "  var bars = 0;\n"
    "  for (var s = 0; s < sections.length; s++) {\n"
    "    var items = sections[s].querySelectorAll(\n"
    "        \"svg .bar, tr.result\");\n"
    "    for (var i = 0; i < items.length; i++) {\n"
    "      (function (section, el) {\n"
    "        var name = el.getAttribute(\"data-conversion\");\n"
    "        el.addEventListener(\"mouseenter\", function () {\n"
    "          mark(section, name, true);\n"
    "        });\n"
    "        el.addEventListener(\"mouseleave\", function () {\n"
    "          mark(section, name, false);\n"
    "        });\n"
    "      })(sections[s], items[i]);\n"
    "    }\n"
    "    bars += sections[s].querySelectorAll(\"svg .bar\").length;\n"
    "  }\n"
    "  body.setAttribute(\"data-bars\", String(bars));\n"
    "  var points = document.querySelectorAll(\"svg.line-chart .point\");\n"
    "  body.setAttribute(\"data-sweep-points\", String(points.length));\n"
    "  body.setAttribute(\"data-rendered\", \"1\");\n"
    "})();\n";

/* The first report of reports[m]'s script (models are grouped under the
 * script that ran them, in the order scripts first appear); m itself when
 * the model has no script or is its script's first. */
static int script_group(const mb_bench_report *const *reports, int m) {
  const char *script = reports[m]->model_script;
  for (int k = 0; script[0] && k < m; k++)
    if (reports[k] && strcmp(reports[k]->model_script, script) == 0)
      return k;
  return m;
}

/* A model's title: its path, or for a model a script ran, its name and
 * where it was built. */
static void put_model_title(FILE *f, const mb_bench_report *report) {
  if (report->model_script[0]) {
    put_html(f, report->model_name[0] ? report->model_name : "?");
    if (report->model_location[0]) {
      fputs(" <span class=\"meta\">(", f);
      put_html(f, report->model_location);
      fputs(")</span>", f);
    }
    return;
  }
  put_html(f, report->model_path[0] ? report->model_path : "?");
}

/* The page's CSP names its one <style> and one <script> by their SHA-256
 * ('sha256-BASE64' of the element's text, CSP Level 2): a browser runs
 * only the tool's own script and applies only its own style: a tag that
 * slipped past the escaping still could not run. The hashed text starts
 * with the newline after the opening tag. */
void mb__html_put_csp_hash(FILE *f, const char *a, const char *b) {
  static const char b64[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  mb_sha256 ctx;
  uint8_t d[33] = {0}; /* one byte of padding: 32 is not a multiple of 3 */
  mb__sha256_init(&ctx);
  mb__sha256_update(&ctx, "\n", 1);
  mb__sha256_update(&ctx, a, strlen(a));
  mb__sha256_update(&ctx, b, strlen(b));
  mb__sha256_final(&ctx, d);
  fputs("'sha256-", f);
  for (int i = 0; i < 33; i += 3) {
    uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
    fputc(b64[v >> 18 & 63], f);
    fputc(b64[v >> 12 & 63], f);
    fputc(b64[v >> 6 & 63], f);
    fputc(i + 3 < 33 ? b64[v & 63] : '=', f);
  }
  fputc('\'', f);
}

static void write_page_start(FILE *f, const mb_bench_report *const *reports,
                             int n) {
  const char *version = n > 0 && reports[0] && reports[0]->tool_version[0]
                            ? reports[0]->tool_version
                            : MB_VERSION_STRING;
  fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">"
        "\n<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
        "'none'; style-src ",
        f);
  mb__html_put_csp_hash(f, mb__html_page_style, mb__html_sweep_style);
  fputs("; script-src ", f);
  mb__html_put_csp_hash(f, page_script, "");
  fputs("\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, "
        "initial-scale=1\">\n<meta name=\"generator\" content=\"modelbench ",
        f);
  put_html(f, version);
  fputs("\">\n<title>modelbench report", f);
  if (n == 1 && reports[0]) {
    fputs(": ", f);
    put_html(f, reports[0]->model_path);
  }
  fprintf(f,
          "</title>\n<style>\n%s%s</style>\n</head>\n<body>\n<header>\n"
          "<h1>modelbench report</h1>\n<p class=\"sub\">%d model%s, "
          "modelbench ",
          mb__html_page_style, mb__html_sweep_style, n, n == 1 ? "" : "s");
  put_html(f, version);
  fputs("</p>\n", f);
  if (n > 1) {
    fputs("<nav>", f);
    for (int m = 0; m < n; m++) {
      if (!reports[m])
        continue;
      if (reports[m]->model_script[0]) {
        if (script_group(reports, m) == m) {
          fprintf(f, "<a href=\"#script-%d\">", m);
          put_html(f, reports[m]->model_script);
          fputs("</a>", f);
        }
        continue;
      }
      fprintf(f, "<a href=\"#model-%d\">", m);
      put_html(f, reports[m]->model_path[0] ? reports[m]->model_path : "?");
      if (reports[m]->sweep_point[0]) {
        fputs(" (", f);
        put_html(f, reports[m]->sweep_point);
        fputs(")", f);
      }
      fputs("</a>", f);
    }
    fputs("</nav>\n", f);
  }
  fputs("</header>\n<main>\n", f);
}

static void write_page_end(FILE *f) {
  fprintf(f, "</main>\n<script>\n%s</script>\n</body>\n</html>\n", page_script);
}

/* ---- charts ---- */

/* An axis end at a round number above max: 1, 2 or 5 times a power of
 * ten per tick, about five ticks. */
double mb__html_nice_axis(double max, double *step_out) {
  if (!(max > 0) || !isfinite(max)) {
    *step_out = 0.2;
    return 1.0;
  }
  double raw = max / 5.0;
  double magnitude = pow(10.0, floor(log10(raw)));
  double step = magnitude;
  static const double factors[] = {1.0, 2.0, 5.0, 10.0};
  for (size_t i = 0; i < MB_ARRAY_COUNT(factors); i++) {
    step = factors[i] * magnitude;
    if (step >= raw)
      break;
  }
  *step_out = step;
  return ceil(max / step - 1e-9) * step;
}

typedef enum chart_kind { CHART_LATENCY, CHART_THROUGHPUT } chart_kind;

/* What a chart draws for one result: the value and, for latency, the
 * whisker. */
typedef struct chart_row {
  int index;
  double value, lo, hi;
  bool has_spread;
} chart_row;

static int chart_rows(const mb_bench_report *report, const int *order,
                      chart_kind kind, chart_row *rows) {
  int n = 0;
  for (int k = 0; k < report->n_results; k++) {
    const mb_bench_result *r = &report->results[order[k]];
    if (!mb__report_has_median(r))
      continue;
    chart_row row = {order[k], 0, 0, 0, false};
    if (kind == CHART_LATENCY) {
      row.value = r->latency_ms.median;
      row.has_spread = mb__report_spread(r, &row.lo, &row.hi);
      if (!row.has_spread)
        row.lo = row.hi = row.value;
    } else {
      if (!isfinite(r->throughput_sps) || r->throughput_sps <= 0)
        continue;
      row.value = r->throughput_sps;
    }
    rows[n++] = row;
  }
  return n;
}

static double x_of(double v, double axis_max) {
  double x = CHART_LABEL_WIDTH + CHART_PLOT_WIDTH * (v / axis_max);
  return MB_MIN(MB_MAX(x, CHART_LABEL_WIDTH),
                CHART_LABEL_WIDTH + CHART_PLOT_WIDTH);
}

static void write_chart_row(FILE *f, const mb_bench_report *report,
                            const chart_row *row, int position, double axis_max,
                            chart_kind kind, const mb_recommendations *rec) {
  const mb_bench_result *r = &report->results[row->index];
  const char *name = mb__report_name(r);
  double y = CHART_TOP + position * CHART_ROW_HEIGHT;
  double bar_y = y + (CHART_ROW_HEIGHT - CHART_BAR_HEIGHT) / 2.0;
  double mid = bar_y + CHART_BAR_HEIGHT / 2.0;
  double x1 = x_of(row->value, axis_max);
  char value[32];

  fputs("<g class=\"row\" data-conversion=\"", f);
  put_html(f, name);
  fprintf(f,
          "\">\n<text class=\"label\" x=\"%d\" y=\"%.1f\" "
          "text-anchor=\"end\" dominant-baseline=\"middle\">",
          CHART_LABEL_WIDTH - 8, mid);
  if (mb__html_put_n(f, name, CHART_LABEL_CHARS - 1, false))
    fputs("\xe2\x80\xa6", f); /* the ellipsis */
  fputs("</text>\n", f);

  bool accurate = mb__report_is_accurate(r);
  fprintf(f, "<rect class=\"bar%s%s\" data-conversion=\"",
          row->index == rec->fastest_accurate ? " best" : "",
          r->has_accuracy && !accurate ? " inaccurate" : "");
  put_html(f, name);
  fputs("\"", f);
  if (kind == CHART_LATENCY) {
    mb__html_put_number(f, "data-median-ms", row->value);
    mb__html_put_number(f, "data-p90-ms", r->latency_ms.p90);
  } else {
    mb__html_put_number(f, "data-throughput-sps", row->value);
  }
  fprintf(f, " x=\"%d\" y=\"%.1f\" width=\"%.2f\" height=\"%d\"><title>",
          CHART_LABEL_WIDTH, bar_y, MB_MAX(x1 - CHART_LABEL_WIDTH, 1.0),
          CHART_BAR_HEIGHT);
  put_html(f, name);
  if (kind == CHART_LATENCY) {
    char lo[32], hi[32];
    mb__report_format_ms(value, sizeof value, row->value);
    mb__report_format_ms(lo, sizeof lo, row->lo);
    mb__report_format_ms(hi, sizeof hi, row->hi);
    fprintf(f, ": median %s ms", value);
    if (row->has_spread)
      fprintf(f, ", %s %s ms, p90 %s ms",
              r->samples_ms && r->n_samples_ms > 0 ? "p10" : "min", lo, hi);
  } else {
    mb__report_format_sps(value, sizeof value, row->value);
    fprintf(f, ": %s samples/s", value);
  }
  if (r->has_accuracy && !accurate)
    fputs(" (inaccurate)", f);
  fputs("</title></rect>\n", f);

  double label_x = x1;
  if (kind == CHART_LATENCY) {
    double wl = x_of(row->lo, axis_max), wh = x_of(row->hi, axis_max);
    fputs("<line class=\"whisker\" data-conversion=\"", f);
    put_html(f, name);
    fputs("\"", f);
    mb__html_put_number(f, "data-lo-ms", row->lo);
    mb__html_put_number(f, "data-hi-ms", row->hi);
    fprintf(f, " x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\"/>\n", wl, mid,
            wh, mid);
    for (int cap = 0; cap < 2; cap++)
      fprintf(f,
              "<line class=\"whisker-cap\" x1=\"%.2f\" y1=\"%.1f\" "
              "x2=\"%.2f\" y2=\"%.1f\"/>\n",
              cap ? wh : wl, mid - 4, cap ? wh : wl, mid + 4);
    label_x = MB_MAX(x1, wh);
    snprintf(value + strlen(value), sizeof value - strlen(value), " ms");
  }
  fprintf(f,
          "<text class=\"value\" x=\"%.2f\" y=\"%.1f\" "
          "dominant-baseline=\"middle\">%s</text>\n</g>\n",
          label_x + 6, mid, value);
}

static void write_chart(FILE *f, const mb_bench_report *report, int model,
                        const int *order, chart_kind kind,
                        const mb_recommendations *rec) {
  const char *id = kind == CHART_LATENCY ? "latency-chart" : "throughput-chart";
  const char *title =
      kind == CHART_LATENCY ? "Median latency (ms)" : "Throughput (samples/s)";
  chart_row *rows = malloc(sizeof *rows * (size_t)MB_MAX(report->n_results, 1));
  int n = rows ? chart_rows(report, order, kind, rows) : 0;
  fprintf(f, "<h3>%s</h3>\n", title);
  if (n == 0) {
    fprintf(f, "<p class=\"no-data\" id=\"%s-%d\">%s</p>\n", id, model,
            rows ? "No conversion finished, so there is nothing to chart."
                 : "(out of memory drawing the chart)");
    free(rows);
    return;
  }
  double max = 0;
  for (int i = 0; i < n; i++)
    max = MB_MAX(max, MB_MAX(rows[i].value, rows[i].hi));
  double step, axis_max = mb__html_nice_axis(max, &step);
  int plot_height = n * CHART_ROW_HEIGHT;
  int height = CHART_TOP + plot_height + CHART_AXIS_HEIGHT;

  fprintf(f,
          "<figure>\n<svg id=\"%s-%d\" class=\"chart %s\" "
          "viewBox=\"0 0 %d %d\" "
          "width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"%s per "
          "conversion\">\n",
          id, model, id, CHART_WIDTH, height, CHART_WIDTH, height, title);
  /* Grid and ticks first, so bars draw over them. */
  int ticks = (int)llround(axis_max / step);
  for (int t = 0; t <= ticks && t <= 20; t++) {
    double v = step * t, x = x_of(v, axis_max);
    char label[32];
    snprintf(label, sizeof label, "%g", v);
    fprintf(f,
            "<line class=\"grid\" x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" "
            "y2=\"%d\"/>\n<text class=\"tick\" x=\"%.2f\" y=\"%d\" "
            "text-anchor=\"middle\">%s</text>\n",
            x, CHART_TOP, x, CHART_TOP + plot_height, x,
            CHART_TOP + plot_height + 14, label);
  }
  fprintf(f,
          "<text class=\"axis-title\" x=\"%d\" y=\"%d\" "
          "text-anchor=\"middle\">%s</text>\n",
          CHART_LABEL_WIDTH + CHART_PLOT_WIDTH / 2,
          CHART_TOP + plot_height + 30,
          kind == CHART_LATENCY ? "milliseconds (lower is better)"
                                : "samples per second (higher is better)");
  for (int i = 0; i < n; i++)
    write_chart_row(f, report, &rows[i], i, axis_max, kind, rec);
  fputs("</svg>\n<figcaption>", f);
  if (kind == CHART_LATENCY)
    fputs("Bars: median latency. Whiskers: p10 to p90 of the timed "
          "iterations (min to p90 where the raw samples are missing).<br>",
          f);
  fputs("<span class=\"legend\"><span class=\"swatch best\"></span>"
        "recommended (fastest accurate)<span class=\"swatch\"></span>other"
        "<span class=\"swatch inaccurate\"></span>inaccurate</span>"
        "</figcaption>\n</figure>\n",
        f);
  free(rows);
}

/* ---- the table ---- */

static const char *const table_columns[] = {
    "conversion", "runtime",  "precision",     "status",   "median ms",
    "p90 ms",     "p99 ms",   "samples/s",     "speed-up", "max abs err",
    "min cosine", "accurate", "task accuracy", "load ms",  "peak MB",
    "% peak",     "bound",
};
/* The columns after status: a failed row puts its error across them. */
#define TABLE_NUMBER_COLUMNS ((int)MB_ARRAY_COUNT(table_columns) - 4)

static void td(FILE *f, const char *text) {
  fputs("<td>", f);
  put_html(f, text);
  fputs("</td>", f);
}

static void write_error_cell(FILE *f, const mb_bench_result *r) {
  fprintf(f, "<td class=\"error\" colspan=\"%d\">", TABLE_NUMBER_COLUMNS);
  mb__html_put_n(f, r->error[0] ? r->error : "no message", -1, true);
  if (r->log_path[0]) {
    fputs("<br><span class=\"meta\">log: <code>", f);
    put_html(f, r->log_path);
    fputs("</code></span>", f);
  }
  if (r->backtrace) {
    fputs("<details><summary>backtrace</summary><pre>", f);
    mb__html_put_n(f, r->backtrace, -1, true);
    fputs("</pre></details>", f);
  }
  fputs("</td>", f);
}

static void write_table_row(FILE *f, const mb_bench_report *report, int index,
                            const mb_recommendations *rec) {
  const mb_bench_result *r = &report->results[index];
  const char *status = mb_bench_status_name(r->status);
  bool known;
  char precision[64];
  mb__report_precision(r, &known);
  fprintf(f,
          "<tr class=\"result status-%s%s\" data-status=\"%s\" "
          "data-conversion=\"",
          status, index == rec->fastest_accurate ? " best" : "", status);
  put_html(f, mb__report_name(r));
  fputs("\"><td><code>", f);
  put_html(f, mb__report_name(r));
  fputs("</code>", f);
  if (index == report->baseline_result)
    fputs(" <span class=\"meta\">(baseline)</span>", f);
  fputs("</td>", f);
  td(f, r->runtime[0] ? r->runtime : "-");
  if (r->int8_weights != MB_INT8_WEIGHTS_AUTO) {
    /* The int8 form: the weights' width, why in the tooltip. */
    fputs("<td title=\"", f);
    put_html(f, r->int8_form);
    fputs("\">", f);
    put_html(f, known
                    ? mb_bench_result_precision(r, precision, sizeof precision)
                    : "?");
    fputs(" <span class=\"meta\">", f);
    put_html(f, r->int8_weights == MB_INT8_WEIGHTS_W8   ? "8-bit weights"
                : r->int8_weights == MB_INT8_WEIGHTS_W7 ? "7-bit weights"
                                                        : "7/8-bit weights");
    fputs("</span></td>", f);
  } else {
    td(f,
       known ? mb_bench_result_precision(r, precision, sizeof precision) : "?");
  }
  fputs("<td class=\"status\">", f);
  put_html(f, status);
  fputs("</td>", f);
  if (!mb__report_has_median(r)) {
    if (r->status == MB_BENCH_OK) {
      fprintf(f,
              "<td class=\"error\" colspan=\"%d\">no median was measured"
              "</td>",
              TABLE_NUMBER_COLUMNS);
    } else if (r->status == MB_BENCH_BUILT) {
      char built[160];
      fprintf(f, "<td class=\"meta\" colspan=\"%d\">", TABLE_NUMBER_COLUMNS);
      put_html(f, mb__report_built_text(r, built, sizeof built));
      fputs("</td>", f);
    } else {
      write_error_cell(f, r);
    }
    fputs("</tr>\n", f);
    return;
  }
  char buf[64];
  mb__report_format_ms(buf, sizeof buf, r->latency_ms.median);
  /* Half the median's 95% interval, as a share of it. */
  if (r->median_ci_ms[0] > 0 && r->latency_ms.median > 0)
    snprintf(buf + strlen(buf), sizeof buf - strlen(buf), " \u00b1%.1f%%",
             100 * (r->median_ci_ms[1] - r->median_ci_ms[0]) / 2 /
                 r->latency_ms.median);
  td(f, buf);
  mb__report_format_ms(buf, sizeof buf, r->latency_ms.p90);
  td(f, buf);
  mb__report_format_ms(buf, sizeof buf, r->latency_ms.p99);
  td(f, buf);
  mb__report_format_sps(buf, sizeof buf, r->throughput_sps);
  td(f, buf);
  if (r->speedup_vs_baseline > 0 && isfinite(r->speedup_vs_baseline) &&
      index != report->baseline_result && r->speedup_ci[0] > 0)
    snprintf(buf, sizeof buf, "%.2fx [%.2f\u2013%.2f]", r->speedup_vs_baseline,
             r->speedup_ci[0], r->speedup_ci[1]);
  else if (r->speedup_vs_baseline > 0 && isfinite(r->speedup_vs_baseline))
    snprintf(buf, sizeof buf, "%.2fx", r->speedup_vs_baseline);
  else
    snprintf(buf, sizeof buf, "-");
  td(f, buf);
  if (r->has_accuracy) {
    mb__report_format_err(buf, sizeof buf, mb__report_max_abs_err(r));
    td(f, buf);
    double c = mb__report_min_cosine(r);
    if (isnan(c))
      snprintf(buf, sizeof buf, r->n_outputs > 0 ? "NaN" : "-");
    else
      snprintf(buf, sizeof buf, "%.6f", c);
    td(f, buf);
    if (mb__report_is_accurate(r))
      td(f, "yes");
    else
      fputs("<td class=\"no\">no</td>", f);
  } else {
    fputs("<td colspan=\"3\" class=\"meta\">no reference to compare with"
          "</td>",
          f);
  }
  /* Top-1 against the labels (--labels), when there were some. */
  if (r->task_rows > 0)
    snprintf(buf, sizeof buf, "%.2f%%", 100.0 * r->task_accuracy);
  else
    snprintf(buf, sizeof buf, "-");
  td(f, buf);
  mb__report_format_ms(buf, sizeof buf, r->load_ms);
  td(f, buf);
  if (isfinite(r->peak_rss_mb) && r->peak_rss_mb > 0)
    snprintf(buf, sizeof buf, "%.1f", r->peak_rss_mb);
  else
    snprintf(buf, sizeof buf, "-");
  td(f, buf);
  /* The roofline: the share of the precision's peak, and the bound. */
  if (r->roofline.bound != MB_ROOFLINE_UNKNOWN)
    snprintf(buf, sizeof buf, "%.1f%%", 100.0 * r->roofline.peak_share);
  else
    snprintf(buf, sizeof buf, "-");
  td(f, buf);
  td(f, r->roofline.bound != MB_ROOFLINE_UNKNOWN
            ? mb_roofline_bound_name(r->roofline.bound)
            : "-");
  fputs("</tr>\n", f);
}

static void write_table(FILE *f, const mb_bench_report *report, int model,
                        const int *order, const mb_recommendations *rec) {
  fprintf(f,
          "<h3>Results</h3>\n<div class=\"wrap\"><table id=\"results-%d\" "
          "class=\"results\">\n<thead><tr>",
          model);
  for (size_t i = 0; i < MB_ARRAY_COUNT(table_columns); i++)
    fprintf(f, "<th scope=\"col\">%s</th>", table_columns[i]);
  fputs("</tr></thead>\n<tbody>\n", f);
  for (int k = 0; k < report->n_results; k++)
    write_table_row(f, report, order[k], rec);
  fputs("</tbody>\n</table></div>\n", f);
}

/* The realistic phases beside the steady state (--fresh-inputs,
 * --cold-cache), one row per conversion that ran them. */
static void write_realistic(FILE *f, const mb_bench_report *report,
                            const int *order) {
  bool any = false;
  for (int k = 0; k < report->n_results; k++) {
    const mb_bench_result *r = &report->results[order[k]];
    if (r->status == MB_BENCH_OK &&
        (r->fresh_inputs.iterations > 0 || r->cold_cache.iterations > 0))
      any = true;
  }
  if (!any)
    return;
  fputs("<h3>Realistic next to peak</h3>\n<p class=\"meta\">Medians of "
        "phases run after the steady state; the gap is each over the steady "
        "median.</p>\n<div class=\"wrap\"><table class=\"results\">\n"
        "<thead><tr><th scope=\"col\">conversion</th><th scope=\"col\">"
        "steady ms</th><th scope=\"col\">fresh inputs ms</th><th "
        "scope=\"col\">gap</th><th scope=\"col\">pool</th><th "
        "scope=\"col\">cold cache ms</th><th scope=\"col\">gap</th></tr>"
        "</thead>\n<tbody>\n",
        f);
  for (int k = 0; k < report->n_results; k++) {
    const mb_bench_result *r = &report->results[order[k]];
    const mb_realistic_stats *phases[2] = {&r->fresh_inputs, &r->cold_cache};
    if (r->status != MB_BENCH_OK ||
        (phases[0]->iterations <= 0 && phases[1]->iterations <= 0))
      continue;
    char buf[64];
    fputs("<tr>", f);
    td(f, mb__report_name(r));
    mb__report_format_ms(buf, sizeof buf, r->latency_ms.median);
    td(f, buf);
    for (int p = 0; p < 2; p++) {
      const mb_realistic_stats *s = phases[p];
      bool ran = s->iterations > 0;
      if (ran)
        mb__report_format_ms(buf, sizeof buf, s->median_ms);
      td(f, ran ? buf : "-");
      snprintf(buf, sizeof buf, "%+.1f%%", 100 * s->gap);
      td(f, ran ? buf : "-");
      if (p == 0) {
        snprintf(buf, sizeof buf, "%lld samples, %.1f MB",
                 (long long)s->pool_samples, s->pool_mb);
        td(f, ran ? buf : "-");
      }
    }
    fputs("</tr>\n", f);
  }
  fputs("</tbody>\n</table></div>\n", f);
}

/* Energy per inference (or why not) and cost per million inferences; a
 * reason every result shares is said once, not per row. */
static void write_cost_energy(FILE *f, const mb_bench_report *report, int model,
                              const int *order) {
  const char *common = mb__report_common_energy_reason(report);
  bool cost = false;
  for (int i = 0; i < report->n_results; i++)
    cost |= report->results[i].cost_per_million > 0;
  if (!mb__report_any_cost_or_energy(report) && !common)
    return;
  fputs("<h3>Energy and cost</h3>\n<p class=\"meta\">", f);
  if (report->config.price_per_core_hour > 0)
    fprintf(f,
            "Cost per million inferences at %g per core-hour x threads x "
            "sessions, from the throughput. ",
            report->config.price_per_core_hour);
  if (common) {
    fputs("Energy per inference unavailable: ", f);
    put_html(f, common);
    fputs(".", f);
  } else {
    fputs("Energy: RAPL package counters over the timed phase, which count "
          "everything the package ran.",
          f);
  }
  fputs("</p>\n", f);
  if (common && !cost)
    return;
  fprintf(f,
          "<div class=\"wrap\"><table id=\"energy-%d\" class=\"results\">\n"
          "<thead><tr><th scope=\"col\">conversion</th>%s<th "
          "scope=\"col\">cost per million</th></tr></thead>\n<tbody>\n",
          model, common ? "" : "<th scope=\"col\">energy per inference</th>");
  for (int k = 0; k < report->n_results; k++) {
    const mb_bench_result *r = &report->results[order[k]];
    if (r->status != MB_BENCH_OK)
      continue;
    char energy[256], price[32] = "-";
    if (r->cost_per_million > 0)
      snprintf(price, sizeof price, "%.4g", r->cost_per_million);
    fputs("<tr><td><code>", f);
    put_html(f, mb__report_name(r));
    fputs("</code></td>", f);
    if (!common)
      td(f, mb__report_energy_text(r, energy, sizeof energy));
    td(f, price);
    fputs("</tr>\n", f);
  }
  fputs("</tbody>\n</table></div>\n", f);
}

/* --cold: what a first request costs, one row per conversion. */
static void write_cold(FILE *f, const mb_bench_report *report, int model,
                       const int *order) {
  static const char *const columns[] = {
      "conversion",      "build miss ms",          "build hit ms",
      "load ms",         "first inference ms",     "iterations to steady",
      "first result ms", "first result (miss) ms", "note",
  };
  if (!mb__report_any_cold(report))
    return;
  fprintf(f,
          "<h3>Cold start</h3>\n<p class=\"meta\">The build step with the "
          "cache rebuilt (miss) and read back (hit); load: the model read "
          "and the session made; iterations to steady: before the median of "
          "every 5 consecutive latencies stays within 10%% of the timed "
          "median; first result: build + load + first inference.</p>\n"
          "<div class=\"wrap\"><table id=\"cold-%d\" "
          "class=\"results\">\n<thead><tr>",
          model);
  for (size_t i = 0; i < MB_ARRAY_COUNT(columns); i++)
    fprintf(f, "<th scope=\"col\">%s</th>", columns[i]);
  fputs("</tr></thead>\n<tbody>\n", f);
  for (int k = 0; k < report->n_results; k++) {
    const mb_bench_result *r = &report->results[order[k]];
    const mb_cold_start *c = &r->cold;
    if (!c->measured)
      continue;
    const double ms[] = {c->build_miss_ms, c->build_hit_ms, c->load_ms,
                         c->first_inference_ms};
    char buf[32];
    fputs("<tr><td><code>", f);
    put_html(f, mb__report_name(r));
    fputs("</code></td>", f);
    for (size_t i = 0; i < MB_ARRAY_COUNT(ms); i++) {
      mb__report_format_ms(buf, sizeof buf, ms[i]);
      td(f, buf);
    }
    snprintf(buf, sizeof buf, "-");
    if (c->iterations_to_steady >= 0)
      snprintf(buf, sizeof buf, "%lld", (long long)c->iterations_to_steady);
    td(f, buf);
    mb__report_format_ms(buf, sizeof buf, c->time_to_first_result_ms);
    td(f, buf);
    mb__report_format_ms(buf, sizeof buf, c->time_to_first_result_miss_ms);
    td(f, buf);
    td(f, c->note);
    fputs("</tr>\n", f);
  }
  fputs("</tbody>\n</table></div>\n", f);
}

/* ---- the rest of a model's section ---- */

static void write_pick(FILE *f, const char *label,
                       const mb_bench_report *report, int index,
                       const char *id) {
  fprintf(f, "<dt>%s</dt><dd id=\"%s\">", label, id);
  if (index < 0) {
    fputs("none", f);
  } else {
    const mb_bench_result *r = &report->results[index];
    char ms[32];
    mb__report_format_ms(ms, sizeof ms, r->latency_ms.median);
    fputs("<code>", f);
    put_html(f, mb__report_name(r));
    fprintf(f, "</code> (%s ms median", ms);
    if (isfinite(r->peak_rss_mb) && r->peak_rss_mb > 0)
      fprintf(f, ", %.1f MB peak", r->peak_rss_mb);
    fputs(")", f);
  }
  fputs("</dd>", f);
}

static void write_recommendation(FILE *f, const mb_bench_report *report,
                                 int model, const mb_recommendations *rec) {
  char id[64];
  fprintf(f, "<div class=\"recommendation\" id=\"recommendation-%d\">\n<p>",
          model);
  put_html(f, rec->summary);
  fputs("</p>\n<dl>", f);
  snprintf(id, sizeof id, "fastest-accurate-%d", model);
  write_pick(f, "fastest accurate", report, rec->fastest_accurate, id);
  snprintf(id, sizeof id, "fastest-exact-%d", model);
  write_pick(f, "fastest exact (fp32)", report, rec->fastest_exact, id);
  snprintf(id, sizeof id, "lowest-memory-%d", model);
  write_pick(f, "lowest peak memory", report, rec->lowest_memory, id);
  snprintf(id, sizeof id, "most-portable-%d", model);
  write_pick(f, "most portable", report, rec->most_portable, id);
  snprintf(id, sizeof id, "default-option-%d", model);
  write_pick(f, "default (ORT_CPU)", report, rec->default_option, id);
  if (rec->headroom > 0)
    fprintf(f, "<dt>headroom</dt><dd id=\"headroom-%d\">%.2fx</dd>", model,
            rec->headroom);
  int cheapest = mb__report_cheapest(report);
  if (cheapest >= 0) {
    fprintf(f, "<dt>cheapest accurate</dt><dd id=\"cheapest-%d\"><code>",
            model);
    put_html(f, mb__report_name(&report->results[cheapest]));
    fprintf(f, "</code> (%.4g per million inferences)</dd>",
            report->results[cheapest].cost_per_million);
  }
  fputs("</dl>\n</div>\n", f);
}

static void write_warnings(FILE *f, const mb_bench_report *report,
                           const int *order) {
  bool any = false;
  for (int k = 0; k < report->n_results; k++) {
    const mb_bench_result *r = &report->results[order[k]];
    for (int w = 0; w < r->n_warnings && r->warnings; w++) {
      if (!r->warnings[w])
        continue;
      if (!any)
        fputs("<h3>Warnings</h3>\n<ul class=\"warnings\">\n", f);
      any = true;
      fputs("<li><code>", f);
      put_html(f, mb__report_name(r));
      fputs("</code>: ", f);
      put_html(f, r->warnings[w]);
      fputs("</li>\n", f);
    }
  }
  if (any)
    fputs("</ul>\n", f);
}

static void fact(FILE *f, const char *label, const char *value) {
  fprintf(f, "<dt>%s</dt><dd>", label);
  put_html(f, value && value[0] ? value : "unknown");
  fputs("</dd>", f);
}

static void factf(FILE *f, const char *label, const char *fmt, ...)
    MB_PRINTF(3, 4);
static void factf(FILE *f, const char *label, const char *fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fact(f, label, buf);
}

static void write_machine(FILE *f, const mb_bench_report *report) {
  const mb_machine_info *m = &report->machine;
  const mb_bench_config *c = &report->config;
  fputs("<h3>Machine and settings</h3>\n<dl class=\"facts\">", f);
  fact(f, "CPU", m->cpu_model);
  if (m->cores > 0)
    factf(f, "cores", "%d", m->cores);
  else
    fact(f, "cores", NULL);
  fact(f, "ISA flags", m->isa_flags);
  fact(f, "OS", m->os);
  fact(f, "governor", m->governor);
  if (isfinite(m->load_average) && m->load_average >= 0)
    factf(f, "load average", "%.2f", m->load_average);
  int batch = c->batch_size;
  for (int i = 0; i < report->n_results && report->results; i++)
    if (report->results[i].batch_size > 0) {
      batch = report->results[i].batch_size;
      break;
    }
  factf(f, "threads", "%d", c->threads);
  factf(f, "batch", "%d", batch);
  factf(f, "device", "%s", mb_device_name(c->device));
  factf(f, "warm-up", "%d iterations / %g s", c->warmup_iterations,
        c->warmup_seconds);
  factf(f, "timed phase", "at least %d iterations / %g s, at most %g s",
        c->min_iterations, c->min_seconds, c->max_seconds);
  if (c->ci_target > 0)
    factf(f, "ci target",
          "until the median's 95%% interval is within \u00b1%g%% (at most "
          "%g s)",
          100 * c->ci_target, c->max_seconds);
  if (c->fresh_inputs || c->cold_cache)
    factf(f, "realistic phases", "%s%s%s",
          c->fresh_inputs ? "fresh inputs" : "",
          c->fresh_inputs && c->cold_cache ? ", " : "",
          c->cold_cache ? "cold cache" : "");
  factf(f, "timeout", "%g s per conversion", c->timeout_seconds);
  if (report->model_quantized)
    factf(f, "accuracy tolerance",
          "cosine >= %g for every conversion: the model is pre-quantised "
          "(%s)",
          MB_REPORT_MIN_COSINE, report->model_quantization);
  else
    factf(f, "accuracy tolerance",
          "rtol %g, atol %g (fp32); cosine >= %g "
          "(fp16, bf16, int8)",
          c->rtol, c->atol, MB_REPORT_MIN_COSINE);
  factf(f, "seed", "%llu", (unsigned long long)c->seed);
  factf(f, "isolation", "%s",
        c->isolate ? "one process per conversion" : "in-process");
  if (report->baseline_result >= 0 &&
      report->baseline_result < report->n_results && report->results)
    fact(f, "baseline",
         mb__report_name(&report->results[report->baseline_result]));
  if (c->inputs_dir)
    fact(f, "inputs", c->inputs_dir);
  if (c->labels_path)
    fact(f, "labels", c->labels_path);
  if (report->reference[0])
    fact(f, "accuracy against",
         strcmp(report->reference, "interpreter") == 0
             ? "the reference interpreter"
             : report->reference);
  fputs("</dl>\n", f);
}

/* What besides the machine changes speed (report->environment): the
 * facts `compare` diffs, so a reader of two pages can do the same. */
static void write_environment(FILE *f, const mb_bench_report *report) {
  const mb_environment *e = &report->environment;
  if (!e->recorded)
    return;
  fputs("<h3>Environment</h3>\n<dl class=\"facts\">", f);
  fact(f, "kernel", e->kernel);
  fact(f, "SMT", e->smt);
  fact(f, "governor (cpu0)", e->governor);
  if (e->cpus_allowed > 0)
    factf(f, "CPUs allowed", "%d", e->cpus_allowed);
  fact(f, "CPU flags sha256", e->cpu_flags_sha256);
  fact(f, "OpenBLAS", e->blas);
  fputs("<dt>variables</dt><dd>", f);
  if (e->n_variables <= 0 || !e->variables)
    fputs("none of the ones that change speed is set", f);
  for (int i = 0; i < e->n_variables && e->variables; i++) {
    fputs(i ? ", <code>" : "<code>", f);
    put_html(f, e->variables[i] ? e->variables[i] : "");
    fputs("</code>", f);
  }
  fputs("</dd></dl>\n", f);
}

static void write_model_head(FILE *f, const mb_bench_report *report,
                             int model) {
  fprintf(f, "<section class=\"model\" id=\"model-%d\">\n<h2>", model);
  put_model_title(f, report);
  if (report->sweep_point[0]) {
    fputs(" <span class=\"meta\">at ", f);
    put_html(f, report->sweep_point);
    fputs("</span>", f);
  }
  fputs("</h2>\n<p class=\"meta\">", f);
  if (report->model_sha256[0]) {
    fputs("sha256 <code>", f);
    put_html(f, report->model_sha256);
    fputs("</code>", f);
  }
  for (int i = 0; i < report->n_inputs && report->inputs; i++) {
    const mb_input_shape *s = &report->inputs[i];
    char shape[256];
    mb__shape_str(s->rank, s->dims, shape, sizeof shape);
    fputs(i == 0 ? (report->model_sha256[0] ? "; inputs: " : "inputs: ") : ", ",
          f);
    fputs("<code>", f);
    put_html(f, s->name ? s->name : "?");
    fputs("</code> ", f);
    put_html(f, report->input_dtypes ? mb_dtype_name(report->input_dtypes[i])
                                     : "");
    put_html(f, shape);
  }
  /* A script's labels are in its section's head. */
  for (int i = 0;
       !report->model_script[0] && report->labels && i < report->n_labels;
       i++) {
    fputs(i == 0 ? "; labels: <code>" : ", <code>", f);
    put_html(f, report->labels[i]);
    fputs("</code>", f);
  }
  fputs("</p>\n", f);
}

/* A script's section head: its path, its labels and how many models it
 * ran (the models follow, then the caller closes the section). */
static void write_script_head(FILE *f, const mb_bench_report *const *reports,
                              int n, int first) {
  const mb_bench_report *r = reports[first];
  int models = 0;
  for (int k = first; k < n; k++)
    models += reports[k] && script_group(reports, k) == first;
  fprintf(f, "<section class=\"script\" id=\"script-%d\">\n<h2>Script <code>",
          first);
  put_html(f, r->model_script);
  fprintf(f, "</code></h2>\n<p class=\"meta\">%d model%s", models,
          models == 1 ? "" : "s");
  for (int i = 0; i < r->n_labels && r->labels; i++) {
    fputs(i == 0 ? "; labels: <code>" : "</code>, <code>", f);
    put_html(f, r->labels[i]);
    if (i == r->n_labels - 1)
      fputs("</code>", f);
  }
  fputs("</p>\n", f);
}

static mb_status write_model(FILE *f, const mb_bench_report *report, int model,
                             mb_error *err) {
  write_model_head(f, report, model);
  int n = report->results ? report->n_results : 0;
  int *order = malloc(sizeof *order * (size_t)MB_MAX(n, 1));
  if (!order)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "HTML report: out of memory");
  mb_bench_report view = *report;
  view.n_results = n;
  mb__report_sort_rows(&view, order);
  mb_recommendations rec;
  mb_bench_recommend(&view, NULL, &rec);
  write_recommendation(f, &view, model, &rec);
  if (n == 0) {
    fputs("<p class=\"no-data\">No conversions were run.</p>\n", f);
  } else {
    write_chart(f, &view, model, order, CHART_LATENCY, &rec);
    write_chart(f, &view, model, order, CHART_THROUGHPUT, &rec);
    mb__html_write_roofline(f, &view, model);
    write_table(f, &view, model, order, &rec);
    write_realistic(f, &view, order);
    write_cost_energy(f, &view, model, order);
    mb__html_write_gpu(f, &view, model, order);
    write_cold(f, &view, model, order);
    write_warnings(f, &view, order);
  }
  write_machine(f, &view);
  write_environment(f, &view);
  fputs("</section>\n", f);
  free(order);
  return MB_STATUS_OK;
}

mb_status mb_bench_reports_write_html(const mb_bench_report *const *reports,
                                      int n, const char *path, mb_error *err) {
  if (n < 0 || (n > 0 && !reports))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "HTML report: no reports given");
  mb_report_file rf;
  mb_status status = mb__report_file_open(&rf, path, "HTML report", err);
  if (status)
    return status;
  write_page_start(rf.f, reports, n);
  /* Models without a script in order; those a script ran grouped under it,
   * where the script first appears. */
  for (int m = 0; m < n; m++) {
    if (!reports[m] || script_group(reports, m) != m)
      continue;
    if (reports[m]->model_script[0])
      write_script_head(rf.f, reports, n, m);
    for (int k = m; k < n; k++) {
      if (!reports[k] || (k > m && (!reports[m]->model_script[0] ||
                                    script_group(reports, k) != m)))
        continue;
      /* A sweep's points (or load runs) of one model: their charts
       * first. */
      mb__html_write_sweep(rf.f, reports, n, k);
      if ((status = write_model(rf.f, reports[k], k, err))) {
        mb__report_file_abort(&rf);
        return status;
      }
      if (!reports[m]->model_script[0])
        break;
    }
    if (reports[m]->model_script[0])
      fputs("</section>\n", rf.f);
  }
  write_page_end(rf.f);
  return mb__report_file_commit(&rf, err);
}
