/* The XNNPACK engine against the reference interpreter, in the spirit of
 * ggml's test-backend-ops: small graphs with odd shapes, strides, pads,
 * groups and broadcasts are built with the IR builder, run once on the
 * reference session and once as a single XNNPACK segment (all nodes, graph
 * inputs in, graph outputs out), and compared by normalised error. Other
 * cases check what supports_node must reject and fp16; int8 is in
 * test_engine_xnnpack_int8.c. Everything is skipped (and passes) when the
 * engine's probe says it is unavailable. */
#include "runtime/engine.h"
#include "test.h"

static const mb_engine *engine = &mb__engine_xnnpack;

#include "engine_harness.h"
#include "xnnpack_cases.h"

#include <stdlib.h>

/* ------------------------------------------------------------------------ */
/* Convolution                                                               */
/* ------------------------------------------------------------------------ */

static int conv_case(const conv_spec *s) {
  gcase c;
  build_conv(&c, s);
  return check_graph(&c);
}

TEST(conv_variants) {
  SKIP_UNLESS_AVAILABLE();
  for (size_t i = 0; i < MB_ARRAY_COUNT(conv_specs); i++) {
    if (conv_case(&conv_specs[i]))
      TEST_FAIL_("conv spec %zu failed", i);
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Gemm / MatMul                                                             */
/* ------------------------------------------------------------------------ */

TEST(gemm_variants) {
  SKIP_UNLESS_AVAILABLE();
  for (size_t i = 0; i < MB_ARRAY_COUNT(gemm_specs); i++) {
    gcase c;
    build_gemm(&c, &gemm_specs[i]);
    if (check_graph(&c))
      TEST_FAIL_("gemm spec %zu failed", i);
  }
  return 0;
}

TEST(matmul_rank2_and_rank3) {
  SKIP_UNLESS_AVAILABLE();
  for (int rank = 2; rank <= 3; rank++) {
    gcase c;
    gc_init(&c, 13);
    int64_t a2[2] = {6, 13}, a3[3] = {2, 5, 13}, w[2] = {13, 9}, bias[1] = {9};
    gc_input(&c, "a", rank, rank == 2 ? a2 : a3);
    gc_const(&c, "w", 2, w, NULL, -1, 1);
    gc_const(&c, "bias", 1, bias, NULL, -1, 1);
    gc_node(&c, "MatMul", "a,w", "t");
    gc_node(&c, "Add", "t,bias", "u");
    gc_node(&c, "Relu", "u", "y");
    gc_output(&c, "y");
    if (check_graph(&c))
      TEST_FAIL_("matmul rank %d failed", rank);
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Elementwise                                                               */
/* ------------------------------------------------------------------------ */

static const char *const binary_ops[] = {"Add", "Sub", "Mul",
                                         "Div", "Max", "Min"};

TEST(binary_broadcast_constants) {
  SKIP_UNLESS_AVAILABLE();
  /* A rank-4 activation against constants of every broadcastable shape,
   * on either side. */
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
  } shapes[] = {
      {4, {2, 3, 4, 5}, 4, {2, 1, 4, 1}}, /* both NHWC */
      {4, {1, 3, 4, 5}, 4, {2, 3, 1, 1}}, /* broadcast both ways */
      {3, {2, 5, 7}, 1, {7}},             /* ONNX layout */
      {2, {6, 1}, 2, {1, 4}},
      {4, {1, 4, 3, 3}, 1, {1}}, /* one value against NHWC */
      {5, {2, 1, 3, 2, 2}, 5, {1, 2, 3, 1, 2}},
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
      if (check_graph(&c))
        TEST_FAIL_("%s on shapes %zu failed", binary_ops[op], k);
    }
  }
  return 0;
}

TEST(unary_chain) {
  SKIP_UNLESS_AVAILABLE();
  static const char *const ops[] = {
      "Relu", "Sigmoid",   "Abs",         "Neg",      "Floor",  "Ceil",
      "Elu",  "LeakyRelu", "HardSigmoid", "Identity", "Dropout"};
  for (int rank = 2; rank <= 4; rank++) {
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
      gcase c;
      gc_init(&c, 13);
      int64_t dims[4] = {2, 5, 3, 7};
      gc_input(&c, "x", rank, dims);
      gc_node(&c, ops[i], "x", "y");
      if (strcmp(ops[i], "Elu") == 0)
        gc_float(&c, "alpha", 0.7f);
      if (strcmp(ops[i], "LeakyRelu") == 0)
        gc_float(&c, "alpha", 0.15f);
      if (strcmp(ops[i], "HardSigmoid") == 0) {
        gc_float(&c, "alpha", 1.0f / 6.0f);
        gc_float(&c, "beta", 0.5f);
      }
      gc_output(&c, "y");
      c.lo = -4.0f;
      c.hi = 4.0f;
      if (check_graph(&c))
        TEST_FAIL_("%s rank %d failed", ops[i], rank);
    }
  }
  /* Sqrt of |x| + Abs: a chain inside one segment. */
  gcase c;
  gc_init(&c, 13);
  int64_t dims[4] = {1, 6, 5, 5};
  gc_input(&c, "x", 4, dims);
  gc_node(&c, "Abs", "x", "a");
  gc_node(&c, "Sqrt", "a", "y");
  gc_output(&c, "y");
  return check_graph(&c);
}

/* The reference interpreter has no HardSwish: its output shape is set by
 * hand and the values checked against the ONNX formula. */
TEST(hardswish_formula) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  prepared p;
  mb_tensor *out[1] = {0};
  void *compiled = NULL;
  int rc = 1;
  gc_init(&c, 14);
  int64_t dims[4] = {2, 5, 3, 7};
  gc_input(&c, "x", 4, dims);
  gc_node(&c, "HardSwish", "x", "y");
  gc_output(&c, "y");
  c.lo = -5;
  c.hi = 5;
  if (prepare(&c, &p))
    goto done;
  int x = p.desc.inputs[0], y = p.desc.outputs[0];
  if (!p.shapes[y].known)
    p.shapes[y] = p.shapes[x];
  char reason[256];
  mb_engine_options eo = {1, MB_PRECISION_FP32, 0};
  if (!engine->supports_node(&p.eg, 0, &eo, reason, sizeof reason)) {
    fprintf(stderr, "  rejected: %s\n", reason);
    goto done;
  }
  if (engine->compile(&p.desc, &eo, &compiled, &c.err) ||
      make_outputs(&p, out) ||
      engine->run(compiled, (const mb_tensor *const *)p.inputs, out, &c.err)) {
    fprintf(stderr, "  %s\n", c.err.message);
    goto done;
  }
  /* XNNPACK's fp16 rewrite would abort on HardSwish: compile says so. */
  {
    mb_engine_options fp16 = {1, MB_PRECISION_FP16, 0};
    void *other = NULL;
    mb_status s = engine->compile(&p.desc, &fp16, &other, &c.err);
    engine->release(other);
    if (s != MB_STATUS_UNSUPPORTED || !strstr(c.err.message, "HardSwish")) {
      fprintf(stderr, "  fp16 HardSwish: %s: %s\n", mb_status_string(s),
              c.err.message);
      goto done;
    }
  }
  const float *xv = p.inputs[0]->data, *yv = out[0]->data;
  for (int64_t i = 0; i < out[0]->numel; i++) {
    float want = xv[i] * fminf(1.0f, fmaxf(0.0f, xv[i] / 6.0f + 0.5f));
    if (fabsf(yv[i] - want) > 1e-5f) {
      fprintf(stderr, "  element %lld: %g, want %g\n", (long long)i, yv[i],
              want);
      goto done;
    }
  }
  rc = 0;
done:
  mb_tensor_free(out[0]);
  engine->release(compiled);
  prepared_free(&p);
  gc_free(&c);
  return rc;
}

