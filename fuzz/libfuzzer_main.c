/* libFuzzer's entry points for one target, chosen at compile time with
 * -DMB_FUZZ_TARGET=<name> (fuzz/CMakeLists.txt builds one executable per
 * line of MB_FUZZ_TARGET_LIST). */
#include "targets.h"

#define MB_FUZZ_FN_(name) mb__fuzz_##name
#define MB_FUZZ_FN(name) MB_FUZZ_FN_(name)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
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
