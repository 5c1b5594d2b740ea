/* XNNPACK engine: the subgraph builder. XNNPACK ids of values (segment
 * inputs and outputs become external values), static data the segment
 * owns, and operands permuted to NHWC. */
#ifdef MB_HAVE_XNNPACK

#include "runtime/xnnpack/internal.h"

mb_status mb__xnn_fail(build_ctx *b, const char *call, enum xnn_status status) {
  char label[160];
  return mb__error(b->err,
                   status == xnn_status_out_of_memory ? MB_STATUS_OUT_OF_MEMORY
                                                      : MB_STATUS_UNSUPPORTED,
                   "xnnpack: %s: %s returned %s",
                   mb__node_label(b->node, label, sizeof label), call,
                   mb__xnn_status_name(status));
}

/* An owned, zeroed buffer of `nbytes` bytes (plus XNNPACK's over-read
 * margin) that lives as long as the segment. */
void *mb__xnn_static_alloc_bytes(build_ctx *b, size_t nbytes) {
  xnn_segment *s = b->seg;
  if (s->n_statics == s->cap_statics) {
    int cap = s->cap_statics ? 2 * s->cap_statics : 16;
    void **p = realloc(s->statics, (size_t)cap * sizeof *p);
    if (!p)
      return NULL;
    s->statics = p;
    s->cap_statics = cap;
  }
  void *buf = mb__aligned_alloc(nbytes + XNN_EXTRA_BYTES);
  if (!buf)
    return NULL;
  memset(buf, 0, nbytes + XNN_EXTRA_BYTES);
  s->statics[s->n_statics++] = buf;
  return buf;
}

/* static_alloc_bytes for `count` floats. */
float *mb__xnn_static_alloc(build_ctx *b, size_t count) {
  return mb__xnn_static_alloc_bytes(b, count * sizeof(float));
}

mb_status mb__xnn_oom(build_ctx *b) {
  return mb__error(b->err, MB_STATUS_OUT_OF_MEMORY, "xnnpack: out of memory");
}

/* Defines a static fp32 value over `data` (owned by the segment). */
mb_status mb__xnn_define_static(build_ctx *b, size_t rank, const size_t *dims,
                                const float *data, uint32_t *id_out) {
  XNN_CALL(b,
           xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, rank, dims,
                                   data, XNN_INVALID_VALUE_ID, 0, id_out));
  return MB_STATUS_OK;
}

/* Defines an internal value of ONNX shape (rank, dims) in segment layout. */
mb_status mb__xnn_define_internal(build_ctx *b, int rank, const int64_t *dims,
                                  uint32_t *id_out) {
  size_t d[XNN_RANK_MAX];
  size_t r = segment_dims(rank, dims, d);
  XNN_CALL(b, xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, r, d,
                                      NULL, XNN_INVALID_VALUE_ID, 0, id_out));
  return MB_STATUS_OK;
}

/* The id of non-constant value v read by the current node: produced by an
 * earlier node, or a segment input (defined on first use). */
mb_status mb__xnn_value_id(build_ctx *b, int v, uint32_t *id_out) {
  if (b->ids[v] == XNN_INVALID_VALUE_ID && b->qids &&
      b->qids[v] != XNN_INVALID_VALUE_ID) {
    /* Written by an int8 op, read here in float: dequantise once. */
    const mb_shape_info *s = &b->eg->shapes[v];
    mb_status status = mb__xnn_define_internal(b, s->rank, s->dims, &b->ids[v]);
    if (status)
      return status;
    XNN_CALL(b, xnn_define_convert(b->subgraph, b->qids[v], b->ids[v], 0));
  }
  if (b->ids[v] == XNN_INVALID_VALUE_ID) {
    int slot = b->input_slot[v];
    if (slot < 0) {
      char label[160];
      return mb__error(b->err, MB_STATUS_INTERNAL,
                       "xnnpack: %s: value '%s' is neither a segment input "
                       "nor produced in the segment",
                       mb__node_label(b->node, label, sizeof label),
                       b->eg->graph->values[v].name);
    }
    io_slot *io = &b->seg->inputs[slot];
    const mb_shape_info *s = &b->eg->shapes[v];
    size_t d[XNN_RANK_MAX];
    size_t r = segment_dims(s->rank, s->dims, d);
    io->id = b->next_external++;
    XNN_CALL(b, xnn_define_tensor_value(
                    b->subgraph, xnn_datatype_fp32, r, d, NULL, io->id,
                    XNN_VALUE_FLAG_EXTERNAL_INPUT, &b->ids[v]));
  }
  *id_out = b->ids[v];
  return MB_STATUS_OK;
}

/* Is value v read by a node of the segment? */
static bool read_in_segment(const build_ctx *b, int v) {
  return mb__segment_readers(b->seg_desc, v, NULL, 0) > 0;
}

/* The fp16 rewrite of XNNPACK git20220216 asserts that every external
 * value a node reads is an external input, so in fp16 a segment output
 * also read inside the segment stays internal and copy_outputs_fp16
 * copies it out. */
static bool copied_out(const build_ctx *b, int v) {
  return b->fp16 && read_in_segment(b, v);
}

/* Defines value v written by the current node: external when it is a
 * segment output. */
