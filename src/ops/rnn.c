/* Recurrent layers: RNN, GRU and LSTM (ONNX opsets 1, 7 and 14).
 *
 * All three share one plan (directions, sizes, layout, activations, clip)
 * and one driver per direction:
 *   1. the input projection of every time step at once, X * W^T plus both
 *      biases, as one sgemm over all (step, batch) rows;
 *   2. per step, the recurrent product H * R^T as one sgemm over the batch,
 *      then the gate arithmetic row by row.
 * sequence_lens freezes a batch entry once its sequence ends: its Y rows are
 * zero from there and Y_h / Y_c keep its last state. A reverse direction
 * walks each entry from its own last valid step back to step 0.
 *
 * Every element type is computed in float32 (float16, bfloat16 and double
 * inputs are converted once per run). */
#include "ops/op.h"

#include <math.h>

typedef enum rnn_kind { RNN_VANILLA, RNN_GRU, RNN_LSTM } rnn_kind;

/* ---- activation functions ---- */

typedef enum rnn_act_id {
  ACT_RELU,
  ACT_TANH,
  ACT_SIGMOID,
  ACT_AFFINE,
  ACT_LEAKY_RELU,
  ACT_THRESHOLDED_RELU,
  ACT_SCALED_TANH,
  ACT_HARD_SIGMOID,
  ACT_ELU,
  ACT_SOFTSIGN,
  ACT_SOFTPLUS,
} rnn_act_id;

/* The functions the activations attribute may name, with the alpha and
 * beta each one consumes from activation_alpha / activation_beta (in the
 * order of the activations) and their defaults when the lists run out. */
static const struct rnn_act_row {
  const char *name;
  rnn_act_id id;
  bool uses_alpha, uses_beta;
  float alpha, beta;
} rnn_act_table[] = {
    {"Relu", ACT_RELU, false, false, 0.0f, 0.0f},
    {"Tanh", ACT_TANH, false, false, 0.0f, 0.0f},
    {"Sigmoid", ACT_SIGMOID, false, false, 0.0f, 0.0f},
    {"Affine", ACT_AFFINE, true, true, 1.0f, 0.0f},
    {"LeakyRelu", ACT_LEAKY_RELU, true, false, 0.01f, 0.0f},
    {"ThresholdedRelu", ACT_THRESHOLDED_RELU, true, false, 1.0f, 0.0f},
    {"ScaledTanh", ACT_SCALED_TANH, true, true, 1.0f, 1.0f},
    {"HardSigmoid", ACT_HARD_SIGMOID, true, true, 0.2f, 0.5f},
    {"Elu", ACT_ELU, true, false, 1.0f, 0.0f},
    {"Softsign", ACT_SOFTSIGN, false, false, 0.0f, 0.0f},
    {"Softplus", ACT_SOFTPLUS, false, false, 0.0f, 0.0f},
};

typedef struct rnn_act {
  rnn_act_id id;
  float alpha, beta;
} rnn_act;

static inline float rnn_sigmoid(float x) {
  return x >= 0 ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x));
}

static inline float rnn_act_apply(const rnn_act *a, float x) {
  switch (a->id) {
  case ACT_RELU:
    return x > 0 ? x : 0.0f;
  case ACT_TANH:
    return tanhf(x);
  case ACT_SIGMOID:
    return rnn_sigmoid(x);
  case ACT_AFFINE:
    return a->alpha * x + a->beta;
  case ACT_LEAKY_RELU:
    return x >= 0 ? x : a->alpha * x;
  case ACT_THRESHOLDED_RELU:
    return x > a->alpha ? x : 0.0f;
  case ACT_SCALED_TANH:
    return a->alpha * tanhf(a->beta * x);
  case ACT_HARD_SIGMOID:
    return fmaxf(0.0f, fminf(1.0f, a->alpha * x + a->beta));
  case ACT_ELU:
    return x >= 0 ? x : a->alpha * (expf(x) - 1.0f);
  case ACT_SOFTSIGN:
    return x / (1.0f + fabsf(x));
  case ACT_SOFTPLUS:
    return log1pf(expf(-fabsf(x))) + fmaxf(x, 0.0f);
  }
  return x;
}

