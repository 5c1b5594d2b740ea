/* Where a benchmark's inputs come from: generated from the model's signature
 * (seeded), a folder of ONNX test sets (test_data_set_N folders of input_N.pb)
 * or of .npy files, or the C API's loader callback. The parent process opens
 * the source and materialises every sample before any worker starts, so every
 * conversion sees the same bytes. */
#ifndef MB_BENCH_DATA_H
#define MB_BENCH_DATA_H

#include "core/ir.h"

typedef struct mb_input_source mb_input_source;

/* Opens the source the config selects. model, config: borrowed, must
 * outlive the source. Fails with a message naming the folder/file/input on
 * wrong dtype, wrong rank/shape vs the model's declaration, missing files,
 * or unresolvable dynamic dims. */
mb_status mb__input_source_open(const mb_model *model,
                                const mb_bench_config *config,
                                mb_input_source **source_out, mb_error *err);
/* Number of distinct input batches (>= 1). */
int64_t mb__input_source_count(const mb_input_source *source);
/* Concrete shapes of the inputs (mb_model_input_count entries, borrowed). */
const mb_input_shape *mb__input_source_shapes(const mb_input_source *source);
/* Sample `index` (0 .. count-1): new tensors, one per graph input in order,
 * owned by the caller. */
mb_status mb__input_source_get(mb_input_source *source, int64_t index,
                               mb_tensor **inputs_out, mb_error *err);
void mb__input_source_close(mb_input_source *source);

/* ---- NumPy files (npy.c) ---- */

/* Reads a NumPy .npy file (format 1.0-3.0, little-endian or byte-order
 * free, C order; f2/f4/f8, i1-i8, u1-u8, b1). Fortran order, big-endian
 * data and other dtypes fail with MB_STATUS_UNSUPPORTED naming the file.
 * *tensor_out: release with mb_tensor_free. */
mb_status mb__npy_load(const char *path, mb_tensor **tensor_out, mb_error *err);
/* The same from the bytes of one (data, size: borrowed); `path` names them
 * in messages. */
mb_status mb__npy_parse(const void *data, size_t size, const char *path,
                        mb_tensor **tensor_out, mb_error *err);

/* The arrays of a .npz archive (numpy.savez, numpy.savez_compressed), in
 * archive order; names without ".npy". Owns everything in it. */
typedef struct mb_npz {
  int count;
  char **names;
  mb_tensor **tensors;
} mb_npz;
/* Reads every array of the archive at path (stored or deflated members,
 * zip64 records as numpy writes them). A malformed or truncated archive
 * fails with MB_STATUS_PARSE, an encrypted member or another compression
 * method with MB_STATUS_UNSUPPORTED, each naming the file (and member).
 * *npz_out: release with mb__npz_free. */
mb_status mb__npz_load(const char *path, mb_npz *npz_out, mb_error *err);
/* Releases what npz holds and zeroes it; NULL is a no-op. */
void mb__npz_free(mb_npz *npz);
/* Writes t to path as a .npy file (format 1.0, little-endian, C order) that
 * mb__npy_load and numpy.load read back. */
mb_status mb__npy_save(const char *path, const mb_tensor *t, mb_error *err);

#endif /* MB_BENCH_DATA_H */
