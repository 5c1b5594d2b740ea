/* Pooling: MaxPool (with optional Indices), AveragePool, LpPool, their
 * Global* forms, MaxUnpool and MaxRoiPool.
 *
 * Windowed pools compute in float32 (any float type, and int8/uint8 for
 * MaxPool, which float32 holds exactly). 1-D and 2-D pools run a 2-D loop
 * whose windows away from the borders skip the bounds checks; 3-D and up
 * take a generic N-D loop.
 *
 * Scratch slots: 0 input, 1 output, 2 ROIs (float views of non-float32
 * tensors). */
#include "ops/op.h"

#include <math.h>

#define POOL_MAX_SPATIAL (MB_MAX_RANK - 2)

typedef enum pool_kind { POOL_MAX, POOL_AVG, POOL_LP } pool_kind;

typedef struct pool_geom {
  int nsp;
  int64_t batch, channels;
  int64_t in[POOL_MAX_SPATIAL], out[POOL_MAX_SPATIAL];
  int64_t kernel[POOL_MAX_SPATIAL], stride[POOL_MAX_SPATIAL];
  int64_t dilation[POOL_MAX_SPATIAL];
  int64_t pad_begin[POOL_MAX_SPATIAL], pad_end[POOL_MAX_SPATIAL];
  int64_t in_size, out_size;
  bool count_include_pad;
  bool column_major_indices; /* MaxPool storage_order = 1 */
  float p;                   /* LpPool norm */
} pool_geom;

static const char *const auto_pad_names[] = {"NOTSET", "SAME_UPPER",
                                             "SAME_LOWER", "VALID"};
enum { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID };

/* Arity check plus output 0, which every operator here requires (a model
 * may name it "" and leave it out). */
static mb_status check_io(mb_op_ctx *ctx, int min_inputs, int max_inputs) {
  mb_status status = mb__op_check_arity(ctx, min_inputs, max_inputs);
  if (status)
    return status;
  if (!mb__op_output(ctx, 0))
    return mb__op_error(ctx, MB_STATUS_PARSE, "output 0 is missing");
  return MB_STATUS_OK;
}

static int64_t ceil_div(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}
static int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* The norm p of LpPool: an INT attribute since opset 2, a FLOAT before. */
static mb_status read_p(mb_op_ctx *ctx, float *p) {
  const mb_attr *a = mb__node_attr(ctx->node, "p");
  *p = 2.0f;
  if (a && a->type == MB_ATTR_INT)
    *p = (float)a->i;
  else if (a && a->type == MB_ATTR_FLOAT)
    *p = a->f;
  if (!(*p > 0.0f))
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "p = %g must be positive", (double)*p);
  return MB_STATUS_OK;
}

static mb_status check_input(mb_op_ctx *ctx, const mb_tensor *x,
                             bool allow_8bit) {
  char buf[96];
  if (x->rank < 3)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "input X has shape %s, expected [N, C, spatial...]",
                        mb__shape_str(x->rank, x->dims, buf, sizeof buf));
  if (!mb__dtype_is_float(x->dtype) &&
      !(allow_8bit &&
        (x->dtype == MB_DTYPE_INT8 || x->dtype == MB_DTYPE_UINT8)))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "input type %s is not supported",
                        mb_dtype_name(x->dtype));
  return MB_STATUS_OK;
}

