/* Shape-manipulating operators: Reshape, Flatten, Shape, Size, Squeeze,
 * Unsqueeze, Expand, ConstantOfShape, Constant, Range, Transpose, EyeLike,
 * Trilu.
 *
 * Everything here moves bytes, so kernels are type-generic by element size.
 * This file also owns the strided-copy and transpose helpers that the
 * data-movement kernels of layout.c build on (mb__copy_strided,
 * mb__transpose). */
#include "ops/op.h"

#include <math.h>
#include <stdlib.h>

/* Strided views may have twice MB_MAX_RANK dims: Tile views its output as
 * (repeat, dim) pairs. */
#define STRIDED_MAX_RANK (2 * MB_MAX_RANK)

/* ------------------------------------------------------------------------ */
/* Strided copy                                                             */
/* ------------------------------------------------------------------------ */

/* Drops size-1 dims and merges neighbours that are contiguous with each
 * other, so that most real views collapse to one to three dims with a long
 * inner run. Returns the new rank; 0 means a single element. */
static int simplify_view(int rank, const int64_t *dims, const int64_t *strides,
                         int64_t *dims_out, int64_t *strides_out) {
  int r = 0;
  for (int i = 0; i < rank; i++) {
    if (dims[i] == 1)
      continue;
    if (r > 0 && strides_out[r - 1] == strides[i] * dims[i]) {
      dims_out[r - 1] *= dims[i];
      strides_out[r - 1] = strides[i];
      continue;
    }
    dims_out[r] = dims[i];
    strides_out[r] = strides[i];
    r++;
  }
  return r;
}

/* One output row: n elements read `stride` elements apart. */
static void copy_row(char *dst, const char *src, int64_t n, int64_t stride,
                     size_t esize) {
  if (stride == 1) {
    memcpy(dst, src, (size_t)n * esize);
    return;
  }
#define COPY_ROW_AS(type)                                                      \
  do {                                                                         \
    type *d_ = (type *)(void *)dst;                                            \
    const type *s_ = (const type *)(const void *)src;                          \
    for (int64_t i_ = 0; i_ < n; i_++)                                         \
      d_[i_] = s_[i_ * stride];                                                \
  } while (0)
  /* Buffers are 64-byte aligned and offsets are multiples of esize, so the
   * typed accesses below are aligned. */
  switch (esize) {
  case 1:
    COPY_ROW_AS(uint8_t);
    return;
  case 2:
    COPY_ROW_AS(uint16_t);
    return;
  case 4:
    COPY_ROW_AS(uint32_t);
    return;
  case 8:
    COPY_ROW_AS(uint64_t);
    return;
  default:
    for (int64_t i = 0; i < n; i++)
      memcpy(dst + i * esize, src + i * stride * (int64_t)esize, esize);
    return;
  }
#undef COPY_ROW_AS
}

/* Copies the view of `src` with shape `dims` and element strides `strides`
 * (which may be 0 for broadcast dims or negative for reversed ones) into the
 * contiguous buffer `dst`. rank <= 2 * MB_MAX_RANK. */
