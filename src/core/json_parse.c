/* Strict JSON parser: recursive descent over the bytes, tracking line and
 * column so that every message points at the offending character. Arrays
 * and objects are collected in temporary growable buffers and copied into
 * the document's arena once complete, so the tree is freed in one call. */
#include "core/json_parse.h"

#include <errno.h>
#include <stdlib.h>

#define MB_JSON_MAX_NESTING 256

typedef struct parser {
  const char *p, *end;
  int line, column; /* of the next byte */
  const char *source;
  mb_arena *arena;
  mb_error *err;
  int depth;
} parser;

static const char *const type_names[] = {
#define MB_X(name, str) str,
    MB_JSON_TYPE_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(type_names) == MB_JSON_TYPE_COUNT,
               "one name per JSON type");

const char *mb__json_type_name(mb_json_type type) {
  return (unsigned)type < MB_JSON_TYPE_COUNT ? type_names[type] : "invalid";
}

/* ---- errors ---- */

mb_status mb__json_value_error(mb_error *err, const char *path,
                               const mb_json_value *v, const char *fmt, ...) {
  char msg[MB_ERROR_MESSAGE_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mb__error(err, MB_STATUS_PARSE, "%s:%d:%d: %s", path, v->line,
                   v->column, msg);
}

static mb_status fail_at(parser *ps, int line, int column, const char *fmt, ...)
    MB_PRINTF(4, 5);
static mb_status fail_at(parser *ps, int line, int column, const char *fmt,
                         ...) {
  char msg[MB_ERROR_MESSAGE_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mb__error(ps->err, MB_STATUS_PARSE, "%s:%d:%d: %s", ps->source, line,
                   column, msg);
}

static mb_status oom(parser *ps) {
  return mb__error(ps->err, MB_STATUS_OUT_OF_MEMORY,
                   "%s: out of memory parsing JSON", ps->source);
}

/* Describes the next byte for "unexpected X" messages. */
static const char *describe_next(const parser *ps, char *buf, size_t size) {
  if (ps->p >= ps->end)
    return "end of input";
  unsigned char c = (unsigned char)*ps->p;
  if (c >= 0x20 && c < 0x7f)
    snprintf(buf, size, "'%c'", c);
  else
    snprintf(buf, size, "byte 0x%02x", c);
  return buf;
}

static mb_status unexpected(parser *ps, const char *expected) {
  char what[16];
  return fail_at(ps, ps->line, ps->column, "unexpected %s, expected %s",
                 describe_next(ps, what, sizeof what), expected);
}

/* ---- scanning ---- */

static void advance(parser *ps) {
  unsigned char c = (unsigned char)*ps->p++;
  if (c == '\n') {
    ps->line++;
    ps->column = 1;
  } else if ((c & 0xc0) != 0x80) {
    /* Continuation bytes of UTF-8 sequences do not start a new column. */
    ps->column++;
  }
}

static void skip_space(parser *ps) {
  while (ps->p < ps->end &&
         (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
    advance(ps);
}

static int peek(const parser *ps) {
  return ps->p < ps->end ? (unsigned char)*ps->p : -1;
}

/* ---- growable scratch buffer ---- */

typedef struct buffer {
  char *data;
  size_t len, cap;
} buffer;

static bool buffer_reserve(buffer *b, size_t extra) {
  if (b->len + extra <= b->cap)
    return true;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < b->len + extra)
    cap *= 2;
  char *grown = realloc(b->data, cap);
  if (!grown)
    return false;
  b->data = grown;
  b->cap = cap;
  return true;
}

static bool buffer_append(buffer *b, const void *bytes, size_t n) {
  if (!buffer_reserve(b, n))
    return false;
  memcpy(b->data + b->len, bytes, n);
  b->len += n;
  return true;
}

/* ---- strings ---- */

static int hex_value(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Reads the 4 hex digits after "\u". */
static mb_status read_hex4(parser *ps, uint32_t *out) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    int h = hex_value(peek(ps));
    if (h < 0)
      return unexpected(ps, "4 hex digits after \\u");
    v = v * 16 + (uint32_t)h;
    advance(ps);
  }
  *out = v;
  return MB_STATUS_OK;
}

static size_t encode_utf8(uint32_t cp, char out[4]) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xc0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xe0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  out[0] = (char)(0xf0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
  out[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when invalid:
 * overlong forms, surrogates and code points above U+10FFFF are rejected. */
static size_t utf8_sequence(const unsigned char *p, const unsigned char *end) {
  size_t avail = (size_t)(end - p);
  if (p[0] < 0x80)
    return 1;
  if (p[0] >= 0xc2 && p[0] <= 0xdf)
    return avail >= 2 && (p[1] & 0xc0) == 0x80 ? 2 : 0;
  if (p[0] >= 0xe0 && p[0] <= 0xef) {
    if (avail < 3 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80)
      return 0;
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0))
      return 0;
    return 3;
  }
  if (p[0] >= 0xf0 && p[0] <= 0xf4) {
    if (avail < 4 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 ||
        (p[3] & 0xc0) != 0x80)
      return 0;
    if ((p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
      return 0;
    return 4;
  }
  return 0;
}

/* One escape sequence after the backslash, appended to b. */
static mb_status parse_escape(parser *ps, buffer *b) {
  static const struct {
    char in, out;
  } simple[] = {{'"', '"'},  {'\\', '\\'}, {'/', '/'},  {'b', '\b'},
                {'f', '\f'}, {'n', '\n'},  {'r', '\r'}, {'t', '\t'}};
  int line = ps->line, column = ps->column - 1;
  int c = peek(ps);
  for (size_t i = 0; i < MB_ARRAY_COUNT(simple); i++)
    if (c == simple[i].in) {
      advance(ps);
      return buffer_append(b, &simple[i].out, 1) ? MB_STATUS_OK : oom(ps);
    }
  if (c != 'u') {
    char what[16];
    return fail_at(ps, line, column, "invalid escape \\%s in string",
                   c < 0 ? "(end of input)"
                         : describe_next(ps, what, sizeof what));
  }
  advance(ps);
  uint32_t cp, low;
  mb_status status = read_hex4(ps, &cp);
  if (status != MB_STATUS_OK)
    return status;
  if (cp >= 0xdc00 && cp <= 0xdfff)
    return fail_at(ps, line, column, "lone low surrogate \\u%04X in string",
                   (unsigned)cp);
  if (cp >= 0xd800 && cp <= 0xdbff) {
    if (peek(ps) != '\\' || ps->p + 1 >= ps->end || ps->p[1] != 'u')
      return fail_at(ps, line, column,
                     "high surrogate \\u%04X is not followed by a low "
                     "surrogate",
                     (unsigned)cp);
    advance(ps);
    advance(ps);
    if ((status = read_hex4(ps, &low)) != MB_STATUS_OK)
      return status;
    if (low < 0xdc00 || low > 0xdfff)
      return fail_at(ps, line, column,
                     "high surrogate \\u%04X is followed by \\u%04X, not a "
                     "low surrogate",
                     (unsigned)cp, (unsigned)low);
    cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
  }
  char utf8[4];
  size_t n = encode_utf8(cp, utf8);
  return buffer_append(b, utf8, n) ? MB_STATUS_OK : oom(ps);
}

/* Parses a string starting at '"' into the arena. */
static mb_status parse_string(parser *ps, char **out, size_t *len_out) {
  int line = ps->line, column = ps->column;
  buffer b = {NULL, 0, 0};
  mb_status status = MB_STATUS_OK;
  advance(ps); /* opening quote */
  for (;;) {
    if (ps->p >= ps->end) {
      status =
          fail_at(ps, ps->line, ps->column,
                  "unterminated string (it starts at %d:%d)", line, column);
      goto done;
    }
    unsigned char c = (unsigned char)*ps->p;
    if (c == '"') {
      advance(ps);
      break;
    }
    if (c < 0x20) {
      status = fail_at(ps, ps->line, ps->column,
                       "control character 0x%02x in string (write it as an "
                       "escape such as \\n or \\u%04x)",
                       c, c);
      goto done;
    }
    if (c == '\\') {
      advance(ps);
      if ((status = parse_escape(ps, &b)) != MB_STATUS_OK)
        goto done;
      continue;
    }
    size_t n = utf8_sequence((const unsigned char *)ps->p,
                             (const unsigned char *)ps->end);
    if (n == 0) {
      status = fail_at(ps, ps->line, ps->column,
                       "invalid UTF-8 byte 0x%02x in string", c);
      goto done;
    }
    if (!buffer_append(&b, ps->p, n)) {
      status = oom(ps);
      goto done;
    }
    for (size_t i = 0; i < n; i++)
      advance(ps);
  }
  *out = mb__arena_strndup(ps->arena, b.data ? b.data : "", b.len);
  *len_out = b.len;
  if (!*out)
    status = oom(ps);
done:
  free(b.data);
  return status;
}

/* ---- numbers and literals ---- */

static bool is_digit(int c) {
  return c >= '0' && c <= '9';
}

static mb_status parse_number(parser *ps, mb_json_value *v) {
  const char *start = ps->p;
  int line = ps->line, column = ps->column;
  bool integral = true;
  if (peek(ps) == '-')
    advance(ps);
  if (peek(ps) == '0') {
    advance(ps);
    if (is_digit(peek(ps)))
      return fail_at(ps, line, column,
                     "invalid number: leading zeros are not allowed");
  } else if (is_digit(peek(ps))) {
    while (is_digit(peek(ps)))
      advance(ps);
  } else {
    return unexpected(ps, "a digit");
  }
  if (peek(ps) == '.') {
    integral = false;
    advance(ps);
    if (!is_digit(peek(ps)))
      return unexpected(ps, "a digit after the decimal point");
    while (is_digit(peek(ps)))
      advance(ps);
  }
  if (peek(ps) == 'e' || peek(ps) == 'E') {
    integral = false;
    advance(ps);
    if (peek(ps) == '+' || peek(ps) == '-')
      advance(ps);
    if (!is_digit(peek(ps)))
      return unexpected(ps, "a digit in the exponent");
    while (is_digit(peek(ps)))
      advance(ps);
  }
  /* strtod needs a NUL-terminated copy; the text itself need not end. */
  char text[128];
  size_t len = (size_t)(ps->p - start);
  if (len >= sizeof text)
    return fail_at(ps, line, column, "number has more than %zu characters",
                   sizeof text - 1);
  memcpy(text, start, len);
  text[len] = '\0';
  errno = 0;
  double d = strtod(text, NULL);
  if (errno == ERANGE && (d > 1.0 || d < -1.0))
    return fail_at(ps, line, column, "number %s is out of range", text);
  v->type = MB_JSON_NUMBER;
  v->number = d;
  if (integral) {
    errno = 0;
    long long i = strtoll(text, NULL, 10);
    if (errno == 0) {
      v->is_integer = true;
      v->integer = i;
    }
  }
  return MB_STATUS_OK;
}

static mb_status parse_literal(parser *ps, mb_json_value *v) {
  static const struct {
    const char *text;
    mb_json_type type;
    bool value;
  } literals[] = {{"true", MB_JSON_BOOL, true},
                  {"false", MB_JSON_BOOL, false},
                  {"null", MB_JSON_NULL, false}};
  for (size_t i = 0; i < MB_ARRAY_COUNT(literals); i++) {
    size_t n = strlen(literals[i].text);
    if ((size_t)(ps->end - ps->p) >= n &&
        memcmp(ps->p, literals[i].text, n) == 0) {
      for (size_t k = 0; k < n; k++)
        advance(ps);
      v->type = literals[i].type;
      v->boolean = literals[i].value;
      return MB_STATUS_OK;
    }
  }
  return fail_at(ps, ps->line, ps->column,
                 "invalid literal, expected true, false or null");
}

/* ---- containers ---- */

static mb_status parse_value(parser *ps, mb_json_value *v);

static mb_status enter(parser *ps) {
  if (++ps->depth > MB_JSON_MAX_NESTING)
    return fail_at(ps, ps->line, ps->column, "nesting deeper than %d levels",
                   MB_JSON_MAX_NESTING);
  return MB_STATUS_OK;
}

/* Moves a finished scratch array into the arena (NULL when empty). */
static void *to_arena(parser *ps, const buffer *b) {
  if (b->len == 0)
    return NULL;
  void *dst = mb__arena_alloc(ps->arena, b->len);
  if (dst)
    memcpy(dst, b->data, b->len);
  return dst;
}

static mb_status parse_array(parser *ps, mb_json_value *v) {
  buffer items = {NULL, 0, 0};
  mb_status status = enter(ps);
  if (status != MB_STATUS_OK)
    return status;
  advance(ps); /* '[' */
  skip_space(ps);
  if (peek(ps) == ']') {
    advance(ps);
    goto finish;
  }
  for (;;) {
    mb_json_value item;
    skip_space(ps);
    if (peek(ps) == ']') {
      status = fail_at(ps, ps->line, ps->column, "trailing comma before ']'");
      goto done;
    }
    if ((status = parse_value(ps, &item)) != MB_STATUS_OK)
      goto done;
    if (!buffer_append(&items, &item, sizeof item)) {
      status = oom(ps);
      goto done;
    }
    skip_space(ps);
    if (peek(ps) == ',') {
      advance(ps);
      continue;
    }
    if (peek(ps) == ']') {
      advance(ps);
      break;
    }
    status = unexpected(ps, "',' or ']' after an array item");
    goto done;
  }
finish:
  v->type = MB_JSON_ARRAY;
  v->count = items.len / sizeof(mb_json_value);
  v->items = to_arena(ps, &items);
  if (items.len && !v->items)
    status = oom(ps);
done:
  free(items.data);
  ps->depth--;
  return status;
}

static mb_status parse_object(parser *ps, mb_json_value *v) {
  buffer members = {NULL, 0, 0};
  mb_status status = enter(ps);
  if (status != MB_STATUS_OK)
    return status;
  advance(ps); /* '{' */
  skip_space(ps);
  if (peek(ps) == '}') {
    advance(ps);
    goto finish;
  }
  for (;;) {
    mb_json_member m;
    memset(&m, 0, sizeof m);
    skip_space(ps);
    if (peek(ps) == '}') {
      status = fail_at(ps, ps->line, ps->column, "trailing comma before '}'");
      goto done;
    }
    if (peek(ps) != '"') {
      status = unexpected(ps, "a string key in double quotes");
      goto done;
    }
    m.line = ps->line;
    m.column = ps->column;
    char *key;
    if ((status = parse_string(ps, &key, &m.key_len)) != MB_STATUS_OK)
      goto done;
    m.key = key;
    const mb_json_member *seen = (const mb_json_member *)members.data;
    for (size_t i = 0; i < members.len / sizeof m; i++)
      if (seen[i].key_len == m.key_len &&
          memcmp(seen[i].key, m.key, m.key_len) == 0) {
        status =
            fail_at(ps, m.line, m.column, "duplicate key '%s' (first at %d:%d)",
                    m.key, seen[i].line, seen[i].column);
        goto done;
      }
    skip_space(ps);
    if (peek(ps) != ':') {
      char what[64];
      snprintf(what, sizeof what, "':' after key '%.40s'", m.key);
      status = unexpected(ps, what);
      goto done;
    }
    advance(ps);
    if ((status = parse_value(ps, &m.value)) != MB_STATUS_OK)
      goto done;
    if (!buffer_append(&members, &m, sizeof m)) {
      status = oom(ps);
      goto done;
    }
    skip_space(ps);
    if (peek(ps) == ',') {
      advance(ps);
      continue;
    }
    if (peek(ps) == '}') {
      advance(ps);
      break;
    }
    char what[96];
    snprintf(what, sizeof what, "',' or '}' after the value of key '%.40s'",
             m.key);
    status = unexpected(ps, what);
    goto done;
  }
finish:
  v->type = MB_JSON_OBJECT;
  v->count = members.len / sizeof(mb_json_member);
  v->members = to_arena(ps, &members);
  if (members.len && !v->members)
    status = oom(ps);
done:
  free(members.data);
  ps->depth--;
  return status;
}

static mb_status parse_value(parser *ps, mb_json_value *v) {
  memset(v, 0, sizeof *v);
  skip_space(ps);
  v->line = ps->line;
  v->column = ps->column;
  int c = peek(ps);
  switch (c) {
  case '{':
    return parse_object(ps, v);
  case '[':
    return parse_array(ps, v);
  case '"':
    v->type = MB_JSON_STRING;
    return parse_string(ps, &v->string, &v->string_len);
  case 't':
  case 'f':
  case 'n':
    return parse_literal(ps, v);
  case '-':
  case '0':
  case '1':
  case '2':
  case '3':
  case '4':
  case '5':
  case '6':
  case '7':
  case '8':
  case '9':
    return parse_number(ps, v);
  case '\'':
    return fail_at(ps, ps->line, ps->column,
                   "strings need double quotes, not single quotes");
  case '/':
    return fail_at(ps, ps->line, ps->column,
                   "comments are not allowed in "
                   "JSON");
  case 'N':
  case 'I':
    return fail_at(ps, ps->line, ps->column,
                   "NaN and Infinity are not JSON numbers");
  default:
    return unexpected(ps, "a JSON value");
  }
}

mb_status mb__json_parse(const char *text, size_t size, const char *source,
                         mb_json_doc **doc_out, mb_error *err) {
  mb_json_doc *doc = calloc(1, sizeof *doc);
  parser ps = {text, text + size, 1, 1, source ? source : "JSON", NULL, err, 0};
  mb_status status;
  if (!doc || !(doc->arena = mb__arena_create())) {
    free(doc);
    return oom(&ps);
  }
  ps.arena = doc->arena;
  /* Editors on some systems start UTF-8 files with a byte order mark. */
  if (size >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
    ps.p += 3;
  skip_space(&ps);
  if (ps.p >= ps.end) {
    status = fail_at(&ps, ps.line, ps.column,
                     "empty document, expected a JSON value");
    goto fail;
  }
  if ((status = parse_value(&ps, &doc->root)) != MB_STATUS_OK)
    goto fail;
  skip_space(&ps);
  if (ps.p < ps.end) {
    status = unexpected(&ps, "end of input after the JSON value");
    goto fail;
  }
  *doc_out = doc;
  return MB_STATUS_OK;

fail:
  mb__json_doc_free(doc);
  return status;
}

mb_status mb__json_parse_file(const char *path, mb_json_doc **doc_out,
                              mb_error *err) {
  void *data = NULL;
  size_t size = 0;
  mb_status status = mb__read_file(path, &data, &size, err);
  if (status != MB_STATUS_OK)
    return status;
  status = mb__json_parse(data, size, path, doc_out, err);
  free(data);
  return status;
}

void mb__json_doc_free(mb_json_doc *doc) {
  if (!doc)
    return;
  mb__arena_free(doc->arena);
  free(doc);
}

const mb_json_value *mb__json_find(const mb_json_value *object,
                                   const char *key) {
  if (!object || object->type != MB_JSON_OBJECT)
    return NULL;
  size_t len = strlen(key);
  for (size_t i = 0; i < object->count; i++)
    if (object->members[i].key_len == len &&
        memcmp(object->members[i].key, key, len) == 0)
      return &object->members[i].value;
  return NULL;
}
