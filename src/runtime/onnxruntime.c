/* ONNX Runtime behind the runtime interface, through ORT's C API.
 *
 * libonnxruntime.so.1 is loaded with dlopen on first use, so modelbench
 * builds and runs without it; only the C headers are needed at build time
 * (MB_HAVE_ORT_HEADERS, see CMakeLists.txt). Without them this file still
 * compiles to an adapter whose probe says why it is unavailable.
 *
 * The timed run() does what a minimal standalone loop over the same session
 * does: it wraps our input buffers in OrtValues without copying (re-created
 * only when an input's buffer or shape changes), lets ORT allocate the
 * outputs, and keeps them until the next run, so the harness adds next to
 * nothing around OrtApi::Run. */
#include "core/json_parse.h"
#include "runtime/runtime.h"

#ifndef MB_HAVE_ORT_HEADERS

static void ort_probe(mb_runtime_info *info) {
  info->available = 0;
  info->version[0] = '\0';
  snprintf(info->reason, sizeof info->reason,
           "built without ONNX Runtime headers (run "
           "scripts/fetch-onnxruntime.sh or set ONNXRUNTIME_ROOT, then "
           "reconfigure)");
}

static mb_status ort_prepare(const mb_model *model, const void *model_bytes,
                             size_t model_size,
                             const mb_runtime_options *options,
                             void **session_out, mb_error *err) {
  return mb__error(err, MB_STATUS_UNAVAILABLE,
                   "onnxruntime: built without ONNX Runtime headers");
}

static mb_status ort_run(void *session, const mb_tensor *const *inputs,
                         mb_error *err) {
  return mb__error(err, MB_STATUS_UNAVAILABLE,
                   "onnxruntime: built without ONNX Runtime headers");
}

static mb_status ort_fetch_outputs(void *session, mb_tensor **outputs_out,
                                   mb_error *err) {
  return mb__error(err, MB_STATUS_UNAVAILABLE,
                   "onnxruntime: built without ONNX Runtime headers");
}

static void ort_release(void *session) {}

#else /* MB_HAVE_ORT_HEADERS */

#include <onnxruntime_c_api.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ORT_SONAME "libonnxruntime.so.1"
/* The oldest C API this adapter accepts; every function it calls exists
 * there. */
#define ORT_MIN_API_VERSION 16

/* ---- loading: the only process-wide state ---- */

static pthread_once_t ort_once = PTHREAD_ONCE_INIT;
static void *ort_handle;
static const OrtApi *ort;
static char ort_version[64];
static char ort_reason[256];

typedef const OrtApiBase *(*ort_get_api_base_fn)(void);

/* Tries one library file. Returns 1 when loaded. A file that is there but
 * does not load ends the search (*stop), with the loader's reason in why:
 * falling back to another copy would hide the problem. */
static int ort_try_open(const char *path, int *stop, char *why,
                        size_t why_size) {
  if (access(path, F_OK) != 0)
    return 0;
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *e = dlerror();
    if (snprintf(why, why_size, "cannot load %s: %s", path, e ? e : "?") < 0)
      why[0] = '\0';
    *stop = 1;
    return 0;
  }
  ort_handle = handle;
  return 1;
}

/* Appends ", item" to the searched-list buffer. */
static void append_searched(char *buf, size_t size, const char *item) {
  size_t len = strlen(buf);
  /* A long list is cut; the return value says by how much, which we do not
   * need. */
  if (len < size &&
      snprintf(buf + len, size - len, "%s%s", len ? ", " : "", item) < 0)
    buf[len] = '\0';
}

/* Opens the library, trying in order: $ONNXRUNTIME_ROOT/lib,
 * $MODELBENCH_ORT_LIB (a full path), the cache scripts/fetch-onnxruntime.sh
 * fills, the folder beside the headers found at build time, then the
 * default dlopen search path. A candidate ending in '/' is a folder. */
