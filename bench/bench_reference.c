/* bench_reference: latency of the reference interpreter on whole models.
 *
 *   bench_reference [--batch N] [--threads 1,2] [--min-iters N]
 *                   [--min-seconds S] MODEL...
 *
 * For every model and thread count: one session, warm-up runs, then timed
 * runs until both --min-iters runs and --min-seconds have passed (capped at
 * MAX_SECONDS with at least MIN_ITERS_WHEN_SLOW runs). Prints one table row
 * per configuration: median, p90 and min latency, and GFLOP/s at the median
 * (FLOPs from mb_model_analyze). Inputs are generated deterministically. */
#include "modelbench.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREAD_COUNTS 8
#define WARMUP_RUNS 3
#define MAX_SECONDS 60.0
#define MIN_ITERS_WHEN_SLOW 5

typedef struct bench_options {
  int64_t batch;
  int n_threads;
  int threads[MAX_THREAD_COUNTS];
  int min_iters;
  double min_seconds;
} bench_options;

typedef struct bench_result {
  int iters;
  double median_ms, p90_ms, min_ms;
} bench_result;

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted values. */
static double percentile(const double *sorted, int n, double p) {
  int rank = (int)ceil(p / 100.0 * n);
  return sorted[rank < 1 ? 0 : rank - 1];
}

static void free_outputs(mb_tensor **outputs, int n) {
  for (int i = 0; i < n; i++) {
    mb_tensor_free(outputs[i]);
    outputs[i] = NULL;
  }
}

static mb_status time_session(const mb_model *model, mb_tensor **inputs,
                              int threads, const bench_options *opts,
                              bench_result *result, mb_error *err) {
  int n_in = mb_model_input_count(model), n_out = mb_model_output_count(model);
  mb_session_options session_opts = {threads};
  mb_session *session = NULL;
  double *times = NULL;
  int cap = 0, n = 0;
  mb_tensor **outputs = calloc((size_t)n_out + 1, sizeof *outputs);
  if (!outputs)
    return MB_STATUS_OUT_OF_MEMORY;
  const mb_tensor *const *in = (const mb_tensor *const *)inputs;
  mb_status s = mb_session_create(model, &session_opts, &session, err);
  if (s)
    goto done;
  for (int i = 0; i < WARMUP_RUNS; i++) {
    s = mb_session_run(session, n_in, in, n_out, outputs, err);
    free_outputs(outputs, n_out);
    if (s)
      goto done;
  }
  double start = now_seconds();
  for (;;) {
    double elapsed = now_seconds() - start;
    if (n >= opts->min_iters && elapsed >= opts->min_seconds)
      break;
    if (n >= MIN_ITERS_WHEN_SLOW && elapsed >= MAX_SECONDS)
      break;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      double *grown = realloc(times, sizeof(double) * (size_t)cap);
      if (!grown) {
        s = MB_STATUS_OUT_OF_MEMORY;
        goto done;
      }
      times = grown;
    }
    double t0 = now_seconds();
    s = mb_session_run(session, n_in, in, n_out, outputs, err);
    times[n++] = (now_seconds() - t0) * 1e3;
    free_outputs(outputs, n_out);
    if (s)
      goto done;
  }
  qsort(times, (size_t)n, sizeof(double), compare_double);
  result->iters = n;
  result->median_ms =
      n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
  result->p90_ms = percentile(times, n, 90);
  result->min_ms = times[0];
