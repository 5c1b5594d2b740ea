/* XNNPACK engine: int8 (see xnnpack.c). The calibration entries of a
 * value as qint8 parameters, the plan of an int8 node (its input, weight
 * and output quantisation and a fused Relu/Clip), the qint8 values shared
 * between int8 nodes, and the quantised weights and biases. */
#ifdef MB_HAVE_XNNPACK

#include "runtime/xnnpack/internal.h"

/* XNNPACK refuses scales that are not positive normal floats. */
bool mb__xnn_scale_ok(double s) {
  return s > 0.0 && s <= FLT_MAX && (float)s >= FLT_MIN;
}

/* Value v's ACTIVATION entry as a qact; false when there is none that
 * XNNPACK can take. */
bool mb__xnn_qact_of(const build_ctx *b, int v, qact *out) {
  const mb_quant_param *p = mb__engine_quant_activation(b->eg, b->quant, v);
  if (!p)
    return false;
  int32_t zp = p->zero_points[0];
  if (p->dtype == MB_DTYPE_UINT8)
    zp -= 128;
  if (!mb__xnn_scale_ok(p->scales[0]) || zp < -128 || zp > 127)
    return false;
  out->scale = p->scales[0];
  out->zero_point = zp;
  return true;
}

/* Is value v at hand in qint8 (an int8 op wrote it, or an int8 reader
 * quantised it already)? The ops that gain from int8 only when their
 * input is (pools, Add, data movement) go int8 then. */
bool mb__xnn_has_qint8(const build_ctx *b, int v) {
  return b->qids && b->qids[v] != XNN_INVALID_VALUE_ID;
}

/* The quantisation an int8 op reads value v with: that of the op that
 * wrote it when that op keeps its input's (MaxPool, Reshape: the QDQ form
 * gives their output the input's parameters), else v's entry. */
bool mb__xnn_qact_in(const build_ctx *b, int v, qact *out) {
  if (mb__xnn_has_qint8(b, v) && b->qkeep[v]) {
    out->scale = b->qscale[v];
    out->zero_point = b->qzp[v];
    return true;
  }
  return mb__xnn_qact_of(b, v, out);
}

/* A Relu or Clip in this segment that is the only reader of value v,
 * which goes nowhere else (not a segment output): the int8 op clamps its
 * own output and writes the Relu's, as ORT's quantiser removes such a
 * Relu. Returns the node's graph index with its bounds, or -1. */
static int fusable_clamp(const build_ctx *b, int v, float *lo, float *hi) {
  const mb_graph *g = b->eg->graph;
  int reader = -1;
  if (b->output_slot[v] >= 0 || g->values[v].is_output)
    return -1;
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    for (int j = 0; j < n->n_inputs; j++) {
      if (n->inputs[j] != v)
        continue;
      if (reader >= 0 || j != 0)
        return -1;
      reader = i;
    }
  }
  if (reader < 0 || mb__segment_position(b->seg_desc, reader) < 0)
    return -1;
  const mb_node *r = &g->nodes[reader];
  mb_engine_check c = {b->eg, r, b->opset, NULL, 0, &mb__xnn_limits};
  if (r->domain[0] || mb__engine_node_folded(b->eg, r) ||
      !mb__xnn_check_unary(&c))
    return -1;
  if (strcmp(r->op_type, "Relu") == 0) {
    *lo = 0.0f;
    *hi = INFINITY;
    return reader;
  }
  if (strcmp(r->op_type, "Clip") == 0 && mb__xnn_clip_bounds(&c, lo, hi) &&
      *lo < *hi)
    return reader;
  return -1;
}

/* A clamp bound in the output's int8 terms, as XNNPACK computes it. */
static int32_t quantized_bound(float bound, const qact *q) {
  return (int32_t)lrintf(
      fminf(fmaxf(bound / q->scale + (float)q->zero_point, -128.0f), 127.0f));
}

/* The output side of an int8 node: a sole Relu/Clip reader fused into it,
 * the entry of the value it then writes, and a clamp that leaves some
 * int8 values (XNNPACK refuses an empty one). */
bool mb__xnn_int8_output_get(build_ctx *b, int8_plan *p) {
  p->fused_node = -1;
  p->out_value = b->node->outputs[0];
  p->out_min = -INFINITY;
  p->out_max = INFINITY;
  int fused = fusable_clamp(b, p->out_value, &p->out_min, &p->out_max);
  if (fused >= 0) {
    p->fused_node = fused;
    p->out_value = b->eg->graph->nodes[fused].outputs[0];
  }
  return mb__xnn_qact_of(b, p->out_value, &p->out) &&
         quantized_bound(p->out_min, &p->out) <
             quantized_bound(p->out_max, &p->out);
}

