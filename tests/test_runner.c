/* mb_runner: one conversion prepared and run in this process. Its outputs
 * against the reference interpreter's (REFERENCE exactly, ORT_CPU and a
 * conversion with steps within tolerance), a hybrid runtime held to the
 * example's shapes, and the error messages (unknown conversion, missing
 * file, input counts, a non-ONNX conversion). */
#include "modelbench.h"
#include "test.h"

#include <stdlib.h>

static char mlp[4096];

/* 1 when the conversion can run here; 0 to skip (MB_REQUIRE_ORT=1 makes an
 * unavailable ORT a failure, as in test_runtime_ort). */
static int available(const char *name, int *failed) {
  int index;
  mb_conversion_info info;
  mb_error err = {0};
  *failed = 0;
  if (mb_conversion_find(name, &index, &err) ||
      mb_conversion_get(index, &info, &err))
    return 0;
  if (info.available)
    return 1;
  const char *require = getenv("MB_REQUIRE_ORT");
  if (strncmp(name, "ORT", 3) == 0 && require && strcmp(require, "1") == 0) {
    fprintf(stderr, "  %s required (MB_REQUIRE_ORT=1): %s\n", name,
            info.reason);
    *failed = 1;
  } else {
    fprintf(stderr, "  skipped: %s unavailable: %s\n", name, info.reason);
  }
  return 0;
}

/* The mlp model and generated inputs at batch `batch`. */
static int setup(mb_model **model, mb_tensor **inputs, int64_t batch) {
  mb_error err = {0};
  mb_shape_spec spec = {batch, 0, NULL};
  const char *dir = getenv("MB_TEST_MODELS");
  snprintf(mlp, sizeof mlp, "%s/mlp.onnx", dir ? dir : "models");
  ASSERT_OK(mb_model_load(mlp, model, &err), &err);
  ASSERT_EQ(mb_model_input_count(*model), 1);
  ASSERT_OK(mb_inputs_generate(*model, &spec, 3, 0, NULL, inputs, &err), &err);
  return 0;
}

/* The reference interpreter's output of the model on `inputs`. */
static int reference(const mb_model *model, mb_tensor **inputs,
                     mb_tensor **out) {
  mb_error err = {0};
  mb_session *session = NULL;
  ASSERT_OK(mb_session_create(model, NULL, &session, &err), &err);
  ASSERT_OK(mb_session_run(session, 1, (const mb_tensor *const *)inputs, 1, out,
                           &err),
            &err);
  mb_session_free(session);
  return 0;
}

/* Runs `conversion` on inputs through a runner and compares with the
 * reference interpreter: max abs error into *max_err. */
static int run_and_compare(const char *conversion, double *max_err) {
  mb_error err = {0};
  mb_model *model = NULL;
  mb_tensor *inputs[1] = {NULL}, *expected = NULL, *actual = NULL;
  mb_runner *runner = NULL;
  mb_compare_result cmp;
  if (setup(&model, inputs, 2) || reference(model, inputs, &expected))
    return 1;
  ASSERT_OK(mb_runner_create(mlp, conversion, 1, 1,
                             (const mb_tensor *const *)inputs, &runner, &err),
            &err);
  ASSERT_EQ(mb_runner_output_count(runner), 1);
  for (int i = 0; i < 3; i++) { /* runs again on the same session */
    mb_tensor_free(actual);
    actual = NULL;
    ASSERT_OK(mb_runner_run(runner, 1, (const mb_tensor *const *)inputs, 1,
                            &actual, &err),
              &err);
  }
  ASSERT(actual != NULL);
  ASSERT_OK(mb_tensor_compare(actual, expected, 1e-3, 1e-2, &cmp, &err), &err);
  ASSERT_EQ(cmp.shape_match, 1);
  *max_err = cmp.max_abs_err;
  mb_tensor_free(actual);
  mb_tensor_free(expected);
  mb_tensor_free(inputs[0]);
  mb_runner_free(runner);
  mb_model_free(model);
  return 0;
}

