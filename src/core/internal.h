/* Internal helpers shared by every layer: errors, allocation, checked
 * arithmetic, half-precision conversion, logging. Functions here use the
 * mb__ prefix; none of them is part of the public API. */
#ifndef MB_CORE_INTERNAL_H
#define MB_CORE_INTERNAL_H

#include "modelbench.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(__GNUC__)
#define MB_PRINTF(fmt_index, first_arg)                                        \
  __attribute__((format(printf, fmt_index, first_arg)))
#define MB_UNUSED __attribute__((unused))
#else
#define MB_PRINTF(fmt_index, first_arg)
#define MB_UNUSED
#endif

#define MB_ARRAY_COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define MB_MIN(a, b) ((a) < (b) ? (a) : (b))
#define MB_MAX(a, b) ((a) > (b) ? (a) : (b))

/* For our own invariants only: never for anything user input can reach. */
#define MB_ASSERT(cond)                                                        \
  do {                                                                         \
    if (!(cond))                                                               \
      mb__assert_fail(#cond, __FILE__, __LINE__);                              \
  } while (0)
void mb__assert_fail(const char *cond, const char *file, int line);

/* Records status + formatted message into err (which may be NULL) and
 * returns status, so callers can write `return mb__error(err, ...)`. */
mb_status mb__error(mb_error *err, mb_status status, const char *fmt, ...)
    MB_PRINTF(3, 4);
/* Prefixes an existing message: "context: old message". Returns err->status
 * (or `status` when err is NULL). */
mb_status mb__error_prefix(mb_error *err, mb_status status, const char *fmt,
                           ...) MB_PRINTF(3, 4);

/* ---- allocation ---- */
void *mb__aligned_alloc(size_t bytes); /* MB_TENSOR_ALIGNMENT, NULL on OOM */
void mb__aligned_free(void *p);
char *mb__strdup(const char *s); /* NULL in -> NULL out */
/* Seconds on CLOCK_MONOTONIC (core/alloc.c). */
double mb__now(void);
/* strcmp, except digit runs compare as numbers (test_data_set_2 < _10). */
int mb__natural_compare(const char *a, const char *b);

/* ---- checked arithmetic: return false on overflow ---- */
bool mb__mul_size(size_t a, size_t b, size_t *out);
bool mb__add_size(size_t a, size_t b, size_t *out);
bool mb__mul_i64(int64_t a, int64_t b, int64_t *out);
/* Product of dims with overflow and negativity checks; false on failure. */
bool mb__numel(int rank, const int64_t *dims, int64_t *numel_out);

/* ---- tensors (in-place, for tensors embedded in structs) ---- */
/* Sets dtype/shape and makes sure `t` owns at least nbytes of storage,
 * reusing the existing buffer when it is large enough. Checks overflow and
 * a sanity limit (MB_MAX_TENSOR_BYTES). Data contents are unspecified. */
#define MB_MAX_TENSOR_BYTES ((size_t)1 << 40)
mb_status mb__tensor_reset(mb_tensor *t, mb_dtype dtype, int rank,
                           const int64_t *dims, mb_error *err);
/* Sets dtype/shape/numel/nbytes only (no allocation). */
mb_status mb__tensor_set_shape(mb_tensor *t, mb_dtype dtype, int rank,
                               const int64_t *dims, mb_error *err);
/* Frees owned data and name, zeroes the struct. */
void mb__tensor_clear(mb_tensor *t);
/* "[1,3,224,224]" into buf. Returns buf. */
const char *mb__shape_str(int rank, const int64_t *dims, char *buf,
                          size_t size);

/* ---- half precision ---- */
float mb__f16_to_f32(uint16_t h);
uint16_t mb__f32_to_f16(float f); /* round to nearest even */
float mb__bf16_to_f32(uint16_t h);
uint16_t mb__f32_to_bf16(float f); /* round to nearest even */

/* Reads element i of any numeric tensor as double / int64. */
double mb__tensor_get_f64(const mb_tensor *t, int64_t i);
int64_t mb__tensor_get_i64(const mb_tensor *t, int64_t i);
/* Stores a double into element i, converting per ONNX Cast rules
 * (float->int truncates toward zero, saturation is not applied). */
void mb__tensor_set_f64(mb_tensor *t, int64_t i, double v);
/* Stores an integer into element i exactly: integer types keep v modulo
 * 2^bits (wrapping, as C integer arithmetic does), bool is v != 0, float
 * types round to nearest. A uint64 value travels as its int64 bit
 * pattern, the inverse of mb__tensor_get_i64. */
void mb__tensor_set_i64(mb_tensor *t, int64_t i, int64_t v);

/* ---- files ---- */
/* Reads a whole file. *data_out: malloc'd, caller frees. Size limit 4 GiB
 * unless the file is a model (the reader handles larger via mmap). */
mb_status mb__read_file(const char *path, void **data_out, size_t *size_out,
                        mb_error *err);
mb_status mb__write_file(const char *path, const void *data, size_t size,
                         mb_error *err);

/* ---- logging ---- */
typedef enum mb_log_level {
  MB_LOG_ERROR = 0,
  MB_LOG_WARN = 1,
  MB_LOG_INFO = 2,
  MB_LOG_DEBUG = 3
} mb_log_level;
void mb__log_set_level(mb_log_level level);
mb_log_level mb__log_get_level(void);
void mb__log(mb_log_level level, const char *fmt, ...) MB_PRINTF(2, 3);

/* ---- arena: many small allocations freed together ---- */
typedef struct mb_arena mb_arena;
mb_arena *mb__arena_create(void);
void mb__arena_free(mb_arena *arena);
/* 16-byte aligned, zero-filled; NULL on OOM. */
void *mb__arena_alloc(mb_arena *arena, size_t bytes);
char *mb__arena_strdup(mb_arena *arena, const char *s);
char *mb__arena_strndup(mb_arena *arena, const char *s, size_t n);

/* ---- thread pool (threadpool.c) ---- */
/* A pool of persistent worker threads for data-parallel kernel loops. One
 * owner (a session) uses it from one thread at a time. */
typedef struct mb_threadpool mb_threadpool;
/* A pool running jobs on `threads` threads: the caller plus threads - 1
 * workers (none when threads <= 1). Starting fewer workers than asked is
 * not an error (see mb__threadpool_threads). NULL on OOM. */
mb_threadpool *mb__threadpool_create(int threads);
/* Stops and joins the workers. NULL is a no-op. */
void mb__threadpool_free(mb_threadpool *pool);
/* Threads a job runs on, the caller included; 1 for NULL. */
int mb__threadpool_threads(const mb_threadpool *pool);
/* Calls fn(ctx, begin, end) over contiguous chunks that cover [0, n)
 * exactly once, at most one chunk per thread, the calling thread running
 * the first, and returns when all are done. Runs fn(ctx, 0, n) inline when
 * pool is NULL, has no workers, n is 1, or a job is already running (a
 * nested call from inside fn). fn must not fail: it has no way to report. */
void mb__parallel_for(mb_threadpool *pool, int64_t n,
                      void (*fn)(void *ctx, int64_t begin, int64_t end),
                      void *ctx);

/* ---- sha256 ---- */
typedef struct mb_sha256 {
  uint32_t state[8];
  uint64_t bit_count;
  uint8_t buffer[64];
  size_t buffer_len;
} mb_sha256;
void mb__sha256_init(mb_sha256 *ctx);
void mb__sha256_update(mb_sha256 *ctx, const void *data, size_t size);
void mb__sha256_final(mb_sha256 *ctx, uint8_t digest[32]);
void mb__sha256_hex(const uint8_t digest[32], char hex[65]);

/* ---- names (names.c) ---- */
/* Edit distance (Levenshtein plus adjacent transpositions), ignoring case:
 * ranks "did you mean" suggestions for conversion names and config keys. */
int mb__edit_distance(const char *a, const char *b);
/* Checks one "key=value" label of a run: a non-empty key of letters,
 * digits, '_', '-', '.' and '/' then '='; the value may be anything, even
 * empty. */
mb_status mb__check_label(const char *label, mb_error *err);

/* ---- text for a terminal (text.c) ---- */
/* Length of the valid UTF-8 sequence starting at s (1 for ASCII, strict:
 * no overlong forms, surrogates or values above U+10FFFF), or 0 when the
 * byte there does not start one. */
size_t mb__utf8_length(const char *s);
/* Text from outside (names, paths, labels, messages) as a terminal may
 * show it: control characters (C0 including tab and newline, DEL) and
 * bytes that are not UTF-8 become \xNN; C1 controls, the line separators
 * and the bidirectional controls become \uNNNN, so such text stays on its
 * line and cannot move the cursor, recolour or retitle the terminal.
 * Backslashes are left alone. */
bool mb__term_needs_escape(const char *s);
/* s itself when nothing needs escaping (no copy, no length limit), else
 * the escaped text in buf (caller-owned, size bytes, cut with "..." when
 * it does not fit). NULL reads as "(null)". */
const char *mb__term_text(const char *s, char *buf, size_t size);
/* The escaped text, whole, to f. */
void mb__term_put(FILE *f, const char *s);
/* A buffer size that fits an escaped name or path in one line. */
#define MB_TERM_TEXT_SIZE 1024

#endif /* MB_CORE_INTERNAL_H */