static mb_status pool_geom_init(mb_op_ctx *ctx, pool_kind kind, pool_geom *g) {
  const mb_tensor *x = ctx->inputs[0];
  int64_t pads[2 * POOL_MAX_SPATIAL];
  mb_status status;
  memset(g, 0, sizeof *g);
  if ((status = check_input(ctx, x, kind == POOL_MAX)))
    return status;
  g->nsp = x->rank - 2;
  g->batch = x->dims[0];
  g->channels = x->dims[1];
  const int64_t *ks;
  if (mb__node_attr_ints(ctx->node, "kernel_shape", &ks) < 0)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "the kernel_shape attribute is required");
  if ((status =
           mb__op_attr_ints(ctx, "kernel_shape", g->nsp, 1, 1, g->kernel)) ||
      (status = mb__op_attr_ints(ctx, "strides", g->nsp, 1, 1, g->stride)) ||
      (status =
           mb__op_attr_ints(ctx, "dilations", g->nsp, 1, 1, g->dilation)) ||
      (status = mb__op_attr_ints(ctx, "pads", 2 * g->nsp, 0, 0, pads)))
    return status;
  const char *ap = mb__node_attr_string(ctx->node, "auto_pad", "NOTSET");
  int auto_pad = -1;
  for (int i = 0; i < (int)MB_ARRAY_COUNT(auto_pad_names); i++)
    if (strcmp(ap, auto_pad_names[i]) == 0)
      auto_pad = i;
  if (auto_pad < 0)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "auto_pad '%s' is not one of NOTSET, SAME_UPPER, "
                        "SAME_LOWER, VALID",
                        ap);
  bool ceil_mode = mb__node_attr_int(ctx->node, "ceil_mode", 0) != 0;
  g->count_include_pad =
      mb__node_attr_int(ctx->node, "count_include_pad", 0) != 0;
  g->column_major_indices =
      mb__node_attr_int(ctx->node, "storage_order", 0) == 1;
  if (kind == POOL_LP && (status = read_p(ctx, &g->p)))
    return status;
  g->in_size = g->out_size = 1;
  for (int d = 0; d < g->nsp; d++) {
    int64_t in = x->dims[2 + d], s = g->stride[d];
    int64_t extent = (g->kernel[d] - 1) * g->dilation[d] + 1;
    g->in[d] = in;
    if (auto_pad == PAD_NOTSET) {
      g->pad_begin[d] = pads[d];
      g->pad_end[d] = pads[g->nsp + d];
      int64_t span = in + pads[d] + pads[g->nsp + d] - extent;
      g->out[d] = (ceil_mode ? ceil_div(span, s) : floor_div(span, s)) + 1;
      /* A window may not start inside the end padding (PyTorch's rule,
       * adopted by ONNX): ceil_mode can otherwise add one. */
      if (ceil_mode && g->out[d] > 1 && (g->out[d] - 1) * s >= in + pads[d])
        g->out[d]--;
    } else if (auto_pad == PAD_VALID) {
      g->out[d] = floor_div(in - extent, s) + 1;
    } else {
      g->out[d] = ceil_div(in, s);
      int64_t total = MB_MAX(0, (g->out[d] - 1) * s + extent - in);
      int64_t small = total / 2, big = total - small;
      g->pad_begin[d] = auto_pad == PAD_SAME_UPPER ? small : big;
      g->pad_end[d] = auto_pad == PAD_SAME_UPPER ? big : small;
    }
    if (g->out[d] < 1 && in > 0)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "kernel extent %lld exceeds the padded input size "
                          "%lld in spatial dim %d",
                          (long long)extent,
                          (long long)(in + g->pad_begin[d] + g->pad_end[d]), d);
    if (g->out[d] < 0)
      g->out[d] = 0;
    g->in_size *= g->in[d];
    if (!mb__mul_i64(g->out_size, g->out[d], &g->out_size))
      return mb__op_error(ctx, MB_STATUS_OVERFLOW, "output size overflows");
  }
  return MB_STATUS_OK;
}

static mb_status set_output(mb_op_ctx *ctx, int index, mb_dtype dtype,
                            const pool_geom *g) {
  int64_t dims[MB_MAX_RANK];
  mb_tensor *y = mb__op_output(ctx, index);
  if (!y)
    return MB_STATUS_OK;
  dims[0] = g->batch;
  dims[1] = g->channels;
  for (int d = 0; d < g->nsp; d++)
    dims[2 + d] = g->out[d];
  return mb__tensor_set_shape(y, dtype, g->nsp + 2, dims, ctx->err);
}

/* ------------------------------------------------------------------------ */
/* Window reduction                                                          */
/* ------------------------------------------------------------------------ */

/* Accumulator of one window. `index` is the flat spatial index (row-major)
 * of the max. */
typedef struct pool_acc {
  float value;
  int64_t index;
  int64_t count;
} pool_acc;

static inline void acc_init(pool_acc *a, pool_kind kind) {
  a->value = kind == POOL_MAX ? -INFINITY : 0.0f;
  a->index = -1;
  a->count = 0;
}

static inline void acc_add(pool_acc *a, pool_kind kind, float v, int64_t idx,
                           float p) {
  switch (kind) {
  case POOL_MAX:
    if (v > a->value || a->index < 0) {
      a->value = v;
      a->index = idx;
    }
    break;
  case POOL_AVG:
    a->value += v;
    break;
  case POOL_LP:
    a->value += p == 2.0f ? v * v : powf(fabsf(v), p);
    break;
  }
  a->count++;
}

