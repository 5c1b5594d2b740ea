/* Comparing two benchmark runs: did a conversion get slower or faster, and
 * is the difference more than noise?
 *
 * Per conversion present in both runs: the change of the median latency,
 * (B - A) / A in percent, with a bootstrap confidence interval (both sample
 * sets resampled with replacement, the change of the resampled medians
 * taken each time, percentile interval; each resample's median is drawn
 * straight from its exact distribution, so a resample costs O(1), not
 * O(n)), and a two-sided Mann-Whitney U test (normal approximation with
 * tie and continuity correction, as scipy.stats.mannwhitneyu(method=
 * "asymptotic")). A change is significant when the interval excludes 0
 * AND p < alpha: the interval says the median moved, the rank test that
 * the distributions differ, and requiring both keeps a few outliers from
 * raising alarms. The PRNG has a fixed seed, so the same inputs always
 * give the same output.
 *
 * Everything here is a pure function of its arguments. */
#ifndef MB_DB_COMPARE_H
#define MB_DB_COMPARE_H

#include "core/stats.h"
#include "db/results_db.h"

/* X(NAME, "text") */
#define MB_COMPARE_VERDICT_LIST(X)                                             \
  X(SLOWER, "slower")                                                          \
  X(FASTER, "faster")                                                          \
  X(SAME, "no significant change")                                             \
  X(TOO_FEW_SAMPLES, "too few samples")                                        \
  X(ADDED, "added")                                                            \
  X(REMOVED, "removed")                                                        \
  X(FAILED, "failed")

typedef enum mb_compare_verdict {
#define MB_X(name, str) MB_COMPARE_##name,
  MB_COMPARE_VERDICT_LIST(MB_X)
#undef MB_X
      MB_COMPARE_VERDICT_COUNT
} mb_compare_verdict;

/* "slower", "no significant change", ...; "invalid" when out of range. */
const char *mb__compare_verdict_name(mb_compare_verdict verdict);

/* Fewer timed samples than this on either side: no statistics, only the
 * change of the medians. */
#define MB_COMPARE_MIN_SAMPLES 3

typedef struct mb_compare_options {
  double alpha;                  /* significance level, default 0.05; the
                                    interval is at 1 - alpha (95%) */
  int resamples;                 /* bootstrap resamples, default 2000 */
  uint64_t seed;                 /* of the bootstrap PRNG */
  double fail_on_regression_pct; /* < 0 (default): never a regression */
} mb_compare_options;

void mb__compare_options_init(mb_compare_options *options);

/* ---- comparing runs ---- */

/* One line of a comparison. */
typedef struct mb_compare_row {
  const char *conversion; /* borrowed from the runs */
  mb_compare_verdict verdict;
  const mb_db_result *a, *b; /* borrowed; NULL when absent from that run */
  int64_t n_a, n_b;          /* samples used */
  double median_a_ms, median_b_ms; /* NAN when unknown */
  double change_pct;               /* 100 * (B - A) / A; NAN when unknown */
  double ci_low_pct, ci_high_pct;  /* NAN without statistics */
  double p_value;                  /* NAN without statistics */
  bool significant;
  bool regression; /* significant slowdown above fail_on_regression_pct */
} mb_compare_row;

/* Compares two sample sets (either may have fewer than
 * MB_COMPARE_MIN_SAMPLES: then only the medians are compared) and fills
 * the figures, verdict, significant and regression of *row (the other
 * fields are left alone). a, b: borrowed. */
mb_status mb__compare_samples(const double *a, int64_t na, const double *b,
                              int64_t nb, const mb_compare_options *options,
                              mb_compare_row *row, mb_error *err);

/* One row per conversion of either run: those of A in A's order (compared,
 * removed or failed), then those only in B (added) in B's order. A
 * conversion that is not ok in either run is "failed". a, b, options:
 * borrowed and must outlive the rows. *rows_out: malloc'd, free() it. */
mb_status mb__compare_runs(const mb_db_run *a, const mb_db_run *b,
                           const mb_compare_options *options,
                           mb_compare_row **rows_out, int *n_rows_out,
                           mb_error *err);

/* Loads a JSON report written by `modelbench bench --json` (schema:
 * docs/json-schema.md) into a run with id 0. Fails with MB_STATUS_IO /
 * MB_STATUS_PARSE naming the file (and line and column for a malformed
 * field). path: borrowed. *run_out: release with mb__db_run_free. */
mb_status mb__run_load_json(const char *path, mb_db_run **run_out,
                            mb_error *err);

#endif /* MB_DB_COMPARE_H */
