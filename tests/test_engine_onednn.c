/* The oneDNN engine against the reference interpreter, in the spirit of
 * ggml's test-backend-ops: small graphs with odd shapes, strides, pads,
 * groups, dilations and broadcasts are built with the IR builder, run once
 * on the reference session and once as a single oneDNN segment (all nodes,
 * graph inputs in, graph outputs out), and compared by normalised error
 * (fp32 at 1 and 2 threads) and, where the CPU computes bf16 natively, by
 * cosine similarity in bf16. Other cases check fusion (through the
 * per-primitive profile), what supports_node must reject, and run-time
 * errors. The operator families (elementwise, pooling and normalizations,
 * data movement) are in test_engine_onednn_ops.c. Everything is skipped
 * (and passes) when the engine's probe says it is unavailable. */
#include "runtime/engine.h"
#include "test.h"

static const mb_engine *engine = &mb__engine_onednn;

#include "engine_harness.h"
#include "onednn_checks.h"

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
  static const conv_spec specs[] = {
      /* n c_in h w c_out group kh kw stride dilation pads auto_pad bias */
      {1, 3, 9, 11, 8, 1, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, NULL, 1},
      {2, 5, 10, 7, 6, 1, 3, 2, {2, 2}, {1, 1}, {0, 1, 2, 1}, NULL, 0},
      {1, 6, 13, 13, 9, 3, 3, 3, {1, 2}, {2, 2}, {2, 1, 2, 0}, NULL, 1},
      {1, 8, 15, 15, 8, 8, 3, 3, {2, 2}, {1, 1}, {1, 1, 1, 1}, NULL, 1},
      {2, 4, 9, 8, 8, 4, 5, 3, {1, 1}, {1, 2}, {2, 2, 1, 2}, NULL, 0},
      {1, 7, 11, 9, 5, 1, 3, 3, {2, 2}, {1, 1}, {0}, "SAME_UPPER", 1},
      {1, 7, 11, 9, 5, 1, 4, 4, {2, 3}, {1, 1}, {0}, "SAME_LOWER", 1},
      {1, 4, 10, 10, 4, 4, 3, 3, {2, 2}, {1, 1}, {0}, "SAME_UPPER", 1},
      {1, 3, 12, 9, 4, 1, 3, 3, {1, 1}, {1, 1}, {0}, "VALID", 1},
      {1, 16, 8, 8, 32, 1, 1, 1, {2, 2}, {1, 1}, {0, 0, 0, 0}, NULL, 1},
      {1, 5, 10, 10, 3, 1, 1, 1, {3, 3}, {1, 1}, {0, 0, 0, 0}, NULL, 0},
      {1, 1, 9, 9, 4, 1, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, NULL, 1},
      {1, 12, 6, 6, 12, 12, 3, 3, {1, 1}, {2, 2}, {2, 2, 2, 2}, NULL, 0},
      /* depthwise with a channel multiplier, and wide blocked channels */
      {1, 16, 7, 7, 32, 16, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, NULL, 1},
      {2, 32, 6, 5, 40, 1, 3, 3, {1, 1}, {1, 1}, {1, 0, 1, 2}, NULL, 1},
      {1, 24, 9, 9, 24, 24, 5, 5, {2, 2}, {1, 1}, {2, 2, 2, 2}, NULL, 1},
      /* the last window sees only padding rows it never reads */
      {1, 4, 10, 10, 6, 1, 3, 3, {2, 2}, {1, 1}, {0, 0, 1, 1}, NULL, 1},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    if (conv_case(&specs[i]))
      TEST_FAIL_("conv spec %zu failed", i);
  }
  return 0;
}

TEST(conv_1d_and_3d) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  int64_t x3[3] = {2, 4, 17}, w3[3] = {6, 2, 3}, x5[5] = {1, 3, 5, 6, 7},
          w5[5] = {4, 3, 2, 3, 3};
  gc_init(&c, 13);
  gc_input(&c, "x", 3, x3);
  gc_const(&c, "w", 3, w3, NULL, -0.5f, 0.5f);
  gc_node(&c, "Conv", "x,w", "y");
  gc_int(&c, "group", 2);
  GC_INTS(&c, "pads", 2, 1);
  GC_INTS(&c, "strides", 2);
  GC_INTS(&c, "dilations", 2);
  gc_output(&c, "y");
  if (check_graph(&c))
    return 1;
  gc_init(&c, 13);
  gc_input(&c, "x", 5, x5);
  gc_const(&c, "w", 5, w5, NULL, -0.5f, 0.5f);
  gc_node(&c, "Conv", "x,w", "y");
  GC_INTS(&c, "pads", 0, 1, 1, 1, 0, 1);
  gc_output(&c, "y");
  return check_graph(&c);
}

/* Conv followed by each kind of fusable link; the profile shows what was
 * fused (one "Conv" entry and nothing else). */
TEST(conv_fusions) {
  SKIP_UNLESS_AVAILABLE();
  static const struct {
    const char *op;   /* the node after the conv */
    int kind;         /* 0 unary, 1 scalar affine, 2 per-channel, 3 silu */
    const char *want; /* profile op types */
  } specs[] = {
      {"Relu", 0, "Conv"},        {"LeakyRelu", 0, "Conv"},
      {"Sigmoid", 0, "Conv"},     {"HardSwish", 0, "Conv"},
      {"Tanh", 0, "Conv"},        {"Clip", 0, "Conv"},
      {"HardSigmoid", 0, "Conv"}, {"Mul", 1, "Conv"},
      {"Add", 1, "Conv"},         {"Div", 1, "Conv"},
      {"Mul", 2, "Conv"},         {"Add", 2, "Conv"},
      {"Mul", 3, "Conv"},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    gcase c;
    char ops[256];
    int64_t x[4] = {1, 5, 9, 8}, w[4] = {16, 5, 3, 3}, ch[3] = {16, 1, 1};
    gc_init(&c, 14);
    gc_input(&c, "x", 4, x);
    gc_const(&c, "w", 4, w, NULL, -0.5f, 0.5f);
    gc_node(&c, "Conv", "x,w", "c");
    GC_INTS(&c, "pads", 1, 1, 1, 1);
    if (specs[i].kind == 0 && strcmp(specs[i].op, "Clip") == 0) {
      gc_scalar(&c, "lo", 0.0f);
      gc_scalar(&c, "hi", 6.0f);
      gc_node(&c, "Clip", "c,lo,hi", "y");
    } else if (specs[i].kind == 0) {
      gc_node(&c, specs[i].op, "c", "y");
    } else if (specs[i].kind == 1) {
      gc_scalar(&c, "k", 0.75f);
      gc_node(&c, specs[i].op, "c,k", "y");
    } else if (specs[i].kind == 2) {
      gc_const(&c, "k", 3, ch, NULL, 0.5f, 1.5f);
      gc_node(&c, specs[i].op, "k,c", "y");
    } else {
      gc_node(&c, "Sigmoid", "c", "s");
      gc_node(&c, "Mul", "c,s", "y");
    }
    gc_output(&c, "y");
    if (profile_ops(&c, 2, ops, sizeof ops, NULL))
      TEST_FAIL_("fusion %zu (%s) failed", i, specs[i].op);
    int words = 1;
    for (const char *q = ops; *q; q++)
      words += *q == ' ';
    if (count_word(ops, specs[i].want) != 1 ||
        words != 1 + count_word(ops, "reorder"))
      TEST_FAIL_("fusion %zu (%s): profile \"%s\"", i, specs[i].op, ops);
  }
  return 0;
}

