/* The CPU-or-GPU answer over a batch sweep (src/report/crossover.c) and
 * where the reports show it (the HTML sweep section's chart and
 * recommendation, the Markdown section). The sweeps are built by hand, one
 * report per batch with CPU results and results whose device is "cuda",
 * so no GPU, runtime or child process is involved. */
#include "modelbench.h"
#include "report/report_util.h"
#include "test.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_BATCHES = 8, MAX_OPTIONS = 4 };

/* One conversion of the sweep: its time per sample at each batch. */
typedef struct option {
  const char *name;
  bool gpu;
  double ms_per_sample[MAX_BATCHES]; /* device time for a GPU option */
  double copies_ms_per_sample;       /* H2D + D2H, GPU only */
  bool inaccurate;
} option;

typedef struct sweep {
  int n_batches, n_options;
  mb_bench_report reports[MAX_BATCHES];
  const mb_bench_report *ptrs[MAX_BATCHES];
  mb_bench_result results[MAX_BATCHES][MAX_OPTIONS];
  mb_output_accuracy accuracy[MAX_BATCHES][MAX_OPTIONS];
  char *warnings[1];
} sweep;

static const int batches[MAX_BATCHES] = {1, 2, 4, 8, 16, 32, 64, 128};

static void set_latency(mb_bench_result *r, double median) {
  r->latency_ms = (mb_latency_stats){median * 1.01, median,        median * 0.9,
                                     median * 1.5,  median * 1.2,  median * 1.3,
                                     median * 1.4,  median * 0.02, 0.02};
}

static char inaccurate_warning[] = "inaccurate: cosine 0.91 below 0.999";

/* Reports for batches[0 .. n_batches), every option at each. */
static void sweep_init(sweep *s, int n_batches, const option *options,
                       int n_options) {
  memset(s, 0, sizeof *s);
  s->n_batches = n_batches;
  s->n_options = n_options;
  s->warnings[0] = inaccurate_warning;
  for (int b = 0; b < n_batches; b++) {
    mb_bench_report *rep = &s->reports[b];
    snprintf(rep->tool_version, sizeof rep->tool_version, "%s",
             MB_VERSION_STRING);
    snprintf(rep->model_path, sizeof rep->model_path, "models/resnet18.pt");
    snprintf(rep->model_sha256, sizeof rep->model_sha256, "%064d", 7);
    mb_bench_config_init(&rep->config);
    rep->config.batch_size = batches[b];
    snprintf(rep->sweep_point, sizeof rep->sweep_point, "batch=%d", batches[b]);
    snprintf(rep->machine.cpu_model, sizeof rep->machine.cpu_model, "Test CPU");
    rep->machine.cores = 16;
    rep->n_results = n_options;
    rep->results = s->results[b];
    rep->baseline_result = 0;
    for (int o = 0; o < n_options; o++) {
      const option *opt = &options[o];
      mb_bench_result *r = &s->results[b][o];
      double per_call = opt->ms_per_sample[b] * batches[b];
      r->conversion_index = -1;
      r->conversion_id = o + 1;
      r->conversion = opt->name;
      r->status = MB_BENCH_OK;
      snprintf(r->device, sizeof r->device, "%s", opt->gpu ? "cuda" : "cpu");
      set_latency(r, per_call);
      r->iterations = 20;
      r->batch_size = batches[b];
      r->throughput_sps = 1000.0 / opt->ms_per_sample[b];
      r->has_accuracy = 1;
      r->n_outputs = 1;
      r->accuracy = &s->accuracy[b][o];
      r->accuracy[0] = (mb_output_accuracy){.name = "logits",
                                            .max_abs_err = 1e-6,
                                            .max_rel_err = 1e-6,
                                            .cosine = 1.0,
                                            .top1_agreement = -1};
      r->accuracy_criterion = MB_ACCURACY_COSINE;
      if (opt->inaccurate) {
        r->n_warnings = 1;
        r->warnings = s->warnings;
      }
      if (opt->gpu) {
        mb_gpu_result *g = &r->gpu;
        g->used = 1;
        snprintf(g->info.name, sizeof g->info.name, "NVIDIA H100");
        /* The timed loop's latency is the device's (inputs stay there);
         * the copies come back in the host latency. */
        g->compute_ms.median = per_call;
        g->h2d_ms.median = opt->copies_ms_per_sample * batches[b] / 2;
        g->d2h_ms.median = opt->copies_ms_per_sample * batches[b] / 2;
        g->n_copies = 10;
        g->host_latency_ms = per_call + opt->copies_ms_per_sample * batches[b];
      }
    }
    s->ptrs[b] = rep;
  }
}

