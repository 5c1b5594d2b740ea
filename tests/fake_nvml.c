/* A fake NVML (libnvidia-ml.so.1) that plays NVIDIA GPUs for the tests of
 * src/bench/gpu.c, loaded through MODELBENCH_NVML_LIB. It exports the
 * functions gpu.c resolves, under NVML's names, and reads its script from
 * the environment at the first nvmlInit:
 *
 *   FAKE_NVML_GPUS=N           devices (default 1; 0: none)
 *   FAKE_NVML_INIT_FAIL=1      nvmlInit fails ("Fake Driver Not Loaded")
 *   FAKE_NVML_SM_CLOCKS=a,b,c  the SM clock of successive readings (MHz),
 *                              the last one held (default 1980)
 *   FAKE_NVML_THROTTLE=a,b,c   the clocks' reasons likewise (0x.. allowed;
 *                              default 0)
 *   FAKE_NVML_NAME             the devices' name ("Fake GPU 80GB")
 *   FAKE_NVML_POWER_MW         the power draw (default 350000)
 *   FAKE_NVML_TEMP             the temperature (default 60)
 *   FAKE_NVML_FAIL=power,...   readings that fail with "Not Supported":
 *                              clocks, power, temperature, utilization,
 *                              reasons
 *
 * Every other figure is fixed (a 9.0 device with 81559 MiB, driver
 * 580.00.01 supporting CUDA 13.0). Calls before nvmlInit or after the
 * matching nvmlShutdown fail with "Uninitialized", as NVML's do;
 * fake_nvml_init_count() lets a test see that every start was stopped.
 *
 * Built twice: with FAKE_NVML_OLD it is an older driver's library that
 * lacks nvmlDeviceGetCurrentClocksEventReasons and
 * nvmlSystemGetCudaDriverVersion_v2 (only their older names). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct fake_device *nvmlDevice_t;
typedef struct nvmlMemory_t {
  unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct nvmlUtilization_t {
  unsigned int gpu, memory;
} nvmlUtilization_t;

enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
};

#define FAKE_MAX_GPUS 8
#define FAKE_MAX_SCRIPT 64

struct fake_device {
  int index;
};

static struct {
  int parsed;
  int gpus;
  int init_fail;
  unsigned long long sm[FAKE_MAX_SCRIPT], reasons[FAKE_MAX_SCRIPT];
  int n_sm, n_reasons;
  char name[96];
  unsigned power_mw, temperature;
  int fail_clocks, fail_power, fail_temperature, fail_utilization, fail_reasons;
} fake;

static struct fake_device devices[FAKE_MAX_GPUS];
static int init_count;
/* Readings taken so far, per script; __atomic since the sampler reads on a
 * thread of its own. */
static int sm_readings, reason_readings;

static unsigned long long env_number(const char *name,
                                     unsigned long long fallback) {
  const char *v = getenv(name);
  return v && v[0] ? strtoull(v, NULL, 0) : fallback;
}

static int parse_script(const char *name, unsigned long long fallback,
                        unsigned long long *out) {
  const char *v = getenv(name);
  int n = 0;
  while (v && *v && n < FAKE_MAX_SCRIPT) {
    char *end;
    out[n++] = strtoull(v, &end, 0);
    v = *end == ',' ? end + 1 : end + strlen(end);
  }
  if (n == 0)
    out[n++] = fallback;
  return n;
}

static int listed(const char *list, const char *word) {
  size_t len = strlen(word);
  for (const char *p = list; p && *p;) {
    size_t n = strcspn(p, ",");
    if (n == len && strncmp(p, word, n) == 0)
      return 1;
    p += n;
    if (*p == ',')
      p++;
  }
  return 0;
}

