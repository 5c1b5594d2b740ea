/* The oneDNN engine: runs segments of a graph for the hybrid "onednn"
 * runtime through oneDNN's C API (Debian libdnnl 2.6, OpenMP CPU runtime).
 *
 * compile() turns a segment into a list of steps, each one oneDNN
 * primitive created once with its arguments bound: run() only points the
 * boundary memories at the caller's tensors and executes the list, with no
 * allocation. Layouts are oneDNN's choice (dnnl_format_tag_any) for
 * convolution, matmul weights, pooling and the chains after them, so
 * blocked layouts (2.6 picks NHWC or nChw16c) flow between consecutive
 * primitives; a reorder is inserted only where a primitive needs another
 * layout or data type than a value has: at the segment edges (ONNX layout,
 * float32) and before the few primitives that need a plain layout
 * (reshapes, layer normalization, matmul activations).
 *
 * Fusion: a Conv, MatMul or Gemm "heads" a group that takes in the chain of
 * nodes after it as post-ops while each link is the only reader of the
 * previous value: eltwise (Relu, Clip, Sigmoid, SiLU = x*sigmoid(x), the
 * Erf form of GELU, scalar affine), sum (Add of a same-shape activation,
 * computed in place in that activation's buffer when it dies there) and
 * binary (Add/Mul/... of a broadcast operand; a MatMul's bias). A whole
 * group is emitted at the position of its last node, which is where the
 * liveness of every value it reads is counted. If oneDNN refuses the full
 * post-op list, or serves it only with its reference implementation,
 * shorter prefixes are tried and the rest of the chain is lowered node by
 * node, so compile() of accepted nodes never depends on what a fused form
 * happens to support.
 *
 * Memory: values live in internal buffers reused once their last reader
 * has run (positions in the segment order), or directly in the caller's
 * output tensor when the producing primitive writes plain float32. Views
 * (Reshape, Flatten, Identity, ...) share their input's buffer. All
 * primitives share one user-managed scratchpad per segment.
 *
 * Threads: OpenMP's, options->threads, set before compiling and at every
 * run; primitives with little work run on one thread.
 *
 * BF16 (options->precision): activations and weights are bf16 inside the
 * segment, biases and normalization parameters float32, the boundary
 * float32; primitives oneDNN cannot run in bf16 fall back to float32 with
 * reorders around them. */
#include "runtime/engine.h"

#include "passes/quantize.h"

#include <stdarg.h>
#include <stdlib.h>

#define DN_REASON_UNBUILT                                                      \
  "modelbench was built without oneDNN (apt install libdnnl-dev)"

#ifndef MB_HAVE_DNNL

MB_ENGINE_UNBUILT(onednn, DN_REASON_UNBUILT);

#else /* MB_HAVE_DNNL */

#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>

/* glibc spells it only under _GNU_SOURCE; its value is fixed by the ABI. */
#ifndef RTLD_DEFAULT
#define RTLD_DEFAULT ((void *)0)
#endif

/* ------------------------------------------------------------------------ */
/* Library state                                                             */
/* ------------------------------------------------------------------------ */

#define DN_STATUS_LIST(X)                                                      \
  X(success)                                                                   \
  X(out_of_memory)                                                             \
  X(invalid_arguments)                                                         \
  X(unimplemented)                                                             \
  X(iterator_ends)                                                             \
  X(runtime_error)                                                             \
  X(not_required)

static const char *dn_status_name(dnnl_status_t status) {
  static const struct {
    dnnl_status_t status;
    const char *name;
  } names[] = {
#define MB_X(name) {dnnl_##name, "dnnl_" #name},
      DN_STATUS_LIST(MB_X)
#undef MB_X
  };
  for (size_t i = 0; i < MB_ARRAY_COUNT(names); i++)
    if (names[i].status == status)
      return names[i].name;
  return "dnnl_status_unknown";
}

/* oneDNN's thread count is OpenMP's: omp_set_num_threads on the calling
 * thread. libgomp comes in as libdnnl's dependency, not ours, so the
 * symbol is looked up at run time instead of linked (a oneDNN built for
 * another threading runtime simply has none, and keeps its default). */
typedef void (*omp_set_num_threads_fn)(int);
static pthread_once_t omp_once = PTHREAD_ONCE_INIT;
static omp_set_num_threads_fn omp_set_threads;

static void omp_lookup(void) {
  void *sym = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
  memcpy(&omp_set_threads, &sym, sizeof sym);
}

static void set_threads(int threads) {
  pthread_once(&omp_once, omp_lookup);
  if (omp_set_threads)
    omp_set_threads(MB_MAX(threads, 1));
}

/* ------------------------------------------------------------------------ */
/* Graph queries                                                             */
/* ------------------------------------------------------------------------ */

/* Ranks above this are rejected (oneDNN allows 12; ONNX models stay far
 * below). */
#define DN_RANK_MAX 8
#define DN_MAX_POST 8  /* post-ops per fused group */
#define DN_MAX_ARGS 24 /* arguments of one primitive (concat inputs) */
#define DN_MAX_CONCAT (DN_MAX_ARGS - 4)

static int node_input(const mb_node *n, int i) {
  return i < n->n_inputs ? n->inputs[i] : -1;
}
static int node_output(const mb_node *n, int i) {
  return i < n->n_outputs ? n->outputs[i] : -1;
}
static bool op_is(const mb_node *n, const char *op) {
  return strcmp(n->op_type, op) == 0 &&
         (!n->domain[0] || strcmp(n->domain, "ai.onnx") == 0);
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
    if (!op_is(n, "Identity") || n->n_inputs != 1)
      return NULL;
    v = n->inputs[0];
  }
  return NULL;
}

/* Static shape of value v (constant or inferred): rank, dims. false when
 * unknown. */
static bool value_shape(const mb_engine_graph *eg, int v, int *rank,
                        int64_t *dims, mb_dtype *dtype) {
  const mb_tensor *k = constant_of(eg, v);
  if (k) {
    *rank = k->rank;
    memcpy(dims, k->dims, (size_t)k->rank * sizeof *dims);
    if (dtype)
      *dtype = k->dtype;
    return true;
  }
  const mb_shape_info *s = &eg->shapes[v];
  if (!s->known)
    return false;
  *rank = s->rank;
  memcpy(dims, s->dims, (size_t)s->rank * sizeof *dims);
  if (dtype)
    *dtype = s->dtype;
  return true;
}

static int64_t dims_numel(int rank, const int64_t *dims) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++)
    n *= dims[i];
  return n;
}

/* Right-aligns (rank, dims) into `to` dims with leading ones. */
static void dims_pad(int rank, const int64_t *dims, int to, int64_t *out) {
  for (int i = 0; i < to - rank; i++)
    out[i] = 1;
  for (int i = 0; i < rank; i++)
    out[to - rank + i] = dims[i];
}

