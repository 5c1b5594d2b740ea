/* What to deploy under a latency SLO, over the points of a sweep: the
 * conversion and settings (batch, threads, concurrency) that serve the most
 * requests per second with the SLO met, at accuracy, and the headroom over
 * the default (ORT_CPU, or EAGER for a PyTorch model) at the untuned
 * settings: the smallest batch, concurrency and thread count swept.
 *
 * What a result serves is mb__report_served_qps (report_util.c): a server
 * run's peak (find-peak) or its achieved QPS when valid and within the
 * SLO, any other run's samples per second when its latency is within the
 * SLO. Ties keep the first in sweep and request order. */
#include "report/report_util.h"

#include <math.h>
#include <stdlib.h>

typedef struct settings {
  int batch, threads, concurrency;
} settings;

static settings settings_of(const mb_bench_report *report) {
  const mb_bench_config *c = &report->config;
  settings s = {c->batch_size, c->threads, 1};
  for (int i = 0; i < report->n_results && report->results; i++)
    if (report->results[i].batch_size > 0) {
      s.batch = report->results[i].batch_size;
      break;
    }
  if (c->load.scenario == MB_LOAD_SERVER || c->load.scenario == MB_LOAD_OFFLINE)
    s.concurrency = MB_MAX(c->load.concurrency, 1);
  return s;
}

/* batch 4, 2 threads, concurrency 2 */
static const char *settings_text(char *buf, size_t size,
                                 const mb_bench_report *report) {
  settings s = settings_of(report);
  int n = snprintf(buf, size, "batch %d, %d thread%s", s.batch, s.threads,
                   s.threads == 1 ? "" : "s");
  const mb_load_config *l = &report->config.load;
  if (n > 0 && (size_t)n < size &&
      (l->scenario == MB_LOAD_SERVER || l->scenario == MB_LOAD_OFFLINE))
    snprintf(buf + n, size - (size_t)n, ", concurrency %d", s.concurrency);
  return buf;
}

/* "28678", "412", "3.75": whole numbers from 100 up, never an exponent. */
static const char *rate_text(char *buf, size_t size, double rate) {
  snprintf(buf, size, rate >= 100 ? "%.0f" : "%.3g", rate);
  return buf;
}

static bool before(settings a, settings b) {
  if (a.batch != b.batch)
    return a.batch < b.batch;
  if (a.concurrency != b.concurrency)
    return a.concurrency < b.concurrency;
  return a.threads < b.threads;
}

void mb_bench_recommend_slo(const mb_bench_report *const *reports, int n,
                            mb_slo_recommendation *out) {
  char a[160], b[160], q1[32], q2[32];
  if (!out)
    return;
  memset(out, 0, sizeof *out);
  out->report = out->result = -1;
  out->default_report = out->default_result = -1;
  if (!reports || n <= 0 || !reports[0]) {
    snprintf(out->summary, sizeof out->summary,
             "No SLO recommendation: no report.");
    return;
  }
  const mb_load_config *l = &reports[0]->config.load;
  out->slo_percentile = l->slo_percentile;
  out->slo_ms = l->slo_ms;
  if (!(l->slo_percentile > 0)) {
    snprintf(out->summary, sizeof out->summary,
             "No SLO recommendation: no --slo was given.");
    return;
  }
  const char *default_name = mb__report_default_conversion(reports[0]);
  settings untuned = {0, 0, 0};
  for (int m = 0; m < n; m++) {
    const mb_bench_report *rep = reports[m];
    if (!rep || !rep->results)
      continue;
    settings s = settings_of(rep);
    for (int i = 0; i < rep->n_results; i++) {
      const mb_bench_result *r = &rep->results[i];
      double qps = mb__report_served_qps(r, l->slo_percentile, l->slo_ms);
      if (qps > out->qps) {
        out->qps = qps;
        out->report = m;
        out->result = i;
        out->batch_size = s.batch;
        out->threads = s.threads;
        out->concurrency = s.concurrency;
      }
      if (r->conversion && strcmp(r->conversion, default_name) == 0 &&
          (out->default_report < 0 || before(s, untuned))) {
        untuned = s;
        out->default_report = m;
        out->default_result = i;
        out->default_qps = qps;
      }
    }
  }
  if (out->qps > 0 && out->default_qps > 0)
    out->headroom = out->qps / out->default_qps;

  /* The workload, when symbolic dimensions define it: "(seq=64)". */
  char workload[128] = "";
  const mb_shape_spec *spec = &reports[0]->config.shapes;
  for (int d = 0, w = 0;
       d < spec->n_dims && spec->dims && w >= 0 && (size_t)w < sizeof workload;
       d++)
    w += snprintf(workload + w, sizeof workload - (size_t)w, "%s%s=%lld%s",
                  d ? " " : " (", spec->dims[d].name,
                  (long long)spec->dims[d].value,
                  d + 1 == spec->n_dims ? ")" : "");
  int used = snprintf(out->summary, sizeof out->summary,
                      "Within the SLO p%g <= %g ms%s: ", l->slo_percentile,
                      l->slo_ms, workload);
  char *p = out->summary + used;
  size_t left = sizeof out->summary - (size_t)used;
  if (out->report < 0) {
    snprintf(p, left,
             "no conversion met it at accuracy in %d run%s (see each run's "
             "p%g latency and validity).",
             n, n == 1 ? "" : "s", l->slo_percentile);
    return;
  }
  const mb_bench_report *best = reports[out->report];
  const mb_bench_result *r = &best->results[out->result];
  int w = snprintf(p, left, "deploy %s at %s: %s requests/s",
                   mb__report_name(r), settings_text(a, sizeof a, best),
                   rate_text(q1, sizeof q1, out->qps));
  if (w < 0 || (size_t)w >= left)
    return;
  p += w;
  left -= (size_t)w;
  if (out->default_report < 0) {
    snprintf(p, left, " (the default %s did not run).", default_name);
  } else if (out->default_report == out->report &&
             out->default_result == out->result) {
    snprintf(p, left, ", the default itself.");
  } else if (out->default_qps > 0) {
    snprintf(p, left, ", %.2fx the default %s at %s (%s requests/s).",
             out->headroom, default_name,
             settings_text(b, sizeof b, reports[out->default_report]),
             rate_text(q2, sizeof q2, out->default_qps));
  } else {
    snprintf(p, left, "; the default %s at %s does not meet the SLO.",
             default_name,
             settings_text(b, sizeof b, reports[out->default_report]));
  }
}
