/* The roofline: the verdict's arithmetic on given peaks and figures (a
 * pure function), the bytes estimate, the peaks' cache (written, read
 * back, a key that does not match or a corrupt file measured again), the
 * JSON round trip of peaks and a result's roofline, and the HTML chart
 * with one point per placed result. No timing figure is asserted beyond
 * "measured and positive". */
#include "bench/bench.h"
#include "core/json_parse.h"
#include "modelbench.h"
#include "report/report_load.h"
#include "test.h"
#include "test_files.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

static mb_machine_peaks given_peaks(void) {
  mb_machine_peaks p;
  memset(&p, 0, sizeof p);
  p.measured = 1;
  p.threads = 2;
  p.fp32_gflops = 100.0;
  p.int8_gops = 200.0;
  p.bandwidth_gbs = 10.0;
  snprintf(p.fp32_source, sizeof p.fp32_source, "openblas sgemm");
  snprintf(p.bf16_note, sizeof p.bf16_note,
           "not supported by this CPU: no avx512_bf16/amx_bf16");
  return p;
}

TEST(verdict_compute_bound) {
  mb_machine_peaks p = given_peaks();
  mb_roofline r;
  /* 1 GFLOP in 10 ms: 100 GFLOP/s; 100 FLOPs per byte puts the memory
   * roof at 1000, above the compute roof of 100. */
  mb__roofline_compute(1e9, 1e7, 10.0, MB_PRECISION_FP32, -1, &p, &r);
  ASSERT_EQ(r.bound, MB_ROOFLINE_COMPUTE);
  ASSERT_NEAR(r.gflops, 100.0, 1e-9);
  ASSERT_NEAR(r.intensity, 100.0, 1e-9);
  ASSERT_NEAR(r.peak_gflops, 100.0, 1e-9);
  ASSERT_NEAR(r.attainable_gflops, 100.0, 1e-9);
  ASSERT_NEAR(r.peak_share, 1.0, 1e-9);
  /* 1e7 bytes in 10 ms: 1 GB/s of 10. */
  ASSERT_NEAR(r.bandwidth_share, 0.1, 1e-9);
  ASSERT_STR_EQ(r.peak_precision, "fp32");
  return 0;
}

TEST(verdict_memory_bound) {
  mb_machine_peaks p = given_peaks();
  mb_roofline r;
  /* 1 FLOP per byte: the memory roof, 10 GFLOP/s, is below fp32's 100;
   * 1 GFLOP in 125 ms is 8 GFLOP/s, 80% of it. */
  mb__roofline_compute(1e9, 1e9, 125.0, MB_PRECISION_FP32, -1, &p, &r);
  ASSERT_EQ(r.bound, MB_ROOFLINE_MEMORY);
  ASSERT_NEAR(r.attainable_gflops, 10.0, 1e-9);
  ASSERT_NEAR(r.gflops, 8.0, 1e-9);
  ASSERT_NEAR(r.peak_share, 0.08, 1e-9);
  ASSERT_NEAR(r.bandwidth_share, 0.8, 1e-9);
  return 0;
}

TEST(verdict_overhead_bound) {
  mb_machine_peaks p = given_peaks();
  mb_roofline r;
  /* Compute-limited by the roofs, but 1 GFLOP in 100 ms is 10 GFLOP/s,
   * 10% of the attainable 100: below the 25% threshold. */
  mb__roofline_compute(1e9, 1e7, 100.0, MB_PRECISION_FP32, -1, &p, &r);
  ASSERT_EQ(r.bound, MB_ROOFLINE_OVERHEAD);
  ASSERT_NEAR(r.peak_share, 0.1, 1e-9);
  /* Just at the threshold it is the roof's bound again. */
  mb__roofline_compute(1e9, 1e7, 39.0, MB_PRECISION_FP32, -1, &p, &r);
  ASSERT_EQ(r.bound, MB_ROOFLINE_COMPUTE);
  ASSERT_STR_EQ(mb_roofline_bound_name(MB_ROOFLINE_OVERHEAD), "overhead-bound");
  return 0;
}

