/* Data-movement operators: Gather, GatherElements, GatherND, Scatter,
 * ScatterElements, ScatterND, Slice, Concat, Split, Tile, Pad, OneHot,
 * NonZero, TopK, CumSum, ReverseSequence, DepthToSpace, SpaceToDepth,
 * Compress, Unique.
 *
 * Kernels copy whole contiguous inner blocks with memcpy wherever the layout
 * allows and fall back to per-element work only where the operator needs it
 * (index lookups, reductions, sorting). */
#include "ops/op.h"

#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------------------------ */
/* Small shared pieces                                                      */
/* ------------------------------------------------------------------------ */

#define CHECK(expr)                                                            \
  do {                                                                         \
    mb_status check_status_ = (expr);                                          \
    if (check_status_ != MB_STATUS_OK)                                         \
      return check_status_;                                                    \
  } while (0)

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

static mb_status need_index_type(mb_op_ctx *ctx, const mb_tensor *t,
                                 const char *what) {
  if (t->dtype != MB_DTYPE_INT64 && t->dtype != MB_DTYPE_INT32)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "%s must be int32 or int64, got %s", what,
                        mb_dtype_name(t->dtype));
  return MB_STATUS_OK;
}

/* Element i of an int32/int64 index tensor. */
static inline int64_t index_at(const mb_tensor *t, int64_t i) {
  return t->dtype == MB_DTYPE_INT64 ? ((const int64_t *)t->data)[i]
                                    : ((const int32_t *)t->data)[i];
}

/* Resolves a possibly negative index against a dim of size n. */
static mb_status resolve_index(mb_op_ctx *ctx, int64_t v, int64_t n,
                               const char *what, int64_t *out) {
  int64_t r = v < 0 ? v + n : v;
  if (r < 0 || r >= n)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "%s %lld is out of range for a dim of size %lld", what,
                        (long long)v, (long long)n);
  *out = r;
  return MB_STATUS_OK;
}

static int64_t prod(const int64_t *dims, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++)
    p *= dims[i];
  return p;
}

/* Reads a 1-D integer list input of at most max entries. */
static mb_status read_int_list(mb_op_ctx *ctx, const mb_tensor *t,
                               const char *what, int64_t max, int64_t *values,
                               int *count_out) {
  if (t->rank > 1)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "%s must be 1-D, got rank %d",
                        what, t->rank);
  if (t->numel > max)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "%s has %lld entries, expected at most %lld", what,
                        (long long)t->numel, (long long)max);
  CHECK(mb__op_read_ints(ctx, t, values, max));
  *count_out = (int)t->numel;
  return MB_STATUS_OK;
}

static mb_status read_int_scalar(mb_op_ctx *ctx, const mb_tensor *t,
                                 const char *what, int64_t *value_out) {
  if (t->numel != 1)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "%s must have one element, got %lld", what,
                        (long long)t->numel);
  return mb__op_read_ints(ctx, t, value_out, 1);
}

/* Writes v converted to dtype into one element at `bytes`. */
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
  if (n <= 0)
    return;
  memcpy(dst, value, esize);
  int64_t done = 1;
  while (done < n) {
    int64_t chunk = MB_MIN(done, n - done);
    memcpy((char *)dst + done * esize, dst, (size_t)chunk * esize);
    done += chunk;
  }
}

/* A stable merge sort of int64 keys (indices into something the comparator
 * knows), used by TopK and Unique. qsort is neither stable nor takes a
 * context pointer portably. */
typedef int (*index_cmp_fn)(const void *user, int64_t a, int64_t b);

static void merge_sort(int64_t *items, int64_t *tmp, int64_t n,
                       index_cmp_fn cmp, const void *user) {
  if (n < 2)
    return;
  if (n <= 16) {
    for (int64_t i = 1; i < n; i++) {
      int64_t v = items[i], j = i;
      while (j > 0 && cmp(user, items[j - 1], v) > 0) {
        items[j] = items[j - 1];
        j--;
      }
      items[j] = v;
    }
    return;
  }
  int64_t half = n / 2;
  merge_sort(items, tmp, half, cmp, user);
  merge_sort(items + half, tmp, n - half, cmp, user);
  int64_t i = 0, j = half, k = 0;
  while (i < half && j < n)
    tmp[k++] = cmp(user, items[j], items[i]) < 0 ? items[j++] : items[i++];
  while (i < half)
    tmp[k++] = items[i++];
  while (j < n)
    tmp[k++] = items[j++];
  memcpy(items, tmp, (size_t)n * sizeof(int64_t));
}

/* Sort keys: element values as double, or as int64 for 64-bit integers
 * whose values a double cannot hold exactly. */
typedef struct sort_keys {
  const double *f;
  const int64_t *i;
  int64_t row; /* elements compared per item (Unique with an axis) */
} sort_keys;

static bool keys_use_int(mb_dtype dt) {
  return dt == MB_DTYPE_INT64 || dt == MB_DTYPE_UINT64;
}

/* NaN sorts above every number, like numpy. */
static int compare_f64(double a, double b) {
  if (a < b)
    return -1;
  if (a > b)
    return 1;
  if (isnan(a) || isnan(b))
    return isnan(a) - isnan(b);
  return 0;
}

static int compare_rows(const void *user, int64_t a, int64_t b) {
  const sort_keys *k = user;
  for (int64_t e = 0; e < k->row; e++) {
    int c;
    if (k->i != NULL) {
      int64_t x = k->i[a * k->row + e], y = k->i[b * k->row + e];
      c = (x > y) - (x < y);
    } else {
      c = compare_f64(k->f[a * k->row + e], k->f[b * k->row + e]);
    }
    if (c != 0)
      return c;
  }
  return 0;
}

static int compare_rows_desc(const void *user, int64_t a, int64_t b) {
  return compare_rows(user, b, a);
}

/* ------------------------------------------------------------------------ */
/* Gather                                                                   */
/* ------------------------------------------------------------------------ */

static mb_status gather_infer(mb_op_ctx *ctx) {
  CHECK(mb__op_check_arity(ctx, 2, 2));
  const mb_tensor *x = ctx->inputs[0], *ind = ctx->inputs[1];
  size_t esize = 0;
  CHECK(element_size(ctx, x, &esize));
  CHECK(need_index_type(ctx, ind, "indices"));
  if (x->rank < 1)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "data must have rank >= 1");
  int axis = 0;
  CHECK(mb__op_axis(ctx, mb__node_attr_int(ctx->node, "axis", 0), x->rank,
                    "axis", &axis));
  int r = x->rank - 1 + ind->rank;
  if (r > MB_MAX_RANK)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED, "output rank %d exceeds %d",
                        r, MB_MAX_RANK);
  int64_t dims[MB_MAX_RANK];
  int n = 0;
  for (int i = 0; i < axis; i++)
    dims[n++] = x->dims[i];
  for (int i = 0; i < ind->rank; i++)
    dims[n++] = ind->dims[i];
  for (int i = axis + 1; i < x->rank; i++)
    dims[n++] = x->dims[i];
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, r, dims, ctx->err);
}

static mb_status gather_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0], *ind = ctx->inputs[1];
  mb_tensor *y = ctx->outputs[0];
  int axis = 0;
  CHECK(mb__op_axis(ctx, mb__node_attr_int(ctx->node, "axis", 0), x->rank,
                    "axis", &axis));
  if (y->numel == 0)
    return MB_STATUS_OK;
  size_t esize = mb_dtype_size(x->dtype);
  int64_t outer = prod(x->dims, 0, axis), n = x->dims[axis];
  size_t block = (size_t)prod(x->dims, axis + 1, x->rank) * esize;
  const char *src = x->data;
  char *dst = y->data;
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t j = 0; j < ind->numel; j++) {
      int64_t idx = 0;
      /* Resolved before any pointer is formed: along an empty axis X has
       * no data (NULL) and every index is out of range (UBSan on a fuzzed
       * Gather; found by fuzz model_run). */
      CHECK(resolve_index(ctx, index_at(ind, j), n, "index", &idx));
      const char *from = src + (size_t)(o * n + idx) * block;
      /* Fixed-size copies of the common embedding/scalar cases inline. */
      switch (block) {
      case 4:
        memcpy(dst, from, 4);
        break;
      case 8:
        memcpy(dst, from, 8);
        break;
      default:
        memcpy(dst, from, block);
      }
      dst += block;
    }
  }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* GatherElements, ScatterElements (and the old Scatter)                     */
/* ------------------------------------------------------------------------ */

static mb_status elements_check(mb_op_ctx *ctx, const mb_tensor *x,
                                const mb_tensor *ind, int *axis_out) {
  size_t esize = 0;
  CHECK(element_size(ctx, x, &esize));
  CHECK(need_index_type(ctx, ind, "indices"));
  if (x->rank < 1 || ind->rank != x->rank)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "data and indices must have the same rank >= 1 "
                        "(got %d and %d)",
                        x->rank, ind->rank);
  CHECK(mb__op_axis(ctx, mb__node_attr_int(ctx->node, "axis", 0), x->rank,
                    "axis", axis_out));
  for (int i = 0; i < x->rank; i++)
    if (i != *axis_out && ind->dims[i] > x->dims[i])
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "indices dim %d (%lld) exceeds data dim (%lld)", i,
                          (long long)ind->dims[i], (long long)x->dims[i]);
  return MB_STATUS_OK;
}

/* Calls back with (index element, data element) offsets for every element
 * of `ind`, where the data offset replaces the axis coordinate with the
 * index value. */
typedef mb_status (*elements_fn)(mb_op_ctx *ctx, int64_t i, int64_t data_off,
                                 void *user);

