/* The one place that talks to OpenBLAS: every matrix product of the
 * operator kernels goes through mb__sgemm, mb__dgemm or (the exact int32
 * products of MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv)
 * mb__igemm, so a different BLAS costs one file.
 *
 * The interpreter keeps OpenBLAS at one thread and splits products over
 * the session's thread pool instead. OpenBLAS's own workers busy-wait for
 * about 2^28 cycles (~0.1 s) after every call, so beside the pool they
 * took the cores the pool's kernels needed: MobileNetV2 at 2 threads went
 * from 13.8 to 22.6 ms with both kinds of threads. */
#include "ops/op.h"

#include <cblas.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

void mb__blas_set_threads(int threads) {
  if (threads < 1)
    threads = 1;
  /* Setting the count wakes or parks OpenBLAS's pool; skip it when nothing
   * changes, as the interpreter calls this on every session run. */
  if (openblas_get_num_threads() != threads)
    openblas_set_num_threads(threads);
}

const char *mb__blas_build(void) {
  const char *config = openblas_get_config();
  return config ? config : "";
}

/* One product, in float (cblas_sgemm) or double (cblas_dgemm): the
 * element type is the only difference between mb__sgemm and mb__dgemm, so
 * both share the loops and the splitting below through void pointers. */
typedef struct gemm_args {
  bool f64; /* double, else float */
  bool trans_a, trans_b;
  int64_t m, n, k;
  double alpha, beta;
  const void *a, *b;
  int64_t lda, ldb, ldc;
  void *c;
} gemm_args;

