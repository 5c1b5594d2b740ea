/* oneDNN engine: ONNX RNN, GRU and LSTM nodes as oneDNN's vanilla RNN,
 * GRU (linear-before-reset GRU when linear_before_reset = 1) and LSTM
 * primitives, fp32 or bf16, and int8 where oneDNN has an int8 form.
 *
 * INT8: X, the initial h and the h the cell writes share one u8 scale and
 * shift (oneDNN quantises them alike): the union of X's calibrated range,
 * initial_h's, and Y's and Y_h's (else [-1, 1]). W and R share one s8
 * scale per gate and hidden unit, from their own values (the static
 * quantiser leaves recurrent weights alone). Y comes out float32, the
 * final h as u8, dequantised on its way to Y_h. A
 * node with no int8 form (see int8_get) fails the int8 compile with
 * MB_STATUS_UNSUPPORTED and the engine's node_precision names it, so the
 * hybrid layer runs it in an fp32 segment of its own.
 *
 * Weights are re-laid out once, at compile time: ONNX keeps W as
 * [directions, gates * hidden, input] in gate order i, o, f, c (LSTM) or
 * z, r, h (GRU); oneDNN wants [layers, directions, input, gates, hidden]
 * in order i, f, c, o (LSTM) or u, r, o (GRU, u = z), both biases summed
 * into one (except the linear-before-reset GRU's recurrent bias of the
 * candidate gate, which oneDNN keeps as a fourth gate), and peepholes in
 * order i, f, o where ONNX has i, o, f. A constant reorder then gives the
 * primitive its preferred (blocked, possibly bf16) layout.
 *
 * What oneDNN cannot express stays on the reference interpreter: other
 * activations than the defaults (vanilla RNN: Tanh, Relu or Sigmoid),
 * clip, input_forget, sequence_lens that end any sequence early, and
 * weights that are not constants.
 *
 * ONNX's Y is [seq, directions, batch, hidden] (layout 0) where oneDNN's
 * dst_layer is [seq, batch, directions * hidden]: one sequence writes Y
 * directly; two go through a buffer and a reorder that moves the
 * direction axis. Layout 1 ([batch, seq, ...]) is oneDNN's ntc format, so
 * X and Y need no copy; its initial and final states are reordered. */
#ifdef MB_HAVE_DNNL

#include "runtime/onednn/internal.h"

typedef enum dn_rnn_kind { DN_RNN, DN_GRU, DN_LSTM } dn_rnn_kind;

typedef struct dn_rnn_params {
  dn_rnn_kind kind;
  int gates; /* in the weights: 1, 3 or 4 */
  int dirs;  /* 1 or 2 */
  dnnl_rnn_direction_t direction;
  bool batch_first, lbr;
  dnnl_alg_kind_t act; /* vanilla RNN only */
  int64_t seq, batch, input, hidden;
} dn_rnn_params;

/* oneDNN's gate g is ONNX's gate onnx_gate[kind][g]. */
static const int onnx_gate[3][4] = {
    [DN_RNN] = {0},
    [DN_GRU] = {0, 1, 2},     /* u r o  <- z r h */
    [DN_LSTM] = {0, 2, 3, 1}, /* i f c o <- i o f c */
};
/* Peepholes: oneDNN's i f o <- ONNX's i o f. */
static const int onnx_peephole[3] = {0, 2, 1};

static const struct dn_rnn_act {
  const char *name;
  dnnl_alg_kind_t alg;
} dn_rnn_acts[] = {
    {"Tanh", dnnl_eltwise_tanh},
    {"Relu", dnnl_eltwise_relu},
    {"Sigmoid", dnnl_eltwise_logistic},
};

/* The activations attribute must say what oneDNN computes. */
static int check_activations(mb_engine_check *c, dn_rnn_params *p) {
  static const char *const lstm[] = {"Sigmoid", "Tanh", "Tanh"};
  static const char *const gru[] = {"Sigmoid", "Tanh"};
  const mb_attr *a = mb__node_attr(c->n, "activations");
  p->act = dnnl_eltwise_tanh;
  if (!a)
    return 1;
  if (a->type != MB_ATTR_STRINGS || a->n < 1)
    return mb__engine_reject(c, "activations is not a list of names");
  for (int64_t i = 0; i < a->n; i++) {
    const char *name = a->strings[i];
    if (p->kind == DN_RNN) {
      size_t r = 0;
      while (r < MB_ARRAY_COUNT(dn_rnn_acts) &&
             strcmp(dn_rnn_acts[r].name, name) != 0)
        r++;
      if (r == MB_ARRAY_COUNT(dn_rnn_acts) ||
          (i > 0 && strcmp(name, a->strings[0]) != 0))
        return mb__engine_reject(c,
                                 "activation %s (oneDNN runs one of Tanh, "
                                 "Relu, Sigmoid for every direction)",
                                 name);
      p->act = dn_rnn_acts[r].alg;
      continue;
    }
    const char *want = p->kind == DN_LSTM ? lstm[i % 3] : gru[i % 2];
    if (strcmp(name, want) != 0)
      return mb__engine_reject(c,
                               "activation %s where oneDNN computes %s "
                               "(only the default activations run here)",
                               name, want);
  }
  return 1;
}

/* A present output must be a float32 tensor of known shape. */
static int check_output(mb_engine_check *c, int j) {
  int v = mb__engine_output(c->n, j);
  if (v < 0)
    return 1;
  const mb_shape_info *s = &c->eg->shapes[v];
  if (!s->known || s->dtype != MB_DTYPE_FLOAT)
    return mb__engine_reject(c,
                             "output %d is not a float32 tensor of known "
                             "shape",
                             j);
  return 1;
}

