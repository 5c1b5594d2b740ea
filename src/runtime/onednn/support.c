/* oneDNN engine: which nodes run here, and why not. Each check reads the
 * node's parameters through a getter that the lowering calls again at
 * compile time (so compile() of an accepted node cannot disagree), and
 * the operator table at the end maps each ONNX op to its check, its
 * lowering and whether it heads a fused group. */
#ifdef MB_HAVE_DNNL

#include "runtime/onednn/internal.h"

/* Checks take an mb_engine_check (engine.h) and return 1 (accepted) or
 * 0 through mb__engine_reject. */

const mb_engine_limits mb__dn_limits = {"oneDNN", DN_RANK_MAX};

static const mb_shape_info *out_shape(mb_engine_check *c) {
  return &c->eg->shapes[c->n->outputs[0]];
}

/* One-primitive unary ops: X(op, alg, alpha, beta, attribute for alpha) */
#define DN_UNARY_LIST(X)                                                       \
  X("Relu", dnnl_eltwise_relu, 0.0f, 0.0f, NULL)                               \
  X("LeakyRelu", dnnl_eltwise_relu, 0.01f, 0.0f, "alpha")                      \
  X("Elu", dnnl_eltwise_elu, 1.0f, 0.0f, "alpha")                              \
  X("Sigmoid", dnnl_eltwise_logistic, 0.0f, 0.0f, NULL)                        \
  X("Tanh", dnnl_eltwise_tanh, 0.0f, 0.0f, NULL)                               \
  X("Exp", dnnl_eltwise_exp, 0.0f, 0.0f, NULL)                                 \
  X("Log", dnnl_eltwise_log, 0.0f, 0.0f, NULL)                                 \
  X("Sqrt", dnnl_eltwise_sqrt, 0.0f, 0.0f, NULL)                               \
  X("Abs", dnnl_eltwise_abs, 0.0f, 0.0f, NULL)                                 \
  X("Neg", dnnl_eltwise_linear, -1.0f, 0.0f, NULL)                             \
  X("Reciprocal", dnnl_eltwise_pow, 1.0f, -1.0f, NULL)                         \
  X("HardSwish", dnnl_eltwise_hardswish, 0.0f, 0.0f, NULL)                     \
  X("Softplus", dnnl_eltwise_soft_relu, 0.0f, 0.0f, NULL)                      \
  X("Mish", dnnl_eltwise_mish, 0.0f, 0.0f, NULL)

static const struct unary_row {
  const char *op;
  dnnl_alg_kind_t alg;
  float alpha, beta;
  const char *alpha_attr;
} unary_rows[] = {
#define MB_X(op, alg, alpha, beta, attr) {op, alg, alpha, beta, attr},
    DN_UNARY_LIST(MB_X)
#undef MB_X
};

/* The eltwise primitives computing unary node c->n (input 0 -> output 0):
 * fills ops[0..1] and returns their count, or 0 (rejected). Does not check
 * the data input itself. */
int mb__dn_unary_get(mb_engine_check *c, eltwise_op *ops) {
  const mb_node *n = c->n;
  for (size_t i = 0; i < MB_ARRAY_COUNT(unary_rows); i++) {
    const struct unary_row *r = &unary_rows[i];
    if (!op_is(n, r->op))
      continue;
    ops[0].alg = r->alg;
    ops[0].alpha = r->alpha_attr
                       ? mb__node_attr_float(n, r->alpha_attr, r->alpha)
                       : r->alpha;
    ops[0].beta = r->beta;
    return 1;
  }
  if (op_is(n, "Clip")) {
    float lo = -FLT_MAX, hi = FLT_MAX;
    if (c->opset < 11) {
      lo = mb__node_attr_float(n, "min", lo);
      hi = mb__node_attr_float(n, "max", hi);
    } else if (!mb__engine_scalar_input(c, 1, lo, &lo) ||
               !mb__engine_scalar_input(c, 2, hi, &hi)) {
      return 0;
    }
    ops[0] = (eltwise_op){dnnl_eltwise_clip, lo, hi};
    return 1;
  }
  if (op_is(n, "HardSigmoid")) {
    /* max(0, min(1, alpha * x + beta)): oneDNN 2.6 has no such algorithm. */
    ops[0] =
        (eltwise_op){dnnl_eltwise_linear, mb__node_attr_float(n, "alpha", 0.2f),
                     mb__node_attr_float(n, "beta", 0.5f)};
    ops[1] = (eltwise_op){dnnl_eltwise_clip, 0.0f, 1.0f};
    return 2;
  }
  if (op_is(n, "Pow")) {
    float p;
    if (!mb__engine_scalar_input(c, 1, 1.0f, &p))
      return mb__engine_reject(
          c, "the exponent must be a float32 scalar constant");
    if (mb__engine_input(n, 1) < 0)
      return mb__engine_reject(c, "the exponent is missing");
    ops[0] = (eltwise_op){dnnl_eltwise_pow, 1.0f, p};
    return 1;
  }
  if (op_is(n, "Gelu")) {
    const char *approx = mb__node_attr_string(n, "approximate", "none");
    if (strcmp(approx, "none") && strcmp(approx, "tanh"))
      return mb__engine_reject(c, "approximate='%s' is not supported", approx);
    ops[0] = (eltwise_op){strcmp(approx, "tanh") ? dnnl_eltwise_gelu_erf
                                                 : dnnl_eltwise_gelu_tanh,
                          0.0f, 0.0f};
    return 1;
  }
  return mb__engine_reject(c, "not an elementwise operator");
}

