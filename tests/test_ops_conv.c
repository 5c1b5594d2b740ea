/* Convolution, pooling and matrix-product kernels against naive reference
 * implementations written here from the ONNX definitions. Each case builds
 * a one-node graph, drives the operator row through infer + run by hand
 * (as the interpreter does) and compares every output element. */
#include "ops/op.h"
#include "test.h"

#include <stdlib.h>

/* ------------------------------------------------------------------------ */
/* Harness: one node, hand-made op context                                   */
/* ------------------------------------------------------------------------ */

typedef struct op_case {
  mb_model *model;
  int node;
  mb_error err;
  void *scratch[MB_OP_SCRATCH_SLOTS];
  size_t scratch_size[MB_OP_SCRATCH_SLOTS];
} op_case;

/* ctx->threads and ctx->pool of every case_run (NULL pool: serial) */
static int test_threads = 1;
static mb_threadpool *test_pool;

static const char *const input_names[] = {"i0", "i1", "i2", "i3", "i4",
                                          "i5", "i6", "i7", "i8"};
static const char *const output_names[] = {"o0", "o1"};

static int case_init(op_case *c, const char *op_type, int n_in, int n_out) {
  memset(c, 0, sizeof *c);
  c->model = mb__model_create();
  if (!c->model)
    return 1;
  c->node = mb__graph_add_node(c->model->graph, op_type, "", "n", n_in,
                               input_names, n_out, output_names, &c->err);
  return c->node < 0;
}

static void case_free(op_case *c) {
  for (int i = 0; i < MB_OP_SCRATCH_SLOTS; i++)
    mb__aligned_free(c->scratch[i]);
  mb_model_free(c->model);
}

static void set_ints(op_case *c, const char *name, int n, const int64_t *v) {
  mb__node_set_ints(c->model->graph, c->node, name, n, v, &c->err);
}
static void set_int(op_case *c, const char *name, int64_t v) {
  mb__node_set_int(c->model->graph, c->node, name, v, &c->err);
}

/* Runs infer, allocates the outputs, runs. outputs[i] may be NULL (an
 * omitted optional output); non-NULL ones receive fresh tensors. */
static mb_status case_run(op_case *c, int64_t opset, mb_tensor **inputs,
                          int n_in, mb_tensor **outputs, int n_out) {
  const mb_node *node = &c->model->graph->nodes[c->node];
  const mb_op_def *def = mb__op_find("", node->op_type, opset);
  mb_op_ctx ctx = {0};
  mb_status status;
  if (!def)
    return mb__error(&c->err, MB_STATUS_UNSUPPORTED, "no row for %s",
                     node->op_type);
  ctx.node = node;
  ctx.graph = c->model->graph;
  ctx.opset = opset;
  ctx.n_inputs = n_in;
  ctx.inputs = inputs;
  ctx.n_outputs = n_out;
  ctx.outputs = outputs;
  ctx.threads = test_threads;
  ctx.pool = test_pool;
  mb__blas_set_threads(1); /* as the interpreter does */
  ctx.err = &c->err;
  ctx.scratch = c->scratch;
  ctx.scratch_size = c->scratch_size;
  if ((status = def->infer(&ctx)))
    return status;
  for (int i = 0; i < n_out; i++) {
    mb_tensor *t = outputs[i];
    if (t &&
        (status = mb__tensor_reset(t, t->dtype, t->rank, t->dims, &c->err)))
      return status;
  }
  return def->run(&ctx);
}

/* ------------------------------------------------------------------------ */
/* Data                                                                      */
/* ------------------------------------------------------------------------ */

