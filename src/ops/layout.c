/* Layout operators: Slice, Concat, Split, Tile, Pad, ReverseSequence,
 * DepthToSpace, SpaceToDepth.
 *
 * Kernels copy whole contiguous inner blocks with memcpy wherever the layout
 * allows (or hand a strided view to mb__copy_strided and mb__transpose, in
 * shape.c) and fall back to per-element work only where the operator needs
 * it (the margins Pad fills). Helpers shared with the other
 * data-movement families are in movement.h. */
#include "ops/movement.h"

/* ------------------------------------------------------------------------ */
/* Small shared pieces                                                      */
/* ------------------------------------------------------------------------ */

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
/* Table                                                                    */
/* ------------------------------------------------------------------------ */

const mb_op_def mb__ops_layout[] = {
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
    {"", "ReverseSequence", 10, reverse_sequence_infer, reverse_sequence_run},
    {"", "DepthToSpace", 1, depth_to_space_infer, depth_to_space_run},
    {"", "DepthToSpace", 11, depth_to_space_infer, depth_to_space_run},
    {"", "DepthToSpace", 13, depth_to_space_infer, depth_to_space_run},
    {"", "SpaceToDepth", 1, space_to_depth_infer, space_to_depth_run},
    {"", "SpaceToDepth", 13, space_to_depth_infer, space_to_depth_run},
};
MB_OP_TABLE_END(layout);
