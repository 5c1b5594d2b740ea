/* modelbench profile: where one conversion spends its time, per segment
 * and per node, from a profiling pass of its own. */
#include "cli/cli_common.h"
#include "core/json_write.h"

#include <stdlib.h>

static const char profile_help[] =
    "Usage: modelbench profile MODEL -c CONVERSION [OPTIONS]\n"
    "\n"
    "Runs a profiling pass of CONVERSION (never inside a timed benchmark):\n"
    "prepares it with profiling on, warms up, runs N inferences on the same\n"
    "generated inputs as 'bench' and shows per segment (hybrid conversions:\n"
    "engine segments and the nodes left to the reference interpreter) the\n"
    "runtime, node count, runs, mean ms and share of the total, then the\n"
    "slowest nodes: reference nodes, oneDNN primitives (with inserted\n"
    "reorders, quantize and dequantize steps), ORT's own profiler events\n"
    "for ORT conversions.\n"
    "\n"
    "Options:\n"
    "  -c, --conversion NAME      the conversion to profile "
    "(required)\n" MB_CLI_PROFILE_HELP
    "      --no-fallback          fail when a node must run on the reference\n"
    "                             interpreter\n"
    "      --top N                nodes to show (default 20; 0: all)\n"
    "      --json                 print JSON instead of text\n"
    "  -h, --help                 show this help\n"
    "\n"
    "Timings are wall-clock per inference with profiling on; a node timer\n"
    "adds a little to each node, so shares matter more than the sum.\n"
    "Exit status: 0 success, 1 model or runtime error, 2 usage error.\n";

enum {
  OPT_NO_FALLBACK = 256,
  OPT_TOP,
  OPT_JSON,
  OPT_CALIBRATION,
  OPT_CALIBRATION_LAST = OPT_CALIBRATION + MB_CLI_CALIB_COUNT - 1,
  OPT_PROFILE,
  OPT_PROFILE_LAST = OPT_PROFILE + MB_CLI_PROF_COUNT - 1,
};

static void print_text(const char *path, const mb_profile *p, int top) {
  printf("model        %s\n", path);
  printf("conversion   %s\n", p->conversion);
  printf("iterations   %d\n", p->iterations);
  printf("mean         %.3f ms per inference (profiling on)\n",
         p->total_mean_ms);
  printf("\nSegments (execution order)\n");
  printf("  %3s  %-12s %6s %8s %10s %7s  %s\n", "#", "runtime", "nodes", "runs",
         "mean ms", "share", "first node");
  for (int i = 0; i < p->n_segments; i++) {
    const mb_profile_segment *s = &p->segments[i];
    printf("  %3d  %-12s %6d %8lld %10.4f %6.1f%%  %s\n", i + 1, s->runtime,
           s->nodes, (long long)s->runs, s->mean_ms, 100.0 * s->share,
           s->first_node);
  }
  if (p->n_segments == 0)
    printf("  (none)\n");
  int shown = top > 0 ? MB_MIN(top, p->n_nodes) : p->n_nodes;
  printf("\nNodes (slowest %d of %d)\n", shown, p->n_nodes);
  bool kernels = false;
  for (int i = 0; i < shown; i++)
    kernels |= p->nodes[i].kernel[0] != '\0';
  printf("  %-12s %-22s %-32s %10s %7s%s\n", "runtime", "op type", "name",
         "mean ms", "share", kernels ? "  kernel" : "");
  for (int i = 0; i < shown; i++) {
    const mb_profile_node *n = &p->nodes[i];
    printf("  %-12s %-22s %-32s %10.4f %6.1f%%%s%s\n", n->runtime, n->op_type,
           n->name[0] ? n->name : "(inserted)", n->mean_ms, 100.0 * n->share,
           n->kernel[0] ? "  " : "", n->kernel);
  }
  if (p->n_nodes == 0)
    printf("  (none)\n");
  if (p->note[0])
    printf("\nnote: %s\n", p->note);
}

