/* The Markdown report, for a CI comment or a pull request (GitHub-flavoured
 * tables). Per model: a heading, one table row per conversion in the
 * console table's order (ok rows by median, then the others), the
 * failures with their errors, the warnings, the recommendation and one
 * line about the machine and the settings. After the points of a model's
 * sweep that ran on both the CPU and a GPU: the CPU-or-GPU answer
 * (crossover.c) and its table, one row per batch.
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
  const mb_machine_peaks *p = &report->peaks;
  if (p->measured) {
    fprintf(f, "Peaks at %d thread%s: fp32 %.1f GFLOP/s", p->threads,
            p->threads == 1 ? "" : "s", p->fp32_gflops);
    if (p->int8_gops > 0)
      fprintf(f, ", int8 %.1f GOP/s", p->int8_gops);
    if (p->bf16_gflops > 0)
      fprintf(f, ", bf16 %.1f GFLOP/s", p->bf16_gflops);
    fprintf(f, ", memory %.1f GB/s.\n\n", p->bandwidth_gbs);
  }
}

/* Whether any result is placed on the roofline: the % peak and bound
 * columns, as the console's. */
static bool has_roofline(const mb_bench_report *report) {
  for (int i = 0; i < report->n_results; i++)
    if (report->results[i].roofline.bound != MB_ROOFLINE_UNKNOWN)
      return true;
  return false;
}

