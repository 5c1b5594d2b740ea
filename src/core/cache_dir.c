/* The cache folder: --cache-dir > $MODELBENCH_CACHE_DIR > ~/.cache. */
#include "core/cache_dir.h"
#include "core/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

/* mkdir -p. path is modified in place and restored. Two processes may
 * create the same folders at once, so EEXIST is success whenever a folder
 * ends up there. Folders made here are private (0700), or group-shared
 * with $MODELBENCH_CACHE_SHARED=1 (core/files.h); existing ones keep
 * their mode. */
static mb_status make_dirs(char *path, mb_error *err) {
  for (char *p = path + 1;; p++) {
    char saved = *p;
    if (saved != '/' && saved != '\0')
      continue;
    *p = '\0';
    struct stat st;
    int rc = mb__mkdir_private_at(AT_FDCWD, path);
    int saved_errno = errno;
    bool ok = rc == 0 || (stat(path, &st) == 0 && S_ISDIR(st.st_mode));
    if (!ok) {
      mb_status status =
          rc != 0 && saved_errno != EEXIST
              ? mb__error(err, MB_STATUS_IO,
                          "cannot create cache folder %s: %s", path,
                          strerror(saved_errno))
              : mb__error(err, MB_STATUS_IO,
                          "cache folder %s: exists and is not a folder", path);
      *p = saved;
      return status;
    }
    *p = saved;
    if (saved == '\0')
      return MB_STATUS_OK;
  }
}

mb_status mb__cache_dir(const char *override, char *buf, size_t size,
                        mb_error *err) {
  const char *env = getenv(MB_CACHE_DIR_ENV);
  const char *home = getenv("HOME");
  int n;
  if (!buf || size < 2)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "cache folder: no buffer given");
  if (override && override[0])
    n = snprintf(buf, size, "%s", override);
  else if (env && env[0])
    n = snprintf(buf, size, "%s", env);
  else if (home && home[0])
    n = snprintf(buf, size, "%s/.cache/modelbench", home);
  else
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "no cache folder: HOME is not set (use --cache-dir DIR or "
                     "set " MB_CACHE_DIR_ENV ")");
  if (n < 0 || (size_t)n >= size)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "cache folder path is too long (%d bytes)", n);
  /* Trailing slashes would make mkdir see an empty last component. */
  while (n > 1 && buf[n - 1] == '/')
    buf[--n] = '\0';
  return make_dirs(buf, err);
}
