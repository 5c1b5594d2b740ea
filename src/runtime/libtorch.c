/* libtorch behind the runtime interface, as two runtimes:
 *   libtorch  TorchScript files (TORCHSCRIPT) on Debian's libtorch, run as
 *             a C++ deployment runs them;
 *   aoti      AOTInductor packages (EXPORT+AOT_INDUCTOR: the Python front
 *             compiles the exported module with
 *             torch._inductor.aoti_compile_and_package) on the libtorch of
 *             the PyTorch 2.x wheel that made them, run as its C++ loader
 *             runs them, with no Python in the process.
 *
 * The libtorch code lives in modules built from libtorch_module.cpp (ABI
 * in libtorch_module.h): libmodelbench-libtorch.so and
 * libmodelbench-aoti.so, each built only when CMake finds its libtorch.
 * Each runtime here is one lt_flavor below.
 *
 * Probing loads nothing: a runtime is available when its module was built
 * and is found, and no other libtorch is in the process. The module is
 * dlopened when a conversion is prepared (in its worker), so a `list` or a
 * bench's parent process that probes both never holds two libtorch builds
 * (they cannot share a process), and a module that is there but does not
 * load fails the conversion with the loader's words.
 *
 * The model is opaque: its inputs (from --shape or a manifest) are the
 * arguments of forward() or the package's run(), in order; its declared
 * outputs, when it has any, must match the tensors returned.
 *
 * CUDA (options->device): both runtimes run there on the wheel's libtorch
 * (libmodelbench-aoti.so) when it has CUDA: TORCHSCRIPT on the GPU loads
 * the file with that module (Debian's libtorch has no CUDA), as does
 * TORCHSCRIPT on the CPU where Debian's module is missing. Whether a
 * runtime can use CUDA is decided without loading anything (the engine's
 * parent asks, and must not initialise CUDA before it forks): the module
 * is there and libtorch_cuda.so is beside its libtorch_cpu.so; whether a
 * GPU is there is the engine's NVML check. The module does the device
 * side (libtorch_module.cpp): inputs copied once per sample and kept on
 * the device, CUDA events around each call and a synchronisation after
 * it, the timed copies, the device's name and peak memory. */
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

/* ---- the modules: the only process-wide state ---- */

#define LT_REASON_SIZE 256 /* mb_runtime_info's reason holds as much */

typedef struct lt_flavor {
  const char *runtime;   /* the runtime's name */
  const char *file;      /* the module's file name */
  const char *env;       /* the variable that names the module's path */
  const char *torch_env; /* the variable that names its libtorch_cpu (a
                            module built elsewhere: tools/aoti-module) */
  const char *what;      /* what it runs, in messages */
  /* The libtorch_cpu the module links, its version, where the build and
   * `make install` put the module; NULL when the module was not built. */
  const char *cpu_file, *version, *build_dir, *install_dir;
  const char *not_built; /* why it was not built */
  int package;           /* runs AOTInductor packages (load_package) */
  pthread_once_t once;
  const mb_libtorch_module *module; /* once loaded */
  char reason[LT_REASON_SIZE];      /* why the load failed */
} lt_flavor;

#ifdef MB_LIBTORCH_MODULE_BUILT
#define LT_SCRIPT_BUILT                                                        \
  MB_LIBTORCH_CPU_FILE, MB_LIBTORCH_VERSION, MB_LIBTORCH_BUILD_DIR,            \
      MB_LIBTORCH_INSTALL_DIR
#else
#define LT_SCRIPT_BUILT NULL, NULL, NULL, NULL
#endif
#ifdef MB_AOTI_MODULE_BUILT
#define LT_AOTI_BUILT                                                          \
  MB_AOTI_CPU_FILE, MB_AOTI_VERSION, MB_AOTI_BUILD_DIR, MB_AOTI_INSTALL_DIR
#else
#define LT_AOTI_BUILT NULL, NULL, NULL, NULL
#endif