/* Clips (when clip > 0) then applies the activation to n values in place. */
static void rnn_act_run(const rnn_act *a, float clip, float *x, int64_t n) {
  if (clip > 0)
    for (int64_t i = 0; i < n; i++)
      x[i] = fmaxf(-clip, fminf(clip, x[i]));
  switch (a->id) { /* the common cases get loops of their own */
  case ACT_SIGMOID:
    for (int64_t i = 0; i < n; i++)
      x[i] = rnn_sigmoid(x[i]);
    return;
  case ACT_TANH:
    for (int64_t i = 0; i < n; i++)
      x[i] = tanhf(x[i]);
    return;
  default:
    for (int64_t i = 0; i < n; i++)
      x[i] = rnn_act_apply(a, x[i]);
  }
}

/* ---- the plan: attributes and shapes ---- */

#define RNN_MAX_ACTS 3 /* f, g, h per direction */

typedef struct rnn_plan {
  rnn_kind kind;
  int gates;        /* 1, 3 or 4 */
  int n_acts;       /* activations per direction: 1, 2 or 3 */
  int dirs;         /* 1 or 2 */
  bool reverse;     /* the only direction runs backwards */
  bool batch_first; /* layout = 1 */
  bool linear_before_reset, input_forget;
  float clip; /* 0: no clipping */
  int64_t seq, batch, input, hidden;
  rnn_act acts[2][RNN_MAX_ACTS];
} rnn_plan;

static const struct rnn_kind_row {
  int gates, n_acts, bias_inputs;
  const char *default_acts[RNN_MAX_ACTS];
} rnn_kinds[] = {
    [RNN_VANILLA] = {1, 1, 2, {"Tanh"}},
    [RNN_GRU] = {3, 2, 2, {"Sigmoid", "Tanh"}},
    [RNN_LSTM] = {4, 3, 2, {"Sigmoid", "Tanh", "Tanh"}},
};

static mb_status rnn_parse_acts(mb_op_ctx *ctx, rnn_plan *p) {
  const mb_attr *names = mb__node_attr(ctx->node, "activations");
  const float *alphas = NULL, *betas = NULL;
  int64_t n_alpha =
      mb__node_attr_floats(ctx->node, "activation_alpha", &alphas);
  int64_t n_beta = mb__node_attr_floats(ctx->node, "activation_beta", &betas);
  int64_t need = (int64_t)p->n_acts * p->dirs, next_alpha = 0, next_beta = 0;
  if (names && names->type != MB_ATTR_STRINGS)
    return mb__op_error(ctx, MB_STATUS_PARSE,
                        "attribute activations must be a list of strings");
  /* One direction's list serves both directions when only that is given. */
  if (names && names->n != need && names->n != p->n_acts)
    return mb__op_error(
        ctx, MB_STATUS_SHAPE, "activations has %lld entries; %s takes %lld",
        (long long)names->n, ctx->node->op_type, (long long)need);
  for (int64_t i = 0; i < need; i++) {
    const char *name = names ? names->strings[i % names->n]
                             : rnn_kinds[p->kind].default_acts[i % p->n_acts];
    const struct rnn_act_row *row = NULL;
    for (size_t r = 0; r < MB_ARRAY_COUNT(rnn_act_table) && !row; r++)
      if (strcmp(rnn_act_table[r].name, name) == 0)
        row = &rnn_act_table[r];
    if (!row)
      return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                          "activation '%s' is not supported", name);
    rnn_act *a = &p->acts[i / p->n_acts][i % p->n_acts];
    a->id = row->id;
    a->alpha = row->alpha;
    a->beta = row->beta;
    if (row->uses_alpha && next_alpha < n_alpha)
      a->alpha = alphas[next_alpha++];
    if (row->uses_beta && next_beta < n_beta)
      a->beta = betas[next_beta++];
  }
  return MB_STATUS_OK;
}

static mb_status rnn_check_dims(mb_op_ctx *ctx, const mb_tensor *t,
                                const char *what, int rank,
                                const int64_t *want) {
  char have[96], expect[96];
  bool ok = t->rank == rank;
  for (int d = 0; d < rank && ok; d++)
    ok = t->dims[d] == want[d];
  if (!ok)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "%s has shape %s, expected %s",
                        what,
                        mb__shape_str(t->rank, t->dims, have, sizeof have),
                        mb__shape_str(rank, want, expect, sizeof expect));
  return MB_STATUS_OK;
}

/* Input indices. */
enum { IN_X, IN_W, IN_R, IN_B, IN_SEQ_LENS, IN_H0, IN_C0, IN_P };

