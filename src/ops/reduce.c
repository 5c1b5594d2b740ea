/* Reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd,
 * ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare, and
 * ArgMax/ArgMin.
 *
 * The axes come from an attribute (ReduceSum before opset 13, the others
 * before 18) or from the optional second input. The input shape is
 * collapsed into alternating runs of kept and reduced dimensions; the
 * innermost run is then either reduced as one contiguous row or
 * accumulated elementwise into a contiguous row of the output, both tight
 * loops. Floats accumulate in double, integers in int64 (wrapping). */

#include "ops/op.h"

#include <math.h>

/* What a kernel accumulates per element. */
typedef enum rd_kernel {
  RD_K_SUM,  /* x */
  RD_K_ABS,  /* |x| */
  RD_K_SQ,   /* x * x */
  RD_K_PROD, /* product */
  RD_K_MAX,
  RD_K_MIN,
  RD_K_EXP, /* exp(x - shift), shift = the per-output maximum */
} rd_kernel;

/* What happens to the accumulated value. */
typedef enum rd_post {
  RD_P_NONE,
  RD_P_MEAN,
  RD_P_SQRT,
  RD_P_LOG,
  RD_P_LOG_SHIFT, /* log(acc) + shift */
} rd_post;

typedef struct rd_op {
  rd_kernel kernel;
  rd_post post;
  bool exact_int; /* integers reduce in int64; else through double */
} rd_op;

/* X(name, kernel, post, exact_int, opset where axes became an input) */
#define RD_OPS(X)                                                              \
  X(ReduceSum, RD_K_SUM, RD_P_NONE, true, 13)                                  \
  X(ReduceMean, RD_K_SUM, RD_P_MEAN, true, 18)                                 \
  X(ReduceMax, RD_K_MAX, RD_P_NONE, true, 18)                                  \
  X(ReduceMin, RD_K_MIN, RD_P_NONE, true, 18)                                  \
  X(ReduceProd, RD_K_PROD, RD_P_NONE, true, 18)                                \
  X(ReduceL1, RD_K_ABS, RD_P_NONE, true, 18)                                   \
  X(ReduceL2, RD_K_SQ, RD_P_SQRT, false, 18)                                   \
  X(ReduceLogSum, RD_K_SUM, RD_P_LOG, false, 18)                               \
  X(ReduceLogSumExp, RD_K_EXP, RD_P_LOG_SHIFT, false, 18)                      \
  X(ReduceSumSquare, RD_K_SQ, RD_P_NONE, true, 18)

enum {
#define RD_X(name, k, p, exact, since) RD_##name,
  RD_OPS(RD_X)
#undef RD_X
};

static const rd_op rd_ops[] = {
#define RD_X(name, k, p, exact, since) [RD_##name] = {k, p, exact},
    RD_OPS(RD_X)
#undef RD_X
};

/* ------------------------------------------------------------------------ */
/* Kernels                                                                   */
/* ------------------------------------------------------------------------ */

/* Row reductions keep RD_LANES partial results: a single accumulator is a
 * serial dependency the compiler must not reorder, lanes let the loop
 * vectorise. STEP(a, v) folds element v into lane value a; COMBINE(a, v)
 * folds a lane into the result. */
#define RD_LANES 8
#define RD_LANE_REDUCE(A, init, STEP, COMBINE)                                 \
  do {                                                                         \
    A lane[RD_LANES];                                                          \
    for (int l = 0; l < RD_LANES; l++)                                         \
      lane[l] = (init);                                                        \
    int64_t i = 0;                                                             \
    for (; i + RD_LANES <= n; i += RD_LANES)                                   \
      for (int l = 0; l < RD_LANES; l++) {                                     \
        A a = lane[l], v = (A)x[i + l];                                        \
        lane[l] = STEP(a, v);                                                  \
      }                                                                        \
    for (; i < n; i++) {                                                       \
      A a = lane[0], v = (A)x[i];                                              \
      lane[0] = STEP(a, v);                                                    \
    }                                                                          \
    for (int l = 0; l < RD_LANES; l++) {                                       \
      A a = s, v = lane[l];                                                    \
      s = COMBINE(a, v);                                                       \
    }                                                                          \
  } while (0)

