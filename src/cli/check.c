/* modelbench check: run a model on ONNX test data sets (input_N.pb /
 * output_N.pb) and compare its outputs with the expected ones. */
#include "cli/cli_common.h"

#include <limits.h>
#include <stdlib.h>

static const char check_help[] =
    "Usage: modelbench check MODEL TESTDIR [OPTIONS]\n"
    "\n"
    "Runs MODEL on the reference interpreter with TESTDIR/input_N.pb and\n"
    "compares its outputs with TESTDIR/output_N.pb. TESTDIR may also be a\n"
    "folder of test_data_set_* folders (as in the ONNX backend tests); each\n"
    "is checked. Prints the maximum absolute and relative error per output.\n"
    "\n"
    "Options:\n"
    "  --rtol R    relative tolerance (default 1e-3)\n"
    "  --atol A    absolute tolerance (default 1e-5)\n"
    "  -h, --help  show this help\n"
    "\n"
    "An element passes when |actual - expected| <= atol + rtol * |expected|.\n"
    "Exit status: 0 all outputs within tolerance, 1 mismatch or failure,\n"
    "2 usage error.\n";

typedef struct check_ctx {
  const char *model_path;
  const mb_model *model;
  mb_session *session;
  double rtol, atol;
  int outputs_ok, outputs_total;
} check_ctx;

/* ONNX 1.12's test generator wrote bfloat16 tensors with data_type UINT16
 * (the same bits); read them as the bfloat16 the model declares. */
static void fix_bfloat16(mb_tensor *t, mb_dtype declared) {
  if (t->dtype == MB_DTYPE_UINT16 && declared == MB_DTYPE_BFLOAT16)
    t->dtype = MB_DTYPE_BFLOAT16;
}

/* Checks one test data set folder; returns an exit code (MB_EXIT_FAILURE
 * for a mismatch as well as for an error). */
static int check_set(check_ctx *c, const char *dir, const char *label) {
  int n_in = mb_model_input_count(c->model);
  int n_out = mb_model_output_count(c->model);
  mb_tensor **inputs = NULL, **expected = NULL, **actual = NULL;
  int count_in = 0, count_out = 0, rc;
  char file[PATH_MAX];
  mb_error err;
  memset(&err, 0, sizeof err);

  rc = mb__cli_load_pb_set(dir, "input", &inputs, &count_in, NULL);
  if (rc != MB_EXIT_OK)
    goto done;
  rc = mb__cli_load_pb_set(dir, "output", &expected, &count_out, NULL);
  if (rc != MB_EXIT_OK)
    goto done;
  rc = MB_EXIT_FAILURE;
  if (count_in != n_in) {
    mb__cli_error(dir,
                  "has %d input_N.pb file(s) but model %s has %d "
                  "input(s)",
                  count_in, c->model_path, n_in);
    goto done;
  }
  if (count_out != n_out) {
    mb__cli_error(dir,
                  "has %d output_N.pb file(s) but model %s has %d "
                  "output(s)",
                  count_out, c->model_path, n_out);
    goto done;
  }
  for (int i = 0; i < n_out; i++) {
    mb_value_info info;
    if (mb_model_output_info(c->model, i, &info, NULL) == MB_STATUS_OK)
      fix_bfloat16(expected[i], info.dtype);
  }
  for (int i = 0; i < n_in; i++) {
    mb_value_info info;
    if (mb_model_input_info(c->model, i, &info, NULL) == MB_STATUS_OK)
      fix_bfloat16(inputs[i], info.dtype);
    snprintf(file, sizeof file, "%s/input_%d.pb", dir, i);
    if (mb__cli_check_input(c->model, i, inputs[i], file) != MB_EXIT_OK)
      goto done;
  }
  actual = calloc((size_t)(n_out > 0 ? n_out : 1), sizeof *actual);
  if (!actual) {
    mb__cli_error(NULL, "out of memory");
    goto done;
  }
  if (mb_session_run(c->session, n_in, (const mb_tensor *const *)inputs, n_out,
                     actual, &err) != MB_STATUS_OK) {
    mb__cli_fail(c->model_path, &err);
    goto done;
  }
  rc = MB_EXIT_OK;
  for (int i = 0; i < n_out; i++) {
    mb_value_info info;
    mb_compare_result r;
    char got[160], want[160];
    const char *name = "?";
    if (mb_model_output_info(c->model, i, &info, NULL) == MB_STATUS_OK)
      name = info.name;
    c->outputs_total++;
    if (mb_tensor_compare(actual[i], expected[i], c->rtol, c->atol, &r, &err) !=
        MB_STATUS_OK) {
      mb__cli_fail(c->model_path, &err);
      rc = MB_EXIT_FAILURE;
      continue;
    }
    printf("%s: output '%s' %s %s: ", label, name,
           mb_dtype_name(actual[i]->dtype),
           mb__shape_str(actual[i]->rank, actual[i]->dims, got, sizeof got));
    if (!r.shape_match) {
      printf("MISMATCH: expected %s %s\n", mb_dtype_name(expected[i]->dtype),
             mb__shape_str(expected[i]->rank, expected[i]->dims, want,
                           sizeof want));
      rc = MB_EXIT_FAILURE;
      continue;
    }
    printf("max abs err %.3g, max rel err %.3g", r.max_abs_err, r.max_rel_err);
    if (r.n_bad) {
      printf(": MISMATCH (%lld of %lld elements outside tolerance)\n",
             (long long)r.n_bad, (long long)expected[i]->numel);
      rc = MB_EXIT_FAILURE;
    } else {
      printf(": ok\n");
      c->outputs_ok++;
    }
  }

done:
  if (actual)
    for (int i = 0; i < n_out; i++)
      mb_tensor_free(actual[i]);
  free(actual);
  mb__cli_free_tensors(inputs, count_in);
  mb__cli_free_tensors(expected, count_out);
  return rc;
}

