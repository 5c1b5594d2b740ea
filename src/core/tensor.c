/* Tensors: allocation with overflow checks, element access across dtypes,
 * half-precision conversion and comparison. */
#include "core/internal.h"

#include <math.h>
#include <stdlib.h>

mb_status mb__tensor_set_shape(mb_tensor *t, mb_dtype dtype, int rank,
                               const int64_t *dims, mb_error *err) {
  int64_t numel;
  size_t nbytes;
  char buf[128];
  if (rank < 0 || rank > MB_MAX_RANK)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "rank %d is outside the supported range 0..%d", rank,
                     MB_MAX_RANK);
  if ((unsigned)dtype >= MB_DTYPE_COUNT || mb_dtype_size(dtype) == 0)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "element type %s is not supported", mb_dtype_name(dtype));
  if (!mb__numel(rank, dims, &numel))
    return mb__error(err, MB_STATUS_OVERFLOW,
                     "shape %s is negative or its element count overflows",
                     mb__shape_str(rank, dims, buf, sizeof buf));
  if (!mb__mul_size((size_t)numel, mb_dtype_size(dtype), &nbytes) ||
      nbytes > MB_MAX_TENSOR_BYTES)
    return mb__error(err, MB_STATUS_OVERFLOW,
                     "shape %s of %s needs more than the %llu-byte limit",
                     mb__shape_str(rank, dims, buf, sizeof buf),
                     mb_dtype_name(dtype),
                     (unsigned long long)MB_MAX_TENSOR_BYTES);
  t->dtype = dtype;
  t->rank = rank;
  for (int i = 0; i < rank; i++)
    t->dims[i] = dims[i];
  for (int i = rank; i < MB_MAX_RANK; i++)
    t->dims[i] = 0;
  t->numel = numel;
  t->nbytes = nbytes;
  return MB_STATUS_OK;
}

mb_status mb__tensor_reset(mb_tensor *t, mb_dtype dtype, int rank,
                           const int64_t *dims, mb_error *err) {
  mb_status status = mb__tensor_set_shape(t, dtype, rank, dims, err);
  if (status)
    return status;
  if (t->capacity >= t->nbytes && t->data)
    return MB_STATUS_OK;
  if (t->capacity)
    mb__aligned_free(t->data);
  t->data = NULL;
  t->capacity = 0;
  t->data = mb__aligned_alloc(t->nbytes);
  if (!t->data)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "cannot allocate %zu bytes for a tensor", t->nbytes);
  t->capacity = t->nbytes ? t->nbytes : MB_TENSOR_ALIGNMENT;
  return MB_STATUS_OK;
}

void mb__tensor_clear(mb_tensor *t) {
  if (!t)
    return;
  if (t->capacity)
    mb__aligned_free(t->data);
  free(t->name);
  memset(t, 0, sizeof *t);
}

mb_status mb_tensor_create(mb_dtype dtype, int rank, const int64_t *dims,
                           mb_tensor **tensor_out, mb_error *err) {
  mb_tensor *t = calloc(1, sizeof *t);
  mb_status status;
  if (!t)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot allocate a tensor");
  status = mb__tensor_reset(t, dtype, rank, dims, err);
  if (status) {
    free(t);
    return status;
  }
  memset(t->data, 0, t->nbytes);
  *tensor_out = t;
  return MB_STATUS_OK;
}

mb_status mb_tensor_clone(const mb_tensor *src, mb_tensor **tensor_out,
                          mb_error *err) {
  mb_tensor *t = NULL;
  mb_status status =
      mb_tensor_create(src->dtype, src->rank, src->dims, &t, err);
  if (status)
    return status;
  if (src->nbytes)
    memcpy(t->data, src->data, src->nbytes);
  if (src->name && !(t->name = mb__strdup(src->name))) {
    mb_tensor_free(t);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot copy tensor name");
  }
  *tensor_out = t;
  return MB_STATUS_OK;
}

void mb_tensor_free(mb_tensor *t) {
  if (!t)
    return;
  mb__tensor_clear(t);
  free(t);
}

const char *mb__shape_str(int rank, const int64_t *dims, char *buf,
                          size_t size) {
  size_t used = 0;
  if (size == 0)
    return buf;
  buf[0] = '\0';
  used += (size_t)snprintf(buf + used, size - used, "[");
  for (int i = 0; i < rank && i < MB_MAX_RANK && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? "," : "",
                             (long long)dims[i]);
  if (used < size)
    snprintf(buf + used, size - used, "]");
  return buf;
}

/* ---- half precision ---- */

static inline uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static inline float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