static int ort_open_library(char *searched, size_t searched_size, char *why,
                            size_t why_size) {
  static const char *const names[] = {ORT_SONAME, "libonnxruntime.so"};
  const char *root = getenv("ONNXRUNTIME_ROOT");
  const char *lib = getenv("MODELBENCH_ORT_LIB");
  const char *cache = getenv("MODELBENCH_CACHE_DIR");
  const char *home = getenv("HOME");
  char candidates[4][1024];
  int n = 0, stop = 0;
  /* A candidate too long for the buffer is dropped, not tried cut short. */
#define ADD_CANDIDATE(...)                                                     \
  do {                                                                         \
    int len_ = snprintf(candidates[n], sizeof candidates[n], __VA_ARGS__);     \
    if (len_ > 0 && len_ < (int)sizeof candidates[n])                          \
      n++;                                                                     \
  } while (0)
  if (root && *root)
    ADD_CANDIDATE("%s/lib/", root);
  if (lib && *lib)
    ADD_CANDIDATE("%s", lib);
  if (cache && *cache)
    ADD_CANDIDATE("%s/onnxruntime-1.30.0/lib/", cache);
  else if (home && *home)
    ADD_CANDIDATE("%s/.cache/modelbench/onnxruntime-1.30.0/lib/", home);
#ifdef MB_ORT_BUILD_LIB_DIR
  ADD_CANDIDATE("%s/", MB_ORT_BUILD_LIB_DIR);
#endif
#undef ADD_CANDIDATE
  for (int c = 0; c < n && !stop; c++) {
    size_t len = strlen(candidates[c]);
    int seen = 0;
    for (int earlier = 0; earlier < c; earlier++)
      seen |= strcmp(candidates[earlier], candidates[c]) == 0;
    if (seen)
      continue;
    append_searched(searched, searched_size, candidates[c]);
    if (candidates[c][len - 1] != '/') {
      if (ort_try_open(candidates[c], &stop, why, why_size))
        return 1;
      continue;
    }
    for (size_t i = 0; i < MB_ARRAY_COUNT(names) && !stop; i++) {
      char path[1100];
      if (snprintf(path, sizeof path, "%s%s", candidates[c], names[i]) >=
          (int)sizeof path)
        continue; /* too long to be a real path */
      if (ort_try_open(path, &stop, why, why_size))
        return 1;
    }
  }
  if (stop)
    return 0;
  append_searched(searched, searched_size, "the default library path");
  ort_handle = dlopen(ORT_SONAME, RTLD_NOW | RTLD_LOCAL);
  return ort_handle != NULL;
}

/* The C API version a library of version "1.MINOR.PATCH" provides: ORT
 * bumps ORT_API_VERSION with every minor release. Asking GetApi for a newer
 * version makes ORT print to stderr, so we ask for what it has. */
static uint32_t ort_api_version_for(const char *version) {
  unsigned major = 0, minor = 0;
  if (!version || sscanf(version, "%u.%u", &major, &minor) != 2 || major != 1)
    return ORT_API_VERSION;
  return minor < ORT_API_VERSION ? minor : ORT_API_VERSION;
}

static void ort_load(void) {
  char searched[512] = "", why[256] = "";
  if (!ort_open_library(searched, sizeof searched, why, sizeof why)) {
    if (why[0])
      snprintf(ort_reason, sizeof ort_reason, "%s", why);
    else {
      /* Cut the searched list, never the advice. */
      static const char head[] = ORT_SONAME " not found (searched: ";
      static const char tail[] =
          "); run scripts/fetch-onnxruntime.sh or set ONNXRUNTIME_ROOT";
      int room = (int)(sizeof ort_reason - sizeof head - sizeof tail);
      snprintf(ort_reason, sizeof ort_reason, "%s%.*s%s", head, room, searched,
               tail);
    }
    return;
  }
  ort_get_api_base_fn get_base =
      (ort_get_api_base_fn)(uintptr_t)dlsym(ort_handle, "OrtGetApiBase");
  const OrtApiBase *base = get_base ? get_base() : NULL;
  if (!base) {
    snprintf(ort_reason, sizeof ort_reason,
             ORT_SONAME " has no OrtGetApiBase: not ONNX Runtime?");
    return;
  }
  const char *version = base->GetVersionString();
  uint32_t v = ort_api_version_for(version);
  for (; v >= ORT_MIN_API_VERSION && !ort; v--)
    ort = base->GetApi(v);
  if (!ort) {
    snprintf(ort_reason, sizeof ort_reason,
             "ONNX Runtime %s is too old: C API %d or newer is needed",
             version ? version : "?", ORT_MIN_API_VERSION);
    return;
  }
  snprintf(ort_version, sizeof ort_version, "%s", version ? version : "?");
}

/* The API table, or NULL with err set to why ORT is unavailable. */
static const OrtApi *ort_api(mb_error *err) {
  pthread_once(&ort_once, ort_load);
  if (!ort)
    mb__error(err, MB_STATUS_UNAVAILABLE, "onnxruntime: %s", ort_reason);
  return ort;
}

static void ort_probe(mb_runtime_info *info) {
  pthread_once(&ort_once, ort_load);
  info->available = ort != NULL;
  snprintf(info->version, sizeof info->version, "%s", ort ? ort_version : "");
  snprintf(info->reason, sizeof info->reason, "%s", ort ? "" : ort_reason);
}

/* ---- tables ---- */

static const struct {
  OrtErrorCode code;
  mb_status status;
} error_map[] = {
    {ORT_INVALID_ARGUMENT, MB_STATUS_INVALID_ARGUMENT},
    {ORT_NO_SUCHFILE, MB_STATUS_IO},
    {ORT_INVALID_PROTOBUF, MB_STATUS_PARSE},
    {ORT_NOT_IMPLEMENTED, MB_STATUS_UNSUPPORTED},
    /* The model passed our reader: a graph ORT refuses is one it does not
     * support rather than a malformed file. */
    {ORT_INVALID_GRAPH, MB_STATUS_UNSUPPORTED},
    {ORT_NOT_FOUND, MB_STATUS_NOT_FOUND},
};

