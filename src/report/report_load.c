/* JSON report -> mb_bench_report (the inverse of src/report/json_report.c).
 *
 * Fields are read through tables of {key, kind, offset} rows, one table per
 * object of the schema, so that a field added to the writer is one row
 * here. A value of the wrong type is an error naming the file, line and
 * column; a missing or null value leaves the field "unknown" in the
 * struct's own convention (0, -1, "" or NAN, per row). */
#include "report/report_load.h"

#include "bench/bench.h"
#include "conversions/conversion.h"
#include "core/json_parse.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

typedef enum field_kind {
  FIELD_DOUBLE, /* double */
  FIELD_INT,    /* int, from an integer */
  FIELD_I64,    /* int64_t, from an integer */
  FIELD_BOOL,   /* int 0/1 from true/false */
  FIELD_TEXT,   /* char[size], from a string (cut to fit) */
} field_kind;

typedef struct field {
  const char *key;
  field_kind kind;
  size_t offset, size; /* size: FIELD_TEXT's buffer */
  double unknown;      /* stored when missing or null (not for text) */
} field;

#define F_DOUBLE(type, key, member, unknown)                                   \
  { key, FIELD_DOUBLE, offsetof(type, member), 0, unknown }
#define F_INT(type, key, member, unknown)                                      \
  { key, FIELD_INT, offsetof(type, member), 0, unknown }
#define F_I64(type, key, member)                                               \
  { key, FIELD_I64, offsetof(type, member), 0, 0 }
#define F_BOOL(type, key, member, unknown)                                     \
  { key, FIELD_BOOL, offsetof(type, member), 0, unknown }
#define F_TEXT(type, key, member)                                              \
  { key, FIELD_TEXT, offsetof(type, member), sizeof(((type *)0)->member), 0 }

static const field machine_fields[] = {
    F_TEXT(mb_machine_info, "cpu_model", cpu_model),
    F_INT(mb_machine_info, "cores", cores, 0),
    F_TEXT(mb_machine_info, "os", os),
    F_TEXT(mb_machine_info, "governor", governor),
    F_DOUBLE(mb_machine_info, "load_average", load_average, -1),
    F_TEXT(mb_machine_info, "host", host),
};

static const field environment_fields[] = {
    F_TEXT(mb_environment, "cpu_flags_sha256", cpu_flags_sha256),
    F_TEXT(mb_environment, "governor", governor),
    F_TEXT(mb_environment, "smt", smt),
    F_TEXT(mb_environment, "kernel", kernel),
    F_INT(mb_environment, "cpus_allowed", cpus_allowed, 0),
};

static const field latency_fields[] = {
    F_DOUBLE(mb_latency_stats, "mean", mean, NAN),
    F_DOUBLE(mb_latency_stats, "median", median, NAN),
    F_DOUBLE(mb_latency_stats, "min", min, NAN),
    F_DOUBLE(mb_latency_stats, "max", max, NAN),
    F_DOUBLE(mb_latency_stats, "p90", p90, NAN),
    F_DOUBLE(mb_latency_stats, "p95", p95, NAN),
    F_DOUBLE(mb_latency_stats, "p99", p99, NAN),
    F_DOUBLE(mb_latency_stats, "stddev", stddev, NAN),
    F_DOUBLE(mb_latency_stats, "cv", cv, NAN),
};

static const field result_fields[] = {
    F_INT(mb_bench_result, "id", conversion_id, 0),
    F_TEXT(mb_bench_result, "error", error),
    F_TEXT(mb_bench_result, "device", device),
    F_DOUBLE(mb_bench_result, "precision_share", precision_share, -1),
    F_TEXT(mb_bench_result, "runtime", runtime),
    F_TEXT(mb_bench_result, "runtime_version", runtime_version),
    F_TEXT(mb_bench_result, "int8_form", int8_form),
    F_BOOL(mb_bench_result, "inaccurate", inaccurate, 0),
    F_BOOL(mb_bench_result, "cache_hit", cache_hit, -1),
    F_INT(mb_bench_result, "recompiles", recompiles, -1),
    F_DOUBLE(mb_bench_result, "build_ms", build_ms, -1),
    F_TEXT(mb_bench_result, "build_id", build_id),
    F_TEXT(mb_bench_result, "build_reason", build_reason),
    F_TEXT(mb_bench_result, "exporter", exporter),
    F_DOUBLE(mb_bench_result, "load_ms", load_ms, 0),
    F_DOUBLE(mb_bench_result, "first_run_ms", first_run_ms, 0),
    F_I64(mb_bench_result, "iterations", iterations),
    F_INT(mb_bench_result, "batch_size", batch_size, 0),
    F_DOUBLE(mb_bench_result, "throughput_sps", throughput_sps, 0),
    F_DOUBLE(mb_bench_result, "inference_seconds", inference_seconds, 0),
    F_DOUBLE(mb_bench_result, "elapsed_seconds", elapsed_seconds, 0),
    F_DOUBLE(mb_bench_result, "peak_rss_mb", peak_rss_mb, 0),
    F_DOUBLE(mb_bench_result, "task_accuracy", task_accuracy, 0),
    F_I64(mb_bench_result, "task_accuracy_rows", task_rows),
    F_DOUBLE(mb_bench_result, "speedup_vs_baseline", speedup_vs_baseline, 0),
    F_TEXT(mb_bench_result, "log", log_path),
    F_DOUBLE(mb_bench_result, "cost_per_million", cost_per_million, -1),
};

static const field cold_fields[] = {
    F_DOUBLE(mb_cold_start, "build_miss_ms", build_miss_ms, -1),
    F_DOUBLE(mb_cold_start, "build_hit_ms", build_hit_ms, -1),
    F_DOUBLE(mb_cold_start, "model_read_ms", model_read_ms, -1),
    F_DOUBLE(mb_cold_start, "load_ms", load_ms, -1),
    F_DOUBLE(mb_cold_start, "first_inference_ms", first_inference_ms, -1),
    F_I64(mb_cold_start, "iterations_to_steady", iterations_to_steady),
    F_DOUBLE(mb_cold_start, "time_to_first_result_ms", time_to_first_result_ms,
             -1),
    F_DOUBLE(mb_cold_start, "time_to_first_result_miss_ms",
             time_to_first_result_miss_ms, -1),
    F_TEXT(mb_cold_start, "note", note),
};

static const field energy_fields[] = {
    F_DOUBLE(mb_energy, "joules_per_inference", joules_per_inference, 0),
    F_DOUBLE(mb_energy, "joules", joules, 0),
    F_TEXT(mb_energy, "domains", domains),
    F_TEXT(mb_energy, "unavailable", unavailable),
};

