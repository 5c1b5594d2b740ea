/* libtorch behind the runtime interface: TorchScript files (the
 * TORCHSCRIPT conversion) run as a C++ deployment runs them.
 *
 * The libtorch code lives in libmodelbench-libtorch.so
 * (libtorch_module.cpp, ABI in libtorch_module.h), built only when CMake
 * finds libtorch. This adapter dlopens it the first time the runtime is
 * probed or prepared, so libmodelbench never links libtorch and processes
 * that run no TorchScript never load it. A module that was not built, is
 * not found or does not load makes the runtime `unavailable`, with the
 * reason.
 *
 * The model is opaque: its inputs (from --shape or a manifest) are
 * forward()'s arguments, in order; its declared outputs, when it has any,
 * must match the tensors forward() returns. */
#define _GNU_SOURCE /* dladdr */
#include "ops/op.h"
#include "runtime/libtorch_module.h"
#include "runtime/runtime.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- loading the module: the only process-wide state ---- */

static pthread_once_t lt_once = PTHREAD_ONCE_INIT;
static const mb_libtorch_module *lt_module;
static char lt_reason[256]; /* mb_runtime_info's reason holds as much */

/* Why the module is unavailable; cut to fit. */
static void set_reason(const char *fmt, ...) MB_PRINTF(1, 2);
static void set_reason(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(lt_reason, sizeof lt_reason, fmt, ap);
  va_end(ap);
}

#ifdef MB_LIBTORCH_MODULE_BUILT
/* ---- another libtorch in this process tree ----
 * Two libtorch builds cannot share a process: both are libtorch_cpu.so,
 * so the loader hands the second the first's symbols (and both register
 * the same operators, which aborts). The Python front on a PyTorch other
 * than the one this module was built with (torch 2.x from PyPI beside
 * Debian's libtorch 1.13) is that case twice over: its user's process has
 * already loaded torch, and the engine it starts forks workers that
 * import torch after a probe here would have loaded ours. */

static int find_loaded_torch(struct dl_phdr_info *info, size_t size,
                             void *data) {
  (void)size;
  const char *name = info->dlpi_name;
  const char *base = name ? strrchr(name, '/') : NULL;
  base = base ? base + 1 : name;
  if (base && strncmp(base, "libtorch_cpu.so", 15) == 0) {
    snprintf(data, PATH_MAX, "%s", name);
    return 1;
  }
  return 0;
}

/* Whether `path` is the libtorch_cpu this module links (by real path). */
static int is_our_libtorch(const char *path) {
  char mine[PATH_MAX], theirs[PATH_MAX];
  if (!realpath(MB_LIBTORCH_CPU_FILE, mine) || !realpath(path, theirs))
    return 0;
  return strcmp(mine, theirs) == 0;
}

/* 1 (with the reason set) when a libtorch other than ours is loaded here
 * or is the Python front's (MODELBENCH_HOST_TORCH_LIB, which the front
 * sets to its torch's libtorch_cpu without importing torch). */
static int other_libtorch(void) {
  char loaded[PATH_MAX] = "";
  dl_iterate_phdr(find_loaded_torch, loaded);
  const char *host = getenv("MODELBENCH_HOST_TORCH_LIB");
  const char *other = loaded[0] && !is_our_libtorch(loaded)     ? loaded
                      : host && *host && !is_our_libtorch(host) ? host
                                                                : NULL;
  if (!other)
    return 0;
  set_reason("another PyTorch is in this process (%s); TORCHSCRIPT "
             "uses " MB_LIBTORCH_CPU_FILE
             " and two cannot share one: run it from "
             "the modelbench CLI or Debian's python3",
             other);
  return 1;
}

/* dlopens path when it exists. Returns 1 when loaded; a file that is there
 * but does not load ends the search with the loader's reason (*stop):
 * falling back to another copy would hide the problem. */
static int try_open(const char *path, void **handle_out, int *stop) {
  if (access(path, F_OK) != 0)
    return 0;
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    set_reason("cannot load %s: %s", path, why ? why : "?");
    *stop = 1;
    return 0;
  }
  *handle_out = handle;
  return 1;
}

/* The folders the module may be in, in order: $MODELBENCH_LIBTORCH_MODULE
 * (a full path), beside the code of this adapter (libmodelbench.so's
 * folder, or ../lib of a program linking the static library), the build
 * tree and the install folder known at build time. Then the default
 * library search path. */
