/* Load scenarios (src/bench/load.c): the seeded Poisson schedule, and
 * whole mb_benchmark_model runs on a test-only runtime whose every run
 * takes a fixed service time S (it sleeps, so sessions run in parallel
 * whatever the machine's load). What an ideal server would give on the
 * same seeded schedule is computed here (Lindley's recursion) and the
 * measured run is compared with it under generous tolerances: behaviour,
 * not timing luck.
 *   - at 30% load, latency stays near S (p99 near the ideal p99);
 *   - at 150% load, latency grows without bound and the run is INVALID
 *     (achieved QPS below the schedule's), which proves latency counts
 *     from the scheduled arrival;
 *   - find-peak lands within 10% of the ideal server's peak under the SLO;
 *   - a run cut short by --max-time is INVALID with the reason;
 *   - the ideal queue (mb__load_ideal_queue) and the harness's delays on
 *     hand-computed cases, and a server run's harness figures' invariants
 *     (the measured queue never beats the ideal one on its own service
 *     times). */
#include "bench/bench_internal.h"
#include "test.h"

#include <errno.h>
#include <limits.h>
#include <time.h>

/* ---- the fixed-service-time runtime ---- */

#define SERVICE_MS 8.0

static void service_probe(mb_runtime_info *info) {
  info->available = 1;
  snprintf(info->version, sizeof info->version, "test");
}

static mb_status service_prepare(const mb_model *model, const void *bytes,
                                 size_t size, const mb_runtime_options *options,
                                 void **session_out, mb_error *err) {
  *session_out = (void *)model;
  return MB_STATUS_OK;
}

/* Sleeps until S after the call: the service time, whatever else runs. */
static mb_status service_run(void *session, const mb_tensor *const *inputs,
                             mb_error *err) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  long ns = ts.tv_nsec + (long)(SERVICE_MS * 1e6);
  ts.tv_sec += ns / 1000000000L;
  ts.tv_nsec = ns % 1000000000L;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
  return MB_STATUS_OK;
}

static void service_release(void *session) {}

static const mb_runtime service_runtime = {.name = "test_service",
                                           .probe = service_probe,
                                           .prepare = service_prepare,
                                           .run = service_run,
                                           .release = service_release};

static int service_conversion = -1;

static int register_service(void) {
  static mb_conversion_def def = {.id = 9101,
                                  .name = "TEST_SERVICE",
                                  .runtime = "test_service",
                                  .device = MB_DEVICE_CPU,
                                  .precision = MB_PRECISION_FP32,
                                  .opt_level = MB_GRAPH_OPT_ALL,
                                  .description = "fixed service time"};
  mb_error err;
  if (service_conversion >= 0)
    return 0;
  if (mb__runtime_register(&service_runtime, &err) != MB_STATUS_OK ||
      (service_conversion = mb__conversion_register(&def, &err)) < 0) {
    fprintf(stderr, "registering TEST_SERVICE: %s\n", err.message);
    return 1;
  }
  return 0;
}

static const char *model_path(const char *name) {
  static char path[PATH_MAX];
  const char *dir = getenv("MB_TEST_MODELS");
  snprintf(path, sizeof path, "%s/%s", dir ? dir : "build/models", name);
  return path;
}

/* A load run of TEST_SERVICE on mlp.onnx, isolated like a real one. */
static void load_config(mb_bench_config *c, mb_load_scenario scenario,
                        double qps, int concurrency) {
  static int list[1];
  mb_bench_config_init(c);
  list[0] = service_conversion;
  c->conversions = list;
  c->n_conversions = 1;
  c->warmup_iterations = 2;
  c->warmup_seconds = 0;
  c->max_seconds = 20;
  c->timeout_seconds = 120;
  c->seed = 7;
  c->load.scenario = scenario;
  c->load.qps = qps;
  c->load.concurrency = concurrency;
  c->load.min_duration = 0.1;
  c->load.min_queries = 120;
}

/* ---- the ideal server ---- */

/* p-th percentile latency (ms) of an ideal FIFO server with `servers`
 * sessions of exactly service_ms each on the arrivals, and whether its run
 * would be valid by the QPS rule (achieved >= (1 - tol) * scheduled). */
