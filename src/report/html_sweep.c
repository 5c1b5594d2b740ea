/* The HTML report's sweep section: when several reports of one model come
 * from a sweep (--sweep, one report per point) or hold load runs, they get
 * a section before their per-point sections with
 *   - line charts, one line per conversion (and per value of the other
 *     swept settings): median latency and throughput against batch size,
 *     threads and concurrency, median latency against each swept symbolic
 *     dimension (sequence length), and for server runs the latency at the
 *     SLO's percentile (p99 without one) against QPS, from the find-peak
 *     runs or the swept QPS, with the SLO drawn across;
 *   - one table row per point and conversion;
 *   - the SLO recommendation per workload (mb_bench_recommend_slo);
 *   - when the sweep ran on both the CPU and a GPU, per workload, the
 *     CPU-or-GPU chart and answer (html_crossover.c, crossover.c).
 * Stable hooks: <section class="sweep" id="sweep-G"> (G: the index of its
 * first report), <svg class="chart line-chart" id="sweep-AXIS-MEASURE-G"
 * data-x="AXIS" data-y="MEASURE">, <g class="series" data-conversion
 * data-series>, <circle class="point" data-x data-y>, <tr class=
 * "sweep-row" data-point data-conversion>, <div class="recommendation
 * slo" id="slo-recommendation-G-K">. */
#include "report/report_util.h"

#include <math.h>
#include <stdlib.h>

#define SW_WIDTH 760
#define SW_HEIGHT 300
#define SW_LEFT MB_HTML_PLOT_LEFT
#define SW_RIGHT MB_HTML_PLOT_RIGHT
#define SW_TOP MB_HTML_PLOT_TOP
#define SW_BOTTOM MB_HTML_PLOT_BOTTOM
#define SW_LEGEND_X 556
#define SW_COLORS 8

const char mb__html_sweep_style[] =
    "section.sweep{border-top:1px solid var(--line);padding-bottom:12px}\n"
    "svg.line-chart .line{fill:none;stroke-width:2}\n"
    "svg.line-chart .point{stroke:var(--bg);stroke-width:1}\n"
    "svg.line-chart .slo{stroke:var(--fail);stroke-width:1.5;"
    "stroke-dasharray:6 4}\n"
    ".s0{stroke:#4a78c2;fill:#4a78c2}.s1{stroke:#2f9a5d;fill:#2f9a5d}"
    ".s2{stroke:#c98a1b;fill:#c98a1b}.s3{stroke:#c0392b;fill:#c0392b}"
    ".s4{stroke:#8e5bb5;fill:#8e5bb5}.s5{stroke:#17a2b8;fill:#17a2b8}"
    ".s6{stroke:#7f6a4f;fill:#7f6a4f}.s7{stroke:#d05fa2;fill:#d05fa2}\n"
    "svg.line-chart text.legend{font-size:11px}\n"
    /* html_crossover.c's chart: CPU blue, GPU red, options faint. */
    "svg.crossover .cpu,svg.crossover .best-cpu{stroke:#4a78c2;fill:#4a78c2}"
    "svg.crossover .gpu,svg.crossover .best-gpu{stroke:#c0392b;fill:#c0392b}"
    "svg.crossover .line,svg.crossover .option{fill:none}"
    "svg.crossover .line{stroke-width:2.5}"
    "svg.crossover .option{stroke-width:1;opacity:.3}"
    "svg.crossover .point{stroke:var(--bg);stroke-width:1}"
    "svg.crossover .crossover-at{stroke:var(--fg);stroke-width:1.5;"
    "stroke-dasharray:4 3}"
    "svg.crossover text.legend,svg.crossover text.crossover-label"
    "{font-size:11px;fill:var(--fg);stroke:none}\n";

static void put_html(FILE *f, const char *s) {
  mb__html_put_n(f, s, -1, false);
}

/* ---- the settings a point varies ---- */

typedef enum axis_kind {
  AX_BATCH,
  AX_THREADS,
  AX_CONCURRENCY,
  AX_QPS,
  AX_DIM,
} axis_kind;

