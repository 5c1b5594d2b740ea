/* XNNPACK engine: Softmax (flattened where the opset asks) and inference
 * BatchNormalization as a multiply and an add. */
#ifdef MB_HAVE_XNNPACK

#include "runtime/xnnpack/internal.h"

mb_status mb__xnn_lower_softmax(build_ctx *b) {
  const mb_node *n = b->node;
  const mb_shape_info *xs = &b->eg->shapes[n->inputs[0]];
  int64_t axis = mb__node_attr_int(n, "axis", b->opset >= 13 ? -1 : 1);
  uint32_t x, y;
  mb_status status;
  if (axis < 0)
    axis += xs->rank;
  if ((status = mb__xnn_value_id(b, n->inputs[0], &x)))
    return status;
  /* The dims softmax runs over, in segment layout, are the trailing ones;
   * when they are more than one, flatten them around the softmax. */
  int64_t inner = 1;
  if (b->opset < 13)
    for (int i = (int)axis; i < xs->rank; i++)
      inner *= xs->dims[i];
  size_t d[XNN_RANK_MAX];
  size_t r = segment_dims(xs->rank, xs->dims, d);
  if (b->opset >= 13 || inner == (int64_t)d[r - 1]) {
    if ((status = mb__xnn_output_id(b, n->outputs[0], &y)))
      return status;
    XNN_CALL(b, xnn_define_softmax(b->subgraph, x, y, 0));
    return MB_STATUS_OK;
  }
  int64_t numel = mb__engine_numel(xs->rank, xs->dims);
  int64_t flat[2] = {numel / inner, inner};
  uint32_t t1, t2;
  size_t fd[2] = {(size_t)flat[0], (size_t)flat[1]};
  if ((status = mb__xnn_define_internal(b, 2, flat, &t1)) ||
      (status = mb__xnn_define_internal(b, 2, flat, &t2)) ||
      (status = mb__xnn_output_id(b, n->outputs[0], &y)))
    return status;
  XNN_CALL(b, xnn_define_static_reshape(b->subgraph, 2, fd, x, t1, 0));
  XNN_CALL(b, xnn_define_softmax(b->subgraph, t1, t2, 0));
  XNN_CALL(b, xnn_define_static_reshape(b->subgraph, r, d, t2, y, 0));
  return MB_STATUS_OK;
}

/* Inference BatchNormalization: y = x * scale' + shift' per channel. */
mb_status mb__xnn_lower_batchnorm(build_ctx *b) {
  const mb_node *n = b->node;
  const mb_shape_info *xs = &b->eg->shapes[n->inputs[0]];
  const float *k[4];
  for (int i = 0; i < 4; i++)
    k[i] = mb__engine_constant(b->eg, n->inputs[1 + i])->data;
  int64_t ch = xs->dims[1];
  float eps = mb__node_attr_float(n, "epsilon", 1e-5f);
  float *scale = malloc((size_t)ch * 2 * sizeof(float));
  if (!scale)
    return mb__xnn_oom(b);
  float *shift = scale + ch;
  for (int64_t c = 0; c < ch; c++) {
    scale[c] = k[0][c] / sqrtf(k[3][c] + eps);
    shift[c] = k[1][c] - k[2][c] * scale[c];
  }
  /* [1, C, 1, ...] in ONNX terms, broadcast against x. */
  int64_t dims[MB_MAX_RANK];
  for (int i = 0; i < xs->rank; i++)
    dims[i] = i == 1 ? ch : 1;
  uint32_t x, s, t, sh, y;
  mb_status status;
  if ((status = mb__xnn_value_id(b, n->inputs[0], &x)) ||
      (status = mb__xnn_define_operand_data(b, xs->rank, dims, scale, xs->rank,
                                            &s)) ||
      (status = mb__xnn_define_operand_data(b, xs->rank, dims, shift, xs->rank,
                                            &sh)) ||
      (status = mb__xnn_define_internal(b, xs->rank, xs->dims, &t)) ||
      (status = mb__xnn_output_id(b, n->outputs[0], &y))) {
    free(scale);
    return status;
  }
  free(scale);
  XNN_CALL(b,
           xnn_define_multiply2(b->subgraph, -INFINITY, INFINITY, x, s, t, 0));
  XNN_CALL(b, xnn_define_add2(b->subgraph, -INFINITY, INFINITY, t, sh, y, 0));
  return MB_STATUS_OK;
}

#endif /* MB_HAVE_XNNPACK */
