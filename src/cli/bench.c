/* modelbench bench: benchmark a model under conversion options, each in its
 * own process, and print a table (and optionally write JSON).
 *
 * Settings come from, in increasing precedence: the defaults, the JSON file
 * of --config, and the command-line flags. Exit status: 0 when every
 * conversion ran; 1 when one failed (error, timeout, crash, skipped by
 * --fail-fast), or when a conversion the user asked for by name (-c or the
 * config file's "conversions") is unavailable here; 2 for usage errors. An
 * unavailable conversion of the default set is not a failure: the default
 * set is what we try, not what the user demanded. */
#include "bench/bench.h"
#include "cli/cli_common.h"
#include "cli/exec_cli.h"
#include "conversions/conversion.h"
#include "db/results_db.h"
#include "report/report_util.h"

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const char bench_help[] =
    "Usage: modelbench bench MODEL... [OPTIONS]\n"
    "\n"
    "Benchmarks each MODEL under each selected conversion option, each in\n"
    "its own process: load time, first-inference time, warm-up, then timed\n"
    "iterations (median, p90, p99, throughput), peak memory, and accuracy\n"
    "against the reference interpreter on the same inputs.\n"
    "\n"
    "Models: MODEL is an .onnx file or a folder (its .onnx files; with\n"
    "--recursive those of its sub-folders too); PATH::HASH keeps the models\n"
    "under PATH whose sha256 starts with HASH (as 'analyze' prints it). A\n"
    "TorchScript file (.pt, give --shape for each input) runs under\n"
    "TORCHSCRIPT; a model manifest (.json, docs/model-manifest.md, as the\n"
    "Python front writes one for an nn.Module) under every conversion of\n"
    "its formats.\n"
    "      --recursive            search folders' sub-folders for models\n"
    "      --trust-code           let the model run code: a manifest's\n"
    "                             pytorch form that is a pickle (and its\n"
    "                             sys_path), a torch.save .pt; without it\n"
    "                             they are refused (docs/model-manifest.md)\n"
    "\n"
    "Conversions:\n"
    "  -c, --conversions LIST     names and ids, comma-separated, run in this\n"
    "                             order (default: the default set; see\n"
    "                             'modelbench list')\n"
    "      --tier N               1: quick check (REFERENCE, ORT_CPU); 2: the\n"
    "                             core deployment options (one fp32 option "
    "per\n"
    "                             runtime plus its reduced-precision one); 3:\n"
    "                             every conversion (see 'modelbench list "
    "--tier')\n"
    "      --no-fallback          hybrid conversions (XNNPACK, ONEDNN) fail\n"
    "                             when a node must run on the reference\n"
    "                             interpreter, listing those nodes\n"
    "      --no-roofline          do not measure this machine's peaks (a few\n"
    "                             seconds, once per thread count: 'modelbench\n"
    "                             machine') nor place results against them\n"
    "                             (% peak, bound); also "
    "MODELBENCH_NO_ROOFLINE=1\n"
    "      --baseline NAME        speedups are relative to NAME (default:\n"
    "                             the first conversion)\n"
    "      --reference NAME       accuracy against NAME's outputs (default:\n"
    "                             the reference interpreter; EAGER for a\n"
    "                             PyTorch model's manifest)\n"
    "      --device DEV           cpu, cuda or auto (default cpu): where the\n"
    "                             conversions run; auto puts each one that "
    "can\n"
    "                             run on the GPU there, the rest on the CPU\n"
    "                             (`list` shows each one's devices)\n"
    "      --allow-device-override  a conversion that cannot run on DEV runs\n"
    "                             where it can (with a warning) instead of\n"
    "                             failing\n"
    "\n"
    "Measurement (times in seconds):\n"
    "      --warmup N             warm-up iterations (default 5)\n"
    "      --warmup-time S        minimum warm-up time (default 0.5)\n"
    "      --min-iterations N     minimum timed iterations (default 20)\n"
    "      --min-time S           minimum timed time (default 2)\n"
    "      --max-time S           cap of the timed phase (default 30)\n"
    "      --ci-target P          past the minimums, time until the median's\n"
    "                             95% interval is within P of it (2% or\n"
    "                             0.02) or --max-time passes; says which\n"
    "      --fresh-inputs         after the steady state, time a phase whose\n"
    "                             every iteration reads a different input\n"
    "                             buffer (a pool over the last-level cache)\n"
    "      --cold-cache           ... and one with the last-level cache\n"
    "                             flushed before each iteration\n"
    "      --timeout S            kill a conversion after S (default 300)\n"
    "      --timeout NAME=S       ... for one conversion only (repeatable)\n"
    "      --threads N            intra-op threads (default 1)\n"
    "      --no-isolate           run conversions in this process\n"
    "      --fail-fast            stop at the first failed conversion\n"
    "      --build-only           build (into the cache) and load each\n"
    "                             conversion, measure nothing; a later run\n"
    "                             starts from the cached builds\n"
    "      --cold                 what a first request costs: each conversion\n"
    "                             built with the cache rebuilt (miss), then\n"
    "                             from it (hit), its load, first inference\n"
    "                             and iterations to steady state; the table\n"
    "                             shows these instead of the latencies\n"
    "      --price-per-core-hour P  cost per million inferences from the\n"
    "                             throughput: P x threads x sessions x\n"
    "                             seconds per inference / 3600 x 1e6\n"
    "      --rtol X, --atol X     accuracy tolerance (default 1e-3, 1e-4)\n"
    "      --max-error X          reduced precision (fp16, bf16, int8): flag\n"
    "                             a conversion inaccurate when 1 - cosine\n"
    "                             with the reference exceeds X (default\n"
    "                             1e-3); fp32 uses --rtol/--atol\n"
    "\n"
    "Inputs:\n"
    "      --batch-size N         size of a dynamic first dim (default 1)\n"
    "      --shape NAME=D0,D1,..  shape of input NAME (repeatable)\n"
    "      --input-range [NAME=]LO:HI  value range of generated inputs\n"
    "                             (integers: both ends included)\n"
    "      --n-samples N          distinct input batches (default 1)\n"
    "      --seed N               seed of generated inputs (default 0)\n"
    "      --calibration-samples N  INT8_STATIC conversions calibrate on N\n"
    "                             generated batches (default 100), or on\n"
    "                             the --inputs data when given\n"
    "      --calibration-method M  minmax (default) or percentile\n"
    "                             (99.999% of values, outliers cut)\n"
    "      --calibration-inputs DIR  calibrate on this data instead (same\n"
    "                             layouts as --inputs; the first N with\n"
    "                             --calibration-samples), so that\n"
    "                             evaluation data stays unseen\n"
    "      --int8-weights 7|8|auto  width of int8 weights (default auto:\n"
    "                             7 where the runtime's u8 x s8 products\n"
    "                             saturate, x86 without VNNI or AMX; else\n"
    "                             8; 'modelbench list' says "
    "which)\n" MB_CLI_KEEP_FLOAT_HELP
    "      --dim NAME=N           every symbolic dimension NAME (all inputs)\n"
    "                             is N: --dim seq=128 for ids and mask\n"
    "      --labels FILE.npy      integer class labels, one per input row:\n"
    "                             every conversion's top-1 task accuracy\n"
    "      --inputs DIR           real inputs: test_data_set_*/input_N.pb,\n"
    "                             or NAME.npy / input_N.npy files (in DIR or\n"
    "                             one sub-folder per sample), or .npz\n"
    "                             archives (numpy.savez; one per sample);\n"
    "                             one FILE.npy for a model with one input,\n"
    "                             one FILE.npz for any\n"
    "\n"
    "Sweeps and SLOs:\n"
    "      --sweep KEY=V1,V2,...  run every point for every conversion, one\n"
    "                             report per point (repeatable: the product);\n"
    "                             KEY batch, threads or dim:NAME (a symbolic\n"
    "                             dimension: --sweep dim:seq=16,64,256); the\n"
    "                             HTML charts latency and throughput against\n"
    "                             batch and latency against the dimension\n"
    "      --slo pNN=LATENCY      a latency SLO (p99=20ms): the "
    "recommendation\n"
    "                             names the conversion and settings serving\n"
    "                             the most samples/s within it, at accuracy\n"
    "                             (load scenarios: 'modelbench load --help')\n"
    "\n"
    "Output:\n"
    "      --json FILE            write every result as JSON (rewritten after\n"
    "                             each conversion, so nothing is lost)\n"
    "      --csv FILE             one row per conversion, for spreadsheets\n"
    "      --markdown FILE        tables for a CI comment\n"
    "      --html FILE            one self-contained page with latency and\n"
    "                             throughput charts\n"
    "      --predicted-ms X       a predicted median to compare the\n"
    "                             recommended option with\n"
    "      --label KEY=VALUE      stored with the run in the results\n"
    "                             database and shown in the reports\n"
    "                             (repeatable)\n"
    "      --cache-dir DIR        results database and cache folder\n"
    "                             (default $MODELBENCH_CACHE_DIR or\n"
    "                             ~/.cache/modelbench)\n"
    "      --no-record            do not store the run in the database\n"
    "      --rebuild WHEN         build cache: if-needed (default: reuse a\n"
    "                             valid build), always, or never (fail a\n"
    "                             conversion without a valid build)\n"
    "      --lean-cache           keep builds' state and logs, drop their\n"
    "                             artifacts\n"
    "      --no-cache             neither read nor write the build cache\n"
    "      --log-dir DIR          keep per-conversion logs in DIR (default:\n"
    "                             failed ones' under <cache>/logs, last 20\n"
    "                             runs)\n"
    "      --log-level LEVEL      error, warn, info or debug (env\n"
    "                             MODELBENCH_LOG); debug shows runtime logs\n"
    "      --traceback            show crashed conversions' backtraces and\n"
    "                             failed conversions' log tails\n"
    "      --config FILE          settings from a JSON file: keys are the "
    "long\n"
    "                             options with '_' for '-' (\"batch_size\": "
    "8,\n"
    "                             \"conversions\": [\"ORT_CPU\"], \"shapes\":\n"
    "                             {\"x\": [1, 3, 224, 224]}); flags override "
    "it\n"
    "  -h, --help                 show this help\n"
    "\n"
    "Exit status: 0 every conversion ran, 1 a conversion failed (or one\n"
    "requested by name is unavailable), 2 usage error.\n";

