/* NVIDIA GPUs through NVML, loaded at run time (nvml.h).
 *
 * The library is opened and its symbols resolved once per process
 * (pthread_once); NVML itself is started (nvmlInit) and stopped
 * (nvmlShutdown, which NVML reference-counts) around each use, and a
 * sampler holds it for its lifetime. So a parent that asked how many GPUs
 * there are holds no NVML state when it forks a worker: the worker starts
 * its own.
 *
 * The few NVML types and constants used here are declared from NVML's
 * public documentation (the driver ships the library, not the header). */
#include "runtime/nvml.h"

#include "core/internal.h"
#include "core/stats.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

/* ---- NVML's declarations ---- */

typedef int nvmlReturn_t; /* NVML_SUCCESS 0, errors > 0 */
#define NVML_SUCCESS 0
typedef struct nvml_device_opaque *nvmlDevice_t;
typedef struct nvmlMemory_t {
  unsigned long long total, free, used; /* bytes */
} nvmlMemory_t;
typedef struct nvmlUtilization_t {
  unsigned int gpu, memory; /* percent */
} nvmlUtilization_t;
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
enum { NVML_TEMPERATURE_GPU = 0 };

/* The bits of nvmlClocksEventReason* (formerly nvmlClocksThrottleReason*). */
#define MB_NVML_GPU_IDLE 0x1ULL
#define MB_NVML_APPLICATIONS_CLOCKS_SETTING 0x2ULL
#define MB_NVML_DISPLAY_CLOCK_SETTING 0x100ULL
/* Reasons that say nothing about the device being slowed against its will:
 * idle, clocks an administrator set, the display's clock. */
#define MB_NVML_NOT_THROTTLE                                                   \
  (MB_NVML_GPU_IDLE | MB_NVML_APPLICATIONS_CLOCKS_SETTING |                    \
   MB_NVML_DISPLAY_CLOCK_SETTING)

#define MB_NVML_DEFAULT_LIB "libnvidia-ml.so.1"
#define MB_NVML_LIB_ENV "MODELBENCH_NVML_LIB"

/* The functions used, resolved once; a NULL optional one leaves its
 * figure out. */
static struct nvml_api {
  nvmlReturn_t (*init)(void);
  nvmlReturn_t (*shutdown)(void);
  const char *(*error_string)(nvmlReturn_t);
  nvmlReturn_t (*device_count)(unsigned int *);
  nvmlReturn_t (*device_handle)(unsigned int, nvmlDevice_t *);
  nvmlReturn_t (*device_name)(nvmlDevice_t, char *, unsigned int);
  nvmlReturn_t (*device_uuid)(nvmlDevice_t, char *, unsigned int);
  nvmlReturn_t (*driver_version)(char *, unsigned int);
  nvmlReturn_t (*cuda_driver_version)(int *);
  nvmlReturn_t (*compute_capability)(nvmlDevice_t, int *, int *);
  nvmlReturn_t (*memory_info)(nvmlDevice_t, nvmlMemory_t *);
  nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned int *);
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int *);
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int *);
  nvmlReturn_t (*power_usage)(nvmlDevice_t, unsigned int *);
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned int *);
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t *);
  nvmlReturn_t (*clock_reasons)(nvmlDevice_t, unsigned long long *);
} nvml;

/* One row per function: its exported name, an older name to fall back on
 * (NULL: none), where it goes, whether NVML is unusable without it. */
typedef struct nvml_symbol {
  const char *name, *older_name;
  void **slot;
  int required;
} nvml_symbol;

