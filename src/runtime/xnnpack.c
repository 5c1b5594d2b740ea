/* The XNNPACK engine: runs segments of a graph for the hybrid "xnnpack"
 * runtime through XNNPACK's subgraph API (the Debian snapshot
 * 0.0~git20220216).
 *
 * Each segment becomes one xnn_subgraph and one xnn_runtime. Inside a
 * segment every rank-4 tensor is NHWC, XNNPACK's layout; every other
 * tensor keeps its ONNX layout. At the boundary (ONNX layout, NCHW) run()
 * transposes rank-4 inputs into buffers the segment owns and rank-4
 * outputs back; weights and constants are repacked once in compile().
 * XNNPACK of this date has no transpose node, so a node whose meaning
 * depends on the layout and cannot be expressed in NHWC (Flatten of
 * [N,C,H,W], Softmax over H, ...) is rejected by supports_node and runs on
 * the reference interpreter.
 *
 * The external buffers never move (inputs are copied into owned buffers
 * padded by XNN_EXTRA_BYTES, which XNNPACK may read past the end; outputs
 * are the caller's tensors or owned buffers), so xnn_setup_runtime runs
 * once, and again only when the caller hands different output buffers.
 *
 * Threads: segments share one pthreadpool per thread count, their workers
 * sleep after each segment (XNN_FLAG_YIELD_WORKERS) so that they leave the
 * cores to the reference interpreter in between, and segments too small to
 * gain from threads run on the calling thread (see XNN_PARALLEL_MIN_WORK).
 *
 * FP16 (XNN_FLAG_FORCE_FP16_INFERENCE) covers few nodes in this snapshot;
 * fully connected layers are then lowered as 1x1 convolutions, which it
 * covers, and any other refusal fails compile() with XNNPACK's status and
 * the nodes likely at fault. The Debian library keeps its assertions, so a
 * node it would abort on is refused before XNNPACK sees it.
 *
 * INT8 (static quantisation; options->quant holds the calibrated ranges
 * and weight scales): a Conv (dense, grouped or depthwise), Gemm or MatMul
 * whose weight has a WEIGHT entry and whose input an ACTIVATION entry
 * runs as input -> convert -> qint8 (the uint8 zero point shifted by
 * -128) -> convolution with a per-channel qcint8 filter, quantised here
 * from the float weight as the static quantiser does, and a qcint32 bias
 * -> qint8 with the output's entry -> convert -> float. This snapshot's
 * int8 fully connected node takes one filter scale only, so Gemm and
 * MatMul become 1x1 convolutions (the converts reshape). A Relu or Clip
 * that alone reads the op's output is fused into it (its output's entry is
 * used, as ORT's quantiser removes it), and an int8 op reading what an
 * int8 op wrote with the same quantisation reads the qint8 value, with no
 * convert pair between them (ResNet's Conv -> Relu -> Conv). The ops
 * ORT's QDQ model also runs on uint8 go int8 when one input is at hand in
 * qint8 already (else the converts would cost more than the op) and the
 * output has an entry: Add and Mul of two activations (qs8 add/multiply,
 * a sole Relu/Clip reader fused as for Conv), MaxPool and the data
 * movement that is a reshape here (Reshape, Flatten, Squeeze, Unsqueeze,
 * Identity), whose output keeps the input's quantisation as in the QDQ
 * form, and GlobalAveragePool. ResNet and MobileNet then run in int8 from
 * the input's convert to the logits'. This snapshot has no qs8 average
 * pooling (AveragePool stays float). Everything else runs in float. What
 * XNNPACK would refuse in int8 (scales that are not normal, requantisation
 * scales from 256 up, Add's input-to-output scale ratios outside
 * [2^-10, 2^8), Mul's outside [2^-16, 2^8), global pooling's outside
 * [2^-8, 2^8)) is checked before it is asked, and the node stays float;
 * should creating the runtime still fail, the segment is compiled again in
 * float.
 *
 * Every lowering has a check (for supports_node) and a define (for
 * compile) sharing one parameter reader, so that compile() of any run of
 * accepted nodes succeeds. A node whose outputs are all constant (a
 * Constant the hybrid layer evaluated, an Identity of a weight) is accepted
 * and lowered to nothing. */
#include "runtime/engine.h"

#include "passes/quantize.h"

#include <stdarg.h>
#include <stdlib.h>

#define XNN_REASON_UNBUILT                                                     \
  "modelbench was built without XNNPACK (apt install libxnnpack-dev "          \
  "libpthreadpool-dev)"

#ifndef MB_HAVE_XNNPACK

MB_ENGINE_UNBUILT(xnnpack, XNN_REASON_UNBUILT);

#else /* MB_HAVE_XNNPACK */

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <pthreadpool.h>
#include <xnnpack.h>

/* This snapshot has no runtime version query (xnn_version arrived later):
 * the version is the Debian package's upstream snapshot date. */
#define XNN_VERSION_STRING "git20220216"

/* ------------------------------------------------------------------------ */
/* Library state                                                             */
/* ------------------------------------------------------------------------ */

#define XNN_STATUS_LIST(X)                                                     \
  X(success)                                                                   \
  X(uninitialized)                                                             \
  X(invalid_parameter)                                                         \
  X(invalid_state)                                                             \
  X(unsupported_parameter)                                                     \
  X(unsupported_hardware)                                                      \
  X(out_of_memory)

static const char *xnn_status_name(enum xnn_status status) {
  static const struct {
    enum xnn_status status;
    const char *name;
  } names[] = {
#define MB_X(name) {xnn_status_##name, "xnn_status_" #name},
      XNN_STATUS_LIST(MB_X)
#undef MB_X
  };
  for (size_t i = 0; i < MB_ARRAY_COUNT(names); i++)
    if (names[i].status == status)
      return names[i].name;
  return "xnn_status_unknown";
}

static pthread_once_t xnn_once = PTHREAD_ONCE_INIT;
static enum xnn_status xnn_init_status = xnn_status_uninitialized;

/* xnn_initialize once per process; it is never deinitialised, as segments
 * may be compiled at any time until the process exits. */
static void xnn_init_once(void) {
  xnn_init_status = xnn_initialize(NULL);
}

static enum xnn_status xnn_ready(void) {
  pthread_once(&xnn_once, xnn_init_once);
  return xnn_init_status;
}

/* Thread pools, one per thread count, shared by every segment of the
 * process. pthreadpool's workers spin for a while after each job: with a
 * pool per segment, a model cut into many segments had the idle workers of
 * earlier segments spinning on the cores the running one needed
 * (squeezenet, 17 segments: 153 ms at 2 threads against 2.3 ms at 1).
 * Segments of one session run one after another; pthreadpool serialises
 * jobs from different sessions itself. */
#define XNN_MAX_POOLS 8

static pthread_mutex_t pools_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct {
  size_t threads;
  pthreadpool_t pool;
  int refs;
} pools[XNN_MAX_POOLS];

/* A pool of `threads` threads (NULL for 1 thread, and when out of memory:
 * *failed says which). Release with pool_release. */
static pthreadpool_t pool_acquire(int threads, bool *failed) {
  pthreadpool_t pool = NULL;
  *failed = false;
  if (threads <= 1)
    return NULL;
  pthread_mutex_lock(&pools_mutex);
  int free_slot = -1;
  for (int i = 0; i < XNN_MAX_POOLS && !pool; i++) {
    if (pools[i].refs > 0 && pools[i].threads == (size_t)threads) {
      pools[i].refs++;
      pool = pools[i].pool;
    } else if (pools[i].refs == 0 && free_slot < 0) {
      free_slot = i;
    }
  }
  if (!pool) {
    pool = pthreadpool_create((size_t)threads);
    if (pool && free_slot >= 0) {
      pools[free_slot].threads = (size_t)threads;
      pools[free_slot].pool = pool;
      pools[free_slot].refs = 1;
    }
    *failed = pool == NULL;
  }
  pthread_mutex_unlock(&pools_mutex);
  return pool;
}

static void pool_release(pthreadpool_t pool) {
  bool shared = false;
  if (!pool)
    return;
  pthread_mutex_lock(&pools_mutex);
  for (int i = 0; i < XNN_MAX_POOLS && !shared; i++) {
    if (pools[i].refs > 0 && pools[i].pool == pool) {
      shared = true;
      if (--pools[i].refs == 0) {
        pthreadpool_destroy(pool);
        pools[i].pool = NULL;
      }
    }
  }
  pthread_mutex_unlock(&pools_mutex);
  /* More distinct thread counts than slots: the pool was private. */
  if (!shared)
    pthreadpool_destroy(pool);
}

/* ------------------------------------------------------------------------ */
/* Graph queries                                                             */
/* ------------------------------------------------------------------------ */

/* XNN_MAX_TENSOR_DIMS (6) bounds every tensor inside a segment. */
#define XNN_RANK_MAX 6

static int node_input(const mb_node *n, int i) {
  return i < n->n_inputs ? n->inputs[i] : -1;
}
static int node_output(const mb_node *n, int i) {
  return i < n->n_outputs ? n->outputs[i] : -1;
}
/* The data of value v when it is constant: given by the hybrid layer, or
 * an Identity of a constant (PyTorch exports shared weights that way). */
static const mb_tensor *constant_of(const mb_engine_graph *eg, int v) {
  for (int depth = 0; v >= 0 && eg->constants && depth < 16; depth++) {
    if (eg->constants[v])
      return eg->constants[v];
    int p = eg->graph->values[v].producer;
    if (p < 0)
      return NULL;
    const mb_node *n = &eg->graph->nodes[p];
    if (strcmp(n->op_type, "Identity") != 0 || n->domain[0] || n->n_inputs != 1)
      return NULL;
    v = n->inputs[0];
  }
  return NULL;
}

/* Rank-4 values live in NHWC inside a segment. */
static bool is_nhwc(int rank) {
  return rank == 4;
}

/* True when NCHW and NHWC orders of these dims put every element at the
 * same offset (one channel, or one pixel per image). */
static bool layouts_agree(const int64_t *dims) {
  return dims[1] == 1 || dims[2] * dims[3] == 1;
}

/* The segment-layout dims of a value of ONNX shape (rank, dims); rank 0
 * becomes [1]. Returns the number of dims. */
static size_t segment_dims(int rank, const int64_t *dims, size_t *out) {
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

static int64_t shape_numel(int rank, const int64_t *dims) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++)
    n *= dims[i];
  return n;
}

/* ------------------------------------------------------------------------ */
/* supports_node helpers                                                     */
/* ------------------------------------------------------------------------ */

/* Checks take an mb_engine_check (engine.h) and return 1 (accepted) or
 * 0 through mb__engine_reject. */

static const mb_shape_info *shape_of(mb_engine_check *c, int v) {
  return &c->eg->shapes[v];
}

/* Input i is a float32 tensor of known shape within XNNPACK's rank limit;
 * must_be_constant: 1 constant, -1 not constant, 0 either. */
static int check_float_input(mb_engine_check *c, int i, int must_be_constant) {
  int v = node_input(c->n, i);
  if (v < 0)
    return mb__engine_reject(c, "input %d is missing", i);
  const mb_shape_info *s = shape_of(c, v);
  const mb_tensor *k = constant_of(c->eg, v);
  if (!s->known && !k)
    return mb__engine_reject(c, "input %d has no static shape", i);
  mb_dtype dt = k ? k->dtype : s->dtype;
  int rank = k ? k->rank : s->rank;
  if (dt != MB_DTYPE_FLOAT)
    return mb__engine_reject(c, "input %d is %s (only float32 runs on XNNPACK)",
                             i, mb_dtype_name(dt));
  if (rank > XNN_RANK_MAX)
    return mb__engine_reject(c, "input %d has rank %d (XNNPACK allows %d)", i,
                             rank, XNN_RANK_MAX);
  int64_t numel = k ? k->numel : shape_numel(s->rank, s->dims);
  if (numel <= 0)
    return mb__engine_reject(c, "input %d is empty", i);
  if (must_be_constant > 0 && !k)
    return mb__engine_reject(c, "input %d is not a constant", i);
  if (must_be_constant < 0 && k)
    return mb__engine_reject(
        c, "input %d is a constant (expected an activation)", i);
  return 1;
}

/* Output 0 is a float32 tensor of known, non-empty shape; optional
 * outputs (MaxPool's Indices, Dropout's mask, ...) are omitted. */
static int check_outputs(mb_engine_check *c) {
  int v = node_output(c->n, 0);
  if (v < 0)
    return mb__engine_reject(c, "output 0 is missing");
  const mb_shape_info *s = shape_of(c, v);
  if (!s->known)
    return mb__engine_reject(c, "output has no static shape");
  if (s->dtype != MB_DTYPE_FLOAT)
    return mb__engine_reject(c, "output is %s (only float32 runs on XNNPACK)",
                             mb_dtype_name(s->dtype));
  if (s->rank > XNN_RANK_MAX)
    return mb__engine_reject(c, "output has rank %d (XNNPACK allows %d)",
                             s->rank, XNN_RANK_MAX);
  if (shape_numel(s->rank, s->dims) <= 0)
    return mb__engine_reject(c, "output is empty");
  for (int i = 1; i < c->n->n_outputs; i++)
    if (c->n->outputs[i] >= 0)
      return mb__engine_reject(c, "optional output %d is not supported", i);
  return 1;
}

/* Input 0 as activation and output 0: the common case of unary nodes. */
static int check_unary(mb_engine_check *c) {
  return check_float_input(c, 0, -1) && check_outputs(c);
}

/* Reads INTS attribute `name` with `count` entries (default `def` when
 * absent) into out; 0 when the count differs or a value is below min. */
static bool attr_ints(const mb_node *n, const char *name, int count,
                      int64_t def, int64_t min, int64_t *out) {
  const int64_t *v;
  int64_t k = mb__node_attr_ints(n, name, &v);
  if (k < 0) {
    for (int i = 0; i < count; i++)
      out[i] = def;
    return true;
  }
  if (k != count)
    return false;
  for (int i = 0; i < count; i++) {
    if (v[i] < min || v[i] > ((int64_t)1 << 24))
      return false;
    out[i] = v[i];
  }
  return true;
}

/* A scalar float constant (numel 1) at input i, or `def` when omitted. */
static int scalar_input(mb_engine_check *c, int i, float def, float *out) {
  int v = node_input(c->n, i);
  *out = def;
  if (v < 0)
    return 1;
  const mb_tensor *k = constant_of(c->eg, v);
  if (!k)
    return mb__engine_reject(c, "input %d is not a constant", i);
  if (k->numel != 1 || k->dtype != MB_DTYPE_FLOAT)
    return mb__engine_reject(c, "input %d is not a float32 scalar", i);
  *out = ((const float *)k->data)[0];
  return 1;
}

/* Reads an integer constant (int32/int64) at input i into out (at most
 * max values); returns the count or -1 (rejected). */
static int64_t int_input(mb_engine_check *c, int i, int64_t *out, int64_t max) {
  int v = node_input(c->n, i);
  const mb_tensor *k = constant_of(c->eg, v);
  if (!k) {
    mb__engine_reject(c, "input %d is not a constant", i);
    return -1;
  }
  if (k->dtype != MB_DTYPE_INT64 && k->dtype != MB_DTYPE_INT32) {
    mb__engine_reject(c, "input %d is %s, expected int64", i,
                      mb_dtype_name(k->dtype));
    return -1;
  }
  if (k->numel > max) {
    mb__engine_reject(c, "input %d has %lld values", i, (long long)k->numel);
    return -1;
  }
  for (int64_t j = 0; j < k->numel; j++)
    out[j] = mb__tensor_get_i64(k, j);
  return k->numel;
}

static bool fits_u32(int64_t v) {
  return v >= 0 && v <= (int64_t)UINT32_MAX;
}

/* ------------------------------------------------------------------------ */
/* Geometry: Conv and pooling                                                */
/* ------------------------------------------------------------------------ */

typedef enum auto_pad {
  AUTO_PAD_NOTSET,
  AUTO_PAD_SAME_UPPER,
  AUTO_PAD_SAME_LOWER,
  AUTO_PAD_VALID,
} auto_pad;

static const char *const auto_pad_names[] = {"NOTSET", "SAME_UPPER",
                                             "SAME_LOWER", "VALID"};

