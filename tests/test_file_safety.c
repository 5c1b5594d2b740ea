/* Issue 27, what modelbench writes cannot be turned against its owner:
 * - a symlink planted at a report's or run.json's temporary path
 *   ("<file>.tmp.<pid>") is never written through: the write replaces it,
 *   and a symlink at the target itself is replaced, not followed;
 * - a fresh cache folder, results database and run folder are private
 *   (0700/0600 under umask 022), group-shared (02770/0660) with
 *   MODELBENCH_CACHE_SHARED=1. */
#include "core/cache_dir.h"
#include "db/results_db.h"
#include "exec/exec.h"
#include "report/report_util.h"
#include "test.h"
#include "test_files.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

static char g_dir[PATH_MAX];

static void read_text(const char *path, char *buf, size_t size) {
  FILE *f = fopen(path, "rb");
  size_t n = f ? fread(buf, 1, size - 1, f) : 0;
  buf[n] = '\0';
  if (f)
    fclose(f);
}

static unsigned mode_of(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0;
}

static bool is_link(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

/* Writes "new" to path through the report writer. */
static mb_status write_report(const char *path, mb_error *err) {
  mb_report_file rf;
  mb_status status = mb__report_file_open(&rf, path, "test report", err);
  if (status)
    return status;
  fputs("new", rf.f);
  return mb__report_file_commit(&rf, err);
}

TEST(planted_temp_symlink_not_followed) {
  char out[PATH_MAX], tmp[PATH_MAX], victim[PATH_MAX], text[64];
  mb_error err = {0};
  snprintf(out, sizeof out, "%s/report.json", g_dir);
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out, (long)getpid());
  snprintf(victim, sizeof victim, "%s/victim.txt", g_dir);
  ASSERT_EQ(test_write_text(victim, "keep me"), 0);
  /* An existing target through the symlink... */
  ASSERT_EQ(symlink(victim, tmp), 0);
  ASSERT_OK(write_report(out, &err), &err);
  read_text(victim, text, sizeof text);
  ASSERT_STR_EQ(text, "keep me");
  read_text(out, text, sizeof text);
  ASSERT_STR_EQ(text, "new");
  ASSERT(!is_link(out));
  ASSERT(!is_link(tmp) && mode_of(tmp) == 0); /* nothing left behind */
  /* ...and a dangling one, which O_CREAT alone would create. */
  char dangling[PATH_MAX];
  snprintf(dangling, sizeof dangling, "%s/created-through-link", g_dir);
  ASSERT_EQ(symlink(dangling, tmp), 0);
  ASSERT_OK(write_report(out, &err), &err);
  ASSERT_EQ(mode_of(dangling), 0u);
  /* A symlink at the target itself is replaced, not written through. */
  ASSERT_EQ(unlink(out), 0);
  ASSERT_EQ(symlink(victim, out), 0);
  ASSERT_OK(write_report(out, &err), &err);
  ASSERT(!is_link(out));
  read_text(victim, text, sizeof text);
  ASSERT_STR_EQ(text, "keep me");
  return 0;
}

/* A fresh cache folder, results database and run folder, with run.json
 * written through a planted symlink at its temporary path. */
static int fresh_modes(const char *name, unsigned dir_mode,
                       unsigned file_mode) {
  /* dir_mode and file_mode are compared with mode_of's unsigned. */
  char cache[PATH_MAX], db_path[PATH_MAX], runs[PATH_MAX], victim[PATH_MAX];
  char path[PATH_MAX], text[64];
  mb_error err = {0};
  mb_db *db = NULL;
  snprintf(cache, sizeof cache, "%s/%s/cache", g_dir, name);
  ASSERT_OK(mb__cache_dir(cache, path, sizeof path, &err), &err);
  ASSERT_EQ(mode_of(cache), dir_mode);
  snprintf(db_path, sizeof db_path, "%s/results.db", cache);
  ASSERT_OK(mb__db_open(db_path, true, &db, &err), &err);
  mb__db_close(db);
  ASSERT_EQ(mode_of(db_path), file_mode);

  snprintf(runs, sizeof runs, "%s/runs", cache);
  mb_exec_run *run = calloc(1, sizeof *run);
  ASSERT(run != NULL);
  ASSERT_OK(mb__exec_run_create(run, runs, &err), &err);
  ASSERT_EQ(mode_of(runs), dir_mode);
  ASSERT_EQ(mode_of(run->dir), dir_mode);
  snprintf(path, sizeof path, "%s/run.json", run->dir);
  ASSERT_EQ(mode_of(path), file_mode);
  snprintf(victim, sizeof victim, "%s/%s/victim.txt", g_dir, name);
  ASSERT_EQ(test_write_text(victim, "keep me"), 0);
  char tmp[PATH_MAX + 32];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  ASSERT_EQ(symlink(victim, tmp), 0);
  ASSERT_OK(mb__exec_run_save(run, &err), &err);
  read_text(victim, text, sizeof text);
  ASSERT_STR_EQ(text, "keep me");
  ASSERT(!is_link(path));
  ASSERT_EQ(mode_of(path), file_mode);
  free(run);
  return 0;
}

TEST(private_modes) {
  unsetenv("MODELBENCH_CACHE_SHARED");
  return fresh_modes("private", 0700, 0600);
}

TEST(shared_modes) {
  setenv("MODELBENCH_CACHE_SHARED", "1", 1);
  int rc = fresh_modes("shared", 02770, 0660);
  unsetenv("MODELBENCH_CACHE_SHARED");
  return rc;
}

int main(int argc, char **argv) {
  static const mb_test_case cases[] = {
      TEST_ENTRY(planted_temp_symlink_not_followed),
      TEST_ENTRY(private_modes),
      TEST_ENTRY(shared_modes),
  };
  /* The modes asked of a default umask. */
  umask(022);
  snprintf(g_dir, sizeof g_dir, "/tmp/mb_test_files_XXXXXX");
  if (!mkdtemp(g_dir))
    return 1;
  int rc = mb_test_main(argc, argv, cases, MB_ARRAY_COUNT(cases));
  test_remove_tree(g_dir);
  return rc;
}
