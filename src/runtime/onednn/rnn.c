/* oneDNN engine: ONNX RNN, GRU and LSTM nodes as oneDNN's vanilla RNN,
 * GRU (linear-before-reset GRU when linear_before_reset = 1) and LSTM
 * primitives, fp32 or bf16.
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

/* A constant argument of the primitive: data (plain float32 per
 * plain_dims, taken) reordered into what pd wants for `arg`. */
static mb_status const_arg(lctx *l, const_dnnl_primitive_desc_t pd, int arg,
                           int rank, const int64_t *plain_dims, float *data,
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
  return mb__dn_const_memory(l, &src_md, data, true, want, mem, NULL);
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

/* An initial state (value v) as the primitive's ldnc memory `md`. */
static mb_status state_in(lctx *l, const dn_rnn_params *p, int v,
                          const dnnl_memory_desc_t *md, dnnl_memory_t *mem) {
  dn_rep *in;
  dnnl_memory_desc_t view;
  dnnl_memory_t view_mem;
  mb_status status =
      mb__dn_value_get(l, v, DN_WANT_PLAIN, md->data_type, NULL, &in);
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
 * receives it after the primitive (layout 1 reorders in `after`). */
typedef struct state_out {
  int v;
  dnnl_memory_t mem;  /* the primitive's */
  dnnl_memory_t onnx; /* layout 1: v's memory seen as (1, D, N, H) */
  dnnl_memory_desc_t md, view;
} state_out;

static mb_status state_out_prepare(lctx *l, const dn_rnn_params *p, int v,
                                   const dnnl_memory_desc_t *md, state_out *o) {
  dn_rep *out;
  dnnl_memory_desc_t plain;
  mb_status status;
  int rank;
  int64_t dims[MB_MAX_RANK];
  memset(o, 0, sizeof *o);
  o->v = v;
  o->md = *md;
  if (v < 0)
    return MB_STATUS_OK;
  mb__dn_value_dims(l, v, &rank, dims);
  DN_TRY(l, mb__dn_md_plain(&plain, rank, dims, md->data_type));
  if ((status = mb__dn_value_define(l, v, &plain, &out)))
    return status;
  if (!p->batch_first)
    return mb__dn_rep_view(l, out, md, &o->mem);
  DN_TRY(l, state_view_md(p, md->data_type, &o->view));
  dn_rep dst = *out;
  if ((status = mb__dn_rep_view(l, &dst, &o->view, &o->onnx)))
    return status;
  return scratch_memory(l, md, &o->mem, NULL);
}

static mb_status state_out_finish(lctx *l, const state_out *o) {
  if (o->v < 0 || !o->onnx)
    return MB_STATUS_OK;
  return mb__dn_emit_reorder(l, o->mem, &o->md, o->onnx, &o->view);
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

mb_status mb__dn_lower_rnn(lctx *l, const mb_node *n) {
  dn_rnn_params p;
  dnnl_primitive_desc_t pd = NULL;
  mb_status status = MB_STATUS_OK;
  DN_PARAMS(l, n, rnn_get, &p);
  const int64_t T = p.seq, N = p.batch, I = p.input, H = p.hidden, D = p.dirs,
                G = p.gates;
  int bias_gates = p.kind == DN_GRU && p.lbr ? 4 : (int)G;
  int in_x = n->inputs[0], in_b = mb__engine_input(n, 3);
  int in_h = mb__engine_input(n, 5);
  int in_c = p.kind == DN_LSTM ? mb__engine_input(n, 6) : -1;
  int in_p = p.kind == DN_LSTM ? mb__engine_input(n, 7) : -1;
  int out_y = mb__engine_output(n, 0), out_h = mb__engine_output(n, 1);
  int out_c = p.kind == DN_LSTM ? mb__engine_output(n, 2) : -1;
  dnnl_memory_desc_t src_md, h_md, c_md, wl_md, wi_md, peep_md, bias_md, dst_md,
      hout_md, cout_md;
  dnnl_dims_t src_dims = {T, N, I}, dst_dims = {T, N, D * H};
  int64_t state_dims[4] = {1, D, N, H};
  int64_t wl_dims[5] = {1, D, I, G, H}, wi_dims[5] = {1, D, H, G, H};
  int64_t bias_dims[4] = {1, D, bias_gates, H}, peep_dims[4] = {1, D, 3, H};
  dnnl_data_type_t dt = l->act_dt;
  /* In the segment's precision, else float32 (bf16 RNNs need
   * avx512_core_bf16; the reorders around it are cheap). */
  for (int attempt = 0; attempt < 2 && !pd; attempt++) {
    dnnl_rnn_desc_t desc;
    if (attempt == 1) {
      if (dt == dnnl_f32)
        break;
      dt = dnnl_f32;
    }
    dnnl_format_tag_t layer_tag = p.batch_first ? dnnl_ntc : dnnl_tnc;
    DN_GOTO(l,
            dnnl_memory_desc_init_by_tag(&src_md, 3, src_dims, dt, layer_tag));
    DN_GOTO(l,
            dnnl_memory_desc_init_by_tag(&dst_md, 3, dst_dims, dt, layer_tag));
    DN_GOTO(l, mb__dn_md_plain(&h_md, 4, state_dims, dt));
    DN_GOTO(l, mb__dn_md_plain(&hout_md, 4, state_dims, dt));
    /* Cell states stay float32 (oneDNN's bf16 LSTM keeps them so). */
    DN_GOTO(l, mb__dn_md_plain(&c_md, 4, state_dims, dnnl_f32));
    DN_GOTO(l, mb__dn_md_plain(&cout_md, 4, state_dims, dnnl_f32));
    DN_GOTO(l, mb__dn_md_any(&wl_md, 5, wl_dims, dt));
    DN_GOTO(l, mb__dn_md_any(&wi_md, 5, wi_dims, dt));
    DN_GOTO(l, mb__dn_md_plain(&bias_md, 4, bias_dims, dnnl_f32));
    DN_GOTO(l, mb__dn_md_plain(&peep_md, 4, peep_dims, dnnl_f32));
    bool states_in = in_h >= 0 || in_c >= 0;
    bool states_out = out_h >= 0 || out_c >= 0;
    bool lstm = p.kind == DN_LSTM;
    DN_GOTO(l, rnn_desc_init(&p, &desc, &src_md,
                             (lstm ? states_in : in_h >= 0) ? &h_md : NULL,
                             lstm && states_in ? &c_md : NULL, &wl_md, &wi_md,
                             in_p >= 0 ? &peep_md : NULL, &bias_md, &dst_md,
                             (lstm ? states_out : out_h >= 0) ? &hout_md : NULL,
                             lstm && states_out ? &cout_md : NULL));
    /* oneDNN names its GEMM-based RNN "ref" too (it is its only one for
     * GRU and vanilla RNN): accept it. */
    dnnl_status_t st = mb__dn_pd_try(l, &desc, NULL, &pd);
    bool last = attempt == 1 || dt == dnnl_f32;
    if (st != dnnl_success && last) {
      status = mb__dn_fail(l, "dnnl_primitive_desc_create(rnn)", st);
      goto done;
    }
  }
  if (!pd) {
    status = mb__dn_internal_error(l, "no RNN primitive");
    goto done;
  }
  /* Weights, once. */
  const mb_tensor *w = mb__engine_constant(l->eg, n->inputs[1]);
  const mb_tensor *r = mb__engine_constant(l->eg, n->inputs[2]);
  const mb_tensor *b = in_b >= 0 ? mb__engine_constant(l->eg, in_b) : NULL;
  const mb_tensor *peep = in_p >= 0 ? mb__engine_constant(l->eg, in_p) : NULL;
  dnnl_memory_t wl, wi, bias, peep_mem = NULL;
  MB_TRY_GOTO(const_arg(l, pd, DNNL_ARG_WEIGHTS_LAYER, 5, wl_dims,
                        relayout_weights(&p, w->data, I), &wl));
  MB_TRY_GOTO(const_arg(l, pd, DNNL_ARG_WEIGHTS_ITER, 5, wi_dims,
                        relayout_weights(&p, r->data, H), &wi));
  MB_TRY_GOTO(const_arg(l, pd, DNNL_ARG_BIAS, 4, bias_dims,
                        relayout_bias(&p, b ? b->data : NULL, bias_gates),
                        &bias));
  if (peep)
    MB_TRY_GOTO(const_arg(l, pd, DNNL_ARG_WEIGHTS_PEEPHOLE, 4, peep_dims,
                          relayout_peephole(&p, peep->data), &peep_mem));
  /* X: [T, N, I] or [N, T, I] plain is tnc or ntc as it stands. */
  dn_rep *x;
  dnnl_memory_t x_mem, h_mem = NULL, c_mem = NULL, y_mem;
  MB_TRY_GOTO(mb__dn_value_get(l, in_x, DN_WANT_PLAIN, dt, NULL, &x));
  dn_rep x_rep = *x;
  MB_TRY_GOTO(mb__dn_rep_view(l, &x_rep, &src_md, &x_mem));
  if (in_h >= 0)
    MB_TRY_GOTO(state_in(l, &p, in_h, &h_md, &h_mem));
  if (in_c >= 0)
    MB_TRY_GOTO(state_in(l, &p, in_c, &c_md, &c_mem));
  /* oneDNN's LSTM takes both initial states or neither: the missing one
   * is zero, as in ONNX. */
  if (p.kind == DN_LSTM && (h_mem != NULL) != (c_mem != NULL)) {
    const dnnl_memory_desc_t *md = h_mem ? &c_md : &h_md;
    size_t size = dnnl_memory_desc_get_size(md);
    void *zeros = mb__aligned_alloc(MB_MAX(size, 1));
    if (!zeros) {
      status = mb__dn_oom(l);
      goto done;
    }
    memset(zeros, 0, size);
    MB_TRY_GOTO(mb__dn_const_memory(l, md, zeros, true, md,
                                    h_mem ? &c_mem : &h_mem, NULL));
  }
  /* Y: written in place when its layout is dst_layer's (one direction,
   * or batch first); else through a buffer and a reorder. */
  bool y_direct = out_y >= 0 && (D == 1 || p.batch_first);
  dn_rep *y = NULL;
  if (out_y >= 0) {
    dnnl_memory_desc_t y_md;
    int rank;
    int64_t dims[MB_MAX_RANK];
    mb__dn_value_dims(l, out_y, &rank, dims);
    DN_GOTO(l, mb__dn_md_plain(&y_md, rank, dims, dt));
    MB_TRY_GOTO(mb__dn_value_define(l, out_y, &y_md, &y));
  }
  int y_buf = -1;
  if (y_direct) {
    dn_rep y_rep = *y;
    MB_TRY_GOTO(mb__dn_rep_view(l, &y_rep, &dst_md, &y_mem));
  } else {
    MB_TRY_GOTO(scratch_memory(l, &dst_md, &y_mem, &y_buf));
  }
  state_out hs, cs;
  MB_TRY_GOTO(state_out_prepare(l, &p, out_h, &hout_md, &hs));
  MB_TRY_GOTO(state_out_prepare(l, &p, out_c, &cout_md, &cs));
  /* Likewise both final states or neither: the unused one goes to a
   * buffer of its own. */
  bool want_h = out_h >= 0, want_c = out_c >= 0;
  if (p.kind == DN_LSTM && want_h != want_c) {
    state_out *missing = want_h ? &cs : &hs;
    MB_TRY_GOTO(scratch_memory(l, &missing->md, &missing->mem, NULL));
    want_h = want_c = true;
  }
  dnnl_exec_arg_t args[DN_MAX_ARGS];
  int k = 0;
  args[k++] = (dnnl_exec_arg_t){DNNL_ARG_SRC_LAYER, x_mem};
  if (h_mem)
    args[k++] = (dnnl_exec_arg_t){DNNL_ARG_SRC_ITER, h_mem};
  if (c_mem)
    args[k++] = (dnnl_exec_arg_t){DNNL_ARG_SRC_ITER_C, c_mem};
  args[k++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS_LAYER, wl};
  args[k++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS_ITER, wi};
  if (peep_mem)
    args[k++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS_PEEPHOLE, peep_mem};
  args[k++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, bias};
  args[k++] = (dnnl_exec_arg_t){DNNL_ARG_DST_LAYER, y_mem};
  if (want_h)
    args[k++] = (dnnl_exec_arg_t){DNNL_ARG_DST_ITER, hs.mem};
  if (want_c)
    args[k++] = (dnnl_exec_arg_t){DNNL_ARG_DST_ITER_C, cs.mem};
  MB_TRY_GOTO(mb__dn_emit(l, pd, k, args));
  /* The step's work is the gate products of every step, not the size of
   * its output: give it the segment's threads. */
  double work = (double)(T * N * D * G * H * (I + H));
  if (work >= (double)(1 << 16))
    l->s->steps[l->s->n_steps - 1].threads = l->s->threads;
  if (out_y >= 0 && !y_direct) {
    /* dst_layer seen as [T, N, D, H] -> Y [T, D, N, H]. */
    dnnl_memory_desc_t from, plain, to;
    dnnl_memory_t from_mem, to_mem;
    int64_t dims4[4] = {T, N, D, H};
    int64_t to_strides[4] = {D * N * H, H, N * H, 1};
    DN_GOTO(l, mb__dn_md_plain(&from, 4, dims4, dt));
    DN_GOTO(l, mb__dn_md_plain(&plain, 4, dims4, dt));
    DN_GOTO(l, mb__dn_md_view(&to, &plain, 4, dims4, to_strides, 0));
    dn_rep y_rep = *y;
    MB_TRY_GOTO(mb__dn_mem_new(l, &from, y_buf, &from_mem));
    MB_TRY_GOTO(mb__dn_rep_view(l, &y_rep, &to, &to_mem));
    MB_TRY_GOTO(mb__dn_emit_reorder(l, from_mem, &from, to_mem, &to));
  }
  MB_TRY_GOTO(state_out_finish(l, &hs));
  MB_TRY_GOTO(state_out_finish(l, &cs));
done:
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  return status;
}

#endif /* MB_HAVE_DNNL */
