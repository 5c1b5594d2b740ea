/* Text that came from outside (a model's names, paths, labels, errors a
 * runtime wrote) on its way to a terminal: strict UTF-8 checking, and the
 * escaping that keeps such text from moving the cursor, changing colours,
 * retitling the window or faking lines of output. Every layer prints
 * names, so this lives in core. */
#include "core/internal.h"

/* Strict UTF-8: overlong forms, surrogates and values above U+10FFFF are
 * invalid (a NUL ends the string and is never a continuation byte). */
size_t mb__utf8_length(const char *text) {
  const unsigned char *s = (const unsigned char *)text;
  unsigned char c = s[0];
  size_t n;
  unsigned char lo = 0x80, hi = 0xbf;
  if (c < 0x80)
    return 1;
  if (c >= 0xc2 && c <= 0xdf)
    n = 2;
  else if (c >= 0xe0 && c <= 0xef)
    n = 3;
  else if (c >= 0xf0 && c <= 0xf4)
    n = 4;
  else
    return 0;
  if (c == 0xe0)
    lo = 0xa0;
  else if (c == 0xed)
    hi = 0x9f;
  else if (c == 0xf0)
    lo = 0x90;
  else if (c == 0xf4)
    hi = 0x8f;
  if (s[1] < lo || s[1] > hi)
    return 0;
  for (size_t i = 2; i < n; i++)
    if (s[i] < 0x80 || s[i] > 0xbf)
      return 0;
  return n;
}

static uint32_t utf8_decode(const unsigned char *s, size_t n) {
  static const unsigned char lead_mask[5] = {0, 0x7f, 0x1f, 0x0f, 0x07};
  uint32_t cp = s[0] & lead_mask[n];
  for (size_t i = 1; i < n; i++)
    cp = cp << 6 | (s[i] & 0x3f);
  return cp;
}

/* Code points a terminal acts on or that reorder what it shows: C1
 * controls (U+009B is CSI, an escape sequence in one character), the line
 * and paragraph separators and the bidirectional controls behind "Trojan
 * source" (text that reads in another order than it runs). */
static const struct {
  uint32_t lo, hi;
} escaped_ranges[] = {
    {0x80, 0x9f},     {0x200e, 0x200f}, {0x2028, 0x202e},
    {0x2066, 0x2069}, {0xfeff, 0xfeff},
};

static bool escaped_code_point(uint32_t cp) {
  for (size_t i = 0; i < MB_ARRAY_COUNT(escaped_ranges); i++)
    if (cp >= escaped_ranges[i].lo && cp <= escaped_ranges[i].hi)
      return true;
  return false;
}

/* How the character at s is shown: its length in the input (*len_out) and
 * the escape that replaces it into esc (NUL-terminated), or false when it
 * is shown as it is. */
static bool escape_at(const char *s, size_t *len_out, char esc[16]) {
  unsigned char c = (unsigned char)*s;
  size_t n = mb__utf8_length(s);
  *len_out = n ? n : 1;
  if (n == 0 || c < 0x20 || c == 0x7f) {
    snprintf(esc, 16, "\\x%02x", c);
    return true;
  }
  if (n > 1) {
    uint32_t cp = utf8_decode((const unsigned char *)s, n);
    if (escaped_code_point(cp)) {
      snprintf(esc, 16, "\\u%04x", (unsigned)cp);
      return true;
    }
  }
  return false;
}

bool mb__term_needs_escape(const char *s) {
  char esc[16];
  for (size_t n; s && *s; s += n)
    if (escape_at(s, &n, esc))
      return true;
  return false;
}

const char *mb__term_text(const char *s, char *buf, size_t size) {
  if (!s)
    return "(null)";
  if (!mb__term_needs_escape(s) || size == 0)
    return s;
  /* Room for "..." and the NUL: a cut never splits an escape or a UTF-8
   * sequence. */
  size_t used = 0, limit = size > 4 ? size - 4 : 0;
  char esc[16];
  for (size_t n; *s; s += n) {
    const char *piece = s;
    size_t piece_len;
    if (escape_at(s, &n, esc)) {
      piece = esc;
      piece_len = strlen(esc);
    } else {
      piece_len = n;
    }
    if (used + piece_len > limit) {
      memcpy(buf + used, "...", size - used > 3 ? 3 : size - used - 1);
      used += size - used > 3 ? 3 : size - used - 1;
      break;
    }
    memcpy(buf + used, piece, piece_len);
    used += piece_len;
  }
  buf[used] = '\0';
  return buf;
}

void mb__term_put(FILE *f, const char *s) {
  char esc[16];
  for (size_t n; s && *s; s += n) {
    if (escape_at(s, &n, esc))
      fputs(esc, f);
    else
      fwrite(s, 1, n, f);
  }
}
