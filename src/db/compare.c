/* Comparing two runs: statistics (Mann-Whitney U, bootstrap interval of the
 * median change), the per-conversion verdicts, and the loader of JSON
 * reports so that a file and a stored run compare alike. */
#include "db/compare.h"
#include "core/json_parse.h"

#include <math.h>
#include <stdlib.h>

static const char *const verdict_names[] = {
#define MB_X(name, str) str,
    MB_COMPARE_VERDICT_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(verdict_names) == MB_COMPARE_VERDICT_COUNT,
               "one name per verdict");

const char *mb__compare_verdict_name(mb_compare_verdict verdict) {
  return (unsigned)verdict < MB_COMPARE_VERDICT_COUNT ? verdict_names[verdict]
                                                      : "invalid";
}

void mb__compare_options_init(mb_compare_options *options) {
  memset(options, 0, sizeof *options);
  options->alpha = 0.05;
  options->resamples = 2000;
  options->seed = 0x6d6f64656c62656eULL; /* "modelben" */
  options->fail_on_regression_pct = -1;
}

/* ---- comparing runs ---- */

mb_status mb__compare_samples(const double *a, int64_t na, const double *b,
                              int64_t nb, const mb_compare_options *options,
                              mb_compare_row *row, mb_error *err) {
  mb_status status;
  row->n_a = na;
  row->n_b = nb;
  row->median_a_ms = mb__median(a, na);
  row->median_b_ms = mb__median(b, nb);
  row->change_pct =
      row->median_a_ms > 0
          ? 100.0 * (row->median_b_ms - row->median_a_ms) / row->median_a_ms
          : NAN;
  row->ci_low_pct = row->ci_high_pct = row->p_value = NAN;
  row->significant = row->regression = false;
  row->verdict = MB_COMPARE_TOO_FEW_SAMPLES;
  if (na < MB_COMPARE_MIN_SAMPLES || nb < MB_COMPARE_MIN_SAMPLES ||
      !(row->median_a_ms > 0))
    return MB_STATUS_OK;
  mb_mann_whitney mw;
  status = mb__mann_whitney(a, na, b, nb, &mw, err);
  if (status)
    return status;
  status = mb__bootstrap_median_change(
      a, na, b, nb, options->resamples, 1 - options->alpha, options->seed,
      &row->ci_low_pct, &row->ci_high_pct, err);
  if (status)
    return status;
  row->p_value = mw.p_value;
  bool ci_excludes_zero = row->ci_low_pct > 0 || row->ci_high_pct < 0;
  row->significant = ci_excludes_zero && mw.p_value < options->alpha;
  if (!row->significant)
    row->verdict = MB_COMPARE_SAME;
  else
    row->verdict = row->change_pct > 0 ? MB_COMPARE_SLOWER : MB_COMPARE_FASTER;
  row->regression = row->verdict == MB_COMPARE_SLOWER &&
                    options->fail_on_regression_pct >= 0 &&
                    row->change_pct > options->fail_on_regression_pct;
  return MB_STATUS_OK;
}

static const mb_db_result *find_result(const mb_db_run *run,
                                       const char *conversion) {
  for (int i = 0; i < run->n_results; i++)
    if (strcmp(run->results[i].conversion, conversion) == 0)
      return &run->results[i];
  return NULL;
}

/* Stored median when a side has no samples (a report written without
 * them); NAN when unknown. */
static double stored_median(const mb_db_result *r) {
  return r && r->status == MB_BENCH_OK ? r->median_ms : NAN;
}

static mb_status compare_pair(const mb_db_result *a, const mb_db_result *b,
                              const mb_compare_options *options,
                              mb_compare_row *row, mb_error *err) {
  memset(row, 0, sizeof *row);
  row->conversion = a ? a->conversion : b->conversion;
  row->a = a;
  row->b = b;
  row->median_a_ms = stored_median(a);
  row->median_b_ms = stored_median(b);
  row->change_pct = row->ci_low_pct = row->ci_high_pct = row->p_value = NAN;
  if (!a || !b) {
    row->verdict = a ? MB_COMPARE_REMOVED : MB_COMPARE_ADDED;
    return MB_STATUS_OK;
  }
  if (a->status != MB_BENCH_OK || b->status != MB_BENCH_OK) {
    row->verdict = MB_COMPARE_FAILED;
    return MB_STATUS_OK;
  }
  mb_status status =
      mb__compare_samples(a->samples_ms, a->n_samples, b->samples_ms,
                          b->n_samples, options, row, err);
  if (status)
    return mb__error_prefix(err, status, "%s", row->conversion);
  /* Without samples, the stored medians still give a change. */
  if (isnan(row->median_a_ms))
    row->median_a_ms = a->median_ms;
  if (isnan(row->median_b_ms))
    row->median_b_ms = b->median_ms;
  if (isnan(row->change_pct) && row->median_a_ms > 0)
    row->change_pct =
        100.0 * (row->median_b_ms - row->median_a_ms) / row->median_a_ms;
  return MB_STATUS_OK;
}