static const struct {
  mb_dtype dtype;
  ONNXTensorElementDataType ort_type;
} dtype_map[] = {
    {MB_DTYPE_FLOAT, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT},
    {MB_DTYPE_UINT8, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8},
    {MB_DTYPE_INT8, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8},
    {MB_DTYPE_UINT16, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16},
    {MB_DTYPE_INT16, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16},
    {MB_DTYPE_INT32, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32},
    {MB_DTYPE_INT64, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64},
    {MB_DTYPE_BOOL, ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL},
    {MB_DTYPE_FLOAT16, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16},
    {MB_DTYPE_DOUBLE, ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE},
    {MB_DTYPE_UINT32, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32},
    {MB_DTYPE_UINT64, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64},
    {MB_DTYPE_COMPLEX64, ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64},
    {MB_DTYPE_COMPLEX128, ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128},
    {MB_DTYPE_BFLOAT16, ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16},
};

static const struct {
  mb_graph_opt_level level;
  GraphOptimizationLevel ort_level;
} opt_level_map[] = {
    {MB_GRAPH_OPT_DISABLED, ORT_DISABLE_ALL},
    {MB_GRAPH_OPT_BASIC, ORT_ENABLE_BASIC},
    {MB_GRAPH_OPT_EXTENDED, ORT_ENABLE_EXTENDED},
    {MB_GRAPH_OPT_ALL, ORT_ENABLE_ALL},
};

static int ort_type_of(mb_dtype dtype, ONNXTensorElementDataType *out) {
  for (size_t i = 0; i < MB_ARRAY_COUNT(dtype_map); i++)
    if (dtype_map[i].dtype == dtype) {
      *out = dtype_map[i].ort_type;
      return 1;
    }
  return 0;
}

static mb_dtype dtype_of(ONNXTensorElementDataType type) {
  for (size_t i = 0; i < MB_ARRAY_COUNT(dtype_map); i++)
    if (dtype_map[i].ort_type == type)
      return dtype_map[i].dtype;
  return MB_DTYPE_UNDEFINED;
}

/* Turns an OrtStatus into our status with ORT's message on one line, and
 * releases it. NULL (success) gives MB_STATUS_OK. */
static mb_status ort_check(OrtStatus *st, mb_error *err, const char *what) {
  if (!st)
    return MB_STATUS_OK;
  mb_status status = MB_STATUS_INTERNAL;
  OrtErrorCode code = ort->GetErrorCode(st);
  for (size_t i = 0; i < MB_ARRAY_COUNT(error_map); i++)
    if (error_map[i].code == code)
      status = error_map[i].status;
  mb__error(err, status, "onnxruntime: %s: %s", what, ort->GetErrorMessage(st));
  ort->ReleaseStatus(st);
  if (err)
    for (char *p = err->message; *p; p++)
      if (*p == '\n' || *p == '\r')
        *p = ' ';
  return status;
}

/* Frees memory ORT allocated for us; a failure leaves nothing to do. */
static void ort_free(OrtAllocator *allocator, void *p) {
  OrtStatus *st = ort->AllocatorFree(allocator, p);
  if (st)
    ort->ReleaseStatus(st);
}

/* ORT's log messages: shown on stderr when the caller asked for the
 * runtime's verbose output, else only at modelbench's debug level. */
static void ORT_API_CALL ort_log(void *param, OrtLoggingLevel severity,
                                 const char *category, const char *logid,
                                 const char *code_location,
                                 const char *message) {
  static const char *const names[] = {"verbose", "info", "warning", "error",
                                      "fatal"};
  const char *name =
      (unsigned)severity < MB_ARRAY_COUNT(names) ? names[severity] : "log";
  if (param)
    fprintf(stderr, "onnxruntime: %s: %s\n", name, message);
  else
    mb__log(MB_LOG_DEBUG, "onnxruntime: %s: %s", name, message);
}

/* ---- sessions ---- */

/* The OrtValue wrapping one input's buffer, reused while the caller passes
 * the same buffer with the same shape. */
typedef struct ort_input {
  OrtValue *value;
  const void *data;
  mb_dtype dtype;
  int rank;
  int64_t dims[MB_MAX_RANK];
} ort_input;

typedef struct ort_session {
  OrtEnv *env;
  OrtSessionOptions *options;
  OrtSession *session;
  OrtMemoryInfo *memory_info;
  int n_inputs, n_outputs;
  char **input_names, **output_names; /* malloc'd copies */
  mb_dtype *input_dtypes;             /* what the session expects */
  ort_input *inputs;
  OrtValue **outputs; /* of the last run, or NULL */
  int has_run;
  char *profile_path;     /* where the per-node profile goes, or NULL */
  int profile_ended;      /* SessionEndProfiling was called */
  int64_t runs;           /* successful runs so far */
  int64_t runs_at_reset;  /* runs before the last profile_reset */
  char empty_tensor_data; /* ORT wants a pointer even for 0 elements */
} ort_session;

