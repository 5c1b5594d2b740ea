/* The libtorch runtime (the TORCHSCRIPT conversion) on the small
 * TorchScript files tests/torchscript_models.py writes: the outputs it
 * fetches against those torch itself computed (a CNN, two inputs and a
 * tuple, a dict, a list, an int64 input, float16/bfloat16/quantized
 * outputs, an optional argument), inputs read from the caller's memory on
 * every run, and every error a user can cause: a missing or corrupt file,
 * a wrong number of inputs, a non-tensor argument or result, forward()
 * failing, declared outputs that do not match.
 *
 * Without libtorch (the module not built) or without torch in
 * /usr/bin/python3 the tests print why and pass, unless MB_WITH_TORCH=1
 * (`make test`), where they fail. */
#include "bench/data.h"
#include "core/ir.h"
#include "runtime/runtime.h"
#include "test.h"

#include <sys/wait.h>
#include <unistd.h>

#define ATOL 1e-5
#define RTOL 1e-4

static char models[64]; /* the generated files, a temporary folder */

/* 1: usable. 0: skip. -1: unavailable but required. */
static int libtorch_state(void) {
  static int state = -2;
  if (state != -2)
    return state;
  const char *with = getenv("MB_WITH_TORCH");
  int required = with && strcmp(with, "1") == 0;
  mb_runtime_info info = {0};
  mb__runtime_libtorch.probe(&info);
  char why[512] = "";
  if (!info.available)
    snprintf(why, sizeof why, "libtorch runtime unavailable: %s", info.reason);
  else if (system("/usr/bin/python3 -c 'import torch, numpy' 2>/dev/null"))
    snprintf(why, sizeof why, "/usr/bin/python3 lacks torch or numpy");
  if (!why[0]) {
    const char *src = getenv("MB_SOURCE_DIR");
    char cmd[1024];
    snprintf(models, sizeof models, "/tmp/mb-libtorch-XXXXXX");
    if (!src || !mkdtemp(models)) {
      fprintf(stderr, "  MB_SOURCE_DIR unset or no temporary folder\n");
      return state = -1;
    }
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 %s/tests/torchscript_models.py %s >&2", src,
             models);
    if (system(cmd)) {
      fprintf(stderr, "  %s failed\n", cmd);
      return state = -1;
    }
    return state = 1;
  }
  fprintf(stderr, "  %s: %s\n",
          required ? "required (MB_WITH_TORCH=1)" : "skipped", why);
  return state = required ? -1 : 0;
}

#define REQUIRE_LIBTORCH()                                                     \
  do {                                                                         \
    int state_ = libtorch_state();                                             \
    if (state_ < 0)                                                            \
      TEST_FAIL_("libtorch or torch unavailable");                             \
    if (state_ == 0)                                                           \
      return 0;                                                                \
  } while (0)

static void free_tensors(mb_tensor **tensors, int n) {
  for (int i = 0; i < n; i++) {
    mb_tensor_free(tensors[i]);
    tensors[i] = NULL;
  }
}

/* A generated model: the TorchScript file, an opaque mb_model declaring
 * its inputs (from NAME.in<i>.npy) and n_outputs outputs, the inputs and
 * torch's outputs. */
typedef struct fixture {
  char path[256];
  mb_model *model;
  int n_inputs, n_expected;
  mb_tensor *inputs[4], *expected[4];
} fixture;

static void fixture_free(fixture *f) {
  free_tensors(f->inputs, f->n_inputs);
  free_tensors(f->expected, f->n_expected);
  mb_model_free(f->model);
  memset(f, 0, sizeof *f);
}

static int file_exists(const char *path) {
  return access(path, F_OK) == 0;
}