done:
  free(times);
  free(outputs);
  mb_session_free(session);
  return s;
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static int bench_model(const char *path, const bench_options *opts) {
  mb_error err = {0};
  mb_model *model = NULL;
  mb_model_stats stats = {0};
  mb_tensor **inputs = NULL;
  int n_in = 0, rc = 1;
  if (mb_model_load(path, &model, &err))
    goto done;
  mb_shape_spec spec = {opts->batch, 0, NULL};
  if (mb_model_analyze(model, &spec, &stats, &err))
    goto done;
  n_in = mb_model_input_count(model);
  inputs = calloc((size_t)n_in + 1, sizeof *inputs);
  if (!inputs)
    goto done;
  if (mb_inputs_generate(model, &spec, 42, 0, NULL, inputs, &err))
    goto done;
  bool flops_known = stats.unknown_flops_nodes == 0 && stats.total_flops > 0;
  for (int t = 0; t < opts->n_threads; t++) {
    bench_result r = {0};
    if (time_session(model, inputs, opts->threads[t], opts, &r, &err))
      goto done;
    char gflops[32] = "n/a";
    if (flops_known)
      snprintf(gflops, sizeof gflops, "%.1f",
               stats.total_flops / (r.median_ms * 1e-3) / 1e9);
    printf("%-18s %5lld %7d %8.2f %6d %10.2f %9.2f %9.2f %8s\n",
           base_name(path), (long long)opts->batch, opts->threads[t],
           flops_known ? stats.total_flops / 1e9 : NAN, r.iters, r.median_ms,
           r.p90_ms, r.min_ms, gflops);
    fflush(stdout);
  }
  rc = 0;
done:
  if (rc && !err.message[0])
    fprintf(stderr, "bench_reference: %s: out of memory\n", path);
  else if (rc && strstr(err.message, path))
    fprintf(stderr, "bench_reference: %s\n", err.message);
  else if (rc)
    fprintf(stderr, "bench_reference: %s: %s\n", path, err.message);
  for (int i = 0; inputs && i < n_in; i++)
    mb_tensor_free(inputs[i]);
  free(inputs);
  mb_model_stats_free(&stats);
  mb_model_free(model);
  return rc;
}

static bool parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

static bool parse_threads(const char *s, bench_options *opts) {
  opts->n_threads = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    long v;
    if (opts->n_threads == MAX_THREAD_COUNTS || !parse_long(tok, 1, 1024, &v))
      return false;
    opts->threads[opts->n_threads++] = (int)v;
  }
  return opts->n_threads > 0;
}

static int usage(void) {
  fprintf(stderr, "usage: bench_reference [--batch N] [--threads 1,2] "
                  "[--min-iters N] [--min-seconds S] MODEL...\n");
  return 2;
}

int main(int argc, char **argv) {
  bench_options opts = {1, 2, {1, 2}, 20, 3.0};
  int first_model = argc;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
    long v;
    if (strcmp(arg, "--batch") == 0 && val && parse_long(val, 1, 1 << 20, &v)) {
      opts.batch = v;
    } else if (strcmp(arg, "--threads") == 0 && val &&
               parse_threads(val, &opts)) {
    } else if (strcmp(arg, "--min-iters") == 0 && val &&
               parse_long(val, 1, 1000000, &v)) {
      opts.min_iters = (int)v;
    } else if (strcmp(arg, "--min-seconds") == 0 && val) {
      char *end;
      opts.min_seconds = strtod(val, &end);
      if (end == val || *end || !(opts.min_seconds >= 0))
        return usage();
    } else if (arg[0] == '-') {
      return usage();
    } else {
      first_model = i;
      break;
    }
    i++; /* every option takes a value */
  }
  if (first_model >= argc)
    return usage();

  printf("reference interpreter, warm-up %d runs, then >= %d runs and >= "
         "%.1f s per row\n\n",
         WARMUP_RUNS, opts.min_iters, opts.min_seconds);
  printf("%-18s %5s %7s %8s %6s %10s %9s %9s %8s\n", "model", "batch",
         "threads", "GFLOPs", "iters", "median ms", "p90 ms", "min ms",
         "GFLOP/s");
  printf("%-18s %5s %7s %8s %6s %10s %9s %9s %8s\n", "------------------",
         "-----", "-------", "--------", "------", "----------", "---------",
         "---------", "--------");
  int failures = 0;
  for (int i = first_model; i < argc; i++)
    failures += bench_model(argv[i], &opts);
  return failures ? 1 : 0;
}
