/* Convolutions: Conv, ConvTranspose, ConvInteger and QLinearConv over any
 * number of spatial dimensions.
 *
 * Float convolutions take one of three paths, chosen per node:
 *   - pointwise (1x1, stride 1, no padding): one sgemm per image and group,
 *     straight on the input, which already is the [C, H*W] matrix;
 *   - depthwise (one input channel per group, 1-D or 2-D): a direct kernel
 *     over a zero-padded copy of each plane, vectorised over output columns,
 *     because im2col + a gemm with M = 1 wastes most of the gemm;
 *   - everything else: im2col into scratch memory, in bands of output rows,
 *     each followed by one sgemm (per image and group).
 * The bias is written into the output first and the sgemm accumulates onto
 * it (beta = 1), so it costs no separate pass.
 *
 * sgemm, im2col and the depthwise kernel run on the session's thread pool.
 * im2col and the depthwise kernel compute each element on one thread
 * exactly as on one, so only sgemm's rounding varies with the thread count
 * (see blas.c).
 *
 * Scratch slots: 0 input, 1 weights, 2 output (float views of non-float32
 * tensors), 3 bias followed by the im2col workspace or the padded-plane
 * buffers (one per thread). */
#include "ops/op.h"

#include <math.h>

/* ------------------------------------------------------------------------ */
/* Geometry                                                                  */
/* ------------------------------------------------------------------------ */

typedef enum conv_auto_pad {
  AUTO_PAD_NOTSET,
  AUTO_PAD_SAME_UPPER,
  AUTO_PAD_SAME_LOWER,
  AUTO_PAD_VALID,
} conv_auto_pad;

static const struct {
  const char *name;
  conv_auto_pad value;
} auto_pad_names[] = {
    {"NOTSET", AUTO_PAD_NOTSET},
    {"SAME_UPPER", AUTO_PAD_SAME_UPPER},
    {"SAME_LOWER", AUTO_PAD_SAME_LOWER},
    {"VALID", AUTO_PAD_VALID},
};

#define CONV_MAX_SPATIAL (MB_MAX_RANK - 2)

typedef struct conv_geom {
  int nsp; /* number of spatial dimensions */
  int64_t batch, c_in, c_out, group;
  int64_t c_in_group, c_out_group; /* channels per group */
  int64_t in[CONV_MAX_SPATIAL], out[CONV_MAX_SPATIAL];
  int64_t kernel[CONV_MAX_SPATIAL], stride[CONV_MAX_SPATIAL];
  int64_t dilation[CONV_MAX_SPATIAL];
  /* Padding before / after each spatial dim. ConvTranspose may have
   * negative values (output_shape larger than the natural one). */
  int64_t pad_begin[CONV_MAX_SPATIAL], pad_end[CONV_MAX_SPATIAL];
  int64_t in_size, out_size, kernel_size; /* products over spatial dims */
} conv_geom;

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

static mb_status read_auto_pad(mb_op_ctx *ctx, conv_auto_pad *out) {
  const char *s = mb__node_attr_string(ctx->node, "auto_pad", "NOTSET");
  for (size_t i = 0; i < MB_ARRAY_COUNT(auto_pad_names); i++) {
    if (strcmp(s, auto_pad_names[i].name) == 0) {
      *out = auto_pad_names[i].value;
      return MB_STATUS_OK;
    }
  }
  return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                      "auto_pad '%s' is not one of NOTSET, SAME_UPPER, "
                      "SAME_LOWER, VALID",
                      s);
}

/* Bound of a size given by output_shape (and of any tensor dim). */
#define SIZE_MAX_DIM ((int64_t)1 << 40)

/* Shared checks of X and W and the attributes common to Conv and
 * ConvTranspose; fills everything but out/pads. */
static mb_status geom_common(mb_op_ctx *ctx, const mb_tensor *x,
                             const mb_tensor *w, bool transpose, conv_geom *g) {
  char xs[96], ws[96];
  mb_status status;
  memset(g, 0, sizeof *g);
  if (x->rank < 3)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "input X has shape %s, expected [N, C, spatial...]",
                        mb__shape_str(x->rank, x->dims, xs, sizeof xs));
  if (w->rank != x->rank)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "weights W %s and input X %s differ in rank",
                        mb__shape_str(w->rank, w->dims, ws, sizeof ws),
                        mb__shape_str(x->rank, x->dims, xs, sizeof xs));
  g->nsp = x->rank - 2;
  g->batch = x->dims[0];
  g->c_in = x->dims[1];
  g->group = mb__node_attr_int(ctx->node, "group", 1);
  if (g->group < 1 || g->group > MB_OP_ATTR_MAX)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "group %lld is outside [1, %lld]", (long long)g->group,
                        (long long)MB_OP_ATTR_MAX);
  if (transpose) {
    if (w->dims[0] != g->c_in || g->c_in % g->group != 0)
      return mb__op_error(
          ctx, MB_STATUS_SHAPE,
          "weights W %s do not match input X %s with group %lld",
          mb__shape_str(w->rank, w->dims, ws, sizeof ws),
          mb__shape_str(x->rank, x->dims, xs, sizeof xs), (long long)g->group);
    g->c_out = w->dims[1] * g->group;
  } else {
    g->c_out = w->dims[0];
    if (g->c_in % g->group != 0 || w->dims[1] != g->c_in / g->group ||
        g->c_out % g->group != 0)
      return mb__op_error(
          ctx, MB_STATUS_SHAPE,
          "weights W %s do not match input X %s with group %lld",
          mb__shape_str(w->rank, w->dims, ws, sizeof ws),
          mb__shape_str(x->rank, x->dims, xs, sizeof xs), (long long)g->group);
  }
  g->c_in_group = g->c_in / g->group;
  g->c_out_group = g->c_out / g->group;
  g->in_size = g->kernel_size = 1;
  for (int d = 0; d < g->nsp; d++) {
    g->in[d] = x->dims[2 + d];
    g->kernel[d] = w->dims[2 + d];
    g->in_size *= g->in[d];
    g->kernel_size *= g->kernel[d];
  }
  /* kernel_shape is redundant with W; a model that disagrees is broken. */
  const int64_t *ks;
  int64_t nks = mb__node_attr_ints(ctx->node, "kernel_shape", &ks);
  if (nks >= 0) {
    if (nks != g->nsp)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "kernel_shape has %lld entries for a %d-D input",
                          (long long)nks, x->rank);
    for (int d = 0; d < g->nsp; d++)
      if (ks[d] != g->kernel[d])
        return mb__op_error(ctx, MB_STATUS_SHAPE,
                            "kernel_shape disagrees with weights W %s",
                            mb__shape_str(w->rank, w->dims, ws, sizeof ws));
  }
  if ((status = mb__op_attr_ints(ctx, "strides", g->nsp, 1, 1, g->stride)) ||
      (status = mb__op_attr_ints(ctx, "dilations", g->nsp, 1, 1, g->dilation)))
    return status;
  return MB_STATUS_OK;
}

