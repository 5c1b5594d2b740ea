/* The one place that talks to OpenBLAS: every matrix product of the
 * operator kernels goes through mb__sgemm, so a different BLAS costs one
 * file. */
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

void mb__sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
               float alpha, const float *a, int64_t lda, const float *b,
               int64_t ldb, float beta, float *c, int64_t ldc) {
  if (m <= 0 || n <= 0)
    return;
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
