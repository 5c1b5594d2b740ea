/* TensorProto files and every model of the ONNX backend test data
 * (libonnx-testdata): read, written back, read again and run, compared with
 * the originals. */
#include "onnx_test_util.h"

/* ---- TensorProto files ---- */

TEST(tensor_pb_files) {
  mb_error err_buf = {0}, *err = &err_buf;
  mb_tensor *a = NULL, *b = NULL;
  const char *src =
      TESTDATA "/node/test_conv_with_strides_padding/test_data_set_0/"
               "input_0.pb";
  ASSERT_OK(mb_tensor_load_pb(src, &a, err), err);
  ASSERT_EQ(a->dtype, MB_DTYPE_FLOAT);
  ASSERT_EQ(a->rank, 4);
  ASSERT_OK(mb_tensor_save_pb(a, tmp_path("t.pb"), err), err);
  ASSERT_OK(mb_tensor_load_pb(tmp_path("t.pb"), &b, err), err);
  if (tensor_differs(a, b, "pb round trip"))
    TEST_FAIL_("%s", g_diff);
  mb_tensor_free(a);
  mb_tensor_free(b);
  /* Sequence and optional files are recognised. */
  static const char *const containers[] = {
      TESTDATA "/node/test_identity_sequence/test_data_set_0/input_0.pb",
      TESTDATA "/node/test_optional_has_element_empty/test_data_set_0/"
               "input_0.pb",
      TESTDATA "/node/test_loop16_seq_none/test_data_set_0/input_2.pb",
  };
  for (size_t i = 0; i < MB_ARRAY_COUNT(containers); i++) {
    a = NULL;
    ASSERT_EQ(mb_tensor_load_pb(containers[i], &a, err), MB_STATUS_UNSUPPORTED);
    ASSERT_CONTAINS(err->message, "SequenceProto/OptionalProto");
    ASSERT_CONTAINS(err->message, "input_");
    ASSERT(a == NULL);
  }
  ASSERT_EQ(write_bytes(tmp_path("empty.pb"), "", 0), 0);
  ASSERT_EQ(mb_tensor_load_pb(tmp_path("empty.pb"), &a, err), MB_STATUS_PARSE);
  ASSERT_CONTAINS(err->message, "empty.pb");
  ASSERT_EQ(mb_tensor_load_pb(tmp_path("nothere.pb"), &a, err), MB_STATUS_IO);
  ASSERT_CONTAINS(err->message, "nothere.pb");
  return 0;
}

/* Every input/output .pb of the backend test data loads as a tensor or is
 * reported as unsupported (strings, sequences, optionals). */
TEST(testdata_tensor_files) {
  static const char *const suites[] = {"node", "simple", "pytorch-converted",
                                       "pytorch-operator"};
  int loaded = 0, unsupported = 0;
  char path[1024];
  for (size_t s = 0; s < MB_ARRAY_COUNT(suites); s++) {
    snprintf(path, sizeof path, "%s/%s", TESTDATA, suites[s]);
    DIR *d = opendir(path);
    if (!d)
      TEST_FAIL_("cannot open %s", path);
    struct dirent *e;
    while ((e = readdir(d))) {
      if (e->d_name[0] == '.')
        continue;
      for (int set = 0; set < 4; set++)
        for (int io = 0; io < 2; io++)
          for (int k = 0; k < 16; k++) {
            mb_error err_buf = {0}, *err = &err_buf;
            mb_tensor *t = NULL;
            snprintf(path, sizeof path, "%s/%s/%s/test_data_set_%d/%s_%d.pb",
                     TESTDATA, suites[s], e->d_name, set,
                     io ? "output" : "input", k);
            if (access(path, R_OK) != 0)
              break;
            mb_status st = mb_tensor_load_pb(path, &t, err);
            if (st == MB_STATUS_OK) {
              loaded++;
              mb_tensor_free(t);
            } else if (st == MB_STATUS_UNSUPPORTED) {
              unsupported++;
            } else {
              closedir(d);
              TEST_FAIL_("%s: %s", path, err->message);
            }
          }
    }
    closedir(d);
  }
  printf("  tensor files: %d loaded, %d unsupported\n", loaded, unsupported);
  ASSERT(loaded > 2000);
  return 0;
}

/* ---- the backend test data ---- */

