/* modelbench compare: two benchmark runs side by side, with a statistical
 * test per conversion, and an exit status a CI job can gate on. */
#include "db/compare.h"
#include "cli/cli_common.h"
#include "core/json_write.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

static const char compare_help[] =
    "Usage: modelbench compare RUN_A RUN_B [OPTIONS]\n"
    "\n"
    "Compares two benchmark runs conversion by conversion: median latency in\n"
    "A and B, the change (B - A) / A, a bootstrap confidence interval of\n"
    "that change (2000 resamples, fixed seed: the output is deterministic)\n"
    "and the p-value of a Mann-Whitney U test on the timed samples. A\n"
    "change is significant when the interval excludes 0 and p < alpha; the\n"
    "verdict is then 'slower' or 'faster', else 'no significant change'.\n"
    "Conversions in only one run are 'added' or 'removed'; one that did not\n"
    "run ok in either is 'failed'.\n"
    "\n"
    "What besides the code may explain a change is printed above the table:\n"
    "'environment differs: OMP_WAIT_POLICY: (unset) -> passive; governor:\n"
    "...', from each run's recorded environment (CPU flags, governor, SMT,\n"
    "kernel, threads, library versions and the variables that change speed:\n"
    "OMP_*, MKL_*, ONEDNN_*, OPENBLAS_*, ...); a significant change then\n"
    "reads 'slower, environment differs'.\n"
    "\n"
    "RUN_A and RUN_B are each a JSON report ('modelbench bench --json FILE')\n"
    "or the id of a run in the results database ('modelbench history').\n"
    "\n"
    "Options:\n"
    "      --fail-on-regression PCT  exit 1 when a conversion is\n"
    "                          significantly slower by more than PCT percent\n"
    "      --alpha A           significance level (default 0.05; the\n"
    "                          interval is at 1 - A, 95%)\n"
    "      --cache-dir DIR     the cache folder holding results.db (default:\n"
    "                          $MODELBENCH_CACHE_DIR, else\n"
    "                          ~/.cache/modelbench)\n"
    "      --json              print JSON instead of text\n"
    "  -h, --help              show this help\n"
    "\n"
    "Exit status: 0 compared (no regression above PCT), 1 a regression above\n"
    "PCT or a run cannot be read, 2 usage error.\n";

enum { OPT_FAIL_ON_REGRESSION = 256, OPT_ALPHA, OPT_CACHE_DIR, OPT_JSON };

/* Loads RUN_A / RUN_B: a file when one exists at that path, else a run id
 * in the database (opened on first use). Returns an exit code. */
static int load_run(const char *arg, const char *cache_dir, mb_db **db,
                    mb_db_run **run_out) {
  mb_error err;
  int64_t id;
  char db_path[PATH_MAX];
  memset(&err, 0, sizeof err);
  if (mb__cli_file_exists(arg)) {
    if (mb__run_load_json(arg, run_out, &err) != MB_STATUS_OK)
      return mb__cli_fail(arg, &err);
    return MB_EXIT_OK;
  }
  if (!mb__cli_parse_i64(arg, 1, INT64_MAX, &id)) {
    mb__cli_error(arg, "no such file, and not a run id (see 'modelbench "
                       "history')");
    return MB_EXIT_FAILURE;
  }
  if (!*db && (mb__db_default_path(cache_dir, db_path, sizeof db_path, &err) !=
                   MB_STATUS_OK ||
               mb__db_open(db_path, false, db, &err) != MB_STATUS_OK))
    return mb__cli_fail(NULL, &err);
  if (mb__db_load_run(*db, id, run_out, &err) != MB_STATUS_OK)
    return mb__cli_fail(NULL, &err);
  return MB_EXIT_OK;
}

static const char *or_dash(const char *s) {
  return s && s[0] ? s : "-";
}

/* A run's text comes from a report or a database (anybody's): printed
 * escaped. */
static void print_run_line(const char *name, const mb_db_run *run) {
  printf("%s: ", name);
  mb__term_put(stdout, run->source);
  if (run->time_utc) {
    fputs(" (", stdout);
    mb__term_put(stdout, run->time_utc);
    fputs(")", stdout);
  }
  fputs("  ", stdout);
  mb__term_put(stdout, or_dash(run->model_path));
  for (int i = 0; i < run->n_labels; i++) {
    fputs(i ? "," : "  ", stdout);
    mb__term_put(stdout, run->labels[i]);
  }
  printf("\n");
}

/* What differs between the runs' environments, for the printers. */
typedef struct env_diff {
  mb_env_difference *list; /* malloc'd; NULL when none */
  int n;
} env_diff;

