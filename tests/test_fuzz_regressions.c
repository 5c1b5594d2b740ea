/* Every input a fuzzer ever crashed on (fuzz/regressions/<target>/) goes
 * through the same code as its fuzz target (fuzz/targets/<target>.c, linked
 * in) and must come back with a status, not a crash, a leak or undefined
 * behaviour (this suite also runs under ASan+UBSan). */
#include "modelbench.h"
#include "targets.h"
#include "test.h"

#include <dirent.h>

typedef struct fuzz_target {
  const char *name;
  int (*run)(const uint8_t *data, size_t size);
} fuzz_target;

static const fuzz_target targets[] = {
#define MB_X(name) {#name, mb__fuzz_##name},
    MB_FUZZ_TARGET_LIST(MB_X)
#undef MB_X
};

/* Feeds every file of fuzz/regressions/<t->name>/ to the target; counts
 * them into *n. */
static int replay_dir(const fuzz_target *t, int *n) {
  const char *src = getenv("MB_SOURCE_DIR");
  char dir[1024], path[2048];
  ASSERT(src != NULL);
  snprintf(dir, sizeof dir, "%s/fuzz/regressions/%s", src, t->name);
  DIR *d = opendir(dir);
  if (!d)
    return 0; /* a target that never crashed has no folder */
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "rb");
    ASSERT(f != NULL);
    static unsigned char buf[1 << 20];
    size_t size = fread(buf, 1, sizeof buf, f);
    fclose(f);
    printf("  replay %s/%s\n", t->name, e->d_name);
    fflush(stdout);
    ASSERT_EQ(t->run(buf, size), 0);
    (*n)++;
  }
  closedir(d);
  return 0;
}

TEST(replay_all) {
  mb__fuzz_init();
  int n = 0;
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++)
    if (replay_dir(&targets[i], &n))
      return 1;
  /* The loader's eight alone: a wrong folder must not pass as empty. */
  ASSERT(n >= 8);
  return 0;
}

/* The model targets' structural mutator: most edits of a bundled model
 * still load (they are meant to reach the kernels, not the reader), they
 * change the model, and repeated edits from the same bytes never corrupt
 * the message they undo (ASan watches). */
TEST(mutator_keeps_models_loadable) {
  const char *models = getenv("MB_TEST_MODELS");
  char path[1024];
  ASSERT(models != NULL);
  snprintf(path, sizeof path, "%s/small_cnn.onnx", models);
  FILE *f = fopen(path, "rb");
  ASSERT(f != NULL);
  static unsigned char original[1 << 20], buf[1 << 20];
  size_t size = fread(original, 1, sizeof original, f);
  fclose(f);
  ASSERT(size > 0 && size < sizeof original);
  int loaded = 0, changed = 0;
  for (unsigned seed = 1; seed <= 200; seed++) {
    memcpy(buf, original, size);
    size_t n = mb__fuzz_mutate_model(buf, size, sizeof buf, seed);
    ASSERT(n > 0);
    changed += n != size || memcmp(buf, original, size) != 0;
    mb_model *model = NULL;
    mb_error err;
    if (mb_model_load_memory(buf, n, NULL, &model, &err) == MB_STATUS_OK) {
      loaded++;
      mb_model_free(model);
    }
    /* And the target itself on the result. */
    ASSERT_EQ(mb__fuzz_model_run(buf, n), 0);
  }
  printf("  %d of 200 mutants changed, %d loaded\n", changed, loaded);
  ASSERT(changed >= 190);
  ASSERT(loaded >= 100);
  /* Not a model: left alone. */
  memcpy(buf, "\xff\xff\xff\xff", 4);
  ASSERT_EQ(mb__fuzz_mutate_model(buf, 4, sizeof buf, 1), 0);
  return 0;
}

TEST_MAIN(TEST_ENTRY(replay_all), TEST_ENTRY(mutator_keeps_models_loadable))
