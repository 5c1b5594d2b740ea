/* What the files of the XNNPACK engine share (xnnpack.c has the map of
 * the folder): limits, the parameters a check reads and its lowering reads
 * back, the compiled segment, the subgraph builder's context, int8 plans,
 * the operator table's row, and the functions one file calls in another
 * (mb__xnn_*). Included only where MB_HAVE_XNNPACK is defined. */
#ifndef MB_RUNTIME_XNNPACK_INTERNAL_H
#define MB_RUNTIME_XNNPACK_INTERNAL_H

#include "runtime/engine.h"

#include "runtime/quant_params.h"

#include <float.h>
#include <math.h>
#include <pthreadpool.h>
#include <stdlib.h>
#include <string.h>
#include <xnnpack.h>

/* This snapshot has no runtime version query (xnn_version arrived later):
 * the version is the Debian package's upstream snapshot date. */
#define XNN_VERSION_STRING "git20220216"

/* XNN_MAX_TENSOR_DIMS (6) bounds every tensor inside a segment. */
#define XNN_RANK_MAX 6

/* Rank-4 values live in NHWC inside a segment. */
static inline bool is_nhwc(int rank) {
  return rank == 4;
}

/* True when NCHW and NHWC orders of these dims put every element at the
 * same offset (one channel, or one pixel per image). */
static inline bool layouts_agree(const int64_t *dims) {
  return dims[1] == 1 || dims[2] * dims[3] == 1;
}

/* The segment-layout dims of a value of ONNX shape (rank, dims); rank 0
 * becomes [1]. Returns the number of dims. */
static inline size_t segment_dims(int rank, const int64_t *dims, size_t *out) {
  if (rank == 0) {
    out[0] = 1;
    return 1;
  }
  if (is_nhwc(rank)) {
    out[0] = (size_t)dims[0];
    out[1] = (size_t)dims[2];
    out[2] = (size_t)dims[3];
    out[3] = (size_t)dims[1];
    return 4;
  }
  for (int i = 0; i < rank; i++)
    out[i] = (size_t)dims[i];
  return (size_t)rank;
}

/* Window geometry of a 2-D Conv or pool in ONNX terms, resolved to
 * explicit padding. pad_extra_*: padding XNNPACK must add at the end so
 * that ceil_mode windows exist (they hold no input and, as XNNPACK's
 * pools skip padding, count for nothing). */
typedef struct window2d {
  int64_t in[2], out[2], kernel[2], stride[2], dilation[2];
  int64_t pad_begin[2], pad_end[2], pad_extra[2];
} window2d;

typedef struct conv_params {
  window2d w;
  int64_t groups, c_in, c_out;
  bool depthwise;
} conv_params;

typedef struct pool_params {
  window2d w;
  bool average;
  bool count_include_pad; /* with nonzero pads: an explicit Pad first */
  bool identity;          /* a 1x1 window, stride 1, no pads */
} pool_params;

typedef struct pad_params {
  int64_t begin[MB_MAX_RANK], end[MB_MAX_RANK]; /* ONNX axis order */
  float value;
} pad_params;

typedef struct fc_params {
  int64_t k, n; /* input and output features */
  bool trans_b; /* B is [N, K] */
  float alpha, beta;
  int bias_kind; /* 0 none, 1 per output feature, 2 added after */
} fc_params;

/* One boundary tensor of a compiled segment. */
typedef struct io_slot {
  int value;   /* graph value index */
  uint32_t id; /* external id, XNN_INVALID_VALUE_ID when not used */
  int rank;    /* ONNX shape */
  int64_t dims[MB_MAX_RANK];
  size_t nbytes;
  bool transpose; /* rank 4 with differing layouts */
  bool direct;    /* output written straight into the caller's tensor */
  float *buffer;  /* owned (not for direct outputs) */
  const mb_tensor *constant; /* output that is a constant: copied out */
} io_slot;

typedef struct xnn_segment {
  xnn_runtime_t runtime;
  pthreadpool_t pool;
  int n_inputs, n_outputs;
  io_slot *inputs, *outputs;
  int n_external;
  struct xnn_external_value *external;
  bool setup_done;
  /* Static data (repacked weights, permuted constants) that must outlive
   * the runtime. */
  void **statics;
  int n_statics, cap_statics;
} xnn_segment;

