/* Test-set inputs: a TensorProto file (`input_N.pb` of a test_data_set_*
 * folder), read as a tensor, and the same bytes as a sequence or optional
 * value as the conformance runner reads them. */
#include "core/ir.h"
#include "core/sequence.h"
#include "modelbench.h"
#include "targets.h"

int mb__fuzz_tensor_pb(const uint8_t *data, size_t size) {
  const char *path = mb__fuzz_write_file("input_0.pb", data, size);
  mb_tensor *tensor = NULL;
  mb_error err;
  if (!path)
    return 0;
  if (mb_tensor_load_pb(path, &tensor, &err) == MB_STATUS_OK) {
    mb_tensor *copy = NULL;
    if (mb_tensor_clone(tensor, &copy, &err) == MB_STATUS_OK)
      mb_tensor_free(copy);
    mb_tensor_free(tensor);
  }
  for (int type = MB_VALUE_TYPE_SEQUENCE;
       type <= MB_VALUE_TYPE_OPTIONAL_SEQUENCE; type++) {
    mb__sequence seq = {0};
    tensor = NULL;
    if (mb__value_load_pb(path, type, &tensor, &seq, &err) == MB_STATUS_OK)
      mb_tensor_free(tensor);
    mb__sequence_free(&seq);
  }
  return 0;
}
