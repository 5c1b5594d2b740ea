/* modelbench: benchmark an ONNX model under many conversion options.
 *
 * The one public header. Every fallible call returns an mb_status and, when
 * it fails, writes a one-line human message into a caller-owned mb_error
 * (which may be NULL when the caller does not want the message). Outputs come
 * back through trailing *_out pointers and are left untouched on failure.
 *
 * Ownership is documented per pointer parameter: "borrowed" means the callee
 * does not keep the pointer after it returns.
 */
#ifndef MODELBENCH_H
#define MODELBENCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MB_VERSION_MAJOR 0
#define MB_VERSION_MINOR 1
#define MB_VERSION_PATCH 0
#define MB_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */

/* X(name, description) */
#define MB_STATUS_LIST(X)                                                      \
  X(OK, "ok")                                                                  \
  X(INVALID_ARGUMENT, "invalid argument")                                      \
  X(IO, "input/output error")                                                  \
  X(PARSE, "malformed model or tensor file")                                   \
  X(UNSUPPORTED, "unsupported operator, type or feature")                      \
  X(SHAPE, "shape or type mismatch")                                           \
  X(DYNAMIC, "value depends on data that is not known yet")                    \
  X(OUT_OF_MEMORY, "out of memory")                                            \
  X(OVERFLOW, "size overflow")                                                 \
  X(NOT_FOUND, "not found")                                                    \
  X(UNAVAILABLE, "unavailable on this machine")                                \
  X(MISMATCH, "results differ beyond tolerance")                               \
  X(INTERNAL, "internal error")

typedef enum mb_status {
#define MB_X(name, desc) MB_STATUS_##name,
  MB_STATUS_LIST(MB_X)
#undef MB_X
      MB_STATUS_COUNT
} mb_status;

/* A short description of a status code; never NULL. */
const char *mb_status_string(mb_status status);

/* Caller-owned error record. */
#define MB_ERROR_MESSAGE_SIZE 512
typedef struct mb_error {
  mb_status status;
  char message[MB_ERROR_MESSAGE_SIZE];
} mb_error;

/* ------------------------------------------------------------------------ */
/* Element types: values equal ONNX TensorProto.DataType.                    */
/* ------------------------------------------------------------------------ */

/* X(NAME, onnx_id, element_size_bytes, "name") */
#define MB_DTYPE_LIST(X)                                                       \
  X(UNDEFINED, 0, 0, "undefined")                                              \
  X(FLOAT, 1, 4, "float32")                                                    \
  X(UINT8, 2, 1, "uint8")                                                      \
  X(INT8, 3, 1, "int8")                                                        \
  X(UINT16, 4, 2, "uint16")                                                    \
  X(INT16, 5, 2, "int16")                                                      \
  X(INT32, 6, 4, "int32")                                                      \
  X(INT64, 7, 8, "int64")                                                      \
  X(STRING, 8, 0, "string")                                                    \
  X(BOOL, 9, 1, "bool")                                                        \
  X(FLOAT16, 10, 2, "float16")                                                 \
  X(DOUBLE, 11, 8, "float64")                                                  \
  X(UINT32, 12, 4, "uint32")                                                   \
  X(UINT64, 13, 8, "uint64")                                                   \
  X(COMPLEX64, 14, 8, "complex64")                                             \
  X(COMPLEX128, 15, 16, "complex128")                                          \
  X(BFLOAT16, 16, 2, "bfloat16")

typedef enum mb_dtype {
#define MB_X(name, id, size, str) MB_DTYPE_##name = id,
  MB_DTYPE_LIST(MB_X)
#undef MB_X
      MB_DTYPE_COUNT
} mb_dtype;

/* "float32", "int64", ...; "invalid" for out-of-range values. */
const char *mb_dtype_name(mb_dtype dtype);
/* Bytes per element; 0 for types without a fixed size (string) or invalid. */
size_t mb_dtype_size(mb_dtype dtype);
/* Parses a name as printed by mb_dtype_name (also "float", "half", "bf16").
 * Returns MB_DTYPE_UNDEFINED when unknown. */
mb_dtype mb_dtype_from_name(const char *name);

/* ------------------------------------------------------------------------ */
/* Tensors                                                                   */
/* ------------------------------------------------------------------------ */

#define MB_MAX_RANK 8
#define MB_TENSOR_ALIGNMENT 64

/* A dense, row-major tensor. `data` is MB_TENSOR_ALIGNMENT-aligned when the
 * tensor owns it. Scalars have rank 0 and numel 1. A tensor whose dims
 * contain 0 has numel 0 and may have data == NULL. */
typedef struct mb_tensor {
  mb_dtype dtype;
  int rank;
  int64_t dims[MB_MAX_RANK];
  int64_t numel;   /* product of dims */
  size_t nbytes;   /* numel * element size */
  void *data;      /* owned when capacity > 0 */
  size_t capacity; /* bytes allocated; 0 when data is borrowed or NULL */
  char *name;      /* optional, owned (malloc) */
} mb_tensor;

/* Allocates a zero-filled tensor. dims: borrowed, `rank` entries; every dim
 * must be >= 0 and the byte size must not overflow. *tensor_out receives a
 * tensor to release with mb_tensor_free. */
mb_status mb_tensor_create(mb_dtype dtype, int rank, const int64_t *dims,
                           mb_tensor **tensor_out, mb_error *err);
/* Deep copy. src: borrowed. */
mb_status mb_tensor_clone(const mb_tensor *src, mb_tensor **tensor_out,
                          mb_error *err);
/* Releases the tensor and its owned data. NULL is allowed. */
void mb_tensor_free(mb_tensor *tensor);

/* Reads a serialized ONNX TensorProto file (an `input_N.pb`). A file holding
 * a SequenceProto/OptionalProto or string data gives MB_STATUS_UNSUPPORTED. */
mb_status mb_tensor_load_pb(const char *path, mb_tensor **tensor_out,
                            mb_error *err);
/* Writes a TensorProto file. name may be NULL (tensor->name is used). */
mb_status mb_tensor_save_pb(const mb_tensor *tensor, const char *path,
                            mb_error *err);

/* ------------------------------------------------------------------------ */
/* Models                                                                    */
/* ------------------------------------------------------------------------ */

/* A parsed model in modelbench's own graph IR. Opaque. */
typedef struct mb_model mb_model;

/* Loads an ONNX model file, including external data files next to it.
 * path: borrowed. *model_out: release with mb_model_free. */
mb_status mb_model_load(const char *path, mb_model **model_out, mb_error *err);
/* Loads from memory. bytes: borrowed. base_dir: borrowed, where external
 * data files are looked up (NULL: external data is an error). */
mb_status mb_model_load_memory(const void *bytes, size_t size,
                               const char *base_dir, mb_model **model_out,
                               mb_error *err);
void mb_model_free(mb_model *model);

typedef struct mb_save_options {
  /* Tensors of at least this many bytes are written to an external data
   * file beside the model; 0 keeps every tensor inside the model (the
   * writer still moves data out when the model would exceed 2 GB). */
  size_t external_data_threshold;
  /* File name of the external data file, relative to the model's folder;
   * NULL means "<model file name>.data". */
  const char *external_data_name;
} mb_save_options;

/* Serialises the model to an ONNX file. options: borrowed, may be NULL. */
mb_status mb_model_save(const mb_model *model, const char *path,
                        const mb_save_options *options, mb_error *err);

/* The sha256 of the model file's bytes followed by its external data files'
 * bytes, as 64 lowercase hex digits plus NUL. */
const char *mb_model_sha256(const mb_model *model);

/* Shape of one graph input or output. dims[i] < 0 means dynamic; then
 * dim_params[i] holds the symbolic name or NULL. Strings are owned by the
 * model and live as long as it. */
typedef struct mb_value_info {
  const char *name;
  mb_dtype dtype;
  int rank; /* -1 when unknown */
  int64_t dims[MB_MAX_RANK];
  const char *dim_params[MB_MAX_RANK];
} mb_value_info;

int mb_model_input_count(const mb_model *model);
int mb_model_output_count(const mb_model *model);
/* index must be in range; info_out receives borrowed strings. */
mb_status mb_model_input_info(const mb_model *model, int index,
                              mb_value_info *info_out, mb_error *err);
mb_status mb_model_output_info(const mb_model *model, int index,
                               mb_value_info *info_out, mb_error *err);

/* ------------------------------------------------------------------------ */
/* Reference interpreter session                                             */
/* ------------------------------------------------------------------------ */

typedef struct mb_session mb_session;

typedef struct mb_session_options {
  int threads; /* <= 0: 1 thread */
} mb_session_options;

/* Prepares the model for the reference interpreter: resolves every node to
 * an operator implementation for the model's opset. A node whose operator is
 * not implemented fails with MB_STATUS_UNSUPPORTED naming the node and op.
 * model: borrowed, must outlive the session. options: borrowed, may be NULL. */
mb_status mb_session_create(const mb_model *model,
                            const mb_session_options *options,
                            mb_session **session_out, mb_error *err);
void mb_session_free(mb_session *session);

/* Runs the model. inputs: borrowed array of n_inputs tensors in graph input
 * order (n_inputs must equal mb_model_input_count). outputs: array of
 * n_outputs slots (n_outputs must equal mb_model_output_count) that receive
 * new tensors owned by the caller (release with mb_tensor_free). On failure
 * the output slots are left NULL. */
mb_status mb_session_run(mb_session *session, int n_inputs,
                         const mb_tensor *const *inputs, int n_outputs,
                         mb_tensor **outputs, mb_error *err);

/* Lists "domain:op_type" of nodes the reference interpreter cannot run,
 * separated by ", ", into buf (truncated to size). Returns the number of
 * distinct unsupported operators. model: borrowed. */
int mb_model_unsupported_ops(const mb_model *model, char *buf, size_t size);

/* ------------------------------------------------------------------------ */
/* Comparison                                                                */
/* ------------------------------------------------------------------------ */

typedef struct mb_compare_result {
  double max_abs_err;
  double max_rel_err;
  double cosine;   /* 1 when both tensors are all zero */
  int64_t n_bad;   /* elements outside atol + rtol * |expected| */
  int shape_match; /* 0 when dtype or dims differ */
} mb_compare_result;

/* Compares actual against expected elementwise. Both borrowed. NaN equals NaN;
 * integer and bool tensors compare exactly (tolerances still apply). */
mb_status mb_tensor_compare(const mb_tensor *actual, const mb_tensor *expected,
                            double rtol, double atol,
                            mb_compare_result *result_out, mb_error *err);

/* ------------------------------------------------------------------------ */
/* Analysis and inputs                                                       */
/* ------------------------------------------------------------------------ */

/* A concrete shape for one graph input. name: borrowed. */
typedef struct mb_input_shape {
  const char *name;
  int rank;
  int64_t dims[MB_MAX_RANK];
} mb_input_shape;

/* How to make a model's declared, possibly symbolic, input shapes concrete.
 * A zero-initialised spec means batch size 1 and no overrides. */
