/* Recommendations from a benchmark run: which conversion to deploy, and why.
 *
 * Only results that are ok and accurate take part (mb__report_is_accurate in
 * report_util.c has the rule: fp32 results must pass the worker's
 * elementwise rtol/atol check, reduced precisions and every conversion of
 * a pre-quantised model need a cosine of at least 0.999 on every output).
 * Among those:
 *   fastest_accurate  lowest median;
 *   fastest_exact     lowest median among fp32 ones (a conversion whose
 *                     precision nothing says counts as fp32);
 *   lowest_memory     lowest peak RSS (ties: lower median);
 *   most_portable     ORT_CPU, the one runtime that runs everywhere.
 * The default is what people run when they do not choose, when it ran ok,
 * accurate or not: ORT_CPU for an ONNX model, EAGER for a PyTorch model
 * (the module as written). The headroom says how much faster the
 * recommendation is than doing nothing special. Ties keep request order. */
#include "core/stats.h"
#include "report/report_util.h"

#include <math.h>
#include <stdlib.h>

/* The runtime that runs everywhere. */
#define PORTABLE_CONVERSION "ORT_CPU"
/* The headroom's bootstrap: as many resamples as the speed-ups', seeded so
 * the summary reads the same each time. */
#define MB_HEADROOM_RESAMPLES 2000
#define MB_HEADROOM_SEED 0x68656164726f6f6dULL /* "headroom" */

/* The conversion people get when they do not choose. */
static const char *default_conversion(const mb_bench_report *report) {
  return mb__report_default_conversion(report);
}

/* Why the default has no result to compare with, by its status. */
static const char *const default_missing[MB_BENCH_STATUS_COUNT] = {
    [MB_BENCH_OK] = "has no median",
    [MB_BENCH_ERROR] = "failed",
    [MB_BENCH_TIMEOUT] = "timed out",
    [MB_BENCH_CRASHED] = "crashed",
    [MB_BENCH_UNAVAILABLE] = "is unavailable here",
    [MB_BENCH_SKIPPED] = "was skipped",
    [MB_BENCH_BUILT] = "was only built",
};

/* The summary is built by appending; text that does not fit is cut with
 * "..." (the struct's buffer is fixed). */
typedef struct summary {
  char *buf;
  size_t size, used;
} summary;

static void say(summary *s, const char *fmt, ...) MB_PRINTF(2, 3);
static void say(summary *s, const char *fmt, ...) {
  if (s->used + 1 >= s->size)
    return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(s->buf + s->used, s->size - s->used, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n >= s->size - s->used) {
    s->used = s->size - 1;
    if (s->size > 4)
      memcpy(s->buf + s->size - 4, "...", 4);
    return;
  }
  s->used += (size_t)n;
}

/* "9.7", "17.6", "0.0123", "1234": three significant digits, never an
 * exponent for times a person would read. */
static const char *ms_text(char *buf, size_t size, double ms) {
  if (ms >= 100)
    snprintf(buf, size, "%.0f", ms);
  else
    snprintf(buf, size, "%.3g", ms);
  return buf;
}

/* The accuracy that made a result qualify, in words. */
static const char *accuracy_text(char *buf, size_t size,
                                 const mb_bench_result *r) {
  mb_precision precision = mb__report_precision(r, NULL);
  if (r->n_outputs <= 0 && mb__report_max_abs_err(r) < 0)
    snprintf(buf, size, "no outputs compared");
  else if (mb__report_criterion(r) == MB_ACCURACY_TOLERANCE)
    snprintf(buf, size, "max abs error %.2g", mb__report_max_abs_err(r));
  else if (precision == MB_PRECISION_FP32) /* a pre-quantised model */
    snprintf(buf, size, "min cosine %.6f on the pre-quantised model",
             mb__report_min_cosine(r));
  else
    snprintf(buf, size, "%s with min cosine %.6f", mb_precision_name(precision),
             mb__report_min_cosine(r));
  return buf;
}

static int find_named(const mb_bench_report *report, const char *name) {
  for (int i = 0; i < report->n_results; i++) {
    const mb_bench_result *r = &report->results[i];
    if (r->conversion && strcmp(r->conversion, name) == 0)
      return i;
  }
  return -1;
}

