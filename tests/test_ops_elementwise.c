/* Elementwise, reduction and normalisation kernels against naive reference
 * computations written here from the ONNX definitions. Each case builds a
 * one-node graph and drives the operator row through infer + run by hand,
 * as the interpreter does: broadcasting shapes ([2,3,4] + [3,1], [1] +
 * [2,3], rank-0 scalars), float16, integer edge cases (division by zero,
 * INT_MIN / -1, wrapping), opset-dependent semantics and error paths. */
#include "ops/op.h"
#include "test.h"

#include <stdlib.h>

/* ------------------------------------------------------------------------ */
/* Harness: one node, hand-made op context                                   */
/* ------------------------------------------------------------------------ */

typedef struct op_case {
  mb_model *model;
  int node;
  mb_error err;
  void *scratch[MB_OP_SCRATCH_SLOTS];
  size_t scratch_size[MB_OP_SCRATCH_SLOTS];
  mb_tensor *in[5];
  mb_tensor *out[3];
  int n_in, n_out;
} op_case;

static const char *const input_names[] = {"i0", "i1", "i2", "i3", "i4"};
static const char *const output_names[] = {"o0", "o1", "o2"};

static int case_init(op_case *c, const char *op_type, int n_in, int n_out) {
  memset(c, 0, sizeof *c);
  c->n_in = n_in;
  c->n_out = n_out;
  c->model = mb__model_create();
  if (!c->model)
    return 1;
  c->node = mb__graph_add_node(c->model->graph, op_type, "", "n", n_in,
                               input_names, n_out, output_names, &c->err);
  for (int i = 0; i < n_out; i++)
    c->out[i] = calloc(1, sizeof(mb_tensor));
  return c->node < 0;
}

static void case_free(op_case *c) {
  for (int i = 0; i < MB_OP_SCRATCH_SLOTS; i++)
    mb__aligned_free(c->scratch[i]);
  for (int i = 0; i < 5; i++)
    mb_tensor_free(c->in[i]);
  for (int i = 0; i < 3; i++)
    mb_tensor_free(c->out[i]);
  mb_model_free(c->model);
}

static void set_int(op_case *c, const char *name, int64_t v) {
  mb__node_set_int(c->model->graph, c->node, name, v, &c->err);
}
static void set_float(op_case *c, const char *name, float v) {
  mb__node_set_float(c->model->graph, c->node, name, v, &c->err);
}
static void set_ints(op_case *c, const char *name, int n, const int64_t *v) {
  mb__node_set_ints(c->model->graph, c->node, name, n, v, &c->err);
}
static void set_string(op_case *c, const char *name, const char *v) {
  mb__node_set_string(c->model->graph, c->node, name, v, &c->err);
}

/* Input i from doubles, converted to dtype. */
static void set_input(op_case *c, int i, mb_dtype dtype, int rank,
                      const int64_t *dims, const double *values) {
  mb_tensor_free(c->in[i]);
  c->in[i] = NULL;
  if (mb_tensor_create(dtype, rank, dims, &c->in[i], &c->err))
    return;
  for (int64_t k = 0; k < c->in[i]->numel; k++)
    mb__tensor_set_f64(c->in[i], k, values[k]);
}

/* Fills input i with a deterministic pattern in [-2, 2). */
static void set_pattern(op_case *c, int i, mb_dtype dtype, int rank,
                        const int64_t *dims, int seed) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++)
    n *= dims[d];
  double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  for (int64_t k = 0; k < n; k++)
    v[k] = ((double)((k * 37 + seed * 11) % 64) - 32.0) / 16.0;
  set_input(c, i, dtype, rank, dims, v);
  free(v);
}

/* Runs infer, allocates the outputs, runs. */
static mb_status case_run(op_case *c, int64_t opset) {
  const mb_node *node = &c->model->graph->nodes[c->node];
  const mb_op_def *def = mb__op_find("", node->op_type, opset);
  if (!def)
    return mb__error(&c->err, MB_STATUS_UNSUPPORTED, "no row for %s",
                     node->op_type);
  mb_op_ctx ctx = {0};
  ctx.node = node;
  ctx.graph = c->model->graph;
  ctx.opset = opset;
  ctx.n_inputs = c->n_in;
  ctx.inputs = c->in;
  ctx.n_outputs = c->n_out;
  ctx.outputs = c->out;
  ctx.threads = 1;
  ctx.err = &c->err;
  ctx.scratch = c->scratch;
  ctx.scratch_size = c->scratch_size;
  mb_status status = def->infer(&ctx);
  if (status)
    return status;
  for (int i = 0; i < c->n_out; i++) {
    mb_tensor *t = c->out[i];
    if (t &&
        (status = mb__tensor_reset(t, t->dtype, t->rank, t->dims, &c->err)))
      return status;
  }
  return def->run(&ctx);
}

static double in_at(const op_case *c, int i, int64_t k) {
  return mb__tensor_get_f64(c->in[i], k);
}
static double out_at(const op_case *c, int i, int64_t k) {
  return mb__tensor_get_f64(c->out[i], k);
}

/* Offset into a tensor of shape (rank, dims) of output element `k` of the
 * broadcast shape (out_rank, out_dims), numpy rules. */
static int64_t bcast_offset(int rank, const int64_t *dims, int out_rank,
                            const int64_t *out_dims, int64_t k) {
  int64_t off = 0, stride = 1;
  for (int d = out_rank - 1; d >= 0; d--) {
    int64_t idx = k % out_dims[d];
    k /= out_dims[d];
    int sd = d - (out_rank - rank);
    if (sd >= 0) {
      if (dims[sd] != 1)
        off += idx * stride;
      stride *= dims[sd];
    }
  }
  return off;
}

