/* Static quantisation: the plan (which ops get Q/DQ pairs on which values,
 * which Relu/Clip a Q absorbs), then the rewrite (Q/DQ pairs, int8 weights
 * and int32 biases behind DequantizeLinear), as quantize.h describes. */
#include "passes/quantize_internal.h"

/* How an op takes part in QDQ quantisation, after the fusions of ORT's CPU
 * provider (onnxruntime/core/optimizer/qdq_transformer). */
typedef enum op_kind {
  KIND_NONE = 0,
  KIND_CONV,       /* DQ x, DQ w, DQ int32 bias -> Conv -> Q: QLinearConv */
  KIND_MATMUL,     /* QLinearMatMul, or MatMulIntegerToFloat without Q */
  KIND_GEMM,       /* QGemm */
  KIND_BINARY,     /* QLinearAdd, QLinearMul */
  KIND_UNARY,      /* QLinearAveragePool, QLinearGlobalAveragePool ... */
  KIND_CONCAT,     /* QLinearConcat */
  KIND_KEEP_SCALE, /* runs on uint8 with the input's scale: Q/DQ dropped */
  KIND_ACTIVATION, /* Relu, Clip: absorbed by the Q node after their input */
} op_kind;

static const struct {
  const char *op_type;
  op_kind kind;
  int64_t min_opset; /* the first opset ORT has the integer form for */
} op_kinds[] = {
    {"Conv", KIND_CONV, 10},
    {"MatMul", KIND_MATMUL, 10},
    {"Gemm", KIND_GEMM, 10},
    {"Add", KIND_BINARY, 10},
    {"Mul", KIND_BINARY, 10},
    {"AveragePool", KIND_UNARY, 10},
    {"GlobalAveragePool", KIND_UNARY, 10},
    {"Sigmoid", KIND_UNARY, 10},
    {"LeakyRelu", KIND_UNARY, 10},
    {"Concat", KIND_CONCAT, 10},
    {"MaxPool", KIND_KEEP_SCALE, 12},
    {"Reshape", KIND_KEEP_SCALE, 10},
    {"Transpose", KIND_KEEP_SCALE, 10},
    {"Flatten", KIND_KEEP_SCALE, 10},
    {"Squeeze", KIND_KEEP_SCALE, 10},
    {"Unsqueeze", KIND_KEEP_SCALE, 10},
    {"Resize", KIND_KEEP_SCALE, 11},
    {"Gather", KIND_KEEP_SCALE, 10},
    {"Slice", KIND_KEEP_SCALE, 10},
    {"Relu", KIND_ACTIVATION, 10},
    {"Clip", KIND_ACTIVATION, 10},
};

static op_kind kind_of(const mb_node *n, int64_t opset) {
  if (n->domain[0])
    return KIND_NONE;
  for (size_t k = 0; k < MB_ARRAY_COUNT(op_kinds); k++)
    if (strcmp(op_kinds[k].op_type, n->op_type) == 0)
      return opset >= op_kinds[k].min_opset ? op_kinds[k].kind : KIND_NONE;
  return KIND_NONE;
}

/* Kinds whose fused form ends in a Q node of their own scale. */
static bool kind_has_own_output(op_kind kind) {
  return kind == KIND_CONV || kind == KIND_MATMUL || kind == KIND_GEMM ||
         kind == KIND_BINARY || kind == KIND_UNARY || kind == KIND_CONCAT;
}

typedef struct qctx {
  mb_graph *g;
  mb_quant_params *params;
  const mb_quant_options *opt;
  mb_quant_stats *st;
  mb_dtype act_dtype;
  bool per_channel; /* weights, where the opset allows (DQ axis: 13) */
  int n_orig;       /* nodes before the rewrite */
  int *param;       /* per value: index of its activation entry, or -1 */
  bool *qdq;        /* per value: gets a Q -> DQ pair */
  int *dq;          /* per value: the DQ output replacing it, or -1 */
  int *uses;        /* per value: node inputs reading it */
  bool *sub_read;   /* per value: read by a subgraph */
  op_kind *kind;    /* per node: the kind it is quantised as, or NONE */
  int *source;      /* per removed Relu/Clip: the node producing its input */
} qctx;

