/* oneDNN engine: MatMul and Gemm in fp32, bf16 or int8, with alpha, C,
 * the bias and the post-ops of the fused group. */
#ifdef MB_HAVE_DNNL

#include "runtime/onednn/internal.h"

/* ---- Gemm / MatMul ------------------------------------------------------ */

/* The md of a matmul operand of ONNX dims (orank, odims) stored plain (or,
 * colmajor, with its last two dims swapped in memory: [.., N, K] for ONNX
 * dims [.., K, N]), seen as `rank` dims (leading ones) and transposed in
 * its last two when trans. */
static dnnl_status_t mm_operand_md_cm(dnnl_memory_desc_t *md, int orank,
                                      const int64_t *odims, int rank,
                                      bool trans, bool colmajor,
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
  if (colmajor && orank >= 2) {
    strides[rank - 2] = 1;
    strides[rank - 1] = MB_MAX(odims[orank - 2], 1);
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

static dnnl_status_t mm_operand_md(dnnl_memory_desc_t *md, int orank,
                                   const int64_t *odims, int rank, bool trans,
                                   dnnl_data_type_t dt) {
  return mm_operand_md_cm(md, orank, odims, rank, trans, false, dt);
}

/* Is activation v a view that is column-major in its last two dims (k^T
 * of attention, a Transpose of [.., N, K])? Its copy for a product then
 * keeps that order: the same matmul kernel reads it as transposed weights,
 * and the copy moves rows of K instead of transposing (4x cheaper). */
static bool mm_colmajor(lctx *l, int v) {
  const dn_val *x = &l->vals[v];
  if (x->n_reps < 1 || mb__engine_constant(l->eg, v))
    return false;
  const dnnl_memory_desc_t *m = &x->rep[0].md;
  int n = m->ndims;
  if (n < 2 || !mb__dn_md_is_strided(m) || mb__dn_md_is_plain(m))
    return false;
  const dnnl_dims_t *st = &m->format_desc.blocking.strides;
  return (*st)[n - 2] == 1 && (*st)[n - 1] != 1 && m->dims[n - 2] > 1;
}

/* Activation (or constant) operand v as a plain view for matmul (or,
 * colmajor, with its last two dims swapped in memory); fold: NULL, or
 * the [rows, K] v is seen as (its leading dims folded into its rows). */
static mb_status mm_operand(lctx *l, int v, int rank, bool trans, bool colmajor,
                            dnnl_data_type_t dt, const int64_t *fold,
                            dnnl_memory_desc_t *md, dnnl_memory_t *mem,
                            int *buf) {
  dn_rep *r;
  mb_status status;
  int orank;
  int64_t odims[MB_MAX_RANK];
  mb__dn_value_dims(l, v, &orank, odims);
  if (colmajor && !fold) {
    dnnl_memory_desc_t cm;
    DN_TRY(l, mm_operand_md_cm(&cm, orank, odims, orank, false, true, dt));
    if ((status = mb__dn_value_get(l, v, DN_WANT_EXACT, dt, &cm, &r)))
      return status;
  } else if ((status = mb__dn_value_get(l, v, DN_WANT_PLAIN, dt, NULL, &r)))
    return status;
  else
    colmajor = false;
  if (fold) {
    orank = 2;
    odims[0] = fold[0];
    odims[1] = fold[1];
  }
  *buf = r->buf;
  DN_TRY(l, mm_operand_md_cm(md, orank, odims, rank, trans, colmajor, dt));
  if (mb__dn_md_same(md, &r->md) && !trans && orank == rank) {
    *mem = r->mem;
    return MB_STATUS_OK;
  }
  return mb__dn_rep_view(l, r, md, mem);
}

/* Activation v quantised with xq (into its own dims, plain or colmajor),
 * seen as the operand md: the memory in *mem, its buffer in *buf. */
static mb_status mm_operand_q(lctx *l, int v, bool colmajor,
                              const mb_quant_param *xq,
                              const dnnl_memory_desc_t *md, dnnl_memory_t *mem,
                              int *buf) {
  dn_rep *rq;
  dnnl_memory_desc_t pm;
  mb_status status;
  int orank;
  int64_t odims[MB_MAX_RANK];
  mb__dn_value_dims(l, v, &orank, odims);
  DN_TRY(l, mm_operand_md_cm(&pm, orank, odims, orank, false, colmajor,
                             mb__dn_q_dt(xq)));
  if ((status = mb__dn_value_get_q(l, v, &pm, xq, &rq)))
    return status;
  *buf = rq->buf;
  if (mb__dn_md_same(md, &rq->md)) {
    *mem = rq->mem;
    return MB_STATUS_OK;
  }
  return mb__dn_rep_view(l, rq, md, mem);
}

/* A view of activation v in data type dt (a transposed or sliced value,
 * see movement.c) that a matmul can read as it is: described in *md as an
 * operand of `rank` dims (transposed in its last two when trans). Only
 * views with a unit stride in one of their last two dims, as oneDNN's
 * matmul wants; NULL when v has none (or a plain one, read plainly). src:
 * the view is the product's source (A), not its weights (B). */
static const dn_rep *mm_view(lctx *l, int v, int rank, bool trans,
                             dnnl_data_type_t dt, bool src,
                             dnnl_memory_desc_t *md) {
  const dn_val *x = &l->vals[v];
  for (int i = 0; i < x->n_reps; i++) {
    const dn_rep *r = &x->rep[i];
    const dnnl_dims_t *st = &r->md.format_desc.blocking.strides;
    int orank = r->md.ndims;
    if (r->md.data_type != dt || !mb__dn_md_is_strided(&r->md) ||
        mb__dn_md_is_plain(&r->md) || orank > rank || orank < 2 ||
        ((*st)[orank - 1] != 1 && (*st)[orank - 2] != 1))
      continue;
    /* A source whose batches interleave (q of [S, H, D] seen as
     * [H, S, D]) runs 1.5x slower in oneDNN's gemm than a plain copy,
     * which costs a twentieth of that: only batch-major sources. */
    bool batch_major = true;
    for (int d = 0; d + 2 < orank; d++)
      batch_major &= (*st)[d] >= r->md.dims[d + 1] * (*st)[d + 1];
    if (src && !batch_major)
      continue;
    int64_t dims[DNNL_MAX_NDIMS], strides[DNNL_MAX_NDIMS], span = 1;
    for (int d = 0; d < orank; d++)
      span = MB_MAX(span, r->md.dims[d] * (*st)[d]);
    for (int d = 0; d < rank; d++) {
      int o = d - (rank - orank);
      dims[d] = o >= 0 ? r->md.dims[o] : 1;
      strides[d] = o >= 0 ? (*st)[o] : span;
    }
    if (trans) {
      int64_t t = dims[rank - 1];
      dims[rank - 1] = dims[rank - 2];
      dims[rank - 2] = t;
      t = strides[rank - 1];
      strides[rank - 1] = strides[rank - 2];
      strides[rank - 2] = t;
    }
    if (mb__dn_md_view(md, &r->md, rank, dims, strides, 0) != dnnl_success)
      continue;
    return r;
  }
  return NULL;
}

/* When value v (a product's result, of dims (rank, dims)) is read only by
 * a Transpose that keeps the last dim in place, the layout in which that
 * Transpose's view (movement.c) is plain: the product writes there and the
 * transpose moves nothing (attention's [H, S, D] -> [S, H, D] before the
 * output projection). False otherwise. */
static bool mm_dst_for_transpose(lctx *l, int v, int rank, const int64_t *dims,
                                 dnnl_data_type_t dt, dnnl_memory_desc_t *md) {
  int pos;
  const int64_t *perm;
  if (v < 0 || l->vals[v].out_slot >= 0 ||
      mb__segment_readers(l->d, v, &pos, 1) != 1 || l->group_of[pos] >= 0)
    return false;
  const mb_node *t = node_at(l, pos);
  if (!op_is(t, "Transpose") || t->inputs[0] != v ||
      mb__engine_node_folded(l->eg, t) ||
      mb__node_attr_ints(t, "perm", &perm) != rank ||
      perm[rank - 1] != rank - 1)
    return false;
  dnnl_dims_t d, strides;
  int64_t stride = 1;
  for (int j = rank - 1; j >= 0; j--) {
    if (perm[j] < 0 || perm[j] >= rank)
      return false;
    strides[perm[j]] = stride;
    stride *= dims[perm[j]];
  }
  for (int i = 0; i < rank; i++)
    d[i] = dims[i];
  return dnnl_memory_desc_init_by_strides(md, rank, d, dt, strides) ==
         dnnl_success;
}

/* Is the node at pos (reading cur) data movement that the lowering makes
 * a view of the same values (or a plain copy of them), keeping int8 data
 * int8? */
static bool mm_moves_only(lctx *l, int pos, int cur) {
  static const char *const views[] = {"Transpose", "Reshape",   "Flatten",
                                      "Squeeze",   "Unsqueeze", "Identity"};
  const mb_node *n = node_at(l, pos);
  if (n->n_inputs < 1 || n->inputs[0] != cur || n->n_outputs != 1 ||
      l->group_of[pos] >= 0 || mb__engine_node_folded(l->eg, n) ||
      l->vals[n->outputs[0]].out_slot >= 0)
    return false;
  for (size_t i = 0; i < MB_ARRAY_COUNT(views); i++)
    if (op_is(n, views[i]))
      return true;
  return false;
}

/* int8 kept between products: when every reader of value v (the result
 * of an int8 product's chain), after data movement at most (attention's
 * head merge: Transpose, Reshape), is a MatMul or Gemm that will read it
 * as its int8 input (constant 2-D weights with a weight entry, the same
 * scale and zero point as v's), v's own activation entry, so that the
 * product writes v in int8 at once (a transformer's FFN: linear1 -> Relu
 * -> linear2; probabilities.v -> out_proj) instead of float that each
 * reader quantises again. NULL otherwise. */
static const mb_quant_param *mm_requant_entry(lctx *l, int v) {
  int pos[8];
  const mb_quant_param *yq = mb__engine_quant_activation(l->eg, l->quant, v);
  if (!yq || l->vals[v].out_slot >= 0)
    return NULL;
  int n = mb__segment_readers(l->d, v, pos, 8);
  for (int hop = 0; hop < 4 && n == 1 && mm_moves_only(l, pos[0], v); hop++) {
    v = node_at(l, pos[0])->outputs[0];
    n = mb__segment_readers(l->d, v, pos, 8);
  }
  if (n < 1 || n > 8)
    return NULL;
  for (int i = 0; i < n; i++) {
    const mb_node *m = node_at(l, pos[i]);
    const mb_quant_param *xq, *wq;
    int gi = l->group_of[pos[i]];
    const mb_tensor *w =
        m->n_inputs >= 2 ? mb__engine_constant(l->eg, m->inputs[1]) : NULL;
    bool gemm = op_is(m, "Gemm"), trans_b = false;
    if ((!op_is(m, "MatMul") && !gemm) || m->inputs[0] != v || !w ||
        w->rank != 2 || (gi >= 0 && l->groups[gi].head != pos[i]) ||
        (gi >= 0 && l->groups[gi].in_value[0] >= 0))
      return NULL;
    if (gemm) {
      if (mb__node_attr_int(m, "transA", 0) != 0)
        return NULL;
      trans_b = mb__node_attr_int(m, "transB", 0) != 0;
    }
    if (!mb__dn_q_entries(l, v, m->inputs[1], trans_b ? 0 : 1,
                          w->dims[trans_b ? 0 : 1], &xq, &wq) ||
        xq->dtype != yq->dtype || xq->scales[0] != yq->scales[0] ||
        xq->zero_points[0] != yq->zero_points[0])
      return NULL;
  }
  return yq;
}

/* Can the product fold A's leading dims into its rows: A [b.., M, K] times
 * B [K, N] (B's leading dims all 1) as one [b.. * M, K] x [K, N] product?
 * oneDNN runs a batch of small products as it is told, and PyTorch's
 * MultiheadAttention projects [S, 1, E] inputs: a batch of S
 * matrix-vector products, oneDNN's slowest path (1 ms where the folded
 * product takes 0.1 ms). Every binary post-op operand must fold the same
 * way (its leading dims all 1, or all the output's). */
static bool mm_can_fold(lctx *l, const mm_params *p, const dn_post *posts,
                        int n_posts) {
  int r = p->rank;
  if (r <= 2 || p->trans_a)
    return false;
  for (int d = 0; d < r - 2; d++)
    if (p->b_dims[d] != 1)
      return false;
  for (int i = 0; i < n_posts; i++) {
    int orank;
    int64_t od[MB_MAX_RANK], padded[DNNL_MAX_NDIMS];
    if (posts[i].kind != DN_POST_BINARY && posts[i].kind != DN_POST_MASK)
      continue;
    mb__dn_value_dims(l, posts[i].operand, &orank, od);
    if (orank > r)
      return false;
    dims_pad(orank, od, r, padded);
    bool ones = true, full = true;
    for (int d = 0; d < r - 1; d++) {
      ones &= padded[d] == 1;
      full &= padded[d] == p->y_dims[d];
    }
    if (!ones && !full)
      return false;
  }
  return true;
}

/* The weights of sibling products side by side, [K, sum N] (col[i]: the
 * first column of sibling i), into *w (describing *data, aligned, the
 * caller's) and their biases, zeros where one has none, into *bias. */
static mb_status mm_siblings_weights(lctx *l, const dn_group *g, mb_tensor *w,
                                     int64_t *col, float **data, float **bias) {
  int64_t k = 0, total = 0;
  for (int i = 0; i < g->n_sib; i++) {
    const mb_tensor *wi =
        mb__engine_constant(l->eg, node_at(l, g->sib[i].head)->inputs[1]);
    k = wi->dims[0];
    col[i] = total;
    total += wi->dims[1];
  }
  *data = mb__aligned_alloc((size_t)(k * total) * sizeof **data);
  *bias = mb__aligned_alloc((size_t)total * sizeof **bias);
  if (!*data || !*bias)
    return mb__dn_oom(l);
  for (int i = 0; i < g->n_sib; i++) {
    const mb_tensor *wi =
        mb__engine_constant(l->eg, node_at(l, g->sib[i].head)->inputs[1]);
    const mb_tensor *bi = g->sib[i].bias_value >= 0
                              ? mb__engine_constant(l->eg, g->sib[i].bias_value)
                              : NULL;
    int64_t ni = wi->dims[1];
    for (int64_t r = 0; r < k; r++)
      memcpy(*data + r * total + col[i], (const float *)wi->data + r * ni,
             (size_t)ni * sizeof **data);
    for (int64_t c = 0; c < ni; c++)
      (*bias)[col[i] + c] = bi ? ((const float *)bi->data)[c] : 0.0f;
  }
  memset(w, 0, sizeof *w);
  w->dtype = MB_DTYPE_FLOAT;
  w->rank = 2;
  w->dims[0] = k;
  w->dims[1] = total;
  w->numel = k * total;
  w->nbytes = (size_t)w->numel * sizeof(float);
  w->data = *data;
  return MB_STATUS_OK;
}

/* int8 for sibling products: the input's activation entry and every
 * sibling's weight entry, their scales side by side as one per-column
 * entry *wq (scales and zero points in *scales, *zps: the caller's). *ok
 * false (float then) when an entry is missing. */
static mb_status mm_siblings_quant(lctx *l, const dn_group *g, int a,
                                   int64_t total, const mb_quant_param **xq,
                                   mb_quant_param *wq, float **scales,
                                   int32_t **zps, bool *ok) {
  *ok = false;
  if (!l->quant || mb__engine_constant(l->eg, a) ||
      !(*xq = mb__engine_quant_activation(l->eg, l->quant, a)))
    return MB_STATUS_OK;
  *scales = malloc((size_t)total * sizeof **scales);
  *zps = calloc((size_t)total, sizeof **zps);
  if (!*scales || !*zps)
    return mb__dn_oom(l);
  int64_t c0 = 0;
  for (int i = 0; i < g->n_sib; i++) {
    int w = node_at(l, g->sib[i].head)->inputs[1];
    int64_t ni = mb__engine_constant(l->eg, w)->dims[1];
    const mb_quant_param *e =
        mb__engine_quant_weight(l->eg, l->quant, w, 1, ni);
    if (!e)
      return MB_STATUS_OK;
    for (int64_t c = 0; c < ni; c++)
      (*scales)[c0 + c] = mb__engine_weight_scale(e, c);
    c0 += ni;
  }
  wq->kind = MB_QUANT_KIND_WEIGHT;
  wq->dtype = MB_DTYPE_INT8;
  wq->axis = 1;
  wq->channels = total;
  wq->scales = *scales;
  wq->zero_points = *zps;
  *ok = true;
  return MB_STATUS_OK;
}

/* The one result of sibling products, md (plain [.., M, total]), in a new
 * buffer (*dst its memory), and each sibling's result as its column
 * window. */
static mb_status mm_siblings_outputs(lctx *l, const dn_group *g,
                                     const int64_t *col, int64_t total,
                                     const dnnl_memory_desc_t *md,
                                     dnnl_memory_t *dst) {
  int until = -1, buf;
  mb_status status;
  for (int i = 0; i < g->n_sib; i++)
    until = MB_MAX(until, l->vals[g->sib[i].final].last_use);
  if ((buf = mb__dn_buf_take(l, dnnl_memory_desc_get_size(md), until)) < 0)
    return mb__dn_oom(l);
  if ((status = mb__dn_mem_new(l, md, buf, dst)))
    return status;
  for (int i = 0; i < g->n_sib; i++) {
    int v = g->sib[i].final, rank;
    int64_t dims[MB_MAX_RANK], strides[MB_MAX_RANK];
    dnnl_memory_desc_t view;
    mb__dn_value_dims(l, v, &rank, dims);
    strides[rank - 1] = 1;
    for (int d = rank - 2; d >= 0; d--)
      strides[d] = strides[d + 1] * (d + 1 == rank - 1 ? total : dims[d + 1]);
    DN_TRY(l, mb__dn_md_view(&view, md, rank, dims, strides, col[i]));
    if ((status = mb__dn_value_alias(l, v, &view, buf, NULL)))
      return status;
  }
  return MB_STATUS_OK;
}

/* ---- the lowering, step by step ----------------------------------------- */

/* What lowering one MatMul/Gemm group carries from step to step. Fields
 * marked owned are released by mm_lowering_free; a step that hands one to
 * a constant memory sets it to NULL first. */
typedef struct mm_lowering {
  mm_params p;
  int a, b;            /* the operands' values */
  const mb_tensor *kb; /* B when constant (siblings: &wcat) */
  dnnl_data_type_t dt; /* the segment's activation type */
  int64_t nn;          /* the output's columns */
  int brank;           /* B's ONNX rank and dims */
  int64_t bdims[MB_MAX_RANK];
  /* Sibling products (Q, K, V): one [K, sum N] weight, one bias. */
  mb_tensor wcat;
  mb_quant_param wq_cat;
  float *cat_scales; /* owned */
  int32_t *cat_zps;  /* owned */
  int64_t col[DN_MAX_SIB];
  bool sib_q;
  /* int8: the entries (xq, wq may point at wq_cat or the qact_*), the
   * output scales and the attributes. */
  bool q;
  const mb_quant_param *xq, *wq;
  dn_qact qact_x, qact_w;
  float *oscales; /* owned */
  dn_qattr qa;
  /* alpha, C and the post-ops in front of the group's. */
  float *scaled;    /* owned: constant weights times alpha, or wcat's data */
  float *bias_data; /* owned */
  const float *bias_src;
  dn_post posts[DN_MAX_POST + 3];
  int n_fixed;
  /* Layouts: folded rows, views read where they are, the destination. */
  int fold_rank;
  int64_t fold[2];
  dnnl_memory_desc_t a_md, b_md, b_user, bias_md, dst_md;
  dnnl_memory_desc_t a_vmd, b_vmd, dst_vmd, dst_qmd;
  const dn_rep *a_view, *b_view;
  dn_rep a_vrep, b_vrep;
  bool dst_view, b_cm;
  const mb_quant_param *yq;
  /* The primitive chosen and how (attempt, post-ops taken: k). */
  dnnl_primitive_desc_t pd, view_pd; /* owned */
  dnnl_post_ops_t po;                /* owned */
  dnnl_memory_desc_t bin_md[DN_MAX_POST + 3];
  int k, view_k, attempt;
  bool requant;
} mm_lowering;

static void mm_lowering_free(mm_lowering *m) {
  if (m->view_pd)
    dnnl_primitive_desc_destroy(m->view_pd);
  free(m->oscales);
  free(m->cat_scales);
  free(m->cat_zps);
  mb__aligned_free(m->scaled);
  mb__aligned_free(m->bias_data);
  if (m->pd)
    dnnl_primitive_desc_destroy(m->pd);
  if (m->po)
    dnnl_post_ops_destroy(m->po);
}

/* The operands and the output's columns; for sibling products, their
 * weights side by side (int8 when every sibling has a weight entry). */
static mb_status mm_gather(lctx *l, const dn_group *g, mm_lowering *m) {
  const mb_node *n = node_at(l, g->head);
  mb_status status;
  int r = m->p.rank;
  m->a = g->in_value[0] >= 0 ? g->in_value[0] : n->inputs[0];
  m->b = g->in_value[1] >= 0 ? g->in_value[1] : n->inputs[1];
  m->p.alpha *= g->pre_alpha;
  m->kb = mb__engine_constant(l->eg, m->b);
  m->dt = l->act_dt;
  m->nn = m->p.y_dims[r - 1];
  mb__dn_value_dims(l, m->b, &m->brank, m->bdims);
  if (!g->n_sib)
    return MB_STATUS_OK;
  if ((status = mm_siblings_weights(l, g, &m->wcat, m->col, &m->scaled,
                                    &m->bias_data)))
    return status;
  m->kb = &m->wcat;
  m->brank = 2;
  m->bdims[0] = m->wcat.dims[0];
  m->bdims[1] = m->nn = m->wcat.dims[1];
  m->p.b_dims[r - 1] = m->p.y_dims[r - 1] = m->nn;
  if ((status = mm_siblings_quant(l, g, m->a, m->nn, &m->xq, &m->wq_cat,
                                  &m->cat_scales, &m->cat_zps, &m->sib_q)))
    return status;
  m->wq = &m->wq_cat;
  return MB_STATUS_OK;
}

/* Whether the product runs in int8 (m->q), and then its output scales
 * and attributes. */
static mb_status mm_quant(lctx *l, const dn_group *g, mm_lowering *m) {
  const mm_params *p = &m->p;
  int r = p->rank;
  /* int8 (constant 2-D weights, A not transposed): u8/s8 A, s8 weights
   * per column of the output, float32 out through the output scales
   * (alpha folded into them), so C, bias and post-ops stay float. */
  m->q = g->n_sib ? m->sib_q
                  : m->kb && m->brank == 2 && !p->trans_a &&
                        mb__dn_q_entries(l, m->a, m->b, p->trans_b ? 0 : 1,
                                         m->nn, &m->xq, &m->wq);
  /* int8 attention: a product of two activations (q.k^T, then the
   * probabilities by v) reads both quantised by ranges derived from their
   * calibration (mb__dn_q_act), as ONNX Runtime's static quantiser makes
   * a MatMul of two activations a QLinearMatMul; one output scale. */
  if (!m->q && !m->kb && !g->n_sib && l->quant && !p->trans_a &&
      mb__dn_q_act(l, m->a, NULL, &m->qact_x) &&
      mb__dn_q_act(l, m->b, &m->qact_x, &m->qact_w)) {
    m->xq = &m->qact_x.p;
    m->wq = &m->qact_w.p;
    m->q = true;
  }
  if (!m->q)
    return MB_STATUS_OK;
  if (!(m->oscales = mb__dn_q_out_scales(m->xq, m->wq, p->alpha)))
    return mb__dn_oom(l);
  m->qa = (dn_qattr){(int)m->wq->channels,
                     m->wq->channels > 1 ? 1 << (r - 1) : 0,
                     m->oscales,
                     m->xq->zero_points[0] != 0,
                     false,
                     0};
  return MB_STATUS_OK;
}

/* alpha and C (Gemm's) as scaled weights, a bias or post-ops in front of
 * the group's own post-ops. */
static mb_status mm_alpha_and_c(lctx *l, const dn_group *g, mm_lowering *m) {
  const mb_node *n = node_at(l, g->head);
  const mm_params *p = &m->p;
  const mb_tensor *kb = m->kb;
  dn_post *posts = m->posts;
  /* alpha: folded into constant weights, else a linear post-op. */
  if (p->alpha != 1.0f && kb && !m->q && !g->n_sib) {
    if (!(m->scaled = mb__aligned_alloc((size_t)kb->numel * sizeof *m->scaled)))
      return mb__dn_oom(l);
    for (int64_t i = 0; i < kb->numel; i++)
      m->scaled[i] = p->alpha * ((const float *)kb->data)[i];
  } else if (p->alpha != 1.0f && !m->q) {
    memset(&posts[m->n_fixed], 0, sizeof posts[0]);
    posts[m->n_fixed].kind = DN_POST_ELTWISE;
    posts[m->n_fixed].n_ops = 1;
    posts[m->n_fixed].ops[0] =
        (eltwise_op){dnnl_eltwise_linear, p->alpha, 0.0f};
    posts[m->n_fixed].out_value = n->outputs[0];
    m->n_fixed++;
  }
  /* C: a bias (applied before the post-ops, so divided by alpha when alpha
   * is a post-op) or a binary post-op (beta == 1 there, see mm_get). */
  if (p->c >= 0) {
    const mb_tensor *kc = mb__engine_constant(l->eg, n->inputs[p->c]);
    if (p->c_is_bias) {
      float scale = p->beta / (kb || m->q ? 1.0f : p->alpha);
      if (!(m->bias_data =
                mb__aligned_alloc((size_t)m->nn * sizeof *m->bias_data)))
        return mb__dn_oom(l);
      for (int64_t i = 0; i < m->nn; i++)
        m->bias_data[i] =
            scale * ((const float *)kc->data)[kc->numel == 1 ? 0 : i];
    } else {
      memset(&posts[m->n_fixed], 0, sizeof posts[0]);
      posts[m->n_fixed].kind = DN_POST_BINARY;
      posts[m->n_fixed].alg = dnnl_binary_add;
      posts[m->n_fixed].operand = n->inputs[p->c];
      posts[m->n_fixed].out_value = n->outputs[0];
      m->n_fixed++;
    }
  }
  memcpy(&posts[m->n_fixed], g->post, (size_t)g->n_post * sizeof *g->post);
  if (g->n_post > 0 && g->post[0].kind == DN_POST_BIAS)
    m->bias_src = mb__engine_constant(l->eg, g->post[0].operand)->data;
  return MB_STATUS_OK;
}

/* The layouts the product may use: A's leading dims folded into its rows,
 * the bias and destination mds, transposed or sliced activations read
 * where they are, the destination a Transpose after it wants, and int8
 * out (a last requantising post-op) when int8 products read the result. */
static mb_status mm_layouts(lctx *l, const dn_group *g, mm_lowering *m) {
  const mb_node *n = node_at(l, g->head);
  mm_params *p = &m->p;
  dn_post *posts = m->posts;
  int r = p->rank, n_fixed = m->n_fixed;
  dnnl_data_type_t dt = m->dt;
  /* Leading dims folded into the rows: from here the product is 2-D. */
  if (mm_can_fold(l, p, posts, n_fixed + g->n_post)) {
    m->fold_rank = r;
    m->fold[0] = mb__engine_numel(r - 1, p->y_dims);
    m->fold[1] = p->a_dims[r - 1];
    p->a_dims[0] = m->fold[0];
    p->a_dims[1] = m->fold[1];
    p->b_dims[0] = p->b_dims[r - 2];
    p->b_dims[1] = p->b_dims[r - 1];
    p->y_dims[0] = m->fold[0];
    p->y_dims[1] = m->nn;
    r = p->rank = 2;
    if (m->q)
      m->qa.mask = m->wq->channels > 1 ? 1 << 1 : 0;
  }
  {
    int64_t bd[DNNL_MAX_NDIMS];
    for (int i = 0; i < r; i++)
      bd[i] = i == r - 1 ? m->nn : 1;
    DN_TRY(l, mb__dn_md_plain(&m->bias_md, r, bd, dnnl_f32));
  }
  DN_TRY(l, mb__dn_md_plain(&m->dst_md, r, p->y_dims, dt));
  /* Transposed or sliced activations read where they are (strides); if
   * oneDNN will not (or only with its reference kernel), plain copies. */
  m->a_view = m->fold_rank
                  ? NULL
                  : mm_view(l, m->a, r, p->trans_a, dt, true, &m->a_vmd);
  m->b_view =
      m->kb ? NULL : mm_view(l, m->b, r, p->trans_b, dt, false, &m->b_vmd);
  if (m->a_view)
    m->a_vrep = *m->a_view;
  if (m->b_view)
    m->b_vrep = *m->b_view;
  /* The whole chain's result in the layout a Transpose after it wants. */
  bool has_sum = false, has_view = false;
  for (int i = 0; i < n_fixed + g->n_post; i++) {
    has_sum |= posts[i].kind == DN_POST_SUM;
    has_view |= posts[i].kind == DN_POST_VIEW;
  }
  m->dst_view =
      !m->fold_rank && !has_sum && !has_view && !g->n_sib &&
      mm_dst_for_transpose(
          l, mb__dn_head_final(posts, n_fixed + g->n_post, n->outputs[0]), r,
          p->y_dims, dt, &m->dst_vmd);
  /* int8 out of an int8 product (the whole chain, then requantised by a
   * last linear post-op: y_q = y / y_scale + y_zero_point). */
  m->yq =
      m->q && !has_sum && !g->n_sib
          ? mm_requant_entry(
                l, mb__dn_head_final(posts, n_fixed + g->n_post, n->outputs[0]))
          : NULL;
  if (m->yq) {
    const mb_quant_param *yq = m->yq;
    dn_post *rq = &posts[n_fixed + g->n_post];
    memset(rq, 0, sizeof *rq);
    rq->kind = DN_POST_ELTWISE;
    rq->n_ops = 1;
    rq->ops[0] = (eltwise_op){dnnl_eltwise_linear, 1.0f / yq->scales[0],
                              (float)yq->zero_points[0]};
    rq->out_value =
        mb__dn_head_final(posts, n_fixed + g->n_post, n->outputs[0]);
    DN_TRY(l, mb__dn_md_plain(&m->dst_qmd, r, p->y_dims, mb__dn_q_dt(yq)));
  }
  /* A copied B keeps a column-major view's order (k^T). */
  m->b_cm = !m->kb && mm_colmajor(l, m->b);
  return MB_STATUS_OK;
}

/* One attempt at the primitive (0: int8; 1: float with views; 2: float,
 * plain operands): the longest prefix of the group's post-ops (m->k of
 * them) that oneDNN serves, constant weights in the layout it prefers
 * first. m->pd stays NULL when it serves none; failing is an error only
 * on the last attempt's last try. */
static mb_status mm_try_primitive(lctx *l, const dn_group *g, mm_lowering *m,
                                  int attempt) {
  const mm_params *p = &m->p;
  mb_status status;
  int r = p->rank;
  bool int8 = attempt == 0, views = attempt == 1;
  dnnl_data_type_t dt = m->dt, wdt = int8 ? dnnl_s8 : dt;
  if (views && m->a_view)
    m->a_md = m->a_vmd;
  else
    DN_TRY(l, mm_operand_md(&m->a_md, r, p->a_dims, r, p->trans_a,
                            int8 ? mb__dn_q_dt(m->xq) : dt));
  if (m->kb)
    DN_TRY(l, mm_operand_md(&m->b_user, m->brank, m->bdims, r, p->trans_b,
                            int8 ? dnnl_s8 : dnnl_f32));
  for (m->k = g->n_post; m->k >= 0; m->k--) {
    int k = m->k;
    bool has_bias = m->bias_data || (k > 0 && m->bias_src);
    /* Constant weights in the layout oneDNN prefers, else plain. */
    for (int plain = m->kb ? 0 : 1; plain < 2 && !m->pd; plain++) {
      dnnl_matmul_desc_t md_desc;
      int64_t wd[DNNL_MAX_NDIMS];
      bool last = k == 0 && plain == 1 && attempt == 2;
      memcpy(wd, m->b_user.dims, sizeof(int64_t) * (size_t)r);
      if (m->kb && !plain)
        DN_TRY(l, mb__dn_md_any(&m->b_md, r, wd, wdt));
      else if (m->kb)
        DN_TRY(l, mb__dn_md_plain(&m->b_md, r, wd, wdt));
      else if (views && m->b_view)
        m->b_md = m->b_vmd;
      else
        DN_TRY(l, mm_operand_md_cm(&m->b_md, r, p->b_dims, r, p->trans_b,
                                   m->b_cm, int8 ? dnnl_s8 : dt));
      bool to_view = views && m->dst_view && k == g->n_post;
      m->requant = int8 && m->yq && k == g->n_post;
      if ((status = mb__dn_posts_build(l, m->posts, m->n_fixed + k + m->requant,
                                       r, m->fold_rank, &m->po, m->bin_md)))
        return status;
      DN_TRY(l, dnnl_matmul_desc_init(&md_desc, &m->a_md, &m->b_md,
                                      has_bias ? &m->bias_md : NULL,
                                      m->requant ? &m->dst_qmd
                                      : to_view  ? &m->dst_vmd
                                                 : &m->dst_md));
      dnnl_status_t st =
          mb__dn_pd_try_q(l, &md_desc, m->po, int8 ? &m->qa : NULL, &m->pd);
      dnnl_post_ops_destroy(m->po);
      m->po = NULL;
      if (st == dnnl_success)
        mb__dn_pd_accept(&m->pd, last);
      else if (last)
        return mb__dn_fail(l, "dnnl_primitive_desc_create(matmul)", st);
    }
    if (m->pd)
      break;
  }
  return MB_STATUS_OK;
}

/* The primitive: int8 first when the product has entries, then float
 * with views, then float with plain operands; views served only by the
 * general gemm are kept in case plain operands get no batch-reduce
 * kernel. Sets m->pd, m->k, m->attempt, m->q and m->requant. */
static mb_status mm_choose_primitive(lctx *l, const dn_group *g,
                                     mm_lowering *m) {
  mb_status status;
  /* 0: int8; 1: float with views; 2: float, plain operands. */
  int first_float = m->a_view || m->b_view || m->dst_view ? 1 : 2;
  int attempt = m->q ? 0 : first_float;
  for (; attempt < 3; attempt = attempt == 0 ? first_float : attempt + 1) {
    if ((status = mm_try_primitive(l, g, m, attempt)))
      return status;
    if (m->pd && attempt == 1 && !mb__dn_pd_is_brgemm(m->pd) && !m->view_pd) {
      /* Views served by the general gemm only: plain operands may get the
       * batch-reduce kernels (fp32 attention: 4x faster, copies included);
       * kept in case they do not. */
      m->view_pd = m->pd;
      m->view_k = m->k;
      m->pd = NULL;
      continue;
    }
    if (m->pd)
      break;
  }
  if (m->view_pd && (!m->pd || !mb__dn_pd_is_brgemm(m->pd))) {
    if (m->pd)
      dnnl_primitive_desc_destroy(m->pd);
    m->pd = m->view_pd;
    m->k = m->view_k;
    attempt = 1;
    m->view_pd = NULL;
  }
  m->attempt = attempt;
  m->q = attempt == 0 && m->pd;
  m->requant &= m->q;
  return MB_STATUS_OK;
}

/* The source, weights and bias memories of the chosen primitive (int8:
 * quantised; views where it reads them; constant weights and bias in its
 * layout), and the buffers of A and B (-1: none) for mb__dn_head_dst.
 * *biasmem: NULL without a bias. */
static mb_status mm_bind_operands(lctx *l, mm_lowering *m, dnnl_memory_t *amem,
                                  dnnl_memory_t *bmem, dnnl_memory_t *biasmem,
                                  int *a_buf, int *b_buf) {
  const mm_params *p = &m->p;
  const mb_tensor *kb = m->kb;
  mb_status status;
  int r = p->rank, k = m->k;
  bool q = m->q, use_views = m->attempt == 1;
  *biasmem = NULL;
  *b_buf = -1;
  if (q) {
    status = mm_operand_q(l, m->a, false, m->xq, &m->a_md, amem, a_buf);
  } else if (use_views && m->a_view) {
    *a_buf = m->a_vrep.buf;
    status = mb__dn_rep_view(l, &m->a_vrep, &m->a_md, amem);
  } else {
    status = mm_operand(l, m->a, r, p->trans_a, false, m->dt,
                        m->fold_rank ? m->fold : NULL, &m->a_md, amem, a_buf);
  }
  if (status)
    return status;
  if (q && !kb) {
    /* An activation as s8 weights. */
    status = mm_operand_q(l, m->b, m->b_cm, m->wq, &m->b_md, bmem, b_buf);
  } else if (q) {
    int8_t *w8 = mb__dn_q_weights(kb, m->wq, p->trans_b ? 0 : 1);
    if (!w8)
      return mb__dn_oom(l);
    status = mb__dn_const_memory(l, &m->b_user, w8, true,
                                 mb__dn_pd_md(m->pd, dnnl_query_weights_md),
                                 bmem, NULL);
  } else if (kb) {
    bool own = m->scaled != NULL;
    const float *data = own ? m->scaled : kb->data;
    m->scaled = NULL; /* taken by const_memory */
    status = mb__dn_const_memory(l, &m->b_user, data, own,
                                 mb__dn_pd_md(m->pd, dnnl_query_weights_md),
                                 bmem, NULL);
  } else if (use_views && m->b_view) {
    *b_buf = m->b_vrep.buf;
    status = mb__dn_rep_view(l, &m->b_vrep, &m->b_md, bmem);
  } else {
    status = mm_operand(l, m->b, r, p->trans_b, m->b_cm, m->dt, NULL, &m->b_md,
                        bmem, b_buf);
  }
  if (status)
    return status;
  if (q && (m->bias_data || (k > 0 && m->bias_src))) {
    /* In the accumulator's scale (DN_INT8_BIAS_BEFORE_SCALES). */
    float *data = mb__dn_q_bias(m->bias_data ? m->bias_data : m->bias_src,
                                m->nn, m->oscales, m->wq->channels);
    if (!data)
      return mb__dn_oom(l);
    return mb__dn_const_memory(l, &m->bias_md, data, true, &m->bias_md, biasmem,
                               NULL);
  }
  if (m->bias_data) {
    float *data = m->bias_data;
    m->bias_data = NULL;
    return mb__dn_const_memory(l, &m->bias_md, data, true, &m->bias_md, biasmem,
                               NULL);
  }
  if (k > 0 && m->bias_src)
    return mb__dn_const_memory(l, &m->bias_md, m->bias_src, false, &m->bias_md,
                               biasmem, NULL);
  return MB_STATUS_OK;
}

/* The step of the chosen primitive: its destination (the siblings' one
 * result; else the chain's value in its own dims, a folded product
 * writing a [rows, N] view of it, int8 when requantised) and its
 * arguments, the post-ops' operands among them. */
static mb_status mm_emit(lctx *l, const dn_group *g, mm_lowering *m) {
  const mb_node *n = node_at(l, g->head);
  const dn_post *posts = m->posts;
  mb_status status;
  int n_fixed = m->n_fixed, k = m->k;
  dnnl_memory_t amem, bmem, biasmem;
  dn_rep *out;
  dnnl_exec_arg_t args[DN_MAX_ARGS];
  int n_args = 0, a_buf, b_buf;
  if ((status = mm_bind_operands(l, m, &amem, &bmem, &biasmem, &a_buf, &b_buf)))
    return status;
  if (g->n_sib) {
    dnnl_memory_t dst;
    if ((status =
             mm_siblings_outputs(l, g, m->col, m->nn,
                                 mb__dn_pd_md(m->pd, dnnl_query_dst_md), &dst)))
      return status;
    args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, amem};
    args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, bmem};
    if (biasmem)
      args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, biasmem};
    args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_DST, dst};
    if (m->q && (status = mb__dn_q_zp_arg(l, m->xq, args, &n_args)))
      return status;
    return mb__dn_emit(l, m->pd, n_args, args);
  }
  /* The value is defined in its own dims; a folded product writes a
   * [rows, N] view of it. */
  int final = mb__dn_head_final(posts, n_fixed + k, n->outputs[0]);
  const dnnl_memory_desc_t *pd_dst = mb__dn_pd_md(m->pd, dnnl_query_dst_md);
  dnnl_memory_desc_t out_md = *pd_dst;
  dnnl_memory_t dst_mem;
  bool reshaped = m->fold_rank != 0;
  for (int i = 0; i < n_fixed + k; i++)
    reshaped |= posts[i].kind == DN_POST_VIEW;
  if (reshaped) {
    /* The chain's result in its own dims (plain, as the product's). */
    const mb_shape_info *y = &l->eg->shapes[final];
    DN_TRY(l, mb__dn_md_plain(&out_md, y->rank, y->dims, pd_dst->data_type));
  }
  if ((status = mb__dn_head_dst(l, posts, n_fixed + k, final, &out_md, a_buf,
                                b_buf, &out)))
    return status;
  if (m->requant) {
    out->qscale = m->yq->scales[0];
    out->qzp = m->yq->zero_points[0];
  }
  dst_mem = out->mem;
  if (reshaped && (status = mb__dn_rep_view(l, out, pd_dst, &dst_mem)))
    return status;
  args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, amem};
  args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, bmem};
  if (biasmem)
    args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, biasmem};
  args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_DST, dst_mem};
  if (m->q && (status = mb__dn_q_zp_arg(l, m->xq, args, &n_args)))
    return status;
  if ((status =
           mb__dn_posts_args(l, posts, n_fixed + k, m->bin_md, args, &n_args)))
    return status;
  return mb__dn_emit(l, m->pd, n_args, args);
}

/* A MatMul or Gemm group: gather, decide int8, take alpha and C, choose
 * layouts and the primitive, emit; the post-ops it did not take are
 * lowered node by node after it. */
mb_status mb__dn_lower_mm(lctx *l, const dn_group *g) {
  const mb_node *n = node_at(l, g->head);
  mb_status status = MB_STATUS_OK;
  mm_lowering m;
  memset(&m, 0, sizeof m);
  DN_PARAMS(l, n, mb__dn_mm_get, &m.p);
  MB_TRY_GOTO(mm_gather(l, g, &m));
  MB_TRY_GOTO(mm_quant(l, g, &m));
  MB_TRY_GOTO(mm_alpha_and_c(l, g, &m));
  MB_TRY_GOTO(mm_layouts(l, g, &m));
  MB_TRY_GOTO(mm_choose_primitive(l, g, &m));
  MB_TRY_GOTO(mm_emit(l, g, &m));
  /* Sibling products take no chain after them. */
  if (!g->n_sib)
    MB_TRY_GOTO(mb__dn_lower_rest(l, g->post, m.k, g->n_post));
done:
  mm_lowering_free(&m);
  return status;
}

#endif /* MB_HAVE_DNNL */
