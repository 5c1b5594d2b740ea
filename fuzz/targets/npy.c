/* Test-set inputs as NumPy files (--inputs: a .npy file or a folder of
 * them, a .npz archive; --labels): the .npy header dict, dtype, shape and
 * data length; the .npz zip records (end, zip64, central directory, local
 * headers) and deflated members. An input starting "PK" is read as a .npz
 * archive, anything else as a .npy file. */
#include "bench/data.h"
#include "modelbench.h"
#include "targets.h"

int mb__fuzz_npy(const uint8_t *data, size_t size) {
  mb_error err;
  if (size >= 2 && data[0] == 'P' && data[1] == 'K') {
    const char *path = mb__fuzz_write_file("x.npz", data, size);
    mb_npz npz;
    if (path && mb__npz_load(path, &npz, &err) == MB_STATUS_OK)
      mb__npz_free(&npz);
    return 0;
  }
  const char *path = mb__fuzz_write_file("x.npy", data, size);
  mb_tensor *tensor = NULL;
  if (path && mb__npy_load(path, &tensor, &err) == MB_STATUS_OK)
    mb_tensor_free(tensor);
  return 0;
}
