/* XNNPACK engine: elementwise nodes. Binary nodes (Add and Mul also in
 * qs8), the unary ones, clamps, HardSigmoid and PRelu. */
#ifdef MB_HAVE_XNNPACK

#include "runtime/xnnpack/internal.h"

/* Table of elementwise binary nodes. */
typedef enum binary_kind {
  BINARY_ADD,
  BINARY_SUB,
  BINARY_MUL,
  BINARY_DIV,
  BINARY_MAX,
  BINARY_MIN,
} binary_kind;

static mb_status define_binary(build_ctx *b, binary_kind kind, uint32_t a,
                               uint32_t c, uint32_t y) {
  switch (kind) {
  case BINARY_ADD:
    XNN_CALL(b, xnn_define_add2(b->subgraph, -INFINITY, INFINITY, a, c, y, 0));
    break;
  case BINARY_SUB:
    XNN_CALL(b,
             xnn_define_subtract(b->subgraph, -INFINITY, INFINITY, a, c, y, 0));
    break;
  case BINARY_MUL:
    XNN_CALL(
        b, xnn_define_multiply2(b->subgraph, -INFINITY, INFINITY, a, c, y, 0));
    break;
  case BINARY_DIV:
    XNN_CALL(b,
             xnn_define_divide(b->subgraph, -INFINITY, INFINITY, a, c, y, 0));
    break;
  case BINARY_MAX:
    XNN_CALL(b, xnn_define_maximum2(b->subgraph, a, c, y, 0));
    break;
  case BINARY_MIN:
    XNN_CALL(b, xnn_define_minimum2(b->subgraph, a, c, y, 0));
    break;
  }
  return MB_STATUS_OK;
}

static const struct {
  const char *op_type;
  binary_kind kind;
} binary_ops[] = {
    {"Add", BINARY_ADD}, {"Sub", BINARY_SUB}, {"Mul", BINARY_MUL},
    {"Div", BINARY_DIV}, {"Max", BINARY_MAX}, {"Min", BINARY_MIN},
};

/* Can the current Add or Mul run in int8? Both inputs are activations
 * with entries, one of them at hand in qint8 (else converting both costs
 * more than the float op), and the output has an entry (a sole Relu/Clip
 * reader is fused, as for Conv). XNNPACK's qs8 Add wants each input's
 * scale over the output's in [2^-10, 2^8), its Mul the product of the
 * input scales over the output's in [2^-16, 2^8), computed in float as
 * XNNPACK does; outside, the node stays float. */
static bool binary_int8_plan_get(build_ctx *b, binary_kind kind, int8_plan *p) {
  const mb_node *n = b->node;
  bool held = false;
  memset(p, 0, sizeof *p);
  for (int i = 0; i < 2; i++) {
    if (mb__engine_constant(b->eg, n->inputs[i]))
      return false;
    held |= mb__xnn_has_qint8(b, n->inputs[i]);
  }
  if (!held || !mb__xnn_qact_in(b, n->inputs[0], &p->in) ||
      !mb__xnn_qact_in(b, n->inputs[1], &p->in2) ||
      !mb__xnn_int8_output_get(b, p))
    return false;
  const float out_scale = p->out.scale;
  if (kind == BINARY_ADD) {
    const float r1 = p->in.scale / out_scale, r2 = p->in2.scale / out_scale;
    return r1 >= 0x1.0p-10f && r1 < 0x1.0p+8f && r2 >= 0x1.0p-10f &&
           r2 < 0x1.0p+8f;
  }
  const float product = p->in.scale * p->in2.scale;
  const float r = product / out_scale;
  return mb__xnn_scale_ok(product) && r >= 0x1.0p-16f && r < 0x1.0p+8f;
}