static uint32_t rng_state = 12345;
static float rnd(void) {
  rng_state = rng_state * 1664525u + 1013904223u;
  return (float)((rng_state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static mb_tensor *new_tensor(mb_dtype dt, int rank, const int64_t *dims) {
  mb_tensor *t = NULL;
  if (mb_tensor_create(dt, rank, dims, &t, NULL))
    return NULL;
  return t;
}

static mb_tensor *random_tensor(int rank, const int64_t *dims) {
  mb_tensor *t = new_tensor(MB_DTYPE_FLOAT, rank, dims);
  if (t)
    for (int64_t i = 0; i < t->numel; i++)
      ((float *)t->data)[i] = rnd();
  return t;
}

static mb_tensor *empty_output(void) {
  return calloc(1, sizeof(mb_tensor));
}

static void free_all(mb_tensor **ts, int n) {
  for (int i = 0; i < n; i++)
    mb_tensor_free(ts[i]);
}

/* Compares a float tensor with expected doubles; reports the first miss. */
static int compare(const char *what, const mb_tensor *got, const double *want,
                   int64_t n, double tol) {
  if (got->numel != n) {
    fprintf(stderr, "  %s: %lld elements, expected %lld\n", what,
            (long long)got->numel, (long long)n);
    return 1;
  }
  for (int64_t i = 0; i < n; i++) {
    double g = mb__tensor_get_f64(got, i);
    if (!(fabs(g - want[i]) <= tol + tol * fabs(want[i]))) {
      fprintf(stderr, "  %s: element %lld is %.7g, expected %.7g\n", what,
              (long long)i, g, want[i]);
      return 1;
    }
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Naive references                                                          */
/* ------------------------------------------------------------------------ */

typedef struct conv_cfg {
  int nsp;
  int64_t batch, c_in, c_out, group;
  int64_t in[3], kernel[3], stride[3], dilation[3];
  int64_t pads[6]; /* begins then ends */
  int bias;
  const char *auto_pad; /* NULL: explicit pads */
} conv_cfg;

/* Output size and effective begin padding of one dim. */
static int64_t conv_out_dim(const conv_cfg *c, int d, int64_t *pad_begin) {
  int64_t ext = (c->kernel[d] - 1) * c->dilation[d] + 1, in = c->in[d];
  int64_t s = c->stride[d];
  if (c->auto_pad && strncmp(c->auto_pad, "SAME", 4) == 0) {
    int64_t out = (in + s - 1) / s;
    int64_t total = (out - 1) * s + ext - in;
    if (total < 0)
      total = 0;
    *pad_begin =
        strcmp(c->auto_pad, "SAME_UPPER") == 0 ? total / 2 : total - total / 2;
    return out;
  }
  if (c->auto_pad) { /* VALID */
    *pad_begin = 0;
    return (in - ext) / s + 1;
  }
  *pad_begin = c->pads[d];
  return (in + c->pads[d] + c->pads[c->nsp + d] - ext) / s + 1;
}

static double *conv_reference(const conv_cfg *c, const float *x, const float *w,
                              const float *b, int64_t *n_out) {
  int64_t out[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, in[3] = {1, 1, 1};
  int64_t k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, dl[3] = {1, 1, 1};
  int off = 3 - c->nsp; /* right-align into 3 dims */
  for (int d = 0; d < c->nsp; d++) {
    out[off + d] = conv_out_dim(c, d, &pb[off + d]);
    in[off + d] = c->in[d];
    k[off + d] = c->kernel[d];
    s[off + d] = c->stride[d];
    dl[off + d] = c->dilation[d];
  }
  int64_t cg = c->c_in / c->group, mg = c->c_out / c->group;
  int64_t osz = out[0] * out[1] * out[2], isz = in[0] * in[1] * in[2];
  int64_t ksz = k[0] * k[1] * k[2];
  *n_out = c->batch * c->c_out * osz;
  double *y = calloc((size_t)*n_out, sizeof(double));
  for (int64_t n = 0; n < c->batch; n++)
    for (int64_t oc = 0; oc < c->c_out; oc++)
      for (int64_t o0 = 0; o0 < out[0]; o0++)
        for (int64_t o1 = 0; o1 < out[1]; o1++)
          for (int64_t o2 = 0; o2 < out[2]; o2++) {
            double acc = b ? b[oc] : 0.0;
            int64_t g = oc / mg;
            for (int64_t ic = 0; ic < cg; ic++)
              for (int64_t k0 = 0; k0 < k[0]; k0++)
                for (int64_t k1 = 0; k1 < k[1]; k1++)
                  for (int64_t k2 = 0; k2 < k[2]; k2++) {
                    int64_t i0 = o0 * s[0] - pb[0] + k0 * dl[0];
                    int64_t i1 = o1 * s[1] - pb[1] + k1 * dl[1];
                    int64_t i2 = o2 * s[2] - pb[2] + k2 * dl[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] ||
                        i2 < 0 || i2 >= in[2])
                      continue;
                    double xv = x[(n * c->c_in + g * cg + ic) * isz +
                                  (i0 * in[1] + i1) * in[2] + i2];
                    double wv =
                        w[(oc * cg + ic) * ksz + (k0 * k[1] + k1) * k[2] + k2];
                    acc += xv * wv;
                  }
            y[((n * c->c_out + oc) * out[0] + o0) * out[1] * out[2] +
              o1 * out[2] + o2] = acc;
          }
  return y;
}

static int check_conv(const conv_cfg *c, mb_dtype dtype) {
  op_case oc;
  int64_t xd[5] = {c->batch, c->c_in}, wd[5] = {c->c_out, c->c_in / c->group};
  int64_t bd[1] = {c->c_out};
  for (int d = 0; d < c->nsp; d++) {
    xd[2 + d] = c->in[d];
    wd[2 + d] = c->kernel[d];
  }
  mb_tensor *in[3] = {random_tensor(c->nsp + 2, xd),
                      random_tensor(c->nsp + 2, wd),
                      c->bias ? random_tensor(1, bd) : NULL};
  mb_tensor *low[3] = {NULL, NULL, NULL};
  mb_tensor *out[1] = {empty_output()};
  int64_t n_ref = 0;
  double *ref = conv_reference(c, in[0]->data, in[1]->data,
                               c->bias ? in[2]->data : NULL, &n_ref);
  int rc = case_init(&oc, "Conv", c->bias ? 3 : 2, 1);
  set_ints(&oc, "strides", c->nsp, c->stride);
  set_ints(&oc, "dilations", c->nsp, c->dilation);
  set_int(&oc, "group", c->group);
  if (c->auto_pad)
    mb__node_set_string(oc.model->graph, oc.node, "auto_pad", c->auto_pad,
                        &oc.err);
  else
    set_ints(&oc, "pads", 2 * c->nsp, c->pads);
  mb_tensor **args = in;
  if (dtype != MB_DTYPE_FLOAT) {
    /* Round the inputs to the narrow type; the reference keeps float32
     * values, so the tolerance below is loose. */
    for (int i = 0; i < 3; i++) {
      if (!in[i])
        continue;
      low[i] = new_tensor(dtype, in[i]->rank, in[i]->dims);
      for (int64_t e = 0; e < in[i]->numel; e++)
        mb__tensor_set_f64(low[i], e, ((float *)in[i]->data)[e]);
    }
    args = low;
  }
  mb_status st = case_run(&oc, 13, args, c->bias ? 3 : 2, out, 1);
  if (st) {
    fprintf(stderr, "  Conv failed: %s\n", oc.err.message);
    rc = 1;
  }
  if (!rc)
    rc = compare("Conv", out[0], ref, n_ref,
                 dtype == MB_DTYPE_FLOAT ? 1e-4 : 3e-2);
  if (rc)
    fprintf(stderr,
            "  case: nsp %d N %lld C %lld->%lld g %lld in %lld,%lld k %lld,%lld"
            " s %lld,%lld d %lld,%lld\n",
            c->nsp, (long long)c->batch, (long long)c->c_in,
            (long long)c->c_out, (long long)c->group, (long long)c->in[0],
            (long long)c->in[1], (long long)c->kernel[0],
            (long long)c->kernel[1], (long long)c->stride[0],
            (long long)c->stride[1], (long long)c->dilation[0],
            (long long)c->dilation[1]);
  free(ref);
  free_all(in, 3);
  free_all(low, 3);
  free_all(out, 1);
  case_free(&oc);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* Conv                                                                      */
/* ------------------------------------------------------------------------ */

/* nsp, N, Cin, Cout, group, in, kernel, stride, dilation, pads, bias, pad */
static const conv_cfg conv_cases_2d[] = {
    /* pointwise fast path (1x1, stride 1, no pads), with and without bias */
    {2, 1, 16, 8, 1, {7, 9}, {1, 1}, {1, 1}, {1, 1}, {0}, 1, NULL},
    {2, 2, 6, 10, 2, {5, 3}, {1, 1}, {1, 1}, {1, 1}, {0}, 0, NULL},
    /* 1x1 stride 2 and 1x1 with padding go through im2col */
    {2, 1, 8, 4, 1, {9, 7}, {1, 1}, {2, 2}, {1, 1}, {0}, 1, NULL},
    {2, 1, 3, 4, 1, {4, 5}, {1, 1}, {1, 1}, {1, 1}, {1, 0, 0, 1}, 1, NULL},
    /* im2col: 3x3, strides, asymmetric pads, dilation, groups, batch 2 */
    {2, 1, 3, 5, 1, {11, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 1, NULL},
    {2, 2, 4, 6, 1, {10, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 0, 0, 1}, 1, NULL},
    {2, 1, 4, 4, 2, {9, 10}, {3, 2}, {1, 2}, {2, 1}, {2, 1, 0, 2}, 0, NULL},
    {2, 2, 6, 4, 2, {8, 8}, {3, 3}, {2, 1}, {2, 2}, {2, 2, 2, 2}, 1, NULL},
    {2, 1, 3, 8, 1, {23, 21}, {7, 7}, {2, 2}, {1, 1}, {3, 3, 3, 3}, 1, NULL},
    /* large enough for im2col to run in several bands */
    {2, 1, 16, 8, 1, {40, 40}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 1, NULL},
    {2, 1, 16, 4, 1, {81, 80}, {3, 3}, {2, 2}, {1, 1}, {1, 0, 1, 1}, 1, NULL},
    /* depthwise: 3x3 s1/s2, 5x5, multiplier, dilation, wide rows */
    {2, 1, 8, 8, 8, {12, 40}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 1, NULL},
    {2, 2, 6, 6, 6, {13, 37}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 1, NULL},
    {2, 1, 4, 4, 4, {11, 35}, {3, 3}, {2, 2}, {1, 1}, {0, 0, 1, 1}, 0, NULL},
    {2, 1, 5, 5, 5, {14, 33}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, 1, NULL},
    {2, 1, 3, 6, 3, {9, 20}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 1, NULL},
    {2, 1, 4, 4, 4, {15, 29}, {3, 3}, {1, 3}, {2, 2}, {2, 1, 0, 3}, 1, NULL},
    {2, 1, 3, 3, 3, {8, 17}, {3, 3}, {1, 1}, {1, 1}, {0}, 1, NULL},
    {2, 1, 2, 2, 2, {5, 7}, {2, 4}, {1, 1}, {1, 1}, {0, 3, 1, 0}, 1, NULL},
    /* auto_pad */
    {2, 1, 3, 4, 1, {7, 8}, {3, 3}, {2, 2}, {1, 1}, {0}, 1, "SAME_UPPER"},
    {2, 1, 3, 4, 1, {7, 8}, {4, 4}, {2, 1}, {1, 1}, {0}, 1, "SAME_LOWER"},
    {2, 1, 4, 4, 4, {9, 16}, {4, 4}, {1, 1}, {1, 1}, {0}, 1, "SAME_LOWER"},
    {2, 1, 3, 4, 1, {7, 8}, {3, 3}, {2, 2}, {1, 1}, {0}, 1, "VALID"},
};

TEST(conv_2d_paths) {
  for (size_t i = 0; i < MB_ARRAY_COUNT(conv_cases_2d); i++)
    if (check_conv(&conv_cases_2d[i], MB_DTYPE_FLOAT))
      TEST_FAIL_("2-D case %zu differs", i);
  return 0;
}

static const conv_cfg conv_cases_nd[] = {
    /* 1-D: plain, strided with pads, dilated, grouped, depthwise */
    {1, 1, 3, 4, 1, {17}, {3}, {1}, {1}, {1, 1}, 1, NULL},
    {1, 2, 4, 6, 2, {20}, {4}, {3}, {1}, {2, 0}, 1, NULL},
    {1, 1, 2, 3, 1, {15}, {3}, {1}, {2}, {0, 0}, 0, NULL},
    {1, 1, 6, 6, 6, {41}, {3}, {2}, {1}, {1, 1}, 1, NULL},
    {1, 1, 5, 5, 1, {9}, {1}, {1}, {1}, {0, 0}, 1, NULL},
    /* 3-D: plain, strided/padded, grouped and dilated, depthwise, 1x1x1 */
    {3, 1, 2, 3, 1, {5, 6, 7}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0}, 1, NULL},
    {3,
     2,
     2,
     4,
     1,
     {6, 5, 7},
     {3, 2, 3},
     {2, 1, 2},
     {1, 1, 1},
     {1, 0, 1, 1, 1, 0},
     1,
     NULL},
    {3,
     1,
     4,
     4,
     2,
     {7, 7, 7},
     {2, 2, 2},
     {1, 1, 1},
     {2, 1, 2},
     {1, 1, 1, 1, 1, 1},
     0,
     NULL},
    {3,
     1,
     3,
     3,
     3,
     {5, 6, 7},
     {3, 3, 3},
     {1, 1, 1},
     {1, 1, 1},
     {1, 1, 1, 1, 1, 1},
     1,
     NULL},
    {3, 1, 4, 2, 1, {3, 4, 5}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0}, 1, NULL},
    {3,
     1,
     8,
     4,
     1,
     {10, 10, 12},
     {3, 3, 3},
     {1, 1, 1},
     {1, 1, 1},
     {1, 1, 1, 1, 1, 1},
     1,
     NULL},
};

TEST(conv_1d_3d) {
  for (size_t i = 0; i < MB_ARRAY_COUNT(conv_cases_nd); i++)
    if (check_conv(&conv_cases_nd[i], MB_DTYPE_FLOAT))
      TEST_FAIL_("N-D case %zu differs", i);
  return 0;
}

TEST(conv_threads) {
  /* Results must not depend on the thread count: sgemm, im2col and the
   * depthwise kernel (the last case) split over a pool of 3. */
  static const conv_cfg cases[] = {
      {2,
       2,
       16,
       16,
       16,
       {64, 70},
       {3, 3},
       {1, 1},
       {1, 1},
       {1, 1, 1, 1},
       1,
       NULL},
      {2,
       1,
       24,
       48,
       24,
       {45, 61},
       {3, 3},
       {2, 2},
       {1, 1},
       {1, 1, 1, 1},
       0,
       NULL},
      {2,
       1,
       7,
       7,
       7,
       {130, 131},
       {5, 5},
       {1, 1},
       {1, 1},
       {2, 2, 2, 2},
       1,
       NULL},
      {2, 1, 8, 4, 1, {20, 20}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 1, NULL},
  };
  int rc = 0;
  test_threads = 3;
  test_pool = mb__threadpool_create(test_threads);
  ASSERT(test_pool != NULL);
  for (size_t i = 0; i < MB_ARRAY_COUNT(cases) && !rc; i++)
    rc = check_conv(&cases[i], MB_DTYPE_FLOAT);
  mb__threadpool_free(test_pool);
  test_pool = NULL;
  test_threads = 1;
  ASSERT_EQ(rc, 0);
  return 0;
}

TEST(conv_half_and_double) {
  const conv_cfg *pick[] = {&conv_cases_2d[0], &conv_cases_2d[5],
                            &conv_cases_2d[10]};
  static const mb_dtype types[] = {MB_DTYPE_FLOAT16, MB_DTYPE_BFLOAT16,
                                   MB_DTYPE_DOUBLE};
  for (size_t t = 0; t < MB_ARRAY_COUNT(types); t++)
    for (size_t i = 0; i < MB_ARRAY_COUNT(pick); i++)
      if (check_conv(pick[i], types[t]))
        TEST_FAIL_("%s case %zu differs", mb_dtype_name(types[t]), i);
  return 0;
}

TEST(conv_errors) {
  op_case c;
  int64_t xd[4] = {1, 4, 5, 5}, wd[4] = {2, 3, 3, 3};
  mb_tensor *in[2] = {random_tensor(4, xd), random_tensor(4, wd)};
  mb_tensor *out[1] = {empty_output()};
  ASSERT_EQ(case_init(&c, "Conv", 2, 1), 0);
  ASSERT_EQ(case_run(&c, 13, in, 2, out, 1), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(c.err.message, "Conv 'n'");
  ASSERT_CONTAINS(c.err.message, "weights W [2,3,3,3]");
  case_free(&c);

  wd[1] = 4;
  mb_tensor_free(in[1]);
  in[1] = random_tensor(4, wd);
  ASSERT_EQ(case_init(&c, "Conv", 2, 1), 0);
  mb__node_set_string(c.model->graph, c.node, "auto_pad", "SAME", &c.err);
  ASSERT_EQ(case_run(&c, 13, in, 2, out, 1), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(c.err.message, "auto_pad 'SAME'");
  case_free(&c);

  ASSERT_EQ(case_init(&c, "Conv", 2, 1), 0);
  set_ints(&c, "strides", 2, (const int64_t[]){1, 0});
  ASSERT_EQ(case_run(&c, 13, in, 2, out, 1), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(c.err.message, "strides[1] = 0");
  case_free(&c);

  /* values that would overflow the size arithmetic are refused */
  ASSERT_EQ(case_init(&c, "Conv", 2, 1), 0);
  set_ints(&c, "dilations", 2, (const int64_t[]){1, (int64_t)1 << 62});
  ASSERT_EQ(case_run(&c, 13, in, 2, out, 1), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(c.err.message, "dilations[1]");
  case_free(&c);
  ASSERT_EQ(case_init(&c, "Conv", 2, 1), 0);
  set_int(&c, "group", (int64_t)1 << 62);
  ASSERT_EQ(case_run(&c, 13, in, 2, out, 1), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(c.err.message, "group");
  case_free(&c);
  mb_tensor *wt = random_tensor(4, (int64_t[]){4, 2, 3, 3});
  mb_tensor *tin[2] = {in[0], wt};
  ASSERT_EQ(case_init(&c, "ConvTranspose", 2, 1), 0);
  set_ints(&c, "output_shape", 2, (const int64_t[]){INT64_MIN, 3});
  ASSERT_EQ(case_run(&c, 13, tin, 2, out, 1), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(c.err.message, "output_shape[0]");
  case_free(&c);
  mb_tensor_free(wt);

  ASSERT_EQ(case_init(&c, "Conv", 2, 1), 0);
  set_ints(&c, "kernel_shape", 2, (const int64_t[]){7, 7});
  ASSERT_EQ(case_run(&c, 13, in, 2, out, 1), MB_STATUS_SHAPE);
  case_free(&c);

  int64_t big[4] = {2, 4, 7, 7};
  mb_tensor_free(in[1]);
  in[1] = random_tensor(4, big);
  ASSERT_EQ(case_init(&c, "Conv", 2, 1), 0);
  ASSERT_EQ(case_run(&c, 13, in, 2, out, 1), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(c.err.message, "exceeds the padded input");
  case_free(&c);

  /* a model may leave output 0 unnamed */
  mb_tensor *none[1] = {NULL};
  wd[1] = 4;
  mb_tensor_free(in[1]);
  in[1] = random_tensor(4, wd);
  ASSERT_EQ(case_init(&c, "Conv", 2, 1), 0);
  ASSERT_EQ(case_run(&c, 13, in, 2, none, 1), MB_STATUS_PARSE);
  ASSERT_CONTAINS(c.err.message, "output 0 is missing");
  case_free(&c);

  int64_t id[4] = {1, 4, 5, 5};
  mb_tensor *ints = new_tensor(MB_DTYPE_INT32, 4, id);
  wd[1] = 4;
  mb_tensor_free(in[1]);
  in[1] = random_tensor(4, wd);
  mb_tensor *bad[2] = {ints, in[1]};
  ASSERT_EQ(case_init(&c, "Conv", 2, 1), 0);
  ASSERT_EQ(case_run(&c, 13, bad, 2, out, 1), MB_STATUS_UNSUPPORTED);
  case_free(&c);
  mb_tensor_free(ints);
  free_all(in, 2);
  free_all(out, 1);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* ConvTranspose                                                             */
/* ------------------------------------------------------------------------ */

typedef struct convt_cfg {
  int64_t batch, c_in, c_out, group;
  int64_t in[2], kernel[2], stride[2], dilation[2], pads[4], out_pad[2];
  int bias;
  int64_t output_shape[2]; /* 0: not given */
} convt_cfg;

TEST(conv_transpose) {
  static const convt_cfg cases[] = {
      {1, 1, 2, 1, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {0}, {0}, 0, {0}},
      {1,
       3,
       4,
       1,
       {7, 6},
       {3, 3},
       {3, 2},
       {1, 1},
       {1, 1, 1, 1},
       {1, 1},
       1,
       {0}},
      {2,
       4,
       6,
       2,
       {5, 4},
       {3, 2},
       {2, 2},
       {2, 1},
       {0, 1, 1, 0},
       {1, 0},
       1,
       {0}},
      {1, 1, 2, 1, {3, 3}, {3, 3}, {3, 2}, {1, 1}, {0}, {0}, 1, {10, 8}},
      {1, 4, 4, 4, {6, 6}, {4, 4}, {2, 2}, {1, 1}, {1, 1, 1, 1}, {0}, 1, {0}},
  };
  for (size_t ci = 0; ci < MB_ARRAY_COUNT(cases); ci++) {
    const convt_cfg *c = &cases[ci];
    int64_t cg = c->c_in / c->group, mg = c->c_out / c->group;
    int64_t xd[4] = {c->batch, c->c_in, c->in[0], c->in[1]};
    int64_t wd[4] = {c->c_in, mg, c->kernel[0], c->kernel[1]};
    int64_t bd[1] = {c->c_out}, out[2], pb[2];
    for (int d = 0; d < 2; d++) {
      int64_t full = c->stride[d] * (c->in[d] - 1) + c->out_pad[d] +
                     (c->kernel[d] - 1) * c->dilation[d] + 1;
      if (c->output_shape[0]) {
        out[d] = c->output_shape[d];
        int64_t total = full - out[d];
        int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
        pb[d] = total - half;
      } else {
        out[d] = full - c->pads[d] - c->pads[2 + d];
        pb[d] = c->pads[d];
      }
    }
    mb_tensor *in[3] = {random_tensor(4, xd), random_tensor(4, wd),
                        c->bias ? random_tensor(1, bd) : NULL};
    mb_tensor *res[1] = {empty_output()};
    int64_t n_ref = c->batch * c->c_out * out[0] * out[1];
    double *ref = calloc((size_t)n_ref, sizeof(double));
    const float *x = in[0]->data, *w = in[1]->data;
    for (int64_t n = 0; n < c->batch; n++)
      for (int64_t oc = 0; oc < c->c_out; oc++) {
        double *yp = ref + (n * c->c_out + oc) * out[0] * out[1];
        for (int64_t i = 0; i < out[0] * out[1]; i++)
          yp[i] = c->bias ? ((float *)in[2]->data)[oc] : 0.0;
        int64_t g = oc / mg, m = oc % mg;
        for (int64_t ic = 0; ic < cg; ic++)
          for (int64_t i0 = 0; i0 < c->in[0]; i0++)
            for (int64_t i1 = 0; i1 < c->in[1]; i1++)
              for (int64_t k0 = 0; k0 < c->kernel[0]; k0++)
                for (int64_t k1 = 0; k1 < c->kernel[1]; k1++) {
                  int64_t o0 = i0 * c->stride[0] + k0 * c->dilation[0] - pb[0];
                  int64_t o1 = i1 * c->stride[1] + k1 * c->dilation[1] - pb[1];
                  if (o0 < 0 || o0 >= out[0] || o1 < 0 || o1 >= out[1])
                    continue;
                  int64_t chan = g * cg + ic;
                  yp[o0 * out[1] + o1] +=
                      (double)
                          x[((n * c->c_in + chan) * c->in[0] + i0) * c->in[1] +
                            i1] *
                      w[((chan * mg + m) * c->kernel[0] + k0) * c->kernel[1] +
                        k1];
                }
      }
    op_case oc;
    ASSERT_EQ(case_init(&oc, "ConvTranspose", c->bias ? 3 : 2, 1), 0);
    set_ints(&oc, "strides", 2, c->stride);
    set_ints(&oc, "dilations", 2, c->dilation);
    set_int(&oc, "group", c->group);
    set_ints(&oc, "pads", 4, c->pads);
    set_ints(&oc, "output_padding", 2, c->out_pad);
    if (c->output_shape[0])
      set_ints(&oc, "output_shape", 2, c->output_shape);
    mb_status st = case_run(&oc, 13, in, c->bias ? 3 : 2, res, 1);
    int rc = st != MB_STATUS_OK;
    if (rc)
      fprintf(stderr, "  %s\n", oc.err.message);
    else
      rc = compare("ConvTranspose", res[0], ref, n_ref, 1e-4);
    free(ref);
    free_all(in, 3);
    free_all(res, 1);
    case_free(&oc);
    if (rc)
      TEST_FAIL_("ConvTranspose case %zu differs", ci);
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Pooling                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct pool_cfg {
  const char *op;
  int nsp;
  int64_t batch, channels;
  int64_t in[3], kernel[3], stride[3], dilation[3], pads[6];
  int ceil_mode, count_include_pad, want_indices;
} pool_cfg;

static int64_t pool_out_dim(const pool_cfg *c, int d) {
  int64_t ext = (c->kernel[d] - 1) * c->dilation[d] + 1;
  int64_t span = c->in[d] + c->pads[d] + c->pads[c->nsp + d] - ext;
  int64_t out = (c->ceil_mode ? (span + c->stride[d] - 1) / c->stride[d]
                              : span / c->stride[d]) +
                1;
  if (c->ceil_mode && (out - 1) * c->stride[d] >= c->in[d] + c->pads[d])
    out--;
  return out;
}

static int check_pool(const pool_cfg *c) {
  int64_t xd[5] = {c->batch, c->channels}, out[3] = {1, 1, 1};
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1};
  int64_t dl[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0};
  int off = 3 - c->nsp;
  for (int d = 0; d < c->nsp; d++) {
    xd[2 + d] = c->in[d];
    out[off + d] = pool_out_dim(c, d);
    in[off + d] = c->in[d];
    k[off + d] = c->kernel[d];
    s[off + d] = c->stride[d];
    dl[off + d] = c->dilation[d];
    pb[off + d] = c->pads[d];
    pe[off + d] = c->pads[c->nsp + d];
  }
  bool is_max = strcmp(c->op, "MaxPool") == 0;
  bool is_lp = strcmp(c->op, "LpPool") == 0;
  mb_tensor *x = random_tensor(c->nsp + 2, xd);
  int64_t planes = c->batch * c->channels;
  int64_t osz = out[0] * out[1] * out[2], isz = in[0] * in[1] * in[2];
  double *ref = calloc((size_t)(planes * osz), sizeof(double));
  double *ref_idx = calloc((size_t)(planes * osz), sizeof(double));
  const float *xv = x->data;
  for (int64_t p = 0; p < planes; p++)
    for (int64_t o0 = 0; o0 < out[0]; o0++)
      for (int64_t o1 = 0; o1 < out[1]; o1++)
        for (int64_t o2 = 0; o2 < out[2]; o2++) {
          double best = -INFINITY, sum = 0;
          int64_t best_i = 0, count = 0, padded = 0;
          for (int64_t k0 = 0; k0 < k[0]; k0++)
            for (int64_t k1 = 0; k1 < k[1]; k1++)
              for (int64_t k2 = 0; k2 < k[2]; k2++) {
                int64_t i[3] = {o0 * s[0] - pb[0] + k0 * dl[0],
                                o1 * s[1] - pb[1] + k1 * dl[1],
                                o2 * s[2] - pb[2] + k2 * dl[2]};
                bool in_pad = true, inside = true;
                for (int d = 0; d < 3; d++) {
                  in_pad &= i[d] >= -pb[d] && i[d] < in[d] + pe[d];
                  inside &= i[d] >= 0 && i[d] < in[d];
                }
                padded += in_pad;
                if (!inside)
                  continue;
                int64_t fi = (i[0] * in[1] + i[1]) * in[2] + i[2];
                double v = xv[p * isz + fi];
                if (v > best) {
                  best = v;
                  best_i = p * isz + fi;
                }
                sum += is_lp ? v * v : v;
                count++;
              }
          int64_t oi = p * osz + (o0 * out[1] + o1) * out[2] + o2;
          ref[oi] = is_max ? best
                    : is_lp
                        ? sqrt(sum)
                        : sum / (double)(c->count_include_pad ? padded : count);
          ref_idx[oi] = (double)best_i;
        }
  op_case oc;
  mb_tensor *inputs[1] = {x};
  mb_tensor *outs[2] = {empty_output(), c->want_indices ? empty_output() : 0};
  int rc = case_init(&oc, c->op, 1, c->want_indices ? 2 : 1);
  set_ints(&oc, "kernel_shape", c->nsp, c->kernel);
  set_ints(&oc, "strides", c->nsp, c->stride);
  set_ints(&oc, "pads", 2 * c->nsp, c->pads);
  if (!is_lp)
    set_ints(&oc, "dilations", c->nsp, c->dilation);
  set_int(&oc, "ceil_mode", c->ceil_mode);
  set_int(&oc, "count_include_pad", c->count_include_pad);
  if (!rc && case_run(&oc, 19, inputs, 1, outs, c->want_indices ? 2 : 1)) {
    fprintf(stderr, "  %s\n", oc.err.message);
    rc = 1;
  }
  if (!rc)
    rc = compare(c->op, outs[0], ref, planes * osz, 1e-5);
  if (!rc && c->want_indices)
    rc = compare("Indices", outs[1], ref_idx, planes * osz, 0);
  free(ref);
  free(ref_idx);
  mb_tensor_free(x);
  free_all(outs, 2);
  case_free(&oc);
  return rc;
}

TEST(pooling) {
  static const pool_cfg cases[] = {
      {"MaxPool",
       2,
       1,
       3,
       {112, 112},
       {3, 3},
       {2, 2},
       {1, 1},
       {1, 1, 1, 1},
       0,
       0,
       1},
      {"MaxPool",
       2,
       2,
       2,
       {9, 10},
       {2, 3},
       {1, 2},
       {2, 1},
       {1, 0, 0, 2},
       0,
       0,
       1},
      {"MaxPool", 2, 1, 2, {8, 8}, {3, 3}, {2, 2}, {1, 1}, {0}, 1, 0, 0},
      {"MaxPool",
       2,
       2,
       3,
       {10, 11},
       {3, 2},
       {2, 1},
       {2, 3},
       {2, 1, 1, 2},
       0,
       0,
       0},
      {"MaxPool", 1, 1, 3, {19}, {3}, {2}, {1}, {1, 1}, 0, 0, 0},
      {"MaxPool", 1, 1, 2, {23}, {4}, {3}, {2}, {1, 2}, 1, 0, 1},
      {"MaxPool",
       3,
       1,
       2,
       {5, 6, 7},
       {2, 3, 2},
       {2, 1, 2},
       {1, 1, 1},
       {0, 1, 1, 1, 0, 0},
       0,
       0,
       1},
      {"AveragePool",
       2,
       1,
       3,
       {7, 9},
       {3, 3},
       {2, 2},
       {1, 1},
       {1, 1, 1, 1},
       0,
       0,
       0},
      {"AveragePool",
       2,
       1,
       3,
       {7, 9},
       {3, 3},
       {2, 2},
       {1, 1},
       {1, 1, 1, 1},
       0,
       1,
       0},
      {"AveragePool",
       2,
       2,
       1,
       {8, 7},
       {3, 2},
       {2, 2},
       {1, 1},
       {0, 1, 1, 0},
       1,
       1,
       0},
      {"AveragePool", 1, 1, 2, {11}, {3}, {2}, {1}, {1, 1}, 1, 0, 0},
      {"AveragePool",
       3,
       1,
       2,
       {5, 4, 6},
       {2, 2, 3},
       {1, 2, 2},
       {1, 1, 1},
       {1, 0, 1, 0, 1, 1},
       0,
       1,
       0},
      {"LpPool",
       2,
       1,
       2,
       {6, 7},
       {2, 3},
       {2, 1},
       {1, 1},
       {0, 1, 1, 0},
       0,
       0,
       0},
  };
  for (size_t i = 0; i < MB_ARRAY_COUNT(cases); i++)
    if (check_pool(&cases[i]))
      TEST_FAIL_("pool case %zu (%s) differs", i, cases[i].op);
  return 0;
}

TEST(global_pooling) {
  int64_t xd[4] = {2, 3, 5, 7};
  mb_tensor *x = random_tensor(4, xd);
  const float *xv = x->data;
  static const char *const ops[] = {"GlobalAveragePool", "GlobalMaxPool"};
  for (size_t o = 0; o < MB_ARRAY_COUNT(ops); o++) {
    double ref[6];
    for (int p = 0; p < 6; p++) {
      double sum = 0, best = -INFINITY;
      for (int i = 0; i < 35; i++) {
        sum += xv[p * 35 + i];
        best = fmax(best, xv[p * 35 + i]);
      }
      ref[p] = o == 0 ? sum / 35 : best;
    }
    op_case c;
    mb_tensor *outs[1] = {empty_output()};
    ASSERT_EQ(case_init(&c, ops[o], 1, 1), 0);
    ASSERT_OK(case_run(&c, 13, &x, 1, outs, 1), &c.err);
    ASSERT_EQ(outs[0]->rank, 4);
    ASSERT_EQ(outs[0]->dims[2], 1);
    ASSERT_EQ(compare(ops[o], outs[0], ref, 6, 1e-6), 0);
    free_all(outs, 1);
    case_free(&c);
  }
  mb_tensor_free(x);
  return 0;
}

TEST(pool_errors) {
  op_case c;
  int64_t xd[3] = {1, 2, 4};
  mb_tensor *x = random_tensor(3, xd);
  mb_tensor *outs[1] = {empty_output()};
  ASSERT_EQ(case_init(&c, "MaxPool", 1, 1), 0);
  ASSERT_EQ(case_run(&c, 13, &x, 1, outs, 1), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(c.err.message, "kernel_shape");
  case_free(&c);
  ASSERT_EQ(case_init(&c, "AveragePool", 1, 1), 0);
  set_ints(&c, "kernel_shape", 2, (const int64_t[]){2, 2});
  ASSERT_EQ(case_run(&c, 13, &x, 1, outs, 1), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(c.err.message, "kernel_shape has 2 entries");
  case_free(&c);
  ASSERT_EQ(case_init(&c, "MaxPool", 1, 1), 0);
  set_ints(&c, "kernel_shape", 1, (const int64_t[]){5});
  ASSERT_EQ(case_run(&c, 13, &x, 1, outs, 1), MB_STATUS_SHAPE);
  case_free(&c);
  mb_tensor_free(x);
  free_all(outs, 1);
  return 0;
}

TEST(max_roi_pool) {
  mb_tensor *in[2] = {new_tensor(MB_DTYPE_FLOAT, 4, (int64_t[]){1, 1, 4, 4}),
                      new_tensor(MB_DTYPE_FLOAT, 2, (int64_t[]){3, 5})};
  static const float rois[15] = {0, 0, 0, 3, 3, 0, 1, 1, 2, 2, 0, 0, 0, 6, 6};
  for (int i = 0; i < 16; i++)
    ((float *)in[0]->data)[i] = (float)i;
  memcpy(in[1]->data, rois, sizeof rois);
  mb_tensor *outs[1] = {empty_output()};
  op_case c;
  ASSERT_EQ(case_init(&c, "MaxRoiPool", 2, 1), 0);
  set_ints(&c, "pooled_shape", 2, (const int64_t[]){2, 2});
  ASSERT_OK(case_run(&c, 13, in, 2, outs, 1), &c.err);
  /* quadrant maxima; a 2x2 ROI's own values; a 7x7 ROI whose 3.5-pixel
   * bins are clipped to the 4x4 input, so every bin holds pixel (3, 3) */
  static const double want[12] = {5, 7, 13, 15, 5, 6, 9, 10, 15, 15, 15, 15};
  ASSERT_EQ(compare("MaxRoiPool", outs[0], want, 12, 0), 0);
  case_free(&c);
  /* a ROI naming a batch that does not exist */
  ((float *)in[1]->data)[0] = 1;
  ASSERT_EQ(case_init(&c, "MaxRoiPool", 2, 1), 0);
  set_ints(&c, "pooled_shape", 2, (const int64_t[]){2, 2});
  ASSERT_EQ(case_run(&c, 13, in, 2, outs, 1), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(c.err.message, "roi 0 names batch 1");
  case_free(&c);
  free_all(in, 2);
  free_all(outs, 1);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* MatMul, Gemm                                                              */
/* ------------------------------------------------------------------------ */

/* Reference numpy matmul of float tensors, via explicit broadcast. */
static int check_matmul(int ra, const int64_t *ad, int rb, const int64_t *bd,
                        int want_rank, const int64_t *want_dims) {
  mb_tensor *in[2] = {random_tensor(ra, ad), random_tensor(rb, bd)};
  mb_tensor *outs[1] = {empty_output()};
  op_case c;
  int rc = case_init(&c, "MatMul", 2, 1);
  if (!rc && case_run(&c, 13, in, 2, outs, 1)) {
    fprintf(stderr, "  %s\n", c.err.message);
    rc = 1;
  }
  if (!rc) {
    const mb_tensor *y = outs[0];
    rc = y->rank != want_rank;
    for (int d = 0; !rc && d < want_rank; d++)
      rc = y->dims[d] != want_dims[d];
    if (rc)
      fprintf(stderr, "  MatMul output rank %d is wrong\n", y->rank);
  }
  if (!rc) {
    /* Promote 1-D operands, then broadcast batch dims by hand. */
    int64_t m = ra == 1 ? 1 : ad[ra - 2], k = ad[ra - 1];
    int64_t n = rb == 1 ? 1 : bd[rb - 1];
    int na = ra > 2 ? ra - 2 : 0, nb = rb > 2 ? rb - 2 : 0;
    int nbat = na > nb ? na : nb;
    int64_t bat[MB_MAX_RANK], total = 1;
    for (int d = 0; d < nbat; d++) {
      int64_t x = d - (nbat - na) >= 0 ? ad[d - (nbat - na)] : 1;
      int64_t yv = d - (nbat - nb) >= 0 ? bd[d - (nbat - nb)] : 1;
      bat[d] = x > yv ? x : yv;
      total *= bat[d];
    }
    double *ref = calloc((size_t)(total * m * n), sizeof(double));
    const float *a = in[0]->data, *b = in[1]->data;
    for (int64_t t = 0; t < total; t++) {
      int64_t rem = t, ao = 0, bo = 0, as = 1, bs = 1;
      for (int d = nbat - 1; d >= 0; d--) {
        int64_t i = rem % bat[d];
        rem /= bat[d];
        int da = d - (nbat - na), db = d - (nbat - nb);
        if (da >= 0) {
          ao += (ad[da] == 1 ? 0 : i) * as;
          as *= ad[da];
        }
        if (db >= 0) {
          bo += (bd[db] == 1 ? 0 : i) * bs;
          bs *= bd[db];
        }
      }
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          double acc = 0;
          for (int64_t p = 0; p < k; p++)
            acc +=
                (double)a[ao * m * k + i * k + p] * b[bo * k * n + p * n + j];
          ref[(t * m + i) * n + j] = acc;
        }
    }
    rc = compare("MatMul", outs[0], ref, total * m * n, 1e-4);
    free(ref);
  }
  free_all(in, 2);
  free_all(outs, 1);
  case_free(&c);
  return rc;
}

TEST(matmul_shapes) {
  /* 2-D, batch folded into M, broadcast both ways, 1-D promotions */
  ASSERT_EQ(check_matmul(2, (int64_t[]){7, 5}, 2, (int64_t[]){5, 3}, 2,
                         (int64_t[]){7, 3}),
            0);
  ASSERT_EQ(check_matmul(3, (int64_t[]){4, 3, 6}, 2, (int64_t[]){6, 5}, 3,
                         (int64_t[]){4, 3, 5}),
            0);
  ASSERT_EQ(check_matmul(2, (int64_t[]){3, 6}, 3, (int64_t[]){4, 6, 5}, 3,
                         (int64_t[]){4, 3, 5}),
            0);
  ASSERT_EQ(check_matmul(4, (int64_t[]){2, 1, 3, 4}, 3, (int64_t[]){3, 4, 2}, 4,
                         (int64_t[]){2, 3, 3, 2}),
            0);
  ASSERT_EQ(check_matmul(3, (int64_t[]){1, 3, 4}, 3, (int64_t[]){5, 4, 2}, 3,
                         (int64_t[]){5, 3, 2}),
            0);
  ASSERT_EQ(check_matmul(1, (int64_t[]){4}, 3, (int64_t[]){2, 4, 3}, 2,
                         (int64_t[]){2, 3}),
            0);
  ASSERT_EQ(check_matmul(3, (int64_t[]){2, 3, 4}, 1, (int64_t[]){4}, 2,
                         (int64_t[]){2, 3}),
            0);
  ASSERT_EQ(check_matmul(1, (int64_t[]){6}, 1, (int64_t[]){6}, 0, NULL), 0);
  return 0;
}

TEST(matmul_errors) {
  mb_tensor *in[2] = {random_tensor(2, (int64_t[]){2, 3}),
                      random_tensor(2, (int64_t[]){4, 5})};
  mb_tensor *outs[1] = {empty_output()};
  op_case c;
  ASSERT_EQ(case_init(&c, "MatMul", 2, 1), 0);
  ASSERT_EQ(case_run(&c, 13, in, 2, outs, 1), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(c.err.message, "inner dimensions");
  case_free(&c);
  free_all(in, 2);
  in[0] = random_tensor(3, (int64_t[]){2, 2, 3});
  in[1] = random_tensor(3, (int64_t[]){3, 3, 4});
  ASSERT_EQ(case_init(&c, "MatMul", 2, 1), 0);
  ASSERT_EQ(case_run(&c, 13, in, 2, outs, 1), MB_STATUS_SHAPE);
  ASSERT_CONTAINS(c.err.message, "cannot be broadcast");
  case_free(&c);
  free_all(in, 2);
  free_all(outs, 1);
  return 0;
}

TEST(gemm_attributes) {
  /* C shapes: none, scalar, [N], [M,1], [M,N] */
  static const int c_rank[] = {-1, 0, 1, 2, 2};
  for (int trans = 0; trans < 4; trans++) {
    for (size_t ci = 0; ci < MB_ARRAY_COUNT(c_rank); ci++) {
      int ta = trans & 1, tb = trans >> 1;
      int64_t m = 5, n = 4, k = 3;
      int64_t ad[2] = {ta ? k : m, ta ? m : k},
              bd[2] = {tb ? n : k, tb ? k : n};
      int64_t cd[2] = {ci == 3 ? m : ci == 4 ? m : n, ci == 3 ? 1 : n};
      if (ci == 2)
        cd[0] = n;
      mb_tensor *in[3] = {random_tensor(2, ad), random_tensor(2, bd),
                          c_rank[ci] >= 0 ? random_tensor(c_rank[ci], cd)
                                          : NULL};
      mb_tensor *outs[1] = {empty_output()};
      float alpha = 0.5f, beta = 2.0f;
      double ref[20];
      const float *a = in[0]->data, *b = in[1]->data;
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          double acc = 0;
          for (int64_t p = 0; p < k; p++)
            acc += (double)(ta ? a[p * m + i] : a[i * k + p]) *
                   (tb ? b[j * k + p] : b[p * n + j]);
          double cv = 0;
          if (in[2]) {
            const float *cv_ = in[2]->data;
            cv = c_rank[ci] == 0   ? cv_[0]
                 : c_rank[ci] == 1 ? cv_[j]
                 : ci == 3         ? cv_[i]
                                   : cv_[i * n + j];
          }
          ref[i * n + j] = alpha * acc + beta * cv;
        }
      op_case c;
      ASSERT_EQ(case_init(&c, "Gemm", in[2] ? 3 : 2, 1), 0);
      set_int(&c, "transA", ta);
      set_int(&c, "transB", tb);
      mb__node_set_float(c.model->graph, c.node, "alpha", alpha, &c.err);
      mb__node_set_float(c.model->graph, c.node, "beta", beta, &c.err);
      ASSERT_OK(case_run(&c, 13, in, in[2] ? 3 : 2, outs, 1), &c.err);
      if (compare("Gemm", outs[0], ref, m * n, 1e-5))
        TEST_FAIL_("Gemm trans %d C case %zu differs", trans, ci);
      free_all(in, 3);
      free_all(outs, 1);
      case_free(&c);
    }
  }
  return 0;
}

TEST(einsum_and_integer) {
  /* Einsum: batched matmul and a diagonal through an ellipsis. */
  mb_tensor *in[2] = {random_tensor(3, (int64_t[]){2, 3, 4}),
                      random_tensor(3, (int64_t[]){2, 4, 5})};
  mb_tensor *outs[1] = {empty_output()};
  op_case c;
  ASSERT_EQ(case_init(&c, "Einsum", 2, 1), 0);
  mb__node_set_string(c.model->graph, c.node, "equation", "bij,bjk->bik",
                      &c.err);
  ASSERT_OK(case_run(&c, 13, in, 2, outs, 1), &c.err);
  double ref[40];
  const float *a = in[0]->data, *b = in[1]->data;
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < 3; i++)
      for (int k = 0; k < 5; k++) {
        double acc = 0;
        for (int j = 0; j < 4; j++)
          acc += (double)a[(t * 3 + i) * 4 + j] * b[(t * 4 + j) * 5 + k];
        ref[(t * 3 + i) * 5 + k] = acc;
      }
  ASSERT_EQ(compare("Einsum", outs[0], ref, 30, 1e-5), 0);
  case_free(&c);
  free_all(outs, 1);
  free_all(in, 2);

  in[0] = random_tensor(3, (int64_t[]){3, 4, 4});
  outs[0] = empty_output();
  ASSERT_EQ(case_init(&c, "Einsum", 1, 1), 0);
  mb__node_set_string(c.model->graph, c.node, "equation", "...ii ->...i",
                      &c.err);
  ASSERT_OK(case_run(&c, 13, in, 1, outs, 1), &c.err);
  for (int t = 0; t < 3; t++)
    for (int i = 0; i < 4; i++)
      ref[t * 4 + i] = ((float *)in[0]->data)[(t * 4 + i) * 4 + i];
  ASSERT_EQ(compare("Einsum diagonal", outs[0], ref, 12, 0), 0);
  case_free(&c);
  free_all(outs, 1);
  mb_tensor_free(in[0]);

  /* int64 Einsum sums in integers (wrapping as C's): through doubles,
   * 2^60 + 1 lost its low bit. */
  {
    mb_tensor *ia = new_tensor(MB_DTYPE_INT64, 1, (int64_t[]){2});
    mb_tensor *ib = new_tensor(MB_DTYPE_INT64, 1, (int64_t[]){2});
    int64_t *av64 = ia->data, *bv64 = ib->data;
    av64[0] = (INT64_C(1) << 60) + 1;
    av64[1] = INT64_MAX;
    bv64[0] = 1;
    bv64[1] = 2; /* INT64_MAX * 2 wraps to -2 */
    mb_tensor *iin[2] = {ia, ib};
    outs[0] = empty_output();
    ASSERT_EQ(case_init(&c, "Einsum", 2, 1), 0);
    mb__node_set_string(c.model->graph, c.node, "equation", "i,i->", &c.err);
    ASSERT_OK(case_run(&c, 12, iin, 2, outs, 1), &c.err);
    ASSERT_EQ(outs[0]->dtype, MB_DTYPE_INT64);
    ASSERT_EQ(((int64_t *)outs[0]->data)[0], (INT64_C(1) << 60) - 1);
    case_free(&c);
    free_all(outs, 1);
    free_all(iin, 2);
  }

  /* MatMulInteger with per-row / per-column zero points. */
  mb_tensor *qa = new_tensor(MB_DTYPE_UINT8, 2, (int64_t[]){2, 3});
  mb_tensor *qb = new_tensor(MB_DTYPE_INT8, 2, (int64_t[]){3, 2});
  mb_tensor *za = new_tensor(MB_DTYPE_UINT8, 1, (int64_t[]){2});
  mb_tensor *zb = new_tensor(MB_DTYPE_INT8, 0, NULL);
  static const uint8_t av[6] = {1, 200, 3, 4, 5, 255};
  static const int8_t bv[6] = {-128, 2, 3, 127, 5, -6};
  memcpy(qa->data, av, 6);
  memcpy(qb->data, bv, 6);
  ((uint8_t *)za->data)[0] = 1;
  ((uint8_t *)za->data)[1] = 7;
  ((int8_t *)zb->data)[0] = -3;
  mb_tensor *qin[4] = {qa, qb, za, zb};
  outs[0] = empty_output();
  ASSERT_EQ(case_init(&c, "MatMulInteger", 4, 1), 0);
  ASSERT_OK(case_run(&c, 13, qin, 4, outs, 1), &c.err);
  ASSERT_EQ(outs[0]->dtype, MB_DTYPE_INT32);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      int32_t acc = 0;
      for (int p = 0; p < 3; p++)
        acc += (av[i * 3 + p] - (i ? 7 : 1)) * (bv[p * 2 + j] + 3);
      ASSERT_EQ(((int32_t *)outs[0]->data)[i * 2 + j], acc);
    }
  case_free(&c);
  free_all(outs, 1);
  free_all(qin, 4);
  return 0;
}

TEST_MAIN(TEST_ENTRY(conv_2d_paths), TEST_ENTRY(conv_1d_3d),
          TEST_ENTRY(conv_threads), TEST_ENTRY(conv_half_and_double),
          TEST_ENTRY(conv_errors), TEST_ENTRY(conv_transpose),
          TEST_ENTRY(pooling), TEST_ENTRY(global_pooling),
          TEST_ENTRY(pool_errors), TEST_ENTRY(max_roi_pool),
          TEST_ENTRY(matmul_shapes), TEST_ENTRY(matmul_errors),
          TEST_ENTRY(gemm_attributes), TEST_ENTRY(einsum_and_integer))