/* A ResNet basic block: conv-relu-conv + identity, and a downsampling
 * block whose shortcut is a strided 1x1 conv; the sums run as post-ops. */
static void build_resnet_blocks(gcase *c) {
  int64_t x[4] = {1, 16, 12, 12}, w16[4] = {16, 16, 3, 3},
          w32[4] = {32, 16, 3, 3}, w33[4] = {32, 32, 3, 3},
          wd[4] = {32, 16, 1, 1}, b16[1] = {16}, b32[1] = {32};
  gc_init(c, 13);
  gc_input(c, "x", 4, x);
  gc_const(c, "w1", 4, w16, NULL, -0.2f, 0.2f);
  gc_const(c, "b1", 1, b16, NULL, -0.1f, 0.1f);
  gc_const(c, "w2", 4, w16, NULL, -0.2f, 0.2f);
  gc_const(c, "b2", 1, b16, NULL, -0.1f, 0.1f);
  gc_const(c, "w3", 4, w32, NULL, -0.2f, 0.2f);
  gc_const(c, "w4", 4, w33, NULL, -0.1f, 0.1f);
  gc_const(c, "wd", 4, wd, NULL, -0.3f, 0.3f);
  gc_const(c, "b3", 1, b32, NULL, -0.1f, 0.1f);
  gc_node(c, "Relu", "x", "r0");
  gc_node(c, "Conv", "r0,w1,b1", "c1");
  GC_INTS(c, "pads", 1, 1, 1, 1);
  gc_node(c, "Relu", "c1", "r1");
  gc_node(c, "Conv", "r1,w2,b2", "c2");
  GC_INTS(c, "pads", 1, 1, 1, 1);
  gc_node(c, "Add", "c2,r0", "s1");
  gc_node(c, "Relu", "s1", "r2");
  gc_node(c, "Conv", "r2,w3,b3", "c3");
  GC_INTS(c, "pads", 1, 1, 1, 1);
  GC_INTS(c, "strides", 2, 2);
  gc_node(c, "Relu", "c3", "r3");
  gc_node(c, "Conv", "r3,w4", "c4");
  GC_INTS(c, "pads", 1, 1, 1, 1);
  gc_node(c, "Conv", "r2,wd", "d");
  GC_INTS(c, "strides", 2, 2);
  gc_node(c, "Add", "c4,d", "s2");
  gc_node(c, "Relu", "s2", "y");
  gc_output(c, "y");
}

TEST(resnet_blocks) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  char ops[512];
  build_resnet_blocks(&c);
  if (check_graph(&c))
    return 1;
  build_resnet_blocks(&c);
  if (profile_ops(&c, 3, ops, sizeof ops, NULL))
    return 1;
  /* Every Add and every Relu after a conv became a post-op. */
  ASSERT_EQ(count_word(ops, "Add"), 0);
  ASSERT_EQ(count_word(ops, "Relu"), 1);
  ASSERT_EQ(count_word(ops, "Conv"), 5);
  return 0;
}

/* Conv + Add where the summand is the conv's own input, and the summand
 * still read later: both must not be overwritten. */
TEST(conv_sum_operand_kept) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  int64_t x[4] = {1, 8, 6, 6}, w[4] = {8, 8, 3, 3};
  gc_init(&c, 13);
  gc_input(&c, "x", 4, x);
  gc_const(&c, "w", 4, w, NULL, -0.2f, 0.2f);
  gc_node(&c, "Relu", "x", "r");
  gc_node(&c, "Conv", "r,w", "c1");
  GC_INTS(&c, "pads", 1, 1, 1, 1);
  gc_node(&c, "Add", "c1,r", "s");
  gc_node(&c, "Conv", "s,w", "c2");
  GC_INTS(&c, "pads", 1, 1, 1, 1);
  gc_node(&c, "Add", "c2,s", "t");
  gc_node(&c, "Mul", "t,s", "y");
  gc_output(&c, "y");
  return check_graph(&c);
}

/* SiLU as torch.onnx.export writes it: y = x * Sigmoid(x), the Sigmoid's
 * output named sig. */
static void gc_silu(gcase *c, const char *x, const char *sig, const char *y) {
  char mul_in[64];
  snprintf(mul_in, sizeof mul_in, "%s,%s", x, sig);
  gc_node(c, "Sigmoid", x, sig);
  gc_node(c, "Mul", mul_in, y);
}

/* An EfficientNet MBConv block in small: a depthwise conv whose SiLU
 * (Sigmoid and Mul) comes after a post-op oneDNN may refuse (an Add
 * broadcast along W only: the whole chain then lowers node by node, at
 * the group's one position), a squeeze-excitation (global pool, 1x1 convs
 * over few channels, Sigmoid, Mul) and a projection with the residual.
 * Channel counts are multiples of neither 8 nor 16, so blocked layouts
 * pad them at every ISA. Run in fp32 and in int8. */
static void build_mbconv_se(gcase *c) {
  int64_t x[4] = {1, 12, 10, 10}, we[4] = {20, 12, 1, 1}, wd[4] = {20, 1, 3, 3},
          kw[4] = {1, 1, 1, 10}, w1[4] = {5, 20, 1, 1}, w2[4] = {20, 5, 1, 1},
          wp[4] = {12, 20, 1, 1}, b20[1] = {20}, b5[1] = {5}, b12[1] = {12};
  gc_init(c, 13);
  gc_input(c, "x", 4, x);
  gc_const(c, "we", 4, we, NULL, -0.4f, 0.4f);
  gc_const(c, "be", 1, b20, NULL, -0.2f, 0.2f);
  gc_const(c, "wd", 4, wd, NULL, -0.5f, 0.5f);
  gc_const(c, "bd", 1, b20, NULL, -0.2f, 0.2f);
  gc_const(c, "kw", 4, kw, NULL, -0.5f, 0.5f);
  gc_const(c, "w1", 4, w1, NULL, -0.4f, 0.4f);
  gc_const(c, "b1", 1, b5, NULL, -0.2f, 0.2f);
  gc_const(c, "w2", 4, w2, NULL, -0.6f, 0.6f);
  gc_const(c, "b2", 1, b20, NULL, -0.2f, 0.2f);
  gc_const(c, "wp", 4, wp, NULL, -0.3f, 0.3f);
  gc_const(c, "bp", 1, b12, NULL, -0.2f, 0.2f);
  gc_node(c, "Conv", "x,we,be", "e");
  gc_silu(c, "e", "es", "ea");
  gc_node(c, "Conv", "ea,wd,bd", "d");
  gc_int(c, "group", 20);
  GC_INTS(c, "pads", 1, 1, 1, 1);
  gc_node(c, "Add", "d,kw", "dk");
  gc_silu(c, "dk", "ds", "da");
  gc_node(c, "GlobalAveragePool", "da", "p");
  gc_node(c, "Conv", "p,w1,b1", "s1");
  gc_silu(c, "s1", "s1s", "s1a");
  gc_node(c, "Conv", "s1a,w2,b2", "s2");
  gc_node(c, "Sigmoid", "s2", "g");
  gc_node(c, "Mul", "da,g", "se");
  gc_node(c, "Conv", "se,wp,bp", "pr");
  gc_node(c, "Add", "pr,x", "y");
  gc_output(c, "y");
}