static int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
static int64_t ceil_div(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

/* Window geometry of a 2-D Conv or pool in ONNX terms, resolved to
 * explicit padding. pad_extra_*: padding XNNPACK must add at the end so
 * that ceil_mode windows exist (they hold no input and, as XNNPACK's
 * pools skip padding, count for nothing). */
typedef struct window2d {
  int64_t in[2], out[2], kernel[2], stride[2], dilation[2];
  int64_t pad_begin[2], pad_end[2], pad_extra[2];
} window2d;

/* Resolves strides, dilations, pads, auto_pad and ceil_mode of node n over
 * input spatial dims in[2] with kernel[2] already set; checks the output
 * size against the inferred shape `out_dims` (rank 4). */
static int window_resolve(mb_engine_check *c, window2d *w, bool pool,
                          const int64_t *out_dims) {
  int64_t pads[4];
  const mb_node *n = c->n;
  if (!attr_ints(n, "strides", 2, 1, 1, w->stride))
    return mb__engine_reject(c, "strides must be 2 values >= 1");
  if (!attr_ints(n, "dilations", 2, 1, 1, w->dilation))
    return mb__engine_reject(c, "dilations must be 2 values >= 1");
  if (!attr_ints(n, "pads", 4, 0, 0, pads))
    return mb__engine_reject(c, "pads must be 4 values >= 0");
  const char *ap = mb__node_attr_string(n, "auto_pad", "NOTSET");
  int mode = -1;
  for (int i = 0; i < (int)MB_ARRAY_COUNT(auto_pad_names); i++)
    if (strcmp(ap, auto_pad_names[i]) == 0)
      mode = i;
  if (mode < 0)
    return mb__engine_reject(c, "auto_pad '%s' is not supported", ap);
  bool ceil_mode = pool && mb__node_attr_int(n, "ceil_mode", 0) != 0;
  for (int d = 0; d < 2; d++) {
    int64_t extent = (w->kernel[d] - 1) * w->dilation[d] + 1;
    int64_t in = w->in[d], s = w->stride[d];
    w->pad_begin[d] = w->pad_end[d] = w->pad_extra[d] = 0;
    switch ((auto_pad)mode) {
    case AUTO_PAD_NOTSET: {
      w->pad_begin[d] = pads[d];
      w->pad_end[d] = pads[2 + d];
      int64_t span = in + pads[d] + pads[2 + d] - extent;
      w->out[d] = (ceil_mode ? ceil_div(span, s) : floor_div(span, s)) + 1;
      if (ceil_mode && w->out[d] > 1 && (w->out[d] - 1) * s >= in + pads[d])
        w->out[d]--;
      break;
    }
    case AUTO_PAD_VALID:
      w->out[d] = floor_div(in - extent, s) + 1;
      break;
    case AUTO_PAD_SAME_UPPER:
    case AUTO_PAD_SAME_LOWER: {
      w->out[d] = ceil_div(in, s);
      int64_t total = MB_MAX(0, (w->out[d] - 1) * s + extent - in);
      int64_t small = total / 2, big = total - small;
      w->pad_begin[d] = mode == AUTO_PAD_SAME_UPPER ? small : big;
      w->pad_end[d] = mode == AUTO_PAD_SAME_UPPER ? big : small;
      break;
    }
    }
    if (w->out[d] < 1)
      return mb__engine_reject(c, "kernel larger than the padded input");
    int64_t need = (w->out[d] - 1) * s + extent;
    int64_t have = in + w->pad_begin[d] + w->pad_end[d];
    if (need > have)
      w->pad_extra[d] = need - have;
    if (pool && (w->pad_begin[d] >= extent || w->pad_end[d] >= extent))
      return mb__engine_reject(c, "padding as large as the window");
    if (w->out[d] != out_dims[2 + d])
      return mb__engine_reject(
          c, "output size %lld differs from the inferred %lld",
          (long long)w->out[d], (long long)out_dims[2 + d]);
    if (!fits_u32(w->pad_begin[d]) ||
        !fits_u32(w->pad_end[d] + w->pad_extra[d]))
      return mb__engine_reject(c, "padding out of range");
  }
  return 1;
}

typedef struct conv_params {
  window2d w;
  int64_t groups, c_in, c_out;
  bool depthwise;
} conv_params;

static int conv_params_get(mb_engine_check *c, conv_params *p) {
  const mb_node *n = c->n;
  memset(p, 0, sizeof *p);
  if (!check_float_input(c, 0, -1) || !check_float_input(c, 1, 1) ||
      !check_outputs(c))
    return 0;
  if (n->n_inputs > 3)
    return mb__engine_reject(c, "too many inputs");
  const mb_shape_info *x = shape_of(c, n->inputs[0]);
  const mb_tensor *w = constant_of(c->eg, n->inputs[1]);
  const mb_shape_info *y = shape_of(c, n->outputs[0]);
  if (x->rank != 4 || w->rank != 4 || y->rank != 4)
    return mb__engine_reject(c, "only 2-D convolutions (input rank %d)",
                             x->rank);
  int b = node_input(n, 2);
  if (b >= 0) {
    if (!check_float_input(c, 2, 1))
      return 0;
    const mb_tensor *bias = constant_of(c->eg, b);
    if (bias->rank != 1 || bias->dims[0] != w->dims[0])
      return mb__engine_reject(c, "bias shape does not match the weights");
  }
  p->groups = mb__node_attr_int(n, "group", 1);
  p->c_in = x->dims[1];
  p->c_out = w->dims[0];
  if (p->groups < 1 || p->c_in % p->groups != 0 || p->c_out % p->groups != 0 ||
      w->dims[1] != p->c_in / p->groups)
    return mb__engine_reject(c, "weights do not match the input and group");
  if (y->dims[1] != p->c_out || y->dims[0] != x->dims[0])
    return mb__engine_reject(c, "output shape does not match the weights");
  const int64_t *ks;
  int64_t nks = mb__node_attr_ints(n, "kernel_shape", &ks);
  if (nks >= 0 && (nks != 2 || ks[0] != w->dims[2] || ks[1] != w->dims[3]))
    return mb__engine_reject(c, "kernel_shape disagrees with the weights");
  p->w.in[0] = x->dims[2];
  p->w.in[1] = x->dims[3];
  p->w.kernel[0] = w->dims[2];
  p->w.kernel[1] = w->dims[3];
  if (!window_resolve(c, &p->w, false, y->dims))
    return 0;
  for (int d = 0; d < 2; d++)
    if (p->w.pad_extra[d])
      return mb__engine_reject(c, "padding does not cover the windows");
  p->depthwise = p->groups > 1 && p->groups == p->c_in;
  if (!fits_u32(p->groups) || !fits_u32(p->c_in) || !fits_u32(p->c_out))
    return mb__engine_reject(c, "channel count out of range");
  return 1;
}

typedef struct pool_params {
  window2d w;
  bool average;
  bool count_include_pad; /* with nonzero pads: an explicit Pad first */
  bool identity;          /* a 1x1 window, stride 1, no pads */
} pool_params;

static int pool_params_get(mb_engine_check *c, pool_params *p, bool average) {
  const mb_node *n = c->n;
  memset(p, 0, sizeof *p);
  p->average = average;
  if (!check_float_input(c, 0, -1) || !check_outputs(c))
    return 0;
  const mb_shape_info *x = shape_of(c, n->inputs[0]);
  const mb_shape_info *y = shape_of(c, n->outputs[0]);
  if (x->rank != 4 || y->rank != 4)
    return mb__engine_reject(c, "only 2-D pooling (input rank %d)", x->rank);
  if (!attr_ints(n, "kernel_shape", 2, 0, 1, p->w.kernel) || !p->w.kernel[0])
    return mb__engine_reject(c, "kernel_shape must be 2 values >= 1");
  p->w.in[0] = x->dims[2];
  p->w.in[1] = x->dims[3];
  if (!window_resolve(c, &p->w, true, y->dims))
    return 0;
  if (average && (p->w.dilation[0] != 1 || p->w.dilation[1] != 1))
    return mb__engine_reject(c, "dilated average pooling");
  p->count_include_pad =
      average && mb__node_attr_int(n, "count_include_pad", 0) != 0;
  bool padded = false;
  for (int d = 0; d < 2; d++)
    padded |= p->w.pad_begin[d] || p->w.pad_end[d] || p->w.pad_extra[d];
  if (p->w.kernel[0] * p->w.kernel[1] == 1) {
    /* XNNPACK refuses 1-element windows; with stride 1 and no padding the
     * pool is a copy. */
    if (padded || p->w.stride[0] != 1 || p->w.stride[1] != 1)
      return mb__engine_reject(c, "1x1 window with strides or padding");
    p->identity = true;
  }
  return 1;
}

/* ------------------------------------------------------------------------ */
/* Per-op checks                                                             */
/* ------------------------------------------------------------------------ */

static int check_conv(mb_engine_check *c) {
  conv_params p;
  return conv_params_get(c, &p);
}

static int check_maxpool(mb_engine_check *c) {
  pool_params p;
  return pool_params_get(c, &p, false);
}

static int check_avgpool(mb_engine_check *c) {
  pool_params p;
  return pool_params_get(c, &p, true);
}

static int check_global_pool(mb_engine_check *c) {
  if (!check_unary(c))
    return 0;
  const mb_shape_info *x = shape_of(c, c->n->inputs[0]);
  if (x->rank != 4)
    return mb__engine_reject(c, "only 2-D pooling (input rank %d)", x->rank);
  if (strcmp(c->n->op_type, "GlobalMaxPool") == 0 &&
      x->dims[2] * x->dims[3] == 1)
    return mb__engine_reject(c, "a 1x1 input (a copy)");
  return 1;
}

/* Elementwise binary: the layout rules of broadcasting. */
static int check_binary(mb_engine_check *c) {
  const mb_node *n = c->n;
  if (n->n_inputs != 2)
    return mb__engine_reject(c, "%d inputs (2 supported)", n->n_inputs);
  if (!check_float_input(c, 0, 0) || !check_float_input(c, 1, 0) ||
      !check_outputs(c))
    return 0;
  const mb_shape_info *y = shape_of(c, n->outputs[0]);
  int n_const = 0;
  for (int i = 0; i < 2; i++) {
    int v = n->inputs[i];
    if (constant_of(c->eg, v)) {
      n_const++;
      continue;
    }
    const mb_shape_info *s = shape_of(c, v);
    if (is_nhwc(s->rank) && !is_nhwc(y->rank))
      return mb__engine_reject(c, "a rank-4 input broadcast to rank %d",
                               y->rank);
    if (is_nhwc(y->rank) && !is_nhwc(s->rank) &&
        shape_numel(s->rank, s->dims) != 1)
      return mb__engine_reject(
          c,
          "input %d of rank %d broadcast against rank 4 (NHWC "
          "inside the segment)",
          i, s->rank);
  }
  if (n_const == 2)
    return mb__engine_reject(c, "both inputs constant");
  return 1;
}

/* Clip's bounds: attributes before opset 11, constant inputs after. */
static int clip_bounds(mb_engine_check *c, float *lo, float *hi) {
  *lo = -INFINITY;
  *hi = INFINITY;
  if (c->opset < 11) {
    *lo = mb__node_attr_float(c->n, "min", -INFINITY);
    *hi = mb__node_attr_float(c->n, "max", INFINITY);
    return 1;
  }
  return scalar_input(c, 1, -INFINITY, lo) && scalar_input(c, 2, INFINITY, hi);
}

static int check_clip(mb_engine_check *c) {
  float lo, hi;
  if (!check_unary(c) || !clip_bounds(c, &lo, &hi))
    return 0;
  if (!(lo < hi))
    return mb__engine_reject(c, "min %g is not below max %g", (double)lo,
                             (double)hi);
  return 1;
}

static int check_prelu(mb_engine_check *c) {
  if (!check_float_input(c, 0, -1) || !check_float_input(c, 1, 1) ||
      !check_outputs(c))
    return 0;
  const mb_shape_info *x = shape_of(c, c->n->inputs[0]);
  const mb_tensor *slope = constant_of(c->eg, c->n->inputs[1]);
  if (x->rank < 2)
    return mb__engine_reject(c, "input of rank %d", x->rank);
  if (slope->numel == 1)
    return 1;
  /* XNNPACK's PReLU takes one slope per channel, which is the last dim
   * inside the segment: dim 1 for rank 4 (NHWC) and rank 2. */
  int channel_axis = is_nhwc(x->rank) ? 1 : x->rank - 1;
  if (slope->rank > x->rank)
    return mb__engine_reject(c, "slope of higher rank than the input");
  for (int i = 0; i < slope->rank; i++) {
    int axis = x->rank - slope->rank + i;
    int64_t want = axis == channel_axis ? x->dims[axis] : 1;
    if (slope->dims[i] != want)
      return mb__engine_reject(c, "slope is not per channel");
  }
  return 1;
}

static int check_softmax(mb_engine_check *c) {
  if (!check_unary(c))
    return 0;
  const mb_shape_info *x = shape_of(c, c->n->inputs[0]);
  int64_t axis = mb__node_attr_int(c->n, "axis", c->opset >= 13 ? -1 : 1);
  if (axis < 0)
    axis += x->rank;
  if (axis < 0 || axis >= x->rank)
    return mb__engine_reject(c, "axis out of range");
  if (c->opset >= 13) {
    int last = is_nhwc(x->rank) ? 1 : x->rank - 1;
    if (axis != last)
      return mb__engine_reject(
          c, "softmax over axis %lld of a rank-%d tensor%s", (long long)axis,
          x->rank, is_nhwc(x->rank) ? " (NHWC inside the segment)" : "");
    return 1;
  }
  /* Before opset 13: over the flattened dims [axis, rank), contiguous in
   * NHWC too when they include H, W and C together. */
  if (is_nhwc(x->rank) && axis > 1)
    return mb__engine_reject(
        c, "softmax over dims from %lld of a rank-4 tensor", (long long)axis);
  return 1;
}

/* Reshape, Flatten, Squeeze, Unsqueeze: a static reshape to the inferred
 * output shape, valid when no rank-4 side is reordered by NHWC. */
static int check_reshape(mb_engine_check *c) {
  /* The shape or axes input need not be constant: the output shape is
   * static, and that is all the lowering reads. */
  if (!check_float_input(c, 0, -1) || !check_outputs(c))
    return 0;
  const mb_shape_info *x = shape_of(c, c->n->inputs[0]);
  const mb_shape_info *y = shape_of(c, c->n->outputs[0]);
  if (is_nhwc(x->rank) && is_nhwc(y->rank) &&
      memcmp(x->dims, y->dims, 4 * sizeof(int64_t)) == 0)
    return 1;
  if ((is_nhwc(x->rank) && !layouts_agree(x->dims)) ||
      (is_nhwc(y->rank) && !layouts_agree(y->dims)))
    return mb__engine_reject(
        c, "reshape of a rank-4 tensor with C > 1 and H*W > 1 "
           "(NHWC inside the segment)");
  return 1;
}

static int check_identity(mb_engine_check *c) {
  if (!check_unary(c))
    return 0;
  if (strcmp(c->n->op_type, "Dropout") == 0) {
    if (c->opset < 7 && mb__node_attr_int(c->n, "is_test", 0) == 0)
      return mb__engine_reject(c, "training mode");
    int t = node_input(c->n, 2);
    if (t >= 0) {
      const mb_tensor *k = constant_of(c->eg, t);
      if (!k || k->numel != 1 || mb__tensor_get_f64(k, 0) != 0)
        return mb__engine_reject(c, "training_mode is not a constant false");
    }
  }
  return 1;
}

typedef struct pad_params {
  int64_t begin[MB_MAX_RANK], end[MB_MAX_RANK]; /* ONNX axis order */
  float value;
} pad_params;

static int pad_params_get(mb_engine_check *c, pad_params *p) {
  const mb_node *n = c->n;
  if (!check_float_input(c, 0, -1) || !check_outputs(c))
    return 0;
  const mb_shape_info *x = shape_of(c, n->inputs[0]);
  int r = x->rank;
  int64_t pads[2 * MB_MAX_RANK];
  const char *mode = mb__node_attr_string(n, "mode", "constant");
  if (strcmp(mode, "constant") != 0)
    return mb__engine_reject(c, "mode '%s' (constant only)", mode);
  p->value = 0.0f;
  if (c->opset < 11) {
    const int64_t *v;
    if (mb__node_attr_ints(n, "pads", &v) != 2 * r)
      return mb__engine_reject(c, "pads must have %d values", 2 * r);
    memcpy(pads, v, (size_t)(2 * r) * sizeof *v);
    p->value = mb__node_attr_float(n, "value", 0.0f);
  } else {
    int64_t count = int_input(c, 1, pads, 2 * MB_MAX_RANK);
    if (count < 0)
      return 0;
    if (!scalar_input(c, 2, 0.0f, &p->value))
      return 0;
    int64_t axes[MB_MAX_RANK];
    int n_axes = r;
    for (int i = 0; i < r; i++)
      axes[i] = i;
    if (node_input(n, 3) >= 0) {
      int64_t k = int_input(c, 3, axes, MB_MAX_RANK);
      if (k < 0)
        return 0;
      n_axes = (int)k;
    }
    if (count != 2 * n_axes)
      return mb__engine_reject(c, "pads has %lld values for %d axes",
                               (long long)count, n_axes);
    int64_t full[2 * MB_MAX_RANK] = {0};
    for (int i = 0; i < n_axes; i++) {
      int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
      if (a < 0 || a >= r)
        return mb__engine_reject(c, "axis out of range");
      full[a] = pads[i];
      full[r + a] = pads[n_axes + i];
    }
    memcpy(pads, full, sizeof full);
  }
  for (int i = 0; i < r; i++) {
    if (pads[i] < 0 || pads[r + i] < 0)
      return mb__engine_reject(c, "negative pads (cropping)");
    p->begin[i] = pads[i];
    p->end[i] = pads[r + i];
  }
  return 1;
}

static int check_pad(mb_engine_check *c) {
  pad_params p;
  return pad_params_get(c, &p);
}

static int check_batchnorm(mb_engine_check *c) {
  if (!check_float_input(c, 0, -1) || !check_outputs(c))
    return 0;
  if (c->n->n_inputs != 5)
    return mb__engine_reject(c, "%d inputs", c->n->n_inputs);
  if (mb__node_attr_int(c->n, "training_mode", 0) != 0)
    return mb__engine_reject(c, "training mode");
  const mb_shape_info *x = shape_of(c, c->n->inputs[0]);
  if (x->rank < 2)
    return mb__engine_reject(c, "input of rank %d", x->rank);
  for (int i = 1; i < 5; i++) {
    if (!check_float_input(c, i, 1))
      return 0;
    const mb_tensor *k = constant_of(c->eg, c->n->inputs[i]);
    if (k->rank != 1 || k->dims[0] != x->dims[1])
      return mb__engine_reject(c, "input %d is not one value per channel", i);
  }
  return 1;
}

typedef struct fc_params {
  int64_t k, n; /* input and output features */
  bool trans_b; /* B is [N, K] */
  float alpha, beta;
  int bias_kind; /* 0 none, 1 per output feature, 2 added after */
} fc_params;

static int fc_params_get(mb_engine_check *c, fc_params *p) {
  const mb_node *n = c->n;
  bool gemm = strcmp(n->op_type, "Gemm") == 0;
  memset(p, 0, sizeof *p);
  if (!check_float_input(c, 0, -1) || !check_float_input(c, 1, 1) ||
      !check_outputs(c))
    return 0;
  const mb_shape_info *a = shape_of(c, n->inputs[0]);
  const mb_tensor *b = constant_of(c->eg, n->inputs[1]);
  const mb_shape_info *y = shape_of(c, n->outputs[0]);
  if (b->rank != 2)
    return mb__engine_reject(c, "weights of rank %d (2 supported)", b->rank);
  p->alpha = p->beta = 1.0f;
  if (gemm) {
    if (a->rank != 2)
      return mb__engine_reject(c, "input of rank %d", a->rank);
    if (mb__node_attr_int(n, "transA", 0) != 0)
      return mb__engine_reject(c, "transA = 1");
    p->trans_b = mb__node_attr_int(n, "transB", 0) != 0;
    p->alpha = mb__node_attr_float(n, "alpha", 1.0f);
    p->beta = mb__node_attr_float(n, "beta", 1.0f);
  } else if (n->n_inputs != 2) {
    return mb__engine_reject(c, "%d inputs", n->n_inputs);
  } else if (a->rank != 2 && a->rank != 3) {
    return mb__engine_reject(c, "input of rank %d (2 or 3 supported)", a->rank);
  }
  p->k = p->trans_b ? b->dims[1] : b->dims[0];
  p->n = p->trans_b ? b->dims[0] : b->dims[1];
  if (a->dims[a->rank - 1] != p->k || y->rank != a->rank ||
      y->dims[y->rank - 1] != p->n)
    return mb__engine_reject(c, "shapes do not match");
  int cv = node_input(n, 2);
  if (gemm && cv >= 0 && p->beta != 0.0f) {
    if (!check_float_input(c, 2, 1))
      return 0;
    const mb_tensor *k = constant_of(c->eg, cv);
    if (k->rank > 2)
      return mb__engine_reject(c, "C of rank %d", k->rank);
    bool per_n = k->numel == 1 || k->dims[k->rank - 1] == p->n;
    bool one_row = k->rank < 2 || k->dims[0] == 1;
    p->bias_kind = per_n && one_row ? 1 : 2;
  }
  return 1;
}

static int check_fc(mb_engine_check *c) {
  fc_params p;
  return fc_params_get(c, &p);
}

static int check_hardsigmoid(mb_engine_check *c) {
  return check_unary(c);
}

static int check_depth_to_space(mb_engine_check *c) {
  if (!check_unary(c))
    return 0;
  const mb_shape_info *x = shape_of(c, c->n->inputs[0]);
  if (x->rank != 4)
    return mb__engine_reject(c, "input of rank %d", x->rank);
  const char *mode = mb__node_attr_string(c->n, "mode", "DCR");
  if (strcmp(mode, "DCR") != 0)
    return mb__engine_reject(c, "mode %s (DCR only)", mode);
  int64_t bs = mb__node_attr_int(c->n, "blocksize", 0);
  if (bs < 2 || bs > 1024 || x->dims[1] % (bs * bs) != 0)
    return mb__engine_reject(c, "blocksize %lld", (long long)bs);
  return 1;
}

static int check_leaky_relu(mb_engine_check *c) {
  return check_unary(c);
}

/* Resize, linear over H and W of a rank-4 tensor: XNNPACK's bilinear
 * resize, whose coordinate modes are TensorFlow's. Only the ONNX modes that
 * map exactly are accepted, and only when the coordinate scale is
 * input / output size, which is XNNPACK's. */
static int resize_flags(mb_engine_check *c, uint32_t *flags) {
  const mb_node *n = c->n;
  if (!check_float_input(c, 0, -1) || !check_outputs(c))
    return 0;
  const mb_shape_info *x = shape_of(c, n->inputs[0]);
  const mb_shape_info *y = shape_of(c, n->outputs[0]);
  if (x->rank != 4 || y->rank != 4)
    return mb__engine_reject(c, "input of rank %d (4 supported)", x->rank);
  if (x->dims[0] != y->dims[0] || x->dims[1] != y->dims[1])
    return mb__engine_reject(c, "resizes N or C");
  const char *mode = mb__node_attr_string(n, "mode", "nearest");
  if (strcmp(mode, "linear") != 0)
    return mb__engine_reject(c, "mode '%s' (linear only)", mode);
  if (mb__node_attr_int(n, "antialias", 0) != 0)
    return mb__engine_reject(c, "antialias");
  if (mb__node_attr(n, "axes"))
    return mb__engine_reject(c, "the axes attribute");
  if (strcmp(mb__node_attr_string(n, "keep_aspect_ratio_policy", "stretch"),
             "stretch") != 0)
    return mb__engine_reject(c, "keep_aspect_ratio_policy other than stretch");
  const char *coord =
      c->opset < 11 ? "asymmetric"
                    : mb__node_attr_string(n, "coordinate_transformation_mode",
                                           "half_pixel");
  if (strcmp(coord, "half_pixel") == 0 ||
      (strcmp(coord, "pytorch_half_pixel") == 0 && y->dims[2] > 1 &&
       y->dims[3] > 1))
    *flags = 0;
  else if (strcmp(coord, "align_corners") == 0)
    *flags = XNN_FLAG_ALIGN_CORNERS;
  else if (strcmp(coord, "asymmetric") == 0)
    *flags = XNN_FLAG_TENSORFLOW_LEGACY_MODE;
  else
    return mb__engine_reject(c, "coordinate_transformation_mode '%s'", coord);
  int scales_at = c->opset < 11 ? 1 : 2;
  for (int i = 1; i < n->n_inputs; i++) {
    int v = n->inputs[i];
    const mb_tensor *k = constant_of(c->eg, v);
    if (v < 0 || (k && k->numel == 0))
      continue;
    if (!k)
      return mb__engine_reject(c, "input %d is not a constant", i);
    if (i != scales_at)
      continue;
    /* Given scales set the coordinate scale: it must be out / in. */
    if (k->numel != 4 || k->dtype != MB_DTYPE_FLOAT)
      return mb__engine_reject(c, "scales are not 4 floats");
    for (int d = 0; d < 4; d++) {
      double sc = mb__tensor_get_f64(k, d);
      if ((double)x->dims[d] * sc != (double)y->dims[d])
        return mb__engine_reject(
            c, "scale %g does not give a whole output size", sc);
    }
  }
  return 1;
}

static int check_resize(mb_engine_check *c) {
  uint32_t flags;
  return resize_flags(c, &flags);
}

/* ------------------------------------------------------------------------ */
/* Compile: the subgraph builder                                             */
/* ------------------------------------------------------------------------ */

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
  mb_error *err;
} build_ctx;