typedef struct axis {
  axis_kind kind;
  const char *name; /* "batch", ... or the dimension's name */
} axis;

static int batch_of(const mb_bench_report *r) {
  for (int i = 0; i < r->n_results && r->results; i++)
    if (r->results[i].batch_size > 0)
      return r->results[i].batch_size;
  return r->config.batch_size;
}

/* The value of axis a at report r; NAN when r has none. */
static double value_of(const mb_bench_report *r, const axis *a) {
  const mb_bench_config *c = &r->config;
  switch (a->kind) {
  case AX_BATCH:
    return batch_of(r);
  case AX_THREADS:
    return c->threads;
  case AX_CONCURRENCY:
    return c->load.scenario == MB_LOAD_SERVER ||
                   c->load.scenario == MB_LOAD_OFFLINE
               ? c->load.concurrency
               : NAN;
  case AX_QPS:
    return c->load.scenario == MB_LOAD_SERVER && !c->load.find_peak
               ? c->load.qps
               : NAN;
  case AX_DIM:
    for (int i = 0; i < c->shapes.n_dims && c->shapes.dims; i++)
      if (c->shapes.dims[i].name &&
          strcmp(c->shapes.dims[i].name, a->name) == 0)
        return (double)c->shapes.dims[i].value;
    return NAN;
  }
  return NAN;
}

static bool same_value(double a, double b) {
  return a == b || (isnan(a) && isnan(b));
}

/* The axes whose value differs between the reports of the group. */
static int varying_axes(const mb_bench_report *const *g, int n, axis *out,
                        int max) {
  static const axis fixed[] = {{AX_BATCH, "batch"},
                               {AX_THREADS, "threads"},
                               {AX_CONCURRENCY, "concurrency"},
                               {AX_QPS, "qps"}};
  int count = 0;
  axis candidates[32];
  int n_candidates = 0;
  for (size_t i = 0; i < MB_ARRAY_COUNT(fixed); i++)
    candidates[n_candidates++] = fixed[i];
  for (int k = 0; k < n; k++)
    for (int i = 0; i < g[k]->config.shapes.n_dims && g[k]->config.shapes.dims;
         i++) {
      const char *name = g[k]->config.shapes.dims[i].name;
      bool seen = false;
      for (int c = 0; c < n_candidates; c++)
        seen |= candidates[c].kind == AX_DIM &&
                strcmp(candidates[c].name, name ? name : "") == 0;
      if (!seen && name && n_candidates < (int)MB_ARRAY_COUNT(candidates))
        candidates[n_candidates++] = (axis){AX_DIM, name};
    }
  for (int c = 0; c < n_candidates && count < max; c++) {
    double first = value_of(g[0], &candidates[c]);
    for (int k = 1; k < n; k++)
      if (!same_value(value_of(g[k], &candidates[c]), first)) {
        out[count++] = candidates[c];
        break;
      }
  }
  return count;
}

/* ---- series ---- */

typedef struct point {
  double x, y;
} point;

typedef struct series {
  char key[200];          /* conversion and the other varying settings */
  const char *conversion; /* borrowed from a result */
  point *points;
  int n, cap;
} series;

typedef struct chart {
  series *series;
  int n, cap;
  bool oom;
} chart;

static void chart_free(chart *c) {
  for (int i = 0; i < c->n; i++)
    free(c->series[i].points);
  free(c->series);
  memset(c, 0, sizeof *c);
}

/* "ORT_CPU threads=2": the conversion and the varying axes but `x`. */
static void series_key(char *buf, size_t size, const mb_bench_report *rep,
                       const mb_bench_result *r, const axis *axes, int n_axes,
                       axis_kind x, const char *x_name) {
  size_t used = (size_t)snprintf(buf, size, "%s", mb__report_name(r));
  for (int a = 0; a < n_axes && used < size; a++) {
    if (axes[a].kind == x && (x != AX_DIM || strcmp(axes[a].name, x_name) == 0))
      continue;
    double v = value_of(rep, &axes[a]);
    if (isnan(v))
      continue;
    int w = snprintf(buf + used, size - used, " %s=%g", axes[a].name, v);
    if (w < 0)
      break;
    used += (size_t)w;
  }
}