static void free_names(char **names, int n) {
  if (!names)
    return;
  for (int i = 0; i < n; i++)
    free(names[i]);
  free(names);
}

static void release_outputs(ort_session *s) {
  for (int i = 0; s->outputs && i < s->n_outputs; i++) {
    if (s->outputs[i])
      ort->ReleaseValue(s->outputs[i]);
    s->outputs[i] = NULL;
  }
}

/* Writes the profile ORT collected to s->profile_path. */
static void end_profiling(ort_session *s) {
  OrtAllocator *allocator = NULL;
  char *written = NULL;
  OrtStatus *st = ort->GetAllocatorWithDefaultOptions(&allocator);
  if (!st)
    st = ort->SessionEndProfiling(s->session, allocator, &written);
  if (st) {
    mb__log(MB_LOG_WARN, "onnxruntime: cannot write the profile: %s",
            ort->GetErrorMessage(st));
    ort->ReleaseStatus(st);
    return;
  }
  /* ORT names the file "<prefix>_<timestamp>.json"; give it the asked name. */
  if (written && strcmp(written, s->profile_path) != 0 &&
      rename(written, s->profile_path) != 0)
    mb__log(MB_LOG_WARN, "onnxruntime: profile left in %s", written);
  if (written)
    ort_free(allocator, written);
}

static void ort_release(void *session) {
  ort_session *s = session;
  if (!s)
    return;
  if (ort) {
    release_outputs(s);
    for (int i = 0; s->inputs && i < s->n_inputs; i++)
      if (s->inputs[i].value)
        ort->ReleaseValue(s->inputs[i].value);
    if (s->session && s->profile_path && !s->profile_ended)
      end_profiling(s);
    if (s->session)
      ort->ReleaseSession(s->session);
    if (s->memory_info)
      ort->ReleaseMemoryInfo(s->memory_info);
    if (s->options)
      ort->ReleaseSessionOptions(s->options);
    if (s->env)
      ort->ReleaseEnv(s->env);
  }
  free_names(s->input_names, s->n_inputs);
  free_names(s->output_names, s->n_outputs);
  free(s->input_dtypes);
  free(s->inputs);
  free(s->outputs);
  free(s->profile_path);
  free(s);
}

/* Copies ORT's name of input/output `index` into *name_out (malloc). */
static mb_status session_io_name(ort_session *s, int is_input, size_t index,
                                 char **name_out, mb_error *err) {
  OrtAllocator *allocator = NULL;
  char *name = NULL;
  mb_status status = ort_check(ort->GetAllocatorWithDefaultOptions(&allocator),
                               err, "cannot get the default allocator");
  if (status)
    return status;
  status = ort_check(
      is_input ? ort->SessionGetInputName(s->session, index, allocator, &name)
               : ort->SessionGetOutputName(s->session, index, allocator, &name),
      err, "cannot read the session's input/output names");
  if (status)
    return status;
  *name_out = mb__strdup(name);
  ort_free(allocator, name);
  if (!*name_out)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  return MB_STATUS_OK;
}

/* The element type the session expects for input `index`; UNDEFINED for
 * non-tensor inputs or types we do not map. */
static mb_status session_input_dtype(ort_session *s, size_t index,
                                     mb_dtype *dtype_out, mb_error *err) {
  OrtTypeInfo *type_info = NULL;
  const OrtTensorTypeAndShapeInfo *tensor_info = NULL;
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  mb_status status =
      ort_check(ort->SessionGetInputTypeInfo(s->session, index, &type_info),
                err, "cannot read the session's input types");
  if (status)
    return status;
  status = ort_check(ort->CastTypeInfoToTensorInfo(type_info, &tensor_info),
                     err, "cannot read the session's input types");
  if (!status && tensor_info)
    status = ort_check(ort->GetTensorElementType(tensor_info, &type), err,
                       "cannot read the session's input types");
  ort->ReleaseTypeInfo(type_info);
  *dtype_out = dtype_of(type);
  return status;
}

/* Picks the input and output names Run is given. With our model, its graph
 * order is the contract (inputs come in that order, fetch_outputs fills
 * that order), so its names are used after checking ORT knows them;
 * without it, ORT's own order. */
