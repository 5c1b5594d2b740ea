/* What `bench` does with a finished report, shared by a local run and a
 * run merged from other machines (`bench --executor`, `jobs collect`):
 * the table, the recommendation, the results database, crashed
 * conversions' details, the report files, and the exit code. */
#include "cli/cli_common.h"
#include "db/results_db.h"

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
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
    fprintf(stderr, "--- %s: log %s (last %d lines) ---\n", conversion, path,
            lines);
    fwrite(start, 1, (size_t)(text + size - start), stderr);
    if (text[size - 1] != '\n')
      fputc('\n', stderr);
  }
  free(data);
}

static bool is_failure(const mb_cli_report_output *o,
                       const mb_bench_result *r) {
  if (r->status == MB_BENCH_OK)
    return false;
  if (r->status == MB_BENCH_UNAVAILABLE)
    return o->explicit_conversions;
  return true;
}

static void print_details(const mb_cli_report_output *o,
                          const mb_bench_report *report) {
  bool debug = o->log_level >= MB_LOG_DEBUG;
  for (int i = 0; i < report->n_results; i++) {
    const mb_bench_result *r = &report->results[i];
    bool failed = r->status != MB_BENCH_OK &&
                  r->status != MB_BENCH_UNAVAILABLE &&
                  r->status != MB_BENCH_SKIPPED;
    if (o->traceback && r->status == MB_BENCH_CRASHED && r->backtrace)
      fprintf(stderr, "--- %s: %s ---\n%s%s", r->conversion, r->error,
              r->backtrace,
              r->backtrace[0] && r->backtrace[strlen(r->backtrace) - 1] != '\n'
                  ? "\n"
                  : "");
    if (debug || (o->traceback && failed))
      print_log_tail(r->conversion, r->log_path, debug ? 200 : 20);
  }
}

int mb__cli_report_show(const mb_cli_report_output *o,
                        const mb_bench_report *report, bool color) {
  mb_error err;
  mb_bench_report_print_table(report, stdout, isatty(STDOUT_FILENO) && color);
  fflush(stdout);
  mb_recommend_options ropts = {o->predicted_ms};
  mb_recommendations rec;
  mb_bench_recommend(report, &ropts, &rec);
  if (rec.summary[0])
    printf("\n%s\n", rec.summary);
  fflush(stdout);
  if (!o->no_record) {
    int64_t run_id = 0;
    char db_path[PATH_MAX];
    if (mb__db_record_report(o->cache_dir, report, o->labels, o->n_labels,
                             &run_id, db_path, sizeof db_path,
                             &err) == MB_STATUS_OK)
      mb__log(MB_LOG_INFO, "recorded as run %lld in %s", (long long)run_id,
              db_path);
    else
      mb__cli_error(NULL, "warning: run not recorded: %s", err.message);
  }
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