float mb__f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) /* inf / nan */
    return bits_f32(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0)
      return bits_f32(sign);
    /* subnormal: value = mant * 2^-24 */
    float v = (float)mant * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t mb__f32_to_f16(float f) {
  uint32_t u = f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) /* inf or nan */
    return sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0);
  if (abs >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
    return sign | 0x7c00;
  if (abs < 0x38800000u) { /* below the smallest normal half: subnormal */
    float v = bits_f32(abs) * 16777216.0f; /* scale by 2^24 */
    /* nearbyint rounds half to even in the default rounding mode */
    return sign | (uint16_t)nearbyintf(v);
  }
  uint32_t mant = abs & 0x7fffff;
  uint32_t exp = (abs >> 23) - 112;
  uint32_t half = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    half++;
  return sign | (uint16_t)half;
}

float mb__bf16_to_f32(uint16_t h) {
  return bits_f32((uint32_t)h << 16);
}

uint16_t mb__f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) /* nan: keep it a quiet nan */
    return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

/* ---- element access ---- */

double mb__tensor_get_f64(const mb_tensor *t, int64_t i) {
  const void *d = t->data;
  switch (t->dtype) {
  case MB_DTYPE_FLOAT:
    return ((const float *)d)[i];
  case MB_DTYPE_DOUBLE:
    return ((const double *)d)[i];
  case MB_DTYPE_FLOAT16:
    return mb__f16_to_f32(((const uint16_t *)d)[i]);
  case MB_DTYPE_BFLOAT16:
    return mb__bf16_to_f32(((const uint16_t *)d)[i]);
  case MB_DTYPE_INT8:
    return ((const int8_t *)d)[i];
  case MB_DTYPE_UINT8:
    return ((const uint8_t *)d)[i];
  case MB_DTYPE_BOOL:
    return ((const uint8_t *)d)[i] != 0;
  case MB_DTYPE_INT16:
    return ((const int16_t *)d)[i];
  case MB_DTYPE_UINT16:
    return ((const uint16_t *)d)[i];
  case MB_DTYPE_INT32:
    return ((const int32_t *)d)[i];
  case MB_DTYPE_UINT32:
    return ((const uint32_t *)d)[i];
  case MB_DTYPE_INT64:
    return (double)((const int64_t *)d)[i];
  case MB_DTYPE_UINT64:
    return (double)((const uint64_t *)d)[i];
  default:
    return 0.0;
  }
}

int64_t mb__tensor_get_i64(const mb_tensor *t, int64_t i) {
  const void *d = t->data;
  switch (t->dtype) {
  case MB_DTYPE_INT64:
    return ((const int64_t *)d)[i];
  case MB_DTYPE_INT32:
    return ((const int32_t *)d)[i];
  case MB_DTYPE_INT8:
    return ((const int8_t *)d)[i];
  case MB_DTYPE_UINT8:
    return ((const uint8_t *)d)[i];
  case MB_DTYPE_BOOL:
    return ((const uint8_t *)d)[i] != 0;
  case MB_DTYPE_INT16:
    return ((const int16_t *)d)[i];
  case MB_DTYPE_UINT16:
    return ((const uint16_t *)d)[i];
  case MB_DTYPE_UINT32:
    return ((const uint32_t *)d)[i];
  case MB_DTYPE_UINT64:
    return (int64_t)((const uint64_t *)d)[i];
  default: {
    double v = mb__tensor_get_f64(t, i);
    if (!(v == v))
      return 0;
    if (v >= 9.2233720368547758e18)
      return INT64_MAX;
    if (v <= -9.2233720368547758e18)
      return INT64_MIN;
    return (int64_t)v;
  }
  }
}

/* Float to integer conversion that never invokes undefined behaviour: out
 * of range values saturate and NaN becomes 0. */
#define SAT_CAST(type, lo, hi, v)                                              \
  ((v) != (v)            ? (type)0                                             \
   : (v) <= (double)(lo) ? (type)(lo)                                          \
   : (v) >= (double)(hi) ? (type)(hi)                                          \
                         : (type)(v))

void mb__tensor_set_f64(mb_tensor *t, int64_t i, double v) {
  void *d = t->data;
  switch (t->dtype) {
  case MB_DTYPE_FLOAT:
    ((float *)d)[i] = (float)v;
    break;
  case MB_DTYPE_DOUBLE:
    ((double *)d)[i] = v;
    break;
  case MB_DTYPE_FLOAT16:
    ((uint16_t *)d)[i] = mb__f32_to_f16((float)v);
    break;
  case MB_DTYPE_BFLOAT16:
    ((uint16_t *)d)[i] = mb__f32_to_bf16((float)v);
    break;
  case MB_DTYPE_BOOL:
    ((uint8_t *)d)[i] = v != 0.0;
    break;
  case MB_DTYPE_INT8:
    ((int8_t *)d)[i] = SAT_CAST(int8_t, INT8_MIN, INT8_MAX, v);
    break;
  case MB_DTYPE_UINT8:
    ((uint8_t *)d)[i] = SAT_CAST(uint8_t, 0, UINT8_MAX, v);
    break;
  case MB_DTYPE_INT16:
    ((int16_t *)d)[i] = SAT_CAST(int16_t, INT16_MIN, INT16_MAX, v);
    break;
  case MB_DTYPE_UINT16:
    ((uint16_t *)d)[i] = SAT_CAST(uint16_t, 0, UINT16_MAX, v);
    break;
  case MB_DTYPE_INT32:
    ((int32_t *)d)[i] = SAT_CAST(int32_t, INT32_MIN, INT32_MAX, v);
    break;
  case MB_DTYPE_UINT32:
    ((uint32_t *)d)[i] = SAT_CAST(uint32_t, 0, UINT32_MAX, v);
    break;
  case MB_DTYPE_INT64:
    ((int64_t *)d)[i] = SAT_CAST(int64_t, INT64_MIN, 9.2233720368547748e18, v);
    break;
  case MB_DTYPE_UINT64:
    ((uint64_t *)d)[i] = SAT_CAST(uint64_t, 0, 1.8446744073709550e19, v);
    break;
  default:
    break;
  }
}

