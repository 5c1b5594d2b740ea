/* What the files of the oneDNN engine share (onednn.c has the map of the
 * folder): limits, the parameters a check reads and its lowering reads
 * back, the compiled segment, the lowering context, and the functions one
 * file calls in another (mb__dn_*). Included only where MB_HAVE_DNNL is
 * defined. */
#ifndef MB_RUNTIME_ONEDNN_INTERNAL_H
#define MB_RUNTIME_ONEDNN_INTERNAL_H

#include "runtime/engine.h"

#include "runtime/quant_params.h"

#include <float.h>
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

/* Ranks above this are rejected (oneDNN allows 12; ONNX models stay far
 * below). */
#define DN_RANK_MAX 8
#define DN_MAX_POST 8  /* post-ops per fused group */
#define DN_MAX_SIB 4   /* products of one input run as one */
#define DN_MAX_ARGS 24 /* arguments of one primitive (concat inputs) */
#define DN_MAX_CONCAT (DN_MAX_ARGS - 4)

static inline bool op_is(const mb_node *n, const char *op) {
  return strcmp(n->op_type, op) == 0 &&
         (!n->domain[0] || strcmp(n->domain, "ai.onnx") == 0);
}

/* Right-aligns (rank, dims) into `to` dims with leading ones. */
static inline void dims_pad(int rank, const int64_t *dims, int to,
                            int64_t *out) {
  for (int i = 0; i < to - rank; i++)
    out[i] = 1;
  for (int i = 0; i < rank; i++)
    out[to - rank + i] = dims[i];
}

static inline bool dims_equal(int ra, const int64_t *a, int rb,
                              const int64_t *b) {
  return ra == rb && memcmp(a, b, (size_t)ra * sizeof *a) == 0;
}

/* Axis attribute/value `a` normalised into [0, rank); -1 when out of
 * range. */
static inline int norm_axis(int64_t a, int rank) {
  if (a < 0)
    a += rank;
  return a >= 0 && a < rank ? (int)a : -1;
}

/* ---- eltwise ------------------------------------------------------------ */

typedef struct eltwise_op {
  dnnl_alg_kind_t alg;
  float alpha, beta;
} eltwise_op;

/* A binary ONNX operator as a oneDNN algorithm. */
struct binary_row {
  const char *op;
  dnnl_alg_kind_t alg;
  bool commutative;
};

/* A binary node as oneDNN computes it: src0 has the output's shape, src1
 * broadcasts into it. */
typedef struct binary_params {
  dnnl_alg_kind_t alg;
  int src0, src1; /* input slots */
  bool negate;    /* Sub with swapped operands: -(b - a) */
  bool expand0;   /* src0 is a constant to broadcast at compile time */
  int n_elt;      /* > 0: an eltwise of input elt_src instead */
  int elt_src;
  eltwise_op elt;
} binary_params;

/* Where(cond, x, y) with cond a constant and one branch a float scalar
 * constant, the other the activation (the output's shape). */
typedef struct where_params {
  int act;           /* input slot of the activation: 1 or 2 */
  float fill;        /* the scalar branch */
  bool fill_if_true; /* the scalar is the "then" branch (slot 1) */
} where_params;

/* Window geometry over nsp spatial dims, resolved to explicit padding as
 * oneDNN wants it: out = (in + pad_l + pad_r - extent) / stride + 1 with
 * floor division. ceil_mode pools get pad_r extended (`extended`). */
typedef struct window {
  int nsp;
  int64_t in[3], out[3], kernel[3], stride[3], dilation[3];
  int64_t pad_l[3], pad_r[3];
  bool extended;
} window;

typedef struct conv_params {
  window w;
  int64_t groups, c_in, c_out;
  bool bias;
} conv_params;

typedef struct pool_params {
  window w;
  dnnl_alg_kind_t alg;
} pool_params;

/* ---- Gemm / MatMul ------------------------------------------------------ */

/* Y = alpha * A' B' + beta * C over rank `rank` (batch dims broadcast),
 * A' = A or A^T (Gemm), likewise B'. */
