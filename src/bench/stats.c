/* Latency statistics and the warnings that say when not to trust them.
 *
 * Percentiles interpolate linearly between the closest ranks (numpy's
 * default), so p99 of 20 samples is an interpolation between the two
 * slowest: honest about what it is, hence the "p99 from only N iterations"
 * warning below 100 iterations. */
#include "bench/bench_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

mb_status mb__latency_stats(const double *samples, int64_t n,
                            mb_latency_stats *stats_out, mb_error *err) {
  mb_latency_stats s;
  memset(&s, 0, sizeof s);
  if (n <= 0) {
    *stats_out = s;
    return MB_STATUS_OK;
  }
  double *sorted = malloc(sizeof(double) * (size_t)n);
  if (!sorted)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "cannot allocate %lld latency samples", (long long)n);
  memcpy(sorted, samples, sizeof(double) * (size_t)n);
  qsort(sorted, (size_t)n, sizeof(double), compare_double);

  double sum = 0.0;
  for (int64_t i = 0; i < n; i++)
    sum += sorted[i];
  s.mean = sum / (double)n;
  /* Two-pass variance: the samples are close to each other, so subtracting
   * the mean first keeps the sum of squares accurate. */
  double squares = 0.0;
  for (int64_t i = 0; i < n; i++)
    squares += (sorted[i] - s.mean) * (sorted[i] - s.mean);
  s.stddev = n > 1 ? sqrt(squares / (double)(n - 1)) : 0.0;
  s.cv = s.mean > 0.0 ? s.stddev / s.mean : 0.0;
  s.min = sorted[0];
  s.max = sorted[n - 1];
  s.median = mb__percentile(sorted, n, 50.0);
  s.p90 = mb__percentile(sorted, n, 90.0);
  s.p95 = mb__percentile(sorted, n, 95.0);
  s.p99 = mb__percentile(sorted, n, 99.0);
  free(sorted);
  *stats_out = s;
  return MB_STATUS_OK;
}

static bool near_steady(double ms, double steady_ms) {
  return fabs(ms - steady_ms) <= MB_STEADY_TOLERANCE * steady_ms;
}

int64_t mb__steady_iterations(const double *series, int64_t n,
                              double steady_ms) {
  if (!(steady_ms > 0.0) || n < MB_STEADY_WINDOW)
    return -1;
  /* The last window whose median is off: every start up to it fails. */
  int64_t first = 0;
  for (int64_t k = n - MB_STEADY_WINDOW; k >= 0; k--) {
    double window[MB_STEADY_WINDOW];
    memcpy(window, series + k, sizeof window);
    qsort(window, MB_STEADY_WINDOW, sizeof(double), compare_double);
    if (!near_steady(window[MB_STEADY_WINDOW / 2], steady_ms)) {
      first = k + 1;
      break;
    }
  }
  for (int64_t s = first; s <= n - MB_STEADY_WINDOW; s++)
    if (near_steady(series[s], steady_ms))
      return s;
  return -1;
}

