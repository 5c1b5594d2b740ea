/* Resize (opsets 10, 11, 13, 18, 19), the older Upsample (7, 9), and
 * GridSample (16), which samples at coordinates a grid gives.
 *
 * Coordinates follow the ONNX reference implementation exactly (including
 * its use of scale * input_size, not the rounded output size, as the
 * "output width" of align_corners and friends), since the backend test data
 * comes from it.
 *
 * Nearest mode is a pure gather, done in one pass for any element type.
 * Linear and cubic are separable: one 1-D pass per resized axis in float,
 * each output element a weighted sum of 2 or 4 input elements along that
 * axis. This equals the reference's nested per-axis interpolation. */
#include "ops/op.h"

#include <math.h>
#include <stdlib.h>

#define CHECK(expr)                                                            \
  do {                                                                         \
    mb_status check_status_ = (expr);                                          \
    if (check_status_ != MB_STATUS_OK)                                         \
      return check_status_;                                                    \
  } while (0)

typedef enum interp_mode {
  INTERP_NEAREST,
  INTERP_LINEAR,
  INTERP_CUBIC
} interp_mode;
static const char *const interp_names[] = {"nearest", "linear", "cubic"};

/* X(enum suffix, attribute value) */
#define COORD_MODE_LIST(X)                                                     \
  X(HALF_PIXEL, "half_pixel")                                                  \
  X(PYTORCH_HALF_PIXEL, "pytorch_half_pixel")                                  \
  X(ALIGN_CORNERS, "align_corners")                                            \
  X(ASYMMETRIC, "asymmetric")                                                  \
  X(TF_HALF_PIXEL_FOR_NN, "tf_half_pixel_for_nn")                              \
  X(TF_CROP_AND_RESIZE, "tf_crop_and_resize")                                  \
  X(HALF_PIXEL_SYMMETRIC, "half_pixel_symmetric")

typedef enum coord_mode {
#define X(name, str) COORD_##name,
  COORD_MODE_LIST(X)
#undef X
      COORD_COUNT
} coord_mode;
static const char *const coord_names[] = {
#define X(name, str) str,
    COORD_MODE_LIST(X)
#undef X
};

/* SIMPLE is the opset < 11 behaviour (Upsample, Resize-10): truncate when
 * upsampling, ceil when downsampling, as onnxruntime does. */
