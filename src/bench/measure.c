/* The measurement loop: first run, warm-up, timed iterations.
 *
 * Only the runtime's run() sits between the two clock reads of an
 * iteration: inputs are tensors built before the loop, picked by index, and
 * everything else (storing the sample, deciding whether to stop, progress
 * messages, growing the sample array) happens outside the timed region.
 *
 * With --ci-target the loop goes on past the minimums until the median's
 * 95% interval is within the target or --max-time passes. The interval is
 * distribution-free (order statistics, core/stats.c), found by selection
 * on a copy in O(n), and checked at most every MB_CI_CHECK_INTERVAL_S and
 * only once the samples grew by a tenth, so that checking stays a small,
 * untimed share of the loop. */
#include "bench/bench_internal.h"

#include "conversions/conversion.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

/* Progress messages at most this often, so that a fast model's loop is not
 * slowed by writes to the pipe. */
#define MB_PROGRESS_INTERVAL_S 0.1
#define MB_CI_CHECK_INTERVAL_S 0.1
#define MB_CI_CONFIDENCE 0.95

static void report(const mb_progress_sink *progress, const char *phase,
                   int64_t iterations, double elapsed_s) {
  if (progress && progress->fn)
    progress->fn(progress->ctx, phase, iterations, elapsed_s);
}

static const mb_tensor *const *sample_inputs(const mb_bench_job *job,
                                             int64_t i) {
  return (const mb_tensor *const *)job->samples[i % job->n_samples];
}

/* The latencies before the timed phase (the first run's, the warm-up's),
 * kept for the cold start's iterations to steady state (config->cold). */
typedef struct warm_series {
  double *ms;
  int64_t n, cap;
} warm_series;

/* Appends; a failed allocation drops the series (the figure becomes
 * unknown), never the run. */
static void series_add(warm_series *s, double ms) {
  if (s->n == s->cap) {
    int64_t cap = s->cap ? s->cap * 2 : 64;
    double *grown = realloc(s->ms, sizeof(double) * (size_t)cap);
    if (!grown) {
      free(s->ms);
      memset(s, 0, sizeof *s);
      s->cap = -1; /* stays failed */
      return;
    }
    s->ms = grown;
    s->cap = cap;
  }
  if (s->cap > 0)
    s->ms[s->n++] = ms;
}

/* The cold start's iterations to steady state: the first run, the
 * warm-up and the first MB_STEADY_TIMED timed latencies, against the timed
 * median. */
static void note_steady(warm_series *s, const mb_bench_result *result) {
  int64_t timed = MB_MIN(result->n_samples_ms, (int64_t)MB_STEADY_TIMED);
  for (int64_t i = 0; i < timed && s->cap >= 0; i++)
    series_add(s, result->samples_ms[i]);
}

/* Runs until both the count and the time are reached: the phase runs at
 * least `min_iterations` times and at least `min_seconds` long. series:
 * NULL, or where each warm-up latency goes. */
static mb_status warm_up(const mb_runtime *rt, void *session,
                         const mb_bench_job *job,
                         const mb_progress_sink *progress, warm_series *series,
                         mb_error *err) {
  const mb_bench_config *c = job->config;
  double start = mb__now(), last_report = start, now = start;
  int64_t done = 0;
  report(progress, "warmup", 0, 0.0);
  while (done < c->warmup_iterations || now - start < c->warmup_seconds) {
    double before = mb__now();
    mb_status status = rt->run(session, sample_inputs(job, done + 1), err);
    if (status)
      return mb__error_prefix(err, status, "warm-up run %lld",
                              (long long)done + 1);
    done++;
    now = mb__now();
    if (series)
      series_add(series, (now - before) * 1e3);
    if (now - last_report >= MB_PROGRESS_INTERVAL_S) {
      report(progress, "warmup", done, now - start);
      last_report = now;
    }
  }
  return MB_STATUS_OK;
}

/* Test hook, never for real use: MODELBENCH_TEST_DELAY_MS="NAME=MS" makes
 * every timed run of conversion NAME sleep MS milliseconds inside the timed
 * region, so tests can check that `compare` catches a slowdown. Returns the
 * delay in seconds, 0 when not set for this conversion. */