static mb_status rnn_plan_make(mb_op_ctx *ctx, rnn_kind kind, rnn_plan *p) {
  mb_status st;
  memset(p, 0, sizeof *p);
  p->kind = kind;
  p->gates = rnn_kinds[kind].gates;
  p->n_acts = rnn_kinds[kind].n_acts;
  if ((st = mb__op_check_arity(ctx, 3, kind == RNN_LSTM ? 8 : 6)))
    return st;
  const mb_tensor *x = ctx->inputs[IN_X], *w = ctx->inputs[IN_W],
                  *r = ctx->inputs[IN_R];
  for (int i = 0; i < ctx->n_inputs; i++) {
    const mb_tensor *t = ctx->inputs[i];
    if (t && i != IN_SEQ_LENS && !mb__dtype_is_float(t->dtype))
      return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                          "input %d has element type %s; only float types "
                          "are supported",
                          i, mb_dtype_name(t->dtype));
    if (t && i != IN_SEQ_LENS && t->dtype != x->dtype)
      return mb__op_error(ctx, MB_STATUS_SHAPE, "input %d is %s but X is %s", i,
                          mb_dtype_name(t->dtype), mb_dtype_name(x->dtype));
  }
  const char *direction =
      mb__node_attr_string(ctx->node, "direction", "forward");
  if (strcmp(direction, "forward") == 0) {
    p->dirs = 1;
  } else if (strcmp(direction, "reverse") == 0) {
    p->dirs = 1;
    p->reverse = true;
  } else if (strcmp(direction, "bidirectional") == 0) {
    p->dirs = 2;
  } else {
    return mb__op_error(ctx, MB_STATUS_PARSE,
                        "direction '%s' is not forward, reverse or "
                        "bidirectional",
                        direction);
  }
  int64_t layout = mb__node_attr_int(ctx->node, "layout", 0);
  if (layout != 0 && layout != 1)
    return mb__op_error(ctx, MB_STATUS_PARSE, "layout %lld is not 0 or 1",
                        (long long)layout);
  p->batch_first = layout == 1;
  p->clip = mb__node_attr_float(ctx->node, "clip", 0.0f);
  if (p->clip < 0 || p->clip != p->clip)
    return mb__op_error(ctx, MB_STATUS_PARSE, "clip %g must be positive",
                        (double)p->clip);
  p->linear_before_reset =
      mb__node_attr_int(ctx->node, "linear_before_reset", 0) != 0;
  p->input_forget = mb__node_attr_int(ctx->node, "input_forget", 0) != 0;
  if (x->rank != 3)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "X has rank %d, expected 3",
                        x->rank);
  p->seq = x->dims[p->batch_first ? 1 : 0];
  p->batch = x->dims[p->batch_first ? 0 : 1];
  p->input = x->dims[2];
  if (r->rank != 3)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "R has rank %d, expected 3",
                        r->rank);
  p->hidden = mb__node_attr_int(ctx->node, "hidden_size", r->dims[2]);
  if (p->hidden < 1 || p->hidden > MB_OP_ATTR_MAX)
    return mb__op_error(ctx, MB_STATUS_PARSE, "hidden_size %lld is invalid",
                        (long long)p->hidden);
  int64_t gh = p->gates * p->hidden;
  int64_t w_dims[3] = {p->dirs, gh, p->input};
  int64_t r_dims[3] = {p->dirs, gh, p->hidden};
  int64_t b_dims[2] = {p->dirs, 2 * gh};
  int64_t h_dims[3] = {p->dirs, p->batch, p->hidden};
  int64_t p_dims[2] = {p->dirs, 3 * p->hidden};
  int64_t len_dims[1] = {p->batch};
  if (p->batch_first) {
    h_dims[0] = p->batch;
    h_dims[1] = p->dirs;
  }
  if ((st = rnn_check_dims(ctx, w, "W", 3, w_dims)) ||
      (st = rnn_check_dims(ctx, r, "R", 3, r_dims)))
    return st;
  const mb_tensor *t;
  if ((t = mb__op_input(ctx, IN_B)) &&
      (st = rnn_check_dims(ctx, t, "B", 2, b_dims)))
    return st;
  if ((t = mb__op_input(ctx, IN_SEQ_LENS))) {
    if (t->dtype != MB_DTYPE_INT32)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "sequence_lens is %s, expected int32",
                          mb_dtype_name(t->dtype));
    if ((st = rnn_check_dims(ctx, t, "sequence_lens", 1, len_dims)))
      return st;
  }
  if ((t = mb__op_input(ctx, IN_H0)) &&
      (st = rnn_check_dims(ctx, t, "initial_h", 3, h_dims)))
    return st;
  if (kind == RNN_LSTM) {
    if ((t = mb__op_input(ctx, IN_C0)) &&
        (st = rnn_check_dims(ctx, t, "initial_c", 3, h_dims)))
      return st;
    if ((t = mb__op_input(ctx, IN_P)) &&
        (st = rnn_check_dims(ctx, t, "P", 2, p_dims)))
      return st;
  }
  return rnn_parse_acts(ctx, p);
}

