/* The wire format between the benchmark's parent and its workers (see
 * wire.h): a growable buffer with typed put/get, a result and tensors on
 * it, and one message written whole to a pipe. */
#include "bench/bench_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define MB_WIRE_NULL_STRING 0xffffffffu

void mb__wire_free(mb_wire *w) {
  free(w->data);
  memset(w, 0, sizeof *w);
}

void mb__wire_put(mb_wire *w, const void *p, size_t n) {
  if (w->failed || n == 0)
    return;
  if (w->size + n > w->cap) {
    size_t cap = w->cap ? w->cap : 256;
    while (cap < w->size + n)
      cap *= 2;
    unsigned char *grown = realloc(w->data, cap);
    if (!grown) {
      w->failed = 1;
      return;
    }
    w->data = grown;
    w->cap = cap;
  }
  memcpy(w->data + w->size, p, n);
  w->size += n;
}

void mb__wire_put_u32(mb_wire *w, uint32_t v) {
  mb__wire_put(w, &v, sizeof v);
}
void mb__wire_put_i64(mb_wire *w, int64_t v) {
  mb__wire_put(w, &v, sizeof v);
}
void mb__wire_put_f64(mb_wire *w, double v) {
  mb__wire_put(w, &v, sizeof v);
}

void mb__wire_put_str(mb_wire *w, const char *s) {
  if (!s) {
    mb__wire_put_u32(w, MB_WIRE_NULL_STRING);
    return;
  }
  size_t n = strlen(s);
  mb__wire_put_u32(w, (uint32_t)n);
  mb__wire_put(w, s, n);
}

int mb__wire_get(mb_wire *w, void *p, size_t n) {
  if (n == 0) /* p may be NULL then (an empty tensor's data) */
    return !w->failed;
  if (w->failed || n > w->size - w->pos) {
    w->failed = 1;
    memset(p, 0, n);
    return 0;
  }
  memcpy(p, w->data + w->pos, n);
  w->pos += n;
  return 1;
}

uint32_t mb__wire_get_u32(mb_wire *w) {
  uint32_t v;
  mb__wire_get(w, &v, sizeof v);
  return v;
}
int64_t mb__wire_get_i64(mb_wire *w) {
  int64_t v;
  mb__wire_get(w, &v, sizeof v);
  return v;
}
double mb__wire_get_f64(mb_wire *w) {
  double v;
  mb__wire_get(w, &v, sizeof v);
  return v;
}

char *mb__wire_get_str(mb_wire *w) {
  uint32_t n = mb__wire_get_u32(w);
  if (w->failed || n == MB_WIRE_NULL_STRING)
    return NULL;
  if (n > w->size - w->pos) {
    w->failed = 1;
    return NULL;
  }
  char *s = malloc((size_t)n + 1);
  if (!s) {
    w->failed = 1;
    return NULL;
  }
  mb__wire_get(w, s, n);
  s[n] = '\0';
  return s;
}

int mb__wire_get_str_buf(mb_wire *w, char *buf, size_t size) {
  char *s = mb__wire_get_str(w);
  snprintf(buf, size, "%s", s ? s : "");
  free(s);
  return !w->failed;
}

/* result->load: plain numbers, then the reason and the trials. */
/* Every string of a GPU result that came over the wire ends inside its
 * array. */
static void gpu_result_terminate(mb_gpu_result *g) {
#define MB_TERMINATE(field) field[sizeof field - 1] = '\0'
  MB_TERMINATE(g->info.name);
  MB_TERMINATE(g->info.uuid);
  MB_TERMINATE(g->info.driver);
  MB_TERMINATE(g->info.cuda_driver);
  MB_TERMINATE(g->info.cuda_runtime);
  MB_TERMINATE(g->info.compute_capability);
  MB_TERMINATE(g->state.unavailable);
  MB_TERMINATE(g->state.throttle);
#undef MB_TERMINATE
}

