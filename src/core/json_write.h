/* A tiny streaming JSON writer for every JSON file and output modelbench
 * writes.
 *
 * Calls must nest correctly (begin/end pairs, a key before each value inside
 * an object); the writer inserts commas and indentation. Strings are escaped
 * and invalid UTF-8 is replaced by U+FFFD, so the output is always valid
 * JSON. Non-finite doubles are written as null. */
#ifndef MB_CORE_JSON_WRITE_H
#define MB_CORE_JSON_WRITE_H

#include "core/internal.h"

#define MB_JSON_MAX_DEPTH 32

typedef struct mb_json {
  FILE *out; /* borrowed */
  bool pretty;
  bool after_key;
  int depth;
  bool has_items[MB_JSON_MAX_DEPTH]; /* per open container */
} mb_json;

/* out: borrowed, must outlive the writer. pretty: indent by two spaces. */
void mb__json_init(mb_json *j, FILE *out, bool pretty);
void mb__json_object_begin(mb_json *j);
void mb__json_object_end(mb_json *j);
void mb__json_array_begin(mb_json *j);
void mb__json_array_end(mb_json *j);
void mb__json_key(mb_json *j, const char *key);
void mb__json_string(mb_json *j, const char *s); /* NULL writes null */
/* Writes the first len bytes of s (which may contain NUL). */
void mb__json_string_n(mb_json *j, const char *s, size_t len);
void mb__json_int(mb_json *j, int64_t v);
void mb__json_double(mb_json *j, double v);
void mb__json_bool(mb_json *j, bool v);
void mb__json_null(mb_json *j);

/* Key + value shorthands. */
void mb__json_kv_string(mb_json *j, const char *key, const char *s);
void mb__json_kv_int(mb_json *j, const char *key, int64_t v);
void mb__json_kv_double(mb_json *j, const char *key, double v);
void mb__json_kv_bool(mb_json *j, const char *key, bool v);

#endif
