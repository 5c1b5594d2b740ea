/* The tune page (src/report/html_tune.c): the accuracy-vs-latency front of
 * points with known latencies and errors (ties, the empty case, unknown
 * values skipped), and the page written from a hand-built mb_tune_result:
 * the winner and the fastest uniform option marked, an error of 0 drawn on
 * the floor and said so, failed steps listed and not plotted, one table
 * row per step, estimates marked, outside text escaped, no script. */
#include "modelbench.h"
#include "report/report_util.h"
#include "test.h"

#include <math.h>
#include <unistd.h>

/* ---- the front ---- */

TEST(front_known_points) {
  /* 0: fast, bad; 1: slower, better; 2: dominated by 1; 3: slowest, best;
   * 4: dominated by 0 (slower, worse); 5: between 1 and 3, on the front. */
  const double latency[] = {1.0, 2.0, 2.5, 5.0, 1.5, 3.0};
  const double error[] = {0.5, 0.01, 0.02, 0.0, 0.6, 0.001};
  int front[6];
  int n = mb__tune_front(latency, error, 6, front);
  ASSERT_EQ(n, 4);
  ASSERT_EQ(front[0], 0);
  ASSERT_EQ(front[1], 1);
  ASSERT_EQ(front[2], 5);
  ASSERT_EQ(front[3], 3);
  return 0;
}

TEST(front_ties) {
  /* Equal latency: the lower error only. Equal error: the faster only.
   * The same point twice: the first. */
  const double latency[] = {2.0, 2.0, 1.0, 3.0, 1.0, 0.5};
  const double error[] = {0.1, 0.05, 0.3, 0.05, 0.3, 0.3};
  int front[6];
  int n = mb__tune_front(latency, error, 6, front);
  ASSERT_EQ(n, 2);
  ASSERT_EQ(front[0], 5); /* 0.5 ms beats 2 and 4 at the same error */
  ASSERT_EQ(front[1], 1); /* beats 0 (same latency) and 3 (same error) */

  const double same_latency[] = {1.0, 1.0, 1.0};
  const double same_error[] = {0.2, 0.2, 0.2};
  n = mb__tune_front(same_latency, same_error, 3, front);
  ASSERT_EQ(n, 1);
  ASSERT_EQ(front[0], 0);
  return 0;
}

TEST(front_empty_and_unknown) {
  int front[5];
  ASSERT_EQ(mb__tune_front(NULL, NULL, 0, front), 0);
  /* NaN, negative (unknown), infinite and zero latencies are skipped;
   * what is left is the front of the rest. */
  const double latency[] = {NAN, 1.0, -1.0, INFINITY, 0.0};
  const double error[] = {0.0, NAN, 0.0, 0.0, 0.0};
  ASSERT_EQ(mb__tune_front(latency, error, 5, front), 0);
  const double latency2[] = {NAN, 4.0, 1.0, 2.0, 3.0};
  const double error2[] = {0.0, 0.1, -1.0, 0.2, NAN};
  ASSERT_EQ(mb__tune_front(latency2, error2, 5, front), 2);
  ASSERT_EQ(front[0], 3);
  ASSERT_EQ(front[1], 1);
  return 0;
}

/* ---- the page ---- */

static const char *kept_sensitive[] = {"sensitive_matmul"};
static const char *kept_odd[] = {"node<&\">"};

static mb_tune_step step(const char *phase, int round, const char *conversion,
                         double median_ms, double error, int accurate) {
  mb_tune_step s;
  memset(&s, 0, sizeof s);
  s.phase = phase;
  s.round = round;
  s.conversion = conversion;
  s.threads = 1;
  s.int8_flops_share = strstr(conversion, "INT8") ? 1.0 : -1;
  s.status = MB_BENCH_OK;
  s.error = error;
  s.cosine = error >= 0 ? 1 - error : -2;
  s.accurate = accurate;
  s.median_ms = median_ms;
  s.slo_latency_ms = -1;
  s.task_accuracy = -1;
  return s;
}

enum { N_STEPS = 8 };

