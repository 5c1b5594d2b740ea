/* Zip directories (zip.h): the end record, found in the archive's last
 * 64 KiB + 22 bytes (the most a comment allows), the zip64 end record it
 * may point to, and the central directory's entries. */
#include "bench/zip.h"

#include <stdlib.h>

#define ZIP_EOCD_SIG 0x06054b50u
#define ZIP64_LOCATOR_SIG 0x07064b50u
#define ZIP64_EOCD_SIG 0x06064b50u
#define ZIP_CENTRAL_SIG 0x02014b50u
#define ZIP_EOCD_SIZE 22
#define ZIP_MAX_COMMENT 65535

mb_status mb__zip_directory(mb_zip_read_fn read, void *ctx, uint64_t size,
                            const char *what, const char *kind,
                            uint64_t *offset_out, uint64_t *dir_size_out,
                            uint64_t *count_out, mb_error *err) {
  unsigned char tail[ZIP_EOCD_SIZE + ZIP_MAX_COMMENT];
  if (size < ZIP_EOCD_SIZE)
    return mb__error(err, MB_STATUS_PARSE, "%s: not a %s file (too short)",
                     what, kind);
  size_t n = (size_t)MB_MIN(size, (uint64_t)sizeof tail);
  uint64_t start = size - n;
  if (!read(ctx, start, tail, n))
    return mb__error(err, MB_STATUS_IO, "%s: cannot read the zip end record",
                     what);
  for (size_t at = n - ZIP_EOCD_SIZE + 1; at-- > 0;) {
    /* The end record, whose comment reaches the end of the archive. */
    if (mb__zip_u32(tail + at) != ZIP_EOCD_SIG ||
        at + ZIP_EOCD_SIZE + mb__zip_u16(tail + at + 20) != n)
      continue;
    uint64_t count = mb__zip_u16(tail + at + 10);
    uint64_t dir_size = mb__zip_u32(tail + at + 12);
    uint64_t offset = mb__zip_u32(tail + at + 16);
    /* zip64: a locator just before the end record points to the record
     * whose fields replace those that overflowed. */
    if ((count == 0xffff || dir_size == 0xffffffffu || offset == 0xffffffffu) &&
        at >= 20 && mb__zip_u32(tail + at - 20) == ZIP64_LOCATOR_SIG) {
      unsigned char rec[56];
      uint64_t z = mb__zip_u64(tail + at - 20 + 8);
      if (z > size || size - z < sizeof rec || !read(ctx, z, rec, sizeof rec) ||
          mb__zip_u32(rec) != ZIP64_EOCD_SIG)
        return mb__error(err, MB_STATUS_PARSE,
                         "%s: malformed %s (zip64 end record)", what, kind);
      count = mb__zip_u64(rec + 32);
      dir_size = mb__zip_u64(rec + 40);
      offset = mb__zip_u64(rec + 48);
    }
    if (offset > size || dir_size > size - offset)
      return mb__error(err, MB_STATUS_PARSE,
                       "%s: malformed %s (the central directory lies past "
                       "the end)",
                       what, kind);
    *offset_out = offset;
    *dir_size_out = dir_size;
    *count_out = count;
    return MB_STATUS_OK;
  }
  return mb__error(err, MB_STATUS_PARSE,
                   "%s: not a %s file (no zip end record)", what, kind);
}

/* Fills the fields a zip64 extra field (id 1) carries for those that are
 * 0xffffffff in the central entry, in the order the format gives. */
static bool zip64_extra(const unsigned char *p, size_t len, mb_zip_entry *e,
                        bool big_size, bool big_comp, bool big_local) {
  while (len >= 4) {
    uint32_t id = mb__zip_u16(p), n = mb__zip_u16(p + 2);
    if (n > len - 4)
      return false;
    if (id == 1) {
      const unsigned char *q = p + 4;
      size_t left = n;
      uint64_t *fields[3] = {big_size ? &e->size : NULL,
                             big_comp ? &e->comp : NULL,
                             big_local ? &e->local : NULL};
      for (int i = 0; i < 3; i++) {
        if (!fields[i])
          continue;
        if (left < 8)
          return false;
        *fields[i] = mb__zip_u64(q);
        q += 8;
        left -= 8;
      }
      return true;
    }
    p += 4 + n;
    len -= 4 + n;
  }
  return !big_size && !big_comp && !big_local;
}

bool mb__zip_central(const unsigned char *dir, size_t size, uint64_t *pos,
                     mb_zip_entry *e) {
  uint64_t p = *pos;
  if (p > size || size - p < 46 || mb__zip_u32(dir + p) != ZIP_CENTRAL_SIG)
    return false;
  const unsigned char *c = dir + p;
  size_t name_len = mb__zip_u16(c + 28), extra_len = mb__zip_u16(c + 30),
         comment_len = mb__zip_u16(c + 32);
  if (size - p - 46 < name_len + extra_len + comment_len)
    return false;
  e->flags = mb__zip_u16(c + 8);
  e->method = mb__zip_u16(c + 10);
  e->comp = mb__zip_u32(c + 20);
  e->size = mb__zip_u32(c + 24);
  e->local = mb__zip_u32(c + 42);
  e->name = c + 46;
  e->name_len = name_len;
  if (!zip64_extra(c + 46 + name_len, extra_len, e, e->size == 0xffffffffu,
                   e->comp == 0xffffffffu, e->local == 0xffffffffu))
    return false;
  *pos = p + 46 + name_len + extra_len + comment_len;
  return true;
}