enum {
  OPT_BASELINE = 256,
  OPT_BATCH_SIZE,
  OPT_N_SAMPLES,
  OPT_DEVICE,
  OPT_ALLOW_DEVICE_OVERRIDE,
  OPT_NO_ISOLATE,
  OPT_FAIL_FAST,
  OPT_BUILD_ONLY,
  OPT_THREADS,
  OPT_WARMUP,
  OPT_WARMUP_TIME,
  OPT_MIN_ITERATIONS,
  OPT_MIN_TIME,
  OPT_MAX_TIME,
  OPT_CI_TARGET,
  OPT_FRESH_INPUTS,
  OPT_COLD_CACHE,
  OPT_TIMEOUT,
  OPT_SEED,
  OPT_SHAPE,
  OPT_INPUT_RANGE,
  OPT_INPUTS,
  OPT_CONFIG,
  OPT_JSON,
  OPT_LOG_DIR,
  OPT_LOG_LEVEL,
  OPT_TRACEBACK,
  OPT_RTOL,
  OPT_ATOL,
  OPT_TIER,
  OPT_NO_FALLBACK,
  OPT_NO_ROOFLINE,
  OPT_TRUST_CODE,
  OPT_CSV,
  OPT_MARKDOWN,
  OPT_HTML,
  OPT_PREDICTED_MS,
  OPT_LABEL,
  OPT_KEEP_FLOAT,
  OPT_CACHE_DIR,
  OPT_NO_RECORD,
  OPT_RECURSIVE,
  OPT_REBUILD,
  OPT_LEAN_CACHE,
  OPT_NO_CACHE,
  OPT_COLD,
  OPT_PRICE_PER_CORE_HOUR,
  OPT_CALIBRATION,
  OPT_CALIBRATION_LAST = OPT_CALIBRATION + MB_CLI_CALIB_COUNT - 1,
  OPT_MAX_ERROR,
  OPT_REFERENCE,
  OPT_LABELS,
  OPT_EXEC,
  OPT_EXEC_LAST = OPT_EXEC + MB_CLI_EXEC_COUNT - 1,
  OPT_SERVING,
  OPT_SERVING_LAST = OPT_SERVING + MB_CLI_SERVE_COUNT - 1,
};

#define MB_CLI_EXEC_BASE_ OPT_EXEC

