/* OpenVINO behind the runtime interface, through OpenVINO's C API.
 *
 * libopenvino_c is loaded with dlopen on first use, so modelbench builds
 * and runs without it; only the C headers are needed at build time
 * (MB_HAVE_OV_HEADERS, see CMakeLists.txt; scripts/fetch-openvino.sh takes
 * both from PyPI's openvino wheel). Without them this file still compiles
 * to an adapter whose probe says why it is unavailable.
 *
 * prepare reads the ONNX model with OpenVINO's ONNX frontend, reshapes its
 * inputs to the shapes the runs use (as benchmark_app's -shape does: the
 * CPU plugin compiles static shapes into faster code than dynamic ones) and
 * compiles it for the CPU with the conversion's precision as the inference
 * precision hint, stated even for fp32 (on CPUs with bf16 the plugin's
 * default would be bf16), one stream and the run's thread count. The timed
 * run() is one synchronous ov_infer_request_infer on input tensors that
 * wrap our buffers without copying (re-made only when a buffer or shape
 * changes); outputs stay in the request until fetched. */
#include "runtime/runtime.h"

#ifndef MB_HAVE_OV_HEADERS

static void ov_probe(mb_runtime_info *info) {
  info->available = 0;
  info->version[0] = '\0';
  snprintf(info->reason, sizeof info->reason,
           "built without OpenVINO's C headers (run scripts/fetch-openvino.sh "
           "or set OPENVINO_ROOT, then reconfigure)");
}

static mb_status ov_prepare(const mb_model *model, const void *model_bytes,
                            size_t model_size,
                            const mb_runtime_options *options,
                            void **session_out, mb_error *err) {
  return mb__error(err, MB_STATUS_UNAVAILABLE,
                   "openvino: built without OpenVINO's C headers");
}

static mb_status ov_run(void *session, const mb_tensor *const *inputs,
                        mb_error *err) {
  return mb__error(err, MB_STATUS_UNAVAILABLE,
                   "openvino: built without OpenVINO's C headers");
}

static mb_status ov_fetch_outputs(void *session, mb_tensor **outputs_out,
                                  mb_error *err) {
  return mb__error(err, MB_STATUS_UNAVAILABLE,
                   "openvino: built without OpenVINO's C headers");
}

static void ov_release(void *session) {}

#else /* MB_HAVE_OV_HEADERS */

#include <openvino/c/openvino.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define OV_C_LIB "libopenvino_c.so." MB_OV_SOVERSION

/* ---- loading: the only process-wide state ---- */

/* Every C API function the adapter calls, resolved with dlsym. */
#define OV_FUNCTION_LIST(X)                                                    \
  X(ov_get_openvino_version)                                                   \
  X(ov_version_free)                                                           \
  X(ov_get_last_err_msg)                                                       \
  X(ov_get_error_info)                                                         \
  X(ov_free)                                                                   \
  X(ov_core_create)                                                            \
  X(ov_core_free)                                                              \
  X(ov_core_read_model)                                                        \
  X(ov_core_read_model_from_memory_buffer)                                     \
  X(ov_core_compile_model)                                                     \
  X(ov_model_free)                                                             \
  X(ov_model_inputs_size)                                                      \
  X(ov_model_outputs_size)                                                     \
  X(ov_model_const_input_by_index)                                             \
  X(ov_model_const_output_by_index)                                            \
  X(ov_model_reshape_by_port_indexes)                                          \
  X(ov_port_get_any_name)                                                      \
  X(ov_port_get_partial_shape)                                                 \
  X(ov_output_const_port_free)                                                 \
  X(ov_partial_shape_create_static)                                            \
  X(ov_partial_shape_is_dynamic)                                               \
  X(ov_partial_shape_free)                                                     \
  X(ov_shape_create)                                                           \
  X(ov_shape_free)                                                             \
  X(ov_compiled_model_create_infer_request)                                    \
  X(ov_compiled_model_free)                                                    \
  X(ov_infer_request_set_input_tensor_by_index)                                \
  X(ov_infer_request_get_output_tensor_by_index)                               \
  X(ov_infer_request_infer)                                                    \
  X(ov_infer_request_get_profiling_info)                                       \
  X(ov_profiling_info_list_free)                                               \
  X(ov_infer_request_free)                                                     \
  X(ov_tensor_create_from_host_ptr)                                            \
  X(ov_tensor_get_shape)                                                       \
  X(ov_tensor_get_element_type)                                                \
  X(ov_tensor_data)                                                            \
  X(ov_tensor_free)