#define RD_ADD(a, v) ((a) + (v))
#define RD_ADD_ABS(a, v) ((a) + fabs(v))
#define RD_ADD_SQ(a, v) ((a) + (v) * (v))
#define RD_MUL(a, v) ((a) * (v))
/* Max and min propagate NaN like numpy. */
#define RD_MAX(a, v) ((v) > (a) || (v) != (v) ? (v) : (a))
#define RD_MIN(a, v) ((v) < (a) || (v) != (v) ? (v) : (a))
/* Integers wrap through uint64_t. */
#define RD_IADD(a, v) ((int64_t)((uint64_t)(a) + (uint64_t)(v)))
#define RD_IADD_ABS(a, v)                                                      \
  ((int64_t)((uint64_t)(a) + ((v) < 0 ? 0 - (uint64_t)(v) : (uint64_t)(v))))
#define RD_IADD_SQ(a, v)                                                       \
  ((int64_t)((uint64_t)(a) + (uint64_t)(v) * (uint64_t)(v)))
#define RD_IMUL(a, v) ((int64_t)((uint64_t)(a) * (uint64_t)(v)))
#define RD_IMAX(a, v) ((v) > (a) ? (v) : (a))
#define RD_IMIN(a, v) ((v) < (a) ? (v) : (a))

/* Float inputs (float or double) with a double accumulator. */
#define RD_FLOAT_KERNELS(sfx, T)                                               \
  /* Reduces a contiguous row to one value, combined into *acc. */             \
  static void rd_row_##sfx(rd_kernel k, const T *x, int64_t n, double *acc,    \
                           double shift) {                                     \
    double s = *acc;                                                           \
    switch (k) {                                                               \
    case RD_K_SUM:                                                             \
      RD_LANE_REDUCE(double, 0, RD_ADD, RD_ADD);                               \
      break;                                                                   \
    case RD_K_ABS:                                                             \
      RD_LANE_REDUCE(double, 0, RD_ADD_ABS, RD_ADD);                           \
      break;                                                                   \
    case RD_K_SQ:                                                              \
      RD_LANE_REDUCE(double, 0, RD_ADD_SQ, RD_ADD);                            \
      break;                                                                   \
    case RD_K_PROD:                                                            \
      RD_LANE_REDUCE(double, 1, RD_MUL, RD_MUL);                               \
      break;                                                                   \
    case RD_K_MAX:                                                             \
      RD_LANE_REDUCE(double, -INFINITY, RD_MAX, RD_MAX);                       \
      break;                                                                   \
    case RD_K_MIN:                                                             \
      RD_LANE_REDUCE(double, INFINITY, RD_MIN, RD_MIN);                        \
      break;                                                                   \
    case RD_K_EXP:                                                             \
      for (int64_t i = 0; i < n; i++)                                          \
        s += exp(x[i] - shift);                                                \
      break;                                                                   \
    }                                                                          \
    *acc = s;                                                                  \
  }                                                                            \
  /* Accumulates a contiguous row elementwise into acc[0..n). */               \
  static void rd_acc_##sfx(rd_kernel k, const T *x, int64_t n, double *acc,    \
                           const double *shift) {                              \
    switch (k) {                                                               \
    case RD_K_SUM:                                                             \
      for (int64_t i = 0; i < n; i++)                                          \
        acc[i] += x[i];                                                        \
      break;                                                                   \
    case RD_K_ABS:                                                             \
      for (int64_t i = 0; i < n; i++)                                          \
        acc[i] += fabs((double)x[i]);                                          \
      break;                                                                   \
    case RD_K_SQ:                                                              \
      for (int64_t i = 0; i < n; i++)                                          \
        acc[i] += (double)x[i] * x[i];                                         \
      break;                                                                   \
    case RD_K_PROD:                                                            \
      for (int64_t i = 0; i < n; i++)                                          \
        acc[i] *= x[i];                                                        \
      break;                                                                   \
    case RD_K_MAX:                                                             \
      for (int64_t i = 0; i < n; i++)                                          \
        acc[i] = x[i] > acc[i] || x[i] != x[i] ? x[i] : acc[i];                \
      break;                                                                   \
    case RD_K_MIN:                                                             \
      for (int64_t i = 0; i < n; i++)                                          \
        acc[i] = x[i] < acc[i] || x[i] != x[i] ? x[i] : acc[i];                \
      break;                                                                   \
    case RD_K_EXP:                                                             \
      for (int64_t i = 0; i < n; i++)                                          \
        acc[i] += exp(x[i] - shift[i]);                                        \
      break;                                                                   \
    }                                                                          \
  }
