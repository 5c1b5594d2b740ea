/* What the elementwise operator families share: unary.c (math,
 * activations, Clip), binary.c (broadcasting binary and variadic
 * operators), where.c (Where) and cast.c (Cast, CastLike, Identity, Dropout,
 * and the dtype conversions). Internal to src/ops/: macros, static inline
 * helpers, and mb__ew_convert, defined in cast.c. */
#ifndef MB_OPS_ELEMENTWISE_H
#define MB_OPS_ELEMENTWISE_H

#include "ops/op.h"

/* ------------------------------------------------------------------------ */
/* Element kinds: the C types kernels are instantiated for.                 */
/* ------------------------------------------------------------------------ */

typedef enum ew_kind {
  EW_F32, /* also float16 and bfloat16, converted */
  EW_F64,
  EW_I8,
  EW_I16,
  EW_I32,
  EW_I64,
  EW_U8,
  EW_U16,
  EW_U32,
  EW_U64,
  EW_BOOL,
  EW_KIND_COUNT
} ew_kind;

/* Kind + 1 per dtype, so that 0 means "no kernels for this dtype". */
static const signed char ew_kind_table[MB_DTYPE_COUNT] = {
    [MB_DTYPE_FLOAT] = EW_F32 + 1,    [MB_DTYPE_FLOAT16] = EW_F32 + 1,
    [MB_DTYPE_BFLOAT16] = EW_F32 + 1, [MB_DTYPE_DOUBLE] = EW_F64 + 1,
    [MB_DTYPE_INT8] = EW_I8 + 1,      [MB_DTYPE_INT16] = EW_I16 + 1,
    [MB_DTYPE_INT32] = EW_I32 + 1,    [MB_DTYPE_INT64] = EW_I64 + 1,
    [MB_DTYPE_UINT8] = EW_U8 + 1,     [MB_DTYPE_UINT16] = EW_U16 + 1,
    [MB_DTYPE_UINT32] = EW_U32 + 1,   [MB_DTYPE_UINT64] = EW_U64 + 1,
    [MB_DTYPE_BOOL] = EW_BOOL + 1,
};

/* The kernel kind of a dtype, or -1. */
static inline int ew_kind_of(mb_dtype dt) {
  return (unsigned)dt < MB_DTYPE_COUNT ? ew_kind_table[dt] - 1 : -1;
}

static inline bool ew_is_half(mb_dtype dt) {
  return dt == MB_DTYPE_FLOAT16 || dt == MB_DTYPE_BFLOAT16;
}

/* ------------------------------------------------------------------------ */
/* Broadcast loop nest (binary.c, where.c)                                  */
/* ------------------------------------------------------------------------ */

#define EW_MAX_IN 3

typedef struct ew_loop {
  int rank; /* >= 1 */
  int n_in;
  int64_t dims[MB_MAX_RANK];
  int64_t strides[EW_MAX_IN][MB_MAX_RANK]; /* elements, 0 on broadcast */
} ew_loop;

/* Drops size-1 dimensions and merges neighbours that are contiguous for
 * every operand, so that same-shape operands become one row. The innermost
 * stride of each operand is then 0 or 1. */
static inline void ew_loop_init(ew_loop *l, int rank, const int64_t *dims,
                                int n_in, int64_t (*strides)[MB_MAX_RANK]) {
  l->rank = 0;
  l->n_in = n_in;
  for (int d = 0; d < rank; d++) {
    if (dims[d] == 1)
      continue;
    int r = l->rank;
    bool merge = r > 0;
    for (int k = 0; k < n_in && merge; k++)
      merge = l->strides[k][r - 1] == strides[k][d] * dims[d];
    if (merge) {
      l->dims[r - 1] *= dims[d];
      for (int k = 0; k < n_in; k++)
        l->strides[k][r - 1] = strides[k][d];
      continue;
    }
    l->dims[r] = dims[d];
    for (int k = 0; k < n_in; k++)
      l->strides[k][r] = strides[k][d];
    l->rank++;
  }
  if (l->rank == 0) { /* a single element */
    l->rank = 1;
    l->dims[0] = 1;
    for (int k = 0; k < n_in; k++)
      l->strides[k][0] = 0;
  }
}

