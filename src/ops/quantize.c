/* Linear quantisation: QuantizeLinear, DequantizeLinear and
 * DynamicQuantizeLinear, the nodes of QDQ models and of dynamic
 * quantisation.
 *
 *   QuantizeLinear:   y = saturate(round_half_even(x / scale) + zero_point)
 *   DequantizeLinear: y = (x - zero_point) * scale
 *
 * Scale and zero point apply per tensor, per slice along `axis` (opset 13)
 * or per block of `block_size` elements along `axis` (opset 21). Arithmetic
 * follows ONNX Runtime's CPU kernels: float32 division and multiplication,
 * float16 and bfloat16 computed in float32 and rounded once. Rows exist for
 * every opset that changed the operators' types or attributes: 10 (per
 * tensor, int8/uint8), 13 (axis), 19 (float16/bfloat16 scales and inputs)
 * and 21 (block_size, output_dtype, int16/uint16).
 *
 * Scratch slots: 0 x as float32, 1 scale as float32, 2 zero points as
 * int32, 3 y as float32 (DequantizeLinear to a half type). */
#include "ops/op.h"

#include <math.h>

/* ------------------------------------------------------------------------ */
/* Quantised element types                                                   */
/* ------------------------------------------------------------------------ */

typedef enum q_kind { Q_U8, Q_I8, Q_U16, Q_I16, Q_I32, Q_KIND_COUNT } q_kind;

typedef struct q_type {
  mb_dtype dtype;
  int since;      /* first opset whose QuantizeLinear/DequantizeLinear has it */
  bool quantized; /* a QuantizeLinear output type (int32 is DQ input only) */
  int32_t lo, hi; /* saturation range */
} q_type;

static const q_type q_types[Q_KIND_COUNT] = {
    [Q_U8] = {MB_DTYPE_UINT8, 10, true, 0, 255},
    [Q_I8] = {MB_DTYPE_INT8, 10, true, -128, 127},
    [Q_U16] = {MB_DTYPE_UINT16, 21, true, 0, 65535},
    [Q_I16] = {MB_DTYPE_INT16, 21, true, -32768, 32767},
    [Q_I32] = {MB_DTYPE_INT32, 10, false, INT32_MIN, INT32_MAX},
};

/* The kind of `dt` at opset `version`, or -1 when the operators do not take
 * it there. */
static int q_kind_of(mb_dtype dt, int version, bool quantized_only) {
  for (int k = 0; k < Q_KIND_COUNT; k++)
    if (q_types[k].dtype == dt && q_types[k].since <= version &&
        (q_types[k].quantized || !quantized_only))
      return k;
  return -1;
}

/* ------------------------------------------------------------------------ */
/* Where each element finds its scale and zero point                         */
/* ------------------------------------------------------------------------ */

/* x is viewed as [outer, axis_dim, inner]. Element (o, d, i) uses parameter
 *   o * outer_stride + (d / block) * axis_stride + i * inner_stride.
 * Per tensor: every stride 0. Per axis: axis_stride 1, block 1. Blocked:
 * the parameters have x's shape with ceil(axis_dim / block) along axis. */
typedef struct q_layout {
  int64_t outer, axis_dim, inner;
  int64_t outer_stride, axis_stride, inner_stride, block;
} q_layout;

/* Names of the inputs in messages: QuantizeLinear's are y_scale and
 * y_zero_point, DequantizeLinear's x_scale and x_zero_point. */
typedef struct q_names {
  const char *scale, *zero_point;
} q_names;

static const q_names quantize_names = {"y_scale", "y_zero_point"};
static const q_names dequantize_names = {"x_scale", "x_zero_point"};

static bool same_shape(const mb_tensor *a, const mb_tensor *b) {
  if (a->rank != b->rank)
    return false;
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d])
      return false;
  return true;
}

/* Checks the scale's type and shape and the zero point's shape against x
 * (the zero point's type is checked by the caller), and fills the layout. */
