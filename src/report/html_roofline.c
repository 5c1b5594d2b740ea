/* The HTML page's roofline chart (html.c calls it per model): this
 * machine's roofs per precision and every conversion on them, log-log,
 * arithmetic intensity (FLOPs per byte) against achieved GFLOP/s. Stable
 * hooks: <svg id="roofline-chart-N" class="chart roofline-chart">, one
 * <line class="roof" data-precision data-gflops> per measured peak, one
 * <circle class="rpoint" data-conversion data-gflops data-intensity
 * data-bound> per result placed on the roofline. Text from the report goes
 * through mb__html_put_n; the page's CSP applies (no script here). */
#include "report/report_util.h"

#include <math.h>
#include <stdlib.h>

#define RL_WIDTH 760
#define RL_HEIGHT 400
#define RL_LEFT 70
#define RL_RIGHT 170 /* room for the roofs' labels */
#define RL_TOP 14
#define RL_BOTTOM 44

typedef struct rl_axes {
  double x_lo, x_hi, y_lo, y_hi; /* decades, log10 */
} rl_axes;

static double rl_x(const rl_axes *a, double v) {
  double t = (log10(v) - a->x_lo) / (a->x_hi - a->x_lo);
  return RL_LEFT + t * (RL_WIDTH - RL_LEFT - RL_RIGHT);
}

static double rl_y(const rl_axes *a, double v) {
  double t = (log10(v) - a->y_lo) / (a->y_hi - a->y_lo);
  return RL_HEIGHT - RL_BOTTOM - t * (RL_HEIGHT - RL_TOP - RL_BOTTOM);
}

static bool placed(const mb_bench_result *r) {
  return r->roofline.bound != MB_ROOFLINE_UNKNOWN && r->roofline.bytes > 0 &&
         r->roofline.gflops > 0 && r->roofline.intensity > 0;
}

typedef struct rl_roof {
  const char *precision, *unit;
  double gflops;
} rl_roof;

static void write_axes(FILE *f, const rl_axes *a) {
  double x0 = RL_LEFT, x1 = RL_WIDTH - RL_RIGHT;
  double y0 = RL_TOP, y1 = RL_HEIGHT - RL_BOTTOM;
  for (int d = (int)a->x_lo; d <= (int)a->x_hi; d++) {
    double x = rl_x(a, pow(10, d));
    fprintf(f,
            "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
            "y2=\"%.1f\"/>\n<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" "
            "text-anchor=\"middle\">%g</text>\n",
            x, y0, x, y1, x, y1 + 14, pow(10, d));
  }
  for (int d = (int)a->y_lo; d <= (int)a->y_hi; d++) {
    double y = rl_y(a, pow(10, d));
    fprintf(f,
            "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
            "y2=\"%.1f\"/>\n<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" "
            "text-anchor=\"end\" dominant-baseline=\"middle\">%g</text>\n",
            x0, y, x1, y, x0 - 6, y, pow(10, d));
  }
  fprintf(f,
          "<text class=\"axis-title\" x=\"%.1f\" y=\"%d\" "
          "text-anchor=\"middle\">arithmetic intensity (FLOPs per byte moved,"
          " log)</text>\n<text class=\"axis-title\" x=\"14\" y=\"%.1f\" "
          "text-anchor=\"middle\" transform=\"rotate(-90 14 %.1f)\">GFLOP/s "
          "(GOP/s for int8, log)</text>\n",
          (x0 + x1) / 2, RL_HEIGHT - 8, (y0 + y1) / 2, (y0 + y1) / 2);
}