/* n_outputs < 0: declare as many outputs as torch gave. */
static int fixture_load(fixture *f, const char *name, int n_outputs) {
  mb_error err = {0};
  char path[300];
  memset(f, 0, sizeof *f);
  snprintf(f->path, sizeof f->path, "%s/%s.pt", models, name);
  for (; f->n_inputs < 4; f->n_inputs++) {
    snprintf(path, sizeof path, "%s/%s.in%d.npy", models, name, f->n_inputs);
    if (!file_exists(path))
      break;
    ASSERT_OK(mb__npy_load(path, &f->inputs[f->n_inputs], &err), &err);
  }
  for (; f->n_expected < 4; f->n_expected++) {
    snprintf(path, sizeof path, "%s/%s.out%d.npy", models, name, f->n_expected);
    if (!file_exists(path))
      break;
    ASSERT_OK(mb__npy_load(path, &f->expected[f->n_expected], &err), &err);
  }
  ASSERT((f->model = mb__model_create()) != NULL);
  for (int i = 0; i < f->n_inputs; i++) {
    char input[16];
    snprintf(input, sizeof input, "in%d", i);
    ASSERT(mb__graph_add_input(f->model->graph, input, f->inputs[i]->dtype,
                               f->inputs[i]->rank, f->inputs[i]->dims, NULL,
                               &err) >= 0);
  }
  if (n_outputs < 0)
    n_outputs = f->n_expected;
  for (int i = 0; i < n_outputs; i++) {
    char output[16];
    snprintf(output, sizeof output, "out%d", i);
    ASSERT(mb__graph_add_output(f->model->graph, output, MB_DTYPE_FLOAT, -1,
                                NULL, NULL, &err) >= 0);
  }
  return 0;
}

static mb_status prepare(const fixture *f, const char *path, int threads,
                         void **session, mb_error *err) {
  mb_runtime_options options = {.threads = threads,
                                .device = MB_DEVICE_CPU,
                                .precision = MB_PRECISION_FP32,
                                .conversion = "TORCHSCRIPT",
                                .model_path = path ? path : f->path};
  *session = NULL;
  return mb__runtime_libtorch.prepare(f->model, NULL, 0, &options, session,
                                      err);
}

/* Runs the fixture's inputs and compares every output with torch's. */
static int expect_torch_outputs(const fixture *f, void *session) {
  mb_error err = {0};
  mb_tensor *outputs[4] = {0};
  ASSERT_OK(mb__runtime_libtorch.run(session,
                                     (const mb_tensor *const *)f->inputs, &err),
            &err);
  ASSERT_OK(mb__runtime_libtorch.fetch_outputs(session, outputs, &err), &err);
  for (int i = 0; i < f->n_expected; i++) {
    mb_compare_result cmp;
    ASSERT_OK(
        mb_tensor_compare(outputs[i], f->expected[i], RTOL, ATOL, &cmp, &err),
        &err);
    if (!cmp.shape_match || cmp.n_bad)
      fprintf(stderr, "  %s output %d: %s rank %d vs %s rank %d, %lld bad\n",
              f->path, i, mb_dtype_name(outputs[i]->dtype), outputs[i]->rank,
              mb_dtype_name(f->expected[i]->dtype), f->expected[i]->rank,
              (long long)cmp.n_bad);
    ASSERT(cmp.shape_match);
    ASSERT_EQ(cmp.n_bad, 0);
    char name[16];
    snprintf(name, sizeof name, "out%d", i);
    ASSERT_STR_EQ(outputs[i]->name, name);
  }
  free_tensors(outputs, f->n_expected);
  return 0;
}

/* ---- CUDA ----
 * TORCHSCRIPT on CUDA runs on the PyTorch 2.x wheel's libtorch
 * (libmodelbench-aoti.so). Whether it can is decided from files alone
 * (devices: the module is there and libtorch_cuda.so beside its
 * libtorch_cpu.so); the module then checks for a device. These run
 * first, in a child process: one process cannot hold Debian's libtorch
 * (the tests below) and the wheel's. */

/* In a child: prepares "cnn" on CUDA; on success runs it and checks the
 * device side. Writes "ok" or the error's message to fd. */
static void cuda_child(int fd) {
  fixture f;
  mb_error err = {0};
  void *session = NULL;
  char line[600] = "ok";
  mb_runtime_options options = {.threads = 1,
                                .device = MB_DEVICE_CUDA,
                                .precision = MB_PRECISION_FP32,
                                .conversion = "TORCHSCRIPT"};
  if (fixture_load(&f, "cnn", -1)) {
    snprintf(line, sizeof line, "fixture");
  } else {
    options.model_path = f.path;
    if (mb__runtime_libtorch.prepare(f.model, NULL, 0, &options, &session,
                                     &err)) {
      snprintf(line, sizeof line, "%s", err.message);
    } else {
      mb_gpu_result gpu = {0};
      double h2d[2], d2h[2], mb[2];
      if (expect_torch_outputs(&f, session) ||
          mb__runtime_libtorch.gpu_compute_ms(session) < 0 ||
          !mb__runtime_libtorch.gpu_describe(session, &gpu) ||
          !gpu.info.name[0] ||
          mb__runtime_libtorch.gpu_copies(session,
                                          (const mb_tensor *const *)f.inputs, 2,
                                          h2d, d2h, mb, &err) ||
          !(mb[0] > 0 && mb[1] > 0 && h2d[1] >= 0 && d2h[1] >= 0))
        snprintf(line, sizeof line, "the device side is wrong: %s",
                 err.message);
      mb__runtime_libtorch.release(session);
    }
    fixture_free(&f);
  }
  ssize_t written = write(fd, line, strlen(line));
  _exit(written > 0 ? 0 : 1);
}