static void write_row(FILE *f, const mb_bench_report *report, int index,
                      const mb_recommendations *rec) {
  const mb_bench_result *r = &report->results[index];
  bool numbers = mb__report_has_median(r);
  char median[32] = "-", p90[32] = "-", sps[32] = "-", speedup[48] = "-",
       err[48] = "-", mem[32] = "-";
  if (numbers) {
    mb__report_format_ms(median, sizeof median, r->latency_ms.median);
    /* Half the median's 95% interval, as a share of it. */
    if (r->median_ci_ms[0] > 0 && r->latency_ms.median > 0)
      snprintf(median + strlen(median), sizeof median - strlen(median),
               " +-%.1f%%",
               100 * (r->median_ci_ms[1] - r->median_ci_ms[0]) / 2 /
                   r->latency_ms.median);
    mb__report_format_ms(p90, sizeof p90, r->latency_ms.p90);
    mb__report_format_sps(sps, sizeof sps, r->throughput_sps);
    if (r->speedup_vs_baseline > 0 && isfinite(r->speedup_vs_baseline))
      snprintf(speedup, sizeof speedup, "%.2fx", r->speedup_vs_baseline);
    if (index != report->baseline_result && r->speedup_vs_baseline > 0 &&
        r->speedup_ci[0] > 0)
      snprintf(speedup + strlen(speedup), sizeof speedup - strlen(speedup),
               " [%.2f-%.2f]", r->speedup_ci[0], r->speedup_ci[1]);
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
  char share[24] = "-";
  const char *bound = "-";
  if (r->roofline.bound != MB_ROOFLINE_UNKNOWN) {
    snprintf(share, sizeof share, "%.1f%%", 100.0 * r->roofline.peak_share);
    bound = mb_roofline_bound_name(r->roofline.bound);
  }
  /* The numbers are ours and need no escaping (no '|' in them). */
  fprintf(f, " | %s | %s | %s | %s | %s | %s | %s |",
          mb_bench_status_name(r->status), median, p90, sps, speedup, err, mem);
  if (has_roofline(report))
    fprintf(f, " %s | %s |", share, bound);
  fputc('\n', f);
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
    if (l->scenario == MB_LOAD_SERVER && l->steal_ms > 0 && n > 0)
      n += snprintf(line + n, sizeof line - (size_t)n,
                    ", hypervisor steal %.0f ms", l->steal_ms);
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

/* The realistic phases beside the steady state, one line per conversion
 * that ran them. */
static void write_realistic(FILE *f, const mb_bench_report *report,
                            const int *order) {
  bool any = false;
  for (int k = 0; k < report->n_results; k++) {
    const mb_bench_result *r = &report->results[order[k]];
    const mb_realistic_stats *fresh = &r->fresh_inputs, *cold = &r->cold_cache;
    if (r->status != MB_BENCH_OK ||
        (fresh->iterations <= 0 && cold->iterations <= 0))
      continue;
    if (!any)
      fputs("\n**Realistic** (beside the steady state; the gap is the "
            "median's over the steady median)\n\n",
            f);
    any = true;
    char line[512], a[32], b[32];
    int n = 0;
    if (fresh->iterations > 0) {
      mb__report_format_ms(a, sizeof a, fresh->median_ms);
      mb__report_format_ms(b, sizeof b, fresh->p99_ms);
      n = snprintf(line, sizeof line,
                   "fresh inputs %s ms median (%+.1f%%), p99 %s ms, pool of "
                   "%lld samples (%.1f MB)",
                   a, 100 * fresh->gap, b, (long long)fresh->pool_samples,
                   fresh->pool_mb);
    }
    if (cold->iterations > 0 && n >= 0 && (size_t)n < sizeof line) {
      mb__report_format_ms(a, sizeof a, cold->median_ms);
      mb__report_format_ms(b, sizeof b, cold->p99_ms);
      snprintf(line + n, sizeof line - (size_t)n,
               "%scold cache %s ms median (%+.1f%%), p99 %s ms", n ? "; " : "",
               a, 100 * cold->gap, b);
    }
    fputs("- ", f);
    put_code(f, r->conversion, false);
    fputs(": ", f);
    put_text(f, line);
    fputc('\n', f);
  }
}

/* Energy per inference (or why not) and cost per million inferences; a
 * reason every result shares is said once, not per row. */
static void write_cost_energy(FILE *f, const mb_bench_report *report,
                              const int *order) {
  const char *common = mb__report_common_energy_reason(report);
  bool cost = false;
  for (int i = 0; i < report->n_results; i++)
    cost |= report->results[i].cost_per_million > 0;
  if (!mb__report_any_cost_or_energy(report) && !common)
    return;
  fputs("\n**Energy and cost**", f);
  if (report->config.price_per_core_hour > 0)
    fprintf(f, " (cost at %g per core-hour x threads x sessions)",
            report->config.price_per_core_hour);
  fputs("\n\n", f);
  if (common) {
    fputs("Energy per inference unavailable: ", f);
    put_text(f, common);
    fputs("\n", f);
    if (!cost)
      return;
    fputs("\n", f);
  }
  fprintf(f, "| conversion |%s cost per million |\n| :--- |%s ---: |\n",
          common ? "" : " energy per inference |", common ? "" : " :--- |");
  for (int k = 0; k < report->n_results; k++) {
    const mb_bench_result *r = &report->results[order[k]];
    if (r->status != MB_BENCH_OK)
      continue;
    char energy[256], price[32] = "-";
    if (r->cost_per_million > 0)
      snprintf(price, sizeof price, "%.4g", r->cost_per_million);
    fputs("| ", f);
    put_code(f, r->conversion, true);
    if (!common) {
      fputs(" | ", f);
      put_text(f, mb__report_energy_text(r, energy, sizeof energy));
    }
    fprintf(f, " | %s |\n", price);
  }
}

/* --cold: what a first request costs. */
static void write_cold(FILE *f, const mb_bench_report *report,
                       const int *order) {
  if (!mb__report_any_cold(report))
    return;
  fputs("\n**Cold start** (ms; build with the cache rebuilt (miss) and "
        "read back (hit); load: model read + session; steady: iterations "
        "before latency settles)\n\n"
        "| conversion | build miss | build hit | load | first inference | "
        "to steady | first result | first result (miss) |\n"
        "| :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
        f);
  for (int k = 0; k < report->n_results; k++) {
    const mb_bench_result *r = &report->results[order[k]];
    const mb_cold_start *c = &r->cold;
    if (!c->measured)
      continue;
    char miss[32], hit[32], load[32], first[32], steady[32] = "-", ttfr[32],
                                                 ttfr_miss[32];
    mb__report_format_ms(miss, sizeof miss, c->build_miss_ms);
    mb__report_format_ms(hit, sizeof hit, c->build_hit_ms);
    mb__report_format_ms(load, sizeof load, c->load_ms);
    mb__report_format_ms(first, sizeof first, c->first_inference_ms);
    if (c->iterations_to_steady >= 0)
      snprintf(steady, sizeof steady, "%lld",
               (long long)c->iterations_to_steady);
    mb__report_format_ms(ttfr, sizeof ttfr, c->time_to_first_result_ms);
    mb__report_format_ms(ttfr_miss, sizeof ttfr_miss,
                         c->time_to_first_result_miss_ms);
    fputs("| ", f);
    put_code(f, r->conversion, true);
    fprintf(f, " | %s | %s | %s | %s | %s | %s | %s |\n", miss, hit, load,
            first, steady, ttfr, ttfr_miss);
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
  if (c->ci_target > 0) {
    snprintf(line, sizeof line,
             ", until the median's 95%% interval is within +-%g%% (at most "
             "%g s)",
             100 * c->ci_target, c->max_seconds);
    put_text(f, line);
  }
  fputs(".\n", f);
}

/* report->environment in one line: the facts `compare` diffs. */
static void write_environment(FILE *f, const mb_bench_report *report) {
  const mb_environment *e = &report->environment;
  if (!e->recorded)
    return;
  char line[1024];
  snprintf(line, sizeof line,
           "kernel %s, SMT %s, governor %s, %d CPUs allowed, OpenBLAS %s",
           e->kernel[0] ? e->kernel : "unknown", e->smt[0] ? e->smt : "unknown",
           e->governor[0] ? e->governor : "unknown", e->cpus_allowed,
           e->blas[0] ? e->blas : "unknown");
  fputs("\n_Environment:_ ", f);
  put_text(f, line);
  fputs(e->n_variables > 0 && e->variables ? "; " : "; no speed variable set",
        f);
  for (int i = 0; i < e->n_variables && e->variables; i++) {
    fputs(i ? ", " : "", f);
    put_text(f, e->variables[i] ? e->variables[i] : "");
  }
  fputs(".\n", f);
}

static mb_status write_model(FILE *f, const mb_bench_report *report,
                             mb_error *err) {
  write_header(f, report);
  if (report->n_results <= 0 || !report->results) {
    fputs("No conversions were run.\n", f);
    write_machine(f, report);
    write_environment(f, report);
    return MB_STATUS_OK;
  }
  int *order = malloc(sizeof *order * (size_t)report->n_results);
  if (!order)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "Markdown report: out of memory");
  mb__report_sort_rows(report, order);
  mb_recommendations rec;
  mb_bench_recommend(report, NULL, &rec);

  bool roofline = has_roofline(report);
  fprintf(f,
          "| conversion | status | median ms | p90 ms | samples/s | speed-up | "
          "max abs err | peak MB |%s\n",
          roofline ? " % peak | bound |" : "");
  fprintf(f, "| :--- | :--- | ---: | ---: | ---: | ---: | ---: | ---: |%s\n",
          roofline ? " ---: | :--- |" : "");
  for (int k = 0; k < report->n_results; k++)
    write_row(f, report, order[k], &rec);
  write_load(f, report, order);
  write_realistic(f, report, order);
  write_cost_energy(f, report, order);
  mb__markdown_write_gpu(f, report, order);
  write_cold(f, report, order);
  write_failures(f, report, order);
  write_warnings(f, report, order);
  fputs("\n**Recommendation:** ", f);
  put_text(f, rec.summary);
  fputc('\n', f);
  write_machine(f, report);
  write_environment(f, report);
  free(order);
  return MB_STATUS_OK;
}

/* ---- CPU or GPU over a sweep (crossover.c) ---- */

static bool same_model(const mb_bench_report *a, const mb_bench_report *b) {
  return strcmp(a->model_sha256, b->model_sha256) == 0 &&
         strcmp(a->model_path, b->model_path) == 0;
}

/* A best option's cells: its name and time per sample, or "-". */
static void put_option(FILE *f, const mb_bench_report *const *reports,
                       const mb_crossover_option *o) {
  char ms[32];
  if (o->report < 0) {
    fputs(" - | - |", f);
    return;
  }
  fputc(' ', f);
  put_code(f, mb__report_name(&reports[o->report]->results[o->result]), true);
  mb__report_format_ms(ms, sizeof ms, o->ms_per_sample);
  fprintf(f, " | %s |", ms);
}

static void write_crossover_table(FILE *f, const mb_bench_report *const *sel,
                                  const mb_crossover *c) {
  bool slo = c->slo_percentile > 0;
  fprintf(
      f,
      "\n| batch | best CPU | ms/sample | best GPU | ms/sample (copies "
      "incl.) | faster |%s\n| ---: | :--- | ---: | :--- | ---: | :--- |%s\n",
      slo ? " deploy within the SLO |" : "", slo ? " :--- |" : "");
  for (int k = 0; k < c->n_points; k++) {
    const mb_crossover_point *pt = &c->points[k];
    fprintf(f, "| %d |", pt->batch);
    put_option(f, sel, &pt->cpu);
    put_option(f, sel, &pt->gpu);
    const char *faster = "-";
    if (pt->cpu.report >= 0 && pt->gpu.report >= 0)
      faster = pt->gpu.ms_per_sample < pt->cpu.ms_per_sample ? "GPU" : "CPU";
    fprintf(f, " %s |", faster);
    if (slo && pt->deploy.report < 0) {
      fputs(" none |", f);
    } else if (slo) {
      fputc(' ', f);
      put_code(
          f,
          mb__report_name(&sel[pt->deploy.report]->results[pt->deploy.result]),
          true);
      fprintf(f, " (%s) |", pt->deploy.gpu ? "GPU" : "CPU");
    }
    fputc('\n', f);
  }
}

/* After the last report of a model's sweep: per workload whose points ran
 * on both devices, the answer and one row per batch. */
static mb_status write_crossovers(FILE *f, const mb_bench_report *const *g,
                                  int count, mb_error *err) {
  bool sweep = false;
  for (int k = 0; k < count; k++)
    sweep |= g[k]->sweep_point[0] != '\0';
  if (!sweep)
    return MB_STATUS_OK;
  const mb_bench_report **sel = malloc(sizeof *sel * (size_t)count);
  if (!sel)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "Markdown report: out of memory");
  mb_status status = MB_STATUS_OK;
  for (int k = 0; k < count && !status; k++) {
    int n_sel = mb__report_workload_group(g, count, k, sel);
    mb_crossover c;
    if (n_sel == 0)
      continue;
    if (!mb__crossover_find(sel, n_sel, &c)) {
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                         "Markdown report: out of memory");
      break;
    }
    if (c.kind != MB_CROSSOVER_NONE) {
      fputs("\n### CPU or GPU: ", f);
      put_code(f, g[0]->model_path[0] ? g[0]->model_path : "?", false);
      fputs("\n\n**CPU or GPU:** ", f);
      put_text(f, c.summary);
      fputc('\n', f);
      write_crossover_table(f, sel, &c);
    }
    mb__crossover_free(&c);
  }
  free(sel);
  return status;
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
    /* The last point of a model's sweep: the CPU-or-GPU answer. */
    int first = m;
    while (first > 0 && reports[first - 1] &&
           same_model(reports[first - 1], reports[m]))
      first--;
    bool last = m + 1 == n || !reports[m + 1] ||
                !same_model(reports[m + 1], reports[m]);
    if (last && (status = write_crossovers(rf.f, reports + first, m + 1 - first,
                                           err))) {
      mb__report_file_abort(&rf);
      return status;
    }
  }
  return mb__report_file_commit(&rf, err);
}
