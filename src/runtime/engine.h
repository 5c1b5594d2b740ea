/* Native engines: XNNPACK and oneDNN run *segments* of a graph for the
 * hybrid runtimes (src/runtime/hybrid.c). The hybrid layer infers static
 * shapes for the benchmark's input shapes, asks the engine node by node
 * whether it can run each one, cuts the topological order into maximal runs
 * of supported nodes (segments), compiles each segment once with the
 * engine, and runs everything else on the reference interpreter in between.
 *
 * One engine is one mb_engine (in its folder, xnnpack/ or onednn/, or a
 * single file for a small one) and one row in MB_ENGINE_LIST; what the
 * engines all do is written once in engine_common.c (declared at the end
 * of this header). Like ORT's execution providers: the engine
 * sees only its segment, with ONNX-layout (NCHW) float32 tensors at the
 * boundary; layouts inside a segment (NHWC, oneDNN blocked) are its own
 * business.
 *
 * Lifetimes: everything an mb_engine_graph points to (model, shapes,
 * constants) outlives every compiled segment made from it. */
#ifndef MB_RUNTIME_ENGINE_H
#define MB_RUNTIME_ENGINE_H

#include "runtime/reference.h"
#include "runtime/runtime.h"

struct mb_quant_param;

/* The graph as the engine sees it: static shapes and constant data. */
typedef struct mb_engine_graph {
  const mb_model *model;
  const mb_graph *graph;       /* model->graph */
  const mb_shape_info *shapes; /* per value index (graph->n_values) */
  /* Per value index: the data when the value is constant (an initializer,
   * or the output of a Constant node or of a small constant subgraph the
   * hybrid layer folded at prepare time), else NULL. Borrowed. */
  const mb_tensor *const *constants;
} mb_engine_graph;

typedef struct mb_engine_options {
  int threads;            /* >= 1: the engine's own thread pool */
  mb_precision precision; /* FP32; FP16 (XNNPACK); BF16 (oneDNN); INT8 */
  int profile;            /* time each primitive (extra syncs) */
  /* INT8: calibrated ranges and the weight scales of the static
   * quantisation (the same parameters INT8_STATIC+ORT_CPU's QDQ model was
   * made with), keyed by the float model's tensor names. A Conv, Gemm or
   * MatMul runs on int8 when its weight has a WEIGHT entry and its input
   * an activation entry; oneDNN also runs a MatMul of two activations
   * with entries (attention's) on int8, as the QDQ model's QLinearMatMul. An
   * engine may also keep on int8 the ops the QDQ model runs on uint8 (Add,
   * MaxPool, average pools, scale-keeping data movement) when every float input
   * and the output have activation entries; every other node stays float32.
   * Borrowed for compile(); NULL outside INT8. */
  const struct mb_quant_params *quant;
} mb_engine_options;

/* One segment: nodes in topological order; every value it reads that is
 * not constant and not produced inside is an input; every value produced
 * inside and read after it (or a graph output) is an output. */
typedef struct mb_segment_desc {
  const mb_engine_graph *eg;
  int n_nodes;
  const int *nodes; /* node indices in execution (topological) order */
  int n_inputs;
  const int *inputs; /* value indices, the order of run()'s inputs */
  int n_outputs;
  const int *outputs; /* value indices, the order of run()'s outputs */
} mb_segment_desc;

/* Per-primitive timing of a compiled segment (engines that can). */
typedef struct mb_engine_node_time {
  char op_type[48]; /* ONNX op, or the engine's primitive ("reorder") */
  char name[128];   /* ONNX node name, or "" for engine-inserted ones */
  double total_ms;  /* over all profiled runs */
  int64_t runs;
  /* The kernel the library picked for it and its data types, e.g.
   * "brg:avx512_core_vnni u8 x s8 -> f32"; "" when the engine does not
   * say (or for entries that sum many primitives, such as reorders). */
  char kernel[64];
} mb_engine_node_time;