/* "environment differs: OMP_WAIT_POLICY: (unset) -> passive; governor:
 * performance -> powersave", or which run has none recorded. */
static void print_environment(const mb_db_run *a, const mb_db_run *b,
                              const env_diff *d) {
  if (!a->environment_recorded || !b->environment_recorded) {
    printf("environment: not recorded in %s (a run of an older modelbench); "
           "what else changed is unknown\n",
           !a->environment_recorded && !b->environment_recorded ? "A or B"
           : !a->environment_recorded                           ? "A"
                                                                : "B");
    return;
  }
  if (d->n == 0)
    return;
  fputs("environment differs: ", stdout);
  for (int i = 0; i < d->n; i++) {
    const mb_env_difference *x = &d->list[i];
    fputs(i ? "; " : "", stdout);
    mb__term_put(stdout, x->key);
    fputs(": ", stdout);
    mb__term_put(stdout, x->a ? x->a : "(unset)");
    fputs(" -> ", stdout);
    mb__term_put(stdout, x->b ? x->b : "(unset)");
  }
  printf("\n");
}

static bool different_models(const mb_db_run *a, const mb_db_run *b) {
  return a->model_sha256 && b->model_sha256 &&
         strcmp(a->model_sha256, b->model_sha256) != 0;
}

static const char *fmt_ms(double v, char *buf, size_t size) {
  if (isnan(v))
    snprintf(buf, size, "-");
  else
    snprintf(buf, size, "%.3f", v);
  return buf;
}

static const char *fmt_pct(double v, char *buf, size_t size) {
  if (isnan(v))
    snprintf(buf, size, "-");
  else
    snprintf(buf, size, "%+.1f%%", v);
  return buf;
}

static const char *fmt_p(double p, char *buf, size_t size) {
  if (isnan(p))
    snprintf(buf, size, "-");
  else if (p < 0.001)
    snprintf(buf, size, "<0.001");
  else
    snprintf(buf, size, "%.3f", p);
  return buf;
}

/* "failed (B: timeout)", "failed (A: error, B: error)", "slower,
 * environment differs". */
static const char *verdict_text(const mb_compare_row *row, bool env_differs,
                                char *buf, size_t size) {
  if (row->significant && env_differs) {
    snprintf(buf, size, "%s, environment differs",
             mb__compare_verdict_name(row->verdict));
    return buf;
  }
  if (row->verdict != MB_COMPARE_FAILED)
    return mb__compare_verdict_name(row->verdict);
  bool bad_a = row->a->status != MB_BENCH_OK,
       bad_b = row->b->status != MB_BENCH_OK;
  snprintf(buf, size, "failed (%s%s%s%s%s)", bad_a ? "A: " : "",
           bad_a ? mb_bench_status_name(row->a->status) : "",
           bad_a && bad_b ? ", " : "", bad_b ? "B: " : "",
           bad_b ? mb_bench_status_name(row->b->status) : "");
  return buf;
}

static void print_text(const mb_db_run *a, const mb_db_run *b,
                       const mb_compare_options *options,
                       const mb_compare_row *rows, int n, const env_diff *d) {
  char ci_title[32];
  int name_w = 10;
  print_run_line("A", a);
  print_run_line("B", b);
  if (different_models(a, b))
    printf("note: A and B benchmarked different models (sha256 %.12s vs "
           "%.12s)\n",
           a->model_sha256, b->model_sha256);
  print_environment(a, b, d);
  printf("\n");
  for (int i = 0; i < n; i++)
    name_w = MB_MAX(name_w, (int)strlen(rows[i].conversion));
  snprintf(ci_title, sizeof ci_title, "%g%% CI", 100.0 * (1 - options->alpha));
  printf("%-*s %12s %12s %8s  %-18s %7s  %s\n", name_w, "CONVERSION",
         "MEDIAN A ms", "MEDIAN B ms", "CHANGE", ci_title, "p", "VERDICT");
  for (int i = 0; i < n; i++) {
    const mb_compare_row *r = &rows[i];
    char ma[32], mb[32], change[32], lo[32], hi[32], ci[80], p[32], v[96];
    if (isnan(r->ci_low_pct))
      snprintf(ci, sizeof ci, "-");
    else
      snprintf(ci, sizeof ci, "[%s, %s]", fmt_pct(r->ci_low_pct, lo, sizeof lo),
               fmt_pct(r->ci_high_pct, hi, sizeof hi));
    char name_buf[MB_TERM_TEXT_SIZE];
    printf("%-*s %12s %12s %8s  %-18s %7s  %s\n", name_w,
           mb__term_text(r->conversion, name_buf, sizeof name_buf),
           fmt_ms(r->median_a_ms, ma, sizeof ma),
           fmt_ms(r->median_b_ms, mb, sizeof mb),
           fmt_pct(r->change_pct, change, sizeof change), ci,
           fmt_p(r->p_value, p, sizeof p),
           verdict_text(r, d->n > 0, v, sizeof v));
  }
}

