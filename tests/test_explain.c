/* modelbench explain's comparison (src/report/explain.c) on hand-made
 * profiles: each side's rows sum to its total, shares to the whole
 * difference, rows come largest contribution first, runtime-specific names
 * fold into ONNX op types, unattributed time gets its own row, and nodes a
 * hybrid conversion left to the reference are found; saved profiles are
 * read back, and malformed ones refused naming the field. */
#include "core/json_parse.h"
#include "modelbench.h"
#include "report/explain.h"
#include "test.h"

#include <unistd.h>

/* ---- hand-made profiles ---- */

typedef struct fixture {
  mb_profile profile;
  mb_profile_segment segments[8];
  mb_profile_node nodes[16];
} fixture;

static void init(fixture *f, const char *conversion, double total_ms) {
  memset(f, 0, sizeof *f);
  snprintf(f->profile.conversion, sizeof f->profile.conversion, "%s",
           conversion);
  f->profile.iterations = 10;
  f->profile.total_mean_ms = total_ms;
  f->profile.segments = f->segments;
  f->profile.nodes = f->nodes;
}

static void segment(fixture *f, const char *runtime, double ms) {
  mb_profile_segment *s = &f->segments[f->profile.n_segments++];
  snprintf(s->runtime, sizeof s->runtime, "%s", runtime);
  s->nodes = 1;
  s->runs = 10;
  s->mean_ms = ms;
  s->gflops = -1;
}

static void node(fixture *f, const char *runtime, const char *op_type,
                 const char *name, double ms) {
  mb_profile_node *n = &f->nodes[f->profile.n_nodes++];
  snprintf(n->runtime, sizeof n->runtime, "%s", runtime);
  snprintf(n->op_type, sizeof n->op_type, "%s", op_type);
  snprintf(n->name, sizeof n->name, "%s", name);
  n->runs = 10;
  n->mean_ms = ms;
}

/* A: the reference interpreter, 3.0 ms of which 2.8 ms in nodes. */
static void reference_side(fixture *f) {
  init(f, "REFERENCE", 3.0);
  segment(f, "reference", 2.9);
  node(f, "reference", "Conv", "conv1", 1.2);
  node(f, "reference", "Conv", "conv2", 0.8);
  node(f, "reference", "Relu", "relu1", 0.5);
  node(f, "reference", "LayerNormalization", "ln", 0.3);
}

/* B: oneDNN with LayerNormalization on the reference, 1.0 ms. */
static void hybrid_side(fixture *f) {
  init(f, "ONEDNN", 1.0);
  segment(f, "onednn", 0.5);
  segment(f, "reference", 0.3);
  segment(f, "onednn", 0.1);
  node(f, "onednn", "Conv", "conv1", 0.25);
  node(f, "onednn", "Conv", "conv2", 0.15);
  node(f, "onednn", "reorder", "", 0.1);
  node(f, "onednn", "Relu", "relu1", 0.05);
  node(f, "reference", "LayerNormalization", "ln", 0.3);
}

static const mb_explain_row *find_row(const mb_explain *e, const char *op) {
  for (int i = 0; i < e->n_rows; i++)
    if (strcmp(e->rows[i].op_type, op) == 0)
      return &e->rows[i];
  return NULL;
}

/* ---- the comparison ---- */

