/* Matrix products: MatMul, Gemm, MatMulInteger, QLinearMatMul, Einsum;
 * and Det.
 *
 * Float products run on sgemm (float16/bfloat16/double through float32
 * views). MatMul with a 2-D right operand folds the batch of a contiguous
 * left operand into M, so a [B, S, K] x [K, N] product is a single sgemm.
 * Integer products and Einsum are plain loops: they are rare in the models
 * we benchmark and exactness matters more there.
 *
 * Scratch slots: 0 A, 1 B, 2 Y, 3 C (float views); integer paths use 0-2 for
 * widened operands and accumulators. */
#include "ops/op.h"

#include <math.h>

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

/* ------------------------------------------------------------------------ */
/* MatMul shape rules (numpy)                                                */
/* ------------------------------------------------------------------------ */

typedef struct matmul_geom {
  int64_t m, n, k;
  int batch_rank; /* rank of the broadcast batch dims */
  int64_t batch_dims[MB_MAX_RANK];
  int64_t batch;                 /* product of batch_dims */
  int64_t a_stride[MB_MAX_RANK]; /* in matrices, 0 where broadcast */
  int64_t b_stride[MB_MAX_RANK];
  int64_t a_batch, b_batch; /* matrices in A and B */
  int out_rank;
  int64_t out_dims[MB_MAX_RANK];
} matmul_geom;

/* Strides (in matrices) of operand batch dims viewed at the broadcast batch
 * shape. */
static void batch_strides(const int64_t *dims, int rank, int out_rank,
                          const int64_t *out_dims, int64_t *strides) {
  int64_t s = 1;
  for (int d = out_rank - 1; d >= 0; d--) {
    int od = d - (out_rank - rank);
    if (od < 0) {
      strides[d] = 0;
      continue;
    }
    strides[d] = dims[od] == 1 && out_dims[d] != 1 ? 0 : s;
    s *= dims[od];
  }
}

static mb_status matmul_geom_init(mb_op_ctx *ctx, const mb_tensor *a,
                                  const mb_tensor *b, matmul_geom *g) {
  char as[96], bs[96];
  memset(g, 0, sizeof *g);
  if (a->rank < 1 || b->rank < 1)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "operands must have rank >= 1, got A %s and B %s",
                        mb__shape_str(a->rank, a->dims, as, sizeof as),
                        mb__shape_str(b->rank, b->dims, bs, sizeof bs));
  int a_mat = a->rank == 1 ? 1 : 2, b_mat = b->rank == 1 ? 1 : 2;
  g->m = a->rank == 1 ? 1 : a->dims[a->rank - 2];
  g->k = a->dims[a->rank - 1];
  int64_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
  g->n = b->rank == 1 ? 1 : b->dims[b->rank - 1];
  if (kb != g->k)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "inner dimensions of A %s and B %s differ",
                        mb__shape_str(a->rank, a->dims, as, sizeof as),
                        mb__shape_str(b->rank, b->dims, bs, sizeof bs));
  int ra = a->rank - a_mat, rb = b->rank - b_mat;
  g->batch_rank = MB_MAX(ra, rb);
  g->batch = 1;
  for (int d = 0; d < g->batch_rank; d++) {
    int da = d - (g->batch_rank - ra), db = d - (g->batch_rank - rb);
    int64_t x = da >= 0 ? a->dims[da] : 1, y = db >= 0 ? b->dims[db] : 1;
    if (x != y && x != 1 && y != 1)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "batch dimensions of A %s and B %s cannot be "
                          "broadcast",
                          mb__shape_str(a->rank, a->dims, as, sizeof as),
                          mb__shape_str(b->rank, b->dims, bs, sizeof bs));
    g->batch_dims[d] = x == 1 ? y : x;
    if (!mb__mul_i64(g->batch, g->batch_dims[d], &g->batch))
      return mb__op_error(ctx, MB_STATUS_OVERFLOW, "batch size overflows");
  }
  batch_strides(a->dims, ra, g->batch_rank, g->batch_dims, g->a_stride);
  batch_strides(b->dims, rb, g->batch_rank, g->batch_dims, g->b_stride);
  g->a_batch = g->b_batch = 1;
  for (int d = 0; d < ra; d++)
    g->a_batch *= a->dims[d];
  for (int d = 0; d < rb; d++)
    g->b_batch *= b->dims[d];
  g->out_rank = g->batch_rank;
  memcpy(g->out_dims, g->batch_dims, sizeof(int64_t) * (size_t)g->batch_rank);
  if (a->rank > 1)
    g->out_dims[g->out_rank++] = g->m;
  if (b->rank > 1)
    g->out_dims[g->out_rank++] = g->n;
  if (g->out_rank > MB_MAX_RANK)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED, "output rank too large");
  return MB_STATUS_OK;
}

