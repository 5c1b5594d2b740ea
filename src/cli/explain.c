/* modelbench explain: where one conversion's time goes compared with
 * another's. Profiles both (as `profile` does, each in a child of its own,
 * on the same inputs) or reads two saved `profile --json` files, then
 * prints report/explain.c's comparison. */
#include "report/explain.h"
#include "cli/cli_common.h"
#include "core/json_write.h"

#include <stdlib.h>

static const char explain_help[] =
    "Usage: modelbench explain MODEL A B [OPTIONS]\n"
    "       modelbench explain --profiles A.json B.json [--json]\n"
    "\n"
    "Profiles conversions A and B of MODEL (as 'profile' does: a pass of\n"
    "its own per conversion, in a child process, on the same generated\n"
    "inputs) and says where B's time goes compared with A's: a verdict\n"
    "line (\"B is 3.1x faster than A\", the op type that contributes most,\n"
    "the largest fallback), then the time per op type on each side, the\n"
    "difference and its share of the total difference, largest first.\n"
    "Runtime-specific names map to ONNX op types (ORT's FusedConv and\n"
    "QLinearConv are Conv; oneDNN primitives carry their nodes' ops);\n"
    "reorders, quantize and dequantize steps have rows of their own, engine\n"
    "segments without per-node times a row per runtime, and the time no\n"
    "entry covers the 'runtime overhead' row, so each side's rows sum to\n"
    "its total. Then the nodes a hybrid conversion left to the reference\n"
    "interpreter, the inserted work and the segment boundaries, and the\n"
    "nodes whose times differ most, matched by name.\n"
    "\n"
    "Options:\n"
    "      --profiles             compare two saved 'profile --json' files\n"
    "                             (the arguments) without running "
    "anything\n" MB_CLI_PROFILE_HELP
    "      --dim NAME=N           size of symbolic dimension NAME in every\n"
    "                             input (repeatable)\n"
    "      --top N                nodes to show, those whose times differ\n"
    "                             most (default 10; 0: all)\n"
    "      --json                 print JSON instead of text\n"
    "                             (docs/json-schema.md, \"explain\")\n"
    "  -h, --help                 show this help\n"
    "\n"
    "Timings are per inference with profiling on (a node timer adds a\n"
    "little to each node): compare shares, not sums with 'bench' figures.\n"
    "Exit status: 0 success, 1 model or runtime error, 2 usage error.\n";

enum {
  OPT_JSON = 256,
  OPT_PROFILES,
  OPT_DIM,
  OPT_TOP,
  OPT_CALIBRATION,
  OPT_CALIBRATION_LAST = OPT_CALIBRATION + MB_CLI_CALIB_COUNT - 1,
  OPT_PROFILE,
  OPT_PROFILE_LAST = OPT_PROFILE + MB_CLI_PROF_COUNT - 1,
};

static int parse_int(const char *cmd, const char *flag, const char *arg,
                     int64_t min, int64_t max, int *out) {
  int64_t v;
  if (!mb__cli_parse_i64(arg, min, max, &v))
    return mb__cli_usage_error(cmd,
                               "%s: '%s' is not an integer in [%lld, "
                               "%lld]",
                               flag, arg, (long long)min, (long long)max);
  *out = (int)v;
  return MB_EXIT_OK;
}

enum { MAX_DIMS = 16 };

/* "--dim NAME=N" into dims (names point into argv; the last one of a name
 * wins). */
static int add_dim(const char *cmd, char *arg, mb_dim_value *dims,
                   int *n_dims) {
  char *eq = strchr(arg, '=');
  int64_t v;
  if (!eq || eq == arg || !mb__cli_parse_i64(eq + 1, 0, INT64_MAX, &v))
    return mb__cli_usage_error(
        cmd, "--dim '%s': expected NAME=N (a symbolic dimension's size)", arg);
  *eq = '\0';
  for (int i = 0; i < *n_dims; i++)
    if (strcmp(dims[i].name, arg) == 0) {
      dims[i].value = v;
      return MB_EXIT_OK;
    }
  if (*n_dims == MAX_DIMS)
    return mb__cli_usage_error(cmd, "--dim '%s': more than %d dimensions", arg,
                               MAX_DIMS);
  dims[(*n_dims)++] = (mb_dim_value){arg, v};
  return MB_EXIT_OK;
}

/* An unknown name: the registry's message (with its suggestion) and the
 * names that are available here, so the fix is on the screen. */
static int unknown_conversion(const char *cmd, const char *which,
                              const mb_error *err) {
  char names[2048];
  size_t len = 0;
  names[0] = '\0';
  for (int i = 0; i < mb_conversion_count() && len < sizeof names; i++) {
    mb_conversion_info info;
    mb_error ignored;
    if (mb_conversion_get(i, &info, &ignored) == MB_STATUS_OK && info.available)
      len += (size_t)snprintf(names + len, sizeof names - len, "%s%s",
                              len ? ", " : "", info.name);
  }
  return mb__cli_usage_error(cmd, "%s: %s; available here: %s", which,
                             err->message, names);
}

/* Checks a conversion name before any profiling starts: unknown is a usage
 * error, unavailable here a failure saying why. */
