/* The Markdown report, for a CI comment or a pull request (GitHub-flavoured
 * tables). Per model: a heading, one table row per conversion in the
 * console table's order (ok rows by median, then the others), the
 * failures with their errors, the warnings, the recommendation and one
 * line about the machine and the settings.
 *
 * Names and paths go into code spans (so ORT_CPU stays readable in the
 * source) and free text (errors, warnings, the summary) is backslash-
 * escaped, so nothing in a model path or an error message can start a
 * table cell, a link, an HTML tag or emphasis. Inside table rows a '|'
 * becomes "\|" in both. */
#include "report/report_util.h"

#include <math.h>
#include <stdlib.h>

/* ASCII punctuation that means something in the middle of a line to a
 * GitHub renderer (emphasis, code, links, HTML, tables, strike-through,
 * entities, math); CommonMark lets any of it be escaped with a backslash.
 * Free text never starts a line here, so list and heading markers are
 * harmless and '.' or '-' stay readable. */
#define MD_SPECIAL "\\`*_[]<>|~&$"

/* Control characters (newlines included) would end a table row or a list
 * item: they become spaces. */
static int printable(int c) {
  return (c >= 0 && c < 0x20) || c == 0x7f ? ' ' : c;
}

/* Multi-byte UTF-8 goes through as is, invalid bytes become U+FFFD;
 * returns the bytes consumed, 0 when *s is ASCII for the caller. */
static size_t put_non_ascii(FILE *f, const char *s) {
  size_t n = mb__report_utf8_length(s);
  if (n == 1)
    return 0;
  if (n == 0) {
    fputs(MB_REPORT_REPLACEMENT_CHAR, f);
    return 1;
  }
  fwrite(s, 1, n, f);
  return n;
}

/* Free text, escaped. */
static void put_text(FILE *f, const char *s) {
  while (s && *s) {
    size_t n = put_non_ascii(f, s);
    if (n) {
      s += n;
      continue;
    }
    int c = printable((unsigned char)*s++);
    if (c != ' ' && strchr(MD_SPECIAL, c))
      fputc('\\', f);
    fputc(c, f);
  }
}

/* A code span: fenced with one backtick more than the longest run inside,
 * padded with a space when the content touches a backtick. In a table row
 * '|' still splits cells, so it is escaped there (GFM then shows '|'). */
static void put_code(FILE *f, const char *s, bool in_table) {
  if (!s || !s[0])
    s = "?";
  int longest = 0, run = 0;
  for (const char *p = s; *p; p++) {
    run = *p == '`' ? run + 1 : 0;
    longest = MB_MAX(longest, run);
  }
  size_t n = strlen(s);
  bool pad = s[0] == '`' || s[n - 1] == '`' || s[0] == ' ';
  for (int i = 0; i <= longest; i++)
    fputc('`', f);
  if (pad)
    fputc(' ', f);
  while (*s) {
    size_t len = put_non_ascii(f, s);
    if (len) {
      s += len;
      continue;
    }
    int c = printable((unsigned char)*s++);
    if (in_table && c == '|')
      fputc('\\', f);
    fputc(c, f);
  }
  if (pad)
    fputc(' ', f);
  for (int i = 0; i <= longest; i++)
    fputc('`', f);
}

static void write_header(FILE *f, const mb_bench_report *report) {
  fputs("## ", f);
  put_code(f, report->model_path[0] ? report->model_path : "?", false);
  if (report->sweep_point[0]) {
    fputs(" at ", f);
    put_code(f, report->sweep_point, false);
  }
  fputs("\n\n", f);
  if (report->model_sha256[0])
    fprintf(f, "sha256 `%.12s`", report->model_sha256);
  for (int i = 0; i < report->n_inputs && report->inputs; i++) {
    const mb_input_shape *s = &report->inputs[i];
    char shape[256];
    mb__shape_str(s->rank, s->dims, shape, sizeof shape);
    fputs(i == 0 ? (report->model_sha256[0] ? "; inputs: " : "Inputs: ") : ", ",
          f);
    put_code(f, s->name ? s->name : "?", false);
    fputc(' ', f);
    put_text(f, report->input_dtypes ? mb_dtype_name(report->input_dtypes[i])
                                     : "");
    put_text(f, shape);
  }
  if (report->model_sha256[0] || report->n_inputs > 0)
    fputs("\n\n", f);
}