static const nvml_symbol nvml_symbols[] = {
    {"nvmlInit_v2", NULL, (void **)&nvml.init, 1},
    {"nvmlShutdown", NULL, (void **)&nvml.shutdown, 1},
    {"nvmlErrorString", NULL, (void **)&nvml.error_string, 0},
    {"nvmlDeviceGetCount_v2", NULL, (void **)&nvml.device_count, 1},
    {"nvmlDeviceGetHandleByIndex_v2", NULL, (void **)&nvml.device_handle, 1},
    {"nvmlDeviceGetName", NULL, (void **)&nvml.device_name, 0},
    {"nvmlDeviceGetUUID", NULL, (void **)&nvml.device_uuid, 0},
    {"nvmlSystemGetDriverVersion", NULL, (void **)&nvml.driver_version, 0},
    {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion",
     (void **)&nvml.cuda_driver_version, 0},
    {"nvmlDeviceGetCudaComputeCapability", NULL,
     (void **)&nvml.compute_capability, 0},
    {"nvmlDeviceGetMemoryInfo", NULL, (void **)&nvml.memory_info, 0},
    {"nvmlDeviceGetMaxClockInfo", NULL, (void **)&nvml.max_clock, 0},
    {"nvmlDeviceGetClockInfo", NULL, (void **)&nvml.clock, 0},
    {"nvmlDeviceGetTemperature", NULL, (void **)&nvml.temperature, 0},
    {"nvmlDeviceGetPowerUsage", NULL, (void **)&nvml.power_usage, 0},
    {"nvmlDeviceGetEnforcedPowerLimit", NULL, (void **)&nvml.power_limit, 0},
    {"nvmlDeviceGetUtilizationRates", NULL, (void **)&nvml.utilization, 0},
    {"nvmlDeviceGetCurrentClocksEventReasons",
     "nvmlDeviceGetCurrentClocksThrottleReasons", (void **)&nvml.clock_reasons,
     0},
};

static pthread_once_t nvml_once = PTHREAD_ONCE_INIT;
static int nvml_loaded;            /* every required symbol resolved */
static char nvml_load_reason[256]; /* why not, when not */

static void nvml_load(void) {
  const char *env = getenv(MB_NVML_LIB_ENV);
  const char *path = env && env[0] ? env : MB_NVML_DEFAULT_LIB;
  /* The driver's library stays open for the process's life: NVML may
   * keep threads and handlers of its own. */
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    if (env && env[0])
      snprintf(nvml_load_reason, sizeof nvml_load_reason,
               "cannot load NVML from %s=%s: %s", MB_NVML_LIB_ENV, env,
               why ? why : "dlopen failed");
    else
      snprintf(nvml_load_reason, sizeof nvml_load_reason,
               "no NVIDIA driver: %s", why ? why : path);
    return;
  }
  for (size_t i = 0; i < MB_ARRAY_COUNT(nvml_symbols); i++) {
    const nvml_symbol *s = &nvml_symbols[i];
    void *f = dlsym(lib, s->name);
    if (!f && s->older_name)
      f = dlsym(lib, s->older_name);
    *s->slot = f;
    if (!f && s->required) {
      snprintf(nvml_load_reason, sizeof nvml_load_reason,
               "%s lacks %s (an NVIDIA driver too old for modelbench?)", path,
               s->name);
      dlclose(lib);
      memset(&nvml, 0, sizeof nvml);
      return;
    }
  }
  nvml_loaded = 1;
}

static const char *nvml_error(nvmlReturn_t rc, char *buf, size_t size) {
  const char *s = nvml.error_string ? nvml.error_string(rc) : NULL;
  snprintf(buf, size, "%s (NVML error %d)", s ? s : "unknown error", rc);
  return buf;
}

/* Loads the library (once) and starts NVML; each success is paired with
 * nvml_end. 0 with the reason when NVML cannot be used. */
static int nvml_begin(char *reason, size_t size) {
  pthread_once(&nvml_once, nvml_load);
  if (!nvml_loaded) {
    snprintf(reason, size, "%s", nvml_load_reason);
    return 0;
  }
  nvmlReturn_t rc = nvml.init();
  if (rc != NVML_SUCCESS) {
    char buf[160];
    snprintf(reason, size, "NVML did not start: nvmlInit_v2: %s",
             nvml_error(rc, buf, sizeof buf));
    return 0;
  }
  return 1;
}

static void nvml_end(void) {
  nvml.shutdown();
}

/* ---- how many ---- */

