/* Signal processing (opset 17): DFT, STFT, the window generators
 * (HannWindow, HammingWindow, BlackmanWindow) and MelWeightMatrix.
 *
 * Complex values are a trailing axis of 2 (real, imaginary); real inputs
 * have a trailing axis of 1. Transforms run in double: a radix-2 FFT when
 * the length is a power of two, else a direct sum over a table of
 * twiddles. */
#include "ops/op.h"

#include <math.h>

#define SIG_PI 3.14159265358979323846

/* Reads scalar (or one-element) integer input i. */
static mb_status sig_scalar_int(mb_op_ctx *ctx, int i, const char *what,
                                int64_t *out) {
  const mb_tensor *t = mb__op_input(ctx, i);
  if (!t || t->numel != 1 || !mb__dtype_is_int(t->dtype))
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "%s must be one integer, got %s with %lld elements",
                        what, t ? mb_dtype_name(t->dtype) : "nothing",
                        t ? (long long)t->numel : 0LL);
  *out = mb__tensor_get_i64(t, 0);
  return MB_STATUS_OK;
}

/* output_datatype (TensorProto id, default float) must be numeric. */
static mb_status sig_output_dtype(mb_op_ctx *ctx, mb_dtype *out) {
  int64_t id = mb__node_attr_int(ctx->node, "output_datatype", MB_DTYPE_FLOAT);
  if (id <= 0 || id >= MB_DTYPE_COUNT || id == MB_DTYPE_STRING ||
      id == MB_DTYPE_BOOL || id == MB_DTYPE_COMPLEX64 ||
      id == MB_DTYPE_COMPLEX128 || mb_dtype_size((mb_dtype)id) == 0)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "output_datatype %lld is not a supported numeric "
                        "type",
                        (long long)id);
  *out = (mb_dtype)id;
  return MB_STATUS_OK;
}

/* ---- the transform ---- */

/* work: 4 * n doubles. Computes the length-n DFT of (re, im)[0..n_in)
 * (zero-padded or truncated to n) into out_re/out_im [0..n_out). inverse
 * uses e^{+i...} and divides by n. */
static void sig_dft(const double *re, const double *im, int64_t n_in, int64_t n,
                    bool inverse, double *out_re, double *out_im, int64_t n_out,
                    double *work) {
  double sign = inverse ? 1.0 : -1.0;
  bool pow2 = n > 0 && (n & (n - 1)) == 0;
  if (pow2) {
    double *xr = work, *xi = work + n;
    for (int64_t i = 0; i < n; i++) {
      xr[i] = i < n_in ? re[i] : 0.0;
      xi[i] = i < n_in && im ? im[i] : 0.0;
    }
    for (int64_t i = 1, j = 0; i < n; i++) { /* bit reversal */
      int64_t bit = n >> 1;
      for (; j & bit; bit >>= 1)
        j ^= bit;
      j ^= bit;
      if (i < j) {
        double t = xr[i];
        xr[i] = xr[j];
        xr[j] = t;
        t = xi[i];
        xi[i] = xi[j];
        xi[j] = t;
      }
    }
    for (int64_t len = 2; len <= n; len <<= 1) {
      double ang = sign * 2 * SIG_PI / (double)len;
      for (int64_t k = 0; k < len / 2; k++) {
        double wr = cos(ang * (double)k), wi = sin(ang * (double)k);
        for (int64_t i = k; i < n; i += len) {
          int64_t j = i + len / 2;
          double tr = xr[j] * wr - xi[j] * wi, ti = xr[j] * wi + xi[j] * wr;
          xr[j] = xr[i] - tr;
          xi[j] = xi[i] - ti;
          xr[i] += tr;
          xi[i] += ti;
        }
      }
    }
    for (int64_t k = 0; k < n_out; k++) {
      out_re[k] = inverse ? xr[k] / (double)n : xr[k];
      out_im[k] = inverse ? xi[k] / (double)n : xi[k];
    }
    return;
  }
  double *cs = work, *sn = work + n;
  for (int64_t m = 0; m < n; m++) {
    cs[m] = cos(2 * SIG_PI * (double)m / (double)n);
    sn[m] = sign * sin(2 * SIG_PI * (double)m / (double)n);
  }
  int64_t used = MB_MIN(n_in, n);
  for (int64_t k = 0; k < n_out; k++) {
    double sr = 0.0, si = 0.0;
    for (int64_t j = 0, m = 0; j < used; j++) {
      double xr = re[j], xi = im ? im[j] : 0.0;
      sr += xr * cs[m] - xi * sn[m];
      si += xr * sn[m] + xi * cs[m];
      m += k;
      if (m >= n)
        m -= n;
    }
    out_re[k] = inverse ? sr / (double)n : sr;
    out_im[k] = inverse ? si / (double)n : si;
  }
}