/* The graph `build` makes, in fp32 and in int8 with per-channel and
 * per-tensor weights, each against the reference. */
static int check_fp32_and_int8(void (*build)(gcase *), const char *what) {
  gcase c;
  build(&c);
  if (check_graph(&c))
    TEST_FAIL_("%s failed in fp32", what);
  for (int per_tensor = 0; per_tensor < 2; per_tensor++) {
    build(&c);
    if (check_int8(&c, per_tensor))
      TEST_FAIL_("%s (per-tensor weights %d) failed in int8", what, per_tensor);
  }
  return 0;
}

TEST(mbconv_se_block) {
  SKIP_UNLESS_AVAILABLE();
  return check_fp32_and_int8(build_mbconv_se,
                             "MBConv block with squeeze-excitation");
}

/* EfficientNet-V2-S's first stages at their real sizes (issue 48: its
 * INT8_STATIC+ONEDNN aborted on an AVX-512/AMX Xeon and ran on AVX2): the
 * stride-2 stem to 24 channels at 112x112 (24 is no multiple of 16, so
 * AVX-512 layouts pad it), a fused MBConv with its residual, a stride-2
 * expansion to 96 and projection to 48, then an MBConv whose depthwise conv
 * over 160 channels feeds a squeeze-excitation over 40, as the model's
 * later stages do. SiLU is Sigmoid and Mul, as torch.onnx.export writes it.
 * On a machine with AMX or AVX-512 this runs their int8 kernels at each
 * ONEDNN_MAX_CPU_ISA level, under ASan in the sanitizer build. */
static void build_effnetv2_stages(gcase *c) {
  int64_t x[4] = {1, 3, 224, 224}, w0[4] = {24, 3, 3, 3},
          w1[4] = {24, 24, 3, 3}, w2[4] = {96, 24, 3, 3},
          w3[4] = {48, 96, 1, 1}, w4[4] = {160, 48, 1, 1},
          wd[4] = {160, 1, 3, 3}, ws1[4] = {40, 160, 1, 1},
          ws2[4] = {160, 40, 1, 1}, wp[4] = {64, 160, 1, 1}, b24[1] = {24},
          b96[1] = {96}, b48[1] = {48}, b160[1] = {160}, b40[1] = {40},
          b64[1] = {64};
  gc_init(c, 13);
  gc_input(c, "x", 4, x);
  gc_const(c, "w0", 4, w0, NULL, -0.3f, 0.3f);
  gc_const(c, "b0", 1, b24, NULL, -0.1f, 0.1f);
  gc_const(c, "w1", 4, w1, NULL, -0.1f, 0.1f);
  gc_const(c, "b1", 1, b24, NULL, -0.1f, 0.1f);
  gc_const(c, "w2", 4, w2, NULL, -0.1f, 0.1f);
  gc_const(c, "b2", 1, b96, NULL, -0.1f, 0.1f);
  gc_const(c, "w3", 4, w3, NULL, -0.15f, 0.15f);
  gc_const(c, "b3", 1, b48, NULL, -0.1f, 0.1f);
  gc_const(c, "w4", 4, w4, NULL, -0.2f, 0.2f);
  gc_const(c, "b4", 1, b160, NULL, -0.1f, 0.1f);
  gc_const(c, "wd", 4, wd, NULL, -0.4f, 0.4f);
  gc_const(c, "bd", 1, b160, NULL, -0.1f, 0.1f);
  gc_const(c, "ws1", 4, ws1, NULL, -0.2f, 0.2f);
  gc_const(c, "bs1", 1, b40, NULL, -0.1f, 0.1f);
  gc_const(c, "ws2", 4, ws2, NULL, -0.3f, 0.3f);
  gc_const(c, "bs2", 1, b160, NULL, -0.1f, 0.1f);
  gc_const(c, "wp", 4, wp, NULL, -0.15f, 0.15f);
  gc_const(c, "bp", 1, b64, NULL, -0.1f, 0.1f);
  gc_node(c, "Conv", "x,w0,b0", "s");
  GC_INTS(c, "strides", 2, 2);
  GC_INTS(c, "pads", 1, 1, 1, 1);
  gc_silu(c, "s", "ss", "a");
  gc_node(c, "Conv", "a,w1,b1", "f");
  GC_INTS(c, "pads", 1, 1, 1, 1);
  gc_silu(c, "f", "fs", "fa");
  gc_node(c, "Add", "fa,a", "r");
  gc_node(c, "Conv", "r,w2,b2", "e");
  GC_INTS(c, "strides", 2, 2);
  GC_INTS(c, "pads", 1, 1, 1, 1);
  gc_silu(c, "e", "es", "ea");
  gc_node(c, "Conv", "ea,w3,b3", "m");
  gc_node(c, "Conv", "m,w4,b4", "g");
  gc_silu(c, "g", "gs", "ga");
  gc_node(c, "Conv", "ga,wd,bd", "d");
  gc_int(c, "group", 160);
  GC_INTS(c, "strides", 2, 2);
  GC_INTS(c, "pads", 1, 1, 1, 1);
  gc_silu(c, "d", "ds", "da");
  gc_node(c, "GlobalAveragePool", "da", "p");
  gc_node(c, "Conv", "p,ws1,bs1", "q");
  gc_silu(c, "q", "qs", "qa");
  gc_node(c, "Conv", "qa,ws2,bs2", "u");
  gc_node(c, "Sigmoid", "u", "us");
  gc_node(c, "Mul", "da,us", "se");
  gc_node(c, "Conv", "se,wp,bp", "y");
  gc_output(c, "y");
}

TEST(effnetv2_stages) {
  SKIP_UNLESS_AVAILABLE();
  return check_fp32_and_int8(build_effnetv2_stages, "EfficientNet-V2 stages");
}

/* An intermediate that is also a graph output is not fused away. */
TEST(fusion_keeps_outputs) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  int64_t x[4] = {2, 3, 7, 7}, w[4] = {8, 3, 3, 3};
  gc_init(&c, 13);
  gc_input(&c, "x", 4, x);
  gc_const(&c, "w", 4, w, NULL, -0.5f, 0.5f);
  gc_node(&c, "Conv", "x,w", "c");
  gc_node(&c, "Relu", "c", "r");
  gc_node(&c, "Sigmoid", "r", "y");
  gc_output(&c, "y");
  gc_output(&c, "c");
  gc_output(&c, "r");
  return check_graph(&c);
}

/* ------------------------------------------------------------------------ */
/* Gemm / MatMul                                                             */
/* ------------------------------------------------------------------------ */

