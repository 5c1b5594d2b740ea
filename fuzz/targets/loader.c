/* Arbitrary bytes through the ONNX reader, then, for whatever loads,
 * through analysis (shape inference, FLOPs) and session creation. Nothing a
 * model file contains may crash, hang or leak. */
#include "modelbench.h"
#include "targets.h"

int mb__fuzz_loader(const uint8_t *data, size_t size) {
  mb_model *model = NULL;
  mb_session *session = NULL;
  mb_model_stats stats;
  mb_error err;
  if (mb_model_load_memory(data, size, NULL, &model, &err) != MB_STATUS_OK)
    return 0;
  if (mb_model_analyze(model, NULL, &stats, &err) == MB_STATUS_OK)
    mb_model_stats_free(&stats);
  if (mb_session_create(model, NULL, &session, &err) == MB_STATUS_OK)
    mb_session_free(session);
  mb_model_free(model);
  return 0;
}