void mb__tensor_set_i64(mb_tensor *t, int64_t i, int64_t v) {
  void *d = t->data;
  uint64_t u = (uint64_t)v; /* narrowing an unsigned value is defined */
  switch (t->dtype) {
  case MB_DTYPE_INT8:
  case MB_DTYPE_UINT8:
    ((uint8_t *)d)[i] = (uint8_t)u;
    break;
  case MB_DTYPE_INT16:
  case MB_DTYPE_UINT16:
    ((uint16_t *)d)[i] = (uint16_t)u;
    break;
  case MB_DTYPE_INT32:
  case MB_DTYPE_UINT32:
    ((uint32_t *)d)[i] = (uint32_t)u;
    break;
  case MB_DTYPE_INT64:
  case MB_DTYPE_UINT64:
    ((uint64_t *)d)[i] = u;
    break;
  case MB_DTYPE_BOOL:
    ((uint8_t *)d)[i] = v != 0;
    break;
  default:
    mb__tensor_set_f64(t, i, (double)v);
    break;
  }
}

/* ---- comparison ---- */

mb_status mb_tensor_compare(const mb_tensor *actual, const mb_tensor *expected,
                            double rtol, double atol,
                            mb_compare_result *result_out, mb_error *err) {
  mb_compare_result r = {0, 0, 1.0, 0, 1};
  double dot = 0, na = 0, nb = 0;
  if (!actual || !expected)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "compare: tensor is NULL");
  if (mb_dtype_size(actual->dtype) == 0 || mb_dtype_size(expected->dtype) == 0)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "compare: element type %s/%s cannot be compared",
                     mb_dtype_name(actual->dtype),
                     mb_dtype_name(expected->dtype));
  if (actual->dtype != expected->dtype || actual->rank != expected->rank)
    r.shape_match = 0;
  for (int i = 0; r.shape_match && i < actual->rank; i++)
    if (actual->dims[i] != expected->dims[i])
      r.shape_match = 0;
  if (!r.shape_match) {
    r.n_bad = expected->numel > 0 ? expected->numel : 1;
    r.cosine = 0;
    *result_out = r;
    return MB_STATUS_OK;
  }
  for (int64_t i = 0; i < expected->numel; i++) {
    double a = mb__tensor_get_f64(actual, i);
    double e = mb__tensor_get_f64(expected, i);
    double diff = fabs(a - e);
    if (actual->dtype == MB_DTYPE_INT64 || actual->dtype == MB_DTYPE_UINT64) {
      /* Exactly: two values beyond 2^53 that differ can round to the same
       * double, and a difference of 0 would pass even a zero tolerance. */
      uint64_t ai = (uint64_t)mb__tensor_get_i64(actual, i);
      uint64_t ei = (uint64_t)mb__tensor_get_i64(expected, i);
      if (ai == ei)
        continue;
      bool above = actual->dtype == MB_DTYPE_UINT64 ? ai > ei
                                                    : (int64_t)ai > (int64_t)ei;
      diff = (double)(above ? ai - ei : ei - ai);
    }
    if (isnan(a) || isnan(e)) {
      if (!(isnan(a) && isnan(e)))
        r.n_bad++;
      continue;
    }
    if (isinf(a) || isinf(e)) {
      if (a != e)
        r.n_bad++;
      continue;
    }
    /* Relative error is measured where the expected value is non-zero;
     * elements expected to be exactly 0 show up in max_abs_err. */
    double rel = e != 0 ? diff / fabs(e) : 0;
    if (diff > r.max_abs_err)
      r.max_abs_err = diff;
    if (rel > r.max_rel_err)
      r.max_rel_err = rel;
    if (diff > atol + rtol * fabs(e))
      r.n_bad++;
    dot += a * e;
    na += a * a;
    nb += e * e;
  }
  if (na == 0 && nb == 0)
    r.cosine = 1.0;
  else if (na == 0 || nb == 0)
    r.cosine = 0.0;
  else
    r.cosine = dot / (sqrt(na) * sqrt(nb));
  *result_out = r;
  return MB_STATUS_OK;
}