TEST(rows_sum_to_totals) {
  fixture a, b;
  mb_explain e;
  mb_error err;
  reference_side(&a);
  hybrid_side(&b);
  ASSERT_OK(mb__explain_profiles(&a.profile, &b.profile, &e, &err), &err);
  double sum[2] = {0, 0}, share = 0, diff = 0;
  for (int i = 0; i < e.n_rows; i++) {
    sum[0] += e.rows[i].ms[0];
    sum[1] += e.rows[i].ms[1];
    share += e.rows[i].share;
    diff += e.rows[i].difference_ms;
  }
  ASSERT_NEAR(sum[0], 3.0, 1e-12);
  ASSERT_NEAR(sum[1], 1.0, 1e-12);
  ASSERT_NEAR(share, 1.0, 1e-12);
  ASSERT_NEAR(diff, -2.0, 1e-12);
  ASSERT_NEAR(e.difference_ms, -2.0, 1e-12);
  ASSERT_NEAR(e.speedup, 3.0, 1e-12);
  /* The unattributed time: A 3.0 - 2.8, B 1.0 - 0.85. */
  const mb_explain_row *o = find_row(&e, "runtime overhead");
  ASSERT(o);
  ASSERT_EQ(o->kind, MB_EXPLAIN_OVERHEAD);
  ASSERT_NEAR(o->ms[0], 0.2, 1e-12);
  ASSERT_NEAR(o->ms[1], 0.15, 1e-12);
  ASSERT_NEAR(e.side[1].overhead_ms, 0.15, 1e-12);
  const mb_explain_row *conv = find_row(&e, "Conv");
  ASSERT(conv);
  ASSERT_NEAR(conv->ms[0], 2.0, 1e-12);
  ASSERT_NEAR(conv->ms[1], 0.4, 1e-12);
  ASSERT_EQ(conv->entries[0], 2);
  ASSERT_EQ(conv->entries[1], 2);
  ASSERT_NEAR(conv->share, 0.8, 1e-12);
  mb__explain_clear(&e);
  return 0;
}

TEST(rows_sorted_by_contribution) {
  fixture a, b;
  mb_explain e;
  mb_error err;
  reference_side(&a);
  hybrid_side(&b);
  ASSERT_OK(mb__explain_profiles(&a.profile, &b.profile, &e, &err), &err);
  /* Conv saves 1.6 ms, Relu 0.45, overhead 0.05, LayerNormalization 0;
   * the reorder adds 0.1 ms: its share is negative, so it comes last. */
  ASSERT_STR_EQ(e.rows[0].op_type, "Conv");
  ASSERT_STR_EQ(e.rows[1].op_type, "Relu");
  ASSERT_STR_EQ(e.rows[e.n_rows - 1].op_type, "reorder");
  for (int i = 1; i < e.n_rows; i++)
    ASSERT(e.rows[i - 1].share >= e.rows[i].share);
  ASSERT_CONTAINS(e.verdict, "ONEDNN is 3.00x faster than REFERENCE: "
                             "3.000 ms vs 1.000 ms");
  ASSERT_CONTAINS(e.verdict, "5.0x faster from Conv: 1.600 ms of the "
                             "2.000 ms saved");
  mb__explain_clear(&e);
  /* The other way round: A faster, B slower, the same rows. */
  ASSERT_OK(mb__explain_profiles(&b.profile, &a.profile, &e, &err), &err);
  ASSERT_STR_EQ(e.rows[0].op_type, "Conv");
  ASSERT_CONTAINS(e.verdict, "REFERENCE is 3.00x slower than ONEDNN");
  ASSERT_CONTAINS(e.verdict, "ms added");
  mb__explain_clear(&e);
  return 0;
}

TEST(ops_only_one_side_runs) {
  fixture a, b;
  mb_explain e;
  mb_error err;
  init(&a, "REFERENCE", 1.5);
  node(&a, "reference", "Conv", "c", 1.0);
  node(&a, "reference", "Transpose", "t", 0.3);
  node(&a, "reference", "Identity", "i", 0.2);
  init(&b, "ONEDNN", 0.5);
  node(&b, "onednn", "Conv", "c", 0.5);
  ASSERT_OK(mb__explain_profiles(&a.profile, &b.profile, &e, &err), &err);
  ASSERT_CONTAINS(e.verdict, "2.0x faster from Conv: 0.500 ms of the 1.000 "
                             "ms saved; 50% of it from 2 op types only "
                             "REFERENCE runs as nodes of their own");
  mb__explain_clear(&e);
  /* One such op type is said by the table alone. */
  a.profile.n_nodes = 2;
  a.profile.total_mean_ms = 1.3;
  ASSERT_OK(mb__explain_profiles(&a.profile, &b.profile, &e, &err), &err);
  ASSERT(!strstr(e.verdict, "op types only"));
  mb__explain_clear(&e);
  return 0;
}

