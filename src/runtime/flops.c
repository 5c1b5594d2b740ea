/* FLOPs per operator type: one table row per op type, {op_type, formula}.
 *
 * Counts are the usual estimates used to compare models, not exact
 * instruction counts: a multiply-add is 2 FLOPs, elementwise ops cost one
 * FLOP per output element, normalisations a small constant per element.
 * Adding an operator means adding one row. */
#include "runtime/flops.h"

#include <stdlib.h>

typedef struct flops_ctx {
  const mb_graph *graph;
  const mb_node *node;
  const mb_shape_info *shapes;
} flops_ctx;

typedef double (*flops_fn)(const flops_ctx *c);

typedef struct flops_row {
  const char *op_type;
  flops_fn fn;
} flops_row;

#define UNKNOWN (-1.0)

/* Shape of a value: the inferred one, else the initializer's. NULL when
 * omitted or unknown. */
static const mb_shape_info *value_shape(const flops_ctx *c, int value,
                                        mb_shape_info *tmp) {
  if (value < 0 || value >= c->graph->n_values)
    return NULL;
  if (c->shapes && c->shapes[value].known)
    return &c->shapes[value];
  const mb_tensor *init = c->graph->values[value].initializer;
  if (!init)
    return NULL;
  tmp->known = true;
  tmp->dtype = init->dtype;
  tmp->rank = init->rank;
  memcpy(tmp->dims, init->dims, sizeof tmp->dims);
  return tmp;
}

static const mb_shape_info *in(const flops_ctx *c, int i, mb_shape_info *tmp) {
  return i < c->node->n_inputs ? value_shape(c, c->node->inputs[i], tmp) : NULL;
}

static const mb_shape_info *out(const flops_ctx *c, int i, mb_shape_info *tmp) {
  return i < c->node->n_outputs ? value_shape(c, c->node->outputs[i], tmp)
                                : NULL;
}

static bool has_input(const flops_ctx *c, int i) {
  return i < c->node->n_inputs && c->node->inputs[i] >= 0;
}

/* Element count, or UNKNOWN. */
static double numel(const mb_shape_info *s) {
  if (!s || s->rank < 0)
    return UNKNOWN;
  double n = 1;
  for (int d = 0; d < s->rank; d++) {
    if (s->dims[d] < 0)
      return UNKNOWN;
    n *= (double)s->dims[d];
  }
  return n;
}

/* Product of dims[from..rank), or UNKNOWN. */
static double dims_product(const mb_shape_info *s, int from) {
  if (!s || s->rank < from)
    return UNKNOWN;
  double n = 1;
  for (int d = from; d < s->rank; d++)
    n *= (double)s->dims[d];
  return n;
}

static double scaled(double n, double k) {
  return n < 0 ? UNKNOWN : n * k;
}

static double out_numel(const flops_ctx *c) {
  mb_shape_info t;
  return numel(out(c, 0, &t));
}

static double flops_elementwise(const flops_ctx *c) {
  return out_numel(c);
}

/* Max/Min/Sum: n-1 binary ops per element; Mean adds a division. */
static double flops_variadic(const flops_ctx *c) {
  double per = c->node->n_inputs > 1 ? c->node->n_inputs - 1 : 1;
  if (strcmp(c->node->op_type, "Mean") == 0)
    per += 1;
  return scaled(out_numel(c), per);
}

static double flops_5(const flops_ctx *c) {
  return scaled(out_numel(c), 5);
}
static double flops_2(const flops_ctx *c) {
  return scaled(out_numel(c), 2);
}

static double in_numel(const flops_ctx *c) {
  mb_shape_info t;
  return numel(in(c, 0, &t));
}

static double flops_reduce(const flops_ctx *c) {
  return in_numel(c);
}
static double flops_reduce2(const flops_ctx *c) {
  return scaled(in_numel(c), 2);
}

/* Conv-like ops whose weight is [Cout, Cin/group, k...]: every output
 * element is a dot product of length Cin/group * prod(k). */
static double conv_flops(const flops_ctx *c, int weight_input, int bias_input) {
  mb_shape_info tw, to;
  double o = numel(out(c, 0, &to));
  double k = dims_product(in(c, weight_input, &tw), 1);
  if (o < 0 || k < 0)
    return UNKNOWN;
  double bias = bias_input >= 0 && has_input(c, bias_input) ? o : 0;
  return 2 * o * k + bias;
}

static double flops_conv(const flops_ctx *c) {
  return conv_flops(c, 1, 2);
}
static double flops_conv_integer(const flops_ctx *c) {
  return conv_flops(c, 1, -1);
}
/* QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B). */
static double flops_qlinear_conv(const flops_ctx *c) {
  return conv_flops(c, 3, 8);
}

