/* The runtime registry: the built-in adapters of MB_RUNTIME_LIST plus any
 * registered at run time (tests). */
#include "runtime/runtime.h"

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
