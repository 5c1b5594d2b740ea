/* The JSON report of a benchmark run (schema: docs/json-schema.md).
 *
 * Every result carries every key: a value that is unknown (a phase that
 * never ran, NaN, infinity) is written as null, because JSON has no NaN and
 * consumers should not have to test for missing keys. The file is written
 * to a temporary name beside the target and renamed over it, so a reader
 * (or a run killed half-way) only ever sees a complete report; `modelbench
 * bench` rewrites it after each conversion. */
#include "bench/bench.h"
#include "conversions/conversion.h"
#include "core/json_write.h"
#include "report/report_util.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

/* Bumped only for incompatible changes; fields are only ever added. */
#define MB_JSON_SCHEMA_VERSION 1

/* mb_log_level names, as --log-level takes them. */
static const char *const log_level_names[] = {"error", "warn", "info", "debug"};

/* Empty strings mean "unknown" in the structs; null in the JSON. */
static void kv_string_or_null(mb_json *j, const char *key, const char *s) {
  mb__json_kv_string(j, key, s && s[0] ? s : NULL);
}

/* A measured quantity: null when unknown. In a result that did not finish,
 * a zero means the phase was never reached, so it is unknown too. */
static void kv_measured(mb_json *j, const char *key, double v, bool known) {
  mb__json_kv_double(j, key, known ? v : NAN);
}

/* [lo, hi] of a 95% interval, or null when unknown ({0, 0}). */
static void kv_interval(mb_json *j, const char *key, const double ci[2]) {
  mb__json_key(j, key);
  if (!(ci[0] > 0 && ci[1] >= ci[0])) {
    mb__json_null(j);
    return;
  }
  mb__json_array_begin(j);
  mb__json_double(j, ci[0]);
  mb__json_double(j, ci[1]);
  mb__json_array_end(j);
}

static void write_shape(mb_json *j, int rank, const int64_t *dims) {
  mb__json_array_begin(j);
  for (int d = 0; d < rank && d < MB_MAX_RANK; d++)
    mb__json_int(j, dims[d]);
  mb__json_array_end(j);
}

static void write_model(mb_json *j, const mb_bench_report *r) {
  mb__json_key(j, "model");
  mb__json_object_begin(j);
  kv_string_or_null(j, "path", r->model_path);
  kv_string_or_null(j, "name", r->model_name);
  kv_string_or_null(j, "sha256", r->model_sha256);
  kv_string_or_null(j, "script", r->model_script);
  kv_string_or_null(j, "location", r->model_location);
  mb__json_kv_bool(j, "quantized", r->model_quantized != 0);
  kv_string_or_null(j, "quantization", r->model_quantization);
  /* The roofline's figures per run (the batch included); null unknown. */
  kv_measured(j, "flops", r->model_flops, r->model_flops > 0);
  kv_measured(j, "weight_bytes", r->model_weight_bytes,
              r->model_weight_bytes >= 0);
  kv_measured(j, "input_bytes", r->model_input_bytes,
              r->model_input_bytes >= 0);
  kv_measured(j, "activation_bytes", r->model_activation_bytes,
              r->model_activation_bytes >= 0);
  mb__json_key(j, "formats");
  mb__json_array_begin(j);
  for (int f = 0; f < MB_MODEL_FORMAT_COUNT; f++)
    if (r->model_formats & (1u << f))
      mb__json_string(j, mb_model_format_name((mb_model_format)f));
  mb__json_array_end(j);
  mb__json_key(j, "inputs");
  mb__json_array_begin(j);
  for (int i = 0; i < r->n_inputs && r->inputs; i++) {
    const mb_input_shape *s = &r->inputs[i];
    mb__json_object_begin(j);
    mb__json_kv_string(j, "name", s->name);
    mb__json_kv_string(
        j, "dtype", r->input_dtypes ? mb_dtype_name(r->input_dtypes[i]) : NULL);
    mb__json_key(j, "shape");
    write_shape(j, s->rank, s->dims);
    mb__json_object_end(j);
  }
  mb__json_array_end(j);
  mb__json_object_end(j);
}

/* "avx2 fma avx512f" -> ["avx2", "fma", "avx512f"]. */
static void write_words(mb_json *j, const char *s) {
  mb__json_array_begin(j);
  while (s && *s) {
    while (*s == ' ')
      s++;
    size_t n = strcspn(s, " ");
    if (n)
      mb__json_string_n(j, s, n);
    s += n;
  }
  mb__json_array_end(j);
}

static void write_machine(mb_json *j, const mb_machine_info *m) {
  mb__json_key(j, "machine");
  mb__json_object_begin(j);
  kv_string_or_null(j, "cpu_model", m->cpu_model);
  if (m->cores > 0)
    mb__json_kv_int(j, "cores", m->cores);
  else
    mb__json_kv_string(j, "cores", NULL);
  mb__json_key(j, "isa_flags");
  write_words(j, m->isa_flags);
  kv_string_or_null(j, "os", m->os);
  kv_string_or_null(j, "governor", m->governor);
  kv_measured(j, "load_average", m->load_average, m->load_average >= 0);
  kv_string_or_null(j, "host", m->host);
  mb__json_object_end(j);
}

/* The versions of the libraries the run used: OpenBLAS's build, then each
 * runtime's as its results say, once per runtime. */
