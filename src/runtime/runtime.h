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
  mb_precision precision;   /* what the conversion computes in */
  /* Hybrid runtimes compile for concrete shapes: one borrowed tensor per
   * graph input with the shapes (and data) the runs will use, or NULL. */
  const mb_tensor *const *example_inputs;
  int no_fallback; /* hybrid: unsupported nodes are an error */
  int profile;     /* prepare for per-node profiling (engines' primitives
                      need it at compile time; ORT at session creation) */
  /* Build cache: where a runtime with a serialised form writes it while
   * preparing (ORT: the model after its graph optimisations), or NULL. */
  const char *save_optimized_path;
  /* INT8 on the native engines: the static quantisation parameters
   * (passes/quantize.h) of this model, from its build; borrowed for
   * prepare. NULL otherwise. */
  const struct mb_quant_params *quant_params;
  /* The conversion being prepared ("JIT_TRACE"), and the file of the
   * model format it runs (a TorchScript file, the PyTorch module's spec;
   * for ONNX conversions the model file as given, or NULL). */
  const char *conversion;
  const char *model_path;
  uint64_t seed;
  /* Calibration batches for runtimes that quantise themselves (host
   * runtimes at int8): n_calibration arrays of graph-input tensors,
   * borrowed for prepare. */
  int n_calibration;
  const mb_tensor *const *const *calibration;
  /* Host runtimes and the build cache: the build's folder for what their
   * prepare converts (NULL: no cache), and whether it holds an earlier
   * prepare's artifacts (mb_host_prepare_args). */
  const char *build_dir;
  int build_hit;
  /* Host runtimes: the model's code may run (mb_bench_config.trust_code). */
  int trust_code;
} mb_runtime_options;

typedef struct mb_runtime {
  const char *name; /* "reference", "onnxruntime" */
  int hybrid;       /* splits graphs into segments (bench reports them) */
  int host;         /* the embedding program's (host.c): its prepare is the
                       conversion, so the build ends after it */
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
  /* Optional profiling, outside timed runs. profile_reset: level 0 off,
   * 1 per segment, 2 per segment and per node (engines' primitives only
   * when prepared with options->profile); clears what was collected.
   * profile_collect: fills out (segments, nodes; entries' mean_ms and share
   * computed over out->iterations runs, which the caller sets first) with
   * what ran since the reset; its arrays are malloc'ed and owned by out. */
  void (*profile_reset)(void *session, int level);
  mb_status (*profile_collect)(void *session, mb_profile *out, mb_error *err);
  /* Optional: the multi-line detail (a host's traceback) of this
   * process's last failure, malloc'd for the caller, or NULL. */
  char *(*take_error_detail)(void);
  /* Optional (NULL: W8): the int8 form its integer kernels want on this
   * CPU (int8_form.c): W8 where they cannot saturate, MIXED where they add
   * pairs of u8 x s8 products in 16 bits and saturate (x86 without VNNI).
   * Fills reason ("this CPU has no VNNI: ..."). Never fails. */
  mb_int8_weights (*int8_weights)(char *reason, size_t size);
  /* Optional (NULL: all of them): does conversion `name` of this runtime
   * run here? 0 with reason filled when not (a host's conversion that
   * needs a newer PyTorch or a package that is missing). */
  int (*supports_conversion)(const char *name, char *reason, size_t size);
  /* Optional: how many times the session compiled again since prepare
   * (a host's torch.compile); -1 when it cannot tell. */
  int (*recompiles)(void *session);
  /* Optional (NULL: the CPU only): the devices its conversions can run on
   * here, 1u << mb_device (the CPU's bit always); reason: why not CUDA
   * when it could but cannot here. Must not initialise a device. */
  unsigned (*devices)(char *reason, size_t size);
  /* Optional, GPU sessions (prepared with options->device CUDA): 1 with
   * gpu->info's index, name, cuda_runtime and compute_capability and
   * gpu->memory_peak_mb filled; 0 when the session runs on the CPU.
   * After the timed loop. */
  int (*gpu_describe)(void *session, mb_gpu_result *gpu);
  /* Optional: the device time of the last run() in ms; < 0 unknown.
   * After each timed run, outside the timed region. */
  double (*gpu_compute_ms)(void *session);
  /* Optional: n timed copies of `inputs` to the device and of the last
   * outputs back (mb_host_runtime.gpu_copies). */
  mb_status (*gpu_copies)(void *session, const mb_tensor *const *inputs, int n,
                          double *h2d_ms, double *d2h_ms, double *mb,
                          mb_error *err);
} mb_runtime;

