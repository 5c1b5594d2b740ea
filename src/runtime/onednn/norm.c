/* oneDNN engine: normalizations (BatchNormalization, Softmax/LogSoftmax,
 * LayerNormalization). */
#ifdef MB_HAVE_DNNL

#include "runtime/onednn/internal.h"

/* ---- normalizations ------------------------------------------------------ */

mb_status mb__dn_lower_batchnorm(lctx *l, const mb_node *n) {
  dnnl_primitive_desc_t pd = NULL;
  mb_status status = MB_STATUS_OK;
  dn_rep *in = NULL, *out;
  dnnl_memory_t params[4];
  dnnl_memory_desc_t cmd;
  int64_t x[MB_MAX_RANK];
  int rank;
  {
    char reason[256] = "";
    mb_engine_check c = mb__dn_lower_check_ctx(l, n, reason, sizeof reason);
    if (!mb__dn_check_batchnorm(&c))
      return mb__dn_recheck_failed(l, reason);
  }
  float eps = mb__node_attr_float(n, "epsilon", 1e-5f);
  unsigned flags = dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift;
  mb__dn_value_dims(l, n->inputs[0], &rank, x);
  for (int attempt = 0; attempt < 3 && !pd; attempt++) {
    dnnl_batch_normalization_desc_t bd;
    MB_TRY_GOTO(mb__dn_value_get(
        l, n->inputs[0], attempt ? DN_WANT_PLAIN : DN_WANT_DTYPE,
        attempt == 2 ? dnnl_f32 : l->act_dt, NULL, &in));
    DN_GOTO(l, dnnl_batch_normalization_forward_desc_init(
                   &bd, dnnl_forward_inference, &in->md, eps, flags));
    dnnl_status_t st = mb__dn_pd_try(l, &bd, NULL, &pd);
    if (st == dnnl_success)
      mb__dn_pd_accept(&pd, attempt == 2);
    else if (attempt == 2) {
      status =
          mb__dn_fail(l, "dnnl_primitive_desc_create(batch_normalization)", st);
      goto done;
    }
  }
  DN_GOTO(l, mb__dn_md_plain(&cmd, 1, &x[1], dnnl_f32));
  /* ONNX order: scale, B, mean, var. */
  for (int i = 0; i < 4; i++)
    MB_TRY_GOTO(mb__dn_const_memory(
        l, &cmd, mb__engine_constant(l->eg, n->inputs[1 + i])->data, false,
        &cmd, &params[i], NULL));
  dn_rep src = *in;
  MB_TRY_GOTO(mb__dn_value_define_like(l, n->outputs[0], &src, -1, &out));
  dnnl_exec_arg_t args[6] = {
      {DNNL_ARG_SRC, src.mem},     {DNNL_ARG_DST, out->mem},
      {DNNL_ARG_SCALE, params[0]}, {DNNL_ARG_SHIFT, params[1]},
      {DNNL_ARG_MEAN, params[2]},  {DNNL_ARG_VARIANCE, params[3]},
  };
  MB_TRY_GOTO(mb__dn_emit(l, pd, 6, args));
done:
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  return status;
}

/* A new plain value v of data type dt, and a view of it as md2 (the same
 * bytes seen with other dims) for the primitive. */
mb_status mb__dn_define_plain_viewed(lctx *l, int v, dnnl_data_type_t dt,
                                     const dnnl_memory_desc_t *md2,
                                     dnnl_memory_t *mem2) {
  dnnl_memory_desc_t md;
  dn_rep *out;
  mb_status status;
  int rank;
  int64_t dims[MB_MAX_RANK];
  mb__dn_value_dims(l, v, &rank, dims);
  DN_TRY(l, mb__dn_md_plain(&md, rank, dims, dt));
  if ((status = mb__dn_value_define(l, v, &md, &out)))
    return status;
  return mb__dn_rep_view(l, out, md2, mem2);
}