static const struct option options[] = {
    {"conversions", required_argument, NULL, 'c'},
    {"baseline", required_argument, NULL, OPT_BASELINE},
    {"batch-size", required_argument, NULL, OPT_BATCH_SIZE},
    {"n-samples", required_argument, NULL, OPT_N_SAMPLES},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"allow-device-override", no_argument, NULL, OPT_ALLOW_DEVICE_OVERRIDE},
    {"no-isolate", no_argument, NULL, OPT_NO_ISOLATE},
    {"fail-fast", no_argument, NULL, OPT_FAIL_FAST},
    {"build-only", no_argument, NULL, OPT_BUILD_ONLY},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"warmup-time", required_argument, NULL, OPT_WARMUP_TIME},
    {"min-iterations", required_argument, NULL, OPT_MIN_ITERATIONS},
    {"min-time", required_argument, NULL, OPT_MIN_TIME},
    {"max-time", required_argument, NULL, OPT_MAX_TIME},
    {"ci-target", required_argument, NULL, OPT_CI_TARGET},
    {"fresh-inputs", no_argument, NULL, OPT_FRESH_INPUTS},
    {"cold-cache", no_argument, NULL, OPT_COLD_CACHE},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"seed", required_argument, NULL, OPT_SEED},
    {"shape", required_argument, NULL, OPT_SHAPE},
    {"input-range", required_argument, NULL, OPT_INPUT_RANGE},
    {"inputs", required_argument, NULL, OPT_INPUTS},
    {"config", required_argument, NULL, OPT_CONFIG},
    {"json", required_argument, NULL, OPT_JSON},
    {"log-dir", required_argument, NULL, OPT_LOG_DIR},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"traceback", no_argument, NULL, OPT_TRACEBACK},
    {"rtol", required_argument, NULL, OPT_RTOL},
    {"atol", required_argument, NULL, OPT_ATOL},
    {"tier", required_argument, NULL, OPT_TIER},
    {"no-fallback", no_argument, NULL, OPT_NO_FALLBACK},
    {"no-roofline", no_argument, NULL, OPT_NO_ROOFLINE},
    {"trust-code", no_argument, NULL, OPT_TRUST_CODE},
    {"csv", required_argument, NULL, OPT_CSV},
    {"markdown", required_argument, NULL, OPT_MARKDOWN},
    {"html", required_argument, NULL, OPT_HTML},
    {"predicted-ms", required_argument, NULL, OPT_PREDICTED_MS},
    {"label", required_argument, NULL, OPT_LABEL},
    {"keep-float", required_argument, NULL, OPT_KEEP_FLOAT},
    {"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
    {"no-record", no_argument, NULL, OPT_NO_RECORD},
    {"recursive", no_argument, NULL, OPT_RECURSIVE},
    {"rebuild", required_argument, NULL, OPT_REBUILD},
    {"lean-cache", no_argument, NULL, OPT_LEAN_CACHE},
    {"no-cache", no_argument, NULL, OPT_NO_CACHE},
    {"cold", no_argument, NULL, OPT_COLD},
    {"price-per-core-hour", required_argument, NULL, OPT_PRICE_PER_CORE_HOUR},
    MB_CLI_CALIBRATION_OPTIONS(OPT_CALIBRATION),
    {"max-error", required_argument, NULL, OPT_MAX_ERROR},
    {"reference", required_argument, NULL, OPT_REFERENCE},
    {"labels", required_argument, NULL, OPT_LABELS},
    MB_CLI_EXEC_OPTIONS MB_CLI_SERVING_OPTIONS(OPT_SERVING),
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* The command's name in messages: "bench" or "load". */
static const char *cmd = "bench";

/* Everything the command owns; freed by bench_free. */
typedef struct bench_cli {
  mb_bench_config config;
  void *config_storage;   /* of --config */
  const char *model_path; /* the model being benchmarked */
  char **models;          /* every selected model, in order (malloc) */
  int n_models;
  bool recursive;
  /* Reports of the models done so far (for the files covering them all). */
  mb_bench_report **reports;
  int n_reports;
  const char *config_path;
  const char *json_path;
  const char *csv_path, *markdown_path, *html_path;
  const char *cache_dir;
  bool no_record;
  double predicted_ms;
  int tier;            /* 0: not given */
  const char **labels; /* --label KEY=VALUE, pointing into argv */
  int n_labels;
  mb_cli_keep_float keep_float; /* --keep-float */
  const char *baseline_name;
  int file_baseline_index;    /* the config file's baseline, or -1 */
  const char *reference_name; /* --reference */
  bool traceback;
  bool explicit_conversions; /* -c or the config file named them */
  bool threads_given;        /* --threads */
  bool batch_given;          /* --batch-size */
  bool cli_input_settings;   /* --shape/--batch-size/--input-range given */
  int *conversions;
  /* --timeout NAME=S entries (names point into argv), then per position. */
  struct named_timeout {
    const char *name;
    double seconds;
  } * named_timeouts;
  int n_named_timeouts;
  double *conversion_timeouts;
  mb_cli_shapes shapes; /* --shape; names point into argv */
  mb_input_shape *merged_shapes;
  mb_input_range *ranges; /* --input-range; names point into argv */
  int n_ranges;
  mb_input_range *merged_ranges;
  /* Copies of the results so far, for the JSON file rewritten after each. */
  mb_bench_result *results;
  int n_results;
  bool json_warned;
  /* The live progress line. */
  bool progress_tty;
  bool color;
  mb_cli_exec exec; /* --executor and the options its tasks get */
  /* Sweeps, SLO and load scenarios; the help text of the command. */
  mb_cli_serving serving;
  const char *help;
} bench_cli;

/* ---- option values ---- */

static int parse_int(const char *opt, const char *arg, int64_t min, int64_t max,
                     int *out) {
  int64_t v;
  if (!mb__cli_parse_i64(arg, min, max, &v))
    return mb__cli_usage_error(cmd,
                               "%s '%s': expected an integer in %lld..%lld",
                               opt, arg, (long long)min, (long long)max);
  *out = (int)v;
  return MB_EXIT_OK;
}

/* Seconds and tolerances: finite, >= min (or > min when exclusive). */
static int parse_seconds(const char *opt, const char *arg, double min,
                         bool exclusive, double *out) {
  double v;
  if (!mb__cli_parse_double(arg, &v) || (exclusive ? v <= min : v < min))
    return mb__cli_usage_error(cmd, "%s '%s': expected a number %s %g", opt,
                               arg, exclusive ? ">" : ">=", min);
  *out = v;
  return MB_EXIT_OK;
}

static int parse_device(const char *arg, mb_device *out) {
  for (int d = 0; d < MB_DEVICE_COUNT; d++)
    if (strcmp(arg, mb_device_name((mb_device)d)) == 0) {
      *out = (mb_device)d;
      return MB_EXIT_OK;
    }
  return mb__cli_usage_error(cmd, "--device '%s': expected cpu, cuda or auto",
                             arg);
}

static int parse_log_level(const char *arg, int *out) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  for (size_t i = 0; i < MB_ARRAY_COUNT(names); i++)
    if (strcmp(arg, names[i]) == 0) {
      *out = (int)i;
      return MB_EXIT_OK;
    }
  return mb__cli_usage_error(
      cmd, "--log-level '%s': expected error, warn, info or debug", arg);
}

static int parse_conversions(bench_cli *b, const char *arg) {
  mb_error err;
  int max = mb_conversion_count(), count = 0;
  int *list = malloc(sizeof *list * (size_t)(max > 0 ? max : 1));
  if (!list) {
    mb__cli_error(NULL, "out of memory");
    return MB_EXIT_FAILURE;
  }
  if (mb_conversion_parse_list(arg, list, max, &count, &err) != MB_STATUS_OK) {
    free(list);
    return mb__cli_usage_error(cmd, "-c: %s", err.message);
  }
  free(b->conversions);
  b->conversions = list;
  b->config.conversions = list;
  b->config.n_conversions = count;
  b->explicit_conversions = true;
  return MB_EXIT_OK;
}

/* --timeout SECONDS, or --timeout NAME=SECONDS for one conversion (arg is
 * cut at its '=' and kept as the name). */
static int parse_timeout(bench_cli *b, char *arg) {
  char *eq = strchr(arg, '=');
  if (!eq)
    return parse_seconds("--timeout", arg, 0, true, &b->config.timeout_seconds);
  struct named_timeout t = {arg, 0};
  *eq = '\0';
  int rc = parse_seconds("--timeout", eq + 1, 0, true, &t.seconds);
  if (rc != MB_EXIT_OK)
    return rc;
  struct named_timeout *grown = realloc(
      b->named_timeouts, sizeof *grown * (size_t)(b->n_named_timeouts + 1));
  if (!grown) {
    mb__cli_error(NULL, "out of memory");
    return MB_EXIT_FAILURE;
  }
  b->named_timeouts = grown;
  b->named_timeouts[b->n_named_timeouts++] = t;
  return MB_EXIT_OK;
}

/* --rebuild if-needed|always|never into the config's 0, 1, 2. */
static int parse_rebuild(const char *arg, int *rebuild) {
  static const char *const policies[] = {"if-needed", "always", "never"};
  for (int i = 0; i < (int)MB_ARRAY_COUNT(policies); i++)
    if (strcmp(arg, policies[i]) == 0 ||
        (i == 0 && strcmp(arg, "if_needed") == 0)) {
      *rebuild = i;
      return MB_EXIT_OK;
    }
  return mb__cli_usage_error(cmd,
                             "--rebuild '%s': expected if-needed, "
                             "always or never",
                             arg);
}

/* --label: one more label for the run (arg is kept). */
static int add_label(bench_cli *b, const char *arg) {
  mb_error err;
  if (mb__check_label(arg, &err) != MB_STATUS_OK)
    return mb__cli_usage_error(cmd, "--label: %s", err.message);
  const char **grown =
      realloc(b->labels, sizeof *grown * (size_t)(b->n_labels + 1));
  if (!grown) {
    mb__cli_error(NULL, "out of memory");
    return MB_EXIT_FAILURE;
  }
  b->labels = grown;
  b->labels[b->n_labels++] = arg;
  return MB_EXIT_OK;
}

