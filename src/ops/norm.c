/* Normalisations: Softmax, LogSoftmax, Hardmax, BatchNormalization,
 * InstanceNormalization, LayerNormalization, LpNormalization,
 * MeanVarianceNormalization and LRN.
 *
 * Kernels exist for float and double; float16 and bfloat16 are computed in
 * float32. Statistics (sums, means, variances) accumulate in double so the
 * reference stays accurate for long rows. */

#include "ops/op.h"
#include "ops/vmath.h"

#include <tgmath.h>

/* ------------------------------------------------------------------------ */
/* Common: float views of input 0 and output 0                                */
/* ------------------------------------------------------------------------ */

/* The data an op computes on: float or double; half types go through
 * float32 scratch (slot 0 for x, slot 1 for y). */
typedef struct nm_io {
  const void *x;
  void *y;
  bool f64;
} nm_io;

static mb_status nm_failed(mb_op_ctx *ctx) {
  return ctx->err && ctx->err->status ? ctx->err->status
                                      : MB_STATUS_OUT_OF_MEMORY;
}

static mb_status nm_begin(mb_op_ctx *ctx, const mb_tensor *x, mb_tensor *y,
                          nm_io *io) {
  io->f64 = x->dtype == MB_DTYPE_DOUBLE;
  if (io->f64 || x->dtype == MB_DTYPE_FLOAT) {
    io->x = x->data;
    io->y = y->data;
    return MB_STATUS_OK;
  }
  io->x = mb__op_as_f32(ctx, x, 0);
  io->y = mb__op_f32_dest(ctx, y, 1);
  return io->x && io->y ? MB_STATUS_OK : nm_failed(ctx);
}

static void nm_end(mb_tensor *y, const nm_io *io) {
  if (io->y != y->data)
    mb__op_store_f32(y, io->y);
}

static mb_status nm_check_float(mb_op_ctx *ctx, const mb_tensor *t,
                                const char *what) {
  if (!mb__dtype_is_float(t->dtype))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "%s has element type %s; only float types are "
                        "supported",
                        what, mb_dtype_name(t->dtype));
  return MB_STATUS_OK;
}

/* Reads a small parameter tensor (per-channel values) into doubles. */
static double *nm_params(mb_op_ctx *ctx, const mb_tensor *t, int slot) {
  double *p = mb__op_scratch(ctx, slot, (size_t)MB_MAX(t->numel, 1) * 8);
  if (p)
    for (int64_t i = 0; i < t->numel; i++)
      p[i] = mb__tensor_get_f64(t, i);
  return p;
}

static int64_t nm_prod(const int64_t *dims, int from, int to) {
  int64_t p = 1;
  for (int d = from; d < to; d++)
    p *= dims[d];
  return p;
}

/* Output 0 with the shape and type of input 0. */
static mb_status nm_same_shape(mb_op_ctx *ctx) {
  const mb_tensor *x = mb__op_input(ctx, 0);
  mb_tensor *y = mb__op_output(ctx, 0);
  return y ? mb__tensor_set_shape(y, x->dtype, x->rank, x->dims, ctx->err)
           : MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Softmax, LogSoftmax, Hardmax                                              */
/* ------------------------------------------------------------------------ */

static inline float nm_exp_f32(float x) {
  return mb__exp_f32(x);
}
static inline double nm_exp_f64(double x) {
  return exp(x);
}

typedef enum nm_softmax_kind {
  NM_SOFTMAX,
  NM_LOGSOFTMAX,
  NM_HARDMAX
} nm_softmax_kind;

/* Reductions over a contiguous row with NM_LANES partial results: one
 * accumulator is a serial dependency the compiler must not reorder, lanes
 * let the loop vectorise. Sums accumulate in double. */
#define NM_LANES 8
#define NM_LANE_KERNELS(sfx, T)                                                \
  static T nm_max_##sfx(const T *x, int64_t n) {                               \
    T m[NM_LANES];                                                             \
    for (int k = 0; k < NM_LANES; k++)                                         \
      m[k] = x[0];                                                             \
    int64_t i = 0;                                                             \
    for (; i + NM_LANES <= n; i += NM_LANES)                                   \
      for (int k = 0; k < NM_LANES; k++)                                       \
        m[k] = x[i + k] > m[k] ? x[i + k] : m[k];                              \
    for (; i < n; i++)                                                         \
      m[0] = x[i] > m[0] ? x[i] : m[0];                                        \
    for (int k = 1; k < NM_LANES; k++)                                         \
      m[0] = m[k] > m[0] ? m[k] : m[0];                                        \
    return m[0];                                                               \
  }                                                                            \
  /* Sum of x[i], or of (x[i] - mu)^2 when squares is set. */                  \
  static double nm_sum_##sfx(const T *x, int64_t n, bool squares, double mu) { \
    double acc[NM_LANES] = {0};                                                \
    int64_t i = 0;                                                             \
    if (squares) {                                                             \
      for (; i + NM_LANES <= n; i += NM_LANES)                                 \
        for (int k = 0; k < NM_LANES; k++) {                                   \
          double d = x[i + k] - mu;                                            \
          acc[k] += d * d;                                                     \
        }                                                                      \
      for (; i < n; i++)                                                       \
        acc[0] += (x[i] - mu) * (x[i] - mu);                                   \
    } else {                                                                   \
      for (; i + NM_LANES <= n; i += NM_LANES)                                 \
        for (int k = 0; k < NM_LANES; k++)                                     \
          acc[k] += x[i + k];                                                  \
      for (; i < n; i++)                                                       \
        acc[0] += x[i];                                                        \
    }                                                                          \
    double s = 0;                                                              \
    for (int k = 0; k < NM_LANES; k++)                                         \
      s += acc[k];                                                             \
    return s;                                                                  \
  }