int mb__dn_check_unary(mb_engine_check *c) {
  eltwise_op ops[2];
  return mb__engine_check_float_input(c, 0, 0) && mb__engine_check_outputs(c) &&
         mb__dn_unary_get(c, ops);
}

/* Erf has no oneDNN algorithm: alone it runs as the engine's own loop on
 * plain float32 data; inside x*0.5*(1+erf(x/sqrt 2)) it becomes GELU. */
static int check_erf(mb_engine_check *c) {
  return mb__engine_check_float_input(c, 0, 0) && mb__engine_check_outputs(c);
}

/* ---- binary ------------------------------------------------------------- */

static const struct binary_row binary_rows[] = {
    {"Add", dnnl_binary_add, true}, {"Sub", dnnl_binary_sub, false},
    {"Mul", dnnl_binary_mul, true}, {"Div", dnnl_binary_div, false},
    {"Max", dnnl_binary_max, true}, {"Min", dnnl_binary_min, true},
};

const struct binary_row *mb__dn_binary_find(const mb_node *n) {
  for (size_t i = 0; i < MB_ARRAY_COUNT(binary_rows); i++)
    if (op_is(n, binary_rows[i].op))
      return &binary_rows[i];
  return NULL;
}

int mb__dn_binary_get(mb_engine_check *c, binary_params *p) {
  const mb_node *n = c->n;
  const struct binary_row *row = mb__dn_binary_find(n);
  int ra, rb;
  int64_t a[MB_MAX_RANK], b[MB_MAX_RANK], pa[MB_MAX_RANK], pb[MB_MAX_RANK];
  memset(p, 0, sizeof *p);
  if (!row)
    return mb__engine_reject(c, "not a binary operator");
  if (n->n_inputs != 2)
    return mb__engine_reject(c, "%d inputs (only 2 run on oneDNN)",
                             n->n_inputs);
  if (!mb__engine_check_float_input(c, 0, 0) ||
      !mb__engine_check_float_input(c, 1, 0) || !mb__engine_check_outputs(c))
    return 0;
  const mb_shape_info *y = out_shape(c);
  mb__engine_value_shape(c->eg, n->inputs[0], &ra, a, NULL);
  mb__engine_value_shape(c->eg, n->inputs[1], &rb, b, NULL);
  const mb_tensor *ka = mb__engine_constant(c->eg, n->inputs[0]);
  const mb_tensor *kb = mb__engine_constant(c->eg, n->inputs[1]);
  if (ka && kb)
    return mb__engine_reject(c, "both inputs are constant");
  if (ra > y->rank || rb > y->rank)
    return mb__engine_reject(c, "input rank above the output's");
  dims_pad(ra, a, y->rank, pa);
  dims_pad(rb, b, y->rank, pb);
  bool a_full = memcmp(pa, y->dims, (size_t)y->rank * sizeof *pa) == 0;
  bool b_full = memcmp(pb, y->dims, (size_t)y->rank * sizeof *pb) == 0;
  for (int d = 0; d < y->rank; d++)
    if ((pa[d] != y->dims[d] && pa[d] != 1) ||
        (pb[d] != y->dims[d] && pb[d] != 1))
      return mb__engine_reject(c, "inputs do not broadcast to the output");
  p->alg = row->alg;
  /* An activation as src0 keeps its layout for the output. */
  bool prefer_b = b_full && !kb && ka;
  if (a_full && !prefer_b) {
    p->src0 = 0;
    p->src1 = 1;
    return 1;
  }
  if (b_full && (row->commutative || row->alg == dnnl_binary_sub)) {
    p->src0 = 1;
    p->src1 = 0;
    p->negate = !row->commutative;
    return 1;
  }
  if (a_full) {
    p->src0 = 0;
    p->src1 = 1;
    return 1;
  }
  if (b_full && row->alg == dnnl_binary_div && ka && ka->numel == 1) {
    /* c / x = c * x^-1 */
    p->n_elt = 1;
    p->elt_src = 1;
    p->elt =
        (eltwise_op){dnnl_eltwise_pow, (float)mb__tensor_get_f64(ka, 0), -1.0f};
    return 1;
  }
  if (b_full && ka) {
    p->src0 = 0;
    p->src1 = 1;
    p->expand0 = true;
    return 1;
  }
  return mb__engine_reject(c, "the first input would need broadcasting");
}

static int check_binary(mb_engine_check *c) {
  binary_params p;
  return mb__dn_binary_get(c, &p);
}

/* ---- windows: Conv and pooling ------------------------------------------ */

/* Resolves strides, dilations, pads and auto_pad of node c->n; w->nsp,
 * in, out (the inferred output) and kernel are set by the caller. */