/* One option of the second pass (everything but --config / --help).
 * Long on purpose: one short case per command-line option, so that an
 * option is found by its OPT_ name; anything longer than a few lines is a
 * helper above. */
static int apply_option(bench_cli *b, int c, char *arg) {
  mb_bench_config *cfg = &b->config;
  int64_t v;
  switch (c) {
  case 'c':
    return parse_conversions(b, arg);
  case OPT_BASELINE:
    b->baseline_name = arg;
    return MB_EXIT_OK;
  case OPT_BATCH_SIZE:
    b->cli_input_settings = true;
    b->batch_given = true;
    if (mb__cli_set_batch(&b->shapes, cmd, arg) != MB_EXIT_OK)
      return MB_EXIT_USAGE;
    if (b->shapes.spec.batch_size > INT_MAX)
      return mb__cli_usage_error(cmd, "--batch-size '%s' is too large", arg);
    cfg->batch_size = (int)b->shapes.spec.batch_size;
    return MB_EXIT_OK;
  case OPT_N_SAMPLES:
    return parse_int("--n-samples", arg, 1, 1 << 20, &cfg->n_samples);
  case OPT_DEVICE:
    return parse_device(arg, &cfg->device);
  case OPT_ALLOW_DEVICE_OVERRIDE:
    cfg->allow_device_override = 1;
    return MB_EXIT_OK;
  case OPT_NO_ISOLATE:
    cfg->isolate = 0;
    return MB_EXIT_OK;
  case OPT_FAIL_FAST:
    cfg->fail_fast = 1;
    return MB_EXIT_OK;
  case OPT_BUILD_ONLY:
    cfg->build_only = 1;
    return MB_EXIT_OK;
  case OPT_THREADS:
    b->threads_given = true;
    return parse_int("--threads", arg, 1, 1024, &cfg->threads);
  case OPT_WARMUP:
    return parse_int("--warmup", arg, 0, INT_MAX, &cfg->warmup_iterations);
  case OPT_WARMUP_TIME:
    return parse_seconds("--warmup-time", arg, 0, false, &cfg->warmup_seconds);
  case OPT_MIN_ITERATIONS:
    return parse_int("--min-iterations", arg, 1, INT_MAX, &cfg->min_iterations);
  case OPT_MIN_TIME:
    return parse_seconds("--min-time", arg, 0, false, &cfg->min_seconds);
  case OPT_MAX_TIME:
    return parse_seconds("--max-time", arg, 0, true, &cfg->max_seconds);
  case OPT_CI_TARGET: {
    mb_error err = {0};
    if (mb__ci_target_parse(arg, &cfg->ci_target, &err))
      return mb__cli_usage_error(cmd, "--ci-target: %s", err.message);
    return MB_EXIT_OK;
  }
  case OPT_FRESH_INPUTS:
    cfg->fresh_inputs = 1;
    return MB_EXIT_OK;
  case OPT_COLD_CACHE:
    cfg->cold_cache = 1;
    return MB_EXIT_OK;
  case OPT_TIMEOUT:
    return parse_timeout(b, arg);
  case OPT_SEED:
    if (!mb__cli_parse_i64(arg, 0, INT64_MAX, &v))
      return mb__cli_usage_error(
          cmd, "--seed '%s': expected a non-negative integer", arg);
    cfg->seed = (uint64_t)v;
    return MB_EXIT_OK;
  case OPT_SHAPE:
    b->cli_input_settings = true;
    return mb__cli_add_shape(&b->shapes, cmd, arg);
  case OPT_INPUT_RANGE:
    b->cli_input_settings = true;
    return mb__cli_add_range(cmd, "--input-range", arg, &b->ranges,
                             &b->n_ranges);
  case OPT_INPUTS:
    cfg->inputs_dir = arg;
    return MB_EXIT_OK;
  case OPT_JSON:
    b->json_path = arg;
    return MB_EXIT_OK;
  case OPT_LOG_DIR:
    cfg->log_dir = arg;
    return MB_EXIT_OK;
  case OPT_LOG_LEVEL:
    return parse_log_level(arg, &cfg->log_level);
  case OPT_TRACEBACK:
    b->traceback = true;
    return MB_EXIT_OK;
  case OPT_RTOL:
    return parse_seconds("--rtol", arg, 0, false, &cfg->rtol);
  case OPT_ATOL:
    return parse_seconds("--atol", arg, 0, false, &cfg->atol);
  case OPT_TIER:
    return parse_int("--tier", arg, 1, 3, &b->tier);
  case OPT_NO_FALLBACK:
    cfg->no_fallback = 1;
    return MB_EXIT_OK;
  case OPT_NO_ROOFLINE:
    cfg->roofline = 0;
    return MB_EXIT_OK;
  case OPT_TRUST_CODE:
    cfg->trust_code = 1;
    return MB_EXIT_OK;
  case OPT_CSV:
    b->csv_path = arg;
    return MB_EXIT_OK;
  case OPT_MARKDOWN:
    b->markdown_path = arg;
    return MB_EXIT_OK;
  case OPT_HTML:
    b->html_path = arg;
    return MB_EXIT_OK;
  case OPT_PREDICTED_MS:
    return parse_seconds("--predicted-ms", arg, 0, true, &b->predicted_ms);
  case OPT_CACHE_DIR:
    b->cache_dir = arg;
    cfg->cache_dir = arg;
    return MB_EXIT_OK;
  case OPT_REBUILD:
    return parse_rebuild(arg, &cfg->rebuild);
  case OPT_LEAN_CACHE:
    cfg->lean_cache = 1;
    return MB_EXIT_OK;
  case OPT_NO_CACHE:
    cfg->build_cache = 0;
    return MB_EXIT_OK;
  case OPT_COLD:
    cfg->cold = 1;
    return MB_EXIT_OK;
  case OPT_PRICE_PER_CORE_HOUR:
    return parse_seconds("--price-per-core-hour", arg, 0, true,
                         &cfg->price_per_core_hour);
  case OPT_MAX_ERROR:
    return parse_seconds("--max-error", arg, 0, true, &cfg->max_error);
  case OPT_NO_RECORD:
    b->no_record = true;
    return MB_EXIT_OK;
  case OPT_REFERENCE:
    b->reference_name = arg;
    return MB_EXIT_OK;
  case OPT_LABELS:
    cfg->labels_path = arg;
    return MB_EXIT_OK;
  case OPT_RECURSIVE:
    b->recursive = true;
    return MB_EXIT_OK;
  case OPT_LABEL:
    return add_label(b, arg);
  case OPT_KEEP_FLOAT:
    return mb__cli_add_keep_float(&b->keep_float, cmd, arg);
  default:
    if (c >= OPT_EXEC && c <= OPT_EXEC_LAST)
      return mb__cli_exec_option(&b->exec, cmd, c - OPT_EXEC, arg);
    if (c >= OPT_CALIBRATION && c <= OPT_CALIBRATION_LAST)
      return mb__cli_calibration_option(cmd, c - OPT_CALIBRATION, arg, cfg);
    if (c >= OPT_SERVING && c <= OPT_SERVING_LAST)
      return mb__cli_serving_option(&b->serving, cmd, c - OPT_SERVING, arg,
                                    cfg);
    return MB_EXIT_USAGE;
  }
}

/* --shape and --input-range add to (and override by name) the config
 * file's shapes and ranges rather than replacing them. */