static void write_libraries(mb_json *j, const mb_bench_report *r) {
  mb__json_key(j, "libraries");
  mb__json_object_begin(j);
  kv_string_or_null(j, "openblas", r->environment.blas);
  for (int i = 0; i < r->n_results && r->results; i++) {
    const mb_bench_result *x = &r->results[i];
    bool seen = !x->runtime[0] || !x->runtime_version[0];
    for (int k = 0; k < i && !seen; k++)
      seen = strcmp(r->results[k].runtime, x->runtime) == 0 &&
             r->results[k].runtime_version[0];
    if (!seen)
      mb__json_kv_string(j, x->runtime, x->runtime_version);
  }
  mb__json_object_end(j);
}

/* What besides the machine changes speed, in one object `compare` diffs
 * key by key; null when the run did not capture it (an older report). */
static void write_environment(mb_json *j, const mb_bench_report *r) {
  const mb_environment *e = &r->environment;
  mb__json_key(j, "environment");
  if (!e->recorded) {
    mb__json_null(j);
    return;
  }
  mb__json_object_begin(j);
  kv_string_or_null(j, "cpu_model", r->machine.cpu_model);
  kv_string_or_null(j, "cpu_flags_sha256", e->cpu_flags_sha256);
  mb__json_key(j, "isa");
  write_words(j, r->machine.isa_flags);
  kv_string_or_null(j, "governor", e->governor);
  kv_string_or_null(j, "smt", e->smt);
  kv_string_or_null(j, "kernel", e->kernel);
  if (e->cpus_allowed > 0)
    mb__json_kv_int(j, "cpus_allowed", e->cpus_allowed);
  else
    mb__json_kv_string(j, "cpus_allowed", NULL);
  mb__json_kv_int(j, "threads", r->config.threads);
  write_libraries(j, r);
  mb__json_key(j, "variables");
  mb__json_object_begin(j);
  for (int i = 0; i < e->n_variables && e->variables; i++) {
    const char *v = e->variables[i];
    size_t name = strcspn(v, "=");
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)name, v);
    mb__json_kv_string(j, key, v[name] ? v + name + 1 : "");
  }
  mb__json_object_end(j);
  mb__json_object_end(j);
}

/* Where one result ran: enough to tell machines and their kinds apart. */
static void write_result_machine(mb_json *j, const mb_machine_info *m) {
  mb__json_key(j, "machine");
  mb__json_object_begin(j);
  kv_string_or_null(j, "host", m->host);
  kv_string_or_null(j, "cpu_model", m->cpu_model);
  if (m->cores > 0)
    mb__json_kv_int(j, "cores", m->cores);
  else
    mb__json_kv_string(j, "cores", NULL);
  mb__json_object_end(j);
}

static const char *result_name(const mb_bench_result *r) {
  return r->conversion ? r->conversion : "";
}

/* The load settings, under the keys a --config file takes. */
static void write_load_config(mb_json *j, const mb_load_config *l) {
  mb__json_kv_string(j, "scenario", mb_load_scenario_name(l->scenario));
  kv_measured(j, "qps", l->qps, l->qps > 0);
  mb__json_kv_int(j, "concurrency", l->concurrency);
  mb__json_kv_double(j, "min_duration", l->min_duration);
  mb__json_kv_int(j, "min_queries", l->min_queries);
  mb__json_kv_double(j, "qps_tolerance", l->qps_tolerance);
  mb__json_key(j, "slo");
  if (l->slo_percentile > 0) {
    char key[32];
    snprintf(key, sizeof key, "p%g", l->slo_percentile);
    mb__json_object_begin(j);
    mb__json_kv_double(j, key, l->slo_ms);
    mb__json_object_end(j);
  } else {
    mb__json_null(j);
  }
  mb__json_kv_bool(j, "find_peak", l->find_peak != 0);
}

