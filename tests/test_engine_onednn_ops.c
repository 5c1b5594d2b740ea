/* The oneDNN engine's operator families against the reference
 * interpreter (elementwise, pooling and normalizations, data movement),
 * as test_engine_onednn.c does for convolutions, products, segments and
 * int8: small graphs with odd shapes and broadcasts, run once on the
 * reference session and once as a single oneDNN segment, compared by
 * normalised error (fp32 at 1 and 2 threads) and, where the CPU computes
 * bf16 natively, by cosine similarity; the per-primitive profile shows
 * what was fused and which kernel ran. Everything is skipped (and passes)
 * when the engine's probe says it is unavailable. */
#include "runtime/engine.h"
#include "test.h"

static const mb_engine *engine = &mb__engine_onednn;

#include "engine_harness.h"
#include "onednn_checks.h"

#include <stdlib.h>

/* ------------------------------------------------------------------------ */
/* Elementwise                                                               */
/* ------------------------------------------------------------------------ */

static const char *const binary_ops[] = {"Add", "Sub", "Mul",
                                         "Div", "Max", "Min"};

/* A broadcast in a middle dim of a 5-D value (Swin's shifted-window mask:
 * [1, 4, 6, 7, 7] + [1, 4, 1, 7, 7]) runs on a jit kernel, its dims
 * merged, not on oneDNN's reference kernel (60x slower); also with the
 * broadcast operand first and with size-1 dims in between. */
TEST(binary_middle_broadcast) {
  SKIP_UNLESS_AVAILABLE();
  static const struct {
    int64_t a[5], b[5];
    const char *order;
  } cases[] = {
      {{1, 4, 6, 7, 7}, {1, 4, 1, 7, 7}, "a,b"},
      {{1, 4, 6, 7, 7}, {1, 4, 1, 7, 7}, "b,a"},
      {{2, 1, 6, 1, 9}, {2, 1, 1, 1, 9}, "a,b"},
      {{3, 5, 4, 2, 1}, {3, 5, 1, 1, 1}, "a,b"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    gcase c;
    char ops[256], kernels[256];
    gc_init(&c, 17);
    gc_input(&c, "a", 5, cases[k].a);
    gc_input(&c, "b", 5, cases[k].b);
    gc_node(&c, "Add", cases[k].order, "y");
    gc_output(&c, "y");
    if (profile_ops_kernels(&c, 1, ops, sizeof ops, NULL, kernels,
                            sizeof kernels))
      TEST_FAIL_("middle broadcast %zu failed", k);
    ASSERT_STR_EQ(ops, "Add");
    if (strstr(kernels, "ref"))
      TEST_FAIL_("middle broadcast %zu on a reference kernel: %s", k, kernels);
  }
  return 0;
}

TEST(binary_broadcast_constants) {
  SKIP_UNLESS_AVAILABLE();
  static const struct {
    int rank;
    int64_t dims[4];
  } consts[] = {
      {3, {3, 1, 1}}, {4, {1, 3, 1, 5}}, {1, {5}},
      {0, {0}},       {2, {4, 1}},       {4, {2, 3, 4, 5}},
  };
  for (size_t op = 0; op < 6; op++) {
    for (size_t k = 0; k < sizeof consts / sizeof consts[0]; k++) {
      gcase c;
      gc_init(&c, 13);
      int64_t x[4] = {2, 3, 4, 5};
      gc_input(&c, "x", 4, x);
      gc_const(&c, "k", consts[k].rank, consts[k].dims, NULL, 0.5f, 2.0f);
      gc_node(&c, binary_ops[op], k % 2 ? "k,x" : "x,k", "y");
      gc_output(&c, "y");
      c.lo = 0.5f; /* Div by x stays away from 0 */
      c.hi = 2.0f;
      c.no_bf16 = op == 1; /* differences of close values */
      if (check_graph(&c))
        TEST_FAIL_("%s with constant %zu failed", binary_ops[op], k);
    }
  }
  return 0;
}

TEST(binary_two_activations) {
  SKIP_UNLESS_AVAILABLE();
  static const struct {
    int ra;
    int64_t a[5];
    int rb;
    int64_t b[5];
    int a_broadcasts;
  } shapes[] = {
      {4, {2, 3, 4, 5}, 4, {2, 1, 4, 1}, 0},
      {4, {2, 1, 4, 1}, 4, {2, 3, 4, 5}, 1},
      {3, {2, 5, 7}, 1, {7}, 0},
      {1, {7}, 3, {2, 5, 7}, 1},
      {4, {1, 4, 3, 3}, 1, {1}, 0},
      {5, {2, 1, 3, 2, 2}, 5, {2, 4, 3, 2, 2}, 1},
      {2, {6, 4}, 2, {6, 4}, 0},
  };
  for (size_t op = 0; op < 6; op++) {
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
      gcase c;
      gc_init(&c, 13);
      gc_input(&c, "a", shapes[k].ra, shapes[k].a);
      gc_input(&c, "b", shapes[k].rb, shapes[k].b);
      gc_node(&c, binary_ops[op], "a,b", "y");
      gc_output(&c, "y");
      c.lo = 0.5f;
      c.hi = 2.0f;
      c.no_bf16 = op == 1;
      if (op == 3 && shapes[k].a_broadcasts) {
        /* Div whose dividend broadcasts: not run on oneDNN */
        if (check_rejected(&c, 0, "broadcasting"))
          TEST_FAIL_("Div on shapes %zu not rejected", k);
        continue;
      }
      if (check_graph(&c))
        TEST_FAIL_("%s on shapes %zu failed", binary_ops[op], k);
    }
  }
  /* c / x for a scalar constant c, and x - x. */
  gcase c;
  int64_t x[3] = {2, 3, 4};
  gc_init(&c, 13);
  gc_input(&c, "x", 3, x);
  gc_scalar(&c, "k", 3.0f);
  gc_node(&c, "Div", "k,x", "d");
  gc_node(&c, "Sub", "d,d", "z");
  gc_node(&c, "Add", "z,d", "y");
  gc_output(&c, "y");
  c.lo = 0.5f;
  c.hi = 2.0f;
  return check_graph(&c);
}

