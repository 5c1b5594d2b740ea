/* Shared pieces of the report writers (CSV, Markdown, HTML) and the
 * recommendations: atomic output files, the row order, what is known about
 * a result (precision, accuracy aggregates, whether it is accurate) and
 * percentiles of its raw samples. Everything here is a pure function of
 * the public result structs, like the writers themselves. */
#ifndef MB_REPORT_REPORT_UTIL_H
#define MB_REPORT_REPORT_UTIL_H

#include "core/files.h"
#include "core/internal.h"

/* The cosine similarity a reduced-precision result (fp16, bf16, int8) must
 * reach on every output to count as accurate. */
#define MB_REPORT_MIN_COSINE 0.999

/* The worker's warning when some output values fall outside the run's
 * rtol/atol (src/bench/worker.c, check_accuracy): an fp32 result carrying
 * it is not accurate. */
#define MB_REPORT_MISMATCH_WARNING "values differ from the reference"
/* A warning starting with this word marks a result inaccurate whatever its
 * precision (the "inaccurate flag" of mb_bench_recommend's contract). */
#define MB_REPORT_INACCURATE_PREFIX "inaccurate"

/* An output file that readers only ever see complete: it is written to a
 * temporary name beside the target and renamed over it by
 * mb__report_file_commit. `what` names the format in error messages
 * ("CSV report") and must be a static string. */
typedef struct mb_report_file {
  FILE *f;           /* af.f: write the report here */
  mb_atomic_file af; /* core/files.h: O_EXCL|O_NOFOLLOW, then rename */
} mb_report_file;

mb_status mb__report_file_open(mb_report_file *rf, const char *path,
                               const char *what, mb_error *err);
/* Flushes, closes and renames into place; on failure removes the
 * temporary file. Always releases rf. */
mb_status mb__report_file_commit(mb_report_file *rf, mb_error *err);
/* Closes and removes the temporary file (after a failed write). */
void mb__report_file_abort(mb_report_file *rf);

/* Length of the valid UTF-8 sequence starting at s (1 for ASCII), or 0
 * when the byte there does not start one: writers then put
 * MB_REPORT_REPLACEMENT_CHAR and go on with the next byte, so every report
 * is valid UTF-8 whatever a runtime wrote into an error message. */
size_t mb__report_utf8_length(const char *s);
#define MB_REPORT_REPLACEMENT_CHAR "\xef\xbf\xbd" /* U+FFFD */

/* One CSV field (RFC 4180): quoted when it holds a comma, quote, CR or LF
 * or starts or ends with a blank; quotes doubled; invalid UTF-8 replaced.
 * A MB_CSV_TEXT cell that a spreadsheet would read as a formula (it starts
 * with '=', '+', '-', '@', tab or CR) gets a leading single quote, as
 * OWASP recommends: the spreadsheet shows it as text and never evaluates
 * it. A MB_CSV_NUMBER cell (a number the writer formatted itself, such as
 * -0.5) is written as it is, so it stays a number. Writes no separator. */
typedef enum mb_csv_cell { MB_CSV_TEXT, MB_CSV_NUMBER } mb_csv_cell;
void mb__report_csv_cell(FILE *f, const char *s, mb_csv_cell kind);

/* The result's conversion name, "?" when it has none. */
const char *mb__report_name(const mb_bench_result *r);

/* The conversion's precision: from the registry row the result points to
 * (when it still has the same name), else from the row of that name, else
 * from the name's steps (FP16+..., BF16+..., INT8_...+...). *known_out (may
 * be NULL) is false when nothing says: the result is then taken as fp32. */
mb_precision mb__report_precision(const mb_bench_result *r, bool *known_out);

/* Ok with a finite, non-negative median: the rows that get numbers, bars
 * and recommendations. */
bool mb__report_has_median(const mb_bench_result *r);

/* What a build-only result (MB_BENCH_BUILT) did, in words: "built in
 * 812 ms (cached), loaded in 40 ms, peak 95.2 MB" or "from the cache,
 * ...". buf: caller-owned. Returns buf. */
const char *mb__report_built_text(const mb_bench_result *r, char *buf,
                                  size_t size);

/* Worst absolute error over all outputs: < 0 when unknown, NaN when an
 * output's error is NaN. */