TEST(gemm_variants) {
  SKIP_UNLESS_AVAILABLE();
  static const struct {
    int trans_a, trans_b;
    float alpha, beta;
    int c_rank; /* -1: no C */
    int64_t c_dims[2];
    int b_input; /* B is an activation */
  } specs[] = {
      {0, 0, 1, 1, -1, {0}, 0},      {0, 1, 1, 1, 1, {7}, 0},
      {0, 0, 0.5f, 2, 2, {1, 7}, 0}, {0, 1, 1, 0.25f, 0, {0}, 0},
      {0, 0, 1, 1, 2, {5, 7}, 0},    {0, 1, 2, 1, 2, {5, 1}, 0},
      {1, 0, 1, 1, 1, {7}, 0},       {1, 1, 1.5f, 0.5f, 1, {7}, 0},
      {0, 0, 1, 1, 1, {7}, 1},       {1, 1, 0.5f, 2, 2, {1, 7}, 1},
      {0, 1, 3, 1, 2, {5, 7}, 1},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    gcase c;
    gc_init(&c, 13);
    int64_t a[2] = {specs[i].trans_a ? 11 : 5, specs[i].trans_a ? 5 : 11};
    int64_t b[2] = {specs[i].trans_b ? 7 : 11, specs[i].trans_b ? 11 : 7};
    gc_input(&c, "a", 2, a);
    if (specs[i].b_input)
      gc_input(&c, "b", 2, b);
    else
      gc_const(&c, "b", 2, b, NULL, -1, 1);
    if (specs[i].c_rank >= 0)
      gc_const(&c, "c", specs[i].c_rank, specs[i].c_dims, NULL, -1, 1);
    gc_node(&c, "Gemm", specs[i].c_rank >= 0 ? "a,b,c" : "a,b", "y");
    gc_int(&c, "transA", specs[i].trans_a);
    gc_int(&c, "transB", specs[i].trans_b);
    gc_float(&c, "alpha", specs[i].alpha);
    gc_float(&c, "beta", specs[i].beta);
    gc_output(&c, "y");
    if (check_graph(&c))
      TEST_FAIL_("gemm spec %zu failed", i);
  }
  return 0;
}

/* MatMul with constant weights, rank 2 to 4, with the Linear pattern
 * (MatMul + Add bias) and an activation fused. */
TEST(matmul_constant_weights) {
  SKIP_UNLESS_AVAILABLE();
  static const struct {
    int ra;
    int64_t a[4];
    int rb;
    int64_t b[4];
  } specs[] = {
      {2, {6, 13}, 2, {13, 9}},       {3, {2, 5, 13}, 2, {13, 9}},
      {4, {2, 3, 4, 13}, 2, {13, 9}}, {3, {3, 5, 13}, 3, {3, 13, 9}},
      {3, {1, 5, 13}, 3, {3, 13, 9}}, {4, {2, 1, 5, 8}, 3, {3, 8, 4}},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    for (int form = 0; form < 2; form++) {
      gcase c;
      char ops[256];
      int64_t n = specs[i].b[specs[i].rb - 1];
      gc_init(&c, 13);
      gc_input(&c, "a", specs[i].ra, specs[i].a);
      gc_const(&c, "w", specs[i].rb, specs[i].b, NULL, -1, 1);
      gc_const(&c, "bias", 1, &n, NULL, -1, 1);
      gc_node(&c, "MatMul", "a,w", "t");
      if (form == 0) {
        gc_node(&c, "Add", "t,bias", "u");
        gc_node(&c, "Relu", "u", "y");
      } else {
        gc_node(&c, "Add", "bias,t", "y");
      }
      gc_output(&c, "y");
      if (check_graph(&c))
        TEST_FAIL_("matmul spec %zu form %d failed", i, form);
      if (i != 0)
        continue;
      gc_init(&c, 13);
      gc_input(&c, "a", specs[i].ra, specs[i].a);
      gc_const(&c, "w", specs[i].rb, specs[i].b, NULL, -1, 1);
      gc_const(&c, "bias", 1, &n, NULL, -1, 1);
      gc_node(&c, "MatMul", "a,w", "t");
      gc_node(&c, "Add", "t,bias", "u");
      gc_node(&c, "Relu", "u", "y");
      gc_output(&c, "y");
      if (profile_ops(&c, 1, ops, sizeof ops, NULL))
        return 1;
      ASSERT_STR_EQ(ops, "MatMul");
    }
  }
  return 0;
}

/* Attention: Q K^T / sqrt(d) + mask, softmax, times V, with head
 * transposes and broadcasting batch dims. */
TEST(attention_batched_matmul) {
  SKIP_UNLESS_AVAILABLE();
  for (int form = 0; form < 3; form++) {
    gcase c;
    int64_t q[4] = {2, 3, 7, 8}, k[4] = {2, 3, 7, 8}, mask[4] = {2, 1, 1, 7};
    int64_t x[3] = {2, 7, 24};
    gc_init(&c, 13);
    if (form < 2) {
      gc_input(&c, "q", 4, q);
      gc_input(&c, "k", 4, k);
      gc_input(&c, "v", 4, k);
    } else {
      /* from one activation through reshape and transpose, as exported */
      const int64_t shape[4] = {2, 7, 3, 8};
      gc_input(&c, "x", 3, x);
      gc_const_i64(&c, "shape", 4, shape);
      gc_node(&c, "Reshape", "x,shape", "xr");
      gc_node(&c, "Transpose", "xr", "q");
      GC_INTS(&c, "perm", 0, 2, 1, 3);
      gc_node(&c, "Transpose", "xr", "k");
      GC_INTS(&c, "perm", 0, 2, 1, 3);
      gc_node(&c, "Relu", "q", "v");
    }
    gc_input(&c, "mask", 4, mask);
    gc_node(&c, "Transpose", "k", "kt");
    GC_INTS(&c, "perm", 0, 1, 3, 2);
    gc_node(&c, "MatMul", "q,kt", "s");
    gc_scalar(&c, "scale", 2.828427f);
    gc_node(&c, "Div", "s,scale", "sd");
    gc_node(&c, "Add", "sd,mask", "sm");
    gc_node(&c, "Softmax", "sm", "p");
    gc_int(&c, "axis", -1);
    gc_node(&c, "MatMul", "p,v", "o");
    if (form >= 1) {
      const int64_t shape[3] = {2, 7, 24};
      gc_node(&c, "Transpose", "o", "ot");
      GC_INTS(&c, "perm", 0, 2, 1, 3);
      gc_const_i64(&c, "oshape", 3, shape);
      gc_node(&c, "Reshape", "ot,oshape", "y");
      gc_output(&c, "y");
    } else {
      gc_output(&c, "o");
    }
    if (check_graph(&c))
      TEST_FAIL_("attention form %d failed", form);
  }
  /* Broadcast batch dims on either side. */
  static const struct {
    int ra;
    int64_t a[4];
    int rb;
    int64_t b[4];
  } specs[] = {
      {4, {2, 3, 5, 6}, 4, {1, 3, 6, 4}},
      {4, {1, 3, 5, 6}, 4, {2, 3, 6, 4}},
      {3, {3, 5, 6}, 4, {2, 3, 6, 4}},
      {2, {5, 6}, 3, {4, 6, 2}},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    gcase c;
    gc_init(&c, 13);
    gc_input(&c, "a", specs[i].ra, specs[i].a);
    gc_input(&c, "b", specs[i].rb, specs[i].b);
    gc_node(&c, "MatMul", "a,b", "y");
    gc_output(&c, "y");
    if (check_graph(&c))
      TEST_FAIL_("batched matmul %zu failed", i);
  }
  return 0;
}

/* GELU as PyTorch exports it, fused after a MatMul (BERT's FFN) and alone,
 * in both association orders; a lone Erf too. */