/* ---- DFT ---- */

typedef struct dft_plan {
  int axis;
  int64_t n; /* dft_length */
  int64_t n_out;
  bool inverse, complex_in;
} dft_plan;

static mb_status dft_plan_make(mb_op_ctx *ctx, dft_plan *p) {
  mb_status st = mb__op_check_arity(ctx, 1, 2);
  if (st)
    return st;
  const mb_tensor *x = ctx->inputs[0];
  char buf[96];
  if (!mb__dtype_is_float(x->dtype))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "input has element type %s; DFT takes floats",
                        mb_dtype_name(x->dtype));
  if (x->rank < 3 || (x->dims[x->rank - 1] != 1 && x->dims[x->rank - 1] != 2))
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "input %s must be [batch, ..., 1 or 2]",
                        mb__shape_str(x->rank, x->dims, buf, sizeof buf));
  int64_t axis = mb__node_attr_int(ctx->node, "axis", 1);
  if ((st = mb__op_axis(ctx, axis, x->rank, "axis", &p->axis)))
    return st;
  if (p->axis == 0 || p->axis == x->rank - 1)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "axis %lld is the batch or the complex axis",
                        (long long)axis);
  p->n = x->dims[p->axis];
  if (mb__op_input(ctx, 1)) {
    MB_OP_NEED_DATA(ctx, 1);
    if ((st = sig_scalar_int(ctx, 1, "dft_length", &p->n)))
      return st;
  }
  if (p->n < 1 || p->n > MB_OP_ATTR_MAX)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "dft_length %lld is invalid",
                        (long long)p->n);
  p->inverse = mb__node_attr_int(ctx->node, "inverse", 0) != 0;
  bool onesided = mb__node_attr_int(ctx->node, "onesided", 0) != 0;
  if (onesided && p->inverse)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "an inverse transform cannot be onesided");
  p->n_out = onesided ? p->n / 2 + 1 : p->n;
  p->complex_in = x->dims[x->rank - 1] == 2;
  return MB_STATUS_OK;
}

static mb_status dft_infer(mb_op_ctx *ctx) {
  dft_plan p;
  mb_status st = dft_plan_make(ctx, &p);
  mb_tensor *y = mb__op_output(ctx, 0);
  if (st || !y)
    return st;
  const mb_tensor *x = ctx->inputs[0];
  int64_t dims[MB_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  dims[p.axis] = p.n_out;
  dims[x->rank - 1] = 2;
  return mb__tensor_set_shape(y, x->dtype, x->rank, dims, ctx->err);
}

static mb_status dft_run(mb_op_ctx *ctx) {
  dft_plan p;
  mb_status st = dft_plan_make(ctx, &p);
  if (st)
    return st;
  const mb_tensor *x = ctx->inputs[0];
  mb_tensor *y = ctx->outputs[0];
  int64_t len = x->dims[p.axis], ci = x->dims[x->rank - 1];
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < p.axis; d++)
    outer *= x->dims[d];
  for (int d = p.axis + 1; d < x->rank - 1; d++)
    inner *= x->dims[d];
  double *buf = mb__op_scratch(
      ctx, 0, sizeof(double) * (size_t)(2 * len + 2 * p.n_out + 4 * p.n));
  if (!buf)
    return MB_STATUS_OUT_OF_MEMORY;
  double *re = buf, *im = re + len, *ore = im + len, *oim = ore + p.n_out,
         *work = oim + p.n_out;
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t i = 0; i < inner; i++) {
      for (int64_t j = 0; j < len; j++) {
        int64_t at = ((o * len + j) * inner + i) * ci;
        re[j] = mb__tensor_get_f64(x, at);
        im[j] = p.complex_in ? mb__tensor_get_f64(x, at + 1) : 0.0;
      }
      sig_dft(re, im, len, p.n, p.inverse, ore, oim, p.n_out, work);
      for (int64_t k = 0; k < p.n_out; k++) {
        int64_t at = ((o * p.n_out + k) * inner + i) * 2;
        mb__tensor_set_f64(y, at, ore[k]);
        mb__tensor_set_f64(y, at + 1, oim[k]);
      }
    }
  }
  return MB_STATUS_OK;
}

