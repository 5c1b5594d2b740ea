/* Native engines: XNNPACK and oneDNN run *segments* of a graph for the
 * hybrid runtimes (src/runtime/hybrid.c). The hybrid layer infers static
 * shapes for the benchmark's input shapes, asks the engine node by node
 * whether it can run each one, cuts the topological order into maximal runs
 * of supported nodes (segments), compiles each segment once with the
 * engine, and runs everything else on the reference interpreter in between.
 *
 * One engine is one file (xnnpack.c, onednn.c) defining one mb_engine and
 * one row in MB_ENGINE_LIST. Like ORT's execution providers: the engine
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
   * an activation entry. An engine may also keep on int8 the ops the QDQ
   * model runs on uint8 (Add, MaxPool, average pools, scale-keeping data
   * movement) when every float input and the output have activation
   * entries; every other node stays float32. Borrowed for compile();
   * NULL outside INT8. */
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
} mb_engine_node_time;

typedef struct mb_engine {
  const char *name; /* the runtime name: "xnnpack", "onednn" */
  /* Is the library present and usable on this CPU? Fills available,
   * version (library version) or reason ("built without XNNPACK: install
   * libxnnpack-dev"). Never fails. */
  void (*probe)(mb_runtime_info *info);
  /* Can it compute in this precision here? 0 with a reason when not (e.g.
   * BF16 on a CPU without AVX-512 BF16 or AMX). FP32 is always 1. */
  int (*supports_precision)(mb_precision precision, char *reason, size_t size);
  /* Can node `node` run on the engine, given its static shapes, dtypes,
   * attributes and which inputs are constant? 0 with a one-line reason
   * ("Gather: not supported", "Conv: 3-D convolution") when not. Must be
   * conservative: compile() of any run of nodes this accepted succeeds. */
  int (*supports_node)(const mb_engine_graph *eg, int node,
                       const mb_engine_options *options, char *reason,
                       size_t size);
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
  void (*release)(void *compiled);
} mb_engine;

/* The context of one supports_node / compile check in an engine: the
 * node, its graph, the model's opset and where the reason goes. */
typedef struct mb_engine_check {
  const mb_engine_graph *eg;
  const mb_node *n;
  int64_t opset;
  char *reason; /* caller's buffer, may be NULL */
  size_t size;
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

#endif /* MB_RUNTIME_ENGINE_H */