static void *open_module(void) {
  char candidates[5][1100];
  int n = 0, stop = 0;
  void *handle = NULL;
  const char *env = getenv("MODELBENCH_LIBTORCH_MODULE");
  if (env && *env) {
    if (access(env, F_OK) != 0) {
      set_reason("MODELBENCH_LIBTORCH_MODULE=%s: no such file", env);
      return NULL;
    }
    snprintf(candidates[n++], sizeof candidates[0], "%s", env);
  }
  Dl_info self;
  if (dladdr((void *)(uintptr_t)open_module, &self) && self.dli_fname) {
    const char *slash = strrchr(self.dli_fname, '/');
    int dir_len = slash ? (int)(slash - self.dli_fname) : 1;
    const char *dir = slash ? self.dli_fname : ".";
    snprintf(candidates[n++], sizeof candidates[0], "%.*s/%s", dir_len, dir,
             MB_LIBTORCH_MODULE_FILE);
    snprintf(candidates[n++], sizeof candidates[0], "%.*s/../lib/%s", dir_len,
             dir, MB_LIBTORCH_MODULE_FILE);
  }
#ifdef MB_LIBTORCH_BUILD_DIR
  snprintf(candidates[n++], sizeof candidates[0], "%s/%s",
           MB_LIBTORCH_BUILD_DIR, MB_LIBTORCH_MODULE_FILE);
#endif
#ifdef MB_LIBTORCH_INSTALL_DIR
  snprintf(candidates[n++], sizeof candidates[0], "%s/%s",
           MB_LIBTORCH_INSTALL_DIR, MB_LIBTORCH_MODULE_FILE);
#endif
  for (int i = 0; i < n && !stop; i++)
    if (try_open(candidates[i], &handle, &stop))
      return handle;
  if (stop)
    return NULL;
  if ((handle = dlopen(MB_LIBTORCH_MODULE_FILE, RTLD_NOW | RTLD_LOCAL)))
    return handle;
  set_reason(MB_LIBTORCH_MODULE_FILE " not found beside libmodelbench, in the "
                                     "build tree or the library path (set "
                                     "MODELBENCH_LIBTORCH_MODULE to its path)");
  return NULL;
}
#endif /* MB_LIBTORCH_MODULE_BUILT */

static void lt_load(void) {
#ifndef MB_LIBTORCH_MODULE_BUILT
  set_reason("built without libtorch (apt install libtorch-dev, or "
             "MB_WITH_TORCH=1 scripts/install-deps.sh, then reconfigure)");
#else
  if (other_libtorch())
    return;
  void *handle = open_module();
  if (!handle)
    return;
  mb_libtorch_module_get_fn get = (mb_libtorch_module_get_fn)(uintptr_t)dlsym(
      handle, MB_LIBTORCH_MODULE_ENTRY);
  const mb_libtorch_module *module = get ? get() : NULL;
  if (!module) {
    set_reason(MB_LIBTORCH_MODULE_FILE " has no " MB_LIBTORCH_MODULE_ENTRY);
    return;
  }
  if (module->abi_version != MB_LIBTORCH_ABI_VERSION) {
    set_reason(MB_LIBTORCH_MODULE_FILE " has ABI %d but this modelbench needs "
                                       "%d: rebuild both together",
               module->abi_version, MB_LIBTORCH_ABI_VERSION);
    return;
  }
  /* Never dlclose'd: libtorch does not support being unloaded. */
  lt_module = module;
#endif
}

/* The module, or NULL with err set to why libtorch is unavailable. */
static const mb_libtorch_module *lt_get(mb_error *err) {
  pthread_once(&lt_once, lt_load);
  if (!lt_module)
    mb__error(err, MB_STATUS_UNAVAILABLE, "libtorch: %s", lt_reason);
  return lt_module;
}

static void lt_probe(mb_runtime_info *info) {
  pthread_once(&lt_once, lt_load);
  info->available = lt_module != NULL;
  snprintf(info->version, sizeof info->version, "%s",
           lt_module ? lt_module->version : "");
  snprintf(info->reason, sizeof info->reason, "%s", lt_module ? "" : lt_reason);
}

/* ---- sessions ---- */

typedef struct lt_session {
  void *module_session;
  int n_inputs, n_outputs;
  mb_libtorch_tensor *inputs; /* views of the caller's tensors, per run */
  const mb_model *model;      /* borrowed: names of the declared outputs */
  char *path;
} lt_session;

static void lt_release(void *session) {
  lt_session *s = session;
  if (!s)
    return;
  if (s->module_session)
    lt_module->release(s->module_session);
  free(s->inputs);
  free(s->path);
  free(s);
}

