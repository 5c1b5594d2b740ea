/* Realistic phases beside the steady state (--fresh-inputs, --cold-cache).
 *
 * The steady state reuses a few input buffers and keeps weights and inputs
 * in cache from one iteration to the next, which is the peak a deployment
 * rarely sees. After the steady phase, the worker runs one shorter phase
 * per mode asked, on the same warm session:
 *
 *   fresh inputs: each iteration reads a different input buffer of a pool
 *     whose total size exceeds the last-level cache (twice it, from
 *     /sys/devices/system/cpu/cpu0/cache, else MB_DEFAULT_LLC_BYTES),
 *     capped at MB_FRESH_POOL_MAX_SAMPLES buffers and MB_FRESH_POOL_MAX_BYTES;
 *     the pool holds the run's samples and copies of them in fresh memory,
 *     cycled in order, so consecutive iterations never share a buffer;
 *   cold cache: before each iteration, outside the timed region, a buffer
 *     of twice the last-level cache is written line by line, evicting
 *     weights, activations and inputs; inputs are the steady state's.
 *
 * Each phase runs at least min_iterations times and half of --min-time,
 * and stops at half of --max-time (its untimed flushes included), so the
 * two phases together take at most as long as the steady one may. Only
 * run() sits between the clock reads, as in measure.c. */
#include "bench/bench_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#define MB_DEFAULT_LLC_BYTES ((int64_t)32 << 20)
#define MB_FRESH_POOL_MAX_SAMPLES 4096
#define MB_FRESH_POOL_MAX_BYTES ((int64_t)1 << 30)
#define MB_REALISTIC_TIME_SHARE 0.5
#define MB_CACHE_LINE 64

/* "32768K", "1M", "512" (bytes) -> bytes; -1 when unreadable. */
static int64_t parse_cache_size(const char *text) {
  char *end = NULL;
  long long v = strtoll(text, &end, 10);
  if (end == text || v <= 0)
    return -1;
  int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
  return (int64_t)v << shift;
}

static bool read_line(const char *path, char *buf, size_t size) {
  FILE *f = fopen(path, "r");
  bool ok = f && fgets(buf, (int)size, f);
  if (f)
    fclose(f);
  return ok;
}

int64_t mb__llc_bytes(void) {
  const char *base = "/sys/devices/system/cpu/cpu0/cache";
  DIR *dir = opendir(base);
  int best_level = 0;
  int64_t best = -1;
  struct dirent *e;
  while (dir && (e = readdir(dir))) {
    if (strncmp(e->d_name, "index", 5) != 0)
      continue;
    char path[512], level[32], size[64];
    snprintf(path, sizeof path, "%s/%s/level", base, e->d_name);
    if (!read_line(path, level, sizeof level))
      continue;
    snprintf(path, sizeof path, "%s/%s/size", base, e->d_name);
    if (!read_line(path, size, sizeof size))
      continue;
    int lv = atoi(level);
    int64_t bytes = parse_cache_size(size);
    if (bytes > 0 && lv > best_level) {
      best_level = lv;
      best = bytes;
    }
  }
  if (dir)
    closedir(dir);
  return best > 0 ? best : MB_DEFAULT_LLC_BYTES;
}

typedef struct phase {
  const mb_runtime *rt;
  void *session;
  const mb_bench_job *job;
  const mb_progress_sink *progress;
  /* Fresh inputs: pool[i % n_pool]; else the job's samples. */
  mb_tensor ***pool;
  int64_t n_pool;
  /* Cold cache: written before each iteration; NULL for none. */
  unsigned char *flush;
  size_t flush_size;
} phase;

static const mb_tensor *const *phase_inputs(const phase *p, int64_t i) {
  if (p->pool)
    return (const mb_tensor *const *)p->pool[i % p->n_pool];
  return (const mb_tensor *const *)p->job->samples[i % p->job->n_samples];
}

/* Writes every cache line of the buffer, so that what the last iteration
 * left in the caches is evicted. The volatile store keeps the compiler
 * from dropping it. */
static void flush_caches(unsigned char *buf, size_t size) {
  volatile unsigned char *v = buf;
  for (size_t i = 0; i < size; i += MB_CACHE_LINE)
    v[i] = (unsigned char)(v[i] + 1);
}

static mb_status run_phase(const phase *p, const char *name,
                           const mb_bench_result *steady,
                           mb_realistic_stats *out, mb_error *err) {
  const mb_bench_config *c = p->job->config;
  int64_t min_iterations = MB_MAX(c->min_iterations, 1);
  double min_s = c->min_seconds * MB_REALISTIC_TIME_SHARE;
  double max_s =
      c->max_seconds > 0 ? c->max_seconds * MB_REALISTIC_TIME_SHARE : 1e300;
  int64_t cap = MB_MAX(min_iterations, 256), n = 0;
  mb_status status = MB_STATUS_OK;
  double *samples = malloc(sizeof *samples * (size_t)cap);
  if (!samples)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "%s: cannot allocate %lld latency samples", name,
                     (long long)cap);
  double start = mb__now(), last_report = start;
  for (;;) {
    if (p->flush)
      flush_caches(p->flush, p->flush_size);
    const mb_tensor *const *inputs = phase_inputs(p, n);
    double before = mb__now();
    status = p->rt->run(p->session, inputs, err);
    double after = mb__now();
    if (status) {
      mb__error_prefix(err, status, "%s: timed run %lld", name,
                       (long long)n + 1);
      goto done;
    }
    samples[n++] = (after - before) * 1e3;
    double elapsed = after - start;
    if ((n >= min_iterations && elapsed >= min_s) || elapsed >= max_s)
      break;
    if (n == cap) {
      double *grown = realloc(samples, sizeof *samples * (size_t)cap * 2);
      if (!grown) {
        status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                           "%s: cannot grow the latency samples past %lld",
                           name, (long long)cap);
        goto done;
      }
      samples = grown;
      cap *= 2;
    }
    if (after - last_report >= 0.1 && p->progress && p->progress->fn) {
      p->progress->fn(p->progress->ctx, "measure", n, elapsed);
      last_report = after;
    }
  }
  mb_latency_stats stats;
  if ((status = mb__latency_stats(samples, n, &stats, err)))
    goto done;
  out->iterations = n;
  out->median_ms = stats.median;
  out->p99_ms = stats.p99;
  out->gap = steady->latency_ms.median > 0
                 ? stats.median / steady->latency_ms.median - 1
                 : 0;