static void parse_environment(void) {
  fake.gpus = (int)env_number("FAKE_NVML_GPUS", 1);
  if (fake.gpus < 0 || fake.gpus > FAKE_MAX_GPUS)
    fake.gpus = FAKE_MAX_GPUS;
  fake.init_fail = (int)env_number("FAKE_NVML_INIT_FAIL", 0);
  fake.n_sm = parse_script("FAKE_NVML_SM_CLOCKS", 1980, fake.sm);
  fake.n_reasons = parse_script("FAKE_NVML_THROTTLE", 0, fake.reasons);
  const char *name = getenv("FAKE_NVML_NAME");
  snprintf(fake.name, sizeof fake.name, "%s",
           name && name[0] ? name : "Fake GPU 80GB");
  fake.power_mw = (unsigned)env_number("FAKE_NVML_POWER_MW", 350000);
  fake.temperature = (unsigned)env_number("FAKE_NVML_TEMP", 60);
  const char *fail = getenv("FAKE_NVML_FAIL");
  fake.fail_clocks = listed(fail, "clocks");
  fake.fail_power = listed(fail, "power");
  fake.fail_temperature = listed(fail, "temperature");
  fake.fail_utilization = listed(fail, "utilization");
  fake.fail_reasons = listed(fail, "reasons");
  for (int i = 0; i < FAKE_MAX_GPUS; i++)
    devices[i].index = i;
  fake.parsed = 1;
}

static int started(void) {
  return __atomic_load_n(&init_count, __ATOMIC_SEQ_CST) > 0;
}

static int valid(nvmlDevice_t d) {
  return d && d >= devices && d < devices + fake.gpus;
}

/* The next value of a script: its readings in turn, the last one held. */
static unsigned long long next_reading(const unsigned long long *script, int n,
                                       int *readings) {
  int i = __atomic_fetch_add(readings, 1, __ATOMIC_SEQ_CST);
  return script[i < n ? i : n - 1];
}

static nvmlReturn_t copy_string(char *out, unsigned int length, const char *s) {
  if (!out || strlen(s) + 1 > length)
    return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(out, s, strlen(s) + 1);
  return NVML_SUCCESS;
}

int fake_nvml_init_count(void);
int fake_nvml_init_count(void) {
  return __atomic_load_n(&init_count, __ATOMIC_SEQ_CST);
}

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInit_v2(void) {
  if (!fake.parsed)
    parse_environment();
  if (fake.init_fail)
    return NVML_ERROR_DRIVER_NOT_LOADED;
  __atomic_add_fetch(&init_count, 1, __ATOMIC_SEQ_CST);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void);
nvmlReturn_t nvmlShutdown(void) {
  if (!started())
    return NVML_ERROR_UNINITIALIZED;
  __atomic_sub_fetch(&init_count, 1, __ATOMIC_SEQ_CST);
  return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t rc);
const char *nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
  case NVML_SUCCESS:
    return "Success";
  case NVML_ERROR_UNINITIALIZED:
    return "Fake Uninitialized";
  case NVML_ERROR_INVALID_ARGUMENT:
    return "Fake Invalid Argument";
  case NVML_ERROR_NOT_SUPPORTED:
    return "Fake Not Supported";
  case NVML_ERROR_INSUFFICIENT_SIZE:
    return "Fake Insufficient Size";
  case NVML_ERROR_DRIVER_NOT_LOADED:
    return "Fake Driver Not Loaded";
  default:
    return "Fake Unknown Error";
  }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
  if (!started())
    return NVML_ERROR_UNINITIALIZED;
  *count = (unsigned)fake.gpus;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                           nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                           nvmlDevice_t *device) {
  if (!started())
    return NVML_ERROR_UNINITIALIZED;
  if (index >= (unsigned)fake.gpus || !device)
    return NVML_ERROR_INVALID_ARGUMENT;
  *device = &devices[index];
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int n);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int n) {
  if (!started())
    return NVML_ERROR_UNINITIALIZED;
  if (!valid(d))
    return NVML_ERROR_INVALID_ARGUMENT;
  return copy_string(name, n, fake.name);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int n);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int n) {
  if (!started())
    return NVML_ERROR_UNINITIALIZED;
  if (!valid(d))
    return NVML_ERROR_INVALID_ARGUMENT;
  char s[32];
  snprintf(s, sizeof s, "GPU-fake-%d", d->index);
  return copy_string(uuid, n, s);
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int n);
nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int n) {
  if (!started())
    return NVML_ERROR_UNINITIALIZED;
  return copy_string(version, n, "580.00.01");
}