/* ---- STFT ---- */

typedef struct stft_plan {
  int64_t step, frame_length, frames, bins;
  bool complex_in;
} stft_plan;

static mb_status stft_plan_make(mb_op_ctx *ctx, stft_plan *p) {
  mb_status st = mb__op_check_arity(ctx, 2, 4);
  if (st)
    return st;
  const mb_tensor *x = ctx->inputs[0], *window = mb__op_input(ctx, 2);
  char buf[96];
  if (!mb__dtype_is_float(x->dtype))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "signal has element type %s; STFT takes floats",
                        mb_dtype_name(x->dtype));
  if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2))
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "signal %s must be [batch, length, 1 or 2]",
                        mb__shape_str(x->rank, x->dims, buf, sizeof buf));
  MB_OP_NEED_DATA(ctx, 1);
  MB_OP_NEED_DATA(ctx, 3);
  if ((st = sig_scalar_int(ctx, 1, "frame_step", &p->step)))
    return st;
  p->frame_length = -1;
  if (window) {
    if (window->rank != 1 || window->dtype != x->dtype)
      return mb__op_error(
          ctx, MB_STATUS_SHAPE, "window is %s %s, expected %s [length]",
          mb_dtype_name(window->dtype),
          mb__shape_str(window->rank, window->dims, buf, sizeof buf),
          mb_dtype_name(x->dtype));
    p->frame_length = window->dims[0];
  }
  if (mb__op_input(ctx, 3)) {
    int64_t fl;
    if ((st = sig_scalar_int(ctx, 3, "frame_length", &fl)))
      return st;
    if (window && fl != p->frame_length)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "frame_length %lld differs from the window's %lld",
                          (long long)fl, (long long)p->frame_length);
    p->frame_length = fl;
  }
  if (p->frame_length < 0)
    return mb__op_error(ctx, MB_STATUS_PARSE,
                        "needs a window or a frame_length");
  if (p->step < 1 || p->frame_length < 1 || p->frame_length > x->dims[1])
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "frame_step %lld and frame_length %lld do not fit a "
                        "signal of %lld samples",
                        (long long)p->step, (long long)p->frame_length,
                        (long long)x->dims[1]);
  p->frames = (x->dims[1] - p->frame_length) / p->step + 1;
  bool onesided = mb__node_attr_int(ctx->node, "onesided", 1) != 0;
  p->bins = onesided ? p->frame_length / 2 + 1 : p->frame_length;
  p->complex_in = x->dims[2] == 2;
  return MB_STATUS_OK;
}

static mb_status stft_infer(mb_op_ctx *ctx) {
  stft_plan p;
  mb_status st = stft_plan_make(ctx, &p);
  mb_tensor *y = mb__op_output(ctx, 0);
  if (st || !y)
    return st;
  const mb_tensor *x = ctx->inputs[0];
  int64_t dims[4] = {x->dims[0], p.frames, p.bins, 2};
  return mb__tensor_set_shape(y, x->dtype, 4, dims, ctx->err);
}