static bool dims_equal(int ra, const int64_t *a, int rb, const int64_t *b) {
  return ra == rb && memcmp(a, b, (size_t)ra * sizeof *a) == 0;
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
/* Checks shared by supports_node and compile                                */
/* ------------------------------------------------------------------------ */

/* Checks take an mb_engine_check (engine.h) and return 1 (accepted) or
 * 0 through mb__engine_reject. */

/* Input i is a float32 tensor of known, non-empty shape within the rank
 * limit; must_be_constant: 1 constant, -1 not constant, 0 either. */
static int check_float_input(mb_engine_check *c, int i, int must_be_constant) {
  int v = node_input(c->n, i), rank;
  int64_t dims[MB_MAX_RANK];
  mb_dtype dt;
  if (v < 0)
    return mb__engine_reject(c, "input %d is missing", i);
  const mb_tensor *k = constant_of(c->eg, v);
  if (!value_shape(c->eg, v, &rank, dims, &dt))
    return mb__engine_reject(c, "input %d has no static shape", i);
  if (dt != MB_DTYPE_FLOAT)
    return mb__engine_reject(c, "input %d is %s (only float32 runs on oneDNN)",
                             i, mb_dtype_name(dt));
  if (rank > DN_RANK_MAX)
    return mb__engine_reject(c, "input %d has rank %d (at most %d)", i, rank,
                             DN_RANK_MAX);
  if (dims_numel(rank, dims) <= 0)
    return mb__engine_reject(c, "input %d is empty", i);
  if (must_be_constant > 0 && !k)
    return mb__engine_reject(c, "input %d is not a constant", i);
  if (must_be_constant < 0 && k)
    return mb__engine_reject(
        c, "input %d is a constant (expected an activation)", i);
  return 1;
}

/* Output 0 is a float32 tensor of known, non-empty shape; the others are
 * omitted. */
static int check_outputs(mb_engine_check *c) {
  int v = node_output(c->n, 0);
  if (v < 0)
    return mb__engine_reject(c, "output 0 is missing");
  const mb_shape_info *s = &c->eg->shapes[v];
  if (!s->known)
    return mb__engine_reject(c, "output has no static shape");
  if (s->dtype != MB_DTYPE_FLOAT)
    return mb__engine_reject(c, "output is %s (only float32 runs on oneDNN)",
                             mb_dtype_name(s->dtype));
  if (s->rank > DN_RANK_MAX)
    return mb__engine_reject(c, "output has rank %d (at most %d)", s->rank,
                             DN_RANK_MAX);
  if (dims_numel(s->rank, s->dims) <= 0)
    return mb__engine_reject(c, "output is empty");
  for (int i = 1; i < c->n->n_outputs; i++)
    if (c->n->outputs[i] >= 0)
      return mb__engine_reject(c, "optional output %d is not supported", i);
  return 1;
}

static const mb_shape_info *out_shape(mb_engine_check *c) {
  return &c->eg->shapes[c->n->outputs[0]];
}

/* A float scalar constant (numel 1) at input i, or `def` when omitted. */
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

/* Integer constant (int32/int64) at input i into out (at most max values);
 * returns the count, or -1 (rejected). */
static int64_t int_input(mb_engine_check *c, int i, int64_t *out, int64_t max) {
  int v = node_input(c->n, i);
  const mb_tensor *k = v >= 0 ? constant_of(c->eg, v) : NULL;
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

/* Axis attribute/value `a` normalised into [0, rank); -1 when out of
 * range. */
static int norm_axis(int64_t a, int rank) {
  if (a < 0)
    a += rank;
  return a >= 0 && a < rank ? (int)a : -1;
}

/* ---- eltwise ------------------------------------------------------------ */

typedef struct eltwise_op {
  dnnl_alg_kind_t alg;
  float alpha, beta;
} eltwise_op;

/* One-primitive unary ops: X(op, alg, alpha, beta, attribute for alpha) */
#define DN_UNARY_LIST(X)                                                       \
  X("Relu", dnnl_eltwise_relu, 0.0f, 0.0f, NULL)                               \
  X("LeakyRelu", dnnl_eltwise_relu, 0.01f, 0.0f, "alpha")                      \
  X("Elu", dnnl_eltwise_elu, 1.0f, 0.0f, "alpha")                              \
  X("Sigmoid", dnnl_eltwise_logistic, 0.0f, 0.0f, NULL)                        \
  X("Tanh", dnnl_eltwise_tanh, 0.0f, 0.0f, NULL)                               \
  X("Exp", dnnl_eltwise_exp, 0.0f, 0.0f, NULL)                                 \
  X("Log", dnnl_eltwise_log, 0.0f, 0.0f, NULL)                                 \
  X("Sqrt", dnnl_eltwise_sqrt, 0.0f, 0.0f, NULL)                               \
  X("Abs", dnnl_eltwise_abs, 0.0f, 0.0f, NULL)                                 \
  X("Neg", dnnl_eltwise_linear, -1.0f, 0.0f, NULL)                             \
  X("Reciprocal", dnnl_eltwise_pow, 1.0f, -1.0f, NULL)                         \
  X("HardSwish", dnnl_eltwise_hardswish, 0.0f, 0.0f, NULL)                     \
  X("Softplus", dnnl_eltwise_soft_relu, 0.0f, 0.0f, NULL)                      \
  X("Mish", dnnl_eltwise_mish, 0.0f, 0.0f, NULL)

static const struct unary_row {
  const char *op;
  dnnl_alg_kind_t alg;
  float alpha, beta;
  const char *alpha_attr;
} unary_rows[] = {
#define MB_X(op, alg, alpha, beta, attr) {op, alg, alpha, beta, attr},
    DN_UNARY_LIST(MB_X)
#undef MB_X
};

/* The eltwise primitives computing unary node c->n (input 0 -> output 0):
 * fills ops[0..1] and returns their count, or 0 (rejected). Does not check
 * the data input itself. */
static int unary_get(mb_engine_check *c, eltwise_op *ops) {
  const mb_node *n = c->n;
  for (size_t i = 0; i < MB_ARRAY_COUNT(unary_rows); i++) {
    const struct unary_row *r = &unary_rows[i];
    if (!op_is(n, r->op))
      continue;
    ops[0].alg = r->alg;
    ops[0].alpha = r->alpha_attr
                       ? mb__node_attr_float(n, r->alpha_attr, r->alpha)
                       : r->alpha;
    ops[0].beta = r->beta;
    return 1;
  }
  if (op_is(n, "Clip")) {
    float lo = -FLT_MAX, hi = FLT_MAX;
    if (c->opset < 11) {
      lo = mb__node_attr_float(n, "min", lo);
      hi = mb__node_attr_float(n, "max", hi);
    } else if (!scalar_input(c, 1, lo, &lo) || !scalar_input(c, 2, hi, &hi)) {
      return 0;
    }
    ops[0] = (eltwise_op){dnnl_eltwise_clip, lo, hi};
    return 1;
  }
  if (op_is(n, "HardSigmoid")) {
    /* max(0, min(1, alpha * x + beta)): oneDNN 2.6 has no such algorithm. */
    ops[0] =
        (eltwise_op){dnnl_eltwise_linear, mb__node_attr_float(n, "alpha", 0.2f),
                     mb__node_attr_float(n, "beta", 0.5f)};
    ops[1] = (eltwise_op){dnnl_eltwise_clip, 0.0f, 1.0f};
    return 2;
  }
  if (op_is(n, "Pow")) {
    float p;
    if (!scalar_input(c, 1, 1.0f, &p))
      return mb__engine_reject(
          c, "the exponent must be a float32 scalar constant");
    if (node_input(n, 1) < 0)
      return mb__engine_reject(c, "the exponent is missing");
    ops[0] = (eltwise_op){dnnl_eltwise_pow, 1.0f, p};
    return 1;
  }
  if (op_is(n, "Gelu")) {
    const char *approx = mb__node_attr_string(n, "approximate", "none");
    if (strcmp(approx, "none") && strcmp(approx, "tanh"))
      return mb__engine_reject(c, "approximate='%s' is not supported", approx);
    ops[0] = (eltwise_op){strcmp(approx, "tanh") ? dnnl_eltwise_gelu_erf
                                                 : dnnl_eltwise_gelu_tanh,
                          0.0f, 0.0f};
    return 1;
  }
  return mb__engine_reject(c, "not an elementwise operator");
}

static int check_unary(mb_engine_check *c) {
  eltwise_op ops[2];
  return check_float_input(c, 0, 0) && check_outputs(c) && unary_get(c, ops);
}

/* Erf has no oneDNN algorithm: alone it runs as the engine's own loop on
 * plain float32 data; inside x*0.5*(1+erf(x/sqrt 2)) it becomes GELU. */
static int check_erf(mb_engine_check *c) {
  return check_float_input(c, 0, 0) && check_outputs(c);
}

/* ---- binary ------------------------------------------------------------- */

static const struct binary_row {
  const char *op;
  dnnl_alg_kind_t alg;
  bool commutative;
} binary_rows[] = {
    {"Add", dnnl_binary_add, true}, {"Sub", dnnl_binary_sub, false},
    {"Mul", dnnl_binary_mul, true}, {"Div", dnnl_binary_div, false},
    {"Max", dnnl_binary_max, true}, {"Min", dnnl_binary_min, true},
};

static const struct binary_row *binary_find(const mb_node *n) {
  for (size_t i = 0; i < MB_ARRAY_COUNT(binary_rows); i++)
    if (op_is(n, binary_rows[i].op))
      return &binary_rows[i];
  return NULL;
}

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

static int binary_get(mb_engine_check *c, binary_params *p) {
  const mb_node *n = c->n;
  const struct binary_row *row = binary_find(n);
  int ra, rb;
  int64_t a[MB_MAX_RANK], b[MB_MAX_RANK], pa[MB_MAX_RANK], pb[MB_MAX_RANK];
  memset(p, 0, sizeof *p);
  if (!row)
    return mb__engine_reject(c, "not a binary operator");
  if (n->n_inputs != 2)
    return mb__engine_reject(c, "%d inputs (only 2 run on oneDNN)",
                             n->n_inputs);
  if (!check_float_input(c, 0, 0) || !check_float_input(c, 1, 0) ||
      !check_outputs(c))
    return 0;
  const mb_shape_info *y = out_shape(c);
  value_shape(c->eg, n->inputs[0], &ra, a, NULL);
  value_shape(c->eg, n->inputs[1], &rb, b, NULL);
  const mb_tensor *ka = constant_of(c->eg, n->inputs[0]);
  const mb_tensor *kb = constant_of(c->eg, n->inputs[1]);
  if (ka && kb)
    return mb__engine_reject(c, "both inputs are constant");
  if (ra > y->rank || rb > y->rank)
    return mb__engine_reject(c, "input rank above the output's");
  dims_pad(ra, a, y->rank, pa);
  dims_pad(rb, b, y->rank, pb);
  bool a_full = memcmp(pa, y->dims, (size_t)y->rank * sizeof *pa) == 0;
  bool b_full = memcmp(pb, y->dims, (size_t)y->rank * sizeof *pb) == 0;
  for (int d = 0; d < y->rank; d++)
    if ((pa[d] != y->dims[d] && pa[d] != 1) ||
        (pb[d] != y->dims[d] && pb[d] != 1))
      return mb__engine_reject(c, "inputs do not broadcast to the output");
  p->alg = row->alg;
  /* An activation as src0 keeps its layout for the output. */
  bool prefer_b = b_full && !kb && ka;
  if (a_full && !prefer_b) {
    p->src0 = 0;
    p->src1 = 1;
    return 1;
  }
  if (b_full && (row->commutative || row->alg == dnnl_binary_sub)) {
    p->src0 = 1;
    p->src1 = 0;
    p->negate = !row->commutative;
    return 1;
  }
  if (a_full) {
    p->src0 = 0;
    p->src1 = 1;
    return 1;
  }
  if (b_full && row->alg == dnnl_binary_div && ka && ka->numel == 1) {
    /* c / x = c * x^-1 */
    p->n_elt = 1;
    p->elt_src = 1;
    p->elt =
        (eltwise_op){dnnl_eltwise_pow, (float)mb__tensor_get_f64(ka, 0), -1.0f};
    return 1;
  }
  if (b_full && ka) {
    p->src0 = 0;
    p->src1 = 1;
    p->expand0 = true;
    return 1;
  }
  return mb__engine_reject(c, "the first input would need broadcasting");
}

static int check_binary(mb_engine_check *c) {
  binary_params p;
  return binary_get(c, &p);
}

/* ---- windows: Conv and pooling ------------------------------------------ */

static const char *const auto_pad_names[] = {"NOTSET", "SAME_UPPER",
                                             "SAME_LOWER", "VALID"};

/* Window geometry over nsp spatial dims, resolved to explicit padding as
 * oneDNN wants it: out = (in + pad_l + pad_r - extent) / stride + 1 with
 * floor division. ceil_mode pools get pad_r extended (`extended`). */
typedef struct window {
  int nsp;
  int64_t in[3], out[3], kernel[3], stride[3], dilation[3];
  int64_t pad_l[3], pad_r[3];
  bool extended;
} window;

/* Reads INTS attribute `name` with `count` entries (default `def` when
 * absent) into out; false when the count differs or a value is below
 * min. */
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

/* Resolves strides, dilations, pads and auto_pad of node c->n; w->nsp,
 * in, out (the inferred output) and kernel are set by the caller. */
static int window_resolve(mb_engine_check *c, window *w) {
  const mb_node *n = c->n;
  int64_t pads[6];
  int k = w->nsp;
  if (!attr_ints(n, "strides", k, 1, 1, w->stride))
    return mb__engine_reject(c, "strides must be %d values >= 1", k);
  if (!attr_ints(n, "dilations", k, 1, 1, w->dilation))
    return mb__engine_reject(c, "dilations must be %d values >= 1", k);
  if (!attr_ints(n, "pads", 2 * k, 0, 0, pads))
    return mb__engine_reject(c, "pads must be %d values >= 0", 2 * k);
  const char *ap = mb__node_attr_string(n, "auto_pad", "NOTSET");
  int mode = -1;
  for (int i = 0; i < (int)MB_ARRAY_COUNT(auto_pad_names); i++)
    if (strcmp(ap, auto_pad_names[i]) == 0)
      mode = i;
  if (mode < 0)
    return mb__engine_reject(c, "auto_pad '%s' is not supported", ap);
  w->extended = false;
  for (int d = 0; d < k; d++) {
    int64_t extent = (w->kernel[d] - 1) * w->dilation[d] + 1;
    int64_t in = w->in[d], s = w->stride[d], out = w->out[d];
    if (mode == 0) {
      w->pad_l[d] = pads[d];
      w->pad_r[d] = pads[k + d];
    } else if (mode == 3) {
      w->pad_l[d] = w->pad_r[d] = 0;
    } else {
      int64_t total = MB_MAX(0, (out - 1) * s + extent - in);
      int64_t small = total / 2, big = total - small;
      w->pad_l[d] = mode == 1 ? small : big;
      w->pad_r[d] = mode == 1 ? big : small;
    }
    int64_t span = in + w->pad_l[d] + w->pad_r[d] - extent;
    if (span < 0 || span / s + 1 != out) {
      /* ceil_mode, or padding the last window never reaches: the right
       * padding that gives exactly `out` windows. */
      int64_t pr = (out - 1) * s + extent - in - w->pad_l[d];
      if (pr < 0)
        return mb__engine_reject(c, "output size %lld does not fit the window",
                                 (long long)out);
      if (pr > w->pad_r[d])
        w->extended = true;
      w->pad_r[d] = pr;
    }
    if (out < 1)
      return mb__engine_reject(c, "empty output");
  }
  return 1;
}

typedef struct conv_params {
  window w;
  int64_t groups, c_in, c_out;
  bool bias;
} conv_params;

static int conv_get(mb_engine_check *c, conv_params *p) {
  const mb_node *n = c->n;
  int xr, wr;
  int64_t x[MB_MAX_RANK];
  memset(p, 0, sizeof *p);
  if (!check_float_input(c, 0, 0) || !check_float_input(c, 1, 1) ||
      !check_outputs(c))
    return 0;
  if (n->n_inputs > 3)
    return mb__engine_reject(c, "too many inputs");
  value_shape(c->eg, n->inputs[0], &xr, x, NULL);
  const mb_tensor *w = constant_of(c->eg, n->inputs[1]);
  const mb_shape_info *y = out_shape(c);
  wr = w->rank;
  if (xr < 3 || xr > 5 || wr != xr || y->rank != xr)
    return mb__engine_reject(
        c, "only 1-D, 2-D and 3-D convolutions (input rank %d)", xr);
  if (node_input(n, 2) >= 0) {
    if (!check_float_input(c, 2, 1))
      return 0;
    const mb_tensor *bias = constant_of(c->eg, n->inputs[2]);
    if (bias->rank != 1 || bias->dims[0] != w->dims[0])
      return mb__engine_reject(c, "bias shape does not match the weights");
    p->bias = true;
  }
  p->groups = mb__node_attr_int(n, "group", 1);
  p->c_in = x[1];
  p->c_out = w->dims[0];
  if (p->groups < 1 || p->c_in % p->groups != 0 || p->c_out % p->groups != 0 ||
      w->dims[1] != p->c_in / p->groups)
    return mb__engine_reject(c, "weights do not match the input and group");
  if (y->dims[1] != p->c_out || y->dims[0] != x[0])
    return mb__engine_reject(c, "output shape does not match the weights");
  p->w.nsp = xr - 2;
  const int64_t *ks;
  int64_t nks = mb__node_attr_ints(n, "kernel_shape", &ks);
  if (nks >= 0 && nks != p->w.nsp)
    return mb__engine_reject(c, "kernel_shape disagrees with the weights");
  for (int d = 0; d < p->w.nsp; d++) {
    if (nks >= 0 && ks[d] != w->dims[2 + d])
      return mb__engine_reject(c, "kernel_shape disagrees with the weights");
    p->w.in[d] = x[2 + d];
    p->w.out[d] = y->dims[2 + d];
    p->w.kernel[d] = w->dims[2 + d];
  }
  return window_resolve(c, &p->w);
}

static int check_conv(mb_engine_check *c) {
  conv_params p;
  return conv_get(c, &p);
}

typedef struct pool_params {
  window w;
  dnnl_alg_kind_t alg;
} pool_params;

static int pool_get(mb_engine_check *c, pool_params *p) {
  const mb_node *n = c->n;
  int xr;
  int64_t x[MB_MAX_RANK];
  bool global = op_is(n, "GlobalAveragePool") || op_is(n, "GlobalMaxPool");
  bool average = op_is(n, "AveragePool") || op_is(n, "GlobalAveragePool");
  memset(p, 0, sizeof *p);
  if (!check_float_input(c, 0, 0) || !check_outputs(c))
    return 0;
  value_shape(c->eg, n->inputs[0], &xr, x, NULL);
  const mb_shape_info *y = out_shape(c);
  if (xr < 3 || xr > 5 || y->rank != xr)
    return mb__engine_reject(c, "only 1-D, 2-D and 3-D pooling (input rank %d)",
                             xr);
  p->w.nsp = xr - 2;
  for (int d = 0; d < p->w.nsp; d++) {
    p->w.in[d] = x[2 + d];
    p->w.out[d] = y->dims[2 + d];
  }
  if (global) {
    for (int d = 0; d < p->w.nsp; d++) {
      p->w.kernel[d] = x[2 + d];
      p->w.stride[d] = p->w.dilation[d] = 1;
      p->w.pad_l[d] = p->w.pad_r[d] = 0;
      if (p->w.out[d] != 1)
        return mb__engine_reject(c, "global pooling output is not 1");
    }
    p->alg = average ? dnnl_pooling_avg_exclude_padding : dnnl_pooling_max;
    return 1;
  }
  if (!attr_ints(n, "kernel_shape", p->w.nsp, 0, 1, p->w.kernel) ||
      mb__node_attr_ints(n, "kernel_shape", &(const int64_t *){NULL}) < 0)
    return mb__engine_reject(c, "kernel_shape must be %d values >= 1",
                             p->w.nsp);
  if (!window_resolve(c, &p->w))
    return 0;
  for (int d = 0; d < p->w.nsp; d++) {
    int64_t extent = (p->w.kernel[d] - 1) * p->w.dilation[d] + 1;
    if (p->w.pad_l[d] >= extent || p->w.pad_r[d] >= extent)
      return mb__engine_reject(c, "padding as large as the window");
  }
  if (average) {
    bool include = mb__node_attr_int(n, "count_include_pad", 0) != 0;
    if (include && p->w.extended)
      return mb__engine_reject(c, "ceil_mode with count_include_pad");
    p->alg = include ? dnnl_pooling_avg_include_padding
                     : dnnl_pooling_avg_exclude_padding;
  } else {
    if (mb__node_attr_int(n, "storage_order", 0) != 0 && node_output(n, 1) >= 0)
      return mb__engine_reject(c, "storage_order is not supported");
    p->alg = dnnl_pooling_max;
  }
  return 1;
}

static int check_pool(mb_engine_check *c) {
  pool_params p;
  return pool_get(c, &p);
}

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

static int mm_get(mb_engine_check *c, mm_params *p) {
  const mb_node *n = c->n;
  bool gemm = op_is(n, "Gemm");
  int ra, rb;
  int64_t a[MB_MAX_RANK], b[MB_MAX_RANK];
  memset(p, 0, sizeof *p);
  p->c = -1;
  p->alpha = p->beta = 1.0f;
  if (!check_float_input(c, 0, 0) || !check_float_input(c, 1, 0) ||
      !check_outputs(c))
    return 0;
  value_shape(c->eg, n->inputs[0], &ra, a, NULL);
  value_shape(c->eg, n->inputs[1], &rb, b, NULL);
  const mb_shape_info *y = out_shape(c);
  if (ra < 2 || rb < 2)
    return mb__engine_reject(c, "1-D operands are not supported");
  if (constant_of(c->eg, n->inputs[0]) && constant_of(c->eg, n->inputs[1]))
    return mb__engine_reject(c, "both inputs are constant");
  p->rank = MB_MAX(ra, rb);
  if (y->rank != p->rank)
    return mb__engine_reject(c, "output rank %d differs from the inputs'",
                             y->rank);
  dims_pad(ra, a, p->rank, p->a_dims);
  dims_pad(rb, b, p->rank, p->b_dims);
  memcpy(p->y_dims, y->dims, (size_t)p->rank * sizeof *p->y_dims);
  if (gemm) {
    if (ra != 2 || rb != 2)
      return mb__engine_reject(c, "inputs must be 2-D");
    p->trans_a = mb__node_attr_int(n, "transA", 0) != 0;
    p->trans_b = mb__node_attr_int(n, "transB", 0) != 0;
    p->alpha = mb__node_attr_float(n, "alpha", 1.0f);
    p->beta = mb__node_attr_float(n, "beta", 1.0f);
    if (p->alpha == 0.0f)
      return mb__engine_reject(c, "alpha is 0");
  }
  int r = p->rank;
  int64_t m = p->a_dims[r - (p->trans_a ? 1 : 2)];
  int64_t k = p->a_dims[r - (p->trans_a ? 2 : 1)];
  int64_t kb = p->b_dims[r - (p->trans_b ? 1 : 2)];
  int64_t nn = p->b_dims[r - (p->trans_b ? 2 : 1)];
  if (k != kb || y->dims[r - 2] != m || y->dims[r - 1] != nn)
    return mb__engine_reject(c, "operand shapes do not match");
  for (int d = 0; d < r - 2; d++) {
    int64_t x = p->a_dims[d], w = p->b_dims[d];
    if ((x != w && x != 1 && w != 1) || y->dims[d] != MB_MAX(x, w))
      return mb__engine_reject(c, "batch dimensions do not broadcast");
  }
  if (gemm && node_input(n, 2) >= 0) {
    int rc;
    int64_t cd[MB_MAX_RANK], pc[2];
    if (!check_float_input(c, 2, 1))
      return mb__engine_reject(c, "C must be a float32 constant");
    value_shape(c->eg, n->inputs[2], &rc, cd, NULL);
    if (rc > 2)
      return mb__engine_reject(c, "C has rank %d", rc);
    dims_pad(rc, cd, 2, pc);
    if ((pc[0] != 1 && pc[0] != m) || (pc[1] != 1 && pc[1] != nn))
      return mb__engine_reject(c, "C does not broadcast to the output");
    p->c = 2;
    p->c_is_bias = pc[0] == 1;
    if (!p->c_is_bias && p->beta != 1.0f)
      return mb__engine_reject(c, "C of shape [M, N] with beta != 1");
  }
  return 1;
}

static int check_mm(mb_engine_check *c) {
  mm_params p;
  return mm_get(c, &p);
}

/* ---- normalizations ----------------------------------------------------- */

typedef struct softmax_params {
  int axis;
  bool log;
  bool coerce_2d; /* opset < 13: over the flattened [axis:] */
} softmax_params;

static int softmax_get(mb_engine_check *c, softmax_params *p) {
  int r;
  int64_t x[MB_MAX_RANK];
  if (!check_float_input(c, 0, 0) || !check_outputs(c))
    return 0;
  value_shape(c->eg, c->n->inputs[0], &r, x, NULL);
  int64_t def = c->opset < 13 ? 1 : -1;
  p->axis = norm_axis(mb__node_attr_int(c->n, "axis", def), MB_MAX(r, 1));
  if (p->axis < 0)
    return mb__engine_reject(c, "axis out of range");
  p->log = op_is(c->n, "LogSoftmax");
  p->coerce_2d = c->opset < 13 && r > 0 && p->axis != r - 1;
  return 1;
}

static int check_softmax(mb_engine_check *c) {
  softmax_params p;
  return softmax_get(c, &p);
}

typedef struct lnorm_params {
  int64_t outer, inner;
  float epsilon;
  bool bias;
} lnorm_params;

static int lnorm_get(mb_engine_check *c, lnorm_params *p) {
  int r;
  int64_t x[MB_MAX_RANK];
  if (!check_float_input(c, 0, 0) || !check_float_input(c, 1, 1) ||
      !check_outputs(c))
    return 0;
  value_shape(c->eg, c->n->inputs[0], &r, x, NULL);
  int axis = norm_axis(mb__node_attr_int(c->n, "axis", -1), r);
  if (axis < 0)
    return mb__engine_reject(c, "axis out of range");
  if (mb__node_attr_int(c->n, "stash_type", 1) != 1)
    return mb__engine_reject(c, "stash_type must be 1 (float32)");
  p->outer = dims_numel(axis, x);
  p->inner = dims_numel(r - axis, x + axis);
  p->epsilon = mb__node_attr_float(c->n, "epsilon", 1e-5f);
  if (constant_of(c->eg, c->n->inputs[1])->numel != p->inner)
    return mb__engine_reject(c, "scale does not match the normalized shape");
  p->bias = node_input(c->n, 2) >= 0;
  if (p->bias && (!check_float_input(c, 2, 1) ||
                  constant_of(c->eg, c->n->inputs[2])->numel != p->inner))
    return mb__engine_reject(c,
                             "bias must be a constant of the normalized shape");
  return 1;
}

static int check_lnorm(mb_engine_check *c) {
  lnorm_params p;
  return lnorm_get(c, &p);
}

static int check_batchnorm(mb_engine_check *c) {
  int r;
  int64_t x[MB_MAX_RANK];
  if (!check_float_input(c, 0, -1) || !check_outputs(c))
    return 0;
  if (c->n->n_inputs != 5)
    return mb__engine_reject(c, "expected 5 inputs");
  value_shape(c->eg, c->n->inputs[0], &r, x, NULL);
  if (r < 2 || r > 5)
    return mb__engine_reject(c, "input rank %d (2 to 5 run on oneDNN)", r);
  for (int i = 1; i < 5; i++) {
    if (!check_float_input(c, i, 1))
      return 0;
    if (constant_of(c->eg, c->n->inputs[i])->numel != x[1])
      return mb__engine_reject(
          c, "input %d does not have one value per channel", i);
  }
  if (mb__node_attr_int(c->n, "training_mode", 0) != 0)
    return mb__engine_reject(c, "training_mode is not supported");
  if (c->opset < 9 && mb__node_attr_int(c->n, "spatial", 1) != 1)
    return mb__engine_reject(c, "spatial=0 is not supported");
  return 1;
}

/* ---- data movement ------------------------------------------------------ */

static int transpose_get(mb_engine_check *c, int *perm) {
  int r;
  int64_t x[MB_MAX_RANK];
  const int64_t *p;
  if (!check_float_input(c, 0, 0) || !check_outputs(c))
    return 0;
  value_shape(c->eg, c->n->inputs[0], &r, x, NULL);
  int64_t k = mb__node_attr_ints(c->n, "perm", &p);
  if (k >= 0 && k != r)
    return mb__engine_reject(c, "perm has %lld entries for rank %d",
                             (long long)k, r);
  int seen = 0;
  for (int i = 0; i < r; i++) {
    int64_t a = k >= 0 ? p[i] : r - 1 - i;
    if (a < 0 || a >= r || (seen & (1 << a)))
      return mb__engine_reject(c, "perm is not a permutation");
    seen |= 1 << a;
    perm[i] = (int)a;
  }
  return 1;
}

static int check_transpose(mb_engine_check *c) {
  int perm[MB_MAX_RANK];
  return transpose_get(c, perm);
}

/* Reshape, Flatten, Squeeze, Unsqueeze: the output shape is known, the
 * data is reinterpreted in a plain layout. */
static int check_reshape(mb_engine_check *c) {
  return check_float_input(c, 0, 0) && check_outputs(c);
}

static int check_identity(mb_engine_check *c) {
  if (!check_float_input(c, 0, 0) || !check_outputs(c))
    return 0;
  if (op_is(c->n, "Dropout") && node_input(c->n, 2) >= 0) {
    const mb_tensor *t = constant_of(c->eg, c->n->inputs[2]);
    if (!t || t->numel != 1 || mb__tensor_get_f64(t, 0) != 0.0)
      return mb__engine_reject(c, "training_mode must be a constant false");
  }
  return 1;
}

static int check_concat(mb_engine_check *c) {
  int r;
  int64_t x[MB_MAX_RANK];
  if (c->n->n_inputs < 1 || c->n->n_inputs > DN_MAX_CONCAT)
    return mb__engine_reject(c, "%d inputs (1 to %d run on oneDNN)",
                             c->n->n_inputs, DN_MAX_CONCAT);
  for (int i = 0; i < c->n->n_inputs; i++)
    if (!check_float_input(c, i, 0))
      return 0;
  if (!check_outputs(c))
    return 0;
  value_shape(c->eg, c->n->inputs[0], &r, x, NULL);
  if (norm_axis(mb__node_attr_int(c->n, "axis", 0), r) < 0)
    return mb__engine_reject(c, "axis out of range");
  return 1;
}

static const struct reduce_row {
  const char *op;
  dnnl_alg_kind_t alg;
  int64_t axes_input_since; /* opset from which axes is an input */
} reduce_rows[] = {
    {"ReduceMean", dnnl_reduction_mean, 18},
    {"ReduceSum", dnnl_reduction_sum, 13},
    {"ReduceMax", dnnl_reduction_max, 18},
    {"ReduceMin", dnnl_reduction_min, 18},
    {"ReduceProd", dnnl_reduction_mul, 18},
};

typedef struct reduce_params {
  dnnl_alg_kind_t alg;
  int rank;
  int64_t kept_dims[DN_RANK_MAX]; /* input dims with reduced axes set to 1 */
} reduce_params;

static int reduce_get(mb_engine_check *c, reduce_params *p) {
  const mb_node *n = c->n;
  const struct reduce_row *row = NULL;
  int64_t x[MB_MAX_RANK], axes[DN_RANK_MAX];
  int64_t n_axes;
  for (size_t i = 0; i < MB_ARRAY_COUNT(reduce_rows) && !row; i++)
    if (op_is(n, reduce_rows[i].op))
      row = &reduce_rows[i];
  if (!row)
    return mb__engine_reject(c, "not a reduction");
  if (!check_float_input(c, 0, -1) || !check_outputs(c))
    return 0;
  value_shape(c->eg, n->inputs[0], &p->rank, x, NULL);
  p->alg = row->alg;
  if (c->opset >= row->axes_input_since) {
    n_axes = 0;
    if (node_input(n, 1) >= 0 &&
        (n_axes = int_input(c, 1, axes, DN_RANK_MAX)) < 0)
      return 0;
    if (n_axes == 0 && mb__node_attr_int(n, "noop_with_empty_axes", 0))
      return mb__engine_reject(c, "noop_with_empty_axes is not supported");
  } else {
    const int64_t *a;
    n_axes = mb__node_attr_ints(n, "axes", &a);
    if (n_axes > DN_RANK_MAX)
      return mb__engine_reject(c, "too many axes");
    for (int64_t i = 0; i < n_axes; i++)
      axes[i] = a[i];
    n_axes = MB_MAX(n_axes, 0);
  }
  memcpy(p->kept_dims, x, (size_t)p->rank * sizeof *x);
  for (int i = 0; i < p->rank && n_axes == 0; i++)
    p->kept_dims[i] = 1;
  for (int64_t i = 0; i < n_axes; i++) {
    int a = norm_axis(axes[i], p->rank);
    if (a < 0)
      return mb__engine_reject(c, "axis out of range");
    p->kept_dims[a] = 1;
  }
  if (p->rank < 1)
    return mb__engine_reject(c, "scalar input");
  if (dims_numel(p->rank, p->kept_dims) !=
      dims_numel(out_shape(c)->rank, out_shape(c)->dims))
    return mb__engine_reject(c, "output shape does not match the axes");
  return 1;
}

static int check_reduce(mb_engine_check *c) {
  reduce_params p;
  return reduce_get(c, &p);
}

/* Slice with steps >= 1 as a strided view: start offsets per axis. */
typedef struct slice_params {
  int rank;
  int64_t start[DN_RANK_MAX], step[DN_RANK_MAX];
} slice_params;

static int slice_get(mb_engine_check *c, slice_params *p) {
  const mb_node *n = c->n;
  int64_t x[MB_MAX_RANK], starts[DN_RANK_MAX], axes[DN_RANK_MAX],
      steps[DN_RANK_MAX];
  int64_t ns, na, nst;
  if (!check_float_input(c, 0, 0) || !check_outputs(c))
    return 0;
  value_shape(c->eg, n->inputs[0], &p->rank, x, NULL);
  const mb_shape_info *y = out_shape(c);
  if (y->rank != p->rank)
    return mb__engine_reject(c, "output rank differs");
  if (c->opset < 10) {
    const int64_t *a;
    ns = mb__node_attr_ints(n, "starts", &a);
    if (ns < 0 || ns > DN_RANK_MAX)
      return mb__engine_reject(c, "bad starts");
    memcpy(starts, a, (size_t)ns * sizeof *a);
    na = mb__node_attr_ints(n, "axes", &a);
    if (na > DN_RANK_MAX)
      return mb__engine_reject(c, "bad axes");
    if (na > 0)
      memcpy(axes, a, (size_t)na * sizeof *a);
    nst = -1;
  } else {
    if ((ns = int_input(c, 1, starts, DN_RANK_MAX)) < 0)
      return 0;
    na = -1;
    if (node_input(n, 3) >= 0 && (na = int_input(c, 3, axes, DN_RANK_MAX)) < 0)
      return 0;
    nst = -1;
    if (node_input(n, 4) >= 0 &&
        (nst = int_input(c, 4, steps, DN_RANK_MAX)) < 0)
      return 0;
  }
  if ((na >= 0 && na != ns) || (nst >= 0 && nst != ns))
    return mb__engine_reject(c, "starts, axes and steps differ in length");
  for (int i = 0; i < p->rank; i++) {
    p->start[i] = 0;
    p->step[i] = 1;
  }
  for (int64_t i = 0; i < ns; i++) {
    int a = norm_axis(na >= 0 ? axes[i] : i, p->rank);
    int64_t st = nst >= 0 ? steps[i] : 1, s = starts[i];
    if (a < 0)
      return mb__engine_reject(c, "axis out of range");
    if (st < 1)
      return mb__engine_reject(c, "only positive steps");
    if (s < 0)
      s += x[a];
    p->start[a] = MB_MAX(0, MB_MIN(s, x[a]));
    p->step[a] = st;
  }
  for (int i = 0; i < p->rank; i++)
    if (y->dims[i] > 0 && p->start[i] + (y->dims[i] - 1) * p->step[i] >= x[i])
      return mb__engine_reject(c, "output shape does not match the slice");
  return 1;
}

static int check_slice(mb_engine_check *c) {
  slice_params p;
  return slice_get(c, &p);
}

static int check_split(mb_engine_check *c) {
  int r;
  int64_t x[MB_MAX_RANK], total = 0;
  if (!check_float_input(c, 0, 0))
    return 0;
  value_shape(c->eg, c->n->inputs[0], &r, x, NULL);
  int axis = norm_axis(mb__node_attr_int(c->n, "axis", 0), r);
  if (axis < 0)
    return mb__engine_reject(c, "axis out of range");
  for (int i = 0; i < c->n->n_outputs; i++) {
    int v = c->n->outputs[i];
    if (v < 0)
      return mb__engine_reject(c, "output %d is omitted", i);
    const mb_shape_info *s = &c->eg->shapes[v];
    if (!s->known || s->dtype != MB_DTYPE_FLOAT || s->rank != r)
      return mb__engine_reject(c, "output %d has no static float32 shape", i);
    total += s->dims[axis];
  }
  if (total != x[axis])
    return mb__engine_reject(c, "outputs do not cover the input");
  return 1;
}

/* ------------------------------------------------------------------------ */
/* The compiled segment                                                      */
/* ------------------------------------------------------------------------ */

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

static void segment_free(dn_segment *s) {
  if (!s)
    return;
  for (int i = 0; i < s->n_steps; i++)
    if (s->steps[i].prim)
      dnnl_primitive_destroy(s->steps[i].prim);
  for (int i = 0; i < s->n_mems; i++)
    dnnl_memory_destroy(s->mems[i].mem);
  for (int i = 0; i < s->n_bufs; i++)
    if (s->bufs[i].owned)
      mb__aligned_free(s->bufs[i].data);
  if (s->stream)
    dnnl_stream_destroy(s->stream);
  if (s->engine)
    dnnl_engine_destroy(s->engine);
  free(s->steps);
  free(s->mems);
  free(s->io_mems);
  free(s->bufs);
  free(s->inputs);
  free(s->outputs);
  free(s->prof);
  free(s);
}

/* Grows *array (of *cap elements of `size` bytes) to hold one more. */
static bool grow(void **array, int *cap, int count, size_t size) {
  if (count < *cap)
    return true;
  int n = *cap ? *cap * 2 : 16;
  void *p = realloc(*array, (size_t)n * size);
  if (!p)
    return false;
  *array = p;
  *cap = n;
  return true;
}

/* ------------------------------------------------------------------------ */
/* Lowering context                                                          */
/* ------------------------------------------------------------------------ */

/* One representation of a value: a layout and data type in a buffer. A
 * value may get several (its producer's blocked layout, and a plain copy
 * for a reshape); the first is the one it was produced in. */
typedef struct dn_rep {
  dnnl_memory_desc_t md;
  dnnl_memory_t mem;
  int buf;
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
} dn_post_kind;

/* One link of a fused chain: the nodes it replaces (segment positions, in
 * order) and the value it yields. Links with no nodes (Gemm's own alpha
 * and C) are part of the head. */
typedef struct dn_post {
  dn_post_kind kind;
  int n_ops;
  eltwise_op ops[2];
  dnnl_alg_kind_t alg;
  int operand; /* value index */
  int n_nodes;
  int nodes[5];
  int out_value;
} dn_post;

typedef struct dn_group {
  int head; /* position of the Conv/MatMul/Gemm; -1: eltwise pattern */
  int src;  /* eltwise pattern: its input value */
  int n_post;
  dn_post post[DN_MAX_POST];
  int last; /* position of its last node, where it is emitted */
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
  int *node_pos;                /* per graph node: position, -1 outside */
  dn_val *vals;                 /* per graph value */
  int n_groups;
  dn_group *groups;
  int *group_of; /* per position: group index, -1 */
  mb_error *err;
} lctx;

static const mb_node *node_at(lctx *l, int pos) {
  return &l->g->nodes[l->d->nodes[pos]];
}

static mb_status dn_fail(lctx *l, const char *call, dnnl_status_t st) {
  char label[160], fn[64];
  size_t k = strcspn(call, "(");
  snprintf(fn, sizeof fn, "%.*s", (int)MB_MIN(k, sizeof fn - 1), call);
  return mb__error(
      l->err,
      st == dnnl_out_of_memory ? MB_STATUS_OUT_OF_MEMORY : MB_STATUS_INTERNAL,
      "onednn: %s: %s failed: %s",
      l->node ? mb__node_label(l->node, label, sizeof label) : "segment", fn,
      dn_status_name(st));
}

#define DN_TRY(l, call)                                                        \
  do {                                                                         \
    dnnl_status_t st_ = (call);                                                \
    if (st_ != dnnl_success)                                                   \
      return dn_fail((l), #call, st_);                                         \
  } while (0)

/* Like DN_TRY inside functions that clean up at `done` with `status`. */
#define DN_GOTO(l, call)                                                       \
  do {                                                                         \
    dnnl_status_t st_ = (call);                                                \
    if (st_ != dnnl_success) {                                                 \
      status = dn_fail((l), #call, st_);                                       \
      goto done;                                                               \
    }                                                                          \
  } while (0)

#define MB_TRY_GOTO(expr)                                                      \
  do {                                                                         \
    if ((status = (expr)))                                                     \
      goto done;                                                               \
  } while (0)

static mb_status oom(lctx *l) {
  char label[160];
  return mb__error(l->err, MB_STATUS_OUT_OF_MEMORY, "onednn: %s: out of memory",
                   l->node ? mb__node_label(l->node, label, sizeof label)
                           : "segment");
}

static mb_status internal(lctx *l, const char *what) {
  char label[160];
  return mb__error(
      l->err, MB_STATUS_INTERNAL, "onednn: %s: %s",
      l->node ? mb__node_label(l->node, label, sizeof label) : "segment", what);
}

/* ---- memory descriptors ------------------------------------------------- */

/* Plain row-major md; rank 0 is [1]. */
static dnnl_status_t md_plain(dnnl_memory_desc_t *md, int rank,
                              const int64_t *dims, dnnl_data_type_t dt) {
  dnnl_dims_t d, strides;
  int64_t stride = 1;
  if (rank == 0) {
    d[0] = 1;
    strides[0] = 1;
    return dnnl_memory_desc_init_by_strides(md, 1, d, dt, strides);
  }
  for (int i = rank - 1; i >= 0; i--) {
    d[i] = dims[i];
    strides[i] = stride;
    stride *= MB_MAX(dims[i], 1);
  }
  return dnnl_memory_desc_init_by_strides(md, rank, d, dt, strides);
}

static dnnl_status_t md_any(dnnl_memory_desc_t *md, int rank,
                            const int64_t *dims, dnnl_data_type_t dt) {
  dnnl_dims_t d;
  for (int i = 0; i < rank; i++)
    d[i] = dims[i];
  return dnnl_memory_desc_init_by_tag(md, rank, d, dt, dnnl_format_tag_any);
}

/* Dense row-major (strides of size-1 dims do not matter), no offset. */
static bool md_is_plain(const dnnl_memory_desc_t *md) {
  const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
  int64_t stride = 1;
  if (md->format_kind != dnnl_blocked || b->inner_nblks != 0 ||
      md->offset0 != 0 || md->extra.flags != 0)
    return false;
  for (int i = md->ndims - 1; i >= 0; i--) {
    if (md->padded_dims[i] != md->dims[i] || md->padded_offsets[i] != 0)
      return false;
    if (md->dims[i] != 1 && b->strides[i] != stride)
      return false;
    stride *= md->dims[i];
  }
  return true;
}

static bool md_same(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b) {
  if (dnnl_memory_desc_equal(a, b))
    return true;
  return a->data_type == b->data_type && md_is_plain(a) && md_is_plain(b) &&
         dims_equal(a->ndims, a->dims, b->ndims, b->dims);
}

/* ---- buffers and memories ----------------------------------------------- */

static int buf_new(lctx *l, dn_buf_kind kind, int slot, size_t size) {
  dn_segment *s = l->s;
  if (!grow((void **)&s->bufs, &s->cap_bufs, s->n_bufs, sizeof *s->bufs))
    return -1;
  dn_buffer *b = &s->bufs[s->n_bufs];
  memset(b, 0, sizeof *b);
  b->kind = kind;
  b->slot = slot;
  b->size = size;
  b->busy_until = -1;
  return s->n_bufs++;
}

/* An internal buffer of at least `size` bytes free from the current
 * position until position `until`: the smallest free one that fits, else
 * the largest free one grown, else a new one. */
static int buf_take(lctx *l, size_t size, int until) {
  dn_segment *s = l->s;
  int fit = -1, big = -1;
  for (int i = 0; i < s->n_bufs; i++) {
    dn_buffer *b = &s->bufs[i];
    if (b->kind != DN_BUF_INTERNAL || b->busy_until >= l->pos)
      continue;
    if (b->size >= size && (fit < 0 || b->size < s->bufs[fit].size))
      fit = i;
    if (big < 0 || b->size > s->bufs[big].size)
      big = i;
  }
  int i = fit >= 0 ? fit : big;
  if (i < 0 && (i = buf_new(l, DN_BUF_INTERNAL, -1, size)) < 0)
    return -1;
  dn_buffer *b = &s->bufs[i];
  b->size = MB_MAX(b->size, size);
  b->busy_until = MB_MAX(until, l->pos);
  return i;
}

/* A memory object with md on buffer `buf`. CONST buffers have their data
 * already; the others get their address at the end of compile (INTERNAL,
 * SCRATCH) or at each run (INPUT, OUTPUT). */
static mb_status mem_new(lctx *l, const dnnl_memory_desc_t *md, int buf,
                         dnnl_memory_t *mem_out) {
  dn_segment *s = l->s;
  dnnl_memory_t mem = NULL;
  dn_buffer *b = &s->bufs[buf];
  if (!grow((void **)&s->mems, &s->cap_mems, s->n_mems, sizeof *s->mems) ||
      !grow((void **)&s->io_mems, &s->cap_io_mems, s->n_io_mems,
            sizeof *s->io_mems))
    return oom(l);
  DN_TRY(l, dnnl_memory_create(&mem, md, s->engine,
                               b->kind == DN_BUF_CONST ? b->data
                                                       : DNNL_MEMORY_NONE));
  s->mems[s->n_mems].mem = mem;
  s->mems[s->n_mems].buf = buf;
  if (b->kind == DN_BUF_INPUT || b->kind == DN_BUF_OUTPUT)
    s->io_mems[s->n_io_mems++] = s->n_mems;
  s->n_mems++;
  *mem_out = mem;
  return MB_STATUS_OK;
}

/* ---- profile entries and steps ------------------------------------------ */

static int prof_new(lctx *l, const char *op_type, const char *name) {
  dn_segment *s = l->s;
  if (!grow((void **)&s->prof, &s->cap_prof, s->n_prof, sizeof *s->prof))
    return -1;
  mb_engine_node_time *t = &s->prof[s->n_prof];
  memset(t, 0, sizeof *t);
  snprintf(t->op_type, sizeof t->op_type, "%s", op_type);
  snprintf(t->name, sizeof t->name, "%s", name ? name : "");
  return s->n_prof++;
}

/* Attributes every primitive gets: the scratchpad is ours (one buffer
 * shared by the segment, no allocation while running). post_ops: NULL or
 * borrowed. qa: int8 attributes, or NULL. */
static mb_status attr_new(lctx *l, const_dnnl_post_ops_t post_ops,
                          const dn_qattr *qa, dnnl_primitive_attr_t *attr_out) {
  dnnl_primitive_attr_t attr = NULL;
  dnnl_status_t st;
  *attr_out = NULL;
  DN_TRY(l, dnnl_primitive_attr_create(&attr));
  st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (st == dnnl_success && post_ops)
    st = dnnl_primitive_attr_set_post_ops(attr, post_ops);
  if (st == dnnl_success && qa && qa->n_scales > 0)
    st = dnnl_primitive_attr_set_output_scales(attr, qa->n_scales, qa->mask,
                                               qa->scales);
  if (st == dnnl_success && qa && qa->src_zp) {
    const int32_t runtime = DNNL_RUNTIME_S32_VAL;
    st =
        dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &runtime);
  }
  if (st == dnnl_success && qa && qa->dst_zp) {
    const int32_t zp = qa->dst_zp_value;
    st = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_DST, 1, 0, &zp);
  }
  if (st != dnnl_success) {
    dnnl_primitive_attr_destroy(attr);
    return dn_fail(l, "dnnl_primitive_attr_set_post_ops", st);
  }
  *attr_out = attr;
  return MB_STATUS_OK;
}

/* primitive_desc_create for op_desc with attributes (post_ops and qa may
 * be NULL). Returns the dnnl status: callers try alternatives on failure. */
static dnnl_status_t pd_try_q(lctx *l, const_dnnl_op_desc_t op_desc,
                              const_dnnl_post_ops_t post_ops,
                              const dn_qattr *qa,
                              dnnl_primitive_desc_t *pd_out) {
  dnnl_primitive_attr_t attr = NULL;
  mb_error save = *l->err;
  *pd_out = NULL;
  if (attr_new(l, post_ops, qa, &attr)) {
    *l->err = save;
    return dnnl_out_of_memory;
  }
  dnnl_status_t st =
      dnnl_primitive_desc_create(pd_out, op_desc, attr, l->s->engine, NULL);
  dnnl_primitive_attr_destroy(attr);
  if (st != dnnl_success)
    *pd_out = NULL;
  return st;
}

static dnnl_status_t pd_try(lctx *l, const_dnnl_op_desc_t op_desc,
                            const_dnnl_post_ops_t post_ops,
                            dnnl_primitive_desc_t *pd_out) {
  return pd_try_q(l, op_desc, post_ops, NULL, pd_out);
}

/* Is pd oneDNN's reference (naive C++) implementation? */
static bool pd_is_ref(const_dnnl_primitive_desc_t pd) {
  const char *impl = NULL;
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) !=
          dnnl_success ||
      !impl)
    return false;
  return strncmp(impl, "ref", 3) == 0;
}

