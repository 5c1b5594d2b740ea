/* The fuzz targets: one file per input surface under fuzz/targets/, each
 * defining mb__fuzz_<name>(data, size), which feeds the bytes to the
 * library and returns 0 (anything the library refuses with a status is
 * fine; a crash, a leak, undefined behaviour or a hang is a bug). The
 * libFuzzer executables (fuzz/libfuzzer_main.c, one per target, `make fuzz`)
 * and the regression replay of the normal suite
 * (tests/test_fuzz_regressions.c over fuzz/regressions/<name>/) call them
 * the same way. */
#ifndef MB_FUZZ_TARGETS_H
#define MB_FUZZ_TARGETS_H

#include <stddef.h>
#include <stdint.h>

/* One line per fuzz/targets/<name>.c, in the order fuzz/run.sh runs them. */
/* clang-format off */
#define MB_FUZZ_TARGET_LIST(X)                                                 \
  X(loader)                                                                    \
  X(model_run)                                                                 \
  X(model_hybrid)                                                              \
  X(config)                                                                    \
  X(tensor_pb)                                                                 \
  X(npy)                                                                       \
  X(build_state)                                                               \
  X(compare_json)                                                              \
  X(model_files)
/* clang-format on */

#define MB_X(name) int mb__fuzz_##name(const uint8_t *data, size_t size);
MB_FUZZ_TARGET_LIST(MB_X)
#undef MB_X

/* Quiets the library's warnings (odd inputs would flood the output); call
 * once before the first input. */
void mb__fuzz_init(void);

/* Writes data into a file named `name` in this process's scratch folder
 * (created on first use, removed at exit) and returns its path, or NULL
 * when it cannot (the input is then skipped). The path stays valid until
 * the next call with the same name. name: borrowed. */
const char *mb__fuzz_write_file(const char *name, const uint8_t *data,
                                size_t size);

/* The scratch folder itself, or NULL when it cannot be made. */
const char *mb__fuzz_scratch_dir(void);

/* Loads an ONNX model from the bytes and runs it with seeded inputs on the
 * reference interpreter (hybrid 0) or through the XNNPACK and oneDNN hybrid
 * runtimes (hybrid 1); returns 0. Large models are skipped. */
int mb__fuzz_run_model(const uint8_t *data, size_t size, int hybrid);

/* Parses data[0..size) as an ONNX model, makes one to three structural
 * edits (fuzz/mutate_model.c) and writes the model back into data (at
 * most max_size bytes). Returns the new size, or 0 when the bytes are not
 * a model or the result would not fit (data is then unchanged). */
size_t mb__fuzz_mutate_model(uint8_t *data, size_t size, size_t max_size,
                             unsigned seed);

/* libFuzzer's custom mutator for the model targets: structural edits most
 * of the time, libFuzzer's byte-level ones otherwise and whenever the
 * bytes are no model. */
#define MB_FUZZ_MODEL_MUTATOR                                                  \
  size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);        \
  size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,  \
                                 unsigned int seed);                           \
  size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,  \
                                 unsigned int seed) {                          \
    size_t out =                                                               \
        seed % 5 ? mb__fuzz_mutate_model(data, size, max_size, seed) : 0;      \
    return out ? out : LLVMFuzzerMutate(data, size, max_size);                 \
  }

#endif /* MB_FUZZ_TARGETS_H */