static mb_status xnn_fail(build_ctx *b, const char *call,
                          enum xnn_status status) {
  char label[160];
  return mb__error(b->err,
                   status == xnn_status_out_of_memory ? MB_STATUS_OUT_OF_MEMORY
                                                      : MB_STATUS_UNSUPPORTED,
                   "xnnpack: %s: %s returned %s",
                   mb__node_label(b->node, label, sizeof label), call,
                   xnn_status_name(status));
}

#define XNN_CALL(b, call)                                                      \
  do {                                                                         \
    enum xnn_status xs_ = (call);                                              \
    if (xs_ != xnn_status_success)                                             \
      return xnn_fail((b), #call, xs_);                                        \
  } while (0)

/* An owned, zeroed buffer of `nbytes` bytes (plus XNNPACK's over-read
 * margin) that lives as long as the segment. */
static void *static_alloc_bytes(build_ctx *b, size_t nbytes) {
  xnn_segment *s = b->seg;
  if (s->n_statics == s->cap_statics) {
    int cap = s->cap_statics ? 2 * s->cap_statics : 16;
    void **p = realloc(s->statics, (size_t)cap * sizeof *p);
    if (!p)
      return NULL;
    s->statics = p;
    s->cap_statics = cap;
  }
  void *buf = mb__aligned_alloc(nbytes + XNN_EXTRA_BYTES);
  if (!buf)
    return NULL;
  memset(buf, 0, nbytes + XNN_EXTRA_BYTES);
  s->statics[s->n_statics++] = buf;
  return buf;
}

/* static_alloc_bytes for `count` floats. */
static float *static_alloc(build_ctx *b, size_t count) {
  return static_alloc_bytes(b, count * sizeof(float));
}

static mb_status oom(build_ctx *b) {
  return mb__error(b->err, MB_STATUS_OUT_OF_MEMORY, "xnnpack: out of memory");
}

/* Defines a static fp32 value over `data` (owned by the segment). */
static mb_status define_static(build_ctx *b, size_t rank, const size_t *dims,
                               const float *data, uint32_t *id_out) {
  XNN_CALL(b,
           xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, rank, dims,
                                   data, XNN_INVALID_VALUE_ID, 0, id_out));
  return MB_STATUS_OK;
}

/* Defines an internal value of ONNX shape (rank, dims) in segment layout. */
static mb_status define_internal(build_ctx *b, int rank, const int64_t *dims,
                                 uint32_t *id_out) {
  size_t d[XNN_RANK_MAX];
  size_t r = segment_dims(rank, dims, d);
  XNN_CALL(b, xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, r, d,
                                      NULL, XNN_INVALID_VALUE_ID, 0, id_out));
  return MB_STATUS_OK;
}

/* The id of non-constant value v read by the current node: produced by an
 * earlier node, or a segment input (defined on first use). */
static mb_status value_id(build_ctx *b, int v, uint32_t *id_out) {
  if (b->ids[v] == XNN_INVALID_VALUE_ID && b->qids &&
      b->qids[v] != XNN_INVALID_VALUE_ID) {
    /* Written by an int8 op, read here in float: dequantise once. */
    const mb_shape_info *s = &b->eg->shapes[v];
    mb_status status = define_internal(b, s->rank, s->dims, &b->ids[v]);
    if (status)
      return status;
    XNN_CALL(b, xnn_define_convert(b->subgraph, b->qids[v], b->ids[v], 0));
  }
  if (b->ids[v] == XNN_INVALID_VALUE_ID) {
    int slot = b->input_slot[v];
    if (slot < 0) {
      char label[160];
      return mb__error(b->err, MB_STATUS_INTERNAL,
                       "xnnpack: %s: value '%s' is neither a segment input "
                       "nor produced in the segment",
                       mb__node_label(b->node, label, sizeof label),
                       b->eg->graph->values[v].name);
    }
    io_slot *io = &b->seg->inputs[slot];
    const mb_shape_info *s = &b->eg->shapes[v];
    size_t d[XNN_RANK_MAX];
    size_t r = segment_dims(s->rank, s->dims, d);
    io->id = b->next_external++;
    XNN_CALL(b, xnn_define_tensor_value(
                    b->subgraph, xnn_datatype_fp32, r, d, NULL, io->id,
                    XNN_VALUE_FLAG_EXTERNAL_INPUT, &b->ids[v]));
  }
  *id_out = b->ids[v];
  return MB_STATUS_OK;
}

/* Is value v read by a node of the segment? */
static bool read_in_segment(const build_ctx *b, int v) {
  const mb_segment_desc *d = b->seg_desc;
  for (int i = 0; i < d->n_nodes; i++) {
    const mb_node *n = &b->eg->graph->nodes[d->nodes[i]];
    for (int j = 0; j < n->n_inputs; j++)
      if (n->inputs[j] == v)
        return true;
  }
  return false;
}

/* The fp16 rewrite of XNNPACK git20220216 asserts that every external
 * value a node reads is an external input, so in fp16 a segment output
 * also read inside the segment stays internal and copy_outputs_fp16
 * copies it out. */
static bool copied_out(const build_ctx *b, int v) {
  return b->fp16 && read_in_segment(b, v);
}

/* Defines value v written by the current node: external when it is a
 * segment output. */
static mb_status output_id(build_ctx *b, int v, uint32_t *id_out) {
  const mb_shape_info *s = &b->eg->shapes[v];
  size_t d[XNN_RANK_MAX];
  size_t r = segment_dims(s->rank, s->dims, d);
  uint32_t external = XNN_INVALID_VALUE_ID, flags = 0;
  int slot = b->output_slot[v];
  if (slot >= 0 && !copied_out(b, v)) {
    external = b->seg->outputs[slot].id = b->next_external++;
    flags = XNN_VALUE_FLAG_EXTERNAL_OUTPUT;
  }
  XNN_CALL(b, xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, r, d,
                                      NULL, external, flags, &b->ids[v]));
  *id_out = b->ids[v];
  return MB_STATUS_OK;
}

/* Defines a copy of constant data of ONNX shape (rank, dims) as an operand
 * of an elementwise node whose output has rank out_rank: permuted to NHWC
 * when the output is rank 4 (after NumPy's leading-ones expansion). */
static mb_status define_operand_data(build_ctx *b, int rank,
                                     const int64_t *dims, const float *data,
                                     int out_rank, uint32_t *id_out) {
  int64_t numel = shape_numel(rank, dims);
  float *buf = static_alloc(b, (size_t)numel);
  size_t d[XNN_RANK_MAX];
  size_t r;
  if (!buf)
    return oom(b);
  if (is_nhwc(out_rank)) {
    int64_t e[4] = {1, 1, 1, 1};
    for (int i = 0; i < rank; i++)
      e[4 - rank + i] = dims[i];
    /* [N, C, H, W] -> [N, H, W, C] */
    int64_t hw = e[2] * e[3];
    for (int64_t n = 0; n < e[0]; n++)
      for (int64_t c = 0; c < e[1]; c++)
        for (int64_t p = 0; p < hw; p++)
          buf[(n * hw + p) * e[1] + c] = data[(n * e[1] + c) * hw + p];
    r = segment_dims(4, e, d);
  } else {
    memcpy(buf, data, (size_t)numel * sizeof(float));
    r = segment_dims(rank, dims, d);
  }
  return define_static(b, r, d, buf, id_out);
}

/* The id of input i of the current node as an elementwise operand. */
static mb_status operand_id(build_ctx *b, int i, int out_rank,
                            uint32_t *id_out) {
  int v = b->node->inputs[i];
  const mb_tensor *k = constant_of(b->eg, v);
  if (k)
    return define_operand_data(b, k->rank, k->dims, k->data, out_rank, id_out);
  return value_id(b, v, id_out);
}

/* A scalar constant operand ([1]). */
static mb_status scalar_id(build_ctx *b, float value, uint32_t *id_out) {
  float *buf = static_alloc(b, 1);
  size_t one = 1;
  if (!buf)
    return oom(b);
  buf[0] = value;
  return define_static(b, 1, &one, buf, id_out);
}

/* A check context for the node being lowered (its checks re-read the
 * parameters; they succeeded in supports_node). */
static mb_engine_check lower_check_ctx(build_ctx *b, char *reason,
                                       size_t size) {
  mb_engine_check c = {b->eg, b->node, b->opset, reason, size};
  return c;
}

static mb_status recheck_failed(build_ctx *b, const char *reason) {
  char label[160];
  return mb__error(b->err, MB_STATUS_UNSUPPORTED, "xnnpack: %s: %s",
                   mb__node_label(b->node, label, sizeof label), reason);
}

/* ---- INT8 ---- */

static bool node_is_folded(const mb_engine_graph *eg, const mb_node *n);

/* One int8 activation in XNNPACK's terms. qint8 is signed: a uint8 zero
 * point moves down by 128, which keeps q - zero_point and so the real
 * values (the uint8 quantisation shifted to signed). */
typedef struct qact {
  float scale;
  int32_t zero_point; /* in [-128, 127] */
} qact;

/* XNNPACK refuses scales that are not positive normal floats. */
static bool scale_ok(double s) {
  return s > 0.0 && s <= FLT_MAX && (float)s >= FLT_MIN;
}

/* Value v's ACTIVATION entry as a qact; false when there is none that
 * XNNPACK can take. */
