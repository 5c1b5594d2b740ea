/* The model-run target through the hybrid runtimes: each (structurally
 * mutated) model is partitioned for XNNPACK and for oneDNN, prepared for
 * the generated inputs and run, the engine's segments natively and the
 * rest on the reference interpreter. The input's last byte picks the
 * precision (fp32 or fp16 on XNNPACK, fp32 or bf16 on oneDNN); an engine
 * or precision this machine lacks is skipped. */
#include "targets.h"

int mb__fuzz_model_hybrid(const uint8_t *data, size_t size) {
  return mb__fuzz_run_model(data, size, 1);
}

#ifdef MB_FUZZ_LIBFUZZER
MB_FUZZ_MODEL_MUTATOR
#endif