static int window_resolve(mb_engine_check *c, window *w) {
  const mb_node *n = c->n;
  int64_t pads[6];
  int k = w->nsp;
  if (!mb__engine_attr_ints(n, "strides", k, 1, 1, w->stride))
    return mb__engine_reject(c, "strides must be %d values >= 1", k);
  if (!mb__engine_attr_ints(n, "dilations", k, 1, 1, w->dilation))
    return mb__engine_reject(c, "dilations must be %d values >= 1", k);
  if (!mb__engine_attr_ints(n, "pads", 2 * k, 0, 0, pads))
    return mb__engine_reject(c, "pads must be %d values >= 0", 2 * k);
  mb_auto_pad mode;
  if (!mb__engine_auto_pad(c, &mode))
    return 0;
  w->extended = false;
  for (int d = 0; d < k; d++) {
    int64_t extent = (w->kernel[d] - 1) * w->dilation[d] + 1;
    int64_t in = w->in[d], s = w->stride[d], out = w->out[d];
    if (mode == MB_AUTO_PAD_NOTSET) {
      w->pad_l[d] = pads[d];
      w->pad_r[d] = pads[k + d];
    } else if (mode == MB_AUTO_PAD_VALID) {
      w->pad_l[d] = w->pad_r[d] = 0;
    } else {
      bool upper = mode == MB_AUTO_PAD_SAME_UPPER;
      int64_t total = MB_MAX(0, (out - 1) * s + extent - in);
      int64_t small = total / 2, big = total - small;
      w->pad_l[d] = upper ? small : big;
      w->pad_r[d] = upper ? big : small;
    }
    int64_t span = in + w->pad_l[d] + w->pad_r[d] - extent;
    if (span < 0 || span / s + 1 != out) {
      /* ceil_mode, or padding the last window never reaches: the right
       * padding that gives exactly `out` windows. */
      int64_t pr = (out - 1) * s + extent - in - w->pad_l[d];
      if (pr < 0)
        return mb__engine_reject(c, "output size %lld does not fit the window",
                                 (long long)out);
      if (pr > w->pad_r[d])
        w->extended = true;
      w->pad_r[d] = pr;
    }
    if (out < 1)
      return mb__engine_reject(c, "empty output");
  }
  return 1;
}

int mb__dn_conv_get(mb_engine_check *c, conv_params *p) {
  const mb_node *n = c->n;
  int xr, wr;
  int64_t x[MB_MAX_RANK];
  memset(p, 0, sizeof *p);
  if (!mb__engine_check_float_input(c, 0, 0) ||
      !mb__engine_check_float_input(c, 1, 1) || !mb__engine_check_outputs(c))
    return 0;
  if (n->n_inputs > 3)
    return mb__engine_reject(c, "too many inputs");
  mb__engine_value_shape(c->eg, n->inputs[0], &xr, x, NULL);
  const mb_tensor *w = mb__engine_constant(c->eg, n->inputs[1]);
  const mb_shape_info *y = out_shape(c);
  wr = w->rank;
  if (xr < 3 || xr > 5 || wr != xr || y->rank != xr)
    return mb__engine_reject(
        c, "only 1-D, 2-D and 3-D convolutions (input rank %d)", xr);
  if (mb__engine_input(n, 2) >= 0) {
    if (!mb__engine_check_float_input(c, 2, 1))
      return 0;
    const mb_tensor *bias = mb__engine_constant(c->eg, n->inputs[2]);
    if (bias->rank != 1 || bias->dims[0] != w->dims[0])
      return mb__engine_reject(c, "bias shape does not match the weights");
    p->bias = true;
  }
  p->groups = mb__node_attr_int(n, "group", 1);
  p->c_in = x[1];
  p->c_out = w->dims[0];
  if (p->groups < 1 || p->c_in % p->groups != 0 || p->c_out % p->groups != 0 ||
      w->dims[1] != p->c_in / p->groups)
    return mb__engine_reject(c, "weights do not match the input and group");
  if (y->dims[1] != p->c_out || y->dims[0] != x[0])
    return mb__engine_reject(c, "output shape does not match the weights");
  p->w.nsp = xr - 2;
  const int64_t *ks;
  int64_t nks = mb__node_attr_ints(n, "kernel_shape", &ks);
  if (nks >= 0 && nks != p->w.nsp)
    return mb__engine_reject(c, "kernel_shape disagrees with the weights");
  for (int d = 0; d < p->w.nsp; d++) {
    if (nks >= 0 && ks[d] != w->dims[2 + d])
      return mb__engine_reject(c, "kernel_shape disagrees with the weights");
    p->w.in[d] = x[2 + d];
    p->w.out[d] = y->dims[2 + d];
    p->w.kernel[d] = w->dims[2 + d];
  }
  return window_resolve(c, &p->w);
}

static int check_conv(mb_engine_check *c) {
  conv_params p;
  return mb__dn_conv_get(c, &p);
}