/* The GPU behind at batches 1, 2 and 4, ahead from 8; ONEDNN the best
 * CPU option; an inaccurate FP16 GPU option far ahead everywhere. */
static const option main_options[] = {
    {"ORT_CPU", false, {0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6}, 0, false},
    {"ONEDNN", false, {0.41, 0.41, 0.41, 0.41, 0.41, 0.41, 0.41}, 0, false},
    {"EAGER", true, {1.5, 0.8, 0.45, 0.08, 0.06, 0.05, 0.04}, 0.01, false},
    {"FP16", true, {0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01}, 0, true},
};

static int point_at(const mb_crossover *c, int batch) {
  for (int k = 0; k < c->n_points; k++)
    if (c->points[k].batch == batch)
      return k;
  return -1;
}

TEST(gpu_ahead_from_batch_8) {
  static sweep s;
  sweep_init(&s, 7, main_options, 4);
  mb_crossover c;
  ASSERT(mb__crossover_find(s.ptrs, 7, &c));
  ASSERT_EQ(c.kind, MB_CROSSOVER_AT);
  ASSERT_EQ(c.batch, 8);
  ASSERT_EQ(c.n_points, 7);
  int at1 = point_at(&c, 1), at8 = point_at(&c, 8);
  ASSERT(at1 >= 0 && at8 >= 0);
  /* The inaccurate FP16 never counts: EAGER is the best GPU option. */
  ASSERT_EQ(c.points[at1].gpu.result, 2);
  ASSERT_EQ(c.points[at1].cpu.result, 1);
  ASSERT_NEAR(c.points[at8].gpu.ms_per_sample, 0.09, 1e-9);
  ASSERT_NEAR(c.points[at8].cpu.ms_per_sample, 0.41, 1e-9);
  ASSERT_EQ(c.points[at1].deploy.gpu, false);
  ASSERT_EQ(c.points[at8].deploy.gpu, true);
  ASSERT(strstr(c.summary,
                "From batch 8, the GPU (EAGER on NVIDIA H100, 0.09 ms/sample "
                "with copies) is faster than the best CPU option (ONEDNN, "
                "0.41 ms/sample); below it, deploy ONEDNN on the CPU.") !=
         NULL);
  mb__crossover_free(&c);
  return 0;
}

/* Ahead at batch 4, behind at 8, ahead from 16: the GPU stays ahead only
 * from 16. */
TEST(crossover_is_where_the_gpu_stays_ahead) {
  static const option options[] = {
      {"ONEDNN", false, {0.41, 0.41, 0.41, 0.41, 0.41, 0.41}, 0, false},
      {"EAGER", true, {1.5, 0.8, 0.3, 0.5, 0.2, 0.1}, 0, false},
  };
  static sweep s;
  sweep_init(&s, 6, options, 2);
  mb_crossover c;
  ASSERT(mb__crossover_find(s.ptrs, 6, &c));
  ASSERT_EQ(c.kind, MB_CROSSOVER_AT);
  ASSERT_EQ(c.batch, 16);
  mb__crossover_free(&c);
  return 0;
}

TEST(gpu_never_and_always_ahead) {
  static const option never[] = {
      {"ONEDNN", false, {0.41, 0.41, 0.41, 0.41}, 0, false},
      {"EAGER", true, {1.5, 0.9, 0.7, 0.5}, 0, false},
  };
  static const option always[] = {
      {"ONEDNN", false, {0.41, 0.41, 0.41, 0.41}, 0, false},
      {"EAGER", true, {0.3, 0.2, 0.1, 0.05}, 0, false},
  };
  static sweep s;
  mb_crossover c;
  sweep_init(&s, 4, never, 2);
  ASSERT(mb__crossover_find(s.ptrs, 4, &c));
  ASSERT_EQ(c.kind, MB_CROSSOVER_NEVER);
  ASSERT_EQ(c.batch, 0);
  ASSERT(strstr(c.summary, "The GPU never overtakes in the swept range "
                           "(batch 1 to 8)") != NULL);
  ASSERT(strstr(c.summary, "deploy ONEDNN on the CPU") != NULL);
  mb__crossover_free(&c);

  sweep_init(&s, 4, always, 2);
  ASSERT(mb__crossover_find(s.ptrs, 4, &c));
  ASSERT_EQ(c.kind, MB_CROSSOVER_ALWAYS);
  ASSERT(strstr(c.summary, "The GPU is ahead at every batch (batch 1 to 8)") !=
         NULL);
  mb__crossover_free(&c);
  return 0;
}

