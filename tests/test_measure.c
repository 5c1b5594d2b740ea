/* Confidence intervals and the measurement loop's stop rule (issue 30):
 * the distribution-free interval of the median against hand-worked order
 * statistics, the bootstrap interval of a speed-up, --ci-target's stop on a
 * steady fake runtime and at --max-time, the realistic phases' fields, and
 * the new fields through the worker's wire and a JSON report and back.
 * Nothing here checks how fast anything ran. */
#include "bench/bench_internal.h"
#include "bench/wire.h"
#include "report/report_load.h"
#include "test.h"

#include <unistd.h>

/* ---- the median's interval ---- */

/* x[i] = i + 1 in a shuffled order, so that selection has work to do. */
static void shuffled_ranks(double *x, int n, uint64_t seed) {
  for (int i = 0; i < n; i++)
    x[i] = i + 1;
  for (int i = n - 1; i > 0; i--) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    int j = (int)((seed >> 33) % (uint64_t)(i + 1));
    double t = x[i];
    x[i] = x[j];
    x[j] = t;
  }
}

TEST(median_ci_order_statistics) {
  double x[1000];
  double lo, hi;
  int64_t lo_rank, hi_rank;
  mb_error err = {0};
  /* n = 10: P(B <= 1) = 11/1024 <= 0.025 < P(B <= 2) = 56/1024, so the
   * interval is [x_(2), x_(9)]. */
  shuffled_ranks(x, 10, 1);
  ASSERT_OK(mb__median_ci(x, 10, 0.95, NULL, &lo, &hi, &err), &err);
  ASSERT_NEAR(lo, 2, 0);
  ASSERT_NEAR(hi, 9, 0);
  /* The input keeps its order. */
  double copy[10];
  shuffled_ranks(copy, 10, 1);
  ASSERT(memcmp(x, copy, sizeof copy) == 0);
  /* n = 100: the textbook ranks 40 and 61. */
  shuffled_ranks(x, 100, 2);
  ASSERT_OK(mb__median_ci(x, 100, 0.95, NULL, &lo, &hi, &err), &err);
  ASSERT_NEAR(lo, 40, 0);
  ASSERT_NEAR(hi, 61, 0);
  /* n = 6 is the smallest with an interval at 95% (2/64 <= 0.05): the
   * extremes; n = 5 has none (2/32 > 0.05). */
  ASSERT(mb__median_ci_ranks(6, 0.95, &lo_rank, &hi_rank));
  ASSERT_EQ(lo_rank, 0);
  ASSERT_EQ(hi_rank, 5);
  ASSERT(!mb__median_ci_ranks(5, 0.95, &lo_rank, &hi_rank));
  shuffled_ranks(x, 5, 3);
  ASSERT_OK(mb__median_ci(x, 5, 0.95, NULL, &lo, &hi, &err), &err);
  ASSERT(isnan(lo) && isnan(hi));
  /* The exact ranks at 1000 (469 and 532) and the normal approximation just
   * above agree to a rank. */
  ASSERT(mb__median_ci_ranks(1000, 0.95, &lo_rank, &hi_rank));
  ASSERT_EQ(lo_rank + 1, 469);
  ASSERT_EQ(hi_rank + 1, 532);
  ASSERT(mb__median_ci_ranks(1001, 0.95, &lo_rank, &hi_rank));
  ASSERT(lo_rank + 1 >= 468 && lo_rank + 1 <= 470);
  ASSERT_EQ(hi_rank, 1000 - lo_rank);
  /* A scratch buffer gives the same interval. */
  shuffled_ranks(x, 1000, 4);
  double scratch[1000];
  ASSERT_OK(mb__median_ci(x, 1000, 0.95, scratch, &lo, &hi, &err), &err);
  ASSERT_NEAR(lo, 469, 0);
  ASSERT_NEAR(hi, 532, 0);
  return 0;
}

/* ---- the speed-up's interval ---- */

static void noisy(double *x, int n, double median, uint64_t seed) {
  for (int i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    x[i] = median * (0.9 + 0.2 * (double)(seed >> 11) * 0x1.0p-53);
  }
}