void mb__copy_strided(void *dst, const void *src, size_t esize, int rank,
                      const int64_t *dims, const int64_t *strides) {
  int64_t d[STRIDED_MAX_RANK], s[STRIDED_MAX_RANK], idx[STRIDED_MAX_RANK];
  for (int i = 0; i < rank; i++)
    if (dims[i] == 0)
      return;
  int r = simplify_view(rank, dims, strides, d, s);
  if (r == 0) {
    memcpy(dst, src, esize);
    return;
  }
  int64_t inner = d[r - 1], outer = 1;
  for (int i = 0; i < r - 1; i++) {
    outer *= d[i];
    idx[i] = 0;
  }
  /* Byte offsets are tracked as integers so that no out-of-range pointer is
   * ever formed while stepping backwards through a reversed view. */
  int64_t off = 0, es = (int64_t)esize;
  char *out = dst;
  const char *in = src;
  for (int64_t o = 0; o < outer; o++) {
    copy_row(out, in + off, inner, s[r - 1], esize);
    out += inner * es;
    for (int k = r - 2; k >= 0; k--) {
      off += s[k] * es;
      if (++idx[k] < d[k])
        break;
      off -= s[k] * d[k] * es;
      idx[k] = 0;
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Transpose                                                                */
/* ------------------------------------------------------------------------ */

/* out[i * out_stride + j] = in[i + j * in_stride] for a rows x cols block.
 * 8x8 tiles inside 64x64 blocks: tiles of 8 keep the strided side within
 * the L1 associativity even for power-of-two strides (which made 32x32
 * tiles ten times slower on a 1024x4096 matrix). */
static void transpose_block(char *dst, const char *src, int64_t rows,
                            int64_t cols, int64_t in_stride, int64_t out_stride,
                            size_t esize) {
  enum { BLOCK = 64, TILE = 8 };
#define TRANSPOSE_AS(type)                                                     \
  do {                                                                         \
    type *d_ = (type *)(void *)dst;                                            \
    const type *s_ = (const type *)(const void *)src;                          \
    for (int64_t bi = 0; bi < rows; bi += BLOCK)                               \
      for (int64_t bj = 0; bj < cols; bj += BLOCK) {                           \
        int64_t bi1 = MB_MIN(bi + BLOCK, rows),                                \
                bj1 = MB_MIN(bj + BLOCK, cols);                                \
        for (int64_t i0 = bi; i0 < bi1; i0 += TILE)                            \
          for (int64_t j0 = bj; j0 < bj1; j0 += TILE) {                        \
            int64_t i1 = MB_MIN(i0 + TILE, bi1), j1 = MB_MIN(j0 + TILE, bj1);  \
            for (int64_t j = j0; j < j1; j++)                                  \
              for (int64_t i = i0; i < i1; i++)                                \
                d_[i * out_stride + j] = s_[i + j * in_stride];                \
          }                                                                    \
      }                                                                        \
  } while (0)
  switch (esize) {
  case 1:
    TRANSPOSE_AS(uint8_t);
    return;
  case 2:
    TRANSPOSE_AS(uint16_t);
    return;
  case 4:
    TRANSPOSE_AS(uint32_t);
    return;
  case 8:
    TRANSPOSE_AS(uint64_t);
    return;
  default:
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++)
        memcpy(dst + (i * out_stride + j) * (int64_t)esize,
               src + (i + j * in_stride) * (int64_t)esize, esize);
    return;
  }
#undef TRANSPOSE_AS
}

/* dst = src transposed: output dim i is input dim perm[i]. */
void mb__transpose(void *dst, const void *src, size_t esize, int rank,
                   const int64_t *dims, const int *perm) {
  int64_t in_strides[MB_MAX_RANK], vd[MB_MAX_RANK], vs[MB_MAX_RANK];
  int64_t d[MB_MAX_RANK], s[MB_MAX_RANK], os[MB_MAX_RANK];
  mb__contiguous_strides(rank, dims, in_strides);
  for (int i = 0; i < rank; i++) {
    vd[i] = dims[perm[i]];
    vs[i] = in_strides[perm[i]];
    if (vd[i] == 0)
      return;
  }
  /* After merging, most real permutations (NCHW<->NHWC, 2-D, attention head
   * swaps) have two or three dims. When the output keeps the input's
   * contiguous dim last, whole rows are copied. Otherwise the output dim q
   * that reads the input contiguously and the output's last dim form
   * matrix blocks transposed in tiles, looping over the remaining dims. */
  int r = simplify_view(rank, vd, vs, d, s);
  int q = -1;
  for (int i = 0; i < r - 1; i++)
    if (s[i] == 1)
      q = i;
  if (r < 2 || s[r - 1] == 1 || q < 0) {
    mb__copy_strided(dst, src, esize, r, d, s);
    return;
  }
  mb__contiguous_strides(r, d, os);
  int64_t outer = 1, idx[MB_MAX_RANK] = {0};
  for (int i = 0; i < r - 1; i++)
    if (i != q)
      outer *= d[i];
  int64_t in_off = 0, out_off = 0, es = (int64_t)esize;
  for (int64_t o = 0; o < outer; o++) {
    transpose_block((char *)dst + out_off * es, (const char *)src + in_off * es,
                    d[q], d[r - 1], s[r - 1], os[q], esize);
    for (int k = r - 2; k >= 0; k--) {
      if (k == q)
        continue;
      in_off += s[k];
      out_off += os[k];
      if (++idx[k] < d[k])
        break;
      in_off -= s[k] * d[k];
      out_off -= os[k] * d[k];
      idx[k] = 0;
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Small shared pieces                                                      */
/* ------------------------------------------------------------------------ */

/* Element size, failing for types without one (strings). */
static mb_status element_size(mb_op_ctx *ctx, const mb_tensor *t,
                              size_t *size_out) {
  size_t size = mb_dtype_size(t->dtype);
  if (size == 0)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "element type %s is not supported",
                        mb_dtype_name(t->dtype));
  *size_out = size;
  return MB_STATUS_OK;
}

/* run() of every op whose output is its first input with another shape. */
static mb_status copy_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0];
  mb_tensor *y = ctx->outputs[0];
  if (y->data != x->data && x->nbytes > 0)
    memcpy(y->data, x->data, x->nbytes);
  return MB_STATUS_OK;
}

/* Reads a 1-D integer "list" input (shape, axes, ...) of at most max
 * entries. Call MB_OP_NEED_DATA first. */
static mb_status read_int_list(mb_op_ctx *ctx, int index, const char *what,
                               int64_t max, int64_t *values, int *count_out) {
  const mb_tensor *t = ctx->inputs[index];
  if (t->rank > 1)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "%s must be 1-D, got rank %d",
                        what, t->rank);
  if (t->numel > max)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "%s has %lld entries, at most %lld are supported", what,
                        (long long)t->numel, (long long)max);
  mb_status status = mb__op_read_ints(ctx, t, values, max);
  if (status != MB_STATUS_OK)
    return status;
  *count_out = (int)t->numel;
  return MB_STATUS_OK;
}

/* Reads a scalar (or one-element) integer input. */
static mb_status read_int_scalar(mb_op_ctx *ctx, int index, const char *what,
                                 int64_t *value_out) {
  const mb_tensor *t = ctx->inputs[index];
  if (t->numel != 1)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "%s must have one element, got %lld", what,
                        (long long)t->numel);
  return mb__op_read_ints(ctx, t, value_out, 1);
}