/* Every setting of the run, under the keys a --config file takes. */
static void write_config(mb_json *j, const mb_bench_report *r) {
  const mb_bench_config *c = &r->config;
  mb__json_key(j, "config");
  mb__json_object_begin(j);
  mb__json_kv_int(j, "batch_size", c->batch_size);
  mb__json_kv_int(j, "n_samples", c->n_samples);
  mb__json_kv_string(j, "device", mb_device_name(c->device));
  mb__json_kv_bool(j, "allow_device_override", c->allow_device_override);
  mb__json_kv_bool(j, "isolate", c->isolate);
  mb__json_kv_bool(j, "fail_fast", c->fail_fast);
  mb__json_kv_bool(j, "roofline", c->roofline);
  mb__json_kv_bool(j, "build_only", c->build_only);
  mb__json_kv_bool(j, "cold", c->cold);
  kv_measured(j, "price_per_core_hour", c->price_per_core_hour,
              c->price_per_core_hour > 0);
  mb__json_kv_int(j, "threads", c->threads);
  mb__json_kv_int(j, "warmup", c->warmup_iterations);
  mb__json_kv_double(j, "warmup_time", c->warmup_seconds);
  mb__json_kv_int(j, "min_iterations", c->min_iterations);
  mb__json_kv_double(j, "min_time", c->min_seconds);
  mb__json_kv_double(j, "max_time", c->max_seconds);
  if (c->ci_target > 0)
    mb__json_kv_double(j, "ci_target", c->ci_target);
  else
    mb__json_kv_string(j, "ci_target", NULL);
  mb__json_kv_bool(j, "fresh_inputs", c->fresh_inputs);
  mb__json_kv_bool(j, "cold_cache", c->cold_cache);
  mb__json_kv_double(j, "timeout", c->timeout_seconds);
  /* --timeout NAME=S overrides, by conversion name (position = result). */
  mb__json_key(j, "conversion_timeouts");
  mb__json_object_begin(j);
  for (int i = 0; c->conversion_timeouts && i < c->n_conversions &&
                  i < r->n_results && r->results;
       i++)
    if (c->conversion_timeouts[i] > 0.0)
      mb__json_kv_double(j, result_name(&r->results[i]),
                         c->conversion_timeouts[i]);
  mb__json_object_end(j);
  /* JSON integers above 2^63 are not portable: such seeds go as strings. */
  if (c->seed <= (uint64_t)INT64_MAX) {
    mb__json_kv_int(j, "seed", (int64_t)c->seed);
  } else {
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)c->seed);
    mb__json_kv_string(j, "seed", seed);
  }
  mb__json_kv_double(j, "rtol", c->rtol);
  mb__json_kv_double(j, "atol", c->atol);
  /* "8", "7" or "mixed" when forced, "auto" when each runtime chose
   * (the results say what). */
  mb__json_kv_string(j, "int8_weights", mb_int8_weights_name(c->int8_weights));
  mb__json_key(j, "keep_float");
  mb__json_array_begin(j);
  for (int i = 0; c->keep_float && i < c->n_keep_float; i++)
    mb__json_string(j, c->keep_float[i]);
  mb__json_array_end(j);
  /* The conversions that ran, in order: the results name them, which also
   * covers the default set (config.n_conversions == 0). */
  mb__json_key(j, "conversions");
  mb__json_array_begin(j);
  for (int i = 0; i < r->n_results && r->results; i++)
    mb__json_string(j, result_name(&r->results[i]));
  mb__json_array_end(j);
  mb__json_key(j, "baseline");
  if (r->baseline_result >= 0 && r->baseline_result < r->n_results &&
      r->results)
    mb__json_string(j, result_name(&r->results[r->baseline_result]));
  else
    mb__json_null(j);
  mb__json_key(j, "shapes");
  mb__json_object_begin(j);
  for (int i = 0; i < c->shapes.n_shapes && c->shapes.shapes; i++) {
    const mb_input_shape *s = &c->shapes.shapes[i];
    mb__json_key(j, s->name ? s->name : "");
    write_shape(j, s->rank, s->dims);
  }
  mb__json_object_end(j);
  /* Ranges by input name; "*" is the range for every other input. */
  mb__json_key(j, "input_ranges");
  mb__json_object_begin(j);
  for (int i = 0; i < c->n_ranges && c->ranges; i++) {
    mb__json_key(j, c->ranges[i].name ? c->ranges[i].name : "*");
    mb__json_array_begin(j);
    mb__json_double(j, c->ranges[i].lo);
    mb__json_double(j, c->ranges[i].hi);
    mb__json_array_end(j);
  }
  mb__json_object_end(j);
  /* --dim values by symbolic dimension name. */
  mb__json_key(j, "dims");
  mb__json_object_begin(j);
  for (int i = 0; i < c->shapes.n_dims && c->shapes.dims; i++)
    mb__json_kv_int(j, c->shapes.dims[i].name ? c->shapes.dims[i].name : "",
                    c->shapes.dims[i].value);
  mb__json_object_end(j);
  write_load_config(j, &c->load);
  kv_string_or_null(j, "inputs", c->inputs_dir);
  kv_string_or_null(j, "labels", c->labels_path);
  kv_string_or_null(j, "log_dir", c->log_dir);
  mb__json_kv_string(j, "log_level",
                     c->log_level >= 0 &&
                             c->log_level < (int)MB_ARRAY_COUNT(log_level_names)
                         ? log_level_names[c->log_level]
                         : NULL);
  mb__json_object_end(j);
}

/* The conversion's precision from the registry table (no probing), when
 * the result's index still names the same row. */
static const char *result_precision(const mb_bench_result *r) {
  const mb_conversion_def *def = mb__conversion_def(r->conversion_index);
  if (!def || !r->conversion || strcmp(def->name, r->conversion) != 0)
    return NULL;
  return mb_precision_name(def->precision);
}

static void write_latency(mb_json *j, const mb_bench_result *r) {
  const mb_latency_stats *s = &r->latency_ms;
  bool known = r->iterations > 0;
  mb__json_key(j, "latency_ms");
  mb__json_object_begin(j);
  kv_measured(j, "mean", s->mean, known);
  kv_measured(j, "median", s->median, known);
  kv_measured(j, "min", s->min, known);
  kv_measured(j, "max", s->max, known);
  kv_measured(j, "p90", s->p90, known);
  kv_measured(j, "p95", s->p95, known);
  kv_measured(j, "p99", s->p99, known);
  kv_measured(j, "stddev", s->stddev, known);
  kv_measured(j, "cv", s->cv, known);
  mb__json_object_end(j);
  /* Beside latency_ms, whose values are all numbers. */
  kv_interval(j, "median_ci_ms", r->median_ci_ms);
}

/* --ci-target's outcome; null when it was not asked. */
static void write_ci_target(mb_json *j, const mb_bench_result *r) {
  const mb_ci_target_result *t = &r->ci_target;
  mb__json_key(j, "ci_target");
  if (!(t->target > 0) || r->iterations <= 0) {
    mb__json_null(j);
    return;
  }
  mb__json_object_begin(j);
  mb__json_kv_double(j, "target", t->target);
  mb__json_kv_bool(j, "met", t->met != 0);
  kv_measured(j, "half_width", t->half_width, t->half_width >= 0);
  mb__json_kv_string(j, "stopped_by", t->met ? "ci-target" : "max-time");
  mb__json_object_end(j);
}