/* Matrix offsets (in matrices) of A and B for flat batch index `i`. */
static void batch_offsets(const matmul_geom *g, int64_t i, int64_t *a_off,
                          int64_t *b_off) {
  int64_t ao = 0, bo = 0;
  for (int d = g->batch_rank - 1; d >= 0; d--) {
    int64_t idx = i % g->batch_dims[d];
    i /= g->batch_dims[d];
    ao += idx * g->a_stride[d];
    bo += idx * g->b_stride[d];
  }
  *a_off = ao;
  *b_off = bo;
}

/* ------------------------------------------------------------------------ */
/* Integer element access                                                    */
/* ------------------------------------------------------------------------ */

static bool is_matmul_int(mb_dtype dt) {
  return dt == MB_DTYPE_INT32 || dt == MB_DTYPE_INT64 ||
         dt == MB_DTYPE_UINT32 || dt == MB_DTYPE_UINT64;
}

/* Stores v with wrap-around, as integer MatMul overflows in C. */
static void store_int(mb_tensor *t, int64_t i, int64_t v) {
  switch (t->dtype) {
  case MB_DTYPE_INT32:
    ((int32_t *)t->data)[i] = (int32_t)(uint32_t)(uint64_t)v;
    break;
  case MB_DTYPE_UINT32:
    ((uint32_t *)t->data)[i] = (uint32_t)(uint64_t)v;
    break;
  case MB_DTYPE_UINT64:
    ((uint64_t *)t->data)[i] = (uint64_t)v;
    break;
  default:
    ((int64_t *)t->data)[i] = v;
    break;
  }
}

/* ------------------------------------------------------------------------ */
/* MatMul                                                                    */
/* ------------------------------------------------------------------------ */

static mb_status matmul_infer(mb_op_ctx *ctx) {
  matmul_geom g;
  mb_status status = check_io(ctx, 2, 2);
  if (status)
    return status;
  const mb_tensor *a = ctx->inputs[0], *b = ctx->inputs[1];
  if (a->dtype != b->dtype)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "A is %s but B is %s",
                        mb_dtype_name(a->dtype), mb_dtype_name(b->dtype));
  if (!mb__dtype_is_float(a->dtype) && !is_matmul_int(a->dtype))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED, "type %s is not supported",
                        mb_dtype_name(a->dtype));
  if ((status = matmul_geom_init(ctx, a, b, &g)))
    return status;
  return mb__tensor_set_shape(ctx->outputs[0], a->dtype, g.out_rank, g.out_dims,
                              ctx->err);
}

static void matmul_int(const matmul_geom *g, const mb_tensor *a,
                       const mb_tensor *b, mb_tensor *y) {
  for (int64_t bi = 0; bi < g->batch; bi++) {
    int64_t ao, bo;
    batch_offsets(g, bi, &ao, &bo);
    ao *= g->m * g->k;
    bo *= g->k * g->n;
    for (int64_t i = 0; i < g->m; i++)
      for (int64_t j = 0; j < g->n; j++) {
        uint64_t acc = 0; /* unsigned: wraps instead of overflowing */
        for (int64_t p = 0; p < g->k; p++)
          acc += (uint64_t)mb__tensor_get_i64(a, ao + i * g->k + p) *
                 (uint64_t)mb__tensor_get_i64(b, bo + p * g->n + j);
        store_int(y, (bi * g->m + i) * g->n + j, (int64_t)acc);
      }
  }
}