TEST(testdata_models_round_trip) {
  static const char *const suites[] = {"node", "simple", "pytorch-converted",
                                       "pytorch-operator"};
  int loaded = 0, unsupported = 0, round_trips = 0;
  char path[1024];
  mb_save_options ext_opts = {.external_data_threshold = 256};
  for (size_t s = 0; s < MB_ARRAY_COUNT(suites); s++) {
    snprintf(path, sizeof path, "%s/%s", TESTDATA, suites[s]);
    DIR *d = opendir(path);
    if (!d)
      TEST_FAIL_("cannot open %s", path);
    struct dirent *e;
    while ((e = readdir(d))) {
      mb_error err_buf = {0}, *err = &err_buf;
      mb_model *a = NULL, *b = NULL, *c = NULL;
      if (e->d_name[0] == '.')
        continue;
      snprintf(path, sizeof path, "%s/%s/%s/model.onnx", TESTDATA, suites[s],
               e->d_name);
      if (access(path, R_OK) != 0)
        continue;
      mb_status st = mb_model_load(path, &a, err);
      if (st == MB_STATUS_UNSUPPORTED) {
        unsupported++;
        continue;
      }
      if (st != MB_STATUS_OK) {
        closedir(d);
        TEST_FAIL_("%s: %s: %s", path, mb_status_string(st), err->message);
      }
      loaded++;
      int bad = 0;
      if (mb_model_save(a, tmp_path("rt.onnx"), NULL, err) ||
          mb_model_load(tmp_path("rt.onnx"), &b, err) ||
          mb_model_save(a, tmp_path("rt_ext.onnx"), &ext_opts, err) ||
          mb_model_load(tmp_path("rt_ext.onnx"), &c, err)) {
        fprintf(stderr, "  %s: %s\n", path, err->message);
        bad = 1;
      } else if (model_differs(a, b) || model_differs(a, c)) {
        fprintf(stderr, "  %s: %s\n", path, g_diff);
        bad = 1;
      }
      mb_model_free(a);
      mb_model_free(b);
      mb_model_free(c);
      unlink(tmp_path("rt_ext.onnx.data"));
      if (bad) {
        closedir(d);
        return 1;
      }
      round_trips++;
    }
    closedir(d);
  }
  printf("  models: %d loaded (%d round trips identical), %d unsupported\n",
         loaded, round_trips, unsupported);
  ASSERT(loaded > 1000);
  return 0;
}

/* A model and its re-saved copy compute bit-identical outputs on the
 * reference interpreter, for every test-data model it can run. */
static int run_model_dir(const char *dir, const mb_model *model, int n_outputs,
                         mb_tensor **outputs, mb_error *err) {
  int n_in = mb_model_input_count(model);
  mb_tensor *inputs[64] = {0};
  mb_session *session = NULL;
  char path[1100];
  int rc = -1;
  if (n_in > 64 || n_outputs > 64)
    return -1;
  for (int i = 0; i < n_in; i++) {
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, i);
    if (mb_tensor_load_pb(path, &inputs[i], err))
      goto done;
  }
  if (mb_session_create(model, NULL, &session, err) ||
      mb_session_run(session, n_in, (const mb_tensor *const *)inputs, n_outputs,
                     outputs, err))
    goto done;
  rc = 0;
done:
  mb_session_free(session);
  for (int i = 0; i < n_in; i++)
    mb_tensor_free(inputs[i]);
  return rc;
}

TEST(testdata_resaved_outputs_identical) {
  static const char *const suites[] = {"node", "simple", "pytorch-operator",
                                       "pytorch-converted"};
  int compared = 0, skipped = 0;
  char dir[1024], path[1100];
  for (size_t s = 0; s < MB_ARRAY_COUNT(suites); s++) {
    snprintf(dir, sizeof dir, "%s/%s", TESTDATA, suites[s]);
    DIR *d = opendir(dir);
    if (!d)
      TEST_FAIL_("cannot open %s", dir);
    struct dirent *e;
    while ((e = readdir(d))) {
      mb_error err_buf = {0}, *err = &err_buf;
      mb_model *a = NULL, *b = NULL;
      mb_tensor *out_a[64] = {0}, *out_b[64] = {0};
      int bad = 0;
      if (e->d_name[0] == '.')
        continue;
      snprintf(dir, sizeof dir, "%s/%s/%s", TESTDATA, suites[s], e->d_name);
      snprintf(path, sizeof path, "%s/model.onnx", dir);
      if (mb_model_load(path, &a, err)) {
        skipped++;
        continue;
      }
      int n_out = mb_model_output_count(a);
      if (run_model_dir(dir, a, n_out, out_a, err)) {
        skipped++; /* the interpreter cannot run it: nothing to compare */
        mb_model_free(a);
        continue;
      }
      if (mb_model_save(a, tmp_path("run.onnx"), NULL, err) ||
          mb_model_load(tmp_path("run.onnx"), &b, err) ||
          run_model_dir(dir, b, n_out, out_b, err)) {
        fprintf(stderr, "  %s: re-saved model fails: %s\n", dir, err->message);
        bad = 1;
      }
      for (int i = 0; !bad && i < n_out; i++)
        if (!out_a[i] || tensor_differs(out_a[i], out_b[i], "output")) {
          fprintf(stderr, "  %s: output %d: %s\n", dir, i, g_diff);
          bad = 1;
        }
      for (int i = 0; i < n_out && i < 64; i++) {
        mb_tensor_free(out_a[i]);
        mb_tensor_free(out_b[i]);
      }
      mb_model_free(a);
      mb_model_free(b);
      if (bad) {
        closedir(d);
        return 1;
      }
      compared++;
    }
    closedir(d);
  }
  printf("  outputs compared bit-exactly: %d models (%d skipped)\n", compared,
         skipped);
  ASSERT(compared > 0);
  return 0;
}

TEST_MAIN(TEST_ENTRY(tensor_pb_files), TEST_ENTRY(testdata_tensor_files),
          TEST_ENTRY(testdata_models_round_trip),
          TEST_ENTRY(testdata_resaved_outputs_identical))
