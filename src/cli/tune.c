/* modelbench tune: the fastest configuration within an accuracy budget
 * (the search is mb_tune, src/bench/tune.c). */
#include "bench/bench.h"
#include "cli/cli_common.h"
#include "db/results_db.h"

#include <limits.h>
#include <stdlib.h>

static const char tune_help[] =
    "Usage: modelbench tune MODEL --max-error E [OPTIONS]\n"
    "\n"
    "Searches conversions x threads (x batch sizes) for the fastest\n"
    "configuration whose\n"
    "outputs stay within E of the reference (1 - cosine, on every output):\n"
    "  1. every candidate briefly, then the faster half twice as long, ...\n"
    "     (successive halving; failures, SLO misses, inaccurate non-int8\n"
    "     conversions and any over 1.5x the fastest accurate one drop out);\n"
    "  2. int8 candidates that are inaccurate but faster than the fastest\n"
    "     accurate one get per-node precision (unless even all of their\n"
    "     Conv/MatMul/Gemm nodes in float miss E: the error is elsewhere):\n"
    "     each Conv/MatMul/Gemm node's\n"
    "     sensitivity (the int8 model's accuracy with that node alone kept\n"
    "     in float, estimated on the reference interpreter with the same\n"
    "     calibration), then the most sensitive nodes kept in float until\n"
    "     the estimate meets E/2, then measured on the engine (more nodes\n"
    "     while it is inaccurate there), unless its predicted time (int8\n"
    "     time plus the kept share of FLOPs of the gap to its runtime's\n"
    "     fp32 time) cannot beat the fastest accurate one;\n"
    "  3. the winner: the fastest accurate configuration (within the SLO).\n"
    "Prints what was tried and the winner with the nodes kept in float\n"
    "('bench --keep-float' runs it again) and the share of FLOPs in int8.\n"
    "\n"
    "Options:\n"
    "      --max-error E          the accuracy budget: 1 - cosine (required\n"
    "                             unless --max-accuracy-drop is given)\n"
    "      --max-accuracy-drop D  the budget as task accuracy instead: at\n"
    "                             most D (0.5% or 0.005) below the top-1\n"
    "                             accuracy of the fp32 candidate closest to\n"
    "                             the reference, against --labels; the\n"
    "                             per-node search still steers by cosine\n"
    "      --labels FILE.npy      integer class labels, one per input row\n"
    "                             (as in 'bench')\n"
    "  -c, --conversions LIST     candidates (default: the ONNX CPU\n"
    "                             conversions of the default set and tier 2)\n"
    "      --threads LIST         thread counts to try (default 1)\n"
    "      --budget SECONDS       stop after this long with the best so far\n"
    "      --slo pP=LATENCY       e.g. p99=20ms: slower configurations lose\n"
    "      --json FILE            the search log (docs/json-schema.md)\n"
    "      --html FILE            a page: accuracy against latency, the\n"
    "                             front and the winner, every step\n"
    "      --output FILE.onnx     write the winner's model there: what\n"
    "                             'convert' writes for it, the configuration\n"
    "                             in its metadata (\"modelbench.tune\");\n"
    "                             'bench FILE.onnx' runs it again\n"
    "      --round-time SECONDS   timed phase of the first round (default\n"
    "                             0.25; each later round doubles it)\n"
    "      --inputs DIR           evaluation inputs (as in 'bench')\n"
    "      --n-samples N          distinct input batches (default 1)\n"
    "      --batch-size LIST      batch sizes to try (default 1; several are\n"
    "                             ranked by time per sample, the SLO holding\n"
    "                             for a batch's latency)\n"
    "      --seed N               seed of generated inputs (default 0)\n"
    "      --calibration-samples N, --calibration-inputs DIR,\n"
    "      --calibration-method M, --int8-weights W  as in 'bench'\n"
    "      --cache-dir DIR        build cache and results database folder\n"
    "      --no-cache             build every candidate afresh\n"
    "      --no-record            do not store the winner's run in the\n"
    "                             results database\n"
    "  -h, --help                 show this help\n"
    "\n"
    "Exit status: 0 a configuration meets the budget, 1 failure, 2 usage\n"
    "error, 3 no configuration meets --max-error (the closest is named).\n";