static lt_flavor lt_script = {
    "libtorch",
    MB_LIBTORCH_MODULE_FILE,
    "MODELBENCH_LIBTORCH_MODULE",
    "MODELBENCH_LIBTORCH_TORCH_LIB",
    "TORCHSCRIPT",
    LT_SCRIPT_BUILT,
    "built without libtorch (apt install libtorch-dev, or "
    "MB_WITH_TORCH=1 scripts/install-deps.sh, then reconfigure)",
    0,
    PTHREAD_ONCE_INIT,
    NULL,
    "",
};
static lt_flavor lt_aoti = {
    "aoti",
    MB_AOTI_MODULE_FILE,
    "MODELBENCH_AOTI_MODULE",
    "MODELBENCH_AOTI_TORCH_LIB",
    "EXPORT+AOT_INDUCTOR",
    LT_AOTI_BUILT,
    "built without a PyTorch >= 2.6 wheel (MB_WITH_TORCH2=1 "
    "scripts/install-deps.sh makes the project's, or -DMB_TORCH2_DIR=its "
    "torch/ folder; then reconfigure)",
    1,
    PTHREAD_ONCE_INIT,
    NULL,
    "",
};

/* Writes a reason, cut to fit. */
static void say(char *reason, const char *fmt, ...) MB_PRINTF(2, 3);
static void say(char *reason, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, LT_REASON_SIZE, fmt, ap);
  va_end(ap);
}

/* ---- another libtorch in this process tree ----
 * Two libtorch builds cannot share a process: the second gets the first's
 * symbols where their names meet, and both register the same operators.
 * The Python front is that case when its PyTorch is not the one a module
 * was built with (torch 2.x from PyPI beside Debian's libtorch 1.13, or
 * the other way round): its user's process has already loaded torch, and
 * the workers the engine forks inherit it. */

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

/* The libtorch_cpu the flavor's module links: $<torch_env> for a module
 * built elsewhere (with $<env>), else the one it was built with. */
static const char *cpu_file(const lt_flavor *f) {
  const char *env = getenv(f->torch_env);
  return env && *env ? env : f->cpu_file;
}

/* The flavor's libtorch version: the one it was built with, or for a
 * module built elsewhere ($<torch_env>) its wheel's torch/version.py
 * ("__version__ = '2.11.0+cu130'" -> "2.11.0"), read each time. */
static const char *torch_version(const lt_flavor *f) {
  static __thread char found[32];
  const char *cpu = getenv(f->torch_env);
  if (!cpu || !*cpu)
    return f->version;
  char path[PATH_MAX], line[256];
  const char *slash = strrchr(cpu, '/');
  snprintf(path, sizeof path, "%.*s/../version.py",
           slash ? (int)(slash - cpu) : 1, slash ? cpu : ".");
  FILE *file = fopen(path, "r");
  found[0] = '\0';
  while (file && fgets(line, sizeof line, file))
    if (sscanf(line, "__version__ = '%31[^'+]", found) == 1)
      break;
  if (file)
    fclose(file);
  return found[0] ? found : f->version;
}

/* Whether `path` is the libtorch_cpu the flavor's module links (by real
 * path). */
static int is_ours(const lt_flavor *f, const char *path) {
  char mine[PATH_MAX], theirs[PATH_MAX];
  if (!realpath(cpu_file(f), mine) || !realpath(path, theirs))
    return 0;
  return strcmp(mine, theirs) == 0;
}

/* 1 (with the reason said) when a libtorch other than the flavor's is
 * loaded here or is the Python front's (MODELBENCH_HOST_TORCH_LIB, which
 * the front sets to its torch's libtorch_cpu without importing torch). */
static int other_libtorch(const lt_flavor *f, char *reason) {
  char loaded[PATH_MAX] = "";
  dl_iterate_phdr(find_loaded_torch, loaded);
  const char *host = getenv("MODELBENCH_HOST_TORCH_LIB");
  const char *other = loaded[0] && !is_ours(f, loaded)     ? loaded
                      : host && *host && !is_ours(f, host) ? host
                                                           : NULL;
  if (!other)
    return 0;
  say(reason,
      "another PyTorch is in this process (%s); %s runs on libtorch %s and "
      "two cannot share one: use the modelbench CLI or that PyTorch's Python",
      other, f->what, torch_version(f));
  return 1;
}

/* The module's path: $<env> (a full path), beside the code of this adapter
 * (libmodelbench.so's folder, or ../lib of a program linking the static
 * library), the build tree, the install folder; the first that exists.
 * 0 with the reason said when none does, or $<env> names no file. */