static const field ci_target_fields[] = {
    F_DOUBLE(mb_ci_target_result, "target", target, 0),
    F_BOOL(mb_ci_target_result, "met", met, 0),
    F_DOUBLE(mb_ci_target_result, "half_width", half_width, -1),
};

static const field realistic_fields[] = {
    F_I64(mb_realistic_stats, "iterations", iterations),
    F_DOUBLE(mb_realistic_stats, "median_ms", median_ms, 0),
    F_DOUBLE(mb_realistic_stats, "p99_ms", p99_ms, 0),
    F_DOUBLE(mb_realistic_stats, "gap", gap, 0),
    F_I64(mb_realistic_stats, "pool_samples", pool_samples),
};

/* "load" (json_report.c's write_load); its objects below. */
static const field load_fields[] = {
    F_INT(mb_load_stats, "concurrency", concurrency, 0),
    F_DOUBLE(mb_load_stats, "target_qps", target_qps, 0),
    F_DOUBLE(mb_load_stats, "scheduled_qps", scheduled_qps, 0),
    F_DOUBLE(mb_load_stats, "achieved_qps", achieved_qps, 0),
    F_I64(mb_load_stats, "queries", queries),
    F_I64(mb_load_stats, "unserved", unserved),
    F_INT(mb_load_stats, "samples_per_query", samples_per_query, 0),
    F_DOUBLE(mb_load_stats, "duration_s", duration_s, 0),
    F_BOOL(mb_load_stats, "valid", valid, 0),
    F_TEXT(mb_load_stats, "invalid_reason", invalid_reason),
    F_DOUBLE(mb_load_stats, "ideal_p99_ms", ideal_p99_ms, 0),
    F_BOOL(mb_load_stats, "harness_excess", harness_excess, 0),
    F_I64(mb_load_stats, "idle_sleeps", idle_sleeps),
    F_I64(mb_load_stats, "spin_fallbacks", spin_fallbacks),
    F_BOOL(mb_load_stats, "spin_always", spin_always, 0),
    F_DOUBLE(mb_load_stats, "spin_margin_us", spin_margin_us, NAN),
    F_DOUBLE(mb_load_stats, "steal_ms", steal_ms, NAN),
};

static const field queue_depth_fields[] = {
    F_DOUBLE(mb_load_stats, "mean", queue_depth_mean, 0),
    F_I64(mb_load_stats, "max", queue_depth_max),
};

static const field slo_fields[] = {
    F_DOUBLE(mb_load_stats, "latency_ms", slo_latency_ms, 0),
    F_BOOL(mb_load_stats, "met", slo_met, -1),
    F_DOUBLE(mb_load_stats, "over_share", over_slo_share, 0),
};

static const field delay_fields[] = {
    F_DOUBLE(mb_load_delay_us, "p50", p50, 0),
    F_DOUBLE(mb_load_delay_us, "p99", p99, 0),
    F_DOUBLE(mb_load_delay_us, "max", max, 0),
};

static const field trial_fields[] = {
    F_DOUBLE(mb_load_trial, "target_qps", target_qps, 0),
    F_DOUBLE(mb_load_trial, "achieved_qps", achieved_qps, 0),
    F_DOUBLE(mb_load_trial, "latency_ms", latency_ms, 0),
    F_BOOL(mb_load_trial, "valid", valid, 0),
    F_BOOL(mb_load_trial, "slo_met", slo_met, 0),
};

static const field output_fields[] = {
    F_TEXT(mb_output_accuracy, "name", name),
    F_DOUBLE(mb_output_accuracy, "max_abs_err", max_abs_err, NAN),
    F_DOUBLE(mb_output_accuracy, "max_rel_err", max_rel_err, NAN),
    F_DOUBLE(mb_output_accuracy, "cosine", cosine, NAN),
    F_DOUBLE(mb_output_accuracy, "top1_agreement", top1_agreement, -1),
    F_I64(mb_output_accuracy, "top1_rows", top1_rows),
};

static const field config_fields[] = {
    F_INT(mb_bench_config, "batch_size", batch_size, 1),
    F_INT(mb_bench_config, "n_samples", n_samples, 1),
    F_BOOL(mb_bench_config, "allow_device_override", allow_device_override, 0),
    F_BOOL(mb_bench_config, "isolate", isolate, 1),
    F_BOOL(mb_bench_config, "fail_fast", fail_fast, 0),
    F_BOOL(mb_bench_config, "roofline", roofline, 0),
    F_BOOL(mb_bench_config, "build_only", build_only, 0),
    F_BOOL(mb_bench_config, "cold", cold, 0),
    F_DOUBLE(mb_bench_config, "price_per_core_hour", price_per_core_hour, 0),
    F_INT(mb_bench_config, "threads", threads, 1),
    F_INT(mb_bench_config, "warmup", warmup_iterations, 0),
    F_DOUBLE(mb_bench_config, "warmup_time", warmup_seconds, 0),
    F_INT(mb_bench_config, "min_iterations", min_iterations, 0),
    F_DOUBLE(mb_bench_config, "min_time", min_seconds, 0),
    F_DOUBLE(mb_bench_config, "max_time", max_seconds, 0),
    F_DOUBLE(mb_bench_config, "ci_target", ci_target, 0),
    F_BOOL(mb_bench_config, "fresh_inputs", fresh_inputs, 0),
    F_BOOL(mb_bench_config, "cold_cache", cold_cache, 0),
    F_DOUBLE(mb_bench_config, "timeout", timeout_seconds, 0),
    F_DOUBLE(mb_bench_config, "rtol", rtol, 0),
    F_DOUBLE(mb_bench_config, "atol", atol, 0),
};

typedef struct loader {
  const char *path;
  mb_arena *arena; /* of the report being read */
  mb_error *err;
} loader;

#define field_error(l, v, ...)                                                 \
  mb__json_value_error((l)->err, (l)->path, v, __VA_ARGS__)

static mb_status oom(loader *l) {
  return mb__error(l->err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory",
                   l->path);
}

/* The member `key` of obj when it is of `type`; NULL when missing or null;
 * an error (in *status) for any other type. */
static const mb_json_value *member(loader *l, const mb_json_value *obj,
                                   const char *key, mb_json_type type,
                                   mb_status *status) {
  const mb_json_value *v =
      obj && obj->type == MB_JSON_OBJECT ? mb__json_find(obj, key) : NULL;
  *status = MB_STATUS_OK;
  if (!v || v->type == MB_JSON_NULL)
    return NULL;
  if (v->type != type) {
    *status =
        field_error(l, v, "\"%s\": expected %s, found %s", key,
                    mb__json_type_name(type), mb__json_type_name(v->type));
    return NULL;
  }
  return v;
}