/* After a successful attempt: keep *pd when it is an optimised
 * implementation or `last` is set; otherwise drop it so that the caller
 * tries its next, usually cheaper-looking but faster, alternative (fewer
 * post-ops, a plain layout). A reference matmul with a broadcast binary
 * post-op runs 100x slower than the optimised one without it. */
static bool pd_accept(dnnl_primitive_desc_t *pd, bool last) {
  if (!*pd)
    return false;
  if (last || !pd_is_ref(*pd))
    return true;
  dnnl_primitive_desc_destroy(*pd);
  *pd = NULL;
  return false;
}

static const dnnl_memory_desc_t *pd_md(const_dnnl_primitive_desc_t pd,
                                       dnnl_query_t what) {
  return dnnl_primitive_desc_query_md(pd, what, 0);
}

static int64_t md_numel(const dnnl_memory_desc_t *md) {
  return md ? dims_numel(md->ndims, md->dims) : 0;
}

/* Rough work of a primitive: multiply-adds for convolution and matmul,
 * elements touched for the others. */
static double pd_work(const_dnnl_primitive_desc_t pd) {
  dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
  const dnnl_memory_desc_t *dst = pd_md(pd, dnnl_query_dst_md);
  const dnnl_memory_desc_t *src = pd_md(pd, dnnl_query_src_md);
  const dnnl_memory_desc_t *w = pd_md(pd, dnnl_query_weights_md);
  double out = (double)md_numel(dst), in = (double)md_numel(src);
  dnnl_primitive_desc_query(pd, dnnl_query_primitive_kind, 0, &kind);
  if (kind == dnnl_convolution && dst && w && dst->dims[1] > 0)
    return out * (double)md_numel(w) / (double)dst->dims[1];
  if (kind == dnnl_matmul && w && w->ndims >= 2)
    return out * (double)w->dims[w->ndims - 2];
  return MB_MAX(out, in);
}

/* Below this much work a primitive runs on one thread: waking a second
 * OpenMP thread costs more than it saves (tiny transformers ran 1.6x
 * slower on 2 threads than on 1). */
#define DN_PARALLEL_MIN_WORK ((double)(1 << 16))

/* Creates the primitive of pd and appends it as a step with args (and the
 * shared scratchpad when it needs one). pd stays the caller's. */
static mb_status emit(lctx *l, const_dnnl_primitive_desc_t pd, int n_args,
                      const dnnl_exec_arg_t *args) {
  dn_segment *s = l->s;
  dnnl_primitive_t prim = NULL;
  dnnl_memory_t scratch = NULL;
  mb_status status;
  if (n_args + 1 > DN_MAX_ARGS)
    return internal(l, "too many primitive arguments");
  if (!grow((void **)&s->steps, &s->cap_steps, s->n_steps, sizeof *s->steps))
    return oom(l);
  const dnnl_memory_desc_t *smd = pd_md(pd, dnnl_query_scratchpad_md);
  size_t ssize = smd ? dnnl_memory_desc_get_size(smd) : 0;
  if (ssize > 0) {
    if (s->scratch_buf < 0 &&
        (s->scratch_buf = buf_new(l, DN_BUF_SCRATCH, -1, 0)) < 0)
      return oom(l);
    dn_buffer *b = &s->bufs[s->scratch_buf];
    b->size = MB_MAX(b->size, ssize);
    if ((status = mem_new(l, smd, s->scratch_buf, &scratch)))
      return status;
  }
  DN_TRY(l, dnnl_primitive_create(&prim, pd));
  dn_step *step = &s->steps[s->n_steps++];
  memset(step, 0, sizeof *step);
  step->kind = DN_STEP_PRIMITIVE;
  step->prim = prim;
  step->prof = l->prof;
  step->threads = pd_work(pd) < DN_PARALLEL_MIN_WORK ? 1 : s->threads;
  memcpy(step->args, args, (size_t)n_args * sizeof *args);
  step->n_args = n_args;
  if (scratch)
    step->args[step->n_args++] =
        (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, scratch};
  return MB_STATUS_OK;
}

/* A reorder step src -> dst. inserted: the engine's own layout or type
 * change, counted as "reorder" in profiles; else the work of the node
 * being lowered (Transpose, Slice, Split). */
static mb_status emit_reorder_as(lctx *l, bool inserted, dnnl_memory_t src,
                                 const dnnl_memory_desc_t *src_md,
                                 dnnl_memory_t dst,
                                 const dnnl_memory_desc_t *dst_md) {
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_attr_t attr = NULL;
  mb_status status;
  if ((status = attr_new(l, NULL, NULL, &attr)))
    return status;
  dnnl_status_t st = dnnl_reorder_primitive_desc_create(
      &pd, src_md, l->s->engine, dst_md, l->s->engine, attr);
  dnnl_primitive_attr_destroy(attr);
  if (st != dnnl_success)
    return dn_fail(l, "dnnl_reorder_primitive_desc_create", st);
  int prof = l->prof;
  if (inserted)
    l->prof = l->prof_reorder;
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
  status = emit(l, pd, 2, args);
  l->prof = prof;
  dnnl_primitive_desc_destroy(pd);
  return status;
}

static mb_status emit_reorder(lctx *l, dnnl_memory_t src,
                              const dnnl_memory_desc_t *src_md,
                              dnnl_memory_t dst,
                              const dnnl_memory_desc_t *dst_md) {
  return emit_reorder_as(l, true, src, src_md, dst, dst_md);
}

/* Reorders plain float32 `data` (described by src_md) into a new constant
 * buffer laid out as want, at compile time; or borrows data when want
 * describes it already. data: must outlive the segment when borrowed
 * (graph constants do); take: data is mb__aligned_alloc'ed and becomes the
 * segment's (also on failure). */