static int find_module(const lt_flavor *f, char *path, size_t size,
                       char *reason) {
  char candidates[5][PATH_MAX];
  int n = 0;
  const char *env = getenv(f->env);
  if (env && *env) {
    if (access(env, F_OK) != 0) {
      say(reason, "%s=%s: no such file", f->env, env);
      return 0;
    }
    snprintf(path, size, "%s", env);
    return 1;
  }
  Dl_info self;
  if (dladdr((void *)(uintptr_t)find_module, &self) && self.dli_fname) {
    const char *slash = strrchr(self.dli_fname, '/');
    int dir_len = slash ? (int)(slash - self.dli_fname) : 1;
    const char *dir = slash ? self.dli_fname : ".";
    snprintf(candidates[n++], PATH_MAX, "%.*s/%s", dir_len, dir, f->file);
    snprintf(candidates[n++], PATH_MAX, "%.*s/../lib/%s", dir_len, dir,
             f->file);
  }
  snprintf(candidates[n++], PATH_MAX, "%s/%s", f->build_dir, f->file);
  snprintf(candidates[n++], PATH_MAX, "%s/%s", f->install_dir, f->file);
  for (int i = 0; i < n; i++)
    if (access(candidates[i], F_OK) == 0) {
      snprintf(path, size, "%s", candidates[i]);
      return 1;
    }
  say(reason,
      "%s not found beside libmodelbench, in the build tree or the "
      "install folder (set %s to its path)",
      f->file, f->env);
  return 0;
}

/* Whether the flavor can be used here, without loading it; the reason
 * when not. */
static int usable(const lt_flavor *f, char *reason) {
  char path[PATH_MAX];
  if (!f->cpu_file) {
    say(reason, "%s", f->not_built);
    return 0;
  }
  if (access(cpu_file(f), F_OK) != 0) {
    say(reason,
        "%s: no such file (the libtorch its module links; set %s to it "
        "where that libtorch is elsewhere)",
        cpu_file(f), f->torch_env);
    return 0;
  }
  return !other_libtorch(f, reason) &&
         find_module(f, path, sizeof path, reason);
}

static void load(lt_flavor *f) {
  char path[PATH_MAX];
  if (!usable(f, f->reason) || !find_module(f, path, sizeof path, f->reason))
    return;
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    say(f->reason, "cannot load %s: %s", path, why ? why : "?");
    return;
  }
  mb_libtorch_module_get_fn get = (mb_libtorch_module_get_fn)(uintptr_t)dlsym(
      handle, MB_LIBTORCH_MODULE_ENTRY);
  const mb_libtorch_module *module = get ? get() : NULL;
  if (!module) {
    say(f->reason, "%s has no " MB_LIBTORCH_MODULE_ENTRY, path);
    return;
  }
  if (module->abi_version != MB_LIBTORCH_ABI_VERSION) {
    say(f->reason,
        "%s has ABI %d but this modelbench needs %d: rebuild both "
        "together",
        path, module->abi_version, MB_LIBTORCH_ABI_VERSION);
    return;
  }
  if (f->package && !module->load_package) {
    say(f->reason, "%s (libtorch %s) cannot load AOTInductor packages", path,
        module->version);
    return;
  }
  /* Never dlclose'd: libtorch does not support being unloaded. */
  f->module = module;
}

static void load_script(void) {
  load(&lt_script);
}
static void load_aoti(void) {
  load(&lt_aoti);
}

/* The flavor's module, loaded on first use, or NULL with err set to why
 * it is unavailable. */
static const mb_libtorch_module *lt_get(lt_flavor *f, mb_error *err) {
  pthread_once(&f->once, f->package ? load_aoti : load_script);
  if (!f->module)
    mb__error(err, MB_STATUS_UNAVAILABLE, "%s: %s", f->runtime, f->reason);
  return f->module;
}

static void probe(const lt_flavor *f, mb_runtime_info *info) {
  char reason[LT_REASON_SIZE] = "";
  info->available = usable(f, reason);
  snprintf(info->version, sizeof info->version, "%s",
           info->available ? torch_version(f) : "");
  snprintf(info->reason, sizeof info->reason, "%s", reason);
}

/* TORCHSCRIPT on the CPU: Debian's libtorch, or the wheel's where
 * Debian's module was not built or is not found (a bundle made for a
 * machine with only the wheel's) and $MODELBENCH_LIBTORCH_MODULE does not
 * name it. */