typedef struct build_ctx {
  const mb_segment_desc *seg_desc;
  const mb_engine_graph *eg;
  xnn_subgraph_t subgraph;
  xnn_segment *seg;
  uint32_t *ids;    /* per value: XNNPACK id, or XNN_INVALID_VALUE_ID */
  int *output_slot; /* per value: index among segment outputs, or -1 */
  int *input_slot;  /* per value: index among segment inputs, or -1 */
  uint32_t next_external;
  const mb_node *node;
  int64_t opset;
  bool fp16; /* compiled with XNN_FLAG_FORCE_FP16_INFERENCE */
  /* INT8: the parameters (NULL when compiling in float), and per value
   * its qint8 id (XNN_INVALID_VALUE_ID when none) with that id's scale,
   * zero point and dims (an int8 Gemm's are [M, 1, 1, K], not the value's
   * segment dims); qkeep: the id was written by an op that keeps its
   * input's quantisation (MaxPool, Reshape), which int8 readers then use,
   * as the QDQ form does. */
  const mb_quant_params *quant;
  uint32_t *qids;
  float *qscale;
  int32_t *qzp;
  uint8_t *qrank;
  size_t (*qdims)[XNN_RANK_MAX];
  bool *qkeep;
  bool *fused; /* per graph node: lowered into the int8 op before it */
  bool *dead;  /* per segment position: nothing needs the node's results */
  mb_error *err;
} build_ctx;

