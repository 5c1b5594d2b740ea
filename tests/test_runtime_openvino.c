/* The OpenVINO adapter against the reference adapter: every bundled model,
 * with its inputs fixed to the run's shapes and left dynamic, at two thread
 * counts, on the same generated inputs; bf16 where the CPU has it; plus its
 * error paths (garbage bytes, an operator OpenVINO lacks, a wrong input
 * type, fetching before running) and its per-node profile.
 *
 * Without OpenVINO (not fetched, or built without its headers) the tests
 * print the probe's reason and pass, unless MB_REQUIRE_OPENVINO=1, where
 * they fail. */
#include "core/ir.h"
#include "runtime/engine.h"
#include "runtime/runtime.h"
#include "runtime_fixture.h"
#include "test.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#define ATOL 1e-4
#define RTOL 1e-3
#define SEED 7

/* 1: ORT usable. 0: unavailable, skip. -1: unavailable but required. */
static int ov_state(void) {
  static int state = -2;
  if (state != -2)
    return state;
  mb_runtime_info info = {0};
  mb__runtime_openvino.probe(&info);
  const char *require = getenv("MB_REQUIRE_OV");
  if (info.available) {
    state = 1;
  } else if (require && strcmp(require, "1") == 0) {
    fprintf(stderr, "  OpenVINO is required (MB_REQUIRE_OV=1): %s\n",
            info.reason);
    state = -1;
  } else {
    fprintf(stderr, "  skipped: OpenVINO unavailable: %s\n", info.reason);
    state = 0;
  }
  return state;
}

#define REQUIRE_OV()                                                           \
  do {                                                                         \
    int state_ = ov_state();                                                   \
    if (state_ < 0)                                                            \
      TEST_FAIL_("OpenVINO unavailable");                                      \
    if (state_ == 0)                                                           \
      return 0;                                                                \
  } while (0)

TEST(probe_reports_version) {
  REQUIRE_OV();
  mb_runtime_info info = {0};
  mb__runtime_openvino.probe(&info);
  ASSERT_EQ(info.available, 1);
  ASSERT_STR_EQ(info.reason, "");
  unsigned major, minor, patch;
  char extra;
  ASSERT_EQ(sscanf(info.version, "%u.%u.%u%c", &major, &minor, &patch, &extra),
            3);
  ASSERT(major >= 2024);
  printf("  openvino %s\n", info.version);
  /* The public registry reports the same. */
  int found = 0;
  for (int i = 0; i < mb_runtime_count(); i++) {
    mb_runtime_info public_info = {0};
    ASSERT_OK(mb_runtime_get(i, &public_info, NULL), NULL);
    if (strcmp(public_info.name, "openvino") == 0) {
      ASSERT_STR_EQ(public_info.version, info.version);
      found = 1;
    }
  }
  ASSERT(found);
  return 0;
}

/* Every bundled model: OpenVINO (shapes fixed or dynamic x two thread
 * counts) matches the reference, and running twice gives the same outputs. */