/* Value v can be a quantised activation: it has a range and is no
 * constant. */
static bool act_ok(const qctx *c, int v) {
  return v >= 0 && c->param[v] >= 0 && !mb__qz_constant_of(c->g, v);
}

static bool clip_removable(const mb_graph *g, const mb_node *n) {
  if (strcmp(n->op_type, "Relu") == 0)
    return true;
  if (n->n_inputs > 1 && n->inputs[1] >= 0) {
    const mb_tensor *lo = mb__qz_constant_of(g, n->inputs[1]);
    return lo && lo->numel == 1 && lo->data && mb__tensor_get_f64(lo, 0) <= 0;
  }
  return mb__node_attr_float(n, "min", -FLT_MAX) <= 0.0f;
}

/* Relu/Clip node i: absorbed by the Q node of its input's producer? */
static bool activation_removable(const qctx *c, int i) {
  const mb_graph *g = c->g;
  const mb_node *n = &g->nodes[i];
  if (c->act_dtype != MB_DTYPE_UINT8 || c->opt->keep_relu || n->n_inputs < 1 ||
      n->n_outputs != 1 || !clip_removable(g, n))
    return false;
  int x = n->inputs[0], y = n->outputs[0];
  if (x < 0 || y < 0 || c->param[y] < 0 || c->uses[x] != 1 || c->sub_read[x] ||
      c->sub_read[y] || c->uses[y] == 0 || mb__qz_is_graph_output(g, x) ||
      mb__qz_is_graph_output(g, y) || mb__qz_is_graph_input(g, x))
    return false;
  int p = g->values[x].producer;
  return p >= 0 && p < c->n_orig && kind_has_own_output(c->kind[p]) &&
         g->nodes[p].n_outputs >= 1 && g->nodes[p].outputs[0] == x;
}

/* Decides which nodes are quantised and which values get Q/DQ pairs. */
static void plan(qctx *c, int64_t opset) {
  mb_graph *g = c->g;
  for (int i = 0; i < c->n_orig; i++) {
    const mb_node *n = &g->nodes[i];
    op_kind kind = kind_of(n, opset);
    int in0 = n->n_inputs > 0 ? n->inputs[0] : -1;
    int in1 = n->n_inputs > 1 ? n->inputs[1] : -1;
    int out = n->n_outputs > 0 ? n->outputs[0] : -1;
    bool ok = false;
    if (kind == KIND_NONE)
      continue;
    bool weighted =
        kind == KIND_CONV || kind == KIND_MATMUL || kind == KIND_GEMM;
    if (c->opt->products_only && !weighted)
      continue;
    if (mb__qz_excluded(c->opt, n)) {
      c->st->nodes_skipped += weighted;
      continue;
    }
    const mb_tensor *w = mb__qz_constant_of(g, in1);
    switch (kind) {
    case KIND_CONV:
      ok = act_ok(c, in0) && w && w->dtype == MB_DTYPE_FLOAT && w->rank >= 3 &&
           w->numel > 0 &&
           (n->n_inputs < 3 || n->inputs[2] < 0 ||
            (mb__qz_is_float_constant(g, n->inputs[2]) &&
             mb__qz_constant_of(g, n->inputs[2])->numel == w->dims[0]));
      break;
    case KIND_MATMUL:
    case KIND_GEMM:
      ok = act_ok(c, in0) &&
           ((w && w->dtype == MB_DTYPE_FLOAT && w->rank == 2 && w->numel > 0) ||
            (act_ok(c, in1) && !c->opt->products_only));
      break;
    case KIND_BINARY:
      ok = n->n_inputs == 2 && (act_ok(c, in0) || act_ok(c, in1)) &&
           (act_ok(c, in0) || mb__qz_is_float_constant(g, in0)) &&
           (act_ok(c, in1) || mb__qz_is_float_constant(g, in1));
      break;
    case KIND_UNARY:
      ok = act_ok(c, in0);
      break;
    case KIND_CONCAT:
      ok = n->n_inputs > 0;
      for (int j = 0; j < n->n_inputs; j++)
        ok &= act_ok(c, n->inputs[j]);
      break;
    case KIND_KEEP_SCALE:
      ok = in0 >= 0 && c->qdq[in0] && c->param[in0] >= 0 && out >= 0 &&
           n->n_outputs == 1;
      if (ok)
        c->param[out] = c->param[in0];
      break;
    case KIND_ACTIVATION:
      if (activation_removable(c, i)) {
        int p = g->values[in0].producer;
        c->source[i] = p;
        c->qdq[in0] = false;
        c->qdq[out] = true;
        c->kind[i] = KIND_ACTIVATION;
        c->st->nodes_removed++;
      }
      continue;
    case KIND_NONE:
      break;
    }
    if (!ok) {
      c->st->nodes_skipped += weighted;
      continue;
    }
    c->kind[i] = kind;
    c->st->nodes_quantized++;
    c->st->conv_quantized += kind == KIND_CONV;
    c->st->matmul_quantized += kind == KIND_MATMUL;
    c->st->gemm_quantized += kind == KIND_GEMM;
    /* Activation inputs get Q/DQ pairs; constants are quantised by
     * rewrite_node, and a Gemm's bias C never goes through a Q. */
    int n_act = kind == KIND_KEEP_SCALE ? 0 : weighted ? 2 : n->n_inputs;
    for (int j = 0; j < n_act && j < n->n_inputs; j++)
      if (act_ok(c, n->inputs[j]))
        c->qdq[n->inputs[j]] = true;
    /* Its output gets its own Q unless nothing reads it in the graph (a
     * graph output then stays exactly what the op computes). */
    if (out >= 0 && c->param[out] >= 0 && c->uses[out] > 0 &&
        !mb__qz_is_graph_output(g, out) && !c->sub_read[out] &&
        !c->opt->products_only)
      c->qdq[out] = true;
  }
}

