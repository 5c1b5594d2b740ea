/* Indexing operators: Gather, GatherElements, GatherND, Scatter,
 * ScatterElements, ScatterND, OneHot.
 *
 * Kernels copy whole contiguous inner blocks with memcpy wherever the layout
 * allows and fall back to per-element work only where the operator needs it
 * (index lookups, scatter reductions). Helpers shared with the other
 * data-movement families are in movement.h. */
#include "ops/movement.h"

/* ------------------------------------------------------------------------ */
/* Small shared pieces                                                      */
/* ------------------------------------------------------------------------ */

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
  if (mb__dtype_is_int(out->dtype)) {
    /* Every integer type in integer arithmetic, wrapping like C and ONNX
     * Runtime: through a double, uint64 values beyond 2^53 lost their low
     * bits and the narrow types saturated. */
    bool is_unsigned =
        out->dtype == MB_DTYPE_UINT8 || out->dtype == MB_DTYPE_UINT16 ||
        out->dtype == MB_DTYPE_UINT32 || out->dtype == MB_DTYPE_UINT64;
    uint64_t a = (uint64_t)mb__tensor_get_i64(out, oi);
    uint64_t b = (uint64_t)mb__tensor_get_i64(upd, ui);
    bool a_above = is_unsigned ? a > b : (int64_t)a > (int64_t)b;
    uint64_t r = red == REDUCE_ADD   ? a + b
                 : red == REDUCE_MUL ? a * b
                 : red == REDUCE_MAX ? (a_above ? a : b)
                                     : (a_above ? b : a);
    mb__tensor_set_i64(out, oi, (int64_t)r);
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
/* OneHot                                                                   */
/* ------------------------------------------------------------------------ */

/* Element i of an integer tensor, exactly (a uint64 above INT64_MAX, out
 * of every range here, saturates rather than turning negative). Through a
 * double, int64 values beyond 2^53 would lose their low bits. */
static int64_t onehot_int(const mb_tensor *t, int64_t i) {
  if (t->dtype == MB_DTYPE_UINT64 &&
      ((const uint64_t *)t->data)[i] > (uint64_t)INT64_MAX)
    return INT64_MAX;
  return mb__tensor_get_i64(t, i);
}

static mb_status onehot_depth(mb_op_ctx *ctx, int64_t *depth_out) {
  const mb_tensor *t = ctx->inputs[1];
  if (t->numel != 1)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "depth must be a scalar");
  int64_t depth = 0;
  if (mb__dtype_is_float(t->dtype)) { /* cast to int64, as ONNX says */
    double d = mb__tensor_get_f64(t, 0);
    if (!(d >= 1) || d > (double)(INT64_C(1) << 40))
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "depth %g is invalid", d);
    depth = (int64_t)d;
  } else {
    depth = onehot_int(t, 0);
  }
  if (depth < 1 || depth > (INT64_C(1) << 40))
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "depth %lld is invalid", (long long)depth);
  *depth_out = depth;
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
      int64_t at = o * inner + i, k;
      if (mb__dtype_is_float(ind->dtype)) {
        double v = mb__tensor_get_f64(ind, at);
        if (!(v > -(double)depth - 1 && v < (double)depth))
          continue; /* also NaN */
        k = (int64_t)v;
      } else {
        k = onehot_int(ind, at);
      }
      if (k < 0 && k >= -depth)
        k += depth;
      if (k < 0 || k >= depth)
        continue;
      memcpy((char *)y->data + ((o * depth + k) * inner + i) * es, on_value,
             (size_t)es);
    }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Table                                                                    */
/* ------------------------------------------------------------------------ */

const mb_op_def mb__ops_indexing[] = {
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
    {"", "OneHot", 9, onehot_infer, onehot_run},
    {"", "OneHot", 11, onehot_infer, onehot_run},
};
MB_OP_TABLE_END(indexing);