/* Faster than the CPU on device time alone, slower once its copies are
 * counted: the GPU never overtakes. */
TEST(copies_are_counted) {
  static const option options[] = {
      {"ONEDNN", false, {0.41, 0.41, 0.41, 0.41}, 0, false},
      {"EAGER", true, {0.3, 0.3, 0.3, 0.3}, 0.2, false},
  };
  static sweep s;
  sweep_init(&s, 4, options, 2);
  mb_crossover c;
  ASSERT(mb__crossover_find(s.ptrs, 4, &c));
  ASSERT_EQ(c.kind, MB_CROSSOVER_NEVER);
  ASSERT_NEAR(c.points[0].gpu.ms_per_sample, 0.5, 1e-9);
  mb__crossover_free(&c);
  /* Without a host latency (a GPU result from before the copies were
   * timed) the median latency stands for it. */
  for (int b = 0; b < 4; b++)
    s.results[b][1].gpu.host_latency_ms = 0;
  ASSERT(mb__crossover_find(s.ptrs, 4, &c));
  ASSERT_EQ(c.kind, MB_CROSSOVER_ALWAYS);
  mb__crossover_free(&c);
  return 0;
}

/* Only inaccurate (or failed) GPU results, or a CPU-only sweep: no
 * answer, and no chart. */
TEST(one_device_only) {
  static const option options[] = {
      {"ONEDNN", false, {0.41, 0.41, 0.41}, 0, false},
      {"FP16", true, {0.01, 0.01, 0.01}, 0, true},
  };
  static sweep s;
  sweep_init(&s, 3, options, 2);
  s.results[1][1].status = MB_BENCH_ERROR;
  mb_crossover c;
  ASSERT(mb__crossover_find(s.ptrs, 3, &c));
  ASSERT_EQ(c.kind, MB_CROSSOVER_NONE);
  ASSERT_EQ(c.points[0].gpu.report, -1);
  mb__crossover_free(&c);
  return 0;
}

/* Under a p99 latency target: the fastest option that meets it at each
 * batch, or none. */
TEST(deploy_within_slo) {
  static sweep s;
  sweep_init(&s, 7, main_options, 4);
  for (int b = 0; b < 7; b++) {
    s.reports[b].config.load.slo_percentile = 99;
    s.reports[b].config.load.slo_ms = 2;
  }
  mb_crossover c;
  ASSERT(mb__crossover_find(s.ptrs, 7, &c));
  ASSERT_EQ(c.kind, MB_CROSSOVER_AT);
  /* batch 1: ONEDNN's p99 0.57 ms; batch 8: EAGER's 1.4 x 0.64 + 0.08 ms
   * of copies; batch 32: EAGER's p99 2.2 ms + copies and ONEDNN's 18 ms
   * both miss. */
  const mb_crossover_point *p1 = &c.points[point_at(&c, 1)];
  const mb_crossover_point *p8 = &c.points[point_at(&c, 8)];
  const mb_crossover_point *p32 = &c.points[point_at(&c, 32)];
  ASSERT_EQ(p1->deploy.result, 1);
  ASSERT_EQ(p8->deploy.result, 2);
  ASSERT_EQ(p32->deploy.report, -1);
  ASSERT(strstr(c.summary,
                "Within the SLO p99 <= 2 ms: batch 1-2, ONEDNN on the CPU; "
                "batch 4, nothing meets it; batch 8-16, EAGER on the GPU; "
                "batch 32-64, nothing meets it.") != NULL);
  mb__crossover_free(&c);
  /* The copies count against the target: at batch 16 EAGER's p99 is
   * 1.344 ms on the device, 1.504 ms with its copies. */
  for (int b = 0; b < 7; b++)
    s.reports[b].config.load.slo_ms = 1.4;
  ASSERT(mb__crossover_find(s.ptrs, 7, &c));
  ASSERT_EQ(c.points[point_at(&c, 8)].deploy.result, 2);
  ASSERT_EQ(c.points[point_at(&c, 16)].deploy.report, -1);
  mb__crossover_free(&c);
  return 0;
}

/* ---- the reports ---- */

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  rewind(f);
  char *buf = size >= 0 ? malloc((size_t)size + 1) : NULL;
  if (buf) {
    size_t got = fread(buf, 1, (size_t)size, f);
    buf[got] = '\0';
  }
  fclose(f);
  return buf;
}

