/* XNNPACK engine: reshapes (and Identity, Dropout; also on qint8 values),
 * Pad, bilinear Resize and DepthToSpace. */
#ifdef MB_HAVE_XNNPACK

#include "runtime/xnnpack/internal.h"

/* A copy: XNNPACK's static reshape to the output's segment dims. INT8:
 * of the qint8 input when it is at hand and the output has an entry (the
 * output keeps the input's quantisation, as in the QDQ form). */
mb_status mb__xnn_lower_reshape(build_ctx *b) {
  const mb_node *n = b->node;
  const mb_shape_info *ys = &b->eg->shapes[n->outputs[0]];
  size_t d[XNN_RANK_MAX];
  size_t r = segment_dims(ys->rank, ys->dims, d);
  uint32_t x, y;
  qact q;
  mb_status status;
  if (b->quant && mb__xnn_has_qint8(b, n->inputs[0]) &&
      mb__xnn_qact_of(b, n->outputs[0], &q)) {
    x = mb__xnn_qheld(b, n->inputs[0], &q);
    if ((status = mb__xnn_qkeep_output_id(b, n->outputs[0], &q, &y)))
      return status;
    XNN_CALL(b, xnn_define_static_reshape(b->subgraph, r, d, x, y, 0));
    return mb__xnn_qoutput_export(b, n->outputs[0]);
  }
  if ((status = mb__xnn_value_id(b, n->inputs[0], &x)) ||
      (status = mb__xnn_output_id(b, n->outputs[0], &y)))
    return status;
  XNN_CALL(b, xnn_define_static_reshape(b->subgraph, r, d, x, y, 0));
  return MB_STATUS_OK;
}

mb_status mb__xnn_lower_pad(build_ctx *b) {
  char reason[256];
  mb_engine_check c = mb__xnn_lower_check_ctx(b, reason, sizeof reason);
  pad_params p;
  if (!mb__xnn_pad_params_get(&c, &p))
    return mb__xnn_recheck_failed(b, reason);
  const mb_node *n = b->node;
  int r = b->eg->shapes[n->inputs[0]].rank;
  size_t pre[XNN_RANK_MAX], post[XNN_RANK_MAX];
  if (r == 0)
    return mb__xnn_recheck_failed(b, "rank-0 input");
  segment_dims(r, p.begin, pre);
  segment_dims(r, p.end, post);
  uint32_t x, y;
  mb_status status;
  if ((status = mb__xnn_value_id(b, n->inputs[0], &x)) ||
      (status = mb__xnn_output_id(b, n->outputs[0], &y)))
    return status;
  XNN_CALL(b, xnn_define_static_constant_pad(b->subgraph, pre, post, p.value, x,
                                             y, 0));
  return MB_STATUS_OK;
}

mb_status mb__xnn_lower_resize(build_ctx *b) {
  char reason[256];
  mb_engine_check c = mb__xnn_lower_check_ctx(b, reason, sizeof reason);
  uint32_t flags, x, y;
  mb_status status;
  if (!mb__xnn_resize_flags(&c, &flags))
    return mb__xnn_recheck_failed(b, reason);
  const mb_shape_info *ys = &b->eg->shapes[b->node->outputs[0]];
  if ((status = mb__xnn_value_id(b, b->node->inputs[0], &x)) ||
      (status = mb__xnn_output_id(b, b->node->outputs[0], &y)))
    return status;
  XNN_CALL(b, xnn_define_static_resize_bilinear_2d(
                  b->subgraph, (size_t)ys->dims[2], (size_t)ys->dims[3], x, y,
                  flags));
  return MB_STATUS_OK;
}

mb_status mb__xnn_lower_depth_to_space(build_ctx *b) {
  const mb_node *n = b->node;
  uint32_t x, y;
  mb_status status;
  if ((status = mb__xnn_value_id(b, n->inputs[0], &x)) ||
      (status = mb__xnn_output_id(b, n->outputs[0], &y)))
    return status;
  XNN_CALL(b, xnn_define_depth_to_space(
                  b->subgraph, x, y,
                  (uint32_t)mb__node_attr_int(n, "blocksize", 0), 0));
  return MB_STATUS_OK;
}

#endif /* MB_HAVE_XNNPACK */