/* A value for every symbolic dimension of that name (--dim seq=128). name:
 * borrowed. */
typedef struct mb_dim_value {
  const char *name;
  int64_t value;
} mb_dim_value;

typedef struct mb_shape_spec {
  int64_t batch_size; /* replaces a dynamic first dim; <= 0 means 1 */
  int n_shapes;
  const mb_input_shape *shapes; /* borrowed; explicit overrides by name */
  int n_dims;
  const mb_dim_value *dims; /* borrowed; symbolic dims by name, all inputs */
} mb_shape_spec;

/* Resolves the concrete shape of every graph input: an explicit override
 * wins, then the declared static dims, then spec->dims for a symbolic dim
 * of that name (any position), then spec->batch_size for a dynamic first
 * dim. Fails with
 *   MB_STATUS_DYNAMIC           another dim is dynamic (the message names
 *                               the input, dim index and symbolic name, and
 *                               the --dim NAME=V that would set it),
 *   MB_STATUS_INVALID_ARGUMENT  an override names no input (the message
 *                               lists the inputs), its rank differs from the
 *                               declared rank, or a dim is negative,
 *   MB_STATUS_OVERFLOW          a shape's byte size overflows.
 * spec: borrowed, may be NULL. shapes_out: caller array with
 * mb_model_input_count entries; the names in it are borrowed from the model
 * and live as long as it. */
mb_status mb_model_resolve_input_shapes(const mb_model *model,
                                        const mb_shape_spec *spec,
                                        mb_input_shape *shapes_out,
                                        mb_error *err);

/* Value range of generated data for one input; name NULL applies to every
 * input without an entry of its own. Floats are drawn from [lo, hi),
 * integers from [lo, hi] (both ends included). */
typedef struct mb_input_range {
  const char *name;
  double lo, hi;
} mb_input_range;

/* Generates deterministic input data for the resolved input shapes (see
 * mb_model_resolve_input_shapes): the same seed gives the same bytes on every
 * machine. Without a range, floats are uniform in [-1, 1), integers uniform
 * in [0, 100) and bools random. Fails with MB_STATUS_UNSUPPORTED for string
 * or undeclared element types. spec, ranges: borrowed, may be NULL.
 * inputs_out: caller array with mb_model_input_count slots that receive new
 * tensors named after the inputs (release each with mb_tensor_free); on
 * failure every slot is NULL. */
mb_status mb_inputs_generate(const mb_model *model, const mb_shape_spec *spec,
                             uint64_t seed, int n_ranges,
                             const mb_input_range *ranges,
                             mb_tensor **inputs_out, mb_error *err);

/* Statistics of one operator type. */
typedef struct mb_op_stats {
  const char *domain; /* "" for ai.onnx */
  const char *op_type;
  int64_t count;         /* nodes of this type in the main graph */
  double flops;          /* sum over the nodes whose FLOPs are known */
  int64_t unknown_count; /* nodes whose shapes were not known */
  int has_formula;       /* 0: no FLOPs formula (data movement), counts 0 */
} mb_op_stats;

/* Statistics of one node of the main graph, in graph (topological) order,
 * so that per-node measurements can be attached by index. */
typedef struct mb_node_stats {
  const char *name; /* may be "" */
  int op_index;     /* index into mb_model_stats.ops */
  double flops;     /* < 0 when unknown */
} mb_node_stats;

typedef struct mb_opset_version {
  const char *domain; /* "" for ai.onnx */
  int64_t version;
} mb_opset_version;

/* Everything `modelbench analyze` reports. Filled by mb_model_analyze; every
 * pointer in it (strings included) is owned by the struct and released by
 * mb_model_stats_free, so the stats may outlive the model. */
typedef struct mb_model_stats {
  const char *producer_name, *producer_version; /* "" when absent */
  int64_t ir_version;
  int n_opsets;
  mb_opset_version *opsets;
  char sha256[65];
  int n_inputs, n_outputs;
  mb_value_info *inputs, *outputs; /* declared (possibly symbolic) shapes */
  /* Concrete shapes used for FLOPs: input_shapes has n_inputs entries and
   * output_shapes n_outputs (rank -1 when not inferred); both NULL when the
   * input shapes could not be resolved (see shape_note). */
  mb_input_shape *input_shapes, *output_shapes;
  int64_t node_count;
  int n_ops;
  mb_op_stats *ops; /* sorted by FLOPs, then count, descending */
  int n_nodes;
  mb_node_stats *nodes;
  int64_t param_count, param_bytes; /* initializers, subgraphs included */
  double total_flops;               /* over nodes whose FLOPs are known */
  int64_t unknown_flops_nodes;      /* 0 when total_flops is complete */
  /* Why shapes or FLOPs are unknown (unresolved dynamic input, failed shape
   * inference), or "" when everything resolved. */
  char shape_note[MB_ERROR_MESSAGE_SIZE];
  int n_unsupported;     /* operators the reference interpreter lacks */
  char *unsupported_ops; /* "domain:op, ..." or "" */
  /* Pre-quantised (QDQ, QOperator, integer or dynamic quantisation
   * operators that quantise activations): bench judges every conversion
   * of it by the cosine criterion. quantization: what was found, "QDQ: 12
   * QuantizeLinear, 12 DequantizeLinear; ...", "" when nothing. */
  int quantized;
  char quantization[256];
  /* Bytes of the inputs at their concrete shapes, and of every value a
   * node writes (outputs included) at its inferred shape; < 0 when a shape
   * is unknown. */
  double input_bytes, activation_bytes;
  void *storage_; /* internal */
} mb_model_stats;

/* Analyses the model: metadata, op histogram, parameters and FLOPs for the
 * input shapes resolved from spec (borrowed, may be NULL). Unresolvable
 * dynamic dims or failed shape inference do not fail the call: FLOPs are
 * then unknown and stats_out->shape_note says why. Fails on an invalid spec
 * (as mb_model_resolve_input_shapes: INVALID_ARGUMENT, OVERFLOW) or OOM.
 * stats_out: caller-owned struct, filled on success (release its contents
 * with mb_model_stats_free), zeroed on failure. */
mb_status mb_model_analyze(const mb_model *model, const mb_shape_spec *spec,
                           mb_model_stats *stats_out, mb_error *err);
/* Releases what mb_model_analyze put into stats and zeroes it. NULL and a
 * zeroed struct are allowed. */
void mb_model_stats_free(mb_model_stats *stats);

/* ------------------------------------------------------------------------ */
/* Benchmark engine: runtimes, conversions, configuration, results           */
/* ------------------------------------------------------------------------ */

/* X(NAME, "name") */
#define MB_DEVICE_LIST(X)                                                      \
  X(CPU, "cpu")                                                                \
  X(CUDA, "cuda")                                                              \
  X(AUTO, "auto")
typedef enum mb_device {
#define MB_X(name, str) MB_DEVICE_##name,
  MB_DEVICE_LIST(MB_X)
#undef MB_X
      MB_DEVICE_COUNT
} mb_device;
const char *mb_device_name(mb_device device);

/* X(NAME, "name") */
#define MB_PRECISION_LIST(X)                                                   \
  X(FP32, "fp32")                                                              \
  X(FP16, "fp16")                                                              \
  X(BF16, "bf16")                                                              \
  X(INT8, "int8")
typedef enum mb_precision {
#define MB_X(name, str) MB_PRECISION_##name,
  MB_PRECISION_LIST(MB_X)
#undef MB_X
      MB_PRECISION_COUNT
} mb_precision;
const char *mb_precision_name(mb_precision precision);

/* How a result's outputs were judged against the reference: TOLERANCE,
 * every value within rtol/atol (fp32 conversions of a float model);
 * COSINE, the reduced-precision criterion, 1 - cosine of every output
 * within max_error (fp16, bf16 and int8 conversions, and every conversion
 * of a pre-quantised model: runtimes round differently from the reference
 * at its quantisation boundaries). UNKNOWN: not recorded (reports from
 * before the field; readers then go by the conversion's precision).
 * X(NAME, "name") */
#define MB_ACCURACY_CRITERION_LIST(X)                                          \
  X(UNKNOWN, "unknown")                                                        \
  X(TOLERANCE, "rtol_atol")                                                    \
  X(COSINE, "cosine")
typedef enum mb_accuracy_criterion {
#define MB_X(name, str) MB_ACCURACY_##name,
  MB_ACCURACY_CRITERION_LIST(MB_X)
#undef MB_X
      MB_ACCURACY_CRITERION_COUNT
} mb_accuracy_criterion;
/* "rtol_atol", "cosine", "unknown"; "invalid" out of range. */
const char *mb_accuracy_criterion_name(mb_accuracy_criterion criterion);
/* The criterion named `name`; -1 when none. */
int mb_accuracy_criterion_from_name(const char *name);

/* The width of an int8 conversion's weights (its int8 form). x86 CPUs
 * without VNNI or AMX multiply uint8 activations by int8 weights with
 * vpmaddubsw, which adds pairs of products in 16 bits and saturates
 * (2 x 255 x 127 > 32767); weights of at most 64 in magnitude (7 bits,
 * ONNX Runtime's reduce_range) cannot. MIXED gives 7-bit weights to the
 * products whose input is signed (its uint8 values sit around the zero
 * point 128, so pairs with large weights overflow routinely) and 8-bit
 * ones to those whose input is non-negative (a ReLU's: overflow needs two
 * adjacent inputs above half their range meeting two near-maximal weights
 * of one sign), which keeps 8-bit accuracy where overflow is rare. AUTO:
 * each runtime picks for this CPU (8, or MIXED where its products
 * saturate). X(NAME, "name") */
#define MB_INT8_WEIGHTS_LIST(X)                                                \
  X(AUTO, "auto")                                                              \
  X(W8, "8")                                                                   \
  X(W7, "7")                                                                   \
  X(MIXED, "mixed")
typedef enum mb_int8_weights {
#define MB_X(name, str) MB_INT8_WEIGHTS_##name,
  MB_INT8_WEIGHTS_LIST(MB_X)
#undef MB_X
      MB_INT8_WEIGHTS_COUNT
} mb_int8_weights;
/* "auto", "8", "7", "mixed"; "invalid" out of range. */
const char *mb_int8_weights_name(mb_int8_weights weights);
/* The value named `name` ("7", "8", "mixed", "auto"); -1 when none. */
int mb_int8_weights_from_name(const char *name);

/* The forms a model comes in; every conversion consumes one of them.
 * X(NAME, "name") */
#define MB_MODEL_FORMAT_LIST(X)                                                \
  X(ONNX, "onnx")                                                              \
  X(TORCHSCRIPT, "torchscript")                                                \
  X(PYTORCH, "pytorch")                                                        \
  X(ONNX_DYNAMO, "onnx_dynamo")                                                \
  X(AOTI, "aoti")
typedef enum mb_model_format {
#define MB_X(name, str) MB_MODEL_FORMAT_##name,
  MB_MODEL_FORMAT_LIST(MB_X)
#undef MB_X
      MB_MODEL_FORMAT_COUNT
} mb_model_format;
/* "onnx", "torchscript", "pytorch", "onnx_dynamo", "aoti"; "invalid" for
 * out-of-range values. */