typedef struct mm_params {
  int rank;
  int64_t a_dims[DN_RANK_MAX], b_dims[DN_RANK_MAX]; /* ONNX, padded */
  int64_t y_dims[DN_RANK_MAX];
  bool trans_a, trans_b;
  float alpha, beta;
  int c;          /* input slot 2 when C is present, else -1 */
  bool c_is_bias; /* C broadcasts along rows: a oneDNN bias [1, N] */
} mm_params;

/* ---- normalizations ----------------------------------------------------- */

typedef struct softmax_params {
  int axis;
  bool log;
  bool coerce_2d; /* opset < 13: over the flattened [axis:] */
} softmax_params;

typedef struct lnorm_params {
  int64_t outer, inner;
  float epsilon;
  bool bias;
} lnorm_params;

typedef struct reduce_params {
  dnnl_alg_kind_t alg;
  int rank;
  int64_t kept_dims[DN_RANK_MAX]; /* input dims with reduced axes set to 1 */
} reduce_params;

/* Slice with steps >= 1 as a strided view: start offsets per axis. */
typedef struct slice_params {
  int rank;
  int64_t start[DN_RANK_MAX], step[DN_RANK_MAX];
} slice_params;

typedef enum dn_buf_kind {
  DN_BUF_INTERNAL, /* values, reused over the segment; allocated at the end */
  DN_BUF_CONST,    /* weights and constants: filled at compile time */
  DN_BUF_SCRATCH,  /* the primitives' shared scratchpad */
  DN_BUF_INPUT,    /* run()'s input tensor `slot` */
  DN_BUF_OUTPUT,   /* run()'s output tensor `slot` */
} dn_buf_kind;

typedef struct dn_buffer {
  dn_buf_kind kind;
  int slot;
  size_t size;
  int busy_until; /* INTERNAL: last position reading a value held here */
  void *data;     /* INTERNAL, SCRATCH, CONST: aligned; NULL for IO */
  bool owned;     /* CONST: data is ours (else the graph's tensor) */
} dn_buffer;

/* Every memory object, with the buffer whose address it takes. */
typedef struct dn_memory {
  dnnl_memory_t mem;
  int buf;
} dn_memory;

typedef enum dn_step_kind { DN_STEP_PRIMITIVE, DN_STEP_ERF } dn_step_kind;

typedef struct dn_step {
  dn_step_kind kind;
  int threads; /* OpenMP threads it runs with (1 for small work) */
  dnnl_primitive_t prim;
  int n_args;
  dnnl_exec_arg_t args[DN_MAX_ARGS];
  int prof;               /* entry of s->prof */
  dnnl_memory_t src, dst; /* DN_STEP_ERF: plain float32 */
  size_t count;
} dn_step;

typedef struct dn_io {
  int value;
  int rank;
  int64_t dims[MB_MAX_RANK];
  size_t nbytes;
  bool used;                 /* an input some primitive reads */
  const mb_tensor *constant; /* an output that is a constant */
} dn_io;

typedef struct dn_segment {
  dnnl_engine_t engine;
  dnnl_stream_t stream;
  int threads;
  bool profile;
  int n_steps, cap_steps;
  dn_step *steps;
  int n_mems, cap_mems;
  dn_memory *mems;
  int n_io_mems, cap_io_mems;
  int *io_mems; /* indices into mems[] of INPUT/OUTPUT memories */
  int n_bufs, cap_bufs;
  dn_buffer *bufs;
  int scratch_buf;
  int n_inputs, n_outputs;
  dn_io *inputs, *outputs;
  int n_prof, cap_prof;
  mb_engine_node_time *prof;
} dn_segment;

/* One representation of a value: a layout and data type in a buffer. A
 * value may get several (its producer's blocked layout, and a plain copy
 * for a reshape); the first is the one it was produced in. */
