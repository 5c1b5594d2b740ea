/* Selection and sorting operators: NonZero, TopK, CumSum, Compress, Unique.
 *
 * Kernels copy whole contiguous inner blocks with memcpy wherever the layout
 * allows and fall back to per-element work only where the operator needs it
 * (sorting, running sums, tests of each element). Helpers shared with the
 * other data-movement families are in movement.h. */
#include "ops/movement.h"

#include <math.h>

/* ------------------------------------------------------------------------ */
/* Small shared pieces                                                      */
/* ------------------------------------------------------------------------ */

static mb_status read_int_scalar(mb_op_ctx *ctx, const mb_tensor *t,
                                 const char *what, int64_t *value_out) {
  if (t->numel != 1)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "%s must have one element, got %lld", what,
                        (long long)t->numel);
  return mb__op_read_ints(ctx, t, value_out, 1);
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

/* Element i as an int64 key that sorts in the element's own order: a
 * uint64 above INT64_MAX would read as negative, so its top bit flips. */
static int64_t int_key(const mb_tensor *t, int64_t i) {
  int64_t v = mb__tensor_get_i64(t, i);
  if (t->dtype == MB_DTYPE_UINT64)
    return (int64_t)((uint64_t)v ^ (UINT64_C(1) << 63));
  return v;
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
          ((int64_t *)keys)[j] = int_key(x, base + j * inner);
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
          ((int64_t *)keys)[dst] = int_key(x, src);
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

const mb_op_def mb__ops_selection[] = {
    {"", "NonZero", 9, nonzero_infer, nonzero_run},
    {"", "NonZero", 13, nonzero_infer, nonzero_run},
    {"", "TopK", 1, topk_infer, topk_run},
    {"", "TopK", 10, topk_infer, topk_run},
    {"", "TopK", 11, topk_infer, topk_run},
    {"", "CumSum", 11, cumsum_infer, cumsum_run},
    {"", "CumSum", 14, cumsum_infer, cumsum_run},
    {"", "Compress", 9, compress_infer, compress_run},
    {"", "Compress", 11, compress_infer, compress_run},
    {"", "Unique", 11, unique_infer, unique_run},
};
MB_OP_TABLE_END(selection);