static mb_status const_memory(lctx *l, const dnnl_memory_desc_t *src_md,
                              const void *data, bool take,
                              const dnnl_memory_desc_t *want,
                              dnnl_memory_t *mem_out, int *buf_out) {
  dn_segment *s = l->s;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_t prim = NULL;
  dnnl_memory_t src = NULL;
  mb_status status = MB_STATUS_OK;
  int b;
  if (md_same(src_md, want)) {
    if ((b = buf_new(l, DN_BUF_CONST, -1, 0)) < 0) {
      if (take)
        mb__aligned_free((void *)data);
      return oom(l);
    }
    s->bufs[b].data = (void *)data;
    s->bufs[b].owned = take;
    if (buf_out)
      *buf_out = b;
    return mem_new(l, want, b, mem_out);
  }
  size_t size = dnnl_memory_desc_get_size(want);
  if ((b = buf_new(l, DN_BUF_CONST, -1, size)) < 0 ||
      !(s->bufs[b].data = mb__aligned_alloc(MB_MAX(size, 1)))) {
    if (take)
      mb__aligned_free((void *)data);
    return oom(l);
  }
  s->bufs[b].owned = true;
  memset(s->bufs[b].data, 0, size);
  if (buf_out)
    *buf_out = b;
  DN_GOTO(l, dnnl_memory_create(&src, src_md, s->engine, (void *)data));
  MB_TRY_GOTO(mem_new(l, want, b, mem_out));
  DN_GOTO(l, dnnl_reorder_primitive_desc_create(&pd, src_md, s->engine, want,
                                                s->engine, NULL));
  DN_GOTO(l, dnnl_primitive_create(&prim, pd));
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, *mem_out}};
  DN_GOTO(l, dnnl_primitive_execute(prim, s->stream, 2, args));
  DN_GOTO(l, dnnl_stream_wait(s->stream));
done:
  if (prim)
    dnnl_primitive_destroy(prim);
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (src)
    dnnl_memory_destroy(src);
  if (take)
    mb__aligned_free((void *)data);
  return status;
}

/* ---- values ------------------------------------------------------------- */

static void value_dims(lctx *l, int v, int *rank, int64_t *dims) {
  if (!value_shape(l->eg, v, rank, dims, NULL))
    *rank = 0;
  if (*rank == 0) {
    *rank = 1;
    dims[0] = 1;
  }
}

static mb_status rep_add(lctx *l, int v, const dnnl_memory_desc_t *md,
                         dnnl_memory_t mem, int buf, dn_rep **out) {
  dn_val *x = &l->vals[v];
  int i = x->n_reps < DN_MAX_REPS ? x->n_reps++ : DN_MAX_REPS - 1;
  x->rep[i].md = *md;
  x->rep[i].mem = mem;
  x->rep[i].buf = buf;
  if (out)
    *out = &x->rep[i];
  return MB_STATUS_OK;
}

/* The first representation of a constant: its float32 data, plain. */
static mb_status const_rep(lctx *l, int v) {
  const mb_tensor *k = constant_of(l->eg, v);
  dnnl_memory_desc_t md;
  dnnl_memory_t mem;
  int rank;
  int64_t dims[MB_MAX_RANK];
  mb_status status;
  if (!k || k->dtype != MB_DTYPE_FLOAT)
    return internal(l, "a value is read before it is computed");
  value_dims(l, v, &rank, dims);
  DN_TRY(l, md_plain(&md, rank, dims, dnnl_f32));
  int buf;
  if ((status = const_memory(l, &md, k->data, false, &md, &mem, &buf)))
    return status;
  return rep_add(l, v, &md, mem, buf, NULL);
}

/* A new buffer-backed memory for value v laid out as md: the caller's
 * output tensor when v is a segment output and md is its plain float32
 * form, else an internal buffer kept until v's last reader. */
static mb_status value_define(lctx *l, int v, const dnnl_memory_desc_t *md,
                              dn_rep **out) {
  dn_val *x = &l->vals[v];
  dnnl_memory_t mem;
  mb_status status;
  int rank, buf = -1;
  int64_t dims[MB_MAX_RANK];
  value_dims(l, v, &rank, dims);
  if (x->out_slot >= 0 && !x->out_done && md->data_type == dnnl_f32 &&
      md_is_plain(md) && dims_equal(md->ndims, md->dims, rank, dims)) {
    for (int i = 0; i < l->s->n_bufs && buf < 0; i++)
      if (l->s->bufs[i].kind == DN_BUF_OUTPUT &&
          l->s->bufs[i].slot == x->out_slot)
        buf = i;
    x->out_done = buf >= 0;
  }
  if (buf < 0 &&
      (buf = buf_take(l, dnnl_memory_desc_get_size(md), x->last_use)) < 0)
    return oom(l);
  if ((status = mem_new(l, md, buf, &mem)))
    return status;
  return rep_add(l, v, md, mem, buf, out);
}

/* Value v as a view of buffer buf (a reshape, or an in-place result). */
static mb_status value_alias(lctx *l, int v, const dnnl_memory_desc_t *md,
                             int buf, dn_rep **out) {
  dnnl_memory_t mem;
  mb_status status;
  dn_buffer *b = &l->s->bufs[buf];
  if (b->kind == DN_BUF_INTERNAL)
    b->busy_until = MB_MAX(b->busy_until, l->vals[v].last_use);
  if ((status = mem_new(l, md, buf, &mem)))
    return status;
  return rep_add(l, v, md, mem, buf, out);
}

typedef enum dn_want {
  DN_WANT_DTYPE, /* any layout, this data type */
  DN_WANT_PLAIN, /* plain layout, this data type */
  DN_WANT_EXACT, /* exactly this md */
} dn_want;

static bool rep_fits(const dn_rep *r, dn_want want, dnnl_data_type_t dt,
                     const dnnl_memory_desc_t *md) {
  switch (want) {
  case DN_WANT_DTYPE:
    return r->md.data_type == dt;
  case DN_WANT_PLAIN:
    return r->md.data_type == dt && md_is_plain(&r->md);
  case DN_WANT_EXACT:
    return md_same(&r->md, md);
  }
  return false;
}

/* Value v in the wanted form, reordered (once, then cached) when it has
 * none that fits; constants are converted at compile time. *out: borrowed
 * from l until the next value_get of v. */
static mb_status value_get(lctx *l, int v, dn_want want, dnnl_data_type_t dt,
                           const dnnl_memory_desc_t *exact, dn_rep **out) {
  dn_val *x = &l->vals[v];
  dnnl_memory_desc_t md;
  dnnl_memory_t mem;
  mb_status status;
  int rank;
  int64_t dims[MB_MAX_RANK];
  if (x->n_reps == 0 && (status = const_rep(l, v)))
    return status;
  for (int i = 0; i < x->n_reps; i++) {
    if (rep_fits(&x->rep[i], want, dt, exact)) {
      *out = &x->rep[i];
      return MB_STATUS_OK;
    }
  }
  value_dims(l, v, &rank, dims);
  if (want == DN_WANT_EXACT) {
    md = *exact;
  } else if (want == DN_WANT_DTYPE && !md_is_plain(&x->rep[0].md)) {
    md = x->rep[0].md; /* the same blocking, another element type */
    md.data_type = dt;
  } else {
    DN_TRY(l, md_plain(&md, rank, dims, dt));
  }
  const dn_rep *src = &x->rep[0];
  if (constant_of(l->eg, v)) {
    int cbuf;
    if ((status = const_memory(l, &src->md, constant_of(l->eg, v)->data, false,
                               &md, &mem, &cbuf)))
      return status;
    return rep_add(l, v, &md, mem, cbuf, out);
  }
  int buf = buf_take(l, dnnl_memory_desc_get_size(&md), x->last_use);
  if (buf < 0)
    return oom(l);
  if ((status = mem_new(l, &md, buf, &mem)) ||
      (status = emit_reorder(l, src->mem, &src->md, mem, &md)))
    return status;
  return rep_add(l, v, &md, mem, buf, out);
}

/* Can a primitive at the current position write over r (in place)? Only
 * an internal buffer none of whose values is read later, and not the
 * buffer of another operand of the same primitive (`other`, may be -1). */
static bool can_overwrite(lctx *l, const dn_rep *r, int other_buf) {
  const dn_buffer *b = &l->s->bufs[r->buf];
  return b->kind == DN_BUF_INTERNAL && b->busy_until <= l->pos &&
         r->buf != other_buf;
}

/* Output value v, computed from src in place when src dies here, else
 * into a new memory of the same md. */
static mb_status value_define_like(lctx *l, int v, const dn_rep *src,
                                   int other_buf, dn_rep **out) {
  dn_val *x = &l->vals[v];
  if (can_overwrite(l, src, other_buf) &&
      !(x->out_slot >= 0 && src->md.data_type == dnnl_f32 &&
        md_is_plain(&src->md)))
    return value_alias(l, v, &src->md, src->buf, out);
  dnnl_memory_desc_t md = src->md;
  return value_define(l, v, &md, out);
}

/* A segment output computed by the node just lowered and not written into
 * the caller's tensor directly: reorder it there (plain float32) now. */
static mb_status finish_output(lctx *l, int v) {
  dn_val *x = &l->vals[v];
  dnnl_memory_desc_t md;
  dnnl_memory_t mem;
  mb_status status;
  int rank, buf = -1;
  int64_t dims[MB_MAX_RANK];
  if (v < 0 || x->out_slot < 0 || x->out_done || x->n_reps == 0)
    return MB_STATUS_OK;
  for (int i = 0; i < l->s->n_bufs && buf < 0; i++)
    if (l->s->bufs[i].kind == DN_BUF_OUTPUT &&
        l->s->bufs[i].slot == x->out_slot)
      buf = i;
  if (buf < 0)
    return internal(l, "segment output without a buffer");
  value_dims(l, v, &rank, dims);
  DN_TRY(l, md_plain(&md, rank, dims, dnnl_f32));
  if ((status = mem_new(l, &md, buf, &mem)) ||
      (status = emit_reorder(l, x->rep[0].mem, &x->rep[0].md, mem, &md)))
    return status;
  x->out_done = true;
  return MB_STATUS_OK;
}

/* A view of r with another md of the same bytes (rank padding, 2-D
 * flattening). */
static mb_status rep_view(lctx *l, const dn_rep *r,
                          const dnnl_memory_desc_t *md, dnnl_memory_t *out) {
  return mem_new(l, md, r->buf, out);
}

/* ---- int8 --------------------------------------------------------------- */

/* oneDNN 2.x adds an int8 primitive's bias to the int32 accumulator before
 * the output scales (dst = oscale * (acc + bias)), so a float bias goes in
 * divided by the output scale of its channel. (3.x changed this.) */
#define DN_INT8_BIAS_BEFORE_SCALES 1

/* The calibration entries that make a Conv, Gemm or MatMul reading value
 * x with constant weight w (of `channels` output channels along `axis` of
 * w as stored) run in int8: x's activation range and w's int8 symmetric
 * scales. False (fp32 then) for no entry or a form not taken here. */
static bool q_entries(lctx *l, int x, int w, int axis, int64_t channels,
                      const mb_quant_param **xq, const mb_quant_param **wq) {
  if (!l->quant || x < 0 || w < 0 || constant_of(l->eg, x))
    return false;
  const mb_quant_param *a =
      mb__quant_params_find(l->quant, l->g->values[x].name);
  const mb_quant_param *b =
      mb__quant_params_find(l->quant, l->g->values[w].name);
  if (!a || !b || a->kind != MB_QUANT_KIND_ACTIVATION ||
      b->kind != MB_QUANT_KIND_WEIGHT ||
      (a->dtype != MB_DTYPE_UINT8 && a->dtype != MB_DTYPE_INT8) ||
      b->dtype != MB_DTYPE_INT8 || a->channels != 1 || !(a->scales[0] > 0) ||
      (b->channels != 1 && (b->channels != channels || b->axis != axis)))
    return false;
  for (int64_t c = 0; c < b->channels; c++)
    if (!(b->scales[c] > 0) || b->zero_points[c] != 0)
      return false;
  *xq = a;
  *wq = b;
  return true;
}

static dnnl_data_type_t q_dt(const mb_quant_param *xq) {
  return xq->dtype == MB_DTYPE_UINT8 ? dnnl_u8 : dnnl_s8;
}

/* w (float32) as int8 with wq's scales along `axis`: clamp(round(w /
 * scale), -127, 127), as the static quantiser stores it. Aligned; NULL on
 * OOM. */
static int8_t *q_weights(const mb_tensor *w, const mb_quant_param *wq,
                         int axis) {
  int64_t inner = 1, ch = wq->channels > 1 ? w->dims[axis] : 1;
  for (int d = axis + 1; d < w->rank; d++)
    inner *= w->dims[d];
  int8_t *q = mb__aligned_alloc((size_t)MB_MAX(w->numel, 1));
  const float *x = w->data;
  for (int64_t i = 0; q && i < w->numel; i++) {
    float v = nearbyintf(x[i] / wq->scales[ch > 1 ? (i / inner) % ch : 0]);
    q[i] = (int8_t)(v < -127.0f ? -127 : v > 127.0f ? 127 : v);
  }
  return q;
}

/* Output scales x_scale * w_scale[c] (times alpha): one per output
 * channel, or one. */
static float *q_out_scales(const mb_quant_param *xq, const mb_quant_param *wq,
                           float alpha) {
  float *o = malloc((size_t)wq->channels * sizeof *o);
  for (int64_t c = 0; o && c < wq->channels; c++)
    o[c] = alpha * xq->scales[0] * wq->scales[c];
  return o;
}

/* A float bias (n values, or NULL) for an int8 primitive with output
 * scales oscales (n_scales of them). Aligned; NULL on OOM. */
static float *q_bias(const float *bias, int64_t n, const float *oscales,
                     int64_t n_scales) {
  float *b = mb__aligned_alloc((size_t)n * sizeof *b);
  for (int64_t c = 0; b && c < n; c++) {
    float v = bias ? bias[c] : 0.0f;
    b[c] = DN_INT8_BIAS_BEFORE_SCALES ? v / oscales[n_scales > 1 ? c : 0] : v;
  }
  return b;
}

/* Value v quantised with xq into the layout `want` (u8 or s8): a reorder
 * with output scale 1 / x_scale and the destination zero point, once,
 * then cached like any representation. */
static mb_status value_get_q(lctx *l, int v, const dnnl_memory_desc_t *want,
                             const mb_quant_param *xq, dn_rep **out) {
  dn_val *x = &l->vals[v];
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_memory_t mem;
  mb_status status;
  for (int i = 0; i < x->n_reps; i++)
    if (md_same(&x->rep[i].md, want)) {
      *out = &x->rep[i];
      return MB_STATUS_OK;
    }
  if (x->n_reps == 0)
    return internal(l, "a value is read before it is computed");
  const dn_rep *src = &x->rep[0];
  float inv = 1.0f / xq->scales[0];
  dn_qattr qa = {
      1, 0, &inv, false, xq->zero_points[0] != 0, xq->zero_points[0]};
  int buf = buf_take(l, dnnl_memory_desc_get_size(want), x->last_use);
  if (buf < 0)
    return oom(l);
  if ((status = mem_new(l, want, buf, &mem)) ||
      (status = attr_new(l, NULL, &qa, &attr)))
    return status;
  dnnl_status_t st = dnnl_reorder_primitive_desc_create(
      &pd, &src->md, l->s->engine, want, l->s->engine, attr);
  dnnl_primitive_attr_destroy(attr);
  if (st != dnnl_success)
    return dn_fail(l, "dnnl_reorder_primitive_desc_create(quantise)", st);
  int prof = l->prof;
  l->prof = l->prof_reorder;
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, src->mem}, {DNNL_ARG_TO, mem}};
  status = emit(l, pd, 2, args);
  l->prof = prof;
  dnnl_primitive_desc_destroy(pd);
  if (status)
    return status;
  return rep_add(l, v, want, mem, buf, out);
}

/* The run-time source zero point argument of an int8 primitive, appended
 * to args when xq has a non-zero one. */
static mb_status q_zp_arg(lctx *l, const mb_quant_param *xq,
                          dnnl_exec_arg_t *args, int *n_args) {
  if (xq->zero_points[0] == 0)
    return MB_STATUS_OK;
  int32_t *zp = mb__aligned_alloc(sizeof *zp);
  dnnl_memory_desc_t md;
  dnnl_memory_t mem;
  int64_t one = 1;
  mb_status status;
  if (!zp)
    return oom(l);
  *zp = xq->zero_points[0];
  DN_TRY(l, md_plain(&md, 1, &one, dnnl_s32));
  if ((status = const_memory(l, &md, zp, true, &md, &mem, NULL)))
    return status;
  args[(*n_args)++] =
      (dnnl_exec_arg_t){DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, mem};
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Lowering: one function per kind of node                                   */
/* ------------------------------------------------------------------------ */

static mb_engine_check lower_check_ctx(lctx *l, const mb_node *n, char *reason,
                                       size_t size) {
  return (mb_engine_check){l->eg, n, l->opset, reason, size};
}

/* supports_node accepted the node, so its parameters read back; when they
 * do not, the graph changed under us. */
static mb_status recheck_failed(lctx *l, const char *reason) {
  char label[160];
  return mb__error(l->err, MB_STATUS_INTERNAL,
                   "onednn: %s: accepted earlier but now: %s",
                   mb__node_label(l->node, label, sizeof label), reason);
}

#define DN_PARAMS(l, n, getter, params)                                        \
  do {                                                                         \
    char reason_[256] = "";                                                    \
    mb_engine_check c_ = lower_check_ctx((l), (n), reason_, sizeof reason_);   \
    if (!getter(&c_, (params)))                                                \
      return recheck_failed((l), reason_);                                     \
  } while (0)

/* ---- eltwise ------------------------------------------------------------ */

/* ops[0..n) applied to value src, giving value dst: the first in place
 * when src dies here, the others in place on the result. A primitive
 * oneDNN cannot run in bf16 runs in float32. */
static mb_status emit_eltwise(lctx *l, int src, int dst, const eltwise_op *ops,
                              int n_ops) {
  dnnl_primitive_desc_t pd = NULL;
  mb_status status = MB_STATUS_OK;
  dn_rep *in, *out = NULL;
  dnnl_data_type_t dt = l->act_dt;
  for (int attempt = 0; attempt < 2; attempt++) {
    dnnl_eltwise_desc_t ed;
    if ((status = value_get(l, src, DN_WANT_DTYPE, dt, NULL, &in)))
      return status;
    DN_TRY(l, dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference,
                                             ops[0].alg, &in->md, ops[0].alpha,
                                             ops[0].beta));
    dnnl_status_t st = pd_try(l, &ed, NULL, &pd);
    bool last = attempt == 1 || dt == dnnl_f32;
    if (st == dnnl_success && pd_accept(&pd, last))
      break;
    if (last)
      return dn_fail(l, "dnnl_primitive_desc_create(eltwise)", st);
    dt = dnnl_f32;
  }
  dn_rep in_copy = *in;
  MB_TRY_GOTO(value_define_like(l, dst, &in_copy, -1, &out));
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, in_copy.mem},
                             {DNNL_ARG_DST, out->mem}};
  MB_TRY_GOTO(emit(l, pd, 2, args));
  for (int i = 1; i < n_ops; i++) {
    dnnl_eltwise_desc_t ed;
    dnnl_primitive_desc_destroy(pd);
    pd = NULL;
    DN_GOTO(l, dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference,
                                              ops[i].alg, &out->md,
                                              ops[i].alpha, ops[i].beta));
    DN_GOTO(l, pd_try(l, &ed, NULL, &pd));
    dnnl_exec_arg_t a2[2] = {{DNNL_ARG_SRC, out->mem},
                             {DNNL_ARG_DST, out->mem}};
    MB_TRY_GOTO(emit(l, pd, 2, a2));
  }
done:
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  return status;
}

static mb_status lower_unary(lctx *l, const mb_node *n) {
  eltwise_op ops[2];
  int n_ops = 0;
  {
    char reason[256] = "";
    mb_engine_check c = lower_check_ctx(l, n, reason, sizeof reason);
    if (!(n_ops = unary_get(&c, ops)))
      return recheck_failed(l, reason);
  }
  return emit_eltwise(l, n->inputs[0], n->outputs[0], ops, n_ops);
}

/* Erf: the engine's own loop over plain float32 (see check_erf). */
static mb_status lower_erf(lctx *l, const mb_node *n) {
  dn_segment *s = l->s;
  dn_rep *in, *out;
  mb_status status;
  if ((status = value_get(l, n->inputs[0], DN_WANT_PLAIN, dnnl_f32, NULL, &in)))
    return status;
  dn_rep in_copy = *in;
  if ((status = value_define_like(l, n->outputs[0], &in_copy, -1, &out)))
    return status;
  if (!grow((void **)&s->steps, &s->cap_steps, s->n_steps, sizeof *s->steps))
    return oom(l);
  dn_step *step = &s->steps[s->n_steps++];
  memset(step, 0, sizeof *step);
  step->kind = DN_STEP_ERF;
  step->threads = 1;
  step->src = in_copy.mem;
  step->dst = out->mem;
  step->count = dnnl_memory_desc_get_size(&out->md) / sizeof(float);
  step->prof = l->prof;
  return MB_STATUS_OK;
}

/* ---- binary ------------------------------------------------------------- */

/* Plain view of rep r with dims right-aligned into `rank` dims. */
static mb_status rep_view_padded(lctx *l, const dn_rep *r, int rank,
                                 dnnl_memory_desc_t *md, dnnl_memory_t *mem) {
  int64_t dims[DNNL_MAX_NDIMS];
  dims_pad(r->md.ndims, r->md.dims, rank, dims);
  DN_TRY(l, md_plain(md, rank, dims, r->md.data_type));
  if (md_same(md, &r->md) && md->ndims == r->md.ndims) {
    *mem = r->mem;
    return MB_STATUS_OK;
  }
  return rep_view(l, r, md, mem);
}

/* Constant k broadcast to (rank, dims), plain float32, in a new
 * mb__aligned_alloc'ed array (NULL when out of memory). */
