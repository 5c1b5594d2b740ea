/* oneDNN engine: elementwise nodes. Unary ops as eltwise primitives (in
 * place when the input dies here), Erf as the engine's own loop, binary
 * ops as binary primitives with broadcasting. */
#ifdef MB_HAVE_DNNL

#include "runtime/onednn/internal.h"

/* ---- eltwise ------------------------------------------------------------ */

/* ops[0..n) applied to value src, giving value dst: the first in place
 * when src dies here, the others in place on the result. A primitive
 * oneDNN cannot run in bf16 runs in float32. */
mb_status mb__dn_emit_eltwise(lctx *l, int src, int dst, const eltwise_op *ops,
                              int n_ops) {
  dnnl_primitive_desc_t pd = NULL;
  mb_status status = MB_STATUS_OK;
  dn_rep *in, *out = NULL;
  dnnl_data_type_t dt = l->act_dt;
  for (int attempt = 0; attempt < 2; attempt++) {
    dnnl_eltwise_desc_t ed;
    if ((status = mb__dn_value_get(l, src, DN_WANT_DTYPE, dt, NULL, &in)))
      return status;
    DN_TRY(l, dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference,
                                             ops[0].alg, &in->md, ops[0].alpha,
                                             ops[0].beta));
    dnnl_status_t st = mb__dn_pd_try(l, &ed, NULL, &pd);
    bool last = attempt == 1 || dt == dnnl_f32;
    if (st == dnnl_success && mb__dn_pd_accept(&pd, last))
      break;
    if (last)
      return mb__dn_fail(l, "dnnl_primitive_desc_create(eltwise)", st);
    dt = dnnl_f32;
  }
  dn_rep in_copy = *in;
  MB_TRY_GOTO(mb__dn_value_define_like(l, dst, &in_copy, -1, &out));
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, in_copy.mem},
                             {DNNL_ARG_DST, out->mem}};
  MB_TRY_GOTO(mb__dn_emit(l, pd, 2, args));
  for (int i = 1; i < n_ops; i++) {
    dnnl_eltwise_desc_t ed;
    dnnl_primitive_desc_destroy(pd);
    pd = NULL;
    DN_GOTO(l, dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference,
                                              ops[i].alg, &out->md,
                                              ops[i].alpha, ops[i].beta));
    DN_GOTO(l, mb__dn_pd_try(l, &ed, NULL, &pd));
    dnnl_exec_arg_t a2[2] = {{DNNL_ARG_SRC, out->mem},
                             {DNNL_ARG_DST, out->mem}};
    MB_TRY_GOTO(mb__dn_emit(l, pd, 2, a2));
  }
done:
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  return status;
}

mb_status mb__dn_lower_unary(lctx *l, const mb_node *n) {
  eltwise_op ops[2];
  int n_ops = 0;
  {
    char reason[256] = "";
    mb_engine_check c = mb__dn_lower_check_ctx(l, n, reason, sizeof reason);
    if (!(n_ops = mb__dn_unary_get(&c, ops)))
      return mb__dn_recheck_failed(l, reason);
  }
  return mb__dn_emit_eltwise(l, n->inputs[0], n->outputs[0], ops, n_ops);
}

/* Erf: the engine's own loop over plain float32 (see check_erf). */
mb_status mb__dn_lower_erf(lctx *l, const mb_node *n) {
  dn_segment *s = l->s;
  dn_rep *in, *out;
  mb_status status;
  if ((status = mb__dn_value_get(l, n->inputs[0], DN_WANT_PLAIN, dnnl_f32, NULL,
                                 &in)))
    return status;
  dn_rep in_copy = *in;
  if ((status = mb__dn_value_define_like(l, n->outputs[0], &in_copy, -1, &out)))
    return status;
  if (!mb__dn_grow((void **)&s->steps, &s->cap_steps, s->n_steps,
                   sizeof *s->steps))
    return mb__dn_oom(l);
  dn_step *step = &s->steps[s->n_steps++];
  memset(step, 0, sizeof *step);
  step->kind = DN_STEP_ERF;
  step->threads = 1;
  step->src = in_copy.mem;
  step->dst = out->mem;
  step->count = dnnl_memory_desc_get_size(&out->md) / sizeof(float);
  step->prof = l->prof;
  return MB_STATUS_OK;
}

/* ---- binary ------------------------------------------------------------- */