const char *mb_model_format_name(mb_model_format format);

/* Which formats the model file at `path` offers, as a mask of
 * (1u << MB_MODEL_FORMAT_*): an ONNX file offers ONNX, a TorchScript
 * archive (torch.jit.save) TORCHSCRIPT, and a model manifest
 * (docs/model-manifest.md: one model in several formats, as the Python
 * front writes it) every format it lists with a path. Reads only the
 * file's start (a manifest whole). path: borrowed. */
mb_status mb_model_file_formats(const char *path, unsigned *formats_out,
                                mb_error *err);

/* One runtime adapter as the registry reports it. */
typedef struct mb_runtime_info {
  const char *name; /* "reference", "onnxruntime", ... (static) */
  int available;    /* 1 when usable on this machine */
  char version[64]; /* library version when available, else "" */
  char reason[256]; /* why not available, else "" */
} mb_runtime_info;

int mb_runtime_count(void);
/* Probes runtime `index` (0 .. mb_runtime_count()-1). Probing may dlopen a
 * library; the benchmark parent never calls this (workers do). */
mb_status mb_runtime_get(int index, mb_runtime_info *info_out, mb_error *err);

/* One conversion option: a named list of steps ending in a runtime. Names
 * join steps with '+' in the order they are applied, words within a step
 * with '_': REFERENCE, ORT_CPU, ORT_CPU_NO_OPT, FP16+ORT_CPU, ... */
typedef struct mb_conversion_info {
  int id;              /* stable numeric id, shown by `modelbench list` */
  const char *name;    /* static */
  const char *runtime; /* runtime adapter name (static) */
  mb_device device;
  mb_precision precision;
  const char *description; /* static, one line */
  int in_default_set;      /* 1 when run without -c */
  int tier;         /* 1 quick check, 2 core deployment options, 3 everything;
                      `--tier N` runs the available conversions with tier <= N */
  int available;    /* filled by mb_conversion_get */
  char reason[256]; /* why not available; when available, a note such as
                       "emulated on this CPU: ..." (such a conversion is
                       tier 3) or "int8 with 7-bit weights: ...", else "" */
  mb_model_format format; /* the form of the model it runs: ONNX for most,
                             PYTORCH for EAGER, JIT_*, ...; it applies to a
                             model only when the model offers that format */
  /* Conversions that quantise to int8 and are available: the int8 form
   * they use here by default (MIXED where the runtime's u8 x s8 products
   * saturate on this CPU, else W8; reason then says why); AUTO otherwise. */
  mb_int8_weights int8_weights;
  /* The devices it can run on (1u << mb_device: CPU, CUDA) and, of those,
   * the ones usable here (the GPU present, the runtime built for it);
   * devices_reason says why one it can run on is not usable here ("cuda:
   * no NVIDIA driver (libnvidia-ml.so.1: not found)"), else "". The
   * config's device picks among them (bench --device). */
  unsigned devices;
  unsigned devices_here;
  char devices_reason[256];
} mb_conversion_info;

int mb_conversion_count(void);
/* Describes conversion `index` and checks its availability here (probes its
 * runtime). info_out: caller-owned. */
mb_status mb_conversion_get(int index, mb_conversion_info *info_out,
                            mb_error *err);
/* Finds a conversion by exact name (case-insensitive) or numeric id. An
 * unknown name fails with MB_STATUS_NOT_FOUND and a message suggesting the
 * closest names. */
mb_status mb_conversion_find(const char *name_or_id, int *index_out,
                             mb_error *err);
/* 1 when conversion `index` applies to a model offering `formats` (a mask
 * from mb_model_file_formats), else 0. */
int mb_conversion_applies(int index, unsigned formats);
/* Parses a comma-separated list of names and ids, keeping the given order.
 * Fails on the first unknown entry (with suggestions) or a duplicate.
 * indices_out: caller array of `max` entries. */
mb_status mb_conversion_parse_list(const char *list, int *indices_out, int max,
                                   int *count_out, mb_error *err);

/* Called by the engine for each batch of inputs when the user provides data
 * (C API only). Must fill inputs_out (mb_model_input_count slots) with new
 * tensors, released by the engine; `sample` counts from 0. Return
 * MB_STATUS_NOT_FOUND when there are no more samples. */
typedef mb_status (*mb_data_loader_fn)(void *user, int64_t sample,
                                       const mb_model *model,
                                       mb_tensor **inputs_out, mb_error *err);

struct mb_bench_result;
/* Progress and streaming callbacks (may be NULL). phase: "build" (the
 * build cache step), "load", "warmup", "measure", "accuracy", "segments"
 * (hybrid conversions' untimed per-segment pass), "done". */
typedef void (*mb_bench_progress_fn)(void *user, int conversion_i,
                                     int n_conversions, const char *conversion,
                                     const char *phase, int64_t iterations,
                                     double elapsed_s);
typedef void (*mb_bench_result_fn)(void *user,
                                   const struct mb_bench_result *result);

/* ---- load scenarios: MLPerf LoadGen's questions (modelbench load) ----
 * X(NAME, "name"). NONE is bench's timed loop. */
#define MB_LOAD_SCENARIO_LIST(X)                                               \
  X(NONE, "none")                                                              \
  X(SINGLE_STREAM, "single-stream")                                            \
  X(SERVER, "server")                                                          \
  X(OFFLINE, "offline")
typedef enum mb_load_scenario {
#define MB_X(name, str) MB_LOAD_##name,
  MB_LOAD_SCENARIO_LIST(MB_X)
#undef MB_X
      MB_LOAD_SCENARIO_COUNT
} mb_load_scenario;
const char *mb_load_scenario_name(mb_load_scenario scenario);
/* "single-stream", "server", "offline" (or "none"). Fails with
 * MB_STATUS_INVALID_ARGUMENT listing the names. */
mb_status mb_load_scenario_parse(const char *name, mb_load_scenario *out,
                                 mb_error *err);

/* How a load run issues queries (a query is one input sample of the run's
 * batch size). Times in seconds. */
typedef struct mb_load_config {
  mb_load_scenario scenario; /* default NONE: bench's timed loop */
  /* server: mean rate of the seeded Poisson arrivals (required unless
   * find_peak, where it is the first QPS tried; 0: estimated from the
   * warm-up). offline: the expected rate that sizes the query set as
   * LoadGen does (max(min_queries, qps * min_duration) queries issued at
   * once); 0 issues queries until both minimums are met. */
  double qps;
  /* Sessions serving queries in parallel, each prepared alike and run on a
   * thread of its own (server, offline); default 1. */
  int concurrency;
  double min_duration;  /* a valid run lasts this long; default 10 */
  int64_t min_queries;  /* a valid run holds this many; default 100 */
  double qps_tolerance; /* server: achieved QPS below the schedule's rate
                           by more than this share is INVALID; 0.1 */
  /* The latency SLO (--slo p99=20ms): the slo_percentile-th percentile of
   * the latency must stay <= slo_ms. slo_percentile 0: no SLO. */
  double slo_percentile;
  double slo_ms;
  int find_peak; /* server: search the highest QPS that meets the SLO */
} mb_load_config;

/* Every setting of a benchmark run. Initialise with mb_bench_config_init,
 * then override; times are in seconds. Pointers are borrowed for the
 * duration of mb_benchmark_model. */
