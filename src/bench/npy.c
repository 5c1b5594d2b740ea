/* NumPy files as input data: .npy arrays (read and written: the NNCF
 * helper's calibration batches) and .npz archives of them (read), with
 * every size and offset checked against the file, so a malformed file is
 * an error that names it. */
#include "bench/data.h"
#include "bench/zip.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <zlib.h>

/* ---- .npy files ---- */

typedef struct npy_type {
  char kind;
  int size;
  mb_dtype dtype;
} npy_type;

static const npy_type npy_types[] = {
    {'f', 2, MB_DTYPE_FLOAT16}, {'f', 4, MB_DTYPE_FLOAT},
    {'f', 8, MB_DTYPE_DOUBLE},  {'i', 1, MB_DTYPE_INT8},
    {'i', 2, MB_DTYPE_INT16},   {'i', 4, MB_DTYPE_INT32},
    {'i', 8, MB_DTYPE_INT64},   {'u', 1, MB_DTYPE_UINT8},
    {'u', 2, MB_DTYPE_UINT16},  {'u', 4, MB_DTYPE_UINT32},
    {'u', 8, MB_DTYPE_UINT64},  {'b', 1, MB_DTYPE_BOOL},
};

/* The header is a Python dict literal written by numpy, e.g.
 * {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * A tiny scanner for exactly that grammar. */
typedef struct npy_scan {
  const char *p, *end;
} npy_scan;

static void npy_space(npy_scan *s) {
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\t'))
    s->p++;
}

static bool npy_char(npy_scan *s, char c) {
  npy_space(s);
  if (s->p < s->end && *s->p == c) {
    s->p++;
    return true;
  }
  return false;
}

static bool npy_string(npy_scan *s, char *buf, size_t size) {
  npy_space(s);
  if (s->p >= s->end || (*s->p != '\'' && *s->p != '"'))
    return false;
  char quote = *s->p++;
  const char *start = s->p;
  while (s->p < s->end && *s->p != quote)
    s->p++;
  if (s->p >= s->end || (size_t)(s->p - start) >= size)
    return false;
  memcpy(buf, start, (size_t)(s->p - start));
  buf[s->p - start] = '\0';
  s->p++;
  return true;
}

static bool npy_word(npy_scan *s, const char *word) {
  size_t n = strlen(word);
  npy_space(s);
  if ((size_t)(s->end - s->p) >= n && memcmp(s->p, word, n) == 0) {
    s->p += n;
    return true;
  }
  return false;
}

typedef struct npy_header {
  char descr[16];
  int fortran_order; /* -1 until seen */
  int rank;          /* -1 until seen */
  int64_t dims[MB_MAX_RANK];
} npy_header;

static bool npy_shape(npy_scan *s, npy_header *h) {
  if (!npy_char(s, '('))
    return false;
  h->rank = 0;
  for (;;) {
    if (npy_char(s, ')'))
      return true;
    npy_space(s);
    if (s->p >= s->end || !isdigit((unsigned char)*s->p) ||
        h->rank == MB_MAX_RANK)
      return false;
    int64_t v = 0;
    while (s->p < s->end && isdigit((unsigned char)*s->p)) {
      if (v > (INT64_MAX - 9) / 10)
        return false;
      v = v * 10 + (*s->p++ - '0');
    }
    h->dims[h->rank++] = v;
    if (!npy_char(s, ',')) /* "(3,)" has a comma, "(2, 3)" not at the end */
      return npy_char(s, ')');
  }
}

static bool npy_parse_header(const char *text, size_t len, npy_header *h) {
  npy_scan s = {text, text + len};
  h->descr[0] = '\0';
  h->fortran_order = -1;
  h->rank = -1;
  if (!npy_char(&s, '{'))
    return false;
  for (;;) {
    char key[32];
    if (npy_char(&s, '}'))
      break;
    if (!npy_string(&s, key, sizeof key) || !npy_char(&s, ':'))
      return false;
    if (strcmp(key, "descr") == 0) {
      if (!npy_string(&s, h->descr, sizeof h->descr))
        return false;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (npy_word(&s, "True"))
        h->fortran_order = 1;
      else if (npy_word(&s, "False"))
        h->fortran_order = 0;
      else
        return false;
    } else if (strcmp(key, "shape") == 0) {
      if (!npy_shape(&s, h))
        return false;
    } else {
      return false;
    }
    if (!npy_char(&s, ',')) {
      if (!npy_char(&s, '}'))
        return false;
      break;
    }
  }
  return h->descr[0] && h->fortran_order >= 0 && h->rank >= 0;
}