static mb_status matmul_run(mb_op_ctx *ctx) {
  matmul_geom g;
  const mb_tensor *at = ctx->inputs[0], *bt = ctx->inputs[1];
  mb_tensor *yt = ctx->outputs[0];
  mb_status status = matmul_geom_init(ctx, at, bt, &g);
  if (status || yt->numel == 0)
    return status;
  if (is_matmul_int(at->dtype)) {
    matmul_int(&g, at, bt, yt);
    return MB_STATUS_OK;
  }
  const float *a = mb__op_as_f32(ctx, at, 0), *b = mb__op_as_f32(ctx, bt, 1);
  float *y = mb__op_f32_dest(ctx, yt, 2);
  if ((!a && at->numel) || (!b && bt->numel) || !y)
    return MB_STATUS_OUT_OF_MEMORY;
  int64_t a_mat = g.m * g.k, b_mat = g.k * g.n, y_mat = g.m * g.n;
  if (g.b_batch == 1 && g.a_batch == g.batch) {
    /* B is one matrix and A a contiguous stack: fold the batch into M. */
    mb__sgemm(ctx->pool, false, false, g.batch * g.m, g.n, g.k, 1.0f, a, g.k, b,
              g.n, 0.0f, y, g.n);
  } else {
    for (int64_t i = 0; i < g.batch; i++) {
      int64_t ao, bo;
      batch_offsets(&g, i, &ao, &bo);
      mb__sgemm(ctx->pool, false, false, g.m, g.n, g.k, 1.0f, a + ao * a_mat,
                g.k, b + bo * b_mat, g.n, 0.0f, y + i * y_mat, g.n);
    }
  }
  mb__op_store_f32(yt, y);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Gemm                                                                      */
/* ------------------------------------------------------------------------ */

typedef struct gemm_geom {
  bool trans_a, trans_b;
  float alpha, beta;
  int64_t m, n, k;
} gemm_geom;

static mb_status gemm_geom_init(mb_op_ctx *ctx, gemm_geom *g) {
  const mb_tensor *a = ctx->inputs[0], *b = ctx->inputs[1];
  const mb_tensor *c = mb__op_input(ctx, 2);
  char as[96], bs[96], cs[96];
  g->trans_a = mb__node_attr_int(ctx->node, "transA", 0) != 0;
  g->trans_b = mb__node_attr_int(ctx->node, "transB", 0) != 0;
  g->alpha = mb__node_attr_float(ctx->node, "alpha", 1.0f);
  g->beta = mb__node_attr_float(ctx->node, "beta", 1.0f);
  if (a->rank != 2 || b->rank != 2)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "A %s and B %s must be matrices",
                        mb__shape_str(a->rank, a->dims, as, sizeof as),
                        mb__shape_str(b->rank, b->dims, bs, sizeof bs));
  g->m = a->dims[g->trans_a ? 1 : 0];
  g->k = a->dims[g->trans_a ? 0 : 1];
  g->n = b->dims[g->trans_b ? 0 : 1];
  if (b->dims[g->trans_b ? 1 : 0] != g->k)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "inner dimensions of A %s and B %s differ "
                        "(transA=%d, transB=%d)",
                        mb__shape_str(a->rank, a->dims, as, sizeof as),
                        mb__shape_str(b->rank, b->dims, bs, sizeof bs),
                        g->trans_a, g->trans_b);
  if (!mb__dtype_is_float(a->dtype))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "type %s is not supported (float types only)",
                        mb_dtype_name(a->dtype));
  if (b->dtype != a->dtype || (c && c->dtype != a->dtype))
    return mb__op_error(ctx, MB_STATUS_SHAPE, "inputs differ in type");
  if (c) {
    /* C broadcasts unidirectionally to [M, N]. */
    bool ok = c->rank <= 2;
    int64_t want[2] = {g->m, g->n};
    for (int d = 0; ok && d < c->rank; d++) {
      int64_t dim = c->dims[c->rank - 1 - d], w = want[1 - d];
      ok = dim == w || dim == 1;
    }
    if (!ok)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "C %s does not broadcast to [%lld,%lld]",
                          mb__shape_str(c->rank, c->dims, cs, sizeof cs),
                          (long long)g->m, (long long)g->n);
  }
  return MB_STATUS_OK;
}

static mb_status gemm_infer(mb_op_ctx *ctx) {
  gemm_geom g;
  mb_status status = check_io(ctx, 2, 3);
  if (status || (status = gemm_geom_init(ctx, &g)))
    return status;
  int64_t dims[2] = {g.m, g.n};
  return mb__tensor_set_shape(ctx->outputs[0], ctx->inputs[0]->dtype, 2, dims,
                              ctx->err);
}

static mb_status gemm_run(mb_op_ctx *ctx) {
  gemm_geom g;
  const mb_tensor *at = ctx->inputs[0], *bt = ctx->inputs[1];
  const mb_tensor *ct = mb__op_input(ctx, 2);
  mb_tensor *yt = ctx->outputs[0];
  mb_status status = gemm_geom_init(ctx, &g);
  if (status || yt->numel == 0)
    return status;
  const float *a = mb__op_as_f32(ctx, at, 0), *b = mb__op_as_f32(ctx, bt, 1);
  const float *c = ct ? mb__op_as_f32(ctx, ct, 3) : NULL;
  float *y = mb__op_f32_dest(ctx, yt, 2);
  if ((!a && at->numel) || (!b && bt->numel) || (ct && !c && ct->numel) || !y)
    return MB_STATUS_OUT_OF_MEMORY;
  bool use_c = c && ct->numel > 0 && g.beta != 0.0f;
  if (use_c) {
    /* Y = beta * broadcast(C), then the product accumulates onto it. */
    int64_t rs = ct->rank == 2 && ct->dims[0] != 1 ? ct->dims[1] : 0;
    int64_t cs = ct->rank >= 1 && ct->dims[ct->rank - 1] != 1 ? 1 : 0;
    for (int64_t i = 0; i < g.m; i++)
      for (int64_t j = 0; j < g.n; j++)
        y[i * g.n + j] = g.beta * c[i * rs + j * cs];
  }
  mb__sgemm(ctx->pool, g.trans_a, g.trans_b, g.m, g.n, g.k, g.alpha, a,
            at->dims[1], b, bt->dims[1], use_c ? 1.0f : 0.0f, y, g.n);
  mb__op_store_f32(yt, y);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* MatMulInteger and QLinearMatMul                                           */
/* ------------------------------------------------------------------------ */

typedef struct int_matmul_layout {
  int a, a_zero, b, b_zero;
} int_matmul_layout;

static const int_matmul_layout matmul_integer_layout = {0, 2, 1, 3};
static const int_matmul_layout qlinear_matmul_layout = {0, 2, 3, 5};

static mb_status int_matmul_check(mb_op_ctx *ctx, const int_matmul_layout *l,
                                  matmul_geom *g) {
  const mb_tensor *a = ctx->inputs[l->a], *b = ctx->inputs[l->b];
  mb_status status = matmul_geom_init(ctx, a, b, g);
  if (status)
    return status;
  if (!mb__dtype_is_8bit(a->dtype) || !mb__dtype_is_8bit(b->dtype))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "types A %s / B %s are not supported (int8/uint8)",
                        mb_dtype_name(a->dtype), mb_dtype_name(b->dtype));
  if ((status = mb__op_check_zero_point(ctx, mb__op_input(ctx, l->a_zero),
                                        a->dtype, g->m, "a_zero_point")) ||
      (status = mb__op_check_zero_point(ctx, mb__op_input(ctx, l->b_zero),
                                        b->dtype, g->n, "b_zero_point")))
    return status;
  return MB_STATUS_OK;
}

