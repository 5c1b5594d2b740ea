/* Models run on the reference interpreter with generated inputs: each
 * input is an ONNX model (seeds: the backend test suite's), which libFuzzer
 * mutates structurally (fuzz/mutate_model.c: attributes, shapes, element
 * types, initializers, opsets, wiring) as well as byte by byte. Kernels
 * are where the crashes hide: every fix before this target was an operator
 * on an edge case. */
#include "targets.h"

int mb__fuzz_model_run(const uint8_t *data, size_t size) {
  return mb__fuzz_run_model(data, size, 0);
}

#ifdef MB_FUZZ_LIBFUZZER
MB_FUZZ_MODEL_MUTATOR
#endif