static mb_status rnn_infer(mb_op_ctx *ctx, rnn_kind kind) {
  rnn_plan p;
  mb_status st = rnn_plan_make(ctx, kind, &p);
  if (st)
    return st;
  mb_dtype dt = ctx->inputs[IN_X]->dtype;
  int64_t y_dims[4] = {p.seq, p.dirs, p.batch, p.hidden};
  int64_t h_dims[3] = {p.dirs, p.batch, p.hidden};
  if (p.batch_first) {
    int64_t yb[4] = {p.batch, p.seq, p.dirs, p.hidden};
    memcpy(y_dims, yb, sizeof y_dims);
    h_dims[0] = p.batch;
    h_dims[1] = p.dirs;
  }
  mb_tensor *y = mb__op_output(ctx, 0), *yh = mb__op_output(ctx, 1),
            *yc = kind == RNN_LSTM ? mb__op_output(ctx, 2) : NULL;
  if (y && (st = mb__tensor_set_shape(y, dt, 4, y_dims, ctx->err)))
    return st;
  if (yh && (st = mb__tensor_set_shape(yh, dt, 3, h_dims, ctx->err)))
    return st;
  if (yc && (st = mb__tensor_set_shape(yc, dt, 3, h_dims, ctx->err)))
    return st;
  return MB_STATUS_OK;
}

/* ---- the kernel ---- */

/* Float32 views of the inputs and float32 destinations of the outputs. */
typedef struct rnn_io {
  const float *x, *w, *r, *b, *h0, *c0, *peep;
  int32_t *lens; /* per batch entry, clamped to [0, seq] */
  float *y, *yh, *yc;
} rnn_io;

/* Float32 copy of an input in `*cursor` (advanced), or its own data. */
static const float *rnn_f32(const mb_tensor *t, float **cursor) {
  if (!t)
    return NULL;
  if (t->dtype == MB_DTYPE_FLOAT)
    return t->data;
  float *dst = *cursor;
  for (int64_t i = 0; i < t->numel; i++)
    dst[i] = (float)mb__tensor_get_f64(t, i);
  *cursor += (t->numel + 15) & ~(int64_t)15;
  return dst;
}

static float *rnn_out_f32(mb_tensor *t, float **cursor) {
  if (!t || t->dtype == MB_DTYPE_FLOAT)
    return t ? t->data : NULL;
  float *dst = *cursor;
  *cursor += (t->numel + 15) & ~(int64_t)15;
  return dst;
}

static int64_t rnn_padded(const mb_tensor *t, bool convert) {
  return t && (convert || t->dtype != MB_DTYPE_FLOAT)
             ? (t->numel + 15) & ~(int64_t)15
             : 0;
}

/* Row of the (step, batch) pair in X and in the input projection. */
static inline int64_t rnn_x_row(const rnn_plan *p, int64_t t, int64_t b) {
  return p->batch_first ? b * p->seq + t : t * p->batch + b;
}
static inline int64_t rnn_y_off(const rnn_plan *p, int64_t t, int d,
                                int64_t b) {
  return (p->batch_first ? (b * p->seq + t) * p->dirs + d
                         : (t * p->dirs + d) * p->batch + b) *
         p->hidden;
}
static inline int64_t rnn_h_off(const rnn_plan *p, int d, int64_t b) {
  return (p->batch_first ? b * p->dirs + d : d * p->batch + b) * p->hidden;
}