static nvmlReturn_t cuda_driver_version(int *version) {
  if (!started())
    return NVML_ERROR_UNINITIALIZED;
  *version = 13000;
  return NVML_SUCCESS;
}

/* The older name reports the same here. */
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version);
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version) {
  return cuda_driver_version(version);
}
#ifndef FAKE_NVML_OLD
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version);
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version) {
  return cuda_driver_version(version);
}
#endif

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major,
                                                int *minor);
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major,
                                                int *minor) {
  if (!started())
    return NVML_ERROR_UNINITIALIZED;
  if (!valid(d))
    return NVML_ERROR_INVALID_ARGUMENT;
  *major = 9;
  *minor = 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *memory);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *memory) {
  if (!started())
    return NVML_ERROR_UNINITIALIZED;
  if (!valid(d))
    return NVML_ERROR_INVALID_ARGUMENT;
  memory->total = 81559ULL * 1024 * 1024;
  memory->used = 1024ULL * 1024 * 1024;
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type,
                                       unsigned int *mhz);
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type,
                                       unsigned int *mhz) {
  if (!started())
    return NVML_ERROR_UNINITIALIZED;
  if (!valid(d) || (type != 1 && type != 2))
    return NVML_ERROR_INVALID_ARGUMENT;
  *mhz = type == 1 ? 1980 : 2619;
  return NVML_SUCCESS;
}

/* The SM clock follows FAKE_NVML_SM_CLOCKS; the memory clock is steady. */
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type,
                                    unsigned int *mhz);
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type,
                                    unsigned int *mhz) {
  if (!started())
    return NVML_ERROR_UNINITIALIZED;
  if (!valid(d) || (type != 1 && type != 2))
    return NVML_ERROR_INVALID_ARGUMENT;
  if (fake.fail_clocks)
    return NVML_ERROR_NOT_SUPPORTED;
  *mhz = type == 1 ? (unsigned)next_reading(fake.sm, fake.n_sm, &sm_readings)
                   : 2619;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor,
                                      unsigned int *celsius);
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor,
                                      unsigned int *celsius) {
  if (!started())
    return NVML_ERROR_UNINITIALIZED;
  if (!valid(d) || sensor != 0)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (fake.fail_temperature)
    return NVML_ERROR_NOT_SUPPORTED;
  *celsius = fake.temperature;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw) {
  if (!started())
    return NVML_ERROR_UNINITIALIZED;
  if (!valid(d))
    return NVML_ERROR_INVALID_ARGUMENT;
  if (fake.fail_power)
    return NVML_ERROR_NOT_SUPPORTED;
  *mw = fake.power_mw;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *mw);
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *mw) {
  if (!started())
    return NVML_ERROR_UNINITIALIZED;
  if (!valid(d))
    return NVML_ERROR_INVALID_ARGUMENT;
  *mw = 700000;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d,
                                           nvmlUtilization_t *u);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d,
                                           nvmlUtilization_t *u) {
  if (!started())
    return NVML_ERROR_UNINITIALIZED;
  if (!valid(d))
    return NVML_ERROR_INVALID_ARGUMENT;
  if (fake.fail_utilization)
    return NVML_ERROR_NOT_SUPPORTED;
  u->gpu = 97;
  u->memory = 40;
  return NVML_SUCCESS;
}

static nvmlReturn_t clock_reasons(nvmlDevice_t d, unsigned long long *r) {
  if (!started())
    return NVML_ERROR_UNINITIALIZED;
  if (!valid(d))
    return NVML_ERROR_INVALID_ARGUMENT;
  if (fake.fail_reasons)
    return NVML_ERROR_NOT_SUPPORTED;
  *r = next_reading(fake.reasons, fake.n_reasons, &reason_readings);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d,
                                                       unsigned long long *r);
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d,
                                                       unsigned long long *r) {
  return clock_reasons(d, r);
}
#ifndef FAKE_NVML_OLD
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d,
                                                    unsigned long long *r);
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d,
                                                    unsigned long long *r) {
  return clock_reasons(d, r);
}
#endif