done:
  free(samples);
  return status;
}

static void free_pool(mb_tensor ***pool, int64_t n_pool, int64_t n_shared,
                      int n_inputs) {
  for (int64_t s = n_shared; pool && s < n_pool; s++) {
    for (int i = 0; pool[s] && i < n_inputs; i++)
      mb_tensor_free(pool[s][i]);
    free(pool[s]);
  }
  free(pool);
}

/* The pool of fresh inputs: the job's samples first (shared, not copied),
 * then copies of them until the pool is twice the last-level cache, within
 * the caps. */
static mb_status make_pool(const mb_bench_job *job, int64_t llc,
                           mb_tensor ****pool_out, int64_t *n_pool_out,
                           int64_t *bytes_out, mb_error *err) {
  int64_t sample_bytes = 0;
  for (int i = 0; i < job->n_inputs; i++)
    if (job->samples[0][i]) /* an omitted optional input */
      sample_bytes += (int64_t)job->samples[0][i]->nbytes;
  sample_bytes = MB_MAX(sample_bytes, 1);
  int64_t want = (2 * llc + sample_bytes - 1) / sample_bytes;
  int64_t by_memory = MB_FRESH_POOL_MAX_BYTES / sample_bytes;
  int64_t n_pool = MB_MIN(want, MB_MIN(by_memory, MB_FRESH_POOL_MAX_SAMPLES));
  n_pool = MB_MAX(n_pool, MB_MAX(job->n_samples, 2));
  mb_tensor ***pool = calloc((size_t)n_pool, sizeof *pool);
  if (!pool)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "fresh inputs: cannot allocate a pool of %lld samples",
                     (long long)n_pool);
  for (int64_t s = 0; s < n_pool; s++) {
    if (s < job->n_samples) {
      pool[s] = job->samples[s];
      continue;
    }
    pool[s] = calloc((size_t)MB_MAX(job->n_inputs, 1), sizeof *pool[s]);
    if (!pool[s])
      goto oom;
    const mb_tensor *const *src =
        (const mb_tensor *const *)job->samples[s % job->n_samples];
    for (int i = 0; i < job->n_inputs; i++) {
      if (!src[i])
        continue;
      mb_status status = mb_tensor_clone(src[i], &pool[s][i], err);
      if (status) {
        free_pool(pool, s + 1, MB_MIN(job->n_samples, s + 1), job->n_inputs);
        return mb__error_prefix(err, status, "fresh inputs: pool sample %lld",
                                (long long)s);
      }
    }
  }
  *pool_out = pool;
  *n_pool_out = n_pool;
  *bytes_out = n_pool * sample_bytes;
  return MB_STATUS_OK;
oom:
  free_pool(pool, n_pool, job->n_samples, job->n_inputs);
  return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                   "fresh inputs: out of memory for a pool of %lld samples",
                   (long long)n_pool);
}

mb_status mb__measure_realistic(const mb_runtime *rt, void *session,
                                const mb_bench_job *job,
                                const mb_progress_sink *progress,
                                mb_bench_result *result, mb_error *err) {
  const mb_bench_config *c = job->config;
  mb_status status = MB_STATUS_OK;
  if ((!c->fresh_inputs && !c->cold_cache) || job->n_samples < 1)
    return MB_STATUS_OK;
  int64_t llc = mb__llc_bytes();
  phase p = {rt, session, job, progress, NULL, 0, NULL, 0};
  if (c->fresh_inputs) {
    int64_t bytes = 0;
    if ((status = make_pool(job, llc, &p.pool, &p.n_pool, &bytes, err)))
      return status;
    status = run_phase(&p, "fresh inputs", result, &result->fresh_inputs, err);
    result->fresh_inputs.pool_samples = p.n_pool;
    result->fresh_inputs.pool_mb = (double)bytes / (1 << 20);
    free_pool(p.pool, p.n_pool, job->n_samples, job->n_inputs);
    p.pool = NULL;
    if (status)
      return status;
  }
  if (c->cold_cache) {
    p.flush_size = (size_t)(2 * llc);
    /* Touched once here, so its page faults stay out of the phase. */
    p.flush = calloc(1, p.flush_size);
    if (!p.flush)
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "cold cache: cannot allocate %lld bytes to flush the "
                       "last-level cache with",
                       (long long)p.flush_size);
    memset(p.flush, 1, p.flush_size);
    status = run_phase(&p, "cold cache", result, &result->cold_cache, err);
    result->cold_cache.pool_mb = (double)p.flush_size / (1 << 20);
    free(p.flush);
  }
  return status;
}