mb_status mb__dn_lower_softmax(lctx *l, const mb_node *n) {
  softmax_params p;
  dnnl_primitive_desc_t pd = NULL;
  mb_status status = MB_STATUS_OK;
  dnnl_memory_desc_t md2;
  dn_rep *in = NULL, *out;
  int rank, axis;
  int64_t x[MB_MAX_RANK];
  DN_PARAMS(l, n, mb__dn_softmax_get, &p);
  mb__dn_value_dims(l, n->inputs[0], &rank, x);
  /* int8: probabilities read only by int8 products of two activations
   * (attention's probabilities by v) are written in u8 at once. */
  dn_qact yq;
  float inv = 0.0f;
  bool q = !p.log && !p.coerce_2d && mb__dn_q_act_source(l, n->outputs[0], &yq);
  dn_qattr qa = {1, 0, &inv, false, false, 0};
  if (q)
    inv = 1.0f / yq.scale;
  dnnl_memory_desc_t dst_md;
  /* u8 from plain float32 (int8), then in place in the input's layout;
   * plain; plain float32. */
  int attempt = q ? -1 : p.coerce_2d ? 1 : 0;
  for (; attempt < 3 && !pd; attempt++) {
    dnnl_softmax_v2_desc_t sd;
    dnnl_data_type_t dt = attempt == 2 ? dnnl_f32 : l->act_dt;
    MB_TRY_GOTO(mb__dn_value_get(l, n->inputs[0],
                                 attempt ? DN_WANT_PLAIN : DN_WANT_DTYPE, dt,
                                 NULL, &in));
    md2 = dst_md = in->md;
    axis = p.axis;
    if (p.coerce_2d) {
      int64_t d2[2] = {mb__engine_numel(p.axis, x),
                       mb__engine_numel(rank - p.axis, x + p.axis)};
      DN_GOTO(l, mb__dn_md_plain(&md2, 2, d2, dt));
      dst_md = md2;
      axis = 1;
    }
    if (attempt < 0)
      DN_GOTO(l, mb__dn_md_plain(&dst_md, rank, x, mb__dn_q_dt(&yq.p)));
    DN_GOTO(l, dnnl_softmax_v2_forward_desc_init(&sd, dnnl_forward_inference,
                                                 p.log ? dnnl_softmax_log
                                                       : dnnl_softmax_accurate,
                                                 &md2, &dst_md, axis));
    dnnl_status_t st =
        mb__dn_pd_try_q(l, &sd, NULL, attempt < 0 ? &qa : NULL, &pd);
    if (st == dnnl_success)
      mb__dn_pd_accept(&pd, attempt == 2);
    else if (attempt == 2) {
      status = mb__dn_fail(l, "dnnl_primitive_desc_create(softmax)", st);
      goto done;
    }
  }
  q = attempt == 0; /* the loop stepped past the u8 try */
  dn_rep src = *in;
  dnnl_memory_t in_mem = src.mem, out_mem;
  if (q) {
    MB_TRY_GOTO(mb__dn_value_define(l, n->outputs[0],
                                    mb__dn_pd_md(pd, dnnl_query_dst_md), &out));
    out->qscale = yq.scale;
    out->qzp = 0;
    out_mem = out->mem;
  } else if (p.coerce_2d) {
    MB_TRY_GOTO(mb__dn_rep_view(l, &src, &md2, &in_mem));
    MB_TRY_GOTO(mb__dn_define_plain_viewed(l, n->outputs[0], md2.data_type,
                                           &md2, &out_mem));
  } else {
    MB_TRY_GOTO(mb__dn_value_define_like(l, n->outputs[0], &src, -1, &out));
    out_mem = out->mem;
  }
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, in_mem}, {DNNL_ARG_DST, out_mem}};
  MB_TRY_GOTO(mb__dn_emit(l, pd, 2, args));
done:
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  return status;
}

