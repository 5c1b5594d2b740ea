/* Pre-quantised models (src/analysis/quantization.c): which graphs count as
 * quantised and what the description says, the accuracy criterion chosen
 * for a conversion, and what the reports make of it: an fp32 conversion of
 * a quantised model that misses rtol/atol but keeps the cosine is
 * accurate, one whose outputs are wrong is still not. Graphs are built
 * with the IR builder; reports by hand. */
#include "analysis/quantization.h"
#include "report/report_load.h"
#include "report/report_util.h"
#include "test.h"

#include <stdlib.h>
#include <unistd.h>

#define CHECK_INDEX(call)                                                      \
  do {                                                                         \
    if ((call) < 0)                                                            \
      goto fail;                                                               \
  } while (0)
#define CHECK_OK(call)                                                         \
  do {                                                                         \
    if ((call) != MB_STATUS_OK)                                                \
      goto fail;                                                               \
  } while (0)

static int add_tensor(mb_graph *g, const char *name, mb_dtype dtype, int rank,
                      const int64_t *dims, mb_error *err) {
  mb_tensor *t = NULL;
  if (mb_tensor_create(dtype, rank, dims, &t, err) != MB_STATUS_OK)
    return -1;
  if (dtype == MB_DTYPE_FLOAT)
    for (int64_t i = 0; i < t->numel; i++)
      ((float *)t->data)[i] = 0.05f * (float)(i % 5 + 1);
  return mb__graph_add_initializer(g, name, t, err);
}

/* The kinds of graph: x[1,4] float -> ... -> y[1,3] float. */
typedef enum graph_kind {
  GRAPH_FLOAT, /* MatMul(x, w) */
  GRAPH_QDQ,   /* Q(x) -> DQ -> MatMul(., w), Q and DQ share one zero point */
  GRAPH_DQ_WEIGHTS, /* MatMul(x, DQ(w_q)): int8 weights, fp32 arithmetic */
  GRAPH_INTEGER,    /* DynamicQuantizeLinear(x) -> MatMulInteger(., w_q) */
} graph_kind;

static mb_model *build(graph_kind kind, mb_error *err) {
  static const int64_t x_dims[] = {1, 4}, w_dims[] = {4, 3}, y_dims[] = {1, 3};
  mb_model *m = mb__model_create();
  if (!m)
    return NULL;
  mb_graph *g = m->graph;
  CHECK_OK(mb__model_set_opset(m, "", 17, err));
  CHECK_INDEX(
      mb__graph_add_input(g, "x", MB_DTYPE_FLOAT, 2, x_dims, NULL, err));
  const char *y_name = "y";
  mb_dtype y_dtype = MB_DTYPE_FLOAT;
  if (kind == GRAPH_FLOAT || kind == GRAPH_QDQ) {
    const char *mm_in[] = {kind == GRAPH_QDQ ? "xd" : "x", "w"};
    const char *mm_out[] = {"y"};
    CHECK_INDEX(add_tensor(g, "w", MB_DTYPE_FLOAT, 2, w_dims, err));
    if (kind == GRAPH_QDQ) {
      const char *q_in[] = {"x", "s", "zp"}, *q_out[] = {"xq"};
      const char *dq_in[] = {"xq", "s", "zp"}, *dq_out[] = {"xd"};
      CHECK_INDEX(add_tensor(g, "s", MB_DTYPE_FLOAT, 0, NULL, err));
      CHECK_INDEX(add_tensor(g, "zp", MB_DTYPE_UINT8, 0, NULL, err));
      CHECK_INDEX(mb__graph_add_node(g, "QuantizeLinear", "", "q", 3, q_in, 1,
                                     q_out, err));
      CHECK_INDEX(mb__graph_add_node(g, "DequantizeLinear", "", "dq", 3, dq_in,
                                     1, dq_out, err));
    }
    CHECK_INDEX(
        mb__graph_add_node(g, "MatMul", "", "mm", 2, mm_in, 1, mm_out, err));
  } else if (kind == GRAPH_DQ_WEIGHTS) {
    const char *dq_in[] = {"wq", "s"}, *dq_out[] = {"w"};
    const char *mm_in[] = {"x", "w"}, *mm_out[] = {"y"};
    CHECK_INDEX(add_tensor(g, "wq", MB_DTYPE_INT8, 2, w_dims, err));
    CHECK_INDEX(add_tensor(g, "s", MB_DTYPE_FLOAT, 0, NULL, err));
    CHECK_INDEX(mb__graph_add_node(g, "DequantizeLinear", "", "dq", 2, dq_in, 1,
                                   dq_out, err));
    CHECK_INDEX(
        mb__graph_add_node(g, "MatMul", "", "mm", 2, mm_in, 1, mm_out, err));
  } else {
    const char *dyn_in[] = {"x"}, *dyn_out[] = {"xq", "xs", "xz"};
    const char *mm_in[] = {"xq", "wq", "xz"}, *mm_out[] = {"yi"};
    CHECK_INDEX(add_tensor(g, "wq", MB_DTYPE_INT8, 2, w_dims, err));
    CHECK_INDEX(mb__graph_add_node(g, "DynamicQuantizeLinear", "", "dyn", 1,
                                   dyn_in, 3, dyn_out, err));
    CHECK_INDEX(mb__graph_add_node(g, "MatMulInteger", "", "mmi", 3, mm_in, 1,
                                   mm_out, err));
    y_name = "yi";
    y_dtype = MB_DTYPE_INT32;
  }
  CHECK_INDEX(mb__graph_add_output(g, y_name, y_dtype, 2, y_dims, NULL, err));
  CHECK_OK(mb__graph_finalize(g, err));
  return m;
fail:
  mb_model_free(m);
  return NULL;
}