static int rnn_get(mb_engine_check *c, dn_rnn_params *p) {
  const mb_node *n = c->n;
  int rank;
  int64_t x[MB_MAX_RANK], r[MB_MAX_RANK];
  memset(p, 0, sizeof *p);
  p->kind = op_is(n, "LSTM") ? DN_LSTM : op_is(n, "GRU") ? DN_GRU : DN_RNN;
  p->gates = p->kind == DN_LSTM ? 4 : p->kind == DN_GRU ? 3 : 1;
  int max_inputs = p->kind == DN_LSTM ? 8 : 6;
  if (n->n_inputs > max_inputs)
    return mb__engine_reject(c, "has %d inputs", n->n_inputs);
  if (!mb__engine_check_float_input(c, 0, 0) ||
      !mb__engine_check_float_input(c, 1, 1) ||
      !mb__engine_check_float_input(c, 2, 1))
    return 0;
  if (mb__engine_input(n, 3) >= 0 && !mb__engine_check_float_input(c, 3, 1))
    return 0;
  if (mb__engine_input(n, 5) >= 0 && !mb__engine_check_float_input(c, 5, 0))
    return 0;
  if (p->kind == DN_LSTM) {
    if (mb__engine_input(n, 6) >= 0 && !mb__engine_check_float_input(c, 6, 0))
      return 0;
    if (mb__engine_input(n, 7) >= 0 && !mb__engine_check_float_input(c, 7, 1))
      return 0;
  }
  for (int j = 0; j < n->n_outputs; j++)
    if (!check_output(c, j))
      return 0;
  const char *direction = mb__node_attr_string(n, "direction", "forward");
  if (strcmp(direction, "forward") == 0) {
    p->dirs = 1;
    p->direction = dnnl_unidirectional_left2right;
  } else if (strcmp(direction, "reverse") == 0) {
    p->dirs = 1;
    p->direction = dnnl_unidirectional_right2left;
  } else if (strcmp(direction, "bidirectional") == 0) {
    p->dirs = 2;
    p->direction = dnnl_bidirectional_concat;
  } else {
    return mb__engine_reject(c, "direction %s", direction);
  }
  int64_t layout = mb__node_attr_int(n, "layout", 0);
  if (layout != 0 && layout != 1)
    return mb__engine_reject(c, "layout %lld", (long long)layout);
  p->batch_first = layout == 1;
  if (mb__node_attr(n, "clip"))
    return mb__engine_reject(c, "clip (oneDNN does not clip gates)");
  if (mb__node_attr_int(n, "input_forget", 0) != 0)
    return mb__engine_reject(c, "input_forget (coupled gates)");
  p->lbr = mb__node_attr_int(n, "linear_before_reset", 0) != 0;
  if (!check_activations(c, p))
    return 0;
  mb__engine_value_shape(c->eg, n->inputs[0], &rank, x, NULL);
  if (rank != 3)
    return mb__engine_reject(c, "X has rank %d", rank);
  mb__engine_value_shape(c->eg, n->inputs[2], &rank, r, NULL);
  p->seq = x[p->batch_first ? 1 : 0];
  p->batch = x[p->batch_first ? 0 : 1];
  p->input = x[2];
  p->hidden = mb__node_attr_int(n, "hidden_size", r[2]);
  if (rank != 3 || r[0] != p->dirs || r[1] != p->gates * p->hidden ||
      r[2] != p->hidden)
    return mb__engine_reject(c, "R does not match hidden_size and direction");
  /* oneDNN runs every sequence to its end. */
  if (mb__engine_input(n, 4) >= 0) {
    int64_t lens[4096];
    int64_t count = mb__engine_int_input(c, 4, lens, 4096);
    if (count < 0)
      return 0;
    for (int64_t b = 0; b < count; b++)
      if (lens[b] != p->seq)
        return mb__engine_reject(c, "sequence_lens ends a sequence early "
                                    "(oneDNN runs whole sequences)");
  }
  return 1;
}

int mb__dn_check_rnn(mb_engine_check *c) {
  dn_rnn_params p;
  return rnn_get(c, &p);
}

/* ---- int8 ---- */

/* oneDNN 2.6's int8 recurrent primitives (forward inference): u8 data,
 * src_layer and src_iter sharing one scale and shift (u8 = scale * real +
 * shift), s8 weights_layer and weights_iter sharing one scale per gate and
 * hidden unit (s8 = round(scale * w)), float32 biases and cell states;
 * dst_layer float32 here, dst_iter u8 (2.6 has no float32 one with u8
 * data), dequantised into the final h. */
#define DN_RNN_WEIGHT_MASK ((1 << 3) | (1 << 4)) /* g and o of ldigo */

/* The cells oneDNN 2.6 has an int8 form of. */
static const struct dn_rnn_int8_row {
  dn_rnn_kind kind;
  bool lbr;
  const char *no; /* NULL: it has one; else why not */
} dn_rnn_int8_rows[] = {
    {DN_LSTM, false, NULL},
    {DN_GRU, false, NULL},
    {DN_GRU, true,
     "linear_before_reset = 1 (oneDNN 2.6 has no int8 form "
     "of that GRU)"},
    {DN_RNN, false, "oneDNN 2.6 has no int8 vanilla RNN"},
};

/* The data quantisation: real = step * (u8 - zp). */
typedef struct dn_rnn_q {
  float step;
  int32_t zp;
} dn_rnn_q;

/* Widens [*lo, *hi] by value v's calibrated range; false when it has
 * none. */
static bool range_add(const mb_engine_graph *eg, const mb_quant_params *quant,
                      int v, double *lo, double *hi) {
  const mb_quant_param *e =
      quant ? mb__quant_params_find(quant, eg->graph->values[v].name) : NULL;
  if (!e || e->kind != MB_QUANT_KIND_ACTIVATION || !(e->min <= e->max))
    return false;
  *lo = fmin(*lo, e->min);
  *hi = fmax(*hi, e->max);
  return true;
}

/* Can node c->n (read into p) run on an int8 primitive with the
 * calibration `quant`? Its data scale and shift into q: one range covers
 * X, the initial h (a constant's values, else its calibrated range) and
 * the h values the cell writes (Y's and Y_h's calibrated ranges; without
 * them [-1, 1], where the default activations keep h). */
