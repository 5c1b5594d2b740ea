/* oneDNN engine: pooling (MaxPool, AveragePool and their global forms). */
#ifdef MB_HAVE_DNNL

#include "runtime/onednn/internal.h"

mb_status mb__dn_lower_pool(lctx *l, const mb_node *n) {
  pool_params p;
  dnnl_primitive_desc_t pd = NULL;
  mb_status status = MB_STATUS_OK;
  dnnl_memory_desc_t dst_md;
  dnnl_dims_t strides, kernel, dil, pl, pr;
  dn_rep *in = NULL, *out;
  DN_PARAMS(l, n, mb__dn_pool_get, &p);
  const mb_shape_info *y = &l->eg->shapes[n->outputs[0]];
  to_dnnl_dims(p.w.nsp, p.w.stride, 0, strides);
  to_dnnl_dims(p.w.nsp, p.w.kernel, 0, kernel);
  to_dnnl_dims(p.w.nsp, p.w.dilation, -1, dil);
  to_dnnl_dims(p.w.nsp, p.w.pad_l, 0, pl);
  to_dnnl_dims(p.w.nsp, p.w.pad_r, 0, pr);
  /* In the input's layout, else plain. */
  for (int attempt = 0; attempt < 2 && !pd; attempt++) {
    dnnl_pooling_v2_desc_t desc;
    MB_TRY_GOTO(mb__dn_value_get(l, n->inputs[0],
                                 attempt ? DN_WANT_PLAIN : DN_WANT_DTYPE,
                                 l->act_dt, NULL, &in));
    DN_GOTO(l, mb__dn_md_any(&dst_md, y->rank, y->dims, l->act_dt));
    DN_GOTO(l, dnnl_pooling_v2_forward_desc_init(&desc, dnnl_forward_inference,
                                                 p.alg, &in->md, &dst_md,
                                                 strides, kernel, dil, pl, pr));
    dnnl_status_t st = mb__dn_pd_try(l, &desc, NULL, &pd);
    if (st == dnnl_success)
      mb__dn_pd_accept(&pd, attempt == 1);
    else if (attempt == 1) {
      status = mb__dn_fail(l, "dnnl_primitive_desc_create(pooling)", st);
      goto done;
    }
  }
  dnnl_memory_t in_mem = in->mem;
  MB_TRY_GOTO(mb__dn_value_define(l, n->outputs[0],
                                  mb__dn_pd_md(pd, dnnl_query_dst_md), &out));
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, in_mem}, {DNNL_ARG_DST, out->mem}};
  MB_TRY_GOTO(mb__dn_emit(l, pd, 2, args));
done:
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  return status;
}

#endif /* MB_HAVE_DNNL */
