/* Shared pieces of the report writers; see report_util.h. */
#include "report/report_util.h"
#include "conversions/conversion.h"
#include "core/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

/* ---- atomic output files ---- */

mb_status mb__report_file_open(mb_report_file *rf, const char *path,
                               const char *what, mb_error *err) {
  /* A report is a file the user asked for: the umask gives its mode. */
  mb_status status = mb__atomic_file_open(&rf->af, AT_FDCWD, path,
                                          MB_FILE_MODE_UMASK, what, err);
  rf->f = rf->af.f;
  return status;
}

void mb__report_file_abort(mb_report_file *rf) {
  mb__atomic_file_abort(&rf->af);
  rf->f = NULL;
}

mb_status mb__report_file_commit(mb_report_file *rf, mb_error *err) {
  rf->f = NULL;
  return mb__atomic_file_commit(&rf->af, false, err);
}

/* ---- text ---- */

/* Strict UTF-8, as core checks it for the terminal. */
size_t mb__report_utf8_length(const char *text) {
  return mb__utf8_length(text);
}

/* ---- CSV cells ---- */

/* OWASP's list for CSV injection: a cell starting with one of these is a
 * formula to Excel, LibreOffice Calc or Google Sheets (tab and CR too, as
 * some of them skip leading blanks before looking). */
static bool starts_formula(const char *s) {
  return s[0] != '\0' && strchr("=+-@\t\r", s[0]) != NULL;
}

void mb__report_csv_cell(FILE *f, const char *s, mb_csv_cell kind) {
  if (!s)
    s = "";
  size_t n = strlen(s);
  bool neutralise = kind == MB_CSV_TEXT && starts_formula(s);
  bool quote = neutralise || strpbrk(s, ",\"\r\n") != NULL ||
               (n > 0 && (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' ||
                          s[n - 1] == '\t'));
  if (quote)
    fputc('"', f);
  if (neutralise)
    fputc('\'', f);
  while (*s) {
    size_t len = mb__report_utf8_length(s);
    if (len == 0) {
      fputs(MB_REPORT_REPLACEMENT_CHAR, f);
      s++;
      continue;
    }
    if (*s == '"')
      fputc('"', f);
    fwrite(s, 1, len, f);
    s += len;
  }
  if (quote)
    fputc('"', f);
}

/* ---- what a result says ---- */

const char *mb__report_name(const mb_bench_result *r) {
  return r->conversion && r->conversion[0] ? r->conversion : "?";
}

/* Words of a conversion name that set its precision. */
static const struct {
  const char *word;
  mb_precision precision;
} precision_words[] = {
    {"FP32", MB_PRECISION_FP32},
    {"FP16", MB_PRECISION_FP16},
    {"BF16", MB_PRECISION_BF16},
    {"INT8", MB_PRECISION_INT8},
};

static bool precision_from_name(const char *name, mb_precision *out) {
  bool found = false;
  /* Steps join with '+', words with '_'; the last precision word wins (a
   * later step is applied later). */
  while (name && *name) {
    size_t n = strcspn(name, "+_");
    for (size_t i = 0; i < MB_ARRAY_COUNT(precision_words); i++)
      if (strlen(precision_words[i].word) == n &&
          strncasecmp(name, precision_words[i].word, n) == 0) {
        *out = precision_words[i].precision;
        found = true;
      }
    name += n;
    if (*name)
      name++;
  }
  return found;
}

/* The registry row of that exact name: no probing, no suggestions. */
static const mb_conversion_def *def_named(const char *name) {
  for (int i = 0; i < mb_conversion_count(); i++) {
    const mb_conversion_def *def = mb__conversion_def(i);
    if (def && strcmp(def->name, name) == 0)
      return def;
  }
  return NULL;
}