static void write_row(FILE *f, const mb_bench_report *report, int index,
                      const mb_recommendations *rec) {
  const mb_bench_result *r = &report->results[index];
  bool numbers = mb__report_has_median(r);
  char median[32] = "-", p90[32] = "-", sps[32] = "-", speedup[48] = "-",
       err[48] = "-", mem[32] = "-";
  if (numbers) {
    mb__report_format_ms(median, sizeof median, r->latency_ms.median);
    mb__report_format_ms(p90, sizeof p90, r->latency_ms.p90);
    mb__report_format_sps(sps, sizeof sps, r->throughput_sps);
    if (r->speedup_vs_baseline > 0 && isfinite(r->speedup_vs_baseline))
      snprintf(speedup, sizeof speedup, "%.2fx", r->speedup_vs_baseline);
    if (index == report->baseline_result)
      snprintf(speedup + strlen(speedup), sizeof speedup - strlen(speedup),
               "%s", r->speedup_vs_baseline > 0 ? " (base)" : "(base)");
    if (r->has_accuracy) {
      mb__report_format_err(err, sizeof err, mb__report_max_abs_err(r));
      if (!mb__report_is_accurate(r))
        snprintf(err + strlen(err), sizeof err - strlen(err), " (inaccurate)");
    } else {
      snprintf(err, sizeof err, "n/a");
    }
    if (isfinite(r->peak_rss_mb) && r->peak_rss_mb > 0)
      snprintf(mem, sizeof mem, "%.1f", r->peak_rss_mb);
  }
  bool best = index == rec->fastest_accurate;
  fputs("| ", f);
  if (best)
    fputs("**", f);
  put_code(f, r->conversion, true);
  if (best)
    fputs("**", f);
  /* The numbers are ours and need no escaping (no '|' in them). */
  fprintf(f, " | %s | %s | %s | %s | %s | %s | %s |\n",
          mb_bench_status_name(r->status), median, p90, sps, speedup, err, mem);
}

/* What each load run measured, one line per conversion. */
static void write_load(FILE *f, const mb_bench_report *report,
                       const int *order) {
  const mb_load_config *c = &report->config.load;
  bool any = false;
  for (int k = 0; k < report->n_results; k++) {
    const mb_bench_result *r = &report->results[order[k]];
    const mb_load_stats *l = &r->load;
    if (l->scenario == MB_LOAD_NONE || l->queries <= 0 ||
        r->status != MB_BENCH_OK)
      continue;
    if (!any)
      fprintf(f,
              "\n**Load** (%s; latency from each query's scheduled "
              "arrival)\n\n",
              mb_load_scenario_name(l->scenario));
    any = true;
    char line[1024];
    int n = snprintf(line, sizeof line, "concurrency %d, ", l->concurrency);
    if (l->scenario == MB_LOAD_SERVER && n > 0)
      n += snprintf(line + n, sizeof line - (size_t)n, "target %.4g QPS, ",
                    l->target_qps);
    if (n > 0)
      n += snprintf(line + n, sizeof line - (size_t)n,
                    "achieved %.4g QPS, p99 %.4g ms", l->achieved_qps,
                    r->latency_ms.p99);
    if (l->scenario == MB_LOAD_SERVER && n > 0)
      n += snprintf(line + n, sizeof line - (size_t)n,
                    " (ideal queue %.4g ms%s), generator lateness p99 %.1f "
                    "us, hand-off p99 %.1f us",
                    l->ideal_p99_ms,
                    l->harness_excess ? ", exceeded: see warnings" : "",
                    l->generator_lateness_us.p99, l->handoff_us.p99);
    if (l->slo_met >= 0 && n > 0)
      n += snprintf(line + n, sizeof line - (size_t)n,
                    ", SLO p%g <= %g ms %s (%.1f%% over)", c->slo_percentile,
                    c->slo_ms, l->slo_met ? "met" : "missed",
                    100.0 * l->over_slo_share);
    if (l->n_trials > 0 && n > 0)
      n += snprintf(line + n, sizeof line - (size_t)n,
                    ", peak %.4g QPS (%d runs)", l->peak_qps, l->n_trials);
    if (n > 0)
      snprintf(
          line + n, sizeof line - (size_t)n, ", %s%s",
          l->valid ? "valid" : "INVALID: ", l->valid ? "" : l->invalid_reason);
    fputs("- ", f);
    put_code(f, r->conversion, false);
    fputs(": ", f);
    put_text(f, line);
    fputc('\n', f);
  }
}

static void write_failures(FILE *f, const mb_bench_report *report,
                           const int *order) {
  bool any = false;
  for (int k = 0; k < report->n_results; k++) {
    const mb_bench_result *r = &report->results[order[k]];
    if (r->status == MB_BENCH_OK || r->status == MB_BENCH_BUILT)
      continue;
    if (!any)
      fputs("\n**Failures**\n\n", f);
    any = true;
    fputs("- ", f);
    put_code(f, r->conversion, false);
    fprintf(f, " (%s): ", mb_bench_status_name(r->status));
    put_text(f, r->error[0] ? r->error : "no message");
    fputc('\n', f);
  }
}

