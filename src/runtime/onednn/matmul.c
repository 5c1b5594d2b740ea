/* oneDNN engine: MatMul and Gemm in fp32, bf16 or int8, with alpha, C,
 * the bias and the post-ops of the fused group. */
#ifdef MB_HAVE_DNNL

#include "runtime/onednn/internal.h"

/* ---- Gemm / MatMul ------------------------------------------------------ */

/* The md of a matmul operand of ONNX dims (orank, odims) stored plain,
 * seen as `rank` dims (leading ones) and transposed in its last two when
 * trans. */
static dnnl_status_t mm_operand_md(dnnl_memory_desc_t *md, int orank,
                                   const int64_t *odims, int rank, bool trans,
                                   dnnl_data_type_t dt) {
  dnnl_dims_t dims, strides;
  int64_t stride = 1, total = mb__engine_numel(orank, odims);
  for (int i = rank - 1; i >= 0; i--) {
    int o = i - (rank - orank);
    dims[i] = o >= 0 ? odims[o] : 1;
    strides[i] = o >= 0 ? stride : total;
    if (o >= 0)
      stride *= MB_MAX(odims[o], 1);
  }
  if (trans) {
    int64_t t = dims[rank - 1];
    dims[rank - 1] = dims[rank - 2];
    dims[rank - 2] = t;
    t = strides[rank - 1];
    strides[rank - 1] = strides[rank - 2];
    strides[rank - 2] = t;
  }
  return dnnl_memory_desc_init_by_strides(md, rank, dims, dt, strides);
}

/* Activation (or constant) operand v as a plain view for matmul. */
static mb_status mm_operand(lctx *l, int v, int rank, bool trans,
                            dnnl_data_type_t dt, dnnl_memory_desc_t *md,
                            dnnl_memory_t *mem, int *buf) {
  dn_rep *r;
  mb_status status;
  int orank;
  int64_t odims[MB_MAX_RANK];
  if ((status = mb__dn_value_get(l, v, DN_WANT_PLAIN, dt, NULL, &r)))
    return status;
  mb__dn_value_dims(l, v, &orank, odims);
  *buf = r->buf;
  DN_TRY(l, mm_operand_md(md, orank, odims, rank, trans, dt));
  if (mb__dn_md_same(md, &r->md) && !trans && orank == rank) {
    *mem = r->mem;
    return MB_STATUS_OK;
  }
  return mb__dn_rep_view(l, r, md, mem);
}