static bool qact_of(const build_ctx *b, int v, qact *out) {
  const mb_quant_param *p =
      mb__quant_params_find(b->quant, b->eg->graph->values[v].name);
  if (!p || p->kind != MB_QUANT_KIND_ACTIVATION || p->channels != 1 ||
      !p->scales || !p->zero_points)
    return false;
  int32_t zp = p->zero_points[0];
  if (p->dtype == MB_DTYPE_UINT8)
    zp -= 128;
  else if (p->dtype != MB_DTYPE_INT8)
    return false;
  if (!scale_ok(p->scales[0]) || zp < -128 || zp > 127)
    return false;
  out->scale = p->scales[0];
  out->zero_point = zp;
  return true;
}

/* Is value v at hand in qint8 (an int8 op wrote it, or an int8 reader
 * quantised it already)? The ops that gain from int8 only when their
 * input is (pools, Add, data movement) go int8 then. */
static bool has_qint8(const build_ctx *b, int v) {
  return b->qids && b->qids[v] != XNN_INVALID_VALUE_ID;
}

/* The quantisation an int8 op reads value v with: that of the op that
 * wrote it when that op keeps its input's (MaxPool, Reshape: the QDQ form
 * gives their output the input's parameters), else v's entry. */
static bool qact_in(const build_ctx *b, int v, qact *out) {
  if (has_qint8(b, v) && b->qkeep[v]) {
    out->scale = b->qscale[v];
    out->zero_point = b->qzp[v];
    return true;
  }
  return qact_of(b, v, out);
}

/* The WEIGHT entry of constant v: under its own name or, through Identity
 * nodes, its source's (the static quantiser names it after the source). */
static const mb_quant_param *weight_entry(const build_ctx *b, int v) {
  const mb_graph *g = b->eg->graph;
  for (int depth = 0; v >= 0 && depth < 16; depth++) {
    const mb_quant_param *p =
        mb__quant_params_find(b->quant, g->values[v].name);
    if (p && p->kind == MB_QUANT_KIND_WEIGHT)
      return p;
    int producer = g->values[v].producer;
    if (producer < 0)
      return NULL;
    const mb_node *n = &g->nodes[producer];
    if (strcmp(n->op_type, "Identity") != 0 || n->domain[0] || n->n_inputs != 1)
      return NULL;
    v = n->inputs[0];
  }
  return NULL;
}

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

/* The weight scale of output channel c, as quantised (without alpha). */
static float plan_weight_scale(const int8_plan *p, int64_t c) {
  return p->weight->channels == 1 ? p->weight->scales[0] : p->weight->scales[c];
}

static bool node_in_segment(const build_ctx *b, int node) {
  for (int i = 0; i < b->seg_desc->n_nodes; i++)
    if (b->seg_desc->nodes[i] == node)
      return true;
  return false;
}

/* A Relu or Clip in this segment that is the only reader of value v,
 * which goes nowhere else (not a segment output): the int8 op clamps its
 * own output and writes the Relu's, as ORT's quantiser removes such a
 * Relu. Returns the node's graph index with its bounds, or -1. */
static int fusable_clamp(const build_ctx *b, int v, float *lo, float *hi) {
  const mb_graph *g = b->eg->graph;
  int reader = -1;
  if (b->output_slot[v] >= 0 || g->values[v].is_output)
    return -1;
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    for (int j = 0; j < n->n_inputs; j++) {
      if (n->inputs[j] != v)
        continue;
      if (reader >= 0 || j != 0)
        return -1;
      reader = i;
    }
  }
  if (reader < 0 || !node_in_segment(b, reader))
    return -1;
  const mb_node *r = &g->nodes[reader];
  mb_engine_check c = {b->eg, r, b->opset, NULL, 0};
  if (r->domain[0] || node_is_folded(b->eg, r) || !check_unary(&c))
    return -1;
  if (strcmp(r->op_type, "Relu") == 0) {
    *lo = 0.0f;
    *hi = INFINITY;
    return reader;
  }
  if (strcmp(r->op_type, "Clip") == 0 && clip_bounds(&c, lo, hi) && *lo < *hi)
    return reader;
  return -1;
}

/* A clamp bound in the output's int8 terms, as XNNPACK computes it. */
static int32_t quantized_bound(float bound, const qact *q) {
  return (int32_t)lrintf(
      fminf(fmaxf(bound / q->scale + (float)q->zero_point, -128.0f), 127.0f));
}

/* The output side of an int8 node: a sole Relu/Clip reader fused into it,
 * the entry of the value it then writes, and a clamp that leaves some
 * int8 values (XNNPACK refuses an empty one). */
static bool int8_output_get(build_ctx *b, int8_plan *p) {
  p->fused_node = -1;
  p->out_value = b->node->outputs[0];
  p->out_min = -INFINITY;
  p->out_max = INFINITY;
  int fused = fusable_clamp(b, p->out_value, &p->out_min, &p->out_max);
  if (fused >= 0) {
    p->fused_node = fused;
    p->out_value = b->eg->graph->nodes[fused].outputs[0];
  }
  return qact_of(b, p->out_value, &p->out) &&
         quantized_bound(p->out_min, &p->out) <
             quantized_bound(p->out_max, &p->out);
}

/* Can the current node run in int8 (see the top of the file)? Its weight
 * has `channels` output channels along stored axis `axis`. Everything
 * XNNPACK would refuse at define or create time (scales that are not
 * normal, a requantisation scale outside [2^-32, 256), an empty clamp) is
 * refused here, so that a refusal costs nothing but the node's speed. */
static bool int8_plan_get(build_ctx *b, int axis, int64_t channels, float alpha,
                          int8_plan *p) {
  const mb_node *n = b->node;
  memset(p, 0, sizeof *p);
  p->weight = weight_entry(b, n->inputs[1]);
  p->alpha = alpha;
  const mb_quant_param *w = p->weight;
  if (!w || !qact_in(b, n->inputs[0], &p->in) || !(alpha > 0.0f) ||
      w->dtype != MB_DTYPE_INT8 || !w->scales || w->channels < 1 ||
      (w->channels != 1 && (w->axis != axis || w->channels != channels)))
    return false;
  for (int64_t c = 0; w->zero_points && c < w->channels; c++)
    if (w->zero_points[c] != 0)
      return false;
  if (!int8_output_get(b, p))
    return false;
  for (int64_t c = 0; c < channels; c++) {
    double ws = (double)alpha * plan_weight_scale(p, c);
    double bias_scale = (double)p->in.scale * ws;
    double requant = bias_scale / p->out.scale;
    if (!scale_ok(plan_weight_scale(p, c)) || !scale_ok(ws) ||
        !scale_ok(bias_scale) || !(requant >= 0x1.0p-32) || !(requant < 256.0))
      return false;
  }
  return true;
}

static int8_t quantize_weight(float w, float scale) {
  float q = nearbyintf(w / scale);
  return (int8_t)(q != q ? 0 : q < -127.0f ? -127 : q > 127.0f ? 127 : q);
}

static int32_t quantize_bias(float bias, float scale) {
  double q = nearbyint((double)bias / scale);
  return (int32_t)(q != q              ? 0
                   : q < -2147483647.0 ? -2147483647.0
                   : q > 2147483647.0  ? 2147483647.0
                                       : q);
}

/* Records t, in dims (r, d) with quantisation q, as value v's qint8 id. */
static void qid_set(build_ctx *b, int v, uint32_t t, const qact *q, size_t r,
                    const size_t *d) {
  b->qids[v] = t;
  b->qscale[v] = q->scale;
  b->qzp[v] = q->zero_point;
  b->qrank[v] = (uint8_t)r;
  memcpy(b->qdims[v], d, r * sizeof *d);
  b->qkeep[v] = false;
}

/* The qint8 id of value v read by an int8 op with quantisation q, in
 * segment dims (r, d): the value an int8 producer wrote when its
 * quantisation is the same (no convert pair between them; a qint8 reshape
 * when its dims differ), else a quantising convert of the float value,
 * shared by the int8 ops that read v alike. */
static mb_status qinput_id(build_ctx *b, int v, const qact *q, size_t r,
                           const size_t *d, uint32_t *id_out) {
  uint32_t f, t;
  mb_status status;
  if (b->qids[v] != XNN_INVALID_VALUE_ID && b->qscale[v] == q->scale &&
      b->qzp[v] == q->zero_point) {
    if (b->qrank[v] == r && memcmp(b->qdims[v], d, r * sizeof *d) == 0) {
      *id_out = b->qids[v];
      return MB_STATUS_OK;
    }
    XNN_CALL(b, xnn_define_quantized_tensor_value(
                    b->subgraph, xnn_datatype_qint8, q->zero_point, q->scale, r,
                    d, NULL, XNN_INVALID_VALUE_ID, 0, &t));
    XNN_CALL(b, xnn_define_static_reshape(b->subgraph, r, d, b->qids[v], t, 0));
    *id_out = t;
    return MB_STATUS_OK;
  }
  if ((status = value_id(b, v, &f)))
    return status;
  XNN_CALL(b, xnn_define_quantized_tensor_value(
                  b->subgraph, xnn_datatype_qint8, q->zero_point, q->scale, r,
                  d, NULL, XNN_INVALID_VALUE_ID, 0, &t));
  XNN_CALL(b, xnn_define_convert(b->subgraph, f, t, 0));
  if (b->qids[v] == XNN_INVALID_VALUE_ID)
    qid_set(b, v, t, q, r, d);
  *id_out = t;
  return MB_STATUS_OK;
}

/* Defines the qint8 value v an int8 op writes, in segment dims (r, d). */
static mb_status qoutput_id(build_ctx *b, int v, const qact *q, size_t r,
                            const size_t *d, uint32_t *id_out) {
  uint32_t t;
  XNN_CALL(b, xnn_define_quantized_tensor_value(
                  b->subgraph, xnn_datatype_qint8, q->zero_point, q->scale, r,
                  d, NULL, XNN_INVALID_VALUE_ID, 0, &t));
  qid_set(b, v, t, q, r, d);
  *id_out = t;
  return MB_STATUS_OK;
}

/* qoutput_id for value v of an op that keeps its input's quantisation q,
 * in v's segment dims. */
static mb_status qkeep_output_id(build_ctx *b, int v, const qact *q,
                                 uint32_t *id_out) {
  const mb_shape_info *s = &b->eg->shapes[v];
  size_t d[XNN_RANK_MAX];
  size_t r = segment_dims(s->rank, s->dims, d);
  mb_status status = qoutput_id(b, v, q, r, d, id_out);
  b->qkeep[v] = true;
  return status;
}

/* The qint8 id of value v at hand (has_qint8) with its quantisation, for an
 * op that keeps it. */
static uint32_t qheld(const build_ctx *b, int v, qact *q) {
  q->scale = b->qscale[v];
  q->zero_point = b->qzp[v];
  return b->qids[v];
}

/* After the int8 op that wrote v: a segment output also gets its float
 * external value, through a dequantising convert (the subgraph runs its
 * nodes in the order they were defined, so this comes after the op). */
static mb_status qoutput_export(build_ctx *b, int v) {
  int slot = b->output_slot[v];
  if (slot < 0)
    return MB_STATUS_OK;
  const mb_shape_info *s = &b->eg->shapes[v];
  size_t d[XNN_RANK_MAX];
  size_t r = segment_dims(s->rank, s->dims, d);
  uint32_t ext = b->seg->outputs[slot].id = b->next_external++;
  XNN_CALL(b, xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, r, d,
                                      NULL, ext, XNN_VALUE_FLAG_EXTERNAL_OUTPUT,
                                      &b->ids[v]));
  XNN_CALL(b, xnn_define_convert(b->subgraph, b->qids[v], b->ids[v], 0));
  return MB_STATUS_OK;
}

/* The per-channel filter scales (alpha applied) and the int32 bias with
 * its scales (input scale x filter scale) of an int8 op with `channels`
 * outputs; bias_data: `channels` floats (already times beta), or NULL. */
static mb_status int8_bias(build_ctx *b, const int8_plan *p, int64_t channels,
                           const float *bias_data, float **fscale_out,
                           int32_t **bias_out, float **bscale_out) {
  float *fscale = static_alloc(b, (size_t)channels);
  float *bscale = static_alloc(b, (size_t)channels);
  int32_t *bq = static_alloc_bytes(b, (size_t)channels * sizeof(int32_t));
  if (!fscale || !bscale || !bq)
    return oom(b);
  for (int64_t c = 0; c < channels; c++) {
    fscale[c] = p->alpha * plan_weight_scale(p, c);
    bscale[c] = p->in.scale * fscale[c];
    bq[c] = bias_data ? quantize_bias(bias_data[c], bscale[c]) : 0;
  }
  *fscale_out = fscale;
  *bias_out = bq;
  *bscale_out = bscale;
  return MB_STATUS_OK;
}

/* Defines the int8 op's qcint8 filter [dims] (channel dimension
 * channel_dim) and qcint32 bias over data the segment owns. */
static mb_status int8_weights(build_ctx *b, const int8_t *filter,
                              const size_t *fdims, size_t channel_dim,
                              const float *fscale, const int32_t *bias,
                              const float *bscale, size_t channels,
                              uint32_t *f_id, uint32_t *b_id) {
  XNN_CALL(b, xnn_define_channelwise_quantized_tensor_value(
                  b->subgraph, xnn_datatype_qcint8, fscale, 4, channel_dim,
                  fdims, filter, XNN_INVALID_VALUE_ID, 0, f_id));
  XNN_CALL(b, xnn_define_channelwise_quantized_tensor_value(
                  b->subgraph, xnn_datatype_qcint32, bscale, 1, 0, &channels,
                  bias, XNN_INVALID_VALUE_ID, 0, b_id));
  return MB_STATUS_OK;
}

/* The end of an int8 op: its fused Relu/Clip becomes nothing, and a
 * segment output gets its float copy. */
static mb_status int8_finish(build_ctx *b, const int8_plan *p) {
  if (p->fused_node >= 0)
    b->fused[p->fused_node] = true;
  return qoutput_export(b, p->out_value);
}

/* Conv with a qcint8 filter (depthwise, grouped or dense). */
static mb_status lower_conv_int8(build_ctx *b, const conv_params *p,
                                 const int8_plan *q) {
  const mb_node *n = b->node;
  const mb_tensor *w = constant_of(b->eg, n->inputs[1]);
  const mb_tensor *bias = constant_of(b->eg, node_input(n, 2));
  const float *wd = w->data;
  int64_t co = p->c_out, cig = p->c_in / p->groups;
  int64_t kh = p->w.kernel[0], kw = p->w.kernel[1], ks = kh * kw;
  int8_t *filter = static_alloc_bytes(b, (size_t)(co * cig * ks));
  float *fscale, *bscale;
  int32_t *bq;
  uint32_t x_id, f_id, b_id, y_id;
  mb_status status;
  if (!filter)
    return oom(b);
  if ((status = int8_bias(b, q, co, bias ? bias->data : NULL, &fscale, &bq,
                          &bscale)))
    return status;
  size_t fdims[4];
  if (p->depthwise) {
    /* [C*M, 1, kh, kw] -> [1, kh, kw, C*M] */
    for (int64_t o = 0; o < co; o++)
      for (int64_t k = 0; k < ks; k++)
        filter[k * co + o] = quantize_weight(wd[o * ks + k], fscale[o]);
    fdims[0] = 1;
    fdims[1] = (size_t)kh;
    fdims[2] = (size_t)kw;
    fdims[3] = (size_t)co;
  } else {
    /* OIHW -> OHWI */
    for (int64_t o = 0; o < co; o++)
      for (int64_t i = 0; i < cig; i++)
        for (int64_t k = 0; k < ks; k++)
          filter[(o * ks + k) * cig + i] =
              quantize_weight(wd[(o * cig + i) * ks + k], fscale[o]);
    fdims[0] = (size_t)co;
    fdims[1] = (size_t)kh;
    fdims[2] = (size_t)kw;
    fdims[3] = (size_t)cig;
  }
  const mb_shape_info *xs = &b->eg->shapes[n->inputs[0]];
  const mb_shape_info *ys = &b->eg->shapes[q->out_value];
  size_t xd[4], yd[4];
  segment_dims(4, xs->dims, xd);
  segment_dims(4, ys->dims, yd);
  if ((status = qinput_id(b, n->inputs[0], &q->in, 4, xd, &x_id)) ||
      (status = int8_weights(b, filter, fdims, p->depthwise ? 3 : 0, fscale, bq,
                             bscale, (size_t)co, &f_id, &b_id)) ||
      (status = qoutput_id(b, q->out_value, &q->out, 4, yd, &y_id)))
    return status;
  const window2d *g = &p->w;
  if (p->depthwise) {
    XNN_CALL(b, xnn_define_depthwise_convolution_2d(
                    b->subgraph, (uint32_t)g->pad_begin[0],
                    (uint32_t)g->pad_end[1], (uint32_t)g->pad_end[0],
                    (uint32_t)g->pad_begin[1], (uint32_t)kh, (uint32_t)kw,
                    (uint32_t)g->stride[0], (uint32_t)g->stride[1],
                    (uint32_t)g->dilation[0], (uint32_t)g->dilation[1],
                    (uint32_t)(co / p->c_in), (size_t)p->c_in, q->out_min,
                    q->out_max, x_id, f_id, b_id, y_id, 0));
  } else {
    XNN_CALL(b, xnn_define_convolution_2d(
                    b->subgraph, (uint32_t)g->pad_begin[0],
                    (uint32_t)g->pad_end[1], (uint32_t)g->pad_end[0],
                    (uint32_t)g->pad_begin[1], (uint32_t)kh, (uint32_t)kw,
                    (uint32_t)g->stride[0], (uint32_t)g->stride[1],
                    (uint32_t)g->dilation[0], (uint32_t)g->dilation[1],
                    (uint32_t)p->groups, (size_t)cig, (size_t)(co / p->groups),
                    q->out_min, q->out_max, x_id, f_id, b_id, y_id, 0));
  }
  return int8_finish(b, q);
}