static mb_status session_bind_names(ort_session *s, const mb_model *model,
                                    mb_error *err) {
  size_t n_in = 0, n_out = 0;
  char **ort_in = NULL, **ort_out = NULL;
  mb_status status;
  if ((status = ort_check(ort->SessionGetInputCount(s->session, &n_in), err,
                          "cannot count the session's inputs")) ||
      (status = ort_check(ort->SessionGetOutputCount(s->session, &n_out), err,
                          "cannot count the session's outputs")))
    return status;
  ort_in = calloc(n_in + 1, sizeof *ort_in);
  ort_out = calloc(n_out + 1, sizeof *ort_out);
  if (!ort_in || !ort_out) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < n_in && !status; i++)
    status = session_io_name(s, 1, i, &ort_in[i], err);
  for (size_t i = 0; i < n_out && !status; i++)
    status = session_io_name(s, 0, i, &ort_out[i], err);
  if (status)
    goto done;

  mb_dtype ort_in_dtypes[64];
  if (n_in > MB_ARRAY_COUNT(ort_in_dtypes)) {
    status = mb__error(err, MB_STATUS_UNSUPPORTED,
                       "onnxruntime: the model has %zu inputs, at most %zu "
                       "are supported",
                       n_in, MB_ARRAY_COUNT(ort_in_dtypes));
    goto done;
  }
  for (size_t i = 0; i < n_in && !status; i++)
    status = session_input_dtype(s, i, &ort_in_dtypes[i], err);
  if (status)
    goto done;

  if (!model) {
    s->n_inputs = (int)n_in;
    s->n_outputs = (int)n_out;
    s->input_names = ort_in;
    s->output_names = ort_out;
    ort_in = ort_out = NULL;
    s->input_dtypes = calloc(n_in + 1, sizeof *s->input_dtypes);
    if (!s->input_dtypes) {
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
    memcpy(s->input_dtypes, ort_in_dtypes, n_in * sizeof *ort_in_dtypes);
    goto done;
  }

  int n_model_in = mb_model_input_count(model);
  int n_model_out = mb_model_output_count(model);
  s->input_names = calloc((size_t)n_model_in + 1, sizeof *s->input_names);
  s->output_names = calloc((size_t)n_model_out + 1, sizeof *s->output_names);
  s->input_dtypes = calloc((size_t)n_model_in + 1, sizeof *s->input_dtypes);
  if (!s->input_names || !s->output_names || !s->input_dtypes) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  s->n_inputs = n_model_in;
  s->n_outputs = n_model_out;
  for (int i = 0; i < n_model_in && !status; i++) {
    mb_value_info info;
    if ((status = mb_model_input_info(model, i, &info, err)))
      break;
    size_t j = 0;
    while (j < n_in && strcmp(ort_in[j], info.name) != 0)
      j++;
    if (j == n_in)
      status =
          mb__error(err, MB_STATUS_MISMATCH,
                    "onnxruntime: the session has no input '%s'", info.name);
    else if (!(s->input_names[i] = mb__strdup(info.name)))
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    else
      s->input_dtypes[i] = ort_in_dtypes[j];
  }
  for (int i = 0; i < n_model_out && !status; i++) {
    mb_value_info info;
    if ((status = mb_model_output_info(model, i, &info, err)))
      break;
    size_t j = 0;
    while (j < n_out && strcmp(ort_out[j], info.name) != 0)
      j++;
    if (j == n_out)
      status =
          mb__error(err, MB_STATUS_MISMATCH,
                    "onnxruntime: the session has no output '%s'", info.name);
    else if (!(s->output_names[i] = mb__strdup(info.name)))
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  /* ORT may require inputs our model does not list (it never should). */
  if (!status && (size_t)n_model_in < n_in)
    status = mb__error(err, MB_STATUS_MISMATCH,
                       "onnxruntime: the session has %zu inputs, the model "
                       "%d",
                       n_in, n_model_in);
done:
  free_names(ort_in, (int)n_in);
  free_names(ort_out, (int)n_out);
  return status;
}

static mb_status session_options_apply(ort_session *s,
                                       const mb_runtime_options *options,
                                       const mb_model *model, mb_error *err) {
  mb_runtime_options defaults = {.threads = 1, .opt_level = MB_GRAPH_OPT_ALL};
  if (!options)
    options = &defaults;
  size_t level = 0;
  while (level < MB_ARRAY_COUNT(opt_level_map) &&
         opt_level_map[level].level != options->opt_level)
    level++;
  if (level == MB_ARRAY_COUNT(opt_level_map))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "onnxruntime: unknown graph optimisation level %d",
                     (int)options->opt_level);
  mb_status status;
  if ((status = ort_check(ort->CreateSessionOptions(&s->options), err,
                          "cannot create session options")) ||
      (status = ort_check(
           ort->SetIntraOpNumThreads(s->options, MB_MAX(options->threads, 1)),
           err, "cannot set intra-op threads")) ||
      (status = ort_check(ort->SetInterOpNumThreads(s->options, 1), err,
                          "cannot set inter-op threads")) ||
      (status = ort_check(ort->SetSessionGraphOptimizationLevel(
                              s->options, opt_level_map[level].ort_level),
                          err, "cannot set the graph optimisation level")) ||
      (status = ort_check(
           ort->SetSessionExecutionMode(s->options, options->parallel_execution
                                                        ? ORT_PARALLEL
                                                        : ORT_SEQUENTIAL),
           err, "cannot set the execution mode")))
    return status;
  if (options->save_optimized_path &&
      (status = ort_check(ort->SetOptimizedModelFilePath(
                              s->options, options->save_optimized_path),
                          err, "cannot set the optimised model path")))
    return status;
  if (options->profile_path) {
    if (!(s->profile_path = mb__strdup(options->profile_path)))
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    if ((status =
             ort_check(ort->EnableProfiling(s->options, options->profile_path),
                       err, "cannot enable profiling")))
      return status;
  }
  /* A model loaded from memory finds its external data files here. */
  if (model && model->base_dir &&
      (status =
           ort_check(ort->AddSessionConfigEntry(
                         s->options,
                         "session.model_external_initializers_file_folder_path",
                         model->base_dir),
                     err, "cannot set the external data folder")))
    return status;
  return MB_STATUS_OK;
}

