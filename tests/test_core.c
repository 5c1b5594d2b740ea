/* Core: status strings, tensors, half precision, comparison, graph IR
 * construction and finalisation errors, and the interpreter's input checks. */
#include "core/ir.h"
#include "test.h"

#include <math.h>

TEST(status_strings) {
  ASSERT_STR_EQ(mb_status_string(MB_STATUS_OK), "ok");
  ASSERT_STR_EQ(mb_status_string((mb_status)999), "unknown status");
  ASSERT_STR_EQ(mb_dtype_name(MB_DTYPE_FLOAT), "float32");
  ASSERT_EQ(mb_dtype_size(MB_DTYPE_INT64), 8);
  ASSERT_EQ(mb_dtype_size(MB_DTYPE_STRING), 0);
  ASSERT_EQ(mb_dtype_from_name("bf16"), MB_DTYPE_BFLOAT16);
  ASSERT_EQ(mb_dtype_from_name("int64"), MB_DTYPE_INT64);
  ASSERT_EQ(mb_dtype_from_name("nope"), MB_DTYPE_UNDEFINED);
  return 0;
}

TEST(tensor_create_and_overflow) {
  mb_error err = {0};
  mb_tensor *t = NULL;
  int64_t dims[4] = {1, 3, 5, 7};
  ASSERT_OK(mb_tensor_create(MB_DTYPE_FLOAT, 4, dims, &t, &err), &err);
  ASSERT_EQ(t->numel, 105);
  ASSERT_EQ(t->nbytes, 420);
  ASSERT_EQ((uintptr_t)t->data % MB_TENSOR_ALIGNMENT, 0);
  mb_tensor *c = NULL;
  ((float *)t->data)[104] = 2.5f;
  ASSERT_OK(mb_tensor_clone(t, &c, &err), &err);
  ASSERT_EQ(((float *)c->data)[104], 2.5f);
  mb_tensor_free(c);
  mb_tensor_free(t);

  int64_t huge[3] = {INT64_C(1) << 40, INT64_C(1) << 40, 4};
  t = NULL;
  ASSERT_EQ(mb_tensor_create(MB_DTYPE_FLOAT, 3, huge, &t, &err),
            MB_STATUS_OVERFLOW);
  ASSERT(t == NULL);
  ASSERT_CONTAINS(err.message, "overflow");
  int64_t neg[1] = {-3};
  ASSERT_EQ(mb_tensor_create(MB_DTYPE_FLOAT, 1, neg, &t, &err),
            MB_STATUS_OVERFLOW);
  int64_t big[2] = {INT64_C(1) << 30, INT64_C(1) << 20};
  ASSERT_EQ(mb_tensor_create(MB_DTYPE_FLOAT, 2, big, &t, &err),
            MB_STATUS_OVERFLOW);
  ASSERT_EQ(mb_tensor_create(MB_DTYPE_STRING, 1, dims, &t, &err),
            MB_STATUS_UNSUPPORTED);
  int64_t zero[2] = {0, 5};
  ASSERT_OK(mb_tensor_create(MB_DTYPE_INT64, 2, zero, &t, &err), &err);
  ASSERT_EQ(t->numel, 0);
  mb_tensor_free(t);
  return 0;
}

TEST(half_precision) {
  const float values[] = {
      0.0f,     1.0f,           -2.0f,          0.333251953125f,
      65504.0f, 6.1035156e-05f, 5.9604645e-08f, -1.5e-7f};
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
    float back = mb__f16_to_f32(mb__f32_to_f16(values[i]));
    ASSERT_NEAR(back, values[i], fabsf(values[i]) * 1e-3f + 6e-8f);
  }
  ASSERT_EQ(mb__f32_to_f16(1.0f), 0x3c00);
  ASSERT_EQ(mb__f32_to_f16(65520.0f), 0x7c00); /* rounds to infinity */
  ASSERT(isinf(mb__f16_to_f32(0x7c00)));
  ASSERT(isnan(mb__f16_to_f32(mb__f32_to_f16(NAN))));
  /* 1 + 2^-11 is halfway between two halves: ties go to even (1.0) */
  ASSERT_EQ(mb__f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);
  ASSERT_EQ(mb__f32_to_bf16(1.0f), 0x3f80);
  ASSERT_EQ(mb__bf16_to_f32(0x4049), 3.140625f);
  ASSERT(isnan(mb__bf16_to_f32(mb__f32_to_bf16(NAN))));
  return 0;
}

