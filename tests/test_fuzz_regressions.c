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

TEST_MAIN(TEST_ENTRY(replay_all))