/* Native engines (runtime/engine.h): one line per engine file. Each one
 * is also a runtime, the hybrid runtime of runtime/hybrid.c over it. */
#define MB_ENGINE_LIST(X)                                                      \
  X(xnnpack)                                                                   \
  X(onednn)

/* Host runtimes (host.c): their code comes from the program that embeds
 * the library (mb_host_runtime_set). */
#define MB_HOST_RUNTIME_LIST(X) X(pytorch)

/* One line per adapter file, then one hybrid runtime per engine, then the
 * host runtimes. */
#define MB_RUNTIME_LIST(X)                                                     \
  X(reference)                                                                 \
  X(onnxruntime)                                                               \
  X(openvino)                                                                  \
  X(libtorch)                                                                  \
  X(aoti)                                                                      \
  MB_ENGINE_LIST(X)                                                            \
  MB_HOST_RUNTIME_LIST(X)

#define MB_X(name) extern const mb_runtime mb__runtime_##name;
MB_RUNTIME_LIST(MB_X)
#undef MB_X

/* Profile building (runtime/profile.c). Add entries with summed times,
 * then mb__profile_finish divides by p->iterations, computes shares and
 * sorts nodes slowest first. Strings are copied (truncated to fit); kernel
 * may be NULL. */
mb_status mb__profile_add_segment(mb_profile *p, const char *runtime, int nodes,
                                  const char *first_node, int64_t runs,
                                  double total_ms, mb_error *err);
mb_status mb__profile_add_node(mb_profile *p, const char *runtime,
                               const char *op_type, const char *name,
                               const char *kernel, int64_t runs,
                               double total_ms, mb_error *err);
void mb__profile_finish(mb_profile *p);
/* Frees the arrays, keeps the struct. */
void mb__profile_clear(mb_profile *p);

/* int8_form.c. The int8 form this CPU's kernels want, by its flags as
 * ONNX Runtime's MLAS dispatches on them: W8 with AVX512-VNNI, AVX-VNNI
 * or AMX (and off x86), else MIXED. Fills reason. */
mb_int8_weights mb__cpu_int8_weights(char *reason, size_t size);
/* The int8 form of a conversion on runtime rt, with why into reason.
 * requested: W8, W7 or MIXED forces it (--int8-weights; the reason then
 * says what the runtime would pick), AUTO lets the runtime decide. rt may
 * be NULL (W8). */
mb_int8_weights mb__int8_form(const mb_runtime *rt, mb_int8_weights requested,
                              char *reason, size_t size);
/* The form in words: "8-bit weights", "7-bit weights where ...". */
const char *mb__int8_weights_words(mb_int8_weights weights);

/* The adapter named `name`, or NULL. */
const mb_runtime *mb__runtime_find(const char *name);
/* A GPU session's description as a host or a libtorch module gives it
 * (mb_host_gpu) into gpu->info and gpu->memory_peak_mb (host.c). g's
 * strings need not end inside their arrays. */
void mb__gpu_from_host(const mb_host_gpu *g, mb_gpu_result *gpu);
/* Adds an adapter at run time (tests register runtimes that crash, hang or
 * leak). rt must outlive the process. At most 16. */
mb_status mb__runtime_register(const mb_runtime *rt, mb_error *err);

#endif /* MB_RUNTIME_RUNTIME_H */
