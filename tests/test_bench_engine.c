/* The benchmark engine: statistics, the worker wire format, and whole runs
 * of mb_benchmark_model with runtimes that crash, hang, leak, fail and
 * lie (tests/bench_test_runtimes.h), isolated and in-process. Every check
 * is about behaviour (statuses, messages, consistency), never about how
 * fast anything ran. */
#include "bench/bench_internal.h"
#include "test.h"

#include "bench_test_runtimes.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ---- */

static const char *model_path(const char *name) {
  static char path[PATH_MAX];
  const char *dir = getenv("MB_TEST_MODELS");
  snprintf(path, sizeof path, "%s/%s", dir ? dir : "build/models", name);
  return path;
}

static int conversion_index(const char *name) {
  int index = -1;
  return mb_conversion_find(name, &index, NULL) == MB_STATUS_OK ? index : -1;
}

/* What the callbacks saw. */
typedef struct observed {
  int n_results;
  char names[16][64];
  mb_bench_status statuses[16];
  int n_progress;
  int saw_measure;
  int bad_progress; /* a call with an out-of-range index or unknown phase */
} observed;

static void on_result(void *user, const mb_bench_result *r) {
  observed *o = user;
  if (o->n_results < 16) {
    snprintf(o->names[o->n_results], sizeof o->names[0], "%s", r->conversion);
    o->statuses[o->n_results] = r->status;
  }
  o->n_results++;
}

static void on_progress(void *user, int i, int n, const char *conversion,
                        const char *phase, int64_t iterations,
                        double elapsed_s) {
  static const char *const phases[] = {
      "build", "load", "warmup", "measure", "accuracy", "segments", "done"};
  observed *o = user;
  int known = 0;
  for (size_t k = 0; k < MB_ARRAY_COUNT(phases); k++)
    known |= strcmp(phase, phases[k]) == 0;
  if (!known || i < 0 || i >= n || !conversion)
    o->bad_progress++;
  if (strcmp(phase, "measure") == 0)
    o->saw_measure = 1;
  o->n_progress++;
}

static char log_dir[PATH_MAX];