static void add_gelu(gcase *c, const char *x, const char *y, int form) {
  char in[64], out[64];
  gc_scalar(c, "sqrt2", 1.4142135f);
  gc_scalar(c, "one", 1.0f);
  gc_scalar(c, "half", 0.5f);
  snprintf(in, sizeof in, "%s,sqrt2", x);
  gc_node(c, "Div", in, "g_d");
  gc_node(c, "Erf", "g_d", "g_e");
  gc_node(c, "Add", "g_e,one", "g_a");
  if (form == 0) {
    snprintf(in, sizeof in, "%s,g_a", x);
    gc_node(c, "Mul", in, "g_m");
    snprintf(out, sizeof out, "%s", y);
    gc_node(c, "Mul", "g_m,half", out);
  } else {
    snprintf(in, sizeof in, "%s,half", x);
    gc_node(c, "Mul", in, "g_h");
    gc_node(c, "Mul", "g_h,g_a", y);
  }
}

/* x -> y: GELU(approximate='tanh') written out as PyTorch exports it
 * (form 0: x*x*x as two Muls, the 0.5 last), as GPT code writes it (form
 * 1: Pow(x, 3), the 0.5 on x first; form 2: two Muls, 0.5 first), or
 * (form 3) with 0.05 for 0.044715: not GELU, must stay as written. */
static void add_gelu_tanh(gcase *c, const char *x, const char *y, int form) {
  char in[64];
  gc_scalar(c, "t_k", form == 3 ? 0.05f : 0.044715f);
  gc_scalar(c, "t_s", 0.7978845608f);
  gc_scalar(c, "t_one", 1.0f);
  gc_scalar(c, "t_half", 0.5f);
  gc_scalar(c, "t_three", 3.0f);
  if (form == 1) {
    snprintf(in, sizeof in, "%s,t_three", x);
    gc_node(c, "Pow", in, "t_cube");
  } else {
    snprintf(in, sizeof in, "%s,%s", x, x);
    gc_node(c, "Mul", in, "t_sq");
    snprintf(in, sizeof in, "%s,t_sq", x);
    gc_node(c, "Mul", in, "t_cube");
  }
  gc_node(c, "Mul", "t_k,t_cube", "t_kc");
  snprintf(in, sizeof in, "%s,t_kc", x);
  gc_node(c, "Add", in, "t_in");
  gc_node(c, "Mul", "t_s,t_in", "t_arg");
  gc_node(c, "Tanh", "t_arg", "t_t");
  gc_node(c, "Add", "t_one,t_t", "t_a");
  if (form == 0 || form == 3) {
    snprintf(in, sizeof in, "%s,t_a", x);
    gc_node(c, "Mul", in, "t_m");
    gc_node(c, "Mul", "t_half,t_m", y);
  } else {
    snprintf(in, sizeof in, "%s,t_half", x);
    gc_node(c, "Mul", in, "t_h");
    gc_node(c, "Mul", "t_h,t_a", y);
  }
}

/* Builds x -> y in one GELU spelling (add_gelu, add_gelu_tanh). */
typedef void (*gelu_builder)(gcase *c, const char *x, const char *y, int form);

/* Profiles GELU spelling `form` at `opset`, after a MatMul and its bias
 * (after_product) or alone beside a Relu of the same input: the
 * primitives' op types go into ops. Frees the case. */
static int gelu_profile(gelu_builder add, int form, int64_t opset,
                        int after_product, char *ops, size_t size) {
  gcase c;
  int64_t a[3] = {2, 5, 16}, w[2] = {16, 24}, b[1] = {24};
  gc_init(&c, opset);
  gc_input(&c, "a", 3, a);
  if (after_product) {
    gc_const(&c, "w", 2, w, NULL, -0.5f, 0.5f);
    gc_const(&c, "b", 1, b, NULL, -0.5f, 0.5f);
    gc_node(&c, "MatMul", "a,w", "t");
    gc_node(&c, "Add", "t,b", "u");
    add(&c, "u", "y", form);
  } else {
    gc_node(&c, "Relu", "a", "r");
    add(&c, "a", "g", form);
    gc_node(&c, "Add", "g,r", "y");
    c.lo = -3;
    c.hi = 3;
  }
  gc_output(&c, "y");
  return profile_ops(&c, 1, ops, size, NULL);
}

/* The tanh GELU: one post-op of the product before it, or one eltwise
 * primitive alone; a look-alike stays as written (and exact). */
TEST(gelu_tanh) {
  SKIP_UNLESS_AVAILABLE();
  for (int form = 0; form < 4; form++) {
    char ops[256];
    if (gelu_profile(add_gelu_tanh, form, 17, 1, ops, sizeof ops))
      TEST_FAIL_("tanh gelu after a product, form %d, failed", form);
    if (form < 3)
      ASSERT_STR_EQ(ops, "MatMul");
    else if (count_word(ops, "Tanh") != 1)
      TEST_FAIL_("the look-alike was fused: %s", ops);

    if (gelu_profile(add_gelu_tanh, form, 17, 0, ops, sizeof ops))
      TEST_FAIL_("standalone tanh gelu form %d failed", form);
    if (form < 3)
      ASSERT_STR_EQ(ops, "Relu Gelu Add");
    else if (count_word(ops, "Tanh") != 1 || count_word(ops, "Gelu") != 0)
      TEST_FAIL_("the standalone look-alike was fused: %s", ops);
  }
  /* x read by something else too (the residual): not all of x's readers
   * are the pattern's, so the product does not take it as a post-op; it
   * runs as one eltwise primitive after the product. */
  gcase c;
  char ops[256];
  int64_t a[2] = {6, 16}, w[2] = {16, 16};
  gc_init(&c, 17);
  gc_input(&c, "a", 2, a);
  gc_const(&c, "w", 2, w, NULL, -0.5f, 0.5f);
  gc_node(&c, "MatMul", "a,w", "u");
  add_gelu_tanh(&c, "u", "g", 0);
  gc_node(&c, "Add", "g,u", "y");
  gc_output(&c, "y");
  if (profile_ops(&c, 1, ops, sizeof ops, NULL))
    TEST_FAIL_("tanh gelu beside another reader failed");
  ASSERT_STR_EQ(ops, "MatMul Gelu Add");
  return 0;
}

TEST(gelu_and_erf) {
  SKIP_UNLESS_AVAILABLE();
  for (int form = 0; form < 2; form++) {
    char ops[256];
    if (gelu_profile(add_gelu, form, 13, 1, ops, sizeof ops))
      TEST_FAIL_("fused gelu form %d failed", form);
    ASSERT_STR_EQ(ops, "MatMul");

    if (gelu_profile(add_gelu, form, 13, 0, ops, sizeof ops))
      TEST_FAIL_("standalone gelu form %d failed", form);
    ASSERT_STR_EQ(ops, "Relu Gelu Add");
  }
  gcase c;
  int64_t x[2] = {7, 9};
  gc_init(&c, 13);
  gc_input(&c, "x", 2, x);
  gc_node(&c, "Erf", "x", "e");
  gc_node(&c, "Mul", "e,x", "y");
  gc_output(&c, "y");
  c.lo = -2;
  c.hi = 2;
  return check_graph(&c);
}

