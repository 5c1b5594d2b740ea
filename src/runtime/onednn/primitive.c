/* oneDNN engine: primitive creation. Attributes (post-ops, scales, zero
 * points, the scratchpad), the choice between the implementations oneDNN
 * offers for a descriptor (a reference kernel refused while another may
 * follow), the kernel name and data types a profile line shows, and the
 * segment's steps: each primitive emitted with its arguments and
 * profile entry. */
#ifdef MB_HAVE_DNNL

#include "runtime/onednn/internal.h"

#include <oneapi/dnnl/dnnl_debug.h>

/* ---- profile entries and steps ------------------------------------------ */

int mb__dn_prof_new(lctx *l, const char *op_type, const char *name) {
  dn_segment *s = l->s;
  if (!mb__dn_grow((void **)&s->prof, &s->cap_prof, s->n_prof, sizeof *s->prof))
    return -1;
  mb_engine_node_time *t = &s->prof[s->n_prof];
  memset(t, 0, sizeof *t);
  snprintf(t->op_type, sizeof t->op_type, "%s", op_type);
  snprintf(t->name, sizeof t->name, "%s", name ? name : "");
  return s->n_prof++;
}

/* Attributes every primitive gets: the scratchpad is ours (one buffer
 * shared by the segment, no allocation while running). post_ops: NULL or
 * borrowed. qa: int8 attributes, or NULL. */
mb_status mb__dn_attr_new(lctx *l, const_dnnl_post_ops_t post_ops,
                          const dn_qattr *qa, dnnl_primitive_attr_t *attr_out) {
  dnnl_primitive_attr_t attr = NULL;
  dnnl_status_t st;
  *attr_out = NULL;
  DN_TRY(l, dnnl_primitive_attr_create(&attr));
  st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (st == dnnl_success && post_ops)
    st = dnnl_primitive_attr_set_post_ops(attr, post_ops);
  if (st == dnnl_success && qa && qa->n_scales > 0)
    st = dnnl_primitive_attr_set_output_scales(attr, qa->n_scales, qa->mask,
                                               qa->scales);
  if (st == dnnl_success && qa && qa->src_zp) {
    const int32_t runtime = DNNL_RUNTIME_S32_VAL;
    st =
        dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &runtime);
  }
  if (st == dnnl_success && qa && qa->dst_zp) {
    const int32_t zp = qa->dst_zp_value;
    st = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_DST, 1, 0, &zp);
  }
  if (st != dnnl_success) {
    dnnl_primitive_attr_destroy(attr);
    return mb__dn_fail(l, "dnnl_primitive_attr_set_post_ops", st);
  }
  *attr_out = attr;
  return MB_STATUS_OK;
}

/* primitive_desc_create for op_desc with attributes (post_ops and qa may
 * be NULL). Returns the dnnl status: callers try alternatives on failure. */
dnnl_status_t mb__dn_pd_try_q(lctx *l, const_dnnl_op_desc_t op_desc,
                              const_dnnl_post_ops_t post_ops,
                              const dn_qattr *qa,
                              dnnl_primitive_desc_t *pd_out) {
  dnnl_primitive_attr_t attr = NULL;
  mb_error save = *l->err;
  *pd_out = NULL;
  if (mb__dn_attr_new(l, post_ops, qa, &attr)) {
    *l->err = save;
    return dnnl_out_of_memory;
  }
  dnnl_status_t st =
      dnnl_primitive_desc_create(pd_out, op_desc, attr, l->s->engine, NULL);
  dnnl_primitive_attr_destroy(attr);
  if (st != dnnl_success)
    *pd_out = NULL;
  return st;
}

dnnl_status_t mb__dn_pd_try(lctx *l, const_dnnl_op_desc_t op_desc,
                            const_dnnl_post_ops_t post_ops,
                            dnnl_primitive_desc_t *pd_out) {
  return mb__dn_pd_try_q(l, op_desc, post_ops, NULL, pd_out);
}

/* Is pd one of oneDNN's batch-reduce GEMM kernels ("brg:..."), its
 * fastest for matmul? */
bool mb__dn_pd_is_brgemm(const_dnnl_primitive_desc_t pd) {
  const char *impl = NULL;
  return dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) ==
             dnnl_success &&
         impl && strncmp(impl, "brg", 3) == 0;
}

/* Is pd oneDNN's reference (naive C++) implementation? */
static bool pd_is_ref(const_dnnl_primitive_desc_t pd) {
  const char *impl = NULL;
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) !=
          dnnl_success ||
      !impl)
    return false;
  return strncmp(impl, "ref", 3) == 0;
}

/* After a successful attempt: keep *pd when it is an optimised
 * implementation or `last` is set; otherwise drop it so that the caller
 * tries its next, usually cheaper-looking but faster, alternative (fewer
 * post-ops, a plain layout). A reference matmul with a broadcast binary
 * post-op runs 100x slower than the optimised one without it. */
bool mb__dn_pd_accept(dnnl_primitive_desc_t *pd, bool last) {
  if (!*pd)
    return false;
  if (last || !pd_is_ref(*pd))
    return true;
  dnnl_primitive_desc_destroy(*pd);
  *pd = NULL;
  return false;
}

const dnnl_memory_desc_t *mb__dn_pd_md(const_dnnl_primitive_desc_t pd,
                                       dnnl_query_t what) {
  return dnnl_primitive_desc_query_md(pd, what, 0);
}