#define XNN_CALL(b, call)                                                      \
  do {                                                                         \
    enum xnn_status xs_ = (call);                                              \
    if (xs_ != xnn_status_success)                                             \
      return mb__xnn_fail((b), #call, xs_);                                    \
  } while (0)

/* One int8 activation in XNNPACK's terms. qint8 is signed: a uint8 zero
 * point moves down by 128, which keeps q - zero_point and so the real
 * values (the uint8 quantisation shifted to signed). */
typedef struct qact {
  float scale;
  int32_t zero_point; /* in [-128, 127] */
} qact;

/* How an int8 node is lowered (Conv, fully connected, Add, Mul). */
typedef struct int8_plan {
  qact in, in2, out;            /* in2: a binary node's second input */
  const mb_quant_param *weight; /* its scales: per channel, or one */
  float alpha;                  /* Gemm's, applied to the weight scales */
  int out_value;          /* the value written: the node's output or the fused
                             Relu/Clip's */
  int fused_node;         /* graph index of that Relu/Clip, or -1 */
  float out_min, out_max; /* the fused clamp, else unbounded */
} int8_plan;

typedef struct xnn_op_row {
  const char *op_type;
  int (*check)(mb_engine_check *c);
  mb_status (*lower)(build_ctx *b);
  /* XNN_FLAG_FORCE_FP16_INFERENCE aborts the process on this node (the
   * Debian build keeps assertions): compile() refuses fp16 instead. */
  bool fp16_aborts;
  /* The fp16 rewrite of this snapshot takes the node (found by trying
   * each lowering; binary nodes only between two activations). Used to
   * name the likely culprits when fp16 fails. */
  bool fp16_ok;
} xnn_op_row;

/* session.c */
const char *mb__xnn_status_name(enum xnn_status status);
enum xnn_status mb__xnn_ready(void);
pthreadpool_t mb__xnn_pool_acquire(int threads, bool *failed);
void mb__xnn_segment_free(xnn_segment *s);
void mb__xnn_release(void *compiled);
mb_status mb__xnn_io_init(build_ctx *b);
mb_status mb__xnn_run(void *compiled, const mb_tensor *const *inputs,
                      mb_tensor *const *outputs, mb_error *err);

/* support.c */
extern const mb_engine_limits mb__xnn_limits;
int mb__xnn_check_unary(mb_engine_check *c);
int mb__xnn_conv_params_get(mb_engine_check *c, conv_params *p);
int mb__xnn_pool_params_get(mb_engine_check *c, pool_params *p, bool average);
int mb__xnn_clip_bounds(mb_engine_check *c, float *lo, float *hi);
int mb__xnn_pad_params_get(mb_engine_check *c, pad_params *p);
int mb__xnn_fc_params_get(mb_engine_check *c, fc_params *p);
int mb__xnn_resize_flags(mb_engine_check *c, uint32_t *flags);
const xnn_op_row *mb__xnn_op_find(const mb_node *n);

/* subgraph.c */
mb_status mb__xnn_fail(build_ctx *b, const char *call, enum xnn_status status);
void *mb__xnn_static_alloc_bytes(build_ctx *b, size_t nbytes);
float *mb__xnn_static_alloc(build_ctx *b, size_t count);
mb_status mb__xnn_oom(build_ctx *b);
mb_status mb__xnn_define_static(build_ctx *b, size_t rank, const size_t *dims,
                                const float *data, uint32_t *id_out);
mb_status mb__xnn_define_internal(build_ctx *b, int rank, const int64_t *dims,
                                  uint32_t *id_out);
mb_status mb__xnn_value_id(build_ctx *b, int v, uint32_t *id_out);
mb_status mb__xnn_output_id(build_ctx *b, int v, uint32_t *id_out);
mb_status mb__xnn_define_operand_data(build_ctx *b, int rank,
                                      const int64_t *dims, const float *data,
                                      int out_rank, uint32_t *id_out);
mb_status mb__xnn_operand_id(build_ctx *b, int i, int out_rank,
                             uint32_t *id_out);
mb_status mb__xnn_scalar_id(build_ctx *b, float value, uint32_t *id_out);
mb_engine_check mb__xnn_lower_check_ctx(build_ctx *b, char *reason,
                                        size_t size);
mb_status mb__xnn_recheck_failed(build_ctx *b, const char *reason);
mb_status mb__xnn_copy_outputs_fp16(build_ctx *b);
void mb__xnn_build_free(build_ctx *b);

/* int8.c */
bool mb__xnn_scale_ok(double s);
bool mb__xnn_qact_of(const build_ctx *b, int v, qact *out);
bool mb__xnn_has_qint8(const build_ctx *b, int v);
bool mb__xnn_qact_in(const build_ctx *b, int v, qact *out);
bool mb__xnn_int8_output_get(build_ctx *b, int8_plan *p);
bool mb__xnn_int8_plan_get(build_ctx *b, int axis, int64_t channels,
                           float alpha, int8_plan *p);
mb_status mb__xnn_qinput_id(build_ctx *b, int v, const qact *q, size_t r,
                            const size_t *d, uint32_t *id_out);
mb_status mb__xnn_qoutput_id(build_ctx *b, int v, const qact *q, size_t r,
                             const size_t *d, uint32_t *id_out);
mb_status mb__xnn_qkeep_output_id(build_ctx *b, int v, const qact *q,
                                  uint32_t *id_out);
uint32_t mb__xnn_qheld(const build_ctx *b, int v, qact *q);
mb_status mb__xnn_qoutput_export(build_ctx *b, int v);
mb_status mb__xnn_int8_bias(build_ctx *b, const int8_plan *p, int64_t channels,
                            const float *bias_data, float **fscale_out,
                            int32_t **bias_out, float **bscale_out);
mb_status mb__xnn_int8_weights(build_ctx *b, const int8_t *filter,
                               const size_t *fdims, size_t channel_dim,
                               const float *fscale, const int32_t *bias,
                               const float *bscale, size_t channels,
                               uint32_t *f_id, uint32_t *b_id);
mb_status mb__xnn_int8_finish(build_ctx *b, const int8_plan *p);

/* conv.c */
mb_status mb__xnn_lower_conv(build_ctx *b);
mb_status mb__xnn_lower_fc(build_ctx *b);

/* elementwise.c */
mb_status mb__xnn_lower_binary(build_ctx *b);
mb_status mb__xnn_lower_unary(build_ctx *b);
mb_status mb__xnn_lower_relu(build_ctx *b);
mb_status mb__xnn_lower_clip(build_ctx *b);
mb_status mb__xnn_lower_leaky_relu(build_ctx *b);
mb_status mb__xnn_lower_elu(build_ctx *b);
mb_status mb__xnn_lower_hardsigmoid(build_ctx *b);
mb_status mb__xnn_lower_prelu(build_ctx *b);

/* shape.c */
mb_status mb__xnn_lower_reshape(build_ctx *b);
mb_status mb__xnn_lower_pad(build_ctx *b);
mb_status mb__xnn_lower_resize(build_ctx *b);
mb_status mb__xnn_lower_depth_to_space(build_ctx *b);

/* pool.c */
mb_status mb__xnn_lower_pool(build_ctx *b);
mb_status mb__xnn_lower_global_pool(build_ctx *b);

/* norm.c */
mb_status mb__xnn_lower_softmax(build_ctx *b);
mb_status mb__xnn_lower_batchnorm(build_ctx *b);

#endif /* MB_RUNTIME_XNNPACK_INTERNAL_H */