static void write_realistic_phase(mb_json *j, const char *key,
                                  const mb_realistic_stats *s, bool pool) {
  mb__json_key(j, key);
  if (s->iterations <= 0) {
    mb__json_null(j);
    return;
  }
  mb__json_object_begin(j);
  mb__json_kv_double(j, "median_ms", s->median_ms);
  mb__json_kv_double(j, "p99_ms", s->p99_ms);
  mb__json_kv_int(j, "iterations", s->iterations);
  mb__json_kv_double(j, "gap", s->gap);
  if (pool)
    mb__json_kv_int(j, "pool_samples", s->pool_samples);
  mb__json_kv_double(j, pool ? "pool_mb" : "flush_mb", s->pool_mb);
  mb__json_object_end(j);
}

/* The realistic phases beside the steady state; null when none ran. */
static void write_realistic(mb_json *j, const mb_bench_result *r) {
  mb__json_key(j, "realistic");
  if (r->fresh_inputs.iterations <= 0 && r->cold_cache.iterations <= 0) {
    mb__json_null(j);
    return;
  }
  mb__json_object_begin(j);
  write_realistic_phase(j, "fresh_inputs", &r->fresh_inputs, true);
  write_realistic_phase(j, "cold_cache", &r->cold_cache, false);
  mb__json_object_end(j);
}

/* A NaN anywhere makes the aggregate unknown instead of being skipped, as
 * fmax() would do. */
static double worst_max(double acc, double v) {
  return isnan(acc) || isnan(v) ? NAN : fmax(acc, v);
}

static void write_accuracy(mb_json *j, const mb_bench_result *r) {
  mb__json_key(j, "accuracy");
  if (!r->has_accuracy) {
    mb__json_null(j);
    return;
  }
  /* Aggregates over outputs: the worst of each measure. */
  double abs_err = 0, rel_err = 0, cosine = 1, top1 = -1;
  for (int i = 0; i < r->n_outputs && r->accuracy; i++) {
    const mb_output_accuracy *a = &r->accuracy[i];
    abs_err = worst_max(abs_err, a->max_abs_err);
    rel_err = worst_max(rel_err, a->max_rel_err);
    cosine = -worst_max(-cosine, -a->cosine);
    if (a->top1_agreement >= 0)
      top1 = top1 < 0 ? a->top1_agreement : MB_MIN(top1, a->top1_agreement);
  }
  if (r->max_abs_err >= 0)
    abs_err = r->max_abs_err;
  mb__json_object_begin(j);
  mb__json_kv_double(j, "max_abs_err", abs_err);
  mb__json_kv_double(j, "max_rel_err", rel_err);
  mb__json_kv_double(j, "cosine", cosine);
  kv_measured(j, "top1_agreement", top1, top1 >= 0);
  /* The worker's, else (a report read back from an older file) what the
   * precision implies: what mb__report_is_accurate judged by. */
  mb__json_kv_string(j, "criterion",
                     mb_accuracy_criterion_name(mb__report_criterion(r)));
  mb__json_key(j, "outputs");
  mb__json_array_begin(j);
  for (int i = 0; i < r->n_outputs && r->accuracy; i++) {
    const mb_output_accuracy *a = &r->accuracy[i];
    mb__json_object_begin(j);
    mb__json_kv_string(j, "name", a->name);
    mb__json_kv_double(j, "max_abs_err", a->max_abs_err);
    mb__json_kv_double(j, "max_rel_err", a->max_rel_err);
    mb__json_kv_double(j, "cosine", a->cosine);
    kv_measured(j, "top1_agreement", a->top1_agreement, a->top1_agreement >= 0);
    mb__json_kv_int(j, "top1_rows", a->top1_agreement >= 0 ? a->top1_rows : 0);
    mb__json_object_end(j);
  }
  mb__json_array_end(j);
  mb__json_object_end(j);
}

static void write_stats(mb_json *j, const char *key, const mb_latency_stats *s,
                        bool known) {
  mb__json_key(j, key);
  mb__json_object_begin(j);
  kv_measured(j, "mean", s->mean, known);
  kv_measured(j, "median", s->median, known);
  kv_measured(j, "min", s->min, known);
  kv_measured(j, "max", s->max, known);
  kv_measured(j, "p90", s->p90, known);
  kv_measured(j, "p95", s->p95, known);
  kv_measured(j, "p99", s->p99, known);
  mb__json_object_end(j);
}

/* A delay the harness added: {"p50", "p99", "max"} in us, or null. */
static void write_delay(mb_json *j, const char *key, const mb_load_delay_us *d,
                        bool known) {
  mb__json_key(j, key);
  if (!known) {
    mb__json_null(j);
    return;
  }
  mb__json_object_begin(j);
  mb__json_kv_double(j, "p50", d->p50);
  mb__json_kv_double(j, "p99", d->p99);
  mb__json_kv_double(j, "max", d->max);
  mb__json_object_end(j);
}