/* Writes the value `v` converted to `dtype` into `bytes` (one element). */
static void encode_scalar(mb_dtype dtype, double v, void *bytes) {
  mb_tensor t;
  memset(&t, 0, sizeof(t));
  t.dtype = dtype;
  t.numel = 1;
  t.nbytes = mb_dtype_size(dtype);
  t.data = bytes;
  mb__tensor_set_f64(&t, 0, v);
}

/* Fills n elements of dst with the element at `value`. */
static void fill_pattern(void *dst, const void *value, size_t esize,
                         int64_t n) {
  bool zero = true;
  for (size_t i = 0; i < esize; i++)
    if (((const uint8_t *)value)[i] != 0)
      zero = false;
  if (zero) {
    memset(dst, 0, (size_t)n * esize);
    return;
  }
  if (n == 0)
    return;
  /* Doubling copies: log2(n) memcpy calls. */
  memcpy(dst, value, esize);
  int64_t done = 1;
  while (done < n) {
    int64_t chunk = MB_MIN(done, n - done);
    memcpy((char *)dst + done * esize, dst, (size_t)chunk * esize);
    done += chunk;
  }
}

/* Validates an axes list against rank, normalising negative entries;
 * duplicates are an error. */
static mb_status normalize_axes(mb_op_ctx *ctx, int64_t *axes, int n, int rank,
                                const char *what) {
  bool seen[MB_MAX_RANK] = {false};
  for (int i = 0; i < n; i++) {
    int a;
    mb_status status = mb__op_axis(ctx, axes[i], rank, what, &a);
    if (status != MB_STATUS_OK)
      return status;
    if (seen[a])
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "%s lists axis %lld twice", what, (long long)axes[i]);
    seen[a] = true;
    axes[i] = a;
  }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Reshape                                                                  */
/* ------------------------------------------------------------------------ */

static mb_status reshape_infer(mb_op_ctx *ctx) {
  int64_t shape[MB_MAX_RANK], dims[MB_MAX_RANK];
  int n = 0;
  mb_status status;
  char b1[96], b2[96];
  if (ctx->opset < 5) {
    status = mb__op_check_arity(ctx, 1, 1);
    if (status != MB_STATUS_OK)
      return status;
    const int64_t *attr;
    int64_t count = mb__node_attr_ints(ctx->node, "shape", &attr);
    if (count < 0)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "missing attribute 'shape'");
    if (count > MB_MAX_RANK)
      return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                          "target rank %lld exceeds %d", (long long)count,
                          MB_MAX_RANK);
    n = (int)count;
    memcpy(shape, attr, (size_t)n * sizeof(int64_t));
  } else {
    status = mb__op_check_arity(ctx, 2, 2);
    if (status != MB_STATUS_OK)
      return status;
    MB_OP_NEED_DATA(ctx, 1);
    status = read_int_list(ctx, 1, "shape", MB_MAX_RANK, shape, &n);
    if (status != MB_STATUS_OK)
      return status;
  }
  const mb_tensor *x = ctx->inputs[0];
  bool allow_zero =
      ctx->opset >= 14 && mb__node_attr_int(ctx->node, "allowzero", 0) != 0;
  int infer_at = -1;
  int64_t known = 1;
  for (int i = 0; i < n; i++) {
    int64_t v = shape[i];
    if (v == 0 && !allow_zero) {
      if (i >= x->rank)
        return mb__op_error(ctx, MB_STATUS_SHAPE,
                            "shape[%d] is 0 (copy the input dim) but the "
                            "input %s has rank %d",
                            i, mb__shape_str(x->rank, x->dims, b1, sizeof(b1)),
                            x->rank);
      v = x->dims[i];
    } else if (v == -1) {
      if (infer_at >= 0)
        return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                            "shape has more than one -1");
      infer_at = i;
      dims[i] = -1;
      continue;
    } else if (v < 0) {
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "shape[%d] = %lld is invalid", i, (long long)v);
    }
    dims[i] = v;
    if (!mb__mul_i64(known, v, &known))
      return mb__op_error(ctx, MB_STATUS_OVERFLOW, "shape overflows");
  }
  if (infer_at >= 0) {
    if (known == 0 || x->numel % known != 0)
      return mb__op_error(
          ctx, MB_STATUS_SHAPE,
          "cannot reshape %s (%lld elements) to %s: the -1 dim cannot be "
          "inferred",
          mb__shape_str(x->rank, x->dims, b1, sizeof(b1)), (long long)x->numel,
          mb__shape_str(n, shape, b2, sizeof(b2)));
    dims[infer_at] = x->numel / known;
    known = x->numel;
  }
  if (known != x->numel)
    return mb__op_error(
        ctx, MB_STATUS_SHAPE,
        "cannot reshape %s (%lld elements) to %s (%lld "
        "elements)",
        mb__shape_str(x->rank, x->dims, b1, sizeof(b1)), (long long)x->numel,
        mb__shape_str(n, dims, b2, sizeof(b2)), (long long)known);
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, n, dims, ctx->err);
}

/* ------------------------------------------------------------------------ */
/* Flatten                                                                  */
/* ------------------------------------------------------------------------ */

