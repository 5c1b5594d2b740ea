/* oneDNN engine: memory and layouts. Memory descriptors, the segment's
 * buffers (reused by liveness) and the memory objects on them, each
 * value's representations (a layout and data type in a buffer) with the
 * reorders that make a new one, constants converted at compile time, the
 * segment's boundary buffers. Creating primitives is primitive.c's. */
#ifdef MB_HAVE_DNNL

#include "runtime/onednn/internal.h"

#include <oneapi/dnnl/dnnl_debug.h>

/* Grows *array (of *cap elements of `size` bytes) to hold one more. */
bool mb__dn_grow(void **array, int *cap, int count, size_t size) {
  if (count < *cap)
    return true;
  int n = *cap ? *cap * 2 : 16;
  void *p = realloc(*array, (size_t)n * size);
  if (!p)
    return false;
  *array = p;
  *cap = n;
  return true;
}

mb_status mb__dn_fail(lctx *l, const char *call, dnnl_status_t st) {
  char label[160], fn[64];
  /* DN_TRY passes the call's text: name our own helpers without the
   * internal prefix. */
  if (strncmp(call, "mb__dn_", 7) == 0)
    call += 7;
  size_t k = strcspn(call, "(");
  snprintf(fn, sizeof fn, "%.*s", (int)MB_MIN(k, sizeof fn - 1), call);
  return mb__error(
      l->err,
      st == dnnl_out_of_memory ? MB_STATUS_OUT_OF_MEMORY : MB_STATUS_INTERNAL,
      "onednn: %s: %s failed: %s",
      l->node ? mb__node_label(l->node, label, sizeof label) : "segment", fn,
      mb__dn_status_name(st));
}

mb_status mb__dn_oom(lctx *l) {
  char label[160];
  return mb__error(l->err, MB_STATUS_OUT_OF_MEMORY, "onednn: %s: out of memory",
                   l->node ? mb__node_label(l->node, label, sizeof label)
                           : "segment");
}

mb_status mb__dn_internal_error(lctx *l, const char *what) {
  char label[160];
  return mb__error(
      l->err, MB_STATUS_INTERNAL, "onednn: %s: %s",
      l->node ? mb__node_label(l->node, label, sizeof label) : "segment", what);
}

/* ---- memory descriptors ------------------------------------------------- */

/* Plain row-major md; rank 0 is [1]. */
dnnl_status_t mb__dn_md_plain(dnnl_memory_desc_t *md, int rank,
                              const int64_t *dims, dnnl_data_type_t dt) {
  dnnl_dims_t d, strides;
  int64_t stride = 1;
  if (rank == 0) {
    d[0] = 1;
    strides[0] = 1;
    return dnnl_memory_desc_init_by_strides(md, 1, d, dt, strides);
  }
  for (int i = rank - 1; i >= 0; i--) {
    d[i] = dims[i];
    strides[i] = stride;
    stride *= MB_MAX(dims[i], 1);
  }
  return dnnl_memory_desc_init_by_strides(md, rank, d, dt, strides);
}

dnnl_status_t mb__dn_md_any(dnnl_memory_desc_t *md, int rank,
                            const int64_t *dims, dnnl_data_type_t dt) {
  dnnl_dims_t d;
  for (int i = 0; i < rank; i++)
    d[i] = dims[i];
  return dnnl_memory_desc_init_by_tag(md, rank, d, dt, dnnl_format_tag_any);
}

/* Dense row-major (strides of size-1 dims do not matter), no offset. */
bool mb__dn_md_is_plain(const dnnl_memory_desc_t *md) {
  const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
  int64_t stride = 1;
  if (md->format_kind != dnnl_blocked || b->inner_nblks != 0 ||
      md->offset0 != 0 || md->extra.flags != 0)
    return false;
  for (int i = md->ndims - 1; i >= 0; i--) {
    if (md->padded_dims[i] != md->dims[i] || md->padded_offsets[i] != 0)
      return false;
    if (md->dims[i] != 1 && b->strides[i] != stride)
      return false;
    stride *= md->dims[i];
  }
  return true;
}

