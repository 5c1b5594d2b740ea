/* XNNPACK engine: Conv (dense, grouped, depthwise), Gemm and MatMul in
 * fp32 or fp16, and their int8 forms with qcint8 filters. */
#ifdef MB_HAVE_XNNPACK

#include "runtime/xnnpack/internal.h"

/* Conv with a qcint8 filter (depthwise, grouped or dense). */
static mb_status lower_conv_int8(build_ctx *b, const conv_params *p,
                                 const int8_plan *q) {
  const mb_node *n = b->node;
  const mb_tensor *w = mb__engine_constant(b->eg, n->inputs[1]);
  const mb_tensor *bias = mb__engine_constant(b->eg, mb__engine_input(n, 2));
  const float *wd = w->data;
  int64_t co = p->c_out, cig = p->c_in / p->groups;
  int64_t kh = p->w.kernel[0], kw = p->w.kernel[1], ks = kh * kw;
  int8_t *filter = mb__xnn_static_alloc_bytes(b, (size_t)(co * cig * ks));
  float *fscale, *bscale;
  int32_t *bq;
  uint32_t x_id, f_id, b_id, y_id;
  mb_status status;
  if (!filter)
    return mb__xnn_oom(b);
  if ((status = mb__xnn_int8_bias(b, q, co, bias ? bias->data : NULL, &fscale,
                                  &bq, &bscale)))
    return status;
  size_t fdims[4];
  if (p->depthwise) {
    /* [C*M, 1, kh, kw] -> [1, kh, kw, C*M] */
    for (int64_t o = 0; o < co; o++)
      for (int64_t k = 0; k < ks; k++)
        filter[k * co + o] =
            mb__engine_quantize_weight(wd[o * ks + k], fscale[o]);
    fdims[0] = 1;
    fdims[1] = (size_t)kh;
    fdims[2] = (size_t)kw;
    fdims[3] = (size_t)co;
  } else {
    /* OIHW -> OHWI */
    for (int64_t o = 0; o < co; o++)
      for (int64_t i = 0; i < cig; i++)
        for (int64_t k = 0; k < ks; k++)
          filter[(o * ks + k) * cig + i] =
              mb__engine_quantize_weight(wd[(o * cig + i) * ks + k], fscale[o]);
    fdims[0] = (size_t)co;
    fdims[1] = (size_t)kh;
    fdims[2] = (size_t)kw;
    fdims[3] = (size_t)cig;
  }
  const mb_shape_info *xs = &b->eg->shapes[n->inputs[0]];
  const mb_shape_info *ys = &b->eg->shapes[q->out_value];
  size_t xd[4], yd[4];
  segment_dims(4, xs->dims, xd);
  segment_dims(4, ys->dims, yd);
  if ((status = mb__xnn_qinput_id(b, n->inputs[0], &q->in, 4, xd, &x_id)) ||
      (status =
           mb__xnn_int8_weights(b, filter, fdims, p->depthwise ? 3 : 0, fscale,
                                bq, bscale, (size_t)co, &f_id, &b_id)) ||
      (status = mb__xnn_qoutput_id(b, q->out_value, &q->out, 4, yd, &y_id)))
    return status;
  const window2d *g = &p->w;
  if (p->depthwise) {
    XNN_CALL(b, xnn_define_depthwise_convolution_2d(
                    b->subgraph, (uint32_t)g->pad_begin[0],
                    (uint32_t)g->pad_end[1], (uint32_t)g->pad_end[0],
                    (uint32_t)g->pad_begin[1], (uint32_t)kh, (uint32_t)kw,
                    (uint32_t)g->stride[0], (uint32_t)g->stride[1],
                    (uint32_t)g->dilation[0], (uint32_t)g->dilation[1],
                    (uint32_t)(co / p->c_in), (size_t)p->c_in, q->out_min,
                    q->out_max, x_id, f_id, b_id, y_id, 0));
  } else {
    XNN_CALL(b, xnn_define_convolution_2d(
                    b->subgraph, (uint32_t)g->pad_begin[0],
                    (uint32_t)g->pad_end[1], (uint32_t)g->pad_end[0],
                    (uint32_t)g->pad_begin[1], (uint32_t)kh, (uint32_t)kw,
                    (uint32_t)g->stride[0], (uint32_t)g->stride[1],
                    (uint32_t)g->dilation[0], (uint32_t)g->dilation[1],
                    (uint32_t)p->groups, (size_t)cig, (size_t)(co / p->groups),
                    q->out_min, q->out_max, x_id, f_id, b_id, y_id, 0));
  }
  return mb__xnn_int8_finish(b, q);
}

