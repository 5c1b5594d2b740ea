/* Test-set inputs as NumPy `.npy` files (the --inputs folder of .npy
 * files, and --labels): header dict, dtype, shape and data length. */
#include "bench/data.h"
#include "modelbench.h"
#include "targets.h"

int mb__fuzz_npy(const uint8_t *data, size_t size) {
  const char *path = mb__fuzz_write_file("x.npy", data, size);
  mb_tensor *tensor = NULL;
  mb_error err;
  if (path && mb__npy_load(path, &tensor, &err) == MB_STATUS_OK)
    mb_tensor_free(tensor);
  return 0;
}