static struct {
#define MB_X(fn) __typeof__(&fn) fn;
  OV_FUNCTION_LIST(MB_X)
#undef MB_X
} ov;

static pthread_once_t ov_once = PTHREAD_ONCE_INIT;
static void *ov_handle;
static int ov_loaded;
static char ov_version[64];
static char ov_reason[256];

/* Opens the library, trying in order: $MODELBENCH_OPENVINO_LIB (a full
 * path), $OPENVINO_ROOT/lib, the cache scripts/fetch-openvino.sh fills, the
 * folder beside the headers found at build time, then the default dlopen
 * search path. A file that is there but does not load ends the search with
 * the loader's reason: falling back to another copy would hide it. */
static void *ov_open_library(char *searched, size_t searched_size, char *why,
                             size_t why_size) {
  const char *lib = getenv("MODELBENCH_OPENVINO_LIB");
  const char *root = getenv("OPENVINO_ROOT");
  const char *cache = getenv("MODELBENCH_CACHE_DIR");
  const char *home = getenv("HOME");
  char candidates[4][1024];
  int n = 0;
#define ADD_CANDIDATE(...)                                                     \
  do {                                                                         \
    int len_ = snprintf(candidates[n], sizeof candidates[n], __VA_ARGS__);     \
    if (len_ > 0 && len_ < (int)sizeof candidates[n])                          \
      n++;                                                                     \
  } while (0)
  if (lib && *lib)
    ADD_CANDIDATE("%s", lib);
  if (root && *root)
    ADD_CANDIDATE("%s/lib/" OV_C_LIB, root);
  if (cache && *cache)
    ADD_CANDIDATE("%s/openvino-" MB_OV_VERSION "/lib/" OV_C_LIB, cache);
  else if (home && *home)
    ADD_CANDIDATE(
        "%s/.cache/modelbench/openvino-" MB_OV_VERSION "/lib/" OV_C_LIB, home);
#ifdef MB_OV_BUILD_LIB_DIR
  ADD_CANDIDATE("%s/" OV_C_LIB, MB_OV_BUILD_LIB_DIR);
#endif
#undef ADD_CANDIDATE
  for (int c = 0; c < n; c++) {
    size_t used = strlen(searched);
    if (used < searched_size &&
        snprintf(searched + used, searched_size - used, "%s%s",
                 used ? ", " : "", candidates[c]) < 0)
      searched[used] = '\0';
    if (access(candidates[c], F_OK) != 0)
      continue;
    void *handle = dlopen(candidates[c], RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *e = dlerror();
      if (snprintf(why, why_size, "cannot load %s: %s", candidates[c],
                   e ? e : "?") < 0)
        why[0] = '\0';
    }
    return handle;
  }
  return dlopen(OV_C_LIB, RTLD_NOW | RTLD_LOCAL);
}