TEST(bundled_models_match_reference) {
  REQUIRE_OV();
  const char *dir = getenv("MB_TEST_MODELS");
  if (!dir || !*dir)
    TEST_FAIL_("MB_TEST_MODELS is not set (ctest sets it)");
  DIR *d = opendir(dir);
  if (!d)
    TEST_FAIL_("cannot open %s", dir);
  static const int levels[] = {0, 1}; /* 1: static shapes */
  static const int threads[] = {1, 2};
  int n_models = 0, rc = 0;
  struct dirent *entry;
  while (!rc && (entry = readdir(d))) {
    size_t len = strlen(entry->d_name);
    if (len < 6 || strcmp(entry->d_name + len - 5, ".onnx") != 0)
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, entry->d_name);
    fixture f;
    mb_tensor *expected[16] = {0}, *actual[16] = {0}, *again[16] = {0};
    double max_abs = 0;
    rc = fixture_load(&f, path, SEED);
    if (!rc && f.n_outputs > 16)
      rc = 1;
    mb_runtime_options ref_options = {.threads = 1};
    if (!rc)
      rc = run_once(&mb__runtime_reference, &f, &ref_options, expected);
    for (size_t l = 0; !rc && l < MB_ARRAY_COUNT(levels); l++)
      for (size_t t = 0; !rc && t < MB_ARRAY_COUNT(threads); t++) {
        mb_runtime_options options = {
            .threads = threads[t],
            .opt_level = MB_GRAPH_OPT_ALL,
            .example_inputs =
                levels[l] ? (const mb_tensor *const *)f.inputs : NULL};
        mb_error err = {0};
        void *session = NULL;
        mb_status status = mb__runtime_openvino.prepare(
            f.model, f.bytes, f.size, &options, &session, &err);
        for (int pass = 0; pass < 2 && !status; pass++) {
          status = mb__runtime_openvino.run(
              session, (const mb_tensor *const *)f.inputs, &err);
          if (!status)
            status = mb__runtime_openvino.fetch_outputs(
                session, pass ? again : actual, &err);
        }
        mb__runtime_openvino.release(session);
        if (status) {
          fprintf(stderr, "  %s (static %d, %d threads): %s\n", entry->d_name,
                  (int)levels[l], threads[t], err.message);
          rc = 1;
          break;
        }
        double unused = 0;
        rc = compare_outputs(actual, expected, f.n_outputs, ATOL, RTOL,
                             &max_abs);
        /* The same session on the same inputs: stable outputs (a stale or
         * freed output buffer would show here). */
        if (!rc)
          rc = compare_outputs(again, actual, f.n_outputs, 1e-6, 0, &unused);
        if (rc)
          fprintf(stderr, "  in %s (static %d, %d threads)\n", entry->d_name,
                  (int)levels[l], threads[t]);
        free_tensors(actual, f.n_outputs);
        free_tensors(again, f.n_outputs);
      }
    if (!rc)
      printf("  %-24s OpenVINO vs reference max abs err %.3g\n", entry->d_name,
             max_abs);
    free_tensors(expected, f.n_outputs);
    fixture_free(&f);
    n_models++;
  }
  closedir(d);
  if (rc)
    return rc;
  ASSERT(n_models >= 1);
  return 0;
}

/* New input buffers between runs (the engine cycles through samples): each
 * run sees its own inputs, not the wrapped buffers of an earlier run. */
TEST(new_input_buffers_are_used) {
  REQUIRE_OV();
  char path[4096];
  ASSERT_EQ(first_model(path, sizeof path), 0);
  fixture a, b;
  ASSERT_EQ(fixture_load(&a, path, 1), 0);
  ASSERT_EQ(fixture_load(&b, path, 2), 0);
  mb_tensor *expected_a[4] = {0}, *expected_b[4] = {0}, *got[4] = {0};
  mb_runtime_options options = {.threads = 1, .opt_level = MB_GRAPH_OPT_ALL};
  int rc = run_once(&mb__runtime_reference, &a, &options, expected_a);
  if (!rc)
    rc = run_once(&mb__runtime_reference, &b, &options, expected_b);
  mb_error err = {0};
  void *session = NULL;
  double max_abs = 0;
  if (!rc && mb__runtime_openvino.prepare(a.model, a.bytes, a.size, &options,
                                          &session, &err))
    rc = 1;
  const fixture *order[] = {&a, &b, &a};
  mb_tensor **expect[] = {expected_a, expected_b, expected_a};
  for (int i = 0; i < 3 && !rc; i++) {
    if (mb__runtime_openvino.run(
            session, (const mb_tensor *const *)order[i]->inputs, &err) ||
        mb__runtime_openvino.fetch_outputs(session, got, &err)) {
      rc = 1;
      break;
    }
    rc = compare_outputs(got, expect[i], a.n_outputs, ATOL, RTOL, &max_abs);
    free_tensors(got, a.n_outputs);
  }
  if (rc && err.message[0])
    fprintf(stderr, "  %s\n", err.message);
  mb__runtime_openvino.release(session);
  free_tensors(expected_a, a.n_outputs);
  free_tensors(expected_b, b.n_outputs);
  fixture_free(&a);
  fixture_free(&b);
  return rc;
}