static bool same_dims(const mb_tensor *t, int rank, const int64_t *dims) {
  if (t->rank != rank)
    return false;
  for (int d = 0; d < rank; d++)
    if (t->dims[d] != dims[d])
      return false;
  return true;
}

/* ------------------------------------------------------------------------ */
/* Binary operators and broadcasting                                         */
/* ------------------------------------------------------------------------ */

typedef double (*ref_binary)(double a, double b);
static double ref_add(double a, double b) {
  return a + b;
}
static double ref_mul(double a, double b) {
  return a * b;
}
static double ref_sub(double a, double b) {
  return a - b;
}
static double ref_less(double a, double b) {
  return a < b;
}

/* Runs op on two patterned inputs and checks every output element. */
static int check_binary(const char *op, mb_dtype dtype, ref_binary ref, int ra,
                        const int64_t *da, int rb, const int64_t *db,
                        int out_rank, const int64_t *out_dims,
                        mb_dtype out_dtype, double tol) {
  op_case c;
  ASSERT_EQ(case_init(&c, op, 2, 1), 0);
  set_pattern(&c, 0, dtype, ra, da, 1);
  set_pattern(&c, 1, dtype, rb, db, 2);
  ASSERT_OK(case_run(&c, 17), &c.err);
  const mb_tensor *y = c.out[0];
  ASSERT_EQ(y->dtype, out_dtype);
  ASSERT(same_dims(y, out_rank, out_dims));
  for (int64_t k = 0; k < y->numel; k++) {
    double a = in_at(&c, 0, bcast_offset(ra, da, out_rank, out_dims, k));
    double b = in_at(&c, 1, bcast_offset(rb, db, out_rank, out_dims, k));
    ASSERT_NEAR(out_at(&c, 0, k), ref(a, b), tol);
  }
  case_free(&c);
  return 0;
}

TEST(add_broadcast_shapes) {
  const int64_t d234[] = {2, 3, 4}, d31[] = {3, 1}, d1[] = {1}, d23[] = {2, 3};
  const int64_t d14[] = {1, 4}, d21[] = {2, 1}, d24[] = {2, 4};
  if (check_binary("Add", MB_DTYPE_FLOAT, ref_add, 3, d234, 2, d31, 3, d234,
                   MB_DTYPE_FLOAT, 1e-6))
    return 1;
  if (check_binary("Add", MB_DTYPE_FLOAT, ref_add, 1, d1, 2, d23, 2, d23,
                   MB_DTYPE_FLOAT, 1e-6))
    return 1;
  /* Both operands broadcast: [1,4] * [2,1] -> [2,4]. */
  if (check_binary("Mul", MB_DTYPE_DOUBLE, ref_mul, 2, d14, 2, d21, 2, d24,
                   MB_DTYPE_DOUBLE, 1e-12))
    return 1;
  /* Rank-0 scalars on either side and on both. */
  if (check_binary("Sub", MB_DTYPE_FLOAT, ref_sub, 0, NULL, 3, d234, 3, d234,
                   MB_DTYPE_FLOAT, 1e-6))
    return 1;
  if (check_binary("Sub", MB_DTYPE_INT32, ref_sub, 0, NULL, 0, NULL, 0, NULL,
                   MB_DTYPE_INT32, 0))
    return 1;
  return check_binary("Less", MB_DTYPE_INT64, ref_less, 3, d234, 1, d1, 3, d234,
                      MB_DTYPE_BOOL, 0);
}

TEST(add_float16) {
  const int64_t d234[] = {2, 3, 4}, d4[] = {4};
  /* Inputs are exact in float16; the sum rounds once to float16. */
  return check_binary("Add", MB_DTYPE_FLOAT16, ref_add, 3, d234, 1, d4, 3, d234,
                      MB_DTYPE_FLOAT16, 2e-3);
}

TEST(add_legacy_axis_broadcast) {
  /* Opset 6: B [3] lines up with A [2,3,4] at axis 1 (not numpy's rule). */
  op_case c;
  const int64_t da[] = {2, 3, 4}, db[] = {3};
  ASSERT_EQ(case_init(&c, "Add", 2, 1), 0);
  set_int(&c, "broadcast", 1);
  set_int(&c, "axis", 1);
  set_pattern(&c, 0, MB_DTYPE_FLOAT, 3, da, 1);
  const double b[] = {100, 200, 300};
  set_input(&c, 1, MB_DTYPE_FLOAT, 1, db, b);
  ASSERT_OK(case_run(&c, 6), &c.err);
  ASSERT(same_dims(c.out[0], 3, da));
  for (int64_t k = 0; k < 24; k++)
    ASSERT_NEAR(out_at(&c, 0, k), in_at(&c, 0, k) + b[(k / 4) % 3], 1e-4);
  case_free(&c);
  return 0;
}

TEST(prelu_legacy_channel_slope) {
  op_case c;
  const int64_t dx[] = {2, 3, 2}, ds[] = {3};
  const double slope[] = {0.5, 2, -1};
  ASSERT_EQ(case_init(&c, "PRelu", 2, 1), 0);
  set_pattern(&c, 0, MB_DTYPE_FLOAT, 3, dx, 3);
  set_input(&c, 1, MB_DTYPE_FLOAT, 1, ds, slope);
  ASSERT_OK(case_run(&c, 6), &c.err);
  for (int64_t k = 0; k < 12; k++) {
    double x = in_at(&c, 0, k);
    ASSERT_NEAR(out_at(&c, 0, k), x < 0 ? x * slope[(k / 2) % 3] : x, 1e-6);
  }
  case_free(&c);
  return 0;
}