typedef struct dn_rep {
  dnnl_memory_desc_t md;
  dnnl_memory_t mem;
  int buf;
  /* int8 data (u8/s8): real = qscale * (q - qzp); qscale 0 otherwise. */
  float qscale;
  int32_t qzp;
} dn_rep;

#define DN_MAX_REPS 3

typedef struct dn_val {
  int n_reps;
  dn_rep rep[DN_MAX_REPS];
  int last_use; /* position of the last reader in the segment, or -1 */
  int out_slot; /* segment output index, or -1 */
  bool out_done;
} dn_val;

typedef enum dn_post_kind {
  DN_POST_ELTWISE, /* ops[0..n_ops) */
  DN_POST_SUM,     /* dst += operand (same shape) */
  DN_POST_BINARY,  /* dst = dst alg operand (broadcast) */
  DN_POST_BIAS,    /* MatMul: operand is a constant [.., N] */
  DN_POST_VIEW,    /* MatMul: a reshape of the result (same bytes) */
  DN_POST_MASK,    /* Where(cond, dst, -inf) (or the branches swapped):
                      dst += cond ? 0 : fill, a constant made here */
} dn_post_kind;

/* One link of a fused chain: the nodes it replaces (segment positions, in
 * order) and the value it yields. Links with no nodes (Gemm's own alpha
 * and C) are part of the head. */
typedef struct dn_post {
  dn_post_kind kind;
  int n_ops;
  eltwise_op ops[2];
  dnnl_alg_kind_t alg;
  int operand; /* value index (DN_POST_MASK: the condition) */
  float fill;  /* DN_POST_MASK: the value where the condition selects it */
  bool fill_if_true; /* DN_POST_MASK: Where(cond, fill, dst) */
  int n_nodes;
  int nodes[10]; /* the written-out tanh GELU has 10 */
  int out_value;
} dn_post;

typedef struct dn_group {
  int head; /* position of the Conv/MatMul/Gemm; -1: eltwise pattern */
  int src;  /* eltwise pattern: its input value */
  int n_post;
  dn_post post[DN_MAX_POST];
  int last; /* where it is emitted: its last node's position */
  /* MatMul/Gemm: a scalar Mul or Div before input i (the attention scale
   * of q or k) taken into the product: the head reads in_value[i]
   * instead (-1: its own input) and multiplies by pre_alpha. */
  int in_value[2];
  float pre_alpha;
  /* MatMuls of one input by constant 2-D weights, each with at most a bias
   * after it (BERT's separate Q, K and V projections): one product over
   * their weights side by side, emitted where the first is (`last`), each
   * result (`final`, after its bias `bias_value`, or -1) a column window
   * of the one result. n_sib: 0, or 2 to DN_MAX_SIB; sib[0] is `head`. */
  int n_sib;
  struct dn_sibling {
    int head, final, bias_value;
  } sib[DN_MAX_SIB];
  /* A LayerNormalization written out (ReduceMean, Sub, Pow, ReduceMean,
   * Add eps, Sqrt, Div, and a Mul by gamma and an Add of beta when there
   * are: PyTorch below opset 17), head -1: one layer_normalization of
   * value ln_x into ln_out over its last ln_inner elements; ln_gamma and
   * ln_beta are constant values or -1. ln_x is -1 for other groups. */
  int ln_x, ln_out, ln_gamma, ln_beta;
  int64_t ln_inner;
  float ln_eps;
} dn_group;

/* int8 attributes of a primitive: output scales (per channel: mask names
 * the dst dimension) that dequantise the int32 accumulators, a zero point
 * of the source given at run time, a constant zero point of the
 * destination (quantising reorders). */
typedef struct dn_qattr {
  int n_scales;
  int mask;
  const float *scales;
  bool src_zp;
  bool dst_zp;
  int32_t dst_zp_value;
} dn_qattr;