TEST(garbage_bytes_fail_cleanly) {
  REQUIRE_OV();
  char path[4096];
  ASSERT_EQ(first_model(path, sizeof path), 0);
  mb_error err = {0};
  mb_model *model = NULL;
  ASSERT_OK(mb_model_load(path, &model, &err), &err);
  static const char garbage[] = "this is not an ONNX model";
  void *session = NULL;
  mb_runtime_options options = {.threads = 1, .opt_level = MB_GRAPH_OPT_ALL};
  mb_status status = mb__runtime_openvino.prepare(
      model, garbage, sizeof garbage, &options, &session, &err);
  mb_model_free(model);
  ASSERT_NE(status, MB_STATUS_OK);
  ASSERT(session == NULL);
  ASSERT_CONTAINS(err.message, "openvino: cannot read the model");
  ASSERT(strchr(err.message, '\n') == NULL);
  return 0;
}

/* A well-formed model with an operator OpenVINO does not have. */
TEST(unknown_operator_fails_cleanly) {
  REQUIRE_OV();
  mb_error err = {0};
  char path[512];
  const char *tmp = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/mb_test_ov_%ld.onnx",
           tmp && *tmp ? tmp : "/tmp", (long)getpid());
  mb_model *model = mb__model_create();
  ASSERT(model != NULL);
  int64_t dims[] = {1, 4};
  const char *in[] = {"x"}, *out[] = {"y"};
  int rc = 1;
  void *bytes = NULL, *session = NULL;
  size_t size = 0;
  mb_runtime_options options = {.threads = 1, .opt_level = MB_GRAPH_OPT_ALL};
  if (mb__model_set_opset(model, "", 17, &err) ||
      mb__graph_add_input(model->graph, "x", MB_DTYPE_FLOAT, 2, dims, NULL,
                          &err) < 0 ||
      mb__graph_add_node(model->graph, "NoSuchOperator", "", "bad", 1, in, 1,
                         out, &err) < 0 ||
      mb__graph_add_output(model->graph, "y", MB_DTYPE_FLOAT, 2, dims, NULL,
                           &err) < 0 ||
      mb__graph_finalize(model->graph, &err) ||
      mb_model_save(model, path, NULL, &err) ||
      mb__read_file(path, &bytes, &size, &err)) {
    fprintf(stderr, "  cannot build the test model: %s\n", err.message);
    goto done;
  }
  mb_status status = mb__runtime_openvino.prepare(model, bytes, size, &options,
                                                  &session, &err);
  if (status == MB_STATUS_OK || session) {
    fprintf(stderr, "  OpenVINO accepted a model with NoSuchOperator\n");
    goto done;
  }
  printf("  %s: %s\n", mb_status_string(status), err.message);
  if (!strstr(err.message, "NoSuchOperator") ||
      strchr(err.message, '\n') != NULL) {
    fprintf(stderr, "  message does not name the operator: %s\n", err.message);
    goto done;
  }
  rc = 0;
done:
  mb__runtime_openvino.release(session);
  free(bytes);
  mb_model_free(model);
  unlink(path);
  return rc;
}