static void json_run(mb_json *j, const char *key, const mb_db_run *run) {
  mb__json_key(j, key);
  mb__json_object_begin(j);
  mb__json_kv_string(j, "source", run->source);
  mb__json_key(j, "run_id");
  if (run->id > 0)
    mb__json_int(j, run->id);
  else
    mb__json_null(j);
  mb__json_kv_string(j, "time", run->time_utc);
  mb__json_kv_string(j, "tool_version", run->tool_version);
  mb__json_kv_string(j, "model_path", run->model_path);
  mb__json_kv_string(j, "model_sha256", run->model_sha256);
  mb__json_object_end(j);
}

static void print_json(const mb_db_run *a, const mb_db_run *b,
                       const mb_compare_options *options,
                       const mb_compare_row *rows, int n, const env_diff *d) {
  mb_json j;
  mb__json_init(&j, stdout, true);
  mb__json_object_begin(&j);
  json_run(&j, "a", a);
  json_run(&j, "b", b);
  mb__json_kv_bool(&j, "same_model", !different_models(a, b));
  mb__json_kv_double(&j, "alpha", options->alpha);
  mb__json_kv_double(&j, "confidence", 1 - options->alpha);
  mb__json_kv_int(&j, "resamples", options->resamples);
  mb__json_key(&j, "fail_on_regression_pct");
  if (options->fail_on_regression_pct >= 0)
    mb__json_double(&j, options->fail_on_regression_pct);
  else
    mb__json_null(&j);
  mb__json_key(&j, "environment_recorded");
  mb__json_object_begin(&j);
  mb__json_kv_bool(&j, "a", a->environment_recorded);
  mb__json_kv_bool(&j, "b", b->environment_recorded);
  mb__json_object_end(&j);
  mb__json_key(&j, "environment_differences");
  mb__json_array_begin(&j);
  for (int i = 0; i < d->n; i++) {
    mb__json_object_begin(&j);
    mb__json_kv_string(&j, "key", d->list[i].key);
    mb__json_kv_string(&j, "a", d->list[i].a);
    mb__json_kv_string(&j, "b", d->list[i].b);
    mb__json_kv_bool(&j, "variable", d->list[i].variable);
    mb__json_object_end(&j);
  }
  mb__json_array_end(&j);
  mb__json_key(&j, "conversions");
  mb__json_array_begin(&j);
  for (int i = 0; i < n; i++) {
    const mb_compare_row *r = &rows[i];
    mb__json_object_begin(&j);
    mb__json_kv_string(&j, "conversion", r->conversion);
    mb__json_kv_string(&j, "verdict", mb__compare_verdict_name(r->verdict));
    mb__json_kv_string(&j, "status_a",
                       r->a ? mb_bench_status_name(r->a->status) : NULL);
    mb__json_kv_string(&j, "status_b",
                       r->b ? mb_bench_status_name(r->b->status) : NULL);
    mb__json_kv_double(&j, "median_a_ms", r->median_a_ms);
    mb__json_kv_double(&j, "median_b_ms", r->median_b_ms);
    mb__json_kv_double(&j, "change_pct", r->change_pct);
    mb__json_kv_double(&j, "ci_low_pct", r->ci_low_pct);
    mb__json_kv_double(&j, "ci_high_pct", r->ci_high_pct);
    mb__json_kv_double(&j, "p_value", r->p_value);
    mb__json_kv_int(&j, "samples_a", r->n_a);
    mb__json_kv_int(&j, "samples_b", r->n_b);
    mb__json_kv_bool(&j, "significant", r->significant);
    mb__json_kv_bool(&j, "regression", r->regression);
    mb__json_object_end(&j);
  }
  mb__json_array_end(&j);
  mb__json_key(&j, "regressions");
  mb__json_array_begin(&j);
  for (int i = 0; i < n; i++)
    if (rows[i].regression)
      mb__json_string(&j, rows[i].conversion);
  mb__json_array_end(&j);
  mb__json_object_end(&j); /* the writer ends the document with \n */
}

/* Names each regression on stderr, and the keys of the environment that
 * differ beside it; returns how many. */
