/* Helpers shared by the operator families: errors, scratch memory, axes,
 * broadcasting and float views of half-precision tensors. */
#include "ops/op.h"

#include <stdlib.h>

mb_status mb__op_error(mb_op_ctx *ctx, mb_status status, const char *fmt, ...) {
  char label[160];
  char msg[MB_ERROR_MESSAGE_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mb__error(ctx->err, status, "%s: %s",
                   mb__node_label(ctx->node, label, sizeof label), msg);
}

mb_status mb__op_label_error(mb_op_ctx *ctx, mb_status status) {
  if (status == MB_STATUS_OK || !ctx->err)
    return status;
  char msg[MB_ERROR_MESSAGE_SIZE];
  snprintf(msg, sizeof msg, "%s", ctx->err->message);
  return mb__op_error(ctx, status, "%s", msg);
}

void *mb__op_scratch(mb_op_ctx *ctx, int slot, size_t bytes) {
  MB_ASSERT(slot >= 0 && slot < MB_OP_SCRATCH_SLOTS);
  if (ctx->scratch_size[slot] >= bytes && ctx->scratch[slot])
    return ctx->scratch[slot];
  mb__aligned_free(ctx->scratch[slot]);
  ctx->scratch[slot] = mb__aligned_alloc(bytes);
  ctx->scratch_size[slot] = ctx->scratch[slot] ? bytes : 0;
  if (!ctx->scratch[slot])
    mb__op_error(ctx, MB_STATUS_OUT_OF_MEMORY,
                 "cannot allocate %zu bytes of scratch memory", bytes);
  return ctx->scratch[slot];
}

mb_status mb__op_check_arity(mb_op_ctx *ctx, int min, int max) {
  if (ctx->n_inputs < min)
    return mb__op_error(ctx, MB_STATUS_PARSE,
                        "needs at least %d inputs, has %d", min, ctx->n_inputs);
  if (max >= 0 && ctx->n_inputs > max)
    return mb__op_error(ctx, MB_STATUS_PARSE, "takes at most %d inputs, has %d",
                        max, ctx->n_inputs);
  for (int i = 0; i < min; i++)
    if (!ctx->inputs[i])
      return mb__op_error(ctx, MB_STATUS_PARSE, "required input %d is missing",
                          i);
  return MB_STATUS_OK;
}

mb_status mb__op_axis(mb_op_ctx *ctx, int64_t axis, int rank, const char *what,
                      int *axis_out) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= (rank > 0 ? rank : 1))
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "%s %lld is out of range for a rank-%d input", what,
                        (long long)axis, rank);
  *axis_out = (int)a;
  return MB_STATUS_OK;
}

mb_status mb__op_read_ints(mb_op_ctx *ctx, const mb_tensor *t,
                           int64_t *values_out, int64_t max_count) {
  if (t->dtype != MB_DTYPE_INT64 && t->dtype != MB_DTYPE_INT32)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "expected an int32/int64 tensor, got %s",
                        mb_dtype_name(t->dtype));
  if (t->numel > max_count)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "integer tensor has %lld values, at most %lld allowed",
                        (long long)t->numel, (long long)max_count);
  if (t->numel > 0 && !t->data)
    return mb__op_error(ctx, MB_STATUS_DYNAMIC, "integer tensor has no data");
  for (int64_t i = 0; i < t->numel; i++)
    values_out[i] = t->dtype == MB_DTYPE_INT64 ? ((const int64_t *)t->data)[i]
                                               : ((const int32_t *)t->data)[i];
  return MB_STATUS_OK;
}