static void ov_load(void) {
  char searched[768] = "", why[256] = "";
  ov_handle = ov_open_library(searched, sizeof searched, why, sizeof why);
  if (!ov_handle) {
    if (why[0])
      snprintf(ov_reason, sizeof ov_reason, "%s", why);
    else {
      static const char head[] = OV_C_LIB " not found (searched: ";
      static const char tail[] =
          "); run scripts/fetch-openvino.sh or set OPENVINO_ROOT";
      int room = (int)(sizeof ov_reason - sizeof head - sizeof tail);
      snprintf(ov_reason, sizeof ov_reason, "%s%.*s%s", head, room, searched,
               tail);
    }
    return;
  }
#define MB_X(fn)                                                               \
  if (!(*(void **)&ov.fn = dlsym(ov_handle, #fn))) {                           \
    snprintf(ov_reason, sizeof ov_reason,                                      \
             OV_C_LIB " has no %s: not OpenVINO " MB_OV_VERSION "'s C API?",   \
             #fn);                                                             \
    return;                                                                    \
  }
  OV_FUNCTION_LIST(MB_X)
#undef MB_X
  ov_version_t v = {0};
  if (ov.ov_get_openvino_version(&v) != OK) {
    snprintf(ov_reason, sizeof ov_reason, "OpenVINO does not say its version");
    return;
  }
  /* "2026.4.1-22982-e213a147257-releases/2026/4": keep the release. */
  snprintf(ov_version, sizeof ov_version, "%.*s",
           (int)strcspn(v.buildNumber ? v.buildNumber : "?", "-"),
           v.buildNumber ? v.buildNumber : "?");
  ov.ov_version_free(&v);
  ov_loaded = 1;
}

static int ov_ready(mb_error *err) {
  pthread_once(&ov_once, ov_load);
  if (!ov_loaded)
    mb__error(err, MB_STATUS_UNAVAILABLE, "openvino: %s", ov_reason);
  return ov_loaded;
}

static void ov_probe(mb_runtime_info *info) {
  pthread_once(&ov_once, ov_load);
  info->available = ov_loaded;
  snprintf(info->version, sizeof info->version, "%s",
           ov_loaded ? ov_version : "");
  snprintf(info->reason, sizeof info->reason, "%s", ov_loaded ? "" : ov_reason);
}

/* ---- tables ---- */

static const struct {
  mb_dtype dtype;
  ov_element_type_e type;
} type_map[] = {
    {MB_DTYPE_FLOAT, F32},       {MB_DTYPE_FLOAT16, F16},
    {MB_DTYPE_BFLOAT16, BF16},   {MB_DTYPE_DOUBLE, F64},
    {MB_DTYPE_INT8, I8},         {MB_DTYPE_UINT8, U8},
    {MB_DTYPE_INT16, I16},       {MB_DTYPE_UINT16, U16},
    {MB_DTYPE_INT32, I32},       {MB_DTYPE_UINT32, U32},
    {MB_DTYPE_INT64, I64},       {MB_DTYPE_UINT64, U64},
    {MB_DTYPE_BOOL, OV_BOOLEAN},
};

static int ov_type_of(mb_dtype dtype, ov_element_type_e *out) {
  for (size_t i = 0; i < MB_ARRAY_COUNT(type_map); i++)
    if (type_map[i].dtype == dtype) {
      *out = type_map[i].type;
      return 1;
    }
  return 0;
}

static mb_dtype dtype_of(ov_element_type_e type) {
  for (size_t i = 0; i < MB_ARRAY_COUNT(type_map); i++)
    if (type_map[i].type == type)
      return type_map[i].dtype;
  return MB_DTYPE_UNDEFINED;
}

/* The inference precision hint per conversion precision. Int8 rows run a
 * QDQ model: OpenVINO's low-precision transformations make its quantised
 * parts int8 and the rest stays fp32, as on every other runtime. */
static const char *const precision_hints[MB_PRECISION_COUNT] = {
    [MB_PRECISION_FP32] = "f32",
    [MB_PRECISION_BF16] = "bf16",
    [MB_PRECISION_FP16] = "f16",
    [MB_PRECISION_INT8] = "f32",
};

static const struct {
  ov_status_e code;
  mb_status status;
} error_map[] = {
    {PARAMETER_MISMATCH, MB_STATUS_SHAPE},
    {NOT_FOUND, MB_STATUS_NOT_FOUND},
    {OUT_OF_BOUNDS, MB_STATUS_INVALID_ARGUMENT},
    {NOT_IMPLEMENTED, MB_STATUS_UNSUPPORTED},
    {NETWORK_NOT_READ, MB_STATUS_PARSE},
    {INVALID_C_PARAM, MB_STATUS_INVALID_ARGUMENT},
};

/* An error from OpenVINO: its status words and last message on one line,
 * without the source locations it stacks before the reason. */
static mb_status ov_check(ov_status_e st, mb_error *err, const char *what) {
  if (st == OK)
    return MB_STATUS_OK;
  mb_status status = MB_STATUS_INTERNAL;
  for (size_t i = 0; i < MB_ARRAY_COUNT(error_map); i++)
    if (error_map[i].code == st)
      status = error_map[i].status;
  /* The last message is OpenVINO's own thread-local copy, not ours. */
  const char *msg = ov.ov_get_last_err_msg ? ov.ov_get_last_err_msg() : NULL;
  char reason[768] = "";
  size_t used = 0;
  for (const char *line = msg; line && *line && used + 1 < sizeof reason;) {
    size_t len = strcspn(line, "\r\n");
    /* Source locations ("Exception from src/...:104:", "Check 'x'
     * failed at src/...:385:") say where, the other lines why. */
    int location = strncmp(line, "Exception from ", 15) == 0 ||
                   (strncmp(line, "Check '", 7) == 0 && len > 0 &&
                    line[len - 1] == ':' && strstr(line, " failed at "));
    size_t keep = len;
    while (keep > 0 && line[keep - 1] == ' ')
      keep--;
    if (keep && !location) {
      int wrote = snprintf(reason + used, sizeof reason - used, "%s%.*s",
                           used ? " " : "", (int)keep, line);
      used = wrote < 0 ? used : MB_MIN(used + (size_t)wrote, sizeof reason - 1);
    }
    line += len;
    line += strspn(line, "\r\n");
  }
  const char *words = ov.ov_get_error_info ? ov.ov_get_error_info(st) : NULL;
  return mb__error(err, status, "openvino: %s: %s", what,
                   reason[0] ? reason
                   : words   ? words
                             : "error");
}

/* ---- sessions ---- */

typedef struct ov_input {
  ov_tensor_t *tensor; /* wraps data, or NULL */
  const void *data;
  mb_dtype dtype;
  int rank;
  int64_t dims[MB_MAX_RANK];
} ov_input;

/* Per-node times summed over the profiled runs (level 2). */
typedef struct ov_node_time {
  char *name, *op_type, *kernel;
  double total_ms;
  int64_t runs;
} ov_node_time;

typedef struct ov_session {
  ov_core_t *core;
  ov_model_t *model;
  ov_compiled_model_t *compiled;
  ov_infer_request_t *request;
  int n_inputs, n_outputs;
  size_t *input_port;  /* graph input i -> OpenVINO input index */
  size_t *output_port; /* graph output i -> OpenVINO output index */
  char **output_names;
  char **input_names;
  mb_dtype *input_dtypes; /* declared by the model */
  ov_input *inputs;
  int has_run;
  int profile_level;
  int64_t profile_runs;
  double profile_ms; /* wall time of the profiled runs */
  ov_node_time *nodes;
  int n_nodes, cap_nodes;
} ov_session;

static void clear_node_times(ov_session *s) {
  for (int i = 0; i < s->n_nodes; i++) {
    free(s->nodes[i].name);
    free(s->nodes[i].op_type);
    free(s->nodes[i].kernel);
  }
  s->n_nodes = 0;
  s->profile_runs = 0;
  s->profile_ms = 0;
}

static void ov_release(void *session) {
  ov_session *s = session;
  if (!s)
    return;
  for (int i = 0; s->inputs && i < s->n_inputs; i++)
    if (s->inputs[i].tensor)
      ov.ov_tensor_free(s->inputs[i].tensor);
  for (int i = 0; s->output_names && i < s->n_outputs; i++)
    free(s->output_names[i]);
  for (int i = 0; s->input_names && i < s->n_inputs; i++)
    free(s->input_names[i]);
  free(s->input_names);
  free(s->input_dtypes);
  clear_node_times(s);
  free(s->nodes);
  if (s->request)
    ov.ov_infer_request_free(s->request);
  if (s->compiled)
    ov.ov_compiled_model_free(s->compiled);
  if (s->model)
    ov.ov_model_free(s->model);
  if (s->core)
    ov.ov_core_free(s->core);
  free(s->inputs);
  free(s->input_port);
  free(s->output_port);
  free(s->output_names);
  free(s);
}

/* The tensor name of OpenVINO's input (is_input) or output `index`, as a
 * malloc'd string. */
static mb_status port_name(ov_session *s, int is_input, size_t index,
                           char **name_out, mb_error *err) {
  ov_output_const_port_t *port = NULL;
  char *name = NULL;
  mb_status status = ov_check(
      is_input ? ov.ov_model_const_input_by_index(s->model, index, &port)
               : ov.ov_model_const_output_by_index(s->model, index, &port),
      err, is_input ? "cannot read an input" : "cannot read an output");
  if (!status)
    status = ov_check(ov.ov_port_get_any_name(port, &name), err,
                      "cannot read a tensor name");
  if (port)
    ov.ov_output_const_port_free(port);
  if (status)
    return status;
  *name_out = mb__strdup(name);
  ov.ov_free(name);
  return *name_out ? MB_STATUS_OK
                   : mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
}

/* Maps the model's graph inputs and outputs to OpenVINO's ports by tensor
 * name (its ONNX frontend keeps them), in position where a name is not
 * found. */
static mb_status bind_ports(ov_session *s, const mb_model *model,
                            mb_error *err) {
  size_t n_in = 0, n_out = 0;
  mb_status status = ov_check(ov.ov_model_inputs_size(s->model, &n_in), err,
                              "cannot count the inputs");
  if (!status)
    status = ov_check(ov.ov_model_outputs_size(s->model, &n_out), err,
                      "cannot count the outputs");
  if (status)
    return status;
  s->n_inputs = mb_model_input_count(model);
  s->n_outputs = mb_model_output_count(model);
  if ((size_t)s->n_inputs != n_in || (size_t)s->n_outputs != n_out)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "openvino: the model has %d inputs and %d outputs, "
                     "OpenVINO's reading of it %zu and %zu",
                     s->n_inputs, s->n_outputs, n_in, n_out);
  s->input_port = calloc(n_in + 1, sizeof *s->input_port);
  s->output_port = calloc(n_out + 1, sizeof *s->output_port);
  s->output_names = calloc(n_out + 1, sizeof *s->output_names);
  s->inputs = calloc(n_in + 1, sizeof *s->inputs);
  s->input_names = calloc(n_in + 1, sizeof *s->input_names);
  s->input_dtypes = calloc(n_in + 1, sizeof *s->input_dtypes);
  if (!s->input_port || !s->output_port || !s->output_names || !s->inputs ||
      !s->input_names || !s->input_dtypes)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int io = 0; io < 2; io++) {
    int n = io == 0 ? s->n_inputs : s->n_outputs;
    size_t *map = io == 0 ? s->input_port : s->output_port;
    for (int i = 0; i < n; i++) {
      mb_value_info info;
      if ((status = io == 0 ? mb_model_input_info(model, i, &info, err)
                            : mb_model_output_info(model, i, &info, err)))
        return status;
      map[i] = (size_t)i;
      for (size_t k = 0; k < (size_t)n; k++) {
        char *name = NULL;
        if ((status = port_name(s, io == 0, k, &name, err)))
          return status;
        int same = info.name && strcmp(name, info.name) == 0;
        free(name);
        if (same) {
          map[i] = k;
          break;
        }
      }
      char **names = io == 0 ? s->input_names : s->output_names;
      if (!(names[i] = mb__strdup(info.name ? info.name : "?")))
        return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
      if (io == 0)
        s->input_dtypes[i] = info.dtype;
    }
  }
  return MB_STATUS_OK;
}

/* Fixes the inputs' shapes to the example inputs' (the shapes every run of
 * a benchmark uses). */
static mb_status reshape_static(ov_session *s, const mb_tensor *const *examples,
                                mb_error *err) {
  if (!examples)
    return MB_STATUS_OK;
  ov_partial_shape_t *shapes = calloc((size_t)s->n_inputs + 1, sizeof *shapes);
  if (!shapes)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  mb_status status = MB_STATUS_OK;
  int made = 0;
  for (; made < s->n_inputs && !status; made++) {
    if (!examples[made]) {
      status = mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                         "openvino: example input %d is missing", made);
      break;
    }
    status =
        ov_check(ov.ov_partial_shape_create_static(
                     examples[made]->rank, examples[made]->dims, &shapes[made]),
                 err, "cannot make an input shape");
    if (status)
      break;
  }
  if (!status)
    status = ov_check(ov.ov_model_reshape_by_port_indexes(
                          s->model, s->input_port, shapes, (size_t)s->n_inputs),
                      err, "cannot fix the input shapes");
  for (int i = 0; i < made; i++)
    ov.ov_partial_shape_free(&shapes[i]);
  free(shapes);
  return status;
}

