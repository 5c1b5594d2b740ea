/* Placeholder until the ONNX Runtime adapter lands (being written). */
#include "runtime/runtime.h"

static void ort_probe(mb_runtime_info *info) {
  info->available = 0;
  snprintf(info->reason, sizeof info->reason, "adapter not built yet");
}

const mb_runtime mb__runtime_onnxruntime = {.name = "onnxruntime",
                                            .probe = ort_probe};
