/* A persistent thread pool, owned by a reference-interpreter session, that
 * runs both the operator kernels (depthwise conv, im2col, pooling,
 * normalisation, elementwise) and sgemm (split into single-threaded cblas
 * calls; OpenBLAS's own threads busy-wait after each call and would hold
 * the cores the kernels need).
 *
 * Creating threads per call cost 60-270 us on a busy 2-vCPU VM, more than a
 * depthwise layer takes, so the workers live as long as the pool. A job is
 * published by bumping a generation counter; workers spin on it for a short
 * while (back-to-back kernels then start within a microsecond or so) and
 * only then sleep on a condition variable, so an idle session gives its
 * cores back. Completion is a countdown the caller waits on the same way.
 *
 * The spin-then-sleep handshakes are Dekker-style: the sleeper announces
 * itself (sleeping / caller_waiting) and then re-checks the condition, the
 * waker publishes the condition and then checks for sleepers; both sides
 * use sequentially consistent atomics, so at least one sees the other and
 * no wake-up is lost. */
#include "core/internal.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

/* How long a worker (or the caller, waiting for the others) spins before
 * sleeping. Long enough to bridge the gap between the kernels of one
 * operator or of adjacent layers, short enough that a pool idling through
 * an sgemm gives its core back to OpenBLAS almost at once. */
#define MB_POOL_SPIN_NS 50000

struct mb_threadpool {
  int threads; /* the caller plus the workers */
  int n_workers;
  pthread_t *workers;
  pthread_mutex_t mutex;
  pthread_cond_t wake; /* workers: a new generation or stop */
  pthread_cond_t done; /* caller: pending reached 0 */
  /* The job: written by the caller before it bumps `generation`, read by
   * workers after they see the bump, left alone until `pending` is 0. */
  void (*fn)(void *ctx, int64_t begin, int64_t end);
  void *ctx;
  int64_t n;
  int chunks;
  atomic_uint_fast64_t generation;
  atomic_int pending;         /* workers that have not finished the job */
  atomic_int sleeping;        /* workers blocked (or about to) on `wake` */
  atomic_bool caller_waiting; /* the caller is blocked on `done` */
  atomic_bool busy;           /* a job is running: nested calls run inline */
  atomic_bool stop;
};

typedef struct mb_pool_worker_arg {
  mb_threadpool *pool;
  int index; /* chunk index: 1..n_workers; the caller runs chunk 0 */
} mb_pool_worker_arg;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spins until pred(pool, arg) holds or the spin time is over; returns
 * whether it holds. The clock is read every 64 rounds only: a pause is
 * tens of cycles, a clock read about a hundred. */
static bool spin_until(bool (*pred)(mb_threadpool *, uint64_t),
                       mb_threadpool *pool, uint64_t arg) {
  int64_t deadline = 0;
  for (unsigned i = 0;; i++) {
    if (pred(pool, arg))
      return true;
    if (i % 64 == 0) {
      int64_t t = now_ns();
      if (i == 0)
        deadline = t + MB_POOL_SPIN_NS;
      else if (t > deadline)
        return false;
    }
    cpu_relax();
  }
}

/* Sequentially consistent loads: the handshakes above need them (and on
 * x86 they are plain loads anyway). */
static bool new_job(mb_threadpool *pool, uint64_t seen) {
  return atomic_load(&pool->generation) != seen;
}

static bool job_done(mb_threadpool *pool, uint64_t unused) {
  (void)unused;
  return atomic_load(&pool->pending) == 0;
}

/* Chunk `index` of `chunks` contiguous chunks of [0, n). */
static void run_chunk(mb_threadpool *pool, int index) {
  if (index >= pool->chunks)
    return;
  int64_t begin = pool->n * index / pool->chunks;
  int64_t end = pool->n * (index + 1) / pool->chunks;
  if (begin < end)
    pool->fn(pool->ctx, begin, end);
}

