/* Streaming JSON writer; see json_write.h. */
#include "core/json_write.h"

#include <math.h>
#include <stdlib.h>

void mb__json_init(mb_json *j, FILE *out, bool pretty) {
  memset(j, 0, sizeof *j);
  j->out = out;
  j->pretty = pretty;
}

static void newline(mb_json *j) {
  if (!j->pretty)
    return;
  fputc('\n', j->out);
  for (int i = 0; i < j->depth; i++)
    fputs("  ", j->out);
}

/* Separator and indentation before a value or key. */
static void before_item(mb_json *j) {
  if (j->after_key) {
    j->after_key = false;
    return;
  }
  if (j->depth > 0) {
    int level = MB_MIN(j->depth, MB_JSON_MAX_DEPTH) - 1;
    if (j->has_items[level])
      fputc(',', j->out);
    j->has_items[level] = true;
    newline(j);
  }
}

static void container_open(mb_json *j, char c) {
  before_item(j);
  fputc(c, j->out);
  if (j->depth < MB_JSON_MAX_DEPTH)
    j->has_items[j->depth] = false;
  j->depth++;
}

static void container_close(mb_json *j, char c) {
  if (j->depth == 0)
    return;
  bool had = j->depth <= MB_JSON_MAX_DEPTH && j->has_items[j->depth - 1];
  j->depth--;
  if (had)
    newline(j);
  fputc(c, j->out);
  if (j->depth == 0 && j->pretty)
    fputc('\n', j->out);
}

void mb__json_object_begin(mb_json *j) {
  container_open(j, '{');
}
void mb__json_object_end(mb_json *j) {
  container_close(j, '}');
}
void mb__json_array_begin(mb_json *j) {
  container_open(j, '[');
}
void mb__json_array_end(mb_json *j) {
  container_close(j, ']');
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_length(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  size_t len;
  uint32_t cp;
  if (c < 0x80)
    return 1;
  if (c >= 0xc2 && c <= 0xdf)
    len = 2, cp = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef)
    len = 3, cp = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4)
    len = 4, cp = c & 0x07;
  else
    return 0;
  if (len > n)
    return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  /* Overlong forms, surrogates and values above U+10FFFF are invalid. */
  if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
      (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
    return 0;
  return len;
}

static void write_escaped(FILE *out, const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  fputc('"', out);
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    if (c == '"' || c == '\\') {
      fputc('\\', out);
      fputc(c, out);
      i++;
    } else if (c == '\n') {
      fputs("\\n", out), i++;
    } else if (c == '\t') {
      fputs("\\t", out), i++;
    } else if (c == '\r') {
      fputs("\\r", out), i++;
    } else if (c < 0x20 || c == 0x7f) {
      fprintf(out, "\\u%04x", c), i++;
    } else {
      size_t len = utf8_length(s + i, n - i);
      if (len == 0) {
        fputs("\\ufffd", out);
        i++;
      } else {
        fwrite(s + i, 1, len, out);
        i += len;
      }
    }
  }
  fputc('"', out);
}

void mb__json_key(mb_json *j, const char *key) {
  before_item(j);
  write_escaped(j->out, key, strlen(key));
  fputs(j->pretty ? ": " : ":", j->out);
  j->after_key = true;
}

void mb__json_string_n(mb_json *j, const char *s, size_t len) {
  before_item(j);
  write_escaped(j->out, s, len);
}

void mb__json_string(mb_json *j, const char *s) {
  if (!s) {
    mb__json_null(j);
    return;
  }
  mb__json_string_n(j, s, strlen(s));
}

void mb__json_int(mb_json *j, int64_t v) {
  before_item(j);
  fprintf(j->out, "%lld", (long long)v);
}

void mb__json_double(mb_json *j, double v) {
  if (!isfinite(v)) {
    mb__json_null(j);
    return;
  }
  before_item(j);
  /* Integral values (FLOP and byte counts) print without an exponent up to
   * 2^53, where doubles stop being exact. */
  if (v == floor(v) && fabs(v) < 9007199254740992.0)
    fprintf(j->out, "%.0f", v);
  else {
    /* The shortest of %.15g and %.17g that reads back exactly. */
    char buf[32];
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v)
      snprintf(buf, sizeof buf, "%.17g", v);
    fputs(buf, j->out);
  }
}

void mb__json_bool(mb_json *j, bool v) {
  before_item(j);
  fputs(v ? "true" : "false", j->out);
}

void mb__json_null(mb_json *j) {
  before_item(j);
  fputs("null", j->out);
}

void mb__json_kv_string(mb_json *j, const char *key, const char *s) {
  mb__json_key(j, key);
  mb__json_string(j, s);
}

void mb__json_kv_int(mb_json *j, const char *key, int64_t v) {
  mb__json_key(j, key);
  mb__json_int(j, v);
}

void mb__json_kv_double(mb_json *j, const char *key, double v) {
  mb__json_key(j, key);
  mb__json_double(j, v);
}

void mb__json_kv_bool(mb_json *j, const char *key, bool v) {
  mb__json_key(j, key);
  mb__json_bool(j, v);
}