/* The devices CUDA_VISIBLE_DEVICES leaves visible when it is set (-1 when
 * not): CUDA reads the list up to its first invalid entry, an index not
 * below `nvml_count` (when known, >= 0) or what is neither an index nor a
 * GPU-/MIG- UUID ("-1" hides every device). */
static int cuda_visible_count(const char *list, int nvml_count) {
  int n = 0;
  const char *p = list;
  while (*p) {
    size_t len = strcspn(p, ",");
    int valid = len > 0;
    if (valid && (strncmp(p, "GPU-", 4) == 0 || strncmp(p, "MIG-", 4) == 0)) {
      /* a UUID */
    } else {
      long index = 0;
      for (size_t i = 0; i < len && valid; i++) {
        if (p[i] < '0' || p[i] > '9')
          valid = 0;
        else if (index < 1000000)
          index = index * 10 + (p[i] - '0');
      }
      if (valid && nvml_count >= 0 && index >= nvml_count)
        valid = 0;
    }
    if (!valid)
      break;
    n++;
    p += len;
    if (*p == ',')
      p++;
  }
  return n;
}

int mb__gpu_count(char *reason, size_t size) {
  const char *visible = getenv("CUDA_VISIBLE_DEVICES");
  if (visible && cuda_visible_count(visible, -1) == 0) {
    snprintf(reason, size, "CUDA_VISIBLE_DEVICES=\"%s\" hides every GPU",
             visible);
    return 0;
  }
  if (!nvml_begin(reason, size))
    return 0;
  unsigned int count = 0;
  nvmlReturn_t rc = nvml.device_count(&count);
  nvml_end();
  if (rc != NVML_SUCCESS) {
    char buf[160];
    snprintf(reason, size, "NVML cannot count the GPUs: %s",
             nvml_error(rc, buf, sizeof buf));
    return 0;
  }
  if (count == 0) {
    snprintf(reason, size, "the NVIDIA driver sees no GPU");
    return 0;
  }
  int n = count > INT32_MAX ? INT32_MAX : (int)count;
  if (visible) {
    n = MB_MIN(cuda_visible_count(visible, n), n);
    if (n == 0) {
      snprintf(reason, size,
               "CUDA_VISIBLE_DEVICES=\"%s\" names none of the %u GPU(s) the "
               "driver sees",
               visible, count);
      return 0;
    }
  }
  if (size)
    reason[0] = '\0';
  return n;
}

/* Entry `i` of CUDA_VISIBLE_DEVICES: its start and length, 0 when there
 * is none. */
static size_t visible_entry(const char *list, int i, const char **entry) {
  const char *p = list;
  for (int k = 0; *p; k++) {
    size_t len = strcspn(p, ",");
    if (k == i) {
      *entry = p;
      return len;
    }
    p += len;
    if (*p == ',')
      p++;
  }
  return 0;
}

int mb__gpu_nvml_index(int cuda_index) {
  const char *visible = getenv("CUDA_VISIBLE_DEVICES"), *entry = NULL;
  size_t len = visible && cuda_index >= 0
                   ? visible_entry(visible, cuda_index, &entry)
                   : 0;
  if (!len)
    return cuda_index;
  if (entry[0] >= '0' && entry[0] <= '9') {
    long index = strtol(entry, NULL, 10);
    return index >= 0 && index <= INT32_MAX ? (int)index : cuda_index;
  }
  /* A UUID, or a unique prefix of one, as CUDA takes them: the device of
   * NVML's whose UUID starts with it. */
  char reason[160];
  unsigned int count = 0;
  int found = cuda_index;
  if (strncmp(entry, "GPU-", 4) != 0 || !nvml_begin(reason, sizeof reason))
    return cuda_index;
  /* (The library's symbols are known once nvml_begin has loaded it.) */
  if (nvml.device_uuid && nvml.device_count(&count) == NVML_SUCCESS)
    for (unsigned int k = 0; k < count && k <= INT32_MAX; k++) {
      nvmlDevice_t device;
      char uuid[96];
      if (nvml.device_handle(k, &device) == NVML_SUCCESS &&
          nvml.device_uuid(device, uuid, sizeof uuid) == NVML_SUCCESS &&
          strncmp(uuid, entry, len) == 0) {
        found = (int)k;
        break;
      }
    }
  nvml_end();
  return found;
}