TEST(cuda_runs_or_says_why) {
  REQUIRE_LIBTORCH();
  char reason[256] = "", got[600] = "";
  unsigned devices = mb__runtime_libtorch.devices(reason, sizeof reason);
  ASSERT(devices & (1u << MB_DEVICE_CPU));
  if (!(devices & (1u << MB_DEVICE_CUDA))) {
    /* Not even the files: the reason names the wheel's module. */
    printf("  no CUDA here: %s\n", reason);
    ASSERT(strstr(reason, "TORCHSCRIPT runs on CUDA on the PyTorch 2.x") !=
           NULL);
    return 0;
  }
  int fds[2];
  ASSERT(pipe(fds) == 0);
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    cuda_child(fds[1]);
  }
  close(fds[1]);
  ssize_t n = read(fds[0], got, sizeof got - 1);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT(n > 0);
  got[n] = '\0';
  printf("  CUDA: %s\n", got);
  /* A GPU here (its device nodes): it ran; none: the module says so. */
  if (access("/dev/nvidiactl", F_OK) == 0)
    ASSERT_STR_EQ(got, "ok");
  else
    ASSERT(strstr(got, "no CUDA device: torch::cuda::is_available() is "
                       "false") != NULL);
  return 0;
}

/* A wheel's libtorch without CUDA (no libtorch_cuda.so beside its
 * libtorch_cpu.so): CUDA is refused with why, without loading anything. */
TEST(cuda_without_libtorch_cuda) {
  REQUIRE_LIBTORCH();
  mb_runtime_info aoti = {0};
  mb__runtime_aoti.probe(&aoti);
  char dir[] = "/tmp/mb-nocuda-XXXXXX", lib[64], reason[256] = "";
  ASSERT(mkdtemp(dir) != NULL);
  snprintf(lib, sizeof lib, "%s/libtorch_cpu.so", dir);
  FILE *stub = fopen(lib, "w"); /* there, but no libtorch_cuda.so beside */
  ASSERT(stub != NULL);
  fclose(stub);
  setenv("MODELBENCH_AOTI_TORCH_LIB", lib, 1);
  unsigned script = mb__runtime_libtorch.devices(reason, sizeof reason);
  char script_reason[256];
  snprintf(script_reason, sizeof script_reason, "%s", reason);
  unsigned package = mb__runtime_aoti.devices(reason, sizeof reason);
  fixture f;
  mb_error err = {0};
  void *session = NULL;
  mb_runtime_options options = {.threads = 1,
                                .device = MB_DEVICE_CUDA,
                                .precision = MB_PRECISION_FP32,
                                .conversion = "TORCHSCRIPT"};
  mb_status status = MB_STATUS_OK;
  if (!fixture_load(&f, "cnn", -1)) {
    options.model_path = f.path;
    status = mb__runtime_libtorch.prepare(f.model, NULL, 0, &options, &session,
                                          &err);
    mb__runtime_libtorch.release(session);
    fixture_free(&f);
  }
  unsetenv("MODELBENCH_AOTI_TORCH_LIB");
  remove(lib);
  rmdir(dir);
  ASSERT_EQ(script, 1u << MB_DEVICE_CPU);
  ASSERT_EQ(package, 1u << MB_DEVICE_CPU);
  ASSERT_EQ(status, MB_STATUS_UNAVAILABLE);
  /* With the wheel's module built, the reason is its libtorch's; without
   * it, why it was not built. */
  const char *why =
      aoti.available ? "is built without CUDA: no " : "built without";
  ASSERT(strstr(reason, why) != NULL);
  ASSERT(strstr(script_reason, why) != NULL);
  ASSERT(strstr(err.message, why) != NULL);
  printf("  %s\n", err.message);
  return 0;
}