/* Gemm / MatMul: XNNPACK of this date has no per-channel int8 fully
 * connected node (it wants one filter scale), so the product is a 1x1
 * convolution over [M, 1, 1, K], which has; its converts reshape on the
 * way in and out. */
static mb_status lower_fc_int8(build_ctx *b, const fc_params *p,
                               const int8_plan *q) {
  const mb_node *n = b->node;
  const mb_tensor *w = mb__engine_constant(b->eg, n->inputs[1]);
  const float *wd = w->data;
  int8_t *filter = mb__xnn_static_alloc_bytes(b, (size_t)(p->n * p->k));
  float *bias = NULL, *fscale, *bscale;
  int32_t *bq;
  uint32_t x_id, f_id, b_id, y_id;
  mb_status status;
  if (!filter)
    return mb__xnn_oom(b);
  if (p->bias_kind == 1) {
    const mb_tensor *cten = mb__engine_constant(b->eg, n->inputs[2]);
    const float *cd = cten->data;
    if (!(bias = calloc((size_t)p->n, sizeof *bias)))
      return mb__xnn_oom(b);
    for (int64_t o = 0; o < p->n; o++)
      bias[o] = p->beta * cd[cten->numel == 1 ? 0 : o];
  }
  status = mb__xnn_int8_bias(b, q, p->n, bias, &fscale, &bq, &bscale);
  free(bias);
  if (status)
    return status;
  /* [N, 1, 1, K] (output features first), quantised without alpha. */
  for (int64_t o = 0; o < p->n; o++) {
    float s = mb__engine_weight_scale(q->weight, o);
    for (int64_t i = 0; i < p->k; i++)
      filter[o * p->k + i] = mb__engine_quantize_weight(
          p->trans_b ? wd[o * p->k + i] : wd[i * p->n + o], s);
  }
  const mb_shape_info *xs = &b->eg->shapes[n->inputs[0]];
  size_t rows = (size_t)(mb__engine_numel(xs->rank, xs->dims) / p->k);
  size_t xd[4] = {rows, 1, 1, (size_t)p->k}, yd[4] = {rows, 1, 1, (size_t)p->n};
  size_t fdims[4] = {(size_t)p->n, 1, 1, (size_t)p->k};
  if ((status = mb__xnn_qinput_id(b, n->inputs[0], &q->in, 4, xd, &x_id)) ||
      (status = mb__xnn_int8_weights(b, filter, fdims, 0, fscale, bq, bscale,
                                     (size_t)p->n, &f_id, &b_id)) ||
      (status = mb__xnn_qoutput_id(b, q->out_value, &q->out, 4, yd, &y_id)))
    return status;
  XNN_CALL(b,
           xnn_define_convolution_2d(b->subgraph, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1,
                                     1, (size_t)p->k, (size_t)p->n, q->out_min,
                                     q->out_max, x_id, f_id, b_id, y_id, 0));
  return mb__xnn_int8_finish(b, q);
}

/* ---- lowerings ---- */