/* Without the serialised bytes the adapter loads the model's file. */
TEST(prepare_from_model_path) {
  REQUIRE_OV();
  char path[4096];
  ASSERT_EQ(first_model(path, sizeof path), 0);
  fixture f;
  ASSERT_EQ(fixture_load(&f, path, SEED), 0);
  mb_tensor *expected[4] = {0}, *got[4] = {0};
  mb_runtime_options options = {.threads = 1, .opt_level = MB_GRAPH_OPT_BASIC};
  mb_error err = {0};
  void *session = NULL;
  double max_abs = 0;
  int rc = run_once(&mb__runtime_reference, &f, &options, expected);
  if (!rc && (mb__runtime_openvino.prepare(f.model, NULL, 0, &options, &session,
                                           &err) ||
              mb__runtime_openvino.run(
                  session, (const mb_tensor *const *)f.inputs, &err) ||
              mb__runtime_openvino.fetch_outputs(session, got, &err))) {
    fprintf(stderr, "  %s\n", err.message);
    rc = 1;
  }
  if (!rc)
    rc = compare_outputs(got, expected, f.n_outputs, ATOL, RTOL, &max_abs);
  mb__runtime_openvino.release(session);
  free_tensors(expected, f.n_outputs);
  free_tensors(got, f.n_outputs);
  fixture_free(&f);
  return rc;
}

TEST(wrong_input_type_and_early_fetch_fail_cleanly) {
  REQUIRE_OV();
  char path[4096];
  ASSERT_EQ(first_model(path, sizeof path), 0);
  fixture f;
  ASSERT_EQ(fixture_load(&f, path, SEED), 0);
  mb_runtime_options options = {.threads = 1, .opt_level = MB_GRAPH_OPT_ALL};
  mb_error err = {0};
  void *session = NULL;
  mb_tensor *wrong = NULL, *outputs[4] = {0};
  int rc = 1;
  if (mb__runtime_openvino.prepare(f.model, f.bytes, f.size, &options, &session,
                                   &err) ||
      mb_tensor_create(MB_DTYPE_INT64, f.inputs[0]->rank, f.inputs[0]->dims,
                       &wrong, &err)) {
    fprintf(stderr, "  %s\n", err.message);
    goto done;
  }
  mb_status status = mb__runtime_openvino.fetch_outputs(session, outputs, &err);
  if (status != MB_STATUS_INVALID_ARGUMENT || outputs[0]) {
    fprintf(stderr, "  fetch before run: %s\n", mb_status_string(status));
    goto done;
  }
  const mb_tensor *inputs[] = {wrong};
  status = mb__runtime_openvino.run(session, inputs, &err);
  if (status != MB_STATUS_SHAPE || !strstr(err.message, "int64") ||
      !strstr(err.message, "float32")) {
    fprintf(stderr, "  wrong input type: %s: %s\n", mb_status_string(status),
            err.message);
    goto done;
  }
  /* The session still works after the failed run. */
  if (mb__runtime_openvino.run(session, (const mb_tensor *const *)f.inputs,
                               &err) ||
      mb__runtime_openvino.fetch_outputs(session, outputs, &err)) {
    fprintf(stderr, "  after the failure: %s\n", err.message);
    goto done;
  }
  rc = 0;
done:
  free_tensors(outputs, f.n_outputs);
  mb_tensor_free(wrong);
  mb__runtime_openvino.release(session);
  fixture_free(&f);
  return rc;
}

/* Per-node profile from OpenVINO's performance counters: the CPU plugin's
 * nodes, each with the kernel it ran, summed over the profiled runs. */