static const mb_quant_param *param_at(const qctx *c, int v) {
  return &c->params->tensors[c->param[v]];
}

/* Marks the entry of value v as applied with the parameters of `src`. */
static mb_status mark_applied(qctx *c, int v, int src, mb_error *err) {
  int e = mb__quant_params_add(c->params, c->g->values[v].name,
                               MB_QUANT_KIND_ACTIVATION, err);
  if (e < 0)
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  mb_quant_param *p = &c->params->tensors[e];
  const mb_quant_param *s = &c->params->tensors[src];
  if (p != s) {
    p->kind = MB_QUANT_KIND_ACTIVATION;
    p->dtype = s->dtype;
    p->min = s->min;
    p->max = s->max;
    p->axis = -1;
    p->scales[0] = s->scales[0];
    p->zero_points[0] = s->zero_points[0];
  }
  p->applied = 1;
  return MB_STATUS_OK;
}

/* Scalar scale and zero-point initializers for activation entry e. */
static mb_status scale_zp_inits(qctx *c, const char *base, int e, int *s_out,
                                int *z_out, mb_error *err) {
  const mb_quant_param *p = &c->params->tensors[e];
  float scale = p->scales[0], zpf = (float)p->zero_points[0];
  mb_tensor *s = NULL, *z = NULL;
  mb_status status =
      mb__qz_small_tensor(MB_DTYPE_FLOAT, 1, false, &scale, &s, err);
  if (!status)
    status = mb__qz_small_tensor(p->dtype, 1, false, &zpf, &z, err);
  if (status) {
    mb_tensor_free(s);
    return status;
  }
  *s_out = mb__qz_new_initializer(c->g, base, "_scale", s, err);
  *z_out = *s_out < 0
               ? -1
               : mb__qz_new_initializer(c->g, base, "_zero_point", z, err);
  if (*s_out < 0)
    mb_tensor_free(z);
  return *z_out < 0 ? (err ? err->status : MB_STATUS_OUT_OF_MEMORY)
                    : MB_STATUS_OK;
}

/* Q -> DQ after activation v; every original node reading v reads the DQ
 * output instead. */
