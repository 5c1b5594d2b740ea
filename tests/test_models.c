/* The bundled models (build/models, written by mb-gen-models): declared
 * inputs and outputs, a run through the reference interpreter with finite,
 * O(1) outputs of the right shape, batch independence, determinism, and the
 * save -> load round trip giving bit-identical outputs. */
#include "test.h"

#include "modelbench.h"

#include <stdbool.h>
#include <unistd.h>

#define MAX_IO 2

typedef struct io_spec {
  const char *name;
  int rank;
  int64_t dims[MB_MAX_RANK]; /* dims[0] is the dynamic "batch" */
} io_spec;

typedef struct model_spec {
  const char *file;
  io_spec input, output;
  bool softmax_rows; /* output rows sum to 1 */
} model_spec;

static const model_spec models[] = {
    {"mlp.onnx", {"input", 2, {-1, 784}}, {"probs", 2, {-1, 10}}, true},
    {"small_cnn.onnx",
     {"input", 4, {-1, 3, 32, 32}},
     {"logits", 2, {-1, 10}},
     false},
    {"resnet_blocks.onnx",
     {"input", 4, {-1, 3, 64, 64}},
     {"logits", 2, {-1, 100}},
     false},
    {"transformer_block.onnx",
     {"input", 3, {-1, 32, 64}},
     {"output", 3, {-1, 32, 64}},
     false},
};

enum { BATCH = 2 };

static const char *models_dir(void) {
  const char *dir = getenv("MB_TEST_MODELS");
  return dir && *dir ? dir : NULL;
}

static int model_path(const char *file, char *buf, size_t size) {
  const char *dir = models_dir();
  if (!dir) {
    fprintf(stderr, "  MB_TEST_MODELS is not set (ctest sets it)\n");
    return 1;
  }
  snprintf(buf, size, "%s/%s", dir, file);
  return 0;
}

static int check_info(const mb_value_info *info, const io_spec *want) {
  ASSERT_STR_EQ(info->name, want->name);
  ASSERT_EQ(info->dtype, MB_DTYPE_FLOAT);
  ASSERT_EQ(info->rank, want->rank);
  ASSERT(info->dims[0] < 0);
  ASSERT_STR_EQ(info->dim_params[0], "batch");
  for (int i = 1; i < want->rank; i++)
    ASSERT_EQ(info->dims[i], want->dims[i]);
  return 0;
}

/* Deterministic input in [-1, 1) with `batch` rows, row r the same for any
 * batch size (so batch-1 and batch-2 runs can be compared). */
static mb_tensor *make_input(const io_spec *spec, int64_t batch) {
  int64_t dims[MB_MAX_RANK];
  memcpy(dims, spec->dims, sizeof dims);
  dims[0] = batch;
  mb_tensor *t = NULL;
  if (mb_tensor_create(MB_DTYPE_FLOAT, spec->rank, dims, &t, NULL))
    return NULL;
  float *x = t->data;
  for (int64_t i = 0; i < t->numel; i++) {
    uint32_t h = (uint32_t)i * 2654435761u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    x[i] = (float)((double)(h >> 8) / (double)(1u << 23) - 1.0);
  }
  return t;
}

/* Runs the model once; *out receives the output tensor. */
static int run_model(const mb_model *model, const mb_tensor *input, int threads,
                     mb_tensor **out) {
  mb_error err_storage = {0}, *err = &err_storage;
  mb_session *session = NULL;
  mb_session_options opts = {threads};
  ASSERT_OK(mb_session_create(model, &opts, &session, err), err);
  const mb_tensor *inputs[1] = {input};
  mb_status s = mb_session_run(session, 1, inputs, 1, out, err);
  mb_session_free(session);
  ASSERT_OK(s, err);
  return 0;
}

static int bits_equal(const mb_tensor *a, const mb_tensor *b) {
  return a->dtype == b->dtype && a->rank == b->rank &&
         memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank) == 0 &&
         a->nbytes == b->nbytes && memcmp(a->data, b->data, a->nbytes) == 0;
}

