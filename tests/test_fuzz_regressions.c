/* Every input the fuzzer ever crashed on (fuzz/regressions/) goes through
 * the same path as the fuzz target — load, analyze, session creation — and
 * must come back with a status, not a crash (this suite also runs under
 * ASan+UBSan). */
#include "modelbench.h"
#include "test.h"

#include <dirent.h>

static int replay(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return 1;
  static unsigned char buf[1 << 20];
  size_t size = fread(buf, 1, sizeof buf, f);
  fclose(f);
  mb_model *model = NULL;
  mb_session *session = NULL;
  mb_model_stats stats;
  mb_error err;
  if (mb_model_load_memory(buf, size, NULL, &model, &err) != MB_STATUS_OK)
    return 0;
  if (mb_model_analyze(model, NULL, &stats, &err) == MB_STATUS_OK)
    mb_model_stats_free(&stats);
  if (mb_session_create(model, NULL, &session, &err) == MB_STATUS_OK)
    mb_session_free(session);
  mb_model_free(model);
  return 0;
}

TEST(replay_all) {
  const char *src = getenv("MB_SOURCE_DIR");
  char dir[1024], path[2048];
  ASSERT(src != NULL);
  snprintf(dir, sizeof dir, "%s/fuzz/regressions", src);
  DIR *d = opendir(dir);
  ASSERT(d != NULL);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    printf("  replay %s\n", e->d_name);
    ASSERT_EQ(replay(path), 0);
    n++;
  }
  closedir(d);
  ASSERT(n >= 5);
  return 0;
}

TEST_MAIN(TEST_ENTRY(replay_all))