TEST(probe_reports_libtorch) {
  REQUIRE_LIBTORCH();
  mb_runtime_info info = {0};
  mb__runtime_libtorch.probe(&info);
  ASSERT_EQ(info.available, 1);
  ASSERT_STR_EQ(info.reason, "");
  ASSERT(strncmp(info.version, "1.", 2) == 0 ||
         strncmp(info.version, "2.", 2) == 0);
  printf("  libtorch %s\n", info.version);
  return 0;
}

/* Every model that returns tensors, at one and two threads, twice per
 * session (the second run reuses the wrapped inputs). */
TEST(outputs_match_torch) {
  REQUIRE_LIBTORCH();
  static const char *const names[] = {"cnn",        "two_io",   "dict_out",
                                      "list_out",   "int64_in", "reduced",
                                      "default_arg"};
  for (size_t m = 0; m < sizeof names / sizeof names[0]; m++) {
    for (int threads = 1; threads <= 2; threads++) {
      fixture f;
      mb_error err = {0};
      void *session;
      if (fixture_load(&f, names[m], -1))
        return 1;
      ASSERT(f.n_expected > 0);
      ASSERT_OK(prepare(&f, NULL, threads, &session, &err), &err);
      int failed = expect_torch_outputs(&f, session) ||
                   expect_torch_outputs(&f, session);
      mb__runtime_libtorch.release(session);
      fixture_free(&f);
      if (failed)
        TEST_FAIL_("%s at %d threads", names[m], threads);
    }
  }
  return 0;
}

/* Inputs are read from the caller's buffers at every run: new values in
 * the same buffer, another buffer, an unsigned type libtorch lacks
 * (copied wider), the optional second argument. */
TEST(inputs_follow_the_caller) {
  REQUIRE_LIBTORCH();
  fixture f;
  mb_error err = {0};
  void *session;
  mb_tensor *out[1] = {0}, *x = NULL, *scale = NULL, *u16 = NULL;
  if (fixture_load(&f, "default_arg", 1)) /* x * 3, or x * scale */
    return 1;
  ASSERT_OK(prepare(&f, NULL, 1, &session, &err), &err);
  float *in = f.inputs[0]->data;
  for (int round = 0; round < 2; round++) {
    in[0] = 1.5f + (float)round;
    ASSERT_OK(mb__runtime_libtorch.run(
                  session, (const mb_tensor *const *)f.inputs, &err),
              &err);
    ASSERT_OK(mb__runtime_libtorch.fetch_outputs(session, out, &err), &err);
    ASSERT_NEAR(((float *)out[0]->data)[0], 3.0f * in[0], 1e-6);
    free_tensors(out, 1);
  }
  ASSERT_OK(mb_tensor_clone(f.inputs[0], &x, &err), &err);
  ((float *)x->data)[1] = -2.0f;
  ASSERT_OK(
      mb__runtime_libtorch.run(session, (const mb_tensor *const *)&x, &err),
      &err);
  ASSERT_OK(mb__runtime_libtorch.fetch_outputs(session, out, &err), &err);
  ASSERT_NEAR(((float *)out[0]->data)[1], -6.0f, 1e-6);
  free_tensors(out, 1);
  mb__runtime_libtorch.release(session);

  /* uint16 has no libtorch type: the adapter passes int32 copies. */
  mb_model_free(f.model);
  ASSERT((f.model = mb__model_create()) != NULL);
  int64_t dims[2] = {2, 2};
  ASSERT(mb__graph_add_input(f.model->graph, "x", MB_DTYPE_UINT16, 2, dims,
                             NULL, &err) >= 0);
  ASSERT(mb__graph_add_output(f.model->graph, "y", MB_DTYPE_FLOAT, -1, NULL,
                              NULL, &err) >= 0);
  ASSERT_OK(mb_tensor_create(MB_DTYPE_UINT16, 2, dims, &u16, &err), &err);
  for (int i = 0; i < 4; i++)
    ((uint16_t *)u16->data)[i] = (uint16_t)(60000 + i);
  ASSERT_OK(prepare(&f, NULL, 1, &session, &err), &err);
  ASSERT_OK(
      mb__runtime_libtorch.run(session, (const mb_tensor *const *)&u16, &err),
      &err);
  ASSERT_OK(mb__runtime_libtorch.fetch_outputs(session, out, &err), &err);
  ASSERT_EQ(out[0]->dtype, MB_DTYPE_FLOAT);
  for (int i = 0; i < 4; i++)
    ASSERT_NEAR(((float *)out[0]->data)[i], 3.0 * (60000 + i), 1e-2);
  free_tensors(out, 1);
  mb__runtime_libtorch.release(session);

  /* Both arguments of forward(x, scale=None). */
  mb_model_free(f.model);
  ASSERT((f.model = mb__model_create()) != NULL);
  ASSERT(mb__graph_add_input(f.model->graph, "x", MB_DTYPE_FLOAT, 2, dims, NULL,
                             &err) >= 0);
  ASSERT(mb__graph_add_input(f.model->graph, "scale", MB_DTYPE_FLOAT, 2, dims,
                             NULL, &err) >= 0);
  ASSERT(mb__graph_add_output(f.model->graph, "y", MB_DTYPE_FLOAT, -1, NULL,
                              NULL, &err) >= 0);
  ASSERT_OK(mb_tensor_create(MB_DTYPE_FLOAT, 2, dims, &scale, &err), &err);
  for (int i = 0; i < 4; i++)
    ((float *)scale->data)[i] = 0.5f * (float)i;
  const mb_tensor *both[2] = {x, scale};
  ASSERT_OK(prepare(&f, NULL, 1, &session, &err), &err);
  ASSERT_OK(mb__runtime_libtorch.run(session, both, &err), &err);
  ASSERT_OK(mb__runtime_libtorch.fetch_outputs(session, out, &err), &err);
  for (int i = 0; i < 4; i++)
    ASSERT_NEAR(((float *)out[0]->data)[i],
                ((float *)x->data)[i] * 0.5f * (float)i, 1e-6);
  free_tensors(out, 1);
  mb__runtime_libtorch.release(session);
  mb_tensor_free(x);
  mb_tensor_free(scale);
  mb_tensor_free(u16);
  fixture_free(&f);
  return 0;
}