typedef enum nearest_mode {
  NEAREST_ROUND_PREFER_FLOOR,
  NEAREST_ROUND_PREFER_CEIL,
  NEAREST_FLOOR,
  NEAREST_CEIL,
  NEAREST_SIMPLE
} nearest_mode;
static const char *const nearest_names[] = {
    "round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};

typedef struct resize_params {
  interp_mode mode;
  coord_mode coord;
  nearest_mode nearest;
  double cubic_a;
  bool exclude_outside;
  double extrapolation;
  int rank;
  int64_t out_dims[MB_MAX_RANK];
  double scales[MB_MAX_RANK];
  /* The reference's "output_width": scale * input size with scales, the
   * requested size with sizes. */
  double out_width[MB_MAX_RANK];
  double roi_start[MB_MAX_RANK], roi_end[MB_MAX_RANK];
} resize_params;

static mb_status pick(mb_op_ctx *ctx, const char *attr, const char *def,
                      const char *const *names, size_t n, int *out) {
  const char *s = mb__node_attr_string(ctx->node, attr, def);
  for (size_t i = 0; i < n; i++)
    if (strcmp(s, names[i]) == 0) {
      *out = (int)i;
      return MB_STATUS_OK;
    }
  return mb__op_error(ctx, MB_STATUS_UNSUPPORTED, "%s '%s'", attr, s);
}

static bool is_upsample(mb_op_ctx *ctx) {
  return strcmp(ctx->node->op_type, "Upsample") == 0;
}

/* Scales or sizes input index for this op version (-1: attribute). */
static int scales_input(mb_op_ctx *ctx) {
  if (is_upsample(ctx))
    return ctx->opset >= 9 ? 1 : -1;
  return ctx->opset >= 11 ? 2 : 1;
}

static const mb_tensor *present(mb_op_ctx *ctx, int i) {
  const mb_tensor *t = i >= 0 ? mb__op_input(ctx, i) : NULL;
  return t != NULL && t->numel > 0 ? t : NULL;
}

/* Modes, attributes, output shape and scales; everything but the roi. */
static mb_status resize_params_read(mb_op_ctx *ctx, resize_params *p) {
  const mb_tensor *x = ctx->inputs[0];
  int r = x->rank;
  bool legacy = is_upsample(ctx) || ctx->opset < 11;
  memset(p, 0, sizeof(*p));
  p->rank = r;
  const char *mode = mb__node_attr_string(ctx->node, "mode", "nearest");
  if (is_upsample(ctx) && strcmp(mode, "bilinear") == 0) {
    p->mode = INTERP_LINEAR;
  } else {
    int m = 0;
    CHECK(pick(ctx, "mode", "nearest", interp_names, legacy ? 2 : 3, &m));
    p->mode = (interp_mode)m;
  }
  if (legacy) {
    p->coord = COORD_ASYMMETRIC;
    p->nearest = NEAREST_SIMPLE;
  } else {
    int c = 0, n = 0;
    CHECK(pick(ctx, "coordinate_transformation_mode", "half_pixel", coord_names,
               ctx->opset >= 19 ? COORD_COUNT : COORD_COUNT - 1, &c));
    CHECK(pick(ctx, "nearest_mode", "round_prefer_floor", nearest_names,
               MB_ARRAY_COUNT(nearest_names), &n));
    p->coord = (coord_mode)c;
    p->nearest = (nearest_mode)n;
    p->cubic_a = mb__node_attr_float(ctx->node, "cubic_coeff_a", -0.75f);
    p->exclude_outside =
        mb__node_attr_int(ctx->node, "exclude_outside", 0) != 0;
    p->extrapolation =
        mb__node_attr_float(ctx->node, "extrapolation_value", 0.0f);
    if (mb__node_attr_int(ctx->node, "antialias", 0) != 0)
      return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                          "antialias is not supported");
  }

  /* Axes the scales/sizes refer to (opset 18); all by default. */
  int axes[MB_MAX_RANK], n_axes = r;
  for (int i = 0; i < r; i++)
    axes[i] = i;
  const int64_t *attr_axes;
  int64_t na = ctx->opset >= 18 && !is_upsample(ctx)
                   ? mb__node_attr_ints(ctx->node, "axes", &attr_axes)
                   : -1;
  if (na >= 0) {
    if (na > r)
      return mb__op_error(ctx, MB_STATUS_SHAPE, "axes has too many entries");
    n_axes = (int)na;
    bool seen[MB_MAX_RANK] = {false};
    for (int i = 0; i < n_axes; i++) {
      CHECK(mb__op_axis(ctx, attr_axes[i], r, "axes", &axes[i]));
      if (seen[axes[i]])
        return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                            "axes lists %d twice", axes[i]);
      seen[axes[i]] = true;
    }
  }
  for (int i = 0; i < r; i++) {
    p->scales[i] = 1.0;
    p->out_dims[i] = x->dims[i];
    p->out_width[i] = (double)x->dims[i];
    p->roi_start[i] = 0.0;
    p->roi_end[i] = 1.0;
  }

  int si = scales_input(ctx);
  const mb_tensor *scales = present(ctx, si);
  const mb_tensor *sizes = legacy ? NULL : present(ctx, 3);
  const float *attr_scales = NULL;
  int64_t n_attr_scales = -1;
  if (si < 0)
    n_attr_scales = mb__node_attr_floats(ctx->node, "scales", &attr_scales);
  if ((scales != NULL || n_attr_scales >= 0) == (sizes != NULL))
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "exactly one of scales and sizes must be given");
  if (scales != NULL || n_attr_scales >= 0) {
    int64_t n = scales != NULL ? scales->numel : n_attr_scales;
    if (n != n_axes)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "scales has %lld entries, expected %d", (long long)n,
                          n_axes);
    if (scales != NULL && !mb__dtype_is_float(scales->dtype))
      return mb__op_error(ctx, MB_STATUS_SHAPE, "scales must be float");
    for (int i = 0; i < n_axes; i++) {
      /* Scales are float32 in the model; keep that precision. */
      double s = scales != NULL ? (double)(float)mb__tensor_get_f64(scales, i)
                                : (double)attr_scales[i];
      if (!(s > 0) || !isfinite(s))
        return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                            "scale %g must be positive", s);
      int a = axes[i];
      double w = s * (double)x->dims[a];
      if (w > (double)(INT64_C(1) << 40))
        return mb__op_error(ctx, MB_STATUS_OVERFLOW, "output too large");
      p->scales[a] = s;
      p->out_width[a] = w;
      p->out_dims[a] = (int64_t)floor(w);
    }
  } else {
    int64_t v[MB_MAX_RANK];
    if (sizes->numel != n_axes)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "sizes has %lld entries, expected %d",
                          (long long)sizes->numel, n_axes);
    CHECK(mb__op_read_ints(ctx, sizes, v, MB_MAX_RANK));
    const char *policy =
        ctx->opset >= 18 ? mb__node_attr_string(
                               ctx->node, "keep_aspect_ratio_policy", "stretch")
                         : "stretch";
    bool not_larger = strcmp(policy, "not_larger") == 0;
    bool not_smaller = strcmp(policy, "not_smaller") == 0;
    if (!not_larger && !not_smaller && strcmp(policy, "stretch") != 0)
      return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                          "keep_aspect_ratio_policy '%s'", policy);
    double common = not_larger ? INFINITY : 0.0;
    for (int i = 0; i < n_axes; i++) {
      int a = axes[i];
      if (v[i] < 0 || (x->dims[a] == 0 && v[i] > 0))
        return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                            "size %lld is invalid for a dim of %lld",
                            (long long)v[i], (long long)x->dims[a]);
      double s = x->dims[a] > 0 ? (double)v[i] / (double)x->dims[a] : 1.0;
      common = not_larger ? MB_MIN(common, s) : MB_MAX(common, s);
      p->scales[a] = s;
      p->out_dims[a] = v[i];
      p->out_width[a] = (double)v[i];
    }
    if (not_larger || not_smaller)
      for (int i = 0; i < n_axes; i++) {
        int a = axes[i];
        p->scales[a] = common;
        /* numpy's round, half to even, as in the reference. */
        p->out_dims[a] = (int64_t)nearbyint(common * (double)x->dims[a]);
        p->out_width[a] = common * (double)x->dims[a];
      }
  }
  if (p->mode != INTERP_NEAREST && !mb__dtype_is_float(x->dtype))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "%s mode on %s data is not supported",
                        interp_names[p->mode], mb_dtype_name(x->dtype));
  return MB_STATUS_OK;
}

