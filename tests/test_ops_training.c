/* The optimizer steps of ai.onnx.preview.training (src/ops/training.c):
 * Adam over two groups with epsilon set, as the backend suite's
 * test_adam_multiple means it (its model lacks the epsilon attribute its
 * expected outputs were computed with, onnx/onnx#7749; the values below are
 * that test's outputs), and the errors a user can reach. */
#include "op_harness.h"

#define V(...)                                                                 \
  (const double[]) {                                                           \
    __VA_ARGS__                                                                \
  }

static const char *const training = "ai.onnx.preview.training";

static mb_status run_case(op_case *c, mb_tensor **in, int n_in, mb_tensor **out,
                          int n_out) {
  for (int i = 0; i < n_out; i++)
    out[i] = empty_output();
  return case_run(c, 1, in, n_in, out, n_out);
}

TEST(adam_two_groups) {
  int64_t one[1] = {1}, two[1] = {2};
  mb_tensor *in[10] = {
      tensor_of(MB_DTYPE_FLOAT, 0, NULL, V(0.1)),
      tensor_of(MB_DTYPE_INT64, 0, NULL, V(0)),
      tensor_of(MB_DTYPE_FLOAT, 1, one, V(1.0)),
      tensor_of(MB_DTYPE_FLOAT, 1, two, V(1.0, 2.0)),
      tensor_of(MB_DTYPE_FLOAT, 1, one, V(-1.0)),
      tensor_of(MB_DTYPE_FLOAT, 1, two, V(-1.0, -3.0)),
      tensor_of(MB_DTYPE_FLOAT, 1, one, V(2.0)),
      tensor_of(MB_DTYPE_FLOAT, 1, two, V(4.0, 1.0)),
      tensor_of(MB_DTYPE_FLOAT, 1, one, V(0.5)),
      tensor_of(MB_DTYPE_FLOAT, 1, two, V(1.0, 10.0)),
  };
  mb_tensor *out[6] = {NULL};
  /* X1' X2' V1' V2' H1' H2', flattened. */
  static const double want[] = {0.75913626, 0.6286528, 1.9745853,
                                1.85005,    3.75005,   0.80009997,
                                0.5747002,  0.9997002, 9.848201};
  op_case c;
  ASSERT_EQ(case_init(&c, training, "Adam", 10, 6), 0);
  case_float(&c, "alpha", 0.95f);
  case_float(&c, "beta", 0.85f);
  case_float(&c, "norm_coefficient", 0.001f);
  case_float(&c, "epsilon", 0.01f);
  ASSERT_OK(run_case(&c, in, 10, out, 6), &c.err);
  int k = 0;
  for (int j = 0; j < 6; j++) {
    ASSERT_EQ(out[j]->dtype, MB_DTYPE_FLOAT);
    ASSERT_EQ(out[j]->numel, j % 2 ? 2 : 1);
    for (int64_t e = 0; e < out[j]->numel; e++, k++)
      ASSERT_NEAR(mb__tensor_get_f64(out[j], e), want[k], 1e-5);
  }
  free_tensors(out, 6);
  case_free(&c);
  free_tensors(in, 10);
  return 0;
}

/* Inputs that do not make groups, a non-scalar R, a gradient unlike its
 * weight: each refused with a message naming the node. */
TEST(optimizer_errors_name_the_node) {
  int64_t two[1] = {2}, three[1] = {3};
  mb_tensor *in[5] = {
      tensor_of(MB_DTYPE_FLOAT, 0, NULL, V(0.1)),
      tensor_of(MB_DTYPE_INT64, 0, NULL, V(1)),
      tensor_of(MB_DTYPE_FLOAT, 1, two, V(1.0, 2.0)),
      tensor_of(MB_DTYPE_FLOAT, 1, two, V(0.5, 0.5)),
      tensor_of(MB_DTYPE_FLOAT, 1, two, V(0.0, 0.0)),
  };
  mb_tensor *out[2] = {NULL};
  op_case c;

  /* Adagrad X G H with a fourth output. */
  ASSERT_EQ(case_init(&c, training, "Adagrad", 5, 3), 0);
  mb_tensor *out3[3] = {NULL};
  ASSERT_EQ(run_case(&c, in, 5, out3, 3), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(c.err.message, "Adagrad 'n'");
  ASSERT_CONTAINS(c.err.message, "groups of 3");
  free_tensors(out3, 3);
  case_free(&c);

  /* Momentum with a gradient of another size. */
  mb_tensor *g3 = tensor_of(MB_DTYPE_FLOAT, 1, three, V(1, 2, 3));
  mb_tensor *in_g[5] = {in[0], in[1], in[2], g3, in[4]};
  ASSERT_EQ(case_init(&c, training, "Momentum", 5, 2), 0);
  case_float(&c, "alpha", 0.9f);
  case_float(&c, "beta", 0.1f);
  case_float(&c, "norm_coefficient", 0.0f);
  case_string(&c, "mode", "standard");
  ASSERT_EQ(run_case(&c, in_g, 5, out, 2), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(c.err.message, "input 3");
  free_tensors(out, 2);
  case_free(&c);
  mb_tensor_free(g3);

  /* R given as a vector. */
  mb_tensor *r2 = tensor_of(MB_DTYPE_FLOAT, 1, two, V(0.1, 0.2));
  mb_tensor *in_r[5] = {r2, in[1], in[2], in[3], in[4]};
  ASSERT_EQ(case_init(&c, training, "Adagrad", 5, 2), 0);
  ASSERT_EQ(run_case(&c, in_r, 5, out, 2), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(c.err.message, "R must be one float");
  free_tensors(out, 2);
  case_free(&c);
  mb_tensor_free(r2);

  /* Momentum's mode must be one of the two. */
  ASSERT_EQ(case_init(&c, training, "Momentum", 5, 2), 0);
  case_float(&c, "alpha", 0.9f);
  case_float(&c, "beta", 0.1f);
  case_float(&c, "norm_coefficient", 0.0f);
  case_string(&c, "mode", "heavy-ball");
  ASSERT_EQ(run_case(&c, in, 5, out, 2), MB_STATUS_PARSE);
  ASSERT_CONTAINS(c.err.message, "'heavy-ball'");
  free_tensors(out, 2);
  case_free(&c);

  free_tensors(in, 5);
  return 0;
}

TEST_MAIN(TEST_ENTRY(adam_two_groups),
          TEST_ENTRY(optimizer_errors_name_the_node))
