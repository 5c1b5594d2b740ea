/* The CPU-or-GPU answer over a batch sweep: per swept batch, the best CPU
 * option and the best GPU option by time per sample with the copies
 * counted, the batch from which the GPU stays ahead (the crossover), and
 * what to deploy at each batch under the run's latency target.
 *
 * A GPU result's timed loop keeps its inputs on the device, so its median
 * latency leaves out the copies a server pays per query; its host latency
 * (trtexec's: median H2D + median device time + median D2H) puts them
 * back. A CPU result has no copies: its median latency is the time.
 * Batches where only one device has an accurate option are listed but do
 * not decide the crossover. */
#include "report/report_util.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>

bool mb__report_on_gpu(const mb_bench_result *r) {
  return r->gpu.used || strncmp(r->device, "cuda", 4) == 0;
}

static int batch_of(const mb_bench_report *rep, const mb_bench_result *r) {
  if (r->batch_size > 0)
    return r->batch_size;
  return rep->config.batch_size > 0 ? rep->config.batch_size : 1;
}

/* The time of one query (batch) with the copies: NAN when unknown. */
static double query_ms(const mb_bench_result *r) {
  if (mb__report_on_gpu(r) && r->gpu.host_latency_ms > 0)
    return r->gpu.host_latency_ms;
  return r->latency_ms.median;
}

/* The latency at percentile p of one query with the median copies. */
static bool query_ms_at(const mb_bench_result *r, double p, double *out) {
  if (!mb__report_latency_at(r, p, out))
    return false;
  if (mb__report_on_gpu(r)) {
    const mb_gpu_result *g = &r->gpu;
    *out += (g->h2d_ms.median > 0 ? g->h2d_ms.median : 0) +
            (g->d2h_ms.median > 0 ? g->d2h_ms.median : 0);
  }
  return true;
}

static const mb_crossover_option no_option = {-1, -1, NAN, false};

static bool better(const mb_crossover_option *candidate,
                   const mb_crossover_option *best) {
  return best->report < 0 || candidate->ms_per_sample < best->ms_per_sample;
}

static int compare_batch(const void *a, const void *b) {
  int x = ((const mb_crossover_point *)a)->batch;
  int y = ((const mb_crossover_point *)b)->batch;
  return (x > y) - (x < y);
}

/* The distinct batches of the sweep, ascending, with empty options. */
static bool collect_points(const mb_bench_report *const *reports, int n,
                           mb_crossover *out) {
  int cap = 0;
  for (int m = 0; m < n; m++)
    cap += reports[m] && reports[m]->results ? reports[m]->n_results : 0;
  if (cap == 0)
    return true;
  out->points = malloc(sizeof *out->points * (size_t)cap);
  if (!out->points)
    return false;
  for (int m = 0; m < n; m++)
    for (int i = 0;
         reports[m] && reports[m]->results && i < reports[m]->n_results; i++) {
      int batch = batch_of(reports[m], &reports[m]->results[i]);
      bool seen = false;
      for (int k = 0; k < out->n_points && !seen; k++)
        seen = out->points[k].batch == batch;
      if (!seen)
        out->points[out->n_points++] =
            (mb_crossover_point){batch, no_option, no_option, no_option};
    }
  qsort(out->points, (size_t)out->n_points, sizeof *out->points, compare_batch);
  return true;
}

static mb_crossover_point *point_of(mb_crossover *c, int batch) {
  for (int k = 0; k < c->n_points; k++)
    if (c->points[k].batch == batch)
      return &c->points[k];
  return NULL;
}

bool mb__crossover_option_of(const mb_bench_report *rep,
                             const mb_bench_result *r, int *batch_out,
                             double *ms_per_sample_out) {
  if (!mb__report_has_median(r) || !mb__report_is_accurate(r))
    return false;
  int batch = batch_of(rep, r);
  double ms = query_ms(r) / batch;
  if (!isfinite(ms) || ms < 0)
    return false;
  *batch_out = batch;
  *ms_per_sample_out = ms;
  return true;
}

