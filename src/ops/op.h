/* Operator interface of the reference interpreter.
 *
 * Each operator family file (unary.c, conv.c, ...) defines a table of
 * mb_op_def rows and registers it with one row in MB_OP_FAMILY_LIST below,
 * which registry.c walks. The registry resolves a node to the row with the
 * highest since_version not above the model's opset for the node's domain.
 *
 * Calling protocol, for every node, every run:
 *   1. infer(ctx): inputs have dtype/rank/dims set; their data may be NULL
 *      during static shape inference (then an op whose output shape depends
 *      on input *values* returns MB_STATUS_DYNAMIC via MB_OP_NEED_DATA).
 *      infer validates inputs (dtype, rank, attribute values) with a clear
 *      message and sets dtype/rank/dims of every non-NULL output with
 *      mb__tensor_set_shape. It never allocates output data.
 *   2. The interpreter allocates each output's data (nbytes).
 *   3. run(ctx): computes the outputs. Input data is never NULL here unless
 *      the tensor has numel 0.
 * Outputs the model does not use (omitted optional outputs) are NULL in
 * ctx->outputs; inputs omitted by the model are NULL in ctx->inputs.
 * Kernels must not keep pointers to tensors between calls. */
#ifndef MB_OPS_OP_H
#define MB_OPS_OP_H

#include "core/ir.h"
#include "core/sequence.h"

typedef struct mb_op_ctx mb_op_ctx;
typedef mb_status (*mb_op_fn)(mb_op_ctx *ctx);

/* Row flags. */
enum {
  /* run() reads only the inputs' dtypes and shapes, never their data, so
   * static inference can evaluate it when the data is unknown (Shape). */
  MB_OP_SHAPE_ONLY = 1u << 0,
  /* The operator takes or makes sequences or optionals: its inputs may be
   * of any kind (ctx->in_seqs), and infer sets the kind of every output
   * (ctx->out_seqs); the interpreter allocates only the tensor ones. Other
   * operators get tensors only (the interpreter refuses the rest). */
  MB_OP_VALUES = 1u << 1,
  /* run() sets the kind, shape and storage of every output itself
   * (control flow: the shapes come from running a subgraph); infer only
   * validates. Static inference leaves such outputs unknown. */
  MB_OP_ALLOCATES = 1u << 2,
  /* Output 0 may be omitted ("" in the model: LSTM's Y). For every other
   * row the interpreter refuses a node without it before infer runs. */
  MB_OP_OPTIONAL_FIRST_OUTPUT = 1u << 3,
};

typedef struct mb_op_def {
  const char *domain; /* "" for ai.onnx, "com.microsoft", ... */
  const char *op_type;
  int since_version;
  mb_op_fn infer;
  mb_op_fn run;
  unsigned flags; /* MB_OP_* bits; 0 for most rows */
} mb_op_def;

#define MB_OP_SCRATCH_SLOTS 5

/* A value as operators see it: its tensor and its sequence record (seq
 * NULL, or kind TENSOR, for a plain tensor). */
typedef struct mb_op_value {
  mb_tensor *tensor;
  mb__sequence *seq;
} mb_op_value;

/* Runs `body`, one of the node's graph attributes, with its formal inputs
 * bound to `inputs` (n_inputs of them, borrowed while it runs; tensors are
 * read, never written) and sets *outputs_out to its n outputs, which stay
 * valid until the next call for the same body. Outer-scope names resolve
 * to the enclosing graphs' values. */
typedef mb_status (*mb_op_subgraph_fn)(mb_op_ctx *ctx, const mb_graph *body,
                                       int n_inputs, const mb_op_value *inputs,
                                       const mb_op_value **outputs_out,
                                       int *n_outputs_out);