/* Number of taps of a window starting at `start` that fall within the
 * padded extent [-pad_begin, in + pad_end). */
static int64_t padded_taps(int64_t start, int64_t k, int64_t dil, int64_t in,
                           int64_t pb, int64_t pe) {
  int64_t n = 0;
  for (int64_t i = 0; i < k; i++) {
    int64_t pos = start + i * dil;
    n += pos >= -pb && pos < in + pe;
  }
  return n;
}

static inline float acc_result(const pool_acc *a, pool_kind kind,
                               int64_t divisor, float p) {
  switch (kind) {
  case POOL_MAX:
    return a->value;
  case POOL_AVG:
    return divisor > 0 ? a->value / (float)divisor : 0.0f;
  case POOL_LP:
    return p == 2.0f ? sqrtf(a->value) : powf(a->value, 1.0f / p);
  }
  return 0.0f;
}

/* Flat index of spatial position `row_major` in the layout ONNX asks of
 * MaxPool's Indices (column-major when storage_order = 1). */
static int64_t index_in_layout(const pool_geom *g, int64_t row_major) {
  if (!g->column_major_indices)
    return row_major;
  int64_t idx = 0, mul = 1;
  int64_t pos[POOL_MAX_SPATIAL];
  for (int d = g->nsp - 1; d >= 0; d--) {
    pos[d] = row_major % g->in[d];
    row_major /= g->in[d];
  }
  for (int d = 0; d < g->nsp; d++) {
    idx += pos[d] * mul;
    mul *= g->in[d];
  }
  return idx;
}

/* One plane, 1-D or 2-D (1-D has H = 1). */
static void pool_plane_2d(const pool_geom *g, pool_kind kind, const float *x,
                          float *y, int64_t *indices) {
  bool two = g->nsp == 2;
  int last = g->nsp - 1;
  int64_t ih = two ? g->in[0] : 1, oh_n = two ? g->out[0] : 1;
  int64_t kh = two ? g->kernel[0] : 1, sh = two ? g->stride[0] : 1;
  int64_t dh = two ? g->dilation[0] : 1, ph = two ? g->pad_begin[0] : 0;
  int64_t phe = two ? g->pad_end[0] : 0;
  int64_t iw = g->in[last], ow_n = g->out[last], kw = g->kernel[last];
  int64_t sw = g->stride[last], dw = g->dilation[last];
  int64_t pw = g->pad_begin[last], pwe = g->pad_end[last];
  int64_t ext_w = (kw - 1) * dw + 1;
  for (int64_t oh = 0; oh < oh_n; oh++) {
    int64_t h0 = oh * sh - ph;
    int64_t div_h =
        g->count_include_pad ? padded_taps(h0, kh, dh, ih, ph, phe) : 0;
    for (int64_t ow = 0; ow < ow_n; ow++) {
      int64_t w0 = ow * sw - pw;
      bool inside_w = w0 >= 0 && w0 + ext_w <= iw;
      pool_acc a;
      acc_init(&a, kind);
      for (int64_t i = 0; i < kh; i++) {
        int64_t r = h0 + i * dh;
        if (r < 0 || r >= ih)
          continue;
        const float *row = x + r * iw;
        if (inside_w) {
          for (int64_t j = 0, c = w0; j < kw; j++, c += dw)
            acc_add(&a, kind, row[c], r * iw + c, g->p);
        } else {
          for (int64_t j = 0, c = w0; j < kw; j++, c += dw)
            if (c >= 0 && c < iw)
              acc_add(&a, kind, row[c], r * iw + c, g->p);
        }
      }
      int64_t divisor = g->count_include_pad
                            ? div_h * padded_taps(w0, kw, dw, iw, pw, pwe)
                            : a.count;
      y[oh * ow_n + ow] = acc_result(&a, kind, divisor, g->p);
      if (indices)
        indices[oh * ow_n + ow] = index_in_layout(g, MB_MAX(a.index, 0));
    }
  }
}

/* MaxPool without Indices on one 1-D/2-D plane: the hot case (ResNet's
 * stem), with the window loop reduced to bare comparisons. */
