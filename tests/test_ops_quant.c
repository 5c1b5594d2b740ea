/* Quantisation operators: QuantizeLinear, DequantizeLinear and
 * DynamicQuantizeLinear (src/ops/quantize.c), and the integer products that
 * quantised models run (QLinearConv, ConvInteger in src/ops/conv.c;
 * QLinearMatMul, MatMulInteger in src/ops/gemm.c).
 *
 * Single nodes are checked against naive references written here from the
 * ONNX definitions (and ONNX Runtime's arithmetic where ONNX leaves room),
 * including rounding half to even, saturation, default zero points,
 * negative axes and every error a model can trigger. Whole QDQ, QOperator
 * and dynamically quantised graphs, as ONNX Runtime's quantiser writes
 * them (int8 symmetric per-channel weights, uint8 or int8 activations), are
 * then compared with ONNX Runtime when its library is installed. */
#include "op_harness.h"
#include "passes/quantize.h"
#include "runtime/runtime.h"

static uint32_t rng_state = 2024;
static float rnd(void) { /* uniform in [-1, 1) */
  rng_state = rng_state * 1664525u + 1013904223u;
  return (float)((rng_state >> 8) & 0xffff) / 32768.0f - 1.0f;
}
/* Uniform integer in [lo, hi]. */
static int rnd_int(int lo, int hi) {
  rng_state = rng_state * 1664525u + 1013904223u;
  return lo + (int)((rng_state >> 8) % (uint32_t)(hi - lo + 1));
}

#define V(...) ((const double[]){__VA_ARGS__})

static int64_t count_of(int rank, const int64_t *dims) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++)
    n *= dims[d];
  return n;
}

/* Expected integer outputs, element by element. */
static int expect_ints(const char *what, const mb_tensor *t, mb_dtype dt,
                       const int64_t *want, int64_t n) {
  if (t->dtype != dt || t->numel != n) {
    fprintf(stderr, "  %s: %s with %lld elements, expected %s with %lld\n",
            what, mb_dtype_name(t->dtype), (long long)t->numel,
            mb_dtype_name(dt), (long long)n);
    return 1;
  }
  for (int64_t i = 0; i < n; i++)
    if (mb__tensor_get_i64(t, i) != want[i]) {
      fprintf(stderr, "  %s: element %lld is %lld, expected %lld\n", what,
              (long long)i, (long long)mb__tensor_get_i64(t, i),
              (long long)want[i]);
      return 1;
    }
  return 0;
}

static int expect_floats(const char *what, const mb_tensor *t, mb_dtype dt,
                         const double *want, int64_t n, double tol) {
  if (t->dtype != dt || t->numel != n) {
    fprintf(stderr, "  %s: %s with %lld elements, expected %s with %lld\n",
            what, mb_dtype_name(t->dtype), (long long)t->numel,
            mb_dtype_name(dt), (long long)n);
    return 1;
  }
  for (int64_t i = 0; i < n; i++) {
    double g = mb__tensor_get_f64(t, i);
    if (!(fabs(g - want[i]) <= tol)) {
      fprintf(stderr, "  %s: element %lld is %.9g, expected %.9g\n", what,
              (long long)i, g, want[i]);
      return 1;
    }
  }
  return 0;
}

/* Runs one node; the caller owns `out` (n_out fresh tensors). On failure
 * returns the status and leaves the message in oc->err. */
typedef struct node_run {
  op_case oc;
  mb_tensor *out[3];
  mb_status status;
} node_run;

static void node_run_free(node_run *r) {
  free_tensors(r->out, 3);
  case_free(&r->oc);
}

/* ------------------------------------------------------------------------ */
/* References                                                                */
/* ------------------------------------------------------------------------ */