static int check_output(const mb_tensor *y, const model_spec *spec,
                        int64_t batch) {
  ASSERT_EQ(y->dtype, MB_DTYPE_FLOAT);
  ASSERT_EQ(y->rank, spec->output.rank);
  ASSERT_EQ(y->dims[0], batch);
  for (int i = 1; i < y->rank; i++)
    ASSERT_EQ(y->dims[i], spec->output.dims[i]);
  const float *v = y->data;
  double sum_sq = 0, max_abs = 0;
  for (int64_t i = 0; i < y->numel; i++) {
    if (!isfinite(v[i]))
      TEST_FAIL_("%s: output element %lld is %g", spec->file, (long long)i,
                 (double)v[i]);
    sum_sq += (double)v[i] * v[i];
    max_abs = fmax(max_abs, fabs(v[i]));
  }
  /* Weights are scaled so activations stay O(1): neither vanishing nor
   * exploding through the layers. */
  double rms = sqrt(sum_sq / (double)y->numel);
  if (!(rms > 1e-3 && max_abs < 100))
    TEST_FAIL_("%s: output rms %g, max |y| %g: not O(1)", spec->file, rms,
               max_abs);
  if (spec->softmax_rows) {
    int64_t cols = y->numel / batch;
    for (int64_t r = 0; r < batch; r++) {
      double row = 0;
      for (int64_t c = 0; c < cols; c++)
        row += v[r * cols + c];
      ASSERT_NEAR(row, 1.0, 1e-4);
    }
  }
  return 0;
}