/* Reads every row of `fields` from obj into the struct at base. */
static mb_status read_fields(loader *l, const mb_json_value *obj,
                             const field *fields, size_t n, void *base) {
  static const mb_json_type json_type[] = {
      [FIELD_DOUBLE] = MB_JSON_NUMBER, [FIELD_INT] = MB_JSON_NUMBER,
      [FIELD_I64] = MB_JSON_NUMBER,    [FIELD_BOOL] = MB_JSON_BOOL,
      [FIELD_TEXT] = MB_JSON_STRING,
  };
  for (size_t i = 0; i < n; i++) {
    const field *f = &fields[i];
    char *at = (char *)base + f->offset;
    mb_status status;
    const mb_json_value *v =
        member(l, obj, f->key, json_type[f->kind], &status);
    if (status)
      return status;
    if (v && (f->kind == FIELD_INT || f->kind == FIELD_I64) && !v->is_integer)
      return field_error(l, v, "\"%s\": expected an integer", f->key);
    switch (f->kind) {
    case FIELD_DOUBLE:
      *(double *)at = v ? v->number : f->unknown;
      break;
    case FIELD_INT:
      *(int *)at = v ? (int)v->integer : (int)f->unknown;
      break;
    case FIELD_I64:
      *(int64_t *)at = v ? v->integer : (int64_t)f->unknown;
      break;
    case FIELD_BOOL:
      *(int *)at = v ? v->boolean : (int)f->unknown;
      break;
    case FIELD_TEXT:
      snprintf(at, f->size, "%s", v ? v->string : "");
      break;
    }
  }
  return MB_STATUS_OK;
}

static mb_status read_machine(loader *l, const mb_json_value *obj,
                              mb_machine_info *m) {
  mb_status status;
  memset(m, 0, sizeof *m);
  if ((status = read_fields(l, obj, machine_fields,
                            MB_ARRAY_COUNT(machine_fields), m)))
    return status;
  const mb_json_value *flags =
      member(l, obj, "isa_flags", MB_JSON_ARRAY, &status);
  size_t used = 0;
  for (size_t i = 0; flags && i < flags->count; i++) {
    if (flags->items[i].type != MB_JSON_STRING)
      return field_error(l, &flags->items[i], "isa_flags: expected strings");
    int w = snprintf(m->isa_flags + used, sizeof m->isa_flags - used, "%s%s",
                     used ? " " : "", flags->items[i].string);
    if (w < 0 || (size_t)w >= sizeof m->isa_flags - used)
      break;
    used += (size_t)w;
  }
  return status;
}

/* "environment": its facts, OpenBLAS's build and the variables; the
 * runtimes' versions under "libraries" are the results' own. */
static mb_status read_environment(loader *l, const mb_json_value *obj,
                                  mb_environment *e) {
  mb_status status;
  memset(e, 0, sizeof *e);
  e->recorded = 1;
  if ((status = read_fields(l, obj, environment_fields,
                            MB_ARRAY_COUNT(environment_fields), e)))
    return status;
  const mb_json_value *libraries =
      member(l, obj, "libraries", MB_JSON_OBJECT, &status);
  const mb_json_value *blas =
      status ? NULL : member(l, libraries, "openblas", MB_JSON_STRING, &status);
  if (blas)
    snprintf(e->blas, sizeof e->blas, "%s", blas->string);
  const mb_json_value *vars =
      status ? NULL : member(l, obj, "variables", MB_JSON_OBJECT, &status);
  if (!vars || vars->count == 0)
    return status;
  const char **list = mb__arena_alloc(l->arena, sizeof *list * vars->count);
  if (!list)
    return oom(l);
  for (size_t i = 0; i < vars->count; i++) {
    const mb_json_member *m = &vars->members[i];
    if (m->value.type != MB_JSON_STRING)
      return field_error(l, &m->value,
                         "environment.variables.%s: expected "
                         "a string",
                         m->key);
    size_t size = strlen(m->key) + strlen(m->value.string) + 2;
    char *text = mb__arena_alloc(l->arena, size);
    if (!text)
      return oom(l);
    snprintf(text, size, "%s=%s", m->key, m->value.string);
    list[i] = text;
  }
  e->variables = list;
  e->n_variables = (int)vars->count;
  return MB_STATUS_OK;
}

/* A JSON array of strings into malloc'd strings (warnings). */
static mb_status read_warnings(loader *l, const mb_json_value *obj,
                               mb_bench_result *r) {
  mb_status status;
  const mb_json_value *v = member(l, obj, "warnings", MB_JSON_ARRAY, &status);
  if (!v || v->count == 0)
    return status;
  if (!(r->warnings = calloc(v->count, sizeof *r->warnings)))
    return oom(l);
  for (size_t i = 0; i < v->count; i++) {
    if (v->items[i].type != MB_JSON_STRING)
      return field_error(l, &v->items[i], "warnings: expected strings");
    if (!(r->warnings[r->n_warnings] = mb__strdup(v->items[i].string)))
      return oom(l);
    r->n_warnings++;
  }
  return MB_STATUS_OK;
}

/* A 95% interval, [lo, hi]; {0, 0} when missing or null. */
static mb_status read_interval(loader *l, const mb_json_value *obj,
                               const char *key, double out[2]) {
  mb_status status;
  const mb_json_value *v = member(l, obj, key, MB_JSON_ARRAY, &status);
  out[0] = out[1] = 0;
  if (!v)
    return status;
  if (v->count != 2 || v->items[0].type != MB_JSON_NUMBER ||
      v->items[1].type != MB_JSON_NUMBER)
    return field_error(l, v, "\"%s\": expected [low, high]", key);
  out[0] = v->items[0].number;
  out[1] = v->items[1].number;
  return MB_STATUS_OK;
}

/* "ci_target" and "realistic" (docs/json-schema.md): absent or null leave
 * them unasked. */
static mb_status read_measure_extras(loader *l, const mb_json_value *obj,
                                     mb_bench_result *r) {
  mb_status status;
  if ((status = read_interval(l, obj, "median_ci_ms", r->median_ci_ms)) ||
      (status = read_interval(l, obj, "speedup_ci", r->speedup_ci)))
    return status;
  const mb_json_value *ci =
      member(l, obj, "ci_target", MB_JSON_OBJECT, &status);
  if (status || (ci && (status = read_fields(l, ci, ci_target_fields,
                                             MB_ARRAY_COUNT(ci_target_fields),
                                             &r->ci_target))))
    return status;
  const mb_json_value *realistic =
      member(l, obj, "realistic", MB_JSON_OBJECT, &status);
  static const struct {
    const char *key, *size_key;
    size_t offset;
  } phases[] = {
      {"fresh_inputs", "pool_mb", offsetof(mb_bench_result, fresh_inputs)},
      {"cold_cache", "flush_mb", offsetof(mb_bench_result, cold_cache)},
  };
  for (size_t i = 0; !status && realistic && i < MB_ARRAY_COUNT(phases); i++) {
    mb_realistic_stats *s =
        (mb_realistic_stats *)((char *)r + phases[i].offset);
    const mb_json_value *phase =
        member(l, realistic, phases[i].key, MB_JSON_OBJECT, &status);
    if (status || !phase)
      continue;
    const mb_json_value *size =
        member(l, phase, phases[i].size_key, MB_JSON_NUMBER, &status);
    if (!status)
      status = read_fields(l, phase, realistic_fields,
                           MB_ARRAY_COUNT(realistic_fields), s);
    if (size)
      s->pool_mb = size->number;
  }
  return status;
}