/* Gemm / MatMul: XNNPACK of this date has no per-channel int8 fully
 * connected node (it wants one filter scale), so the product is a 1x1
 * convolution over [M, 1, 1, K], which has; its converts reshape on the
 * way in and out. */
static mb_status lower_fc_int8(build_ctx *b, const fc_params *p,
                               const int8_plan *q) {
  const mb_node *n = b->node;
  const mb_tensor *w = constant_of(b->eg, n->inputs[1]);
  const float *wd = w->data;
  int8_t *filter = static_alloc_bytes(b, (size_t)(p->n * p->k));
  float *bias = NULL, *fscale, *bscale;
  int32_t *bq;
  uint32_t x_id, f_id, b_id, y_id;
  mb_status status;
  if (!filter)
    return oom(b);
  if (p->bias_kind == 1) {
    const mb_tensor *cten = constant_of(b->eg, n->inputs[2]);
    const float *cd = cten->data;
    if (!(bias = calloc((size_t)p->n, sizeof *bias)))
      return oom(b);
    for (int64_t o = 0; o < p->n; o++)
      bias[o] = p->beta * cd[cten->numel == 1 ? 0 : o];
  }
  status = int8_bias(b, q, p->n, bias, &fscale, &bq, &bscale);
  free(bias);
  if (status)
    return status;
  /* [N, 1, 1, K] (output features first), quantised without alpha. */
  for (int64_t o = 0; o < p->n; o++) {
    float s = plan_weight_scale(q, o);
    for (int64_t i = 0; i < p->k; i++)
      filter[o * p->k + i] =
          quantize_weight(p->trans_b ? wd[o * p->k + i] : wd[i * p->n + o], s);
  }
  const mb_shape_info *xs = &b->eg->shapes[n->inputs[0]];
  size_t rows = (size_t)(shape_numel(xs->rank, xs->dims) / p->k);
  size_t xd[4] = {rows, 1, 1, (size_t)p->k}, yd[4] = {rows, 1, 1, (size_t)p->n};
  size_t fdims[4] = {(size_t)p->n, 1, 1, (size_t)p->k};
  if ((status = qinput_id(b, n->inputs[0], &q->in, 4, xd, &x_id)) ||
      (status = int8_weights(b, filter, fdims, 0, fscale, bq, bscale,
                             (size_t)p->n, &f_id, &b_id)) ||
      (status = qoutput_id(b, q->out_value, &q->out, 4, yd, &y_id)))
    return status;
  XNN_CALL(b,
           xnn_define_convolution_2d(b->subgraph, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1,
                                     1, (size_t)p->k, (size_t)p->n, q->out_min,
                                     q->out_max, x_id, f_id, b_id, y_id, 0));
  return int8_finish(b, q);
}

/* ---- lowerings ---- */

static mb_status lower_conv(build_ctx *b) {
  char reason[256];
  mb_engine_check c = lower_check_ctx(b, reason, sizeof reason);
  conv_params p;
  int8_plan q;
  if (!conv_params_get(&c, &p))
    return recheck_failed(b, reason);
  if (b->quant && int8_plan_get(b, 0, p.c_out, 1.0f, &q))
    return lower_conv_int8(b, &p, &q);
  const mb_node *n = b->node;
  const mb_tensor *w = constant_of(b->eg, n->inputs[1]);
  const mb_tensor *bias = constant_of(b->eg, node_input(n, 2));
  const float *wd = w->data;
  int64_t co = p.c_out, cig = p.c_in / p.groups;
  int64_t kh = p.w.kernel[0], kw = p.w.kernel[1], ks = kh * kw;
  float *filter = static_alloc(b, (size_t)(co * cig * ks));
  float *bd = static_alloc(b, (size_t)co);
  uint32_t x_id, f_id, b_id, y_id;
  mb_status status;
  if (!filter || !bd)
    return oom(b);
  if (bias)
    memcpy(bd, bias->data, (size_t)co * sizeof(float));
  size_t fdims[4];
  if (p.depthwise) {
    /* [C*M, 1, kh, kw] -> [1, kh, kw, C*M] */
    for (int64_t o = 0; o < co; o++)
      for (int64_t k = 0; k < ks; k++)
        filter[k * co + o] = wd[o * ks + k];
    fdims[0] = 1;
    fdims[1] = (size_t)kh;
    fdims[2] = (size_t)kw;
    fdims[3] = (size_t)co;
  } else {
    /* OIHW -> OHWI */
    for (int64_t o = 0; o < co; o++)
      for (int64_t i = 0; i < cig; i++)
        for (int64_t k = 0; k < ks; k++)
          filter[(o * ks + k) * cig + i] = wd[(o * cig + i) * ks + k];
    fdims[0] = (size_t)co;
    fdims[1] = (size_t)kh;
    fdims[2] = (size_t)kw;
    fdims[3] = (size_t)cig;
  }
  size_t bdims[1] = {(size_t)co};
  if ((status = value_id(b, n->inputs[0], &x_id)) ||
      (status = define_static(b, 4, fdims, filter, &f_id)) ||
      (status = define_static(b, 1, bdims, bd, &b_id)) ||
      (status = output_id(b, n->outputs[0], &y_id)))
    return status;
  const window2d *g = &p.w;
  if (p.depthwise) {
    XNN_CALL(b, xnn_define_depthwise_convolution_2d(
                    b->subgraph, (uint32_t)g->pad_begin[0],
                    (uint32_t)g->pad_end[1], (uint32_t)g->pad_end[0],
                    (uint32_t)g->pad_begin[1], (uint32_t)kh, (uint32_t)kw,
                    (uint32_t)g->stride[0], (uint32_t)g->stride[1],
                    (uint32_t)g->dilation[0], (uint32_t)g->dilation[1],
                    (uint32_t)(co / p.c_in), (size_t)p.c_in, -INFINITY,
                    INFINITY, x_id, f_id, b_id, y_id, 0));
  } else {
    XNN_CALL(b, xnn_define_convolution_2d(
                    b->subgraph, (uint32_t)g->pad_begin[0],
                    (uint32_t)g->pad_end[1], (uint32_t)g->pad_end[0],
                    (uint32_t)g->pad_begin[1], (uint32_t)kh, (uint32_t)kw,
                    (uint32_t)g->stride[0], (uint32_t)g->stride[1],
                    (uint32_t)g->dilation[0], (uint32_t)g->dilation[1],
                    (uint32_t)p.groups, (size_t)cig, (size_t)(co / p.groups),
                    -INFINITY, INFINITY, x_id, f_id, b_id, y_id, 0));
  }
  return MB_STATUS_OK;
}

/* y = x * W^T + bias over the last dim of x. In fp16 the rewrite of this
 * snapshot refuses fully connected nodes but takes convolutions, so there
 * it is the same product as a 1x1 convolution over [M, 1, 1, K] (W is
 * then [N, 1, 1, K]), between two reshapes. */
static mb_status define_fc(build_ctx *b, const fc_params *p, uint32_t x,
                           uint32_t w, uint32_t bias, uint32_t y) {
  if (!b->fp16) {
    XNN_CALL(b, xnn_define_fully_connected(b->subgraph, -INFINITY, INFINITY, x,
                                           w, bias, y, 0));
    return MB_STATUS_OK;
  }
  const mb_shape_info *xs = &b->eg->shapes[b->node->inputs[0]];
  size_t rows = (size_t)(shape_numel(xs->rank, xs->dims) / p->k);
  size_t in4[4] = {rows, 1, 1, (size_t)p->k};
  size_t out4[4] = {rows, 1, 1, (size_t)p->n};
  size_t yd[XNN_RANK_MAX];
  const mb_shape_info *ys = &b->eg->shapes[b->node->outputs[0]];
  size_t yr = segment_dims(ys->rank, ys->dims, yd);
  uint32_t t_in, t_out;
  XNN_CALL(b, xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, 4, in4,
                                      NULL, XNN_INVALID_VALUE_ID, 0, &t_in));
  XNN_CALL(b, xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, 4, out4,
                                      NULL, XNN_INVALID_VALUE_ID, 0, &t_out));
  XNN_CALL(b, xnn_define_static_reshape(b->subgraph, 4, in4, x, t_in, 0));
  XNN_CALL(b, xnn_define_convolution_2d(
                  b->subgraph, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, (size_t)p->k,
                  (size_t)p->n, -INFINITY, INFINITY, t_in, w, bias, t_out, 0));
  XNN_CALL(b, xnn_define_static_reshape(b->subgraph, yr, yd, t_out, y, 0));
  return MB_STATUS_OK;
}

static mb_status lower_fc(build_ctx *b) {
  char reason[256];
  mb_engine_check c = lower_check_ctx(b, reason, sizeof reason);
  fc_params p;
  int8_plan q;
  if (!fc_params_get(&c, &p))
    return recheck_failed(b, reason);
  /* The weight's output channels: axis 0 of [N, K] (transB), else 1. */
  if (b->quant && p.bias_kind != 2 &&
      int8_plan_get(b, p.trans_b ? 0 : 1, p.n, p.alpha, &q))
    return lower_fc_int8(b, &p, &q);
  const mb_node *n = b->node;
  const mb_tensor *w = constant_of(b->eg, n->inputs[1]);
  const float *wd = w->data;
  float *filter = static_alloc(b, (size_t)(p.n * p.k));
  float *bd = static_alloc(b, (size_t)p.n);
  uint32_t x_id, f_id, b_id, y_id;
  mb_status status;
  if (!filter || !bd)
    return oom(b);
  /* XNNPACK wants [N, K] (output features first). */
  for (int64_t o = 0; o < p.n; o++)
    for (int64_t i = 0; i < p.k; i++)
      filter[o * p.k + i] =
          p.alpha * (p.trans_b ? wd[o * p.k + i] : wd[i * p.n + o]);
  const mb_tensor *cten = p.bias_kind ? constant_of(b->eg, n->inputs[2]) : NULL;
  if (p.bias_kind == 1) {
    const float *cd = cten->data;
    for (int64_t o = 0; o < p.n; o++)
      bd[o] = p.beta * cd[cten->numel == 1 ? 0 : o];
  }
  /* [N, K], or [N, 1, 1, K] for the fp16 convolution. */
  size_t fdims[4] = {(size_t)p.n, 1, 1, (size_t)p.k}, bdims[1] = {(size_t)p.n};
  size_t fc_dims[2] = {(size_t)p.n, (size_t)p.k};
  if ((status = value_id(b, n->inputs[0], &x_id)) ||
      (status = define_static(b, b->fp16 ? 4 : 2, b->fp16 ? fdims : fc_dims,
                              filter, &f_id)) ||
      (status = define_static(b, 1, bdims, bd, &b_id)))
    return status;
  int y = n->outputs[0];
  const mb_shape_info *ys = &b->eg->shapes[y];
  if (p.bias_kind != 2) {
    if ((status = output_id(b, y, &y_id)))
      return status;
    return define_fc(b, &p, x_id, f_id, b_id, y_id);
  }
  /* C that varies along M: a fully connected layer, then Add beta * C. */
  uint32_t t_id, c_id;
  float *cd = static_alloc(b, (size_t)cten->numel);
  if (!cd)
    return oom(b);
  for (int64_t i = 0; i < cten->numel; i++)
    cd[i] = p.beta * ((const float *)cten->data)[i];
  size_t cdims[XNN_RANK_MAX];
  size_t cr = segment_dims(cten->rank, cten->dims, cdims);
  if ((status = define_internal(b, ys->rank, ys->dims, &t_id)) ||
      (status = define_static(b, cr, cdims, cd, &c_id)) ||
      (status = output_id(b, y, &y_id)))
    return status;
  if ((status = define_fc(b, &p, x_id, f_id, b_id, t_id)))
    return status;
  XNN_CALL(b, xnn_define_add2(b->subgraph, -INFINITY, INFINITY, t_id, c_id,
                              y_id, 0));
  return MB_STATUS_OK;
}

/* Table of elementwise binary nodes. */
typedef enum binary_kind {
  BINARY_ADD,
  BINARY_SUB,
  BINARY_MUL,
  BINARY_DIV,
  BINARY_MAX,
  BINARY_MIN,
} binary_kind;

static mb_status define_binary(build_ctx *b, binary_kind kind, uint32_t a,
                               uint32_t c, uint32_t y) {
  switch (kind) {
  case BINARY_ADD:
    XNN_CALL(b, xnn_define_add2(b->subgraph, -INFINITY, INFINITY, a, c, y, 0));
    break;
  case BINARY_SUB:
    XNN_CALL(b,
             xnn_define_subtract(b->subgraph, -INFINITY, INFINITY, a, c, y, 0));
    break;
  case BINARY_MUL:
    XNN_CALL(
        b, xnn_define_multiply2(b->subgraph, -INFINITY, INFINITY, a, c, y, 0));
    break;
  case BINARY_DIV:
    XNN_CALL(b,
             xnn_define_divide(b->subgraph, -INFINITY, INFINITY, a, c, y, 0));
    break;
  case BINARY_MAX:
    XNN_CALL(b, xnn_define_maximum2(b->subgraph, a, c, y, 0));
    break;
  case BINARY_MIN:
    XNN_CALL(b, xnn_define_minimum2(b->subgraph, a, c, y, 0));
    break;
  }
  return MB_STATUS_OK;
}

static const struct {
  const char *op_type;
  binary_kind kind;
} binary_ops[] = {
    {"Add", BINARY_ADD}, {"Sub", BINARY_SUB}, {"Mul", BINARY_MUL},
    {"Div", BINARY_DIV}, {"Max", BINARY_MAX}, {"Min", BINARY_MIN},
};

/* Can the current Add or Mul run in int8? Both inputs are activations
 * with entries, one of them at hand in qint8 (else converting both costs
 * more than the float op), and the output has an entry (a sole Relu/Clip
 * reader is fused, as for Conv). XNNPACK's qs8 Add wants each input's
 * scale over the output's in [2^-10, 2^8), its Mul the product of the
 * input scales over the output's in [2^-16, 2^8), computed in float as
 * XNNPACK does; outside, the node stays float. */
static bool binary_int8_plan_get(build_ctx *b, binary_kind kind, int8_plan *p) {
  const mb_node *n = b->node;
  bool held = false;
  memset(p, 0, sizeof *p);
  for (int i = 0; i < 2; i++) {
    if (constant_of(b->eg, n->inputs[i]))
      return false;
    held |= has_qint8(b, n->inputs[i]);
  }
  if (!held || !qact_in(b, n->inputs[0], &p->in) ||
      !qact_in(b, n->inputs[1], &p->in2) || !int8_output_get(b, p))
    return false;
  const float out_scale = p->out.scale;
  if (kind == BINARY_ADD) {
    const float r1 = p->in.scale / out_scale, r2 = p->in2.scale / out_scale;
    return r1 >= 0x1.0p-10f && r1 < 0x1.0p+8f && r2 >= 0x1.0p-10f &&
           r2 < 0x1.0p+8f;
  }
  const float product = p->in.scale * p->in2.scale;
  const float r = product / out_scale;
  return scale_ok(product) && r >= 0x1.0p-16f && r < 0x1.0p+8f;
}

/* qs8 Add or Mul, broadcasting as the float node does. */
static mb_status lower_binary_int8(build_ctx *b, binary_kind kind,
                                   const int8_plan *q) {
  const mb_node *n = b->node;
  size_t d[XNN_RANK_MAX], r;
  uint32_t x[2], y;
  mb_status status;
  for (int i = 0; i < 2; i++) {
    const mb_shape_info *s = &b->eg->shapes[n->inputs[i]];
    r = segment_dims(s->rank, s->dims, d);
    if ((status =
             qinput_id(b, n->inputs[i], i ? &q->in2 : &q->in, r, d, &x[i])))
      return status;
  }
  const mb_shape_info *ys = &b->eg->shapes[q->out_value];
  r = segment_dims(ys->rank, ys->dims, d);
  if ((status = qoutput_id(b, q->out_value, &q->out, r, d, &y)))
    return status;
  if (kind == BINARY_ADD)
    XNN_CALL(b, xnn_define_add2(b->subgraph, q->out_min, q->out_max, x[0], x[1],
                                y, 0));
  else
    XNN_CALL(b, xnn_define_multiply2(b->subgraph, q->out_min, q->out_max, x[0],
                                     x[1], y, 0));
  return int8_finish(b, q);
}