/* acc = (A - a_zero) x (B - b_zero) in exact int32, batch-broadcast. */
static mb_status int_matmul_compute(mb_op_ctx *ctx, const int_matmul_layout *l,
                                    const matmul_geom *g, int32_t *acc) {
  const mb_tensor *a = ctx->inputs[l->a], *b = ctx->inputs[l->b];
  const mb_tensor *az = mb__op_input(ctx, l->a_zero);
  const mb_tensor *bz = mb__op_input(ctx, l->b_zero);
  int32_t *ai = mb__op_scratch(ctx, 0, sizeof(int32_t) * (size_t)a->numel + 1);
  int32_t *bi = mb__op_scratch(ctx, 1, sizeof(int32_t) * (size_t)b->numel + 1);
  if (!ai || !bi)
    return MB_STATUS_OUT_OF_MEMORY;
  /* Row by row of A (a zero point per row of each matrix) and of B (one
   * per column). */
  for (int64_t r = 0; g->k > 0 && r < a->numel / g->k; r++) {
    int32_t zero = az ? mb__get_8bit(az, az->numel == 1 ? 0 : r % g->m) : 0;
    for (int64_t p = r * g->k; p < (r + 1) * g->k; p++)
      ai[p] = mb__get_8bit(a, p) - zero;
  }
  for (int64_t r = 0; g->n > 0 && r < b->numel / g->n; r++)
    for (int64_t j = 0; j < g->n; j++)
      bi[r * g->n + j] = mb__get_8bit(b, r * g->n + j) -
                         (bz ? mb__get_8bit(bz, bz->numel == 1 ? 0 : j) : 0);
  /* B shared by every batch and A's batches in a row (a Linear layer over
   * tokens): one product of batch * m rows, converted once. */
  bool stacked = g->b_batch == 1 && g->a_batch == g->batch;
  int64_t rows = stacked ? g->batch * g->m : g->m;
  /* The exact product's workspace (scratch slot 4: QLinearMatMul holds
   * 0 to 3); none for sizes past size_t, which take the plain loops. */
  size_t work_bytes = mb__igemm_work_size(rows, g->n, g->k);
  double *work = work_bytes ? mb__op_scratch(ctx, 4, work_bytes) : NULL;
  if (work_bytes && !work)
    return MB_STATUS_OUT_OF_MEMORY;
  for (int64_t bt = 0; bt < (stacked ? 1 : g->batch); bt++) {
    int64_t ao, bo;
    batch_offsets(g, bt, &ao, &bo);
    mb__igemm(ctx->pool, rows, g->n, g->k, ai + ao * g->m * g->k,
              bi + bo * g->k * g->n, acc + bt * g->m * g->n, work);
  }
  return MB_STATUS_OK;
}

static mb_status matmul_integer_infer(mb_op_ctx *ctx) {
  matmul_geom g;
  mb_status status = check_io(ctx, 2, 4);
  if (status || (status = int_matmul_check(ctx, &matmul_integer_layout, &g)))
    return status;
  return mb__tensor_set_shape(ctx->outputs[0], MB_DTYPE_INT32, g.out_rank,
                              g.out_dims, ctx->err);
}

static mb_status matmul_integer_run(mb_op_ctx *ctx) {
  matmul_geom g;
  mb_status status = int_matmul_check(ctx, &matmul_integer_layout, &g);
  if (status || ctx->outputs[0]->numel == 0)
    return status;
  return int_matmul_compute(ctx, &matmul_integer_layout, &g,
                            ctx->outputs[0]->data);
}

/* Scales: a_scale per tensor or per row of A (m values), b_scale per
 * tensor or per column of B (n values, what ONNX Runtime's quantiser emits
 * for per-channel weights), y_scale per tensor. Each is float32, or from
 * opset 21 float16/bfloat16 (all three of one type). */