static void put_load(mb_wire *w, const mb_load_stats *l) {
  mb__wire_put_u32(w, (uint32_t)l->scenario);
  mb__wire_put_u32(w, (uint32_t)l->concurrency);
  mb__wire_put_f64(w, l->target_qps);
  mb__wire_put_f64(w, l->scheduled_qps);
  mb__wire_put_f64(w, l->achieved_qps);
  mb__wire_put_i64(w, l->queries);
  mb__wire_put_i64(w, l->unserved);
  mb__wire_put_u32(w, (uint32_t)l->samples_per_query);
  mb__wire_put_f64(w, l->duration_s);
  mb__wire_put_u32(w, (uint32_t)l->valid);
  mb__wire_put_str(w, l->invalid_reason);
  mb__wire_put_f64(w, l->queue_depth_mean);
  mb__wire_put_i64(w, l->queue_depth_max);
  mb__wire_put(w, &l->service_ms, sizeof l->service_ms); /* plain doubles */
  mb__wire_put_f64(w, l->slo_latency_ms);
  mb__wire_put_u32(w, (uint32_t)(l->slo_met + 1));
  mb__wire_put_f64(w, l->over_slo_share);
  /* plain doubles, as service_ms */
  mb__wire_put(w, &l->generator_lateness_us, sizeof l->generator_lateness_us);
  mb__wire_put(w, &l->handoff_us, sizeof l->handoff_us);
  mb__wire_put_i64(w, l->idle_sleeps);
  mb__wire_put_i64(w, l->spin_fallbacks);
  mb__wire_put_u32(w, (uint32_t)l->spin_always);
  mb__wire_put_f64(w, l->spin_margin_us);
  mb__wire_put_f64(w, l->steal_ms);
  mb__wire_put_f64(w, l->ideal_p99_ms);
  mb__wire_put_u32(w, (uint32_t)l->harness_excess);
  mb__wire_put_f64(w, l->peak_qps);
  mb__wire_put_u32(w, (uint32_t)(l->trials ? l->n_trials : 0));
  for (int i = 0; l->trials && i < l->n_trials; i++) {
    mb__wire_put_f64(w, l->trials[i].target_qps);
    mb__wire_put_f64(w, l->trials[i].achieved_qps);
    mb__wire_put_f64(w, l->trials[i].latency_ms);
    mb__wire_put_u32(w, (uint32_t)l->trials[i].valid);
    mb__wire_put_u32(w, (uint32_t)l->trials[i].slo_met);
  }
}

static void get_load(mb_wire *w, mb_load_stats *l) {
  uint32_t scenario = mb__wire_get_u32(w);
  l->scenario = scenario < MB_LOAD_SCENARIO_COUNT ? (mb_load_scenario)scenario
                                                  : MB_LOAD_NONE;
  l->concurrency = (int)mb__wire_get_u32(w);
  l->target_qps = mb__wire_get_f64(w);
  l->scheduled_qps = mb__wire_get_f64(w);
  l->achieved_qps = mb__wire_get_f64(w);
  l->queries = mb__wire_get_i64(w);
  l->unserved = mb__wire_get_i64(w);
  l->samples_per_query = (int)mb__wire_get_u32(w);
  l->duration_s = mb__wire_get_f64(w);
  l->valid = (int)mb__wire_get_u32(w);
  mb__wire_get_str_buf(w, l->invalid_reason, sizeof l->invalid_reason);
  l->queue_depth_mean = mb__wire_get_f64(w);
  l->queue_depth_max = mb__wire_get_i64(w);
  mb__wire_get(w, &l->service_ms, sizeof l->service_ms);
  l->slo_latency_ms = mb__wire_get_f64(w);
  l->slo_met = (int)mb__wire_get_u32(w) - 1;
  l->over_slo_share = mb__wire_get_f64(w);
  mb__wire_get(w, &l->generator_lateness_us, sizeof l->generator_lateness_us);
  mb__wire_get(w, &l->handoff_us, sizeof l->handoff_us);
  l->idle_sleeps = mb__wire_get_i64(w);
  l->spin_fallbacks = mb__wire_get_i64(w);
  l->spin_always = (int)mb__wire_get_u32(w) != 0;
  l->spin_margin_us = mb__wire_get_f64(w);
  l->steal_ms = mb__wire_get_f64(w);
  l->ideal_p99_ms = mb__wire_get_f64(w);
  l->harness_excess = (int)mb__wire_get_u32(w) != 0;
  l->peak_qps = mb__wire_get_f64(w);
  uint32_t n = mb__wire_get_u32(w);
  /* Each trial takes 32 bytes, which bounds a corrupt count. */
  if (w->failed || n == 0)
    return;
  if (n > (w->size - w->pos) / 32 ||
      !(l->trials = calloc(n, sizeof *l->trials))) {
    w->failed = 1;
    return;
  }
  l->n_trials = (int)n;
  for (uint32_t i = 0; i < n; i++) {
    l->trials[i].target_qps = mb__wire_get_f64(w);
    l->trials[i].achieved_qps = mb__wire_get_f64(w);
    l->trials[i].latency_ms = mb__wire_get_f64(w);
    l->trials[i].valid = (int)mb__wire_get_u32(w);
    l->trials[i].slo_met = (int)mb__wire_get_u32(w);
  }
}