static int64_t clamp_i64(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

/* saturate(round_half_even(x / scale) + zp), in float32 like ORT. */
static int64_t ref_quantize(float x, float scale, int64_t zp, int64_t lo,
                            int64_t hi) {
  float q = rintf(x / scale); /* default rounding: half to even */
  if (q > 1e9f)
    return hi;
  if (q < -1e9f)
    return lo;
  return clamp_i64((int64_t)q + zp, lo, hi);
}

static void dtype_range(mb_dtype dt, int64_t *lo, int64_t *hi) {
  switch (dt) {
  case MB_DTYPE_INT8:
    *lo = -128, *hi = 127;
    break;
  case MB_DTYPE_UINT16:
    *lo = 0, *hi = 65535;
    break;
  case MB_DTYPE_INT16:
    *lo = -32768, *hi = 32767;
    break;
  default:
    *lo = 0, *hi = 255;
    break;
  }
}

/* ------------------------------------------------------------------------ */
/* QuantizeLinear                                                            */
/* ------------------------------------------------------------------------ */

/* QuantizeLinear of x (float32 values) with optional zp; n_in 2 or 3. */
static mb_status quantize(node_run *r, int64_t opset, mb_tensor *x,
                          mb_tensor *scale, mb_tensor *zp, int64_t axis) {
  mb_tensor *in[3] = {x, scale, zp};
  memset(r, 0, sizeof *r);
  if (case_init(&r->oc, "", "QuantizeLinear", zp ? 3 : 2, 1))
    return MB_STATUS_OUT_OF_MEMORY;
  if (axis != 1)
    case_int(&r->oc, "axis", axis);
  r->out[0] = empty_output();
  r->status = case_run(&r->oc, opset, in, zp ? 3 : 2, r->out, 1);
  return r->status;
}

TEST(quantize_rounds_half_to_even_and_saturates) {
  static const double xs[] = {0.5,  1.5,   2.5,    -0.5,     -1.5,     -2.5,
                              3.49, 127.5, -128.5, 1000.,    -1000.,   126.5,
                              0.0,  -0.0,  NAN,    INFINITY, -INFINITY};
  int64_t n = (int64_t)MB_ARRAY_COUNT(xs), dims[1] = {n};
  /* int8, zero point 0, scale 1 */
  static const int64_t want_i8[] = {0,   2,    2,   0, -2, -2,   3,   127, -128,
                                    127, -128, 126, 0, 0,  -128, 127, -128};
  mb_tensor *x = tensor_of(MB_DTYPE_FLOAT, 1, dims, xs);
  mb_tensor *s1 = tensor_of(MB_DTYPE_FLOAT, 0, NULL, V(1.0));
  mb_tensor *z8 = tensor_of(MB_DTYPE_INT8, 0, NULL, V(0));
  node_run r;
  ASSERT_OK(quantize(&r, 13, x, s1, z8, 1), &r.oc.err);
  if (expect_ints("int8", r.out[0], MB_DTYPE_INT8, want_i8, n))
    return 1;
  node_run_free(&r);
  /* No zero point: uint8 with zero point 0; negatives saturate to 0, NaN
   * to the low end as ONNX Runtime's vector kernel does. */
  static const int64_t want_u8[] = {0,   2, 2,   0, 0, 0, 3,   128, 0,
                                    255, 0, 126, 0, 0, 0, 255, 0};
  ASSERT_OK(quantize(&r, 10, x, s1, NULL, 1), &r.oc.err);
  if (expect_ints("uint8 default zero point", r.out[0], MB_DTYPE_UINT8, want_u8,
                  n))
    return 1;
  node_run_free(&r);
  /* uint8 with zero point 128 and scale 0.5: x / 0.5 + 128 */
  mb_tensor *s05 = tensor_of(MB_DTYPE_FLOAT, 1, (const int64_t[]){1}, V(0.5));
  mb_tensor *z128 = tensor_of(MB_DTYPE_UINT8, 1, (const int64_t[]){1}, V(128));
  ASSERT_OK(quantize(&r, 13, x, s05, z128, 1), &r.oc.err);
  int64_t want[32];
  for (int64_t i = 0; i < n; i++)
    want[i] = isnan(xs[i]) ? 0 : ref_quantize((float)xs[i], 0.5f, 128, 0, 255);
  if (expect_ints("uint8 zero point 128", r.out[0], MB_DTYPE_UINT8, want, n))
    return 1;
  node_run_free(&r);
  mb_tensor_free(x);
  mb_tensor_free(s1);
  mb_tensor_free(z8);
  mb_tensor_free(s05);
  mb_tensor_free(z128);
  return 0;
}

/* Quantises a random [2, 3, 4] tensor per axis and checks every element. */
static int check_per_axis(int64_t axis, mb_dtype zdt, int64_t opset) {
  int64_t dims[3] = {2, 3, 4};
  int a = (int)(axis < 0 ? axis + 3 : axis);
  int64_t c = dims[a];
  double xv[24], sv[4], zv[4];
  int64_t lo, hi, want[24];
  dtype_range(zdt, &lo, &hi);
  for (int i = 0; i < 24; i++)
    xv[i] = 4.0 * rnd();
  for (int64_t k = 0; k < c; k++) {
    sv[k] = 0.01 + 0.05 * (k + 1);
    zv[k] = (double)rnd_int((int)MB_MAX(lo, -20), (int)MB_MIN(hi, 20));
  }
  int64_t inner = 1;
  for (int d = a + 1; d < 3; d++)
    inner *= dims[d];
  for (int i = 0; i < 24; i++) {
    int64_t k = (i / inner) % c;
    want[i] = ref_quantize((float)xv[i], (float)sv[k], (int64_t)zv[k], lo, hi);
  }
  mb_tensor *x = tensor_of(MB_DTYPE_FLOAT, 3, dims, xv);
  mb_tensor *s = tensor_of(MB_DTYPE_FLOAT, 1, &c, sv);
  mb_tensor *z = tensor_of(zdt, 1, &c, zv);
  node_run r;
  int rc = 0;
  if (quantize(&r, opset, x, s, z, axis)) {
    fprintf(stderr, "  axis %lld: %s\n", (long long)axis, r.oc.err.message);
    rc = 1;
  }
  if (!rc)
    rc = expect_ints("per axis", r.out[0], zdt, want, 24);
  node_run_free(&r);
  mb_tensor_free(x);
  mb_tensor_free(s);
  mb_tensor_free(z);
  return rc;
}

TEST(quantize_per_axis) {
  static const int64_t axes[] = {0, 1, 2, -1, -2, -3};
  for (size_t i = 0; i < MB_ARRAY_COUNT(axes); i++) {
    if (check_per_axis(axes[i], MB_DTYPE_INT8, 13) ||
        check_per_axis(axes[i], MB_DTYPE_UINT8, 13) ||
        check_per_axis(axes[i], MB_DTYPE_INT8, 19))
      TEST_FAIL_("axis %lld differs", (long long)axes[i]);
  }
  /* 16-bit zero points need opset 21. */
  if (check_per_axis(1, MB_DTYPE_INT16, 21) ||
      check_per_axis(-1, MB_DTYPE_UINT16, 21))
    TEST_FAIL_("16-bit per-axis quantisation differs");
  return 0;
}

TEST(quantize_errors_name_the_node) {
  int64_t dims[3] = {2, 3, 4}, three = 3, five = 5;
  mb_tensor *x = tensor_of(MB_DTYPE_FLOAT, 3, dims, NULL);
  mb_tensor *s3 = tensor_of(MB_DTYPE_FLOAT, 1, &three, V(1, 1, 1));
  mb_tensor *s5 = tensor_of(MB_DTYPE_FLOAT, 1, &five, V(1, 1, 1, 1, 1));
  mb_tensor *z5 = tensor_of(MB_DTYPE_INT8, 1, &five, NULL);
  mb_tensor *z1 = tensor_of(MB_DTYPE_INT8, 0, NULL, NULL);
  mb_tensor *z32 = tensor_of(MB_DTYPE_INT32, 0, NULL, NULL);
  mb_tensor *s1 = tensor_of(MB_DTYPE_FLOAT, 0, NULL, V(1));
  mb_tensor *h = tensor_of(MB_DTYPE_FLOAT16, 3, dims, NULL);
  mb_tensor *hs = tensor_of(MB_DTYPE_FLOAT16, 0, NULL, V(1));
  node_run r;
  /* Scale length does not match the axis. */
  ASSERT_EQ(quantize(&r, 13, x, s5, NULL, 1), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(r.oc.err.message, "QuantizeLinear 'n'");
  ASSERT_CONTAINS(r.oc.err.message, "y_scale has shape [5]");
  ASSERT_CONTAINS(r.oc.err.message, "along axis 1");
  node_run_free(&r);
  /* Zero point shape differs from the scale's. */
  ASSERT_EQ(quantize(&r, 13, x, s3, z1, 1), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(r.oc.err.message, "y_zero_point has shape []");
  node_run_free(&r);
  ASSERT_EQ(quantize(&r, 13, x, s3, z5, 1), MB_STATUS_SHAPE);
  node_run_free(&r);
  /* Per-axis scales did not exist in opset 10. */
  ASSERT_EQ(quantize(&r, 10, x, s3, NULL, 1), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(r.oc.err.message, "needs opset 13");
  node_run_free(&r);
  /* Axis out of range. */
  ASSERT_EQ(quantize(&r, 13, x, s3, NULL, 3), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(r.oc.err.message, "axis 3 is out of range");
  node_run_free(&r);
  ASSERT_EQ(quantize(&r, 13, x, s3, NULL, -4), MB_STATUS_SHAPE);
  node_run_free(&r);
  /* An int32 zero point is not a quantised output type. */
  ASSERT_EQ(quantize(&r, 13, x, s1, z32, 1), MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(r.oc.err.message, "output type int32");
  node_run_free(&r);
  /* float16 x needs opset 19, and then a float16 scale. */
  ASSERT_EQ(quantize(&r, 13, h, hs, NULL, 1), MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(r.oc.err.message, "x has type float16");
  node_run_free(&r);
  ASSERT_EQ(quantize(&r, 19, h, s1, NULL, 1), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(r.oc.err.message, "y_scale has type float32");
  node_run_free(&r);
  /* float16 scale before opset 19. */
  ASSERT_EQ(quantize(&r, 13, x, hs, NULL, 1), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(r.oc.err.message, "opset 13 takes float32");
  node_run_free(&r);
  /* A missing scale. */
  {
    mb_tensor *in[2] = {x, NULL};
    ASSERT_EQ(case_init(&r.oc, "", "QuantizeLinear", 2, 1), 0);
    r.out[0] = empty_output();
    ASSERT_EQ(case_run(&r.oc, 13, in, 2, r.out, 1), MB_STATUS_PARSE);
    ASSERT_CONTAINS(r.oc.err.message, "required input 1 is missing");
    free_tensors(r.out, 1);
    case_free(&r.oc);
  }
  mb_tensor *all[] = {x, s3, s5, z5, z1, z32, s1, h, hs};
  free_tensors(all, (int)MB_ARRAY_COUNT(all));
  return 0;
}

TEST(quantize_float16_opset19) {
  int64_t n = 6;
  static const double xs[] = {0.1, -0.7, 1.3, 2.0, -3.9, 0.05};
  mb_tensor *x = tensor_of(MB_DTYPE_FLOAT16, 1, &n, xs);
  mb_tensor *s = tensor_of(MB_DTYPE_FLOAT16, 0, NULL, V(0.0234375));
  mb_tensor *z = tensor_of(MB_DTYPE_INT8, 0, NULL, V(-5));
  int64_t want[6];
  for (int i = 0; i < 6; i++)
    want[i] = ref_quantize((float)mb__tensor_get_f64(x, i), 0.0234375f, -5,
                           -128, 127);
  node_run r;
  ASSERT_OK(quantize(&r, 19, x, s, z, 1), &r.oc.err);
  if (expect_ints("float16 x", r.out[0], MB_DTYPE_INT8, want, 6))
    return 1;
  node_run_free(&r);
  mb_tensor *all[] = {x, s, z};
  free_tensors(all, 3);
  return 0;
}

TEST(quantize_opset21_blocks_and_output_dtype) {
  /* x [2, 6], axis 1, block_size 4: scale [2, 2] (ceil(6 / 4) = 2). */
  int64_t xd[2] = {2, 6}, sd[2] = {2, 2};
  double xv[12];
  for (int i = 0; i < 12; i++)
    xv[i] = 3.0 * rnd();
  static const double sv[] = {0.01, 0.02, 0.03, 0.05};
  static const double zv[] = {-300, 7, 1000, 0};
  int64_t want[12];
  for (int i = 0; i < 12; i++) {
    int p = (i / 6) * 2 + (i % 6) / 4;
    want[i] =
        ref_quantize((float)xv[i], (float)sv[p], (int64_t)zv[p], -32768, 32767);
  }
  mb_tensor *x = tensor_of(MB_DTYPE_FLOAT, 2, xd, xv);
  mb_tensor *s = tensor_of(MB_DTYPE_FLOAT, 2, sd, sv);
  mb_tensor *z = tensor_of(MB_DTYPE_INT16, 2, sd, zv);
  mb_tensor *in[3] = {x, s, z};
  node_run r = {0};
  ASSERT_EQ(case_init(&r.oc, "", "QuantizeLinear", 3, 1), 0);
  case_int(&r.oc, "block_size", 4);
  r.out[0] = empty_output();
  ASSERT_OK(case_run(&r.oc, 21, in, 3, r.out, 1), &r.oc.err);
  if (expect_ints("blocked int16", r.out[0], MB_DTYPE_INT16, want, 12))
    return 1;
  node_run_free(&r);
  /* The same with block_size 3 needs a scale of [2, 2] too; 5 would need
   * [2, 2] as well, 2 needs [2, 3]: a [2, 2] scale is rejected. */
  ASSERT_EQ(case_init(&r.oc, "", "QuantizeLinear", 3, 1), 0);
  case_int(&r.oc, "block_size", 2);
  r.out[0] = empty_output();
  ASSERT_EQ(case_run(&r.oc, 21, in, 3, r.out, 1), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(r.oc.err.message, "block_size 2");
  node_run_free(&r);
  /* output_dtype without a zero point. */
  mb_tensor *s1 = tensor_of(MB_DTYPE_FLOAT, 0, NULL, V(0.001));
  mb_tensor *in2[2] = {x, s1};
  ASSERT_EQ(case_init(&r.oc, "", "QuantizeLinear", 2, 1), 0);
  case_int(&r.oc, "output_dtype", MB_DTYPE_UINT16);
  r.out[0] = empty_output();
  ASSERT_OK(case_run(&r.oc, 21, in2, 2, r.out, 1), &r.oc.err);
  for (int i = 0; i < 12; i++)
    want[i] = ref_quantize((float)xv[i], 0.001f, 0, 0, 65535);
  if (expect_ints("output_dtype uint16", r.out[0], MB_DTYPE_UINT16, want, 12))
    return 1;
  node_run_free(&r);
  /* output_dtype contradicting the zero point. */
  mb_tensor *z8 = tensor_of(MB_DTYPE_INT8, 0, NULL, V(0));
  mb_tensor *in3[3] = {x, s1, z8};
  ASSERT_EQ(case_init(&r.oc, "", "QuantizeLinear", 3, 1), 0);
  case_int(&r.oc, "output_dtype", MB_DTYPE_UINT8);
  r.out[0] = empty_output();
  ASSERT_EQ(case_run(&r.oc, 21, in3, 3, r.out, 1), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(r.oc.err.message, "output_dtype is uint8 but y_zero_point");
  node_run_free(&r);
  /* 16-bit outputs did not exist before opset 21. */
  mb_tensor *z16 = tensor_of(MB_DTYPE_INT16, 0, NULL, V(0));
  mb_tensor *in4[3] = {x, s1, z16};
  ASSERT_EQ(case_init(&r.oc, "", "QuantizeLinear", 3, 1), 0);
  r.out[0] = empty_output();
  ASSERT_EQ(case_run(&r.oc, 19, in4, 3, r.out, 1), MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(r.oc.err.message, "int16 is not supported at opset 19");
  node_run_free(&r);
  mb_tensor *all[] = {x, s, z, s1, z8, z16};
  free_tensors(all, 6);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* DequantizeLinear                                                          */
/* ------------------------------------------------------------------------ */

static mb_status dequantize(node_run *r, int64_t opset, mb_tensor *x,
                            mb_tensor *scale, mb_tensor *zp, int64_t axis) {
  mb_tensor *in[3] = {x, scale, zp};
  memset(r, 0, sizeof *r);
  if (case_init(&r->oc, "", "DequantizeLinear", zp ? 3 : 2, 1))
    return MB_STATUS_OUT_OF_MEMORY;
  if (axis != 1)
    case_int(&r->oc, "axis", axis);
  r->out[0] = empty_output();
  r->status = case_run(&r->oc, opset, in, zp ? 3 : 2, r->out, 1);
  return r->status;
}

TEST(dequantize_per_tensor_and_axis) {
  int64_t n = 6, dims[2] = {2, 3}, three = 3, two = 2;
  node_run r;
  /* uint8 without a zero point */
  mb_tensor *x = tensor_of(MB_DTYPE_UINT8, 1, &n, V(0, 1, 127, 128, 254, 255));
  mb_tensor *s = tensor_of(MB_DTYPE_FLOAT, 0, NULL, V(0.5));
  ASSERT_OK(dequantize(&r, 10, x, s, NULL, 1), &r.oc.err);
  if (expect_floats("uint8", r.out[0], MB_DTYPE_FLOAT,
                    V(0, 0.5, 63.5, 64, 127, 127.5), 6, 0))
    return 1;
  node_run_free(&r);
  /* int8 with per-axis scale and zero point along axis -1 (= 1) */
  mb_tensor *x8 =
      tensor_of(MB_DTYPE_INT8, 2, dims, V(-128, 0, 127, 5, -5, 100));
  mb_tensor *s3 = tensor_of(MB_DTYPE_FLOAT, 1, &three, V(0.1, 0.2, 0.25));
  mb_tensor *z3 = tensor_of(MB_DTYPE_INT8, 1, &three, V(0, -10, 10));
  double want[6];
  static const int8_t xq[6] = {-128, 0, 127, 5, -5, 100};
  static const float sc[3] = {0.1f, 0.2f, 0.25f};
  static const int zq[3] = {0, -10, 10};
  for (int i = 0; i < 6; i++)
    want[i] = (float)(xq[i] - zq[i % 3]) * sc[i % 3];
  ASSERT_OK(dequantize(&r, 13, x8, s3, z3, -1), &r.oc.err);
  if (expect_floats("int8 axis -1", r.out[0], MB_DTYPE_FLOAT, want, 6, 0))
    return 1;
  node_run_free(&r);
  /* along axis 0 (= -2) */
  mb_tensor *s2 = tensor_of(MB_DTYPE_FLOAT, 1, &two, V(0.5, 2));
  mb_tensor *z2 = tensor_of(MB_DTYPE_INT8, 1, &two, V(1, -1));
  ASSERT_OK(dequantize(&r, 13, x8, s2, z2, -2), &r.oc.err);
  if (expect_floats("int8 axis -2", r.out[0], MB_DTYPE_FLOAT,
                    V(-64.5, -0.5, 63, 12, -8, 202), 6, 0))
    return 1;
  node_run_free(&r);
  /* int32 biases: per-channel scale, no zero point */
  mb_tensor *b =
      tensor_of(MB_DTYPE_INT32, 1, &three, V(-2147483648.0, 0, 2147483647.0));
  ASSERT_OK(dequantize(&r, 13, b, s3, NULL, 0), &r.oc.err);
  /* float32 arithmetic: (float)x * scale */
  if (expect_floats("int32", r.out[0], MB_DTYPE_FLOAT,
                    V(-2147483648.0f * 0.1f, 0, 2147483647.0f * 0.25f), 3, 0))
    return 1;
  node_run_free(&r);
  /* an int32 zero point must be 0 */
  mb_tensor *bz = tensor_of(MB_DTYPE_INT32, 1, &three, V(0, 3, 0));
  ASSERT_EQ(dequantize(&r, 13, b, s3, bz, 0), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(r.oc.err.message, "DequantizeLinear 'n'");
  ASSERT_CONTAINS(r.oc.err.message, "x_zero_point[1] is 3");
  node_run_free(&r);
  /* zero point type differs from x */
  mb_tensor *zu8 = tensor_of(MB_DTYPE_UINT8, 1, &three, NULL);
  ASSERT_EQ(dequantize(&r, 13, x8, s3, zu8, 1), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(r.oc.err.message, "x_zero_point has type uint8");
  node_run_free(&r);
  /* scale length does not match */
  ASSERT_EQ(dequantize(&r, 13, x8, s2, NULL, 1), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(r.oc.err.message, "x_scale has shape [2]");
  node_run_free(&r);
  /* float x is not quantised */
  mb_tensor *f = tensor_of(MB_DTYPE_FLOAT, 1, &n, NULL);
  ASSERT_EQ(dequantize(&r, 13, f, s, NULL, 1), MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(r.oc.err.message, "x has type float32");
  node_run_free(&r);
  mb_tensor *all[] = {x, s, x8, s3, z3, s2, z2, b, bz, zu8, f};
  free_tensors(all, (int)MB_ARRAY_COUNT(all));
  return 0;
}

TEST(dequantize_float16_and_blocks) {
  int64_t dims[2] = {2, 3}, sd[2] = {1, 3};
  node_run r;
  mb_tensor *x = tensor_of(MB_DTYPE_INT8, 2, dims, V(-7, 3, 100, 1, -128, 9));
  mb_tensor *hs = tensor_of(MB_DTYPE_FLOAT16, 0, NULL, V(0.0999755859375));
  ASSERT_OK(dequantize(&r, 19, x, hs, NULL, 1), &r.oc.err);
  double want[6];
  static const int xq[6] = {-7, 3, 100, 1, -128, 9};
  for (int i = 0; i < 6; i++)
    want[i] = mb__f16_to_f32(mb__f32_to_f16((float)xq[i] * 0.0999755859375f));
  if (expect_floats("float16 scale", r.out[0], MB_DTYPE_FLOAT16, want, 6, 0))
    return 1;
  node_run_free(&r);
  /* float16 scales did not exist before opset 19 */
  ASSERT_EQ(dequantize(&r, 13, x, hs, NULL, 1), MB_STATUS_SHAPE);
  node_run_free(&r);
  /* blocked along axis 0 with block_size 2: scale [1, 3] */
  mb_tensor *bs = tensor_of(MB_DTYPE_FLOAT, 2, sd, V(0.5, 0.25, 2));
  mb_tensor *bz = tensor_of(MB_DTYPE_INT8, 2, sd, V(1, 2, 3));
  mb_tensor *in[3] = {x, bs, bz};
  ASSERT_EQ(case_init(&r.oc, "", "DequantizeLinear", 3, 1), 0);
  case_int(&r.oc, "axis", 0);
  case_int(&r.oc, "block_size", 2);
  r.out[0] = empty_output();
  ASSERT_OK(case_run(&r.oc, 21, in, 3, r.out, 1), &r.oc.err);
  if (expect_floats("blocked", r.out[0], MB_DTYPE_FLOAT,
                    V(-4, 0.25, 194, 0, -32.5, 12), 6, 0))
    return 1;
  node_run_free(&r);
  /* int16 from opset 21 */
  mb_tensor *x16 =
      tensor_of(MB_DTYPE_INT16, 2, dims, V(-32768, 32767, 0, 1, -1, 1000));
  mb_tensor *z16 = tensor_of(MB_DTYPE_INT16, 0, NULL, V(-1000));
  mb_tensor *s = tensor_of(MB_DTYPE_FLOAT, 0, NULL, V(0.5));
  ASSERT_OK(dequantize(&r, 21, x16, s, z16, 1), &r.oc.err);
  if (expect_floats("int16", r.out[0], MB_DTYPE_FLOAT,
                    V(-15884, 16883.5, 500, 500.5, 499.5, 1000), 6, 0))
    return 1;
  node_run_free(&r);
  ASSERT_EQ(dequantize(&r, 19, x16, s, z16, 1), MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(r.oc.err.message, "x has type int16; opset 19");
  node_run_free(&r);
  mb_tensor *all[] = {x, hs, bs, bz, x16, z16, s};
  free_tensors(all, (int)MB_ARRAY_COUNT(all));
  return 0;
}

/* Quantise then dequantise: within half a step of the original inside the
 * representable range, across threads. */
TEST(quantize_dequantize_round_trip_threads) {
  int64_t dims[2] = {300, 257}, c = 257;
  int64_t n = dims[0] * dims[1];
  double *xv = malloc(sizeof(double) * (size_t)n);
  double sv[257], zv[257];
  ASSERT(xv);
  for (int64_t i = 0; i < n; i++)
    xv[i] = 2.0 * rnd();
  for (int64_t k = 0; k < c; k++) {
    sv[k] = 2.0 / 127 * (1 + k % 3);
    zv[k] = 0;
  }
  mb_tensor *x = tensor_of(MB_DTYPE_FLOAT, 2, dims, xv);
  mb_tensor *s = tensor_of(MB_DTYPE_FLOAT, 1, &c, sv);
  mb_tensor *z = tensor_of(MB_DTYPE_INT8, 1, &c, zv);
  mb_threadpool *pool = mb__threadpool_create(3);
  ASSERT(x && s && z && pool);
  mb_tensor *in[3] = {x, s, z};
  mb_tensor *q1[1] = {empty_output()}, *q3[1] = {empty_output()};
  mb_tensor *back[1] = {empty_output()};
  op_case oc;
  ASSERT_EQ(case_init(&oc, "", "QuantizeLinear", 3, 1), 0);
  case_int(&oc, "axis", -1);
  ASSERT_OK(case_run(&oc, 13, in, 3, q1, 1), &oc.err);
  ASSERT_OK(case_run_pool(&oc, 13, in, 3, q3, 1, pool), &oc.err);
  case_free(&oc);
  ASSERT_EQ(memcmp(q1[0]->data, q3[0]->data, (size_t)n), 0);
  mb_tensor *din[3] = {q3[0], s, z};
  ASSERT_EQ(case_init(&oc, "", "DequantizeLinear", 3, 1), 0);
  case_int(&oc, "axis", 1);
  ASSERT_OK(case_run_pool(&oc, 13, din, 3, back, 1, pool), &oc.err);
  case_free(&oc);
  for (int64_t i = 0; i < n; i++) {
    double step = sv[i % c];
    double got = ((const float *)back[0]->data)[i];
    if (!(fabs(got - xv[i]) <= step / 2 * 1.0001))
      TEST_FAIL_("element %lld: %g became %g (step %g)", (long long)i, xv[i],
                 got, step);
  }
  mb__threadpool_free(pool);
  free(xv);
  mb_tensor *all[] = {x, s, z};
  free_tensors(all, 3);
  free_tensors(q1, 1);
  free_tensors(q3, 1);
  free_tensors(back, 1);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* DynamicQuantizeLinear                                                     */
/* ------------------------------------------------------------------------ */

static int check_dynamic(const char *what, const double *xv, int64_t n,
                         double want_scale, int64_t want_zp,
                         const int64_t *want_y) {
  mb_tensor *x = tensor_of(MB_DTYPE_FLOAT, 1, &n, xv);
  node_run r = {0};
  int rc = case_init(&r.oc, "", "DynamicQuantizeLinear", 1, 3);
  for (int i = 0; i < 3; i++)
    r.out[i] = empty_output();
  mb_status st = case_run(&r.oc, 11, &x, 1, r.out, 3);
  if (st) {
    fprintf(stderr, "  %s: %s\n", what, r.oc.err.message);
    rc = 1;
  }
  if (!rc && (r.out[1]->dtype != MB_DTYPE_FLOAT || r.out[1]->rank != 0 ||
              r.out[2]->dtype != MB_DTYPE_UINT8 || r.out[2]->rank != 0)) {
    fprintf(stderr, "  %s: scale and zero point must be scalars\n", what);
    rc = 1;
  }
  if (!rc)
    rc = expect_floats(what, r.out[1], MB_DTYPE_FLOAT, &want_scale, 1, 0) ||
         expect_ints(what, r.out[2], MB_DTYPE_UINT8, &want_zp, 1) ||
         expect_ints(what, r.out[0], MB_DTYPE_UINT8, want_y, n);
  node_run_free(&r);
  mb_tensor_free(x);
  return rc;
}

TEST(dynamic_quantize) {
  /* The three examples of the ONNX operator documentation. */
  if (check_dynamic("onnx example", V(0, 2, -3, -2.5, 1.34, 0.5), 6,
                    (float)(5.0f / 255.0f), 153,
                    (const int64_t[]){153, 255, 0, 26, 221, 179}))
    return 1;
  if (check_dynamic("max adjusted", V(-1.0, -2.1, -1.3, -2.5, -3.34, -4.0), 6,
                    (float)(4.0f / 255.0f), 255,
                    (const int64_t[]){191, 121, 172, 96, 42, 0}))
    return 1;
  if (check_dynamic(
          "min adjusted",
          V(1, 2.1, 1.3, 2.5, 3.34, 4.0, 1.5, 2.6, 3.9, 4.0, 3.0, 2.345), 12,
          (float)(4.0f / 255.0f), 0,
          (const int64_t[]){64, 134, 83, 159, 213, 255, 96, 166, 249, 255, 191,
                            149}))
    return 1;
  /* All zeros: ONNX Runtime's scale of 1 rather than a division by 0. */
  if (check_dynamic("zeros", V(0, 0, 0), 3, 1.0, 0, (const int64_t[]){0, 0, 0}))
    return 1;
  /* Empty input. */
  if (check_dynamic("empty", V(0), 0, 1.0, 0, NULL))
    return 1;
  /* NaN does not widen the range (and quantises to 0). */
  float nan_scale = 2.0f / 255.0f;
  int64_t nan_zp = ref_quantize(1.0f, nan_scale, 0, 0, 255);
  if (check_dynamic(
          "nan", V(NAN, 1.0, -1.0), 3, nan_scale, nan_zp,
          (const int64_t[]){0, ref_quantize(1.0f, nan_scale, nan_zp, 0, 255),
                            ref_quantize(-1.0f, nan_scale, nan_zp, 0, 255)}))
    return 1;
  /* Only y requested; float16 x rejected. */
  int64_t two = 2;
  mb_tensor *x = tensor_of(MB_DTYPE_FLOAT, 1, &two, V(-1, 1));
  mb_tensor *h = tensor_of(MB_DTYPE_FLOAT16, 1, &two, V(-1, 1));
  node_run r = {0};
  ASSERT_EQ(case_init(&r.oc, "", "DynamicQuantizeLinear", 1, 3), 0);
  r.out[0] = empty_output();
  mb_tensor *outs[3] = {r.out[0], NULL, NULL};
  ASSERT_OK(case_run(&r.oc, 11, &x, 1, outs, 3), &r.oc.err);
  /* 1 / (2 / 255) is just below 127.5 in float32: zero point 127. */
  if (expect_ints("y only", r.out[0], MB_DTYPE_UINT8, (const int64_t[]){0, 254},
                  2))
    return 1;
  ASSERT_EQ(case_run(&r.oc, 11, &h, 1, outs, 3), MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(r.oc.err.message, "DynamicQuantizeLinear 'n'");
  ASSERT_CONTAINS(r.oc.err.message, "x has type float16");
  node_run_free(&r);
  mb_tensor_free(x);
  mb_tensor_free(h);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Integer products                                                          */
/* ------------------------------------------------------------------------ */

/* Random 8-bit values of type dt. */
static mb_tensor *rand_8bit(mb_dtype dt, int rank, const int64_t *dims, int lo,
                            int hi) {
  mb_tensor *t = tensor_of(dt, rank, dims, NULL);
  if (t)
    for (int64_t i = 0; i < t->numel; i++)
      mb__tensor_set_f64(t, i, rnd_int(lo, hi));
  return t;
}

static int requantize(int64_t acc, float multiplier, int64_t zp, mb_dtype dt) {
  int64_t lo, hi;
  dtype_range(dt, &lo, &hi);
  float r = rintf((float)acc * multiplier);
  return (int)clamp_i64((int64_t)r + zp, lo, hi);
}

typedef struct qconv_cfg {
  mb_dtype x_dt, w_dt, y_dt;
  int64_t batch, c_in, c_out, group, h, w, k, stride, pad;
  bool per_channel, bias, w_zero; /* w_zero: nonzero weight zero points */
} qconv_cfg;

/* QLinearConv against a naive exact-integer convolution, requantised like
 * ONNX Runtime: round((acc + bias) * (x_scale * w_scale[m] / y_scale)). */
static int check_qlinear_conv(const qconv_cfg *c) {
  int64_t xd[4] = {c->batch, c->c_in, c->h, c->w};
  int64_t wd[4] = {c->c_out, c->c_in / c->group, c->k, c->k};
  int64_t oh = (c->h + 2 * c->pad - c->k) / c->stride + 1;
  int64_t ow = (c->w + 2 * c->pad - c->k) / c->stride + 1;
  int64_t nw = c->per_channel ? c->c_out : 1, cg = c->c_in / c->group;
  int64_t mg = c->c_out / c->group;
  int xlo = c->x_dt == MB_DTYPE_UINT8 ? 0 : -128;
  int wlo = c->w_dt == MB_DTYPE_UINT8 ? 0 : -127;
  mb_tensor *x = rand_8bit(c->x_dt, 4, xd, xlo, xlo + 255);
  mb_tensor *w = rand_8bit(c->w_dt, 4, wd, wlo, wlo + 254);
  mb_tensor *xs = tensor_of(MB_DTYPE_FLOAT, 0, NULL, V(0.02));
  mb_tensor *xz = tensor_of(c->x_dt, 0, NULL, V(xlo + 100));
  mb_tensor *ws = tensor_of(MB_DTYPE_FLOAT, 1, &nw, NULL);
  mb_tensor *wz = tensor_of(c->w_dt, 1, &nw, NULL);
  mb_tensor *ys = tensor_of(MB_DTYPE_FLOAT, 0, NULL, V(0.7));
  mb_tensor *yz =
      tensor_of(c->y_dt, 0, NULL, V(c->y_dt == MB_DTYPE_UINT8 ? 120 : -3));
  mb_tensor *b =
      c->bias ? rand_8bit(MB_DTYPE_INT32, 1, &c->c_out, -5000, 5000) : NULL;
  for (int64_t m = 0; m < nw; m++) {
    ((float *)ws->data)[m] = 0.003f * (float)(1 + m % 4);
    mb__tensor_set_f64(wz, m, c->w_zero ? rnd_int(wlo, wlo + 20) : 0);
  }
  mb_tensor *in[9] = {x, xs, xz, w, ws, wz, ys, yz, b};
  node_run r = {0};
  int rc = case_init(&r.oc, "", "QLinearConv", c->bias ? 9 : 8, 1);
  if (!rc) {
    case_int(&r.oc, "group", c->group);
    case_ints(&r.oc, "strides", 2, (const int64_t[]){c->stride, c->stride});
    case_ints(&r.oc, "pads", 4,
              (const int64_t[]){c->pad, c->pad, c->pad, c->pad});
  }
  r.out[0] = empty_output();
  if (!rc && case_run(&r.oc, 10, in, c->bias ? 9 : 8, r.out, 1)) {
    fprintf(stderr, "  QLinearConv: %s\n", r.oc.err.message);
    rc = 1;
  }
  int64_t n_out = c->batch * c->c_out * oh * ow;
  int64_t *want = malloc(sizeof(int64_t) * (size_t)n_out);
  for (int64_t n = 0; !rc && n < c->batch; n++)
    for (int64_t m = 0; m < c->c_out; m++)
      for (int64_t oy = 0; oy < oh; oy++)
        for (int64_t ox = 0; ox < ow; ox++) {
          int64_t acc = b ? ((const int32_t *)b->data)[m] : 0, g = m / mg;
          int64_t wzv = mb__tensor_get_i64(wz, nw == 1 ? 0 : m);
          for (int64_t ic = 0; ic < cg; ic++)
            for (int64_t ky = 0; ky < c->k; ky++)
              for (int64_t kx = 0; kx < c->k; kx++) {
                int64_t iy = oy * c->stride - c->pad + ky;
                int64_t ix = ox * c->stride - c->pad + kx;
                if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w)
                  continue;
                int64_t xv = mb__tensor_get_i64(
                    x, ((n * c->c_in + g * cg + ic) * c->h + iy) * c->w + ix);
                int64_t wv = mb__tensor_get_i64(
                    w, ((m * cg + ic) * c->k + ky) * c->k + kx);
                acc += (xv - (xlo + 100)) * (wv - wzv);
              }
          float mult =
              0.02f * ((const float *)ws->data)[nw == 1 ? 0 : m] / 0.7f;
          want[((n * c->c_out + m) * oh + oy) * ow + ox] =
              requantize(acc, mult, mb__tensor_get_i64(yz, 0), c->y_dt);
        }
  if (!rc)
    rc = expect_ints("QLinearConv", r.out[0], c->y_dt, want, n_out);
  free(want);
  node_run_free(&r);
  free_tensors(in, 9);
  return rc;
}

TEST(qlinear_conv_type_combinations) {
  static const mb_dtype t8[2] = {MB_DTYPE_UINT8, MB_DTYPE_INT8};
  for (int xi = 0; xi < 2; xi++)
    for (int wi = 0; wi < 2; wi++)
      for (int yi = 0; yi < 2; yi++) {
        qconv_cfg cases[] = {
            /* per-channel symmetric weights, bias, padding, stride */
            {t8[xi], t8[wi], t8[yi], 2, 4, 6, 1, 7, 6, 3, 2, 1, true, true,
             false},
            /* depthwise, per-channel asymmetric weights */
            {t8[xi], t8[wi], t8[yi], 1, 4, 4, 4, 6, 5, 3, 1, 1, true, true,
             true},
            /* per-tensor, no bias, pointwise */
            {t8[xi], t8[wi], t8[yi], 1, 5, 3, 1, 4, 4, 1, 1, 0, false, false,
             true},
        };
        for (size_t i = 0; i < MB_ARRAY_COUNT(cases); i++)
          if (check_qlinear_conv(&cases[i]))
            TEST_FAIL_("x %s w %s y %s case %zu differs", mb_dtype_name(t8[xi]),
                       mb_dtype_name(t8[wi]), mb_dtype_name(t8[yi]), i);
      }
  return 0;
}

/* QLinearMatMul with per-row a_scale / a_zero_point and per-column b_scale
 * / b_zero_point, batched A. */
static int check_qlinear_matmul(mb_dtype a_dt, mb_dtype b_dt, mb_dtype y_dt,
                                bool per_row, bool per_col) {
  int64_t ad[3] = {2, 3, 5}, bd[2] = {5, 4}, m = 3, k = 5, n = 4;
  int alo = a_dt == MB_DTYPE_UINT8 ? 0 : -128;
  int blo = b_dt == MB_DTYPE_UINT8 ? 0 : -128;
  int64_t na = per_row ? m : 1, nb = per_col ? n : 1;
  mb_tensor *a = rand_8bit(a_dt, 3, ad, alo, alo + 255);
  mb_tensor *b = rand_8bit(b_dt, 2, bd, blo, blo + 255);
  mb_tensor *as = tensor_of(MB_DTYPE_FLOAT, 1, &na, NULL);
  mb_tensor *az = rand_8bit(a_dt, 1, &na, alo, alo + 255);
  mb_tensor *bs = tensor_of(MB_DTYPE_FLOAT, 1, &nb, NULL);
  mb_tensor *bz = rand_8bit(b_dt, 1, &nb, blo, blo + 255);
  mb_tensor *ys = tensor_of(MB_DTYPE_FLOAT, 0, NULL, V(0.9));
  mb_tensor *yz = tensor_of(y_dt, 0, NULL, V(y_dt == MB_DTYPE_UINT8 ? 99 : 9));
  for (int64_t i = 0; i < na; i++)
    ((float *)as->data)[i] = 0.01f * (float)(i + 1);
  for (int64_t i = 0; i < nb; i++)
    ((float *)bs->data)[i] = 0.02f + 0.005f * (float)i;
  mb_tensor *in[8] = {a, as, az, b, bs, bz, ys, yz};
  node_run r = {0};
  int rc = case_init(&r.oc, "", "QLinearMatMul", 8, 1);
  r.out[0] = empty_output();
  if (!rc && case_run(&r.oc, 10, in, 8, r.out, 1)) {
    fprintf(stderr, "  QLinearMatMul: %s\n", r.oc.err.message);
    rc = 1;
  }
  int64_t want[24];
  for (int64_t bt = 0; bt < 2; bt++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        int64_t acc = 0;
        int64_t azv = mb__tensor_get_i64(az, per_row ? i : 0);
        int64_t bzv = mb__tensor_get_i64(bz, per_col ? j : 0);
        for (int64_t p = 0; p < k; p++)
          acc += (mb__tensor_get_i64(a, (bt * m + i) * k + p) - azv) *
                 (mb__tensor_get_i64(b, p * n + j) - bzv);
        float mult = ((const float *)as->data)[per_row ? i : 0] *
                     ((const float *)bs->data)[per_col ? j : 0] / 0.9f;
        want[(bt * m + i) * n + j] =
            requantize(acc, mult, mb__tensor_get_i64(yz, 0), y_dt);
      }
  if (!rc)
    rc = expect_ints("QLinearMatMul", r.out[0], y_dt, want, 24);
  node_run_free(&r);
  free_tensors(in, 8);
  return rc;
}

TEST(qlinear_matmul_per_row_and_column) {
  static const mb_dtype t8[2] = {MB_DTYPE_UINT8, MB_DTYPE_INT8};
  for (int ai = 0; ai < 2; ai++)
    for (int bi = 0; bi < 2; bi++)
      for (int yi = 0; yi < 2; yi++)
        for (int mode = 0; mode < 4; mode++)
          if (check_qlinear_matmul(t8[ai], t8[bi], t8[yi], mode & 1, mode & 2))
            TEST_FAIL_("a %s b %s y %s per_row %d per_col %d differs",
                       mb_dtype_name(t8[ai]), mb_dtype_name(t8[bi]),
                       mb_dtype_name(t8[yi]), mode & 1, (mode & 2) != 0);
  /* A b_scale of the wrong length names the node and the expected count. */
  int64_t ad[2] = {3, 5}, bd[2] = {5, 4}, three = 3;
  mb_tensor *in[8] = {
      tensor_of(MB_DTYPE_UINT8, 2, ad, NULL),
      tensor_of(MB_DTYPE_FLOAT, 0, NULL, V(1)),
      tensor_of(MB_DTYPE_UINT8, 0, NULL, V(0)),
      tensor_of(MB_DTYPE_INT8, 2, bd, NULL),
      tensor_of(MB_DTYPE_FLOAT, 1, &three, V(1, 1, 1)),
      tensor_of(MB_DTYPE_INT8, 0, NULL, V(0)),
      tensor_of(MB_DTYPE_FLOAT, 0, NULL, V(1)),
      tensor_of(MB_DTYPE_UINT8, 0, NULL, V(0)),
  };
  node_run r = {0};
  ASSERT_EQ(case_init(&r.oc, "", "QLinearMatMul", 8, 1), 0);
  r.out[0] = empty_output();
  ASSERT_EQ(case_run(&r.oc, 10, in, 8, r.out, 1), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(r.oc.err.message, "QLinearMatMul 'n'");
  ASSERT_CONTAINS(r.oc.err.message,
                  "b_scale has 3 values; expected 1 or 4 (one per column");
  /* A float16 a_scale needs opset 21. */
  mb_tensor_free(in[4]);
  in[4] = tensor_of(MB_DTYPE_FLOAT, 0, NULL, V(1));
  mb_tensor_free(in[1]);
  in[1] = tensor_of(MB_DTYPE_FLOAT16, 0, NULL, V(1));
  ASSERT_EQ(case_run(&r.oc, 13, in, 8, r.out, 1), MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(r.oc.err.message, "a_scale has type float16; opset 10");
  ASSERT_EQ(case_run(&r.oc, 21, in, 8, r.out, 1), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(r.oc.err.message, "b_scale has type float32 but a_scale");
  /* With all three float16 (opset 21) it runs as with float32 scales of the
   * same values. */
  for (int k = 0; k < ad[0] * ad[1]; k++)
    ((uint8_t *)in[0]->data)[k] = (uint8_t)rnd_int(0, 255);
  for (int k = 0; k < bd[0] * bd[1]; k++)
    ((int8_t *)in[3]->data)[k] = (int8_t)rnd_int(-127, 127);
  static const double scales[3] = {0.0625, 0.03125, 0.5};
  static const int scale_inputs[3] = {1, 4, 6};
  mb_tensor *f32_out[1] = {empty_output()};
  for (int k = 0; k < 3; k++) {
    mb_tensor_free(in[scale_inputs[k]]);
    in[scale_inputs[k]] = tensor_of(MB_DTYPE_FLOAT, 0, NULL, &scales[k]);
  }
  ASSERT_OK(case_run(&r.oc, 10, in, 8, f32_out, 1), &r.oc.err);
  for (int k = 0; k < 3; k++) {
    mb_tensor_free(in[scale_inputs[k]]);
    in[scale_inputs[k]] = tensor_of(MB_DTYPE_FLOAT16, 0, NULL, &scales[k]);
  }
  ASSERT_OK(case_run(&r.oc, 21, in, 8, r.out, 1), &r.oc.err);
  ASSERT_EQ(r.out[0]->numel, 12);
  ASSERT_EQ(memcmp(r.out[0]->data, f32_out[0]->data, 12), 0);
  free_tensors(f32_out, 1);
  node_run_free(&r);
  free_tensors(in, 8);
  return 0;
}

TEST(matmul_integer_zero_points_and_wraparound) {
  /* Dynamic quantisation's MatMulInteger: uint8 A with a scalar zero
   * point, int8 B with one zero point per column. */
  int64_t ad[2] = {3, 6}, bd[2] = {6, 4}, four = 4, three = 3;
  mb_tensor *a = rand_8bit(MB_DTYPE_UINT8, 2, ad, 0, 255);
  mb_tensor *b = rand_8bit(MB_DTYPE_INT8, 2, bd, -128, 127);
  mb_tensor *az = tensor_of(MB_DTYPE_UINT8, 0, NULL, V(131));
  mb_tensor *bz = rand_8bit(MB_DTYPE_INT8, 1, &four, -3, 3);
  mb_tensor *in[4] = {a, b, az, bz};
  node_run r = {0};
  ASSERT_EQ(case_init(&r.oc, "", "MatMulInteger", 4, 1), 0);
  r.out[0] = empty_output();
  ASSERT_OK(case_run(&r.oc, 10, in, 4, r.out, 1), &r.oc.err);
  int64_t want[12];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) {
      int64_t acc = 0;
      for (int p = 0; p < 6; p++)
        acc += (mb__tensor_get_i64(a, i * 6 + p) - 131) *
               (mb__tensor_get_i64(b, p * 4 + j) - mb__tensor_get_i64(bz, j));
      want[i * 4 + j] = acc;
    }
  if (expect_ints("MatMulInteger", r.out[0], MB_DTYPE_INT32, want, 12))
    return 1;
  /* per-row a zero point */
  mb_tensor_free(in[2]);
  in[2] = rand_8bit(MB_DTYPE_UINT8, 1, &three, 100, 150);
  ASSERT_OK(case_run(&r.oc, 10, in, 4, r.out, 1), &r.oc.err);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) {
      int64_t acc = 0;
      for (int p = 0; p < 6; p++)
        acc +=
            (mb__tensor_get_i64(a, i * 6 + p) - mb__tensor_get_i64(in[2], i)) *
            (mb__tensor_get_i64(b, p * 4 + j) - mb__tensor_get_i64(bz, j));
      want[i * 4 + j] = acc;
    }
  if (expect_ints("MatMulInteger per-row", r.out[0], MB_DTYPE_INT32, want, 12))
    return 1;
  node_run_free(&r);
  free_tensors(in, 4);
  /* The int32 accumulation wraps around (ONNX allows overflow only there):
   * 40000 products of 255 * -255 sum to -2.6e9. No undefined behaviour. */
  int64_t ld[2] = {1, 40000}, rd[2] = {40000, 1};
  mb_tensor *big[4] = {tensor_of(MB_DTYPE_UINT8, 2, ld, NULL),
                       tensor_of(MB_DTYPE_UINT8, 2, rd, NULL),
                       tensor_of(MB_DTYPE_UINT8, 0, NULL, V(0)),
                       tensor_of(MB_DTYPE_UINT8, 0, NULL, V(255))};
  ASSERT(big[0] && big[1]);
  memset(big[0]->data, 255, 40000);
  memset(big[1]->data, 0, 40000);
  ASSERT_EQ(case_init(&r.oc, "", "MatMulInteger", 4, 1), 0);
  r.out[0] = empty_output();
  ASSERT_OK(case_run(&r.oc, 10, big, 4, r.out, 1), &r.oc.err);
  int64_t wrapped =
      (int64_t)(int32_t)(uint32_t)(uint64_t)(40000LL * 255 * -255);
  if (expect_ints("wrap-around", r.out[0], MB_DTYPE_INT32, &wrapped, 1))
    return 1;
  node_run_free(&r);
  free_tensors(big, 4);
  return 0;
}

TEST(conv_integer_per_channel) {
  /* uint8 x with a zero point, int8 weights with per-channel zero points. */
  int64_t xd[4] = {1, 2, 5, 5}, wd[4] = {3, 2, 3, 3}, three = 3;
  mb_tensor *x = rand_8bit(MB_DTYPE_UINT8, 4, xd, 0, 255);
  mb_tensor *w = rand_8bit(MB_DTYPE_INT8, 4, wd, -128, 127);
  mb_tensor *xz = tensor_of(MB_DTYPE_UINT8, 0, NULL, V(17));
  mb_tensor *wz = tensor_of(MB_DTYPE_INT8, 1, &three, V(-2, 0, 5));
  mb_tensor *in[4] = {x, w, xz, wz};
  node_run r = {0};
  ASSERT_EQ(case_init(&r.oc, "", "ConvInteger", 4, 1), 0);
  case_ints(&r.oc, "pads", 4, (const int64_t[]){1, 1, 1, 1});
  r.out[0] = empty_output();
  ASSERT_OK(case_run(&r.oc, 10, in, 4, r.out, 1), &r.oc.err);
  int64_t want[75];
  for (int m = 0; m < 3; m++)
    for (int oy = 0; oy < 5; oy++)
      for (int ox = 0; ox < 5; ox++) {
        int64_t acc = 0;
        for (int c = 0; c < 2; c++)
          for (int ky = 0; ky < 3; ky++)
            for (int kx = 0; kx < 3; kx++) {
              int iy = oy - 1 + ky, ix = ox - 1 + kx;
              if (iy < 0 || iy >= 5 || ix < 0 || ix >= 5)
                continue;
              acc += (mb__tensor_get_i64(x, (c * 5 + iy) * 5 + ix) - 17) *
                     (mb__tensor_get_i64(w, ((m * 2 + c) * 3 + ky) * 3 + kx) -
                      mb__tensor_get_i64(wz, m));
            }
        want[(m * 5 + oy) * 5 + ox] = acc;
      }
  if (expect_ints("ConvInteger", r.out[0], MB_DTYPE_INT32, want, 75))
    return 1;
  /* A weight zero point per input channel is an error naming the node. */
  int64_t two = 2;
  mb_tensor_free(in[3]);
  in[3] = tensor_of(MB_DTYPE_INT8, 1, &two, V(0, 0));
  ASSERT_EQ(case_run(&r.oc, 10, in, 4, r.out, 1), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(r.oc.err.message, "ConvInteger 'n'");
  ASSERT_CONTAINS(r.oc.err.message, "w_zero_point has 2 values");
  node_run_free(&r);
  free_tensors(in, 4);
  return 0;
}

/* The integer products past toy sizes, as quantised models run them: split
 * over a pool (mb__igemm through double), batched with a broadcast B, and
 * at the edge where the sums still fit int32 (k * 255 * 255 just below
 * 2^31), every element against int64 loops. */
static int64_t matmul_int_ref(const mb_tensor *a, const mb_tensor *b,
                              int64_t a0, const mb_tensor *bz, int64_t base_a,
                              int64_t i, int64_t j, int64_t k, int64_t n) {
  int64_t acc = 0;
  for (int64_t p = 0; p < k; p++)
    acc += (mb__tensor_get_i64(a, base_a + i * k + p) - a0) *
           (mb__tensor_get_i64(b, p * n + j) - mb__tensor_get_i64(bz, j));
  return acc;
}

TEST(integer_products_large_and_threaded) {
  mb_threadpool *pool = mb__threadpool_create(2);
  ASSERT(pool);
  /* MatMulInteger: A [2, 70, 300] uint8, B [300, 90] int8 with a zero
   * point per column, 2 x 70 x 90 x 300 = 3.8M products: split. */
  int64_t ad[3] = {2, 70, 300}, bd[2] = {300, 90}, ninety = 90;
  mb_tensor *in[4] = {rand_8bit(MB_DTYPE_UINT8, 3, ad, 0, 255),
                      rand_8bit(MB_DTYPE_INT8, 2, bd, -128, 127),
                      tensor_of(MB_DTYPE_UINT8, 0, NULL, V(128)),
                      rand_8bit(MB_DTYPE_INT8, 1, &ninety, -4, 4)};
  ASSERT(in[0] && in[1] && in[2] && in[3]);
  node_run r = {0};
  ASSERT_EQ(case_init(&r.oc, "", "MatMulInteger", 4, 1), 0);
  r.out[0] = empty_output();
  ASSERT_OK(case_run_pool(&r.oc, 10, in, 4, r.out, 1, pool), &r.oc.err);
  ASSERT_EQ(r.out[0]->numel, 2 * 70 * 90);
  for (int64_t bt = 0; bt < 2; bt++)
    for (int64_t i = 0; i < 70; i++)
      for (int64_t j = 0; j < 90; j++) {
        int64_t want = matmul_int_ref(in[0], in[1], 128, in[3], bt * 70 * 300,
                                      i, j, 300, 90);
        int64_t got = mb__tensor_get_i64(r.out[0], (bt * 70 + i) * 90 + j);
        if (got != want)
          TEST_FAIL_("MatMulInteger [%lld,%lld,%lld] is %lld, expected %lld",
                     (long long)bt, (long long)i, (long long)j, (long long)got,
                     (long long)want);
      }
  node_run_free(&r);
  free_tensors(in, 4);

  /* A broadcast against a batch of B [3, 40, 30] (attention's shape of
   * product): one product per matrix of B. */
  int64_t pd[2] = {20, 40}, qd[3] = {3, 40, 30};
  mb_tensor *bat[4] = {rand_8bit(MB_DTYPE_UINT8, 2, pd, 0, 255),
                       rand_8bit(MB_DTYPE_UINT8, 3, qd, 0, 255),
                       tensor_of(MB_DTYPE_UINT8, 0, NULL, V(100)),
                       tensor_of(MB_DTYPE_UINT8, 0, NULL, V(140))};
  ASSERT(bat[0] && bat[1] && bat[2] && bat[3]);
  ASSERT_EQ(case_init(&r.oc, "", "MatMulInteger", 4, 1), 0);
  r.out[0] = empty_output();
  ASSERT_OK(case_run_pool(&r.oc, 10, bat, 4, r.out, 1, pool), &r.oc.err);
  ASSERT_EQ(r.out[0]->numel, 3 * 20 * 30);
  for (int64_t bt = 0; bt < 3; bt++)
    for (int64_t i = 0; i < 20; i++)
      for (int64_t j = 0; j < 30; j++) {
        int64_t want = 0;
        for (int64_t p = 0; p < 40; p++)
          want += (mb__tensor_get_i64(bat[0], i * 40 + p) - 100) *
                  (mb__tensor_get_i64(bat[1], (bt * 40 + p) * 30 + j) - 140);
        int64_t got = mb__tensor_get_i64(r.out[0], (bt * 20 + i) * 30 + j);
        if (got != want)
          TEST_FAIL_("batched MatMulInteger [%lld,%lld,%lld] is %lld, "
                     "expected %lld",
                     (long long)bt, (long long)i, (long long)j, (long long)got,
                     (long long)want);
      }
  node_run_free(&r);
  free_tensors(bat, 4);

  /* Sums up to 33,000 x 255 x 255 = 2,145,825,000 (int32 holds
   * 2,147,483,647): the double path must be exact at the top of the range,
   * in both signs. */
  int64_t k = 33000, ld[2] = {2, 33000}, rd[2] = {33000, 2};
  mb_tensor *edge[4] = {tensor_of(MB_DTYPE_UINT8, 2, ld, NULL),
                        tensor_of(MB_DTYPE_UINT8, 2, rd, NULL),
                        tensor_of(MB_DTYPE_UINT8, 0, NULL, V(0)),
                        tensor_of(MB_DTYPE_UINT8, 0, NULL, V(255))};
  ASSERT(edge[0] && edge[1]);
  uint8_t *ev = edge[0]->data, *rv = edge[1]->data;
  for (int64_t p = 0; p < k; p++) {
    ev[p] = 255;                                /* row 0: all 255 */
    ev[k + p] = (uint8_t)(p % 256);             /* row 1: a ramp */
    rv[p * 2] = 0;                              /* column 0: 0 - 255 = -255 */
    rv[p * 2 + 1] = (uint8_t)(p & 1 ? 0 : 255); /* column 1: -255, 0 */
  }
  ASSERT_EQ(case_init(&r.oc, "", "MatMulInteger", 4, 1), 0);
  r.out[0] = empty_output();
  ASSERT_OK(case_run_pool(&r.oc, 10, edge, 4, r.out, 1, pool), &r.oc.err);
  int64_t want[4];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      int64_t acc = 0;
      for (int64_t p = 0; p < k; p++)
        acc += (int64_t)ev[i * k + p] * ((int64_t)rv[p * 2 + j] - 255);
      want[i * 2 + j] = acc;
    }
  ASSERT_EQ(want[0], -2145825000LL);
  if (expect_ints("MatMulInteger at the int32 edge", r.out[0], MB_DTYPE_INT32,
                  want, 4))
    return 1;
  node_run_free(&r);
  free_tensors(edge, 4);

  /* ConvInteger with 2 groups, padding and a stride, on the pool. */
  int64_t xd[4] = {2, 4, 12, 12}, wd[4] = {6, 2, 3, 3}, six = 6;
  mb_tensor *cin[4] = {rand_8bit(MB_DTYPE_UINT8, 4, xd, 0, 255),
                       rand_8bit(MB_DTYPE_INT8, 4, wd, -128, 127),
                       tensor_of(MB_DTYPE_UINT8, 0, NULL, V(9)),
                       rand_8bit(MB_DTYPE_INT8, 1, &six, -3, 3)};
  ASSERT(cin[0] && cin[1] && cin[2] && cin[3]);
  ASSERT_EQ(case_init(&r.oc, "", "ConvInteger", 4, 1), 0);
  case_int(&r.oc, "group", 2);
  case_ints(&r.oc, "pads", 4, (const int64_t[]){1, 1, 1, 1});
  case_ints(&r.oc, "strides", 2, (const int64_t[]){2, 1});
  r.out[0] = empty_output();
  ASSERT_OK(case_run_pool(&r.oc, 10, cin, 4, r.out, 1, pool), &r.oc.err);
  const int64_t oh = 6, ow = 12;
  ASSERT_EQ(r.out[0]->numel, 2 * 6 * oh * ow);
  for (int64_t n = 0; n < 2; n++)
    for (int64_t m = 0; m < 6; m++)
      for (int64_t oy = 0; oy < oh; oy++)
        for (int64_t ox = 0; ox < ow; ox++) {
          int64_t acc = 0, grp = m / 3;
          for (int64_t c = 0; c < 2; c++)
            for (int64_t ky = 0; ky < 3; ky++)
              for (int64_t kx = 0; kx < 3; kx++) {
                int64_t iy = oy * 2 - 1 + ky, ix = ox - 1 + kx;
                if (iy < 0 || iy >= 12 || ix < 0 || ix >= 12)
                  continue;
                int64_t xc = grp * 2 + c;
                acc += (mb__tensor_get_i64(cin[0],
                                           ((n * 4 + xc) * 12 + iy) * 12 + ix) -
                        9) *
                       (mb__tensor_get_i64(cin[1],
                                           ((m * 2 + c) * 3 + ky) * 3 + kx) -
                        mb__tensor_get_i64(cin[3], m));
              }
          int64_t got =
              mb__tensor_get_i64(r.out[0], ((n * 6 + m) * oh + oy) * ow + ox);
          if (got != acc)
            TEST_FAIL_("ConvInteger [%lld,%lld,%lld,%lld] is %lld, expected "
                       "%lld",
                       (long long)n, (long long)m, (long long)oy, (long long)ox,
                       (long long)got, (long long)acc);
        }
  node_run_free(&r);
  free_tensors(cin, 4);
  mb__threadpool_free(pool);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Whole quantised graphs against ONNX Runtime                               */
/* ------------------------------------------------------------------------ */

/* int8 symmetric per-channel weights [m, rest...] for float weights w:
 * scale = max|w| / 127 per output channel, zero points 0. */
/* The largest int8 weight ONNX Runtime's u8 x s8 kernels compute exactly
 * on this CPU for a signed input: 127, or 64 without VNNI, where they add
 * pairs of products in 16 bits and saturate (runtime/int8_form.c). The
 * graphs below (whose inputs are signed) use weights of that width, as
 * modelbench's quantiser writes them here, so that reference and ORT agree
 * on every x86 CPU. */
static int ort_weight_qmax(void) {
  return mb__quant_weight_qmax(mb__runtime_onnxruntime.int8_weights(NULL, 0),
                               true);
}

static void quantize_weights(const double *w, int64_t m, int64_t rest,
                             double *q, double *scale) {
  for (int64_t o = 0; o < m; o++) {
    double mx = 0;
    for (int64_t i = 0; i < rest; i++)
      mx = fmax(mx, fabs(w[o * rest + i]));
    scale[o] = (float)(mx > 0 ? mx / ort_weight_qmax() : 1);
    for (int64_t i = 0; i < rest; i++)
      q[o * rest + i] = rint(w[o * rest + i] / scale[o]);
  }
}

/* QDQ Conv as ONNX Runtime's quantiser writes it: activations quantised
 * per tensor (uint8 or int8), int8 symmetric per-channel weights
 * (DequantizeLinear along axis 0), an int32 bias with scale x_scale *
 * w_scale, then Relu and a requantisation of the output. */
static mb_model *build_qdq_conv(mb_dtype act) {
  graph_builder b;
  const int64_t xd[4] = {1, 4, 6, 6}, wd[4] = {6, 4, 3, 3}, six = 6;
  const int64_t yd[4] = {1, 6, 6, 6};
  double w[216], wq[216], ws[6], bias[6], bq[6], bs[6], zeros[6] = {0};
  const double x_scale = 0.0157, y_scale = 0.05;
  const double zp = act == MB_DTYPE_UINT8 ? 128 : 0;
  for (int i = 0; i < 216; i++)
    w[i] = 0.3 * rnd();
  quantize_weights(w, 6, 36, wq, ws);
  for (int i = 0; i < 6; i++) {
    bias[i] = 0.2 * rnd();
    bs[i] = (float)((float)x_scale * (float)ws[i]);
    bq[i] = rint(bias[i] / bs[i]);
  }
  gb_init(&b, 13);
  gb_input(&b, "x", MB_DTYPE_FLOAT, 4, xd);
  const char *xs = gb_const(&b, MB_DTYPE_FLOAT, 0, NULL, &x_scale);
  const char *xz = gb_const(&b, act, 0, NULL, &zp);
  const char *xq = GB_OP(&b, "QuantizeLinear", "x", xs, xz);
  const char *xf = GB_OP(&b, "DequantizeLinear", xq, xs, xz);
  const char *wf =
      GB_OP(&b, "DequantizeLinear", gb_const(&b, MB_DTYPE_INT8, 4, wd, wq),
            gb_const(&b, MB_DTYPE_FLOAT, 1, &six, ws),
            gb_const(&b, MB_DTYPE_INT8, 1, &six, zeros));
  gb_int(&b, "axis", 0);
  const char *bf =
      GB_OP(&b, "DequantizeLinear", gb_const(&b, MB_DTYPE_INT32, 1, &six, bq),
            gb_const(&b, MB_DTYPE_FLOAT, 1, &six, bs));
  gb_int(&b, "axis", 0);
  const char *c = GB_OP(&b, "Conv", xf, wf, bf);
  gb_ints(&b, "pads", 4, (const int64_t[]){1, 1, 1, 1});
  const char *rl = GB_OP(&b, "Relu", c);
  const char *ys = gb_const(&b, MB_DTYPE_FLOAT, 0, NULL, &y_scale);
  const char *yz = gb_const(&b, act, 0, NULL, &zp);
  const char *y = GB_OP(&b, "DequantizeLinear",
                        GB_OP(&b, "QuantizeLinear", rl, ys, yz), ys, yz);
  gb_output(&b, y, MB_DTYPE_FLOAT, 4, yd);
  return gb_finish(&b);
}

/* QOperator format: QuantizeLinear, QLinearConv with per-channel int8
 * weights, DequantizeLinear; then QLinearMatMul with per-column weights. */
static mb_model *build_qoperator(mb_dtype act) {
  graph_builder b;
  const int64_t xd[4] = {1, 3, 5, 5}, wd[4] = {4, 3, 3, 3}, four = 4;
  const int64_t md[2] = {5, 3}, yd[4] = {1, 4, 5, 3};
  double w[108], wq[108], ws[4], zeros[4] = {0}, bq[4];
  double mw[15], mwq[15], mws[3], mwt[15];
  const double s1 = 0.02, s2 = 0.04, s3 = 0.06;
  const double zp = act == MB_DTYPE_UINT8 ? 128 : 0;
  for (int i = 0; i < 108; i++)
    w[i] = 0.4 * rnd();
  quantize_weights(w, 4, 27, wq, ws);
  for (int i = 0; i < 4; i++)
    bq[i] = rnd_int(-300, 300);
  /* per column of a [5, 3] matrix: quantise its transpose per row */
  for (int i = 0; i < 15; i++)
    mwt[i] = 0.5 * rnd();
  quantize_weights(mwt, 3, 5, mw, mws);
  for (int r = 0; r < 5; r++)
    for (int c = 0; c < 3; c++)
      mwq[r * 3 + c] = mw[c * 5 + r];
  gb_init(&b, 13);
  gb_input(&b, "x", MB_DTYPE_FLOAT, 4, xd);
  const char *xs = gb_const(&b, MB_DTYPE_FLOAT, 0, NULL, &s1);
  const char *xz = gb_const(&b, act, 0, NULL, &zp);
  const char *ys = gb_const(&b, MB_DTYPE_FLOAT, 0, NULL, &s2);
  const char *yz = gb_const(&b, act, 0, NULL, &zp);
  const char *zs = gb_const(&b, MB_DTYPE_FLOAT, 0, NULL, &s3);
  const char *xq = GB_OP(&b, "QuantizeLinear", "x", xs, xz);
  const char *cq = GB_OP(&b, "QLinearConv", xq, xs, xz,
                         gb_const(&b, MB_DTYPE_INT8, 4, wd, wq),
                         gb_const(&b, MB_DTYPE_FLOAT, 1, &four, ws),
                         gb_const(&b, MB_DTYPE_INT8, 1, &four, zeros), ys, yz,
                         gb_const(&b, MB_DTYPE_INT32, 1, &four, bq));
  gb_ints(&b, "pads", 4, (const int64_t[]){1, 1, 1, 1});
  const int64_t three = 3;
  const char *mq = GB_OP(&b, "QLinearMatMul", cq, ys, yz,
                         gb_const(&b, MB_DTYPE_INT8, 2, md, mwq),
                         gb_const(&b, MB_DTYPE_FLOAT, 1, &three, mws),
                         gb_const(&b, MB_DTYPE_INT8, 1, &three, zeros), zs, yz);
  const char *y = GB_OP(&b, "DequantizeLinear", mq, zs, yz);
  gb_output(&b, y, MB_DTYPE_FLOAT, 4, yd);
  return gb_finish(&b);
}

/* Dynamic quantisation of a MatMul: DynamicQuantizeLinear, MatMulInteger
 * with per-column int8 weight zero points, Cast and the scale product. */
static mb_model *build_dynamic_matmul(void) {
  graph_builder b;
  const int64_t xd[2] = {4, 8}, wd[2] = {8, 5}, five = 5, yd[2] = {4, 5};
  double wq[40], wz[5], ws[5];
  for (int i = 0; i < 40; i++)
    wq[i] = rnd_int(-ort_weight_qmax(), ort_weight_qmax());
  for (int i = 0; i < 5; i++) {
    wz[i] = rnd_int(-2, 2);
    ws[i] = 0.01 * (i + 1);
  }
  gb_init(&b, 13);
  gb_input(&b, "x", MB_DTYPE_FLOAT, 2, xd);
  gb_node_outs(&b, "DynamicQuantizeLinear", 1, (const char *const[]){"x"}, 3,
               (const char *const[]){"xq", "xq_scale", "xq_zero"});
  const char *mm =
      GB_OP(&b, "MatMulInteger", "xq", gb_const(&b, MB_DTYPE_INT8, 2, wd, wq),
            "xq_zero", gb_const(&b, MB_DTYPE_INT8, 1, &five, wz));
  const char *f = GB_OP(&b, "Cast", mm);
  gb_int(&b, "to", MB_DTYPE_FLOAT);
  const char *scale =
      GB_OP(&b, "Mul", "xq_scale", gb_const(&b, MB_DTYPE_FLOAT, 1, &five, ws));
  const char *y = GB_OP(&b, "Mul", f, scale);
  gb_output(&b, y, MB_DTYPE_FLOAT, 2, yd);
  gb_output(&b, "xq", MB_DTYPE_UINT8, 2, xd);
  gb_output(&b, "xq_scale", MB_DTYPE_FLOAT, 0, NULL);
  gb_output(&b, "xq_zero", MB_DTYPE_UINT8, 0, NULL);
  return gb_finish(&b);
}

/* Per-axis QuantizeLinear / DequantizeLinear of activations (axis -1),
 * float16 ones (opset 19, between Casts) and a blocked weight
 * DequantizeLinear (opset 21, block_size 4 along axis 1). */
static mb_model *build_qdq_variants(void) {
  graph_builder b;
  const int64_t xd[2] = {2, 8}, eight = 8, wd[2] = {3, 8}, bd[2] = {3, 2};
  double s[8], z[8], w[24], bs[6], bz[6];
  for (int i = 0; i < 8; i++) {
    s[i] = 0.0078125 * (1 + i % 3); /* exact in float16 too */
    z[i] = rnd_int(-10, 10);
  }
  for (int i = 0; i < 24; i++)
    w[i] = rnd_int(-127, 127);
  for (int i = 0; i < 6; i++) {
    bs[i] = 0.01 * (i + 1);
    bz[i] = rnd_int(-3, 3);
  }
  gb_init(&b, 21);
  gb_input(&b, "x", MB_DTYPE_FLOAT, 2, xd);
  const char *sc = gb_const(&b, MB_DTYPE_FLOAT, 1, &eight, s);
  const char *zp = gb_const(&b, MB_DTYPE_INT8, 1, &eight, z);
  const char *q = GB_OP(&b, "QuantizeLinear", "x", sc, zp);
  gb_int(&b, "axis", -1);
  const char *y1 = GB_OP(&b, "DequantizeLinear", q, sc, zp);
  gb_int(&b, "axis", -1);
  const char *h = GB_OP(&b, "Cast", "x");
  gb_int(&b, "to", MB_DTYPE_FLOAT16);
  const char *hs = gb_const(&b, MB_DTYPE_FLOAT16, 0, NULL, V(0.015625));
  const char *hz = gb_const(&b, MB_DTYPE_UINT8, 0, NULL, V(77));
  const char *hd = GB_OP(&b, "DequantizeLinear",
                         GB_OP(&b, "QuantizeLinear", h, hs, hz), hs, hz);
  const char *y2 = GB_OP(&b, "Cast", hd);
  gb_int(&b, "to", MB_DTYPE_FLOAT);
  const char *wf =
      GB_OP(&b, "DequantizeLinear", gb_const(&b, MB_DTYPE_INT8, 2, wd, w),
            gb_const(&b, MB_DTYPE_FLOAT, 2, bd, bs),
            gb_const(&b, MB_DTYPE_INT8, 2, bd, bz));
  gb_int(&b, "axis", 1);
  gb_int(&b, "block_size", 4);
  const char *y3 = GB_OP(&b, "MatMul", "x", GB_OP(&b, "Transpose", wf));
  gb_output(&b, y1, MB_DTYPE_FLOAT, 2, xd);
  gb_output(&b, y2, MB_DTYPE_FLOAT, 2, xd);
  gb_output(&b, y3, MB_DTYPE_FLOAT, 2, (const int64_t[]){2, 3});
  return gb_finish(&b);
}

/* Runs `model` on both on input x (x_values, or random when NULL),
 * comparing every output within atol + rtol * |ORT's value|. */
static int compare_with_onnxruntime(const char *what, mb_model *model,
                                    const int64_t *xd, int rank,
                                    const double *x_values, double rtol,
                                    double atol) {
  int n_out = mb_model_output_count(model);
  int64_t n = count_of(rank, xd);
  double *xv = malloc(sizeof(double) * (size_t)n);
  mb_tensor *x[1] = {NULL}, *ref[4] = {0}, *ort[4] = {0};
  int rc = !model || !xv || n_out > 4;
  for (int64_t i = 0; !rc && i < n; i++)
    xv[i] = x_values ? x_values[i] : 1.5 * rnd();
  if (!rc)
    x[0] = tensor_of(MB_DTYPE_FLOAT, rank, xd, xv);
  if (!rc)
    rc = run_reference(model, x, ref);
  int ort_rc = rc ? 1 : run_onnxruntime(model, x, ort);
  if (!rc && ort_rc == 1)
    rc = 1;
  for (int i = 0; !rc && ort_rc == 0 && i < n_out; i++) {
    mb_compare_result cr;
    mb_error err = {0};
    if (mb_tensor_compare(ref[i], ort[i], rtol, atol, &cr, &err) ||
        !cr.shape_match || cr.n_bad) {
      fprintf(stderr,
              "  %s output %d: reference and onnxruntime differ: %lld "
              "elements, max abs error %g (allowed %g + %g relative) %s\n",
              what, i, (long long)cr.n_bad, cr.max_abs_err, atol, rtol,
              err.message);
      rc = 1;
    }
  }
  free(xv);
  free_tensors(x, 1);
  free_tensors(ref, 4);
  free_tensors(ort, 4);
  mb_model_free(model);
  return rc;
}

TEST(quantized_graphs_match_onnxruntime) {
  const int64_t conv_x[4] = {1, 4, 6, 6}, qop_x[4] = {1, 3, 5, 5};
  const int64_t mm_x[2] = {4, 8};
  /* QDQ: the float convolution sums in a different order than ORT's, so a
   * requantised value may land one step (y_scale 0.05) away. */
  if (compare_with_onnxruntime("QDQ conv, uint8 activations",
                               build_qdq_conv(MB_DTYPE_UINT8), conv_x, 4, NULL,
                               0, 0.0501) ||
      compare_with_onnxruntime("QDQ conv, int8 activations",
                               build_qdq_conv(MB_DTYPE_INT8), conv_x, 4, NULL,
                               0, 0.0501))
    return 1;
  /* QOperator: integer arithmetic with float requantisation, as ORT. */
  if (compare_with_onnxruntime("QLinearConv + QLinearMatMul, uint8",
                               build_qoperator(MB_DTYPE_UINT8), qop_x, 4, NULL,
                               0, 0.0601) ||
      compare_with_onnxruntime("QLinearConv + QLinearMatMul, int8",
                               build_qoperator(MB_DTYPE_INT8), qop_x, 4, NULL,
                               0, 0.0601))
    return 1;
  /* Half-way values (k + 0.5 steps) where rounding to even matters. The
   * blocked output is a float MatMul over 8 terms of up to ~10: ORT's
   * kernels sum in another order per CPU (AVX-512 here), so it matches
   * within a few float ulps (1e-6 relative), not absolutely. */
  double xv[16];
  for (int i = 0; i < 16; i++) {
    double step = 0.0078125 * (1 + (i % 8) % 3);
    xv[i] = (i % 2 ? rnd_int(-140, 140) + 0.5 : 1.5 * rnd() / step) * step;
  }
  const int64_t var_x[2] = {2, 8};
  if (compare_with_onnxruntime("per-axis, float16 and blocked QDQ",
                               build_qdq_variants(), var_x, 2, xv, 1e-6, 1e-6))
    return 1;
  /* Dynamic: the quantised tensor, its scale and zero point exactly. */
  if (compare_with_onnxruntime("dynamic MatMulInteger", build_dynamic_matmul(),
                               mm_x, 2, NULL, 0, 1e-5))
    return 1;
  return 0;
}

TEST_MAIN(TEST_ENTRY(quantize_rounds_half_to_even_and_saturates),
          TEST_ENTRY(quantize_per_axis),
          TEST_ENTRY(quantize_errors_name_the_node),
          TEST_ENTRY(quantize_float16_opset19),
          TEST_ENTRY(quantize_opset21_blocks_and_output_dtype),
          TEST_ENTRY(dequantize_per_tensor_and_axis),
          TEST_ENTRY(dequantize_float16_and_blocks),
          TEST_ENTRY(quantize_dequantize_round_trip_threads),
          TEST_ENTRY(dynamic_quantize),
          TEST_ENTRY(qlinear_conv_type_combinations),
          TEST_ENTRY(qlinear_matmul_per_row_and_column),
          TEST_ENTRY(matmul_integer_zero_points_and_wraparound),
          TEST_ENTRY(conv_integer_per_channel),
          TEST_ENTRY(integer_products_large_and_threaded),
          TEST_ENTRY(quantized_graphs_match_onnxruntime))
