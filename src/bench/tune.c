/* modelbench tune: the fastest configuration within an accuracy budget
 * (mb_tune in modelbench.h).
 *
 * README: the files of tune (tune_internal.h).
 *   tune.c           the search: uniform candidates with successive
 *                    halving, per-node precision for int8, the winner
 *   tune_estimate.c  an int8 model's accuracy with chosen nodes kept in
 *                    float, estimated on the reference interpreter
 *   tune_log.c       the search log (JSON)
 *
 * Every measurement is a bench run (mb_benchmark_model) of the candidates
 * at one thread count, so workers, the build cache and accuracy against
 * the reference are bench's own. */
#include "bench/tune_internal.h"
#include "core/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ROUND_SECONDS 0.25
#define MAX_ROUNDS 4
/* After a round, a candidate this many times slower than the fastest
 * accurate one is out, whatever halving would keep. */
#define CANNOT_WIN_RATIO 1.5
#define MAX_MIXED_CANDIDATES 3 /* inaccurate int8 candidates tried mixed */
/* Evaluation samples the sensitivity ranking runs on: one estimate per
 * node, each a pass over them on the reference interpreter (Swin-T: 77
 * nodes, ~1.4 s a sample at 2 threads). */
#define RANK_SAMPLES 2
#define MAX_MIXED_MEASURES 3 /* engine measurements per such candidate */
/* The estimate a kept-float set must meet, as a share of the budget in the
 * engine's terms: the estimator's int8 (the reference interpreter's) and
 * the engine's round differently, so estimates are scaled by how the two
 * compare on the all-int8 model (clamped to MIXED_SCALE_MAX either way).
 * Without that comparison, MIXED_TARGET_UNSCALED of the budget. */
#define MIXED_TARGET_SHARE 0.8
#define MIXED_TARGET_UNSCALED 0.5
#define MIXED_SCALE_MAX 4.0
#define MAX_ESTIMATORS 4

typedef struct candidate {
  int conversion; /* registry index */
  int threads;
  int batch; /* batch size */
  bool alive;
  int last_step; /* its latest uniform measurement, or -1 */
  /* The lowest time per sample (median / batch) of its rounds: what other
   * processes take of the CPUs only ever adds latency, so one slow round on
   * a busy machine does not drop a candidate that was fast before. */
  double best_median_ms;
} candidate;

/* Steps and what the result does not show: the report each measured step
 * came from (shared by the steps of one bench run) and whether a step is
 * the latest word on a configuration still in the race. */
typedef struct tune_storage {
  mb_arena *arena;
  int capacity;
  mb_bench_report **reports; /* per step, or NULL */
  int *report_result;        /* per step: index into its report */
  bool *final;               /* per step */
} tune_storage;

typedef struct ranked {
  const char *name;
  double error; /* estimated with it alone in float */
} ranked;

typedef struct tune {
  const mb_tune_config *cfg;
  const char *model_path;
  mb_bench_config base;
  double max_error;
  double t0;       /* mb__now() at the start */
  double deadline; /* mb__now() clock; 0: none */
  double round_seconds;
  mb_tune_result *res;
  tune_storage *st;
  candidate *cands;
  int n_cands;
  mb_tune_estimator *est[MAX_ESTIMATORS];
  ranked *rank[MAX_ESTIMATORS];    /* per estimator, once ranked */
  double all_int8[MAX_ESTIMATORS]; /* its estimate of the all-int8 model;
                                      NAN until estimated */
  double floor[MAX_ESTIMATORS];    /* ... with every group in float */
  int n_est;
} tune;

void mb_tune_config_init(mb_tune_config *config) {
  memset(config, 0, sizeof *config);
  mb_bench_config_init(&config->bench);
  config->bench.build_cache = 1;
}

static bool out_of_budget(const tune *t) {
  return t->deadline > 0 && mb__now() >= t->deadline;
}

/* ---- steps ---- */

static mb_tune_step *add_step(tune *t, const char *phase, int conversion,
                              int threads, int batch, int n_keep,
                              const char *const *keep, mb_error *err) {
  mb_tune_result *res = t->res;
  tune_storage *st = t->st;
  if (res->n_steps == st->capacity) {
    int cap = st->capacity ? st->capacity * 2 : 32;
    mb_tune_step *steps = realloc(res->steps, sizeof *steps * (size_t)cap);
    if (steps)
      res->steps = steps;
    mb_bench_report **reports =
        steps ? realloc(st->reports, sizeof *reports * (size_t)cap) : NULL;
    if (reports)
      st->reports = reports;
    int *index = reports
                     ? realloc(st->report_result, sizeof *index * (size_t)cap)
                     : NULL;
    if (index)
      st->report_result = index;
    bool *final =
        index ? realloc(st->final, sizeof *final * (size_t)cap) : NULL;
    if (!final) {
      mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: steps");
      return NULL;
    }
    st->final = final;
    st->capacity = cap;
  }
  int i = res->n_steps;
  mb_tune_step *s = &res->steps[i];
  memset(s, 0, sizeof *s);
  st->reports[i] = NULL;
  st->report_result[i] = -1;
  st->final[i] = false;
  s->phase = phase;
  s->conversion = mb__conversion_def(conversion)->name;
  s->threads = threads;
  s->batch_size = batch;
  s->int8_flops_share = -1;
  s->status = MB_BENCH_OK;
  s->error = -1;
  s->cosine = -2;
  s->median_ms = -1;
  s->slo_latency_ms = -1;
  s->task_accuracy = -1;
  s->at_seconds = mb__now() - t->t0;
  if (n_keep > 0) {
    const char **kept =
        mb__arena_alloc(st->arena, sizeof *kept * (size_t)n_keep);
    if (!kept) {
      mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: steps");
      return NULL;
    }
    for (int k = 0; k < n_keep; k++)
      if (!(kept[k] = mb__arena_strdup(st->arena, keep[k]))) {
        mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: steps");
        return NULL;
      }
    s->kept_float = kept;
    s->n_kept_float = n_keep;
  }
  res->n_steps++;
  return s;
}

static void step_done(const tune *t, const mb_tune_step *s) {
  if (t->cfg->on_step)
    t->cfg->on_step(t->cfg->user, s);
}

/* A measured step's time per sample: what candidates of different batch
 * sizes are ranked by (the median itself at batch 1); < 0 unknown. */
static double per_sample_ms(const mb_tune_step *s) {
  return s->median_ms >= 0 ? s->median_ms / MB_MAX(s->batch_size, 1) : -1;
}

