/* A small strict JSON parser (RFC 8259) for config files and saved reports.
 *
 * Strict on purpose: a config file with a trailing comma, a comment, a
 * duplicate key or a NaN is a mistake the user wants to hear about, with
 * its line and column. The whole document is parsed into a tree held in one
 * arena and freed with mb__json_doc_free. */
#ifndef MB_CORE_JSON_PARSE_H
#define MB_CORE_JSON_PARSE_H

#include "core/internal.h"

/* X(NAME, "name") */
#define MB_JSON_TYPE_LIST(X)                                                   \
  X(NULL, "null")                                                              \
  X(BOOL, "boolean")                                                           \
  X(NUMBER, "number")                                                          \
  X(STRING, "string")                                                          \
  X(ARRAY, "array")                                                            \
  X(OBJECT, "object")

typedef enum mb_json_type {
#define MB_X(name, str) MB_JSON_##name,
  MB_JSON_TYPE_LIST(MB_X)
#undef MB_X
      MB_JSON_TYPE_COUNT
} mb_json_type;

typedef struct mb_json_member mb_json_member;

typedef struct mb_json_value {
  mb_json_type type;
  int line, column; /* where the value starts, both from 1 */
  bool boolean;
  double number;
  /* For numbers written without fraction or exponent that fit: the exact
   * value (doubles lose precision above 2^53, seeds and sizes must not). */
  bool is_integer;
  int64_t integer;
  char *string;      /* NUL-terminated UTF-8 */
  size_t string_len; /* may be shorter than strlen when it holds \u0000 */
  size_t count;      /* array items or object members */
  struct mb_json_value *items; /* arrays, in document order */
  mb_json_member *members;     /* objects, in document order */
} mb_json_value;

struct mb_json_member {
  const char *key; /* NUL-terminated */
  size_t key_len;
  int line, column; /* where the key starts */
  mb_json_value value;
};

typedef struct mb_json_doc {
  mb_json_value root;
  mb_arena *arena; /* everything above lives here */
} mb_json_doc;

/* Parses text (size bytes, need not be NUL-terminated). source names the
 * text in messages, which read "SOURCE:LINE:COL: what is wrong" (columns
 * count characters from 1). Fails with MB_STATUS_PARSE on malformed JSON,
 * invalid UTF-8, duplicate keys, nesting deeper than 256, numbers outside
 * the double range, or trailing content; MB_STATUS_OUT_OF_MEMORY on OOM.
 * text, source: borrowed. *doc_out: release with mb__json_doc_free. */
mb_status mb__json_parse(const char *text, size_t size, const char *source,
                         mb_json_doc **doc_out, mb_error *err);
/* Reads and parses a file; messages name the path. */
mb_status mb__json_parse_file(const char *path, mb_json_doc **doc_out,
                              mb_error *err);
void mb__json_doc_free(mb_json_doc *doc);

/* The member of an object named key, or NULL (also for non-objects). */
const mb_json_value *mb__json_find(const mb_json_value *object,
                                   const char *key);
/* "object", "string", ... */
const char *mb__json_type_name(mb_json_type type);
/* An error about the value v of a document read from path: "PATH:LINE:
 * COLUMN: message", MB_STATUS_PARSE. Returns that status. */
mb_status mb__json_value_error(mb_error *err, const char *path,
                               const mb_json_value *v, const char *fmt, ...)
    MB_PRINTF(4, 5);

#endif /* MB_CORE_JSON_PARSE_H */