typedef struct mb_bench_config {
  int batch_size;            /* replaces a dynamic first dim; default 1 */
  int n_samples;             /* distinct input batches; default 1 */
  mb_device device;          /* default MB_DEVICE_CPU */
  int allow_device_override; /* a conversion for another device moves there */
  int isolate;               /* one child process per conversion; default 1 */
  int fail_fast;             /* stop at the first failure; default 0 */
  /* Build only: each conversion is built (into the build cache when it is
   * on) and loaded into its runtime, then the worker stops: no reference,
   * no timed run, no accuracy; a conversion that got that far is
   * MB_BENCH_BUILT with build_ms, cache_hit and load_ms. Default 0. */
  int build_only;
  int threads;            /* intra-op threads; default 1 */
  int warmup_iterations;  /* default 5 */
  double warmup_seconds;  /* default 0.5 */
  int min_iterations;     /* default 20 (raised to cover n_samples) */
  double min_seconds;     /* default 2 */
  double max_seconds;     /* cap of the timed phase; default 30 */
  double timeout_seconds; /* per conversion, whole child; default 300 */
  /* --ci-target: past the minimums, keep timing until the 95% interval of
   * the median is within this share of it (0.02: +-2%) or max_seconds
   * passes; the result's ci_target says which. 0 (default): off. */
  double ci_target;
  /* Realistic phases after the steady state, each beside it in the result
   * (docs/json-schema.md, "realistic"): fresh_inputs times each iteration
   * on a different sample of a pool larger than the last-level cache;
   * cold_cache flushes that cache before each iteration. Default 0. */
  int fresh_inputs;
  int cold_cache;
  /* n_conversions entries or NULL: an entry > 0 replaces timeout_seconds
   * for the conversion at the same position. */
  const double *conversion_timeouts;
  uint64_t seed;     /* input generation; default 0 */
  double rtol, atol; /* accuracy tolerance vs the reference */
  /* Reduced-precision conversions (fp16, bf16, int8) are judged by
   * 1 - cosine similarity per output instead of rtol/atol: above max_error
   * the result is flagged inaccurate. <= 0: 1e-3 (cosine >= 0.999). */
  double max_error;
  int n_conversions;      /* 0: the default set */
  const int *conversions; /* registry indices, in run order */
  int baseline;           /* index into conversions; -1: the first */
  /* What accuracy is measured against: a registry index whose outputs
   * every conversion is compared with (it need not be in `conversions`),
   * or -1 (default) for the model's own reference: the conversion a model
   * manifest names (EAGER for a PyTorch model), else the reference
   * interpreter. */
  int reference;
  /* Task accuracy: an .npy file of integer class labels, one per row of
   * the input samples in order (the rows of sample 0, then sample 1, ...);
   * every conversion then reports the top-1 accuracy of its first output
   * against them (task_accuracy). NULL: none. */
  const char *labels_path;
  mb_shape_spec shapes; /* --shape overrides; batch_size above wins */
  int n_ranges;
  const mb_input_range *ranges; /* --input-range */
  const char *inputs_dir;       /* folder of test_data_set_* or .npy; or NULL */
  mb_data_loader_fn loader;     /* C API data loader, or NULL */
  void *loader_user;
  int no_fallback; /* hybrid conversions: a node the engine cannot run is
                      an error (listing them) instead of running on the
                      reference interpreter */
  /* Code from the model may run (bench's --trust-code): a PyTorch form
   * that is a pickle (a manifest's pytorch spec of kind module or factory,
   * its sys_path entries, a torch.save .pt) runs code when loaded, so it
   * is loaded only when this is 1. TorchScript, torch.export archives and
   * ONNX are data and need no trust. Default 0; a config file cannot set
   * it. */
  int trust_code;
  /* The build cache (converted models, runtimes' serialised forms,
   * partition plans): build_cache 1 uses it (the CLI's default), 0 does not
   * (the library's default). cache_dir: NULL for $MODELBENCH_CACHE_DIR or
   * ~/.cache/modelbench. rebuild: 0 if needed, 1 always, 2 never (a
   * conversion without a valid build fails). lean_cache: drop artifacts
   * after use, keep state and logs. */
  int build_cache;
  const char *cache_dir;
  int rebuild;
  int lean_cache;
  /* Static int8 conversions (INT8_STATIC+...) calibrate on
   * calibration_dir when set (a folder like inputs_dir: its first
   * calibration_samples samples, all of them when <= 0), else on the
   * user's inputs (inputs_dir, loader), else on calibration_samples
   * generated batches (<= 0: 100), seeded apart from the evaluation
   * inputs. Calibration data is part of the build key (its sha256). */
  int calibration_samples;
  const char *calibration_dir;
  /* How a calibrated range is taken from what a tensor saw: 0 min/max
   * (ORT's default), 1 percentile (99.999% of the values, cutting
   * outliers). */
  int calibration_method;
  /* The int8 form of INT8_DYNAMIC+ and INT8_STATIC+ conversions: AUTO
   * (default) lets each conversion's runtime pick for this CPU (MIXED
   * where its u8 x s8 products saturate, x86 without VNNI or AMX, else
   * W8); W8, W7 or MIXED forces it. Part of the build key and of each
   * result. */
  mb_int8_weights int8_weights;
  /* Per-node precision of the int8 conversions (INT8_DYNAMIC+...,
   * INT8_STATIC+...): the names of nodes (as in the model) left in float32
   * while the rest is quantised; every engine running the quantised model
   * or its parameters (ORT_CPU, XNNPACK, ONEDNN, REFERENCE) then runs them
   * in float. A name the model lacks fails the run, naming it. Part of the
   * build key as a set (order and repeats do not count) and of each int8
   * result ("kept_float"). Borrowed; NULL when n_keep_float is 0. */
  int n_keep_float;
  const char *const *keep_float;
  /* Labels of the run, "key=value" each (bench's --label): the report
   * keeps them (with a model manifest's own labels) and `bench` stores them
   * with the run in the results database. Borrowed; may be NULL. */
  int n_labels;
  const char *const *labels;
  const char *log_dir; /* per-conversion logs; NULL: a temp folder */
  int log_level;       /* mb_log_level of the CLI: 3 = debug */
  mb_bench_progress_fn on_progress;
  mb_bench_result_fn on_result; /* called as soon as each result exists */
  void *user;
  /* Load scenarios instead of the timed loop (modelbench load). */
  mb_load_config load;
  /* The sweep point this run is (--sweep: "batch=4 threads=2 seq=64"),
   * copied into the report; NULL when the run is no sweep's point. */
  const char *sweep_point;
  /* Cold start (bench's --cold): before each conversion's run, a worker of
   * its own builds it with the build cache rebuilt (the miss), then the
   * run itself builds from the cache (the hit); result->cold holds both,
   * the load, the first inference and the iterations to steady state.
   * Default 0. */
  int cold;
  /* What a core costs per hour (--price-per-core-hour, any currency): each
   * result then gets cost_per_million. <= 0 (default): no cost. */
  double price_per_core_hour;
  /* This machine's peaks (measured once per thread count and cached, a
   * few seconds) and each result's roofline: 1 (default) or 0 (bench
   * --no-roofline, $MODELBENCH_NO_ROOFLINE=1). */
  int roofline;
  /* Hybrid conversions (XNNPACK, ONEDNN...): the untimed per-segment pass
   * after the benchmark (the result's segments and precision_share): 1
   * (default) or 0 (tune's measurements, which read neither: 0.45 s of
   * every ResNet-18 measurement on ONEDNN). */
  int segments;
} mb_bench_config;

/* Fills every field with its default. */
void mb_bench_config_init(mb_bench_config *config);

/* Reads a JSON config file onto config (keys as the long CLI options with
 * '_' for '-': "batch_size", "warmup_time", "conversions": ["ORT_CPU"],
 * ...). Unknown keys and wrong types fail with MB_STATUS_INVALID_ARGUMENT
 * naming the key. String storage (names, paths) is owned by *storage_out
 * (free with free()) and must outlive the config's use. */
mb_status mb_bench_config_load_json(const char *path, mb_bench_config *config,
                                    void **storage_out, mb_error *err);

/* X(NAME, "name") */
#define MB_BENCH_STATUS_LIST(X)                                                \
  X(OK, "ok")                                                                  \
  X(ERROR, "error")                                                            \
  X(TIMEOUT, "timeout")                                                        \
  X(CRASHED, "crashed")                                                        \
  X(UNAVAILABLE, "unavailable")                                                \
  X(SKIPPED, "skipped")                                                        \
  X(BUILT, "built")
typedef enum mb_bench_status {
#define MB_X(name, str) MB_BENCH_##name,
  MB_BENCH_STATUS_LIST(MB_X)
#undef MB_X
      MB_BENCH_STATUS_COUNT
} mb_bench_status;
const char *mb_bench_status_name(mb_bench_status status);
/* Whether a result of this status is a failure (error, timeout, crashed):
 * ok, built, unavailable and skipped are not. An invalid status is. */
int mb_bench_status_failed(mb_bench_status status);

typedef struct mb_latency_stats {
  double mean, median, min, max, p90, p95, p99, stddev;
  double cv; /* stddev / mean */
} mb_latency_stats;

/* Accuracy of one output against the reference interpreter. */
typedef struct mb_output_accuracy {
  char name[128];
  double max_abs_err, max_rel_err, cosine;
  /* Classifier-shaped outputs (float [rows, classes >= 2]): the share of
   * rows whose top-1 class matches the reference's, over top1_rows rows;
   * -1 when the output is not classifier-shaped. */
  double top1_agreement;
  int64_t top1_rows;
} mb_output_accuracy;

/* The machine a run (or one result) ran on. Two machines are of the same
 * kind when cpu_model and cores match: their latencies compare. */
typedef struct mb_machine_info {
  char cpu_model[128];
  int cores;
  char isa_flags[256]; /* "avx2 avx512f ..." */
  char os[128];
  char governor[32];   /* "performance", "powersave", "" unknown */
  double load_average; /* 1-minute, at the start of the run */
  char host[64];       /* the host name; "" unknown */
} mb_machine_info;

/* What besides the machine makes a run faster or slower, captured by the
 * parent when a run starts, so that `compare` can say what changed between
 * two runs (docs/json-schema.md, "environment"). A fact that cannot be read
 * says why ("unknown: ..."). Runtime versions are each result's
 * runtime_version. */
typedef struct mb_environment {
  int recorded;              /* 0: not captured (an older report) */
  char cpu_flags_sha256[17]; /* 16 hex digits of the sha256 of
                                /proc/cpuinfo's whole flags line; "" none */
  char governor[128];        /* cpu0's scaling governor, or "unknown: why" */
  char smt[128];             /* "on", "off", or "unknown: why" */
  char kernel[256];          /* uname: release and version */
  int cpus_allowed;          /* CPUs in the affinity mask; 0 unknown */
  char blas[192];            /* OpenBLAS's build, openblas_get_config() */
  /* The environment variables that change speed (OMP_*, MKL_*, ...,
   * LD_PRELOAD), "NAME=value" verbatim, sorted by name. Owned by the
   * report. */
  int n_variables;
  const char **variables;
} mb_environment;
/* How a --ci-target run ended (result->ci_target). */
typedef struct mb_ci_target_result {
  double target;     /* asked (config ci_target); 0: not asked */
  int met;           /* 1: stopped by the target; 0: by max_seconds */
  double half_width; /* half the median's 95% interval / the median when
                        the loop stopped; < 0 when too few samples */
} mb_ci_target_result;

/* A realistic phase (fresh inputs, cold cache) measured after the steady
 * state: iterations 0 when it was not asked or did not run. */
typedef struct mb_realistic_stats {
  int64_t iterations;
  double median_ms, p99_ms;
  double gap;           /* median / the steady state's median - 1 */
  int64_t pool_samples; /* fresh inputs: distinct input buffers cycled */
  double pool_mb;       /* their size; the cold cache: the flushed buffer */
} mb_realistic_stats;
/* This machine's peaks (`modelbench machine`): what its GEMM kernels and
 * memory reach at a thread count, measured once in a child process and
 * cached in the cache folder (docs/json-schema.md, "peaks"). A figure of 0
 * was not measured; its note says why. */
typedef struct mb_machine_peaks {
  int measured; /* 0: none (bench --no-roofline, an older report, a failure:
                   note says which) */
  int threads;
  double fp32_gflops;   /* the best of OpenBLAS sgemm and oneDNN's matmul */
  char fp32_source[32]; /* "openblas sgemm", "onednn matmul" */
  double int8_gops;     /* oneDNN u8 x s8 -> s32 matmul */
  char int8_note[160];  /* why int8_gops is 0; "" when measured */
  double bf16_gflops;   /* oneDNN bf16 matmul, CPUs with avx512_bf16/amx */
  char bf16_note[160];  /* "not supported by this CPU: no ..." */
  double bandwidth_gbs; /* STREAM-triad-like, arrays far beyond the LLC */
  char cpu_model[128];  /* the cache key: model, flags' hash, threads */
  char cpu_flags_sha256[17];
  double measured_at; /* Unix time of the measurement */
  int from_cache;     /* read from the cache, not measured now */
  char note[256];
} mb_machine_peaks;

/* What bounds a result, by the roofline model (docs/json-schema.md,
 * "roofline"). X(NAME, "name") */
#define MB_ROOFLINE_BOUND_LIST(X)                                              \
  X(UNKNOWN, "unknown")                                                        \
  X(COMPUTE, "compute-bound")                                                  \
  X(MEMORY, "memory-bound")                                                    \
  X(OVERHEAD, "overhead-bound")
typedef enum mb_roofline_bound {
#define MB_X(name, str) MB_ROOFLINE_##name,
  MB_ROOFLINE_BOUND_LIST(MB_X)
#undef MB_X
      MB_ROOFLINE_BOUND_COUNT
} mb_roofline_bound;
const char *mb_roofline_bound_name(mb_roofline_bound bound);

/* One result on this machine's roofline: achieved = the model's FLOPs per
 * run (the batch included) / median latency; attainable = min(compute
 * peak, intensity x bandwidth). bound: COMPUTE or MEMORY by the roof that
 * limits attainable, OVERHEAD when achieved is below
 * MB_ROOFLINE_OVERHEAD_SHARE of attainable (time goes elsewhere:
 * dispatch, layout changes, unfused or unvectorised kernels); UNKNOWN
 * (every figure 0) when FLOPs, peaks or the latency are missing. */
