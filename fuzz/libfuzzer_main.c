/* libFuzzer's entry points for one target, chosen at compile time with
 * -DMB_FUZZ_TARGET=<name> (fuzz/CMakeLists.txt builds one executable per
 * line of MB_FUZZ_TARGET_LIST). */
#include "targets.h"

#define MB_FUZZ_FN_(name) mb__fuzz_##name
#define MB_FUZZ_FN(name) MB_FUZZ_FN_(name)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__asan_default_options(void);

/* A request for more than 128 MiB returns NULL, as malloc may on any
 * machine: the library must answer it with an out-of-memory status, and
 * the fuzzer is not stopped by a mutated shape's honest huge allocation. */
const char *__asan_default_options(void) {
  return "allocator_may_return_null=1:max_allocation_size_mb=128";
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  mb__fuzz_init();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return MB_FUZZ_FN(MB_FUZZ_TARGET)(data, size);
}
