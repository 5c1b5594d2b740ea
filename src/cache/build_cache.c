/* The build cache (see build_cache.h for the layout and the locking).
 *
 * A build folder is named by a hash of its whole key, so a changed key
 * part never lands in an old folder: it is a new build. To still tell the
 * user why a build was made again, a miss on a folder without state looks
 * for the latest other build of the same conversion and model (same
 * sha256 or same path) and names the key parts that differ.
 *
 * README: the files of the build cache.
 *   build_cache.c  this map; one build: open (lock, judge the state,
 *                  hit or start), artifacts, stages, finish, close
 *   keys.c         the names of policies, statuses and stale kinds; build
 *                  keys, their hash, the machine and input signatures
 *   state.c        state.json: read, written atomically, and why a build
 *                  was made again (which key parts changed)
 *   list.c         `cache list`: every build with its size and whether it
 *                  is stale or orphaned
 *   clean.c        removing one build, and `cache clean`
 *   fs.c           small file-system helpers (paths, folders, trees)
 *   internal.h     what these files share */
#include "cache/internal.h"

/* ---- one build ---- */

struct mb_build {
  mb_arena *arena;
  char *folder, *id, *builds_dir, *cache_dir;
  int lock_fd, dir_fd; /* dir_fd: the build folder, opened without symlinks */
  mb_build_key key;    /* copies; tool_version filled in */
  char key_hash[65];
  bool hit, finished;
  char reason[MB_ERROR_MESSAGE_SIZE];
  /* A path of the folder that was not followed: the user hears of it. */
  char warning[MB_ERROR_MESSAGE_SIZE];
  mb_build_state state;
  int stage_cap, artifact_cap;
};

/* The key's model file: absolute path, size and mtime, as recorded so that
 * `cache clean` can tell when the file is gone or changed. */
