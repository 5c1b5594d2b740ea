/* The CSV report: one header row, then one row per model x conversion, in
 * request order, for spreadsheets and scripts.
 *
 * RFC 4180: CRLF line ends, a field is quoted when it holds a comma, quote,
 * CR, LF or leading/trailing space, and quotes inside are doubled. Text is
 * UTF-8 (invalid bytes become U+FFFD). Numbers
 * are plain C-locale decimals. A text cell that a spreadsheet would read as
 * a formula (leading '=', '+', '-', '@', tab or CR: a label, a model path
 * or an error message) starts with a single quote (report_util.h). A cell never
 * stays empty when a number is missing: it says why, so a script can tell "not
 * measured" from zero: n/a: failed (error|timeout|crashed)   the conversion
 * failed n/a: unavailable                      not usable on this machine n/a:
 * not run (skipped)                skipped (fail-fast, ...) n/a: not measured
 * ok, but this number is unknown n/a: no reference                     ok,
 * accuracy could not be checked n/a: no baseline                      ok, the
 * baseline has no median A failed conversion that measured something before
 * failing (a timeout in the timed phase) keeps those numbers, as in the JSON
 * report. */
#include "report/report_util.h"

#include <math.h>
#include <stdlib.h>

/* Why a number of a result with this status is missing. */
static const char *const missing_text[MB_BENCH_STATUS_COUNT] = {
    [MB_BENCH_OK] = "n/a: not measured",
    [MB_BENCH_ERROR] = "n/a: failed (error)",
    [MB_BENCH_TIMEOUT] = "n/a: failed (timeout)",
    [MB_BENCH_CRASHED] = "n/a: failed (crashed)",
    [MB_BENCH_UNAVAILABLE] = "n/a: unavailable",
    [MB_BENCH_SKIPPED] = "n/a: not run (skipped)",
    [MB_BENCH_BUILT] = "n/a: build only",
};

/* The columns, in order; write_row writes the cells in the same order. */
static const char *const columns[] = {
    "model", "model_sha256", "conversion", "conversion_id", "runtime",
    "runtime_version", "device", "precision", "status", "error", "median_ms",
    "mean_ms", "p90_ms", "p95_ms", "p99_ms", "min_ms", "max_ms", "stddev_ms",
    "cv", "throughput_sps", "speedup_vs_baseline", "baseline", "max_abs_err",
    "min_cosine", "accurate", "load_ms", "first_run_ms", "peak_rss_mb",
    "iterations", "batch_size", "warnings", "task_accuracy", "script",
    "model_location",
    /* Sweeps and load scenarios (modelbench load). */
    "sweep_point", "scenario", "concurrency", "target_qps", "achieved_qps",
    "load_valid", "invalid_reason", "slo_latency_ms", "slo_met",
    "over_slo_share", "queue_depth_mean", "peak_qps",
    /* Energy and cost, then the cold start (--cold). */
    "joules_per_inference", "cost_per_million", "cold_build_miss_ms",
    "cold_build_hit_ms", "cold_load_ms", "cold_first_inference_ms",
    "iterations_to_steady", "time_to_first_result_ms",
    /* The roofline (docs/json-schema.md, "roofline"). */
    "achieved_gflops", "bytes_per_run", "arithmetic_intensity", "peak_gflops",
    "peak_share", "bandwidth_share", "bound",
    /* then one "label:KEY" column per label key of any report */
};

/* Label columns at most (keys beyond are left out of the CSV). */
#define MAX_LABEL_COLUMNS 64

typedef struct row_writer {
  FILE *f;
  int n_cells;
  int n_label_columns;
} row_writer;

static void put_cell(row_writer *w, const char *s, mb_csv_cell kind) {
  if (w->n_cells++)
    fputc(',', w->f);
  mb__report_csv_cell(w->f, s, kind);
}

/* Text: a name, path, label or message, neutralised when a spreadsheet
 * would take it for a formula. */
static void put_field(row_writer *w, const char *s) {
  put_cell(w, s, MB_CSV_TEXT);
}

static void end_row(row_writer *w) {
  /* Every row has one cell per column: write_row follows `columns`, then
   * the label columns. */
  MB_ASSERT(w->n_cells == (int)MB_ARRAY_COUNT(columns) + w->n_label_columns);
  fputs("\r\n", w->f);
  w->n_cells = 0;
}

static const char *missing(const mb_bench_result *r) {
  return (unsigned)r->status < MB_BENCH_STATUS_COUNT ? missing_text[r->status]
                                                     : "n/a: failed (invalid)";
}

/* A number when known and finite, else why not. */
static void put_number(row_writer *w, const mb_bench_result *r, double v,
                       bool known) {
  if (!known || !isfinite(v)) {
    put_field(w, missing(r));
    return;
  }
  char buf[64];
  snprintf(buf, sizeof buf, "%.6g", v);
  put_cell(w, buf, MB_CSV_NUMBER);
}

static void put_int(row_writer *w, int64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%lld", (long long)v);
  put_cell(w, buf, MB_CSV_NUMBER);
}