double mb__report_max_abs_err(const mb_bench_result *r);
/* Lowest cosine over all outputs: NaN when unknown or any output's cosine
 * is NaN. */
double mb__report_min_cosine(const mb_bench_result *r);

/* The criterion the result's outputs were judged by: the worker's
 * (result->accuracy_criterion), else (a report from before the field) by
 * precision: TOLERANCE for fp32, COSINE for reduced precisions. */
mb_accuracy_criterion mb__report_criterion(const mb_bench_result *r);

/* The accuracy rule of mb_bench_recommend (see recommend.c): status ok,
 * accuracy known, no `inaccurate` warning, and per criterion
 * (mb__report_criterion) TOLERANCE: no output outside the run's rtol/atol
 * (the worker's elementwise check) and no NaN error; COSINE (fp16, bf16,
 * int8, every conversion of a pre-quantised model): every output's cosine
 * >= 0.999. */
bool mb__report_is_accurate(const mb_bench_result *r);

/* Fills order[0 .. n_results-1]: ok rows by median (ties keep request
 * order, rows without a median last among them), then every other row in
 * request order. The console table uses the same order. */
void mb__report_sort_rows(const mb_bench_report *report, int *order);

/* Kinds of machine (cpu_model and cores) the results ran on: a run spread
 * over machines may mix them, and their latencies do not compare.
 * kind_out (n_results entries, may be NULL): each result's kind from 0 in
 * order of first appearance, -1 for a result that never ran anywhere
 * (no machine recorded). Returns the number of kinds. */
int mb__report_machine_kinds(const mb_bench_report *report, int *kind_out);

/* Energy and cost (--price-per-core-hour) and the cold start (--cold):
 * whether any result of the report has them, and a result's energy in
 * words: "0.0123 J" or "n/a: why". buf: caller-owned; returns buf. */
bool mb__report_any_cost_or_energy(const mb_bench_report *report);
bool mb__report_any_cold(const mb_bench_report *report);
const char *mb__report_energy_text(const mb_bench_result *r, char *buf,
                                   size_t size);
/* The reason every ok result gives for having no energy figure, when they
 * all give the same one (a machine without RAPL); NULL otherwise. */
const char *mb__report_common_energy_reason(const mb_bench_report *report);
/* The ok result with the lowest cost per million inferences among the
 * accurate ones (mb__report_is_accurate), or -1 when none has a cost. */
int mb__report_cheapest(const mb_bench_report *report);

/* Percentile p (0..100) of the samples, interpolating linearly between the
 * closest ranks (as src/bench/stats.c does). Non-finite samples are
 * ignored. False when no finite sample is left or memory runs out. */
bool mb__report_percentiles(const double *samples, int64_t n, const double *p,
                            int n_p, double *values_out);

/* The latency spread drawn as a whisker: p10 and p90 of the raw samples,
 * or min and p90 of the stats when there are no samples. False when
 * neither is known. */
bool mb__report_spread(const mb_bench_result *r, double *lo_out,
                       double *hi_out);

/* The conversion people get when they do not choose: EAGER for a PyTorch
 * model (the module as written), else ORT_CPU. */
const char *mb__report_default_conversion(const mb_bench_report *report);

/* The latency at percentile p (0..100] of an ok result: from its raw
 * samples, else from its stats at 50/90/95/99. False when unknown. */
bool mb__report_latency_at(const mb_bench_result *r, double p, double *out);

/* Requests (samples) per second the result serves with its latency within
 * the SLO (p-th percentile <= slo_ms), at accuracy; 0 when it misses the
 * SLO, is INVALID, not accurate or did not run. Server runs: the peak QPS
 * of find-peak, else the achieved QPS of a valid run within the SLO;
 * other runs: their samples per second when their latency is within it.
 * A query of batch B counts B requests. */
double mb__report_served_qps(const mb_bench_result *r, double p, double slo_ms);

/* Short number formats shared by the Markdown and HTML tables; "-" when
 * unknown. */
void mb__report_format_ms(char *buf, size_t size, double ms);
void mb__report_format_sps(char *buf, size_t size, double sps);
void mb__report_format_err(char *buf, size_t size, double err);