static int int8_get(mb_engine_check *c, const mb_quant_params *quant,
                    const dn_rnn_params *p, dn_rnn_q *q) {
  const mb_node *n = c->n;
  double lo = 0, hi = 0;
  for (size_t i = 0; i < MB_ARRAY_COUNT(dn_rnn_int8_rows); i++) {
    const struct dn_rnn_int8_row *row = &dn_rnn_int8_rows[i];
    if (row->kind == p->kind && (p->kind != DN_GRU || row->lbr == p->lbr) &&
        row->no)
      return mb__engine_reject(c, "no int8 form: %s", row->no);
  }
  if (p->kind == DN_LSTM && mb__engine_input(n, 7) >= 0)
    return mb__engine_reject(c, "no int8 form: peepholes (oneDNN's int8 "
                                "LSTM has none)");
  if (!range_add(c->eg, quant, n->inputs[0], &lo, &hi))
    return mb__engine_reject(c, "no int8 form: X has no calibrated range");
  bool seen = false;
  for (int j = 0; j < 2; j++) {
    int v = mb__engine_output(n, j);
    seen = (v >= 0 && range_add(c->eg, quant, v, &lo, &hi)) || seen;
  }
  if (!seen) {
    lo = fmin(lo, -1.0);
    hi = fmax(hi, 1.0);
  }
  int h0 = mb__engine_input(n, 5);
  const mb_tensor *k = h0 >= 0 ? mb__engine_constant(c->eg, h0) : NULL;
  for (int64_t i = 0; k && i < k->numel; i++) {
    lo = fmin(lo, ((const float *)k->data)[i]);
    hi = fmax(hi, ((const float *)k->data)[i]);
  }
  if (h0 >= 0 && !k && !range_add(c->eg, quant, h0, &lo, &hi))
    return mb__engine_reject(c, "no int8 form: initial_h has no calibrated "
                                "range");
  mb__quant_scale_zero_point(lo, hi, MB_DTYPE_UINT8, &q->step, &q->zp);
  return 1;
}

int mb__dn_rnn_int8(const mb_engine_graph *eg, const mb_quant_params *quant,
                    const mb_node *n, char *why, size_t size) {
  mb_engine_check c = {eg,  n,    mb__model_opset(eg->model, ""),
                       why, size, &mb__dn_limits};
  dn_rnn_params p;
  dn_rnn_q q;
  return rnn_get(&c, &p) && int8_get(&c, quant, &p, &q);
}

/* ---- weights in oneDNN's order ---- */

/* W [dirs, gates * H, k] -> ldigo [1, dirs, k, gates, H], float32. */
static float *relayout_weights(const dn_rnn_params *p, const float *w,
                               int64_t k) {
  int64_t G = p->gates, H = p->hidden;
  float *out = mb__aligned_alloc(sizeof(float) * (size_t)(p->dirs * k * G * H));
  if (!out)
    return NULL;
  for (int d = 0; d < p->dirs; d++)
    for (int64_t i = 0; i < k; i++)
      for (int64_t g = 0; g < G; g++) {
        const float *src = w + (d * G * H + onnx_gate[p->kind][g] * H) * k + i;
        float *dst = out + ((d * k + i) * G + g) * H;
        for (int64_t h = 0; h < H; h++)
          dst[h] = src[h * k];
      }
  return out;
}

/* B [dirs, 2 * gates * H] (Wb then Rb) -> ldgo [1, dirs, gates', H]. */
static float *relayout_bias(const dn_rnn_params *p, const float *b,
                            int n_gates) {
  int64_t G = p->gates, H = p->hidden;
  float *out =
      mb__aligned_alloc(sizeof(float) * (size_t)(p->dirs * n_gates * H));
  if (!out)
    return NULL;
  memset(out, 0, sizeof(float) * (size_t)(p->dirs * n_gates * H));
  for (int d = 0; d < p->dirs && b; d++) {
    const float *wb = b + d * 2 * G * H, *rb = wb + G * H;
    for (int64_t g = 0; g < G; g++) {
      int64_t og = onnx_gate[p->kind][g];
      float *dst = out + (d * n_gates + g) * H;
      /* The linear-before-reset GRU keeps the candidate's Rb apart. */
      bool apart = p->lbr && p->kind == DN_GRU && g == 2;
      for (int64_t h = 0; h < H; h++)
        dst[h] = wb[og * H + h] + (apart ? 0.0f : rb[og * H + h]);
      if (apart)
        for (int64_t h = 0; h < H; h++)
          out[(d * n_gates + 3) * H + h] = rb[og * H + h];
    }
  }
  return out;
}

/* P [dirs, 3 * H] (i o f) -> [1, dirs, 3, H] (i f o). */
static float *relayout_peephole(const dn_rnn_params *p, const float *peep) {
  int64_t H = p->hidden;
  float *out = mb__aligned_alloc(sizeof(float) * (size_t)(p->dirs * 3 * H));
  if (!out)
    return NULL;
  for (int d = 0; d < p->dirs; d++)
    for (int g = 0; g < 3; g++)
      memcpy(out + (d * 3 + g) * H, peep + (d * 3 + onnx_peephole[g]) * H,
             sizeof(float) * (size_t)H);
  return out;
}

/* int8: the scale of each gate and hidden unit (G * H, oneDNN's order),
 * shared by weights_layer wl (k = input) and weights_iter wi (k = H), both
 * relaid out, over every direction: qmax / max |w|, qmax 127 or, for
 * 7-bit weights (quantize.h), 64. Malloc'ed; NULL on OOM. */
static float *weight_scales(const dn_rnn_params *p, const float *wl,
                            const float *wi, float qmax) {
  int64_t G = p->gates, H = p->hidden;
  float *scale = malloc(sizeof(float) * (size_t)(G * H));
  if (!scale)
    return NULL;
  for (int64_t o = 0; o < G * H; o++)
    scale[o] = 0.0f;
  for (int m = 0; m < 2; m++) {
    const float *w = m ? wi : wl;
    int64_t rows = p->dirs * (m ? H : p->input);
    for (int64_t r = 0; r < rows; r++)
      for (int64_t o = 0; o < G * H; o++)
        scale[o] = fmaxf(scale[o], fabsf(w[r * G * H + o]));
  }
  for (int64_t o = 0; o < G * H; o++)
    scale[o] = scale[o] > 0.0f ? qmax / scale[o] : 1.0f;
  return scale;
}