static mb_status stft_run(mb_op_ctx *ctx) {
  stft_plan p;
  mb_status st = stft_plan_make(ctx, &p);
  if (st)
    return st;
  const mb_tensor *x = ctx->inputs[0], *window = mb__op_input(ctx, 2);
  mb_tensor *y = ctx->outputs[0];
  int64_t n = p.frame_length, len = x->dims[1], ci = x->dims[2];
  double *buf = mb__op_scratch(
      ctx, 0, sizeof(double) * (size_t)(2 * n + 2 * p.bins + 4 * n));
  if (!buf)
    return MB_STATUS_OUT_OF_MEMORY;
  double *re = buf, *im = re + n, *ore = im + n, *oim = ore + p.bins,
         *work = oim + p.bins;
  for (int64_t b = 0; b < x->dims[0]; b++) {
    for (int64_t f = 0; f < p.frames; f++) {
      for (int64_t j = 0; j < n; j++) {
        int64_t at = (b * len + f * p.step + j) * ci;
        double w = window ? mb__tensor_get_f64(window, j) : 1.0;
        re[j] = mb__tensor_get_f64(x, at) * w;
        im[j] = p.complex_in ? mb__tensor_get_f64(x, at + 1) * w : 0.0;
      }
      sig_dft(re, im, n, n, false, ore, oim, p.bins, work);
      for (int64_t k = 0; k < p.bins; k++) {
        int64_t at = ((b * p.frames + f) * p.bins + k) * 2;
        mb__tensor_set_f64(y, at, ore[k]);
        mb__tensor_set_f64(y, at + 1, oim[k]);
      }
    }
  }
  return MB_STATUS_OK;
}

/* ---- windows ---- */

/* Cosine-sum windows: w[n] = sum_k a_k cos(2 pi k n / N), N = size for a
 * periodic window, size - 1 for a symmetric one. */
typedef struct sig_window {
  double a[3];
} sig_window;

static const sig_window sig_hann = {{0.5, -0.5, 0.0}};
static const sig_window sig_hamming = {{25.0 / 46.0, -21.0 / 46.0, 0.0}};
static const sig_window sig_blackman = {{0.42, -0.5, 0.08}};

static mb_status window_infer(mb_op_ctx *ctx) {
  mb_status st = mb__op_check_arity(ctx, 1, 1);
  mb_dtype dt;
  int64_t size;
  if (st || (st = sig_output_dtype(ctx, &dt)))
    return st;
  MB_OP_NEED_DATA(ctx, 0);
  if ((st = sig_scalar_int(ctx, 0, "size", &size)))
    return st;
  if (size < 0 || size > MB_OP_ATTR_MAX)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "size %lld is invalid",
                        (long long)size);
  mb_tensor *y = mb__op_output(ctx, 0);
  return y ? mb__tensor_set_shape(y, dt, 1, &size, ctx->err) : MB_STATUS_OK;
}

static mb_status window_run(mb_op_ctx *ctx, const sig_window *w) {
  mb_tensor *y = ctx->outputs[0];
  int64_t size = y->dims[0];
  bool periodic = mb__node_attr_int(ctx->node, "periodic", 1) != 0;
  double n_div = (double)(periodic ? size : size - 1);
  for (int64_t i = 0; i < size; i++) {
    double v = w->a[0];
    if (n_div > 0)
      for (int k = 1; k < 3; k++)
        v += w->a[k] * cos(2 * SIG_PI * k * (double)i / n_div);
    mb__tensor_set_f64(y, i, v);
  }
  return MB_STATUS_OK;
}

static mb_status hann_run(mb_op_ctx *ctx) {
  return window_run(ctx, &sig_hann);
}
static mb_status hamming_run(mb_op_ctx *ctx) {
  return window_run(ctx, &sig_hamming);
}
static mb_status blackman_run(mb_op_ctx *ctx) {
  return window_run(ctx, &sig_blackman);
}

/* ---- MelWeightMatrix ---- */

typedef struct mel_plan {
  int64_t bins, dft_length, sample_rate;
  double lower_hz, upper_hz;
} mel_plan;

