/* oneDNN engine: int8. How a calibrated Conv, Gemm or MatMul maps onto
 * an int8 primitive: the calibration entries it needs, the weights
 * quantised as the static quantiser stores them, the output scales that
 * dequantise the int32 accumulator, the bias in the accumulator's scale,
 * and the reorder that quantises an activation once. */
#ifdef MB_HAVE_DNNL

#include "runtime/onednn/internal.h"

/* oneDNN 2.x adds an int8 primitive's bias to the int32 accumulator before
 * the output scales (dst = oscale * (acc + bias)), so a float bias goes in
 * divided by the output scale of its channel. (3.x changed this.) */
#define DN_INT8_BIAS_BEFORE_SCALES 1

/* The calibration entries that make a Conv, Gemm or MatMul reading value
 * x with constant weight w (of `channels` output channels along `axis` of
 * w as stored) run in int8: x's activation range and w's int8 symmetric
 * scales (engine_common.c reads both). False (fp32 then) for no entry or a
 * form not taken here. */
bool mb__dn_q_entries(lctx *l, int x, int w, int axis, int64_t channels,
                      const mb_quant_param **xq, const mb_quant_param **wq) {
  if (!l->quant || x < 0 || w < 0 || mb__engine_constant(l->eg, x))
    return false;
  *xq = mb__engine_quant_activation(l->eg, l->quant, x);
  *wq = mb__engine_quant_weight(l->eg, l->quant, w, axis, channels);
  return *xq && *wq;
}

dnnl_data_type_t mb__dn_q_dt(const mb_quant_param *xq) {
  return xq->dtype == MB_DTYPE_UINT8 ? dnnl_u8 : dnnl_s8;
}

/* w (float32) as int8 with wq's scales along `axis`: clamp(round(w /
 * scale), -127, 127), as the static quantiser stores it. Aligned; NULL on
 * OOM. */
int8_t *mb__dn_q_weights(const mb_tensor *w, const mb_quant_param *wq,
                         int axis) {
  int64_t inner = 1, ch = wq->channels > 1 ? w->dims[axis] : 1;
  for (int d = axis + 1; d < w->rank; d++)
    inner *= w->dims[d];
  int8_t *q = mb__aligned_alloc((size_t)MB_MAX(w->numel, 1));
  const float *x = w->data;
  for (int64_t i = 0; q && i < w->numel; i++)
    q[i] = mb__engine_quantize_weight(
        x[i], mb__engine_weight_scale(wq, ch > 1 ? (i / inner) % ch : 0));
  return q;
}

/* Output scales x_scale * w_scale[c] (times alpha): one per output
 * channel, or one. */
float *mb__dn_q_out_scales(const mb_quant_param *xq, const mb_quant_param *wq,
                           float alpha) {
  float *o = malloc((size_t)wq->channels * sizeof *o);
  for (int64_t c = 0; o && c < wq->channels; c++)
    o[c] = alpha * xq->scales[0] * wq->scales[c];
  return o;
}

/* A float bias (n values, or NULL) for an int8 primitive with output
 * scales oscales (n_scales of them). Aligned; NULL on OOM. */
float *mb__dn_q_bias(const float *bias, int64_t n, const float *oscales,
                     int64_t n_scales) {
  float *b = mb__aligned_alloc((size_t)n * sizeof *b);
  for (int64_t c = 0; b && c < n; c++) {
    float v = bias ? bias[c] : 0.0f;
    b[c] = DN_INT8_BIAS_BEFORE_SCALES ? v / oscales[n_scales > 1 ? c : 0] : v;
  }
  return b;
}

/* Value v quantised with xq into the layout `want` (u8 or s8): a reorder
 * with output scale 1 / x_scale and the destination zero point, once,
 * then cached like any representation. */