static mb_status q_layout_init(mb_op_ctx *ctx, int version, const q_names *nm,
                               const mb_tensor *x, const mb_tensor *scale,
                               const mb_tensor *zp, q_layout *l) {
  char a[96], b[96];
  int64_t block = 0;
  int axis = 0;
  mb_status st;
  bool scale_ok = scale->dtype == MB_DTYPE_FLOAT ||
                  (version >= 19 && (scale->dtype == MB_DTYPE_FLOAT16 ||
                                     scale->dtype == MB_DTYPE_BFLOAT16));
  if (!scale_ok)
    return mb__op_error(
        ctx, MB_STATUS_SHAPE, "%s has type %s; opset %d takes %s", nm->scale,
        mb_dtype_name(scale->dtype), version,
        version >= 19 ? "float32, float16 or bfloat16" : "float32");
  if (zp && !(same_shape(zp, scale) || (zp->numel == 1 && scale->numel == 1 &&
                                        zp->rank <= 1 && scale->rank <= 1)))
    return mb__op_error(
        ctx, MB_STATUS_SHAPE,
        "%s has shape %s but %s has shape %s; they must match", nm->zero_point,
        mb__shape_str(zp->rank, zp->dims, a, sizeof a), nm->scale,
        mb__shape_str(scale->rank, scale->dims, b, sizeof b));
  if (version >= 21) {
    block = mb__node_attr_int(ctx->node, "block_size", 0);
    if (block < 0)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "block_size %lld is negative", (long long)block);
  }
  memset(l, 0, sizeof *l);
  l->outer = 1;
  l->axis_dim = 1;
  l->inner = x->numel;
  l->block = 1;
  /* A single value (a scalar or a 1-element vector) is per tensor, as in
   * ONNX Runtime, whatever the axis. */
  if (scale->numel == 1 && scale->rank <= 1)
    return MB_STATUS_OK;
  if (version < 13)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "%s has shape %s; opset %d takes a single value (per "
                        "axis quantisation needs opset 13)",
                        nm->scale,
                        mb__shape_str(scale->rank, scale->dims, a, sizeof a),
                        version);
  if ((st = mb__op_axis(ctx, mb__node_attr_int(ctx->node, "axis", 1), x->rank,
                        "axis", &axis)))
    return st;
  if (x->rank == 0)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "%s has shape %s but x is a scalar", nm->scale,
                        mb__shape_str(scale->rank, scale->dims, a, sizeof a));
  l->axis_dim = x->dims[axis];
  l->outer = 1;
  for (int d = 0; d < axis; d++)
    l->outer *= x->dims[d];
  l->inner = 1;
  for (int d = axis + 1; d < x->rank; d++)
    l->inner *= x->dims[d];
  if (block == 0) {
    if (scale->rank != 1 || scale->dims[0] != l->axis_dim)
      return mb__op_error(
          ctx, MB_STATUS_SHAPE,
          "%s has shape %s; expected one value or %lld (x %s along axis %d)",
          nm->scale, mb__shape_str(scale->rank, scale->dims, a, sizeof a),
          (long long)l->axis_dim, mb__shape_str(x->rank, x->dims, b, sizeof b),
          axis);
    l->axis_stride = 1;
    return MB_STATUS_OK;
  }
  /* Blocked: x's shape with ceil(dim / block_size) along axis. */
  bool ok = scale->rank == x->rank;
  for (int d = 0; ok && d < x->rank; d++) {
    int64_t blocks = x->dims[d] == 0 ? 0 : (x->dims[d] - 1) / block + 1;
    ok = scale->dims[d] == (d == axis ? blocks : x->dims[d]);
  }
  if (!ok)
    return mb__op_error(
        ctx, MB_STATUS_SHAPE,
        "%s has shape %s; with block_size %lld along axis %d "
        "of x %s it must have x's shape with ceil(%lld / %lld) "
        "along the axis",
        nm->scale, mb__shape_str(scale->rank, scale->dims, a, sizeof a),
        (long long)block, axis, mb__shape_str(x->rank, x->dims, b, sizeof b),
        (long long)l->axis_dim, (long long)block);
  l->block = block;
  l->inner_stride = 1;
  l->axis_stride = l->inner;
  l->outer_stride = scale->dims[axis] * l->inner;
  return MB_STATUS_OK;
}

/* Zero points as int32 (scratch slot 2): zp's values, or zeros when it is
 * absent. NULL on OOM. */
static const int32_t *q_zero_points(mb_op_ctx *ctx, const mb_tensor *zp,
                                    int64_t count) {
  int32_t *z = mb__op_scratch(ctx, 2, sizeof(int32_t) * (size_t)count);
  if (!z)
    return NULL;
  for (int64_t i = 0; i < count; i++)
    z[i] = zp ? (int32_t)mb__tensor_get_i64(zp, i) : 0;
  return z;
}

/* Runs `body` over elements [begin, end) of x in runs that stay inside one
 * row of `inner` elements: in body, elements e .. e + n - 1 use parameters
 * p, p + p_step, ... (p_step 0: all use p). */