enum { MB_EXIT_NONE_MEETS = 3 };

enum {
  OPT_MAX_ERROR = 256,
  OPT_THREADS,
  OPT_BUDGET,
  OPT_SLO,
  OPT_JSON,
  OPT_HTML,
  OPT_OUTPUT,
  OPT_ROUND_TIME,
  OPT_INPUTS,
  OPT_N_SAMPLES,
  OPT_BATCH,
  OPT_SEED,
  OPT_CACHE_DIR,
  OPT_NO_CACHE,
  OPT_NO_RECORD,
  OPT_MAX_ACCURACY_DROP,
  OPT_LABELS,
  OPT_CALIBRATION,
  OPT_CALIBRATION_LAST = OPT_CALIBRATION + MB_CLI_CALIB_COUNT - 1,
};

#define MAX_THREAD_COUNTS 16

typedef struct tune_cli {
  mb_tune_config config;
  int conversions[512];
  int threads[MAX_THREAD_COUNTS];
  int batches[MAX_THREAD_COUNTS];
  const char *json_path;
  const char *html_path;
  bool no_record;
  bool max_error_given;
} tune_cli;

static const char *cmd = "tune";

/* "120", "120s", "2m". */
static bool parse_seconds(const char *arg, double *out) {
  char buf[64];
  double scale = 1;
  size_t n = strlen(arg);
  if (n == 0 || n >= sizeof buf)
    return false;
  memcpy(buf, arg, n + 1);
  if (buf[n - 1] == 's') {
    buf[n - 1] = '\0';
  } else if (buf[n - 1] == 'm') {
    buf[n - 1] = '\0';
    scale = 60;
  }
  return mb__cli_parse_double(buf, out) && *out > 0 && (*out *= scale, true);
}

/* "1,2,4" into out (at most MAX_THREAD_COUNTS values in 1..max); *n the
 * count. A usage error naming `flag` otherwise. */
static int parse_list(const char *flag, const char *arg, int max, int *out,
                      int *n_out) {
  char *copy = strdup(arg), *save = NULL;
  int n = 0, rc = MB_EXIT_OK;
  if (!copy) {
    mb__cli_error(NULL, "out of memory");
    return MB_EXIT_FAILURE;
  }
  for (char *tok = strtok_r(copy, ",", &save); tok && rc == MB_EXIT_OK;
       tok = strtok_r(NULL, ",", &save)) {
    int64_t v;
    if (n == MAX_THREAD_COUNTS || !mb__cli_parse_i64(tok, 1, max, &v))
      rc = mb__cli_usage_error(cmd,
                               "%s '%s': expected up to %d integers "
                               "in 1..%d, comma-separated",
                               flag, arg, MAX_THREAD_COUNTS, max);
    else
      out[n++] = (int)v;
  }
  free(copy);
  if (rc == MB_EXIT_OK && n == 0)
    rc = mb__cli_usage_error(cmd, "%s: expected N[,N...]", flag);
  *n_out = n;
  return rc;
}