static lt_flavor *script_flavor(void) {
  char path[PATH_MAX], reason[LT_REASON_SIZE];
  const char *env = getenv(lt_script.env);
  int there =
      (env && *env) || (lt_script.cpu_file &&
                        find_module(&lt_script, path, sizeof path, reason));
  return !there && usable(&lt_aoti, reason) ? &lt_aoti : &lt_script;
}

static void script_probe(mb_runtime_info *info) {
  probe(script_flavor(), info);
}
static void aoti_probe(mb_runtime_info *info) {
  probe(&lt_aoti, info);
}

/* ---- devices ---- */

/* Whether the flavor's module can run on CUDA, by its files alone (no
 * module loaded, no CUDA initialised): it is there and its libtorch has
 * CUDA (libtorch_cuda.so beside libtorch_cpu.so). 0 with why when not. */
static int has_cuda(const lt_flavor *f, char *reason) {
  char path[PATH_MAX];
  if (!f->cpu_file) {
    say(reason, "%s", f->not_built);
    return 0;
  }
  if (!find_module(f, path, sizeof path, reason))
    return 0;
  const char *cpu = cpu_file(f);
  if (access(cpu, F_OK) != 0) {
    say(reason, "%s: no such file (set %s to the libtorch its module links)",
        cpu, f->torch_env);
    return 0;
  }
  const char *slash = strrchr(cpu, '/');
  snprintf(path, sizeof path, "%.*s/libtorch_cuda.so",
           slash ? (int)(slash - cpu) : 1, slash ? cpu : ".");
  if (access(path, F_OK) != 0) {
    say(reason, "this libtorch (%s) is built without CUDA: no %s", cpu, path);
    return 0;
  }
  return 1;
}

static unsigned aoti_devices(char *reason, size_t size) {
  char why[LT_REASON_SIZE] = "";
  unsigned cpu = 1u << MB_DEVICE_CPU;
  if (has_cuda(&lt_aoti, why))
    return cpu | 1u << MB_DEVICE_CUDA;
  snprintf(reason, size, "%s", why);
  return cpu;
}

/* TORCHSCRIPT on CUDA runs on the wheel's libtorch (Debian's has none). */
static unsigned script_devices(char *reason, size_t size) {
  char why[LT_REASON_SIZE] = "";
  unsigned cpu = 1u << MB_DEVICE_CPU;
  if (has_cuda(&lt_aoti, why))
    return cpu | 1u << MB_DEVICE_CUDA;
  snprintf(reason, size,
           "TORCHSCRIPT runs on CUDA on the PyTorch 2.x wheel's libtorch "
           "(" MB_AOTI_MODULE_FILE "): %s",
           why);
  return cpu;
}

/* ---- sessions ---- */

typedef struct lt_session {
  const mb_libtorch_module *module;
  void *module_session;
  int cuda; /* the CUDA device it runs on; -1: the CPU */
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
    s->module->release(s->module_session);
  free(s->inputs);
  free(s->path);
  free(s);
}

/* package: an AOTInductor package (else a TorchScript file), on `f`'s
 * module. */
static mb_status prepare(lt_flavor *f, int package, const mb_model *model,
                         const mb_runtime_options *options, void **session_out,
                         mb_error *err) {
  int cuda = options->device == MB_DEVICE_CUDA ? 0 : -1;
  char why[LT_REASON_SIZE] = "";
  if (cuda >= 0 && !has_cuda(f, why))
    return mb__error(
        err, MB_STATUS_UNAVAILABLE, "%s on %s runs on %s (libtorch %s): %s",
        package ? lt_aoti.what : lt_script.what, mb_device_name(MB_DEVICE_CUDA),
        f->file, f->version ? torch_version(f) : "none", why);
  const mb_libtorch_module *module = lt_get(f, err);
  mb_status status;
  if (!module)
    return MB_STATUS_UNAVAILABLE;
  if (!options->model_path)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "%s runs %s and this model has none", f->runtime,
                     package ? "AOTInductor packages" : "TorchScript files");
  lt_session *s = calloc(1, sizeof *s);
  if (!s)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  s->module = module;
  s->cuda = cuda;
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
  status = package
               ? module->load_package(s->path, options->threads, s->n_inputs,
                                      cuda, &s->module_session, err)
               : module->load(s->path, options->threads, s->n_inputs, cuda,
                              &s->module_session, err);
  if (status)
    goto fail;
  *session_out = s;
  return MB_STATUS_OK;