/* A constant argument of the primitive: data (plain float32 per
 * plain_dims, taken) reordered into what pd wants for `arg`, with the
 * reorder attributes attr (int8 weights' scales; may be NULL). */
static mb_status const_arg(lctx *l, const_dnnl_primitive_desc_t pd, int arg,
                           int rank, const int64_t *plain_dims, float *data,
                           const_dnnl_primitive_attr_t attr,
                           dnnl_memory_t *mem) {
  dnnl_memory_desc_t src_md;
  const dnnl_memory_desc_t *want =
      dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
  if (!data)
    return mb__dn_oom(l);
  if (mb__dn_md_plain(&src_md, rank, plain_dims, dnnl_f32) != dnnl_success) {
    mb__aligned_free(data);
    return mb__dn_internal_error(l, "weights descriptor");
  }
  return mb__dn_const_memory_attr(l, &src_md, data, true, want, attr, mem,
                                  NULL);
}

/* ---- states and outputs ---- */

/* A memory of md in a buffer of this node alone (its index in *buf_out
 * when wanted). */
static mb_status scratch_memory(lctx *l, const dnnl_memory_desc_t *md,
                                dnnl_memory_t *mem, int *buf_out) {
  int buf = mb__dn_buf_take(l, dnnl_memory_desc_get_size(md), l->pos);
  if (buf < 0)
    return mb__dn_oom(l);
  if (buf_out)
    *buf_out = buf;
  return mb__dn_mem_new(l, md, buf, mem);
}

/* [dirs, batch, H] (layout 0) or [batch, dirs, H] (layout 1) as seen by
 * oneDNN, dims (1, dirs, batch, H): the strides of the ONNX tensor. */
static dnnl_status_t state_view_md(const dn_rnn_params *p, dnnl_data_type_t dt,
                                   dnnl_memory_desc_t *md) {
  int64_t dims[4] = {1, p->dirs, p->batch, p->hidden};
  int64_t H = p->hidden, D = p->dirs, N = p->batch;
  int64_t strides[4] = {D * N * H, p->batch_first ? H : N * H,
                        p->batch_first ? D * H : H, 1};
  dnnl_memory_desc_t any;
  dnnl_status_t st = mb__dn_md_plain(&any, 4, dims, dt);
  return st != dnnl_success ? st
                            : mb__dn_md_view(md, &any, 4, dims, strides, 0);
}

/* Value v plain in md's data type: quantised with xq when md is u8. */
static mb_status plain_get(lctx *l, int v, dnnl_data_type_t dt,
                           const mb_quant_param *xq, dn_rep **out) {
  dnnl_memory_desc_t want;
  int rank;
  int64_t dims[MB_MAX_RANK];
  if (dt != dnnl_u8)
    return mb__dn_value_get(l, v, DN_WANT_PLAIN, dt, NULL, out);
  mb__dn_value_dims(l, v, &rank, dims);
  DN_TRY(l, mb__dn_md_plain(&want, rank, dims, dt));
  return mb__dn_value_get_q(l, v, &want, xq, out);
}

/* An initial state (value v) as the primitive's ldnc memory `md` (u8:
 * quantised with xq). */
static mb_status state_in(lctx *l, const dn_rnn_params *p, int v,
                          const dnnl_memory_desc_t *md,
                          const mb_quant_param *xq, dnnl_memory_t *mem) {
  dn_rep *in;
  dnnl_memory_desc_t view;
  dnnl_memory_t view_mem;
  mb_status status = plain_get(l, v, md->data_type, xq, &in);
  if (status)
    return status;
  DN_TRY(l, state_view_md(p, md->data_type, &view));
  if (!p->batch_first)
    return mb__dn_rep_view(l, in, md, mem);
  dn_rep src = *in;
  if ((status = mb__dn_rep_view(l, &src, &view, &view_mem)) ||
      (status = scratch_memory(l, md, mem, NULL)))
    return status;
  return mb__dn_emit_reorder(l, view_mem, &view, *mem, md);
}

/* A final state: the primitive writes `md` (*mem); value v (may be -1)
 * receives it after the primitive: a reorder in `after` for layout 1, or
 * (u8) one that dequantises with xq. */
typedef struct state_out {
  int v;
  dnnl_memory_t mem;  /* the primitive's */
  dnnl_memory_t onnx; /* reordered into: v's memory seen as (1, D, N, H) */
  dnnl_memory_desc_t md, view;
  const mb_quant_param *xq; /* u8: its quantisation */
} state_out;

static mb_status state_out_prepare(lctx *l, const dn_rnn_params *p, int v,
                                   const dnnl_memory_desc_t *md,
                                   const mb_quant_param *xq, state_out *o) {
  dn_rep *out;
  dnnl_memory_desc_t plain;
  mb_status status;
  int rank;
  int64_t dims[MB_MAX_RANK];
  memset(o, 0, sizeof *o);
  o->v = v;
  o->md = *md;
  o->xq = md->data_type == dnnl_u8 ? xq : NULL;
  dnnl_data_type_t dt = o->xq ? dnnl_f32 : md->data_type;
  if (v < 0)
    return MB_STATUS_OK;
  mb__dn_value_dims(l, v, &rank, dims);
  DN_TRY(l, mb__dn_md_plain(&plain, rank, dims, dt));
  if ((status = mb__dn_value_define(l, v, &plain, &out)))
    return status;
  if (!p->batch_first && !o->xq)
    return mb__dn_rep_view(l, out, md, &o->mem);
  DN_TRY(l, state_view_md(p, dt, &o->view));
  dn_rep dst = *out;
  if ((status = mb__dn_rep_view(l, &dst, &o->view, &o->onnx)))
    return status;
  return scratch_memory(l, md, &o->mem, NULL);
}