TEST(clip_forms) {
  SKIP_UNLESS_AVAILABLE();
  int64_t dims[4] = {1, 4, 6, 6}, scalar[1] = {1};
  /* opset 13: constant min and max inputs (ReLU6), and only max */
  for (int form = 0; form < 3; form++) {
    gcase c;
    gc_init(&c, form == 2 ? 6 : 13);
    float lo = 0.0f, hi = 6.0f;
    gc_input(&c, "x", 4, dims);
    if (form == 0) {
      gc_const(&c, "lo", 0, scalar, &lo, 0, 0);
      gc_const(&c, "hi", 0, scalar, &hi, 0, 0);
      gc_node(&c, "Clip", "x,lo,hi", "y");
    } else if (form == 1) {
      gc_const(&c, "hi", 1, scalar, &hi, 0, 0);
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
  return 0;
}

TEST(prelu) {
  SKIP_UNLESS_AVAILABLE();
  static const struct {
    int rx;
    int64_t x[4];
    int rs;
    int64_t s[4];
  } specs[] = {
      {4, {2, 5, 3, 4}, 3, {5, 1, 1}},
      {4, {1, 5, 3, 4}, 1, {1}},
      {2, {3, 6}, 1, {6}},
      {3, {2, 4, 6}, 2, {1, 6}},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    gcase c;
    gc_init(&c, 13);
    gc_input(&c, "x", specs[i].rx, specs[i].x);
    gc_const(&c, "s", specs[i].rs, specs[i].s, NULL, 0.05f, 0.5f);
    gc_node(&c, "PRelu", "x,s", "y");
    gc_output(&c, "y");
    if (check_graph(&c))
      TEST_FAIL_("prelu %zu failed", i);
  }
  return 0;
}

/* Ranks 5 and 6 keep the ONNX layout. */
TEST(high_ranks) {
  SKIP_UNLESS_AVAILABLE();
  int64_t a6[6] = {2, 1, 3, 2, 1, 4}, b6[6] = {1, 3, 1, 2, 5, 1},
          x5[5] = {2, 3, 2, 4, 3}, s5[1] = {6};
  gcase c;
  gc_init(&c, 13);
  gc_input(&c, "a", 6, a6);
  gc_input(&c, "b", 6, b6);
  gc_node(&c, "Mul", "a,b", "y");
  gc_output(&c, "y");
  if (check_graph(&c))
    return 1;
  const int64_t pads[10] = {0, 1, 0, 2, 1, 1, 0, 1, 0, 2};
  gc_init(&c, 13);
  gc_input(&c, "x", 5, x5);
  gc_const_i64(&c, "p", 10, pads);
  gc_node(&c, "Pad", "x,p", "t");
  gc_const(&c, "s", 1, s5, NULL, 0.1f, 0.3f);
  gc_node(&c, "PRelu", "t,s", "u");
  gc_node(&c, "Softmax", "u", "y");
  gc_output(&c, "y");
  return check_graph(&c);
}

/* ------------------------------------------------------------------------ */
/* Pooling                                                                   */
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
      {"AveragePool", 13, 11, 3, 2, {2, 2}, {1, 0, 2, 1}, {1, 1}, 1, 1, NULL},
      {"AveragePool", 13, 11, 3, 2, {2, 2}, {1, 0, 2, 1}, {1, 1}, 1, 0, NULL},
      {"AveragePool", 10, 10, 2, 2, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0, 1, NULL},
      {"AveragePool", 9, 9, 3, 3, {2, 2}, {0}, {1, 1}, 0, 1, "SAME_LOWER"},
      {"AveragePool", 9, 9, 3, 3, {2, 2}, {0}, {1, 1}, 0, 0, "SAME_UPPER"},
      {"AveragePool", 7, 7, 2, 2, {3, 3}, {0, 0, 0, 0}, {1, 1}, 1, 0, NULL},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    const pool_spec *s = &specs[i];
    gcase c;
    gc_init(&c, 13);
    int64_t x[4] = {2, 5, s->h, s->w};
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
      TEST_FAIL_("pool spec %zu (%s) failed", i, s->op);
  }
  return 0;
}