static void max_plane_2d(const pool_geom *g, const float *x, float *y) {
  bool two = g->nsp == 2;
  int last = g->nsp - 1;
  int64_t ih = two ? g->in[0] : 1, oh_n = two ? g->out[0] : 1;
  int64_t kh = two ? g->kernel[0] : 1, sh = two ? g->stride[0] : 1;
  int64_t dh = two ? g->dilation[0] : 1, ph = two ? g->pad_begin[0] : 0;
  int64_t iw = g->in[last], ow_n = g->out[last], kw = g->kernel[last];
  int64_t sw = g->stride[last], dw = g->dilation[last];
  int64_t pw = g->pad_begin[last];
  for (int64_t oh = 0; oh < oh_n; oh++, y += ow_n) {
    int64_t h0 = oh * sh - ph;
    for (int64_t ow = 0; ow < ow_n; ow++) {
      int64_t w0 = ow * sw - pw;
      /* Clip the window's taps to the input once per output. */
      int64_t j0 = w0 >= 0 ? 0 : (-w0 + dw - 1) / dw;
      int64_t j1 = MB_MIN(kw, iw - w0 > 0 ? (iw - w0 - 1) / dw + 1 : 0);
      float m = -INFINITY;
      for (int64_t i = 0; i < kh; i++) {
        int64_t r = h0 + i * dh;
        if (r < 0 || r >= ih)
          continue;
        const float *row = x + r * iw + w0;
        for (int64_t j = j0; j < j1; j++) {
          float v = row[j * dw];
          m = v > m ? v : m;
        }
      }
      y[ow] = m;
    }
  }
}

/* One plane of any rank: walks output positions and window taps with
 * odometers. */
static void pool_plane_nd(const pool_geom *g, pool_kind kind, const float *x,
                          float *y, int64_t *indices) {
  int64_t o[POOL_MAX_SPATIAL] = {0}, k[POOL_MAX_SPATIAL];
  int nsp = g->nsp;
  for (int64_t op = 0; op < g->out_size; op++) {
    pool_acc a;
    int64_t divisor = 1;
    acc_init(&a, kind);
    for (int d = 0; d < nsp; d++) {
      k[d] = 0;
      if (g->count_include_pad)
        divisor *= padded_taps(o[d] * g->stride[d] - g->pad_begin[d],
                               g->kernel[d], g->dilation[d], g->in[d],
                               g->pad_begin[d], g->pad_end[d]);
    }
    for (;;) {
      int64_t idx = 0;
      bool inside = true;
      for (int d = 0; d < nsp; d++) {
        int64_t pos =
            o[d] * g->stride[d] - g->pad_begin[d] + k[d] * g->dilation[d];
        inside = inside && pos >= 0 && pos < g->in[d];
        idx = idx * g->in[d] + pos;
      }
      if (inside)
        acc_add(&a, kind, x[idx], idx, g->p);
      int d = nsp - 1;
      while (d >= 0 && ++k[d] == g->kernel[d])
        k[d--] = 0;
      if (d < 0)
        break;
    }
    y[op] =
        acc_result(&a, kind, g->count_include_pad ? divisor : a.count, g->p);
    if (indices)
      indices[op] = index_in_layout(g, MB_MAX(a.index, 0));
    for (int d = nsp - 1; d >= 0 && ++o[d] == g->out[d]; d--)
      o[d] = 0;
  }
}

/* ------------------------------------------------------------------------ */
/* MaxPool, AveragePool, LpPool                                              */
/* ------------------------------------------------------------------------ */

static mb_status pool_infer(mb_op_ctx *ctx, pool_kind kind) {
  pool_geom g;
  mb_status status = check_io(ctx, 1, 1);
  if (status || (status = pool_geom_init(ctx, kind, &g)))
    return status;
  /* Padding could give an empty window output cells to fill from nothing. */
  if (g.in_size == 0 && g.out_size > 0 && g.batch * g.channels > 0)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "input has an empty spatial extent");
  if ((status = set_output(ctx, 0, ctx->inputs[0]->dtype, &g)))
    return status;
  if (kind == POOL_MAX)
    return set_output(ctx, 1, MB_DTYPE_INT64, &g);
  return MB_STATUS_OK;
}

/* Planes [begin, end) of a windowed pool; planes are independent, so the
 * session's threads split them. */
