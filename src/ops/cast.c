/* Elementwise operators that convert or copy a tensor: Cast, CastLike,
 * Identity and Dropout (inference), and the conversion between any two
 * numeric dtypes they and mixed-type Pow (binary.c) use, mb__ew_convert.
 * What the elementwise families share is in elementwise.h. */

#include "ops/elementwise.h"

/* ------------------------------------------------------------------------ */
/* Conversions between dtypes (Cast, mixed-type Pow)                          */
/* ------------------------------------------------------------------------ */

/* Float to integer without undefined behaviour: saturates, NaN gives 0. */
#define EW_SAT(T, lo, hi, v)                                                   \
  ((v) != (v)            ? (T)0                                                \
   : (v) <= (double)(lo) ? (T)(lo)                                             \
   : (v) >= (double)(hi) ? (T)(hi)                                             \
                         : (T)(v))

static void ew_load_f64(mb_dtype dt, const void *src, double *dst, int64_t n) {
#define EW_LOAD(T)                                                             \
  for (int64_t i = 0; i < n; i++)                                              \
    dst[i] = (double)((const T *)src)[i];                                      \
  break;
  switch (dt) {
  case MB_DTYPE_FLOAT:
    EW_LOAD(float)
  case MB_DTYPE_DOUBLE:
    EW_LOAD(double)
  case MB_DTYPE_INT8:
    EW_LOAD(int8_t)
  case MB_DTYPE_INT16:
    EW_LOAD(int16_t)
  case MB_DTYPE_INT32:
    EW_LOAD(int32_t)
  case MB_DTYPE_INT64:
    EW_LOAD(int64_t)
  case MB_DTYPE_UINT8:
    EW_LOAD(uint8_t)
  case MB_DTYPE_UINT16:
    EW_LOAD(uint16_t)
  case MB_DTYPE_UINT32:
    EW_LOAD(uint32_t)
  case MB_DTYPE_UINT64:
    EW_LOAD(uint64_t)
  case MB_DTYPE_BOOL:
    for (int64_t i = 0; i < n; i++)
      dst[i] = ((const uint8_t *)src)[i] != 0;
    break;
  case MB_DTYPE_FLOAT16:
    for (int64_t i = 0; i < n; i++)
      dst[i] = mb__f16_to_f32(((const uint16_t *)src)[i]);
    break;
  case MB_DTYPE_BFLOAT16:
    for (int64_t i = 0; i < n; i++)
      dst[i] = mb__bf16_to_f32(((const uint16_t *)src)[i]);
    break;
  default:
    break;
  }
#undef EW_LOAD
}

static void ew_store_f64(mb_dtype dt, const double *src, void *dst, int64_t n) {
#define EW_STORE(T, lo, hi)                                                    \
  for (int64_t i = 0; i < n; i++)                                              \
    ((T *)dst)[i] = EW_SAT(T, lo, hi, src[i]);                                 \
  break;
  switch (dt) {
  case MB_DTYPE_FLOAT:
    for (int64_t i = 0; i < n; i++)
      ((float *)dst)[i] = (float)src[i];
    break;
  case MB_DTYPE_DOUBLE:
    memcpy(dst, src, (size_t)n * sizeof(double));
    break;
  case MB_DTYPE_INT8:
    EW_STORE(int8_t, INT8_MIN, INT8_MAX)
  case MB_DTYPE_INT16:
    EW_STORE(int16_t, INT16_MIN, INT16_MAX)
  case MB_DTYPE_INT32:
    EW_STORE(int32_t, INT32_MIN, INT32_MAX)
  /* The largest doubles below 2^63 and 2^64, so the cast stays defined. */
  case MB_DTYPE_INT64:
    EW_STORE(int64_t, INT64_MIN, 9.2233720368547748e18)
  case MB_DTYPE_UINT8:
    EW_STORE(uint8_t, 0, UINT8_MAX)
  case MB_DTYPE_UINT16:
    EW_STORE(uint16_t, 0, UINT16_MAX)
  case MB_DTYPE_UINT32:
    EW_STORE(uint32_t, 0, UINT32_MAX)
  case MB_DTYPE_UINT64:
    EW_STORE(uint64_t, 0, 1.8446744073709550e19)
  case MB_DTYPE_BOOL:
    for (int64_t i = 0; i < n; i++)
      ((uint8_t *)dst)[i] = src[i] != 0;
    break;
  case MB_DTYPE_FLOAT16:
    for (int64_t i = 0; i < n; i++)
      ((uint16_t *)dst)[i] = mb__f32_to_f16((float)src[i]);
    break;
  case MB_DTYPE_BFLOAT16:
    for (int64_t i = 0; i < n; i++)
      ((uint16_t *)dst)[i] = mb__f32_to_bf16((float)src[i]);
    break;
  default:
    break;
  }
#undef EW_STORE
}