static int merge_inputs(bench_cli *b) {
  mb_bench_config *cfg = &b->config;
  if (b->shapes.n > 0) {
    int n = b->shapes.n;
    b->merged_shapes =
        calloc((size_t)(n + cfg->shapes.n_shapes), sizeof *b->merged_shapes);
    if (!b->merged_shapes)
      goto oom;
    memcpy(b->merged_shapes, b->shapes.shapes,
           sizeof(mb_input_shape) * (size_t)n);
    for (int i = 0; i < cfg->shapes.n_shapes; i++) {
      bool overridden = false;
      for (int k = 0; k < b->shapes.n; k++)
        overridden |=
            strcmp(b->shapes.shapes[k].name, cfg->shapes.shapes[i].name) == 0;
      if (!overridden)
        b->merged_shapes[n++] = cfg->shapes.shapes[i];
    }
    cfg->shapes.shapes = b->merged_shapes;
    cfg->shapes.n_shapes = n;
  }
  if (b->n_ranges > 0) {
    int n = b->n_ranges;
    b->merged_ranges =
        calloc((size_t)(n + cfg->n_ranges), sizeof *b->merged_ranges);
    if (!b->merged_ranges)
      goto oom;
    memcpy(b->merged_ranges, b->ranges, sizeof(mb_input_range) * (size_t)n);
    for (int i = 0; i < cfg->n_ranges; i++) {
      const char *name = cfg->ranges[i].name;
      bool overridden = false;
      for (int k = 0; k < b->n_ranges; k++) {
        const char *cli = b->ranges[k].name;
        overridden |= (!cli && !name) || (cli && name && !strcmp(cli, name));
      }
      if (!overridden)
        b->merged_ranges[n++] = cfg->ranges[i];
    }
    cfg->ranges = b->merged_ranges;
    cfg->n_ranges = n;
  }
  return MB_EXIT_OK;

oom:
  mb__cli_error(NULL, "out of memory");
  return MB_EXIT_FAILURE;
}

static int resolve_timeouts(bench_cli *b);

/* The run list of one model, always explicit (the default set or the
 * tier spelled out when none was named), so the baseline and the
 * per-conversion timeouts are positions in a list we know. The default
 * set and tiers keep the conversions that apply to the model's formats
 * (EAGER for a PyTorch model, not for an ONNX file); a list the user
 * named is run as named. */
static int plan_model(bench_cli *b, unsigned formats) {
  mb_bench_config *cfg = &b->config;
  if (!b->explicit_conversions) {
    int n = 0, max = mb_conversion_count();
    int *list = malloc(sizeof *list * (size_t)(max > 0 ? max : 1));
    if (!list) {
      mb__cli_error(NULL, "out of memory");
      return MB_EXIT_FAILURE;
    }
    for (int i = 0; i < max; i++) {
      if (!mb_conversion_applies(i, formats))
        continue;
      if (b->tier > 0) {
        /* A tier lists what is available here: it asks for options, not
         * for runtimes this machine lacks. */
        mb_conversion_info info;
        mb_device placed;
        char why[MB_ERROR_MESSAGE_SIZE];
        if (mb_conversion_get(i, &info, NULL) == MB_STATUS_OK &&
            info.tier <= b->tier && info.available &&
            mb__conversion_place(&info, cfg->device, 0, &placed, why,
                                 sizeof why))
          list[n++] = i;
      } else if (mb__conversion_def(i)->in_default_set) {
        list[n++] = i;
      }
    }
    free(b->conversions);
    b->conversions = list;
    cfg->conversions = list;
    cfg->n_conversions = n;
  }
  int baseline_index = b->file_baseline_index;
  if (b->baseline_name) {
    mb_error err;
    if (mb_conversion_find(b->baseline_name, &baseline_index, &err))
      return mb__cli_usage_error(cmd, "--baseline: %s", err.message);
  }
  cfg->baseline = -1;
  for (int i = 0; i < cfg->n_conversions && baseline_index >= 0; i++)
    if (cfg->conversions[i] == baseline_index)
      cfg->baseline = i;
  /* A file's baseline that the -c list dropped falls back to the first;
   * an explicit --baseline outside the list is a mistake. */
  if (b->baseline_name && cfg->baseline < 0)
    return mb__cli_usage_error(
        cmd, "--baseline %s: not among the conversions run (add it to -c)",
        mb__conversion_def(baseline_index)->name);
  return resolve_timeouts(b);
}

/* Turns --timeout NAME=S into a per-position array of the run list. */
static int resolve_timeouts(bench_cli *b) {
  mb_bench_config *cfg = &b->config;
  if (b->n_named_timeouts == 0)
    return MB_EXIT_OK;
  free(b->conversion_timeouts);
  b->conversion_timeouts = calloc((size_t)MB_MAX(cfg->n_conversions, 1),
                                  sizeof *b->conversion_timeouts);
  if (!b->conversion_timeouts) {
    mb__cli_error(NULL, "out of memory");
    return MB_EXIT_FAILURE;
  }
  for (int t = 0; t < b->n_named_timeouts; t++) {
    mb_error err;
    int index = -1, position = -1;
    if (mb_conversion_find(b->named_timeouts[t].name, &index, &err))
      return mb__cli_usage_error(cmd, "--timeout: %s", err.message);
    for (int i = 0; i < cfg->n_conversions; i++)
      if (cfg->conversions[i] == index)
        position = i;
    if (position < 0)
      return mb__cli_usage_error(
          cmd, "--timeout %s: not among the conversions run (add it to -c)",
          mb__conversion_def(index)->name);
    b->conversion_timeouts[position] = b->named_timeouts[t].seconds;
  }
  cfg->conversion_timeouts = b->conversion_timeouts;
  return MB_EXIT_OK;
}

/* The registry index of the config file's baseline, or -1. */
static int file_baseline(const mb_bench_config *cfg) {
  if (cfg->baseline < 0)
    return -1;
  if (cfg->n_conversions > 0)
    return cfg->baseline < cfg->n_conversions ? cfg->conversions[cfg->baseline]
                                              : -1;
  for (int i = 0, pos = 0; i < mb_conversion_count(); i++)
    if (mb__conversion_def(i)->in_default_set && pos++ == cfg->baseline)
      return i;
  return -1;
}

/* How the tasks of a run on other machines (--executor) get an option:
 * as given, except the submitter's own (report files, records, logs) and
 * local paths, made absolute (and copied to SSH hosts). */
static int keep_for_tasks(bench_cli *b, int c, const char *arg) {
  static const struct {
    int option;
    mb_cli_exec_arg_kind kind;
  } kinds[] = {
      {OPT_JSON, MB_CLI_EXEC_ARG_DROP},
      {OPT_CSV, MB_CLI_EXEC_ARG_DROP},
      {OPT_MARKDOWN, MB_CLI_EXEC_ARG_DROP},
      {OPT_HTML, MB_CLI_EXEC_ARG_DROP},
      {OPT_LABEL, MB_CLI_EXEC_ARG_DROP},
      {OPT_CACHE_DIR, MB_CLI_EXEC_ARG_DROP},
      {OPT_NO_RECORD, MB_CLI_EXEC_ARG_DROP},
      {OPT_LOG_DIR, MB_CLI_EXEC_ARG_DROP},
      {OPT_PREDICTED_MS, MB_CLI_EXEC_ARG_DROP},
      {OPT_RECURSIVE, MB_CLI_EXEC_ARG_DROP},
      {OPT_TRACEBACK, MB_CLI_EXEC_ARG_DROP},
      {OPT_CONFIG, MB_CLI_EXEC_ARG_PATH},
      {OPT_INPUTS, MB_CLI_EXEC_ARG_PATH},
      {OPT_LABELS, MB_CLI_EXEC_ARG_PATH},
      {OPT_CALIBRATION + MB_CLI_CALIB_INPUTS, MB_CLI_EXEC_ARG_PATH},
  };
  if (c >= OPT_EXEC && c <= OPT_EXEC_LAST)
    return MB_EXIT_OK;
  mb_cli_exec_arg_kind kind = MB_CLI_EXEC_ARG_KEEP;
  for (size_t i = 0; i < MB_ARRAY_COUNT(kinds); i++)
    if (kinds[i].option == c)
      kind = kinds[i].kind;
  for (const struct option *o = options; o->name; o++)
    if (o->val == c)
      return mb__cli_exec_keep(&b->exec, o->name,
                               o->has_arg == no_argument ? NULL : arg, kind);
  return MB_EXIT_OK;
}