#define Q_FOR_RUNS(l, begin, end, body)                                        \
  do {                                                                         \
    int64_t in_ = (begin) % (l)->inner;                                        \
    int64_t row_ = (begin) / (l)->inner;                                       \
    int64_t d_ = row_ % (l)->axis_dim, o_ = row_ / (l)->axis_dim;              \
    for (int64_t e = (begin); e < (end);) {                                    \
      int64_t n = MB_MIN((end)-e, (l)->inner - in_);                           \
      int64_t p = o_ * (l)->outer_stride +                                     \
                  (d_ / (l)->block) * (l)->axis_stride +                       \
                  in_ * (l)->inner_stride;                                     \
      int64_t p_step = (l)->inner_stride;                                      \
      body;                                                                    \
      e += n;                                                                  \
      in_ = 0;                                                                 \
      if (++d_ == (l)->axis_dim) {                                             \
        d_ = 0;                                                                \
        o_++;                                                                  \
      }                                                                        \
    }                                                                          \
  } while (0)

/* ------------------------------------------------------------------------ */
/* QuantizeLinear                                                            */
/* ------------------------------------------------------------------------ */

/* round_half_even(v) + zp, saturated to [lo, hi]. Clamping before rounding
 * gives the same result (the bounds are integers) and keeps the rounding
 * trick in range: adding and subtracting 1.5 * 2^23 rounds half to even
 * for |v| < 2^22. NaN saturates to lo, as ONNX Runtime's vector kernel
 * does (max/min return the bound). */
static inline int32_t q_round(float v, int32_t zp, float lo, float hi) {
  /* Comparisons rather than fmaxf/fminf, which GCC leaves as libm calls
   * (their NaN rules are not maxss's) that kept this loop from
   * vectorising; a NaN fails the first test and becomes lo - zp, as
   * fmaxf(NaN, lo - zp) does. */
  float low = lo - (float)zp, high = hi - (float)zp;
  v = v > low ? v : low;
  v = v < high ? v : high;
  float r = (v + 12582912.0f) - 12582912.0f;
  return (int32_t)r + zp;
}

typedef struct q_job {
  const q_layout *l;
  const float *x, *scale;
  const int32_t *zp;
  float lo, hi;
  void *y;
} q_job;

/* The job's fields in locals: stores through an 8-bit T may alias
 * anything, so reading them through j in the loop kept it from
 * vectorising. */
#define Q_QUANTIZE_KERNEL(name, T)                                             \
  static void name(void *arg, int64_t begin, int64_t end) {                    \
    const q_job *j = arg;                                                      \
    T *restrict y = j->y;                                                      \
    const float *restrict x = j->x;                                            \
    const float *scale = j->scale;                                             \
    const int32_t *zp = j->zp;                                                 \
    const float lo = j->lo, hi = j->hi;                                        \
    Q_FOR_RUNS(j->l, begin, end, {                                             \
      if (p_step == 0) {                                                       \
        float s = scale[p];                                                    \
        int32_t z = zp[p];                                                     \
        for (int64_t k = 0; k < n; k++)                                        \
          y[e + k] = (T)q_round(x[e + k] / s, z, lo, hi);                      \
      } else {                                                                 \
        for (int64_t k = 0; k < n; k++)                                        \
          y[e + k] = (T)q_round(x[e + k] / scale[p + k], zp[p + k], lo, hi);   \
      }                                                                        \
    });                                                                        \
  }

Q_QUANTIZE_KERNEL(quantize_u8, uint8_t)
Q_QUANTIZE_KERNEL(quantize_i8, int8_t)
Q_QUANTIZE_KERNEL(quantize_u16, uint16_t)
Q_QUANTIZE_KERNEL(quantize_i16, int16_t)

static void (*const quantize_kernels[Q_KIND_COUNT])(void *, int64_t,
                                                    int64_t) = {
    [Q_U8] = quantize_u8,
    [Q_I8] = quantize_i8,
    [Q_U16] = quantize_u16,
    [Q_I16] = quantize_i16,
};