static mb_status state_out_finish(lctx *l, const state_out *o) {
  if (o->v < 0 || !o->onnx)
    return MB_STATUS_OK;
  if (!o->xq)
    return mb__dn_emit_reorder(l, o->mem, &o->md, o->onnx, &o->view);
  dn_qattr qa = {1, 0, o->xq->scales, false, false, 0};
  return mb__dn_emit_reorder_q(l, o->mem, &o->md, o->onnx, &o->view, &qa,
                               o->xq->zero_points[0]);
}

/* ---- the lowering ---- */

static dnnl_status_t
rnn_desc_init(const dn_rnn_params *p, dnnl_rnn_desc_t *d,
              const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *src_h,
              const dnnl_memory_desc_t *src_c, const dnnl_memory_desc_t *wl,
              const dnnl_memory_desc_t *wi, const dnnl_memory_desc_t *peep,
              const dnnl_memory_desc_t *bias, const dnnl_memory_desc_t *dst,
              const dnnl_memory_desc_t *dst_h,
              const dnnl_memory_desc_t *dst_c) {
  const dnnl_prop_kind_t prop = dnnl_forward_inference;
  switch (p->kind) {
  case DN_LSTM:
    return dnnl_lstm_forward_desc_init_v2(d, prop, p->direction, src, src_h,
                                          src_c, wl, wi, peep, bias, dst, dst_h,
                                          dst_c, 0);
  case DN_GRU:
    return p->lbr
               ? dnnl_lbr_gru_forward_desc_init(d, prop, p->direction, src,
                                                src_h, wl, wi, bias, dst, dst_h,
                                                0)
               : dnnl_gru_forward_desc_init(d, prop, p->direction, src, src_h,
                                            wl, wi, bias, dst, dst_h, 0);
  case DN_RNN:
    return dnnl_vanilla_rnn_forward_desc_init(d, prop, p->act, p->direction,
                                              src, src_h, wl, wi, bias, dst,
                                              dst_h, 0, 0.0f, 0.0f);
  }
  return dnnl_invalid_arguments;
}

/* The primitive's memory descriptors: src_layer and both h states as dt,
 * dst_layer as dst_dt, weights as w_dt (any layout); biases, peepholes and
 * cell states float32. */
typedef struct rnn_mds {
  dnnl_memory_desc_t src, h, c, wl, wi, peep, bias, dst, hout, cout;
} rnn_mds;

static dnnl_status_t rnn_mds_init(const dn_rnn_params *p, int bias_gates,
                                  dnnl_data_type_t dt, dnnl_data_type_t dst_dt,
                                  dnnl_data_type_t w_dt, rnn_mds *m) {
  const int64_t T = p->seq, N = p->batch, I = p->input, H = p->hidden,
                D = p->dirs, G = p->gates;
  dnnl_dims_t src_dims = {T, N, I}, dst_dims = {T, N, D * H};
  int64_t state_dims[4] = {1, D, N, H};
  int64_t wl_dims[5] = {1, D, I, G, H}, wi_dims[5] = {1, D, H, G, H};
  int64_t bias_dims[4] = {1, D, bias_gates, H}, peep_dims[4] = {1, D, 3, H};
  dnnl_format_tag_t layer_tag = p->batch_first ? dnnl_ntc : dnnl_tnc;
  dnnl_status_t st;
  if ((st =
           dnnl_memory_desc_init_by_tag(&m->src, 3, src_dims, dt, layer_tag)) ||
      (st = dnnl_memory_desc_init_by_tag(&m->dst, 3, dst_dims, dst_dt,
                                         layer_tag)) ||
      (st = mb__dn_md_plain(&m->h, 4, state_dims, dt)) ||
      (st = mb__dn_md_plain(&m->hout, 4, state_dims, dt)) ||
      /* Cell states stay float32 (oneDNN's bf16 and int8 LSTMs keep them
       * so). */
      (st = mb__dn_md_plain(&m->c, 4, state_dims, dnnl_f32)) ||
      (st = mb__dn_md_plain(&m->cout, 4, state_dims, dnnl_f32)) ||
      (st = mb__dn_md_any(&m->wl, 5, wl_dims, w_dt)) ||
      (st = mb__dn_md_any(&m->wi, 5, wi_dims, w_dt)) ||
      (st = mb__dn_md_plain(&m->bias, 4, bias_dims, dnnl_f32)))
    return st;
  return mb__dn_md_plain(&m->peep, 4, peep_dims, dnnl_f32);
}

/* int8 attributes: data scale and shift, weights' scales (G * H). For
 * the primitive (`primitive`: the segment's scratchpad) or for the reorder
 * that quantises the weights at compile time (oneDNN's own scratchpad:
 * no scratchpad argument is given there). *attr: NULL on failure. */
static mb_status int8_attr(lctx *l, const dn_rnn_params *p, const dn_rnn_q *q,
                           const float *wscales, bool primitive,
                           dnnl_primitive_attr_t *attr) {
  mb_status status = MB_STATUS_OK;
  if (primitive)
    status = mb__dn_attr_new(l, NULL, NULL, attr);
  else
    DN_TRY(l, dnnl_primitive_attr_create(attr));
  if (status)
    return status;
  dnnl_status_t st = dnnl_primitive_attr_set_rnn_data_qparams(
      *attr, 1.0f / q->step, (float)q->zp);
  if (st == dnnl_success)
    st = dnnl_primitive_attr_set_rnn_weights_qparams(
        *attr, p->gates * p->hidden, DN_RNN_WEIGHT_MASK, wscales);
  if (st == dnnl_success)
    return MB_STATUS_OK;
  dnnl_primitive_attr_destroy(*attr);
  *attr = NULL;
  return mb__dn_fail(l, "dnnl_primitive_attr_set_rnn_qparams", st);
}