static void print_json(const char *path, const mb_profile *p) {
  mb_json j;
  mb__json_init(&j, stdout, true);
  mb__json_object_begin(&j);
  mb__json_kv_string(&j, "model", path);
  mb__json_kv_string(&j, "conversion", p->conversion);
  mb__json_kv_int(&j, "iterations", p->iterations);
  mb__json_kv_double(&j, "mean_ms", p->total_mean_ms);
  mb__json_key(&j, "segments");
  mb__json_array_begin(&j);
  for (int i = 0; i < p->n_segments; i++) {
    const mb_profile_segment *s = &p->segments[i];
    mb__json_object_begin(&j);
    mb__json_kv_string(&j, "runtime", s->runtime);
    mb__json_kv_int(&j, "nodes", s->nodes);
    mb__json_kv_string(&j, "first_node", s->first_node);
    mb__json_kv_int(&j, "runs", s->runs);
    mb__json_kv_double(&j, "mean_ms", s->mean_ms);
    mb__json_kv_double(&j, "share", s->share);
    mb__json_object_end(&j);
  }
  mb__json_array_end(&j);
  mb__json_key(&j, "nodes");
  mb__json_array_begin(&j);
  for (int i = 0; i < p->n_nodes; i++) {
    const mb_profile_node *n = &p->nodes[i];
    mb__json_object_begin(&j);
    mb__json_kv_string(&j, "runtime", n->runtime);
    mb__json_kv_string(&j, "op_type", n->op_type);
    mb__json_kv_string(&j, "name", n->name);
    mb__json_kv_string(&j, "kernel", n->kernel);
    mb__json_kv_int(&j, "runs", n->runs);
    mb__json_kv_double(&j, "mean_ms", n->mean_ms);
    mb__json_kv_double(&j, "share", n->share);
    mb__json_object_end(&j);
  }
  mb__json_array_end(&j);
  mb__json_key(&j, "note");
  mb__json_string(&j, p->note[0] ? p->note : NULL);
  mb__json_object_end(&j);
}

int mb__cli_profile(int argc, char **argv) {
  static const struct option options[] = {
      {"conversion", required_argument, NULL, 'c'},
      {"conversions", required_argument, NULL, 'c'},
      MB_CLI_PROFILE_OPTIONS(OPT_PROFILE),
      {"no-fallback", no_argument, NULL, OPT_NO_FALLBACK},
      {"top", required_argument, NULL, OPT_TOP},
      {"json", no_argument, NULL, OPT_JSON},
      MB_CLI_CALIBRATION_OPTIONS(OPT_CALIBRATION),
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *cmd = "profile";
  const char *conversion = NULL, *path;
  mb_cli_shapes shapes;
  mb_cli_keep_float keep_float = {0};
  mb_bench_config config;
  mb_profile *profile = NULL;
  mb_error err;
  mb_status status;
  bool json = false;
  int top = 20, rc = MB_EXIT_OK, c;
  mb_cli_profile_args args = {&config, &shapes, &keep_float};
  memset(&shapes, 0, sizeof shapes);
  memset(&err, 0, sizeof err);
  mb_bench_config_init(&config);
  config.min_iterations = 50;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":c:h", options, NULL)) != -1) {
    switch (c) {
    case 'c':
      conversion = optarg;
      break;
    case OPT_NO_FALLBACK:
      config.no_fallback = 1;
      break;
    case OPT_TOP: {
      int64_t v;
      if (mb__cli_parse_i64(optarg, 0, 1000000, &v))
        top = (int)v;
      else
        rc = mb__cli_usage_error(
            cmd, "--top: '%s' is not an integer in [0, 1000000]", optarg);
      break;
    }
    case OPT_JSON:
      json = true;
      break;
    case 'h':
      fputs(profile_help, stdout);
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
  mb__cli_profile_finish(&args);
  if (optind >= argc) {
    rc = mb__cli_usage_error(cmd, "missing MODEL");
    goto done;
  }
  if (argc - optind > 1) {
    rc = mb__cli_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
    goto done;
  }
  if (!conversion) {
    rc = mb__cli_usage_error(cmd, "missing -c CONVERSION");
    goto done;
  }
  if (strchr(conversion, ',')) {
    rc = mb__cli_usage_error(cmd, "-c takes one conversion, not a list");
    goto done;
  }
  int index;
  if (mb_conversion_find(conversion, &index, &err) != MB_STATUS_OK) {
    rc = mb__cli_usage_error(cmd, "-c: %s", err.message);
    goto done;
  }
  path = argv[optind];
  status = mb_profile_model(path, conversion, &config, &profile, &err);
  if (status != MB_STATUS_OK) {
    rc = mb__cli_fail(path, &err);
    goto done;
  }
  if (json)
    print_json(path, profile);
  else
    print_text(path, profile, top);
  if (fflush(stdout) != 0) {
    mb__cli_error(NULL, "cannot write output");
    rc = MB_EXIT_FAILURE;
  }
done:
  mb_profile_free(profile);
  mb__cli_shapes_free(&shapes);
  mb__cli_keep_float_free(&keep_float);
  return rc;
}