TEST(speedup_interval) {
  enum { N = 300 };
  static double base[N], same[N], twice_as_fast[N];
  double lo, hi, lo2, hi2;
  mb_error err = {0};
  noisy(base, N, 10.0, 1);
  noisy(same, N, 10.0, 2);
  noisy(twice_as_fast, N, 5.0, 3);
  /* The same distribution: the interval holds 1. */
  ASSERT_OK(mb__bootstrap_median_ratio(base, N, same, N, 2000, 0.95, 7, &lo,
                                       &hi, &err),
            &err);
  ASSERT(lo < 1 && 1 < hi);
  /* The very same samples: still. */
  ASSERT_OK(mb__bootstrap_median_ratio(base, N, base, N, 2000, 0.95, 7, &lo,
                                       &hi, &err),
            &err);
  ASSERT(lo <= 1 && 1 <= hi);
  /* Twice as fast: 2 inside, 1 far outside; the same seed, the same
   * interval. */
  ASSERT_OK(mb__bootstrap_median_ratio(base, N, twice_as_fast, N, 2000, 0.95, 7,
                                       &lo, &hi, &err),
            &err);
  ASSERT(lo < 2 && 2 < hi);
  ASSERT(lo > 1.5);
  ASSERT_OK(mb__bootstrap_median_ratio(base, N, twice_as_fast, N, 2000, 0.95, 7,
                                       &lo2, &hi2, &err),
            &err);
  ASSERT(lo == lo2 && hi == hi2);
  /* The engine's speed-ups carry the interval around the point value. */
  mb_bench_result r[2];
  memset(r, 0, sizeof r);
  r[0].status = r[1].status = MB_BENCH_OK;
  r[0].samples_ms = base;
  r[1].samples_ms = twice_as_fast;
  r[0].n_samples_ms = r[1].n_samples_ms = N;
  r[0].latency_ms.median = mb__median(base, N);
  r[1].latency_ms.median = mb__median(twice_as_fast, N);
  mb__set_speedups(&r[0], r, 2);
  ASSERT(r[0].speedup_ci[0] <= 1 && 1 <= r[0].speedup_ci[1]);
  ASSERT(r[1].speedup_ci[0] < r[1].speedup_vs_baseline &&
         r[1].speedup_vs_baseline < r[1].speedup_ci[1]);
  ASSERT(r[1].speedup_ci[0] > 1);
  /* No baseline: no speed-up and no interval. */
  mb__set_speedups(NULL, r, 2);
  ASSERT(r[1].speedup_vs_baseline == 0 && r[1].speedup_ci[0] == 0);
  ASSERT_EQ(mb__bootstrap_median_ratio(base, N, same, 0, 2000, 0.95, 7, &lo,
                                       &hi, &err),
            MB_STATUS_INVALID_ARGUMENT);
  return 0;
}

TEST(ci_target_parse) {
  double v = 0;
  mb_error err = {0};
  ASSERT_OK(mb__ci_target_parse("2%", &v, &err), &err);
  ASSERT_NEAR(v, 0.02, 1e-15);
  ASSERT_OK(mb__ci_target_parse("0.005", &v, &err), &err);
  ASSERT_NEAR(v, 0.005, 0);
  const char *bad[] = {"", "2", "0", "-1%", "100%", "2%%", "x", "nan"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ASSERT_EQ(mb__ci_target_parse(bad[i], &v, &err),
              MB_STATUS_INVALID_ARGUMENT);
    ASSERT_CONTAINS(err.message, "ci target");
  }
  return 0;
}

/* ---- the stop rule, on a fake runtime ---- */

/* Spins to a deadline: the same latency every time, as near as the clock
 * and the machine allow. */
static mb_status spin_run(void *session, const mb_tensor *const *inputs,
                          mb_error *err) {
  double until = mb__now() + 200e-6;
  while (mb__now() < until) {
  }
  return MB_STATUS_OK;
}

typedef struct fake_job {
  mb_bench_config config;
  mb_runtime rt;
  mb_tensor **sample;
  mb_tensor **samples[1];
  mb_bench_job job;
} fake_job;

static void fake_job_init(fake_job *f) {
  memset(f, 0, sizeof *f);
  mb_bench_config_init(&f->config);
  f->config.warmup_iterations = 0;
  f->config.warmup_seconds = 0;
  f->config.min_iterations = 20;
  f->config.min_seconds = 0;
  f->rt.run = spin_run;
  f->samples[0] = f->sample;
  f->job.config = &f->config;
  f->job.n_samples = 1;
  f->job.samples = f->samples;
  f->job.batch_size = 1;
}

static bool has_warning(const mb_bench_result *r, const char *needle) {
  for (int i = 0; i < r->n_warnings; i++)
    if (strstr(r->warnings[i], needle))
      return true;
  return false;
}

TEST(ci_target_met) {
  fake_job f;
  fake_job_init(&f);
  f.config.ci_target = 0.02;
  f.config.max_seconds = 20;
  mb_bench_result r;
  memset(&r, 0, sizeof r);
  mb_error err = {0};
  ASSERT_OK(mb__measure(&f.rt, NULL, &f.job, NULL, &r, &err), &err);
  ASSERT_NEAR(r.ci_target.target, 0.02, 0);
  ASSERT_EQ(r.ci_target.met, 1);
  ASSERT(r.ci_target.half_width >= 0 && r.ci_target.half_width <= 0.02);
  /* The first check, at the minimum count, already meets it: a steady
   * latency stops there (a preempted iteration or two lands in the tail,
   * not in the middle ranks 6..15 of 20 that bound the interval). */
  ASSERT_EQ(r.iterations, 20);
  ASSERT(r.median_ci_ms[0] <= r.latency_ms.median &&
         r.latency_ms.median <= r.median_ci_ms[1]);
  ASSERT(!has_warning(&r, "--max-time"));
  mb__result_clear(&r);
  return 0;
}