static mb_status elements_walk(mb_op_ctx *ctx, const mb_tensor *x,
                               const mb_tensor *ind, int axis, elements_fn fn,
                               void *user) {
  int64_t strides[MB_MAX_RANK], coord[MB_MAX_RANK] = {0}, base = 0;
  mb__contiguous_strides(x->rank, x->dims, strides);
  int r = x->rank;
  for (int64_t i = 0; i < ind->numel; i++) {
    int64_t idx = 0;
    CHECK(resolve_index(ctx, index_at(ind, i), x->dims[axis], "index", &idx));
    CHECK(fn(ctx, i, base + idx * strides[axis], user));
    for (int k = r - 1; k >= 0; k--) {
      if (++coord[k] < ind->dims[k]) {
        if (k != axis)
          base += strides[k];
        break;
      }
      if (k != axis)
        base -= strides[k] * (coord[k] - 1);
      coord[k] = 0;
    }
  }
  return MB_STATUS_OK;
}

typedef struct elements_job {
  const char *src;
  char *dst;
  size_t elem_size;
  const mb_tensor *updates;
  mb_tensor *out;
  int reduction;
} elements_job;

static mb_status gather_elements_one(mb_op_ctx *ctx, int64_t i,
                                     int64_t data_off, void *user) {
  elements_job *job = user;
  memcpy(job->dst + i * (int64_t)job->elem_size,
         job->src + data_off * (int64_t)job->elem_size, job->elem_size);
  return MB_STATUS_OK;
}

static mb_status gather_elements_infer(mb_op_ctx *ctx) {
  CHECK(mb__op_check_arity(ctx, 2, 2));
  const mb_tensor *x = ctx->inputs[0], *ind = ctx->inputs[1];
  int axis = 0;
  CHECK(elements_check(ctx, x, ind, &axis));
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, ind->rank, ind->dims,
                              ctx->err);
}

static mb_status gather_elements_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0], *ind = ctx->inputs[1];
  int axis = 0;
  CHECK(elements_check(ctx, x, ind, &axis));
  elements_job job = {
      x->data, ctx->outputs[0]->data, mb_dtype_size(x->dtype), NULL, NULL, 0};
  return elements_walk(ctx, x, ind, axis, gather_elements_one, &job);
}

/* Scatter reductions, by attribute value. */
typedef enum reduction {
  REDUCE_NONE,
  REDUCE_ADD,
  REDUCE_MUL,
  REDUCE_MAX,
  REDUCE_MIN
} reduction;

static const char *const reduction_names[] = {"none", "add", "mul", "max",
                                              "min"};

static mb_status read_reduction(mb_op_ctx *ctx, int *out) {
  const char *s = mb__node_attr_string(ctx->node, "reduction", "none");
  for (size_t i = 0; i < MB_ARRAY_COUNT(reduction_names); i++)
    if (strcmp(s, reduction_names[i]) == 0) {
      *out = (int)i;
      return MB_STATUS_OK;
    }
  return mb__op_error(ctx, MB_STATUS_UNSUPPORTED, "reduction '%s'", s);
}

/* out[oi] = reduce(out[oi], upd[ui]). */
static void reduce_element(mb_tensor *out, int64_t oi, const mb_tensor *upd,
                           int64_t ui, int red) {
  size_t es = mb_dtype_size(out->dtype);
  if (red == REDUCE_NONE) {
    memcpy((char *)out->data + oi * (int64_t)es,
           (const char *)upd->data + ui * (int64_t)es, es);
    return;
  }
  if (out->dtype == MB_DTYPE_INT64 || out->dtype == MB_DTYPE_INT32) {
    int64_t a = mb__tensor_get_i64(out, oi), b = mb__tensor_get_i64(upd, ui);
    int64_t r = red == REDUCE_ADD   ? (int64_t)((uint64_t)a + (uint64_t)b)
                : red == REDUCE_MUL ? (int64_t)((uint64_t)a * (uint64_t)b)
                : red == REDUCE_MAX ? MB_MAX(a, b)
                                    : MB_MIN(a, b);
    if (out->dtype == MB_DTYPE_INT64)
      ((int64_t *)out->data)[oi] = r;
    else
      ((int32_t *)out->data)[oi] = (int32_t)r;
    return;
  }
  double a = mb__tensor_get_f64(out, oi), b = mb__tensor_get_f64(upd, ui);
  double r = red == REDUCE_ADD   ? a + b
             : red == REDUCE_MUL ? a * b
             : red == REDUCE_MAX ? MB_MAX(a, b)
                                 : MB_MIN(a, b);
  if (out->dtype == MB_DTYPE_FLOAT) /* rounds like a float accumulation */
    r = (float)r;
  mb__tensor_set_f64(out, oi, r);
}

static mb_status scatter_reduction_check(mb_op_ctx *ctx, int red, mb_dtype dt) {
  if (red != REDUCE_NONE && !mb__dtype_is_float(dt) && !mb__dtype_is_int(dt))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED, "reduction '%s' on %s data",
                        reduction_names[red], mb_dtype_name(dt));
  return MB_STATUS_OK;
}

static mb_status scatter_elements_one(mb_op_ctx *ctx, int64_t i,
                                      int64_t data_off, void *user) {
  elements_job *job = user;
  reduce_element(job->out, data_off, job->updates, i, job->reduction);
  return MB_STATUS_OK;
}

static mb_status scatter_elements_infer(mb_op_ctx *ctx) {
  CHECK(mb__op_check_arity(ctx, 3, 3));
  const mb_tensor *x = ctx->inputs[0], *ind = ctx->inputs[1],
                  *upd = ctx->inputs[2];
  int axis, red = 0;
  CHECK(elements_check(ctx, x, ind, &axis));
  CHECK(read_reduction(ctx, &red));
  CHECK(scatter_reduction_check(ctx, red, x->dtype));
  if (upd->dtype != x->dtype || upd->rank != ind->rank ||
      memcmp(upd->dims, ind->dims, sizeof(int64_t) * (size_t)ind->rank) != 0)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "updates must match indices in shape and data in "
                        "type");
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, x->rank, x->dims,
                              ctx->err);
}

static mb_status scatter_elements_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0], *ind = ctx->inputs[1];
  mb_tensor *y = ctx->outputs[0];
  int axis, red = 0;
  CHECK(elements_check(ctx, x, ind, &axis));
  CHECK(read_reduction(ctx, &red));
  if (y->data != x->data && x->nbytes > 0)
    memcpy(y->data, x->data, x->nbytes);
  elements_job job = {NULL, NULL, 0, ctx->inputs[2], y, red};
  return elements_walk(ctx, x, ind, axis, scatter_elements_one, &job);
}

/* ------------------------------------------------------------------------ */
/* GatherND, ScatterND                                                      */
/* ------------------------------------------------------------------------ */

static mb_status gather_nd_infer(mb_op_ctx *ctx) {
  CHECK(mb__op_check_arity(ctx, 2, 2));
  const mb_tensor *x = ctx->inputs[0], *ind = ctx->inputs[1];
  size_t esize = 0;
  CHECK(element_size(ctx, x, &esize));
  if (ind->dtype != MB_DTYPE_INT64)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "indices must be int64");
  int64_t b =
      ctx->opset >= 12 ? mb__node_attr_int(ctx->node, "batch_dims", 0) : 0;
  if (x->rank < 1 || ind->rank < 1)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "data and indices must have rank >= 1");
  int64_t k = ind->dims[ind->rank - 1];
  if (b < 0 || b >= MB_MIN(x->rank, ind->rank) || k < 1 || k > x->rank - b)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "invalid batch_dims %lld or index length %lld for "
                        "data rank %d",
                        (long long)b, (long long)k, x->rank);
  for (int i = 0; i < b; i++)
    if (x->dims[i] != ind->dims[i])
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "batch dim %d differs between data and indices", i);
  int64_t dims[MB_MAX_RANK];
  int r = 0;
  for (int i = 0; i < ind->rank - 1; i++)
    dims[r++] = ind->dims[i];
  for (int64_t i = b + k; i < x->rank; i++) {
    if (r >= MB_MAX_RANK)
      return mb__op_error(ctx, MB_STATUS_UNSUPPORTED, "output rank too high");
    dims[r++] = x->dims[i];
  }
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, r, dims, ctx->err);
}

/* The element offset in `x` (within batch element `batch`, of b batch dims)
 * addressed by the k-tuple `tuple`. */
static mb_status nd_offset(mb_op_ctx *ctx, const mb_tensor *x, int b,
                           const int64_t *tuple, int64_t k, int64_t *off_out) {
  int64_t strides[MB_MAX_RANK], off = 0;
  mb__contiguous_strides(x->rank, x->dims, strides);
  for (int64_t j = 0; j < k; j++) {
    int64_t idx = 0;
    CHECK(resolve_index(ctx, tuple[j], x->dims[b + j], "index", &idx));
    off += idx * strides[b + j];
  }
  *off_out = off;
  return MB_STATUS_OK;
}

static mb_status gather_nd_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0], *ind = ctx->inputs[1];
  mb_tensor *y = ctx->outputs[0];
  int b = (int)(ctx->opset >= 12 ? mb__node_attr_int(ctx->node, "batch_dims", 0)
                                 : 0);
  int64_t k = ind->dims[ind->rank - 1];
  int64_t es = (int64_t)mb_dtype_size(x->dtype);
  int64_t batches = prod(x->dims, 0, b);
  int64_t batch_elems = prod(x->dims, b, x->rank);
  int64_t slice = prod(x->dims, b + (int)k, x->rank);
  int64_t tuples = ind->numel / (k * MB_MAX(batches, 1));
  if (y->numel == 0)
    return MB_STATUS_OK;
  const int64_t *tuple = ind->data;
  char *dst = y->data;
  for (int64_t bi = 0; bi < batches; bi++)
    for (int64_t t = 0; t < tuples; t++, tuple += k) {
      int64_t off = 0;
      CHECK(nd_offset(ctx, x, b, tuple, k, &off));
      memcpy(dst, (const char *)x->data + (bi * batch_elems + off) * es,
             (size_t)(slice * es));
      dst += slice * es;
    }
  return MB_STATUS_OK;
}