static int check_model(const model_spec *spec) {
  char path[4096], saved[4096], resaved[4096 + 8];
  if (model_path(spec->file, path, sizeof path))
    return 1;
  const char *tmp = getenv("TMPDIR");
  snprintf(saved, sizeof saved, "%s/mb_test_models_%ld_%s",
           tmp && *tmp ? tmp : "/tmp", (long)getpid(), spec->file);
  snprintf(resaved, sizeof resaved, "%s.2", saved);

  int rc = 1;
  mb_error err = {0};
  mb_model *model = NULL, *reloaded = NULL, *reloaded2 = NULL;
  mb_tensor *x2 = NULL, *x1 = NULL;
  mb_tensor *y2 = NULL, *y2_again = NULL, *y2_threads = NULL, *y1 = NULL;
  mb_tensor *y2_reloaded = NULL;
  void *bytes1 = NULL, *bytes2 = NULL;
  FILE *f1 = NULL, *f2 = NULL;
  size_t size1 = 0, size2 = 0;
  mb_value_info info;
  mb_compare_result cmp = {0};

  if (mb_model_load(path, &model, &err)) {
    fprintf(stderr, "  %s: %s\n", spec->file, err.message);
    goto done;
  }
  if (mb_model_input_count(model) != 1 || mb_model_output_count(model) != 1) {
    fprintf(stderr, "  %s: %d inputs, %d outputs; expected 1 and 1\n",
            spec->file, mb_model_input_count(model),
            mb_model_output_count(model));
    goto done;
  }
  if (mb_model_input_info(model, 0, &info, &err) ||
      check_info(&info, &spec->input))
    goto done;
  if (mb_model_output_info(model, 0, &info, &err) ||
      check_info(&info, &spec->output))
    goto done;

  x2 = make_input(&spec->input, BATCH);
  x1 = make_input(&spec->input, 1);
  if (!x2 || !x1)
    goto done;
  if (run_model(model, x2, 1, &y2) || check_output(y2, spec, BATCH))
    goto done;

  /* Same input, same bits. */
  if (run_model(model, x2, 1, &y2_again))
    goto done;
  if (!bits_equal(y2, y2_again)) {
    fprintf(stderr, "  %s: two runs differ\n", spec->file);
    goto done;
  }

  /* More threads and a smaller batch change only rounding. */
  if (run_model(model, x2, 2, &y2_threads) ||
      mb_tensor_compare(y2_threads, y2, 1e-4, 1e-5, &cmp, &err) ||
      !cmp.shape_match || cmp.n_bad) {
    fprintf(stderr, "  %s: 2 threads differ from 1 (max abs err %g)\n",
            spec->file, cmp.max_abs_err);
    goto done;
  }
  if (run_model(model, x1, 1, &y1) || check_output(y1, spec, 1))
    goto done;
  for (int64_t i = 0; i < y1->numel; i++) {
    float a = ((const float *)y2->data)[i], b = ((const float *)y1->data)[i];
    if (fabsf(a - b) > 1e-5f + 1e-4f * fabsf(a)) {
      fprintf(stderr, "  %s: batch 1 differs from row 0 of batch %d at %lld\n",
              spec->file, BATCH, (long long)i);
      goto done;
    }
  }

  /* Round trip: save -> load -> run gives the same bits, and saving the
   * reloaded model again gives the same file. */
  if (mb_model_save(model, saved, NULL, &err) ||
      mb_model_load(saved, &reloaded, &err) ||
      mb_model_save(reloaded, resaved, NULL, &err) ||
      mb_model_load(resaved, &reloaded2, &err)) {
    fprintf(stderr, "  %s: round trip: %s\n", spec->file, err.message);
    goto done;
  }
  if (run_model(reloaded2, x2, 1, &y2_reloaded))
    goto done;
  if (!bits_equal(y2, y2_reloaded)) {
    fprintf(stderr, "  %s: outputs differ after save -> load\n", spec->file);
    goto done;
  }
  f1 = fopen(saved, "rb");
  f2 = fopen(resaved, "rb");
  if (f1 && f2 && fseek(f1, 0, SEEK_END) == 0 && fseek(f2, 0, SEEK_END) == 0) {
    size1 = (size_t)ftell(f1);
    size2 = (size_t)ftell(f2);
    rewind(f1);
    rewind(f2);
    bytes1 = malloc(size1 + 1);
    bytes2 = malloc(size2 + 1);
  }
  if (!(bytes1 && bytes2 && size1 == size2 &&
        fread(bytes1, 1, size1, f1) == size1 &&
        fread(bytes2, 1, size2, f2) == size2 &&
        memcmp(bytes1, bytes2, size1) == 0)) {
    fprintf(stderr, "  %s: saving a reloaded model changes the file\n",
            spec->file);
    goto done;
  }
  if (strcmp(mb_model_sha256(reloaded), mb_model_sha256(reloaded2)) != 0) {
    fprintf(stderr, "  %s: identical files hash differently\n", spec->file);
    goto done;
  }
  rc = 0;

done:
  if (rc && err.message[0])
    fprintf(stderr, "  %s: %s\n", spec->file, err.message);
  if (f1)
    fclose(f1);
  if (f2)
    fclose(f2);
  free(bytes1);
  free(bytes2);
  remove(saved);
  remove(resaved);
  mb_tensor_free(x1);
  mb_tensor_free(x2);
  mb_tensor_free(y1);
  mb_tensor_free(y2);
  mb_tensor_free(y2_again);
  mb_tensor_free(y2_threads);
  mb_tensor_free(y2_reloaded);
  mb_model_free(reloaded2);
  mb_model_free(reloaded);
  mb_model_free(model);
  return rc;
}

TEST(mlp) {
  return check_model(&models[0]);
}

TEST(small_cnn) {
  return check_model(&models[1]);
}

TEST(resnet_blocks) {
  return check_model(&models[2]);
}

TEST(transformer_block) {
  return check_model(&models[3]);
}

/* A missing model is an error naming the file, not a crash. */
TEST(missing_model_fails_cleanly) {
  char path[4096];
  if (model_path("no_such_model.onnx", path, sizeof path))
    return 1;
  mb_error err = {0};
  mb_model *model = NULL;
  mb_status s = mb_model_load(path, &model, &err);
  ASSERT(s == MB_STATUS_IO || s == MB_STATUS_NOT_FOUND);
  ASSERT(model == NULL);
  ASSERT_CONTAINS(err.message, "no_such_model.onnx");
  return 0;
}

TEST_MAIN(TEST_ENTRY(mlp), TEST_ENTRY(small_cnn), TEST_ENTRY(resnet_blocks),
          TEST_ENTRY(transformer_block),
          TEST_ENTRY(missing_model_fails_cleanly))