TEST(verdict_precision_roofs) {
  mb_machine_peaks p = given_peaks();
  mb_roofline r;
  mb__roofline_compute(1e9, 1e7, 10.0, MB_PRECISION_INT8, -1, &p, &r);
  ASSERT_NEAR(r.peak_gflops, 200.0, 1e-9);
  ASSERT_NEAR(r.peak_share, 0.5, 1e-9);
  ASSERT_STR_EQ(r.peak_precision, "int8");
  /* Half the FLOPs in int8, half in fp32: the time-weighted roof. */
  mb__roofline_compute(1e9, 1e7, 10.0, MB_PRECISION_INT8, 0.5, &p, &r);
  ASSERT_NEAR(r.peak_gflops, 1.0 / (0.5 / 200.0 + 0.5 / 100.0), 1e-9);
  ASSERT_STR_EQ(r.peak_precision, "int8 50% + fp32");
  /* No bf16 roof measured here, and fp16 has none on x86: fp32's. */
  mb__roofline_compute(1e9, 1e7, 10.0, MB_PRECISION_BF16, -1, &p, &r);
  ASSERT_NEAR(r.peak_gflops, 100.0, 1e-9);
  ASSERT_STR_EQ(r.peak_precision, "fp32");
  mb__roofline_compute(1e9, 1e7, 10.0, MB_PRECISION_FP16, -1, &p, &r);
  ASSERT_NEAR(r.peak_gflops, 100.0, 1e-9);
  return 0;
}

TEST(verdict_unknown_without_figures) {
  mb_machine_peaks p = given_peaks();
  mb_roofline r;
  mb__roofline_compute(-1, 1e7, 10.0, MB_PRECISION_FP32, -1, &p, &r);
  ASSERT_EQ(r.bound, MB_ROOFLINE_UNKNOWN);
  mb__roofline_compute(1e9, 1e7, 0.0, MB_PRECISION_FP32, -1, &p, &r);
  ASSERT_EQ(r.bound, MB_ROOFLINE_UNKNOWN);
  p.measured = 0;
  mb__roofline_compute(1e9, 1e7, 10.0, MB_PRECISION_FP32, -1, &p, &r);
  ASSERT_EQ(r.bound, MB_ROOFLINE_UNKNOWN);
  ASSERT_EQ(r.gflops, 0.0);
  /* Bytes unknown: placed against the compute roof alone. */
  p.measured = 1;
  mb__roofline_compute(1e9, -1, 10.0, MB_PRECISION_FP32, -1, &p, &r);
  ASSERT_EQ(r.bound, MB_ROOFLINE_COMPUTE);
  ASSERT_EQ(r.intensity, 0.0);
  return 0;
}

TEST(bytes_estimate) {
  mb_bench_report report;
  memset(&report, 0, sizeof report);
  report.model_weight_bytes = 400;
  report.model_input_bytes = 100;
  report.model_activation_bytes = 50;
  ASSERT_NEAR(mb__roofline_bytes(&report, MB_PRECISION_FP32, -1), 600, 1e-9);
  /* int8 weights take a quarter; activations stay as stored. */
  ASSERT_NEAR(mb__roofline_bytes(&report, MB_PRECISION_INT8, -1), 300, 1e-9);
  ASSERT_NEAR(mb__roofline_bytes(&report, MB_PRECISION_BF16, 0.5),
              400 * (0.5 * 0.5 + 0.5) + 200, 1e-9);
  /* A pre-quantised model stores its weights so already. */
  report.model_quantized = 1;
  ASSERT_NEAR(mb__roofline_bytes(&report, MB_PRECISION_INT8, -1), 600, 1e-9);
  report.model_activation_bytes = -1;
  ASSERT(mb__roofline_bytes(&report, MB_PRECISION_FP32, -1) < 0);
  return 0;
}

/* ---- the cache ---- */

