/* The tune page (mb_tune_result_write_html, `modelbench tune --html`): one
 * self-contained file that a browser opens without a network and that runs
 * no script (its Content Security Policy allows only its own <style>,
 * named by its SHA-256). It shows
 *   - the summary: the winner or why there is none, the budget, the SLO,
 *     the search's wall time and whether its time budget ran out;
 *   - an SVG chart of every measured step (phases "uniform" and "mixed"):
 *     median latency against error (1 - cosine), both log scale, the
 *     budget as a horizontal line, the accuracy-vs-latency Pareto front as
 *     a step line, the winner and the fastest accurate uniform option
 *     marked and labelled; failed measurements are listed under it;
 *   - a table of every step of the search log, estimates marked.
 * Stable hooks: <div id="tune-summary">, <svg id="tune-chart" class="chart
 * tune-chart">, <line class="budget" data-max-error>, <path class="front"
 * data-steps="I J ...">, <g class="tpoint uniform|mixed accurate|inaccurate
 * [front] [winner] [fastest-uniform] [superseded]" data-step data-conversion
 * data-median-ms data-error [data-clamped]>, <ul id="tune-failed"> with
 * <li data-step>, <table id="tune-steps"> with one <tr class="step"
 * data-step data-phase data-conversion data-estimated> per step. Every
 * text from the result (the model path, conversions, node names, messages)
 * goes through mb__html_put_n. */
#include "report/report_util.h"

#include <math.h>
#include <stdlib.h>

#define TC_WIDTH 760
#define TC_HEIGHT 420
#define TC_LEFT 76
#define TC_RIGHT 150 /* room for the budget's label */
#define TC_TOP 14
#define TC_BOTTOM 44
#define TC_LABEL_CHARS 30
#define TC_MAX_DECADES 12 /* of error shown; lower errors sit on the floor */
#define TC_MAX_TICKS 16

static const char tune_style[] =
    "svg .tpoint .mark{stroke-width:1.5}"
    "svg .tpoint.accurate .mark{fill:var(--best);stroke:var(--best)}"
    "svg .tpoint.inaccurate .mark{fill:none;stroke:var(--bad)}"
    "svg .tpoint.superseded{opacity:.35}\n"
    "svg path.front{fill:none;stroke:var(--bar);stroke-width:1.5}"
    "svg .budget{stroke:var(--fail);stroke-width:1.5;stroke-dasharray:6 4}"
    "svg .ring{fill:none;stroke:var(--fg);stroke-width:2}"
    "svg .ring.fastest-uniform{stroke-dasharray:3 3}\n"
    "svg text.budget-label{fill:var(--fail);font-size:11px}"
    "svg text.winner-label{font-weight:600}\n"
    ".swatch.hollow{background:none;border:1.5px solid var(--bad);"
    "width:8px;height:8px}.swatch.front{height:2px}\n"
    "tr.winner td{background:var(--panel);font-weight:600}"
    "tr.estimate td{color:var(--muted)}td.kept{white-space:normal;text-align:"
    "left}\n";

static void put_html(FILE *f, const char *s) {
  mb__html_put_n(f, s, -1, false);
}

/* ---- the front ---- */

static bool front_point(const double *latency_ms, const double *error, int i) {
  return isfinite(latency_ms[i]) && latency_ms[i] > 0 && isfinite(error[i]) &&
         error[i] >= 0;
}

/* By latency, then error, then index: the first of equal points wins. */
static bool front_before(const double *latency_ms, const double *error, int a,
                         int b) {
  if (latency_ms[a] != latency_ms[b])
    return latency_ms[a] < latency_ms[b];
  if (error[a] != error[b])
    return error[a] < error[b];
  return a < b;
}