/* Strides only, no blocking: plain, a permutation of plain (a transposed
 * view), or a window into a larger buffer (a slice). */
bool mb__dn_md_is_strided(const dnnl_memory_desc_t *md) {
  return md->format_kind == dnnl_blocked &&
         md->format_desc.blocking.inner_nblks == 0 && md->extra.flags == 0;
}

/* Its elements fill its buffer from offset 0 without holes (plain, a
 * permutation, oneDNN's blocked layouts); a window of a larger buffer does
 * not. */
bool mb__dn_md_is_dense(const dnnl_memory_desc_t *md) {
  if (md->offset0 != 0)
    return false;
  size_t n = (size_t)mb__engine_numel(md->ndims, md->padded_dims);
  return dnnl_memory_desc_get_size(md) ==
         n * dnnl_data_type_size(md->data_type);
}

/* A strided md of `rank` dims over the same bytes as strided md `src`,
 * dims[i] along stride strides[i], starting `offset` elements further. */
dnnl_status_t mb__dn_md_view(dnnl_memory_desc_t *md,
                             const dnnl_memory_desc_t *src, int rank,
                             const int64_t *dims, const int64_t *strides,
                             int64_t offset) {
  dnnl_dims_t d, st;
  /* Size-1 dims get the stride a plain layout would give them: any stride
   * reads the same, but oneDNN compares strides when it matches layouts
   * (a binary primitive between abc and "bac" of [1, S, E] falls back to
   * its reference kernel). */
  for (int i = rank - 1; i >= 0; i--) {
    d[i] = dims[i];
    st[i] = dims[i] != 1    ? strides[i]
            : i == rank - 1 ? 1
                            : st[i + 1] * MB_MAX(d[i + 1], 1);
  }
  dnnl_status_t status =
      dnnl_memory_desc_init_by_strides(md, rank, d, src->data_type, st);
  md->offset0 = src->offset0 + offset;
  return status;
}

/* The strides that make strided md `src` read as dims (rank, dims) in row
 * major order without moving data (NumPy's reshape without a copy): false
 * when a merged run of src's dims is not contiguous. */
bool mb__dn_md_reshape_strides(const dnnl_memory_desc_t *src, int rank,
                               const int64_t *dims, int64_t *strides) {
  int64_t od[DNNL_MAX_NDIMS], os[DNNL_MAX_NDIMS];
  int on = 0;
  const dnnl_dims_t *ss = &src->format_desc.blocking.strides;
  for (int i = 0; i < src->ndims; i++) {
    if (src->dims[i] == 1)
      continue;
    od[on] = src->dims[i];
    os[on++] = (*ss)[i];
  }
  int ni = 0, oi = 0;
  while (ni < rank && oi < on) {
    if (dims[ni] == 1) {
      ni++;
      continue;
    }
    int nj = ni + 1, oj = oi + 1;
    int64_t np = dims[ni], op = od[oi];
    while (np != op) {
      if (np < op) {
        if (nj >= rank)
          return false;
        np *= dims[nj++];
      } else {
        if (oj >= on)
          return false;
        op *= od[oj++];
      }
    }
    for (int k = oi; k < oj - 1; k++)
      if (os[k] != od[k + 1] * os[k + 1])
        return false;
    strides[nj - 1] = os[oj - 1];
    for (int k = nj - 1; k > ni; k--)
      strides[k - 1] = strides[k] * dims[k];
    ni = nj;
    oi = oj;
  }
  if (oi != on)
    return false;
  for (; ni < rank; ni++)
    if (dims[ni] != 1)
      return false;
  /* Size-1 dims: any stride reads the same; keep them regular. */
  int64_t next = 1;
  for (int i = rank - 1; i >= 0; i--) {
    if (dims[i] == 1)
      strides[i] = next;
    else
      next = strides[i] * dims[i];
  }
  return true;
}