/* prepare fails with `status` and a one-line message containing `needle`. */
static int expect_prepare_error(const char *name, int n_inputs_kept,
                                const char *path, mb_status status,
                                const char *needle) {
  fixture f;
  mb_error err = {0};
  void *session = NULL;
  if (fixture_load(&f, name, -1))
    return 1;
  if (n_inputs_kept >= 0) { /* a model declaring fewer inputs */
    mb_model_free(f.model);
    ASSERT((f.model = mb__model_create()) != NULL);
    for (int i = 0; i < n_inputs_kept; i++)
      ASSERT(mb__graph_add_input(f.model->graph, i ? "b" : "a", MB_DTYPE_FLOAT,
                                 f.inputs[i]->rank, f.inputs[i]->dims, NULL,
                                 &err) >= 0);
  }
  ASSERT_EQ(prepare(&f, path, 1, &session, &err), status);
  ASSERT(session == NULL);
  ASSERT_EQ(err.status, status);
  ASSERT_CONTAINS(err.message, needle);
  ASSERT(!strchr(err.message, '\n'));
  printf("  %s\n", err.message);
  free(mb__runtime_libtorch.take_error_detail());
  fixture_free(&f);
  return 0;
}

TEST(prepare_errors_name_the_fault) {
  REQUIRE_LIBTORCH();
  char path[300];
  snprintf(path, sizeof path, "%s/missing.pt", models);
  if (expect_prepare_error("cnn", -1, path, MB_STATUS_IO,
                           "missing.pt: No such"))
    return 1;
  snprintf(path, sizeof path, "%s/corrupt.pt", models);
  if (expect_prepare_error("cnn", -1, path, MB_STATUS_PARSE,
                           "corrupt.pt: not a TorchScript file"))
    return 1;
  if (expect_prepare_error("two_io", 1, NULL, MB_STATUS_SHAPE,
                           "forward(a, b) takes 2 tensors but 1 input is "
                           "given"))
    return 1;
  if (expect_prepare_error("two_io", 0, NULL, MB_STATUS_SHAPE,
                           "takes 2 tensors but 0 inputs are given"))
    return 1;
  if (expect_prepare_error("int_argument", -1, NULL, MB_STATUS_SHAPE,
                           "forward(x, k) takes 2 tensors but 1 input"))
    return 1;
  if (expect_prepare_error("returns_int", -1, NULL, MB_STATUS_UNSUPPORTED,
                           "returns_int.pt: forward() returns something "
                           "other than tensors: the result[1] is int"))
    return 1;
  return 0;
}