TEST(global_pools) {
  SKIP_UNLESS_AVAILABLE();
  static const char *const ops[] = {"GlobalAveragePool", "GlobalMaxPool"};
  for (int i = 0; i < 2; i++) {
    gcase c;
    gc_init(&c, 13);
    int64_t x[4] = {2, 7, 5, 6};
    gc_input(&c, "x", 4, x);
    gc_node(&c, ops[i], "x", "y");
    gc_output(&c, "y");
    if (check_graph(&c))
      TEST_FAIL_("%s failed", ops[i]);
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Softmax, reshapes, pad, normalisation                                     */
/* ------------------------------------------------------------------------ */

TEST(softmax_axes) {
  SKIP_UNLESS_AVAILABLE();
  static const struct {
    int64_t opset;
    int rank;
    int64_t dims[4];
    int64_t axis;
  } specs[] = {
      {13, 2, {3, 10}, -1},     {13, 3, {2, 4, 9}, 2}, {13, 4, {2, 6, 3, 3}, 1},
      {11, 3, {2, 4, 9}, 1},    {11, 2, {3, 10}, 1},   {11, 4, {2, 6, 3, 3}, 1},
      {11, 4, {2, 6, 3, 3}, 0},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    gcase c;
    gc_init(&c, specs[i].opset);
    gc_input(&c, "x", specs[i].rank, specs[i].dims);
    gc_node(&c, "Softmax", "x", "y");
    gc_int(&c, "axis", specs[i].axis);
    gc_output(&c, "y");
    c.lo = -5;
    c.hi = 5;
    if (check_graph(&c))
      TEST_FAIL_("softmax spec %zu failed", i);
  }
  return 0;
}

/* A classifier tail: Conv -> Relu -> GlobalAveragePool -> Flatten -> Gemm,
 * with Reshape/Squeeze/Unsqueeze variants of the flatten. */
TEST(classifier_tail_reshapes) {
  SKIP_UNLESS_AVAILABLE();
  for (int form = 0; form < 4; form++) {
    gcase c;
    gc_init(&c, 13);
    int64_t x[4] = {2, 3, 9, 9}, w[4] = {8, 3, 3, 3}, fc[2] = {10, 8},
            fb[1] = {10};
    gc_input(&c, "x", 4, x);
    gc_const(&c, "w", 4, w, NULL, -0.5f, 0.5f);
    gc_const(&c, "fc", 2, fc, NULL, -0.5f, 0.5f);
    gc_const(&c, "fb", 1, fb, NULL, -0.5f, 0.5f);
    gc_node(&c, "Conv", "x,w", "c1");
    GC_INTS(&c, "pads", 1, 1, 1, 1);
    gc_node(&c, "Relu", "c1", "r1");
    gc_node(&c, "GlobalAveragePool", "r1", "g");
    if (form == 0) {
      gc_node(&c, "Flatten", "g", "f");
    } else if (form == 1) {
      const int64_t shape[2] = {2, -1};
      gc_const_i64(&c, "shape", 2, shape);
      gc_node(&c, "Reshape", "g,shape", "f");
    } else if (form == 2) {
      const int64_t axes[2] = {2, 3};
      gc_const_i64(&c, "axes", 2, axes);
      gc_node(&c, "Squeeze", "g,axes", "f");
    } else {
      /* back to rank 4 and added to the pooled tensor */
      const int64_t axes[2] = {2, 3}, axes2[2] = {2, 3};
      gc_const_i64(&c, "axes", 2, axes);
      gc_const_i64(&c, "axes2", 2, axes2);
      gc_node(&c, "Squeeze", "g,axes", "s");
      gc_node(&c, "Unsqueeze", "s,axes2", "u");
      gc_node(&c, "Add", "u,g", "a");
      gc_node(&c, "Flatten", "a", "f");
    }
    gc_node(&c, "Gemm", "f,fc,fb", "y");
    gc_int(&c, "transB", 1);
    gc_output(&c, "y");
    if (check_graph(&c))
      TEST_FAIL_("tail form %d failed", form);
  }
  return 0;
}

TEST(pad_constant) {
  SKIP_UNLESS_AVAILABLE();
  for (int form = 0; form < 3; form++) {
    gcase c;
    gc_init(&c, form == 2 ? 2 : 13);
    int64_t x4[4] = {1, 3, 5, 4}, x3[3] = {2, 3, 5}, one[1] = {1};
    float value = 0.75f;
    if (form == 0) {
      const int64_t pads[8] = {0, 1, 2, 0, 1, 0, 1, 3};
      gc_input(&c, "x", 4, x4);
      gc_const_i64(&c, "pads", 8, pads);
      gc_const(&c, "v", 0, one, &value, 0, 0);
      gc_node(&c, "Pad", "x,pads,v", "y");
    } else if (form == 1) {
      const int64_t pads[6] = {0, 2, 1, 1, 0, 2};
      gc_input(&c, "x", 3, x3);
      gc_const_i64(&c, "pads", 6, pads);
      gc_node(&c, "Pad", "x,pads", "y");
    } else {
      gc_input(&c, "x", 4, x4);
      gc_node(&c, "Pad", "x", "y");
      GC_INTS(&c, "pads", 0, 0, 1, 2, 0, 0, 3, 1);
      gc_float(&c, "value", -2.0f);
    }
    gc_output(&c, "y");
    if (check_graph(&c))
      TEST_FAIL_("pad form %d failed", form);
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

TEST(depth_to_space) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  gc_init(&c, 13);
  int64_t x[4] = {2, 12, 3, 4};
  gc_input(&c, "x", 4, x);
  gc_node(&c, "DepthToSpace", "x", "y");
  gc_int(&c, "blocksize", 2);
  gc_output(&c, "y");
  return check_graph(&c);
}

/* Bilinear Resize in the coordinate modes XNNPACK can match, given by
 * sizes or by whole-number scales, up and down. */
TEST(resize_linear) {
  SKIP_UNLESS_AVAILABLE();
  static const char *const modes[] = {"half_pixel", "pytorch_half_pixel",
                                      "align_corners", "asymmetric"};
  static const struct {
    int64_t in[2], out[2];
    int by_scales;
  } sizes[] = {
      {{5, 7}, {10, 14}, 1},
      {{6, 4}, {3, 8}, 0},
      {{4, 4}, {9, 7}, 0},
      {{8, 6}, {4, 3}, 1},
  };
  for (size_t m = 0; m < 4; m++) {
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
      gcase c;
      gc_init(&c, 13);
      int64_t x[4] = {2, 3, sizes[k].in[0], sizes[k].in[1]}, four[1] = {4};
      gc_input(&c, "x", 4, x);
      if (sizes[k].by_scales) {
        float sc[4] = {1, 1, (float)sizes[k].out[0] / (float)sizes[k].in[0],
                       (float)sizes[k].out[1] / (float)sizes[k].in[1]};
        gc_const(&c, "scales", 1, four, sc, 0, 0);
        gc_node(&c, "Resize", "x,,scales", "y");
      } else {
        const int64_t out[4] = {2, 3, sizes[k].out[0], sizes[k].out[1]};
        gc_const_i64(&c, "sizes", 4, out);
        gc_node(&c, "Resize", "x,,,sizes", "y");
      }
      gc_str(&c, "mode", "linear");
      gc_str(&c, "coordinate_transformation_mode", modes[m]);
      gc_output(&c, "y");
      if (check_graph(&c))
        TEST_FAIL_("resize %s, sizes %zu failed", modes[m], k);
    }
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Segments: several outputs, constants, repeated runs                       */
/* ------------------------------------------------------------------------ */

TEST(residual_network) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  build_residual(&c);
  return check_graph(&c);
}

/* New input data and new output buffers between runs. */
TEST(repeated_runs_new_buffers) {
  SKIP_UNLESS_AVAILABLE();
  return check_repeated_runs();
}

/* A Constant node folded by the hybrid layer: accepted, lowered to nothing,
 * and its value also a segment output. */
TEST(folded_constant_node) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  gc_init(&c, 13);
  int64_t x[2] = {3, 4}, kd[1] = {4};
  mb_tensor *k = NULL;
  ASSERT_OK(mb_tensor_create(MB_DTYPE_FLOAT, 1, kd, &k, NULL), NULL);
  for (int i = 0; i < 4; i++)
    ((float *)k->data)[i] = (float)i - 1.5f;
  gc_input(&c, "x", 2, x);
  gc_node(&c, "Constant", "", "k");
  if (!c.failed && mb__node_set_tensor(c.g, c.last_node, "value", k, &c.err))
    c.failed = 1;
  gc_node(&c, "Mul", "x,k", "y");
  gc_output(&c, "y");
  gc_output(&c, "k");
  if (!c.failed) {
    c.n_folded = 1;
    c.folded_value[0] = mb__graph_find_value(c.g, "k");
    c.folded_tensor[0] = k; /* owned by the node attribute */
  }
  return check_graph(&c);
}

/* A segment of folded nodes only (an Identity of a weight read by the
 * reference interpreter): no XNNPACK runtime, the constant copied out. */
TEST(segment_of_constants_only) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  gc_init(&c, 13);
  int64_t w[2] = {3, 5};
  gc_const(&c, "w", 2, w, NULL, -1, 1);
  gc_node(&c, "Identity", "w", "y");
  gc_output(&c, "y");
  return check_graph(&c);
}

/* ------------------------------------------------------------------------ */
/* Rejections, precision, errors                                             */
/* ------------------------------------------------------------------------ */

TEST(rejects_what_it_must) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  int64_t x4[4] = {1, 8, 3, 3}, x2[2] = {1, 3};
  const int64_t gidx[2] = {0, 2};

  gc_init(&c, 13); /* Gather */
  gc_input(&c, "x", 2, x2);
  gc_const_i64(&c, "i", 2, gidx);
  gc_node(&c, "Gather", "x,i", "y");
  gc_output(&c, "y");
  if (check_rejected(&c, 0, "Gather: not supported"))
    return 1;

  gc_init(&c, 13); /* Flatten of [1,8,3,3]: NHWC order differs */
  gc_input(&c, "x", 4, x4);
  gc_node(&c, "Flatten", "x", "y");
  gc_output(&c, "y");
  if (check_rejected(&c, 0, "NHWC"))
    return 1;

  gc_init(&c, 13); /* Softmax over H of a rank-4 tensor */
  gc_input(&c, "x", 4, x4);
  gc_node(&c, "Softmax", "x", "y");
  gc_int(&c, "axis", 2);
  gc_output(&c, "y");
  if (check_rejected(&c, 0, "axis 2"))
    return 1;

  gc_init(&c, 13); /* a rank-1 activation broadcast against NHWC */
  int64_t three[1] = {3};
  gc_input(&c, "x", 4, x4);
  gc_input(&c, "v", 1, three);
  gc_node(&c, "Add", "x,v", "y");
  gc_output(&c, "y");
  if (check_rejected(&c, 0, "broadcast against rank 4"))
    return 1;

  gc_init(&c, 13); /* weights that are not constant */
  int64_t w4[4] = {4, 8, 3, 3};
  gc_input(&c, "x", 4, x4);
  gc_input(&c, "w", 4, w4);
  gc_node(&c, "Conv", "x,w", "y");
  gc_output(&c, "y");
  if (check_rejected(&c, 0, "not a constant"))
    return 1;

  gc_init(&c, 13); /* 1-D convolution */
  int64_t x3[3] = {1, 4, 9}, w3[3] = {2, 4, 3};
  gc_input(&c, "x", 3, x3);
  gc_const(&c, "w", 3, w3, NULL, -1, 1);
  gc_node(&c, "Conv", "x,w", "y");
  gc_output(&c, "y");
  if (check_rejected(&c, 0, "2-D"))
    return 1;

  gc_init(&c, 13); /* integer activations */
  gc_input_typed(&c, "x", MB_DTYPE_INT64, 2, x2);
  gc_node(&c, "Relu", "x", "y");
  gc_output(&c, "y");
  if (check_rejected(&c, 0, "int64"))
    return 1;

  gc_init(&c, 13); /* MaxPool with Indices */
  gc_input(&c, "x", 4, x4);
  gc_node(&c, "MaxPool", "x", "y,i");
  GC_INTS(&c, "kernel_shape", 2, 2);
  gc_output(&c, "y");
  if (check_rejected(&c, 0, "optional output 1"))
    return 1;

  gc_init(&c, 13); /* reflect padding */
  const int64_t pads[8] = {0, 0, 1, 1, 0, 0, 1, 1};
  gc_input(&c, "x", 4, x4);
  gc_const_i64(&c, "p", 8, pads);
  gc_node(&c, "Pad", "x,p", "y");
  gc_str(&c, "mode", "reflect");
  gc_output(&c, "y");
  if (check_rejected(&c, 0, "reflect"))
    return 1;

  gc_init(&c, 13); /* MatMul of two activations */
  int64_t m[2] = {3, 3};
  gc_input(&c, "a", 2, m);
  gc_input(&c, "b", 2, m);
  gc_node(&c, "MatMul", "a,b", "y");
  gc_output(&c, "y");
  return check_rejected(&c, 0, "not a constant");
}