/* Fills the indices; out->summary is left to write_summary. */
static void choose(const mb_bench_report *report, mb_recommendations *out) {
  int requested_default = find_named(report, default_conversion(report));
  int portable = find_named(report, PORTABLE_CONVERSION);
  if (requested_default >= 0 &&
      mb__report_has_median(&report->results[requested_default]))
    out->default_option = requested_default;

  for (int i = 0; i < report->n_results; i++) {
    const mb_bench_result *r = &report->results[i];
    if (!mb__report_has_median(r) || !mb__report_is_accurate(r))
      continue;
    double median = r->latency_ms.median;
    const mb_bench_result *best = out->fastest_accurate >= 0
                                      ? &report->results[out->fastest_accurate]
                                      : NULL;
    if (!best || median < best->latency_ms.median)
      out->fastest_accurate = i;

    if (mb__report_precision(r, NULL) == MB_PRECISION_FP32) {
      best =
          out->fastest_exact >= 0 ? &report->results[out->fastest_exact] : NULL;
      if (!best || median < best->latency_ms.median)
        out->fastest_exact = i;
    }

    double rss = r->peak_rss_mb;
    if (isfinite(rss) && rss > 0) {
      best =
          out->lowest_memory >= 0 ? &report->results[out->lowest_memory] : NULL;
      if (!best || rss < best->peak_rss_mb ||
          (rss == best->peak_rss_mb && median < best->latency_ms.median))
        out->lowest_memory = i;
    }

    if (i == portable)
      out->most_portable = i;
  }
}

static void write_no_recommendation(const mb_bench_report *report, summary *s) {
  int no_reference = 0, inaccurate = 0, failed = 0;
  for (int i = 0; i < report->n_results; i++) {
    const mb_bench_result *r = &report->results[i];
    if (!mb__report_has_median(r))
      failed++;
    else if (!r->has_accuracy)
      no_reference++;
    else
      inaccurate++;
  }
  say(s, "No recommendation: no conversion finished with accurate results");
  const char *sep = " (";
  if (no_reference) {
    say(s, "%s%d without a reference to compare with", sep, no_reference);
    sep = ", ";
  }
  if (inaccurate) {
    say(s, "%s%d outside the accuracy tolerance", sep, inaccurate);
    sep = ", ";
  }
  if (failed)
    say(s, "%s%d failed or did not run", sep, failed);
  say(s, ").");
}