/* Layer normalization of value x over its last `inner` elements into value
 * y: scale and shift (inner floats each, or NULL: 1 and 0) borrowed,
 * outliving the segment (graph constants). */
mb_status mb__dn_emit_lnorm(lctx *l, int x, int y, int64_t outer, int64_t inner,
                            float epsilon, const float *scale,
                            const float *shift) {
  dnnl_primitive_desc_t pd = NULL;
  mb_status status = MB_STATUS_OK;
  dnnl_memory_desc_t md2, cmd;
  dn_rep *in = NULL;
  dnnl_memory_t scale_mem, shift_mem = NULL;
  int64_t d2[2] = {outer, inner};
  unsigned flags = dnnl_use_scale | (shift ? dnnl_use_shift : 0u);
  for (int attempt = 0; attempt < 2 && !pd; attempt++) {
    dnnl_layer_normalization_desc_t ld;
    dnnl_data_type_t dt = attempt ? dnnl_f32 : l->act_dt;
    if (attempt && dt == l->act_dt)
      break;
    MB_TRY_GOTO(mb__dn_value_get(l, x, DN_WANT_PLAIN, dt, NULL, &in));
    DN_GOTO(l, mb__dn_md_plain(&md2, 2, d2, dt));
    DN_GOTO(l, dnnl_layer_normalization_forward_desc_init(
                   &ld, dnnl_forward_inference, &md2, NULL, epsilon, flags));
    dnnl_status_t st = mb__dn_pd_try(l, &ld, NULL, &pd);
    bool last = attempt == 1 || l->act_dt == dnnl_f32;
    if (st == dnnl_success)
      mb__dn_pd_accept(&pd, last);
    else if (last) {
      status =
          mb__dn_fail(l, "dnnl_primitive_desc_create(layer_normalization)", st);
      goto done;
    }
  }
  DN_GOTO(l, mb__dn_md_plain(&cmd, 1, &inner, dnnl_f32));
  if (scale) {
    MB_TRY_GOTO(
        mb__dn_const_memory(l, &cmd, scale, false, &cmd, &scale_mem, NULL));
  } else {
    float *ones = mb__aligned_alloc((size_t)inner * sizeof *ones);
    if (!ones) {
      status = mb__dn_oom(l);
      goto done;
    }
    for (int64_t i = 0; i < inner; i++)
      ones[i] = 1.0f;
    MB_TRY_GOTO(
        mb__dn_const_memory(l, &cmd, ones, true, &cmd, &scale_mem, NULL));
  }
  if (shift)
    MB_TRY_GOTO(
        mb__dn_const_memory(l, &cmd, shift, false, &cmd, &shift_mem, NULL));
  dn_rep src = *in;
  dnnl_memory_t in_mem, out_mem;
  MB_TRY_GOTO(mb__dn_rep_view(l, &src, &md2, &in_mem));
  MB_TRY_GOTO(mb__dn_define_plain_viewed(l, y, md2.data_type, &md2, &out_mem));
  dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, in_mem},
                             {DNNL_ARG_DST, out_mem},
                             {DNNL_ARG_SCALE, scale_mem},
                             {DNNL_ARG_SHIFT, shift_mem}};
  MB_TRY_GOTO(mb__dn_emit(l, pd, shift ? 4 : 3, args));
done:
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  return status;
}

mb_status mb__dn_lower_lnorm(lctx *l, const mb_node *n) {
  lnorm_params p;
  DN_PARAMS(l, n, mb__dn_lnorm_get, &p);
  const mb_tensor *shift =
      p.bias ? mb__engine_constant(l->eg, n->inputs[2]) : NULL;
  return mb__dn_emit_lnorm(l, n->inputs[0], n->outputs[0], p.outer, p.inner,
                           p.epsilon,
                           mb__engine_constant(l->eg, n->inputs[1])->data,
                           shift ? shift->data : NULL);
}

#endif /* MB_HAVE_DNNL */