/* Plain view of rep r with dims right-aligned into `rank` dims. */
static mb_status rep_view_padded(lctx *l, const dn_rep *r, int rank,
                                 dnnl_memory_desc_t *md, dnnl_memory_t *mem) {
  int64_t dims[DNNL_MAX_NDIMS];
  dims_pad(r->md.ndims, r->md.dims, rank, dims);
  DN_TRY(l, mb__dn_md_plain(md, rank, dims, r->md.data_type));
  if (mb__dn_md_same(md, &r->md) && md->ndims == r->md.ndims) {
    *mem = r->mem;
    return MB_STATUS_OK;
  }
  return mb__dn_rep_view(l, r, md, mem);
}

/* Constant k broadcast to (rank, dims), plain float32, in a new
 * mb__aligned_alloc'ed array (NULL when out of memory). */
static float *broadcast_const(const mb_tensor *k, int rank,
                              const int64_t *dims) {
  int64_t kd[DNNL_MAX_NDIMS], ks[DNNL_MAX_NDIMS], idx[DNNL_MAX_NDIMS] = {0};
  int64_t n = mb__engine_numel(rank, dims), stride = 1;
  float *out = mb__aligned_alloc((size_t)MB_MAX(n, 1) * sizeof *out);
  const float *src = k->data;
  if (!out)
    return NULL;
  dims_pad(k->rank, k->dims, rank, kd);
  for (int i = rank - 1; i >= 0; i--) {
    ks[i] = kd[i] == 1 ? 0 : stride;
    stride *= kd[i];
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t off = 0;
    for (int d = 0; d < rank; d++)
      off += idx[d] * ks[d];
    out[i] = src[off];
    for (int d = rank - 1; d >= 0 && ++idx[d] == dims[d]; d--)
      idx[d] = 0;
  }
  return out;
}

/* Plain src0 (dims d0) and a plain src1 broadcast to it (d1, both
 * `rank` dims) with neighbouring dims merged where src1 is broadcast in
 * both or in neither: [1,4,6,49,49] + [1,4,1,49,49] (Swin's shifted-window
 * mask) is [4,6,2401] + [4,1,2401], which oneDNN's jit kernel takes and
 * the 5-D form only its reference kernel (60x slower). Fills c0/c1 and
 * returns the new rank; rank itself when nothing merges. */
static int binary_coalesce(int rank, const int64_t *d0, const int64_t *d1,
                           int64_t *c0, int64_t *c1) {
  int k = 0, last = -1; /* last: broadcast state of group k-1 */
  for (int i = 0; i < rank; i++) {
    if (d0[i] == 1)
      continue; /* joins any group */
    int bc = d1[i] == 1;
    if (k > 0 && bc == last) {
      c0[k - 1] *= d0[i];
      c1[k - 1] *= d1[i];
    } else {
      c0[k] = d0[i];
      c1[k] = d1[i];
      last = bc;
      k++;
    }
  }
  if (k == 0) {
    c0[0] = c1[0] = 1;
    k = 1;
  }
  return k;
}

