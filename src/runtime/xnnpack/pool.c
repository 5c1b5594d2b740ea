/* XNNPACK engine: max and average pooling (count_include_pad through an
 * explicit Pad), global pooling, and their qs8 forms. */
#ifdef MB_HAVE_XNNPACK

#include "runtime/xnnpack/internal.h"

mb_status mb__xnn_lower_pool(build_ctx *b) {
  char reason[256];
  mb_engine_check c = mb__xnn_lower_check_ctx(b, reason, sizeof reason);
  const mb_node *n = b->node;
  bool average = strcmp(n->op_type, "AveragePool") == 0;
  pool_params p;
  if (!mb__xnn_pool_params_get(&c, &p, average))
    return mb__xnn_recheck_failed(b, reason);
  if (p.identity)
    return mb__xnn_lower_reshape(b);
  const window2d *g = &p.w;
  uint32_t x, y;
  mb_status status;
  uint32_t top = (uint32_t)g->pad_begin[0], left = (uint32_t)g->pad_begin[1];
  uint32_t bottom = (uint32_t)(g->pad_end[0] + g->pad_extra[0]);
  uint32_t right = (uint32_t)(g->pad_end[1] + g->pad_extra[1]);
  qact q;
  if (!average && b->quant && mb__xnn_has_qint8(b, n->inputs[0]) &&
      mb__xnn_qact_of(b, n->outputs[0], &q)) {
    /* qs8 max pooling: the output keeps the input's quantisation (XNNPACK
     * wants them equal, and so does the QDQ form). */
    const mb_shape_info *xs = &b->eg->shapes[n->inputs[0]];
    size_t xd[4];
    segment_dims(4, xs->dims, xd);
    mb__xnn_qheld(b, n->inputs[0], &q);
    if ((status = mb__xnn_qinput_id(b, n->inputs[0], &q, 4, xd, &x)) ||
        (status = mb__xnn_qkeep_output_id(b, n->outputs[0], &q, &y)))
      return status;
    XNN_CALL(b,
             xnn_define_max_pooling_2d(
                 b->subgraph, top, right, bottom, left, (uint32_t)g->kernel[0],
                 (uint32_t)g->kernel[1], (uint32_t)g->stride[0],
                 (uint32_t)g->stride[1], (uint32_t)g->dilation[0],
                 (uint32_t)g->dilation[1], -INFINITY, INFINITY, x, y, 0));
    return mb__xnn_qoutput_export(b, n->outputs[0]);
  }
  if ((status = mb__xnn_value_id(b, n->inputs[0], &x)))
    return status;
  if (p.count_include_pad &&
      (g->pad_begin[0] || g->pad_begin[1] || g->pad_end[0] || g->pad_end[1])) {
    /* XNNPACK's average pooling leaves padding out of the divisor: pad with
     * zeros explicitly, then pool over what remains (only ceil_mode's extra
     * windows stay implicit, which ONNX also leaves out). */
    const mb_shape_info *xs = &b->eg->shapes[n->inputs[0]];
    int64_t pd[4] = {xs->dims[0], xs->dims[1],
                     xs->dims[2] + g->pad_begin[0] + g->pad_end[0],
                     xs->dims[3] + g->pad_begin[1] + g->pad_end[1]};
    size_t pre[4] = {0, (size_t)g->pad_begin[0], (size_t)g->pad_begin[1], 0};
    size_t post[4] = {0, (size_t)g->pad_end[0], (size_t)g->pad_end[1], 0};
    uint32_t t;
    if ((status = mb__xnn_define_internal(b, 4, pd, &t)))
      return status;
    XNN_CALL(b, xnn_define_static_constant_pad(b->subgraph, pre, post, 0.0f, x,
                                               t, 0));
    x = t;
    top = left = 0;
    bottom = (uint32_t)g->pad_extra[0];
    right = (uint32_t)g->pad_extra[1];
  }
  if ((status = mb__xnn_output_id(b, n->outputs[0], &y)))
    return status;
  if (average) {
    XNN_CALL(b,
             xnn_define_average_pooling_2d(
                 b->subgraph, top, right, bottom, left, (uint32_t)g->kernel[0],
                 (uint32_t)g->kernel[1], (uint32_t)g->stride[0],
                 (uint32_t)g->stride[1], -INFINITY, INFINITY, x, y, 0));
  } else {
    XNN_CALL(b,
             xnn_define_max_pooling_2d(
                 b->subgraph, top, right, bottom, left, (uint32_t)g->kernel[0],
                 (uint32_t)g->kernel[1], (uint32_t)g->stride[0],
                 (uint32_t)g->stride[1], (uint32_t)g->dilation[0],
                 (uint32_t)g->dilation[1], -INFINITY, INFINITY, x, y, 0));
  }
  return MB_STATUS_OK;
}

/* qs8 global average pooling, when the input is at hand in qint8 and
 * the output has an entry; XNNPACK wants the input scale over the
 * output's in [2^-8, 2^8). */
static bool global_pool_int8(build_ctx *b, qact *in, qact *out) {
  const mb_node *n = b->node;
  if (!b->quant || strcmp(n->op_type, "GlobalAveragePool") != 0 ||
      !mb__xnn_has_qint8(b, n->inputs[0]) ||
      !mb__xnn_qact_in(b, n->inputs[0], in) ||
      !mb__xnn_qact_of(b, n->outputs[0], out))
    return false;
  const float r = in->scale / out->scale;
  return r >= 0x1.0p-8f && r < 0x1.0p+8f;
}

mb_status mb__xnn_lower_global_pool(build_ctx *b) {
  const mb_node *n = b->node;
  const mb_shape_info *xs = &b->eg->shapes[n->inputs[0]];
  uint32_t x, y;
  mb_status status;
  qact qi, qo;
  if (global_pool_int8(b, &qi, &qo)) {
    size_t xd[4], yd[4];
    segment_dims(4, xs->dims, xd);
    segment_dims(4, b->eg->shapes[n->outputs[0]].dims, yd);
    if ((status = mb__xnn_qinput_id(b, n->inputs[0], &qi, 4, xd, &x)) ||
        (status = mb__xnn_qoutput_id(b, n->outputs[0], &qo, 4, yd, &y)))
      return status;
    XNN_CALL(b, xnn_define_global_average_pooling_2d(b->subgraph, -INFINITY,
                                                     INFINITY, x, y, 0));
    return mb__xnn_qoutput_export(b, n->outputs[0]);
  }
  if ((status = mb__xnn_value_id(b, n->inputs[0], &x)) ||
      (status = mb__xnn_output_id(b, n->outputs[0], &y)))
    return status;
  if (strcmp(n->op_type, "GlobalAveragePool") == 0) {
    XNN_CALL(b, xnn_define_global_average_pooling_2d(b->subgraph, -INFINITY,
                                                     INFINITY, x, y, 0));
  } else {
    XNN_CALL(b, xnn_define_max_pooling_2d(b->subgraph, 0, 0, 0, 0,
                                          (uint32_t)xs->dims[2],
                                          (uint32_t)xs->dims[3], 1, 1, 1, 1,
                                          -INFINITY, INFINITY, x, y, 0));
  }
  return MB_STATUS_OK;
}

#endif /* MB_HAVE_XNNPACK */