/* Small, fast settings: the engine's logic, not real measurements. */
static void fast_config(mb_bench_config *c, observed *o) {
  mb_bench_config_init(c);
  c->warmup_iterations = 1;
  c->warmup_seconds = 0.0;
  c->min_iterations = 5;
  c->min_seconds = 0.05;
  c->max_seconds = 1.0;
  c->timeout_seconds = 2.0;
  c->on_result = on_result;
  c->on_progress = on_progress;
  c->user = o;
  if (!log_dir[0]) {
    snprintf(log_dir, sizeof log_dir, "%s/mb-test-engine-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(log_dir))
      log_dir[0] = '\0';
  }
  c->log_dir = log_dir[0] ? log_dir : NULL;
}

static void remove_logs(void) {
  if (!log_dir[0])
    return;
  DIR *d = opendir(log_dir);
  struct dirent *entry;
  char path[PATH_MAX + 300];
  while (d && (entry = readdir(d)) != NULL) {
    if (entry->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "%s/%s", log_dir, entry->d_name);
    unlink(path);
  }
  if (d)
    closedir(d);
  rmdir(log_dir);
  log_dir[0] = '\0';
}

/* Consistency of an ok result's figures. */
static int check_ok_result(const mb_bench_result *r, int min_iterations) {
  const mb_latency_stats *s = &r->latency_ms;
  ASSERT_EQ(r->status, MB_BENCH_OK);
  ASSERT_STR_EQ(r->error, "");
  ASSERT(r->iterations >= min_iterations);
  ASSERT_EQ(r->n_samples_ms, r->iterations);
  ASSERT(r->samples_ms != NULL);
  ASSERT(s->min <= s->median && s->median <= s->p90 && s->p90 <= s->p95 &&
         s->p95 <= s->p99 && s->p99 <= s->max);
  ASSERT(s->min <= s->mean && s->mean <= s->max);
  ASSERT(s->stddev >= 0.0 && s->cv >= 0.0);
  ASSERT(r->inference_seconds > 0.0);
  ASSERT(r->elapsed_seconds >= r->inference_seconds);
  ASSERT(r->throughput_sps > 0.0);
  ASSERT_NEAR(r->throughput_sps,
              r->batch_size * (double)r->iterations / r->inference_seconds,
              1e-6 * r->throughput_sps);
  ASSERT(r->load_ms >= 0.0 && r->first_run_ms >= 0.0);
  ASSERT(r->peak_rss_mb > 0.0);
  ASSERT_STR_EQ(r->device, "cpu");
  return 0;
}

/* ---- statistics ---- */

TEST(percentiles_interpolate_between_ranks) {
  const double x[] = {1, 2, 3, 4, 5};
  ASSERT_NEAR(mb__percentile(x, 5, 0), 1, 0);
  ASSERT_NEAR(mb__percentile(x, 5, 50), 3, 0);
  ASSERT_NEAR(mb__percentile(x, 5, 90), 4.6, 1e-12);
  ASSERT_NEAR(mb__percentile(x, 5, 99), 4.96, 1e-12);
  ASSERT_NEAR(mb__percentile(x, 5, 100), 5, 0);
  const double even[] = {10, 20, 30, 40};
  ASSERT_NEAR(mb__percentile(even, 4, 50), 25, 1e-12);
  ASSERT_NEAR(mb__percentile(even, 4, 95), 38.5, 1e-12);
  const double one[] = {7};
  ASSERT_NEAR(mb__percentile(one, 1, 99), 7, 0);
  return 0;
}

TEST(latency_stats_of_known_samples) {
  /* Unsorted on purpose: the stats must not depend on the order. */
  const double x[] = {9, 2, 5, 4, 4, 7, 4, 5};
  mb_latency_stats s;
  mb_error err;
  ASSERT_OK(mb__latency_stats(x, 8, &s, &err), &err);
  ASSERT_NEAR(s.mean, 5.0, 1e-12);
  ASSERT_NEAR(s.median, 4.5, 1e-12);
  ASSERT_NEAR(s.min, 2, 0);
  ASSERT_NEAR(s.max, 9, 0);
  ASSERT_NEAR(s.stddev, sqrt(32.0 / 7.0), 1e-12); /* sample, n - 1 */
  ASSERT_NEAR(s.cv, sqrt(32.0 / 7.0) / 5.0, 1e-12);
  ASSERT_NEAR(s.p90, 7.6, 1e-12); /* h = 6.3 between 7 and 9 */
  ASSERT_OK(mb__latency_stats(x, 1, &s, &err), &err);
  ASSERT_NEAR(s.stddev, 0, 0);
  ASSERT_NEAR(s.p99, 9, 0);
  ASSERT_OK(mb__latency_stats(NULL, 0, &s, &err), &err);
  ASSERT_NEAR(s.mean, 0, 0);
  return 0;
}

TEST(stat_warnings) {
  mb_bench_result r;
  mb_machine_info m;
  memset(&r, 0, sizeof r);
  memset(&m, 0, sizeof m);
  r.status = MB_BENCH_OK;
  r.iterations = 20;
  r.latency_ms.cv = 0.073;
  m.cores = 4;
  m.load_average = 3.9;
  snprintf(m.governor, sizeof m.governor, "powersave");
  ASSERT_EQ(mb__result_add_stat_warnings(&r, &m, -1.0, 1), MB_STATUS_OK);
  ASSERT_EQ(r.n_warnings, 4);
  ASSERT_STR_EQ(r.warnings[0], "high variance: CV 7.3% > 5%");
  ASSERT_STR_EQ(r.warnings[1], "p99 from only 20 iterations");
  ASSERT_CONTAINS(r.warnings[2], "powersave");
  ASSERT_STR_EQ(r.warnings[3], "machine busy: load average 3.90 on 4 cores");
  mb__result_clear(&r);
  ASSERT_EQ(r.n_warnings, 0);

  /* The worker's own observation and the load average make one line. */
  memset(&r, 0, sizeof r);
  r.status = MB_BENCH_OK;
  r.iterations = 1000;
  ASSERT_EQ(mb__result_add_warning(&r, "machine busy: the worker got 40%% of "
                                       "a CPU during the timed phase"),
            MB_STATUS_OK);
  m.governor[0] = '\0';
  ASSERT_EQ(mb__result_add_stat_warnings(&r, &m, -1.0, 1), MB_STATUS_OK);
  ASSERT_EQ(r.n_warnings, 1);
  ASSERT_STR_EQ(r.warnings[0], "machine busy: load average 3.90 on 4 cores, "
                               "the worker got 40% of a CPU during the timed "
                               "phase");
  mb__result_clear(&r);

  /* A busy machine and a runtime whose OpenMP threads spin: the advice,
   * unless the user already chose a wait policy; ONNX Runtime's own pool
   * gets the busy line only. */
  static const struct {
    const char *runtime, *policy;
    int n_warnings;
  } spin_cases[] = {
      {"onednn", NULL, 2}, {"onednn", "passive", 1}, {"onnxruntime", NULL, 1}};
  for (size_t i = 0; i < sizeof spin_cases / sizeof *spin_cases; i++) {
    if (spin_cases[i].policy)
      setenv("OMP_WAIT_POLICY", spin_cases[i].policy, 1);
    else
      unsetenv("OMP_WAIT_POLICY");
    memset(&r, 0, sizeof r);
    r.status = MB_BENCH_OK;
    r.iterations = 1000;
    snprintf(r.runtime, sizeof r.runtime, "%s", spin_cases[i].runtime);
    ASSERT_EQ(mb__result_add_stat_warnings(&r, &m, -1.0, 1), MB_STATUS_OK);
    ASSERT_EQ(r.n_warnings, spin_cases[i].n_warnings);
    ASSERT_STR_EQ(r.warnings[0], "machine busy: load average 3.90 on 4 cores");
    if (r.n_warnings == 2) {
      ASSERT_CONTAINS(r.warnings[1], "onednn's OpenMP threads spin-wait");
      ASSERT_CONTAINS(r.warnings[1], "OMP_WAIT_POLICY=passive");
    }
    mb__result_clear(&r);
  }
  unsetenv("OMP_WAIT_POLICY");

  /* Fresh memory every run: 300 faults per inference at 10 us each are
   * 3 ms of a 4 ms median; at 0.1 us each (0.03 ms) they do not matter,
   * and neither do 10 faults per run however slow. */
  memset(&r, 0, sizeof r);
  r.status = MB_BENCH_OK;
  r.iterations = 100;
  r.latency_ms.median = 4.0;
  ASSERT_EQ(mb__result_add_fault_warning(&r, 30000, 10.0), MB_STATUS_OK);
  ASSERT_EQ(r.n_warnings, 1);
  ASSERT_STR_EQ(r.warnings[0],
                "fresh memory: 300 page faults per inference (~3 ms of the "
                "4 ms median at 10 us each, measured here): the allocator "
                "returns memory to the OS and takes it back every run "
                "(glibc's mmap threshold; a caching allocator or "
                "MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ would remove "
                "it)");
  mb__result_clear(&r);
  r.iterations = 100;
  r.latency_ms.median = 4.0;
  ASSERT_EQ(mb__result_add_fault_warning(&r, 30000, 0.1), MB_STATUS_OK);
  ASSERT_EQ(mb__result_add_fault_warning(&r, 1000, 1000.0), MB_STATUS_OK);
  ASSERT_EQ(mb__result_add_fault_warning(&r, 30000, 0.0), MB_STATUS_OK);
  ASSERT_EQ(r.n_warnings, 0);
  /* What a fault costs is measurable here and finite. */
  double fault_us = mb__page_fault_us();
  ASSERT(fault_us > 0.0 && fault_us < 1e5);
  memset(&r, 0, sizeof r);

  /* Measured: what other processes used while the run ran decides, not
   * the load average (which counts the run's own threads and the previous
   * minute). 2 threads on 4 cores leave 2 free: 2.2 cores of others fit
   * within the quarter-core slack, 2.6 do not; on 2 cores with 2 threads,
   * 0.2 of a core (daemons) is quiet and 0.6 is busy. */
  static const struct {
    int cores, threads;
    double load, others;
    const char *busy;
  } measured[] = {
      {4, 2, 3.9, 0.1, NULL},
      {4, 2, 0.2, 2.2, NULL},
      {4, 2, 0.2, 2.6,
       "machine busy: other processes used 2.6 of 4 cores while it ran"},
      {2, 2, 1.9, 0.2, NULL},
      {2, 2, 0.0, 0.6,
       "machine busy: other processes used 0.6 of 2 cores while it ran"},
  };
  for (size_t i = 0; i < sizeof measured / sizeof *measured; i++) {
    memset(&r, 0, sizeof r);
    r.status = MB_BENCH_OK;
    r.iterations = 1000;
    m.cores = measured[i].cores;
    m.load_average = measured[i].load;
    m.governor[0] = '\0';
    ASSERT_EQ(mb__result_add_stat_warnings(&r, &m, measured[i].others,
                                           measured[i].threads),
              MB_STATUS_OK);
    ASSERT_EQ(r.n_warnings, measured[i].busy ? 1 : 0);
    if (measured[i].busy)
      ASSERT_STR_EQ(r.warnings[0], measured[i].busy);
    mb__result_clear(&r);
  }
  m.cores = 4;

  /* The window itself: unknown when too short, else never negative and
   * at most the machine's cores. */
  mb_cpu_window w;
  mb__cpu_window_start(&w);
  ASSERT_EQ(mb__cpu_window_others(&w), -1.0);
  w.wall -= 1.0; /* as if it had started a second ago */
  double others = mb__cpu_window_others(&w);
  if (others != -1.0) /* -1: no /proc/stat here */
    ASSERT(others >= 0.0 &&
           others <= (double)sysconf(_SC_NPROCESSORS_ONLN) + 0.5);
  memset(&r, 0, sizeof r);

  /* Quiet machine, enough iterations, unknown governor: no warning. */
  r.iterations = 1000;
  r.latency_ms.cv = 0.01;
  m.load_average = 0.5;
  m.governor[0] = '\0';
  ASSERT_EQ(mb__result_add_stat_warnings(&r, &m, -1.0, 1), MB_STATUS_OK);
  ASSERT_EQ(r.n_warnings, 0);
  return 0;
}

TEST(machine_info) {
  mb_machine_info m;
  mb__machine_info(&m);
  ASSERT(m.cores >= 1);
  ASSERT(m.os[0] != '\0');
  return 0;
}

/* ---- wire format ---- */

TEST(result_survives_the_wire) {
  mb_bench_result r, back;
  mb_error err;
  memset(&r, 0, sizeof r);
  r.conversion_index = 3;
  r.conversion_id = 42;
  r.status = MB_BENCH_CRASHED;
  snprintf(r.error, sizeof r.error, "crashed with SIGSEGV");
  snprintf(r.runtime_version, sizeof r.runtime_version, "1.30.0");
  r.latency_ms.p99 = 1.25;
  r.iterations = 3;
  double samples[] = {1.0, 1.5, 1.25};
  r.samples_ms = samples;
  r.n_samples_ms = 3;
  mb_output_accuracy acc[2] = {{"y", 0.5, 0.25, 0.99}, {"z", 0, 0, 1}};
  r.accuracy = acc;
  r.n_outputs = 2;
  r.has_accuracy = 1;
  char *warnings[] = {"first", "second"};
  r.warnings = warnings;
  r.n_warnings = 2;
  r.backtrace = "frame 0\nframe 1\n";
  snprintf(r.log_path, sizeof r.log_path, "/tmp/x.log");
  r.load.scenario = MB_LOAD_SERVER;
  r.load.generator_lateness_us = (mb_load_delay_us){0.5, 3.25, 12};
  r.load.handoff_us = (mb_load_delay_us){0.25, 1.5, 40};
  r.load.idle_sleeps = 900;
  r.load.spin_fallbacks = 2;
  r.load.spin_always = 1;
  r.load.spin_margin_us = 230;
  r.load.steal_ms = 40;
  r.load.ideal_p99_ms = 3.75;
  r.load.harness_excess = 1;
  r.load.slo_met = -1;

  mb_wire w = {0};
  mb__wire_put_result(&w, &r);
  ASSERT(!w.failed);
  ASSERT_OK(mb__wire_get_result(&w, &back, &err), &err);
  ASSERT_EQ(back.conversion_id, 42);
  ASSERT_EQ(back.status, MB_BENCH_CRASHED);
  ASSERT_STR_EQ(back.error, "crashed with SIGSEGV");
  ASSERT_STR_EQ(back.runtime_version, "1.30.0");
  ASSERT_NEAR(back.latency_ms.p99, 1.25, 0);
  ASSERT_EQ(back.n_samples_ms, 3);
  ASSERT_NEAR(back.samples_ms[1], 1.5, 0);
  ASSERT_EQ(back.n_outputs, 2);
  ASSERT_STR_EQ(back.accuracy[1].name, "z");
  ASSERT_NEAR(back.accuracy[0].cosine, 0.99, 0);
  ASSERT_EQ(back.n_warnings, 2);
  ASSERT_STR_EQ(back.warnings[1], "second");
  ASSERT_STR_EQ(back.backtrace, "frame 0\nframe 1\n");
  ASSERT_STR_EQ(back.log_path, "/tmp/x.log");
  ASSERT_EQ(back.load.scenario, MB_LOAD_SERVER);
  ASSERT_NEAR(back.load.generator_lateness_us.p99, 3.25, 0);
  ASSERT_NEAR(back.load.handoff_us.max, 40, 0);
  ASSERT_EQ(back.load.idle_sleeps, 900);
  ASSERT_EQ(back.load.spin_fallbacks, 2);
  ASSERT_EQ(back.load.spin_always, 1);
  ASSERT_NEAR(back.load.spin_margin_us, 230, 0);
  ASSERT_NEAR(back.load.steal_ms, 40, 0);
  ASSERT_NEAR(back.load.ideal_p99_ms, 3.75, 0);
  ASSERT_EQ(back.load.harness_excess, 1);
  ASSERT_EQ(back.load.slo_met, -1);
  mb__result_clear(&back);

  /* Every truncation of the message is rejected, never read past. */
  size_t full = w.size;
  for (size_t cut = 0; cut < full; cut += 7) {
    mb_wire part = {w.data, cut, cut, 0, 0};
    ASSERT_NE(mb__wire_get_result(&part, &back, NULL), MB_STATUS_OK);
  }
  mb__wire_free(&w);
  return 0;
}

/* ---- whole runs ---- */

TEST(isolation_contains_every_failure) {
  observed o;
  mb_bench_config c;
  mb_bench_report *report = NULL;
  mb_error err;
  memset(&o, 0, sizeof o);
  ASSERT_EQ(bench_test_register(), 0);
  int reference = conversion_index("REFERENCE");
  ASSERT(reference >= 0);
  const int list[] = {reference,  TEST_CRASH, TEST_HANG,
                      TEST_ERROR, TEST_WRONG, TEST_NOOP};
  fast_config(&c, &o);
  c.n_conversions = 6;
  c.conversions = list;
  ASSERT_OK(mb_benchmark_model(model_path("mlp.onnx"), &c, &report, &err),
            &err);
  ASSERT_EQ(report->n_results, 6);

  /* Results come in the requested order, each handed over once. */
  ASSERT_EQ(o.n_results, 6);
  for (int i = 0; i < 6; i++) {
    ASSERT_STR_EQ(o.names[i], report->results[i].conversion);
    ASSERT_EQ(o.statuses[i], report->results[i].status);
    ASSERT_EQ(report->results[i].conversion_index, list[i]);
  }
  ASSERT_EQ(o.bad_progress, 0);
  ASSERT(o.saw_measure);

  const mb_bench_result *ref = &report->results[0];
  if (check_ok_result(ref, c.min_iterations))
    return 1;
  ASSERT_STR_EQ(ref->conversion, "REFERENCE");
  ASSERT_STR_EQ(ref->runtime, "reference");
  ASSERT_EQ(ref->has_accuracy, 1);
  ASSERT_NEAR(ref->max_abs_err, 0, 0);
  ASSERT(ref->n_outputs >= 1);
  ASSERT_NEAR(ref->accuracy[0].cosine, 1.0, 1e-12);
  ASSERT_NEAR(ref->speedup_vs_baseline, 1.0, 1e-12);
  ASSERT(ref->log_path[0] != '\0');
  ASSERT_EQ(access(ref->log_path, F_OK), 0);

  const mb_bench_result *crash = &report->results[1];
  ASSERT_EQ(crash->status, MB_BENCH_CRASHED);
  ASSERT_CONTAINS(crash->error, "SIGSEGV");
  ASSERT(crash->backtrace != NULL && crash->backtrace[0] != '\0');
  ASSERT_NEAR(crash->speedup_vs_baseline, 0, 0);

  const mb_bench_result *hang = &report->results[2];
  ASSERT_EQ(hang->status, MB_BENCH_TIMEOUT);
  ASSERT_STR_EQ(hang->error, "timed out after 2 s");

  const mb_bench_result *error = &report->results[3];
  ASSERT_EQ(error->status, MB_BENCH_ERROR);
  ASSERT_CONTAINS(error->error, "test runtime error: kernel 'Gemm' failed");
  ASSERT_CONTAINS(error->error, "first run");

  const mb_bench_result *wrong = &report->results[4];
  if (check_ok_result(wrong, c.min_iterations))
    return 1;
  ASSERT_EQ(wrong->has_accuracy, 1);
  ASSERT_NEAR(wrong->max_abs_err, 1.0, 1e-5);
  ASSERT(wrong->n_warnings >= 1);

  const mb_bench_result *noop = &report->results[5];
  if (check_ok_result(noop, c.min_iterations))
    return 1;
  ASSERT_EQ(noop->has_accuracy, 0); /* it cannot return outputs */
  ASSERT(noop->speedup_vs_baseline > 0.0);

  /* The report itself. */
  ASSERT_STR_EQ(report->tool_version, MB_VERSION_STRING);
  ASSERT_EQ(strlen(report->model_sha256), 64);
  ASSERT_EQ(report->n_inputs, 1);
  ASSERT(report->inputs[0].name && report->inputs[0].name[0]);
  ASSERT_EQ(report->input_dtypes[0], MB_DTYPE_FLOAT);
  ASSERT_EQ(report->config.n_conversions, 6);
  ASSERT_EQ(report->config.conversions[2], TEST_HANG);
  ASSERT(report->config.on_result == NULL);
  ASSERT_STR_EQ(report->config.log_dir, log_dir);
  ASSERT(report->machine.cores >= 1);
  ASSERT_EQ(report->baseline_result, 0);
  mb_bench_report_free(report);
  remove_logs();
  return 0;
}

TEST(leaks_stay_in_their_worker) {
  observed o;
  mb_bench_config c;
  mb_bench_report *report = NULL;
  mb_error err;
  memset(&o, 0, sizeof o);
  ASSERT_EQ(bench_test_register(), 0);
  /* The same leaking conversion twice: if leaks carried over from one
   * conversion to the next, the second would start where the first ended.
   * TEST_ERROR stops at its first run: its peak is a worker's base. */
  const int list[] = {TEST_LEAK, TEST_LEAK, TEST_ERROR};
  fast_config(&c, &o);
  c.n_conversions = 3;
  c.conversions = list;
  c.baseline = 1;
  ASSERT_OK(mb_benchmark_model(model_path("mlp.onnx"), &c, &report, &err),
            &err);
  const mb_bench_result *first = &report->results[0];
  const mb_bench_result *second = &report->results[1];
  const mb_bench_result *base = &report->results[2];
  if (check_ok_result(first, c.min_iterations) ||
      check_ok_result(second, c.min_iterations))
    return 1;
  ASSERT_EQ(base->status, MB_BENCH_ERROR);
  ASSERT(base->peak_rss_mb > 0);
  /* Each run leaks 1 MiB: the peak shows it (first run, warm-up, timed).
   * Two workers' bases differ by a MiB or two (TEST_ERROR's peak is ~2 MiB
   * above TEST_LEAK's before its first leak since workers stopped loading
   * every runtime to read one version), so half the leak is the margin. */
  double runs = (double)MB_MIN(first->iterations, second->iterations) + 2;
  ASSERT(first->peak_rss_mb >= base->peak_rss_mb + 0.5 * runs);
  ASSERT(second->peak_rss_mb < first->peak_rss_mb + 0.5 * runs);
  ASSERT(test_leak_list == NULL); /* and nothing leaked in this process */
  /* Baseline given explicitly: the second conversion. */
  ASSERT_EQ(report->baseline_result, 1);
  ASSERT_NEAR(second->speedup_vs_baseline, 1.0, 1e-12);
  ASSERT(first->speedup_vs_baseline > 0.0);
  ASSERT_NEAR(base->speedup_vs_baseline, 0, 0);
  mb_bench_report_free(report);
  remove_logs();
  return 0;
}

TEST(fail_fast_skips_the_rest) {
  observed o;
  mb_bench_config c;
  mb_bench_report *report = NULL;
  mb_error err;
  memset(&o, 0, sizeof o);
  ASSERT_EQ(bench_test_register(), 0);
  const int list[] = {TEST_NOOP, TEST_UNAVAILABLE, TEST_ERROR, TEST_NOOP,
                      TEST_WRONG};
  fast_config(&c, &o);
  c.n_conversions = 5;
  c.conversions = list;
  c.fail_fast = 1;
  c.log_dir = NULL; /* the run's folder under <cache>/logs */
  c.roofline = 0;   /* nothing but the logs under the cache */
  char cache[PATH_MAX], logs[PATH_MAX + 8];
  snprintf(cache, sizeof cache, "%s/mb-test-cache-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  ASSERT(mkdtemp(cache) != NULL);
  snprintf(logs, sizeof logs, "%s/logs", cache);
  c.cache_dir = cache;
  ASSERT_OK(mb_benchmark_model(model_path("mlp.onnx"), &c, &report, &err),
            &err);
  ASSERT_EQ(report->n_results, 5);
  char temp_dir[PATH_MAX], first_log[PATH_MAX];
  snprintf(temp_dir, sizeof temp_dir, "%s", report->config.log_dir);
  ASSERT_EQ(strncmp(temp_dir, logs, strlen(logs)), 0);
  ASSERT_EQ(strncmp(temp_dir + strlen(logs), "/run-", 5), 0);
  snprintf(first_log, sizeof first_log, "%s", report->results[0].log_path);
  ASSERT_EQ(access(temp_dir, F_OK), 0);
  ASSERT_EQ(access(first_log, F_OK), 0);
  ASSERT_EQ(report->results[0].status, MB_BENCH_OK);
  /* Unavailable is not a failure: the run goes on. */
  ASSERT_EQ(report->results[1].status, MB_BENCH_UNAVAILABLE);
  ASSERT_CONTAINS(report->results[1].error, "never available");
  ASSERT_EQ(report->results[2].status, MB_BENCH_ERROR);
  ASSERT_EQ(report->results[3].status, MB_BENCH_SKIPPED);
  ASSERT_CONTAINS(report->results[3].error, "TEST_ERROR");
  ASSERT_EQ(report->results[4].status, MB_BENCH_SKIPPED);
  ASSERT_EQ(o.n_results, 5);
  ASSERT_EQ(o.statuses[4], MB_BENCH_SKIPPED);
  char error_log[PATH_MAX];
  snprintf(error_log, sizeof error_log, "%s", report->results[2].log_path);
  ASSERT_EQ(access(error_log, F_OK), 0);
  mb_bench_report_free(report);
  /* The ok conversion's log goes with the report, the failed one's stays. */
  ASSERT_NE(access(first_log, F_OK), 0);
  ASSERT_EQ(access(error_log, F_OK), 0);
  ASSERT_EQ(unlink(error_log), 0);
  ASSERT_EQ(rmdir(temp_dir), 0);
  ASSERT_EQ(rmdir(logs), 0);
  ASSERT_EQ(rmdir(cache), 0);
  remove_logs();
  return 0;
}

/* Build only: each conversion is built and loaded, nothing is run: a
 * runtime that fails or crashes only when run is "built", one that hangs
 * in prepare still times out, and no reference or measurement is made. */
TEST(build_only_prepares_and_runs_nothing) {
  observed o;
  mb_bench_config c;
  mb_bench_report *report = NULL;
  mb_error err;
  memset(&o, 0, sizeof o);
  ASSERT_EQ(bench_test_register(), 0);
  const int list[] = {TEST_NOOP, TEST_CRASH, TEST_ERROR, TEST_HANG,
                      TEST_UNAVAILABLE};
  fast_config(&c, &o);
  c.n_conversions = 5;
  c.conversions = list;
  c.build_only = 1;
  c.fail_fast = 1; /* built is not a failure: the run goes on */
  ASSERT_OK(mb_benchmark_model(model_path("mlp.onnx"), &c, &report, &err),
            &err);
  ASSERT_EQ(report->n_results, 5);
  ASSERT(!o.saw_measure);
  ASSERT_STR_EQ(report->reference, "");
  for (int i = 0; i < 3; i++) {
    const mb_bench_result *r = &report->results[i];
    ASSERT_EQ(r->status, MB_BENCH_BUILT);
    ASSERT_EQ(r->iterations, 0);
    ASSERT_EQ(r->has_accuracy, 0);
    ASSERT(r->load_ms >= 0);
    ASSERT(!mb_bench_status_failed(r->status));
  }
  ASSERT_EQ(report->results[3].status, MB_BENCH_TIMEOUT);
  ASSERT(mb_bench_status_failed(report->results[3].status));
  ASSERT_EQ(report->results[4].status, MB_BENCH_SKIPPED);
  ASSERT_STR_EQ(mb_bench_status_name(MB_BENCH_BUILT), "built");
  mb_recommendations rec;
  mb_bench_recommend(report, NULL, &rec);
  ASSERT_EQ(rec.fastest_accurate, -1);
  ASSERT_CONTAINS(rec.summary, "Build only: 3 of 5 conversions built");
  mb_bench_report_free(report);
  remove_logs();
  return 0;
}

/* Old runs' log folders go, oldest first, past the newest `keep`; one
 * touched lately stays whatever its rank, and other folders are not ours. */
TEST(old_run_logs_are_pruned) {
  char logs[PATH_MAX], path[PATH_MAX + 64], file[PATH_MAX + 96];
  snprintf(logs, sizeof logs, "%s/mb-test-logs-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  ASSERT(mkdtemp(logs) != NULL);
  struct timespec old[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
  for (int i = 0; i < 26; i++) {
    snprintf(path, sizeof path, "%s/run-20200101-0000%02d-abcdef", logs, i);
    ASSERT_EQ(mkdir(path, 0755), 0);
    snprintf(file, sizeof file, "%s/01-TEST_ERROR.log", path);
    FILE *f = fopen(file, "w");
    ASSERT(f != NULL);
    fclose(f);
    if (i > 0) /* run 00 was touched just now */
      ASSERT_EQ(utimensat(AT_FDCWD, path, old, 0), 0);
  }
  snprintf(path, sizeof path, "%s/other", logs);
  ASSERT_EQ(mkdir(path, 0755), 0);
  ASSERT_EQ(utimensat(AT_FDCWD, path, old, 0), 0);
  mb__run_logs_prune(logs, 20);
  for (int i = 0; i < 26; i++) {
    snprintf(path, sizeof path, "%s/run-20200101-0000%02d-abcdef", logs, i);
    bool kept = i == 0 || i >= 6;
    ASSERT_EQ(access(path, F_OK) == 0, kept);
  }
  snprintf(path, sizeof path, "%s/other", logs);
  ASSERT_EQ(access(path, F_OK), 0);
  ASSERT_EQ(rmdir(path), 0);
  mb__run_logs_prune(logs, 0);
  /* Run 00 is spared by its age; the rest are gone. */
  snprintf(path, sizeof path, "%s/run-20200101-000000-abcdef", logs);
  ASSERT_EQ(access(path, F_OK), 0);
  snprintf(file, sizeof file, "%s/01-TEST_ERROR.log", path);
  ASSERT_EQ(unlink(file), 0);
  ASSERT_EQ(rmdir(path), 0);
  ASSERT_EQ(rmdir(logs), 0);
  return 0;
}

TEST(in_process_runs_without_workers) {
  observed o;
  mb_bench_config c;
  mb_bench_report *report = NULL;
  mb_error err;
  memset(&o, 0, sizeof o);
  ASSERT_EQ(bench_test_register(), 0);
  int reference = conversion_index("REFERENCE");
  const int list[] = {reference, TEST_ERROR, TEST_WRONG, TEST_NOOP,
                      TEST_UNAVAILABLE};
  fast_config(&c, &o);
  c.n_conversions = 5;
  c.conversions = list;
  c.isolate = 0;
  c.n_samples = 3;
  c.min_iterations = 1;
  ASSERT_OK(mb_benchmark_model(model_path("mlp.onnx"), &c, &report, &err),
            &err);
  /* Every sample is used at least once. */
  if (check_ok_result(&report->results[0], 3))
    return 1;
  ASSERT_NEAR(report->results[0].max_abs_err, 0, 0);
  ASSERT_EQ(report->results[1].status, MB_BENCH_ERROR);
  ASSERT_CONTAINS(report->results[1].error, "kernel 'Gemm' failed");
  if (check_ok_result(&report->results[2], 3))
    return 1;
  ASSERT_NEAR(report->results[2].max_abs_err, 1.0, 1e-5);
  if (check_ok_result(&report->results[3], 3))
    return 1;
  ASSERT_EQ(report->results[4].status, MB_BENCH_UNAVAILABLE);
  ASSERT_STR_EQ(report->results[0].log_path, "");
  ASSERT_EQ(report->config.n_samples, 3);
  ASSERT_EQ(o.n_results, 5);
  ASSERT_EQ(o.bad_progress, 0);
  mb_bench_report_free(report);
  remove_logs();
  return 0;
}

TEST(unrunnable_reference_leaves_accuracy_unknown) {
  observed o;
  mb_bench_config c;
  mb_bench_report *report = NULL;
  mb_error err;
  memset(&o, 0, sizeof o);
  ASSERT_EQ(bench_test_register(), 0);

  /* A model with an operator nobody implements. */
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/mb-test-custom-op-%d.onnx",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
  mb_model *m = mb__model_create();
  ASSERT(m != NULL);
  const int64_t dims[] = {1, 4};
  const char *in[] = {"x"}, *out[] = {"y"};
  ASSERT_OK(mb__model_set_opset(m, "", 17, &err), &err);
  ASSERT_OK(mb__model_set_opset(m, "com.example", 1, &err), &err);
  ASSERT(mb__graph_add_input(m->graph, "x", MB_DTYPE_FLOAT, 2, dims, NULL,
                             &err) >= 0);
  ASSERT(mb__graph_add_node(m->graph, "Frobnicate", "com.example", "f", 1, in,
                            1, out, &err) >= 0);
  ASSERT(mb__graph_add_output(m->graph, "y", MB_DTYPE_FLOAT, 2, dims, NULL,
                              &err) >= 0);
  ASSERT_OK(mb__graph_finalize(m->graph, &err), &err);
  ASSERT_OK(mb_model_save(m, path, NULL, &err), &err);
  mb_model_free(m);

  const int list[] = {TEST_NOOP, conversion_index("REFERENCE")};
  fast_config(&c, &o);
  c.n_conversions = 2;
  c.conversions = list;
  ASSERT_OK(mb_benchmark_model(path, &c, &report, &err), &err);
  unlink(path);
  const mb_bench_result *noop = &report->results[0];
  if (check_ok_result(noop, c.min_iterations))
    return 1;
  ASSERT_EQ(noop->has_accuracy, 0);
  ASSERT(noop->max_abs_err < 0);
  int found = 0;
  for (int i = 0; i < noop->n_warnings; i++)
    if (strstr(noop->warnings[i], "accuracy unknown") &&
        strstr(noop->warnings[i], "Frobnicate"))
      found = 1;
  ASSERT(found);
  /* The reference conversion itself fails to prepare: an error, no more. */
  ASSERT_EQ(report->results[1].status, MB_BENCH_ERROR);
  ASSERT_CONTAINS(report->results[1].error, "Frobnicate");
  mb_bench_report_free(report);
  remove_logs();
  return 0;
}

TEST(bad_arguments_fail_the_run) {
  observed o;
  mb_bench_config c;
  mb_bench_report *report = NULL;
  mb_error err;
  memset(&o, 0, sizeof o);
  ASSERT_EQ(bench_test_register(), 0);
  const int list[] = {TEST_NOOP};
  fast_config(&c, &o);
  c.n_conversions = 1;
  c.conversions = list;

  c.n_samples = 0;
  ASSERT_EQ(mb_benchmark_model(model_path("mlp.onnx"), &c, &report, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "n_samples");
  c.n_samples = 1;

  c.min_seconds = -1;
  ASSERT_EQ(mb_benchmark_model(model_path("mlp.onnx"), &c, &report, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "min_time");
  c.min_seconds = 0.05;

  const int bad[] = {100000};
  c.conversions = bad;
  ASSERT_EQ(mb_benchmark_model(model_path("mlp.onnx"), &c, &report, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "conversions[0]");
  c.conversions = list;

  c.baseline = 3;
  ASSERT_EQ(mb_benchmark_model(model_path("mlp.onnx"), &c, &report, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "baseline");
  c.baseline = -1;

  ASSERT_NE(
      mb_benchmark_model(model_path("no-such-model.onnx"), &c, &report, &err),
      MB_STATUS_OK);
  ASSERT_CONTAINS(err.message, "no-such-model.onnx");
  ASSERT(report == NULL);
  ASSERT_EQ(o.n_results, 0);
  remove_logs();
  return 0;
}

TEST_MAIN(TEST_ENTRY(percentiles_interpolate_between_ranks),
          TEST_ENTRY(latency_stats_of_known_samples), TEST_ENTRY(stat_warnings),
          TEST_ENTRY(machine_info), TEST_ENTRY(result_survives_the_wire),
          TEST_ENTRY(isolation_contains_every_failure),
          TEST_ENTRY(leaks_stay_in_their_worker),
          TEST_ENTRY(fail_fast_skips_the_rest),
          TEST_ENTRY(old_run_logs_are_pruned),
          TEST_ENTRY(build_only_prepares_and_runs_nothing),
          TEST_ENTRY(in_process_runs_without_workers),
          TEST_ENTRY(unrunnable_reference_leaves_accuracy_unknown),
          TEST_ENTRY(bad_arguments_fail_the_run))