static mb_status lower_binary(build_ctx *b) {
  const mb_node *n = b->node;
  binary_kind kind = BINARY_ADD;
  for (size_t i = 0; i < MB_ARRAY_COUNT(binary_ops); i++)
    if (strcmp(n->op_type, binary_ops[i].op_type) == 0)
      kind = binary_ops[i].kind;
  int8_plan q;
  if (b->quant && (kind == BINARY_ADD || kind == BINARY_MUL) &&
      binary_int8_plan_get(b, kind, &q))
    return lower_binary_int8(b, kind, &q);
  int out_rank = b->eg->shapes[n->outputs[0]].rank;
  uint32_t a, c, y;
  mb_status status;
  if ((status = operand_id(b, 0, out_rank, &a)) ||
      (status = operand_id(b, 1, out_rank, &c)) ||
      (status = output_id(b, n->outputs[0], &y)))
    return status;
  return define_binary(b, kind, a, c, y);
}

/* Unary nodes without parameters, one XNNPACK define each. */
typedef enum xnn_status (*xnn_define_unary_fn)(xnn_subgraph_t, uint32_t,
                                               uint32_t, uint32_t);
static const struct {
  const char *op_type;
  xnn_define_unary_fn define;
  const char *call;
} unary_ops[] = {
    {"Sigmoid", xnn_define_sigmoid, "xnn_define_sigmoid"},
    {"HardSwish", xnn_define_hardswish, "xnn_define_hardswish"},
    {"Abs", xnn_define_abs, "xnn_define_abs"},
    {"Neg", xnn_define_negate, "xnn_define_negate"},
    {"Floor", xnn_define_floor, "xnn_define_floor"},
    {"Ceil", xnn_define_ceiling, "xnn_define_ceiling"},
    {"Sqrt", xnn_define_square_root, "xnn_define_square_root"},
};

static mb_status lower_unary(build_ctx *b) {
  const mb_node *n = b->node;
  uint32_t x, y;
  mb_status status;
  if ((status = value_id(b, n->inputs[0], &x)) ||
      (status = output_id(b, n->outputs[0], &y)))
    return status;
  for (size_t i = 0; i < MB_ARRAY_COUNT(unary_ops); i++) {
    if (strcmp(n->op_type, unary_ops[i].op_type) == 0) {
      enum xnn_status xs = unary_ops[i].define(b->subgraph, x, y, 0);
      if (xs != xnn_status_success)
        return xnn_fail(b, unary_ops[i].call, xs);
      return MB_STATUS_OK;
    }
  }
  return recheck_failed(b, "no unary lowering");
}

static mb_status define_clamp(build_ctx *b, float lo, float hi) {
  const mb_node *n = b->node;
  uint32_t x, y;
  mb_status status;
  if ((status = value_id(b, n->inputs[0], &x)) ||
      (status = output_id(b, n->outputs[0], &y)))
    return status;
  XNN_CALL(b, xnn_define_clamp(b->subgraph, lo, hi, x, y, 0));
  return MB_STATUS_OK;
}

/* XNNPACK of this date has no ReLU node: a clamp to [0, inf), which its
 * subgraph rewriter fuses into a preceding Conv or fully connected node. */
static mb_status lower_relu(build_ctx *b) {
  return define_clamp(b, 0.0f, INFINITY);
}

static mb_status lower_clip(build_ctx *b) {
  char reason[256];
  mb_engine_check c = lower_check_ctx(b, reason, sizeof reason);
  float lo, hi;
  if (!clip_bounds(&c, &lo, &hi))
    return recheck_failed(b, reason);
  return define_clamp(b, lo, hi);
}

static mb_status lower_leaky_relu(build_ctx *b) {
  const mb_node *n = b->node;
  uint32_t x, y;
  mb_status status;
  if ((status = value_id(b, n->inputs[0], &x)) ||
      (status = output_id(b, n->outputs[0], &y)))
    return status;
  XNN_CALL(b, xnn_define_leaky_relu(b->subgraph,
                                    mb__node_attr_float(n, "alpha", 0.01f), x,
                                    y, 0));
  return MB_STATUS_OK;
}

static mb_status lower_elu(build_ctx *b) {
  const mb_node *n = b->node;
  uint32_t x, y;
  mb_status status;
  if ((status = value_id(b, n->inputs[0], &x)) ||
      (status = output_id(b, n->outputs[0], &y)))
    return status;
  XNN_CALL(b, xnn_define_elu(b->subgraph, mb__node_attr_float(n, "alpha", 1.0f),
                             x, y, 0));
  return MB_STATUS_OK;
}

/* HardSigmoid = clamp(alpha * x + beta, 0, 1): three nodes. */
static mb_status lower_hardsigmoid(build_ctx *b) {
  const mb_node *n = b->node;
  const mb_shape_info *s = &b->eg->shapes[n->outputs[0]];
  uint32_t x, a, c, t1, t2, y;
  mb_status status;
  if ((status = value_id(b, n->inputs[0], &x)) ||
      (status = scalar_id(b, mb__node_attr_float(n, "alpha", 0.2f), &a)) ||
      (status = scalar_id(b, mb__node_attr_float(n, "beta", 0.5f), &c)) ||
      (status = define_internal(b, s->rank, s->dims, &t1)) ||
      (status = define_internal(b, s->rank, s->dims, &t2)) ||
      (status = output_id(b, n->outputs[0], &y)))
    return status;
  XNN_CALL(b,
           xnn_define_multiply2(b->subgraph, -INFINITY, INFINITY, x, a, t1, 0));
  XNN_CALL(b, xnn_define_add2(b->subgraph, -INFINITY, INFINITY, t1, c, t2, 0));
  XNN_CALL(b, xnn_define_clamp(b->subgraph, 0.0f, 1.0f, t2, y, 0));
  return MB_STATUS_OK;
}

static mb_status lower_prelu(build_ctx *b) {
  const mb_node *n = b->node;
  const mb_shape_info *xs = &b->eg->shapes[n->inputs[0]];
  const mb_tensor *slope = constant_of(b->eg, n->inputs[1]);
  int64_t channels = is_nhwc(xs->rank) ? xs->dims[1] : xs->dims[xs->rank - 1];
  float *sd = static_alloc(b, (size_t)channels);
  uint32_t x, s, y;
  mb_status status;
  if (!sd)
    return oom(b);
  for (int64_t i = 0; i < channels; i++)
    sd[i] = ((const float *)slope->data)[slope->numel == 1 ? 0 : i];
  size_t dims[1] = {(size_t)channels};
  if ((status = value_id(b, n->inputs[0], &x)) ||
      (status = define_static(b, 1, dims, sd, &s)) ||
      (status = output_id(b, n->outputs[0], &y)))
    return status;
  XNN_CALL(b, xnn_define_prelu(b->subgraph, x, s, y, 0));
  return MB_STATUS_OK;
}

/* A copy: XNNPACK's static reshape to the output's segment dims. INT8:
 * of the qint8 input when it is at hand and the output has an entry (the
 * output keeps the input's quantisation, as in the QDQ form). */
static mb_status lower_reshape(build_ctx *b) {
  const mb_node *n = b->node;
  const mb_shape_info *ys = &b->eg->shapes[n->outputs[0]];
  size_t d[XNN_RANK_MAX];
  size_t r = segment_dims(ys->rank, ys->dims, d);
  uint32_t x, y;
  qact q;
  mb_status status;
  if (b->quant && has_qint8(b, n->inputs[0]) && qact_of(b, n->outputs[0], &q)) {
    x = qheld(b, n->inputs[0], &q);
    if ((status = qkeep_output_id(b, n->outputs[0], &q, &y)))
      return status;
    XNN_CALL(b, xnn_define_static_reshape(b->subgraph, r, d, x, y, 0));
    return qoutput_export(b, n->outputs[0]);
  }
  if ((status = value_id(b, n->inputs[0], &x)) ||
      (status = output_id(b, n->outputs[0], &y)))
    return status;
  XNN_CALL(b, xnn_define_static_reshape(b->subgraph, r, d, x, y, 0));
  return MB_STATUS_OK;
}

static mb_status lower_pool(build_ctx *b) {
  char reason[256];
  mb_engine_check c = lower_check_ctx(b, reason, sizeof reason);
  const mb_node *n = b->node;
  bool average = strcmp(n->op_type, "AveragePool") == 0;
  pool_params p;
  if (!pool_params_get(&c, &p, average))
    return recheck_failed(b, reason);
  if (p.identity)
    return lower_reshape(b);
  const window2d *g = &p.w;
  uint32_t x, y;
  mb_status status;
  uint32_t top = (uint32_t)g->pad_begin[0], left = (uint32_t)g->pad_begin[1];
  uint32_t bottom = (uint32_t)(g->pad_end[0] + g->pad_extra[0]);
  uint32_t right = (uint32_t)(g->pad_end[1] + g->pad_extra[1]);
  qact q;
  if (!average && b->quant && has_qint8(b, n->inputs[0]) &&
      qact_of(b, n->outputs[0], &q)) {
    /* qs8 max pooling: the output keeps the input's quantisation (XNNPACK
     * wants them equal, and so does the QDQ form). */
    const mb_shape_info *xs = &b->eg->shapes[n->inputs[0]];
    size_t xd[4];
    segment_dims(4, xs->dims, xd);
    qheld(b, n->inputs[0], &q);
    if ((status = qinput_id(b, n->inputs[0], &q, 4, xd, &x)) ||
        (status = qkeep_output_id(b, n->outputs[0], &q, &y)))
      return status;
    XNN_CALL(b,
             xnn_define_max_pooling_2d(
                 b->subgraph, top, right, bottom, left, (uint32_t)g->kernel[0],
                 (uint32_t)g->kernel[1], (uint32_t)g->stride[0],
                 (uint32_t)g->stride[1], (uint32_t)g->dilation[0],
                 (uint32_t)g->dilation[1], -INFINITY, INFINITY, x, y, 0));
    return qoutput_export(b, n->outputs[0]);
  }
  if ((status = value_id(b, n->inputs[0], &x)))
    return status;
  if (p.count_include_pad &&
      (g->pad_begin[0] || g->pad_begin[1] || g->pad_end[0] || g->pad_end[1])) {
    /* XNNPACK's average pooling leaves padding out of the divisor: pad with
     * zeros explicitly, then pool over what remains (only ceil_mode's extra
     * windows stay implicit, which ONNX also leaves out). */
    const mb_shape_info *xs = &b->eg->shapes[n->inputs[0]];
    int64_t pd[4] = {xs->dims[0], xs->dims[1],
                     xs->dims[2] + g->pad_begin[0] + g->pad_end[0],
                     xs->dims[3] + g->pad_begin[1] + g->pad_end[1]};
    size_t pre[4] = {0, (size_t)g->pad_begin[0], (size_t)g->pad_begin[1], 0};
    size_t post[4] = {0, (size_t)g->pad_end[0], (size_t)g->pad_end[1], 0};
    uint32_t t;
    if ((status = define_internal(b, 4, pd, &t)))
      return status;
    XNN_CALL(b, xnn_define_static_constant_pad(b->subgraph, pre, post, 0.0f, x,
                                               t, 0));
    x = t;
    top = left = 0;
    bottom = (uint32_t)g->pad_extra[0];
    right = (uint32_t)g->pad_extra[1];
  }
  if ((status = output_id(b, n->outputs[0], &y)))
    return status;
  if (average) {
    XNN_CALL(b,
             xnn_define_average_pooling_2d(
                 b->subgraph, top, right, bottom, left, (uint32_t)g->kernel[0],
                 (uint32_t)g->kernel[1], (uint32_t)g->stride[0],
                 (uint32_t)g->stride[1], -INFINITY, INFINITY, x, y, 0));
  } else {
    XNN_CALL(b,
             xnn_define_max_pooling_2d(
                 b->subgraph, top, right, bottom, left, (uint32_t)g->kernel[0],
                 (uint32_t)g->kernel[1], (uint32_t)g->stride[0],
                 (uint32_t)g->stride[1], (uint32_t)g->dilation[0],
                 (uint32_t)g->dilation[1], -INFINITY, INFINITY, x, y, 0));
  }
  return MB_STATUS_OK;
}

/* qs8 global average pooling, when the input is at hand in qint8 and
 * the output has an entry; XNNPACK wants the input scale over the
 * output's in [2^-8, 2^8). */
static bool global_pool_int8(build_ctx *b, qact *in, qact *out) {
  const mb_node *n = b->node;
  if (!b->quant || strcmp(n->op_type, "GlobalAveragePool") != 0 ||
      !has_qint8(b, n->inputs[0]) || !qact_in(b, n->inputs[0], in) ||
      !qact_of(b, n->outputs[0], out))
    return false;
  const float r = in->scale / out->scale;
  return r >= 0x1.0p-8f && r < 0x1.0p+8f;
}

static mb_status lower_global_pool(build_ctx *b) {
  const mb_node *n = b->node;
  const mb_shape_info *xs = &b->eg->shapes[n->inputs[0]];
  uint32_t x, y;
  mb_status status;
  qact qi, qo;
  if (global_pool_int8(b, &qi, &qo)) {
    size_t xd[4], yd[4];
    segment_dims(4, xs->dims, xd);
    segment_dims(4, b->eg->shapes[n->outputs[0]].dims, yd);
    if ((status = qinput_id(b, n->inputs[0], &qi, 4, xd, &x)) ||
        (status = qoutput_id(b, n->outputs[0], &qo, 4, yd, &y)))
      return status;
    XNN_CALL(b, xnn_define_global_average_pooling_2d(b->subgraph, -INFINITY,
                                                     INFINITY, x, y, 0));
    return qoutput_export(b, n->outputs[0]);
  }
  if ((status = value_id(b, n->inputs[0], &x)) ||
      (status = output_id(b, n->outputs[0], &y)))
    return status;
  if (strcmp(n->op_type, "GlobalAveragePool") == 0) {
    XNN_CALL(b, xnn_define_global_average_pooling_2d(b->subgraph, -INFINITY,
                                                     INFINITY, x, y, 0));
  } else {
    XNN_CALL(b, xnn_define_max_pooling_2d(b->subgraph, 0, 0, 0, 0,
                                          (uint32_t)xs->dims[2],
                                          (uint32_t)xs->dims[3], 1, 1, 1, 1,
                                          -INFINITY, INFINITY, x, y, 0));
  }
  return MB_STATUS_OK;
}

static mb_status lower_softmax(build_ctx *b) {
  const mb_node *n = b->node;
  const mb_shape_info *xs = &b->eg->shapes[n->inputs[0]];
  int64_t axis = mb__node_attr_int(n, "axis", b->opset >= 13 ? -1 : 1);
  uint32_t x, y;
  mb_status status;
  if (axis < 0)
    axis += xs->rank;
  if ((status = value_id(b, n->inputs[0], &x)))
    return status;
  /* The dims softmax runs over, in segment layout, are the trailing ones;
   * when they are more than one, flatten them around the softmax. */
  int64_t inner = 1;
  if (b->opset < 13)
    for (int i = (int)axis; i < xs->rank; i++)
      inner *= xs->dims[i];
  size_t d[XNN_RANK_MAX];
  size_t r = segment_dims(xs->rank, xs->dims, d);
  if (b->opset >= 13 || inner == (int64_t)d[r - 1]) {
    if ((status = output_id(b, n->outputs[0], &y)))
      return status;
    XNN_CALL(b, xnn_define_softmax(b->subgraph, x, y, 0));
    return MB_STATUS_OK;
  }
  int64_t numel = shape_numel(xs->rank, xs->dims);
  int64_t flat[2] = {numel / inner, inner};
  uint32_t t1, t2;
  size_t fd[2] = {(size_t)flat[0], (size_t)flat[1]};
  if ((status = define_internal(b, 2, flat, &t1)) ||
      (status = define_internal(b, 2, flat, &t2)) ||
      (status = output_id(b, n->outputs[0], &y)))
    return status;
  XNN_CALL(b, xnn_define_static_reshape(b->subgraph, 2, fd, x, t1, 0));
  XNN_CALL(b, xnn_define_softmax(b->subgraph, t1, t2, 0));
  XNN_CALL(b, xnn_define_static_reshape(b->subgraph, r, d, t2, y, 0));
  return MB_STATUS_OK;
}

static mb_status lower_pad(build_ctx *b) {
  char reason[256];
  mb_engine_check c = lower_check_ctx(b, reason, sizeof reason);
  pad_params p;
  if (!pad_params_get(&c, &p))
    return recheck_failed(b, reason);
  const mb_node *n = b->node;
  int r = b->eg->shapes[n->inputs[0]].rank;
  size_t pre[XNN_RANK_MAX], post[XNN_RANK_MAX];
  if (r == 0)
    return recheck_failed(b, "rank-0 input");
  segment_dims(r, p.begin, pre);
  segment_dims(r, p.end, post);
  uint32_t x, y;
  mb_status status;
  if ((status = value_id(b, n->inputs[0], &x)) ||
      (status = output_id(b, n->outputs[0], &y)))
    return status;
  XNN_CALL(b, xnn_define_static_constant_pad(b->subgraph, pre, post, p.value, x,
                                             y, 0));
  return MB_STATUS_OK;
}

