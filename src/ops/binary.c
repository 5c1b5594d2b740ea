/* Binary elementwise operators with ONNX multidirectional broadcasting:
 * arithmetic (Add, Sub, Mul, Div, Mod, Pow, PRelu, BitShift), comparison
 * and logic (Equal, Less, Greater, LessOrEqual, GreaterOrEqual, And, Or,
 * Xor), and the variadic Sum, Mean, Max and Min built on the same
 * kernels.
 *
 * Kernels are generated per element type by macros and process a whole
 * contiguous row per call. Broadcasting happens outside the kernels: the
 * output shape is collapsed into as few rows as possible, so same-shape and
 * scalar operands become a single call of a tight loop, with no index math
 * or indirect call per element. float16 and bfloat16 are computed in
 * float32; double in double. What the elementwise families share (element
 * kinds, the broadcast loop nest, thread splitting, dtype conversion) is in
 * elementwise.h. */

#include "ops/elementwise.h"

#include <tgmath.h>

/* ------------------------------------------------------------------------ */
/* Binary kernels                                                            */
/* ------------------------------------------------------------------------ */

/* o[i] = f(a[i * sa], b[i * sb]) for i < n, with sa, sb in {0, 1}. */
typedef void (*ew_binary_fn)(const void *a, int64_t sa, const void *b,
                             int64_t sb, void *o, int64_t n);

/* Defines kernel ew_<op>_<sfx> for element type T (unsigned counterpart U,
 * for wrapping integer arithmetic) writing TO, with E(x, y) the expression.
 * The four loops let the compiler vectorise each broadcast pattern. */
#define EW_BINARY_KERNEL(op, sfx, T, U, TO, E)                                 \
  static void ew_##op##_##sfx(const void *pa, int64_t sa, const void *pb,      \
                              int64_t sb, void *po, int64_t n) {               \
    typedef T ew_t;                                                            \
    typedef U ew_u;                                                            \
    (void)sizeof(ew_u);                                                        \
    const ew_t *a = pa, *b = pb;                                               \
    TO *o = po;                                                                \
    if (sa && sb) {                                                            \
      for (int64_t i = 0; i < n; i++) {                                        \
        ew_t x = a[i], y = b[i];                                               \
        o[i] = (TO)(E(x, y));                                                  \
      }                                                                        \
    } else if (sa) {                                                           \
      const ew_t y = b[0];                                                     \
      for (int64_t i = 0; i < n; i++) {                                        \
        ew_t x = a[i];                                                         \
        o[i] = (TO)(E(x, y));                                                  \
      }                                                                        \
    } else if (sb) {                                                           \
      const ew_t x = a[0];                                                     \
      for (int64_t i = 0; i < n; i++) {                                        \
        ew_t y = b[i];                                                         \
        o[i] = (TO)(E(x, y));                                                  \
      }                                                                        \
    } else {                                                                   \
      const ew_t x = a[0], y = b[0];                                           \
      const TO v = (TO)(E(x, y));                                              \
      for (int64_t i = 0; i < n; i++)                                          \
        o[i] = v;                                                              \
    }                                                                          \
  }

/* Instantiation over type classes. TO is ew_t (same type) or uint8_t. */
#define EW_FLOATS(op, TO, E)                                                   \
  EW_BINARY_KERNEL(op, f32, float, float, TO, E)                               \
  EW_BINARY_KERNEL(op, f64, double, double, TO, E)
#define EW_SIGNED(op, TO, E)                                                   \
  EW_BINARY_KERNEL(op, i8, int8_t, uint8_t, TO, E)                             \
  EW_BINARY_KERNEL(op, i16, int16_t, uint16_t, TO, E)                          \
  EW_BINARY_KERNEL(op, i32, int32_t, uint32_t, TO, E)                          \
  EW_BINARY_KERNEL(op, i64, int64_t, uint64_t, TO, E)
#define EW_UNSIGNED(op, TO, E)                                                 \
  EW_BINARY_KERNEL(op, u8, uint8_t, uint8_t, TO, E)                            \
  EW_BINARY_KERNEL(op, u16, uint16_t, uint16_t, TO, E)                         \
  EW_BINARY_KERNEL(op, u32, uint32_t, uint32_t, TO, E)                         \
  EW_BINARY_KERNEL(op, u64, uint64_t, uint64_t, TO, E)

/* Designated initialisers of a kernel row. */
#define EW_FNS_FLOAT(op) [EW_F32] = ew_##op##_f32, [EW_F64] = ew_##op##_f64
#define EW_FNS_SIGNED(op)                                                      \
  [EW_I8] = ew_##op##_i8, [EW_I16] = ew_##op##_i16, [EW_I32] = ew_##op##_i32,  \
  [EW_I64] = ew_##op##_i64