static mb_status ort_prepare(const mb_model *model, const void *model_bytes,
                             size_t model_size,
                             const mb_runtime_options *options,
                             void **session_out, mb_error *err) {
  if (!ort_api(err))
    return err ? err->status : MB_STATUS_UNAVAILABLE;
  if (!model_bytes && !(model && model->path))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "onnxruntime: needs the model's serialised bytes or "
                     "its file");
  ort_session *s = calloc(1, sizeof *s);
  if (!s)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  int verbose = options && options->verbose;
  mb_status status = ort_check(
      ort->CreateEnvWithCustomLogger(
          ort_log, verbose ? (void *)(uintptr_t)1 : NULL,
          verbose ? ORT_LOGGING_LEVEL_VERBOSE : ORT_LOGGING_LEVEL_WARNING,
          "modelbench", &s->env),
      err, "cannot create the environment");
  if (status)
    goto fail;
  if ((status = session_options_apply(s, options, model, err)))
    goto fail;
  if (model_bytes)
    status =
        ort_check(ort->CreateSessionFromArray(s->env, model_bytes, model_size,
                                              s->options, &s->session),
                  err, "cannot create the session");
  else
    status = ort_check(
        ort->CreateSession(s->env, model->path, s->options, &s->session), err,
        "cannot create the session");
  if (status)
    goto fail;
  if ((status =
           ort_check(ort->CreateCpuMemoryInfo(
                         OrtArenaAllocator, OrtMemTypeDefault, &s->memory_info),
                     err, "cannot create the CPU memory info")))
    goto fail;
  if ((status = session_bind_names(s, model, err)))
    goto fail;
  s->inputs = calloc((size_t)s->n_inputs + 1, sizeof *s->inputs);
  s->outputs = calloc((size_t)s->n_outputs + 1, sizeof *s->outputs);
  if (!s->inputs || !s->outputs) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto fail;
  }
  *session_out = s;
  return MB_STATUS_OK;
fail:
  ort_release(s);
  return status;
}

/* Makes s->inputs[i] wrap tensor t, re-creating the OrtValue only when the
 * buffer or the shape changed since the last run. */
static mb_status bind_input(ort_session *s, int i, const mb_tensor *t,
                            mb_error *err) {
  ort_input *in = &s->inputs[i];
  if (in->value && in->data == t->data && in->dtype == t->dtype &&
      in->rank == t->rank &&
      memcmp(in->dims, t->dims, (size_t)t->rank * sizeof t->dims[0]) == 0)
    return MB_STATUS_OK;
  ONNXTensorElementDataType type;
  if (t->dtype != s->input_dtypes[i] || !ort_type_of(t->dtype, &type))
    return mb__error(err, MB_STATUS_SHAPE,
                     "onnxruntime: input '%s' is %s, the session expects %s",
                     s->input_names[i], mb_dtype_name(t->dtype),
                     mb_dtype_name(s->input_dtypes[i]));
  if (in->value) {
    ort->ReleaseValue(in->value);
    in->value = NULL;
  }
  void *data = t->data ? t->data : &s->empty_tensor_data;
  mb_status status = ort_check(ort->CreateTensorWithDataAsOrtValue(
                                   s->memory_info, data, t->nbytes, t->dims,
                                   (size_t)t->rank, type, &in->value),
                               err, "cannot wrap an input tensor");
  if (status) {
    in->value = NULL;
    return status;
  }
  in->data = t->data;
  in->dtype = t->dtype;
  in->rank = t->rank;
  memcpy(in->dims, t->dims, sizeof in->dims);
  return MB_STATUS_OK;
}