static double ideal_percentile(const double *arrivals, int64_t n, int servers,
                               double service_ms, double p, double tol,
                               bool *valid_out) {
  double *free_at = calloc((size_t)servers, sizeof *free_at);
  double *latency = malloc(sizeof *latency * (size_t)n);
  double s = service_ms * 1e-3, last_end = 0;
  for (int64_t i = 0; i < n; i++) {
    int k = 0;
    for (int j = 1; j < servers; j++)
      if (free_at[j] < free_at[k])
        k = j;
    double start = MB_MAX(free_at[k], arrivals[i]);
    free_at[k] = start + s;
    latency[i] = (free_at[k] - arrivals[i]) * 1e3;
    last_end = MB_MAX(last_end, free_at[k]);
  }
  /* Sort for the percentile. */
  for (int64_t i = 1; i < n; i++)
    for (int64_t j = i; j > 0 && latency[j - 1] > latency[j]; j--) {
      double t = latency[j];
      latency[j] = latency[j - 1];
      latency[j - 1] = t;
    }
  double v = mb__percentile(latency, n, p);
  *valid_out =
      (double)n / last_end >= (1.0 - tol) * (double)n / arrivals[n - 1];
  free(free_at);
  free(latency);
  return v;
}

/* The ideal server on the schedule a run of c at qps gets. Its service
 * time is what the runtime measured (its mean, sleep overshoot included):
 * the capacity the runtime really has. */
static double ideal_for(const mb_bench_config *c, double qps, int servers,
                        double service_ms, double p, bool *valid_out) {
  double *arrivals;
  int64_t n;
  mb_error err;
  if (mb__load_schedule(c->seed, qps, c->load.min_duration, c->load.min_queries,
                        c->max_seconds, &arrivals, &n, &err) != MB_STATUS_OK)
    return NAN;
  double v = ideal_percentile(arrivals, n, servers, service_ms, p,
                              c->load.qps_tolerance, valid_out);
  free(arrivals);
  return v;
}

/* How late a sleeping thread wakes on this machine now: the 90th
 * percentile over 30 absolute sleeps of 2 ms, in ms (a few hundredths on
 * an idle machine, milliseconds on a busy one). The bounds below that
 * depend on wake-ups (a query's arrival, a session's next one) widen by it:
 * the code under test cannot be faster than the machine wakes it. */
static double wake_lateness_ms(void) {
  double late[30];
  for (int i = 0; i < 30; i++) {
    struct timespec ts, now;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double due = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + 2e-3;
    ts.tv_nsec += 2000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
           EINTR) {
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    late[i] = ((double)now.tv_sec + (double)now.tv_nsec * 1e-9 - due) * 1e3;
  }
  for (int i = 1; i < 30; i++)
    for (int j = i; j > 0 && late[j - 1] > late[j]; j--) {
      double t = late[j];
      late[j] = late[j - 1];
      late[j - 1] = t;
    }
  return MB_MAX(mb__percentile(late, 30, 90), 0.0);
}

/* ---- tests ---- */

TEST(poisson_schedule) {
  double *a = NULL, *b = NULL, *fast = NULL;
  int64_t n = 0, nb = 0, nf = 0;
  mb_error err;
  const double qps = 200;
  ASSERT_OK(mb__load_schedule(42, qps, 0, 10000, 0, &a, &n, &err), &err);
  ASSERT_EQ(n, 10000);
  /* Mean inter-arrival within 5% of 1/qps; gaps positive; CV near 1 (an
   * exponential's). */
  double sum = 0, sum2 = 0, prev = 0;
  for (int64_t i = 0; i < n; i++) {
    double gap = a[i] - prev;
    ASSERT(gap > 0);
    sum += gap;
    sum2 += gap * gap;
    prev = a[i];
  }
  double mean = sum / (double)n;
  double sd = sqrt(sum2 / (double)n - mean * mean);
  ASSERT_NEAR(mean, 1.0 / qps, 0.05 / qps);
  ASSERT_NEAR(sd / mean, 1.0, 0.1);
  /* Seeded: the same seed, the same schedule; another seed, another. */
  ASSERT_OK(mb__load_schedule(42, qps, 0, 10000, 0, &b, &nb, &err), &err);
  ASSERT_EQ(nb, n);
  ASSERT(memcmp(a, b, sizeof *a * (size_t)n) == 0);
  free(b);
  ASSERT_OK(mb__load_schedule(43, qps, 0, 10000, 0, &b, &nb, &err), &err);
  ASSERT(memcmp(a, b, sizeof *a * (size_t)MB_MIN(n, nb)) != 0);
  /* Twice the rate: the same pattern, at half the times. */
  ASSERT_OK(mb__load_schedule(42, 2 * qps, 0, 10000, 0, &fast, &nf, &err),
            &err);
  ASSERT_EQ(nf, n);
  for (int64_t i = 0; i < n; i += 997)
    ASSERT_NEAR(fast[i], a[i] / 2, 1e-9 * a[i]);
  free(a);
  free(b);
  free(fast);
  /* Both minimums: the last arrival is at or past the duration; none past
   * the cap. */
  ASSERT_OK(mb__load_schedule(1, 100, 2.0, 10, 0, &a, &n, &err), &err);
  ASSERT(n >= 10 && a[n - 1] >= 2.0 && a[n - 2] < 2.0);
  free(a);
  ASSERT_OK(mb__load_schedule(1, 100, 2.0, 10, 0.5, &a, &n, &err), &err);
  ASSERT(n > 0 && a[n - 1] <= 0.5);
  free(a);
  ASSERT_EQ(mb__load_schedule(1, 0, 1, 1, 0, &a, &n, &err),
            MB_STATUS_INVALID_ARGUMENT);
  return 0;
}