static mb_status flatten_infer(mb_op_ctx *ctx) {
  mb_status status = mb__op_check_arity(ctx, 1, 1);
  if (status != MB_STATUS_OK)
    return status;
  const mb_tensor *x = ctx->inputs[0];
  int64_t axis = mb__node_attr_int(ctx->node, "axis", 1);
  if (axis < 0 && ctx->opset >= 11)
    axis += x->rank;
  if (axis < 0 || axis > x->rank)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "axis %lld is out of range for rank %d",
                        (long long)mb__node_attr_int(ctx->node, "axis", 1),
                        x->rank);
  int64_t dims[2] = {1, 1};
  for (int i = 0; i < x->rank; i++)
    dims[i < axis ? 0 : 1] *= x->dims[i];
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, 2, dims, ctx->err);
}

/* ------------------------------------------------------------------------ */
/* Shape, Size                                                              */
/* ------------------------------------------------------------------------ */

static void shape_range(mb_op_ctx *ctx, int rank, int64_t *start_out,
                        int64_t *end_out) {
  int64_t start = 0, end = rank;
  if (ctx->opset >= 15) {
    start = mb__node_attr_int(ctx->node, "start", 0);
    end = mb__node_attr_int(ctx->node, "end", rank);
  }
  /* Out-of-range values clamp, per the spec. */
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = MB_MIN(MB_MAX(start, 0), rank);
  end = MB_MIN(MB_MAX(end, 0), rank);
  *start_out = start;
  *end_out = MB_MAX(end, start);
}

static mb_status shape_infer(mb_op_ctx *ctx) {
  mb_status status = mb__op_check_arity(ctx, 1, 1);
  if (status != MB_STATUS_OK)
    return status;
  int64_t start, end;
  shape_range(ctx, ctx->inputs[0]->rank, &start, &end);
  int64_t n = end - start;
  return mb__tensor_set_shape(ctx->outputs[0], MB_DTYPE_INT64, 1, &n, ctx->err);
}

static mb_status shape_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0];
  int64_t start, end;
  shape_range(ctx, x->rank, &start, &end);
  int64_t *y = ctx->outputs[0]->data;
  for (int64_t i = start; i < end; i++)
    y[i - start] = x->dims[i];
  return MB_STATUS_OK;
}

static mb_status size_infer(mb_op_ctx *ctx) {
  mb_status status = mb__op_check_arity(ctx, 1, 1);
  if (status != MB_STATUS_OK)
    return status;
  return mb__tensor_set_shape(ctx->outputs[0], MB_DTYPE_INT64, 0, NULL,
                              ctx->err);
}

static mb_status size_run(mb_op_ctx *ctx) {
  *(int64_t *)ctx->outputs[0]->data = ctx->inputs[0]->numel;
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Squeeze, Unsqueeze                                                       */
/* ------------------------------------------------------------------------ */

/* Axes from the attribute (opset < 13) or from input 1 (opset >= 13).
 * *count_out = -1 when absent. */
static mb_status read_axes(mb_op_ctx *ctx, int64_t *axes, int max,
                           int *count_out) {
  *count_out = -1;
  if (ctx->opset < 13) {
    const int64_t *attr;
    int64_t n = mb__node_attr_ints(ctx->node, "axes", &attr);
    if (n < 0)
      return MB_STATUS_OK;
    if (n > max)
      return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                          "axes has %lld entries, at most %d are supported",
                          (long long)n, max);
    memcpy(axes, attr, (size_t)n * sizeof(int64_t));
    *count_out = (int)n;
    return MB_STATUS_OK;
  }
  if (mb__op_input(ctx, 1) == NULL)
    return MB_STATUS_OK;
  return read_int_list(ctx, 1, "axes", max, axes, count_out);
}

static mb_status squeeze_infer(mb_op_ctx *ctx) {
  mb_status status = mb__op_check_arity(ctx, 1, ctx->opset >= 13 ? 2 : 1);
  if (status != MB_STATUS_OK)
    return status;
  MB_OP_NEED_DATA(ctx, 1);
  const mb_tensor *x = ctx->inputs[0];
  int64_t axes[MB_MAX_RANK];
  int n = 0;
  status = read_axes(ctx, axes, MB_MAX_RANK, &n);
  if (status != MB_STATUS_OK)
    return status;
  bool drop[MB_MAX_RANK] = {false};
  if (n < 0) {
    for (int i = 0; i < x->rank; i++)
      drop[i] = x->dims[i] == 1;
  } else {
    status = normalize_axes(ctx, axes, n, x->rank, "axes");
    if (status != MB_STATUS_OK)
      return status;
    for (int i = 0; i < n; i++) {
      if (x->dims[axes[i]] != 1)
        return mb__op_error(ctx, MB_STATUS_SHAPE,
                            "cannot squeeze axis %lld of size %lld",
                            (long long)axes[i], (long long)x->dims[axes[i]]);
      drop[axes[i]] = true;
    }
  }
  int64_t dims[MB_MAX_RANK];
  int r = 0;
  for (int i = 0; i < x->rank; i++)
    if (!drop[i])
      dims[r++] = x->dims[i];
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, r, dims, ctx->err);
}