typedef struct pool_job {
  const pool_geom *g;
  pool_kind kind;
  const float *x;
  float *y;
  int64_t *indices; /* NULL unless MaxPool's Indices output is used */
} pool_job;

static void pool_task(void *arg, int64_t begin, int64_t end) {
  const pool_job *j = arg;
  const pool_geom *g = j->g;
  for (int64_t plane = begin; plane < end; plane++) {
    const float *xp = j->x + plane * g->in_size;
    float *yp = j->y + plane * g->out_size;
    int64_t *ip = j->indices ? j->indices + plane * g->out_size : NULL;
    if (g->nsp <= 2 && j->kind == POOL_MAX && !ip)
      max_plane_2d(g, xp, yp);
    else if (g->nsp <= 2)
      pool_plane_2d(g, j->kind, xp, yp, ip);
    else
      pool_plane_nd(g, j->kind, xp, yp, ip);
    if (ip) /* Indices are flat over the whole N x C x spatial input. */
      for (int64_t i = 0; i < g->out_size; i++)
        ip[i] += plane * g->in_size;
  }
}

static mb_status pool_run(mb_op_ctx *ctx, pool_kind kind) {
  pool_geom g;
  const mb_tensor *xt = ctx->inputs[0];
  mb_tensor *yt = ctx->outputs[0], *it = mb__op_output(ctx, 1);
  mb_status status = pool_geom_init(ctx, kind, &g);
  if (status)
    return status;
  if (g.out_size == 0 || g.batch * g.channels == 0)
    return MB_STATUS_OK;
  const float *x = mb__op_as_f32(ctx, xt, 0);
  float *y = mb__op_f32_dest(ctx, yt, 1);
  if ((!x && xt->numel) || !y)
    return MB_STATUS_OUT_OF_MEMORY;
  int64_t *indices = it ? it->data : NULL;
  int64_t window = 1;
  for (int d = 0; d < g.nsp; d++)
    window *= g.kernel[d];
  pool_job job = {&g, kind, x, y, indices};
  mb__parallel_for(mb__op_pool(ctx, yt->numel * window), g.batch * g.channels,
                   pool_task, &job);
  mb__op_store_f32(yt, y);
  return MB_STATUS_OK;
}

static mb_status max_pool_infer(mb_op_ctx *ctx) {
  return pool_infer(ctx, POOL_MAX);
}
static mb_status max_pool_run(mb_op_ctx *ctx) {
  return pool_run(ctx, POOL_MAX);
}
static mb_status avg_pool_infer(mb_op_ctx *ctx) {
  return pool_infer(ctx, POOL_AVG);
}
static mb_status avg_pool_run(mb_op_ctx *ctx) {
  return pool_run(ctx, POOL_AVG);
}
static mb_status lp_pool_infer(mb_op_ctx *ctx) {
  return pool_infer(ctx, POOL_LP);
}
static mb_status lp_pool_run(mb_op_ctx *ctx) {
  return pool_run(ctx, POOL_LP);
}

/* ------------------------------------------------------------------------ */
/* Global pools                                                              */
/* ------------------------------------------------------------------------ */

static mb_status global_infer(mb_op_ctx *ctx, pool_kind kind) {
  int64_t dims[MB_MAX_RANK];
  float p;
  mb_status status = check_io(ctx, 1, 1);
  const mb_tensor *x;
  if (status || (status = check_input(ctx, (x = ctx->inputs[0]), false)))
    return status;
  if (kind == POOL_LP && (status = read_p(ctx, &p)))
    return status;
  dims[0] = x->dims[0];
  dims[1] = x->dims[1];
  for (int d = 2; d < x->rank; d++) {
    /* A window over nothing has no maximum or mean. */
    if (x->dims[d] == 0 && x->dims[0] * x->dims[1] > 0)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "input has an empty spatial extent");
    dims[d] = 1;
  }
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, x->rank, dims,
                              ctx->err);
}