TEST(equal_totals_sort_by_difference) {
  fixture a, b;
  mb_explain e;
  mb_error err;
  init(&a, "A", 1.0);
  node(&a, "reference", "Conv", "c", 0.6);
  node(&a, "reference", "Relu", "r", 0.4);
  init(&b, "B", 1.0);
  node(&b, "reference", "Conv", "c", 0.3);
  node(&b, "reference", "Relu", "r", 0.7);
  ASSERT_OK(mb__explain_profiles(&a.profile, &b.profile, &e, &err), &err);
  /* No difference to share: shares 0, the largest change first (a tie,
   * by name), overhead (no change) last. */
  for (int i = 0; i < e.n_rows; i++)
    ASSERT_EQ(e.rows[i].share, 0);
  ASSERT_STR_EQ(e.rows[0].op_type, "Conv");
  ASSERT_STR_EQ(e.rows[1].op_type, "Relu");
  ASSERT_STR_EQ(e.rows[2].op_type, "runtime overhead");
  ASSERT_CONTAINS(e.verdict, "B is 1.00x faster than A");
  mb__explain_clear(&e);
  return 0;
}

TEST(fallback_detected_only_in_hybrid) {
  fixture a, b;
  mb_explain e;
  mb_error err;
  reference_side(&a);
  hybrid_side(&b);
  ASSERT_OK(mb__explain_profiles(&a.profile, &b.profile, &e, &err), &err);
  ASSERT(!e.side[0].hybrid);
  ASSERT(e.side[1].hybrid);
  ASSERT_EQ(e.side[1].engine_segments, 2);
  ASSERT_EQ(e.side[1].reference_segments, 1);
  ASSERT_STR_EQ(e.side[1].engine, "onednn");
  ASSERT_NEAR(e.side[0].fallback_ms, 0.0, 0);
  ASSERT_NEAR(e.side[1].fallback_ms, 0.3, 1e-12);
  const mb_explain_row *ln = find_row(&e, "LayerNormalization");
  ASSERT(ln);
  /* All of A runs on the reference: no fallback there. */
  ASSERT_NEAR(ln->fallback_ms[0], 0.0, 0);
  ASSERT_NEAR(ln->fallback_ms[1], 0.3, 1e-12);
  ASSERT_CONTAINS(e.verdict, "LayerNormalization fell back to the reference "
                             "in ONEDNN: 30% of its time");
  const mb_explain_row *reorder = find_row(&e, "reorder");
  ASSERT(reorder);
  ASSERT_EQ(reorder->kind, MB_EXPLAIN_INSERTED);
  ASSERT_NEAR(e.side[1].inserted_ms, 0.1, 1e-12);
  /* The text names the fallback with its share of B's time. */
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  ASSERT(f);
  mb__explain_print(&e, "m.onnx", 2, f);
  fclose(f);
  ASSERT_CONTAINS(text, "ONEDNN: LayerNormalization fell back to the "
                        "reference: 0.300 ms, 30.0% of ONEDNN's time");
  ASSERT_CONTAINS(text, "ONEDNN: reorder steps: 0.100 ms");
  ASSERT_CONTAINS(text, "ONEDNN: 2 segment boundaries (2 onednn, 1 "
                        "reference)");
  ASSERT_CONTAINS(text, "REFERENCE: none");
  free(text);
  mb__explain_clear(&e);
  return 0;
}