/* qs8 Add or Mul, broadcasting as the float node does. */
static mb_status lower_binary_int8(build_ctx *b, binary_kind kind,
                                   const int8_plan *q) {
  const mb_node *n = b->node;
  size_t d[XNN_RANK_MAX], r;
  uint32_t x[2], y;
  mb_status status;
  for (int i = 0; i < 2; i++) {
    const mb_shape_info *s = &b->eg->shapes[n->inputs[i]];
    r = segment_dims(s->rank, s->dims, d);
    if ((status = mb__xnn_qinput_id(b, n->inputs[i], i ? &q->in2 : &q->in, r, d,
                                    &x[i])))
      return status;
  }
  const mb_shape_info *ys = &b->eg->shapes[q->out_value];
  r = segment_dims(ys->rank, ys->dims, d);
  if ((status = mb__xnn_qoutput_id(b, q->out_value, &q->out, r, d, &y)))
    return status;
  if (kind == BINARY_ADD)
    XNN_CALL(b, xnn_define_add2(b->subgraph, q->out_min, q->out_max, x[0], x[1],
                                y, 0));
  else
    XNN_CALL(b, xnn_define_multiply2(b->subgraph, q->out_min, q->out_max, x[0],
                                     x[1], y, 0));
  return mb__xnn_int8_finish(b, q);
}

mb_status mb__xnn_lower_binary(build_ctx *b) {
  const mb_node *n = b->node;
  binary_kind kind = BINARY_ADD;
  for (size_t i = 0; i < MB_ARRAY_COUNT(binary_ops); i++)
    if (strcmp(n->op_type, binary_ops[i].op_type) == 0)
      kind = binary_ops[i].kind;
  int8_plan q;
  if (b->quant && (kind == BINARY_ADD || kind == BINARY_MUL) &&
      binary_int8_plan_get(b, kind, &q))
    return lower_binary_int8(b, kind, &q);
  int out_rank = b->eg->shapes[n->outputs[0]].rank;
  uint32_t a, c, y;
  mb_status status;
  if ((status = mb__xnn_operand_id(b, 0, out_rank, &a)) ||
      (status = mb__xnn_operand_id(b, 1, out_rank, &c)) ||
      (status = mb__xnn_output_id(b, n->outputs[0], &y)))
    return status;
  return define_binary(b, kind, a, c, y);
}

/* Unary nodes without parameters, one XNNPACK define each. */
typedef enum xnn_status (*xnn_define_unary_fn)(xnn_subgraph_t, uint32_t,
                                               uint32_t, uint32_t);
static const struct {
  const char *op_type;
  xnn_define_unary_fn define;
  const char *call;
} unary_ops[] = {
    {"Sigmoid", xnn_define_sigmoid, "xnn_define_sigmoid"},
    {"HardSwish", xnn_define_hardswish, "xnn_define_hardswish"},
    {"Abs", xnn_define_abs, "xnn_define_abs"},
    {"Neg", xnn_define_negate, "xnn_define_negate"},
    {"Floor", xnn_define_floor, "xnn_define_floor"},
    {"Ceil", xnn_define_ceiling, "xnn_define_ceiling"},
    {"Sqrt", xnn_define_square_root, "xnn_define_square_root"},
};

mb_status mb__xnn_lower_unary(build_ctx *b) {
  const mb_node *n = b->node;
  uint32_t x, y;
  mb_status status;
  if ((status = mb__xnn_value_id(b, n->inputs[0], &x)) ||
      (status = mb__xnn_output_id(b, n->outputs[0], &y)))
    return status;
  for (size_t i = 0; i < MB_ARRAY_COUNT(unary_ops); i++) {
    if (strcmp(n->op_type, unary_ops[i].op_type) == 0) {
      enum xnn_status xs = unary_ops[i].define(b->subgraph, x, y, 0);
      if (xs != xnn_status_success)
        return mb__xnn_fail(b, unary_ops[i].call, xs);
      return MB_STATUS_OK;
    }
  }
  return mb__xnn_recheck_failed(b, "no unary lowering");
}

static mb_status define_clamp(build_ctx *b, float lo, float hi) {
  const mb_node *n = b->node;
  uint32_t x, y;
  mb_status status;
  if ((status = mb__xnn_value_id(b, n->inputs[0], &x)) ||
      (status = mb__xnn_output_id(b, n->outputs[0], &y)))
    return status;
  XNN_CALL(b, xnn_define_clamp(b->subgraph, lo, hi, x, y, 0));
  return MB_STATUS_OK;
}

/* XNNPACK of this date has no ReLU node: a clamp to [0, inf), which its
 * subgraph rewriter fuses into a preceding Conv or fully connected node. */