int mb__dn_pool_get(mb_engine_check *c, pool_params *p) {
  const mb_node *n = c->n;
  int xr;
  int64_t x[MB_MAX_RANK];
  bool global = op_is(n, "GlobalAveragePool") || op_is(n, "GlobalMaxPool");
  bool average = op_is(n, "AveragePool") || op_is(n, "GlobalAveragePool");
  memset(p, 0, sizeof *p);
  if (!mb__engine_check_float_input(c, 0, 0) || !mb__engine_check_outputs(c))
    return 0;
  mb__engine_value_shape(c->eg, n->inputs[0], &xr, x, NULL);
  const mb_shape_info *y = out_shape(c);
  if (xr < 3 || xr > 5 || y->rank != xr)
    return mb__engine_reject(c, "only 1-D, 2-D and 3-D pooling (input rank %d)",
                             xr);
  p->w.nsp = xr - 2;
  for (int d = 0; d < p->w.nsp; d++) {
    p->w.in[d] = x[2 + d];
    p->w.out[d] = y->dims[2 + d];
  }
  if (global) {
    for (int d = 0; d < p->w.nsp; d++) {
      p->w.kernel[d] = x[2 + d];
      p->w.stride[d] = p->w.dilation[d] = 1;
      p->w.pad_l[d] = p->w.pad_r[d] = 0;
      if (p->w.out[d] != 1)
        return mb__engine_reject(c, "global pooling output is not 1");
    }
    p->alg = average ? dnnl_pooling_avg_exclude_padding : dnnl_pooling_max;
    return 1;
  }
  if (!mb__engine_attr_ints(n, "kernel_shape", p->w.nsp, 0, 1, p->w.kernel) ||
      mb__node_attr_ints(n, "kernel_shape", &(const int64_t *){NULL}) < 0)
    return mb__engine_reject(c, "kernel_shape must be %d values >= 1",
                             p->w.nsp);
  if (!window_resolve(c, &p->w))
    return 0;
  for (int d = 0; d < p->w.nsp; d++) {
    int64_t extent = (p->w.kernel[d] - 1) * p->w.dilation[d] + 1;
    if (p->w.pad_l[d] >= extent || p->w.pad_r[d] >= extent)
      return mb__engine_reject(c, "padding as large as the window");
  }
  if (average) {
    bool include = mb__node_attr_int(n, "count_include_pad", 0) != 0;
    if (include && p->w.extended)
      return mb__engine_reject(c, "ceil_mode with count_include_pad");
    p->alg = include ? dnnl_pooling_avg_include_padding
                     : dnnl_pooling_avg_exclude_padding;
  } else {
    if (mb__node_attr_int(n, "storage_order", 0) != 0 &&
        mb__engine_output(n, 1) >= 0)
      return mb__engine_reject(c, "storage_order is not supported");
    p->alg = dnnl_pooling_max;
  }
  return 1;
}

static int check_pool(mb_engine_check *c) {
  pool_params p;
  return mb__dn_pool_get(c, &p);
}

int mb__dn_mm_get(mb_engine_check *c, mm_params *p) {
  const mb_node *n = c->n;
  bool gemm = op_is(n, "Gemm");
  int ra, rb;
  int64_t a[MB_MAX_RANK], b[MB_MAX_RANK];
  memset(p, 0, sizeof *p);
  p->c = -1;
  p->alpha = p->beta = 1.0f;
  if (!mb__engine_check_float_input(c, 0, 0) ||
      !mb__engine_check_float_input(c, 1, 0) || !mb__engine_check_outputs(c))
    return 0;
  mb__engine_value_shape(c->eg, n->inputs[0], &ra, a, NULL);
  mb__engine_value_shape(c->eg, n->inputs[1], &rb, b, NULL);
  const mb_shape_info *y = out_shape(c);
  if (ra < 2 || rb < 2)
    return mb__engine_reject(c, "1-D operands are not supported");
  if (mb__engine_constant(c->eg, n->inputs[0]) &&
      mb__engine_constant(c->eg, n->inputs[1]))
    return mb__engine_reject(c, "both inputs are constant");
  p->rank = MB_MAX(ra, rb);
  if (y->rank != p->rank)
    return mb__engine_reject(c, "output rank %d differs from the inputs'",
                             y->rank);
  dims_pad(ra, a, p->rank, p->a_dims);
  dims_pad(rb, b, p->rank, p->b_dims);
  memcpy(p->y_dims, y->dims, (size_t)p->rank * sizeof *p->y_dims);
  if (gemm) {
    if (ra != 2 || rb != 2)
      return mb__engine_reject(c, "inputs must be 2-D");
    p->trans_a = mb__node_attr_int(n, "transA", 0) != 0;
    p->trans_b = mb__node_attr_int(n, "transB", 0) != 0;
    p->alpha = mb__node_attr_float(n, "alpha", 1.0f);
    p->beta = mb__node_attr_float(n, "beta", 1.0f);
    if (p->alpha == 0.0f)
      return mb__engine_reject(c, "alpha is 0");
  }
  int r = p->rank;
  int64_t m = p->a_dims[r - (p->trans_a ? 1 : 2)];
  int64_t k = p->a_dims[r - (p->trans_a ? 2 : 1)];
  int64_t kb = p->b_dims[r - (p->trans_b ? 1 : 2)];
  int64_t nn = p->b_dims[r - (p->trans_b ? 2 : 1)];
  if (k != kb || y->dims[r - 2] != m || y->dims[r - 1] != nn)
    return mb__engine_reject(c, "operand shapes do not match");
  for (int d = 0; d < r - 2; d++) {
    int64_t x = p->a_dims[d], w = p->b_dims[d];
    if ((x != w && x != 1 && w != 1) || y->dims[d] != MB_MAX(x, w))
      return mb__engine_reject(c, "batch dimensions do not broadcast");
  }
  if (gemm && mb__engine_input(n, 2) >= 0) {
    int rc;
    int64_t cd[MB_MAX_RANK], pc[2];
    if (!mb__engine_check_float_input(c, 2, 1))
      return mb__engine_reject(c, "C must be a float32 constant");
    mb__engine_value_shape(c->eg, n->inputs[2], &rc, cd, NULL);
    if (rc > 2)
      return mb__engine_reject(c, "C has rank %d", rc);
    dims_pad(rc, cd, 2, pc);
    if ((pc[0] != 1 && pc[0] != m) || (pc[1] != 1 && pc[1] != nn))
      return mb__engine_reject(c, "C does not broadcast to the output");
    p->c = 2;
    p->c_is_bias = pc[0] == 1;
    if (!p->c_is_bias && p->beta != 1.0f)
      return mb__engine_reject(c, "C of shape [M, N] with beta != 1");
  }
  return 1;
}