static float *broadcast_const(const mb_tensor *k, int rank,
                              const int64_t *dims) {
  int64_t kd[DNNL_MAX_NDIMS], ks[DNNL_MAX_NDIMS], idx[DNNL_MAX_NDIMS] = {0};
  int64_t n = dims_numel(rank, dims), stride = 1;
  float *out = mb__aligned_alloc((size_t)MB_MAX(n, 1) * sizeof *out);
  const float *src = k->data;
  if (!out)
    return NULL;
  dims_pad(k->rank, k->dims, rank, kd);
  for (int i = rank - 1; i >= 0; i--) {
    ks[i] = kd[i] == 1 ? 0 : stride;
    stride *= kd[i];
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t off = 0;
    for (int d = 0; d < rank; d++)
      off += idx[d] * ks[d];
    out[i] = src[off];
    for (int d = rank - 1; d >= 0 && ++idx[d] == dims[d]; d--)
      idx[d] = 0;
  }
  return out;
}

static mb_status lower_binary(lctx *l, const mb_node *n) {
  binary_params p;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_post_ops_t po = NULL;
  mb_status status = MB_STATUS_OK;
  dn_rep *r0 = NULL, *r1 = NULL, *out = NULL;
  dnnl_memory_desc_t md1;
  dnnl_memory_t mem1 = NULL;
  dn_rep expanded; /* src0 broadcast at compile time (p.expand0) */
  DN_PARAMS(l, n, binary_get, &p);
  if (p.n_elt)
    return emit_eltwise(l, n->inputs[p.elt_src], n->outputs[0], &p.elt, 1);
  int v0 = n->inputs[p.src0], v1 = n->inputs[p.src1];
  int rank = l->eg->shapes[n->outputs[0]].rank;
  if (rank == 0)
    rank = 1;
  if (p.negate) {
    DN_GOTO(l, dnnl_post_ops_create(&po));
    DN_GOTO(l, dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear,
                                            -1.0f, 0.0f));
  }
  /* First src0 in whatever layout it has; then both plain; then float32. */
  for (int attempt = 0; attempt < 3 && !pd; attempt++) {
    dnnl_data_type_t dt = attempt == 2 ? dnnl_f32 : l->act_dt;
    dnnl_binary_desc_t bd;
    dn_rep same;
    if (p.expand0) {
      const mb_shape_info *y = &l->eg->shapes[n->outputs[0]];
      dnnl_memory_desc_t f32_md;
      float *data = broadcast_const(constant_of(l->eg, v0), rank, y->dims);
      if (!data) {
        status = oom(l);
        goto done;
      }
      DN_GOTO(l, md_plain(&f32_md, rank, y->dims, dnnl_f32));
      DN_GOTO(l, md_plain(&expanded.md, rank, y->dims, dt));
      MB_TRY_GOTO(const_memory(l, &f32_md, data, true, &expanded.md,
                               &expanded.mem, &expanded.buf));
      r0 = &expanded;
    } else {
      MB_TRY_GOTO(value_get(l, v0, attempt ? DN_WANT_PLAIN : DN_WANT_DTYPE, dt,
                            NULL, &r0));
    }
    same = *r0;
    int v1_rank;
    int64_t v1_dims[MB_MAX_RANK];
    value_dims(l, v1, &v1_rank, v1_dims);
    if (dims_equal(v1_rank, v1_dims, same.md.ndims, same.md.dims)) {
      MB_TRY_GOTO(value_get(l, v1, DN_WANT_EXACT, dt, &same.md, &r1));
      md1 = r1->md;
      mem1 = r1->mem;
    } else {
      MB_TRY_GOTO(value_get(l, v1, DN_WANT_PLAIN, dt, NULL, &r1));
      MB_TRY_GOTO(rep_view_padded(l, r1, rank, &md1, &mem1));
    }
    /* value_get of v1 may have moved v0's reps: take it again. */
    if (!p.expand0)
      MB_TRY_GOTO(value_get(l, v0, DN_WANT_EXACT, dt, &same.md, &r0));
    DN_GOTO(l, dnnl_binary_desc_init(&bd, p.alg, &r0->md, &md1, &r0->md));
    dnnl_status_t st = pd_try(l, &bd, po, &pd);
    if (st == dnnl_success)
      pd_accept(&pd, attempt == 2);
    else if (attempt == 2) {
      status = dn_fail(l, "dnnl_primitive_desc_create(binary)", st);
      goto done;
    }
  }
  dn_rep in0 = *r0;
  int buf1 = r1->buf;
  MB_TRY_GOTO(value_define_like(l, n->outputs[0], &in0, buf1, &out));
  dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC_0, in0.mem},
                             {DNNL_ARG_SRC_1, mem1},
                             {DNNL_ARG_DST, out->mem}};
  MB_TRY_GOTO(emit(l, pd, 3, args));
done:
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (po)
    dnnl_post_ops_destroy(po);
  return status;
}

/* ---- post-ops of a fused group ------------------------------------------ */

/* Builds the oneDNN post-op list of posts[0..k) (BIAS links are the head's
 * own argument and skipped) for a destination of `rank` dims. Binary
 * operands are described in bin_md[i] (i: index in posts) without being
 * materialised yet. */
static mb_status posts_build(lctx *l, const dn_post *posts, int k, int rank,
                             dnnl_post_ops_t *po_out,
                             dnnl_memory_desc_t *bin_md) {
  dnnl_post_ops_t po = NULL;
  mb_status status = MB_STATUS_OK;
  *po_out = NULL;
  DN_TRY(l, dnnl_post_ops_create(&po));
  for (int i = 0; i < k; i++) {
    const dn_post *p = &posts[i];
    switch (p->kind) {
    case DN_POST_ELTWISE:
      for (int j = 0; j < p->n_ops; j++)
        DN_GOTO(l,
                dnnl_post_ops_append_eltwise(po, 1.0f, p->ops[j].alg,
                                             p->ops[j].alpha, p->ops[j].beta));
      break;
    case DN_POST_SUM:
      DN_GOTO(l, dnnl_post_ops_append_sum(po, 1.0f));
      break;
    case DN_POST_BINARY: {
      int r;
      int64_t dims[MB_MAX_RANK], padded[DNNL_MAX_NDIMS];
      value_dims(l, p->operand, &r, dims);
      dims_pad(r, dims, rank, padded);
      DN_GOTO(l, md_plain(&bin_md[i], rank, padded, dnnl_f32));
      DN_GOTO(l, dnnl_post_ops_append_binary(po, p->alg, &bin_md[i]));
      break;
    }
    case DN_POST_BIAS:
      break;
    }
  }
  *po_out = po;
  return MB_STATUS_OK;
done:
  dnnl_post_ops_destroy(po);
  return status;
}

/* Appends the runtime arguments of the binary post-ops among posts[0..k)
 * to args (materialising their operands as plain float32). */
static mb_status posts_args(lctx *l, const dn_post *posts, int k,
                            const dnnl_memory_desc_t *bin_md,
                            dnnl_exec_arg_t *args, int *n_args) {
  int index = 0;
  mb_status status;
  for (int i = 0; i < k; i++) {
    const dn_post *p = &posts[i];
    if (p->kind == DN_POST_BINARY) {
      dn_rep *r;
      dnnl_memory_t mem;
      if ((status =
               value_get(l, p->operand, DN_WANT_PLAIN, dnnl_f32, NULL, &r)) ||
          (status = rep_view(l, r, &bin_md[i], &mem)))
        return status;
      args[(*n_args)++] = (dnnl_exec_arg_t){
          DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1, mem};
    }
    index += p->kind == DN_POST_ELTWISE ? p->n_ops
             : p->kind == DN_POST_BIAS  ? 0
                                        : 1;
  }
  return MB_STATUS_OK;
}

/* The destination of a head whose posts[0..k) yield value `final`: with a
 * sum, the summand is first put into the destination, in place when it
 * dies here (src_buf: the head's input buffer, never overwritten). */
static mb_status head_dst(lctx *l, const dn_post *posts, int k, int final,
                          const dnnl_memory_desc_t *dst_md, int src_buf,
                          dn_rep **out) {
  int sum = -1;
  mb_status status;
  for (int i = 0; i < k; i++)
    if (posts[i].kind == DN_POST_SUM)
      sum = posts[i].operand;
  if (sum < 0)
    return value_define(l, final, dst_md, out);
  dn_val *x = &l->vals[sum];
  if (x->n_reps == 0 && (status = const_rep(l, sum)))
    return status;
  for (int i = 0; i < x->n_reps; i++) {
    dn_rep r = x->rep[i];
    if (md_same(&r.md, dst_md) && can_overwrite(l, &r, src_buf))
      return value_alias(l, final, dst_md, r.buf, out);
  }
  dn_rep src = x->rep[0];
  if ((status = value_define(l, final, dst_md, out)))
    return status;
  return emit_reorder(l, src.mem, &src.md, (*out)->mem, &(*out)->md);
}

/* The value a head with posts[0..k) yields. */
static int head_final(const dn_post *posts, int k, int head_out) {
  return k > 0 ? posts[k - 1].out_value : head_out;
}

static mb_status lower_node(lctx *l, int pos);

/* Lowers the nodes of posts[k..n) one by one (oneDNN refused them as
 * post-ops). */
static mb_status lower_rest(lctx *l, const dn_post *posts, int k, int n) {
  mb_status status;
  for (int i = k; i < n; i++)
    for (int j = 0; j < posts[i].n_nodes; j++)
      if ((status = lower_node(l, posts[i].nodes[j])))
        return status;
  return MB_STATUS_OK;
}

/* ---- Conv --------------------------------------------------------------- */

static void to_dnnl_dims(int n, const int64_t *in, int64_t add,
                         dnnl_dims_t out) {
  for (int i = 0; i < n; i++)
    out[i] = in[i] + add;
}

static mb_status lower_conv(lctx *l, const dn_group *g) {
  const mb_node *n = node_at(l, g->head);
  conv_params p;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_post_ops_t po = NULL;
  mb_status status = MB_STATUS_OK;
  dnnl_memory_desc_t src_md, w_md, b_md, dst_md, w_user, b_user;
  dnnl_memory_desc_t bin_md[DN_MAX_POST];
  dnnl_dims_t strides, dil, pl, pr;
  int64_t x[MB_MAX_RANK], wd[MB_MAX_RANK + 1];
  int rank, k = g->n_post, wr;
  const mb_quant_param *xq = NULL, *wq = NULL;
  float *oscales = NULL;
  dn_qattr qa;
  DN_PARAMS(l, n, conv_get, &p);
  const mb_tensor *w = constant_of(l->eg, n->inputs[1]);
  const mb_tensor *bias = p.bias ? constant_of(l->eg, n->inputs[2]) : NULL;
  const mb_shape_info *y = &l->eg->shapes[n->outputs[0]];
  dnnl_data_type_t dt = l->act_dt;
  value_dims(l, n->inputs[0], &rank, x);
  if (p.groups > 1) {
    wr = rank + 1;
    wd[0] = p.groups;
    wd[1] = p.c_out / p.groups;
    wd[2] = p.c_in / p.groups;
    memcpy(wd + 3, w->dims + 2, (size_t)p.w.nsp * sizeof *wd);
  } else {
    wr = rank;
    memcpy(wd, w->dims, (size_t)rank * sizeof *wd);
  }
  to_dnnl_dims(p.w.nsp, p.w.stride, 0, strides);
  to_dnnl_dims(p.w.nsp, p.w.dilation, -1, dil);
  to_dnnl_dims(p.w.nsp, p.w.pad_l, 0, pl);
  to_dnnl_dims(p.w.nsp, p.w.pad_r, 0, pr);
  /* int8 first when calibrated (u8/s8 source, s8 weights per output
   * channel, float32 destination: dequantised by the output scales, so
   * post-ops and everything after stay float), else or on refusal fp32. */
  bool q = q_entries(l, n->inputs[0], n->inputs[1], 0, p.c_out, &xq, &wq);
  if (q) {
    if (!(oscales = q_out_scales(xq, wq, 1.0f)))
      return oom(l);
    qa = (dn_qattr){(int)wq->channels,
                    wq->channels > 1 ? 1 << 1 : 0,
                    oscales,
                    xq->zero_points[0] != 0,
                    false,
                    0};
  }
  DN_GOTO(l, md_plain(&b_md, 1, &p.c_out, dnnl_f32));
  b_user = b_md;
  for (int attempt = q ? 0 : 1; attempt < 2 && !pd; attempt++) {
    bool int8 = attempt == 0;
    DN_GOTO(l, md_any(&src_md, rank, x, int8 ? q_dt(xq) : dt));
    DN_GOTO(l, md_any(&w_md, wr, wd, int8 ? dnnl_s8 : dt));
    DN_GOTO(l, md_any(&dst_md, rank, y->dims, dt));
    DN_GOTO(l, md_plain(&w_user, wr, wd, int8 ? dnnl_s8 : dnnl_f32));
    /* The whole chain as post-ops, else ever shorter prefixes. */
    for (k = g->n_post; k >= 0; k--) {
      dnnl_convolution_desc_t cd;
      MB_TRY_GOTO(posts_build(l, g->post, k, rank, &po, bin_md));
      DN_GOTO(l, dnnl_dilated_convolution_forward_desc_init(
                     &cd, dnnl_forward_inference, dnnl_convolution_direct,
                     &src_md, &w_md, (bias || int8) ? &b_md : NULL, &dst_md,
                     strides, dil, pl, pr));
      dnnl_status_t st = pd_try_q(l, &cd, po, int8 ? &qa : NULL, &pd);
      dnnl_post_ops_destroy(po);
      po = NULL;
      /* int8 never settles for oneDNN's reference kernels: fp32 is
       * faster than those. */
      if (st == dnnl_success && pd_accept(&pd, k == 0 && !int8))
        break;
      if (k == 0 && !int8) {
        status = dn_fail(l, "dnnl_primitive_desc_create(convolution)", st);
        goto done;
      }
    }
    q = int8 && pd;
  }
  {
    dn_rep *src, *out;
    dnnl_memory_t wmem, bmem = NULL;
    dnnl_exec_arg_t args[DN_MAX_ARGS];
    int n_args = 0;
    if (q)
      MB_TRY_GOTO(
          value_get_q(l, n->inputs[0], pd_md(pd, dnnl_query_src_md), xq, &src));
    else
      MB_TRY_GOTO(value_get(l, n->inputs[0], DN_WANT_EXACT, dt,
                            pd_md(pd, dnnl_query_src_md), &src));
    dn_rep in = *src;
    const dnnl_memory_desc_t *bias_md =
        dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1);
    if (q) {
      int8_t *wq8 = q_weights(w, wq, 0);
      float *bq =
          wq8 ? q_bias(bias ? bias->data : NULL, p.c_out, oscales, wq->channels)
              : NULL;
      if (!wq8 || !bq) {
        mb__aligned_free(wq8);
        mb__aligned_free(bq);
        status = oom(l);
        goto done;
      }
      if ((status =
               const_memory(l, &w_user, wq8, true,
                            pd_md(pd, dnnl_query_weights_md), &wmem, NULL))) {
        mb__aligned_free(bq);
        goto done;
      }
      MB_TRY_GOTO(const_memory(l, &b_user, bq, true, bias_md, &bmem, NULL));
    } else {
      MB_TRY_GOTO(const_memory(l, &w_user, w->data, false,
                               pd_md(pd, dnnl_query_weights_md), &wmem, NULL));
      if (bias)
        MB_TRY_GOTO(
            const_memory(l, &b_user, bias->data, false, bias_md, &bmem, NULL));
    }
    int final = head_final(g->post, k, n->outputs[0]);
    MB_TRY_GOTO(head_dst(l, g->post, k, final, pd_md(pd, dnnl_query_dst_md),
                         in.buf, &out));
    args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, in.mem};
    args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, wmem};
    if (bmem)
      args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, bmem};
    args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_DST, out->mem};
    if (q)
      MB_TRY_GOTO(q_zp_arg(l, xq, args, &n_args));
    MB_TRY_GOTO(posts_args(l, g->post, k, bin_md, args, &n_args));
    MB_TRY_GOTO(emit(l, pd, n_args, args));
  }
  MB_TRY_GOTO(lower_rest(l, g->post, k, g->n_post));
done:
  free(oscales);
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (po)
    dnnl_post_ops_destroy(po);
  return status;
}

/* ---- Gemm / MatMul ------------------------------------------------------ */

/* The md of a matmul operand of ONNX dims (orank, odims) stored plain,
 * seen as `rank` dims (leading ones) and transposed in its last two when
 * trans. */
static dnnl_status_t mm_operand_md(dnnl_memory_desc_t *md, int orank,
                                   const int64_t *odims, int rank, bool trans,
                                   dnnl_data_type_t dt) {
  dnnl_dims_t dims, strides;
  int64_t stride = 1, total = dims_numel(orank, odims);
  for (int i = rank - 1; i >= 0; i--) {
    int o = i - (rank - orank);
    dims[i] = o >= 0 ? odims[o] : 1;
    strides[i] = o >= 0 ? stride : total;
    if (o >= 0)
      stride *= MB_MAX(odims[o], 1);
  }
  if (trans) {
    int64_t t = dims[rank - 1];
    dims[rank - 1] = dims[rank - 2];
    dims[rank - 2] = t;
    t = strides[rank - 1];
    strides[rank - 1] = strides[rank - 2];
    strides[rank - 2] = t;
  }
  return dnnl_memory_desc_init_by_strides(md, rank, dims, dt, strides);
}

/* Activation (or constant) operand v as a plain view for matmul. */
static mb_status mm_operand(lctx *l, int v, int rank, bool trans,
                            dnnl_data_type_t dt, dnnl_memory_desc_t *md,
                            dnnl_memory_t *mem, int *buf) {
  dn_rep *r;
  mb_status status;
  int orank;
  int64_t odims[MB_MAX_RANK];
  if ((status = value_get(l, v, DN_WANT_PLAIN, dt, NULL, &r)))
    return status;
  value_dims(l, v, &orank, odims);
  *buf = r->buf;
  DN_TRY(l, mm_operand_md(md, orank, odims, rank, trans, dt));
  if (md_same(md, &r->md) && !trans && orank == rank) {
    *mem = r->mem;
    return MB_STATUS_OK;
  }
  return rep_view(l, r, md, mem);
}