TEST(slo_parse) {
  double p, ms;
  mb_error err;
  ASSERT_OK(mb__slo_parse("p99=20ms", &p, &ms, &err), &err);
  ASSERT(p == 99 && ms == 20);
  ASSERT_OK(mb__slo_parse("p90=0.5s", &p, &ms, &err), &err);
  ASSERT(p == 90 && ms == 500);
  ASSERT_OK(mb__slo_parse("p99.9=250us", &p, &ms, &err), &err);
  ASSERT(p == 99.9 && fabs(ms - 0.25) < 1e-12);
  ASSERT_OK(mb__slo_parse("p50=3", &p, &ms, &err), &err);
  ASSERT(p == 50 && ms == 3);
  static const char *const bad[] = {"99=20ms",  "p0=1ms",   "p101=1ms",
                                    "p99=-1ms", "p99=",     "p99=fast",
                                    "p99",      "p99=20 ms"};
  for (size_t i = 0; i < MB_ARRAY_COUNT(bad); i++) {
    ASSERT_EQ(mb__slo_parse(bad[i], &p, &ms, &err), MB_STATUS_INVALID_ARGUMENT);
    ASSERT_CONTAINS(err.message, "pNN=LATENCY");
  }
  return 0;
}

/* The ideal FIFO queue on hand-computed cases: arrivals 0, 1, 1.5, 5 with
 * services 2, 1, 1, 0.5. */