mb_status mb__npy_parse(const void *data, size_t size, const char *path,
                        mb_tensor **tensor_out, mb_error *err) {
  mb_tensor *t = NULL;
  mb_status status = MB_STATUS_OK;
  const unsigned char *bytes = data;
  size_t header_len, offset;
  if (size < 10 || memcmp(bytes, "\x93NUMPY", 6) != 0) {
    status = mb__error(err, MB_STATUS_PARSE, "%s: not a .npy file (bad magic)",
                       path);
    goto done;
  }
  if (bytes[6] == 1) {
    header_len = (size_t)bytes[8] | (size_t)bytes[9] << 8;
    offset = 10;
  } else if ((bytes[6] == 2 || bytes[6] == 3) && size >= 12) {
    header_len = (size_t)bytes[8] | (size_t)bytes[9] << 8 |
                 (size_t)bytes[10] << 16 | (size_t)bytes[11] << 24;
    offset = 12;
  } else {
    status = mb__error(err, MB_STATUS_UNSUPPORTED,
                       "%s: .npy format version %d.%d is not supported", path,
                       bytes[6], bytes[7]);
    goto done;
  }
  npy_header h;
  if (header_len > size - offset ||
      !npy_parse_header((const char *)bytes + offset, header_len, &h)) {
    status = mb__error(err, MB_STATUS_PARSE, "%s: malformed .npy header", path);
    goto done;
  }
  offset += header_len;
  if (h.fortran_order) {
    status = mb__error(err, MB_STATUS_UNSUPPORTED,
                       "%s: Fortran-order arrays are not supported (save "
                       "np.ascontiguousarray(x))",
                       path);
    goto done;
  }
  /* descr is byte order ('<' little, '|' none, '=' native), kind, size. */
  char order = h.descr[0], kind = h.descr[1];
  char *end;
  long item = strtol(h.descr + 2, &end, 10);
  const npy_type *type = NULL;
  for (size_t i = 0; i < MB_ARRAY_COUNT(npy_types) && !type; i++)
    if (npy_types[i].kind == kind && npy_types[i].size == item)
      type = &npy_types[i];
  if (order == '>' && item > 1) {
    status =
        mb__error(err, MB_STATUS_UNSUPPORTED,
                  "%s: big-endian data ('%s') is not supported", path, h.descr);
    goto done;
  }
  if (!type || *end || !strchr("<|=>", order)) {
    status = mb__error(err, MB_STATUS_UNSUPPORTED,
                       "%s: .npy dtype '%s' is not supported (use f2, f4, "
                       "f8, i1-i8, u1-u8 or b1)",
                       path, h.descr);
    goto done;
  }
  status = mb_tensor_create(type->dtype, h.rank, h.dims, &t, err);
  if (status != MB_STATUS_OK) {
    mb__error_prefix(err, status, "%s", path);
    goto done;
  }
  if (size - offset != t->nbytes) {
    char shape[160];
    status = mb__error(err, MB_STATUS_PARSE,
                       "%s: holds %zu data bytes but shape %s of %s needs %zu",
                       path, size - offset,
                       mb__shape_str(t->rank, t->dims, shape, sizeof shape),
                       mb_dtype_name(t->dtype), t->nbytes);
    goto done;
  }
  if (t->nbytes)
    memcpy(t->data, bytes + offset, t->nbytes);
  *tensor_out = t;
  t = NULL;

done:
  mb_tensor_free(t);
  return status;
}

mb_status mb__npy_load(const char *path, mb_tensor **tensor_out,
                       mb_error *err) {
  void *file = NULL;
  size_t size = 0;
  mb_status status = mb__read_file(path, &file, &size, err);
  if (status == MB_STATUS_OK)
    status = mb__npy_parse(file, size, path, tensor_out, err);
  free(file);
  return status;
}

