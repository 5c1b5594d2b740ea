/* The search of mb_tune (src/bench/tune.c) on runtimes whose speed the test
 * sets: each computes with the reference interpreter (so accuracy is real)
 * and then sleeps a fixed time per inference, so that which candidate is
 * faster, and by how much, is the test's choice on any machine.
 *
 *   TEST_TUNE_FP32   runtime test_tune, fp32: sleeps fp32_sleep_ms
 *   TEST_TUNE_INT8   runtime test_tune, INT8_STATIC: sleeps 1 ms (a model
 *                    with QuantizeLinear nodes); inaccurate on
 *                    sensitive_mlp.onnx, whose "sensitive_matmul" (46% of
 *                    its quantisable FLOPs) int8 ruins
 *   TEST_TUNE_OTHER  runtime test_tune_other, fp32, accurate: 4 ms
 *
 * Checked: a candidate more than 1.5x slower than the fastest accurate one
 * leaves after round 0 whatever halving would keep; per-node precision is
 * not measured when its predicted time (int8 time plus the kept share
 * of the gap to the fp32 twin) cannot beat the fastest accurate candidate,
 * and is measured, and wins, when it can; the steps' at_seconds and
 * samples. And the estimator's shortcut (tune_estimate.c): estimates that
 * rerun only what their kept nodes change give exactly what whole runs
 * give, on every node of three models in the three int8 forms (QDQ,
 * dynamic, and the engines' products only). */
#include "bench/bench_internal.h"
#include "bench/tune_internal.h"
#include "conversions/conversion.h"
#include "core/ir.h"
#include "reference_session.h"
#include "runtime/runtime.h"
#include "test.h"

#include <limits.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long fp32_sleep_ms = 60; /* read by forked workers */

static const char *model_path(const char *name) {
  static char path[PATH_MAX];
  const char *dir = getenv("MB_TEST_MODELS");
  snprintf(path, sizeof path, "%s/%s", dir ? dir : "build/models", name);
  return path;
}

/* ---- the runtimes ---- */

static void probe_ok(mb_runtime_info *info) {
  info->available = 1;
  snprintf(info->version, sizeof info->version, "test");
}

static bool has_quantize(const mb_model *model) {
  const mb_graph *g = model->graph;
  for (int i = 0; g && i < g->n_nodes; i++)
    if (strcmp(g->nodes[i].op_type, "QuantizeLinear") == 0)
      return true;
  return false;
}

static mb_status tune_prepare(const mb_model *model, const void *bytes,
                              size_t size, const mb_runtime_options *options,
                              void **session_out, mb_error *err) {
  return test_ref_create(model, has_quantize(model) ? 1 : fp32_sleep_ms,
                         session_out, err);
}

static mb_status other_prepare(const mb_model *model, const void *bytes,
                               size_t size, const mb_runtime_options *options,
                               void **session_out, mb_error *err) {
  return test_ref_create(model, 4, session_out, err);
}

static const mb_runtime rt_tune = {.name = "test_tune",
                                   .probe = probe_ok,
                                   .prepare = tune_prepare,
                                   .run = test_ref_run,
                                   .fetch_outputs = test_ref_fetch,
                                   .release = test_ref_release};
static const mb_runtime rt_other = {.name = "test_tune_other",
                                    .probe = probe_ok,
                                    .prepare = other_prepare,
                                    .run = test_ref_run,
                                    .fetch_outputs = test_ref_fetch,
                                    .release = test_ref_release};

static int conv_fp32 = -1, conv_int8 = -1, conv_other = -1;