/* ------------------------------------------------------------------------ */
/* Segments                                                                  */
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

/* A segment that starts inside the graph: its input is an intermediate
 * value (computed here by the reference run of the whole graph), and the
 * first node stays outside. */
TEST(segment_of_a_suffix) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  prepared p;
  mb_tensor *ref[8] = {0}, *outs[1] = {0}, *mid = NULL;
  mb_session *session = NULL;
  void *compiled = NULL;
  int rc = 1;
  int64_t x[4] = {1, 4, 8, 8}, w[4] = {8, 4, 3, 3};
  gc_init(&c, 13);
  gc_input(&c, "x", 4, x);
  gc_const(&c, "w", 4, w, NULL, -0.5f, 0.5f);
  gc_node(&c, "Gather", "x,idx", "gx"); /* stays with the reference */
  {
    const int64_t idx[1] = {0};
    gc_const_i64(&c, "idx", 1, idx);
  }
  gc_node(&c, "Conv", "gx,w", "c");
  gc_node(&c, "Relu", "c", "y");
  gc_output(&c, "y");
  gc_output(&c, "gx");
  if (prepare(&c, &p) || run_reference(&c, &p, ref))
    goto done;
  mid = ref[1];
  int g_node = 0, seg_in = mb__graph_find_value(c.g, "gx");
  for (int i = 0; i < c.g->n_nodes; i++)
    if (strcmp(c.g->nodes[i].op_type, "Gather") == 0)
      g_node = i;
  int k = 0;
  for (int i = 0; i < c.g->n_nodes; i++)
    if (i != g_node)
      p.nodes[k++] = i;
  p.desc.n_nodes = k;
  p.seg_inputs[0] = seg_in;
  p.desc.n_inputs = 1;
  p.desc.n_outputs = 1; /* y */
  mb_engine_options eo = {1, MB_PRECISION_FP32, 0};
  if (engine->compile(&p.desc, &eo, &compiled, &c.err) ||
      make_outputs(&p, outs) ||
      engine->run(compiled, (const mb_tensor *const *)&mid, outs, &c.err)) {
    fprintf(stderr, "  %s\n", c.err.message);
    goto done;
  }
  if (!(normalised_error(outs[0], ref[0]) <= 1e-4)) {
    fprintf(stderr, "  error %g\n", normalised_error(outs[0], ref[0]));
    goto done;
  }
  rc = 0;
done:
  mb_session_free(session);
  mb_tensor_free(outs[0]);
  for (int j = 0; j < 8; j++)
    mb_tensor_free(ref[j]);
  engine->release(compiled);
  prepared_free(&p);
  gc_free(&c);
  return rc;
}

/* A Constant node folded by the hybrid layer: accepted, lowered to nothing,
 * and its value also a segment output; an Identity of a weight (PyTorch's
 * shared weights) read as a conv's weights. */
TEST(folded_constants) {
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
  if (check_graph(&c))
    return 1;
  int64_t x4[4] = {1, 3, 6, 6}, w[4] = {4, 3, 3, 3};
  gc_init(&c, 13);
  gc_input(&c, "x", 4, x4);
  gc_const(&c, "w", 4, w, NULL, -0.5f, 0.5f);
  gc_node(&c, "Identity", "w", "wi");
  gc_node(&c, "Conv", "x,wi", "y");
  gc_output(&c, "y");
  return check_graph(&c);
}

/* ------------------------------------------------------------------------ */
/* INT8                                                                      */
/* ------------------------------------------------------------------------ */

/* Conv (signed input: a source zero point) -> Relu -> Conv (unsigned:
 * none) with biases, plus a depthwise Conv and a residual Add; biases are
 * large enough that a mis-scaled int8 bias shows. */
static void build_int8_convs(gcase *c) {
  int64_t x[4] = {1, 8, 12, 12}, w1[4] = {16, 8, 3, 3}, w2[4] = {16, 16, 3, 3};
  int64_t wd[4] = {16, 1, 3, 3}, b[1] = {16};
  const int64_t pads[4] = {1, 1, 1, 1};
  gc_init(c, 13);
  gc_input(c, "x", 4, x);
  gc_const(c, "w1", 4, w1, NULL, -0.3f, 0.3f);
  gc_const(c, "b1", 1, b, NULL, -1, 1);
  gc_const(c, "w2", 4, w2, NULL, -0.2f, 0.2f);
  gc_const(c, "b2", 1, b, NULL, -1, 1);
  gc_const(c, "wd", 4, wd, NULL, -0.5f, 0.5f);
  gc_const(c, "bd", 1, b, NULL, -1, 1);
  gc_node(c, "Conv", "x,w1,b1", "c1");
  gc_ints(c, "pads", 4, pads);
  gc_node(c, "Relu", "c1", "r1");
  gc_node(c, "Conv", "r1,w2,b2", "c2");
  gc_ints(c, "pads", 4, pads);
  gc_node(c, "Conv", "c2,wd,bd", "d");
  gc_int(c, "group", 16);
  gc_ints(c, "pads", 4, pads);
  gc_node(c, "Add", "d,r1", "s");
  gc_node(c, "Relu", "s", "y");
  gc_output(c, "y");
}

TEST(int8_convolutions) {
  SKIP_UNLESS_AVAILABLE();
  for (int per_tensor = 0; per_tensor < 2; per_tensor++) {
    gcase c;
    build_int8_convs(&c);
    if (check_int8(&c, per_tensor))
      TEST_FAIL_("int8 convolutions (per-tensor weights %d) failed",
                 per_tensor);
  }
  return 0;
}

TEST(int8_gemm_and_matmul) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  int64_t a[2] = {6, 24}, bt[2] = {10, 24}, cb[1] = {10};
  gc_init(&c, 13); /* Gemm, transB, alpha, bias C */
  gc_input(&c, "a", 2, a);
  gc_const(&c, "b", 2, bt, NULL, -1, 1);
  gc_const(&c, "c", 1, cb, NULL, -4, 4);
  gc_node(&c, "Gemm", "a,b,c", "y");
  gc_int(&c, "transB", 1);
  gc_float(&c, "alpha", 0.5f);
  gc_output(&c, "y");
  if (check_int8(&c, 0))
    TEST_FAIL_("int8 Gemm failed");

  int64_t a3[3] = {2, 5, 24}, w[2] = {24, 9}, n[1] = {9};
  gc_init(&c, 13); /* MatMul [2,5,24] x [24,9] + bias -> Relu */
  gc_input(&c, "a", 3, a3);
  gc_const(&c, "w", 2, w, NULL, -1, 1);
  gc_const(&c, "bias", 1, n, NULL, -4, 4);
  gc_node(&c, "MatMul", "a,w", "t");
  gc_node(&c, "Add", "t,bias", "u");
  gc_node(&c, "Relu", "u", "y");
  gc_output(&c, "y");
  if (check_int8(&c, 0))
    TEST_FAIL_("int8 MatMul failed");
  return 0;
}

/* Nodes without calibration entries run in fp32 (as exact as FP32), and
 * INT8 without any parameters is an error, not a crash. */
