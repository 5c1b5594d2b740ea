/* modelbench history: the benchmark runs recorded in the results database,
 * newest first. */
#include "cli/cli_common.h"
#include "core/json_write.h"
#include "db/results_db.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

static const char history_help[] =
    "Usage: modelbench history [MODEL] [OPTIONS]\n"
    "\n"
    "Lists the benchmark runs recorded in the results database, newest\n"
    "first: run id, time (UTC), model, conversions that ran ok out of all,\n"
    "the fastest one and its median latency, and the run's labels. Give a\n"
    "run id to 'modelbench compare'.\n"
    "\n"
    "MODEL keeps the runs of one model: a path (matching the path given to\n"
    "bench, or the same file by its absolute path, or any file with the\n"
    "same contents: its sha256) or a sha256 prefix of 4+ hex digits.\n"
    "\n"
    "Options:\n"
    "      --label KEY=VALUE  only runs carrying this label (repeatable: all\n"
    "                         must match)\n"
    "  -n, --limit N          at most N runs (default: all)\n"
    "      --cache-dir DIR    the cache folder holding results.db (default:\n"
    "                         $MODELBENCH_CACHE_DIR, else\n"
    "                         ~/.cache/modelbench)\n"
    "      --json             print JSON instead of text\n"
    "  -h, --help             show this help\n"
    "\n"
    "Exit status: 0 success (also when no run is recorded), 1 the database\n"
    "cannot be read, 2 usage error.\n";

enum { OPT_LABEL = 256, OPT_CACHE_DIR, OPT_JSON };

static bool is_hex_prefix(const char *s) {
  size_t n = strlen(s);
  if (n < 4 || n > 64)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!isxdigit((unsigned char)s[i]))
      return false;
  return true;
}

/* The sha256 bench records for the model file at path (its bytes and its
 * external data); "" when it does not load. */
static void model_sha256(const char *path, char sha[65]) {
  mb_model *model = NULL;
  sha[0] = '\0';
  if (mb_model_load(path, &model, NULL) == MB_STATUS_OK)
    snprintf(sha, 65, "%s", mb_model_sha256(model));
  mb_model_free(model);
}

static void print_labels(FILE *out, const mb_db_run_summary *s) {
  for (int i = 0; i < s->n_labels; i++) {
    if (i)
      fputc(',', out);
    mb__term_put(out, s->labels[i]);
  }
  if (!s->n_labels)
    fputs("-", out);
}

static void print_text(const char *db_path, const mb_db_run_list *list,
                       bool filtered) {
  if (list->n_runs == 0) {
    if (filtered)
      printf("no run in %s matches\n", db_path);
    else
      printf("no runs recorded in %s\n", db_path);
    return;
  }
  int model_w = 5, best_w = 4;
  for (int i = 0; i < list->n_runs; i++) {
    const mb_db_run_summary *s = &list->runs[i];
    model_w = MB_MAX(model_w, (int)strlen(s->model_path));
    if (s->best_conversion)
      best_w = MB_MAX(best_w, (int)strlen(s->best_conversion));
  }
  model_w = MB_MIN(model_w, 60);
  printf("%-6s %-20s %-*s %-7s %-*s %10s  %s\n", "ID", "TIME (UTC)", model_w,
         "MODEL", "OK/ALL", best_w, "BEST", "MEDIAN ms", "LABELS");
  for (int i = 0; i < list->n_runs; i++) {
    const mb_db_run_summary *s = &list->runs[i];
    char time[32], counts[24], median[32];
    /* "2025-01-31T12:00:00Z" reads better as "2025-01-31 12:00:00". */
    snprintf(time, sizeof time, "%s", s->time_utc);
    if (strlen(time) == 20 && time[10] == 'T') {
      time[10] = ' ';
      time[19] = '\0';
    }
    snprintf(counts, sizeof counts, "%d/%d", s->n_ok, s->n_results);
    if (isnan(s->best_median_ms))
      snprintf(median, sizeof median, "-");
    else
      snprintf(median, sizeof median, "%.3f", s->best_median_ms);
    /* The database is data (a shared one, anybody's): its text is printed
     * escaped. A long path keeps its end, where the file name is. */
    char path_buf[MB_TERM_TEXT_SIZE], best_buf[MB_TERM_TEXT_SIZE];
    const char *model = mb__term_text(s->model_path, path_buf, sizeof path_buf);
    int len = (int)strlen(model);
    if (len > model_w)
      model += len - model_w;
    printf("%-6lld %-20s %-*s %-7s %-*s %10s  ", (long long)s->id, time,
           model_w, model, counts, best_w,
           s->best_conversion
               ? mb__term_text(s->best_conversion, best_buf, sizeof best_buf)
               : "-",
           median);
    print_labels(stdout, s);
    printf("\n");
  }
}