static int register_rows(void) {
  static mb_conversion_def defs[3] = {
      {.id = 9101,
       .name = "TEST_TUNE_FP32",
       .runtime = "test_tune",
       .device = MB_DEVICE_CPU,
       .precision = MB_PRECISION_FP32,
       .opt_level = MB_GRAPH_OPT_ALL,
       .steps = "optimize",
       .description = "test-only conversion"},
      {.id = 9102,
       .name = "TEST_TUNE_INT8",
       .runtime = "test_tune",
       .device = MB_DEVICE_CPU,
       .precision = MB_PRECISION_INT8,
       .opt_level = MB_GRAPH_OPT_ALL,
       .steps = "optimize,quantize_static",
       .description = "test-only conversion"},
      {.id = 9103,
       .name = "TEST_TUNE_OTHER",
       .runtime = "test_tune_other",
       .device = MB_DEVICE_CPU,
       .precision = MB_PRECISION_FP32,
       .opt_level = MB_GRAPH_OPT_ALL,
       .steps = "optimize",
       .description = "test-only conversion"},
  };
  static bool done;
  mb_error err;
  if (done)
    return 0;
  if (mb__runtime_register(&rt_tune, &err) ||
      mb__runtime_register(&rt_other, &err) ||
      (conv_fp32 = mb__conversion_register(&defs[0], &err)) < 0 ||
      (conv_int8 = mb__conversion_register(&defs[1], &err)) < 0 ||
      (conv_other = mb__conversion_register(&defs[2], &err)) < 0) {
    fprintf(stderr, "registering the test rows: %s\n", err.message);
    return 1;
  }
  done = true;
  return 0;
}

/* ---- helpers ---- */

static char cache_dir[PATH_MAX];

/* Tunes sensitive_mlp.onnx over the three rows at 1 thread, the fp32 row
 * sleeping fp32_ms a run; NULL (with the reason on stderr) on failure. */
static mb_tune_result *tune_three(long fp32_ms) {
  mb_tune_config c;
  mb_tune_result *res = NULL;
  mb_error err = {MB_STATUS_OK, ""};
  if (register_rows())
    return NULL;
  int conversions[3] = {conv_fp32, conv_int8, conv_other};
  fp32_sleep_ms = fp32_ms;
  mb_tune_config_init(&c);
  c.bench.conversions = conversions;
  c.bench.n_conversions = 3;
  c.bench.max_error = 1e-3;
  c.bench.calibration_samples = 32;
  c.bench.n_samples = 4; /* the ranking runs on 2 of them */
  c.bench.cache_dir = cache_dir;
  c.round_seconds = 0.05;
  if (mb_tune(model_path("sensitive_mlp.onnx"), &c, &res, &err)) {
    fprintf(stderr, "  tune: %s\n", err.message);
    return NULL;
  }
  return res;
}

static const mb_tune_step *step_of(const mb_tune_result *r, const char *phase,
                                   const char *conversion, int round) {
  for (int i = 0; i < r->n_steps; i++)
    if (strcmp(r->steps[i].phase, phase) == 0 &&
        strcmp(r->steps[i].conversion, conversion) == 0 &&
        (round < 0 || r->steps[i].round == round))
      return &r->steps[i];
  return NULL;
}

static int count_phase(const mb_tune_result *r, const char *phase) {
  int n = 0;
  for (int i = 0; i < r->n_steps; i++)
    n += strcmp(r->steps[i].phase, phase) == 0;
  return n;
}

/* at_seconds in order; estimates on all 4 samples, the sensitivity
 * ranking's on 2, measurements none. */
static int check_steps(const mb_tune_result *r) {
  double last = 0;
  for (int i = 0; i < r->n_steps; i++) {
    const mb_tune_step *s = &r->steps[i];
    ASSERT(s->at_seconds >= last);
    last = s->at_seconds;
    if (strcmp(s->phase, "sensitivity") == 0)
      ASSERT_EQ(s->samples, 2);
    else if (strcmp(s->phase, "mixed-estimate") == 0)
      ASSERT_EQ(s->samples, 4);
    else
      ASSERT_EQ(s->samples, 0);
  }
  ASSERT(last > 0 && last <= r->wall_seconds);
  return 0;
}

/* ---- tests ---- */

/* fp32 60 ms: over 1.5x TEST_TUNE_OTHER's 4 ms, so it leaves after round
 * 0; the int8 model with sensitive_matmul in float would take about
 * 1 + 0.46 x (60 - 1) ms, so it is not measured; the 4 ms fp32 wins. */