TEST(unary_ops) {
  SKIP_UNLESS_AVAILABLE();
  static const struct {
    const char *op;
    float lo, hi;
  } ops[] = {
      {"Relu", -4, 4},        {"Sigmoid", -4, 4},  {"Abs", -4, 4},
      {"Neg", -4, 4},         {"Elu", -4, 4},      {"LeakyRelu", -4, 4},
      {"HardSigmoid", -4, 4}, {"Tanh", -3, 3},     {"Exp", -3, 3},
      {"Log", 0.1f, 5},       {"Sqrt", 0, 5},      {"Reciprocal", 0.5f, 3},
      {"HardSwish", -5, 5},   {"Softplus", -5, 5}, {"Identity", -1, 1},
      {"Dropout", -1, 1},
  };
  for (int rank = 2; rank <= 4; rank++) {
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
      gcase c;
      gc_init(&c, 14);
      int64_t dims[4] = {2, 5, 3, 7};
      gc_input(&c, "x", rank, dims);
      gc_node(&c, ops[i].op, "x", "y");
      if (strcmp(ops[i].op, "Elu") == 0)
        gc_float(&c, "alpha", 0.7f);
      if (strcmp(ops[i].op, "LeakyRelu") == 0)
        gc_float(&c, "alpha", 0.15f);
      if (strcmp(ops[i].op, "HardSigmoid") == 0) {
        gc_float(&c, "alpha", 0.3f);
        gc_float(&c, "beta", 0.4f);
      }
      gc_output(&c, "y");
      c.lo = ops[i].lo;
      c.hi = ops[i].hi;
      if (check_graph(&c))
        TEST_FAIL_("%s rank %d failed", ops[i].op, rank);
    }
  }
  return 0;
}

