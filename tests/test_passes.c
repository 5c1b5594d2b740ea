/* Graph passes (src/passes/): each pass on small built graphs with exact
 * structural expectations, then the "never changes results beyond float
 * rounding" check on the bundled models and, when exported, the PyTorch
 * models ($MB_TORCH_MODELS or /tmp/torch_models/NAME/model.onnx): the
 * reference interpreter before and after `optimize` (max abs err <= 1e-4),
 * and `to_fp16` on ONNX Runtime against float32 (cosine >= 0.999). Every
 * rewritten model is written with the ONNX writer and loaded by ONNX Runtime
 * from bytes and, when /usr/bin/python3 has onnx, checked by
 * onnx.checker. */
#include "passes/edit.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "test.h"

#include <sys/stat.h>
#include <unistd.h>

#define OPT_ATOL 1e-4
#define FP16_COSINE 0.999
#define MAX_IO 8

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

static mb_model *new_model(int opset) {
  mb_model *m = mb__model_create();
  if (m && mb__model_set_opset(m, "", opset, NULL)) {
    mb_model_free(m);
    return NULL;
  }
  if (m)
    m->graph->name = "test";
  return m;
}

static int add_f32(mb_graph *g, const char *name, int rank, const int64_t *dims,
                   const float *values) {
  mb_tensor *t = NULL;
  if (mb_tensor_create(MB_DTYPE_FLOAT, rank, dims, &t, NULL))
    return -1;
  if (values)
    memcpy(t->data, values, t->nbytes);
  else
    for (int64_t i = 0; i < t->numel; i++)
      ((float *)t->data)[i] = (float)((i * 37 % 17) - 8) / 8.0f;
  return mb__graph_add_initializer(g, name, t, NULL);
}

static int add_i64(mb_graph *g, const char *name, int n,
                   const int64_t *values) {
  mb_tensor *t = NULL;
  int64_t dims[1] = {n};
  if (mb_tensor_create(MB_DTYPE_INT64, 1, dims, &t, NULL))
    return -1;
  memcpy(t->data, values, t->nbytes);
  return mb__graph_add_initializer(g, name, t, NULL);
}

/* Adds a node; NULL-terminated-free fixed arrays via compound literals. */
#define NODE(g, op, name, ins, outs)                                           \
  mb__graph_add_node((g), (op), "", (name),                                    \
                     (int)(sizeof(ins) / sizeof((ins)[0])), (ins),             \
                     (int)(sizeof(outs) / sizeof((outs)[0])), (outs), NULL)
#define IN(...) ((const char *[]){__VA_ARGS__})
#define OUT(...) ((const char *[]){__VA_ARGS__})

static int find_op(const mb_graph *g, const char *op, int nth) {
  for (int i = 0; i < g->n_nodes; i++)
    if (strcmp(g->nodes[i].op_type, op) == 0 && nth-- == 0)
      return i;
  return -1;
}

static const char *input_name(const mb_graph *g, int node, int slot) {
  int v = g->nodes[node].inputs[slot];
  return v >= 0 ? g->values[v].name : "";
}

static const char *output_name(const mb_graph *g, int node, int slot) {
  int v = g->nodes[node].outputs[slot];
  return v >= 0 ? g->values[v].name : "";
}

static const mb_tensor *init_of(const mb_graph *g, const char *name) {
  int v = mb__graph_find_value(g, name);
  return v >= 0 ? g->values[v].initializer : NULL;
}

static int64_t initializer_count(const mb_graph *g) {
  int64_t n = 0;
  for (int v = 0; v < g->n_values; v++)
    n += g->values[v].initializer != NULL;
  return n;
}

static void free_tensors(mb_tensor **t, int n) {
  for (int i = 0; i < n; i++) {
    mb_tensor_free(t[i]);
    t[i] = NULL;
  }
}

/* Inputs for a model: declared dims, batch for a dynamic first dim and
 * `seq` for any other dynamic dim. shapes_out: MAX_IO entries. */
static int make_inputs(const mb_model *m, int64_t batch, int64_t seq,
                       uint64_t seed, mb_input_shape *shapes_out,
                       mb_tensor **inputs_out) {
  mb_error err = {0};
  int n = mb_model_input_count(m);
  ASSERT(n <= MAX_IO);
  for (int i = 0; i < n; i++) {
    mb_value_info info;
    ASSERT_OK(mb_model_input_info(m, i, &info, &err), &err);
    ASSERT(info.rank >= 0);
    shapes_out[i].name = info.name;
    shapes_out[i].rank = info.rank;
    for (int d = 0; d < info.rank; d++)
      shapes_out[i].dims[d] = info.dims[d] >= 0 ? info.dims[d]
                              : d == 0          ? batch
                                                : seq;
  }
  mb_shape_spec spec = {.n_shapes = n, .shapes = shapes_out};
  ASSERT_OK(mb_inputs_generate(m, &spec, seed, 0, NULL, inputs_out, &err),
            &err);
  return 0;
}

/* Runs the model on the reference interpreter. outputs: MAX_IO slots. */
static int run_reference(const mb_model *m, mb_tensor **inputs,
                         mb_tensor **outputs) {
  mb_error err = {0};
  mb_session *s = NULL;
  ASSERT_OK(mb_session_create(m, NULL, &s, &err), &err);
  mb_status status = mb_session_run(s, mb_model_input_count(m),
                                    (const mb_tensor *const *)inputs,
                                    mb_model_output_count(m), outputs, &err);
  mb_session_free(s);
  if (status)
    TEST_FAIL_("reference run: %s", err.message);
  return 0;
}

/* 1: ORT usable, 0: not here (tests skip those checks). */
static int ort_available(void) {
  static int state = -1;
  if (state < 0) {
    const mb_runtime *rt = mb__runtime_find("onnxruntime");
    mb_runtime_info info = {0};
    if (rt)
      rt->probe(&info);
    state = info.available;
    if (!state)
      fprintf(stderr,
              "  note: ONNX Runtime unavailable (%s): ORT checks "
              "skipped\n",
              info.reason);
  }
  return state;
}

/* Serialises the model and runs it on ONNX Runtime from the bytes, with
 * graph optimisations at `level`. */
static int run_ort_at(const mb_model *m, mb_graph_opt_level level,
                      mb_tensor **inputs, mb_tensor **outputs) {
  const mb_runtime *rt = mb__runtime_find("onnxruntime");
  mb_error err = {0};
  void *bytes = NULL, *session = NULL;
  size_t size = 0;
  ASSERT(rt);
  ASSERT_OK(mb__model_serialize(m, &bytes, &size, &err), &err);
  mb_runtime_options options = {.threads = 1, .opt_level = level};
  mb_status status = rt->prepare(m, bytes, size, &options, &session, &err);
  if (!status)
    status = rt->run(session, (const mb_tensor *const *)inputs, &err);
  if (!status)
    status = rt->fetch_outputs(session, outputs, &err);
  if (session)
    rt->release(session);
  free(bytes);
  if (status)
    TEST_FAIL_("onnxruntime (optimisation level %d): %s", (int)level,
               err.message);
  return 0;
}

/* Our graph as written: ORT's own rewrites off. */
static int run_ort(const mb_model *m, mb_tensor **inputs, mb_tensor **outputs) {
  return run_ort_at(m, MB_GRAPH_OPT_DISABLED, inputs, outputs);
}