bool mb__dn_md_same(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b) {
  if (dnnl_memory_desc_equal(a, b))
    return true;
  return a->data_type == b->data_type && mb__dn_md_is_plain(a) &&
         mb__dn_md_is_plain(b) &&
         dims_equal(a->ndims, a->dims, b->ndims, b->dims);
}

/* ---- buffers and memories ----------------------------------------------- */

int mb__dn_buf_new(lctx *l, dn_buf_kind kind, int slot, size_t size) {
  dn_segment *s = l->s;
  if (!mb__dn_grow((void **)&s->bufs, &s->cap_bufs, s->n_bufs, sizeof *s->bufs))
    return -1;
  dn_buffer *b = &s->bufs[s->n_bufs];
  memset(b, 0, sizeof *b);
  b->kind = kind;
  b->slot = slot;
  b->size = size;
  b->busy_until = -1;
  return s->n_bufs++;
}

/* An internal buffer of at least `size` bytes free from the current
 * position until position `until`: the smallest free one that fits, else
 * the largest free one grown, else a new one. */
int mb__dn_buf_take(lctx *l, size_t size, int until) {
  dn_segment *s = l->s;
  int fit = -1, big = -1;
  for (int i = 0; i < s->n_bufs; i++) {
    dn_buffer *b = &s->bufs[i];
    if (b->kind != DN_BUF_INTERNAL || b->busy_until >= l->pos)
      continue;
    if (b->size >= size && (fit < 0 || b->size < s->bufs[fit].size))
      fit = i;
    if (big < 0 || b->size > s->bufs[big].size)
      big = i;
  }
  int i = fit >= 0 ? fit : big;
  if (i < 0 && (i = mb__dn_buf_new(l, DN_BUF_INTERNAL, -1, size)) < 0)
    return -1;
  dn_buffer *b = &s->bufs[i];
  b->size = MB_MAX(b->size, size);
  b->busy_until = MB_MAX(until, l->pos);
  return i;
}

/* A memory object with md on buffer `buf`. CONST buffers have their data
 * already; the others get their address at the end of compile (INTERNAL,
 * SCRATCH) or at each run (INPUT, OUTPUT). */
mb_status mb__dn_mem_new(lctx *l, const dnnl_memory_desc_t *md, int buf,
                         dnnl_memory_t *mem_out) {
  dn_segment *s = l->s;
  dnnl_memory_t mem = NULL;
  dn_buffer *b = &s->bufs[buf];
  if (!mb__dn_grow((void **)&s->mems, &s->cap_mems, s->n_mems,
                   sizeof *s->mems) ||
      !mb__dn_grow((void **)&s->io_mems, &s->cap_io_mems, s->n_io_mems,
                   sizeof *s->io_mems))
    return mb__dn_oom(l);
  DN_TRY(l, dnnl_memory_create(&mem, md, s->engine,
                               b->kind == DN_BUF_CONST ? b->data
                                                       : DNNL_MEMORY_NONE));
  s->mems[s->n_mems].mem = mem;
  s->mems[s->n_mems].buf = buf;
  if (b->kind == DN_BUF_INPUT || b->kind == DN_BUF_OUTPUT)
    s->io_mems[s->n_io_mems++] = s->n_mems;
  s->n_mems++;
  *mem_out = mem;
  return MB_STATUS_OK;
}

/* A reorder step src -> dst. inserted: the engine's own layout or type
 * change, counted as "reorder" in profiles; else the work of the node
 * being lowered (Transpose, Slice, Split). */
