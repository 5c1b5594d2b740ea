/* Names of the public enums (device, precision, int8 form, bench status,
 * model format), one X-macro table each; the syntax of a run's labels; the
 * edit distance that ranks "did you mean" suggestions. Every layer names
 * these, so they live in core. */
#include "core/internal.h"

#include <ctype.h>
#include <string.h>

/* X(NAME, "name") tables of the public enums. */
static const char *const device_names[] = {
#define MB_X(name, str) str,
    MB_DEVICE_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(device_names) == MB_DEVICE_COUNT,
               "one name per device");

static const char *const precision_names[] = {
#define MB_X(name, str) str,
    MB_PRECISION_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(precision_names) == MB_PRECISION_COUNT,
               "one name per precision");

static const char *const bench_status_names[] = {
#define MB_X(name, str) str,
    MB_BENCH_STATUS_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(bench_status_names) == MB_BENCH_STATUS_COUNT,
               "one name per bench status");

static const char *const format_names[] = {
#define MB_X(name, str) str,
    MB_MODEL_FORMAT_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(format_names) == MB_MODEL_FORMAT_COUNT,
               "one name per model format");

const char *mb_model_format_name(mb_model_format format) {
  return (unsigned)format < MB_MODEL_FORMAT_COUNT ? format_names[format]
                                                  : "invalid";
}

const char *mb_device_name(mb_device device) {
  return (unsigned)device < MB_DEVICE_COUNT ? device_names[device] : "invalid";
}

const char *mb_precision_name(mb_precision precision) {
  return (unsigned)precision < MB_PRECISION_COUNT ? precision_names[precision]
                                                  : "invalid";
}

static const char *const roofline_bound_names[] = {
#define MB_X(name, str) str,
    MB_ROOFLINE_BOUND_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(roofline_bound_names) == MB_ROOFLINE_BOUND_COUNT,
               "roofline_bound_names");

const char *mb_roofline_bound_name(mb_roofline_bound bound) {
  return (unsigned)bound < MB_ROOFLINE_BOUND_COUNT ? roofline_bound_names[bound]
                                                   : "invalid";
}

static const char *const accuracy_criterion_names[] = {
#define MB_X(name, str) str,
    MB_ACCURACY_CRITERION_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(accuracy_criterion_names) ==
                   MB_ACCURACY_CRITERION_COUNT,
               "one name per accuracy criterion");

const char *mb_accuracy_criterion_name(mb_accuracy_criterion criterion) {
  return (unsigned)criterion < MB_ACCURACY_CRITERION_COUNT
             ? accuracy_criterion_names[criterion]
             : "invalid";
}

int mb_accuracy_criterion_from_name(const char *name) {
  for (int i = 0; name && i < MB_ACCURACY_CRITERION_COUNT; i++)
    if (strcmp(name, accuracy_criterion_names[i]) == 0)
      return i;
  return -1;
}

static const char *const int8_weights_names[] = {
#define MB_X(name, str) str,
    MB_INT8_WEIGHTS_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(int8_weights_names) == MB_INT8_WEIGHTS_COUNT,
               "one name per int8 form");

const char *mb_int8_weights_name(mb_int8_weights weights) {
  return (unsigned)weights < MB_INT8_WEIGHTS_COUNT ? int8_weights_names[weights]
                                                   : "invalid";
}

int mb_int8_weights_from_name(const char *name) {
  for (int i = 0; name && i < MB_INT8_WEIGHTS_COUNT; i++)
    if (strcmp(name, int8_weights_names[i]) == 0)
      return i;
  return -1;
}

const char *mb_bench_status_name(mb_bench_status status) {
  return (unsigned)status < MB_BENCH_STATUS_COUNT ? bench_status_names[status]
                                                  : "invalid";
}

int mb_bench_status_failed(mb_bench_status status) {
  static const bool failed[MB_BENCH_STATUS_COUNT] = {[MB_BENCH_ERROR] = true,
                                                     [MB_BENCH_TIMEOUT] = true,
                                                     [MB_BENCH_CRASHED] = true};
  return (unsigned)status >= MB_BENCH_STATUS_COUNT || failed[status];
}

/* ---- labels ---- */

mb_status mb__check_label(const char *label, mb_error *err) {
  const char *eq = label ? strchr(label, '=') : NULL;
  if (!eq || eq == label)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "label '%s': expected KEY=VALUE", label ? label : "");
  for (const char *p = label; p < eq; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          (*p >= '0' && *p <= '9') || strchr("_-./", *p)))
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "label '%s': the key may only hold letters, digits, "
                       "'_', '-', '.' and '/'",
                       label);
  return MB_STATUS_OK;
}

/* ---- suggestions ---- */

int mb__edit_distance(const char *a, const char *b) {
  /* Optimal string alignment (Levenshtein plus adjacent transpositions),
   * case-insensitive: "ORT_CUP" is one edit from "ORT_CPU". Three rows of
   * the DP matrix suffice; names are short, longer inputs are clamped. */
  enum { MAX_LEN = 127 };
  int rows[3][MAX_LEN + 2];
  size_t la = MB_MIN(strlen(a), (size_t)MAX_LEN);
  size_t lb = MB_MIN(strlen(b), (size_t)MAX_LEN);
  int *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
  for (size_t j = 0; j <= lb; j++)
    prev[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    cur[0] = (int)i;
    int ca = toupper((unsigned char)a[i - 1]);
    for (size_t j = 1; j <= lb; j++) {
      int cb = toupper((unsigned char)b[j - 1]);
      int best = prev[j - 1] + (ca != cb);
      best = MB_MIN(best, prev[j] + 1);
      best = MB_MIN(best, cur[j - 1] + 1);
      if (i > 1 && j > 1 && ca == toupper((unsigned char)b[j - 2]) &&
          toupper((unsigned char)a[i - 2]) == cb)
        best = MB_MIN(best, prev2[j - 2] + 1);
      cur[j] = best;
    }
    int *t = prev2;
    prev2 = prev;
    prev = cur;
    cur = t;
  }
  return prev[lb];
}