static mb_status ov_prepare(const mb_model *model, const void *model_bytes,
                            size_t model_size,
                            const mb_runtime_options *options,
                            void **session_out, mb_error *err) {
  if (!ov_ready(err))
    return err ? err->status : MB_STATUS_UNAVAILABLE;
  if (!model || (!model_bytes && !model->path))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "openvino: needs the model and its serialised bytes or "
                     "its file");
  if (options->device != MB_DEVICE_CPU && options->device != MB_DEVICE_AUTO)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "openvino: runs on the CPU here, not on %s",
                     mb_device_name(options->device));
  const char *hint = (unsigned)options->precision < MB_PRECISION_COUNT
                         ? precision_hints[options->precision]
                         : NULL;
  if (!hint)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "openvino: no inference precision for %s",
                     mb_precision_name(options->precision));
  ov_session *s = calloc(1, sizeof *s);
  if (!s)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  mb_status status =
      ov_check(ov.ov_core_create(&s->core), err, "cannot create the core");
  if (status)
    goto fail;
  /* Bytes when given (a converted model), the file when its weights live
   * in external data files next to it. */
  if (model_bytes && !(model->n_external_files > 0 && model->path))
    status = ov_check(ov.ov_core_read_model_from_memory_buffer(
                          s->core, model_bytes, model_size, NULL, &s->model),
                      err, "cannot read the model");
  else
    status =
        ov_check(ov.ov_core_read_model(s->core, model->path, NULL, &s->model),
                 err, "cannot read the model");
  /* The model passed our reader: one OpenVINO cannot read is one it does
   * not support ("No conversion rule found for operations: X-17"). */
  if (status == MB_STATUS_INTERNAL && err)
    status = err->status = MB_STATUS_UNSUPPORTED;
  if (status)
    goto fail;
  if ((status = bind_ports(s, model, err)) ||
      (status = reshape_static(s, options->example_inputs, err)))
    goto fail;
  char threads[16];
  snprintf(threads, sizeof threads, "%d", MB_MAX(options->threads, 1));
  /* One stream of `threads` threads, the latency setting; the precision is
   * the conversion's; dynamic quantisation (int8 activations in fp32
   * matrix products, which the CPU plugin may pick on its own) stays off
   * so fp32 means fp32. */
  status =
      ov_check(ov.ov_core_compile_model(
                   s->core, s->model, "CPU", 14, &s->compiled,
                   "INFERENCE_NUM_THREADS", threads, "NUM_STREAMS", "1",
                   "PERFORMANCE_HINT", "LATENCY", "INFERENCE_PRECISION_HINT",
                   hint, "DYNAMIC_QUANTIZATION_GROUP_SIZE", "0", "PERF_COUNT",
                   options->profile ? "YES" : "NO", "ENABLE_CPU_PINNING", "NO"),
               err, "cannot compile the model for the CPU");
  if (status)
    goto fail;
  if ((status = ov_check(
           ov.ov_compiled_model_create_infer_request(s->compiled, &s->request),
           err, "cannot create an inference request")))
    goto fail;
  *session_out = s;
  return MB_STATUS_OK;