mb_status mb__dn_value_get_q(lctx *l, int v, const dnnl_memory_desc_t *want,
                             const mb_quant_param *xq, dn_rep **out) {
  dn_val *x = &l->vals[v];
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_memory_t mem;
  mb_status status;
  float scale = xq->scales[0];
  int32_t zp = xq->zero_points[0];
  if (x->n_reps == 0 && mb__engine_constant(l->eg, v) &&
      (status = mb__dn_const_rep(l, v)))
    return status;
  for (int i = 0; i < x->n_reps; i++)
    if (mb__dn_md_same(&x->rep[i].md, want) && x->rep[i].qscale == scale &&
        x->rep[i].qzp == zp) {
      *out = &x->rep[i];
      return MB_STATUS_OK;
    }
  if (x->n_reps == 0)
    return mb__dn_internal_error(l, "a value is read before it is computed");
  const dn_rep *src = &x->rep[0];
  if (src->qscale != 0.0f && src->qscale == scale && src->qzp == zp &&
      src->md.data_type == want->data_type) {
    /* Written in int8 already (a requantising producer): a layout change
     * at most. */
    dn_rep *r;
    if ((status =
             mb__dn_value_get(l, v, DN_WANT_EXACT, want->data_type, want, &r)))
      return status;
    *out = r;
    return MB_STATUS_OK;
  }
  if (src->qscale != 0.0f) {
    /* int8 with other parameters: through float. */
    dn_rep *f;
    if ((status = mb__dn_value_get(l, v, DN_WANT_DTYPE, dnnl_f32, NULL, &f)))
      return status;
    src = f;
  }
  float inv = 1.0f / scale;
  dn_qattr qa = {1, 0, &inv, false, zp != 0, zp};
  int buf = mb__dn_buf_take(l, dnnl_memory_desc_get_size(want), x->last_use);
  if (buf < 0)
    return mb__dn_oom(l);
  if ((status = mb__dn_mem_new(l, want, buf, &mem)) ||
      (status = mb__dn_attr_new(l, NULL, &qa, &attr)))
    return status;
  dnnl_status_t st = dnnl_reorder_primitive_desc_create(
      &pd, &src->md, l->s->engine, want, l->s->engine, attr);
  dnnl_primitive_attr_destroy(attr);
  if (st != dnnl_success)
    return mb__dn_fail(l, "dnnl_reorder_primitive_desc_create(quantise)", st);
  int prof = l->prof;
  l->prof = l->prof_quantize;
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, src->mem}, {DNNL_ARG_TO, mem}};
  status = mb__dn_emit(l, pd, 2, args);
  l->prof = prof;
  dnnl_primitive_desc_destroy(pd);
  if (status || (status = mb__dn_rep_add(l, v, want, mem, buf, out)))
    return status;
  (*out)->qscale = scale;
  (*out)->qzp = zp;
  return MB_STATUS_OK;
}

bool mb__dn_q_act(lctx *l, int v, const dn_qact *source, dn_qact *out) {
  bool weights = source != NULL;
  const mb_quant_param *e =
      l->quant && !mb__engine_constant(l->eg, v)
          ? mb__engine_quant_activation(l->eg, l->quant, v)
          : NULL;
  if (!e || !isfinite(e->min) || !isfinite(e->max) || !(e->max >= e->min))
    return false;
  double lo = MB_MIN(e->min, 0.0), hi = MB_MAX(e->max, 0.0);
  bool u8 = !weights && lo >= 0.0;
  /* The operand read as weights has the weights' width (7 bits where the
   * CPU's products would saturate: quantize.h), by the source's sign. */
  double qmax = weights
                    ? mb__quant_weight_qmax(l->quant->weights,
                                            source->p.dtype != MB_DTYPE_UINT8)
                    : 127.0;
  double scale = u8 ? hi / 255.0 : MB_MAX(-lo, hi) / qmax;
  if (!(scale > 0.0) || !((float)scale > 0.0f) || !isfinite((float)scale))
    return false;
  memset(out, 0, sizeof *out);
  out->scale = (float)scale;
  out->p.kind = MB_QUANT_KIND_ACTIVATION;
  out->p.dtype = u8 ? MB_DTYPE_UINT8 : MB_DTYPE_INT8;
  out->p.min = lo;
  out->p.max = hi;
  out->p.axis = -1;
  out->p.channels = 1;
  out->p.scales = &out->scale;
  out->p.zero_points = &out->zero_point;
  return true;
}

bool mb__dn_q_act_source(lctx *l, int v, dn_qact *out) {
  int pos[8];
  dn_qact w;
  int n = mb__segment_readers(l->d, v, pos, 8);
  if (!l->quant || l->vals[v].out_slot >= 0 || n < 1 || n > 8 ||
      !mb__dn_q_act(l, v, NULL, out))
    return false;
  for (int i = 0; i < n; i++) {
    const mb_node *m = node_at(l, pos[i]);
    int gi = l->group_of[pos[i]];
    if (!op_is(m, "MatMul") || m->n_inputs != 2 || m->inputs[0] != v ||
        m->inputs[1] == v || (gi >= 0 && l->groups[gi].head != pos[i]) ||
        (gi >= 0 && (l->groups[gi].in_value[0] >= 0 ||
                     l->groups[gi].in_value[1] >= 0 || l->groups[gi].n_sib)) ||
        !mb__dn_q_act(l, m->inputs[1], out, &w))
      return false;
  }
  return true;
}

/* The run-time source zero point argument of an int8 primitive, appended
 * to args when xq has a non-zero one. */
mb_status mb__dn_q_zp_arg(lctx *l, const mb_quant_param *xq,
                          dnnl_exec_arg_t *args, int *n_args) {
  if (xq->zero_points[0] == 0)
    return MB_STATUS_OK;
  int32_t *zp = mb__aligned_alloc(sizeof *zp);
  dnnl_memory_desc_t md;
  dnnl_memory_t mem;
  int64_t one = 1;
  mb_status status;
  if (!zp)
    return mb__dn_oom(l);
  *zp = xq->zero_points[0];
  DN_TRY(l, mb__dn_md_plain(&md, 1, &one, dnnl_s32));
  if ((status = mb__dn_const_memory(l, &md, zp, true, &md, &mem, NULL)))
    return status;
  args[(*n_args)++] =
      (dnnl_exec_arg_t){DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, mem};
  return MB_STATUS_OK;
}

#endif /* MB_HAVE_DNNL */