TEST(precisions) {
  SKIP_UNLESS_AVAILABLE();
  char reason[256] = "";
  ASSERT(engine->supports_precision(MB_PRECISION_FP32, reason, sizeof reason));
  ASSERT(engine->supports_precision(MB_PRECISION_FP16, reason, sizeof reason));
  ASSERT(!engine->supports_precision(MB_PRECISION_BF16, reason, sizeof reason));
  ASSERT_CONTAINS(reason, "bf16");
  ASSERT(engine->supports_precision(MB_PRECISION_INT8, reason, sizeof reason));
  ASSERT(engine->node_profile == NULL);
  return 0;
}

/* FP16 either runs (within fp16 accuracy) or fails at compile with
 * MB_STATUS_UNSUPPORTED and a message that quotes XNNPACK's status. */
static int fp16_case(gcase *c) {
  prepared p;
  mb_tensor *ref[8] = {0};
  int rc = 1;
  if (prepare(c, &p) || run_reference(c, &p, ref))
    goto done;
  mb_engine_options eo = {1, MB_PRECISION_FP16, 0};
  void *compiled = NULL;
  mb_status s = engine->compile(&p.desc, &eo, &compiled, &c->err);
  if (s == MB_STATUS_OK) {
    engine->release(compiled);
    run_opts o = {1, MB_PRECISION_FP16, 2e-2};
    if (run_engine(c, &p, ref, &o))
      goto done;
    printf("  fp16 runs\n");
  } else {
    if (s != MB_STATUS_UNSUPPORTED) {
      fprintf(stderr, "  fp16 compile: %s: %s\n", mb_status_string(s),
              c->err.message);
      goto done;
    }
    if (!strstr(c->err.message, "fp16") ||
        !strstr(c->err.message, "xnn_status_")) {
      fprintf(stderr, "  unclear fp16 message: %s\n", c->err.message);
      goto done;
    }
    printf("  fp16 unsupported: %s\n", c->err.message);
  }
  rc = 0;
done:
  for (int j = 0; j < 8; j++)
    mb_tensor_free(ref[j]);
  prepared_free(&p);
  gc_free(c);
  return rc;
}

