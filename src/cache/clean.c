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

/* Takes the lock of folder without waiting. Returns the fd, -1 with
 * *busy set when another process holds it, -1 on other errors. */
static int try_lock(const char *folder, bool *busy) {
  char lock[PATH_MAX];
  *busy = false;
  if (!mb__bc_path_join(lock, sizeof lock, folder, MB_BUILD_LOCK_FILE))
    return -1;
  int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return -1;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    *busy = errno == EWOULDBLOCK;
    close(fd);
    return -1;
  }
  return fd;
}

/* Removes a locked build folder: its contents, then the lock file, then the
 * folder, so that a process waiting for the lock finds its file gone and
 * starts over (lock_folder). Then the model folder, if now empty. */
static int remove_locked(const char *folder, const char *model_dir) {
  int rc = 0, saved = 0;
  DIR *d = opendir(folder);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char path[PATH_MAX];
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
        strcmp(e->d_name, MB_BUILD_LOCK_FILE) == 0 ||
        !mb__bc_path_join(path, sizeof path, folder, e->d_name))
      continue;
    if (mb__bc_remove_tree(path) != 0 && rc == 0) {
      rc = -1;
      saved = errno;
    }
  }
  if (d)
    closedir(d);
  if (rc == 0) {
    char lock[PATH_MAX];
    mb__bc_path_join(lock, sizeof lock, folder, MB_BUILD_LOCK_FILE);
    unlink(lock);
    if (rmdir(folder) != 0 && errno != ENOENT) {
      rc = -1;
      saved = errno;
    }
  }
  rmdir(model_dir); /* fails, as it should, while other builds are there */
  if (rc)
    errno = saved;
  return rc;
}

mb_status mb__build_remove(const char *cache_dir, const char *id,
                           mb_error *err) {
  char model[NAME_MAX + 1], build[NAME_MAX + 1], model_dir[PATH_MAX],
      folder[PATH_MAX], builds_dir[PATH_MAX];
  if (!split_id(id, model, build, sizeof model) ||
      !mb__bc_path_join(builds_dir, sizeof builds_dir, cache_dir,
                        MB_BUILD_CACHE_SUBDIR) ||
      !mb__bc_path_join(model_dir, sizeof model_dir, builds_dir, model) ||
      !mb__bc_path_join(folder, sizeof folder, model_dir, build))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "'%s' is not a build id (MODEL-SHA/CONVERSION-HASH)", id);
  if (!mb__bc_is_dir(folder))
    return mb__error(err, MB_STATUS_NOT_FOUND, "no build '%s' in %s", id,
                     cache_dir);
  bool busy;
  int fd = try_lock(folder, &busy);
  if (fd < 0)
    return busy ? mb__error(err, MB_STATUS_UNAVAILABLE,
                            "build %s is in use by another modelbench", id)
                : mb__error(err, MB_STATUS_IO, "cannot lock build %s: %s", id,
                            strerror(errno));
  int rc = remove_locked(folder, model_dir);
  int saved = errno;
  close(fd);
  if (rc)
    return mb__error(err, MB_STATUS_IO, "cannot remove %s: %s", folder,
                     strerror(saved));
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
  for (int i = 0; i < list->n_builds; i++) {
    const mb_build_info *info = &list->builds[i];
    if (info->stale == MB_BUILD_STALE_NONE)
      continue;
    mb_cache_clean_item item = {info->id, info->stale_reason, info->disk_bytes,
                                MB_CLEAN_WOULD_REMOVE, NULL};
    char model[NAME_MAX + 1], build[NAME_MAX + 1], model_dir[PATH_MAX];
    split_id(info->id, model, build, sizeof model);
    mb__bc_path_join(model_dir, sizeof model_dir, builds_dir, model);
    if (info->in_use) {
      item.action = MB_CLEAN_SKIPPED;
      item.error = "in use by another modelbench";
    } else if (!dry_run) {
      bool busy;
      int fd = try_lock(info->folder, &busy);
      mb_build_info again;
      if (fd < 0) {
        item.action = busy ? MB_CLEAN_SKIPPED : MB_CLEAN_FAILED;
        item.error = busy ? "in use by another modelbench" : strerror(errno);
        failed += !busy;
      } else {
        /* Judged again under the lock: it may have been rebuilt since. */
        mb__bc_evaluate(&l, builds_dir, info->id, false, &again);
        item.bytes = again.disk_bytes;
        if (again.stale == MB_BUILD_STALE_NONE) {
          item.action = MB_CLEAN_SKIPPED;
          item.error = "no longer stale";
        } else if (remove_locked(info->folder, model_dir) != 0) {
          item.action = MB_CLEAN_FAILED;
          item.error = strerror(errno);
          failed++;
        } else {
          item.action = MB_CLEAN_REMOVED;
          item.reason = again.stale_reason;
        }
        close(fd);
      }
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
      if (rmdir(model_dir) == 0 || errno == ENOENT) {
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
