/* Helpers shared by the data-movement operator families: indexing.c
 * (Gather, Scatter, OneHot), layout.c (Slice, Concat, Split, Tile, Pad,
 * ReverseSequence, DepthToSpace, SpaceToDepth) and selection.c (NonZero,
 * TopK, CumSum, Compress, Unique). Internal to src/ops/; everything here is
 * a macro or static inline, so each family compiles in only what it uses. */
#ifndef MB_OPS_MOVEMENT_H
#define MB_OPS_MOVEMENT_H

#include "ops/op.h"

#define CHECK(expr)                                                            \
  do {                                                                         \
    mb_status check_status_ = (expr);                                          \
    if (check_status_ != MB_STATUS_OK)                                         \
      return check_status_;                                                    \
  } while (0)

static inline mb_status element_size(mb_op_ctx *ctx, const mb_tensor *t,
                                     size_t *size_out) {
  size_t size = mb_dtype_size(t->dtype);
  if (size == 0)
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "element type %s is not supported",
                        mb_dtype_name(t->dtype));
  *size_out = size;
  return MB_STATUS_OK;
}

static inline mb_status need_index_type(mb_op_ctx *ctx, const mb_tensor *t,
                                        const char *what) {
  if (t->dtype != MB_DTYPE_INT64 && t->dtype != MB_DTYPE_INT32)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "%s must be int32 or int64, got %s", what,
                        mb_dtype_name(t->dtype));
  return MB_STATUS_OK;
}

/* Element i of an int32/int64 index tensor. */
static inline int64_t index_at(const mb_tensor *t, int64_t i) {
  return t->dtype == MB_DTYPE_INT64 ? ((const int64_t *)t->data)[i]
                                    : ((const int32_t *)t->data)[i];
}

static inline int64_t prod(const int64_t *dims, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++)
    p *= dims[i];
  return p;
}

/* Fills n elements of dst with the element at `value`. */
static inline void fill_pattern(void *dst, const void *value, size_t esize,
                                int64_t n) {
  if (n <= 0)
    return;
  memcpy(dst, value, esize);
  int64_t done = 1;
  while (done < n) {
    int64_t chunk = MB_MIN(done, n - done);
    memcpy((char *)dst + done * esize, dst, (size_t)chunk * esize);
    done += chunk;
  }
}

#endif /* MB_OPS_MOVEMENT_H */
