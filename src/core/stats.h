/* Statistics over samples (stats.c): percentiles, the median, the
 * Mann-Whitney U test, bootstrap intervals of the median's change and of a
 * ratio of medians, and a distribution-free interval of the median.
 * Pure functions of arrays of doubles: the benchmark's latency figures and
 * the comparison of stored runs both use them. */
#ifndef MB_CORE_STATS_H
#define MB_CORE_STATS_H

#include "core/internal.h"

/* Percentile p (0..100) of `sorted` (ascending, n >= 1) by linear
 * interpolation between the closest ranks: with h = (n - 1) * p / 100, the
 * result is x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)]).
 * This is numpy's default ("linear", Hyndman-Fan type 7): p0 is the minimum,
 * p100 the maximum, p50 the usual median. */
double mb__percentile(const double *sorted, int64_t n, double p);

typedef struct mb_mann_whitney {
  double u;       /* U of the first sample: pairs (a > b) + ties / 2 */
  double z;       /* standardised, continuity-corrected; 0 when no spread */
  double p_value; /* two-sided, in [0, 1] */
} mb_mann_whitney;

/* Two-sided Mann-Whitney U test of a against b (na, nb >= 1, all finite).
 * a, b: borrowed. Fails with MB_STATUS_INVALID_ARGUMENT on empty or
 * non-finite input, MB_STATUS_OUT_OF_MEMORY. */
mb_status mb__mann_whitney(const double *a, int64_t na, const double *b,
                           int64_t nb, mb_mann_whitney *out, mb_error *err);

/* The median of x (n >= 1; mean of the middle two when n is even). x is
 * left untouched. NAN when n <= 0 or on OOM. */
double mb__median(const double *x, int64_t n);

/* A bootstrap percentile interval, at `confidence` (e.g. 0.95), of the
 * change of the median from a to b in percent: 100 * (median(b*) -
 * median(a*)) / median(a*) over `resamples` resamplings drawn from a
 * splitmix64 stream seeded with `seed`. a, b: borrowed; na, nb >= 1;
 * median(a*) must stay positive (latencies). */
mb_status mb__bootstrap_median_change(const double *a, int64_t na,
                                      const double *b, int64_t nb,
                                      int resamples, double confidence,
                                      uint64_t seed, double *low_pct_out,
                                      double *high_pct_out, mb_error *err);

/* The same bootstrap for the ratio median(a*) / median(b*): with a the
 * baseline's latencies and b a conversion's, an interval of its speed-up.
 * median(b*) must stay positive. */
mb_status mb__bootstrap_median_ratio(const double *a, int64_t na,
                                     const double *b, int64_t nb, int resamples,
                                     double confidence, uint64_t seed,
                                     double *low_out, double *high_out,
                                     mb_error *err);

/* The 0-based ranks [lo, hi] of the sorted sample whose values bound a
 * distribution-free interval of the median at `confidence`: the order
 * statistics x_(j) and x_(n-j+1) with the largest j whose coverage
 * 1 - 2 P(Binomial(n, 1/2) <= j - 1) is at least `confidence` (exact up to
 * 1000 samples, the normal approximation above). False when n is too small
 * for any pair to reach it (n < 6 at 95%). */
bool mb__median_ci_ranks(int64_t n, double confidence, int64_t *lo_rank_out,
                         int64_t *hi_rank_out);

/* That interval over x (any order, left untouched) in O(n) by selection.
 * scratch: n doubles the call may overwrite, or NULL to allocate. Both
 * bounds are NAN when n is too small. x, scratch: borrowed. */
mb_status mb__median_ci(const double *x, int64_t n, double confidence,
                        double *scratch, double *low_out, double *high_out,
                        mb_error *err);

#endif /* MB_CORE_STATS_H */