/* The median's interval, --ci-target's outcome and the realistic phases:
 * plain doubles and integers (the speed-up's interval is the parent's). */
static void put_realistic(mb_wire *w, const mb_realistic_stats *s) {
  mb__wire_put_i64(w, s->iterations);
  mb__wire_put_f64(w, s->median_ms);
  mb__wire_put_f64(w, s->p99_ms);
  mb__wire_put_f64(w, s->gap);
  mb__wire_put_i64(w, s->pool_samples);
  mb__wire_put_f64(w, s->pool_mb);
}

static void get_realistic(mb_wire *w, mb_realistic_stats *s) {
  s->iterations = mb__wire_get_i64(w);
  s->median_ms = mb__wire_get_f64(w);
  s->p99_ms = mb__wire_get_f64(w);
  s->gap = mb__wire_get_f64(w);
  s->pool_samples = mb__wire_get_i64(w);
  s->pool_mb = mb__wire_get_f64(w);
}

static void put_measure_extras(mb_wire *w, const mb_bench_result *r) {
  mb__wire_put_f64(w, r->median_ci_ms[0]);
  mb__wire_put_f64(w, r->median_ci_ms[1]);
  mb__wire_put_f64(w, r->ci_target.target);
  mb__wire_put_u32(w, (uint32_t)r->ci_target.met);
  mb__wire_put_f64(w, r->ci_target.half_width);
  put_realistic(w, &r->fresh_inputs);
  put_realistic(w, &r->cold_cache);
}

static void get_measure_extras(mb_wire *w, mb_bench_result *r) {
  r->median_ci_ms[0] = mb__wire_get_f64(w);
  r->median_ci_ms[1] = mb__wire_get_f64(w);
  r->ci_target.target = mb__wire_get_f64(w);
  r->ci_target.met = mb__wire_get_u32(w) != 0;
  r->ci_target.half_width = mb__wire_get_f64(w);
  get_realistic(w, &r->fresh_inputs);
  get_realistic(w, &r->cold_cache);
}