static mb_status scatter_nd_infer(mb_op_ctx *ctx) {
  CHECK(mb__op_check_arity(ctx, 3, 3));
  const mb_tensor *x = ctx->inputs[0], *ind = ctx->inputs[1],
                  *upd = ctx->inputs[2];
  size_t esize = 0;
  int red;
  CHECK(element_size(ctx, x, &esize));
  CHECK(read_reduction(ctx, &red));
  CHECK(scatter_reduction_check(ctx, red, x->dtype));
  if (ind->dtype != MB_DTYPE_INT64)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "indices must be int64");
  if (x->rank < 1 || ind->rank < 1)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "data and indices must have rank >= 1");
  int64_t k = ind->dims[ind->rank - 1];
  bool ok = upd->dtype == x->dtype && k >= 1 && k <= x->rank &&
            upd->rank == ind->rank - 1 + x->rank - k;
  for (int i = 0; ok && i < ind->rank - 1; i++)
    ok = upd->dims[i] == ind->dims[i];
  for (int64_t i = k; ok && i < x->rank; i++)
    ok = upd->dims[ind->rank - 1 + i - k] == x->dims[i];
  if (!ok)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "updates must have shape indices.shape[:-1] + "
                        "data.shape[indices.shape[-1]:] and data's type");
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, x->rank, x->dims,
                              ctx->err);
}

static mb_status scatter_nd_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0], *ind = ctx->inputs[1],
                  *upd = ctx->inputs[2];
  mb_tensor *y = ctx->outputs[0];
  int red;
  CHECK(read_reduction(ctx, &red));
  if (y->data != x->data && x->nbytes > 0)
    memcpy(y->data, x->data, x->nbytes);
  int64_t k = ind->dims[ind->rank - 1];
  int64_t es = (int64_t)mb_dtype_size(x->dtype);
  int64_t slice = prod(x->dims, (int)k, x->rank);
  int64_t tuples = ind->numel / k;
  const int64_t *tuple = ind->data;
  for (int64_t t = 0; t < tuples; t++, tuple += k) {
    int64_t off = 0;
    CHECK(nd_offset(ctx, x, 0, tuple, k, &off));
    if (red == REDUCE_NONE) {
      memcpy((char *)y->data + off * es,
             (const char *)upd->data + t * slice * es, (size_t)(slice * es));
      continue;
    }
    for (int64_t e = 0; e < slice; e++)
      reduce_element(y, off + e, upd, t * slice + e, red);
  }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Slice                                                                    */
/* ------------------------------------------------------------------------ */

/* The output view of a Slice: per input dim, first index, step and count. */
typedef struct slice_view {
  int64_t start[MB_MAX_RANK], step[MB_MAX_RANK], count[MB_MAX_RANK];
} slice_view;

static mb_status slice_view_compute(mb_op_ctx *ctx, slice_view *v) {
  const mb_tensor *x = ctx->inputs[0];
  int64_t starts[MB_MAX_RANK], ends[MB_MAX_RANK], axes[MB_MAX_RANK],
      steps[MB_MAX_RANK];
  int n, n_ends, n_axes = -1, n_steps = -1;
  if (ctx->opset < 10) {
    const int64_t *s, *e, *a;
    int64_t ns = mb__node_attr_ints(ctx->node, "starts", &s);
    int64_t ne = mb__node_attr_ints(ctx->node, "ends", &e);
    int64_t na = mb__node_attr_ints(ctx->node, "axes", &a);
    if (ns < 0 || ne < 0)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "attributes 'starts' and 'ends' are required");
    if (ns > x->rank || ne > x->rank || na > x->rank)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "more starts/ends/axes than input dims");
    n = (int)ns;
    n_ends = (int)ne;
    memcpy(starts, s, (size_t)ns * sizeof(int64_t));
    memcpy(ends, e, (size_t)ne * sizeof(int64_t));
    if (na >= 0) {
      n_axes = (int)na;
      memcpy(axes, a, (size_t)na * sizeof(int64_t));
    }
  } else {
    CHECK(read_int_list(ctx, ctx->inputs[1], "starts", x->rank, starts, &n));
    CHECK(read_int_list(ctx, ctx->inputs[2], "ends", x->rank, ends, &n_ends));
    const mb_tensor *ta = mb__op_input(ctx, 3), *ts = mb__op_input(ctx, 4);
    if (ta != NULL)
      CHECK(read_int_list(ctx, ta, "axes", x->rank, axes, &n_axes));
    if (ts != NULL)
      CHECK(read_int_list(ctx, ts, "steps", x->rank, steps, &n_steps));
  }
  if (n_ends != n || (n_axes >= 0 && n_axes != n) ||
      (n_steps >= 0 && n_steps != n))
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "starts, ends, axes and steps differ in length");
  for (int i = 0; i < x->rank; i++) {
    v->start[i] = 0;
    v->step[i] = 1;
    v->count[i] = x->dims[i];
  }
  bool seen[MB_MAX_RANK] = {false};
  for (int i = 0; i < n; i++) {
    int axis = i;
    if (n_axes >= 0)
      CHECK(mb__op_axis(ctx, axes[i], x->rank, "axes", &axis));
    if (seen[axis])
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "axis %d is sliced twice", axis);
    seen[axis] = true;
    int64_t d = x->dims[axis], step = n_steps >= 0 ? steps[i] : 1;
    int64_t start = starts[i], end = ends[i];
    if (step == 0)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT, "step is 0");
    /* Steps beyond the dim select at most one element; bounding them keeps
     * every product below free of overflow. */
    step = MB_MAX(MB_MIN(step, MB_MAX(d, 1)), -MB_MAX(d, 1));
    if (start < 0)
      start += d;
    if (end < 0)
      end += d;
    int64_t count = 0;
    if (step > 0) {
      start = MB_MIN(MB_MAX(start, 0), d);
      end = MB_MIN(MB_MAX(end, 0), d);
      count = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = MB_MIN(MB_MAX(start, 0), d - 1);
      end = MB_MIN(MB_MAX(end, -1), d - 1);
      count = start > end ? (start - end - step - 1) / -step : 0;
    }
    v->start[axis] = start;
    v->step[axis] = step;
    v->count[axis] = count;
  }
  return MB_STATUS_OK;
}

static mb_status slice_infer(mb_op_ctx *ctx) {
  if (ctx->opset < 10)
    CHECK(mb__op_check_arity(ctx, 1, 1));
  else
    CHECK(mb__op_check_arity(ctx, 3, 5));
  for (int i = 1; i <= 4; i++)
    MB_OP_NEED_DATA(ctx, i);
  const mb_tensor *x = ctx->inputs[0];
  size_t esize = 0;
  CHECK(element_size(ctx, x, &esize));
  slice_view v;
  CHECK(slice_view_compute(ctx, &v));
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, x->rank, v.count,
                              ctx->err);
}

static mb_status slice_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0];
  mb_tensor *y = ctx->outputs[0];
  slice_view v;
  CHECK(slice_view_compute(ctx, &v));
  if (y->numel == 0)
    return MB_STATUS_OK;
  int64_t strides[MB_MAX_RANK], off = 0;
  size_t es = mb_dtype_size(x->dtype);
  mb__contiguous_strides(x->rank, x->dims, strides);
  for (int i = 0; i < x->rank; i++) {
    off += v.start[i] * strides[i];
    strides[i] *= v.step[i];
  }
  mb__copy_strided(y->data, (const char *)x->data + off * (int64_t)es, es,
                   x->rank, v.count, strides);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Concat, Split                                                            */
/* ------------------------------------------------------------------------ */

static mb_status concat_axis(mb_op_ctx *ctx, int rank, int *axis_out) {
  const mb_attr *a = mb__node_attr(ctx->node, "axis");
  if (a == NULL && ctx->opset >= 4)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "attribute 'axis' is required");
  return mb__op_axis(ctx, a != NULL ? a->i : 1, rank, "axis", axis_out);
}

static mb_status concat_infer(mb_op_ctx *ctx) {
  if (ctx->n_inputs < 1)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT, "needs inputs");
  CHECK(mb__op_check_arity(ctx, ctx->n_inputs, ctx->n_inputs));
  const mb_tensor *x0 = ctx->inputs[0];
  size_t esize = 0;
  CHECK(element_size(ctx, x0, &esize));
  int axis = 0;
  CHECK(concat_axis(ctx, x0->rank, &axis));
  int64_t dims[MB_MAX_RANK];
  memcpy(dims, x0->dims, sizeof(dims));
  for (int i = 1; i < ctx->n_inputs; i++) {
    const mb_tensor *x = ctx->inputs[i];
    bool ok = x->dtype == x0->dtype && x->rank == x0->rank;
    for (int d = 0; ok && d < x->rank; d++)
      ok = d == axis || x->dims[d] == x0->dims[d];
    if (!ok) {
      char b1[96], b2[96];
      return mb__op_error(
          ctx, MB_STATUS_SHAPE,
          "input %d (%s %s) does not match input 0 (%s %s) off axis %d", i,
          mb_dtype_name(x->dtype), mb__shape_str(x->rank, x->dims, b1, 96),
          mb_dtype_name(x0->dtype), mb__shape_str(x0->rank, x0->dims, b2, 96),
          axis);
    }
    dims[axis] += x->dims[axis];
  }
  return mb__tensor_set_shape(ctx->outputs[0], x0->dtype, x0->rank, dims,
                              ctx->err);
}