static int option(tune_cli *t, int c, const char *arg) {
  mb_bench_config *b = &t->config.bench;
  mb_error err;
  int64_t v;
  int n;
  switch (c) {
  case OPT_MAX_ERROR:
    if (!mb__cli_parse_double(arg, &b->max_error) || !(b->max_error > 0))
      return mb__cli_usage_error(cmd,
                                 "--max-error '%s': expected a number "
                                 "> 0 (1 - cosine)",
                                 arg);
    t->max_error_given = true;
    return MB_EXIT_OK;
  case 'c':
    if (mb_conversion_parse_list(arg, t->conversions,
                                 (int)MB_ARRAY_COUNT(t->conversions), &n,
                                 &err) != MB_STATUS_OK)
      return mb__cli_usage_error(cmd, "-c: %s", err.message);
    b->conversions = t->conversions;
    b->n_conversions = n;
    return MB_EXIT_OK;
  case OPT_THREADS:
    t->config.threads = t->threads;
    return parse_list("--threads", arg, 1024, t->threads, &t->config.n_threads);
  case OPT_BATCH: {
    /* One batch size is bench's; several are a dimension of the search. */
    int rc = parse_list("--batch-size", arg, MB_TUNE_MAX_BATCH, t->batches, &n);
    if (rc != MB_EXIT_OK)
      return rc;
    b->batch_size = t->batches[0];
    t->config.batch_sizes = n > 1 ? t->batches : NULL;
    t->config.n_batch_sizes = n > 1 ? n : 0;
    return MB_EXIT_OK;
  }
  case OPT_BUDGET:
    if (!parse_seconds(arg, &t->config.budget_seconds))
      return mb__cli_usage_error(cmd,
                                 "--budget '%s': expected seconds > 0 "
                                 "(120, 120s, 2m)",
                                 arg);
    return MB_EXIT_OK;
  case OPT_SLO:
    if (mb__slo_parse(arg, &t->config.slo_percentile, &t->config.slo_ms, &err))
      return mb__cli_usage_error(cmd, "--slo: %s", err.message);
    return MB_EXIT_OK;
  case OPT_JSON:
    t->json_path = arg;
    return MB_EXIT_OK;
  case OPT_HTML:
    t->html_path = arg;
    return MB_EXIT_OK;
  case OPT_OUTPUT:
    t->config.output_path = arg;
    return MB_EXIT_OK;
  case OPT_ROUND_TIME:
    if (!parse_seconds(arg, &t->config.round_seconds))
      return mb__cli_usage_error(cmd,
                                 "--round-time '%s': expected seconds "
                                 "> 0",
                                 arg);
    return MB_EXIT_OK;
  case OPT_INPUTS:
    b->inputs_dir = arg;
    return MB_EXIT_OK;
  case OPT_N_SAMPLES:
    if (!mb__cli_parse_i64(arg, 1, 1 << 20, &v))
      return mb__cli_usage_error(cmd,
                                 "--n-samples '%s': expected an integer "
                                 ">= 1",
                                 arg);
    b->n_samples = (int)v;
    return MB_EXIT_OK;
  case OPT_SEED:
    if (!mb__cli_parse_i64(arg, 0, INT64_MAX, &v))
      return mb__cli_usage_error(cmd, "--seed '%s': expected an integer >= 0",
                                 arg);
    b->seed = (uint64_t)v;
    return MB_EXIT_OK;
  case OPT_CACHE_DIR:
    b->cache_dir = arg;
    return MB_EXIT_OK;
  case OPT_NO_CACHE:
    b->build_cache = 0;
    return MB_EXIT_OK;
  case OPT_NO_RECORD:
    t->no_record = true;
    return MB_EXIT_OK;
  case OPT_MAX_ACCURACY_DROP: {
    /* "0.5%" or a share, "0.005". */
    char buf[64];
    size_t len = strlen(arg);
    double scale = 1, d;
    if (len > 0 && len < sizeof buf) {
      memcpy(buf, arg, len + 1);
      if (buf[len - 1] == '%') {
        buf[len - 1] = '\0';
        scale = 0.01;
      }
    }
    if (len == 0 || len >= sizeof buf || !mb__cli_parse_double(buf, &d) ||
        !(d * scale > 0 && d * scale < 1))
      return mb__cli_usage_error(cmd,
                                 "--max-accuracy-drop '%s': expected a share "
                                 "in (0, 1) or a percentage, e.g. 0.005 or "
                                 "0.5%%",
                                 arg);
    t->config.max_accuracy_drop = d * scale;
    return MB_EXIT_OK;
  }
  case OPT_LABELS:
    b->labels_path = arg;
    return MB_EXIT_OK;
  default:
    if (c >= OPT_CALIBRATION && c <= OPT_CALIBRATION_LAST)
      return mb__cli_calibration_option(cmd, c - OPT_CALIBRATION, arg, b);
    return MB_EXIT_USAGE;
  }
}