mb_status mb__xnn_lower_conv(build_ctx *b) {
  char reason[256];
  mb_engine_check c = mb__xnn_lower_check_ctx(b, reason, sizeof reason);
  conv_params p;
  int8_plan q;
  if (!mb__xnn_conv_params_get(&c, &p))
    return mb__xnn_recheck_failed(b, reason);
  if (b->quant && mb__xnn_int8_plan_get(b, 0, p.c_out, 1.0f, &q))
    return lower_conv_int8(b, &p, &q);
  const mb_node *n = b->node;
  const mb_tensor *w = mb__engine_constant(b->eg, n->inputs[1]);
  const mb_tensor *bias = mb__engine_constant(b->eg, mb__engine_input(n, 2));
  const float *wd = w->data;
  int64_t co = p.c_out, cig = p.c_in / p.groups;
  int64_t kh = p.w.kernel[0], kw = p.w.kernel[1], ks = kh * kw;
  float *filter = mb__xnn_static_alloc(b, (size_t)(co * cig * ks));
  float *bd = mb__xnn_static_alloc(b, (size_t)co);
  uint32_t x_id, f_id, b_id, y_id;
  mb_status status;
  if (!filter || !bd)
    return mb__xnn_oom(b);
  if (bias)
    memcpy(bd, bias->data, (size_t)co * sizeof(float));
  size_t fdims[4];
  if (p.depthwise) {
    /* [C*M, 1, kh, kw] -> [1, kh, kw, C*M] */
    for (int64_t o = 0; o < co; o++)
      for (int64_t k = 0; k < ks; k++)
        filter[k * co + o] = wd[o * ks + k];
    fdims[0] = 1;
    fdims[1] = (size_t)kh;
    fdims[2] = (size_t)kw;
    fdims[3] = (size_t)co;
  } else {
    /* OIHW -> OHWI */
    for (int64_t o = 0; o < co; o++)
      for (int64_t i = 0; i < cig; i++)
        for (int64_t k = 0; k < ks; k++)
          filter[(o * ks + k) * cig + i] = wd[(o * cig + i) * ks + k];
    fdims[0] = (size_t)co;
    fdims[1] = (size_t)kh;
    fdims[2] = (size_t)kw;
    fdims[3] = (size_t)cig;
  }
  size_t bdims[1] = {(size_t)co};
  if ((status = mb__xnn_value_id(b, n->inputs[0], &x_id)) ||
      (status = mb__xnn_define_static(b, 4, fdims, filter, &f_id)) ||
      (status = mb__xnn_define_static(b, 1, bdims, bd, &b_id)) ||
      (status = mb__xnn_output_id(b, n->outputs[0], &y_id)))
    return status;
  const window2d *g = &p.w;
  if (p.depthwise) {
    XNN_CALL(b, xnn_define_depthwise_convolution_2d(
                    b->subgraph, (uint32_t)g->pad_begin[0],
                    (uint32_t)g->pad_end[1], (uint32_t)g->pad_end[0],
                    (uint32_t)g->pad_begin[1], (uint32_t)kh, (uint32_t)kw,
                    (uint32_t)g->stride[0], (uint32_t)g->stride[1],
                    (uint32_t)g->dilation[0], (uint32_t)g->dilation[1],
                    (uint32_t)(co / p.c_in), (size_t)p.c_in, -INFINITY,
                    INFINITY, x_id, f_id, b_id, y_id, 0));
  } else {
    XNN_CALL(b, xnn_define_convolution_2d(
                    b->subgraph, (uint32_t)g->pad_begin[0],
                    (uint32_t)g->pad_end[1], (uint32_t)g->pad_end[0],
                    (uint32_t)g->pad_begin[1], (uint32_t)kh, (uint32_t)kw,
                    (uint32_t)g->stride[0], (uint32_t)g->stride[1],
                    (uint32_t)g->dilation[0], (uint32_t)g->dilation[1],
                    (uint32_t)p.groups, (size_t)cig, (size_t)(co / p.groups),
                    -INFINITY, INFINITY, x_id, f_id, b_id, y_id, 0));
  }
  return MB_STATUS_OK;
}

/* y = x * W^T + bias over the last dim of x. In fp16 the rewrite of this
 * snapshot refuses fully connected nodes but takes convolutions, so there
 * it is the same product as a 1x1 convolution over [M, 1, 1, K] (W is
 * then [N, 1, 1, K]), between two reshapes. */
static mb_status define_fc(build_ctx *b, const fc_params *p, uint32_t x,
                           uint32_t w, uint32_t bias, uint32_t y) {
  if (!b->fp16) {
    XNN_CALL(b, xnn_define_fully_connected(b->subgraph, -INFINITY, INFINITY, x,
                                           w, bias, y, 0));
    return MB_STATUS_OK;
  }
  const mb_shape_info *xs = &b->eg->shapes[b->node->inputs[0]];
  size_t rows = (size_t)(mb__engine_numel(xs->rank, xs->dims) / p->k);
  size_t in4[4] = {rows, 1, 1, (size_t)p->k};
  size_t out4[4] = {rows, 1, 1, (size_t)p->n};
  size_t yd[XNN_RANK_MAX];
  const mb_shape_info *ys = &b->eg->shapes[b->node->outputs[0]];
  size_t yr = segment_dims(ys->rank, ys->dims, yd);
  uint32_t t_in, t_out;
  XNN_CALL(b, xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, 4, in4,
                                      NULL, XNN_INVALID_VALUE_ID, 0, &t_in));
  XNN_CALL(b, xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, 4, out4,
                                      NULL, XNN_INVALID_VALUE_ID, 0, &t_out));
  XNN_CALL(b, xnn_define_static_reshape(b->subgraph, 4, in4, x, t_in, 0));
  XNN_CALL(b, xnn_define_convolution_2d(
                  b->subgraph, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, (size_t)p->k,
                  (size_t)p->n, -INFINITY, INFINITY, t_in, w, bias, t_out, 0));
  XNN_CALL(b, xnn_define_static_reshape(b->subgraph, yr, yd, t_out, y, 0));
  return MB_STATUS_OK;
}