/* Working memory of one direction. */
typedef struct rnn_work {
  float *xw;    /* [seq * batch, gates * hidden]: X W^T + biases */
  float *hr;    /* [batch, gates * hidden]: H R^T of the current step */
  float *h, *c; /* [batch, hidden]: the state */
  float *tmp;   /* [batch, hidden]: GRU's r (.) H */
} rnn_work;

static void rnn_direction(mb_op_ctx *ctx, const rnn_plan *p, const rnn_io *io,
                          int d, const rnn_work *wk) {
  const int64_t H = p->hidden, G = p->gates, GH = G * H;
  const int64_t rows = p->seq * p->batch;
  const float *w = io->w + d * GH * p->input;
  const float *r = io->r + d * GH * H;
  const rnn_act *acts = p->acts[d];
  bool reverse = p->reverse || d == 1;

  /* 1. Input projection of every step, with Wb + Rb folded in (except
   * GRU's Rbh, which sits inside the reset gate's product). */
  for (int64_t i = 0; i < rows; i++) {
    float *row = wk->xw + i * GH;
    for (int64_t j = 0; j < GH; j++)
      row[j] = 0.0f;
    if (io->b) {
      const float *wb = io->b + d * 2 * GH, *rb = wb + GH;
      for (int64_t j = 0; j < GH; j++)
        row[j] = wb[j] + rb[j];
      if (p->kind == RNN_GRU)
        for (int64_t j = 2 * H; j < 3 * H; j++)
          row[j] = wb[j];
    }
  }
  mb__sgemm(ctx->pool, false, true, rows, GH, p->input, 1.0f, io->x, p->input,
            w, p->input, 1.0f, wk->xw, GH);
  const float *rbh =
      p->kind == RNN_GRU && io->b ? io->b + d * 2 * GH + GH + 2 * H : NULL;

  /* 2. The state. */
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t j = 0; j < H; j++) {
      wk->h[b * H + j] = io->h0 ? io->h0[rnn_h_off(p, d, b) + j] : 0.0f;
      if (wk->c)
        wk->c[b * H + j] = io->c0 ? io->c0[rnn_h_off(p, d, b) + j] : 0.0f;
    }
  }
  const float *peep = io->peep ? io->peep + d * 3 * H : NULL;

  /* 3. The steps. Batch entries whose sequence has ended keep their state
   * and take no part in the gate arithmetic. */
  for (int64_t s = 0; s < p->seq; s++) {
    int64_t gru_cols =
        p->kind == RNN_GRU && !p->linear_before_reset ? 2 * H : GH;
    mb__sgemm(ctx->pool, false, true, p->batch, gru_cols, H, 1.0f, wk->h, H, r,
              H, 0.0f, wk->hr, GH);
    if (p->kind == RNN_GRU && !p->linear_before_reset) {
      /* r (.) H needs r first: compute it for every active entry. */
      for (int64_t b = 0; b < p->batch; b++) {
        int64_t len = io->lens[b];
        if (s >= len)
          continue;
        int64_t t = reverse ? len - 1 - s : s;
        const float *xw = wk->xw + rnn_x_row(p, t, b) * GH;
        float *hr = wk->hr + b * GH;
        for (int64_t j = 0; j < 2 * H; j++)
          hr[j] += xw[j];
        rnn_act_run(&acts[0], p->clip, hr, 2 * H);
        for (int64_t j = 0; j < H; j++)
          wk->tmp[b * H + j] = hr[H + j] * wk->h[b * H + j];
      }
      mb__sgemm(ctx->pool, false, true, p->batch, H, H, 1.0f, wk->tmp, H,
                r + 2 * H * H, H, 0.0f, wk->hr + 2 * H, GH);
    }
    for (int64_t b = 0; b < p->batch; b++) {
      int64_t len = io->lens[b];
      if (s >= len)
        continue;
      int64_t t = reverse ? len - 1 - s : s;
      const float *xw = wk->xw + rnn_x_row(p, t, b) * GH;
      float *g = wk->hr + b * GH, *h = wk->h + b * H;
      switch (p->kind) {
      case RNN_VANILLA:
        for (int64_t j = 0; j < H; j++)
          g[j] += xw[j];
        rnn_act_run(&acts[0], p->clip, g, H);
        memcpy(h, g, sizeof *h * (size_t)H);
        break;
      case RNN_GRU: {
        float *z = g, *rg = g + H, *hh = g + 2 * H;
        if (p->linear_before_reset) {
          for (int64_t j = 0; j < 2 * H; j++)
            g[j] += xw[j];
          rnn_act_run(&acts[0], p->clip, g, 2 * H);
          for (int64_t j = 0; j < H; j++)
            hh[j] = xw[2 * H + j] + rg[j] * (hh[j] + (rbh ? rbh[j] : 0.0f));
        } else {
          /* z and r are activated already; hh holds (r (.) H) Rh^T. */
          for (int64_t j = 0; j < H; j++)
            hh[j] += xw[2 * H + j] + (rbh ? rbh[j] : 0.0f);
        }
        rnn_act_run(&acts[1], p->clip, hh, H);
        for (int64_t j = 0; j < H; j++)
          h[j] = (1.0f - z[j]) * hh[j] + z[j] * h[j];
        break;
      }
      case RNN_LSTM: {
        /* Gate order i, o, f, c; peepholes i, o, f. */
        float *gi = g, *go = g + H, *gf = g + 2 * H, *gc = g + 3 * H;
        float *c = wk->c + b * H;
        for (int64_t j = 0; j < GH; j++)
          g[j] += xw[j];
        if (peep)
          for (int64_t j = 0; j < H; j++) {
            gi[j] += peep[j] * c[j];
            gf[j] += peep[2 * H + j] * c[j];
          }
        rnn_act_run(&acts[0], p->clip, gi, H);
        if (p->input_forget)
          for (int64_t j = 0; j < H; j++)
            gf[j] = 1.0f - gi[j];
        else
          rnn_act_run(&acts[0], p->clip, gf, H);
        rnn_act_run(&acts[1], p->clip, gc, H);
        for (int64_t j = 0; j < H; j++)
          c[j] = gf[j] * c[j] + gi[j] * gc[j];
        if (peep)
          for (int64_t j = 0; j < H; j++)
            go[j] += peep[H + j] * c[j];
        rnn_act_run(&acts[0], p->clip, go, H);
        for (int64_t j = 0; j < H; j++)
          h[j] = go[j] * rnn_act_apply(&acts[2], c[j]);
        break;
      }
      }
      if (io->y)
        memcpy(io->y + rnn_y_off(p, t, d, b), h, sizeof *h * (size_t)H);
    }
  }
  for (int64_t b = 0; b < p->batch; b++) {
    if (io->yh)
      memcpy(io->yh + rnn_h_off(p, d, b), wk->h + b * H, sizeof(float) * H);
    if (io->yc)
      memcpy(io->yc + rnn_h_off(p, d, b), wk->c + b * H, sizeof(float) * H);
  }
}