static void chart_add(chart *c, const char *key, const char *conversion,
                      double x, double y) {
  if (c->oom || !isfinite(x) || !isfinite(y))
    return;
  series *s = NULL;
  for (int i = 0; i < c->n && !s; i++)
    if (strcmp(c->series[i].key, key) == 0)
      s = &c->series[i];
  if (!s) {
    if (c->n == c->cap) {
      int cap = c->cap ? c->cap * 2 : 8;
      series *grown = realloc(c->series, sizeof *grown * (size_t)cap);
      if (!grown) {
        c->oom = true;
        return;
      }
      c->series = grown;
      c->cap = cap;
    }
    s = &c->series[c->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->key, sizeof s->key, "%s", key);
    s->conversion = conversion;
  }
  if (s->n == s->cap) {
    int cap = s->cap ? s->cap * 2 : 8;
    point *grown = realloc(s->points, sizeof *grown * (size_t)cap);
    if (!grown) {
      c->oom = true;
      return;
    }
    s->points = grown;
    s->cap = cap;
  }
  s->points[s->n++] = (point){x, y};
}

static int compare_x(const void *a, const void *b) {
  double x = ((const point *)a)->x, y = ((const point *)b)->x;
  return (x > y) - (x < y);
}

/* ---- drawing ---- */

typedef mb_html_frame frame;

double mb__html_frame_x(const mb_html_frame *fr, double x) {
  double t = fr->log_x
                 ? (log2(x) - log2(fr->x0)) / (log2(fr->x1) - log2(fr->x0))
                 : (x - fr->x0) / (fr->x1 - fr->x0);
  if (!isfinite(t))
    t = 0.5;
  return SW_LEFT + t * (SW_RIGHT - SW_LEFT);
}

double mb__html_frame_y(const mb_html_frame *fr, double y) {
  return SW_BOTTOM - y / fr->y1 * (SW_BOTTOM - SW_TOP);
}

typedef struct chart_text {
  const char *id;     /* "batch-latency" */
  const char *x_axis; /* data-x */
  const char *y_axis; /* data-y */
  const char *title;
  const char *x_title, *y_title;
  double slo_ms; /* > 0: a horizontal SLO line */
} chart_text;

/* Distinct x values, ascending (the ticks of a log axis). */
static int distinct_x(const chart *c, double *out, int max) {
  int n = 0;
  for (int i = 0; i < c->n; i++)
    for (int k = 0; k < c->series[i].n; k++) {
      double x = c->series[i].points[k].x;
      bool seen = false;
      for (int j = 0; j < n && !seen; j++)
        seen = out[j] == x;
      if (!seen && n < max)
        out[n++] = x;
    }
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
      double t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
  return n;
}