/* "2 threads", "2 threads, batch 8": a step's setting, for people. */
static const char *setting(const mb_tune_step *s, char *buf, size_t size) {
  int n = snprintf(buf, size, "%d thread%s", s->threads,
                   s->threads == 1 ? "" : "s");
  if (s->batch_size > 1 && n >= 0 && (size_t)n < size)
    snprintf(buf + n, size - (size_t)n, ", batch %d", s->batch_size);
  return buf;
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The latency at the SLO's percentile over a result's timed iterations. */
static double slo_latency(const tune *t, const mb_bench_result *r) {
  if (t->cfg->slo_percentile <= 0 || r->n_samples_ms < 1 || !r->samples_ms)
    return -1;
  double *sorted = malloc(sizeof *sorted * (size_t)r->n_samples_ms);
  if (!sorted)
    return r->latency_ms.max;
  memcpy(sorted, r->samples_ms, sizeof *sorted * (size_t)r->n_samples_ms);
  qsort(sorted, (size_t)r->n_samples_ms, sizeof *sorted, compare_double);
  double v = mb__percentile(sorted, r->n_samples_ms, t->cfg->slo_percentile);
  free(sorted);
  return v;
}

static bool slo_met(const tune *t, const mb_tune_step *s) {
  return t->cfg->slo_percentile <= 0 ||
         (s->slo_latency_ms >= 0 && s->slo_latency_ms <= t->cfg->slo_ms);
}

/* Fills a step from a bench result. */
static void fill_from_result(tune *t, mb_tune_step *s,
                             const mb_bench_result *r) {
  s->status = r->status;
  snprintf(s->error_message, sizeof s->error_message, "%.255s", r->error);
  if (r->status != MB_BENCH_OK)
    return;
  s->median_ms = r->latency_ms.median;
  s->slo_latency_ms = slo_latency(t, r);
  if (r->has_accuracy && r->n_outputs > 0 && r->accuracy) {
    double worst = 0, min_cos = 1;
    for (int o = 0; o < r->n_outputs; o++) {
      double c = r->accuracy[o].cosine;
      double e = isfinite(c) ? 1.0 - c : 2.0;
      worst = MB_MAX(worst, e);
      min_cos = MB_MIN(min_cos, isfinite(c) ? c : -1);
    }
    s->error = worst;
    s->cosine = min_cos;
    s->accurate = worst <= t->max_error && !r->inaccurate;
  }
  if (r->task_rows > 0)
    s->task_accuracy = r->task_accuracy;
}

static bool drop_budget(const tune *t) {
  return t->cfg->max_accuracy_drop > 0;
}

/* Why a measured step is inaccurate, for people: "1 - cosine 0.02 > 0.001"
 * or "task accuracy 71.2%, 1.3% below ORT_CPU's 72.5% (> 0.5%)". */
static void inaccuracy(const tune *t, const mb_tune_step *s, char *buf,
                       size_t size) {
  const mb_tune_result *res = t->res;
  if (!drop_budget(t))
    snprintf(buf, size, "1 - cosine %.3g > %.3g", s->error, t->max_error);
  else if (s->task_accuracy < 0 || res->baseline_task_accuracy < 0)
    snprintf(buf, size, "task accuracy unknown");
  else
    snprintf(
        buf, size, "task accuracy %.2f%%, %.2f%% below %s's %.2f%% (> %g%%)",
        100 * s->task_accuracy,
        100 * (res->baseline_task_accuracy - s->task_accuracy), res->baseline,
        100 * res->baseline_task_accuracy, 100 * t->cfg->max_accuracy_drop);
}

/* With --max-accuracy-drop: the baseline, once a measured fp32 step has a
 * task accuracy (the one closest to the reference), then every measured
 * step judged by its drop from it. Estimates keep their cosine verdicts:
 * they only steer. */
static void judge_task_accuracy(tune *t) {
  mb_tune_result *res = t->res;
  if (!drop_budget(t))
    return;
  if (res->baseline_task_accuracy < 0) {
    const mb_tune_step *best = NULL;
    int conversion;
    mb_error ignored;
    for (int i = 0; i < res->n_steps; i++) {
      const mb_tune_step *s = &res->steps[i];
      if (s->median_ms < 0 || s->status != MB_BENCH_OK ||
          s->task_accuracy < 0 || s->error < 0 || s->n_kept_float > 0 ||
          mb_conversion_find(s->conversion, &conversion, &ignored) ||
          mb__conversion_def(conversion)->precision != MB_PRECISION_FP32)
        continue;
      if (!best || s->error < best->error)
        best = s;
    }
    if (best) {
      res->baseline_task_accuracy = best->task_accuracy;
      snprintf(res->baseline, sizeof res->baseline, "%s", best->conversion);
    }
  }
  /* Without a baseline nothing measured is known to be accurate. */
  for (int i = 0; i < res->n_steps; i++) {
    mb_tune_step *s = &res->steps[i];
    if (s->median_ms >= 0 && s->status == MB_BENCH_OK)
      s->accurate = res->baseline_task_accuracy >= 0 && s->task_accuracy >= 0 &&
                    res->baseline_task_accuracy - s->task_accuracy <=
                        t->cfg->max_accuracy_drop + 1e-12;
  }
}

/* ---- measuring ---- */

/* One bench run of conversions (registry indices) at `threads`, with
 * keep_float, timed for about `seconds` each; one step per result. The
 * steps' indices go to step_out (n entries). */
static mb_status measure(tune *t, const char *phase, int round,
                         const int *conversions, int n, int threads, int batch,
                         int n_keep, const char *const *keep, double seconds,
                         int *step_out, mb_error *err) {
  mb_bench_config c = t->base;
  mb_bench_report *report = NULL;
  c.conversions = conversions;
  c.n_conversions = n;
  c.baseline = 0;
  c.threads = threads;
  c.batch_size = batch;
  c.n_keep_float = n_keep;
  c.keep_float = keep;
  c.warmup_iterations = 2;
  c.warmup_seconds = MB_MIN(seconds / 4, 0.2);
  c.min_iterations = 5;
  c.min_seconds = seconds;
  c.max_seconds = seconds * 4 + 1;
  c.build_only = 0;
  c.fail_fast = 0;
  c.conversion_timeouts = NULL;
  if (t->deadline > 0) {
    /* No single candidate runs far past the budget. */
    double left = t->deadline - mb__now();
    c.timeout_seconds = MB_MIN(c.timeout_seconds, MB_MAX(left, 0) + 30);
  }
  mb_status status = mb_benchmark_model(t->model_path, &c, &report, err);
  if (status)
    return status;
  for (int i = 0; i < n; i++) {
    mb_tune_step *s =
        add_step(t, phase, conversions[i], threads, batch, n_keep, keep, err);
    if (!s) {
      /* The report is shared by this run's steps: drop it from the steps
       * that hold it before freeing it. */
      for (int k = 0; k < t->res->n_steps; k++)
        if (t->st->reports[k] == report)
          t->st->reports[k] = NULL;
      mb_bench_report_free(report);
      return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
    }
    int index = t->res->n_steps - 1;
    s->round = round;
    s->min_seconds = seconds;
    if (i < report->n_results)
      fill_from_result(t, s, &report->results[i]);
    t->st->reports[index] = report;
    t->st->report_result[index] = i;
    step_out[i] = index;
  }
  judge_task_accuracy(t);
  return MB_STATUS_OK;
}

/* ---- candidates ---- */

static bool is_int8(int conversion) {
  return mb__conversion_quantizes(mb__conversion_def(conversion));
}

/* The default candidates: the ONNX conversions on the CPU of the default
 * set and tier 2, and every int8 one, but the reference interpreter's (a
 * correctness tool). */
static int default_conversions(int *out, int max) {
  int n = 0;
  for (int i = 0; i < mb_conversion_count() && n < max; i++) {
    const mb_conversion_def *d = mb__conversion_def(i);
    if (d->format == MB_MODEL_FORMAT_ONNX && d->device == MB_DEVICE_CPU &&
        strcmp(d->runtime, "reference") != 0 &&
        (d->in_default_set || (d->tier > 0 && d->tier <= 2) ||
         mb__conversion_quantizes(d)))
      out[n++] = i;
  }
  return n;
}

static mb_status make_candidates(tune *t, mb_error *err) {
  const mb_tune_config *cfg = t->cfg;
  int max = mb_conversion_count();
  int *list = malloc(sizeof *list * (size_t)(max + 1));
  int n_conv = 0;
  int default_threads = MB_MAX(cfg->bench.threads, 1);
  int n_threads = cfg->n_threads > 0 && cfg->threads ? cfg->n_threads : 1;
  const int *threads =
      cfg->n_threads > 0 && cfg->threads ? cfg->threads : &default_threads;
  int default_batch = MB_MAX(cfg->bench.batch_size, 1);
  int n_batches =
      cfg->n_batch_sizes > 0 && cfg->batch_sizes ? cfg->n_batch_sizes : 1;
  const int *batches = cfg->n_batch_sizes > 0 && cfg->batch_sizes
                           ? cfg->batch_sizes
                           : &default_batch;
  if (!list)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: candidates");
  if (cfg->bench.n_conversions > 0 && cfg->bench.conversions) {
    for (int i = 0; i < cfg->bench.n_conversions; i++) {
      int c = cfg->bench.conversions[i];
      if (c < 0 || c >= max) {
        free(list);
        return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                         "tune: conversion index %d is not in the registry", c);
      }
      list[n_conv++] = c;
    }
  } else {
    n_conv = default_conversions(list, max);
  }
  for (int k = 0; k < n_threads; k++)
    if (threads[k] < 1) {
      free(list);
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "tune: threads %d: expected >= 1", threads[k]);
    }
  for (int b = 0; b < n_batches; b++)
    if (batches[b] < 1 || batches[b] > MB_TUNE_MAX_BATCH) {
      free(list);
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "tune: batch size %d: expected 1 to %d", batches[b],
                       MB_TUNE_MAX_BATCH);
    }
  t->cands =
      calloc((size_t)(n_conv * n_threads * n_batches) + 1, sizeof *t->cands);
  if (!t->cands) {
    free(list);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: candidates");
  }
  for (int b = 0; b < n_batches; b++)
    for (int k = 0; k < n_threads; k++)
      for (int i = 0; i < n_conv; i++)
        t->cands[t->n_cands++] =
            (candidate){list[i], threads[k], batches[b], true, -1, -1};
  free(list);
  if (t->n_cands == 0)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "tune: no conversion to try");
  return MB_STATUS_OK;
}