fail:
  ov_release(s);
  return status;
}

/* Makes input i wrap tensor t, re-made only when the buffer, type or shape
 * changed since the last run. */
static mb_status bind_input(ov_session *s, int i, const mb_tensor *t,
                            mb_error *err) {
  ov_input *in = &s->inputs[i];
  if (in->tensor && in->data == t->data && in->dtype == t->dtype &&
      in->rank == t->rank &&
      memcmp(in->dims, t->dims, (size_t)t->rank * sizeof t->dims[0]) == 0)
    return MB_STATUS_OK;
  ov_element_type_e type;
  if (t->dtype != s->input_dtypes[i])
    return mb__error(err, MB_STATUS_SHAPE,
                     "openvino: input '%s' is %s, the model expects %s",
                     s->input_names[i], mb_dtype_name(t->dtype),
                     mb_dtype_name(s->input_dtypes[i]));
  if (!ov_type_of(t->dtype, &type))
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "openvino: input '%s' is %s, which OpenVINO's C API "
                     "cannot take",
                     s->input_names[i], mb_dtype_name(t->dtype));
  if (in->tensor) {
    ov.ov_tensor_free(in->tensor);
    in->tensor = NULL;
  }
  static char empty[1];
  ov_shape_t shape = {0};
  mb_status status = ov_check(ov.ov_shape_create(t->rank, t->dims, &shape), err,
                              "cannot make an input shape");
  if (status)
    return status;
  status = ov_check(ov.ov_tensor_create_from_host_ptr(
                        type, shape, t->data ? t->data : empty, &in->tensor),
                    err, "cannot wrap an input tensor");
  ov.ov_shape_free(&shape);
  if (!status)
    status = ov_check(ov.ov_infer_request_set_input_tensor_by_index(
                          s->request, s->input_port[i], in->tensor),
                      err, "cannot set an input");
  if (status) {
    if (in->tensor)
      ov.ov_tensor_free(in->tensor);
    in->tensor = NULL;
    return status;
  }
  in->data = t->data;
  in->dtype = t->dtype;
  in->rank = t->rank;
  memcpy(in->dims, t->dims, sizeof in->dims);
  return MB_STATUS_OK;
}