static mb_status insert_qdq(qctx *c, int v, mb_error *err) {
  mb_graph *g = c->g;
  const char *name = g->values[v].name;
  int s, z;
  mb_status status = scale_zp_inits(c, name, c->param[v], &s, &z, err);
  if (status)
    return status;
  int q = mb__qz_new_value(g, name, "_QuantizeLinear_Output", err);
  int dq =
      q < 0 ? -1 : mb__qz_new_value(g, name, "_DequantizeLinear_Output", err);
  if (dq < 0)
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  for (int i = 0; i < c->n_orig; i++) {
    mb_node *n = &g->nodes[i];
    for (int j = 0; j < n->n_inputs; j++)
      if (n->inputs[j] == v)
        n->inputs[j] = dq;
  }
  const int q_in[3] = {v, s, z}, dq_in[3] = {q, s, z};
  if (mb__qz_add_node(g, "QuantizeLinear", "", 3, q_in, 1, &q, err) < 0 ||
      mb__qz_add_node(g, "DequantizeLinear", "", 3, dq_in, 1, &dq, err) < 0)
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  c->dq[v] = dq;
  c->st->activations_quantized++;
  return mark_applied(c, v, c->param[v], err);
}

/* DequantizeLinear of a quantised copy of constant v: int8 symmetric over
 * [-qmax, qmax] when `qmax` is set (a weight: per channel along axis >= 0),
 * else per tensor in the activation type over the data's range. Sets
 * *dq_out and *entry_out (its parameters, named after the constant's
 * source). One DQ per (constant, axis) is shared by the nodes reading it. */
static mb_status constant_dq(qctx *c, int v, int axis, int qmax, int *dq_out,
                             int *entry_out, mb_error *err) {
  bool weight = qmax > 0;
  mb_graph *g = c->g;
  const mb_tensor *w = mb__qz_constant_of(g, v);
  v = mb__qz_constant_source(g, v);
  const char *name = g->values[v].name;
  int e = mb__quant_params_add(c->params, name, MB_QUANT_KIND_WEIGHT, err);
  if (e < 0)
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  *entry_out = e;
  mb_quant_param *p = &c->params->tensors[e];
  if (p->applied && p->kind == MB_QUANT_KIND_WEIGHT && p->axis == axis &&
      c->dq[v] >= 0) {
    *dq_out = c->dq[v];
    return MB_STATUS_OK;
  }
  int64_t channels = axis >= 0 ? w->dims[axis] : 1;
  mb_tensor *q = NULL, *s = NULL, *z = NULL;
  mb_status status = mb__qz_param_set_channels(p, channels, err);
  if (status)
    return status;
  p->kind = MB_QUANT_KIND_WEIGHT;
  p->axis = axis;
  if (weight) {
    p->dtype = MB_DTYPE_INT8;
    status = mb__qz_quantize_symmetric(w, axis, qmax, &q, p->scales, &p->min,
                                       &p->max, err);
  } else {
    /* A constant operand of Add/Mul: quantised like an activation. */
    const float *x = w->data;
    double lo = 0.0, hi = 0.0;
    for (int64_t i = 0; i < w->numel; i++)
      if (isfinite(x[i])) {
        lo = MB_MIN(lo, (double)x[i]);
        hi = MB_MAX(hi, (double)x[i]);
      }
    p->dtype = c->act_dtype;
    p->min = lo;
    p->max = hi;
    mb__quant_scale_zero_point(lo, hi, p->dtype, &p->scales[0],
                               &p->zero_points[0]);
    status = mb_tensor_create(p->dtype, w->rank, w->dims, &q, err);
    int32_t lo_q = p->dtype == MB_DTYPE_UINT8 ? 0 : -127;
    int32_t hi_q = p->dtype == MB_DTYPE_UINT8 ? 255 : 127;
    for (int64_t i = 0; !status && i < w->numel; i++) {
      float r = nearbyintf(x[i] / p->scales[0]) + (float)p->zero_points[0];
      int32_t iv = r != r            ? p->zero_points[0]
                   : r < (float)lo_q ? lo_q
                   : r > (float)hi_q ? hi_q
                                     : (int32_t)r;
      mb__tensor_set_f64(q, i, iv);
    }
  }
  float *zps = NULL;
  if (!status && !(zps = calloc((size_t)channels, sizeof *zps)))
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int64_t ch = 0; !status && ch < channels; ch++)
    zps[ch] = (float)p->zero_points[ch];
  if (!status)
    status = mb__qz_small_tensor(MB_DTYPE_FLOAT, channels, axis >= 0, p->scales,
                                 &s, err);
  if (!status)
    status = mb__qz_small_tensor(p->dtype, channels, axis >= 0, zps, &z, err);
  free(zps);
  if (status) {
    mb_tensor_free(q);
    mb_tensor_free(s);
    return status;
  }
  c->st->weight_bytes_before += (int64_t)w->nbytes;
  c->st->weight_bytes_after += (int64_t)(q->nbytes + s->nbytes);
  int qv = mb__qz_new_initializer(g, name, "_quantized", q, err), sv = -1,
      zv = -1;
  if (qv >= 0) {
    sv = mb__qz_new_initializer(g, name, "_scale", s, err);
    s = NULL;
  }
  if (sv >= 0) {
    zv = mb__qz_new_initializer(g, name, "_zero_point", z, err);
    z = NULL;
  }
  int dq =
      zv < 0 ? -1 : mb__qz_new_value(g, name, "_DequantizeLinear_Output", err);
  const int dq_in[3] = {qv, sv, zv};
  int node = dq < 0 ? -1
                    : mb__qz_add_node(g, "DequantizeLinear", "", 3, dq_in, 1,
                                      &dq, err);
  mb_tensor_free(s);
  mb_tensor_free(z);
  if (node < 0 || (axis >= 0 && mb__node_set_int(g, node, "axis", axis, err)))
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  p->applied = 1;
  c->dq[v] = dq;
  c->st->weights_quantized++;
  *dq_out = dq;
  return MB_STATUS_OK;
}