/* ConvTranspose: weight [Cin, Cout/group, k...]; every input element is
 * scattered into Cout/group * prod(k) outputs. */
static double flops_conv_transpose(const flops_ctx *c) {
  mb_shape_info tx, tw, to;
  double x = numel(in(c, 0, &tx));
  double k = dims_product(in(c, 1, &tw), 1);
  double o = numel(out(c, 0, &to));
  if (x < 0 || k < 0 || o < 0)
    return UNKNOWN;
  return 2 * x * k + (has_input(c, 2) ? o : 0);
}

/* MatMul-like: output [..., M, N], A [..., M, K]. */
static double matmul_flops(const flops_ctx *c, int a_input) {
  mb_shape_info ta, to;
  const mb_shape_info *a = in(c, a_input, &ta);
  double o = numel(out(c, 0, &to));
  if (!a || a->rank < 1 || o < 0 || a->dims[a->rank - 1] < 0)
    return UNKNOWN;
  return 2 * o * (double)a->dims[a->rank - 1];
}

static double flops_matmul(const flops_ctx *c) {
  return matmul_flops(c, 0);
}
/* QLinearMatMul(a, a_scale, a_zp, b, ...): A is input 0 as well. */

static double flops_gemm(const flops_ctx *c) {
  mb_shape_info ta, to;
  const mb_shape_info *a = in(c, 0, &ta);
  double o = numel(out(c, 0, &to));
  if (!a || a->rank != 2 || o < 0)
    return UNKNOWN;
  int64_t k = mb__node_attr_int(c->node, "transA", 0) ? a->dims[0] : a->dims[1];
  if (k < 0)
    return UNKNOWN;
  return 2 * o * (double)k + (has_input(c, 2) ? o : 0);
}

/* Windowed pooling: each output element reads prod(kernel_shape) inputs. */
static double flops_pool(const flops_ctx *c) {
  const int64_t *kernel;
  int64_t n = mb__node_attr_ints(c->node, "kernel_shape", &kernel);
  double k = 1;
  for (int64_t i = 0; i < n; i++)
    k *= (double)kernel[i];
  return scaled(out_numel(c), k);
}

static double flops_lrn(const flops_ctx *c) {
  int64_t size = mb__node_attr_int(c->node, "size", 1);
  return scaled(out_numel(c), (double)size + 3);
}

/* RNN/GRU/LSTM: per step, per direction, gates*H outputs each with a dot
 * product over input (I) and hidden (H) features. W: [dirs, gates*H, I],
 * R: [dirs, gates*H, H], X: [seq, batch, I] (layout 0) or [batch, seq, I]. */
static double flops_recurrent(const flops_ctx *c) {
  mb_shape_info tx, tw, tr;
  const mb_shape_info *x = in(c, 0, &tx), *w = in(c, 1, &tw),
                      *r = in(c, 2, &tr);
  if (!x || !w || !r || x->rank != 3 || w->rank != 3 || r->rank != 3)
    return UNKNOWN;
  double steps_batch = (double)x->dims[0] * (double)x->dims[1];
  double dirs = (double)w->dims[0], gates_h = (double)w->dims[1];
  double fan_in = (double)w->dims[2] + (double)r->dims[2];
  if (steps_batch < 0 || dirs < 0 || gates_h < 0 || fan_in < 0)
    return UNKNOWN;
  return 2 * steps_batch * dirs * gates_h * fan_in;
}