static mb_status qlinear_matmul_check(mb_op_ctx *ctx, int version,
                                      matmul_geom *g) {
  mb_status status = check_io(ctx, 8, 8);
  if (status || (status = int_matmul_check(ctx, &qlinear_matmul_layout, g)))
    return status;
  static const struct {
    int input;
    const char *name, *per;
  } scales[] = {{1, "a_scale", "row of A"},
                {4, "b_scale", "column of B"},
                {6, "y_scale", NULL}};
  mb_dtype dt = ctx->inputs[1]->dtype;
  if (dt != MB_DTYPE_FLOAT &&
      !(version >= 21 && (dt == MB_DTYPE_FLOAT16 || dt == MB_DTYPE_BFLOAT16)))
    return mb__op_error(
        ctx, MB_STATUS_UNSUPPORTED, "a_scale has type %s; opset %d takes %s",
        mb_dtype_name(dt), version,
        version >= 21 ? "float32, float16 or bfloat16" : "float32");
  for (size_t i = 0; i < MB_ARRAY_COUNT(scales); i++) {
    const mb_tensor *s = ctx->inputs[scales[i].input];
    int64_t count = i == 0 ? g->m : i == 1 ? g->n : 1;
    if (s->dtype != dt)
      return mb__op_error(
          ctx, MB_STATUS_SHAPE, "%s has type %s but a_scale has type %s",
          scales[i].name, mb_dtype_name(s->dtype), mb_dtype_name(dt));
    if (s->numel != 1 && s->numel != count && scales[i].per)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "%s has %lld values; expected 1 or %lld (one per "
                          "%s)",
                          scales[i].name, (long long)s->numel, (long long)count,
                          scales[i].per);
    if (s->numel != 1 && !scales[i].per)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "%s has %lld values; expected 1", scales[i].name,
                          (long long)s->numel);
  }
  const mb_tensor *yz = ctx->inputs[7];
  if (!mb__dtype_is_8bit(yz->dtype) || yz->numel != 1)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "y_zero_point must be an int8/uint8 scalar");
  return MB_STATUS_OK;
}

static mb_status qlinear_matmul_infer(mb_op_ctx *ctx, int version) {
  matmul_geom g;
  mb_status status = qlinear_matmul_check(ctx, version, &g);
  if (status)
    return status;
  return mb__tensor_set_shape(ctx->outputs[0], ctx->inputs[7]->dtype,
                              g.out_rank, g.out_dims, ctx->err);
}

static mb_status qlinear_matmul_run(mb_op_ctx *ctx, int version) {
  matmul_geom g;
  mb_tensor *y = ctx->outputs[0];
  mb_status status = qlinear_matmul_check(ctx, version, &g);
  if (status || y->numel == 0)
    return status;
  const mb_tensor *as = ctx->inputs[1], *bs = ctx->inputs[4];
  size_t n_scales = (size_t)(as->numel + bs->numel);
  int32_t *acc = mb__op_scratch(ctx, 2, sizeof(int32_t) * (size_t)y->numel);
  float *sv = mb__op_scratch(ctx, 3, sizeof(float) * n_scales);
  if (!acc || !sv)
    return MB_STATUS_OUT_OF_MEMORY;
  if ((status = int_matmul_compute(ctx, &qlinear_matmul_layout, &g, acc)))
    return status;
  float *a_scale = sv, *b_scale = sv + as->numel;
  for (int64_t i = 0; i < as->numel; i++)
    a_scale[i] = (float)mb__tensor_get_f64(as, i);
  for (int64_t i = 0; i < bs->numel; i++)
    b_scale[i] = (float)mb__tensor_get_f64(bs, i);
  float y_scale = (float)mb__tensor_get_f64(ctx->inputs[6], 0);
  int32_t zero = mb__get_8bit(ctx->inputs[7], 0);
  float lo = y->dtype == MB_DTYPE_UINT8 ? 0.0f : -128.0f;
  float hi = y->dtype == MB_DTYPE_UINT8 ? 255.0f : 127.0f;
  for (int64_t i = 0; i < y->numel; i++) {
    int64_t col = i % g.n, row = (i / g.n) % g.m;
    /* a_scale * b_scale / y_scale in float32, as ONNX Runtime computes the
     * multiplier */
    float scale = a_scale[as->numel == 1 ? 0 : row] *
                  b_scale[bs->numel == 1 ? 0 : col] / y_scale;
    /* round half to even, as the ONNX reference does; fmaxf/fminf also
     * saturate NaN (from a zero or non-finite scale) */
    float r = nearbyintf((float)acc[i] * scale) + (float)zero;
    int32_t q = (int32_t)fmaxf(lo, fminf(hi, r));
    if (y->dtype == MB_DTYPE_UINT8)
      ((uint8_t *)y->data)[i] = (uint8_t)q;
    else
      ((int8_t *)y->data)[i] = (int8_t)q;
  }
  return MB_STATUS_OK;
}

static mb_status qlinear_matmul_infer_v10(mb_op_ctx *ctx) {
  return qlinear_matmul_infer(ctx, 10);
}
static mb_status qlinear_matmul_run_v10(mb_op_ctx *ctx) {
  return qlinear_matmul_run(ctx, 10);
}
static mb_status qlinear_matmul_infer_v21(mb_op_ctx *ctx) {
  return qlinear_matmul_infer(ctx, 21);
}
static mb_status qlinear_matmul_run_v21(mb_op_ctx *ctx) {
  return qlinear_matmul_run(ctx, 21);
}