static int64_t md_numel(const dnnl_memory_desc_t *md) {
  return md ? mb__engine_numel(md->ndims, md->dims) : 0;
}

/* Rough work of a primitive: multiply-adds for convolution and matmul,
 * elements touched for the others. */
static double pd_work(const_dnnl_primitive_desc_t pd) {
  dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
  const dnnl_memory_desc_t *dst = mb__dn_pd_md(pd, dnnl_query_dst_md);
  const dnnl_memory_desc_t *src = mb__dn_pd_md(pd, dnnl_query_src_md);
  const dnnl_memory_desc_t *w = mb__dn_pd_md(pd, dnnl_query_weights_md);
  double out = (double)md_numel(dst), in = (double)md_numel(src);
  dnnl_primitive_desc_query(pd, dnnl_query_primitive_kind, 0, &kind);
  if (kind == dnnl_convolution && dst && w && dst->dims[1] > 0)
    return out * (double)md_numel(w) / (double)dst->dims[1];
  if (kind == dnnl_matmul && w && w->ndims >= 2)
    return out * (double)w->dims[w->ndims - 2];
  return MB_MAX(out, in);
}

/* "brg:avx512_core_vnni u8 x s8 -> f32": pd's implementation and the
 * data types of its source, weights (when it has them) and destination,
 * into out (size bytes). */
static void pd_kernel(const_dnnl_primitive_desc_t pd, char *out, size_t size) {
  const char *impl = NULL;
  const dnnl_memory_desc_t *src = mb__dn_pd_md(pd, dnnl_query_src_md);
  dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
  dnnl_primitive_desc_query(pd, dnnl_query_primitive_kind, 0, &kind);
  /* Weights of a product (a normalization's are its scale and shift). */
  const dnnl_memory_desc_t *w =
      kind == dnnl_matmul || kind == dnnl_convolution ||
              kind == dnnl_deconvolution || kind == dnnl_inner_product ||
              kind == dnnl_rnn
          ? mb__dn_pd_md(pd, dnnl_query_weights_md)
          : NULL;
  const dnnl_memory_desc_t *dst = mb__dn_pd_md(pd, dnnl_query_dst_md);
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) !=
          dnnl_success ||
      !impl)
    impl = "?";
  if (!src || !dst || src->ndims == 0 || dst->ndims == 0)
    snprintf(out, size, "%s", impl);
  else if (w && w->ndims > 0)
    snprintf(out, size, "%s %s x %s -> %s", impl, dnnl_dt2str(src->data_type),
             dnnl_dt2str(w->data_type), dnnl_dt2str(dst->data_type));
  else
    snprintf(out, size, "%s %s -> %s", impl, dnnl_dt2str(src->data_type),
             dnnl_dt2str(dst->data_type));
}

/* Below this much work a primitive runs on one thread: waking a second
 * OpenMP thread costs more than it saves (tiny transformers ran 1.6x
 * slower on 2 threads than on 1). */
#define DN_PARALLEL_MIN_WORK ((double)(1 << 16))

/* Creates the primitive of pd and appends it as a step with args (and the
 * shared scratchpad when it needs one). pd stays the caller's. */
mb_status mb__dn_emit(lctx *l, const_dnnl_primitive_desc_t pd, int n_args,
                      const dnnl_exec_arg_t *args) {
  dn_segment *s = l->s;
  dnnl_primitive_t prim = NULL;
  dnnl_memory_t scratch = NULL;
  mb_status status;
  if (n_args + 1 > DN_MAX_ARGS)
    return mb__dn_internal_error(l, "too many primitive arguments");
  if (!mb__dn_grow((void **)&s->steps, &s->cap_steps, s->n_steps,
                   sizeof *s->steps))
    return mb__dn_oom(l);
  const dnnl_memory_desc_t *smd = mb__dn_pd_md(pd, dnnl_query_scratchpad_md);
  size_t ssize = smd ? dnnl_memory_desc_get_size(smd) : 0;
  if (ssize > 0) {
    if (s->scratch_buf < 0 &&
        (s->scratch_buf = mb__dn_buf_new(l, DN_BUF_SCRATCH, -1, 0)) < 0)
      return mb__dn_oom(l);
    dn_buffer *b = &s->bufs[s->scratch_buf];
    b->size = MB_MAX(b->size, ssize);
    if ((status = mb__dn_mem_new(l, smd, s->scratch_buf, &scratch)))
      return status;
  }
  DN_TRY(l, dnnl_primitive_create(&prim, pd));
  /* A node's line names its (first) kernel; the summed lines (reorders,
   * quantise and dequantise steps) would name only one of many. */
  if (l->prof >= 0 && l->prof != l->prof_reorder &&
      l->prof != l->prof_quantize && l->prof != l->prof_dequantize &&
      !s->prof[l->prof].kernel[0])
    pd_kernel(pd, s->prof[l->prof].kernel, sizeof s->prof[l->prof].kernel);
  dn_step *step = &s->steps[s->n_steps++];
  memset(step, 0, sizeof *step);
  step->kind = DN_STEP_PRIMITIVE;
  step->prim = prim;
  step->prof = l->prof;
  step->threads = pd_work(pd) < DN_PARALLEL_MIN_WORK ? 1 : s->threads;
  memcpy(step->args, args, (size_t)n_args * sizeof *args);
  step->n_args = n_args;
  if (scratch)
    step->args[step->n_args++] =
        (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, scratch};
  return MB_STATUS_OK;
}

#endif /* MB_HAVE_DNNL */