mb_status mb__dn_lower_binary(lctx *l, const mb_node *n) {
  binary_params p;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_post_ops_t po = NULL;
  mb_status status = MB_STATUS_OK;
  dn_rep *r0 = NULL, *r1 = NULL, *out = NULL;
  dnnl_memory_desc_t md1;
  dnnl_memory_t mem1 = NULL;
  dn_rep expanded;     /* src0 broadcast at compile time (p.expand0) */
  bool merged = false; /* plain operands seen with merged dims */
  dn_rep in1;
  dnnl_memory_desc_t mmd0, mmd1;
  DN_PARAMS(l, n, mb__dn_binary_get, &p);
  if (p.n_elt)
    return mb__dn_emit_eltwise(l, n->inputs[p.elt_src], n->outputs[0], &p.elt,
                               1);
  int v0 = n->inputs[p.src0], v1 = n->inputs[p.src1];
  int rank = l->eg->shapes[n->outputs[0]].rank;
  if (rank == 0)
    rank = 1;
  if (p.negate) {
    DN_GOTO(l, dnnl_post_ops_create(&po));
    DN_GOTO(l, dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear,
                                            -1.0f, 0.0f));
  }
  /* First src0 in whatever layout it has; then both plain; then float32. */
  for (int attempt = 0; attempt < 3 && !pd; attempt++) {
    dnnl_data_type_t dt = attempt == 2 ? dnnl_f32 : l->act_dt;
    dnnl_binary_desc_t bd;
    dn_rep same;
    if (p.expand0) {
      const mb_shape_info *y = &l->eg->shapes[n->outputs[0]];
      dnnl_memory_desc_t f32_md;
      float *data =
          broadcast_const(mb__engine_constant(l->eg, v0), rank, y->dims);
      if (!data) {
        status = mb__dn_oom(l);
        goto done;
      }
      DN_GOTO(l, mb__dn_md_plain(&f32_md, rank, y->dims, dnnl_f32));
      DN_GOTO(l, mb__dn_md_plain(&expanded.md, rank, y->dims, dt));
      MB_TRY_GOTO(mb__dn_const_memory(l, &f32_md, data, true, &expanded.md,
                                      &expanded.mem, &expanded.buf));
      r0 = &expanded;
    } else {
      MB_TRY_GOTO(mb__dn_value_get(
          l, v0, attempt ? DN_WANT_PLAIN : DN_WANT_DTYPE, dt, NULL, &r0));
    }
    same = *r0;
    int v1_rank;
    int64_t v1_dims[MB_MAX_RANK];
    mb__dn_value_dims(l, v1, &v1_rank, v1_dims);
    if (dims_equal(v1_rank, v1_dims, same.md.ndims, same.md.dims)) {
      MB_TRY_GOTO(mb__dn_value_get(l, v1, DN_WANT_EXACT, dt, &same.md, &r1));
      md1 = r1->md;
      mem1 = r1->mem;
    } else {
      MB_TRY_GOTO(mb__dn_value_get(l, v1, DN_WANT_PLAIN, dt, NULL, &r1));
      MB_TRY_GOTO(rep_view_padded(l, r1, rank, &md1, &mem1));
    }
    in1 = *r1;
    /* value_get of v1 may have moved v0's reps: take it again. */
    if (!p.expand0)
      MB_TRY_GOTO(mb__dn_value_get(l, v0, DN_WANT_EXACT, dt, &same.md, &r0));
    int64_t c0[DNNL_MAX_NDIMS], c1[DNNL_MAX_NDIMS];
    int crank = attempt > 0 && mb__dn_md_is_plain(&r0->md) &&
                        mb__dn_md_is_plain(&md1) && r0->md.ndims == rank &&
                        md1.ndims == rank
                    ? binary_coalesce(rank, r0->md.dims, md1.dims, c0, c1)
                    : rank;
    if (crank < rank) {
      DN_GOTO(l, mb__dn_md_plain(&mmd0, crank, c0, dt));
      DN_GOTO(l, mb__dn_md_plain(&mmd1, crank, c1, dt));
      DN_GOTO(l, dnnl_binary_desc_init(&bd, p.alg, &mmd0, &mmd1, &mmd0));
      if (mb__dn_pd_try(l, &bd, po, &pd) == dnnl_success &&
          mb__dn_pd_accept(&pd, false)) {
        merged = true;
        break;
      }
    }
    DN_GOTO(l, dnnl_binary_desc_init(&bd, p.alg, &r0->md, &md1, &r0->md));
    dnnl_status_t st = mb__dn_pd_try(l, &bd, po, &pd);
    if (st == dnnl_success)
      mb__dn_pd_accept(&pd, attempt == 2);
    else if (attempt == 2) {
      status = mb__dn_fail(l, "dnnl_primitive_desc_create(binary)", st);
      goto done;
    }
  }
  dn_rep in0 = *r0;
  int buf1 = in1.buf;
  MB_TRY_GOTO(mb__dn_value_define_like(l, n->outputs[0], &in0, buf1, &out));
  dnnl_memory_t mem0 = in0.mem, dst = out->mem;
  if (merged) {
    MB_TRY_GOTO(mb__dn_rep_view(l, &in0, &mmd0, &mem0));
    MB_TRY_GOTO(mb__dn_rep_view(l, &in1, &mmd1, &mem1));
    MB_TRY_GOTO(mb__dn_rep_view(l, out, &mmd0, &dst));
  }
  dnnl_exec_arg_t args[3] = {
      {DNNL_ARG_SRC_0, mem0}, {DNNL_ARG_SRC_1, mem1}, {DNNL_ARG_DST, dst}};
  MB_TRY_GOTO(mb__dn_emit(l, pd, 3, args));