/* ---- output ---- */

static void on_step(void *user, const mb_tune_step *s) {
  (void)user;
  char what[96] = "";
  if (s->median_ms >= 0)
    snprintf(what, sizeof what, "%.3f ms, ", s->median_ms);
  if (s->error >= 0)
    snprintf(what + strlen(what), sizeof what - strlen(what), "1 - cosine %.3g",
             s->error);
  else
    snprintf(what + strlen(what), sizeof what - strlen(what), "%s",
             mb_bench_status_name(s->status));
  char batch[24] = "";
  if (s->batch_size > 1)
    snprintf(batch, sizeof batch, " batch %d", s->batch_size);
  fprintf(stderr, "tune: %-14s %s x%d%s%s%s: %s\n", s->phase,
          mb__cli_text(s->conversion), s->threads, batch,
          s->n_kept_float == 1 ? " keeping " : "",
          s->n_kept_float == 1 ? mb__cli_text(s->kept_float[0]) : "", what);
}

static const char *share_text(double share, char *buf, size_t size) {
  if (share < 0)
    snprintf(buf, size, "-");
  else
    snprintf(buf, size, "%.1f%%", share * 100);
  return buf;
}

/* A uniform step the next round measured again: that one says more. */
static int measured_again(const mb_tune_result *r, int i) {
  const mb_tune_step *s = &r->steps[i];
  for (int k = i + 1; strcmp(s->phase, "uniform") == 0 && k < r->n_steps; k++)
    if (strcmp(r->steps[k].phase, "uniform") == 0 &&
        r->steps[k].threads == s->threads &&
        r->steps[k].batch_size == s->batch_size &&
        strcmp(r->steps[k].conversion, s->conversion) == 0)
      return r->steps[k].round;
  return -1;
}

static void print_table(const mb_tune_result *r) {
  char share[16];
  printf("%-5s %-14s %-26s %4s %5s %9s %12s %10s %6s  %s\n", "step", "phase",
         "conversion", "thr", "batch", "kept", "median_ms", "cosine", "int8",
         "outcome");
  for (int i = 0; i < r->n_steps; i++) {
    const mb_tune_step *s = &r->steps[i];
    /* The per-node estimates are many: the log has them all. */
    if (strcmp(s->phase, "sensitivity") == 0)
      continue;
    char median[32] = "-", cosine[32] = "-", kept[32];
    if (s->median_ms >= 0)
      snprintf(median, sizeof median, "%.3f", s->median_ms);
    if (s->cosine >= -1)
      snprintf(cosine, sizeof cosine, "%.6f", s->cosine);
    snprintf(kept, sizeof kept, "%d", s->n_kept_float);
    char again[48] = "";
    if (measured_again(r, i) >= 0)
      snprintf(again, sizeof again, "measured again in round %d",
               measured_again(r, i));
    const char *outcome = i == r->winner  ? "WINNER"
                          : again[0]      ? again
                          : s->dropped[0] ? s->dropped
                          : s->status != MB_BENCH_OK
                              ? mb_bench_status_name(s->status)
                          : s->accurate ? "accurate"
                                        : "inaccurate";
    printf("%-5d %-14s %-26s %4d %5d %9s %12s %10s %6s  %s\n", i, s->phase,
           mb__cli_text(s->conversion), s->threads, MB_MAX(s->batch_size, 1),
           kept, median, cosine,
           share_text(s->int8_flops_share, share, sizeof share),
           mb__cli_text(outcome));
  }
  int sensitivity = 0;
  for (int i = 0; i < r->n_steps; i++)
    sensitivity += strcmp(r->steps[i].phase, "sensitivity") == 0;
  if (sensitivity)
    printf("(%d per-node sensitivity estimates: see --json)\n", sensitivity);
}

