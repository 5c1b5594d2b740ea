/* Reports of a benchmark run: the JSON file (every key present, unknown
 * numbers as null, atomic replacement) and the console table (order,
 * fastest mark, error lines, colour only when asked). The reports are built
 * by hand, so no runtime or child process is involved; the JSON is read
 * back with the strict parser of src/core/json_parse.h. */
#include "core/json_parse.h"
#include "modelbench.h"
#include "report/report_load.h"
#include "test.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- a hand-built report ---- */

enum { N_RESULTS = 7 };

typedef struct fixture {
  mb_bench_report report;
  mb_bench_result results[N_RESULTS];
  mb_input_shape inputs[2];
  mb_dtype dtypes[2];
  mb_output_accuracy accuracy[N_RESULTS][2];
  double samples[N_RESULTS][8];
  char *warnings[2];
  char backtrace[128];
  mb_input_shape shape_override;
  mb_input_range range;
} fixture;

static void set_latency(mb_bench_result *r, double median) {
  r->latency_ms = (mb_latency_stats){median * 1.01, median,        median * 0.9,
                                     median * 1.5,  median * 1.2,  median * 1.3,
                                     median * 1.4,  median * 0.02, 0.02};
}

static void ok_result(fixture *f, int i, const char *name, int id,
                      double median, double speedup) {
  mb_bench_result *r = &f->results[i];
  r->conversion_index = -1;
  r->conversion_id = id;
  r->conversion = name;
  r->status = MB_BENCH_OK;
  snprintf(r->device, sizeof r->device, "cpu");
  snprintf(r->runtime, sizeof r->runtime, "onnxruntime");
  snprintf(r->runtime_version, sizeof r->runtime_version, "1.30.0");
  r->load_ms = 12.5;
  r->first_run_ms = median * 3;
  set_latency(r, median);
  r->iterations = 8;
  r->batch_size = 1;
  r->inference_seconds = median * 8 / 1000;
  r->elapsed_seconds = r->inference_seconds * 1.01;
  r->throughput_sps = 8 / r->inference_seconds;
  r->peak_rss_mb = 101.5;
  r->has_accuracy = 1;
  r->n_outputs = 2;
  r->accuracy = f->accuracy[i];
  r->accuracy[0] = (mb_output_accuracy){"logits", 2e-6, 1e-5, 0.999999};
  r->accuracy[1] = (mb_output_accuracy){"hidden", 3e-6, 2e-5, 0.999998};
  r->max_abs_err = 3e-6;
  r->speedup_vs_baseline = speedup;
  for (int k = 0; k < 8; k++)
    f->samples[i][k] = median + 0.001 * k;
  r->n_samples_ms = 8;
  r->samples_ms = f->samples[i];
  snprintf(r->log_path, sizeof r->log_path, "/tmp/logs/%s.log", name);
}

static void failed_result(fixture *f, int i, const char *name, int id,
                          mb_bench_status status, const char *error) {
  mb_bench_result *r = &f->results[i];
  r->conversion_index = -1;
  r->conversion_id = id;
  r->conversion = name;
  r->status = status;
  snprintf(r->error, sizeof r->error, "%s", error);
  snprintf(r->device, sizeof r->device, "cpu");
  r->max_abs_err = -1;
}

/* Request order: REFERENCE (baseline), ORT_CPU, TEST_ERROR, TEST_TIMEOUT,
 * TEST_CRASH, ORT_CPU_NO_OPT (unavailable), TEST_NAN (ok, NaN stats). */
