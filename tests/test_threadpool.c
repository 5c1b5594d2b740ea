/* The kernels' thread pool (src/core/threadpool.c): every index of [0, n)
 * is visited exactly once, in contiguous chunks, whatever n and the thread
 * count; NULL and one-thread pools run inline; nested calls run inline;
 * pools can be freed in any state between jobs. */
#include "core/internal.h"
#include "test.h"

#include <stdatomic.h>
#include <time.h>

#define MAX_N 5000

typedef struct cover_ctx {
  atomic_int visits[MAX_N];
  atomic_int calls;
  atomic_int bad_ranges; /* empty or out-of-bounds chunks */
  int64_t n;
} cover_ctx;

static void cover_fn(void *arg, int64_t begin, int64_t end) {
  cover_ctx *c = arg;
  atomic_fetch_add(&c->calls, 1);
  if (begin < 0 || end > c->n || begin >= end) {
    atomic_fetch_add(&c->bad_ranges, 1);
    return;
  }
  for (int64_t i = begin; i < end; i++)
    atomic_fetch_add(&c->visits[i], 1);
}

/* Runs one job; returns 0 when [0, n) was covered exactly once in at most
 * `max_chunks` chunks. */
static int check_cover(mb_threadpool *pool, int64_t n, int max_chunks) {
  static cover_ctx c; /* too large for the stack of some runners */
  memset(&c, 0, sizeof c);
  c.n = n;
  mb__parallel_for(pool, n, cover_fn, &c);
  ASSERT_EQ(atomic_load(&c.bad_ranges), 0);
  for (int64_t i = 0; i < n; i++)
    if (atomic_load(&c.visits[i]) != 1)
      TEST_FAIL_("n=%lld: index %lld visited %d times", (long long)n,
                 (long long)i, atomic_load(&c.visits[i]));
  ASSERT(atomic_load(&c.calls) <= max_chunks);
  if (n > 0)
    ASSERT(atomic_load(&c.calls) >= 1);
  else
    ASSERT_EQ(atomic_load(&c.calls), 0);
  return 0;
}

TEST(covers_exactly_once) {
  static const int64_t sizes[] = {0, 1, 2, 3, 4, 5, 7, 16, 17, 100, 1023, 4999};
  static const int threads[] = {1, 2, 3, 4, 8};
  for (size_t t = 0; t < MB_ARRAY_COUNT(threads); t++) {
    mb_threadpool *pool = mb__threadpool_create(threads[t]);
    ASSERT(pool != NULL);
    ASSERT(mb__threadpool_threads(pool) >= 1);
    ASSERT(mb__threadpool_threads(pool) <= threads[t]);
    /* Many jobs back to back: workers must not miss or repeat one. */
    for (int round = 0; round < 20; round++)
      for (size_t i = 0; i < MB_ARRAY_COUNT(sizes); i++)
        if (check_cover(pool, sizes[i], threads[t]))
          TEST_FAIL_("threads=%d, n=%lld", threads[t], (long long)sizes[i]);
    mb__threadpool_free(pool);
  }
  return 0;
}

TEST(null_pool_runs_inline) {
  ASSERT_EQ(mb__threadpool_threads(NULL), 1);
  for (int64_t n = 0; n < 10; n++)
    if (check_cover(NULL, n, 1))
      TEST_FAIL_("n=%lld", (long long)n);
  mb__threadpool_free(NULL);
  /* A one-thread pool has no workers: also one inline call. */
  mb_threadpool *pool = mb__threadpool_create(1);
  ASSERT(pool != NULL);
  ASSERT_EQ(mb__threadpool_threads(pool), 1);
  ASSERT_EQ(check_cover(pool, 1000, 1), 0);
  mb__threadpool_free(pool);
  return 0;
}

/* A chunk that calls back into the pool gets an inline run. */
typedef struct nested_ctx {
  mb_threadpool *pool;
  cover_ctx inner[4];
} nested_ctx;

static void nested_fn(void *arg, int64_t begin, int64_t end) {
  nested_ctx *c = arg;
  for (int64_t i = begin; i < end; i++)
    mb__parallel_for(c->pool, c->inner[i].n, cover_fn, &c->inner[i]);
}

TEST(nested_calls_and_free) {
  static nested_ctx c;
  mb_threadpool *pool = mb__threadpool_create(3);
  ASSERT(pool != NULL);
  memset(&c, 0, sizeof c);
  c.pool = pool;
  for (int i = 0; i < 4; i++)
    c.inner[i].n = 100 * (i + 1);
  mb__parallel_for(pool, 4, nested_fn, &c);
  for (int i = 0; i < 4; i++) {
    ASSERT_EQ(atomic_load(&c.inner[i].calls), 1); /* inline: one chunk */
    ASSERT_EQ(atomic_load(&c.inner[i].bad_ranges), 0);
    for (int64_t j = 0; j < c.inner[i].n; j++)
      ASSERT_EQ(atomic_load(&c.inner[i].visits[j]), 1);
  }
  /* The pool still works after a nested job. */
  ASSERT_EQ(check_cover(pool, 999, 3), 0);
  mb__threadpool_free(pool);
  /* Freed right after creation (workers may not have started waiting),
   * and right after a job (workers still spinning). */
  for (int i = 0; i < 20; i++) {
    pool = mb__threadpool_create(2 + i % 3);
    ASSERT(pool != NULL);
    if (i % 2)
      ASSERT_EQ(check_cover(pool, 64, 4), 0);
    mb__threadpool_free(pool);
  }
  return 0;
}

/* Jobs far apart in time: workers have gone to sleep and must be woken. */
TEST(wakes_sleeping_workers) {
  mb_threadpool *pool = mb__threadpool_create(2);
  ASSERT(pool != NULL);
  for (int i = 0; i < 5; i++) {
    struct timespec pause = {0, 2 * 1000 * 1000}; /* 2 ms */
    nanosleep(&pause, NULL);
    ASSERT_EQ(check_cover(pool, 1000, 2), 0);
  }
  mb__threadpool_free(pool);
  return 0;
}

TEST_MAIN(TEST_ENTRY(covers_exactly_once), TEST_ENTRY(null_pool_runs_inline),
          TEST_ENTRY(nested_calls_and_free), TEST_ENTRY(wakes_sleeping_workers))