/* ---- which one ---- */

static mb_status device_handle(int index, nvmlDevice_t *device, mb_error *err) {
  unsigned int count = 0;
  nvmlReturn_t rc = nvml.device_count(&count);
  char buf[160];
  if (rc != NVML_SUCCESS)
    return mb__error(err, MB_STATUS_UNAVAILABLE,
                     "NVML cannot count the GPUs: %s",
                     nvml_error(rc, buf, sizeof buf));
  if (index < 0 || (unsigned)index >= count)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "GPU index %d: the NVIDIA driver sees %u GPU(s)", index,
                     count);
  rc = nvml.device_handle((unsigned)index, device);
  if (rc != NVML_SUCCESS)
    return mb__error(err, MB_STATUS_UNAVAILABLE, "GPU %d: NVML: %s", index,
                     nvml_error(rc, buf, sizeof buf));
  return MB_STATUS_OK;
}

mb_status mb__gpu_describe(int index, mb_gpu_info *info, mb_error *err) {
  char reason[256];
  if (!nvml_begin(reason, sizeof reason))
    return mb__error(err, MB_STATUS_UNAVAILABLE, "GPU %d: %s", index, reason);
  nvmlDevice_t device = NULL;
  mb_status status = device_handle(index, &device, err);
  if (status)
    goto done;
  /* Filled apart, so that info is untouched on failure; a figure NVML
   * cannot give stays empty or 0. */
  mb_gpu_info d = *info;
  d.index = index;
  d.name[0] = d.uuid[0] = d.driver[0] = d.cuda_driver[0] = '\0';
  d.compute_capability[0] = '\0';
  d.memory_total_mb = d.sm_clock_max_mhz = d.mem_clock_max_mhz = 0.0;
  d.power_limit_w = 0.0;
  if (nvml.device_name &&
      nvml.device_name(device, d.name, sizeof d.name) != NVML_SUCCESS)
    d.name[0] = '\0';
  if (nvml.device_uuid &&
      nvml.device_uuid(device, d.uuid, sizeof d.uuid) != NVML_SUCCESS)
    d.uuid[0] = '\0';
  if (nvml.driver_version &&
      nvml.driver_version(d.driver, sizeof d.driver) != NVML_SUCCESS)
    d.driver[0] = '\0';
  int version = 0, major = 0, minor = 0;
  if (nvml.cuda_driver_version &&
      nvml.cuda_driver_version(&version) == NVML_SUCCESS && version > 0)
    snprintf(d.cuda_driver, sizeof d.cuda_driver, "%d.%d", version / 1000,
             version % 1000 / 10);
  if (nvml.compute_capability &&
      nvml.compute_capability(device, &major, &minor) == NVML_SUCCESS)
    snprintf(d.compute_capability, sizeof d.compute_capability, "%d.%d", major,
             minor);
  nvmlMemory_t memory;
  if (nvml.memory_info && nvml.memory_info(device, &memory) == NVML_SUCCESS)
    d.memory_total_mb = (double)memory.total / (1024.0 * 1024.0);
  unsigned int value = 0;
  if (nvml.max_clock &&
      nvml.max_clock(device, NVML_CLOCK_SM, &value) == NVML_SUCCESS)
    d.sm_clock_max_mhz = value;
  if (nvml.max_clock &&
      nvml.max_clock(device, NVML_CLOCK_MEM, &value) == NVML_SUCCESS)
    d.mem_clock_max_mhz = value;
  if (nvml.power_limit && nvml.power_limit(device, &value) == NVML_SUCCESS)
    d.power_limit_w = value / 1000.0;
  *info = d;
done:
  nvml_end();
  return status;
}

/* ---- throttle reasons in words ---- */

typedef struct throttle_reason {
  uint64_t bit;
  const char *word;
  const char *why; /* what slowed the device; NULL: not a slowdown */
} throttle_reason;