TEST(ci_target_stopped_by_max_time) {
  fake_job f;
  fake_job_init(&f);
  f.config.ci_target = 0.02;
  f.config.max_seconds = 1e-6; /* shorter than one run */
  mb_bench_result r;
  memset(&r, 0, sizeof r);
  mb_error err = {0};
  ASSERT_OK(mb__measure(&f.rt, NULL, &f.job, NULL, &r, &err), &err);
  ASSERT_EQ(r.iterations, 1);
  ASSERT_EQ(r.ci_target.met, 0);
  ASSERT(r.ci_target.half_width < 0); /* one sample: no interval */
  ASSERT(has_warning(&r, "stopped at --max-time"));
  mb__result_clear(&r);
  return 0;
}

TEST(no_ci_target_keeps_the_minimums) {
  fake_job f;
  fake_job_init(&f);
  f.config.max_seconds = 20;
  mb_bench_result r;
  memset(&r, 0, sizeof r);
  mb_error err = {0};
  ASSERT_OK(mb__measure(&f.rt, NULL, &f.job, NULL, &r, &err), &err);
  /* min_seconds 0: exactly the minimum count, and no ci_target outcome. */
  ASSERT_EQ(r.iterations, 20);
  ASSERT(r.ci_target.target == 0);
  ASSERT(r.median_ci_ms[0] > 0 && r.median_ci_ms[1] >= r.median_ci_ms[0]);
  mb__result_clear(&r);
  return 0;
}

/* The realistic phases on the fake runtime: a pool of distinct buffers
 * over twice the last-level cache (capped) and both phases' figures. */
TEST(realistic_phases) {
  fake_job f;
  fake_job_init(&f);
  int64_t dims[1] = {1 << 20}; /* 4 MiB a sample */
  mb_tensor *t = NULL;
  mb_error err = {0};
  ASSERT_OK(mb_tensor_create(MB_DTYPE_FLOAT, 1, dims, &t, &err), &err);
  f.sample = &t;
  f.samples[0] = f.sample;
  f.job.n_inputs = 1;
  f.config.fresh_inputs = 1;
  f.config.cold_cache = 1;
  f.config.max_seconds = 20;
  mb_bench_result r;
  memset(&r, 0, sizeof r);
  ASSERT_OK(mb__measure(&f.rt, NULL, &f.job, NULL, &r, &err), &err);
  ASSERT_OK(mb__measure_realistic(&f.rt, NULL, &f.job, NULL, &r, &err), &err);
  int64_t llc = mb__llc_bytes();
  ASSERT(llc > 0);
  ASSERT(r.fresh_inputs.iterations >= 20);
  ASSERT(r.fresh_inputs.pool_samples >= 2);
  /* Over twice the cache unless the 1 GiB cap binds. */
  ASSERT(r.fresh_inputs.pool_mb * (1 << 20) >=
         (double)MB_MIN(2 * llc, 1 << 30) - 4 * (1 << 20));
  ASSERT_NEAR(r.fresh_inputs.pool_mb, (double)r.fresh_inputs.pool_samples * 4,
              1e-9);
  ASSERT(r.fresh_inputs.median_ms > 0 &&
         r.fresh_inputs.p99_ms >= r.fresh_inputs.median_ms);
  ASSERT_NEAR(r.fresh_inputs.gap,
              r.fresh_inputs.median_ms / r.latency_ms.median - 1, 1e-12);
  ASSERT(r.cold_cache.iterations >= 20);
  ASSERT_NEAR(r.cold_cache.pool_mb, 2.0 * (double)llc / (1 << 20), 1e-9);
  ASSERT_EQ(r.cold_cache.pool_samples, 0);
  mb__result_clear(&r);
  /* Not asked: nothing measured. */
  f.config.fresh_inputs = f.config.cold_cache = 0;
  memset(&r, 0, sizeof r);
  ASSERT_OK(mb__measure_realistic(&f.rt, NULL, &f.job, NULL, &r, &err), &err);
  ASSERT_EQ(r.fresh_inputs.iterations + r.cold_cache.iterations, 0);
  mb_tensor_free(t);
  return 0;
}

/* ---- the new fields through the wire and a JSON report ---- */