/* "load": null for bench's timed loop (scenario NONE). */
static mb_status read_load(loader *l, const mb_json_value *obj,
                           mb_load_stats *load) {
  mb_status status;
  const mb_json_value *v = member(l, obj, "load", MB_JSON_OBJECT, &status);
  if (!v)
    return status;
  const mb_json_value *scenario =
      member(l, v, "scenario", MB_JSON_STRING, &status);
  if (status)
    return status;
  mb_error ignored;
  if (!scenario ||
      mb_load_scenario_parse(scenario->string, &load->scenario, &ignored))
    return field_error(l, scenario ? scenario : v,
                       "load: unknown \"scenario\" '%s'",
                       scenario ? scenario->string : "(none)");
  load->slo_met = -1;
  const mb_json_value *queue =
      member(l, v, "queue_depth", MB_JSON_OBJECT, &status);
  const mb_json_value *service =
      status ? NULL : member(l, v, "service_ms", MB_JSON_OBJECT, &status);
  const mb_json_value *lateness =
      status ? NULL
             : member(l, v, "generator_lateness_us", MB_JSON_OBJECT, &status);
  const mb_json_value *handoff =
      status ? NULL : member(l, v, "handoff_us", MB_JSON_OBJECT, &status);
  const mb_json_value *slo =
      status ? NULL : member(l, v, "slo", MB_JSON_OBJECT, &status);
  const mb_json_value *peak =
      status ? NULL : member(l, v, "find_peak", MB_JSON_OBJECT, &status);
  const mb_json_value *trials =
      status ? NULL : member(l, peak, "trials", MB_JSON_ARRAY, &status);
  if (status ||
      (status =
           read_fields(l, v, load_fields, MB_ARRAY_COUNT(load_fields), load)) ||
      (queue &&
       (status = read_fields(l, queue, queue_depth_fields,
                             MB_ARRAY_COUNT(queue_depth_fields), load))) ||
      (service && (status = read_fields(l, service, latency_fields,
                                        MB_ARRAY_COUNT(latency_fields),
                                        &load->service_ms))) ||
      (lateness && (status = read_fields(l, lateness, delay_fields,
                                         MB_ARRAY_COUNT(delay_fields),
                                         &load->generator_lateness_us))) ||
      (handoff && (status = read_fields(l, handoff, delay_fields,
                                        MB_ARRAY_COUNT(delay_fields),
                                        &load->handoff_us))) ||
      (slo && (status = read_fields(l, slo, slo_fields,
                                    MB_ARRAY_COUNT(slo_fields), load))))
    return status;
  if (peak) {
    const mb_json_value *p =
        member(l, peak, "peak_qps", MB_JSON_NUMBER, &status);
    if (status)
      return status;
    load->peak_qps = p ? p->number : 0;
  }
  if (!trials || trials->count == 0)
    return MB_STATUS_OK;
  if (!(load->trials = calloc(trials->count, sizeof *load->trials)))
    return oom(l);
  for (size_t i = 0; i < trials->count; i++) {
    if (trials->items[i].type != MB_JSON_OBJECT)
      return field_error(l, &trials->items[i],
                         "load.find_peak.trials: expected objects");
    if ((status = read_fields(l, &trials->items[i], trial_fields,
                              MB_ARRAY_COUNT(trial_fields),
                              &load->trials[load->n_trials])))
      return status;
    load->n_trials++;
  }
  return MB_STATUS_OK;
}

static mb_status read_samples(loader *l, const mb_json_value *obj,
                              mb_bench_result *r) {
  mb_status status;
  const mb_json_value *v = member(l, obj, "samples_ms", MB_JSON_ARRAY, &status);
  if (!v || v->count == 0)
    return status;
  if (!(r->samples_ms = malloc(sizeof *r->samples_ms * v->count)))
    return oom(l);
  for (size_t i = 0; i < v->count; i++) {
    if (v->items[i].type != MB_JSON_NUMBER)
      return field_error(l, &v->items[i], "samples_ms: expected numbers");
    r->samples_ms[i] = v->items[i].number;
  }
  r->n_samples_ms = (int64_t)v->count;
  return MB_STATUS_OK;
}

static mb_status read_accuracy(loader *l, const mb_json_value *obj,
                               mb_bench_result *r) {
  mb_status status;
  r->max_abs_err = -1.0;
  const mb_json_value *acc =
      member(l, obj, "accuracy", MB_JSON_OBJECT, &status);
  if (!acc)
    return status;
  r->has_accuracy = 1;
  const mb_json_value *max =
      member(l, acc, "max_abs_err", MB_JSON_NUMBER, &status);
  if (status)
    return status;
  if (max)
    r->max_abs_err = max->number;
  /* The criterion (absent from older reports: UNKNOWN, judged by
   * precision); a name this version does not know is an error. */
  const mb_json_value *criterion =
      member(l, acc, "criterion", MB_JSON_STRING, &status);
  if (status)
    return status;
  if (criterion) {
    int c = mb_accuracy_criterion_from_name(criterion->string);
    if (c < 0)
      return field_error(l, criterion,
                         "%s: unknown accuracy \"criterion\" '%s'",
                         r->conversion, criterion->string);
    r->accuracy_criterion = (mb_accuracy_criterion)c;
  }
  const mb_json_value *outputs =
      member(l, acc, "outputs", MB_JSON_ARRAY, &status);
  if (!outputs || outputs->count == 0)
    return status;
  if (!(r->accuracy = calloc(outputs->count, sizeof *r->accuracy)))
    return oom(l);
  r->n_outputs = (int)outputs->count;
  for (size_t i = 0; i < outputs->count; i++)
    if ((status = read_fields(l, &outputs->items[i], output_fields,
                              MB_ARRAY_COUNT(output_fields), &r->accuracy[i])))
      return status;
  return MB_STATUS_OK;
}

