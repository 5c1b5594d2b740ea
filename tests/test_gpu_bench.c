/* GPU results without a GPU: a runtime that plays a device (it reports
 * fixed device, copy and compute times, and a fixed peak memory) and a
 * fake NVML (tests/fake_nvml.c, MODELBENCH_NVML_LIB) that plays the
 * driver. The checks are about the arithmetic and the plumbing: where a
 * conversion is placed for each --device, what reaches the result, the
 * JSON and back, and the warnings a throttled device gets. The real thing
 * is the device check (bench/gpu.sh).
 *
 * NVML is loaded once per process, so each scenario with its own
 * environment runs in a forked child. */
#include "bench/bench_internal.h"
#include "report/report_load.h"
#include "test.h"

#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- a runtime that plays a GPU ---- */

#define FAKE_COMPUTE_MS 0.25
#define FAKE_H2D_MS 0.125
#define FAKE_D2H_MS 0.0625
#define FAKE_PEAK_MB 123.5

typedef struct fake_session {
  mb_device device;
} fake_session;

static unsigned fake_devices(char *reason, size_t size) {
  (void)reason, (void)size;
  return (1u << MB_DEVICE_CPU) | (1u << MB_DEVICE_CUDA);
}

static void fake_probe(mb_runtime_info *info) {
  info->available = 1;
  snprintf(info->version, sizeof info->version, "test");
}

static mb_status fake_prepare(const mb_model *model, const void *bytes,
                              size_t size, const mb_runtime_options *options,
                              void **session_out, mb_error *err) {
  (void)model, (void)bytes, (void)size;
  fake_session *s = calloc(1, sizeof *s);
  if (!s)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  s->device = options->device;
  *session_out = s;
  return MB_STATUS_OK;
}

static mb_status fake_run(void *session, const mb_tensor *const *inputs,
                          mb_error *err) {
  (void)session, (void)inputs, (void)err;
  return MB_STATUS_OK;
}

static void fake_release(void *session) {
  free(session);
}

static int fake_describe(void *session, mb_gpu_result *gpu) {
  fake_session *s = session;
  if (s->device != MB_DEVICE_CUDA)
    return 0;
  gpu->info.index = 0;
  snprintf(gpu->info.name, sizeof gpu->info.name, "Played GPU");
  snprintf(gpu->info.cuda_runtime, sizeof gpu->info.cuda_runtime, "12.4");
  snprintf(gpu->info.compute_capability, sizeof gpu->info.compute_capability,
           "8.0");
  gpu->memory_peak_mb = FAKE_PEAK_MB;
  return 1;
}

static double fake_compute_ms(void *session) {
  fake_session *s = session;
  return s->device == MB_DEVICE_CUDA ? FAKE_COMPUTE_MS : -1;
}

static mb_status fake_copies(void *session, const mb_tensor *const *inputs,
                             int n, double *h2d_ms, double *d2h_ms, double *mb,
                             mb_error *err) {
  (void)session, (void)err;
  if (!inputs || !inputs[0])
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT, "no inputs");
  for (int i = 0; i < n; i++) {
    h2d_ms[i] = FAKE_H2D_MS;
    d2h_ms[i] = FAKE_D2H_MS;
  }
  mb[0] = 1.5;
  mb[1] = 0.004;
  return MB_STATUS_OK;
}

static const mb_runtime fake_gpu_runtime = {
    .name = "test_fake_gpu",
    .probe = fake_probe,
    .prepare = fake_prepare,
    .run = fake_run,
    .release = fake_release,
    .devices = fake_devices,
    .gpu_describe = fake_describe,
    .gpu_compute_ms = fake_compute_ms,
    .gpu_copies = fake_copies,
};

static mb_conversion_def fake_gpu_def = {
    .id = 9101,
    .name = "TEST_FAKE_GPU",
    .runtime = "test_fake_gpu",
    .device = MB_DEVICE_CPU,
    .devices = (1u << MB_DEVICE_CPU) | (1u << MB_DEVICE_CUDA),
    .precision = MB_PRECISION_FP32,
    .opt_level = MB_GRAPH_OPT_ALL,
    .description = "test-only conversion on a played GPU",
};

static int fake_index = -1;

static int register_fake(void) {
  mb_error err;
  if (fake_index >= 0)
    return 0;
  if (mb__runtime_register(&fake_gpu_runtime, &err) != MB_STATUS_OK ||
      (fake_index = mb__conversion_register(&fake_gpu_def, &err)) < 0) {
    fprintf(stderr, "registering TEST_FAKE_GPU: %s\n", err.message);
    return 1;
  }
  return 0;
}

