/* The console table of a benchmark run: a pure function of the report
 * struct (no runtime, clock or environment is consulted), so the CLI, the
 * C API example and tests all print the same thing for the same report.
 *
 * Layout: a header (model, inputs, machine, settings), one row per
 * conversion sorted by median latency (ok rows first, then the others in
 * request order), then the warnings grouped per conversion. Failed rows
 * carry their one-line error instead of numbers. */
#include "core/internal.h"
#include "report/report_util.h"
#include "runtime/runtime.h"

#include <math.h>
#include <stdlib.h>

/* Longer lines wrap badly on a typical terminal; error messages and the
 * header are cut to this width. */
#define TABLE_WIDTH 120
#define MAX_NAME_WIDTH 40
/* Names, paths and messages come from models and runtimes: printed with
 * their control characters escaped (core/text.c). buf: a char array. */
#define SAFE(s, buf) mb__term_text((s), (buf), sizeof(buf))

/* ANSI colours: used only when the caller asks for them. */
#define ANSI_RESET "\033[0m"
#define ANSI_BOLD "\033[1m"
#define ANSI_DIM "\033[2m"
#define ANSI_RED "\033[31m"
#define ANSI_GREEN "\033[32m"
#define ANSI_YELLOW "\033[33m"

/* Colour of each status: green for results, red for failures, dim for
 * conversions that never ran here. Indexed by mb_bench_status. */
static const char *const status_color[MB_BENCH_STATUS_COUNT] = {
    [MB_BENCH_OK] = ANSI_GREEN,        [MB_BENCH_ERROR] = ANSI_RED,
    [MB_BENCH_TIMEOUT] = ANSI_RED,     [MB_BENCH_CRASHED] = ANSI_RED,
    [MB_BENCH_UNAVAILABLE] = ANSI_DIM, [MB_BENCH_SKIPPED] = ANSI_DIM,
    [MB_BENCH_BUILT] = ANSI_GREEN,
};

static bool is_ok(const mb_bench_result *r) {
  return r->status == MB_BENCH_OK;
}

/* Sort key of an ok row; an ok row without a finite median sorts last. */
static double median_key(const mb_bench_result *r) {
  double m = r->latency_ms.median;
  return isfinite(m) ? m : INFINITY;
}

/* Row order: ok rows by median (ties keep request order), then the rest in
 * request order. Insertion sort is stable and n is small. */
static void sort_rows(const mb_bench_report *report, int *order) {
  int n = report->n_results;
  for (int i = 0; i < n; i++)
    order[i] = i;
  for (int i = 1; i < n; i++) {
    int cur = order[i], j = i;
    const mb_bench_result *c = &report->results[cur];
    while (j > 0) {
      const mb_bench_result *p = &report->results[order[j - 1]];
      bool before;
      if (is_ok(c) != is_ok(p))
        before = is_ok(c);
      else if (is_ok(c))
        before = median_key(c) < median_key(p);
      else
        before = false;
      if (!before)
        break;
      order[j] = order[j - 1];
      j--;
    }
    order[j] = cur;
  }
}

/* Milliseconds with about four significant digits. */
static void format_ms(char *buf, size_t size, double ms) {
  if (!isfinite(ms) || ms < 0)
    snprintf(buf, size, "-");
  else if (ms >= 100)
    snprintf(buf, size, "%.1f", ms);
  else if (ms >= 1)
    snprintf(buf, size, "%.3f", ms);
  else
    snprintf(buf, size, "%.4f", ms);
}

static void format_throughput(char *buf, size_t size, double sps) {
  if (!isfinite(sps) || sps <= 0)
    snprintf(buf, size, "-");
  else if (sps >= 10)
    snprintf(buf, size, "%.1f", sps);
  else if (sps >= 0.01)
    snprintf(buf, size, "%.3f", sps);
  else
    snprintf(buf, size, "%.2e", sps);
}

/* "1.84x [1.79-1.90]": the speed-up and its 95% interval where known; the
 * baseline's own is 1 by definition. */
static void format_speedup(char *buf, size_t size,
                           const mb_bench_report *report, int index) {
  const mb_bench_result *r = &report->results[index];
  double s = r->speedup_vs_baseline;
  bool base = index == report->baseline_result;
  if (!isfinite(s) || s <= 0)
    snprintf(buf, size, base ? "(base)" : "-");
  else if (!base && r->speedup_ci[0] > 0)
    snprintf(buf, size, "%.2fx [%.2f-%.2f]", s, r->speedup_ci[0],
             r->speedup_ci[1]);
  else
    snprintf(buf, size, base ? "%.2fx (base)" : "%.2fx", s);
}

