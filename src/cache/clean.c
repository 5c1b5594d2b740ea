/* Build cache: removing one build (under its lock) and `cache clean`
 * (stale and orphaned builds, or everything). */
#include "cache/internal.h"

/* ---- removal ---- */

/* Splits an id into its model folder and build folder names, checking it
 * names exactly two plain path components. */
static bool split_id(const char *id, char *model, char *build, size_t size) {
  const char *slash = strchr(id, '/');
  if (!slash || strchr(slash + 1, '/') || slash == id || !slash[1] ||
      (size_t)(slash - id) >= size || strlen(slash + 1) >= size)
    return false;
  snprintf(model, size, "%.*s", (int)(slash - id), id);
  snprintf(build, size, "%s", slash + 1);
  return strcmp(model, ".") && strcmp(model, "..") && strcmp(build, ".") &&
         strcmp(build, "..");
}

/* The build folder of id (MODEL/BUILD) and its model folder, opened from
 * the cache folder without following a symlink. Returns the build
 * folder's fd and *model_fd, or -1 with errno and *why. */
static int open_build_dir(const char *cache_dir, const char *id, int *model_fd,
                          char *why, size_t size) {
  char model[NAME_MAX + 1], build[NAME_MAX + 1], rel[PATH_MAX];
  if (!split_id(id, model, build, sizeof model) ||
      snprintf(rel, sizeof rel, "%s/%s", MB_BUILD_CACHE_SUBDIR, model) >=
          (int)sizeof rel) {
    snprintf(why, size, "'%s' is not a build id", id);
    errno = EINVAL;
    return -1;
  }
  *model_fd = mb__bc_open_below(cache_dir, rel, false, why, size);
  if (*model_fd < 0)
    return -1;
  size_t bad = 0;
  int fd = mb__bc_open_dir_at(*model_fd, build, false, &bad);
  int saved = errno;
  if (fd < 0) {
    char shown[PATH_MAX];
    if (!mb__bc_path_join(shown, sizeof shown, cache_dir, rel))
      snprintf(shown, sizeof shown, "%s", rel);
    mb__bc_describe_walk(*model_fd, shown, build, bad, saved, why, size);
    close(*model_fd);
    *model_fd = -1;
  }
  errno = saved;
  return fd;
}

/* Takes the lock of the folder dfd without waiting. Returns the fd, -1
 * with *busy set when another process holds it, -1 on other errors. */
static int try_lock(int dfd, bool *busy) {
  *busy = false;
  int fd = mb__bc_open_file_at(dfd, MB_BUILD_LOCK_FILE, O_RDWR | O_CREAT);
  if (fd < 0)
    return -1;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    *busy = errno == EWOULDBLOCK;
    close(fd);
    return -1;
  }
  return fd;
}

/* Removes a locked build folder (dfd, named `build` in model_fd): its
 * contents, then the lock file, then the folder, so that a process
 * waiting for the lock finds its file gone and starts over (lock_folder).
 * Then the model folder, if now empty. Every removal is relative to an fd
 * of a folder walked without symlinks (fs.c). */
static int remove_locked(int dfd, int model_fd, const char *build,
                         int builds_fd, const char *model) {
  int rc = 0, saved = 0;
  int fd = dup(dfd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  struct dirent *e;
  if (!d && fd >= 0)
    close(fd);
  while (d && (e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
        strcmp(e->d_name, MB_BUILD_LOCK_FILE) == 0)
      continue;
    if (mb__bc_remove_at(dirfd(d), e->d_name) != 0 && rc == 0) {
      rc = -1;
      saved = errno;
    }
  }
  if (d)
    closedir(d);
  if (rc == 0) {
    unlinkat(dfd, MB_BUILD_LOCK_FILE, 0);
    if (unlinkat(model_fd, build, AT_REMOVEDIR) != 0 && errno != ENOENT) {
      rc = -1;
      saved = errno;
    }
  }
  /* Fails, as it should, while other builds are there. */
  if (builds_fd >= 0)
    unlinkat(builds_fd, model, AT_REMOVEDIR);
  if (rc)
    errno = saved;
  return rc;
}

mb_status mb__build_remove(const char *cache_dir, const char *id,
                           mb_error *err) {
  char model[NAME_MAX + 1], build[NAME_MAX + 1], why[PATH_MAX + 64];
  int model_fd = -1, builds_fd = -1;
  if (!split_id(id, model, build, sizeof model))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "'%s' is not a build id (MODEL-SHA/CONVERSION-HASH)", id);
  int dfd = open_build_dir(cache_dir, id, &model_fd, why, sizeof why);
  if (dfd < 0 && errno == ENOENT)
    return mb__error(err, MB_STATUS_NOT_FOUND, "no build '%s' in %s", id,
                     cache_dir);
  if (dfd < 0)
    return mb__error(err, MB_STATUS_IO, "cannot remove build %s: %s", id, why);
  bool busy;
  int fd = try_lock(dfd, &busy);
  if (fd < 0) {
    int saved = errno;
    close(dfd);
    close(model_fd);
    return busy ? mb__error(err, MB_STATUS_UNAVAILABLE,
                            "build %s is in use by another modelbench", id)
                : mb__error(err, MB_STATUS_IO, "cannot lock build %s: %s", id,
                            strerror(saved));
  }
  builds_fd =
      mb__bc_open_below(cache_dir, MB_BUILD_CACHE_SUBDIR, false, NULL, 0);
  int rc = remove_locked(dfd, model_fd, build, builds_fd, model);
  int saved = errno;
  close(fd);
  close(dfd);
  close(model_fd);
  if (builds_fd >= 0)
    close(builds_fd);
  if (rc)
    return mb__error(err, MB_STATUS_IO, "cannot remove %s/%s/%s: %s", cache_dir,
                     MB_BUILD_CACHE_SUBDIR, id, strerror(saved));
  return MB_STATUS_OK;
}