static mb_status ort_run(void *session, const mb_tensor *const *inputs,
                         mb_error *err) {
  ort_session *s = session;
  OrtValue *values[64];
  if (s->n_inputs > (int)MB_ARRAY_COUNT(values))
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "onnxruntime: at most %zu inputs are supported",
                     MB_ARRAY_COUNT(values));
  for (int i = 0; i < s->n_inputs; i++) {
    mb_status status = bind_input(s, i, inputs[i], err);
    if (status)
      return status;
    values[i] = s->inputs[i].value;
  }
  release_outputs(s);
  s->has_run = 0;
  mb_status status =
      ort_check(ort->Run(s->session, NULL, (const char *const *)s->input_names,
                         (const OrtValue *const *)values, (size_t)s->n_inputs,
                         (const char *const *)s->output_names,
                         (size_t)s->n_outputs, s->outputs),
                err, "run failed");
  if (status) {
    release_outputs(s);
    return status;
  }
  s->has_run = 1;
  s->runs++;
  return MB_STATUS_OK;
}

/* Per-node profile from ORT's own profiler: the session was created with
 * profiling on (options->profile_path); collecting ends it, reads the
 * Chrome-trace JSON ORT wrote and keeps the events of the runs since the
 * reset: "model_run" (Session) for the segment, "<node>_kernel_time" (Node,
 * args.op_name) per node. Durations are in microseconds. */
static void ort_profile_reset(void *session, int level) {
  ort_session *s = session;
  (void)level;
  s->runs_at_reset = s->runs;
}

typedef struct ort_node_sum {
  const char *name, *op_type; /* into the parsed document */
  size_t name_len;
  double total_us;
  int64_t runs;
} ort_node_sum;

static int by_ts(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static const char *event_str(const mb_json_value *event, const char *key) {
  const mb_json_value *v = mb__json_find(event, key);
  return v && v->type == MB_JSON_STRING ? v->string : NULL;
}

static double event_num(const mb_json_value *event, const char *key) {
  const mb_json_value *v = mb__json_find(event, key);
  return v && v->type == MB_JSON_NUMBER ? v->number : -1.0;
}

static mb_status ort_profile_collect(void *session, mb_profile *out,
                                     mb_error *err) {
  ort_session *s = session;
  static const char suffix[] = "_kernel_time";
  const size_t suffix_len = sizeof suffix - 1;
  mb_json_doc *doc = NULL;
  ort_node_sum *nodes = NULL;
  double *run_ts = NULL;
  int n_nodes = 0, cap_nodes = 0;
  mb_status status = MB_STATUS_OK;
  if (!s->profile_path || s->profile_ended)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "onnxruntime: the session was not prepared for "
                     "profiling, or its profile was already collected");
  end_profiling(s);
  s->profile_ended = 1;
  if ((status = mb__json_parse_file(s->profile_path, &doc, err)))
    return status;
  const mb_json_value *events = &doc->root;
  if (events->type != MB_JSON_ARRAY) {
    status = mb__error(err, MB_STATUS_PARSE,
                       "onnxruntime: %s: the profile is not a JSON array",
                       s->profile_path);
    goto done;
  }
  /* The profiled runs are the last (runs - runs_at_reset) model_run events;
   * the first of them marks where the profiled node events start. */
  size_t n_runs = 0;
  if (!(run_ts = malloc(sizeof *run_ts * (events->count + 1)))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < events->count; i++) {
    const char *name = event_str(&events->items[i], "name");
    if (name && strcmp(name, "model_run") == 0)
      run_ts[n_runs++] = event_num(&events->items[i], "ts");
  }
  qsort(run_ts, n_runs, sizeof *run_ts, by_ts);
  int64_t profiled = s->runs - s->runs_at_reset;
  if (profiled <= 0 || (int64_t)n_runs < profiled) {
    status = mb__error(err, MB_STATUS_INTERNAL,
                       "onnxruntime: the profile holds %zu runs, %lld "
                       "expected",
                       n_runs, (long long)profiled);
    goto done;
  }
  double cutoff = run_ts[n_runs - (size_t)profiled];
  double run_total_us = 0.0;
  const char *first_node = NULL;
  for (size_t i = 0; i < events->count; i++) {
    const mb_json_value *e = &events->items[i];
    const char *name = event_str(e, "name"), *cat = event_str(e, "cat");
    double ts = event_num(e, "ts"), dur = event_num(e, "dur");
    if (!name || !cat || ts < cutoff || dur < 0)
      continue;
    if (strcmp(name, "model_run") == 0) {
      run_total_us += dur;
      continue;
    }
    size_t len = strlen(name);
    if (strcmp(cat, "Node") != 0 || len <= suffix_len ||
        strcmp(name + len - suffix_len, suffix) != 0)
      continue;
    len -= suffix_len;
    int k = 0;
    while (k < n_nodes &&
           !(nodes[k].name_len == len && memcmp(nodes[k].name, name, len) == 0))
      k++;
    if (k == n_nodes) {
      if (n_nodes == cap_nodes) {
        int cap = cap_nodes ? cap_nodes * 2 : 64;
        ort_node_sum *p = realloc(nodes, sizeof *nodes * (size_t)cap);
        if (!p) {
          status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
          goto done;
        }
        nodes = p;
        cap_nodes = cap;
      }
      const mb_json_value *args = mb__json_find(e, "args");
      const char *op = args ? event_str(args, "op_name") : NULL;
      nodes[n_nodes++] = (ort_node_sum){name, op ? op : "?", len, 0.0, 0};
      if (!first_node)
        first_node = name;
    }
    nodes[k].total_us += dur;
    nodes[k].runs++;
  }
  char first[128] = "";
  if (first_node)
    snprintf(first, sizeof first, "%.*s", (int)nodes[0].name_len, first_node);
  if ((status = mb__profile_add_segment(out, "onnxruntime", n_nodes, first,
                                        profiled, run_total_us / 1e3, err)))
    goto done;
  for (int k = 0; k < n_nodes; k++) {
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)nodes[k].name_len, nodes[k].name);
    if ((status = mb__profile_add_node(out, "onnxruntime", nodes[k].op_type,
                                       name, NULL, nodes[k].runs,
                                       nodes[k].total_us / 1e3, err)))
      goto done;
  }
  snprintf(out->note, sizeof out->note,
           "nodes as ORT runs them after its graph optimisations (fused "
           "nodes carry ORT's names)");