static void record_model(mb_build *b, const char *model_path) {
  b->state.model_bytes = b->state.model_mtime_ns = -1;
  if (!model_path || !model_path[0]) {
    b->state.key.model_path = b->key.model_path;
    return;
  }
  char *abs = realpath(model_path, NULL);
  struct stat st;
  b->state.key.model_path =
      abs ? mb__bc_adup(b->arena, abs) : b->key.model_path;
  if (stat(abs ? abs : model_path, &st) == 0) {
    b->state.model_bytes = (int64_t)st.st_size;
    b->state.model_mtime_ns =
        (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  }
  free(abs);
}

/* Takes the exclusive lock of the build folder, making it (unless
 * `create` is false: then a missing folder is MB_STATUS_NOT_FOUND). A
 * folder removed while we waited (`cache clean`) is made again. The folder
 * is reached from the cache folder without following a symlink (fs.c) and
 * kept open in b->dir_fd: everything else in it is relative to that fd. */
static mb_status lock_folder(mb_build *b, bool create, mb_error *err) {
  char rel[PATH_MAX], why[PATH_MAX + 64];
  if (!mb__bc_path_join(rel, sizeof rel, MB_BUILD_CACHE_SUBDIR, b->id))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: path of %s is too long", b->folder);
  for (int attempt = 0; attempt < LOCK_ATTEMPTS; attempt++) {
    int dfd = mb__bc_open_below(b->cache_dir, rel, create, why, sizeof why);
    if (dfd < 0) {
      if (errno == ENOENT && !create)
        return mb__error(err, MB_STATUS_NOT_FOUND, "build cache: no build %s",
                         b->id);
      if (errno == ENOENT && attempt + 1 < LOCK_ATTEMPTS)
        continue; /* removed half-way through mkdir -p: again */
      return mb__error(err, MB_STATUS_IO, "build cache: cannot open %s: %s",
                       b->id, why);
    }
    int fd = mb__bc_open_file_at(dfd, MB_BUILD_LOCK_FILE, O_RDWR | O_CREAT);
    if (fd < 0) {
      int saved = errno;
      close(dfd);
      if (saved == ENOENT)
        continue; /* removed between mkdir and open */
      return mb__error(err, MB_STATUS_IO, "build cache: cannot open %s/%s: %s",
                       b->folder, MB_BUILD_LOCK_FILE,
                       saved == ELOOP ? "a symbolic link (not followed)"
                                      : strerror(saved));
    }
    int rc;
    while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR)
      ;
    if (rc != 0) {
      int saved = errno;
      close(fd);
      close(dfd);
      return mb__error(err, MB_STATUS_IO, "build cache: cannot lock %s/%s: %s",
                       b->folder, MB_BUILD_LOCK_FILE, strerror(saved));
    }
    /* The lock counts only if its file is still the one in the folder (a
     * remover unlinks it before the folder). */
    struct stat held, now;
    if (fstat(fd, &held) == 0 &&
        fstatat(dfd, MB_BUILD_LOCK_FILE, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
        held.st_dev == now.st_dev && held.st_ino == now.st_ino) {
      b->lock_fd = fd;
      b->dir_fd = dfd;
      return MB_STATUS_OK;
    }
    close(fd);
    close(dfd);
  }
  return mb__error(err, MB_STATUS_IO,
                   "build cache: %s keeps being removed while we wait for it",
                   b->folder);
}

/* Where the artifact `name` is below the build folder: its parent folder's
 * fd (walked without following symlinks) and its last component. -1 when a
 * folder on its path is a symlink or not a folder: *why says which. */
static int artifact_parent(const mb_build *b, const char *name,
                           const char **leaf, size_t *bad_len, char *why,
                           size_t size) {
  int fd = mb__bc_parent_at(b->dir_fd, name, leaf, bad_len);
  int saved = errno;
  if (fd < 0 && why) {
    if (saved == ENOENT)
      snprintf(why, size, "artifact %s is missing", name);
    else {
      char walk[PATH_MAX + 64];
      mb__bc_describe_walk(b->dir_fd, NULL, name, *bad_len, errno, walk,
                           sizeof walk);
      snprintf(why, size, "artifact %s: %s", name, walk);
    }
  }
  errno = saved;
  return fd;
}

/* Removes the artifact `name`, never through a symlink. A folder on its
 * path that is a symlink (or not a folder) is removed itself, not what it
 * points to, and *why says so ("" otherwise). */
static void remove_artifact(const mb_build *b, const char *name, char *why,
                            size_t size) {
  const char *leaf;
  size_t bad = 0;
  why[0] = '\0';
  int fd = mb__bc_parent_at(b->dir_fd, name, &leaf, &bad);
  if (fd >= 0) {
    mb__bc_remove_at(fd, leaf);
    close(fd);
    return;
  }
  if (errno == ENOENT || bad == 0)
    return;
  char walk[PATH_MAX + 64], prefix[PATH_MAX];
  mb__bc_describe_walk(b->dir_fd, NULL, name, bad, errno, walk, sizeof walk);
  snprintf(why, size, "artifact %s: %s", name, walk);
  /* The component in the way, relative to its own (walkable) folder. */
  snprintf(prefix, sizeof prefix, "%.*s", (int)bad, name);
  int pfd = mb__bc_parent_at(b->dir_fd, prefix, &leaf, NULL);
  if (pfd >= 0) {
    unlinkat(pfd, leaf, 0);
    close(pfd);
  }
}

/* Whether the recorded state is a valid build of b's key; if not, why,
 * into b->reason. */
static bool judge_state(mb_build *b, mb_status read_status,
                        const mb_error *read_err, const mb_build_state *old,
                        const char *conv_safe) {
  char *r = b->reason;
  size_t size = sizeof b->reason;
  if (read_status == MB_STATUS_NOT_FOUND) {
    mb__bc_explain_new(b->builds_dir, b->folder, &b->key, conv_safe, r, size);
    return false;
  }
  if (read_status != MB_STATUS_OK) {
    snprintf(r, size, "state unreadable: %.400s", read_err->message);
    return false;
  }
  if (old->status == MB_BUILD_BUILDING) {
    snprintf(r, size, "interrupted before (crashed or killed mid-build)");
    return false;
  }
  if (old->status == MB_BUILD_FAILED) {
    snprintf(r, size, "failed before: %s",
             old->error ? old->error : "unknown error");
    return false;
  }
  if (mb__bc_describe_key_change(&old->key, &b->key, r, size))
    return false;
  if (old->lean) {
    snprintf(r, size, "artifacts removed (lean cache)");
    return false;
  }
  for (int i = 0; i < old->n_artifacts; i++) {
    const char *name = old->artifacts[i].name, *leaf;
    struct stat st;
    size_t bad = 0;
    if (!mb__bc_valid_artifact_name(name)) {
      snprintf(r, size, "artifact %s is not a path inside the build folder",
               name);
      return false;
    }
    int fd = artifact_parent(b, name, &leaf, &bad, r, size);
    if (fd < 0 && errno != ENOENT)
      snprintf(b->warning, sizeof b->warning, "%s", r);
    if (fd < 0)
      return false;
    int rc = fstatat(fd, leaf, &st, AT_SYMLINK_NOFOLLOW);
    close(fd);
    if (rc != 0) {
      snprintf(r, size, "artifact %s is missing", name);
      return false;
    }
  }
  snprintf(r, size, "hit");
  return true;
}

/* A miss: records a "building" state, then deletes the old artifacts and
 * leftover temporary files, so a crash from here on never leaves a state
 * claiming ok behind. */
static mb_status start_build(mb_build *b, const mb_build_state *old,
                             bool had_state, mb_error *err) {
  char now[32];
  mb__bc_utc_now(now);
  mb__bc_state_init(&b->state);
  b->state.key = b->key;
  b->state.key_hash = b->key_hash;
  record_model(b, b->key.model_path);
  b->state.created = b->state.updated = mb__bc_adup(b->arena, now);
  b->state.builds = had_state ? old->builds : 0;
  /* The state first: from here on nothing claims the old build is ok. */
  mb_status status =
      mb__bc_state_write_at(b->dir_fd, b->folder, b->id, &b->state, err);
  if (status)
    return status;
  for (int i = 0; had_state && i < old->n_artifacts; i++) {
    char why[PATH_MAX + 128];
    if (!mb__bc_valid_artifact_name(old->artifacts[i].name))
      continue;
    remove_artifact(b, old->artifacts[i].name, why, sizeof why);
    /* Said once: judge_state may have named it already. */
    size_t used = strlen(b->reason);
    if (why[0] && !strstr(b->reason, why))
      snprintf(b->reason + used, sizeof b->reason - used, "; %s", why);
    if (why[0] && !b->warning[0])
      snprintf(b->warning, sizeof b->warning, "%s", why);
  }
  int fd = dup(b->dir_fd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  struct dirent *e;
  if (!d && fd >= 0)
    close(fd);
  while (d && (e = readdir(d)))
    if (strncmp(e->d_name, STATE_TMP_PREFIX, strlen(STATE_TMP_PREFIX)) == 0)
      unlinkat(dirfd(d), e->d_name, 0);
  if (d)
    closedir(d);
  return MB_STATUS_OK;
}

mb_status mb__build_open(const char *cache_dir, const mb_build_key *key,
                         mb_rebuild_policy policy, mb_build **build_out,
                         mb_error *err) {
  mb_build *b = NULL;
  mb_status status, read_status;
  mb_error read_err;
  mb_build_state old;
  char model_dir[PATH_MAX], conv_safe[MAX_CONVERSION_NAME + 1];
  char folder[PATH_MAX], state_path[PATH_MAX], builds_dir[PATH_MAX];
  memset(&read_err, 0, sizeof read_err);
  if (!cache_dir || !cache_dir[0] || !key || !build_out)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: no cache folder or key given");
  if (!key->model_sha256 || strlen(key->model_sha256) < 12 ||
      strspn(key->model_sha256, "0123456789abcdef") !=
          strlen(key->model_sha256))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: the key needs the model's sha256 (hex)");
  if (!key->conversion || !key->conversion[0])
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: the key needs a conversion name");
  if ((unsigned)policy >= MB_REBUILD_POLICY_COUNT)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: unknown rebuild policy %d", (int)policy);
  *build_out = NULL;

  b = calloc(1, sizeof *b);
  if (!b || !(b->arena = mb__arena_create())) {
    free(b);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "build cache: out of memory");
  }
  b->lock_fd = b->dir_fd = -1;
  for (int i = 0; i < MB_BUILD_KEY_PART_COUNT; i++)
    mb__bc_key_set(
        &b->key, (mb_build_key_part)i,
        mb__bc_adup(b->arena, mb__bc_key_value(key, (mb_build_key_part)i)));
  b->key.model_path = mb__bc_adup(b->arena, key->model_path);
  b->key.model_name = mb__bc_adup(b->arena, key->model_name);
  b->key.source_script = mb__bc_adup(b->arena, key->source_script);
  b->key.source_class = mb__bc_adup(b->arena, key->source_class);
  b->key.source_hash = mb__bc_adup(b->arena, key->source_hash);
  mb__build_key_hash(&b->key, b->key_hash);
  mb__bc_model_folder_name(&b->key, model_dir, sizeof model_dir);
  mb__bc_safe_component(conv_safe, sizeof conv_safe, key->conversion,
                        MAX_CONVERSION_NAME);
  char id[PATH_MAX];
  int n =
      snprintf(id, sizeof id, "%s/%s-%.12s", model_dir, conv_safe, b->key_hash);
  if (n < 0 || (size_t)n >= sizeof id ||
      !mb__bc_path_join(builds_dir, sizeof builds_dir, cache_dir,
                        MB_BUILD_CACHE_SUBDIR) ||
      !mb__bc_path_join(folder, sizeof folder, builds_dir, id) ||
      !mb__bc_path_join(state_path, sizeof state_path, folder,
                        MB_BUILD_STATE_FILE)) {
    status = mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "build cache: path under %s is too long", cache_dir);
    goto fail;
  }
  b->id = mb__bc_adup(b->arena, id);
  b->folder = mb__bc_adup(b->arena, folder);
  b->builds_dir = mb__bc_adup(b->arena, builds_dir);
  b->cache_dir = mb__bc_adup(b->arena, cache_dir);
  if (!b->id || !b->folder || !b->builds_dir || !b->cache_dir ||
      !b->key.conversion) {
    status =
        mb__error(err, MB_STATUS_OUT_OF_MEMORY, "build cache: out of memory");
    goto fail;
  }

  status = lock_folder(b, policy != MB_REBUILD_NEVER, err);
  if (status == MB_STATUS_NOT_FOUND) {
    mb__bc_explain_new(b->builds_dir, b->folder, &b->key, conv_safe, b->reason,
                       sizeof b->reason);
    status = mb__error(err, MB_STATUS_NOT_FOUND,
                       "no cached build of %s for %s (%s) and --rebuild "
                       "never forbids building it",
                       key->conversion,
                       key->model_path ? key->model_path : key->model_sha256,
                       b->reason);
    goto fail;
  }
  if (status)
    goto fail;
  read_status = mb__bc_state_read(state_path, b->arena, &old, &read_err);
  if (read_status == MB_STATUS_OUT_OF_MEMORY) {
    status = mb__error(err, read_status, "%s", read_err.message);
    goto fail;
  }
  b->hit = judge_state(b, read_status, &read_err, &old, conv_safe);
  if (policy == MB_REBUILD_NEVER && !b->hit) {
    status = mb__error(err, MB_STATUS_NOT_FOUND,
                       "no valid cached build of %s for %s (%s) and --rebuild "
                       "never forbids building it",
                       key->conversion,
                       key->model_path ? key->model_path : key->model_sha256,
                       b->reason);
    goto fail;
  }
  if (policy == MB_REBUILD_ALWAYS) {
    b->hit = false;
    snprintf(b->reason, sizeof b->reason, "--rebuild always");
  }
  if (b->hit) {
    b->state = old;
    b->stage_cap = old.n_stages;
    b->artifact_cap = old.n_artifacts;
  } else {
    status = start_build(b, &old, read_status == MB_STATUS_OK, err);
    if (status)
      goto fail;
  }
  *build_out = b;
  return MB_STATUS_OK;

fail:
  b->finished = true; /* nothing to record on close */
  mb__build_close(b);
  return status;
}