struct mb_op_ctx {
  const mb_node *node;
  const mb_graph *graph;
  int64_t opset; /* the model's opset for node->domain */
  int n_inputs;
  mb_tensor *const *inputs; /* n_inputs entries, NULL when omitted */
  int n_outputs;
  mb_tensor *const *outputs; /* n_outputs entries, NULL when omitted */
  int threads;               /* >= 1 */
  /* Workers for the loops that sgemm does not cover, owned by the session
   * and used only outside sgemm calls (OpenBLAS has its own threads). NULL
   * means serial; kernels must work with it (tests build ctx by hand). */
  struct mb_threadpool *pool;
  mb_error *err;
  /* Reusable scratch memory owned by the session (see mb__op_scratch). */
  void **scratch;
  size_t *scratch_size;
  /* Sequence records of the inputs and outputs (n_inputs / n_outputs
   * entries, NULL where omitted), or NULL when the context has none (tests
   * that build a context by hand): everything is then a tensor. */
  mb__sequence *const *in_seqs;
  mb__sequence *const *out_seqs;
  /* Subgraph execution for control flow, or NULL (see mb_op_subgraph_fn). */
  mb_op_subgraph_fn run_subgraph;
  void *subgraph_user;
};

/* Returns a buffer of at least `bytes` bytes (64-byte aligned) in scratch
 * slot `slot` (0..MB_OP_SCRATCH_SLOTS-1), valid until the next call with the
 * same slot. NULL on OOM (ctx->err set). Different slots never alias. */
void *mb__op_scratch(mb_op_ctx *ctx, int slot, size_t bytes);

/* Work (in elements touched) below which a kernel loop stays serial:
 * publishing a job and waiting for it costs a few microseconds, about what
 * copying this many floats takes. */
#define MB_OP_PARALLEL_MIN_WORK ((int64_t)1 << 14)

/* ctx->pool when `work` is worth splitting, else NULL (serial). */
static inline struct mb_threadpool *mb__op_pool(const mb_op_ctx *ctx,
                                                int64_t work) {
  return work >= MB_OP_PARALLEL_MIN_WORK ? ctx->pool : NULL;
}

/* Error with the node's op type and name prepended:
 * "Conv 'conv1': kernel_shape has 3 entries for a 4-D input". */
mb_status mb__op_error(mb_op_ctx *ctx, mb_status status, const char *fmt, ...)
    MB_PRINTF(3, 4);
/* Returns status; when it is an error, prepends the node's label to the
 * message in ctx->err, as mb__op_error would have (for errors of helpers
 * that do not know the node, such as core/sequence.h's). */
mb_status mb__op_label_error(mb_op_ctx *ctx, mb_status status);

/* The most iterations one Loop runs (2^20, control.c). Only the fuzz
 * targets lower it: a fuzzed Loop running to 2^20 iterations through the
 * reference and each hybrid runtime took 33 s under ASan, past libFuzzer's
 * unit timeout, and says nothing that 2^12 iterations do not. */
extern int64_t mb__loop_max_iterations;

/* Input i, or NULL when i >= n_inputs or omitted. */
static inline mb_tensor *mb__op_input(mb_op_ctx *ctx, int i) {
  return i < ctx->n_inputs ? ctx->inputs[i] : NULL;
}
static inline mb_tensor *mb__op_output(mb_op_ctx *ctx, int i) {
  return i < ctx->n_outputs ? ctx->outputs[i] : NULL;
}

/* What input i holds (MB__KIND_TENSOR when the context has no records). */
static inline mb__kind mb__op_input_kind(const mb_op_ctx *ctx, int i) {
  return ctx->in_seqs && i < ctx->n_inputs && ctx->in_seqs[i]
             ? ctx->in_seqs[i]->kind
             : MB__KIND_TENSOR;
}

/* Output j's sequence record, or NULL with an error when the context has
 * none (operators that make sequences need an interpreter's context). */
mb__sequence *mb__op_output_seq(mb_op_ctx *ctx, int j);
/* Marks output j a tensor (forgetting a sequence it held last run). */
void mb__op_output_is_tensor(mb_op_ctx *ctx, int j);
/* dst = a copy of src (shape, type, data); dst is reallocated as needed. */
mb_status mb__op_copy_tensor(mb_op_ctx *ctx, mb_tensor *dst,
                             const mb_tensor *src);
/* Output j = a copy of `src`, of whatever kind (tensor, sequence, none). */
mb_status mb__op_set_output_value(mb_op_ctx *ctx, int j,
                                  const mb_op_value *src);

/* Fails unless at least min inputs are present (non-NULL) among the first
 * `min`, and n_inputs <= max. */
mb_status mb__op_check_arity(mb_op_ctx *ctx, int min, int max);

/* In infer: returns MB_STATUS_DYNAMIC (without a message on the error, as
 * it is not a user-facing failure) when input i's data is not known. */