mb_status mb__npy_save(const char *path, const mb_tensor *t, mb_error *err) {
  const npy_type *type = NULL;
  for (size_t i = 0; i < MB_ARRAY_COUNT(npy_types) && !type; i++)
    if (npy_types[i].dtype == t->dtype)
      type = &npy_types[i];
  if (!type)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "%s: a %s tensor has no .npy dtype here", path,
                     mb_dtype_name(t->dtype));
  /* Version 1.0: magic, version, 2-byte header length, then the dict padded
   * with spaces to a multiple of 64 bytes and ended by a newline. */
  char dict[512];
  int used = snprintf(dict, sizeof dict,
                      "{'descr': '%c%c%d', 'fortran_order': False, 'shape': (",
                      type->size > 1 ? '<' : '|', type->kind, type->size);
  for (int d = 0; d < t->rank && used < (int)sizeof dict; d++)
    used += snprintf(dict + used, sizeof dict - (size_t)used, "%lld%s",
                     (long long)t->dims[d],
                     t->rank == 1      ? ","
                     : d + 1 < t->rank ? ", "
                                       : "");
  if (used < (int)sizeof dict)
    used += snprintf(dict + used, sizeof dict - (size_t)used, "), }");
  if (used >= (int)sizeof dict - 64)
    return mb__error(err, MB_STATUS_UNSUPPORTED, "%s: rank %d is too high",
                     path, t->rank);
  size_t header = 10 + (size_t)used + 1;
  size_t padded = (header + 63) / 64 * 64;
  size_t total = padded + t->nbytes;
  unsigned char *bytes = malloc(total);
  if (!bytes)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
  size_t dict_len = padded - 10;
  memcpy(bytes, "\x93NUMPY\x01\x00", 8);
  bytes[8] = (unsigned char)(dict_len & 0xff);
  bytes[9] = (unsigned char)(dict_len >> 8);
  memcpy(bytes + 10, dict, (size_t)used);
  memset(bytes + 10 + used, ' ', dict_len - (size_t)used - 1);
  bytes[padded - 1] = '\n';
  if (t->nbytes)
    memcpy(bytes + padded, t->data, t->nbytes);
  mb_status status = mb__write_file(path, bytes, total, err);
  free(bytes);
  return status;
}

/* ---- .npz archives ---- */

/* numpy.savez writes a zip archive of NAME.npy members, stored
 * (np.savez) or deflated (np.savez_compressed), each with a zip64 extra
 * field since numpy 1.x writes them with force_zip64; the central
 * directory's sizes are the ones to trust (the local headers may say
 * 0xffffffff). Read here: the end record (zip64 too), the central
 * directory, methods 0 and 8. Every offset and size is checked against
 * the file before it is used, so a truncated or hostile archive is an
 * error naming the file, never a read out of bounds. */

#define ZIP_MAX_MEMBERS 4096
/* deflate expands at most ~1032:1; a larger claim is not an honest file. */
#define ZIP_MAX_RATIO 1100

/* mb_zip_read_fn over an archive in memory. */
typedef struct memory_archive {
  const unsigned char *bytes;
  size_t size;
} memory_archive;

static bool memory_read(void *ctx, uint64_t offset, void *buf, size_t n) {
  const memory_archive *m = ctx;
  if (offset > m->size || n > m->size - offset)
    return false;
  memcpy(buf, m->bytes + offset, n);
  return true;
}

/* A member's bytes: stored ones point into the archive (*owned NULL),
 * deflated ones are inflated into *owned. */
static mb_status zip_member(const unsigned char *b, size_t size,
                            const mb_zip_entry *e, const char *where,
                            const unsigned char **data_out,
                            unsigned char **owned, mb_error *err) {
  *owned = NULL;
  uint64_t p = e->local;
  if (p > size || size - p < 30 || mb__zip_u32(b + p) != MB_ZIP_LOCAL_SIG)
    return mb__error(err, MB_STATUS_PARSE, "%s: malformed .npz (local header)",
                     where);
  uint64_t start = p + 30 + mb__zip_u16(b + p + 26) + mb__zip_u16(b + p + 28);
  if (start > size || size - start < e->comp)
    return mb__error(err, MB_STATUS_PARSE,
                     "%s: truncated .npz (the member runs past the end)",
                     where);
  if (e->flags & 1)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "%s: encrypted .npz members are not supported", where);
  if (e->method == 0) {
    if (e->comp != e->size)
      return mb__error(err, MB_STATUS_PARSE,
                       "%s: malformed .npz (stored sizes differ)", where);
    *data_out = b + start;
    return MB_STATUS_OK;
  }
  if (e->method != 8)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "%s: .npz compression method %u is not supported (numpy "
                     "writes 0, stored, or 8, deflate)",
                     where, e->method);
  if (e->size / ZIP_MAX_RATIO > e->comp + 1024 || e->size > SIZE_MAX - 1)
    return mb__error(err, MB_STATUS_PARSE,
                     "%s: malformed .npz (claims %llu bytes from %llu)", where,
                     (unsigned long long)e->size, (unsigned long long)e->comp);
  unsigned char *out = malloc((size_t)e->size + 1);
  if (!out)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", where);
  z_stream z;
  memset(&z, 0, sizeof z);
  int rc = inflateInit2(&z, -MAX_WBITS);
  uint64_t in_left = e->comp, out_left = e->size + 1;
  z.next_in = (unsigned char *)(b + start);
  z.next_out = out;
  while (rc == Z_OK) {
    /* zlib counts in uInt: feed and drain in chunks that fit. */
    uInt chunk_in = (uInt)MB_MIN(in_left, (uint64_t)1 << 30);
    uInt chunk_out = (uInt)MB_MIN(out_left, (uint64_t)1 << 30);
    z.avail_in = chunk_in;
    z.avail_out = chunk_out;
    rc = inflate(&z, Z_NO_FLUSH);
    in_left -= chunk_in - z.avail_in;
    out_left -= chunk_out - z.avail_out;
    if (rc == Z_OK && chunk_in == z.avail_in && chunk_out == z.avail_out)
      rc = Z_DATA_ERROR; /* no progress: truncated */
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END || out_left != 1) {
    free(out);
    return mb__error(err, MB_STATUS_PARSE,
                     "%s: corrupt .npz member (inflate: %s)", where,
                     rc == Z_STREAM_END ? "size differs from the directory's"
                                        : "bad or truncated deflate data");
  }
  *data_out = out;
  *owned = out;
  return MB_STATUS_OK;
}

