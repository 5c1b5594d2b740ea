/* Host runtimes and model manifests, through the public API: a C stand-in
 * for the Python front installs the "pytorch" host runtime, a manifest
 * describes an opaque model, and mb_benchmark_model runs the PyTorch
 * conversions in isolated workers with EAGER as the reference: results,
 * accuracy against EAGER, a failing prepare with its traceback, a crash,
 * calibration data, a missing ONNX form, task accuracy from labels, and
 * the manifest's error messages. */
#include "modelbench.h"
#include "test.h"

#include <signal.h>
#include <stdbool.h>
#include <unistd.h>

static char dir[256];

/* ---- the stand-in host: y = scale * x per conversion ---- */

typedef struct fake_session {
  float scale, offset;
  bool reverse; /* classes in reverse order: wrong top-1 */
  mb_tensor *last;
} fake_session;

static int probe(void *user, char *version, char *reason) {
  (void)user;
  (void)reason;
  snprintf(version, 256, "fake 1.0");
  return 1;
}

static mb_status fail(mb_error *err, const char *message, const char *detail) {
  err->status = MB_STATUS_UNSUPPORTED;
  snprintf(err->message, sizeof err->message, "%s", message);
  mb_host_set_error_detail(detail);
  return MB_STATUS_UNSUPPORTED;
}

static mb_status prepare(void *user, const mb_host_prepare_args *args,
                         void **session_out, mb_error *err) {
  (void)user;
  if (access(args->model_path, R_OK) != 0)
    return fail(err, "no spec file", NULL);
  if (args->n_inputs != 1 || args->n_outputs != 1 || !args->example_inputs ||
      args->example_inputs[0]->rank != 2)
    return fail(err, "unexpected signature", NULL);
  fake_session *s = calloc(1, sizeof *s);
  s->scale = 2.0f;
  if (strcmp(args->conversion, "JIT_TRACE") == 0)
    s->offset = 1e-5f;
  if (strcmp(args->conversion, "JIT_SCRIPT") == 0) {
    free(s);
    return fail(err, "RuntimeError: cannot script forward\nsecond line",
                "Traceback (most recent call last):\n  File \"net.py\"\n");
  }
  if (strcmp(args->conversion, "CHANNELS_LAST") == 0)
    raise(SIGSEGV);
  if (strcmp(args->conversion, "INT8_STATIC+EAGER") == 0) {
    /* Calibrates on the data INT8_STATIC uses: batches of the inputs. */
    if (args->n_calibration < 1 || !args->calibration ||
        args->calibration[0][0]->dims[1] != 4) {
      free(s);
      return fail(err, "no calibration data", NULL);
    }
    s->scale = 2.01f;
  }
  if (strcmp(args->conversion, "FAKE_QUANT+EAGER") == 0)
    s->reverse = true;
  *session_out = s;
  return MB_STATUS_OK;
}

static mb_status run(void *user, void *session, const mb_tensor *const *inputs,
                     mb_error *err) {
  (void)user;
  fake_session *s = session;
  mb_tensor_free(s->last);
  s->last = NULL;
  mb_status status = mb_tensor_clone(inputs[0], &s->last, err);
  if (status)
    return status;
  float *y = s->last->data;
  int64_t cols = s->last->dims[1];
  for (int64_t i = 0; i < s->last->numel; i++) {
    int64_t c = i % cols;
    float x = ((const float *)inputs[0]
                   ->data)[s->reverse ? i - c + (cols - 1 - c) : i];
    y[i] = s->scale * x + s->offset;
  }
  return MB_STATUS_OK;
}

static mb_status fetch_outputs(void *user, void *session, int n_outputs,
                               mb_tensor **outputs_out, mb_error *err) {
  (void)user;
  fake_session *s = session;
  if (n_outputs != 1 || !s->last) {
    err->status = MB_STATUS_INTERNAL;
    snprintf(err->message, sizeof err->message, "nothing to fetch");
    return MB_STATUS_INTERNAL;
  }
  return mb_tensor_clone(s->last, &outputs_out[0], err);
}