#define MB_ROOFLINE_OVERHEAD_SHARE 0.25
typedef struct mb_roofline {
  mb_roofline_bound bound;
  double gflops;            /* achieved */
  double bytes;             /* estimated bytes moved per run */
  double intensity;         /* FLOPs per byte */
  double peak_gflops;       /* the compute roof of the result's precision */
  char peak_precision[32];  /* "fp32", "int8", "int8 90% + fp32" */
  double bandwidth_gbs;     /* the memory roof */
  double attainable_gflops; /* min(peak, intensity x bandwidth) */
  double peak_share;        /* gflops / peak_gflops */
  double bandwidth_share;   /* (bytes / latency) / bandwidth */
} mb_roofline;

/* One run of a find-peak search. */
typedef struct mb_load_trial {
  double target_qps;   /* asked */
  double achieved_qps; /* queries completed per second */
  double latency_ms;   /* at the SLO's percentile, from arrival */
  int valid;           /* LoadGen's rules: duration, queries, QPS */
  int slo_met;
} mb_load_trial;

/* A delay the load harness itself adds, over a server run's queries, in
 * microseconds. */
typedef struct mb_load_delay_us {
  double p50, p99, max;
} mb_load_delay_us;

/* What a load run measured (result->load); scenario NONE for bench's
 * timed loop. latency_ms of the result then holds each query's latency
 * from its scheduled arrival (server: queueing included), samples_ms those
 * latencies in query order, iterations the queries served. */
typedef struct mb_load_stats {
  mb_load_scenario scenario;
  int concurrency;
  double target_qps;     /* server: asked (find-peak: the proving run's) */
  double scheduled_qps;  /* server: queries / last scheduled arrival */
  double achieved_qps;   /* queries completed / duration */
  int64_t queries;       /* issued */
  int64_t unserved;      /* not started before max_seconds (their latency
                            counts up to the stop, a lower bound) */
  int samples_per_query; /* the batch size */
  double duration_s;     /* start to the last completion */
  int valid;             /* 0: INVALID, invalid_reason says why */
  char invalid_reason[256];
  /* Queries waiting for a session when a query arrives (server). */
  double queue_depth_mean;
  int64_t queue_depth_max;
  mb_latency_stats service_ms; /* run() alone, without queueing */
  /* The SLO (config slo_percentile > 0): the latency at its percentile,
   * met (1), missed (0) or no SLO (-1), and the share of queries slower
   * than slo_ms. */
  double slo_latency_ms;
  int slo_met;
  double over_slo_share;
  /* server: what the harness added, apart from the latency. The
   * generator's lateness: when a query was issued minus its scheduled
   * arrival. The hand-off delay: when a session started running it minus
   * the later of its issue and the moment that session became free.
   * idle_sleeps: waits of an idle session that slept in the kernel (its
   * query far ahead; it wakes before the query is due); spin_fallbacks:
   * waits that spun past the spin limit and fell back to short sleeps.
   * spin_always: the CPUs were enough for every session's threads and
   * the generator, which then spun throughout and never slept;
   * spin_margin_us otherwise (NAN with spin_always): how long before each
   * arrival the generator stopped sleeping and spun, learned from its own
   * timer wake-ups' lateness. steal_ms: CPU time the hypervisor took
   * from this machine's CPUs during the run (/proc/stat; 0 on bare
   * metal, NAN when unknown): a stall of a spinning thread that no
   * harness avoids. */
  mb_load_delay_us generator_lateness_us;
  mb_load_delay_us handoff_us;
  int64_t idle_sleeps, spin_fallbacks;
  int spin_always;
  double spin_margin_us;
  double steal_ms;
  /* server: the latency p99 (ms) of an ideal FIFO queue with
   * `concurrency` servers on the run's own arrivals and measured service
   * times; harness_excess 1 when the run's p99 exceeds it by more than the
   * harness explains (generator lateness p99 + hand-off p99 + 10%), with
   * a warning giving the figures. */
  double ideal_p99_ms;
  int harness_excess;
  /* find-peak: the highest QPS whose run met the SLO and was valid (0
   * when none did); every run of the search in order. trials: owned. */
  double peak_qps;
  int n_trials;
  mb_load_trial *trials;
} mb_load_stats;

/* What a first request costs (config->cold; docs/json-schema.md,
 * "cold_start"). Times in milliseconds; < 0 when not known, note says
 * why. */
typedef struct mb_cold_start {
  int measured;         /* 0: not asked for, or the run did not get there */
  double build_miss_ms; /* the build step with the cache rebuilt */
  double build_hit_ms;  /* the build step again, from the cache */
  double model_read_ms; /* the model file read and parsed, as a new
                           process would */
  double load_ms;       /* model_read_ms + session creation (the run's) */
  double first_inference_ms;
  /* Iterations (the first run, then warm-up, then timed) before latency
   * settled: mb__steady_iterations' rule; -1 when it never did. */
  int64_t iterations_to_steady;
  double time_to_first_result_ms;      /* build_hit + load + first */
  double time_to_first_result_miss_ms; /* build_miss + load + first */
  char note[192];                      /* "" or why a figure is missing */
} mb_cold_start;

/* Energy of the timed phase from RAPL's package domains
 * (/sys/class/powercap, or $MODELBENCH_POWERCAP_DIR): available 1 with the
 * figures, else 0 and unavailable says why. Package energy counts
 * everything that ran on the package, not only this worker. */
typedef struct mb_energy {
  int available;
  double joules;               /* over the timed phase */
  double joules_per_inference; /* joules / (iterations x batch) */
  char domains[96];            /* "intel-rapl:0,intel-rapl:1" */
  char unavailable[192];       /* why not, when !available */
} mb_energy;

/* GPUs. A conversion that ran on one (result->device "cuda") says which,
 * how its time splits between the host and the device, and what state the
 * device was in. NVML (the NVIDIA driver's libnvidia-ml.so.1) is loaded
 * at run time: the build needs no CUDA. */
typedef struct mb_gpu_info {
  int index;                  /* the device's index; -1 when none */
  char name[96];              /* "NVIDIA H100 80GB HBM3" */
  char uuid[48];              /* "GPU-..." */
  char driver[32];            /* the NVIDIA driver, "580.82.07" */
  char cuda_driver[16];       /* the CUDA the driver supports, "13.0" */
  char cuda_runtime[16];      /* the CUDA the conversion's library was
                                 built with (torch.version.cuda), "13.0" */
  char compute_capability[8]; /* "9.0" */
  double memory_total_mb;
  double sm_clock_max_mhz, mem_clock_max_mhz; /* the device's maximums */
  double power_limit_w;                       /* enforced limit; 0 unknown */
} mb_gpu_info;

/* NVML's samples of the device over a timed phase. */
typedef struct mb_gpu_state {
  int available; /* 0: not sampled; unavailable says why */
  char unavailable[160];
  int64_t samples;
  double period_ms; /* between samples */
  double sm_clock_mhz_min, sm_clock_mhz_median, sm_clock_mhz_max;
  double mem_clock_mhz_min, mem_clock_mhz_max;
  double temperature_c_max;
  double power_w_mean, power_w_max;
  double utilization_mean; /* % of the time a kernel ran, mean of samples */
  /* Why the clocks were held down in any sample: NVML's clocks-event
   * reasons (nvmlClocksEventReason*, idle and application-clock settings
   * left out), OR'ed, and in words ("sw_power_cap,hw_thermal_slowdown"). */
  uint64_t throttle_reasons;
  char throttle[160];
} mb_gpu_state;

/* A conversion's GPU side; `used` 0 for a conversion that ran on the CPU
 * (the rest is then zero). */
typedef struct mb_gpu_result {
  int used;
  mb_gpu_info info;
  /* The device's time of each timed call (CUDA events around it); the
   * end-to-end time of the same calls is the result's latency_ms. */
  mb_latency_stats compute_ms;
  int64_t n_compute; /* timed calls with a device time */
  /* One sample's inputs to the device and the outputs back, n_copies
   * times each after the timed loop (the timed loop's inputs stay on the
   * device); bytes per copy. */
  mb_latency_stats h2d_ms, d2h_ms;
  int64_t n_copies;
  double h2d_mb, d2h_mb;
  /* trtexec's host latency: median H2D + median compute + median D2H. */
  double host_latency_ms;
  double memory_peak_mb; /* the conversion's peak device memory; < 0 unknown */
  mb_gpu_state state;
} mb_gpu_result;

/* The result of one conversion. Owned by its mb_bench_report. */
typedef struct mb_bench_result {
  int conversion_index; /* registry index */
  int conversion_id;
  const char *conversion; /* name (static) */
  mb_bench_status status;
  char error[MB_ERROR_MESSAGE_SIZE]; /* one line, "" when ok */
  char device[16];
  char runtime[32];
  char runtime_version[64];
  double load_ms;      /* model load + conversion + session creation */
  double first_run_ms; /* first inference */
  mb_latency_stats latency_ms;
  int64_t iterations; /* timed iterations */
  int batch_size;
  double throughput_sps;    /* batch * iterations / inference seconds */
  double inference_seconds; /* sum of timed iterations */
  double elapsed_seconds;   /* wall time of the timed phase, inputs incl. */
  double peak_rss_mb;       /* of the worker process */
  int has_accuracy;
  int n_outputs;
  mb_output_accuracy *accuracy; /* n_outputs entries */
  double max_abs_err;           /* over all outputs; < 0 when unknown */
  double speedup_vs_baseline;   /* baseline median / this median; 0 unknown */
  /* 95% intervals: of latency_ms.median (distribution-free, from order
   * statistics) and of speedup_vs_baseline (bootstrap of the ratio of
   * medians, both sample sets resampled, seeded); {0, 0} unknown. */
  double median_ci_ms[2];
  double speedup_ci[2];
  mb_ci_target_result ci_target;
  mb_realistic_stats fresh_inputs, cold_cache;
  int n_warnings;
  char **warnings;
  int64_t n_samples_ms;
  double *samples_ms; /* every timed iteration, in order */
  char log_path[512]; /* per-conversion log, "" when none */
  char *backtrace;    /* crashed workers: their backtrace, else NULL */
  /* Hybrid conversions (XNNPACK, ONEDNN, ...): how the graph was split and
   * where the time went, from a short untimed pass after the benchmark. */
  int n_segments;
  struct mb_segment_stats *segments; /* n_segments entries, or NULL */
  /* Build cache (config->build_cache): cache_hit 1 when the build came from
   * the cache, 0 when built now, -1 when no cache was used; build_ms the
   * time spent building (0 on a hit, < 0 unknown). */
  /* Task accuracy against config->labels_path: the share of labelled rows
   * whose top-1 class of the first output is the label, over task_rows
   * rows; unknown when task_rows is 0 (no labels, or not run). */
  double task_accuracy;
  int64_t task_rows;
  int inaccurate; /* reduced precision beyond max_error (see config) */
  /* How the outputs were judged: COSINE for reduced precisions and for
   * every conversion of a pre-quantised model (report->model_quantized),
   * TOLERANCE otherwise; UNKNOWN when not recorded. */
  mb_accuracy_criterion accuracy_criterion;
  /* Hybrid conversions at a reduced precision: the share of the model's
   * FLOPs whose segments ran at that precision (the rest fell back to
   * fp32 or the reference interpreter), 0..1; < 0 when not applicable or
   * unknown. mb_bench_result_precision() words it. */
  double precision_share;
  int cache_hit;
  double build_ms;
  /* Conversions that compile on the fly (torch.compile): how many times
   * they compiled again during the timed loop (those iterations include
   * compilation; a warning says so); -1 when not applicable. */
  int recompiles;
  /* int8 conversions: the width of their int8 weights (AUTO when not
   * int8 or not known) and why ("this CPU has no VNNI: ..."). */
  mb_int8_weights int8_weights;
  char int8_form[256];
  char build_id[160];     /* the cache's id of the build, "" when none */
  char build_reason[160]; /* why it was built ("new", ...), "hit", "" */
  /* Conversions of an ONNX form: what made the ONNX file (its
   * "modelbench.exporter" metadata, written by the Python front's exports:
   * "torch.onnx.export (TorchScript-based), opset 17"; else its producer,
   * "pytorch 2.15.0"); "" when it does not say or the form is not ONNX. */
  char exporter[96];
  /* Where it ran: the report's machine in a local run; a run spread over
   * machines (`bench --executor slurm|ssh`) keeps each task's, and
   * reports say when results of different kinds of machine sit side by
   * side. */
  mb_machine_info machine;
  mb_load_stats load; /* load scenarios (modelbench load) */
  mb_cold_start cold; /* config->cold */
  mb_energy energy;
  mb_gpu_result gpu; /* device "cuda": where and how it ran */
  /* config->price_per_core_hour x cores used (threads x sessions) x
   * seconds per inference (from throughput_sps) / 3600 x 1e6: the price of
   * a million inferences; < 0 without a price or a throughput. */
  double cost_per_million;
  mb_roofline roofline; /* against report->peaks; UNKNOWN when none */
} mb_bench_result;