TEST(compare) {
  mb_error err = {0};
  mb_tensor *a = NULL, *b = NULL;
  int64_t dims[1] = {4};
  ASSERT_OK(mb_tensor_create(MB_DTYPE_FLOAT, 1, dims, &a, &err), &err);
  ASSERT_OK(mb_tensor_create(MB_DTYPE_FLOAT, 1, dims, &b, &err), &err);
  float *pa = a->data, *pb = b->data;
  for (int i = 0; i < 4; i++)
    pa[i] = pb[i] = (float)i + 1;
  pa[3] = 4.01f;
  pa[0] = pb[0] = NAN;
  mb_compare_result r;
  ASSERT_OK(mb_tensor_compare(a, b, 1e-3, 1e-5, &r, &err), &err);
  ASSERT(r.shape_match);
  ASSERT_NEAR(r.max_abs_err, 0.01, 1e-5);
  ASSERT_EQ(r.n_bad, 1);
  ASSERT_OK(mb_tensor_compare(a, b, 1e-2, 1e-5, &r, &err), &err);
  ASSERT_EQ(r.n_bad, 0);
  ASSERT(r.cosine > 0.999);
  int64_t other[2] = {2, 2};
  mb_tensor *c = NULL;
  ASSERT_OK(mb_tensor_create(MB_DTYPE_FLOAT, 2, other, &c, &err), &err);
  ASSERT_OK(mb_tensor_compare(a, c, 1e-3, 1e-5, &r, &err), &err);
  ASSERT(!r.shape_match);
  ASSERT(r.n_bad > 0);
  mb_tensor_free(a);
  mb_tensor_free(b);
  mb_tensor_free(c);
  /* 64-bit integers that round to one double: 2^60 and 2^60 + 1 differ by 1,
   * which a zero tolerance must see (in doubles the difference was 0). */
  static const mb_dtype wide[2] = {MB_DTYPE_INT64, MB_DTYPE_UINT64};
  for (int w = 0; w < 2; w++) {
    int64_t two[1] = {2};
    ASSERT_OK(mb_tensor_create(wide[w], 1, two, &a, &err), &err);
    ASSERT_OK(mb_tensor_create(wide[w], 1, two, &b, &err), &err);
    uint64_t *ua = a->data, *ub = b->data;
    ua[0] = UINT64_C(1) << 60;
    ub[0] = (UINT64_C(1) << 60) + 1;
    ua[1] = ub[1] = UINT64_C(1) << 63; /* equal: never a difference */
    ASSERT_OK(mb_tensor_compare(a, b, 0, 0, &r, &err), &err);
    ASSERT_EQ(r.n_bad, 1);
    ASSERT_NEAR(r.max_abs_err, 1, 0);
    ASSERT_OK(mb_tensor_compare(a, b, 1e-9, 0, &r, &err), &err);
    ASSERT_EQ(r.n_bad, 0);
    mb_tensor_free(a);
    mb_tensor_free(b);
  }
  return 0;
}