NM_LANE_KERNELS(f32, float)
NM_LANE_KERNELS(f64, double)

/* One block of n x inner elements, normalised along n. m and s are scratch
 * rows of `inner` entries. */
#define NM_SOFTMAX_KERNEL(sfx, T)                                              \
  static void nm_softmax_##sfx(nm_softmax_kind kind, const T *x, T *y,         \
                               int64_t n, int64_t inner, T *m, double *s) {    \
    if (inner == 1 && kind == NM_HARDMAX) {                                    \
      int64_t arg = 0;                                                         \
      for (int64_t i = 1; i < n; i++)                                          \
        arg = x[i] > x[arg] ? i : arg;                                         \
      for (int64_t i = 0; i < n; i++)                                          \
        y[i] = i == arg;                                                       \
      return;                                                                  \
    }                                                                          \
    if (inner == 1) { /* separate passes, each of which vectorises */          \
      const T mx = nm_max_##sfx(x, n);                                         \
      for (int64_t i = 0; i < n; i++)                                          \
        y[i] = nm_exp_##sfx(x[i] - mx);                                        \
      const double sum = nm_sum_##sfx(y, n, false, 0);                         \
      if (kind == NM_SOFTMAX) {                                                \
        const T scale = (T)(1.0 / sum);                                        \
        for (int64_t i = 0; i < n; i++)                                        \
          y[i] *= scale;                                                       \
      } else {                                                                 \
        const T shift = mx + (T)log(sum);                                      \
        for (int64_t i = 0; i < n; i++)                                        \
          y[i] = x[i] - shift;                                                 \
      }                                                                        \
      return;                                                                  \
    }                                                                          \
    /* Strided: vectorise across `inner` instead. */                           \
    for (int64_t j = 0; j < inner; j++) {                                      \
      m[j] = x[j];                                                             \
      s[j] = 0;                                                                \
    }                                                                          \
    for (int64_t i = 1; i < n; i++)                                            \
      for (int64_t j = 0; j < inner; j++)                                      \
        m[j] = x[i * inner + j] > m[j] ? x[i * inner + j] : m[j];              \
    if (kind == NM_HARDMAX) {                                                  \
      for (int64_t j = 0; j < inner; j++)                                      \
        s[j] = 0; /* 1 once the first maximum has been marked */               \
      for (int64_t i = 0; i < n; i++)                                          \
        for (int64_t j = 0; j < inner; j++) {                                  \
          bool first = s[j] == 0 && x[i * inner + j] == m[j];                  \
          y[i * inner + j] = first;                                            \
          if (first)                                                           \
            s[j] = 1;                                                          \
        }                                                                      \
      return;                                                                  \
    }                                                                          \
    for (int64_t i = 0; i < n; i++)                                            \
      for (int64_t j = 0; j < inner; j++) {                                    \
        T e = nm_exp_##sfx(x[i * inner + j] - m[j]);                           \
        if (kind == NM_SOFTMAX)                                                \
          y[i * inner + j] = e;                                                \
        s[j] += e;                                                             \
      }                                                                        \
    if (kind == NM_SOFTMAX) {                                                  \
      for (int64_t j = 0; j < inner; j++)                                      \
        s[j] = 1.0 / s[j];                                                     \
      for (int64_t i = 0; i < n; i++)                                          \
        for (int64_t j = 0; j < inner; j++)                                    \
          y[i * inner + j] *= (T)s[j];                                         \
    } else {                                                                   \
      for (int64_t j = 0; j < inner; j++)                                      \
        m[j] += (T)log(s[j]);                                                  \
      for (int64_t i = 0; i < n; i++)                                          \
        for (int64_t j = 0; j < inner; j++)                                    \
          y[i * inner + j] = x[i * inner + j] - m[j];                          \
    }                                                                          \
  }
NM_SOFTMAX_KERNEL(f32, float)
NM_SOFTMAX_KERNEL(f64, double)

/* Before opset 13 the input is coerced to 2-D at `axis` (default 1) and
 * each row is normalised; from 13 only the one axis (default -1) is. */
static mb_status nm_softmax_shape(mb_op_ctx *ctx, bool coerce_2d,
                                  int64_t *outer, int64_t *n, int64_t *inner) {
  mb_status st = mb__op_check_arity(ctx, 1, 1);
  if (st)
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  st = nm_check_float(ctx, x, "input");
  if (st)
    return st;
  int axis;
  int64_t a = mb__node_attr_int(ctx->node, "axis", coerce_2d ? 1 : -1);
  /* A scalar behaves like a single element of rank 1. */
  int rank = MB_MAX(x->rank, 1);
  if ((st = mb__op_axis(ctx, a, rank, "axis", &axis)))
    return st;
  int64_t dims[MB_MAX_RANK] = {1};
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  *outer = nm_prod(dims, 0, axis);
  if (coerce_2d) {
    *n = nm_prod(dims, axis, rank);
    *inner = 1;
  } else {
    *n = dims[axis];
    *inner = nm_prod(dims, axis + 1, rank);
  }
  return MB_STATUS_OK;
}

