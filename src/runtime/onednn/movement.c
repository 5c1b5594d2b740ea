/* oneDNN engine: data movement. Transpose, the reshapes, Identity, Slice
 * and Split are views (a value whose memory is another's with its own
 * strides and offset): no data moves until a reader needs another layout,
 * and a matmul reads transposed and sliced views as they are. Concat is a
 * primitive. */
#ifdef MB_HAVE_DNNL

#include "runtime/onednn/internal.h"

/* ---- data movement ------------------------------------------------------ */

/* A strided representation of value v in its own rank: a plain one when
 * there is one, else any strided one (a view), else a plain copy. *out is
 * a copy (value_get may move v's reps). */
static mb_status strided_input(lctx *l, int v, dn_rep *out) {
  dn_val *x = &l->vals[v];
  dn_rep *r = NULL;
  mb_status status;
  int rank;
  int64_t dims[MB_MAX_RANK];
  if (x->n_reps == 0 && (status = mb__dn_const_rep(l, v)))
    return status;
  mb__dn_value_dims(l, v, &rank, dims);
  for (int i = 0; i < x->n_reps && !r; i++)
    if (mb__dn_md_is_plain(&x->rep[i].md) && x->rep[i].md.ndims == rank)
      r = &x->rep[i];
  for (int i = 0; i < x->n_reps && !r; i++)
    if (mb__dn_md_is_strided(&x->rep[i].md) && x->rep[i].md.ndims == rank)
      r = &x->rep[i];
  if (!r && (status = mb__dn_value_get(l, v, DN_WANT_PLAIN,
                                       x->rep[0].md.data_type, NULL, &r)))
    return status;
  *out = *r;
  if (out->md.ndims != rank)
    return mb__dn_internal_error(l, "a plain value of another rank");
  return MB_STATUS_OK;
}

/* Value v as md over in's buffer, with in's int8 parameters. */
static mb_status alias_of(lctx *l, int v, const dnnl_memory_desc_t *md,
                          const dn_rep *in) {
  dn_rep *out;
  mb_status status = mb__dn_value_alias(l, v, md, in->buf, &out);
  if (!status) {
    out->qscale = in->qscale;
    out->qzp = in->qzp;
  }
  return status;
}

/* Value v as a view of in: dims of v, strides[i] and a start `offset`
 * elements into in. */
static mb_status define_view(lctx *l, int v, const dn_rep *in,
                             const int64_t *strides, int64_t offset) {
  dnnl_memory_desc_t view;
  int rank;
  int64_t dims[MB_MAX_RANK];
  mb__dn_value_dims(l, v, &rank, dims);
  DN_TRY(l, mb__dn_md_view(&view, &in->md, rank, dims, strides, offset));
  return alias_of(l, v, &view, in);
}

/* Transpose: a view of the input with its strides permuted. No data moves
 * here; a reader that needs a plain layout gets one reorder ("reorder" in
 * profiles), a matmul reads the view as it is. */
mb_status mb__dn_lower_transpose(lctx *l, const mb_node *n) {
  int perm[MB_MAX_RANK];
  int64_t strides[MB_MAX_RANK];
  dn_rep in;
  mb_status status;
  DN_PARAMS(l, n, mb__dn_transpose_get, perm);
  if ((status = strided_input(l, n->inputs[0], &in)))
    return status;
  const mb_shape_info *y = &l->eg->shapes[n->outputs[0]];
  if (y->rank == 0 || y->rank != in.md.ndims)
    return mb__dn_internal_error(l, "transpose of another rank");
  for (int j = 0; j < y->rank; j++)
    strides[j] = in.md.format_desc.blocking.strides[perm[j]];
  return define_view(l, n->outputs[0], &in, strides, 0);
}

/* Reshape, Flatten, Squeeze, Unsqueeze: a view of the input, plain when
 * it is, else with the strides that read it in the new shape (a reshape
 * of a transposed or sliced view that keeps its merged dims contiguous);
 * else of a plain copy. */
mb_status mb__dn_lower_reshape(lctx *l, const mb_node *n) {
  dn_val *x = &l->vals[n->inputs[0]];
  dn_rep *r = NULL;
  dnnl_memory_desc_t md;
  mb_status status;
  int rank;
  int64_t dims[MB_MAX_RANK], strides[MB_MAX_RANK];
  if (x->n_reps == 0 && (status = mb__dn_const_rep(l, n->inputs[0])))
    return status;
  mb__dn_value_dims(l, n->outputs[0], &rank, dims);
  for (int i = 0; i < x->n_reps && !r; i++)
    if (mb__dn_md_is_plain(&x->rep[i].md))
      r = &x->rep[i];
  for (int i = 0; i < x->n_reps && !r; i++) {
    if (mb__dn_md_is_strided(&x->rep[i].md) &&
        mb__dn_md_reshape_strides(&x->rep[i].md, rank, dims, strides)) {
      dn_rep in = x->rep[i];
      return define_view(l, n->outputs[0], &in, strides, 0);
    }
  }
  if (!r && (status = mb__dn_value_get(l, n->inputs[0], DN_WANT_PLAIN,
                                       x->rep[0].md.data_type, NULL, &r)))
    return status;
  DN_TRY(l, mb__dn_md_plain(&md, rank, dims, r->md.data_type));
  dn_rep in = *r;
  return alias_of(l, n->outputs[0], &md, &in);
}