/* Half the median's 95% interval as a share of it: "1.3%". */
static void format_median_ci(char *buf, size_t size, const mb_bench_result *r) {
  double m = r->latency_ms.median;
  if (r->median_ci_ms[0] > 0 && m > 0)
    snprintf(buf, size, "%.1f%%",
             100 * (r->median_ci_ms[1] - r->median_ci_ms[0]) / 2 / m);
  else
    snprintf(buf, size, "-");
}

/* The columns some runs add: what they need, over every result. */
typedef struct columns {
  int speedup_width; /* 13, wider with intervals */
  bool median_ci;    /* the median's interval ("+-95%") */
  bool fresh, cold;  /* realistic phases (--fresh-inputs, --cold-cache) */
} columns;

static columns table_columns(const mb_bench_report *report) {
  columns c = {13, false, false, false};
  for (int i = 0; i < report->n_results; i++) {
    const mb_bench_result *r = &report->results[i];
    if (r->speedup_ci[0] > 0)
      c.speedup_width = 19;
    c.median_ci |= r->median_ci_ms[0] > 0;
    c.fresh |= r->fresh_inputs.iterations > 0;
    c.cold |= r->cold_cache.iterations > 0;
  }
  return c;
}

/* A realistic phase's median and its gap to the steady state. */
static void print_realistic(const mb_realistic_stats *s, FILE *out) {
  char ms[32], gap[32] = "-";
  format_ms(ms, sizeof ms, s->iterations > 0 ? s->median_ms : -1);
  if (s->iterations > 0)
    snprintf(gap, sizeof gap, "%+.1f%%", 100 * s->gap);
  fprintf(out, " %9s %7s", ms, gap);
}

/* The largest absolute error over all outputs, or < 0 when unknown. */
static double max_abs_error(const mb_bench_result *r) {
  if (!r->has_accuracy)
    return -1;
  if (isfinite(r->max_abs_err) && r->max_abs_err >= 0)
    return r->max_abs_err;
  double m = -1;
  for (int i = 0; i < r->n_outputs && r->accuracy; i++)
    if (isfinite(r->accuracy[i].max_abs_err))
      m = MB_MAX(m, r->accuracy[i].max_abs_err);
  return m;
}

static void format_error(char *buf, size_t size, double e) {
  if (e < 0)
    snprintf(buf, size, "-");
  else if (e == 0)
    snprintf(buf, size, "0");
  else
    snprintf(buf, size, "%.2e", e);
}

static void format_mb(char *buf, size_t size, double mb) {
  if (!isfinite(mb) || mb <= 0)
    snprintf(buf, size, "-");
  else
    snprintf(buf, size, "%.1f", mb);
}

/* Prints s on one line in at most `width` characters (UTF-8 code points,
 * roughly terminal columns): control characters become spaces, a cut never
 * splits a UTF-8 sequence, and "..." marks it. */
static void put_clipped(FILE *out, const char *text, int width) {
  /* Line breaks and tabs read as blanks on one line; every other control
   * character is escaped (core/text.c) before the cut, so a cut never
   * splits an escape. */
  char blanks[TABLE_WIDTH * 8], safe[TABLE_WIDTH * 8];
  snprintf(blanks, sizeof blanks, "%s", text);
  for (char *p = blanks; *p; p++)
    if (*p == '\n' || *p == '\r' || *p == '\t')
      *p = ' ';
  const char *s = mb__term_text(blanks, safe, sizeof safe);
  size_t chars = 0, cut_at = 0, n = strlen(s);
  for (size_t i = 0; i < n; i++) {
    if (((unsigned char)s[i] & 0xc0) == 0x80)
      continue;
    if (width >= 3 && chars == (size_t)width - 3)
      cut_at = i;
    chars++;
  }
  bool cut = width >= 0 && chars > (size_t)width;
  if (cut)
    n = cut_at;
  fwrite(s, 1, n, out);
  if (cut)
    fputs("...", out);
}

static int name_width(const mb_bench_report *report) {
  int w = (int)strlen("conversion");
  for (int i = 0; i < report->n_results; i++) {
    const char *name = report->results[i].conversion;
    if (name)
      w = MB_MAX(w, (int)strlen(name));
  }
  return MB_MIN(w, MAX_NAME_WIDTH);
}