/* ---- helpers ---- */

static const char *model_path(const char *name) {
  static char path[PATH_MAX];
  const char *dir = getenv("MB_TEST_MODELS");
  snprintf(path, sizeof path, "%s/%s", dir ? dir : "build/models", name);
  return path;
}

/* The played driver: the fake NVML's file, with its script. */
static int use_fake_nvml(const char *gpus, const char *sm_clocks,
                         const char *throttle) {
  const char *lib = getenv("MB_FAKE_NVML");
  if (!lib || access(lib, R_OK) != 0) {
    fprintf(stderr, "  MB_FAKE_NVML does not name the fake NVML library\n");
    return 1;
  }
  setenv("MODELBENCH_NVML_LIB", lib, 1);
  setenv("FAKE_NVML_GPUS", gpus, 1);
  if (sm_clocks)
    setenv("FAKE_NVML_SM_CLOCKS", sm_clocks, 1);
  if (throttle)
    setenv("FAKE_NVML_THROTTLE", throttle, 1);
  unsetenv("CUDA_VISIBLE_DEVICES");
  return 0;
}

static const char *log_dir;

static void remove_dir(void) {
  char command[PATH_MAX + 16];
  if (log_dir && strncmp(log_dir, "/tmp/mb-test-gpu-logs-", 22) == 0) {
    snprintf(command, sizeof command, "rm -rf '%s'", log_dir);
    if (system(command) != 0)
      fprintf(stderr, "cannot remove %s\n", log_dir);
  }
}

static mb_bench_report *run_one(mb_device device, int allow_override,
                                double min_seconds) {
  mb_bench_config c;
  mb_bench_config_init(&c);
  static int list[1];
  list[0] = fake_index;
  c.conversions = list;
  c.n_conversions = 1;
  c.device = device;
  c.allow_device_override = allow_override;
  c.warmup_iterations = 1;
  c.warmup_seconds = 0;
  c.min_iterations = 20;
  c.min_seconds = min_seconds;
  c.max_seconds = 5;
  c.timeout_seconds = 30;
  c.build_cache = 0;
  c.roofline = 0;
  /* Every file of the run in a folder of its own, removed at exit. */
  static char dir[] = "/tmp/mb-test-gpu-logs-XXXXXX";
  if (dir[sizeof dir - 2] == 'X' && (!mkdtemp(dir) || atexit(remove_dir)))
    return NULL;
  c.log_dir = dir;
  c.cache_dir = dir;
  log_dir = dir;
  mb_bench_report *report = NULL;
  mb_error err;
  if (mb_benchmark_model(model_path("mlp.onnx"), &c, &report, &err)) {
    fprintf(stderr, "  bench: %s\n", err.message);
    return NULL;
  }
  return report;
}

static int has_warning(const mb_bench_result *r, const char *needle) {
  for (int i = 0; i < r->n_warnings; i++)
    if (r->warnings[i] && strstr(r->warnings[i], needle))
      return 1;
  return 0;
}

/* 1 when the file at path holds needle, 0 when not, -1 when unreadable. */
static int file_has(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  static char text[1 << 20];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  return strstr(text, needle) != NULL;
}

/* Runs fn in a child; its exit status is the test's. */
static int in_child(int (*fn)(void)) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0)
    return 1;
  if (pid == 0)
    _exit(fn());
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
    return 1;
  return WEXITSTATUS(status);
}

/* ---- scenarios ---- */