void mb__html_write_roofline(FILE *f, const mb_bench_report *report,
                             int model) {
  const mb_machine_peaks *p = &report->peaks;
  int n_placed = 0;
  for (int i = 0; i < report->n_results; i++)
    n_placed += placed(&report->results[i]);
  fputs("<h3>Roofline</h3>\n", f);
  if (!p->measured || n_placed == 0) {
    fprintf(f, "<p class=\"no-data\" id=\"roofline-chart-%d\">", model);
    mb__html_put_n(f,
                   !p->measured && p->note[0]
                       ? p->note
                       : "No result has both FLOPs and bytes to place on "
                         "this machine's roofline.",
                   -1, false);
    fputs("</p>\n", f);
    return;
  }
  rl_roof roofs[3] = {{"fp32", "GFLOP/s", p->fp32_gflops},
                      {"int8", "GOP/s", p->int8_gops},
                      {"bf16", "GFLOP/s", p->bf16_gflops}};
  double bw = p->bandwidth_gbs;
  double top = 0, low_y = INFINITY, lo_x = INFINITY, hi_x = 0;
  for (int k = 0; k < 3; k++)
    if (roofs[k].gflops > 0) {
      top = MB_MAX(top, roofs[k].gflops);
      lo_x = MB_MIN(lo_x, roofs[k].gflops / bw);
      hi_x = MB_MAX(hi_x, roofs[k].gflops / bw);
    }
  for (int i = 0; i < report->n_results; i++) {
    const mb_roofline *r = &report->results[i].roofline;
    if (!placed(&report->results[i]))
      continue;
    low_y = MB_MIN(low_y, r->gflops);
    top = MB_MAX(top, r->gflops);
    lo_x = MB_MIN(lo_x, r->intensity);
    hi_x = MB_MAX(hi_x, r->intensity);
  }
  rl_axes a = {floor(log10(lo_x / 2)), ceil(log10(hi_x * 2)),
               floor(log10(MB_MIN(low_y, lo_x * bw) / 1.5)),
               ceil(log10(top * 1.5))};
  double x_max = pow(10, a.x_hi), x_min = pow(10, a.x_lo);
  fprintf(f,
          "<figure>\n<svg id=\"roofline-chart-%d\" class=\"chart "
          "roofline-chart\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" "
          "role=\"img\" aria-label=\"each conversion on this machine's "
          "roofline\">\n",
          model, RL_WIDTH, RL_HEIGHT, RL_WIDTH, RL_HEIGHT);
  write_axes(f, &a);
  /* The memory roof up to the highest ridge, then each compute roof from
   * its own ridge on. */
  double ridge_top = 0;
  for (int k = 0; k < 3; k++)
    if (roofs[k].gflops > 0)
      ridge_top = MB_MAX(ridge_top, roofs[k].gflops / bw);
  double y_floor = pow(10, a.y_lo);
  double start = MB_MAX(x_min, y_floor / bw);
  fprintf(f,
          "<line class=\"roof memory\" data-gbs=\"%.4g\" x1=\"%.1f\" "
          "y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"><title>memory %.1f GB/s "
          "(triad)</title></line>\n",
          bw, rl_x(&a, start), rl_y(&a, start * bw),
          rl_x(&a, MB_MIN(ridge_top, x_max)),
          rl_y(&a, MB_MIN(ridge_top, x_max) * bw), bw);
  for (int k = 0; k < 3; k++) {
    if (roofs[k].gflops <= 0)
      continue;
    double ridge = MB_MAX(roofs[k].gflops / bw, x_min);
    double y = rl_y(&a, roofs[k].gflops);
    fprintf(f,
            "<line class=\"roof %s\" data-precision=\"%s\" "
            "data-gflops=\"%.4g\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
            "y2=\"%.1f\"/>\n<text class=\"roof-label\" x=\"%.1f\" "
            "y=\"%.1f\" dominant-baseline=\"middle\">%s %.0f %s</text>\n",
            roofs[k].precision, roofs[k].precision, roofs[k].gflops,
            rl_x(&a, ridge), y, rl_x(&a, x_max), y, rl_x(&a, x_max) + 6, y,
            roofs[k].precision, roofs[k].gflops, roofs[k].unit);
  }
  /* Conversions of one precision share an intensity: their labels are
   * moved down until they no longer overlap one placed before. */
  double *label_at = malloc(sizeof *label_at * 2 * (size_t)n_placed);
  int n_labels = 0;
  for (int i = 0; i < report->n_results; i++) {
    const mb_bench_result *r = &report->results[i];
    if (!placed(r))
      continue;
    const mb_roofline *rl = &r->roofline;
    const char *name = mb__report_name(r);
    double x = rl_x(&a, rl->intensity), y = rl_y(&a, rl->gflops);
    double label_y = y - 6;
    for (int moved = 1; moved && label_at;) {
      moved = 0;
      for (int k = 0; k < n_labels; k++)
        if (fabs(label_at[2 * k] - x) < 150 &&
            fabs(label_at[2 * k + 1] - label_y) < 12) {
          label_y = label_at[2 * k + 1] + 12;
          moved = 1;
        }
    }
    if (label_at) {
      label_at[2 * n_labels] = x;
      label_at[2 * n_labels + 1] = label_y;
      n_labels++;
    }
    fputs("<g class=\"row\" data-conversion=\"", f);
    mb__html_put_n(f, name, -1, false);
    fprintf(f, "\">\n<circle class=\"rpoint %s\" data-conversion=\"",
            rl->bound == MB_ROOFLINE_COMPUTE  ? "compute"
            : rl->bound == MB_ROOFLINE_MEMORY ? "memory"
                                              : "overhead");
    mb__html_put_n(f, name, -1, false);
    fputs("\"", f);
    mb__html_put_number(f, "data-gflops", rl->gflops);
    mb__html_put_number(f, "data-intensity", rl->intensity);
    fprintf(f, " data-bound=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\"><title>",
            mb_roofline_bound_name(rl->bound), x, y);
    mb__html_put_n(f, name, -1, false);
    fprintf(f,
            ": %.3g GFLOP/s at %.3g FLOP/byte, %.1f%% of the %s peak "
            "(%.0f), %s</title></circle>\n<text class=\"point-label\" "
            "x=\"%.1f\" y=\"%.1f\">",
            rl->gflops, rl->intensity, 100.0 * rl->peak_share,
            rl->peak_precision, rl->peak_gflops,
            mb_roofline_bound_name(rl->bound), x + 7, label_y);
    if (mb__html_put_n(f, name, 24, false))
      fputs("\xe2\x80\xa6", f);
    fputs("</text>\n</g>\n", f);
  }
  free(label_at);
  fprintf(f,
          "</svg>\n<figcaption>Roofs: this machine's peaks at %d thread%s "
          "(GEMM per precision, triad bandwidth; <code>modelbench "
          "machine</code>). A point is a conversion: the model's FLOPs per "
          "run over its median latency, against FLOPs per byte moved "
          "(weights, inputs, activations written and read once). "
          "Compute-bound: under a flat roof; memory-bound: under the slope; "
          "overhead-bound: below %.0f%% of the roof above it.<br><span "
          "class=\"legend\"><span class=\"swatch best\"></span>compute-bound"
          "<span class=\"swatch\"></span>memory-bound<span class=\"swatch "
          "inaccurate\"></span>overhead-bound</span></figcaption>\n"
          "</figure>\n",
          p->threads, p->threads == 1 ? "" : "s",
          100.0 * MB_ROOFLINE_OVERHEAD_SHARE);
}