static mb_status lower_mm(lctx *l, const dn_group *g) {
  const mb_node *n = node_at(l, g->head);
  mm_params p;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_post_ops_t po = NULL;
  mb_status status = MB_STATUS_OK;
  dn_post posts[DN_MAX_POST + 2];
  dnnl_memory_desc_t a_md, b_md, b_user, bias_md, dst_md;
  dnnl_memory_desc_t bin_md[DN_MAX_POST + 2];
  float *scaled = NULL, *bias_data = NULL, *oscales = NULL;
  const float *bias_src = NULL;
  int n_fixed = 0, k = 0;
  const mb_quant_param *xq = NULL, *wq = NULL;
  dn_qattr qa;
  DN_PARAMS(l, n, mm_get, &p);
  int a = n->inputs[0], b = n->inputs[1], r = p.rank;
  const mb_tensor *kb = constant_of(l->eg, b);
  dnnl_data_type_t dt = l->act_dt;
  int64_t nn = p.y_dims[r - 1];
  int brank;
  int64_t bdims[MB_MAX_RANK];
  value_dims(l, b, &brank, bdims);
  /* int8 (constant 2-D weights, A not transposed): u8/s8 A, s8 weights
   * per column of the output, float32 out through the output scales
   * (alpha folded into them), so C, bias and post-ops stay float. */
  bool q = kb && brank == 2 && !p.trans_a &&
           q_entries(l, a, b, p.trans_b ? 0 : 1, nn, &xq, &wq);
  if (q) {
    if (!(oscales = q_out_scales(xq, wq, p.alpha)))
      return oom(l);
    qa = (dn_qattr){(int)wq->channels,
                    wq->channels > 1 ? 1 << (r - 1) : 0,
                    oscales,
                    xq->zero_points[0] != 0,
                    false,
                    0};
  }

  /* alpha: folded into constant weights, else a linear post-op. */
  if (p.alpha != 1.0f && kb && !q) {
    if (!(scaled = mb__aligned_alloc((size_t)kb->numel * sizeof *scaled)))
      return oom(l);
    for (int64_t i = 0; i < kb->numel; i++)
      scaled[i] = p.alpha * ((const float *)kb->data)[i];
  } else if (p.alpha != 1.0f && !q) {
    memset(&posts[n_fixed], 0, sizeof posts[0]);
    posts[n_fixed].kind = DN_POST_ELTWISE;
    posts[n_fixed].n_ops = 1;
    posts[n_fixed].ops[0] = (eltwise_op){dnnl_eltwise_linear, p.alpha, 0.0f};
    posts[n_fixed].out_value = n->outputs[0];
    n_fixed++;
  }
  /* C: a bias (applied before the post-ops, so divided by alpha when alpha
   * is a post-op) or a binary post-op (beta == 1 there, see mm_get). */
  if (p.c >= 0) {
    const mb_tensor *kc = constant_of(l->eg, n->inputs[p.c]);
    if (p.c_is_bias) {
      float scale = p.beta / (kb ? 1.0f : p.alpha);
      if (!(bias_data = mb__aligned_alloc((size_t)nn * sizeof *bias_data))) {
        status = oom(l);
        goto done;
      }
      for (int64_t i = 0; i < nn; i++)
        bias_data[i] =
            scale * ((const float *)kc->data)[kc->numel == 1 ? 0 : i];
    } else {
      memset(&posts[n_fixed], 0, sizeof posts[0]);
      posts[n_fixed].kind = DN_POST_BINARY;
      posts[n_fixed].alg = dnnl_binary_add;
      posts[n_fixed].operand = n->inputs[p.c];
      posts[n_fixed].out_value = n->outputs[0];
      n_fixed++;
    }
  }
  memcpy(&posts[n_fixed], g->post, (size_t)g->n_post * sizeof *g->post);
  if (g->n_post > 0 && g->post[0].kind == DN_POST_BIAS)
    bias_src = constant_of(l->eg, g->post[0].operand)->data;
  {
    int64_t bd[DNNL_MAX_NDIMS];
    for (int i = 0; i < r; i++)
      bd[i] = i == r - 1 ? nn : 1;
    DN_GOTO(l, md_plain(&bias_md, r, bd, dnnl_f32));
  }
  DN_GOTO(l, md_plain(&dst_md, r, p.y_dims, dt));
  for (int attempt = q ? 0 : 1; attempt < 2 && !pd; attempt++) {
    bool int8 = attempt == 0;
    dnnl_data_type_t wdt = int8 ? dnnl_s8 : dt;
    DN_GOTO(l, mm_operand_md(&a_md, r, p.a_dims, r, p.trans_a,
                             int8 ? q_dt(xq) : dt));
    if (kb)
      DN_GOTO(l, mm_operand_md(&b_user, brank, bdims, r, p.trans_b,
                               int8 ? dnnl_s8 : dnnl_f32));
    for (k = g->n_post; k >= 0; k--) {
      bool has_bias = bias_data || (k > 0 && bias_src);
      /* Constant weights in the layout oneDNN prefers, else plain. */
      for (int plain = kb ? 0 : 1; plain < 2 && !pd; plain++) {
        dnnl_matmul_desc_t md_desc;
        int64_t wd[DNNL_MAX_NDIMS];
        bool last = k == 0 && plain == 1 && !int8;
        memcpy(wd, b_user.dims, sizeof(int64_t) * (size_t)r);
        if (kb && !plain)
          DN_GOTO(l, md_any(&b_md, r, wd, wdt));
        else if (kb)
          DN_GOTO(l, md_plain(&b_md, r, wd, wdt));
        else
          DN_GOTO(l, mm_operand_md(&b_md, r, p.b_dims, r, p.trans_b, dt));
        MB_TRY_GOTO(posts_build(l, posts, n_fixed + k, r, &po, bin_md));
        DN_GOTO(l, dnnl_matmul_desc_init(&md_desc, &a_md, &b_md,
                                         has_bias ? &bias_md : NULL, &dst_md));
        dnnl_status_t st = pd_try_q(l, &md_desc, po, int8 ? &qa : NULL, &pd);
        dnnl_post_ops_destroy(po);
        po = NULL;
        if (st == dnnl_success)
          pd_accept(&pd, last);
        else if (last) {
          status = dn_fail(l, "dnnl_primitive_desc_create(matmul)", st);
          goto done;
        }
      }
      if (pd)
        break;
    }
    q = int8 && pd;
  }
  {
    dnnl_memory_t amem, bmem, biasmem = NULL;
    dn_rep *out;
    dnnl_exec_arg_t args[DN_MAX_ARGS];
    int n_args = 0, a_buf;
    if (q) {
      /* A quantised (plain, its own dims), seen as the operand view. */
      dn_rep *rq;
      dnnl_memory_desc_t pm;
      int orank;
      int64_t odims[MB_MAX_RANK];
      value_dims(l, a, &orank, odims);
      DN_GOTO(l, md_plain(&pm, orank, odims, q_dt(xq)));
      MB_TRY_GOTO(value_get_q(l, a, &pm, xq, &rq));
      a_buf = rq->buf;
      if (md_same(&a_md, &rq->md))
        amem = rq->mem;
      else
        MB_TRY_GOTO(rep_view(l, rq, &a_md, &amem));
    } else {
      MB_TRY_GOTO(mm_operand(l, a, r, p.trans_a, dt, &a_md, &amem, &a_buf));
    }
    if (q) {
      int8_t *w8 = q_weights(kb, wq, p.trans_b ? 0 : 1);
      if (!w8) {
        status = oom(l);
        goto done;
      }
      MB_TRY_GOTO(const_memory(l, &b_user, w8, true,
                               pd_md(pd, dnnl_query_weights_md), &bmem, NULL));
    } else if (kb) {
      const float *data = scaled ? scaled : kb->data;
      scaled = NULL; /* taken by const_memory */
      MB_TRY_GOTO(const_memory(l, &b_user, data, data != kb->data,
                               pd_md(pd, dnnl_query_weights_md), &bmem, NULL));
    } else {
      int b_buf;
      MB_TRY_GOTO(mm_operand(l, b, r, p.trans_b, dt, &b_md, &bmem, &b_buf));
    }
    if (q && (bias_data || (k > 0 && bias_src))) {
      /* In the accumulator's scale (DN_INT8_BIAS_BEFORE_SCALES). */
      float *data =
          q_bias(bias_data ? bias_data : bias_src, nn, oscales, wq->channels);
      if (!data) {
        status = oom(l);
        goto done;
      }
      MB_TRY_GOTO(
          const_memory(l, &bias_md, data, true, &bias_md, &biasmem, NULL));
    } else if (bias_data) {
      float *data = bias_data;
      bias_data = NULL;
      MB_TRY_GOTO(
          const_memory(l, &bias_md, data, true, &bias_md, &biasmem, NULL));
    } else if (k > 0 && bias_src) {
      MB_TRY_GOTO(
          const_memory(l, &bias_md, bias_src, false, &bias_md, &biasmem, NULL));
    }
    int final = head_final(posts, n_fixed + k, n->outputs[0]);
    MB_TRY_GOTO(head_dst(l, posts, n_fixed + k, final,
                         pd_md(pd, dnnl_query_dst_md), a_buf, &out));
    args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, amem};
    args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, bmem};
    if (biasmem)
      args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, biasmem};
    args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_DST, out->mem};
    if (q)
      MB_TRY_GOTO(q_zp_arg(l, xq, args, &n_args));
    MB_TRY_GOTO(posts_args(l, posts, n_fixed + k, bin_md, args, &n_args));
    MB_TRY_GOTO(emit(l, pd, n_args, args));
  }
  MB_TRY_GOTO(lower_rest(l, g->post, k, g->n_post));
done:
  free(oscales);
  mb__aligned_free(scaled);
  mb__aligned_free(bias_data);
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (po)
    dnnl_post_ops_destroy(po);
  return status;
}

/* ---- pooling and normalizations ----------------------------------------- */

static mb_status lower_pool(lctx *l, const mb_node *n) {
  pool_params p;
  dnnl_primitive_desc_t pd = NULL;
  mb_status status = MB_STATUS_OK;
  dnnl_memory_desc_t dst_md;
  dnnl_dims_t strides, kernel, dil, pl, pr;
  dn_rep *in = NULL, *out;
  DN_PARAMS(l, n, pool_get, &p);
  const mb_shape_info *y = &l->eg->shapes[n->outputs[0]];
  to_dnnl_dims(p.w.nsp, p.w.stride, 0, strides);
  to_dnnl_dims(p.w.nsp, p.w.kernel, 0, kernel);
  to_dnnl_dims(p.w.nsp, p.w.dilation, -1, dil);
  to_dnnl_dims(p.w.nsp, p.w.pad_l, 0, pl);
  to_dnnl_dims(p.w.nsp, p.w.pad_r, 0, pr);
  /* In the input's layout, else plain. */
  for (int attempt = 0; attempt < 2 && !pd; attempt++) {
    dnnl_pooling_v2_desc_t desc;
    MB_TRY_GOTO(value_get(l, n->inputs[0],
                          attempt ? DN_WANT_PLAIN : DN_WANT_DTYPE, l->act_dt,
                          NULL, &in));
    DN_GOTO(l, md_any(&dst_md, y->rank, y->dims, l->act_dt));
    DN_GOTO(l, dnnl_pooling_v2_forward_desc_init(&desc, dnnl_forward_inference,
                                                 p.alg, &in->md, &dst_md,
                                                 strides, kernel, dil, pl, pr));
    dnnl_status_t st = pd_try(l, &desc, NULL, &pd);
    if (st == dnnl_success)
      pd_accept(&pd, attempt == 1);
    else if (attempt == 1) {
      status = dn_fail(l, "dnnl_primitive_desc_create(pooling)", st);
      goto done;
    }
  }
  dnnl_memory_t in_mem = in->mem;
  MB_TRY_GOTO(
      value_define(l, n->outputs[0], pd_md(pd, dnnl_query_dst_md), &out));
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, in_mem}, {DNNL_ARG_DST, out->mem}};
  MB_TRY_GOTO(emit(l, pd, 2, args));
done:
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  return status;
}

static mb_status lower_batchnorm(lctx *l, const mb_node *n) {
  dnnl_primitive_desc_t pd = NULL;
  mb_status status = MB_STATUS_OK;
  dn_rep *in = NULL, *out;
  dnnl_memory_t params[4];
  dnnl_memory_desc_t cmd;
  int64_t x[MB_MAX_RANK];
  int rank;
  {
    char reason[256] = "";
    mb_engine_check c = lower_check_ctx(l, n, reason, sizeof reason);
    if (!check_batchnorm(&c))
      return recheck_failed(l, reason);
  }
  float eps = mb__node_attr_float(n, "epsilon", 1e-5f);
  unsigned flags = dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift;
  value_dims(l, n->inputs[0], &rank, x);
  for (int attempt = 0; attempt < 3 && !pd; attempt++) {
    dnnl_batch_normalization_desc_t bd;
    MB_TRY_GOTO(value_get(l, n->inputs[0],
                          attempt ? DN_WANT_PLAIN : DN_WANT_DTYPE,
                          attempt == 2 ? dnnl_f32 : l->act_dt, NULL, &in));
    DN_GOTO(l, dnnl_batch_normalization_forward_desc_init(
                   &bd, dnnl_forward_inference, &in->md, eps, flags));
    dnnl_status_t st = pd_try(l, &bd, NULL, &pd);
    if (st == dnnl_success)
      pd_accept(&pd, attempt == 2);
    else if (attempt == 2) {
      status =
          dn_fail(l, "dnnl_primitive_desc_create(batch_normalization)", st);
      goto done;
    }
  }
  DN_GOTO(l, md_plain(&cmd, 1, &x[1], dnnl_f32));
  /* ONNX order: scale, B, mean, var. */
  for (int i = 0; i < 4; i++)
    MB_TRY_GOTO(const_memory(l, &cmd,
                             constant_of(l->eg, n->inputs[1 + i])->data, false,
                             &cmd, &params[i], NULL));
  dn_rep src = *in;
  MB_TRY_GOTO(value_define_like(l, n->outputs[0], &src, -1, &out));
  dnnl_exec_arg_t args[6] = {
      {DNNL_ARG_SRC, src.mem},     {DNNL_ARG_DST, out->mem},
      {DNNL_ARG_SCALE, params[0]}, {DNNL_ARG_SHIFT, params[1]},
      {DNNL_ARG_MEAN, params[2]},  {DNNL_ARG_VARIANCE, params[3]},
  };
  MB_TRY_GOTO(emit(l, pd, 6, args));
done:
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  return status;
}

/* A new plain value v of data type dt, and a view of it as md2 (the same
 * bytes seen with other dims) for the primitive. */
static mb_status define_plain_viewed(lctx *l, int v, dnnl_data_type_t dt,
                                     const dnnl_memory_desc_t *md2,
                                     dnnl_memory_t *mem2) {
  dnnl_memory_desc_t md;
  dn_rep *out;
  mb_status status;
  int rank;
  int64_t dims[MB_MAX_RANK];
  value_dims(l, v, &rank, dims);
  DN_TRY(l, md_plain(&md, rank, dims, dt));
  if ((status = value_define(l, v, &md, &out)))
    return status;
  return rep_view(l, out, md2, mem2);
}

static mb_status lower_softmax(lctx *l, const mb_node *n) {
  softmax_params p;
  dnnl_primitive_desc_t pd = NULL;
  mb_status status = MB_STATUS_OK;
  dnnl_memory_desc_t md2;
  dn_rep *in = NULL, *out;
  int rank, axis;
  int64_t x[MB_MAX_RANK];
  DN_PARAMS(l, n, softmax_get, &p);
  value_dims(l, n->inputs[0], &rank, x);
  /* In place in the input's layout; plain; plain float32. */
  int attempt = p.coerce_2d ? 1 : 0;
  for (; attempt < 3 && !pd; attempt++) {
    dnnl_softmax_v2_desc_t sd;
    dnnl_data_type_t dt = attempt == 2 ? dnnl_f32 : l->act_dt;
    MB_TRY_GOTO(value_get(l, n->inputs[0],
                          attempt ? DN_WANT_PLAIN : DN_WANT_DTYPE, dt, NULL,
                          &in));
    md2 = in->md;
    axis = p.axis;
    if (p.coerce_2d) {
      int64_t d2[2] = {dims_numel(p.axis, x),
                       dims_numel(rank - p.axis, x + p.axis)};
      DN_GOTO(l, md_plain(&md2, 2, d2, dt));
      axis = 1;
    }
    DN_GOTO(l, dnnl_softmax_v2_forward_desc_init(&sd, dnnl_forward_inference,
                                                 p.log ? dnnl_softmax_log
                                                       : dnnl_softmax_accurate,
                                                 &md2, &md2, axis));
    dnnl_status_t st = pd_try(l, &sd, NULL, &pd);
    if (st == dnnl_success)
      pd_accept(&pd, attempt == 2);
    else if (attempt == 2) {
      status = dn_fail(l, "dnnl_primitive_desc_create(softmax)", st);
      goto done;
    }
  }
  dn_rep src = *in;
  dnnl_memory_t in_mem = src.mem, out_mem;
  if (p.coerce_2d) {
    MB_TRY_GOTO(rep_view(l, &src, &md2, &in_mem));
    MB_TRY_GOTO(
        define_plain_viewed(l, n->outputs[0], md2.data_type, &md2, &out_mem));
  } else {
    MB_TRY_GOTO(value_define_like(l, n->outputs[0], &src, -1, &out));
    out_mem = out->mem;
  }
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, in_mem}, {DNNL_ARG_DST, out_mem}};
  MB_TRY_GOTO(emit(l, pd, 2, args));
done:
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  return status;
}

static mb_status lower_lnorm(lctx *l, const mb_node *n) {
  lnorm_params p;
  dnnl_primitive_desc_t pd = NULL;
  mb_status status = MB_STATUS_OK;
  dnnl_memory_desc_t md2, cmd;
  dn_rep *in = NULL;
  dnnl_memory_t scale, shift = NULL;
  DN_PARAMS(l, n, lnorm_get, &p);
  int64_t d2[2] = {p.outer, p.inner};
  unsigned flags = dnnl_use_scale | (p.bias ? dnnl_use_shift : 0u);
  for (int attempt = 0; attempt < 2 && !pd; attempt++) {
    dnnl_layer_normalization_desc_t ld;
    dnnl_data_type_t dt = attempt ? dnnl_f32 : l->act_dt;
    if (attempt && dt == l->act_dt)
      break;
    MB_TRY_GOTO(value_get(l, n->inputs[0], DN_WANT_PLAIN, dt, NULL, &in));
    DN_GOTO(l, md_plain(&md2, 2, d2, dt));
    DN_GOTO(l, dnnl_layer_normalization_forward_desc_init(
                   &ld, dnnl_forward_inference, &md2, NULL, p.epsilon, flags));
    dnnl_status_t st = pd_try(l, &ld, NULL, &pd);
    bool last = attempt == 1 || l->act_dt == dnnl_f32;
    if (st == dnnl_success)
      pd_accept(&pd, last);
    else if (last) {
      status =
          dn_fail(l, "dnnl_primitive_desc_create(layer_normalization)", st);
      goto done;
    }
  }
  DN_GOTO(l, md_plain(&cmd, 1, &p.inner, dnnl_f32));
  MB_TRY_GOTO(const_memory(l, &cmd, constant_of(l->eg, n->inputs[1])->data,
                           false, &cmd, &scale, NULL));
  if (p.bias)
    MB_TRY_GOTO(const_memory(l, &cmd, constant_of(l->eg, n->inputs[2])->data,
                             false, &cmd, &shift, NULL));
  dn_rep src = *in;
  dnnl_memory_t in_mem, out_mem;
  MB_TRY_GOTO(rep_view(l, &src, &md2, &in_mem));
  MB_TRY_GOTO(
      define_plain_viewed(l, n->outputs[0], md2.data_type, &md2, &out_mem));
  dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, in_mem},
                             {DNNL_ARG_DST, out_mem},
                             {DNNL_ARG_SCALE, scale},
                             {DNNL_ARG_SHIFT, shift}};
  MB_TRY_GOTO(emit(l, pd, p.bias ? 4 : 3, args));
done:
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  return status;
}

/* ---- data movement ------------------------------------------------------ */

static mb_status lower_transpose(lctx *l, const mb_node *n) {
  int perm[MB_MAX_RANK], rank;
  dnnl_memory_desc_t view;
  dnnl_memory_t mem;
  dnnl_dims_t in_dims, strides;
  int64_t x[MB_MAX_RANK], stride = 1;
  mb_status status;
  dn_rep *out;
  DN_PARAMS(l, n, transpose_get, perm);
  dn_val *src_val = &l->vals[n->inputs[0]];
  if (src_val->n_reps == 0 && (status = const_rep(l, n->inputs[0])))
    return status;
  dn_rep src = src_val->rep[0];
  const mb_shape_info *y = &l->eg->shapes[n->outputs[0]];
  value_dims(l, n->inputs[0], &rank, x);
  if (y->rank == 0)
    return internal(l, "scalar transpose");
  /* The output, plain, seen in the input's axis order. */
  for (int j = y->rank - 1; j >= 0; j--) {
    strides[perm[j]] = stride;
    stride *= y->dims[j];
  }
  for (int i = 0; i < rank; i++)
    in_dims[i] = x[i];
  DN_TRY(l, dnnl_memory_desc_init_by_strides(&view, rank, in_dims,
                                             src.md.data_type, strides));
  dnnl_memory_desc_t md;
  DN_TRY(l, md_plain(&md, y->rank, y->dims, src.md.data_type));
  if ((status = value_define(l, n->outputs[0], &md, &out)) ||
      (status = rep_view(l, out, &view, &mem)))
    return status;
  return emit_reorder_as(l, false, src.mem, &src.md, mem, &view);
}

/* Reshape, Flatten, Squeeze, Unsqueeze: a plain view of the input. */
static mb_status lower_reshape(lctx *l, const mb_node *n) {
  dn_val *x = &l->vals[n->inputs[0]];
  dn_rep *r = NULL;
  dnnl_memory_desc_t md;
  mb_status status;
  int rank;
  int64_t dims[MB_MAX_RANK];
  if (x->n_reps == 0 && (status = const_rep(l, n->inputs[0])))
    return status;
  for (int i = 0; i < x->n_reps && !r; i++)
    if (md_is_plain(&x->rep[i].md))
      r = &x->rep[i];
  if (!r && (status = value_get(l, n->inputs[0], DN_WANT_PLAIN,
                                x->rep[0].md.data_type, NULL, &r)))
    return status;
  value_dims(l, n->outputs[0], &rank, dims);
  DN_TRY(l, md_plain(&md, rank, dims, r->md.data_type));
  return value_alias(l, n->outputs[0], &md, r->buf, NULL);
}

/* Identity, Dropout: the input itself. */
static mb_status lower_identity(lctx *l, const mb_node *n) {
  dn_val *x = &l->vals[n->inputs[0]];
  mb_status status;
  if (x->n_reps == 0 && (status = const_rep(l, n->inputs[0])))
    return status;
  dn_rep r = x->rep[0];
  return value_alias(l, n->outputs[0], &r.md, r.buf, NULL);
}