static mb_status concat_run(mb_op_ctx *ctx) {
  mb_tensor *y = ctx->outputs[0];
  int axis = 0;
  CHECK(concat_axis(ctx, y->rank, &axis));
  if (y->numel == 0)
    return MB_STATUS_OK;
  size_t es = mb_dtype_size(y->dtype);
  int64_t outer = prod(y->dims, 0, axis);
  size_t inner = (size_t)prod(y->dims, axis + 1, y->rank) * es;
  char *dst = y->data;
  for (int64_t o = 0; o < outer; o++)
    for (int i = 0; i < ctx->n_inputs; i++) {
      const mb_tensor *x = ctx->inputs[i];
      size_t block = (size_t)x->dims[axis] * inner;
      if (block == 0)
        continue;
      memcpy(dst, (const char *)x->data + (size_t)o * block, block);
      dst += block;
    }
  return MB_STATUS_OK;
}

/* Split sizes along the axis into sizes[n_outputs]. */
static mb_status split_sizes(mb_op_ctx *ctx, int *axis_out, int64_t *sizes) {
  const mb_tensor *x = ctx->inputs[0];
  int n = ctx->n_outputs;
  CHECK(mb__op_axis(ctx, mb__node_attr_int(ctx->node, "axis", 0), x->rank,
                    "axis", axis_out));
  int64_t d = x->dims[*axis_out];
  const mb_tensor *ts = mb__op_input(ctx, 1);
  const int64_t *attr = NULL;
  int64_t n_attr = -1;
  if (ctx->opset < 13)
    n_attr = mb__node_attr_ints(ctx->node, "split", &attr);
  if (ts != NULL || n_attr >= 0) {
    int count = (int)n_attr;
    if (ts != NULL)
      CHECK(read_int_list(ctx, ts, "split", n, sizes, &count));
    else if (n_attr == n)
      memcpy(sizes, attr, (size_t)n * sizeof(int64_t));
    int64_t total = 0;
    bool invalid = false;
    /* An attribute of the wrong length leaves sizes unfilled. */
    for (int i = 0; i < count && count == n; i++) {
      invalid |= sizes[i] < 0 || sizes[i] > d;
      total += invalid ? 0 : sizes[i];
    }
    if (count != n || total != d || invalid)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "split has %d non-negative entries summing to "
                          "%lld; expected %d summing to dim %lld",
                          count, (long long)total, n, (long long)d);
    return MB_STATUS_OK;
  }
  int64_t parts = n;
  if (ctx->opset >= 18) {
    parts = mb__node_attr_int(ctx->node, "num_outputs", n);
    if (parts != n)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "num_outputs is %lld but the node has %d outputs",
                          (long long)parts, n);
  }
  /* Since opset 18 the last chunk may be smaller; before, d must divide. */
  int64_t chunk = ctx->opset >= 18 ? (d + n - 1) / n : d / n;
  if (ctx->opset < 18 && d % n != 0)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "dim %lld does not split into %d equal parts",
                        (long long)d, n);
  for (int i = 0; i < n; i++)
    sizes[i] = MB_MAX(MB_MIN(chunk, d - chunk * i), 0);
  return MB_STATUS_OK;
}

static mb_status split_infer(mb_op_ctx *ctx) {
  CHECK(mb__op_check_arity(ctx, 1, 2));
  MB_OP_NEED_DATA(ctx, 1);
  const mb_tensor *x = ctx->inputs[0];
  size_t esize = 0;
  CHECK(element_size(ctx, x, &esize));
  if (ctx->n_outputs < 1)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT, "needs outputs");
  int64_t *sizes = mb__op_scratch(ctx, 0, sizeof(int64_t) * ctx->n_outputs);
  if (sizes == NULL)
    return MB_STATUS_OUT_OF_MEMORY;
  int axis = 0;
  CHECK(split_sizes(ctx, &axis, sizes));
  for (int i = 0; i < ctx->n_outputs; i++) {
    mb_tensor *y = ctx->outputs[i];
    if (y == NULL)
      continue;
    int64_t dims[MB_MAX_RANK];
    memcpy(dims, x->dims, sizeof(dims));
    dims[axis] = sizes[i];
    CHECK(mb__tensor_set_shape(y, x->dtype, x->rank, dims, ctx->err));
  }
  return MB_STATUS_OK;
}

static mb_status split_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0];
  int64_t *sizes = mb__op_scratch(ctx, 0, sizeof(int64_t) * ctx->n_outputs);
  if (sizes == NULL)
    return MB_STATUS_OUT_OF_MEMORY;
  int axis = 0;
  CHECK(split_sizes(ctx, &axis, sizes));
  if (x->numel == 0)
    return MB_STATUS_OK;
  size_t es = mb_dtype_size(x->dtype);
  int64_t outer = prod(x->dims, 0, axis);
  size_t inner = (size_t)prod(x->dims, axis + 1, x->rank) * es;
  const char *src = x->data;
  for (int64_t o = 0; o < outer; o++)
    for (int i = 0; i < ctx->n_outputs; i++) {
      size_t block = (size_t)sizes[i] * inner;
      mb_tensor *y = ctx->outputs[i];
      if (y != NULL && block > 0)
        memcpy((char *)y->data + (size_t)o * block, src, block);
      src += block;
    }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Tile                                                                     */
/* ------------------------------------------------------------------------ */

static mb_status tile_repeats(mb_op_ctx *ctx, int64_t *reps) {
  const mb_tensor *x = ctx->inputs[0];
  int n = 0;
  CHECK(read_int_list(ctx, ctx->inputs[1], "repeats", MB_MAX_RANK, reps, &n));
  if (n != x->rank)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "repeats has %d entries for a rank-%d input", n,
                        x->rank);
  for (int i = 0; i < n; i++)
    if (reps[i] < 0)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "repeats[%d] = %lld is negative", i,
                          (long long)reps[i]);
  return MB_STATUS_OK;
}

static mb_status tile_infer(mb_op_ctx *ctx) {
  CHECK(mb__op_check_arity(ctx, 2, 2));
  MB_OP_NEED_DATA(ctx, 1);
  const mb_tensor *x = ctx->inputs[0];
  size_t esize = 0;
  CHECK(element_size(ctx, x, &esize));
  int64_t reps[MB_MAX_RANK], dims[MB_MAX_RANK];
  CHECK(tile_repeats(ctx, reps));
  for (int i = 0; i < x->rank; i++)
    if (!mb__mul_i64(x->dims[i], reps[i], &dims[i]))
      return mb__op_error(ctx, MB_STATUS_OVERFLOW, "output too large");
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, x->rank, dims,
                              ctx->err);
}

static mb_status tile_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0];
  mb_tensor *y = ctx->outputs[0];
  int64_t reps[MB_MAX_RANK], strides[MB_MAX_RANK];
  CHECK(tile_repeats(ctx, reps));
  if (y->numel == 0)
    return MB_STATUS_OK;
  /* The output is the view (r0, d0, r1, d1, ...) of the input with stride
   * 0 on every repeat dim. */
  int64_t vd[2 * MB_MAX_RANK], vs[2 * MB_MAX_RANK];
  mb__contiguous_strides(x->rank, x->dims, strides);
  for (int i = 0; i < x->rank; i++) {
    vd[2 * i] = reps[i];
    vs[2 * i] = 0;
    vd[2 * i + 1] = x->dims[i];
    vs[2 * i + 1] = strides[i];
  }
  mb__copy_strided(y->data, x->data, mb_dtype_size(x->dtype), 2 * x->rank, vd,
                   vs);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Pad                                                                      */
/* ------------------------------------------------------------------------ */

typedef enum pad_mode {
  PAD_CONSTANT,
  PAD_REFLECT,
  PAD_EDGE,
  PAD_WRAP
} pad_mode;
static const char *const pad_mode_names[] = {"constant", "reflect", "edge",
                                             "wrap"};

typedef struct pad_params {
  pad_mode mode;
  int64_t begin[MB_MAX_RANK], end[MB_MAX_RANK];
} pad_params;

#define PAD_MAX ((int64_t)1 << 40)

static mb_status pad_params_read(mb_op_ctx *ctx, pad_params *p) {
  const mb_tensor *x = ctx->inputs[0];
  int r = x->rank;
  const char *mode = mb__node_attr_string(ctx->node, "mode", "constant");
  p->mode = PAD_CONSTANT;
  size_t n_modes = ctx->opset >= 19 ? 4 : 3;
  size_t m = 0;
  while (m < n_modes && strcmp(mode, pad_mode_names[m]) != 0)
    m++;
  if (m == n_modes)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED, "mode '%s'", mode);
  p->mode = (pad_mode)m;
  int64_t pads[2 * MB_MAX_RANK], axes[MB_MAX_RANK];
  int n_pads, n_axes = r;
  if (ctx->opset < 11) {
    const int64_t *a;
    int64_t n = mb__node_attr_ints(ctx->node, "pads", &a);
    if (n < 0)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "attribute 'pads' is required");
    if (n > 2 * r)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "pads has %lld entries for a rank-%d input",
                          (long long)n, r);
    n_pads = (int)n;
    memcpy(pads, a, (size_t)n * sizeof(int64_t));
  } else {
    CHECK(read_int_list(ctx, ctx->inputs[1], "pads", 2 * r, pads, &n_pads));
  }
  const mb_tensor *ta = mb__op_input(ctx, 3);
  if (ctx->opset >= 18 && ta != NULL) {
    CHECK(read_int_list(ctx, ta, "axes", r, axes, &n_axes));
    for (int i = 0; i < n_axes; i++) {
      int a;
      CHECK(mb__op_axis(ctx, axes[i], r, "axes", &a));
      axes[i] = a;
    }
  } else {
    for (int i = 0; i < r; i++)
      axes[i] = i;
  }
  if (n_pads != 2 * n_axes)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "pads has %d entries, expected %d", n_pads, 2 * n_axes);
  memset(p->begin, 0, sizeof(p->begin));
  memset(p->end, 0, sizeof(p->end));
  /* A pad past 2^40 elements is past any memory; bounding it keeps the
   * dims' sums below from overflowing (a fuzzed INT64_MAX did; UBSan). */
  for (int i = 0; i < n_pads; i++)
    if (pads[i] > PAD_MAX || pads[i] < -PAD_MAX)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "pads[%d] = %lld is out of range", i,
                          (long long)pads[i]);
  for (int i = 0; i < n_axes; i++) {
    p->begin[axes[i]] = pads[i];
    p->end[axes[i]] = pads[i + n_axes];
  }
  for (int i = 0; i < r; i++) {
    int64_t d = x->dims[i];
    if (d + p->begin[i] + p->end[i] < 0)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "pads remove more than the %lld elements of dim %d",
                          (long long)d, i);
    if (d == 0 && p->mode != PAD_CONSTANT && (p->begin[i] > 0 || p->end[i] > 0))
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "cannot pad empty dim %d in %s mode", i,
                          pad_mode_names[p->mode]);
  }
  return MB_STATUS_OK;
}