static double test_delay_s(int conversion_index) {
  const char *env = getenv("MODELBENCH_TEST_DELAY_MS");
  const mb_conversion_def *def = mb__conversion_def(conversion_index);
  const char *eq = env ? strchr(env, '=') : NULL;
  if (!eq || !def || strlen(def->name) != (size_t)(eq - env) ||
      strncmp(env, def->name, (size_t)(eq - env)) != 0)
    return 0.0;
  double ms = atof(eq + 1);
  return ms > 0 && ms < 1e4 ? ms * 1e-3 : 0.0;
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Half the median's interval over the median, from x[0..n) (scratch: n
 * doubles); -1 when there are too few samples for an interval. */
static double relative_half_width(const double *x, int64_t n, double *scratch,
                                  double *lo_out, double *hi_out) {
  double lo, hi;
  *lo_out = *hi_out = 0;
  if (mb__median_ci(x, n, MB_CI_CONFIDENCE, scratch, &lo, &hi, NULL) ||
      isnan(lo))
    return -1;
  double median = mb__median(x, n);
  if (!(median > 0))
    return -1;
  *lo_out = lo;
  *hi_out = hi;
  return (hi - lo) / 2 / median;
}

mb_status mb__measure(const mb_runtime *rt, void *session,
                      const mb_bench_job *job, const mb_progress_sink *progress,
                      mb_bench_result *result, mb_error *err) {
  const mb_bench_config *c = job->config;
  mb_status status;
  warm_series series = {0}, *cold = c->cold ? &series : NULL;
  mb_gpu_timing gpu = {0};

  double t0 = mb__now();
  status = rt->run(session, sample_inputs(job, 0), err);
  double t1 = mb__now();
  if (status)
    return mb__error_prefix(err, status, "first run");
  result->first_run_ms = (t1 - t0) * 1e3;
  if (cold)
    series_add(cold, result->first_run_ms);

  if ((status = warm_up(rt, session, job, progress, cold, err))) {
    free(series.ms);
    return status;
  }

  /* Every sample is used at least once. */
  int64_t min_iterations = MB_MAX((int64_t)c->min_iterations, job->n_samples);
  if (min_iterations < 1)
    min_iterations = 1;
  double max_seconds = c->max_seconds > 0.0 ? c->max_seconds : 1e300;
  int64_t cap = MB_MAX(min_iterations, 1024);
  bool ci_asked = c->ci_target > 0;
  double *samples_ms = malloc(sizeof(double) * (size_t)cap);
  /* The interval's selection works on a copy: the samples keep their
   * order. */
  double *scratch = malloc(sizeof(double) * (size_t)cap);
  if (!samples_ms || !scratch) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "cannot allocate %lld latency samples", (long long)cap);
    goto fail;
  }

  report(progress, "measure", 0, 0.0);
  int64_t n = 0;
  double inference_s = 0.0;
  double cpu_start = mb__cpu_time();
  long long faults_start = mb__minor_faults();
  /* The energy counters, read outside the timed region: the file reads
   * take microseconds. */
  mb_energy_window energy;
  mb__energy_start(&energy);
  /* A session on a GPU: its device times and the device's state too. */
  mb__gpu_timing_begin(rt, session, result, &gpu);
  double start = mb__now(), last_report = start, last_check = start;
  double delay_s = test_delay_s(result->conversion_index);
  int64_t checked_n = 0;
  bool ci_met = false;
  for (;;) {
    const mb_tensor *const *inputs = sample_inputs(job, n);
    double before = mb__now();
    status = rt->run(session, inputs, err);
    if (delay_s > 0)
      sleep_s(delay_s);
    double after = mb__now();
    if (status) {
      mb__error_prefix(err, status, "timed run %lld", (long long)n + 1);
      goto fail;
    }
    double seconds = after - before;
    if (gpu.on)
      mb__gpu_timing_note(rt, session, n, &gpu);
    samples_ms[n++] = seconds * 1e3;
    inference_s += seconds;
    double elapsed = after - start;
    bool minimums = n >= min_iterations && elapsed >= c->min_seconds;
    if (minimums && ci_asked &&
        (checked_n == 0 || (after - last_check >= MB_CI_CHECK_INTERVAL_S &&
                            n >= checked_n + checked_n / 10))) {
      double lo, hi;
      double half = relative_half_width(samples_ms, n, scratch, &lo, &hi);
      checked_n = n;
      last_check = mb__now();
      if (half >= 0 && half <= c->ci_target) {
        ci_met = true;
        break;
      }
    }
    if ((minimums && !ci_asked) || elapsed >= max_seconds)
      break;
    if (n == cap) {
      double *grown = realloc(samples_ms, sizeof(double) * (size_t)cap * 2);
      if (grown)
        samples_ms = grown;
      double *grown_scratch =
          grown ? realloc(scratch, sizeof(double) * (size_t)cap * 2) : NULL;
      if (!grown || !grown_scratch) {
        status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                           "cannot grow the latency samples past %lld",
                           (long long)cap);
        goto fail;
      }
      scratch = grown_scratch;
      cap *= 2;
    }
    if (after - last_report >= MB_PROGRESS_INTERVAL_S) {
      report(progress, "measure", n, elapsed);
      last_report = after;
    }
  }
  double end = mb__now();
  mb__energy_stop(&energy, n * job->batch_size, &result->energy);
  if ((status = mb__gpu_timing_end(rt, session, sample_inputs(job, 0), n,
                                   result, &gpu, err)))
    goto fail;
  double cpu_s = mb__cpu_time() - cpu_start;
  long long faults_end = mb__minor_faults();

  result->iterations = n;
  result->n_samples_ms = n;
  result->samples_ms = samples_ms;
  result->inference_seconds = inference_s;
  result->elapsed_seconds = end - start;
  result->batch_size = job->batch_size;
  result->throughput_sps =
      inference_s > 0.0 ? (double)job->batch_size * (double)n / inference_s
                        : 0.0;
  report(progress, "measure", n, end - start);
  if ((status = mb__latency_stats(samples_ms, n, &result->latency_ms, err)))
    goto fail_scratch;
  if (cold) {
    note_steady(cold, result);
    result->cold.iterations_to_steady =
        cold->cap < 0 ? -1
                      : mb__steady_iterations(cold->ms, cold->n,
                                              result->latency_ms.median);
    free(series.ms);
    series.ms = NULL;
  }

  double half =
      relative_half_width(samples_ms, n, scratch, &result->median_ci_ms[0],
                          &result->median_ci_ms[1]);
  free(scratch);
  scratch = NULL;
  if (ci_asked) {
    result->ci_target =
        (mb_ci_target_result){c->ci_target, ci_met ? 1 : 0, half};
    if (!ci_met && half >= 0)
      mb__result_add_warning(result,
                             "stopped at --max-time (%.3g s) with +-%.1f%%, "
                             "asked %.1f%%",
                             c->max_seconds, 100 * half, 100 * c->ci_target);
    else if (!ci_met)
      mb__result_add_warning(result,
                             "stopped at --max-time (%.3g s) after %lld "
                             "iterations, too few for an interval; asked "
                             "+-%.1f%%",
                             c->max_seconds, (long long)n, 100 * c->ci_target);
  }

  /* Only a run that faults often pays for measuring what a fault costs. */
  if (faults_start >= 0 &&
      faults_end - faults_start >= MB_WARN_FAULT_PAGES * n &&
      (status = mb__result_add_fault_warning(result, faults_end - faults_start,
                                             mb__page_fault_us())))
    return status;

  /* A single-threaded run that got much less than one CPU was preempted:
   * other processes competed for the core, so latencies are inflated.
   * (With more threads the expected CPU time is not known; a GPU run may
   * sleep while it waits for the device.) */
  if (c->threads <= 1 && !result->gpu.used && result->elapsed_seconds >= 0.05 &&
      cpu_s < 0.8 * result->elapsed_seconds)
    mb__result_add_warning(result,
                           "machine busy: the worker got %.0f%% of a CPU "
                           "during the timed phase",
                           100.0 * cpu_s / result->elapsed_seconds);
  return MB_STATUS_OK;

fail:
  free(samples_ms);
  mb__gpu_timing_abort(&gpu);
fail_scratch:
  free(scratch);
  free(series.ms);
  return status;
}