/* Integer and bool types only. */
static void ew_load_i64(mb_dtype dt, const void *src, int64_t *dst, int64_t n) {
#define EW_LOAD(T)                                                             \
  for (int64_t i = 0; i < n; i++)                                              \
    dst[i] = (int64_t)((const T *)src)[i];                                     \
  break;
  switch (dt) {
  case MB_DTYPE_INT8:
    EW_LOAD(int8_t)
  case MB_DTYPE_INT16:
    EW_LOAD(int16_t)
  case MB_DTYPE_INT32:
    EW_LOAD(int32_t)
  case MB_DTYPE_INT64:
    EW_LOAD(int64_t)
  case MB_DTYPE_UINT8:
    EW_LOAD(uint8_t)
  case MB_DTYPE_UINT16:
    EW_LOAD(uint16_t)
  case MB_DTYPE_UINT32:
    EW_LOAD(uint32_t)
  case MB_DTYPE_UINT64:
    EW_LOAD(uint64_t) /* wraps, and wraps back */
  case MB_DTYPE_BOOL:
    for (int64_t i = 0; i < n; i++)
      dst[i] = ((const uint8_t *)src)[i] != 0;
    break;
  default:
    break;
  }
#undef EW_LOAD
}

/* Integer narrowing keeps the low bits (two's complement), like numpy's
 * astype and onnxruntime's Cast. */
static void ew_store_i64(mb_dtype dt, const int64_t *src, void *dst,
                         int64_t n) {
#define EW_STORE(T, U)                                                         \
  for (int64_t i = 0; i < n; i++)                                              \
    ((T *)dst)[i] = (T)(U)(uint64_t)src[i];                                    \
  break;
  switch (dt) {
  case MB_DTYPE_INT8:
    EW_STORE(int8_t, uint8_t)
  case MB_DTYPE_INT16:
    EW_STORE(int16_t, uint16_t)
  case MB_DTYPE_INT32:
    EW_STORE(int32_t, uint32_t)
  case MB_DTYPE_INT64:
    EW_STORE(int64_t, uint64_t)
  case MB_DTYPE_UINT8:
    EW_STORE(uint8_t, uint8_t)
  case MB_DTYPE_UINT16:
    EW_STORE(uint16_t, uint16_t)
  case MB_DTYPE_UINT32:
    EW_STORE(uint32_t, uint32_t)
  case MB_DTYPE_UINT64:
    EW_STORE(uint64_t, uint64_t)
  case MB_DTYPE_BOOL:
    for (int64_t i = 0; i < n; i++)
      ((uint8_t *)dst)[i] = src[i] != 0;
    break;
  default:
    break;
  }
#undef EW_STORE
}

/* Converts n elements between any two numeric dtypes in chunks, through
 * int64 when both are integer-like (exact) and through double otherwise. */
