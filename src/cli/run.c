/* modelbench run: run a model once (or N times, timed) on the reference
 * interpreter with given or generated inputs. */
#include "cli/cli_common.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>

static const char run_help[] =
    "Usage: modelbench run MODEL [OPTIONS]\n"
    "\n"
    "Runs MODEL on the reference interpreter and prints each output's name,\n"
    "type, shape and a summary of its values.\n"
    "\n"
    "Options:\n"
    "  --inputs DIR            read inputs from DIR/input_N.pb (an ONNX test\n"
    "                          data set folder), in graph input order\n"
    "  --random                generate inputs (the default without --inputs)\n"
    "  --seed N                seed of generated inputs (default 0)\n"
    "  --range [NAME=]LO:HI    value range of generated inputs (floats in\n"
    "                          [LO,HI), integers in [LO,HI]); repeatable\n"
    "  --shape NAME=D0,D1,...  shape of generated input NAME (repeatable)\n"
    "  --batch-size N          size of a dynamic first dim (default 1)\n"
    "  --outputs DIR           write outputs to DIR/output_N.pb\n"
    "  --threads N             interpreter threads (default 1)\n"
    "  --repeat N              run N more times and print the median and\n"
    "                          minimum wall time\n"
    "  -h, --help              show this help\n"
    "\n"
    "Exit status: 0 success, 1 failure, 2 usage error.\n";

typedef struct run_options {
  const char *model_path;
  const char *inputs_dir;
  const char *outputs_dir;
  bool random;
  uint64_t seed;
  int threads;
  int64_t repeat;
  mb_cli_shapes shapes;
  mb_input_range *ranges;
  int n_ranges;
} run_options;