/* x -> Relu -> y, with declared input shape [batch, 4]. */
static mb_model *relu_model(void) {
  mb_error err = {0};
  mb_model *m = mb__model_create();
  if (!m)
    return NULL;
  mb_graph *g = m->graph;
  int64_t dims[2] = {-1, 4};
  const char *params[2] = {"batch", NULL};
  const char *in[1] = {"x"}, *out[1] = {"y"};
  if (mb__model_set_opset(m, "", 17, &err) ||
      mb__graph_add_input(g, "x", MB_DTYPE_FLOAT, 2, dims, params, &err) < 0 ||
      mb__graph_add_node(g, "Relu", "", "relu1", 1, in, 1, out, &err) < 0 ||
      mb__graph_add_output(g, "y", MB_DTYPE_FLOAT, 2, dims, params, &err) < 0 ||
      mb__graph_finalize(g, &err)) {
    mb_model_free(m);
    return NULL;
  }
  return m;
}

TEST(graph_never_produced_input) {
  mb_error err = {0};
  mb_model *m = mb__model_create();
  ASSERT(m);
  const char *in[2] = {"x", "ghost"}, *out[1] = {"y"};
  int64_t dims[1] = {3};
  ASSERT(mb__graph_add_input(m->graph, "x", MB_DTYPE_FLOAT, 1, dims, NULL,
                             &err) >= 0);
  ASSERT(mb__graph_add_node(m->graph, "Add", "", "add1", 2, in, 1, out, &err) >=
         0);
  ASSERT(mb__graph_add_output(m->graph, "y", MB_DTYPE_FLOAT, 1, dims, NULL,
                              &err) >= 0);
  ASSERT_EQ(mb__graph_finalize(m->graph, &err), MB_STATUS_PARSE);
  ASSERT_CONTAINS(err.message, "add1");
  ASSERT_CONTAINS(err.message, "ghost");
  mb_model_free(m);
  return 0;
}

TEST(graph_cycle_and_sort) {
  mb_error err = {0};
  mb_model *m = mb__model_create();
  ASSERT(m);
  mb_graph *g = m->graph;
  int64_t dims[1] = {3};
  /* nodes added in reverse order must come out sorted */
  const char *a_in[1] = {"t"}, *a_out[1] = {"y"};
  const char *b_in[1] = {"x"}, *b_out[1] = {"t"};
  ASSERT(mb__graph_add_input(g, "x", MB_DTYPE_FLOAT, 1, dims, NULL, &err) >= 0);
  ASSERT(mb__graph_add_node(g, "Relu", "", "second", 1, a_in, 1, a_out, &err) >=
         0);
  ASSERT(mb__graph_add_node(g, "Relu", "", "first", 1, b_in, 1, b_out, &err) >=
         0);
  ASSERT(mb__graph_add_output(g, "y", MB_DTYPE_FLOAT, 1, dims, NULL, &err) >=
         0);
  ASSERT_OK(mb__graph_finalize(g, &err), &err);
  ASSERT_STR_EQ(g->nodes[0].name, "first");
  ASSERT_STR_EQ(g->nodes[1].name, "second");
  mb_model_free(m);

  m = mb__model_create();
  ASSERT(m);
  g = m->graph;
  const char *c1_in[1] = {"b"}, *c1_out[1] = {"a"};
  const char *c2_in[1] = {"a"}, *c2_out[1] = {"b"};
  ASSERT(mb__graph_add_node(g, "Relu", "", "loop1", 1, c1_in, 1, c1_out,
                            &err) >= 0);
  ASSERT(mb__graph_add_node(g, "Relu", "", "loop2", 1, c2_in, 1, c2_out,
                            &err) >= 0);
  ASSERT(mb__graph_add_output(g, "b", MB_DTYPE_FLOAT, 1, dims, NULL, &err) >=
         0);
  ASSERT_EQ(mb__graph_finalize(g, &err), MB_STATUS_PARSE);
  ASSERT_CONTAINS(err.message, "cycle");
  mb_model_free(m);
  return 0;
}