int mb__tune_front(const double *latency_ms, const double *error, int n,
                   int *front_out) {
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (!front_point(latency_ms, error, i))
      continue;
    /* Insertion sort: a search has tens of measured steps. */
    int k = m++;
    for (; k > 0 && front_before(latency_ms, error, i, front_out[k - 1]); k--)
      front_out[k] = front_out[k - 1];
    front_out[k] = i;
  }
  /* Going right, a point is on the front when its error is below every
   * error to its left (a point of equal latency and lower error came
   * first). */
  int kept = 0;
  double best = INFINITY;
  for (int k = 0; k < m; k++) {
    int i = front_out[k];
    if (error[i] < best) {
      best = error[i];
      front_out[kept++] = i;
    }
  }
  return kept;
}

/* ---- steps ---- */

static bool is_measured_phase(const mb_tune_step *s) {
  return strcmp(s->phase, "uniform") == 0 || strcmp(s->phase, "mixed") == 0;
}

/* A measured step's time per sample (its median at batch 1): what the
 * chart, the front and the speed-up compare, so that candidates of
 * different batch sizes (tune --batch-size 1,8) compare fairly. */
static double step_ms(const mb_tune_step *s) {
  return s->median_ms / MB_MAX(s->batch_size, 1);
}

/* Does the search hold batch sizes other than 1 (the chart's axis then
 * says per sample)? */
static bool batched(const mb_tune_result *r) {
  for (int i = 0; i < r->n_steps; i++)
    if (r->steps[i].batch_size > 1)
      return true;
  return false;
}

/* A measured step with a latency and an error to place on the chart. */
static bool plotted(const mb_tune_step *s) {
  return is_measured_phase(s) && s->status == MB_BENCH_OK &&
         isfinite(s->median_ms) && s->median_ms > 0 && isfinite(s->error) &&
         s->error >= 0;
}

/* As the search log says it (tune_log.c): accuracy without a latency. */
static bool estimated(const mb_tune_step *s) {
  return s->median_ms < 0 && s->status == MB_BENCH_OK && s->error >= 0;
}

/* The round in which a later uniform step measured this configuration
 * again (that measurement says more), or -1. */
static int measured_again(const mb_tune_result *r, int i) {
  const mb_tune_step *s = &r->steps[i];
  if (strcmp(s->phase, "uniform") != 0)
    return -1;
  for (int k = i + 1; k < r->n_steps; k++) {
    const mb_tune_step *t = &r->steps[k];
    if (strcmp(t->phase, "uniform") == 0 && t->threads == s->threads &&
        strcmp(t->conversion, s->conversion) == 0 && plotted(t))
      return t->round;
  }
  return -1;
}

static void put_kept(FILE *f, const mb_tune_step *s, const char *sep) {
  for (int k = 0; k < s->n_kept_float; k++) {
    fputs(k ? sep : "", f);
    put_html(f, s->kept_float[k]);
  }
}

/* "CONV x2", and ", N kept in float" for a mixed configuration. */
static void put_config(FILE *f, const mb_tune_step *s, int max_chars) {
  if (mb__html_put_n(f, s->conversion, max_chars, false))
    fputs("\xe2\x80\xa6", f);
  fprintf(f, " \xc3\x97%d", s->threads);
  if (s->batch_size > 1)
    fprintf(f, ", batch %d", s->batch_size);
  if (s->n_kept_float)
    fprintf(f, ", %d kept in float", s->n_kept_float);
}

/* ---- chart geometry ---- */

typedef struct tc_axes {
  double x_lo, x_hi, y_lo, y_hi; /* log10 */
  double floor_error;            /* errors below are drawn here */
} tc_axes;

static double tc_x(const tc_axes *a, double v) {
  double t = (log10(v) - a->x_lo) / (a->x_hi - a->x_lo);
  return TC_LEFT + t * (TC_WIDTH - TC_LEFT - TC_RIGHT);
}

static double tc_y(const tc_axes *a, double v) {
  double t = (log10(MB_MAX(v, a->floor_error)) - a->y_lo) / (a->y_hi - a->y_lo);
  return TC_HEIGHT - TC_BOTTOM - t * (TC_HEIGHT - TC_TOP - TC_BOTTOM);
}