static void fill_result(mb_tune_result *r, mb_tune_step *steps) {
  memset(r, 0, sizeof *r);
  snprintf(r->model_path, sizeof r->model_path, "/tmp/we<&\"ird.onnx");
  r->max_error = 1e-3;
  r->wall_seconds = 12.5;
  steps[0] = step("uniform", 0, "REFERENCE", 4.0, 0.0, 1);
  steps[1] = step("uniform", 0, "INT8_STATIC+ORT_CPU", 1.0, 0.2, 0);
  steps[2] = step("uniform", 0, "TEST<b>FAIL", -1, -1, 0);
  steps[2].status = MB_BENCH_ERROR;
  snprintf(steps[2].error_message, sizeof steps[2].error_message,
           "exploded <script>alert(1)</script>");
  steps[3] = step("uniform", 1, "REFERENCE", 4.2, 0.0, 1);
  steps[4] = step("sensitivity", 0, "INT8_STATIC+ORT_CPU", -1, 1e-5, 1);
  steps[4].n_kept_float = 1;
  steps[4].kept_float = kept_sensitive;
  steps[5] = step("mixed-estimate", 0, "INT8_STATIC+ORT_CPU", -1, 2e-5, 1);
  steps[5].n_kept_float = 1;
  steps[5].kept_float = kept_sensitive;
  steps[5].int8_flops_share = 0.6;
  steps[6] = step("mixed", 0, "INT8_STATIC+ORT_CPU", 1.5, 3e-5, 1);
  steps[6].n_kept_float = 1;
  steps[6].kept_float = kept_sensitive;
  steps[6].int8_flops_share = 0.6;
  steps[7] = step("mixed", 0, "INT8_STATIC+XNNPACK", 1.2, 5e-3, 0);
  steps[7].n_kept_float = 1;
  steps[7].kept_float = kept_odd;
  r->n_steps = N_STEPS;
  r->steps = steps;
  r->found = 1;
  r->winner = 6;
  r->closest = -1;
  r->fastest_uniform = 3;
  snprintf(r->summary, sizeof r->summary,
           "winner: INT8_STATIC+ORT_CPU keeping sensitive_matmul <in float>");
}

/* The page at path, NUL-terminated; NULL when it cannot be read. */
static char *read_page(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  if (text && fread(text, 1, (size_t)n, f) != (size_t)n) {
    free(text);
    text = NULL;
  }
  if (text)
    text[n] = '\0';
  fclose(f);
  return text;
}

static int count(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
    n++;
  return n;
}

/* The <g class="tpoint ..." data-step="I" element's class list. */
static void point_class(const char *page, int i, char *out, size_t size) {
  char hook[32];
  out[0] = '\0';
  snprintf(hook, sizeof hook, "\" data-step=\"%d\" data-conversion", i);
  const char *end = strstr(page, hook);
  if (!end)
    return;
  const char *start = end;
  while (start > page && strncmp(start, "<g class=\"", 10) != 0)
    start--;
  start += 10;
  snprintf(out, size, "%.*s", (int)(end - start), start);
}

TEST(page_marks_and_escapes) {
  mb_tune_step steps[N_STEPS];
  mb_tune_result r;
  fill_result(&r, steps);
  char path[] = "/tmp/mb_test_tune_html_XXXXXX";
  int fd = mkstemp(path);
  ASSERT(fd >= 0);
  close(fd);
  mb_error err = {0};
  ASSERT_OK(mb_tune_result_write_html(&r, path, &err), &err);
  char *page = read_page(path);
  unlink(path);
  ASSERT(page);
  char cls[128];
  int ok = 1;
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "  failed: %s\n", #cond);                                \
      ok = 0;                                                                  \
    }                                                                          \
  } while (0)
  CHECK(count(page, "<svg") == 1);
  CHECK(count(page, "<script") == 0 && count(page, "<b>") == 0);
  CHECK(strstr(page, "/tmp/we&lt;&amp;&quot;ird.onnx"));
  CHECK(!strstr(page, "we<&"));
  CHECK(strstr(page, "node&lt;&amp;&quot;&gt;"));
  CHECK(strstr(page, "&lt;in float&gt;"));
  /* Plotted: the measured steps with a latency and an error. */
  CHECK(count(page, "<g class=\"tpoint ") == 5);
  point_class(page, 6, cls, sizeof cls);
  CHECK(strstr(cls, "mixed accurate front winner"));
  point_class(page, 3, cls, sizeof cls);
  CHECK(strstr(cls, "uniform accurate front fastest-uniform"));
  point_class(page, 0, cls, sizeof cls);
  CHECK(strstr(cls, "superseded") && !strstr(cls, "front"));
  point_class(page, 1, cls, sizeof cls);
  CHECK(strstr(cls, "uniform inaccurate front") && !strstr(cls, "winner"));
  point_class(page, 7, cls, sizeof cls);
  CHECK(strstr(cls, "mixed inaccurate front"));
  /* The front by latency: 1 (1.0 ms), 7 (1.2), 6 (1.5), 3 (4.2). */
  CHECK(strstr(page, "<path class=\"front\" data-steps=\"1 7 6 3\""));
  CHECK(strstr(page, "class=\"point-label winner-label\""));
  CHECK(strstr(page, ">winner: INT8_STATIC+ORT_CPU \xc3\x97"
                     "1, 1 kept in float</text>"));
  CHECK(strstr(page, ">fastest accurate uniform: REFERENCE"));
  CHECK(strstr(page, "<line class=\"budget\" data-max-error=\"0.001\""));
  /* The two errors of 0 sit on the floor, and the caption says so. */
  CHECK(count(page, "data-clamped=\"1\"") == 2);
  CHECK(strstr(page, "below 1e-06 (2 points) are drawn on the floor"));
  /* The failed step is listed, not plotted. */
  CHECK(strstr(page, "<li data-step=\"2\">"));
  CHECK(strstr(page, "exploded &lt;script&gt;alert(1)&lt;/script&gt;"));
  CHECK(!strstr(page, "data-step=\"2\" data-conversion"));
  /* One table row per step; the estimates marked. */
  CHECK(count(page, "<tr class=\"step") == N_STEPS);
  CHECK(count(page, "data-estimated=\"1\"") == 2);
  CHECK(strstr(page, "<tr class=\"step winner\" data-step=\"6\""));
  CHECK(strstr(page, "measured again in round 1"));
  CHECK(strstr(page, "not exhausted"));
  /* No labels: no task accuracy column, the budget in 1 - cosine. */
  CHECK(!strstr(page, "<th>task accuracy</th>"));
  CHECK(strstr(page, "<dd>1 - cosine &le; 0.001 on every output</dd>"));