/* The width of constant weight wv (c->opt->weights, mb__quant_weight_qmax):
 * for MIXED, 7 bits when any product quantised with it reads a signed
 * input (a calibrated range below 0, or none), so that the DQ its readers
 * share suits each of them. */
static int weight_qmax(const qctx *c, int wv) {
  const mb_graph *g = c->g;
  int source = mb__qz_constant_source(g, wv);
  bool signed_input = false;
  for (int i = 0; i < c->n_orig && !signed_input; i++) {
    const mb_node *n = &g->nodes[i];
    if ((c->kind[i] != KIND_CONV && c->kind[i] != KIND_MATMUL &&
         c->kind[i] != KIND_GEMM) ||
        n->n_inputs < 2 || n->inputs[1] < 0 ||
        mb__qz_constant_source(g, n->inputs[1]) != source)
      continue;
    int x = n->inputs[0];
    signed_input = !act_ok(c, x) || c->params->tensors[c->param[x]].min < 0.0;
  }
  return mb__quant_weight_qmax(c->opt->weights, signed_input);
}

/* int32 bias with scale x_scale * w_scale[channel] (ORT's convention). */
static mb_status bias_dq(qctx *c, int v, int x, int w_entry, int *dq_out,
                         mb_error *err) {
  mb_graph *g = c->g;
  const mb_tensor *b = mb__qz_constant_of(g, v);
  const char *name = g->values[mb__qz_constant_source(g, v)].name;
  float x_scale = param_at(c, x)->scales[0];
  int e = mb__quant_params_add(c->params, name, MB_QUANT_KIND_BIAS, err);
  if (e < 0)
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  const mb_quant_param *wp = &c->params->tensors[w_entry];
  mb_quant_param *p = &c->params->tensors[e];
  bool per_channel = wp->axis >= 0;
  int64_t channels = per_channel ? b->numel : 1;
  mb_status status = mb__qz_param_set_channels(p, channels, err);
  wp = &c->params->tensors[w_entry];
  if (status)
    return status;
  p->kind = MB_QUANT_KIND_BIAS;
  p->dtype = MB_DTYPE_INT32;
  p->axis = per_channel ? 0 : -1;
  p->min = p->max = 0.0;
  for (int64_t ch = 0; ch < channels; ch++)
    p->scales[ch] = x_scale * wp->scales[per_channel ? ch : 0];
  int64_t dims[1] = {b->numel};
  mb_tensor *q = NULL, *s = NULL;
  status = mb_tensor_create(MB_DTYPE_INT32, 1, dims, &q, err);
  const float *src = b->data;
  for (int64_t i = 0; !status && i < b->numel; i++) {
    double r = nearbyint((double)src[i] / p->scales[per_channel ? i : 0]);
    ((int32_t *)q->data)[i] = (int32_t)(r != r          ? 0
                                        : r < INT32_MIN ? INT32_MIN
                                        : r > INT32_MAX ? INT32_MAX
                                                        : r);
    p->min = MB_MIN(p->min, (double)src[i]);
    p->max = MB_MAX(p->max, (double)src[i]);
  }
  if (!status)
    status = mb__qz_small_tensor(MB_DTYPE_FLOAT, channels, per_channel,
                                 p->scales, &s, err);
  if (status) {
    mb_tensor_free(q);
    return status;
  }
  c->st->weight_bytes_before += (int64_t)b->nbytes;
  c->st->weight_bytes_after += (int64_t)(q->nbytes + s->nbytes);
  int qv = mb__qz_new_initializer(g, name, "_quantized", q, err), sv = -1;
  if (qv >= 0) {
    sv = mb__qz_new_initializer(g, name, "_scale", s, err);
    s = NULL;
  }
  int dq =
      sv < 0 ? -1 : mb__qz_new_value(g, name, "_DequantizeLinear_Output", err);
  const int dq_in[2] = {qv, sv};
  int node = dq < 0 ? -1
                    : mb__qz_add_node(g, "DequantizeLinear", "", 2, dq_in, 1,
                                      &dq, err);
  mb_tensor_free(s);
  if (node < 0 || (per_channel && mb__node_set_int(g, node, "axis", 0, err)))
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  p->applied = 1;
  c->st->weights_quantized++;
  *dq_out = dq;
  return MB_STATUS_OK;
}

