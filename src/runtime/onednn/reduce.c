/* oneDNN engine: reductions (ReduceMean, ReduceSum, ReduceMax, ... on
 * oneDNN's reduction primitive). */
#ifdef MB_HAVE_DNNL

#include "runtime/onednn/internal.h"

mb_status mb__dn_lower_reduce(lctx *l, const mb_node *n) {
  reduce_params p;
  dnnl_primitive_desc_t pd = NULL;
  mb_status status = MB_STATUS_OK;
  dnnl_memory_desc_t dst_md;
  dn_rep *in = NULL, *out;
  DN_PARAMS(l, n, mb__dn_reduce_get, &p);
  const mb_shape_info *y = &l->eg->shapes[n->outputs[0]];
  bool keep = dims_equal(y->rank, y->dims, p.rank, p.kept_dims);
  for (int attempt = 0; attempt < 3 && !pd; attempt++) {
    dnnl_reduction_desc_t rd;
    dnnl_data_type_t dt = attempt == 2 ? dnnl_f32 : l->act_dt;
    MB_TRY_GOTO(mb__dn_value_get(l, n->inputs[0],
                                 attempt ? DN_WANT_PLAIN : DN_WANT_DTYPE, dt,
                                 NULL, &in));
    if (keep && !attempt)
      DN_GOTO(l, mb__dn_md_any(&dst_md, p.rank, p.kept_dims, dt));
    else
      DN_GOTO(l, mb__dn_md_plain(&dst_md, p.rank, p.kept_dims, dt));
    DN_GOTO(l,
            dnnl_reduction_desc_init(&rd, p.alg, &in->md, &dst_md, 0.0f, 0.0f));
    dnnl_status_t st = mb__dn_pd_try(l, &rd, NULL, &pd);
    if (st == dnnl_success)
      mb__dn_pd_accept(&pd, attempt == 2);
    else if (attempt == 2) {
      status = mb__dn_fail(l, "dnnl_primitive_desc_create(reduction)", st);
      goto done;
    }
  }
  dnnl_memory_t in_mem = in->mem, out_mem;
  const dnnl_memory_desc_t *pmd = mb__dn_pd_md(pd, dnnl_query_dst_md);
  if (keep) {
    MB_TRY_GOTO(mb__dn_value_define(l, n->outputs[0], pmd, &out));
    out_mem = out->mem;
  } else {
    MB_TRY_GOTO(mb__dn_define_plain_viewed(l, n->outputs[0], pmd->data_type,
                                           pmd, &out_mem));
  }
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, in_mem}, {DNNL_ARG_DST, out_mem}};
  MB_TRY_GOTO(mb__dn_emit(l, pd, 2, args));
done:
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  return status;
}

#endif /* MB_HAVE_DNNL */