static int check_mm(mb_engine_check *c) {
  mm_params p;
  return mb__dn_mm_get(c, &p);
}

int mb__dn_softmax_get(mb_engine_check *c, softmax_params *p) {
  int r;
  int64_t x[MB_MAX_RANK];
  if (!mb__engine_check_float_input(c, 0, 0) || !mb__engine_check_outputs(c))
    return 0;
  mb__engine_value_shape(c->eg, c->n->inputs[0], &r, x, NULL);
  int64_t def = c->opset < 13 ? 1 : -1;
  p->axis = norm_axis(mb__node_attr_int(c->n, "axis", def), MB_MAX(r, 1));
  if (p->axis < 0)
    return mb__engine_reject(c, "axis out of range");
  p->log = op_is(c->n, "LogSoftmax");
  p->coerce_2d = c->opset < 13 && r > 0 && p->axis != r - 1;
  return 1;
}

static int check_softmax(mb_engine_check *c) {
  softmax_params p;
  return mb__dn_softmax_get(c, &p);
}

int mb__dn_lnorm_get(mb_engine_check *c, lnorm_params *p) {
  int r;
  int64_t x[MB_MAX_RANK];
  if (!mb__engine_check_float_input(c, 0, 0) ||
      !mb__engine_check_float_input(c, 1, 1) || !mb__engine_check_outputs(c))
    return 0;
  mb__engine_value_shape(c->eg, c->n->inputs[0], &r, x, NULL);
  int axis = norm_axis(mb__node_attr_int(c->n, "axis", -1), r);
  if (axis < 0)
    return mb__engine_reject(c, "axis out of range");
  if (mb__node_attr_int(c->n, "stash_type", 1) != 1)
    return mb__engine_reject(c, "stash_type must be 1 (float32)");
  p->outer = mb__engine_numel(axis, x);
  p->inner = mb__engine_numel(r - axis, x + axis);
  p->epsilon = mb__node_attr_float(c->n, "epsilon", 1e-5f);
  if (mb__engine_constant(c->eg, c->n->inputs[1])->numel != p->inner)
    return mb__engine_reject(c, "scale does not match the normalized shape");
  p->bias = mb__engine_input(c->n, 2) >= 0;
  if (p->bias &&
      (!mb__engine_check_float_input(c, 2, 1) ||
       mb__engine_constant(c->eg, c->n->inputs[2])->numel != p->inner))
    return mb__engine_reject(c,
                             "bias must be a constant of the normalized shape");
  return 1;
}

static int check_lnorm(mb_engine_check *c) {
  lnorm_params p;
  return mb__dn_lnorm_get(c, &p);
}

int mb__dn_check_batchnorm(mb_engine_check *c) {
  int r;
  int64_t x[MB_MAX_RANK];
  if (!mb__engine_check_float_input(c, 0, -1) || !mb__engine_check_outputs(c))
    return 0;
  if (c->n->n_inputs != 5)
    return mb__engine_reject(c, "expected 5 inputs");
  mb__engine_value_shape(c->eg, c->n->inputs[0], &r, x, NULL);
  if (r < 2 || r > 5)
    return mb__engine_reject(c, "input rank %d (2 to 5 run on oneDNN)", r);
  for (int i = 1; i < 5; i++) {
    if (!mb__engine_check_float_input(c, i, 1))
      return 0;
    if (mb__engine_constant(c->eg, c->n->inputs[i])->numel != x[1])
      return mb__engine_reject(
          c, "input %d does not have one value per channel", i);
  }
  if (mb__node_attr_int(c->n, "training_mode", 0) != 0)
    return mb__engine_reject(c, "training_mode is not supported");
  if (c->opset < 9 && mb__node_attr_int(c->n, "spatial", 1) != 1)
    return mb__engine_reject(c, "spatial=0 is not supported");
  return 1;
}

/* ---- Where --------------------------------------------------------------- */

/* Where(cond, x, y): cond a constant, one branch a float scalar constant
 * and the other an activation of the output's shape: PyTorch's
 * masked_fill (a causal mask). Computed as dst = x * keep + fill * !keep,
 * or, for an infinite fill (x * 0 + inf would be NaN), dst = x + (keep ? 0
 * : fill): finite activations give exactly Where's result. */