/* Identity, Dropout: the input itself. */
mb_status mb__dn_lower_identity(lctx *l, const mb_node *n) {
  dn_val *x = &l->vals[n->inputs[0]];
  mb_status status;
  if (x->n_reps == 0 && (status = mb__dn_const_rep(l, n->inputs[0])))
    return status;
  dn_rep r = x->rep[0];
  return alias_of(l, n->outputs[0], &r.md, &r);
}

mb_status mb__dn_lower_concat(lctx *l, const mb_node *n) {
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_attr_t attr = NULL;
  mb_status status = MB_STATUS_OK;
  dnnl_memory_desc_t mds[DN_MAX_CONCAT], dst_md;
  dnnl_memory_t mems[DN_MAX_CONCAT];
  dn_rep *out;
  int k = n->n_inputs, rank;
  int64_t x[MB_MAX_RANK];
  {
    char reason[256] = "";
    mb_engine_check c = mb__dn_lower_check_ctx(l, n, reason, sizeof reason);
    if (!mb__dn_check_concat(&c))
      return mb__dn_recheck_failed(l, reason);
  }
  mb__dn_value_dims(l, n->inputs[0], &rank, x);
  int axis = norm_axis(mb__node_attr_int(n, "axis", 0), rank);
  const mb_shape_info *y = &l->eg->shapes[n->outputs[0]];
  MB_TRY_GOTO(mb__dn_attr_new(l, NULL, NULL, &attr));
  /* Inputs in their layouts and the output in oneDNN's choice; else plain
   * everywhere. */
  for (int attempt = 0; attempt < 2 && !pd; attempt++) {
    for (int i = 0; i < k; i++) {
      dn_rep *r;
      MB_TRY_GOTO(mb__dn_value_get(l, n->inputs[i],
                                   attempt ? DN_WANT_PLAIN : DN_WANT_DTYPE,
                                   l->act_dt, NULL, &r));
      mds[i] = r->md;
      mems[i] = r->mem;
    }
    if (attempt)
      DN_GOTO(l, mb__dn_md_plain(&dst_md, y->rank, y->dims, l->act_dt));
    else
      DN_GOTO(l, mb__dn_md_any(&dst_md, y->rank, y->dims, l->act_dt));
    dnnl_status_t st = dnnl_concat_primitive_desc_create(
        &pd, &dst_md, k, axis, mds, attr, l->s->engine);
    if (st != dnnl_success) {
      pd = NULL;
      if (attempt == 1) {
        status = mb__dn_fail(l, "dnnl_concat_primitive_desc_create", st);
        goto done;
      }
    }
  }
  MB_TRY_GOTO(mb__dn_value_define(l, n->outputs[0],
                                  mb__dn_pd_md(pd, dnnl_query_dst_md), &out));
  {
    dnnl_exec_arg_t args[DN_MAX_ARGS];
    for (int i = 0; i < k; i++)
      args[i] = (dnnl_exec_arg_t){DNNL_ARG_MULTIPLE_SRC + i, mems[i]};
    args[k] = (dnnl_exec_arg_t){DNNL_ARG_DST, out->mem};
    MB_TRY_GOTO(mb__dn_emit(l, pd, k + 1, args));
  }
done:
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  return status;
}

/* Value v as the window of `in` starting at `start` with `step`: a view,
 * no data moves (see lower_transpose). */
static mb_status define_window(lctx *l, const dn_rep *in, int rank,
                               const int64_t *start, const int64_t *step,
                               int v) {
  int64_t strides[MB_MAX_RANK], offset = 0;
  const dnnl_dims_t *st = &in->md.format_desc.blocking.strides;
  for (int i = 0; i < rank; i++) {
    strides[i] = (*st)[i] * step[i];
    offset += start[i] * (*st)[i];
  }
  return define_view(l, v, in, strides, offset);
}

mb_status mb__dn_lower_slice(lctx *l, const mb_node *n) {
  slice_params p;
  dn_rep in;
  mb_status status;
  DN_PARAMS(l, n, mb__dn_slice_get, &p);
  if ((status = strided_input(l, n->inputs[0], &in)))
    return status;
  return define_window(l, &in, p.rank, p.start, p.step, n->outputs[0]);
}

mb_status mb__dn_lower_split(lctx *l, const mb_node *n) {
  dn_rep in;
  mb_status status;
  int rank;
  int64_t x[MB_MAX_RANK], start[DN_RANK_MAX] = {0}, step[DN_RANK_MAX];
  {
    char reason[256] = "";
    mb_engine_check c = mb__dn_lower_check_ctx(l, n, reason, sizeof reason);
    if (!mb__dn_check_split(&c))
      return mb__dn_recheck_failed(l, reason);
  }
  mb__dn_value_dims(l, n->inputs[0], &rank, x);
  int axis = norm_axis(mb__node_attr_int(n, "axis", 0), rank);
  for (int i = 0; i < rank; i++)
    step[i] = 1;
  if ((status = strided_input(l, n->inputs[0], &in)))
    return status;
  for (int i = 0; i < n->n_outputs; i++) {
    if ((status = define_window(l, &in, rank, start, step, n->outputs[i])))
      return status;
    start[axis] += l->eg->shapes[n->outputs[i]].dims[axis];
  }
  return MB_STATUS_OK;
}

#endif /* MB_HAVE_DNNL */