/* Output type: output_dtype (opset 21), else the zero point's, else uint8. */
static mb_status quantize_out_kind(mb_op_ctx *ctx, int version, int *kind_out) {
  const mb_tensor *zp = mb__op_input(ctx, 2);
  mb_dtype dt = zp ? zp->dtype : MB_DTYPE_UINT8;
  int64_t out_dt =
      version >= 21 ? mb__node_attr_int(ctx->node, "output_dtype", 0) : 0;
  if (out_dt != 0) {
    if (out_dt < 0 || out_dt >= MB_DTYPE_COUNT)
      return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                          "output_dtype %lld is not a supported type",
                          (long long)out_dt);
    if (zp && zp->dtype != (mb_dtype)out_dt)
      return mb__op_error(
          ctx, MB_STATUS_SHAPE, "output_dtype is %s but y_zero_point is %s",
          mb_dtype_name((mb_dtype)out_dt), mb_dtype_name(zp->dtype));
    dt = (mb_dtype)out_dt;
  }
  int kind = q_kind_of(dt, version, true);
  if (kind < 0)
    return mb__op_error(
        ctx, MB_STATUS_UNSUPPORTED,
        "output type %s is not supported at opset %d (%s)", mb_dtype_name(dt),
        version, version >= 21 ? "int8, uint8, int16, uint16" : "int8, uint8");
  *kind_out = kind;
  return MB_STATUS_OK;
}

static mb_status quantize_check(mb_op_ctx *ctx, int version, q_layout *l,
                                int *kind_out) {
  mb_status st = mb__op_check_arity(ctx, 2, 3);
  if (st)
    return st;
  if (!mb__op_output(ctx, 0))
    return mb__op_error(ctx, MB_STATUS_PARSE, "output 0 is missing");
  const mb_tensor *x = ctx->inputs[0], *scale = ctx->inputs[1];
  bool half = x->dtype == MB_DTYPE_FLOAT16 || x->dtype == MB_DTYPE_BFLOAT16;
  if (!(x->dtype == MB_DTYPE_FLOAT || x->dtype == MB_DTYPE_INT32 ||
        (half && version >= 19)))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "x has type %s; opset %d takes %s",
                        mb_dtype_name(x->dtype), version,
                        version >= 19 ? "float32, float16, bfloat16 or int32"
                                      : "float32 or int32");
  if ((st = quantize_out_kind(ctx, version, kind_out)) ||
      (st = q_layout_init(ctx, version, &quantize_names, x, scale,
                          mb__op_input(ctx, 2), l)))
    return st;
  /* From opset 19 the scale has x's type when x is a float type. */
  if (x->dtype != MB_DTYPE_INT32 && scale->dtype != x->dtype)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "y_scale has type %s but x has type %s",
                        mb_dtype_name(scale->dtype), mb_dtype_name(x->dtype));
  return MB_STATUS_OK;
}

static mb_status quantize_infer(mb_op_ctx *ctx, int version) {
  q_layout l;
  int kind;
  mb_status st = quantize_check(ctx, version, &l, &kind);
  if (st)
    return st;
  const mb_tensor *x = ctx->inputs[0];
  return mb__tensor_set_shape(ctx->outputs[0], q_types[kind].dtype, x->rank,
                              x->dims, ctx->err);
}