TEST(ideal_queue) {
  static const double arrivals[] = {0, 1, 1.5, 5}, service[] = {2, 1, 1, 0.5};
  double latency[4];
  mb_error err;
  /* One server (Lindley): starts 0, 2, 3, 5; ends 2, 3, 4, 5.5. */
  ASSERT_OK(mb__load_ideal_queue(arrivals, service, 4, 1, latency, &err), &err);
  static const double one[] = {2, 2, 2.5, 0.5};
  for (int i = 0; i < 4; i++)
    ASSERT_NEAR(latency[i], one[i], 1e-12);
  /* Two servers: q1 takes the idle second server at its arrival; q2 the
   * first free at 2 (both are: the first); q3 finds both free. */
  ASSERT_OK(mb__load_ideal_queue(arrivals, service, 4, 2, latency, &err), &err);
  static const double two[] = {2, 1, 1.5, 0.5};
  for (int i = 0; i < 4; i++)
    ASSERT_NEAR(latency[i], two[i], 1e-12);
  /* As many servers as queries: nobody waits, latency is service. */
  ASSERT_OK(mb__load_ideal_queue(arrivals, service, 4, 4, latency, &err), &err);
  for (int i = 0; i < 4; i++)
    ASSERT_NEAR(latency[i], service[i], 1e-12);
  /* Three queries at once on two servers of 1: the third waits one. */
  static const double same[] = {3, 3, 3}, unit[] = {1, 1, 1};
  ASSERT_OK(mb__load_ideal_queue(same, unit, 3, 2, latency, &err), &err);
  ASSERT(latency[0] == 1 && latency[1] == 1 && latency[2] == 2);
  ASSERT_OK(mb__load_ideal_queue(same, unit, 0, 1, latency, &err), &err);
  ASSERT_EQ(mb__load_ideal_queue(same, unit, 3, 0, latency, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "servers must be >= 1");
  return 0;
}

/* The harness's delays and their summary. */
TEST(harness_delays) {
  /* Lateness: issued minus arrival, never negative. */
  ASSERT_NEAR(mb__load_lateness(1.0, 1.000002), 2e-6, 1e-12);
  ASSERT_EQ(mb__load_lateness(1.0, 0.9), 0.0);
  /* Hand-off: from the later of the issue and the session's free time. */
  ASSERT_NEAR(mb__load_handoff(1.0, 1.5, 1.5001), 1e-4, 1e-12);
  ASSERT_NEAR(mb__load_handoff(2.0, 1.5, 2.00001), 1e-5, 1e-12);
  ASSERT_NEAR(mb__load_handoff(2.0, 1.5, 2.0), 0.0, 1e-12);
  /* p50, p99 (numpy's linear: 4 + 0.96 * (5 - 4)), max; sorted in place. */
  double v[] = {5, 1, 3, 2, 4};
  mb_load_delay_us d;
  mb__load_delay_summary(v, 5, &d);
  ASSERT_NEAR(d.p50, 3, 1e-12);
  ASSERT_NEAR(d.p99, 4.96, 1e-12);
  ASSERT_NEAR(d.max, 5, 1e-12);
  ASSERT(v[0] == 1 && v[4] == 5);
  d.p50 = d.p99 = d.max = 7;
  mb__load_delay_summary(v, 0, &d);
  ASSERT(d.p50 == 0 && d.p99 == 0 && d.max == 0);
  return 0;
}

/* A server run's harness figures: present, ordered, and the ideal queue on
 * the run's own service times never slower than the run (one session: each
 * query's measured latency is at least its ideal one). */
static int check_harness_figures(const mb_bench_config *c,
                                 const mb_bench_result *r) {
  const mb_load_stats *l = &r->load;
  const mb_load_delay_us *d[] = {&l->generator_lateness_us, &l->handoff_us};
  for (int k = 0; k < 2; k++)
    ASSERT(d[k]->p50 >= 0 && d[k]->p99 >= d[k]->p50 && d[k]->max >= d[k]->p99);
  ASSERT(l->ideal_p99_ms >= l->service_ms.min);
  ASSERT(l->ideal_p99_ms <= r->latency_ms.p99 * (1 + 1e-9));
  ASSERT(l->idle_sleeps >= 0 && l->spin_fallbacks >= 0);
  /* The threads spin throughout exactly when the CPUs are enough for every
   * session's and the generator; else the generator's margin was learned
   * within its bounds. */
  long cpus = mb__cpus_allowed();
  int threads = c->threads > 0 ? c->threads : 1;
  ASSERT_EQ(l->spin_always, (long)l->concurrency * threads + 1 <= cpus);
  if (l->spin_always)
    ASSERT(isnan(l->spin_margin_us) && l->spin_fallbacks == 0 &&
           l->idle_sleeps == 0);
  else
    ASSERT(l->spin_margin_us >= 50 && l->spin_margin_us <= 250);
  ASSERT(isnan(l->steal_ms) || l->steal_ms >= 0);
  /* The flag and its warning go together. */
  bool warned = false;
  for (int i = 0; i < r->n_warnings; i++)
    warned |= strstr(r->warnings[i], "ideal queue") != NULL;
  ASSERT_EQ(warned, l->harness_excess != 0);
  return 0;
}

/* Runs c and returns its one result's copy in *r (the report kept in
 * *report_out for the caller to free). */
static int run_load(const mb_bench_config *c, mb_bench_report **report_out) {
  mb_error err;
  ASSERT_OK(mb_benchmark_model(model_path("mlp.onnx"), c, report_out, &err),
            &err);
  ASSERT_EQ((*report_out)->n_results, 1);
  const mb_bench_result *r = &(*report_out)->results[0];
  if (r->status != MB_BENCH_OK)
    TEST_FAIL_("TEST_SERVICE: %s", r->error);
  ASSERT_EQ(r->load.scenario, c->load.scenario);
  return 0;
}

/* The result's "machine busy" warning, or NULL. */
static const char *busy_warning(const mb_bench_result *r) {
  for (int i = 0; i < r->n_warnings; i++)
    if (strncmp(r->warnings[i], "machine busy", 12) == 0)
      return r->warnings[i];
  return NULL;
}

/* A light-load run's figures within what an ideal server allows (with
 * room for the measured wake-up lateness): whether every noise-sensitive
 * bound holds. Printed either way. */
static bool light_load_near_ideal(const mb_bench_config *c, double qps,
                                  const mb_bench_result *r, double late) {
  const mb_load_stats *l = &r->load;
  bool ideal_valid;
  double ideal_p90 = ideal_for(c, qps, 1, l->service_ms.mean, 90, &ideal_valid);
  double ideal_p99 = ideal_for(c, qps, 1, l->service_ms.mean, 99, &ideal_valid);
  printf("  30%% load: median %.2f ms, p90 %.2f ms (ideal %.2f), p99 %.2f ms "
         "(ideal %.2f), service %.2f ms, wake-ups %.2f ms late\n",
         r->latency_ms.median, r->latency_ms.p90, ideal_p90, r->latency_ms.p99,
         ideal_p99, l->service_ms.median, late);
  /* Latency near the service time: the median is one service (the queue
   * is mostly empty), p90 and p99 near the ideal server's (the p99 of 120
   * queries is nearly their maximum, so it gets room for one hiccup of a
   * busy machine), far below the overloaded run's. A late wake-up at the
   * arrival adds to a query's latency. */
  return ideal_valid && l->valid && l->invalid_reason[0] == '\0' &&
         r->latency_ms.median <= l->service_ms.mean * 1.5 + 1.0 + 2 * late &&
         r->latency_ms.p90 <= ideal_p90 * 1.5 + 2.0 + 3 * late &&
         r->latency_ms.p99 <= ideal_p99 * 2 + 10.0 + 5 * late &&
         l->service_ms.median <= SERVICE_MS * 2 &&
         fabs(l->achieved_qps - l->scheduled_qps) <= 0.1 * l->scheduled_qps &&
         l->queue_depth_mean < 1.0 && l->slo_met == 1 &&
         l->over_slo_share < 0.05;
}

/* The spin margin from a thread's wake-ups: the p99.5's bin edge plus the
 * pad, bounded, and the initial margin until enough are known. */
TEST(spin_margin) {
  uint32_t late[LOAD_WAKE_BINS] = {0};
  /* Too few: the initial 0.2 ms. */
  late[0] = 63;
  ASSERT_NEAR(mb__load_spin_margin(late, 63), 200e-6, 1e-12);
  /* 1000 wake-ups: 990 within 10 us, 10 at 120-130 us. The p99.5 is among
   * the late ones: 130 us + 50 us. */
  late[0] = 990;
  late[12] = 10;
  ASSERT_NEAR(mb__load_spin_margin(late, 1000), 180e-6, 1e-12);
  /* Only 4 late: the p99.5 is within the first bin, the margin its floor
   * (10 us + 50 us = 60 us, above the 50 us minimum). */
  late[0] = 996;
  late[12] = 4;
  ASSERT_NEAR(mb__load_spin_margin(late, 1000), 60e-6, 1e-12);
  /* Wake-ups later than the histogram: the 0.25 ms cap. */
  late[0] = 900;
  late[12] = 0;
  late[LOAD_WAKE_BINS - 1] = 100;
  ASSERT_NEAR(mb__load_spin_margin(late, 1000), 250e-6, 1e-12);
  return 0;
}

/* A stall of a busy machine (another test's browser, a compiler) only
 * ever makes latency worse: a run outside the ideal server's bounds is
 * tried again, up to three times; the exact invariants hold every time. */
TEST(server_light_load) {
  mb_bench_config c;
  mb_bench_report *report = NULL;
  ASSERT_EQ(register_service(), 0);
  /* 30% of one session's capacity. */
  double qps = 0.3 * 1e3 / SERVICE_MS;
  load_config(&c, MB_LOAD_SERVER, qps, 1);
  c.load.slo_percentile = 99;
  c.load.slo_ms = 20 * SERVICE_MS;
  bool near = false;
  for (int attempt = 1; attempt <= 3 && !near; attempt++) {
    mb_bench_report_free(report);
    report = NULL;
    double late = wake_lateness_ms();
    if (run_load(&c, &report))
      return 1;
    const mb_bench_result *r = &report->results[0];
    const mb_load_stats *l = &r->load;
    ASSERT_EQ(l->queries, c.load.min_queries);
    ASSERT_EQ(l->unserved, 0);
    ASSERT_EQ(r->iterations, l->queries);
    ASSERT_EQ(r->n_samples_ms, l->queries);
    ASSERT(r->latency_ms.min >= SERVICE_MS * 0.99);
    ASSERT(r->latency_ms.p99 >= SERVICE_MS);
    ASSERT(l->service_ms.median >= SERVICE_MS * 0.99);
    if (check_harness_figures(&c, r))
      return 1;
    /* At 30% load most waits are long: the session sleeps then spins,
     * unless a CPU is spare for it to spin throughout. */
    ASSERT(l->spin_always || l->idle_sleeps > 0);
    near = light_load_near_ideal(&c, qps, r, late);
  }
  /* The bounds are about the harness on a machine it has to itself: where
   * other processes took the CPUs (the result's "machine busy" warning,
   * from their measured CPU time: CI with other tests and two CPU hogs
   * doubled every latency), they measure the load, and are said, not
   * checked. */
  const char *busy = busy_warning(&report->results[0]);
  if (!near && busy)
    printf("  not checked against the ideal server: %s\n", busy);
  else
    ASSERT(near);
  mb_bench_report_free(report);
  return 0;
}

/* CPUs short for spinning throughout (a session with as many threads as
 * the machine has CPUs): the generator and the idle session sleep to a
 * learned margin before each arrival, and the harness still issues the
 * queries in order, each after its arrival. */
TEST(server_learned_margin) {
  mb_bench_config c;
  mb_bench_report *report = NULL;
  ASSERT_EQ(register_service(), 0);
  double qps = 0.3 * 1e3 / SERVICE_MS;
  load_config(&c, MB_LOAD_SERVER, qps, 1);
  c.threads = MB_MIN(mb__cpus_allowed(), 256);
  if (run_load(&c, &report))
    return 1;
  const mb_bench_result *r = &report->results[0];
  const mb_load_stats *l = &r->load;
  ASSERT_EQ(l->unserved, 0);
  ASSERT(!l->spin_always);
  if (check_harness_figures(&c, r))
    return 1;
  ASSERT(l->idle_sleeps > 0);
  mb_bench_report_free(report);
  return 0;
}

TEST(server_overload_grows) {
  mb_bench_config c;
  mb_bench_report *report = NULL;
  ASSERT_EQ(register_service(), 0);
  /* 150% of one session's capacity: the queue grows for the whole run. */
  double qps = 1.5 * 1e3 / SERVICE_MS;
  load_config(&c, MB_LOAD_SERVER, qps, 1);
  c.load.slo_percentile = 99;
  c.load.slo_ms = 10 * SERVICE_MS;
  if (run_load(&c, &report))
    return 1;
  const mb_bench_result *r = &report->results[0];
  const mb_load_stats *l = &r->load;
  /* Flagged: the sessions could not keep up, the SLO is missed. */
  ASSERT(!l->valid);
  ASSERT_CONTAINS(l->invalid_reason, "cannot keep up");
  ASSERT(l->achieved_qps < 0.9 * l->scheduled_qps);
  ASSERT_EQ(l->slo_met, 0);
  ASSERT(l->over_slo_share > 0.2);
  ASSERT(l->queue_depth_max >= 10);
  if (check_harness_figures(&c, r))
    return 1;
  /* Latency counts from the scheduled arrival: it grows along the run
   * (a server timing from when it took a query would show S throughout). */
  int64_t n = r->n_samples_ms, tenth = n / 10;
  double first = 0, last = 0;
  for (int64_t i = 0; i < tenth; i++) {
    first += r->samples_ms[i];
    last += r->samples_ms[n - 1 - i];
  }
  printf("  150%% load: first tenth %.1f ms, last tenth %.1f ms (mean), "
         "p99 %.1f ms, achieved %.1f of %.1f QPS\n",
         first / (double)tenth, last / (double)tenth, r->latency_ms.p99,
         l->achieved_qps, l->scheduled_qps);
  ASSERT(last > 5 * first);
  ASSERT(r->latency_ms.p99 > 10 * SERVICE_MS);
  ASSERT(l->service_ms.median >= SERVICE_MS * 0.99);
  ASSERT(l->service_ms.median <= SERVICE_MS * 2);
  mb_bench_report_free(report);
  return 0;
}

/* The ideal server's peak on c's schedules with service_ms: the highest
 * QPS whose run is valid and meets the SLO (monotone in the QPS: the
 * schedule is one pattern scaled). */
static double ideal_peak_qps(const mb_bench_config *c, double service_ms) {
  double lo = 1, hi = 1e3 / SERVICE_MS;
  for (int i = 0; i < 40; i++) {
    double mid = (lo + hi) / 2;
    bool valid;
    double p99 = ideal_for(c, mid, 1, service_ms, 99, &valid);
    if (valid && p99 <= c->load.slo_ms)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* find-peak against the ideal server with the service time the runtime
 * delivered. A stall of a busy machine (a late wake-up, another process
 * on the core) only ever makes the server look slower, so a search that
 * lands low is tried again, up to three times; landing high, or low three
 * times in a row, fails. On an idle machine (wake-ups on time) the band is
 * the ideal peak +-10%. */
TEST(find_peak_within_ten_percent) {
  mb_bench_config c;
  mb_bench_report *report = NULL;
  ASSERT_EQ(register_service(), 0);
  load_config(&c, MB_LOAD_SERVER, 0, 1);
  c.load.find_peak = 1;
  c.load.slo_percentile = 99;
  c.load.slo_ms = 15 * SERVICE_MS;
  const mb_load_stats *l = NULL;
  double ideal_peak = 0, ideal_low = 0;
  for (int attempt = 1; attempt <= 3; attempt++) {
    mb_bench_report_free(report);
    report = NULL;
    double late = wake_lateness_ms();
    if (run_load(&c, &report))
      return 1;
    l = &report->results[0].load;
    /* The runtime's service time: S, plus what a busy machine adds to a
     * sleep. */
    ASSERT(l->service_ms.mean >= SERVICE_MS * 0.99);
    ASSERT(l->service_ms.mean <= SERVICE_MS * 3);
    ideal_peak = ideal_peak_qps(&c, l->service_ms.mean);
    /* A wake-up late by `late` at each arrival serves like a longer
     * service when the queue is empty: the lower end of the band. */
    ideal_low = late > 0.05 ? ideal_peak_qps(&c, l->service_ms.mean + late)
                            : ideal_peak;
    printf("  find-peak, attempt %d: %.1f QPS in %d runs; the ideal "
           "server's peak with the %.2f ms service measured: %.1f QPS "
           "(%.1f with wake-ups %.2f ms late)\n",
           attempt, l->peak_qps, l->n_trials, l->service_ms.mean, ideal_peak,
           ideal_low, late);
    ASSERT(l->peak_qps <= 1.10 * ideal_peak);
    if (l->peak_qps >= 0.90 * ideal_low)
      break;
  }
  ASSERT(l->n_trials >= 3 && l->trials);
  ASSERT(l->peak_qps > 0);
  ASSERT(l->peak_qps >= 0.90 * ideal_low && l->peak_qps <= 1.10 * ideal_peak);
  /* The result is the run that proves the peak. */
  ASSERT(l->valid);
  ASSERT_EQ(l->slo_met, 1);
  ASSERT_NEAR(l->target_qps, l->peak_qps, 1e-9 * l->peak_qps);
  /* Bracketed, then bisected: some run failed above the peak. */
  bool failed_above = false;
  for (int i = 0; i < l->n_trials; i++)
    failed_above |= !(l->trials[i].valid && l->trials[i].slo_met) &&
                    l->trials[i].target_qps > l->peak_qps;
  ASSERT(failed_above);
  mb_bench_report_free(report);
  return 0;
}

TEST(too_short_is_invalid) {
  mb_bench_config c;
  mb_bench_report *report = NULL;
  ASSERT_EQ(register_service(), 0);
  /* --max-time cuts the schedule before --min-duration. */
  load_config(&c, MB_LOAD_SERVER, 50, 1);
  c.load.min_duration = 2.0;
  c.load.min_queries = 10;
  c.max_seconds = 0.3;
  if (run_load(&c, &report))
    return 1;
  const mb_load_stats *l = &report->results[0].load;
  ASSERT(!l->valid);
  ASSERT_CONTAINS(l->invalid_reason, "below --min-duration 2 s");
  ASSERT_CONTAINS(l->invalid_reason, "cut by --max-time");
  mb_bench_report_free(report);
  /* Single-stream: too few queries before the cap. */
  load_config(&c, MB_LOAD_SINGLE_STREAM, 0, 1);
  c.load.min_queries = 1000;
  c.max_seconds = 0.2;
  if (run_load(&c, &report))
    return 1;
  l = &report->results[0].load;
  ASSERT(!l->valid);
  ASSERT_CONTAINS(l->invalid_reason, "below --min-queries 1000");
  ASSERT(report->results[0].iterations < 1000);
  mb_bench_report_free(report);
  return 0;
}

TEST(offline_and_single_stream) {
  mb_bench_config c;
  mb_bench_report *report = NULL;
  ASSERT_EQ(register_service(), 0);
  /* Offline with two sessions: twice one session's rate (they sleep, so
   * they overlap whatever else runs). */
  load_config(&c, MB_LOAD_OFFLINE, 0, 2);
  c.load.min_duration = 0.3;
  c.load.min_queries = 20;
  if (run_load(&c, &report))
    return 1;
  const mb_bench_result *r = &report->results[0];
  ASSERT(r->load.valid);
  ASSERT_EQ(r->load.concurrency, 2);
  /* (by the service time the sessions got: S and a busy machine's
   * overshoot) */
  ASSERT(r->throughput_sps > 1.5 * 1e3 / r->load.service_ms.mean);
  ASSERT(r->throughput_sps < 2.2 * 1e3 / SERVICE_MS);
  ASSERT(r->iterations >= 20 && r->elapsed_seconds >= 0.3);
  mb_bench_report_free(report);
  /* Offline sized by --qps as LoadGen does: max(min_queries, qps *
   * min_duration) queries. */
  load_config(&c, MB_LOAD_OFFLINE, 100, 2);
  c.load.min_duration = 0.5;
  c.load.min_queries = 10;
  if (run_load(&c, &report))
    return 1;
  ASSERT_EQ(report->results[0].load.queries, 50);
  ASSERT_EQ(report->results[0].iterations, 50);
  mb_bench_report_free(report);
  /* Single-stream: one at a time, latency is the service time. */
  load_config(&c, MB_LOAD_SINGLE_STREAM, 0, 1);
  c.load.min_duration = 0.2;
  c.load.min_queries = 20;
  if (run_load(&c, &report))
    return 1;
  r = &report->results[0];
  ASSERT(r->load.valid);
  ASSERT(r->latency_ms.p90 >= SERVICE_MS * 0.99);
  ASSERT_NEAR(r->latency_ms.p90, r->load.service_ms.p90,
              0.2 * r->load.service_ms.p90 + 1.0);
  ASSERT(r->throughput_sps < 1.05 * 1e3 / SERVICE_MS);
  mb_bench_report_free(report);
  return 0;
}

TEST(config_checks) {
  mb_bench_config c;
  mb_bench_report *report = NULL;
  mb_error err;
  ASSERT_EQ(register_service(), 0);
  static const struct {
    mb_load_scenario scenario;
    double qps;
    int concurrency, find_peak;
    double slo_p;
    const char *message;
  } cases[] = {
      {MB_LOAD_SERVER, 0, 1, 0, 0, "needs --qps"},
      {MB_LOAD_SERVER, 10, 1, 1, 0, "needs --scenario server and --slo"},
      {MB_LOAD_OFFLINE, 10, 1, 1, 99, "needs --scenario server"},
      {MB_LOAD_SINGLE_STREAM, 0, 2, 0, 0, "one query at a time"},
      {MB_LOAD_SERVER, 10, 65, 0, 0, "--concurrency must be between 1 and 64"},
  };
  for (size_t i = 0; i < MB_ARRAY_COUNT(cases); i++) {
    load_config(&c, cases[i].scenario, cases[i].qps, cases[i].concurrency);
    c.load.find_peak = cases[i].find_peak;
    c.load.slo_percentile = cases[i].slo_p;
    c.load.slo_ms = 10;
    ASSERT_EQ(mb_benchmark_model(model_path("mlp.onnx"), &c, &report, &err),
              MB_STATUS_INVALID_ARGUMENT);
    ASSERT_CONTAINS(err.message, cases[i].message);
  }
  return 0;
}

/* A model whose symbolic dimensions --dim sets (seq_encoder: input
 * [batch, seq, 64] and mask [batch, seq]). */
TEST(dims_resolve) {
  mb_model *model = NULL;
  mb_error err;
  mb_input_shape shapes[2];
  ASSERT_OK(mb_model_load(model_path("seq_encoder.onnx"), &model, &err), &err);
  ASSERT_EQ(mb_model_resolve_input_shapes(model, NULL, shapes, &err),
            MB_STATUS_DYNAMIC);
  ASSERT_CONTAINS(err.message, "pass --dim seq=N");
  mb_dim_value dims[] = {{"seq", 48}};
  mb_shape_spec spec = {.batch_size = 3, .n_dims = 1, .dims = dims};
  ASSERT_OK(mb_model_resolve_input_shapes(model, &spec, shapes, &err), &err);
  ASSERT_EQ(shapes[0].dims[0], 3);
  ASSERT_EQ(shapes[0].dims[1], 48);
  ASSERT_EQ(shapes[0].dims[2], 64);
  ASSERT_EQ(shapes[1].dims[0], 3);
  ASSERT_EQ(shapes[1].dims[1], 48);
  /* --dim batch=2 names the first dim too, over --batch-size. */
  mb_dim_value both[] = {{"seq", 8}, {"batch", 2}};
  spec.n_dims = 2;
  spec.dims = both;
  ASSERT_OK(mb_model_resolve_input_shapes(model, &spec, shapes, &err), &err);
  ASSERT_EQ(shapes[1].dims[0], 2);
  ASSERT_EQ(shapes[1].dims[1], 8);
  mb_dim_value typo[] = {{"sequence", 8}};
  spec.n_dims = 1;
  spec.dims = typo;
  ASSERT_EQ(mb_model_resolve_input_shapes(model, &spec, shapes, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "symbolic dimensions: 'batch', 'seq'");
  mb_model_free(model);
  return 0;
}

int main(int argc, char **argv) {
  static const mb_test_case cases[] = {
      TEST_ENTRY(poisson_schedule),
      TEST_ENTRY(slo_parse),
      TEST_ENTRY(ideal_queue),
      TEST_ENTRY(harness_delays),
      TEST_ENTRY(spin_margin),
      TEST_ENTRY(server_light_load),
      TEST_ENTRY(server_learned_margin),
      TEST_ENTRY(server_overload_grows),
      TEST_ENTRY(find_peak_within_ten_percent),
      TEST_ENTRY(too_short_is_invalid),
      TEST_ENTRY(offline_and_single_stream),
      TEST_ENTRY(config_checks),
      TEST_ENTRY(dims_resolve),
  };
  return mb_test_main(argc, argv, cases, MB_ARRAY_COUNT(cases));
}
