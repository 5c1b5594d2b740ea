/* mb-gen-models: writes the bundled example models.
 *
 *   mb-gen-models OUTDIR          small models for tests and `make run`
 *   mb-gen-models --bench OUTDIR  ResNet-18 and MobileNetV2 for `make bench`
 *
 * Models are built with the IR builder and saved with our ONNX writer, so
 * the repository carries no binary files. Weights come from a seeded PRNG,
 * so every build writes the same bytes. Convolutions use He scaling and
 * BatchNorm statistics roughly match the variance that scaling produces, so
 * activations stay O(1) through deep networks (no overflow, no denormals to
 * distort timings). The bench models keep
 * BatchNorm as separate nodes, like an unoptimised export. */
#include "core/ir.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------------ */
/* Builder with a sticky error: after the first failure every helper does    */
/* nothing, so model code reads as a straight list of layers.               */
/* ------------------------------------------------------------------------ */

typedef struct builder {
  mb_model *model;
  mb_graph *graph;
  mb_error *err;
  mb_status status;
  uint64_t rng;
  int next_id;
  int last_node;
  const char *relu6_min, *relu6_max; /* shared Clip bounds */
} builder;

static uint64_t rng_next(builder *b) { /* splitmix64 */
  uint64_t z = (b->rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double rng_uniform(builder *b) {
  return (double)(rng_next(b) >> 11) * (1.0 / 9007199254740992.0);
}

static double rng_normal(builder *b) { /* Box-Muller */
  double u1 = rng_uniform(b), u2 = rng_uniform(b);
  return sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
}

static bool failed(builder *b) {
  return b->status != MB_STATUS_OK;
}

/* Records the first failure; MB_STATUS_OK is ignored, so setters' results
 * can be passed straight in. */
static void check(builder *b, mb_status status) {
  if (!failed(b))
    b->status = status;
}

/* For builder calls that return -1 on failure with err set. */
static void check_index(builder *b, int index) {
  if (index < 0)
    check(b, b->err->status ? b->err->status : MB_STATUS_INTERNAL);
}

/* A fresh value name "prefix_N" in the model's arena; "" after a failure. */
static const char *fresh_name(builder *b, const char *prefix) {
  if (failed(b))
    return "";
  char buf[128];
  snprintf(buf, sizeof buf, "%s_%d", prefix, b->next_id++);
  const char *name = mb__arena_strdup(b->model->arena, buf);
  if (!name) {
    check(b, mb__error(b->err, MB_STATUS_OUT_OF_MEMORY, "out of memory"));
    return "";
  }
  return name;
}

typedef enum fill_kind {
  FILL_NORMAL,  /* a * N(0, 1) + c */
  FILL_UNIFORM, /* uniform in [a, c) */
  FILL_CONST,   /* a */
} fill_kind;

/* Adds a float32 initializer filled per `kind`; returns its name. */
static const char *init_f32(builder *b, const char *prefix, int rank,
                            const int64_t *dims, fill_kind kind, double a,
                            double c) {
  if (failed(b))
    return "";
  mb_tensor *t = NULL;
  mb_status s = mb_tensor_create(MB_DTYPE_FLOAT, rank, dims, &t, b->err);
  if (s) {
    check(b, s);
    return "";
  }
  float *data = t->data;
  for (int64_t i = 0; i < t->numel; i++) {
    double v = a;
    if (kind == FILL_NORMAL)
      v = a * rng_normal(b) + c;
    else if (kind == FILL_UNIFORM)
      v = a + (c - a) * rng_uniform(b);
    data[i] = (float)v;
  }
  const char *name = fresh_name(b, prefix);
  check_index(b, mb__graph_add_initializer(b->graph, name, t, b->err));
  return name;
}

static const char *scalar_f32(builder *b, const char *prefix, float v) {
  return init_f32(b, prefix, 0, NULL, FILL_CONST, v, 0);
}

static const char *init_i64(builder *b, const char *prefix, int n,
                            const int64_t *values) {
  if (failed(b))
    return "";
  mb_tensor *t = NULL;
  int64_t dims[1] = {n};
  mb_status s = mb_tensor_create(MB_DTYPE_INT64, 1, dims, &t, b->err);
  if (s) {
    check(b, s);
    return "";
  }
  memcpy(t->data, values, sizeof(int64_t) * (size_t)n);
  const char *name = fresh_name(b, prefix);
  check_index(b, mb__graph_add_initializer(b->graph, name, t, b->err));
  return name;
}

/* Appends a one-output node; `out` NULL names the output after the op.
 * Attributes then go to b->last_node. Returns the output name. */
static const char *node(builder *b, const char *op, const char *out, int n_in,
                        const char *const *in) {
  if (failed(b))
    return "";
  char prefix[64];
  size_t i = 0;
  for (; op[i] && i + 1 < sizeof prefix; i++)
    prefix[i] = (char)((op[i] >= 'A' && op[i] <= 'Z') ? op[i] + 32 : op[i]);
  prefix[i] = '\0';
  if (!out)
    out = fresh_name(b, prefix);
  const char *node_name = fresh_name(b, prefix);
  const char *outs[1] = {out};
  b->last_node = mb__graph_add_node(b->graph, op, "", node_name, n_in, in, 1,
                                    outs, b->err);
  check_index(b, b->last_node);
  return out;
}

#define INPUTS_(...)                                                           \
  (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)),         \
      (const char *const[]) {                                                  \
    __VA_ARGS__                                                                \
  }
/* OP(b, "Relu", x) and OP_TO(b, "Softmax", "probs", x) */
#define OP(b, op, ...) node((b), (op), NULL, INPUTS_(__VA_ARGS__))
#define OP_TO(b, op, out, ...) node((b), (op), (out), INPUTS_(__VA_ARGS__))

static void attr_int(builder *b, const char *name, int64_t v) {
  if (!failed(b))
    check(b, mb__node_set_int(b->graph, b->last_node, name, v, b->err));
}

static void attr_float(builder *b, const char *name, float v) {
  if (!failed(b))
    check(b, mb__node_set_float(b->graph, b->last_node, name, v, b->err));
}

static void attr_ints(builder *b, const char *name, int n, const int64_t *v) {
  if (!failed(b))
    check(b, mb__node_set_ints(b->graph, b->last_node, name, n, v, b->err));
}

static void add_input(builder *b, const char *name, mb_dtype dtype, int rank,
                      const int64_t *dims) {
  if (failed(b))
    return;
  const char *params[MB_MAX_RANK] = {"batch"}; /* dim 0 is dynamic */
  int64_t d[MB_MAX_RANK];
  memcpy(d, dims, sizeof(int64_t) * (size_t)rank);
  d[0] = -1;
  check_index(
      b, mb__graph_add_input(b->graph, name, dtype, rank, d, params, b->err));
}

/* An input or output whose dynamic dims carry these symbolic names
 * (dims < 0 where a name is given). */
static void add_value_named(builder *b, bool output, const char *name,
                            mb_dtype dtype, int rank, const int64_t *dims,
                            const char *const *params) {
  if (failed(b))
    return;
  const char *p[MB_MAX_RANK] = {NULL};
  memcpy(p, params, sizeof *p * (size_t)rank);
  check_index(b, output ? mb__graph_add_output(b->graph, name, dtype, rank,
                                               dims, p, b->err)
                        : mb__graph_add_input(b->graph, name, dtype, rank, dims,
                                              p, b->err));
}

static void add_output(builder *b, const char *name, int rank,
                       const int64_t *dims) {
  if (failed(b))
    return;
  const char *params[MB_MAX_RANK] = {"batch"};
  int64_t d[MB_MAX_RANK];
  memcpy(d, dims, sizeof(int64_t) * (size_t)rank);
  d[0] = -1;
  check_index(b, mb__graph_add_output(b->graph, name, MB_DTYPE_FLOAT, rank, d,
                                      params, b->err));
}

/* ------------------------------------------------------------------------ */
/* Layers                                                                    */
/* ------------------------------------------------------------------------ */

/* Conv with He-scaled weights [cout, cin/group, k, k]; bias only when no
 * BatchNorm follows (as torchvision does). */
static const char *conv(builder *b, const char *x, int cin, int cout, int k,
                        int stride, int pad, int group, bool bias) {
  int64_t wdims[4] = {cout, cin / group, k, k};
  double fan_in = (double)(cin / group) * k * k;
  const char *w =
      init_f32(b, "conv_w", 4, wdims, FILL_NORMAL, sqrt(2.0 / fan_in), 0);
  const char *y;
  if (bias) {
    int64_t bdims[1] = {cout};
    const char *bb = init_f32(b, "conv_b", 1, bdims, FILL_NORMAL, 0.05, 0);
    y = OP(b, "Conv", x, w, bb);
  } else {
    y = OP(b, "Conv", x, w);
  }
  int64_t kernel[2] = {k, k}, strides[2] = {stride, stride};
  int64_t pads[4] = {pad, pad, pad, pad};
  attr_ints(b, "kernel_shape", 2, kernel);
  attr_ints(b, "strides", 2, strides);
  attr_ints(b, "pads", 4, pads);
  if (group != 1)
    attr_int(b, "group", group);
  return y;
}

/* BatchNorm whose running variance is near what a He-scaled conv of O(1)
 * activations produces, with some spread so the op is never an identity. */
static const char *batchnorm(builder *b, const char *x, int c) {
  int64_t dims[1] = {c};
  const char *scale = init_f32(b, "bn_scale", 1, dims, FILL_UNIFORM, 0.8, 1.2);
  const char *bias = init_f32(b, "bn_bias", 1, dims, FILL_NORMAL, 0.1, 0);
  const char *mean = init_f32(b, "bn_mean", 1, dims, FILL_NORMAL, 0.2, 0);
  const char *var = init_f32(b, "bn_var", 1, dims, FILL_UNIFORM, 1.0, 2.0);
  const char *y = OP(b, "BatchNormalization", x, scale, bias, mean, var);
  attr_float(b, "epsilon", 1e-5f);
  return y;
}

static const char *relu6(builder *b, const char *x) {
  if (!b->relu6_min) {
    b->relu6_min = scalar_f32(b, "clip_min", 0.0f);
    b->relu6_max = scalar_f32(b, "clip_max", 6.0f);
  }
  return OP(b, "Clip", x, b->relu6_min, b->relu6_max);
}

static const char *conv_bn_relu(builder *b, const char *x, int cin, int cout,
                                int k, int stride, int group) {
  const char *y = conv(b, x, cin, cout, k, stride, k / 2, group, false);
  return OP(b, "Relu", batchnorm(b, y, cout));
}

static const char *maxpool(builder *b, const char *x, int k, int stride,
                           int pad) {
  const char *y = OP(b, "MaxPool", x);
  int64_t kernel[2] = {k, k}, strides[2] = {stride, stride};
  int64_t pads[4] = {pad, pad, pad, pad};
  attr_ints(b, "kernel_shape", 2, kernel);
  attr_ints(b, "strides", 2, strides);
  attr_ints(b, "pads", 4, pads);
  return y;
}

/* Fully connected layer as PyTorch exports it: Gemm with W [out, in] and
 * transB=1. gain 2 before a ReLU, 1 otherwise. */
static const char *linear(builder *b, const char *x, int in, int out,
                          double gain, const char *out_name) {
  int64_t wdims[2] = {out, in}, bdims[1] = {out};
  const char *w =
      init_f32(b, "fc_w", 2, wdims, FILL_NORMAL, sqrt(gain / in), 0);
  const char *bias = init_f32(b, "fc_b", 1, bdims, FILL_NORMAL, 0.05, 0);
  const char *y = OP_TO(b, "Gemm", out_name, x, w, bias);
  attr_int(b, "transB", 1);
  return y;
}

static const char *pool_flatten(builder *b, const char *x) {
  const char *y = OP(b, "Flatten", OP(b, "GlobalAveragePool", x));
  attr_int(b, "axis", 1);
  return y;
}

/* ResNet basic block: conv3x3-BN-ReLU-conv3x3-BN + shortcut, ReLU. The
 * shortcut is a strided 1x1 conv + BN when the shape changes. */
static const char *basic_block(builder *b, const char *x, int cin, int cout,
                               int stride) {
  const char *y = conv_bn_relu(b, x, cin, cout, 3, stride, 1);
  y = batchnorm(b, conv(b, y, cout, cout, 3, 1, 1, 1, false), cout);
  const char *shortcut = x;
  if (stride != 1 || cin != cout)
    shortcut =
        batchnorm(b, conv(b, x, cin, cout, 1, stride, 0, 1, false), cout);
  return OP(b, "Relu", OP(b, "Add", y, shortcut));
}

/* ------------------------------------------------------------------------ */
/* Models                                                                    */
/* ------------------------------------------------------------------------ */

static void build_mlp(builder *b) {
  int64_t in_dims[2] = {-1, 784}, out_dims[2] = {-1, 10};
  add_input(b, "input", MB_DTYPE_FLOAT, 2, in_dims);
  const char *x = OP(b, "Relu", linear(b, "input", 784, 512, 2.0, NULL));
  x = OP(b, "Relu", linear(b, x, 512, 256, 2.0, NULL));
  x = linear(b, x, 256, 10, 1.0, NULL);
  OP_TO(b, "Softmax", "probs", x);
  attr_int(b, "axis", -1);
  add_output(b, "probs", 2, out_dims);
}

static void build_small_cnn(builder *b) {
  int64_t in_dims[4] = {-1, 3, 32, 32}, out_dims[2] = {-1, 10};
  add_input(b, "input", MB_DTYPE_FLOAT, 4, in_dims);
  const char *x = conv_bn_relu(b, "input", 3, 16, 3, 1, 1);
  x = maxpool(b, x, 2, 2, 0);
  x = conv_bn_relu(b, x, 16, 32, 3, 1, 1);
  linear(b, pool_flatten(b, x), 32, 10, 1.0, "logits");
  add_output(b, "logits", 2, out_dims);
}

static void build_resnet_blocks(builder *b) {
  int64_t in_dims[4] = {-1, 3, 64, 64}, out_dims[2] = {-1, 100};
  add_input(b, "input", MB_DTYPE_FLOAT, 4, in_dims);
  const char *x = conv(b, "input", 3, 32, 7, 2, 3, 1, false);
  x = maxpool(b, OP(b, "Relu", batchnorm(b, x, 32)), 3, 2, 1);
  x = basic_block(b, x, 32, 32, 1);
  x = basic_block(b, x, 32, 64, 2);
  x = basic_block(b, x, 64, 64, 1);
  x = basic_block(b, x, 64, 128, 2);
  linear(b, pool_flatten(b, x), 128, 100, 1.0, "logits");
  add_output(b, "logits", 2, out_dims);
}

enum { SEQ = 32, HIDDEN = 64, HEADS = 4, HEAD_DIM = HIDDEN / HEADS };

/* x @ W + bias with W [in, out] (MatMul + Add, as exporters write it). */
static const char *dense(builder *b, const char *x, int in, int out,
                         double gain) {
  int64_t wdims[2] = {in, out}, bdims[1] = {out};
  const char *w = init_f32(b, "w", 2, wdims, FILL_NORMAL, sqrt(gain / in), 0);
  const char *bias = init_f32(b, "bias", 1, bdims, FILL_NORMAL, 0.05, 0);
  return OP(b, "Add", OP(b, "MatMul", x, w), bias);
}

static const char *layernorm(builder *b, const char *x, const char *out) {
  int64_t dims[1] = {HIDDEN};
  const char *scale = init_f32(b, "ln_scale", 1, dims, FILL_UNIFORM, 0.8, 1.2);
  const char *bias = init_f32(b, "ln_bias", 1, dims, FILL_NORMAL, 0.1, 0);
  const char *y = OP_TO(b, "LayerNormalization", out, x, scale, bias);
  attr_int(b, "axis", -1);
  attr_float(b, "epsilon", 1e-5f);
  return y;
}

static const char *transpose(builder *b, const char *x, const int64_t *perm) {
  const char *y = OP(b, "Transpose", x);
  attr_ints(b, "perm", 4, perm);
  return y;
}

/* One post-norm encoder layer (attention, FFN) on x [batch, seq, HIDDEN],
 * its result named `out`. */
static void encoder_layer(builder *b, const char *x, const char *out) {
  /* 0 copies the input dim, so batch (and seq) stay dynamic. */
  const int64_t heads_shape[4] = {0, 0, HEADS, HEAD_DIM};
  const int64_t merged_shape[3] = {0, 0, -1};
  const char *split = init_i64(b, "split_shape", 4, heads_shape);
  const char *merge = init_i64(b, "merge_shape", 3, merged_shape);
  static const int64_t to_heads[4] = {0, 2, 1, 3}; /* [b,h,s,d] */
  static const int64_t to_keys[4] = {0, 2, 3, 1};  /* [b,h,d,s] */

  const char *q = OP(b, "Reshape", dense(b, x, HIDDEN, HIDDEN, 1.0), split);
  const char *k = OP(b, "Reshape", dense(b, x, HIDDEN, HIDDEN, 1.0), split);
  const char *v = OP(b, "Reshape", dense(b, x, HIDDEN, HIDDEN, 1.0), split);
  q = transpose(b, q, to_heads);
  k = transpose(b, k, to_keys);
  v = transpose(b, v, to_heads);
  const char *scores = OP(b, "MatMul", q, k);
  scores = OP(b, "Div", scores, scalar_f32(b, "sqrt_d", sqrtf(HEAD_DIM)));
  const char *probs = OP(b, "Softmax", scores);
  attr_int(b, "axis", -1);
  const char *ctx = transpose(b, OP(b, "MatMul", probs, v), to_heads);
  ctx = OP(b, "Reshape", ctx, merge);
  const char *attn = dense(b, ctx, HIDDEN, HIDDEN, 1.0);
  const char *h = layernorm(b, OP(b, "Add", x, attn), NULL);

  /* FFN with exact GELU written out as x * 0.5 * (1 + erf(x / sqrt 2)). */
  const char *f = dense(b, h, HIDDEN, 4 * HIDDEN, 2.0);
  const char *e =
      OP(b, "Erf", OP(b, "Div", f, scalar_f32(b, "sqrt2", sqrtf(2.0f))));
  e = OP(b, "Add", e, scalar_f32(b, "one", 1.0f));
  const char *gelu =
      OP(b, "Mul", OP(b, "Mul", f, e), scalar_f32(b, "half", 0.5f));
  f = dense(b, gelu, 4 * HIDDEN, HIDDEN, 1.0);
  layernorm(b, OP(b, "Add", h, f), out);
}

static void build_transformer_block(builder *b) {
  int64_t io_dims[3] = {-1, SEQ, HIDDEN};
  add_input(b, "input", MB_DTYPE_FLOAT, 3, io_dims);
  encoder_layer(b, "input", "output");
  add_output(b, "output", 3, io_dims);
}

/* The encoder layer with a symbolic sequence length, as a BERT export
 * declares it: input [batch, seq, HIDDEN] and mask [batch, seq] (1 keeps a
 * position, 0 zeroes it), so `--dim seq=N` sets both and `--sweep
 * dim:seq=...` charts latency against sequence length. */
static void build_seq_encoder(builder *b) {
  static const char *const params[3] = {"batch", "seq", NULL};
  const int64_t io_dims[3] = {-1, -1, HIDDEN}, mask_dims[2] = {-1, -1};
  const int64_t axes[1] = {2};
  add_value_named(b, false, "input", MB_DTYPE_FLOAT, 3, io_dims, params);
  add_value_named(b, false, "mask", MB_DTYPE_FLOAT, 2, mask_dims, params);
  const char *mask =
      OP(b, "Unsqueeze", "mask", init_i64(b, "mask_axes", 1, axes));
  encoder_layer(b, OP(b, "Mul", "input", mask), "output");
  add_value_named(b, true, "output", MB_DTYPE_FLOAT, 3, io_dims, params);
}

/* torchvision.models.resnet18 (224x224, 1000 classes), BN unfolded. */
static void build_resnet18(builder *b) {
  int64_t in_dims[4] = {-1, 3, 224, 224}, out_dims[2] = {-1, 1000};
  add_input(b, "input", MB_DTYPE_FLOAT, 4, in_dims);
  const char *x = conv(b, "input", 3, 64, 7, 2, 3, 1, false);
  x = maxpool(b, OP(b, "Relu", batchnorm(b, x, 64)), 3, 2, 1);
  static const int widths[4] = {64, 128, 256, 512};
  int cin = 64;
  for (int stage = 0; stage < 4; stage++) {
    for (int i = 0; i < 2; i++) {
      int stride = (stage > 0 && i == 0) ? 2 : 1;
      x = basic_block(b, x, cin, widths[stage], stride);
      cin = widths[stage];
    }
  }
  linear(b, pool_flatten(b, x), 512, 1000, 1.0, "logits");
  add_output(b, "logits", 2, out_dims);
}

static const char *conv_bn_relu6(builder *b, const char *x, int cin, int cout,
                                 int k, int stride, int group) {
  const char *y = conv(b, x, cin, cout, k, stride, k / 2, group, false);
  return relu6(b, batchnorm(b, y, cout));
}

/* A model with one node int8 ruins and two it does not, for per-node
 * precision (tests/cli_keep_float.sh, tests/cli_tune.sh): a Div (never
 * quantised) scales channel 0 by 1000, so the activation the MatMul
 * "sensitive_matmul" reads spans a thousand times the other channels'
 * range, and one uint8 scale for it leaves those channels no levels at
 * all. Its weight row 0 is zero, so in float channel 0 does not count.
 * The Gemms before and after it see ordinary activations and quantise
 * well. */
static void build_sensitive_mlp(builder *b) {
  enum { WIDTH = 64 };
  int64_t in_dims[2] = {-1, WIDTH}, out_dims[2] = {-1, 10};
  int64_t scale_dims[1] = {WIDTH}, w_dims[2] = {WIDTH, WIDTH};
  add_input(b, "input", MB_DTYPE_FLOAT, 2, in_dims);
  const char *divisor =
      init_f32(b, "divisor", 1, scale_dims, FILL_CONST, 1.0, 0);
  const char *w =
      init_f32(b, "sensitive_w", 2, w_dims, FILL_NORMAL, sqrt(2.0 / WIDTH), 0);
  if (failed(b))
    return;
  int di = mb__graph_find_value(b->graph, divisor);
  int wi = mb__graph_find_value(b->graph, w);
  ((float *)b->graph->values[di].initializer->data)[0] = 1e-3f;
  for (int j = 0; j < WIDTH; j++) /* channel 0 does not count in float */
    ((float *)b->graph->values[wi].initializer->data)[j] = 0.0f;
  /* The sensitive node in the middle, so that a search that kept nodes
   * in graph order would not find it by luck. */
  const char *x = OP(b, "Relu", linear(b, "input", WIDTH, WIDTH, 2.0, NULL));
  const char *scaled = OP(b, "Div", x, divisor);
  const char *ins[2] = {scaled, w}, *outs[1] = {"sensitive_out"};
  b->last_node = mb__graph_add_node(b->graph, "MatMul", "", "sensitive_matmul",
                                    2, ins, 1, outs, b->err);
  check_index(b, b->last_node);
  x = OP(b, "Relu", "sensitive_out");
  linear(b, x, WIDTH, 10, 1.0, "logits");
  add_output(b, "logits", 2, out_dims);
}

/* torchvision.models.mobilenet_v2 (width 1.0, 224x224, 1000 classes). */
static void build_mobilenetv2(builder *b) {
  int64_t in_dims[4] = {-1, 3, 224, 224}, out_dims[2] = {-1, 1000};
  add_input(b, "input", MB_DTYPE_FLOAT, 4, in_dims);
  /* expansion t, output channels c, repeats n, first stride s */
  static const int settings[7][4] = {
      {1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2},  {6, 64, 4, 2},
      {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1},
  };
  const char *x = conv_bn_relu6(b, "input", 3, 32, 3, 2, 1);
  int cin = 32;
  for (int s = 0; s < 7; s++) {
    int t = settings[s][0], c = settings[s][1];
    for (int i = 0; i < settings[s][2]; i++) {
      int stride = i == 0 ? settings[s][3] : 1;
      int hidden = cin * t;
      const char *y = x;
      if (t != 1)
        y = conv_bn_relu6(b, y, cin, hidden, 1, 1, 1);
      y = conv_bn_relu6(b, y, hidden, hidden, 3, stride, hidden);
      y = batchnorm(b, conv(b, y, hidden, c, 1, 1, 0, 1, false), c);
      x = (stride == 1 && cin == c) ? OP(b, "Add", x, y) : y;
      cin = c;
    }
  }
  x = conv_bn_relu6(b, x, cin, 1280, 1, 1, 1);
  linear(b, pool_flatten(b, x), 1280, 1000, 1.0, "logits");
  add_output(b, "logits", 2, out_dims);
}

/* ------------------------------------------------------------------------ */
/* Driver                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct model_def {
  const char *file;
  void (*build)(builder *b);
  bool bench;
} model_def;

static const model_def models[] = {
    {"mlp.onnx", build_mlp, false},
    {"small_cnn.onnx", build_small_cnn, false},
    {"resnet_blocks.onnx", build_resnet_blocks, false},
    {"transformer_block.onnx", build_transformer_block, false},
    {"seq_encoder.onnx", build_seq_encoder, false},
    {"sensitive_mlp.onnx", build_sensitive_mlp, false},
    {"resnet18.onnx", build_resnet18, true},
    {"mobilenetv2.onnx", build_mobilenetv2, true},
};

static uint64_t seed_of(const char *s) { /* FNV-1a */
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
  return h;
}