#define EW_FNS_UNSIGNED(op)                                                    \
  [EW_U8] = ew_##op##_u8, [EW_U16] = ew_##op##_u16, [EW_U32] = ew_##op##_u32,  \
  [EW_U64] = ew_##op##_u64
#define EW_FNS_NUMERIC(op)                                                     \
  EW_FNS_FLOAT(op), EW_FNS_SIGNED(op), EW_FNS_UNSIGNED(op)

/* Integer arithmetic wraps (through the unsigned type) instead of
 * overflowing, and division by zero gives 0: user data must never reach
 * undefined behaviour. Integer division truncates toward zero like C and
 * onnxruntime. */
#define EW_ADD(x, y) ((x) + (y))
#define EW_SUB(x, y) ((x) - (y))
#define EW_MUL(x, y) ((x) * (y))
#define EW_DIV(x, y) ((x) / (y))
#define EW_IADD(x, y) ((ew_t)((ew_u)(x) + (ew_u)(y)))
#define EW_ISUB(x, y) ((ew_t)((ew_u)(x) - (ew_u)(y)))
/* Through uint64_t: uint16_t operands would otherwise be promoted to int,
 * whose multiplication can overflow. */
#define EW_IMUL(x, y) ((ew_t)((uint64_t)(ew_u)(x) * (uint64_t)(ew_u)(y)))
#define EW_SDIV(x, y)                                                          \
  ((y) == 0 ? 0 : (y) == -1 ? (ew_t)(0u - (ew_u)(x)) : (ew_t)((x) / (y)))
#define EW_UDIV(x, y) ((y) == 0 ? 0 : (ew_t)((x) / (y)))
/* Mod with fmod=0 takes the sign of the divisor (Python/numpy), fmod=1 the
 * sign of the dividend (C fmod). */
#define EW_SMOD(x, y) ew_smod_i64((x), (y))
#define EW_SFMOD(x, y) ((y) == 0 || (y) == -1 ? 0 : (ew_t)((x) % (y)))
#define EW_UMOD(x, y) ((y) == 0 ? 0 : (ew_t)((x) % (y)))
#define EW_FMOD(x, y) fmod((x), (y))
#define EW_FMODPY(x, y) ew_fmod_py((x), (y))
/* Min/Max propagate NaN like numpy's minimum/maximum. */
#define EW_MIN(x, y) ((x) != (x) || (x) < (y) ? (x) : (y))
#define EW_MAX(x, y) ((x) != (x) || (x) > (y) ? (x) : (y))
#define EW_IMIN(x, y) ((x) < (y) ? (x) : (y))
#define EW_IMAX(x, y) ((x) > (y) ? (x) : (y))
#define EW_POW(x, y) pow((x), (y))
#define EW_PRELU(x, y) ((x) < 0 ? (x) * (y) : (x))
#define EW_IPRELU(x, y) ((x) < 0 ? EW_IMUL(x, y) : (x))
#define EW_EQ(x, y) ((x) == (y))
#define EW_LT(x, y) ((x) < (y))
#define EW_GT(x, y) ((x) > (y))
#define EW_LE(x, y) ((x) <= (y))
#define EW_GE(x, y) ((x) >= (y))
#define EW_AND(x, y) (((x) != 0) & ((y) != 0))
#define EW_OR(x, y) (((x) != 0) | ((y) != 0))
#define EW_XOR(x, y) (((x) != 0) ^ ((y) != 0))
#define EW_SHL(x, y)                                                           \
  ((y) >= sizeof(ew_t) * 8 ? 0 : (ew_t)((uint64_t)(x) << (y)))
#define EW_SHR(x, y) ((y) >= sizeof(ew_t) * 8 ? 0 : (ew_t)((x) >> (y)))

static inline int64_t ew_smod_i64(int64_t x, int64_t y) {
  if (y == 0 || y == -1)
    return 0;
  int64_t r = x % y;
  return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
}

#define EW_FMOD_PY_DEF(T, name)                                                \
  static inline T name(T x, T y) {                                             \
    T r = fmod(x, y);                                                          \
    return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;                         \
  }
EW_FMOD_PY_DEF(float, ew_fmod_py_f32)
EW_FMOD_PY_DEF(double, ew_fmod_py_f64)
#define ew_fmod_py(x, y)                                                       \
  _Generic((x), float : ew_fmod_py_f32, double : ew_fmod_py_f64)(x, y)