static mb_tune_step *cand_step(const tune *t, const candidate *c) {
  return c->last_step >= 0 ? &t->res->steps[c->last_step] : NULL;
}

/* Drops what cannot win after a round: failures, SLO misses, inaccurate
 * conversions without per-node precision. */
static void drop_losers(tune *t) {
  for (int i = 0; i < t->n_cands; i++) {
    candidate *c = &t->cands[i];
    mb_tune_step *s = cand_step(t, c);
    if (!c->alive || !s)
      continue;
    if (s->status != MB_BENCH_OK) {
      snprintf(s->dropped, sizeof s->dropped, "%s%s%.200s",
               mb_bench_status_name(s->status), s->error_message[0] ? ": " : "",
               s->error_message);
      c->alive = false;
    } else if (!slo_met(t, s)) {
      snprintf(s->dropped, sizeof s->dropped,
               "misses the SLO: p%g %.3f ms > %.3f ms", t->cfg->slo_percentile,
               s->slo_latency_ms, t->cfg->slo_ms);
      c->alive = false;
    } else if (!s->accurate && !is_int8(c->conversion)) {
      char why[192];
      inaccuracy(t, s, why, sizeof why);
      snprintf(s->dropped, sizeof s->dropped,
               "inaccurate (%s); per-node precision is for int8 conversions",
               why);
      c->alive = false;
    }
  }
}

typedef struct timed {
  candidate *c;
  double median_ms;
} timed;

static int by_median(const void *a, const void *b) {
  const timed *x = a, *y = b;
  return (x->median_ms > y->median_ms) - (x->median_ms < y->median_ms);
}

/* Drops the candidates that cannot win whatever the next rounds measure:
 * more than CANNOT_WIN_RATIO times the best time of the fastest accurate
 * candidate (sorted[] by time, n of them). The noise of a short round is
 * a few percent, and an int8 candidate's per-node precision only adds
 * time, so none of them comes back. Returns how many are left, in
 * order. */
static int drop_hopeless(tune *t, timed *sorted, int n, int round) {
  const timed *best = NULL;
  for (int i = 0; i < n && !best; i++)
    if (cand_step(t, sorted[i].c)->accurate)
      best = &sorted[i];
  if (!best || best->median_ms <= 0)
    return n;
  int left = n;
  while (left > 0 &&
         sorted[left - 1].median_ms > CANNOT_WIN_RATIO * best->median_ms) {
    timed *x = &sorted[--left];
    mb_tune_step *s = cand_step(t, x->c);
    char where[48];
    const mb_tune_step *b = cand_step(t, best->c);
    snprintf(s->dropped, sizeof s->dropped,
             "cannot win after round %d: best %.4g ms%s, over %.1fx %s at "
             "%s (%.4g ms)",
             round, x->median_ms, x->c->batch > 1 ? " per sample" : "",
             CANNOT_WIN_RATIO, b->conversion, setting(b, where, sizeof where),
             best->median_ms);
    x->c->alive = false;
  }
  return left;
}

/* Keeps the faster half of the candidates that can still win alive (and
 * the fastest accurate one, the configuration to beat). */
static void halve(tune *t, int round) {
  timed *alive = malloc(sizeof *alive * (size_t)t->n_cands);
  int n = 0;
  if (!alive)
    return;
  for (int i = 0; i < t->n_cands; i++)
    if (t->cands[i].alive)
      alive[n++] = (timed){&t->cands[i], t->cands[i].best_median_ms};
  qsort(alive, (size_t)n, sizeof *alive, by_median);
  n = drop_hopeless(t, alive, n, round);
  /* Two at least: of two, a short round's noise is not a verdict. */
  int keep = MB_MAX((n + 1) / 2, MB_MIN(n, 2));
  bool accurate_kept = false;
  for (int i = 0; i < keep; i++)
    accurate_kept |= cand_step(t, alive[i].c)->accurate;
  for (int i = keep; i < n; i++) {
    mb_tune_step *s = cand_step(t, alive[i].c);
    if (!accurate_kept && s->accurate) {
      accurate_kept = true;
      continue;
    }
    if (alive[i].c->batch > 1)
      snprintf(s->dropped, sizeof s->dropped,
               "in the slower half of round %d (best %.4g ms per sample)",
               round, alive[i].median_ms);
    else
      snprintf(s->dropped, sizeof s->dropped,
               "in the slower half of round %d (best median %.3f ms)", round,
               alive[i].median_ms);
    alive[i].c->alive = false;
  }
  free(alive);
}