static mb_status unsqueeze_infer(mb_op_ctx *ctx) {
  mb_status status = mb__op_check_arity(ctx, ctx->opset >= 13 ? 2 : 1,
                                        ctx->opset >= 13 ? 2 : 1);
  if (status != MB_STATUS_OK)
    return status;
  MB_OP_NEED_DATA(ctx, 1);
  const mb_tensor *x = ctx->inputs[0];
  int64_t axes[MB_MAX_RANK];
  int n = 0;
  status = read_axes(ctx, axes, MB_MAX_RANK, &n);
  if (status != MB_STATUS_OK)
    return status;
  if (n < 0)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT, "axes is required");
  int out_rank = x->rank + n;
  if (out_rank > MB_MAX_RANK)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED, "output rank %d exceeds %d",
                        out_rank, MB_MAX_RANK);
  status = normalize_axes(ctx, axes, n, out_rank, "axes");
  if (status != MB_STATUS_OK)
    return status;
  bool inserted[MB_MAX_RANK] = {false};
  for (int i = 0; i < n; i++)
    inserted[axes[i]] = true;
  int64_t dims[MB_MAX_RANK];
  for (int i = 0, j = 0; i < out_rank; i++)
    dims[i] = inserted[i] ? 1 : x->dims[j++];
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, out_rank, dims,
                              ctx->err);
}

/* ------------------------------------------------------------------------ */
/* Expand                                                                   */
/* ------------------------------------------------------------------------ */

static mb_status expand_infer(mb_op_ctx *ctx) {
  mb_status status = mb__op_check_arity(ctx, 2, 2);
  if (status != MB_STATUS_OK)
    return status;
  MB_OP_NEED_DATA(ctx, 1);
  const mb_tensor *x = ctx->inputs[0];
  int64_t shape[MB_MAX_RANK], dims[MB_MAX_RANK];
  int n = 0;
  status = read_int_list(ctx, 1, "shape", MB_MAX_RANK, shape, &n);
  if (status != MB_STATUS_OK)
    return status;
  int r = MB_MAX(n, x->rank);
  for (int i = 0; i < r; i++) {
    int xi = i - (r - x->rank), si = i - (r - n);
    int64_t a = xi >= 0 ? x->dims[xi] : 1, b = si >= 0 ? shape[si] : 1;
    if (b < 0)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "shape[%d] = %lld is negative", si, (long long)b);
    if (a != b && a != 1 && b != 1) {
      char b1[96], b2[96];
      return mb__op_error(ctx, MB_STATUS_SHAPE, "cannot expand %s to %s",
                          mb__shape_str(x->rank, x->dims, b1, sizeof(b1)),
                          mb__shape_str(n, shape, b2, sizeof(b2)));
    }
    dims[i] = a == 1 ? b : a;
  }
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, r, dims, ctx->err);
}

static mb_status expand_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0];
  mb_tensor *y = ctx->outputs[0];
  if (y->numel == 0)
    return MB_STATUS_OK;
  int64_t strides[MB_MAX_RANK];
  mb__broadcast_strides(x, y->rank, y->dims, strides);
  mb__copy_strided(y->data, x->data, mb_dtype_size(x->dtype), y->rank, y->dims,
                   strides);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* ConstantOfShape                                                          */
/* ------------------------------------------------------------------------ */

static mb_status constant_of_shape_infer(mb_op_ctx *ctx) {
  mb_status status = mb__op_check_arity(ctx, 1, 1);
  if (status != MB_STATUS_OK)
    return status;
  MB_OP_NEED_DATA(ctx, 0);
  int64_t dims[MB_MAX_RANK];
  int n = 0;
  status = read_int_list(ctx, 0, "shape", MB_MAX_RANK, dims, &n);
  if (status != MB_STATUS_OK)
    return status;
  for (int i = 0; i < n; i++)
    if (dims[i] < 0)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "shape[%d] = %lld is negative", i,
                          (long long)dims[i]);
  mb_dtype dtype = MB_DTYPE_FLOAT;
  const mb_attr *value = mb__node_attr(ctx->node, "value");
  if (value != NULL) {
    if (value->type != MB_ATTR_TENSOR || value->t == NULL ||
        value->t->numel != 1)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "'value' must be a one-element tensor");
    dtype = value->t->dtype;
    if (mb_dtype_size(dtype) == 0)
      return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                          "value type %s is not supported",
                          mb_dtype_name(dtype));
  }
  return mb__tensor_set_shape(ctx->outputs[0], dtype, n, dims, ctx->err);
}