#define MB_OP_NEED_DATA(ctx, i)                                                \
  do {                                                                         \
    const mb_tensor *mb_need_ = mb__op_input((ctx), (i));                      \
    if (mb_need_ && mb_need_->numel > 0 && mb_need_->data == NULL)             \
      return MB_STATUS_DYNAMIC;                                                \
  } while (0)

/* Bound of kernel sizes, strides, dilations, pads and groups: far beyond
 * any real model, and small enough that geometry arithmetic cannot
 * overflow. */
#define MB_OP_ATTR_MAX ((int64_t)1 << 24)

/* Reads INTS attribute `name` with exactly `count` entries into out (or
 * fills `def` when it is absent); every value must lie in
 * [min_value, MB_OP_ATTR_MAX]. */
mb_status mb__op_attr_ints(mb_op_ctx *ctx, const char *name, int count,
                           int64_t def, int64_t min_value, int64_t *out);

/* Normalises a possibly negative axis against rank; fails with a message
 * naming the attribute when out of range. */
mb_status mb__op_axis(mb_op_ctx *ctx, int64_t axis, int rank, const char *what,
                      int *axis_out);

/* Reads an integer tensor (int32/int64) into int64 values; fails when the
 * dtype is not integer. values_out must hold t->numel entries. */
mb_status mb__op_read_ints(mb_op_ctx *ctx, const mb_tensor *t,
                           int64_t *values_out, int64_t max_count);

/* ---- broadcasting (ONNX multidirectional rules) ---- */
/* Output shape of broadcasting n shapes; fails with a message naming both
 * shapes when incompatible. */
mb_status mb__op_broadcast_shape(mb_op_ctx *ctx, int n,
                                 const mb_tensor *const *tensors, int *rank_out,
                                 int64_t *dims_out);
/* Element strides of `t` viewed at the output shape (0 on broadcast dims).
 * out_rank >= t->rank. */
void mb__broadcast_strides(const mb_tensor *t, int out_rank,
                           const int64_t *out_dims, int64_t *strides_out);
/* Contiguous row-major strides of a shape. */
void mb__contiguous_strides(int rank, const int64_t *dims,
                            int64_t *strides_out);

/* ---- 8-bit integer tensors (ConvInteger, MatMulInteger, QLinear*) ---- */
static inline bool mb__dtype_is_8bit(mb_dtype dt) {
  return dt == MB_DTYPE_UINT8 || dt == MB_DTYPE_INT8;
}
/* Element i of an int8 or uint8 tensor, widened. */
static inline int32_t mb__get_8bit(const mb_tensor *t, int64_t i) {
  return t->dtype == MB_DTYPE_UINT8 ? ((const uint8_t *)t->data)[i]
                                    : ((const int8_t *)t->data)[i];
}
/* Checks a zero point: absent (ok), of `dtype`, and either a scalar or, when
 * count > 0, `count` values (per output channel, row or column). `what`
 * names it in the message. */
mb_status mb__op_check_zero_point(mb_op_ctx *ctx, const mb_tensor *zp,
                                  mb_dtype dtype, int64_t count,
                                  const char *what);

/* ---- float views of float-like tensors ---- */
/* Returns true for FLOAT, FLOAT16, BFLOAT16, DOUBLE. */
bool mb__dtype_is_float(mb_dtype dt);
bool mb__dtype_is_int(mb_dtype dt); /* signed/unsigned integer types */
/* Returns the data as float32: the tensor's own buffer when dtype is FLOAT,
 * else a converted copy in scratch slot `slot`. NULL on failure. */
const float *mb__op_as_f32(mb_op_ctx *ctx, const mb_tensor *t, int slot);
/* For writing a float-like output: returns the output's own buffer when
 * FLOAT, else a float buffer in scratch slot `slot`; after computing, call
 * mb__op_store_f32 to convert into the output. */
float *mb__op_f32_dest(mb_op_ctx *ctx, mb_tensor *out, int slot);
void mb__op_store_f32(mb_tensor *out, const float *src);

/* ---- registry ---- */
/* The op row for (domain, op_type) at `opset`, or NULL. */
const mb_op_def *mb__op_find(const char *domain, const char *op_type,
                             int64_t opset);
/* Calls fn for every registered row (for coverage listings). */
void mb__op_foreach(void (*fn)(const mb_op_def *def, void *user), void *user);