#undef CHECK
  if (!ok)
    fprintf(stderr, "%s\n", page);
  free(page);
  ASSERT(ok);
  return 0;
}

/* --max-accuracy-drop: the budget names the baseline, the table has the
 * task accuracy of the steps that measured one. */
TEST(page_task_accuracy_budget) {
  mb_tune_step steps[N_STEPS];
  mb_tune_result r;
  fill_result(&r, steps);
  r.max_accuracy_drop = 0.005;
  r.baseline_task_accuracy = 0.75;
  snprintf(r.baseline, sizeof r.baseline, "REF<b>");
  steps[3].task_accuracy = 0.75;
  steps[6].task_accuracy = 0.7475;
  char path[] = "/tmp/mb_test_tune_html_XXXXXX";
  int fd = mkstemp(path);
  ASSERT(fd >= 0);
  close(fd);
  mb_error err = {0};
  ASSERT_OK(mb_tune_result_write_html(&r, path, &err), &err);
  char *page = read_page(path);
  unlink(path);
  ASSERT(page);
  int ok = strstr(page, "top-1 task accuracy at most 0.5% below the "
                        "baseline's (<code>REF&lt;b&gt;</code>, 75.00%)") &&
           count(page, "<th>task accuracy</th>") == 1 &&
           strstr(page, "<td>74.75%</td>") && strstr(page, "<td>75.00%</td>");
  if (!ok)
    fprintf(stderr, "%s\n", page);
  free(page);
  ASSERT(ok);
  return 0;
}

TEST(page_nothing_measured) {
  mb_tune_step steps[N_STEPS];
  mb_tune_result r;
  fill_result(&r, steps);
  r.n_steps = 3; /* uniform steps only: the two fp32 ones fail too */
  steps[0].status = steps[1].status = MB_BENCH_TIMEOUT;
  r.found = 0;
  r.winner = r.fastest_uniform = -1;
  r.budget_exhausted = 1;
  char path[] = "/tmp/mb_test_tune_html_XXXXXX";
  int fd = mkstemp(path);
  ASSERT(fd >= 0);
  close(fd);
  mb_error err = {0};
  ASSERT_OK(mb_tune_result_write_html(&r, path, &err), &err);
  char *page = read_page(path);
  unlink(path);
  ASSERT(page);
  int ok = count(page, "<svg") == 0 &&
           strstr(page, "<p class=\"no-data\" id=\"tune-chart\">") &&
           count(page, "<li data-step=") == 3 &&
           strstr(page, "<dt>fastest accurate uniform</dt><dd>none</dd>") &&
           strstr(page, "exhausted: the search stopped");
  if (!ok)
    fprintf(stderr, "%s\n", page);
  free(page);
  ASSERT(ok);
  return 0;
}

TEST(page_unwritable_path_or_bad_result) {
  mb_tune_step steps[N_STEPS];
  mb_tune_result r;
  fill_result(&r, steps);
  mb_error err = {0};
  ASSERT_EQ(
      mb_tune_result_write_html(&r, "/nonexistent-dir-mb/tune.html", &err),
      MB_STATUS_IO);
  ASSERT_CONTAINS(err.message, "/nonexistent-dir-mb/tune.html");
  ASSERT_EQ(mb_tune_result_write_html(&r, "", &err),
            MB_STATUS_INVALID_ARGUMENT);
  /* A hand-built step without its strings is refused, naming the step. */
  steps[5].conversion = NULL;
  ASSERT_EQ(mb_tune_result_write_html(&r, "/tmp/unused.html", &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "step 5");
  steps[5].conversion = "INT8_STATIC+ORT_CPU";
  steps[6].kept_float = NULL;
  ASSERT_EQ(mb_tune_result_write_html(&r, "/tmp/unused.html", &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "step 6");
  return 0;
}

TEST_MAIN(TEST_ENTRY(front_known_points), TEST_ENTRY(front_ties),
          TEST_ENTRY(front_empty_and_unknown),
          TEST_ENTRY(page_marks_and_escapes),
          TEST_ENTRY(page_task_accuracy_budget),
          TEST_ENTRY(page_nothing_measured),
          TEST_ENTRY(page_unwritable_path_or_bad_result))