static mb_status constant_of_shape_run(mb_op_ctx *ctx) {
  mb_tensor *y = ctx->outputs[0];
  const mb_attr *value = mb__node_attr(ctx->node, "value");
  uint64_t zero[2] = {0, 0};
  const void *pattern = value != NULL ? value->t->data : zero;
  fill_pattern(y->data, pattern, mb_dtype_size(y->dtype), y->numel);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Constant                                                                 */
/* ------------------------------------------------------------------------ */

/* The one value attribute a Constant node carries. */
typedef struct constant_value {
  mb_dtype dtype;
  int rank;
  int64_t dims[MB_MAX_RANK];
  const void *data;
  float f;   /* storage for value_float */
  int64_t i; /* storage for value_int */
} constant_value;

static mb_status constant_find(mb_op_ctx *ctx, constant_value *cv) {
  const mb_node *node = ctx->node;
  memset(cv, 0, sizeof(*cv));
  for (int a = 0; a < node->n_attrs; a++) {
    const mb_attr *attr = &node->attrs[a];
    const char *name = attr->name;
    if (strcmp(name, "value") == 0 && attr->type == MB_ATTR_TENSOR &&
        attr->t != NULL) {
      if (mb_dtype_size(attr->t->dtype) == 0)
        return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                            "value of type %s is not supported",
                            mb_dtype_name(attr->t->dtype));
      cv->dtype = attr->t->dtype;
      cv->rank = attr->t->rank;
      memcpy(cv->dims, attr->t->dims, sizeof(cv->dims));
      cv->data = attr->t->data;
      return MB_STATUS_OK;
    }
    if (strcmp(name, "value_float") == 0) {
      cv->dtype = MB_DTYPE_FLOAT;
      cv->f = attr->f;
      cv->data = &cv->f;
      return MB_STATUS_OK;
    }
    if (strcmp(name, "value_int") == 0) {
      cv->dtype = MB_DTYPE_INT64;
      cv->i = attr->i;
      cv->data = &cv->i;
      return MB_STATUS_OK;
    }
    if (strcmp(name, "value_floats") == 0) {
      cv->dtype = MB_DTYPE_FLOAT;
      cv->rank = 1;
      cv->dims[0] = attr->n;
      cv->data = attr->floats;
      return MB_STATUS_OK;
    }
    if (strcmp(name, "value_ints") == 0) {
      cv->dtype = MB_DTYPE_INT64;
      cv->rank = 1;
      cv->dims[0] = attr->n;
      cv->data = attr->ints;
      return MB_STATUS_OK;
    }
    if (strncmp(name, "value_string", 12) == 0 ||
        strcmp(name, "sparse_value") == 0)
      return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                          "attribute '%s' is not supported", name);
  }
  return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT, "no value attribute");
}

static mb_status constant_infer(mb_op_ctx *ctx) {
  mb_status status = mb__op_check_arity(ctx, 0, 0);
  if (status != MB_STATUS_OK)
    return status;
  constant_value cv;
  status = constant_find(ctx, &cv);
  if (status != MB_STATUS_OK)
    return status;
  return mb__tensor_set_shape(ctx->outputs[0], cv.dtype, cv.rank, cv.dims,
                              ctx->err);
}

static mb_status constant_run(mb_op_ctx *ctx) {
  constant_value cv;
  mb_status status = constant_find(ctx, &cv);
  if (status != MB_STATUS_OK)
    return status;
  mb_tensor *y = ctx->outputs[0];
  if (y->nbytes > 0)
    memcpy(y->data, cv.data, y->nbytes);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Range                                                                    */
/* ------------------------------------------------------------------------ */

static mb_status range_count(mb_op_ctx *ctx, int64_t *count_out) {
  const mb_tensor *t[3] = {ctx->inputs[0], ctx->inputs[1], ctx->inputs[2]};
  static const char *const names[3] = {"start", "limit", "delta"};
  mb_dtype dt = t[0]->dtype;
  for (int i = 0; i < 3; i++) {
    if (t[i]->numel != 1)
      return mb__op_error(ctx, MB_STATUS_SHAPE, "%s must be a scalar",
                          names[i]);
    if (t[i]->dtype != dt)
      return mb__op_error(ctx, MB_STATUS_SHAPE, "%s is %s but start is %s",
                          names[i], mb_dtype_name(t[i]->dtype),
                          mb_dtype_name(dt));
  }
  /* uint64 is not an ONNX Range type, and its values above INT64_MAX
   * would read as negative. */
  if ((!mb__dtype_is_float(dt) && !mb__dtype_is_int(dt)) ||
      dt == MB_DTYPE_UINT64)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED, "type %s not supported",
                        mb_dtype_name(dt));
  if (mb__dtype_is_int(dt)) {
    /* In integers: through doubles, start 2^60 and limit 2^60 + 3 were
     * the same number and the range came out empty. The span and the step
     * are magnitudes in uint64, where neither overflows. */
    int64_t start = mb__tensor_get_i64(t[0], 0);
    int64_t limit = mb__tensor_get_i64(t[1], 0);
    int64_t delta = mb__tensor_get_i64(t[2], 0);
    if (delta == 0)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT, "delta is 0");
    uint64_t span = 0;
    if (delta > 0 && limit > start)
      span = (uint64_t)limit - (uint64_t)start;
    else if (delta < 0 && limit < start)
      span = (uint64_t)start - (uint64_t)limit;
    uint64_t step = delta > 0 ? (uint64_t)delta : 0 - (uint64_t)delta;
    uint64_t count = span / step + (span % step != 0);
    if (count > (UINT64_C(1) << 40))
      return mb__op_error(ctx, MB_STATUS_OVERFLOW, "range has %llu elements",
                          (unsigned long long)count);
    *count_out = (int64_t)count;
    return MB_STATUS_OK;
  }
  double start = mb__tensor_get_f64(t[0], 0);
  double limit = mb__tensor_get_f64(t[1], 0);
  double delta = mb__tensor_get_f64(t[2], 0);
  if (delta == 0 || !isfinite(start) || !isfinite(limit) || !isfinite(delta))
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "start, limit and delta must be finite and delta "
                        "non-zero");
  double count = ceil((limit - start) / delta);
  if (count > (double)(INT64_C(1) << 40))
    return mb__op_error(ctx, MB_STATUS_OVERFLOW, "range has %g elements",
                        count);
  *count_out = count > 0 ? (int64_t)count : 0;
  return MB_STATUS_OK;
}