mb_status mb__op_broadcast_shape(mb_op_ctx *ctx, int n,
                                 const mb_tensor *const *tensors, int *rank_out,
                                 int64_t *dims_out) {
  int rank = 0;
  int64_t dims[MB_MAX_RANK];
  for (int i = 0; i < n; i++)
    if (tensors[i] && tensors[i]->rank > rank)
      rank = tensors[i]->rank;
  for (int d = 0; d < rank; d++)
    dims[d] = 1;
  for (int i = 0; i < n; i++) {
    const mb_tensor *t = tensors[i];
    if (!t)
      continue;
    int off = rank - t->rank;
    for (int d = 0; d < t->rank; d++) {
      int64_t have = dims[off + d], dim = t->dims[d];
      if (dim == have || dim == 1)
        continue;
      if (have == 1) {
        dims[off + d] = dim;
        continue;
      }
      char a[96], b[96];
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "shapes %s and %s cannot be broadcast",
                          mb__shape_str(rank, dims, a, sizeof a),
                          mb__shape_str(t->rank, t->dims, b, sizeof b));
    }
  }
  *rank_out = rank;
  for (int d = 0; d < rank; d++)
    dims_out[d] = dims[d];
  return MB_STATUS_OK;
}

void mb__contiguous_strides(int rank, const int64_t *dims,
                            int64_t *strides_out) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    strides_out[d] = s;
    s *= dims[d];
  }
}

void mb__broadcast_strides(const mb_tensor *t, int out_rank,
                           const int64_t *out_dims, int64_t *strides_out) {
  int64_t own[MB_MAX_RANK];
  int off = out_rank - t->rank;
  mb__contiguous_strides(t->rank, t->dims, own);
  for (int d = 0; d < out_rank; d++) {
    int td = d - off;
    strides_out[d] =
        td < 0 || (t->dims[td] == 1 && out_dims[d] != 1) ? 0 : own[td];
  }
}

bool mb__dtype_is_float(mb_dtype dt) {
  return dt == MB_DTYPE_FLOAT || dt == MB_DTYPE_FLOAT16 ||
         dt == MB_DTYPE_BFLOAT16 || dt == MB_DTYPE_DOUBLE;
}

bool mb__dtype_is_int(mb_dtype dt) {
  switch (dt) {
  case MB_DTYPE_INT8:
  case MB_DTYPE_UINT8:
  case MB_DTYPE_INT16:
  case MB_DTYPE_UINT16:
  case MB_DTYPE_INT32:
  case MB_DTYPE_UINT32:
  case MB_DTYPE_INT64:
  case MB_DTYPE_UINT64:
    return true;
  default:
    return false;
  }
}

const float *mb__op_as_f32(mb_op_ctx *ctx, const mb_tensor *t, int slot) {
  if (t->dtype == MB_DTYPE_FLOAT)
    return t->data;
  float *buf = mb__op_scratch(ctx, slot, sizeof(float) * (size_t)t->numel);
  if (!buf)
    return NULL;
  if (t->dtype == MB_DTYPE_FLOAT16) {
    const uint16_t *h = t->data;
    for (int64_t i = 0; i < t->numel; i++)
      buf[i] = mb__f16_to_f32(h[i]);
  } else if (t->dtype == MB_DTYPE_BFLOAT16) {
    const uint16_t *h = t->data;
    for (int64_t i = 0; i < t->numel; i++)
      buf[i] = mb__bf16_to_f32(h[i]);
  } else {
    for (int64_t i = 0; i < t->numel; i++)
      buf[i] = (float)mb__tensor_get_f64(t, i);
  }
  return buf;
}

float *mb__op_f32_dest(mb_op_ctx *ctx, mb_tensor *out, int slot) {
  if (out->dtype == MB_DTYPE_FLOAT)
    return out->data;
  return mb__op_scratch(ctx, slot, sizeof(float) * (size_t)out->numel);
}

void mb__op_store_f32(mb_tensor *out, const float *src) {
  if (out->dtype == MB_DTYPE_FLOAT) {
    if (src != out->data)
      memcpy(out->data, src, sizeof(float) * (size_t)out->numel);
    return;
  }
  if (out->dtype == MB_DTYPE_FLOAT16) {
    uint16_t *h = out->data;
    for (int64_t i = 0; i < out->numel; i++)
      h[i] = mb__f32_to_f16(src[i]);
    return;
  }
  if (out->dtype == MB_DTYPE_BFLOAT16) {
    uint16_t *h = out->data;
    for (int64_t i = 0; i < out->numel; i++)
      h[i] = mb__f32_to_bf16(src[i]);
    return;
  }
  for (int64_t i = 0; i < out->numel; i++)
    mb__tensor_set_f64(out, i, src[i]);
}