/* The node has no int8 form here: MB_STATUS_UNSUPPORTED, so the hybrid
 * layer runs it in an fp32 segment (engine->node_precision says which). */
static mb_status no_int8(lctx *l, const char *reason) {
  char label[160];
  return mb__error(l->err, MB_STATUS_UNSUPPORTED, "onednn: %s: %s",
                   mb__node_label(l->node, label, sizeof label), reason);
}

/* What lowering one RNN node carries from step to step. Fields marked
 * owned are released by rnn_lowering_free; a step that hands one to a
 * constant memory sets it to NULL first. */
typedef struct rnn_lowering {
  dn_rnn_params p;
  dn_rnn_q q;
  mb_quant_param xq; /* int8: the data's quantisation (of q, above) */
  bool int8;
  int bias_gates;
  /* The node's inputs and outputs (values; -1: absent). */
  int in_x, in_b, in_h, in_c, in_p, out_y, out_h, out_c;
  /* Weights in oneDNN's order and, for int8, their scales and the
   * attributes of the primitive and of the weights' reorders. */
  float *wl_data, *wi_data, *wscales; /* owned */
  dnnl_primitive_attr_t attr, wattr;  /* owned */
  rnn_mds m;                          /* the primitive's mds */
  dnnl_data_type_t in_dt, out_dt;     /* what the primitive takes */
  dnnl_primitive_desc_t pd;           /* owned */
  /* The primitive's memories (h, c, peep: NULL when it has none), Y's
   * representation and whether the primitive writes it in place (else
   * into y_buf, then a reorder), the final states. */
  dnnl_memory_t wl, wi, bias, peep, x, h, c, y_mem;
  dn_rep *y;
  int y_buf;
  bool y_direct, want_h, want_c;
  state_out hs, cs;
} rnn_lowering;

static void rnn_lowering_free(rnn_lowering *rl) {
  if (rl->pd)
    dnnl_primitive_desc_destroy(rl->pd);
  if (rl->attr)
    dnnl_primitive_attr_destroy(rl->attr);
  if (rl->wattr)
    dnnl_primitive_attr_destroy(rl->wattr);
  mb__aligned_free(rl->wl_data);
  mb__aligned_free(rl->wi_data);
  free(rl->wscales);
}

/* The node's int8 form (when the segment is int8) and its inputs and
 * outputs; MB_STATUS_UNSUPPORTED when it has no int8 form. */
static mb_status rnn_operands(lctx *l, const mb_node *n, rnn_lowering *rl) {
  const dn_rnn_params *p = &rl->p;
  /* INT8: the node's int8 form, or none (fp32 then, in a segment of its
   * own). */
  rl->int8 = l->quant != NULL;
  if (rl->int8) {
    char reason[256] = "";
    mb_engine_check c = mb__dn_lower_check_ctx(l, n, reason, sizeof reason);
    if (!int8_get(&c, l->quant, &rl->p, &rl->q))
      return no_int8(l, reason);
  }
  rl->xq = (mb_quant_param){.kind = MB_QUANT_KIND_ACTIVATION,
                            .dtype = MB_DTYPE_UINT8,
                            .axis = -1,
                            .channels = 1,
                            .scales = &rl->q.step,
                            .zero_points = &rl->q.zp};
  rl->bias_gates = p->kind == DN_GRU && p->lbr ? 4 : (int)p->gates;
  rl->in_x = n->inputs[0];
  rl->in_b = mb__engine_input(n, 3);
  rl->in_h = mb__engine_input(n, 5);
  rl->in_c = p->kind == DN_LSTM ? mb__engine_input(n, 6) : -1;
  rl->in_p = p->kind == DN_LSTM ? mb__engine_input(n, 7) : -1;
  rl->out_y = mb__engine_output(n, 0);
  rl->out_h = mb__engine_output(n, 1);
  rl->out_c = p->kind == DN_LSTM ? mb__engine_output(n, 2) : -1;
  return MB_STATUS_OK;
}

/* Weights in oneDNN's order, once (int8: their scales come first, and
 * the attributes that quantise data and weights). */
static mb_status rnn_weights(lctx *l, const mb_node *n, rnn_lowering *rl) {
  const dn_rnn_params *p = &rl->p;
  const mb_tensor *w = mb__engine_constant(l->eg, n->inputs[1]);
  const mb_tensor *r = mb__engine_constant(l->eg, n->inputs[2]);
  mb_status status;
  rl->wl_data = relayout_weights(p, w->data, p->input);
  rl->wi_data = relayout_weights(p, r->data, p->hidden);
  if (!rl->wl_data || !rl->wi_data ||
      (rl->int8 &&
       !(rl->wscales = weight_scales(
             p, rl->wl_data, rl->wi_data,
             /* X and h are signed: 7 bits where that saturates */
             (float)mb__quant_weight_qmax(l->quant->weights, true)))))
    return mb__dn_oom(l);
  if (rl->int8) {
    if ((status = int8_attr(l, p, &rl->q, rl->wscales, true, &rl->attr)))
      return status;
    if ((status = int8_attr(l, p, &rl->q, rl->wscales, false, &rl->wattr)))
      return status;
  }
  return MB_STATUS_OK;
}

/* The recurrent primitive and its mds. int8: u8 data and states
 * (dequantised after), float32 Y, s8 weights (oneDNN 2.6 writes the final
 * h only as u8). Else the segment's precision, then float32 (bf16 RNNs
 * need avx512_core_bf16; the reorders around it are cheap). */