/* Inference BatchNormalization: y = x * scale' + shift' per channel. */
static mb_status lower_batchnorm(build_ctx *b) {
  const mb_node *n = b->node;
  const mb_shape_info *xs = &b->eg->shapes[n->inputs[0]];
  const float *k[4];
  for (int i = 0; i < 4; i++)
    k[i] = constant_of(b->eg, n->inputs[1 + i])->data;
  int64_t ch = xs->dims[1];
  float eps = mb__node_attr_float(n, "epsilon", 1e-5f);
  float *scale = malloc((size_t)ch * 2 * sizeof(float));
  if (!scale)
    return oom(b);
  float *shift = scale + ch;
  for (int64_t c = 0; c < ch; c++) {
    scale[c] = k[0][c] / sqrtf(k[3][c] + eps);
    shift[c] = k[1][c] - k[2][c] * scale[c];
  }
  /* [1, C, 1, ...] in ONNX terms, broadcast against x. */
  int64_t dims[MB_MAX_RANK];
  for (int i = 0; i < xs->rank; i++)
    dims[i] = i == 1 ? ch : 1;
  uint32_t x, s, t, sh, y;
  mb_status status;
  if ((status = value_id(b, n->inputs[0], &x)) ||
      (status = define_operand_data(b, xs->rank, dims, scale, xs->rank, &s)) ||
      (status = define_operand_data(b, xs->rank, dims, shift, xs->rank, &sh)) ||
      (status = define_internal(b, xs->rank, xs->dims, &t)) ||
      (status = output_id(b, n->outputs[0], &y))) {
    free(scale);
    return status;
  }
  free(scale);
  XNN_CALL(b,
           xnn_define_multiply2(b->subgraph, -INFINITY, INFINITY, x, s, t, 0));
  XNN_CALL(b, xnn_define_add2(b->subgraph, -INFINITY, INFINITY, t, sh, y, 0));
  return MB_STATUS_OK;
}

static mb_status lower_resize(build_ctx *b) {
  char reason[256];
  mb_engine_check c = lower_check_ctx(b, reason, sizeof reason);
  uint32_t flags, x, y;
  mb_status status;
  if (!resize_flags(&c, &flags))
    return recheck_failed(b, reason);
  const mb_shape_info *ys = &b->eg->shapes[b->node->outputs[0]];
  if ((status = value_id(b, b->node->inputs[0], &x)) ||
      (status = output_id(b, b->node->outputs[0], &y)))
    return status;
  XNN_CALL(b, xnn_define_static_resize_bilinear_2d(
                  b->subgraph, (size_t)ys->dims[2], (size_t)ys->dims[3], x, y,
                  flags));
  return MB_STATUS_OK;
}

static mb_status lower_depth_to_space(build_ctx *b) {
  const mb_node *n = b->node;
  uint32_t x, y;
  mb_status status;
  if ((status = value_id(b, n->inputs[0], &x)) ||
      (status = output_id(b, n->outputs[0], &y)))
    return status;
  XNN_CALL(b, xnn_define_depth_to_space(
                  b->subgraph, x, y,
                  (uint32_t)mb__node_attr_int(n, "blocksize", 0), 0));
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* The op table                                                              */
/* ------------------------------------------------------------------------ */

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

static const xnn_op_row xnn_ops[] = {
    {"Conv", check_conv, lower_conv, false, true},
    {"Gemm", check_fc, lower_fc, false, true},
    {"MatMul", check_fc, lower_fc, false, true},
    {"Add", check_binary, lower_binary, false, true},
    {"Sub", check_binary, lower_binary},
    {"Mul", check_binary, lower_binary, false, true},
    {"Div", check_binary, lower_binary},
    {"Max", check_binary, lower_binary},
    {"Min", check_binary, lower_binary},
    {"Relu", check_unary, lower_relu, false, true},
    {"Clip", check_clip, lower_clip, false, true},
    {"LeakyRelu", check_leaky_relu, lower_leaky_relu, false, true},
    {"Elu", check_unary, lower_elu},
    {"PRelu", check_prelu, lower_prelu, false, true},
    {"Sigmoid", check_unary, lower_unary},
    {"HardSwish", check_unary, lower_unary, true},
    {"HardSigmoid", check_hardsigmoid, lower_hardsigmoid},
    {"Abs", check_unary, lower_unary},
    {"Neg", check_unary, lower_unary},
    {"Floor", check_unary, lower_unary},
    {"Ceil", check_unary, lower_unary},
    {"Sqrt", check_unary, lower_unary},
    {"MaxPool", check_maxpool, lower_pool, false, true},
    {"AveragePool", check_avgpool, lower_pool},
    {"GlobalAveragePool", check_global_pool, lower_global_pool, false, true},
    {"GlobalMaxPool", check_global_pool, lower_global_pool, false, true},
    {"Softmax", check_softmax, lower_softmax},
    {"Reshape", check_reshape, lower_reshape, false, true},
    {"Flatten", check_reshape, lower_reshape, false, true},
    {"Squeeze", check_reshape, lower_reshape, false, true},
    {"Unsqueeze", check_reshape, lower_reshape, false, true},
    {"Identity", check_identity, lower_reshape, false, true},
    {"Dropout", check_identity, lower_reshape, false, true},
    {"Pad", check_pad, lower_pad, false, true},
    {"BatchNormalization", check_batchnorm, lower_batchnorm},
    {"DepthToSpace", check_depth_to_space, lower_depth_to_space},
    {"Resize", check_resize, lower_resize},
};

static const xnn_op_row *op_find(const mb_node *n) {
  if (n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
    return NULL;
  for (size_t i = 0; i < MB_ARRAY_COUNT(xnn_ops); i++)
    if (strcmp(n->op_type, xnn_ops[i].op_type) == 0)
      return &xnn_ops[i];
  return NULL;
}

/* A node all of whose outputs are constant: the hybrid layer folded it and
 * its consumers read the constants. */
static bool node_is_folded(const mb_engine_graph *eg, const mb_node *n) {
  bool any = false;
  for (int i = 0; i < n->n_outputs; i++) {
    if (n->outputs[i] < 0)
      continue;
    if (!constant_of(eg, n->outputs[i]))
      return false;
    any = true;
  }
  return any;
}

/* ------------------------------------------------------------------------ */
/* Engine interface                                                          */
/* ------------------------------------------------------------------------ */

static void xnn_probe(mb_runtime_info *info) {
  enum xnn_status status = xnn_ready();
  info->version[0] = info->reason[0] = '\0';
  info->available = status == xnn_status_success;
  if (info->available)
    snprintf(info->version, sizeof info->version, "%s", XNN_VERSION_STRING);
  else
    snprintf(info->reason, sizeof info->reason, "xnn_initialize returned %s%s",
             xnn_status_name(status),
             status == xnn_status_unsupported_hardware
                 ? " (this CPU lacks the instructions XNNPACK needs)"
                 : "");
}

static pthread_once_t int8_once = PTHREAD_ONCE_INIT;
static enum xnn_status int8_status = xnn_status_uninitialized;

/* Whether this build has int8 kernels for this CPU: a runtime of one
 * fp32 -> qint8 -> 1x1 qcint8 convolution -> fp32 chain is created once
 * (XNNPACK picks its microkernels at xnn_initialize and says
 * unsupported_hardware when there are none). */
static void int8_probe_once(void) {
  static const float one = 1.0f;
  static const int8_t filter[1 + XNN_EXTRA_BYTES] = {1};
  static const int32_t bias[1] = {0};
  size_t dims[4] = {1, 1, 1, 1};
  xnn_subgraph_t sg = NULL;
  xnn_runtime_t rt = NULL;
  uint32_t x, xq, f, bi, yq, y;
  enum xnn_status s = xnn_ready();
  if (s == xnn_status_success)
    s = xnn_create_subgraph(2, 0, &sg);
  if (s == xnn_status_success)
    s = xnn_define_tensor_value(sg, xnn_datatype_fp32, 4, dims, NULL, 0,
                                XNN_VALUE_FLAG_EXTERNAL_INPUT, &x);
  if (s == xnn_status_success)
    s = xnn_define_quantized_tensor_value(sg, xnn_datatype_qint8, 0, 1.0f, 4,
                                          dims, NULL, XNN_INVALID_VALUE_ID, 0,
                                          &xq);
  if (s == xnn_status_success)
    s = xnn_define_channelwise_quantized_tensor_value(
        sg, xnn_datatype_qcint8, &one, 4, 0, dims, filter, XNN_INVALID_VALUE_ID,
        0, &f);
  if (s == xnn_status_success)
    s = xnn_define_channelwise_quantized_tensor_value(
        sg, xnn_datatype_qcint32, &one, 1, 0, dims, bias, XNN_INVALID_VALUE_ID,
        0, &bi);
  if (s == xnn_status_success)
    s = xnn_define_quantized_tensor_value(sg, xnn_datatype_qint8, 0, 1.0f, 4,
                                          dims, NULL, XNN_INVALID_VALUE_ID, 0,
                                          &yq);
  if (s == xnn_status_success)
    s = xnn_define_tensor_value(sg, xnn_datatype_fp32, 4, dims, NULL, 1,
                                XNN_VALUE_FLAG_EXTERNAL_OUTPUT, &y);
  if (s == xnn_status_success)
    s = xnn_define_convert(sg, x, xq, 0);
  if (s == xnn_status_success)
    s = xnn_define_convolution_2d(sg, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                  -INFINITY, INFINITY, xq, f, bi, yq, 0);
  if (s == xnn_status_success)
    s = xnn_define_convert(sg, yq, y, 0);
  if (s == xnn_status_success)
    s = xnn_create_runtime_v2(sg, NULL, 0, &rt);
  if (rt)
    xnn_delete_runtime(rt);
  if (sg)
    xnn_delete_subgraph(sg);
  int8_status = s;
}

static int xnn_supports_precision(mb_precision precision, char *reason,
                                  size_t size) {
  /* FP16 is accepted here; whether XNNPACK can run a given segment in fp16
   * only shows when its runtime is created, and compile() reports that. */
  if (precision == MB_PRECISION_FP32 || precision == MB_PRECISION_FP16)
    return 1;
  if (precision == MB_PRECISION_INT8) {
    pthread_once(&int8_once, int8_probe_once);
    if (int8_status == xnn_status_success)
      return 1;
    if (reason && size)
      snprintf(reason, size,
               "XNNPACK %s cannot run int8 convolutions here (a qcint8 "
               "convolution runtime gave %s)",
               XNN_VERSION_STRING, xnn_status_name(int8_status));
    return 0;
  }
  if (reason && size)
    snprintf(reason, size, "XNNPACK runs fp32, fp16 and int8, not %s",
             mb_precision_name(precision));
  return 0;
}

static int xnn_supports_node(const mb_engine_graph *eg, int node,
                             const mb_engine_options *options, char *reason,
                             size_t size) {
  const mb_node *n = &eg->graph->nodes[node];
  mb_engine_check c = {eg, n, mb__model_opset(eg->model, ""), reason, size};
  if (reason && size)
    reason[0] = '\0';
  if (node_is_folded(eg, n))
    return 1;
  const xnn_op_row *row = op_find(n);
  if (!row)
    return mb__engine_reject(&c, "not supported by the XNNPACK engine");
  return row->check(&c);
}

static void segment_free(xnn_segment *s) {
  if (!s)
    return;
  if (s->runtime)
    xnn_delete_runtime(s->runtime);
  pool_release(s->pool);
  for (int i = 0; i < s->n_inputs; i++)
    mb__aligned_free(s->inputs[i].buffer);
  for (int i = 0; i < s->n_outputs; i++)
    mb__aligned_free(s->outputs[i].buffer);
  for (int i = 0; i < s->n_statics; i++)
    mb__aligned_free(s->statics[i]);
  free(s->statics);
  free(s->inputs);
  free(s->outputs);
  free(s->external);
  free(s);
}

static void xnn_release(void *compiled) {
  segment_free(compiled);
}

/* Fills the segment's boundary slots (shapes, layouts, owned buffers). */
static mb_status io_init(build_ctx *b) {
  const mb_segment_desc *d = b->seg_desc;
  xnn_segment *s = b->seg;
  s->n_inputs = d->n_inputs;
  s->n_outputs = d->n_outputs;
  s->inputs = calloc((size_t)MB_MAX(d->n_inputs, 1), sizeof *s->inputs);
  s->outputs = calloc((size_t)MB_MAX(d->n_outputs, 1), sizeof *s->outputs);
  if (!s->inputs || !s->outputs)
    return oom(b);
  for (int k = 0; k < d->n_inputs + d->n_outputs; k++) {
    bool is_in = k < d->n_inputs;
    int v = is_in ? d->inputs[k] : d->outputs[k - d->n_inputs];
    io_slot *io = is_in ? &s->inputs[k] : &s->outputs[k - d->n_inputs];
    const mb_shape_info *sh = &b->eg->shapes[v];
    io->value = v;
    io->id = XNN_INVALID_VALUE_ID;
    if (!is_in && (io->constant = constant_of(b->eg, v)) != NULL)
      continue;
    if (!sh->known || sh->dtype != MB_DTYPE_FLOAT || sh->rank > XNN_RANK_MAX) {
      /* An input only a Reshape's shape reads is never used; value_id
       * refuses it as data. */
      if (is_in) {
        io->rank = -1;
        continue;
      }
      return mb__error(b->err, MB_STATUS_UNSUPPORTED,
                       "xnnpack: segment output '%s' is not a float32 tensor "
                       "of static shape",
                       b->eg->graph->values[v].name);
    }
    io->rank = sh->rank;
    memcpy(io->dims, sh->dims, sizeof io->dims);
    io->nbytes = (size_t)shape_numel(sh->rank, sh->dims) * sizeof(float);
    io->transpose = is_nhwc(sh->rank) && !layouts_agree(sh->dims);
    if (is_in)
      b->input_slot[v] = k;
    else
      b->output_slot[v] = k - d->n_inputs;
  }
  /* Outputs nothing inside reads, in ONNX layout, go straight into the
   * caller's tensors; the others (read again inside, where XNNPACK may
   * read past their end, or transposed) get a buffer of their own. */
  for (int j = 0; j < s->n_outputs; j++) {
    io_slot *io = &s->outputs[j];
    if (io->constant)
      continue;
    bool read_inside = false;
    for (int i = 0; i < d->n_nodes && !read_inside; i++) {
      const mb_node *n = &b->eg->graph->nodes[d->nodes[i]];
      for (int k = 0; k < n->n_inputs; k++)
        read_inside |= n->inputs[k] == io->value;
    }
    io->direct = !io->transpose && !read_inside;
  }
  for (int k = 0; k < s->n_inputs + s->n_outputs; k++) {
    io_slot *io =
        k < s->n_inputs ? &s->inputs[k] : &s->outputs[k - s->n_inputs];
    if (io->constant || io->direct || io->rank < 0)
      continue;
    io->buffer = mb__aligned_alloc(io->nbytes + XNN_EXTRA_BYTES);
    if (!io->buffer)
      return oom(b);
    memset(io->buffer, 0, io->nbytes + XNN_EXTRA_BYTES);
  }
  return MB_STATUS_OK;
}

/* Segments doing less than this many multiply-adds (or elements touched)
 * run on the calling thread only: waking the pool's workers and putting
 * them back to sleep costs more than such a segment computes (a
 * transformer cut into 30 segments of a few small nodes each ran 3x slower
 * on 2 threads than on 1). */
#define XNN_PARALLEL_MIN_WORK ((double)(1 << 20))

/* Rough cost of a node: multiply-adds of Conv, Gemm and MatMul, else the
 * elements it writes. */
static double node_work(const mb_engine_graph *eg, const mb_node *n) {
  int y = node_output(n, 0);
  if (y < 0 || !eg->shapes[y].known)
    return 0;
  const mb_shape_info *ys = &eg->shapes[y];
  double out = (double)shape_numel(ys->rank, ys->dims);
  const mb_tensor *w = constant_of(eg, node_input(n, 1));
  if (!w)
    return out;
  if (strcmp(n->op_type, "Conv") == 0 && w->rank == 4)
    return out * (double)(w->dims[1] * w->dims[2] * w->dims[3]);
  if ((strcmp(n->op_type, "Gemm") == 0 || strcmp(n->op_type, "MatMul") == 0) &&
      w->rank == 2 && w->dims[0] > 0 && w->dims[1] > 0) {
    const mb_shape_info *as = &eg->shapes[n->inputs[0]];
    return out * (double)as->dims[as->rank - 1];
  }
  return out;
}

/* "; nodes without fp16 support in XNNPACK git20220216: Gemm 'fc'" for
 * the message of a failed fp16 compile. */
static const char *fp16_culprits(const mb_segment_desc *d, char *buf,
                                 size_t size) {
  const mb_engine_graph *eg = d->eg;
  size_t used = 0;
  int shown = 0, more = 0;
  buf[0] = '\0';
  for (int i = 0; i < d->n_nodes; i++) {
    const mb_node *n = &eg->graph->nodes[d->nodes[i]];
    const xnn_op_row *row = op_find(n);
    if (node_is_folded(eg, n) || !row)
      continue;
    bool ok = row->fp16_ok;
    for (int k = 0; k < n->n_inputs && ok && row->lower == lower_binary; k++)
      ok = !constant_of(eg, n->inputs[k]);
    if (ok && row->lower == lower_fc) {
      /* A C that varies along M is added by a binary node afterwards. */
      char reason[8];
      mb_engine_check c = {eg, n, mb__model_opset(eg->model, ""), reason,
                           sizeof reason};
      fc_params p;
      ok = fc_params_get(&c, &p) && p.bias_kind != 2;
    }
    if (ok)
      continue;
    if (shown == 3) {
      more++;
      continue;
    }
    char label[160];
    used += (size_t)snprintf(
        buf + used, used < size ? size - used : 0, "%s%s",
        shown ? ", "
              : "; nodes without fp16 support in XNNPACK " XNN_VERSION_STRING
                ": ",
        mb__node_label(n, label, sizeof label));
    shown++;
  }
  if (more && used < size)
    snprintf(buf + used, size - used, " and %d more", more);
  if (!shown)
    snprintf(buf, size, "; the fp16 rewrite refused the segment");
  return buf;
}

/* "Conv 'a' .. Gemm 'b'" for messages about the whole segment. */
static const char *segment_label(const mb_segment_desc *d, char *buf,
                                 size_t size) {
  char first[160], last[160];
  const mb_graph *g = d->eg->graph;
  if (d->n_nodes == 0) {
    snprintf(buf, size, "(empty segment)");
    return buf;
  }
  mb__node_label(&g->nodes[d->nodes[0]], first, sizeof first);
  mb__node_label(&g->nodes[d->nodes[d->n_nodes - 1]], last, sizeof last);
  if (d->n_nodes == 1)
    snprintf(buf, size, "%s", first);
  else
    snprintf(buf, size, "%d nodes, %s .. %s", d->n_nodes, first, last);
  return buf;
}

/* The external copies of the outputs output_id kept internal (see
 * copied_out): a reshape to the same shape, which the fp16 rewrite takes. */
static mb_status copy_outputs_fp16(build_ctx *b) {
  for (int j = 0; j < b->seg->n_outputs; j++) {
    io_slot *io = &b->seg->outputs[j];
    int v = io->value;
    size_t d[XNN_RANK_MAX];
    uint32_t y;
    if (io->constant || io->id != XNN_INVALID_VALUE_ID ||
        b->ids[v] == XNN_INVALID_VALUE_ID)
      continue;
    size_t r = segment_dims(b->eg->shapes[v].rank, b->eg->shapes[v].dims, d);
    io->id = b->next_external++;
    XNN_CALL(b, xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, r, d,
                                        NULL, io->id,
                                        XNN_VALUE_FLAG_EXTERNAL_OUTPUT, &y));
    XNN_CALL(b, xnn_define_static_reshape(b->subgraph, r, d, b->ids[v], y, 0));
  }
  return MB_STATUS_OK;
}

/* The builder's per-value and per-node tables. */
static void build_free(build_ctx *b) {
  free(b->ids);
  free(b->input_slot);
  free(b->output_slot);
  free(b->qids);
  free(b->qscale);
  free(b->qzp);
  free(b->qrank);
  free(b->qdims);
  free(b->qkeep);
  free(b->fused);
}

/* Compiles a segment; int8: Conv, Gemm and MatMul with parameters in
 * options->quant run on int8 (else everything in float or fp16). */
static mb_status compile_segment(const mb_segment_desc *segment,
                                 const mb_engine_options *options, bool int8,
                                 void **compiled_out, mb_error *err) {
  const mb_engine_graph *eg = segment->eg;
  int n_values = eg->graph->n_values;
  build_ctx b = {0};
  mb_status status = MB_STATUS_OK;
  double work = 0;
  enum xnn_status xs;
  char where[400], culprits[400];
  b.seg_desc = segment;
  b.eg = eg;
  b.err = err;
  b.opset = mb__model_opset(eg->model, "");
  b.fp16 = options->precision == MB_PRECISION_FP16;
  b.seg = calloc(1, sizeof *b.seg);
  b.ids = malloc((size_t)n_values * sizeof *b.ids);
  b.input_slot = malloc((size_t)n_values * sizeof *b.input_slot);
  b.output_slot = malloc((size_t)n_values * sizeof *b.output_slot);
  if (!b.seg || !b.ids || !b.input_slot || !b.output_slot) {
    status = oom(&b);
    goto fail;
  }
  if (int8) {
    b.quant = options->quant;
    b.qids = malloc((size_t)n_values * sizeof *b.qids);
    b.qscale = calloc((size_t)n_values, sizeof *b.qscale);
    b.qzp = calloc((size_t)n_values, sizeof *b.qzp);
    b.qrank = calloc((size_t)n_values, sizeof *b.qrank);
    b.qdims = calloc((size_t)n_values, sizeof *b.qdims);
    b.qkeep = calloc((size_t)n_values, sizeof *b.qkeep);
    b.fused = calloc((size_t)MB_MAX(eg->graph->n_nodes, 1), sizeof *b.fused);
    if (!b.qids || !b.qscale || !b.qzp || !b.qrank || !b.qdims || !b.qkeep ||
        !b.fused) {
      status = oom(&b);
      goto fail;
    }
  }
  for (int v = 0; v < n_values; v++) {
    b.ids[v] = XNN_INVALID_VALUE_ID;
    b.input_slot[v] = b.output_slot[v] = -1;
    if (b.qids)
      b.qids[v] = XNN_INVALID_VALUE_ID;
  }
  if ((status = io_init(&b)))
    goto fail;
  xs = xnn_create_subgraph((uint32_t)(segment->n_inputs + segment->n_outputs),
                           0, &b.subgraph);
  if (xs != xnn_status_success) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "xnnpack: xnn_create_subgraph returned %s",
                       xnn_status_name(xs));
    goto fail;
  }
  for (int i = 0; i < segment->n_nodes; i++) {
    const mb_node *n = &eg->graph->nodes[segment->nodes[i]];
    b.node = n;
    if (node_is_folded(eg, n) || (b.fused && b.fused[segment->nodes[i]]))
      continue;
    const xnn_op_row *row = op_find(n);
    if (!row) {
      status = recheck_failed(&b, "not supported by the XNNPACK engine");
      goto fail;
    }
    char reason[256];
    mb_engine_check c = {eg, n, b.opset, reason, sizeof reason};
    if (!row->check(&c)) {
      status = recheck_failed(&b, reason);
      goto fail;
    }
    if (options->precision == MB_PRECISION_FP16 && row->fp16_aborts) {
      char label[160];
      status = mb__error(
          err, MB_STATUS_UNSUPPORTED,
          "XNNPACK cannot run this segment in fp16: %s has no fp16 operator "
          "in XNNPACK %s, whose fp16 rewrite accepts it and then fails an "
          "assertion (so modelbench does not try)",
          mb__node_label(n, label, sizeof label), XNN_VERSION_STRING);
      goto fail;
    }
    if ((status = row->lower(&b)))
      goto fail;
    work += node_work(eg, n);
  }
  if (b.fp16 && (status = copy_outputs_fp16(&b)))
    goto fail;
  /* Every non-constant output must have been written. */
  for (int j = 0; j < b.seg->n_outputs; j++) {
    io_slot *io = &b.seg->outputs[j];
    if (!io->constant && io->id == XNN_INVALID_VALUE_ID) {
      status = mb__error(err, MB_STATUS_INTERNAL,
                         "xnnpack: segment output '%s' is not produced by the "
                         "segment",
                         eg->graph->values[io->value].name);
      goto fail;
    }
  }
  /* Nothing observable to compute (every output is a constant): no
   * runtime, run() only copies the constants out. */
  bool computes = false;
  for (int j = 0; j < b.seg->n_outputs; j++)
    computes |= b.seg->outputs[j].id != XNN_INVALID_VALUE_ID;
  if (!computes) {
    xnn_delete_subgraph(b.subgraph);
    build_free(&b);
    *compiled_out = b.seg;
    return MB_STATUS_OK;
  }
  b.seg->n_external = (int)b.next_external;
  b.seg->external =
      calloc((size_t)MB_MAX(b.seg->n_external, 1), sizeof *b.seg->external);
  if (!b.seg->external) {
    status = oom(&b);
    goto fail;
  }
  bool pool_failed;
  b.seg->pool = pool_acquire(
      work < XNN_PARALLEL_MIN_WORK ? 1 : options->threads, &pool_failed);
  if (pool_failed) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "xnnpack: cannot start a pool of %d threads",
                       options->threads);
    goto fail;
  }
  /* Workers sleep after the last operator instead of spinning: between
   * segments the reference interpreter needs the cores. */
  uint32_t flags = XNN_FLAG_YIELD_WORKERS;
  if (options->precision == MB_PRECISION_FP16)
    flags |= XNN_FLAG_FORCE_FP16_INFERENCE;
  xs = xnn_create_runtime_v2(b.subgraph, b.seg->pool, flags, &b.seg->runtime);
  if (xs != xnn_status_success) {
    segment_label(segment, where, sizeof where);
    if (options->precision == MB_PRECISION_FP16)
      status = mb__error(
          err, MB_STATUS_UNSUPPORTED,
          "XNNPACK cannot run this segment in fp16: xnn_create_runtime_v2 "
          "returned %s with XNN_FLAG_FORCE_FP16_INFERENCE (%s)%s",
          xnn_status_name(xs), where,
          xs == xnn_status_unsupported_hardware
              ? "; this XNNPACK build has no fp16 kernels for this CPU"
              : fp16_culprits(segment, culprits, sizeof culprits));
    else
      status =
          mb__error(err,
                    xs == xnn_status_out_of_memory ? MB_STATUS_OUT_OF_MEMORY
                                                   : MB_STATUS_UNSUPPORTED,
                    "xnnpack: xnn_create_runtime_v2 returned %s (%s)",
                    xnn_status_name(xs), where);
    b.seg->runtime = NULL;
    goto fail;
  }
  /* Externals in id order; direct outputs get their pointers per run. */
  for (int k = 0; k < b.seg->n_inputs + b.seg->n_outputs; k++) {
    io_slot *io = k < b.seg->n_inputs ? &b.seg->inputs[k]
                                      : &b.seg->outputs[k - b.seg->n_inputs];
    if (io->id == XNN_INVALID_VALUE_ID)
      continue;
    b.seg->external[io->id].id = io->id;
    b.seg->external[io->id].data = io->buffer;
  }
  xnn_delete_subgraph(b.subgraph);
  build_free(&b);
  *compiled_out = b.seg;
  return MB_STATUS_OK;