static void *worker_main(void *p) {
  mb_pool_worker_arg *arg = p;
  mb_threadpool *pool = arg->pool;
  int index = arg->index;
  free(arg);
  uint64_t seen = 0;
  for (;;) {
    if (!spin_until(new_job, pool, seen)) {
      pthread_mutex_lock(&pool->mutex);
      atomic_fetch_add(&pool->sleeping, 1);
      while (!new_job(pool, seen))
        pthread_cond_wait(&pool->wake, &pool->mutex);
      atomic_fetch_sub(&pool->sleeping, 1);
      pthread_mutex_unlock(&pool->mutex);
    }
    seen = atomic_load(&pool->generation);
    if (atomic_load(&pool->stop))
      return NULL;
    run_chunk(pool, index);
    if (atomic_fetch_sub(&pool->pending, 1) == 1 &&
        atomic_load(&pool->caller_waiting)) {
      pthread_mutex_lock(&pool->mutex);
      pthread_cond_signal(&pool->done);
      pthread_mutex_unlock(&pool->mutex);
    }
  }
}

/* Publishes the job (or stop) to every worker and wakes sleeping ones. */
static void publish(mb_threadpool *pool) {
  atomic_fetch_add(&pool->generation, 1);
  if (atomic_load(&pool->sleeping) > 0) {
    pthread_mutex_lock(&pool->mutex);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);
  }
}

mb_threadpool *mb__threadpool_create(int threads) {
  mb_threadpool *pool = calloc(1, sizeof *pool);
  if (!pool)
    return NULL;
  pool->threads = 1;
  atomic_init(&pool->generation, 0);
  atomic_init(&pool->pending, 0);
  atomic_init(&pool->sleeping, 0);
  atomic_init(&pool->caller_waiting, false);
  atomic_init(&pool->busy, false);
  atomic_init(&pool->stop, false);
  if (threads <= 1)
    return pool;
  pool->workers = calloc((size_t)threads - 1, sizeof *pool->workers);
  if (!pool->workers)
    goto fail_pool;
  if (pthread_mutex_init(&pool->mutex, NULL))
    goto fail_workers;
  if (pthread_cond_init(&pool->wake, NULL))
    goto fail_mutex;
  if (pthread_cond_init(&pool->done, NULL))
    goto fail_wake;
  /* Workers block every signal, so that process-directed signals (the
   * benchmark's timeouts, Ctrl-C) are handled by the application's own
   * threads. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  for (int i = 0; i < threads - 1; i++) {
    mb_pool_worker_arg *arg = malloc(sizeof *arg);
    if (!arg)
      break;
    arg->pool = pool;
    arg->index = i + 1;
    if (pthread_create(&pool->workers[i], NULL, worker_main, arg)) {
      free(arg);
      break;
    }
    pool->n_workers++;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  /* Fewer threads than asked for is still a working pool. */
  pool->threads = pool->n_workers + 1;
  return pool;
fail_wake:
  pthread_cond_destroy(&pool->wake);
fail_mutex:
  pthread_mutex_destroy(&pool->mutex);
fail_workers:
  free(pool->workers);
fail_pool:
  free(pool);
  return NULL;
}

void mb__threadpool_free(mb_threadpool *pool) {
  if (!pool)
    return;
  if (pool->workers) {
    atomic_store(&pool->stop, true);
    publish(pool);
    for (int i = 0; i < pool->n_workers; i++)
      pthread_join(pool->workers[i], NULL);
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->mutex);
    free(pool->workers);
  }
  free(pool);
}

int mb__threadpool_threads(const mb_threadpool *pool) {
  return pool ? pool->threads : 1;
}

void mb__parallel_for(mb_threadpool *pool, int64_t n,
                      void (*fn)(void *ctx, int64_t begin, int64_t end),
                      void *ctx) {
  if (n <= 0)
    return;
  /* Serial cases; `busy` also catches a kernel that calls back in from a
   * chunk (the workers are taken) or a second thread sharing the pool. */
  if (!pool || pool->n_workers == 0 || n == 1 ||
      atomic_exchange(&pool->busy, true)) {
    fn(ctx, 0, n);
    return;
  }
  pool->fn = fn;
  pool->ctx = ctx;
  pool->n = n;
  pool->chunks = (int)MB_MIN(n, (int64_t)pool->threads);
  atomic_store(&pool->pending, pool->n_workers);
  publish(pool);
  run_chunk(pool, 0);
  if (!spin_until(job_done, pool, 0)) {
    pthread_mutex_lock(&pool->mutex);
    atomic_store(&pool->caller_waiting, true);
    while (!job_done(pool, 0))
      pthread_cond_wait(&pool->done, &pool->mutex);
    atomic_store(&pool->caller_waiting, false);
    pthread_mutex_unlock(&pool->mutex);
  }
  atomic_store(&pool->busy, false);
}