static mb_status conv_geom_init(mb_op_ctx *ctx, const mb_tensor *x,
                                const mb_tensor *w, conv_geom *g) {
  conv_auto_pad auto_pad;
  int64_t pads[2 * CONV_MAX_SPATIAL];
  mb_status status;
  if ((status = geom_common(ctx, x, w, false, g)) ||
      (status = read_auto_pad(ctx, &auto_pad)) ||
      (status = mb__op_attr_ints(ctx, "pads", 2 * g->nsp, 0, 0, pads)))
    return status;
  g->out_size = 1;
  for (int d = 0; d < g->nsp; d++) {
    int64_t extent = (g->kernel[d] - 1) * g->dilation[d] + 1;
    int64_t in = g->in[d], s = g->stride[d];
    switch (auto_pad) {
    case AUTO_PAD_NOTSET:
      g->pad_begin[d] = pads[d];
      g->pad_end[d] = pads[g->nsp + d];
      g->out[d] = floor_div(in + pads[d] + pads[g->nsp + d] - extent, s) + 1;
      break;
    case AUTO_PAD_VALID:
      g->out[d] = floor_div(in - extent, s) + 1;
      break;
    case AUTO_PAD_SAME_UPPER:
    case AUTO_PAD_SAME_LOWER: {
      g->out[d] = ceil_div(in, s);
      int64_t total = MB_MAX(0, (g->out[d] - 1) * s + extent - in);
      int64_t small = total / 2, big = total - small;
      g->pad_begin[d] = auto_pad == AUTO_PAD_SAME_UPPER ? small : big;
      g->pad_end[d] = auto_pad == AUTO_PAD_SAME_UPPER ? big : small;
      break;
    }
    }
    if (g->out[d] < 1 && in > 0)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "kernel extent %lld exceeds the padded input size "
                          "%lld in spatial dim %d",
                          (long long)extent,
                          (long long)(in + g->pad_begin[d] + g->pad_end[d]), d);
    if (g->out[d] < 0)
      g->out[d] = 0;
    if (!mb__mul_i64(g->out_size, g->out[d], &g->out_size))
      return mb__op_error(ctx, MB_STATUS_OVERFLOW, "output size overflows");
  }
  return MB_STATUS_OK;
}

static mb_status convt_geom_init(mb_op_ctx *ctx, const mb_tensor *x,
                                 const mb_tensor *w, conv_geom *g) {
  conv_auto_pad auto_pad;
  int64_t pads[2 * CONV_MAX_SPATIAL], out_pad[CONV_MAX_SPATIAL];
  mb_status status;
  if ((status = geom_common(ctx, x, w, true, g)) ||
      (status = read_auto_pad(ctx, &auto_pad)) ||
      (status = mb__op_attr_ints(ctx, "pads", 2 * g->nsp, 0, 0, pads)) ||
      (status = mb__op_attr_ints(ctx, "output_padding", g->nsp, 0, 0, out_pad)))
    return status;
  const int64_t *shape;
  int64_t n_shape = mb__node_attr_ints(ctx->node, "output_shape", &shape);
  /* Some exporters write the full [N, C, spatial...] shape. */
  if (n_shape == g->nsp + 2)
    shape += 2, n_shape -= 2;
  if (n_shape >= 0 && n_shape != g->nsp)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "output_shape has %lld entries for %d spatial dims",
                        (long long)n_shape, g->nsp);
  for (int d = 0; d < n_shape; d++)
    if (shape[d] < 0 || shape[d] > SIZE_MAX_DIM)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "output_shape[%d] = %lld is out of range", d,
                          (long long)shape[d]);
  g->out_size = 1;
  for (int d = 0; d < g->nsp; d++) {
    int64_t extent = (g->kernel[d] - 1) * g->dilation[d] + 1;
    int64_t full = g->stride[d] * (g->in[d] - 1) + out_pad[d] + extent;
    if (n_shape >= 0 || auto_pad == AUTO_PAD_SAME_UPPER ||
        auto_pad == AUTO_PAD_SAME_LOWER) {
      /* The target size decides the padding, split as the spec says with
       * floor division: a negative total (output_shape larger than the
       * natural size) then grows the output at the end. */
      int64_t target = n_shape >= 0 ? shape[d] : g->in[d] * g->stride[d];
      int64_t total = full - target;
      int64_t half = floor_div(total, 2);
      g->pad_begin[d] = auto_pad == AUTO_PAD_SAME_UPPER ? half : total - half;
      g->pad_end[d] = total - g->pad_begin[d];
      g->out[d] = target;
    } else if (auto_pad == AUTO_PAD_VALID) {
      g->out[d] = full;
    } else {
      g->pad_begin[d] = pads[d];
      g->pad_end[d] = pads[g->nsp + d];
      g->out[d] = full - pads[d] - pads[g->nsp + d];
    }
    if (g->out[d] < 0)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "output size %lld in spatial dim %d is negative",
                          (long long)g->out[d], d);
    if (!mb__mul_i64(g->out_size, g->out[d], &g->out_size))
      return mb__op_error(ctx, MB_STATUS_OVERFLOW, "output size overflows");
  }
  return MB_STATUS_OK;
}

static mb_status geom_set_output(mb_op_ctx *ctx, const conv_geom *g,
                                 mb_dtype dtype) {
  int64_t dims[MB_MAX_RANK];
  mb_tensor *y = mb__op_output(ctx, 0);
  if (!y)
    return MB_STATUS_OK;
  dims[0] = g->batch;
  dims[1] = g->c_out;
  for (int d = 0; d < g->nsp; d++)
    dims[2 + d] = g->out[d];
  return mb__tensor_set_shape(y, dtype, g->nsp + 2, dims, ctx->err);
}

/* im2col runs in bands of output rows (all spatial dims but the last)
 * whose column block stays near this size: the workspace stays small for
 * large images (a 3x3 conv of 64 channels at 1024x1024 would need 2.4 GB
 * at once), and the band is still in cache when sgemm packs it. Each band
 * costs one more packing of the weights, so a band is never narrower than
 * the weights are tall. Measured on ResNet-18 layers: no slower than one
 * whole im2col. */
#define IM2COL_BAND_BYTES ((int64_t)1 << 19)

/* Output rows per im2col band. */
static int64_t im2col_band_rows(const conv_geom *g) {
  int64_t ow_n = MB_MAX(g->out[g->nsp - 1], 1);
  int64_t rows = g->out_size / ow_n;
  int64_t k = MB_MAX(g->c_in_group * g->kernel_size, 1);
  int64_t cols =
      MB_MAX(IM2COL_BAND_BYTES / (k * (int64_t)sizeof(float)), g->c_out_group);
  int64_t band = MB_MAX(cols / ow_n, 1);
  return MB_MIN(band, rows);
}

/* Bytes of an im2col block [c_in_group * kernel, cols] of 4-byte elements,
 * with overflow checks. */