fail:
  if (b.subgraph)
    xnn_delete_subgraph(b.subgraph);
  segment_free(b.seg);
  build_free(&b);
  return status;
}

static mb_status xnn_compile(const mb_segment_desc *segment,
                             const mb_engine_options *options,
                             void **compiled_out, mb_error *err) {
  enum xnn_status xs = xnn_ready();
  if (xs != xnn_status_success)
    return mb__error(err, MB_STATUS_UNAVAILABLE,
                     "xnnpack: xnn_initialize returned %s",
                     xnn_status_name(xs));
  switch (options->precision) {
  case MB_PRECISION_FP32:
  case MB_PRECISION_FP16:
    return compile_segment(segment, options, false, compiled_out, err);
  case MB_PRECISION_INT8:
    if (!options->quant)
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "xnnpack: int8 needs quantisation parameters (a "
                       "conversion with the quant_params step calibrates "
                       "them)");
    if (compile_segment(segment, options, true, compiled_out, err) ==
        MB_STATUS_OK)
      return MB_STATUS_OK;
    /* int8_plan_get refuses up front what XNNPACK would refuse, so this
     * is not expected; should XNNPACK still refuse an int8 operator when
     * it creates the runtime, the segment runs in float rather than not
     * at all, and the log says so. */
    mb__log(MB_LOG_WARN, "xnnpack: int8 segment refused (%s); it runs in fp32",
            err ? err->message : "?");
    return compile_segment(segment, options, false, compiled_out, err);
  default:
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "xnnpack: precision %s is not supported",
                     mb_precision_name(options->precision));
  }
}

/* ---- layout conversion at the boundary ---- */

#define XNN_TILE 32

typedef struct transpose_job {
  const float *src;
  float *dst;
  size_t rows, cols; /* of src, per image */
  size_t tiles_r, tiles_c;
} transpose_job;

/* One tile of dst[c][r] = src[r][c] for one image (index = image, tile). */
static void transpose_tile(void *ctx, size_t index) {
  const transpose_job *j = ctx;
  size_t per_image = j->tiles_r * j->tiles_c;
  size_t img = index / per_image, t = index % per_image;
  size_t r0 = (t / j->tiles_c) * XNN_TILE, c0 = (t % j->tiles_c) * XNN_TILE;
  size_t r1 = MB_MIN(r0 + XNN_TILE, j->rows),
         c1 = MB_MIN(c0 + XNN_TILE, j->cols);
  const float *src = j->src + img * j->rows * j->cols;
  float *dst = j->dst + img * j->rows * j->cols;
  for (size_t r = r0; r < r1; r++)
    for (size_t c = c0; c < c1; c++)
      dst[c * j->rows + r] = src[r * j->cols + c];
}

/* Per image: [rows, cols] -> [cols, rows]. */
static void transpose_images(pthreadpool_t pool, uint32_t flags,
                             const float *src, float *dst, size_t images,
                             size_t rows, size_t cols) {
  transpose_job j = {src,
                     dst,
                     rows,
                     cols,
                     (rows + XNN_TILE - 1) / XNN_TILE,
                     (cols + XNN_TILE - 1) / XNN_TILE};
  size_t tiles = images * j.tiles_r * j.tiles_c;
  /* Small tensors are not worth waking the pool for. */
  if (images * rows * cols < ((size_t)1 << 15))
    pool = NULL;
  pthreadpool_parallelize_1d(pool, transpose_tile, &j, tiles, flags);
}

static mb_status check_tensor(const io_slot *io, const mb_tensor *t,
                              const char *what, int index, mb_error *err) {
  if (!t || t->dtype != MB_DTYPE_FLOAT || t->rank != io->rank ||
      memcmp(t->dims, io->dims, (size_t)io->rank * sizeof(int64_t)) != 0 ||
      t->nbytes != io->nbytes || (io->nbytes && !t->data)) {
    char want[96];
    return mb__error(err, MB_STATUS_SHAPE,
                     "xnnpack: segment %s %d is not a float32 tensor of shape "
                     "%s",
                     what, index,
                     mb__shape_str(io->rank, io->dims, want, sizeof want));
  }
  return MB_STATUS_OK;
}

static mb_status xnn_run(void *compiled, const mb_tensor *const *inputs,
                         mb_tensor *const *outputs, mb_error *err) {
  xnn_segment *s = compiled;
  mb_status status;
  bool changed = !s->setup_done;
  for (int i = 0; i < s->n_inputs; i++) {
    io_slot *io = &s->inputs[i];
    if (io->id == XNN_INVALID_VALUE_ID)
      continue;
    if ((status = check_tensor(io, inputs[i], "input", i, err)))
      return status;
    if (io->transpose)
      transpose_images(s->pool, 0, inputs[i]->data, io->buffer,
                       (size_t)io->dims[0], (size_t)io->dims[1],
                       (size_t)(io->dims[2] * io->dims[3]));
    else
      memcpy(io->buffer, inputs[i]->data, io->nbytes);
  }
  for (int j = 0; j < s->n_outputs; j++) {
    io_slot *io = &s->outputs[j];
    if (io->constant) {
      if (!outputs[j] || outputs[j]->nbytes != io->constant->nbytes)
        return mb__error(err, MB_STATUS_SHAPE,
                         "xnnpack: segment output %d has the wrong size", j);
      continue;
    }
    if ((status = check_tensor(io, outputs[j], "output", j, err)))
      return status;
    if (io->direct && s->external[io->id].data != outputs[j]->data) {
      s->external[io->id].data = outputs[j]->data;
      changed = true;
    }
  }
  if (s->runtime) {
    enum xnn_status xs;
    /* Setting up recomputes every operator's indirection buffers: only
     * when a pointer changed. */
    if (changed) {
      xs = xnn_setup_runtime(s->runtime, (size_t)s->n_external, s->external);
      if (xs != xnn_status_success)
        return mb__error(err, MB_STATUS_INTERNAL,
                         "xnnpack: xnn_setup_runtime returned %s",
                         xnn_status_name(xs));
      s->setup_done = true;
    }
    xs = xnn_invoke_runtime(s->runtime);
    if (xs != xnn_status_success)
      return mb__error(err, MB_STATUS_INTERNAL,
                       "xnnpack: xnn_invoke_runtime returned %s",
                       xnn_status_name(xs));
  }
  for (int j = 0; j < s->n_outputs; j++) {
    io_slot *io = &s->outputs[j];
    if (io->constant)
      memcpy(outputs[j]->data, io->constant->data, io->constant->nbytes);
    else if (io->transpose)
      transpose_images(s->pool, PTHREADPOOL_FLAG_YIELD_WORKERS, io->buffer,
                       outputs[j]->data, (size_t)io->dims[0],
                       (size_t)(io->dims[2] * io->dims[3]),
                       (size_t)io->dims[1]);
    else if (!io->direct)
      memcpy(outputs[j]->data, io->buffer, io->nbytes);
  }
  return MB_STATUS_OK;
}

const mb_engine mb__engine_xnnpack = {
    .name = "xnnpack",
    .probe = xnn_probe,
    .supports_precision = xnn_supports_precision,
    .supports_node = xnn_supports_node,
    .compile = xnn_compile,
    .run = xnn_run,
    /* This snapshot has no per-operator profiling. */
    .node_profile = NULL,
    .release = xnn_release,
};

#endif /* MB_HAVE_XNNPACK */