/* Quantised or not, and the description, per kind of graph; analyze's
 * stats say the same. */
TEST(detection) {
  static const struct {
    graph_kind kind;
    bool quantized;
    const char *description;
  } cases[] = {
      {GRAPH_FLOAT, false, ""},
      {GRAPH_QDQ, true,
       "QDQ: 1 QuantizeLinear, 1 DequantizeLinear; 1 int8/uint8 initializer"},
      {GRAPH_DQ_WEIGHTS, false,
       "QDQ: 1 DequantizeLinear; 1 int8/uint8 "
       "initializer"},
      {GRAPH_INTEGER, true,
       "integer: 1 MatMulInteger; dynamic: 1 DynamicQuantizeLinear; 1 "
       "int8/uint8 initializer"},
  };
  mb_error err;
  for (size_t i = 0; i < MB_ARRAY_COUNT(cases); i++) {
    mb_model *m = build(cases[i].kind, &err);
    if (!m)
      TEST_FAIL_("building graph %zu: %s", i, err.message);
    char found[256];
    bool quantized = mb__model_quantization(m, found, sizeof found);
    mb_model_stats stats;
    mb_status status = mb_model_analyze(m, NULL, &stats, &err);
    mb_model_free(m);
    ASSERT_OK(status, &err);
    int stats_quantized = stats.quantized;
    char stats_found[256];
    snprintf(stats_found, sizeof stats_found, "%s", stats.quantization);
    mb_model_stats_free(&stats);
    ASSERT_EQ(quantized, cases[i].quantized);
    ASSERT_STR_EQ(found, cases[i].description);
    ASSERT_EQ(stats_quantized, (int)cases[i].quantized);
    ASSERT_STR_EQ(stats_found, cases[i].description);
  }
  /* A cut buffer stays terminated; no buffer at all still gives the
   * verdict. */
  mb_model *m = build(GRAPH_QDQ, &err);
  if (!m)
    TEST_FAIL_("building graph: %s", err.message);
  char small[8];
  bool cut = mb__model_quantization(m, small, sizeof small);
  bool bare = mb__model_quantization(m, NULL, 0);
  mb_model_free(m);
  ASSERT(cut && bare);
  ASSERT_STR_EQ(small, "QDQ: 1 ");
  ASSERT(!mb__model_quantization(NULL, NULL, 0));
  return 0;
}

/* The criterion: cosine for reduced precisions and for anything run on a
 * quantised model; rtol/atol only for fp32 on a float model. */
TEST(criterion_selection) {
  for (int p = 0; p < MB_PRECISION_COUNT; p++) {
    mb_accuracy_criterion on_float =
        mb__accuracy_criterion((mb_precision)p, false);
    ASSERT_EQ(mb__accuracy_criterion((mb_precision)p, true),
              MB_ACCURACY_COSINE);
    ASSERT_EQ(on_float, p == MB_PRECISION_FP32 ? MB_ACCURACY_TOLERANCE
                                               : MB_ACCURACY_COSINE);
  }
  ASSERT_STR_EQ(mb_accuracy_criterion_name(MB_ACCURACY_COSINE), "cosine");
  ASSERT_STR_EQ(mb_accuracy_criterion_name(MB_ACCURACY_TOLERANCE), "rtol_atol");
  ASSERT_EQ(mb_accuracy_criterion_from_name("rtol_atol"),
            MB_ACCURACY_TOLERANCE);
  ASSERT_EQ(mb_accuracy_criterion_from_name("cos"), -1);
  return 0;
}

/* ---- reports: REFERENCE (slow, exact) and ORT_CPU (fast) ---- */

typedef struct fixture {
  mb_bench_report report;
  mb_bench_result results[2];
  mb_output_accuracy accuracy[2];
  char *warnings[1];
} fixture;

