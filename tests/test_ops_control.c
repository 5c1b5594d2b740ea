/* Control flow and sequences on the reference interpreter, beyond what the
 * backend suite covers: Scan with axes and directions, subgraphs reading
 * values two scopes out, a Loop stopped by its condition alone, Loop trip
 * counts beyond a double's precision (INT64_MAX, 2^62) and none, sequence
 * round trips (SplitToSequence -> ConcatFromSequence), static inference
 * across a Loop, a hybrid runtime falling back around an If, and the
 * errors a user can reach (a branch with the wrong output count, a
 * sequence position out of range, a sequence given to a tensor operator). */
#include "op_harness.h"
#include "runtime/reference.h"

#define V(...)                                                                 \
  (const double[]) {                                                           \
    __VA_ARGS__                                                                \
  }

/* A subgraph under `parent` with the given inputs (float, any shape). */
static mb_graph *sub_create(graph_builder *b, mb_graph *parent, int n_in,
                            const char *const *in, const mb_dtype *types) {
  if (gb_failed(b))
    return NULL;
  mb_graph *g = mb__graph_create(b->model, parent);
  if (!g) {
    mb__error(&b->err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  g->name = "body";
  for (int i = 0; i < n_in; i++)
    mb__graph_add_input(g, in[i], types ? types[i] : MB_DTYPE_FLOAT, -1, NULL,
                        NULL, &b->err);
  return g;
}

static void sub_node(graph_builder *b, mb_graph *g, const char *op, int n_in,
                     const char *const *in, const char *out) {
  if (!gb_failed(b) && g)
    mb__graph_add_node(g, op, "", out, n_in, in, 1, &out, &b->err);
}

static void sub_output(graph_builder *b, mb_graph *g, const char *name) {
  if (!gb_failed(b) && g)
    mb__graph_add_output(g, name, MB_DTYPE_UNDEFINED, -1, NULL, NULL, &b->err);
}

/* Attaches g as graph attribute `name` of b's last node. */
static void attach(graph_builder *b, const char *name, mb_graph *g) {
  if (gb_failed(b) || !g)
    return;
  mb_attr a = {.type = MB_ATTR_GRAPH, .g = g};
  a.name = mb__arena_strdup(b->model->arena, name);
  mb__node_add_attr(b->graph, b->last_node, &a, &b->err);
}

static int run_one(mb_model *model, mb_tensor **in, mb_tensor **out) {
  return run_reference(model, in, out);
}

/* Scan over axis 1 backwards, stacking along axis 1 backwards: the
 * running sum of each row from its end, back in the input's order. */
TEST(scan_axes_and_directions) {
  graph_builder b;
  gb_init(&b, 16);
  int64_t xd[2] = {2, 4}, sd[1] = {2};
  gb_input(&b, "x", MB_DTYPE_FLOAT, 2, xd);
  const char *init = gb_const(&b, MB_DTYPE_FLOAT, 1, sd, V(0, 0));
  const char *outs[2] = {"final", "sums"};
  gb_node_outs(&b, "Scan", 2, (const char *[]){init, "x"}, 2, outs);
  gb_int(&b, "num_scan_inputs", 1);
  gb_ints(&b, "scan_input_axes", 1, (const int64_t[]){1});
  gb_ints(&b, "scan_input_directions", 1, (const int64_t[]){1});
  gb_ints(&b, "scan_output_axes", 1, (const int64_t[]){1});
  gb_ints(&b, "scan_output_directions", 1, (const int64_t[]){1});
  mb_graph *body =
      sub_create(&b, b.graph, 2, (const char *[]){"acc", "col"}, NULL);
  sub_node(&b, body, "Add", 2, (const char *[]){"acc", "col"}, "acc_out");
  sub_node(&b, body, "Identity", 1, (const char *[]){"acc_out"}, "step");
  sub_output(&b, body, "acc_out");
  sub_output(&b, body, "step");
  attach(&b, "body", body);
  gb_output(&b, "final", MB_DTYPE_FLOAT, 1, sd);
  gb_output(&b, "sums", MB_DTYPE_FLOAT, 2, xd);
  mb_model *m = gb_finish(&b);
  ASSERT(m);
  mb_tensor *in[1] = {
      tensor_of(MB_DTYPE_FLOAT, 2, xd, V(1, 2, 3, 4, 10, 20, 30, 40))};
  mb_tensor *out[2] = {0};
  ASSERT_EQ(run_one(m, in, out), 0);
  /* Row 0 from the end: 4, 7, 9, 10; stacked backwards: 10 9 7 4. */
  static const double want_sums[] = {10, 9, 7, 4, 100, 90, 70, 40};
  ASSERT_EQ(out[1]->dims[0], 2);
  ASSERT_EQ(out[1]->dims[1], 4);
  for (int i = 0; i < 8; i++)
    ASSERT_NEAR(mb__tensor_get_f64(out[1], i), want_sums[i], 1e-6);
  ASSERT_NEAR(mb__tensor_get_f64(out[0], 0), 10, 1e-6);
  ASSERT_NEAR(mb__tensor_get_f64(out[0], 1), 100, 1e-6);
  free_tensors(in, 1);
  free_tensors(out, 2);
  mb_model_free(m);
  return 0;
}

/* Loop without a trip count: the body's condition (i < 4) stops it after
 * five iterations; an If inside reads `k` from the main graph (two scopes
 * out) and `acc` from the body. */
TEST(loop_condition_and_outer_scopes) {
  graph_builder b;
  gb_init(&b, 16);
  int64_t one[1] = {1};
  gb_input(&b, "k", MB_DTYPE_FLOAT, 1, one);
  const char *cond0 = gb_const(&b, MB_DTYPE_BOOL, 0, NULL, V(1));
  const char *acc0 = gb_const(&b, MB_DTYPE_FLOAT, 1, one, V(0));
  const char *four = gb_const(&b, MB_DTYPE_INT64, 0, NULL, V(4));
  const char *outs[2] = {"acc_final", "trace"};
  gb_node_outs(&b, "Loop", 3, (const char *[]){"", cond0, acc0}, 2, outs);
  static const mb_dtype body_types[] = {MB_DTYPE_INT64, MB_DTYPE_BOOL,
                                        MB_DTYPE_FLOAT};
  mb_graph *body =
      sub_create(&b, b.graph, 3, (const char *[]){"i", "c", "acc"}, body_types);
  sub_node(&b, body, "Less", 2, (const char *[]){"i", four}, "c_out");
  /* If i is even: acc + k, else acc - k. */
  const char *two = gb_const(&b, MB_DTYPE_INT64, 0, NULL, V(2));
  const char *zero = gb_const(&b, MB_DTYPE_INT64, 0, NULL, V(0));
  sub_node(&b, body, "Mod", 2, (const char *[]){"i", two}, "parity");
  sub_node(&b, body, "Equal", 2, (const char *[]){"parity", zero}, "even");
  if (!gb_failed(&b)) {
    const char *if_out = "acc_out";
    b.last_node = mb__graph_add_node(
        body, "If", "", "if", 1, (const char *[]){"even"}, 1, &if_out, &b.err);
  }
  mb_graph *then_g = sub_create(&b, body, 0, NULL, NULL);
  sub_node(&b, then_g, "Add", 2, (const char *[]){"acc", "k"}, "t");
  sub_output(&b, then_g, "t");
  mb_graph *else_g = sub_create(&b, body, 0, NULL, NULL);
  sub_node(&b, else_g, "Sub", 2, (const char *[]){"acc", "k"}, "e");
  sub_output(&b, else_g, "e");
  if (!gb_failed(&b)) {
    mb_graph *saved = b.graph;
    b.graph = body; /* attach() adds to b.graph's last node */
    attach(&b, "then_branch", then_g);
    attach(&b, "else_branch", else_g);
    b.graph = saved;
    b.last_node = b.graph->n_nodes - 1;
  }
  sub_node(&b, body, "Identity", 1, (const char *[]){"acc_out"}, "scan");
  sub_output(&b, body, "c_out");
  sub_output(&b, body, "acc_out");
  sub_output(&b, body, "scan");
  attach(&b, "body", body);
  gb_output(&b, "acc_final", MB_DTYPE_FLOAT, 1, one);
  gb_output(&b, "trace", MB_DTYPE_FLOAT, -1, NULL);
  mb_model *m = gb_finish(&b);
  ASSERT(m);
  mb_tensor *in[1] = {tensor_of(MB_DTYPE_FLOAT, 1, one, V(3))};
  mb_tensor *out[2] = {0};
  ASSERT_EQ(run_one(m, in, out), 0);
  /* i = 0..4: +3 -3 +3 -3 +3 */
  static const double trace[] = {3, 0, 3, 0, 3};
  ASSERT_EQ(out[1]->dims[0], 5);
  for (int i = 0; i < 5; i++)
    ASSERT_NEAR(mb__tensor_get_f64(out[1], i), trace[i], 1e-6);
  ASSERT_NEAR(mb__tensor_get_f64(out[0], 0), 3, 1e-6);
  /* Static inference: the Loop's outputs stay unknown, without an error. */
  mb_shape_info *shapes = calloc((size_t)m->graph->n_values, sizeof *shapes);
  mb_error err = {0};
  ASSERT_OK(mb__infer_shapes(m, (const mb_tensor *const *)in, shapes, &err),
            &err);
  ASSERT(!shapes[mb__graph_find_value(m->graph, "trace")].known);
  free(shapes);
  free_tensors(in, 1);
  free_tensors(out, 2);
  mb_model_free(m);
  return 0;
}

/* SplitToSequence by a size, by sizes and into single slices, then
 * ConcatFromSequence (and stacking with new_axis) rebuilds the input. */
TEST(split_and_concat_sequences) {
  int64_t xd[2] = {5, 2};
  for (int mode = 0; mode < 3; mode++) {
    graph_builder b;
    gb_init(&b, 13);
    gb_input(&b, "x", MB_DTYPE_FLOAT, 2, xd);
    const char *split = "";
    if (mode == 0)
      split = gb_const(&b, MB_DTYPE_INT64, 0, NULL, V(2));
    else if (mode == 1)
      split = gb_const(&b, MB_DTYPE_INT64, 1, (const int64_t[]){3}, V(1, 3, 1));
    const char *seq = GB_OP(&b, "SplitToSequence", "x", split);
    if (mode == 2)
      gb_int(&b, "keepdims", 0);
    const char *len = GB_OP(&b, "SequenceLength", seq);
    const char *y = GB_OP(&b, "ConcatFromSequence", seq);
    gb_int(&b, "axis", 0);
    if (mode == 2)
      gb_int(&b, "new_axis", 1);
    gb_output(&b, y, MB_DTYPE_FLOAT, 2, xd);
    gb_output(&b, len, MB_DTYPE_INT64, 0, NULL);
    mb_model *m = gb_finish(&b);
    ASSERT(m);
    mb_tensor *in[1] = {
        tensor_of(MB_DTYPE_FLOAT, 2, xd, V(0, 1, 2, 3, 4, 5, 6, 7, 8, 9))};
    mb_tensor *out[2] = {0};
    ASSERT_EQ(run_one(m, in, out), 0);
    static const int64_t lengths[] = {3, 3, 5};
    ASSERT_EQ(mb__tensor_get_i64(out[1], 0), lengths[mode]);
    ASSERT_EQ(out[0]->numel, 10);
    for (int i = 0; i < 10; i++)
      ASSERT_NEAR(mb__tensor_get_f64(out[0], i), i, 0);
    free_tensors(in, 1);
    free_tensors(out, 2);
    mb_model_free(m);
  }
  return 0;
}

/* A model that fails at run time; the message must contain every needle. */
static int expect_run_error(mb_model *m, mb_tensor **in, const char *needle1,
                            const char *needle2) {
  mb_error err = {0};
  mb_session *s = NULL;
  mb_tensor *out[2] = {0};
  ASSERT(m);
  mb_status st = mb_session_create(m, NULL, &s, &err);
  if (!st)
    st =
        mb_session_run(s, mb_model_input_count(m), (const mb_tensor *const *)in,
                       mb_model_output_count(m), out, &err);
  mb_session_free(s);
  free_tensors(out, 2);
  ASSERT_NE(st, MB_STATUS_OK);
  ASSERT_CONTAINS(err.message, needle1);
  ASSERT_CONTAINS(err.message, needle2);
  return 0;
}

TEST(errors_name_node_and_fault) {
  int64_t xd[1] = {3};
  mb_tensor *in[1] = {tensor_of(MB_DTYPE_FLOAT, 1, xd, V(1, 2, 3))};
  /* An If whose branch gives two outputs for one. */
  {
    graph_builder b;
    gb_init(&b, 16);
    gb_input(&b, "x", MB_DTYPE_FLOAT, 1, xd);
    const char *c = gb_const(&b, MB_DTYPE_BOOL, 0, NULL, V(1));
    const char *y = GB_OP(&b, "If", c);
    mb_graph *t = sub_create(&b, b.graph, 0, NULL, NULL);
    sub_node(&b, t, "Neg", 1, (const char *[]){"x"}, "n1");
    sub_node(&b, t, "Abs", 1, (const char *[]){"x"}, "n2");
    sub_output(&b, t, "n1");
    sub_output(&b, t, "n2");
    mb_graph *e = sub_create(&b, b.graph, 0, NULL, NULL);
    sub_node(&b, e, "Neg", 1, (const char *[]){"x"}, "n3");
    sub_output(&b, e, "n3");
    attach(&b, "then_branch", t);
    attach(&b, "else_branch", e);
    gb_output(&b, y, MB_DTYPE_FLOAT, 1, xd);
    mb_model *m = gb_finish(&b);
    int rc = expect_run_error(m, in, "If", "then branch has 2 outputs");
    mb_model_free(m);
    if (rc)
      return rc;
  }
  /* SequenceAt past the end, and a sequence fed to Relu. */
  for (int relu = 0; relu < 2; relu++) {
    graph_builder b;
    gb_init(&b, 13);
    gb_input(&b, "x", MB_DTYPE_FLOAT, 1, xd);
    const char *seq = GB_OP(&b, "SequenceConstruct", "x", "x");
    const char *y;
    if (relu) {
      y = GB_OP(&b, "Relu", seq);
    } else {
      const char *pos = gb_const(&b, MB_DTYPE_INT64, 0, NULL, V(2));
      y = GB_OP(&b, "SequenceAt", seq, pos);
    }
    gb_output(&b, y, MB_DTYPE_FLOAT, 1, xd);
    mb_model *m = gb_finish(&b);
    int rc = relu ? expect_run_error(m, in, "Relu", "is a sequence")
                  : expect_run_error(m, in, "SequenceAt",
                                     "position 2 is outside a sequence of 2");
    mb_model_free(m);
    if (rc)
      return rc;
  }
  /* SplitToSequence whose sizes pass the axis before they are summed. */
  {
    graph_builder b;
    gb_init(&b, 13);
    gb_input(&b, "x", MB_DTYPE_FLOAT, 1, xd);
    const char *split =
        gb_const(&b, MB_DTYPE_INT64, 1, (const int64_t[]){2}, V(4, 2));
    const char *seq = GB_OP(&b, "SplitToSequence", "x", split);
    const char *y = GB_OP(&b, "ConcatFromSequence", seq);
    gb_int(&b, "axis", 0);
    gb_output(&b, y, MB_DTYPE_FLOAT, 1, xd);
    mb_model *m = gb_finish(&b);
    int rc = expect_run_error(m, in, "SplitToSequence",
                              "split sizes add up to more than axis 0's 3");
    mb_model_free(m);
    if (rc)
      return rc;
  }
  /* Scan (opset 8) whose sequence_lens is shorter than the batch. */
  {
    graph_builder b;
    gb_init(&b, 8);
    int64_t bd[3] = {2, 3, 1}, sd[2] = {2, 1}, ld[1] = {1};
    gb_input(&b, "xs", MB_DTYPE_FLOAT, 3, bd);
    const char *lens = gb_const(&b, MB_DTYPE_INT64, 1, ld, V(3));
    const char *init = gb_const(&b, MB_DTYPE_FLOAT, 2, sd, V(0, 0));
    const char *outs[2] = {"final", "steps"};
    gb_node_outs(&b, "Scan", 3, (const char *[]){lens, init, "xs"}, 2, outs);
    gb_int(&b, "num_scan_inputs", 1);
    mb_graph *body =
        sub_create(&b, b.graph, 2, (const char *[]){"acc", "x"}, NULL);
    sub_node(&b, body, "Add", 2, (const char *[]){"acc", "x"}, "acc_out");
    sub_node(&b, body, "Identity", 1, (const char *[]){"acc_out"}, "step");
    sub_output(&b, body, "acc_out");
    sub_output(&b, body, "step");
    attach(&b, "body", body);
    gb_output(&b, "final", MB_DTYPE_FLOAT, 2, sd);
    gb_output(&b, "steps", MB_DTYPE_FLOAT, 3, bd);
    mb_model *m = gb_finish(&b);
    mb_tensor *xs[1] = {tensor_of(MB_DTYPE_FLOAT, 3, bd, V(1, 2, 3, 4, 5, 6))};
    int rc = expect_run_error(m, xs, "Scan",
                              "sequence_lens must hold one length per batch "
                              "element (2), not 1");
    free_tensors(xs, 1);
    mb_model_free(m);
    if (rc)
      return rc;
  }
  free_tensors(in, 1);
  return 0;
}

/* A hybrid runtime runs the nodes around an If natively and the If on the
 * reference interpreter; the result matches the reference's. */
TEST(hybrid_falls_back_around_control_flow) {
  graph_builder b;
  gb_init(&b, 16);
  int64_t xd[2] = {2, 8};
  gb_input(&b, "x", MB_DTYPE_FLOAT, 2, xd);
  gb_input(&b, "c", MB_DTYPE_BOOL, 0, NULL);
  const char *r = GB_OP(&b, "Relu", "x");
  const char *y = GB_OP(&b, "If", "c");
  mb_graph *t = sub_create(&b, b.graph, 0, NULL, NULL);
  sub_node(&b, t, "Sigmoid", 1, (const char *[]){r}, "s");
  sub_output(&b, t, "s");
  mb_graph *e = sub_create(&b, b.graph, 0, NULL, NULL);
  sub_node(&b, e, "Neg", 1, (const char *[]){r}, "n");
  sub_output(&b, e, "n");
  attach(&b, "then_branch", t);
  attach(&b, "else_branch", e);
  const char *z = GB_OP(&b, "Tanh", y);
  gb_output(&b, z, MB_DTYPE_FLOAT, 2, xd);
  mb_model *m = gb_finish(&b);
  ASSERT(m);
  double xs[16];
  for (int i = 0; i < 16; i++)
    xs[i] = (i - 7) * 0.3;
  mb_tensor *in[2] = {tensor_of(MB_DTYPE_FLOAT, 2, xd, xs),
                      tensor_of(MB_DTYPE_BOOL, 0, NULL, V(0))};
  mb_tensor *want[1] = {0};
  ASSERT_EQ(run_reference(m, in, want), 0);
  static const char *const names[] = {"xnnpack", "onednn"};
  for (size_t k = 0; k < MB_ARRAY_COUNT(names); k++) {
    const mb_runtime *rt = mb__runtime_find(names[k]);
    mb_runtime_info info = {0};
    if (!rt || (rt->probe(&info), !info.available)) {
      fprintf(stderr, "  %s unavailable: skipped\n", names[k]);
      continue;
    }
    mb_runtime_options opts = {.threads = 1,
                               .precision = MB_PRECISION_FP32,
                               .example_inputs = (const mb_tensor *const *)in};
    void *session = NULL;
    mb_tensor *got[1] = {0};
    mb_error err = {0};
    ASSERT_OK(rt->prepare(m, NULL, 0, &opts, &session, &err), &err);
    ASSERT_OK(rt->run(session, (const mb_tensor *const *)in, &err), &err);
    ASSERT_OK(rt->fetch_outputs(session, got, &err), &err);
    rt->release(session);
    for (int i = 0; i < 16; i++)
      ASSERT_NEAR(mb__tensor_get_f64(got[0], i), mb__tensor_get_f64(want[0], i),
                  1e-5);
    free_tensors(got, 1);
  }
  free_tensors(in, 2);
  free_tensors(want, 1);
  mb_model_free(m);
  return 0;
}

/* A Loop growing a sequence one tensor per iteration (SequenceInsert on
 * the carried sequence): 50 iterations give 50 tensors; 10,000 would copy
 * the growing sequence (twice per iteration) some 100 million times: the
 * Loop stops at the copy budget, an error naming it, instead of running
 * for minutes. */
TEST(loop_grown_sequence_is_bounded) {
  int64_t xd[1] = {2};
  mb_tensor *in[1] = {tensor_of(MB_DTYPE_FLOAT, 1, xd, V(1, 2))};
  static const double trips[2] = {50, 10000};
  for (int big = 0; big < 2; big++) {
    graph_builder b;
    gb_init(&b, 13);
    gb_input(&b, "x", MB_DTYPE_FLOAT, 1, xd);
    const char *m_trip =
        gb_const(&b, MB_DTYPE_INT64, 0, NULL, (const double[]){trips[big]});
    const char *cond0 = gb_const(&b, MB_DTYPE_BOOL, 0, NULL, V(1));
    const char *seq0 = GB_OP(&b, "SequenceEmpty");
    const char *grown = "grown";
    gb_node_outs(&b, "Loop", 3, (const char *[]){m_trip, cond0, seq0}, 1,
                 &grown);
    static const mb_dtype body_types[] = {MB_DTYPE_INT64, MB_DTYPE_BOOL,
                                          MB_DTYPE_FLOAT};
    mb_graph *body =
        sub_create(&b, b.graph, 3, (const char *[]){"i", "c", "s"}, body_types);
    if (body) /* "s" is a sequence */
      body->values[body->inputs[2]].type = MB_VALUE_TYPE_SEQUENCE;
    sub_node(&b, body, "Identity", 1, (const char *[]){"c"}, "c_out");
    sub_node(&b, body, "SequenceInsert", 2, (const char *[]){"s", "x"},
             "s_out");
    sub_output(&b, body, "c_out");
    sub_output(&b, body, "s_out");
    attach(&b, "body", body);
    const char *len = GB_OP(&b, "SequenceLength", grown);
    gb_output(&b, len, MB_DTYPE_INT64, 0, NULL);
    mb_model *m = gb_finish(&b);
    ASSERT(m);
    int rc = 0;
    if (big) {
      rc = expect_run_error(m, in, "Loop", "copied 16777216 tensors");
    } else {
      mb_tensor *out[1] = {0};
      rc = run_one(m, in, out);
      if (!rc && mb__tensor_get_f64(out[0], 0) != 50)
        rc = 1;
      free_tensors(out, 1);
    }
    mb_model_free(m);
    if (rc) {
      free_tensors(in, 1);
      return rc;
    }
  }
  free_tensors(in, 1);
  return 0;
}

/* An int64 scalar initializer holding v exactly (gb_const goes through a
 * double, which cannot hold INT64_MAX). */
static const char *const_i64(graph_builder *b, int64_t v) {
  const char *name = gb_const(b, MB_DTYPE_INT64, 0, NULL, V(0));
  if (!gb_failed(b)) {
    int at = mb__graph_find_value(b->graph, name);
    *(int64_t *)b->graph->values[at].initializer->data = v;
  }
  return name;
}

/* Loop(M, true, acc = 10) whose body adds 1 to acc, collects i and
 * continues while i < stop - 1 (so the condition alone runs `stop`
 * iterations; stop < 0: never false). */
static mb_model *counting_loop(int64_t m, int64_t stop) {
  graph_builder b;
  gb_init(&b, 16);
  const char *m_trip = const_i64(&b, m);
  const char *cond0 = gb_const(&b, MB_DTYPE_BOOL, 0, NULL, V(1));
  const char *acc0 = const_i64(&b, 10);
  const char *last = const_i64(&b, stop < 0 ? INT64_MAX : stop - 1);
  const char *one = const_i64(&b, 1);
  const char *outs[2] = {"acc_final", "trace"};
  gb_node_outs(&b, "Loop", 3, (const char *[]){m_trip, cond0, acc0}, 2, outs);
  /* Scalars throughout: ONNX Runtime wants the body's shapes declared. */
  static const char *const body_ins[] = {"i", "c", "acc"};
  static const mb_dtype body_types[] = {MB_DTYPE_INT64, MB_DTYPE_BOOL,
                                        MB_DTYPE_INT64};
  mb_graph *body = sub_create(&b, b.graph, 0, NULL, NULL);
  for (int k = 0; k < 3 && body && !gb_failed(&b); k++)
    mb__graph_add_input(body, body_ins[k], body_types[k], 0, NULL, NULL,
                        &b.err);
  sub_node(&b, body, "Less", 2, (const char *[]){"i", last}, "c_out");
  sub_node(&b, body, "Add", 2, (const char *[]){"acc", one}, "acc_out");
  sub_node(&b, body, "Identity", 1, (const char *[]){"i"}, "i_out");
  static const char *const body_outs[] = {"c_out", "acc_out", "i_out"};
  static const mb_dtype out_types[] = {MB_DTYPE_BOOL, MB_DTYPE_INT64,
                                       MB_DTYPE_INT64};
  for (int k = 0; k < 3 && body && !gb_failed(&b); k++)
    mb__graph_add_output(body, body_outs[k], out_types[k], 0, NULL, NULL,
                         &b.err);
  attach(&b, "body", body);
  gb_output(&b, "acc_final", MB_DTYPE_INT64, 0, NULL);
  gb_output(&b, "trace", MB_DTYPE_INT64, 1, (const int64_t[]){-1});
  return gb_finish(&b);
}

/* M is read as an integer: INT64_MAX (what PyTorch exports for a while
 * loop) and 2^62 leave the condition to stop the loop, as on ONNX Runtime.
 * Through a double, INT64_MAX became 2^63, which converted back to
 * INT64_MIN on x86: the loop ran zero times. M = 0 and every negative M
 * run none (ONNX's `for (i = 0; i < M && cond; ++i)`, and ONNX
 * Runtime's), leaving acc as it came in and the trace empty. */
TEST(loop_trip_count_is_an_integer) {
  static const struct {
    int64_t m, stop, iterations;
  } cases[] = {
      {INT64_MAX, 3, 3},
      {INT64_C(1) << 62, 3, 3},
      {(INT64_C(1) << 53) + 1, 4, 4}, /* not a double */
      {2, 3, 2},                      /* M before the condition */
      {0, 3, 0},
      {-1, 3, 0},
      {INT64_MIN, 3, 0},
  };
  for (size_t c = 0; c < MB_ARRAY_COUNT(cases); c++) {
    mb_model *m = counting_loop(cases[c].m, cases[c].stop);
    ASSERT(m);
    mb_tensor *out[2] = {0};
    ASSERT_EQ(run_one(m, NULL, out), 0);
    int64_t n = cases[c].iterations;
    ASSERT_EQ(mb__tensor_get_i64(out[0], 0), 10 + n);
    ASSERT_EQ(out[1]->rank, 1);
    ASSERT_EQ(out[1]->dims[0], n);
    for (int64_t i = 0; i < n; i++)
      ASSERT_EQ(mb__tensor_get_i64(out[1], i), i);
    /* ONNX Runtime, where installed, agrees. */
    mb_tensor *ort[2] = {0};
    int rc = run_onnxruntime(m, NULL, ort);
    if (rc >= 0) {
      ASSERT_EQ(rc, 0);
      ASSERT_EQ(mb__tensor_get_i64(ort[0], 0), 10 + n);
      ASSERT_EQ(ort[1]->numel, n);
    }
    free_tensors(ort, 2);
    free_tensors(out, 2);
    mb_model_free(m);
  }
  /* The interpreter's bound still holds with an M of INT64_MAX beside a
   * condition that never turns false. */
  int64_t saved = mb__loop_max_iterations;
  mb__loop_max_iterations = 100;
  mb_model *m = counting_loop(INT64_MAX, -1);
  int rc = expect_run_error(m, NULL, "Loop", "the loop ran 100 iterations");
  mb_model_free(m);
  mb__loop_max_iterations = saved;
  if (rc)
    return rc;
  /* A float M is no trip count (ONNX types it int64). */
  {
    graph_builder b;
    gb_init(&b, 16);
    const char *m_trip = gb_const(&b, MB_DTYPE_FLOAT, 0, NULL, V(3));
    const char *acc0 = const_i64(&b, 10);
    const char *acc = "acc_final";
    gb_node_outs(&b, "Loop", 3, (const char *[]){m_trip, "", acc0}, 1, &acc);
    static const mb_dtype body_types[] = {MB_DTYPE_INT64, MB_DTYPE_BOOL,
                                          MB_DTYPE_INT64};
    mb_graph *body = sub_create(&b, b.graph, 3,
                                (const char *[]){"i", "c", "acc"}, body_types);
    sub_node(&b, body, "Identity", 1, (const char *[]){"c"}, "c_out");
    sub_node(&b, body, "Identity", 1, (const char *[]){"acc"}, "acc_out");
    sub_output(&b, body, "c_out");
    sub_output(&b, body, "acc_out");
    attach(&b, "body", body);
    gb_output(&b, acc, MB_DTYPE_INT64, 0, NULL);
    m = gb_finish(&b);
    rc = expect_run_error(m, NULL, "Loop", "must be an integer, not float");
    mb_model_free(m);
  }
  return rc;
}

TEST_MAIN(TEST_ENTRY(scan_axes_and_directions),
          TEST_ENTRY(loop_condition_and_outer_scopes),
          TEST_ENTRY(split_and_concat_sequences),
          TEST_ENTRY(errors_name_node_and_fault),
          TEST_ENTRY(hybrid_falls_back_around_control_flow),
          TEST_ENTRY(loop_grown_sequence_is_bounded),
          TEST_ENTRY(loop_trip_count_is_an_integer))