static void print_json(const char *db_path, const mb_db_run_list *list) {
  mb_json j;
  mb__json_init(&j, stdout, true);
  mb__json_object_begin(&j);
  mb__json_kv_string(&j, "database", db_path);
  mb__json_key(&j, "runs");
  mb__json_array_begin(&j);
  for (int i = 0; list && i < list->n_runs; i++) {
    const mb_db_run_summary *s = &list->runs[i];
    mb__json_object_begin(&j);
    mb__json_kv_int(&j, "id", s->id);
    mb__json_kv_string(&j, "time", s->time_utc);
    mb__json_kv_string(&j, "tool_version", s->tool_version);
    mb__json_key(&j, "model");
    mb__json_object_begin(&j);
    mb__json_kv_string(&j, "path", s->model_path);
    mb__json_kv_string(&j, "sha256", s->model_sha256);
    mb__json_object_end(&j);
    mb__json_kv_string(&j, "cpu_model", s->cpu_model);
    mb__json_kv_int(&j, "conversions", s->n_results);
    mb__json_kv_int(&j, "ok", s->n_ok);
    mb__json_key(&j, "best");
    if (s->best_conversion) {
      mb__json_object_begin(&j);
      mb__json_kv_string(&j, "conversion", s->best_conversion);
      mb__json_kv_double(&j, "median_ms", s->best_median_ms);
      mb__json_object_end(&j);
    } else {
      mb__json_null(&j);
    }
    mb__json_key(&j, "labels");
    mb__json_object_begin(&j);
    for (int k = 0; k < s->n_labels; k++) {
      const char *eq = strchr(s->labels[k], '=');
      char key[256];
      snprintf(key, sizeof key, "%.*s", (int)(eq - s->labels[k]), s->labels[k]);
      mb__json_kv_string(&j, key, eq + 1);
    }
    mb__json_object_end(&j);
    mb__json_object_end(&j);
  }
  mb__json_array_end(&j);
  mb__json_object_end(&j); /* the writer ends the document with \n */
}

int mb__cli_history(int argc, char **argv) {
  static const struct option options[] = {
      {"label", required_argument, NULL, OPT_LABEL},
      {"limit", required_argument, NULL, 'n'},
      {"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
      {"json", no_argument, NULL, OPT_JSON},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *cmd = "history";
  const char *cache_dir = NULL, *model = NULL;
  bool json = false;
  int64_t limit = 0;
  int n_labels = 0, rc = MB_EXIT_OK, c;
  const char **labels = calloc((size_t)argc + 1, sizeof *labels);
  mb_db *db = NULL;
  mb_db_run_list *list = NULL;
  mb_error err;
  char db_path[PATH_MAX], sha[65] = "";
  memset(&err, 0, sizeof err);
  if (!labels) {
    mb__cli_error(NULL, "out of memory");
    return MB_EXIT_FAILURE;
  }
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":n:h", options, NULL)) != -1) {
    switch (c) {
    case OPT_LABEL:
      if (mb__check_label(optarg, &err) != MB_STATUS_OK) {
        rc = mb__cli_usage_error(cmd, "--label: %s", err.message);
        goto done;
      }
      labels[n_labels++] = optarg;
      break;
    case 'n':
      if (!mb__cli_parse_i64(optarg, 1, INT_MAX, &limit)) {
        rc = mb__cli_usage_error(
            cmd, "--limit '%s': expected a positive integer", optarg);
        goto done;
      }
      break;
    case OPT_CACHE_DIR:
      cache_dir = optarg;
      break;
    case OPT_JSON:
      json = true;
      break;
    case 'h':
      fputs(history_help, stdout);
      goto done;
    default:
      rc = mb__cli_bad_option(cmd, c, argv);
      goto done;
    }
  }
  if (optind < argc)
    model = argv[optind++];
  if (optind < argc) {
    rc = mb__cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    goto done;
  }

  mb_db_run_filter filter = {0};
  filter.labels = labels;
  filter.n_labels = n_labels;
  filter.limit = (int)limit;
  if (model) {
    filter.model_path = model;
    if (mb__cli_file_exists(model))
      model_sha256(model, sha);
    else if (is_hex_prefix(model))
      snprintf(sha, sizeof sha, "%s", model);
    filter.model_sha256 = sha[0] ? sha : NULL;
  }
  if (mb__db_default_path(cache_dir, db_path, sizeof db_path, &err) !=
      MB_STATUS_OK) {
    rc = mb__cli_fail(NULL, &err);
    goto done;
  }
  mb_status status = mb__db_open(db_path, false, &db, &err);
  if (status == MB_STATUS_NOT_FOUND) {
    /* Nothing recorded yet is an empty history, not an error. */
    mb_db_run_list empty = {0};
    if (json)
      print_json(db_path, &empty);
    else
      printf("no runs recorded in %s (bench records them)\n", db_path);
    goto done;
  }
  if (status != MB_STATUS_OK ||
      mb__db_list_runs(db, &filter, &list, &err) != MB_STATUS_OK) {
    rc = mb__cli_fail(NULL, &err);
    goto done;
  }
  if (json)
    print_json(db_path, list);
  else
    print_text(db_path, list, model || n_labels);

done:
  mb__db_run_list_free(list);
  mb__db_close(db);
  free(labels);
  return rc;
}