static void fixture_init(fixture *f, mb_accuracy_criterion criterion,
                         double ort_cosine) {
  static const char *const names[] = {"REFERENCE", "ORT_CPU"};
  static const double medians[] = {17.4, 0.61};
  memset(f, 0, sizeof *f);
  mb_bench_config_init(&f->report.config);
  f->report.n_results = 2;
  f->report.results = f->results;
  f->report.model_quantized = criterion == MB_ACCURACY_COSINE;
  snprintf(f->report.model_quantization, sizeof f->report.model_quantization,
           "%s",
           criterion == MB_ACCURACY_COSINE ? "QDQ: 19 QuantizeLinear" : "");
  for (int i = 0; i < 2; i++) {
    mb_bench_result *r = &f->results[i];
    r->conversion_index = -1;
    r->conversion = names[i];
    r->status = MB_BENCH_OK;
    r->latency_ms.median = medians[i];
    r->iterations = 20;
    r->peak_rss_mb = 40 - 10 * i;
    r->has_accuracy = 1;
    r->n_outputs = 1;
    r->accuracy = &f->accuracy[i];
    r->accuracy_criterion = criterion;
    f->accuracy[i] = (mb_output_accuracy){"logits", 0, 0, 1.0, -1, 0};
  }
  /* ORT_CPU rounds differently at the quantisation boundaries: most
   * values miss rtol, the direction holds (or not: ort_cosine). */
  mb_bench_result *ort = &f->results[1];
  f->accuracy[1].max_abs_err = ort->max_abs_err = 0.047;
  f->accuracy[1].max_rel_err = 0.2;
  f->accuracy[1].cosine = ort_cosine;
  f->warnings[0] = "output 'logits': 93 of 100 values differ from the "
                   "reference beyond rtol 0.001, atol 0.0001";
  ort->n_warnings = 1;
  ort->warnings = f->warnings;
}

/* Before the criterion was recorded (UNKNOWN, as in older reports) and
 * with rtol/atol, the rounding differences make ORT_CPU inaccurate and the
 * recommendation falls back to REFERENCE; under the cosine criterion
 * ORT_CPU is accurate and recommended; wrong outputs (cosine 0.2) are
 * caught under either. */
TEST(recommendation_by_criterion) {
  static const struct {
    mb_accuracy_criterion criterion;
    double cosine;
    int fastest_accurate; /* 0 REFERENCE, 1 ORT_CPU */
  } cases[] = {
      {MB_ACCURACY_UNKNOWN, 0.99995, 0}, {MB_ACCURACY_TOLERANCE, 0.99995, 0},
      {MB_ACCURACY_COSINE, 0.99995, 1},  {MB_ACCURACY_COSINE, 0.2, 0},
      {MB_ACCURACY_COSINE, 0.998, 0},
  };
  for (size_t i = 0; i < MB_ARRAY_COUNT(cases); i++) {
    fixture f;
    fixture_init(&f, cases[i].criterion, cases[i].cosine);
    mb_recommendations rec;
    mb_bench_recommend(&f.report, NULL, &rec);
    if (rec.fastest_accurate != cases[i].fastest_accurate)
      TEST_FAIL_("case %zu (%s, cosine %g): fastest accurate %d, expected "
                 "%d: %s",
                 i, mb_accuracy_criterion_name(cases[i].criterion),
                 cases[i].cosine, rec.fastest_accurate,
                 cases[i].fastest_accurate, rec.summary);
    if (rec.fastest_accurate == 1)
      ASSERT_CONTAINS(rec.summary, "pre-quantised");
  }
  return 0;
}

/* The criterion and the model's quantisation survive the JSON file. */
TEST(json_round_trip) {
  char dir[] = "/tmp/mb-test-quant-XXXXXX", path[128];
  if (!mkdtemp(dir))
    TEST_FAIL_("mkdtemp failed");
  snprintf(path, sizeof path, "%s/report.json", dir);
  fixture f;
  fixture_init(&f, MB_ACCURACY_COSINE, 0.99995);
  mb_error err;
  mb_bench_report **loaded = NULL;
  int n = 0;
  ASSERT_OK(mb_bench_report_write_json(&f.report, path, &err), &err);
  mb_status status = mb__reports_load_json(path, &loaded, &n, &err);
  unlink(path);
  rmdir(dir);
  ASSERT_OK(status, &err);
  int ok =
      n == 1 && loaded[0]->model_quantized &&
      strcmp(loaded[0]->model_quantization, "QDQ: 19 QuantizeLinear") == 0 &&
      loaded[0]->results[1].accuracy_criterion == MB_ACCURACY_COSINE &&
      mb__report_is_accurate(&loaded[0]->results[1]);
  mb__reports_free(loaded, n);
  ASSERT(ok);
  return 0;
}

TEST_MAIN(TEST_ENTRY(detection), TEST_ENTRY(criterion_selection),
          TEST_ENTRY(recommendation_by_criterion), TEST_ENTRY(json_round_trip))