static int status_width(const mb_bench_report *report) {
  int w = (int)strlen("status");
  for (int i = 0; i < report->n_results; i++)
    w = MB_MAX(w, (int)strlen(mb_bench_status_name(report->results[i].status)));
  return w;
}

/* This machine's roofs, when results were placed against them. */
static void print_peaks(const mb_bench_report *report, FILE *out) {
  const mb_machine_peaks *p = &report->peaks;
  if (!p->measured)
    return;
  char int8[48] = "int8 n/a", bf16[48] = "bf16 n/a";
  if (p->int8_gops > 0)
    snprintf(int8, sizeof int8, "int8 %.0f GOP/s", p->int8_gops);
  if (p->bf16_gflops > 0)
    snprintf(bf16, sizeof bf16, "bf16 %.0f GFLOP/s", p->bf16_gflops);
  fprintf(out,
          "peaks:   fp32 %.0f GFLOP/s, %s, %s, memory %.1f GB/s "
          "(%d thread%s%s; modelbench machine)\n",
          p->fp32_gflops, int8, bf16, p->bandwidth_gbs, p->threads,
          p->threads == 1 ? "" : "s", p->from_cache ? ", cached" : "");
  if (p->note[0]) {
    char safe[MB_TERM_TEXT_SIZE];
    fprintf(out, "         %s\n", SAFE(p->note, safe));
  }
}

/* The header: what was measured, where, and how. */
static void print_header(const mb_bench_report *report, FILE *out) {
  const mb_bench_config *c = &report->config;
  const mb_machine_info *m = &report->machine;
  char safe[MB_TERM_TEXT_SIZE];
  fputs("model:   ", out);
  /* A manifest's model is known by its name (the file is a run's). */
  if (report->model_formats & ~(1u << MB_MODEL_FORMAT_ONNX) &&
      report->model_name[0])
    fprintf(out, "%s, ", SAFE(report->model_name, safe));
  fprintf(out, "%s",
          SAFE(report->model_path[0] ? report->model_path : "?", safe));
  if (report->model_sha256[0])
    fprintf(out, " (sha256 %.12s)", report->model_sha256);
  fputc('\n', out);

  /* Inputs on one clipped line: "name float32[1,3,224,224], ...". */
  char line[TABLE_WIDTH * 4];
  size_t used = 0;
  line[0] = '\0';
  for (int i = 0; i < report->n_inputs && report->inputs; i++) {
    const mb_input_shape *s = &report->inputs[i];
    char shape[256];
    mb__shape_str(s->rank, s->dims, shape, sizeof shape);
    int w = snprintf(
        line + used, sizeof line - used, "%s%s %s%s", i ? ", " : "",
        s->name ? s->name : "?",
        report->input_dtypes ? mb_dtype_name(report->input_dtypes[i]) : "",
        shape);
    if (w < 0 || (size_t)w >= sizeof line - used)
      break;
    used += (size_t)w;
  }
  fputs("inputs:  ", out);
  put_clipped(out, report->n_inputs ? line : "(none)", TABLE_WIDTH - 9);
  fputc('\n', out);
  if (report->model_quantized) {
    /* Why an fp32 conversion's accuracy reads as a cosine. */
    char quant[TABLE_WIDTH * 4];
    snprintf(quant, sizeof quant,
             "pre-quantised, every conversion judged "
             "by cosine (%s)",
             report->model_quantization);
    fputs("quant:   ", out);
    put_clipped(out, quant, TABLE_WIDTH - 9);
    fputc('\n', out);
  }

  char machine[TABLE_WIDTH * 2];
  snprintf(machine, sizeof machine, "%s, %d cores%s%s",
           m->cpu_model[0] ? m->cpu_model : "unknown CPU", m->cores,
           m->governor[0] ? ", governor " : "", m->governor);
  fputs("machine: ", out);
  put_clipped(out, machine, TABLE_WIDTH - 9);
  if (isfinite(m->load_average) && m->load_average >= 0)
    fprintf(out, ", load %.2f", m->load_average);
  fputc('\n', out);

  /* The batch the workers measured: real input data may fix it. */
  int batch = c->batch_size;
  for (int i = 0; i < report->n_results && report->results; i++)
    if (report->results[i].batch_size > 0) {
      batch = report->results[i].batch_size;
      break;
    }
  fprintf(out,
          "config:  threads %d, batch %d, warm-up %d / %g s, "
          "at least %d iterations / %g s, %s\n",
          c->threads, batch, c->warmup_iterations, c->warmup_seconds,
          c->min_iterations, c->min_seconds,
          c->isolate ? "isolated" : "in-process");
  if (c->ci_target > 0)
    fprintf(out,
            "         until the median's 95%% interval is within +-%g%% "
            "(at most %g s)\n",
            100 * c->ci_target, c->max_seconds);
  if (c->fresh_inputs || c->cold_cache)
    fprintf(out,
            "         beside the steady state:%s%s (gap: their median over "
            "the steady one)\n",
            c->fresh_inputs ? " fresh inputs" : "",
            c->cold_cache ? (c->fresh_inputs ? ", cold cache" : " cold cache")
                          : "");
  if (report->sweep_point[0])
    fprintf(out, "sweep point: %s\n", SAFE(report->sweep_point, safe));
  const mb_load_config *l = &c->load;
  if (l->scenario != MB_LOAD_NONE) {
    fprintf(out, "load:    %s", mb_load_scenario_name(l->scenario));
    if (l->scenario != MB_LOAD_SINGLE_STREAM)
      fprintf(out, ", concurrency %d", l->concurrency);
    if (l->find_peak)
      fputs(", find-peak", out);
    else if (l->qps > 0)
      fprintf(out, ", %g QPS", l->qps);
    if (l->slo_percentile > 0)
      fprintf(out, ", SLO p%g <= %g ms", l->slo_percentile, l->slo_ms);
    fprintf(out, ", at least %lld queries / %g s\n", (long long)l->min_queries,
            l->min_duration);
  }
  print_peaks(report, out);
  /* Accuracy is against the reference interpreter unless said here. */
  if (report->reference[0] && strcmp(report->reference, "interpreter") != 0)
    fprintf(out, "accuracy against: %s\n", SAFE(report->reference, safe));
}