TEST(hopeless_dropped_and_mixed_not_measured) {
  mb_tune_result *r = tune_three(60);
  ASSERT(r != NULL);
  const mb_tune_step *fp32 = step_of(r, "uniform", "TEST_TUNE_FP32", 0);
  ASSERT(fp32 && fp32->accurate);
  ASSERT(strncmp(fp32->dropped, "cannot win after round 0", 24) == 0);
  ASSERT(strstr(fp32->dropped, "TEST_TUNE_OTHER") != NULL);
  ASSERT(step_of(r, "uniform", "TEST_TUNE_FP32", 1) == NULL);
  const mb_tune_step *int8 = step_of(r, "uniform", "TEST_TUNE_INT8", 0);
  ASSERT(int8 && !int8->accurate);
  /* The per-node search ran on the estimator, the engine measured none. */
  ASSERT(count_phase(r, "sensitivity") == 3);
  ASSERT_EQ(count_phase(r, "mixed"), 0);
  const mb_tune_step *skipped = NULL;
  for (int i = 0; i < r->n_steps; i++)
    if (strstr(r->steps[i].dropped, "not measured: with 1 node in float"))
      skipped = &r->steps[i];
  ASSERT(skipped != NULL);
  ASSERT(strcmp(skipped->phase, "mixed-estimate") == 0);
  ASSERT(skipped->n_kept_float == 1);
  ASSERT(strcmp(skipped->kept_float[0], "sensitive_matmul") == 0);
  /* "would take about L ms (A ms in int8, TEST_TUNE_FP32 B ms, P% of its
   * int8 FLOPs back in float)": L = A + P/100 (B - A). */
  double least, a, b, p;
  const char *at = strstr(skipped->dropped, "would take ");
  ASSERT(at && sscanf(at,
                      "would take about %lf ms (%lf ms in int8, "
                      "TEST_TUNE_FP32 %lf ms, %lf%%",
                      &least, &a, &b, &p) == 4);
  ASSERT(p > 30 && p < 60); /* sensitive_matmul: 4096 of 8832 FLOPs */
  ASSERT(fabs(least - (a + p / 100 * (b - a))) < 0.01 * least);
  ASSERT(b >= 55 && a < 0.5 * least);
  ASSERT(r->found && r->winner >= 0);
  ASSERT(strcmp(r->steps[r->winner].conversion, "TEST_TUNE_OTHER") == 0);
  ASSERT_EQ(check_steps(r), 0);
  mb_tune_result_free(r);
  return 0;
}

/* fp32 5 ms: the int8 model with sensitive_matmul in float should take
 * about 1 + 0.46 x 4 ms, under TEST_TUNE_OTHER's 4 ms: measured, accurate,
 * the winner. */
TEST(mixed_measured_when_it_can_win) {
  mb_tune_result *r = tune_three(5);
  ASSERT(r != NULL);
  const mb_tune_step *fp32 = step_of(r, "uniform", "TEST_TUNE_FP32", 0);
  ASSERT(fp32 && strncmp(fp32->dropped, "cannot win", 10) != 0);
  const mb_tune_step *mixed = step_of(r, "mixed", "TEST_TUNE_INT8", -1);
  ASSERT(mixed != NULL);
  ASSERT(mixed->n_kept_float == 1);
  ASSERT(strcmp(mixed->kept_float[0], "sensitive_matmul") == 0);
  ASSERT(mixed->accurate && mixed->median_ms > 0);
  ASSERT(r->found && r->winner >= 0);
  ASSERT(&r->steps[r->winner] == mixed);
  ASSERT_EQ(check_steps(r), 0);
  mb_tune_result_free(r);
  return 0;
}

/* Every group of MODEL alone in float, then the first and last together,
 * then none: with the kept all-int8 values (est) and without (whole), the
 * same error and cosine to the bit; the shortcut must run fewer nodes for
 * the last group than the model has, and none for the all-int8 model. */