static mb_status rnn_primitive(lctx *l, rnn_lowering *rl) {
  const dn_rnn_params *p = &rl->p;
  bool states_in = rl->in_h >= 0 || rl->in_c >= 0;
  bool states_out = rl->out_h >= 0 || rl->out_c >= 0;
  bool lstm = p->kind == DN_LSTM, int8 = rl->int8;
  rnn_mds *m = &rl->m;
  rl->in_dt = int8 ? dnnl_u8 : l->act_dt;
  rl->out_dt = int8 ? dnnl_f32 : l->act_dt;
  for (int attempt = 0; attempt < 2 && !rl->pd; attempt++) {
    dnnl_rnn_desc_t desc;
    if (attempt == 1) {
      if (int8 || rl->in_dt == dnnl_f32)
        break;
      rl->in_dt = rl->out_dt = dnnl_f32;
    }
    DN_TRY(l, rnn_mds_init(p, rl->bias_gates, rl->in_dt, rl->out_dt,
                           int8 ? dnnl_s8 : rl->in_dt, m));
    DN_TRY(l,
           rnn_desc_init(p, &desc, &m->src,
                         (lstm ? states_in : rl->in_h >= 0) ? &m->h : NULL,
                         lstm && states_in ? &m->c : NULL, &m->wl, &m->wi,
                         rl->in_p >= 0 ? &m->peep : NULL, &m->bias, &m->dst,
                         (lstm ? states_out : rl->out_h >= 0) ? &m->hout : NULL,
                         lstm && states_out ? &m->cout : NULL));
    /* oneDNN names its GEMM-based RNN "ref" too (it is its only one for
     * GRU and vanilla RNN): accept it. */
    dnnl_status_t st = int8 ? dnnl_primitive_desc_create(
                                  &rl->pd, &desc, rl->attr, l->s->engine, NULL)
                            : mb__dn_pd_try(l, &desc, NULL, &rl->pd);
    if (st != dnnl_success)
      rl->pd = NULL;
    if (st != dnnl_success && int8) {
      char reason[160];
      snprintf(reason, sizeof reason, "oneDNN refuses its int8 form here (%s)",
               mb__dn_status_name(st));
      return no_int8(l, reason);
    }
    if (st != dnnl_success && (attempt == 1 || rl->in_dt == dnnl_f32))
      return mb__dn_fail(l, "dnnl_primitive_desc_create(rnn)", st);
  }
  if (!rl->pd)
    return mb__dn_internal_error(l, "no RNN primitive");
  return MB_STATUS_OK;
}

/* The constant arguments in the primitive's layouts: the weights (taken
 * from the lowering; int8: quantised by their reorder), the bias, the
 * peepholes. */
static mb_status rnn_bind_constants(lctx *l, const mb_node *n,
                                    rnn_lowering *rl) {
  const dn_rnn_params *p = &rl->p;
  const int64_t I = p->input, H = p->hidden, D = p->dirs, G = p->gates;
  int64_t wl_dims[5] = {1, D, I, G, H}, wi_dims[5] = {1, D, H, G, H};
  int64_t bias_dims[4] = {1, D, rl->bias_gates, H}, peep_dims[4] = {1, D, 3, H};
  const mb_tensor *b =
      rl->in_b >= 0 ? mb__engine_constant(l->eg, rl->in_b) : NULL;
  const mb_tensor *peep =
      rl->in_p >= 0 ? mb__engine_constant(l->eg, rl->in_p) : NULL;
  mb_status status;
  float *data = rl->wl_data;
  rl->wl_data = NULL; /* const_arg takes it */
  if ((status = const_arg(l, rl->pd, DNNL_ARG_WEIGHTS_LAYER, 5, wl_dims, data,
                          rl->wattr, &rl->wl)))
    return status;
  data = rl->wi_data;
  rl->wi_data = NULL;
  if ((status = const_arg(l, rl->pd, DNNL_ARG_WEIGHTS_ITER, 5, wi_dims, data,
                          rl->wattr, &rl->wi)))
    return status;
  if ((status = const_arg(l, rl->pd, DNNL_ARG_BIAS, 4, bias_dims,
                          relayout_bias(p, b ? b->data : NULL, rl->bias_gates),
                          NULL, &rl->bias)))
    return status;
  if (peep)
    return const_arg(l, rl->pd, DNNL_ARG_WEIGHTS_PEEPHOLE, 4, peep_dims,
                     relayout_peephole(p, peep->data), NULL, &rl->peep);
  return MB_STATUS_OK;
}

/* X and the initial states as the primitive reads them (int8: quantised
 * once); an LSTM given one initial state gets zeros for the other. */
static mb_status rnn_bind_inputs(lctx *l, rnn_lowering *rl) {
  const dn_rnn_params *p = &rl->p;
  rnn_mds *m = &rl->m;
  mb_status status;
  /* X: [T, N, I] or [N, T, I] plain is tnc or ntc as it stands (int8:
   * quantised once). */
  dn_rep *x;
  if ((status = plain_get(l, rl->in_x, rl->in_dt, &rl->xq, &x)))
    return status;
  dn_rep x_rep = *x;
  if ((status = mb__dn_rep_view(l, &x_rep, &m->src, &rl->x)))
    return status;
  if (rl->in_h >= 0 &&
      (status = state_in(l, p, rl->in_h, &m->h, &rl->xq, &rl->h)))
    return status;
  if (rl->in_c >= 0 && (status = state_in(l, p, rl->in_c, &m->c, NULL, &rl->c)))
    return status;
  /* oneDNN's LSTM takes both initial states or neither: the missing one
   * is zero, as in ONNX (u8: the zero point). */
  if (p->kind == DN_LSTM && (rl->h != NULL) != (rl->c != NULL)) {
    const dnnl_memory_desc_t *md = rl->h ? &m->c : &m->h;
    size_t size = dnnl_memory_desc_get_size(md);
    void *zeros = mb__aligned_alloc(MB_MAX(size, 1));
    if (!zeros)
      return mb__dn_oom(l);
    memset(zeros, md->data_type == dnnl_u8 ? (int)rl->q.zp : 0, size);
    return mb__dn_const_memory(l, md, zeros, true, md, rl->h ? &rl->c : &rl->h,
                               NULL);
  }
  return MB_STATUS_OK;
}

/* Y and the final states as the primitive writes them: Y in place when
 * its layout is dst_layer's (one direction, or batch first), else into a
 * buffer that a reorder after the primitive reads. */
