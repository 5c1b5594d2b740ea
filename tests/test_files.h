/* File helpers the tests that make temporary trees share (test_build_cache,
 * test_file_safety, test_results_db). Header-only, like test.h. */
#ifndef MB_TEST_FILES_H
#define MB_TEST_FILES_H

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Removes path and everything below it; a symlink is removed, never
 * followed. Missing paths are fine. */
static inline void test_remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0)
    return;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d))) {
      char child[PATH_MAX];
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      if (snprintf(child, sizeof child, "%s/%.*s", path, NAME_MAX, e->d_name) <
          (int)sizeof child)
        test_remove_tree(child);
    }
    if (d)
      closedir(d);
    rmdir(path);
  } else {
    unlink(path);
  }
}

/* Writes text to path (replacing it); 0 or -1. */
static inline int test_write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  fputs(text, f);
  return fclose(f);
}

#endif