static bool same_setting(const candidate *a, const candidate *b) {
  return a->threads == b->threads && a->batch == b->batch;
}

static int count_alive(const tune *t) {
  int n = 0;
  for (int i = 0; i < t->n_cands; i++)
    n += t->cands[i].alive;
  return n;
}

/* Phase 1: every candidate briefly, then the better half for twice as
 * long, until two are left (after at least one longer round). */
static mb_status uniform_rounds(tune *t, mb_error *err) {
  int *conv = malloc(sizeof *conv * (size_t)t->n_cands + 1);
  int *steps = malloc(sizeof *steps * (size_t)t->n_cands + 1);
  mb_status status = MB_STATUS_OK;
  if (!conv || !steps) {
    free(conv);
    free(steps);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: rounds");
  }
  for (int round = 0; round < MAX_ROUNDS && !status; round++) {
    double seconds = t->round_seconds * (double)(1 << round);
    for (int i = 0; i < t->n_cands && !status; i++) {
      candidate *first = &t->cands[i];
      bool seen = false;
      for (int k = 0; k < i; k++)
        seen |= same_setting(&t->cands[k], first);
      if (seen)
        continue;
      /* One bench run per thread count and batch size: its alive
       * candidates. */
      int n = 0;
      for (int k = i; k < t->n_cands; k++)
        if (t->cands[k].alive && same_setting(&t->cands[k], first))
          conv[n++] = t->cands[k].conversion;
      if (n == 0)
        continue;
      if (out_of_budget(t)) {
        t->res->budget_exhausted = 1;
        goto done;
      }
      if ((status = measure(t, "uniform", round, conv, n, first->threads,
                            first->batch, 0, NULL, seconds, steps, err)))
        goto done;
      for (int k = i, j = 0; k < t->n_cands && j < n; k++)
        if (t->cands[k].alive && same_setting(&t->cands[k], first)) {
          candidate *c = &t->cands[k];
          double m = per_sample_ms(&t->res->steps[steps[j]]);
          c->last_step = steps[j++];
          if (m >= 0 && (c->best_median_ms < 0 || m < c->best_median_ms))
            c->best_median_ms = m;
        }
    }
    drop_losers(t);
    for (int i = 0; i < t->n_cands; i++)
      if (t->cands[i].last_step >= 0 &&
          t->res->steps[t->cands[i].last_step].round == round)
        step_done(t, &t->res->steps[t->cands[i].last_step]);
    int alive = count_alive(t);
    if (alive <= 1 || (alive <= 2 && round >= 1))
      break;
    if (alive > 2)
      halve(t, round);
  }
done:
  for (int i = 0; i < t->n_cands; i++)
    if (t->cands[i].alive && t->cands[i].last_step >= 0)
      t->st->final[t->cands[i].last_step] = true;
  free(conv);
  free(steps);
  return status;
}

/* ---- per-node precision ---- */

static mb_status estimator_for(tune *t, int conversion, int *index_out,
                               mb_tune_estimator **out, mb_error *err) {
  const mb_conversion_def *def = mb__conversion_def(conversion);
  mb_bench_job job = {.config = &t->base};
  mb_int8_weights weights = mb__job_int8_form(&job, def, NULL, 0);
  for (int i = 0; i < t->n_est; i++)
    if (mb__tune_estimator_matches(t->est[i], def, weights)) {
      *out = t->est[i];
      *index_out = i;
      return MB_STATUS_OK;
    }
  if (t->n_est == MAX_ESTIMATORS)
    return mb__error(err, MB_STATUS_INTERNAL, "tune: too many int8 forms");
  mb_status status =
      mb__tune_estimator_open(t->model_path, &t->base, def, out, err);
  if (!status) {
    *index_out = t->n_est;
    t->est[t->n_est++] = *out;
  }
  return status;
}

static int by_error(const void *a, const void *b) {
  const ranked *x = a, *y = b;
  return (x->error > y->error) - (x->error < y->error);
}

/* One estimate as a step: on every evaluation sample, but the
 * sensitivity ranking's on the first RANK_SAMPLES (they only order the
 * nodes; what is kept is decided on all of them). */
static mb_status estimate_step(tune *t, mb_tune_estimator *est,
                               const char *phase, const candidate *c,
                               int n_keep, const char *const *keep,
                               double *error_out, mb_error *err) {
  double error, cosine;
  int samples = mb__tune_estimator_samples(est);
  if (strcmp(phase, "sensitivity") == 0)
    samples = MB_MIN(samples, RANK_SAMPLES);
  mb_status status =
      mb__tune_estimate(est, samples, n_keep, keep, &error, &cosine, err);
  if (status)
    return status;
  mb_tune_step *s = add_step(t, phase, c->conversion, c->threads, c->batch,
                             n_keep, keep, err);
  if (!s)
    return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
  s->samples = samples;
  s->error = error;
  s->cosine = cosine;
  s->accurate = error <= t->max_error;
  s->int8_flops_share = mb__tune_estimator_int8_share(est, n_keep, keep);
  *error_out = error;
  step_done(t, s);
  return MB_STATUS_OK;
}

/* The nodes of estimator e ranked by sensitivity: the int8 model with one
 * node alone in float. Keeping one node in float (rather than quantising
 * one alone) is what the search then does, and it shows a node that ruins
 * the model at once: its estimate drops to the rest's error. Once per int8
 * form: the candidates of one form share it. *rank_out: NULL when the
 * budget ran out first. */
static mb_status rank_nodes(tune *t, int e, const candidate *c,
                            const ranked **rank_out, mb_error *err) {
  mb_tune_estimator *est = t->est[e];
  int n_groups = mb__tune_estimator_groups(est);
  mb_status status = MB_STATUS_OK;
  *rank_out = NULL;
  if (t->rank[e]) {
    *rank_out = t->rank[e];
    return MB_STATUS_OK;
  }
  ranked *rank = calloc((size_t)n_groups + 1, sizeof *rank);
  if (!rank)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: ranking");
  /* Each estimate then reruns only what its node changes. */
  if ((status = mb__tune_estimator_cache(est, RANK_SAMPLES, err))) {
    free(rank);
    return status;
  }
  for (int g = 0; g < n_groups && !status; g++) {
    if (out_of_budget(t)) {
      t->res->budget_exhausted = 1;
      free(rank);
      return MB_STATUS_OK;
    }
    rank[g].name = mb__tune_estimator_group(est, g);
    status = estimate_step(t, est, "sensitivity", c, 1, &rank[g].name,
                           &rank[g].error, err);
  }
  if (status) {
    free(rank);
    return status;
  }
  qsort(rank, (size_t)n_groups, sizeof *rank, by_error);
  *rank_out = t->rank[e] = rank;
  return MB_STATUS_OK;
}