static void fill_extras(mb_bench_result *r) {
  r->median_ci_ms[0] = 1.9;
  r->median_ci_ms[1] = 2.1;
  r->speedup_ci[0] = 1.79;
  r->speedup_ci[1] = 1.90;
  r->ci_target = (mb_ci_target_result){0.02, 0, 0.031};
  r->fresh_inputs = (mb_realistic_stats){40, 2.5, 3.0, 0.25, 17, 68.0};
  r->cold_cache = (mb_realistic_stats){30, 3.0, 3.5, 0.5, 0, 64.0};
}

static int check_extras(const mb_bench_result *r, bool speedup) {
  ASSERT_NEAR(r->median_ci_ms[0], 1.9, 0);
  ASSERT_NEAR(r->median_ci_ms[1], 2.1, 0);
  if (speedup) {
    ASSERT_NEAR(r->speedup_ci[0], 1.79, 0);
    ASSERT_NEAR(r->speedup_ci[1], 1.90, 0);
  }
  ASSERT_NEAR(r->ci_target.target, 0.02, 0);
  ASSERT_EQ(r->ci_target.met, 0);
  ASSERT_NEAR(r->ci_target.half_width, 0.031, 0);
  ASSERT_EQ(r->fresh_inputs.iterations, 40);
  ASSERT_NEAR(r->fresh_inputs.median_ms, 2.5, 0);
  ASSERT_NEAR(r->fresh_inputs.p99_ms, 3.0, 0);
  ASSERT_NEAR(r->fresh_inputs.gap, 0.25, 0);
  ASSERT_EQ(r->fresh_inputs.pool_samples, 17);
  ASSERT_NEAR(r->fresh_inputs.pool_mb, 68.0, 0);
  ASSERT_EQ(r->cold_cache.iterations, 30);
  ASSERT_NEAR(r->cold_cache.gap, 0.5, 0);
  ASSERT_NEAR(r->cold_cache.pool_mb, 64.0, 0);
  return 0;
}

TEST(extras_survive_the_wire) {
  mb_bench_result r, back;
  mb_error err = {0};
  memset(&r, 0, sizeof r);
  r.status = MB_BENCH_OK;
  fill_extras(&r);
  mb_wire w = {0};
  mb__wire_put_result(&w, &r);
  ASSERT(!w.failed);
  ASSERT_OK(mb__wire_get_result(&w, &back, &err), &err);
  int rc = check_extras(&back, false); /* the parent computes speed-ups */
  mb__result_clear(&back);
  mb__wire_free(&w);
  return rc;
}

TEST(extras_survive_json) {
  mb_bench_report report;
  mb_bench_result r[2];
  double samples[2][8];
  memset(&report, 0, sizeof report);
  memset(r, 0, sizeof r);
  mb_bench_config_init(&report.config);
  report.config.ci_target = 0.02;
  report.config.fresh_inputs = 1;
  report.config.cold_cache = 1;
  snprintf(report.model_path, sizeof report.model_path, "m.onnx");
  for (int i = 0; i < 2; i++) {
    r[i].conversion_index = -1;
    r[i].conversion = i ? "ORT_CPU" : "REFERENCE";
    r[i].status = MB_BENCH_OK;
    r[i].iterations = 8;
    r[i].latency_ms.median = 2.0;
    for (int k = 0; k < 8; k++)
      samples[i][k] = 2.0 + 0.01 * k;
    r[i].samples_ms = samples[i];
    r[i].n_samples_ms = 8;
    r[i].speedup_vs_baseline = 1.84;
    r[i].max_abs_err = -1;
    fill_extras(&r[i]);
  }
  report.results = r;
  report.n_results = 2;
  char dir[] = "/tmp/mb-test-measure-XXXXXX", path[64];
  ASSERT(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/r.json", dir);
  mb_error err = {0};
  ASSERT_OK(mb_bench_report_write_json(&report, path, &err), &err);
  mb_bench_report **back = NULL;
  int n = 0;
  ASSERT_OK(mb__reports_load_json(path, &back, &n, &err), &err);
  unlink(path);
  rmdir(dir);
  ASSERT_EQ(n, 1);
  ASSERT_EQ(back[0]->n_results, 2);
  ASSERT_NEAR(back[0]->config.ci_target, 0.02, 0);
  ASSERT_EQ(back[0]->config.fresh_inputs, 1);
  ASSERT_EQ(back[0]->config.cold_cache, 1);
  int rc = check_extras(&back[0]->results[1], true);
  mb__reports_free(back, n);
  return rc;
}

TEST_MAIN(TEST_ENTRY(median_ci_order_statistics), TEST_ENTRY(speedup_interval),
          TEST_ENTRY(ci_target_parse), TEST_ENTRY(ci_target_met),
          TEST_ENTRY(ci_target_stopped_by_max_time),
          TEST_ENTRY(no_ci_target_keeps_the_minimums),
          TEST_ENTRY(realistic_phases), TEST_ENTRY(extras_survive_the_wire),
          TEST_ENTRY(extras_survive_json))