/* Best per device and, within the target, what to deploy. */
static void fill_options(const mb_bench_report *const *reports, int n,
                         mb_crossover *c) {
  for (int m = 0; m < n; m++)
    for (int i = 0;
         reports[m] && reports[m]->results && i < reports[m]->n_results; i++) {
      const mb_bench_result *r = &reports[m]->results[i];
      int batch;
      double ms;
      if (!mb__crossover_option_of(reports[m], r, &batch, &ms))
        continue;
      mb_crossover_point *pt = point_of(c, batch);
      if (!pt)
        continue;
      mb_crossover_option o = {m, i, ms, mb__report_on_gpu(r)};
      mb_crossover_option *best = o.gpu ? &pt->gpu : &pt->cpu;
      if (better(&o, best))
        *best = o;
      double at;
      bool within = c->slo_percentile <= 0 ||
                    (query_ms_at(r, c->slo_percentile, &at) && at <= c->slo_ms);
      if (within && better(&o, &pt->deploy))
        pt->deploy = o;
    }
}

/* GPU ahead at a batch where both devices have an option. */
static bool compared(const mb_crossover_point *pt) {
  return pt->cpu.report >= 0 && pt->gpu.report >= 0;
}
static bool gpu_ahead(const mb_crossover_point *pt) {
  return pt->gpu.ms_per_sample < pt->cpu.ms_per_sample;
}

/* ---- the sentences ---- */

typedef struct text {
  char *p;
  size_t left;
} text;