mb_status mb__dn_emit_reorder_as(lctx *l, bool inserted, dnnl_memory_t src,
                                 const dnnl_memory_desc_t *src_md,
                                 dnnl_memory_t dst,
                                 const dnnl_memory_desc_t *dst_md) {
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_attr_t attr = NULL;
  mb_status status;
  if ((status = mb__dn_attr_new(l, NULL, NULL, &attr)))
    return status;
  dnnl_status_t st = dnnl_reorder_primitive_desc_create(
      &pd, src_md, l->s->engine, dst_md, l->s->engine, attr);
  dnnl_primitive_attr_destroy(attr);
  if (st != dnnl_success)
    return mb__dn_fail(l, "dnnl_reorder_primitive_desc_create", st);
  int prof = l->prof;
  if (inserted)
    l->prof = l->prof_reorder;
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
  status = mb__dn_emit(l, pd, 2, args);
  l->prof = prof;
  dnnl_primitive_desc_destroy(pd);
  return status;
}

/* An inserted reorder src -> dst with int8 attributes qa (output scales,
 * destination zero point) and a constant source zero point src_zp. */
mb_status mb__dn_emit_reorder_q(lctx *l, dnnl_memory_t src,
                                const dnnl_memory_desc_t *src_md,
                                dnnl_memory_t dst,
                                const dnnl_memory_desc_t *dst_md,
                                const dn_qattr *qa, int32_t src_zp) {
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_attr_t attr = NULL;
  mb_status status;
  if ((status = mb__dn_attr_new(l, NULL, qa, &attr)))
    return status;
  dnnl_status_t st = src_zp ? dnnl_primitive_attr_set_zero_points(
                                  attr, DNNL_ARG_SRC, 1, 0, &src_zp)
                            : dnnl_success;
  if (st == dnnl_success)
    st = dnnl_reorder_primitive_desc_create(&pd, src_md, l->s->engine, dst_md,
                                            l->s->engine, attr);
  dnnl_primitive_attr_destroy(attr);
  if (st != dnnl_success)
    return mb__dn_fail(l, "dnnl_reorder_primitive_desc_create(int8)", st);
  int prof = l->prof;
  l->prof = l->prof_dequantize;
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
  status = mb__dn_emit(l, pd, 2, args);
  l->prof = prof;
  dnnl_primitive_desc_destroy(pd);
  return status;
}

mb_status mb__dn_emit_reorder(lctx *l, dnnl_memory_t src,
                              const dnnl_memory_desc_t *src_md,
                              dnnl_memory_t dst,
                              const dnnl_memory_desc_t *dst_md) {
  return mb__dn_emit_reorder_as(l, true, src, src_md, dst, dst_md);
}

/* Reorders plain float32 `data` (described by src_md) into a new constant
 * buffer laid out as want, at compile time; or borrows data when want
 * describes it already. data: must outlive the segment when borrowed
 * (graph constants do); take: data is mb__aligned_alloc'ed and becomes the
 * segment's (also on failure). */
mb_status mb__dn_const_memory(lctx *l, const dnnl_memory_desc_t *src_md,
                              const void *data, bool take,
                              const dnnl_memory_desc_t *want,
                              dnnl_memory_t *mem_out, int *buf_out) {
  return mb__dn_const_memory_attr(l, src_md, data, take, want, NULL, mem_out,
                                  buf_out);
}

/* mb__dn_const_memory with the reorder's attributes (int8 RNN weights:
 * their quantisation scales), NULL for none. attr: borrowed. */