void mb__wire_put_result(mb_wire *w, const mb_bench_result *r) {
  mb__wire_put_u32(w, (uint32_t)r->conversion_index);
  mb__wire_put_u32(w, (uint32_t)r->conversion_id);
  mb__wire_put_u32(w, (uint32_t)r->status);
  mb__wire_put_str(w, r->error);
  mb__wire_put_str(w, r->device);
  mb__wire_put_str(w, r->runtime);
  mb__wire_put_str(w, r->runtime_version);
  mb__wire_put_f64(w, r->load_ms);
  mb__wire_put_f64(w, r->task_accuracy);
  mb__wire_put_i64(w, r->task_rows);
  mb__wire_put_u32(w, (uint32_t)r->inaccurate);
  mb__wire_put_u32(w, (uint32_t)r->accuracy_criterion);
  mb__wire_put_u32(w, (uint32_t)(r->cache_hit + 1));
  mb__wire_put_f64(w, r->build_ms);
  mb__wire_put_u32(w, (uint32_t)(r->recompiles + 1));
  mb__wire_put_str(w, r->build_id);
  mb__wire_put_str(w, r->build_reason);
  mb__wire_put_str(w, r->exporter);
  mb__wire_put_u32(w, (uint32_t)r->int8_weights);
  mb__wire_put_str(w, r->int8_form);
  mb__wire_put_f64(w, r->first_run_ms);
  mb__wire_put(w, &r->latency_ms, sizeof r->latency_ms); /* plain doubles */
  /* Plain numbers and char arrays; both ends are the same binary. */
  mb__wire_put(w, &r->cold, sizeof r->cold);
  mb__wire_put(w, &r->energy, sizeof r->energy);
  mb__wire_put(w, &r->gpu, sizeof r->gpu);
  mb__wire_put_f64(w, r->cost_per_million);
  mb__wire_put_i64(w, r->iterations);
  mb__wire_put_u32(w, (uint32_t)r->batch_size);
  mb__wire_put_f64(w, r->throughput_sps);
  mb__wire_put_f64(w, r->inference_seconds);
  mb__wire_put_f64(w, r->elapsed_seconds);
  mb__wire_put_f64(w, r->peak_rss_mb);
  mb__wire_put_u32(w, (uint32_t)r->has_accuracy);
  mb__wire_put_u32(w, (uint32_t)(r->accuracy ? r->n_outputs : 0));
  for (int i = 0; r->accuracy && i < r->n_outputs; i++) {
    mb__wire_put_str(w, r->accuracy[i].name);
    mb__wire_put_f64(w, r->accuracy[i].max_abs_err);
    mb__wire_put_f64(w, r->accuracy[i].max_rel_err);
    mb__wire_put_f64(w, r->accuracy[i].cosine);
    mb__wire_put_f64(w, r->accuracy[i].top1_agreement);
    mb__wire_put_i64(w, r->accuracy[i].top1_rows);
  }
  mb__wire_put_f64(w, r->max_abs_err);
  mb__wire_put_f64(w, r->speedup_vs_baseline);
  mb__wire_put_u32(w, (uint32_t)r->n_warnings);
  for (int i = 0; i < r->n_warnings; i++)
    mb__wire_put_str(w, r->warnings[i]);
  mb__wire_put_i64(w, r->samples_ms ? r->n_samples_ms : 0);
  if (r->samples_ms)
    mb__wire_put(w, r->samples_ms, sizeof(double) * (size_t)r->n_samples_ms);
  mb__wire_put_str(w, r->log_path);
  mb__wire_put_str(w, r->backtrace);
  mb__wire_put_f64(w, r->precision_share);
  mb__wire_put_u32(w, (uint32_t)(r->segments ? r->n_segments : 0));
  for (int i = 0; r->segments && i < r->n_segments; i++) {
    mb__wire_put_str(w, r->segments[i].runtime);
    mb__wire_put_u32(w, (uint32_t)r->segments[i].nodes);
    mb__wire_put_f64(w, r->segments[i].mean_ms);
    mb__wire_put_str(w, r->segments[i].precision);
    mb__wire_put_f64(w, r->segments[i].gflops);
  }
  put_load(w, &r->load);
  put_measure_extras(w, r);
}

