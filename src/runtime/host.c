/* Host runtimes: runtime adapters whose code lives in the program that
 * embeds the library. The Python front installs the "pytorch" runtime
 * (EAGER, JIT_TRACE, ... run the nn.Module itself) with
 * mb_host_runtime_set; without a host, its conversions are unavailable and
 * say what they need.
 *
 * Each host runtime is one row of MB_HOST_RUNTIME_LIST (runtime.h), which
 * gives an mb_runtime forwarding to the host's callbacks, plus its line in
 * `providers` below. A worker prepares, runs and releases it like any other
 * runtime; the timed loop calls run() directly. */
#include "runtime/runtime.h"

#include <stdlib.h>

typedef struct host_slot {
  const char *name;
  int installed;
  mb_host_runtime callbacks;
} host_slot;

enum {
#define MB_X(name) HOST_##name,
  MB_HOST_RUNTIME_LIST(MB_X)
#undef MB_X
      HOST_COUNT
};

static host_slot slots[HOST_COUNT] = {
#define MB_X(name) [HOST_##name] = {#name, 0, {0}},
    MB_HOST_RUNTIME_LIST(MB_X)
#undef MB_X
};

/* What provides each host runtime, for "unavailable" reasons. */
static const char *const providers[HOST_COUNT] = {
    [HOST_pytorch] = "the Python front (python3 -m modelbench, or "
                     "modelbench.benchmark_model)",
};

/* The detail (traceback) of the host's last failure in this process. */
#define MB_HOST_DETAIL_MAX (64 * 1024)
static char *error_detail;

void mb_host_set_error_detail(const char *detail) {
  free(error_detail);
  error_detail = NULL;
  if (!detail)
    return;
  size_t n = strnlen(detail, MB_HOST_DETAIL_MAX);
  if ((error_detail = malloc(n + 1))) {
    memcpy(error_detail, detail, n);
    error_detail[n] = '\0';
  }
}

static char *take_error_detail(void) {
  char *detail = error_detail;
  error_detail = NULL;
  return detail;
}

mb_status mb_host_runtime_set(const char *name, const mb_host_runtime *runtime,
                              mb_error *err) {
  for (int i = 0; name && i < HOST_COUNT; i++) {
    if (strcmp(slots[i].name, name) != 0)
      continue;
    if (runtime && (!runtime->probe || !runtime->prepare || !runtime->run ||
                    !runtime->fetch_outputs || !runtime->release))
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "host runtime '%s': probe, prepare, run, "
                       "fetch_outputs and release are all required",
                       name);
    slots[i].installed = runtime != NULL;
    memset(&slots[i].callbacks, 0, sizeof slots[i].callbacks);
    if (runtime)
      slots[i].callbacks = *runtime;
    return MB_STATUS_OK;
  }
  char names[256] = "";
  size_t used = 0;
  for (int i = 0; i < HOST_COUNT && used < sizeof names; i++)
    used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                             i ? ", " : "", slots[i].name);
  return mb__error(err, MB_STATUS_NOT_FOUND,
                   "'%s' is not a host runtime (host runtimes: %s)",
                   name ? name : "(null)", names);
}

typedef struct host_session {
  host_slot *slot;
  void *session;
  int n_outputs;
} host_session;

static void host_probe(host_slot *slot, mb_runtime_info *info) {
  if (!slot->installed) {
    info->available = 0;
    snprintf(info->reason, sizeof info->reason, "needs %s",
             providers[slot - slots]);
    return;
  }
  char version[256] = "", reason[256] = "";
  info->available =
      slot->callbacks.probe(slot->callbacks.user, version, reason) != 0;
  version[sizeof version - 1] = reason[sizeof reason - 1] = '\0';
  snprintf(info->version, sizeof info->version, "%s", version);
  snprintf(info->reason, sizeof info->reason, "%s",
           info->available ? ""
           : reason[0]     ? reason
                           : "unavailable");
}

static int host_supports(host_slot *slot, const char *conversion, char *reason,
                         size_t size) {
  if (!slot->installed || !slot->callbacks.supports)
    return 1;
  char why[256] = "";
  int ok = slot->callbacks.supports(slot->callbacks.user, conversion, why);
  why[sizeof why - 1] = '\0';
  if (!ok)
    snprintf(reason, size, "%s", why[0] ? why : "not supported here");
  return ok != 0;
}