static int parse_args(run_options *o, int argc, char **argv) {
  static const struct option options[] = {
      {"inputs", required_argument, NULL, 'i'},
      {"random", no_argument, NULL, 'r'},
      {"seed", required_argument, NULL, 'S'},
      {"range", required_argument, NULL, 'R'},
      {"shape", required_argument, NULL, 's'},
      {"batch-size", required_argument, NULL, 'b'},
      {"outputs", required_argument, NULL, 'o'},
      {"threads", required_argument, NULL, 't'},
      {"repeat", required_argument, NULL, 'n'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *cmd = "run";
  int64_t v;
  int c, rc = MB_EXIT_OK;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    switch (c) {
    case 'i':
      o->inputs_dir = optarg;
      break;
    case 'r':
      o->random = true;
      break;
    case 'S':
      if (!mb__cli_parse_i64(optarg, 0, INT64_MAX, &v))
        return mb__cli_usage_error(cmd,
                                   "--seed '%s': expected a "
                                   "non-negative integer",
                                   optarg);
      o->seed = (uint64_t)v;
      break;
    case 'R':
      rc = mb__cli_add_range(cmd, "--range", optarg, &o->ranges, &o->n_ranges);
      break;
    case 's':
      rc = mb__cli_add_shape(&o->shapes, cmd, optarg);
      break;
    case 'b':
      rc = mb__cli_set_batch(&o->shapes, cmd, optarg);
      break;
    case 'o':
      o->outputs_dir = optarg;
      break;
    case 't':
      if (!mb__cli_parse_i64(optarg, 1, 1024, &v))
        return mb__cli_usage_error(cmd, "--threads '%s': expected 1..1024",
                                   optarg);
      o->threads = (int)v;
      break;
    case 'n':
      if (!mb__cli_parse_i64(optarg, 0, 1000000, &v))
        return mb__cli_usage_error(cmd, "--repeat '%s': expected 0..1000000",
                                   optarg);
      o->repeat = v;
      break;
    case 'h':
      fputs(run_help, stdout);
      return -1;
    default:
      return mb__cli_bad_option(cmd, c, argv);
    }
    if (rc != MB_EXIT_OK)
      return rc;
  }
  if (optind >= argc)
    return mb__cli_usage_error(cmd, "missing MODEL");
  if (argc - optind > 1)
    return mb__cli_usage_error(cmd, "unexpected argument '%s'",
                               argv[optind + 1]);
  o->model_path = argv[optind];
  if (o->inputs_dir && o->random)
    return mb__cli_usage_error(cmd, "--inputs and --random exclude each "
                                    "other");
  if (o->inputs_dir &&
      (o->shapes.n || o->shapes.spec.batch_size || o->n_ranges))
    return mb__cli_usage_error(cmd, "--shape, --batch-size and --range only "
                                    "apply to generated inputs");
  return MB_EXIT_OK;
}

static int check_range_names(const run_options *o, const mb_model *model) {
  int n = mb_model_input_count(model);
  for (int r = 0; r < o->n_ranges; r++) {
    bool found = !o->ranges[r].name;
    for (int i = 0; i < n && !found; i++) {
      mb_value_info info;
      if (mb_model_input_info(model, i, &info, NULL) == MB_STATUS_OK &&
          strcmp(info.name, o->ranges[r].name) == 0)
        found = true;
    }
    if (!found) {
      mb__cli_error(o->model_path, "--range %s: the model has no input '%s'",
                    o->ranges[r].name, o->ranges[r].name);
      return MB_EXIT_USAGE;
    }
  }
  return MB_EXIT_OK;
}

static int read_inputs(const run_options *o, const mb_model *model,
                       mb_tensor **inputs) {
  int n = mb_model_input_count(model);
  mb_tensor **loaded = NULL;
  int count = 0;
  char file[PATH_MAX];
  if (!mb__cli_is_dir(o->inputs_dir)) {
    mb__cli_error(o->inputs_dir, "not a directory");
    return MB_EXIT_FAILURE;
  }
  int rc = mb__cli_load_pb_set(o->inputs_dir, "input", &loaded, &count, NULL);
  if (rc != MB_EXIT_OK)
    return rc;
  if (count != n) {
    mb__cli_error(o->inputs_dir,
                  "has %d input_N.pb file(s) but model %s has %d input(s)",
                  count, o->model_path, n);
    mb__cli_free_tensors(loaded, count);
    return MB_EXIT_FAILURE;
  }
  for (int i = 0; i < n; i++) {
    snprintf(file, sizeof file, "%s/input_%d.pb", o->inputs_dir, i);
    rc = mb__cli_check_input(model, i, loaded[i], file);
    if (rc != MB_EXIT_OK) {
      mb__cli_free_tensors(loaded, count);
      return rc;
    }
  }
  for (int i = 0; i < n; i++)
    inputs[i] = loaded[i];
  free(loaded);
  return MB_EXIT_OK;
}

/* One line per tensor: name, type, shape, min/max/mean and a few values. */
static void print_tensor(const char *kind, const char *name,
                         const mb_tensor *t) {
  char shape[160];
  printf("%s '%s': %s %s", kind, name, mb_dtype_name(t->dtype),
         mb__shape_str(t->rank, t->dims, shape, sizeof shape));
  if (t->numel == 0 || mb_dtype_size(t->dtype) == 0 || !t->data) {
    printf("\n");
    return;
  }
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t finite = 0, nan = 0;
  for (int64_t i = 0; i < t->numel; i++) {
    double v = mb__tensor_get_f64(t, i);
    if (isnan(v)) {
      nan++;
      continue;
    }
    lo = MB_MIN(lo, v);
    hi = MB_MAX(hi, v);
    if (isfinite(v)) {
      sum += v;
      finite++;
    }
  }
  if (nan < t->numel)
    printf("  min %.6g max %.6g mean %.6g", lo, hi,
           finite ? sum / (double)finite : NAN);
  if (nan)
    printf("  NaN %lld", (long long)nan);
  printf("  [");
  /* Integer elements as integers: int64 values above 2^53 (ids, hashes,
   * INT64_MAX sentinels) would print rounded through a double. */
  bool integer = t->dtype == MB_DTYPE_INT8 || t->dtype == MB_DTYPE_UINT8 ||
                 t->dtype == MB_DTYPE_INT16 || t->dtype == MB_DTYPE_UINT16 ||
                 t->dtype == MB_DTYPE_INT32 || t->dtype == MB_DTYPE_UINT32 ||
                 t->dtype == MB_DTYPE_INT64 || t->dtype == MB_DTYPE_UINT64;
  int64_t shown = MB_MIN(t->numel, 6);
  for (int64_t i = 0; i < shown; i++) {
    int64_t v = integer ? mb__tensor_get_i64(t, i) : 0;
    if (t->dtype == MB_DTYPE_UINT64)
      printf("%s%llu", i ? ", " : "", (unsigned long long)v);
    else if (integer)
      printf("%s%lld", i ? ", " : "", (long long)v);
    else
      printf("%s%.6g", i ? ", " : "", mb__tensor_get_f64(t, i));
  }
  printf("%s]\n", t->numel > shown ? ", ..." : "");
}

static int write_outputs(const run_options *o, const mb_model *model,
                         mb_tensor **outputs, int n) {
  char file[PATH_MAX];
  mb_error err;
  if (mkdir(o->outputs_dir, 0777) != 0 && errno != EEXIST) {
    mb__cli_error(o->outputs_dir, "cannot create directory: %s",
                  strerror(errno));
    return MB_EXIT_FAILURE;
  }
  if (!mb__cli_is_dir(o->outputs_dir)) {
    mb__cli_error(o->outputs_dir, "not a directory");
    return MB_EXIT_FAILURE;
  }
  for (int i = 0; i < n; i++) {
    mb_value_info info;
    if (!outputs[i]->name &&
        mb_model_output_info(model, i, &info, NULL) == MB_STATUS_OK)
      outputs[i]->name = mb__strdup(info.name);
    snprintf(file, sizeof file, "%s/output_%d.pb", o->outputs_dir, i);
    memset(&err, 0, sizeof err);
    if (mb_tensor_save_pb(outputs[i], file, &err) != MB_STATUS_OK)
      return mb__cli_fail(file, &err);
  }
  return MB_EXIT_OK;
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void free_outputs(mb_tensor **outputs, int n) {
  for (int i = 0; i < n; i++) {
    mb_tensor_free(outputs[i]);
    outputs[i] = NULL;
  }
}

/* Runs `repeat` more times and prints wall-time statistics. */
static int time_runs(const run_options *o, mb_session *session, int n_in,
                     mb_tensor **inputs, int n_out, mb_tensor **outputs) {
  double *times = malloc(sizeof *times * (size_t)o->repeat);
  mb_error err;
  if (!times) {
    mb__cli_error(NULL, "out of memory");
    return MB_EXIT_FAILURE;
  }
  for (int64_t r = 0; r < o->repeat; r++) {
    memset(&err, 0, sizeof err);
    double start = mb__cli_now();
    mb_status status = mb_session_run(
        session, n_in, (const mb_tensor *const *)inputs, n_out, outputs, &err);
    times[r] = mb__cli_now() - start;
    free_outputs(outputs, n_out);
    if (status != MB_STATUS_OK) {
      free(times);
      return mb__cli_fail(o->model_path, &err);
    }
  }
  double sum = 0;
  for (int64_t r = 0; r < o->repeat; r++)
    sum += times[r];
  qsort(times, (size_t)o->repeat, sizeof *times, compare_doubles);
  size_t mid = (size_t)o->repeat / 2;
  double median =
      o->repeat % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
  printf("time: %lld runs, median %.3f ms, min %.3f ms, mean %.3f ms "
         "(%d thread%s)\n",
         (long long)o->repeat, median * 1e3, times[0] * 1e3,
         sum / (double)o->repeat * 1e3, o->threads > 0 ? o->threads : 1,
         o->threads > 1 ? "s" : "");
  free(times);
  return MB_EXIT_OK;
}

int mb__cli_run(int argc, char **argv) {
  run_options o;
  mb_model *model = NULL;
  mb_session *session = NULL;
  mb_tensor **inputs = NULL, **outputs = NULL;
  int n_in = 0, n_out = 0, rc;
  mb_error err;
  memset(&o, 0, sizeof o);
  memset(&err, 0, sizeof err);

  rc = parse_args(&o, argc, argv);
  if (rc != MB_EXIT_OK) {
    rc = rc < 0 ? MB_EXIT_OK : rc; /* -1: --help was printed */
    goto done;
  }
  rc = mb__cli_load_model(o.model_path, &model);
  if (rc != MB_EXIT_OK)
    goto done;
  rc = check_range_names(&o, model);
  if (rc != MB_EXIT_OK)
    goto done;
  n_in = mb_model_input_count(model);
  n_out = mb_model_output_count(model);
  inputs = calloc((size_t)(n_in > 0 ? n_in : 1), sizeof *inputs);
  outputs = calloc((size_t)(n_out > 0 ? n_out : 1), sizeof *outputs);
  if (!inputs || !outputs) {
    mb__cli_error(NULL, "out of memory");
    rc = MB_EXIT_FAILURE;
    goto done;
  }

  if (o.inputs_dir) {
    rc = read_inputs(&o, model, inputs);
    if (rc != MB_EXIT_OK)
      goto done;
  } else {
    mb_status status = mb_inputs_generate(model, &o.shapes.spec, o.seed,
                                          o.n_ranges, o.ranges, inputs, &err);
    if (status == MB_STATUS_DYNAMIC || status == MB_STATUS_INVALID_ARGUMENT ||
        status == MB_STATUS_OVERFLOW) {
      rc = mb__cli_shape_error(o.model_path, &err);
      goto done;
    }
    if (status != MB_STATUS_OK) {
      rc = mb__cli_fail(o.model_path, &err);
      goto done;
    }
  }
  for (int i = 0; i < n_in; i++) {
    mb_value_info info;
    const char *name = inputs[i]->name;
    if (!name && mb_model_input_info(model, i, &info, NULL) == MB_STATUS_OK)
      name = info.name;
    print_tensor("input", name ? name : "?", inputs[i]);
  }

  mb_session_options session_options = {o.threads};
  if (mb_session_create(model, &session_options, &session, &err) !=
      MB_STATUS_OK) {
    rc = mb__cli_fail(o.model_path, &err);
    goto done;
  }
  double start = mb__cli_now();
  if (mb_session_run(session, n_in, (const mb_tensor *const *)inputs, n_out,
                     outputs, &err) != MB_STATUS_OK) {
    rc = mb__cli_fail(o.model_path, &err);
    goto done;
  }
  double first = mb__cli_now() - start;
  for (int i = 0; i < n_out; i++) {
    mb_value_info info;
    const char *name = "?";
    if (mb_model_output_info(model, i, &info, NULL) == MB_STATUS_OK)
      name = info.name;
    print_tensor("output", name, outputs[i]);
  }
  if (o.outputs_dir) {
    rc = write_outputs(&o, model, outputs, n_out);
    if (rc != MB_EXIT_OK)
      goto done;
  }
  free_outputs(outputs, n_out);
  if (o.repeat > 0)
    rc = time_runs(&o, session, n_in, inputs, n_out, outputs);
  else
    printf("time: first run %.3f ms\n", first * 1e3);

done:
  if (outputs)
    free_outputs(outputs, n_out);
  free(outputs);
  for (int i = 0; inputs && i < n_in; i++)
    mb_tensor_free(inputs[i]);
  free(inputs);
  mb_session_free(session);
  mb_model_free(model);
  mb__cli_shapes_free(&o.shapes);
  free(o.ranges);
  return rc;
}