static mb_status rnn_run(mb_op_ctx *ctx, rnn_kind kind) {
  rnn_plan p;
  mb_status st = rnn_plan_make(ctx, kind, &p);
  if (st)
    return st;
  const int64_t H = p.hidden, GH = p.gates * H;
  mb_tensor *y = mb__op_output(ctx, 0), *yh = mb__op_output(ctx, 1),
            *yc = kind == RNN_LSTM ? mb__op_output(ctx, 2) : NULL;
  const mb_tensor *lens_t = mb__op_input(ctx, IN_SEQ_LENS);
  const mb_tensor *h0 = mb__op_input(ctx, IN_H0);
  const mb_tensor *c0 = kind == RNN_LSTM ? mb__op_input(ctx, IN_C0) : NULL;
  const mb_tensor *peep = kind == RNN_LSTM ? mb__op_input(ctx, IN_P) : NULL;

  /* One scratch block: converted inputs, float outputs, the work of one
   * direction, and the lengths. Sizes were checked by infer's shapes. */
  int64_t n = 0;
  for (int i = 0; i < ctx->n_inputs; i++)
    if (i != IN_SEQ_LENS && (kind == RNN_LSTM || i < IN_C0))
      n += rnn_padded(ctx->inputs[i], false);
  n += rnn_padded(y, false) + rnn_padded(yh, false) + rnn_padded(yc, false);
  int64_t xw_n = p.seq * p.batch * GH, hr_n = p.batch * GH, h_n = p.batch * H;
  n += xw_n + hr_n + 3 * h_n + 64 + p.batch;
  float *block = mb__op_scratch(ctx, 0, sizeof(float) * (size_t)n);
  if (!block)
    return MB_STATUS_OUT_OF_MEMORY;
  float *cur = block;
  rnn_io io = {0};
  io.x = rnn_f32(ctx->inputs[IN_X], &cur);
  io.w = rnn_f32(ctx->inputs[IN_W], &cur);
  io.r = rnn_f32(ctx->inputs[IN_R], &cur);
  io.b = rnn_f32(mb__op_input(ctx, IN_B), &cur);
  io.h0 = rnn_f32(h0, &cur);
  io.c0 = rnn_f32(c0, &cur);
  io.peep = rnn_f32(peep, &cur);
  io.y = rnn_out_f32(y, &cur);
  io.yh = rnn_out_f32(yh, &cur);
  io.yc = rnn_out_f32(yc, &cur);
  rnn_work wk = {0};
  wk.xw = cur;
  cur += xw_n;
  wk.hr = cur;
  cur += hr_n;
  wk.h = cur;
  cur += h_n;
  wk.c = kind == RNN_LSTM ? cur : NULL;
  cur += h_n;
  wk.tmp = cur;
  cur += h_n;
  io.lens = (int32_t *)cur;
  for (int64_t b = 0; b < p.batch; b++) {
    int64_t len = lens_t ? ((const int32_t *)lens_t->data)[b] : p.seq;
    if (len < 0 || len > p.seq)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "sequence_lens[%lld] = %lld is outside [0, %lld]",
                          (long long)b, (long long)len, (long long)p.seq);
    io.lens[b] = (int32_t)len;
  }
  /* Steps past a sequence's end stay zero in Y. */
  if (io.y)
    memset(io.y, 0, sizeof(float) * (size_t)y->numel);
  for (int d = 0; d < p.dirs; d++)
    rnn_direction(ctx, &p, &io, d, &wk);
  if (y && io.y != y->data)
    mb__op_store_f32(y, io.y);
  if (yh && io.yh != yh->data)
    mb__op_store_f32(yh, io.yh);
  if (yc && io.yc != yc->data)
    mb__op_store_f32(yc, io.yc);
  return MB_STATUS_OK;
}