mb_precision mb__report_precision(const mb_bench_result *r, bool *known_out) {
  const mb_conversion_def *def = mb__conversion_def(r->conversion_index);
  mb_precision precision = MB_PRECISION_FP32;
  bool known = false;
  if (r->conversion) {
    if (!def || strcmp(def->name, r->conversion) != 0)
      def = def_named(r->conversion);
    if (def) {
      precision = def->precision;
      known = true;
    } else {
      known = precision_from_name(r->conversion, &precision);
    }
  }
  if (known_out)
    *known_out = known;
  return precision;
}

const char *mb__report_built_text(const mb_bench_result *r, char *buf,
                                  size_t size) {
  char load[48] = "", peak[48] = "";
  if (r->load_ms >= 0 && isfinite(r->load_ms))
    snprintf(load, sizeof load, ", loaded in %.4g ms", r->load_ms);
  if (r->peak_rss_mb > 0 && isfinite(r->peak_rss_mb))
    snprintf(peak, sizeof peak, ", peak %.1f MB", r->peak_rss_mb);
  if (r->cache_hit == 1)
    snprintf(buf, size, "from the build cache%s%s", load, peak);
  else if (r->cache_hit == 0 && r->build_ms >= 0)
    snprintf(buf, size, "built in %.4g ms (cached)%s%s", r->build_ms, load,
             peak);
  else
    snprintf(buf, size, "nothing cached (no build step or no cache)%s%s", load,
             peak);
  return buf;
}

bool mb__report_has_median(const mb_bench_result *r) {
  return r->status == MB_BENCH_OK && isfinite(r->latency_ms.median) &&
         r->latency_ms.median >= 0;
}

double mb__report_max_abs_err(const mb_bench_result *r) {
  if (!r->has_accuracy)
    return -1;
  if (isnan(r->max_abs_err))
    return NAN;
  double worst = r->max_abs_err >= 0 ? r->max_abs_err : 0;
  for (int i = 0; i < r->n_outputs && r->accuracy; i++) {
    double e = r->accuracy[i].max_abs_err;
    if (isnan(e))
      return NAN;
    worst = MB_MAX(worst, e);
  }
  return worst;
}

double mb__report_min_cosine(const mb_bench_result *r) {
  if (!r->has_accuracy || !r->accuracy || r->n_outputs <= 0)
    return NAN;
  double lowest = INFINITY;
  for (int i = 0; i < r->n_outputs; i++) {
    double c = r->accuracy[i].cosine;
    if (isnan(c))
      return NAN;
    lowest = MB_MIN(lowest, c);
  }
  return lowest;
}

static bool has_warning(const mb_bench_result *r, const char *text,
                        bool at_start) {
  for (int i = 0; i < r->n_warnings && r->warnings; i++) {
    const char *w = r->warnings[i];
    if (!w)
      continue;
    if (at_start ? strncasecmp(w, text, strlen(text)) == 0
                 : strstr(w, text) != NULL)
      return true;
  }
  return false;
}

/* fp32 (and unknown precision): the worker compares every element with
 * atol + rtol * |expected| and warns when any is outside; the aggregates
 * in the result cannot redo that test (max_abs_err and max_rel_err may come
 * from different elements), so its warning is what decides. NaN errors
 * mean the comparison itself broke down. Reduced precisions are expected
 * to miss fp32 tolerances, so they are judged by direction instead: the
 * cosine of every output. */
mb_accuracy_criterion mb__report_criterion(const mb_bench_result *r) {
  if (r->accuracy_criterion == MB_ACCURACY_TOLERANCE ||
      r->accuracy_criterion == MB_ACCURACY_COSINE)
    return r->accuracy_criterion;
  return mb__report_precision(r, NULL) == MB_PRECISION_FP32
             ? MB_ACCURACY_TOLERANCE
             : MB_ACCURACY_COSINE;
}

/* The criterion is the worker's (mb__report_criterion): a pre-quantised
 * model's fp32 conversions are judged by cosine too. */
