/* The results database and the statistics of `modelbench compare`: reports
 * built by hand are stored in a temporary database and read back exactly;
 * two processes store runs into one database at once; the Mann-Whitney
 * test matches hand-checked values; the bootstrap interval covers the true
 * shift; a 20% slowdown is flagged and identical samples are not. */
#include "core/cache_dir.h"
#include "core/json_parse.h"
#include "db/compare.h"
#include "db/results_db.h"
#include "modelbench.h"
#include "test.h"
#include "test_files.h"

#include <dirent.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- a hand-built report ---- */

enum { N_RESULTS = 3, N_SAMPLES = 40 };

typedef struct fixture {
  mb_bench_report report;
  mb_bench_result results[N_RESULTS];
  mb_input_shape inputs[1];
  mb_dtype dtypes[1];
  mb_output_accuracy accuracy[N_RESULTS][1];
  double samples[N_RESULTS][N_SAMPLES];
} fixture;

/* Deterministic noise in [0, 1). */
static double noise(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

static void ok_result(fixture *f, int i, const char *name, double median,
                      uint64_t seed) {
  mb_bench_result *r = &f->results[i];
  r->conversion_index = -1;
  r->conversion_id = 100 + i;
  r->conversion = name;
  r->status = MB_BENCH_OK;
  snprintf(r->device, sizeof r->device, "cpu");
  snprintf(r->runtime, sizeof r->runtime, "reference");
  r->load_ms = 3.5;
  r->latency_ms = (mb_latency_stats){median * 1.01, median,        median * 0.9,
                                     median * 1.5,  median * 1.2,  0,
                                     median * 1.4,  median * 0.02, 0.02};
  r->iterations = N_SAMPLES;
  r->batch_size = 1;
  r->throughput_sps = 1000.0 / median;
  r->peak_rss_mb = 42.25;
  r->has_accuracy = 1;
  r->n_outputs = 1;
  r->accuracy = f->accuracy[i];
  r->accuracy[0] = (mb_output_accuracy){"y", 1.5e-6, 1e-5, 0.9999};
  r->max_abs_err = 1.5e-6;
  for (int k = 0; k < N_SAMPLES; k++)
    f->samples[i][k] = median * (0.95 + 0.1 * noise(&seed));
  r->n_samples_ms = N_SAMPLES;
  r->samples_ms = f->samples[i];
}

static void fixture_init(fixture *f, const char *model_path, const char *sha,
                         double scale) {
  memset(f, 0, sizeof *f);
  mb_bench_report *rep = &f->report;
  snprintf(rep->tool_version, sizeof rep->tool_version, "%s",
           MB_VERSION_STRING);
  snprintf(rep->model_path, sizeof rep->model_path, "%s", model_path);
  snprintf(rep->model_sha256, sizeof rep->model_sha256, "%s", sha);
  f->inputs[0] = (mb_input_shape){"x", 4, {1, 3, 8, 8}};
  f->dtypes[0] = MB_DTYPE_FLOAT;
  rep->n_inputs = 1;
  rep->inputs = f->inputs;
  rep->input_dtypes = f->dtypes;
  snprintf(rep->machine.cpu_model, sizeof rep->machine.cpu_model, "Test CPU");
  rep->machine.cores = 4;
  rep->machine.load_average = 0.5;
  mb_bench_config_init(&rep->config);
  ok_result(f, 0, "REFERENCE", 10.0 * scale, 1);
  ok_result(f, 1, "ORT_CPU", 2.0 * scale, 2);
  mb_bench_result *bad = &f->results[2];
  bad->conversion_index = -1;
  bad->conversion_id = 102;
  bad->conversion = "TEST_ERROR";
  bad->status = MB_BENCH_ERROR;
  snprintf(bad->error, sizeof bad->error, "node 'n' (Foo): unsupported");
  bad->max_abs_err = -1;
  rep->n_results = N_RESULTS;
  rep->results = f->results;
  rep->baseline_result = 0;
}

static const char sha_a[] =
    "aaaa0000000000000000000000000000000000000000000000000000000000aa";
static const char sha_b[] =
    "bbbb0000000000000000000000000000000000000000000000000000000000bb";

/* ---- temp folders ---- */

static int make_tmpdir(char *dir, size_t size) {
  snprintf(dir, size, "/tmp/mb_test_db_XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

/* Removes dir and everything in it (two levels are enough here). */
static int open_temp_db(char *dir, size_t dir_size, char *path,
                        size_t path_size, mb_db **db, mb_error *err) {
  if (make_tmpdir(dir, dir_size) != 0)
    return -1;
  snprintf(path, path_size, "%s/%s", dir, MB_DB_FILE_NAME);
  return mb__db_open(path, true, db, err) == MB_STATUS_OK ? 0 : -1;
}

static const mb_db_result *find(const mb_db_run *run, const char *name) {
  for (int i = 0; i < run->n_results; i++)
    if (strcmp(run->results[i].conversion, name) == 0)
      return &run->results[i];
  return NULL;
}

/* ---- the database ---- */

TEST(store_list_and_load) {
  char dir[64], path[128];
  mb_error err = {0};
  mb_db *db = NULL;
  mb_db_run_list *list = NULL;
  mb_db_run *run = NULL;
  static fixture fa, fb;
  ASSERT_EQ(open_temp_db(dir, sizeof dir, path, sizeof path, &db, &err), 0);
  fixture_init(&fa, "models/a.onnx", sha_a, 1.0);
  fixture_init(&fb, "models/b.onnx", sha_b, 1.5);
  const char *labels_a[] = {"branch=main", "ci=1"};
  const char *labels_b[] = {"branch=feature"};
  int64_t id_a = 0, id_b = 0;
  ASSERT_OK(mb__db_store_report(db, &fa.report, labels_a, 2, &id_a, &err),
            &err);
  ASSERT_OK(mb__db_store_report(db, &fb.report, labels_b, 1, &id_b, &err),
            &err);
  ASSERT(id_b > id_a);

  /* Every run, newest first, with counts, best result and labels. */
  ASSERT_OK(mb__db_list_runs(db, NULL, &list, &err), &err);
  ASSERT_EQ(list->n_runs, 2);
  ASSERT_EQ(list->runs[0].id, id_b);
  ASSERT_EQ(list->runs[1].id, id_a);
  const mb_db_run_summary *s = &list->runs[1];
  ASSERT_STR_EQ(s->model_path, "models/a.onnx");
  ASSERT_STR_EQ(s->model_sha256, sha_a);
  ASSERT_STR_EQ(s->tool_version, MB_VERSION_STRING);
  ASSERT_STR_EQ(s->cpu_model, "Test CPU");
  ASSERT_EQ(strlen(s->time_utc), 20); /* 2025-01-31T12:00:00Z */
  ASSERT_EQ(s->time_utc[10], 'T');
  ASSERT_EQ(s->n_results, 3);
  ASSERT_EQ(s->n_ok, 2);
  ASSERT_STR_EQ(s->best_conversion, "ORT_CPU");
  ASSERT_NEAR(s->best_median_ms, 2.0, 1e-12);
  ASSERT_EQ(s->n_labels, 2);
  ASSERT_STR_EQ(s->labels[0], "branch=main");
  ASSERT_STR_EQ(s->labels[1], "ci=1");
  mb__db_run_list_free(list);
  list = NULL;

  /* Filters: label, model path, sha256 prefix, limit. */
  const char *want_main[] = {"branch=main"};
  mb_db_run_filter filter = {0};
  filter.labels = want_main;
  filter.n_labels = 1;
  ASSERT_OK(mb__db_list_runs(db, &filter, &list, &err), &err);
  ASSERT_EQ(list->n_runs, 1);
  ASSERT_EQ(list->runs[0].id, id_a);
  mb__db_run_list_free(list);
  const char *want_none[] = {"branch=main", "ci=2"};
  filter.labels = want_none;
  filter.n_labels = 2;
  ASSERT_OK(mb__db_list_runs(db, &filter, &list, &err), &err);
  ASSERT_EQ(list->n_runs, 0);
  mb__db_run_list_free(list);
  memset(&filter, 0, sizeof filter);
  filter.model_path = "models/b.onnx";
  ASSERT_OK(mb__db_list_runs(db, &filter, &list, &err), &err);
  ASSERT_EQ(list->n_runs, 1);
  ASSERT_EQ(list->runs[0].id, id_b);
  mb__db_run_list_free(list);
  memset(&filter, 0, sizeof filter);
  filter.model_sha256 = "AAAA00"; /* prefixes ignore case */
  ASSERT_OK(mb__db_list_runs(db, &filter, &list, &err), &err);
  ASSERT_EQ(list->n_runs, 1);
  ASSERT_EQ(list->runs[0].id, id_a);
  mb__db_run_list_free(list);
  memset(&filter, 0, sizeof filter);
  filter.limit = 1;
  ASSERT_OK(mb__db_list_runs(db, &filter, &list, &err), &err);
  ASSERT_EQ(list->n_runs, 1);
  ASSERT_EQ(list->runs[0].id, id_b);
  mb__db_run_list_free(list);
  list = NULL;

  /* A run loads back with its samples bit for bit. */
  ASSERT_OK(mb__db_load_run(db, id_a, &run, &err), &err);
  ASSERT_EQ(run->id, id_a);
  ASSERT_STR_EQ(run->source, "run 1");
  ASSERT_STR_EQ(run->model_sha256, sha_a);
  ASSERT_STR_EQ(run->inputs, "x:float32[1,3,8,8]");
  ASSERT(run->config_json && run->config_json[0] == '{');
  ASSERT_CONTAINS(run->config_json, "\"min_iterations\":20");
  ASSERT_EQ(run->n_labels, 2);
  ASSERT_EQ(run->n_results, 3);
  for (int i = 0; i < 2; i++) {
    const mb_db_result *r = &run->results[i];
    const mb_bench_result *want = &fa.results[i];
    ASSERT_STR_EQ(r->conversion, want->conversion);
    ASSERT_EQ(r->conversion_id, want->conversion_id);
    ASSERT_EQ(r->status, MB_BENCH_OK);
    ASSERT(r->error == NULL);
    ASSERT_STR_EQ(r->runtime, "reference");
    ASSERT_EQ(r->n_samples, N_SAMPLES);
    ASSERT(memcmp(r->samples_ms, want->samples_ms,
                  sizeof(double) * N_SAMPLES) == 0);
    ASSERT(r->median_ms == want->latency_ms.median);
    ASSERT(r->p90_ms == want->latency_ms.p90);
    ASSERT(r->p99_ms == want->latency_ms.p99);
    ASSERT(r->stddev_ms == want->latency_ms.stddev);
    ASSERT(r->throughput_sps == want->throughput_sps);
    ASSERT(r->max_abs_err == 1.5e-6);
    ASSERT(r->load_ms == 3.5);
    ASSERT(r->peak_rss_mb == 42.25);
    ASSERT_EQ(r->iterations, N_SAMPLES);
  }
  const mb_db_result *bad = &run->results[2];
  ASSERT_STR_EQ(bad->conversion, "TEST_ERROR");
  ASSERT_EQ(bad->status, MB_BENCH_ERROR);
  ASSERT_STR_EQ(bad->error, "node 'n' (Foo): unsupported");
  ASSERT(isnan(bad->median_ms) && isnan(bad->max_abs_err) &&
         isnan(bad->load_ms) && isnan(bad->peak_rss_mb));
  ASSERT_EQ(bad->n_samples, 0);
  ASSERT(bad->samples_ms == NULL);
  mb__db_run_free(run);

  /* A missing run is NOT_FOUND, naming the id. */
  ASSERT_EQ(mb__db_load_run(db, 999, &run, &err), MB_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(err.message, "no run 999");
  mb__db_close(db);
  test_remove_tree(dir);
  return 0;
}

TEST(labels_checked) {
  char dir[64], path[128];
  mb_error err = {0};
  mb_db *db = NULL;
  static fixture f;
  ASSERT_EQ(open_temp_db(dir, sizeof dir, path, sizeof path, &db, &err), 0);
  fixture_init(&f, "m.onnx", sha_a, 1.0);
  const char *no_eq[] = {"branch"};
  const char *empty_key[] = {"=x"};
  const char *bad_key[] = {"a b=c"};
  const char *twice[] = {"k=1", "j=2", "k=3"};
  const char *empty_value[] = {"k="};
  ASSERT_EQ(mb__db_store_report(db, &f.report, no_eq, 1, NULL, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "KEY=VALUE");
  ASSERT_EQ(mb__db_store_report(db, &f.report, empty_key, 1, NULL, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(mb__db_store_report(db, &f.report, bad_key, 1, NULL, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(mb__db_store_report(db, &f.report, twice, 3, NULL, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "'k' given twice");
  /* Nothing half-stored by the failures. */
  mb_db_run_list *list = NULL;
  ASSERT_OK(mb__db_list_runs(db, NULL, &list, &err), &err);
  ASSERT_EQ(list->n_runs, 0);
  mb__db_run_list_free(list);
  ASSERT_OK(mb__db_store_report(db, &f.report, empty_value, 1, NULL, &err),
            &err);
  mb__db_close(db);
  test_remove_tree(dir);
  return 0;
}

TEST(open_errors) {
  char dir[64], path[128];
  mb_error err = {0};
  mb_db *db = NULL;
  ASSERT_EQ(make_tmpdir(dir, sizeof dir), 0);
  /* Missing without create: NOT_FOUND, and no file made. */
  snprintf(path, sizeof path, "%s/none.db", dir);
  ASSERT_EQ(mb__db_open(path, false, &db, &err), MB_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(err.message, path);
  ASSERT_EQ(access(path, F_OK), -1);
  /* Not a database. */
  snprintf(path, sizeof path, "%s/junk.db", dir);
  FILE *f = fopen(path, "w");
  ASSERT(f);
  for (int i = 0; i < 200; i++)
    fputs("this is not an SQLite database. ", f);
  fclose(f);
  ASSERT_EQ(mb__db_open(path, true, &db, &err), MB_STATUS_IO);
  ASSERT_CONTAINS(err.message, path);
  /* A newer schema is refused, not misread. */
  snprintf(path, sizeof path, "%s/newer.db", dir);
  sqlite3 *raw = NULL;
  ASSERT_EQ(sqlite3_open(path, &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "PRAGMA user_version = 99", NULL, NULL, NULL),
            SQLITE_OK);
  sqlite3_close(raw);
  ASSERT_EQ(mb__db_open(path, true, &db, &err), MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(err.message, "schema version 99");
  /* Reopening an existing database keeps its runs. */
  static fixture fx;
  fixture_init(&fx, "m.onnx", sha_a, 1.0);
  snprintf(path, sizeof path, "%s/ok.db", dir);
  ASSERT_OK(mb__db_open(path, true, &db, &err), &err);
  ASSERT_OK(mb__db_store_report(db, &fx.report, NULL, 0, NULL, &err), &err);
  mb__db_close(db);
  ASSERT_OK(mb__db_open(path, false, &db, &err), &err);
  mb_db_run_list *list = NULL;
  ASSERT_OK(mb__db_list_runs(db, NULL, &list, &err), &err);
  ASSERT_EQ(list->n_runs, 1);
  mb__db_run_list_free(list);
  mb__db_close(db);
  test_remove_tree(dir);
  return 0;
}

TEST(cache_dir_resolution) {
  char dir[64], want[256], got[256];
  mb_error err = {0};
  ASSERT_EQ(make_tmpdir(dir, sizeof dir), 0);
  char *saved_env =
      getenv(MB_CACHE_DIR_ENV) ? strdup(getenv(MB_CACHE_DIR_ENV)) : NULL;
  char *saved_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  /* --cache-dir wins and is created with its parents. */
  snprintf(want, sizeof want, "%s/flag/a/b", dir);
  setenv(MB_CACHE_DIR_ENV, "/nonexistent/should/not/be/used", 1);
  ASSERT_OK(mb__cache_dir(want, got, sizeof got, &err), &err);
  ASSERT_STR_EQ(got, want);
  struct stat st;
  ASSERT(stat(want, &st) == 0 && S_ISDIR(st.st_mode));
  /* Then the environment variable. */
  snprintf(want, sizeof want, "%s/env", dir);
  setenv(MB_CACHE_DIR_ENV, want, 1);
  ASSERT_OK(mb__cache_dir(NULL, got, sizeof got, &err), &err);
  ASSERT_STR_EQ(got, want);
  /* Then $HOME/.cache/modelbench. */
  unsetenv(MB_CACHE_DIR_ENV);
  setenv("HOME", dir, 1);
  snprintf(want, sizeof want, "%s/.cache/modelbench", dir);
  ASSERT_OK(mb__cache_dir("", got, sizeof got, &err), &err);
  ASSERT_STR_EQ(got, want);
  ASSERT(stat(want, &st) == 0 && S_ISDIR(st.st_mode));
  /* The database path sits inside. */
  ASSERT_OK(mb__db_default_path(NULL, got, sizeof got, &err), &err);
  snprintf(want, sizeof want, "%s/.cache/modelbench/results.db", dir);
  ASSERT_STR_EQ(got, want);
  /* A file in the way is an error naming it. */
  snprintf(want, sizeof want, "%s/file", dir);
  FILE *f = fopen(want, "w");
  ASSERT(f);
  fclose(f);
  ASSERT_EQ(mb__cache_dir(want, got, sizeof got, &err), MB_STATUS_IO);
  ASSERT_CONTAINS(err.message, want);
  /* No HOME and nothing else: a clear error. */
  unsetenv("HOME");
  ASSERT_EQ(mb__cache_dir(NULL, got, sizeof got, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "--cache-dir");
  if (saved_home)
    setenv("HOME", saved_home, 1);
  if (saved_env)
    setenv(MB_CACHE_DIR_ENV, saved_env, 1);
  free(saved_home);
  free(saved_env);
  test_remove_tree(dir);
  return 0;
}

TEST(record_report_in_cache_dir) {
  char dir[64], db_path[256];
  mb_error err = {0};
  static fixture f;
  int64_t id = 0;
  ASSERT_EQ(make_tmpdir(dir, sizeof dir), 0);
  fixture_init(&f, "m.onnx", sha_a, 1.0);
  const char *labels[] = {"commit=abc123"};
  ASSERT_OK(mb__db_record_report(dir, &f.report, labels, 1, &id, db_path,
                                 sizeof db_path, &err),
            &err);
  ASSERT_EQ(id, 1);
  ASSERT_CONTAINS(db_path, "/results.db");
  ASSERT_OK(mb__db_record_report(dir, &f.report, NULL, 0, &id, NULL, 0, &err),
            &err);
  ASSERT_EQ(id, 2);
  test_remove_tree(dir);
  return 0;
}

/* Two processes store 20 runs each into one database at the same time;
 * each opens its own connection per run, as separate bench runs do. */
TEST(concurrent_writers) {
  enum { PER_CHILD = 20 };
  char dir[64], path[128];
  mb_error err = {0};
  ASSERT_EQ(make_tmpdir(dir, sizeof dir), 0);
  snprintf(path, sizeof path, "%s/%s", dir, MB_DB_FILE_NAME);
  /* Both children block on the gate until the parent closes it, so they
   * race from the first open, which creates the database. */
  int gate[2];
  ASSERT_EQ(pipe(gate), 0);
  fflush(NULL);
  pid_t pids[2];
  for (int c = 0; c < 2; c++) {
    pids[c] = fork();
    ASSERT(pids[c] >= 0);
    if (pids[c] == 0) {
      static fixture f;
      char label[32], byte;
      close(gate[1]);
      if (read(gate[0], &byte, 1) != 0)
        _exit(2);
      fixture_init(&f, c ? "child1.onnx" : "child0.onnx", c ? sha_b : sha_a,
                   1.0);
      for (int i = 0; i < PER_CHILD; i++) {
        mb_db *db = NULL;
        mb_error child_err = {0};
        snprintf(label, sizeof label, "child=%d", c);
        const char *labels[] = {label};
        if (mb__db_open(path, true, &db, &child_err) != MB_STATUS_OK ||
            mb__db_store_report(db, &f.report, labels, 1, NULL, &child_err) !=
                MB_STATUS_OK) {
          fprintf(stderr, "  child %d, run %d: %s\n", c, i, child_err.message);
          _exit(1);
        }
        mb__db_close(db);
      }
      _exit(0);
    }
  }
  close(gate[0]);
  close(gate[1]);
  for (int c = 0; c < 2; c++) {
    int wstatus = 0;
    ASSERT_EQ(waitpid(pids[c], &wstatus, 0), pids[c]);
    ASSERT(WIFEXITED(wstatus));
    ASSERT_EQ(WEXITSTATUS(wstatus), 0);
  }
  mb_db *db = NULL;
  mb_db_run_list *list = NULL;
  ASSERT_OK(mb__db_open(path, false, &db, &err), &err);
  ASSERT_OK(mb__db_list_runs(db, NULL, &list, &err), &err);
  ASSERT_EQ(list->n_runs, 2 * PER_CHILD);
  mb__db_run_list_free(list);
  const char *child1[] = {"child=1"};
  mb_db_run_filter filter = {0};
  filter.labels = child1;
  filter.n_labels = 1;
  ASSERT_OK(mb__db_list_runs(db, &filter, &list, &err), &err);
  ASSERT_EQ(list->n_runs, PER_CHILD);
  for (int i = 0; i < list->n_runs; i++) {
    ASSERT_STR_EQ(list->runs[i].model_path, "child1.onnx");
    ASSERT_EQ(list->runs[i].n_results, N_RESULTS);
  }
  mb__db_run_list_free(list);
  mb__db_close(db);
  test_remove_tree(dir);
  return 0;
}

/* ---- statistics ---- */

TEST(median) {
  const double odd[] = {5, 1, 4, 2, 3};
  const double even[] = {4, 1, 3, 2};
  const double dup[] = {2, 2, 2, 1, 2, 3};
  ASSERT(mb__median(odd, 5) == 3);
  ASSERT(mb__median(even, 4) == 2.5);
  ASSERT(mb__median(dup, 6) == 2);
  ASSERT(mb__median(odd, 1) == 5);
  ASSERT(isnan(mb__median(odd, 0)));
  ASSERT(odd[0] == 5 && even[0] == 4); /* inputs untouched */
  return 0;
}

/* Reference values: U by counting pairs, p from the normal approximation
 * with tie and continuity correction computed independently in Python
 * (the formula of scipy.stats.mannwhitneyu(method="asymptotic"), which
 * gives 0.0808556 for the first case). */
TEST(mann_whitney_known_values) {
  mb_error err = {0};
  mb_mann_whitney mw;
  const double a1[] = {1, 2, 3}, b1[] = {4, 5, 6};
  ASSERT_OK(mb__mann_whitney(a1, 3, b1, 3, &mw, &err), &err);
  ASSERT_NEAR(mw.u, 0, 1e-12);
  ASSERT_NEAR(mw.p_value, 0.080855598370052295, 1e-12);
  ASSERT(mw.z < 0);
  /* Swapping the samples mirrors U and keeps p. */
  ASSERT_OK(mb__mann_whitney(b1, 3, a1, 3, &mw, &err), &err);
  ASSERT_NEAR(mw.u, 9, 1e-12);
  ASSERT_NEAR(mw.p_value, 0.080855598370052295, 1e-12);
  ASSERT(mw.z > 0);
  /* Ties across the samples. */
  const double a2[] = {1, 2, 2, 3, 5}, b2[] = {2, 3, 4, 4, 6, 7};
  ASSERT_OK(mb__mann_whitney(a2, 5, b2, 6, &mw, &err), &err);
  ASSERT_NEAR(mw.u, 6.5, 1e-12);
  ASSERT_NEAR(mw.p_value, 0.13862587987892772, 1e-12);
  /* Identical samples: U at its mean, p = 1. */
  const double a3[] = {1.1, 2.2, 3.3, 4.4};
  ASSERT_OK(mb__mann_whitney(a3, 4, a3, 4, &mw, &err), &err);
  ASSERT_NEAR(mw.u, 8, 1e-12);
  ASSERT_NEAR(mw.p_value, 1, 1e-12);
  /* Overlapping shift. */
  const double a4[] = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
  const double b4[] = {15, 16, 17, 18, 19, 20, 21, 22, 23, 24};
  ASSERT_OK(mb__mann_whitney(a4, 10, b4, 10, &mw, &err), &err);
  ASSERT_NEAR(mw.u, 12.5, 1e-12);
  ASSERT_NEAR(mw.p_value, 0.0050753923152739256, 1e-12);
  /* Every value equal: no spread, p = 1. */
  const double same[] = {7, 7, 7};
  ASSERT_OK(mb__mann_whitney(same, 3, same, 3, &mw, &err), &err);
  ASSERT_NEAR(mw.p_value, 1, 0);
  /* Bad input. */
  const double bad[] = {1, NAN};
  ASSERT_EQ(mb__mann_whitney(bad, 2, a1, 3, &mw, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(mb__mann_whitney(a1, 0, b1, 3, &mw, &err),
            MB_STATUS_INVALID_ARGUMENT);
  return 0;
}

/* n latencies around `median` with +-10% multiplicative noise. */
static void make_samples(double *x, int n, double median, uint64_t seed) {
  for (int i = 0; i < n; i++)
    x[i] = median * (0.9 + 0.2 * noise(&seed));
}

TEST(bootstrap_interval) {
  enum { N = 200 };
  static double a[N], b[N], a2[N];
  mb_error err = {0};
  double lo, hi, lo2, hi2;
  make_samples(a, N, 10.0, 11);
  make_samples(b, N, 12.0, 12); /* a true shift of +20% */
  make_samples(a2, N, 10.0, 13);
  ASSERT_OK(
      mb__bootstrap_median_change(a, N, b, N, 2000, 0.95, 42, &lo, &hi, &err),
      &err);
  ASSERT(lo < 20.0 && 20.0 < hi);
  ASSERT(lo > 10.0 && hi < 30.0); /* and reasonably tight */
  /* Deterministic for a seed. */
  ASSERT_OK(
      mb__bootstrap_median_change(a, N, b, N, 2000, 0.95, 42, &lo2, &hi2, &err),
      &err);
  ASSERT(lo == lo2 && hi == hi2);
  /* The same distribution twice: the interval holds 0. */
  ASSERT_OK(
      mb__bootstrap_median_change(a, N, a2, N, 2000, 0.95, 42, &lo, &hi, &err),
      &err);
  ASSERT(lo < 0 && 0 < hi);
  /* The very same samples: still holds 0. */
  ASSERT_OK(
      mb__bootstrap_median_change(a, N, a, N, 2000, 0.95, 42, &lo, &hi, &err),
      &err);
  ASSERT(lo <= 0 && 0 <= hi);
  ASSERT_EQ(
      mb__bootstrap_median_change(a, N, b, N, 2000, 1.5, 42, &lo, &hi, &err),
      MB_STATUS_INVALID_ARGUMENT);
  return 0;
}

/* The bootstrap draws each resample's median from its exact distribution
 * instead of resampling; a plain resampling bootstrap written here must
 * give the same interval up to Monte-Carlo error. */
static int cmp_double(const void *p, const void *q) {
  double x = *(const double *)p, y = *(const double *)q;
  return (x > y) - (x < y);
}

static double plain_resampled_median(const double *x, int n, double *scratch,
                                     uint64_t *state) {
  for (int i = 0; i < n; i++)
    scratch[i] = x[(int)(noise(state) * n)];
  qsort(scratch, (size_t)n, sizeof *scratch, cmp_double);
  return n % 2 ? scratch[n / 2] : (scratch[n / 2 - 1] + scratch[n / 2]) / 2;
}

static void plain_bootstrap(const double *a, int na, const double *b, int nb,
                            double *lo, double *hi) {
  enum { R = 4000 };
  static double changes[R], scratch[512];
  uint64_t state = 99;
  for (int r = 0; r < R; r++) {
    double ma = plain_resampled_median(a, na, scratch, &state);
    double mb = plain_resampled_median(b, nb, scratch, &state);
    changes[r] = 100 * (mb - ma) / ma;
  }
  qsort(changes, R, sizeof *changes, cmp_double);
  *lo = changes[(int)(0.025 * (R - 1))];
  *hi = changes[(int)(0.975 * (R - 1))];
}

TEST(bootstrap_matches_plain_resampling) {
  static double a[512], b[512];
  static const int sizes[][2] = {{200, 200}, {201, 151}, {30, 31}, {8, 9}};
  mb_error err = {0};
  for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
    int na = sizes[t][0], nb = sizes[t][1];
    double lo, hi, want_lo, want_hi;
    make_samples(a, na, 10.0, 31 + t);
    make_samples(b, nb, 11.0, 41 + t);
    ASSERT_OK(mb__bootstrap_median_change(a, na, b, nb, 4000, 0.95, 7, &lo, &hi,
                                          &err),
              &err);
    plain_bootstrap(a, na, b, nb, &want_lo, &want_hi);
    /* Monte-Carlo error of a 2.5% quantile of 4000 draws, with room. */
    double tol = 0.15 * (want_hi - want_lo) + 0.2;
    if (fabs(lo - want_lo) > tol || fabs(hi - want_hi) > tol)
      TEST_FAIL_("n = %d, %d: interval [%g, %g], plain resampling [%g, %g]", na,
                 nb, lo, hi, want_lo, want_hi);
  }
  return 0;
}

TEST(compare_samples_verdicts) {
  enum { N = 100 };
  static double a[N], slow[N], fast[N], same[N];
  mb_error err = {0};
  mb_compare_options opt;
  mb_compare_row row;
  mb__compare_options_init(&opt);
  make_samples(a, N, 5.0, 21);
  make_samples(slow, N, 6.0, 22);
  make_samples(fast, N, 4.0, 23);
  make_samples(same, N, 5.0, 24);

  /* A 20% slowdown is significant, and a regression past 10% but not 30%. */
  opt.fail_on_regression_pct = 10;
  ASSERT_OK(mb__compare_samples(a, N, slow, N, &opt, &row, &err), &err);
  ASSERT_EQ(row.verdict, MB_COMPARE_SLOWER);
  ASSERT(row.significant && row.regression);
  ASSERT_NEAR(row.change_pct, 20, 5);
  ASSERT(row.ci_low_pct > 0 && row.p_value < 0.001);
  opt.fail_on_regression_pct = 30;
  ASSERT_OK(mb__compare_samples(a, N, slow, N, &opt, &row, &err), &err);
  ASSERT_EQ(row.verdict, MB_COMPARE_SLOWER);
  ASSERT(!row.regression);
  /* Faster. */
  ASSERT_OK(mb__compare_samples(a, N, fast, N, &opt, &row, &err), &err);
  ASSERT_EQ(row.verdict, MB_COMPARE_FASTER);
  ASSERT(row.significant && !row.regression && row.ci_high_pct < 0);
  /* Identical samples and the same distribution: no significant change. */
  opt.fail_on_regression_pct = 0;
  ASSERT_OK(mb__compare_samples(a, N, a, N, &opt, &row, &err), &err);
  ASSERT_EQ(row.verdict, MB_COMPARE_SAME);
  ASSERT(!row.significant && !row.regression);
  ASSERT_NEAR(row.change_pct, 0, 0);
  ASSERT_NEAR(row.p_value, 1, 1e-12);
  ASSERT_OK(mb__compare_samples(a, N, same, N, &opt, &row, &err), &err);
  ASSERT_EQ(row.verdict, MB_COMPARE_SAME);
  ASSERT(!row.regression);
  /* Too few samples: the medians only. */
  ASSERT_OK(mb__compare_samples(a, 2, slow, N, &opt, &row, &err), &err);
  ASSERT_EQ(row.verdict, MB_COMPARE_TOO_FEW_SAMPLES);
  ASSERT(!isnan(row.change_pct) && isnan(row.p_value) && !row.regression);
  ASSERT_STR_EQ(mb__compare_verdict_name(MB_COMPARE_SAME),
                "no significant change");
  return 0;
}

TEST(compare_runs_rows) {
  static fixture fa, fb;
  mb_error err = {0};
  char dir[64], path[128];
  mb_db *db = NULL;
  mb_db_run *a = NULL, *b = NULL;
  mb_compare_row *rows = NULL;
  int n = 0;
  ASSERT_EQ(open_temp_db(dir, sizeof dir, path, sizeof path, &db, &err), 0);
  fixture_init(&fa, "m.onnx", sha_a, 1.0);
  fixture_init(&fb, "m.onnx", sha_a, 1.0);
  /* B: ORT_CPU 50% slower, TEST_ERROR replaced by a new ok conversion,
   * REFERENCE unchanged. */
  for (int k = 0; k < N_SAMPLES; k++)
    fb.samples[1][k] *= 1.5;
  fb.results[1].latency_ms.median *= 1.5;
  ok_result(&fb, 2, "NEW_ONE", 1.0, 9);
  int64_t id_a, id_b;
  ASSERT_OK(mb__db_store_report(db, &fa.report, NULL, 0, &id_a, &err), &err);
  ASSERT_OK(mb__db_store_report(db, &fb.report, NULL, 0, &id_b, &err), &err);
  ASSERT_OK(mb__db_load_run(db, id_a, &a, &err), &err);
  ASSERT_OK(mb__db_load_run(db, id_b, &b, &err), &err);
  mb_compare_options opt;
  mb__compare_options_init(&opt);
  opt.fail_on_regression_pct = 25;
  ASSERT_OK(mb__compare_runs(a, b, &opt, &rows, &n, &err), &err);
  ASSERT_EQ(n, 4);
  ASSERT_STR_EQ(rows[0].conversion, "REFERENCE");
  ASSERT_EQ(rows[0].verdict, MB_COMPARE_SAME);
  ASSERT_NEAR(rows[0].change_pct, 0, 0);
  ASSERT_STR_EQ(rows[1].conversion, "ORT_CPU");
  ASSERT_EQ(rows[1].verdict, MB_COMPARE_SLOWER);
  ASSERT(rows[1].regression);
  ASSERT_NEAR(rows[1].change_pct, 50, 1e-9); /* every sample scaled */
  ASSERT_STR_EQ(rows[2].conversion, "TEST_ERROR");
  ASSERT_EQ(rows[2].verdict, MB_COMPARE_REMOVED);
  ASSERT_STR_EQ(rows[3].conversion, "NEW_ONE");
  ASSERT_EQ(rows[3].verdict, MB_COMPARE_ADDED);
  free(rows);
  /* A conversion failed on one side is "failed". */
  ASSERT_OK(mb__compare_runs(a, a, &opt, &rows, &n, &err), &err);
  ASSERT_EQ(n, 3);
  ASSERT_EQ(rows[2].verdict, MB_COMPARE_FAILED);
  ASSERT(!rows[0].regression && !rows[1].regression);
  free(rows);
  mb__db_run_free(a);
  mb__db_run_free(b);
  mb__db_close(db);
  test_remove_tree(dir);
  return 0;
}

/* A JSON report and the stored run of the same report load alike. */
TEST(json_report_loads_like_db_run) {
  static fixture f;
  mb_error err = {0};
  char dir[64], path[128], json[160];
  mb_db *db = NULL;
  mb_db_run *from_db = NULL, *from_json = NULL;
  ASSERT_EQ(open_temp_db(dir, sizeof dir, path, sizeof path, &db, &err), 0);
  fixture_init(&f, "models/x.onnx", sha_a, 1.0);
  snprintf(json, sizeof json, "%s/report.json", dir);
  ASSERT_OK(mb_bench_report_write_json(&f.report, json, &err), &err);
  int64_t id;
  ASSERT_OK(mb__db_store_report(db, &f.report, NULL, 0, &id, &err), &err);
  ASSERT_OK(mb__db_load_run(db, id, &from_db, &err), &err);
  ASSERT_OK(mb__run_load_json(json, &from_json, &err), &err);
  ASSERT_EQ(from_json->id, 0);
  ASSERT_STR_EQ(from_json->source, json);
  ASSERT_STR_EQ(from_json->model_path, "models/x.onnx");
  ASSERT_STR_EQ(from_json->model_sha256, sha_a);
  ASSERT_EQ(from_json->n_results, from_db->n_results);
  for (int i = 0; i < from_db->n_results; i++) {
    const mb_db_result *x = &from_db->results[i], *y = &from_json->results[i];
    ASSERT_STR_EQ(x->conversion, y->conversion);
    ASSERT_EQ(x->status, y->status);
    ASSERT_EQ(x->n_samples, y->n_samples);
    if (x->n_samples)
      ASSERT(memcmp(x->samples_ms, y->samples_ms,
                    sizeof(double) * (size_t)x->n_samples) == 0);
    ASSERT(x->median_ms == y->median_ms ||
           (isnan(x->median_ms) && isnan(y->median_ms)));
    ASSERT(x->max_abs_err == y->max_abs_err ||
           (isnan(x->max_abs_err) && isnan(y->max_abs_err)));
  }
  ASSERT(find(from_json, "TEST_ERROR")->error != NULL);
  mb__db_run_free(from_json);

  /* Not a report, and a malformed one, name the file. */
  snprintf(json, sizeof json, "%s/other.json", dir);
  FILE *fp = fopen(json, "w");
  ASSERT(fp);
  fputs("{\"hello\": 1}\n", fp);
  fclose(fp);
  ASSERT_EQ(mb__run_load_json(json, &from_json, &err), MB_STATUS_PARSE);
  ASSERT_CONTAINS(err.message, "not a modelbench bench report");
  fp = fopen(json, "w");
  ASSERT(fp);
  fputs("{\"results\": [{\"conversion\": \"X\", \"status\": \"ok\",\n"
        " \"samples_ms\": [1, \"two\"]}]}\n",
        fp);
  fclose(fp);
  ASSERT_EQ(mb__run_load_json(json, &from_json, &err), MB_STATUS_PARSE);
  ASSERT_CONTAINS(err.message, ":2:");
  ASSERT_CONTAINS(err.message, "samples_ms[1]");
  mb__db_run_free(from_db);
  mb__db_close(db);
  test_remove_tree(dir);
  return 0;
}

/* ---- environments ---- */

/* Flattens the "environment" object JSON into entries in doc's arena. */
static int parse_environment(const char *json, mb_json_doc **doc,
                             mb_env_entry **entries, int *n, mb_error *err) {
  if (mb__json_parse(json, strlen(json), "test", doc, err) != MB_STATUS_OK)
    return -1;
  return mb__environment_from_json((*doc)->arena, &(*doc)->root, "test",
                                   entries, n, err) == MB_STATUS_OK
             ? 0
             : -1;
}

static const mb_env_difference *find_difference(const mb_env_difference *d,
                                                int n, const char *key) {
  for (int i = 0; i < n; i++)
    if (strcmp(d[i].key, key) == 0)
      return &d[i];
  return NULL;
}

/* Two environments: a variable set only in B, one only in A, one changed
 * and one the same; facts changed, the same, or recorded on one side only
 * (a runtime B did not use: not a difference). */
TEST(environment_diff) {
  static const char env_a[] =
      "{\"cpu_model\": \"Test CPU\", \"isa\": [\"avx2\", \"fma\"],"
      " \"governor\": \"performance\", \"smt\": \"on\","
      " \"kernel\": \"6.1.0 #1\", \"cpus_allowed\": 4, \"threads\": 2,"
      " \"libraries\": {\"openblas\": \"OpenBLAS 0.3.21\","
      "   \"onnxruntime\": \"1.17.1\"},"
      " \"variables\": {\"MKL_ENABLE_INSTRUCTIONS\": \"AVX2\","
      "   \"OMP_NUM_THREADS\": \"2\", \"OMP_PROC_BIND\": \"close\"}}";
  static const char env_b[] =
      "{\"cpu_model\": \"Test CPU\", \"isa\": [\"avx2\", \"fma\"],"
      " \"governor\": \"powersave\", \"smt\": \"on\","
      " \"kernel\": \"6.1.0 #1\", \"cpus_allowed\": 4, \"threads\": 2,"
      " \"libraries\": {\"openblas\": \"OpenBLAS 0.3.21\"},"
      " \"variables\": {\"OMP_WAIT_POLICY\": \"passive\","
      "   \"OMP_NUM_THREADS\": \"4\", \"OMP_PROC_BIND\": \"close\"}}";
  mb_error err = {0};
  mb_json_doc *doc_a = NULL, *doc_b = NULL;
  mb_env_entry *a = NULL, *b = NULL;
  mb_env_difference *d = NULL;
  int na = 0, nb = 0, n = 0;
  ASSERT_EQ(parse_environment(env_a, &doc_a, &a, &na, &err), 0);
  ASSERT_EQ(parse_environment(env_b, &doc_b, &b, &nb, &err), 0);
  ASSERT_EQ(na, 12);

  /* The same environment twice: nothing differs. */
  ASSERT_OK(mb__environment_diff(a, na, a, na, &d, &n, &err), &err);
  ASSERT_EQ(n, 0);
  ASSERT(d == NULL);

  ASSERT_OK(mb__environment_diff(a, na, b, nb, &d, &n, &err), &err);
  ASSERT_EQ(n, 4);
  /* Variables first, by name. */
  ASSERT_STR_EQ(d[0].key, "MKL_ENABLE_INSTRUCTIONS");
  ASSERT_STR_EQ(d[0].a, "AVX2");
  ASSERT(d[0].b == NULL && d[0].variable);
  ASSERT_STR_EQ(d[1].key, "OMP_NUM_THREADS");
  ASSERT_STR_EQ(d[1].a, "2");
  ASSERT_STR_EQ(d[1].b, "4");
  ASSERT_STR_EQ(d[2].key, "OMP_WAIT_POLICY");
  ASSERT(d[2].a == NULL);
  ASSERT_STR_EQ(d[2].b, "passive");
  ASSERT_STR_EQ(d[3].key, "governor");
  ASSERT_STR_EQ(d[3].a, "performance");
  ASSERT_STR_EQ(d[3].b, "powersave");
  ASSERT(!d[3].variable);
  ASSERT(!find_difference(d, n, "OMP_PROC_BIND"));
  ASSERT(!find_difference(d, n, "libraries.onnxruntime"));
  ASSERT(!find_difference(d, n, "libraries.openblas"));
  free(d);

  /* The other way round: unset and set swap sides. */
  ASSERT_OK(mb__environment_diff(b, nb, a, na, &d, &n, &err), &err);
  ASSERT_EQ(n, 4);
  const mb_env_difference *wait = find_difference(d, n, "OMP_WAIT_POLICY");
  ASSERT(wait && wait->b == NULL);
  ASSERT_STR_EQ(wait->a, "passive");
  free(d);

  /* A variable is never a fact of the same name, and a changed word of
   * an array (isa) or a number (threads) shows. */
  mb_json_doc *doc_c = NULL;
  mb_env_entry *c = NULL;
  int nc = 0;
  ASSERT_EQ(parse_environment("{\"isa\": [\"avx2\"], \"threads\": 4,"
                              " \"variables\": {\"governor\": \"x\"}}",
                              &doc_c, &c, &nc, &err),
            0);
  ASSERT_OK(mb__environment_diff(a, na, c, nc, &d, &n, &err), &err);
  ASSERT_EQ(n, 6); /* 3 of A's variables, governor set, isa, threads */
  ASSERT_STR_EQ(find_difference(d, n, "isa")->b, "avx2");
  ASSERT_STR_EQ(find_difference(d, n, "threads")->a, "2");
  free(d);

  /* A variable that is not a string is an error naming it. */
  mb__json_doc_free(doc_c);
  doc_c = NULL;
  ASSERT_EQ(parse_environment("{\"variables\": {\"OMP_X\": 1}}", &doc_c, &c,
                              &nc, &err),
            -1);
  ASSERT_CONTAINS(err.message, "OMP_X");
  mb__json_doc_free(doc_c);
  mb__json_doc_free(doc_a);
  mb__json_doc_free(doc_b);
  return 0;
}

static const mb_env_entry *find_entry(const mb_db_run *run, const char *key) {
  for (int i = 0; i < run->n_environment; i++)
    if (strcmp(run->environment[i].key, key) == 0)
      return &run->environment[i];
  return NULL;
}

/* A report's environment goes into the database and its JSON file and
 * comes back alike; a report without one reads as not recorded; a
 * database of schema version 1 is upgraded on open. */
TEST(environment_stored_and_loaded) {
  static fixture f;
  mb_error err = {0};
  char dir[64], path[128], json[160];
  mb_db *db = NULL;
  mb_db_run *from_db = NULL, *from_json = NULL;
  ASSERT_EQ(open_temp_db(dir, sizeof dir, path, sizeof path, &db, &err), 0);
  fixture_init(&f, "m.onnx", sha_a, 1.0);
  snprintf(f.results[1].runtime, sizeof f.results[1].runtime, "onnxruntime");
  snprintf(f.results[1].runtime_version, sizeof f.results[1].runtime_version,
           "1.17.1");
  int64_t id_old;
  ASSERT_OK(mb__db_store_report(db, &f.report, NULL, 0, &id_old, &err), &err);
  mb_environment *e = &f.report.environment;
  const char *vars[] = {"OMP_NUM_THREADS=2", "OMP_WAIT_POLICY=passive"};
  e->recorded = 1;
  snprintf(e->governor, sizeof e->governor, "performance");
  snprintf(e->smt, sizeof e->smt, "off");
  snprintf(e->blas, sizeof e->blas, "OpenBLAS 0.3.21 Haswell");
  e->cpus_allowed = 2;
  e->variables = vars;
  e->n_variables = 2;
  int64_t id;
  ASSERT_OK(mb__db_store_report(db, &f.report, NULL, 0, &id, &err), &err);
  snprintf(json, sizeof json, "%s/report.json", dir);
  ASSERT_OK(mb_bench_report_write_json(&f.report, json, &err), &err);
  mb_db_run *runs[2];
  ASSERT_OK(mb__db_load_run(db, id, &from_db, &err), &err);
  ASSERT_OK(mb__run_load_json(json, &from_json, &err), &err);
  runs[0] = from_db;
  runs[1] = from_json;
  for (int k = 0; k < 2; k++) {
    const mb_db_run *run = runs[k];
    ASSERT(run->environment_recorded);
    const mb_env_entry *x = find_entry(run, "OMP_WAIT_POLICY");
    ASSERT(x && x->variable);
    ASSERT_STR_EQ(x->value, "passive");
    ASSERT_STR_EQ(find_entry(run, "governor")->value, "performance");
    ASSERT_STR_EQ(find_entry(run, "smt")->value, "off");
    ASSERT_STR_EQ(find_entry(run, "cpus_allowed")->value, "2");
    ASSERT_STR_EQ(find_entry(run, "cpu_model")->value, "Test CPU");
    ASSERT_STR_EQ(find_entry(run, "libraries.openblas")->value,
                  "OpenBLAS 0.3.21 Haswell");
    ASSERT_STR_EQ(find_entry(run, "libraries.onnxruntime")->value, "1.17.1");
    ASSERT(!find_entry(run, "kernel")); /* "" is unknown: null */
  }
  mb__db_run_free(from_db);
  mb__db_run_free(from_json);
  /* The run stored before the environment was set has none. */
  ASSERT_OK(mb__db_load_run(db, id_old, &from_db, &err), &err);
  ASSERT(!from_db->environment_recorded);
  ASSERT_EQ(from_db->n_environment, 0);
  mb__db_run_free(from_db);
  mb__db_close(db);

  /* Schema version 1 (no environment_json): upgraded on open, its runs
   * read as not recorded, new ones stored with theirs. */
  sqlite3 *raw = NULL;
  ASSERT_EQ(sqlite3_open(path, &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw,
                         "ALTER TABLE runs DROP COLUMN environment_json;"
                         "PRAGMA user_version = 1",
                         NULL, NULL, NULL),
            SQLITE_OK);
  sqlite3_close(raw);
  ASSERT_OK(mb__db_open(path, false, &db, &err), &err);
  ASSERT_OK(mb__db_load_run(db, id, &from_db, &err), &err);
  ASSERT(!from_db->environment_recorded);
  mb__db_run_free(from_db);
  ASSERT_OK(mb__db_store_report(db, &f.report, NULL, 0, &id, &err), &err);
  ASSERT_OK(mb__db_load_run(db, id, &from_db, &err), &err);
  ASSERT(from_db->environment_recorded);
  ASSERT_STR_EQ(find_entry(from_db, "OMP_NUM_THREADS")->value, "2");
  mb__db_run_free(from_db);
  mb__db_close(db);
  test_remove_tree(dir);
  return 0;
}

TEST_MAIN(TEST_ENTRY(store_list_and_load), TEST_ENTRY(labels_checked),
          TEST_ENTRY(open_errors), TEST_ENTRY(cache_dir_resolution),
          TEST_ENTRY(record_report_in_cache_dir),
          TEST_ENTRY(concurrent_writers), TEST_ENTRY(median),
          TEST_ENTRY(mann_whitney_known_values), TEST_ENTRY(bootstrap_interval),
          TEST_ENTRY(bootstrap_matches_plain_resampling),
          TEST_ENTRY(compare_samples_verdicts), TEST_ENTRY(compare_runs_rows),
          TEST_ENTRY(json_report_loads_like_db_run),
          TEST_ENTRY(environment_diff),
          TEST_ENTRY(environment_stored_and_loaded))