static mb_status nm_softmax_infer(mb_op_ctx *ctx, bool coerce_2d) {
  int64_t outer, n, inner;
  mb_status st = nm_softmax_shape(ctx, coerce_2d, &outer, &n, &inner);
  return st ? st : nm_same_shape(ctx);
}

static mb_status nm_softmax_run(mb_op_ctx *ctx, nm_softmax_kind kind,
                                bool coerce_2d) {
  int64_t outer, n, inner;
  mb_status st = nm_softmax_shape(ctx, coerce_2d, &outer, &n, &inner);
  if (st)
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  mb_tensor *y = mb__op_output(ctx, 0);
  if (!y || y->numel == 0)
    return MB_STATUS_OK;
  nm_io io;
  if ((st = nm_begin(ctx, x, y, &io)))
    return st;
  void *m = mb__op_scratch(ctx, 2, (size_t)inner * 8);
  double *s = mb__op_scratch(ctx, 3, (size_t)inner * 8);
  if (!m || !s)
    return nm_failed(ctx);
  for (int64_t o = 0; o < outer; o++) {
    int64_t off = o * n * inner;
    if (io.f64)
      nm_softmax_f64(kind, (const double *)io.x + off, (double *)io.y + off, n,
                     inner, m, s);
    else
      nm_softmax_f32(kind, (const float *)io.x + off, (float *)io.y + off, n,
                     inner, m, s);
  }
  nm_end(y, &io);
  return MB_STATUS_OK;
}

#define NM_SOFTMAX_OP(name, kind)                                              \
  static mb_status nm_infer_##name##_v1(mb_op_ctx *ctx) {                      \
    return nm_softmax_infer(ctx, true);                                        \
  }                                                                            \
  static mb_status nm_run_##name##_v1(mb_op_ctx *ctx) {                        \
    return nm_softmax_run(ctx, kind, true);                                    \
  }                                                                            \
  static mb_status nm_infer_##name(mb_op_ctx *ctx) {                           \
    return nm_softmax_infer(ctx, false);                                       \
  }                                                                            \
  static mb_status nm_run_##name(mb_op_ctx *ctx) {                             \
    return nm_softmax_run(ctx, kind, false);                                   \
  }
NM_SOFTMAX_OP(Softmax, NM_SOFTMAX)
NM_SOFTMAX_OP(LogSoftmax, NM_LOGSOFTMAX)
NM_SOFTMAX_OP(Hardmax, NM_HARDMAX)

/* ------------------------------------------------------------------------ */
/* Per-row statistics and affine kernels                                     */
/* ------------------------------------------------------------------------ */

#define NM_ROW_KERNELS(sfx, T)                                                 \
  /* Mean and biased variance of a row, two-pass in double. */                 \
  static void nm_moments_##sfx(const T *x, int64_t n, double *mean,            \
                               double *var) {                                  \
    const double mu = n > 0 ? nm_sum_##sfx(x, n, false, 0) / (double)n : 0;    \
    *mean = mu;                                                                \
    *var = n > 0 ? nm_sum_##sfx(x, n, true, mu) / (double)n : 0;               \
  }                                                                            \
  /* y = x * a + b with scalar a and b. */                                     \
  static void nm_affine_##sfx(const T *x, T *y, int64_t n, double a,           \
                              double b) {                                      \
    const T ta = (T)a, tb = (T)b;                                              \
    for (int64_t i = 0; i < n; i++)                                            \
      y[i] = x[i] * ta + tb;                                                   \
  }                                                                            \
  /* y = x * a[i] + b[i]. */                                                   \
  static void nm_affine_vec_##sfx(const T *x, T *y, int64_t n,                 \
                                  const double *a, const double *b) {          \
    for (int64_t i = 0; i < n; i++)                                            \
      y[i] = (T)(x[i] * a[i] + b[i]);                                          \
  }                                                                            \
  /* y = (x - mean) * inv * scale[i] + bias[i] (bias may be NULL). */          \
  static void nm_layer_row_##sfx(const T *x, T *y, int64_t n, double mean,     \
                                 double inv, const T *scale, const T *bias) {  \
    const T tm = (T)mean, ti = (T)inv;                                         \
    if (bias)                                                                  \
      for (int64_t i = 0; i < n; i++)                                          \
        y[i] = (x[i] - tm) * ti * scale[i] + bias[i];                          \
    else                                                                       \
      for (int64_t i = 0; i < n; i++)                                          \
        y[i] = (x[i] - tm) * ti * scale[i];                                    \
  }
NM_ROW_KERNELS(f32, float)
NM_ROW_KERNELS(f64, double)

/* Row helpers dispatching on the compute type. */
static void nm_moments(const nm_io *io, int64_t off, int64_t n, double *mean,
                       double *var) {
  if (io->f64)
    nm_moments_f64((const double *)io->x + off, n, mean, var);
  else
    nm_moments_f32((const float *)io->x + off, n, mean, var);
}

static void nm_affine(const nm_io *io, int64_t off, int64_t n, double a,
                      double b) {
  if (io->f64)
    nm_affine_f64((const double *)io->x + off, (double *)io->y + off, n, a, b);
  else
    nm_affine_f32((const float *)io->x + off, (float *)io->y + off, n, a, b);
}