/* Accuracy numbers: unknown for a different reason than timings. */
static void put_accuracy(row_writer *w, const mb_bench_result *r, double v) {
  if (r->status != MB_BENCH_OK && !r->has_accuracy)
    put_field(w, missing(r));
  else if (!r->has_accuracy)
    put_field(w, "n/a: no reference");
  else if (isnan(v))
    put_field(w, "NaN");
  else if (v < 0 || !isfinite(v))
    put_field(w, "n/a: no outputs compared");
  else
    put_number(w, r, v, true);
}

static void put_warnings(row_writer *w, const mb_bench_result *r) {
  size_t size = 1;
  for (int i = 0; i < r->n_warnings && r->warnings; i++)
    if (r->warnings[i])
      size += strlen(r->warnings[i]) + 2;
  char *joined = malloc(size);
  if (!joined) {
    put_field(w, "(out of memory)");
    return;
  }
  joined[0] = '\0';
  size_t used = 0;
  for (int i = 0; i < r->n_warnings && r->warnings; i++) {
    if (!r->warnings[i])
      continue;
    used += (size_t)snprintf(joined + used, size - used, "%s%s",
                             used ? "; " : "", r->warnings[i]);
  }
  put_field(w, joined);
  free(joined);
}

/* The sweep point and what a load run measured. */
/* Energy (or why not), cost (or why not) and the cold start. */
static void put_cost_energy_cold(row_writer *w, const mb_bench_result *r) {
  bool ok = r->status == MB_BENCH_OK;
  char why[256];
  if (r->energy.available) {
    put_number(w, r, r->energy.joules_per_inference, true);
  } else if (ok && r->energy.unavailable[0]) {
    snprintf(why, sizeof why, "n/a: %s", r->energy.unavailable);
    put_field(w, why);
  } else {
    put_field(w, missing(r));
  }
  if (r->cost_per_million > 0)
    put_number(w, r, r->cost_per_million, true);
  else
    put_field(w, ok ? "n/a: no --price-per-core-hour" : missing(r));
  const mb_cold_start *c = &r->cold;
  const double cold_ms[] = {c->build_miss_ms, c->build_hit_ms, c->load_ms,
                            c->first_inference_ms};
  const char *no_cold = ok ? "n/a: no --cold" : missing(r);
  for (size_t i = 0; i < MB_ARRAY_COUNT(cold_ms); i++)
    if (c->measured && cold_ms[i] >= 0)
      put_number(w, r, cold_ms[i], true);
    else
      put_field(w, c->measured ? "n/a: unknown" : no_cold);
  if (c->measured && c->iterations_to_steady >= 0)
    put_int(w, c->iterations_to_steady);
  else
    put_field(w, c->measured ? "n/a: never settled" : no_cold);
  if (c->measured && c->time_to_first_result_ms >= 0)
    put_number(w, r, c->time_to_first_result_ms, true);
  else
    put_field(w, c->measured ? "n/a: unknown" : no_cold);
}

/* The roofline's cells: numbers, or why there are none. */
static void put_roofline(row_writer *w, const mb_bench_result *r) {
  const mb_roofline *f = &r->roofline;
  bool known = f->bound != MB_ROOFLINE_UNKNOWN;
  const char *why =
      r->status != MB_BENCH_OK ? missing(r) : "n/a: no peaks or FLOPs";
  bool bytes = known && f->bytes > 0;
  const double cells[] = {f->gflops,      f->bytes,      f->intensity,
                          f->peak_gflops, f->peak_share, f->bandwidth_share};
  const bool have[] = {known, bytes, bytes, known, known, bytes};
  for (size_t i = 0; i < MB_ARRAY_COUNT(cells); i++) {
    if (have[i])
      put_number(w, r, cells[i], true);
    else
      put_field(w, known ? "n/a: bytes unknown" : why);
  }
  put_field(w, known ? mb_roofline_bound_name(f->bound) : why);
}

static void put_load(row_writer *w, const mb_bench_report *report,
                     const mb_bench_result *r) {
  const mb_load_stats *l = &r->load;
  bool load = l->scenario != MB_LOAD_NONE && l->queries > 0;
  bool server = l->scenario == MB_LOAD_SERVER;
  const char *why =
      r->status == MB_BENCH_OK ? "n/a: not a load run" : missing(r);
  put_field(w, report->sweep_point);
  put_field(w, mb_load_scenario_name(report->config.load.scenario));
  if (load)
    put_int(w, l->concurrency);
  else
    put_field(w, why);
  if (load && server)
    put_number(w, r, l->target_qps, true);
  else
    put_field(w, load ? "n/a: not a server run" : why);
  if (load)
    put_number(w, r, l->achieved_qps, true);
  else
    put_field(w, why);
  put_field(w, !load ? why : l->valid ? "yes" : "no");
  put_field(w, load && !l->valid ? l->invalid_reason : "");
  bool slo = load && l->slo_met >= 0;
  if (slo)
    put_number(w, r, l->slo_latency_ms, true);
  else
    put_field(w, load ? "n/a: no SLO" : why);
  put_field(w, slo ? (l->slo_met ? "yes" : "no") : load ? "n/a: no SLO" : why);
  if (slo)
    put_number(w, r, l->over_slo_share, true);
  else
    put_field(w, load ? "n/a: no SLO" : why);
  if (load && server)
    put_number(w, r, l->queue_depth_mean, true);
  else
    put_field(w, load ? "n/a: not a server run" : why);
  if (load && l->n_trials > 0)
    put_number(w, r, l->peak_qps, true);
  else
    put_field(w, load ? "n/a: no find-peak" : why);
}