static bool has_pb_files(const char *dir) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/input_0.pb", dir);
  if (mb__cli_file_exists(path))
    return true;
  snprintf(path, sizeof path, "%s/output_0.pb", dir);
  return mb__cli_file_exists(path);
}

int mb__cli_check(int argc, char **argv) {
  static const struct option options[] = {
      {"rtol", required_argument, NULL, 'r'},
      {"atol", required_argument, NULL, 'a'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *cmd = "check";
  check_ctx c;
  mb_model *model = NULL;
  char **sets = NULL;
  int n_sets = 0, rc = MB_EXIT_OK, opt;
  mb_error err;
  memset(&c, 0, sizeof c);
  memset(&err, 0, sizeof err);
  c.rtol = 1e-3;
  c.atol = 1e-5;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    switch (opt) {
    case 'r':
    case 'a': {
      double v;
      if (!mb__cli_parse_double(optarg, &v) || v < 0)
        return mb__cli_usage_error(cmd, "--%s '%s': expected a number >= 0",
                                   opt == 'r' ? "rtol" : "atol", optarg);
      *(opt == 'r' ? &c.rtol : &c.atol) = v;
      break;
    }
    case 'h':
      fputs(check_help, stdout);
      return MB_EXIT_OK;
    default:
      return mb__cli_bad_option(cmd, opt, argv);
    }
  }
  if (argc - optind < 2)
    return mb__cli_usage_error(cmd, optind >= argc ? "missing MODEL and "
                                                     "TESTDIR"
                                                   : "missing TESTDIR");
  if (argc - optind > 2)
    return mb__cli_usage_error(cmd, "unexpected argument '%s'",
                               argv[optind + 2]);
  c.model_path = argv[optind];
  const char *testdir = argv[optind + 1];

  if (!mb__cli_is_dir(testdir)) {
    mb__cli_error(testdir, "not a directory");
    return MB_EXIT_FAILURE;
  }
  /* Find the data sets first: a wrong folder is reported before the model
   * is even loaded. */
  bool single = has_pb_files(testdir);
  if (!single) {
    n_sets = mb__cli_list_subdirs(testdir, "test_data_set_", &sets);
    if (n_sets <= 0) {
      mb__cli_error(testdir, "has no input_N.pb/output_N.pb files and no "
                             "test_data_set_* folders");
      n_sets = 0;
      rc = MB_EXIT_FAILURE;
      goto done;
    }
  }
  rc = mb__cli_load_model(c.model_path, &model);
  if (rc != MB_EXIT_OK)
    goto done;
  c.model = model;
  if (mb_session_create(model, NULL, &c.session, &err) != MB_STATUS_OK) {
    rc = mb__cli_fail(c.model_path, &err);
    goto done;
  }
  if (single)
    rc = check_set(&c, testdir, testdir);
  for (int i = 0; i < n_sets; i++) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", testdir, sets[i]);
    if (check_set(&c, dir, sets[i]) != MB_EXIT_OK)
      rc = MB_EXIT_FAILURE;
  }
  printf("%d of %d outputs within tolerance (rtol %g, atol %g)\n", c.outputs_ok,
         c.outputs_total, c.rtol, c.atol);

done:
  mb__cli_free_names(sets, n_sets);
  mb_session_free(c.session);
  mb_model_free(model);
  return rc;
}