TEST(fp16_runs_or_says_why) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  gc_init(&c, 13);
  int64_t x[4] = {1, 4, 8, 8}, w[4] = {6, 4, 3, 3};
  gc_input(&c, "x", 4, x);
  gc_const(&c, "w", 4, w, NULL, -0.3f, 0.3f);
  gc_node(&c, "Conv", "x,w", "c");
  GC_INTS(&c, "pads", 1, 1, 1, 1);
  gc_node(&c, "Relu", "c", "y");
  gc_output(&c, "y");
  if (fp16_case(&c))
    return 1;
  /* A classifier tail: its fully connected layers become 1x1
   * convolutions in fp16. */
  for (int rank = 2; rank <= 3; rank++) {
    int64_t x4[4] = {2, 6, 5, 5}, w4[4] = {8, 6, 1, 1}, fc[2] = {8, 7},
            x3[3] = {2, 3, 8}, b7[1] = {7};
    gc_init(&c, 13);
    gc_const(&c, "fc", 2, fc, NULL, -0.5f, 0.5f);
    gc_const(&c, "fb", 1, b7, NULL, -0.5f, 0.5f);
    if (rank == 2) {
      gc_input(&c, "x", 4, x4);
      gc_const(&c, "w", 4, w4, NULL, -0.5f, 0.5f);
      gc_node(&c, "Conv", "x,w", "c1");
      gc_node(&c, "GlobalAveragePool", "c1", "g");
      gc_node(&c, "Flatten", "g", "f");
      gc_node(&c, "Gemm", "f,fc,fb", "y");
    } else {
      gc_input(&c, "x", 3, x3);
      gc_node(&c, "MatMul", "x,fc", "y");
    }
    gc_output(&c, "y");
    if (fp16_case(&c))
      return 1;
  }
  build_residual(&c);
  return fp16_case(&c);
}