EW_FLOATS(Add, ew_t, EW_ADD)
EW_SIGNED(Add, ew_t, EW_IADD)
EW_UNSIGNED(Add, ew_t, EW_IADD)
EW_FLOATS(Sub, ew_t, EW_SUB)
EW_SIGNED(Sub, ew_t, EW_ISUB)
EW_UNSIGNED(Sub, ew_t, EW_ISUB)
EW_FLOATS(Mul, ew_t, EW_MUL)
EW_SIGNED(Mul, ew_t, EW_IMUL)
EW_UNSIGNED(Mul, ew_t, EW_IMUL)
EW_FLOATS(Div, ew_t, EW_DIV)
EW_SIGNED(Div, ew_t, EW_SDIV)
EW_UNSIGNED(Div, ew_t, EW_UDIV)
EW_FLOATS(Mod, ew_t, EW_FMODPY)
EW_SIGNED(Mod, ew_t, EW_SMOD)
EW_UNSIGNED(Mod, ew_t, EW_UMOD)
EW_FLOATS(Fmod, ew_t, EW_FMOD)
EW_SIGNED(Fmod, ew_t, EW_SFMOD)
EW_UNSIGNED(Fmod, ew_t, EW_UMOD)
EW_FLOATS(Min, ew_t, EW_MIN)
EW_SIGNED(Min, ew_t, EW_IMIN)
EW_UNSIGNED(Min, ew_t, EW_IMIN)
EW_FLOATS(Max, ew_t, EW_MAX)
EW_SIGNED(Max, ew_t, EW_IMAX)
EW_UNSIGNED(Max, ew_t, EW_IMAX)
EW_FLOATS(Pow, ew_t, EW_POW)
EW_FLOATS(PRelu, ew_t, EW_PRELU)
EW_SIGNED(PRelu, ew_t, EW_IPRELU)
EW_FLOATS(Equal, uint8_t, EW_EQ)
EW_SIGNED(Equal, uint8_t, EW_EQ)
EW_UNSIGNED(Equal, uint8_t, EW_EQ)
EW_FLOATS(Less, uint8_t, EW_LT)
EW_SIGNED(Less, uint8_t, EW_LT)
EW_UNSIGNED(Less, uint8_t, EW_LT)
EW_FLOATS(Greater, uint8_t, EW_GT)
EW_SIGNED(Greater, uint8_t, EW_GT)
EW_UNSIGNED(Greater, uint8_t, EW_GT)
EW_FLOATS(LessOrEqual, uint8_t, EW_LE)
EW_SIGNED(LessOrEqual, uint8_t, EW_LE)
EW_UNSIGNED(LessOrEqual, uint8_t, EW_LE)
EW_FLOATS(GreaterOrEqual, uint8_t, EW_GE)
EW_SIGNED(GreaterOrEqual, uint8_t, EW_GE)
EW_UNSIGNED(GreaterOrEqual, uint8_t, EW_GE)
EW_BINARY_KERNEL(Equal, b, uint8_t, uint8_t, uint8_t, EW_EQ)
EW_BINARY_KERNEL(And, b, uint8_t, uint8_t, uint8_t, EW_AND)
EW_BINARY_KERNEL(Or, b, uint8_t, uint8_t, uint8_t, EW_OR)
EW_BINARY_KERNEL(Xor, b, uint8_t, uint8_t, uint8_t, EW_XOR)
EW_UNSIGNED(ShiftLeft, ew_t, EW_SHL)
EW_UNSIGNED(ShiftRight, ew_t, EW_SHR)

/* Integer Pow: exponentiation by squaring with wrapping; a negative
 * exponent gives 0 except for bases 1 and -1 (numpy raises instead). */
static int64_t ew_ipow(int64_t base, int64_t e) {
  if (e < 0)
    return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
  uint64_t r = 1, b = (uint64_t)base;
  while (e) {
    if (e & 1)
      r *= b;
    b *= b;
    e >>= 1;
  }
  return (int64_t)r;
}
#define EW_IPOW(x, y) ew_ipow((x), (y))
EW_BINARY_KERNEL(Pow, i64, int64_t, uint64_t, ew_t, EW_IPOW)

/* ------------------------------------------------------------------------ */
/* Binary operators                                                          */
/* ------------------------------------------------------------------------ */

typedef struct ew_binary {
  ew_binary_fn fn[EW_KIND_COUNT];
  bool to_bool; /* comparison: the output is bool */
} ew_binary;