/* Ticks of a log axis from 10^lo to 10^hi: decades, or 1-2-5 (then 1..9)
 * in each when that gives fewer than three; every other decade when there
 * are too many. Returns the count. */
static int log_ticks(double lo, double hi, double *ticks) {
  static const double sets[][10] = {
      {1}, {1, 2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
  static const int set_size[] = {1, 3, 9};
  int n = 0;
  for (int set = 0; set < 3 && n < 3; set++) {
    n = 0;
    int stride = hi - lo > TC_MAX_TICKS - 4 ? 2 : 1;
    for (int d = (int)floor(lo); d <= (int)ceil(hi); d++) {
      if (set == 0 && d % stride)
        continue;
      for (int k = 0; k < set_size[set] && n < TC_MAX_TICKS; k++) {
        double v = sets[set][k] * pow(10, d);
        double l = log10(v);
        if (l >= lo - 1e-9 && l <= hi + 1e-9)
          ticks[n++] = v;
      }
    }
  }
  return n;
}

static void write_axes(FILE *f, const tc_axes *a, bool per_sample) {
  double ticks[TC_MAX_TICKS];
  double x0 = TC_LEFT, x1 = TC_WIDTH - TC_RIGHT;
  double y0 = TC_TOP, y1 = TC_HEIGHT - TC_BOTTOM;
  int n = log_ticks(a->x_lo, a->x_hi, ticks);
  for (int k = 0; k < n; k++) {
    double x = tc_x(a, ticks[k]);
    fprintf(f,
            "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
            "y2=\"%.1f\"/>\n<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" "
            "text-anchor=\"middle\">%g</text>\n",
            x, y0, x, y1, x, y1 + 14, ticks[k]);
  }
  n = log_ticks(a->y_lo, a->y_hi, ticks);
  for (int k = 0; k < n; k++) {
    double y = tc_y(a, ticks[k]);
    fprintf(f,
            "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
            "y2=\"%.1f\"/>\n<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" "
            "text-anchor=\"end\" dominant-baseline=\"middle\">%s%g</text>\n",
            x0, y, x1, y, x0 - 6, y,
            ticks[k] <= a->floor_error * (1 + 1e-9) ? "\xe2\x89\xa4" : "",
            ticks[k]);
  }
  fprintf(f,
          "<text class=\"axis-title\" x=\"%.1f\" y=\"%d\" "
          "text-anchor=\"middle\">%s (ms, log)</text>\n"
          "<text class=\"axis-title\" x=\"14\" y=\"%.1f\" "
          "text-anchor=\"middle\" transform=\"rotate(-90 14 %.1f)\">error: "
          "1 - cosine (log)</text>\n",
          (x0 + x1) / 2, TC_HEIGHT - 8,
          per_sample ? "time per sample: median / batch" : "median latency",
          (y0 + y1) / 2, (y0 + y1) / 2);
}

/* The axes around the plotted steps and the budget. Errors of 0 have no
 * logarithm: the floor is a decade below the lowest positive error (or
 * the budget), and at most TC_MAX_DECADES under the top. */
static tc_axes chart_axes(const mb_tune_result *r) {
  double lat_lo = INFINITY, lat_hi = 0, err_lo = INFINITY, err_hi = 0;
  bool has_zero = false;
  for (int i = 0; i < r->n_steps; i++) {
    const mb_tune_step *s = &r->steps[i];
    if (!plotted(s))
      continue;
    lat_lo = MB_MIN(lat_lo, step_ms(s));
    lat_hi = MB_MAX(lat_hi, step_ms(s));
    if (s->error > 0)
      err_lo = MB_MIN(err_lo, s->error);
    else
      has_zero = true;
    err_hi = MB_MAX(err_hi, s->error);
  }
  if (r->max_error > 0 && isfinite(r->max_error)) {
    err_lo = MB_MIN(err_lo, r->max_error);
    err_hi = MB_MAX(err_hi, r->max_error);
  }
  if (!isfinite(err_lo))
    err_lo = err_hi > 0 ? err_hi : 1e-6;
  if (!(err_hi > 0))
    err_hi = err_lo;
  tc_axes a;
  a.x_lo = log10(lat_lo / 1.25);
  a.x_hi = log10(lat_hi * 1.25);
  a.y_hi = ceil(log10(err_hi * 1.5));
  a.y_lo = floor(log10(err_lo)) - (has_zero ? 1 : 0);
  if (a.y_hi - a.y_lo > TC_MAX_DECADES)
    a.y_lo = a.y_hi - TC_MAX_DECADES;
  if (a.y_hi <= a.y_lo)
    a.y_hi = a.y_lo + 1;
  a.floor_error = pow(10, a.y_lo);
  return a;
}

/* ---- chart ---- */

static void write_point(FILE *f, const mb_tune_result *r, int i,
                        const tc_axes *a, bool on_front) {
  const mb_tune_step *s = &r->steps[i];
  bool uniform = strcmp(s->phase, "uniform") == 0;
  bool clamped = s->error < a->floor_error;
  int again = measured_again(r, i);
  double x = tc_x(a, step_ms(s)), y = tc_y(a, s->error);
  char err_text[32];
  mb__report_format_err(err_text, sizeof err_text, s->error);
  fprintf(f, "<g class=\"tpoint %s %s%s%s%s%s\" data-step=\"%d\"",
          uniform ? "uniform" : "mixed",
          s->accurate ? "accurate" : "inaccurate", on_front ? " front" : "",
          i == r->winner ? " winner" : "",
          i == r->fastest_uniform ? " fastest-uniform" : "",
          again >= 0 ? " superseded" : "", i);
  fputs(" data-conversion=\"", f);
  put_html(f, s->conversion);
  fputs("\"", f);
  mb__html_put_number(f, "data-median-ms", s->median_ms);
  mb__html_put_number(f, "data-error", s->error);
  fprintf(f, "%s>\n", clamped ? " data-clamped=\"1\"" : "");
  if (uniform)
    fprintf(f, "<circle class=\"mark\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\"/>", x,
            y);
  else
    fprintf(f,
            "<rect class=\"mark\" x=\"%.1f\" y=\"%.1f\" width=\"9\" "
            "height=\"9\"/>",
            x - 4.5, y - 4.5);
  if (i == r->winner || i == r->fastest_uniform)
    fprintf(f, "<circle class=\"ring%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"10\"/>",
            i == r->winner ? " winner" : " fastest-uniform", x, y);
  fputs("<title>", f);
  put_config(f, s, -1);
  if (s->n_kept_float) {
    fputs(" (", f);
    put_kept(f, s, ", ");
    fputs(")", f);
  }
  fprintf(f, ": median %.4g ms, 1 - cosine %s%s, %s", s->median_ms, err_text,
          clamped ? " (drawn at the floor)" : "",
          s->accurate ? "accurate" : "inaccurate");
  if (uniform)
    fprintf(f, ", round %d", s->round);
  if (again >= 0)
    fprintf(f, ", measured again in round %d", again);
  fputs("</title>\n", f);
  /* The two marked configurations get a label beside them, on the side
   * with room: the winner's above, the other's below, unless that leaves
   * the plot. */
  if (i == r->winner || i == r->fastest_uniform) {
    bool left = x > (TC_LEFT + TC_WIDTH - TC_RIGHT) / 2.0;
    double above = y - 12, below = y + 20;
    double label_y = i == r->winner
                         ? (above < TC_TOP + 10 ? below : above)
                         : (below > TC_HEIGHT - TC_BOTTOM - 4 ? above : below);
    const char *what = i == r->winner && i == r->fastest_uniform
                           ? "winner (uniform)"
                       : i == r->winner ? "winner"
                                        : "fastest accurate uniform";
    fprintf(f, "<text class=\"point-label%s\" x=\"%.1f\" y=\"%.1f\"%s>%s: ",
            i == r->winner ? " winner-label" : "", left ? x - 13 : x + 13,
            label_y, left ? " text-anchor=\"end\"" : "", what);
    put_config(f, s, TC_LABEL_CHARS);
    fputs("</text>\n", f);
  }
  fputs("</g>\n", f);
}

static void write_front(FILE *f, const mb_tune_result *r, const tc_axes *a,
                        const int *front, int n_front) {
  if (n_front == 0)
    return;
  fputs("<path class=\"front\" data-steps=\"", f);
  for (int k = 0; k < n_front; k++)
    fprintf(f, "%s%d", k ? " " : "", front[k]);
  /* Going right the best error reachable drops at each front point. */
  const mb_tune_step *s = &r->steps[front[0]];
  fprintf(f, "\" d=\"M%.1f %.1f", tc_x(a, step_ms(s)), tc_y(a, s->error));
  for (int k = 1; k < n_front; k++) {
    s = &r->steps[front[k]];
    fprintf(f, " H%.1f V%.1f", tc_x(a, step_ms(s)), tc_y(a, s->error));
  }
  fprintf(f, " H%d\"/>\n", TC_WIDTH - TC_RIGHT);
}

static void write_failed(FILE *f, const mb_tune_result *r) {
  int n = 0;
  for (int i = 0; i < r->n_steps; i++) {
    const mb_tune_step *s = &r->steps[i];
    if (!is_measured_phase(s) || plotted(s))
      continue;
    if (n++ == 0)
      fputs("<p>Not plotted (no latency or no error):</p>\n<ul "
            "id=\"tune-failed\">\n",
            f);
    fprintf(f, "<li data-step=\"%d\">step %d, %s: <code>", i, i, s->phase);
    put_config(f, s, -1);
    fprintf(f, "</code>: %s", mb_bench_status_name(s->status));
    const char *why = s->error_message[0] ? s->error_message : s->dropped;
    if (why[0]) {
      fputs(": ", f);
      put_html(f, why);
    }
    fputs("</li>\n", f);
  }
  if (n)
    fputs("</ul>\n", f);
}

static mb_status write_chart(FILE *f, const mb_tune_result *r, mb_error *err) {
  int n = r->n_steps, n_plotted = 0, n_clamped = 0;
  for (int i = 0; i < n; i++)
    n_plotted += plotted(&r->steps[i]);
  fputs("<h2>Accuracy against latency</h2>\n", f);
  if (n_plotted == 0) {
    fputs("<p class=\"no-data\" id=\"tune-chart\">No step was measured with "
          "both a latency and an error.</p>\n",
          f);
    write_failed(f, r);
    return MB_STATUS_OK;
  }
  double *latency = malloc(sizeof *latency * (size_t)n);
  double *error = malloc(sizeof *error * (size_t)n);
  int *front = malloc(sizeof *front * (size_t)n);
  bool *on_front = calloc((size_t)n, sizeof *on_front);
  mb_status status = MB_STATUS_OK;
  if (!latency || !error || !front || !on_front) {
    status =
        mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune page: out of memory");
    goto done;
  }
  /* The front is over configurations: a uniform one measured again counts
   * with its latest measurement. */
  for (int i = 0; i < n; i++) {
    const mb_tune_step *s = &r->steps[i];
    bool counts = plotted(s) && measured_again(r, i) < 0;
    latency[i] = counts ? step_ms(s) : NAN;
    error[i] = counts ? s->error : NAN;
  }
  int n_front = mb__tune_front(latency, error, n, front);
  for (int k = 0; k < n_front; k++)
    on_front[front[k]] = true;
  tc_axes a = chart_axes(r);
  fprintf(f,
          "<figure>\n<svg id=\"tune-chart\" class=\"chart tune-chart\" "
          "viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
          "aria-label=\"error against median latency of every measured "
          "configuration\">\n",
          TC_WIDTH, TC_HEIGHT, TC_WIDTH, TC_HEIGHT);
  write_axes(f, &a, batched(r));
  if (r->max_error > 0 && isfinite(r->max_error)) {
    double y = tc_y(&a, r->max_error);
    fprintf(f,
            "<line class=\"budget\" data-max-error=\"%.6g\" x1=\"%d\" "
            "y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n<text "
            "class=\"budget-label\" x=\"%d\" y=\"%.1f\" "
            "dominant-baseline=\"middle\">budget %g</text>\n",
            r->max_error, TC_LEFT, y, TC_WIDTH - TC_RIGHT, y,
            TC_WIDTH - TC_RIGHT + 6, y, r->max_error);
  }
  write_front(f, r, &a, front, n_front);
  /* The marked configurations last, so that they sit on top. */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < n; i++) {
      bool marked = i == r->winner || i == r->fastest_uniform;
      if (!plotted(&r->steps[i]) || marked != (pass == 1))
        continue;
      n_clamped += r->steps[i].error < a.floor_error;
      write_point(f, r, i, &a, on_front[i]);
    }
  fputs("</svg>\n<figcaption>Every measured configuration: its median "
        "latency against its error, 1 - cosine to the reference on the worst "
        "output (both log scale). The step line is the accuracy-vs-latency "
        "front: the configurations no other beats on both. A uniform "
        "configuration measured again in a later round is drawn faint; its "
        "last measurement counts.",
        f);
  if (n_clamped)
    fprintf(f,
            " An error of 0 has no place on a log scale: errors below %g "
            "(%d point%s) are drawn on the floor; their titles and the "
            "table give the true value.",
            a.floor_error, n_clamped, n_clamped == 1 ? "" : "s");
  fputs("<br><span class=\"legend\"><span class=\"swatch best\"></span>"
        "accurate<span class=\"swatch hollow\"></span>inaccurate (hollow)"
        "<span class=\"swatch front\"></span>front; circle: uniform "
        "precision, square: mixed (nodes kept in float); ringed: the winner "
        "(solid) and the fastest accurate uniform option (dashed); dashed "
        "line: the budget</span></figcaption>\n</figure>\n",
        f);
  write_failed(f, r);
done:
  free(latency);
  free(error);
  free(front);
  free(on_front);
  return status;
}

/* ---- summary and table ---- */

static void write_step_fact(FILE *f, const char *label, const mb_tune_result *r,
                            int i) {
  const mb_tune_step *s = &r->steps[i];
  fprintf(f, "<dt>%s</dt><dd><code>", label);
  put_html(f, s->conversion);
  fprintf(f, "</code> at %d thread%s, median %.4g ms, cosine %.6f", s->threads,
          s->threads == 1 ? "" : "s", s->median_ms, s->cosine);
  if (s->batch_size > 1)
    fprintf(f, ", batch %d (%.4g ms per sample)", s->batch_size, step_ms(s));
  if (s->int8_flops_share >= 0)
    fprintf(f, ", %.1f%% of FLOPs in int8", 100 * s->int8_flops_share);
  if (s->n_kept_float) {
    fprintf(f, "; kept in float (%d): <code>", s->n_kept_float);
    put_kept(f, s, ", ");
    fputs("</code>", f);
  }
  fputs("</dd>\n", f);
}

static void write_summary(FILE *f, const mb_tune_result *r) {
  fprintf(f,
          "<div class=\"recommendation\" id=\"tune-summary\" "
          "data-found=\"%d\">\n<p class=\"summary\">",
          r->found ? 1 : 0);
  put_html(f, r->summary);
  if (r->max_accuracy_drop > 0) {
    fprintf(f,
            "</p>\n<dl>\n<dt>budget</dt><dd>top-1 task accuracy at most "
            "%g%% below the baseline's",
            100 * r->max_accuracy_drop);
    if (r->baseline_task_accuracy >= 0) {
      fputs(" (<code>", f);
      put_html(f, r->baseline);
      fprintf(f, "</code>, %.2f%%)", 100 * r->baseline_task_accuracy);
    } else {
      fputs(" (none measured)", f);
    }
    fprintf(f,
            "; the per-node search steers by 1 - cosine &le; %g, the "
            "chart's line</dd>\n",
            r->max_error);
  } else {
    fprintf(f,
            "</p>\n<dl>\n<dt>budget</dt><dd>1 - cosine &le; %g on every "
            "output</dd>\n",
            r->max_error);
  }
  if (r->slo_percentile > 0)
    fprintf(f, "<dt>SLO</dt><dd>p%g &le; %g ms</dd>\n", r->slo_percentile,
            r->slo_ms);
  if (r->found && r->winner >= 0 && r->winner < r->n_steps)
    write_step_fact(f, "winner", r, r->winner);
  if (r->fastest_uniform >= 0 && r->fastest_uniform < r->n_steps)
    write_step_fact(f, "fastest accurate uniform", r, r->fastest_uniform);
  else
    fputs("<dt>fastest accurate uniform</dt><dd>none</dd>\n", f);
  if (r->fastest_uniform >= 0 && r->found && r->winner >= 0 &&
      r->winner != r->fastest_uniform && r->steps[r->winner].median_ms > 0)
    fprintf(f,
            "<dt>speed-up</dt><dd>%.2f&times; the fastest accurate "
            "uniform option</dd>\n",
            step_ms(&r->steps[r->fastest_uniform]) /
                step_ms(&r->steps[r->winner]));
  fprintf(f,
          "<dt>search wall time</dt><dd>%.1f s</dd>\n<dt>time budget</dt>"
          "<dd>%s</dd>\n</dl>\n</div>\n",
          r->wall_seconds,
          r->budget_exhausted ? "exhausted: the search stopped with the best "
                                "so far"
                              : "not exhausted: the search ran to its end");
}

static void write_table(FILE *f, const mb_tune_result *r) {
  bool task = false; /* a task accuracy column, when labels were given */
  for (int i = 0; i < r->n_steps; i++)
    task |= r->steps[i].task_accuracy >= 0;
  fprintf(f,
          "<h2>Every step</h2>\n<div class=\"wrap\"><table "
          "id=\"tune-steps\">\n"
          "<thead><tr><th>step</th><th>phase</th><th>round</th>"
          "<th>conversion</th><th>threads</th><th>batch</th>"
          "<th>kept in float</th>"
          "<th>int8 share of FLOPs</th><th>error (1 - cosine)</th>"
          "<th>cosine</th>%s<th>median (ms)</th><th>outcome, or why "
          "dropped</th></tr></thead>\n"
          "<tbody>\n",
          task ? "<th>task accuracy</th>" : "");
  for (int i = 0; i < r->n_steps; i++) {
    const mb_tune_step *s = &r->steps[i];
    bool est = estimated(s);
    char err_text[32], median[32], again[48] = "";
    mb__report_format_err(err_text, sizeof err_text, s->error);
    mb__report_format_ms(median, sizeof median, s->median_ms);
    fprintf(f, "<tr class=\"step%s%s\" data-step=\"%d\" data-phase=\"",
            i == r->winner ? " winner" : "", est ? " estimate" : "", i);
    put_html(f, s->phase);
    fputs("\" data-conversion=\"", f);
    put_html(f, s->conversion);
    fprintf(f, "\" data-estimated=\"%d\"><td>%d</td><td>", est ? 1 : 0, i);
    put_html(f, s->phase);
    if (strcmp(s->phase, "uniform") == 0)
      fprintf(f, "</td><td>%d</td><td><code>", s->round);
    else
      fputs("</td><td>-</td><td><code>", f);
    put_html(f, s->conversion);
    fprintf(f, "</code></td><td>%d</td><td>%d</td><td class=\"kept\">",
            s->threads, MB_MAX(s->batch_size, 1));
    if (s->n_kept_float == 0)
      fputs("-", f);
    put_kept(f, s, ", ");
    if (s->int8_flops_share >= 0)
      fprintf(f, "</td><td>%.1f%%", 100 * s->int8_flops_share);
    else
      fputs("</td><td>-", f);
    fprintf(f, "</td><td>%s%s</td><td>", err_text, est ? " (estimate)" : "");
    if (s->cosine >= -1)
      fprintf(f, "%.6f%s", s->cosine, est ? " (estimate)" : "");
    else
      fputs("-", f);
    if (task && s->task_accuracy >= 0)
      fprintf(f, "</td><td>%.2f%%", 100 * s->task_accuracy);
    else if (task)
      fputs("</td><td>-", f);
    fprintf(f, "</td><td>%s</td><td>",
            est ? "not measured (estimate)" : median);
    int round = measured_again(r, i);
    if (round >= 0)
      snprintf(again, sizeof again, "measured again in round %d", round);
    if (i == r->winner)
      fputs("<strong>winner</strong>", f);
    else if (again[0])
      fputs(again, f);
    else if (s->dropped[0])
      put_html(f, s->dropped);
    else if (s->status != MB_BENCH_OK)
      fputs(mb_bench_status_name(s->status), f);
    else
      fputs(s->accurate ? "accurate" : "inaccurate", f);
    if (s->error_message[0]) {
      fputs(": ", f);
      put_html(f, s->error_message);
    }
    fputs("</td></tr>\n", f);
  }
  fputs("</tbody></table></div>\n", f);
}

/* ---- the page ---- */

mb_status mb_tune_result_write_html(const mb_tune_result *result,
                                    const char *path, mb_error *err) {
  if (!result || !path || !path[0] || result->n_steps < 0 ||
      (result->n_steps > 0 && !result->steps))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "tune page: no result or no path given");
  /* A result built by hand through the C API may leave strings out. */
  for (int i = 0; i < result->n_steps; i++) {
    const mb_tune_step *s = &result->steps[i];
    bool kept_ok = s->n_kept_float >= 0 && (!s->n_kept_float || s->kept_float);
    for (int k = 0; kept_ok && k < s->n_kept_float; k++)
      kept_ok = s->kept_float[k] != NULL;
    if (!s->phase || !s->conversion || !kept_ok)
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "tune page: step %d has no phase, no conversion or a "
                       "missing kept_float name",
                       i);
  }
  mb_report_file rf;
  mb_status status = mb__report_file_open(&rf, path, "tune page", err);
  if (status)
    return status;
  FILE *f = rf.f;
  fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">"
        "\n<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
        "'none'; style-src ",
        f);
  mb__html_put_csp_hash(f, mb__html_page_style, tune_style);
  fputs("\">\n<meta name=\"viewport\" content=\"width=device-width, "
        "initial-scale=1\">\n<meta name=\"generator\" "
        "content=\"modelbench " MB_VERSION_STRING
        "\">\n<title>modelbench tune: ",
        f);
  put_html(f, result->model_path);
  fprintf(f,
          "</title>\n<style>\n%s%s</style>\n</head>\n<body>\n<header>\n"
          "<h1>modelbench tune</h1>\n<p class=\"sub\"><code>",
          mb__html_page_style, tune_style);
  put_html(f, result->model_path);
  fputs("</code>, modelbench " MB_VERSION_STRING "</p>\n</header>\n<main>\n",
        f);
  write_summary(f, result);
  if ((status = write_chart(f, result, err))) {
    mb__report_file_abort(&rf);
    return status;
  }
  write_table(f, result);
  fputs("</main>\n</body>\n</html>\n", f);
  return mb__report_file_commit(&rf, err);
}