mb_status mb__op_check_zero_point(mb_op_ctx *ctx, const mb_tensor *zp,
                                  mb_dtype dtype, int64_t count,
                                  const char *what) {
  if (!zp)
    return MB_STATUS_OK;
  if (zp->dtype != dtype)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "%s has type %s, expected %s like its tensor", what,
                        mb_dtype_name(zp->dtype), mb_dtype_name(dtype));
  if (zp->numel != 1 && (count <= 0 || zp->numel != count)) {
    if (count > 0)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "%s has %lld values, expected 1 or %lld", what,
                          (long long)zp->numel, (long long)count);
    return mb__op_error(ctx, MB_STATUS_SHAPE, "%s has %lld values, expected 1",
                        what, (long long)zp->numel);
  }
  return MB_STATUS_OK;
}

mb_status mb__op_attr_ints(mb_op_ctx *ctx, const char *name, int count,
                           int64_t def, int64_t min_value, int64_t *out) {
  const int64_t *v;
  int64_t n = mb__node_attr_ints(ctx->node, name, &v);
  if (n < 0) {
    for (int i = 0; i < count; i++)
      out[i] = def;
    return MB_STATUS_OK;
  }
  if (n != count)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "%s has %lld entries, expected %d", name, (long long)n,
                        count);
  for (int i = 0; i < count; i++) {
    if (v[i] < min_value || v[i] > MB_OP_ATTR_MAX)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "%s[%d] = %lld is outside [%lld, %lld]", name, i,
                          (long long)v[i], (long long)min_value,
                          (long long)MB_OP_ATTR_MAX);
    out[i] = v[i];
  }
  return MB_STATUS_OK;
}

/* ---- values of any kind ---- */

mb__sequence *mb__op_output_seq(mb_op_ctx *ctx, int j) {
  if (!ctx->out_seqs || j >= ctx->n_outputs || !ctx->out_seqs[j]) {
    mb__op_error(ctx, MB_STATUS_INTERNAL,
                 "output %d cannot hold a sequence here (no value records)", j);
    return NULL;
  }
  return ctx->out_seqs[j];
}

void mb__op_output_is_tensor(mb_op_ctx *ctx, int j) {
  if (ctx->out_seqs && j < ctx->n_outputs && ctx->out_seqs[j] &&
      ctx->out_seqs[j]->kind != MB__KIND_TENSOR)
    mb__sequence_free(ctx->out_seqs[j]);
}

mb_status mb__op_copy_tensor(mb_op_ctx *ctx, mb_tensor *dst,
                             const mb_tensor *src) {
  if (dst == src)
    return MB_STATUS_OK;
  mb_status status =
      mb__tensor_reset(dst, src->dtype, src->rank, src->dims, ctx->err);
  if (status == MB_STATUS_OK && src->nbytes)
    memmove(dst->data, src->data, src->nbytes);
  return status;
}

mb_status mb__op_set_output_value(mb_op_ctx *ctx, int j,
                                  const mb_op_value *src) {
  mb__kind kind = src->seq ? src->seq->kind : MB__KIND_TENSOR;
  mb_tensor *out = mb__op_output(ctx, j);
  if (!out)
    return MB_STATUS_OK;
  if (kind == MB__KIND_TENSOR) {
    mb__op_output_is_tensor(ctx, j);
    return mb__op_copy_tensor(ctx, out, src->tensor);
  }
  mb__sequence *seq = mb__op_output_seq(ctx, j);
  if (!seq)
    return MB_STATUS_INTERNAL;
  return mb__op_label_error(ctx, mb__sequence_copy(seq, src->seq, ctx->err));
}