static void draw_chart(FILE *f, chart *c, const chart_text *t, int group) {
  frame fr = {INFINITY, -INFINITY, 0, false};
  int points = 0;
  for (int i = 0; i < c->n; i++) {
    series *s = &c->series[i];
    qsort(s->points, (size_t)s->n, sizeof *s->points, compare_x);
    for (int k = 0; k < s->n; k++) {
      fr.x0 = MB_MIN(fr.x0, s->points[k].x);
      fr.x1 = MB_MAX(fr.x1, s->points[k].x);
      fr.y1 = MB_MAX(fr.y1, s->points[k].y);
      points++;
    }
  }
  if (points == 0 || fr.x1 <= fr.x0)
    return;
  fr.log_x = fr.x0 > 0 && fr.x1 / fr.x0 >= 8;
  double y_step, x_step = 0;
  fr.y1 = mb__html_nice_axis(MB_MAX(fr.y1, t->slo_ms * 1.1), &y_step);
  if (!fr.log_x) {
    fr.x0 = 0;
    fr.x1 = mb__html_nice_axis(fr.x1, &x_step);
  }

  /* A dimension's name is the model's text: escaped everywhere, and the
   * id made of its safe form (mb__html_id_part, in settings_chart). */
  fputs("<h3>", f);
  put_html(f, t->title);
  fputs("</h3>\n<figure>\n<svg id=\"sweep-", f);
  put_html(f, t->id);
  fprintf(f, "-%d\" class=\"chart line-chart\" data-x=\"", group);
  put_html(f, t->x_axis);
  fputs("\" data-y=\"", f);
  put_html(f, t->y_axis);
  fprintf(f,
          "\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
          "aria-label=\"",
          SW_WIDTH, SW_HEIGHT, SW_WIDTH, SW_HEIGHT);
  put_html(f, t->title);
  fputs("\">\n", f);
  /* Grid: y ticks, then x ticks (the swept values on a log axis). */
  for (int k = 0; k <= 20 && y_step > 0 && k * y_step <= fr.y1 + 1e-9; k++) {
    double y = mb__html_frame_y(&fr, k * y_step);
    fprintf(f,
            "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" "
            "y2=\"%.1f\"/><text class=\"tick\" x=\"%d\" y=\"%.1f\" "
            "text-anchor=\"end\" dominant-baseline=\"middle\">%g</text>\n",
            SW_LEFT, y, SW_RIGHT, y, SW_LEFT - 6, y, k * y_step);
  }
  double xs[64];
  int n_xs = 0;
  if (fr.log_x) {
    n_xs = distinct_x(c, xs, 64);
  } else {
    for (double x = 0; x <= fr.x1 + 1e-9 && n_xs < 21; x += x_step)
      xs[n_xs++] = x;
  }
  for (int k = 0; k < n_xs; k++) {
    double x = mb__html_frame_x(&fr, xs[k]);
    fprintf(f,
            "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" "
            "y2=\"%d\"/><text class=\"tick\" x=\"%.1f\" y=\"%d\" "
            "text-anchor=\"middle\">%g</text>\n",
            x, SW_TOP, x, SW_BOTTOM, x, SW_BOTTOM + 14, xs[k]);
  }
  fprintf(f,
          "<text class=\"axis-title\" x=\"%d\" y=\"%d\" "
          "text-anchor=\"middle\">",
          (SW_LEFT + SW_RIGHT) / 2, SW_BOTTOM + 32);
  put_html(f, t->x_title);
  fprintf(f, "%s</text>\n", fr.log_x ? " (log scale)" : "");
  fprintf(f,
          "<text class=\"axis-title\" x=\"14\" y=\"%d\" text-anchor=\"middle\" "
          "transform=\"rotate(-90 14 %d)\">",
          (SW_TOP + SW_BOTTOM) / 2, (SW_TOP + SW_BOTTOM) / 2);
  put_html(f, t->y_title);
  fputs("</text>\n", f);
  if (t->slo_ms > 0) {
    double y = mb__html_frame_y(&fr, t->slo_ms);
    fprintf(f,
            "<line class=\"slo\" data-slo-ms=\"%g\" x1=\"%d\" y1=\"%.1f\" "
            "x2=\"%d\" y2=\"%.1f\"><title>SLO %g ms</title></line>\n",
            t->slo_ms, SW_LEFT, y, SW_RIGHT, y, t->slo_ms);
  }
  for (int i = 0; i < c->n; i++) {
    const series *s = &c->series[i];
    fprintf(f, "<g class=\"series s%d\" data-conversion=\"", i % SW_COLORS);
    put_html(f, s->conversion);
    fputs("\" data-series=\"", f);
    put_html(f, s->key);
    fputs("\">\n<path class=\"line\" d=\"", f);
    for (int k = 0; k < s->n; k++)
      fprintf(f, "%s%.1f %.1f", k ? " L" : "M",
              mb__html_frame_x(&fr, s->points[k].x),
              mb__html_frame_y(&fr, s->points[k].y));
    fputs("\"/>\n", f);
    for (int k = 0; k < s->n; k++) {
      fprintf(f, "<circle class=\"point\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\"",
              mb__html_frame_x(&fr, s->points[k].x),
              mb__html_frame_y(&fr, s->points[k].y));
      mb__html_put_number(f, "data-x", s->points[k].x);
      mb__html_put_number(f, "data-y", s->points[k].y);
      fputs("><title>", f);
      put_html(f, s->key);
      fputs(": ", f);
      put_html(f, t->x_axis);
      fprintf(f, " %g, %.4g</title></circle>\n", s->points[k].x,
              s->points[k].y);
    }
    double ly = SW_TOP + 8 + 16 * i;
    fprintf(f,
            "<line class=\"line\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
            "<text class=\"legend\" x=\"%d\" y=\"%.1f\" "
            "dominant-baseline=\"middle\">",
            SW_LEGEND_X, ly, SW_LEGEND_X + 18, ly, SW_LEGEND_X + 24, ly);
    if (mb__html_put_n(f, s->key, 30, false))
      fputs("\xe2\x80\xa6", f);
    fputs("</text>\n</g>\n", f);
  }
  fputs("</svg>\n</figure>\n", f);
}