mb_status mb__dn_const_memory_attr(lctx *l, const dnnl_memory_desc_t *src_md,
                                   const void *data, bool take,
                                   const dnnl_memory_desc_t *want,
                                   const_dnnl_primitive_attr_t attr,
                                   dnnl_memory_t *mem_out, int *buf_out) {
  dn_segment *s = l->s;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_t prim = NULL;
  dnnl_memory_t src = NULL;
  mb_status status = MB_STATUS_OK;
  int b;
  if (mb__dn_md_same(src_md, want)) {
    if ((b = mb__dn_buf_new(l, DN_BUF_CONST, -1, 0)) < 0) {
      if (take)
        mb__aligned_free((void *)data);
      return mb__dn_oom(l);
    }
    s->bufs[b].data = (void *)data;
    s->bufs[b].owned = take;
    if (buf_out)
      *buf_out = b;
    return mb__dn_mem_new(l, want, b, mem_out);
  }
  size_t size = dnnl_memory_desc_get_size(want);
  if ((b = mb__dn_buf_new(l, DN_BUF_CONST, -1, size)) < 0 ||
      !(s->bufs[b].data = mb__aligned_alloc(MB_MAX(size, 1)))) {
    if (take)
      mb__aligned_free((void *)data);
    return mb__dn_oom(l);
  }
  s->bufs[b].owned = true;
  memset(s->bufs[b].data, 0, size);
  if (buf_out)
    *buf_out = b;
  DN_GOTO(l, dnnl_memory_create(&src, src_md, s->engine, (void *)data));
  MB_TRY_GOTO(mb__dn_mem_new(l, want, b, mem_out));
  DN_GOTO(l, dnnl_reorder_primitive_desc_create(&pd, src_md, s->engine, want,
                                                s->engine, attr));
  DN_GOTO(l, dnnl_primitive_create(&prim, pd));
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, *mem_out}};
  DN_GOTO(l, dnnl_primitive_execute(prim, s->stream, 2, args));
  DN_GOTO(l, dnnl_stream_wait(s->stream));
done:
  if (prim)
    dnnl_primitive_destroy(prim);
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (src)
    dnnl_memory_destroy(src);
  if (take)
    mb__aligned_free((void *)data);
  return status;
}

/* ---- values ------------------------------------------------------------- */

void mb__dn_value_dims(lctx *l, int v, int *rank, int64_t *dims) {
  if (!mb__engine_value_shape(l->eg, v, rank, dims, NULL))
    *rank = 0;
  if (*rank == 0) {
    *rank = 1;
    dims[0] = 1;
  }
}

mb_status mb__dn_rep_add(lctx *l, int v, const dnnl_memory_desc_t *md,
                         dnnl_memory_t mem, int buf, dn_rep **out) {
  dn_val *x = &l->vals[v];
  int i = x->n_reps < DN_MAX_REPS ? x->n_reps++ : DN_MAX_REPS - 1;
  x->rep[i].md = *md;
  x->rep[i].mem = mem;
  x->rep[i].buf = buf;
  x->rep[i].qscale = 0.0f;
  x->rep[i].qzp = 0;
  if (out)
    *out = &x->rep[i];
  return MB_STATUS_OK;
}

/* The first representation of a constant: its float32 data, plain. */
mb_status mb__dn_const_rep(lctx *l, int v) {
  const mb_tensor *k = mb__engine_constant(l->eg, v);
  dnnl_memory_desc_t md;
  dnnl_memory_t mem;
  int rank;
  int64_t dims[MB_MAX_RANK];
  mb_status status;
  if (!k || k->dtype != MB_DTYPE_FLOAT)
    return mb__dn_internal_error(l, "a value is read before it is computed");
  mb__dn_value_dims(l, v, &rank, dims);
  DN_TRY(l, mb__dn_md_plain(&md, rank, dims, dnnl_f32));
  int buf;
  if ((status = mb__dn_const_memory(l, &md, k->data, false, &md, &mem, &buf)))
    return status;
  return mb__dn_rep_add(l, v, &md, mem, buf, NULL);
}

/* A new buffer-backed memory for value v laid out as md: the caller's
 * output tensor when v is a segment output and md is its plain float32
 * form, else an internal buffer kept until v's last reader. */
mb_status mb__dn_value_define(lctx *l, int v, const dnnl_memory_desc_t *md,
                              dn_rep **out) {
  dn_val *x = &l->vals[v];
  dnnl_memory_t mem;
  mb_status status;
  int rank, buf = -1;
  int64_t dims[MB_MAX_RANK];
  mb__dn_value_dims(l, v, &rank, dims);
  if (x->out_slot >= 0 && !x->out_done && md->data_type == dnnl_f32 &&
      mb__dn_md_is_plain(md) && dims_equal(md->ndims, md->dims, rank, dims)) {
    for (int i = 0; i < l->s->n_bufs && buf < 0; i++)
      if (l->s->bufs[i].kind == DN_BUF_OUTPUT &&
          l->s->bufs[i].slot == x->out_slot)
        buf = i;
    x->out_done = buf >= 0;
  }
  if (buf < 0 && (buf = mb__dn_buf_take(l, dnnl_memory_desc_get_size(md),
                                        x->last_use)) < 0)
    return mb__dn_oom(l);
  if ((status = mb__dn_mem_new(l, md, buf, &mem)))
    return status;
  return mb__dn_rep_add(l, v, md, mem, buf, out);
}