static int report_regressions(const mb_compare_options *options,
                              const mb_compare_row *rows, int n, bool json,
                              const env_diff *d) {
  char keys[512] = "";
  size_t used = 0;
  for (int i = 0; i < d->n && used < sizeof keys; i++) {
    int w = snprintf(keys + used, sizeof keys - used, "%s%s",
                     i ? ", " : " (the environment differs: ", d->list[i].key);
    used += w > 0 ? (size_t)w : 0;
  }
  if (d->n > 0 && used < sizeof keys)
    snprintf(keys + used, sizeof keys - used, ")");
  int count = 0;
  for (int i = 0; i < n; i++) {
    const mb_compare_row *r = &rows[i];
    if (!r->regression)
      continue;
    count++;
    mb__cli_error(NULL,
                  "regression: %s is %.1f%% slower (median %.3f -> %.3f ms, "
                  "%g%% CI [%+.1f%%, %+.1f%%], p = %.3g), above the %g%% "
                  "allowed%s",
                  r->conversion, r->change_pct, r->median_a_ms, r->median_b_ms,
                  100.0 * (1 - options->alpha), r->ci_low_pct, r->ci_high_pct,
                  r->p_value, options->fail_on_regression_pct, keys);
  }
  if (!count && options->fail_on_regression_pct >= 0 && !json)
    printf("\nno regression above %g%%\n", options->fail_on_regression_pct);
  return count;
}

int mb__cli_compare(int argc, char **argv) {
  static const struct option options[] = {
      {"fail-on-regression", required_argument, NULL, OPT_FAIL_ON_REGRESSION},
      {"alpha", required_argument, NULL, OPT_ALPHA},
      {"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
      {"json", no_argument, NULL, OPT_JSON},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *cmd = "compare";
  const char *cache_dir = NULL;
  bool json = false;
  int c, rc, n_rows = 0;
  mb_compare_options opts;
  mb_db *db = NULL;
  mb_db_run *run_a = NULL, *run_b = NULL;
  mb_compare_row *rows = NULL;
  env_diff diff = {NULL, 0};
  mb_error err;
  memset(&err, 0, sizeof err);
  mb__compare_options_init(&opts);
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    switch (c) {
    case OPT_FAIL_ON_REGRESSION:
      if (!mb__cli_parse_double(optarg, &opts.fail_on_regression_pct) ||
          opts.fail_on_regression_pct < 0)
        return mb__cli_usage_error(
            cmd, "--fail-on-regression '%s': expected a percentage >= 0",
            optarg);
      break;
    case OPT_ALPHA:
      if (!mb__cli_parse_double(optarg, &opts.alpha) || !(opts.alpha > 0) ||
          !(opts.alpha < 1))
        return mb__cli_usage_error(
            cmd, "--alpha '%s': expected a number between 0 and 1", optarg);
      break;
    case OPT_CACHE_DIR:
      cache_dir = optarg;
      break;
    case OPT_JSON:
      json = true;
      break;
    case 'h':
      fputs(compare_help, stdout);
      return MB_EXIT_OK;
    default:
      return mb__cli_bad_option(cmd, c, argv);
    }
  }
  if (argc - optind < 2)
    return mb__cli_usage_error(cmd, "expected two runs, RUN_A and RUN_B");
  if (argc - optind > 2)
    return mb__cli_usage_error(cmd, "unexpected argument '%s'",
                               argv[optind + 2]);

  rc = load_run(argv[optind], cache_dir, &db, &run_a);
  if (rc == MB_EXIT_OK)
    rc = load_run(argv[optind + 1], cache_dir, &db, &run_b);
  if (rc != MB_EXIT_OK)
    goto done;
  if (mb__compare_runs(run_a, run_b, &opts, &rows, &n_rows, &err) !=
      MB_STATUS_OK) {
    rc = mb__cli_fail(NULL, &err);
    goto done;
  }
  /* A run without a recorded environment has nothing to compare: its
   * variables are unknown, not unset. */
  if (run_a->environment_recorded && run_b->environment_recorded &&
      mb__environment_diff(run_a->environment, run_a->n_environment,
                           run_b->environment, run_b->n_environment, &diff.list,
                           &diff.n, &err) != MB_STATUS_OK) {
    rc = mb__cli_fail(NULL, &err);
    goto done;
  }
  if (json)
    print_json(run_a, run_b, &opts, rows, n_rows, &diff);
  else
    print_text(run_a, run_b, &opts, rows, n_rows, &diff);
  if (report_regressions(&opts, rows, n_rows, json, &diff) > 0)
    rc = MB_EXIT_FAILURE;

done:
  free(diff.list);
  free(rows);
  mb__db_run_free(run_a);
  mb__db_run_free(run_b);
  mb__db_close(db);
  return rc;
}