/* One segment of a hybrid conversion: a maximal run of nodes on one
 * runtime ("xnnpack", "onednn", or "reference" for the fallback). */
typedef struct mb_segment_stats {
  char runtime[32];
  int nodes;
  double mean_ms;    /* per inference */
  char precision[8]; /* what it computed in ("fp32", "fp16", ...) */
  double gflops;     /* of its nodes, per inference; < 0 unknown */
} mb_segment_stats;

/* A whole run: model, machine, effective config and one result per
 * requested conversion, in the requested order. */
typedef struct mb_bench_report {
  char tool_version[32];
  char model_path[1024];
  char model_sha256[65];
  char model_name[128];   /* a manifest's name, else the file's stem */
  unsigned model_formats; /* 1u << mb_model_format the model offers */
  /* What accuracy was measured against: "interpreter" (the reference
   * interpreter), a conversion's name (EAGER), or "" when nothing. */
  char reference[64];
  int n_inputs;
  mb_input_shape *inputs; /* concrete shapes used; names owned */
  mb_dtype *input_dtypes;
  mb_machine_info machine;
  mb_environment environment;
  mb_bench_config config; /* effective settings; its pointers point into
                             the report and live as long as it; callbacks
                             are NULL */
  int n_results;
  mb_bench_result *results;
  int baseline_result; /* index into results */
  /* Where the model came from, as a model manifest's "source" says (the
   * Python front's `script` command): the script that ran it and where
   * the model was built ("file:line"); "" when not known. */
  char model_script[1024];
  char model_location[256];
  /* The run's labels, "key=value": config->labels, then the manifest's
   * (a key in both keeps config's value). Owned by the report. */
  int n_labels;
  const char **labels;
  char sweep_point[160]; /* config->sweep_point, "" when none */
  /* The model is pre-quantised (mb_model_stats.quantized): its results
   * are judged by the cosine criterion. model_quantization: what was
   * found, "" when nothing. */
  int model_quantized;
  char model_quantization[256];
  /* The roofline's figures (config->roofline): this machine's peaks at
   * the run's threads, and the model's FLOPs per run (the batch included;
   * < 0 unknown) and bytes: weights (initializers), inputs and outputs,
   * and activations (every value a node writes, outputs included, at its
   * inferred shape), each counted once; a run moves weights + inputs +
   * 2 x activations (written once, read once). */
  mb_machine_peaks peaks;
  double model_flops;
  double model_weight_bytes, model_input_bytes, model_activation_bytes;
  void *storage_; /* internal */
} mb_bench_report;

/* Benchmarks the model under every requested conversion (each in its own
 * child process unless config->isolate is 0) and compares every output with
 * the reference interpreter on the same inputs. A failing conversion is
 * recorded in its result and the run continues (unless fail_fast). Returns
 * MB_STATUS_OK when the run itself worked, even if conversions failed; fails
 * on a bad model, bad config or bad inputs. model_path, config: borrowed.
 * *report_out: release with mb_bench_report_free. */
mb_status mb_benchmark_model(const char *model_path,
                             const mb_bench_config *config,
                             mb_bench_report **report_out, mb_error *err);
/* Releases the report. When config->log_dir was NULL the engine made a
 * temporary log folder: logs of conversions that ended ok, unavailable or
 * skipped are deleted with the report, logs of failed ones are kept. */
void mb_bench_report_free(mb_bench_report *report);

/* ---- modelbench tune: the fastest configuration within an accuracy budget
 * ---- */

struct mb_tune_step;

/* How tune searches (mb_tune). Initialise with mb_tune_config_init. */
typedef struct mb_tune_config {
  /* The settings every measurement starts from (inputs, calibration,
   * max_error: the accuracy budget, seed, cache, timeouts). Its
   * conversions (n_conversions > 0) are the candidates, else every
   * available INT8_*, FP16/BF16 and fp32 ONNX conversion of the default
   * set and tier 2 on this CPU; its threads, timing fields, keep_float,
   * callbacks and load are set by the search. Borrowed. */
  mb_bench_config bench;
  int n_threads;      /* thread counts to try; 0: bench.threads */
  const int *threads; /* borrowed */
  /* Batch sizes to try (each 1..MB_TUNE_MAX_BATCH); 0: bench.batch_size.
   * Candidates of different batch sizes are ranked by time per sample
   * (median / batch); the SLO applies to the latency of a batch.
   * Borrowed. */
  int n_batch_sizes;
  const int *batch_sizes;
  /* Wall-clock budget of the whole search in seconds; <= 0: none. When it
   * runs out the search stops and reports the best so far. */
  double budget_seconds;
  /* Latency SLO (--slo p99=20ms): a configuration whose latency at
   * slo_percentile exceeds slo_ms cannot win. 0: none. */
  double slo_percentile, slo_ms;
  /* The budget as task accuracy (--max-accuracy-drop 0.5%: 0.005): a
   * configuration is accurate when its top-1 accuracy against
   * bench.labels_path (required) is at most this far below the baseline's,
   * the fp32 candidate closest to the reference (measured in the same
   * run, on the same labelled rows); bench.max_error then only steers the
   * per-node search. 0: the budget is bench.max_error. */
  double max_accuracy_drop;
  /* The first round of successive halving times each candidate this long
   * (each later round twice as long); <= 0: 0.25 s. */
  double round_seconds;
  /* Called after each step of the search (for progress); may be NULL. */
  void (*on_step)(void *user, const struct mb_tune_step *step);
  void *user;
  /* When set and a configuration wins: the winner's model is written here
   * (`tune --output`), atomically: what `modelbench convert -c WINNER
   * --keep-float ...` writes with bench's inputs and calibration, with the
   * configuration in its metadata_props "modelbench.tune"
   * (docs/json-schema.md, "The tuned model"), which `bench` runs again.
   * Borrowed. NULL: no file. */
  const char *output_path;
} mb_tune_config;

void mb_tune_config_init(mb_tune_config *config);

/* The largest batch size tune tries. */
#define MB_TUNE_MAX_BATCH 4096

/* One step of the search, as the search log (docs/json-schema.md, "The
 * tune log") records it. Strings are owned by the mb_tune_result. */
typedef struct mb_tune_step {
  /* "uniform" (one conversion at one precision), "sensitivity" (the
   * accuracy, estimated on the reference interpreter, with one node group
   * kept in float), "mixed-estimate" (a kept-float set, estimated) or
   * "mixed" (a kept-float set measured on the conversion's engine). */
  const char *phase;
  int round;              /* uniform: the successive-halving round, from 0 */
  const char *conversion; /* static */
  int threads;
  int batch_size;
  int n_kept_float;
  const char **kept_float;
  /* The share of the model's FLOPs (Conv, MatMul, Gemm ...) the
   * quantisable nodes left in int8 hold, 0..1; < 0 when not int8 or
   * unknown. */
  double int8_flops_share;
  mb_bench_status status; /* of the measurement; OK for estimates */
  double error;           /* max over outputs of 1 - cosine; < 0 unknown */
  double cosine;          /* min over outputs; < -1 unknown */
  double task_accuracy;   /* top-1 against the labels, 0..1; < 0 unknown */
  /* error <= max_error (the result not inaccurate); with
   * max_accuracy_drop, measured steps: the baseline's task accuracy minus
   * task_accuracy <= max_accuracy_drop */
  int accurate;
  double median_ms;      /* < 0 not measured (estimates) */
  double slo_latency_ms; /* at the SLO's percentile; < 0 no SLO */
  double min_seconds;    /* the timed phase asked for */
  /* When the measurement or estimate finished, in seconds since the search
   * began: where a search's time went. */
  double at_seconds;
  /* Estimates: the evaluation samples it ran on (the sensitivity ranking
   * runs on the first 2); 0 for measurements. */
  int samples;
  /* Why the candidate went no further ("slower half of round 0", "fails
   * the SLO", "inaccurate, no per-node precision for fp16"...); "" when it
   * did. */
  char dropped[256];
  char error_message[256]; /* a failed measurement's error */
} mb_tune_step;

typedef struct mb_tune_result {
  char model_path[1024];
  double max_error;
  double slo_percentile, slo_ms;
  /* With config->max_accuracy_drop: it, the baseline's task accuracy and
   * conversion (< 0 and "" until measured); 0 and -1 otherwise. */
  double max_accuracy_drop, baseline_task_accuracy;
  char baseline[64];
  double wall_seconds;  /* the whole search */
  int budget_exhausted; /* the search stopped on budget_seconds */
  int found;            /* some configuration met max_error and the SLO */
  int winner;           /* index into steps, -1 when none */
  int closest;          /* when none: the most accurate measured step */
  int fastest_uniform;  /* the fastest accurate uniform step, or -1 */
  char summary[512];    /* one line: the winner, or why there is none */
  int n_steps;
  mb_tune_step *steps;
  /* The winner's measurement (a bench report of that one configuration),
   * to record in the results history; NULL when none. Owned. */
  mb_bench_report *winner_report;
  void *storage_; /* internal */
  /* config->output_path: where the winner's model was written ("" when
   * not written), or why it could not be (output_error, naming the path;
   * the search's results are kept and mb_tune still returns OK). */
  char output_path[1024];
  char output_error[512];
} mb_tune_result;