#define RNN_OP(name, kind)                                                     \
  static mb_status rnn_infer_##name(mb_op_ctx *ctx) {                          \
    return rnn_infer(ctx, kind);                                               \
  }                                                                            \
  static mb_status rnn_run_##name(mb_op_ctx *ctx) {                            \
    return rnn_run(ctx, kind);                                                 \
  }
RNN_OP(RNN, RNN_VANILLA)
RNN_OP(GRU, RNN_GRU)
RNN_OP(LSTM, RNN_LSTM)
#undef RNN_OP

/* Opset 1 had an output_sequence attribute (Y is computed whenever the
 * model asks for it, so it changes nothing here); 14 added layout. Every
 * output is optional, Y included. */
const mb_op_def mb__ops_rnn[] = {
    {"", "RNN", 1, rnn_infer_RNN, rnn_run_RNN, MB_OP_OPTIONAL_FIRST_OUTPUT},
    {"", "RNN", 7, rnn_infer_RNN, rnn_run_RNN, MB_OP_OPTIONAL_FIRST_OUTPUT},
    {"", "RNN", 14, rnn_infer_RNN, rnn_run_RNN, MB_OP_OPTIONAL_FIRST_OUTPUT},
    {"", "GRU", 1, rnn_infer_GRU, rnn_run_GRU, MB_OP_OPTIONAL_FIRST_OUTPUT},
    {"", "GRU", 3, rnn_infer_GRU, rnn_run_GRU, MB_OP_OPTIONAL_FIRST_OUTPUT},
    {"", "GRU", 7, rnn_infer_GRU, rnn_run_GRU, MB_OP_OPTIONAL_FIRST_OUTPUT},
    {"", "GRU", 14, rnn_infer_GRU, rnn_run_GRU, MB_OP_OPTIONAL_FIRST_OUTPUT},
    {"", "LSTM", 1, rnn_infer_LSTM, rnn_run_LSTM, MB_OP_OPTIONAL_FIRST_OUTPUT},
    {"", "LSTM", 7, rnn_infer_LSTM, rnn_run_LSTM, MB_OP_OPTIONAL_FIRST_OUTPUT},
    {"", "LSTM", 14, rnn_infer_LSTM, rnn_run_LSTM, MB_OP_OPTIONAL_FIRST_OUTPUT},
};
MB_OP_TABLE_END(rnn);