static mb_status global_run(mb_op_ctx *ctx, pool_kind kind) {
  const mb_tensor *xt = ctx->inputs[0];
  mb_tensor *yt = ctx->outputs[0];
  float p = 2.0f;
  mb_status status;
  if (kind == POOL_LP && (status = read_p(ctx, &p)))
    return status;
  if (yt->numel == 0)
    return MB_STATUS_OK;
  int64_t size = yt->numel ? xt->numel / yt->numel : 0;
  const float *x = mb__op_as_f32(ctx, xt, 0);
  float *y = mb__op_f32_dest(ctx, yt, 1);
  if ((!x && xt->numel) || !y)
    return MB_STATUS_OUT_OF_MEMORY;
  for (int64_t plane = 0; plane < yt->numel; plane++) {
    const float *xp = x + plane * size;
    pool_acc a;
    acc_init(&a, kind);
    if (kind == POOL_AVG) {
      /* Sum in double: a plane can hold thousands of values. */
      double sum = 0.0;
      for (int64_t i = 0; i < size; i++)
        sum += xp[i];
      y[plane] = size ? (float)(sum / (double)size) : 0.0f;
      continue;
    }
    for (int64_t i = 0; i < size; i++)
      acc_add(&a, kind, xp[i], i, p);
    y[plane] = size ? acc_result(&a, kind, size, p) : 0.0f;
  }
  mb__op_store_f32(yt, y);
  return MB_STATUS_OK;
}

static mb_status global_avg_infer(mb_op_ctx *ctx) {
  return global_infer(ctx, POOL_AVG);
}
static mb_status global_avg_run(mb_op_ctx *ctx) {
  return global_run(ctx, POOL_AVG);
}
static mb_status global_max_infer(mb_op_ctx *ctx) {
  return global_infer(ctx, POOL_MAX);
}
static mb_status global_max_run(mb_op_ctx *ctx) {
  return global_run(ctx, POOL_MAX);
}
static mb_status global_lp_infer(mb_op_ctx *ctx) {
  return global_infer(ctx, POOL_LP);
}
static mb_status global_lp_run(mb_op_ctx *ctx) {
  return global_run(ctx, POOL_LP);
}

/* ------------------------------------------------------------------------ */
/* MaxUnpool                                                                 */
/* ------------------------------------------------------------------------ */

/* natural: the size a MaxPool with these attributes would have pooled from,
 * which the indices refer to; dims: the output shape, which is the
 * output_shape input when given, else natural. */
static mb_status unpool_shape(mb_op_ctx *ctx, int64_t *natural, int64_t *dims) {
  const mb_tensor *x = ctx->inputs[0], *ind = ctx->inputs[1];
  const mb_tensor *shape = mb__op_input(ctx, 2);
  int64_t kernel[POOL_MAX_SPATIAL], strides[POOL_MAX_SPATIAL];
  int64_t pads[2 * POOL_MAX_SPATIAL];
  char xs[96], is[96];
  mb_status status = check_input(ctx, x, false);
  if (status)
    return status;
  int nsp = x->rank - 2;
  if (ind->dtype != MB_DTYPE_INT64 || ind->rank != x->rank ||
      memcmp(ind->dims, x->dims, sizeof(int64_t) * (size_t)x->rank) != 0)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "indices I (%s %s) must be int64 shaped like X %s",
                        mb_dtype_name(ind->dtype),
                        mb__shape_str(ind->rank, ind->dims, is, sizeof is),
                        mb__shape_str(x->rank, x->dims, xs, sizeof xs));
  const int64_t *ks;
  if (mb__node_attr_ints(ctx->node, "kernel_shape", &ks) < 0)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "the kernel_shape attribute is required");
  if ((status = mb__op_attr_ints(ctx, "kernel_shape", nsp, 1, 1, kernel)) ||
      (status = mb__op_attr_ints(ctx, "strides", nsp, 1, 1, strides)) ||
      (status = mb__op_attr_ints(ctx, "pads", 2 * nsp, 0, 0, pads)))
    return status;
  natural[0] = dims[0] = x->dims[0];
  natural[1] = dims[1] = x->dims[1];
  for (int d = 0; d < nsp; d++) {
    natural[2 + d] =
        (x->dims[2 + d] - 1) * strides[d] + kernel[d] - pads[d] - pads[nsp + d];
    if (natural[2 + d] < 0)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "pads exceed the unpooled size in spatial dim %d", d);
    dims[2 + d] = natural[2 + d];
  }
  if (!shape)
    return MB_STATUS_OK;
  MB_OP_NEED_DATA(ctx, 2);
  if (shape->numel != x->rank)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "output_shape has %lld values for a rank-%d input",
                        (long long)shape->numel, x->rank);
  if ((status = mb__op_read_ints(ctx, shape, dims, x->rank)))
    return status;
  for (int d = 0; d < x->rank; d++)
    if (dims[d] < natural[d])
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "output_shape %s is smaller than the unpooled "
                          "shape %s",
                          mb__shape_str(x->rank, dims, xs, sizeof xs),
                          mb__shape_str(x->rank, natural, is, sizeof is));
  return MB_STATUS_OK;
}