RD_FLOAT_KERNELS(f32, float)
RD_FLOAT_KERNELS(f64, double)

/* Integers: exact int64 accumulation, wrapping through uint64_t. */
static void rd_row_i64(rd_kernel k, const int64_t *x, int64_t n, int64_t *acc,
                       double shift) {
  (void)shift;
  int64_t s = *acc;
  switch (k) {
  case RD_K_SUM:
    RD_LANE_REDUCE(int64_t, 0, RD_IADD, RD_IADD);
    break;
  case RD_K_ABS:
    RD_LANE_REDUCE(int64_t, 0, RD_IADD_ABS, RD_IADD);
    break;
  case RD_K_SQ:
    RD_LANE_REDUCE(int64_t, 0, RD_IADD_SQ, RD_IADD);
    break;
  case RD_K_PROD:
    RD_LANE_REDUCE(int64_t, 1, RD_IMUL, RD_IMUL);
    break;
  case RD_K_MAX:
    RD_LANE_REDUCE(int64_t, INT64_MIN, RD_IMAX, RD_IMAX);
    break;
  case RD_K_MIN:
    RD_LANE_REDUCE(int64_t, INT64_MAX, RD_IMIN, RD_IMIN);
    break;
  case RD_K_EXP:
    break; /* not used for integers */
  }
  *acc = s;
}

static void rd_acc_i64(rd_kernel k, const int64_t *x, int64_t n, int64_t *acc,
                       const double *shift) {
  (void)shift;
  uint64_t *u = (uint64_t *)acc;
  switch (k) {
  case RD_K_SUM:
    for (int64_t i = 0; i < n; i++)
      u[i] += (uint64_t)x[i];
    break;
  case RD_K_ABS:
    for (int64_t i = 0; i < n; i++)
      u[i] += x[i] < 0 ? 0 - (uint64_t)x[i] : (uint64_t)x[i];
    break;
  case RD_K_SQ:
    for (int64_t i = 0; i < n; i++)
      u[i] += (uint64_t)x[i] * (uint64_t)x[i];
    break;
  case RD_K_PROD:
    for (int64_t i = 0; i < n; i++)
      u[i] *= (uint64_t)x[i];
    break;
  case RD_K_MAX:
    for (int64_t i = 0; i < n; i++)
      acc[i] = x[i] > acc[i] ? x[i] : acc[i];
    break;
  case RD_K_MIN:
    for (int64_t i = 0; i < n; i++)
      acc[i] = x[i] < acc[i] ? x[i] : acc[i];
    break;
  case RD_K_EXP:
    break;
  }
}

/* ------------------------------------------------------------------------ */
/* Plan: collapsed shape, reduced flags and output strides                    */
/* ------------------------------------------------------------------------ */

typedef struct rd_plan {
  int rank; /* >= 1 */
  int64_t dims[MB_MAX_RANK];
  bool reduced[MB_MAX_RANK];
  int64_t out_stride[MB_MAX_RANK]; /* 0 on reduced runs */
  int64_t count;                   /* elements reduced into each output */
} rd_plan;