/* Whether any result has a task accuracy (labels were given). */
static bool has_task_accuracy(const mb_bench_report *report) {
  for (int i = 0; i < report->n_results; i++)
    if (report->results[i].task_rows > 0)
      return true;
  return false;
}

/* Whether any result has a cost (a price was given) or an energy figure:
 * each is then a column. */
static bool has_cost(const mb_bench_report *report) {
  for (int i = 0; i < report->n_results; i++)
    if (report->results[i].cost_per_million > 0)
      return true;
  return false;
}

/* Whether any result is placed on the roofline (the % peak column). */
static bool has_roofline(const mb_bench_report *report) {
  for (int i = 0; i < report->n_results; i++)
    if (report->results[i].roofline.bound != MB_ROOFLINE_UNKNOWN)
      return true;
  return false;
}

static bool has_energy(const mb_bench_report *report) {
  for (int i = 0; i < report->n_results; i++)
    if (report->results[i].energy.available)
      return true;
  return false;
}

/* The bound without "-bound", for the column. */
static const char *bound_word(mb_roofline_bound bound) {
  static const char *const words[] = {"-", "compute", "memory", "overhead"};
  _Static_assert(MB_ARRAY_COUNT(words) == MB_ROOFLINE_BOUND_COUNT, "words");
  return (unsigned)bound < MB_ROOFLINE_BOUND_COUNT ? words[bound] : "-";
}