/* ---- the charts of a group ---- */

static double median_of(const mb_bench_result *r) {
  return r->latency_ms.median;
}
static double throughput_of(const mb_bench_result *r) {
  return r->throughput_sps > 0 ? r->throughput_sps : NAN;
}

/* One chart of measure(result) against axis x over the group. */
static void settings_chart(FILE *f, const mb_bench_report *const *g, int n,
                           const axis *axes, int n_axes, const axis *x,
                           bool throughput, int group) {
  chart c = {0};
  char key[200], id[160], id_part[120], title[160], x_title[96];
  for (int k = 0; k < n; k++)
    for (int i = 0; i < g[k]->n_results && g[k]->results; i++) {
      const mb_bench_result *r = &g[k]->results[i];
      if (!mb__report_has_median(r))
        continue;
      series_key(key, sizeof key, g[k], r, axes, n_axes, x->kind, x->name);
      chart_add(&c, key, mb__report_name(r), value_of(g[k], x),
                throughput ? throughput_of(r) : median_of(r));
    }
  bool dim = x->kind == AX_DIM;
  snprintf(id, sizeof id, "%s%s-%s", dim ? "dim-" : "",
           mb__html_id_part(x->name, id_part, sizeof id_part),
           throughput ? "throughput" : "latency");
  snprintf(title, sizeof title, "%s against %s%s",
           throughput ? "Throughput" : "Median latency",
           x->kind == AX_BATCH ? "batch size" : x->name,
           dim ? " (a symbolic dimension)" : "");
  snprintf(x_title, sizeof x_title, "%s",
           x->kind == AX_BATCH ? "batch size" : x->name);
  chart_text t = {
      id,    x->name, throughput ? "throughput_sps" : "median_ms",
      title, x_title, throughput ? "samples per second" : "milliseconds",
      0};
  if (!c.oom)
    draw_chart(f, &c, &t, group);
  chart_free(&c);
}

/* The latency at the SLO's percentile (p99 without an SLO) against QPS,
 * for server runs: find-peak's runs, or each run at its QPS. */
static void qps_chart(FILE *f, const mb_bench_report *const *g, int n,
                      const axis *axes, int n_axes, int group) {
  chart c = {0};
  char key[200], y_title[96];
  const mb_load_config *l = &g[0]->config.load;
  double p = l->slo_percentile > 0 ? l->slo_percentile : 99;
  for (int k = 0; k < n; k++)
    for (int i = 0; i < g[k]->n_results && g[k]->results; i++) {
      const mb_bench_result *r = &g[k]->results[i];
      if (r->load.scenario != MB_LOAD_SERVER || !mb__report_has_median(r))
        continue;
      series_key(key, sizeof key, g[k], r, axes, n_axes, AX_QPS, "qps");
      if (r->load.n_trials > 0 && r->load.trials) {
        for (int t = 0; t < r->load.n_trials; t++)
          chart_add(&c, key, mb__report_name(r), r->load.trials[t].target_qps,
                    r->load.trials[t].latency_ms);
      } else {
        double y;
        if (mb__report_latency_at(r, p, &y))
          chart_add(&c, key, mb__report_name(r), r->load.target_qps, y);
      }
    }
  snprintf(y_title, sizeof y_title, "p%g latency, ms (from arrival)", p);
  chart_text t = {"qps-latency",
                  "qps",
                  "latency_ms",
                  "Latency against QPS (server)",
                  "queries per second (target)",
                  y_title,
                  l->slo_percentile > 0 ? l->slo_ms : 0};
  if (!c.oom)
    draw_chart(f, &c, &t, group);
  chart_free(&c);
}