static void rd_plan_init(rd_plan *p, int rank, const int64_t *dims,
                         const bool *reduced) {
  p->rank = 0;
  p->count = 1;
  for (int d = 0; d < rank; d++) {
    if (reduced[d])
      p->count *= dims[d];
    if (dims[d] == 1)
      continue;
    int r = p->rank;
    if (r > 0 && p->reduced[r - 1] == reduced[d]) {
      p->dims[r - 1] *= dims[d];
      continue;
    }
    p->dims[r] = dims[d];
    p->reduced[r] = reduced[d];
    p->rank++;
  }
  if (p->rank == 0) {
    p->rank = 1;
    p->dims[0] = 1;
    p->reduced[0] = false;
  }
  int64_t stride = 1;
  for (int d = p->rank - 1; d >= 0; d--) {
    p->out_stride[d] = p->reduced[d] ? 0 : stride;
    if (!p->reduced[d])
      stride *= p->dims[d];
  }
}

/* Walks the input's rows; T is the input type, A the accumulator type. */
#define RD_WALK(sfx, T, A)                                                     \
  static void rd_walk_##sfx(const rd_plan *p, rd_kernel k, const T *x, A *acc, \
                            const double *shift) {                             \
    int inner = p->rank - 1;                                                   \
    int64_t n = p->dims[inner], rows = 1;                                      \
    for (int d = 0; d < inner; d++)                                            \
      rows *= p->dims[d];                                                      \
    int64_t idx[MB_MAX_RANK] = {0}, o = 0;                                     \
    for (int64_t r = 0; r < rows; r++) {                                       \
      if (p->reduced[inner])                                                   \
        rd_row_##sfx(k, x + r * n, n, acc + o, shift ? shift[o] : 0);          \
      else                                                                     \
        rd_acc_##sfx(k, x + r * n, n, acc + o, shift ? shift + o : NULL);      \
      for (int d = inner - 1; d >= 0; d--) {                                   \
        o += p->out_stride[d];                                                 \
        if (++idx[d] < p->dims[d])                                             \
          break;                                                               \
        o -= p->out_stride[d] * p->dims[d];                                    \
        idx[d] = 0;                                                            \
      }                                                                        \
    }                                                                          \
  }
RD_WALK(f32, float, double)
RD_WALK(f64, double, double)
RD_WALK(i64, int64_t, int64_t)

/* ------------------------------------------------------------------------ */
/* Axes and shapes                                                           */
/* ------------------------------------------------------------------------ */

/* Fills reduced[] from the axes attribute or input; *noop_out is set when
 * the axes are empty and noop_with_empty_axes is 1. */
static mb_status rd_axes(mb_op_ctx *ctx, bool axes_as_input, int rank,
                         bool *reduced, bool *noop_out) {
  int64_t axes[MB_MAX_RANK];
  int64_t n_axes = 0;
  const int64_t *attr = NULL;
  *noop_out = false;
  if (axes_as_input) {
    const mb_tensor *t = mb__op_input(ctx, 1);
    if (t) {
      if (t->numel > rank)
        return mb__op_error(ctx, MB_STATUS_SHAPE,
                            "axes has %lld entries for a rank-%d input",
                            (long long)t->numel, rank);
      mb_status st = mb__op_read_ints(ctx, t, axes, MB_MAX_RANK);
      if (st)
        return st;
      n_axes = t->numel;
    }
  } else {
    n_axes = mb__node_attr_ints(ctx->node, "axes", &attr);
    if (n_axes < 0)
      n_axes = 0;
    if (n_axes > rank)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "axes has %lld entries for a rank-%d input",
                          (long long)n_axes, rank);
    for (int64_t i = 0; i < n_axes; i++)
      axes[i] = attr[i];
  }
  for (int d = 0; d < rank; d++)
    reduced[d] = n_axes == 0;
  if (n_axes == 0) {
    *noop_out = mb__node_attr_int(ctx->node, "noop_with_empty_axes", 0) != 0;
    return MB_STATUS_OK;
  }
  for (int64_t i = 0; i < n_axes; i++) {
    int axis;
    mb_status st = mb__op_axis(ctx, axes[i], rank, "axes", &axis);
    if (st)
      return st;
    if (reduced[axis])
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "axis %lld appears twice in axes",
                          (long long)axes[i]);
    reduced[axis] = true;
  }
  return MB_STATUS_OK;
}