/* Can the current node run in int8 (see the top of the file)? Its weight
 * has `channels` output channels along stored axis `axis`. Everything
 * XNNPACK would refuse at define or create time (scales that are not
 * normal, a requantisation scale outside [2^-32, 256), an empty clamp) is
 * refused here, so that a refusal costs nothing but the node's speed. */
bool mb__xnn_int8_plan_get(build_ctx *b, int axis, int64_t channels,
                           float alpha, int8_plan *p) {
  const mb_node *n = b->node;
  memset(p, 0, sizeof *p);
  p->weight =
      mb__engine_quant_weight(b->eg, b->quant, n->inputs[1], axis, channels);
  p->alpha = alpha;
  if (!p->weight || !mb__xnn_qact_in(b, n->inputs[0], &p->in) ||
      !(alpha > 0.0f))
    return false;
  if (!mb__xnn_int8_output_get(b, p))
    return false;
  for (int64_t c = 0; c < channels; c++) {
    double ws = (double)alpha * mb__engine_weight_scale(p->weight, c);
    double bias_scale = (double)p->in.scale * ws;
    double requant = bias_scale / p->out.scale;
    if (!mb__xnn_scale_ok(mb__engine_weight_scale(p->weight, c)) ||
        !mb__xnn_scale_ok(ws) || !mb__xnn_scale_ok(bias_scale) ||
        !(requant >= 0x1.0p-32) || !(requant < 256.0))
      return false;
  }
  return true;
}

static int32_t quantize_bias(float bias, float scale) {
  double q = nearbyint((double)bias / scale);
  return (int32_t)(q != q              ? 0
                   : q < -2147483647.0 ? -2147483647.0
                   : q > 2147483647.0  ? 2147483647.0
                                       : q);
}

/* Records t, in dims (r, d) with quantisation q, as value v's qint8 id. */
static void qid_set(build_ctx *b, int v, uint32_t t, const qact *q, size_t r,
                    const size_t *d) {
  b->qids[v] = t;
  b->qscale[v] = q->scale;
  b->qzp[v] = q->zero_point;
  b->qrank[v] = (uint8_t)r;
  memcpy(b->qdims[v], d, r * sizeof *d);
  b->qkeep[v] = false;
}

/* The qint8 id of value v read by an int8 op with quantisation q, in
 * segment dims (r, d): the value an int8 producer wrote when its
 * quantisation is the same (no convert pair between them; a qint8 reshape
 * when its dims differ), else a quantising convert of the float value,
 * shared by the int8 ops that read v alike. */
mb_status mb__xnn_qinput_id(build_ctx *b, int v, const qact *q, size_t r,
                            const size_t *d, uint32_t *id_out) {
  uint32_t f, t;
  mb_status status;
  if (b->qids[v] != XNN_INVALID_VALUE_ID && b->qscale[v] == q->scale &&
      b->qzp[v] == q->zero_point) {
    if (b->qrank[v] == r && memcmp(b->qdims[v], d, r * sizeof *d) == 0) {
      *id_out = b->qids[v];
      return MB_STATUS_OK;
    }
    XNN_CALL(b, xnn_define_quantized_tensor_value(
                    b->subgraph, xnn_datatype_qint8, q->zero_point, q->scale, r,
                    d, NULL, XNN_INVALID_VALUE_ID, 0, &t));
    XNN_CALL(b, xnn_define_static_reshape(b->subgraph, r, d, b->qids[v], t, 0));
    *id_out = t;
    return MB_STATUS_OK;
  }
  if ((status = mb__xnn_value_id(b, v, &f)))
    return status;
  XNN_CALL(b, xnn_define_quantized_tensor_value(
                  b->subgraph, xnn_datatype_qint8, q->zero_point, q->scale, r,
                  d, NULL, XNN_INVALID_VALUE_ID, 0, &t));
  XNN_CALL(b, xnn_define_convert(b->subgraph, f, t, 0));
  if (b->qids[v] == XNN_INVALID_VALUE_ID)
    qid_set(b, v, t, q, r, d);
  *id_out = t;
  return MB_STATUS_OK;
}

/* Defines the qint8 value v an int8 op writes, in segment dims (r, d). */
mb_status mb__xnn_qoutput_id(build_ctx *b, int v, const qact *q, size_t r,
                             const size_t *d, uint32_t *id_out) {
  uint32_t t;
  XNN_CALL(b, xnn_define_quantized_tensor_value(
                  b->subgraph, xnn_datatype_qint8, q->zero_point, q->scale, r,
                  d, NULL, XNN_INVALID_VALUE_ID, 0, &t));
  qid_set(b, v, t, q, r, d);
  *id_out = t;
  return MB_STATUS_OK;
}