TEST(profile_collects_nodes_and_kernels) {
  REQUIRE_OV();
  char model_path[4096];
  ASSERT_EQ(first_model(model_path, sizeof model_path), 0);
  fixture f;
  ASSERT_EQ(fixture_load(&f, model_path, SEED), 0);
  mb_runtime_options options = {
      .threads = 1, .opt_level = MB_GRAPH_OPT_ALL, .profile = 1};
  mb_error err = {0};
  void *session = NULL;
  mb_profile profile = {0};
  int rc = 1;
  if (mb__runtime_openvino.prepare(f.model, f.bytes, f.size, &options, &session,
                                   &err)) {
    fprintf(stderr, "  %s\n", err.message);
    goto done;
  }
  mb__runtime_openvino.profile_reset(session, 2);
  for (int i = 0; i < 3; i++)
    if (mb__runtime_openvino.run(session, (const mb_tensor *const *)f.inputs,
                                 &err)) {
      fprintf(stderr, "  %s\n", err.message);
      goto done;
    }
  profile.iterations = 3;
  if (mb__runtime_openvino.profile_collect(session, &profile, &err)) {
    fprintf(stderr, "  %s\n", err.message);
    goto done;
  }
  mb__profile_finish(&profile);
  if (profile.n_segments != 1 || profile.n_nodes < 2) {
    fprintf(stderr, "  %d segments, %d nodes\n", profile.n_segments,
            profile.n_nodes);
    goto done;
  }
  int convs = 0;
  for (int i = 0; i < profile.n_nodes; i++) {
    /* A node the plugin skips on some runs (a reorder it finds in place)
     * has fewer; none has more. */
    if (profile.nodes[i].runs < 1 || profile.nodes[i].runs > 3 ||
        profile.nodes[i].mean_ms < 0) {
      fprintf(stderr, "  node %s: %lld runs, %g ms\n", profile.nodes[i].name,
              (long long)profile.nodes[i].runs, profile.nodes[i].mean_ms);
      goto done;
    }
    convs += strstr(profile.nodes[i].op_type, "Convolution") != NULL &&
             profile.nodes[i].runs == 3;
  }
  printf("  %d nodes, slowest %s (%s, %s) %.4f ms\n", profile.n_nodes,
         profile.nodes[0].name, profile.nodes[0].op_type,
         profile.nodes[0].kernel, profile.nodes[0].mean_ms);
  rc = convs > 0 ? 0 : 1;
  if (rc)
    fprintf(stderr, "  no Convolution among the profiled nodes\n");
done:
  mb__profile_clear(&profile);
  mb__runtime_openvino.release(session);
  fixture_free(&f);
  return rc;
}

/* BF16 as the inference precision where the CPU has it: close to fp32,
 * not identical to it (so the hint reached the plugin). */
TEST(bf16_precision_is_applied) {
  REQUIRE_OV();
  static const char *const flags[] = {"avx512_bf16", "amx_bf16"};
  if (mb__engine_cpu_has(flags, 2) <= 0) {
    printf("  skipped: no native bf16 on this CPU\n");
    return 0;
  }
  char path[4096];
  ASSERT_EQ(first_model(path, sizeof path), 0);
  fixture f;
  ASSERT_EQ(fixture_load(&f, path, SEED), 0);
  mb_tensor *fp32[4] = {0}, *bf16[4] = {0};
  mb_runtime_options options = {.threads = 1,
                                .opt_level = MB_GRAPH_OPT_ALL,
                                .precision = MB_PRECISION_FP32};
  int rc = run_once(&mb__runtime_openvino, &f, &options, fp32);
  options.precision = MB_PRECISION_BF16;
  if (!rc)
    rc = run_once(&mb__runtime_openvino, &f, &options, bf16);
  mb_error err = {0};
  mb_compare_result r = {0};
  if (!rc && mb_tensor_compare(bf16[0], fp32[0], 0, 0, &r, &err))
    rc = 1;
  if (!rc) {
    printf("  bf16 vs fp32: max abs %.3g, cosine %.6f\n", r.max_abs_err,
           r.cosine);
    /* bf16 keeps 8 bits of mantissa: it differs, and stays close. */
    if (r.max_abs_err == 0 || r.cosine < 0.99)
      rc = 1;
  }
  free_tensors(fp32, f.n_outputs);
  free_tensors(bf16, f.n_outputs);
  fixture_free(&f);
  return rc;
}

TEST_MAIN(TEST_ENTRY(probe_reports_version),
          TEST_ENTRY(bundled_models_match_reference),
          TEST_ENTRY(new_input_buffers_are_used),
          TEST_ENTRY(garbage_bytes_fail_cleanly),
          TEST_ENTRY(unknown_operator_fails_cleanly),
          TEST_ENTRY(prepare_from_model_path),
          TEST_ENTRY(wrong_input_type_and_early_fetch_fail_cleanly),
          TEST_ENTRY(profile_collects_nodes_and_kernels),
          TEST_ENTRY(bf16_precision_is_applied))