static int parse_args(bench_cli *b, int argc, char **argv) {
  int c, rc;
  /* Pass 1: only --config and --help, so the file is read before the
   * flags that override it, wherever they stand on the line. */
  opterr = 0;
  optind = 0;
  while ((c = getopt_long(argc, argv, ":hc:", options, NULL)) != -1) {
    if (c == 'h') {
      fputs(b->help, stdout);
      if (!b->serving.load) {
        fputs("\n", stdout);
        fputs(mb__cli_exec_help, stdout);
      }
      return -1;
    }
    if (c == OPT_CONFIG)
      b->config_path = optarg;
  }
  if (b->config_path) {
    mb_error err;
    if (mb_bench_config_load_json(b->config_path, &b->config,
                                  &b->config_storage, &err) != MB_STATUS_OK) {
      mb__cli_fail(NULL, &err);
      return MB_EXIT_USAGE;
    }
    b->explicit_conversions = b->config.n_conversions > 0;
  }
  int file_baseline_index = file_baseline(&b->config);

  /* Pass 2: everything else, in order. */
  optind = 0;
  while ((c = getopt_long(argc, argv, ":hc:", options, NULL)) != -1) {
    if (c == OPT_CONFIG)
      continue;
    if (c == '?' || c == ':')
      return mb__cli_bad_option(cmd, c, argv);
    /* Options are recorded before apply_option, which may cut a
     * --timeout NAME=S at its '='. */
    if ((rc = keep_for_tasks(b, c, optarg)) != MB_EXIT_OK ||
        (rc = apply_option(b, c, optarg)) != MB_EXIT_OK)
      return rc;
  }
  if (b->config_path &&
      (rc = keep_for_tasks(b, OPT_CONFIG, b->config_path)) != MB_EXIT_OK)
    return rc;
  if ((rc = mb__cli_exec_check(&b->exec, cmd)) != MB_EXIT_OK)
    return rc;
  if (optind >= argc)
    return mb__cli_usage_error(cmd, "missing MODEL");
  if ((rc = mb__cli_expand_models(cmd, argv + optind, argc - optind,
                                  b->recursive, &b->models, &b->n_models)) !=
      MB_EXIT_OK)
    return rc;
  b->model_path = b->models[0];
  if (b->config.inputs_dir && b->cli_input_settings)
    return mb__cli_usage_error(cmd, "--shape, --batch-size and --input-range "
                                    "only apply to generated inputs, not "
                                    "--inputs");
  if (b->config.calibration_dir) {
    struct stat st;
    if (stat(b->config.calibration_dir, &st) != 0 || !S_ISDIR(st.st_mode))
      return mb__cli_usage_error(cmd, "--calibration-inputs '%s': not a folder",
                                 b->config.calibration_dir);
  }
  if ((rc = merge_inputs(b)) != MB_EXIT_OK)
    return rc;
  if ((rc = mb__cli_serving_check(&b->serving, cmd, &b->config)) != MB_EXIT_OK)
    return rc;
  if (b->tier > 0 && b->explicit_conversions && b->config.n_conversions > 0)
    return mb__cli_usage_error(cmd, "--tier and -c both choose the "
                                    "conversions: give one of them");
  b->file_baseline_index = file_baseline_index;
  if (b->reference_name) {
    mb_error err;
    if (mb_conversion_find(b->reference_name, &b->config.reference, &err))
      return mb__cli_usage_error(cmd, "--reference: %s", err.message);
  }
  /* Names given on the line are checked now, before any model runs; the
   * list itself is made per model. */
  return b->explicit_conversions ? plan_model(b, ~0u) : MB_EXIT_OK;
}

/* ---- progress line ---- */

static void clear_progress(bench_cli *b) {
  if (b->progress_tty) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
  }
}

static void on_progress(void *user, int conversion_i, int n_conversions,
                        const char *conversion, const char *phase,
                        int64_t iterations, double elapsed_s) {
  bench_cli *b = user;
  if (!b->progress_tty)
    return;
  if (strcmp(phase, "done") == 0) {
    clear_progress(b);
    return;
  }
  char name[MB_TERM_TEXT_SIZE];
  fprintf(stderr, "\r\033[K[%d/%d] %s%s%s  %-8s", conversion_i + 1,
          n_conversions, b->color ? "\033[1m" : "",
          mb__term_text(conversion, name, sizeof name),
          b->color ? "\033[0m" : "", phase);
  if (iterations > 0)
    fprintf(stderr, "  %lld it", (long long)iterations);
  if (elapsed_s > 0)
    fprintf(stderr, "  %.1f s", elapsed_s);
  fflush(stderr);
}

/* ---- results kept for the incremental JSON file ---- */

static void free_result_copy(mb_bench_result *r) {
  for (int i = 0; r->warnings && i < r->n_warnings; i++)
    free(r->warnings[i]);
  free(r->warnings);
  free(r->accuracy);
  free(r->samples_ms);
  free(r->backtrace);
  free(r->segments);
  memset(r, 0, sizeof *r);
}

/* Deep copy: the callback's result is only borrowed for the call. */
static bool copy_result(mb_bench_result *dst, const mb_bench_result *src) {
  *dst = *src;
  dst->warnings = NULL;
  dst->accuracy = NULL;
  dst->samples_ms = NULL;
  dst->backtrace = NULL;
  dst->segments = NULL;
  dst->n_warnings = 0;
  if (src->n_warnings > 0 && src->warnings) {
    if (!(dst->warnings = calloc((size_t)src->n_warnings, sizeof(char *))))
      goto oom;
    for (; dst->n_warnings < src->n_warnings; dst->n_warnings++)
      if (!(dst->warnings[dst->n_warnings] =
                mb__strdup(src->warnings[dst->n_warnings])))
        goto oom;
  }
  if (src->n_outputs > 0 && src->accuracy) {
    size_t bytes = sizeof *src->accuracy * (size_t)src->n_outputs;
    if (!(dst->accuracy = malloc(bytes)))
      goto oom;
    memcpy(dst->accuracy, src->accuracy, bytes);
  }
  if (src->n_samples_ms > 0 && src->samples_ms) {
    size_t bytes = sizeof *src->samples_ms * (size_t)src->n_samples_ms;
    if (!(dst->samples_ms = malloc(bytes)))
      goto oom;
    memcpy(dst->samples_ms, src->samples_ms, bytes);
  }
  if (src->backtrace && !(dst->backtrace = mb__strdup(src->backtrace)))
    goto oom;
  if (src->n_segments > 0 && src->segments) {
    size_t bytes = sizeof *src->segments * (size_t)src->n_segments;
    if (!(dst->segments = malloc(bytes)))
      goto oom;
    memcpy(dst->segments, src->segments, bytes);
  }
  return true;

oom:
  free_result_copy(dst);
  return false;
}