/* One row of the loop nest: operand element offsets, output offset, length
 * and the operands' innermost strides (0 or 1). */
typedef void (*ew_row_fn)(void *user, const int64_t *in_off, int64_t out_off,
                          int64_t n, const int64_t *inner_stride);

static inline void ew_loop_run(const ew_loop *l, ew_row_fn row, void *user) {
  int inner = l->rank - 1;
  int64_t n = l->dims[inner];
  int64_t rows = 1;
  for (int d = 0; d < inner; d++)
    rows *= l->dims[d];
  int64_t inner_stride[EW_MAX_IN];
  for (int k = 0; k < l->n_in; k++)
    inner_stride[k] = l->strides[k][inner];
  int64_t idx[MB_MAX_RANK] = {0}, off[EW_MAX_IN] = {0};
  for (int64_t r = 0; r < rows; r++) {
    row(user, off, r * n, n, inner_stride);
    for (int d = inner - 1; d >= 0; d--) {
      for (int k = 0; k < l->n_in; k++)
        off[k] += l->strides[k][d];
      if (++idx[d] < l->dims[d])
        break;
      for (int k = 0; k < l->n_in; k++)
        off[k] -= l->strides[k][d] * l->dims[d];
      idx[d] = 0;
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Splitting over threads                                                   */
/* ------------------------------------------------------------------------ */

/* Same-shape (single-row) loops of at least this many elements are split
 * over the session's threads. They are memory-bound and fast, so below it
 * waking the pool costs about what it saves. */
#define EW_PARALLEL_MIN ((int64_t)1 << 16)
/* Threads split a row at multiples of this many elements: a multiple of
 * every vector width and alignment, so each element takes the same path
 * through a kernel (vector body or scalar tail) as in a serial run and the
 * results do not depend on the thread count. */
#define EW_PARALLEL_BLOCK ((int64_t)4096)

static inline int64_t ew_blocks(int64_t n) {
  return (n + EW_PARALLEL_BLOCK - 1) / EW_PARALLEL_BLOCK;
}

/* ------------------------------------------------------------------------ */
/* Conversions between dtypes (cast.c)                                      */
/* ------------------------------------------------------------------------ */

static inline bool ew_is_intlike(mb_dtype dt) {
  return mb__dtype_is_int(dt) || dt == MB_DTYPE_BOOL;
}

static inline bool ew_is_numeric(mb_dtype dt) {
  return mb__dtype_is_float(dt) || ew_is_intlike(dt);
}

/* Converts n elements between any two numeric dtypes in chunks, through
 * int64 when both are integer-like (exact) and through double otherwise. */
void mb__ew_convert(mb_dtype from, const void *src, mb_dtype to, void *dst,
                    int64_t n);

/* ------------------------------------------------------------------------ */
/* Small shared pieces                                                      */
/* ------------------------------------------------------------------------ */

/* The inputs as a const array (all present, checked by the infer step). */
static inline const mb_tensor *const *ew_inputs(mb_op_ctx *ctx) {
  return (const mb_tensor *const *)ctx->inputs;
}

/* The status of a failed mb__op_scratch or float view (OOM unless the error
 * record says otherwise). */
static inline mb_status ew_scratch_failed(mb_op_ctx *ctx) {
  return ctx->err && ctx->err->status ? ctx->err->status
                                      : MB_STATUS_OUT_OF_MEMORY;
}

/* A table row whose infer and run are ew_infer_<op> and ew_run_<op>. */
#define EW_ROW(op, since)                                                      \
  { "", #op, since, ew_infer_##op, ew_run_##op, 0 }

#endif /* MB_OPS_ELEMENTWISE_H */
