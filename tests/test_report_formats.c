/* The CSV, Markdown and HTML reports and the recommendations, on reports
 * built by hand (no runtime, no child process): every status, names and
 * errors full of characters that mean something to CSV, Markdown and HTML,
 * results without samples or accuracy, and an fp16 result that is the
 * fastest but not accurate.
 *
 * `test_report_formats --write-html PATH` writes the fixture's HTML report
 * to PATH and exits: tests/cli_html_browser.sh opens it in a browser. */
#include "modelbench.h"
#include "test.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- a hand-built report ---- */

enum {
  I_REFERENCE,
  I_ORT_CPU,
  I_FP16,       /* fastest, cosine 0.99: not accurate */
  I_BF16,       /* cosine 0.9995: the fastest accurate */
  I_XNNPACK,    /* fp32 with values outside rtol/atol: not accurate */
  I_WEIRD,      /* error; name and message full of markup */
  I_CUDA,       /* unavailable */
  I_SKIPPED,    /* skipped */
  I_NO_SAMPLES, /* ok, no samples, no accuracy, no RSS */
  I_TIMEOUT,    /* timeout after loading */
  N_RESULTS
};

#define WEIRD_NAME "WEIRD|<b>\"NAME\",`x`"
#define WEIRD_ERROR                                                            \
  "<script>alert(\"x\")</script> & 'quoted', comma|pipe\nsecond line \xff"
/* ... as the reports write it: valid UTF-8. */
#define WEIRD_ERROR_UTF8                                                       \
  "<script>alert(\"x\")</script> & 'quoted', comma|pipe\nsecond line "         \
  "\xef\xbf\xbd"
#define MODEL_PATH "models/a,b \"c\" <d>&e|f.onnx"

typedef struct fixture {
  mb_bench_report report;
  mb_bench_result results[N_RESULTS];
  mb_input_shape inputs[1];
  mb_dtype dtypes[1];
  mb_output_accuracy accuracy[N_RESULTS][2];
  double samples[N_RESULTS][10];
  char *warnings_nan[2];
  char *warnings_xnn[1];
} fixture;

static void ok_result(fixture *f, int i, const char *name, double median,
                      double rss, double cosine) {
  mb_bench_result *r = &f->results[i];
  r->conversion_index = -1;
  r->conversion_id = 100 + i;
  r->conversion = name;
  r->status = MB_BENCH_OK;
  snprintf(r->device, sizeof r->device, "cpu");
  snprintf(r->runtime, sizeof r->runtime, "onnxruntime");
  r->load_ms = 12.5;
  r->first_run_ms = median * 3;
  r->latency_ms = (mb_latency_stats){median * 1.01, median,        median * 0.9,
                                     median * 1.5,  median * 1.2,  median * 1.3,
                                     median * 1.4,  median * 0.02, 0.02};
  r->iterations = 10;
  r->batch_size = 1;
  r->inference_seconds = median * 10 / 1000;
  r->throughput_sps = 1000.0 / median;
  r->peak_rss_mb = rss;
  r->has_accuracy = 1;
  r->n_outputs = 2;
  r->accuracy = f->accuracy[i];
  r->accuracy[0] = (mb_output_accuracy){"logits", 2e-6, 1e-5, 0.999999};
  r->accuracy[1] = (mb_output_accuracy){"hidden", 3e-6, 2e-5, cosine};
  r->max_abs_err = 3e-6;
  r->speedup_vs_baseline = 20.0 / median;
  /* median * (0.9 .. 1.35): p10 = median * 0.945, p90 = median * 1.305. */
  for (int k = 0; k < 10; k++)
    f->samples[i][k] = median * (0.9 + 0.05 * k);
  r->n_samples_ms = 10;
  r->samples_ms = f->samples[i];
}

static void failed_result(fixture *f, int i, const char *name,
                          mb_bench_status status, const char *error) {
  mb_bench_result *r = &f->results[i];
  r->conversion_index = -1;
  r->conversion_id = 100 + i;
  r->conversion = name;
  r->status = status;
  snprintf(r->error, sizeof r->error, "%s", error);
  snprintf(r->device, sizeof r->device, "cpu");
  r->max_abs_err = -1;
}