/* ---- data movement (shape.c) ---- */
/* Copies the strided view (dims, element strides, which may be 0 for
 * broadcast or negative) of src into contiguous dst. rank may be up to
 * 2 * MB_MAX_RANK. */
void mb__copy_strided(void *dst, const void *src, size_t esize, int rank,
                      const int64_t *dims, const int64_t *strides);
/* dst = src transposed by perm (dims are src's). */
void mb__transpose(void *dst, const void *src, size_t esize, int rank,
                   const int64_t *dims, const int *perm);

/* ---- BLAS (OpenBLAS) ---- */
/* OpenBLAS's own thread count; the interpreter keeps it at 1 and passes
 * its pool to mb__sgemm instead (see blas.c). */
void mb__blas_set_threads(int threads);
/* OpenBLAS's build as it says it ("OpenBLAS 0.3.21 DYNAMIC_ARCH ...
 * Haswell MAX_THREADS=64"): version and the core its kernels chose.
 * Static storage; never NULL. */
const char *mb__blas_build(void);
/* C[MxN] = alpha * op(A)[MxK] * op(B)[KxN] + beta * C, row-major. pool
 * (NULL: the calling thread only) splits large products by rows or columns
 * of C; rounding then varies with the thread count (see blas.c). */
void mb__sgemm(struct mb_threadpool *pool, bool trans_a, bool trans_b,
               int64_t m, int64_t n, int64_t k, float alpha, const float *a,
               int64_t lda, const float *b, int64_t ldb, float beta, float *c,
               int64_t ldc);
/* The same in double (exact integer products use it). */
void mb__dgemm(struct mb_threadpool *pool, bool trans_a, bool trans_b,
               int64_t m, int64_t n, int64_t k, double alpha, const double *a,
               int64_t lda, const double *b, int64_t ldb, double beta,
               double *c, int64_t ldc);
/* C[MxN] = A[MxK] x B[KxN] for A and B holding differences of 8-bit values
 * (|v| <= 255, as x - x_zero_point), row-major and dense, exact as int32
 * arithmetic (wrapping around on overflow, as ONNX's integer products
 * allow). Through mb__dgemm over pool while no sum can leave int32 (k <=
 * MB_IGEMM_EXACT_K), else plain loops on the calling thread. work:
 * borrowed, mb__igemm_work_size(m, n, k) bytes, or NULL for the plain
 * loops. */
#define MB_IGEMM_EXACT_K 33025 /* 33,025 x 255 x 255 <= INT32_MAX */
void mb__igemm(struct mb_threadpool *pool, int64_t m, int64_t n, int64_t k,
               const int32_t *a, const int32_t *b, int32_t *c, double *work);
/* 0 when the workspace's size overflows. */
size_t mb__igemm_work_size(int64_t m, int64_t n, int64_t k);

/* ---- family tables, one line per family file (see registry.c) ---- */
#define MB_OP_FAMILY_LIST(X)                                                   \
  X(unary)                                                                     \
  X(binary)                                                                    \
  X(where)                                                                     \
  X(cast)                                                                      \
  X(reduce)                                                                    \
  X(conv)                                                                      \
  X(pool)                                                                      \
  X(gemm)                                                                      \
  X(norm)                                                                      \
  X(shape)                                                                     \
  X(indexing)                                                                  \
  X(layout)                                                                    \
  X(selection)                                                                 \
  X(resize)                                                                    \
  X(quantize)                                                                  \
  X(rnn)                                                                       \
  X(loss)                                                                      \
  X(signal)                                                                    \
  X(detection)                                                                 \
  X(random)                                                                    \
  X(sequence)                                                                  \
  X(control)                                                                   \
  X(training)

#define MB_X(family)                                                           \
  extern const mb_op_def mb__ops_##family[];                                   \
  extern const size_t mb__ops_##family##_count;
MB_OP_FAMILY_LIST(MB_X)
#undef MB_X

/* Ends the table of a family (defines its row count):
 *   const mb_op_def mb__ops_unary[] = { rows };
 *   MB_OP_TABLE_END(unary); */
#define MB_OP_TABLE_END(family)                                                \
  const size_t mb__ops_##family##_count =                                      \
      sizeof(mb__ops_##family) / sizeof(mb__ops_##family[0])

#endif /* MB_OPS_OP_H */