/* Labels ("key=value"): the value of `key` in the report, NULL when the
 * report has no such label; and the distinct keys of every report, in the
 * order first seen, into keys (at most max; the count is returned). The
 * keys are "key" prefixes of the reports' labels: keys[i] points into a
 * label and keys_len[i] is its length. */
const char *mb__report_label(const mb_bench_report *report, const char *key,
                             size_t key_len);
int mb__report_label_keys(const mb_bench_report *const *reports, int n,
                          const char **keys, size_t *keys_len, int max);

/* ---- HTML pieces (html.c) for the sweep charts (html_sweep.c) ---- */

/* Writes at most max_chars characters of s (all when < 0) escaped for
 * element text and attributes. Returns true when s was cut. */
bool mb__html_put_n(FILE *f, const char *s, int max_chars, bool keep_newlines);
/* s as a fragment of an id: letters, digits, '-' and '_' as they are,
 * every other byte as "_xx". buf: caller-owned, cut to size. Returns buf. */
const char *mb__html_id_part(const char *s, char *buf, size_t size);
/* ` attr="1.23"` for a data-* attribute, `attr=""` when not finite. */
void mb__html_put_number(FILE *f, const char *attr, double v);
/* A round axis end above max (1, 2 or 5 times a power of ten per tick). */
double mb__html_nice_axis(double max, double *step_out);
/* The page's CSS (colours, tables, charts), shared by the tune page
 * (html_tune.c). */
extern const char mb__html_page_style[];
/* 'sha256-BASE64' of "\n" a b: the CSP source naming an inline <style> or
 * <script> whose text is "\n" a b. */
void mb__html_put_csp_hash(FILE *f, const char *a, const char *b);
/* The plot area of the sweep section's line charts (html_sweep.c) and of
 * its CPU-or-GPU chart (html_crossover.c), in SVG units, and the mapping
 * of data to it: x from x0 to x1 (log2 when log_x), y from 0 to y1. */
#define MB_HTML_PLOT_LEFT 64
#define MB_HTML_PLOT_RIGHT 540
#define MB_HTML_PLOT_TOP 14
#define MB_HTML_PLOT_BOTTOM 246
typedef struct mb_html_frame {
  double x0, x1, y1; /* data ranges (y from 0) */
  bool log_x;
} mb_html_frame;
double mb__html_frame_x(const mb_html_frame *fr, double x);
double mb__html_frame_y(const mb_html_frame *fr, double y);
/* CSS of the line charts, part of the page's one <style>. */
extern const char mb__html_sweep_style[];
/* When reports[m] starts a run of reports of one model that a sweep made
 * (or that hold load runs), writes their section: line charts of latency
 * and throughput against the swept settings, latency against QPS for
 * server runs, one table row per point and conversion, and the SLO
 * recommendation. Otherwise writes nothing. */
void mb__html_write_sweep(FILE *f, const mb_bench_report *const *reports, int n,
                          int m);

/* ---- GPU results (gpu_report.c) ---- */

/* Does the report hold an ok result that ran on a GPU? */
bool mb__report_any_gpu(const mb_bench_report *report);
/* One line (console), one table row (HTML: <table id="gpu-MODEL">;
 * Markdown) per ok GPU result, in order (NULL: the report's): GPU, end to
 * end vs device time, copies, host latency, peak memory, NVML's state.
 * Nothing when there is none. */
void mb__report_print_gpu(const mb_bench_report *report, const int *order,
                          FILE *out);
void mb__html_write_gpu(FILE *f, const mb_bench_report *report, int model,
                        const int *order);
void mb__markdown_write_gpu(FILE *f, const mb_bench_report *report,
                            const int *order);

/* The roofline chart of one model's section (html_roofline.c): its
 * peaks' roofs and a point per result placed on them, or a line saying
 * why there is none. */
void mb__html_write_roofline(FILE *f, const mb_bench_report *report, int model);

/* Whether two reports measure the same workload: the same model and the
 * same symbolic dimensions (--dim, dim: sweeps); batch, threads and load
 * settings may differ (they are what a recommendation chooses). */
bool mb__report_same_workload(const mb_bench_report *a,
                              const mb_bench_report *b);

