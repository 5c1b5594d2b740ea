/* The HTML report's CPU-or-GPU chart, inside a sweep's section when the
 * sweep has both devices (crossover.c's answer): time per sample, copies
 * included, against batch size; the best CPU option and the best GPU
 * option as lines, every option faintly behind them, a vertical marker at
 * the crossover batch, and the recommendation under the chart.
 * Stable hooks: <svg class="chart crossover" id="crossover-G"
 * data-crossover="at|never|always" data-batch>, <g class="series best-cpu"
 * data-device="cpu"> and best-gpu, <circle class="point" data-x data-y
 * data-conversion>, <line class="crossover-at" data-batch>, <div
 * class="recommendation crossover" id="crossover-recommendation-G">. The
 * second and later workloads of a section (a swept symbolic dimension)
 * add "-K" to both ids. */
#include "report/report_util.h"

#include <math.h>
#include <stdlib.h>

#define XO_WIDTH 760
#define XO_HEIGHT 300
/* The sweep section's plot area: this chart sits among its charts. */
#define XO_LEFT MB_HTML_PLOT_LEFT
#define XO_RIGHT MB_HTML_PLOT_RIGHT
#define XO_TOP MB_HTML_PLOT_TOP
#define XO_BOTTOM MB_HTML_PLOT_BOTTOM
#define XO_LEGEND_X 556

typedef mb_html_frame frame;

static void put_html(FILE *f, const char *s) {
  mb__html_put_n(f, s, -1, false);
}

static const mb_bench_result *result_of(const mb_bench_report *const *reports,
                                        const mb_crossover_option *o) {
  return &reports[o->report]->results[o->result];
}

/* Every accurate option faintly: one path per conversion and device
 * through its time per sample at each batch (the lowest when a batch has
 * several, as when threads are swept too). The first report's results
 * name the lines: every point of a sweep runs the same list. */
static void draw_options(FILE *f, const mb_bench_report *const *reports, int n,
                         const mb_crossover *c, const frame *fr) {
  const mb_bench_report *rep0 = reports[0];
  for (int i = 0; i < rep0->n_results && rep0->results; i++) {
    const mb_bench_result *named = &rep0->results[i];
    const char *name = mb__report_name(named);
    bool gpu = mb__report_on_gpu(named), repeated = false;
    for (int j = 0; j < i && !repeated; j++)
      repeated = strcmp(mb__report_name(&rep0->results[j]), name) == 0 &&
                 mb__report_on_gpu(&rep0->results[j]) == gpu;
    if (repeated)
      continue;
    int drawn = 0;
    for (int k = 0; k < c->n_points; k++) {
      double best = INFINITY;
      for (int m = 0; m < n; m++)
        for (int r = 0;
             reports[m] && reports[m]->results && r < reports[m]->n_results;
             r++) {
          const mb_bench_result *res = &reports[m]->results[r];
          int batch;
          double ms;
          if (strcmp(mb__report_name(res), name) == 0 &&
              mb__report_on_gpu(res) == gpu &&
              mb__crossover_option_of(reports[m], res, &batch, &ms) &&
              batch == c->points[k].batch)
            best = MB_MIN(best, ms);
        }
      if (!isfinite(best))
        continue;
      if (drawn++ == 0) {
        fprintf(f,
                "<path class=\"option %s\" data-device=\"%s\" "
                "data-conversion=\"",
                gpu ? "gpu" : "cpu", gpu ? "cuda" : "cpu");
        put_html(f, name);
        fputs("\" d=\"", f);
      }
      fprintf(f, "%s%.1f %.1f", drawn > 1 ? " L" : "M",
              mb__html_frame_x(fr, c->points[k].batch),
              mb__html_frame_y(fr, best));
    }
    if (drawn > 0)
      fputs("\"/>\n", f);
  }
}