/* onnx.checker on the written model; skipped without python3 + onnx. */
static int onnx_check(const mb_model *m, const char *label) {
  static int have_onnx = -1;
  if (have_onnx < 0)
    have_onnx = system("/usr/bin/python3 -c 'import onnx' 2>/dev/null") == 0;
  if (!have_onnx)
    return 0;
  char dir[] = "/tmp/mb-test-passes-XXXXXX", path[128], cmd[512];
  mb_error err = {0};
  ASSERT(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  ASSERT_OK(mb_model_save(m, path, NULL, &err), &err);
  snprintf(cmd, sizeof cmd,
           "/usr/bin/python3 -c 'import onnx, sys; "
           "onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)'"
           " %s",
           path);
  int rc = system(cmd);
  unlink(path);
  rmdir(dir);
  if (rc != 0)
    TEST_FAIL_("onnx.checker rejects the %s model", label);
  return 0;
}

/* max abs err of actual vs expected over n outputs; fails on shape
 * mismatch. */
static int compare(mb_tensor **actual, mb_tensor **expected, int n,
                   double *max_abs, double *min_cosine) {
  mb_error err = {0};
  for (int i = 0; i < n; i++) {
    mb_compare_result r;
    ASSERT_OK(mb_tensor_compare(actual[i], expected[i], 0, 0, &r, &err), &err);
    ASSERT(r.shape_match);
    if (r.max_abs_err > *max_abs)
      *max_abs = r.max_abs_err;
    if (r.cosine < *min_cosine)
      *min_cosine = r.cosine;
  }
  return 0;
}

/* Runs steps on a copy; *out receives it. */
static int convert(const mb_model *m, const char *steps,
                   const mb_pass_options *opt, mb_model **out,
                   mb_pass_stats *stats) {
  mb_error err = {0};
  ASSERT_OK(mb__convert_model(m, steps, opt, out, stats, &err), &err);
  return 0;
}

static const mb_pass_record *record_of(const mb_pass_stats *s,
                                       const char *name) {
  for (int i = 0; i < s->n_passes; i++)
    if (strcmp(s->passes[i].name, name) == 0)
      return &s->passes[i];
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* The registry and driver                                                   */
/* ------------------------------------------------------------------------ */

TEST(registry_lists_every_pass) {
  static const char *const names[] = {"constant_to_initializer",
                                      "fold_constants",
                                      "simplify_shapes",
                                      "remove_identity",
                                      "eliminate_dead",
                                      "fold_batchnorm",
                                      "to_fp16"};
  ASSERT(mb__pass_count() >= (int)(sizeof names / sizeof names[0]));
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const mb_pass *p = mb__pass_find(names[i]);
    ASSERT(p);
    ASSERT_STR_EQ(p->name, names[i]);
    ASSERT(p->summary && p->summary[0]);
  }
  ASSERT(mb__pass_find("optimize") == NULL); /* an alias, not a pass */
  ASSERT(mb__pass_find("nope") == NULL);
  ASSERT(mb__pass_at(-1) == NULL);
  ASSERT(mb__pass_at(mb__pass_count()) == NULL);
  return 0;
}

TEST(unknown_pass_fails_before_anything_runs) {
  mb_model *m = new_model(17);
  mb_graph *g = m->graph;
  int64_t dims[1] = {2};
  mb_error err = {0};
  ASSERT(mb__graph_add_input(g, "x", MB_DTYPE_FLOAT, 1, dims, NULL, NULL) >= 0);
  ASSERT(NODE(g, "Identity", "id", IN("x"), OUT("y")) >= 0);
  ASSERT(mb__graph_add_output(g, "z", MB_DTYPE_FLOAT, 1, dims, NULL, NULL) >=
         0);
  ASSERT(NODE(g, "Relu", "r", IN("y"), OUT("z")) >= 0);
  ASSERT_OK(mb__graph_finalize(g, &err), &err);
  mb_pass_stats stats = {0};
  mb_status status =
      mb__passes_run(m, "remove_identity, fold_everything", NULL, &stats, &err);
  ASSERT_EQ(status, MB_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(err.message, "fold_everything");
  ASSERT_CONTAINS(err.message, "remove_identity");
  ASSERT_EQ(stats.n_passes, 0);
  ASSERT_EQ(g->n_nodes, 2); /* nothing ran */
  /* A bad block list is an error of to_fp16, not a crash. */
  mb_pass_options opt = {.fp16_block = "+Soft-max"};
  memset(&err, 0, sizeof err);
  status = mb__passes_run(m, "to_fp16", &opt, NULL, &err);
  ASSERT_EQ(status, MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "to_fp16");
  mb_model_free(m);
  return 0;
}

/* The clone is exact: it serialises to the same bytes as the original, and
 * rewriting it leaves the original alone. */
TEST(clone_is_deep_and_exact) {
  const char *dir = getenv("MB_TEST_MODELS");
  if (!dir || !*dir)
    TEST_FAIL_("MB_TEST_MODELS is not set (ctest sets it)");
  char path[4096];
  snprintf(path, sizeof path, "%s/transformer_block.onnx", dir);
  mb_error err = {0};
  mb_model *m = NULL, *copy = NULL;
  void *a = NULL, *b = NULL;
  size_t na = 0, nb = 0;
  ASSERT_OK(mb_model_load(path, &m, &err), &err);
  ASSERT_OK(mb__model_clone(m, &copy, &err), &err);
  ASSERT_OK(mb__model_serialize(m, &a, &na, &err), &err);
  ASSERT_OK(mb__model_serialize(copy, &b, &nb, &err), &err);
  ASSERT_EQ(na, nb);
  ASSERT(memcmp(a, b, na) == 0);
  ASSERT_STR_EQ(mb_model_sha256(copy), mb_model_sha256(m));
  int nodes = m->graph->n_nodes;
  ASSERT_OK(mb__passes_run(copy, "to_fp16", NULL, NULL, &err), &err);
  ASSERT(copy->graph->n_nodes > nodes);
  ASSERT_EQ(m->graph->n_nodes, nodes);
  free(a);
  free(b);
  mb_model_free(copy);
  mb_model_free(m);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Each pass on small graphs                                                 */
/* ------------------------------------------------------------------------ */

TEST(constant_to_initializer_converts_every_form) {
  mb_model *m = new_model(17);
  mb_graph *g = m->graph;
  mb_error err = {0};
  int64_t dims[1] = {3};
  ASSERT(mb__graph_add_input(g, "x", MB_DTYPE_FLOAT, 1, dims, NULL, NULL) >= 0);
  int c1 = NODE(g, "Constant", "c1", IN(NULL), OUT("floats"));
  g->nodes[c1].n_inputs = 0;
  static const float fv[3] = {1, 2, 3};
  ASSERT_OK(mb__node_set_floats(g, c1, "value_floats", 3, fv, &err), &err);
  int c2 = NODE(g, "Constant", "c2", IN(NULL), OUT("scalar"));
  g->nodes[c2].n_inputs = 0;
  ASSERT_OK(mb__node_set_float(g, c2, "value_float", 0.5f, &err), &err);
  int c3 = NODE(g, "Constant", "c3", IN(NULL), OUT("tensor"));
  g->nodes[c3].n_inputs = 0;
  mb_tensor *t = NULL;
  ASSERT_OK(mb_tensor_create(MB_DTYPE_FLOAT, 1, dims, &t, &err), &err);
  ((float *)t->data)[2] = 7;
  ASSERT_OK(mb__node_set_tensor(g, c3, "value", t, &err), &err);
  /* A Constant that is a graph output stays a node. */
  int c4 = NODE(g, "Constant", "c4", IN(NULL), OUT("const_out"));
  g->nodes[c4].n_inputs = 0;
  ASSERT_OK(mb__node_set_int(g, c4, "value_int", 4, &err), &err);
  ASSERT(NODE(g, "Add", "a1", IN("x", "floats"), OUT("s1")) >= 0);
  ASSERT(NODE(g, "Mul", "m1", IN("s1", "scalar"), OUT("s2")) >= 0);
  ASSERT(NODE(g, "Add", "a2", IN("s2", "tensor"), OUT("y")) >= 0);
  ASSERT(mb__graph_add_output(g, "y", MB_DTYPE_FLOAT, 1, dims, NULL, NULL) >=
         0);
  ASSERT(mb__graph_add_output(g, "const_out", MB_DTYPE_INT64, 0, NULL, NULL,
                              NULL) >= 0);
  ASSERT_OK(mb__graph_finalize(g, &err), &err);

  mb_pass_stats stats = {0};
  ASSERT_OK(mb__passes_run(m, "constant_to_initializer", NULL, &stats, &err),
            &err);
  ASSERT_EQ(stats.n_passes, 1);
  ASSERT_EQ(stats.passes[0].changed, 3);
  ASSERT_EQ(stats.nodes_before, 7);
  ASSERT_EQ(stats.nodes_after, 4);
  ASSERT_EQ(mb__edit_count_op(g, "Constant"), 1);
  const mb_tensor *floats = init_of(g, "floats");
  ASSERT(floats && floats->dtype == MB_DTYPE_FLOAT && floats->rank == 1);
  ASSERT_EQ(((const float *)floats->data)[2], 3);
  const mb_tensor *scalar = init_of(g, "scalar");
  ASSERT(scalar && scalar->rank == 0);
  ASSERT_NEAR(((const float *)scalar->data)[0], 0.5, 0);
  ASSERT_EQ(((const float *)init_of(g, "tensor")->data)[2], 7);
  ASSERT_OK(onnx_check(m, "constant_to_initializer"), NULL);
  mb_model_free(m);
  return 0;
}

TEST(fold_constants_folds_chains_and_respects_limits) {
  mb_model *m = new_model(17);
  mb_graph *g = m->graph;
  mb_error err = {0};
  int64_t d2[1] = {2};
  static const float a[2] = {1, 2}, b[2] = {10, 20};
  ASSERT(mb__graph_add_input(g, "x", MB_DTYPE_FLOAT, 1, d2, NULL, NULL) >= 0);
  ASSERT(add_f32(g, "a", 1, d2, a) >= 0);
  ASSERT(add_f32(g, "b", 1, d2, b) >= 0);
  static const int64_t big_shape[2] = {1024, 1024};
  ASSERT(add_i64(g, "big_shape", 2, big_shape) >= 0);
  /* (a + b) * 2 is constant; x * that is not. */
  ASSERT(NODE(g, "Add", "ab", IN("a", "b"), OUT("sum")) >= 0);
  int two = NODE(g, "Constant", "two", IN(NULL), OUT("two"));
  g->nodes[two].n_inputs = 0;
  ASSERT_OK(mb__node_set_float(g, two, "value_float", 2.0f, &err), &err);
  ASSERT(NODE(g, "Mul", "sum2", IN("sum", "two"), OUT("scaled")) >= 0);
  ASSERT(NODE(g, "Mul", "xs", IN("x", "scaled"), OUT("y")) >= 0);
  /* A 4 MiB ConstantOfShape from 16 bytes: above the cap. */
  ASSERT(NODE(g, "ConstantOfShape", "big", IN("big_shape"), OUT("big")) >= 0);
  ASSERT(NODE(g, "ReduceSum", "bigsum", IN("big"), OUT("bigsum")) >= 0);
  /* Random: never folded. */
  int rnd = NODE(g, "RandomNormal", "rnd", IN(NULL), OUT("noise"));
  g->nodes[rnd].n_inputs = 0;
  static const int64_t shape2[1] = {2};
  ASSERT_OK(mb__node_set_ints(g, rnd, "shape", 1, shape2, &err), &err);
  ASSERT(NODE(g, "Add", "noisy", IN("y", "noise"), OUT("z")) >= 0);
  ASSERT(mb__graph_add_output(g, "z", MB_DTYPE_FLOAT, 1, d2, NULL, NULL) >= 0);
  static const int64_t one_one[2] = {1, 1};
  ASSERT(mb__graph_add_output(g, "bigsum", MB_DTYPE_FLOAT, 2, one_one, NULL,
                              NULL) >= 0);
  ASSERT_OK(mb__graph_finalize(g, &err), &err);
  ASSERT_EQ(g->n_nodes, 8);

  mb_model *folded = NULL;
  mb_pass_stats stats = {0};
  ASSERT_OK(convert(m, "fold_constants", NULL, &folded, &stats), NULL);
  mb_graph *f = folded->graph;
  /* ab, two, sum2 folded; ConstantOfShape too large; RandomNormal kept;
   * ReduceSum writes a graph output and reads a non-constant. */
  ASSERT_EQ(stats.passes[0].changed, 3);
  ASSERT_EQ(f->n_nodes, 5);
  ASSERT_CONTAINS(stats.passes[0].detail, "1 too large");
  const mb_tensor *scaled = init_of(f, "scaled");
  ASSERT(scaled && scaled->dtype == MB_DTYPE_FLOAT);
  ASSERT_EQ(((const float *)scaled->data)[0], 22);
  ASSERT_EQ(((const float *)scaled->data)[1], 44);
  ASSERT(find_op(f, "RandomNormal", 0) >= 0);
  ASSERT(find_op(f, "ConstantOfShape", 0) >= 0);
  /* The original is untouched. */
  ASSERT_EQ(g->n_nodes, 8);
  mb_model_free(folded);

  /* A larger cap folds the ConstantOfShape too (ReduceSum writes a graph
   * output, so it stays). */
  mb_pass_options opt = {.fold_limit_bytes = (size_t)8 << 20};
  ASSERT_OK(convert(m, "fold_constants,eliminate_dead", &opt, &folded, NULL),
            NULL);
  ASSERT_EQ(find_op(folded->graph, "ConstantOfShape", 0), -1);
  ASSERT(find_op(folded->graph, "ReduceSum", 0) >= 0);
  ASSERT(init_of(folded->graph, "big") != NULL);
  ASSERT(init_of(folded->graph, "a") == NULL); /* dead after folding */
  ASSERT_OK(onnx_check(folded, "fold_constants"), NULL);
  mb_model_free(folded);
  mb_model_free(m);
  return 0;
}

/* Dropout told to train with a constant ratio of 0 drops nothing: it goes
 * (exporters write it so for attention dropout); with a ratio above 0 in
 * training mode it stays. */
TEST(remove_identity_drops_zero_ratio_dropout_in_training_mode) {
  mb_model *m = new_model(17);
  mb_graph *g = m->graph;
  mb_error err = {0};
  int64_t dims[1] = {4};
  float zero = 0.0f, half = 0.5f;
  mb_tensor *train = NULL;
  ASSERT(mb__graph_add_input(g, "x", MB_DTYPE_FLOAT, 1, dims, NULL, NULL) >= 0);
  ASSERT(add_f32(g, "ratio0", 0, NULL, &zero) >= 0);
  ASSERT(add_f32(g, "ratio_half", 0, NULL, &half) >= 0);
  ASSERT_OK(mb_tensor_create(MB_DTYPE_BOOL, 0, NULL, &train, &err), &err);
  *(uint8_t *)train->data = 1;
  ASSERT(mb__graph_add_initializer(g, "training", train, NULL) >= 0);
  ASSERT(NODE(g, "Dropout", "drop0", IN("x", "ratio0", "training"),
              OUT("d0")) >= 0);
  ASSERT(NODE(g, "Relu", "relu", IN("d0"), OUT("y")) >= 0);
  ASSERT(NODE(g, "Dropout", "drop_half", IN("y", "ratio_half", "training"),
              OUT("z")) >= 0);
  ASSERT(mb__graph_add_output(g, "z", MB_DTYPE_FLOAT, 1, dims, NULL, NULL) >=
         0);
  ASSERT_OK(mb__graph_finalize(g, &err), &err);
  mb_pass_stats stats = {0};
  ASSERT_OK(mb__passes_run(m, "remove_identity", NULL, &stats, &err), &err);
  ASSERT_EQ(stats.passes[0].changed, 1);
  ASSERT_EQ(mb__edit_count_op(g, "Dropout"), 1);
  ASSERT_STR_EQ(input_name(g, find_op(g, "Relu", 0), 0), "x");
  ASSERT_STR_EQ(g->nodes[find_op(g, "Dropout", 0)].name, "drop_half");
  ASSERT_OK(onnx_check(m, "remove_identity"), NULL);
  mb_model_free(m);
  return 0;
}

TEST(remove_identity_keeps_output_names) {
  mb_model *m = new_model(17);
  mb_graph *g = m->graph;
  mb_error err = {0};
  int64_t dims[1] = {4};
  ASSERT(mb__graph_add_input(g, "x", MB_DTYPE_FLOAT, 1, dims, NULL, NULL) >= 0);
  ASSERT(NODE(g, "Relu", "relu", IN("x"), OUT("r")) >= 0);
  ASSERT(NODE(g, "Identity", "id1", IN("r"), OUT("i1")) >= 0);
  ASSERT(NODE(g, "Dropout", "drop", IN("i1"), OUT("d1")) >= 0);
  ASSERT(NODE(g, "Sigmoid", "sig", IN("d1"), OUT("s")) >= 0);
  /* The graph output is an Identity's: the Sigmoid must write "out". */
  ASSERT(NODE(g, "Identity", "id2", IN("s"), OUT("out")) >= 0);
  /* A Dropout whose mask is used stays. */
  ASSERT(NODE(g, "Dropout", "drop_mask", IN("s"), OUT("d2", "mask")) >= 0);
  ASSERT(NODE(g, "Cast", "cast", IN("mask"), OUT("mask_f")) >= 0);
  ASSERT_OK(mb__node_set_int(g, g->n_nodes - 1, "to", MB_DTYPE_FLOAT, &err),
            &err);
  ASSERT(NODE(g, "Add", "add", IN("d2", "mask_f"), OUT("out2")) >= 0);
  /* Graph input straight to a graph output: kept. */
  ASSERT(NODE(g, "Identity", "passthrough", IN("x"), OUT("x_copy")) >= 0);
  ASSERT(mb__graph_add_output(g, "out", MB_DTYPE_FLOAT, 1, dims, NULL, NULL) >=
         0);
  ASSERT(mb__graph_add_output(g, "out2", MB_DTYPE_FLOAT, 1, dims, NULL, NULL) >=
         0);
  ASSERT(mb__graph_add_output(g, "x_copy", MB_DTYPE_FLOAT, 1, dims, NULL,
                              NULL) >= 0);
  ASSERT_OK(mb__graph_finalize(g, &err), &err);

  mb_tensor *inputs[MAX_IO] = {0}, *before[MAX_IO] = {0}, *after[MAX_IO] = {0};
  mb_input_shape shapes[MAX_IO];
  ASSERT_OK(make_inputs(m, 1, 1, 3, shapes, inputs), NULL);
  ASSERT_OK(run_reference(m, inputs, before), NULL);

  mb_pass_stats stats = {0};
  ASSERT_OK(mb__passes_run(m, "remove_identity", NULL, &stats, &err), &err);
  ASSERT_EQ(stats.passes[0].changed, 3); /* id1, drop, id2 */
  ASSERT_CONTAINS(stats.passes[0].detail, "2 Identity and 1 Dropout");
  ASSERT_EQ(g->n_nodes, 6);
  ASSERT_EQ(mb__edit_count_op(g, "Identity"), 1);
  ASSERT_EQ(mb__edit_count_op(g, "Dropout"), 1);
  int sig = find_op(g, "Sigmoid", 0);
  ASSERT_STR_EQ(input_name(g, sig, 0), "r");
  ASSERT_STR_EQ(output_name(g, sig, 0), "out");
  ASSERT_STR_EQ(input_name(g, find_op(g, "Dropout", 0), 0), "out");
  ASSERT_EQ(mb_model_output_count(m), 3);
  ASSERT_STR_EQ(g->values[g->outputs[0]].name, "out");
  /* The bypassed values are gone from the written model. */
  ASSERT_EQ(g->values[mb__graph_find_value(g, "s")].dtype, MB_DTYPE_UNDEFINED);

  double max_abs = 0, cosine = 1;
  ASSERT_OK(run_reference(m, inputs, after), NULL);
  ASSERT_OK(compare(after, before, 3, &max_abs, &cosine), NULL);
  ASSERT_EQ(max_abs, 0);
  ASSERT_OK(onnx_check(m, "remove_identity"), NULL);
  free_tensors(after, 3);
  if (ort_available()) {
    ASSERT_OK(run_ort(m, inputs, after), NULL);
    max_abs = 0;
    ASSERT_OK(compare(after, before, 3, &max_abs, &cosine), NULL);
    ASSERT(max_abs < 1e-6);
    free_tensors(after, 3);
  }
  free_tensors(before, 3);
  free_tensors(inputs, 1);
  mb_model_free(m);
  return 0;
}

TEST(eliminate_dead_removes_unused_nodes_and_initializers) {
  mb_model *m = new_model(17);
  mb_graph *g = m->graph;
  mb_error err = {0};
  int64_t dims[1] = {4};
  ASSERT(mb__graph_add_input(g, "x", MB_DTYPE_FLOAT, 1, dims, NULL, NULL) >= 0);
  ASSERT(mb__graph_add_input(g, "unused_input", MB_DTYPE_FLOAT, 1, dims, NULL,
                             NULL) >= 0);
  ASSERT(add_f32(g, "w", 1, dims, NULL) >= 0);
  ASSERT(add_f32(g, "dead_w", 1, dims, NULL) >= 0);
  ASSERT(add_f32(g, "never_read", 1, dims, NULL) >= 0);
  ASSERT(NODE(g, "Mul", "live", IN("x", "w"), OUT("y")) >= 0);
  ASSERT(NODE(g, "Mul", "dead1", IN("x", "dead_w"), OUT("d1")) >= 0);
  ASSERT(NODE(g, "Split", "dead2", IN("d1"), OUT("d2a", "d2b")) >= 0);
  ASSERT(NODE(g, "Relu", "dead3", IN("d2b"), OUT("d3")) >= 0);
  ASSERT(mb__graph_add_output(g, "y", MB_DTYPE_FLOAT, 1, dims, NULL, NULL) >=
         0);
  ASSERT_OK(mb__graph_finalize(g, &err), &err);
  g->values[mb__graph_find_value(g, "d3")].dtype = MB_DTYPE_FLOAT;

  mb_pass_stats stats = {0};
  ASSERT_OK(mb__passes_run(m, "eliminate_dead", NULL, &stats, &err), &err);
  ASSERT_EQ(stats.passes[0].changed, 3);
  ASSERT_CONTAINS(stats.passes[0].detail, "2 initializers (32 bytes)");
  ASSERT_EQ(g->n_nodes, 1);
  ASSERT_EQ(initializer_count(g), 1);
  ASSERT(init_of(g, "w"));
  /* Graph inputs stay, used or not: callers feed them. */
  ASSERT_EQ(mb_model_input_count(m), 2);
  ASSERT_EQ(g->values[mb__graph_find_value(g, "d3")].dtype, MB_DTYPE_UNDEFINED);
  ASSERT(stats.param_bytes_after == 16 && stats.param_bytes_before == 48);
  ASSERT_OK(onnx_check(m, "eliminate_dead"), NULL);
  mb_model_free(m);
  return 0;
}

/* Conv(+bias) -> BN, Conv(no bias) -> BN, Gemm -> BN fold; a Conv with a
 * second reader keeps its BN. Results match to float rounding. */
TEST(fold_batchnorm_into_conv_and_gemm) {
  mb_model *m = new_model(13);
  mb_graph *g = m->graph;
  mb_error err = {0};
  int64_t xdims[4] = {1, 3, 6, 6}, wdims[4] = {4, 3, 3, 3}, c4[1] = {4};
  int64_t w2dims[4] = {4, 4, 1, 1}, gemm_w[2] = {5, 4}, c5[1] = {5};
  ASSERT(mb__graph_add_input(g, "x", MB_DTYPE_FLOAT, 4, xdims, NULL, NULL) >=
         0);
  ASSERT(add_f32(g, "W", 4, wdims, NULL) >= 0);
  ASSERT(add_f32(g, "B", 1, c4, NULL) >= 0);
  ASSERT(add_f32(g, "W2", 4, w2dims, NULL) >= 0);
  static const float gamma[4] = {1.5f, 0.5f, -1, 2},
                     beta[4] = {0.1f, -0.2f, 0.3f, 0};
  static const float mean[4] = {0.2f, -0.1f, 0, 1},
                     var[4] = {1, 0.25f, 4, 0.5f};
  ASSERT(add_f32(g, "gamma", 1, c4, gamma) >= 0);
  ASSERT(add_f32(g, "beta", 1, c4, beta) >= 0);
  ASSERT(add_f32(g, "mean", 1, c4, mean) >= 0);
  ASSERT(add_f32(g, "var", 1, c4, var) >= 0);
  ASSERT(add_f32(g, "GW", 2, gemm_w, NULL) >= 0);
  ASSERT(add_f32(g, "GC", 1, c5, NULL) >= 0);
  static const float g5[5] = {1, 2, 3, 4, 5}, b5[5] = {0, 1, 0, -1, 0};
  static const float m5[5] = {0.5f, 0, 0, 0, 1}, v5[5] = {1, 2, 3, 4, 5};
  ASSERT(add_f32(g, "g5", 1, c5, g5) >= 0);
  ASSERT(add_f32(g, "b5", 1, c5, b5) >= 0);
  ASSERT(add_f32(g, "m5", 1, c5, m5) >= 0);
  ASSERT(add_f32(g, "v5", 1, c5, v5) >= 0);
  static const int64_t pads[4] = {1, 1, 1, 1};
  int conv1 = NODE(g, "Conv", "conv1", IN("x", "W", "B"), OUT("c1"));
  ASSERT_OK(mb__node_set_ints(g, conv1, "pads", 4, pads, &err), &err);
  int bn1 = NODE(g, "BatchNormalization", "bn1",
                 IN("c1", "gamma", "beta", "mean", "var"), OUT("b1"));
  ASSERT_OK(mb__node_set_float(g, bn1, "epsilon", 1e-3f, &err), &err);
  ASSERT(NODE(g, "Conv", "conv2", IN("b1", "W2"), OUT("c2")) >= 0);
  ASSERT(NODE(g, "BatchNormalization", "bn2",
              IN("c2", "gamma", "beta", "mean", "var"), OUT("b2")) >= 0);
  /* conv3's output is read twice: its BN stays. */
  ASSERT(NODE(g, "Conv", "conv3", IN("b2", "W2"), OUT("c3")) >= 0);
  ASSERT(NODE(g, "BatchNormalization", "bn3",
              IN("c3", "gamma", "beta", "mean", "var"), OUT("b3")) >= 0);
  ASSERT(NODE(g, "Add", "res", IN("b3", "c3"), OUT("r")) >= 0);
  ASSERT(NODE(g, "GlobalAveragePool", "gap", IN("r"), OUT("p")) >= 0);
  ASSERT(NODE(g, "Flatten", "flat", IN("p"), OUT("f")) >= 0);
  int gemm = NODE(g, "Gemm", "fc", IN("f", "GW", "GC"), OUT("fc"));
  ASSERT_OK(mb__node_set_int(g, gemm, "transB", 1, &err), &err);
  ASSERT_OK(mb__node_set_float(g, gemm, "beta", 0.5f, &err), &err);
  ASSERT(NODE(g, "BatchNormalization", "bn4", IN("fc", "g5", "b5", "m5", "v5"),
              OUT("logits")) >= 0);
  static const int64_t logits_dims[2] = {1, 5};
  ASSERT(mb__graph_add_output(g, "logits", MB_DTYPE_FLOAT, 2, logits_dims, NULL,
                              NULL) >= 0);
  ASSERT_OK(mb__graph_finalize(g, &err), &err);

  mb_tensor *inputs[MAX_IO] = {0}, *before[MAX_IO] = {0}, *after[MAX_IO] = {0};
  mb_input_shape shapes[MAX_IO];
  ASSERT_OK(make_inputs(m, 1, 1, 5, shapes, inputs), NULL);
  ASSERT_OK(run_reference(m, inputs, before), NULL);
  mb_model *out = NULL;
  mb_pass_stats stats = {0};
  ASSERT_OK(convert(m, "fold_batchnorm,eliminate_dead", NULL, &out, &stats),
            NULL);
  const mb_graph *o = out->graph;
  ASSERT_EQ(stats.passes[0].changed, 3);
  ASSERT_STR_EQ(stats.passes[0].detail,
                "2 BatchNormalization folded into Conv, 1 into Gemm, 1 kept");
  ASSERT_EQ(mb__edit_count_op(o, "BatchNormalization"), 1);
  int c1n = find_op(o, "Conv", 0), c2n = find_op(o, "Conv", 1);
  ASSERT_STR_EQ(output_name(o, c1n, 0), "b1");
  ASSERT_STR_EQ(input_name(o, c1n, 1), "W_bnfold");
  ASSERT_STR_EQ(input_name(o, c1n, 2), "B_bnfold");
  ASSERT_EQ(o->nodes[c2n].n_inputs, 3);
  ASSERT_STR_EQ(input_name(o, c2n, 2), "W2_bias_bnfold");
  int gn = find_op(o, "Gemm", 0);
  ASSERT_STR_EQ(output_name(o, gn, 0), "logits");
  ASSERT_NEAR(mb__node_attr_float(&o->nodes[gn], "beta", 0), 1.0, 0);
  /* The old weights are dead; W2 is still read by conv3. */
  ASSERT(init_of(o, "W") == NULL && init_of(o, "W2") != NULL);
  double max_abs = 0, cosine = 1;
  ASSERT_OK(run_reference(out, inputs, after), NULL);
  ASSERT_OK(compare(after, before, 1, &max_abs, &cosine), NULL);
  ASSERT(max_abs <= 1e-5);
  free_tensors(after, 1);
  ASSERT_OK(onnx_check(out, "fold_batchnorm"), NULL);
  if (ort_available()) {
    ASSERT_OK(run_ort(out, inputs, after), NULL);
    max_abs = 0;
    ASSERT_OK(compare(after, before, 1, &max_abs, &cosine), NULL);
    ASSERT(max_abs <= 1e-4);
    free_tensors(after, 1);
  }
  free_tensors(before, 1);
  free_tensors(inputs, 1);
  mb_model_free(out);
  mb_model_free(m);
  return 0;
}

/* x[batch, 4, 6] -> Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), -1))
 * becomes Reshape(x, constant) once batch is pinned. */
TEST(simplify_shapes_makes_shape_chains_constant) {
  mb_model *m = new_model(13);
  mb_graph *g = m->graph;
  mb_error err = {0};
  int64_t dims[3] = {-1, 4, 6};
  const char *params[3] = {"batch", NULL, NULL};
  ASSERT(mb__graph_add_input(g, "x", MB_DTYPE_FLOAT, 3, dims, params, NULL) >=
         0);
  static const int64_t zero[1] = {0}, minus_one[1] = {-1};
  mb_tensor *idx = NULL;
  ASSERT_OK(mb_tensor_create(MB_DTYPE_INT64, 0, NULL, &idx, &err), &err);
  ASSERT(mb__graph_add_initializer(g, "idx0", idx, NULL) >= 0);
  ASSERT(add_i64(g, "axes0", 1, zero) >= 0);
  ASSERT(add_i64(g, "minus_one", 1, minus_one) >= 0);
  ASSERT(NODE(g, "Shape", "shape", IN("x"), OUT("shape")) >= 0);
  ASSERT(NODE(g, "Gather", "gather", IN("shape", "idx0"), OUT("batch")) >= 0);
  ASSERT(NODE(g, "Unsqueeze", "unsq", IN("batch", "axes0"), OUT("batch1")) >=
         0);
  int cat = NODE(g, "Concat", "cat", IN("batch1", "minus_one"), OUT("target"));
  ASSERT_OK(mb__node_set_int(g, cat, "axis", 0, &err), &err);
  ASSERT(NODE(g, "Reshape", "reshape", IN("x", "target"), OUT("flat")) >= 0);
  ASSERT(NODE(g, "Relu", "relu", IN("flat"), OUT("y")) >= 0);
  int64_t ydims[2] = {-1, 24};
  const char *yparams[2] = {"batch", NULL};
  ASSERT(mb__graph_add_output(g, "y", MB_DTYPE_FLOAT, 2, ydims, yparams,
                              NULL) >= 0);
  ASSERT_OK(mb__graph_finalize(g, &err), &err);

  /* Without concrete shapes: an explicit request fails, optimize skips. */
  mb_model *out = NULL;
  mb_status status =
      mb__convert_model(m, "simplify_shapes", NULL, &out, NULL, &err);
  ASSERT_EQ(status, MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "batch");
  mb_pass_stats stats = {0};
  ASSERT_OK(convert(m, "optimize", NULL, &out, &stats), NULL);
  const mb_pass_record *r = record_of(&stats, "simplify_shapes");
  ASSERT(r && r->changed == 0);
  ASSERT_CONTAINS(r->detail, "skipped");
  ASSERT_EQ(out->graph->n_nodes, 6);
  mb_model_free(out);

  mb_input_shape shape = {.name = "x", .rank = 3, .dims = {2, 4, 6}};
  mb_pass_options opt = {.n_input_shapes = 1, .input_shapes = &shape};
  memset(&stats, 0, sizeof stats);
  ASSERT_OK(convert(m, "optimize", &opt, &out, &stats), NULL);
  const mb_graph *o = out->graph;
  r = record_of(&stats, "simplify_shapes");
  ASSERT(r && r->changed == 1);
  ASSERT_STR_EQ(r->detail, "1 inputs pinned, 1 values made constant");
  ASSERT_EQ(o->n_nodes, 2);
  ASSERT_EQ(stats.nodes_before, 6);
  ASSERT_EQ(stats.nodes_after, 2);
  int reshape = find_op(o, "Reshape", 0);
  const mb_tensor *target = init_of(o, input_name(o, reshape, 1));
  ASSERT(target && target->numel == 2);
  ASSERT_EQ(((const int64_t *)target->data)[0], 2);
  ASSERT_EQ(((const int64_t *)target->data)[1], -1);
  /* The input is pinned. */
  const mb_value *x = &o->values[o->inputs[0]];
  ASSERT_EQ(x->dims[0].value, 2);
  ASSERT(x->dims[0].param == NULL);
  ASSERT_EQ(initializer_count(o), 1);

  mb_tensor *inputs[MAX_IO] = {0}, *before[MAX_IO] = {0}, *after[MAX_IO] = {0};
  mb_input_shape shapes[MAX_IO];
  ASSERT_OK(make_inputs(m, 2, 1, 9, shapes, inputs), NULL);
  ASSERT_OK(run_reference(m, inputs, before), NULL);
  ASSERT_OK(run_reference(out, inputs, after), NULL);
  double max_abs = 0, cosine = 1;
  ASSERT_OK(compare(after, before, 1, &max_abs, &cosine), NULL);
  ASSERT_EQ(max_abs, 0);
  free_tensors(after, 1);
  ASSERT_OK(onnx_check(out, "simplify_shapes"), NULL);
  if (ort_available()) {
    ASSERT_OK(run_ort(out, inputs, after), NULL);
    free_tensors(after, 1);
  }
  /* A shape that contradicts the model is refused. */
  mb_input_shape bad = {.name = "x", .rank = 3, .dims = {2, 5, 6}};
  opt.input_shapes = &bad;
  mb_model *unused = NULL;
  status = mb__convert_model(m, "simplify_shapes", &opt, &unused, NULL, &err);
  ASSERT_EQ(status, MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "dim 1 is 5");
  free_tensors(before, 1);
  free_tensors(inputs, 1);
  mb_model_free(out);
  mb_model_free(m);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* to_fp16                                                                   */
/* ------------------------------------------------------------------------ */

/* x -> MatMul(W) -> Softmax -> Add(bias) -> y, plus an initializer read by
 * a float16 and a float32 node and an int64 -> float Cast. */
static mb_model *fp16_graph(void) {
  mb_model *m = new_model(17);
  mb_graph *g = m->graph;
  int64_t xdims[2] = {2, 8}, wdims[2] = {8, 8}, bdims[1] = {8};
  if (mb__graph_add_input(g, "x", MB_DTYPE_FLOAT, 2, xdims, NULL, NULL) < 0 ||
      mb__graph_add_input(g, "ids", MB_DTYPE_INT64, 2, xdims, NULL, NULL) < 0 ||
      add_f32(g, "W", 2, wdims, NULL) < 0 ||
      add_f32(g, "bias", 1, bdims, NULL) < 0 ||
      add_f32(g, "shared", 1, bdims, NULL) < 0)
    goto fail;
  if (NODE(g, "MatMul", "mm", IN("x", "W"), OUT("h")) < 0 ||
      NODE(g, "Softmax", "sm", IN("h"), OUT("p")) < 0 ||
      NODE(g, "Add", "add", IN("p", "bias"), OUT("q")) < 0 ||
      NODE(g, "Mul", "mul16", IN("q", "shared"), OUT("r")) < 0 ||
      NODE(g, "Exp", "exp32", IN("shared"), OUT("e")) < 0 ||
      NODE(g, "Add", "add2", IN("r", "e"), OUT("s")) < 0)
    goto fail;
  int cast = NODE(g, "Cast", "cast", IN("ids"), OUT("idsf"));
  if (cast < 0 || mb__node_set_int(g, cast, "to", MB_DTYPE_FLOAT, NULL) ||
      NODE(g, "Add", "add3", IN("s", "idsf"), OUT("y")) < 0 ||
      mb__graph_add_output(g, "y", MB_DTYPE_FLOAT, 2, xdims, NULL, NULL) < 0 ||
      mb__graph_add_output(g, "p", MB_DTYPE_FLOAT, 2, xdims, NULL, NULL) < 0 ||
      mb__graph_finalize(g, NULL))
    goto fail;
  return m;
fail:
  mb_model_free(m);
  return NULL;
}

static mb_dtype dtype_of(const mb_graph *g, const char *name) {
  int v = mb__graph_find_value(g, name);
  return v >= 0 ? g->values[v].dtype : MB_DTYPE_UNDEFINED;
}

TEST(to_fp16_casts_at_boundaries_and_blocked_ops) {
  mb_model *m = fp16_graph();
  ASSERT(m);
  mb_model *out = NULL;
  mb_pass_stats stats = {0};
  ASSERT_OK(convert(m, "to_fp16", NULL, &out, &stats), NULL);
  const mb_graph *o = out->graph;
  /* fp16: mm, add, mul16, add2, cast, add3. fp32: sm, exp32. */
  ASSERT_EQ(stats.passes[0].changed, 6);
  /* Casts: x in; h to fp32 for Softmax; p (an output, kept fp32) to fp16
   * for add; e to fp16; y out. */
  ASSERT_EQ(mb__edit_count_op(o, "Cast"), 6);
  ASSERT_CONTAINS(stats.passes[0].detail, "2 kept in float32, 5 Casts");
  ASSERT_CONTAINS(stats.passes[0].detail, "2 initializers converted and 1 "
                                          "copied");
  /* Boundaries stay float32. */
  ASSERT_EQ(dtype_of(o, "x"), MB_DTYPE_FLOAT);
  ASSERT_EQ(dtype_of(o, "y"), MB_DTYPE_FLOAT);
  ASSERT_EQ(dtype_of(o, "p"), MB_DTYPE_FLOAT);
  ASSERT_EQ(dtype_of(o, "ids"), MB_DTYPE_INT64);
  int mm = find_op(o, "MatMul", 0);
  ASSERT_STR_EQ(input_name(o, mm, 0), "x_fp16");
  ASSERT_EQ(init_of(o, "W")->dtype, MB_DTYPE_FLOAT16);
  ASSERT_EQ(dtype_of(o, "h"), MB_DTYPE_FLOAT16);
  int sm = find_op(o, "Softmax", 0);
  ASSERT_STR_EQ(input_name(o, sm, 0), "h_fp32");
  ASSERT_EQ(dtype_of(o, "h_fp32"), MB_DTYPE_FLOAT);
  /* The shared initializer: float32 for Exp, a float16 copy for Mul. */
  ASSERT_EQ(init_of(o, "shared")->dtype, MB_DTYPE_FLOAT);
  ASSERT_EQ(init_of(o, "shared_fp16")->dtype, MB_DTYPE_FLOAT16);
  ASSERT_STR_EQ(input_name(o, find_op(o, "Exp", 0), 0), "shared");
  ASSERT_STR_EQ(input_name(o, find_op(o, "Mul", 0), 1), "shared_fp16");
  /* int64 -> float Cast now casts to float16. */
  for (int i = 0; i < o->n_nodes; i++)
    if (strcmp(o->nodes[i].op_type, "Cast") == 0 &&
        strcmp(input_name(o, i, 0), "ids") == 0)
      ASSERT_EQ(mb__node_attr_int(&o->nodes[i], "to", 0), MB_DTYPE_FLOAT16);
  /* y is written by a Cast from the renamed float16 value. */
  int y = mb__graph_find_value(o, "y");
  const mb_node *writer = &o->nodes[o->values[y].producer];
  ASSERT_STR_EQ(writer->op_type, "Cast");
  ASSERT_STR_EQ(input_name(o, o->values[y].producer, 0), "y_fp16");
  ASSERT_EQ(mb__node_attr_int(writer, "to", 0), MB_DTYPE_FLOAT);
  ASSERT_OK(onnx_check(out, "to_fp16"), NULL);

  mb_tensor *inputs[MAX_IO] = {0}, *before[MAX_IO] = {0}, *after[MAX_IO] = {0};
  mb_input_shape shapes[MAX_IO];
  ASSERT_OK(make_inputs(m, 1, 1, 11, shapes, inputs), NULL);
  ASSERT_OK(run_reference(m, inputs, before), NULL);
  double max_abs = 0, cosine = 1;
  if (ort_available()) {
    ASSERT_OK(run_ort(out, inputs, after), NULL);
    ASSERT_EQ(after[0]->dtype, MB_DTYPE_FLOAT);
    ASSERT_OK(compare(after, before, 2, &max_abs, &cosine), NULL);
    ASSERT(cosine >= FP16_COSINE);
    free_tensors(after, 2);
  }
  free_tensors(before, 2);
  free_tensors(inputs, 2);
  mb_model_free(out);

  /* The block list: "none" converts Softmax and Exp too, "-Softmax" just
   * Softmax, "Exp" blocks exactly Exp. */
  static const struct {
    const char *spec;
    int converted, casts;
  } cases[] = {
      {"none", 8, 3}, /* x in, y out, p out */
      {"-Softmax", 7, 4},
      {"Exp", 7, 4},
      {"+Mul", 5, 7},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mb_pass_options opt = {.fp16_block = cases[i].spec};
    memset(&stats, 0, sizeof stats);
    ASSERT_OK(convert(m, "to_fp16", &opt, &out, &stats), NULL);
    if (stats.passes[0].changed != cases[i].converted ||
        mb__edit_count_op(out->graph, "Cast") - 1 != cases[i].casts)
      TEST_FAIL_("block list '%s': %lld converted, %d Casts; want %d, %d",
                 cases[i].spec, (long long)stats.passes[0].changed,
                 mb__edit_count_op(out->graph, "Cast") - 1, cases[i].converted,
                 cases[i].casts);
    ASSERT_OK(onnx_check(out, cases[i].spec), NULL);
    mb_model_free(out);
  }
  mb_model_free(m);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Real models: results do not change                                        */
/* ------------------------------------------------------------------------ */

typedef struct model_result {
  int nodes_before, nodes_opt, nodes_fp16;
  double opt_max_abs, fp16_cosine, fp16_ref_cosine, fp16_max_abs;
  char fp16_ref_note[MB_ERROR_MESSAGE_SIZE];
} model_result;

/* optimize (reference before/after, ORT, checker) and to_fp16 (ORT vs the
 * float32 reference, checker; the reference where it can). */
static int check_model(const char *label, const mb_model *m, int64_t batch,
                       int64_t seq, model_result *res) {
  mb_error err = {0};
  mb_tensor *inputs[MAX_IO] = {0}, *ref[MAX_IO] = {0}, *got[MAX_IO] = {0};
  mb_input_shape shapes[MAX_IO];
  int n_out = mb_model_output_count(m), n_in = mb_model_input_count(m);
  ASSERT(n_out <= MAX_IO);
  memset(res, 0, sizeof *res);
  res->fp16_cosine = res->fp16_ref_cosine = 1;
  res->nodes_before = m->graph->n_nodes;
  ASSERT_OK(make_inputs(m, batch, seq, 42, shapes, inputs), NULL);
  ASSERT_OK(run_reference(m, inputs, ref), NULL);

  mb_pass_options opt = {.n_input_shapes = n_in, .input_shapes = shapes};
  mb_pass_stats stats = {0};
  mb_model *o = NULL;
  ASSERT_OK(convert(m, "optimize", &opt, &o, &stats), NULL);
  res->nodes_opt = o->graph->n_nodes;
  char summary[2048];
  printf("  %s optimize: %s\n", label,
         mb__pass_stats_summary(&stats, summary, sizeof summary));
  double cosine = 1;
  ASSERT_OK(run_reference(o, inputs, got), NULL);
  ASSERT_OK(compare(got, ref, n_out, &res->opt_max_abs, &cosine), NULL);
  free_tensors(got, n_out);
  if (res->opt_max_abs > OPT_ATOL)
    TEST_FAIL_("%s: optimize changed the results by %g", label,
               res->opt_max_abs);
  ASSERT_OK(onnx_check(o, label), NULL);
  if (ort_available()) {
    double ort_abs = 0;
    ASSERT_OK(run_ort(o, inputs, got), NULL);
    ASSERT_OK(compare(got, ref, n_out, &ort_abs, &cosine), NULL);
    free_tensors(got, n_out);
    if (ort_abs > 1e-3)
      TEST_FAIL_("%s: optimized model on ORT differs by %g", label, ort_abs);
  }
  mb_model_free(o);

  memset(&stats, 0, sizeof stats);
  ASSERT_OK(convert(m, "optimize,to_fp16", &opt, &o, &stats), NULL);
  res->nodes_fp16 = o->graph->n_nodes;
  printf("  %s to_fp16: %s\n", label, stats.passes[stats.n_passes - 1].detail);
  ASSERT_OK(onnx_check(o, label), NULL);
  /* As written, and as the ORT_CPU conversions run it (all of ORT's
   * optimisations). */
  static const mb_graph_opt_level levels[] = {MB_GRAPH_OPT_DISABLED,
                                              MB_GRAPH_OPT_ALL};
  for (size_t l = 0; ort_available() && l < MB_ARRAY_COUNT(levels); l++) {
    ASSERT_OK(run_ort_at(o, levels[l], inputs, got), NULL);
    ASSERT_OK(compare(got, ref, n_out, &res->fp16_max_abs, &res->fp16_cosine),
              NULL);
    free_tensors(got, n_out);
    if (res->fp16_cosine < FP16_COSINE)
      TEST_FAIL_("%s: float16 on ORT (level %d) has cosine %.6f vs float32",
                 label, (int)levels[l], res->fp16_cosine);
  }
  /* The reference's float16 coverage is still growing: report, not fail. */
  mb_session *s = NULL;
  mb_status status = mb_session_create(o, NULL, &s, &err);
  if (!status)
    status = mb_session_run(s, n_in, (const mb_tensor *const *)inputs, n_out,
                            got, &err);
  mb_session_free(s);
  if (!status) {
    double abs = 0;
    ASSERT_OK(compare(got, ref, n_out, &abs, &res->fp16_ref_cosine), NULL);
    free_tensors(got, n_out);
    if (res->fp16_ref_cosine < FP16_COSINE)
      TEST_FAIL_("%s: float16 on the reference has cosine %.6f", label,
                 res->fp16_ref_cosine);
  } else {
    res->fp16_ref_cosine = -1;
    snprintf(res->fp16_ref_note, sizeof res->fp16_ref_note, "%s", err.message);
  }
  mb_model_free(o);
  free_tensors(ref, n_out);
  free_tensors(inputs, n_in);
  printf("  %-26s nodes %d -> %d (optimize) -> %d (fp16); optimize max abs "
         "%.2g; fp16 on ORT cosine %.7f (max abs %.2g), on the reference "
         "%s%.7f%s%s\n",
         label, res->nodes_before, res->nodes_opt, res->nodes_fp16,
         res->opt_max_abs, res->fp16_cosine, res->fp16_max_abs,
         res->fp16_ref_cosine < 0 ? "n/a " : "", res->fp16_ref_cosine,
         res->fp16_ref_note[0] ? ": " : "", res->fp16_ref_note);
  return 0;
}

TEST(bundled_models_keep_their_results) {
  static const char *const files[] = {"mlp.onnx", "small_cnn.onnx",
                                      "resnet_blocks.onnx",
                                      "transformer_block.onnx"};
  const char *dir = getenv("MB_TEST_MODELS");
  if (!dir || !*dir)
    TEST_FAIL_("MB_TEST_MODELS is not set (ctest sets it)");
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char path[4096];
    mb_error err = {0};
    mb_model *m = NULL;
    model_result res;
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    ASSERT_OK(mb_model_load(path, &m, &err), &err);
    int rc = check_model(files[i], m, 2, 8, &res);
    mb_model_free(m);
    if (rc)
      return rc;
  }
  return 0;
}

/* The PyTorch exports (tools/export_torch_models.py), those present. */
TEST(torch_models_keep_their_results) {
  static const char *const names[] = {
      "resnet18",      "mobilenet_v2",    "transformer_encoder_op17",
      "bert_encoder",  "efficientnet_b0", "shufflenet_v2_x1_0",
      "squeezenet1_0", "gpt_decoder",     "transformer_encoder_op13"};
  const char *root = getenv("MB_TORCH_MODELS");
  if (!root || !*root)
    root = "/tmp/torch_models";
  int found = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s/model.onnx", root, names[i]);
    if (stat(path, &st) != 0)
      continue;
    found++;
    mb_error err = {0};
    mb_model *m = NULL;
    model_result res;
    ASSERT_OK(mb_model_load(path, &m, &err), &err);
    int rc = check_model(names[i], m, 1, 16, &res);
    mb_model_free(m);
    if (rc)
      return rc;
  }
  if (!found)
    printf("  skipped: no PyTorch models under %s\n", root);
  return 0;
}

TEST_MAIN(TEST_ENTRY(registry_lists_every_pass),
          TEST_ENTRY(unknown_pass_fails_before_anything_runs),
          TEST_ENTRY(clone_is_deep_and_exact),
          TEST_ENTRY(constant_to_initializer_converts_every_form),
          TEST_ENTRY(fold_constants_folds_chains_and_respects_limits),
          TEST_ENTRY(remove_identity_drops_zero_ratio_dropout_in_training_mode),
          TEST_ENTRY(remove_identity_keeps_output_names),
          TEST_ENTRY(eliminate_dead_removes_unused_nodes_and_initializers),
          TEST_ENTRY(fold_batchnorm_into_conv_and_gemm),
          TEST_ENTRY(simplify_shapes_makes_shape_chains_constant),
          TEST_ENTRY(to_fp16_casts_at_boundaries_and_blocked_ops),
          TEST_ENTRY(bundled_models_keep_their_results),
          TEST_ENTRY(torch_models_keep_their_results))
