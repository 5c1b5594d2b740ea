/* The runtime registry: the built-in adapters of MB_RUNTIME_LIST plus any
 * registered at run time (tests). Also the sanitizer builds' hooks for the
 * libraries runtimes load. */
#define _GNU_SOURCE /* RTLD_NEXT, RTLD_DEEPBIND */
#include "runtime/runtime.h"

/* ---- sanitizer builds ---- */

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MB_RUNTIME_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(MB_RUNTIME_ASAN)
/* Runtimes we load keep allocations LeakSanitizer calls leaks: ONNX Runtime
 * 1.30 leaks 14 bytes inside libonnxruntime once per process when its first
 * OrtEnv is created (releasing the env does not free them); OpenVINO's
 * plugins and TBB keep process-lifetime caches that its C API gives no way
 * to free. Either would fail every sanitizer run that touches them.
 * LeakSanitizer reads these hooks from the executable; the env var
 * LSAN_OPTIONS still overrides the options. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:libonnxruntime.so\n"
         "leak:libopenvino\n"
         "leak:libtbb\n";
}
const char *__lsan_default_options(void);
const char *__lsan_default_options(void) {
  return "print_suppressions=0";
}

#include <dlfcn.h>
/* OpenVINO's TBB dlopens libtbbbind with RTLD_DEEPBIND, which
 * AddressSanitizer refuses (it aborts the process: google/sanitizers#611).
 * The executable exports this dlopen, so the libraries it loads call it
 * first: it drops that one flag (nothing else in the process defines
 * hwloc's symbols, so the lookup order it asks for changes nothing) and
 * hands the call on to the sanitizer's own dlopen. Sanitizer builds only. */
void *dlopen(const char *file, int mode) {
  void *(*next)(const char *, int);
  *(void **)&next = dlsym(RTLD_NEXT, "dlopen");
  return next ? next(file, mode & ~RTLD_DEEPBIND) : NULL;
}
#endif

static const mb_runtime *const builtin[] = {
#define MB_X(name) &mb__runtime_##name,
    MB_RUNTIME_LIST(MB_X)
#undef MB_X
};

#define MB_MAX_EXTRA_RUNTIMES 16
static const mb_runtime *extra[MB_MAX_EXTRA_RUNTIMES];
static int n_extra;

int mb_runtime_count(void) {
  return (int)MB_ARRAY_COUNT(builtin) + n_extra;
}

static const mb_runtime *runtime_at(int index) {
  if (index < 0)
    return NULL;
  if (index < (int)MB_ARRAY_COUNT(builtin))
    return builtin[index];
  index -= (int)MB_ARRAY_COUNT(builtin);
  return index < n_extra ? extra[index] : NULL;
}

mb_status mb_runtime_get(int index, mb_runtime_info *info_out, mb_error *err) {
  const mb_runtime *rt = runtime_at(index);
  if (!rt)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "runtime index %d is out of range", index);
  memset(info_out, 0, sizeof *info_out);
  info_out->name = rt->name;
  rt->probe(info_out);
  return MB_STATUS_OK;
}

const mb_runtime *mb__runtime_find(const char *name) {
  for (int i = 0; i < mb_runtime_count(); i++)
    if (strcmp(runtime_at(i)->name, name) == 0)
      return runtime_at(i);
  return NULL;
}

mb_status mb__runtime_register(const mb_runtime *rt, mb_error *err) {
  if (mb__runtime_find(rt->name))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "runtime '%s' is already registered", rt->name);
  if (n_extra == MB_MAX_EXTRA_RUNTIMES)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "at most %d runtimes can be registered",
                     MB_MAX_EXTRA_RUNTIMES);
  extra[n_extra++] = rt;
  return MB_STATUS_OK;
}