static void write_warnings(FILE *f, const mb_bench_report *report,
                           const int *order) {
  bool any = false;
  for (int k = 0; k < report->n_results; k++) {
    const mb_bench_result *r = &report->results[order[k]];
    for (int w = 0; w < r->n_warnings && r->warnings; w++) {
      if (!r->warnings[w])
        continue;
      if (!any)
        fputs("\n**Warnings**\n\n", f);
      any = true;
      fputs("- ", f);
      put_code(f, r->conversion, false);
      fputs(": ", f);
      put_text(f, r->warnings[w]);
      fputc('\n', f);
    }
  }
}

static void write_machine(FILE *f, const mb_bench_report *report) {
  const mb_machine_info *m = &report->machine;
  const mb_bench_config *c = &report->config;
  char line[1024];
  int n = snprintf(line, sizeof line, "%s, %d cores",
                   m->cpu_model[0] ? m->cpu_model : "unknown CPU", m->cores);
  if (m->os[0] && n > 0 && (size_t)n < sizeof line)
    n += snprintf(line + n, sizeof line - (size_t)n, ", %s", m->os);
  if (m->governor[0] && n > 0 && (size_t)n < sizeof line)
    n += snprintf(line + n, sizeof line - (size_t)n, ", governor %s",
                  m->governor);
  if (isfinite(m->load_average) && m->load_average >= 0 && n > 0 &&
      (size_t)n < sizeof line)
    snprintf(line + n, sizeof line - (size_t)n, ", load %.2f", m->load_average);
  int batch = c->batch_size;
  for (int i = 0; i < report->n_results && report->results; i++)
    if (report->results[i].batch_size > 0) {
      batch = report->results[i].batch_size;
      break;
    }
  fputs("\n_Machine:_ ", f);
  put_text(f, line);
  snprintf(line, sizeof line,
           "threads %d, batch %d, warm-up %d / %g s, at least %d iterations "
           "/ %g s, rtol %g, atol %g, %s",
           c->threads, batch, c->warmup_iterations, c->warmup_seconds,
           c->min_iterations, c->min_seconds, c->rtol, c->atol,
           c->isolate ? "isolated" : "in-process");
  fputs(". _Settings:_ ", f);
  put_text(f, line);
  fputs(".\n", f);
}

static mb_status write_model(FILE *f, const mb_bench_report *report,
                             mb_error *err) {
  write_header(f, report);
  if (report->n_results <= 0 || !report->results) {
    fputs("No conversions were run.\n", f);
    write_machine(f, report);
    return MB_STATUS_OK;
  }
  int *order = malloc(sizeof *order * (size_t)report->n_results);
  if (!order)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "Markdown report: out of memory");
  mb__report_sort_rows(report, order);
  mb_recommendations rec;
  mb_bench_recommend(report, NULL, &rec);

  fputs("| conversion | status | median ms | p90 ms | samples/s | speed-up | "
        "max abs err | peak MB |\n",
        f);
  fputs("| :--- | :--- | ---: | ---: | ---: | ---: | ---: | ---: |\n", f);
  for (int k = 0; k < report->n_results; k++)
    write_row(f, report, order[k], &rec);
  write_load(f, report, order);
  write_failures(f, report, order);
  write_warnings(f, report, order);
  fputs("\n**Recommendation:** ", f);
  put_text(f, rec.summary);
  fputc('\n', f);
  write_machine(f, report);
  free(order);
  return MB_STATUS_OK;
}

mb_status mb_bench_reports_write_markdown(const mb_bench_report *const *reports,
                                          int n, const char *path,
                                          mb_error *err) {
  if (n < 0 || (n > 0 && !reports))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "Markdown report: no reports given");
  mb_report_file rf;
  mb_status status = mb__report_file_open(&rf, path, "Markdown report", err);
  if (status)
    return status;
  fprintf(rf.f, "# modelbench report\n\n%d model%s, modelbench %s.\n", n,
          n == 1 ? "" : "s",
          n > 0 && reports[0] && reports[0]->tool_version[0]
              ? reports[0]->tool_version
              : MB_VERSION_STRING);
  for (int m = 0; m < n; m++) {
    if (!reports[m])
      continue;
    fputc('\n', rf.f);
    if ((status = write_model(rf.f, reports[m], err))) {
      mb__report_file_abort(&rf);
      return status;
    }
  }
  return mb__report_file_commit(&rf, err);
}