static void add(text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add(text *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(t->p, t->left, fmt, ap);
  va_end(ap);
  if (w < 0)
    return;
  size_t used = MB_MIN((size_t)w, t->left > 0 ? t->left - 1 : 0);
  t->p += used;
  t->left -= used;
}

/* "0.09", "0.412", "12.3": three significant digits. */
static void format_ms(char *buf, size_t size, double ms) {
  if (isfinite(ms) && ms >= 0)
    snprintf(buf, size, ms >= 1000 ? "%.0f" : "%.3g", ms);
  else
    snprintf(buf, size, "-");
}

static const mb_bench_result *result_of(const mb_bench_report *const *reports,
                                        const mb_crossover_option *o) {
  return &reports[o->report]->results[o->result];
}

/* "EAGER on NVIDIA H100" or "EAGER on the GPU" when it has no name. */
static void add_gpu_option(text *t, const mb_bench_report *const *reports,
                           const mb_crossover_option *o) {
  const mb_bench_result *r = result_of(reports, o);
  add(t, "%s on %s", mb__report_name(r),
      r->gpu.info.name[0] ? r->gpu.info.name : "the GPU");
}

static bool same_deploy(const mb_bench_report *const *reports,
                        const mb_crossover_option *a,
                        const mb_crossover_option *b) {
  if (a->report < 0 || b->report < 0)
    return a->report < 0 && b->report < 0;
  return a->gpu == b->gpu &&
         strcmp(mb__report_name(result_of(reports, a)),
                mb__report_name(result_of(reports, b))) == 0;
}

/* "Within the SLO p99 <= 2 ms: batch 1-2, ONEDNN on the CPU; batch 4,
 * nothing meets it; ...": one clause per run of batches alike. */
static void add_deploy(text *t, const mb_bench_report *const *reports,
                       const mb_crossover *c) {
  add(t, " Within the SLO p%g <= %g ms:", c->slo_percentile, c->slo_ms);
  for (int k = 0, clause = 0; k < c->n_points && t->left > 1; clause++) {
    const mb_crossover_point *pt = &c->points[k];
    int end = k + 1;
    while (end < c->n_points &&
           same_deploy(reports, &pt->deploy, &c->points[end].deploy))
      end++;
    add(t, "%s batch %d", clause ? ";" : "", pt->batch);
    if (end - 1 > k)
      add(t, "-%d", c->points[end - 1].batch);
    if (pt->deploy.report < 0)
      add(t, ", nothing meets it");
    else
      add(t, ", %s on the %s", mb__report_name(result_of(reports, &pt->deploy)),
          pt->deploy.gpu ? "GPU" : "CPU");
    k = end;
  }
  add(t, ".");
}

static void summarise(const mb_bench_report *const *reports, mb_crossover *c,
                      int first, int last) {
  text t = {c->summary, sizeof c->summary};
  char cpu_ms[32], gpu_ms[32];
  if (c->kind == MB_CROSSOVER_NONE) {
    add(&t, "No CPU-or-GPU answer: no batch has an accurate result on both "
            "the CPU and the GPU.");
    return;
  }
  /* The batch the numbers are quoted at: the crossover, else the smallest
   * (GPU always ahead) or the largest (never) batch compared. */
  const mb_crossover_point *at = &c->points[last];
  if (c->kind == MB_CROSSOVER_ALWAYS)
    at = &c->points[first];
  for (int k = 0; c->kind == MB_CROSSOVER_AT && k < c->n_points; k++)
    if (c->points[k].batch == c->batch)
      at = &c->points[k];
  format_ms(cpu_ms, sizeof cpu_ms, at->cpu.ms_per_sample);
  format_ms(gpu_ms, sizeof gpu_ms, at->gpu.ms_per_sample);
  const char *cpu_name = mb__report_name(result_of(reports, &at->cpu));
  /* "batch 1 to 64", or "batch 8" when one batch was compared. */
  char range[48];
  if (first == last)
    snprintf(range, sizeof range, "batch %d", c->points[first].batch);
  else
    snprintf(range, sizeof range, "batch %d to %d", c->points[first].batch,
             c->points[last].batch);
  switch (c->kind) {
  case MB_CROSSOVER_AT: {
    /* Below the crossover: the best CPU option at the largest batch
     * compared under it. */
    const mb_crossover_point *below = NULL;
    for (int k = 0; k < c->n_points && c->points[k].batch < c->batch; k++)
      if (compared(&c->points[k]))
        below = &c->points[k];
    add(&t, "From batch %d, the GPU (", c->batch);
    add_gpu_option(&t, reports, &at->gpu);
    add(&t,
        ", %s ms/sample with copies) is faster than the best CPU option "
        "(%s, %s ms/sample); below it, deploy %s on the CPU.",
        gpu_ms, cpu_name, cpu_ms,
        below ? mb__report_name(result_of(reports, &below->cpu)) : cpu_name);
    break;
  }
  case MB_CROSSOVER_ALWAYS:
    add(&t, "The GPU is ahead at every batch (%s): at batch %d, ", range,
        at->batch);
    add_gpu_option(&t, reports, &at->gpu);
    add(&t,
        " takes %s ms/sample with copies, the best CPU option (%s) %s "
        "ms/sample; deploy on the GPU.",
        gpu_ms, cpu_name, cpu_ms);
    break;
  default: /* MB_CROSSOVER_NEVER */
    add(&t,
        "The GPU never overtakes in the swept range (%s): at batch %d, the "
        "best GPU option (",
        range, at->batch);
    add_gpu_option(&t, reports, &at->gpu);
    add(&t,
        ") takes %s ms/sample with copies, the best CPU option (%s) %s "
        "ms/sample; deploy %s on the CPU.",
        gpu_ms, cpu_name, cpu_ms, cpu_name);
    break;
  }
  if (c->slo_percentile > 0)
    add_deploy(&t, reports, c);
}

bool mb__crossover_find(const mb_bench_report *const *reports, int n,
                        mb_crossover *out) {
  memset(out, 0, sizeof *out);
  if (!reports || n <= 0 || !reports[0]) {
    summarise(reports, out, 0, 0);
    return true;
  }
  const mb_load_config *l = &reports[0]->config.load;
  if (l->slo_percentile > 0 && l->slo_ms > 0) {
    out->slo_percentile = l->slo_percentile;
    out->slo_ms = l->slo_ms;
  }
  if (!collect_points(reports, n, out)) {
    mb__crossover_free(out);
    summarise(reports, out, 0, 0);
    return false;
  }
  fill_options(reports, n, out);

  /* Walk down from the largest batch compared while the GPU stays ahead:
   * the last such batch is the crossover. */
  int first = -1, last = -1, from = -1;
  bool streak = true;
  for (int k = out->n_points - 1; k >= 0; k--) {
    if (!compared(&out->points[k]))
      continue;
    if (last < 0)
      last = k;
    first = k;
    streak = streak && gpu_ahead(&out->points[k]);
    if (streak)
      from = k;
  }
  if (last < 0)
    out->kind = MB_CROSSOVER_NONE;
  else if (from < 0)
    out->kind = MB_CROSSOVER_NEVER;
  else if (from == first)
    out->kind = MB_CROSSOVER_ALWAYS;
  else {
    out->kind = MB_CROSSOVER_AT;
    out->batch = out->points[from].batch;
  }
  summarise(reports, out, first, last);
  return true;
}

void mb__crossover_free(mb_crossover *c) {
  if (!c)
    return;
  free(c->points);
  c->points = NULL;
  c->n_points = 0;
}