static void release(void *user, void *session) {
  (void)user;
  fake_session *s = session;
  mb_tensor_free(s->last);
  free(s);
}

static const mb_host_runtime fake = {NULL, probe,         prepare,
                                     run,  fetch_outputs, release};

/* The optional callbacks: BF16+EAGER needs what this machine lacks; a
 * JIT_TRACE session "compiled again" 3 times in its timed loop. */
static int supports(void *user, const char *conversion, char *reason) {
  (void)user;
  if (strcmp(conversion, "BF16+EAGER") != 0)
    return 1;
  snprintf(reason, 256, "needs PyTorch 9.0 or later (this is fake 1.0)");
  return 0;
}

static int recompiles(void *user, void *session) {
  (void)user;
  fake_session *s = session;
  return s->offset != 0 ? 3 : -1; /* JIT_TRACE: 3; the others cannot tell */
}

/* ---- files ---- */

static void write_text(const char *name, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
}

/* "<dir>/<name>" in one of 8 rotating buffers: fine for arguments, not
 * for pointers kept across calls (the config's paths are copied below). */
static const char *path_of(const char *name) {
  static char path[8][512];
  static int next;
  char *p = path[next++ % 8];
  snprintf(p, sizeof path[0], "%s/%s", dir, name);
  return p;
}

static const char manifest[] =
    "{\"modelbench_model\": 1, \"name\": \"Doubler\",\n"
    " \"sha256\": "
    "\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\",\n"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": "
    "[\"batch\", 4]}],\n"
    " \"outputs\": [{\"name\": \"y\", \"dtype\": \"float32\", \"shape\": "
    "[\"batch\", 4]}],\n"
    " \"formats\": {\"pytorch\": {\"path\": \"spec.json\"},\n"
    "             \"onnx\": {\"error\": \"torch.onnx.export failed: "
    "unsupported op\"}},\n"
    " \"reference\": \"EAGER\"}\n";

static int find(const char *name) {
  int index = -1;
  mb_conversion_find(name, &index, NULL);
  return index;
}

static mb_bench_config fast_config(const int *conversions, int n) {
  mb_bench_config c;
  mb_bench_config_init(&c);
  c.conversions = conversions;
  c.n_conversions = n;
  c.warmup_iterations = 1;
  c.warmup_seconds = 0;
  c.min_iterations = 3;
  c.min_seconds = 0;
  c.batch_size = 3;
  c.n_samples = 2;
  c.calibration_samples = 2;
  return c;
}

static const mb_bench_result *result_of(const mb_bench_report *r,
                                        const char *name) {
  for (int i = 0; i < r->n_results; i++)
    if (strcmp(r->results[i].conversion, name) == 0)
      return &r->results[i];
  return NULL;
}

/* ---- tests ---- */