/* ------------------------------------------------------------------------ */
/* Einsum                                                                    */
/* ------------------------------------------------------------------------ */

/* Labels: 'a'-'z' -> 0..25, 'A'-'Z' -> 26..51, ellipsis dims -> 52.. */
#define EINSUM_LETTERS 52
#define EINSUM_MAX_LABELS (EINSUM_LETTERS + MB_MAX_RANK)
#define EINSUM_MAX_INPUTS 16

typedef struct einsum_plan {
  int n_inputs;
  int rank[EINSUM_MAX_INPUTS];
  int label[EINSUM_MAX_INPUTS][MB_MAX_RANK]; /* label of each input dim */
  int64_t size[EINSUM_MAX_LABELS];           /* -1 when unused */
  int out_rank;
  int out_label[MB_MAX_RANK];
  int64_t out_dims[MB_MAX_RANK];
  int n_loop; /* labels iterated: output labels first, then summed ones */
  int loop_label[EINSUM_MAX_LABELS];
} einsum_plan;

static int letter_label(char c) {
  if (c >= 'a' && c <= 'z')
    return c - 'a';
  if (c >= 'A' && c <= 'Z')
    return 26 + (c - 'A');
  return -1;
}

/* Parses one term ("ab...c") into letter labels with -2 marking the
 * ellipsis. Returns the count, or -1 when malformed. */
static int parse_term(const char *s, size_t len, int *out, int max) {
  int n = 0;
  bool ellipsis = false;
  for (size_t i = 0; i < len;) {
    if (s[i] == ' ') {
      i++;
      continue;
    }
    if (s[i] == '.') {
      if (ellipsis || i + 3 > len || s[i + 1] != '.' || s[i + 2] != '.' ||
          n >= max)
        return -1;
      ellipsis = true;
      out[n++] = -2;
      i += 3;
      continue;
    }
    int l = letter_label(s[i]);
    if (l < 0 || n >= max)
      return -1;
    out[n++] = l;
    i++;
  }
  return n;
}

static mb_status einsum_plan_init(mb_op_ctx *ctx, einsum_plan *p) {
  const char *eq = mb__node_attr_string(ctx->node, "equation", NULL);
  if (!eq)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "the equation attribute is required");
  memset(p, 0, sizeof *p);
  for (int l = 0; l < EINSUM_MAX_LABELS; l++)
    p->size[l] = -1;
  const char *arrow = strstr(eq, "->");
  size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
  int terms[EINSUM_MAX_INPUTS][MB_MAX_RANK + 1], n_terms[EINSUM_MAX_INPUTS];
  int n = 0, ell_rank = 0;
  for (size_t start = 0;;) {
    size_t end = start;
    while (end < lhs_len && eq[end] != ',')
      end++;
    if (n >= EINSUM_MAX_INPUTS)
      return mb__op_error(ctx, MB_STATUS_UNSUPPORTED, "too many operands");
    n_terms[n] = parse_term(eq + start, end - start, terms[n], MB_MAX_RANK + 1);
    if (n_terms[n] < 0)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "cannot parse equation '%s'", eq);
    n++;
    if (end >= lhs_len)
      break;
    start = end + 1;
  }
  if (n != ctx->n_inputs)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "equation '%s' has %d operands but the node has %d "
                        "inputs",
                        eq, n, ctx->n_inputs);
  p->n_inputs = n;
  /* Map every input dim to a label; ellipsis dims align right. */
  for (int i = 0; i < n; i++) {
    const mb_tensor *t = ctx->inputs[i];
    if (!t)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "operand %d is missing", i);
    bool has_ell = false;
    for (int j = 0; j < n_terms[i]; j++)
      has_ell |= terms[i][j] == -2;
    int letters = n_terms[i] - (has_ell ? 1 : 0);
    int ell = t->rank - letters;
    if (ell < 0 || (!has_ell && ell != 0))
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "operand %d has rank %d, which does not match its "
                          "term in '%s'",
                          i, t->rank, eq);
    ell_rank = MB_MAX(ell_rank, ell);
  }
  for (int i = 0; i < n; i++) {
    const mb_tensor *t = ctx->inputs[i];
    int ell = t->rank - (n_terms[i] - 1), d = 0;
    p->rank[i] = t->rank;
    for (int j = 0; j < n_terms[i]; j++) {
      if (terms[i][j] != -2) {
        p->label[i][d++] = terms[i][j];
        continue;
      }
      for (int e = 0; e < ell; e++)
        p->label[i][d++] = EINSUM_LETTERS + ell_rank - ell + e;
    }
    for (d = 0; d < t->rank; d++) {
      int l = p->label[i][d];
      int64_t dim = t->dims[d];
      if (p->size[l] < 0 || p->size[l] == 1)
        p->size[l] = dim;
      else if (dim != p->size[l] && dim != 1)
        return mb__op_error(ctx, MB_STATUS_SHAPE,
                            "dimension %d of operand %d is %lld, but its "
                            "label has size %lld",
                            d, i, (long long)dim, (long long)p->size[l]);
    }
  }
  /* Output labels: explicit, or (implicit mode) the ellipsis dims then the
   * letters used exactly once, in alphabetical order. */
  if (arrow) {
    int out_terms[MB_MAX_RANK + 1];
    int m =
        parse_term(arrow + 2, strlen(arrow + 2), out_terms, MB_MAX_RANK + 1);
    if (m < 0)
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "cannot parse equation '%s'", eq);
    for (int j = 0; j < m; j++) {
      if (out_terms[j] == -2) {
        for (int e = 0; e < ell_rank; e++)
          p->out_label[p->out_rank++] = EINSUM_LETTERS + e;
        continue;
      }
      if (p->out_rank >= MB_MAX_RANK || p->size[out_terms[j]] < 0)
        return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                            "output label '%c' of '%s' is not an input label",
                            (int)(out_terms[j] < 26 ? 'a' + out_terms[j]
                                                    : 'A' + out_terms[j] - 26),
                            eq);
      p->out_label[p->out_rank++] = out_terms[j];
    }
  } else {
    int count[EINSUM_LETTERS] = {0};
    for (int i = 0; i < n; i++)
      for (int d = 0; d < p->rank[i]; d++)
        if (p->label[i][d] < EINSUM_LETTERS)
          count[p->label[i][d]]++;
    for (int e = 0; e < ell_rank; e++)
      p->out_label[p->out_rank++] = EINSUM_LETTERS + e;
    /* ASCII order: uppercase labels (26..51) sort before lowercase. */
    for (int pass = 0; pass < 2; pass++)
      for (int l = pass ? 0 : 26; l < (pass ? 26 : EINSUM_LETTERS); l++)
        if (count[l] == 1 && p->out_rank < MB_MAX_RANK)
          p->out_label[p->out_rank++] = l;
  }
  bool used[EINSUM_MAX_LABELS] = {false};
  for (int j = 0; j < p->out_rank; j++) {
    p->out_dims[j] = p->size[p->out_label[j]];
    p->loop_label[p->n_loop++] = p->out_label[j];
    used[p->out_label[j]] = true;
  }
  for (int l = 0; l < EINSUM_MAX_LABELS; l++)
    if (p->size[l] >= 0 && !used[l])
      p->loop_label[p->n_loop++] = l;
  return MB_STATUS_OK;
}