int mb__dn_where_get(mb_engine_check *c, where_params *p) {
  const mb_node *n = c->n;
  int rc;
  int64_t cd[MB_MAX_RANK], pd[MB_MAX_RANK];
  if (n->n_inputs != 3)
    return mb__engine_reject(c, "%d inputs", n->n_inputs);
  const mb_tensor *cond = mb__engine_constant(c->eg, n->inputs[0]);
  if (!cond || cond->dtype != MB_DTYPE_BOOL)
    return mb__engine_reject(c, "the condition is not a bool constant");
  const mb_tensor *kx = mb__engine_constant(c->eg, n->inputs[1]);
  const mb_tensor *ky = mb__engine_constant(c->eg, n->inputs[2]);
  if ((kx != NULL) == (ky != NULL))
    return mb__engine_reject(
        c, "expected one constant scalar and one activation branch");
  p->act = kx ? 2 : 1;
  const mb_tensor *k = kx ? kx : ky;
  if (k->numel != 1 || k->dtype != MB_DTYPE_FLOAT)
    return mb__engine_reject(c, "the constant branch is not a float scalar");
  p->fill = ((const float *)k->data)[0];
  p->fill_if_true = kx != NULL;
  if (!mb__engine_check_float_input(c, p->act, -1) ||
      !mb__engine_check_outputs(c))
    return 0;
  const mb_shape_info *y = out_shape(c);
  int ra;
  int64_t a[MB_MAX_RANK];
  mb__engine_value_shape(c->eg, n->inputs[p->act], &ra, a, NULL);
  if (!dims_equal(ra, a, y->rank, y->dims))
    return mb__engine_reject(c, "the activation is broadcast");
  mb__engine_value_shape(c->eg, n->inputs[0], &rc, cd, NULL);
  if (rc > y->rank)
    return mb__engine_reject(c, "the condition has a higher rank");
  dims_pad(rc, cd, y->rank, pd);
  for (int d = 0; d < y->rank; d++)
    if (pd[d] != 1 && pd[d] != y->dims[d])
      return mb__engine_reject(c, "the condition does not broadcast");
  if (p->fill != p->fill)
    return mb__engine_reject(c, "the constant branch is NaN");
  return 1;
}

static int check_where(mb_engine_check *c) {
  where_params p;
  return mb__dn_where_get(c, &p);
}

/* A constant operand of Where's lowering, of cond's shape (broadcast by
 * the primitive): as_mask: keep ? 0 : fill (added to the activation);
 * else keep ? 1 : 0 (multiplied), where keep is where the activation is
 * selected. Aligned, the caller's; NULL when out of memory. */
float *mb__dn_where_data(const mb_tensor *cond, float fill, bool fill_if_true,
                         bool as_mask) {
  float *d = mb__aligned_alloc((size_t)MB_MAX(cond->numel, 1) * sizeof *d);
  for (int64_t i = 0; d && i < cond->numel; i++) {
    bool keep = (mb__tensor_get_i64(cond, i) != 0) != fill_if_true;
    d[i] = as_mask ? (keep ? 0.0f : fill) : (keep ? 1.0f : 0.0f);
  }
  return d;
}

/* ---- data movement ------------------------------------------------------ */

int mb__dn_transpose_get(mb_engine_check *c, int *perm) {
  int r;
  int64_t x[MB_MAX_RANK];
  const int64_t *p;
  if (!mb__engine_check_float_input(c, 0, 0) || !mb__engine_check_outputs(c))
    return 0;
  mb__engine_value_shape(c->eg, c->n->inputs[0], &r, x, NULL);
  int64_t k = mb__node_attr_ints(c->n, "perm", &p);
  if (k >= 0 && k != r)
    return mb__engine_reject(c, "perm has %lld entries for rank %d",
                             (long long)k, r);
  int seen = 0;
  for (int i = 0; i < r; i++) {
    int64_t a = k >= 0 ? p[i] : r - 1 - i;
    if (a < 0 || a >= r || (seen & (1 << a)))
      return mb__engine_reject(c, "perm is not a permutation");
    seen |= 1 << a;
    perm[i] = (int)a;
  }
  return 1;
}

static int check_transpose(mb_engine_check *c) {
  int perm[MB_MAX_RANK];
  return mb__dn_transpose_get(c, perm);
}

/* Reshape, Flatten, Squeeze, Unsqueeze: the output shape is known, the
 * data is reinterpreted in a plain layout. */
static int check_reshape(mb_engine_check *c) {
  return mb__engine_check_float_input(c, 0, 0) && mb__engine_check_outputs(c);
}

static int check_identity(mb_engine_check *c) {
  if (!mb__engine_check_float_input(c, 0, 0) || !mb__engine_check_outputs(c))
    return 0;
  if (op_is(c->n, "Dropout") && mb__engine_input(c->n, 2) >= 0) {
    const mb_tensor *t = mb__engine_constant(c->eg, c->n->inputs[2]);
    if (!t || t->numel != 1 || mb__tensor_get_f64(t, 0) != 0.0)
      return mb__engine_reject(c, "training_mode must be a constant false");
  }
  return 1;
}

int mb__dn_check_concat(mb_engine_check *c) {
  int r;
  int64_t x[MB_MAX_RANK];
  if (c->n->n_inputs < 1 || c->n->n_inputs > DN_MAX_CONCAT)
    return mb__engine_reject(c, "%d inputs (1 to %d run on oneDNN)",
                             c->n->n_inputs, DN_MAX_CONCAT);
  for (int i = 0; i < c->n->n_inputs; i++)
    if (!mb__engine_check_float_input(c, i, 0))
      return 0;
  if (!mb__engine_check_outputs(c))
    return 0;
  mb__engine_value_shape(c->eg, c->n->inputs[0], &r, x, NULL);
  if (norm_axis(mb__node_attr_int(c->n, "axis", 0), r) < 0)
    return mb__engine_reject(c, "axis out of range");
  return 1;
}