/* What a load run measured; null for bench's timed loop. */
static void write_load(mb_json *j, const mb_bench_result *r) {
  const mb_load_stats *l = &r->load;
  bool server = l->scenario == MB_LOAD_SERVER;
  bool ran = l->queries > 0;
  mb__json_key(j, "load");
  if (l->scenario == MB_LOAD_NONE) {
    mb__json_null(j);
    return;
  }
  mb__json_object_begin(j);
  mb__json_kv_string(j, "scenario", mb_load_scenario_name(l->scenario));
  mb__json_kv_int(j, "concurrency", l->concurrency);
  kv_measured(j, "target_qps", l->target_qps, server && l->target_qps > 0);
  kv_measured(j, "scheduled_qps", l->scheduled_qps, server && ran);
  kv_measured(j, "achieved_qps", l->achieved_qps, ran);
  mb__json_kv_int(j, "queries", l->queries);
  mb__json_kv_int(j, "unserved", l->unserved);
  mb__json_kv_int(j, "samples_per_query", l->samples_per_query);
  kv_measured(j, "duration_s", l->duration_s, ran);
  mb__json_key(j, "valid");
  if (ran)
    mb__json_bool(j, l->valid != 0);
  else
    mb__json_null(j);
  kv_string_or_null(j, "invalid_reason",
                    ran && !l->valid ? l->invalid_reason : NULL);
  mb__json_key(j, "queue_depth");
  if (server && ran) {
    mb__json_object_begin(j);
    mb__json_kv_double(j, "mean", l->queue_depth_mean);
    mb__json_kv_int(j, "max", l->queue_depth_max);
    mb__json_object_end(j);
  } else {
    mb__json_null(j);
  }
  write_stats(j, "service_ms", &l->service_ms, ran);
  write_delay(j, "generator_lateness_us", &l->generator_lateness_us,
              server && ran);
  write_delay(j, "handoff_us", &l->handoff_us, server && ran);
  kv_measured(j, "ideal_p99_ms", l->ideal_p99_ms, server && ran);
  mb__json_key(j, "harness_excess");
  if (server && ran)
    mb__json_bool(j, l->harness_excess != 0);
  else
    mb__json_null(j);
  mb__json_key(j, "idle_sleeps");
  if (server && ran)
    mb__json_int(j, l->idle_sleeps);
  else
    mb__json_null(j);
  mb__json_key(j, "spin_fallbacks");
  if (server && ran)
    mb__json_int(j, l->spin_fallbacks);
  else
    mb__json_null(j);
  mb__json_key(j, "spin_always");
  if (server && ran)
    mb__json_bool(j, l->spin_always != 0);
  else
    mb__json_null(j);
  kv_measured(j, "spin_margin_us", l->spin_margin_us,
              server && ran && !l->spin_always);
  kv_measured(j, "steal_ms", l->steal_ms, server && ran);
  mb__json_key(j, "slo");
  if (l->slo_met >= 0) {
    mb__json_object_begin(j);
    mb__json_kv_double(j, "latency_ms", l->slo_latency_ms);
    mb__json_kv_bool(j, "met", l->slo_met == 1);
    mb__json_kv_double(j, "over_share", l->over_slo_share);
    mb__json_object_end(j);
  } else {
    mb__json_null(j);
  }
  mb__json_key(j, "find_peak");
  if (l->n_trials > 0 && l->trials) {
    mb__json_object_begin(j);
    kv_measured(j, "peak_qps", l->peak_qps, l->peak_qps > 0);
    mb__json_key(j, "trials");
    mb__json_array_begin(j);
    for (int i = 0; i < l->n_trials; i++) {
      const mb_load_trial *t = &l->trials[i];
      mb__json_object_begin(j);
      mb__json_kv_double(j, "target_qps", t->target_qps);
      mb__json_kv_double(j, "achieved_qps", t->achieved_qps);
      mb__json_kv_double(j, "latency_ms", t->latency_ms);
      mb__json_kv_bool(j, "valid", t->valid != 0);
      mb__json_kv_bool(j, "slo_met", t->slo_met != 0);
      mb__json_object_end(j);
    }
    mb__json_array_end(j);
    mb__json_object_end(j);
  } else {
    mb__json_null(j);
  }
  mb__json_object_end(j);
}

/* "cold_start": what a first request costs (--cold), null without. */
static void write_cold(mb_json *j, const mb_bench_result *r) {
  const mb_cold_start *c = &r->cold;
  mb__json_key(j, "cold_start");
  if (!c->measured) {
    mb__json_null(j);
    return;
  }
  mb__json_object_begin(j);
  kv_measured(j, "build_miss_ms", c->build_miss_ms, c->build_miss_ms >= 0);
  kv_measured(j, "build_hit_ms", c->build_hit_ms, c->build_hit_ms >= 0);
  kv_measured(j, "model_read_ms", c->model_read_ms, c->model_read_ms >= 0);
  kv_measured(j, "load_ms", c->load_ms, c->load_ms >= 0);
  kv_measured(j, "first_inference_ms", c->first_inference_ms,
              c->first_inference_ms >= 0);
  mb__json_key(j, "iterations_to_steady");
  if (c->iterations_to_steady >= 0)
    mb__json_int(j, c->iterations_to_steady);
  else
    mb__json_null(j);
  kv_measured(j, "time_to_first_result_ms", c->time_to_first_result_ms,
              c->time_to_first_result_ms >= 0);
  kv_measured(j, "time_to_first_result_miss_ms",
              c->time_to_first_result_miss_ms,
              c->time_to_first_result_miss_ms >= 0);
  kv_string_or_null(j, "note", c->note);
  mb__json_object_end(j);
}

/* "energy": the figures, or why there are none; null for a result that
 * never reached a timed phase. */