mb_status mb__xnn_output_id(build_ctx *b, int v, uint32_t *id_out) {
  const mb_shape_info *s = &b->eg->shapes[v];
  size_t d[XNN_RANK_MAX];
  size_t r = segment_dims(s->rank, s->dims, d);
  uint32_t external = XNN_INVALID_VALUE_ID, flags = 0;
  int slot = b->output_slot[v];
  if (slot >= 0 && !copied_out(b, v)) {
    external = b->seg->outputs[slot].id = b->next_external++;
    flags = XNN_VALUE_FLAG_EXTERNAL_OUTPUT;
  }
  XNN_CALL(b, xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, r, d,
                                      NULL, external, flags, &b->ids[v]));
  *id_out = b->ids[v];
  return MB_STATUS_OK;
}

/* Defines a copy of constant data of ONNX shape (rank, dims) as an operand
 * of an elementwise node whose output has rank out_rank: permuted to NHWC
 * when the output is rank 4 (after NumPy's leading-ones expansion). */
mb_status mb__xnn_define_operand_data(build_ctx *b, int rank,
                                      const int64_t *dims, const float *data,
                                      int out_rank, uint32_t *id_out) {
  int64_t numel = mb__engine_numel(rank, dims);
  float *buf = mb__xnn_static_alloc(b, (size_t)numel);
  size_t d[XNN_RANK_MAX];
  size_t r;
  if (!buf)
    return mb__xnn_oom(b);
  if (is_nhwc(out_rank)) {
    int64_t e[4] = {1, 1, 1, 1};
    for (int i = 0; i < rank; i++)
      e[4 - rank + i] = dims[i];
    /* [N, C, H, W] -> [N, H, W, C] */
    int64_t hw = e[2] * e[3];
    for (int64_t n = 0; n < e[0]; n++)
      for (int64_t c = 0; c < e[1]; c++)
        for (int64_t p = 0; p < hw; p++)
          buf[(n * hw + p) * e[1] + c] = data[(n * e[1] + c) * hw + p];
    r = segment_dims(4, e, d);
  } else {
    memcpy(buf, data, (size_t)numel * sizeof(float));
    r = segment_dims(rank, dims, d);
  }
  return mb__xnn_define_static(b, r, d, buf, id_out);
}

/* The id of input i of the current node as an elementwise operand. */
mb_status mb__xnn_operand_id(build_ctx *b, int i, int out_rank,
                             uint32_t *id_out) {
  int v = b->node->inputs[i];
  const mb_tensor *k = mb__engine_constant(b->eg, v);
  if (k)
    return mb__xnn_define_operand_data(b, k->rank, k->dims, k->data, out_rank,
                                       id_out);
  return mb__xnn_value_id(b, v, id_out);
}

/* A scalar constant operand ([1]). */
mb_status mb__xnn_scalar_id(build_ctx *b, float value, uint32_t *id_out) {
  float *buf = mb__xnn_static_alloc(b, 1);
  size_t one = 1;
  if (!buf)
    return mb__xnn_oom(b);
  buf[0] = value;
  return mb__xnn_define_static(b, 1, &one, buf, id_out);
}

/* A check context for the node being lowered (its checks re-read the
 * parameters; they succeeded in supports_node). */
mb_engine_check mb__xnn_lower_check_ctx(build_ctx *b, char *reason,
                                        size_t size) {
  mb_engine_check c = {b->eg, b->node, b->opset, reason, size, &mb__xnn_limits};
  return c;
}

mb_status mb__xnn_recheck_failed(build_ctx *b, const char *reason) {
  char label[160];
  return mb__error(b->err, MB_STATUS_UNSUPPORTED, "xnnpack: %s: %s",
                   mb__node_label(b->node, label, sizeof label), reason);
}

/* The external copies of the outputs output_id kept internal (see
 * copied_out): a reshape to the same shape, which the fp16 rewrite takes. */
mb_status mb__xnn_copy_outputs_fp16(build_ctx *b) {
  for (int j = 0; j < b->seg->n_outputs; j++) {
    io_slot *io = &b->seg->outputs[j];
    int v = io->value;
    size_t d[XNN_RANK_MAX];
    uint32_t y;
    if (io->constant || io->id != XNN_INVALID_VALUE_ID ||
        b->ids[v] == XNN_INVALID_VALUE_ID)
      continue;
    size_t r = segment_dims(b->eg->shapes[v].rank, b->eg->shapes[v].dims, d);
    io->id = b->next_external++;
    XNN_CALL(b, xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, r, d,
                                        NULL, io->id,
                                        XNN_VALUE_FLAG_EXTERNAL_OUTPUT, &y));
    XNN_CALL(b, xnn_define_static_reshape(b->subgraph, r, d, b->ids[v], y, 0));
  }
  return MB_STATUS_OK;
}

/* The builder's per-value and per-node tables. */
void mb__xnn_build_free(build_ctx *b) {
  free(b->ids);
  free(b->input_slot);
  free(b->output_slot);
  free(b->qids);
  free(b->qscale);
  free(b->qzp);
  free(b->qrank);
  free(b->qdims);
  free(b->qkeep);
  free(b->fused);
  free(b->dead);
}

#endif /* MB_HAVE_XNNPACK */