static void write_summary(const mb_bench_report *report,
                          const mb_recommend_options *options,
                          const mb_recommendations *rec, summary *s) {
  char a[32], b[32], acc[96];
  if (report->n_results <= 0 || !report->results) {
    say(s, "No recommendation: no conversions were run.");
    return;
  }
  if (report->config.build_only) {
    int built = 0, hits = 0;
    for (int i = 0; i < report->n_results; i++) {
      built += report->results[i].status == MB_BENCH_BUILT;
      hits += report->results[i].status == MB_BENCH_BUILT &&
              report->results[i].cache_hit == 1;
    }
    say(s,
        "Build only: %d of %d conversions built and loaded (%d from the "
        "cache); nothing was measured. Run again without --build-only to "
        "benchmark them%s.",
        built, report->n_results, hits,
        report->config.build_cache ? " from their cached builds" : "");
    return;
  }
  if (rec->fastest_accurate < 0) {
    write_no_recommendation(report, s);
    return;
  }
  const mb_bench_result *best = &report->results[rec->fastest_accurate];
  const char *name = mb__report_name(best);
  double median = best->latency_ms.median;
  accuracy_text(acc, sizeof acc, best);

  if (rec->default_option == rec->fastest_accurate) {
    say(s,
        "Deploy %s (the default): the fastest accurate option at %s ms "
        "median, %s.",
        name, ms_text(a, sizeof a, median), acc);
  } else if (rec->default_option >= 0) {
    const mb_bench_result *def = &report->results[rec->default_option];
    char ci[48] = "";
    if (rec->headroom_ci[0] > 0)
      snprintf(ci, sizeof ci, " [95%% CI %.2f-%.2f]", rec->headroom_ci[0],
               rec->headroom_ci[1]);
    if (rec->headroom >= 1.0)
      say(s,
          "Deploy %s: %.2fx%s faster than the default %s (%s ms vs %s ms "
          "median), %s.",
          name, rec->headroom, ci, default_conversion(report),
          ms_text(a, sizeof a, median),
          ms_text(b, sizeof b, def->latency_ms.median), acc);
    else
      say(s,
          "Deploy %s: the fastest accurate option at %s ms median, %s; "
          "the default %s is faster (%s ms) but not accurate.",
          name, ms_text(a, sizeof a, median), acc, default_conversion(report),
          ms_text(b, sizeof b, def->latency_ms.median));
  } else {
    int d = find_named(report, default_conversion(report));
    mb_bench_status st = d >= 0 ? report->results[d].status : MB_BENCH_OK;
    const char *why = d < 0 ? "was not run"
                      : (unsigned)st < MB_BENCH_STATUS_COUNT
                          ? default_missing[st]
                          : "failed";
    say(s,
        "Deploy %s: the fastest accurate option at %s ms median, %s (the "
        "default %s %s).",
        name, ms_text(a, sizeof a, median), acc, default_conversion(report),
        why);
  }

  /* Where the pick stands against this machine: how much of its
   * precision's peak it reaches, and what bounds it. */
  const mb_roofline *rl = &best->roofline;
  if (rl->bound != MB_ROOFLINE_UNKNOWN)
    say(s, " %s: %s ms, %.*f%% of this machine's %s peak, %s%s.", name,
        ms_text(a, sizeof a, median), rl->peak_share < 0.1 ? 1 : 0,
        100.0 * rl->peak_share, rl->peak_precision,
        mb_roofline_bound_name(rl->bound),
        rl->bound == MB_ROOFLINE_OVERHEAD
            ? " (its time goes neither to arithmetic nor to memory traffic)"
            : "");
  if (rec->fastest_exact >= 0 && rec->fastest_exact != rec->fastest_accurate) {
    const mb_bench_result *r = &report->results[rec->fastest_exact];
    say(s, " Fastest exact (fp32): %s at %s ms.", mb__report_name(r),
        ms_text(a, sizeof a, r->latency_ms.median));
  } else if (rec->fastest_exact < 0) {
    say(s, " No fp32 option was accurate.");
  }
  if (rec->lowest_memory >= 0) {
    const mb_bench_result *r = &report->results[rec->lowest_memory];
    say(s, " Lowest peak memory: %s (%.1f MB).", mb__report_name(r),
        r->peak_rss_mb);
  }
  if (rec->most_portable >= 0)
    say(s, " Most portable: %s.",
        mb__report_name(&report->results[rec->most_portable]));
  if (options && options->predicted_ms > 0)
    say(s, " Predicted %s ms, measured %s ms (%+.1f%%).",
        ms_text(a, sizeof a, options->predicted_ms),
        ms_text(b, sizeof b, median), rec->prediction_error_pct);
  int kinds = mb__report_machine_kinds(report, NULL);
  if (kinds > 1)
    say(s,
        " Caution: ranked across %d kinds of machine (see the note above); "
        "rerun on one kind to compare the conversions themselves.",
        kinds);
}

void mb_bench_recommend(const mb_bench_report *report,
                        const mb_recommend_options *options,
                        mb_recommendations *out) {
  if (!out)
    return;
  memset(out, 0, sizeof *out);
  out->fastest_accurate = out->fastest_exact = out->lowest_memory = -1;
  out->most_portable = out->default_option = -1;
  summary s = {out->summary, sizeof out->summary, 0};
  if (!report) {
    say(&s, "No recommendation: no report.");
    return;
  }
  if (report->results && report->n_results > 0)
    choose(report, out);

  if (out->fastest_accurate >= 0) {
    double best = report->results[out->fastest_accurate].latency_ms.median;
    if (out->default_option >= 0 && best > 0) {
      const mb_bench_result *def = &report->results[out->default_option];
      const mb_bench_result *fast = &report->results[out->fastest_accurate];
      out->headroom = def->latency_ms.median / best;
      /* Its interval, resampling both as the speed-ups do. */
      double lo, hi;
      if (out->default_option != out->fastest_accurate && def->samples_ms &&
          def->n_samples_ms > 0 && fast->samples_ms && fast->n_samples_ms > 0 &&
          mb__bootstrap_median_ratio(
              def->samples_ms, def->n_samples_ms, fast->samples_ms,
              fast->n_samples_ms, MB_HEADROOM_RESAMPLES, 0.95, MB_HEADROOM_SEED,
              &lo, &hi, NULL) == MB_STATUS_OK) {
        out->headroom_ci[0] = lo;
        out->headroom_ci[1] = hi;
      }
    }
    if (options && options->predicted_ms > 0 && isfinite(options->predicted_ms))
      out->prediction_error_pct =
          (best - options->predicted_ms) / options->predicted_ms * 100.0;
  }
  write_summary(report, options, out, &s);
}