#define EW_BINARY_OPS(X)                                                       \
  X(Add, false, EW_FNS_NUMERIC(Add))                                           \
  X(Sub, false, EW_FNS_NUMERIC(Sub))                                           \
  X(Mul, false, EW_FNS_NUMERIC(Mul))                                           \
  X(Div, false, EW_FNS_NUMERIC(Div))                                           \
  X(Mod, false, EW_FNS_NUMERIC(Mod))                                           \
  X(Fmod, false, EW_FNS_NUMERIC(Fmod))                                         \
  X(Min, false, EW_FNS_NUMERIC(Min))                                           \
  X(Max, false, EW_FNS_NUMERIC(Max))                                           \
  X(Sum, false, EW_FNS_NUMERIC(Add))                                           \
  X(Mean, false, EW_FNS_FLOAT(Add))                                            \
  X(PRelu, false, EW_FNS_FLOAT(PRelu), EW_FNS_SIGNED(PRelu))                   \
  X(Equal, true, EW_FNS_NUMERIC(Equal), [EW_BOOL] = ew_Equal_b)                \
  X(Less, true, EW_FNS_NUMERIC(Less))                                          \
  X(Greater, true, EW_FNS_NUMERIC(Greater))                                    \
  X(LessOrEqual, true, EW_FNS_NUMERIC(LessOrEqual))                            \
  X(GreaterOrEqual, true, EW_FNS_NUMERIC(GreaterOrEqual))                      \
  X(And, true, [EW_BOOL] = ew_And_b)                                           \
  X(Or, true, [EW_BOOL] = ew_Or_b)                                             \
  X(Xor, true, [EW_BOOL] = ew_Xor_b)                                           \
  X(ShiftLeft, false, EW_FNS_UNSIGNED(ShiftLeft))                              \
  X(ShiftRight, false, EW_FNS_UNSIGNED(ShiftRight))

enum {
#define EW_X(name, to_bool, ...) EW_B_##name,
  EW_BINARY_OPS(EW_X)
#undef EW_X
};

static const ew_binary ew_binary_table[] = {
#define EW_X(name, to_bool, ...) [EW_B_##name] = {{__VA_ARGS__}, to_bool},
    EW_BINARY_OPS(EW_X)
#undef EW_X
};

/* An operand as the loop sees it: a float view for half types. */
typedef struct ew_operand {
  const void *data;
  size_t esize;
  int64_t strides[MB_MAX_RANK];
} ew_operand;

typedef struct ew_binary_job {
  ew_binary_fn fn;
  const char *a, *b;
  size_t ea, eb;
  char *o;
  size_t eo;
} ew_binary_job;

static void ew_binary_row(void *user, const int64_t *off, int64_t out_off,
                          int64_t n, const int64_t *inner) {
  const ew_binary_job *j = user;
  j->fn(j->a + (size_t)off[0] * j->ea, inner[0], j->b + (size_t)off[1] * j->eb,
        inner[1], j->o + (size_t)out_off * j->eo, n);
}

/* A single row split over the session's threads (see EW_PARALLEL_BLOCK). */
typedef struct ew_binary_split {
  ew_binary_job *job;
  int64_t n, inner[2];
} ew_binary_split;

static void ew_binary_task(void *arg, int64_t b0, int64_t b1) {
  const ew_binary_split *sp = arg;
  int64_t begin = b0 * EW_PARALLEL_BLOCK;
  int64_t end = MB_MIN(sp->n, b1 * EW_PARALLEL_BLOCK);
  int64_t off[2] = {begin * sp->inner[0], begin * sp->inner[1]};
  ew_binary_row(sp->job, off, begin, end - begin, sp->inner);
}

/* o = fn(a, b) over the output shape; strides are per operand. pool: the
 * session's threads or NULL; only a single-row loop (same-shape or scalar
 * operands) is split. */
static void ew_binary_apply(mb_threadpool *pool, ew_binary_fn fn, const void *a,
                            size_t ea, const int64_t *sa, const void *b,
                            size_t eb, const int64_t *sb, void *o, size_t eo,
                            int rank, const int64_t *dims) {
  int64_t strides[EW_MAX_IN][MB_MAX_RANK];
  memcpy(strides[0], sa, sizeof(int64_t) * (size_t)rank);
  memcpy(strides[1], sb, sizeof(int64_t) * (size_t)rank);
  ew_loop l;
  ew_loop_init(&l, rank, dims, 2, strides);
  ew_binary_job j = {fn, a, b, ea, eb, o, eo};
  if (pool && l.rank == 1 && l.dims[0] >= EW_PARALLEL_MIN) {
    ew_binary_split sp = {&j, l.dims[0], {l.strides[0][0], l.strides[1][0]}};
    mb__parallel_for(pool, ew_blocks(l.dims[0]), ew_binary_task, &sp);
    return;
  }
  ew_loop_run(&l, ew_binary_row, &j);
}

/* Opset < 7 broadcasting: with broadcast=1 and an axis, B's dims line up
 * with A's starting at axis (B is padded with trailing 1s). PRelu before 7
 * applies a 1-D slope along the channel axis 1. */