static void fixture_init(fixture *f) {
  memset(f, 0, sizeof *f);
  mb_bench_report *rep = &f->report;
  snprintf(rep->tool_version, sizeof rep->tool_version, "%s",
           MB_VERSION_STRING);
  snprintf(rep->model_path, sizeof rep->model_path, "%s", MODEL_PATH);
  snprintf(rep->model_sha256, sizeof rep->model_sha256, "%s",
           "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
  f->inputs[0] = (mb_input_shape){"x<in>", 2, {1, 16}};
  f->dtypes[0] = MB_DTYPE_FLOAT;
  rep->n_inputs = 1;
  rep->inputs = f->inputs;
  rep->input_dtypes = f->dtypes;
  snprintf(rep->machine.cpu_model, sizeof rep->machine.cpu_model,
           "Test CPU <fast> & cheap");
  rep->machine.cores = 8;
  snprintf(rep->machine.isa_flags, sizeof rep->machine.isa_flags, "avx2 fma");
  snprintf(rep->machine.os, sizeof rep->machine.os, "Linux 6.1");
  rep->machine.load_average = 0.25;
  mb_bench_config_init(&rep->config);

  ok_result(f, I_REFERENCE, "REFERENCE", 20.0, 90.0, 1.0);
  ok_result(f, I_ORT_CPU, "ORT_CPU", 10.0, 120.0, 0.999999);
  ok_result(f, I_FP16, "FP16+ORT_CPU", 4.0, 100.0, 0.99);
  f->results[I_FP16].max_abs_err = f->accuracy[I_FP16][1].max_abs_err = 0.05;
  ok_result(f, I_BF16, "BF16+ORT_CPU", 6.0, 150.0, 0.9995);
  f->results[I_BF16].max_abs_err = f->accuracy[I_BF16][1].max_abs_err = 0.01;
  ok_result(f, I_XNNPACK, "XNNPACK", 8.0, 110.0, 0.99999);
  f->warnings_xnn[0] = "output 'hidden': 3 of 16 values differ from the "
                       "reference beyond rtol 0.001, atol 0.0001";
  f->results[I_XNNPACK].warnings = f->warnings_xnn;
  f->results[I_XNNPACK].n_warnings = 1;
  failed_result(f, I_WEIRD, WEIRD_NAME, MB_BENCH_ERROR, WEIRD_ERROR);
  failed_result(f, I_CUDA, "ORT_CUDA", MB_BENCH_UNAVAILABLE,
                "libcudart.so.12: cannot open shared object file");
  failed_result(f, I_SKIPPED, "ORT_CPU_BASIC", MB_BENCH_SKIPPED,
                "skipped after an earlier failure (--fail-fast)");
  ok_result(f, I_NO_SAMPLES, "NO_SAMPLES", 12.0, 0.0, 1.0);
  mb_bench_result *ns = &f->results[I_NO_SAMPLES];
  ns->samples_ms = NULL;
  ns->n_samples_ms = 0;
  ns->has_accuracy = 0;
  ns->accuracy = NULL;
  ns->n_outputs = 0;
  ns->max_abs_err = -1;
  ns->latency_ms.cv = NAN;
  f->warnings_nan[0] = "high variance: CV 7.5% > 5%";
  f->warnings_nan[1] = "accuracy unknown: no | reference";
  ns->warnings = f->warnings_nan;
  ns->n_warnings = 2;
  failed_result(f, I_TIMEOUT, "TEST_TIMEOUT", MB_BENCH_TIMEOUT,
                "timed out after 0.5 s in phase measure");
  f->results[I_TIMEOUT].load_ms = 3.0;

  rep->n_results = N_RESULTS;
  rep->results = f->results;
  rep->baseline_result = I_REFERENCE;
}

/* ---- helpers ---- */

static int make_tmpdir(char *dir, size_t size) {
  snprintf(dir, size, "/tmp/mb_test_formats_XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

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

typedef enum format { FORMAT_CSV, FORMAT_MARKDOWN, FORMAT_HTML } format;

/* Writes the reports in one format and reads the file back. */
static char *write_and_read(format fmt, const mb_bench_report *const *reports,
                            int n) {
  char dir[64], path[128];
  if (make_tmpdir(dir, sizeof dir))
    return NULL;
  snprintf(path, sizeof path, "%s/report", dir);
  mb_error err = {0};
  mb_status s = fmt == FORMAT_CSV
                    ? mb_bench_reports_write_csv(reports, n, path, &err)
                : fmt == FORMAT_MARKDOWN
                    ? mb_bench_reports_write_markdown(reports, n, path, &err)
                    : mb_bench_reports_write_html(reports, n, path, &err);
  char *text = s == MB_STATUS_OK ? read_text(path) : NULL;
  if (s != MB_STATUS_OK)
    fprintf(stderr, "  write failed: %s\n", err.message);
  remove_tmpdir(dir);
  return text;
}

static int count(const char *haystack, const char *needle) {
  int n = 0;
  for (const char *p = haystack; (p = strstr(p, needle)); p += strlen(needle))
    n++;
  return n;
}

/* ---- an RFC 4180 reader ---- */

enum { MAX_ROWS = 32, MAX_FIELDS = 64 };

typedef struct csv {
  int n_rows;
  int n_fields[MAX_ROWS];
  char *field[MAX_ROWS][MAX_FIELDS];
  int crlf_only; /* every record ends in CRLF */
} csv;

static void csv_free(csv *c) {
  for (int r = 0; r < c->n_rows; r++)
    for (int i = 0; i < c->n_fields[r]; i++)
      free(c->field[r][i]);
}

/* Strict: a quote inside an unquoted field, text after a closing quote or
 * an unterminated quote fails. Returns 0 on success. */
static int csv_parse(const char *s, csv *c) {
  memset(c, 0, sizeof *c);
  c->crlf_only = 1;
  size_t len = strlen(s);
  char *buf = malloc(len + 1);
  if (!buf)
    return -1;
  while (*s) {
    if (c->n_rows == MAX_ROWS)
      goto fail;
    int row = c->n_rows++;
    for (;;) {
      size_t n = 0;
      if (*s == '"') {
        s++;
        for (;;) {
          if (!*s)
            goto fail;
          if (*s == '"' && s[1] == '"') {
            buf[n++] = '"';
            s += 2;
          } else if (*s == '"') {
            s++;
            break;
          } else {
            buf[n++] = *s++;
          }
        }
        if (*s != ',' && *s != '\r' && *s != '\n' && *s)
          goto fail;
      } else {
        while (*s && *s != ',' && *s != '\r' && *s != '\n') {
          if (*s == '"')
            goto fail;
          buf[n++] = *s++;
        }
      }
      buf[n] = '\0';
      if (c->n_fields[row] == MAX_FIELDS)
        goto fail;
      c->field[row][c->n_fields[row]++] = strdup(buf);
      if (*s == ',') {
        s++;
        continue;
      }
      if (*s == '\r' && s[1] == '\n')
        s += 2;
      else if (*s == '\n' && (c->crlf_only = 0, 1))
        s++;
      else if (*s)
        goto fail;
      break;
    }
  }
  free(buf);
  return 0;
fail:
  free(buf);
  return -1;
}

static int csv_column(const csv *c, const char *name) {
  for (int i = 0; i < c->n_fields[0]; i++)
    if (strcmp(c->field[0][i], name) == 0)
      return i;
  return -1;
}

/* The row whose conversion cell is name, or -1. */
static int csv_row(const csv *c, const char *name) {
  int col = csv_column(c, "conversion");
  for (int r = 1; col >= 0 && r < c->n_rows; r++)
    if (strcmp(c->field[r][col], name) == 0)
      return r;
  return -1;
}

static const char *cell(const csv *c, const char *conversion,
                        const char *column) {
  int r = csv_row(c, conversion), col = csv_column(c, column);
  return r >= 0 && col >= 0 ? c->field[r][col] : NULL;
}

/* ---- CSV ---- */

static const char *const numeric_columns[] = {
    "median_ms",   "mean_ms",        "p90_ms",
    "p99_ms",      "min_ms",         "stddev_ms",
    "cv",          "throughput_sps", "speedup_vs_baseline",
    "max_abs_err", "min_cosine",     "load_ms",
    "peak_rss_mb", "iterations"};

static int check_csv(const csv *c) {
  /* The columns the brief promises. */
  static const char *const required[] = {
      "model",       "model_sha256", "conversion",     "runtime",
      "precision",   "status",       "error",          "median_ms",
      "mean_ms",     "p90_ms",       "p99_ms",         "min_ms",
      "stddev_ms",   "cv",           "throughput_sps", "speedup_vs_baseline",
      "max_abs_err", "min_cosine",   "load_ms",        "peak_rss_mb",
      "iterations",  "warnings"};
  for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
    if (csv_column(c, required[i]) < 0)
      TEST_FAIL_("no column %s", required[i]);
  ASSERT(c->crlf_only);
  for (int r = 1; r < c->n_rows; r++)
    ASSERT_EQ(c->n_fields[r], c->n_fields[0]);

  /* Text round-trips through the quoting. */
  ASSERT_STR_EQ(cell(c, WEIRD_NAME, "error"), WEIRD_ERROR_UTF8);
  ASSERT_STR_EQ(cell(c, WEIRD_NAME, "model"), MODEL_PATH);
  ASSERT_STR_EQ(cell(c, "NO_SAMPLES", "warnings"),
                "high variance: CV 7.5% > 5%; accuracy unknown: no | "
                "reference");

  /* Numbers, and why a number is missing. */
  ASSERT_STR_EQ(cell(c, "ORT_CPU", "median_ms"), "10");
  ASSERT_STR_EQ(cell(c, "ORT_CPU", "speedup_vs_baseline"), "2");
  ASSERT_STR_EQ(cell(c, "ORT_CPU", "max_abs_err"), "3e-06");
  ASSERT_STR_EQ(cell(c, "ORT_CPU", "precision"), "fp32");
  ASSERT_STR_EQ(cell(c, "ORT_CPU", "accurate"), "yes");
  ASSERT_STR_EQ(cell(c, "FP16+ORT_CPU", "precision"), "fp16");
  ASSERT_STR_EQ(cell(c, "FP16+ORT_CPU", "min_cosine"), "0.99");
  ASSERT_STR_EQ(cell(c, "FP16+ORT_CPU", "accurate"), "no");
  ASSERT_STR_EQ(cell(c, "XNNPACK", "accurate"), "no");
  ASSERT_STR_EQ(cell(c, "REFERENCE", "baseline"), "yes");
  ASSERT_STR_EQ(cell(c, WEIRD_NAME, "median_ms"), "n/a: failed (error)");
  ASSERT_STR_EQ(cell(c, WEIRD_NAME, "max_abs_err"), "n/a: failed (error)");
  ASSERT_STR_EQ(cell(c, WEIRD_NAME, "iterations"), "n/a: failed (error)");
  ASSERT_STR_EQ(cell(c, "ORT_CUDA", "p99_ms"), "n/a: unavailable");
  ASSERT_STR_EQ(cell(c, "ORT_CUDA", "error"),
                "libcudart.so.12: cannot open shared object file");
  ASSERT_STR_EQ(cell(c, "ORT_CPU_BASIC", "median_ms"),
                "n/a: not run (skipped)");
  ASSERT_STR_EQ(cell(c, "TEST_TIMEOUT", "median_ms"), "n/a: failed (timeout)");
  ASSERT_STR_EQ(cell(c, "TEST_TIMEOUT", "load_ms"), "3");
  ASSERT_STR_EQ(cell(c, "NO_SAMPLES", "max_abs_err"), "n/a: no reference");
  ASSERT_STR_EQ(cell(c, "NO_SAMPLES", "min_cosine"), "n/a: no reference");
  ASSERT_STR_EQ(cell(c, "NO_SAMPLES", "cv"), "n/a: not measured");
  ASSERT_STR_EQ(cell(c, "NO_SAMPLES", "peak_rss_mb"), "n/a: not measured");
  ASSERT_STR_EQ(cell(c, "NO_SAMPLES", "median_ms"), "12");

  /* No measurement cell is ever empty. */
  for (int r = 1; r < c->n_rows; r++)
    for (size_t k = 0; k < sizeof numeric_columns / sizeof numeric_columns[0];
         k++) {
      int col = csv_column(c, numeric_columns[k]);
      if (col < 0 || !c->field[r][col][0])
        TEST_FAIL_("row %d: empty %s", r, numeric_columns[k]);
    }
  return 0;
}

TEST(csv_round_trip) {
  fixture f;
  fixture_init(&f);
  const mb_bench_report *reports[] = {&f.report};
  char *text = write_and_read(FORMAT_CSV, reports, 1);
  ASSERT(text);
  csv c;
  int parsed = csv_parse(text, &c);
  if (parsed)
    fprintf(stderr, "%s", text);
  free(text);
  ASSERT_EQ(parsed, 0);
  ASSERT_EQ(c.n_rows, 1 + N_RESULTS);
  int rc = check_csv(&c);
  csv_free(&c);
  return rc;
}

/* Several models: one header, rows of each model in order. */
TEST(csv_several_models) {
  fixture a, b;
  fixture_init(&a);
  fixture_init(&b);
  snprintf(b.report.model_path, sizeof b.report.model_path, "second.onnx");
  b.report.n_results = 2;
  const mb_bench_report *reports[] = {&a.report, &b.report};
  char *text = write_and_read(FORMAT_CSV, reports, 2);
  ASSERT(text);
  csv c;
  int parsed = csv_parse(text, &c);
  free(text);
  ASSERT_EQ(parsed, 0);
  int ok = c.n_rows == 1 + N_RESULTS + 2 &&
           strcmp(c.field[1 + N_RESULTS][0], "second.onnx") == 0 &&
           strcmp(c.field[N_RESULTS][0], MODEL_PATH) == 0 &&
           strcmp(c.field[0][0], "model") == 0;
  csv_free(&c);
  ASSERT(ok);
  return 0;
}

/* Formula injection (issue 27): text a spreadsheet would run as a formula
 * (a label, a model path, an error message) starts with a quote in the
 * CSV, and numbers the writer formatted, negative ones too, stay numbers. */
TEST(csv_neutralises_formulas) {
  fixture f;
  fixture_init(&f);
  snprintf(f.report.model_path, sizeof f.report.model_path,
           "=cmd|' /C calc'!A0.onnx");
  const char *labels[] = {"owner==HYPERLINK(\"http://evil/\",\"x\")",
                          "team=@SUM(1+1)", "plain=ok"};
  f.report.labels = labels;
  f.report.n_labels = 3;
  snprintf(f.results[I_CUDA].error, sizeof f.results[I_CUDA].error,
           "-2+3 cannot open libcudart");
  snprintf(f.results[I_SKIPPED].error, sizeof f.results[I_SKIPPED].error,
           "+cmd|' /C calc'!A0");
  f.results[I_ORT_CPU].load_ms = -0.5; /* a negative number stays one */
  const mb_bench_report *reports[] = {&f.report};
  char *text = write_and_read(FORMAT_CSV, reports, 1);
  ASSERT(text);
  csv c;
  int parsed = csv_parse(text, &c);
  free(text);
  ASSERT_EQ(parsed, 0);
  int rc = 0;
  static const char *const expect[][3] = {
      {"ORT_CPU", "label:owner", "'=HYPERLINK(\"http://evil/\",\"x\")"},
      {"ORT_CPU", "label:team", "'@SUM(1+1)"},
      {"ORT_CPU", "label:plain", "ok"},
      {"ORT_CPU", "model", "'=cmd|' /C calc'!A0.onnx"},
      {"ORT_CUDA", "error", "'-2+3 cannot open libcudart"},
      {"ORT_CPU_BASIC", "error", "'+cmd|' /C calc'!A0"},
      {"ORT_CPU", "load_ms", "-0.5"},
      {"ORT_CPU", "median_ms", "10"},
  };
  for (size_t k = 0; k < sizeof expect / sizeof expect[0]; k++) {
    const char *got = cell(&c, expect[k][0], expect[k][1]);
    if (!got || strcmp(got, expect[k][2]) != 0) {
      fprintf(stderr, "  %s %s: '%s', expected '%s'\n", expect[k][0],
              expect[k][1], got ? got : "(none)", expect[k][2]);
      rc = 1;
    }
  }
  /* No text cell anywhere starts a formula. */
  for (int r = 1; r < c.n_rows; r++)
    for (int i = 0; i < c.n_fields[r]; i++) {
      const char *v = c.field[r][i];
      if (v[0] && strchr("=+@\t\r", v[0])) {
        fprintf(stderr, "  row %d column %s: '%s'\n", r, c.field[0][i], v);
        rc = 1;
      }
    }
  csv_free(&c);
  ASSERT_EQ(rc, 0);
  return 0;
}

/* A server run at a sweep point: the load columns carry its figures, a
 * result without them says why, and Markdown gains one line per run. */
TEST(load_run_columns_and_lines) {
  fixture f;
  fixture_init(&f);
  snprintf(f.report.sweep_point, sizeof f.report.sweep_point,
           "batch=4 threads=2");
  f.report.config.load.scenario = MB_LOAD_SERVER;
  f.report.config.load.slo_percentile = 99;
  f.report.config.load.slo_ms = 20;
  mb_load_stats *l = &f.results[I_ORT_CPU].load;
  l->scenario = MB_LOAD_SERVER;
  l->concurrency = 2;
  l->target_qps = 150;
  l->achieved_qps = 120;
  l->queries = 1200;
  l->valid = 0;
  snprintf(l->invalid_reason, sizeof l->invalid_reason,
           "achieved 120 QPS, below the target 150 by more than 10%%");
  l->slo_latency_ms = 35;
  l->slo_met = 0;
  l->over_slo_share = 0.25;
  l->queue_depth_mean = 3.5;
  l->ideal_p99_ms = 1.75;
  l->generator_lateness_us.p99 = 0.5;
  l->handoff_us.p99 = 2.5;
  const mb_bench_report *reports[] = {&f.report};

  char *text = write_and_read(FORMAT_CSV, reports, 1);
  ASSERT(text);
  csv c;
  int parsed = csv_parse(text, &c);
  free(text);
  ASSERT_EQ(parsed, 0);
  int rc = 0;
  static const char *const expect[][2] = {{"sweep_point", "batch=4 threads=2"},
                                          {"scenario", "server"},
                                          {"concurrency", "2"},
                                          {"target_qps", "150"},
                                          {"achieved_qps", "120"},
                                          {"load_valid", "no"},
                                          {"slo_latency_ms", "35"},
                                          {"slo_met", "no"},
                                          {"over_slo_share", "0.25"},
                                          {"queue_depth_mean", "3.5"},
                                          {"peak_qps", "n/a: no find-peak"}};
  for (size_t k = 0; k < sizeof expect / sizeof expect[0]; k++) {
    const char *got = cell(&c, "ORT_CPU", expect[k][0]);
    if (!got || strcmp(got, expect[k][1]) != 0) {
      fprintf(stderr, "  %s: '%s', expected '%s'\n", expect[k][0],
              got ? got : "(none)", expect[k][1]);
      rc = 1;
    }
  }
  const char *reason = cell(&c, "ORT_CPU", "invalid_reason");
  if (!reason || !strstr(reason, "below the target"))
    rc = 1;
  const char *other = cell(&c, "FP16+ORT_CPU", "achieved_qps");
  if (!other || strcmp(other, "n/a: not a load run") != 0)
    rc = 1;
  other = cell(&c, "ORT_CUDA", "achieved_qps");
  if (!other || strcmp(other, "n/a: unavailable") != 0)
    rc = 1;
  csv_free(&c);
  ASSERT_EQ(rc, 0);

  text = write_and_read(FORMAT_MARKDOWN, reports, 1);
  ASSERT(text);
  int md_ok = strstr(text, "at `batch=4 threads=2`") &&
              strstr(text, "**Load** (server") &&
              strstr(text, "achieved 120 QPS") &&
              strstr(text, "SLO p99 \\<= 20 ms missed (25.0% over)") &&
              strstr(text, "INVALID: achieved 120 QPS") &&
              strstr(text, "(ideal queue 1.75 ms), generator lateness p99 "
                           "0.5 us, hand-off p99 2.5 us");
  if (!md_ok)
    fprintf(stderr, "%s", text);
  free(text);
  ASSERT(md_ok);
  return 0;
}

/* ---- Markdown ---- */

/* Pipes that split cells: not preceded by a backslash. */
static int cell_separators(const char *line, size_t len) {
  int n = 0;
  for (size_t i = 0; i < len; i++)
    if (line[i] == '|' && (i == 0 || line[i - 1] != '\\'))
      n++;
  return n;
}

TEST(markdown_tables_and_escaping) {
  fixture f;
  fixture_init(&f);
  const mb_bench_report *reports[] = {&f.report};
  char *text = write_and_read(FORMAT_MARKDOWN, reports, 1);
  ASSERT(text);
  int rows = 0, bad_rows = 0;
  for (const char *line = text; *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    if (len > 0 && line[0] == '|') {
      rows++;
      if (cell_separators(line, len) != 9) {
        fprintf(stderr, "  bad row: %.*s\n", (int)len, line);
        bad_rows++;
      }
    }
    line += len + (end ? 1 : 0);
  }
  /* Header, separator, one row per result. */
  int rows_ok = rows == 2 + N_RESULTS && bad_rows == 0;
  /* Sorted by median: FP16 (4 ms) first, then BF16 (6 ms, recommended). */
  const char *fp16 = strstr(text, "| `FP16+ORT_CPU` |");
  const char *bf16 = strstr(text, "| **`BF16+ORT_CPU`** |");
  const char *ort = strstr(text, "| `ORT_CPU` |");
  int order_ok = fp16 && bf16 && ort && fp16 < bf16 && bf16 < ort;
  /* The name holds a backtick and ends with one: a longer fence, padded. */
  int escaped = strstr(text, "| `` WEIRD\\|<b>\"NAME\",`x` `` |") != NULL &&
                strstr(text, "\\<script\\>alert") != NULL &&
                strstr(text, "<script>") == NULL &&
                strstr(text, "comma\\|pipe second line \xef\xbf\xbd") != NULL &&
                strchr(text, '\xff') == NULL &&
                strstr(text, "## `" MODEL_PATH "`") != NULL;
  int sections = strstr(text, "**Failures**") && strstr(text, "**Warnings**") &&
                 strstr(text, "**Recommendation:** Deploy BF16+ORT\\_CPU") &&
                 strstr(text, "_Machine:_ Test CPU \\<fast\\> \\& cheap") &&
                 strstr(text, "(unavailable): libcudart.so.12");
  int inaccurate = strstr(text, "5.00e-02 (inaccurate)") != NULL;
  if (!rows_ok || !order_ok || !escaped || !sections || !inaccurate)
    fprintf(stderr, "%s", text);
  free(text);
  ASSERT(rows_ok);
  ASSERT(order_ok);
  ASSERT(escaped);
  ASSERT(sections);
  ASSERT(inaccurate);
  return 0;
}

/* ---- HTML ---- */

/* The value of attribute attr in the first tag after `from` that contains
 * marker, copied to buf. */
static const char *attr_after(const char *text, const char *marker,
                              const char *attr, char *buf, size_t size) {
  const char *p = strstr(text, marker);
  if (!p)
    return NULL;
  const char *end = strchr(p, '>');
  char needle[64];
  snprintf(needle, sizeof needle, " %s=\"", attr);
  const char *a = strstr(p, needle);
  if (!a || (end && a > end))
    return NULL;
  a += strlen(needle);
  size_t n = strcspn(a, "\"");
  if (n >= size)
    return NULL;
  memcpy(buf, a, n);
  buf[n] = '\0';
  return buf;
}

TEST(html_self_contained_and_escaped) {
  fixture f;
  fixture_init(&f);
  const mb_bench_report *reports[] = {&f.report};
  char *text = write_and_read(FORMAT_HTML, reports, 1);
  ASSERT(text);
  int doctype = strncmp(text, "<!DOCTYPE html>", 15) == 0 &&
                strstr(text, "</html>\n") != NULL;
  /* Nothing to fetch: no URL, no external resource. */
  int offline = !strstr(text, "http://") && !strstr(text, "https://") &&
                !strstr(text, " src=") && !strstr(text, "url(") &&
                !strstr(text, "@import") && !strstr(text, "<link");
  /* Our script is the only one; the error's is text. */
  int one_script = count(text, "<script") == 1 &&
                   strstr(text, "&lt;script&gt;alert(&quot;x&quot;)") &&
                   strstr(text, "&amp; &#39;quoted&#39;");
  /* Invalid UTF-8 became U+FFFD. */
  int utf8 = strchr(text, '\xff') == NULL && strstr(text, "\xef\xbf\xbd");
  int model =
      strstr(text, "models/a,b &quot;c&quot; &lt;d&gt;&amp;e|f.onnx") != NULL;
  /* One bar and one whisker per ok result in the latency chart. */
  const char *lat = strstr(text, "<svg id=\"latency-chart-0\"");
  const char *thr = strstr(text, "<svg id=\"throughput-chart-0\"");
  int charts = lat && thr && lat < thr;
  int lat_bars = 0, whiskers = 0, thr_bars = 0;
  if (charts) {
    char *lat_end = strstr(lat, "</svg>");
    *lat_end = '\0';
    lat_bars = count(lat, "<rect class=\"bar");
    whiskers = count(lat, "<line class=\"whisker\"");
    *lat_end = '<';
    thr_bars = count(thr, "<rect class=\"bar");
  }
  /* Whiskers: p10/p90 of the samples; min/p90 without samples. */
  char lo[32] = "", hi[32] = "", nlo[32] = "", nhi[32] = "";
  attr_after(text, "class=\"whisker\" data-conversion=\"ORT_CPU\"",
             "data-lo-ms", lo, sizeof lo);
  attr_after(text, "class=\"whisker\" data-conversion=\"ORT_CPU\"",
             "data-hi-ms", hi, sizeof hi);
  attr_after(text, "class=\"whisker\" data-conversion=\"NO_SAMPLES\"",
             "data-lo-ms", nlo, sizeof nlo);
  attr_after(text, "class=\"whisker\" data-conversion=\"NO_SAMPLES\"",
             "data-hi-ms", nhi, sizeof nhi);
  char median[32] = "";
  attr_after(text, "data-conversion=\"BF16+ORT_CPU\" data-median-ms",
             "data-median-ms", median, sizeof median);
  int rows = count(text, "<tr class=\"result");
  int best = strstr(text, "<rect class=\"bar best\" "
                          "data-conversion=\"BF16+ORT_CPU\"") != NULL &&
             strstr(text, "<rect class=\"bar inaccurate\" "
                          "data-conversion=\"FP16+ORT_CPU\"") != NULL;
  int sections = strstr(text, "id=\"recommendation-0\"") &&
                 strstr(text, "Deploy BF16+ORT_CPU") &&
                 strstr(text, "high variance: CV 7.5%") &&
                 strstr(text, "Test CPU &lt;fast&gt; &amp; cheap") &&
                 strstr(text, "rtol 0.001, atol 0.0001");
  if (!doctype || !offline || !one_script || !charts || !sections)
    fprintf(stderr, "%s", text);
  free(text);
  ASSERT(doctype);
  ASSERT(offline);
  ASSERT(one_script);
  ASSERT(utf8);
  ASSERT(model);
  ASSERT(charts);
  ASSERT_EQ(lat_bars, 6);
  ASSERT_EQ(whiskers, 6);
  ASSERT_EQ(thr_bars, 6);
  ASSERT_STR_EQ(lo, "9.45");
  ASSERT_STR_EQ(hi, "13.05");
  ASSERT_STR_EQ(nlo, "10.8");
  ASSERT_STR_EQ(nhi, "14.4");
  ASSERT_STR_EQ(median, "6");
  ASSERT_EQ(rows, N_RESULTS);
  ASSERT(best);
  ASSERT(sections);
  return 0;
}

/* HTML injection in the sweep charts (issue 27): a symbolic dimension
 * named like markup, swept over two points, stays text in the chart's
 * title, id, data-x and <title>; the CSP names the page's own script and
 * style by hash and allows no other inline script. */
#define EVIL_DIM "s<script>alert(7)</script>\"x'"
TEST(html_sweep_escapes_dimension_names) {
  fixture a, b;
  fixture_init(&a);
  fixture_init(&b);
  mb_dim_value dim_a = {EVIL_DIM, 1}, dim_b = {EVIL_DIM, 2};
  a.report.config.shapes.n_dims = 1;
  a.report.config.shapes.dims = &dim_a;
  b.report.config.shapes.n_dims = 1;
  b.report.config.shapes.dims = &dim_b;
  snprintf(a.report.sweep_point, sizeof a.report.sweep_point, "%s=1", EVIL_DIM);
  snprintf(b.report.sweep_point, sizeof b.report.sweep_point, "%s=2", EVIL_DIM);
  const mb_bench_report *reports[] = {&a.report, &b.report};
  char *text = write_and_read(FORMAT_HTML, reports, 2);
  ASSERT(text);
  int charted = strstr(text, "<section class=\"sweep\"") != NULL &&
                strstr(text, "data-x=\"s&lt;script&gt;alert(7)&lt;/script&gt;"
                             "&quot;x&#39;\"") != NULL;
  /* The id is the name's safe form: no markup, no quotes. */
  int id = strstr(text, "id=\"sweep-dim-s_3cscript_3ealert_287_29_3c_2fscript_"
                        "3e_22x_27-latency-0\"") != NULL;
  int escaped = strstr(text, "<script>alert") == NULL &&
                strstr(text, "<script>\n(function") != NULL &&
                count(text, "<script") == 1;
  const char *csp = strstr(text, "Content-Security-Policy");
  const char *csp_end = csp ? strchr(csp, '>') : NULL;
  int policy = csp && csp_end && strstr(csp, "script-src 'sha256-") &&
               strstr(csp, "style-src 'sha256-") &&
               !strstr(csp, "unsafe-inline") &&
               strstr(csp, "script-src 'sha256-") < csp_end;
  if (!charted || !id || !escaped || !policy)
    fprintf(stderr, "%s", text);
  free(text);
  ASSERT(charted);
  ASSERT(id);
  ASSERT(escaped);
  ASSERT(policy);
  return 0;
}

/* Several models, one of them with nothing that finished: one section
 * each, no chart where there is nothing to draw. */
TEST(html_several_models) {
  fixture a, b;
  fixture_init(&a);
  fixture_init(&b);
  b.report.n_results = 0;
  b.report.results = NULL;
  b.report.baseline_result = -1;
  const mb_bench_report *reports[] = {&a.report, &b.report};
  char *text = write_and_read(FORMAT_HTML, reports, 2);
  ASSERT(text);
  int ok = strstr(text, "id=\"model-0\"") && strstr(text, "id=\"model-1\"") &&
           strstr(text, "id=\"latency-chart-0\"") &&
           !strstr(text, "id=\"latency-chart-1\"") &&
           strstr(text, "href=\"#model-1\"") &&
           strstr(text, "No recommendation: no conversions were run.");
  free(text);
  ASSERT(ok);
  return 0;
}

/* ---- errors ---- */

TEST(writers_report_bad_paths) {
  fixture f;
  fixture_init(&f);
  const mb_bench_report *reports[] = {&f.report};
  mb_error err = {0};
  const char *bad = "/nonexistent-dir-mb/report.out";
  ASSERT_EQ(mb_bench_reports_write_csv(reports, 1, bad, &err), MB_STATUS_IO);
  ASSERT_CONTAINS(err.message, "/nonexistent-dir-mb/report.out");
  ASSERT_EQ(mb_bench_reports_write_markdown(reports, 1, bad, &err),
            MB_STATUS_IO);
  ASSERT_CONTAINS(err.message, "Markdown");
  ASSERT_EQ(mb_bench_reports_write_html(reports, 1, bad, &err), MB_STATUS_IO);
  ASSERT_CONTAINS(err.message, "HTML");
  ASSERT_EQ(mb_bench_reports_write_csv(reports, 1, "", &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(mb_bench_reports_write_html(NULL, 1, "x.html", &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(mb_bench_reports_write_markdown(reports, -1, "x.md", &err),
            MB_STATUS_INVALID_ARGUMENT);
  return 0;
}

/* ---- recommendations ---- */

TEST(recommend_picks) {
  fixture f;
  fixture_init(&f);
  mb_recommend_options options = {5.0};
  mb_recommendations rec;
  mb_bench_recommend(&f.report, &options, &rec);
  /* FP16 is faster but its cosine is 0.99; XNNPACK has values outside the
   * fp32 tolerance. */
  ASSERT_EQ(rec.fastest_accurate, I_BF16);
  ASSERT_EQ(rec.fastest_exact, I_ORT_CPU);
  ASSERT_EQ(rec.lowest_memory, I_REFERENCE);
  ASSERT_EQ(rec.most_portable, I_ORT_CPU);
  ASSERT_EQ(rec.default_option, I_ORT_CPU);
  ASSERT_NEAR(rec.headroom, 10.0 / 6.0, 1e-12);
  ASSERT_NEAR(rec.prediction_error_pct, 20.0, 1e-9);
  /* The headroom's bootstrap interval holds it and is said beside it. */
  ASSERT(rec.headroom_ci[0] > 1 && rec.headroom_ci[0] < rec.headroom &&
         rec.headroom < rec.headroom_ci[1]);
  ASSERT_CONTAINS(rec.summary, "Deploy BF16+ORT_CPU: 1.67x [95% CI ");
  ASSERT_CONTAINS(rec.summary, "] faster than the default ORT_CPU (6 ms vs "
                               "10 ms median)");
  ASSERT_CONTAINS(rec.summary, "bf16 with min cosine 0.999500");
  ASSERT_CONTAINS(rec.summary, "Fastest exact (fp32): ORT_CPU at 10 ms.");
  ASSERT_CONTAINS(rec.summary, "Lowest peak memory: REFERENCE (90.0 MB).");
  ASSERT_CONTAINS(rec.summary, "Most portable: ORT_CPU.");
  ASSERT_CONTAINS(rec.summary, "Predicted 5 ms, measured 6 ms (+20.0%).");

  /* Without options: no prediction. */
  mb_bench_recommend(&f.report, NULL, &rec);
  ASSERT_EQ(rec.prediction_error_pct, 0);
  ASSERT(strstr(rec.summary, "Predicted") == NULL);
  return 0;
}

TEST(recommend_default_missing_or_best) {
  fixture f;
  fixture_init(&f);
  /* The default is the fastest accurate one. */
  f.results[I_BF16].accuracy[1].cosine = 0.9;
  mb_recommendations rec;
  mb_bench_recommend(&f.report, NULL, &rec);
  ASSERT_EQ(rec.fastest_accurate, I_ORT_CPU);
  ASSERT_NEAR(rec.headroom, 1.0, 1e-12);
  ASSERT_CONTAINS(rec.summary, "Deploy ORT_CPU (the default)");

  /* The default failed: no default, no headroom, no portable pick. */
  f.results[I_ORT_CPU].status = MB_BENCH_CRASHED;
  snprintf(f.results[I_ORT_CPU].error, sizeof f.results[I_ORT_CPU].error,
           "crashed with SIGSEGV");
  mb_bench_recommend(&f.report, NULL, &rec);
  ASSERT_EQ(rec.default_option, -1);
  ASSERT_EQ(rec.most_portable, -1);
  ASSERT_EQ(rec.headroom, 0);
  ASSERT_EQ(rec.fastest_accurate, I_REFERENCE);
  ASSERT_CONTAINS(rec.summary, "the default ORT_CPU crashed");

  /* An inaccurate default keeps its place as the default. */
  f.results[I_ORT_CPU].status = MB_BENCH_OK;
  f.results[I_ORT_CPU].accuracy[0].max_abs_err = NAN;
  mb_bench_recommend(&f.report, NULL, &rec);
  ASSERT_EQ(rec.default_option, I_ORT_CPU);
  ASSERT_EQ(rec.most_portable, -1);
  ASSERT_EQ(rec.fastest_accurate, I_REFERENCE);
  ASSERT_NEAR(rec.headroom, 0.5, 1e-12);
  ASSERT_CONTAINS(rec.summary, "the default ORT_CPU is faster (10 ms) but "
                               "not accurate");
  return 0;
}

TEST(recommend_nothing_qualifies) {
  fixture f;
  fixture_init(&f);
  for (int i = 0; i < N_RESULTS; i++)
    if (f.results[i].status == MB_BENCH_OK)
      f.results[i].has_accuracy = i % 2;
  f.results[I_BF16].accuracy[1].cosine = 0.5;
  f.results[I_ORT_CPU].accuracy[0].max_abs_err = NAN;
  mb_recommendations rec;
  mb_bench_recommend(&f.report, NULL, &rec);
  ASSERT_EQ(rec.fastest_accurate, -1);
  ASSERT_EQ(rec.fastest_exact, -1);
  ASSERT_EQ(rec.lowest_memory, -1);
  ASSERT_EQ(rec.most_portable, -1);
  ASSERT_EQ(rec.default_option, I_ORT_CPU);
  ASSERT_EQ(rec.headroom, 0);
  ASSERT_CONTAINS(rec.summary, "No recommendation: no conversion finished "
                               "with accurate results");
  ASSERT_CONTAINS(rec.summary, "without a reference");
  ASSERT_CONTAINS(rec.summary, "outside the accuracy tolerance");
  ASSERT_CONTAINS(rec.summary, "4 failed or did not run");

  mb_bench_report empty;
  memset(&empty, 0, sizeof empty);
  empty.baseline_result = -1;
  mb_bench_recommend(&empty, NULL, &rec);
  ASSERT_EQ(rec.fastest_accurate, -1);
  ASSERT_CONTAINS(rec.summary, "no conversions were run");
  mb_bench_recommend(NULL, NULL, &rec);
  ASSERT_EQ(rec.default_option, -1);
  mb_bench_recommend(&f.report, NULL, NULL); /* must not crash */
  return 0;
}

/* The registry decides a known conversion's precision; an `inaccurate`
 * warning rules a result out whatever its numbers. */
TEST(recommend_registry_precision_and_flag) {
  fixture f;
  fixture_init(&f);
  int ref = -1;
  mb_error err = {0};
  ASSERT_OK(mb_conversion_find("REFERENCE", &ref, &err), &err);
  f.results[I_REFERENCE].conversion_index = ref;
  f.results[I_REFERENCE].latency_ms.median = 1.0;
  char *flag[] = {"inaccurate: outputs depend on uninitialised memory"};
  f.results[I_BF16].warnings = flag;
  f.results[I_BF16].n_warnings = 1;
  mb_recommendations rec;
  mb_bench_recommend(&f.report, NULL, &rec);
  ASSERT_EQ(rec.fastest_accurate, I_REFERENCE);
  ASSERT_EQ(rec.fastest_exact, I_REFERENCE);
  /* A long summary is cut, never overflowed. */
  ASSERT(strlen(rec.summary) < sizeof rec.summary);
  return 0;
}

static const mb_test_case cases[] = {
    TEST_ENTRY(csv_round_trip),
    TEST_ENTRY(csv_several_models),
    TEST_ENTRY(csv_neutralises_formulas),
    TEST_ENTRY(html_sweep_escapes_dimension_names),
    TEST_ENTRY(load_run_columns_and_lines),
    TEST_ENTRY(markdown_tables_and_escaping),
    TEST_ENTRY(html_self_contained_and_escaped),
    TEST_ENTRY(html_several_models),
    TEST_ENTRY(writers_report_bad_paths),
    TEST_ENTRY(recommend_picks),
    TEST_ENTRY(recommend_default_missing_or_best),
    TEST_ENTRY(recommend_nothing_qualifies),
    TEST_ENTRY(recommend_registry_precision_and_flag),
};

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--write-html") == 0) {
    fixture f;
    fixture_init(&f);
    const mb_bench_report *reports[] = {&f.report};
    mb_error err = {0};
    if (mb_bench_reports_write_html(reports, 1, argv[2], &err)) {
      fprintf(stderr, "test_report_formats: %s\n", err.message);
      return 1;
    }
    return 0;
  }
  return mb_test_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