TEST(non_tensor_argument_is_refused) {
  REQUIRE_LIBTORCH();
  fixture f;
  mb_error err = {0};
  void *session = NULL;
  if (fixture_load(&f, "int_argument", -1))
    return 1;
  int64_t one = 1;
  ASSERT(mb__graph_add_input(f.model->graph, "k", MB_DTYPE_INT64, 1, &one, NULL,
                             &err) >= 0);
  ASSERT_EQ(prepare(&f, NULL, 1, &session, &err), MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(err.message, "argument 'k' of forward(x, k) is int");
  fixture_free(&f);
  return 0;
}

/* forward() raising: a one-line message with libtorch's error, the
 * TorchScript traceback as the detail; the session stays usable. */
TEST(run_errors_keep_the_session) {
  REQUIRE_LIBTORCH();
  fixture f;
  mb_error err = {0};
  void *session;
  mb_tensor *wrong = NULL, *out[2] = {0};
  if (fixture_load(&f, "two_io", -1))
    return 1;
  ASSERT_OK(prepare(&f, NULL, 1, &session, &err), &err);
  /* Fetching before any run is an error, not a crash. */
  ASSERT_EQ(mb__runtime_libtorch.fetch_outputs(session, out, &err),
            MB_STATUS_INVALID_ARGUMENT);
  int64_t dims[2] = {2, 5};
  ASSERT_OK(mb_tensor_create(MB_DTYPE_FLOAT, 2, dims, &wrong, &err), &err);
  const mb_tensor *bad[2] = {wrong, f.inputs[1]};
  ASSERT_NE(mb__runtime_libtorch.run(session, bad, &err), MB_STATUS_OK);
  ASSERT_CONTAINS(err.message, "two_io.pt: forward() failed");
  ASSERT_CONTAINS(err.message, "mat1 and mat2 shapes cannot be multiplied");
  ASSERT(!strchr(err.message, '\n'));
  char *detail = mb__runtime_libtorch.take_error_detail();
  ASSERT_CONTAINS(detail, "Traceback of TorchScript");
  free(detail);
  ASSERT_EQ(mb__runtime_libtorch.fetch_outputs(session, out, &err),
            MB_STATUS_INVALID_ARGUMENT);
  int failed = expect_torch_outputs(&f, session);
  mb__runtime_libtorch.release(session);
  mb_tensor_free(wrong);
  fixture_free(&f);
  return failed;
}

/* A model declaring a different number of outputs than forward() gives. */
TEST(declared_outputs_must_match) {
  REQUIRE_LIBTORCH();
  fixture f;
  mb_error err = {0};
  void *session;
  mb_tensor *out[1] = {(mb_tensor *)&err}; /* must be reset to NULL */
  if (fixture_load(&f, "two_io", 1))
    return 1;
  ASSERT_OK(prepare(&f, NULL, 1, &session, &err), &err);
  ASSERT_OK(mb__runtime_libtorch.run(session,
                                     (const mb_tensor *const *)f.inputs, &err),
            &err);
  ASSERT_EQ(mb__runtime_libtorch.fetch_outputs(session, out, &err),
            MB_STATUS_SHAPE);
  ASSERT_CONTAINS(err.message,
                  "forward() returns 2 tensors but the model declares 1 "
                  "output");
  ASSERT(out[0] == NULL);
  mb__runtime_libtorch.release(session);
  fixture_free(&f);
  return 0;
}

TEST(zz_remove_generated_files) {
  if (models[0]) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", models);
    ASSERT_EQ(system(cmd), 0);
  }
  return 0;
}

TEST_MAIN(TEST_ENTRY(cuda_runs_or_says_why),
          TEST_ENTRY(cuda_without_libtorch_cuda),
          TEST_ENTRY(probe_reports_libtorch), TEST_ENTRY(outputs_match_torch),
          TEST_ENTRY(inputs_follow_the_caller),
          TEST_ENTRY(prepare_errors_name_the_fault),
          TEST_ENTRY(non_tensor_argument_is_refused),
          TEST_ENTRY(run_errors_keep_the_session),
          TEST_ENTRY(declared_outputs_must_match),
          TEST_ENTRY(zz_remove_generated_files))