/* Adds the last inference's per-node times (PERF_COUNT) to s->nodes. */
static void add_node_times(ov_session *s) {
  ov_profiling_info_list_t list = {0};
  if (ov.ov_infer_request_get_profiling_info(s->request, &list) != OK)
    return;
  for (size_t i = 0; i < list.size; i++) {
    const ov_profiling_info_t *p = &list.profiling_infos[i];
    if (p->status != EXECUTED || !p->node_name)
      continue;
    int k = 0;
    while (k < s->n_nodes && strcmp(s->nodes[k].name, p->node_name) != 0)
      k++;
    if (k == s->n_nodes) {
      if (s->n_nodes == s->cap_nodes) {
        int cap = s->cap_nodes ? 2 * s->cap_nodes : 64;
        ov_node_time *grown = realloc(s->nodes, (size_t)cap * sizeof *grown);
        if (!grown)
          break;
        s->nodes = grown;
        s->cap_nodes = cap;
      }
      ov_node_time *nt = &s->nodes[s->n_nodes];
      memset(nt, 0, sizeof *nt);
      nt->name = mb__strdup(p->node_name);
      nt->op_type = mb__strdup(p->node_type ? p->node_type : "?");
      nt->kernel = mb__strdup(p->exec_type ? p->exec_type : "");
      if (!nt->name || !nt->op_type || !nt->kernel) {
        free(nt->name);
        free(nt->op_type);
        free(nt->kernel);
        break;
      }
      s->n_nodes++;
    }
    s->nodes[k].total_ms += (double)p->real_time / 1e3;
    s->nodes[k].runs++;
  }
  ov.ov_profiling_info_list_free(&list);
}