/* Value v as a view of buffer buf (a reshape, or an in-place result). */
mb_status mb__dn_value_alias(lctx *l, int v, const dnnl_memory_desc_t *md,
                             int buf, dn_rep **out) {
  dnnl_memory_t mem;
  mb_status status;
  dn_buffer *b = &l->s->bufs[buf];
  if (b->kind == DN_BUF_INTERNAL)
    b->busy_until = MB_MAX(b->busy_until, l->vals[v].last_use);
  if ((status = mb__dn_mem_new(l, md, buf, &mem)))
    return status;
  return mb__dn_rep_add(l, v, md, mem, buf, out);
}

static bool rep_fits(const dn_rep *r, dn_want want, dnnl_data_type_t dt,
                     const dnnl_memory_desc_t *md) {
  switch (want) {
  case DN_WANT_DTYPE:
    /* Views (windows of other values) only for readers that ask for them
     * by their md (matmul operands, further views). */
    return r->md.data_type == dt && mb__dn_md_is_dense(&r->md);
  case DN_WANT_PLAIN:
    return r->md.data_type == dt && mb__dn_md_is_plain(&r->md);
  case DN_WANT_EXACT:
    return mb__dn_md_same(&r->md, md);
  }
  return false;
}

/* Value v in the wanted form, reordered (once, then cached) when it has
 * none that fits; constants are converted at compile time. *out: borrowed
 * from l until the next value_get of v. */
mb_status mb__dn_value_get(lctx *l, int v, dn_want want, dnnl_data_type_t dt,
                           const dnnl_memory_desc_t *exact, dn_rep **out) {
  dn_val *x = &l->vals[v];
  dnnl_memory_desc_t md;
  dnnl_memory_t mem;
  mb_status status;
  int rank;
  int64_t dims[MB_MAX_RANK];
  if (x->n_reps == 0 && (status = mb__dn_const_rep(l, v)))
    return status;
  for (int i = 0; i < x->n_reps; i++) {
    if (rep_fits(&x->rep[i], want, dt, exact)) {
      *out = &x->rep[i];
      return MB_STATUS_OK;
    }
  }
  mb__dn_value_dims(l, v, &rank, dims);
  if (want == DN_WANT_EXACT) {
    md = *exact;
  } else if (want == DN_WANT_DTYPE && !mb__dn_md_is_plain(&x->rep[0].md) &&
             mb__dn_md_is_dense(&x->rep[0].md)) {
    md = x->rep[0].md; /* the same blocking, another element type */
    md.data_type = dt;
  } else {
    DN_TRY(l, mb__dn_md_plain(&md, rank, dims, dt));
  }
  const dn_rep *src = &x->rep[0];
  if (mb__engine_constant(l->eg, v)) {
    int cbuf;
    if ((status = mb__dn_const_memory(l, &src->md,
                                      mb__engine_constant(l->eg, v)->data,
                                      false, &md, &mem, &cbuf)))
      return status;
    return mb__dn_rep_add(l, v, &md, mem, cbuf, out);
  }
  int buf = mb__dn_buf_take(l, dnnl_memory_desc_get_size(&md), x->last_use);
  if (buf < 0)
    return mb__dn_oom(l);
  if ((status = mb__dn_mem_new(l, &md, buf, &mem)))
    return status;
  if (src->qscale != 0.0f && md.data_type != dnnl_u8 &&
      md.data_type != dnnl_s8) {
    /* int8 data read as float: dequantised on the way. */
    dn_qattr qa = {1, 0, &src->qscale, false, false, 0};
    status =
        mb__dn_emit_reorder_q(l, src->mem, &src->md, mem, &md, &qa, src->qzp);
  } else {
    status = mb__dn_emit_reorder(l, src->mem, &src->md, mem, &md);
  }
  if (status)
    return status;
  dn_rep *added;
  if ((status = mb__dn_rep_add(l, v, &md, mem, buf, &added)))
    return status;
  if (md.data_type == src->md.data_type) {
    added->qscale = src->qscale;
    added->qzp = src->qzp;
  }
  if (out)
    *out = added;
  return MB_STATUS_OK;
}