/* Weights, biases and constant operands of quantised node i. */
static mb_status rewrite_node(qctx *c, int i, mb_error *err) {
  mb_graph *g = c->g;
  op_kind kind = c->kind[i];
  mb_node *n = &g->nodes[i];
  int x = n->inputs[0], wv = n->n_inputs > 1 ? n->inputs[1] : -1;
  int bv = n->n_inputs > 2 ? n->inputs[2] : -1;
  int dq, entry;
  mb_status status;
  if (kind == KIND_BINARY) {
    for (int j = 0; j < 2; j++) {
      int v = g->nodes[i].inputs[j];
      if (!mb__qz_is_float_constant(g, v))
        continue;
      if ((status = constant_dq(c, v, -1, 0, &dq, &entry, err)))
        return status;
      g->nodes[i].inputs[j] = dq;
    }
    return MB_STATUS_OK;
  }
  if (kind != KIND_CONV && kind != KIND_MATMUL && kind != KIND_GEMM)
    return MB_STATUS_OK;
  const mb_tensor *w = mb__qz_constant_of(g, wv);
  if (!w)
    return MB_STATUS_OK; /* MatMul of two activations */
  bool trans_b = kind == KIND_GEMM && mb__node_attr_int(n, "transB", 0) != 0;
  int axis = !c->per_channel ? -1 : kind == KIND_CONV ? 0 : trans_b ? 0 : 1;
  if ((status = constant_dq(c, wv, axis, weight_qmax(c, wv), &dq, &entry, err)))
    return status;
  g->nodes[i].inputs[1] = dq;
  if (bv < 0 || c->opt->float_bias)
    return MB_STATUS_OK;
  const mb_tensor *b = mb__qz_constant_of(g, bv);
  int64_t cols = kind == KIND_CONV ? w->dims[0]
                 : trans_b         ? w->dims[0]
                                   : w->dims[1];
  if (kind == KIND_GEMM &&
      (mb__node_attr_float(&g->nodes[i], "beta", 1.0f) != 1.0f || !b ||
       b->dtype != MB_DTYPE_FLOAT || b->rank != 1 || b->numel != cols))
    return MB_STATUS_OK; /* the bias stays float, QGemm is not formed */
  if ((status = bias_dq(c, bv, x, entry, &dq, err)))
    return status;
  g->nodes[i].inputs[2] = dq;
  /* ORT's Gemm selector reads beta without a default. */
  if (kind == KIND_GEMM)
    return mb__qz_set_float_attr(g, i, "beta", 1.0f, err);
  return MB_STATUS_OK;
}

static void qctx_free(qctx *c) {
  free(c->param);
  free(c->qdq);
  free(c->dq);
  free(c->uses);
  free(c->sub_read);
  free(c->kind);
  free(c->source);
}

