/* Where: chooses elementwise between X and Y by a bool condition, with
 * ONNX multidirectional broadcasting of all three, over the broadcast loop
 * nest that binary.c also uses (elementwise.h). */

#include "ops/elementwise.h"

/* ------------------------------------------------------------------------ */
/* Where                                                                     */
/* ------------------------------------------------------------------------ */

typedef void (*ew_where_fn)(const uint8_t *c, int64_t sc, const void *x,
                            int64_t sx, const void *y, int64_t sy, void *o,
                            int64_t n);

/* Where only moves elements, so kernels exist per element size. */
#define EW_WHERE_KERNEL(T)                                                     \
  static void ew_where_##T(const uint8_t *c, int64_t sc, const void *px,       \
                           int64_t sx, const void *py, int64_t sy, void *po,   \
                           int64_t n) {                                        \
    const T *x = px, *y = py;                                                  \
    T *o = po;                                                                 \
    if (sc && sx && sy) {                                                      \
      for (int64_t i = 0; i < n; i++)                                          \
        o[i] = c[i] ? x[i] : y[i];                                             \
      return;                                                                  \
    }                                                                          \
    for (int64_t i = 0; i < n; i++)                                            \
      o[i] = c[i * sc] ? x[i * sx] : y[i * sy];                                \
  }
EW_WHERE_KERNEL(uint8_t)
EW_WHERE_KERNEL(uint16_t)
EW_WHERE_KERNEL(uint32_t)
EW_WHERE_KERNEL(uint64_t)

typedef struct ew_where_job {
  ew_where_fn fn;
  const uint8_t *c;
  const char *x, *y;
  char *o;
  size_t es;
} ew_where_job;

static void ew_where_row(void *user, const int64_t *off, int64_t out_off,
                         int64_t n, const int64_t *inner) {
  const ew_where_job *j = user;
  j->fn(j->c + off[0], inner[0], j->x + (size_t)off[1] * j->es, inner[1],
        j->y + (size_t)off[2] * j->es, inner[2], j->o + (size_t)out_off * j->es,
        n);
}

static ew_where_fn ew_where_for_size(size_t es) {
  switch (es) {
  case 1:
    return ew_where_uint8_t;
  case 2:
    return ew_where_uint16_t;
  case 4:
    return ew_where_uint32_t;
  case 8:
    return ew_where_uint64_t;
  default:
    return NULL;
  }
}

static mb_status ew_where_infer(mb_op_ctx *ctx) {
  mb_status st = mb__op_check_arity(ctx, 3, 3);
  if (st)
    return st;
  const mb_tensor *const *in = ew_inputs(ctx);
  if (in[0]->dtype != MB_DTYPE_BOOL)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "condition must be bool, not %s",
                        mb_dtype_name(in[0]->dtype));
  if (in[1]->dtype != in[2]->dtype)
    return mb__op_error(ctx, MB_STATUS_SHAPE, "X is %s but Y is %s",
                        mb_dtype_name(in[1]->dtype),
                        mb_dtype_name(in[2]->dtype));
  if (!ew_where_for_size(mb_dtype_size(in[1]->dtype)))
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "element type %s is not supported",
                        mb_dtype_name(in[1]->dtype));
  int rank;
  int64_t dims[MB_MAX_RANK];
  st = mb__op_broadcast_shape(ctx, 3, in, &rank, dims);
  if (st)
    return st;
  mb_tensor *out = mb__op_output(ctx, 0);
  return out ? mb__tensor_set_shape(out, in[1]->dtype, rank, dims, ctx->err)
             : MB_STATUS_OK;
}

static mb_status ew_where_run(mb_op_ctx *ctx) {
  const mb_tensor *const *in = ew_inputs(ctx);
  mb_tensor *out = mb__op_output(ctx, 0);
  if (!out || out->numel == 0)
    return MB_STATUS_OK;
  int64_t strides[EW_MAX_IN][MB_MAX_RANK];
  for (int k = 0; k < 3; k++)
    mb__broadcast_strides(in[k], out->rank, out->dims, strides[k]);
  ew_loop l;
  ew_loop_init(&l, out->rank, out->dims, 3, strides);
  size_t es = mb_dtype_size(out->dtype);
  ew_where_job j = {ew_where_for_size(es), in[0]->data, in[1]->data,
                    in[2]->data,           out->data,   es};
  ew_loop_run(&l, ew_where_row, &j);
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Registration                                                             */
/* ------------------------------------------------------------------------ */

const mb_op_def mb__ops_where[] = {
    {"", "Where", 9, ew_where_infer, ew_where_run, 0},
};
MB_OP_TABLE_END(where);