static mb_status write_model(const model_def *def, const char *dir,
                             mb_error *err) {
  char path[4096];
  if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, def->file) >=
      sizeof path)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT, "path too long: %s", dir);
  builder b = {0};
  b.err = err;
  b.rng = seed_of(def->file);
  b.model = mb__model_create();
  if (!b.model)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  b.graph = b.model->graph;
  b.model->producer_name = "modelbench-gen-models";
  b.model->producer_version = MB_VERSION_STRING;
  b.model->graph->name = "main";
  b.status = mb__model_set_opset(b.model, "", 17, err);
  if (!failed(&b))
    def->build(&b);
  if (!failed(&b))
    b.status = mb__graph_finalize(b.graph, err);
  if (!failed(&b))
    b.status = mb_model_save(b.model, path, NULL, err);
  mb_model_free(b.model);
  if (failed(&b))
    return mb__error_prefix(err, b.status, "%s", def->file);
  printf("wrote %s\n", path);
  return MB_STATUS_OK;
}

static int make_dir(const char *dir) {
  if (mkdir(dir, 0777) == 0 || errno == EEXIST)
    return 0;
  fprintf(stderr, "mb-gen-models: cannot create %s: %s\n", dir,
          strerror(errno));
  return 1;
}

int main(int argc, char **argv) {
  bool bench = argc == 3 && strcmp(argv[1], "--bench") == 0;
  if (!(argc == 2 && argv[1][0] != '-') && !bench) {
    fprintf(stderr, "usage: mb-gen-models OUTDIR\n"
                    "       mb-gen-models --bench OUTDIR\n");
    return 2;
  }
  const char *dir = argv[argc - 1];
  if (make_dir(dir))
    return 1;
  for (size_t i = 0; i < MB_ARRAY_COUNT(models); i++) {
    if (models[i].bench != bench)
      continue;
    mb_error err = {0};
    if (write_model(&models[i], dir, &err)) {
      fprintf(stderr, "mb-gen-models: %s\n", err.message);
      return 1;
    }
  }
  return 0;
}