static mb_status im2col_bytes(mb_op_ctx *ctx, const conv_geom *g, int64_t cols,
                              size_t *bytes) {
  size_t n;
  if (!mb__mul_size((size_t)g->c_in_group, (size_t)g->kernel_size, &n) ||
      !mb__mul_size(n, (size_t)cols, &n) ||
      !mb__mul_size(n, sizeof(float), bytes))
    return mb__op_error(ctx, MB_STATUS_OVERFLOW,
                        "im2col workspace size overflows");
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* 128-bit vectors (GCC/Clang vector extensions; native on every x86-64 and  */
/* arm64, so no runtime dispatch is needed). Loads and stores go through     */
/* memcpy: unaligned, and free of type-punning.                              */
/* ------------------------------------------------------------------------ */

#define VEC4 4

#if defined(__GNUC__)
typedef float vec4 __attribute__((vector_size(VEC4 * sizeof(float))));
static inline vec4 vec4_load(const float *p) {
  vec4 v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline void vec4_store(float *p, vec4 v) {
  memcpy(p, &v, sizeof v);
}
#if defined(__clang__)
#define VEC4_EVEN(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6)
#define VEC4_ODD(a, b) __builtin_shufflevector(a, b, 1, 3, 5, 7)
#else
typedef int32_t vec4_mask __attribute__((vector_size(VEC4 * sizeof(int32_t))));
#define VEC4_EVEN(a, b) __builtin_shuffle(a, b, (vec4_mask){0, 2, 4, 6})
#define VEC4_ODD(a, b) __builtin_shuffle(a, b, (vec4_mask){1, 3, 5, 7})
#endif
#endif

/* ------------------------------------------------------------------------ */
/* im2col / col2im                                                           */
/* ------------------------------------------------------------------------ */

/* Splits a flat kernel index into per-dimension offsets. */
static void kernel_offsets(const conv_geom *g, int64_t kidx, int64_t *kk) {
  for (int d = g->nsp - 1; d >= 0; d--) {
    kk[d] = kidx % g->kernel[d];
    kidx /= g->kernel[d];
  }
}

/* Range [lo, hi) of positions i in [0, n_pos) with 0 <= i*s + off < limit. */
static void valid_range(int64_t off, int64_t s, int64_t limit, int64_t n_pos,
                        int64_t *lo, int64_t *hi) {
  int64_t l = off >= 0 ? 0 : ceil_div(-off, s);
  int64_t h = limit - 1 - off >= 0 ? floor_div(limit - 1 - off, s) + 1 : 0;
  *lo = MB_MIN(l, n_pos);
  *hi = MB_MAX(*lo, MB_MIN(h, n_pos));
}

/* For output row `orow` (an index over all spatial dims but the last) and
 * kernel offsets kk, the flat index of the matching input row, or -1 when it
 * lies in the padding. */
static int64_t input_row(const conv_geom *g, int64_t orow, const int64_t *kk) {
  int last = g->nsp - 1;
  int64_t idx = 0, mul = 1;
  for (int d = last - 1; d >= 0; d--) {
    int64_t o = orow % g->out[d];
    orow /= g->out[d];
    int64_t i = o * g->stride[d] + kk[d] * g->dilation[d] - g->pad_begin[d];
    if (i < 0 || i >= g->in[d])
      return -1;
    idx += i * mul;
    mul *= g->in[d];
  }
  return idx;
}

/* dst[o] = row[o*s + off] for o in [lo, hi), zero elsewhere in [0, n).
 * Elements move as opaque 4-byte values (memcpy and vector moves only). */
static void copy_row(float *dst, const float *row, int64_t off, int64_t n,
                     int64_t lo, int64_t hi, int64_t s) {
  memset(dst, 0, sizeof(float) * (size_t)lo);
  if (s == 1) {
    memcpy(dst + lo, row + lo + off, sizeof(float) * (size_t)(hi - lo));
  } else {
    int64_t o = lo;
#if defined(__GNUC__)
    /* Stride 2 (every downsampling conv): deinterleave with shuffles. The
     * loads reach row[2o + off + 7], which stays below the last element
     * the scalar loop reads, row[2(hi - 1) + off]. */
    if (s == 2)
      for (; o + VEC4 < hi; o += VEC4) {
        vec4 a = vec4_load(row + 2 * o + off);
        vec4 b = vec4_load(row + 2 * o + off + VEC4);
        vec4_store(dst + o, VEC4_EVEN(a, b));
      }
#endif
    for (; o < hi; o++)
      memcpy(dst + o, row + o * s + off, sizeof(float));
  }
  memset(dst + hi, 0, sizeof(float) * (size_t)(n - hi));
}

/* Output rows [r0, r1) of the 2-D im2col block [out_h, out_w] of one input
 * plane and kernel offset (kh, kw). With stride 1 and out_w == in_w (3x3
 * "same" convs), the block is one shifted copy of the plane: a single
 * memcpy, then the columns that wrapped around a row edge are zeroed. */
static void im2col_plane_2d(const conv_geom *g, const float *x,
                            const int64_t *kk, int64_t r0, int64_t r1,
                            float *dst) {
  int64_t oh_n = g->out[0], ow_n = g->out[1], h_n = g->in[0], w_n = g->in[1];
  int64_t sw = g->stride[1];
  int64_t row_off = kk[0] * g->dilation[0] - g->pad_begin[0];
  int64_t off = kk[1] * g->dilation[1] - g->pad_begin[1];
  int64_t r_lo, r_hi, lo, hi;
  valid_range(row_off, g->stride[0], h_n, oh_n, &r_lo, &r_hi);
  valid_range(off, sw, w_n, ow_n, &lo, &hi);
  r_lo = MB_MIN(MB_MAX(r_lo, r0), r1);
  r_hi = MB_MAX(MB_MIN(r_hi, r1), r_lo);
  memset(dst, 0, sizeof(float) * (size_t)((r_lo - r0) * ow_n));
  memset(dst + (r_hi - r0) * ow_n, 0,
         sizeof(float) * (size_t)((r1 - r_hi) * ow_n));
  if (sw == 1 && g->stride[0] == 1 && ow_n == w_n) {
    if (hi > lo && r_hi > r_lo) {
      /* dst[d - r0 * ow_n] = x[d + row_off * w_n + off] over the span */
      int64_t a = r_lo * ow_n + lo, b = (r_hi - 1) * ow_n + hi;
      memcpy(dst + a - r0 * ow_n, x + a + row_off * w_n + off,
             sizeof(float) * (size_t)(b - a));
    }
    for (int64_t r = r_lo; r < r_hi; r++) {
      float *d = dst + (r - r0) * ow_n;
      memset(d, 0, sizeof(float) * (size_t)lo);
      memset(d + hi, 0, sizeof(float) * (size_t)(ow_n - hi));
    }
    return;
  }
  for (int64_t r = r_lo; r < r_hi; r++)
    copy_row(dst + (r - r0) * ow_n, x + (r * g->stride[0] + row_off) * w_n, off,
             ow_n, lo, hi, sw);
}

/* Output rows [r0, r1) (indices over all spatial dims but the last) of the
 * im2col matrix of one group's Cg input planes: col [Cg*K, (r1-r0)*out_w],
 * one row per (channel, kernel offset), one column per output position.
 * Only matrix rows [j0, j1) are written, so threads can split the rows.
 * Elements move as opaque 4-byte values, so the integer convolutions use it
 * on int32 data too. */
static void im2col_rows(const conv_geom *g, const float *x, int64_t r0,
                        int64_t r1, int64_t j0, int64_t j1, float *col) {
  int last = g->nsp - 1;
  int64_t ow_n = g->out[last], w_n = g->in[last], s = g->stride[last];
  int64_t cols = (r1 - r0) * ow_n;
  int64_t kk[CONV_MAX_SPATIAL];
  for (int64_t j = j0; j < j1; j++) {
    int64_t c = j / g->kernel_size, k = j % g->kernel_size;
    const float *xc = x + c * g->in_size;
    float *dst = col + j * cols;
    kernel_offsets(g, k, kk);
    if (g->nsp == 2) {
      im2col_plane_2d(g, xc, kk, r0, r1, dst);
      continue;
    }
    int64_t off = kk[last] * g->dilation[last] - g->pad_begin[last];
    int64_t lo, hi;
    valid_range(off, s, w_n, ow_n, &lo, &hi);
    for (int64_t r = r0; r < r1; r++, dst += ow_n) {
      int64_t in_row = input_row(g, r, kk);
      if (in_row < 0)
        memset(dst, 0, sizeof(float) * (size_t)ow_n);
      else
        copy_row(dst, xc + in_row * w_n, off, ow_n, lo, hi, s);
    }
  }
}

static void im2col(const conv_geom *g, const float *x, int64_t r0, int64_t r1,
                   float *col) {
  im2col_rows(g, x, r0, r1, 0, g->c_in_group * g->kernel_size, col);
}

typedef struct im2col_job {
  const conv_geom *g;
  const float *x;
  int64_t r0, r1;
  float *col;
} im2col_job;

static void im2col_task(void *arg, int64_t j0, int64_t j1) {
  const im2col_job *job = arg;
  im2col_rows(job->g, job->x, job->r0, job->r1, j0, j1, job->col);
}

/* For ConvTranspose: scatter-adds col [Mg*K, in_size] (one row per output
 * channel and kernel offset, one column per input position) into the
 * group's Mg output planes. Here g->in / g->out keep their ConvTranspose
 * meaning: the input is the small side. */
static void col2im_f32(const conv_geom *g, const float *col, float *y) {
  int last = g->nsp - 1;
  int64_t iw_n = g->in[last], ow_n = g->out[last], s = g->stride[last];
  int64_t rows = g->in_size / MB_MAX(iw_n, 1);
  int64_t kk[CONV_MAX_SPATIAL];
  for (int64_t m = 0; m < g->c_out_group; m++) {
    float *ym = y + m * g->out_size;
    for (int64_t k = 0; k < g->kernel_size; k++) {
      const float *src = col + (m * g->kernel_size + k) * g->in_size;
      kernel_offsets(g, k, kk);
      int64_t off = kk[last] * g->dilation[last] - g->pad_begin[last];
      int64_t lo, hi;
      valid_range(off, s, ow_n, iw_n, &lo, &hi);
      for (int64_t r = 0; r < rows; r++, src += iw_n) {
        /* Map input row r to its output row through the kernel offset. */
        int64_t rr = r, idx = 0, mul = 1;
        bool inside = true;
        for (int d = last - 1; d >= 0; d--) {
          int64_t i = rr % g->in[d];
          rr /= g->in[d];
          int64_t o =
              i * g->stride[d] + kk[d] * g->dilation[d] - g->pad_begin[d];
          if (o < 0 || o >= g->out[d]) {
            inside = false;
            break;
          }
          idx += o * mul;
          mul *= g->out[d];
        }
        if (!inside)
          continue;
        float *dst = ym + idx * ow_n;
        for (int64_t i = lo; i < hi; i++)
          dst[i * s + off] += src[i];
      }
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Depthwise direct kernel                                                   */
/* ------------------------------------------------------------------------ */

#define DW_MAX_KERNEL 64 /* taps; larger kernels take the im2col path */

/* 2-D view of a depthwise conv (1-D gets H = 1). */
typedef struct dw_plan {
  int64_t ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw;
  /* Layout of the padded plane: rows of `sw` phases, phase p holding the
   * padded columns p, p+sw, p+2sw... so every tap reads a contiguous run. */
  int64_t rows, phase_len, row_stride;
  bool direct; /* no padding and stride 1: read the input plane itself */
  int64_t tap_col[DW_MAX_KERNEL]; /* column offset of tap kw in a row */
} dw_plan;

static bool dw_eligible(const conv_geom *g) {
  return g->c_in_group == 1 && g->nsp <= 2 && g->kernel_size <= DW_MAX_KERNEL &&
         g->out_size > 0;
}

static void dw_plan_init(const conv_geom *g, dw_plan *p) {
  int two = g->nsp == 2;
  p->ih = two ? g->in[0] : 1;
  p->oh = two ? g->out[0] : 1;
  p->kh = two ? g->kernel[0] : 1;
  p->sh = two ? g->stride[0] : 1;
  p->dh = two ? g->dilation[0] : 1;
  p->ph = two ? g->pad_begin[0] : 0;
  p->iw = g->in[g->nsp - 1];
  p->ow = g->out[g->nsp - 1];
  p->kw = g->kernel[g->nsp - 1];
  p->sw = g->stride[g->nsp - 1];
  p->dw = g->dilation[g->nsp - 1];
  p->pw = g->pad_begin[g->nsp - 1];
  p->rows = (p->oh - 1) * p->sh + (p->kh - 1) * p->dh + 1;
  int64_t cols = (p->ow - 1) * p->sw + (p->kw - 1) * p->dw + 1;
  /* VEC4 columns of slack let the last, partial vector of a row load
   * whole vectors in bounds (see dw_plane); a whole number of vectors per
   * phase lets dw_pad_plane split phases with vector stores. */
  p->phase_len = (ceil_div(cols, p->sw) + 2 * VEC4 - 1) / VEC4 * VEC4;
  p->row_stride = p->sw * p->phase_len;
  p->direct = p->ph == 0 && p->pw == 0 && p->sw == 1 && p->rows <= p->ih &&
              cols <= p->iw;
  if (p->direct)
    p->row_stride = p->iw;
  for (int64_t k = 0; k < p->kw; k++) {
    int64_t c = k * p->dw;
    p->tap_col[k] = (c % p->sw) * p->phase_len + c / p->sw;
  }
}

/* The padded plane plus one padded row of staging space. */
static size_t dw_plane_floats(const dw_plan *p) {
  return p->direct ? 0 : (size_t)((p->rows + 1) * p->row_stride);
}

/* Copies plane x into the zero-padded, phase-split layout. Each row is
 * first padded contiguously (straight into place when the stride is 1),
 * then split into its phases. */
static void dw_pad_plane(const dw_plan *p, const float *x, float *plane) {
  int64_t len = p->row_stride; /* sw * phase_len padded columns */
  int64_t lead = MB_MIN(p->pw, len);
  int64_t n_copy = MB_MAX(0, MB_MIN(p->iw, len - lead));
  float *staging = plane + p->rows * p->row_stride;
  for (int64_t r = 0; r < p->rows; r++) {
    float *dst = plane + r * p->row_stride;
    int64_t ir = r - p->ph;
    if (ir < 0 || ir >= p->ih) {
      memset(dst, 0, sizeof(float) * (size_t)len);
      continue;
    }
    float *t = p->sw == 1 ? dst : staging;
    memset(t, 0, sizeof(float) * (size_t)lead);
    memcpy(t + lead, x + ir * p->iw, sizeof(float) * (size_t)n_copy);
    memset(t + lead + n_copy, 0, sizeof(float) * (size_t)(len - lead - n_copy));
    if (p->sw == 1)
      continue;
#if defined(__GNUC__)
    if (p->sw == 2) {
      for (int64_t j = 0; j < p->phase_len; j += VEC4) {
        vec4 a = vec4_load(t + 2 * j), b = vec4_load(t + 2 * j + VEC4);
        vec4_store(dst + j, VEC4_EVEN(a, b));
        vec4_store(dst + p->phase_len + j, VEC4_ODD(a, b));
      }
      continue;
    }
#endif
    for (int64_t ph = 0; ph < p->sw; ph++)
      for (int64_t j = 0; j < p->phase_len; j++)
        dst[ph * p->phase_len + j] = t[ph + p->sw * j];
  }
}

/* One output row of any kernel size: y = bias + sum over taps of
 * w * shifted rows. */
static void dw_row(const dw_plan *p, const float *const *rows, const float *w,
                   float bias, float *y) {
  const int64_t kw = p->kw;
  int64_t ow = 0;
#if defined(__GNUC__)
  /* Four vectors per step: independent accumulation chains, and each
   * weight broadcast serves 16 outputs. */
  for (; ow + 4 * VEC4 <= p->ow; ow += 4 * VEC4) {
    vec4 acc0 = (vec4){0} + bias, acc1 = acc0, acc2 = acc0, acc3 = acc0;
    const float *wk = w;
    for (int64_t kh = 0; kh < p->kh; kh++) {
      const float *row = rows[kh] + ow;
      for (int64_t k = 0; k < kw; k++) {
        const float *src = row + p->tap_col[k];
        float wv = *wk++;
        acc0 += wv * vec4_load(src);
        acc1 += wv * vec4_load(src + VEC4);
        acc2 += wv * vec4_load(src + 2 * VEC4);
        acc3 += wv * vec4_load(src + 3 * VEC4);
      }
    }
    vec4_store(y + ow, acc0);
    vec4_store(y + ow + VEC4, acc1);
    vec4_store(y + ow + 2 * VEC4, acc2);
    vec4_store(y + ow + 3 * VEC4, acc3);
  }
  /* The padded plane has slack columns, so the last, partial vector can be
   * computed whole and only its first lanes kept. */
  int64_t end = p->direct ? p->ow / VEC4 * VEC4 : p->ow;
  for (; ow < end; ow += VEC4) {
    vec4 acc = (vec4){0} + bias;
    const float *wk = w;
    for (int64_t kh = 0; kh < p->kh; kh++) {
      const float *row = rows[kh] + ow;
      for (int64_t k = 0; k < kw; k++)
        acc += *wk++ * vec4_load(row + p->tap_col[k]);
    }
    if (ow + VEC4 <= p->ow)
      vec4_store(y + ow, acc);
    else
      memcpy(y + ow, &acc, sizeof(float) * (size_t)(p->ow - ow));
  }
#endif
  for (; ow < p->ow; ow++) {
    float acc = bias;
    const float *wk = w;
    for (int64_t kh = 0; kh < p->kh; kh++)
      for (int64_t k = 0; k < kw; k++)
        acc += *wk++ * rows[kh][ow + p->tap_col[k]];
    y[ow] = acc;
  }
}

#if defined(__GNUC__)
/* 3x3, the depthwise kernel of MobileNets: all nine weights stay in
 * registers, and no tap loop is left to run. */
static void dw_plane_3x3(const dw_plan *p, const float *plane, const float *w,
                         float bias, float *y) {
  const vec4 w0 = (vec4){0} + w[0], w1 = (vec4){0} + w[1],
             w2 = (vec4){0} + w[2], w3 = (vec4){0} + w[3],
             w4 = (vec4){0} + w[4], w5 = (vec4){0} + w[5],
             w6 = (vec4){0} + w[6], w7 = (vec4){0} + w[7],
             w8 = (vec4){0} + w[8], b = (vec4){0} + bias;
  const int64_t t0 = p->tap_col[0], t1 = p->tap_col[1], t2 = p->tap_col[2];
  int64_t end = p->direct ? p->ow / VEC4 * VEC4 : p->ow;
#define DW_TAPS(r, wa, wb, wc, o)                                              \
  (wa * vec4_load(r + t0 + (o)) + wb * vec4_load(r + t1 + (o)) +               \
   wc * vec4_load(r + t2 + (o)))
  for (int64_t oh = 0; oh < p->oh; oh++, y += p->ow) {
    const float *r0 = plane + oh * p->sh * p->row_stride;
    const float *r1 = r0 + p->dh * p->row_stride;
    const float *r2 = r1 + p->dh * p->row_stride;
    int64_t ow = 0;
    for (; ow + 2 * VEC4 <= p->ow; ow += 2 * VEC4) {
      vec4 a0 = b + DW_TAPS(r0, w0, w1, w2, ow);
      vec4 a1 = b + DW_TAPS(r0, w0, w1, w2, ow + VEC4);
      a0 += DW_TAPS(r1, w3, w4, w5, ow);
      a1 += DW_TAPS(r1, w3, w4, w5, ow + VEC4);
      a0 += DW_TAPS(r2, w6, w7, w8, ow);
      a1 += DW_TAPS(r2, w6, w7, w8, ow + VEC4);
      vec4_store(y + ow, a0);
      vec4_store(y + ow + VEC4, a1);
    }
    for (; ow < end; ow += VEC4) {
      vec4 a = b + DW_TAPS(r0, w0, w1, w2, ow) + DW_TAPS(r1, w3, w4, w5, ow) +
               DW_TAPS(r2, w6, w7, w8, ow);
      if (ow + VEC4 <= p->ow)
        vec4_store(y + ow, a);
      else /* slack columns: keep the valid lanes */
        memcpy(y + ow, &a, sizeof(float) * (size_t)(p->ow - ow));
    }
    for (; ow < p->ow; ow++)
      y[ow] = bias + w[0] * r0[ow + t0] + w[1] * r0[ow + t1] +
              w[2] * r0[ow + t2] + w[3] * r1[ow + t0] + w[4] * r1[ow + t1] +
              w[5] * r1[ow + t2] + w[6] * r2[ow + t0] + w[7] * r2[ow + t1] +
              w[8] * r2[ow + t2];
  }
#undef DW_TAPS
}
#endif

/* One output plane. */
static void dw_plane(const dw_plan *p, const float *plane, const float *w,
                     float bias, float *y) {
  const float *rows[DW_MAX_KERNEL];
#if defined(__GNUC__)
  if (p->kh == 3 && p->kw == 3) {
    dw_plane_3x3(p, plane, w, bias, y);
    return;
  }
#endif
  for (int64_t oh = 0; oh < p->oh; oh++, y += p->ow) {
    for (int64_t kh = 0; kh < p->kh; kh++)
      rows[kh] = plane + (oh * p->sh + kh * p->dh) * p->row_stride;
    dw_row(p, rows, w, bias, y);
  }
}

/* ------------------------------------------------------------------------ */
/* Conv                                                                      */
/* ------------------------------------------------------------------------ */

static mb_status check_float_inputs(mb_op_ctx *ctx, const mb_tensor *x,
                                    const mb_tensor *w, const mb_tensor *b,
                                    int64_t c_out) {
  if (!mb__dtype_is_float(x->dtype))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "input type %s is not supported (float types only)",
                        mb_dtype_name(x->dtype));
  if (w->dtype != x->dtype || (b && b->dtype != x->dtype))
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "inputs differ in type: X %s, W %s%s%s",
                        mb_dtype_name(x->dtype), mb_dtype_name(w->dtype),
                        b ? ", B " : "", b ? mb_dtype_name(b->dtype) : "");
  if (b && (b->rank != 1 || b->dims[0] != c_out))
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "bias B has %lld values for %lld output channels",
                        (long long)b->numel, (long long)c_out);
  return MB_STATUS_OK;
}

static mb_status conv_infer(mb_op_ctx *ctx) {
  conv_geom g;
  mb_status status = check_io(ctx, 2, 3);
  if (status)
    return status;
  const mb_tensor *x = ctx->inputs[0], *w = ctx->inputs[1];
  const mb_tensor *b = mb__op_input(ctx, 2);
  if ((status = conv_geom_init(ctx, x, w, &g)) ||
      (status = check_float_inputs(ctx, x, w, b, g.c_out)))
    return status;
  /* Padding can give an empty input a non-empty output: every window would
   * read only padding, which no exporter produces; refuse it plainly. */
  if ((x->numel == 0 || w->numel == 0) && g.batch * g.c_out * g.out_size > 0)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "empty input or weights for a non-empty output");
  return geom_set_output(ctx, &g, x->dtype);
}

/* Float views of X, W and Y and a float bias (NULL when absent) placed at
 * the start of slot 3; *work_offset is where the slot's workspace starts. */
typedef struct float_views {
  const float *x, *w, *b;
  float *y;
  size_t work_offset; /* bytes */
} float_views;

static mb_status float_views_init(mb_op_ctx *ctx, const mb_tensor *x,
                                  const mb_tensor *w, const mb_tensor *b,
                                  mb_tensor *y, size_t work_bytes,
                                  float_views *v) {
  size_t bias_bytes = b ? ((size_t)b->numel * sizeof(float) + 63) / 64 * 64 : 0;
  size_t total;
  if (!mb__add_size(bias_bytes, work_bytes, &total))
    return mb__op_error(ctx, MB_STATUS_OVERFLOW, "workspace size overflows");
  /* These fail only on OOM; empty tensors may have NULL data. */
  v->x = mb__op_as_f32(ctx, x, 0);
  v->w = mb__op_as_f32(ctx, w, 1);
  v->y = mb__op_f32_dest(ctx, y, 2);
  if ((!v->x && x->numel) || (!v->w && w->numel) || !v->y)
    return MB_STATUS_OUT_OF_MEMORY;
  v->b = NULL;
  v->work_offset = bias_bytes;
  if (total == 0)
    return MB_STATUS_OK;
  char *slot = mb__op_scratch(ctx, 3, total);
  if (!slot)
    return MB_STATUS_OUT_OF_MEMORY;
  if (b) {
    float *bias = (float *)slot;
    if (b->dtype == MB_DTYPE_FLOAT)
      memcpy(bias, b->data, sizeof(float) * (size_t)b->numel);
    else if (b->dtype == MB_DTYPE_FLOAT16)
      for (int64_t i = 0; i < b->numel; i++)
        bias[i] = mb__f16_to_f32(((const uint16_t *)b->data)[i]);
    else
      for (int64_t i = 0; i < b->numel; i++)
        bias[i] = (float)mb__tensor_get_f64(b, i);
    v->b = bias;
  }
  return MB_STATUS_OK;
}

/* Sets each of `channels` planes of `size` floats to its bias, or zero. */
static void fill_bias(float *y, const float *bias, int64_t channels,
                      int64_t size) {
  for (int64_t c = 0; c < channels; c++) {
    float v = bias ? bias[c] : 0.0f;
    float *p = y + c * size;
    for (int64_t i = 0; i < size; i++)
      p[i] = v;
  }
}

static bool is_pointwise(const conv_geom *g) {
  for (int d = 0; d < g->nsp; d++)
    if (g->kernel[d] != 1 || g->stride[d] != 1 || g->pad_begin[d] != 0 ||
        g->pad_end[d] != 0)
      return false;
  return true;
}

/* Planes [i0, i1) of the batch * channels input planes of a depthwise
 * conv. plane_buf: the padded-plane buffer, NULL for a direct plan. */
static void conv_depthwise(const conv_geom *g, const dw_plan *p,
                           const float_views *v, float *plane_buf, int64_t i0,
                           int64_t i1) {
  for (int64_t i = i0; i < i1; i++) {
    int64_t n = i / g->c_in, c = i % g->c_in;
    const float *plane = v->x + i * g->in_size;
    if (!p->direct) {
      dw_pad_plane(p, plane, plane_buf);
      plane = plane_buf;
    }
    for (int64_t m = 0; m < g->c_out_group; m++) {
      int64_t oc = c * g->c_out_group + m;
      dw_plane(p, plane, v->w + oc * g->kernel_size, v->b ? v->b[oc] : 0.0f,
               v->y + (n * g->c_out + oc) * g->out_size);
    }
  }
}

/* Depthwise convs run no sgemm, so their planes are split over the pool:
 * task t of `tasks` (one per thread) runs an equal share of the planes with
 * its own padded-plane buffer. */
typedef struct dw_job {
  const conv_geom *g;
  const dw_plan *p;
  const float_views *v;
  float *bufs; /* tasks buffers of buf_floats, or NULL */
  int64_t buf_floats, tasks;
} dw_job;

/* Floats per task's padded-plane buffer: whole cache lines, so that the
 * threads never write the same line. */
static int64_t dw_buf_floats(const dw_plan *p) {
  return ((int64_t)dw_plane_floats(p) + 15) / 16 * 16;
}

static void dw_task(void *arg, int64_t t0, int64_t t1) {
  const dw_job *j = arg;
  int64_t planes = j->g->batch * j->g->c_in;
  for (int64_t t = t0; t < t1; t++)
    conv_depthwise(j->g, j->p, j->v,
                   j->bufs ? j->bufs + t * j->buf_floats : NULL,
                   planes * t / j->tasks, planes * (t + 1) / j->tasks);
}

static void conv_gemm(const conv_geom *g, const float_views *v, float *col,
                      mb_threadpool *pool) {
  int64_t k = g->c_in_group * g->kernel_size;
  int64_t ow_n = g->out[g->nsp - 1], rows = g->out_size / MB_MAX(ow_n, 1);
  int64_t band = col ? im2col_band_rows(g) : rows;
  for (int64_t n = 0; n < g->batch; n++) {
    for (int64_t grp = 0; grp < g->group; grp++) {
      const float *x = v->x + (n * g->c_in + grp * g->c_in_group) * g->in_size;
      const float *w = v->w + grp * g->c_out_group * k;
      float *y = v->y + (n * g->c_out + grp * g->c_out_group) * g->out_size;
      const float *b = v->b ? v->b + grp * g->c_out_group : NULL;
      if (b)
        fill_bias(y, b, g->c_out_group, g->out_size);
      for (int64_t r0 = 0; r0 < rows; r0 += band) {
        int64_t r1 = MB_MIN(rows, r0 + band), cols = (r1 - r0) * ow_n;
        const float *rhs = x; /* pointwise: the input is the matrix */
        if (col) {
          /* Every im2col matrix row is an independent copy. */
          im2col_job job = {g, x, r0, r1, col};
          mb__parallel_for(cols * k >= MB_OP_PARALLEL_MIN_WORK ? pool : NULL, k,
                           im2col_task, &job);
          rhs = col;
        }
        mb__sgemm(pool, false, false, g->c_out_group, cols, k, 1.0f, w, k, rhs,
                  col ? cols : g->out_size, b ? 1.0f : 0.0f, y + r0 * ow_n,
                  g->out_size);
      }
    }
  }
}

static mb_status conv_run(mb_op_ctx *ctx) {
  conv_geom g;
  float_views v;
  dw_plan plan = {0};
  size_t work = 0;
  const mb_tensor *x = ctx->inputs[0], *w = ctx->inputs[1];
  const mb_tensor *b = mb__op_input(ctx, 2);
  mb_tensor *y = ctx->outputs[0];
  mb_status status = conv_geom_init(ctx, x, w, &g);
  if (status)
    return status;
  if (y->numel == 0)
    return MB_STATUS_OK;
  bool depthwise = dw_eligible(&g), pointwise = is_pointwise(&g);
  mb_threadpool *dw_pool = NULL;
  int64_t dw_tasks = 1;
  if (depthwise) {
    dw_plan_init(&g, &plan);
    dw_pool = mb__op_pool(ctx, y->numel * g.kernel_size);
    dw_tasks =
        MB_MIN((int64_t)mb__threadpool_threads(dw_pool), g.batch * g.c_in);
    work = (size_t)(dw_tasks * dw_buf_floats(&plan)) * sizeof(float);
  } else if (!pointwise &&
             (status = im2col_bytes(
                  ctx, &g, im2col_band_rows(&g) * g.out[g.nsp - 1], &work))) {
    return status;
  }
  if ((status = float_views_init(ctx, x, w, b, y, work, &v)))
    return status;
  float *workspace =
      work ? (float *)((char *)ctx->scratch[3] + v.work_offset) : NULL;
  if (depthwise) {
    dw_job job = {&g, &plan, &v, workspace, dw_buf_floats(&plan), dw_tasks};
    mb__parallel_for(dw_pool, dw_tasks, dw_task, &job);
  } else {
    conv_gemm(&g, &v, workspace, ctx->pool);
  }
  mb__op_store_f32(y, v.y);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* ConvTranspose                                                             */
/* ------------------------------------------------------------------------ */

static mb_status convt_infer(mb_op_ctx *ctx) {
  conv_geom g;
  mb_status status = check_io(ctx, 2, 3);
  if (status)
    return status;
  const mb_tensor *x = ctx->inputs[0], *w = ctx->inputs[1];
  const mb_tensor *b = mb__op_input(ctx, 2);
  if ((status = convt_geom_init(ctx, x, w, &g)) ||
      (status = check_float_inputs(ctx, x, w, b, g.c_out)))
    return status;
  return geom_set_output(ctx, &g, x->dtype);
}

static mb_status convt_run(mb_op_ctx *ctx) {
  conv_geom g;
  float_views v;
  size_t work;
  const mb_tensor *x = ctx->inputs[0], *w = ctx->inputs[1];
  const mb_tensor *b = mb__op_input(ctx, 2);
  mb_tensor *y = ctx->outputs[0];
  mb_status status = convt_geom_init(ctx, x, w, &g);
  if (status)
    return status;
  if (y->numel == 0)
    return MB_STATUS_OK;
  /* col holds [Mg*K, in_size]: the same count as im2col with the roles of
   * input and output channels swapped. */
  if (!mb__mul_size((size_t)g.c_out_group, (size_t)g.kernel_size, &work) ||
      !mb__mul_size(work, (size_t)g.in_size, &work) ||
      !mb__mul_size(work, sizeof(float), &work))
    return mb__op_error(ctx, MB_STATUS_OVERFLOW, "workspace size overflows");
  if ((status = float_views_init(ctx, x, w, b, y, work, &v)))
    return status;
  /* No scratch at all when the input is empty (work 0). */
  float *col = work ? (float *)((char *)ctx->scratch[3] + v.work_offset) : NULL;
  int64_t rows = g.c_out_group * g.kernel_size;
  for (int64_t n = 0; n < g.batch; n++) {
    for (int64_t grp = 0; grp < g.group; grp++) {
      float *yg = v.y + (n * g.c_out + grp * g.c_out_group) * g.out_size;
      fill_bias(yg, v.b ? v.b + grp * g.c_out_group : NULL, g.c_out_group,
                g.out_size);
      /* An empty input adds nothing to the bias (and has no data). */
      if (x->numel == 0)
        continue;
      const float *xg = v.x + (n * g.c_in + grp * g.c_in_group) * g.in_size;
      const float *wg = v.w + grp * g.c_in_group * rows;
      /* col = W_g^T [Mg*K, Cg] x X_g [Cg, in_size] */
      mb__sgemm(ctx->pool, true, false, rows, g.in_size, g.c_in_group, 1.0f, wg,
                rows, xg, g.in_size, 0.0f, col, g.in_size);
      col2im_f32(&g, col, yg);
    }
  }
  mb__op_store_f32(y, v.y);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* ConvInteger and QLinearConv                                               */
/* ------------------------------------------------------------------------ */

/* Both compute an exact int32 convolution of (x - x_zero) and (w - w_zero);
 * QLinearConv then requantises. Integer models are rare in benchmarks, so
 * this path favours simplicity: widen to int32, im2col, then one exact
 * product per group (mb__igemm). */

static int32_t zero_point_at(const mb_tensor *zp, int64_t i) {
  if (!zp)
    return 0;
  return mb__get_8bit(zp, zp->numel == 1 ? 0 : i);
}

/* Indices of the tensors of an integer convolution among the inputs. */
typedef struct int_conv_layout {
  int x, x_zero, w, w_zero;
} int_conv_layout;

static const int_conv_layout conv_integer_layout = {0, 2, 1, 3};
static const int_conv_layout qlinear_conv_layout = {0, 2, 3, 5};

static mb_status int_conv_check(mb_op_ctx *ctx, const int_conv_layout *l,
                                conv_geom *g) {
  const mb_tensor *x = ctx->inputs[l->x], *w = ctx->inputs[l->w];
  mb_status status = conv_geom_init(ctx, x, w, g);
  if (status)
    return status;
  if (!mb__dtype_is_8bit(x->dtype) || !mb__dtype_is_8bit(w->dtype))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "types X %s / W %s are not supported (int8/uint8)",
                        mb_dtype_name(x->dtype), mb_dtype_name(w->dtype));
  if ((status = mb__op_check_zero_point(ctx, mb__op_input(ctx, l->x_zero),
                                        x->dtype, 0, "x_zero_point")) ||
      (status = mb__op_check_zero_point(ctx, mb__op_input(ctx, l->w_zero),
                                        w->dtype, g->c_out, "w_zero_point")))
    return status;
  return MB_STATUS_OK;
}

/* acc[N, M, out...] = conv(x - x_zero, w - w_zero), exact in int32. */
static mb_status int_conv_compute(mb_op_ctx *ctx, const int_conv_layout *l,
                                  const conv_geom *g, int32_t *acc) {
  const mb_tensor *x = ctx->inputs[l->x], *w = ctx->inputs[l->w];
  const mb_tensor *xz = mb__op_input(ctx, l->x_zero);
  const mb_tensor *wz = mb__op_input(ctx, l->w_zero);
  size_t col_bytes, xw_bytes;
  mb_status status = im2col_bytes(ctx, g, g->out_size, &col_bytes);
  if (status)
    return status;
  if (!mb__add_size((size_t)x->numel, (size_t)w->numel, &xw_bytes) ||
      !mb__mul_size(xw_bytes, sizeof(int32_t), &xw_bytes))
    return mb__op_error(ctx, MB_STATUS_OVERFLOW, "workspace size overflows");
  int32_t *xw = mb__op_scratch(ctx, 0, xw_bytes);
  int32_t *col = mb__op_scratch(ctx, 1, col_bytes);
  if (!xw || !col)
    return MB_STATUS_OUT_OF_MEMORY;
  /* The exact product's workspace; none for sizes past size_t, which take
   * the plain loops. */
  int64_t k = g->c_in_group * g->kernel_size;
  size_t work_bytes = mb__igemm_work_size(g->c_out_group, g->out_size, k);
  double *work = work_bytes ? mb__op_scratch(ctx, 4, work_bytes) : NULL;
  if (work_bytes && !work)
    return MB_STATUS_OUT_OF_MEMORY;
  int32_t *xi = xw, *wi = xw + x->numel;
  int32_t x0 = zero_point_at(xz, 0);
  for (int64_t i = 0; i < x->numel; i++)
    xi[i] = mb__get_8bit(x, i) - x0;
  int64_t per_oc = w->numel / MB_MAX(g->c_out, 1);
  for (int64_t i = 0; i < w->numel; i++)
    wi[i] = mb__get_8bit(w, i) - zero_point_at(wz, i / per_oc);
  for (int64_t n = 0; n < g->batch; n++) {
    for (int64_t grp = 0; grp < g->group; grp++) {
      /* im2col moves opaque 4-byte elements; int32 data is fine. */
      im2col(g,
             (const float *)(xi +
                             (n * g->c_in + grp * g->c_in_group) * g->in_size),
             0, g->out_size / MB_MAX(g->out[g->nsp - 1], 1), (float *)col);
      int64_t oc = grp * g->c_out_group;
      mb__igemm(ctx->pool, g->c_out_group, g->out_size, k, wi + oc * k, col,
                acc + (n * g->c_out + oc) * g->out_size, work);
    }
  }
  return MB_STATUS_OK;
}

static mb_status conv_integer_infer(mb_op_ctx *ctx) {
  conv_geom g;
  mb_status status = check_io(ctx, 2, 4);
  if (status || (status = int_conv_check(ctx, &conv_integer_layout, &g)))
    return status;
  return geom_set_output(ctx, &g, MB_DTYPE_INT32);
}

static mb_status conv_integer_run(mb_op_ctx *ctx) {
  conv_geom g;
  mb_status status = int_conv_check(ctx, &conv_integer_layout, &g);
  if (status || ctx->outputs[0]->numel == 0)
    return status;
  return int_conv_compute(ctx, &conv_integer_layout, &g, ctx->outputs[0]->data);
}

/* Scale inputs of QLinearConv: x_scale 1, w_scale 4, y_scale 6. */
static mb_status qlinear_conv_check(mb_op_ctx *ctx, conv_geom *g) {
  mb_status status = check_io(ctx, 8, 9);
  if (status || (status = int_conv_check(ctx, &qlinear_conv_layout, g)))
    return status;
  const mb_tensor *xs = ctx->inputs[1], *ws = ctx->inputs[4];
  const mb_tensor *ys = ctx->inputs[6], *yz = ctx->inputs[7];
  const mb_tensor *b = mb__op_input(ctx, 8);
  if (xs->dtype != MB_DTYPE_FLOAT || ws->dtype != MB_DTYPE_FLOAT ||
      ys->dtype != MB_DTYPE_FLOAT || xs->numel != 1 || ys->numel != 1 ||
      (ws->numel != 1 && ws->numel != g->c_out))
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "scales must be float32 scalars (w_scale may have "
                        "one value per output channel)");
  if (!mb__dtype_is_8bit(yz->dtype) || yz->numel != 1)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "y_zero_point must be an int8/uint8 scalar");
  if (b && (b->dtype != MB_DTYPE_INT32 || b->numel != g->c_out))
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "bias B must be int32 with one value per output "
                        "channel");
  return MB_STATUS_OK;
}