static mb_status quantize_run(mb_op_ctx *ctx, int version) {
  q_layout l;
  int kind;
  mb_status st = quantize_check(ctx, version, &l, &kind);
  mb_tensor *y = ctx->outputs[0];
  if (st || y->numel == 0)
    return st;
  const mb_tensor *scale = ctx->inputs[1];
  q_job job = {
      .l = &l,
      .x = mb__op_as_f32(ctx, ctx->inputs[0], 0),
      .scale = mb__op_as_f32(ctx, scale, 1),
      .zp = q_zero_points(ctx, mb__op_input(ctx, 2), scale->numel),
      .lo = (float)q_types[kind].lo,
      .hi = (float)q_types[kind].hi,
      .y = y->data,
  };
  if (!job.x || !job.scale || !job.zp)
    return ctx->err->status ? ctx->err->status : MB_STATUS_OUT_OF_MEMORY;
  mb__parallel_for(mb__op_pool(ctx, y->numel), y->numel, quantize_kernels[kind],
                   &job);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* DequantizeLinear                                                          */
/* ------------------------------------------------------------------------ */

typedef struct dq_job {
  const q_layout *l;
  const void *x;
  const float *scale;
  const int32_t *zp;
  float *y;
} dq_job;

/* The difference is formed in W, int64 for int32 inputs so that they
 * cannot overflow (int32 for the narrower types, whose conversion to
 * float vectorises), then multiplied in float32 as ONNX Runtime does. */
#define Q_DEQUANTIZE_KERNEL(name, T, W)                                        \
  static void name(void *arg, int64_t begin, int64_t end) {                    \
    const dq_job *j = arg;                                                     \
    const T *restrict x = j->x;                                                \
    float *restrict y = j->y;                                                  \
    const float *scale = j->scale;                                             \
    const int32_t *zp = j->zp;                                                 \
    Q_FOR_RUNS(j->l, begin, end, {                                             \
      if (p_step == 0) {                                                       \
        float s = scale[p];                                                    \
        W z = zp[p];                                                           \
        for (int64_t k = 0; k < n; k++)                                        \
          y[e + k] = (float)((W)x[e + k] - z) * s;                             \
      } else {                                                                 \
        for (int64_t k = 0; k < n; k++)                                        \
          y[e + k] = (float)((W)x[e + k] - (W)zp[p + k]) * scale[p + k];       \
      }                                                                        \
    });                                                                        \
  }

Q_DEQUANTIZE_KERNEL(dequantize_u8, uint8_t, int32_t)
Q_DEQUANTIZE_KERNEL(dequantize_i8, int8_t, int32_t)
Q_DEQUANTIZE_KERNEL(dequantize_u16, uint16_t, int32_t)
Q_DEQUANTIZE_KERNEL(dequantize_i16, int16_t, int32_t)
Q_DEQUANTIZE_KERNEL(dequantize_i32, int32_t, int64_t)

static void (*const dequantize_kernels[Q_KIND_COUNT])(void *, int64_t,
                                                      int64_t) = {
    [Q_U8] = dequantize_u8,   [Q_I8] = dequantize_i8,
    [Q_U16] = dequantize_u16, [Q_I16] = dequantize_i16,
    [Q_I32] = dequantize_i32,
};

static mb_status dequantize_check(mb_op_ctx *ctx, int version, q_layout *l,
                                  int *kind_out) {
  mb_status st = mb__op_check_arity(ctx, 2, 3);
  if (st)
    return st;
  if (!mb__op_output(ctx, 0))
    return mb__op_error(ctx, MB_STATUS_PARSE, "output 0 is missing");
  const mb_tensor *x = ctx->inputs[0], *zp = mb__op_input(ctx, 2);
  int kind = q_kind_of(x->dtype, version, false);
  if (kind < 0)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "x has type %s; opset %d takes %s",
                        mb_dtype_name(x->dtype), version,
                        version >= 21 ? "int8, uint8, int16, uint16 or int32"
                                      : "int8, uint8 or int32");
  if (zp && zp->dtype != x->dtype)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "x_zero_point has type %s but x has type %s",
                        mb_dtype_name(zp->dtype), mb_dtype_name(x->dtype));
  *kind_out = kind;
  return q_layout_init(ctx, version, &dequantize_names, x, ctx->inputs[1], zp,
                       l);
}

static mb_status dequantize_infer(mb_op_ctx *ctx, int version) {
  q_layout l;
  int kind;
  mb_status st = dequantize_check(ctx, version, &l, &kind);
  if (st)
    return st;
  const mb_tensor *x = ctx->inputs[0];
  /* y has the scale's type (float32 before opset 19). */
  return mb__tensor_set_shape(ctx->outputs[0], ctx->inputs[1]->dtype, x->rank,
                              x->dims, ctx->err);
}

static mb_status dequantize_run(mb_op_ctx *ctx, int version) {
  q_layout l;
  int kind;
  mb_status st = dequantize_check(ctx, version, &l, &kind);
  mb_tensor *y = ctx->outputs[0];
  if (st || y->numel == 0)
    return st;
  const mb_tensor *scale = ctx->inputs[1], *zp = mb__op_input(ctx, 2);
  dq_job job = {
      .l = &l,
      .x = ctx->inputs[0]->data,
      .scale = mb__op_as_f32(ctx, scale, 1),
      .zp = q_zero_points(ctx, zp, scale->numel),
      .y = mb__op_f32_dest(ctx, y, 3),
  };
  if (!job.scale || !job.zp || !job.y)
    return ctx->err->status ? ctx->err->status : MB_STATUS_OUT_OF_MEMORY;
  /* int32 values (biases) are quantised with a zero point of 0. */
  for (int64_t i = 0; zp && kind == Q_I32 && i < scale->numel; i++)
    if (job.zp[i] != 0)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "x_zero_point[%lld] is %d; an int32 x takes a zero "
                          "point of 0",
                          (long long)i, (int)job.zp[i]);
  mb__parallel_for(mb__op_pool(ctx, y->numel), y->numel,
                   dequantize_kernels[kind], &job);
  mb__op_store_f32(y, job.y);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* DynamicQuantizeLinear                                                     */