static void print_row(const mb_bench_report *report, int index, bool fastest,
                      int nw, int sw, const columns *cols, bool color,
                      FILE *out) {
  const mb_bench_result *r = &report->results[index];
  char safe[MB_TERM_TEXT_SIZE];
  const char *name = SAFE(r->conversion ? r->conversion : "?", safe);
  fputs(fastest ? (color ? ANSI_BOLD "* " : "* ") : "  ", out);
  fprintf(out, "%-*.*s ", nw, nw, name);
  if (color && (unsigned)r->status < MB_BENCH_STATUS_COUNT)
    fputs(status_color[r->status], out);
  fprintf(out, "%-*s", sw, mb_bench_status_name(r->status));
  if (color)
    fputs(ANSI_RESET, out);
  if (color && fastest)
    fputs(ANSI_BOLD, out);

  if (!is_ok(r)) {
    /* The error (or what a build-only run did) takes the place of the
     * numbers, clipped to the width. */
    int used = 2 + nw + 1 + sw + 2;
    char built[160];
    fputs("  ", out);
    put_clipped(out,
                r->status == MB_BENCH_BUILT
                    ? mb__report_built_text(r, built, sizeof built)
                : r->error[0] ? r->error
                              : "(no message)",
                MB_MAX(TABLE_WIDTH - used, 20));
    fputc('\n', out);
    return;
  }
  char median[32], ci[32], p90[32], p99[32], sps[32], speedup[48], err[32],
      mem[32];
  format_ms(median, sizeof median, r->latency_ms.median);
  format_median_ci(ci, sizeof ci, r);
  format_ms(p90, sizeof p90, r->latency_ms.p90);
  format_ms(p99, sizeof p99, r->latency_ms.p99);
  format_throughput(sps, sizeof sps, r->throughput_sps);
  format_speedup(speedup, sizeof speedup, report, index);
  format_error(err, sizeof err, max_abs_error(r));
  format_mb(mem, sizeof mem, r->peak_rss_mb);
  fprintf(out, " %10s", median);
  if (cols->median_ci)
    fprintf(out, " %6s", ci);
  fprintf(out, " %9s %9s %11s %*s %11s %8s", p90, p99, sps, cols->speedup_width,
          speedup, err, mem);
  if (cols->fresh)
    print_realistic(&r->fresh_inputs, out);
  if (cols->cold)
    print_realistic(&r->cold_cache, out);
  if (has_task_accuracy(report)) {
    if (r->task_rows > 0)
      fprintf(out, " %7.2f%%", 100.0 * r->task_accuracy);
    else
      fprintf(out, " %8s", "n/a");
  }
  if (has_roofline(report)) {
    char share[16] = "-";
    if (r->roofline.bound != MB_ROOFLINE_UNKNOWN)
      snprintf(share, sizeof share, "%.*f%%",
               r->roofline.peak_share < 0.1 ? 1 : 0,
               100.0 * r->roofline.peak_share);
    fprintf(out, " %7s %-8s", share, bound_word(r->roofline.bound));
  }
  if (has_energy(report)) {
    char joules[32] = "-";
    if (r->energy.available)
      snprintf(joules, sizeof joules, "%.4g", r->energy.joules_per_inference);
    fprintf(out, " %9s", joules);
  }
  if (has_cost(report)) {
    char cost[32] = "-";
    if (r->cost_per_million > 0)
      snprintf(cost, sizeof cost, "%.4g", r->cost_per_million);
    fprintf(out, " %9s", cost);
  }
  if (color && fastest)
    fputs(ANSI_RESET, out);
  fputc('\n', out);
}

/* Why there is no energy column (or why some rows lack a figure): each
 * distinct reason once, with the conversions it holds for when they are
 * not all. */
static void print_energy_notes(const mb_bench_report *report, FILE *out) {
  int ran = 0, without = 0;
  for (int i = 0; i < report->n_results; i++) {
    const mb_bench_result *r = &report->results[i];
    ran += is_ok(r);
    without += is_ok(r) && !r->energy.available && r->energy.unavailable[0];
  }
  for (int i = 0; i < report->n_results; i++) {
    const mb_bench_result *r = &report->results[i];
    if (!is_ok(r) || r->energy.available || !r->energy.unavailable[0])
      continue;
    bool first = true;
    for (int k = 0; k < i && first; k++)
      first = !(is_ok(&report->results[k]) &&
                strcmp(report->results[k].energy.unavailable,
                       r->energy.unavailable) == 0);
    if (!first)
      continue;
    char line[TABLE_WIDTH * 4];
    snprintf(line, sizeof line, "energy unavailable%s%s: %s",
             without < ran ? " for " : "",
             without < ran ? mb__report_name(r) : "", r->energy.unavailable);
    put_clipped(out, line, TABLE_WIDTH);
    fputc('\n', out);
  }
  if (has_energy(report))
    fputs("J/inf: RAPL package energy of the timed phase per inference; it "
          "counts everything the package ran\n",
          out);
}

static void format_count(char *buf, size_t size, int64_t n) {
  if (n < 0)
    snprintf(buf, size, "-");
  else
    snprintf(buf, size, "%lld", (long long)n);
}