static bool rd_dtype_ok(mb_dtype dt) {
  return mb__dtype_is_float(dt) || mb__dtype_is_int(dt);
}

typedef struct rd_setup {
  const mb_tensor *x;
  bool reduced[MB_MAX_RANK];
  bool noop;
} rd_setup;

static mb_status rd_prepare(mb_op_ctx *ctx, bool axes_as_input, rd_setup *s) {
  mb_status st = mb__op_check_arity(ctx, 1, axes_as_input ? 2 : 1);
  if (st)
    return st;
  s->x = mb__op_input(ctx, 0);
  if (!rd_dtype_ok(s->x->dtype))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "element type %s is not supported",
                        mb_dtype_name(s->x->dtype));
  if (axes_as_input)
    MB_OP_NEED_DATA(ctx, 1);
  return rd_axes(ctx, axes_as_input, s->x->rank, s->reduced, &s->noop);
}

static mb_status rd_infer(mb_op_ctx *ctx, bool axes_as_input) {
  rd_setup s;
  mb_status st = rd_prepare(ctx, axes_as_input, &s);
  if (st)
    return st;
  mb_tensor *y = mb__op_output(ctx, 0);
  if (!y)
    return MB_STATUS_OK;
  const mb_tensor *x = s.x;
  if (s.noop)
    return mb__tensor_set_shape(y, x->dtype, x->rank, x->dims, ctx->err);
  bool keepdims = mb__node_attr_int(ctx->node, "keepdims", 1) != 0;
  int rank = 0;
  int64_t dims[MB_MAX_RANK];
  for (int d = 0; d < x->rank; d++) {
    if (!s.reduced[d])
      dims[rank++] = x->dims[d];
    else if (keepdims)
      dims[rank++] = 1;
  }
  return mb__tensor_set_shape(y, x->dtype, rank, dims, ctx->err);
}

/* ------------------------------------------------------------------------ */
/* Run                                                                       */
/* ------------------------------------------------------------------------ */

static mb_status rd_failed(mb_op_ctx *ctx) {
  return ctx->err && ctx->err->status ? ctx->err->status
                                      : MB_STATUS_OUT_OF_MEMORY;
}