/* Wrong tensors at run time are errors, not crashes. */
TEST(run_checks_shapes) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  prepared p;
  mb_tensor *outs[8] = {0}, *bad = NULL;
  void *compiled = NULL;
  int rc = 1;
  gc_init(&c, 13);
  int64_t x[2] = {3, 4}, y[2] = {4, 3};
  gc_input(&c, "x", 2, x);
  gc_node(&c, "Relu", "x", "y");
  gc_output(&c, "y");
  if (prepare(&c, &p))
    goto done;
  mb_engine_options eo = {1, MB_PRECISION_FP32, 0};
  if (engine->compile(&p.desc, &eo, &compiled, &c.err) ||
      make_outputs(&p, outs) ||
      mb_tensor_create(MB_DTYPE_FLOAT, 2, y, &bad, NULL))
    goto done;
  const mb_tensor *in[1] = {bad};
  if (engine->run(compiled, in, outs, &c.err) != MB_STATUS_SHAPE)
    goto done;
  if (!strstr(c.err.message, "[3,4]")) {
    fprintf(stderr, "  message: %s\n", c.err.message);
    goto done;
  }
  rc = 0;
done:
  mb_tensor_free(bad);
  mb_tensor_free(outs[0]);
  engine->release(compiled);
  prepared_free(&p);
  gc_free(&c);
  return rc;
}