/* ------------------------------------------------------------------------ */

/* uint8 with scale and zero point from the range of x widened to include
 * 0, as ONNX Runtime computes them (a range of 0 gives scale 1, where the
 * ONNX formula would divide by zero). NaN elements are ignored for the
 * range. */
static mb_status dynamic_quantize_infer(mb_op_ctx *ctx) {
  mb_status st = mb__op_check_arity(ctx, 1, 1);
  if (st)
    return st;
  const mb_tensor *x = ctx->inputs[0];
  if (x->dtype != MB_DTYPE_FLOAT)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "x has type %s; only float32 is supported",
                        mb_dtype_name(x->dtype));
  mb_tensor *y = mb__op_output(ctx, 0), *scale = mb__op_output(ctx, 1);
  mb_tensor *zp = mb__op_output(ctx, 2);
  if (y && (st = mb__tensor_set_shape(y, MB_DTYPE_UINT8, x->rank, x->dims,
                                      ctx->err)))
    return st;
  if (scale &&
      (st = mb__tensor_set_shape(scale, MB_DTYPE_FLOAT, 0, NULL, ctx->err)))
    return st;
  if (zp && (st = mb__tensor_set_shape(zp, MB_DTYPE_UINT8, 0, NULL, ctx->err)))
    return st;
  return MB_STATUS_OK;
}

static mb_status dynamic_quantize_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0];
  mb_tensor *y = mb__op_output(ctx, 0), *scale_out = mb__op_output(ctx, 1);
  mb_tensor *zp_out = mb__op_output(ctx, 2);
  const float *xs = x->data;
  float lo = 0.0f, hi = 0.0f; /* the range always includes 0 */
  for (int64_t i = 0; i < x->numel; i++) {
    lo = xs[i] < lo ? xs[i] : lo;
    hi = xs[i] > hi ? xs[i] : hi;
  }
  float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  /* Saturate, then round half to even (q_round with a zero point of 0). */
  int32_t zp = q_round(0.0f - lo / scale, 0, 0.0f, 255.0f);
  if (y) {
    q_layout l = {.outer = 1, .axis_dim = 1, .inner = x->numel, .block = 1};
    q_job job = {.l = &l,
                 .x = xs,
                 .scale = &scale,
                 .zp = &zp,
                 .lo = 0.0f,
                 .hi = 255.0f,
                 .y = y->data};
    if (y->numel > 0)
      mb__parallel_for(mb__op_pool(ctx, y->numel), y->numel, quantize_u8, &job);
  }
  if (scale_out)
    *(float *)scale_out->data = scale;
  if (zp_out)
    *(uint8_t *)zp_out->data = (uint8_t)zp;
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Registration: one row per opset that changed the operators                */
/* ------------------------------------------------------------------------ */

#define Q_VERSION_FNS(op, v)                                                   \
  static mb_status op##_infer_v##v(mb_op_ctx *ctx) {                           \
    return op##_infer(ctx, v);                                                 \
  }                                                                            \
  static mb_status op##_run_v##v(mb_op_ctx *ctx) {                             \
    return op##_run(ctx, v);                                                   \
  }
#define Q_ROW(name, op, v)                                                     \
  { "", name, v, op##_infer_v##v, op##_run_v##v, 0 }

Q_VERSION_FNS(quantize, 10)
Q_VERSION_FNS(quantize, 13)
Q_VERSION_FNS(quantize, 19)
Q_VERSION_FNS(quantize, 21)
Q_VERSION_FNS(dequantize, 10)
Q_VERSION_FNS(dequantize, 13)
Q_VERSION_FNS(dequantize, 19)
Q_VERSION_FNS(dequantize, 21)

const mb_op_def mb__ops_quantize[] = {
    Q_ROW("QuantizeLinear", quantize, 10),
    Q_ROW("QuantizeLinear", quantize, 13),
    Q_ROW("QuantizeLinear", quantize, 19),
    Q_ROW("QuantizeLinear", quantize, 21),
    Q_ROW("DequantizeLinear", dequantize, 10),
    Q_ROW("DequantizeLinear", dequantize, 13),
    Q_ROW("DequantizeLinear", dequantize, 19),
    Q_ROW("DequantizeLinear", dequantize, 21),
    {"", "DynamicQuantizeLinear", 11, dynamic_quantize_infer,
     dynamic_quantize_run, 0},
};
MB_OP_TABLE_END(quantize);