mb_status mb__dn_lower_mm(lctx *l, const dn_group *g) {
  const mb_node *n = node_at(l, g->head);
  mm_params p;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_post_ops_t po = NULL;
  mb_status status = MB_STATUS_OK;
  dn_post posts[DN_MAX_POST + 2];
  dnnl_memory_desc_t a_md, b_md, b_user, bias_md, dst_md;
  dnnl_memory_desc_t bin_md[DN_MAX_POST + 2];
  float *scaled = NULL, *bias_data = NULL, *oscales = NULL;
  const float *bias_src = NULL;
  int n_fixed = 0, k = 0;
  const mb_quant_param *xq = NULL, *wq = NULL;
  dn_qattr qa;
  DN_PARAMS(l, n, mb__dn_mm_get, &p);
  int a = n->inputs[0], b = n->inputs[1], r = p.rank;
  const mb_tensor *kb = mb__engine_constant(l->eg, b);
  dnnl_data_type_t dt = l->act_dt;
  int64_t nn = p.y_dims[r - 1];
  int brank;
  int64_t bdims[MB_MAX_RANK];
  mb__dn_value_dims(l, b, &brank, bdims);
  /* int8 (constant 2-D weights, A not transposed): u8/s8 A, s8 weights
   * per column of the output, float32 out through the output scales
   * (alpha folded into them), so C, bias and post-ops stay float. */
  bool q = kb && brank == 2 && !p.trans_a &&
           mb__dn_q_entries(l, a, b, p.trans_b ? 0 : 1, nn, &xq, &wq);
  if (q) {
    if (!(oscales = mb__dn_q_out_scales(xq, wq, p.alpha)))
      return mb__dn_oom(l);
    qa = (dn_qattr){(int)wq->channels,
                    wq->channels > 1 ? 1 << (r - 1) : 0,
                    oscales,
                    xq->zero_points[0] != 0,
                    false,
                    0};
  }

  /* alpha: folded into constant weights, else a linear post-op. */
  if (p.alpha != 1.0f && kb && !q) {
    if (!(scaled = mb__aligned_alloc((size_t)kb->numel * sizeof *scaled)))
      return mb__dn_oom(l);
    for (int64_t i = 0; i < kb->numel; i++)
      scaled[i] = p.alpha * ((const float *)kb->data)[i];
  } else if (p.alpha != 1.0f && !q) {
    memset(&posts[n_fixed], 0, sizeof posts[0]);
    posts[n_fixed].kind = DN_POST_ELTWISE;
    posts[n_fixed].n_ops = 1;
    posts[n_fixed].ops[0] = (eltwise_op){dnnl_eltwise_linear, p.alpha, 0.0f};
    posts[n_fixed].out_value = n->outputs[0];
    n_fixed++;
  }
  /* C: a bias (applied before the post-ops, so divided by alpha when alpha
   * is a post-op) or a binary post-op (beta == 1 there, see mm_get). */
  if (p.c >= 0) {
    const mb_tensor *kc = mb__engine_constant(l->eg, n->inputs[p.c]);
    if (p.c_is_bias) {
      float scale = p.beta / (kb ? 1.0f : p.alpha);
      if (!(bias_data = mb__aligned_alloc((size_t)nn * sizeof *bias_data))) {
        status = mb__dn_oom(l);
        goto done;
      }
      for (int64_t i = 0; i < nn; i++)
        bias_data[i] =
            scale * ((const float *)kc->data)[kc->numel == 1 ? 0 : i];
    } else {
      memset(&posts[n_fixed], 0, sizeof posts[0]);
      posts[n_fixed].kind = DN_POST_BINARY;
      posts[n_fixed].alg = dnnl_binary_add;
      posts[n_fixed].operand = n->inputs[p.c];
      posts[n_fixed].out_value = n->outputs[0];
      n_fixed++;
    }
  }
  memcpy(&posts[n_fixed], g->post, (size_t)g->n_post * sizeof *g->post);
  if (g->n_post > 0 && g->post[0].kind == DN_POST_BIAS)
    bias_src = mb__engine_constant(l->eg, g->post[0].operand)->data;
  {
    int64_t bd[DNNL_MAX_NDIMS];
    for (int i = 0; i < r; i++)
      bd[i] = i == r - 1 ? nn : 1;
    DN_GOTO(l, mb__dn_md_plain(&bias_md, r, bd, dnnl_f32));
  }
  DN_GOTO(l, mb__dn_md_plain(&dst_md, r, p.y_dims, dt));
  for (int attempt = q ? 0 : 1; attempt < 2 && !pd; attempt++) {
    bool int8 = attempt == 0;
    dnnl_data_type_t wdt = int8 ? dnnl_s8 : dt;
    DN_GOTO(l, mm_operand_md(&a_md, r, p.a_dims, r, p.trans_a,
                             int8 ? mb__dn_q_dt(xq) : dt));
    if (kb)
      DN_GOTO(l, mm_operand_md(&b_user, brank, bdims, r, p.trans_b,
                               int8 ? dnnl_s8 : dnnl_f32));
    for (k = g->n_post; k >= 0; k--) {
      bool has_bias = bias_data || (k > 0 && bias_src);
      /* Constant weights in the layout oneDNN prefers, else plain. */
      for (int plain = kb ? 0 : 1; plain < 2 && !pd; plain++) {
        dnnl_matmul_desc_t md_desc;
        int64_t wd[DNNL_MAX_NDIMS];
        bool last = k == 0 && plain == 1 && !int8;
        memcpy(wd, b_user.dims, sizeof(int64_t) * (size_t)r);
        if (kb && !plain)
          DN_GOTO(l, mb__dn_md_any(&b_md, r, wd, wdt));
        else if (kb)
          DN_GOTO(l, mb__dn_md_plain(&b_md, r, wd, wdt));
        else
          DN_GOTO(l, mm_operand_md(&b_md, r, p.b_dims, r, p.trans_b, dt));
        MB_TRY_GOTO(mb__dn_posts_build(l, posts, n_fixed + k, r, &po, bin_md));
        DN_GOTO(l, dnnl_matmul_desc_init(&md_desc, &a_md, &b_md,
                                         has_bias ? &bias_md : NULL, &dst_md));
        dnnl_status_t st =
            mb__dn_pd_try_q(l, &md_desc, po, int8 ? &qa : NULL, &pd);
        dnnl_post_ops_destroy(po);
        po = NULL;
        if (st == dnnl_success)
          mb__dn_pd_accept(&pd, last);
        else if (last) {
          status = mb__dn_fail(l, "dnnl_primitive_desc_create(matmul)", st);
          goto done;
        }
      }
      if (pd)
        break;
    }
    q = int8 && pd;
  }
  {
    dnnl_memory_t amem, bmem, biasmem = NULL;
    dn_rep *out;
    dnnl_exec_arg_t args[DN_MAX_ARGS];
    int n_args = 0, a_buf;
    if (q) {
      /* A quantised (plain, its own dims), seen as the operand view. */
      dn_rep *rq;
      dnnl_memory_desc_t pm;
      int orank;
      int64_t odims[MB_MAX_RANK];
      mb__dn_value_dims(l, a, &orank, odims);
      DN_GOTO(l, mb__dn_md_plain(&pm, orank, odims, mb__dn_q_dt(xq)));
      MB_TRY_GOTO(mb__dn_value_get_q(l, a, &pm, xq, &rq));
      a_buf = rq->buf;
      if (mb__dn_md_same(&a_md, &rq->md))
        amem = rq->mem;
      else
        MB_TRY_GOTO(mb__dn_rep_view(l, rq, &a_md, &amem));
    } else {
      MB_TRY_GOTO(mm_operand(l, a, r, p.trans_a, dt, &a_md, &amem, &a_buf));
    }
    if (q) {
      int8_t *w8 = mb__dn_q_weights(kb, wq, p.trans_b ? 0 : 1);
      if (!w8) {
        status = mb__dn_oom(l);
        goto done;
      }
      MB_TRY_GOTO(mb__dn_const_memory(l, &b_user, w8, true,
                                      mb__dn_pd_md(pd, dnnl_query_weights_md),
                                      &bmem, NULL));
    } else if (kb) {
      const float *data = scaled ? scaled : kb->data;
      scaled = NULL; /* taken by const_memory */
      MB_TRY_GOTO(mb__dn_const_memory(l, &b_user, data, data != kb->data,
                                      mb__dn_pd_md(pd, dnnl_query_weights_md),
                                      &bmem, NULL));
    } else {
      int b_buf;
      MB_TRY_GOTO(mm_operand(l, b, r, p.trans_b, dt, &b_md, &bmem, &b_buf));
    }
    if (q && (bias_data || (k > 0 && bias_src))) {
      /* In the accumulator's scale (DN_INT8_BIAS_BEFORE_SCALES). */
      float *data = mb__dn_q_bias(bias_data ? bias_data : bias_src, nn, oscales,
                                  wq->channels);
      if (!data) {
        status = mb__dn_oom(l);
        goto done;
      }
      MB_TRY_GOTO(mb__dn_const_memory(l, &bias_md, data, true, &bias_md,
                                      &biasmem, NULL));
    } else if (bias_data) {
      float *data = bias_data;
      bias_data = NULL;
      MB_TRY_GOTO(mb__dn_const_memory(l, &bias_md, data, true, &bias_md,
                                      &biasmem, NULL));
    } else if (k > 0 && bias_src) {
      MB_TRY_GOTO(mb__dn_const_memory(l, &bias_md, bias_src, false, &bias_md,
                                      &biasmem, NULL));
    }
    int final = mb__dn_head_final(posts, n_fixed + k, n->outputs[0]);
    MB_TRY_GOTO(mb__dn_head_dst(l, posts, n_fixed + k, final,
                                mb__dn_pd_md(pd, dnnl_query_dst_md), a_buf,
                                &out));
    args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, amem};
    args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, bmem};
    if (biasmem)
      args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, biasmem};
    args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_DST, out->mem};
    if (q)
      MB_TRY_GOTO(mb__dn_q_zp_arg(l, xq, args, &n_args));
    MB_TRY_GOTO(
        mb__dn_posts_args(l, posts, n_fixed + k, bin_md, args, &n_args));
    MB_TRY_GOTO(mb__dn_emit(l, pd, n_args, args));
  }
  MB_TRY_GOTO(mb__dn_lower_rest(l, g->post, k, g->n_post));
done:
  free(oscales);
  mb__aligned_free(scaled);
  mb__aligned_free(bias_data);
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (po)
    dnnl_post_ops_destroy(po);
  return status;
}

#endif /* MB_HAVE_DNNL */