mb_status mb__compare_runs(const mb_db_run *a, const mb_db_run *b,
                           const mb_compare_options *options,
                           mb_compare_row **rows_out, int *n_rows_out,
                           mb_error *err) {
  int n = 0;
  mb_compare_row *rows =
      calloc((size_t)a->n_results + (size_t)b->n_results + 1, sizeof *rows);
  if (!rows)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "compare: out of memory");
  for (int i = 0; i < a->n_results; i++) {
    const mb_db_result *ra = &a->results[i];
    if (find_result(a, ra->conversion) != ra)
      continue; /* a name twice in one run: the first one counts */
    mb_status status = compare_pair(ra, find_result(b, ra->conversion), options,
                                    &rows[n++], err);
    if (status) {
      free(rows);
      return status;
    }
  }
  for (int i = 0; i < b->n_results; i++) {
    const mb_db_result *rb = &b->results[i];
    if (find_result(b, rb->conversion) != rb || find_result(a, rb->conversion))
      continue;
    compare_pair(NULL, rb, options, &rows[n++], err); /* cannot fail */
  }
  *rows_out = rows;
  *n_rows_out = n;
  return MB_STATUS_OK;
}

/* ---- JSON reports ---- */

typedef struct json_loader {
  const char *path;
  mb_db_run *run;
  mb_error *err;
} json_loader;

#define field_error(l, v, ...)                                                 \
  mb__json_value_error((l)->err, (l)->path, v, __VA_ARGS__)

/* An optional string member: NULL when missing or null. */
static mb_status get_string(json_loader *l, const mb_json_value *obj,
                            const char *key, const char **out) {
  const mb_json_value *v = mb__json_find(obj, key);
  *out = NULL;
  if (!v || v->type == MB_JSON_NULL)
    return MB_STATUS_OK;
  if (v->type != MB_JSON_STRING)
    return field_error(l, v, "\"%s\": expected a string, found %s", key,
                       mb__json_type_name(v->type));
  *out = mb__arena_strdup(l->run->arena, v->string);
  return *out ? MB_STATUS_OK
              : mb__error(l->err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory",
                          l->path);
}

/* An optional number member: NAN when missing or null. */
static mb_status get_number(json_loader *l, const mb_json_value *obj,
                            const char *key, double *out) {
  const mb_json_value *v = obj ? mb__json_find(obj, key) : NULL;
  *out = NAN;
  if (!v || v->type == MB_JSON_NULL)
    return MB_STATUS_OK;
  if (v->type != MB_JSON_NUMBER)
    return field_error(l, v, "\"%s\": expected a number, found %s", key,
                       mb__json_type_name(v->type));
  *out = v->number;
  return MB_STATUS_OK;
}

static mb_status load_samples(json_loader *l, const mb_json_value *result,
                              mb_db_result *r) {
  const mb_json_value *v = mb__json_find(result, "samples_ms");
  if (!v || v->type == MB_JSON_NULL)
    return MB_STATUS_OK;
  if (v->type != MB_JSON_ARRAY)
    return field_error(l, v, "%s: \"samples_ms\": expected an array",
                       r->conversion);
  if (v->count == 0)
    return MB_STATUS_OK;
  r->samples_ms = mb__arena_alloc(l->run->arena, sizeof(double) * v->count);
  if (!r->samples_ms)
    return mb__error(l->err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory",
                     l->path);
  for (size_t i = 0; i < v->count; i++) {
    const mb_json_value *s = &v->items[i];
    if (s->type != MB_JSON_NUMBER)
      return field_error(l, s, "%s: samples_ms[%zu]: expected a number",
                         r->conversion, i);
    r->samples_ms[i] = s->number;
  }
  r->n_samples = (int64_t)v->count;
  return MB_STATUS_OK;
}