bool mb__build_hit(const mb_build *b) {
  return b && b->hit;
}
const char *mb__build_reason(const mb_build *b) {
  return b->reason;
}
const char *mb__build_warning(const mb_build *b) {
  return b->warning;
}
const char *mb__build_folder(const mb_build *b) {
  return b->folder;
}
const char *mb__build_id(const mb_build *b) {
  return b->id;
}
const mb_build_state *mb__build_state(const mb_build *b) {
  return &b->state;
}

const char *mb__build_path(const mb_build *b, const char *name, char *buf,
                           size_t size) {
  if (!b || !mb__bc_valid_artifact_name(name) ||
      !mb__bc_path_join(buf, size, b->folder, name))
    return NULL;
  /* The builder writes through this path: no folder on it may be a
   * symlink (one not there yet, the builder makes). */
  const char *leaf;
  size_t bad = 0;
  int fd = b->dir_fd >= 0 ? mb__bc_parent_at(b->dir_fd, name, &leaf, &bad) : -1;
  if (fd >= 0)
    close(fd);
  else if (b->dir_fd < 0 || errno != ENOENT)
    return NULL;
  return buf;
}

static bool in_progress(const mb_build *b) {
  return !b->hit && !b->finished;
}

/* Grows an arena array of `elem` bytes to hold one more than *n. */
void *mb__bc_grow(mb_arena *a, void *items, int n, int *cap, size_t elem) {
  if (n < *cap)
    return items;
  int new_cap = *cap ? *cap * 2 : 8;
  void *bigger = mb__arena_alloc(a, (size_t)new_cap * elem);
  if (!bigger)
    return NULL;
  if (n)
    memcpy(bigger, items, (size_t)n * elem);
  *cap = new_cap;
  return bigger;
}