static const throttle_reason throttle_reasons[] = {
    {0x1, "gpu_idle", NULL},
    {0x2, "applications_clocks_setting", NULL},
    {0x4, "sw_power_cap",
     "the driver held the clocks down to stay under "
     "the power limit"},
    {0x8, "hw_slowdown",
     "the hardware halved the clocks or more (too hot, "
     "or the power supply asked it to)"},
    {0x10, "sync_boost",
     "the clocks were held to those of the slowest GPU "
     "of its sync-boost group"},
    {0x20, "sw_thermal_slowdown",
     "the driver lowered the clocks because the "
     "GPU or its memory ran hot"},
    {0x40, "hw_thermal_slowdown",
     "the hardware lowered the clocks because "
     "the GPU ran too hot"},
    {0x80, "hw_power_brake_slowdown",
     "an external power brake lowered the "
     "clocks"},
    {0x100, "display_clock_setting", NULL},
};

void mb__gpu_throttle_words(uint64_t reasons, char *out, size_t size) {
  if (!size)
    return;
  out[0] = '\0';
  size_t used = 0;
  uint64_t known = 0;
  for (size_t i = 0; i < MB_ARRAY_COUNT(throttle_reasons); i++) {
    known |= throttle_reasons[i].bit;
    if (!(reasons & throttle_reasons[i].bit))
      continue;
    int n = snprintf(out + used, size - used, "%s%s", used ? "," : "",
                     throttle_reasons[i].word);
    if (n < 0 || (size_t)n >= size - used)
      return; /* truncated */
    used += (size_t)n;
  }
  if (reasons & ~known)
    snprintf(out + used, size - used, "%sunknown_0x%llx", used ? "," : "",
             (unsigned long long)(reasons & ~known));
}

/* ---- the sampler ---- */

/* SM clocks kept for the median; later samples still count in the other
 * figures. */
#define MB_GPU_MAX_SAMPLES 100000

struct mb_gpu_sampler {
  int index;
  double period_ms;
  nvmlDevice_t device;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  int stop;        /* under lock */
  int64_t samples; /* rounds with at least one figure; under lock */
  /* The rest belongs to the thread until it is joined. */
  double *sm;
  int64_t n_sm, n_sm_kept, cap_sm;
  double sm_min, sm_max;
  int64_t n_mem;
  double mem_min, mem_max;
  int64_t n_temperature;
  double temperature_max;
  int64_t n_power;
  double power_sum, power_max;
  int64_t n_utilization;
  double utilization_sum;
  uint64_t reasons;
  nvmlReturn_t first_error; /* of the first failed call, for the reason */
  const char *first_error_call;
};

static void note_failure(mb_gpu_sampler *s, nvmlReturn_t rc, const char *call) {
  if (!s->first_error_call) {
    s->first_error = rc;
    s->first_error_call = call;
  }
}

static void keep_sm_clock(mb_gpu_sampler *s, double mhz) {
  s->sm_min = s->n_sm ? MB_MIN(s->sm_min, mhz) : mhz;
  s->sm_max = s->n_sm ? MB_MAX(s->sm_max, mhz) : mhz;
  s->n_sm++;
  if (s->n_sm_kept >= MB_GPU_MAX_SAMPLES)
    return;
  if (s->n_sm_kept == s->cap_sm) {
    int64_t cap = s->cap_sm ? s->cap_sm * 2 : 256;
    double *grown = realloc(s->sm, sizeof(double) * (size_t)cap);
    if (!grown)
      return; /* the median then comes from those kept so far */
    s->sm = grown;
    s->cap_sm = cap;
  }
  s->sm[s->n_sm_kept++] = mhz;
}