TEST(unavailable_without_host) {
  mb_conversion_info info;
  mb_error err;
  ASSERT_OK(mb_host_runtime_set("pytorch", NULL, &err), &err);
  ASSERT_OK(mb_conversion_get(find("EAGER"), &info, &err), &err);
  ASSERT_EQ(info.available, 0);
  ASSERT_CONTAINS(info.reason, "Python front");
  ASSERT_EQ(info.format, MB_MODEL_FORMAT_PYTORCH);
  ASSERT_EQ(mb_host_runtime_set("nope", &fake, &err), MB_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(err.message, "pytorch");
  mb_host_runtime bad = fake;
  bad.run = NULL;
  ASSERT_EQ(mb_host_runtime_set("pytorch", &bad, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_OK(mb_host_runtime_set("pytorch", &fake, &err), &err);
  ASSERT_OK(mb_conversion_get(find("EAGER"), &info, &err), &err);
  ASSERT_EQ(info.available, 1);
  ASSERT(mb_conversion_applies(find("EAGER"), 1u << MB_MODEL_FORMAT_PYTORCH));
  ASSERT(!mb_conversion_applies(find("EAGER"), 1u << MB_MODEL_FORMAT_ONNX));
  ASSERT(mb_conversion_applies(find("ORT_CPU"), 1u << MB_MODEL_FORMAT_ONNX));
  return 0;
}

TEST(host_says_what_runs_here_and_what_recompiled) {
  mb_error err;
  mb_conversion_info info;
  mb_host_runtime host = fake;
  host.supports = supports;
  host.recompiles = recompiles;
  ASSERT_OK(mb_host_runtime_set("pytorch", &host, &err), &err);
  ASSERT_OK(mb_conversion_get(find("BF16+EAGER"), &info, &err), &err);
  ASSERT_EQ(info.available, 0);
  ASSERT_STR_EQ(info.reason, "needs PyTorch 9.0 or later (this is fake 1.0)");
  ASSERT_OK(mb_conversion_get(find("JIT_TRACE"), &info, &err), &err);
  ASSERT_EQ(info.available, 1);

  write_text("spec.json", "{}");
  write_text("model.json", manifest);
  int conversions[] = {find("EAGER"), find("JIT_TRACE"), find("BF16+EAGER")};
  mb_bench_config c = fast_config(conversions, 3);
  mb_bench_report *report = NULL;
  ASSERT_OK(mb_benchmark_model(path_of("model.json"), &c, &report, &err), &err);
  const mb_bench_result *eager = result_of(report, "EAGER");
  ASSERT_EQ(eager->status, MB_BENCH_OK);
  ASSERT_EQ(eager->recompiles, -1); /* the host cannot tell: not applicable */
  const mb_bench_result *trace = result_of(report, "JIT_TRACE");
  ASSERT_EQ(trace->status, MB_BENCH_OK);
  ASSERT_EQ(trace->recompiles, 3);
  bool warned = false;
  for (int i = 0; i < trace->n_warnings; i++)
    warned |= strstr(trace->warnings[i], "recompiled 3 times during the timed "
                                         "loop") != NULL;
  ASSERT(warned);
  const mb_bench_result *bf16 = result_of(report, "BF16+EAGER");
  ASSERT_EQ(bf16->status, MB_BENCH_UNAVAILABLE);
  ASSERT_CONTAINS(bf16->error, "needs PyTorch 9.0");
  /* The JSON report says it. */
  ASSERT_OK(mb_bench_report_write_json(report, path_of("r.json"), &err), &err);
  char json[1 << 16] = "";
  FILE *f = fopen(path_of("r.json"), "r");
  ASSERT(f);
  size_t n = fread(json, 1, sizeof json - 1, f);
  fclose(f);
  json[n] = '\0';
  ASSERT_CONTAINS(json, "\"recompiles\": 3");
  ASSERT_CONTAINS(json, "\"recompiles\": null");
  mb_bench_report_free(report);
  ASSERT_OK(mb_host_runtime_set("pytorch", &fake, &err), &err);
  return 0;
}

TEST(pytorch_conversions_against_eager) {
  mb_error err;
  mb_bench_report *report = NULL;
  ASSERT_OK(mb_host_runtime_set("pytorch", &fake, &err), &err);
  write_text("spec.json", "{}");
  write_text("model.json", manifest);
  unsigned formats = 0;
  ASSERT_OK(mb_model_file_formats(path_of("model.json"), &formats, &err), &err);
  ASSERT_EQ(formats, 1u << MB_MODEL_FORMAT_PYTORCH);
  const char *names[] = {"EAGER",   "JIT_TRACE",     "JIT_SCRIPT",
                         "ORT_CPU", "CHANNELS_LAST", "INT8_STATIC+EAGER"};
  int conversions[6];
  for (int i = 0; i < 6; i++)
    ASSERT((conversions[i] = find(names[i])) >= 0);
  mb_bench_config c = fast_config(conversions, 6);
  ASSERT_OK(mb_benchmark_model(path_of("model.json"), &c, &report, &err), &err);
  ASSERT_STR_EQ(report->reference, "EAGER");
  ASSERT_STR_EQ(report->model_name, "Doubler");
  ASSERT_STR_EQ(
      report->model_sha256,
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
  ASSERT_EQ(report->model_formats, 1u << MB_MODEL_FORMAT_PYTORCH);
  ASSERT_EQ(report->inputs[0].dims[0], 3); /* the batch size filled in */

  const mb_bench_result *eager = result_of(report, "EAGER");
  ASSERT_EQ(eager->status, MB_BENCH_OK);
  ASSERT_STR_EQ(eager->runtime_version, "fake 1.0");
  ASSERT(eager->has_accuracy);
  ASSERT_NEAR(eager->max_abs_err, 0, 0);
  ASSERT_STR_EQ(eager->accuracy[0].name, "y");
  ASSERT(eager->latency_ms.median > 0);

  const mb_bench_result *trace = result_of(report, "JIT_TRACE");
  ASSERT_EQ(trace->status, MB_BENCH_OK);
  ASSERT_NEAR(trace->max_abs_err, 1e-5, 1e-6);

  const mb_bench_result *script = result_of(report, "JIT_SCRIPT");
  ASSERT_EQ(script->status, MB_BENCH_ERROR);
  ASSERT_CONTAINS(script->error, "cannot script forward");
  ASSERT(!strstr(script->error, "second line"));
  ASSERT_CONTAINS(script->backtrace, "Traceback");

  const mb_bench_result *ort = result_of(report, "ORT_CPU");
  ASSERT_EQ(ort->status, MB_BENCH_ERROR);
  ASSERT_CONTAINS(ort->error, "torch.onnx.export failed: unsupported op");

  const mb_bench_result *crash = result_of(report, "CHANNELS_LAST");
  ASSERT_EQ(crash->status, MB_BENCH_CRASHED);
  ASSERT_CONTAINS(crash->error, "SIGSEGV");

  const mb_bench_result *int8 = result_of(report, "INT8_STATIC+EAGER");
  ASSERT_EQ(int8->status, MB_BENCH_OK);
  ASSERT(int8->has_accuracy);
  ASSERT(int8->max_abs_err > 0);
  ASSERT(int8->accuracy[0].cosine > 0.999);
  ASSERT_EQ(int8->inaccurate, 0);
  mb_bench_report_free(report);
  return 0;
}

/* Writes a C-order .npy (format 1.0) of `n` elements. */
static void write_npy(const char *path, const char *descr, int rank,
                      const int *dims, const void *data, size_t bytes) {
  char shape[64] = "", header[160];
  size_t used = 0;
  for (int d = 0; d < rank; d++)
    used += (size_t)snprintf(shape + used, sizeof shape - used, "%d,", dims[d]);
  int len = snprintf(header, sizeof header,
                     "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                     descr, shape);
  int pad = (64 - (10 + len + 1) % 64) % 64;
  FILE *f = fopen(path, "wb");
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  uint16_t hlen = (uint16_t)(len + pad + 1);
  fwrite(&hlen, 2, 1, f);
  fwrite(header, 1, (size_t)len, f);
  for (int i = 0; i < pad; i++)
    fputc(' ', f);
  fputc('\n', f);
  fwrite(data, 1, bytes, f);
  fclose(f);
}

TEST(task_accuracy_from_labels) {
  mb_error err;
  mb_bench_report *report = NULL;
  ASSERT_OK(mb_host_runtime_set("pytorch", &fake, &err), &err);
  write_text("spec.json", "{}");
  write_text("model.json", manifest);
  /* Two samples of 3 rows; row r's largest value is in column r % 4 (and
   * never in the mirrored column), so the labels are 0, 1, 2, 3, 0, 1. */
  char folder[512];
  int64_t labels[6];
  for (int sample = 0; sample < 2; sample++) {
    float x[12];
    for (int r = 0; r < 3; r++)
      for (int col = 0; col < 4; col++) {
        int row = sample * 3 + r;
        x[r * 4 + col] = col == row % 4 ? 1.0f : 0.1f * (float)col - 0.5f;
        labels[row] = row % 4;
      }
    snprintf(folder, sizeof folder, "%s/inputs/sample_%d", dir, sample);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", folder);
    ASSERT_EQ(system(cmd), 0);
    strcat(folder, "/x.npy");
    int dims[] = {3, 4};
    write_npy(folder, "<f4", 2, dims, x, sizeof x);
  }
  int n_labels = 6;
  write_npy(path_of("labels.npy"), "<i8", 1, &n_labels, labels, sizeof labels);
  int conversions[] = {find("EAGER"), find("FAKE_QUANT+EAGER")};
  mb_bench_config c = fast_config(conversions, 2);
  char inputs_dir[512], labels_path[512];
  snprintf(inputs_dir, sizeof inputs_dir, "%s", path_of("inputs"));
  snprintf(labels_path, sizeof labels_path, "%s", path_of("labels.npy"));
  c.isolate = 0; /* the in-process path too */
  c.inputs_dir = inputs_dir;
  c.labels_path = labels_path;
  ASSERT_OK(mb_benchmark_model(path_of("model.json"), &c, &report, &err), &err);
  const mb_bench_result *eager = result_of(report, "EAGER");
  ASSERT_EQ(eager->status, MB_BENCH_OK);
  ASSERT_EQ(eager->task_rows, 6);
  ASSERT_NEAR(eager->task_accuracy, 1.0, 0);
  const mb_bench_result *reversed = result_of(report, "FAKE_QUANT+EAGER");
  ASSERT_EQ(reversed->status, MB_BENCH_OK);
  ASSERT_EQ(reversed->task_rows, 6);
  ASSERT_NEAR(reversed->task_accuracy, 0.0, 0);
  ASSERT(reversed->accuracy[0].top1_agreement < 0.5);
  mb_bench_report_free(report);

  /* Fewer labels than rows, and labels that are not integers. */
  write_npy(path_of("short.npy"), "<i8", 1, &(int){5}, labels, 5 * 8);
  snprintf(labels_path, sizeof labels_path, "%s", path_of("short.npy"));
  ASSERT_EQ(mb_benchmark_model(path_of("model.json"), &c, &report, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "5 labels for 6 input rows");
  float f[6] = {0};
  write_npy(path_of("float.npy"), "<f4", 1, &n_labels, f, sizeof f);
  snprintf(labels_path, sizeof labels_path, "%s", path_of("float.npy"));
  ASSERT_EQ(mb_benchmark_model(path_of("model.json"), &c, &report, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "integer classes");
  return 0;
}

/* A manifest whose ONNX form is there: the IR is the ONNX graph, ONNX
 * conversions run it, and its reference is what the manifest says. */
TEST(manifest_with_onnx) {
  const char *models = getenv("MB_TEST_MODELS");
  if (!models)
    return 0; /* run by ctest, which sets it */
  char text[1024];
  snprintf(
      text, sizeof text,
      "{\"modelbench_model\": 1, \"name\": \"mlp\",\n"
      " \"inputs\": [{\"name\": \"input\"}],\n"
      " \"formats\": {\"onnx\": {\"path\": \"%s/mlp.onnx\"}},\n"
      " \"reference\": \"REFERENCE\",\n"
      " \"source\": {\"script\": \"/s/demo.py\", \"location\": "
      "\"demo.py:3\",\n"
      "            \"labels\": {\"task\": \"demo\", \"kind\": \"file\"}}}\n",
      models);
  write_text("onnx.json", text);
  mb_error err;
  mb_bench_report *report = NULL;
  int conversions[] = {find("REFERENCE"), find("EAGER")};
  mb_bench_config c = fast_config(conversions, 2);
  c.batch_size = 1;
  /* The config's labels come first; a manifest label of the same key
   * gives way. */
  const char *labels[] = {"kind=cli"};
  c.labels = labels;
  c.n_labels = 1;
  ASSERT_OK(mb_benchmark_model(path_of("onnx.json"), &c, &report, &err), &err);
  ASSERT_STR_EQ(report->reference, "REFERENCE");
  ASSERT_STR_EQ(report->model_script, "/s/demo.py");
  ASSERT_STR_EQ(report->model_location, "demo.py:3");
  ASSERT_EQ(report->n_labels, 2);
  ASSERT_STR_EQ(report->labels[0], "kind=cli");
  ASSERT_STR_EQ(report->labels[1], "task=demo");
  ASSERT_EQ(report->results[0].status, MB_BENCH_OK);
  ASSERT(report->results[0].has_accuracy);
  ASSERT_EQ(report->results[1].status, MB_BENCH_ERROR);
  ASSERT_CONTAINS(report->results[1].error, "needs a pytorch model");
  mb_bench_report_free(report);

  /* profile takes a manifest too, and says when the form is missing. */
  mb_profile *profile = NULL;
  c.isolate = 0;
  c.min_iterations = 2;
  ASSERT_OK(
      mb_profile_model(path_of("onnx.json"), "REFERENCE", &c, &profile, &err),
      &err);
  ASSERT(profile->n_nodes > 0);
  mb_profile_free(profile);
  ASSERT_OK(mb_host_runtime_set("pytorch", &fake, &err), &err);
  ASSERT_EQ(mb_profile_model(path_of("onnx.json"), "EAGER", &c, &profile, &err),
            MB_STATUS_UNSUPPORTED);
  ASSERT_CONTAINS(err.message, "needs a pytorch model");
  return 0;
}

/* Every mistake in a manifest names the file, the place and the key. */
TEST(manifest_errors) {
  static const struct {
    const char *text, *message;
  } cases[] = {
      {"{\"modelbench_model\": 1, \"inputs\": [], \"formats\": {}, "
       "\"colour\": 1}",
       "unknown key 'colour'"},
      {"{\"modelbench_model\": 2, \"inputs\": [], \"formats\": {}}",
       "unsupported manifest version"},
      {"{\"modelbench_model\": 1, \"formats\": {}}", "\"inputs\""},
      {"{\"modelbench_model\": 1, \"inputs\": [], \"formats\": {}}",
       "offers no format"},
      {"{\"modelbench_model\": 1, \"inputs\": [], \"formats\": "
       "{\"tflite\": {\"path\": \"x\"}}}",
       "unknown format"},
      {"{\"modelbench_model\": 1, \"inputs\": [{\"name\": \"x\", "
       "\"dtype\": \"float99\"}], \"formats\": {\"pytorch\": {\"path\": "
       "\"spec.json\"}}}",
       "unknown dtype: float99"},
      {"{\"modelbench_model\": 1, \"inputs\": [{\"name\": \"x\", "
       "\"shape\": [1, -5]}], \"formats\": {\"pytorch\": {\"path\": "
       "\"spec.json\"}}}",
       "bad dimension"},
      {"{\"modelbench_model\": 1, \"inputs\": [], \"formats\": "
       "{\"pytorch\": {\"path\": \"a\", \"error\": \"b\"}}}",
       "\"path\" or a string"},
      {"{\"modelbench_model\": 1, \"sha256\": \"XYZ\", \"inputs\": [], "
       "\"formats\": {\"pytorch\": {\"path\": \"a\"}}}",
       "64"},
      {"{\"modelbench_model\": 1, \"inputs\": [], \"formats\": "
       "{\"pytorch\": {\"path\": \"a\"}}, \"reference\": \"EAGRE\"}",
       "did you mean EAGER"},
      {"{\"modelbench_model\": 1, \"inputs\": [", "bad.json:1:"},
      {"{\"modelbench_model\": 1, \"inputs\": [], \"formats\": "
       "{\"pytorch\": {\"path\": \"a\"}}, \"inputs_dir\": 3}",
       "\"inputs_dir\""},
      {"{\"modelbench_model\": 1, \"inputs\": [], \"formats\": "
       "{\"pytorch\": {\"path\": \"a\"}}, \"source\": \"x.py\"}",
       "\"source\" must be an object"},
      {"{\"modelbench_model\": 1, \"inputs\": [], \"formats\": "
       "{\"pytorch\": {\"path\": \"a\"}}, \"source\": {\"file\": 1}}",
       "unknown key 'file' in \"source\""},
      {"{\"modelbench_model\": 1, \"inputs\": [], \"formats\": "
       "{\"pytorch\": {\"path\": \"a\"}}, \"source\": {\"labels\": "
       "{\"n\": 1}}}",
       "a label's value must be a string: n"},
      {"{\"modelbench_model\": 1, \"inputs\": [], \"formats\": "
       "{\"pytorch\": {\"path\": \"a\"}}, \"source\": {\"labels\": "
       "{\"a b\": \"x\"}}}",
       "bad label"},
  };
  mb_error err;
  mb_bench_report *report = NULL;
  mb_bench_config c;
  mb_bench_config_init(&c);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    write_text("bad.json", cases[i].text);
    mb_status status =
        mb_benchmark_model(path_of("bad.json"), &c, &report, &err);
    if (status == MB_STATUS_OK)
      TEST_FAIL_("case %zu accepted", i);
    if (!strstr(err.message, cases[i].message))
      TEST_FAIL_("case %zu: \"%s\" lacks \"%s\"", i, err.message,
                 cases[i].message);
  }
  return 0;
}

/* A TorchScript file declares no input shapes: --shape gives them. */
TEST(torchscript_needs_shapes) {
  write_text("model.pt", "PK\x03\x04 not really a zip");
  mb_error err;
  mb_bench_report *report = NULL;
  mb_bench_config c;
  mb_bench_config_init(&c);
  unsigned formats = 0;
  ASSERT_OK(mb_model_file_formats(path_of("model.pt"), &formats, &err), &err);
  ASSERT_EQ(formats, 1u << MB_MODEL_FORMAT_TORCHSCRIPT);
  ASSERT_EQ(mb_benchmark_model(path_of("model.pt"), &c, &report, &err),
            MB_STATUS_DYNAMIC);
  ASSERT_CONTAINS(err.message, "--shape");
  /* With shapes, the ONNX conversions say what the model is. */
  mb_input_shape shape = {"x", 2, {1, 4}};
  int conversions[] = {find("ORT_CPU")};
  c = fast_config(conversions, 1);
  c.batch_size = 1;
  c.shapes.n_shapes = 1;
  c.shapes.shapes = &shape;
  ASSERT_OK(mb_benchmark_model(path_of("model.pt"), &c, &report, &err), &err);
  ASSERT_EQ(report->results[0].status, MB_BENCH_ERROR);
  ASSERT_CONTAINS(report->results[0].error,
                  "needs a onnx model; this model is torchscript");
  ASSERT_STR_EQ(report->reference, "");
  mb_bench_report_free(report);
  return 0;
}

static const mb_test_case cases[] = {
    TEST_ENTRY(unavailable_without_host),
    TEST_ENTRY(pytorch_conversions_against_eager),
    TEST_ENTRY(host_says_what_runs_here_and_what_recompiled),
    TEST_ENTRY(task_accuracy_from_labels),
    TEST_ENTRY(manifest_with_onnx),
    TEST_ENTRY(manifest_errors),
    TEST_ENTRY(torchscript_needs_shapes),
};

int main(int argc, char **argv) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/mb-host-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (!mkdtemp(dir))
    return 1;
  int rc = mb_test_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    rc = 1;
  return rc;
}