/* --cold: what a first request costs, one row per conversion that ran. */
static void print_cold(const mb_bench_report *report, const int *order, int nw,
                       bool color, FILE *out) {
  bool any = false;
  for (int i = 0; i < report->n_results; i++)
    any |= report->results[i].cold.measured != 0;
  if (!any)
    return;
  fputc('\n', out);
  if (color)
    fputs(ANSI_BOLD, out);
  fprintf(out, "  %-*s %11s %11s %9s %11s %9s %13s %13s\n", nw, "cold start",
          "build miss", "build hit", "load ms", "first inf", "to steady",
          "1st result", "1st (miss)");
  if (color)
    fputs(ANSI_RESET, out);
  for (int k = 0; k < report->n_results; k++) {
    const mb_bench_result *r = &report->results[order[k]];
    const mb_cold_start *c = &r->cold;
    if (!c->measured)
      continue;
    char miss[32], hit[32], load[32], first[32], steady[32], ttfr[32],
        ttfr_miss[32], safe[MB_TERM_TEXT_SIZE];
    format_ms(miss, sizeof miss, c->build_miss_ms);
    format_ms(hit, sizeof hit, c->build_hit_ms);
    format_ms(load, sizeof load, c->load_ms);
    format_ms(first, sizeof first, c->first_inference_ms);
    format_count(steady, sizeof steady, c->iterations_to_steady);
    format_ms(ttfr, sizeof ttfr, c->time_to_first_result_ms);
    format_ms(ttfr_miss, sizeof ttfr_miss, c->time_to_first_result_miss_ms);
    fprintf(out, "  %-*.*s %11s %11s %9s %11s %9s %13s %13s\n", nw, nw,
            SAFE(r->conversion ? r->conversion : "?", safe), miss, hit, load,
            first, steady, ttfr, ttfr_miss);
    if (c->note[0]) {
      char line[TABLE_WIDTH * 2];
      snprintf(line, sizeof line, "  %-*s note: %s", nw, "", c->note);
      put_clipped(out, line, TABLE_WIDTH);
      fputc('\n', out);
    }
  }
  fputs("  (ms; build: the build step, cache rebuilt (miss) or read back "
        "(hit); load: model read + session; to steady: iterations before "
        "the median of every 5 stays within 10% of the timed median; 1st "
        "result: build + load + first inference)\n",
        out);
}

/* The int8 form, where it is not the plain one: one line per form and
 * reason naming its conversions, when a conversion used other than 8-bit
 * weights or --int8-weights chose them. */
static void print_int8_forms(const mb_bench_report *report, FILE *out) {
  bool any = false;
  for (int i = 0; i < report->n_results; i++) {
    const mb_bench_result *r = &report->results[i];
    any |= r->int8_weights > MB_INT8_WEIGHTS_W8 ||
           (r->int8_weights && report->config.int8_weights);
  }
  if (!any)
    return;
  fputs("\nint8 weights:\n", out);
  for (int i = 0; i < report->n_results; i++) {
    const mb_bench_result *r = &report->results[i];
    bool first = r->int8_weights != MB_INT8_WEIGHTS_AUTO;
    for (int k = 0; first && k < i; k++)
      first = !(report->results[k].int8_weights == r->int8_weights &&
                strcmp(report->results[k].int8_form, r->int8_form) == 0);
    if (!first)
      continue;
    char line[TABLE_WIDTH * 6];
    int used = snprintf(line, sizeof line, "%s in ",
                        mb__int8_weights_words(r->int8_weights));
    for (int k = i;
         k < report->n_results && used > 0 && (size_t)used < sizeof line; k++) {
      const mb_bench_result *o = &report->results[k];
      if (o->int8_weights == r->int8_weights &&
          strcmp(o->int8_form, r->int8_form) == 0)
        used += snprintf(line + used, sizeof line - (size_t)used, "%s%s",
                         k == i ? "" : ", ", mb__report_name(o));
    }
    if (used > 0 && (size_t)used < sizeof line)
      snprintf(line + used, sizeof line - (size_t)used, ": %s", r->int8_form);
    char safe[TABLE_WIDTH * 8];
    /* whole: the reason is the point */
    fprintf(out, "  %s\n", SAFE(line, safe));
  }
}

static void print_warnings(const mb_bench_report *report, const int *order,
                           bool color, FILE *out) {
  bool any = false;
  for (int i = 0; i < report->n_results; i++)
    any |= report->results[i].n_warnings > 0;
  if (!any)
    return;
  fprintf(out, "\n%swarnings:%s\n", color ? ANSI_YELLOW : "",
          color ? ANSI_RESET : "");
  for (int k = 0; k < report->n_results; k++) {
    const mb_bench_result *r = &report->results[order[k]];
    for (int w = 0; w < r->n_warnings && r->warnings; w++) {
      if (!r->warnings[w])
        continue;
      char line[TABLE_WIDTH * 4];
      snprintf(line, sizeof line, "%s: %s", r->conversion ? r->conversion : "?",
               r->warnings[w]);
      fputs(color ? "  " ANSI_YELLOW : "  ", out);
      put_clipped(out, line, TABLE_WIDTH - 2);
      fputs(color ? ANSI_RESET "\n" : "\n", out);
    }
  }
}