/* A host's error message is one line: a multi-line one keeps its first
 * line and the rest becomes the detail. */
static mb_status host_failed(mb_status status, const char *what,
                             mb_error *err) {
  if (!status)
    status = MB_STATUS_INTERNAL; /* a failure must not read as success */
  if (err) {
    err->status = status;
    err->message[sizeof err->message - 1] = '\0';
    err->message[strcspn(err->message, "\r\n")] = '\0';
    if (!err->message[0])
      snprintf(err->message, sizeof err->message, "%s failed", what);
  }
  return status;
}

static mb_status host_prepare(host_slot *slot, const mb_model *model,
                              const mb_runtime_options *options,
                              void **session_out, mb_error *err) {
  if (!slot->installed)
    return mb__error(err, MB_STATUS_UNAVAILABLE, "runtime '%s' needs %s",
                     slot->name, providers[slot - slots]);
  host_session *s = calloc(1, sizeof *s);
  if (!s)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  s->slot = slot;
  s->n_outputs = mb_model_output_count(model);
  mb_host_prepare_args args = {
      .conversion = options->conversion ? options->conversion : "",
      .model_path = options->model_path ? options->model_path : "",
      .threads = options->threads,
      .precision = options->precision,
      .device = options->device,
      .verbose = options->verbose,
      .seed = options->seed,
      .n_inputs = mb_model_input_count(model),
      .n_outputs = s->n_outputs,
      .example_inputs = options->example_inputs,
      .n_calibration = options->n_calibration,
      .calibration = options->calibration,
      .build_dir = options->build_dir ? options->build_dir : "",
      .build_hit = options->build_hit,
      .trust_code = options->trust_code,
  };
  if (err) {
    err->status = MB_STATUS_OK;
    err->message[0] = '\0';
  }
  mb_status status =
      slot->callbacks.prepare(slot->callbacks.user, &args, &s->session, err);
  if (status) {
    free(s);
    return host_failed(status, "prepare", err);
  }
  *session_out = s;
  return MB_STATUS_OK;
}

static mb_status host_run(void *session, const mb_tensor *const *inputs,
                          mb_error *err) {
  host_session *s = session;
  mb_status status =
      s->slot->callbacks.run(s->slot->callbacks.user, s->session, inputs, err);
  return status ? host_failed(status, "run", err) : MB_STATUS_OK;
}

static mb_status host_fetch_outputs(void *session, mb_tensor **outputs_out,
                                    mb_error *err) {
  host_session *s = session;
  for (int i = 0; i < s->n_outputs; i++)
    outputs_out[i] = NULL;
  mb_status status = s->slot->callbacks.fetch_outputs(
      s->slot->callbacks.user, s->session, s->n_outputs, outputs_out, err);
  for (int i = 0; !status && i < s->n_outputs; i++)
    if (!outputs_out[i])
      status = mb__error(err, MB_STATUS_INTERNAL,
                         "runtime '%s' returned no tensor for output %d",
                         s->slot->name, i);
  if (status) {
    for (int i = 0; i < s->n_outputs; i++) {
      mb_tensor_free(outputs_out[i]);
      outputs_out[i] = NULL;
    }
    return host_failed(status, "fetch_outputs", err);
  }
  return MB_STATUS_OK;
}

static int host_recompiles(void *session) {
  host_session *s = session;
  if (!s || !s->slot->callbacks.recompiles)
    return -1;
  return s->slot->callbacks.recompiles(s->slot->callbacks.user, s->session);
}

static unsigned host_devices(host_slot *slot, char *reason, size_t size) {
  unsigned cpu = 1u << MB_DEVICE_CPU;
  if (!slot->installed || !slot->callbacks.devices) {
    snprintf(reason, size, "runtime '%s' runs on the CPU only", slot->name);
    return cpu;
  }
  char why[256] = "";
  unsigned devices = slot->callbacks.devices(slot->callbacks.user, why) | cpu;
  why[sizeof why - 1] = '\0';
  snprintf(reason, size, "%s", why);
  return devices;
}

static int host_gpu_describe(void *session, mb_gpu_result *gpu) {
  host_session *s = session;
  if (!s || !s->slot->callbacks.gpu_describe)
    return 0;
  mb_host_gpu g = {.index = -1, .memory_peak_mb = -1};
  if (!s->slot->callbacks.gpu_describe(s->slot->callbacks.user, s->session, &g))
    return 0;
  mb__gpu_from_host(&g, gpu);
  return 1;
}