typedef struct mb_engine {
  const char *name; /* the runtime name: "xnnpack", "onednn" */
  /* Is the library present and usable on this CPU? Fills available,
   * version (library version) or reason ("built without XNNPACK: install
   * libxnnpack-dev"). Never fails. */
  void (*probe)(mb_runtime_info *info);
  /* Can it compute in this precision here? 0 with a reason when not (e.g.
   * BF16 on a CPU without AVX-512 BF16 or AMX); 2 when it can but this CPU
   * has no arithmetic of that precision, so it is emulated (converted to
   * and from fp32 around each operator, slower than fp32), with the reason
   * saying so. FP32 is always 1. */
  int (*supports_precision)(mb_precision precision, char *reason, size_t size);
  /* Can node `node` run on the engine, given its static shapes, dtypes,
   * attributes and which inputs are constant? 0 with a one-line reason
   * ("Gather: not supported", "Conv: 3-D convolution") when not. Must be
   * conservative: compile() of any run of nodes this accepted succeeds. */
  int (*supports_node)(const mb_engine_graph *eg, int node,
                       const mb_engine_options *options, char *reason,
                       size_t size);
  /* Optional (NULL: every node it accepts runs at any precision it
   * supports): can accepted node `node` run at options->precision, a
   * reduced one? 0 when the engine runs it only in fp32; the hybrid layer
   * then gives such nodes fp32 segments of their own. */
  int (*node_precision)(const mb_engine_graph *eg, int node,
                        const mb_engine_options *options);
  /* Builds the engine's program for a segment (weights repacked here).
   * *compiled_out: owned by the caller, freed with release(). */
  mb_status (*compile)(const mb_segment_desc *segment,
                       const mb_engine_options *options, void **compiled_out,
                       mb_error *err);
  /* Runs the segment. inputs: n_inputs borrowed tensors, ONNX layout,
   * shapes as in eg->shapes. outputs: n_outputs tensors already allocated
   * (dtype/rank/dims set, data of nbytes) that the engine fills. */
  mb_status (*run)(void *compiled, const mb_tensor *const *inputs,
                   mb_tensor *const *outputs, mb_error *err);
  /* Optional (NULL when the engine cannot): per-primitive times since
   * compile, for segments compiled with options->profile. Fills at most
   * `max` entries, returns how many there are (may exceed max). */
  int (*node_profile)(void *compiled, mb_engine_node_time *out, int max);
  /* Optional, with node_profile: zeroes those times, so a profile counts
   * the runs after the warm-up only (a primitive's first run includes its
   * JIT compilation). */
  void (*node_profile_reset)(void *compiled);
  void (*release)(void *compiled);
  /* Optional (NULL: W8 and "cannot saturate"): the runtime hook of the
   * same name (runtime.h): the int8 form its int8 products want on this
   * CPU, at the ISA the library runs at. */
  mb_int8_weights (*int8_weights)(char *reason, size_t size);
  /* Optional: the library's own log of what compile() creates (which
   * implementation each primitive got), on while segments compile when the
   * run logs at debug level, off before anything is timed. */
  void (*log_compile)(int on);
} mb_engine;

/* What an engine's checks name it and allow, for the shared checks. */
typedef struct mb_engine_limits {
  const char *label; /* "oneDNN", "XNNPACK" */
  int max_rank;      /* tensors of higher rank are refused */
} mb_engine_limits;

/* The context of one supports_node / compile check in an engine: the
 * node, its graph, the model's opset and where the reason goes. */
typedef struct mb_engine_check {
  const mb_engine_graph *eg;
  const mb_node *n;
  int64_t opset;
  char *reason; /* caller's buffer, may be NULL */
  size_t size;
  const mb_engine_limits *limits; /* NULL: "this engine", MB_MAX_RANK */
} mb_engine_check;

/* Writes "<op_type>: <message>" into c->reason (when there is one) and
 * returns 0, so a check can `return mb__engine_reject(c, "...")`. */
int mb__engine_reject(mb_engine_check *c, const char *fmt, ...) MB_PRINTF(2, 3);

/* An engine whose library was missing at build time is this one line in
 * its file (instead of the real one): mb__engine_<ename> whose probe and
 * supports_precision say `reason_text`; hybrid.c never calls the other
 * functions of an unavailable engine, which are shared stubs failing with
 * MB_STATUS_UNAVAILABLE. */
#define MB_ENGINE_UNBUILT(ename, reason_text)                                  \
  static void ename##_unbuilt_probe(mb_runtime_info *info) {                   \
    info->available = 0;                                                       \
    info->version[0] = '\0';                                                   \
    snprintf(info->reason, sizeof info->reason, "%s", reason_text);            \
  }                                                                            \
  static int ename##_unbuilt_precision(mb_precision precision, char *reason,   \
                                       size_t size) {                          \
    (void)precision;                                                           \
    if (reason && size)                                                        \
      snprintf(reason, size, "%s", reason_text);                               \
    return 0;                                                                  \
  }                                                                            \
  const mb_engine mb__engine_##ename = {                                       \
      .name = #ename,                                                          \
      .probe = ename##_unbuilt_probe,                                          \
      .supports_precision = ename##_unbuilt_precision,                         \
      .supports_node = mb__engine_unbuilt_node,                                \
      .compile = mb__engine_unbuilt_compile,                                   \
      .run = mb__engine_unbuilt_run,                                           \
      .node_profile = NULL,                                                    \
      .release = mb__engine_unbuilt_release,                                   \
  }
int mb__engine_unbuilt_node(const mb_engine_graph *eg, int node,
                            const mb_engine_options *options, char *reason,
                            size_t size);
mb_status mb__engine_unbuilt_compile(const mb_segment_desc *segment,
                                     const mb_engine_options *options,
                                     void **compiled_out, mb_error *err);
mb_status mb__engine_unbuilt_run(void *compiled, const mb_tensor *const *inputs,
                                 mb_tensor *const *outputs, mb_error *err);
void mb__engine_unbuilt_release(void *compiled);