/* ", batch 8 (0.125 ms per sample)" for a step at a batch over 1, else "". */
static const char *batch_text(const mb_tune_step *s, char buf[64]) {
  buf[0] = '\0';
  if (s->batch_size > 1)
    snprintf(buf, 64, ", batch %d (%.4f ms per sample)", s->batch_size,
             s->median_ms / s->batch_size);
  return buf;
}

static void print_winner(const mb_tune_result *r) {
  char share[16], batch[64];
  printf("\n");
  if (r->fastest_uniform >= 0) {
    const mb_tune_step *u = &r->steps[r->fastest_uniform];
    printf("fastest accurate uniform option: %s at %d threads%s, median %.3f "
           "ms, cosine %.6f\n",
           mb__cli_text(u->conversion), u->threads, batch_text(u, batch),
           u->median_ms, u->cosine);
  } else {
    printf("fastest accurate uniform option: none\n");
  }
  if (r->max_accuracy_drop > 0) {
    if (r->baseline_task_accuracy >= 0)
      printf("task accuracy baseline: %s, %.2f%%; budget: at most %g%% "
             "below\n",
             mb__cli_text(r->baseline), 100 * r->baseline_task_accuracy,
             100 * r->max_accuracy_drop);
    else
      printf("task accuracy baseline: none measured\n");
  }
  if (r->found) {
    const mb_tune_step *w = &r->steps[r->winner];
    char task[64] = "";
    if (w->task_accuracy >= 0)
      snprintf(task, sizeof task, ", task accuracy %.2f%%",
               100 * w->task_accuracy);
    printf("winner: %s at %d threads%s, median %.3f ms, cosine %.6f%s, int8 "
           "share of FLOPs %s\n",
           mb__cli_text(w->conversion), w->threads, batch_text(w, batch),
           w->median_ms, w->cosine, task,
           share_text(w->int8_flops_share, share, sizeof share));
    if (w->n_kept_float) {
      printf("  kept in float (%d):", w->n_kept_float);
      for (int k = 0; k < w->n_kept_float; k++)
        printf("%s%s", k ? "," : " ", mb__cli_text(w->kept_float[k]));
      printf("\n");
    }
    if (r->fastest_uniform >= 0 && r->fastest_uniform != r->winner)
      printf("  %.2fx the fastest accurate uniform option\n",
             r->steps[r->fastest_uniform].median_ms / w->median_ms);
  }
  printf("%s\n", mb__cli_text(r->summary));
  printf("search wall time: %.1f s%s\n", r->wall_seconds,
         r->budget_exhausted ? " (the budget ran out)" : "");
}

static void record_winner(const tune_cli *t, const mb_tune_result *r) {
  static const char *const labels[] = {"tune=winner"};
  mb_error err;
  int64_t run_id = 0;
  char db_path[PATH_MAX];
  if (t->no_record || !r->winner_report)
    return;
  if (mb__db_record_report(t->config.bench.cache_dir, r->winner_report, labels,
                           1, &run_id, db_path, sizeof db_path,
                           &err) == MB_STATUS_OK)
    printf("recorded the winner's run as run %lld in %s\n", (long long)run_id,
           mb__cli_text(db_path));
  else
    mb__cli_error(NULL, "warning: the winner's run not recorded: %s",
                  err.message);
}