static mb_status lower_concat(lctx *l, const mb_node *n) {
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_attr_t attr = NULL;
  mb_status status = MB_STATUS_OK;
  dnnl_memory_desc_t mds[DN_MAX_CONCAT], dst_md;
  dnnl_memory_t mems[DN_MAX_CONCAT];
  dn_rep *out;
  int k = n->n_inputs, rank;
  int64_t x[MB_MAX_RANK];
  {
    char reason[256] = "";
    mb_engine_check c = lower_check_ctx(l, n, reason, sizeof reason);
    if (!check_concat(&c))
      return recheck_failed(l, reason);
  }
  value_dims(l, n->inputs[0], &rank, x);
  int axis = norm_axis(mb__node_attr_int(n, "axis", 0), rank);
  const mb_shape_info *y = &l->eg->shapes[n->outputs[0]];
  MB_TRY_GOTO(attr_new(l, NULL, NULL, &attr));
  /* Inputs in their layouts and the output in oneDNN's choice; else plain
   * everywhere. */
  for (int attempt = 0; attempt < 2 && !pd; attempt++) {
    for (int i = 0; i < k; i++) {
      dn_rep *r;
      MB_TRY_GOTO(value_get(l, n->inputs[i],
                            attempt ? DN_WANT_PLAIN : DN_WANT_DTYPE, l->act_dt,
                            NULL, &r));
      mds[i] = r->md;
      mems[i] = r->mem;
    }
    if (attempt)
      DN_GOTO(l, md_plain(&dst_md, y->rank, y->dims, l->act_dt));
    else
      DN_GOTO(l, md_any(&dst_md, y->rank, y->dims, l->act_dt));
    dnnl_status_t st = dnnl_concat_primitive_desc_create(
        &pd, &dst_md, k, axis, mds, attr, l->s->engine);
    if (st != dnnl_success) {
      pd = NULL;
      if (attempt == 1) {
        status = dn_fail(l, "dnnl_concat_primitive_desc_create", st);
        goto done;
      }
    }
  }
  MB_TRY_GOTO(
      value_define(l, n->outputs[0], pd_md(pd, dnnl_query_dst_md), &out));
  {
    dnnl_exec_arg_t args[DN_MAX_ARGS];
    for (int i = 0; i < k; i++)
      args[i] = (dnnl_exec_arg_t){DNNL_ARG_MULTIPLE_SRC + i, mems[i]};
    args[k] = (dnnl_exec_arg_t){DNNL_ARG_DST, out->mem};
    MB_TRY_GOTO(emit(l, pd, k + 1, args));
  }
done:
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  return status;
}

static mb_status lower_reduce(lctx *l, const mb_node *n) {
  reduce_params p;
  dnnl_primitive_desc_t pd = NULL;
  mb_status status = MB_STATUS_OK;
  dnnl_memory_desc_t dst_md;
  dn_rep *in = NULL, *out;
  DN_PARAMS(l, n, reduce_get, &p);
  const mb_shape_info *y = &l->eg->shapes[n->outputs[0]];
  bool keep = dims_equal(y->rank, y->dims, p.rank, p.kept_dims);
  for (int attempt = 0; attempt < 3 && !pd; attempt++) {
    dnnl_reduction_desc_t rd;
    dnnl_data_type_t dt = attempt == 2 ? dnnl_f32 : l->act_dt;
    MB_TRY_GOTO(value_get(l, n->inputs[0],
                          attempt ? DN_WANT_PLAIN : DN_WANT_DTYPE, dt, NULL,
                          &in));
    if (keep && !attempt)
      DN_GOTO(l, md_any(&dst_md, p.rank, p.kept_dims, dt));
    else
      DN_GOTO(l, md_plain(&dst_md, p.rank, p.kept_dims, dt));
    DN_GOTO(l,
            dnnl_reduction_desc_init(&rd, p.alg, &in->md, &dst_md, 0.0f, 0.0f));
    dnnl_status_t st = pd_try(l, &rd, NULL, &pd);
    if (st == dnnl_success)
      pd_accept(&pd, attempt == 2);
    else if (attempt == 2) {
      status = dn_fail(l, "dnnl_primitive_desc_create(reduction)", st);
      goto done;
    }
  }
  dnnl_memory_t in_mem = in->mem, out_mem;
  const dnnl_memory_desc_t *pmd = pd_md(pd, dnnl_query_dst_md);
  if (keep) {
    MB_TRY_GOTO(value_define(l, n->outputs[0], pmd, &out));
    out_mem = out->mem;
  } else {
    MB_TRY_GOTO(
        define_plain_viewed(l, n->outputs[0], pmd->data_type, pmd, &out_mem));
  }
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, in_mem}, {DNNL_ARG_DST, out_mem}};
  MB_TRY_GOTO(emit(l, pd, 2, args));
done:
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  return status;
}

/* A reorder from the window of the plain input rep starting at `start`
 * with `step` and the output's dims into output value v (plain). */
static mb_status emit_window_copy(lctx *l, const dn_rep *in, int rank,
                                  const int64_t *start, const int64_t *step,
                                  int v) {
  dnnl_memory_desc_t view, md;
  dnnl_memory_t mem;
  dnnl_dims_t dims, strides;
  dn_rep *out;
  mb_status status;
  int64_t offset = 0;
  const mb_shape_info *y = &l->eg->shapes[v];
  for (int i = 0; i < rank; i++) {
    dims[i] = y->dims[i];
    strides[i] = in->md.format_desc.blocking.strides[i] * step[i];
    offset += start[i] * in->md.format_desc.blocking.strides[i];
  }
  DN_TRY(l, dnnl_memory_desc_init_by_strides(&view, rank, dims,
                                             in->md.data_type, strides));
  view.offset0 = offset;
  DN_TRY(l, md_plain(&md, rank, y->dims, in->md.data_type));
  if ((status = rep_view(l, in, &view, &mem)) ||
      (status = value_define(l, v, &md, &out)))
    return status;
  return emit_reorder_as(l, false, mem, &view, out->mem, &md);
}

/* A plain input rep of value v with the size-1 dims' strides made
 * regular (emit_window_copy multiplies them). */
static mb_status plain_input(lctx *l, int v, dn_rep *out) {
  dn_val *x = &l->vals[v];
  dn_rep *r = NULL;
  mb_status status;
  int rank;
  int64_t dims[MB_MAX_RANK];
  if (x->n_reps == 0 && (status = const_rep(l, v)))
    return status;
  for (int i = 0; i < x->n_reps && !r; i++)
    if (md_is_plain(&x->rep[i].md))
      r = &x->rep[i];
  if (!r && (status = value_get(l, v, DN_WANT_PLAIN, x->rep[0].md.data_type,
                                NULL, &r)))
    return status;
  *out = *r;
  value_dims(l, v, &rank, dims);
  DN_TRY(l, md_plain(&out->md, rank, dims, r->md.data_type));
  return MB_STATUS_OK;
}

static mb_status lower_slice(lctx *l, const mb_node *n) {
  slice_params p;
  dn_rep in;
  mb_status status;
  DN_PARAMS(l, n, slice_get, &p);
  if ((status = plain_input(l, n->inputs[0], &in)))
    return status;
  return emit_window_copy(l, &in, p.rank, p.start, p.step, n->outputs[0]);
}

