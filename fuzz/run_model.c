/* What the model-run fuzz targets share: load a (mutated) model, give it
 * seeded inputs of its declared shapes, and run it on the reference
 * interpreter or through a hybrid runtime (an engine's partition with the
 * reference for the rest). Models whose inputs or known FLOPs are large
 * are skipped and Loops stop sooner: the fuzzer is after edge cases, not
 * big work. */
#include "modelbench.h"
#include "ops/op.h"
#include "runtime/runtime.h"
#include "targets.h"

#include <stdlib.h>

#define MAX_INPUTS 16
#define MAX_OUTPUTS 16
#define MAX_INPUT_BYTES ((size_t)1 << 22)
#define MAX_FLOPS 2e7

/* Inputs for the model, or a status when it cannot be given any. */
static mb_status make_inputs(const mb_model *model, mb_tensor **inputs,
                             mb_error *err) {
  mb_model_stats stats;
  mb_input_shape shapes[MAX_INPUTS];
  int n = mb_model_input_count(model);
  if (n > MAX_INPUTS || mb_model_output_count(model) > MAX_OUTPUTS)
    return MB_STATUS_UNSUPPORTED;
  mb_status status = mb_model_resolve_input_shapes(model, NULL, shapes, err);
  if (status)
    return status;
  /* Eight bytes an element bounds every element type generated. */
  double bytes = 0;
  for (int i = 0; i < n; i++) {
    double numel = 1;
    for (int d = 0; d < shapes[i].rank; d++)
      numel *= (double)shapes[i].dims[d];
    bytes += 8 * numel;
  }
  if (bytes > (double)MAX_INPUT_BYTES)
    return MB_STATUS_UNSUPPORTED;
  status = mb_model_analyze(model, NULL, &stats, err);
  if (status)
    return status;
  bool too_big = stats.total_flops > MAX_FLOPS;
  mb_model_stats_free(&stats);
  if (too_big)
    return MB_STATUS_UNSUPPORTED;
  /* Small values, negative ones too: integer inputs are shapes, pads,
   * axes and indices as often as data, and edge cases live near zero. */
  mb_input_range range = {NULL, -2, 3};
  return mb_inputs_generate(model, NULL, 1, 1, &range, inputs, err);
}

static void run_reference(const mb_model *model, mb_tensor **inputs) {
  mb_session *session = NULL;
  mb_tensor *outputs[MAX_OUTPUTS] = {0};
  mb_error err;
  int n_out = mb_model_output_count(model);
  if (mb_session_create(model, NULL, &session, &err))
    return;
  /* Twice: the second run reuses the buffers the first one sized. */
  for (int run = 0; run < 2; run++) {
    if (mb_session_run(session, mb_model_input_count(model),
                       (const mb_tensor *const *)inputs, n_out, outputs, &err))
      break;
    for (int i = 0; i < n_out; i++) {
      mb_tensor_free(outputs[i]);
      outputs[i] = NULL;
    }
  }
  mb_session_free(session);
}

static void run_hybrid(const mb_model *model, const char *runtime,
                       mb_precision precision, mb_tensor **inputs) {
  const mb_runtime *rt = mb__runtime_find(runtime);
  mb_runtime_info info = {.name = runtime};
  mb_partition *p = NULL;
  void *session = NULL;
  mb_tensor *outputs[MAX_OUTPUTS] = {0};
  mb_error err;
  if (!rt)
    return;
  rt->probe(&info);
  if (!info.available)
    return;
  if (mb_model_partition(model, runtime, precision, NULL, &p, &err))
    return;
  int native = p->n_native_nodes;
  mb_partition_free(p);
  if (!native)
    return;
  static const mb_tensor *const no_inputs[1] = {NULL};
  mb_runtime_options options = {
      .threads = 1,
      .precision = precision,
      .example_inputs = mb_model_input_count(model)
                            ? (const mb_tensor *const *)inputs
                            : no_inputs,
  };
  if (rt->prepare(model, NULL, 0, &options, &session, &err))
    return;
  for (int run = 0; run < 2; run++)
    if (rt->run(session, (const mb_tensor *const *)inputs, &err))
      break;
  if (rt->fetch_outputs(session, outputs, &err) == MB_STATUS_OK)
    for (int i = 0; i < mb_model_output_count(model); i++)
      mb_tensor_free(outputs[i]);
  rt->release(session);
}

int mb__fuzz_run_model(const uint8_t *data, size_t size, int hybrid) {
  mb_model *model = NULL;
  mb_tensor *inputs[MAX_INPUTS] = {0};
  mb_error err;
  /* Loops count too: 2^12 iterations find what 2^20 would, in a unit's
   * time. */
  mb__loop_max_iterations = (int64_t)1 << 12;
  if (mb_model_load_memory(data, size, NULL, &model, &err))
    return 0;
  if (make_inputs(model, inputs, &err) == MB_STATUS_OK) {
    if (!hybrid) {
      run_reference(model, inputs);
    } else {
      /* The last byte picks a precision each engine computes in, so the
       * corpus covers them all without a format of its own. */
      unsigned pick = size ? data[size - 1] : 0;
      run_hybrid(model, "xnnpack",
                 pick & 1 ? MB_PRECISION_FP16 : MB_PRECISION_FP32, inputs);
      run_hybrid(model, "onednn",
                 pick & 2 ? MB_PRECISION_BF16 : MB_PRECISION_FP32, inputs);
    }
    for (int i = 0; i < mb_model_input_count(model); i++)
      mb_tensor_free(inputs[i]);
  }
  mb_model_free(model);
  return 0;
}