static mb_status read_segments(loader *l, const mb_json_value *obj,
                               mb_bench_result *r) {
  static const field segment_fields[] = {
      F_TEXT(mb_segment_stats, "runtime", runtime),
      F_INT(mb_segment_stats, "nodes", nodes, 0),
      F_DOUBLE(mb_segment_stats, "mean_ms", mean_ms, 0),
      F_TEXT(mb_segment_stats, "precision", precision),
      F_DOUBLE(mb_segment_stats, "gflops", gflops, -1),
  };
  mb_status status;
  const mb_json_value *v = member(l, obj, "segments", MB_JSON_ARRAY, &status);
  if (!v || v->count == 0)
    return status;
  if (!(r->segments = calloc(v->count, sizeof *r->segments)))
    return oom(l);
  r->n_segments = (int)v->count;
  for (size_t i = 0; i < v->count; i++)
    if ((status = read_fields(l, &v->items[i], segment_fields,
                              MB_ARRAY_COUNT(segment_fields), &r->segments[i])))
      return status;
  return MB_STATUS_OK;
}

/* "cold_start" (null: not measured) and "energy" (null: never timed;
 * joules_per_inference present: available). */
static mb_status read_cold_energy(loader *l, const mb_json_value *obj,
                                  mb_bench_result *r) {
  mb_status status;
  const mb_json_value *cold =
      member(l, obj, "cold_start", MB_JSON_OBJECT, &status);
  r->cold.iterations_to_steady = -1;
  if (status ||
      (cold && (status = read_fields(l, cold, cold_fields,
                                     MB_ARRAY_COUNT(cold_fields), &r->cold))))
    return status;
  if (cold) {
    r->cold.measured = 1;
    const mb_json_value *steady = mb__json_find(cold, "iterations_to_steady");
    if (!steady || steady->type == MB_JSON_NULL)
      r->cold.iterations_to_steady = -1;
  }
  const mb_json_value *energy =
      member(l, obj, "energy", MB_JSON_OBJECT, &status);
  if (status || (energy && (status = read_fields(l, energy, energy_fields,
                                                 MB_ARRAY_COUNT(energy_fields),
                                                 &r->energy))))
    return status;
  r->energy.available =
      energy && mb__json_find(energy, "joules_per_inference") != NULL;
  return MB_STATUS_OK;
}

/* "gpu": null (ran on the CPU) or json_report.c's write_gpu. */
static mb_status read_gpu(loader *l, const mb_json_value *obj,
                          mb_gpu_result *g) {
  static const field info_fields[] = {
      F_INT(mb_gpu_info, "index", index, -1),
      F_TEXT(mb_gpu_info, "name", name),
      F_TEXT(mb_gpu_info, "uuid", uuid),
      F_TEXT(mb_gpu_info, "driver", driver),
      F_TEXT(mb_gpu_info, "cuda_driver", cuda_driver),
      F_TEXT(mb_gpu_info, "cuda_runtime", cuda_runtime),
      F_TEXT(mb_gpu_info, "compute_capability", compute_capability),
      F_DOUBLE(mb_gpu_info, "memory_total_mb", memory_total_mb, 0),
      F_DOUBLE(mb_gpu_info, "sm_clock_max_mhz", sm_clock_max_mhz, 0),
      F_DOUBLE(mb_gpu_info, "mem_clock_max_mhz", mem_clock_max_mhz, 0),
      F_DOUBLE(mb_gpu_info, "power_limit_w", power_limit_w, 0),
  };
  static const field gpu_fields[] = {
      F_I64(mb_gpu_result, "compute_iterations", n_compute),
      F_I64(mb_gpu_result, "copies", n_copies),
      F_DOUBLE(mb_gpu_result, "h2d_mb", h2d_mb, 0),
      F_DOUBLE(mb_gpu_result, "d2h_mb", d2h_mb, 0),
      F_DOUBLE(mb_gpu_result, "host_latency_ms", host_latency_ms, 0),
      F_DOUBLE(mb_gpu_result, "memory_peak_mb", memory_peak_mb, -1),
  };
  static const field state_fields[] = {
      F_TEXT(mb_gpu_state, "unavailable", unavailable),
      F_I64(mb_gpu_state, "samples", samples),
      F_DOUBLE(mb_gpu_state, "period_ms", period_ms, 0),
      F_DOUBLE(mb_gpu_state, "sm_clock_mhz_min", sm_clock_mhz_min, 0),
      F_DOUBLE(mb_gpu_state, "sm_clock_mhz_median", sm_clock_mhz_median, 0),
      F_DOUBLE(mb_gpu_state, "sm_clock_mhz_max", sm_clock_mhz_max, 0),
      F_DOUBLE(mb_gpu_state, "mem_clock_mhz_min", mem_clock_mhz_min, 0),
      F_DOUBLE(mb_gpu_state, "mem_clock_mhz_max", mem_clock_mhz_max, 0),
      F_DOUBLE(mb_gpu_state, "temperature_c_max", temperature_c_max, 0),
      F_DOUBLE(mb_gpu_state, "power_w_mean", power_w_mean, 0),
      F_DOUBLE(mb_gpu_state, "power_w_max", power_w_max, 0),
      F_DOUBLE(mb_gpu_state, "utilization_mean", utilization_mean, 0),
      F_TEXT(mb_gpu_state, "throttle", throttle),
  };
  static const struct {
    const char *key;
    size_t offset;
  } stats[] = {
      {"compute_ms", offsetof(mb_gpu_result, compute_ms)},
      {"h2d_ms", offsetof(mb_gpu_result, h2d_ms)},
      {"d2h_ms", offsetof(mb_gpu_result, d2h_ms)},
  };
  mb_status status;
  memset(g, 0, sizeof *g);
  const mb_json_value *v = member(l, obj, "gpu", MB_JSON_OBJECT, &status);
  if (!v)
    return status;
  g->used = 1;
  const mb_json_value *info = member(l, v, "info", MB_JSON_OBJECT, &status);
  const mb_json_value *state =
      status ? NULL : member(l, v, "state", MB_JSON_OBJECT, &status);
  if (status ||
      (status = read_fields(l, v, gpu_fields, MB_ARRAY_COUNT(gpu_fields), g)) ||
      (info && (status = read_fields(l, info, info_fields,
                                     MB_ARRAY_COUNT(info_fields), &g->info))) ||
      (state &&
       (status = read_fields(l, state, state_fields,
                             MB_ARRAY_COUNT(state_fields), &g->state))))
    return status;
  if (!info)
    g->info.index = -1;
  for (size_t i = 0; i < MB_ARRAY_COUNT(stats); i++) {
    const mb_json_value *s =
        member(l, v, stats[i].key, MB_JSON_OBJECT, &status);
    if (status || (s && (status = read_fields(l, s, latency_fields,
                                              MB_ARRAY_COUNT(latency_fields),
                                              (char *)g + stats[i].offset))))
      return status;
  }
  if (state) {
    g->state.available = mb__json_find(state, "samples") != NULL;
    const mb_json_value *bits = mb__json_find(state, "throttle_reasons");
    if (bits && bits->type == MB_JSON_NUMBER && bits->number >= 0)
      g->state.throttle_reasons = (uint64_t)bits->number;
  }
  return MB_STATUS_OK;
}