done:
  free(run_ts);
  free(nodes);
  mb__json_doc_free(doc);
  return status;
}

/* Copies one ORT output into a new tensor named `name`. */
static mb_status copy_output(OrtValue *value, const char *name,
                             mb_tensor **tensor_out, mb_error *err) {
  enum ONNXType kind = ONNX_TYPE_UNKNOWN;
  OrtTensorTypeAndShapeInfo *info = NULL;
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  size_t rank = 0;
  int64_t dims[MB_MAX_RANK];
  void *data = NULL;
  mb_tensor *t = NULL;
  mb_status status = ort_check(ort->GetValueType(value, &kind), err,
                               "cannot read an output's type");
  if (status)
    return status;
  if (kind != ONNX_TYPE_TENSOR)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "onnxruntime: output '%s' is not a tensor", name);
  if ((status = ort_check(ort->GetTensorTypeAndShape(value, &info), err,
                          "cannot read an output's shape")))
    return status;
  if (!(status = ort_check(ort->GetTensorElementType(info, &type), err,
                           "cannot read an output's type")) &&
      !(status = ort_check(ort->GetDimensionsCount(info, &rank), err,
                           "cannot read an output's shape")) &&
      rank <= MB_MAX_RANK)
    status = ort_check(ort->GetDimensions(info, dims, rank), err,
                       "cannot read an output's shape");
  ort->ReleaseTensorTypeAndShapeInfo(info);
  if (status)
    return status;
  mb_dtype dtype = dtype_of(type);
  if (dtype == MB_DTYPE_UNDEFINED)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "onnxruntime: output '%s' has element type %d, which "
                     "modelbench does not support",
                     name, (int)type);
  if (rank > MB_MAX_RANK)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "onnxruntime: output '%s' has rank %zu, more than %d",
                     name, rank, MB_MAX_RANK);
  if ((status = mb_tensor_create(dtype, (int)rank, dims, &t, err)))
    return status;
  if (t->nbytes) {
    if ((status = ort_check(ort->GetTensorMutableData(value, &data), err,
                            "cannot read an output's data")))
      goto fail;
    memcpy(t->data, data, t->nbytes);
  }
  if (!(t->name = mb__strdup(name))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto fail;
  }
  *tensor_out = t;
  return MB_STATUS_OK;
fail:
  mb_tensor_free(t);
  return status;
}

static mb_status ort_fetch_outputs(void *session, mb_tensor **outputs_out,
                                   mb_error *err) {
  ort_session *s = session;
  for (int i = 0; i < s->n_outputs; i++)
    outputs_out[i] = NULL;
  if (!s->has_run)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "onnxruntime: no outputs yet: run the session first");
  for (int i = 0; i < s->n_outputs; i++) {
    mb_status status =
        copy_output(s->outputs[i], s->output_names[i], &outputs_out[i], err);
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

#endif /* MB_HAVE_ORT_HEADERS */

const mb_runtime mb__runtime_onnxruntime = {
    .name = "onnxruntime",
    .probe = ort_probe,
    .prepare = ort_prepare,
    .run = ort_run,
    .fetch_outputs = ort_fetch_outputs,
    .release = ort_release,
    /* MLAS picks its u8 x s8 kernels by the CPU's flags (int8_form.c). */
    .int8_weights = mb__cpu_int8_weights,
#ifdef MB_HAVE_ORT_HEADERS
    .profile_reset = ort_profile_reset,
    .profile_collect = ort_profile_collect,
#endif
};