void mb__ew_convert(mb_dtype from, const void *src, mb_dtype to, void *dst,
                    int64_t n) {
  enum { CHUNK = 512 };
  size_t fs = mb_dtype_size(from), ts = mb_dtype_size(to);
  if (from == to) {
    memcpy(dst, src, (size_t)n * fs);
    return;
  }
  if (from == MB_DTYPE_FLOAT && ew_is_half(to)) {
    const float *s = src;
    uint16_t *d = dst;
    uint16_t (*cvt)(float) =
        to == MB_DTYPE_FLOAT16 ? mb__f32_to_f16 : mb__f32_to_bf16;
    for (int64_t i = 0; i < n; i++)
      d[i] = cvt(s[i]);
    return;
  }
  if (ew_is_half(from) && to == MB_DTYPE_FLOAT) {
    const uint16_t *s = src;
    float *d = dst;
    float (*cvt)(uint16_t) =
        from == MB_DTYPE_FLOAT16 ? mb__f16_to_f32 : mb__bf16_to_f32;
    for (int64_t i = 0; i < n; i++)
      d[i] = cvt(s[i]);
    return;
  }
  bool ints = ew_is_intlike(from) && ew_is_intlike(to);
  union {
    double f[CHUNK];
    int64_t i[CHUNK];
  } buf;
  for (int64_t done = 0; done < n; done += CHUNK) {
    int64_t m = MB_MIN(CHUNK, n - done);
    const char *s = (const char *)src + (size_t)done * fs;
    char *d = (char *)dst + (size_t)done * ts;
    if (ints) {
      ew_load_i64(from, s, buf.i, m);
      ew_store_i64(to, buf.i, d, m);
    } else {
      ew_load_f64(from, s, buf.f, m);
      ew_store_f64(to, buf.f, d, m);
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Cast, CastLike, Identity, Dropout                                         */
/* ------------------------------------------------------------------------ */

static mb_status ew_cast_check(mb_op_ctx *ctx, mb_dtype from, mb_dtype to) {
  if (!ew_is_numeric(from) || !ew_is_numeric(to))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "cast from %s to %s is not supported (numeric and "
                        "bool types only)",
                        mb_dtype_name(from), mb_dtype_name(to));
  return MB_STATUS_OK;
}

static mb_status ew_cast_target(mb_op_ctx *ctx, mb_dtype *to_out) {
  const mb_attr *to = mb__node_attr(ctx->node, "to");
  if (!to || to->type != MB_ATTR_INT)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "attribute 'to' must be an integer data type");
  if (to->i <= 0 || to->i >= MB_DTYPE_COUNT)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "attribute 'to' names unknown data type %lld",
                        (long long)to->i);
  *to_out = (mb_dtype)to->i;
  return MB_STATUS_OK;
}

static mb_status ew_cast_infer_to(mb_op_ctx *ctx, mb_dtype to) {
  const mb_tensor *x = mb__op_input(ctx, 0);
  mb_status st = ew_cast_check(ctx, x->dtype, to);
  if (st)
    return st;
  mb_tensor *y = mb__op_output(ctx, 0);
  return y ? mb__tensor_set_shape(y, to, x->rank, x->dims, ctx->err)
           : MB_STATUS_OK;
}

static mb_status ew_cast_infer(mb_op_ctx *ctx) {
  mb_dtype to = MB_DTYPE_UNDEFINED;
  mb_status st = mb__op_check_arity(ctx, 1, 1);
  if (!st)
    st = ew_cast_target(ctx, &to);
  return st ? st : ew_cast_infer_to(ctx, to);
}

static mb_status ew_castlike_infer(mb_op_ctx *ctx) {
  mb_status st = mb__op_check_arity(ctx, 2, 2);
  return st ? st : ew_cast_infer_to(ctx, mb__op_input(ctx, 1)->dtype);
}