static mb_status einsum_infer(mb_op_ctx *ctx) {
  einsum_plan p;
  mb_status status = check_io(ctx, 1, EINSUM_MAX_INPUTS);
  if (status)
    return status;
  for (int i = 0; i < ctx->n_inputs; i++)
    if (ctx->inputs[i] && (ctx->inputs[i]->dtype != ctx->inputs[0]->dtype ||
                           (!mb__dtype_is_float(ctx->inputs[i]->dtype) &&
                            !mb__dtype_is_int(ctx->inputs[i]->dtype))))
      return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                          "operand types must be one numeric type");
  if ((status = einsum_plan_init(ctx, &p)))
    return status;
  return mb__tensor_set_shape(ctx->outputs[0], ctx->inputs[0]->dtype,
                              p.out_rank, p.out_dims, ctx->err);
}

static mb_status einsum_run(mb_op_ctx *ctx) {
  einsum_plan p;
  mb_tensor *yt = ctx->outputs[0];
  mb_status status = einsum_plan_init(ctx, &p);
  if (status || yt->numel == 0)
    return status;
  /* Operands in one buffer (slot 0), the sum in slot 1, both 8-byte
   * elements: doubles for float types; for integer types, integers with a
   * sum that wraps in uint64 as C's would (through doubles, int64 values
   * beyond 2^53 lost their low bits). */
  bool integer = mb__dtype_is_int(ctx->inputs[0]->dtype);
  size_t total = 0;
  for (int i = 0; i < p.n_inputs; i++)
    total += (size_t)ctx->inputs[i]->numel;
  void *vals = mb__op_scratch(ctx, 0, 8 * total + 1);
  void *acc = mb__op_scratch(ctx, 1, 8 * (size_t)yt->numel);
  if (!vals || !acc)
    return MB_STATUS_OUT_OF_MEMORY;
  const double *base[EINSUM_MAX_INPUTS];
  const uint64_t *ibase[EINSUM_MAX_INPUTS];
  /* stride[i][l]: step of operand i's offset when label l advances. */
  int64_t stride[EINSUM_MAX_INPUTS][EINSUM_MAX_LABELS];
  memset(stride, 0, sizeof stride);
  size_t at = 0;
  for (int i = 0; i < p.n_inputs; i++) {
    const mb_tensor *t = ctx->inputs[i];
    double *v = (double *)vals + at;
    uint64_t *iv = (uint64_t *)vals + at;
    for (int64_t e = 0; e < t->numel; e++)
      if (integer)
        iv[e] = (uint64_t)mb__tensor_get_i64(t, e);
      else
        v[e] = mb__tensor_get_f64(t, e);
    base[i] = v;
    ibase[i] = iv;
    at += (size_t)t->numel;
    int64_t s = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
      if (t->dims[d] != 1) /* size-1 dims broadcast */
        stride[i][p.label[i][d]] += s;
      s *= t->dims[d];
    }
  }
  memset(acc, 0, 8 * (size_t)yt->numel); /* 0.0 and 0 alike */
  int64_t idx[EINSUM_MAX_LABELS] = {0}, off[EINSUM_MAX_INPUTS] = {0};
  int64_t out_off = 0, out_stride[EINSUM_MAX_LABELS] = {0}, s = 1;
  for (int j = p.out_rank - 1; j >= 0; j--) {
    out_stride[j] = s;
    s *= p.out_dims[j];
  }
  for (int j = 0; j < p.n_loop; j++)
    if (p.size[p.loop_label[j]] == 0)
      goto store;
  for (;;) {
    if (integer) {
      uint64_t prod = 1;
      for (int i = 0; i < p.n_inputs; i++)
        prod *= ibase[i][off[i]];
      ((uint64_t *)acc)[out_off] += prod;
    } else {
      double prod = 1.0;
      for (int i = 0; i < p.n_inputs; i++)
        prod *= base[i][off[i]];
      ((double *)acc)[out_off] += prod;
    }
    /* Advance the odometer over loop labels, last fastest. */
    int j = p.n_loop - 1;
    for (; j >= 0; j--) {
      int l = p.loop_label[j];
      int64_t step = ++idx[j] < p.size[l] ? 1 : 1 - p.size[l];
      if (step != 1)
        idx[j] = 0;
      for (int i = 0; i < p.n_inputs; i++)
        off[i] += step * stride[i][l];
      if (j < p.out_rank)
        out_off += step * out_stride[j];
      if (step == 1)
        break;
    }
    if (j < 0)
      break;
  }