/* Can a primitive at the current position write over r (in place)? Only
 * an internal buffer none of whose values is read later, and not the
 * buffer of another operand of the same primitive (`other`, may be -1). */
bool mb__dn_can_overwrite(lctx *l, const dn_rep *r, int other_buf) {
  const dn_buffer *b = &l->s->bufs[r->buf];
  return b->kind == DN_BUF_INTERNAL && b->busy_until <= l->pos &&
         r->buf != other_buf;
}

/* Output value v, computed from src in place when src dies here, else
 * into a new memory of the same md. */
mb_status mb__dn_value_define_like(lctx *l, int v, const dn_rep *src,
                                   int other_buf, dn_rep **out) {
  dn_val *x = &l->vals[v];
  if (mb__dn_can_overwrite(l, src, other_buf) &&
      !(x->out_slot >= 0 && src->md.data_type == dnnl_f32 &&
        mb__dn_md_is_plain(&src->md)))
    return mb__dn_value_alias(l, v, &src->md, src->buf, out);
  dnnl_memory_desc_t md = src->md;
  if (!mb__dn_md_is_dense(&md)) {
    /* A window of another value: the result gets a buffer of its own. */
    int rank;
    int64_t dims[MB_MAX_RANK];
    mb__dn_value_dims(l, v, &rank, dims);
    DN_TRY(l, mb__dn_md_plain(&md, rank, dims, src->md.data_type));
  }
  return mb__dn_value_define(l, v, &md, out);
}

/* A segment output computed by the node just lowered and not written into
 * the caller's tensor directly: reorder it there (plain float32) now. */
mb_status mb__dn_finish_output(lctx *l, int v) {
  dn_val *x = &l->vals[v];
  dnnl_memory_desc_t md;
  dnnl_memory_t mem;
  mb_status status;
  int rank, buf = -1;
  int64_t dims[MB_MAX_RANK];
  if (v < 0 || x->out_slot < 0 || x->out_done || x->n_reps == 0)
    return MB_STATUS_OK;
  for (int i = 0; i < l->s->n_bufs && buf < 0; i++)
    if (l->s->bufs[i].kind == DN_BUF_OUTPUT &&
        l->s->bufs[i].slot == x->out_slot)
      buf = i;
  if (buf < 0)
    return mb__dn_internal_error(l, "segment output without a buffer");
  mb__dn_value_dims(l, v, &rank, dims);
  DN_TRY(l, mb__dn_md_plain(&md, rank, dims, dnnl_f32));
  if ((status = mb__dn_mem_new(l, &md, buf, &mem)) ||
      (status = mb__dn_emit_reorder(l, x->rep[0].mem, &x->rep[0].md, mem, &md)))
    return status;
  x->out_done = true;
  return MB_STATUS_OK;
}

/* A view of r with another md of the same bytes (rank padding, 2-D
 * flattening). */
mb_status mb__dn_rep_view(lctx *l, const dn_rep *r,
                          const dnnl_memory_desc_t *md, dnnl_memory_t *out) {
  return mb__dn_mem_new(l, md, r->buf, out);
}