mb_status mb__cache_clean(const char *cache_dir, bool dry_run,
                          mb_cache_clean_fn fn, void *user, int *removed_out,
                          int64_t *bytes_out, mb_error *err) {
  mb_build_list *list = NULL;
  int removed = 0, failed = 0;
  int64_t bytes = 0;
  char builds_dir[PATH_MAX];
  mb_status status = mb__cache_list(cache_dir, &list, err);
  if (status)
    return status;
  mb__bc_path_join(builds_dir, sizeof builds_dir, cache_dir,
                   MB_BUILD_CACHE_SUBDIR);
  lister l = {.arena = list->arena};
  int builds_fd =
      mb__bc_open_below(cache_dir, MB_BUILD_CACHE_SUBDIR, false, NULL, 0);
  for (int i = 0; i < list->n_builds; i++) {
    const mb_build_info *info = &list->builds[i];
    if (info->stale == MB_BUILD_STALE_NONE)
      continue;
    mb_cache_clean_item item = {info->id, info->stale_reason, info->disk_bytes,
                                MB_CLEAN_WOULD_REMOVE, NULL};
    char model[NAME_MAX + 1], build[NAME_MAX + 1], why[PATH_MAX + 64];
    split_id(info->id, model, build, sizeof model);
    if (info->in_use) {
      item.action = MB_CLEAN_SKIPPED;
      item.error = "in use by another modelbench";
    } else if (!dry_run) {
      bool busy = false;
      int model_fd = -1;
      int dfd = open_build_dir(cache_dir, info->id, &model_fd, why, sizeof why);
      int fd = dfd >= 0 ? try_lock(dfd, &busy) : -1;
      mb_build_info again;
      if (fd < 0) {
        item.action = busy ? MB_CLEAN_SKIPPED : MB_CLEAN_FAILED;
        item.error = busy      ? "in use by another modelbench"
                     : dfd < 0 ? mb__arena_strdup(list->arena, why)
                               : strerror(errno);
        failed += !busy;
      } else {
        /* Judged again under the lock: it may have been rebuilt since. */
        mb__bc_evaluate(&l, builds_dir, info->id, false, &again);
        item.bytes = again.disk_bytes;
        if (again.stale == MB_BUILD_STALE_NONE) {
          item.action = MB_CLEAN_SKIPPED;
          item.error = "no longer stale";
        } else if (remove_locked(dfd, model_fd, build, builds_fd, model) != 0) {
          item.action = MB_CLEAN_FAILED;
          item.error = strerror(errno);
          failed++;
        } else {
          item.action = MB_CLEAN_REMOVED;
          item.reason = again.stale_reason;
        }
        close(fd);
      }
      if (dfd >= 0)
        close(dfd);
      if (model_fd >= 0)
        close(model_fd);
    }
    if (item.action == MB_CLEAN_REMOVED ||
        item.action == MB_CLEAN_WOULD_REMOVE) {
      removed++;
      bytes += item.bytes;
    }
    if (fn)
      fn(user, &item);
  }
  for (int i = 0; i < list->n_empty_models; i++) {
    char model_dir[PATH_MAX];
    mb_cache_clean_item item = {list->empty_models[i],
                                "empty model folder (no builds)", 0,
                                MB_CLEAN_WOULD_REMOVE, NULL};
    mb__bc_path_join(model_dir, sizeof model_dir, builds_dir,
                     list->empty_models[i]);
    if (!dry_run) {
      item.bytes = mb__bc_tree_bytes(model_dir);
      /* rmdir, not rm -r: a build made meanwhile keeps its folder. */
      if (builds_fd < 0) {
        item.action = MB_CLEAN_FAILED;
        item.error = "cannot open the builds folder";
        failed++;
      } else if (unlinkat(builds_fd, list->empty_models[i], AT_REMOVEDIR) ==
                     0 ||
                 errno == ENOENT) {
        item.action = MB_CLEAN_REMOVED;
      } else if (errno == ENOTEMPTY || errno == EEXIST) {
        item.action = MB_CLEAN_SKIPPED;
        item.error = "no longer empty";
      } else {
        item.action = MB_CLEAN_FAILED;
        item.error = strerror(errno);
        failed++;
      }
    }
    if (item.action == MB_CLEAN_REMOVED || item.action == MB_CLEAN_WOULD_REMOVE)
      removed++;
    if (fn)
      fn(user, &item);
  }
  mb__build_list_free(list);
  if (builds_fd >= 0)
    close(builds_fd);
  if (removed_out)
    *removed_out = removed;
  if (bytes_out)
    *bytes_out = bytes;
  if (failed)
    return mb__error(err, MB_STATUS_IO,
                     "build cache: %d stale build%s could not be removed",
                     failed, failed == 1 ? "" : "s");
  return MB_STATUS_OK;
}
