/* Where a run's conversion logs go when the caller names no folder.
 *
 * A failed conversion's log is the evidence of why it failed, so it outlives
 * the run; an anonymous folder per run in /tmp would pile up. The logs go
 * under the cache folder instead, one folder per run:
 *
 *   <cache>/logs/run-YYYYMMDD-HHMMSS-XXXXXX/NN-CONVERSION.log
 *
 * The engine removes the logs of conversions that went well and the folder
 * once empty (engine.c: remove_temp_logs); here, before a new run, the
 * folders past the newest MB_RUN_LOGS_KEEP are removed, oldest first, so a
 * machine keeps the evidence of its recent failures and no more. A folder
 * touched in the last MB_RUN_LOGS_GRACE_S seconds is never removed: it may
 * be a run still going. */
#include "bench/bench_internal.h"
#include "core/cache_dir.h"
#include "core/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RUN_PREFIX "run-"

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Removes a run's log folder: its plain files, then the folder. */
static void remove_run_folder(const char *path) {
  DIR *d = opendir(path);
  if (!d)
    return;
  struct dirent *entry;
  char file[PATH_MAX];
  while ((entry = readdir(d)))
    if (entry->d_name[0] != '.' && snprintf(file, sizeof file, "%s/%s", path,
                                            entry->d_name) < (int)sizeof file)
      unlink(file);
  closedir(d);
  rmdir(path);
}

void mb__run_logs_prune(const char *logs, int keep) {
  DIR *d = opendir(logs);
  if (!d)
    return;
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *entry;
  while ((entry = readdir(d))) {
    if (strncmp(entry->d_name, RUN_PREFIX, strlen(RUN_PREFIX)) != 0)
      continue;
    if (n == cap) {
      size_t grown = cap ? cap * 2 : 32;
      char **bigger = realloc(names, sizeof *names * grown);
      if (!bigger)
        break;
      names = bigger;
      cap = grown;
    }
    if (!(names[n] = strdup(entry->d_name)))
      break;
    n++;
  }
  closedir(d);
  if (n > 1)
    qsort(names, n, sizeof *names, compare_names);
  time_t now = time(NULL);
  char path[PATH_MAX];
  /* Names sort by their timestamp: the first n - keep are the oldest. */
  for (size_t i = 0; keep >= 0 && i + (size_t)keep < n; i++) {
    struct stat st;
    if (snprintf(path, sizeof path, "%s/%s", logs, names[i]) <
            (int)sizeof path &&
        stat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
        now - st.st_mtime >= MB_RUN_LOGS_GRACE_S)
      remove_run_folder(path);
  }
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
}

mb_status mb__run_logs_create(const char *cache_override, char *buf,
                              size_t size, mb_error *err) {
  char cache[PATH_MAX], logs[PATH_MAX], stamp[32];
  mb_error ignored;
  bool in_cache =
      mb__cache_dir(cache_override, cache, sizeof cache, &ignored) ==
          MB_STATUS_OK &&
      snprintf(logs, sizeof logs, "%s/logs", cache) < (int)sizeof logs &&
      (mb__mkdir_private_at(AT_FDCWD, logs) == 0 || errno == EEXIST);
  if (!in_cache) {
    /* No cache folder (no HOME, read-only): the temporary folder. */
    const char *tmp = getenv("TMPDIR");
    snprintf(logs, sizeof logs, "%s", tmp && tmp[0] ? tmp : "/tmp");
  } else {
    mb__run_logs_prune(logs, MB_RUN_LOGS_KEEP - 1);
  }
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  if (snprintf(buf, size, "%s/%s%s-XXXXXX", logs,
               in_cache ? RUN_PREFIX : "modelbench-logs-", stamp) >= (int)size)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "the log folder path under %s is too long", logs);
  if (!mkdtemp(buf))
    return mb__error(err, MB_STATUS_IO,
                     "cannot create a log folder under %s: %s", logs,
                     strerror(errno));
  return MB_STATUS_OK;
}