/* Integer division and modulo: numpy-style Mod, C-style Div and fmod, and
 * no undefined behaviour on division by zero or INT_MIN / -1. */
TEST(integer_div_mod) {
  const int64_t d[] = {6};
  const double a[] = {7, -7, 7, -7, (double)INT32_MIN, 5};
  const double b[] = {3, 3, -3, -3, -1, 0};
  const struct {
    const char *op;
    int64_t fmod;
    double want[6];
  } cases[] = {
      {"Div", 0, {2, -2, -2, 2, (double)INT32_MIN, 0}},
      {"Mod", 0, {1, 2, -2, -1, 0, 0}},
      {"Mod", 1, {1, -1, 1, -1, 0, 0}},
  };
  for (size_t i = 0; i < MB_ARRAY_COUNT(cases); i++) {
    op_case c;
    ASSERT_EQ(case_init(&c, cases[i].op, 2, 1), 0);
    if (cases[i].fmod)
      set_int(&c, "fmod", 1);
    set_input(&c, 0, MB_DTYPE_INT32, 1, d, a);
    set_input(&c, 1, MB_DTYPE_INT32, 1, d, b);
    ASSERT_OK(case_run(&c, 13), &c.err);
    for (int k = 0; k < 6; k++)
      ASSERT_EQ(out_at(&c, 0, k), cases[i].want[k]);
    case_free(&c);
  }
  return 0;
}

TEST(float_mod_signs) {
  op_case c;
  const int64_t d[] = {4};
  const double a[] = {5.5, -5.5, 5.5, -5.5}, b[] = {2, 2, -2, -2};
  const double numpy_mod[] = {1.5, 0.5, -0.5, -1.5};
  ASSERT_EQ(case_init(&c, "Mod", 2, 1), 0);
  set_input(&c, 0, MB_DTYPE_FLOAT, 1, d, a);
  set_input(&c, 1, MB_DTYPE_FLOAT, 1, d, b);
  ASSERT_OK(case_run(&c, 13), &c.err);
  for (int k = 0; k < 4; k++)
    ASSERT_NEAR(out_at(&c, 0, k), numpy_mod[k], 1e-6);
  case_free(&c);
  return 0;
}

TEST(uint8_wraps) {
  op_case c;
  const int64_t d[] = {3};
  const double a[] = {250, 3, 128}, b[] = {10, 5, 2};
  ASSERT_EQ(case_init(&c, "Sub", 2, 1), 0);
  set_input(&c, 0, MB_DTYPE_UINT8, 1, d, a);
  set_input(&c, 1, MB_DTYPE_UINT8, 1, d, b);
  ASSERT_OK(case_run(&c, 14), &c.err);
  ASSERT_EQ(out_at(&c, 0, 0), 240);
  ASSERT_EQ(out_at(&c, 0, 1), 254); /* 3 - 5 wraps */
  ASSERT_EQ(out_at(&c, 0, 2), 126);
  case_free(&c);
  return 0;
}

TEST(pow_mixed_types) {
  const int64_t d[] = {3};
  op_case c;
  /* float base, int64 exponent -> float */
  ASSERT_EQ(case_init(&c, "Pow", 2, 1), 0);
  const double base[] = {2, -3, 0.5}, ex[] = {3, 2, -1};
  set_input(&c, 0, MB_DTYPE_FLOAT, 1, d, base);
  set_input(&c, 1, MB_DTYPE_INT64, 1, d, ex);
  ASSERT_OK(case_run(&c, 15), &c.err);
  ASSERT_EQ(c.out[0]->dtype, MB_DTYPE_FLOAT);
  ASSERT_NEAR(out_at(&c, 0, 0), 8, 1e-6);
  ASSERT_NEAR(out_at(&c, 0, 1), 9, 1e-6);
  ASSERT_NEAR(out_at(&c, 0, 2), 2, 1e-6);
  case_free(&c);
  /* int32 base, float exponent -> int32, truncated */
  ASSERT_EQ(case_init(&c, "Pow", 2, 1), 0);
  const double ib[] = {2, 9, 5}, fe[] = {0.5, 0.5, 2};
  set_input(&c, 0, MB_DTYPE_INT32, 1, d, ib);
  set_input(&c, 1, MB_DTYPE_FLOAT, 1, d, fe);
  ASSERT_OK(case_run(&c, 15), &c.err);
  ASSERT_EQ(c.out[0]->dtype, MB_DTYPE_INT32);
  ASSERT_EQ(out_at(&c, 0, 0), 1);
  ASSERT_EQ(out_at(&c, 0, 1), 3);
  ASSERT_EQ(out_at(&c, 0, 2), 25);
  case_free(&c);
  return 0;
}

TEST(where_three_way_broadcast) {
  op_case c;
  const int64_t dc[] = {2, 1}, dx[] = {3}, dy[] = {1, 1, 3};
  const double cond[] = {1, 0}, x[] = {1, 2, 3}, y[] = {-1, -2, -3};
  ASSERT_EQ(case_init(&c, "Where", 3, 1), 0);
  set_input(&c, 0, MB_DTYPE_BOOL, 2, dc, cond);
  set_input(&c, 1, MB_DTYPE_INT64, 1, dx, x);
  set_input(&c, 2, MB_DTYPE_INT64, 3, dy, y);
  ASSERT_OK(case_run(&c, 16), &c.err);
  const int64_t want_dims[] = {1, 2, 3};
  ASSERT(same_dims(c.out[0], 3, want_dims));
  const double want[] = {1, 2, 3, -1, -2, -3};
  for (int k = 0; k < 6; k++)
    ASSERT_EQ(out_at(&c, 0, k), want[k]);
  case_free(&c);
  return 0;
}