static mb_status pad_infer(mb_op_ctx *ctx) {
  CHECK(mb__op_check_arity(ctx, ctx->opset >= 11 ? 2 : 1,
                           ctx->opset >= 18   ? 4
                           : ctx->opset >= 11 ? 3
                                              : 1));
  MB_OP_NEED_DATA(ctx, 1);
  MB_OP_NEED_DATA(ctx, 3);
  const mb_tensor *x = ctx->inputs[0];
  size_t esize = 0;
  CHECK(element_size(ctx, x, &esize));
  pad_params p;
  CHECK(pad_params_read(ctx, &p));
  int64_t dims[MB_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    dims[i] = x->dims[i] + p.begin[i] + p.end[i];
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, x->rank, dims,
                              ctx->err);
}

/* Source index along one axis for output index o, or -1 for the constant. */
static int64_t pad_source(pad_mode mode, int64_t o, int64_t begin, int64_t d) {
  int64_t i = o - begin;
  if (i >= 0 && i < d)
    return i;
  switch (mode) {
  case PAD_CONSTANT:
    return -1;
  case PAD_EDGE:
    return i < 0 ? 0 : d - 1;
  case PAD_WRAP:
    return ((i % d) + d) % d;
  case PAD_REFLECT: {
    if (d == 1)
      return 0;
    int64_t period = 2 * (d - 1), m = ((i % period) + period) % period;
    return m < d ? m : period - m;
  }
  }
  return -1;
}

static mb_status pad_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0];
  mb_tensor *y = ctx->outputs[0];
  pad_params p;
  CHECK(pad_params_read(ctx, &p));
  if (y->numel == 0)
    return MB_STATUS_OK;
  size_t es = mb_dtype_size(x->dtype);
  uint8_t cval[16] = {0};
  const mb_tensor *tc = mb__op_input(ctx, 2);
  if (ctx->opset < 11) {
    encode_scalar(x->dtype, mb__node_attr_float(ctx->node, "value", 0.0f),
                  cval);
  } else if (tc != NULL && tc->numel > 0) {
    if (tc->dtype != x->dtype)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "constant_value is %s but data is %s",
                          mb_dtype_name(tc->dtype), mb_dtype_name(x->dtype));
    memcpy(cval, tc->data, es);
  }
  /* An empty input has nothing to reflect, repeat or copy: only constant
   * padding can fill the output. */
  if (x->numel == 0) {
    if (p.mode != PAD_CONSTANT)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "mode '%s' cannot pad an empty input",
                          pad_mode_names[p.mode]);
    fill_pattern(y->data, cval, es, y->numel);
    return MB_STATUS_OK;
  }
  /* One index map per axis: output coordinate -> input coordinate or -1. */
  int r = y->rank;
  int64_t total = 0, *maps[MB_MAX_RANK];
  for (int i = 0; i < r; i++)
    total += y->dims[i];
  int64_t *map_mem =
      mb__op_scratch(ctx, 0, sizeof(int64_t) * (size_t)(total + 1));
  if (map_mem == NULL)
    return MB_STATUS_OUT_OF_MEMORY;
  for (int64_t i = 0, at = 0; i < r; at += y->dims[i], i++) {
    maps[i] = map_mem + at;
    for (int64_t o = 0; o < y->dims[i]; o++)
      maps[i][o] = pad_source(p.mode, o, p.begin[i], x->dims[i]);
  }
  int64_t in_strides[MB_MAX_RANK];
  mb__contiguous_strides(x->rank, x->dims, in_strides);
  int64_t row = r > 0 ? y->dims[r - 1] : 1;
  int64_t rows = y->numel / row, idx[MB_MAX_RANK] = {0};
  /* The part of each row copied as one block. */
  int64_t lo = 0, hi = row, src_lo = 0;
  if (r > 0) {
    lo = MB_MAX(p.begin[r - 1], 0);
    hi = MB_MIN(p.begin[r - 1] + x->dims[r - 1], row);
    src_lo = lo - p.begin[r - 1];
  }
  char *dst = y->data;
  const char *src = x->data;
  for (int64_t ro = 0; ro < rows; ro++, dst += row * (int64_t)es) {
    int64_t off = 0;
    bool constant_row = false;
    for (int k = 0; k < r - 1; k++) {
      int64_t s = maps[k][idx[k]];
      if (s < 0)
        constant_row = true;
      off += s * in_strides[k];
    }
    if (constant_row) {
      fill_pattern(dst, cval, es, row);
    } else if (r == 0) {
      memcpy(dst, src, es);
    } else {
      const char *srow = src + off * (int64_t)es;
      if (hi > lo)
        memcpy(dst + lo * (int64_t)es, srow + src_lo * (int64_t)es,
               (size_t)(hi - lo) * es);
      for (int64_t j = 0; j < row; j++) {
        if (j == lo && hi > lo)
          j = hi;
        if (j >= row)
          break;
        int64_t s = maps[r - 1][j];
        memcpy(dst + j * (int64_t)es,
               s < 0 ? (const char *)cval : srow + s * (int64_t)es, es);
      }
    }
    for (int k = r - 2; k >= 0; k--) {
      if (++idx[k] < y->dims[k])
        break;
      idx[k] = 0;
    }
  }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* OneHot                                                                   */
/* ------------------------------------------------------------------------ */

static mb_status onehot_depth(mb_op_ctx *ctx, int64_t *depth_out) {
  const mb_tensor *t = ctx->inputs[1];
  if (t->numel != 1)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "depth must be a scalar");
  double d = mb__tensor_get_f64(t, 0);
  if (!(d >= 1) || d > (double)(INT64_C(1) << 40))
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT, "depth %g is invalid",
                        d);
  *depth_out = (int64_t)d;
  return MB_STATUS_OK;
}

static mb_status onehot_infer(mb_op_ctx *ctx) {
  CHECK(mb__op_check_arity(ctx, 3, 3));
  MB_OP_NEED_DATA(ctx, 1);
  const mb_tensor *ind = ctx->inputs[0], *values = ctx->inputs[2];
  size_t esize = 0;
  CHECK(element_size(ctx, values, &esize));
  if (values->numel != 2)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "values must hold [off_value, on_value]");
  if (!mb__dtype_is_int(ind->dtype) && !mb__dtype_is_float(ind->dtype))
    return mb__op_error(ctx, MB_STATUS_SHAPE, "indices must be numeric");
  if (ind->rank + 1 > MB_MAX_RANK)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED, "output rank too high");
  int axis = 0;
  int64_t depth = 0;
  CHECK(mb__op_axis(ctx, mb__node_attr_int(ctx->node, "axis", -1),
                    ind->rank + 1, "axis", &axis));
  CHECK(onehot_depth(ctx, &depth));
  int64_t dims[MB_MAX_RANK];
  for (int i = 0, j = 0; i < ind->rank + 1; i++)
    dims[i] = i == axis ? depth : ind->dims[j++];
  return mb__tensor_set_shape(ctx->outputs[0], values->dtype, ind->rank + 1,
                              dims, ctx->err);
}

static mb_status onehot_run(mb_op_ctx *ctx) {
  const mb_tensor *ind = ctx->inputs[0], *values = ctx->inputs[2];
  mb_tensor *y = ctx->outputs[0];
  int axis = 0;
  int64_t depth = 0;
  CHECK(mb__op_axis(ctx, mb__node_attr_int(ctx->node, "axis", -1),
                    ind->rank + 1, "axis", &axis));
  CHECK(onehot_depth(ctx, &depth));
  int64_t es = (int64_t)mb_dtype_size(values->dtype);
  const char *off_value = values->data, *on_value = off_value + es;
  fill_pattern(y->data, off_value, (size_t)es, y->numel);
  int64_t outer = prod(ind->dims, 0, axis),
          inner = prod(ind->dims, axis, ind->rank);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      double v = mb__tensor_get_f64(ind, o * inner + i);
      if (!(v > -(double)depth - 1 && v < (double)depth))
        continue;
      int64_t k = (int64_t)v;
      if (k < 0)
        k += depth;
      if (k < 0 || k >= depth)
        continue;
      memcpy((char *)y->data + ((o * depth + k) * inner + i) * es, on_value,
             (size_t)es);
    }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* NonZero                                                                  */
/* ------------------------------------------------------------------------ */

static bool element_nonzero(const mb_tensor *t, int64_t i, size_t es) {
  if (mb__dtype_is_float(t->dtype))
    return mb__tensor_get_f64(t, i) != 0.0; /* -0.0 is zero, NaN is not */
  const uint8_t *b = (const uint8_t *)t->data + i * (int64_t)es;
  for (size_t k = 0; k < es; k++)
    if (b[k] != 0)
      return true;
  return false;
}