mb_status mb__wire_get_result(mb_wire *w, mb_bench_result *r, mb_error *err) {
  memset(r, 0, sizeof *r);
  r->conversion_index = (int)mb__wire_get_u32(w);
  r->conversion_id = (int)mb__wire_get_u32(w);
  uint32_t status = mb__wire_get_u32(w);
  r->status =
      status < MB_BENCH_STATUS_COUNT ? (mb_bench_status)status : MB_BENCH_ERROR;
  mb__wire_get_str_buf(w, r->error, sizeof r->error);
  mb__wire_get_str_buf(w, r->device, sizeof r->device);
  mb__wire_get_str_buf(w, r->runtime, sizeof r->runtime);
  mb__wire_get_str_buf(w, r->runtime_version, sizeof r->runtime_version);
  r->load_ms = mb__wire_get_f64(w);
  r->task_accuracy = mb__wire_get_f64(w);
  r->task_rows = mb__wire_get_i64(w);
  r->inaccurate = (int)mb__wire_get_u32(w);
  uint32_t criterion = mb__wire_get_u32(w);
  r->accuracy_criterion = criterion < MB_ACCURACY_CRITERION_COUNT
                              ? (mb_accuracy_criterion)criterion
                              : MB_ACCURACY_UNKNOWN;
  r->cache_hit = (int)mb__wire_get_u32(w) - 1;
  r->build_ms = mb__wire_get_f64(w);
  r->recompiles = (int)mb__wire_get_u32(w) - 1;
  mb__wire_get_str_buf(w, r->build_id, sizeof r->build_id);
  mb__wire_get_str_buf(w, r->build_reason, sizeof r->build_reason);
  mb__wire_get_str_buf(w, r->exporter, sizeof r->exporter);
  r->int8_weights = (mb_int8_weights)mb__wire_get_u32(w);
  mb__wire_get_str_buf(w, r->int8_form, sizeof r->int8_form);
  r->first_run_ms = mb__wire_get_f64(w);
  mb__wire_get(w, &r->latency_ms, sizeof r->latency_ms);
  mb__wire_get(w, &r->cold, sizeof r->cold);
  mb__wire_get(w, &r->energy, sizeof r->energy);
  r->cold.note[sizeof r->cold.note - 1] = '\0';
  r->energy.domains[sizeof r->energy.domains - 1] = '\0';
  r->energy.unavailable[sizeof r->energy.unavailable - 1] = '\0';
  mb__wire_get(w, &r->gpu, sizeof r->gpu);
  gpu_result_terminate(&r->gpu);
  r->cost_per_million = mb__wire_get_f64(w);
  r->iterations = mb__wire_get_i64(w);
  r->batch_size = (int)mb__wire_get_u32(w);
  r->throughput_sps = mb__wire_get_f64(w);
  r->inference_seconds = mb__wire_get_f64(w);
  r->elapsed_seconds = mb__wire_get_f64(w);
  r->peak_rss_mb = mb__wire_get_f64(w);
  r->has_accuracy = (int)mb__wire_get_u32(w);
  uint32_t n_outputs = mb__wire_get_u32(w);
  /* Each entry takes at least 28 bytes, which bounds a corrupt count. */
  if (!w->failed && n_outputs > 0 && n_outputs <= (w->size - w->pos) / 28) {
    r->accuracy = calloc(n_outputs, sizeof *r->accuracy);
    if (!r->accuracy)
      w->failed = 1;
    else
      r->n_outputs = (int)n_outputs;
    for (uint32_t i = 0; r->accuracy && i < n_outputs; i++) {
      mb__wire_get_str_buf(w, r->accuracy[i].name, sizeof r->accuracy[i].name);
      r->accuracy[i].max_abs_err = mb__wire_get_f64(w);
      r->accuracy[i].max_rel_err = mb__wire_get_f64(w);
      r->accuracy[i].cosine = mb__wire_get_f64(w);
      r->accuracy[i].top1_agreement = mb__wire_get_f64(w);
      r->accuracy[i].top1_rows = mb__wire_get_i64(w);
    }
  } else if (n_outputs > 0) {
    w->failed = 1;
  }
  r->max_abs_err = mb__wire_get_f64(w);
  r->speedup_vs_baseline = mb__wire_get_f64(w);
  uint32_t n_warnings = mb__wire_get_u32(w);
  if (!w->failed && n_warnings <= (w->size - w->pos) / 4) {
    for (uint32_t i = 0; !w->failed && i < n_warnings; i++) {
      char line[MB_ERROR_MESSAGE_SIZE];
      mb__wire_get_str_buf(w, line, sizeof line);
      if (!w->failed && mb__result_add_warning(r, "%s", line))
        w->failed = 1;
    }
  } else {
    w->failed = 1;
  }
  int64_t n_samples = mb__wire_get_i64(w);
  if (!w->failed && n_samples > 0 &&
      (uint64_t)n_samples <= (w->size - w->pos) / sizeof(double)) {
    r->samples_ms = malloc(sizeof(double) * (size_t)n_samples);
    if (!r->samples_ms)
      w->failed = 1;
    else {
      r->n_samples_ms = n_samples;
      mb__wire_get(w, r->samples_ms, sizeof(double) * (size_t)n_samples);
    }
  } else if (n_samples != 0) {
    w->failed = 1;
  }
  mb__wire_get_str_buf(w, r->log_path, sizeof r->log_path);
  r->backtrace = mb__wire_get_str(w);
  r->precision_share = mb__wire_get_f64(w);
  uint32_t n_segments = mb__wire_get_u32(w);
  /* Each entry takes at least 16 bytes, which bounds a corrupt count. */
  if (!w->failed && n_segments > 0 && n_segments <= (w->size - w->pos) / 16) {
    if (!(r->segments = calloc(n_segments, sizeof *r->segments)))
      w->failed = 1;
    else
      r->n_segments = (int)n_segments;
    for (uint32_t i = 0; r->segments && i < n_segments; i++) {
      mb__wire_get_str_buf(w, r->segments[i].runtime,
                           sizeof r->segments[i].runtime);
      r->segments[i].nodes = (int)mb__wire_get_u32(w);
      r->segments[i].mean_ms = mb__wire_get_f64(w);
      mb__wire_get_str_buf(w, r->segments[i].precision,
                           sizeof r->segments[i].precision);
      r->segments[i].gflops = mb__wire_get_f64(w);
    }
  } else if (n_segments > 0) {
    w->failed = 1;
  }
  get_load(w, &r->load);
  get_measure_extras(w, r);
  if (w->failed) {
    mb__result_clear(r);
    return mb__error(err, MB_STATUS_INTERNAL,
                     "malformed result message from the worker");
  }
  return MB_STATUS_OK;
}