/* "roofline": null (unknown) or the result on the machine's roofline. */
static mb_status read_roofline(loader *l, const mb_json_value *obj,
                               mb_roofline *f) {
  static const field roofline_fields[] = {
      F_DOUBLE(mb_roofline, "gflops", gflops, 0),
      F_DOUBLE(mb_roofline, "bytes", bytes, 0),
      F_DOUBLE(mb_roofline, "intensity", intensity, 0),
      F_DOUBLE(mb_roofline, "peak_gflops", peak_gflops, 0),
      F_TEXT(mb_roofline, "peak_precision", peak_precision),
      F_DOUBLE(mb_roofline, "bandwidth_gbs", bandwidth_gbs, 0),
      F_DOUBLE(mb_roofline, "attainable_gflops", attainable_gflops, 0),
      F_DOUBLE(mb_roofline, "peak_share", peak_share, 0),
      F_DOUBLE(mb_roofline, "bandwidth_share", bandwidth_share, 0),
  };
  mb_status status;
  memset(f, 0, sizeof *f);
  const mb_json_value *v = member(l, obj, "roofline", MB_JSON_OBJECT, &status);
  if (!v)
    return status;
  const mb_json_value *bound = member(l, v, "bound", MB_JSON_STRING, &status);
  if (status)
    return status;
  for (int b = 0; bound && b < MB_ROOFLINE_BOUND_COUNT; b++)
    if (strcmp(bound->string, mb_roofline_bound_name((mb_roofline_bound)b)) ==
        0)
      f->bound = (mb_roofline_bound)b;
  if (bound && f->bound == MB_ROOFLINE_UNKNOWN &&
      strcmp(bound->string, "unknown") != 0)
    return field_error(l, bound,
                       "roofline.bound: '%s' is not compute-bound, "
                       "memory-bound, overhead-bound or unknown",
                       bound->string);
  return read_fields(l, v, roofline_fields, MB_ARRAY_COUNT(roofline_fields), f);
}

static mb_status read_result(loader *l, const mb_json_value *obj,
                             mb_bench_result *r) {
  mb_status status;
  memset(r, 0, sizeof *r);
  if (obj->type != MB_JSON_OBJECT)
    return field_error(l, obj, "results: expected objects, found %s",
                       mb__json_type_name(obj->type));
  const mb_json_value *name =
      member(l, obj, "conversion", MB_JSON_STRING, &status);
  if (!name)
    return status ? status
                  : field_error(l, obj, "result without a \"conversion\"");
  /* A name this build knows points at its registry row (static); another
   * build's conversion keeps its name in the arena. */
  int index = -1;
  mb_error ignored;
  if (mb_conversion_find(name->string, &index, &ignored) == MB_STATUS_OK &&
      strcmp(mb__conversion_def(index)->name, name->string) == 0) {
    r->conversion_index = index;
    r->conversion = mb__conversion_def(index)->name;
  } else {
    r->conversion_index = -1;
    if (!(r->conversion = mb__arena_strdup(l->arena, name->string)))
      return oom(l);
  }
  const mb_json_value *st = member(l, obj, "status", MB_JSON_STRING, &status);
  if (status)
    return status;
  bool known = false;
  for (int s = 0; st && s < MB_BENCH_STATUS_COUNT && !known; s++)
    if (strcmp(st->string, mb_bench_status_name((mb_bench_status)s)) == 0) {
      r->status = (mb_bench_status)s;
      known = true;
    }
  if (!known)
    return field_error(l, st ? st : obj, "%s: unknown \"status\" '%s'",
                       r->conversion, st ? st->string : "(none)");
  const mb_json_value *latency =
      member(l, obj, "latency_ms", MB_JSON_OBJECT, &status);
  if (status ||
      (status = read_fields(l, obj, result_fields,
                            MB_ARRAY_COUNT(result_fields), r)) ||
      (status = read_fields(l, latency, latency_fields,
                            MB_ARRAY_COUNT(latency_fields), &r->latency_ms)) ||
      (status = read_accuracy(l, obj, r)) ||
      (status = read_warnings(l, obj, r)) ||
      (status = read_samples(l, obj, r)) ||
      (status = read_segments(l, obj, r)) ||
      (status = read_measure_extras(l, obj, r)) ||
      (status = read_roofline(l, obj, &r->roofline)) ||
      (status = read_load(l, obj, &r->load)))
    return status;
  /* A null statistic of a measured result was not finite (a NaN CV); one
   * never measured keeps the engine's zeros. */
  if (r->iterations <= 0)
    memset(&r->latency_ms, 0, sizeof r->latency_ms);
  const mb_json_value *machine =
      member(l, obj, "machine", MB_JSON_OBJECT, &status);
  if (status || (machine && (status = read_machine(l, machine, &r->machine))))
    return status;
  const mb_json_value *form = mb__json_find(obj, "int8_weights");
  if (form && form->type == MB_JSON_STRING &&
      mb_int8_weights_from_name(form->string) > 0)
    r->int8_weights = (mb_int8_weights)mb_int8_weights_from_name(form->string);
  if ((status = read_cold_energy(l, obj, r)) ||
      (status = read_gpu(l, obj, &r->gpu)))
    return status;
  const mb_json_value *bt =
      member(l, obj, "backtrace", MB_JSON_STRING, &status);
  if (bt && !(r->backtrace = mb__strdup(bt->string)))
    return oom(l);
  return status;
}

/* model.inputs: [{"name", "dtype", "shape"}]. */
static mb_status read_inputs(loader *l, const mb_json_value *model,
                             mb_bench_report *report) {
  mb_status status;
  const mb_json_value *v = member(l, model, "inputs", MB_JSON_ARRAY, &status);
  if (!v || v->count == 0)
    return status;
  report->inputs = mb__arena_alloc(l->arena, sizeof *report->inputs * v->count);
  report->input_dtypes =
      mb__arena_alloc(l->arena, sizeof *report->input_dtypes * v->count);
  if (!report->inputs || !report->input_dtypes)
    return oom(l);
  for (size_t i = 0; i < v->count; i++) {
    const mb_json_value *in = &v->items[i];
    mb_input_shape *s = &report->inputs[i];
    memset(s, 0, sizeof *s);
    const mb_json_value *name = member(l, in, "name", MB_JSON_STRING, &status);
    const mb_json_value *dtype =
        status ? NULL : member(l, in, "dtype", MB_JSON_STRING, &status);
    const mb_json_value *shape =
        status ? NULL : member(l, in, "shape", MB_JSON_ARRAY, &status);
    if (status)
      return status;
    if (!(s->name = mb__arena_strdup(l->arena, name ? name->string : "")))
      return oom(l);
    report->input_dtypes[i] = mb_dtype_from_name(dtype ? dtype->string : "");
    for (size_t d = 0; shape && d < shape->count && d < MB_MAX_RANK; d++) {
      if (!shape->items[d].is_integer)
        return field_error(l, &shape->items[d], "shape: expected integers");
      s->dims[s->rank++] = shape->items[d].integer;
    }
  }
  report->n_inputs = (int)v->count;
  return MB_STATUS_OK;
}