static int scenario_on_gpu(void) {
  ASSERT_EQ(register_fake(), 0);
  ASSERT_EQ(use_fake_nvml("1", "1980", "0"), 0);
  mb_conversion_info info;
  ASSERT_OK(mb_conversion_get(fake_index, &info, NULL), NULL);
  ASSERT_EQ(info.devices, (1u << MB_DEVICE_CPU) | (1u << MB_DEVICE_CUDA));
  ASSERT_EQ(info.devices_here, info.devices);
  ASSERT_STR_EQ(info.devices_reason, "");

  mb_bench_report *report = run_one(MB_DEVICE_CUDA, 0, 0.3);
  ASSERT(report != NULL);
  const mb_bench_result *r = &report->results[0];
  ASSERT_EQ(r->status, MB_BENCH_OK);
  ASSERT_STR_EQ(r->device, "cuda");
  const mb_gpu_result *g = &r->gpu;
  ASSERT_EQ(g->used, 1);
  /* Every timed call has its device time; the copies are timed apart. */
  ASSERT_EQ(g->n_compute, r->iterations);
  ASSERT_NEAR(g->compute_ms.median, FAKE_COMPUTE_MS, 0);
  ASSERT_NEAR(g->compute_ms.p99, FAKE_COMPUTE_MS, 0);
  ASSERT_EQ(g->n_copies, MB_GPU_COPIES);
  ASSERT_NEAR(g->h2d_ms.median, FAKE_H2D_MS, 0);
  ASSERT_NEAR(g->d2h_ms.median, FAKE_D2H_MS, 0);
  ASSERT_NEAR(g->h2d_mb, 1.5, 0);
  ASSERT_NEAR(g->host_latency_ms, FAKE_H2D_MS + FAKE_COMPUTE_MS + FAKE_D2H_MS,
              1e-12);
  ASSERT_NEAR(g->memory_peak_mb, FAKE_PEAK_MB, 0);
  /* The runtime's name, CUDA and compute capability; the driver's facts. */
  ASSERT_STR_EQ(g->info.name, "Played GPU");
  ASSERT_STR_EQ(g->info.cuda_runtime, "12.4");
  ASSERT_STR_EQ(g->info.compute_capability, "8.0");
  ASSERT_STR_EQ(g->info.driver, "580.00.01");
  ASSERT_STR_EQ(g->info.cuda_driver, "13.0");
  ASSERT(g->info.memory_total_mb > 80000);
  ASSERT_NEAR(g->info.sm_clock_max_mhz, 1980, 0);
  /* NVML sampled the device through the timed phase, steadily. */
  ASSERT_EQ(g->state.available, 1);
  ASSERT(g->state.samples >= 1);
  ASSERT_NEAR(g->state.sm_clock_mhz_min, 1980, 0);
  ASSERT(!has_warning(r, "GPU"));

  /* The JSON carries it and reads back the same. */
  char dir[] = "/tmp/mb-test-gpu-XXXXXX", path[PATH_MAX];
  ASSERT(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/report.json", dir);
  mb_error err;
  ASSERT_OK(mb_bench_report_write_json(report, path, &err), &err);
  mb_bench_report **back = NULL;
  int n = 0;
  ASSERT_OK(mb__reports_load_json(path, &back, &n, &err), &err);
  unlink(path);
  rmdir(dir);
  ASSERT_EQ(n, 1);
  const mb_gpu_result *b = &back[0]->results[0].gpu;
  ASSERT_EQ(b->used, 1);
  ASSERT_NEAR(b->compute_ms.median, FAKE_COMPUTE_MS, 0);
  ASSERT_NEAR(b->host_latency_ms, g->host_latency_ms, 1e-12);
  ASSERT_EQ(b->n_copies, MB_GPU_COPIES);
  ASSERT_STR_EQ(b->info.name, "Played GPU");
  ASSERT_STR_EQ(b->info.driver, "580.00.01");
  ASSERT_EQ(b->state.available, 1);
  ASSERT_EQ(b->state.samples, g->state.samples);
  mb__reports_free(back, n);

  /* The HTML page, the Markdown and the console table show it. */
  const mb_bench_report *one[] = {report};
  snprintf(path, sizeof path, "%s/report.html", dir);
  ASSERT(mkdir(dir, 0700) == 0);
  ASSERT_OK(mb_bench_reports_write_html(one, 1, path, &err), &err);
  ASSERT_EQ(file_has(path, "<table id=\"gpu-0\" class=\"results gpu\">"), 1);
  ASSERT_EQ(file_has(path, "<tr data-conversion=\"TEST_FAKE_GPU\">"), 1);
  ASSERT_EQ(file_has(path, "Played GPU sm_8.0"), 1);
  unlink(path);
  snprintf(path, sizeof path, "%s/report.md", dir);
  ASSERT_OK(mb_bench_reports_write_markdown(one, 1, path, &err), &err);
  ASSERT_EQ(file_has(path, "| TEST_FAKE_GPU | Played GPU sm_8.0 |"), 1);
  ASSERT_EQ(file_has(path, "1980-1980 MHz"), 1);
  unlink(path);
  snprintf(path, sizeof path, "%s/table.txt", dir);
  FILE *table = fopen(path, "w");
  ASSERT(table != NULL);
  mb_bench_report_print_table(report, table, 0);
  fclose(table);
  ASSERT_EQ(file_has(path, "TEST_FAKE_GPU on Played GPU sm_8.0: end-to-end"),
            1);
  ASSERT_EQ(file_has(path, "host latency 0.4375 ms"), 1);
  unlink(path);
  rmdir(dir);
  mb_bench_report_free(report);

  /* auto takes the GPU where the conversion can use it; cpu keeps it on
   * the CPU, with no GPU side at all. */
  report = run_one(MB_DEVICE_AUTO, 0, 0.01);
  ASSERT(report != NULL);
  ASSERT_STR_EQ(report->results[0].device, "cuda");
  ASSERT_EQ(report->results[0].gpu.used, 1);
  mb_bench_report_free(report);
  report = run_one(MB_DEVICE_CPU, 0, 0.01);
  ASSERT(report != NULL);
  ASSERT_EQ(report->results[0].status, MB_BENCH_OK);
  ASSERT_STR_EQ(report->results[0].device, "cpu");
  ASSERT_EQ(report->results[0].gpu.used, 0);
  mb_bench_report_free(report);
  return 0;
}

static int scenario_throttled(void) {
  ASSERT_EQ(register_fake(), 0);
  /* The SM clock falls to 1410 MHz and the device slows down for heat. */
  ASSERT_EQ(use_fake_nvml("1", "1980,1980,1410", "0,0,0x20"), 0);
  mb_bench_report *report = run_one(MB_DEVICE_CUDA, 0, 0.5);
  ASSERT(report != NULL);
  const mb_bench_result *r = &report->results[0];
  ASSERT_EQ(r->status, MB_BENCH_OK);
  ASSERT_EQ(r->gpu.state.available, 1);
  ASSERT(r->gpu.state.samples >= 3);
  ASSERT_NEAR(r->gpu.state.sm_clock_mhz_min, 1410, 0);
  ASSERT_NEAR(r->gpu.state.sm_clock_mhz_max, 1980, 0);
  ASSERT(r->gpu.state.throttle_reasons & 0x20);
  ASSERT(has_warning(r, "1410"));
  ASSERT(has_warning(r, "thermal"));
  mb_bench_report_free(report);
  return 0;
}

static int scenario_no_gpu(void) {
  ASSERT_EQ(register_fake(), 0);
  setenv("MODELBENCH_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
  mb_conversion_info info;
  ASSERT_OK(mb_conversion_get(fake_index, &info, NULL), NULL);
  ASSERT_EQ(info.available, 1); /* the CPU is still there */
  ASSERT_EQ(info.devices_here, 1u << MB_DEVICE_CPU);
  ASSERT_CONTAINS(info.devices_reason, "cuda: ");
  ASSERT_CONTAINS(info.devices_reason, "/nonexistent/libnvidia-ml.so.1");

  /* Asked for cuda: an error naming why, not a silent CPU run. */
  mb_bench_report *report = run_one(MB_DEVICE_CUDA, 0, 0.01);
  ASSERT(report != NULL);
  ASSERT_EQ(report->results[0].status, MB_BENCH_ERROR);
  ASSERT_CONTAINS(report->results[0].error, "cannot run on cuda here");
  ASSERT_CONTAINS(report->results[0].error, "device override");
  mb_bench_report_free(report);
  /* With the override it runs on the CPU and says so. */
  report = run_one(MB_DEVICE_CUDA, 1, 0.01);
  ASSERT(report != NULL);
  ASSERT_EQ(report->results[0].status, MB_BENCH_OK);
  ASSERT_STR_EQ(report->results[0].device, "cpu");
  ASSERT(has_warning(&report->results[0], "ran on cpu"));
  mb_bench_report_free(report);
  /* auto: the CPU, quietly. */
  report = run_one(MB_DEVICE_AUTO, 0, 0.01);
  ASSERT(report != NULL);
  ASSERT_EQ(report->results[0].status, MB_BENCH_OK);
  ASSERT_STR_EQ(report->results[0].device, "cpu");
  ASSERT_EQ(report->results[0].gpu.used, 0);
  mb_bench_report_free(report);
  return 0;
}

TEST(played_gpu_results) {
  return in_child(scenario_on_gpu);
}
TEST(throttled_gpu_warns) {
  return in_child(scenario_throttled);
}
TEST(no_gpu_placement) {
  return in_child(scenario_no_gpu);
}

TEST_MAIN(TEST_ENTRY(played_gpu_results), TEST_ENTRY(throttled_gpu_warns),
          TEST_ENTRY(no_gpu_placement))
