/* What the fuzz targets share: quiet logging and a scratch folder for the
 * readers that take a path rather than bytes. */
#include "targets.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char scratch[256];

static void scratch_remove(void) {
  DIR *d = opendir(scratch);
  if (d) {
    char path[512];
    struct dirent *e;
    while ((e = readdir(d))) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      snprintf(path, sizeof path, "%s/%s", scratch, e->d_name);
      unlink(path);
    }
    closedir(d);
  }
  rmdir(scratch);
}

void mb__fuzz_init(void) {
  setenv("MODELBENCH_LOG", "error", 0);
}

const char *mb__fuzz_scratch_dir(void) {
  if (scratch[0])
    return scratch;
  const char *tmp = getenv("TMPDIR");
  snprintf(scratch, sizeof scratch, "%s/mb-fuzz-XXXXXX",
           tmp && tmp[0] ? tmp : "/tmp");
  if (!mkdtemp(scratch)) {
    scratch[0] = '\0';
    return NULL;
  }
  atexit(scratch_remove);
  return scratch;
}

const char *mb__fuzz_write_file(const char *name, const uint8_t *data,
                                size_t size) {
  static char path[512];
  const char *dir = mb__fuzz_scratch_dir();
  if (!dir)
    return NULL;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f)
    return NULL;
  size_t written = size ? fwrite(data, 1, size, f) : 0;
  if (fclose(f) != 0 || written != size)
    return NULL;
  return path;
}