/* ------------------------------------------------------------------------ */
/* BatchNormalization                                                        */
/* ------------------------------------------------------------------------ */

/* Inference uses the running statistics. Training mode (opset 14+,
 * training_mode=1) normalises with the batch statistics and also returns
 * the updated running mean and variance. Before opset 14 extra outputs
 * meant training and are not supported. */
typedef struct nm_bn {
  int64_t n, c, spatial;
  bool per_element; /* spatial=0 before opset 9: parameters are [C, D...] */
  bool training;
} nm_bn;

static mb_status nm_bn_prepare(mb_op_ctx *ctx, nm_bn *bn) {
  mb_status st = mb__op_check_arity(ctx, 5, 5);
  if (st)
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  if ((st = nm_check_float(ctx, x, "X")))
    return st;
  if (x->rank < 2)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "X must have rank >= 2 (N, C, ...), not %d", x->rank);
  bn->n = x->dims[0];
  bn->c = x->dims[1];
  bn->spatial = nm_prod(x->dims, 2, x->rank);
  bn->training =
      ctx->opset >= 14 && mb__node_attr_int(ctx->node, "training_mode", 0) != 0;
  if (ctx->opset < 14)
    for (int i = 1; i < ctx->n_outputs; i++)
      if (mb__op_output(ctx, i))
        return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                            "training outputs (mean, var, saved mean, saved "
                            "var) are not supported before opset 14");
  bn->per_element = ctx->opset < 9 &&
                    mb__node_attr_int(ctx->node, "spatial", 1) == 0 &&
                    !bn->training;
  int64_t want = bn->per_element ? bn->c * bn->spatial : bn->c;
  static const char *const names[] = {"scale", "B", "mean", "var"};
  for (int i = 1; i < 5; i++) {
    const mb_tensor *p = mb__op_input(ctx, i);
    if ((st = nm_check_float(ctx, p, names[i - 1])))
      return st;
    if (p->numel != want)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "%s has %lld elements; expected %lld", names[i - 1],
                          (long long)p->numel, (long long)want);
  }
  return MB_STATUS_OK;
}

static mb_status nm_bn_infer(mb_op_ctx *ctx) {
  nm_bn bn;
  mb_status st = nm_bn_prepare(ctx, &bn);
  if (st || (st = nm_same_shape(ctx)))
    return st;
  for (int i = 1; i < 3; i++) { /* running mean and variance */
    mb_tensor *o = mb__op_output(ctx, i);
    const mb_tensor *src = mb__op_input(ctx, i + 2);
    if (o && (st = mb__tensor_set_shape(o, src->dtype, src->rank, src->dims,
                                        ctx->err)))
      return st;
  }
  for (int i = 3; i < ctx->n_outputs; i++)
    if (mb__op_output(ctx, i))
      return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                          "output %d is not supported", i);
  return MB_STATUS_OK;
}

/* Batch mean and variance per channel, over N and the spatial dims. */
static void nm_bn_batch_stats(const nm_io *io, const nm_bn *bn, double *mean,
                              double *var) {
  int64_t count = bn->n * bn->spatial;
  for (int64_t c = 0; c < bn->c; c++) {
    double s = 0;
    for (int64_t b = 0; b < bn->n; b++) {
      double m, v;
      nm_moments(io, (b * bn->c + c) * bn->spatial, bn->spatial, &m, &v);
      s += m * (double)bn->spatial;
    }
    mean[c] = count ? s / (double)count : 0;
  }
  /* Sum of squared deviations from the channel mean, per row: with the
   * row's mean m and variance v, it is spatial * (v + (m - mean)^2). */
  for (int64_t c = 0; c < bn->c; c++) {
    double q = 0;
    for (int64_t b = 0; b < bn->n; b++) {
      double m, v;
      nm_moments(io, (b * bn->c + c) * bn->spatial, bn->spatial, &m, &v);
      q += (double)bn->spatial * (v + (m - mean[c]) * (m - mean[c]));
    }
    var[c] = count ? q / (double)count : 0;
  }
}

/* Planes [begin, end) of the N x C planes: y = a * x + b with the plane's
 * channel's a and b. Planes are independent, so the session's threads
 * split them. */
typedef struct nm_bn_job {
  const nm_bn *bn;
  const nm_io *io;
  const double *a, *b;
} nm_bn_job;

static void nm_bn_task(void *arg, int64_t begin, int64_t end) {
  const nm_bn_job *j = arg;
  const nm_bn *bn = j->bn;
  const nm_io *io = j->io;
  for (int64_t plane = begin; plane < end; plane++) {
    int64_t c = plane % bn->c, off = plane * bn->spatial;
    if (!bn->per_element)
      nm_affine(io, off, bn->spatial, j->a[c], j->b[c]);
    else if (io->f64)
      nm_affine_vec_f64((const double *)io->x + off, (double *)io->y + off,
                        bn->spatial, j->a + c * bn->spatial,
                        j->b + c * bn->spatial);
    else
      nm_affine_vec_f32((const float *)io->x + off, (float *)io->y + off,
                        bn->spatial, j->a + c * bn->spatial,
                        j->b + c * bn->spatial);
  }
}