/* The estimate a kept-float set of candidate c must meet: the budget in
 * the estimator's terms. The engine measured the all-int8 model's error
 * (c's uniform step), the estimator estimates it too (once per estimator,
 * a "mixed-estimate" step keeping nothing); their ratio scales
 * MIXED_TARGET_SHARE of the budget. E.g. the budget 1e-3, the engine's
 * all-int8 error 1.0e-3 and the estimator's 1.2e-3: the estimate must meet
 * 0.8 x 1e-3 x 1.2 = 0.96e-3. A fixed half of the budget instead kept
 * ResNet-18's INT8_STATIC+OPENVINO at 35% of its FLOPs in int8 (15 of 21
 * nodes in float) where 4 nodes do. */
static mb_status mixed_target(tune *t, int e, const candidate *c,
                              const char **none, double *target_out,
                              mb_error *err) {
  mb_tune_estimator *est = t->est[e];
  *target_out = t->max_error * MIXED_TARGET_UNSCALED;
  if (isnan(t->all_int8[e])) {
    double error;
    mb_status status =
        estimate_step(t, est, "mixed-estimate", c, 0, none, &error, err);
    if (status)
      return status;
    t->all_int8[e] = error;
  }
  const mb_tune_step *s = cand_step(t, c);
  double engine = s ? s->error : -1, estimate = t->all_int8[e];
  if (drop_budget(t)) {
    /* No cosine budget to translate: the task accuracy is the engine's to
     * judge. Half the all-int8 model's estimated error to start with, more
     * nodes while the engine finds the drop too large. */
    if (estimate > 0)
      *target_out = MB_MIN(estimate * 0.5, t->max_error);
    return MB_STATUS_OK;
  }
  if (engine > 0 && estimate > 0) {
    double scale = MB_MIN(MB_MAX(estimate / engine, 1.0 / MIXED_SCALE_MAX),
                          MIXED_SCALE_MAX);
    *target_out = t->max_error * MIXED_TARGET_SHARE * scale;
  }
  return MB_STATUS_OK;
}

/* A candidate's speed: the lowest median of its rounds (as halving ranks
 * them: other processes only ever add latency, and one slow last round of
 * ResNet-18's INT8_STATIC+OPENVINO, 22.0 ms after 13.1, would otherwise
 * keep it from the per-node search). */
static double cand_ms(const tune *t, const candidate *c) {
  const mb_tune_step *s = cand_step(t, c);
  return c->best_median_ms >= 0 ? c->best_median_ms : s ? per_sample_ms(s) : -1;
}

/* The fastest fp32 candidate of c's runtime at c's setting (ORT_CPU for
 * INT8_STATIC+ORT_CPU), by its best time; NULL when none was measured. */
static const candidate *fp32_twin(const tune *t, const candidate *c) {
  const mb_conversion_def *def = mb__conversion_def(c->conversion);
  const candidate *twin = NULL;
  for (int i = 0; i < t->n_cands; i++) {
    const candidate *o = &t->cands[i];
    const mb_conversion_def *d = mb__conversion_def(o->conversion);
    if (o->best_median_ms > 0 && same_setting(o, c) &&
        d->precision == MB_PRECISION_FP32 &&
        strcmp(d->runtime, def->runtime) == 0 && d->device == def->device &&
        (!twin || o->best_median_ms < twin->best_median_ms))
      twin = o;
  }
  return twin;
}

/* The step that chose k nodes for c: its latest estimate keeping k, else
 * its latest step (a measurement that kept fewer). */
static mb_tune_step *kept_step(tune *t, const candidate *c, int k) {
  const char *name = mb__conversion_def(c->conversion)->name;
  mb_tune_step *latest = NULL;
  for (int i = t->res->n_steps - 1; i >= 0; i--) {
    mb_tune_step *s = &t->res->steps[i];
    if (strcmp(s->conversion, name) != 0 || s->threads != c->threads ||
        s->batch_size != c->batch)
      continue;
    if (!latest)
      latest = s;
    if (strcmp(s->phase, "mixed-estimate") == 0 && s->n_kept_float == k)
      return s;
  }
  return latest;
}

/* What c should cost with the nodes of keep (k of them) in float: its
 * int8 time plus, for the share of its int8 FLOPs back in float, that
 * share of the gap to its runtime's fp32 time. It leaves out what the
 * int8 / float boundaries add (QuantizeLinear, DequantizeLinear,
 * reorders), so it errs low, except where the kept nodes gained less from
 * int8 than the model's average. < 0 when not known (no fp32 twin
 * measured, FLOPs unknown). */
static double predicted_ms(const tune *t, const candidate *c,
                           mb_tune_estimator *est, int k,
                           const char *const *keep, const candidate **twin) {
  *twin = fp32_twin(t, c);
  double all = mb__tune_estimator_int8_share(est, 0, NULL);
  double now = mb__tune_estimator_int8_share(est, k, keep);
  double int8_ms = c->best_median_ms;
  if (!*twin || !(all > 0) || now < 0 || int8_ms <= 0)
    return -1;
  double back = MB_MIN(MB_MAX(1.0 - now / all, 0.0), 1.0);
  double fp32_ms = (*twin)->best_median_ms;
  return int8_ms + back * MB_MAX(fp32_ms - int8_ms, 0.0);
}

/* Phase 2 for one inaccurate int8 candidate: keep the most sensitive nodes
 * in float until the estimate meets the target (mixed_target: the budget in
 * the estimator's terms), one node at least left in int8 (all of them in
 * float is no int8 configuration: the fp32 conversions stand for that),
 * then measure on the engine, keeping more while it is inaccurate there. */
