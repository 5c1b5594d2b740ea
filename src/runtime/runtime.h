/* The runtime interface: every runtime adapter (reference interpreter, ONNX
 * Runtime, later XNNPACK and oneDNN) is one file defining one mb_runtime
 * and one row in MB_RUNTIME_LIST. Like ggml's backends: a struct of function
 * pointers over an opaque session; optional slots stay NULL.
 *
 * The benchmark parent never calls into a runtime; workers (child
 * processes) do: probe, prepare, run in the timed loop, fetch_outputs once
 * for the accuracy check, release. */
#ifndef MB_RUNTIME_RUNTIME_H
#define MB_RUNTIME_RUNTIME_H

#include "core/ir.h"

/* ONNX Runtime's GraphOptimizationLevel values, used by conversions. */
typedef enum mb_graph_opt_level {
  MB_GRAPH_OPT_DISABLED = 0,
  MB_GRAPH_OPT_BASIC = 1,
  MB_GRAPH_OPT_EXTENDED = 2,
  MB_GRAPH_OPT_ALL = 99,
} mb_graph_opt_level;

typedef struct mb_runtime_options {
  int threads;                  /* intra-op threads, >= 1 */
  mb_graph_opt_level opt_level; /* runtimes without optimisation ignore it */
  int parallel_execution;       /* ORT ExecutionMode: 0 sequential */
  mb_device device;
  int verbose;              /* runtime's own logging (debug only) */
  const char *profile_path; /* per-node profile output, or NULL */
} mb_runtime_options;

typedef struct mb_runtime {
  const char *name; /* "reference", "onnxruntime" */
  /* Is it usable here? Fills available, version or reason. Never fails. */
  void (*probe)(mb_runtime_info *info);
  /* Builds a session. model: borrowed, outlives the session. model_path:
   * the file the model came from (runtimes that load files use it; the
   * model may also have been converted in memory, then model_bytes/size
   * hold its serialised form). */
  mb_status (*prepare)(const mb_model *model, const void *model_bytes,
                       size_t model_size, const mb_runtime_options *options,
                       void **session_out, mb_error *err);
  /* One inference: the timed call. inputs: borrowed, graph input order.
   * Outputs stay inside the session until the next run. */
  mb_status (*run)(void *session, const mb_tensor *const *inputs,
                   mb_error *err);
  /* Copies the last run's outputs into new caller-owned tensors
   * (mb_model_output_count slots). Never timed. */
  mb_status (*fetch_outputs)(void *session, mb_tensor **outputs_out,
                             mb_error *err);
  void (*release)(void *session);
} mb_runtime;

/* One line per adapter file. */
#define MB_RUNTIME_LIST(X)                                                     \
  X(reference)                                                                 \
  X(onnxruntime)

#define MB_X(name) extern const mb_runtime mb__runtime_##name;
MB_RUNTIME_LIST(MB_X)
#undef MB_X

/* The adapter named `name`, or NULL. */
const mb_runtime *mb__runtime_find(const char *name);
/* Adds an adapter at run time (tests register runtimes that crash, hang or
 * leak). rt must outlive the process. At most 16. */
mb_status mb__runtime_register(const mb_runtime *rt, mb_error *err);

#endif /* MB_RUNTIME_RUNTIME_H */