static mb_status load_result(json_loader *l, const mb_json_value *v,
                             mb_db_result *r) {
  mb_status status;
  const char *status_name = NULL;
  if (v->type != MB_JSON_OBJECT)
    return field_error(l, v, "results: expected objects, found %s",
                       mb__json_type_name(v->type));
  if ((status = get_string(l, v, "conversion", &r->conversion)))
    return status;
  if (!r->conversion)
    return field_error(l, v, "result without a \"conversion\" name");
  if ((status = get_string(l, v, "status", &status_name)))
    return status;
  if (!status_name || !mb__db_status_from_name(status_name, &r->status))
    return field_error(l, v, "%s: unknown \"status\" '%s'", r->conversion,
                       status_name ? status_name : "(none)");
  const mb_json_value *id = mb__json_find(v, "id");
  r->conversion_id = id && id->is_integer ? (int)id->integer : 0;
  const mb_json_value *iterations = mb__json_find(v, "iterations");
  r->iterations =
      iterations && iterations->is_integer ? iterations->integer : 0;
  const mb_json_value *latency = mb__json_find(v, "latency_ms");
  const mb_json_value *accuracy = mb__json_find(v, "accuracy");
  if (latency && latency->type != MB_JSON_OBJECT)
    latency = NULL;
  if (accuracy && accuracy->type != MB_JSON_OBJECT)
    accuracy = NULL;
  struct {
    const mb_json_value *obj;
    const char *key;
    double *out;
  } numbers[] = {
      {latency, "median", &r->median_ms},
      {latency, "mean", &r->mean_ms},
      {latency, "p90", &r->p90_ms},
      {latency, "p99", &r->p99_ms},
      {latency, "min", &r->min_ms},
      {latency, "max", &r->max_ms},
      {latency, "stddev", &r->stddev_ms},
      {v, "throughput_sps", &r->throughput_sps},
      {accuracy, "max_abs_err", &r->max_abs_err},
      {v, "load_ms", &r->load_ms},
      {v, "peak_rss_mb", &r->peak_rss_mb},
  };
  for (size_t i = 0; i < MB_ARRAY_COUNT(numbers); i++)
    if ((status =
             get_number(l, numbers[i].obj, numbers[i].key, numbers[i].out)))
      return status;
  if ((status = get_string(l, v, "error", &r->error)) ||
      (status = get_string(l, v, "device", &r->device)) ||
      (status = get_string(l, v, "runtime", &r->runtime)) ||
      (status = get_string(l, v, "runtime_version", &r->runtime_version)))
    return status;
  return load_samples(l, v, r);
}

mb_status mb__run_load_json(const char *path, mb_db_run **run_out,
                            mb_error *err) {
  mb_json_doc *doc = NULL;
  mb_status status = mb__json_parse_file(path, &doc, err);
  if (status)
    return status;
  json_loader l = {path, mb__db_run_create(), err};
  if (!l.run) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  mb_db_run *run = l.run;
  const mb_json_value *root = &doc->root;
  const mb_json_value *results = mb__json_find(root, "results");
  const mb_json_value *reports = mb__json_find(root, "reports");
  if (!results && reports && reports->type == MB_JSON_ARRAY) {
    status = mb__error(err, MB_STATUS_PARSE,
                       "%s: holds the reports of %zu models; compare takes "
                       "one model's run (bench it alone with --json, or "
                       "compare run ids from 'modelbench history')",
                       path, reports->count);
    goto done;
  }
  if (!results || results->type != MB_JSON_ARRAY) {
    status = mb__error(err, MB_STATUS_PARSE,
                       "%s: not a modelbench bench report (no \"results\" "
                       "array; write one with 'modelbench bench --json')",
                       path);
    goto done;
  }
  const mb_json_value *model = mb__json_find(root, "model");
  if (!(run->source = mb__arena_strdup(run->arena, path))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  if ((status = get_string(&l, root, "version", &run->tool_version)))
    goto done;
  if (model && model->type == MB_JSON_OBJECT &&
      ((status = get_string(&l, model, "path", &run->model_path)) ||
       (status = get_string(&l, model, "sha256", &run->model_sha256))))
    goto done;
  const mb_json_value *environment = mb__json_find(root, "environment");
  if (environment && environment->type != MB_JSON_NULL) {
    status =
        mb__environment_from_json(run->arena, environment, path,
                                  &run->environment, &run->n_environment, err);
    if (status)
      goto done;
    run->environment_recorded = true;
  }
  run->results =
      mb__arena_alloc(run->arena, sizeof *run->results * (results->count + 1));
  if (!run->results) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  for (size_t i = 0; i < results->count; i++) {
    status = load_result(&l, &results->items[i], &run->results[i]);
    if (status)
      goto done;
    run->n_results++;
  }
  *run_out = run;
  l.run = NULL;
done:
  mb__db_run_free(l.run);
  mb__json_doc_free(doc);
  return status;
}