/* The reports of reports[0..n) with the workload of reports[i], in order,
 * into sel (n slots); returns how many, or 0 when an earlier report has
 * that workload (its group was already taken). */
int mb__report_workload_group(const mb_bench_report *const *reports, int n,
                              int i, const mb_bench_report **sel);

/* ---- the tune page (html_tune.c) ---- */

/* The accuracy-vs-latency Pareto front of n points: the indices of those
 * that no other point beats on both latency and error (one lower, the
 * other no higher), by latency ascending (so error descending), into
 * front_out (n slots, also used as scratch). Points with the same latency
 * and error appear once (the lowest index). A point whose latency is not
 * finite and > 0, or whose error is not finite and >= 0 (NaN, or negative
 * for unknown), is skipped. Returns the front's size. */
int mb__tune_front(const double *latency_ms, const double *error, int n,
                   int *front_out);

/* ---- the CPU-or-GPU answer over a batch sweep (crossover.c) ---- */

/* Where the GPU overtakes the CPU over a sweep's batch sizes. */
typedef enum mb_crossover_kind {
  MB_CROSSOVER_NONE,   /* no batch has an option on both devices */
  MB_CROSSOVER_AT,     /* the GPU is ahead from `batch` on, behind below */
  MB_CROSSOVER_NEVER,  /* the GPU is not ahead at the largest batch */
  MB_CROSSOVER_ALWAYS, /* the GPU is ahead at every batch compared */
} mb_crossover_kind;

/* One result of the sweep as an option; report -1 when there is none. */
typedef struct mb_crossover_option {
  int report, result;   /* indices into reports[] and its results */
  double ms_per_sample; /* copies included on the GPU; NAN when none */
  bool gpu;
} mb_crossover_option;

typedef struct mb_crossover_point {
  int batch;
  mb_crossover_option cpu, gpu; /* the best of each device at this batch */
  /* What to deploy at this batch: the option with the lowest time per
   * sample, among those whose latency meets the target when there is one
   * (report -1: none meets it). */
  mb_crossover_option deploy;
} mb_crossover_point;

typedef struct mb_crossover {
  mb_crossover_kind kind;
  int batch; /* AT: the crossover batch; 0 otherwise */
  int n_points;
  mb_crossover_point *points;    /* by batch ascending; owned */
  double slo_percentile, slo_ms; /* the latency target; 0 without one */
  char summary[1024];            /* the answer in sentences */
} mb_crossover;

/* Whether a result ran on a GPU (gpu.used, or device "cuda..."). */
bool mb__report_on_gpu(const mb_bench_result *r);
/* Whether r (of report rep) is an option of the answer (ok, accurate, a
 * finite time), and then its batch and time per sample with the copies. */
bool mb__crossover_option_of(const mb_bench_report *rep,
                             const mb_bench_result *r, int *batch_out,
                             double *ms_per_sample_out);

/* The CPU-or-GPU answer over reports[0..n) (borrowed), the points of one
 * model's sweep with one workload (mb__report_workload_group): per swept
 * batch, the best CPU and the best GPU option by time per sample with the
 * copies counted (CPU: median latency / batch; GPU: host latency, H2D +
 * device time + D2H, else the median latency, / batch), over ok, accurate
 * results (mb__report_is_accurate); the crossover, the smallest batch from
 * which the GPU stays ahead at every larger batch where both devices have
 * an option; and, under reports[0]'s SLO when it has one, what to deploy
 * at each batch: a GPU option's latency at the SLO's percentile counts its
 * median copies too. Fills *out (release with mb__crossover_free); false
 * when memory runs out (out is then empty, kind NONE). */
bool mb__crossover_find(const mb_bench_report *const *reports, int n,
                        mb_crossover *out);
void mb__crossover_free(mb_crossover *c);

/* The HTML of the answer (html_crossover.c), inside a sweep's section:
 * when c->kind is not NONE, the chart of time per sample against batch
 * (best CPU, best GPU, every option faintly, the crossover marked) and the
 * recommendation. `group`: the section's index; `workload`: the answer's
 * index among the section's workloads. */
void mb__html_write_crossover(FILE *f, const mb_bench_report *const *reports,
                              int n, const mb_crossover *c, int group,
                              int workload);

#endif /* MB_REPORT_REPORT_UTIL_H */