static int make_tmpdir(char *dir, size_t size) {
  snprintf(dir, size, "/tmp/mb_roofline_XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

/* The one cache file of the folder. */
static int peaks_file(const char *cache, char *path, size_t size) {
  char folder[256];
  snprintf(folder, sizeof folder, "%s/machine", cache);
  DIR *d = opendir(folder);
  if (!d)
    return -1;
  struct dirent *e;
  int found = -1;
  while ((e = readdir(d)) != NULL)
    if (strncmp(e->d_name, "peaks-", 6) == 0 && strstr(e->d_name, "-t1.json")) {
      snprintf(path, size, "%s/%s", folder, e->d_name);
      found = 0;
    }
  closedir(d);
  return found;
}

TEST(peaks_cache) {
  char dir[64], path[512];
  mb_error err = {0};
  /* The cache folder's copy is tested here, not the suite's shared peaks
   * (ctest sets MODELBENCH_PEAKS_DIR; cli_machine.sh tests that). */
  unsetenv("MODELBENCH_PEAKS_DIR");
  ASSERT_EQ(make_tmpdir(dir, sizeof dir), 0);
  mb_machine_peaks first, again;
  ASSERT_OK(mb__peaks_get(dir, 1, false, &first, &err), &err);
  ASSERT_EQ(first.measured, 1);
  ASSERT_EQ(first.from_cache, 0);
  ASSERT_EQ(first.threads, 1);
  ASSERT(first.fp32_gflops > 0);
  ASSERT(first.bandwidth_gbs > 0);
  ASSERT(first.int8_gops > 0 || first.int8_note[0]);
  ASSERT(first.bf16_gflops > 0 || first.bf16_note[0]);
  ASSERT_EQ(peaks_file(dir, path, sizeof path), 0);
  struct stat st;
  ASSERT_EQ(stat(path, &st), 0);
  ASSERT_EQ(st.st_mode & 0777, 0600);

  /* Read back: the same figures, from the cache. */
  ASSERT_OK(mb__peaks_get(dir, 1, false, &again, &err), &err);
  ASSERT_EQ(again.from_cache, 1);
  ASSERT_EQ(again.fp32_gflops, first.fp32_gflops);
  ASSERT_EQ(again.bandwidth_gbs, first.bandwidth_gbs);
  ASSERT_STR_EQ(again.cpu_model, first.cpu_model);

  /* Another CPU's figures under this machine's name: measured again. */
  char *text = NULL;
  size_t n = 0;
  ASSERT_OK(mb__read_file(path, (void **)&text, &n, &err), &err);
  /* mb__read_file's bytes end without a NUL. */
  char *terminated = realloc(text, n + 1);
  ASSERT(terminated != NULL);
  text = terminated;
  text[n] = '\0';
  char *model = strstr(text, "\"cpu_model\"");
  ASSERT(model != NULL);
  char *value = strchr(model + 11, '"');
  ASSERT(value != NULL);
  value[1] = value[1] == 'X' ? 'Y' : 'X'; /* another model name */
  ASSERT_EQ(test_write_text(path, text), 0);
  free(text);
  ASSERT_OK(mb__peaks_get(dir, 1, false, &again, &err), &err);
  ASSERT_EQ(again.from_cache, 0);
  ASSERT_EQ(again.measured, 1);
  ASSERT_STR_EQ(again.cpu_model, first.cpu_model);

  /* A corrupt file: measured again, not a failure. */
  ASSERT_EQ(test_write_text(path, "{\"measured\": 1, \"threads\": "), 0);
  ASSERT_OK(mb__peaks_get(dir, 1, false, &again, &err), &err);
  ASSERT_EQ(again.from_cache, 0);
  ASSERT_EQ(again.measured, 1);
  /* ... and rewritten: the next read hits. */
  ASSERT_OK(mb__peaks_get(dir, 1, false, &again, &err), &err);
  ASSERT_EQ(again.from_cache, 1);
  /* --remeasure skips a good file. */
  ASSERT_OK(mb__peaks_get(dir, 1, true, &again, &err), &err);
  ASSERT_EQ(again.from_cache, 0);
  test_remove_tree(dir);
  return 0;
}

/* ---- reports ---- */

enum { R_FAST, R_SLOW, R_FAILED, R_COUNT };

typedef struct fixture {
  mb_bench_report report;
  mb_bench_result results[R_COUNT];
} fixture;

static void fixture_init(fixture *f) {
  memset(f, 0, sizeof *f);
  mb_bench_report *rep = &f->report;
  snprintf(rep->model_path, sizeof rep->model_path, "m<1>.onnx");
  rep->peaks = given_peaks();
  rep->model_flops = 1e9;
  rep->model_weight_bytes = 4e6;
  rep->model_input_bytes = 1e6;
  rep->model_activation_bytes = 2.5e6;
  rep->results = f->results;
  rep->n_results = R_COUNT;
  rep->baseline_result = 0;
  mb_bench_config_init(&rep->config);
  static const char *const names[] = {"ORT_CPU", "REFERENCE", "ONEDNN"};
  for (int i = 0; i < R_COUNT; i++) {
    mb_bench_result *r = &f->results[i];
    mb_error err = {0};
    mb_conversion_find(names[i], &r->conversion_index, &err);
    r->conversion = names[i];
    r->precision_share = -1;
    r->status = i == R_FAILED ? MB_BENCH_ERROR : MB_BENCH_OK;
    if (i == R_FAILED) {
      snprintf(r->error, sizeof r->error, "failed <here>");
      continue;
    }
    double median = i == R_FAST ? 12.5 : 400.0;
    r->latency_ms.median = r->latency_ms.mean = r->latency_ms.p90 = median;
    r->latency_ms.p99 = r->latency_ms.min = r->latency_ms.max = median;
    r->iterations = 10;
    r->batch_size = 1;
    r->throughput_sps = 1000.0 / median;
    r->has_accuracy = 1; /* outputs matched: recommendable */
    r->max_abs_err = 0.0;
    mb__roofline_fill(rep, r);
  }
}

TEST(fill_from_report) {
  fixture f;
  fixture_init(&f);
  /* 1 GFLOP in 12.5 ms: 80 GFLOP/s of fp32's 100; 1e9 / 1e7 bytes. */
  const mb_roofline *fast = &f.results[R_FAST].roofline;
  ASSERT_EQ(fast->bound, MB_ROOFLINE_COMPUTE);
  ASSERT_NEAR(fast->gflops, 80.0, 1e-9);
  ASSERT_NEAR(fast->bytes, 4e6 + 1e6 + 5e6, 1e-6);
  ASSERT_EQ(f.results[R_SLOW].roofline.bound, MB_ROOFLINE_OVERHEAD);
  ASSERT_EQ(f.results[R_FAILED].roofline.bound, MB_ROOFLINE_UNKNOWN);
  return 0;
}

static char *read_all(const char *path) {
  char *text = NULL;
  size_t n = 0;
  mb_error err = {0};
  if (mb__read_file(path, (void **)&text, &n, &err))
    return NULL;
  char *s = realloc(text, n + 1);
  if (s)
    s[n] = '\0';
  return s;
}

static int count(const char *haystack, const char *needle) {
  int n = 0;
  for (const char *p = haystack; (p = strstr(p, needle)) != NULL; p++)
    n++;
  return n;
}

TEST(json_round_trip) {
  fixture f;
  fixture_init(&f);
  f.report.peaks.from_cache = 1;
  char dir[64], path[128];
  mb_error err = {0};
  ASSERT_EQ(make_tmpdir(dir, sizeof dir), 0);
  snprintf(path, sizeof path, "%s/r.json", dir);
  ASSERT_OK(mb_bench_report_write_json(&f.report, path, &err), &err);
  mb_bench_report **loaded = NULL;
  int n = 0;
  ASSERT_OK(mb__reports_load_json(path, &loaded, &n, &err), &err);
  ASSERT_EQ(n, 1);
  const mb_bench_report *back = loaded[0];
  int same_peaks =
      back->peaks.measured == 1 && back->peaks.threads == 2 &&
      back->peaks.fp32_gflops == 100.0 && back->peaks.int8_gops == 200.0 &&
      back->peaks.bandwidth_gbs == 10.0 && back->peaks.from_cache == 1 &&
      strcmp(back->peaks.bf16_note, f.report.peaks.bf16_note) == 0;
  int same_model =
      back->model_flops == 1e9 && back->model_activation_bytes == 2.5e6;
  const mb_roofline *a = &f.results[R_FAST].roofline;
  const mb_roofline *b = &back->results[R_FAST].roofline;
  int same_fast = b->bound == a->bound && b->gflops == a->gflops &&
                  b->bytes == a->bytes && b->intensity == a->intensity &&
                  b->peak_share == a->peak_share &&
                  b->attainable_gflops == a->attainable_gflops &&
                  strcmp(b->peak_precision, a->peak_precision) == 0;
  int slow = back->results[R_SLOW].roofline.bound == MB_ROOFLINE_OVERHEAD;
  int failed = back->results[R_FAILED].roofline.bound == MB_ROOFLINE_UNKNOWN;
  mb__reports_free(loaded, n);
  char *text = read_all(path);
  ASSERT(text != NULL);
  int null_for_failed = count(text, "\"roofline\": null") == 1;
  free(text);
  test_remove_tree(dir);
  ASSERT(same_peaks);
  ASSERT(same_model);
  ASSERT(same_fast);
  ASSERT(slow);
  ASSERT(failed);
  ASSERT(null_for_failed);
  return 0;
}

TEST(json_rejects_unknown_bound) {
  fixture f;
  fixture_init(&f);
  char dir[64], path[128];
  mb_error err = {0};
  ASSERT_EQ(make_tmpdir(dir, sizeof dir), 0);
  snprintf(path, sizeof path, "%s/r.json", dir);
  ASSERT_OK(mb_bench_report_write_json(&f.report, path, &err), &err);
  char *text = read_all(path);
  ASSERT(text != NULL);
  char *at = strstr(text, "\"compute-bound\"");
  ASSERT(at != NULL);
  memcpy(at + 1, "cpu", 3); /* "cpupute-bound" */
  ASSERT_EQ(test_write_text(path, text), 0);
  free(text);
  mb_bench_report **loaded = NULL;
  int n = 0;
  mb_status status = mb__reports_load_json(path, &loaded, &n, &err);
  test_remove_tree(dir);
  ASSERT_EQ(status, MB_STATUS_PARSE);
  ASSERT_CONTAINS(err.message, "roofline.bound");
  return 0;
}

TEST(html_chart_one_point_per_result) {
  fixture f;
  fixture_init(&f);
  char dir[64], path[128];
  mb_error err = {0};
  ASSERT_EQ(make_tmpdir(dir, sizeof dir), 0);
  snprintf(path, sizeof path, "%s/r.html", dir);
  const mb_bench_report *reports[] = {&f.report};
  ASSERT_OK(mb_bench_reports_write_html(reports, 1, path, &err), &err);
  char *html = read_all(path);
  test_remove_tree(dir);
  ASSERT(html != NULL);
  int chart = strstr(html, "<svg id=\"roofline-chart-0\"") != NULL;
  int points = count(html, "<circle class=\"rpoint");
  int fast =
      strstr(html, "data-conversion=\"ORT_CPU\" data-gflops=\"80\"") != NULL;
  int roofs = count(html, "<line class=\"roof ");
  /* The model path is escaped wherever it appears. */
  int escaped = strstr(html, "m<1>") == NULL;
  free(html);
  ASSERT(chart);
  ASSERT_EQ(points, 2); /* the two ok results; the failed one has none */
  ASSERT(fast);
  ASSERT_EQ(roofs, 3); /* memory, fp32, int8; no bf16 peak */
  ASSERT(escaped);
  return 0;
}

TEST(table_and_recommendation_words) {
  fixture f;
  fixture_init(&f);
  char *buf = NULL;
  size_t size = 0;
  FILE *out = open_memstream(&buf, &size);
  ASSERT(out != NULL);
  mb_bench_report_print_table(&f.report, out, 0);
  fclose(out);
  int column = strstr(buf, "% peak") != NULL;
  int row = strstr(buf, "80% compute") != NULL;
  int peaks = strstr(buf, "peaks:   fp32 100 GFLOP/s, int8 200 GOP/s") != NULL;
  free(buf);
  ASSERT(column);
  ASSERT(row);
  ASSERT(peaks);
  mb_recommendations rec;
  mb_bench_recommend(&f.report, NULL, &rec);
  ASSERT_CONTAINS(rec.summary, "80% of this machine's fp32 peak, "
                               "compute-bound");
  return 0;
}

static const mb_test_case cases[] = {
    TEST_ENTRY(verdict_compute_bound),
    TEST_ENTRY(verdict_memory_bound),
    TEST_ENTRY(verdict_overhead_bound),
    TEST_ENTRY(verdict_precision_roofs),
    TEST_ENTRY(verdict_unknown_without_figures),
    TEST_ENTRY(bytes_estimate),
    TEST_ENTRY(peaks_cache),
    TEST_ENTRY(fill_from_report),
    TEST_ENTRY(json_round_trip),
    TEST_ENTRY(json_rejects_unknown_bound),
    TEST_ENTRY(html_chart_one_point_per_result),
    TEST_ENTRY(table_and_recommendation_words),
};

int main(int argc, char **argv) {
  return mb_test_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