static mb_status range_infer(mb_op_ctx *ctx) {
  mb_status status = mb__op_check_arity(ctx, 3, 3);
  if (status != MB_STATUS_OK)
    return status;
  MB_OP_NEED_DATA(ctx, 0);
  MB_OP_NEED_DATA(ctx, 1);
  MB_OP_NEED_DATA(ctx, 2);
  int64_t n = 0;
  status = range_count(ctx, &n);
  if (status != MB_STATUS_OK)
    return status;
  return mb__tensor_set_shape(ctx->outputs[0], ctx->inputs[0]->dtype, 1, &n,
                              ctx->err);
}

static mb_status range_run(mb_op_ctx *ctx) {
  const mb_tensor *start = ctx->inputs[0], *delta = ctx->inputs[2];
  mb_tensor *y = ctx->outputs[0];
  if (mb__dtype_is_int(y->dtype)) {
    /* Every value lies between start and limit, but i * delta alone may
     * not fit an int64: step in uint64, which wraps instead. */
    uint64_t s = (uint64_t)mb__tensor_get_i64(start, 0);
    uint64_t d = (uint64_t)mb__tensor_get_i64(delta, 0);
    if (y->dtype == MB_DTYPE_INT64)
      for (int64_t i = 0; i < y->numel; i++)
        ((int64_t *)y->data)[i] = (int64_t)(s + (uint64_t)i * d);
    else
      for (int64_t i = 0; i < y->numel; i++)
        mb__tensor_set_i64(y, i, (int64_t)(s + (uint64_t)i * d));
  } else if (y->dtype == MB_DTYPE_FLOAT) {
    /* In float like the reference's numpy arange on float32 scalars. */
    float s = (float)mb__tensor_get_f64(start, 0);
    float d = (float)mb__tensor_get_f64(delta, 0);
    float *out = y->data;
    for (int64_t i = 0; i < y->numel; i++)
      out[i] = s + (float)i * d;
  } else {
    double s = mb__tensor_get_f64(start, 0), d = mb__tensor_get_f64(delta, 0);
    for (int64_t i = 0; i < y->numel; i++)
      mb__tensor_set_f64(y, i, s + (double)i * d);
  }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Transpose                                                                */
/* ------------------------------------------------------------------------ */

static mb_status transpose_perm(mb_op_ctx *ctx, int rank, int *perm) {
  const int64_t *attr;
  int64_t n = mb__node_attr_ints(ctx->node, "perm", &attr);
  if (n < 0) {
    for (int i = 0; i < rank; i++)
      perm[i] = rank - 1 - i;
    return MB_STATUS_OK;
  }
  if (n != rank)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "perm has %lld entries for a rank-%d input",
                        (long long)n, rank);
  bool seen[MB_MAX_RANK] = {false};
  for (int i = 0; i < rank; i++) {
    int64_t p = attr[i] < 0 ? attr[i] + rank : attr[i];
    if (p < 0 || p >= rank || seen[p])
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "perm is not a permutation of 0..%d", rank - 1);
    seen[p] = true;
    perm[i] = (int)p;
  }
  return MB_STATUS_OK;
}

static mb_status transpose_infer(mb_op_ctx *ctx) {
  mb_status status = mb__op_check_arity(ctx, 1, 1);
  if (status != MB_STATUS_OK)
    return status;
  const mb_tensor *x = ctx->inputs[0];
  size_t esize = 0;
  status = element_size(ctx, x, &esize);
  if (status != MB_STATUS_OK)
    return status;
  int perm[MB_MAX_RANK];
  status = transpose_perm(ctx, x->rank, perm);
  if (status != MB_STATUS_OK)
    return status;
  int64_t dims[MB_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    dims[i] = x->dims[perm[i]];
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, x->rank, dims,
                              ctx->err);
}

static mb_status transpose_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0];
  int perm[MB_MAX_RANK];
  mb_status status = transpose_perm(ctx, x->rank, perm);
  if (status != MB_STATUS_OK)
    return status;
  if (x->numel > 0)
    mb__transpose(ctx->outputs[0]->data, x->data, mb_dtype_size(x->dtype),
                  x->rank, x->dims, perm);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* EyeLike, Trilu                                                           */
/* ------------------------------------------------------------------------ */

static mb_status eyelike_infer(mb_op_ctx *ctx) {
  mb_status status = mb__op_check_arity(ctx, 1, 1);
  if (status != MB_STATUS_OK)
    return status;
  const mb_tensor *x = ctx->inputs[0];
  if (x->rank != 2)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "input must be 2-D, got rank %d",
                        x->rank);
  int64_t dt = mb__node_attr_int(ctx->node, "dtype", x->dtype);
  if (dt <= 0 || dt >= MB_DTYPE_COUNT || mb_dtype_size((mb_dtype)dt) == 0 ||
      (!mb__dtype_is_float((mb_dtype)dt) && !mb__dtype_is_int((mb_dtype)dt) &&
       dt != MB_DTYPE_BOOL))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "output type %lld is not supported", (long long)dt);
  return mb__tensor_set_shape(ctx->outputs[0], (mb_dtype)dt, 2, x->dims,
                              ctx->err);
}