static mb_status mixed_precision(tune *t, candidate *c, double seconds,
                                 const candidate *to_beat, mb_error *err) {
  mb_tune_estimator *est = NULL;
  const ranked *rank = NULL;
  int e = 0;
  mb_status status = estimator_for(t, c->conversion, &e, &est, err);
  if (status)
    return status;
  int n_groups = mb__tune_estimator_groups(est);
  if (n_groups < 2) {
    mb_tune_step *s = cand_step(t, c);
    snprintf(s->dropped, sizeof s->dropped,
             "inaccurate, with %d quantisable node%s: none to keep in float "
             "while some stays int8",
             n_groups, n_groups == 1 ? "" : "s");
    return MB_STATUS_OK;
  }
  const char **keep = calloc((size_t)n_groups + 1, sizeof *keep);
  double error = 0;
  if (!keep)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: ranking");
  for (int g = 0; g < n_groups; g++)
    keep[g] = mb__tune_estimator_group(est, g);
  double target;
  if ((status = mixed_target(t, e, c, keep, &target, err)))
    goto done;
  /* What per-node precision can reach at best: every quantisable node in
   * float, the rest (Add, pooling, Concat...) still quantised. Where even
   * that misses the target the error is spread over what no node group
   * holds, and ranking the nodes (one estimate each) is spared. */
  if (isnan(t->floor[e]) &&
      (status = estimate_step(t, est, "mixed-estimate", c, n_groups, keep,
                              &t->floor[e], err)))
    goto done;
  if (t->floor[e] > target) {
    mb_tune_step *s = kept_step(t, c, n_groups);
    size_t used = s->dropped[0] ? strlen(s->dropped) : 0;
    snprintf(s->dropped + used, sizeof s->dropped - used,
             "%swith all %d quantisable nodes in float the estimate is still "
             "1 - cosine %.3g > %.3g: the error is in what stays quantised "
             "besides them; no per-node search",
             used ? "; " : "", n_groups, t->floor[e], target);
    goto done;
  }
  if ((status = rank_nodes(t, e, c, &rank, err)) || !rank)
    goto done;
  for (int g = 0; g < n_groups; g++)
    keep[g] = rank[g].name;
  /* The fewest nodes whose estimate meets the target: doubling k, then
   * bisecting between the last miss and the first hit (the error falls,
   * roughly, as more nodes stay in float). */
  int lo = 0, hi = -1; /* lo misses (0: all int8 did), hi meets */
  for (int k = 1; hi < 0 && !status; k = MB_MIN(k * 2, n_groups - 1)) {
    if (out_of_budget(t)) {
      t->res->budget_exhausted = 1;
      goto done;
    }
    status = estimate_step(t, est, "mixed-estimate", c, k, keep, &error, err);
    if (status)
      break;
    if (error <= target)
      hi = k;
    else if (k == n_groups - 1)
      break;
    else
      lo = k;
  }
  while (!status && hi > lo + 1) {
    int k = lo + (hi - lo) / 2;
    if (out_of_budget(t)) {
      t->res->budget_exhausted = 1;
      goto done;
    }
    status = estimate_step(t, est, "mixed-estimate", c, k, keep, &error, err);
    if (!status && error <= target)
      hi = k;
    else
      lo = k;
  }
  if (status)
    goto done;
  if (hi < 0) {
    mb_tune_step *last = &t->res->steps[t->res->n_steps - 1];
    snprintf(last->dropped, sizeof last->dropped,
             "with all but one quantisable node in float the estimate is "
             "still 1 - cosine %.3g > %.3g",
             error, target);
    goto done;
  }
  int k = hi;
  for (int tries = 0; tries < MAX_MIXED_MEASURES && k < n_groups; tries++) {
    int index;
    if (out_of_budget(t)) {
      t->res->budget_exhausted = 1;
      goto done;
    }
    /* No measurement (a build, for NNCF a quantisation) for what its
     * predicted time says cannot beat the fastest accurate candidate. */
    const candidate *twin = NULL;
    double predicted = predicted_ms(t, c, est, k, keep, &twin);
    if (to_beat && predicted > 0 && predicted >= cand_ms(t, to_beat)) {
      mb_tune_step *last = kept_step(t, c, k);
      const mb_tune_step *b = cand_step(t, to_beat);
      char where[48];
      size_t used = last->dropped[0] ? strlen(last->dropped) : 0;
      snprintf(
          last->dropped + used, sizeof last->dropped - used,
          "%snot measured: with %d node%s in float it would take about "
          "%.4g ms (%.4g ms in int8, %s %.4g ms, %.1f%% of its int8 "
          "FLOPs back in float), no faster than %s at %s (%.4g ms)",
          used ? "; " : "", k, k == 1 ? "" : "s", predicted, c->best_median_ms,
          mb__conversion_def(twin->conversion)->name, twin->best_median_ms,
          100.0 * (1.0 - mb__tune_estimator_int8_share(est, k, keep) /
                             mb__tune_estimator_int8_share(est, 0, NULL)),
          b->conversion, setting(b, where, sizeof where), cand_ms(t, to_beat));
      goto done;
    }
    if ((status = measure(t, "mixed", 0, &c->conversion, 1, c->threads,
                          c->batch, k, keep, seconds, &index, err)))
      goto done;
    mb_tune_step *s = &t->res->steps[index];
    s->int8_flops_share = mb__tune_estimator_int8_share(est, k, keep);
    if (s->status != MB_BENCH_OK) {
      snprintf(s->dropped, sizeof s->dropped, "%s: %.200s",
               mb_bench_status_name(s->status), s->error_message);
      step_done(t, s);
      goto done;
    }
    if (s->accurate && slo_met(t, s)) {
      t->st->final[index] = true;
      step_done(t, s);
      goto done;
    }
    if (!slo_met(t, s)) {
      snprintf(s->dropped, sizeof s->dropped,
               "misses the SLO: p%g %.3f ms > %.3f ms", t->cfg->slo_percentile,
               s->slo_latency_ms, t->cfg->slo_ms);
      step_done(t, s);
      goto done;
    }
    /* The engine's int8 is less accurate than the estimate: keep more. */
    char why[192];
    inaccuracy(t, s, why, sizeof why);
    snprintf(s->dropped, sizeof s->dropped,
             "inaccurate on the engine (%s): keeping more nodes in float", why);
    step_done(t, s);
    k = MB_MIN(n_groups, k + MB_MAX(1, k / 2));
  }
done:
  free(keep);
  return status;
}

/* Phase 2: the inaccurate int8 candidates faster than the fastest accurate
 * one, fastest first (by cand_ms). */
static mb_status mixed_rounds(tune *t, mb_error *err) {
  const mb_tune_step *best = NULL;
  const candidate *best_c = NULL;
  double seconds = t->round_seconds;
  for (int i = 0; i < t->n_cands; i++) {
    const mb_tune_step *s = cand_step(t, &t->cands[i]);
    if (s)
      seconds = MB_MAX(seconds, s->min_seconds);
    if (t->cands[i].alive && s && s->accurate &&
        (!best || cand_ms(t, &t->cands[i]) < cand_ms(t, best_c))) {
      best = s;
      best_c = &t->cands[i];
    }
  }
  candidate *pool[MAX_MIXED_CANDIDATES];
  char where[48];
  int n = 0;
  for (int i = 0; i < t->n_cands; i++) {
    candidate *c = &t->cands[i];
    const mb_tune_step *s = cand_step(t, c);
    if (!c->alive || !s || s->accurate || !is_int8(c->conversion))
      continue;
    if (best && cand_ms(t, c) >= cand_ms(t, best_c)) {
      snprintf(t->res->steps[c->last_step].dropped,
               sizeof t->res->steps[0].dropped,
               "inaccurate, and no faster than %s at %s (best "
               "%.4g ms >= %.4g ms per sample)",
               best->conversion, setting(best, where, sizeof where),
               cand_ms(t, c), cand_ms(t, best_c));
      t->st->final[c->last_step] = false;
      continue;
    }
    /* Insertion by median, the fastest first; the slowest beyond the
     * cap are left. */
    int at = n;
    while (at > 0 && cand_ms(t, pool[at - 1]) > cand_ms(t, c))
      at--;
    if (at >= MAX_MIXED_CANDIDATES) {
      snprintf(t->res->steps[c->last_step].dropped,
               sizeof t->res->steps[0].dropped,
               "inaccurate; %d faster int8 candidates were tried mixed",
               MAX_MIXED_CANDIDATES);
      continue;
    }
    if (n == MAX_MIXED_CANDIDATES) {
      const mb_tune_step *out = cand_step(t, pool[n - 1]);
      snprintf(t->res->steps[pool[n - 1]->last_step].dropped,
               sizeof out->dropped,
               "inaccurate; %d faster int8 candidates were tried mixed",
               MAX_MIXED_CANDIDATES);
      n--;
    }
    memmove(&pool[at + 1], &pool[at], sizeof *pool * (size_t)(n - at));
    pool[at] = c;
    n++;
  }
  for (int i = 0; i < n; i++) {
    mb_tune_step *s = cand_step(t, pool[i]);
    /* As it stands (all int8) it cannot win: it is inaccurate. */
    t->st->final[pool[i]->last_step] = false;
    char why[192];
    inaccuracy(t, s, why, sizeof why);
    snprintf(s->dropped, sizeof s->dropped,
             "inaccurate (%s): tried with per-node precision", why);
    mb_status status = mixed_precision(t, pool[i], seconds, best_c, err);
    if (status)
      return status;
    if (t->res->budget_exhausted)
      break;
  }
  return MB_STATUS_OK;
}