static const struct reduce_row {
  const char *op;
  dnnl_alg_kind_t alg;
  int64_t axes_input_since; /* opset from which axes is an input */
} reduce_rows[] = {
    {"ReduceMean", dnnl_reduction_mean, 18},
    {"ReduceSum", dnnl_reduction_sum, 13},
    {"ReduceMax", dnnl_reduction_max, 18},
    {"ReduceMin", dnnl_reduction_min, 18},
    {"ReduceProd", dnnl_reduction_mul, 18},
};

int mb__dn_reduce_get(mb_engine_check *c, reduce_params *p) {
  const mb_node *n = c->n;
  const struct reduce_row *row = NULL;
  int64_t x[MB_MAX_RANK], axes[DN_RANK_MAX];
  int64_t n_axes;
  for (size_t i = 0; i < MB_ARRAY_COUNT(reduce_rows) && !row; i++)
    if (op_is(n, reduce_rows[i].op))
      row = &reduce_rows[i];
  if (!row)
    return mb__engine_reject(c, "not a reduction");
  if (!mb__engine_check_float_input(c, 0, -1) || !mb__engine_check_outputs(c))
    return 0;
  mb__engine_value_shape(c->eg, n->inputs[0], &p->rank, x, NULL);
  p->alg = row->alg;
  if (c->opset >= row->axes_input_since) {
    n_axes = 0;
    if (mb__engine_input(n, 1) >= 0 &&
        (n_axes = mb__engine_int_input(c, 1, axes, DN_RANK_MAX)) < 0)
      return 0;
    if (n_axes == 0 && mb__node_attr_int(n, "noop_with_empty_axes", 0))
      return mb__engine_reject(c, "noop_with_empty_axes is not supported");
  } else {
    const int64_t *a;
    n_axes = mb__node_attr_ints(n, "axes", &a);
    if (n_axes > DN_RANK_MAX)
      return mb__engine_reject(c, "too many axes");
    for (int64_t i = 0; i < n_axes; i++)
      axes[i] = a[i];
    n_axes = MB_MAX(n_axes, 0);
  }
  memcpy(p->kept_dims, x, (size_t)p->rank * sizeof *x);
  for (int i = 0; i < p->rank && n_axes == 0; i++)
    p->kept_dims[i] = 1;
  for (int64_t i = 0; i < n_axes; i++) {
    int a = norm_axis(axes[i], p->rank);
    if (a < 0)
      return mb__engine_reject(c, "axis out of range");
    p->kept_dims[a] = 1;
  }
  if (p->rank < 1)
    return mb__engine_reject(c, "scalar input");
  if (mb__engine_numel(p->rank, p->kept_dims) !=
      mb__engine_numel(out_shape(c)->rank, out_shape(c)->dims))
    return mb__engine_reject(c, "output shape does not match the axes");
  return 1;
}

static int check_reduce(mb_engine_check *c) {
  reduce_params p;
  return mb__dn_reduce_get(c, &p);
}

int mb__dn_slice_get(mb_engine_check *c, slice_params *p) {
  const mb_node *n = c->n;
  int64_t x[MB_MAX_RANK], starts[DN_RANK_MAX], axes[DN_RANK_MAX],
      steps[DN_RANK_MAX];
  int64_t ns, na, nst;
  if (!mb__engine_check_float_input(c, 0, 0) || !mb__engine_check_outputs(c))
    return 0;
  mb__engine_value_shape(c->eg, n->inputs[0], &p->rank, x, NULL);
  const mb_shape_info *y = out_shape(c);
  if (y->rank != p->rank)
    return mb__engine_reject(c, "output rank differs");
  if (c->opset < 10) {
    const int64_t *a;
    ns = mb__node_attr_ints(n, "starts", &a);
    if (ns < 0 || ns > DN_RANK_MAX)
      return mb__engine_reject(c, "bad starts");
    memcpy(starts, a, (size_t)ns * sizeof *a);
    na = mb__node_attr_ints(n, "axes", &a);
    if (na > DN_RANK_MAX)
      return mb__engine_reject(c, "bad axes");
    if (na > 0)
      memcpy(axes, a, (size_t)na * sizeof *a);
    nst = -1;
  } else {
    if ((ns = mb__engine_int_input(c, 1, starts, DN_RANK_MAX)) < 0)
      return 0;
    na = -1;
    if (mb__engine_input(n, 3) >= 0 &&
        (na = mb__engine_int_input(c, 3, axes, DN_RANK_MAX)) < 0)
      return 0;
    nst = -1;
    if (mb__engine_input(n, 4) >= 0 &&
        (nst = mb__engine_int_input(c, 4, steps, DN_RANK_MAX)) < 0)
      return 0;
  }
  if ((na >= 0 && na != ns) || (nst >= 0 && nst != ns))
    return mb__engine_reject(c, "starts, axes and steps differ in length");
  for (int i = 0; i < p->rank; i++) {
    p->start[i] = 0;
    p->step[i] = 1;
  }
  for (int64_t i = 0; i < ns; i++) {
    int a = norm_axis(na >= 0 ? axes[i] : i, p->rank);
    int64_t st = nst >= 0 ? steps[i] : 1, s = starts[i];
    if (a < 0)
      return mb__engine_reject(c, "axis out of range");
    if (st < 1)
      return mb__engine_reject(c, "only positive steps");
    if (s < 0)
      s += x[a];
    p->start[a] = MB_MAX(0, MB_MIN(s, x[a]));
    p->step[a] = st;
  }
  for (int i = 0; i < p->rank; i++)
    if (y->dims[i] > 0 && p->start[i] + (y->dims[i] - 1) * p->step[i] >= x[i])
      return mb__engine_reject(c, "output shape does not match the slice");
  return 1;
}

