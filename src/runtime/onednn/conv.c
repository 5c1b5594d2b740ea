/* oneDNN engine: Conv (1-D to 3-D, grouped) in fp32, bf16 or int8, with
 * the post-ops of its fused group. */
#ifdef MB_HAVE_DNNL

#include "runtime/onednn/internal.h"

mb_status mb__dn_lower_conv(lctx *l, const dn_group *g) {
  const mb_node *n = node_at(l, g->head);
  conv_params p;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_post_ops_t po = NULL;
  mb_status status = MB_STATUS_OK;
  dnnl_memory_desc_t src_md, w_md, b_md, dst_md, w_user, b_user;
  dnnl_memory_desc_t bin_md[DN_MAX_POST];
  dnnl_dims_t strides, dil, pl, pr;
  int64_t x[MB_MAX_RANK], wd[MB_MAX_RANK + 1];
  int rank, k = g->n_post, wr;
  const mb_quant_param *xq = NULL, *wq = NULL;
  float *oscales = NULL;
  dn_qattr qa;
  DN_PARAMS(l, n, mb__dn_conv_get, &p);
  const mb_tensor *w = mb__engine_constant(l->eg, n->inputs[1]);
  const mb_tensor *bias =
      p.bias ? mb__engine_constant(l->eg, n->inputs[2]) : NULL;
  const mb_shape_info *y = &l->eg->shapes[n->outputs[0]];
  dnnl_data_type_t dt = l->act_dt;
  mb__dn_value_dims(l, n->inputs[0], &rank, x);
  if (p.groups > 1) {
    wr = rank + 1;
    wd[0] = p.groups;
    wd[1] = p.c_out / p.groups;
    wd[2] = p.c_in / p.groups;
    memcpy(wd + 3, w->dims + 2, (size_t)p.w.nsp * sizeof *wd);
  } else {
    wr = rank;
    memcpy(wd, w->dims, (size_t)rank * sizeof *wd);
  }
  to_dnnl_dims(p.w.nsp, p.w.stride, 0, strides);
  to_dnnl_dims(p.w.nsp, p.w.dilation, -1, dil);
  to_dnnl_dims(p.w.nsp, p.w.pad_l, 0, pl);
  to_dnnl_dims(p.w.nsp, p.w.pad_r, 0, pr);
  /* int8 first when calibrated (u8/s8 source, s8 weights per output
   * channel, float32 destination: dequantised by the output scales, so
   * post-ops and everything after stay float), else or on refusal fp32. */
  bool q =
      mb__dn_q_entries(l, n->inputs[0], n->inputs[1], 0, p.c_out, &xq, &wq);
  if (q) {
    if (!(oscales = mb__dn_q_out_scales(xq, wq, 1.0f)))
      return mb__dn_oom(l);
    qa = (dn_qattr){(int)wq->channels,
                    wq->channels > 1 ? 1 << 1 : 0,
                    oscales,
                    xq->zero_points[0] != 0,
                    false,
                    0};
  }
  DN_GOTO(l, mb__dn_md_plain(&b_md, 1, &p.c_out, dnnl_f32));
  b_user = b_md;
  for (int attempt = q ? 0 : 1; attempt < 2 && !pd; attempt++) {
    bool int8 = attempt == 0;
    DN_GOTO(l, mb__dn_md_any(&src_md, rank, x, int8 ? mb__dn_q_dt(xq) : dt));
    DN_GOTO(l, mb__dn_md_any(&w_md, wr, wd, int8 ? dnnl_s8 : dt));
    DN_GOTO(l, mb__dn_md_any(&dst_md, rank, y->dims, dt));
    DN_GOTO(l, mb__dn_md_plain(&w_user, wr, wd, int8 ? dnnl_s8 : dnnl_f32));
    /* The whole chain as post-ops, else ever shorter prefixes. */
    for (k = g->n_post; k >= 0; k--) {
      dnnl_convolution_desc_t cd;
      MB_TRY_GOTO(mb__dn_posts_build(l, g->post, k, rank, 0, &po, bin_md));
      DN_GOTO(l, dnnl_dilated_convolution_forward_desc_init(
                     &cd, dnnl_forward_inference, dnnl_convolution_direct,
                     &src_md, &w_md, (bias || int8) ? &b_md : NULL, &dst_md,
                     strides, dil, pl, pr));
      dnnl_status_t st = mb__dn_pd_try_q(l, &cd, po, int8 ? &qa : NULL, &pd);
      dnnl_post_ops_destroy(po);
      po = NULL;
      /* int8 never settles for oneDNN's reference kernels: fp32 is
       * faster than those. */
      if (st == dnnl_success && mb__dn_pd_accept(&pd, k == 0 && !int8))
        break;
      if (k == 0 && !int8) {
        status = mb__dn_fail(l, "dnnl_primitive_desc_create(convolution)", st);
        goto done;
      }
    }
    q = int8 && pd;
  }
  {
    dn_rep *src, *out;
    dnnl_memory_t wmem, bmem = NULL;
    dnnl_exec_arg_t args[DN_MAX_ARGS];
    int n_args = 0;
    if (q)
      MB_TRY_GOTO(mb__dn_value_get_q(
          l, n->inputs[0], mb__dn_pd_md(pd, dnnl_query_src_md), xq, &src));
    else
      MB_TRY_GOTO(mb__dn_value_get(l, n->inputs[0], DN_WANT_EXACT, dt,
                                   mb__dn_pd_md(pd, dnnl_query_src_md), &src));
    dn_rep in = *src;
    const dnnl_memory_desc_t *bias_md =
        dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1);
    if (q) {
      int8_t *wq8 = mb__dn_q_weights(w, wq, 0);
      float *bq = wq8 ? mb__dn_q_bias(bias ? bias->data : NULL, p.c_out,
                                      oscales, wq->channels)
                      : NULL;
      if (!wq8 || !bq) {
        mb__aligned_free(wq8);
        mb__aligned_free(bq);
        status = mb__dn_oom(l);
        goto done;
      }
      if ((status = mb__dn_const_memory(l, &w_user, wq8, true,
                                        mb__dn_pd_md(pd, dnnl_query_weights_md),
                                        &wmem, NULL))) {
        mb__aligned_free(bq);
        goto done;
      }
      MB_TRY_GOTO(
          mb__dn_const_memory(l, &b_user, bq, true, bias_md, &bmem, NULL));
    } else {
      MB_TRY_GOTO(mb__dn_const_memory(l, &w_user, w->data, false,
                                      mb__dn_pd_md(pd, dnnl_query_weights_md),
                                      &wmem, NULL));
      if (bias)
        MB_TRY_GOTO(mb__dn_const_memory(l, &b_user, bias->data, false, bias_md,
                                        &bmem, NULL));
    }
    int final = mb__dn_head_final(g->post, k, n->outputs[0]);
    MB_TRY_GOTO(mb__dn_head_dst(l, g->post, k, final,
                                mb__dn_pd_md(pd, dnnl_query_dst_md), in.buf, -1,
                                &out));
    args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, in.mem};
    args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, wmem};
    if (bmem)
      args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, bmem};
    args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_DST, out->mem};
    if (q)
      MB_TRY_GOTO(mb__dn_q_zp_arg(l, xq, args, &n_args));
    MB_TRY_GOTO(mb__dn_posts_args(l, g->post, k, bin_md, args, &n_args));
    MB_TRY_GOTO(mb__dn_emit(l, pd, n_args, args));
  }
  MB_TRY_GOTO(mb__dn_lower_rest(l, g->post, k, g->n_post));
done:
  free(oscales);
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (po)
    dnnl_post_ops_destroy(po);
  return status;
}

#endif /* MB_HAVE_DNNL */