static mb_status mel_plan_make(mb_op_ctx *ctx, mel_plan *p) {
  mb_status st = mb__op_check_arity(ctx, 5, 5);
  if (st)
    return st;
  for (int i = 0; i < 5; i++)
    MB_OP_NEED_DATA(ctx, i);
  if ((st = sig_scalar_int(ctx, 0, "num_mel_bins", &p->bins)) ||
      (st = sig_scalar_int(ctx, 1, "dft_length", &p->dft_length)) ||
      (st = sig_scalar_int(ctx, 2, "sample_rate", &p->sample_rate)))
    return st;
  for (int i = 3; i < 5; i++) {
    const mb_tensor *t = ctx->inputs[i];
    if (t->numel != 1 || !mb__dtype_is_float(t->dtype))
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "input %d (an edge in hertz) must be one float", i);
  }
  p->lower_hz = mb__tensor_get_f64(ctx->inputs[3], 0);
  p->upper_hz = mb__tensor_get_f64(ctx->inputs[4], 0);
  if (p->bins < 1 || p->bins > MB_OP_ATTR_MAX || p->dft_length < 1 ||
      p->dft_length > MB_OP_ATTR_MAX || p->sample_rate < 1 ||
      !(p->lower_hz >= 0 && p->lower_hz < p->upper_hz))
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "num_mel_bins %lld, dft_length %lld, sample_rate "
                        "%lld, edges %g..%g are not a valid mel filter bank",
                        (long long)p->bins, (long long)p->dft_length,
                        (long long)p->sample_rate, p->lower_hz, p->upper_hz);
  return MB_STATUS_OK;
}

static mb_status mel_infer(mb_op_ctx *ctx) {
  mel_plan p;
  mb_dtype dt;
  mb_status st = mel_plan_make(ctx, &p);
  if (st || (st = sig_output_dtype(ctx, &dt)))
    return st;
  int64_t dims[2] = {p.dft_length / 2 + 1, p.bins};
  mb_tensor *y = mb__op_output(ctx, 0);
  return y ? mb__tensor_set_shape(y, dt, 2, dims, ctx->err) : MB_STATUS_OK;
}

/* Triangular filters between mel-spaced points, as the ONNX reference
 * computes them: the points are spectrogram bins
 * floor((dft_length + 1) * hz / sample_rate). */
static mb_status mel_run(mb_op_ctx *ctx) {
  mel_plan p;
  mb_status st = mel_plan_make(ctx, &p);
  if (st)
    return st;
  mb_tensor *y = ctx->outputs[0];
  int64_t rows = y->dims[0];
  int64_t *pts = mb__op_scratch(ctx, 0, sizeof(int64_t) * (size_t)(p.bins + 2));
  if (!pts)
    return MB_STATUS_OUT_OF_MEMORY;
  double low_mel = 2595.0 * log10(1.0 + p.lower_hz / 700.0);
  double high_mel = 2595.0 * log10(1.0 + p.upper_hz / 700.0);
  double step = (high_mel - low_mel) / (double)(p.bins + 2);
  for (int64_t i = 0; i < p.bins + 2; i++) {
    double hz = 700.0 * (pow(10.0, ((double)i * step + low_mel) / 2595.0) - 1);
    pts[i] =
        (int64_t)floor((double)(p.dft_length + 1) * hz / (double)p.sample_rate);
    pts[i] = MB_MAX(0, MB_MIN(pts[i], rows - 1));
  }
  for (int64_t i = 0; i < y->numel; i++)
    mb__tensor_set_f64(y, i, 0.0);
  for (int64_t m = 0; m < p.bins; m++) {
    int64_t lo = pts[m], mid = pts[m + 1], hi = pts[m + 2];
    if (mid == lo)
      mb__tensor_set_f64(y, mid * p.bins + m, 1.0);
    else
      for (int64_t j = lo; j <= mid; j++)
        mb__tensor_set_f64(y, j * p.bins + m,
                           (double)(j - lo) / (double)(mid - lo));
    for (int64_t j = mid; j < hi; j++)
      mb__tensor_set_f64(y, j * p.bins + m,
                         (double)(hi - j) / (double)(hi - mid));
  }
  return MB_STATUS_OK;
}

const mb_op_def mb__ops_signal[] = {
    {"", "DFT", 17, dft_infer, dft_run, 0},
    {"", "STFT", 17, stft_infer, stft_run, 0},
    {"", "HannWindow", 17, window_infer, hann_run, 0},
    {"", "HammingWindow", 17, window_infer, hamming_run, 0},
    {"", "BlackmanWindow", 17, window_infer, blackman_run, 0},
    {"", "MelWeightMatrix", 17, mel_infer, mel_run, 0},
};
MB_OP_TABLE_END(signal);