static mb_status ov_run(void *session, const mb_tensor *const *inputs,
                        mb_error *err) {
  ov_session *s = session;
  for (int i = 0; i < s->n_inputs; i++) {
    mb_status status = bind_input(s, i, inputs[i], err);
    if (status)
      return status;
  }
  s->has_run = 0;
  double t0 = s->profile_level > 0 ? mb__now() : 0;
  mb_status status =
      ov_check(ov.ov_infer_request_infer(s->request), err, "inference failed");
  if (status)
    return status;
  s->has_run = 1;
  if (s->profile_level > 0) {
    s->profile_ms += (mb__now() - t0) * 1e3;
    s->profile_runs++;
    add_node_times(s);
  }
  return MB_STATUS_OK;
}

/* Per-node profiles from OpenVINO's performance counters (the session was
 * compiled with PERF_COUNT when options->profile): the CPU plugin's nodes
 * after its fusions, each with the kernel it ran (exec_type). */
static void ov_profile_reset(void *session, int level) {
  ov_session *s = session;
  clear_node_times(s);
  s->profile_level = level;
}

static mb_status ov_profile_collect(void *session, mb_profile *out,
                                    mb_error *err) {
  ov_session *s = session;
  /* The segment is the whole compiled model: its measured time. The nodes'
   * counters are OpenVINO's and need not add up to it (the plugin times
   * some nodes across threads). */
  mb_status status = mb__profile_add_segment(
      out, "openvino", s->n_nodes, s->n_nodes ? s->nodes[0].name : "",
      s->profile_runs, s->profile_ms, err);
  for (int i = 0; !status && s->profile_level >= 2 && i < s->n_nodes; i++)
    status = mb__profile_add_node(out, "openvino", s->nodes[i].op_type,
                                  s->nodes[i].name, s->nodes[i].kernel,
                                  s->nodes[i].runs, s->nodes[i].total_ms, err);
  return status;
}