static mb_status lt_prepare(const mb_model *model, const void *model_bytes,
                            size_t model_size,
                            const mb_runtime_options *options,
                            void **session_out, mb_error *err) {
  const mb_libtorch_module *module = lt_get(err);
  mb_status status;
  if (!module)
    return MB_STATUS_UNAVAILABLE;
  if (!options->model_path)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "libtorch runs TorchScript files and this model has "
                     "none");
  lt_session *s = calloc(1, sizeof *s);
  if (!s)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  s->model = model;
  s->n_inputs = mb_model_input_count(model);
  s->n_outputs = mb_model_output_count(model);
  s->path = mb__strdup(options->model_path);
  s->inputs = calloc((size_t)MB_MAX(s->n_inputs, 1), sizeof *s->inputs);
  if (!s->path || !s->inputs) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto fail;
  }
  for (int i = 0; i < s->n_inputs; i++) {
    mb_value_info info;
    if ((status = mb_model_input_info(model, i, &info, err)))
      goto fail;
    s->inputs[i].name = info.name; /* owned by the model */
  }
  /* Debian's libtorch multiplies matrices (Linear, 1x1 convolutions on one
   * thread) with the process's OpenBLAS, which at::set_num_threads leaves
   * at one thread per core: --threads holds for it too. */
  mb__blas_set_threads(options->threads);
  if ((status = module->load(s->path, options->threads, s->n_inputs,
                             &s->module_session, err)))
    goto fail;
  *session_out = s;
  return MB_STATUS_OK;

fail:
  lt_release(s);
  return status;
}

static mb_status lt_run(void *session, const mb_tensor *const *inputs,
                        mb_error *err) {
  lt_session *s = session;
  for (int i = 0; i < s->n_inputs; i++) {
    mb_libtorch_tensor *v = &s->inputs[i];
    v->dtype = inputs[i]->dtype;
    v->rank = inputs[i]->rank;
    memcpy(v->dims, inputs[i]->dims, sizeof v->dims);
    v->data = inputs[i]->data;
    v->nbytes = inputs[i]->nbytes;
  }
  return lt_module->run(s->module_session, s->inputs, err);
}

/* Copies the last run's outputs into new tensors, one per declared
 * output (none when the model declares none: a bare TorchScript file). */
static mb_status lt_fetch_outputs(void *session, mb_tensor **outputs_out,
                                  mb_error *err) {
  lt_session *s = session;
  const mb_libtorch_tensor *views = NULL;
  int count = 0;
  mb_status status;
  for (int i = 0; i < s->n_outputs; i++)
    outputs_out[i] = NULL;
  if ((status = lt_module->outputs(s->module_session, &views, &count, err)))
    return status;
  if (s->n_outputs > 0 && count != s->n_outputs)
    return mb__error(err, MB_STATUS_SHAPE,
                     "%s: forward() returns %d tensor%s but the model "
                     "declares %d output%s",
                     s->path, count, count == 1 ? "" : "s", s->n_outputs,
                     s->n_outputs == 1 ? "" : "s");
  for (int i = 0; i < s->n_outputs; i++) {
    const mb_libtorch_tensor *v = &views[i];
    mb_value_info info;
    mb_tensor *t = NULL;
    if ((status = mb_tensor_create(v->dtype, v->rank, v->dims, &t, err)))
      goto fail;
    outputs_out[i] = t;
    if (t->nbytes != v->nbytes) {
      status = mb__error(err, MB_STATUS_INTERNAL,
                         "%s: output %d has %zu bytes, expected %zu", s->path,
                         i, v->nbytes, t->nbytes);
      goto fail;
    }
    if (t->nbytes)
      memcpy(t->data, v->data, t->nbytes);
    const char *name =
        mb_model_output_info(s->model, i, &info, NULL) == MB_STATUS_OK
            ? info.name
            : v->name;
    if (name && !(t->name = mb__strdup(name))) {
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
      goto fail;
    }
  }
  return MB_STATUS_OK;

fail:
  for (int i = 0; i < s->n_outputs; i++) {
    mb_tensor_free(outputs_out[i]);
    outputs_out[i] = NULL;
  }
  return status;
}

static char *lt_take_error_detail(void) {
  return lt_module ? lt_module->take_error_detail() : NULL;
}

const mb_runtime mb__runtime_libtorch = {
    .name = "libtorch",
    .probe = lt_probe,
    .prepare = lt_prepare,
    .run = lt_run,
    .fetch_outputs = lt_fetch_outputs,
    .release = lt_release,
    .take_error_detail = lt_take_error_detail,
};