/* ---- the table ---- */

static void td(FILE *f, const char *text) {
  fputs("<td>", f);
  put_html(f, text);
  fputs("</td>", f);
}

static void write_table(FILE *f, const mb_bench_report *const *g, int n,
                        int group) {
  static const char *const columns[] = {"point",
                                        "conversion",
                                        "status",
                                        "median ms",
                                        "p99 ms",
                                        "samples/s",
                                        "QPS",
                                        "validity",
                                        "within SLO (requests/s)",
                                        "ideal queue p99 ms; harness p99 us"};
  const mb_load_config *l = &g[0]->config.load;
  char buf[96];
  fprintf(f,
          "<h3>Points</h3>\n<div class=\"wrap\"><table id=\"sweep-table-%d\" "
          "class=\"results\">\n<thead><tr>",
          group);
  for (size_t i = 0; i < MB_ARRAY_COUNT(columns); i++)
    fprintf(f, "<th scope=\"col\">%s</th>", columns[i]);
  fputs("</tr></thead>\n<tbody>\n", f);
  for (int k = 0; k < n; k++)
    for (int i = 0; i < g[k]->n_results && g[k]->results; i++) {
      const mb_bench_result *r = &g[k]->results[i];
      const char *label = g[k]->sweep_point[0] ? g[k]->sweep_point : "-";
      fputs("<tr class=\"sweep-row\" data-point=\"", f);
      put_html(f, label);
      fputs("\" data-conversion=\"", f);
      put_html(f, mb__report_name(r));
      fputs("\">", f);
      td(f, label);
      fputs("<td><code>", f);
      put_html(f, mb__report_name(r));
      fputs("</code></td>", f);
      td(f, mb_bench_status_name(r->status));
      bool ok = mb__report_has_median(r);
      mb__report_format_ms(buf, sizeof buf, ok ? r->latency_ms.median : NAN);
      td(f, buf);
      mb__report_format_ms(buf, sizeof buf, ok ? r->latency_ms.p99 : NAN);
      td(f, buf);
      mb__report_format_sps(buf, sizeof buf, ok ? r->throughput_sps : NAN);
      td(f, buf);
      const mb_load_stats *ls = &r->load;
      if (ok && ls->scenario != MB_LOAD_NONE) {
        snprintf(buf, sizeof buf, "%.4g", ls->achieved_qps);
        if (ls->peak_qps > 0)
          snprintf(buf, sizeof buf, "peak %.4g", ls->peak_qps);
        td(f, buf);
        td(f, ls->valid ? "valid" : ls->invalid_reason);
      } else {
        td(f, "-");
        td(f, ok ? "-" : r->error);
      }
      double served = mb__report_served_qps(r, l->slo_percentile, l->slo_ms);
      if (l->slo_percentile > 0)
        snprintf(buf, sizeof buf, "%.4g", served);
      else
        snprintf(buf, sizeof buf, "no SLO");
      td(f, buf);
      /* What the harness added (server): the ideal queue's p99 beside the
       * run's, the generator's lateness and the hand-off. */
      if (ok && ls->scenario == MB_LOAD_SERVER)
        snprintf(buf, sizeof buf, "%.4g; lateness %.1f, hand-off %.1f%s",
                 ls->ideal_p99_ms, ls->generator_lateness_us.p99,
                 ls->handoff_us.p99,
                 ls->harness_excess ? " (p99 exceeds: see warnings)" : "");
      else
        snprintf(buf, sizeof buf, "-");
      td(f, buf);
      fputs("</tr>\n", f);
    }
  fputs("</tbody>\n</table></div>\n", f);
}