/* Writes the reports as HTML or Markdown and reads the file back. */
static char *write_and_read(bool html, const mb_bench_report *const *reports,
                            int n) {
  char dir[64], path[128];
  snprintf(dir, sizeof dir, "/tmp/mb_test_crossover_XXXXXX");
  if (!mkdtemp(dir))
    return NULL;
  snprintf(path, sizeof path, "%s/report", dir);
  mb_error err = {0};
  mb_status s = html ? mb_bench_reports_write_html(reports, n, path, &err)
                     : mb_bench_reports_write_markdown(reports, n, path, &err);
  char *text = s == MB_STATUS_OK ? read_text(path) : NULL;
  if (s != MB_STATUS_OK)
    fprintf(stderr, "  write failed: %s\n", err.message);
  unlink(path);
  rmdir(dir);
  return text;
}

TEST(html_chart_and_recommendation) {
  static sweep s;
  sweep_init(&s, 7, main_options, 4);
  char *text = write_and_read(true, s.ptrs, 7);
  ASSERT(text != NULL);
  int ok =
      strstr(text, "<svg id=\"crossover-0\" class=\"chart crossover\" "
                   "data-crossover=\"at\" data-batch=\"8\"") != NULL &&
      strstr(text, "<line class=\"crossover-at\" data-batch=\"8\"") != NULL &&
      strstr(text, "<g class=\"series best-cpu\" data-device=\"cpu\">") !=
          NULL &&
      strstr(text, "<g class=\"series best-gpu\" data-device=\"cuda\">") !=
          NULL &&
      strstr(text, "<div class=\"recommendation crossover\" "
                   "id=\"crossover-recommendation-0\"><p>From batch 8, "
                   "the GPU (EAGER on NVIDIA H100, 0.09 ms/sample") != NULL &&
      strstr(text, "(log scale)") != NULL;
  /* EAGER faintly behind the best lines; the inaccurate FP16 not even
   * that. */
  int eager_drawn = strstr(text, "<path class=\"option gpu\" "
                                 "data-device=\"cuda\" "
                                 "data-conversion=\"EAGER\"") != NULL;
  int fp16_drawn = strstr(text, "data-device=\"cuda\" "
                                "data-conversion=\"FP16\"") != NULL;
  free(text);
  ASSERT(ok);
  ASSERT(eager_drawn);
  ASSERT(!fp16_drawn);

  /* The CPU options alone: the sweep section, but no CPU-or-GPU chart. */
  sweep_init(&s, 7, main_options, 2);
  text = write_and_read(true, s.ptrs, 7);
  ASSERT(text != NULL);
  int section = strstr(text, "<section class=\"sweep\"") != NULL;
  int chart = strstr(text, "class=\"chart crossover\"") != NULL ||
              strstr(text, "crossover-recommendation") != NULL;
  free(text);
  ASSERT(section);
  ASSERT(!chart);
  return 0;
}

TEST(markdown_sentence_and_table) {
  static sweep s;
  sweep_init(&s, 7, main_options, 4);
  char *text = write_and_read(false, s.ptrs, 7);
  ASSERT(text != NULL);
  const char *section = strstr(text, "**CPU or GPU:** From batch 8, the GPU "
                                     "(EAGER on NVIDIA H100, 0.09 ms/sample "
                                     "with copies) is faster than the best "
                                     "CPU option (ONEDNN, 0.41 ms/sample); "
                                     "below it, deploy ONEDNN on the CPU.");
  int rows =
      strstr(text, "| 1 | `ONEDNN` | 0.4100 | `EAGER` | 1.510 | CPU |") !=
          NULL &&
      strstr(text, "| 8 | `ONEDNN` | 0.4100 | `EAGER` | 0.0900 | GPU |") !=
          NULL;
  /* Once, after the sweep's last point. */
  int once = section && !strstr(section + 1, "**CPU or GPU:**") &&
             !strstr(section, "## `models/resnet18.pt` at");
  int found = section != NULL;
  free(text);
  ASSERT(found);
  ASSERT(rows);
  ASSERT(once);
  return 0;
}

TEST_MAIN(TEST_ENTRY(gpu_ahead_from_batch_8),
          TEST_ENTRY(crossover_is_where_the_gpu_stays_ahead),
          TEST_ENTRY(gpu_never_and_always_ahead),
          TEST_ENTRY(copies_are_counted), TEST_ENTRY(one_device_only),
          TEST_ENTRY(deploy_within_slo),
          TEST_ENTRY(html_chart_and_recommendation),
          TEST_ENTRY(markdown_sentence_and_table))