int mb__cli_tune(int argc, char **argv) {
  static const struct option options[] = {
      {"max-error", required_argument, NULL, OPT_MAX_ERROR},
      {"conversions", required_argument, NULL, 'c'},
      {"threads", required_argument, NULL, OPT_THREADS},
      {"budget", required_argument, NULL, OPT_BUDGET},
      {"slo", required_argument, NULL, OPT_SLO},
      {"json", required_argument, NULL, OPT_JSON},
      {"html", required_argument, NULL, OPT_HTML},
      {"output", required_argument, NULL, OPT_OUTPUT},
      {"round-time", required_argument, NULL, OPT_ROUND_TIME},
      {"inputs", required_argument, NULL, OPT_INPUTS},
      {"n-samples", required_argument, NULL, OPT_N_SAMPLES},
      {"batch-size", required_argument, NULL, OPT_BATCH},
      {"seed", required_argument, NULL, OPT_SEED},
      {"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
      {"no-cache", no_argument, NULL, OPT_NO_CACHE},
      {"no-record", no_argument, NULL, OPT_NO_RECORD},
      {"max-accuracy-drop", required_argument, NULL, OPT_MAX_ACCURACY_DROP},
      {"labels", required_argument, NULL, OPT_LABELS},
      MB_CLI_CALIBRATION_OPTIONS(OPT_CALIBRATION),
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  tune_cli *t = calloc(1, sizeof *t);
  mb_tune_result *result = NULL;
  mb_error err;
  int rc = MB_EXIT_OK, c;
  if (!t) {
    mb__cli_error(NULL, "out of memory");
    return MB_EXIT_FAILURE;
  }
  mb_tune_config_init(&t->config);
  t->config.on_step = on_step;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":c:h", options, NULL)) != -1) {
    if (c == 'h') {
      fputs(tune_help, stdout);
      goto done;
    }
    rc = option(t, c, optarg);
    if (rc == MB_EXIT_USAGE && (c == '?' || c == ':'))
      rc = mb__cli_bad_option(cmd, c, argv);
    if (rc != MB_EXIT_OK)
      goto done;
  }
  if (optind >= argc) {
    rc = mb__cli_usage_error(cmd, "missing MODEL");
    goto done;
  }
  if (argc - optind > 1) {
    rc = mb__cli_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
    goto done;
  }
  if (!t->max_error_given && !(t->config.max_accuracy_drop > 0)) {
    rc = mb__cli_usage_error(cmd, "missing --max-error E (the accuracy "
                                  "budget, 1 - cosine, e.g. 1e-3) or "
                                  "--max-accuracy-drop D with --labels");
    goto done;
  }
  if (t->config.max_accuracy_drop > 0 && !t->config.bench.labels_path) {
    rc = mb__cli_usage_error(cmd, "--max-accuracy-drop needs --labels "
                                  "FILE.npy (one class per input row)");
    goto done;
  }
  if (mb_tune(argv[optind], &t->config, &result, &err) != MB_STATUS_OK) {
    rc = mb__cli_fail(argv[optind], &err);
    goto done;
  }
  print_table(result);
  print_winner(result);
  if (t->json_path &&
      mb_tune_result_write_json(result, t->json_path, &err) != MB_STATUS_OK)
    rc = mb__cli_fail(t->json_path, &err);
  if (t->html_path &&
      mb_tune_result_write_html(result, t->html_path, &err) != MB_STATUS_OK)
    rc = mb__cli_fail(t->html_path, &err);
  record_winner(t, result);
  if (result->output_error[0]) {
    mb__cli_error(t->config.output_path,
                  "--output: the winner's model not written: %s",
                  result->output_error);
    rc = MB_EXIT_FAILURE;
  } else if (result->output_path[0]) {
    printf("wrote the winner's model to %s ('modelbench bench %s' runs it "
           "again)\n",
           mb__cli_text(result->output_path),
           mb__cli_text(result->output_path));
  } else if (t->config.output_path) {
    printf("no model written to %s: no configuration meets the budget\n",
           mb__cli_text(t->config.output_path));
  }
  if (rc == MB_EXIT_OK && !result->found)
    rc = MB_EXIT_NONE_MEETS;
done:
  mb_tune_result_free(result);
  free(t);
  return rc;
}