static void write_row(row_writer *w, const mb_bench_report *report, int index,
                      const char *const *label_keys,
                      const size_t *label_keys_len, int n_label_keys) {
  const mb_bench_result *r = &report->results[index];
  const mb_latency_stats *s = &r->latency_ms;
  bool ok = r->status == MB_BENCH_OK;
  bool timed = r->iterations > 0;
  bool precision_known;
  mb_precision precision = mb__report_precision(r, &precision_known);

  put_field(w, report->model_path);
  put_field(w, report->model_sha256);
  put_field(w, r->conversion ? r->conversion : "");
  put_int(w, r->conversion_id);
  put_field(w, r->runtime);
  put_field(w, r->runtime_version);
  put_field(w, r->device);
  put_field(w, precision_known ? mb_precision_name(precision) : "unknown");
  put_field(w, mb_bench_status_name(r->status));
  put_field(w, ok ? "" : (r->error[0] ? r->error : "unknown error"));

  put_number(w, r, s->median, timed);
  put_number(w, r, s->mean, timed);
  put_number(w, r, s->p90, timed);
  put_number(w, r, s->p95, timed);
  put_number(w, r, s->p99, timed);
  put_number(w, r, s->min, timed);
  put_number(w, r, s->max, timed);
  put_number(w, r, s->stddev, timed);
  put_number(w, r, s->cv, timed);
  put_number(w, r, r->throughput_sps, timed);
  if (ok && !(r->speedup_vs_baseline > 0))
    put_field(w, "n/a: no baseline");
  else
    put_number(w, r, r->speedup_vs_baseline, r->speedup_vs_baseline > 0);
  put_field(w, index == report->baseline_result ? "yes" : "no");

  put_accuracy(w, r, mb__report_max_abs_err(r));
  put_accuracy(w, r, mb__report_min_cosine(r));
  put_field(w, !ok                         ? missing(r)
               : !r->has_accuracy          ? "n/a: no reference"
               : mb__report_is_accurate(r) ? "yes"
                                           : "no");
  put_number(w, r, r->load_ms, ok || r->load_ms > 0);
  put_number(w, r, r->first_run_ms, ok || r->first_run_ms > 0);
  put_number(w, r, r->peak_rss_mb, r->peak_rss_mb > 0);
  if (ok || timed)
    put_int(w, r->iterations);
  else
    put_field(w, missing(r));
  if (r->batch_size > 0)
    put_int(w, r->batch_size);
  else
    put_field(w, missing(r));
  put_warnings(w, r);
  if (r->task_rows > 0)
    put_number(w, r, r->task_accuracy, true);
  else
    put_field(w, ok ? "n/a: no labels" : missing(r));
  put_field(w, report->model_script);
  put_field(w, report->model_location);
  put_load(w, report, r);
  put_cost_energy_cold(w, r);
  put_roofline(w, r);
  for (int k = 0; k < n_label_keys; k++)
    put_field(w, mb__report_label(report, label_keys[k], label_keys_len[k]));
  end_row(w);
}

mb_status mb_bench_reports_write_csv(const mb_bench_report *const *reports,
                                     int n, const char *path, mb_error *err) {
  if (n < 0 || (n > 0 && !reports))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "CSV report: no reports given");
  mb_report_file rf;
  mb_status status = mb__report_file_open(&rf, path, "CSV report", err);
  if (status)
    return status;
  const char *label_keys[MAX_LABEL_COLUMNS];
  size_t label_keys_len[MAX_LABEL_COLUMNS];
  int n_label_keys = mb__report_label_keys(reports, n, label_keys,
                                           label_keys_len, MAX_LABEL_COLUMNS);
  row_writer w = {rf.f, 0, n_label_keys};
  for (size_t i = 0; i < MB_ARRAY_COUNT(columns); i++)
    put_field(&w, columns[i]);
  for (int k = 0; k < n_label_keys; k++) {
    char name[160];
    snprintf(name, sizeof name, "label:%.*s", (int)label_keys_len[k],
             label_keys[k]);
    put_field(&w, name);
  }
  end_row(&w);
  for (int m = 0; m < n; m++) {
    const mb_bench_report *report = reports[m];
    for (int i = 0; report && report->results && i < report->n_results; i++)
      write_row(&w, report, i, label_keys, label_keys_len, n_label_keys);
  }
  return mb__report_file_commit(&rf, err);
}