TEST(clip_and_pow) {
  SKIP_UNLESS_AVAILABLE();
  int64_t dims[4] = {1, 4, 6, 6};
  for (int form = 0; form < 3; form++) {
    gcase c;
    gc_init(&c, form == 2 ? 6 : 13);
    gc_input(&c, "x", 4, dims);
    if (form == 0) {
      gc_scalar(&c, "lo", 0.0f);
      gc_scalar(&c, "hi", 6.0f);
      gc_node(&c, "Clip", "x,lo,hi", "y");
    } else if (form == 1) {
      gc_scalar(&c, "hi", 0.5f);
      gc_node(&c, "Clip", "x,,hi", "y");
    } else {
      gc_node(&c, "Clip", "x", "y");
      gc_float(&c, "min", -0.5f);
      gc_float(&c, "max", 0.25f);
    }
    gc_output(&c, "y");
    c.lo = -8;
    c.hi = 8;
    if (check_graph(&c))
      TEST_FAIL_("clip form %d failed", form);
  }
  static const float exps[] = {2.0f, 3.0f, 0.5f, -1.0f, 1.0f};
  for (size_t i = 0; i < sizeof exps / sizeof exps[0]; i++) {
    gcase c;
    gc_init(&c, 13);
    gc_input(&c, "x", 4, dims);
    gc_scalar(&c, "p", exps[i]);
    gc_node(&c, "Pow", "x,p", "y");
    gc_output(&c, "y");
    c.lo = exps[i] == 0.5f || exps[i] == -1.0f ? 0.5f : -2.0f;
    c.hi = 2.0f;
    if (check_graph(&c))
      TEST_FAIL_("Pow %g failed", (double)exps[i]);
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Pooling and normalizations                                                */
/* ------------------------------------------------------------------------ */

typedef struct pool_spec {
  const char *op;
  int64_t h, w, kh, kw, stride[2], pads[4], dilation[2];
  int ceil_mode, count_include_pad;
  const char *auto_pad;
} pool_spec;

TEST(pool_variants) {
  SKIP_UNLESS_AVAILABLE();
  static const pool_spec specs[] = {
      {"MaxPool", 12, 12, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, 0, NULL},
      {"MaxPool", 13, 13, 3, 3, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1, 0, NULL},
      {"MaxPool", 11, 10, 2, 3, {3, 2}, {1, 0, 0, 2}, {1, 1}, 1, 0, NULL},
      {"MaxPool", 12, 12, 3, 2, {1, 2}, {1, 1, 1, 1}, {2, 2}, 0, 0, NULL},
      {"MaxPool", 9, 9, 2, 2, {3, 3}, {0, 0, 0, 0}, {1, 1}, 0, 0, NULL},
      {"MaxPool", 9, 9, 3, 3, {2, 2}, {0}, {1, 1}, 0, 0, "SAME_UPPER"},
      {"MaxPool", 8, 8, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 0, 0, NULL},
      {"AveragePool", 12, 12, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, 0, NULL},
      {"AveragePool", 12, 12, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, 1, NULL},
      {"AveragePool", 13, 11, 3, 2, {2, 2}, {1, 0, 2, 1}, {1, 1}, 1, 0, NULL},
      {"AveragePool", 10, 10, 2, 2, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0, 1, NULL},
      {"AveragePool", 9, 9, 3, 3, {2, 2}, {0}, {1, 1}, 0, 1, "SAME_LOWER"},
      {"AveragePool", 9, 9, 3, 3, {2, 2}, {0}, {1, 1}, 0, 0, "SAME_UPPER"},
      {"AveragePool", 7, 7, 2, 2, {3, 3}, {0, 0, 0, 0}, {1, 1}, 1, 0, NULL},
      {"AveragePool", 11, 9, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, 1, NULL},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    const pool_spec *s = &specs[i];
    for (int channels = 5; channels <= 32; channels += 27) {
      gcase c;
      gc_init(&c, 13);
      int64_t x[4] = {2, channels, s->h, s->w};
      gc_input(&c, "x", 4, x);
      gc_node(&c, s->op, "x", "y");
      GC_INTS(&c, "kernel_shape", s->kh, s->kw);
      gc_ints(&c, "strides", 2, s->stride);
      if (s->auto_pad)
        gc_str(&c, "auto_pad", s->auto_pad);
      else
        gc_ints(&c, "pads", 4, s->pads);
      if (strcmp(s->op, "MaxPool") == 0)
        gc_ints(&c, "dilations", 2, s->dilation);
      else
        gc_int(&c, "count_include_pad", s->count_include_pad);
      gc_int(&c, "ceil_mode", s->ceil_mode);
      gc_output(&c, "y");
      if (check_graph(&c))
        TEST_FAIL_("pool spec %zu (%s, %d channels) failed", i, s->op,
                   channels);
    }
  }
  return 0;
}

/* Pools after a conv (blocked layouts) and global pools. */
TEST(pools_after_conv) {
  SKIP_UNLESS_AVAILABLE();
  static const char *const ops[] = {"GlobalAveragePool", "GlobalMaxPool",
                                    "MaxPool", "AveragePool"};
  for (int i = 0; i < 4; i++) {
    gcase c;
    gc_init(&c, 13);
    int64_t x[4] = {2, 7, 11, 10}, w[4] = {24, 7, 3, 3};
    gc_input(&c, "x", 4, x);
    gc_const(&c, "w", 4, w, NULL, -0.3f, 0.3f);
    gc_node(&c, "Conv", "x,w", "c");
    gc_node(&c, ops[i], "c", "y");
    if (i >= 2) {
      GC_INTS(&c, "kernel_shape", 3, 3);
      GC_INTS(&c, "strides", 2, 2);
      GC_INTS(&c, "pads", 1, 1, 1, 1);
    }
    gc_output(&c, "y");
    if (check_graph(&c))
      TEST_FAIL_("%s failed", ops[i]);
  }
  return 0;
}

TEST(batchnorm) {
  SKIP_UNLESS_AVAILABLE();
  for (int rank = 2; rank <= 4; rank++) {
    gcase c;
    gc_init(&c, 13);
    int64_t x[4] = {2, 6, 5, 3}, ch[1] = {6};
    gc_input(&c, "x", rank, x);
    gc_const(&c, "scale", 1, ch, NULL, 0.5f, 1.5f);
    gc_const(&c, "bias", 1, ch, NULL, -1, 1);
    gc_const(&c, "mean", 1, ch, NULL, -1, 1);
    gc_const(&c, "var", 1, ch, NULL, 0.5f, 2.0f);
    gc_node(&c, "BatchNormalization", "x,scale,bias,mean,var", "y");
    gc_float(&c, "epsilon", 1e-3f);
    gc_output(&c, "y");
    if (check_graph(&c))
      TEST_FAIL_("batchnorm rank %d failed", rank);
  }
  return 0;
}

TEST(softmax_axes) {
  SKIP_UNLESS_AVAILABLE();
  static const struct {
    int64_t opset;
    int rank;
    int64_t dims[4];
    int64_t axis;
    int log;
  } specs[] = {
      {13, 2, {3, 10}, -1, 0},     {13, 3, {2, 4, 9}, 2, 0},
      {13, 4, {2, 6, 3, 3}, 1, 0}, {13, 4, {2, 6, 3, 5}, 2, 0},
      {13, 4, {2, 6, 3, 5}, 0, 0}, {11, 3, {2, 4, 9}, 1, 0},
      {11, 2, {3, 10}, 1, 0},      {11, 4, {2, 6, 3, 3}, 1, 0},
      {11, 4, {2, 6, 3, 3}, 0, 0}, {13, 3, {2, 4, 9}, -1, 1},
      {13, 4, {2, 6, 3, 5}, 1, 1},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    gcase c;
    gc_init(&c, specs[i].opset);
    gc_input(&c, "x", specs[i].rank, specs[i].dims);
    gc_node(&c, specs[i].log ? "LogSoftmax" : "Softmax", "x", "y");
    gc_int(&c, "axis", specs[i].axis);
    gc_output(&c, "y");
    c.lo = -5;
    c.hi = 5;
    if (check_graph(&c))
      TEST_FAIL_("softmax spec %zu failed", i);
  }
  /* Softmax over channels of a conv's (blocked) output. */
  gcase c;
  int64_t x[4] = {1, 3, 6, 6}, w[4] = {20, 3, 3, 3};
  gc_init(&c, 13);
  gc_input(&c, "x", 4, x);
  gc_const(&c, "w", 4, w, NULL, -0.5f, 0.5f);
  gc_node(&c, "Conv", "x,w", "c");
  gc_node(&c, "Softmax", "c", "y");
  gc_int(&c, "axis", 1);
  gc_output(&c, "y");
  return check_graph(&c);
}

TEST(layer_normalization) {
  SKIP_UNLESS_AVAILABLE();
  static const struct {
    int rank;
    int64_t dims[4];
    int64_t axis;
    int bias;
  } specs[] = {
      {3, {2, 5, 16}, -1, 1},
      {3, {2, 5, 16}, -1, 0},
      {4, {2, 3, 4, 6}, -2, 1},
      {2, {7, 33}, 1, 1},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    gcase c;
    int r = specs[i].rank;
    int axis = (int)(specs[i].axis < 0 ? specs[i].axis + r : specs[i].axis);
    gc_init(&c, 17);
    gc_input(&c, "x", r, specs[i].dims);
    gc_const(&c, "s", r - axis, specs[i].dims + axis, NULL, 0.5f, 1.5f);
    gc_const(&c, "b", r - axis, specs[i].dims + axis, NULL, -0.5f, 0.5f);
    gc_node(&c, "LayerNormalization", specs[i].bias ? "x,s,b" : "x,s", "y");
    gc_int(&c, "axis", specs[i].axis);
    gc_float(&c, "epsilon", 1e-5f);
    gc_output(&c, "y");
    c.lo = -3;
    c.hi = 3;
    if (check_graph(&c))
      TEST_FAIL_("layernorm spec %zu failed", i);
  }
  return 0;
}

/* The opset-13 form of LayerNorm (ReduceMean, Sub, Pow, Sqrt, Div) runs
 * from its pieces. */
TEST(reductions) {
  SKIP_UNLESS_AVAILABLE();
  static const char *const ops[] = {"ReduceMean", "ReduceSum", "ReduceMax",
                                    "ReduceMin"};
  for (int op = 0; op < 4; op++) {
    for (int keep = 0; keep <= 1; keep++) {
      gcase c;
      int64_t x[4] = {2, 3, 5, 4};
      const int64_t axes[2] = {1, -1};
      gc_init(&c, 13);
      gc_input(&c, "x", 4, x);
      if (op == 1) {
        gc_const_i64(&c, "axes", 2, axes);
        gc_node(&c, ops[op], "x,axes", "y");
      } else {
        gc_node(&c, ops[op], "x", "y");
        gc_ints(&c, "axes", 2, axes);
      }
      gc_int(&c, "keepdims", keep);
      gc_output(&c, "y");
      if (check_graph(&c))
        TEST_FAIL_("%s keepdims %d failed", ops[op], keep);
    }
  }
  gcase c;
  int64_t x[3] = {2, 5, 16}, d[1] = {16};
  const int64_t last[1] = {-1};
  gc_init(&c, 13);
  gc_input(&c, "x", 3, x);
  gc_const(&c, "g", 1, d, NULL, 0.5f, 1.5f);
  gc_const(&c, "b", 1, d, NULL, -0.5f, 0.5f);
  gc_scalar(&c, "two", 2.0f);
  gc_scalar(&c, "eps", 1e-5f);
  gc_node(&c, "ReduceMean", "x", "m");
  gc_ints(&c, "axes", 1, last);
  gc_node(&c, "Sub", "x,m", "xc");
  gc_node(&c, "Pow", "xc,two", "sq");
  gc_node(&c, "ReduceMean", "sq", "var");
  gc_ints(&c, "axes", 1, last);
  gc_node(&c, "Add", "var,eps", "ve");
  gc_node(&c, "Sqrt", "ve", "sd");
  gc_node(&c, "Div", "xc,sd", "n");
  gc_node(&c, "Mul", "n,g", "ng");
  gc_node(&c, "Add", "ng,b", "y");
  gc_output(&c, "y");
  c.no_bf16 = 1; /* x - mean in bf16 loses most digits */
  return check_graph(&c);
}

/* ------------------------------------------------------------------------ */
/* Data movement                                                             */
/* ------------------------------------------------------------------------ */

TEST(transpose_reshape_concat) {
  SKIP_UNLESS_AVAILABLE();
  static const int64_t perms[][4] = {
      {0, 2, 3, 1}, {3, 2, 1, 0}, {1, 0, 2, 3}, {0, 1, 3, 2}};
  for (size_t i = 0; i < 4; i++) {
    gcase c;
    int64_t x[4] = {2, 3, 4, 5};
    gc_init(&c, 13);
    gc_input(&c, "x", 4, x);
    gc_node(&c, "Transpose", "x", "y");
    gc_ints(&c, "perm", 4, perms[i]);
    gc_output(&c, "y");
    if (check_graph(&c))
      TEST_FAIL_("transpose %zu failed", i);
  }
  /* ShuffleNet's channel shuffle and split after convs. */
  gcase c;
  int64_t x[4] = {1, 8, 6, 6}, w[4] = {16, 8, 1, 1}, wd[4] = {8, 1, 3, 3};
  const int64_t s5[5] = {1, 2, 8, 6, 6}, s4[4] = {1, 16, 6, 6};
  gc_init(&c, 13);
  gc_input(&c, "x", 4, x);
  gc_const(&c, "w", 4, w, NULL, -0.5f, 0.5f);
  gc_const(&c, "wd", 4, wd, NULL, -0.5f, 0.5f);
  gc_const_i64(&c, "s5", 5, s5);
  gc_const_i64(&c, "s4", 4, s4);
  gc_node(&c, "Conv", "x,w", "c");
  gc_node(&c, "Relu", "c", "r");
  gc_node(&c, "Split", "r", "a,b");
  gc_int(&c, "axis", 1);
  gc_node(&c, "Conv", "b,wd", "bd");
  gc_int(&c, "group", 8);
  GC_INTS(&c, "pads", 1, 1, 1, 1);
  gc_node(&c, "Concat", "a,bd", "cat");
  gc_int(&c, "axis", 1);
  gc_node(&c, "Reshape", "cat,s5", "r5");
  gc_node(&c, "Transpose", "r5", "t5");
  GC_INTS(&c, "perm", 0, 2, 1, 3, 4);
  gc_node(&c, "Reshape", "t5,s4", "sh");
  gc_node(&c, "Slice", "sh,st,en,ax", "y");
  {
    const int64_t st[2] = {3, 1}, en[2] = {14, 100}, ax[2] = {1, 3};
    gc_const_i64(&c, "st", 2, st);
    gc_const_i64(&c, "en", 2, en);
    gc_const_i64(&c, "ax", 2, ax);
  }
  gc_output(&c, "y");
  gc_output(&c, "cat");
  if (check_graph(&c))
    return 1;
  /* Slice with steps, Concat of an input, a constant and a conv output
   * along H, Flatten and Squeeze/Unsqueeze. */
  int64_t k[4] = {1, 16, 2, 6};
  const int64_t st[2] = {1, 0}, en[2] = {6, 6}, ax[2] = {2, 3},
                steps[2] = {2, 3}, axes0[1] = {0};
  gc_init(&c, 13);
  gc_input(&c, "x", 4, x);
  gc_const(&c, "w", 4, w, NULL, -0.5f, 0.5f);
  gc_const(&c, "k", 4, k, NULL, -1, 1);
  gc_const_i64(&c, "st", 2, st);
  gc_const_i64(&c, "en", 2, en);
  gc_const_i64(&c, "ax", 2, ax);
  gc_const_i64(&c, "steps", 2, steps);
  gc_const_i64(&c, "axes0", 1, axes0);
  gc_node(&c, "Conv", "x,w", "c");
  gc_node(&c, "Slice", "c,st,en,ax,steps", "sl");
  gc_node(&c, "Concat", "c,k,c", "cat");
  gc_int(&c, "axis", 2);
  gc_node(&c, "Flatten", "cat", "f");
  gc_int(&c, "axis", 2);
  gc_node(&c, "Squeeze", "sl,axes0", "sq");
  gc_node(&c, "Unsqueeze", "sq,axes0", "y");
  gc_output(&c, "y");
  gc_output(&c, "f");
  return check_graph(&c);
}

TEST_MAIN(TEST_ENTRY(binary_middle_broadcast),
          TEST_ENTRY(binary_broadcast_constants),
          TEST_ENTRY(binary_two_activations), TEST_ENTRY(unary_ops),
          TEST_ENTRY(clip_and_pow), TEST_ENTRY(pool_variants),
          TEST_ENTRY(pools_after_conv), TEST_ENTRY(batchnorm),
          TEST_ENTRY(softmax_axes), TEST_ENTRY(layer_normalization),
          TEST_ENTRY(reductions), TEST_ENTRY(transpose_reshape_concat))