TEST(session_input_checks) {
  mb_error err = {0};
  mb_model *m = relu_model();
  ASSERT(m);
  mb_session *s = NULL;
  ASSERT_OK(mb_session_create(m, NULL, &s, &err), &err);
  mb_tensor *x = NULL, *y[1] = {NULL};
  int64_t good[2] = {3, 4}, bad[2] = {3, 5};
  ASSERT_OK(mb_tensor_create(MB_DTYPE_FLOAT, 2, good, &x, &err), &err);
  float *px = x->data;
  for (int i = 0; i < 12; i++)
    px[i] = (float)(i - 6);
  const mb_tensor *ins[1] = {x};
  ASSERT_OK(mb_session_run(s, 1, ins, 1, y, &err), &err);
  ASSERT_EQ(y[0]->dims[0], 3);
  ASSERT_EQ(((float *)y[0]->data)[0], 0.0f);
  ASSERT_EQ(((float *)y[0]->data)[11], 5.0f);
  ASSERT_STR_EQ(y[0]->name, "y");
  mb_tensor_free(y[0]);
  mb_tensor_free(x);

  /* wrong static dim */
  ASSERT_OK(mb_tensor_create(MB_DTYPE_FLOAT, 2, bad, &x, &err), &err);
  ins[0] = x;
  ASSERT_EQ(mb_session_run(s, 1, ins, 1, y, &err), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(err.message, "'x'");
  ASSERT_CONTAINS(err.message, "[batch,4]");
  ASSERT(y[0] == NULL);
  mb_tensor_free(x);
  /* wrong dtype */
  ASSERT_OK(mb_tensor_create(MB_DTYPE_INT64, 2, good, &x, &err), &err);
  ins[0] = x;
  ASSERT_EQ(mb_session_run(s, 1, ins, 1, y, &err), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(err.message, "float32");
  mb_tensor_free(x);
  /* wrong rank */
  ASSERT_OK(mb_tensor_create(MB_DTYPE_FLOAT, 1, good, &x, &err), &err);
  ins[0] = x;
  ASSERT_EQ(mb_session_run(s, 1, ins, 1, y, &err), MB_STATUS_SHAPE);
  mb_tensor_free(x);
  /* wrong input count */
  ASSERT_EQ(mb_session_run(s, 0, NULL, 1, y, &err), MB_STATUS_INVALID_ARGUMENT);
  mb_session_free(s);
  mb_model_free(m);
  return 0;
}

TEST(session_unsupported_op) {
  mb_error err = {0};
  mb_model *m = mb__model_create();
  ASSERT(m);
  int64_t dims[1] = {3};
  const char *in[1] = {"x"}, *out[1] = {"y"};
  ASSERT_OK(mb__model_set_opset(m, "", 17, &err), &err);
  ASSERT(mb__graph_add_input(m->graph, "x", MB_DTYPE_FLOAT, 1, dims, NULL,
                             &err) >= 0);
  ASSERT(mb__graph_add_node(m->graph, "FancyOp", "", "fancy1", 1, in, 1, out,
                            &err) >= 0);
  ASSERT(mb__graph_add_output(m->graph, "y", MB_DTYPE_FLOAT, 1, dims, NULL,
                              &err) >= 0);
  ASSERT_OK(mb__graph_finalize(m->graph, &err), &err);
  mb_session *s = NULL;
  ASSERT_EQ(mb_session_create(m, NULL, &s, &err), MB_STATUS_UNSUPPORTED);
  ASSERT(s == NULL);
  ASSERT_CONTAINS(err.message, "fancy1");
  ASSERT_CONTAINS(err.message, "FancyOp");
  char buf[64];
  ASSERT_EQ(mb_model_unsupported_ops(m, buf, sizeof buf), 1);
  ASSERT_STR_EQ(buf, "FancyOp");
  mb_model_free(m);
  return 0;
}

TEST_MAIN(TEST_ENTRY(status_strings), TEST_ENTRY(tensor_create_and_overflow),
          TEST_ENTRY(half_precision), TEST_ENTRY(compare),
          TEST_ENTRY(graph_never_produced_input),
          TEST_ENTRY(graph_cycle_and_sort), TEST_ENTRY(session_input_checks),
          TEST_ENTRY(session_unsupported_op))