mb_status mb__result_add_warning(mb_bench_result *result, const char *fmt,
                                 ...) {
  char line[MB_ERROR_MESSAGE_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  char **grown = realloc(result->warnings,
                         sizeof(char *) * (size_t)(result->n_warnings + 1));
  if (!grown)
    return MB_STATUS_OUT_OF_MEMORY;
  result->warnings = grown;
  if (!(grown[result->n_warnings] = mb__strdup(line)))
    return MB_STATUS_OUT_OF_MEMORY;
  result->n_warnings++;
  return MB_STATUS_OK;
}

/* One "machine busy" line per result: what says so (`what`) joins the
 * worker's own observation (measure.c) when there is one. */
static mb_status add_busy_warning(mb_bench_result *result, const char *what) {
  static const char prefix[] = "machine busy: ";
  char line[MB_ERROR_MESSAGE_SIZE];
  for (int i = 0; i < result->n_warnings; i++) {
    if (strncmp(result->warnings[i], prefix, sizeof prefix - 1) != 0)
      continue;
    if (snprintf(line, sizeof line, "%s%s, %s", prefix, what,
                 result->warnings[i] + sizeof prefix - 1) < 0)
      return MB_STATUS_INTERNAL;
    char *joined = mb__strdup(line);
    if (!joined)
      return MB_STATUS_OUT_OF_MEMORY;
    free(result->warnings[i]);
    result->warnings[i] = joined;
    return MB_STATUS_OK;
  }
  return mb__result_add_warning(result, "%s%s", prefix, what);
}

/* Whether the machine was busy, and the words that say why (into what):
 * measured other processes' CPU when there is a measurement, else the
 * load average at the start of the run. */
static bool machine_busy(const mb_machine_info *machine, double others_cores,
                         int own_threads, char *what, size_t size) {
  if (!machine || machine->cores <= 0)
    return false;
  if (others_cores >= 0.0) {
    double free_cores = MB_MAX((double)machine->cores - own_threads, 0.0);
    snprintf(what, size, "other processes used %.1f of %d cores while it ran",
             others_cores, machine->cores);
    return others_cores > free_cores + MB_WARN_OTHERS_SLACK;
  }
  snprintf(what, size, "load average %.2f on %d cores", machine->load_average,
           machine->cores);
  return machine->load_average >= 0.0 &&
         machine->load_average > (double)machine->cores - 0.5;
}

mb_status mb__result_add_fault_warning(mb_bench_result *result,
                                       long long faults, double fault_us) {
  if (result->iterations <= 0 || faults <= 0 || !(fault_us > 0.0))
    return MB_STATUS_OK;
  double per_run = (double)faults / (double)result->iterations;
  double cost_ms = per_run * fault_us * 1e-3;
  double median = result->latency_ms.median;
  if (per_run < MB_WARN_FAULT_PAGES || !(median > 0.0) ||
      cost_ms < MB_WARN_FAULT_SHARE * median)
    return MB_STATUS_OK;
  return mb__result_add_warning(
      result,
      "fresh memory: %.0f page faults per inference (~%.3g ms of the %.3g ms "
      "median at %.2g us each, measured here): the allocator returns memory to "
      "the OS and takes "
      "it back every run (glibc's mmap threshold; a caching allocator or "
      "MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ would remove it)",
      per_run, cost_ms, median, fault_us);
}

/* Runtimes whose threads are libgomp's: its workers spin at every barrier
 * (OMP_WAIT_POLICY unset), so when another process takes a core one
 * preempted worker stalls each parallel region. On a busy 2-core machine
 * this slowed oneDNN's conversions 20-90x against ONNX Runtime's ~8x
 * (issue 17): their medians then measure the load, not the engine.
 * OMP_WAIT_POLICY=passive must be set before modelbench starts (libgomp
 * reads it once, at load). */
static const char *const openmp_runtimes[] = {"onednn", "pytorch", "libtorch"};

static int spins_on_openmp(const char *runtime) {
  for (size_t i = 0; i < sizeof openmp_runtimes / sizeof *openmp_runtimes; i++)
    if (strcmp(runtime, openmp_runtimes[i]) == 0)
      return 1;
  return 0;
}

mb_status mb__result_add_stat_warnings(mb_bench_result *result,
                                       const mb_machine_info *machine,
                                       double others_cores, int own_threads) {
  mb_status status = MB_STATUS_OK;
  if (result->status != MB_BENCH_OK)
    return MB_STATUS_OK;
  /* Server latencies vary with the queue, offline ones with the batch
   * order: their spread is the answer, not noise. */
  bool timed_loop = result->load.scenario == MB_LOAD_NONE ||
                    result->load.scenario == MB_LOAD_SINGLE_STREAM;
  if (timed_loop && result->latency_ms.cv > MB_WARN_CV && !status)
    status = mb__result_add_warning(result, "high variance: CV %.1f%% > %.0f%%",
                                    result->latency_ms.cv * 100.0,
                                    MB_WARN_CV * 100.0);
  if (result->iterations < MB_WARN_P99_MIN_ITERATIONS && !status)
    status = mb__result_add_warning(result, "p99 from only %lld iterations",
                                    (long long)result->iterations);
  if (machine && machine->governor[0] &&
      strcmp(machine->governor, "performance") != 0 && !status)
    status = mb__result_add_warning(
        result, "CPU frequency governor is '%s', not 'performance'",
        machine->governor);
  char busy_why[160];
  if (!status && machine_busy(machine, others_cores, own_threads, busy_why,
                              sizeof busy_why)) {
    status = add_busy_warning(result, busy_why);
    if (!status && spins_on_openmp(result->runtime) &&
        !getenv("OMP_WAIT_POLICY"))
      status = mb__result_add_warning(
          result,
          "%s's OpenMP threads spin-wait: on a busy machine its latency "
          "measures the load far more than other runtimes' (set "
          "OMP_WAIT_POLICY=passive before modelbench starts, or run on an "
          "idle machine)",
          result->runtime);
  }
  return status;
}

void mb__result_clear(mb_bench_result *result) {
  free(result->accuracy);
  result->accuracy = NULL;
  result->n_outputs = 0;
  for (int i = 0; i < result->n_warnings; i++)
    free(result->warnings[i]);
  free(result->warnings);
  result->warnings = NULL;
  result->n_warnings = 0;
  free(result->samples_ms);
  result->samples_ms = NULL;
  result->n_samples_ms = 0;
  free(result->backtrace);
  result->backtrace = NULL;
  free(result->segments);
  result->segments = NULL;
  result->n_segments = 0;
  free(result->load.trials);
  result->load.trials = NULL;
  result->load.n_trials = 0;
}