/* Reduces in double: float inputs directly, integers after conversion. */
static mb_status rd_run_double(mb_op_ctx *ctx, const rd_op *op,
                               const rd_plan *p, const mb_tensor *x,
                               mb_tensor *y) {
  int64_t n_out = y->numel;
  double *acc = mb__op_scratch(ctx, 1, (size_t)n_out * sizeof(double));
  double *shift = NULL;
  if (!acc)
    return rd_failed(ctx);
  const float *xf = NULL;
  const double *xd = NULL;
  if (x->dtype == MB_DTYPE_DOUBLE) {
    xd = x->data;
  } else if (mb__dtype_is_float(x->dtype)) {
    xf = mb__op_as_f32(ctx, x, 0);
    if (!xf && x->numel > 0)
      return rd_failed(ctx);
  } else {
    double *buf = mb__op_scratch(ctx, 0, (size_t)x->numel * sizeof(double));
    if (!buf && x->numel > 0)
      return rd_failed(ctx);
    for (int64_t i = 0; i < x->numel; i++)
      buf[i] = mb__tensor_get_f64(x, i);
    xd = buf;
  }
  rd_kernel k = op->kernel;
  if (k == RD_K_EXP) { /* first pass: the maxima to subtract */
    shift = mb__op_scratch(ctx, 2, (size_t)n_out * sizeof(double));
    if (!shift)
      return rd_failed(ctx);
    for (int64_t i = 0; i < n_out; i++)
      shift[i] = -INFINITY;
    if (x->numel > 0) {
      if (xf)
        rd_walk_f32(p, RD_K_MAX, xf, shift, NULL);
      else
        rd_walk_f64(p, RD_K_MAX, xd, shift, NULL);
    }
    /* An all -inf or +inf group must not become inf - inf = NaN. */
    for (int64_t i = 0; i < n_out; i++)
      if (isinf(shift[i]))
        shift[i] = 0;
  }
  double init = k == RD_K_PROD  ? 1
                : k == RD_K_MAX ? -INFINITY
                : k == RD_K_MIN ? INFINITY
                                : 0;
  for (int64_t i = 0; i < n_out; i++)
    acc[i] = init;
  if (x->numel > 0) {
    if (xf)
      rd_walk_f32(p, k, xf, acc, shift);
    else
      rd_walk_f64(p, k, xd, acc, shift);
  }
  for (int64_t i = 0; i < n_out; i++) {
    switch (op->post) {
    case RD_P_NONE:
      break;
    case RD_P_MEAN:
      acc[i] /= (double)p->count;
      break;
    case RD_P_SQRT:
      acc[i] = sqrt(acc[i]);
      break;
    case RD_P_LOG:
      acc[i] = log(acc[i]);
      break;
    case RD_P_LOG_SHIFT:
      acc[i] = log(acc[i]) + shift[i];
      break;
    }
  }
  for (int64_t i = 0; i < n_out; i++)
    mb__tensor_set_f64(y, i, acc[i]);
  return MB_STATUS_OK;
}

/* Stores int64 values into a narrower integer output, keeping the low bits
 * like numpy's astype. */
static void rd_narrow(mb_tensor *y, const int64_t *acc) {
#define RD_NARROW(T, U)                                                        \
  for (int64_t i = 0; i < y->numel; i++)                                       \
    ((T *)y->data)[i] = (T)(U)(uint64_t)acc[i];                                \
  break;
  switch (y->dtype) {
  case MB_DTYPE_INT8:
    RD_NARROW(int8_t, uint8_t)
  case MB_DTYPE_INT16:
    RD_NARROW(int16_t, uint16_t)
  case MB_DTYPE_INT32:
    RD_NARROW(int32_t, uint32_t)
  case MB_DTYPE_UINT8:
    RD_NARROW(uint8_t, uint8_t)
  case MB_DTYPE_UINT16:
    RD_NARROW(uint16_t, uint16_t)
  case MB_DTYPE_UINT32:
    RD_NARROW(uint32_t, uint32_t)
  case MB_DTYPE_UINT64:
    RD_NARROW(uint64_t, uint64_t)
  default:
    break;
  }
#undef RD_NARROW
}

/* Exact integer reduction in int64. */
static mb_status rd_run_int(mb_op_ctx *ctx, const rd_op *op, const rd_plan *p,
                            const mb_tensor *x, mb_tensor *y) {
  int64_t n_out = y->numel;
  const int64_t *xi = x->data;
  if (x->dtype != MB_DTYPE_INT64 && x->numel > 0) {
    int64_t *buf = mb__op_scratch(ctx, 0, (size_t)x->numel * sizeof(int64_t));
    if (!buf)
      return rd_failed(ctx);
    for (int64_t i = 0; i < x->numel; i++)
      buf[i] = mb__tensor_get_i64(x, i);
    xi = buf;
  }
  int64_t *acc = y->dtype == MB_DTYPE_INT64
                     ? y->data
                     : mb__op_scratch(ctx, 1, (size_t)n_out * sizeof(int64_t));
  if (!acc)
    return rd_failed(ctx);
  rd_kernel k = op->kernel;
  int64_t init = k == RD_K_PROD  ? 1
                 : k == RD_K_MAX ? INT64_MIN
                 : k == RD_K_MIN ? INT64_MAX
                                 : 0;
  for (int64_t i = 0; i < n_out; i++)
    acc[i] = init;
  if (x->numel > 0)
    rd_walk_i64(p, k, xi, acc, NULL);
  if (op->post == RD_P_MEAN && p->count > 0)
    for (int64_t i = 0; i < n_out; i++)
      acc[i] /= p->count;
  if (acc != y->data)
    rd_narrow(y, acc);
  return MB_STATUS_OK;
}