/* MB_ENGINE_LIST lives in runtime/runtime.h (the runtime list uses it). */
#define MB_X(name) extern const mb_engine mb__engine_##name;
MB_ENGINE_LIST(MB_X)
#undef MB_X

/* The engine named `name`, or NULL. */
const mb_engine *mb__engine_find(const char *name);

/* Node attributes: mb__node_attr_int() and friends in core/ir.h. */

/* ---- what the engines share (engine_common.c) ---- */

/* Input or output i of n, or -1 when omitted. */
static inline int mb__engine_input(const mb_node *n, int i) {
  return i < n->n_inputs ? n->inputs[i] : -1;
}
static inline int mb__engine_output(const mb_node *n, int i) {
  return i < n->n_outputs ? n->outputs[i] : -1;
}

/* The data of value v when it is constant: given by the hybrid layer, or
 * an Identity of a constant (PyTorch exports shared weights that way);
 * else NULL. */
const mb_tensor *mb__engine_constant(const mb_engine_graph *eg, int v);
/* Static shape of value v (constant or inferred) into rank, dims and
 * dtype (may be NULL); false when unknown. */
bool mb__engine_value_shape(const mb_engine_graph *eg, int v, int *rank,
                            int64_t *dims, mb_dtype *dtype);
int64_t mb__engine_numel(int rank, const int64_t *dims);
/* A node all of whose outputs are constant: the hybrid layer folded it and
 * its consumers read the constants; engines accept it and lower nothing. */
bool mb__engine_node_folded(const mb_engine_graph *eg, const mb_node *n);

/* Checks return 1 (accepted) or 0 through mb__engine_reject. */
/* Input i is a float32 tensor of known, non-empty shape within
 * c->limits; must_be_constant: 1 constant, -1 not constant, 0 either. */
int mb__engine_check_float_input(mb_engine_check *c, int i,
                                 int must_be_constant);
/* Output 0 is a float32 tensor of known, non-empty shape within
 * c->limits; the optional outputs are omitted. */
int mb__engine_check_outputs(mb_engine_check *c);
/* A float32 scalar constant at input i into *out, `def` when omitted. */
int mb__engine_scalar_input(mb_engine_check *c, int i, float def, float *out);
/* The int32/int64 constant at input i into out (at most max values):
 * returns the count, or -1 (rejected). */
int64_t mb__engine_int_input(mb_engine_check *c, int i, int64_t *out,
                             int64_t max);
/* INTS attribute `name` with `count` entries into out (`def` each when
 * absent); false when the count differs or a value is below min or above
 * 2^24. */
bool mb__engine_attr_ints(const mb_node *n, const char *name, int count,
                          int64_t def, int64_t min, int64_t *out);
typedef enum mb_auto_pad {
  MB_AUTO_PAD_NOTSET,
  MB_AUTO_PAD_SAME_UPPER,
  MB_AUTO_PAD_SAME_LOWER,
  MB_AUTO_PAD_VALID,
} mb_auto_pad;
/* The auto_pad attribute of c->n into *out. */
int mb__engine_auto_pad(mb_engine_check *c, mb_auto_pad *out);

/* Does /proc/cpuinfo list one of these flags (`n` of them)? -1 when it
 * cannot be read. */
int mb__engine_cpu_has(const char *const *flags, int n);

/* Fused groups: the positions (in d's order) of the segment's nodes that
 * read value v, each node once; returns the count, storing at most max
 * (pos may be NULL). */
int mb__segment_readers(const mb_segment_desc *d, int v, int *pos, int max);
/* The position of graph node `node` in segment d, or -1 outside. */
int mb__segment_position(const mb_segment_desc *d, int node);

/* int8: the calibration entries an engine maps onto its own parameters.
 * The ACTIVATION entry of value v: per tensor, uint8 or int8, a positive
 * scale; else NULL. */
const struct mb_quant_param *
mb__engine_quant_activation(const mb_engine_graph *eg,
                            const struct mb_quant_params *quant, int v);
/* The WEIGHT entry of constant v (under its name, or its source's through
 * Identity nodes): int8, symmetric (zero points 0), positive scales, one
 * per tensor or `channels` along stored `axis`; else NULL. */
const struct mb_quant_param *
mb__engine_quant_weight(const mb_engine_graph *eg,
                        const struct mb_quant_params *quant, int v, int axis,
                        int64_t channels);
/* The scale of output channel `channel` of weight entry w. */
float mb__engine_weight_scale(const struct mb_quant_param *w, int64_t channel);
/* w / scale rounded and clamped to [-127, 127] as the static quantiser
 * stores weights (NaN -> 0). */
int8_t mb__engine_quantize_weight(float w, float scale);

/* run(): t is a `dtype` tensor of shape (rank, dims) and nbytes bytes,
 * else MB_STATUS_SHAPE naming the engine, "input"/"output" and index. */
mb_status mb__engine_check_tensor(const char *engine, mb_dtype dtype, int rank,
                                  const int64_t *dims, size_t nbytes,
                                  const mb_tensor *t, const char *what,
                                  int index, mb_error *err);

#endif /* MB_RUNTIME_ENGINE_H */