mb_status mb__build_add_artifact(mb_build *b, const char *name, mb_error *err) {
  if (!in_progress(b))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: %s: no build in progress to add %s to",
                     b->id, name ? name : "(null)");
  if (!mb__bc_valid_artifact_name(name))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: '%s' is not a valid artifact name (a "
                     "relative path inside the build folder)",
                     name ? name : "(null)");
  mb_build_state *s = &b->state;
  for (int i = 0; i < s->n_artifacts; i++)
    if (strcmp(s->artifacts[i].name, name) == 0)
      return MB_STATUS_OK;
  mb_build_artifact *items = mb__bc_grow(b->arena, s->artifacts, s->n_artifacts,
                                         &b->artifact_cap, sizeof *items);
  const char *copy = mb__bc_adup(b->arena, name);
  if (!items || !copy)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "build cache: out of memory");
  s->artifacts = items;
  s->artifacts[s->n_artifacts++] = (mb_build_artifact){copy, -1};
  return MB_STATUS_OK;
}

mb_status mb__build_stage(mb_build *b, const char *name, double ms,
                          mb_error *err) {
  if (!in_progress(b))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: %s: no build in progress to time", b->id);
  if (!name || !name[0])
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: a stage needs a name");
  mb_build_state *s = &b->state;
  for (int i = 0; i < s->n_stages; i++)
    if (strcmp(s->stages[i].name, name) == 0) {
      s->stages[i].ms += ms;
      return MB_STATUS_OK;
    }
  mb_build_stage *items = mb__bc_grow(b->arena, s->stages, s->n_stages,
                                      &b->stage_cap, sizeof *items);
  const char *copy = mb__bc_adup(b->arena, name);
  if (!items || !copy)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "build cache: out of memory");
  s->stages = items;
  s->stages[s->n_stages++] = (mb_build_stage){copy, ms};
  return MB_STATUS_OK;
}