static mb_status rd_run(mb_op_ctx *ctx, const rd_op *op, bool axes_as_input) {
  rd_setup s;
  mb_status st = rd_prepare(ctx, axes_as_input, &s);
  if (st)
    return st;
  mb_tensor *y = mb__op_output(ctx, 0);
  const mb_tensor *x = s.x;
  if (!y || y->numel == 0)
    return MB_STATUS_OK;
  if (s.noop) {
    memcpy(y->data, x->data, y->nbytes);
    return MB_STATUS_OK;
  }
  rd_plan p;
  rd_plan_init(&p, x->rank, x->dims, s.reduced);
  if (mb__dtype_is_int(x->dtype) && op->exact_int)
    return rd_run_int(ctx, op, &p, x, y);
  return rd_run_double(ctx, op, &p, x, y);
}

/* Entry points with axes as an attribute and, from opset `since`, as an
 * input. */
#define RD_X(name, k, p, exact, since)                                         \
  static mb_status rd_infer_##name(mb_op_ctx *ctx) {                           \
    return rd_infer(ctx, false);                                               \
  }                                                                            \
  static mb_status rd_run_##name(mb_op_ctx *ctx) {                             \
    return rd_run(ctx, &rd_ops[RD_##name], false);                             \
  }                                                                            \
  static mb_status rd_infer_##name##_in(mb_op_ctx *ctx) {                      \
    return rd_infer(ctx, true);                                                \
  }                                                                            \
  static mb_status rd_run_##name##_in(mb_op_ctx *ctx) {                        \
    return rd_run(ctx, &rd_ops[RD_##name], true);                              \
  }
RD_OPS(RD_X)
#undef RD_X

/* ------------------------------------------------------------------------ */
/* ArgMax, ArgMin                                                            */
/* ------------------------------------------------------------------------ */

typedef struct rd_arg {
  int axis;
  bool keepdims, last;
  int64_t outer, n, inner;
} rd_arg;

static mb_status rd_arg_prepare(mb_op_ctx *ctx, rd_arg *a) {
  mb_status st = mb__op_check_arity(ctx, 1, 1);
  if (st)
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  if (!rd_dtype_ok(x->dtype))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "element type %s is not supported",
                        mb_dtype_name(x->dtype));
  if (x->rank == 0)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "input must not be a scalar");
  st = mb__op_axis(ctx, mb__node_attr_int(ctx->node, "axis", 0), x->rank,
                   "axis", &a->axis);
  if (st)
    return st;
  a->keepdims = mb__node_attr_int(ctx->node, "keepdims", 1) != 0;
  a->last = mb__node_attr_int(ctx->node, "select_last_index", 0) != 0;
  a->outer = a->inner = 1;
  for (int d = 0; d < a->axis; d++)
    a->outer *= x->dims[d];
  for (int d = a->axis + 1; d < x->rank; d++)
    a->inner *= x->dims[d];
  a->n = x->dims[a->axis];
  return MB_STATUS_OK;
}

static mb_status rd_arg_infer(mb_op_ctx *ctx) {
  rd_arg a;
  mb_status st = rd_arg_prepare(ctx, &a);
  if (st)
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  mb_tensor *y = mb__op_output(ctx, 0);
  if (!y)
    return MB_STATUS_OK;
  int rank = 0;
  int64_t dims[MB_MAX_RANK];
  for (int d = 0; d < x->rank; d++) {
    if (d != a.axis)
      dims[rank++] = x->dims[d];
    else if (a.keepdims)
      dims[rank++] = 1;
  }
  return mb__tensor_set_shape(y, MB_DTYPE_INT64, rank, dims, ctx->err);
}

