/* The GPU side of a report's results, for the console, the HTML page and
 * the Markdown report: one row per conversion that ran on a GPU, with its
 * end-to-end median beside the device's own time, the copies, trtexec's
 * host latency, the peak device memory and NVML's view of the device
 * (clocks, temperature, power, throttling) over the timed phase.
 * Stable HTML hook: <table id="gpu-M" class="results gpu"> with
 * <tr data-conversion>. */
#include "report/report_util.h"

#include <stdio.h>

bool mb__report_any_gpu(const mb_bench_report *report) {
  for (int i = 0; i < report->n_results; i++)
    if (report->results[i].status == MB_BENCH_OK && report->results[i].gpu.used)
      return true;
  return false;
}

/* The columns, in order: a header and a formatter each. */
typedef struct gpu_cells {
  char name[112], e2e[32], compute[32], h2d[48], d2h[48], host[32], peak[32],
      clocks[48], state[256];
} gpu_cells;

static void format_copy(char *buf, size_t size, const mb_latency_stats *s,
                        double mb, int64_t n) {
  if (n <= 0) {
    snprintf(buf, size, "-");
    return;
  }
  char ms[16];
  mb__report_format_ms(ms, sizeof ms, s->median);
  snprintf(buf, size, "%s (%.3g MiB)", ms, mb);
}

static void cells_of(const mb_bench_result *r, gpu_cells *c) {
  const mb_gpu_result *g = &r->gpu;
  const mb_gpu_state *st = &g->state;
  snprintf(c->name, sizeof c->name, "%s%s%s", g->info.name,
           g->info.compute_capability[0] ? " sm_" : "",
           g->info.compute_capability);
  mb__report_format_ms(c->e2e, sizeof c->e2e, r->latency_ms.median);
  if (g->n_compute > 0)
    mb__report_format_ms(c->compute, sizeof c->compute, g->compute_ms.median);
  else
    snprintf(c->compute, sizeof c->compute, "-");
  format_copy(c->h2d, sizeof c->h2d, &g->h2d_ms, g->h2d_mb, g->n_copies);
  format_copy(c->d2h, sizeof c->d2h, &g->d2h_ms, g->d2h_mb, g->n_copies);
  if (g->host_latency_ms > 0)
    mb__report_format_ms(c->host, sizeof c->host, g->host_latency_ms);
  else
    snprintf(c->host, sizeof c->host, "-");
  if (g->memory_peak_mb >= 0)
    snprintf(c->peak, sizeof c->peak, "%.0f MiB", g->memory_peak_mb);
  else
    snprintf(c->peak, sizeof c->peak, "-");
  if (st->available) {
    snprintf(c->clocks, sizeof c->clocks, "%.0f-%.0f MHz", st->sm_clock_mhz_min,
             st->sm_clock_mhz_max);
    snprintf(c->state, sizeof c->state, "%.0f C, %.0f W%s%s",
             st->temperature_c_max, st->power_w_mean,
             st->throttle[0] ? ", throttled: " : "", st->throttle);
  } else {
    snprintf(c->clocks, sizeof c->clocks, "-");
    snprintf(c->state, sizeof c->state, "not sampled: %s", st->unavailable);
  }
}

static const char *const headers[] = {
    "conversion",         "GPU",         "end-to-end ms",
    "GPU compute ms",     "H2D ms",      "D2H ms",
    "host latency ms",    "peak memory", "SM clock",
    "temperature, power",
};

#define GPU_NOTE                                                               \
  "end-to-end: the timed call with its inputs on the device, ended by a "      \
  "synchronisation; GPU compute: CUDA events around it; H2D/D2H: one "         \
  "sample's inputs and outputs copied from and to pinned memory; host "        \
  "latency: median H2D + compute + D2H (trtexec's); SM clock, temperature "    \
  "(max) and power (mean) from NVML over the timed phase"