/* One round: every figure NVML gives; one that fails is left out. */
static void sample_once(mb_gpu_sampler *s) {
  unsigned int value = 0;
  int got = 0;
  nvmlReturn_t rc;
  if (nvml.clock) {
    if ((rc = nvml.clock(s->device, NVML_CLOCK_SM, &value)) == NVML_SUCCESS) {
      keep_sm_clock(s, value);
      got = 1;
    } else {
      note_failure(s, rc, "the SM clock");
    }
    if ((rc = nvml.clock(s->device, NVML_CLOCK_MEM, &value)) == NVML_SUCCESS) {
      s->mem_min = s->n_mem ? MB_MIN(s->mem_min, value) : value;
      s->mem_max = s->n_mem ? MB_MAX(s->mem_max, value) : value;
      s->n_mem++;
      got = 1;
    } else {
      note_failure(s, rc, "the memory clock");
    }
  }
  if (nvml.temperature) {
    if ((rc = nvml.temperature(s->device, NVML_TEMPERATURE_GPU, &value)) ==
        NVML_SUCCESS) {
      s->temperature_max =
          s->n_temperature ? MB_MAX(s->temperature_max, value) : value;
      s->n_temperature++;
      got = 1;
    } else {
      note_failure(s, rc, "the temperature");
    }
  }
  if (nvml.power_usage) {
    if ((rc = nvml.power_usage(s->device, &value)) == NVML_SUCCESS) {
      double watts = value / 1000.0;
      s->power_sum += watts;
      s->power_max = s->n_power ? MB_MAX(s->power_max, watts) : watts;
      s->n_power++;
      got = 1;
    } else {
      note_failure(s, rc, "the power draw");
    }
  }
  nvmlUtilization_t utilization;
  if (nvml.utilization) {
    if ((rc = nvml.utilization(s->device, &utilization)) == NVML_SUCCESS) {
      s->utilization_sum += utilization.gpu;
      s->n_utilization++;
      got = 1;
    } else {
      note_failure(s, rc, "the utilisation");
    }
  }
  unsigned long long reasons = 0;
  if (nvml.clock_reasons) {
    if ((rc = nvml.clock_reasons(s->device, &reasons)) == NVML_SUCCESS) {
      s->reasons |= reasons & ~MB_NVML_NOT_THROTTLE;
      got = 1;
    } else {
      note_failure(s, rc, "the clocks' reasons");
    }
  }
  if (got) {
    pthread_mutex_lock(&s->lock);
    s->samples++;
    pthread_mutex_unlock(&s->lock);
  }
}

static void *sampler_main(void *arg) {
  mb_gpu_sampler *s = arg;
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  long long period_ns = (long long)(s->period_ms * 1e6);
  for (;;) {
    sample_once(s);
    next.tv_nsec += period_ns % 1000000000LL;
    next.tv_sec += (time_t)(period_ns / 1000000000LL);
    if (next.tv_nsec >= 1000000000L) {
      next.tv_nsec -= 1000000000L;
      next.tv_sec++;
    }
    /* A round that overran its period starts the next one now rather than
     * catching up with a burst. */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec > next.tv_sec ||
        (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec))
      next = now;
    pthread_mutex_lock(&s->lock);
    while (!s->stop &&
           pthread_cond_timedwait(&s->wake, &s->lock, &next) != ETIMEDOUT) {
    }
    int stop = s->stop;
    pthread_mutex_unlock(&s->lock);
    if (stop)
      return NULL;
  }
}