mb_status mb__xnn_lower_relu(build_ctx *b) {
  return define_clamp(b, 0.0f, INFINITY);
}

mb_status mb__xnn_lower_clip(build_ctx *b) {
  char reason[256];
  mb_engine_check c = mb__xnn_lower_check_ctx(b, reason, sizeof reason);
  float lo, hi;
  if (!mb__xnn_clip_bounds(&c, &lo, &hi))
    return mb__xnn_recheck_failed(b, reason);
  return define_clamp(b, lo, hi);
}

mb_status mb__xnn_lower_leaky_relu(build_ctx *b) {
  const mb_node *n = b->node;
  uint32_t x, y;
  mb_status status;
  if ((status = mb__xnn_value_id(b, n->inputs[0], &x)) ||
      (status = mb__xnn_output_id(b, n->outputs[0], &y)))
    return status;
  XNN_CALL(b, xnn_define_leaky_relu(b->subgraph,
                                    mb__node_attr_float(n, "alpha", 0.01f), x,
                                    y, 0));
  return MB_STATUS_OK;
}

mb_status mb__xnn_lower_elu(build_ctx *b) {
  const mb_node *n = b->node;
  uint32_t x, y;
  mb_status status;
  if ((status = mb__xnn_value_id(b, n->inputs[0], &x)) ||
      (status = mb__xnn_output_id(b, n->outputs[0], &y)))
    return status;
  XNN_CALL(b, xnn_define_elu(b->subgraph, mb__node_attr_float(n, "alpha", 1.0f),
                             x, y, 0));
  return MB_STATUS_OK;
}

/* HardSigmoid = clamp(alpha * x + beta, 0, 1): three nodes. */
mb_status mb__xnn_lower_hardsigmoid(build_ctx *b) {
  const mb_node *n = b->node;
  const mb_shape_info *s = &b->eg->shapes[n->outputs[0]];
  uint32_t x, a, c, t1, t2, y;
  mb_status status;
  if ((status = mb__xnn_value_id(b, n->inputs[0], &x)) ||
      (status =
           mb__xnn_scalar_id(b, mb__node_attr_float(n, "alpha", 0.2f), &a)) ||
      (status =
           mb__xnn_scalar_id(b, mb__node_attr_float(n, "beta", 0.5f), &c)) ||
      (status = mb__xnn_define_internal(b, s->rank, s->dims, &t1)) ||
      (status = mb__xnn_define_internal(b, s->rank, s->dims, &t2)) ||
      (status = mb__xnn_output_id(b, n->outputs[0], &y)))
    return status;
  XNN_CALL(b,
           xnn_define_multiply2(b->subgraph, -INFINITY, INFINITY, x, a, t1, 0));
  XNN_CALL(b, xnn_define_add2(b->subgraph, -INFINITY, INFINITY, t1, c, t2, 0));
  XNN_CALL(b, xnn_define_clamp(b->subgraph, 0.0f, 1.0f, t2, y, 0));
  return MB_STATUS_OK;
}

mb_status mb__xnn_lower_prelu(build_ctx *b) {
  const mb_node *n = b->node;
  const mb_shape_info *xs = &b->eg->shapes[n->inputs[0]];
  const mb_tensor *slope = mb__engine_constant(b->eg, n->inputs[1]);
  int64_t channels = is_nhwc(xs->rank) ? xs->dims[1] : xs->dims[xs->rank - 1];
  float *sd = mb__xnn_static_alloc(b, (size_t)channels);
  uint32_t x, s, y;
  mb_status status;
  if (!sd)
    return mb__xnn_oom(b);
  for (int64_t i = 0; i < channels; i++)
    sd[i] = ((const float *)slope->data)[slope->numel == 1 ? 0 : i];
  size_t dims[1] = {(size_t)channels};
  if ((status = mb__xnn_value_id(b, n->inputs[0], &x)) ||
      (status = mb__xnn_define_static(b, 1, dims, sd, &s)) ||
      (status = mb__xnn_output_id(b, n->outputs[0], &y)))
    return status;
  XNN_CALL(b, xnn_define_prelu(b->subgraph, x, s, y, 0));
  return MB_STATUS_OK;
}

#endif /* MB_HAVE_XNNPACK */