void mb__report_print_gpu(const mb_bench_report *report, const int *order,
                          FILE *out) {
  if (!mb__report_any_gpu(report))
    return;
  fprintf(out, "\nGPU (%s):\n", GPU_NOTE);
  for (int k = 0; k < report->n_results; k++) {
    const mb_bench_result *r = &report->results[order ? order[k] : k];
    if (r->status != MB_BENCH_OK || !r->gpu.used)
      continue;
    gpu_cells c;
    cells_of(r, &c);
    char name[MB_TERM_TEXT_SIZE], gpu[MB_TERM_TEXT_SIZE];
    fprintf(out,
            "  %s on %s: end-to-end %s ms, compute %s ms, H2D %s, D2H %s, "
            "host latency %s ms, peak %s, SM %s, %s\n",
            mb__term_text(mb__report_name(r), name, sizeof name),
            mb__term_text(c.name, gpu, sizeof gpu), c.e2e, c.compute, c.h2d,
            c.d2h, c.host, c.peak, c.clocks, c.state);
  }
}

void mb__html_write_gpu(FILE *f, const mb_bench_report *report, int model,
                        const int *order) {
  if (!mb__report_any_gpu(report))
    return;
  fprintf(f, "<h3>GPU</h3>\n<p class=\"meta\">%s.</p>\n", GPU_NOTE);
  fprintf(f,
          "<div class=\"wrap\"><table id=\"gpu-%d\" class=\"results gpu\">\n"
          "<thead><tr>",
          model);
  for (size_t i = 0; i < MB_ARRAY_COUNT(headers); i++)
    fprintf(f, "<th scope=\"col\">%s</th>", headers[i]);
  fputs("</tr></thead>\n<tbody>\n", f);
  for (int k = 0; k < report->n_results; k++) {
    const mb_bench_result *r = &report->results[order ? order[k] : k];
    if (r->status != MB_BENCH_OK || !r->gpu.used)
      continue;
    gpu_cells c;
    cells_of(r, &c);
    const char *cells[] = {c.name, c.e2e,  c.compute, c.h2d,  c.d2h,
                           c.host, c.peak, c.clocks,  c.state};
    fputs("<tr data-conversion=\"", f);
    mb__html_put_n(f, mb__report_name(r), -1, false);
    fputs("\"><td><code>", f);
    mb__html_put_n(f, mb__report_name(r), -1, false);
    fputs("</code></td>", f);
    for (size_t i = 0; i < MB_ARRAY_COUNT(cells); i++) {
      fputs("<td>", f);
      mb__html_put_n(f, cells[i], -1, false);
      fputs("</td>", f);
    }
    fputs("</tr>\n", f);
  }
  fputs("</tbody>\n</table></div>\n", f);
}

/* A Markdown cell: '|' and line breaks would end it. */
static void md_cell(FILE *f, const char *s) {
  fputs(" ", f);
  for (; *s; s++) {
    if (*s == '|')
      fputs("\\|", f);
    else if (*s == '\n' || *s == '\r')
      fputc(' ', f);
    else
      fputc(*s, f);
  }
  fputs(" |", f);
}

void mb__markdown_write_gpu(FILE *f, const mb_bench_report *report,
                            const int *order) {
  if (!mb__report_any_gpu(report))
    return;
  fprintf(f, "\n### GPU\n\n%s.\n\n|", GPU_NOTE);
  for (size_t i = 0; i < MB_ARRAY_COUNT(headers); i++)
    fprintf(f, " %s |", headers[i]);
  fputs("\n|", f);
  for (size_t i = 0; i < MB_ARRAY_COUNT(headers); i++)
    fputs(i ? " ---: |" : " :--- |", f);
  fputs("\n", f);
  for (int k = 0; k < report->n_results; k++) {
    const mb_bench_result *r = &report->results[order ? order[k] : k];
    if (r->status != MB_BENCH_OK || !r->gpu.used)
      continue;
    gpu_cells c;
    cells_of(r, &c);
    const char *cells[] = {mb__report_name(r),
                           c.name,
                           c.e2e,
                           c.compute,
                           c.h2d,
                           c.d2h,
                           c.host,
                           c.peak,
                           c.clocks,
                           c.state};
    fputs("|", f);
    for (size_t i = 0; i < MB_ARRAY_COUNT(cells); i++)
      md_cell(f, cells[i]);
    fputs("\n", f);
  }
}