static int check_conversion(const char *cmd, const char *which,
                            const char *name) {
  int index;
  mb_error err;
  mb_conversion_info info;
  memset(&err, 0, sizeof err);
  if (strchr(name, ','))
    return mb__cli_usage_error(cmd, "%s: '%s': one conversion, not a list",
                               which, name);
  if (mb_conversion_find(name, &index, &err) != MB_STATUS_OK)
    return unknown_conversion(cmd, which, &err);
  if (mb_conversion_get(index, &info, &err) != MB_STATUS_OK)
    return mb__cli_fail(name, &err);
  if (!info.available) {
    mb__cli_error(NULL, "%s is not available here: %s", info.name, info.reason);
    return MB_EXIT_FAILURE;
  }
  return MB_EXIT_OK;
}

int mb__cli_explain(int argc, char **argv) {
  static const struct option options[] = {
      {"profiles", no_argument, NULL, OPT_PROFILES},
      {"top", required_argument, NULL, OPT_TOP},
      {"dim", required_argument, NULL, OPT_DIM},
      MB_CLI_PROFILE_OPTIONS(OPT_PROFILE),
      {"json", no_argument, NULL, OPT_JSON},
      MB_CLI_CALIBRATION_OPTIONS(OPT_CALIBRATION),
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *cmd = "explain";
  const char *model = NULL;
  char saved_model[2][1024];
  mb_cli_shapes shapes;
  mb_dim_value dims[MAX_DIMS];
  int n_dims = 0;
  mb_bench_config config;
  mb_profile *profiles[2] = {NULL, NULL};
  mb_explain explain;
  mb_error err;
  bool json = false, saved = false;
  int rc = MB_EXIT_OK, c, top = 10;
  mb_cli_keep_float keep_float = {0};
  mb_cli_profile_args args = {&config, &shapes, &keep_float};
  memset(&shapes, 0, sizeof shapes);
  memset(&err, 0, sizeof err);
  memset(&explain, 0, sizeof explain);
  mb_bench_config_init(&config);
  config.min_iterations = 50;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    switch (c) {
    case OPT_PROFILES:
      saved = true;
      break;
    case OPT_DIM:
      rc = add_dim(cmd, optarg, dims, &n_dims);
      break;
    case OPT_TOP:
      rc = parse_int(cmd, "--top", optarg, 0, 1000000, &top);
      break;
    case OPT_JSON:
      json = true;
      break;
    case 'h':
      fputs(explain_help, stdout);
      goto done;
    default:
      if (c >= OPT_CALIBRATION && c <= OPT_CALIBRATION_LAST)
        rc = mb__cli_calibration_option(cmd, c - OPT_CALIBRATION, optarg,
                                        &config);
      else if (c >= OPT_PROFILE && c <= OPT_PROFILE_LAST)
        rc = mb__cli_profile_option(cmd, c - OPT_PROFILE, optarg, &args);
      else
        rc = mb__cli_bad_option(cmd, c, argv);
      break;
    }
    if (rc != MB_EXIT_OK)
      goto done;
  }
  int wanted = saved ? 2 : 3;
  if (argc - optind < wanted) {
    rc = mb__cli_usage_error(cmd, "%s",
                             saved ? "--profiles needs A.json and B.json"
                             : argc - optind == 0
                                 ? "missing MODEL, A and B"
                                 : "missing the conversions A and B");
    goto done;
  }
  if (argc - optind > wanted) {
    rc = mb__cli_usage_error(cmd, "unexpected argument '%s'",
                             argv[optind + wanted]);
    goto done;
  }
  if (saved) {
    for (int s = 0; s < 2; s++) {
      const char *path = argv[optind + s];
      if (mb__profile_load_json(path, &profiles[s], saved_model[s],
                                sizeof saved_model[s], &err)) {
        rc = mb__cli_fail(path, &err);
        goto done;
      }
    }
    /* Two files of one model name it once; of two models, both. */
    if (strcmp(saved_model[0], saved_model[1]) == 0) {
      model = saved_model[0][0] ? saved_model[0] : NULL;
    } else {
      size_t n = strlen(saved_model[0]);
      snprintf(saved_model[0] + n, sizeof saved_model[0] - n, " vs %s",
               saved_model[1]);
      model = saved_model[0];
    }
  } else {
    model = argv[optind];
    for (int s = 0; s < 2; s++)
      if ((rc = check_conversion(cmd, s ? "B" : "A", argv[optind + 1 + s])))
        goto done;
    mb__cli_profile_finish(&args);
    config.shapes.n_dims = n_dims;
    config.shapes.dims = n_dims ? dims : NULL;
    for (int s = 0; s < 2; s++) {
      const char *conversion = argv[optind + 1 + s];
      if (mb_profile_model(model, conversion, &config, &profiles[s], &err)) {
        mb__cli_error(model, "profiling %s (%s): %s", s ? "B" : "A", conversion,
                      err.message);
        rc = MB_EXIT_FAILURE;
        goto done;
      }
    }
  }
  if (mb__explain_profiles(profiles[0], profiles[1], &explain, &err)) {
    rc = mb__cli_fail(model, &err);
    goto done;
  }
  if (json) {
    mb_json j;
    mb__json_init(&j, stdout, true);
    mb__explain_write_json(&explain, model, &j);
  } else {
    mb__explain_print(&explain, model, top, stdout);
  }
  if (fflush(stdout) != 0) {
    mb__cli_error(NULL, "cannot write output");
    rc = MB_EXIT_FAILURE;
  }
done:
  mb__explain_clear(&explain);
  mb_profile_free(profiles[0]);
  mb_profile_free(profiles[1]);
  mb__cli_shapes_free(&shapes);
  mb__cli_keep_float_free(&keep_float);
  return rc;
}