/* Segment inputs and outputs: boundary buffers and their first memories. */
mb_status mb__dn_io_init(lctx *l) {
  dn_segment *s = l->s;
  const mb_segment_desc *d = l->d;
  s->n_inputs = d->n_inputs;
  s->n_outputs = d->n_outputs;
  s->inputs = calloc((size_t)d->n_inputs + 1, sizeof *s->inputs);
  s->outputs = calloc((size_t)d->n_outputs + 1, sizeof *s->outputs);
  if (!s->inputs || !s->outputs)
    return mb__dn_oom(l);
  for (int i = 0; i < d->n_inputs; i++) {
    dn_io *io = &s->inputs[i];
    const mb_shape_info *si = &l->eg->shapes[d->inputs[i]];
    dnnl_memory_desc_t md;
    dnnl_memory_t mem;
    mb_status status;
    int buf, rank;
    int64_t dims[MB_MAX_RANK];
    io->value = d->inputs[i];
    if (!si->known || si->dtype != MB_DTYPE_FLOAT)
      continue; /* shape tensors and the like: never read as data */
    io->used = true;
    io->rank = si->rank;
    memcpy(io->dims, si->dims, (size_t)si->rank * sizeof *si->dims);
    io->nbytes = (size_t)mb__engine_numel(si->rank, si->dims) * sizeof(float);
    mb__dn_value_dims(l, io->value, &rank, dims);
    DN_TRY(l, mb__dn_md_plain(&md, rank, dims, dnnl_f32));
    if ((buf = mb__dn_buf_new(l, DN_BUF_INPUT, i, io->nbytes)) < 0)
      return mb__dn_oom(l);
    if ((status = mb__dn_mem_new(l, &md, buf, &mem)) ||
        (status = mb__dn_rep_add(l, io->value, &md, mem, buf, NULL)))
      return status;
  }
  for (int i = 0; i < d->n_outputs; i++) {
    dn_io *io = &s->outputs[i];
    int v = d->outputs[i];
    const mb_shape_info *si = &l->eg->shapes[v];
    io->value = v;
    io->constant = mb__engine_constant(l->eg, v);
    if (io->constant) {
      io->rank = io->constant->rank;
      memcpy(io->dims, io->constant->dims, (size_t)io->rank * sizeof *io->dims);
      io->nbytes = io->constant->nbytes;
      continue;
    }
    if (!si->known || si->dtype != MB_DTYPE_FLOAT)
      return mb__dn_internal_error(l,
                                   "a segment output is not a float32 tensor");
    io->rank = si->rank;
    memcpy(io->dims, si->dims, (size_t)si->rank * sizeof *si->dims);
    io->nbytes = (size_t)mb__engine_numel(si->rank, si->dims) * sizeof(float);
    if (l->vals[v].out_slot >= 0)
      return mb__dn_internal_error(
          l, "a value is listed twice as a segment output");
    l->vals[v].out_slot = i;
    if (mb__dn_buf_new(l, DN_BUF_OUTPUT, i, io->nbytes) < 0)
      return mb__dn_oom(l);
  }
  return MB_STATUS_OK;
}

/* Allocates the internal buffers and the scratchpad, and points their
 * memories at them. */
mb_status mb__dn_buffers_finish(lctx *l) {
  dn_segment *s = l->s;
  for (int i = 0; i < s->n_bufs; i++) {
    dn_buffer *b = &s->bufs[i];
    if (b->kind != DN_BUF_INTERNAL && b->kind != DN_BUF_SCRATCH)
      continue;
    if (!(b->data = mb__aligned_alloc(MB_MAX(b->size, 1))))
      return mb__dn_oom(l);
    b->owned = true;
    /* Blocked layouts' padding must read as zero. */
    memset(b->data, 0, b->size);
  }
  for (int i = 0; i < s->n_mems; i++) {
    dn_buffer *b = &s->bufs[s->mems[i].buf];
    if (b->kind == DN_BUF_INTERNAL || b->kind == DN_BUF_SCRATCH)
      DN_TRY(l, dnnl_memory_set_data_handle(s->mems[i].mem, b->data));
  }
  return MB_STATUS_OK;
}

#endif /* MB_HAVE_DNNL */