TEST(int8_without_parameters) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  prepared p;
  mb_tensor *ref[8] = {0};
  mb_quant_params empty;
  double e[8], cs[8];
  memset(&empty, 0, sizeof empty);
  build_int8_convs(&c);
  int rc = 1;
  if (prepare(&c, &p) || run_reference(&c, &p, ref) ||
      int8_run(&c, &p, &empty, ref, e, cs, NULL))
    goto done;
  if (!(e[0] <= 1e-4)) {
    fprintf(stderr, "  uncalibrated nodes: normalised error %g > 1e-4\n", e[0]);
    goto done;
  }
  {
    mb_engine_options eo = {1, MB_PRECISION_INT8, 0, NULL};
    void *compiled = NULL;
    mb_status st = engine->compile(&p.desc, &eo, &compiled, &c.err);
    if (st != MB_STATUS_INVALID_ARGUMENT || compiled ||
        !strstr(c.err.message, "quantisation parameters")) {
      fprintf(stderr, "  INT8 without parameters: status %d, '%s'\n", st,
              c.err.message);
      engine->release(compiled);
      goto done;
    }
  }
  rc = 0;
done:
  for (int j = 0; j < 8; j++)
    mb_tensor_free(ref[j]);
  prepared_free(&p);
  gc_free(&c);
  ASSERT(rc == 0);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Rejections, precision, profile, errors                                    */
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

  gc_init(&c, 13); /* weights that are not constant */
  int64_t w4[4] = {4, 8, 3, 3};
  gc_input(&c, "x", 4, x4);
  gc_input(&c, "w", 4, w4);
  gc_node(&c, "Conv", "x,w", "y");
  gc_output(&c, "y");
  if (check_rejected(&c, 0, "not a constant"))
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

  gc_init(&c, 13); /* average pool where ceil_mode adds counted padding */
  int64_t x7[4] = {1, 2, 7, 7};
  gc_input(&c, "x", 4, x7);
  gc_node(&c, "AveragePool", "x", "y");
  GC_INTS(&c, "kernel_shape", 2, 2);
  GC_INTS(&c, "strides", 2, 2);
  gc_int(&c, "ceil_mode", 1);
  gc_int(&c, "count_include_pad", 1);
  gc_output(&c, "y");
  if (check_rejected(&c, 0, "count_include_pad"))
    return 1;

  gc_init(&c, 13); /* 1-D MatMul operand */
  int64_t v3[1] = {3}, m3[2] = {3, 4};
  gc_input(&c, "a", 1, v3);
  gc_const(&c, "b", 2, m3, NULL, -1, 1);
  gc_node(&c, "MatMul", "a,b", "y");
  gc_output(&c, "y");
  if (check_rejected(&c, 0, "1-D"))
    return 1;

  gc_init(&c, 13); /* Pow with a tensor exponent */
  gc_input(&c, "a", 2, m3);
  gc_input(&c, "b", 2, m3);
  gc_node(&c, "Pow", "a,b", "y");
  gc_output(&c, "y");
  return check_rejected(&c, 0, "exponent");
}

/* What oneDNN's RNN primitives cannot express stays on the reference
 * interpreter, with the reason (the accepted forms are checked against the
 * reference in test_cross_runtime's rnn/ cases). */
TEST(rnn_rejects_what_it_must) {
  SKIP_UNLESS_AVAILABLE();
  static const struct {
    const char *what, *attr, *value;
    int64_t int_value;
    const char *reason;
  } rows[] = {
      {"clip", "clip", NULL, 0, "clip"},
      {"input_forget", "input_forget", NULL, 1, "input_forget"},
      {"activations", "activations", "Relu", 0, "activation"},
      {"short sequence", NULL, NULL, 0, "sequence_lens"},
      {"weights not constant", NULL, NULL, 0, "not a constant"},
  };
  int64_t x3[3] = {4, 2, 3}, w3[3] = {1, 16, 3}, r3[3] = {1, 16, 4};
  for (size_t i = 0; i < MB_ARRAY_COUNT(rows); i++) {
    gcase c;
    gc_init(&c, 14);
    gc_input(&c, "x", 3, x3);
    if (strcmp(rows[i].what, "weights not constant") == 0)
      gc_input(&c, "w", 3, w3);
    else
      gc_const(&c, "w", 3, w3, NULL, -1, 1);
    gc_const(&c, "r", 3, r3, NULL, -1, 1);
    if (strcmp(rows[i].what, "short sequence") == 0) {
      mb_tensor *lens = NULL;
      int64_t two[1] = {2};
      if (!c.failed &&
          mb_tensor_create(MB_DTYPE_INT32, 1, two, &lens, &c.err) == 0) {
        ((int32_t *)lens->data)[0] = 4;
        ((int32_t *)lens->data)[1] = 3;
        mb__graph_add_initializer(c.g, "l", lens, &c.err);
      }
      gc_node(&c, "LSTM", "x,w,r,,l", "y");
    } else {
      gc_node(&c, "LSTM", "x,w,r", "y");
    }
    gc_int(&c, "hidden_size", 4);
    if (rows[i].attr && strcmp(rows[i].attr, "clip") == 0)
      gc_float(&c, "clip", 1.0f);
    else if (rows[i].attr && strcmp(rows[i].attr, "input_forget") == 0)
      gc_int(&c, "input_forget", 1);
    else if (rows[i].attr && !c.failed) {
      mb_attr a = {.type = MB_ATTR_STRINGS, .n = 3};
      a.name = "activations";
      a.strings = mb__arena_alloc(c.model->arena, 3 * sizeof(char *));
      a.strings[0] = "Sigmoid";
      a.strings[1] = rows[i].value;
      a.strings[2] = "Tanh";
      mb__node_add_attr(c.g, c.g->n_nodes - 1, &a, &c.err);
    }
    gc_output(&c, "y");
    if (check_rejected(&c, 0, rows[i].reason))
      TEST_FAIL_("LSTM with %s was not rejected for it", rows[i].what);
  }
  return 0;
}

TEST(precisions) {
  SKIP_UNLESS_AVAILABLE();
  char reason[256] = "";
  ASSERT(engine->supports_precision(MB_PRECISION_FP32, reason, sizeof reason));
  ASSERT(!engine->supports_precision(MB_PRECISION_FP16, reason, sizeof reason));
  ASSERT_CONTAINS(reason, "bf16");
  reason[0] = '\0';
  int bf16 =
      engine->supports_precision(MB_PRECISION_BF16, reason, sizeof reason);
  if (bf16) {
    printf("  bf16: native\n");
  } else {
    ASSERT_CONTAINS(reason, "avx512");
    printf("  bf16: %s\n", reason);
  }
  /* Compiling for a precision it cannot run is an error, not a crash. */
  gcase c;
  prepared p;
  void *compiled = NULL;
  int64_t x[2] = {2, 3};
  gc_init(&c, 13);
  gc_input(&c, "x", 2, x);
  gc_node(&c, "Relu", "x", "y");
  gc_output(&c, "y");
  if (prepare(&c, &p))
    return 1;
  mb_engine_options eo = {1, MB_PRECISION_FP16, 0};
  mb_status s = engine->compile(&p.desc, &eo, &compiled, &c.err);
  prepared_free(&p);
  gc_free(&c);
  ASSERT_EQ(s, MB_STATUS_UNSUPPORTED);
  ASSERT(compiled == NULL);
  return 0;
}