/* A run spread over machines may mix kinds of machine: the rows above are
 * then ranked across them, which says as much about the machines as about
 * the conversions. Says so, and which conversion ran where. */
static void print_machine_kinds(const mb_bench_report *report, FILE *out) {
  char safe[MB_TERM_TEXT_SIZE];
  int *kind = malloc(sizeof *kind * (size_t)report->n_results);
  int kinds = kind ? mb__report_machine_kinds(report, kind) : 0;
  if (kinds > 1) {
    fprintf(out,
            "\nnote: these results ran on %d kinds of machine; latencies of "
            "different kinds do not compare:\n",
            kinds);
    for (int k = 0; k < kinds; k++) {
      const mb_machine_info *m = NULL;
      for (int i = 0; i < report->n_results; i++)
        if (kind[i] == k) {
          if (!m) {
            m = &report->results[i].machine;
            fprintf(out, "  %c: %s, %d cores:", 'A' + k % 26,
                    SAFE(m->cpu_model[0] ? m->cpu_model : "unknown CPU", safe),
                    m->cores);
          }
          fprintf(out, " %s", SAFE(mb__report_name(&report->results[i]), safe));
          if (report->results[i].machine.host[0])
            fprintf(out, " (%s)", SAFE(report->results[i].machine.host, safe));
        }
      fputc('\n', out);
    }
  }
  free(kind);
}

/* Load runs: what the scenario asks (QPS, queueing, the SLO, validity),
 * one row per conversion that ran one. Latencies count from arrival. */
static void print_load(const mb_bench_report *report, const int *order, int nw,
                       bool color, FILE *out) {
  bool any = false, server = false, slo = false;
  for (int i = 0; i < report->n_results; i++) {
    const mb_load_stats *l = &report->results[i].load;
    any |= l->scenario != MB_LOAD_NONE && l->queries > 0;
    server |= l->scenario == MB_LOAD_SERVER;
    slo |= l->slo_met >= 0;
  }
  if (!any)
    return;
  fputc('\n', out);
  if (color)
    fputs(ANSI_BOLD, out);
  fprintf(out, "  %-*s %9s %9s %9s %9s %9s%s%s  %s\n", nw, "load",
          server ? "target" : "", "QPS", "p50 ms", "p90 ms", "p99 ms",
          server ? "  queue mean/max" : "", slo ? "  over SLO" : "",
          "validity");
  if (color)
    fputs(ANSI_RESET, out);
  for (int k = 0; k < report->n_results; k++) {
    const mb_bench_result *r = &report->results[order[k]];
    const mb_load_stats *l = &r->load;
    if (l->scenario == MB_LOAD_NONE || l->queries <= 0 || !is_ok(r))
      continue;
    char target[32] = "", qps[32], p50[32], p90[32], p99[32], queue[48] = "";
    if (server && l->target_qps > 0)
      snprintf(target, sizeof target, "%.4g", l->target_qps);
    format_throughput(qps, sizeof qps, l->achieved_qps);
    format_ms(p50, sizeof p50, r->latency_ms.median);
    format_ms(p90, sizeof p90, r->latency_ms.p90);
    format_ms(p99, sizeof p99, r->latency_ms.p99);
    char safe[MB_TERM_TEXT_SIZE];
    fprintf(out, "  %-*.*s %9s %9s %9s %9s %9s", nw, nw,
            SAFE(r->conversion ? r->conversion : "?", safe), target, qps, p50,
            p90, p99);
    if (server) {
      if (l->scenario == MB_LOAD_SERVER)
        snprintf(queue, sizeof queue, "%.2f/%lld", l->queue_depth_mean,
                 (long long)l->queue_depth_max);
      fprintf(out, "  %15s", queue);
    }
    if (slo) {
      char over[32] = "-";
      if (l->slo_met >= 0)
        snprintf(over, sizeof over, "%.1f%%", 100.0 * l->over_slo_share);
      fprintf(out, "  %8s", over);
    }
    fputs("  ", out);
    if (l->valid) {
      fputs(color ? ANSI_GREEN "valid" ANSI_RESET : "valid", out);
    } else {
      fputs(color ? ANSI_RED "INVALID" ANSI_RESET ": " : "INVALID: ", out);
      put_clipped(out, l->invalid_reason, 60);
    }
    if (l->slo_met == 0)
      fprintf(out, "%s%s SLO missed (p%g %.4g ms > %g ms)%s",
              color ? ANSI_RED : "", l->valid ? "," : ";",
              report->config.load.slo_percentile, l->slo_latency_ms,
              report->config.load.slo_ms, color ? ANSI_RESET : "");
    fputc('\n', out);
    /* What the harness added, beside what an ideal queue would give. */
    if (l->scenario == MB_LOAD_SERVER) {
      fprintf(out,
              "  %-*s p99 %.4g ms (ideal queue %.4g ms)%s; generator lateness "
              "p99 %.1f us; hand-off p99 %.1f us",
              nw, "", r->latency_ms.p99, l->ideal_p99_ms,
              l->harness_excess ? ", more than the harness explains" : "",
              l->generator_lateness_us.p99, l->handoff_us.p99);
      if (l->steal_ms > 0) /* NAN: unknown */
        fprintf(out, "; hypervisor steal %.0f ms", l->steal_ms);
      fputc('\n', out);
    }
    if (l->n_trials > 0 && l->peak_qps > 0)
      fprintf(out,
              "  %-*s peak %.4g QPS within the SLO (find-peak: %d runs; the "
              "row above is the run at the peak)\n",
              nw, "", l->peak_qps, l->n_trials);
    else if (l->n_trials > 0)
      fprintf(out,
              "  %-*s no QPS met the SLO (find-peak: %d runs; the row above "
              "is the lowest QPS tried)\n",
              nw, "", l->n_trials);
  }
  if (report->config.load.scenario == MB_LOAD_SINGLE_STREAM)
    fputs("  (single-stream: LoadGen's metric is the p90 latency)\n", out);
}