static mb_status nm_bn_run(mb_op_ctx *ctx) {
  nm_bn bn;
  mb_status st = nm_bn_prepare(ctx, &bn);
  if (st)
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  mb_tensor *y = mb__op_output(ctx, 0);
  double eps = mb__node_attr_float(ctx->node, "epsilon", 1e-5f);
  double momentum = mb__node_attr_float(ctx->node, "momentum", 0.9f);
  int64_t np = mb__op_input(ctx, 1)->numel;
  /* Slot 0/1 hold the float views; 2 the four parameter vectors and the
   * per-channel a, b; 3 the batch statistics. */
  double *prm = mb__op_scratch(ctx, 2, (size_t)np * 6 * sizeof(double));
  double *stats =
      bn.training ? mb__op_scratch(ctx, 3, (size_t)bn.c * 2 * sizeof(double))
                  : NULL;
  if (!prm || (bn.training && !stats))
    return nm_failed(ctx);
  double *scale = prm, *bias = prm + np, *mean = prm + 2 * np,
         *var = prm + 3 * np, *a = prm + 4 * np, *b = prm + 5 * np;
  for (int64_t i = 0; i < np; i++) {
    scale[i] = mb__tensor_get_f64(mb__op_input(ctx, 1), i);
    bias[i] = mb__tensor_get_f64(mb__op_input(ctx, 2), i);
    mean[i] = mb__tensor_get_f64(mb__op_input(ctx, 3), i);
    var[i] = mb__tensor_get_f64(mb__op_input(ctx, 4), i);
  }
  nm_io io = {0};
  if (y && y->numel > 0 && (st = nm_begin(ctx, x, y, &io)))
    return st;
  const double *use_mean = mean, *use_var = var;
  if (bn.training) {
    nm_bn_batch_stats(&io, &bn, stats, stats + bn.c);
    use_mean = stats;
    use_var = stats + bn.c;
  }
  for (int64_t i = 0; i < np; i++) {
    a[i] = scale[i] / sqrt(use_var[i] + eps);
    b[i] = bias[i] - use_mean[i] * a[i];
  }
  if (y && y->numel > 0) {
    nm_bn_job job = {&bn, &io, a, b};
    mb__parallel_for(mb__op_pool(ctx, y->numel), bn.n * bn.c, nm_bn_task, &job);
    nm_end(y, &io);
  }
  /* Running statistics: momentum-weighted updates in training mode, the
   * inputs unchanged otherwise. */
  for (int i = 1; i < 3; i++) {
    mb_tensor *o = mb__op_output(ctx, i);
    const double *run = i == 1 ? mean : var;
    const double *batch = i == 1 ? use_mean : use_var;
    for (int64_t k = 0; o && k < o->numel; k++)
      mb__tensor_set_f64(
          o, k,
          bn.training ? run[k] * momentum + batch[k] * (1 - momentum) : run[k]);
  }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* InstanceNormalization                                                     */
/* ------------------------------------------------------------------------ */

static mb_status nm_instance_check(mb_op_ctx *ctx) {
  mb_status st = mb__op_check_arity(ctx, 3, 3);
  if (st)
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  if ((st = nm_check_float(ctx, x, "input")))
    return st;
  if (x->rank < 2)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "input must have rank >= 2 (N, C, ...), not %d",
                        x->rank);
  for (int i = 1; i < 3; i++) {
    const mb_tensor *p = mb__op_input(ctx, i);
    if (p->numel != x->dims[1])
      return mb__op_error(
          ctx, MB_STATUS_SHAPE, "%s has %lld elements for %lld channels",
          i == 1 ? "scale" : "B", (long long)p->numel, (long long)x->dims[1]);
  }
  return MB_STATUS_OK;
}

static mb_status nm_instance_infer(mb_op_ctx *ctx) {
  mb_status st = nm_instance_check(ctx);
  return st ? st : nm_same_shape(ctx);
}

static mb_status nm_instance_run(mb_op_ctx *ctx) {
  mb_status st = nm_instance_check(ctx);
  if (st)
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  mb_tensor *y = mb__op_output(ctx, 0);
  if (!y || y->numel == 0)
    return MB_STATUS_OK;
  double eps = mb__node_attr_float(ctx->node, "epsilon", 1e-5f);
  int64_t c_count = x->dims[1], spatial = nm_prod(x->dims, 2, x->rank);
  double *scale = nm_params(ctx, mb__op_input(ctx, 1), 2);
  double *bias = nm_params(ctx, mb__op_input(ctx, 2), 3);
  nm_io io;
  if (!scale || !bias)
    return nm_failed(ctx);
  if ((st = nm_begin(ctx, x, y, &io)))
    return st;
  for (int64_t n = 0; n < x->dims[0]; n++)
    for (int64_t c = 0; c < c_count; c++) {
      int64_t off = (n * c_count + c) * spatial;
      double mean, var;
      nm_moments(&io, off, spatial, &mean, &var);
      double a = scale[c] / sqrt(var + eps);
      nm_affine(&io, off, spatial, a, bias[c] - mean * a);
    }
  nm_end(y, &io);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* LayerNormalization                                                        */
/* ------------------------------------------------------------------------ */

typedef struct nm_layer {
  int axis;
  int64_t outer, size; /* rows and row length (dims from axis on) */
} nm_layer;

static mb_status nm_layer_prepare(mb_op_ctx *ctx, nm_layer *l) {
  mb_status st = mb__op_check_arity(ctx, 2, 3);
  if (st)
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  if ((st = nm_check_float(ctx, x, "X")))
    return st;
  if ((st = mb__op_axis(ctx, mb__node_attr_int(ctx->node, "axis", -1), x->rank,
                        "axis", &l->axis)))
    return st;
  l->outer = nm_prod(x->dims, 0, l->axis);
  l->size = nm_prod(x->dims, l->axis, x->rank);
  /* Scale and B broadcast unidirectionally to the normalised shape. */
  for (int i = 1; i < 3; i++) {
    const mb_tensor *p = mb__op_input(ctx, i);
    if (!p)
      continue;
    if (p->dtype != x->dtype)
      return mb__op_error(ctx, MB_STATUS_SHAPE, "%s is %s but X is %s",
                          i == 1 ? "Scale" : "B", mb_dtype_name(p->dtype),
                          mb_dtype_name(x->dtype));
    int norm_rank = x->rank - l->axis;
    bool ok = p->rank <= norm_rank;
    for (int d = 0; ok && d < p->rank; d++) {
      int64_t want = x->dims[x->rank - p->rank + d];
      ok = p->dims[d] == want || p->dims[d] == 1;
    }
    if (!ok)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "%s does not broadcast to the normalised shape",
                          i == 1 ? "Scale" : "B");
  }
  return MB_STATUS_OK;
}