static void write_energy(mb_json *j, const mb_bench_result *r) {
  const mb_energy *e = &r->energy;
  mb__json_key(j, "energy");
  if (!e->available && !e->unavailable[0]) {
    mb__json_null(j);
    return;
  }
  mb__json_object_begin(j);
  if (e->available) {
    mb__json_kv_double(j, "joules_per_inference", e->joules_per_inference);
    mb__json_kv_double(j, "joules", e->joules);
    kv_string_or_null(j, "domains", e->domains);
  } else {
    mb__json_kv_string(j, "unavailable", e->unavailable);
  }
  mb__json_object_end(j);
}

/* "gpu": null for a result that did not run on a GPU; else where, its
 * device time, copies, host latency, peak memory and the device's state
 * (json-schema.md). */
static void write_gpu(mb_json *j, const mb_bench_result *r) {
  const mb_gpu_result *g = &r->gpu;
  mb__json_key(j, "gpu");
  if (!g->used) {
    mb__json_null(j);
    return;
  }
  mb__json_object_begin(j);
  const mb_gpu_info *i = &g->info;
  mb__json_key(j, "info");
  mb__json_object_begin(j);
  mb__json_kv_int(j, "index", i->index);
  kv_string_or_null(j, "name", i->name);
  kv_string_or_null(j, "uuid", i->uuid);
  kv_string_or_null(j, "driver", i->driver);
  kv_string_or_null(j, "cuda_driver", i->cuda_driver);
  kv_string_or_null(j, "cuda_runtime", i->cuda_runtime);
  kv_string_or_null(j, "compute_capability", i->compute_capability);
  kv_measured(j, "memory_total_mb", i->memory_total_mb, i->memory_total_mb > 0);
  kv_measured(j, "sm_clock_max_mhz", i->sm_clock_max_mhz,
              i->sm_clock_max_mhz > 0);
  kv_measured(j, "mem_clock_max_mhz", i->mem_clock_max_mhz,
              i->mem_clock_max_mhz > 0);
  kv_measured(j, "power_limit_w", i->power_limit_w, i->power_limit_w > 0);
  mb__json_object_end(j);
  if (g->n_compute > 0) {
    write_stats(j, "compute_ms", &g->compute_ms, true);
  } else {
    mb__json_key(j, "compute_ms");
    mb__json_null(j);
  }
  mb__json_kv_int(j, "compute_iterations", g->n_compute);
  if (g->n_copies > 0) {
    write_stats(j, "h2d_ms", &g->h2d_ms, true);
    write_stats(j, "d2h_ms", &g->d2h_ms, true);
  } else {
    mb__json_key(j, "h2d_ms");
    mb__json_null(j);
    mb__json_key(j, "d2h_ms");
    mb__json_null(j);
  }
  mb__json_kv_int(j, "copies", g->n_copies);
  kv_measured(j, "h2d_mb", g->h2d_mb, g->n_copies > 0);
  kv_measured(j, "d2h_mb", g->d2h_mb, g->n_copies > 0);
  kv_measured(j, "host_latency_ms", g->host_latency_ms, g->host_latency_ms > 0);
  kv_measured(j, "memory_peak_mb", g->memory_peak_mb, g->memory_peak_mb >= 0);
  const mb_gpu_state *st = &g->state;
  mb__json_key(j, "state");
  mb__json_object_begin(j);
  if (st->available) {
    mb__json_kv_int(j, "samples", st->samples);
    mb__json_kv_double(j, "period_ms", st->period_ms);
    mb__json_kv_double(j, "sm_clock_mhz_min", st->sm_clock_mhz_min);
    mb__json_kv_double(j, "sm_clock_mhz_median", st->sm_clock_mhz_median);
    mb__json_kv_double(j, "sm_clock_mhz_max", st->sm_clock_mhz_max);
    mb__json_kv_double(j, "mem_clock_mhz_min", st->mem_clock_mhz_min);
    mb__json_kv_double(j, "mem_clock_mhz_max", st->mem_clock_mhz_max);
    mb__json_kv_double(j, "temperature_c_max", st->temperature_c_max);
    mb__json_kv_double(j, "power_w_mean", st->power_w_mean);
    mb__json_kv_double(j, "power_w_max", st->power_w_max);
    mb__json_kv_double(j, "utilization_mean", st->utilization_mean);
    mb__json_kv_int(j, "throttle_reasons", (int64_t)st->throttle_reasons);
    kv_string_or_null(j, "throttle", st->throttle);
  } else {
    mb__json_kv_string(j, "unavailable",
                       st->unavailable[0] ? st->unavailable : "not sampled");
  }
  mb__json_object_end(j);
  mb__json_object_end(j);
}

/* The result on this machine's roofline; null when unknown. */
static void write_roofline(mb_json *j, const mb_roofline *f) {
  mb__json_key(j, "roofline");
  if (f->bound == MB_ROOFLINE_UNKNOWN) {
    mb__json_null(j);
    return;
  }
  mb__json_object_begin(j);
  mb__json_kv_string(j, "bound", mb_roofline_bound_name(f->bound));
  mb__json_kv_double(j, "gflops", f->gflops);
  kv_measured(j, "bytes", f->bytes, f->bytes > 0);
  kv_measured(j, "intensity", f->intensity, f->bytes > 0);
  mb__json_kv_double(j, "peak_gflops", f->peak_gflops);
  mb__json_kv_string(j, "peak_precision", f->peak_precision);
  mb__json_kv_double(j, "bandwidth_gbs", f->bandwidth_gbs);
  mb__json_kv_double(j, "attainable_gflops", f->attainable_gflops);
  mb__json_kv_double(j, "peak_share", f->peak_share);
  kv_measured(j, "bandwidth_share", f->bandwidth_share, f->bytes > 0);
  mb__json_object_end(j);
}