static mb_status lower_split(lctx *l, const mb_node *n) {
  dn_rep in;
  mb_status status;
  int rank;
  int64_t x[MB_MAX_RANK], start[DN_RANK_MAX] = {0}, step[DN_RANK_MAX];
  {
    char reason[256] = "";
    mb_engine_check c = lower_check_ctx(l, n, reason, sizeof reason);
    if (!check_split(&c))
      return recheck_failed(l, reason);
  }
  value_dims(l, n->inputs[0], &rank, x);
  int axis = norm_axis(mb__node_attr_int(n, "axis", 0), rank);
  for (int i = 0; i < rank; i++)
    step[i] = 1;
  if ((status = plain_input(l, n->inputs[0], &in)))
    return status;
  for (int i = 0; i < n->n_outputs; i++) {
    if ((status = emit_window_copy(l, &in, rank, start, step, n->outputs[i])))
      return status;
    start[axis] += l->eg->shapes[n->outputs[i]].dims[axis];
  }
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* The operator table                                                        */
/* ------------------------------------------------------------------------ */

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

static const dn_op_row dn_ops[] = {
    {"Conv", check_conv, NULL, DN_HEAD_CONV},
    {"Gemm", check_mm, NULL, DN_HEAD_MM},
    {"MatMul", check_mm, NULL, DN_HEAD_MM},
    {"Add", check_binary, lower_binary},
    {"Sub", check_binary, lower_binary},
    {"Mul", check_binary, lower_binary},
    {"Div", check_binary, lower_binary},
    {"Max", check_binary, lower_binary},
    {"Min", check_binary, lower_binary},
#define MB_X(op, alg, alpha, beta, attr) {op, check_unary, lower_unary},
    DN_UNARY_LIST(MB_X)
#undef MB_X
        {"Clip", check_unary, lower_unary},
    {"HardSigmoid", check_unary, lower_unary},
    {"Pow", check_unary, lower_unary},
    {"Gelu", check_unary, lower_unary},
    {"Erf", check_erf, lower_erf},
    {"MaxPool", check_pool, lower_pool},
    {"AveragePool", check_pool, lower_pool},
    {"GlobalAveragePool", check_pool, lower_pool},
    {"GlobalMaxPool", check_pool, lower_pool},
    {"BatchNormalization", check_batchnorm, lower_batchnorm},
    {"Softmax", check_softmax, lower_softmax},
    {"LogSoftmax", check_softmax, lower_softmax},
    {"LayerNormalization", check_lnorm, lower_lnorm},
    {"Transpose", check_transpose, lower_transpose},
    {"Reshape", check_reshape, lower_reshape},
    {"Flatten", check_reshape, lower_reshape},
    {"Squeeze", check_reshape, lower_reshape},
    {"Unsqueeze", check_reshape, lower_reshape},
    {"Identity", check_identity, lower_identity},
    {"Dropout", check_identity, lower_identity},
    {"Concat", check_concat, lower_concat},
    {"ReduceMean", check_reduce, lower_reduce},
    {"ReduceSum", check_reduce, lower_reduce},
    {"ReduceMax", check_reduce, lower_reduce},
    {"ReduceMin", check_reduce, lower_reduce},
    {"ReduceProd", check_reduce, lower_reduce},
    {"Slice", check_slice, lower_slice},
    {"Split", check_split, lower_split},
};

static const dn_op_row *op_find(const mb_node *n) {
  if (n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
    return NULL;
  for (size_t i = 0; i < MB_ARRAY_COUNT(dn_ops); i++)
    if (strcmp(n->op_type, dn_ops[i].op_type) == 0)
      return &dn_ops[i];
  return NULL;
}

static mb_status lower_group(lctx *l, const dn_group *g);

static mb_status lower_node(lctx *l, int pos) {
  const mb_node *n = node_at(l, pos), *saved = l->node;
  int saved_prof = l->prof;
  mb_status status;
  if (node_is_folded(l->eg, n))
    return MB_STATUS_OK;
  const dn_op_row *row = op_find(n);
  l->node = n;
  if (!row)
    return internal(l, "not supported by the oneDNN engine");
  if ((l->prof = prof_new(l, n->op_type, n->name)) < 0)
    return oom(l);
  if (row->head != DN_NOT_HEAD) {
    dn_group g;
    memset(&g, 0, sizeof g);
    g.head = pos;
    g.last = pos;
    status = row->head == DN_HEAD_CONV ? lower_conv(l, &g) : lower_mm(l, &g);
  } else {
    status = row->lower(l, n);
  }
  for (int i = 0; i < n->n_outputs && !status; i++)
    status = finish_output(l, n->outputs[i]);
  l->node = saved;
  l->prof = saved_prof;
  return status;
}

/* ------------------------------------------------------------------------ */
/* Fusion planning                                                           */
/* ------------------------------------------------------------------------ */

/* Positions of the nodes reading value v (each node once); returns the
 * count, storing at most max. */
static int consumers(lctx *l, int v, int *out, int max) {
  int count = 0;
  for (int p = 0; p < l->d->n_nodes; p++) {
    const mb_node *n = node_at(l, p);
    for (int j = 0; j < n->n_inputs; j++) {
      if (n->inputs[j] == v) {
        if (count < max)
          out[count] = p;
        count++;
        break;
      }
    }
  }
  return count;
}

/* v has exactly one reader, at position *pos, and is not a segment
 * output. */
static bool sole_reader(lctx *l, int v, int *pos) {
  return v >= 0 && l->vals[v].out_slot < 0 && consumers(l, v, pos, 1) == 1 &&
         l->group_of[*pos] < 0;
}

static bool same_shape(lctx *l, int a, int b) {
  int ra, rb;
  int64_t da[MB_MAX_RANK], db[MB_MAX_RANK];
  return value_shape(l->eg, a, &ra, da, NULL) &&
         value_shape(l->eg, b, &rb, db, NULL) && dims_equal(ra, da, rb, db);
}

/* The other input of binary node n, which reads cur once. */
static int other_input(const mb_node *n, int cur) {
  if (n->n_inputs != 2 || n->inputs[0] == n->inputs[1])
    return -1;
  return n->inputs[0] == cur   ? n->inputs[1]
         : n->inputs[1] == cur ? n->inputs[0]
                               : -1;
}

static bool scalar_const(lctx *l, int v, float *value) {
  const mb_tensor *k = v >= 0 ? constant_of(l->eg, v) : NULL;
  if (!k || k->numel != 1 || k->dtype != MB_DTYPE_FLOAT)
    return false;
  *value = ((const float *)k->data)[0];
  return true;
}

static bool near(float a, float b) {
  return fabsf(a - b) <= 1e-4f * fabsf(b);
}

static void post_nodes(dn_post *post, int n, const int *pos) {
  post->n_nodes = n;
  for (int i = 0; i < n; i++)
    post->nodes[i] = pos[i];
  /* In segment order, so that unfused they lower in a valid order. */
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && post->nodes[j - 1] > post->nodes[j]; j--) {
      int t = post->nodes[j];
      post->nodes[j] = post->nodes[j - 1];
      post->nodes[j - 1] = t;
    }
}

/* x * sigmoid(x) (SiLU) among the readers cons[0..nc) of x. */
static bool match_swish(lctx *l, int x, const int *cons, int nc,
                        dn_post *post) {
  for (int i = 0; i < nc; i++) {
    const mb_node *s = node_at(l, cons[i]);
    int m;
    if (!op_is(s, "Sigmoid") || l->group_of[cons[i]] >= 0 ||
        s->inputs[0] != x || !sole_reader(l, s->outputs[0], &m))
      continue;
    const mb_node *mul = node_at(l, m);
    if (!op_is(mul, "Mul") || other_input(mul, s->outputs[0]) != x)
      continue;
    memset(post, 0, sizeof *post);
    post->kind = DN_POST_ELTWISE;
    post->n_ops = 1;
    post->ops[0] = (eltwise_op){dnnl_eltwise_swish, 1.0f, 0.0f};
    post_nodes(post, 2, (int[]){cons[i], m});
    post->out_value = mul->outputs[0];
    return true;
  }
  return false;
}

/* x * 0.5 * (1 + erf(x / sqrt 2)) as PyTorch exports GELU: Div (or Mul by
 * 1/sqrt 2), Erf, Add 1, Mul x (or x*0.5), Mul 0.5. */
static bool match_gelu(lctx *l, int x, const int *cons, int nc, dn_post *post) {
  for (int i = 0; i < nc; i++) {
    const mb_node *d = node_at(l, cons[i]);
    int pe, pa, pm, pm2, ph = -1;
    float c;
    if (l->group_of[cons[i]] >= 0 || d->inputs[0] != x ||
        !scalar_const(l, other_input(d, x), &c))
      continue;
    if (!(op_is(d, "Div") && near(c, 1.41421356f)) &&
        !(op_is(d, "Mul") && near(c, 0.70710678f)))
      continue;
    if (!sole_reader(l, d->outputs[0], &pe) || !op_is(node_at(l, pe), "Erf"))
      continue;
    const mb_node *e = node_at(l, pe);
    if (!sole_reader(l, e->outputs[0], &pa))
      continue;
    const mb_node *a = node_at(l, pa);
    if (!op_is(a, "Add") ||
        !scalar_const(l, other_input(a, e->outputs[0]), &c) || c != 1.0f ||
        !sole_reader(l, a->outputs[0], &pm))
      continue;
    const mb_node *m = node_at(l, pm);
    int other = op_is(m, "Mul") ? other_input(m, a->outputs[0]) : -1;
    int out;
    if (other == x) {
      /* (x * (1 + erf)) * 0.5 */
      if (!sole_reader(l, m->outputs[0], &pm2))
        continue;
      const mb_node *m2 = node_at(l, pm2);
      if (!op_is(m2, "Mul") ||
          !scalar_const(l, other_input(m2, m->outputs[0]), &c) || c != 0.5f)
        continue;
      out = m2->outputs[0];
    } else {
      /* (x * 0.5) * (1 + erf) */
      int hp = other >= 0 ? l->eg->graph->values[other].producer : -1;
      ph = hp >= 0 ? l->node_pos[hp] : -1;
      if (ph < 0 || l->group_of[ph] >= 0 || !op_is(node_at(l, ph), "Mul") ||
          !scalar_const(l, other_input(node_at(l, ph), x), &c) || c != 0.5f ||
          !sole_reader(l, other, &(int){0}))
        continue;
      pm2 = ph;
      out = m->outputs[0];
    }
    memset(post, 0, sizeof *post);
    post->kind = DN_POST_ELTWISE;
    post->n_ops = 1;
    post->ops[0] = (eltwise_op){dnnl_eltwise_gelu_erf, 0.0f, 0.0f};
    post_nodes(post, 5, (int[]){cons[i], pe, pa, pm, pm2});
    post->out_value = out;
    return true;
  }
  return false;
}

/* Scalar-constant Add/Sub/Mul/Div/Max/Min of cur as one eltwise op. */
static bool scalar_affine(const mb_node *n, int cur, float c, eltwise_op *op) {
  bool first = n->inputs[0] == cur;
  if (op_is(n, "Add"))
    *op = (eltwise_op){dnnl_eltwise_linear, 1.0f, c};
  else if (op_is(n, "Sub"))
    *op = first ? (eltwise_op){dnnl_eltwise_linear, 1.0f, -c}
                : (eltwise_op){dnnl_eltwise_linear, -1.0f, c};
  else if (op_is(n, "Mul"))
    *op = (eltwise_op){dnnl_eltwise_linear, c, 0.0f};
  else if (op_is(n, "Div") && first && c != 0.0f)
    *op = (eltwise_op){dnnl_eltwise_linear, 1.0f / c, 0.0f};
  else if (op_is(n, "Max"))
    *op = (eltwise_op){dnnl_eltwise_clip, c, FLT_MAX};
  else if (op_is(n, "Min"))
    *op = (eltwise_op){dnnl_eltwise_clip, -FLT_MAX, c};
  else
    return false;
  return true;
}

/* How the chain after a head continues from value cur (which must not be
 * read by anything else): fills post. */
static bool match_link(lctx *l, int cur, dn_head_kind head, bool has_bias,
                       bool has_sum, dn_post *post) {
  int cons[4];
  int nc = consumers(l, cur, cons, 4);
  if (l->vals[cur].out_slot >= 0 || nc < 1 || nc > 2)
    return false;
  for (int i = 0; i < MB_MIN(nc, 4); i++)
    if (l->group_of[cons[i]] >= 0 || node_is_folded(l->eg, node_at(l, cons[i])))
      return false;
  if (nc == 2)
    return match_swish(l, cur, cons, nc, post) ||
           match_gelu(l, cur, cons, nc, post);
  const mb_node *n = node_at(l, cons[0]);
  int out = n->n_outputs == 1 ? n->outputs[0] : -1;
  if (out < 0 || !same_shape(l, out, cur))
    return false;
  memset(post, 0, sizeof *post);
  post_nodes(post, 1, cons);
  post->out_value = out;
  char reason[8];
  mb_engine_check c = lower_check_ctx(l, n, reason, sizeof reason);
  if (op_find(n) && op_find(n)->check == check_unary && n->inputs[0] == cur) {
    post->kind = DN_POST_ELTWISE;
    return (post->n_ops = unary_get(&c, post->ops)) > 0;
  }
  const struct binary_row *row = binary_find(n);
  int other = other_input(n, cur);
  float k;
  if (!row || other < 0)
    return false;
  if (scalar_const(l, other, &k) && scalar_affine(n, cur, k, &post->ops[0])) {
    post->kind = DN_POST_ELTWISE;
    post->n_ops = 1;
    return true;
  }
  mb_dtype dt;
  int ro, rc;
  int64_t od[MB_MAX_RANK], cd[MB_MAX_RANK], pd[MB_MAX_RANK];
  if (!value_shape(l->eg, other, &ro, od, &dt) || dt != MB_DTYPE_FLOAT ||
      !value_shape(l->eg, cur, &rc, cd, NULL) || ro > rc)
    return false;
  const mb_tensor *kc = constant_of(l->eg, other);
  post->operand = other;
  if (row->alg == dnnl_binary_add && !kc && !has_sum &&
      same_shape(l, other, cur)) {
    post->kind = DN_POST_SUM;
    return true;
  }
  dims_pad(ro, od, rc, pd);
  bool bias_shape = true;
  for (int i = 0; i < rc; i++) {
    if (pd[i] != 1 && pd[i] != cd[i])
      return false;
    bias_shape &= i == rc - 1 ? pd[i] == cd[i] : pd[i] == 1;
  }
  if (head == DN_HEAD_MM && !has_bias && kc && bias_shape &&
      row->alg == dnnl_binary_add) {
    post->kind = DN_POST_BIAS;
    return true;
  }
  if (!row->commutative && n->inputs[0] != cur)
    return false;
  post->kind = DN_POST_BINARY;
  post->alg = row->alg;
  return true;
}

static void group_claim(lctx *l, int gi) {
  dn_group *g = &l->groups[gi];
  g->last = g->head;
  if (g->head >= 0)
    l->group_of[g->head] = gi;
  for (int i = 0; i < g->n_post; i++)
    for (int j = 0; j < g->post[i].n_nodes; j++) {
      l->group_of[g->post[i].nodes[j]] = gi;
      g->last = MB_MAX(g->last, g->post[i].nodes[j]);
    }
}

static void plan_groups(lctx *l) {
  int n = l->d->n_nodes;
  for (int p = 0; p < n; p++) {
    const mb_node *node = node_at(l, p);
    const dn_op_row *row = op_find(node);
    if (l->group_of[p] >= 0 || !row || row->head == DN_NOT_HEAD ||
        node_is_folded(l->eg, node))
      continue;
    dn_group *g = &l->groups[l->n_groups];
    memset(g, 0, sizeof *g);
    g->head = p;
    int cur = node->outputs[0];
    bool has_bias = op_is(node, "Gemm") && node_input(node, 2) >= 0;
    bool has_sum = false;
    l->group_of[p] = l->n_groups;
    while (
        g->n_post < DN_MAX_POST &&
        match_link(l, cur, row->head, has_bias, has_sum, &g->post[g->n_post])) {
      dn_post *post = &g->post[g->n_post++];
      has_bias |= post->kind == DN_POST_BIAS;
      has_sum |= post->kind == DN_POST_SUM;
      if (post->kind == DN_POST_BIAS && g->n_post != 1) {
        g->n_post--; /* a bias only right after the head */
        break;
      }
      for (int j = 0; j < post->n_nodes; j++)
        l->group_of[post->nodes[j]] = l->n_groups;
      cur = post->out_value;
    }
    group_claim(l, l->n_groups++);
  }
  /* SiLU and GELU elsewhere: one eltwise each. */
  for (int p = 0; p < n; p++) {
    const mb_node *node = node_at(l, p);
    int cons[16], x = node->n_inputs ? node->inputs[0] : -1;
    dn_group *g = &l->groups[l->n_groups];
    if (l->group_of[p] >= 0 || x < 0 ||
        !(op_is(node, "Sigmoid") || op_is(node, "Div") || op_is(node, "Mul")))
      continue;
    int nc = MB_MIN(consumers(l, x, cons, 16), 16);
    memset(g, 0, sizeof *g);
    g->head = -1;
    g->src = x;
    if (!match_swish(l, x, cons, nc, &g->post[0]) &&
        !match_gelu(l, x, cons, nc, &g->post[0]))
      continue;
    g->n_post = 1;
    g->last = -1;
    for (int j = 0; j < g->post[0].n_nodes; j++) {
      l->group_of[g->post[0].nodes[j]] = l->n_groups;
      g->last = MB_MAX(g->last, g->post[0].nodes[j]);
    }
    l->n_groups++;
  }
}

static mb_status lower_group(lctx *l, const dn_group *g) {
  mb_status status;
  const mb_node *first =
      node_at(l, g->head >= 0 ? g->head : g->post[0].nodes[0]);
  l->node = first;
  if (g->head >= 0) {
    const dn_op_row *row = op_find(first);
    if ((l->prof = prof_new(l, first->op_type, first->name)) < 0)
      return oom(l);
    status = row->head == DN_HEAD_CONV ? lower_conv(l, g) : lower_mm(l, g);
    if (status)
      return status;
    if ((status = finish_output(l, first->outputs[0])))
      return status;
  } else {
    const dn_post *p = &g->post[0];
    mb_error save = *l->err;
    bool gelu = p->ops[0].alg == dnnl_eltwise_gelu_erf;
    if ((l->prof = prof_new(l, gelu ? "Gelu" : "Swish", first->name)) < 0)
      return oom(l);
    status = emit_eltwise(l, g->src, p->out_value, p->ops, p->n_ops);
    if (status) {
      *l->err = save;
      if ((status = lower_rest(l, g->post, 0, 1)))
        return status;
    }
  }
  for (int i = 0; i < g->n_post; i++)
    if ((status = finish_output(l, g->post[i].out_value)))
      return status;
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Engine interface                                                          */
/* ------------------------------------------------------------------------ */

static void dn_probe(mb_runtime_info *info) {
  dnnl_engine_t engine = NULL;
  dnnl_status_t st = dnnl_engine_create(&engine, dnnl_cpu, 0);
  info->version[0] = info->reason[0] = '\0';
  info->available = st == dnnl_success;
  if (engine)
    dnnl_engine_destroy(engine);
  if (info->available) {
    const dnnl_version_t *v = dnnl_version();
    snprintf(info->version, sizeof info->version, "%d.%d.%d", v->major,
             v->minor, v->patch);
  } else {
    snprintf(info->reason, sizeof info->reason,
             "dnnl_engine_create(cpu) returned %s", dn_status_name(st));
  }
}

static const struct {
  dnnl_cpu_isa_t isa;
  const char *name;
} isa_names[] = {
    {dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"},
    {dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"},
    {dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"},
    {dnnl_cpu_isa_avx512_core, "avx512_core"},
    {dnnl_cpu_isa_avx2_vnni, "avx2_vnni"},
    {dnnl_cpu_isa_avx2, "avx2"},
    {dnnl_cpu_isa_avx, "avx"},
    {dnnl_cpu_isa_sse41, "sse41"},
};

static const char *isa_name(dnnl_cpu_isa_t isa) {
  for (size_t i = 0; i < MB_ARRAY_COUNT(isa_names); i++)
    if (isa == isa_names[i].isa)
      return isa_names[i].name;
  return "an older ISA";
}

/* Does /proc/cpuinfo list one of these flags? -1 when it cannot be read. */
static int cpuinfo_has(const char *const *flags, int n) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[8192];
  int found = -1;
  if (!f)
    return -1;
  while (found < 1 && fgets(line, sizeof line, f)) {
    if (strncmp(line, "flags", 5) != 0)
      continue;
    found = 0;
    for (char *tok = strtok(line + 5, " \t\n:"); tok && !found;
         tok = strtok(NULL, " \t\n:"))
      for (int i = 0; i < n; i++)
        found |= strcmp(tok, flags[i]) == 0;
    break;
  }
  fclose(f);
  return found;
}

static int dn_supports_precision(mb_precision precision, char *reason,
                                 size_t size) {
  static const char *const bf16_flags[] = {"avx512_bf16", "amx_bf16"};
  /* int8 runs on every x86-64 oneDNN supports; VNNI or AMX make it fast
   * (without them it still beats fp32 little, but it is correct). */
  if (precision == MB_PRECISION_FP32 || precision == MB_PRECISION_INT8)
    return 1;
  if (precision != MB_PRECISION_BF16) {
    if (reason && size)
      snprintf(reason, size, "oneDNN runs fp32, bf16 and int8 only, not %s",
               mb_precision_name(precision));
    return 0;
  }
  /* Native bf16 only: oneDNN would otherwise emulate it, slower than fp32. */
  dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  bool isa_ok = ((unsigned)isa & (unsigned)dnnl_cpu_isa_avx512_core_bf16) ==
                (unsigned)dnnl_cpu_isa_avx512_core_bf16;
  int cpu = cpuinfo_has(bf16_flags, 2);
  if (isa_ok && cpu != 0)
    return 1;
  if (reason && size) {
    if (!isa_ok)
      snprintf(reason, size,
               "oneDNN's effective ISA here is %s; bf16 needs "
               "avx512_core_bf16 or avx512_core_amx (CPU flags avx512_bf16 "
               "or amx_bf16)",
               isa_name(isa));
    else
      snprintf(reason, size,
               "the CPU flags lack avx512_bf16 and amx_bf16 although oneDNN "
               "reports %s",
               isa_name(isa));
  }
  return 0;
}

static int dn_supports_node(const mb_engine_graph *eg, int node,
                            const mb_engine_options *options, char *reason,
                            size_t size) {
  const mb_node *n = &eg->graph->nodes[node];
  mb_engine_check c = {eg, n, mb__model_opset(eg->model, ""), reason, size};
  if (reason && size)
    reason[0] = '\0';
  if (node_is_folded(eg, n))
    return 1;
  const dn_op_row *row = op_find(n);
  if (!row)
    return mb__engine_reject(&c, "not supported by the oneDNN engine");
  return row->check(&c);
}

static void dn_release(void *compiled) {
  segment_free(compiled);
}

/* Removes profile entries no step uses (nodes lowered to views) and
 * renumbers the steps'. */
static void prof_compact(dn_segment *s) {
  int *map = calloc((size_t)s->n_prof + 1, sizeof *map), k = 0;
  if (!map)
    return;
  for (int i = 0; i < s->n_steps; i++)
    if (s->steps[i].prof >= 0)
      map[s->steps[i].prof] = 1;
  for (int i = 0; i < s->n_prof; i++) {
    if (map[i]) {
      s->prof[k] = s->prof[i];
      map[i] = k++;
    }
  }
  for (int i = 0; i < s->n_steps; i++)
    if (s->steps[i].prof >= 0)
      s->steps[i].prof = map[s->steps[i].prof];
  s->n_prof = k;
  free(map);
}

/* Segment inputs and outputs: boundary buffers and their first memories. */
static mb_status io_init(lctx *l) {
  dn_segment *s = l->s;
  const mb_segment_desc *d = l->d;
  s->n_inputs = d->n_inputs;
  s->n_outputs = d->n_outputs;
  s->inputs = calloc((size_t)d->n_inputs + 1, sizeof *s->inputs);
  s->outputs = calloc((size_t)d->n_outputs + 1, sizeof *s->outputs);
  if (!s->inputs || !s->outputs)
    return oom(l);
  for (int i = 0; i < d->n_inputs; i++) {
    dn_io *io = &s->inputs[i];
    const mb_shape_info *si = &l->eg->shapes[d->inputs[i]];
    dnnl_memory_desc_t md;
    dnnl_memory_t mem;
    mb_status status;
    int buf, rank;
    int64_t dims[MB_MAX_RANK];
    io->value = d->inputs[i];
    if (!si->known || si->dtype != MB_DTYPE_FLOAT)
      continue; /* shape tensors and the like: never read as data */
    io->used = true;
    io->rank = si->rank;
    memcpy(io->dims, si->dims, (size_t)si->rank * sizeof *si->dims);
    io->nbytes = (size_t)dims_numel(si->rank, si->dims) * sizeof(float);
    value_dims(l, io->value, &rank, dims);
    DN_TRY(l, md_plain(&md, rank, dims, dnnl_f32));
    if ((buf = buf_new(l, DN_BUF_INPUT, i, io->nbytes)) < 0)
      return oom(l);
    if ((status = mem_new(l, &md, buf, &mem)) ||
        (status = rep_add(l, io->value, &md, mem, buf, NULL)))
      return status;
  }
  for (int i = 0; i < d->n_outputs; i++) {
    dn_io *io = &s->outputs[i];
    int v = d->outputs[i];
    const mb_shape_info *si = &l->eg->shapes[v];
    io->value = v;
    io->constant = constant_of(l->eg, v);
    if (io->constant) {
      io->rank = io->constant->rank;
      memcpy(io->dims, io->constant->dims, (size_t)io->rank * sizeof *io->dims);
      io->nbytes = io->constant->nbytes;
      continue;
    }
    if (!si->known || si->dtype != MB_DTYPE_FLOAT)
      return internal(l, "a segment output is not a float32 tensor");
    io->rank = si->rank;
    memcpy(io->dims, si->dims, (size_t)si->rank * sizeof *si->dims);
    io->nbytes = (size_t)dims_numel(si->rank, si->dims) * sizeof(float);
    if (l->vals[v].out_slot >= 0)
      return internal(l, "a value is listed twice as a segment output");
    l->vals[v].out_slot = i;
    if (buf_new(l, DN_BUF_OUTPUT, i, io->nbytes) < 0)
      return oom(l);
  }
  return MB_STATUS_OK;
}

/* Allocates the internal buffers and the scratchpad, and points their
 * memories at them. */
static mb_status buffers_finish(lctx *l) {
  dn_segment *s = l->s;
  for (int i = 0; i < s->n_bufs; i++) {
    dn_buffer *b = &s->bufs[i];
    if (b->kind != DN_BUF_INTERNAL && b->kind != DN_BUF_SCRATCH)
      continue;
    if (!(b->data = mb__aligned_alloc(MB_MAX(b->size, 1))))
      return oom(l);
    b->owned = true;
    /* Blocked layouts' padding must read as zero. */
    memset(b->data, 0, b->size);
  }
  for (int i = 0; i < s->n_mems; i++) {
    dn_buffer *b = &s->bufs[s->mems[i].buf];
    if (b->kind == DN_BUF_INTERNAL || b->kind == DN_BUF_SCRATCH)
      DN_TRY(l, dnnl_memory_set_data_handle(s->mems[i].mem, b->data));
  }
  return MB_STATUS_OK;
}

static mb_status dn_compile(const mb_segment_desc *d,
                            const mb_engine_options *options,
                            void **compiled_out, mb_error *err) {
  const mb_engine_graph *eg = d->eg;
  const mb_graph *g = eg->graph;
  lctx l;
  mb_status status = MB_STATUS_OK;
  *compiled_out = NULL;
  memset(&l, 0, sizeof l);
  l.err = err;
  l.d = d;
  l.eg = eg;
  l.g = g;
  l.opset = mb__model_opset(eg->model, "");
  l.act_dt = options->precision == MB_PRECISION_BF16 ? dnnl_bf16 : dnnl_f32;
  l.prof = -1;
  if (options->precision != MB_PRECISION_FP32 &&
      options->precision != MB_PRECISION_BF16 &&
      options->precision != MB_PRECISION_INT8)
    return mb__error(err, MB_STATUS_UNSUPPORTED, "onednn: cannot compute in %s",
                     mb_precision_name(options->precision));
  if (options->precision == MB_PRECISION_INT8 && !options->quant)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "onednn: int8 needs quantisation parameters");
  l.quant = options->precision == MB_PRECISION_INT8 ? options->quant : NULL;
  if (!(l.s = calloc(1, sizeof *l.s)))
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "onednn: out of memory");
  l.s->threads = MB_MAX(options->threads, 1);
  l.s->profile = options->profile != 0;
  l.s->scratch_buf = -1;
  set_threads(l.s->threads);
  l.node_pos = malloc(((size_t)g->n_nodes + 1) * sizeof *l.node_pos);
  l.vals = calloc((size_t)g->n_values + 1, sizeof *l.vals);
  l.groups = calloc((size_t)d->n_nodes + 1, sizeof *l.groups);
  l.group_of = malloc(((size_t)d->n_nodes + 1) * sizeof *l.group_of);
  if (!l.node_pos || !l.vals || !l.groups || !l.group_of) {
    status = oom(&l);
    goto done;
  }
  for (int i = 0; i < g->n_nodes; i++)
    l.node_pos[i] = -1;
  for (int p = 0; p < d->n_nodes; p++) {
    l.node_pos[d->nodes[p]] = p;
    l.group_of[p] = -1;
  }
  for (int v = 0; v < g->n_values; v++) {
    l.vals[v].last_use = -1;
    l.vals[v].out_slot = -1;
  }
  DN_GOTO(&l, dnnl_engine_create(&l.s->engine, dnnl_cpu, 0));
  DN_GOTO(&l, dnnl_stream_create(&l.s->stream, l.s->engine,
                                 dnnl_stream_default_flags));
  MB_TRY_GOTO(io_init(&l));
  plan_groups(&l);
  /* Liveness: a value is read where the group of its reader is emitted. */
  for (int p = 0; p < d->n_nodes; p++) {
    const mb_node *n = node_at(&l, p);
    int at = l.group_of[p] >= 0 ? l.groups[l.group_of[p]].last : p;
    for (int j = 0; j < n->n_inputs; j++)
      if (n->inputs[j] >= 0)
        l.vals[n->inputs[j]].last_use =
            MB_MAX(l.vals[n->inputs[j]].last_use, at);
  }
  if ((l.prof_reorder = prof_new(&l, "reorder", "")) < 0) {
    status = oom(&l);
    goto done;
  }
  for (int p = 0; p < d->n_nodes; p++) {
    int gi = l.group_of[p];
    l.pos = p;
    if (gi >= 0 && l.groups[gi].last == p)
      status = lower_group(&l, &l.groups[gi]);
    else if (gi < 0)
      status = lower_node(&l, p);
    if (status)
      goto done;
  }
  l.node = NULL;
  for (int i = 0; i < d->n_outputs; i++) {
    int v = d->outputs[i];
    if (!l.s->outputs[i].constant && !l.vals[v].out_done) {
      status = mb__error(err, MB_STATUS_INTERNAL,
                         "onednn: segment output '%s' is never computed",
                         g->values[v].name);
      goto done;
    }
  }
  MB_TRY_GOTO(buffers_finish(&l));
  prof_compact(l.s);
  *compiled_out = l.s;
  l.s = NULL;
done:
  segment_free(l.s);
  free(l.node_pos);
  free(l.vals);
  free(l.groups);
  free(l.group_of);
  return status;
}

/* A segment output that is a constant keeps its own element type (the
 * Shape of a static tensor is an int64 graph output); everything else is
 * float32. */
static mb_status check_tensor(const dn_io *io, const mb_tensor *t,
                              const char *what, int index, mb_error *err) {
  mb_dtype dtype = io->constant ? io->constant->dtype : MB_DTYPE_FLOAT;
  if (!t || t->dtype != dtype || t->rank != io->rank ||
      memcmp(t->dims, io->dims, (size_t)io->rank * sizeof *io->dims) != 0 ||
      t->nbytes != io->nbytes || (io->nbytes && !t->data)) {
    char want[96];
    return mb__error(err, MB_STATUS_SHAPE,
                     "onednn: segment %s %d is not a %s tensor of shape %s",
                     what, index, mb_dtype_name(dtype),
                     mb__shape_str(io->rank, io->dims, want, sizeof want));
  }
  return MB_STATUS_OK;
}

static void run_erf(const dn_step *step) {
  void *src = NULL, *dst = NULL;
  dnnl_memory_get_data_handle(step->src, &src);
  dnnl_memory_get_data_handle(step->dst, &dst);
  const float *x = src;
  float *y = dst;
  for (size_t i = 0; i < step->count; i++)
    y[i] = erff(x[i]);
}

static mb_status dn_run(void *compiled, const mb_tensor *const *inputs,
                        mb_tensor *const *outputs, mb_error *err) {
  dn_segment *s = compiled;
  mb_status status;
  dnnl_status_t st;
  set_threads(s->threads);
  for (int i = 0; i < s->n_inputs; i++)
    if (s->inputs[i].used &&
        (status = check_tensor(&s->inputs[i], inputs[i], "input", i, err)))
      return status;
  for (int i = 0; i < s->n_outputs; i++)
    if ((status = check_tensor(&s->outputs[i], outputs[i], "output", i, err)))
      return status;
  for (int i = 0; i < s->n_io_mems; i++) {
    const dn_memory *m = &s->mems[s->io_mems[i]];
    const dn_buffer *b = &s->bufs[m->buf];
    /* Inputs are only ever read. */
    void *data = b->kind == DN_BUF_INPUT ? (void *)inputs[b->slot]->data
                                         : outputs[b->slot]->data;
    if ((st = dnnl_memory_set_data_handle(m->mem, data)) != dnnl_success)
      return mb__error(err, MB_STATUS_INTERNAL,
                       "onednn: dnnl_memory_set_data_handle failed: %s",
                       dn_status_name(st));
  }
  int threads = s->threads;
  for (int i = 0; i < s->n_steps; i++) {
    const dn_step *step = &s->steps[i];
    double t0 = s->profile ? mb__now() : 0.0;
    if (step->threads != threads)
      set_threads(threads = step->threads);
    if (step->kind == DN_STEP_ERF) {
      run_erf(step);
    } else if ((st = dnnl_primitive_execute(step->prim, s->stream, step->n_args,
                                            step->args)) != dnnl_success) {
      const mb_engine_node_time *t =
          step->prof >= 0 ? &s->prof[step->prof] : NULL;
      return mb__error(err, MB_STATUS_INTERNAL,
                       "onednn: %s '%s': dnnl_primitive_execute failed: %s",
                       t ? t->op_type : "primitive", t ? t->name : "",
                       dn_status_name(st));
    }
    if (s->profile) {
      dnnl_stream_wait(s->stream);
      if (step->prof >= 0)
        s->prof[step->prof].total_ms += (mb__now() - t0) * 1e3;
    }
  }
  if ((st = dnnl_stream_wait(s->stream)) != dnnl_success)
    return mb__error(err, MB_STATUS_INTERNAL,
                     "onednn: dnnl_stream_wait failed: %s", dn_status_name(st));
  if (s->profile)
    for (int i = 0; i < s->n_prof; i++)
      s->prof[i].runs++;
  for (int i = 0; i < s->n_outputs; i++)
    if (s->outputs[i].constant)
      memcpy(outputs[i]->data, s->outputs[i].constant->data,
             s->outputs[i].nbytes);
  return MB_STATUS_OK;
}

static int dn_node_profile(void *compiled, mb_engine_node_time *out, int max) {
  const dn_segment *s = compiled;
  for (int i = 0; i < s->n_prof && i < max; i++)
    out[i] = s->prof[i];
  return s->n_prof;
}

const mb_engine mb__engine_onednn = {
    .name = "onednn",
    .probe = dn_probe,
    .supports_precision = dn_supports_precision,
    .supports_node = dn_supports_node,
    .compile = dn_compile,
    .run = dn_run,
    .node_profile = dn_node_profile,
    .release = dn_release,
};

#endif /* MB_HAVE_DNNL */