/* Searches conversions x threads for the fastest configuration whose
 * accuracy is within config->bench.max_error (1 - cosine on every output
 * against the reference) and, with an SLO, whose latency meets it:
 * (1) the uniform candidates with successive halving (short runs for all,
 * twice longer for the better half, ...); (2) for int8 candidates that are
 * inaccurate but faster than the fastest accurate one, per-node precision:
 * the sensitivity of each quantisable node (Conv, MatMul, Gemm), as the
 * accuracy of the int8 model with that node alone kept in float
 * (estimated on the reference interpreter with the same calibration),
 * then the most sensitive nodes kept in float until the estimate meets the
 * budget, then that configuration measured on its engine; (3) the winner.
 * Runs workers like mb_benchmark_model. Returns MB_STATUS_OK when the
 * search ran, also when nothing met the budget (result->found 0); fails on
 * a bad model, config or inputs. model_path, config: borrowed.
 * *result_out: release with mb_tune_result_free. */
mb_status mb_tune(const char *model_path, const mb_tune_config *config,
                  mb_tune_result **result_out, mb_error *err);
void mb_tune_result_free(mb_tune_result *result);
/* Writes the search log (docs/json-schema.md, "The tune log") to path,
 * atomically. Fails with MB_STATUS_IO naming the path. */
mb_status mb_tune_result_write_json(const mb_tune_result *result,
                                    const char *path, mb_error *err);
/* Writes the search as one self-contained HTML page to path, atomically:
 * the summary, a chart of every measured step (median latency against
 * 1 - cosine, log-log) with the budget, the accuracy-vs-latency front and
 * the winner marked, and a table of every step. The page runs no script.
 * result, path: borrowed. Fails with MB_STATUS_IO naming the path, or
 * MB_STATUS_INVALID_ARGUMENT naming a step without its phase, conversion
 * or kept_float names. */
mb_status mb_tune_result_write_html(const mb_tune_result *result,
                                    const char *path, mb_error *err);

/* The precision a result ran at, for people: "fp32", or "fp16 (83% of
 * FLOPs)" when segments of a reduced-precision hybrid conversion fell back.
 * buf: caller-owned; returns buf. */
const char *mb_bench_result_precision(const mb_bench_result *result, char *buf,
                                      size_t size);

/* Writes the report as JSON (schema: docs/json-schema.md). */
mb_status mb_bench_report_write_json(const mb_bench_report *report,
                                     const char *path, mb_error *err);
/* Several models' reports in one file: one report is written exactly as by
 * mb_bench_report_write_json; more as {"schema_version", "tool", "version",
 * "reports": [...]} (docs/json-schema.md). reports: n >= 1 borrowed. */
mb_status mb_bench_reports_write_json(const mb_bench_report *const *reports,
                                      int n, const char *path, mb_error *err);
/* Writes the console table (sorted by median latency) to `out` (a FILE*). */
void mb_bench_report_print_table(const mb_bench_report *report, void *out,
                                 int use_color);

/* ---- profiles: where one conversion spends its time ----
 * A separate pass after warm-up, never inside a timed benchmark. */
typedef struct mb_profile_segment {
  char runtime[32];     /* "xnnpack", "onednn", "reference", "onnxruntime" */
  int nodes;            /* ONNX nodes in it */
  char first_node[128]; /* label of its first node */
  int64_t runs;
  double mean_ms; /* per run */
  double share;   /* of the total, 0..1 */
  /* Hybrid runtimes: the precision it computed in (a segment the engine
   * cannot run at the conversion's reduced precision runs in fp32), and
   * the FLOPs of its nodes per inference; "" and < 0 when unknown. */
  char precision[8];
  double gflops;
} mb_profile_segment;

typedef struct mb_profile_node {
  char runtime[32];
  char op_type[48]; /* ONNX op, or an engine's own primitive ("reorder") */
  char name[128];   /* node name ("" for engine-inserted primitives) */
  int64_t runs;
  double mean_ms; /* per inference */
  double share;   /* of the summed node times, 0..1 */
  /* oneDNN: the kernel it picked and its data types ("brg:avx512_core_vnni
   * u8 x s8 -> f32": a reference kernel or an fp32 product in an int8
   * conversion shows here); "" when the runtime does not say. */
  char kernel[64];
} mb_profile_node;

typedef struct mb_profile {
  char conversion[64];
  int iterations;       /* profiled inferences */
  double total_mean_ms; /* per inference, whole model */
  int n_segments;
  mb_profile_segment *segments;
  int n_nodes; /* nodes and primitives, descending mean_ms */
  mb_profile_node *nodes;
  char note[256]; /* what per-node detail is missing and why, or "" */
} mb_profile;

/* Profiles one conversion of a model: prepares it with profiling on, warms
 * up, runs config->min_iterations inferences (50 when <= 0)
 * on the run's generated inputs and reports per segment and per node. Runs
 * in a child process unless config->isolate is 0, so a crash becomes an
 * error. config: borrowed, may be NULL for defaults. *profile_out: release
 * with mb_profile_free. */
mb_status mb_profile_model(const char *model_path, const char *conversion,
                           const mb_bench_config *config,
                           mb_profile **profile_out, mb_error *err);
void mb_profile_free(mb_profile *profile);

/* One conversion of an ONNX model prepared and run in the calling process,
 * outside any benchmark and without a worker (a crashing runtime takes the
 * caller down): what the Python front's function profiles put in place of
 * a module to validate ORT_CPU, ONEDNN, ... predictions. Only conversions
 * that run the ONNX graph (format onnx); the row's steps (OPTIMIZE+, FP16+,
 * INT8_*+) are applied as bench applies them, without the build cache.
 * model_path: an ONNX file or a manifest with one. threads: the runtime's
 * intra-op threads (<= 0: 1); the rest as bench's defaults. example_inputs:
 * borrowed, n_inputs tensors in graph input order, read during the call:
 * the calibration batch and the shapes hybrid runtimes (XNNPACK, ONEDNN)
 * compile for; their runs must use the same shapes. *runner_out: release
 * with mb_runner_free. */
typedef struct mb_runner mb_runner;
mb_status mb_runner_create(const char *model_path, const char *conversion,
                           int threads, int n_inputs,
                           const mb_tensor *const *example_inputs,
                           mb_runner **runner_out, mb_error *err);
/* The model's output count (0 for NULL). */
int mb_runner_output_count(const mb_runner *runner);
/* One inference. inputs: borrowed, graph input order. outputs: n_outputs
 * slots (mb_runner_output_count) that receive new caller-owned tensors
 * (mb_tensor_free); left NULL on failure. */
mb_status mb_runner_run(mb_runner *runner, int n_inputs,
                        const mb_tensor *const *inputs, int n_outputs,
                        mb_tensor **outputs, mb_error *err);
void mb_runner_free(mb_runner *runner);

/* Writes the model as conversion `conversion` converts it (OPTIMIZE+,
 * FP16+, INT8_DYNAMIC+, INT8_STATIC+ ...: the row's steps; a conversion
 * without steps writes the model unchanged) to out_path: the artifact to
 * deploy. config: borrowed, may be NULL; its input settings (shapes, batch
 * size, ranges, seed, inputs_dir, calibration_samples) are those of bench.
 * summary: caller buffer (may be NULL) for one line on what changed. */
mb_status mb_convert_model_file(const char *model_path, const char *conversion,
                                const mb_bench_config *config,
                                const char *out_path, char *summary,
                                size_t summary_size, mb_error *err);

/* ---- hybrid partitions ---- */
typedef struct mb_partition_segment {
  char runtime[32]; /* the engine, or "reference" for fallback nodes */
  int n_nodes;
  char first_node[128], last_node[128]; /* labels */
} mb_partition_segment;

typedef struct mb_partition {
  char runtime[32];
  int n_segments;
  mb_partition_segment *segments; /* in execution order */
  int n_nodes, n_native_nodes;    /* all nodes / those on the engine */
  int n_folded; /* nodes computed once at prepare time (constants) */
  int n_unsupported;
  char **unsupported; /* "Gather 'node_12': not supported by xnnpack", one
                         per fallback node */
} mb_partition;

/* How runtime `runtime` ("xnnpack", "onednn") would split the model for
 * the given input shapes (spec may be NULL: batch 1) at `precision`.
 * *partition_out: release with mb_partition_free. Fails with
 * MB_STATUS_UNSUPPORTED when the runtime is not a hybrid one or not built
 * in. */
mb_status mb_model_partition(const mb_model *model, const char *runtime,
                             mb_precision precision, const mb_shape_spec *spec,
                             mb_partition **partition_out, mb_error *err);
void mb_partition_free(mb_partition *partition);

/* ---- more report formats (several models' reports in one file) ----
 * reports: n borrowed reports, one per model, in the order given. */

/* CSV: one row per model x conversion; empty cells are never ambiguous
 * ("n/a: not run", "n/a: failed (reason)"). */
mb_status mb_bench_reports_write_csv(const mb_bench_report *const *reports,
                                     int n, const char *path, mb_error *err);
/* Markdown tables, for a CI comment. */
mb_status mb_bench_reports_write_markdown(const mb_bench_report *const *reports,
                                          int n, const char *path,
                                          mb_error *err);
/* One self-contained HTML file (no network): per model an SVG chart of
 * median latency per conversion with p10-p90 whiskers, a throughput chart,
 * the accuracy column, warnings, machine and config. */
mb_status mb_bench_reports_write_html(const mb_bench_report *const *reports,
                                      int n, const char *path, mb_error *err);

/* ---- recommendations ---- */
typedef struct mb_recommend_options {
  double predicted_ms; /* > 0: a predicted median latency to compare with */
} mb_recommend_options;

typedef struct mb_recommendations {
  /* Indices into report->results, -1 when no result qualifies. */
  int fastest_accurate; /* lowest median among accurate, ok results */
  int fastest_exact;    /* lowest median among accurate fp32 results */
  int lowest_memory;    /* lowest peak RSS among accurate, ok results */
  int most_portable;    /* ORT_CPU when ok and accurate */
  int default_option;   /* what runs without a choice: ORT_CPU's result,
                           EAGER's for a PyTorch model; -1 when not run /
                           failed */
  double headroom;      /* default median / fastest_accurate median; 0 n/a */
  double prediction_error_pct; /* (measured - predicted) / predicted * 100
                                  of fastest_accurate; 0 when none given */
  char summary[512];           /* one paragraph for the console */
  double headroom_ci[2];       /* headroom's bootstrap 95% interval; {0, 0}
                                  unknown */
} mb_recommendations;

/* A result is accurate when its accuracy is known and within the
 * tolerance of its criterion (result->accuracy_criterion; TOLERANCE, fp32
 * on a float model: every output within the run's rtol/atol; COSINE,
 * reduced precisions and every conversion of a pre-quantised model:
 * cosine >= 0.999 per output) and no `inaccurate` flag is set. options may be
 * NULL. */
void mb_bench_recommend(const mb_bench_report *report,
                        const mb_recommend_options *options,
                        mb_recommendations *out);