static int check_slice(mb_engine_check *c) {
  slice_params p;
  return mb__dn_slice_get(c, &p);
}

int mb__dn_check_split(mb_engine_check *c) {
  int r;
  int64_t x[MB_MAX_RANK], total = 0;
  if (!mb__engine_check_float_input(c, 0, 0))
    return 0;
  mb__engine_value_shape(c->eg, c->n->inputs[0], &r, x, NULL);
  int axis = norm_axis(mb__node_attr_int(c->n, "axis", 0), r);
  if (axis < 0)
    return mb__engine_reject(c, "axis out of range");
  for (int i = 0; i < c->n->n_outputs; i++) {
    int v = c->n->outputs[i];
    if (v < 0)
      return mb__engine_reject(c, "output %d is omitted", i);
    const mb_shape_info *s = &c->eg->shapes[v];
    if (!s->known || s->dtype != MB_DTYPE_FLOAT || s->rank != r)
      return mb__engine_reject(c, "output %d has no static float32 shape", i);
    total += s->dims[axis];
  }
  if (total != x[axis])
    return mb__engine_reject(c, "outputs do not cover the input");
  return 1;
}

static const dn_op_row dn_ops[] = {
    {"Conv", check_conv, NULL, DN_HEAD_CONV},
    {"Gemm", check_mm, NULL, DN_HEAD_MM},
    {"MatMul", check_mm, NULL, DN_HEAD_MM},
    {"Add", check_binary, mb__dn_lower_binary},
    {"Sub", check_binary, mb__dn_lower_binary},
    {"Mul", check_binary, mb__dn_lower_binary},
    {"Div", check_binary, mb__dn_lower_binary},
    {"Max", check_binary, mb__dn_lower_binary},
    {"Min", check_binary, mb__dn_lower_binary},
#define MB_X(op, alg, alpha, beta, attr)                                       \
  {op, mb__dn_check_unary, mb__dn_lower_unary},
    DN_UNARY_LIST(MB_X)
#undef MB_X
        {"Clip", mb__dn_check_unary, mb__dn_lower_unary},
    {"HardSigmoid", mb__dn_check_unary, mb__dn_lower_unary},
    {"Pow", mb__dn_check_unary, mb__dn_lower_unary},
    {"Gelu", mb__dn_check_unary, mb__dn_lower_unary},
    {"Erf", check_erf, mb__dn_lower_erf},
    {"MaxPool", check_pool, mb__dn_lower_pool},
    {"AveragePool", check_pool, mb__dn_lower_pool},
    {"GlobalAveragePool", check_pool, mb__dn_lower_pool},
    {"GlobalMaxPool", check_pool, mb__dn_lower_pool},
    {"BatchNormalization", mb__dn_check_batchnorm, mb__dn_lower_batchnorm},
    {"Softmax", check_softmax, mb__dn_lower_softmax},
    {"LogSoftmax", check_softmax, mb__dn_lower_softmax},
    {"LayerNormalization", check_lnorm, mb__dn_lower_lnorm},
    {"Transpose", check_transpose, mb__dn_lower_transpose},
    {"Reshape", check_reshape, mb__dn_lower_reshape},
    {"Flatten", check_reshape, mb__dn_lower_reshape},
    {"Squeeze", check_reshape, mb__dn_lower_reshape},
    {"Unsqueeze", check_reshape, mb__dn_lower_reshape},
    {"Identity", check_identity, mb__dn_lower_identity},
    {"Dropout", check_identity, mb__dn_lower_identity},
    {"Concat", mb__dn_check_concat, mb__dn_lower_concat},
    {"ReduceMean", check_reduce, mb__dn_lower_reduce},
    {"ReduceSum", check_reduce, mb__dn_lower_reduce},
    {"ReduceMax", check_reduce, mb__dn_lower_reduce},
    {"ReduceMin", check_reduce, mb__dn_lower_reduce},
    {"ReduceProd", check_reduce, mb__dn_lower_reduce},
    {"Slice", check_slice, mb__dn_lower_slice},
    {"Split", mb__dn_check_split, mb__dn_lower_split},
    {"Where", check_where, mb__dn_lower_where},
    {"LSTM", mb__dn_check_rnn, mb__dn_lower_rnn},
    {"GRU", mb__dn_check_rnn, mb__dn_lower_rnn},
    {"RNN", mb__dn_check_rnn, mb__dn_lower_rnn},
};

const dn_op_row *mb__dn_op_find(const mb_node *n) {
  if (n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
    return NULL;
  for (size_t i = 0; i < MB_ARRAY_COUNT(dn_ops); i++)
    if (strcmp(n->op_type, dn_ops[i].op_type) == 0)
      return &dn_ops[i];
  return NULL;
}

#endif /* MB_HAVE_DNNL */