/* ---- the winner ---- */

static void fill_int8_shares(tune *t) {
  for (int i = 0; i < t->res->n_steps; i++) {
    mb_tune_step *s = &t->res->steps[i];
    mb_error ignored;
    int conversion;
    if (s->int8_flops_share >= 0 ||
        mb_conversion_find(s->conversion, &conversion, &ignored) ||
        !is_int8(conversion))
      continue;
    const mb_conversion_def *def = mb__conversion_def(conversion);
    mb_bench_job job = {.config = &t->base};
    mb_int8_weights w = mb__job_int8_form(&job, def, NULL, 0);
    for (int e = 0; e < t->n_est; e++)
      if (mb__tune_estimator_matches(t->est[e], def, w))
        s->int8_flops_share = mb__tune_estimator_int8_share(
            t->est[e], s->n_kept_float, s->kept_float);
  }
}

/* The winner's report, trimmed to its one result, is kept for the
 * history; every other report is freed. */
static void keep_winner_report(tune *t) {
  tune_storage *st = t->st;
  mb_bench_report *keep = NULL;
  int w = t->res->winner;
  if (w >= 0 && st->reports[w]) {
    keep = st->reports[w];
    int r = st->report_result[w];
    for (int i = 0; i < keep->n_results; i++)
      if (i != r)
        mb__result_clear(&keep->results[i]);
    if (r != 0)
      keep->results[0] = keep->results[r];
    keep->n_results = 1;
    keep->baseline_result = 0;
    keep->config.baseline = 0;
    keep->config.n_conversions = 0; /* the result names it */
    keep->config.conversions = NULL;
    keep->results[0].speedup_vs_baseline = 1.0;
    t->res->winner_report = keep;
  }
  for (int i = 0; i < t->res->n_steps; i++) {
    mb_bench_report *r = st->reports[i];
    if (!r)
      continue;
    for (int k = i; k < t->res->n_steps; k++)
      if (st->reports[k] == r)
        st->reports[k] = NULL;
    if (r != keep)
      mb_bench_report_free(r);
  }
}

static void choose_winner(tune *t) {
  mb_tune_result *res = t->res;
  char where[48];
  res->winner = res->closest = res->fastest_uniform = -1;
  for (int i = 0; i < res->n_steps; i++) {
    const mb_tune_step *s = &res->steps[i];
    bool measured = s->median_ms >= 0 && s->status == MB_BENCH_OK;
    if (measured && drop_budget(t)) {
      if (s->task_accuracy >= 0 &&
          (res->closest < 0 ||
           s->task_accuracy > res->steps[res->closest].task_accuracy))
        res->closest = i;
    } else if (measured && s->error >= 0 &&
               (res->closest < 0 ||
                s->error < res->steps[res->closest].error)) {
      res->closest = i;
    }
    if (!t->st->final[i] || !measured || !s->accurate || !slo_met(t, s))
      continue;
    if (res->winner < 0 ||
        per_sample_ms(s) < per_sample_ms(&res->steps[res->winner]))
      res->winner = i;
    if (strcmp(s->phase, "uniform") == 0 &&
        (res->fastest_uniform < 0 ||
         per_sample_ms(s) < per_sample_ms(&res->steps[res->fastest_uniform])))
      res->fastest_uniform = i;
  }
  res->found = res->winner >= 0;
  const char *budget = res->budget_exhausted ? " (the budget ran out: the "
                                               "best so far)"
                                             : "";
  char budget_name[96];
  if (drop_budget(t))
    snprintf(budget_name, sizeof budget_name, "--max-accuracy-drop %g%%",
             100 * t->cfg->max_accuracy_drop);
  else
    snprintf(budget_name, sizeof budget_name, "--max-error %g", t->max_error);
  if (res->found) {
    const mb_tune_step *w = &res->steps[res->winner];
    char task[96] = "";
    if (w->task_accuracy >= 0)
      snprintf(task, sizeof task, ", task accuracy %.2f%%",
               100 * w->task_accuracy);
    char per_sample[48] = "";
    if (w->batch_size > 1)
      snprintf(per_sample, sizeof per_sample, " (%.4f ms per sample)",
               per_sample_ms(w));
    snprintf(res->summary, sizeof res->summary,
             "%s at %s%s: median %.3f ms%s, cosine %.6f%s%s", w->conversion,
             setting(w, where, sizeof where),
             w->n_kept_float ? " with nodes kept in float" : "", w->median_ms,
             per_sample, w->cosine, task, budget);
  } else if (drop_budget(t) && res->baseline_task_accuracy < 0) {
    snprintf(res->summary, sizeof res->summary,
             "no configuration meets %s: no fp32 candidate measured the "
             "baseline task accuracy (add one, e.g. -c ORT_CPU, and labels "
             "with one class per row of the first output)%s",
             budget_name, budget);
  } else if (res->closest >= 0 && drop_budget(t)) {
    const mb_tune_step *c = &res->steps[res->closest];
    snprintf(res->summary, sizeof res->summary,
             "no configuration meets %s%s: the closest is %s at %s%s "
             "(task accuracy %.2f%%, %s's %.2f%%)%s",
             budget_name, t->cfg->slo_percentile > 0 ? " within the SLO" : "",
             c->conversion, setting(c, where, sizeof where),
             c->n_kept_float ? " with nodes kept in float" : "",
             100 * c->task_accuracy, res->baseline,
             100 * res->baseline_task_accuracy, budget);
  } else if (res->closest >= 0) {
    const mb_tune_step *c = &res->steps[res->closest];
    /* The per-node estimates may have come closer than anything measured:
     * say so, as an estimate. */
    const mb_tune_step *e = NULL;
    for (int i = 0; i < res->n_steps; i++)
      if (strcmp(res->steps[i].phase, "mixed-estimate") == 0 &&
          res->steps[i].error >= 0 && res->steps[i].error < c->error &&
          (!e || res->steps[i].error < e->error))
        e = &res->steps[i];
    char estimate[160] = "";
    if (e)
      snprintf(estimate, sizeof estimate,
               "; estimated on the reference interpreter, %s with %d nodes "
               "in float comes to 1 - cosine %.3g",
               e->conversion, e->n_kept_float, e->error);
    snprintf(res->summary, sizeof res->summary,
             "no configuration meets --max-error %g%s: the closest is %s at "
             "%s%s (cosine %.6f, 1 - cosine %.3g)%s%s",
             t->max_error, t->cfg->slo_percentile > 0 ? " within the SLO" : "",
             c->conversion, setting(c, where, sizeof where),
             c->n_kept_float ? " with nodes kept in float" : "", c->cosine,
             c->error, estimate, budget);
  } else {
    snprintf(res->summary, sizeof res->summary,
             "no configuration meets %s: none was measured%s", budget_name,
             budget);
  }
}