static double gemm_get(const gemm_args *g, const void *p, int64_t i) {
  return g->f64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

static void gemm_set(const gemm_args *g, int64_t i, double v) {
  if (g->f64)
    ((double *)g->c)[i] = v;
  else
    ((float *)g->c)[i] = (float)v;
}

/* Plain loops for sizes that do not fit the 32-bit BLAS interface. The
 * float product is rounded to float before alpha and beta apply, as
 * cblas_sgemm's accumulator would be. */
static void gemm_naive(const gemm_args *g) {
  for (int64_t i = 0; i < g->m; i++) {
    for (int64_t j = 0; j < g->n; j++) {
      double acc = 0.0;
      for (int64_t p = 0; p < g->k; p++)
        acc += gemm_get(g, g->a, g->trans_a ? p * g->lda + i : i * g->lda + p) *
               gemm_get(g, g->b, g->trans_b ? j * g->ldb + p : p * g->ldb + j);
      if (!g->f64)
        acc = (float)acc;
      int64_t at = i * g->ldc + j;
      double prev = g->beta == 0.0 ? 0.0 : g->beta * gemm_get(g, g->c, at);
      gemm_set(g, at, g->alpha * acc + prev);
    }
  }
}

static void gemm_serial(const gemm_args *g) {
  if (g->k <= 0 || g->alpha == 0.0) {
    /* BLAS would still read A and B; the result is beta * C, where beta == 0
     * must clear NaNs from uninitialised output memory. */
    for (int64_t i = 0; i < g->m; i++)
      for (int64_t j = 0; j < g->n; j++) {
        int64_t at = i * g->ldc + j;
        gemm_set(g, at, g->beta == 0.0 ? 0.0 : g->beta * gemm_get(g, g->c, at));
      }
    return;
  }
  const int64_t max_int = INT_MAX;
  if (g->m > max_int || g->n > max_int || g->k > max_int || g->lda > max_int ||
      g->ldb > max_int || g->ldc > max_int) {
    gemm_naive(g);
    return;
  }
  enum CBLAS_TRANSPOSE ta = g->trans_a ? CblasTrans : CblasNoTrans;
  enum CBLAS_TRANSPOSE tb = g->trans_b ? CblasTrans : CblasNoTrans;
  if (g->f64)
    cblas_dgemm(CblasRowMajor, ta, tb, (int)g->m, (int)g->n, (int)g->k,
                g->alpha, g->a, (int)g->lda, g->b, (int)g->ldb, g->beta, g->c,
                (int)g->ldc);
  else
    cblas_sgemm(CblasRowMajor, ta, tb, (int)g->m, (int)g->n, (int)g->k,
                (float)g->alpha, g->a, (int)g->lda, g->b, (int)g->ldb,
                (float)g->beta, g->c, (int)g->ldc);
}

/* Products split over threads in blocks of this many rows or columns of
 * C, a multiple of OpenBLAS's register tiles. */
#define GEMM_SPLIT_BLOCK 16
/* Smaller products (m * n * k) stay on one thread: publishing a job costs
 * a few microseconds, about what 2^18 multiply-adds take. */
#define GEMM_SPLIT_MIN_WORK ((int64_t)1 << 18)

typedef struct gemm_job {
  gemm_args g;
  bool split_rows; /* split M, else N */
} gemm_job;

/* Blocks [b0, b1) of C's rows or columns, each over the whole K. OpenBLAS
 * still rounds some elements differently for a smaller M or N (its edge
 * kernels), so float results vary with the thread count in the last bits,
 * as they did with OpenBLAS's own threads. */
static void gemm_task(void *arg, int64_t b0, int64_t b1) {
  const gemm_job *j = arg;
  gemm_args g = j->g;
  size_t es = g.f64 ? sizeof(double) : sizeof(float);
  int64_t dim = j->split_rows ? g.m : g.n;
  int64_t i0 = b0 * GEMM_SPLIT_BLOCK;
  int64_t len = MB_MIN(dim, b1 * GEMM_SPLIT_BLOCK) - i0;
  if (j->split_rows) {
    g.m = len;
    g.a = (const char *)g.a + es * (size_t)(g.trans_a ? i0 : i0 * g.lda);
    g.c = (char *)g.c + es * (size_t)(i0 * g.ldc);
  } else {
    g.n = len;
    g.b = (const char *)g.b + es * (size_t)(g.trans_b ? i0 * g.ldb : i0);
    g.c = (char *)g.c + es * (size_t)i0;
  }
  gemm_serial(&g);
}

static void gemm_run(mb_threadpool *pool, const gemm_args *g) {
  if (g->m <= 0 || g->n <= 0)
    return;
  int64_t work;
  if (mb__threadpool_threads(pool) <= 1 || g->k <= 0 ||
      !mb__mul_i64(g->m, g->n, &work) || !mb__mul_i64(work, g->k, &work) ||
      work < GEMM_SPLIT_MIN_WORK) {
    gemm_serial(g);
    return;
  }
  /* The longer side of C splits into more even shares. */
  gemm_job job = {*g, g->m > g->n};
  int64_t dim = g->m > g->n ? g->m : g->n;
  mb__parallel_for(pool, (dim + GEMM_SPLIT_BLOCK - 1) / GEMM_SPLIT_BLOCK,
                   gemm_task, &job);
}

void mb__sgemm(mb_threadpool *pool, bool trans_a, bool trans_b, int64_t m,
               int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
               const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  gemm_args g = {.trans_a = trans_a,
                 .trans_b = trans_b,
                 .m = m,
                 .n = n,
                 .k = k,
                 .alpha = alpha,
                 .beta = beta,
                 .a = a,
                 .b = b,
                 .lda = lda,
                 .ldb = ldb,
                 .ldc = ldc,
                 .c = c};
  gemm_run(pool, &g);
}

void mb__dgemm(mb_threadpool *pool, bool trans_a, bool trans_b, int64_t m,
               int64_t n, int64_t k, double alpha, const double *a, int64_t lda,
               const double *b, int64_t ldb, double beta, double *c,
               int64_t ldc) {
  gemm_args g = {.f64 = true,
                 .trans_a = trans_a,
                 .trans_b = trans_b,
                 .m = m,
                 .n = n,
                 .k = k,
                 .alpha = alpha,
                 .beta = beta,
                 .a = a,
                 .b = b,
                 .lda = lda,
                 .ldb = ldb,
                 .ldc = ldc,
                 .c = c};
  gemm_run(pool, &g);
}

/* ---- exact integer products ---- */

size_t mb__igemm_work_size(int64_t m, int64_t n, int64_t k) {
  size_t count = 0, part;
  if (!mb__mul_size((size_t)m, (size_t)k, &part) ||
      !mb__add_size(count, part, &count) ||
      !mb__mul_size((size_t)k, (size_t)n, &part) ||
      !mb__add_size(count, part, &count) ||
      !mb__mul_size((size_t)m, (size_t)n, &part) ||
      !mb__add_size(count, part, &count) ||
      !mb__mul_size(count, sizeof(double), &count))
    return 0;
  return count;
}

void mb__igemm(mb_threadpool *pool, int64_t m, int64_t n, int64_t k,
               const int32_t *a, const int32_t *b, int32_t *c, double *work) {
  if (m <= 0 || n <= 0)
    return;
  if (work && k > 0 && k <= MB_IGEMM_EXACT_K) {
    /* Every partial sum is within k * 255 * 255 <= INT32_MAX: exact in
     * double (a 53-bit mantissa) whatever order BLAS sums in, and the same
     * int32 the plain loops give. */
    double *ad = work, *bd = work + m * k, *cd = bd + k * n;
    for (int64_t i = 0; i < m * k; i++)
      ad[i] = a[i];
    for (int64_t i = 0; i < k * n; i++)
      bd[i] = b[i];
    mb__dgemm(pool, false, false, m, n, k, 1.0, ad, k, bd, n, 0.0, cd, n);
    for (int64_t i = 0; i < m * n; i++)
      c[i] = (int32_t)cd[i];
    return;
  }
  for (int64_t i = 0; i < m; i++) {
    /* unsigned arithmetic: the int32 accumulation wraps around on
     * overflow (as the ONNX spec allows) instead of being undefined */
    uint32_t *cr = (uint32_t *)(c + i * n);
    memset(cr, 0, sizeof(int32_t) * (size_t)n);
    for (int64_t p = 0; p < k; p++) {
      uint32_t av = (uint32_t)a[i * k + p];
      const int32_t *br = b + p * n;
      for (int64_t j = 0; j < n; j++)
        cr[j] += av * (uint32_t)br[j];
    }
  }
}