static mb_status max_unpool_infer(mb_op_ctx *ctx) {
  int64_t natural[MB_MAX_RANK], dims[MB_MAX_RANK];
  mb_status status = check_io(ctx, 2, 3);
  if (status || (status = unpool_shape(ctx, natural, dims)))
    return status;
  return mb__tensor_set_shape(ctx->outputs[0], ctx->inputs[0]->dtype,
                              ctx->inputs[0]->rank, dims, ctx->err);
}

static mb_status max_unpool_run(mb_op_ctx *ctx) {
  int64_t natural[MB_MAX_RANK], dims[MB_MAX_RANK];
  const mb_tensor *xt = ctx->inputs[0], *it = ctx->inputs[1];
  mb_tensor *yt = ctx->outputs[0];
  mb_status status = unpool_shape(ctx, natural, dims);
  if (status)
    return status;
  const float *x = mb__op_as_f32(ctx, xt, 0);
  float *y = mb__op_f32_dest(ctx, yt, 1);
  if ((!x && xt->numel) || (!y && yt->numel))
    return MB_STATUS_OUT_OF_MEMORY;
  if (yt->numel)
    memset(y, 0, sizeof(float) * (size_t)yt->numel);
  int64_t natural_numel = 1;
  for (int d = 0; d < xt->rank; d++)
    natural_numel *= natural[d];
  const int64_t *ind = it->data;
  for (int64_t i = 0; i < xt->numel; i++) {
    if (ind[i] < 0 || ind[i] >= natural_numel)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "index %lld at position %lld is outside the "
                          "%lld-element unpooled tensor",
                          (long long)ind[i], (long long)i,
                          (long long)natural_numel);
    /* Indices address the natural shape; a larger output_shape keeps each
     * value at the same coordinates. */
    int64_t rest = ind[i], pos = 0, mul = 1;
    for (int d = xt->rank - 1; d >= 0; d--) {
      pos += (rest % natural[d]) * mul;
      rest /= natural[d];
      mul *= dims[d];
    }
    y[pos] = x[i];
  }
  if (yt->numel)
    mb__op_store_f32(yt, y);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* MaxRoiPool                                                                */
/* ------------------------------------------------------------------------ */

/* Fast R-CNN's ROI max pooling, with Caffe's rounding (as ONNX Runtime). */
static mb_status roi_check(mb_op_ctx *ctx, int64_t *pooled) {
  const mb_tensor *x = ctx->inputs[0], *rois = ctx->inputs[1];
  char buf[96];
  mb_status status = check_input(ctx, x, false);
  if (status)
    return status;
  if (x->rank != 4)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "input X has shape %s, expected [N, C, H, W]",
                        mb__shape_str(x->rank, x->dims, buf, sizeof buf));
  if (rois->dtype != x->dtype || rois->rank != 2 || rois->dims[1] != 5)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "rois must be [num_rois, 5] of the input's type, got "
                        "%s %s",
                        mb_dtype_name(rois->dtype),
                        mb__shape_str(rois->rank, rois->dims, buf, sizeof buf));
  const int64_t *ps;
  if (mb__node_attr_ints(ctx->node, "pooled_shape", &ps) < 0)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "the pooled_shape attribute is required");
  return mb__op_attr_ints(ctx, "pooled_shape", 2, 1, 1, pooled);
}

static mb_status max_roi_pool_infer(mb_op_ctx *ctx) {
  int64_t pooled[2];
  mb_status status = check_io(ctx, 2, 2);
  if (status || (status = roi_check(ctx, pooled)))
    return status;
  int64_t dims[4] = {ctx->inputs[1]->dims[0], ctx->inputs[0]->dims[1],
                     pooled[0], pooled[1]};
  return mb__tensor_set_shape(ctx->outputs[0], ctx->inputs[0]->dtype, 4, dims,
                              ctx->err);
}