TEST(runtime_names_fold_into_onnx_ops) {
  fixture a, b;
  mb_explain e;
  mb_error err;
  init(&a, "ORT_CPU", 2.0);
  segment(&a, "onnxruntime", 1.9);
  node(&a, "onnxruntime", "FusedConv", "conv1", 1.0);
  node(&a, "onnxruntime", "Conv", "conv2", 0.5);
  node(&a, "onnxruntime", "?", "mystery", 0.1);
  init(&b, "ORT_INT8", 1.0);
  segment(&b, "onnxruntime", 0.9);
  node(&b, "onnxruntime", "QLinearConv", "conv1", 0.4);
  node(&b, "onnxruntime", "FusedConv", "conv2", 0.2);
  node(&b, "onnxruntime", "DequantizeLinear", "dq", 0.1);
  node(&b, "onnxruntime", "QuantizeLinear", "q", 0.05);
  ASSERT_OK(mb__explain_profiles(&a.profile, &b.profile, &e, &err), &err);
  const mb_explain_row *conv = find_row(&e, "Conv");
  ASSERT(conv);
  ASSERT_EQ(conv->kind, MB_EXPLAIN_OP);
  ASSERT_NEAR(conv->ms[0], 1.5, 1e-12);
  ASSERT_NEAR(conv->ms[1], 0.6, 1e-12);
  /* Each name once, in first-seen order. */
  ASSERT_STR_EQ(conv->variants, "FusedConv, QLinearConv");
  ASSERT(!find_row(&e, "FusedConv"));
  ASSERT(!find_row(&e, "QLinearConv"));
  const mb_explain_row *dq = find_row(&e, "dequantize");
  const mb_explain_row *q = find_row(&e, "quantize");
  ASSERT(dq && q);
  ASSERT_EQ(dq->kind, MB_EXPLAIN_INSERTED);
  ASSERT_NEAR(e.side[1].inserted_ms, 0.15, 1e-12);
  ASSERT(find_row(&e, "(unknown op)"));
  /* ORT's own nodes are not a fallback. */
  ASSERT_NEAR(e.side[0].fallback_ms + e.side[1].fallback_ms, 0.0, 0);
  mb__explain_clear(&e);
  return 0;
}

TEST(unsplit_engine_segments_get_a_row) {
  fixture a, b;
  mb_explain e;
  mb_error err;
  reference_side(&a);
  /* XNNPACK times its segments as a whole. */
  init(&b, "XNNPACK", 1.5);
  segment(&b, "xnnpack", 1.0);
  segment(&b, "reference", 0.3);
  node(&b, "reference", "LayerNormalization", "ln", 0.3);
  ASSERT_OK(mb__explain_profiles(&a.profile, &b.profile, &e, &err), &err);
  const mb_explain_row *seg = find_row(&e, "xnnpack segments");
  ASSERT(seg);
  ASSERT_EQ(seg->kind, MB_EXPLAIN_SEGMENT);
  ASSERT_NEAR(seg->ms[0], 0.0, 0);
  ASSERT_NEAR(seg->ms[1], 1.0, 1e-12);
  /* The reference segment's nodes are known: no "reference segments". */
  ASSERT(!find_row(&e, "reference segments"));
  ASSERT_NEAR(find_row(&e, "runtime overhead")->ms[1], 0.2, 1e-12);
  double sum = 0;
  for (int i = 0; i < e.n_rows; i++)
    sum += e.rows[i].ms[1];
  ASSERT_NEAR(sum, 1.5, 1e-12);
  /* No per-op ratio where an engine's segments hide its ops. */
  ASSERT_CONTAINS(e.verdict, "most from Conv (only in A): 2.000 ms of the "
                             "1.500 ms saved (XNNPACK's xnnpack segments, "
                             "1.000 ms, are not split by op type)");
  mb__explain_clear(&e);
  return 0;
}

TEST(nodes_matched_by_name) {
  fixture a, b;
  mb_explain e;
  mb_error err;
  reference_side(&a);
  hybrid_side(&b);
  ASSERT_OK(mb__explain_profiles(&a.profile, &b.profile, &e, &err), &err);
  /* conv1 -0.95, conv2 -0.65, relu1 -0.45, ln 0; the unnamed reorder is
   * not a node. */
  ASSERT_EQ(e.n_nodes, 4);
  ASSERT_STR_EQ(e.nodes[0].name, "conv1");
  ASSERT_NEAR(e.nodes[0].ms[0], 1.2, 1e-12);
  ASSERT_NEAR(e.nodes[0].ms[1], 0.25, 1e-12);
  ASSERT_NEAR(e.nodes[0].difference_ms, -0.95, 1e-12);
  ASSERT_STR_EQ(e.nodes[1].name, "conv2");
  ASSERT_STR_EQ(e.nodes[2].name, "relu1");
  ASSERT_STR_EQ(e.nodes[3].name, "ln");
  ASSERT_STR_EQ(e.nodes[3].op_type, "LayerNormalization");
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  ASSERT(f);
  mb__explain_print(&e, NULL, 2, f);
  fclose(f);
  ASSERT_CONTAINS(text, "Nodes that differ most (2 of 4, matched by name)");
  ASSERT_CONTAINS(text, "conv2");
  ASSERT(!strstr(text, "relu1 "));
  free(text);
  mb__explain_clear(&e);
  return 0;
}