mb_status mb__build_finish(mb_build *b, mb_status status, const char *error,
                           double build_ms, mb_error *err) {
  if (!in_progress(b))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: %s: no build in progress to finish", b->id);
  mb_build_state *s = &b->state;
  const char *missing = NULL;
  for (int i = 0; i < s->n_artifacts; i++) {
    const char *leaf;
    struct stat st;
    size_t bad = 0;
    int fd = mb__bc_parent_at(b->dir_fd, s->artifacts[i].name, &leaf, &bad);
    if (fd < 0 || fstatat(fd, leaf, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      s->artifacts[i].bytes = -1;
      missing = missing ? missing : s->artifacts[i].name;
    } else {
      s->artifacts[i].bytes = mb__bc_tree_bytes_at(fd, leaf);
    }
    if (fd >= 0)
      close(fd);
  }
  char now[32], msg[MB_ERROR_MESSAGE_SIZE];
  mb__bc_utc_now(now);
  s->status = status == MB_STATUS_OK ? MB_BUILD_OK : MB_BUILD_FAILED;
  s->error = NULL;
  if (status != MB_STATUS_OK) {
    s->error = mb__bc_adup(
        b->arena, error && error[0] ? error : mb_status_string(status));
  } else if (missing) {
    snprintf(msg, sizeof msg, "artifact %s was not written", missing);
    s->status = MB_BUILD_FAILED;
    s->error = mb__bc_adup(b->arena, msg);
  }
  s->build_ms = build_ms >= 0 ? build_ms : NAN;
  s->updated = s->last_used = mb__bc_adup(b->arena, now);
  s->hits = 0;
  s->builds++;
  b->finished = true;
  mb_status written =
      mb__bc_state_write_at(b->dir_fd, b->folder, b->id, s, err);
  if (written)
    return written;
  if (status == MB_STATUS_OK && missing)
    return mb__error(err, MB_STATUS_IO, "build cache: %s: %s", b->id, msg);
  return MB_STATUS_OK;
}

mb_status mb__build_mark_hit(mb_build *b, mb_error *err) {
  if (!b->hit)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: %s: not a hit", b->id);
  char now[32];
  mb__bc_utc_now(now);
  b->state.hits++;
  b->state.last_used = mb__bc_adup(b->arena, now);
  if (b->key.model_path)
    record_model(b, b->key.model_path);
  return mb__bc_state_write_at(b->dir_fd, b->folder, b->id, &b->state, err);
}

mb_status mb__build_lean(mb_build *b, mb_error *err) {
  if (in_progress(b))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: %s: finish the build before leaning it",
                     b->id);
  mb_build_state *s = &b->state;
  for (int i = 0; i < s->n_artifacts; i++) {
    const char *name = s->artifacts[i].name, *leaf;
    size_t bad = 0;
    char why[PATH_MAX + 128];
    if (!mb__bc_valid_artifact_name(name))
      continue;
    int fd = artifact_parent(b, name, &leaf, &bad, why, sizeof why);
    if (fd < 0 && errno == ENOENT)
      continue;
    if (fd < 0)
      return mb__error(err, MB_STATUS_IO, "build cache: %s: cannot remove %s",
                       b->id, why);
    int rc = mb__bc_remove_at(fd, leaf);
    int saved = errno;
    close(fd);
    if (rc != 0)
      return mb__error(err, MB_STATUS_IO,
                       "build cache: cannot remove %s/%s: %s", b->folder, name,
                       strerror(saved));
  }
  s->lean = true;
  return mb__bc_state_write_at(b->dir_fd, b->folder, b->id, s, err);
}

void mb__build_close(mb_build *b) {
  if (!b)
    return;
  if (in_progress(b))
    mb__build_finish(b, MB_STATUS_INTERNAL,
                     "build was not finished (the builder stopped without "
                     "recording why)",
                     -1, NULL);
  if (b->lock_fd >= 0) {
    flock(b->lock_fd, LOCK_UN);
    close(b->lock_fd);
  }
  if (b->dir_fd >= 0)
    close(b->dir_fd);
  mb__arena_free(b->arena);
  free(b);
}