fail:
  lt_release(s);
  return status;
}

/* s->inputs: views of the caller's tensors. */
static void view_inputs(lt_session *s, const mb_tensor *const *inputs) {
  for (int i = 0; i < s->n_inputs; i++) {
    mb_libtorch_tensor *v = &s->inputs[i];
    v->dtype = inputs[i]->dtype;
    v->rank = inputs[i]->rank;
    memcpy(v->dims, inputs[i]->dims, sizeof v->dims);
    v->data = inputs[i]->data;
    v->nbytes = inputs[i]->nbytes;
  }
}

static mb_status lt_run(void *session, const mb_tensor *const *inputs,
                        mb_error *err) {
  lt_session *s = session;
  view_inputs(s, inputs);
  return s->module->run(s->module_session, s->inputs, err);
}

static int lt_gpu_describe(void *session, mb_gpu_result *gpu) {
  lt_session *s = session;
  mb_host_gpu g = {.index = -1, .memory_peak_mb = -1};
  if (!s || s->cuda < 0 || !s->module->gpu_describe(s->module_session, &g))
    return 0;
  mb__gpu_from_host(&g, gpu);
  return 1;
}

static double lt_gpu_compute_ms(void *session) {
  lt_session *s = session;
  return s && s->cuda >= 0 ? s->module->gpu_compute_ms(s->module_session) : -1;
}

static mb_status lt_gpu_copies(void *session, const mb_tensor *const *inputs,
                               int n, double *h2d_ms, double *d2h_ms,
                               double *mb, mb_error *err) {
  lt_session *s = session;
  if (s->cuda < 0)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "%s: timed copies of a session on the CPU", s->path);
  view_inputs(s, inputs);
  return s->module->gpu_copies(s->module_session, s->inputs, n, h2d_ms, d2h_ms,
                               mb, err);
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
  if ((status = s->module->outputs(s->module_session, &views, &count, err)))
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

static mb_status script_prepare(const mb_model *model, const void *model_bytes,
                                size_t model_size,
                                const mb_runtime_options *options,
                                void **session_out, mb_error *err) {
  (void)model_bytes;
  (void)model_size;
  lt_flavor *f = options->device == MB_DEVICE_CUDA ? &lt_aoti : script_flavor();
  return prepare(f, 0, model, options, session_out, err);
}

static mb_status aoti_prepare(const mb_model *model, const void *model_bytes,
                              size_t model_size,
                              const mb_runtime_options *options,
                              void **session_out, mb_error *err) {
  (void)model_bytes;
  (void)model_size;
  return prepare(&lt_aoti, 1, model, options, session_out, err);
}

static char *script_take_error_detail(void) {
  const mb_libtorch_module *module =
      lt_script.module ? lt_script.module : lt_aoti.module;
  return module ? module->take_error_detail() : NULL;
}

static char *aoti_take_error_detail(void) {
  return lt_aoti.module ? lt_aoti.module->take_error_detail() : NULL;
}

const mb_runtime mb__runtime_libtorch = {
    .name = "libtorch",
    .probe = script_probe,
    .prepare = script_prepare,
    .run = lt_run,
    .fetch_outputs = lt_fetch_outputs,
    .release = lt_release,
    .take_error_detail = script_take_error_detail,
    .devices = script_devices,
    .gpu_describe = lt_gpu_describe,
    .gpu_compute_ms = lt_gpu_compute_ms,
    .gpu_copies = lt_gpu_copies,
};

const mb_runtime mb__runtime_aoti = {
    .name = "aoti",
    .probe = aoti_probe,
    .prepare = aoti_prepare,
    .run = lt_run,
    .fetch_outputs = lt_fetch_outputs,
    .release = lt_release,
    .take_error_detail = aoti_take_error_detail,
    .devices = aoti_devices,
    .gpu_describe = lt_gpu_describe,
    .gpu_compute_ms = lt_gpu_compute_ms,
    .gpu_copies = lt_gpu_copies,
};