static mb_status ew_legacy_view(mb_op_ctx *ctx, const mb_tensor *a,
                                const mb_tensor *b, bool channel_slope,
                                mb_tensor *view) {
  *view = *b;
  int64_t axis = -1;
  if (channel_slope) {
    if (b->rank == 1 && a->rank >= 2 && b->dims[0] == a->dims[1] &&
        b->dims[0] != 1)
      axis = 1;
  } else if (mb__node_attr_int(ctx->node, "broadcast", 0) != 0 &&
             mb__node_attr(ctx->node, "axis") != NULL) {
    axis = mb__node_attr_int(ctx->node, "axis", 0);
    if (axis < 0)
      axis += a->rank;
    /* axis > a->rank - b->rank, written so a fuzzed INT64_MAX axis does not
     * overflow (UBSan; found by fuzz model_run). */
    if (axis < 0 || axis > (int64_t)a->rank - b->rank)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "legacy broadcast axis %lld does not fit B of rank "
                          "%d into A of rank %d",
                          (long long)mb__node_attr_int(ctx->node, "axis", 0),
                          b->rank, a->rank);
  }
  if (axis >= 0) {
    view->rank = a->rank - (int)axis;
    for (int d = b->rank; d < view->rank; d++)
      view->dims[d] = 1;
  }
  return MB_STATUS_OK;
}

/* Checks that inputs [0, n) share one dtype and have kernels; sets the
 * output's dtype and broadcast shape. */
static mb_status ew_infer_same_type(mb_op_ctx *ctx, const ew_binary *op, int n,
                                    const mb_tensor *const *in) {
  mb_dtype dt = in[0]->dtype;
  for (int i = 1; i < n; i++)
    if (in[i]->dtype != dt)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "input %d is %s but input 0 is %s", i,
                          mb_dtype_name(in[i]->dtype), mb_dtype_name(dt));
  int kind = ew_kind_of(dt);
  if (kind < 0 || !op->fn[kind])
    return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                        "element type %s is not supported", mb_dtype_name(dt));
  int rank;
  int64_t dims[MB_MAX_RANK];
  mb_status st = mb__op_broadcast_shape(ctx, n, in, &rank, dims);
  if (st)
    return st;
  mb_tensor *out = mb__op_output(ctx, 0);
  if (!out)
    return MB_STATUS_OK;
  return mb__tensor_set_shape(out, op->to_bool ? MB_DTYPE_BOOL : dt, rank, dims,
                              ctx->err);
}

static mb_status ew_binary_operands(mb_op_ctx *ctx, bool legacy,
                                    bool channel_slope, mb_tensor *b_view,
                                    const mb_tensor *in[2]) {
  mb_status st = mb__op_check_arity(ctx, 2, 2);
  if (st)
    return st;
  in[0] = mb__op_input(ctx, 0);
  in[1] = mb__op_input(ctx, 1);
  if (legacy) {
    st = ew_legacy_view(ctx, in[0], in[1], channel_slope, b_view);
    if (st)
      return st;
    in[1] = b_view;
  }
  return MB_STATUS_OK;
}

static mb_status ew_binary_infer(mb_op_ctx *ctx, const ew_binary *op,
                                 bool legacy, bool channel_slope) {
  const mb_tensor *in[2];
  mb_tensor b_view;
  mb_status st = ew_binary_operands(ctx, legacy, channel_slope, &b_view, in);
  if (st)
    return st;
  return ew_infer_same_type(ctx, op, 2, in);
}

/* Runs a binary kernel on tensors (any rank, broadcast to `out`), handling
 * float16/bfloat16 through float32 scratch (slots 0..2). */
static mb_status ew_binary_exec(mb_op_ctx *ctx, ew_binary_fn fn, bool to_bool,
                                const mb_tensor *a, const mb_tensor *b,
                                mb_tensor *out) {
  if (out->numel == 0)
    return MB_STATUS_OK;
  const void *pa = a->data, *pb = b->data;
  void *po = out->data;
  size_t es = mb_dtype_size(a->dtype), eo = mb_dtype_size(out->dtype);
  bool half = ew_is_half(a->dtype);
  if (half) {
    pa = mb__op_as_f32(ctx, a, 0);
    pb = mb__op_as_f32(ctx, b, 1);
    es = sizeof(float);
    if (!to_bool) {
      po = mb__op_f32_dest(ctx, out, 2);
      eo = sizeof(float);
    }
    if (!pa || !pb || !po)
      return ctx->err && ctx->err->status ? ctx->err->status
                                          : MB_STATUS_OUT_OF_MEMORY;
  }
  int64_t sa[MB_MAX_RANK], sb[MB_MAX_RANK];
  mb__broadcast_strides(a, out->rank, out->dims, sa);
  mb__broadcast_strides(b, out->rank, out->dims, sb);
  ew_binary_apply(ctx->pool, fn, pa, es, sa, pb, es, sb, po, eo, out->rank,
                  out->dims);
  if (half && !to_bool)
    mb__op_store_f32(out, po);
  return MB_STATUS_OK;
}