/* ---- the section ---- */

static bool same_model(const mb_bench_report *a, const mb_bench_report *b) {
  return strcmp(a->model_sha256, b->model_sha256) == 0 &&
         strcmp(a->model_path, b->model_path) == 0;
}

static bool has_server(const mb_bench_report *r) {
  for (int i = 0; i < r->n_results && r->results; i++)
    if (r->results[i].load.scenario == MB_LOAD_SERVER)
      return true;
  return false;
}

/* CPU or GPU (html_crossover.c), per workload, when the sweep has both. */
static void write_crossovers(FILE *f, const mb_bench_report *const *g,
                             int count, int group) {
  const mb_bench_report **sel = malloc(sizeof *sel * (size_t)count);
  for (int k = 0, workload = 0; sel && k < count; k++) {
    int n_sel = mb__report_workload_group(g, count, k, sel);
    mb_crossover c;
    if (n_sel == 0 || !mb__crossover_find(sel, n_sel, &c))
      continue;
    if (c.kind != MB_CROSSOVER_NONE)
      mb__html_write_crossover(f, sel, n_sel, &c, group, workload++);
    mb__crossover_free(&c);
  }
  free(sel);
}

void mb__html_write_sweep(FILE *f, const mb_bench_report *const *reports, int n,
                          int m) {
  if (m > 0 && reports[m - 1] && same_model(reports[m - 1], reports[m]))
    return; /* inside a group: its first report wrote the section */
  int end = m + 1;
  while (end < n && reports[end] && same_model(reports[m], reports[end]))
    end++;
  const mb_bench_report *const *g = reports + m;
  int count = end - m;
  bool sweep = false, server = false;
  for (int k = 0; k < count; k++) {
    sweep |= g[k]->sweep_point[0] != '\0';
    server |= has_server(g[k]);
  }
  if (!sweep && !server)
    return;
  axis axes[16];
  int n_axes = varying_axes(g, count, axes, 16);

  fprintf(f, "<section class=\"sweep\" id=\"sweep-%d\">\n<h2>", m);
  put_html(f, g[0]->model_path[0] ? g[0]->model_path : "?");
  fprintf(f, ": %s</h2>\n<p class=\"meta\">%d point%s",
          sweep ? "sweep" : "load", count, count == 1 ? "" : "s");
  for (int a = 0; a < n_axes; a++) {
    fputs(a ? ", " : " over ", f);
    put_html(f, axes[a].name);
  }
  if (g[0]->config.load.scenario != MB_LOAD_NONE)
    fprintf(f, "; scenario %s",
            mb_load_scenario_name(g[0]->config.load.scenario));
  fputs(". Latencies are the runs' own: bench's timed iterations, or for "
        "load runs each query's latency from its scheduled arrival.</p>\n",
        f);

  /* What to deploy within the SLO, per workload (dimension values). */
  const mb_bench_report **sel = malloc(sizeof *sel * (size_t)count);
  for (int k = 0, group = 0;
       sel && k < count && g[0]->config.load.slo_percentile > 0; k++) {
    int n_sel = mb__report_workload_group(g, count, k, sel);
    if (n_sel == 0)
      continue;
    mb_slo_recommendation rec;
    mb_bench_recommend_slo(sel, n_sel, &rec);
    fprintf(f,
            "<div class=\"recommendation slo\" id=\"slo-recommendation-%d-%d\">"
            "<p>",
            m, group++);
    put_html(f, rec.summary);
    fputs("</p></div>\n", f);
  }
  free(sel);
  write_crossovers(f, g, count, m);

  for (int a = 0; a < n_axes; a++) {
    if (axes[a].kind == AX_QPS)
      continue; /* the QPS chart below */
    settings_chart(f, g, count, axes, n_axes, &axes[a], false, m);
    if (axes[a].kind != AX_DIM)
      settings_chart(f, g, count, axes, n_axes, &axes[a], true, m);
  }
  if (server)
    qps_chart(f, g, count, axes, n_axes, m);
  write_table(f, g, count, m);
  fputs("</section>\n", f);
}