/* Mean and InvStdDev are stored in the stash type (float32 by default). */
static mb_dtype nm_layer_stat_type(mb_op_ctx *ctx) {
  int64_t t = mb__node_attr_int(ctx->node, "stash_type", MB_DTYPE_FLOAT);
  return t > 0 && t < MB_DTYPE_COUNT && mb__dtype_is_float((mb_dtype)t)
             ? (mb_dtype)t
             : MB_DTYPE_FLOAT;
}

static mb_status nm_layer_infer(mb_op_ctx *ctx) {
  nm_layer l;
  mb_status st = nm_layer_prepare(ctx, &l);
  if (st || (st = nm_same_shape(ctx)))
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  int64_t dims[MB_MAX_RANK];
  for (int d = 0; d < x->rank; d++)
    dims[d] = d < l.axis ? x->dims[d] : 1;
  for (int i = 1; i < 3; i++) {
    mb_tensor *o = mb__op_output(ctx, i);
    if (o && (st = mb__tensor_set_shape(o, nm_layer_stat_type(ctx), x->rank,
                                        dims, ctx->err)))
      return st;
  }
  return MB_STATUS_OK;
}

/* Scale or bias expanded to a full row of `size` compute-type values (slot
 * `slot`); the tensor's own data when it already is one. */
static const void *nm_layer_param(mb_op_ctx *ctx, const nm_layer *l,
                                  const mb_tensor *p, bool f64, int slot) {
  if (!p)
    return NULL;
  size_t es = f64 ? sizeof(double) : sizeof(float);
  if (p->numel == l->size && (p->dtype == MB_DTYPE_FLOAT || f64))
    return p->data;
  void *row = mb__op_scratch(ctx, slot, (size_t)l->size * es);
  if (!row)
    return NULL;
  const mb_tensor *x = mb__op_input(ctx, 0);
  int norm_rank = x->rank - l->axis;
  int64_t strides[MB_MAX_RANK], idx[MB_MAX_RANK] = {0};
  mb__broadcast_strides(p, norm_rank, x->dims + l->axis, strides);
  int64_t src = 0;
  for (int64_t i = 0; i < l->size; i++) {
    double v = mb__tensor_get_f64(p, src);
    if (f64)
      ((double *)row)[i] = v;
    else
      ((float *)row)[i] = (float)v;
    for (int d = norm_rank - 1; d >= 0; d--) {
      src += strides[d];
      if (++idx[d] < x->dims[l->axis + d])
        break;
      src -= strides[d] * x->dims[l->axis + d];
      idx[d] = 0;
    }
  }
  return row;
}

static mb_status nm_layer_run(mb_op_ctx *ctx) {
  nm_layer l;
  mb_status st = nm_layer_prepare(ctx, &l);
  if (st)
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  mb_tensor *y = mb__op_output(ctx, 0);
  mb_tensor *mean_out = mb__op_output(ctx, 1);
  mb_tensor *inv_out = mb__op_output(ctx, 2);
  double eps = mb__node_attr_float(ctx->node, "epsilon", 1e-5f);
  if (!y || x->numel == 0) /* Y is not optional */
    return MB_STATUS_OK;
  nm_io io;
  if ((st = nm_begin(ctx, x, y, &io)))
    return st;
  const void *scale = nm_layer_param(ctx, &l, mb__op_input(ctx, 1), io.f64, 2);
  const void *bias = nm_layer_param(ctx, &l, mb__op_input(ctx, 2), io.f64, 3);
  if (!scale || (mb__op_input(ctx, 2) && !bias))
    return nm_failed(ctx);
  for (int64_t r = 0; r < l.outer; r++) {
    int64_t off = r * l.size;
    double mean, var;
    nm_moments(&io, off, l.size, &mean, &var);
    double inv = 1.0 / sqrt(var + eps);
    if (io.f64)
      nm_layer_row_f64((const double *)io.x + off, (double *)io.y + off, l.size,
                       mean, inv, scale, bias);
    else
      nm_layer_row_f32((const float *)io.x + off, (float *)io.y + off, l.size,
                       mean, inv, scale, bias);
    if (mean_out)
      mb__tensor_set_f64(mean_out, r, mean);
    if (inv_out)
      mb__tensor_set_f64(inv_out, r, inv);
  }
  nm_end(y, &io);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* LpNormalization                                                           */
/* ------------------------------------------------------------------------ */

static mb_status nm_lp_check(mb_op_ctx *ctx, int *axis, int64_t *p) {
  mb_status st = mb__op_check_arity(ctx, 1, 1);
  if (st)
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  if ((st = nm_check_float(ctx, x, "input")))
    return st;
  *p = mb__node_attr_int(ctx->node, "p", 2);
  if (*p != 1 && *p != 2)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "p must be 1 or 2, not %lld", (long long)*p);
  if (x->rank == 0)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "input must not be a scalar");
  return mb__op_axis(ctx, mb__node_attr_int(ctx->node, "axis", -1), x->rank,
                     "axis", axis);
}

