/* modelbench convert: write the model a conversion produces (the artifact
 * to deploy), e.g. FP16+ORT_CPU or INT8_STATIC+ORT_CPU. */
#include "cli/cli_common.h"

#include <stdlib.h>

static const char convert_help[] =
    "Usage: modelbench convert MODEL -c CONVERSION -o OUT.onnx [OPTIONS]\n"
    "\n"
    "Writes MODEL as CONVERSION converts it: our graph passes (OPTIMIZE+),\n"
    "float16 weights and activations with float32 inputs and outputs\n"
    "(FP16+), int8 with run-time activation quantisation (INT8_DYNAMIC+) or\n"
    "QDQ int8 calibrated on sample inputs (INT8_STATIC+). The result is a\n"
    "standard ONNX model that ONNX Runtime loads; the runtime part of the\n"
    "name does not matter here. The same conversion code and inputs as\n"
    "'bench'.\n"
    "\n"
    "Options:\n"
    "  -c, --conversion NAME       the conversion (see 'modelbench list')\n"
    "  -o, --output FILE           where to write the converted model\n"
    "      --batch-size N          size of a dynamic first dim (default 1)\n"
    "      --shape NAME=D0,D1,..   shape of input NAME (repeatable)\n"
    "      --calibration-samples N generated calibration batches for\n"
    "                              INT8_STATIC (default 100)\n"
    "      --inputs DIR            calibrate on real inputs instead (as in\n"
    "                              'bench')\n"
    "      --calibration-method M  minmax (default) or percentile\n"
    "      --calibration-inputs DIR  the same, the first N with\n"
    "                              --calibration-samples\n"
    "      --int8-weights 7|8|auto width of int8 weights (as in "
    "'bench')\n" MB_CLI_KEEP_FLOAT_HELP
    "      --seed N                seed of generated inputs (default 0)\n"
    "      --no-cache              calibrate afresh: neither read nor keep\n"
    "                              the calibration in the cache folder\n"
    "                              (<cache>/calibration; the same model,\n"
    "                              steps, batches and method calibrate\n"
    "                              once)\n"
    "  -h, --help                  show this help\n"
    "\n"
    "Exit status: 0 written, 1 model or conversion error, 2 usage error.\n";

enum {
  OPT_BATCH = 256,
  OPT_SHAPE,
  OPT_CALIBRATION,
  OPT_CALIBRATION_LAST = OPT_CALIBRATION + MB_CLI_CALIB_COUNT - 1,
  OPT_INPUTS,
  OPT_SEED,
  OPT_KEEP_FLOAT,
  OPT_NO_CACHE,
};

int mb__cli_convert(int argc, char **argv) {
  static const struct option options[] = {
      {"conversion", required_argument, NULL, 'c'},
      {"output", required_argument, NULL, 'o'},
      {"batch-size", required_argument, NULL, OPT_BATCH},
      {"shape", required_argument, NULL, OPT_SHAPE},
      MB_CLI_CALIBRATION_OPTIONS(OPT_CALIBRATION),
      {"inputs", required_argument, NULL, OPT_INPUTS},
      {"seed", required_argument, NULL, OPT_SEED},
      {"keep-float", required_argument, NULL, OPT_KEEP_FLOAT},
      {"no-cache", no_argument, NULL, OPT_NO_CACHE},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *cmd = "convert";
  const char *conversion = NULL, *out = NULL;
  mb_cli_shapes shapes;
  mb_cli_keep_float keep_float = {0};
  mb_bench_config config;
  mb_error err;
  char summary[512];
  int rc = MB_EXIT_OK, c, index;
  int64_t v;
  memset(&shapes, 0, sizeof shapes);
  memset(&err, 0, sizeof err);
  mb_bench_config_init(&config);
  config.build_cache = 1; /* as bench: a calibration is kept and reused */
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":c:o:h", options, NULL)) != -1) {
    switch (c) {
    case 'c':
      conversion = optarg;
      break;
    case 'o':
      out = optarg;
      break;
    case OPT_BATCH:
      rc = mb__cli_set_batch(&shapes, cmd, optarg);
      break;
    case OPT_SHAPE:
      rc = mb__cli_add_shape(&shapes, cmd, optarg);
      break;
    case OPT_INPUTS:
      config.inputs_dir = optarg;
      break;
    case OPT_SEED:
      if (!mb__cli_parse_i64(optarg, 0, INT64_MAX, &v))
        rc = mb__cli_usage_error(cmd,
                                 "--seed '%s': expected a non-negative "
                                 "integer",
                                 optarg);
      config.seed = (uint64_t)v;
      break;
    case OPT_KEEP_FLOAT:
      rc = mb__cli_add_keep_float(&keep_float, cmd, optarg);
      config.keep_float = keep_float.names;
      config.n_keep_float = keep_float.n;
      break;
    case OPT_NO_CACHE:
      config.build_cache = 0;
      break;
    case 'h':
      fputs(convert_help, stdout);
      goto done;
    default:
      if (c >= OPT_CALIBRATION && c <= OPT_CALIBRATION_LAST)
        rc = mb__cli_calibration_option(cmd, c - OPT_CALIBRATION, optarg,
                                        &config);
      else
        rc = mb__cli_bad_option(cmd, c, argv);
      break;
    }
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
  if (!conversion || !out) {
    rc = mb__cli_usage_error(cmd, "missing %s",
                             !conversion ? "-c CONVERSION" : "-o OUT.onnx");
    goto done;
  }
  if (mb_conversion_find(conversion, &index, &err) != MB_STATUS_OK) {
    rc = mb__cli_usage_error(cmd, "-c: %s", err.message);
    goto done;
  }
  if (config.inputs_dir && (shapes.n > 0 || shapes.spec.batch_size > 0)) {
    rc = mb__cli_usage_error(cmd, "--shape and --batch-size only apply to "
                                  "generated inputs, not --inputs");
    goto done;
  }
  config.shapes = shapes.spec;
  if (shapes.spec.batch_size > 0)
    config.batch_size = (int)shapes.spec.batch_size;
  mb_status status = mb_convert_model_file(argv[optind], conversion, &config,
                                           out, summary, sizeof summary, &err);
  if (status != MB_STATUS_OK) {
    rc = status == MB_STATUS_INVALID_ARGUMENT || status == MB_STATUS_DYNAMIC
             ? mb__cli_shape_error(argv[optind], &err)
             : mb__cli_fail(argv[optind], &err);
    goto done;
  }
  printf("wrote %s (%s)\n", out, summary);
done:
  mb__cli_shapes_free(&shapes);
  mb__cli_keep_float_free(&keep_float);
  return rc;
}