TEST(probe_reports) {
  mb_runtime_info info;
  memset(&info, 0, sizeof info);
  engine->probe(&info);
  ASSERT_STR_EQ(engine->name, "xnnpack");
  if (info.available) {
    ASSERT_STR_EQ(info.version, "git20220216");
  } else {
    ASSERT(info.reason[0] != '\0');
    printf("SKIP: %s\n", info.reason);
  }
  return 0;
}

TEST_MAIN(TEST_ENTRY(probe_reports), TEST_ENTRY(conv_variants),
          TEST_ENTRY(gemm_variants), TEST_ENTRY(matmul_rank2_and_rank3),
          TEST_ENTRY(binary_broadcast_constants),
          TEST_ENTRY(binary_two_activations), TEST_ENTRY(unary_chain),
          TEST_ENTRY(hardswish_formula), TEST_ENTRY(clip_forms),
          TEST_ENTRY(prelu), TEST_ENTRY(high_ranks), TEST_ENTRY(pool_variants),
          TEST_ENTRY(global_pools), TEST_ENTRY(softmax_axes),
          TEST_ENTRY(classifier_tail_reshapes), TEST_ENTRY(pad_constant),
          TEST_ENTRY(batchnorm), TEST_ENTRY(depth_to_space),
          TEST_ENTRY(resize_linear), TEST_ENTRY(residual_network),
          TEST_ENTRY(repeated_runs_new_buffers),
          TEST_ENTRY(folded_constant_node),
          TEST_ENTRY(segment_of_constants_only),
          TEST_ENTRY(rejects_what_it_must), TEST_ENTRY(precisions),
          TEST_ENTRY(fp16_runs_or_says_why), TEST_ENTRY(run_checks_shapes))