static mb_status nonzero_infer(mb_op_ctx *ctx) {
  CHECK(mb__op_check_arity(ctx, 1, 1));
  MB_OP_NEED_DATA(ctx, 0);
  const mb_tensor *x = ctx->inputs[0];
  size_t es = 0;
  CHECK(element_size(ctx, x, &es));
  int64_t count = 0;
  for (int64_t i = 0; i < x->numel; i++)
    count += element_nonzero(x, i, es);
  /* A scalar counts as a 1-D tensor of one element, like numpy. */
  int64_t dims[2] = {MB_MAX(x->rank, 1), count};
  return mb__tensor_set_shape(ctx->outputs[0], MB_DTYPE_INT64, 2, dims,
                              ctx->err);
}

static mb_status nonzero_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0];
  mb_tensor *y = ctx->outputs[0];
  size_t es = mb_dtype_size(x->dtype);
  int64_t count = y->dims[1], n = 0, coord[MB_MAX_RANK] = {0};
  int64_t *out = y->data;
  for (int64_t i = 0; i < x->numel; i++) {
    if (element_nonzero(x, i, es)) {
      for (int k = 0; k < x->rank; k++)
        out[k * count + n] = coord[k];
      if (x->rank == 0)
        out[n] = 0;
      n++;
    }
    for (int k = x->rank - 1; k >= 0; k--) {
      if (++coord[k] < x->dims[k])
        break;
      coord[k] = 0;
    }
  }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* TopK                                                                     */
/* ------------------------------------------------------------------------ */

static mb_status topk_params(mb_op_ctx *ctx, int *axis_out, int64_t *k_out) {
  const mb_tensor *x = ctx->inputs[0];
  CHECK(mb__op_axis(ctx, mb__node_attr_int(ctx->node, "axis", -1), x->rank,
                    "axis", axis_out));
  int64_t k = 0;
  if (ctx->opset < 10) {
    k = mb__node_attr_int(ctx->node, "k", -1);
  } else {
    CHECK(read_int_scalar(ctx, ctx->inputs[1], "K", &k));
  }
  if (k < 0 || k > x->dims[*axis_out])
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "k = %lld is out of range for a dim of size %lld",
                        (long long)k, (long long)x->dims[*axis_out]);
  *k_out = k;
  return MB_STATUS_OK;
}

static mb_status topk_infer(mb_op_ctx *ctx) {
  CHECK(mb__op_check_arity(ctx, ctx->opset >= 10 ? 2 : 1,
                           ctx->opset >= 10 ? 2 : 1));
  MB_OP_NEED_DATA(ctx, 1);
  const mb_tensor *x = ctx->inputs[0];
  if (!mb__dtype_is_float(x->dtype) && !mb__dtype_is_int(x->dtype))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED, "type %s",
                        mb_dtype_name(x->dtype));
  if (x->rank < 1)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "input must have rank >= 1");
  int axis = 0;
  int64_t k, dims[MB_MAX_RANK];
  CHECK(topk_params(ctx, &axis, &k));
  memcpy(dims, x->dims, sizeof(dims));
  dims[axis] = k;
  if (ctx->outputs[0] != NULL)
    CHECK(mb__tensor_set_shape(ctx->outputs[0], x->dtype, x->rank, dims,
                               ctx->err));
  if (mb__op_output(ctx, 1) != NULL)
    CHECK(mb__tensor_set_shape(ctx->outputs[1], MB_DTYPE_INT64, x->rank, dims,
                               ctx->err));
  return MB_STATUS_OK;
}

static mb_status topk_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0];
  mb_tensor *values = ctx->outputs[0], *indices = mb__op_output(ctx, 1);
  int axis = 0;
  int64_t k = 0;
  CHECK(topk_params(ctx, &axis, &k));
  bool largest =
      ctx->opset < 11 || mb__node_attr_int(ctx->node, "largest", 1) != 0;
  int64_t n = x->dims[axis], outer = prod(x->dims, 0, axis),
          inner = prod(x->dims, axis + 1, x->rank);
  if (k == 0 || x->numel == 0)
    return MB_STATUS_OK;
  bool use_int = keys_use_int(x->dtype);
  int64_t *order = mb__op_scratch(ctx, 0, sizeof(int64_t) * (size_t)n);
  int64_t *tmp = mb__op_scratch(ctx, 1, sizeof(int64_t) * (size_t)n);
  void *keys = mb__op_scratch(ctx, 2, 8 * (size_t)n);
  if (order == NULL || tmp == NULL || keys == NULL)
    return MB_STATUS_OUT_OF_MEMORY;
  sort_keys sk = {use_int ? NULL : keys, use_int ? keys : NULL, 1};
  int64_t es = (int64_t)mb_dtype_size(x->dtype);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t base = o * n * inner + i;
      for (int64_t j = 0; j < n; j++) {
        order[j] = j;
        if (use_int)
          ((int64_t *)keys)[j] = mb__tensor_get_i64(x, base + j * inner);
        else
          ((double *)keys)[j] = mb__tensor_get_f64(x, base + j * inner);
      }
      /* Stable, so equal values keep the lower index first. */
      merge_sort(order, tmp, n, largest ? compare_rows_desc : compare_rows,
                 &sk);
      int64_t obase = o * k * inner + i;
      for (int64_t j = 0; j < k; j++) {
        int64_t dst = obase + j * inner;
        if (values != NULL)
          memcpy((char *)values->data + dst * es,
                 (const char *)x->data + (base + order[j] * inner) * es,
                 (size_t)es);
        if (indices != NULL)
          ((int64_t *)indices->data)[dst] = order[j];
      }
    }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* CumSum                                                                   */
/* ------------------------------------------------------------------------ */

static mb_status cumsum_infer(mb_op_ctx *ctx) {
  CHECK(mb__op_check_arity(ctx, 2, 2));
  const mb_tensor *x = ctx->inputs[0];
  if (!mb__dtype_is_float(x->dtype) && x->dtype != MB_DTYPE_INT32 &&
      x->dtype != MB_DTYPE_INT64 && x->dtype != MB_DTYPE_UINT32 &&
      x->dtype != MB_DTYPE_UINT64)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED, "type %s",
                        mb_dtype_name(x->dtype));
  CHECK(need_index_type(ctx, ctx->inputs[1], "axis"));
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, x->rank, x->dims,
                              ctx->err);
}

static mb_status cumsum_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0];
  mb_tensor *y = ctx->outputs[0];
  int64_t axis_value;
  int axis = 0;
  CHECK(read_int_scalar(ctx, ctx->inputs[1], "axis", &axis_value));
  CHECK(mb__op_axis(ctx, axis_value, MB_MAX(x->rank, 1), "axis", &axis));
  bool exclusive = mb__node_attr_int(ctx->node, "exclusive", 0) != 0;
  bool reverse = mb__node_attr_int(ctx->node, "reverse", 0) != 0;
  if (x->numel == 0)
    return MB_STATUS_OK;
  int64_t n = x->rank > 0 ? x->dims[axis] : 1;
  int64_t outer = prod(x->dims, 0, axis), inner = x->numel / (outer * n);
  int64_t first = reverse ? n - 1 : 0, step = reverse ? -inner : inner;
  /* Accumulate in the element type (float16 and bfloat16 in float), one
   * line along the axis at a time. */
#define CUMSUM_AS(type, src, dst)                                              \
  do {                                                                         \
    for (int64_t o = 0; o < outer; o++)                                        \
      for (int64_t i = 0; i < inner; i++) {                                    \
        int64_t at = o * n * inner + first * inner + i;                        \
        type acc = 0;                                                          \
        for (int64_t j = 0; j < n; j++, at += step) {                          \
          type v = (src)[at];                                                  \
          if (exclusive) {                                                     \
            (dst)[at] = acc;                                                   \
            acc += v;                                                          \
          } else {                                                             \
            acc += v;                                                          \
            (dst)[at] = acc;                                                   \
          }                                                                    \
        }                                                                      \
      }                                                                        \
  } while (0)
  switch (x->dtype) {
  case MB_DTYPE_INT32:
    CUMSUM_AS(int32_t, (const int32_t *)x->data, (int32_t *)y->data);
    break;
  case MB_DTYPE_INT64:
    CUMSUM_AS(int64_t, (const int64_t *)x->data, (int64_t *)y->data);
    break;
  case MB_DTYPE_UINT32:
    CUMSUM_AS(uint32_t, (const uint32_t *)x->data, (uint32_t *)y->data);
    break;
  case MB_DTYPE_UINT64:
    CUMSUM_AS(uint64_t, (const uint64_t *)x->data, (uint64_t *)y->data);
    break;
  case MB_DTYPE_DOUBLE:
    CUMSUM_AS(double, (const double *)x->data, (double *)y->data);
    break;
  default: {
    const float *src = mb__op_as_f32(ctx, x, 0);
    float *dst = mb__op_f32_dest(ctx, y, 1);
    if (src == NULL || dst == NULL)
      return MB_STATUS_OUT_OF_MEMORY;
    CUMSUM_AS(float, src, dst);
    if (y->dtype != MB_DTYPE_FLOAT)
      mb__op_store_f32(y, dst);
  }
  }
#undef CUMSUM_AS
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* ReverseSequence                                                          */
/* ------------------------------------------------------------------------ */

static mb_status reverse_sequence_axes(mb_op_ctx *ctx, int *batch_axis,
                                       int *time_axis) {
  int64_t b = mb__node_attr_int(ctx->node, "batch_axis", 1);
  int64_t t = mb__node_attr_int(ctx->node, "time_axis", 0);
  if (!((b == 0 && t == 1) || (b == 1 && t == 0)))
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "batch_axis and time_axis must be 0 and 1");
  *batch_axis = (int)b;
  *time_axis = (int)t;
  return MB_STATUS_OK;
}