/* Shared by Cast and CastLike: the target is the output's dtype. */
static mb_status ew_cast_run(mb_op_ctx *ctx) {
  const mb_tensor *x = mb__op_input(ctx, 0);
  mb_tensor *y = mb__op_output(ctx, 0);
  if (y && y->numel > 0)
    mb__ew_convert(x->dtype, x->data, y->dtype, y->data, y->numel);
  return MB_STATUS_OK;
}

static mb_status ew_identity_infer(mb_op_ctx *ctx) {
  mb_status st = mb__op_check_arity(ctx, 1, 1);
  if (st)
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  if (mb_dtype_size(x->dtype) == 0)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "element type %s is not supported",
                        mb_dtype_name(x->dtype));
  mb_tensor *y = mb__op_output(ctx, 0);
  return y ? mb__tensor_set_shape(y, x->dtype, x->rank, x->dims, ctx->err)
           : MB_STATUS_OK;
}

static mb_status ew_identity_run(mb_op_ctx *ctx) {
  const mb_tensor *x = mb__op_input(ctx, 0);
  mb_tensor *y = mb__op_output(ctx, 0);
  if (y && y->nbytes > 0 && y->data != x->data)
    memcpy(y->data, x->data, y->nbytes);
  return MB_STATUS_OK;
}

/* Dropout runs in inference mode: the output is the input and the mask is
 * all true. Training mode (opset 12+ input 2) is random unless ratio is 0. */
static mb_status ew_dropout_infer(mb_op_ctx *ctx) {
  mb_status st = mb__op_check_arity(ctx, 1, ctx->opset >= 12 ? 3 : 1);
  if (st)
    return st;
  const mb_tensor *x = mb__op_input(ctx, 0);
  if (!mb__dtype_is_float(x->dtype))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "element type %s is not supported",
                        mb_dtype_name(x->dtype));
  mb_tensor *y = mb__op_output(ctx, 0);
  mb_tensor *mask = mb__op_output(ctx, 1);
  if (y) {
    st = mb__tensor_set_shape(y, x->dtype, x->rank, x->dims, ctx->err);
    if (st)
      return st;
  }
  if (mask) /* the mask was of the input's type before opset 10 */
    st = mb__tensor_set_shape(mask, ctx->opset >= 10 ? MB_DTYPE_BOOL : x->dtype,
                              x->rank, x->dims, ctx->err);
  return st;
}

static mb_status ew_dropout_run(mb_op_ctx *ctx) {
  const mb_tensor *x = mb__op_input(ctx, 0);
  const mb_tensor *ratio = mb__op_input(ctx, 1);
  const mb_tensor *training = mb__op_input(ctx, 2);
  if (training && training->numel > 0 && mb__tensor_get_i64(training, 0)) {
    double r = ratio && ratio->numel > 0 ? mb__tensor_get_f64(ratio, 0) : 0.5;
    if (r != 0)
      return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                          "training mode with ratio %g is random; only "
                          "ratio 0 is supported",
                          r);
  }
  mb_tensor *y = mb__op_output(ctx, 0);
  mb_tensor *mask = mb__op_output(ctx, 1);
  if (y && y->nbytes > 0)
    memcpy(y->data, x->data, y->nbytes);
  if (mask && mask->dtype == MB_DTYPE_BOOL && mask->nbytes > 0)
    memset(mask->data, 1, mask->nbytes);
  else if (mask)
    for (int64_t i = 0; i < mask->numel; i++)
      mb__tensor_set_f64(mask, i, 1.0);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Registration                                                             */
/* ------------------------------------------------------------------------ */

const mb_op_def mb__ops_cast[] = {
    {"", "Cast", 1, ew_cast_infer, ew_cast_run, 0},
    {"", "CastLike", 15, ew_castlike_infer, ew_cast_run, 0},
    {"", "Identity", 1, ew_identity_infer, ew_identity_run, 0},
    {"", "Dropout", 1, ew_dropout_infer, ew_dropout_run, 0},
};
MB_OP_TABLE_END(cast);