/* The nodes an int8 conversion left in float32 (config keep_float): a
 * list for int8 results, empty when none was kept; null otherwise. */
static void write_kept_float(mb_json *j, const mb_bench_config *c,
                             const mb_bench_result *r) {
  mb__json_key(j, "kept_float");
  if (r->int8_weights == MB_INT8_WEIGHTS_AUTO) {
    mb__json_null(j);
    return;
  }
  mb__json_array_begin(j);
  for (int i = 0; c->keep_float && i < c->n_keep_float; i++)
    mb__json_string(j, c->keep_float[i]);
  mb__json_array_end(j);
}

static void write_result(mb_json *j, const mb_bench_config *c,
                         const mb_bench_result *r) {
  bool ok = r->status == MB_BENCH_OK;
  bool timed = r->iterations > 0;
  mb__json_object_begin(j);
  mb__json_kv_string(j, "conversion", result_name(r));
  mb__json_kv_int(j, "id", r->conversion_id);
  mb__json_kv_string(j, "status", mb_bench_status_name(r->status));
  mb__json_kv_string(j, "error",
                     ok || r->status == MB_BENCH_BUILT
                         ? NULL
                         : (r->error[0] ? r->error : "unknown error"));
  kv_string_or_null(j, "device", r->device);
  mb__json_kv_string(j, "precision", result_precision(r));
  if (r->precision_share >= 0) {
    char label[64];
    mb__json_kv_double(j, "precision_share", r->precision_share);
    mb__json_kv_string(j, "precision_label",
                       mb_bench_result_precision(r, label, sizeof label));
  } else {
    mb__json_kv_string(j, "precision_share", NULL);
    mb__json_kv_string(j, "precision_label", NULL);
  }
  kv_string_or_null(j, "runtime", r->runtime);
  kv_string_or_null(j, "runtime_version", r->runtime_version);
  /* int8 conversions: the width of their weights and why (int8_form.c). */
  mb__json_kv_string(j, "int8_weights",
                     r->int8_weights > MB_INT8_WEIGHTS_AUTO &&
                             r->int8_weights < MB_INT8_WEIGHTS_COUNT
                         ? mb_int8_weights_name(r->int8_weights)
                         : NULL);
  kv_string_or_null(j, "int8_form", r->int8_form);
  write_kept_float(j, c, r);
  mb__json_kv_bool(j, "inaccurate", r->inaccurate != 0);
  mb__json_key(j, "cache_hit");
  if (r->cache_hit >= 0)
    mb__json_bool(j, r->cache_hit != 0);
  else
    mb__json_null(j);
  kv_measured(j, "build_ms", r->build_ms,
              r->cache_hit >= 0 && r->build_ms >= 0);
  mb__json_key(j, "recompiles");
  if (r->recompiles >= 0)
    mb__json_int(j, r->recompiles);
  else
    mb__json_null(j);
  kv_string_or_null(j, "build_id", r->build_id);
  kv_string_or_null(j, "build_reason", r->build_reason);
  kv_string_or_null(j, "exporter", r->exporter);
  kv_measured(j, "load_ms", r->load_ms, ok || r->load_ms > 0);
  kv_measured(j, "first_run_ms", r->first_run_ms, ok || r->first_run_ms > 0);
  write_latency(j, r);
  mb__json_kv_int(j, "iterations", r->iterations);
  if (r->batch_size > 0)
    mb__json_kv_int(j, "batch_size", r->batch_size);
  else
    mb__json_kv_string(j, "batch_size", NULL);
  kv_measured(j, "throughput_sps", r->throughput_sps, timed);
  kv_measured(j, "inference_seconds", r->inference_seconds, timed);
  kv_measured(j, "elapsed_seconds", r->elapsed_seconds, timed);
  kv_measured(j, "peak_rss_mb", r->peak_rss_mb, r->peak_rss_mb > 0);
  write_accuracy(j, r);
  kv_measured(j, "task_accuracy", r->task_accuracy, r->task_rows > 0);
  mb__json_kv_int(j, "task_accuracy_rows", r->task_rows);
  kv_measured(j, "speedup_vs_baseline", r->speedup_vs_baseline,
              r->speedup_vs_baseline > 0);
  kv_interval(j, "speedup_ci", r->speedup_ci);
  write_ci_target(j, r);
  write_realistic(j, r);
  write_cold(j, r);
  write_energy(j, r);
  write_gpu(j, r);
  kv_measured(j, "cost_per_million", r->cost_per_million,
              r->cost_per_million > 0);
  mb__json_key(j, "warnings");
  mb__json_array_begin(j);
  for (int i = 0; i < r->n_warnings && r->warnings; i++)
    if (r->warnings[i])
      mb__json_string(j, r->warnings[i]);
  mb__json_array_end(j);
  mb__json_key(j, "samples_ms");
  mb__json_array_begin(j);
  for (int64_t i = 0; i < r->n_samples_ms && r->samples_ms; i++)
    mb__json_double(j, r->samples_ms[i]);
  mb__json_array_end(j);
  kv_string_or_null(j, "log", r->log_path);
  mb__json_kv_string(j, "backtrace", r->backtrace);
  write_result_machine(j, &r->machine);
  if (r->n_segments > 0 && r->segments) {
    mb__json_key(j, "segments");
    mb__json_array_begin(j);
    for (int i = 0; i < r->n_segments; i++) {
      mb__json_object_begin(j);
      mb__json_kv_string(j, "runtime", r->segments[i].runtime);
      mb__json_kv_int(j, "nodes", r->segments[i].nodes);
      mb__json_kv_double(j, "mean_ms", r->segments[i].mean_ms);
      mb__json_kv_string(j, "precision",
                         r->segments[i].precision[0] ? r->segments[i].precision
                                                     : NULL);
      if (r->segments[i].gflops >= 0)
        mb__json_kv_double(j, "gflops", r->segments[i].gflops);
      else
        mb__json_kv_string(j, "gflops", NULL);
      mb__json_object_end(j);
    }
    mb__json_array_end(j);
  }
  write_load(j, r);
  write_roofline(j, &r->roofline);
  mb__json_object_end(j);
}