bool mb__report_is_accurate(const mb_bench_result *r) {
  if (r->status != MB_BENCH_OK || !r->has_accuracy)
    return false;
  if (has_warning(r, MB_REPORT_INACCURATE_PREFIX, true))
    return false;
  if (mb__report_criterion(r) == MB_ACCURACY_TOLERANCE) {
    if (isnan(mb__report_max_abs_err(r)))
      return false;
    return !has_warning(r, MB_REPORT_MISMATCH_WARNING, false);
  }
  double cosine = mb__report_min_cosine(r);
  /* No outputs compared: nothing is known to be wrong. */
  if (r->n_outputs <= 0)
    return true;
  /* Flagged by the worker against the run's --max-error, or below the
   * cosine recommendations always ask for. */
  return !isnan(cosine) && !r->inaccurate && cosine >= MB_REPORT_MIN_COSINE;
}

/* ---- order ---- */

static double median_key(const mb_bench_result *r) {
  return mb__report_has_median(r) ? r->latency_ms.median : INFINITY;
}

/* Insertion sort: stable, and n is small. */
void mb__report_sort_rows(const mb_bench_report *report, int *order) {
  int n = report->n_results;
  for (int i = 0; i < n; i++)
    order[i] = i;
  for (int i = 1; i < n; i++) {
    int cur = order[i], j = i;
    const mb_bench_result *c = &report->results[cur];
    bool c_ok = c->status == MB_BENCH_OK;
    while (j > 0) {
      const mb_bench_result *p = &report->results[order[j - 1]];
      bool p_ok = p->status == MB_BENCH_OK, before;
      if (c_ok != p_ok)
        before = c_ok;
      else
        before = c_ok && median_key(c) < median_key(p);
      if (!before)
        break;
      order[j] = order[j - 1];
      j--;
    }
    order[j] = cur;
  }
}

/* ---- percentiles ---- */

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

bool mb__report_percentiles(const double *samples, int64_t n, const double *p,
                            int n_p, double *values_out) {
  if (!samples || n <= 0 || (uint64_t)n > SIZE_MAX / sizeof(double))
    return false;
  double *sorted = malloc(sizeof(double) * (size_t)n);
  if (!sorted)
    return false;
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++)
    if (isfinite(samples[i]))
      sorted[m++] = samples[i];
  if (m > 0) {
    qsort(sorted, (size_t)m, sizeof(double), compare_double);
    for (int k = 0; k < n_p; k++)
      values_out[k] = mb__percentile(sorted, m, p[k]);
  }
  free(sorted);
  return m > 0;
}

bool mb__report_spread(const mb_bench_result *r, double *lo_out,
                       double *hi_out) {
  static const double p10_p90[2] = {10.0, 90.0};
  double v[2];
  if (mb__report_percentiles(r->samples_ms, r->n_samples_ms, p10_p90, 2, v)) {
    *lo_out = v[0];
    *hi_out = v[1];
    return true;
  }
  const mb_latency_stats *s = &r->latency_ms;
  if (r->iterations > 0 && isfinite(s->min) && isfinite(s->p90) &&
      s->min <= s->p90) {
    *lo_out = s->min;
    *hi_out = s->p90;
    return true;
  }
  return false;
}

/* ---- number formats ---- */

/* Milliseconds with about four significant digits, as the console table. */
void mb__report_format_ms(char *buf, size_t size, double ms) {
  if (!isfinite(ms) || ms < 0)
    snprintf(buf, size, "-");
  else if (ms >= 100)
    snprintf(buf, size, "%.1f", ms);
  else if (ms >= 1)
    snprintf(buf, size, "%.3f", ms);
  else
    snprintf(buf, size, "%.4f", ms);
}

void mb__report_format_sps(char *buf, size_t size, double sps) {
  if (!isfinite(sps) || sps <= 0)
    snprintf(buf, size, "-");
  else if (sps >= 10)
    snprintf(buf, size, "%.1f", sps);
  else if (sps >= 0.01)
    snprintf(buf, size, "%.3f", sps);
  else
    snprintf(buf, size, "%.2e", sps);
}