static mb_status read_model(loader *l, const mb_json_value *root,
                            mb_bench_report *report) {
  static const field model_fields[] = {
      F_TEXT(mb_bench_report, "path", model_path),
      F_TEXT(mb_bench_report, "name", model_name),
      F_TEXT(mb_bench_report, "sha256", model_sha256),
      F_TEXT(mb_bench_report, "script", model_script),
      F_TEXT(mb_bench_report, "location", model_location),
      F_BOOL(mb_bench_report, "quantized", model_quantized, 0),
      F_TEXT(mb_bench_report, "quantization", model_quantization),
      F_DOUBLE(mb_bench_report, "flops", model_flops, -1),
      F_DOUBLE(mb_bench_report, "weight_bytes", model_weight_bytes, -1),
      F_DOUBLE(mb_bench_report, "input_bytes", model_input_bytes, -1),
      F_DOUBLE(mb_bench_report, "activation_bytes", model_activation_bytes, -1),
  };
  mb_status status;
  const mb_json_value *model =
      member(l, root, "model", MB_JSON_OBJECT, &status);
  if (!model)
    return status;
  if ((status = read_fields(l, model, model_fields,
                            MB_ARRAY_COUNT(model_fields), report)))
    return status;
  const mb_json_value *formats =
      member(l, model, "formats", MB_JSON_ARRAY, &status);
  for (size_t i = 0; formats && i < formats->count; i++)
    for (int f = 0; f < MB_MODEL_FORMAT_COUNT; f++)
      if (formats->items[i].type == MB_JSON_STRING &&
          strcmp(formats->items[i].string,
                 mb_model_format_name((mb_model_format)f)) == 0)
        report->model_formats |= 1u << f;
  return status ? status : read_inputs(l, model, report);
}

/* labels {"key": "value"} as "key=value" (report and config share them,
 * as the engine's reports do). */
static mb_status read_labels(loader *l, const mb_json_value *root,
                             mb_bench_report *report) {
  mb_status status;
  const mb_json_value *v = member(l, root, "labels", MB_JSON_OBJECT, &status);
  if (!v || v->count == 0)
    return status;
  const char **labels = mb__arena_alloc(l->arena, sizeof *labels * v->count);
  if (!labels)
    return oom(l);
  for (size_t i = 0; i < v->count; i++) {
    const mb_json_member *m = &v->members[i];
    if (m->value.type != MB_JSON_STRING)
      return field_error(l, &m->value, "labels: expected string values");
    size_t klen = strlen(m->key), vlen = strlen(m->value.string);
    char *label = mb__arena_alloc(l->arena, klen + vlen + 2);
    if (!label)
      return oom(l);
    snprintf(label, klen + vlen + 2, "%s=%s", m->key, m->value.string);
    labels[i] = label;
  }
  report->labels = labels;
  report->config.labels = labels;
  report->n_labels = report->config.n_labels = (int)v->count;
  return MB_STATUS_OK;
}

/* config.shapes {"x": [1, 3]} and config.input_ranges {"x": [lo, hi]}. */
static mb_status read_shapes_ranges(loader *l, const mb_json_value *config,
                                    mb_bench_config *c) {
  mb_status status;
  const mb_json_value *shapes =
      member(l, config, "shapes", MB_JSON_OBJECT, &status);
  if (shapes && shapes->count > 0) {
    mb_input_shape *s = mb__arena_alloc(l->arena, sizeof *s * shapes->count);
    if (!s)
      return oom(l);
    for (size_t i = 0; i < shapes->count; i++) {
      const mb_json_member *m = &shapes->members[i];
      memset(&s[i], 0, sizeof s[i]);
      if (!(s[i].name = mb__arena_strdup(l->arena, m->key)))
        return oom(l);
      if (m->value.type != MB_JSON_ARRAY)
        return field_error(l, &m->value, "shapes: expected arrays");
      for (size_t d = 0; d < m->value.count && d < MB_MAX_RANK; d++)
        s[i].dims[s[i].rank++] = m->value.items[d].integer;
    }
    c->shapes.shapes = s;
    c->shapes.n_shapes = (int)shapes->count;
  }
  const mb_json_value *ranges =
      status ? NULL
             : member(l, config, "input_ranges", MB_JSON_OBJECT, &status);
  if (ranges && ranges->count > 0) {
    mb_input_range *r = mb__arena_alloc(l->arena, sizeof *r * ranges->count);
    if (!r)
      return oom(l);
    for (size_t i = 0; i < ranges->count; i++) {
      const mb_json_member *m = &ranges->members[i];
      if (m->value.type != MB_JSON_ARRAY || m->value.count != 2)
        return field_error(l, &m->value, "input_ranges: expected [lo, hi]");
      r[i].name =
          strcmp(m->key, "*") == 0 ? NULL : mb__arena_strdup(l->arena, m->key);
      r[i].lo = m->value.items[0].number;
      r[i].hi = m->value.items[1].number;
    }
    c->ranges = r;
    c->n_ranges = (int)ranges->count;
  }
  return status;
}