/* The roi (tf_crop_and_resize only): starts then ends, per resized axis. */
static mb_status resize_roi_read(mb_op_ctx *ctx, resize_params *p) {
  if (p->coord != COORD_TF_CROP_AND_RESIZE)
    return MB_STATUS_OK;
  const mb_tensor *roi = present(ctx, 1);
  if (roi == NULL)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "tf_crop_and_resize needs roi");
  int axes[MB_MAX_RANK], n = p->rank;
  const int64_t *attr_axes;
  int64_t na =
      ctx->opset >= 18 ? mb__node_attr_ints(ctx->node, "axes", &attr_axes) : -1;
  for (int i = 0; i < p->rank; i++)
    axes[i] = i;
  if (na >= 0) {
    n = (int)na;
    for (int i = 0; i < n; i++)
      CHECK(mb__op_axis(ctx, attr_axes[i], p->rank, "axes", &axes[i]));
  }
  if (roi->numel != 2 * n)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "roi has %lld entries, expected %d",
                        (long long)roi->numel, 2 * n);
  for (int i = 0; i < n; i++) {
    p->roi_start[axes[i]] = mb__tensor_get_f64(roi, i);
    p->roi_end[axes[i]] = mb__tensor_get_f64(roi, i + n);
  }
  return MB_STATUS_OK;
}

static mb_status resize_infer(mb_op_ctx *ctx) {
  bool legacy = is_upsample(ctx) || ctx->opset < 11;
  int max_inputs = is_upsample(ctx) ? (ctx->opset >= 9 ? 2 : 1)
                   : legacy         ? 2
                                    : 4;
  CHECK(mb__op_check_arity(ctx, 1, max_inputs));
  int si = scales_input(ctx);
  if (si >= 0)
    MB_OP_NEED_DATA(ctx, si);
  if (!legacy)
    MB_OP_NEED_DATA(ctx, 3);
  const mb_tensor *x = ctx->inputs[0];
  if (mb_dtype_size(x->dtype) == 0)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED, "type %s",
                        mb_dtype_name(x->dtype));
  resize_params p;
  CHECK(resize_params_read(ctx, &p));
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, x->rank, p.out_dims,
                              ctx->err);
}

/* ------------------------------------------------------------------------ */
/* Coordinates and taps                                                     */
/* ------------------------------------------------------------------------ */

/* Input coordinate of output index x along `axis`; *outside is set for
 * tf_crop_and_resize points outside the input (extrapolated). */