mb_status mb__quantize_static(mb_model *model, mb_quant_params *params,
                              const mb_quant_options *opt_in,
                              mb_quant_stats *stats, mb_error *err) {
  mb_quant_options opt;
  mb_quant_stats st = {0};
  mb_status status = mb__quant_options_resolve(opt_in, &opt, err);
  if (status)
    return status;
  if (!params)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "static quantisation needs calibration parameters");
  int64_t opset = mb__model_opset(model, "");
  if (opset < 10)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "static quantisation needs opset >= 10 (QuantizeLinear); "
                     "the model imports opset %lld",
                     (long long)opset);
  mb_graph *g = model->graph;
  qctx c = {.g = g, .params = params, .opt = &opt, .st = &st};
  c.act_dtype = mb__qz_activation_dtype(opt.activations);
  c.per_channel = !opt.per_tensor_weights && opset >= 13;
  c.n_orig = g->n_nodes;
  size_t nv = (size_t)g->n_values + 1, nn = (size_t)g->n_nodes + 1;
  c.param = malloc(sizeof *c.param * nv);
  c.qdq = calloc(nv, sizeof *c.qdq);
  c.dq = malloc(sizeof *c.dq * nv);
  c.uses = calloc(nv, sizeof *c.uses);
  c.sub_read = calloc(nv, sizeof *c.sub_read);
  c.kind = calloc(nn, sizeof *c.kind);
  c.source = malloc(sizeof *c.source * nn);
  if (!c.param || !c.qdq || !c.dq || !c.uses || !c.sub_read || !c.kind ||
      !c.source) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  /* Activation scales for the requested type, from the calibrated ranges. */
  params->activations = opt.activations;
  params->weights = opt.weights;
  for (int e = 0; e < params->count; e++) {
    mb_quant_param *p = &params->tensors[e];
    p->applied = 0;
    if (p->kind != MB_QUANT_KIND_ACTIVATION || p->channels != 1)
      continue;
    p->dtype = c.act_dtype;
    mb__quant_scale_zero_point(p->min, p->max, p->dtype, &p->scales[0],
                               &p->zero_points[0]);
  }
  for (int v = 0; v < g->n_values; v++) {
    const mb_quant_param *p = mb__quant_params_find(params, g->values[v].name);
    c.param[v] = p && p->kind == MB_QUANT_KIND_ACTIVATION && p->channels == 1
                     ? (int)(p - params->tensors)
                     : -1;
    c.dq[v] = -1;
  }
  for (int i = 0; i < c.n_orig; i++)
    c.source[i] = -1;
  mb__qz_count_uses(g, NULL, c.uses, c.sub_read);
  plan(&c, opset);

  /* Removed Relu/Clip: their input's producer writes their output. */
  for (int i = 0; i < c.n_orig; i++)
    if (c.source[i] >= 0)
      g->nodes[c.source[i]].outputs[0] = g->nodes[i].outputs[0];
  /* Constants first, while node inputs still name the original values;
   * then the activations (the rewrite adds values past n_values). */
  int n_values = g->n_values;
  for (int i = 0; i < c.n_orig && !status; i++) {
    if (c.kind[i] == KIND_NONE || c.kind[i] == KIND_ACTIVATION)
      continue;
    if ((status = rewrite_node(&c, i, err))) {
      char label[160];
      mb__error_prefix(err, status, "static quantisation of %s",
                       mb__node_label(&g->nodes[i], label, sizeof label));
    }
  }
  for (int v = 0; v < n_values && !status; v++)
    if (c.qdq[v])
      status = insert_qdq(&c, v, err);
  /* Removed nodes: the Relu/Clip nodes absorbed by a Q. */
  bool *remove = NULL;
  if (!status && !(remove = calloc((size_t)c.n_orig + 1, sizeof *remove)))
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; !status && i < c.n_orig; i++)
    remove[i] = c.source[i] >= 0;
  if (!status)
    status = mb__qz_remove_and_prune(g, remove, c.n_orig, err);
  free(remove);
  if (!status && (status = mb__graph_finalize(g, err)))
    mb__error_prefix(err, status, "static quantisation");
done:
  qctx_free(&c);
  if (!status && stats)
    *stats = st;
  return status;
}