TEST(reference_runs_exactly) {
  double max_err = -1;
  if (run_and_compare("REFERENCE", &max_err))
    return 1;
  ASSERT_NEAR(max_err, 0.0, 0.0);
  return 0;
}

TEST(onnxruntime_and_steps) {
  static const char *names[] = {"ORT_CPU", "INT8_DYNAMIC+ORT_CPU"};
  static const double tolerance[] = {1e-4, 0.5};
  for (int i = 0; i < 2; i++) {
    int failed;
    double max_err = -1;
    if (!available(names[i], &failed)) {
      if (failed)
        return 1;
      continue;
    }
    if (run_and_compare(names[i], &max_err))
      return 1;
    if (!(max_err <= tolerance[i]))
      TEST_FAIL_("%s: max abs error %g > %g", names[i], max_err, tolerance[i]);
  }
  return 0;
}

TEST(hybrid_runtime_keeps_the_example_shapes) {
  int failed;
  mb_error err = {0};
  mb_model *model = NULL;
  mb_tensor *two[1] = {NULL}, *three[1] = {NULL}, *out = NULL;
  mb_runner *runner = NULL;
  if (!available("XNNPACK", &failed))
    return failed;
  if (setup(&model, two, 2))
    return 1;
  mb_model_free(model);
  if (setup(&model, three, 3))
    return 1;
  ASSERT_OK(mb_runner_create(mlp, "XNNPACK", 1, 1,
                             (const mb_tensor *const *)two, &runner, &err),
            &err);
  ASSERT_OK(
      mb_runner_run(runner, 1, (const mb_tensor *const *)two, 1, &out, &err),
      &err);
  mb_tensor_free(out);
  out = NULL;
  ASSERT_EQ(
      mb_runner_run(runner, 1, (const mb_tensor *const *)three, 1, &out, &err),
      MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(err.message, "XNNPACK was prepared for the example inputs");
  ASSERT(out == NULL);
  mb_runner_free(runner);
  mb_tensor_free(two[0]);
  mb_tensor_free(three[0]);
  mb_model_free(model);
  return 0;
}

TEST(errors_name_what_is_wrong) {
  mb_error err = {0};
  mb_model *model = NULL;
  mb_tensor *inputs[2] = {NULL, NULL}, *out = NULL;
  mb_runner *runner = NULL;
  if (setup(&model, inputs, 2))
    return 1;
  const mb_tensor *const *in = (const mb_tensor *const *)inputs;
  ASSERT_NE(mb_runner_create(mlp, "ORT_CPUU", 1, 1, in, &runner, &err),
            MB_STATUS_OK);
  ASSERT_CONTAINS(err.message, "ORT_CPUU");
  ASSERT(runner == NULL);
  ASSERT_NE(mb_runner_create("/nonexistent/m.onnx", "REFERENCE", 1, 1, in,
                             &runner, &err),
            MB_STATUS_OK);
  ASSERT_CONTAINS(err.message, "/nonexistent/m.onnx");
  ASSERT_EQ(mb_runner_create(mlp, "REFERENCE", 1, 2, in, &runner, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "takes 1 inputs, 2 example inputs given");
  /* EAGER runs the PyTorch module, not the ONNX graph. */
  ASSERT_EQ(mb_runner_create(mlp, "EAGER", 1, 1, in, &runner, &err),
            MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(err.message, "EAGER runs the pytorch form of a model");
  ASSERT_OK(mb_runner_create(mlp, "REFERENCE", 1, 1, in, &runner, &err), &err);
  ASSERT_EQ(mb_runner_run(runner, 2, in, 1, &out, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "2 inputs and 1 outputs given");
  ASSERT(out == NULL);
  mb_runner_free(runner);
  mb_runner_free(NULL);
  mb_tensor_free(inputs[0]);
  mb_model_free(model);
  return 0;
}

TEST_MAIN(TEST_ENTRY(reference_runs_exactly), TEST_ENTRY(onnxruntime_and_steps),
          TEST_ENTRY(hybrid_runtime_keeps_the_example_shapes),
          TEST_ENTRY(errors_name_what_is_wrong))
