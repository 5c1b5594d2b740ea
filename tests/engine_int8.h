/* Shared by the engine tests' INT8 cases (test_engine_onednn.c,
 * test_engine_xnnpack.c): the quantisation parameters the quant_params
 * build step would make for a small test graph. Include after test.h. */
#ifndef MB_TESTS_ENGINE_INT8_H
#define MB_TESTS_ENGINE_INT8_H

#include "passes/passes.h"
#include "passes/quantize.h"

#define ENGINE_INT8_BATCHES 8
#define ENGINE_INT8_MAX_INPUTS 8

/* model (finalised) calibrated on ENGINE_INT8_BATCHES batches: `inputs`
 * (n_inputs tensors, borrowed) first, then batches of the same shapes
 * drawn uniformly from [lo, hi) with rnd01; then the static quantisation
 * worked out on a copy, which adds the weight entries. *out: release with
 * mb__quant_params_free. Returns 0, or 1 after printing why. */
static int engine_int8_params(const mb_model *model, mb_tensor *const *inputs,
                              int n_inputs, float lo, float hi,
                              float (*rnd01)(void), const mb_quant_options *qo,
                              mb_quant_params **out, mb_error *err) {
  mb_tensor *extra[ENGINE_INT8_BATCHES][ENGINE_INT8_MAX_INPUTS];
  const mb_tensor *const *batches[ENGINE_INT8_BATCHES];
  mb_model *copy = NULL;
  int rc = 1;
  memset(extra, 0, sizeof extra);
  ASSERT(n_inputs <= ENGINE_INT8_MAX_INPUTS);
  batches[0] = (const mb_tensor *const *)inputs;
  for (int b = 1; b < ENGINE_INT8_BATCHES; b++) {
    for (int i = 0; i < n_inputs; i++) {
      const mb_tensor *t = inputs[i];
      if (mb_tensor_create(t->dtype, t->rank, t->dims, &extra[b][i], err)) {
        fprintf(stderr, "  calibration batch: %s\n", err->message);
        goto done;
      }
      for (int64_t k = 0; k < t->numel; k++)
        mb__tensor_set_f64(extra[b][i], k, lo + (hi - lo) * rnd01());
    }
    batches[b] = (const mb_tensor *const *)extra[b];
  }
  if (mb__calibrate(model, batches, ENGINE_INT8_BATCHES, qo, out, err) ||
      mb__model_clone(model, &copy, err) ||
      mb__quantize_static(copy, *out, qo, NULL, err)) {
    fprintf(stderr, "  quantisation failed: %s\n", err->message);
    goto done;
  }
  rc = 0;
done:
  mb_model_free(copy);
  for (int b = 1; b < ENGINE_INT8_BATCHES; b++)
    for (int i = 0; i < n_inputs; i++)
      mb_tensor_free(extra[b][i]);
  return rc;
}

#endif /* MB_TESTS_ENGINE_INT8_H */