/* better(v, best): v replaces the current best. A NaN wins like in numpy,
 * and select_last_index moves ties to the later element. */
#define RD_ARG_KERNEL(sfx, T)                                                  \
  static void rd_arg_##sfx(const rd_arg *a, bool is_max, const T *x,           \
                           int64_t *y) {                                       \
    for (int64_t o = 0; o < a->outer; o++)                                     \
      for (int64_t j = 0; j < a->inner; j++) {                                 \
        const T *p = x + o * a->n * a->inner + j;                              \
        T best = p[0];                                                         \
        int64_t bi = 0;                                                        \
        for (int64_t i = 1; i < a->n; i++) {                                   \
          T v = p[i * a->inner];                                               \
          bool better;                                                         \
          if (best != best)                                                    \
            better = false;                                                    \
          else if (v != v)                                                     \
            better = true;                                                     \
          else if (v == best)                                                  \
            better = a->last;                                                  \
          else                                                                 \
            better = is_max ? v > best : v < best;                             \
          if (better) {                                                        \
            best = v;                                                          \
            bi = i;                                                            \
          }                                                                    \
        }                                                                      \
        y[o * a->inner + j] = bi;                                              \
      }                                                                        \
  }
RD_ARG_KERNEL(f32, float)
RD_ARG_KERNEL(f64, double)
RD_ARG_KERNEL(i64, int64_t)

static mb_status rd_arg_run(mb_op_ctx *ctx, bool is_max) {
  rd_arg a;
  mb_status st = rd_arg_prepare(ctx, &a);
  if (st)
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  mb_tensor *y = mb__op_output(ctx, 0);
  if (!y || y->numel == 0)
    return MB_STATUS_OK;
  if (a.n == 0)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "cannot take the arg of an empty axis");
  if (x->dtype == MB_DTYPE_DOUBLE) {
    rd_arg_f64(&a, is_max, x->data, y->data);
  } else if (mb__dtype_is_float(x->dtype)) {
    const float *xf = mb__op_as_f32(ctx, x, 0);
    if (!xf)
      return rd_failed(ctx);
    rd_arg_f32(&a, is_max, xf, y->data);
  } else {
    const int64_t *xi = x->data;
    if (x->dtype != MB_DTYPE_INT64) {
      int64_t *buf = mb__op_scratch(ctx, 0, (size_t)x->numel * sizeof(int64_t));
      if (!buf)
        return rd_failed(ctx);
      for (int64_t i = 0; i < x->numel; i++)
        buf[i] = mb__tensor_get_i64(x, i);
      xi = buf;
    }
    rd_arg_i64(&a, is_max, xi, y->data);
  }
  return MB_STATUS_OK;
}

static mb_status rd_argmax_run(mb_op_ctx *ctx) {
  return rd_arg_run(ctx, true);
}
static mb_status rd_argmin_run(mb_op_ctx *ctx) {
  return rd_arg_run(ctx, false);
}

/* ------------------------------------------------------------------------ */
/* Registration                                                              */
/* ------------------------------------------------------------------------ */

const mb_op_def mb__ops_reduce[] = {
#define RD_X(name, k, p, exact, since)                                         \
  {"", #name, 1, rd_infer_##name, rd_run_##name, 0},                           \
      {"", #name, since, rd_infer_##name##_in, rd_run_##name##_in, 0},
    RD_OPS(RD_X)
#undef RD_X
        {"", "ArgMax", 1, rd_arg_infer, rd_argmax_run, 0},
    {"", "ArgMin", 1, rd_arg_infer, rd_argmin_run, 0},
};
MB_OP_TABLE_END(reduce);