static mb_status rnn_bind_outputs(lctx *l, rnn_lowering *rl) {
  const dn_rnn_params *p = &rl->p;
  rnn_mds *m = &rl->m;
  mb_status status;
  rl->y_direct = rl->out_y >= 0 && (p->dirs == 1 || p->batch_first);
  rl->y = NULL;
  if (rl->out_y >= 0) {
    dnnl_memory_desc_t y_md;
    int rank;
    int64_t dims[MB_MAX_RANK];
    mb__dn_value_dims(l, rl->out_y, &rank, dims);
    DN_TRY(l, mb__dn_md_plain(&y_md, rank, dims, rl->out_dt));
    if ((status = mb__dn_value_define(l, rl->out_y, &y_md, &rl->y)))
      return status;
  }
  rl->y_buf = -1;
  if (rl->y_direct) {
    dn_rep y_rep = *rl->y;
    status = mb__dn_rep_view(l, &y_rep, &m->dst, &rl->y_mem);
  } else {
    status = scratch_memory(l, &m->dst, &rl->y_mem, &rl->y_buf);
  }
  if (status ||
      (status =
           state_out_prepare(l, p, rl->out_h, &m->hout, &rl->xq, &rl->hs)) ||
      (status = state_out_prepare(l, p, rl->out_c, &m->cout, NULL, &rl->cs)))
    return status;
  /* Likewise both final states or neither: the unused one goes to a
   * buffer of its own. */
  rl->want_h = rl->out_h >= 0;
  rl->want_c = rl->out_c >= 0;
  if (p->kind == DN_LSTM && rl->want_h != rl->want_c) {
    state_out *missing = rl->want_h ? &rl->cs : &rl->hs;
    if ((status = scratch_memory(l, &missing->md, &missing->mem, NULL)))
      return status;
    rl->want_h = rl->want_c = true;
  }
  return MB_STATUS_OK;
}

/* The primitive's step with the segment's threads when its work calls for
 * them, then Y's reorder from [T, N, D, H] when it was not written in
 * place, and the final states' reorders. */
static mb_status rnn_emit(lctx *l, rnn_lowering *rl) {
  const dn_rnn_params *p = &rl->p;
  const int64_t T = p->seq, N = p->batch, I = p->input, H = p->hidden,
                D = p->dirs, G = p->gates;
  mb_status status;
  dnnl_exec_arg_t args[DN_MAX_ARGS];
  int k = 0;
  args[k++] = (dnnl_exec_arg_t){DNNL_ARG_SRC_LAYER, rl->x};
  if (rl->h)
    args[k++] = (dnnl_exec_arg_t){DNNL_ARG_SRC_ITER, rl->h};
  if (rl->c)
    args[k++] = (dnnl_exec_arg_t){DNNL_ARG_SRC_ITER_C, rl->c};
  args[k++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS_LAYER, rl->wl};
  args[k++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS_ITER, rl->wi};
  if (rl->peep)
    args[k++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS_PEEPHOLE, rl->peep};
  args[k++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, rl->bias};
  args[k++] = (dnnl_exec_arg_t){DNNL_ARG_DST_LAYER, rl->y_mem};
  if (rl->want_h)
    args[k++] = (dnnl_exec_arg_t){DNNL_ARG_DST_ITER, rl->hs.mem};
  if (rl->want_c)
    args[k++] = (dnnl_exec_arg_t){DNNL_ARG_DST_ITER_C, rl->cs.mem};
  if ((status = mb__dn_emit(l, rl->pd, k, args)))
    return status;
  /* The step's work is the gate products of every step, not the size of
   * its output: give it the segment's threads. */
  double work = (double)(T * N * D * G * H * (I + H));
  if (work >= (double)(1 << 16))
    l->s->steps[l->s->n_steps - 1].threads = l->s->threads;
  if (rl->out_y >= 0 && !rl->y_direct) {
    /* dst_layer seen as [T, N, D, H] -> Y [T, D, N, H]. */
    dnnl_memory_desc_t from, plain, to;
    dnnl_memory_t from_mem, to_mem;
    int64_t dims4[4] = {T, N, D, H};
    int64_t to_strides[4] = {D * N * H, H, N * H, 1};
    DN_TRY(l, mb__dn_md_plain(&from, 4, dims4, rl->out_dt));
    DN_TRY(l, mb__dn_md_plain(&plain, 4, dims4, rl->out_dt));
    DN_TRY(l, mb__dn_md_view(&to, &plain, 4, dims4, to_strides, 0));
    dn_rep y_rep = *rl->y;
    if ((status = mb__dn_mem_new(l, &from, rl->y_buf, &from_mem)) ||
        (status = mb__dn_rep_view(l, &y_rep, &to, &to_mem)) ||
        (status = mb__dn_emit_reorder(l, from_mem, &from, to_mem, &to)))
      return status;
  }
  if ((status = state_out_finish(l, &rl->hs)))
    return status;
  return state_out_finish(l, &rl->cs);
}

/* An RNN, GRU or LSTM node: its int8 form or precision, the weights
 * re-laid out, the primitive, its memories, the step and the reorders
 * after it. */
mb_status mb__dn_lower_rnn(lctx *l, const mb_node *n) {
  mb_status status = MB_STATUS_OK;
  rnn_lowering rl;
  memset(&rl, 0, sizeof rl);
  rl.q = (dn_rnn_q){1.0f, 0};
  DN_PARAMS(l, n, rnn_get, &rl.p);
  MB_TRY_GOTO(rnn_operands(l, n, &rl));
  MB_TRY_GOTO(rnn_weights(l, n, &rl));
  MB_TRY_GOTO(rnn_primitive(l, &rl));
  MB_TRY_GOTO(rnn_bind_constants(l, n, &rl));
  MB_TRY_GOTO(rnn_bind_inputs(l, &rl));
  MB_TRY_GOTO(rnn_bind_outputs(l, &rl));
  MB_TRY_GOTO(rnn_emit(l, &rl));
done:
  rnn_lowering_free(&rl);
  return status;
}

#endif /* MB_HAVE_DNNL */