static void fixture_init(fixture *f) {
  memset(f, 0, sizeof *f);
  mb_bench_report *rep = &f->report;
  snprintf(rep->tool_version, sizeof rep->tool_version, "%s",
           MB_VERSION_STRING);
  snprintf(rep->model_path, sizeof rep->model_path,
           "models/bert \"tiny\".onnx");
  snprintf(rep->model_sha256, sizeof rep->model_sha256, "%s",
           "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
  f->inputs[0] = (mb_input_shape){"input_ids", 2, {1, 128}};
  f->inputs[1] = (mb_input_shape){"attention_mask", 2, {1, 128}};
  f->dtypes[0] = f->dtypes[1] = MB_DTYPE_INT64;
  rep->n_inputs = 2;
  rep->inputs = f->inputs;
  rep->input_dtypes = f->dtypes;
  snprintf(rep->machine.cpu_model, sizeof rep->machine.cpu_model,
           "Test CPU @ 3.0GHz");
  rep->machine.cores = 8;
  snprintf(rep->machine.isa_flags, sizeof rep->machine.isa_flags,
           "sse4_2 avx2  fma avx512f");
  snprintf(rep->machine.os, sizeof rep->machine.os, "Linux 6.1");
  snprintf(rep->machine.governor, sizeof rep->machine.governor, "powersave");
  rep->machine.load_average = 0.25;
  mb_bench_config_init(&rep->config);
  f->shape_override = (mb_input_shape){"input_ids", 2, {1, 128}};
  rep->config.shapes.n_shapes = 1;
  rep->config.shapes.shapes = &f->shape_override;
  f->range = (mb_input_range){"input_ids", 0, 30521};
  rep->config.n_ranges = 1;
  rep->config.ranges = &f->range;
  rep->config.seed = UINT64_MAX; /* above INT64_MAX: written as a string */

  ok_result(f, 0, "REFERENCE", 1, 20.0, 1.0);
  ok_result(f, 1, "ORT_CPU", 2, 5.0, 4.0);
  failed_result(f, 2, "TEST_ERROR", 1001, MB_BENCH_ERROR,
                "prepare: node 'x' (Foo): unsupported \"op\"\nsecond line");
  failed_result(f, 3, "TEST_TIMEOUT", 1002, MB_BENCH_TIMEOUT,
                "timed out after 0.5 s in phase measure");
  /* A timeout after some iterations keeps what it measured. */
  f->results[3].load_ms = 3.0;
  failed_result(f, 4, "TEST_CRASH", 1003, MB_BENCH_CRASHED,
                "crashed with SIGSEGV in phase run");
  snprintf(f->backtrace, sizeof f->backtrace,
           "#0 crash_run+0x10\n#1 mb__measure+0x42\n");
  f->results[4].backtrace = f->backtrace;
  failed_result(f, 5, "ORT_CPU_NO_OPT", 3, MB_BENCH_UNAVAILABLE,
                "onnxruntime: libonnxruntime.so.1 not found");
  ok_result(f, 6, "TEST_NAN", 1004, 10.0, 2.0);
  mb_bench_result *nan_r = &f->results[6];
  nan_r->latency_ms.cv = NAN;
  nan_r->latency_ms.p99 = INFINITY;
  nan_r->accuracy[1].cosine = NAN;
  nan_r->speedup_vs_baseline = 0; /* unknown */
  nan_r->has_accuracy = 0;
  f->warnings[0] = "CV 7.5% > 5%: noisy timings";
  f->warnings[1] = "p99 from 8 iterations (< 100)";
  nan_r->n_warnings = 2;
  nan_r->warnings = f->warnings;

  rep->n_results = N_RESULTS;
  rep->results = f->results;
  rep->baseline_result = 0;
}

/* ---- helpers ---- */

static int make_tmpdir(char *dir, size_t size) {
  snprintf(dir, size, "/tmp/mb_test_report_XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

/* Removes the files in dir (one level) and the dir. */
static void remove_tmpdir(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      char path[1024];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
    closedir(d);
  }
  rmdir(dir);
}

static int count_files(const char *dir) {
  int n = 0;
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
      n++;
  closedir(d);
  return n;
}

static char *table_text(const mb_bench_report *report, int use_color) {
  FILE *f = tmpfile();
  if (!f)
    return NULL;
  mb_bench_report_print_table(report, f, use_color);
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

/* ---- reading the JSON back (the strict parser rejects NaN, duplicate
 * keys and trailing garbage, so a successful parse proves valid JSON) ---- */

/* Follows a dotted path of object keys ("latency_ms.median"); NULL when a
 * key is missing. */
static const mb_json_value *at(const mb_json_value *v, const char *path) {
  char key[64];
  while (v && *path) {
    size_t n = strcspn(path, ".");
    if (n >= sizeof key)
      return NULL;
    memcpy(key, path, n);
    key[n] = '\0';
    v = mb__json_find(v, key);
    path += n + (path[n] == '.');
  }
  return v;
}

static int is_null(const mb_json_value *v) {
  return v && v->type == MB_JSON_NULL;
}
static int is_number(const mb_json_value *v, double want) {
  return v && v->type == MB_JSON_NUMBER && v->number == want;
}
static int is_string(const mb_json_value *v, const char *want) {
  return v && v->type == MB_JSON_STRING && strcmp(v->string, want) == 0;
}

static const mb_json_value *result_named(const mb_json_doc *doc,
                                         const char *name) {
  const mb_json_value *results = at(&doc->root, "results");
  for (size_t i = 0; results && i < results->count; i++)
    if (is_string(at(&results->items[i], "conversion"), name))
      return &results->items[i];
  return NULL;
}

static const char *const top_keys[] = {"schema_version",
                                       "tool",
                                       "version",
                                       "model.path",
                                       "model.sha256",
                                       "model.inputs",
                                       "machine.cpu_model",
                                       "machine.cores",
                                       "machine.isa_flags",
                                       "machine.os",
                                       "machine.governor",
                                       "machine.load_average",
                                       "config.batch_size",
                                       "config.n_samples",
                                       "config.device",
                                       "config.isolate",
                                       "config.fail_fast",
                                       "config.threads",
                                       "config.warmup",
                                       "config.warmup_time",
                                       "config.min_iterations",
                                       "config.min_time",
                                       "config.max_time",
                                       "config.timeout",
                                       "config.seed",
                                       "config.conversions",
                                       "config.baseline",
                                       "baseline",
                                       "results"};

static const char *const result_keys[] = {"conversion",
                                          "id",
                                          "status",
                                          "error",
                                          "device",
                                          "precision",
                                          "runtime",
                                          "runtime_version",
                                          "load_ms",
                                          "first_run_ms",
                                          "latency_ms.mean",
                                          "latency_ms.median",
                                          "latency_ms.min",
                                          "latency_ms.max",
                                          "latency_ms.p90",
                                          "latency_ms.p95",
                                          "latency_ms.p99",
                                          "latency_ms.stddev",
                                          "latency_ms.cv",
                                          "iterations",
                                          "batch_size",
                                          "throughput_sps",
                                          "inference_seconds",
                                          "elapsed_seconds",
                                          "peak_rss_mb",
                                          "accuracy",
                                          "speedup_vs_baseline",
                                          "warnings",
                                          "samples_ms",
                                          "log",
                                          "backtrace",
                                          "machine.host",
                                          "machine.cpu_model",
                                          "machine.cores"};

/* Parses the file and checks every documented key is present, in the
 * document and in each result. Returns the doc or NULL (message printed). */
static mb_json_doc *load_report(const char *path) {
  mb_json_doc *doc = NULL;
  mb_error err = {0};
  if (mb__json_parse_file(path, &doc, &err)) {
    fprintf(stderr, "  %s\n", err.message);
    return NULL;
  }
  int missing = 0;
  for (size_t k = 0; k < sizeof top_keys / sizeof top_keys[0]; k++)
    if (!at(&doc->root, top_keys[k])) {
      fprintf(stderr, "  missing key %s\n", top_keys[k]);
      missing = 1;
    }
  const mb_json_value *results = at(&doc->root, "results");
  for (size_t i = 0; results && i < results->count; i++) {
    const mb_json_value *r = &results->items[i];
    for (size_t k = 0; k < sizeof result_keys / sizeof result_keys[0]; k++)
      if (!at(r, result_keys[k])) {
        fprintf(stderr, "  result %zu: missing key %s\n", i, result_keys[k]);
        missing = 1;
      }
    /* error is null exactly when the status is ok. */
    if (is_null(at(r, "error")) != is_string(at(r, "status"), "ok")) {
      fprintf(stderr, "  result %zu: error/status mismatch\n", i);
      missing = 1;
    }
  }
  if (missing || !results || results->type != MB_JSON_ARRAY) {
    mb__json_doc_free(doc);
    return NULL;
  }
  return doc;
}

/* ---- JSON ---- */

static const char *const null_when_failed[] = {
    "load_ms",           "first_run_ms",        "throughput_sps",
    "inference_seconds", "elapsed_seconds",     "peak_rss_mb",
    "accuracy",          "speedup_vs_baseline", "log",
    "runtime",           "latency_ms.mean",     "latency_ms.median",
    "latency_ms.min",    "latency_ms.max",      "latency_ms.p90",
    "latency_ms.p95",    "latency_ms.p99",      "latency_ms.stddev",
    "latency_ms.cv"};

static int check_every_status(const mb_json_doc *doc) {
  const mb_json_value *root = &doc->root, *results = at(root, "results");
  static const char *const names[] = {
      "REFERENCE",  "ORT_CPU",        "TEST_ERROR", "TEST_TIMEOUT",
      "TEST_CRASH", "ORT_CPU_NO_OPT", "TEST_NAN"};
  const mb_json_value *conversions = at(root, "config.conversions");
  ASSERT_EQ(results->count, N_RESULTS);
  ASSERT_EQ(conversions->count, N_RESULTS);
  for (int i = 0; i < N_RESULTS; i++) {
    ASSERT(is_string(at(&results->items[i], "conversion"), names[i]));
    ASSERT(is_string(&conversions->items[i], names[i]));
  }
  ASSERT(is_number(at(root, "schema_version"), 1));
  ASSERT(is_string(at(root, "tool"), "modelbench"));
  ASSERT(is_string(at(root, "baseline"), "REFERENCE"));
  ASSERT(is_string(at(root, "config.seed"), "18446744073709551615"));
  ASSERT(is_string(at(root, "config.device"), "cpu"));
  ASSERT(is_string(at(root, "model.path"), "models/bert \"tiny\".onnx"));
  const mb_json_value *shape = at(root, "config.shapes.input_ids");
  ASSERT(shape && shape->count == 2 && is_number(&shape->items[1], 128));
  const mb_json_value *range = at(root, "config.input_ranges.input_ids");
  ASSERT(range && range->count == 2 && is_number(&range->items[1], 30521));
  const mb_json_value *in1 = &at(root, "model.inputs")->items[1];
  ASSERT(is_string(at(in1, "name"), "attention_mask"));
  ASSERT(is_string(at(in1, "dtype"), "int64"));
  ASSERT(is_number(&at(in1, "shape")->items[1], 128));
  const mb_json_value *isa = at(root, "machine.isa_flags");
  ASSERT_EQ(isa->count, 4);
  ASSERT(is_string(&isa->items[1], "avx2"));
  ASSERT(is_string(&isa->items[3], "avx512f"));

  const mb_json_value *ok = result_named(doc, "ORT_CPU");
  ASSERT(is_string(at(ok, "status"), "ok"));
  ASSERT(is_number(at(ok, "latency_ms.median"), 5.0));
  ASSERT(is_number(at(ok, "speedup_vs_baseline"), 4.0));
  ASSERT(is_number(at(ok, "accuracy.max_abs_err"), 3e-6));
  ASSERT(is_number(at(ok, "accuracy.cosine"), 0.999998));
  ASSERT(is_number(at(ok, "accuracy.max_rel_err"), 2e-5));
  ASSERT_EQ(at(ok, "accuracy.outputs")->count, 2);
  ASSERT(
      is_string(at(&at(ok, "accuracy.outputs")->items[0], "name"), "logits"));
  ASSERT_EQ(at(ok, "samples_ms")->count, 8);
  ASSERT(is_number(&at(ok, "samples_ms")->items[1], 5.001));
  ASSERT(is_number(at(ok, "iterations"), 8));
  ASSERT(is_string(at(ok, "log"), "/tmp/logs/ORT_CPU.log"));
  ASSERT(is_null(at(ok, "backtrace")));
  ASSERT(is_null(at(ok, "error")));
  ASSERT_EQ(at(ok, "warnings")->count, 0);
  /* The REFERENCE row was given its real registry index. */
  const mb_json_value *ref = result_named(doc, "REFERENCE");
  ASSERT(is_string(at(ref, "precision"), "fp32") ||
         is_null(at(ref, "precision")));
  ASSERT(is_null(at(ok, "precision"))); /* index -1: unknown */

  const mb_json_value *e = result_named(doc, "TEST_ERROR");
  ASSERT(is_string(at(e, "status"), "error"));
  ASSERT(at(e, "error")->type == MB_JSON_STRING);
  ASSERT_CONTAINS(at(e, "error")->string, "unsupported \"op\"\nsecond");
  static const char *const failed[] = {"TEST_ERROR", "TEST_CRASH",
                                       "ORT_CPU_NO_OPT"};
  for (size_t i = 0; i < sizeof failed / sizeof failed[0]; i++) {
    const mb_json_value *r = result_named(doc, failed[i]);
    for (size_t k = 0; k < sizeof null_when_failed / sizeof null_when_failed[0];
         k++)
      if (!is_null(at(r, null_when_failed[k])))
        TEST_FAIL_("%s: %s should be null", failed[i], null_when_failed[k]);
    ASSERT(is_number(at(r, "iterations"), 0));
    ASSERT_EQ(at(r, "samples_ms")->count, 0);
  }
  const mb_json_value *t = result_named(doc, "TEST_TIMEOUT");
  ASSERT(is_string(at(t, "status"), "timeout"));
  ASSERT(is_number(at(t, "load_ms"), 3.0)); /* measured before the timeout */
  const mb_json_value *c = result_named(doc, "TEST_CRASH");
  ASSERT(is_string(at(c, "status"), "crashed"));
  ASSERT_CONTAINS(at(c, "error")->string, "SIGSEGV");
  ASSERT(at(c, "backtrace")->type == MB_JSON_STRING);
  ASSERT_CONTAINS(at(c, "backtrace")->string, "#0 crash_run");
  ASSERT(is_string(at(result_named(doc, "ORT_CPU_NO_OPT"), "status"),
                   "unavailable"));

  const mb_json_value *n = result_named(doc, "TEST_NAN");
  ASSERT(is_null(at(n, "latency_ms.cv")));
  ASSERT(is_null(at(n, "latency_ms.p99")));
  ASSERT(is_number(at(n, "latency_ms.median"), 10.0));
  ASSERT(is_null(at(n, "accuracy")));
  ASSERT(is_null(at(n, "speedup_vs_baseline")));
  ASSERT_EQ(at(n, "warnings")->count, 2);
  ASSERT(
      is_string(&at(n, "warnings")->items[0], "CV 7.5% > 5%: noisy timings"));
  return 0;
}

TEST(json_every_status) {
  fixture f;
  fixture_init(&f);
  int ref_index = -1;
  mb_error err = {0};
  /* The real REFERENCE row gives the result its precision. */
  if (mb_conversion_find("REFERENCE", &ref_index, &err) == MB_STATUS_OK)
    f.results[0].conversion_index = ref_index;
  char dir[64], path[128];
  ASSERT_EQ(make_tmpdir(dir, sizeof dir), 0);
  snprintf(path, sizeof path, "%s/report.json", dir);
  ASSERT_OK(mb_bench_report_write_json(&f.report, path, &err), &err);
  mb_json_doc *doc = load_report(path);
  int rc = doc ? check_every_status(doc) : 1;
  mb__json_doc_free(doc);
  remove_tmpdir(dir);
  ASSERT_EQ(rc, 0);
  return 0;
}

/* Accuracy aggregates: the worst output wins, and a NaN makes it null. */
TEST(json_accuracy_nan_output) {
  fixture f;
  fixture_init(&f);
  f.results[1].accuracy[1].cosine = NAN;
  f.results[1].accuracy[1].max_rel_err = NAN;
  f.report.n_results = 2;
  char dir[64], path[128];
  mb_error err = {0};
  ASSERT_EQ(make_tmpdir(dir, sizeof dir), 0);
  snprintf(path, sizeof path, "%s/report.json", dir);
  ASSERT_OK(mb_bench_report_write_json(&f.report, path, &err), &err);
  mb_json_doc *doc = load_report(path);
  remove_tmpdir(dir);
  ASSERT(doc);
  const mb_json_value *a = at(result_named(doc, "ORT_CPU"), "accuracy");
  int ok = is_null(at(a, "cosine")) && is_null(at(a, "max_rel_err")) &&
           is_number(at(a, "max_abs_err"), 3e-6) &&
           is_null(at(&at(a, "outputs")->items[1], "cosine")) &&
           is_number(at(&at(a, "outputs")->items[0], "cosine"), 0.999999);
  mb__json_doc_free(doc);
  ASSERT(ok);
  return 0;
}

/* Rewriting the report (as the engine does after each conversion) replaces
 * it in one step: the file is always a complete document and no temporary
 * file is left behind. */
TEST(json_atomic_rewrite) {
  fixture f;
  fixture_init(&f);
  char dir[64], path[128];
  mb_error err = {0};
  ASSERT_EQ(make_tmpdir(dir, sizeof dir), 0);
  snprintf(path, sizeof path, "%s/report.json", dir);
  int rc = 0;
  for (int n = 1; n <= N_RESULTS && rc == 0; n++) {
    f.report.n_results = n;
    if (mb_bench_report_write_json(&f.report, path, &err) ||
        count_files(dir) != 1) {
      rc = 1;
      break;
    }
    mb_json_doc *doc = load_report(path);
    if (!doc || at(&doc->root, "results")->count != (size_t)n)
      rc = 1;
    mb__json_doc_free(doc);
  }
  remove_tmpdir(dir);
  ASSERT_EQ(rc, 0);
  return 0;
}

TEST(json_unwritable_path) {
  fixture f;
  fixture_init(&f);
  mb_error err = {0};
  mb_status s = mb_bench_report_write_json(
      &f.report, "/nonexistent-dir-mb/report.json", &err);
  ASSERT_EQ(s, MB_STATUS_IO);
  ASSERT_CONTAINS(err.message, "/nonexistent-dir-mb/report.json");
  ASSERT_EQ(mb_bench_report_write_json(&f.report, "", &err),
            MB_STATUS_INVALID_ARGUMENT);
  return 0;
}

/* An empty run is still a complete report. */
TEST(json_empty_report) {
  mb_bench_report report;
  memset(&report, 0, sizeof report);
  mb_bench_config_init(&report.config);
  report.baseline_result = -1;
  char dir[64], path[128];
  mb_error err = {0};
  ASSERT_EQ(make_tmpdir(dir, sizeof dir), 0);
  snprintf(path, sizeof path, "%s/report.json", dir);
  ASSERT_OK(mb_bench_report_write_json(&report, path, &err), &err);
  mb_json_doc *doc = load_report(path);
  remove_tmpdir(dir);
  ASSERT(doc);
  int ok = at(&doc->root, "results")->count == 0 &&
           is_null(at(&doc->root, "baseline")) &&
           is_null(at(&doc->root, "model.path"));
  mb__json_doc_free(doc);
  ASSERT(ok);
  return 0;
}

/* ---- table ---- */

/* Offset of the row starting with marker + name, or -1. */
static long row_at(const char *text, const char *name) {
  char needle[64];
  snprintf(needle, sizeof needle, "\n  %s ", name);
  const char *p = strstr(text, needle);
  if (!p) {
    snprintf(needle, sizeof needle, "\n* %s ", name);
    p = strstr(text, needle);
  }
  return p ? (long)(p - text) : -1;
}

TEST(table_order_and_marks) {
  fixture f;
  fixture_init(&f);
  char *text = table_text(&f.report, 0);
  ASSERT(text);
  /* Ok rows by median (ORT_CPU 5, TEST_NAN 10, REFERENCE 20), then the
   * failures in request order. */
  static const char *const order[] = {
      "ORT_CPU",      "TEST_NAN",   "REFERENCE",     "TEST_ERROR",
      "TEST_TIMEOUT", "TEST_CRASH", "ORT_CPU_NO_OPT"};
  long prev = -1;
  int ok = 1;
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
    long at = row_at(text, order[i]);
    if (at <= prev) {
      fprintf(stderr, "  row %s at %ld, previous at %ld\n", order[i], at, prev);
      ok = 0;
    }
    prev = at;
  }
  int fastest_marked = strstr(text, "\n* ORT_CPU ") != NULL;
  int one_mark = strstr(text, "\n* REFERENCE") == NULL &&
                 strstr(text, "\n* TEST_NAN") == NULL;
  int has_base = strstr(text, "1.00x (base)") != NULL;
  int has_speedup = strstr(text, "4.00x") != NULL;
  int has_error = strstr(text, "unsupported \"op\" second line") != NULL;
  int has_unavailable =
      strstr(text, "unavailable") && strstr(text, "libonnxruntime.so.1");
  int has_ansi = strchr(text, '\033') != NULL;
  int has_header = strstr(text, "sha256 0123456789ab") &&
                   strstr(text, "input_ids int64[1,128]") &&
                   strstr(text, "Test CPU @ 3.0GHz, 8 cores");
  int has_warning = strstr(text, "TEST_NAN: CV 7.5% > 5%") != NULL;
  if (!ok || !fastest_marked || !has_base || !has_error || !has_header)
    fprintf(stderr, "%s", text);
  free(text);
  ASSERT(ok);
  ASSERT(fastest_marked);
  ASSERT(one_mark);
  ASSERT(has_base);
  ASSERT(has_speedup);
  ASSERT(has_error);
  ASSERT(has_unavailable);
  ASSERT(!has_ansi);
  ASSERT(has_header);
  ASSERT(has_warning);
  return 0;
}

TEST(table_color_only_when_asked) {
  fixture f;
  fixture_init(&f);
  char *text = table_text(&f.report, 1);
  ASSERT(text);
  int green = strstr(text, "\033[32mok") != NULL;
  int red = strstr(text, "\033[31merror") != NULL;
  int yellow = strstr(text, "\033[33m") != NULL;
  free(text);
  ASSERT(green);
  ASSERT(red);
  ASSERT(yellow);
  return 0;
}

/* A long error is cut to the terminal width, never split mid-character. */
TEST(table_long_error_clipped) {
  fixture f;
  fixture_init(&f);
  char *e = f.results[2].error;
  size_t n = sizeof f.results[2].error - 1;
  for (size_t i = 0; i + 2 <= n; i += 2)
    memcpy(e + i, "\xc3\xa9", 2); /* e-acute */
  e[n - (n % 2)] = '\0';
  char *text = table_text(&f.report, 0);
  ASSERT(text);
  size_t longest = 0;
  int split = 0;
  for (char *line = text; *line;) {
    char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line), chars = 0;
    for (size_t i = 0; i < len; i++)
      chars += ((unsigned char)line[i] & 0xc0) != 0x80;
    /* The "model:" header line holds the whole path; rows stay short. */
    if (strncmp(line, "model:", 6) != 0)
      longest = chars > longest ? chars : longest;
    if (len >= 4 && memcmp(line + len - 3, "...", 3) == 0 &&
        (unsigned char)line[len - 4] == 0xc3)
      split = 1;
    line += len + (end ? 1 : 0);
  }
  free(text);
  ASSERT(longest <= 120);
  ASSERT(!split);
  return 0;
}

TEST(table_no_results) {
  mb_bench_report report;
  memset(&report, 0, sizeof report);
  mb_bench_config_init(&report.config);
  report.baseline_result = -1;
  char *text = table_text(&report, 0);
  ASSERT(text);
  int says = strstr(text, "no conversions") != NULL;
  free(text);
  ASSERT(says);
  return 0;
}

/* A report read back from its JSON (what the executors merge) writes the
 * same JSON again: every field the writer writes is read. */
TEST(json_read_back) {
  fixture f;
  fixture_init(&f);
  mb_error err = {0};
  f.results[1].machine = f.report.machine;
  snprintf(f.results[1].machine.host, sizeof f.results[1].machine.host,
           "node7");
  /* A hybrid result at a reduced precision, partly run in fp32. */
  mb_segment_stats segments[2] = {{"onednn", 12, 3.5, "bf16", 1.25},
                                  {"reference", 2, 0.5, "fp32", -1}};
  f.results[1].precision_share = 0.83;
  f.results[1].segments = segments;
  f.results[1].n_segments = 2;
  /* The cold start, energy (a figure, and why not) and cost come back. */
  f.report.config.cold = 1;
  f.report.config.price_per_core_hour = 0.05;
  f.results[1].cold = (mb_cold_start){.measured = 1,
                                      .build_miss_ms = 812.5,
                                      .build_hit_ms = 3.25,
                                      .model_read_ms = 1.5,
                                      .load_ms = 41.5,
                                      .first_inference_ms = 9.75,
                                      .iterations_to_steady = 7,
                                      .time_to_first_result_ms = 54.5,
                                      .time_to_first_result_miss_ms = 863.75};
  f.results[1].energy = (mb_energy){.available = 1,
                                    .joules = 12.5,
                                    .joules_per_inference = 0.125,
                                    .domains = "intel-rapl:0"};
  snprintf(f.results[0].energy.unavailable,
           sizeof f.results[0].energy.unavailable,
           "no /sys/class/powercap: this machine exposes no RAPL (a VM?)");
  f.results[1].cost_per_million = 0.0625;
  /* A model a script ran: its script, location and labels come back. */
  static const char *labels[] = {"task=demo", "script=/s/demo.py"};
  snprintf(f.report.model_script, sizeof f.report.model_script, "/s/demo.py");
  snprintf(f.report.model_location, sizeof f.report.model_location,
           "/s/demo.py:12");
  f.report.labels = labels;
  f.report.n_labels = 2;
  /* A server run with find-peak: every load figure comes back, the
   * harness's delays and the ideal queue's p99 included. */
  mb_load_trial trials[2] = {{100, 99.5, 4.25, 1, 1}, {200, 150, 30.5, 0, 0}};
  mb_load_stats *l = &f.results[1].load;
  *l = (mb_load_stats){.scenario = MB_LOAD_SERVER,
                       .concurrency = 2,
                       .target_qps = 100,
                       .scheduled_qps = 101.5,
                       .achieved_qps = 99.5,
                       .queries = 1000,
                       .unserved = 1,
                       .samples_per_query = 1,
                       .duration_s = 10.25,
                       .valid = 0,
                       .invalid_reason = "1 of 1000 queries not served",
                       .queue_depth_mean = 0.25,
                       .queue_depth_max = 3,
                       .service_ms = {1.5, 1.25, 1, 3, 2, 2.25, 2.5, 0, 0},
                       .slo_latency_ms = 4.25,
                       .slo_met = 1,
                       .over_slo_share = 0.005,
                       .generator_lateness_us = {0.5, 3.25, 12},
                       .handoff_us = {0.25, 1.5, 40},
                       .idle_sleeps = 900,
                       .spin_fallbacks = 2,
                       .spin_margin_us = 230,
                       .steal_ms = 40,
                       .ideal_p99_ms = 3.75,
                       .harness_excess = 1,
                       .peak_qps = 100,
                       .n_trials = 2,
                       .trials = trials};
  /* The reader finds the registry's rows by name, as the writer would. */
  for (int i = 0; i < N_RESULTS; i++)
    mb_conversion_find(f.results[i].conversion, &f.results[i].conversion_index,
                       &err);
  char dir[64], first[128], second[128];
  ASSERT_EQ(make_tmpdir(dir, sizeof dir), 0);
  snprintf(first, sizeof first, "%s/first.json", dir);
  snprintf(second, sizeof second, "%s/second.json", dir);
  ASSERT_OK(mb_bench_report_write_json(&f.report, first, &err), &err);
  mb_bench_report **loaded = NULL;
  int n = 0;
  ASSERT_OK(mb__reports_load_json(first, &loaded, &n, &err), &err);
  ASSERT_EQ(n, 1);
  ASSERT_OK(mb_bench_report_write_json(loaded[0], second, &err), &err);
  int host_kept = strcmp(loaded[0]->results[1].machine.host, "node7") == 0;
  const mb_load_stats *load = &loaded[0]->results[1].load;
  int load_kept = load->scenario == MB_LOAD_SERVER &&
                  load->handoff_us.max == 40 && load->ideal_p99_ms == 3.75 &&
                  load->harness_excess == 1 && load->n_trials == 2 &&
                  load->trials[1].latency_ms == 30.5 &&
                  load->spin_fallbacks == 2 && load->spin_always == 0 &&
                  load->spin_margin_us == 230 && load->steal_ms == 40;
  int source_kept = strcmp(loaded[0]->model_location, "/s/demo.py:12") == 0 &&
                    loaded[0]->n_labels == 2 &&
                    strcmp(loaded[0]->labels[1], "script=/s/demo.py") == 0;
  const mb_bench_result *back = loaded[0]->results;
  int cold_kept = back[1].cold.measured &&
                  back[1].cold.build_miss_ms == 812.5 &&
                  back[1].cold.iterations_to_steady == 7 &&
                  !back[0].cold.measured && loaded[0]->config.cold == 1;
  int energy_kept = back[1].energy.available &&
                    back[1].energy.joules_per_inference == 0.125 &&
                    !back[0].energy.available &&
                    strstr(back[0].energy.unavailable, "exposes no RAPL") &&
                    back[1].cost_per_million == 0.0625 &&
                    back[0].cost_per_million < 0 &&
                    loaded[0]->config.price_per_core_hour == 0.05;
  mb__reports_free(loaded, n);
  void *a = NULL, *b = NULL;
  size_t na = 0, nb = 0;
  ASSERT_OK(mb__read_file(first, &a, &na, &err), &err);
  ASSERT_OK(mb__read_file(second, &b, &nb, &err), &err);
  int same = na == nb && memcmp(a, b, na) == 0;
  if (!same)
    fprintf(stderr, "  %s and %s differ\n", first, second);
  else
    remove_tmpdir(dir);
  free(a);
  free(b);
  ASSERT(same);
  ASSERT(host_kept);
  ASSERT(source_kept);
  ASSERT(cold_kept);
  ASSERT(energy_kept);
  ASSERT(load_kept);
  return 0;
}

/* A file that is not a report is an error naming it, not a crash. */
TEST(json_read_back_bad_file) {
  char dir[64], path[128];
  mb_error err = {0};
  ASSERT_EQ(make_tmpdir(dir, sizeof dir), 0);
  snprintf(path, sizeof path, "%s/bad.json", dir);
  FILE *f = fopen(path, "w");
  ASSERT(f);
  fputs("{\"results\": [{\"conversion\": 3}]}", f);
  fclose(f);
  mb_bench_report **loaded = NULL;
  int n = 0;
  mb_status status = mb__reports_load_json(path, &loaded, &n, &err);
  int named = strstr(err.message, "bad.json") != NULL;
  if (!named)
    fprintf(stderr, "  message: %s\n", err.message);
  remove_tmpdir(dir);
  ASSERT(status != MB_STATUS_OK);
  ASSERT(named);
  return 0;
}

/* Results from machines of different kinds (a run spread over a cluster)
 * are ranked with a note naming the kinds and where each ran, and the
 * recommendation carries a caution; one kind says nothing. */
TEST(table_mixed_machines) {
  fixture f;
  fixture_init(&f);
  for (int i = 0; i < N_RESULTS; i++) {
    f.results[i].machine = f.report.machine;
    snprintf(f.results[i].machine.host, sizeof f.results[i].machine.host,
             "node%d", i);
  }
  char *text = table_text(&f.report, 0);
  ASSERT(text);
  int quiet = strstr(text, "kinds of machine") == NULL;
  free(text);
  ASSERT(quiet);
  mb_recommendations rec;
  mb_bench_recommend(&f.report, NULL, &rec);
  ASSERT(strstr(rec.summary, "Caution") == NULL);

  f.results[1].machine.cores = 4; /* ORT_CPU ran on a smaller machine */
  text = table_text(&f.report, 0);
  ASSERT(text);
  int note = strstr(text, "ran on 2 kinds of machine") != NULL;
  int kind_a =
      strstr(text, "A: Test CPU @ 3.0GHz, 8 cores: REFERENCE (node0)") != NULL;
  int kind_b =
      strstr(text, "B: Test CPU @ 3.0GHz, 4 cores: ORT_CPU (node1)\n") != NULL;
  if (!note || !kind_a || !kind_b)
    fprintf(stderr, "%s", text);
  free(text);
  ASSERT(note);
  ASSERT(kind_a);
  ASSERT(kind_b);
  mb_bench_recommend(&f.report, NULL, &rec);
  ASSERT(strstr(rec.summary, "Caution: ranked across 2 kinds of machine"));
  return 0;
}

TEST_MAIN(TEST_ENTRY(json_every_status), TEST_ENTRY(json_accuracy_nan_output),
          TEST_ENTRY(json_atomic_rewrite), TEST_ENTRY(json_unwritable_path),
          TEST_ENTRY(json_empty_report), TEST_ENTRY(table_order_and_marks),
          TEST_ENTRY(table_color_only_when_asked),
          TEST_ENTRY(table_long_error_clipped), TEST_ENTRY(table_no_results),
          TEST_ENTRY(table_mixed_machines), TEST_ENTRY(json_read_back),
          TEST_ENTRY(json_read_back_bad_file))