mb_status mb__gpu_sampler_start(int index, double period_ms,
                                mb_gpu_sampler **out, mb_error *err) {
  if (!(period_ms >= 0.1 && period_ms <= 60000.0))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "GPU sampling period %g ms: expected 0.1 to 60000 ms",
                     period_ms);
  char reason[256];
  if (!nvml_begin(reason, sizeof reason))
    return mb__error(err, MB_STATUS_UNAVAILABLE, "GPU %d: %s", index, reason);
  mb_status status = MB_STATUS_OK;
  mb_gpu_sampler *s = calloc(1, sizeof *s);
  if (!s) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "GPU sampler");
    goto fail_nvml;
  }
  s->index = index;
  s->period_ms = period_ms;
  status = device_handle(index, &s->device, err);
  if (status)
    goto fail_sampler;
  pthread_condattr_t attr;
  if (pthread_condattr_init(&attr) != 0) {
    status = mb__error(err, MB_STATUS_INTERNAL, "GPU sampler: condattr");
    goto fail_sampler;
  }
  int rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  if (rc == 0)
    rc = pthread_cond_init(&s->wake, &attr);
  pthread_condattr_destroy(&attr);
  if (rc != 0) {
    status = mb__error(err, MB_STATUS_INTERNAL, "GPU sampler: condition: %s",
                       strerror(rc));
    goto fail_sampler;
  }
  if ((rc = pthread_mutex_init(&s->lock, NULL)) != 0) {
    status = mb__error(err, MB_STATUS_INTERNAL, "GPU sampler: mutex: %s",
                       strerror(rc));
    goto fail_cond;
  }
  if ((rc = pthread_create(&s->thread, NULL, sampler_main, s)) != 0) {
    status = mb__error(err, MB_STATUS_INTERNAL, "GPU sampler: thread: %s",
                       strerror(rc));
    goto fail_mutex;
  }
  *out = s;
  return MB_STATUS_OK;
fail_mutex:
  pthread_mutex_destroy(&s->lock);
fail_cond:
  pthread_cond_destroy(&s->wake);
fail_sampler:
  free(s);
fail_nvml:
  nvml_end();
  return status;
}

int64_t mb__gpu_sampler_samples(mb_gpu_sampler *sampler) {
  pthread_mutex_lock(&sampler->lock);
  int64_t n = sampler->samples;
  pthread_mutex_unlock(&sampler->lock);
  return n;
}

void mb__gpu_sampler_stop(mb_gpu_sampler *sampler, mb_gpu_state *state) {
  if (!sampler)
    return;
  mb_gpu_sampler *s = sampler;
  pthread_mutex_lock(&s->lock);
  s->stop = 1;
  pthread_cond_signal(&s->wake);
  pthread_mutex_unlock(&s->lock);
  pthread_join(s->thread, NULL);
  nvml_end();

  memset(state, 0, sizeof *state);
  state->period_ms = s->period_ms;
  state->samples = s->samples;
  if (s->samples == 0) {
    char buf[160];
    if (s->first_error_call)
      snprintf(state->unavailable, sizeof state->unavailable,
               "NVML gave nothing of GPU %d: %s: %.100s", s->index,
               s->first_error_call,
               nvml_error(s->first_error, buf, sizeof buf));
    else
      snprintf(state->unavailable, sizeof state->unavailable,
               "NVML gave nothing of GPU %d", s->index);
  } else {
    state->available = 1;
    if (s->n_sm) {
      if (s->n_sm_kept > 0)
        state->sm_clock_mhz_median = mb__median(s->sm, s->n_sm_kept);
      state->sm_clock_mhz_min = s->sm_min;
      state->sm_clock_mhz_max = s->sm_max;
    }
    state->mem_clock_mhz_min = s->mem_min;
    state->mem_clock_mhz_max = s->mem_max;
    state->temperature_c_max = s->temperature_max;
    if (s->n_power) {
      state->power_w_mean = s->power_sum / (double)s->n_power;
      state->power_w_max = s->power_max;
    }
    if (s->n_utilization)
      state->utilization_mean = s->utilization_sum / (double)s->n_utilization;
    state->throttle_reasons = s->reasons;
    mb__gpu_throttle_words(s->reasons, state->throttle, sizeof state->throttle);
  }
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->wake);
  free(s->sm);
  free(s);
}

void mb__gpu_throttle_explain(uint64_t reasons, char *out, size_t size) {
  size_t used = 0;
  if (size)
    out[0] = '\0';
  for (size_t i = 0; i < MB_ARRAY_COUNT(throttle_reasons) && used < size; i++) {
    const throttle_reason *r = &throttle_reasons[i];
    if (!(reasons & r->bit) || !r->why)
      continue;
    int n = snprintf(out + used, size - used, "%s%s (%s)", used ? "; " : "",
                     r->word, r->why);
    if (n > 0)
      used += (size_t)n;
  }
}
