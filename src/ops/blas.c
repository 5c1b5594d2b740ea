/* The one place that talks to OpenBLAS: every matrix product of the
 * operator kernels goes through mb__sgemm, so a different BLAS costs one
 * file.
 *
 * The interpreter keeps OpenBLAS at one thread and splits products over
 * the session's thread pool instead. OpenBLAS's own workers busy-wait for
 * about 2^28 cycles (~0.1 s) after every call, so beside the pool they
 * took the cores the pool's kernels needed: MobileNetV2 at 2 threads went
 * from 13.8 to 22.6 ms with both kinds of threads. */
#include "ops/op.h"

#include <cblas.h>
#include <limits.h>

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

/* Plain loops for sizes that do not fit the 32-bit BLAS interface. */
static void sgemm_naive(bool trans_a, bool trans_b, int64_t m, int64_t n,
                        int64_t k, float alpha, const float *a, int64_t lda,
                        const float *b, int64_t ldb, float beta, float *c,
                        int64_t ldc) {
  for (int64_t i = 0; i < m; i++) {
    for (int64_t j = 0; j < n; j++) {
      double acc = 0.0;
      for (int64_t p = 0; p < k; p++) {
        float av = trans_a ? a[p * lda + i] : a[i * lda + p];
        float bv = trans_b ? b[j * ldb + p] : b[p * ldb + j];
        acc += (double)av * bv;
      }
      float prev = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
      c[i * ldc + j] = alpha * (float)acc + prev;
    }
  }
}

static void sgemm_serial(bool trans_a, bool trans_b, int64_t m, int64_t n,
                         int64_t k, float alpha, const float *a, int64_t lda,
                         const float *b, int64_t ldb, float beta, float *c,
                         int64_t ldc) {
  if (k <= 0 || alpha == 0.0f) {
    /* BLAS would still read A and B; the result is beta * C, where beta == 0
     * must clear NaNs from uninitialised output memory. */
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++)
        c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  const int64_t max_int = INT_MAX;
  if (m > max_int || n > max_int || k > max_int || lda > max_int ||
      ldb > max_int || ldc > max_int) {
    sgemm_naive(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
              alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

/* Products split over threads in blocks of this many rows or columns of
 * C, a multiple of OpenBLAS's register tiles. */
#define SGEMM_SPLIT_BLOCK 16
/* Smaller products (m * n * k) stay on one thread: publishing a job costs
 * a few microseconds, about what 2^18 multiply-adds take. */
#define SGEMM_SPLIT_MIN_WORK ((int64_t)1 << 18)

typedef struct sgemm_job {
  bool trans_a, trans_b, split_rows; /* split M, else N */
  int64_t m, n, k;
  float alpha, beta;
  const float *a, *b;
  int64_t lda, ldb, ldc;
  float *c;
} sgemm_job;

/* Blocks [b0, b1) of C's rows or columns, each over the whole K. OpenBLAS
 * still rounds some elements differently for a smaller M or N (its edge
 * kernels), so results vary with the thread count in the last bits, as
 * they did with OpenBLAS's own threads. */
static void sgemm_task(void *arg, int64_t b0, int64_t b1) {
  const sgemm_job *j = arg;
  int64_t dim = j->split_rows ? j->m : j->n;
  int64_t i0 = b0 * SGEMM_SPLIT_BLOCK;
  int64_t len = MB_MIN(dim, b1 * SGEMM_SPLIT_BLOCK) - i0;
  if (j->split_rows)
    sgemm_serial(j->trans_a, j->trans_b, len, j->n, j->k, j->alpha,
                 j->a + (j->trans_a ? i0 : i0 * j->lda), j->lda, j->b, j->ldb,
                 j->beta, j->c + i0 * j->ldc, j->ldc);
  else
    sgemm_serial(j->trans_a, j->trans_b, j->m, len, j->k, j->alpha, j->a,
                 j->lda, j->b + (j->trans_b ? i0 * j->ldb : i0), j->ldb,
                 j->beta, j->c + i0, j->ldc);
}

void mb__sgemm(mb_threadpool *pool, bool trans_a, bool trans_b, int64_t m,
               int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
               const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  if (m <= 0 || n <= 0)
    return;
  int64_t work;
  if (mb__threadpool_threads(pool) <= 1 || k <= 0 ||
      !mb__mul_i64(m, n, &work) || !mb__mul_i64(work, k, &work) ||
      work < SGEMM_SPLIT_MIN_WORK) {
    sgemm_serial(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
                 ldc);
    return;
  }
  /* The longer side of C splits into more even shares. */
  sgemm_job job = {trans_a, trans_b, m > n, m,   n,   k,   alpha,
                   beta,    a,       b,     lda, ldb, ldc, c};
  int64_t dim = m > n ? m : n;
  mb__parallel_for(pool, (dim + SGEMM_SPLIT_BLOCK - 1) / SGEMM_SPLIT_BLOCK,
                   sgemm_task, &job);
}