/* qoutput_id for value v of an op that keeps its input's quantisation q,
 * in v's segment dims. */
mb_status mb__xnn_qkeep_output_id(build_ctx *b, int v, const qact *q,
                                  uint32_t *id_out) {
  const mb_shape_info *s = &b->eg->shapes[v];
  size_t d[XNN_RANK_MAX];
  size_t r = segment_dims(s->rank, s->dims, d);
  mb_status status = mb__xnn_qoutput_id(b, v, q, r, d, id_out);
  b->qkeep[v] = true;
  return status;
}

/* The qint8 id of value v at hand (has_qint8) with its quantisation, for an
 * op that keeps it. */
uint32_t mb__xnn_qheld(const build_ctx *b, int v, qact *q) {
  q->scale = b->qscale[v];
  q->zero_point = b->qzp[v];
  return b->qids[v];
}

/* After the int8 op that wrote v: a segment output also gets its float
 * external value, through a dequantising convert (the subgraph runs its
 * nodes in the order they were defined, so this comes after the op). */
mb_status mb__xnn_qoutput_export(build_ctx *b, int v) {
  int slot = b->output_slot[v];
  if (slot < 0)
    return MB_STATUS_OK;
  const mb_shape_info *s = &b->eg->shapes[v];
  size_t d[XNN_RANK_MAX];
  size_t r = segment_dims(s->rank, s->dims, d);
  uint32_t ext = b->seg->outputs[slot].id = b->next_external++;
  XNN_CALL(b, xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, r, d,
                                      NULL, ext, XNN_VALUE_FLAG_EXTERNAL_OUTPUT,
                                      &b->ids[v]));
  XNN_CALL(b, xnn_define_convert(b->subgraph, b->qids[v], b->ids[v], 0));
  return MB_STATUS_OK;
}

/* The per-channel filter scales (alpha applied) and the int32 bias with
 * its scales (input scale x filter scale) of an int8 op with `channels`
 * outputs; bias_data: `channels` floats (already times beta), or NULL. */
mb_status mb__xnn_int8_bias(build_ctx *b, const int8_plan *p, int64_t channels,
                            const float *bias_data, float **fscale_out,
                            int32_t **bias_out, float **bscale_out) {
  float *fscale = mb__xnn_static_alloc(b, (size_t)channels);
  float *bscale = mb__xnn_static_alloc(b, (size_t)channels);
  int32_t *bq =
      mb__xnn_static_alloc_bytes(b, (size_t)channels * sizeof(int32_t));
  if (!fscale || !bscale || !bq)
    return mb__xnn_oom(b);
  for (int64_t c = 0; c < channels; c++) {
    fscale[c] = p->alpha * mb__engine_weight_scale(p->weight, c);
    bscale[c] = p->in.scale * fscale[c];
    bq[c] = bias_data ? quantize_bias(bias_data[c], bscale[c]) : 0;
  }
  *fscale_out = fscale;
  *bias_out = bq;
  *bscale_out = bscale;
  return MB_STATUS_OK;
}

/* Defines the int8 op's qcint8 filter [dims] (channel dimension
 * channel_dim) and qcint32 bias over data the segment owns. */
mb_status mb__xnn_int8_weights(build_ctx *b, const int8_t *filter,
                               const size_t *fdims, size_t channel_dim,
                               const float *fscale, const int32_t *bias,
                               const float *bscale, size_t channels,
                               uint32_t *f_id, uint32_t *b_id) {
  XNN_CALL(b, xnn_define_channelwise_quantized_tensor_value(
                  b->subgraph, xnn_datatype_qcint8, fscale, 4, channel_dim,
                  fdims, filter, XNN_INVALID_VALUE_ID, 0, f_id));
  XNN_CALL(b, xnn_define_channelwise_quantized_tensor_value(
                  b->subgraph, xnn_datatype_qcint32, bscale, 1, 0, &channels,
                  bias, XNN_INVALID_VALUE_ID, 0, b_id));
  return MB_STATUS_OK;
}

/* The end of an int8 op: its fused Relu/Clip becomes nothing, and a
 * segment output gets its float copy. */
mb_status mb__xnn_int8_finish(build_ctx *b, const int8_plan *p) {
  if (p->fused_node >= 0)
    b->fused[p->fused_node] = true;
  return mb__xnn_qoutput_export(b, p->out_value);
}

#endif /* MB_HAVE_XNNPACK */
