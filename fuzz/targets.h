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

/* One line per fuzz/targets/<name>.c. */
#define MB_FUZZ_TARGET_LIST(X) X(loader)

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

#endif /* MB_FUZZ_TARGETS_H */
