/* NVIDIA GPUs through NVML loaded at run time (src/bench/gpu.c), against
 * tests/fake_nvml.c, a fake libnvidia-ml that plays scripted GPUs
 * (MB_FAKE_NVML names it; MB_FAKE_NVML_OLD an older driver's, without the
 * newer names of two functions). gpu.c loads its library once per
 * process, so every scenario runs in a child of its own with its own
 * environment. Nothing here needs a GPU, and nothing checks how fast
 * anything ran. */
#include "bench/bench_internal.h"
#include "bench/gpu.h"
#include "test.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- scenarios in children ---- */

static const char *fake_library(const char *variable) {
  const char *path = getenv(variable);
  if (!path || !path[0]) {
    fprintf(stderr,
            "  %s is not set: run through ctest, which names the "
            "fake NVML library\n",
            variable);
    return NULL;
  }
  return path;
}

/* Runs fn in a child with NVML's variables cleared, MODELBENCH_NVML_LIB
 * naming the fake, then `env` (name, value pairs; value NULL unsets) on
 * top; its exit status (LeakSanitizer's exit included) is the result. */
static int in_child(int (*fn)(void), const char *const *env, int n_env) {
  const char *fake = fake_library("MB_FAKE_NVML");
  if (!fake)
    return 1;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    return 1;
  }
  if (pid == 0) {
    static const char *const cleared[] = {
        "CUDA_VISIBLE_DEVICES", "FAKE_NVML_GPUS",     "FAKE_NVML_INIT_FAIL",
        "FAKE_NVML_SM_CLOCKS",  "FAKE_NVML_THROTTLE", "FAKE_NVML_NAME",
        "FAKE_NVML_POWER_MW",   "FAKE_NVML_TEMP",     "FAKE_NVML_FAIL"};
    for (size_t i = 0; i < sizeof cleared / sizeof cleared[0]; i++)
      unsetenv(cleared[i]);
    setenv("MODELBENCH_NVML_LIB", fake, 1);
    for (int i = 0; i + 1 < n_env; i += 2) {
      if (env[i + 1])
        setenv(env[i], env[i + 1], 1);
      else
        unsetenv(env[i]);
    }
    exit(fn());
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) {
    perror("waitpid");
    return 1;
  }
  if (WIFSIGNALED(status)) {
    fprintf(stderr, "  the child died of signal %d\n", WTERMSIG(status));
    return 1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

#define IN_CHILD(fn, ...)                                                      \
  do {                                                                         \
    static const char *const env_[] = {__VA_ARGS__};                           \
    return in_child(fn, env_, (int)(sizeof env_ / sizeof env_[0]));            \
  } while (0)

/* The fake's count of NVML starts not yet stopped: 0 after every use. */
static int fake_init_count(void) {
  const char *path = getenv("MODELBENCH_NVML_LIB");
  void *lib = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (!lib)
    return -1;
  int (*count)(void) = NULL;
  *(void **)&count = dlsym(lib, "fake_nvml_init_count");
  int n = count ? count() : -1;
  dlclose(lib);
  return n;
}

static void free_warnings(mb_bench_result *r) {
  for (int i = 0; i < r->n_warnings; i++)
    free(r->warnings[i]);
  free(r->warnings);
  r->warnings = NULL;
  r->n_warnings = 0;
}

/* Samples until the sampler has taken `want` rounds (a minute at most,
 * which only a stalled machine reaches), then stops it. */
static int sample(int want, double period_ms, mb_gpu_state *state) {
  mb_gpu_sampler *sampler = NULL;
  mb_error err = {0};
  ASSERT_OK(mb__gpu_sampler_start(0, period_ms, &sampler, &err), &err);
  ASSERT_EQ(fake_init_count(), 1); /* the sampler holds NVML */
  struct timespec pause = {0, 1000000};
  for (int i = 0; i < 60000 && mb__gpu_sampler_samples(sampler) < want; i++)
    nanosleep(&pause, NULL);
  mb__gpu_sampler_stop(sampler, state);
  ASSERT_EQ(fake_init_count(), 0);
  return 0;
}

/* ---- no NVML ---- */

static int no_library(void) {
  setenv("MODELBENCH_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
  char reason[256] = "";
  ASSERT_EQ(mb__gpu_count(reason, sizeof reason), 0);
  ASSERT_CONTAINS(reason, "MODELBENCH_NVML_LIB");
  ASSERT_CONTAINS(reason, "/nonexistent/libnvidia-ml.so.1");
  mb_gpu_info info = {.index = -1};
  mb_error err = {0};
  ASSERT_EQ(mb__gpu_describe(0, &info, &err), MB_STATUS_UNAVAILABLE);
  ASSERT_CONTAINS(err.message, "/nonexistent/libnvidia-ml.so.1");
  ASSERT_EQ(info.index, -1); /* untouched */
  mb_gpu_sampler *sampler = NULL;
  ASSERT_EQ(mb__gpu_sampler_start(0, 10, &sampler, &err),
            MB_STATUS_UNAVAILABLE);
  ASSERT(sampler == NULL);
  return 0;
}
TEST(no_library) {
  IN_CHILD(no_library, "FAKE_NVML_GPUS", "1");
}

static int init_fails(void) {
  char reason[256] = "";
  ASSERT_EQ(mb__gpu_count(reason, sizeof reason), 0);
  ASSERT_CONTAINS(reason, "NVML did not start");
  ASSERT_CONTAINS(reason, "Fake Driver Not Loaded");
  mb_gpu_info info = {0};
  mb_error err = {0};
  ASSERT_EQ(mb__gpu_describe(0, &info, &err), MB_STATUS_UNAVAILABLE);
  ASSERT_CONTAINS(err.message, "Fake Driver Not Loaded");
  return 0;
}
TEST(init_fails) {
  IN_CHILD(init_fails, "FAKE_NVML_INIT_FAIL", "1");
}

static int no_device(void) {
  char reason[256] = "";
  ASSERT_EQ(mb__gpu_count(reason, sizeof reason), 0);
  ASSERT_CONTAINS(reason, "sees no GPU");
  mb_gpu_info info = {0};
  mb_error err = {0};
  ASSERT_EQ(mb__gpu_describe(0, &info, &err), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "GPU index 0");
  ASSERT_EQ(fake_init_count(), 0);
  return 0;
}
TEST(no_device) {
  IN_CHILD(no_device, "FAKE_NVML_GPUS", "0");
}

/* ---- how many ---- */

static int visible(const char *list, char *reason, size_t size) {
  if (list)
    setenv("CUDA_VISIBLE_DEVICES", list, 1);
  else
    unsetenv("CUDA_VISIBLE_DEVICES");
  reason[0] = '?';
  return mb__gpu_count(reason, size);
}

static int cuda_visible_devices(void) {
  char reason[256];
  ASSERT_EQ(visible(NULL, reason, sizeof reason), 4);
  ASSERT_STR_EQ(reason, "");
  ASSERT_EQ(visible("", reason, sizeof reason), 0);
  ASSERT_STR_EQ(reason, "CUDA_VISIBLE_DEVICES=\"\" hides every GPU");
  ASSERT_EQ(visible("-1", reason, sizeof reason), 0);
  ASSERT_CONTAINS(reason, "CUDA_VISIBLE_DEVICES=\"-1\" hides every GPU");
  ASSERT_EQ(visible("2,0", reason, sizeof reason), 2);
  ASSERT_EQ(visible("GPU-fake-1", reason, sizeof reason), 1);
  /* CUDA stops at the first entry that names no device. */
  ASSERT_EQ(visible("0,7,1", reason, sizeof reason), 1);
  ASSERT_EQ(visible("1,-1,2", reason, sizeof reason), 1);
  ASSERT_EQ(visible("9", reason, sizeof reason), 0);
  ASSERT_CONTAINS(reason, "names none of the 4 GPU(s)");
  /* More entries than devices: NVML's count. */
  ASSERT_EQ(visible("GPU-a,GPU-b,GPU-c,GPU-d,GPU-e", reason, sizeof reason), 4);
  ASSERT_EQ(fake_init_count(), 0);
  return 0;
}
TEST(cuda_visible_devices) {
  IN_CHILD(cuda_visible_devices, "FAKE_NVML_GPUS", "4");
}

/* CUDA's device index to NVML's, through CUDA_VISIBLE_DEVICES. */
static int nvml_index_of(const char *list, int cuda_index) {
  if (list)
    setenv("CUDA_VISIBLE_DEVICES", list, 1);
  else
    unsetenv("CUDA_VISIBLE_DEVICES");
  return mb__gpu_nvml_index(cuda_index);
}

static int nvml_index(void) {
  ASSERT_EQ(nvml_index_of(NULL, 1), 1);
  ASSERT_EQ(nvml_index_of("", 0), 0);
  ASSERT_EQ(nvml_index_of("2,3", 0), 2);
  ASSERT_EQ(nvml_index_of("2,3", 1), 3);
  /* UUIDs, whole or a prefix, looked up by NVML. */
  ASSERT_EQ(nvml_index_of("GPU-fake-3,GPU-fake-1", 0), 3);
  ASSERT_EQ(nvml_index_of("GPU-fake-3,GPU-fake-1", 1), 1);
  ASSERT_EQ(nvml_index_of("GPU-fake-2", 0), 2);
  /* What the list does not say: the index as it is. */
  ASSERT_EQ(nvml_index_of("GPU-nowhere", 0), 0);
  ASSERT_EQ(nvml_index_of("1", 3), 3);
  ASSERT_EQ(fake_init_count(), 0);
  return 0;
}
TEST(nvml_index) {
  IN_CHILD(nvml_index, "FAKE_NVML_GPUS", "4");
}

/* ---- which one ---- */

static int describe(void) {
  mb_gpu_info info;
  memset(&info, 0x5a, sizeof info);
  snprintf(info.cuda_runtime, sizeof info.cuda_runtime, "12.8");
  mb_error err = {0};
  ASSERT_OK(mb__gpu_describe(1, &info, &err), &err);
  ASSERT_EQ(info.index, 1);
  ASSERT_STR_EQ(info.name, "Fake H100 80GB HBM3");
  ASSERT_STR_EQ(info.uuid, "GPU-fake-1");
  ASSERT_STR_EQ(info.driver, "580.00.01");
  ASSERT_STR_EQ(info.cuda_driver, "13.0");
  ASSERT_STR_EQ(info.cuda_runtime, "12.8"); /* the runtime's, kept */
  ASSERT_STR_EQ(info.compute_capability, "9.0");
  ASSERT_NEAR(info.memory_total_mb, 81559, 0);
  ASSERT_NEAR(info.sm_clock_max_mhz, 1980, 0);
  ASSERT_NEAR(info.mem_clock_max_mhz, 2619, 0);
  ASSERT_NEAR(info.power_limit_w, 700, 0);
  /* A device the driver does not have: an error naming it, info kept. */
  mb_gpu_info before = info;
  ASSERT_EQ(mb__gpu_describe(2, &info, &err), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "GPU index 2: the NVIDIA driver sees 2 GPU(s)");
  ASSERT(memcmp(&before, &info, sizeof info) == 0);
  ASSERT_EQ(mb__gpu_describe(-1, &info, &err), MB_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(fake_init_count(), 0);
  return 0;
}
TEST(describe) {
  IN_CHILD(describe, "FAKE_NVML_GPUS", "2", "FAKE_NVML_NAME",
           "Fake H100 80GB HBM3");
}

/* ---- the sampler ---- */

/* The script of clock_drop's SM clock, its last value held. */
static const double drop_script[] = {1410, 1980, 1980, 1980, 1700};

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int clock_drop(void) {
  mb_gpu_state state;
  if (sample(10, 1.0, &state))
    return 1;
  ASSERT_EQ(state.available, 1);
  ASSERT(state.samples >= 10);
  ASSERT_NEAR(state.period_ms, 1.0, 0);
  /* The median of the clocks the fake gave, worked out here. */
  int64_t n = state.samples;
  double *series = malloc(sizeof(double) * (size_t)n);
  ASSERT(series);
  for (int64_t i = 0; i < n; i++)
    series[i] = drop_script[i < 5 ? i : 4];
  qsort(series, (size_t)n, sizeof(double), compare_doubles);
  double median =
      n % 2 ? series[n / 2] : (series[n / 2 - 1] + series[n / 2]) / 2;
  free(series);
  ASSERT_NEAR(median, 1700, 0); /* from 10 samples on */
  ASSERT_NEAR(state.sm_clock_mhz_median, median, 0);
  ASSERT_NEAR(state.sm_clock_mhz_min, 1410, 0);
  ASSERT_NEAR(state.sm_clock_mhz_max, 1980, 0);
  ASSERT_NEAR(state.mem_clock_mhz_min, 2619, 0);
  ASSERT_NEAR(state.mem_clock_mhz_max, 2619, 0);
  ASSERT_NEAR(state.temperature_c_max, 83, 0);
  ASSERT_NEAR(state.power_w_mean, 612.5, 0);
  ASSERT_NEAR(state.power_w_max, 612.5, 0);
  ASSERT_NEAR(state.utilization_mean, 97, 0);
  /* Idle and application clocks are no throttling: only 0x20 stays. */
  ASSERT_EQ(state.throttle_reasons, 0x20);
  ASSERT_STR_EQ(state.throttle, "sw_thermal_slowdown");

  mb_bench_result result;
  memset(&result, 0, sizeof result);
  mb__gpu_state_warnings(&state, &result);
  ASSERT_EQ(result.n_warnings, 2);
  ASSERT_STR_EQ(result.warnings[0],
                "GPU clocks dropped: the SM clock went down to 1410 MHz, 71% "
                "of the 1980 MHz it reached during the timed phase "
                "(throttled: sw_thermal_slowdown); latencies include slower "
                "periods");
  ASSERT_CONTAINS(result.warnings[1], "GPU throttled during the timed phase: "
                                      "sw_thermal_slowdown (the driver "
                                      "lowered the clocks");
  free_warnings(&result);
  return 0;
}
TEST(clock_drop) {
  IN_CHILD(clock_drop, "FAKE_NVML_SM_CLOCKS", "1410,1980,1980,1980,1700",
           "FAKE_NVML_THROTTLE", "0,0x1,0x20,0x2", "FAKE_NVML_POWER_MW",
           "612500", "FAKE_NVML_TEMP", "83");
}

/* Clocks that hold and reasons that are no throttling: no warning. */
static int steady(void) {
  mb_gpu_state state;
  if (sample(10, 1.0, &state))
    return 1;
  ASSERT_EQ(state.available, 1);
  ASSERT_NEAR(state.sm_clock_mhz_min, 1980, 0);
  ASSERT_NEAR(state.sm_clock_mhz_median, 1980, 0);
  ASSERT_EQ(state.throttle_reasons, 0);
  ASSERT_STR_EQ(state.throttle, "");
  mb_bench_result result;
  memset(&result, 0, sizeof result);
  mb__gpu_state_warnings(&state, &result);
  ASSERT_EQ(result.n_warnings, 0);
  /* A drop within MB_GPU_CLOCK_DROP is no warning either. */
  state.sm_clock_mhz_min = 0.91 * state.sm_clock_mhz_max;
  mb__gpu_state_warnings(&state, &result);
  ASSERT_EQ(result.n_warnings, 0);
  return 0;
}
TEST(steady) {
  IN_CHILD(steady, "FAKE_NVML_THROTTLE", "0x1,0x2,0x101", "FAKE_NVML_SM_CLOCKS",
           "1980");
}

/* A reading NVML refuses leaves its figure out; the rest is there. */
static int failing_readings(void) {
  mb_gpu_state state;
  if (sample(3, 1.0, &state))
    return 1;
  ASSERT_EQ(state.available, 1);
  ASSERT_NEAR(state.sm_clock_mhz_max, 1980, 0);
  ASSERT_NEAR(state.power_w_mean, 0, 0);
  ASSERT_NEAR(state.power_w_max, 0, 0);
  ASSERT_EQ(state.throttle_reasons, 0);
  ASSERT_NEAR(state.temperature_c_max, 60, 0);
  return 0;
}
TEST(failing_readings) {
  IN_CHILD(failing_readings, "FAKE_NVML_FAIL", "power,reasons",
           "FAKE_NVML_THROTTLE", "0x4");
}

/* Nothing NVML gives: the state says it is unavailable, and why. */
static int nothing_sampled(void) {
  mb_gpu_state state;
  if (sample(0, 1.0, &state))
    return 1;
  ASSERT_EQ(state.available, 0);
  ASSERT_EQ(state.samples, 0);
  ASSERT_CONTAINS(state.unavailable, "the SM clock: Fake Not Supported");
  mb_bench_result result;
  memset(&result, 0, sizeof result);
  mb__gpu_state_warnings(&state, &result);
  ASSERT_EQ(result.n_warnings, 0);
  return 0;
}
TEST(nothing_sampled) {
  IN_CHILD(nothing_sampled, "FAKE_NVML_FAIL",
           "clocks,power,temperature,utilization,reasons");
}

/* A long period: the first round at once, and stop does not wait for the
 * next one (a sampler that did would take a minute here). */
static int stop_is_prompt(void) {
  mb_gpu_state state;
  if (sample(1, 60000.0, &state))
    return 1;
  ASSERT_EQ(state.samples, 1);
  return 0;
}
TEST(stop_is_prompt) {
  IN_CHILD(stop_is_prompt, "FAKE_NVML_GPUS", "1");
}

static int bad_arguments(void) {
  mb_gpu_sampler *sampler = NULL;
  mb_error err = {0};
  ASSERT_EQ(mb__gpu_sampler_start(0, 0.0, &sampler, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "GPU sampling period 0 ms");
  ASSERT_EQ(mb__gpu_sampler_start(0, NAN, &sampler, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(mb__gpu_sampler_start(3, 10.0, &sampler, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "GPU index 3");
  ASSERT(sampler == NULL);
  ASSERT_EQ(fake_init_count(), 0);
  return 0;
}
TEST(bad_arguments) {
  IN_CHILD(bad_arguments, "FAKE_NVML_GPUS", "1");
}

/* An older driver's library: the older names of the CUDA version and the
 * clocks' reasons stand in for the newer ones. */
static int older_driver(void) {
  mb_gpu_info info = {0};
  mb_error err = {0};
  ASSERT_OK(mb__gpu_describe(0, &info, &err), &err);
  ASSERT_STR_EQ(info.cuda_driver, "13.0");
  mb_gpu_state state;
  if (sample(2, 1.0, &state))
    return 1;
  ASSERT_EQ(state.throttle_reasons, 0x4);
  ASSERT_STR_EQ(state.throttle, "sw_power_cap");
  mb_bench_result result;
  memset(&result, 0, sizeof result);
  mb__gpu_state_warnings(&state, &result);
  ASSERT_EQ(result.n_warnings, 1);
  ASSERT_CONTAINS(result.warnings[0],
                  "GPU throttled during the timed phase: sw_power_cap (the "
                  "driver held the clocks down to stay under the power "
                  "limit)");
  free_warnings(&result);
  return 0;
}
TEST(older_driver) {
  const char *old = fake_library("MB_FAKE_NVML_OLD");
  if (!old)
    return 1;
  const char *env[] = {"MODELBENCH_NVML_LIB", old, "FAKE_NVML_THROTTLE", "0x4"};
  return in_child(older_driver, env, 4);
}

/* ---- words ---- */

TEST(throttle_words) {
  char words[160];
  mb__gpu_throttle_words(0, words, sizeof words);
  ASSERT_STR_EQ(words, "");
  mb__gpu_throttle_words(0x1 | 0x4 | 0x40, words, sizeof words);
  ASSERT_STR_EQ(words, "gpu_idle,sw_power_cap,hw_thermal_slowdown");
  mb__gpu_throttle_words(0x8 | 0x10 | 0x80 | 0x100 | 0x2, words, sizeof words);
  ASSERT_STR_EQ(words, "applications_clocks_setting,hw_slowdown,sync_boost,"
                       "hw_power_brake_slowdown,display_clock_setting");
  mb__gpu_throttle_words(0x20 | 0x1000, words, sizeof words);
  ASSERT_STR_EQ(words, "sw_thermal_slowdown,unknown_0x1000");
  /* A short buffer: cut, still terminated. */
  char small[12];
  memset(small, 'x', sizeof small);
  mb__gpu_throttle_words(0x4 | 0x20, small, sizeof small);
  ASSERT(memchr(small, '\0', sizeof small) != NULL);
  return 0;
}

TEST_MAIN(TEST_ENTRY(no_library), TEST_ENTRY(init_fails), TEST_ENTRY(no_device),
          TEST_ENTRY(nvml_index), TEST_ENTRY(cuda_visible_devices),
          TEST_ENTRY(describe), TEST_ENTRY(clock_drop), TEST_ENTRY(steady),
          TEST_ENTRY(failing_readings), TEST_ENTRY(nothing_sampled),
          TEST_ENTRY(stop_is_prompt), TEST_ENTRY(bad_arguments),
          TEST_ENTRY(older_driver), TEST_ENTRY(throttle_words))
