/* modelbench tune: the search log, one JSON object (docs/json-schema.md,
 * "The tune log"). */
#include "bench/tune_internal.h"
#include "core/files.h"
#include "core/json_write.h"

#include <fcntl.h>
#include <math.h>

#define MB_TUNE_LOG_SCHEMA_VERSION 1

/* A number, or null when it is unknown (negative by convention). */
static void kv_known(mb_json *j, const char *key, double v, bool known) {
  if (known && isfinite(v))
    mb__json_kv_double(j, key, v);
  else
    mb__json_kv_string(j, key, NULL);
}

static void kv_step_index(mb_json *j, const char *key, int index) {
  if (index >= 0)
    mb__json_kv_int(j, key, index);
  else
    mb__json_kv_string(j, key, NULL);
}

static void write_step(mb_json *j, int index, const mb_tune_step *s) {
  mb__json_object_begin(j);
  mb__json_kv_int(j, "index", index);
  mb__json_kv_string(j, "phase", s->phase);
  mb__json_kv_int(j, "round", s->round);
  mb__json_kv_string(j, "conversion", s->conversion);
  mb__json_kv_int(j, "threads", s->threads);
  mb__json_kv_int(j, "batch_size", MB_MAX(s->batch_size, 1));
  mb__json_key(j, "kept_float");
  mb__json_array_begin(j);
  for (int k = 0; k < s->n_kept_float; k++)
    mb__json_string(j, s->kept_float[k]);
  mb__json_array_end(j);
  kv_known(j, "int8_flops_share", s->int8_flops_share,
           s->int8_flops_share >= 0);
  mb__json_kv_bool(j, "estimated",
                   s->median_ms < 0 && s->status == MB_BENCH_OK &&
                       s->error >= 0);
  mb__json_kv_string(j, "status", mb_bench_status_name(s->status));
  mb__json_kv_string(j, "error_message",
                     s->error_message[0] ? s->error_message : NULL);
  kv_known(j, "error", s->error, s->error >= 0);
  kv_known(j, "cosine", s->cosine, s->cosine >= -1);
  kv_known(j, "task_accuracy", s->task_accuracy, s->task_accuracy >= 0);
  mb__json_kv_bool(j, "accurate", s->accurate != 0);
  kv_known(j, "median_ms", s->median_ms, s->median_ms >= 0);
  kv_known(j, "per_sample_ms", s->median_ms / MB_MAX(s->batch_size, 1),
           s->median_ms >= 0);
  kv_known(j, "slo_latency_ms", s->slo_latency_ms, s->slo_latency_ms >= 0);
  kv_known(j, "min_seconds", s->min_seconds, s->min_seconds > 0);
  mb__json_kv_double(j, "at_seconds", s->at_seconds);
  if (s->samples > 0)
    mb__json_kv_int(j, "samples", s->samples);
  else
    kv_known(j, "samples", 0, false);
  mb__json_kv_string(j, "dropped", s->dropped[0] ? s->dropped : NULL);
  mb__json_object_end(j);
}

mb_status mb_tune_result_write_json(const mb_tune_result *result,
                                    const char *path, mb_error *err) {
  if (!result || !path || !path[0])
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "tune log: no result or no path given");
  mb_atomic_file af;
  mb_status status = mb__atomic_file_open(&af, AT_FDCWD, path,
                                          MB_FILE_MODE_UMASK, "tune log", err);
  if (status)
    return status;
  mb_json j;
  mb__json_init(&j, af.f, true);
  mb__json_object_begin(&j);
  mb__json_kv_int(&j, "schema_version", MB_TUNE_LOG_SCHEMA_VERSION);
  mb__json_kv_string(&j, "tool", "modelbench");
  mb__json_kv_string(&j, "version", MB_VERSION_STRING);
  mb__json_kv_string(&j, "kind", "tune");
  mb__json_kv_string(&j, "model_path", result->model_path);
  mb__json_kv_double(&j, "max_error", result->max_error);
  mb__json_key(&j, "slo");
  if (result->slo_percentile > 0) {
    mb__json_object_begin(&j);
    mb__json_kv_double(&j, "percentile", result->slo_percentile);
    mb__json_kv_double(&j, "ms", result->slo_ms);
    mb__json_object_end(&j);
  } else {
    mb__json_null(&j);
  }
  kv_known(&j, "max_accuracy_drop", result->max_accuracy_drop,
           result->max_accuracy_drop > 0);
  kv_known(&j, "baseline_task_accuracy", result->baseline_task_accuracy,
           result->baseline_task_accuracy >= 0);
  mb__json_kv_string(&j, "baseline",
                     result->baseline[0] ? result->baseline : NULL);
  mb__json_kv_double(&j, "wall_seconds", result->wall_seconds);
  mb__json_kv_bool(&j, "budget_exhausted", result->budget_exhausted != 0);
  mb__json_kv_bool(&j, "found", result->found != 0);
  kv_step_index(&j, "winner", result->winner);
  kv_step_index(&j, "closest", result->closest);
  kv_step_index(&j, "fastest_uniform", result->fastest_uniform);
  mb__json_kv_string(&j, "summary", result->summary);
  mb__json_kv_string(&j, "output_path",
                     result->output_path[0] ? result->output_path : NULL);
  mb__json_kv_string(&j, "output_error",
                     result->output_error[0] ? result->output_error : NULL);
  mb__json_key(&j, "steps");
  mb__json_array_begin(&j);
  for (int i = 0; i < result->n_steps; i++)
    write_step(&j, i, &result->steps[i]);
  mb__json_array_end(&j);
  mb__json_object_end(&j);
  fputc('\n', af.f);
  return mb__atomic_file_commit(&af, false, err);
}
