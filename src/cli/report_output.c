/* What `bench` does with a finished report, shared by a local run and a
 * run merged from other machines (`bench --executor`, `jobs collect`):
 * the table, the recommendation, the results database, crashed
 * conversions' details, the report files, and the exit code. */
#include "cli/cli_common.h"
#include "db/results_db.h"

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Prints the last `lines` lines of a log file to stderr. */
static void print_log_tail(const char *conversion, const char *path,
                           int lines) {
  void *data = NULL;
  size_t size = 0;
  if (!path || !path[0] || mb__read_file(path, &data, &size, NULL))
    return;
  const char *text = data, *start = text + size;
  int seen = 0;
  if (start > text && start[-1] == '\n')
    start--;
  while (start > text && !(start[-1] == '\n' && ++seen == lines))
    start--;
  if (size > 0) {
    char name[MB_TERM_TEXT_SIZE], safe_path[MB_TERM_TEXT_SIZE];
    fprintf(stderr, "--- %s: log %s (last %d lines) ---\n",
            mb__term_text(conversion, name, sizeof name),
            mb__term_text(path, safe_path, sizeof safe_path), lines);
    fwrite(start, 1, (size_t)(text + size - start), stderr);
    if (text[size - 1] != '\n')
      fputc('\n', stderr);
  }
  free(data);
}

static bool is_failure(const mb_cli_report_output *o,
                       const mb_bench_result *r) {
  if (r->status == MB_BENCH_OK || r->status == MB_BENCH_BUILT)
    return false;
  if (r->status == MB_BENCH_UNAVAILABLE)
    return o->explicit_conversions;
  return true;
}

static void print_details(const mb_cli_report_output *o,
                          const mb_bench_report *report) {
  bool debug = o->log_level >= MB_LOG_DEBUG;
  char name[MB_TERM_TEXT_SIZE], error[MB_TERM_TEXT_SIZE];
  for (int i = 0; i < report->n_results; i++) {
    const mb_bench_result *r = &report->results[i];
    bool failed = mb_bench_status_failed(r->status);
    if (o->traceback && r->status == MB_BENCH_CRASHED && r->backtrace)
      fprintf(stderr, "--- %s: %s ---\n%s%s",
              mb__term_text(r->conversion, name, sizeof name),
              mb__term_text(r->error, error, sizeof error), r->backtrace,
              r->backtrace[0] && r->backtrace[strlen(r->backtrace) - 1] != '\n'
                  ? "\n"
                  : "");
    if (debug || (o->traceback && failed))
      print_log_tail(r->conversion, r->log_path, debug ? 200 : 20);
  }
}

/* Whether one of labels[0..n) has the key of "key=value" `label`. */
static bool has_key(const char *const *labels, int n, const char *label) {
  size_t len = strcspn(label, "=");
  for (int i = 0; i < n; i++)
    if (strncmp(labels[i], label, len) == 0 && labels[i][len] == '=')
      return true;
  return false;
}

/* Stores the run in the results database with its labels: --label, then
 * the report's own (a manifest's: a script's `# labels:`), then, for a
 * model a script ran, "script=PATH" and "location=FILE:LINE", so that
 * `history --label script=PATH` finds a script's runs. */
static void record_run(const mb_cli_report_output *o,
                       const mb_bench_report *report) {
  mb_error err;
  int64_t run_id = 0;
  char db_path[PATH_MAX];
  char script[sizeof report->model_script + 8];
  char location[sizeof report->model_location + 10];
  const char **labels =
      malloc(sizeof *labels * (size_t)(o->n_labels + report->n_labels + 4));
  if (!labels) {
    mb__cli_error(NULL, "warning: run not recorded: out of memory");
    return;
  }
  int n = 0;
  for (int i = 0; i < o->n_labels; i++)
    labels[n++] = o->labels[i];
  for (int i = 0; report->labels && i < report->n_labels; i++)
    if (!has_key(labels, n, report->labels[i]))
      labels[n++] = report->labels[i];
  snprintf(script, sizeof script, "script=%s", report->model_script);
  snprintf(location, sizeof location, "location=%s", report->model_location);
  if (report->model_script[0] && !has_key(labels, n, script))
    labels[n++] = script;
  if (report->model_location[0] && !has_key(labels, n, location))
    labels[n++] = location;
  /* scenario=... for a load run, sweep=... for a sweep's point, so
   * `history` tells the runs apart. */
  char scenario[64], point[sizeof report->sweep_point + 8];
  snprintf(scenario, sizeof scenario, "scenario=%s",
           mb_load_scenario_name(report->config.load.scenario));
  snprintf(point, sizeof point, "sweep=%s", report->sweep_point);
  if (report->config.load.scenario != MB_LOAD_NONE &&
      !has_key(labels, n, scenario))
    labels[n++] = scenario;
  if (report->sweep_point[0] && !has_key(labels, n, point))
    labels[n++] = point;
  if (mb__db_record_report(o->cache_dir, report, labels, n, &run_id, db_path,
                           sizeof db_path, &err) == MB_STATUS_OK)
    mb__log(MB_LOG_INFO, "recorded as run %lld in %s", (long long)run_id,
            db_path);
  else
    mb__cli_error(NULL, "warning: run not recorded: %s", err.message);
  free(labels);
}

int mb__cli_report_show(const mb_cli_report_output *o,
                        const mb_bench_report *report, bool color) {
  mb_bench_report_print_table(report, stdout, isatty(STDOUT_FILENO) && color);
  fflush(stdout);
  mb_recommend_options ropts = {o->predicted_ms};
  char safe[MB_TERM_TEXT_SIZE];
  mb_recommendations rec;
  mb_bench_recommend(report, &ropts, &rec);
  /* A server's or offline run's latency depends on the load it was given:
   * the fastest median is no answer there (the SLO's is). */
  mb_load_scenario scenario = report->config.load.scenario;
  if (rec.summary[0] && scenario != MB_LOAD_SERVER &&
      scenario != MB_LOAD_OFFLINE)
    printf("\n%s\n", mb__term_text(rec.summary, safe, sizeof safe));
  fflush(stdout);
  /* A build-only run measured nothing: the history is for measurements. */
  if (!o->no_record && !report->config.build_only)
    record_run(o, report);
  print_details(o, report);
  int rc = MB_EXIT_OK;
  for (int i = 0; i < report->n_results; i++)
    if (is_failure(o, &report->results[i]))
      rc = MB_EXIT_FAILURE;
  return rc;
}

int mb__cli_reports_write(const mb_cli_report_output *o,
                          mb_bench_report *const *reports, int n) {
  static const struct {
    size_t path_offset;
    mb_status (*write)(const mb_bench_report *const *, int, const char *,
                       mb_error *);
  } writers[] = {
      {offsetof(mb_cli_report_output, json_path), mb_bench_reports_write_json},
      {offsetof(mb_cli_report_output, csv_path), mb_bench_reports_write_csv},
      {offsetof(mb_cli_report_output, markdown_path),
       mb_bench_reports_write_markdown},
      {offsetof(mb_cli_report_output, html_path), mb_bench_reports_write_html},
  };
  int rc = MB_EXIT_OK;
  mb_error err;
  if (n == 0)
    return rc;
  for (size_t i = 0; i < MB_ARRAY_COUNT(writers); i++) {
    const char *path =
        *(const char *const *)((const char *)o + writers[i].path_offset);
    if (path && writers[i].write((const mb_bench_report *const *)reports, n,
                                 path, &err) != MB_STATUS_OK)
      rc = mb__cli_fail(NULL, &err);
  }
  return rc;
}