/* The best option of one device at each batch: a line and its points. */
static void draw_best(FILE *f, const mb_bench_report *const *reports,
                      const mb_crossover *c, const frame *fr, bool gpu) {
  fprintf(f,
          "<g class=\"series best-%s\" data-device=\"%s\">\n<path "
          "class=\"line\" d=\"",
          gpu ? "gpu" : "cpu", gpu ? "cuda" : "cpu");
  int drawn = 0;
  for (int k = 0; k < c->n_points; k++) {
    const mb_crossover_option *o = gpu ? &c->points[k].gpu : &c->points[k].cpu;
    if (o->report >= 0)
      fprintf(f, "%s%.1f %.1f", drawn++ ? " L" : "M",
              mb__html_frame_x(fr, c->points[k].batch),
              mb__html_frame_y(fr, o->ms_per_sample));
  }
  fputs("\"/>\n", f);
  for (int k = 0; k < c->n_points; k++) {
    const mb_crossover_option *o = gpu ? &c->points[k].gpu : &c->points[k].cpu;
    if (o->report < 0)
      continue;
    const mb_bench_result *r = result_of(reports, o);
    fprintf(f, "<circle class=\"point\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\"",
            mb__html_frame_x(fr, c->points[k].batch),
            mb__html_frame_y(fr, o->ms_per_sample));
    mb__html_put_number(f, "data-x", c->points[k].batch);
    mb__html_put_number(f, "data-y", o->ms_per_sample);
    fputs(" data-conversion=\"", f);
    put_html(f, mb__report_name(r));
    fputs("\"><title>", f);
    put_html(f, mb__report_name(r));
    if (gpu && r->gpu.info.name[0]) {
      fputs(" on ", f);
      put_html(f, r->gpu.info.name);
    }
    fprintf(f, ": batch %d, %.4g ms/sample%s</title></circle>\n",
            c->points[k].batch, o->ms_per_sample, gpu ? " with copies" : "");
  }
  double ly = XO_TOP + 8 + 16 * (gpu ? 1 : 0);
  fprintf(f,
          "<line class=\"line\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
          "<text class=\"legend\" x=\"%d\" y=\"%.1f\" "
          "dominant-baseline=\"middle\">best %s</text>\n</g>\n",
          XO_LEGEND_X, ly, XO_LEGEND_X + 18, ly, XO_LEGEND_X + 24, ly,
          gpu ? "GPU (copies included)" : "CPU");
}

static const char *kind_name(mb_crossover_kind kind) {
  switch (kind) {
  case MB_CROSSOVER_AT:
    return "at";
  case MB_CROSSOVER_NEVER:
    return "never";
  case MB_CROSSOVER_ALWAYS:
    return "always";
  default:
    return "none";
  }
}

