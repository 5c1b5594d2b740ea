/* Status strings, error records, logging and dtype metadata. */
#include "core/internal.h"

#include <stdlib.h>
#include <strings.h>

static const char *const status_strings[] = {
#define MB_X(name, desc) desc,
    MB_STATUS_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(status_strings) == MB_STATUS_COUNT,
               "one string per status");

const char *mb_status_string(mb_status status) {
  if ((unsigned)status >= MB_STATUS_COUNT)
    return "unknown status";
  return status_strings[status];
}

void mb__assert_fail(const char *cond, const char *file, int line) {
  fprintf(stderr, "modelbench: internal error: %s at %s:%d\n", cond, file,
          line);
  abort();
}

mb_status mb__error(mb_error *err, mb_status status, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    err->status = status;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return status;
}

mb_status mb__error_prefix(mb_error *err, mb_status status, const char *fmt,
                           ...) {
  if (!err)
    return status;
  char prefix[MB_ERROR_MESSAGE_SIZE];
  char old[MB_ERROR_MESSAGE_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  char combined[2 * MB_ERROR_MESSAGE_SIZE + 4];
  memcpy(old, err->message, sizeof old);
  old[sizeof old - 1] = '\0';
  snprintf(combined, sizeof combined, old[0] ? "%s: %s" : "%s%s", prefix, old);
  memcpy(err->message, combined, sizeof err->message);
  err->message[sizeof err->message - 1] = '\0';
  if (err->status == MB_STATUS_OK)
    err->status = status;
  return err->status;
}

/* ---- logging ---- */

static int log_level = -1;

static mb_log_level log_level_from_env(void) {
  static const struct {
    const char *name;
    mb_log_level level;
  } names[] = {{"error", MB_LOG_ERROR},
               {"warn", MB_LOG_WARN},
               {"warning", MB_LOG_WARN},
               {"info", MB_LOG_INFO},
               {"debug", MB_LOG_DEBUG}};
  const char *env = getenv("MODELBENCH_LOG");
  if (env)
    for (size_t i = 0; i < MB_ARRAY_COUNT(names); i++)
      if (strcasecmp(env, names[i].name) == 0)
        return names[i].level;
  return MB_LOG_WARN;
}

void mb__log_set_level(mb_log_level level) {
  log_level = (int)level;
}

mb_log_level mb__log_get_level(void) {
  if (log_level < 0)
    log_level = (int)log_level_from_env();
  return (mb_log_level)log_level;
}

void mb__log(mb_log_level level, const char *fmt, ...) {
  static const char *const prefixes[] = {"error", "warning", "info", "debug"};
  if (level > mb__log_get_level())
    return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "modelbench: %s: ", prefixes[level]);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* ---- dtypes ---- */

typedef struct dtype_info {
  int id;
  size_t size;
  const char *name;
} dtype_info;

static const dtype_info dtype_table[] = {
#define MB_X(name, id, size, str) {id, size, str},
    MB_DTYPE_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(dtype_table) == MB_DTYPE_COUNT,
               "dtype ids must be contiguous from 0");

const char *mb_dtype_name(mb_dtype dtype) {
  if ((unsigned)dtype >= MB_DTYPE_COUNT)
    return "invalid";
  return dtype_table[dtype].name;
}

size_t mb_dtype_size(mb_dtype dtype) {
  if ((unsigned)dtype >= MB_DTYPE_COUNT)
    return 0;
  return dtype_table[dtype].size;
}

mb_dtype mb_dtype_from_name(const char *name) {
  static const struct {
    const char *alias;
    mb_dtype dtype;
  } aliases[] = {{"float", MB_DTYPE_FLOAT},   {"fp32", MB_DTYPE_FLOAT},
                 {"half", MB_DTYPE_FLOAT16},  {"fp16", MB_DTYPE_FLOAT16},
                 {"bf16", MB_DTYPE_BFLOAT16}, {"double", MB_DTYPE_DOUBLE},
                 {"fp64", MB_DTYPE_DOUBLE}};
  if (!name)
    return MB_DTYPE_UNDEFINED;
  for (int i = 1; i < MB_DTYPE_COUNT; i++)
    if (strcmp(name, dtype_table[i].name) == 0)
      return (mb_dtype)i;
  for (size_t i = 0; i < MB_ARRAY_COUNT(aliases); i++)
    if (strcmp(name, aliases[i].alias) == 0)
      return aliases[i].dtype;
  return MB_DTYPE_UNDEFINED;
}
