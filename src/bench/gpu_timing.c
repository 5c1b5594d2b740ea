/* A GPU conversion's timing beyond the end-to-end loop (measure.c): the
 * device's own time of each timed call (the runtime's CUDA events), the
 * copies to and from the device timed after the loop, trtexec's host
 * latency, the device described by the runtime and NVML, and NVML's
 * samples of clocks, temperature, power and throttling over the timed
 * phase, with warnings when the device slowed down.
 *
 * The timed loop's inputs stay on the device (the runtime copies each
 * sample there once); each timed call ends at a synchronisation, so the
 * end-to-end figure is what a caller waiting for the result sees. */
#include "bench/bench_internal.h"
#include "bench/gpu.h"

#include <stdlib.h>
#include <string.h>

/* NVML's samples this often during the timed phase. */
#define MB_GPU_SAMPLE_PERIOD_MS 50.0

void mb__gpu_timing_begin(const mb_runtime *rt, void *session,
                          mb_bench_result *result, mb_gpu_timing *t) {
  memset(t, 0, sizeof *t);
  if (strcmp(result->device, mb_device_name(MB_DEVICE_CUDA)) != 0 ||
      !rt->gpu_describe || !rt->gpu_describe(session, &result->gpu))
    return;
  t->on = 1;
  result->gpu.used = 1;
  mb_error e = {MB_STATUS_OK, ""};
  if (mb__gpu_sampler_start(mb__gpu_nvml_index(result->gpu.info.index),
                            MB_GPU_SAMPLE_PERIOD_MS, &t->sampler, &e)) {
    t->sampler = NULL;
    snprintf(result->gpu.state.unavailable,
             sizeof result->gpu.state.unavailable, "%s", e.message);
  }
}

void mb__gpu_timing_note(const mb_runtime *rt, void *session, int64_t i,
                         mb_gpu_timing *t) {
  if (!t->on || !rt->gpu_compute_ms || t->cap < 0)
    return;
  if (i >= t->cap) {
    int64_t cap = t->cap ? t->cap * 2 : 1024;
    while (cap <= i)
      cap *= 2;
    double *grown = realloc(t->compute_ms, sizeof(double) * (size_t)cap);
    if (!grown) { /* the device times become unknown, never the run */
      free(t->compute_ms);
      t->compute_ms = NULL;
      t->cap = -1;
      return;
    }
    t->compute_ms = grown;
    t->cap = cap;
  }
  t->compute_ms[i] = rt->gpu_compute_ms(session);
}

/* The known values of x[0..n) moved to its front; their count. */
static int64_t known_only(double *x, int64_t n) {
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++)
    if (x[i] >= 0)
      x[k++] = x[i];
  return k;
}

/* The copies: MB_GPU_COPIES each way on the first sample. A runtime that
 * cannot time them leaves them out, saying why. */
static mb_status time_copies(const mb_runtime *rt, void *session,
                             const mb_tensor *const *inputs,
                             mb_bench_result *result, mb_error *err) {
  mb_gpu_result *g = &result->gpu;
  if (!rt->gpu_copies)
    return MB_STATUS_OK;
  double *h2d = malloc(sizeof(double) * MB_GPU_COPIES * 2);
  if (!h2d)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  double *d2h = h2d + MB_GPU_COPIES, mb[2] = {0, 0};
  mb_error e = {MB_STATUS_OK, ""};
  mb_status status = MB_STATUS_OK;
  if (rt->gpu_copies(session, inputs, MB_GPU_COPIES, h2d, d2h, mb, &e)) {
    mb__result_add_warning(result,
                           "the copies to and from the GPU were not "
                           "timed: %s",
                           e.message);
    goto done;
  }
  if ((status = mb__latency_stats(h2d, MB_GPU_COPIES, &g->h2d_ms, err)) ||
      (status = mb__latency_stats(d2h, MB_GPU_COPIES, &g->d2h_ms, err)))
    goto done;
  g->n_copies = MB_GPU_COPIES;
  g->h2d_mb = mb[0];
  g->d2h_mb = mb[1];
done:
  free(h2d);
  return status;
}

mb_status mb__gpu_timing_end(const mb_runtime *rt, void *session,
                             const mb_tensor *const *inputs, int64_t n,
                             mb_bench_result *result, mb_gpu_timing *t,
                             mb_error *err) {
  mb_status status = MB_STATUS_OK;
  if (!t->on)
    goto done;
  mb_gpu_result *g = &result->gpu;
  if (t->sampler) {
    mb__gpu_sampler_stop(t->sampler, &g->state);
    t->sampler = NULL;
  } else if (!g->state.unavailable[0]) {
    snprintf(g->state.unavailable, sizeof g->state.unavailable, "not sampled");
  }
  /* The runtime's description again, now with its peak memory; NVML's
   * facts beside it (the runtime's name and CUDA win). */
  mb_gpu_info mine = g->info;
  rt->gpu_describe(session, g);
  mb_error e = {MB_STATUS_OK, ""};
  mb_gpu_info nvml = mine;
  if (mb__gpu_describe(mb__gpu_nvml_index(mine.index), &nvml, &e) ==
      MB_STATUS_OK) {
    nvml.index = mine.index;
    if (g->info.name[0])
      memcpy(nvml.name, g->info.name, sizeof nvml.name);
    memcpy(nvml.cuda_runtime, g->info.cuda_runtime, sizeof nvml.cuda_runtime);
    if (g->info.compute_capability[0])
      memcpy(nvml.compute_capability, g->info.compute_capability,
             sizeof nvml.compute_capability);
    g->info = nvml;
  }
  if (t->compute_ms) {
    int64_t k = known_only(t->compute_ms, MB_MIN(n, t->cap));
    if (k > 0 &&
        (status = mb__latency_stats(t->compute_ms, k, &g->compute_ms, err)))
      goto done;
    g->n_compute = k;
  }
  if ((status = time_copies(rt, session, inputs, result, err)))
    goto done;
  g->host_latency_ms =
      g->n_compute > 0 && g->n_copies > 0
          ? g->h2d_ms.median + g->compute_ms.median + g->d2h_ms.median
          : 0;
  mb__gpu_state_warnings(&g->state, result);
done:
  mb__gpu_timing_abort(t);
  return status;
}

void mb__gpu_timing_abort(mb_gpu_timing *t) {
  if (t->sampler) {
    mb_gpu_state ignored;
    mb__gpu_sampler_stop(t->sampler, &ignored);
  }
  free(t->compute_ms);
  memset(t, 0, sizeof *t);
}