static void draw_chart(FILE *f, const mb_bench_report *const *reports, int n,
                       const mb_crossover *c, const char *id) {
  frame fr = {INFINITY, -INFINITY, 0, false};
  for (int m = 0; m < n; m++)
    for (int r = 0;
         reports[m] && reports[m]->results && r < reports[m]->n_results; r++) {
      int batch;
      double ms;
      if (mb__crossover_option_of(reports[m], &reports[m]->results[r], &batch,
                                  &ms))
        fr.y1 = MB_MAX(fr.y1, ms);
    }
  for (int k = 0; k < c->n_points; k++) {
    fr.x0 = MB_MIN(fr.x0, c->points[k].batch);
    fr.x1 = MB_MAX(fr.x1, c->points[k].batch);
  }
  if (c->n_points == 0)
    return;
  /* As the sweep's charts: a log axis when the batches span 8x or more,
   * ticked at the swept batches. */
  fr.log_x = fr.x0 > 0 && fr.x1 / fr.x0 >= 8;
  double y_step, x_step = 0;
  fr.y1 = mb__html_nice_axis(fr.y1, &y_step);
  if (!fr.log_x) {
    fr.x0 = 0;
    fr.x1 = mb__html_nice_axis(fr.x1, &x_step);
  }
  static const char title[] =
      "Per-sample time vs batch, best CPU vs best GPU (copies included)";
  fprintf(f,
          "<h3>%s</h3>\n<figure>\n<svg id=\"%s\" class=\"chart crossover\" "
          "data-crossover=\"%s\" data-batch=\"%d\" viewBox=\"0 0 %d %d\" "
          "width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"%s\">\n",
          title, id, kind_name(c->kind), c->batch, XO_WIDTH, XO_HEIGHT,
          XO_WIDTH, XO_HEIGHT, title);
  for (int k = 0; k <= 20 && y_step > 0 && k * y_step <= fr.y1 + 1e-9; k++) {
    double y = mb__html_frame_y(&fr, k * y_step);
    fprintf(f,
            "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" "
            "y2=\"%.1f\"/><text class=\"tick\" x=\"%d\" y=\"%.1f\" "
            "text-anchor=\"end\" dominant-baseline=\"middle\">%g</text>\n",
            XO_LEFT, y, XO_RIGHT, y, XO_LEFT - 6, y, k * y_step);
  }
  int n_ticks = fr.log_x ? c->n_points : 0;
  for (double x = 0; !fr.log_x && x <= fr.x1 + 1e-9 && n_ticks < 21;
       x += x_step)
    n_ticks++;
  for (int k = 0; k < n_ticks; k++) {
    double v = fr.log_x ? c->points[k].batch : k * x_step;
    double x = mb__html_frame_x(&fr, v);
    fprintf(f,
            "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" "
            "y2=\"%d\"/><text class=\"tick\" x=\"%.1f\" y=\"%d\" "
            "text-anchor=\"middle\">%g</text>\n",
            x, XO_TOP, x, XO_BOTTOM, x, XO_BOTTOM + 14, v);
  }
  fprintf(f,
          "<text class=\"axis-title\" x=\"%d\" y=\"%d\" "
          "text-anchor=\"middle\">batch size%s</text>\n"
          "<text class=\"axis-title\" x=\"14\" y=\"%d\" text-anchor=\"middle\" "
          "transform=\"rotate(-90 14 %d)\">milliseconds per sample</text>\n",
          (XO_LEFT + XO_RIGHT) / 2, XO_BOTTOM + 32,
          fr.log_x ? " (log scale)" : "", (XO_TOP + XO_BOTTOM) / 2,
          (XO_TOP + XO_BOTTOM) / 2);
  draw_options(f, reports, n, c, &fr);
  double ly = XO_TOP + 8 + 32;
  fprintf(f,
          "<line class=\"option cpu\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" "
          "y2=\"%.1f\"/><text class=\"legend\" x=\"%d\" y=\"%.1f\" "
          "dominant-baseline=\"middle\">each option (faint)</text>\n",
          XO_LEGEND_X, ly, XO_LEGEND_X + 18, ly, XO_LEGEND_X + 24, ly);
  draw_best(f, reports, c, &fr, false);
  draw_best(f, reports, c, &fr, true);
  if (c->kind == MB_CROSSOVER_AT) {
    double x = mb__html_frame_x(&fr, c->batch);
    fprintf(f,
            "<line class=\"crossover-at\" data-batch=\"%d\" x1=\"%.1f\" "
            "y1=\"%d\" x2=\"%.1f\" y2=\"%d\"><title>the GPU is ahead from "
            "batch %d</title></line>\n<text class=\"crossover-label\" "
            "x=\"%.1f\" y=\"%d\">GPU ahead from batch %d</text>\n",
            c->batch, x, XO_TOP, x, XO_BOTTOM, c->batch, x + 4, XO_TOP + 10,
            c->batch);
  }
  fputs("</svg>\n</figure>\n", f);
}

void mb__html_write_crossover(FILE *f, const mb_bench_report *const *reports,
                              int n, const mb_crossover *c, int group,
                              int workload) {
  if (!c || c->kind == MB_CROSSOVER_NONE || n <= 0 || !reports[0])
    return;
  char suffix[16] = "", id[64];
  if (workload > 0)
    snprintf(suffix, sizeof suffix, "-%d", workload);
  snprintf(id, sizeof id, "crossover-%d%s", group, suffix);
  draw_chart(f, reports, n, c, id);
  fprintf(f,
          "<div class=\"recommendation crossover\" "
          "id=\"crossover-recommendation-%d%s\"><p>",
          group, suffix);
  put_html(f, c->summary);
  fputs("</p></div>\n", f);
}