static mb_status read_config(loader *l, const mb_json_value *root,
                             mb_bench_report *report) {
  mb_bench_config *c = &report->config;
  mb_bench_config_init(c);
  mb_status status;
  const mb_json_value *config =
      member(l, root, "config", MB_JSON_OBJECT, &status);
  if (!config)
    return status;
  if ((status = read_fields(l, config, config_fields,
                            MB_ARRAY_COUNT(config_fields), c)) ||
      (status = read_shapes_ranges(l, config, c)))
    return status;
  const mb_json_value *device =
      member(l, config, "device", MB_JSON_STRING, &status);
  for (int d = 0; device && d < MB_DEVICE_COUNT; d++)
    if (strcmp(device->string, mb_device_name((mb_device)d)) == 0)
      c->device = (mb_device)d;
  /* "8", "7", "mixed" when forced; "auto" (or absent) leaves AUTO. */
  const mb_json_value *form = mb__json_find(config, "int8_weights");
  if (form && form->type == MB_JSON_STRING &&
      mb_int8_weights_from_name(form->string) > 0)
    c->int8_weights = (mb_int8_weights)mb_int8_weights_from_name(form->string);
  const mb_json_value *seed = mb__json_find(config, "seed");
  if (seed && seed->is_integer)
    c->seed = (uint64_t)seed->integer;
  else if (seed && seed->type == MB_JSON_STRING)
    c->seed = strtoull(seed->string, NULL, 10);
  static const struct {
    const char *key;
    size_t offset;
  } paths[] = {
      {"inputs", offsetof(mb_bench_config, inputs_dir)},
      {"labels", offsetof(mb_bench_config, labels_path)},
      {"log_dir", offsetof(mb_bench_config, log_dir)},
  };
  for (size_t i = 0; i < MB_ARRAY_COUNT(paths) && !status; i++) {
    const mb_json_value *v =
        member(l, config, paths[i].key, MB_JSON_STRING, &status);
    const char **at = (const char **)((char *)c + paths[i].offset);
    if (v && !(*at = mb__arena_strdup(l->arena, v->string)))
      return oom(l);
  }
  static const char *const levels[] = {"error", "warn", "info", "debug"};
  const mb_json_value *level =
      status ? NULL : member(l, config, "log_level", MB_JSON_STRING, &status);
  for (size_t i = 0; level && i < MB_ARRAY_COUNT(levels); i++)
    if (strcmp(level->string, levels[i]) == 0)
      c->log_level = (int)i;
  return status;
}

/* What depends on the results: the run list, the baseline, the per-
 * conversion timeouts. */
static mb_status link_results(loader *l, const mb_json_value *root,
                              mb_bench_report *report) {
  mb_bench_config *c = &report->config;
  int n = report->n_results;
  int *list = mb__arena_alloc(l->arena, sizeof *list * (size_t)(n + 1));
  double *timeouts =
      mb__arena_alloc(l->arena, sizeof *timeouts * (size_t)(n + 1));
  if (!list || !timeouts)
    return oom(l);
  mb_status status;
  const mb_json_value *config =
      member(l, root, "config", MB_JSON_OBJECT, &status);
  const mb_json_value *named =
      config ? member(l, config, "conversion_timeouts", MB_JSON_OBJECT, &status)
             : NULL;
  const mb_json_value *baseline =
      status ? NULL : member(l, root, "baseline", MB_JSON_STRING, &status);
  for (int i = 0; i < n; i++) {
    const mb_bench_result *r = &report->results[i];
    list[i] = r->conversion_index;
    const mb_json_value *t = named ? mb__json_find(named, r->conversion) : NULL;
    timeouts[i] = t && t->type == MB_JSON_NUMBER ? t->number : 0;
    if (baseline && report->baseline_result < 0 &&
        strcmp(baseline->string, r->conversion) == 0)
      report->baseline_result = i;
  }
  c->conversions = list;
  c->n_conversions = n;
  c->conversion_timeouts = named ? timeouts : NULL;
  c->baseline = report->baseline_result;
  return status;
}

static mb_status read_report(loader *l, const mb_json_value *root,
                             mb_bench_report **report_out) {
  static const field report_fields[] = {
      F_TEXT(mb_bench_report, "version", tool_version),
      F_TEXT(mb_bench_report, "reference", reference),
  };
  mb_status status;
  mb_bench_report *report = mb__bench_report_create(&l->arena);
  if (!report)
    return oom(l);
  const mb_json_value *results =
      member(l, root, "results", MB_JSON_ARRAY, &status);
  if (!results && !status)
    status = mb__error(l->err, MB_STATUS_PARSE,
                       "%s: not a modelbench bench report (no \"results\" "
                       "array; write one with 'modelbench bench --json')",
                       l->path);
  if (status ||
      (status = read_fields(l, root, report_fields,
                            MB_ARRAY_COUNT(report_fields), report)) ||
      (status = read_model(l, root, report)) ||
      (status = read_labels(l, root, report)) ||
      (status = read_config(l, root, report)))
    goto fail;
  const mb_json_value *machine =
      member(l, root, "machine", MB_JSON_OBJECT, &status);
  if (status ||
      (machine && (status = read_machine(l, machine, &report->machine))))
    goto fail;
  const mb_json_value *environment =
      member(l, root, "environment", MB_JSON_OBJECT, &status);
  if (status || (environment && (status = read_environment(
                                     l, environment, &report->environment))))
    goto fail;
  const mb_json_value *peaks =
      member(l, root, "peaks", MB_JSON_OBJECT, &status);
  if (status || (peaks && (status = mb__peaks_read_json(
                               peaks, l->path, &report->peaks, l->err))))
    goto fail;
  if (results->count > 0 &&
      !(report->results = calloc(results->count, sizeof *report->results))) {
    status = oom(l);
    goto fail;
  }
  for (size_t i = 0; i < results->count; i++) {
    report->n_results++;
    if ((status = read_result(l, &results->items[i], &report->results[i])))
      goto fail;
    /* An older report has no machine per result: the run's. */
    if (!member(l, &results->items[i], "machine", MB_JSON_OBJECT, &status))
      report->results[i].machine = report->machine;
  }
  if ((status = link_results(l, root, report)))
    goto fail;
  *report_out = report;
  return MB_STATUS_OK;

fail:
  mb_bench_report_free(report);
  return status;
}

mb_status mb__reports_load_json(const char *path,
                                mb_bench_report ***reports_out, int *n_out,
                                mb_error *err) {
  mb_json_doc *doc = NULL;
  mb_bench_report **reports = NULL;
  int n = 0;
  mb_status status = mb__json_parse_file(path, &doc, err);
  if (status)
    return status;
  loader l = {path, NULL, err};
  const mb_json_value *root = &doc->root;
  const mb_json_value *many =
      member(&l, root, "reports", MB_JSON_ARRAY, &status);
  if (status)
    goto done;
  size_t count = many ? many->count : 1;
  if (!(reports = calloc(count + 1, sizeof *reports))) {
    status = oom(&l);
    goto done;
  }
  for (size_t i = 0; i < count; i++) {
    if ((status = read_report(&l, many ? &many->items[i] : root, &reports[n])))
      goto done;
    n++;
  }
  *reports_out = reports;
  *n_out = n;
  reports = NULL;
done:
  mb__reports_free(reports, n);
  mb__json_doc_free(doc);
  return status;
}

void mb__reports_free(mb_bench_report **reports, int n) {
  for (int i = 0; reports && i < n; i++)
    mb_bench_report_free(reports[i]);
  free(reports);
}
