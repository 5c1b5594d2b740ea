/* What the runtime adapter tests (test_runtime_ort.c,
 * test_runtime_openvino.c) share: a bundled model loaded with its bytes and
 * seeded inputs, one prepare-run-fetch on a runtime, and output comparison.
 */
#ifndef MB_TESTS_RUNTIME_FIXTURE_H
#define MB_TESTS_RUNTIME_FIXTURE_H

#include "core/ir.h"
#include "runtime/runtime.h"
#include "test.h"

#include <stdlib.h>

static void free_tensors(mb_tensor **tensors, int n) {
  for (int i = 0; tensors && i < n; i++) {
    mb_tensor_free(tensors[i]);
    tensors[i] = NULL;
  }
}

/* A model loaded from file, with its bytes and generated inputs. */
typedef struct fixture {
  char path[4096];
  mb_model *model;
  void *bytes;
  size_t size;
  int n_inputs, n_outputs;
  mb_tensor *inputs[16];
} fixture;

static void fixture_free(fixture *f) {
  free_tensors(f->inputs, f->n_inputs);
  mb_model_free(f->model);
  free(f->bytes);
  memset(f, 0, sizeof *f);
}

static int fixture_load(fixture *f, const char *path, uint64_t seed) {
  mb_error err = {0};
  memset(f, 0, sizeof *f);
  snprintf(f->path, sizeof f->path, "%s", path);
  ASSERT_OK(mb_model_load(path, &f->model, &err), &err);
  ASSERT_OK(mb__read_file(path, &f->bytes, &f->size, &err), &err);
  f->n_inputs = mb_model_input_count(f->model);
  f->n_outputs = mb_model_output_count(f->model);
  ASSERT(f->n_inputs <= 16);
  /* Batch 2 for a dynamic first dim, 8 for any other dynamic dim (sequence
   * lengths of exported transformers). */
  mb_input_shape shapes[16];
  for (int i = 0; i < f->n_inputs; i++) {
    mb_value_info info;
    ASSERT_OK(mb_model_input_info(f->model, i, &info, &err), &err);
    ASSERT(info.rank >= 0);
    shapes[i].name = info.name;
    shapes[i].rank = info.rank;
    for (int d = 0; d < info.rank; d++)
      shapes[i].dims[d] = info.dims[d] >= 0 ? info.dims[d] : d == 0 ? 2 : 8;
  }
  mb_shape_spec spec = {.n_shapes = f->n_inputs, .shapes = shapes};
  ASSERT_OK(mb_inputs_generate(f->model, &spec, seed, 0, NULL, f->inputs, &err),
            &err);
  return 0;
}

/* Prepares, runs and fetches the outputs (n_outputs slots) on `rt`. */
static int run_once(const mb_runtime *rt, const fixture *f,
                    const mb_runtime_options *options, mb_tensor **outputs) {
  mb_error err = {0};
  void *session = NULL;
  ASSERT_OK(rt->prepare(f->model, f->bytes, f->size, options, &session, &err),
            &err);
  mb_status status =
      rt->run(session, (const mb_tensor *const *)f->inputs, &err);
  if (!status)
    status = rt->fetch_outputs(session, outputs, &err);
  rt->release(session);
  if (status)
    TEST_FAIL_("%s on %s: %s", rt->name, f->path, err.message);
  return 0;
}

/* Compares outputs with expected; returns the max abs error in *max_abs. */
static int compare_outputs(mb_tensor **actual, mb_tensor **expected, int n,
                           double atol, double rtol, double *max_abs) {
  mb_error err = {0};
  for (int i = 0; i < n; i++) {
    mb_compare_result r;
    ASSERT_OK(mb_tensor_compare(actual[i], expected[i], rtol, atol, &r, &err),
              &err);
    if (!r.shape_match || r.n_bad)
      TEST_FAIL_("output %d (%s): shape_match %d, %lld elements off, max abs "
                 "%g, max rel %g",
                 i, expected[i]->name ? expected[i]->name : "?", r.shape_match,
                 (long long)r.n_bad, r.max_abs_err, r.max_rel_err);
    if (r.max_abs_err > *max_abs)
      *max_abs = r.max_abs_err;
  }
  return 0;
}

static int first_model(char *path, size_t size) {
  const char *dir = getenv("MB_TEST_MODELS");
  if (!dir || !*dir)
    TEST_FAIL_("MB_TEST_MODELS is not set (ctest sets it)");
  snprintf(path, size, "%s/small_cnn.onnx", dir);
  return 0;
}

#endif /* MB_TESTS_RUNTIME_FIXTURE_H */