static mb_status nm_lp_infer(mb_op_ctx *ctx) {
  int axis;
  int64_t p;
  mb_status st = nm_lp_check(ctx, &axis, &p);
  return st ? st : nm_same_shape(ctx);
}

static mb_status nm_lp_run(mb_op_ctx *ctx) {
  int axis;
  int64_t p;
  mb_status st = nm_lp_check(ctx, &axis, &p);
  if (st)
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  mb_tensor *y = mb__op_output(ctx, 0);
  if (!y || y->numel == 0)
    return MB_STATUS_OK;
  int64_t outer = nm_prod(x->dims, 0, axis), n = x->dims[axis];
  int64_t inner = nm_prod(x->dims, axis + 1, x->rank);
  nm_io io;
  if ((st = nm_begin(ctx, x, y, &io)))
    return st;
  /* Strided rows; LpNormalization is rare enough for a simple loop. */
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < inner; j++) {
      int64_t base = o * n * inner + j;
      double norm = 0;
      for (int64_t i = 0; i < n; i++) {
        double v = io.f64 ? ((const double *)io.x)[base + i * inner]
                          : ((const float *)io.x)[base + i * inner];
        norm += p == 1 ? fabs(v) : v * v;
      }
      if (p == 2)
        norm = sqrt(norm);
      for (int64_t i = 0; i < n; i++) {
        int64_t k = base + i * inner;
        if (io.f64)
          ((double *)io.y)[k] = ((const double *)io.x)[k] / norm;
        else
          ((float *)io.y)[k] = (float)(((const float *)io.x)[k] / norm);
      }
    }
  nm_end(y, &io);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* MeanVarianceNormalization                                                 */
/* ------------------------------------------------------------------------ */

/* Statistics over `axes` (default 0, 2, 3): y = (x - mean) / (std + 1e-9)
 * with var = E[x^2] - mean^2, as in the ONNX function body. */
static mb_status nm_mvn_axes(mb_op_ctx *ctx, bool *reduced) {
  mb_status st = mb__op_check_arity(ctx, 1, 1);
  if (st)
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  if ((st = nm_check_float(ctx, x, "input")))
    return st;
  static const int64_t default_axes[] = {0, 2, 3};
  const int64_t *axes = default_axes;
  int64_t n = mb__node_attr_ints(ctx->node, "axes", &axes);
  if (n < 0) {
    axes = default_axes;
    n = 3;
  }
  for (int d = 0; d < x->rank; d++)
    reduced[d] = false;
  for (int64_t i = 0; i < n; i++) {
    int axis;
    if ((st = mb__op_axis(ctx, axes[i], x->rank, "axes", &axis)))
      return st;
    reduced[axis] = true;
  }
  return MB_STATUS_OK;
}

static mb_status nm_mvn_infer(mb_op_ctx *ctx) {
  bool reduced[MB_MAX_RANK];
  mb_status st = nm_mvn_axes(ctx, reduced);
  return st ? st : nm_same_shape(ctx);
}