static mb_status copy_output(ov_session *s, int i, mb_tensor **tensor_out,
                             mb_error *err) {
  ov_tensor_t *value = NULL;
  ov_shape_t shape = {0};
  ov_element_type_e type = DYNAMIC;
  void *data = NULL;
  mb_tensor *t = NULL;
  const char *name = s->output_names[i];
  mb_status status = ov_check(ov.ov_infer_request_get_output_tensor_by_index(
                                  s->request, s->output_port[i], &value),
                              err, "cannot read an output");
  if (!status)
    status = ov_check(ov.ov_tensor_get_element_type(value, &type), err,
                      "cannot read an output's type");
  if (!status)
    status = ov_check(ov.ov_tensor_get_shape(value, &shape), err,
                      "cannot read an output's shape");
  if (!status)
    status = ov_check(ov.ov_tensor_data(value, &data), err,
                      "cannot read an output's data");
  if (status)
    goto done;
  mb_dtype dtype = dtype_of(type);
  if (dtype == MB_DTYPE_UNDEFINED) {
    status = mb__error(err, MB_STATUS_UNSUPPORTED,
                       "openvino: output '%s' has element type %d, which "
                       "modelbench does not support",
                       name, (int)type);
    goto done;
  }
  if (shape.rank > MB_MAX_RANK) {
    status = mb__error(err, MB_STATUS_UNSUPPORTED,
                       "openvino: output '%s' has rank %lld, more than %d",
                       name, (long long)shape.rank, MB_MAX_RANK);
    goto done;
  }
  if ((status = mb_tensor_create(dtype, (int)shape.rank, shape.dims, &t, err)))
    goto done;
  if (t->nbytes)
    memcpy(t->data, data, t->nbytes);
  if (!(t->name = mb__strdup(name))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  *tensor_out = t;
  t = NULL;
done:
  mb_tensor_free(t);
  if (shape.dims)
    ov.ov_shape_free(&shape);
  if (value)
    ov.ov_tensor_free(value);
  return status;
}

static mb_status ov_fetch_outputs(void *session, mb_tensor **outputs_out,
                                  mb_error *err) {
  ov_session *s = session;
  for (int i = 0; i < s->n_outputs; i++)
    outputs_out[i] = NULL;
  if (!s->has_run)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "openvino: no outputs yet: run the session first");
  for (int i = 0; i < s->n_outputs; i++) {
    mb_status status = copy_output(s, i, &outputs_out[i], err);
    if (status) {
      for (int j = 0; j < i; j++) {
        mb_tensor_free(outputs_out[j]);
        outputs_out[j] = NULL;
      }
      return status;
    }
  }
  return MB_STATUS_OK;
}

#endif /* MB_HAVE_OV_HEADERS */

/* The CPU plugin's int8 kernels are oneDNN's: without VNNI they add pairs
 * of u8 x s8 products in 16 bits and can saturate, the reason NNCF's
 * overflow fix exists. OpenVINO's quantiser, NNCF (bench/nncf.c), has no
 * mixed form: there its answer, 7-bit weights on every layer, is the form
 * (int8_form.c). */
static mb_int8_weights ov_int8_weights(char *reason, size_t size) {
  mb_int8_weights form = mb__cpu_int8_weights(reason, size);
  if (form != MB_INT8_WEIGHTS_MIXED)
    return form;
  size_t used = reason && size ? strlen(reason) : 0;
  if (reason && used < size)
    snprintf(reason + used, size - used,
             "; OpenVINO's quantiser, NNCF, fixes that with 7-bit weights on "
             "every layer (its overflow fix)");
  return MB_INT8_WEIGHTS_W7;
}

const mb_runtime mb__runtime_openvino = {
    .name = "openvino",
    .probe = ov_probe,
    .prepare = ov_prepare,
    .run = ov_run,
    .fetch_outputs = ov_fetch_outputs,
    .release = ov_release,
    .int8_weights = ov_int8_weights,
#ifdef MB_HAVE_OV_HEADERS
    .profile_reset = ov_profile_reset,
    .profile_collect = ov_profile_collect,
#endif
};