static void on_result(void *user, const mb_bench_result *result) {
  bench_cli *b = user;
  if (!b->json_path)
    return;
  mb_bench_result *grown =
      realloc(b->results, sizeof *grown * (size_t)(b->n_results + 1));
  if (!grown || !copy_result(&grown[b->n_results], result)) {
    if (grown)
      b->results = grown;
    return; /* the final report is still written after the run */
  }
  b->results = grown;
  b->n_results++;

  /* A partial report: what the CLI knows before the run ends. The final
   * write replaces it with the engine's complete report. */
  mb_bench_report partial;
  memset(&partial, 0, sizeof partial);
  snprintf(partial.tool_version, sizeof partial.tool_version, "%s",
           MB_VERSION_STRING);
  snprintf(partial.model_path, sizeof partial.model_path, "%s", b->model_path);
  partial.config = b->config;
  snprintf(partial.sweep_point, sizeof partial.sweep_point, "%s",
           b->config.sweep_point ? b->config.sweep_point : "");
  partial.n_results = b->n_results;
  partial.results = b->results;
  partial.baseline_result =
      b->config.baseline < b->n_results ? MB_MAX(b->config.baseline, 0) : -1;
  mb_error err;
  mb_status status = MB_STATUS_OUT_OF_MEMORY;
  const mb_bench_report **all =
      malloc(sizeof *all * (size_t)(b->n_reports + 1));
  if (all) {
    for (int i = 0; i < b->n_reports; i++)
      all[i] = b->reports[i];
    all[b->n_reports] = &partial;
    status =
        mb_bench_reports_write_json(all, b->n_reports + 1, b->json_path, &err);
    free(all);
  } else {
    mb__error(&err, status, "out of memory writing %s", b->json_path);
  }
  if (status != MB_STATUS_OK && !b->json_warned) {
    clear_progress(b);
    mb__cli_fail(NULL, &err);
    b->json_warned = true;
  }
}

/* ---- after the run ---- */

/* The settings report_output.c needs, from the command line. */
static mb_cli_report_output report_output(const bench_cli *b) {
  mb_cli_report_output o = {
      .json_path = b->json_path,
      .csv_path = b->csv_path,
      .markdown_path = b->markdown_path,
      .html_path = b->html_path,
      .cache_dir = b->cache_dir,
      .no_record = b->no_record,
      .labels = b->labels,
      .n_labels = b->n_labels,
      .predicted_ms = b->predicted_ms,
      .traceback = b->traceback,
      .log_level = b->config.log_level,
      .explicit_conversions = b->explicit_conversions,
  };
  return o;
}

/* A model `tune --output` wrote (its "modelbench.tune" metadata) runs
 * the configuration it records when -c does not name conversions: the
 * conversion that runs the file (ORT_CPU for an INT8_STATIC+ORT_CPU
 * winner, whose QDQ int8 is in the file), at the recorded threads unless
 * --threads is given, with the nodes kept in float when the conversion
 * quantises in the engine (the file is then the float model). Sets
 * b->config's list, threads and keep_float (run_model restores the last
 * two); tuned->found false: nothing recorded. */
static int tuned_plan(bench_cli *b, mb_tune_recorded *tuned) {
  mb_error err;
  int index;
  if (mb__tune_recorded_read(b->model_path, tuned, &err) != MB_STATUS_OK)
    return mb__cli_fail(b->model_path, &err);
  if (!tuned->found)
    return MB_EXIT_OK;
  if (mb_conversion_find(tuned->conversion, &index, &err) != MB_STATUS_OK) {
    mb__cli_error(b->model_path, "metadata %s: %s (give -c)",
                  MB_TUNE_METADATA_KEY, err.message);
    return MB_EXIT_FAILURE;
  }
  int *list = malloc(sizeof *list);
  if (!list) {
    mb__cli_error(NULL, "out of memory");
    return MB_EXIT_FAILURE;
  }
  list[0] = index;
  free(b->conversions);
  b->conversions = list;
  b->config.conversions = list;
  b->config.n_conversions = 1;
  if (!b->threads_given)
    b->config.threads = tuned->threads;
  char batch[32] = "";
  if (!b->batch_given && tuned->batch_size > 1) {
    b->config.batch_size = tuned->batch_size;
    snprintf(batch, sizeof batch, ", batch %d", tuned->batch_size);
  }
  bool keep = mb__conversion_quantizes(mb__conversion_def(index)) &&
              tuned->n_keep_float > 0 && b->keep_float.n == 0;
  if (keep) {
    b->config.keep_float = (const char *const *)tuned->keep_float;
    b->config.n_keep_float = tuned->n_keep_float;
  }
  fprintf(stderr,
          "bench: %s was tuned (metadata %s): running %s at %d thread%s%s%s "
          "(-c, --threads and --batch-size override it)\n",
          mb__cli_text(b->model_path), MB_TUNE_METADATA_KEY,
          mb__conversion_def(index)->name, b->config.threads,
          b->config.threads == 1 ? "" : "s", batch,
          keep ? ", keeping the recorded nodes in float" : "");
  return MB_EXIT_OK;
}

/* Benchmarks b->model_path; on success appends its report to b->reports.
 * Returns an exit code. */
static int run_model(bench_cli *b, bool color_allowed) {
  mb_bench_report *report = NULL;
  mb_error err;
  memset(&err, 0, sizeof err);
  for (int i = 0; i < b->n_results; i++)
    free_result_copy(&b->results[i]);
  b->n_results = 0;

  mb_tune_recorded tuned;
  memset(&tuned, 0, sizeof tuned);
  int threads = b->config.threads, n_keep_float = b->config.n_keep_float;
  const char *const *keep_float = b->config.keep_float;
  if (!b->explicit_conversions) {
    unsigned formats = 0;
    if (mb_model_file_formats(b->model_path, &formats, &err) != MB_STATUS_OK)
      return mb__cli_fail(b->model_path, &err);
    int rc = tuned_plan(b, &tuned);
    if (rc == MB_EXIT_OK && tuned.found) {
      b->explicit_conversions = true; /* the one-item list, as -c's */
      rc = plan_model(b, formats);
      b->explicit_conversions = false;
    } else if (rc == MB_EXIT_OK) {
      rc = plan_model(b, formats);
    }
    if (rc != MB_EXIT_OK) {
      mb__tune_recorded_free(&tuned);
      return rc;
    }
  }
  mb_status status =
      mb_benchmark_model(b->model_path, &b->config, &report, &err);
  /* The next model starts from the command line's settings again. */
  b->config.threads = threads;
  b->config.n_keep_float = n_keep_float;
  b->config.keep_float = keep_float;
  mb__tune_recorded_free(&tuned);
  clear_progress(b);
  if (status != MB_STATUS_OK) {
    mb__cli_fail(b->model_path, &err);
    /* Settings the engine rejects (a --shape naming no input, a dynamic
     * dim without --shape) are the command line's fault. */
    return status == MB_STATUS_INVALID_ARGUMENT || status == MB_STATUS_DYNAMIC
               ? MB_EXIT_USAGE
               : MB_EXIT_FAILURE;
  }
  mb_bench_report **grown =
      realloc(b->reports, sizeof *grown * (size_t)(b->n_reports + 1));
  if (!grown) {
    mb_bench_report_free(report);
    mb__cli_error(b->model_path, "out of memory");
    return MB_EXIT_FAILURE;
  }
  b->reports = grown;
  b->reports[b->n_reports++] = report;
  mb_cli_report_output output = report_output(b);
  return mb__cli_report_show(&output, report, color_allowed);
}

/* --executor: every model's run list, then the run goes to the
 * executor (bench_exec.c). */