void mb_bench_report_print_table(const mb_bench_report *report, void *out_,
                                 int use_color) {
  FILE *out = out_;
  bool color = use_color != 0;
  if (!report || !out)
    return;
  print_header(report, out);
  fputc('\n', out);
  if (report->n_results <= 0 || !report->results) {
    fputs("(no conversions were run)\n", out);
    return;
  }
  int *order = malloc(sizeof *order * (size_t)report->n_results);
  if (!order) {
    fputs("(out of memory printing the table)\n", out);
    return;
  }
  sort_rows(report, order);
  int nw = name_width(report), sw = status_width(report);
  columns cols = table_columns(report);
  /* The first row is the fastest when it is ok (ok rows sort first). */
  int fastest = is_ok(&report->results[order[0]]) &&
                        isfinite(report->results[order[0]].latency_ms.median)
                    ? order[0]
                    : -1;

  if (color)
    fputs(ANSI_BOLD, out);
  if (report->config.build_only) /* nothing measured: no number columns */
    fprintf(out, "  %-*s %-*s  %s\n", nw, "conversion", sw, "status", "build");
  else {
    fprintf(out, "  %-*s %-*s %10s", nw, "conversion", sw, "status",
            "median ms");
    if (cols.median_ci)
      fprintf(out, " %6s", "+-95%");
    fprintf(out, " %9s %9s %11s %*s %11s %8s", "p90 ms", "p99 ms", "samples/s",
            cols.speedup_width, "speedup", "max abs err", "peak MB");
    if (cols.fresh)
      fprintf(out, " %9s %7s", "fresh ms", "gap");
    if (cols.cold)
      fprintf(out, " %9s %7s", "cold ms", "gap");
    fprintf(out, "%s%s%s%s\n", has_task_accuracy(report) ? " task acc" : "",
            has_roofline(report) ? "  % peak bound   " : "",
            has_energy(report) ? "     J/inf" : "",
            has_cost(report) ? "    cost/M" : "");
  }
  if (color)
    fputs(ANSI_RESET, out);
  for (int k = 0; k < report->n_results; k++)
    print_row(report, order[k], order[k] == fastest, nw, sw, &cols, color, out);
  if (fastest >= 0)
    fprintf(out, "* fastest\n");
  if (has_cost(report)) {
    fprintf(out,
            "cost/M: a million inferences at %g per core-hour x threads x "
            "sessions, from the throughput",
            report->config.price_per_core_hour);
    int cheapest = mb__report_cheapest(report);
    if (cheapest >= 0)
      fprintf(out, "; cheapest accurate: %s (%.4g)",
              mb__report_name(&report->results[cheapest]),
              report->results[cheapest].cost_per_million);
    fputc('\n', out);
  }
  print_energy_notes(report, out);
  mb__report_print_gpu(report, order, out);
  print_cold(report, order, nw, color, out);
  print_load(report, order, nw, color, out);
  print_int8_forms(report, out);
  print_warnings(report, order, color, out);
  print_machine_kinds(report, out);
  free(order);
}