void mb__gpu_from_host(const mb_host_gpu *g, mb_gpu_result *gpu) {
  gpu->info.index = g->index;
  snprintf(gpu->info.name, sizeof gpu->info.name, "%.*s",
           (int)sizeof g->name - 1, g->name);
  snprintf(gpu->info.cuda_runtime, sizeof gpu->info.cuda_runtime, "%.*s",
           (int)sizeof g->cuda_runtime - 1, g->cuda_runtime);
  snprintf(gpu->info.compute_capability, sizeof gpu->info.compute_capability,
           "%.*s", (int)sizeof g->compute_capability - 1,
           g->compute_capability);
  gpu->memory_peak_mb = g->memory_peak_mb;
}

static double host_gpu_compute_ms(void *session) {
  host_session *s = session;
  if (!s || !s->slot->callbacks.gpu_compute_ms)
    return -1;
  return s->slot->callbacks.gpu_compute_ms(s->slot->callbacks.user, s->session);
}

static mb_status host_gpu_copies(void *session, const mb_tensor *const *inputs,
                                 int n, double *h2d_ms, double *d2h_ms,
                                 double *mb, mb_error *err) {
  host_session *s = session;
  if (!s || !s->slot->callbacks.gpu_copies)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "runtime '%s' does not time its copies",
                     s ? s->slot->name : "?");
  mb_status status = s->slot->callbacks.gpu_copies(
      s->slot->callbacks.user, s->session, inputs, n, h2d_ms, d2h_ms, mb, err);
  return status ? host_failed(status, "gpu_copies", err) : MB_STATUS_OK;
}

static void host_release(void *session) {
  host_session *s = session;
  if (!s)
    return;
  s->slot->callbacks.release(s->slot->callbacks.user, s->session);
  free(s);
}

/* One mb_runtime per row, forwarding to its slot. */
#define MB_X(rt)                                                               \
  static void probe_##rt(mb_runtime_info *info) {                              \
    host_probe(&slots[HOST_##rt], info);                                       \
  }                                                                            \
  static mb_status prepare_##rt(                                               \
      const mb_model *model, const void *bytes, size_t size,                   \
      const mb_runtime_options *options, void **session_out, mb_error *err) {  \
    (void)bytes;                                                               \
    (void)size;                                                                \
    return host_prepare(&slots[HOST_##rt], model, options, session_out, err);  \
  }                                                                            \
  static int supports_##rt(const char *name, char *reason, size_t size) {      \
    return host_supports(&slots[HOST_##rt], name, reason, size);               \
  }                                                                            \
  static unsigned devices_##rt(char *reason, size_t size) {                    \
    return host_devices(&slots[HOST_##rt], reason, size);                      \
  }                                                                            \
  const mb_runtime mb__runtime_##rt = {                                        \
      .name = #rt,                                                             \
      .host = 1,                                                               \
      .probe = probe_##rt,                                                     \
      .prepare = prepare_##rt,                                                 \
      .run = host_run,                                                         \
      .fetch_outputs = host_fetch_outputs,                                     \
      .release = host_release,                                                 \
      .take_error_detail = take_error_detail,                                  \
      .supports_conversion = supports_##rt,                                    \
      .recompiles = host_recompiles,                                           \
      .devices = devices_##rt,                                                 \
      .gpu_describe = host_gpu_describe,                                       \
      .gpu_compute_ms = host_gpu_compute_ms,                                   \
      .gpu_copies = host_gpu_copies,                                           \
  };
MB_HOST_RUNTIME_LIST(MB_X)
#undef MB_X

size_t mb_struct_size(const char *name) {
  static const struct {
    const char *name;
    size_t size;
  } sizes[] = {
      {"mb_tensor", sizeof(mb_tensor)},
      {"mb_error", sizeof(mb_error)},
      {"mb_host_prepare_args", sizeof(mb_host_prepare_args)},
      {"mb_host_runtime", sizeof(mb_host_runtime)},
      {"mb_host_build_key", sizeof(mb_host_build_key)},
      {"mb_conversion_info", sizeof(mb_conversion_info)},
      {"mb_host_gpu", sizeof(mb_host_gpu)},
  };
  for (size_t i = 0; name && i < MB_ARRAY_COUNT(sizes); i++)
    if (strcmp(sizes[i].name, name) == 0)
      return sizes[i].size;
  return 0;
}