static double original_coord(const resize_params *p, int axis, int64_t xi,
                             int64_t in_len, int64_t out_len, bool *outside) {
  double x = (double)xi, scale = p->scales[axis], ow = p->out_width[axis];
  double in = (double)in_len;
  *outside = false;
  switch (p->coord) {
  case COORD_HALF_PIXEL:
    return (x + 0.5) / scale - 0.5;
  case COORD_PYTORCH_HALF_PIXEL:
    return ow == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  case COORD_ALIGN_CORNERS:
    return ow == 1 ? 0.0 : x * (in - 1) / (ow - 1);
  case COORD_ASYMMETRIC:
    return x / scale;
  case COORD_TF_HALF_PIXEL_FOR_NN:
    return (x + 0.5) / scale;
  case COORD_TF_CROP_AND_RESIZE: {
    double start = p->roi_start[axis], end = p->roi_end[axis], v;
    if (ow == 1)
      v = (end - start) * (in - 1) / 2;
    else
      v = x * (end - start) * (in - 1) / (ow - 1);
    v += start * (in - 1);
    *outside = v < 0 || v > in - 1;
    return v;
  }
  case COORD_HALF_PIXEL_SYMMETRIC: {
    double adjustment = (double)out_len / ow;
    double center = in / 2, offset = center * (1 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  case COORD_COUNT:
    break;
  }
  return 0.0;
}

static int64_t clamp_index(int64_t i, int64_t n) {
  return i < 0 ? 0 : i >= n ? n - 1 : i;
}

/* Nearest input index for coordinate v (before clamping). */
static int64_t nearest_index(const resize_params *p, double v, int axis) {
  double fl = floor(v), frac = v - fl;
  if (p->nearest == NEAREST_SIMPLE)
    return p->scales[axis] < 1 ? (int64_t)ceil(v) : (int64_t)fl;
  if (frac == 0)
    return (int64_t)fl;
  switch (p->nearest) {
  case NEAREST_ROUND_PREFER_FLOOR:
    return (int64_t)fl + (frac > 0.5);
  case NEAREST_ROUND_PREFER_CEIL:
    return (int64_t)fl + (frac >= 0.5);
  case NEAREST_FLOOR:
    return (int64_t)fl;
  default:
    return (int64_t)fl + 1;
  }
}

static void cubic_coeffs(double ratio, double a, double c[4]) {
  double r1 = ratio + 1, r2 = 1 - ratio, r3 = 2 - ratio;
  c[0] = ((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a;
  c[1] = ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1;
  c[2] = ((a + 2) * r2 - (a + 3)) * r2 * r2 + 1;
  c[3] = ((a * r3 - 5 * a) * r3 + 8 * a) * r3 - 4 * a;
}

/* Fills taps for one output index: n indices (clamped) and weights; returns
 * false when the point is extrapolated. */
static bool axis_taps(const resize_params *p, int axis, int64_t xi,
                      int64_t in_len, int64_t out_len, int n, int64_t *idx,
                      float *w) {
  bool outside;
  double v = original_coord(p, axis, xi, in_len, out_len, &outside);
  if (outside)
    return false;
  /* ratio in (0, 1]: an integer coordinate takes the left neighbour at
   * weight 0, as in the reference. */
  double fl = floor(v), ratio = v == fl ? 1.0 : v - fl;
  int64_t base = (int64_t)(v - ratio);
  double c[4];
  if (n == 2) {
    c[0] = 1 - ratio;
    c[1] = ratio;
  } else {
    cubic_coeffs(ratio, p->cubic_a, c);
  }
  int64_t first = n == 2 ? base : base - 1;
  double sum = 0;
  for (int t = 0; t < n; t++) {
    int64_t i = first + t;
    if (p->exclude_outside && (i < 0 || i >= in_len))
      c[t] = 0;
    sum += c[t];
  }
  for (int t = 0; t < n; t++) {
    idx[t] = clamp_index(first + t, in_len);
    w[t] = (float)(p->exclude_outside && sum != 0 ? c[t] / sum : c[t]);
  }
  return true;
}

/* ------------------------------------------------------------------------ */
/* Nearest: one gather pass, any element type                                */
/* ------------------------------------------------------------------------ */

static void encode_scalar(mb_dtype dtype, double v, void *bytes) {
  mb_tensor t;
  memset(&t, 0, sizeof(t));
  t.dtype = dtype;
  t.numel = 1;
  t.nbytes = mb_dtype_size(dtype);
  t.data = bytes;
  mb__tensor_set_f64(&t, 0, v);
}

/* dst[j] = src[map[j]], or the extrapolation value where map[j] < 0. */
static void nearest_row(char *dst, const char *src, const int64_t *map,
                        int64_t n, const uint8_t *extrapolation, size_t es) {
#define NEAREST_AS(type)                                                       \
  do {                                                                         \
    type *d_ = (type *)(void *)dst, e_;                                        \
    const type *s_ = (const type *)(const void *)src;                          \
    memcpy(&e_, extrapolation, sizeof(type));                                  \
    for (int64_t j_ = 0; j_ < n; j_++)                                         \
      d_[j_] = map[j_] < 0 ? e_ : s_[map[j_]];                                 \
  } while (0)
  switch (es) {
  case 1:
    NEAREST_AS(uint8_t);
    return;
  case 2:
    NEAREST_AS(uint16_t);
    return;
  case 4:
    NEAREST_AS(uint32_t);
    return;
  case 8:
    NEAREST_AS(uint64_t);
    return;
  default:
    for (int64_t j = 0; j < n; j++)
      memcpy(dst + j * (int64_t)es,
             map[j] < 0 ? (const char *)extrapolation
                        : src + map[j] * (int64_t)es,
             es);
  }
#undef NEAREST_AS
}

static mb_status resize_nearest(mb_op_ctx *ctx, const resize_params *p) {
  const mb_tensor *x = ctx->inputs[0];
  mb_tensor *y = ctx->outputs[0];
  int r = y->rank;
  int64_t es = (int64_t)mb_dtype_size(x->dtype), total = 0;
  for (int i = 0; i < r; i++)
    total += y->dims[i];
  /* Per axis: output index -> input index, or -1 to extrapolate. */
  int64_t *map_mem =
      mb__op_scratch(ctx, 0, sizeof(int64_t) * (size_t)(total + 1));
  if (map_mem == NULL)
    return MB_STATUS_OUT_OF_MEMORY;
  int64_t *maps[MB_MAX_RANK];
  for (int64_t i = 0, at = 0; i < r; at += y->dims[i], i++) {
    maps[i] = map_mem + at;
    for (int64_t o = 0; o < y->dims[i]; o++) {
      bool outside;
      double v = original_coord(p, (int)i, o, x->dims[i], y->dims[i], &outside);
      maps[i][o] =
          outside ? -1 : clamp_index(nearest_index(p, v, (int)i), x->dims[i]);
    }
  }
  uint8_t extrapolation[16] = {0};
  encode_scalar(x->dtype, p->extrapolation, extrapolation);
  int64_t strides[MB_MAX_RANK], idx[MB_MAX_RANK] = {0};
  mb__contiguous_strides(x->rank, x->dims, strides);
  int64_t row = r > 0 ? y->dims[r - 1] : 1, rows = y->numel / row;
  /* Rows whose outer coordinates are extrapolated use an all -1 map. */
  int64_t zero = 0;
  int64_t *all_outside = mb__op_scratch(ctx, 1, sizeof(int64_t) * (size_t)row);
  if (all_outside == NULL)
    return MB_STATUS_OUT_OF_MEMORY;
  for (int64_t j = 0; j < row; j++)
    all_outside[j] = -1;
  char *dst = y->data;
  const char *src = x->data;
  for (int64_t ro = 0; ro < rows; ro++) {
    int64_t off = 0;
    bool outside = false;
    for (int k = 0; k < r - 1; k++) {
      outside |= maps[k][idx[k]] < 0;
      off += maps[k][idx[k]] * strides[k];
    }
    const int64_t *map = r > 0 ? maps[r - 1] : &zero;
    if (outside) {
      map = all_outside;
      off = 0;
    }
    nearest_row(dst, src + off * es, map, row, extrapolation, (size_t)es);
    dst += row * es;
    for (int k = r - 2; k >= 0; k--) {
      if (++idx[k] < y->dims[k])
        break;
      idx[k] = 0;
    }
  }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Linear and cubic: separable float passes                                  */
/* ------------------------------------------------------------------------ */

/* dst[o, x, :] = sum_t w[x,t] * src[o, idx[x,t], :], or the extrapolation
 * value where ok[x] is 0. */
static void resample_axis(float *dst, const float *src, int64_t outer,
                          int64_t in_len, int64_t out_len, int64_t inner, int n,
                          const int64_t *idx, const float *w, const uint8_t *ok,
                          float extrapolation) {
  for (int64_t o = 0; o < outer; o++) {
    const float *s = src + o * in_len * inner;
    for (int64_t x = 0; x < out_len; x++) {
      float *d = dst + (o * out_len + x) * inner;
      if (!ok[x]) {
        for (int64_t i = 0; i < inner; i++)
          d[i] = extrapolation;
        continue;
      }
      const int64_t *ix = idx + x * n;
      const float *wx = w + x * n;
      if (inner == 1) {
        float acc = 0;
        for (int t = 0; t < n; t++)
          acc += wx[t] * s[ix[t]];
        d[0] = acc;
        continue;
      }
      for (int64_t i = 0; i < inner; i++)
        d[i] = wx[0] * s[ix[0] * inner + i];
      for (int t = 1; t < n; t++) {
        const float *st = s + ix[t] * inner;
        float wt = wx[t];
        for (int64_t i = 0; i < inner; i++)
          d[i] += wt * st[i];
      }
    }
  }
}

static mb_status resize_interpolate(mb_op_ctx *ctx, const resize_params *p) {
  const mb_tensor *x = ctx->inputs[0];
  mb_tensor *y = ctx->outputs[0];
  int r = x->rank, n = p->mode == INTERP_LINEAR ? 2 : 4;
  mb_status status = MB_STATUS_OK;
  /* Tap tables of every axis, laid out one after another. */
  int64_t total = 0;
  for (int i = 0; i < r; i++)
    total += y->dims[i];
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)(total * n + 1));
  float *w = malloc(sizeof(float) * (size_t)(total * n + 1));
  uint8_t *ok = malloc((size_t)total + 1);
  if (idx == NULL || w == NULL || ok == NULL) {
    status = mb__op_error(ctx, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  int passes[MB_MAX_RANK], n_passes = 0;
  int64_t at[MB_MAX_RANK];
  for (int64_t a = 0, pos = 0; a < r; pos += y->dims[a], a++) {
    at[a] = pos;
    /* An axis whose every output takes exactly its own input index is
     * skipped. */
    bool identity = y->dims[a] == x->dims[a];
    for (int64_t o = 0; o < y->dims[a]; o++) {
      int64_t *ix = idx + (pos + o) * n;
      float *wx = w + (pos + o) * n;
      ok[pos + o] = axis_taps(p, (int)a, o, x->dims[a], y->dims[a], n, ix, wx);
      if (!identity)
        continue;
      float self = 0;
      bool other = !ok[pos + o];
      for (int t = 0; t < n && !other; t++) {
        if (ix[t] == o)
          self += wx[t];
        else
          other = wx[t] != 0;
      }
      identity = !other && self == 1.0f;
    }
    if (!identity)
      passes[n_passes++] = (int)a;
  }
  if (n_passes == 0) {
    memcpy(y->data, x->data, x->nbytes);
    goto done;
  }
  const float *src = mb__op_as_f32(ctx, x, 0);
  float *final = mb__op_f32_dest(ctx, y, 3);
  if (src == NULL || final == NULL) {
    status = MB_STATUS_OUT_OF_MEMORY;
    goto done;
  }
  /* Largest intermediate, for the two ping-pong buffers. */
  int64_t cur[MB_MAX_RANK], biggest = 1;
  memcpy(cur, x->dims, sizeof(cur));
  for (int k = 0; k < n_passes - 1; k++) {
    cur[passes[k]] = y->dims[passes[k]];
    int64_t numel = 1;
    for (int i = 0; i < r; i++)
      numel *= cur[i];
    biggest = MB_MAX(biggest, numel);
  }
  float *buf[2] = {NULL, NULL};
  if (n_passes > 1) {
    buf[0] = mb__op_scratch(ctx, 1, sizeof(float) * (size_t)biggest);
    buf[1] = mb__op_scratch(ctx, 2, sizeof(float) * (size_t)biggest);
    if (buf[0] == NULL || buf[1] == NULL) {
      status = MB_STATUS_OUT_OF_MEMORY;
      goto done;
    }
  }
  memcpy(cur, x->dims, sizeof(cur));
  const float *in = src;
  for (int k = 0; k < n_passes; k++) {
    int a = passes[k];
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < a; i++)
      outer *= cur[i];
    for (int i = a + 1; i < r; i++)
      inner *= cur[i];
    float *out = k == n_passes - 1 ? final : buf[k % 2];
    resample_axis(out, in, outer, cur[a], y->dims[a], inner, n, idx + at[a] * n,
                  w + at[a] * n, ok + at[a], (float)p->extrapolation);
    cur[a] = y->dims[a];
    in = out;
  }
  if (y->dtype != MB_DTYPE_FLOAT)
    mb__op_store_f32(y, final);
done:
  free(idx);
  free(w);
  free(ok);
  return status;
}

static mb_status resize_run(mb_op_ctx *ctx) {
  resize_params p;
  CHECK(resize_params_read(ctx, &p));
  CHECK(resize_roi_read(ctx, &p));
  const mb_tensor *x = ctx->inputs[0];
  mb_tensor *y = ctx->outputs[0];
  if (y->numel == 0)
    return MB_STATUS_OK;
  if (x->numel == 0)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "cannot resize an empty input to a non-empty output");
  if (p.mode == INTERP_NEAREST)
    return resize_nearest(ctx, &p);
  return resize_interpolate(ctx, &p);
}

/* ------------------------------------------------------------------------ */
/* GridSample (opset 16): X [N, C, H, W] sampled at Grid [N, Ho, Wo, 2]      */
/* ------------------------------------------------------------------------ */

/* As PyTorch's grid_sampler_2d (which the ONNX test data comes from): grid
 * values in [-1, 1] are unnormalised to pixel coordinates, padding_mode
 * decides what lies outside, bicubic uses A = -0.75 and pads each tap. */
typedef enum gs_padding { GS_ZEROS, GS_BORDER, GS_REFLECTION } gs_padding;

typedef struct gs_plan {
  interp_mode mode;
  gs_padding padding;
  bool align_corners;
} gs_plan;

static mb_status gs_plan_make(mb_op_ctx *ctx, gs_plan *p) {
  CHECK(mb__op_check_arity(ctx, 2, 2));
  const mb_tensor *x = ctx->inputs[0], *grid = ctx->inputs[1];
  char a[96], b[96];
  if (!mb__dtype_is_float(x->dtype) || !mb__dtype_is_float(grid->dtype))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "X and Grid must be float types, got %s and %s",
                        mb_dtype_name(x->dtype), mb_dtype_name(grid->dtype));
  if (x->rank != 4 || grid->rank != 4 || grid->dims[0] != x->dims[0] ||
      grid->dims[3] != 2)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "X %s and Grid %s must be [N, C, H, W] and "
                        "[N, H_out, W_out, 2]",
                        mb__shape_str(x->rank, x->dims, a, sizeof a),
                        mb__shape_str(grid->rank, grid->dims, b, sizeof b));
  static const struct {
    const char *name;
    interp_mode mode;
  } modes[] = {{"bilinear", INTERP_LINEAR},
               {"nearest", INTERP_NEAREST},
               {"bicubic", INTERP_CUBIC}};
  static const char *const paddings[] = {"zeros", "border", "reflection"};
  const char *mode = mb__node_attr_string(ctx->node, "mode", "bilinear");
  const char *padding =
      mb__node_attr_string(ctx->node, "padding_mode", "zeros");
  size_t i = 0;
  while (i < MB_ARRAY_COUNT(modes) && strcmp(modes[i].name, mode))
    i++;
  if (i == MB_ARRAY_COUNT(modes))
    return mb__op_error(ctx, MB_STATUS_PARSE,
                        "mode '%s' is not bilinear, nearest or bicubic", mode);
  p->mode = modes[i].mode;
  for (i = 0; i < MB_ARRAY_COUNT(paddings) && strcmp(paddings[i], padding);)
    i++;
  if (i == MB_ARRAY_COUNT(paddings))
    return mb__op_error(ctx, MB_STATUS_PARSE,
                        "padding_mode '%s' is not zeros, border or reflection",
                        padding);
  p->padding = (gs_padding)i;
  p->align_corners = mb__node_attr_int(ctx->node, "align_corners", 0) != 0;
  return MB_STATUS_OK;
}

static mb_status gridsample_infer(mb_op_ctx *ctx) {
  gs_plan p;
  CHECK(gs_plan_make(ctx, &p));
  const mb_tensor *x = ctx->inputs[0], *grid = ctx->inputs[1];
  mb_tensor *y = mb__op_output(ctx, 0);
  int64_t dims[4] = {x->dims[0], x->dims[1], grid->dims[1], grid->dims[2]};
  return y ? mb__tensor_set_shape(y, x->dtype, 4, dims, ctx->err)
           : MB_STATUS_OK;
}

static double gs_unnormalize(const gs_plan *p, double coord, int64_t size) {
  return p->align_corners ? (coord + 1) / 2 * (double)(size - 1)
                          : ((coord + 1) * (double)size - 1) / 2;
}

/* Reflects into [twice_low / 2, twice_high / 2]. */
static double gs_reflect(double v, double twice_low, double twice_high) {
  if (twice_low == twice_high)
    return 0.0;
  double lo = twice_low / 2, span = (twice_high - twice_low) / 2;
  v = fabs(v - lo);
  double extra = fmod(v, span);
  int64_t flips = (int64_t)floor(v / span);
  return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

/* A coordinate moved inside by the padding mode (zeros leaves it). */
static double gs_pad(const gs_plan *p, double v, int64_t size) {
  double hi = (double)(size - 1);
  if (p->padding == GS_BORDER)
    return fmin(fmax(v, 0.0), hi);
  if (p->padding == GS_REFLECTION) {
    v = p->align_corners ? gs_reflect(v, 0.0, 2.0 * hi)
                         : gs_reflect(v, -1.0, 2.0 * (double)size - 1.0);
    return fmin(fmax(v, 0.0), hi);
  }
  return v;
}

/* Pixel (iy, ix) of one plane, 0 outside. */
static double gs_pixel(const mb_tensor *x, int64_t base, int64_t h, int64_t w,
                       int64_t iy, int64_t ix) {
  if (iy < 0 || iy >= h || ix < 0 || ix >= w)
    return 0.0;
  return mb__tensor_get_f64(x, base + iy * w + ix);
}

static double gs_cubic1(double t) { /* |t| <= 1 */
  const double A = -0.75;
  return ((A + 2) * t - (A + 3)) * t * t + 1;
}
static double gs_cubic2(double t) { /* 1 < |t| < 2 */
  const double A = -0.75;
  return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
}

static double gs_sample(const gs_plan *p, const mb_tensor *x, int64_t base,
                        int64_t h, int64_t w, double gx, double gy) {
  double fx = gs_unnormalize(p, gx, w), fy = gs_unnormalize(p, gy, h);
  if (p->mode == INTERP_CUBIC) {
    double x0 = floor(fx), y0 = floor(fy), tx = fx - x0, ty = fy - y0;
    double cx[4] = {gs_cubic2(tx + 1), gs_cubic1(tx), gs_cubic1(1 - tx),
                    gs_cubic2(2 - tx)};
    double cy[4] = {gs_cubic2(ty + 1), gs_cubic1(ty), gs_cubic1(1 - ty),
                    gs_cubic2(2 - ty)};
    double acc = 0.0;
    for (int i = 0; i < 4; i++) {
      double row = 0.0;
      for (int j = 0; j < 4; j++) {
        double tap_x = gs_pad(p, x0 - 1 + j, w),
               tap_y = gs_pad(p, y0 - 1 + i, h);
        row += cx[j] * gs_pixel(x, base, h, w, (int64_t)tap_y, (int64_t)tap_x);
      }
      acc += cy[i] * row;
    }
    return acc;
  }
  fx = gs_pad(p, fx, w);
  fy = gs_pad(p, fy, h);
  if (p->mode == INTERP_NEAREST)
    return gs_pixel(x, base, h, w, (int64_t)nearbyint(fy),
                    (int64_t)nearbyint(fx));
  double x0 = floor(fx), y0 = floor(fy), lx = fx - x0, ly = fy - y0;
  int64_t ix = (int64_t)x0, iy = (int64_t)y0;
  return (1 - ly) * ((1 - lx) * gs_pixel(x, base, h, w, iy, ix) +
                     lx * gs_pixel(x, base, h, w, iy, ix + 1)) +
         ly * ((1 - lx) * gs_pixel(x, base, h, w, iy + 1, ix) +
               lx * gs_pixel(x, base, h, w, iy + 1, ix + 1));
}

static mb_status gridsample_run(mb_op_ctx *ctx) {
  gs_plan p;
  CHECK(gs_plan_make(ctx, &p));
  const mb_tensor *x = ctx->inputs[0], *grid = ctx->inputs[1];
  mb_tensor *y = ctx->outputs[0];
  int64_t n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
  int64_t ho = grid->dims[1], wo = grid->dims[2];
  for (int64_t b = 0; b < n; b++)
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t i = 0; i < ho; i++)
        for (int64_t j = 0; j < wo; j++) {
          int64_t g = ((b * ho + i) * wo + j) * 2;
          double v = gs_sample(&p, x, (b * c + ch) * h * w, h, w,
                               mb__tensor_get_f64(grid, g),
                               mb__tensor_get_f64(grid, g + 1));
          mb__tensor_set_f64(y, ((b * c + ch) * ho + i) * wo + j, v);
        }
  return MB_STATUS_OK;
}

const mb_op_def mb__ops_resize[] = {
    {"", "Upsample", 7, resize_infer, resize_run},
    {"", "Upsample", 9, resize_infer, resize_run},
    {"", "Resize", 10, resize_infer, resize_run},
    {"", "Resize", 11, resize_infer, resize_run},
    {"", "Resize", 13, resize_infer, resize_run},
    {"", "Resize", 18, resize_infer, resize_run},
    {"", "Resize", 19, resize_infer, resize_run},
    {"", "GridSample", 16, gridsample_infer, gridsample_run},
};
MB_OP_TABLE_END(resize);