static mb_status reverse_sequence_infer(mb_op_ctx *ctx) {
  CHECK(mb__op_check_arity(ctx, 2, 2));
  const mb_tensor *x = ctx->inputs[0], *lens = ctx->inputs[1];
  size_t es = 0;
  CHECK(element_size(ctx, x, &es));
  int b, t = 0;
  CHECK(reverse_sequence_axes(ctx, &b, &t));
  if (x->rank < 2 || lens->rank != 1 || lens->dims[0] != x->dims[b])
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "input must have rank >= 2 and sequence_lens one "
                        "entry per batch");
  CHECK(need_index_type(ctx, lens, "sequence_lens"));
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, x->rank, x->dims,
                              ctx->err);
}

static mb_status reverse_sequence_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0], *lens = ctx->inputs[1];
  mb_tensor *y = ctx->outputs[0];
  int b, t = 0;
  CHECK(reverse_sequence_axes(ctx, &b, &t));
  int64_t batch = x->dims[b], steps = x->dims[t];
  size_t block = (size_t)prod(x->dims, 2, x->rank) * mb_dtype_size(x->dtype);
  /* Element (batch i, time j) starts at block index i*sb + j*st. */
  int64_t sb = b == 0 ? steps : 1, st = b == 0 ? 1 : batch;
  for (int64_t i = 0; i < batch; i++) {
    int64_t len = index_at(lens, i);
    if (len < 0 || len > steps)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "sequence_lens[%lld] = %lld is out of range",
                          (long long)i, (long long)len);
    for (int64_t j = 0; j < steps; j++) {
      int64_t from = j < len ? len - 1 - j : j;
      memcpy((char *)y->data + (size_t)(i * sb + j * st) * block,
             (const char *)x->data + (size_t)(i * sb + from * st) * block,
             block);
    }
  }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* DepthToSpace, SpaceToDepth                                               */
/* ------------------------------------------------------------------------ */

/* Both are a reshape to 6-D, a transpose and a reshape back; this fills
 * the 6-D input dims and the permutation. */
typedef struct space_plan {
  int64_t dims6[6];
  int perm[6];
  int64_t out[4];
} space_plan;

static mb_status space_plan_make(mb_op_ctx *ctx, bool to_space, space_plan *p) {
  const mb_tensor *x = ctx->inputs[0];
  int64_t bs = mb__node_attr_int(ctx->node, "blocksize", 0);
  if (x->rank != 4)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "input must be 4-D, got rank %d",
                        x->rank);
  if (bs < 1 || bs > MB_OP_ATTR_MAX)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "blocksize %lld is outside 1..%lld", (long long)bs,
                        (long long)MB_OP_ATTR_MAX);
  int64_t n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
  int64_t hs, ws, cs;
  if (!mb__mul_i64(h, bs, &hs) || !mb__mul_i64(w, bs, &ws) ||
      !mb__mul_i64(c, bs * bs, &cs))
    return mb__op_error(ctx, MB_STATUS_OVERFLOW,
                        "blocksize %lld makes the output shape overflow",
                        (long long)bs);
  if (to_space) {
    if (c % (bs * bs) != 0)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "channels %lld not divisible by blocksize^2",
                          (long long)c);
    const char *mode = mb__node_attr_string(ctx->node, "mode", "DCR");
    int64_t cc = c / (bs * bs);
    if (strcmp(mode, "DCR") == 0) {
      int64_t d[6] = {n, bs, bs, cc, h, w};
      int pm[6] = {0, 3, 4, 1, 5, 2};
      memcpy(p->dims6, d, sizeof(d));
      memcpy(p->perm, pm, sizeof(pm));
    } else if (strcmp(mode, "CRD") == 0) {
      int64_t d[6] = {n, cc, bs, bs, h, w};
      int pm[6] = {0, 1, 4, 2, 5, 3};
      memcpy(p->dims6, d, sizeof(d));
      memcpy(p->perm, pm, sizeof(pm));
    } else {
      return mb__op_error(ctx, MB_STATUS_UNSUPPORTED, "mode '%s'", mode);
    }
    int64_t out[4] = {n, cc, hs, ws};
    memcpy(p->out, out, sizeof(out));
  } else {
    if (h % bs != 0 || w % bs != 0)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "height and width must be divisible by blocksize");
    int64_t d[6] = {n, c, h / bs, bs, w / bs, bs};
    int pm[6] = {0, 3, 5, 1, 2, 4};
    memcpy(p->dims6, d, sizeof(d));
    memcpy(p->perm, pm, sizeof(pm));
    int64_t out[4] = {n, cs, h / bs, w / bs};
    memcpy(p->out, out, sizeof(out));
  }
  return MB_STATUS_OK;
}

static mb_status space_infer(mb_op_ctx *ctx, bool to_space) {
  CHECK(mb__op_check_arity(ctx, 1, 1));
  size_t es = 0;
  CHECK(element_size(ctx, ctx->inputs[0], &es));
  space_plan p;
  CHECK(space_plan_make(ctx, to_space, &p));
  return mb__tensor_set_shape(ctx->outputs[0], ctx->inputs[0]->dtype, 4, p.out,
                              ctx->err);
}

static mb_status space_run(mb_op_ctx *ctx, bool to_space) {
  const mb_tensor *x = ctx->inputs[0];
  space_plan p;
  CHECK(space_plan_make(ctx, to_space, &p));
  if (x->numel > 0)
    mb__transpose(ctx->outputs[0]->data, x->data, mb_dtype_size(x->dtype), 6,
                  p.dims6, p.perm);
  return MB_STATUS_OK;
}

static mb_status depth_to_space_infer(mb_op_ctx *ctx) {
  return space_infer(ctx, true);
}
static mb_status depth_to_space_run(mb_op_ctx *ctx) {
  return space_run(ctx, true);
}
static mb_status space_to_depth_infer(mb_op_ctx *ctx) {
  return space_infer(ctx, false);
}
static mb_status space_to_depth_run(mb_op_ctx *ctx) {
  return space_run(ctx, false);
}

/* ------------------------------------------------------------------------ */
/* Compress                                                                 */
/* ------------------------------------------------------------------------ */

/* Axis (or -1 for the flattened input) and the length along it. */
static mb_status compress_params(mb_op_ctx *ctx, int *axis_out,
                                 int64_t *len_out, int64_t *kept_out) {
  const mb_tensor *x = ctx->inputs[0], *cond = ctx->inputs[1];
  const mb_attr *a = mb__node_attr(ctx->node, "axis");
  *axis_out = -1;
  *len_out = x->numel;
  if (a != NULL) {
    CHECK(mb__op_axis(ctx, a->i, x->rank, "axis", axis_out));
    *len_out = x->dims[*axis_out];
  }
  if (cond->rank != 1)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "condition must be 1-D");
  size_t es = mb_dtype_size(cond->dtype);
  if (es == 0)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "condition type %s",
                        mb_dtype_name(cond->dtype));
  int64_t kept = 0;
  for (int64_t i = 0; i < cond->numel; i++)
    if (element_nonzero(cond, i, es)) {
      if (i >= *len_out)
        return mb__op_error(ctx, MB_STATUS_SHAPE,
                            "condition selects index %lld beyond the %lld "
                            "available",
                            (long long)i, (long long)*len_out);
      kept++;
    }
  *kept_out = kept;
  return MB_STATUS_OK;
}

static mb_status compress_infer(mb_op_ctx *ctx) {
  CHECK(mb__op_check_arity(ctx, 2, 2));
  MB_OP_NEED_DATA(ctx, 1);
  const mb_tensor *x = ctx->inputs[0];
  size_t es = 0;
  CHECK(element_size(ctx, x, &es));
  int axis = 0;
  int64_t len, kept = 0;
  CHECK(compress_params(ctx, &axis, &len, &kept));
  if (axis < 0)
    return mb__tensor_set_shape(ctx->outputs[0], x->dtype, 1, &kept, ctx->err);
  int64_t dims[MB_MAX_RANK];
  memcpy(dims, x->dims, sizeof(dims));
  dims[axis] = kept;
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, x->rank, dims,
                              ctx->err);
}

static mb_status compress_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0], *cond = ctx->inputs[1];
  mb_tensor *y = ctx->outputs[0];
  int axis = 0;
  int64_t len, kept = 0;
  CHECK(compress_params(ctx, &axis, &len, &kept));
  if (y->numel == 0)
    return MB_STATUS_OK;
  size_t es = mb_dtype_size(x->dtype), ces = mb_dtype_size(cond->dtype);
  int64_t outer = axis < 0 ? 1 : prod(x->dims, 0, axis);
  size_t block = axis < 0 ? es : (size_t)prod(x->dims, axis + 1, x->rank) * es;
  char *dst = y->data;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < cond->numel; i++)
      if (element_nonzero(cond, i, ces)) {
        memcpy(dst, (const char *)x->data + (size_t)(o * len + i) * block,
               block);
        dst += block;
      }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Unique                                                                   */
/* ------------------------------------------------------------------------ */

/* Everything Unique computes: items are slices along the axis (or single
 * elements of the flattened input). */
typedef struct unique_plan {
  int axis; /* -1: flattened */
  int64_t items, row, outer, inner;
  int64_t n_unique;
  int64_t *first;   /* [n_unique] first occurrence of each unique item */
  int64_t *inverse; /* [items] unique index of each item */
  int64_t *counts;  /* [n_unique] */
} unique_plan;