static int run_elsewhere(bench_cli *b) {
  int rc = MB_EXIT_OK;
  mb_cli_exec_model *models = calloc((size_t)b->n_models, sizeof *models);
  if (!models) {
    mb__cli_error(NULL, "out of memory");
    return MB_EXIT_FAILURE;
  }
  for (int m = 0; m < b->n_models && rc == MB_EXIT_OK; m++) {
    mb_error err;
    unsigned formats = ~0u;
    b->model_path = b->models[m];
    if (!b->explicit_conversions &&
        mb_model_file_formats(b->model_path, &formats, &err) != MB_STATUS_OK) {
      rc = mb__cli_fail(b->model_path, &err);
      break;
    }
    if ((rc = plan_model(b, formats)) != MB_EXIT_OK)
      break;
    int n = b->config.n_conversions;
    int *list = malloc(sizeof *list * (size_t)(n > 0 ? n : 1));
    if (!list) {
      mb__cli_error(NULL, "out of memory");
      rc = MB_EXIT_FAILURE;
      break;
    }
    memcpy(list, b->config.conversions, sizeof *list * (size_t)n);
    models[m] = (mb_cli_exec_model){b->model_path, n, list, b->config.baseline};
  }
  if (rc == MB_EXIT_OK) {
    mb_cli_report_output output = report_output(b);
    rc = mb__cli_exec_bench(&b->exec, &output, models, b->n_models);
  }
  for (int m = 0; m < b->n_models; m++)
    free((void *)models[m].conversions);
  free(models);
  return rc;
}

/* After a model's points: what serves the most within the SLO, once per
 * workload (the symbolic dimensions' values; batch, threads and load
 * settings are what it chooses). */
static void print_slo_recommendations(bench_cli *b, int first) {
  int n = b->n_reports - first;
  const mb_bench_report *const *reports =
      (const mb_bench_report *const *)b->reports + first;
  const mb_bench_report **sel = malloc(sizeof *sel * (size_t)MB_MAX(n, 1));
  for (int i = 0; sel && i < n; i++) {
    int n_sel = mb__report_workload_group(reports, n, i, sel);
    if (n_sel == 0)
      continue;
    mb_slo_recommendation rec;
    mb_bench_recommend_slo(sel, n_sel, &rec);
    char safe[MB_TERM_TEXT_SIZE];
    printf("\n%s\n", mb__term_text(rec.summary, safe, sizeof safe));
  }
  free(sel);
  fflush(stdout);
}

/* After a model's sweep that ran on both the CPU and a GPU: from which
 * batch the GPU is ahead, once per workload (crossover.c). */
static void print_crossovers(bench_cli *b, int first) {
  int n = b->n_reports - first;
  const mb_bench_report *const *reports =
      (const mb_bench_report *const *)b->reports + first;
  const mb_bench_report **sel = malloc(sizeof *sel * (size_t)MB_MAX(n, 1));
  for (int i = 0; sel && i < n; i++) {
    int n_sel = mb__report_workload_group(reports, n, i, sel);
    mb_crossover c;
    if (n_sel == 0 || !mb__crossover_find(sel, n_sel, &c))
      continue;
    char safe[MB_TERM_TEXT_SIZE];
    if (c.kind != MB_CROSSOVER_NONE)
      printf("\n%s\n", mb__term_text(c.summary, safe, sizeof safe));
    mb__crossover_free(&c);
  }
  free(sel);
  fflush(stdout);
}

static int run(bench_cli *b) {
  const char *no_color = getenv("NO_COLOR");
  bool color_allowed = !(no_color && no_color[0]);
  b->progress_tty = isatty(STDERR_FILENO);
  b->color = b->progress_tty && color_allowed;
  b->config.on_progress = on_progress;
  b->config.on_result = on_result;
  b->config.user = b;
  b->config.labels = b->labels;
  b->config.n_labels = b->n_labels;
  if (b->keep_float.n > 0) { /* replaces the config file's list */
    b->config.keep_float = b->keep_float.names;
    b->config.n_keep_float = b->keep_float.n;
  }
  mb__log_set_level((mb_log_level)b->config.log_level);
  if (b->exec.executor) {
    /* The executors run plain bench tasks: sweeps, --dim and load
     * scenarios run here. */
    if (b->serving.n_axes > 0 || b->serving.n_dims > 0 ||
        b->config.load.scenario != MB_LOAD_NONE) {
      return mb__cli_usage_error(cmd, "--executor runs plain bench runs; "
                                      "--sweep, --dim and load scenarios run "
                                      "on this machine (leave out --executor)");
    }
    return run_elsewhere(b);
  }

  /* One model: exit codes as before. Several: each model's failure is
   * reported and the others still run; the worst exit code wins. */
  int rc = MB_EXIT_OK;
  int points = mb__cli_sweep_count(&b->serving);
  for (int m = 0; m < b->n_models; m++) {
    b->model_path = b->models[m];
    char safe[MB_TERM_TEXT_SIZE];
    if (b->n_models > 1)
      printf("%s[%d/%d] %s\n", m ? "\n" : "", m + 1, b->n_models,
             mb__term_text(b->model_path, safe, sizeof safe));
    fflush(stdout);
    int first_report = b->n_reports;
    for (int p = 0; p < points; p++) {
      if (mb__cli_sweep_apply(&b->serving, p, &b->config) != MB_EXIT_OK)
        return MB_EXIT_FAILURE;
      if (b->serving.n_axes > 0) {
        printf("%s[point %d/%d] %s\n", p ? "\n" : "", p + 1, points,
               mb__term_text(b->serving.label, safe, sizeof safe));
        fflush(stdout);
      }
      int model_rc = run_model(b, color_allowed);
      if (model_rc == MB_EXIT_USAGE && b->n_models == 1)
        return model_rc;
      if (model_rc != MB_EXIT_OK)
        rc = MB_MAX(rc, MB_EXIT_FAILURE);
      mb_cli_report_output output = report_output(b);
      if (mb__cli_reports_write(&output, b->reports, b->n_reports) !=
          MB_EXIT_OK)
        rc = MB_MAX(rc, MB_EXIT_FAILURE);
    }
    if (b->config.load.slo_percentile > 0)
      print_slo_recommendations(b, first_report);
    if (b->serving.n_axes > 0)
      print_crossovers(b, first_report);
  }
  if (b->n_models > 1)
    printf("\n%d model%s benchmarked, %d failed to load or run\n", b->n_reports,
           b->n_reports == 1 ? "" : "s", b->n_models - b->n_reports);
  return rc;
}

static void bench_free(bench_cli *b) {
  for (int i = 0; i < b->n_reports; i++)
    mb_bench_report_free(b->reports[i]);
  free(b->reports);
  mb__cli_free_names(b->models, b->n_models);
  for (int i = 0; i < b->n_results; i++)
    free_result_copy(&b->results[i]);
  free(b->results);
  free(b->conversions);
  free(b->labels);
  mb__cli_keep_float_free(&b->keep_float);
  free(b->named_timeouts);
  free(b->conversion_timeouts);
  free(b->merged_shapes);
  free(b->merged_ranges);
  free(b->ranges);
  mb__cli_shapes_free(&b->shapes);
  mb__cli_exec_free(&b->exec);
  mb__cli_serving_free(&b->serving);
  free(b->config_storage);
}

int mb__cli_bench_main(int argc, char **argv, const char *name,
                       const char *help, bool load) {
  bench_cli b;
  memset(&b, 0, sizeof b);
  cmd = name;
  b.help = help;
  b.serving.load = load;
  mb_bench_config_init(&b.config);
  b.config.build_cache = 1; /* the CLI keeps builds; the library opts in */
  if (load)
    b.config.load.scenario = MB_LOAD_SINGLE_STREAM;
  int rc = parse_args(&b, argc, argv);
  if (rc == MB_EXIT_OK)
    rc = run(&b);
  else if (rc < 0)
    rc = MB_EXIT_OK; /* --help */
  bench_free(&b);
  return rc;
}

int mb__cli_bench(int argc, char **argv) {
  return mb__cli_bench_main(argc, argv, "bench", bench_help, false);
}