TEST(variadic_sum_max_mean) {
  const int64_t d23[] = {2, 3}, d3[] = {3}, d21[] = {2, 1};
  const char *ops[] = {"Sum", "Max", "Mean"};
  for (int o = 0; o < 3; o++) {
    op_case c;
    ASSERT_EQ(case_init(&c, ops[o], 3, 1), 0);
    set_pattern(&c, 0, MB_DTYPE_FLOAT, 2, d23, 1);
    set_pattern(&c, 1, MB_DTYPE_FLOAT, 1, d3, 2);
    set_pattern(&c, 2, MB_DTYPE_FLOAT, 2, d21, 3);
    ASSERT_OK(case_run(&c, 13), &c.err);
    ASSERT(same_dims(c.out[0], 2, d23));
    for (int64_t k = 0; k < 6; k++) {
      double a = in_at(&c, 0, k), b = in_at(&c, 1, k % 3),
             e = in_at(&c, 2, k / 3);
      double want = o == 0   ? a + b + e
                    : o == 1 ? fmax(a, fmax(b, e))
                             : (a + b + e) / 3;
      ASSERT_NEAR(out_at(&c, 0, k), want, 1e-5);
    }
    case_free(&c);
  }
  return 0;
}

TEST(binary_errors) {
  op_case c;
  const int64_t d23[] = {2, 3}, d4[] = {4};
  /* Mismatched element types. */
  ASSERT_EQ(case_init(&c, "Add", 2, 1), 0);
  set_pattern(&c, 0, MB_DTYPE_FLOAT, 2, d23, 1);
  set_pattern(&c, 1, MB_DTYPE_INT64, 2, d23, 2);
  ASSERT_EQ(case_run(&c, 14), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(c.err.message, "int64");
  case_free(&c);
  /* Shapes that do not broadcast. */
  ASSERT_EQ(case_init(&c, "Mul", 2, 1), 0);
  set_pattern(&c, 0, MB_DTYPE_FLOAT, 2, d23, 1);
  set_pattern(&c, 1, MB_DTYPE_FLOAT, 1, d4, 2);
  ASSERT_NE(case_run(&c, 14), MB_STATUS_OK);
  ASSERT_CONTAINS(c.err.message, "Mul");
  case_free(&c);
  /* A type without kernels. */
  ASSERT_EQ(case_init(&c, "And", 2, 1), 0);
  set_pattern(&c, 0, MB_DTYPE_FLOAT, 2, d23, 1);
  set_pattern(&c, 1, MB_DTYPE_FLOAT, 2, d23, 2);
  ASSERT_EQ(case_run(&c, 7), MB_STATUS_UNSUPPORTED);
  case_free(&c);
  /* BitShift with a bad direction. */
  ASSERT_EQ(case_init(&c, "BitShift", 2, 1), 0);
  set_string(&c, "direction", "UP");
  set_pattern(&c, 0, MB_DTYPE_UINT8, 1, d4, 1);
  set_pattern(&c, 1, MB_DTYPE_UINT8, 1, d4, 2);
  ASSERT_EQ(case_run(&c, 11), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(c.err.message, "direction");
  case_free(&c);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Unary operators, Clip, Cast, Dropout                                      */
/* ------------------------------------------------------------------------ */

TEST(unary_activations) {
  const int64_t d[] = {2, 3, 4};
  const struct {
    const char *op;
    mb_dtype dtype;
    double tol;
  } cases[] = {
      {"Relu", MB_DTYPE_FLOAT, 0},         {"Sigmoid", MB_DTYPE_FLOAT, 1e-6},
      {"Sigmoid", MB_DTYPE_FLOAT16, 2e-3}, {"Tanh", MB_DTYPE_DOUBLE, 1e-12},
      {"Erf", MB_DTYPE_FLOAT, 1e-6},       {"LeakyRelu", MB_DTYPE_FLOAT, 1e-7},
      {"Softplus", MB_DTYPE_FLOAT, 1e-6},  {"HardSwish", MB_DTYPE_FLOAT, 1e-6},
      {"Round", MB_DTYPE_FLOAT, 0},
  };
  for (size_t i = 0; i < MB_ARRAY_COUNT(cases); i++) {
    op_case c;
    ASSERT_EQ(case_init(&c, cases[i].op, 1, 1), 0);
    set_pattern(&c, 0, cases[i].dtype, 3, d, (int)i);
    ASSERT_OK(case_run(&c, 17), &c.err);
    ASSERT_EQ(c.out[0]->dtype, cases[i].dtype);
    for (int64_t k = 0; k < 24; k++) {
      double x = in_at(&c, 0, k), want = 0;
      switch (i) {
      case 0:
        want = x > 0 ? x : 0;
        break;
      case 1:
      case 2:
        want = 1 / (1 + exp(-x));
        break;
      case 3:
        want = tanh(x);
        break;
      case 4:
        want = erf(x);
        break;
      case 5:
        want = x < 0 ? 0.01 * x : x;
        break;
      case 6:
        want = log(1 + exp(x));
        break;
      case 7:
        want = x * fmin(1, fmax(0, x / 6 + 0.5));
        break;
      case 8:
        want = nearbyint(x);
        break;
      }
      ASSERT_NEAR(out_at(&c, 0, k), want, cases[i].tol);
    }
    case_free(&c);
  }
  return 0;
}

TEST(round_half_to_even) {
  op_case c;
  const int64_t d[] = {6};
  const double x[] = {0.5, 1.5, 2.5, -0.5, -1.5, 2.4};
  const double want[] = {0, 2, 2, -0.0, -2, 2};
  ASSERT_EQ(case_init(&c, "Round", 1, 1), 0);
  set_input(&c, 0, MB_DTYPE_FLOAT, 1, d, x);
  ASSERT_OK(case_run(&c, 11), &c.err);
  for (int k = 0; k < 6; k++)
    ASSERT_EQ(out_at(&c, 0, k), want[k]);
  case_free(&c);
  return 0;
}

TEST(integer_unary) {
  op_case c;
  const int64_t d[] = {4};
  const double x[] = {-5, 0, 7, (double)INT8_MIN};
  ASSERT_EQ(case_init(&c, "Abs", 1, 1), 0);
  set_input(&c, 0, MB_DTYPE_INT8, 1, d, x);
  ASSERT_OK(case_run(&c, 13), &c.err);
  ASSERT_EQ(out_at(&c, 0, 0), 5);
  ASSERT_EQ(out_at(&c, 0, 2), 7);
  ASSERT_EQ(out_at(&c, 0, 3), INT8_MIN); /* wraps like numpy */
  case_free(&c);
  ASSERT_EQ(case_init(&c, "Sign", 1, 1), 0);
  set_input(&c, 0, MB_DTYPE_INT64, 1, d, x);
  ASSERT_OK(case_run(&c, 13), &c.err);
  ASSERT_EQ(out_at(&c, 0, 0), -1);
  ASSERT_EQ(out_at(&c, 0, 1), 0);
  ASSERT_EQ(out_at(&c, 0, 2), 1);
  case_free(&c);
  /* Sqrt has no integer kernel. */
  ASSERT_EQ(case_init(&c, "Sqrt", 1, 1), 0);
  set_input(&c, 0, MB_DTYPE_INT64, 1, d, x);
  ASSERT_EQ(case_run(&c, 13), MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(c.err.message, "int64");
  case_free(&c);
  return 0;
}

TEST(clip_attributes_and_inputs) {
  const int64_t d[] = {5};
  const double x[] = {-3, -1, 0, 1, 3};
  op_case c;
  /* Opset 6: attributes. */
  ASSERT_EQ(case_init(&c, "Clip", 1, 1), 0);
  set_float(&c, "min", -1.5f);
  set_float(&c, "max", 2);
  set_input(&c, 0, MB_DTYPE_FLOAT, 1, d, x);
  ASSERT_OK(case_run(&c, 6), &c.err);
  const double want[] = {-1.5, -1, 0, 1, 2};
  for (int k = 0; k < 5; k++)
    ASSERT_NEAR(out_at(&c, 0, k), want[k], 1e-7);
  case_free(&c);
  /* Opset 13: int8 with only max given (min omitted). */
  ASSERT_EQ(case_init(&c, "Clip", 3, 1), 0);
  set_input(&c, 0, MB_DTYPE_INT8, 1, d, x);
  const double hi = 0;
  set_input(&c, 2, MB_DTYPE_INT8, 0, NULL, &hi);
  ASSERT_OK(case_run(&c, 13), &c.err);
  const double want_i[] = {-3, -1, 0, 0, 0};
  for (int k = 0; k < 5; k++)
    ASSERT_EQ(out_at(&c, 0, k), want_i[k]);
  case_free(&c);
  return 0;
}

TEST(cast_conversions) {
  const int64_t d[] = {6};
  const double x[] = {1.7, -1.7, 300, NAN, 0, 65504};
  op_case c;
  /* float -> int8 truncates toward zero and saturates; NaN gives 0. */
  ASSERT_EQ(case_init(&c, "Cast", 1, 1), 0);
  set_int(&c, "to", MB_DTYPE_INT8);
  set_input(&c, 0, MB_DTYPE_FLOAT, 1, d, x);
  ASSERT_OK(case_run(&c, 13), &c.err);
  ASSERT_EQ(c.out[0]->dtype, MB_DTYPE_INT8);
  const double want[] = {1, -1, 127, 0, 0, 127};
  for (int k = 0; k < 6; k++)
    ASSERT_EQ(out_at(&c, 0, k), want[k]);
  case_free(&c);
  /* float -> float16 -> exact values survive; float -> bool. */
  ASSERT_EQ(case_init(&c, "Cast", 1, 1), 0);
  set_int(&c, "to", MB_DTYPE_FLOAT16);
  set_input(&c, 0, MB_DTYPE_FLOAT, 1, d, x);
  ASSERT_OK(case_run(&c, 13), &c.err);
  ASSERT_NEAR(out_at(&c, 0, 4), 0, 0);
  ASSERT_NEAR(out_at(&c, 0, 5), 65504, 0);
  ASSERT_NEAR(out_at(&c, 0, 0), 1.7, 1e-3);
  case_free(&c);
  ASSERT_EQ(case_init(&c, "Cast", 1, 1), 0);
  set_int(&c, "to", MB_DTYPE_BOOL);
  set_input(&c, 0, MB_DTYPE_FLOAT, 1, d, x);
  ASSERT_OK(case_run(&c, 13), &c.err);
  const double want_b[] = {1, 1, 1, 1, 0, 1};
  for (int k = 0; k < 6; k++)
    ASSERT_EQ(out_at(&c, 0, k), want_b[k]);
  case_free(&c);
  /* Strings are rejected with a message. */
  ASSERT_EQ(case_init(&c, "Cast", 1, 1), 0);
  set_int(&c, "to", MB_DTYPE_STRING);
  set_input(&c, 0, MB_DTYPE_FLOAT, 1, d, x);
  ASSERT_EQ(case_run(&c, 13), MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(c.err.message, "string");
  case_free(&c);
  return 0;
}

TEST(dropout_inference_and_training) {
  const int64_t d[] = {2, 2};
  op_case c;
  ASSERT_EQ(case_init(&c, "Dropout", 1, 2), 0);
  set_pattern(&c, 0, MB_DTYPE_FLOAT, 2, d, 1);
  ASSERT_OK(case_run(&c, 13), &c.err);
  ASSERT_EQ(c.out[1]->dtype, MB_DTYPE_BOOL);
  for (int k = 0; k < 4; k++) {
    ASSERT_EQ(out_at(&c, 0, k), in_at(&c, 0, k));
    ASSERT_EQ(out_at(&c, 1, k), 1);
  }
  case_free(&c);
  /* Training mode with a non-zero ratio is random: unsupported. */
  ASSERT_EQ(case_init(&c, "Dropout", 3, 1), 0);
  set_pattern(&c, 0, MB_DTYPE_FLOAT, 2, d, 1);
  const double ratio = 0.5, training = 1;
  set_input(&c, 1, MB_DTYPE_FLOAT, 0, NULL, &ratio);
  set_input(&c, 2, MB_DTYPE_BOOL, 0, NULL, &training);
  ASSERT_EQ(case_run(&c, 13), MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(c.err.message, "training");
  case_free(&c);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Reductions                                                                */
/* ------------------------------------------------------------------------ */

/* Reduces [2,3,4] over `axes` with keepdims, checking against a naive sum
 * or max computed here. */
static int check_reduce(const char *op, int64_t opset, mb_dtype dtype,
                        int n_axes, const int64_t *axes, int keepdims) {
  const int64_t d[] = {2, 3, 4};
  op_case c;
  bool axes_input = strcmp(op, "ReduceSum") == 0 && opset >= 13;
  ASSERT_EQ(case_init(&c, op, axes_input ? 2 : 1, 1), 0);
  set_pattern(&c, 0, dtype, 3, d, 5);
  if (axes_input) {
    double av[3];
    int64_t da[] = {n_axes};
    for (int i = 0; i < n_axes; i++)
      av[i] = (double)axes[i];
    set_input(&c, 1, MB_DTYPE_INT64, 1, da, av);
  } else {
    set_ints(&c, "axes", n_axes, axes);
  }
  set_int(&c, "keepdims", keepdims);
  ASSERT_OK(case_run(&c, opset), &c.err);
  bool red[3] = {false, false, false};
  for (int i = 0; i < n_axes; i++)
    red[axes[i] < 0 ? axes[i] + 3 : axes[i]] = true;
  int64_t out_dims[3];
  int out_rank = 0;
  for (int k = 0; k < 3; k++)
    if (!red[k] || keepdims)
      out_dims[out_rank++] = red[k] ? 1 : d[k];
  ASSERT(same_dims(c.out[0], out_rank, out_dims));
  bool is_max = strcmp(op, "ReduceMax") == 0;
  bool is_mean = strcmp(op, "ReduceMean") == 0;
  for (int64_t o = 0; o < c.out[0]->numel; o++) {
    double acc = is_max ? -INFINITY : 0;
    int64_t count = 0;
    for (int64_t k = 0; k < 24; k++) {
      int64_t idx[3] = {k / 12, (k / 4) % 3, k % 4}, oo = 0;
      for (int dd = 0; dd < 3; dd++)
        if (!red[dd])
          oo = oo * d[dd] + idx[dd];
      if (oo != o)
        continue;
      double v = in_at(&c, 0, k);
      acc = is_max ? fmax(acc, v) : acc + v;
      count++;
    }
    if (is_mean)
      acc /= (double)count;
    ASSERT_NEAR(out_at(&c, 0, o), acc, dtype == MB_DTYPE_FLOAT16 ? 2e-3 : 1e-5);
  }
  case_free(&c);
  return 0;
}

TEST(reduce_axes) {
  const int64_t a1[] = {1}, a02[] = {0, 2}, am1[] = {-1}, a2[] = {2};
  if (check_reduce("ReduceSum", 13, MB_DTYPE_FLOAT, 1, a1, 0) ||
      check_reduce("ReduceSum", 11, MB_DTYPE_FLOAT, 2, a02, 1) ||
      check_reduce("ReduceMean", 13, MB_DTYPE_FLOAT, 1, am1, 1) ||
      check_reduce("ReduceMean", 13, MB_DTYPE_FLOAT16, 1, a1, 0) ||
      check_reduce("ReduceMax", 13, MB_DTYPE_INT32, 2, a02, 0) ||
      check_reduce("ReduceSum", 13, MB_DTYPE_INT64, 1, a2, 1))
    return 1;
  return 0;
}

TEST(reduce_empty_axes) {
  const int64_t d[] = {2, 3};
  const int64_t none[] = {0};
  for (int noop = 0; noop < 2; noop++) {
    op_case c;
    ASSERT_EQ(case_init(&c, "ReduceSum", 2, 1), 0);
    set_pattern(&c, 0, MB_DTYPE_FLOAT, 2, d, 1);
    set_input(&c, 1, MB_DTYPE_INT64, 1, none, NULL);
    set_int(&c, "noop_with_empty_axes", noop);
    ASSERT_OK(case_run(&c, 13), &c.err);
    if (noop) {
      ASSERT(same_dims(c.out[0], 2, d));
      ASSERT_EQ(out_at(&c, 0, 4), in_at(&c, 0, 4));
    } else {
      const int64_t ones[] = {1, 1};
      double sum = 0;
      for (int k = 0; k < 6; k++)
        sum += in_at(&c, 0, k);
      ASSERT(same_dims(c.out[0], 2, ones));
      ASSERT_NEAR(out_at(&c, 0, 0), sum, 1e-5);
    }
    case_free(&c);
  }
  return 0;
}

TEST(reduce_log_sum_exp_large) {
  /* Values whose exp overflows float and double: the result stays finite. */
  const int64_t d[] = {1, 3};
  const double x[] = {1000, 1000, 999};
  const int64_t axes[] = {1};
  op_case c;
  ASSERT_EQ(case_init(&c, "ReduceLogSumExp", 1, 1), 0);
  set_ints(&c, "axes", 1, axes);
  set_input(&c, 0, MB_DTYPE_FLOAT, 2, d, x);
  ASSERT_OK(case_run(&c, 13), &c.err);
  ASSERT_NEAR(out_at(&c, 0, 0), 1000 + log(2 + exp(-1)), 1e-3);
  case_free(&c);
  return 0;
}

TEST(argmax_select_last) {
  const int64_t d[] = {2, 3};
  const double x[] = {1, 5, 5, 7, 2, 7};
  for (int last = 0; last < 2; last++) {
    op_case c;
    ASSERT_EQ(case_init(&c, "ArgMax", 1, 1), 0);
    set_int(&c, "axis", 1);
    set_int(&c, "keepdims", 0);
    set_int(&c, "select_last_index", last);
    set_input(&c, 0, MB_DTYPE_FLOAT, 2, d, x);
    ASSERT_OK(case_run(&c, 13), &c.err);
    ASSERT_EQ(c.out[0]->dtype, MB_DTYPE_INT64);
    ASSERT_EQ(c.out[0]->rank, 1);
    ASSERT_EQ(out_at(&c, 0, 0), last ? 2 : 1);
    ASSERT_EQ(out_at(&c, 0, 1), last ? 2 : 0);
    case_free(&c);
  }
  return 0;
}

TEST(reduce_bad_axis) {
  const int64_t d[] = {2, 3}, axes[] = {2};
  op_case c;
  ASSERT_EQ(case_init(&c, "ReduceMean", 1, 1), 0);
  set_ints(&c, "axes", 1, axes);
  set_pattern(&c, 0, MB_DTYPE_FLOAT, 2, d, 1);
  ASSERT_NE(case_run(&c, 13), MB_STATUS_OK);
  ASSERT_CONTAINS(c.err.message, "ReduceMean");
  case_free(&c);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Normalisations                                                            */
/* ------------------------------------------------------------------------ */

/* Softmax over axis 1 of [2,3,4] (opset 13) vs. over the flattened [2,12]
 * rows (opset 11, axis 1). */
TEST(softmax_opset_semantics) {
  const int64_t d[] = {2, 3, 4};
  for (int v13 = 0; v13 < 2; v13++) {
    op_case c;
    ASSERT_EQ(case_init(&c, "Softmax", 1, 1), 0);
    set_int(&c, "axis", 1);
    set_pattern(&c, 0, MB_DTYPE_FLOAT, 3, d, 7);
    ASSERT_OK(case_run(&c, v13 ? 13 : 11), &c.err);
    for (int64_t k = 0; k < 24; k++) {
      int64_t b = k / 12, j = k % 4;
      double mx = -INFINITY, sum = 0;
      for (int64_t i = 0; i < (v13 ? 3 : 12); i++) {
        int64_t kk = v13 ? b * 12 + i * 4 + j : b * 12 + i;
        mx = fmax(mx, in_at(&c, 0, kk));
      }
      for (int64_t i = 0; i < (v13 ? 3 : 12); i++) {
        int64_t kk = v13 ? b * 12 + i * 4 + j : b * 12 + i;
        sum += exp(in_at(&c, 0, kk) - mx);
      }
      ASSERT_NEAR(out_at(&c, 0, k), exp(in_at(&c, 0, k) - mx) / sum, 1e-6);
    }
    case_free(&c);
  }
  return 0;
}

TEST(log_softmax_and_hardmax) {
  const int64_t d[] = {2, 3};
  const double x[] = {1, 3, 3, -1, 0, 2};
  op_case c;
  ASSERT_EQ(case_init(&c, "Hardmax", 1, 1), 0);
  set_input(&c, 0, MB_DTYPE_FLOAT, 2, d, x);
  ASSERT_OK(case_run(&c, 13), &c.err);
  const double hard[] = {0, 1, 0, 0, 0, 1}; /* first maximum wins */
  for (int k = 0; k < 6; k++)
    ASSERT_EQ(out_at(&c, 0, k), hard[k]);
  case_free(&c);
  ASSERT_EQ(case_init(&c, "LogSoftmax", 1, 1), 0);
  set_input(&c, 0, MB_DTYPE_DOUBLE, 2, d, x);
  ASSERT_OK(case_run(&c, 13), &c.err);
  for (int r = 0; r < 2; r++) {
    double s = 0;
    for (int j = 0; j < 3; j++)
      s += exp(x[r * 3 + j]);
    for (int j = 0; j < 3; j++)
      ASSERT_NEAR(out_at(&c, 0, r * 3 + j), x[r * 3 + j] - log(s), 1e-12);
  }
  case_free(&c);
  return 0;
}

TEST(layer_normalization) {
  const int64_t d[] = {2, 3, 4}, ds[] = {4};
  op_case c;
  ASSERT_EQ(case_init(&c, "LayerNormalization", 3, 3), 0);
  set_int(&c, "axis", -1);
  set_pattern(&c, 0, MB_DTYPE_FLOAT, 3, d, 3);
  const double scale[] = {1, 2, 0.5, -1}, bias[] = {0, 1, 2, 3};
  set_input(&c, 1, MB_DTYPE_FLOAT, 1, ds, scale);
  set_input(&c, 2, MB_DTYPE_FLOAT, 1, ds, bias);
  ASSERT_OK(case_run(&c, 17), &c.err);
  const int64_t stat_dims[] = {2, 3, 1};
  ASSERT(same_dims(c.out[1], 3, stat_dims));
  for (int r = 0; r < 6; r++) {
    double m = 0, v = 0;
    for (int j = 0; j < 4; j++)
      m += in_at(&c, 0, r * 4 + j) / 4;
    for (int j = 0; j < 4; j++)
      v += pow(in_at(&c, 0, r * 4 + j) - m, 2) / 4;
    double inv = 1 / sqrt(v + 1e-5);
    ASSERT_NEAR(out_at(&c, 1, r), m, 1e-6);
    ASSERT_NEAR(out_at(&c, 2, r), inv, 1e-4);
    for (int j = 0; j < 4; j++)
      ASSERT_NEAR(out_at(&c, 0, r * 4 + j),
                  (in_at(&c, 0, r * 4 + j) - m) * inv * scale[j] + bias[j],
                  1e-5);
  }
  case_free(&c);
  return 0;
}

TEST(batch_normalization_inference) {
  const int64_t d[] = {2, 2, 3}, dc[] = {2};
  const double scale[] = {2, 0.5}, bias[] = {1, -1}, mean[] = {0.5, -0.25},
               var[] = {4, 0.25};
  op_case c;
  ASSERT_EQ(case_init(&c, "BatchNormalization", 5, 1), 0);
  set_pattern(&c, 0, MB_DTYPE_FLOAT, 3, d, 1);
  set_input(&c, 1, MB_DTYPE_FLOAT, 1, dc, scale);
  set_input(&c, 2, MB_DTYPE_FLOAT, 1, dc, bias);
  set_input(&c, 3, MB_DTYPE_FLOAT, 1, dc, mean);
  set_input(&c, 4, MB_DTYPE_FLOAT, 1, dc, var);
  ASSERT_OK(case_run(&c, 15), &c.err);
  for (int64_t k = 0; k < 12; k++) {
    int ch = (int)((k / 3) % 2);
    double want =
        (in_at(&c, 0, k) - mean[ch]) / sqrt(var[ch] + 1e-5) * scale[ch] +
        bias[ch];
    ASSERT_NEAR(out_at(&c, 0, k), want, 1e-5);
  }
  case_free(&c);
  /* Wrong parameter length. */
  ASSERT_EQ(case_init(&c, "BatchNormalization", 5, 1), 0);
  const int64_t d3[] = {3};
  set_pattern(&c, 0, MB_DTYPE_FLOAT, 3, d, 1);
  set_pattern(&c, 1, MB_DTYPE_FLOAT, 1, d3, 1);
  set_input(&c, 2, MB_DTYPE_FLOAT, 1, dc, bias);
  set_input(&c, 3, MB_DTYPE_FLOAT, 1, dc, mean);
  set_input(&c, 4, MB_DTYPE_FLOAT, 1, dc, var);
  ASSERT_EQ(case_run(&c, 15), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(c.err.message, "scale");
  case_free(&c);
  return 0;
}

TEST_MAIN(TEST_ENTRY(add_broadcast_shapes), TEST_ENTRY(add_float16),
          TEST_ENTRY(add_legacy_axis_broadcast),
          TEST_ENTRY(prelu_legacy_channel_slope), TEST_ENTRY(integer_div_mod),
          TEST_ENTRY(float_mod_signs), TEST_ENTRY(uint8_wraps),
          TEST_ENTRY(pow_mixed_types), TEST_ENTRY(where_three_way_broadcast),
          TEST_ENTRY(variadic_sum_max_mean), TEST_ENTRY(binary_errors),
          TEST_ENTRY(unary_activations), TEST_ENTRY(round_half_to_even),
          TEST_ENTRY(integer_unary), TEST_ENTRY(clip_attributes_and_inputs),
          TEST_ENTRY(cast_conversions),
          TEST_ENTRY(dropout_inference_and_training), TEST_ENTRY(reduce_axes),
          TEST_ENTRY(reduce_empty_axes), TEST_ENTRY(reduce_log_sum_exp_large),
          TEST_ENTRY(argmax_select_last), TEST_ENTRY(reduce_bad_axis),
          TEST_ENTRY(softmax_opset_semantics),
          TEST_ENTRY(log_softmax_and_hardmax), TEST_ENTRY(layer_normalization),
          TEST_ENTRY(batch_normalization_inference))