TEST(non_positive_total_is_an_error) {
  fixture a, b;
  mb_explain e;
  mb_error err;
  reference_side(&a);
  hybrid_side(&b);
  b.profile.total_mean_ms = 0;
  ASSERT_EQ(mb__explain_profiles(&a.profile, &b.profile, &e, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "profile B (ONEDNN)");
  ASSERT(!e.rows);
  return 0;
}

/* ---- JSON ---- */

static char tmp_path[64];

static int write_file(const char *text) {
  snprintf(tmp_path, sizeof tmp_path, "/tmp/mb-test-explain-XXXXXX");
  int fd = mkstemp(tmp_path);
  if (fd < 0)
    return -1;
  FILE *f = fdopen(fd, "w");
  fputs(text, f);
  fclose(f);
  return 0;
}

TEST(explain_json_parses_and_sums) {
  fixture a, b;
  mb_explain e;
  mb_error err;
  mb_json_doc *doc = NULL;
  reference_side(&a);
  hybrid_side(&b);
  ASSERT_OK(mb__explain_profiles(&a.profile, &b.profile, &e, &err), &err);
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  ASSERT(f);
  mb_json j;
  mb__json_init(&j, f, true);
  mb__explain_write_json(&e, "m.onnx", &j);
  fclose(f);
  mb__explain_clear(&e);
  ASSERT_OK(mb__json_parse(text, size, "explain", &doc, &err), &err);
  free(text);
  const mb_json_value *root = &doc->root;
  ASSERT_STR_EQ(mb__json_find(root, "model")->string, "m.onnx");
  ASSERT_CONTAINS(mb__json_find(root, "verdict")->string, "3.00x faster");
  ASSERT_STR_EQ(mb__json_find(mb__json_find(root, "b"), "conversion")->string,
                "ONEDNN");
  ASSERT(mb__json_find(mb__json_find(root, "b"), "hybrid")->boolean);
  const mb_json_value *rows = mb__json_find(root, "rows");
  ASSERT(rows && rows->type == MB_JSON_ARRAY && rows->count >= 5);
  double b_sum = 0, share = 0;
  for (size_t i = 0; i < rows->count; i++) {
    b_sum += mb__json_find(&rows->items[i], "b_ms")->number;
    share += mb__json_find(&rows->items[i], "share")->number;
  }
  ASSERT_NEAR(b_sum, 1.0, 1e-9);
  ASSERT_NEAR(share, 1.0, 1e-9);
  ASSERT_STR_EQ(mb__json_find(&rows->items[0], "op_type")->string, "Conv");
  ASSERT_STR_EQ(mb__json_find(&rows->items[0], "kind")->string, "op");
  const mb_json_value *fb = mb__json_find(root, "fallbacks");
  ASSERT(fb && fb->count == 1);
  ASSERT_STR_EQ(mb__json_find(&fb->items[0], "side")->string, "b");
  ASSERT_STR_EQ(mb__json_find(&fb->items[0], "op_type")->string,
                "LayerNormalization");
  ASSERT_NEAR(mb__json_find(&fb->items[0], "share_of_total")->number, 0.3,
              1e-9);
  const mb_json_value *nodes = mb__json_find(root, "nodes");
  ASSERT(nodes && nodes->count == 4);
  ASSERT_STR_EQ(mb__json_find(&nodes->items[0], "name")->string, "conv1");
  ASSERT_NEAR(mb__json_find(&nodes->items[0], "difference_ms")->number, -0.95,
              1e-9);
  mb__json_doc_free(doc);
  return 0;
}

TEST(saved_profile_read_back) {
  mb_profile *p = NULL;
  mb_error err;
  char model[64];
  ASSERT_EQ(write_file("{\"model\": \"m.onnx\", \"conversion\": \"ONEDNN\","
                       " \"iterations\": 5, \"mean_ms\": 1.5,"
                       " \"segments\": [{\"runtime\": \"onednn\", \"nodes\": "
                       "3, \"first_node\": \"conv1 (Conv)\", \"runs\": 5, "
                       "\"mean_ms\": 1.2, \"share\": 1}],"
                       " \"nodes\": [{\"runtime\": \"onednn\", \"op_type\": "
                       "\"reorder\", \"name\": \"\", \"kernel\": \"\", "
                       "\"runs\": 5, \"mean_ms\": 0.25, \"share\": 1}],"
                       " \"note\": null}"),
            0);
  mb_status st = mb__profile_load_json(tmp_path, &p, model, sizeof model, &err);
  unlink(tmp_path);
  ASSERT_OK(st, &err);
  ASSERT_STR_EQ(model, "m.onnx");
  ASSERT_STR_EQ(p->conversion, "ONEDNN");
  ASSERT_EQ(p->iterations, 5);
  ASSERT_NEAR(p->total_mean_ms, 1.5, 0);
  ASSERT_EQ(p->n_segments, 1);
  ASSERT_STR_EQ(p->segments[0].first_node, "conv1 (Conv)");
  ASSERT_EQ(p->n_nodes, 1);
  ASSERT_STR_EQ(p->nodes[0].op_type, "reorder");
  ASSERT_NEAR(p->nodes[0].mean_ms, 0.25, 0);
  mb_profile_free(p);
  return 0;
}

TEST(malformed_saved_profile_names_the_field) {
  static const struct {
    const char *text, *needle;
  } cases[] = {
      {"[1, 2]", "a profile is a JSON object"},
      {"{\"conversion\": \"A\", \"iterations\": 1, \"segments\": [], "
       "\"nodes\": []}",
       "missing \"mean_ms\""},
      {"{\"conversion\": \"A\", \"iterations\": 1, \"mean_ms\": \"fast\", "
       "\"segments\": [], \"nodes\": []}",
       "\"mean_ms\": expected number, got string"},
      {"{\"conversion\": \"A\", \"iterations\": 1, \"mean_ms\": 0, "
       "\"segments\": [], \"nodes\": []}",
       "is not a positive time"},
      {"{\"conversion\": \"A\", \"iterations\": 1, \"mean_ms\": 1, "
       "\"segments\": [], \"nodes\": [{\"runtime\": \"x\"}]}",
       "missing \"op_type\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mb_profile *p = NULL;
    mb_error err;
    ASSERT_EQ(write_file(cases[i].text), 0);
    mb_status st = mb__profile_load_json(tmp_path, &p, NULL, 0, &err);
    unlink(tmp_path);
    ASSERT_NE(st, MB_STATUS_OK);
    ASSERT(!p);
    ASSERT_CONTAINS(err.message, cases[i].needle);
    ASSERT_CONTAINS(err.message, tmp_path);
  }
  return 0;
}

TEST_MAIN(TEST_ENTRY(rows_sum_to_totals),
          TEST_ENTRY(rows_sorted_by_contribution),
          TEST_ENTRY(ops_only_one_side_runs),
          TEST_ENTRY(equal_totals_sort_by_difference),
          TEST_ENTRY(fallback_detected_only_in_hybrid),
          TEST_ENTRY(runtime_names_fold_into_onnx_ops),
          TEST_ENTRY(unsplit_engine_segments_get_a_row),
          TEST_ENTRY(nodes_matched_by_name),
          TEST_ENTRY(non_positive_total_is_an_error),
          TEST_ENTRY(explain_json_parses_and_sums),
          TEST_ENTRY(saved_profile_read_back),
          TEST_ENTRY(malformed_saved_profile_names_the_field))