done:
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (po)
    dnnl_post_ops_destroy(po);
  return status;
}

/* Where (see mb__dn_where_get): one binary primitive over the activation
 * and a constant of the condition's shape: act + (keep ? 0 : fill) for an
 * infinite fill, else act * keep with a binary post-op adding
 * (keep ? 0 : fill). */
mb_status mb__dn_lower_where(lctx *l, const mb_node *n) {
  where_params p;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_post_ops_t po = NULL;
  mb_status status = MB_STATUS_OK;
  dnnl_memory_desc_t cmd, cmd32;
  dnnl_memory_t mem1 = NULL, mem2 = NULL;
  dn_rep *in = NULL, *out;
  float *keep = NULL, *add = NULL;
  DN_PARAMS(l, n, mb__dn_where_get, &p);
  const mb_tensor *cond = mb__engine_constant(l->eg, n->inputs[0]);
  int rank, rc;
  int64_t ydims[MB_MAX_RANK], cd[MB_MAX_RANK], pdims[DNNL_MAX_NDIMS];
  mb__dn_value_dims(l, n->outputs[0], &rank, ydims);
  mb__dn_value_dims(l, n->inputs[0], &rc, cd);
  dims_pad(rc, cd, rank, pdims);
  bool add_only = isinf(p.fill);
  if (!(add = mb__dn_where_data(cond, p.fill, p.fill_if_true, true)) ||
      (!add_only &&
       !(keep = mb__dn_where_data(cond, p.fill, p.fill_if_true, false)))) {
    status = mb__dn_oom(l);
    goto done;
  }
  /* In the activation's layout, then plain, then plain float32. */
  for (int attempt = 0; attempt < 3 && !pd; attempt++) {
    dnnl_data_type_t dt = attempt == 2 ? dnnl_f32 : l->act_dt;
    dnnl_binary_desc_t bd;
    MB_TRY_GOTO(mb__dn_value_get(l, n->inputs[p.act],
                                 attempt ? DN_WANT_PLAIN : DN_WANT_DTYPE, dt,
                                 NULL, &in));
    DN_GOTO(l, mb__dn_md_plain(&cmd, rank, pdims, dt));
    if (po)
      dnnl_post_ops_destroy(po);
    po = NULL;
    if (!add_only) {
      DN_GOTO(l, dnnl_post_ops_create(&po));
      DN_GOTO(l, dnnl_post_ops_append_binary(po, dnnl_binary_add, &cmd));
    }
    DN_GOTO(l, dnnl_binary_desc_init(
                   &bd, add_only ? dnnl_binary_add : dnnl_binary_mul, &in->md,
                   &cmd, &in->md));
    dnnl_status_t st = mb__dn_pd_try(l, &bd, po, &pd);
    if (st == dnnl_success)
      mb__dn_pd_accept(&pd, attempt == 2);
    else if (attempt == 2) {
      status = mb__dn_fail(l, "dnnl_primitive_desc_create(binary)", st);
      goto done;
    }
  }
  DN_GOTO(l, mb__dn_md_plain(&cmd32, rank, pdims, dnnl_f32));
  dnnl_memory_desc_t want = cmd;
  want.data_type = in->md.data_type;
  dn_rep src = *in;
  status = mb__dn_const_memory(l, &cmd32, add_only ? add : keep, true, &want,
                               &mem1, NULL);
  if (add_only)
    add = NULL;
  else
    keep = NULL;
  if (status)
    goto done;
  if (!add_only) {
    status = mb__dn_const_memory(l, &cmd32, add, true, &want, &mem2, NULL);
    add = NULL;
    if (status)
      goto done;
  }
  MB_TRY_GOTO(mb__dn_value_define_like(l, n->outputs[0], &src, -1, &out));
  dnnl_exec_arg_t args[4] = {
      {DNNL_ARG_SRC_0, src.mem},
      {DNNL_ARG_SRC_1, mem1},
      {DNNL_ARG_DST, out->mem},
      {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, mem2}};
  MB_TRY_GOTO(mb__dn_emit(l, pd, add_only ? 3 : 4, args));
done:
  mb__aligned_free(keep);
  mb__aligned_free(add);
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (po)
    dnnl_post_ops_destroy(po);
  return status;
}

#endif /* MB_HAVE_DNNL */