static mb_status nm_mvn_run(mb_op_ctx *ctx) {
  bool reduced[MB_MAX_RANK];
  mb_status st = nm_mvn_axes(ctx, reduced);
  if (st)
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  mb_tensor *y = mb__op_output(ctx, 0);
  if (!y || y->numel == 0)
    return MB_STATUS_OK;
  /* Statistics are indexed by the kept dims (stride 0 on reduced ones). */
  int64_t strides[MB_MAX_RANK], n_stats = 1, count = 1;
  for (int d = x->rank - 1; d >= 0; d--) {
    strides[d] = reduced[d] ? 0 : n_stats;
    if (reduced[d])
      count *= x->dims[d];
    else
      n_stats *= x->dims[d];
  }
  double *sum = mb__op_scratch(ctx, 2, (size_t)n_stats * 2 * sizeof(double));
  nm_io io;
  if (!sum)
    return nm_failed(ctx);
  if ((st = nm_begin(ctx, x, y, &io)))
    return st;
  double *sq = sum + n_stats;
  memset(sum, 0, (size_t)n_stats * 2 * sizeof(double));
  for (int pass = 0; pass < 2; pass++) {
    int64_t idx[MB_MAX_RANK] = {0}, s = 0;
    for (int64_t i = 0; i < x->numel; i++) {
      double v = io.f64 ? ((const double *)io.x)[i] : ((const float *)io.x)[i];
      if (pass == 0) {
        sum[s] += v;
        sq[s] += v * v;
      } else {
        double r = (v - sum[s]) / (sqrt(sq[s]) + 1e-9);
        if (io.f64)
          ((double *)io.y)[i] = r;
        else
          ((float *)io.y)[i] = (float)r;
      }
      for (int d = x->rank - 1; d >= 0; d--) {
        s += strides[d];
        if (++idx[d] < x->dims[d])
          break;
        s -= strides[d] * x->dims[d];
        idx[d] = 0;
      }
    }
    if (pass == 0) /* sum -> mean, sq -> variance */
      for (int64_t k = 0; k < n_stats; k++) {
        sum[k] /= (double)count;
        sq[k] = sq[k] / (double)count - sum[k] * sum[k];
        sq[k] = sq[k] > 0 ? sq[k] : 0;
      }
  }
  nm_end(y, &io);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* LRN                                                                       */
/* ------------------------------------------------------------------------ */

static mb_status nm_lrn_check(mb_op_ctx *ctx, int64_t *size) {
  mb_status st = mb__op_check_arity(ctx, 1, 1);
  if (st)
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  if ((st = nm_check_float(ctx, x, "input")))
    return st;
  if (x->rank < 2)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "input must have rank >= 2 (N, C, ...), not %d",
                        x->rank);
  *size = mb__node_attr_int(ctx->node, "size", 0);
  if (*size <= 0)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "size must be a positive odd number, not %lld",
                        (long long)*size);
  return MB_STATUS_OK;
}

static mb_status nm_lrn_infer(mb_op_ctx *ctx) {
  int64_t size;
  mb_status st = nm_lrn_check(ctx, &size);
  return st ? st : nm_same_shape(ctx);
}

/* y = x / (bias + alpha / size * sum of x^2 over neighbouring channels)^beta
 * with the window [c - floor((size-1)/2), c + ceil((size-1)/2)]. */
static mb_status nm_lrn_run(mb_op_ctx *ctx) {
  int64_t size;
  mb_status st = nm_lrn_check(ctx, &size);
  if (st)
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  mb_tensor *y = mb__op_output(ctx, 0);
  if (!y || y->numel == 0)
    return MB_STATUS_OK;
  double alpha = mb__node_attr_float(ctx->node, "alpha", 1e-4f);
  double beta = mb__node_attr_float(ctx->node, "beta", 0.75f);
  double bias = mb__node_attr_float(ctx->node, "bias", 1.0f);
  int64_t channels = x->dims[1], spatial = nm_prod(x->dims, 2, x->rank);
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  nm_io io;
  if ((st = nm_begin(ctx, x, y, &io)))
    return st;
  for (int64_t n = 0; n < x->dims[0]; n++)
    for (int64_t c = 0; c < channels; c++) {
      int64_t c0 = MB_MAX(c - lo, 0), c1 = MB_MIN(c + hi, channels - 1);
      for (int64_t s = 0; s < spatial; s++) {
        double sum = 0;
        for (int64_t k = c0; k <= c1; k++) {
          int64_t i = (n * channels + k) * spatial + s;
          double v =
              io.f64 ? ((const double *)io.x)[i] : ((const float *)io.x)[i];
          sum += v * v;
        }
        int64_t i = (n * channels + c) * spatial + s;
        double v =
            io.f64 ? ((const double *)io.x)[i] : ((const float *)io.x)[i];
        double r = v / pow(bias + alpha / (double)size * sum, beta);
        if (io.f64)
          ((double *)io.y)[i] = r;
        else
          ((float *)io.y)[i] = (float)r;
      }
    }
  nm_end(y, &io);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Registration                                                              */
/* ------------------------------------------------------------------------ */

const mb_op_def mb__ops_norm[] = {
    {"", "Softmax", 1, nm_infer_Softmax_v1, nm_run_Softmax_v1, 0},
    {"", "Softmax", 13, nm_infer_Softmax, nm_run_Softmax, 0},
    {"", "LogSoftmax", 1, nm_infer_LogSoftmax_v1, nm_run_LogSoftmax_v1, 0},
    {"", "LogSoftmax", 13, nm_infer_LogSoftmax, nm_run_LogSoftmax, 0},
    {"", "Hardmax", 1, nm_infer_Hardmax_v1, nm_run_Hardmax_v1, 0},
    {"", "Hardmax", 13, nm_infer_Hardmax, nm_run_Hardmax, 0},
    {"", "BatchNormalization", 1, nm_bn_infer, nm_bn_run, 0},
    {"", "InstanceNormalization", 1, nm_instance_infer, nm_instance_run, 0},
    {"", "LayerNormalization", 17, nm_layer_infer, nm_layer_run, 0},
    /* onnxruntime's fused form, same attributes and outputs. */
    {"com.microsoft", "LayerNormalization", 1, nm_layer_infer, nm_layer_run, 0},
    {"", "LpNormalization", 1, nm_lp_infer, nm_lp_run, 0},
    {"", "MeanVarianceNormalization", 9, nm_mvn_infer, nm_mvn_run, 0},
    {"", "LRN", 1, nm_lrn_infer, nm_lrn_run, 0},
};
MB_OP_TABLE_END(norm);