store:
  for (int64_t e = 0; e < yt->numel; e++)
    if (integer)
      mb__tensor_set_i64(yt, e, (int64_t)((const uint64_t *)acc)[e]);
    else
      mb__tensor_set_f64(yt, e, ((const double *)acc)[e]);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Det                                                                       */
/* ------------------------------------------------------------------------ */

/* [..., M, M] -> [...]: LU decomposition with partial pivoting, in double. */
static mb_status det_infer(mb_op_ctx *ctx) {
  mb_status st = check_io(ctx, 1, 1);
  if (st)
    return st;
  const mb_tensor *x = ctx->inputs[0];
  char buf[96];
  if (!mb__dtype_is_float(x->dtype))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "element type %s is not supported; Det takes floats",
                        mb_dtype_name(x->dtype));
  if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "input %s is not a (batch of) square matrices",
                        mb__shape_str(x->rank, x->dims, buf, sizeof buf));
  return mb__tensor_set_shape(ctx->outputs[0], x->dtype, x->rank - 2, x->dims,
                              ctx->err);
}

static mb_status det_run(mb_op_ctx *ctx) {
  const mb_tensor *x = ctx->inputs[0];
  mb_tensor *y = ctx->outputs[0];
  int64_t m = x->dims[x->rank - 1];
  double *a = mb__op_scratch(ctx, 0, sizeof(double) * (size_t)MB_MAX(m * m, 1));
  if (!a)
    return MB_STATUS_OUT_OF_MEMORY;
  for (int64_t e = 0; e < y->numel; e++) {
    for (int64_t i = 0; i < m * m; i++)
      a[i] = mb__tensor_get_f64(x, e * m * m + i);
    double det = 1.0;
    for (int64_t col = 0; col < m && det != 0.0; col++) {
      int64_t pivot = col;
      for (int64_t r = col + 1; r < m; r++)
        if (fabs(a[r * m + col]) > fabs(a[pivot * m + col]))
          pivot = r;
      if (a[pivot * m + col] == 0.0) {
        det = 0.0;
        break;
      }
      if (pivot != col) {
        for (int64_t c = 0; c < m; c++) {
          double t = a[col * m + c];
          a[col * m + c] = a[pivot * m + c];
          a[pivot * m + c] = t;
        }
        det = -det;
      }
      double d = a[col * m + col];
      det *= d;
      for (int64_t r = col + 1; r < m; r++) {
        double f = a[r * m + col] / d;
        for (int64_t c = col; c < m; c++)
          a[r * m + c] -= f * a[col * m + c];
      }
    }
    mb__tensor_set_f64(y, e, det);
  }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */

const mb_op_def mb__ops_gemm[] = {
    {"", "MatMul", 1, matmul_infer, matmul_run, 0},
    {"", "Gemm", 1, gemm_infer, gemm_run, 0},
    {"", "MatMulInteger", 10, matmul_integer_infer, matmul_integer_run, 0},
    {"", "QLinearMatMul", 10, qlinear_matmul_infer_v10, qlinear_matmul_run_v10,
     0},
    {"", "QLinearMatMul", 21, qlinear_matmul_infer_v21, qlinear_matmul_run_v21,
     0},
    {"", "Einsum", 12, einsum_infer, einsum_run, 0},
    {"", "Det", 11, det_infer, det_run, 0},
};
MB_OP_TABLE_END(gemm);