/* An ROI corner in pixels; NaN and huge values clamp instead of hitting an
 * undefined float-to-int conversion. */
static int64_t roi_coord(float v, float scale) {
  float p = roundf(v * scale);
  if (!(p > -1e9f))
    return -1000000000;
  return p < 1e9f ? (int64_t)p : 1000000000;
}

/* [start, end) of pooled bin `i` of `bins` over an ROI of `size` starting at
 * `start`, clipped to [0, limit). */
static void roi_bin(int64_t i, int64_t bins, int64_t size, int64_t start,
                    int64_t limit, int64_t *lo, int64_t *hi) {
  float bin = (float)size / (float)bins;
  int64_t a = (int64_t)floorf((float)i * bin) + start;
  int64_t b = (int64_t)ceilf((float)(i + 1) * bin) + start;
  *lo = MB_MIN(MB_MAX(a, 0), limit);
  *hi = MB_MIN(MB_MAX(b, 0), limit);
}

static mb_status max_roi_pool_run(mb_op_ctx *ctx) {
  int64_t pooled[2];
  mb_status status = roi_check(ctx, pooled);
  const mb_tensor *xt = ctx->inputs[0], *rt = ctx->inputs[1];
  mb_tensor *yt = ctx->outputs[0];
  if (status || yt->numel == 0)
    return status;
  float scale = mb__node_attr_float(ctx->node, "spatial_scale", 1.0f);
  const float *x = mb__op_as_f32(ctx, xt, 0);
  const float *rois = mb__op_as_f32(ctx, rt, 2);
  float *y = mb__op_f32_dest(ctx, yt, 1);
  if ((!x && xt->numel) || !rois || !y)
    return MB_STATUS_OUT_OF_MEMORY;
  int64_t channels = xt->dims[1], h = xt->dims[2], w = xt->dims[3];
  for (int64_t r = 0; r < rt->dims[0]; r++) {
    const float *roi = rois + r * 5;
    if (!(roi[0] >= 0.0f && roi[0] < (float)xt->dims[0]))
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "roi %lld names batch %g of %lld", (long long)r,
                          (double)roi[0], (long long)xt->dims[0]);
    int64_t batch = (int64_t)roi[0];
    int64_t x0 = roi_coord(roi[1], scale), y0 = roi_coord(roi[2], scale);
    int64_t x1 = roi_coord(roi[3], scale), y1 = roi_coord(roi[4], scale);
    int64_t roi_h = MB_MAX(y1 - y0 + 1, 1), roi_w = MB_MAX(x1 - x0 + 1, 1);
    for (int64_t c = 0; c < channels; c++) {
      const float *plane = x + (batch * channels + c) * h * w;
      float *out = y + (r * channels + c) * pooled[0] * pooled[1];
      for (int64_t ph = 0; ph < pooled[0]; ph++) {
        int64_t h0, h1;
        roi_bin(ph, pooled[0], roi_h, y0, h, &h0, &h1);
        for (int64_t pw = 0; pw < pooled[1]; pw++) {
          int64_t w0, w1;
          roi_bin(pw, pooled[1], roi_w, x0, w, &w0, &w1);
          float m = h1 > h0 && w1 > w0 ? -INFINITY : 0.0f;
          for (int64_t i = h0; i < h1; i++)
            for (int64_t j = w0; j < w1; j++)
              m = plane[i * w + j] > m ? plane[i * w + j] : m;
          out[ph * pooled[1] + pw] = m;
        }
      }
    }
  }
  mb__op_store_f32(yt, y);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */

const mb_op_def mb__ops_pool[] = {
    {"", "MaxPool", 1, max_pool_infer, max_pool_run, 0},
    {"", "AveragePool", 1, avg_pool_infer, avg_pool_run, 0},
    {"", "LpPool", 1, lp_pool_infer, lp_pool_run, 0},
    {"", "GlobalAveragePool", 1, global_avg_infer, global_avg_run, 0},
    {"", "GlobalMaxPool", 1, global_max_infer, global_max_run, 0},
    {"", "GlobalLpPool", 1, global_lp_infer, global_lp_run, 0},
    {"", "MaxUnpool", 9, max_unpool_infer, max_unpool_run, 0},
    {"", "MaxRoiPool", 1, max_roi_pool_infer, max_roi_pool_run, 0},
};
MB_OP_TABLE_END(pool);