typedef struct lctx {
  dn_segment *s;
  const mb_segment_desc *d;
  const mb_engine_graph *eg;
  const mb_graph *g;
  int64_t opset;
  dnnl_data_type_t act_dt;      /* activations inside the segment */
  const mb_quant_params *quant; /* INT8: the calibration, else NULL */
  int pos;                      /* position being emitted */
  const mb_node *node;          /* node being lowered: named in errors */
  int prof;                     /* profile entry of what is being lowered */
  int prof_reorder;             /* the segment's entry for inserted reorders */
  int prof_quantize, prof_dequantize; /* ... for int8 <-> float ones */
  int *node_pos;                      /* per graph node: position, -1 outside */
  dn_val *vals;                       /* per graph value */
  int n_groups;
  dn_group *groups;
  int *group_of; /* per position: group index, -1 */
  mb_error *err;
} lctx;

static inline const mb_node *node_at(lctx *l, int pos) {
  return &l->g->nodes[l->d->nodes[pos]];
}

#define DN_TRY(l, call)                                                        \
  do {                                                                         \
    dnnl_status_t st_ = (call);                                                \
    if (st_ != dnnl_success)                                                   \
      return mb__dn_fail((l), #call, st_);                                     \
  } while (0)

/* Like DN_TRY inside functions that clean up at `done` with `status`. */
#define DN_GOTO(l, call)                                                       \
  do {                                                                         \
    dnnl_status_t st_ = (call);                                                \
    if (st_ != dnnl_success) {                                                 \
      status = mb__dn_fail((l), #call, st_);                                   \
      goto done;                                                               \
    }                                                                          \
  } while (0)

#define MB_TRY_GOTO(expr)                                                      \
  do {                                                                         \
    if ((status = (expr)))                                                     \
      goto done;                                                               \
  } while (0)

typedef enum dn_want {
  DN_WANT_DTYPE, /* any layout, this data type */
  DN_WANT_PLAIN, /* plain layout, this data type */
  DN_WANT_EXACT, /* exactly this md */
} dn_want;

#define DN_PARAMS(l, n, getter, params)                                        \
  do {                                                                         \
    char reason_[256] = "";                                                    \
    mb_engine_check c_ =                                                       \
        mb__dn_lower_check_ctx((l), (n), reason_, sizeof reason_);             \
    if (!getter(&c_, (params)))                                                \
      return mb__dn_recheck_failed((l), reason_);                              \
  } while (0)

/* ---- Conv --------------------------------------------------------------- */

static inline void to_dnnl_dims(int n, const int64_t *in, int64_t add,
                                dnnl_dims_t out) {
  for (int i = 0; i < n; i++)
    out[i] = in[i] + add;
}

typedef enum dn_head_kind {
  DN_NOT_HEAD,
  DN_HEAD_CONV,
  DN_HEAD_MM
} dn_head_kind;

typedef struct dn_op_row {
  const char *op_type;
  int (*check)(mb_engine_check *c);
  mb_status (*lower)(lctx *l, const mb_node *n); /* NULL for heads */
  dn_head_kind head;
} dn_op_row;

/* session.c */
const char *mb__dn_status_name(dnnl_status_t status);
void mb__dn_set_threads(int threads);
void mb__dn_segment_free(dn_segment *s);
void mb__dn_release(void *compiled);
void mb__dn_prof_compact(dn_segment *s);
mb_status mb__dn_run(void *compiled, const mb_tensor *const *inputs,
                     mb_tensor *const *outputs, mb_error *err);
int mb__dn_node_profile(void *compiled, mb_engine_node_time *out, int max);
void mb__dn_node_profile_reset(void *compiled);

/* support.c */
extern const mb_engine_limits mb__dn_limits;
int mb__dn_unary_get(mb_engine_check *c, eltwise_op *ops);
int mb__dn_check_unary(mb_engine_check *c);
const struct binary_row *mb__dn_binary_find(const mb_node *n);
int mb__dn_binary_get(mb_engine_check *c, binary_params *p);
int mb__dn_conv_get(mb_engine_check *c, conv_params *p);
int mb__dn_pool_get(mb_engine_check *c, pool_params *p);
int mb__dn_mm_get(mb_engine_check *c, mm_params *p);
int mb__dn_softmax_get(mb_engine_check *c, softmax_params *p);
int mb__dn_lnorm_get(mb_engine_check *c, lnorm_params *p);
int mb__dn_check_batchnorm(mb_engine_check *c);
int mb__dn_transpose_get(mb_engine_check *c, int *perm);
int mb__dn_check_concat(mb_engine_check *c);
int mb__dn_reduce_get(mb_engine_check *c, reduce_params *p);
int mb__dn_slice_get(mb_engine_check *c, slice_params *p);
int mb__dn_check_split(mb_engine_check *c);
int mb__dn_where_get(mb_engine_check *c, where_params *p);
float *mb__dn_where_data(const mb_tensor *cond, float fill, bool fill_if_true,
                         bool as_mask);
const dn_op_row *mb__dn_op_find(const mb_node *n);

/* memory.c */
bool mb__dn_grow(void **array, int *cap, int count, size_t size);
mb_status mb__dn_fail(lctx *l, const char *call, dnnl_status_t st);
mb_status mb__dn_oom(lctx *l);
mb_status mb__dn_internal_error(lctx *l, const char *what);
dnnl_status_t mb__dn_md_plain(dnnl_memory_desc_t *md, int rank,
                              const int64_t *dims, dnnl_data_type_t dt);
dnnl_status_t mb__dn_md_any(dnnl_memory_desc_t *md, int rank,
                            const int64_t *dims, dnnl_data_type_t dt);
bool mb__dn_md_is_plain(const dnnl_memory_desc_t *md);
bool mb__dn_md_same(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b);
bool mb__dn_md_is_strided(const dnnl_memory_desc_t *md);
bool mb__dn_md_is_dense(const dnnl_memory_desc_t *md);
dnnl_status_t mb__dn_md_view(dnnl_memory_desc_t *md,
                             const dnnl_memory_desc_t *src, int rank,
                             const int64_t *dims, const int64_t *strides,
                             int64_t offset);
bool mb__dn_md_reshape_strides(const dnnl_memory_desc_t *src, int rank,
                               const int64_t *dims, int64_t *strides);
/* A new buffer of `kind` (slot: the boundary value's index, else -1) and
 * `size` bytes; its index, or -1 on OOM. */
int mb__dn_buf_new(lctx *l, dn_buf_kind kind, int slot, size_t size);
int mb__dn_buf_take(lctx *l, size_t size, int until);
mb_status mb__dn_mem_new(lctx *l, const dnnl_memory_desc_t *md, int buf,
                         dnnl_memory_t *mem_out);

/* primitive.c */
int mb__dn_prof_new(lctx *l, const char *op_type, const char *name);
mb_status mb__dn_attr_new(lctx *l, const_dnnl_post_ops_t post_ops,
                          const dn_qattr *qa, dnnl_primitive_attr_t *attr_out);
dnnl_status_t mb__dn_pd_try_q(lctx *l, const_dnnl_op_desc_t op_desc,
                              const_dnnl_post_ops_t post_ops,
                              const dn_qattr *qa,
                              dnnl_primitive_desc_t *pd_out);
dnnl_status_t mb__dn_pd_try(lctx *l, const_dnnl_op_desc_t op_desc,
                            const_dnnl_post_ops_t post_ops,
                            dnnl_primitive_desc_t *pd_out);
bool mb__dn_pd_accept(dnnl_primitive_desc_t *pd, bool last);
bool mb__dn_pd_is_brgemm(const_dnnl_primitive_desc_t pd);
const dnnl_memory_desc_t *mb__dn_pd_md(const_dnnl_primitive_desc_t pd,
                                       dnnl_query_t what);
mb_status mb__dn_emit(lctx *l, const_dnnl_primitive_desc_t pd, int n_args,
                      const dnnl_exec_arg_t *args);

/* memory.c: reorders, constants, representations */
mb_status mb__dn_emit_reorder_as(lctx *l, bool inserted, dnnl_memory_t src,
                                 const dnnl_memory_desc_t *src_md,
                                 dnnl_memory_t dst,
                                 const dnnl_memory_desc_t *dst_md);
mb_status mb__dn_emit_reorder_q(lctx *l, dnnl_memory_t src,
                                const dnnl_memory_desc_t *src_md,
                                dnnl_memory_t dst,
                                const dnnl_memory_desc_t *dst_md,
                                const dn_qattr *qa, int32_t src_zp);
mb_status mb__dn_emit_reorder(lctx *l, dnnl_memory_t src,
                              const dnnl_memory_desc_t *src_md,
                              dnnl_memory_t dst,
                              const dnnl_memory_desc_t *dst_md);
mb_status mb__dn_const_memory(lctx *l, const dnnl_memory_desc_t *src_md,
                              const void *data, bool take,
                              const dnnl_memory_desc_t *want,
                              dnnl_memory_t *mem_out, int *buf_out);
mb_status mb__dn_const_memory_attr(lctx *l, const dnnl_memory_desc_t *src_md,
                                   const void *data, bool take,
                                   const dnnl_memory_desc_t *want,
                                   const_dnnl_primitive_attr_t attr,
                                   dnnl_memory_t *mem_out, int *buf_out);
void mb__dn_value_dims(lctx *l, int v, int *rank, int64_t *dims);
mb_status mb__dn_rep_add(lctx *l, int v, const dnnl_memory_desc_t *md,
                         dnnl_memory_t mem, int buf, dn_rep **out);
mb_status mb__dn_const_rep(lctx *l, int v);
mb_status mb__dn_value_define(lctx *l, int v, const dnnl_memory_desc_t *md,
                              dn_rep **out);
mb_status mb__dn_value_alias(lctx *l, int v, const dnnl_memory_desc_t *md,
                             int buf, dn_rep **out);
mb_status mb__dn_value_get(lctx *l, int v, dn_want want, dnnl_data_type_t dt,
                           const dnnl_memory_desc_t *exact, dn_rep **out);
bool mb__dn_can_overwrite(lctx *l, const dn_rep *r, int other_buf);
mb_status mb__dn_value_define_like(lctx *l, int v, const dn_rep *src,
                                   int other_buf, dn_rep **out);
mb_status mb__dn_finish_output(lctx *l, int v);
mb_status mb__dn_rep_view(lctx *l, const dn_rep *r,
                          const dnnl_memory_desc_t *md, dnnl_memory_t *out);
mb_status mb__dn_io_init(lctx *l);
mb_status mb__dn_buffers_finish(lctx *l);

/* int8.c */
bool mb__dn_q_entries(lctx *l, int x, int w, int axis, int64_t channels,
                      const mb_quant_param **xq, const mb_quant_param **wq);
dnnl_data_type_t mb__dn_q_dt(const mb_quant_param *xq);
int8_t *mb__dn_q_weights(const mb_tensor *w, const mb_quant_param *wq,
                         int axis);
float *mb__dn_q_out_scales(const mb_quant_param *xq, const mb_quant_param *wq,
                           float alpha);
float *mb__dn_q_bias(const float *bias, int64_t n, const float *oscales,
                     int64_t n_scales);
mb_status mb__dn_value_get_q(lctx *l, int v, const dnnl_memory_desc_t *want,
                             const mb_quant_param *xq, dn_rep **out);
mb_status mb__dn_q_zp_arg(lctx *l, const mb_quant_param *xq,
                          dnnl_exec_arg_t *args, int *n_args);
/* int8 parameters for an activation read as an operand of a product of
 * two activations (attention's q.k^T and probabilities.v), derived from
 * its calibrated range: u8 with zero point 0 for a non-negative source,
 * else s8 symmetric (always for the weights side, which oneDNN wants s8
 * without a zero point, over the weights' width for its source: quant's
 * int8 form, mb__quant_weight_qmax). source: NULL for the source operand,
 * else the source's parameters (this operand is then the weights side).
 * p.scales and p.zero_points point into the struct itself: fill it where it
 * stays. */
typedef struct dn_qact {
  mb_quant_param p;
  float scale;
  int32_t zero_point;
} dn_qact;
bool mb__dn_q_act(lctx *l, int v, const dn_qact *source, dn_qact *out);
/* Is activation v read only as the source of such products (attention's
 * probabilities)? Then its producer may write it quantised with *out. */
bool mb__dn_q_act_source(lctx *l, int v, dn_qact *out);

/* fusion.c */
mb_engine_check mb__dn_lower_check_ctx(lctx *l, const mb_node *n, char *reason,
                                       size_t size);
mb_status mb__dn_recheck_failed(lctx *l, const char *reason);
mb_status mb__dn_posts_build(lctx *l, const dn_post *posts, int k, int rank,
                             int fold_rank, dnnl_post_ops_t *po_out,
                             dnnl_memory_desc_t *bin_md);
mb_status mb__dn_posts_args(lctx *l, const dn_post *posts, int k,
                            const dnnl_memory_desc_t *bin_md,
                            dnnl_exec_arg_t *args, int *n_args);
mb_status mb__dn_head_dst(lctx *l, const dn_post *posts, int k, int final,
                          const dnnl_memory_desc_t *dst_md, int src_buf,
                          int src_buf2, dn_rep **out);
int mb__dn_head_final(const dn_post *posts, int k, int head_out);
mb_status mb__dn_lower_rest(lctx *l, const dn_post *posts, int k, int n);
mb_status mb__dn_lower_node(lctx *l, int pos);
void mb__dn_plan_groups(lctx *l);
mb_status mb__dn_lower_group(lctx *l, const dn_group *g);

/* eltwise.c */
mb_status mb__dn_emit_eltwise(lctx *l, int src, int dst, const eltwise_op *ops,
                              int n_ops);
mb_status mb__dn_lower_unary(lctx *l, const mb_node *n);
mb_status mb__dn_lower_erf(lctx *l, const mb_node *n);
mb_status mb__dn_lower_binary(lctx *l, const mb_node *n);
mb_status mb__dn_lower_where(lctx *l, const mb_node *n);

/* conv.c */
mb_status mb__dn_lower_conv(lctx *l, const dn_group *g);

/* matmul.c */
mb_status mb__dn_lower_mm(lctx *l, const dn_group *g);

/* rnn.c */
int mb__dn_check_rnn(mb_engine_check *c);
int mb__dn_rnn_int8(const mb_engine_graph *eg, const mb_quant_params *quant,
                    const mb_node *n, char *why, size_t size);
mb_status mb__dn_lower_rnn(lctx *l, const mb_node *n);

/* pool.c */
mb_status mb__dn_lower_pool(lctx *l, const mb_node *n);

/* norm.c */
mb_status mb__dn_lower_batchnorm(lctx *l, const mb_node *n);
mb_status mb__dn_define_plain_viewed(lctx *l, int v, dnnl_data_type_t dt,
                                     const dnnl_memory_desc_t *md2,
                                     dnnl_memory_t *mem2);
mb_status mb__dn_lower_softmax(lctx *l, const mb_node *n);
mb_status mb__dn_lower_lnorm(lctx *l, const mb_node *n);
mb_status mb__dn_emit_lnorm(lctx *l, int x, int y, int64_t outer, int64_t inner,
                            float epsilon, const float *scale,
                            const float *shift);

/* movement.c */
mb_status mb__dn_lower_transpose(lctx *l, const mb_node *n);
mb_status mb__dn_lower_reshape(lctx *l, const mb_node *n);
mb_status mb__dn_lower_identity(lctx *l, const mb_node *n);
mb_status mb__dn_lower_concat(lctx *l, const mb_node *n);
mb_status mb__dn_lower_slice(lctx *l, const mb_node *n);
mb_status mb__dn_lower_split(lctx *l, const mb_node *n);

/* reduce.c */
mb_status mb__dn_lower_reduce(lctx *l, const mb_node *n);

#endif /* MB_RUNTIME_ONEDNN_INTERNAL_H */