static int check_reuse(const char *model, const char *conversion) {
  mb_bench_config config;
  mb_error err = {MB_STATUS_OK, ""};
  mb_tune_estimator *est = NULL, *whole = NULL;
  const mb_conversion_def *def = NULL;
  for (int i = 0; i < mb_conversion_count(); i++)
    if (strcmp(mb__conversion_def(i)->name, conversion) == 0)
      def = mb__conversion_def(i);
  ASSERT(def != NULL);
  mb_bench_config_init(&config);
  config.n_samples = 3;
  config.calibration_samples = 8;
  config.threads = 2;
  config.cache_dir = cache_dir;
  ASSERT_OK(
      mb__tune_estimator_open(model_path(model), &config, def, &est, &err),
      &err);
  ASSERT_OK(
      mb__tune_estimator_open(model_path(model), &config, def, &whole, &err),
      &err);
  mb__tune_estimator_set_reuse(whole, false);
  ASSERT_OK(mb__tune_estimator_cache(est, 2, &err), &err);
  int n = mb__tune_estimator_groups(est);
  ASSERT(n >= 2);
  ASSERT_EQ(mb__tune_estimator_groups(whole), n);
  int shortened = 0;
  for (int g = -2; g < n; g++) {
    const char *keep[2] = {mb__tune_estimator_group(est, g < 0 ? 0 : g),
                           mb__tune_estimator_group(est, n - 1)};
    int n_keep = g == -2 ? 0 : g == -1 ? 2 : 1;
    double e1, c1, e2, c2;
    int nodes;
    ASSERT_OK(mb__tune_estimate(est, 2, n_keep, keep, &e1, &c1, &err), &err);
    int ran = mb__tune_estimator_last_run(est, &nodes);
    ASSERT_OK(mb__tune_estimate(whole, 2, n_keep, keep, &e2, &c2, &err), &err);
    if (memcmp(&e1, &e2, sizeof e1) != 0 || memcmp(&c1, &c2, sizeof c1) != 0)
      TEST_FAIL_("%s %s keeping %d from '%s': error %.17g / cosine %.17g "
                 "from the kept values, %.17g / %.17g whole",
                 model, conversion, n_keep, keep[0], e1, c1, e2, c2);
    if (n_keep == 0)
      ASSERT_EQ(ran, 0);
    if (n_keep == 1 && g == n - 1)
      ASSERT(ran > 0 && ran < nodes);
    shortened += ran < nodes;
    /* Estimates on more samples than are kept run whole. */
    if (g == n - 1) {
      ASSERT_OK(mb__tune_estimate(est, 3, n_keep, keep, &e1, &c1, &err), &err);
      ASSERT_EQ(mb__tune_estimator_last_run(est, &nodes), nodes);
    }
  }
  ASSERT(shortened >= n / 2);
  mb__tune_estimator_close(est);
  mb__tune_estimator_close(whole);
  return 0;
}

TEST(estimates_from_kept_values_match_whole_runs) {
  static const char *const models[] = {
      "sensitive_mlp.onnx", "resnet_blocks.onnx", "transformer_block.onnx"};
  for (size_t m = 0; m < MB_ARRAY_COUNT(models); m++) {
    if (check_reuse(models[m], "INT8_STATIC+REFERENCE") ||
        check_reuse(models[m], "INT8_STATIC+ONEDNN"))
      return 1;
    if (strcmp(models[m], "resnet_blocks.onnx") != 0 && /* no MatMul */
        check_reuse(models[m], "INT8_DYNAMIC+ORT_CPU"))
      return 1;
  }
  return 0;
}

static int setup(void) {
  snprintf(cache_dir, sizeof cache_dir, "%s/mb-tune-search-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  return mkdtemp(cache_dir) ? 0 : 1;
}

int main(int argc, char **argv) {
  static const mb_test_case cases[] = {
      TEST_ENTRY(hopeless_dropped_and_mixed_not_measured),
      TEST_ENTRY(mixed_measured_when_it_can_win),
      TEST_ENTRY(estimates_from_kept_values_match_whole_runs)};
  if (setup()) {
    fprintf(stderr, "cannot make a cache folder\n");
    return 1;
  }
  int failed = mb_test_main(argc, argv, cases, MB_ARRAY_COUNT(cases));
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", cache_dir);
  return failed;
}