void mb__wire_put_tensors(mb_wire *w, int n, mb_tensor *const *tensors) {
  mb__wire_put_u32(w, (uint32_t)n);
  for (int i = 0; i < n; i++) {
    const mb_tensor *t = tensors[i];
    mb__wire_put_str(w, t->name);
    mb__wire_put_u32(w, (uint32_t)t->dtype);
    mb__wire_put_u32(w, (uint32_t)t->rank);
    mb__wire_put(w, t->dims, sizeof(int64_t) * (size_t)t->rank);
    mb__wire_put_i64(w, (int64_t)t->nbytes);
    mb__wire_put(w, t->data, t->nbytes);
  }
}

mb_status mb__wire_get_tensors(mb_wire *w, int n, mb_tensor **tensors_out,
                               mb_error *err) {
  mb_status status = MB_STATUS_OK;
  for (int i = 0; i < n; i++)
    tensors_out[i] = NULL;
  if ((int)mb__wire_get_u32(w) != n || w->failed)
    return mb__error(err, MB_STATUS_INTERNAL,
                     "reference outputs: expected %d tensors from the worker",
                     n);
  for (int i = 0; i < n; i++) {
    char *name = mb__wire_get_str(w);
    mb_dtype dtype = (mb_dtype)mb__wire_get_u32(w);
    uint32_t rank = mb__wire_get_u32(w);
    int64_t dims[MB_MAX_RANK] = {0};
    if (rank > MB_MAX_RANK)
      w->failed = 1;
    else
      mb__wire_get(w, dims, sizeof(int64_t) * rank);
    int64_t nbytes = mb__wire_get_i64(w);
    if (!w->failed &&
        (status = mb_tensor_create(dtype, (int)rank, dims, &tensors_out[i],
                                   err)) == MB_STATUS_OK) {
      if ((int64_t)tensors_out[i]->nbytes != nbytes)
        w->failed = 1;
      else
        mb__wire_get(w, tensors_out[i]->data, (size_t)nbytes);
      tensors_out[i]->name = name;
      name = NULL;
    }
    free(name);
    if (w->failed && !status)
      status = mb__error(err, MB_STATUS_INTERNAL,
                         "malformed reference output %d from the worker", i);
    if (status) {
      for (int j = 0; j <= i; j++) {
        mb_tensor_free(tensors_out[j]);
        tensors_out[j] = NULL;
      }
      return status;
    }
  }
  return MB_STATUS_OK;
}

static int write_all(int fd, const void *p, size_t n) {
  const unsigned char *b = p;
  while (n > 0) {
    ssize_t w = write(fd, b, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    b += w;
    n -= (size_t)w;
  }
  return 0;
}

int mb__msg_send(int fd, mb_msg_type type, const void *payload, uint32_t n) {
  if (fd < 0)
    return -1;
  uint32_t header[2] = {(uint32_t)type, n};
  if (write_all(fd, header, sizeof header))
    return -1;
  return write_all(fd, payload, n);
}