/* A bf16 network with a transformer block: layer norm, attention, FFN. */
TEST(bf16_transformer_block) {
  SKIP_UNLESS_AVAILABLE();
  if (!bf16_supported()) {
    printf("  SKIP: no native bf16\n");
    return 0;
  }
  gcase c;
  int64_t x[3] = {2, 9, 32}, d[1] = {32}, wq[2] = {32, 32}, w1[2] = {32, 64},
          w2[2] = {64, 32}, b64[1] = {64};
  const int64_t heads[4] = {2, 9, 4, 8}, back[3] = {2, 9, 32};
  gc_init(&c, 17);
  gc_input(&c, "x", 3, x);
  gc_const(&c, "g", 1, d, NULL, 0.5f, 1.5f);
  gc_const(&c, "b", 1, d, NULL, -0.2f, 0.2f);
  gc_const(&c, "wq", 2, wq, NULL, -0.3f, 0.3f);
  gc_const(&c, "wk", 2, wq, NULL, -0.3f, 0.3f);
  gc_const(&c, "wv", 2, wq, NULL, -0.3f, 0.3f);
  gc_const(&c, "w1", 2, w1, NULL, -0.3f, 0.3f);
  gc_const(&c, "b1", 1, b64, NULL, -0.1f, 0.1f);
  gc_const(&c, "w2", 2, w2, NULL, -0.3f, 0.3f);
  gc_const_i64(&c, "heads", 4, heads);
  gc_const_i64(&c, "back", 3, back);
  gc_scalar(&c, "scale", 0.35355339f);
  gc_node(&c, "LayerNormalization", "x,g,b", "n");
  gc_node(&c, "MatMul", "n,wq", "q0");
  gc_node(&c, "MatMul", "n,wk", "k0");
  gc_node(&c, "MatMul", "n,wv", "v0");
  gc_node(&c, "Reshape", "q0,heads", "q1");
  gc_node(&c, "Reshape", "k0,heads", "k1");
  gc_node(&c, "Reshape", "v0,heads", "v1");
  gc_node(&c, "Transpose", "q1", "q");
  GC_INTS(&c, "perm", 0, 2, 1, 3);
  gc_node(&c, "Transpose", "k1", "kt");
  GC_INTS(&c, "perm", 0, 2, 3, 1);
  gc_node(&c, "Transpose", "v1", "v");
  GC_INTS(&c, "perm", 0, 2, 1, 3);
  gc_node(&c, "MatMul", "q,kt", "s");
  gc_node(&c, "Mul", "s,scale", "ss");
  gc_node(&c, "Softmax", "ss", "p");
  gc_int(&c, "axis", -1);
  gc_node(&c, "MatMul", "p,v", "o");
  gc_node(&c, "Transpose", "o", "ot");
  GC_INTS(&c, "perm", 0, 2, 1, 3);
  gc_node(&c, "Reshape", "ot,back", "a");
  gc_node(&c, "Add", "a,x", "h");
  gc_node(&c, "MatMul", "h,w1", "f0");
  gc_node(&c, "Add", "f0,b1", "f1");
  add_gelu(&c, "f1", "f2", 0);
  gc_node(&c, "MatMul", "f2,w2", "f3");
  gc_node(&c, "Add", "f3,h", "y");
  gc_output(&c, "y");
  return check_graph(&c);
}

TEST(profile_counts_runs) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  char ops[512];
  int64_t runs[64];
  build_residual(&c);
  if (profile_ops(&c, 3, ops, sizeof ops, runs))
    return 1;
  printf("  profile: %s\n", ops);
  ASSERT(strstr(ops, "Conv"));
  ASSERT(strstr(ops, "MaxPool"));
  ASSERT(!strstr(ops, "Relu")); /* fused */
  ASSERT_EQ(runs[0], 3);
  return 0;
}

/* Wrong tensors at run time are errors, not crashes. */
TEST(run_checks_shapes) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  prepared p;
  mb_tensor *outs[8] = {0}, *bad = NULL;
  void *compiled = NULL;
  int rc = 1;
  build_residual(&c);
  if (prepare(&c, &p))
    goto done;
  mb_engine_options eo = {1, MB_PRECISION_FP32, 0};
  if (engine->compile(&p.desc, &eo, &compiled, &c.err) ||
      make_outputs(&p, outs))
    goto done;
  int64_t dims[4] = {1, 3, 15, 16};
  if (mb_tensor_create(MB_DTYPE_FLOAT, 4, dims, &bad, NULL))
    goto done;
  mb_status s =
      engine->run(compiled, (const mb_tensor *const *)&bad, outs, &c.err);
  if (s != MB_STATUS_SHAPE || !strstr(c.err.message, "input 0")) {
    fprintf(stderr, "  bad input: %s: %s\n", mb_status_string(s),
            c.err.message);
    goto done;
  }
  mb_tensor *swap = outs[0];
  outs[0] = outs[1];
  outs[1] = swap;
  s = engine->run(compiled, (const mb_tensor *const *)p.inputs, outs, &c.err);
  if (s != MB_STATUS_SHAPE || !strstr(c.err.message, "output")) {
    fprintf(stderr, "  bad output: %s: %s\n", mb_status_string(s),
            c.err.message);
    goto done;
  }
  rc = 0;
done:
  mb_tensor_free(bad);
  for (int j = 0; j < 8; j++)
    mb_tensor_free(outs[j]);
  engine->release(compiled);
  prepared_free(&p);
  gc_free(&c);
  return rc;
}

TEST(probe_reports) {
  mb_runtime_info info;
  memset(&info, 0, sizeof info);
  engine->probe(&info);
  ASSERT_STR_EQ(engine->name, "onednn");
  if (info.available) {
    ASSERT(info.version[0] != '\0');
    ASSERT(info.reason[0] == '\0');
    printf("  oneDNN %s\n", info.version);
  } else {
    ASSERT(info.reason[0] != '\0');
    printf("  SKIP: %s\n", info.reason);
  }
  return 0;
}

TEST_MAIN(TEST_ENTRY(probe_reports), TEST_ENTRY(conv_variants),
          TEST_ENTRY(conv_1d_and_3d), TEST_ENTRY(conv_fusions),
          TEST_ENTRY(resnet_blocks), TEST_ENTRY(conv_sum_operand_kept),
          TEST_ENTRY(fusion_keeps_outputs), TEST_ENTRY(mbconv_se_block),
          TEST_ENTRY(effnetv2_stages), TEST_ENTRY(gemm_variants),
          TEST_ENTRY(matmul_constant_weights),
          TEST_ENTRY(attention_batched_matmul), TEST_ENTRY(gelu_and_erf),
          TEST_ENTRY(gelu_tanh), TEST_ENTRY(residual_network),
          TEST_ENTRY(repeated_runs_new_buffers),
          TEST_ENTRY(segment_of_a_suffix), TEST_ENTRY(folded_constants),
          TEST_ENTRY(rejects_what_it_must),
          TEST_ENTRY(rnn_rejects_what_it_must), TEST_ENTRY(precisions),
          TEST_ENTRY(bf16_transformer_block), TEST_ENTRY(profile_counts_runs),
          TEST_ENTRY(run_checks_shapes), TEST_ENTRY(int8_convolutions),
          TEST_ENTRY(int8_gemm_and_matmul), TEST_ENTRY(int8_without_parameters))