static mb_status unique_plan_make(mb_op_ctx *ctx, unique_plan *p) {
  const mb_tensor *x = ctx->inputs[0];
  const mb_attr *a = mb__node_attr(ctx->node, "axis");
  bool sorted = mb__node_attr_int(ctx->node, "sorted", 1) != 0;
  if (!mb__dtype_is_float(x->dtype) && !mb__dtype_is_int(x->dtype) &&
      x->dtype != MB_DTYPE_BOOL)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED, "type %s",
                        mb_dtype_name(x->dtype));
  p->axis = -1;
  p->items = x->numel;
  p->outer = 1;
  p->inner = 1;
  if (a != NULL) {
    CHECK(mb__op_axis(ctx, a->i, x->rank, "axis", &p->axis));
    p->items = x->dims[p->axis];
    p->outer = prod(x->dims, 0, p->axis);
    p->inner = prod(x->dims, p->axis + 1, x->rank);
  }
  p->row = p->items > 0 ? x->numel / p->items : 0;
  int64_t n = p->items;
  bool use_int = keys_use_int(x->dtype);
  /* keys: item-major copy of the values; order/tmp: sort permutation. */
  void *keys = mb__op_scratch(ctx, 0, 8 * (size_t)MB_MAX(x->numel, 1));
  int64_t *order = mb__op_scratch(ctx, 1, sizeof(int64_t) * 4 * (size_t)n + 8);
  int64_t *tmp = mb__op_scratch(ctx, 2, sizeof(int64_t) * 2 * (size_t)n + 8);
  if (keys == NULL || order == NULL || tmp == NULL)
    return MB_STATUS_OUT_OF_MEMORY;
  p->first = order + n;
  p->inverse = order + 2 * n;
  p->counts = order + 3 * n;
  int64_t *group_of_rank = tmp + n; /* sorted group -> output position */
  for (int64_t j = 0; j < n; j++)
    for (int64_t o = 0; o < p->outer; o++)
      for (int64_t i = 0; i < p->inner; i++) {
        int64_t src = (o * n + j) * p->inner + i;
        int64_t dst = j * p->row + o * p->inner + i;
        if (use_int)
          ((int64_t *)keys)[dst] = mb__tensor_get_i64(x, src);
        else
          ((double *)keys)[dst] = mb__tensor_get_f64(x, src);
      }
  sort_keys sk = {use_int ? NULL : keys, use_int ? keys : NULL, p->row};
  for (int64_t j = 0; j < n; j++)
    order[j] = j;
  merge_sort(order, tmp, n, compare_rows, &sk);
  /* Groups of equal items in sorted order; stability makes order[start] of
   * each group its first occurrence. inverse[] temporarily holds the
   * sorted-group number of each item. */
  int64_t groups = 0;
  for (int64_t s = 0; s < n; s++) {
    if (s == 0 || compare_rows(&sk, order[s - 1], order[s]) != 0) {
      p->first[groups] = order[s];
      p->counts[groups] = 0;
      groups++;
    }
    p->inverse[order[s]] = groups - 1;
    p->counts[groups - 1]++;
  }
  p->n_unique = groups;
  if (!sorted) {
    /* Reorder groups by first occurrence: walk items in input order. */
    int64_t *first_sorted = tmp, next = 0;
    memcpy(first_sorted, p->first, sizeof(int64_t) * (size_t)groups);
    for (int64_t g = 0; g < groups; g++)
      group_of_rank[g] = -1;
    int64_t *counts_sorted = order; /* order[] is no longer needed */
    memcpy(counts_sorted, p->counts, sizeof(int64_t) * (size_t)groups);
    for (int64_t j = 0; j < n; j++) {
      int64_t g = p->inverse[j];
      if (group_of_rank[g] < 0) {
        group_of_rank[g] = next;
        p->first[next] = first_sorted[g];
        p->counts[next] = counts_sorted[g];
        next++;
      }
      p->inverse[j] = group_of_rank[g];
    }
  }
  return MB_STATUS_OK;
}

static mb_status unique_infer(mb_op_ctx *ctx) {
  CHECK(mb__op_check_arity(ctx, 1, 1));
  MB_OP_NEED_DATA(ctx, 0);
  const mb_tensor *x = ctx->inputs[0];
  unique_plan p;
  CHECK(unique_plan_make(ctx, &p));
  int64_t dims[MB_MAX_RANK];
  if (p.axis < 0) {
    CHECK(mb__tensor_set_shape(ctx->outputs[0], x->dtype, 1, &p.n_unique,
                               ctx->err));
  } else {
    memcpy(dims, x->dims, sizeof(dims));
    dims[p.axis] = p.n_unique;
    CHECK(mb__tensor_set_shape(ctx->outputs[0], x->dtype, x->rank, dims,
                               ctx->err));
  }
  int64_t lens[4] = {0, p.n_unique, p.items, p.n_unique};
  for (int i = 1; i < 4; i++)
    if (mb__op_output(ctx, i) != NULL)
      CHECK(mb__tensor_set_shape(ctx->outputs[i], MB_DTYPE_INT64, 1, &lens[i],
                                 ctx->err));
  return MB_STATUS_OK;
}

static mb_status unique_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0];
  unique_plan p;
  CHECK(unique_plan_make(ctx, &p));
  mb_tensor *y = ctx->outputs[0];
  size_t es = mb_dtype_size(x->dtype);
  size_t block = (size_t)p.inner * es;
  /* block 0: an empty slice (a zero dim beside the axis), no data to copy */
  if (y != NULL && block > 0)
    for (int64_t o = 0; o < p.outer; o++)
      for (int64_t u = 0; u < p.n_unique; u++)
        memcpy((char *)y->data + (size_t)(o * p.n_unique + u) * block,
               (const char *)x->data +
                   (size_t)(o * p.items + p.first[u]) * block,
               block);
  const int64_t *src[4] = {NULL, p.first, p.inverse, p.counts};
  for (int i = 1; i < 4; i++) {
    mb_tensor *t = mb__op_output(ctx, i);
    if (t != NULL && t->nbytes > 0)
      memcpy(t->data, src[i], t->nbytes);
  }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Table                                                                    */
/* ------------------------------------------------------------------------ */

const mb_op_def mb__ops_tensor[] = {
    {"", "Gather", 1, gather_infer, gather_run},
    {"", "Gather", 11, gather_infer, gather_run},
    {"", "Gather", 13, gather_infer, gather_run},
    {"", "GatherElements", 11, gather_elements_infer, gather_elements_run},
    {"", "GatherElements", 13, gather_elements_infer, gather_elements_run},
    {"", "GatherND", 11, gather_nd_infer, gather_nd_run},
    {"", "GatherND", 12, gather_nd_infer, gather_nd_run},
    {"", "GatherND", 13, gather_nd_infer, gather_nd_run},
    {"", "Scatter", 9, scatter_elements_infer, scatter_elements_run},
    {"", "Scatter", 11, scatter_elements_infer, scatter_elements_run},
    {"", "ScatterElements", 11, scatter_elements_infer, scatter_elements_run},
    {"", "ScatterElements", 13, scatter_elements_infer, scatter_elements_run},
    {"", "ScatterElements", 16, scatter_elements_infer, scatter_elements_run},
    {"", "ScatterElements", 18, scatter_elements_infer, scatter_elements_run},
    {"", "ScatterND", 11, scatter_nd_infer, scatter_nd_run},
    {"", "ScatterND", 13, scatter_nd_infer, scatter_nd_run},
    {"", "ScatterND", 16, scatter_nd_infer, scatter_nd_run},
    {"", "ScatterND", 18, scatter_nd_infer, scatter_nd_run},
    {"", "Slice", 1, slice_infer, slice_run},
    {"", "Slice", 10, slice_infer, slice_run},
    {"", "Slice", 11, slice_infer, slice_run},
    {"", "Slice", 13, slice_infer, slice_run},
    {"", "Concat", 1, concat_infer, concat_run},
    {"", "Concat", 4, concat_infer, concat_run},
    {"", "Concat", 11, concat_infer, concat_run},
    {"", "Concat", 13, concat_infer, concat_run},
    {"", "Split", 1, split_infer, split_run},
    {"", "Split", 2, split_infer, split_run},
    {"", "Split", 11, split_infer, split_run},
    {"", "Split", 13, split_infer, split_run},
    {"", "Split", 18, split_infer, split_run},
    {"", "Tile", 6, tile_infer, tile_run},
    {"", "Tile", 13, tile_infer, tile_run},
    {"", "Pad", 2, pad_infer, pad_run},
    {"", "Pad", 11, pad_infer, pad_run},
    {"", "Pad", 13, pad_infer, pad_run},
    {"", "Pad", 18, pad_infer, pad_run},
    {"", "Pad", 19, pad_infer, pad_run},
    {"", "OneHot", 9, onehot_infer, onehot_run},
    {"", "OneHot", 11, onehot_infer, onehot_run},
    {"", "NonZero", 9, nonzero_infer, nonzero_run},
    {"", "NonZero", 13, nonzero_infer, nonzero_run},
    {"", "TopK", 1, topk_infer, topk_run},
    {"", "TopK", 10, topk_infer, topk_run},
    {"", "TopK", 11, topk_infer, topk_run},
    {"", "CumSum", 11, cumsum_infer, cumsum_run},
    {"", "CumSum", 14, cumsum_infer, cumsum_run},
    {"", "ReverseSequence", 10, reverse_sequence_infer, reverse_sequence_run},
    {"", "DepthToSpace", 1, depth_to_space_infer, depth_to_space_run},
    {"", "DepthToSpace", 11, depth_to_space_infer, depth_to_space_run},
    {"", "DepthToSpace", 13, depth_to_space_infer, depth_to_space_run},
    {"", "SpaceToDepth", 1, space_to_depth_infer, space_to_depth_run},
    {"", "SpaceToDepth", 13, space_to_depth_infer, space_to_depth_run},
    {"", "Compress", 9, compress_infer, compress_run},
    {"", "Compress", 11, compress_infer, compress_run},
    {"", "Unique", 11, unique_infer, unique_run},
};
MB_OP_TABLE_END(tensor);