void mb__report_format_err(char *buf, size_t size, double err) {
  if (isnan(err))
    snprintf(buf, size, "NaN");
  else if (err < 0)
    snprintf(buf, size, "-");
  else if (err == 0)
    snprintf(buf, size, "0");
  else
    snprintf(buf, size, "%.2e", err);
}

static bool same_kind(const mb_machine_info *a, const mb_machine_info *b) {
  return a->cores == b->cores && strcmp(a->cpu_model, b->cpu_model) == 0;
}

static bool has_machine(const mb_bench_result *r) {
  return r->machine.cpu_model[0] || r->machine.cores > 0;
}

int mb__report_machine_kinds(const mb_bench_report *report, int *kind_out) {
  int kinds = 0;
  for (int i = 0; i < report->n_results; i++) {
    const mb_bench_result *r = &report->results[i];
    int kind = -1, first = -1;
    for (int j = 0; j < i && first < 0 && has_machine(r); j++)
      if (has_machine(&report->results[j]) &&
          same_kind(&report->results[j].machine, &r->machine))
        first = j;
    if (has_machine(r) && first < 0)
      kind = kinds++;
    else if (first >= 0)
      kind = kind_out ? kind_out[first] : 0;
    if (kind_out)
      kind_out[i] = kind;
  }
  return kinds;
}

const char *mb_bench_result_precision(const mb_bench_result *r, char *buf,
                                      size_t size) {
  bool known;
  mb_precision precision = mb__report_precision(r, &known);
  if (!buf || !size)
    return buf;
  if (!known)
    snprintf(buf, size, "unknown");
  else if (r->precision_share >= 0 && r->precision_share < 0.9995)
    snprintf(buf, size, "%s (%.0f%% of FLOPs)", mb_precision_name(precision),
             100.0 * r->precision_share);
  else
    snprintf(buf, size, "%s", mb_precision_name(precision));
  return buf;
}

const char *mb__report_label(const mb_bench_report *report, const char *key,
                             size_t key_len) {
  for (int i = 0; report && i < report->n_labels && report->labels; i++) {
    const char *label = report->labels[i];
    if (strncmp(label, key, key_len) == 0 && label[key_len] == '=')
      return label + key_len + 1;
  }
  return NULL;
}

int mb__report_label_keys(const mb_bench_report *const *reports, int n,
                          const char **keys, size_t *keys_len, int max) {
  int count = 0;
  for (int m = 0; m < n; m++)
    for (int i = 0; reports[m] && reports[m]->labels &&
                    i < reports[m]->n_labels && count < max;
         i++) {
      const char *label = reports[m]->labels[i];
      size_t len = strcspn(label, "=");
      bool seen = false;
      for (int k = 0; k < count && !seen; k++)
        seen = keys_len[k] == len && strncmp(keys[k], label, len) == 0;
      if (!seen) {
        keys[count] = label;
        keys_len[count++] = len;
      }
    }
  return count;
}

/* ---- serving within an SLO ---- */

const char *mb__report_default_conversion(const mb_bench_report *report) {
  return report->model_formats & (1u << MB_MODEL_FORMAT_PYTORCH) ? "EAGER"
                                                                 : "ORT_CPU";
}

bool mb__report_latency_at(const mb_bench_result *r, double p, double *out) {
  static const struct {
    double p;
    size_t offset;
  } stats[] = {
      {50, offsetof(mb_latency_stats, median)},
      {90, offsetof(mb_latency_stats, p90)},
      {95, offsetof(mb_latency_stats, p95)},
      {99, offsetof(mb_latency_stats, p99)},
  };
  if (!mb__report_has_median(r))
    return false;
  if (r->samples_ms && r->n_samples_ms > 0 &&
      mb__report_percentiles(r->samples_ms, r->n_samples_ms, &p, 1, out))
    return true;
  for (size_t i = 0; i < MB_ARRAY_COUNT(stats); i++)
    if (stats[i].p == p) {
      memcpy(out, (const char *)&r->latency_ms + stats[i].offset, sizeof *out);
      return isfinite(*out);
    }
  return false;
}

