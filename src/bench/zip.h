/* Zip archives' directories, read with every offset and size checked
 * against the archive: numpy's .npz archives (npy.c reads their members)
 * and PyTorch's torch.save and torch.jit.save archives (model_files.c
 * tells one from the other by the names inside). */
#ifndef MB_BENCH_ZIP_H
#define MB_BENCH_ZIP_H

#include "core/internal.h"

#include <stdint.h>

/* One central directory entry. name points into the directory buffer it
 * was read from (not terminated). */
typedef struct mb_zip_entry {
  uint64_t comp, size, local; /* compressed, uncompressed, header offset */
  uint32_t method, flags;
  const unsigned char *name;
  size_t name_len;
} mb_zip_entry;

/* Reads n bytes at offset of the archive into buf (ctx: the caller's);
 * false when they are not there. */
typedef bool (*mb_zip_read_fn)(void *ctx, uint64_t offset, void *buf, size_t n);

/* Where the central directory of an archive of `size` bytes lies, and how
 * many entries it holds: the end record's fields, or the zip64 end
 * record's when those overflow. `what` names the archive in errors
 * ("PATH: not a .npz file (no zip end record)", with `kind` ".npz"). */
mb_status mb__zip_directory(mb_zip_read_fn read, void *ctx, uint64_t size,
                            const char *what, const char *kind,
                            uint64_t *offset_out, uint64_t *dir_size_out,
                            uint64_t *count_out, mb_error *err);

/* The entry at *pos of a central directory held in dir (size bytes), its
 * zip64 extra field applied; *pos moved past it. False when the entry is
 * malformed or runs past the directory. */
bool mb__zip_central(const unsigned char *dir, size_t size, uint64_t *pos,
                     mb_zip_entry *e);

/* Little-endian reads. */
static inline uint32_t mb__zip_u16(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}
static inline uint32_t mb__zip_u32(const unsigned char *p) {
  return mb__zip_u16(p) | mb__zip_u16(p + 2) << 16;
}
static inline uint64_t mb__zip_u64(const unsigned char *p) {
  return (uint64_t)mb__zip_u32(p) | (uint64_t)mb__zip_u32(p + 4) << 32;
}

#define MB_ZIP_LOCAL_SIG 0x04034b50u

#endif