void mb__npz_free(mb_npz *npz) {
  if (!npz)
    return;
  for (int i = 0; i < npz->count; i++) {
    free(npz->names[i]);
    mb_tensor_free(npz->tensors[i]);
  }
  free(npz->names);
  free(npz->tensors);
  memset(npz, 0, sizeof *npz);
}

mb_status mb__npz_load(const char *path, mb_npz *npz_out, mb_error *err) {
  void *file = NULL;
  size_t size = 0;
  mb_npz npz = {0, NULL, NULL};
  uint64_t offset = 0, dir_size = 0, pos = 0, count = 0;
  mb_status status = mb__read_file(path, &file, &size, err);
  if (status != MB_STATUS_OK)
    return status;
  const unsigned char *b = file;
  memory_archive archive = {b, size};
  if ((status = mb__zip_directory(memory_read, &archive, size, path, ".npz",
                                  &offset, &dir_size, &count, err)))
    goto done;
  if (count == 0 || count > ZIP_MAX_MEMBERS) {
    status = mb__error(err, MB_STATUS_PARSE,
                       "%s: .npz with %llu arrays (1 to %d are read)", path,
                       (unsigned long long)count, ZIP_MAX_MEMBERS);
    goto done;
  }
  npz.names = calloc((size_t)count, sizeof *npz.names);
  npz.tensors = calloc((size_t)count, sizeof *npz.tensors);
  if (!npz.names || !npz.tensors) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  for (uint64_t i = 0; i < count; i++) {
    mb_zip_entry e;
    if (!mb__zip_central(b + offset, (size_t)dir_size, &pos, &e)) {
      status = mb__error(err, MB_STATUS_PARSE,
                         "%s: malformed .npz (central directory entry %llu)",
                         path, (unsigned long long)i);
      goto done;
    }
    char where[PATH_MAX + 300];
    snprintf(where, sizeof where, "%s: '%.*s'", path,
             (int)MB_MIN(e.name_len, (size_t)255), (const char *)e.name);
    if (e.name_len < 5 || memcmp(e.name + e.name_len - 4, ".npy", 4) != 0 ||
        memchr(e.name, '\0', e.name_len)) {
      status = mb__error(err, MB_STATUS_PARSE,
                         "%s: not a .npy member (numpy.savez writes NAME.npy)",
                         where);
      goto done;
    }
    if (!(npz.names[npz.count] = malloc(e.name_len - 3))) {
      status =
          mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
      goto done;
    }
    memcpy(npz.names[npz.count], e.name, e.name_len - 4);
    npz.names[npz.count][e.name_len - 4] = '\0';
    npz.count++;
    const unsigned char *data = NULL;
    unsigned char *owned = NULL;
    if ((status = zip_member(b, size, &e, where, &data, &owned, err)))
      goto done;
    status = mb__npy_parse(data, (size_t)e.size, where,
                           &npz.tensors[npz.count - 1], err);
    free(owned);
    if (status)
      goto done;
  }
  *npz_out = npz;
  npz.count = 0;
  npz.names = NULL;
  npz.tensors = NULL;

done:
  mb__npz_free(&npz);
  free(file);
  return status;
}