double mb__report_served_qps(const mb_bench_result *r, double p,
                             double slo_ms) {
  const mb_load_stats *l = &r->load;
  double batch = (double)MB_MAX(r->batch_size, 1), latency;
  if (!mb__report_has_median(r) || !mb__report_is_accurate(r) || !(p > 0))
    return 0;
  if (l->scenario == MB_LOAD_SERVER) {
    if (l->peak_qps > 0)
      return l->peak_qps * batch;
    return l->valid && l->slo_met == 1 ? l->achieved_qps * batch : 0;
  }
  if (l->scenario != MB_LOAD_NONE && !l->valid)
    return 0;
  if (!mb__report_latency_at(r, p, &latency) || latency > slo_ms)
    return 0;
  return isfinite(r->throughput_sps) && r->throughput_sps > 0
             ? r->throughput_sps
             : 0;
}

bool mb__report_same_workload(const mb_bench_report *a,
                              const mb_bench_report *b) {
  if (strcmp(a->model_sha256, b->model_sha256) != 0 ||
      strcmp(a->model_path, b->model_path) != 0 ||
      a->config.shapes.n_dims != b->config.shapes.n_dims)
    return false;
  for (int i = 0; i < a->config.shapes.n_dims; i++) {
    const mb_dim_value *d = &a->config.shapes.dims[i];
    bool same = false;
    for (int k = 0; k < b->config.shapes.n_dims && !same; k++) {
      const mb_dim_value *e = &b->config.shapes.dims[k];
      same = d->name && e->name && strcmp(d->name, e->name) == 0 &&
             d->value == e->value;
    }
    if (!same)
      return false;
  }
  return true;
}

int mb__report_workload_group(const mb_bench_report *const *reports, int n,
                              int i, const mb_bench_report **sel) {
  for (int k = 0; k < i; k++)
    if (mb__report_same_workload(reports[k], reports[i]))
      return 0;
  int count = 0;
  for (int k = i; k < n; k++)
    if (mb__report_same_workload(reports[i], reports[k]))
      sel[count++] = reports[k];
  return count;
}

bool mb__report_any_cost_or_energy(const mb_bench_report *report) {
  for (int i = 0; i < report->n_results && report->results; i++) {
    const mb_bench_result *r = &report->results[i];
    if (r->cost_per_million > 0 || r->energy.available)
      return true;
  }
  return false;
}

bool mb__report_any_cold(const mb_bench_report *report) {
  for (int i = 0; i < report->n_results && report->results; i++)
    if (report->results[i].cold.measured)
      return true;
  return false;
}

const char *mb__report_energy_text(const mb_bench_result *r, char *buf,
                                   size_t size) {
  if (r->energy.available)
    snprintf(buf, size, "%.4g J", r->energy.joules_per_inference);
  else if (r->energy.unavailable[0])
    snprintf(buf, size, "n/a: %s", r->energy.unavailable);
  else
    snprintf(buf, size, "-");
  return buf;
}

int mb__report_cheapest(const mb_bench_report *report) {
  int best = -1;
  for (int i = 0; i < report->n_results && report->results; i++) {
    const mb_bench_result *r = &report->results[i];
    if (r->status != MB_BENCH_OK || !(r->cost_per_million > 0) ||
        !mb__report_is_accurate(r))
      continue;
    if (best < 0 ||
        r->cost_per_million < report->results[best].cost_per_million)
      best = i;
  }
  return best;
}

const char *mb__report_common_energy_reason(const mb_bench_report *report) {
  const char *reason = NULL;
  for (int i = 0; i < report->n_results && report->results; i++) {
    const mb_bench_result *r = &report->results[i];
    if (r->status != MB_BENCH_OK)
      continue;
    if (r->energy.available || !r->energy.unavailable[0] ||
        (reason && strcmp(reason, r->energy.unavailable) != 0))
      return NULL;
    reason = r->energy.unavailable;
  }
  return reason;
}