mb_status mb__xnn_lower_fc(build_ctx *b) {
  char reason[256];
  mb_engine_check c = mb__xnn_lower_check_ctx(b, reason, sizeof reason);
  fc_params p;
  int8_plan q;
  if (!mb__xnn_fc_params_get(&c, &p))
    return mb__xnn_recheck_failed(b, reason);
  /* The weight's output channels: axis 0 of [N, K] (transB), else 1. */
  if (b->quant && p.bias_kind != 2 &&
      mb__xnn_int8_plan_get(b, p.trans_b ? 0 : 1, p.n, p.alpha, &q))
    return lower_fc_int8(b, &p, &q);
  const mb_node *n = b->node;
  const mb_tensor *w = mb__engine_constant(b->eg, n->inputs[1]);
  const float *wd = w->data;
  float *filter = mb__xnn_static_alloc(b, (size_t)(p.n * p.k));
  float *bd = mb__xnn_static_alloc(b, (size_t)p.n);
  uint32_t x_id, f_id, b_id, y_id;
  mb_status status;
  if (!filter || !bd)
    return mb__xnn_oom(b);
  /* XNNPACK wants [N, K] (output features first). */
  for (int64_t o = 0; o < p.n; o++)
    for (int64_t i = 0; i < p.k; i++)
      filter[o * p.k + i] =
          p.alpha * (p.trans_b ? wd[o * p.k + i] : wd[i * p.n + o]);
  const mb_tensor *cten =
      p.bias_kind ? mb__engine_constant(b->eg, n->inputs[2]) : NULL;
  if (p.bias_kind == 1) {
    const float *cd = cten->data;
    for (int64_t o = 0; o < p.n; o++)
      bd[o] = p.beta * cd[cten->numel == 1 ? 0 : o];
  }
  /* [N, K], or [N, 1, 1, K] for the fp16 convolution. */
  size_t fdims[4] = {(size_t)p.n, 1, 1, (size_t)p.k}, bdims[1] = {(size_t)p.n};
  size_t fc_dims[2] = {(size_t)p.n, (size_t)p.k};
  if ((status = mb__xnn_value_id(b, n->inputs[0], &x_id)) ||
      (status = mb__xnn_define_static(
           b, b->fp16 ? 4 : 2, b->fp16 ? fdims : fc_dims, filter, &f_id)) ||
      (status = mb__xnn_define_static(b, 1, bdims, bd, &b_id)))
    return status;
  int y = n->outputs[0];
  const mb_shape_info *ys = &b->eg->shapes[y];
  if (p.bias_kind != 2) {
    if ((status = mb__xnn_output_id(b, y, &y_id)))
      return status;
    return define_fc(b, &p, x_id, f_id, b_id, y_id);
  }
  /* C that varies along M: a fully connected layer, then Add beta * C. */
  uint32_t t_id, c_id;
  float *cd = mb__xnn_static_alloc(b, (size_t)cten->numel);
  if (!cd)
    return mb__xnn_oom(b);
  for (int64_t i = 0; i < cten->numel; i++)
    cd[i] = p.beta * ((const float *)cten->data)[i];
  size_t cdims[XNN_RANK_MAX];
  size_t cr = segment_dims(cten->rank, cten->dims, cdims);
  if ((status = mb__xnn_define_internal(b, ys->rank, ys->dims, &t_id)) ||
      (status = mb__xnn_define_static(b, cr, cdims, cd, &c_id)) ||
      (status = mb__xnn_output_id(b, y, &y_id)))
    return status;
  if ((status = define_fc(b, &p, x_id, f_id, b_id, t_id)))
    return status;
  XNN_CALL(b, xnn_define_add2(b->subgraph, -INFINITY, INFINITY, t_id, c_id,
                              y_id, 0));
  return MB_STATUS_OK;
}

#endif /* MB_HAVE_XNNPACK */