/* What to deploy under a latency SLO, over the points of a sweep (one
 * report per point, all of one model): the conversion and settings that
 * serve the most requests per second with the SLO met, at accuracy. A
 * request is one sample, so a query of batch B counts B. Per result:
 * server runs give their peak QPS (find-peak) or their achieved QPS when
 * valid and within the SLO; offline, single-stream and bench runs their
 * samples per second when the SLO's percentile of their latency is within
 * the SLO. */
typedef struct mb_slo_recommendation {
  double slo_percentile, slo_ms; /* the SLO judged (reports[0]'s) */
  int report, result; /* the pick: indices into reports[] and its results;
                         -1 when nothing meets the SLO at accuracy */
  double qps;         /* requests per second it serves within the SLO */
  int batch_size, threads, concurrency;
  /* The default: ORT_CPU (EAGER for a PyTorch model) at the first point's
   * settings of the smallest batch, concurrency and thread count; -1 when
   * it did not run there. default_qps 0: it misses the SLO. */
  int default_report, default_result;
  double default_qps;
  double headroom; /* qps / default_qps; 0 when either is 0 */
  char summary[512];
} mb_slo_recommendation;

/* reports: n borrowed reports of one model. Without an SLO in
 * reports[0]->config.load the summary says so and nothing is picked. */
void mb_bench_recommend_slo(const mb_bench_report *const *reports, int n,
                            mb_slo_recommendation *out);

/* ------------------------------------------------------------------------ */
/* Host runtimes: runtimes whose code lives in the program that embeds us    */
/* ------------------------------------------------------------------------ */

/* The Python front runs PyTorch's own conversions (EAGER, JIT_TRACE, ...)
 * through the C engine: it fills an mb_host_runtime with callbacks and
 * installs it under the runtime name its conversion rows use ("pytorch").
 * The engine then treats it like any runtime: a worker (a forked child)
 * prepares it, times run() in the same measurement loop, fetches outputs
 * for the accuracy check and releases it. Callbacks return an mb_status
 * and, on failure, fill err (its message: one line; a multi-line detail
 * such as a traceback goes through mb_host_set_error_detail). */
typedef struct mb_host_prepare_args {
  const char *conversion; /* the conversion's name, e.g. "JIT_TRACE" */
  const char *model_path; /* the file of the conversion's model format */
  int threads;            /* intra-op threads */
  mb_precision precision;
  mb_device device;
  int verbose;   /* debug logging asked for */
  uint64_t seed; /* the run's seed */
  int n_inputs, n_outputs;
  /* Sample 0 (n_inputs tensors), for tracing and shapes. */
  const mb_tensor *const *example_inputs;
  /* Calibration batches (n_calibration arrays of n_inputs tensors), the
   * same data INT8_STATIC conversions calibrate on; for conversions that
   * calibrate (precision int8), else 0 and NULL. */
  int n_calibration;
  const mb_tensor *const *const *calibration;
  /* The build cache (bench's default): a folder for what the conversion
   * builds (a traced, scripted or frozen module), or "" without a cache.
   * build_hit 0: convert, and save there what a later prepare can load
   * (the engine lists the files as the build's artifacts); 1: the folder
   * holds what an earlier prepare saved: load it instead of converting. A
   * prepare that fails records the build as failed. */
  const char *build_dir;
  int build_hit;
  /* 1: the user trusts the model's code (mb_bench_config.trust_code): the
   * host may unpickle it. 0: load only what is data (TorchScript), and
   * fail naming bench's --trust-code for anything that would run code. */
  int trust_code;
} mb_host_prepare_args;

/* A host session on a GPU: where it runs (mb_host_runtime.gpu_describe). */
typedef struct mb_host_gpu {
  int index;                  /* the CUDA device index */
  char name[96];              /* "NVIDIA H100 80GB HBM3" */
  char cuda_runtime[16];      /* the CUDA the host's library was built with */
  char compute_capability[8]; /* "9.0" */
  double memory_peak_mb;      /* the session's peak device memory; < 0
                                 unknown */
} mb_host_gpu;

typedef struct mb_host_runtime {
  void *user; /* passed back to every callback */
  /* Availability: 1 when usable, with the library version in `version`;
   * 0 with the reason in `reason`. Both buffers hold 256 bytes. */
  int (*probe)(void *user, char *version, char *reason);
  /* Builds a session (the conversion: tracing, freezing, quantising...).
   * args: borrowed for the call; the tensors it points to stay valid
   * until release. */
  mb_status (*prepare)(void *user, const mb_host_prepare_args *args,
                       void **session_out, mb_error *err);
  /* One inference: the timed call. inputs: n_inputs borrowed tensors;
   * the same sample is always passed at the same addresses, so a host may
   * keep views of them. */
  mb_status (*run)(void *user, void *session, const mb_tensor *const *inputs,
                   mb_error *err);
  /* The last run's outputs as n_outputs new tensors (mb_tensor_create,
   * released by the engine); never timed. */
  mb_status (*fetch_outputs)(void *user, void *session, int n_outputs,
                             mb_tensor **outputs_out, mb_error *err);
  void (*release)(void *user, void *session);
  /* Optional (NULL: each of the runtime's conversions runs wherever the
   * runtime does): can `conversion` run here? 1 yes; 0 no, with the reason
   * in `reason` (256 bytes), e.g. "needs PyTorch 2.0 or later (this is
   * 1.13.0)". Called whenever the registry's availability is asked for. */
  int (*supports)(void *user, const char *conversion, char *reason);
  /* Optional: how many times the session compiled again since prepare
   * returned (torch.compile: guard failures, new shapes); -1 when it
   * cannot tell. Called once, after the timed loop. */
  int (*recompiles)(void *user, void *session);
  /* Optional (NULL: the CPU only). The devices the host can run its
   * conversions on, 1u << mb_device (the CPU's bit always); reason (256
   * bytes): why not CUDA, when not ("this PyTorch has no CUDA"). It must
   * not initialise a device: the engine forks its workers after it. */
  unsigned (*devices)(void *user, char *reason);
  /* Optional, sessions prepared on a GPU (args->device CUDA): 1 with gpu
   * filled (caller-owned), 0 when the session runs on the CPU. Called
   * after the timed loop. */
  int (*gpu_describe)(void *user, void *session, mb_host_gpu *gpu);
  /* Optional: the device time of the last run, in ms (events recorded
   * around it on the device); < 0 unknown. Called after each timed run,
   * outside the timed region. */
  double (*gpu_compute_ms)(void *user, void *session);
  /* Optional: copies `inputs` (n_inputs borrowed tensors) to the device n
   * times and the last run's outputs back n times, each timed on the
   * device, into h2d_ms[0..n) and d2h_ms[0..n) (caller-owned); the MB of
   * one copy each way into mb[0] (to the device) and mb[1] (back). */
  mb_status (*gpu_copies)(void *user, void *session,
                          const mb_tensor *const *inputs, int n, double *h2d_ms,
                          double *d2h_ms, double *mb, mb_error *err);
} mb_host_runtime;

/* Installs the host's implementation of runtime `name` (a runtime whose
 * conversions need the host: "pytorch"), replacing any earlier one;
 * runtime NULL uninstalls it. Install it before mb_benchmark_model: the
 * workers inherit it. runtime: copied. Fails with MB_STATUS_NOT_FOUND
 * when `name` is not a host runtime (the message lists them). */
mb_status mb_host_runtime_set(const char *name, const mb_host_runtime *runtime,
                              mb_error *err);
/* A host callback that fails may leave a multi-line detail (a Python
 * traceback) for the result's `backtrace`: copied, up to 64 KiB; NULL
 * clears it. */
void mb_host_set_error_detail(const char *detail);

/* ------------------------------------------------------------------------ */
/* Host builds: artifacts a host program makes, kept in the build cache      */
/* ------------------------------------------------------------------------ */

/* The Python front exports a PyTorch module to ONNX (and TorchScript) once
 * and keeps the files in the build cache, beside the conversions' builds:
 * `modelbench cache list` shows them, hits are counted, `cache clean`
 * cleans them. */
typedef struct mb_host_build_key {
  const char *model_name;   /* names the cache folder: "ResNet" */
  const char *model_sha256; /* 64 hex digits: what the artifact is made
                               from (the module's code and weights) */
  const char *inputs;       /* input signature, "x:float32[-1,3,224,224]" */
  const char *artifact;     /* what is built, UPPER_CASE: "ONNX_EXPORT" */
  const char *options;      /* what else changes it: "opset=17" */
  const char *tool;         /* the producer: "torch" */
  const char *tool_version; /* "1.13.0" */
  /* A model a script ran, or NULL: its script (absolute path) and the
   * model hash shown for it; recorded, not hashed: the build is filed
   * under "<script stem>-<model_name>-<hash12>" and kept while the script
   * exists. */
  const char *source_script;
  const char *source_hash;
} mb_host_build_key;

typedef struct mb_host_build mb_host_build;

/* Opens the build of `key` in the cache folder (cache_dir NULL: the
 * default one) and waits for its lock. rebuild: 0 if needed, 1 always.
 * Then either mb_host_build_hit says 1 (use the files in
 * mb_host_build_folder) or the caller writes the artifact into the folder
 * and calls mb_host_build_finish. key: borrowed. *build_out: release with
 * mb_host_build_close. */
mb_status mb_host_build_open(const char *cache_dir,
                             const mb_host_build_key *key, int rebuild,
                             mb_host_build **build_out, mb_error *err);
int mb_host_build_hit(const mb_host_build *build);
/* The build's folder and id ("<model>-<sha12>/<ARTIFACT>-<key12>"):
 * strings owned by the build. A build that failed before is a miss (it is
 * tried again). */
const char *mb_host_build_folder(const mb_host_build *build);
const char *mb_host_build_id(const mb_host_build *build);
/* Records the build: ok with the artifact `artifact_name` (a file in the
 * folder) when error is NULL, else failed with `error`. */
mb_status mb_host_build_finish(mb_host_build *build, const char *artifact_name,
                               const char *error, double build_ms,
                               mb_error *err);
/* Releases the lock; a build never finished is recorded as failed. */
void mb_host_build_close(mb_host_build *build);

/* sizeof of a public struct by its name ("mb_tensor", "mb_error",
 * "mb_host_prepare_args", "mb_host_runtime", "mb_host_build_key",
 * "mb_conversion_info"), 0 for others: bindings (the Python front's ctypes)
 * check their mirrors of the structs against the library they load. */
size_t mb_struct_size(const char *name);

/* ------------------------------------------------------------------------ */
/* The command-line tool                                                     */
/* ------------------------------------------------------------------------ */

/* Runs the modelbench CLI in this process: argv[0] is the program name,
 * argv[1] the command ("bench", "list", ...), as `modelbench --help`
 * shows. Returns the exit status (0, 1 failure, 2 usage). A host that has
 * installed host runtimes (the Python front's `python3 -m modelbench`)
 * gets every command with its conversions. */
int mb_cli_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif /* MODELBENCH_H */