static mb_status ew_binary_run(mb_op_ctx *ctx, const ew_binary *op, bool legacy,
                               bool channel_slope) {
  const mb_tensor *in[2];
  mb_tensor b_view;
  mb_status st = ew_binary_operands(ctx, legacy, channel_slope, &b_view, in);
  if (st)
    return st;
  mb_tensor *out = mb__op_output(ctx, 0);
  if (!out)
    return MB_STATUS_OK;
  ew_binary_fn fn = op->fn[ew_kind_of(in[0]->dtype)];
  return ew_binary_exec(ctx, fn, op->to_bool, in[0], in[1], out);
}

/* Per-operator entry points: current and legacy (opset < 7) broadcasting. */
#define EW_X(name, to_bool, ...)                                               \
  static MB_UNUSED mb_status ew_infer_##name(mb_op_ctx *ctx) {                 \
    return ew_binary_infer(ctx, &ew_binary_table[EW_B_##name], false, false);  \
  }                                                                            \
  static MB_UNUSED mb_status ew_run_##name(mb_op_ctx *ctx) {                   \
    return ew_binary_run(ctx, &ew_binary_table[EW_B_##name], false, false);    \
  }                                                                            \
  static MB_UNUSED mb_status ew_infer_##name##_v1(mb_op_ctx *ctx) {            \
    return ew_binary_infer(ctx, &ew_binary_table[EW_B_##name], true,           \
                           EW_B_##name == EW_B_PRelu);                         \
  }                                                                            \
  static MB_UNUSED mb_status ew_run_##name##_v1(mb_op_ctx *ctx) {              \
    return ew_binary_run(ctx, &ew_binary_table[EW_B_##name], true,             \
                         EW_B_##name == EW_B_PRelu);                           \
  }
EW_BINARY_OPS(EW_X)
#undef EW_X

/* Mod and BitShift select their kernels by attribute. */
static const ew_binary *ew_mod_op(mb_op_ctx *ctx) {
  return &ew_binary_table[mb__node_attr_int(ctx->node, "fmod", 0) ? EW_B_Fmod
                                                                  : EW_B_Mod];
}

static mb_status ew_mod_infer(mb_op_ctx *ctx) {
  return ew_binary_infer(ctx, ew_mod_op(ctx), false, false);
}

static mb_status ew_mod_run(mb_op_ctx *ctx) {
  return ew_binary_run(ctx, ew_mod_op(ctx), false, false);
}

static mb_status ew_bitshift_op(mb_op_ctx *ctx, const ew_binary **op_out) {
  const char *dir = mb__node_attr_string(ctx->node, "direction", "");
  if (strcmp(dir, "LEFT") == 0)
    *op_out = &ew_binary_table[EW_B_ShiftLeft];
  else if (strcmp(dir, "RIGHT") == 0)
    *op_out = &ew_binary_table[EW_B_ShiftRight];
  else
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "direction must be LEFT or RIGHT, not '%s'", dir);
  return MB_STATUS_OK;
}

static mb_status ew_bitshift_infer(mb_op_ctx *ctx) {
  const ew_binary *op;
  mb_status st = ew_bitshift_op(ctx, &op);
  return st ? st : ew_binary_infer(ctx, op, false, false);
}

static mb_status ew_bitshift_run(mb_op_ctx *ctx) {
  const ew_binary *op;
  mb_status st = ew_bitshift_op(ctx, &op);
  return st ? st : ew_binary_run(ctx, op, false, false);
}

/* ---- Pow: the exponent may have another type than the base ---- */

static mb_status ew_pow_infer_impl(mb_op_ctx *ctx, bool legacy) {
  const mb_tensor *in[2];
  mb_tensor b_view;
  mb_status st = ew_binary_operands(ctx, legacy, false, &b_view, in);
  if (st)
    return st;
  for (int i = 0; i < 2; i++)
    if (!ew_is_numeric(in[i]->dtype) || in[i]->dtype == MB_DTYPE_BOOL)
      return mb__op_error(ctx, MB_STATUS_UNSUPPORTED,
                          "element type %s is not supported",
                          mb_dtype_name(in[i]->dtype));
  int rank;
  int64_t dims[MB_MAX_RANK];
  st = mb__op_broadcast_shape(ctx, 2, in, &rank, dims);
  if (st)
    return st;
  mb_tensor *out = mb__op_output(ctx, 0);
  return out ? mb__tensor_set_shape(out, in[0]->dtype, rank, dims, ctx->err)
             : MB_STATUS_OK;
}

/* A scratch copy of t converted to dtype `to`. */
static const void *ew_converted(mb_op_ctx *ctx, const mb_tensor *t, mb_dtype to,
                                int slot) {
  if (t->dtype == to)
    return t->data;
  void *buf = mb__op_scratch(ctx, slot, (size_t)t->numel * mb_dtype_size(to));
  if (buf)
    mb__ew_convert(t->dtype, t->data, to, buf, t->numel);
  return buf;
}

static mb_status ew_pow_run_impl(mb_op_ctx *ctx, bool legacy) {
  const mb_tensor *in[2];
  mb_tensor b_view;
  mb_status st = ew_binary_operands(ctx, legacy, false, &b_view, in);
  if (st)
    return st;
  mb_tensor *out = mb__op_output(ctx, 0);
  if (!out || out->numel == 0)
    return MB_STATUS_OK;
  const mb_tensor *a = in[0], *b = in[1];
  if (a->dtype == b->dtype && mb__dtype_is_float(a->dtype))
    return ew_binary_exec(ctx,
                          a->dtype == MB_DTYPE_DOUBLE ? ew_Pow_f64 : ew_Pow_f32,
                          false, a, b, out);
  /* Mixed types: compute in int64 when both are integers, else in double,
   * then convert to the base's type. */
  bool ints = mb__dtype_is_int(a->dtype) && mb__dtype_is_int(b->dtype);
  mb_dtype wide = ints ? MB_DTYPE_INT64 : MB_DTYPE_DOUBLE;
  const void *pa = ew_converted(ctx, a, wide, 0);
  const void *pb = ew_converted(ctx, b, wide, 1);
  void *po = out->dtype == wide
                 ? out->data
                 : mb__op_scratch(ctx, 2, (size_t)out->numel * 8);
  if (!pa || !pb || !po)
    return ctx->err && ctx->err->status ? ctx->err->status
                                        : MB_STATUS_OUT_OF_MEMORY;
  int64_t sa[MB_MAX_RANK], sb[MB_MAX_RANK];
  mb__broadcast_strides(a, out->rank, out->dims, sa);
  mb__broadcast_strides(b, out->rank, out->dims, sb);
  ew_binary_apply(NULL, ints ? ew_Pow_i64 : ew_Pow_f64, pa, 8, sa, pb, 8, sb,
                  po, 8, out->rank, out->dims);
  if (po != out->data)
    mb__ew_convert(wide, po, out->dtype, out->data, out->numel);
  return MB_STATUS_OK;
}

static mb_status ew_pow_infer(mb_op_ctx *ctx) {
  return ew_pow_infer_impl(ctx, false);
}
static mb_status ew_pow_run(mb_op_ctx *ctx) {
  return ew_pow_run_impl(ctx, false);
}
static mb_status ew_pow_infer_v1(mb_op_ctx *ctx) {
  return ew_pow_infer_impl(ctx, true);
}
static mb_status ew_pow_run_v1(mb_op_ctx *ctx) {
  return ew_pow_run_impl(ctx, true);
}

/* ------------------------------------------------------------------------ */
/* Variadic Sum, Mean, Max, Min                                              */
/* ------------------------------------------------------------------------ */

static mb_status ew_variadic_infer(mb_op_ctx *ctx, const ew_binary *op) {
  if (ctx->n_inputs < 1)
    return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                        "needs at least one input");
  for (int i = 0; i < ctx->n_inputs; i++)
    if (!ctx->inputs[i])
      return mb__op_error(ctx, MB_STATUS_INVALID_ARGUMENT,
                          "input %d is missing", i);
  return ew_infer_same_type(ctx, op, ctx->n_inputs, ew_inputs(ctx));
}

/* Folds the inputs pairwise into the output: out = in0 op in1, then
 * out = out op in_k. Half types accumulate in a float32 buffer. */
static mb_status ew_variadic_run(mb_op_ctx *ctx, const ew_binary *op,
                                 bool mean) {
  mb_tensor *out = mb__op_output(ctx, 0);
  if (!out || out->numel == 0)
    return MB_STATUS_OK;
  const mb_tensor *const *in = ew_inputs(ctx);
  int n = ctx->n_inputs;
  mb_dtype dt = in[0]->dtype;
  int kind = ew_kind_of(dt);
  bool half = ew_is_half(dt);
  size_t es = half ? sizeof(float) : mb_dtype_size(dt);
  void *acc = half ? (void *)mb__op_f32_dest(ctx, out, 2) : out->data;
  if (!acc)
    return ew_scratch_failed(ctx);
  int64_t s_acc[MB_MAX_RANK], s_first[MB_MAX_RANK], s_in[MB_MAX_RANK];
  mb__contiguous_strides(out->rank, out->dims, s_acc);
  mb__broadcast_strides(in[0], out->rank, out->dims, s_first);
  const void *first = half ? mb__op_as_f32(ctx, in[0], 0) : in[0]->data;
  if (!first)
    return ew_scratch_failed(ctx);
  if (n == 1) /* the output has the input's shape */
    memcpy(acc, first, (size_t)out->numel * es);
  for (int k = 1; k < n; k++) {
    const void *src = half ? mb__op_as_f32(ctx, in[k], 1) : in[k]->data;
    if (!src)
      return ew_scratch_failed(ctx);
    mb__broadcast_strides(in[k], out->rank, out->dims, s_in);
    if (k == 1)
      ew_binary_apply(NULL, op->fn[kind], first, es, s_first, src, es, s_in,
                      acc, es, out->rank, out->dims);
    else
      ew_binary_apply(NULL, op->fn[kind], acc, es, s_acc, src, es, s_in, acc,
                      es, out->rank, out->dims);
  }
  if (mean && kind == EW_F64) {
    double *d = acc;
    for (int64_t i = 0; i < out->numel; i++)
      d[i] /= n;
  } else if (mean) {
    float *f = acc;
    const float scale = 1.0f / (float)n;
    for (int64_t i = 0; i < out->numel; i++)
      f[i] *= scale;
  }
  if (half)
    mb__op_store_f32(out, acc);
  return MB_STATUS_OK;
}

#define EW_VARIADIC(op, mean)                                                  \
  static mb_status ew_infer_var_##op(mb_op_ctx *ctx) {                         \
    return ew_variadic_infer(ctx, &ew_binary_table[EW_B_##op]);                \
  }                                                                            \
  static mb_status ew_run_var_##op(mb_op_ctx *ctx) {                           \
    return ew_variadic_run(ctx, &ew_binary_table[EW_B_##op], mean);            \
  }
EW_VARIADIC(Sum, false)
EW_VARIADIC(Mean, true)
EW_VARIADIC(Max, false)
EW_VARIADIC(Min, false)

/* ------------------------------------------------------------------------ */
/* Registration                                                             */
/* ------------------------------------------------------------------------ */

const mb_op_def mb__ops_binary[] = {
    /* Binary: opset 1-6 used limited broadcasting (attributes broadcast and
     * axis); opset 7 introduced numpy-style multidirectional broadcasting. */
    {"", "Add", 1, ew_infer_Add_v1, ew_run_Add_v1, 0},
    EW_ROW(Add, 7),
    {"", "Sub", 1, ew_infer_Sub_v1, ew_run_Sub_v1, 0},
    EW_ROW(Sub, 7),
    {"", "Mul", 1, ew_infer_Mul_v1, ew_run_Mul_v1, 0},
    EW_ROW(Mul, 7),
    {"", "Div", 1, ew_infer_Div_v1, ew_run_Div_v1, 0},
    EW_ROW(Div, 7),
    {"", "Pow", 1, ew_pow_infer_v1, ew_pow_run_v1, 0},
    {"", "Pow", 7, ew_pow_infer, ew_pow_run, 0},
    {"", "PRelu", 1, ew_infer_PRelu_v1, ew_run_PRelu_v1, 0},
    EW_ROW(PRelu, 7),
    {"", "Equal", 1, ew_infer_Equal_v1, ew_run_Equal_v1, 0},
    EW_ROW(Equal, 7),
    {"", "Less", 1, ew_infer_Less_v1, ew_run_Less_v1, 0},
    EW_ROW(Less, 7),
    {"", "Greater", 1, ew_infer_Greater_v1, ew_run_Greater_v1, 0},
    EW_ROW(Greater, 7),
    EW_ROW(LessOrEqual, 12),
    EW_ROW(GreaterOrEqual, 12),
    {"", "And", 1, ew_infer_And_v1, ew_run_And_v1, 0},
    EW_ROW(And, 7),
    {"", "Or", 1, ew_infer_Or_v1, ew_run_Or_v1, 0},
    EW_ROW(Or, 7),
    {"", "Xor", 1, ew_infer_Xor_v1, ew_run_Xor_v1, 0},
    EW_ROW(Xor, 7),
    {"", "Mod", 10, ew_mod_infer, ew_mod_run, 0},
    {"", "BitShift", 11, ew_bitshift_infer, ew_bitshift_run, 0},
    /* Variadic; numpy broadcasting (opset 8) is a superset of opset 1-6. */
    {"", "Sum", 1, ew_infer_var_Sum, ew_run_var_Sum, 0},
    {"", "Mean", 1, ew_infer_var_Mean, ew_run_var_Mean, 0},
    {"", "Max", 1, ew_infer_var_Max, ew_run_var_Max, 0},
    {"", "Min", 1, ew_infer_var_Min, ew_run_var_Min, 0},
};
MB_OP_TABLE_END(binary);