/* The console's recommendation (mb_bench_recommend), by conversion name:
 * what a reader of the JSON alone (CI, the Python front) deploys. */
static void write_recommendation(mb_json *j, const mb_bench_report *r) {
  mb_recommendations rec;
  mb_bench_recommend(r, NULL, &rec);
  static const struct {
    const char *key;
    size_t offset;
  } picks[] = {
      {"fastest_accurate", offsetof(mb_recommendations, fastest_accurate)},
      {"fastest_exact", offsetof(mb_recommendations, fastest_exact)},
      {"lowest_memory", offsetof(mb_recommendations, lowest_memory)},
      {"most_portable", offsetof(mb_recommendations, most_portable)},
      {"default", offsetof(mb_recommendations, default_option)},
  };
  mb__json_key(j, "recommendation");
  mb__json_object_begin(j);
  for (size_t i = 0; i < sizeof picks / sizeof picks[0]; i++) {
    int index = *(const int *)((const char *)&rec + picks[i].offset);
    kv_string_or_null(j, picks[i].key,
                      index >= 0 && index < r->n_results && r->results
                          ? result_name(&r->results[index])
                          : NULL);
  }
  kv_measured(j, "headroom", rec.headroom, rec.headroom > 0);
  kv_interval(j, "headroom_ci", rec.headroom_ci);
  mb__json_kv_string(j, "summary", rec.summary);
  mb__json_object_end(j);
}

static void write_report(mb_json *j, const mb_bench_report *r) {
  mb__json_object_begin(j);
  mb__json_kv_int(j, "schema_version", MB_JSON_SCHEMA_VERSION);
  mb__json_kv_string(j, "tool", "modelbench");
  mb__json_kv_string(j, "version",
                     r->tool_version[0] ? r->tool_version : MB_VERSION_STRING);
  write_model(j, r);
  write_machine(j, &r->machine);
  write_environment(j, r);
  mb__json_key(j, "peaks");
  mb__peaks_write_json(j, &r->peaks);
  write_config(j, r);
  mb__json_key(j, "baseline");
  if (r->baseline_result >= 0 && r->baseline_result < r->n_results &&
      r->results)
    mb__json_string(j, result_name(&r->results[r->baseline_result]));
  else
    mb__json_null(j);
  kv_string_or_null(j, "reference", r->reference);
  /* "key=value" labels as {"key": "value"}. */
  mb__json_key(j, "labels");
  mb__json_object_begin(j);
  for (int i = 0; i < r->n_labels && r->labels; i++) {
    const char *eq = strchr(r->labels[i], '=');
    char key[128];
    snprintf(key, sizeof key, "%.*s",
             (int)(eq ? eq - r->labels[i] : (ptrdiff_t)strlen(r->labels[i])),
             r->labels[i]);
    mb__json_kv_string(j, key, eq ? eq + 1 : "");
  }
  mb__json_object_end(j);
  kv_string_or_null(j, "sweep_point", r->sweep_point);
  mb__json_key(j, "results");
  mb__json_array_begin(j);
  for (int i = 0; i < r->n_results && r->results; i++)
    write_result(j, &r->config, &r->results[i]);
  mb__json_array_end(j);
  write_recommendation(j, r);
  mb__json_object_end(j);
}

/* Several models' reports: {"schema_version", "tool", "version",
 * "reports": [report, ...]}. */
static void write_reports(mb_json *j, const mb_bench_report *const *reports,
                          int n) {
  mb__json_object_begin(j);
  mb__json_kv_int(j, "schema_version", MB_JSON_SCHEMA_VERSION);
  mb__json_kv_string(j, "tool", "modelbench");
  mb__json_kv_string(j, "version", MB_VERSION_STRING);
  mb__json_key(j, "reports");
  mb__json_array_begin(j);
  for (int i = 0; i < n; i++)
    write_report(j, reports[i]);
  mb__json_array_end(j);
  mb__json_object_end(j);
}

mb_status mb_bench_report_write_json(const mb_bench_report *report,
                                     const char *path, mb_error *err) {
  const mb_bench_report *reports[] = {report};
  if (!report)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "JSON report: no report given");
  return mb_bench_reports_write_json(reports, 1, path, err);
}

mb_status mb_bench_reports_write_json(const mb_bench_report *const *reports,
                                      int n, const char *path, mb_error *err) {
  if (!reports || n < 1 || !path || !path[0])
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "JSON report: no report or no path given");
  for (int i = 0; i < n; i++)
    if (!reports[i])
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "JSON report: report %d is missing", i);

  mb_report_file rf;
  mb_status status = mb__report_file_open(&rf, path, "JSON report", err);
  if (status)
    return status;
  mb_json j;
  mb__json_init(&j, rf.f, true);
  if (n == 1)
    write_report(&j, reports[0]);
  else
    write_reports(&j, reports, n);
  return mb__report_file_commit(&rf, err);
}
