/* Allocation, checked arithmetic, the arena and whole-file I/O. */
#include "core/internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void *mb__aligned_alloc(size_t bytes) {
  void *p = NULL;
  if (bytes == 0)
    bytes = MB_TENSOR_ALIGNMENT;
  if (posix_memalign(&p, MB_TENSOR_ALIGNMENT, bytes) != 0)
    return NULL;
  return p;
}

void mb__aligned_free(void *p) {
  free(p);
}

char *mb__strdup(const char *s) {
  if (!s)
    return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

int mb__natural_compare(const char *a, const char *b) {
  while (*a && *b) {
    if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
      char *ea, *eb;
      unsigned long long na = strtoull(a, &ea, 10), nb = strtoull(b, &eb, 10);
      if (na != nb)
        return na < nb ? -1 : 1;
      a = ea;
      b = eb;
      continue;
    }
    if (*a != *b)
      return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
    a++;
    b++;
  }
  return (unsigned char)*a - (unsigned char)*b;
}

bool mb__mul_size(size_t a, size_t b, size_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}

bool mb__add_size(size_t a, size_t b, size_t *out) {
  return !__builtin_add_overflow(a, b, out);
}

bool mb__mul_i64(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}

bool mb__numel(int rank, const int64_t *dims, int64_t *numel_out) {
  int64_t n = 1;
  if (rank < 0 || rank > MB_MAX_RANK)
    return false;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0 || !mb__mul_i64(n, dims[i], &n))
      return false;
  }
  *numel_out = n;
  return true;
}

/* ---- arena ---- */

typedef struct arena_block {
  struct arena_block *next;
  size_t used, size;
  _Alignas(16) unsigned char data[];
} arena_block;

struct mb_arena {
  arena_block *head;
};

mb_arena *mb__arena_create(void) {
  return calloc(1, sizeof(mb_arena));
}

void mb__arena_free(mb_arena *arena) {
  if (!arena)
    return;
  for (arena_block *b = arena->head; b;) {
    arena_block *next = b->next;
    free(b);
    b = next;
  }
  free(arena);
}

void *mb__arena_alloc(mb_arena *arena, size_t bytes) {
  bytes = (bytes + 15) & ~(size_t)15;
  if (bytes == 0)
    bytes = 16;
  arena_block *b = arena->head;
  if (!b || b->size - b->used < bytes) {
    size_t size = bytes > 16384 ? bytes : 16384;
    b = malloc(sizeof(arena_block) + size);
    if (!b)
      return NULL;
    b->used = 0;
    b->size = size;
    b->next = arena->head;
    arena->head = b;
  }
  void *p = b->data + b->used;
  b->used += bytes;
  memset(p, 0, bytes);
  return p;
}

char *mb__arena_strndup(mb_arena *arena, const char *s, size_t n) {
  char *d = mb__arena_alloc(arena, n + 1);
  if (d && n)
    memcpy(d, s, n);
  return d;
}

char *mb__arena_strdup(mb_arena *arena, const char *s) {
  return s ? mb__arena_strndup(arena, s, strlen(s)) : NULL;
}

/* ---- files ---- */

mb_status mb__read_file(const char *path, void **data_out, size_t *size_out,
                        mb_error *err) {
  struct stat st;
  FILE *f = NULL;
  void *data = NULL;
  mb_status status;
  if (stat(path, &st) != 0)
    return mb__error(err, MB_STATUS_IO, "%s: %s", path, strerror(errno));
  if (S_ISDIR(st.st_mode))
    return mb__error(err, MB_STATUS_IO, "%s: is a directory, not a file", path);
  if ((uint64_t)st.st_size > ((uint64_t)1 << 32))
    return mb__error(err, MB_STATUS_OVERFLOW,
                     "%s: file of %lld bytes is too large to read whole", path,
                     (long long)st.st_size);
  f = fopen(path, "rb");
  if (!f)
    return mb__error(err, MB_STATUS_IO, "%s: %s", path, strerror(errno));
  data = malloc(st.st_size ? (size_t)st.st_size : 1);
  if (!data) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "%s: cannot allocate %lld bytes", path,
                       (long long)st.st_size);
    goto fail;
  }
  if (st.st_size &&
      fread(data, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
    status = mb__error(err, MB_STATUS_IO, "%s: short read", path);
    goto fail;
  }
  fclose(f);
  *data_out = data;
  *size_out = (size_t)st.st_size;
  return MB_STATUS_OK;
fail:
  free(data);
  fclose(f);
  return status;
}

mb_status mb__write_file(const char *path, const void *data, size_t size,
                         mb_error *err) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return mb__error(err, MB_STATUS_IO, "%s: %s", path, strerror(errno));
  if ((size && fwrite(data, 1, size, f) != size) | (fclose(f) != 0))
    return mb__error(err, MB_STATUS_IO, "%s: write failed: %s", path,
                     strerror(errno));
  return MB_STATUS_OK;
}

double mb__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