/* Sorted by op_type for bsearch. */
static const flops_row flops_table[] = {
    {"Abs", flops_elementwise},
    {"Acos", flops_elementwise},
    {"Acosh", flops_elementwise},
    {"Add", flops_elementwise},
    {"And", flops_elementwise},
    {"ArgMax", flops_reduce},
    {"ArgMin", flops_reduce},
    {"Asin", flops_elementwise},
    {"Asinh", flops_elementwise},
    {"Atan", flops_elementwise},
    {"Atanh", flops_elementwise},
    {"AveragePool", flops_pool},
    {"BatchNormalization", flops_2},
    {"BitShift", flops_elementwise},
    {"BitwiseAnd", flops_elementwise},
    {"BitwiseNot", flops_elementwise},
    {"BitwiseOr", flops_elementwise},
    {"BitwiseXor", flops_elementwise},
    {"Ceil", flops_elementwise},
    {"Celu", flops_elementwise},
    {"Clip", flops_elementwise},
    {"Conv", flops_conv},
    {"ConvInteger", flops_conv_integer},
    {"ConvTranspose", flops_conv_transpose},
    {"Cos", flops_elementwise},
    {"Cosh", flops_elementwise},
    {"CumSum", flops_elementwise},
    {"DequantizeLinear", flops_2},
    {"Div", flops_elementwise},
    {"Elu", flops_elementwise},
    {"Equal", flops_elementwise},
    {"Erf", flops_elementwise},
    {"Exp", flops_elementwise},
    {"Floor", flops_elementwise},
    {"GRU", flops_recurrent},
    {"Gelu", flops_elementwise},
    {"Gemm", flops_gemm},
    {"GlobalAveragePool", flops_reduce},
    {"GlobalLpPool", flops_reduce2},
    {"GlobalMaxPool", flops_reduce},
    {"Greater", flops_elementwise},
    {"GreaterOrEqual", flops_elementwise},
    {"GroupNormalization", flops_5},
    {"HardSigmoid", flops_elementwise},
    {"HardSwish", flops_elementwise},
    {"Hardmax", flops_reduce},
    {"InstanceNormalization", flops_5},
    {"IsInf", flops_elementwise},
    {"IsNaN", flops_elementwise},
    {"LRN", flops_lrn},
    {"LSTM", flops_recurrent},
    {"LayerNormalization", flops_5},
    {"LeakyRelu", flops_elementwise},
    {"Less", flops_elementwise},
    {"LessOrEqual", flops_elementwise},
    {"Log", flops_elementwise},
    {"LogSoftmax", flops_5},
    {"LpNormalization", flops_5},
    {"LpPool", flops_pool},
    {"MatMul", flops_matmul},
    {"MatMulInteger", flops_matmul},
    {"Max", flops_variadic},
    {"MaxPool", flops_pool},
    {"Mean", flops_variadic},
    {"MeanVarianceNormalization", flops_5},
    {"Min", flops_variadic},
    {"Mish", flops_elementwise},
    {"Mod", flops_elementwise},
    {"Mul", flops_elementwise},
    {"Neg", flops_elementwise},
    {"Not", flops_elementwise},
    {"Or", flops_elementwise},
    {"PRelu", flops_elementwise},
    {"Pow", flops_elementwise},
    {"QLinearConv", flops_qlinear_conv},
    {"QLinearMatMul", flops_matmul},
    {"QuantizeLinear", flops_2},
    {"RNN", flops_recurrent},
    {"Reciprocal", flops_elementwise},
    {"ReduceL1", flops_reduce},
    {"ReduceL2", flops_reduce2},
    {"ReduceLogSum", flops_reduce},
    {"ReduceLogSumExp", flops_reduce2},
    {"ReduceMax", flops_reduce},
    {"ReduceMean", flops_reduce},
    {"ReduceMin", flops_reduce},
    {"ReduceProd", flops_reduce},
    {"ReduceSum", flops_reduce},
    {"ReduceSumSquare", flops_reduce2},
    {"Relu", flops_elementwise},
    {"Resize", flops_elementwise},
    {"Round", flops_elementwise},
    {"Selu", flops_elementwise},
    {"Shrink", flops_elementwise},
    {"Sigmoid", flops_elementwise},
    {"Sign", flops_elementwise},
    {"Sin", flops_elementwise},
    {"Sinh", flops_elementwise},
    {"Softmax", flops_5},
    {"Softplus", flops_elementwise},
    {"Softsign", flops_elementwise},
    {"Sqrt", flops_elementwise},
    {"Sub", flops_elementwise},
    {"Sum", flops_variadic},
    {"Tan", flops_elementwise},
    {"Tanh", flops_elementwise},
    {"ThresholdedRelu", flops_elementwise},
    {"TopK", flops_reduce},
    {"Upsample", flops_elementwise},
    {"Where", flops_elementwise},
    {"Xor", flops_elementwise},
};

static int compare_row(const void *key, const void *row) {
  return strcmp((const char *)key, ((const flops_row *)row)->op_type);
}

double mb__node_flops(const mb_graph *g, const mb_node *node,
                      const mb_shape_info *shapes, bool *has_formula_out) {
  /* Custom domains reuse names of standard ops with other semantics. */
  const flops_row *row = NULL;
  if (!node->domain || node->domain[0] == '\0' ||
      strcmp(node->domain, "ai.onnx") == 0)
    row = bsearch(node->op_type, flops_table, MB_ARRAY_COUNT(flops_table),
                  sizeof flops_table[0], compare_row);
  *has_formula_out = row != NULL;
  if (!row)
    return 0;
  flops_ctx c = {g, node, shapes};
  double f = row->fn(&c);
  return f < 0 ? UNKNOWN : f;
}