/* --output: the winner's model. A failure is the result's, not the
 * search's: the search's results stay (the log can still be written). */
static void write_artifact(tune *t, const char *path) {
  const mb_tune_step *w = &t->res->steps[t->res->winner];
  mb_tune_artifact_args a = {.model_path = t->model_path,
                             .config = &t->base,
                             .result = t->res,
                             .out_path = path};
  mb_tune_estimator *est = NULL;
  mb_error err;
  int index, e;
  /* An int8 winner's quantisable nodes are its estimator's (dynamic int8
   * leaves Conv out); the search opened one for every int8 form. */
  if (mb_conversion_find(w->conversion, &index, &err) == MB_STATUS_OK &&
      is_int8(index) &&
      estimator_for(t, index, &e, &est, &err) == MB_STATUS_OK) {
    a.n_groups = mb__tune_estimator_groups(est);
    const char **g = calloc((size_t)a.n_groups + 1, sizeof *g);
    for (int i = 0; g && i < a.n_groups; i++)
      g[i] = mb__tune_estimator_group(est, i);
    a.groups = g;
    if (!g)
      a.n_groups = 0;
  }
  if (mb__tune_write_artifact(&a, &err) == MB_STATUS_OK)
    snprintf(t->res->output_path, sizeof t->res->output_path, "%s", path);
  else
    snprintf(t->res->output_error, sizeof t->res->output_error, "%s",
             err.message);
  free((void *)a.groups);
}

mb_status mb_tune(const char *model_path, const mb_tune_config *config,
                  mb_tune_result **result_out, mb_error *err) {
  tune t;
  mb_status status;
  double t0 = mb__now();
  memset(&t, 0, sizeof t);
  t.t0 = t0;
  for (int i = 0; i < MAX_ESTIMATORS; i++)
    t.all_int8[i] = t.floor[i] = NAN;
  if (!result_out)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT, "tune: no result_out");
  *result_out = NULL;
  if (!model_path || !config)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "tune: a model and a config are needed");
  if (config->max_accuracy_drop < 0 || config->max_accuracy_drop >= 1 ||
      isnan(config->max_accuracy_drop))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "tune: max_accuracy_drop %g: expected a share in [0, 1) "
                     "(0.005 for 0.5%%)",
                     config->max_accuracy_drop);
  if (config->max_accuracy_drop > 0 && !config->bench.labels_path)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "tune: max_accuracy_drop needs labels "
                     "(bench.labels_path, --labels FILE.npy)");
  if (config->slo_percentile < 0 || config->slo_percentile > 100 ||
      (config->slo_percentile > 0 && !(config->slo_ms > 0)))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "tune: SLO p%g=%g ms: expected a percentile in (0, 100] "
                     "and a latency > 0",
                     config->slo_percentile, config->slo_ms);
  t.cfg = config;
  t.model_path = model_path;
  t.base = config->bench;
  t.base.on_progress = NULL;
  t.base.on_result = NULL;
  t.base.user = NULL;
  t.base.n_keep_float = 0;
  t.base.keep_float = NULL;
  t.base.load.scenario = MB_LOAD_NONE;
  t.base.segments = 0; /* nothing here reads them */
  t.max_error = config->bench.max_error > 0 ? config->bench.max_error : 1e-3;
  t.base.max_error = t.max_error;
  t.round_seconds =
      config->round_seconds > 0 ? config->round_seconds : DEFAULT_ROUND_SECONDS;
  t.deadline = config->budget_seconds > 0 ? t0 + config->budget_seconds : 0;
  if (!(t.res = calloc(1, sizeof *t.res)) ||
      !(t.st = calloc(1, sizeof *t.st)) ||
      !(t.st->arena = mb__arena_create())) {
    if (t.res)
      free(t.st);
    free(t.res);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: result");
  }
  t.res->storage_ = t.st;
  t.res->winner = t.res->closest = t.res->fastest_uniform = -1;
  snprintf(t.res->model_path, sizeof t.res->model_path, "%s", model_path);
  t.res->max_error = t.max_error;
  t.res->slo_percentile = config->slo_percentile;
  t.res->slo_ms = config->slo_ms;
  t.res->max_accuracy_drop = config->max_accuracy_drop;
  t.res->baseline_task_accuracy = -1;
  if ((status = make_candidates(&t, err)) || (status = uniform_rounds(&t, err)))
    goto fail;
  if (!t.res->budget_exhausted && (status = mixed_rounds(&t, err)))
    goto fail;
  /* Estimators (without calibration: shapes and FLOPs only) for the
   * FLOPs share of the int8 forms that had none. */
  for (int i = 0; i < t.n_cands; i++)
    if (is_int8(t.cands[i].conversion) && t.cands[i].last_step >= 0 &&
        t.res->steps[t.cands[i].last_step].status == MB_BENCH_OK) {
      mb_tune_estimator *est;
      mb_error ignored;
      int e;
      (void)estimator_for(&t, t.cands[i].conversion, &e, &est, &ignored);
    }
  fill_int8_shares(&t);
  choose_winner(&t);
  keep_winner_report(&t);
  if (config->output_path && t.res->found)
    write_artifact(&t, config->output_path);
  for (int i = 0; i < t.n_est; i++) {
    mb__tune_estimator_close(t.est[i]);
    free(t.rank[i]);
  }
  free(t.cands);
  t.res->wall_seconds = mb__now() - t0;
  *result_out = t.res;
  return MB_STATUS_OK;
fail:
  for (int i = 0; i < t.n_est; i++) {
    mb__tune_estimator_close(t.est[i]);
    free(t.rank[i]);
  }
  free(t.cands);
  keep_winner_report(&t); /* winner is -1: frees every report */
  mb_tune_result_free(t.res);
  return status;
}

void mb_tune_result_free(mb_tune_result *result) {
  if (!result)
    return;
  tune_storage *st = result->storage_;
  mb_bench_report_free(result->winner_report);
  if (st) {
    free(st->reports);
    free(st->report_result);
    free(st->final);
    mb__arena_free(st->arena);
    free(st);
  }
  free(result->steps);
  free(result);
}