static mb_status qlinear_conv_infer(mb_op_ctx *ctx) {
  conv_geom g;
  mb_status status = qlinear_conv_check(ctx, &g);
  if (status)
    return status;
  return geom_set_output(ctx, &g, ctx->inputs[7]->dtype);
}

static mb_status qlinear_conv_run(mb_op_ctx *ctx) {
  conv_geom g;
  mb_status status = qlinear_conv_check(ctx, &g);
  mb_tensor *y = ctx->outputs[0];
  if (status || y->numel == 0)
    return status;
  /* Slots 0 and 1 are taken by int_conv_compute. */
  int32_t *acc = mb__op_scratch(ctx, 2, sizeof(int32_t) * (size_t)y->numel);
  if (!acc)
    return MB_STATUS_OUT_OF_MEMORY;
  if ((status = int_conv_compute(ctx, &qlinear_conv_layout, &g, acc)))
    return status;
  const mb_tensor *ws = ctx->inputs[4], *yz = ctx->inputs[7];
  const mb_tensor *b = mb__op_input(ctx, 8);
  float xs = *(const float *)ctx->inputs[1]->data;
  float ys = *(const float *)ctx->inputs[6]->data;
  int32_t zero = mb__get_8bit(yz, 0);
  int32_t lo = y->dtype == MB_DTYPE_UINT8 ? 0 : -128;
  int32_t hi = y->dtype == MB_DTYPE_UINT8 ? 255 : 127;
  for (int64_t n = 0; n < g.batch; n++) {
    for (int64_t oc = 0; oc < g.c_out; oc++) {
      float wsv = ((const float *)ws->data)[ws->numel == 1 ? 0 : oc];
      float scale = xs * wsv / ys;
      int64_t bias = b ? ((const int32_t *)b->data)[oc] : 0;
      int64_t base = (n * g.c_out + oc) * g.out_size;
      for (int64_t i = 0; i < g.out_size; i++) {
        /* round half to even, as the ONNX reference does; fmaxf/fminf also
         * saturate NaN (from a zero or non-finite scale) */
        float r = nearbyintf((float)(acc[base + i] + bias) * scale) + zero;
        int32_t q = (int32_t)fmaxf((float)lo, fminf((float)hi, r));
        if (y->dtype == MB_DTYPE_UINT8)
          ((uint8_t *)y->data)[base + i] = (uint8_t)q;
        else
          ((int8_t *)y->data)[base + i] = (int8_t)q;
      }
    }
  }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */

const mb_op_def mb__ops_conv[] = {
    {"", "Conv", 1, conv_infer, conv_run, 0},
    {"", "ConvTranspose", 1, convt_infer, convt_run, 0},
    {"", "ConvInteger", 10, conv_integer_infer, conv_integer_run, 0},
    {"", "QLinearConv", 10, qlinear_conv_infer, qlinear_conv_run, 0},
};
MB_OP_TABLE_END(conv);