static mb_status eyelike_run(mb_op_ctx *ctx) {
  mb_tensor *y = ctx->outputs[0];
  size_t esize = mb_dtype_size(y->dtype);
  int64_t k = mb__node_attr_int(ctx->node, "k", 0);
  uint8_t one[16];
  encode_scalar(y->dtype, 1.0, one);
  memset(y->data, 0, y->nbytes);
  int64_t rows = y->dims[0], cols = y->dims[1];
  for (int64_t i = 0; i < rows; i++) {
    int64_t j = i + k;
    if (j >= 0 && j < cols)
      memcpy((char *)y->data + (i * cols + j) * (int64_t)esize, one, esize);
  }
  return MB_STATUS_OK;
}

static mb_status trilu_infer(mb_op_ctx *ctx) {
  mb_status status = mb__op_check_arity(ctx, 1, 2);
  if (status != MB_STATUS_OK)
    return status;
  const mb_tensor *x = ctx->inputs[0];
  size_t esize = 0;
  status = element_size(ctx, x, &esize);
  if (status != MB_STATUS_OK)
    return status;
  if (x->rank < 2)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "input must have rank >= 2, got %d", x->rank);
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, x->rank, x->dims,
                              ctx->err);
}

static mb_status trilu_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0];
  mb_tensor *y = ctx->outputs[0];
  int64_t k = 0;
  if (mb__op_input(ctx, 1) != NULL) {
    mb_status status = read_int_scalar(ctx, 1, "k", &k);
    if (status != MB_STATUS_OK)
      return status;
  }
  bool upper = mb__node_attr_int(ctx->node, "upper", 1) != 0;
  if (y->numel == 0)
    return MB_STATUS_OK;
  int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
  int64_t es = (int64_t)mb_dtype_size(x->dtype);
  int64_t mats = x->numel / (rows * cols);
  /* Clamp k so that the column bounds below cannot overflow. */
  k = MB_MAX(MB_MIN(k, cols + 1), -(rows + 1));
  memset(y->data, 0, y->nbytes);
  for (int64_t m = 0; m < mats; m++)
    for (int64_t i = 0; i < rows; i++) {
      /* Kept columns: j >= i + k (upper) or j <= i + k (lower). */
      int64_t lo = upper ? MB_MAX(i + k, 0) : 0;
      int64_t hi = upper ? cols : MB_MIN(i + k + 1, cols);
      if (hi <= lo)
        continue;
      int64_t off = ((m * rows + i) * cols + lo) * es;
      memcpy((char *)y->data + off, (const char *)x->data + off,
             (size_t)((hi - lo) * es));
    }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Table                                                                    */
/* ------------------------------------------------------------------------ */

const mb_op_def mb__ops_shape[] = {
    {"", "Reshape", 1, reshape_infer, copy_run},
    {"", "Reshape", 5, reshape_infer, copy_run},
    {"", "Reshape", 13, reshape_infer, copy_run},
    {"", "Reshape", 14, reshape_infer, copy_run},
    {"", "Flatten", 1, flatten_infer, copy_run},
    {"", "Flatten", 9, flatten_infer, copy_run},
    {"", "Flatten", 11, flatten_infer, copy_run},
    {"", "Flatten", 13, flatten_infer, copy_run},
    {"", "Shape", 1, shape_infer, shape_run, MB_OP_SHAPE_ONLY},
    {"", "Shape", 13, shape_infer, shape_run, MB_OP_SHAPE_ONLY},
    {"", "Shape", 15, shape_infer, shape_run, MB_OP_SHAPE_ONLY},
    {"", "Size", 1, size_infer, size_run, MB_OP_SHAPE_ONLY},
    {"", "Size", 13, size_infer, size_run, MB_OP_SHAPE_ONLY},
    {"", "Squeeze", 1, squeeze_infer, copy_run},
    {"", "Squeeze", 11, squeeze_infer, copy_run},
    {"", "Squeeze", 13, squeeze_infer, copy_run},
    {"", "Unsqueeze", 1, unsqueeze_infer, copy_run},
    {"", "Unsqueeze", 11, unsqueeze_infer, copy_run},
    {"", "Unsqueeze", 13, unsqueeze_infer, copy_run},
    {"", "Expand", 8, expand_infer, expand_run},
    {"", "Expand", 13, expand_infer, expand_run},
    {"", "ConstantOfShape", 9, constant_of_shape_infer, constant_of_shape_run},
    {"", "Constant", 1, constant_infer, constant_run},
    {"", "Constant", 9, constant_infer, constant_run},
    {"", "Constant", 11, constant_infer, constant_run},
    {"", "Constant", 12, constant_infer, constant_run},
    {"", "Constant", 13, constant_infer, constant_run},
    {"", "Range", 11, range_infer, range_run},
    {"", "Transpose", 1, transpose_infer, transpose_run},
    {"", "Transpose", 13, transpose_infer, transpose_run},
    {"", "EyeLike", 9, eyelike_infer, eyelike_run},
    {"", "Trilu", 14, trilu_infer, trilu_run},
};
MB_OP_TABLE_END(shape);
