/* Build cache: `cache list`. Every build folder with its state, size and
 * whether it is stale (model gone or changed, older tool, failed) or an
 * orphan; each model file is judged once per listing. */
#include "cache/internal.h"

/* ---- listing ---- */

/* sha256 of the file's bytes; false when it cannot be read. */
static bool file_sha256(const char *path, char hex[65]) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return false;
  enum { CHUNK = 1 << 16 };
  mb_sha256 sha;
  uint8_t digest[32];
  uint8_t *chunk = malloc(CHUNK);
  size_t n;
  if (!chunk) {
    fclose(f);
    return false;
  }
  mb__sha256_init(&sha);
  while ((n = fread(chunk, 1, CHUNK, f)) > 0)
    mb__sha256_update(&sha, chunk, n);
  bool ok = !ferror(f);
  fclose(f);
  free(chunk);
  mb__sha256_final(&sha, digest);
  mb__sha256_hex(digest, hex);
  return ok;
}

/* "" when the model file still has the recorded sha256, else why not. A
 * file of the recorded size and mtime is taken as unchanged; else its
 * bytes are hashed, and when that differs (the sha256 covers external data
 * files too) the model is loaded to hash it the way bench does. */
static const char *check_model(lister *l, const mb_build_state *s) {
  const char *path = s->key.model_path, *sha = s->key.model_sha256;
  for (int i = 0; i < l->n_checks; i++)
    if (strcmp(l->checks[i].path, path) == 0 &&
        strcmp(l->checks[i].sha256, sha) == 0)
      return l->checks[i].verdict;
  model_check *checks = mb__bc_grow(l->arena, l->checks, l->n_checks,
                                    &l->cap_checks, sizeof *checks);
  if (!checks)
    return "";
  l->checks = checks;
  model_check *c = &l->checks[l->n_checks];
  c->path = path;
  c->sha256 = sha;
  c->verdict[0] = '\0';
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(c->verdict, sizeof c->verdict, "model file %s no longer exists",
             path);
  } else if (!(s->model_bytes >= 0 && s->model_bytes == (int64_t)st.st_size &&
               s->model_mtime_ns == (int64_t)st.st_mtim.tv_sec * 1000000000 +
                                        st.st_mtim.tv_nsec)) {
    char hex[65] = "";
    bool same = file_sha256(path, hex) && strcmp(hex, sha) == 0;
    if (!same) {
      mb_model *model = NULL;
      same = mb_model_load(path, &model, NULL) == MB_STATUS_OK &&
             strcmp(mb_model_sha256(model), sha) == 0;
      mb_model_free(model);
    }
    if (!same)
      snprintf(c->verdict, sizeof c->verdict,
               "model file %s changed (no longer sha256 %.12s)", path, sha);
  }
  l->n_checks++;
  return c->verdict;
}

/* Whether another process holds the folder's lock (tested without
 * waiting). */
static bool folder_in_use(const char *folder) {
  char lock[PATH_MAX];
  if (!mb__bc_path_join(lock, sizeof lock, folder, MB_BUILD_LOCK_FILE))
    return false;
  int fd = open(lock, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  bool busy = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd); /* drops our shared lock, if we got it */
  return busy;
}

static void set_stale(mb_build_info *info, mb_arena *a, mb_build_stale stale,
                      const char *fmt, ...) MB_PRINTF(4, 5);
static void set_stale(mb_build_info *info, mb_arena *a, mb_build_stale stale,
                      const char *fmt, ...) {
  char buf[PATH_MAX + 256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  info->stale = stale;
  info->stale_reason = mb__bc_adup(a, buf);
}

/* Fills info for the build folder <builds>/<id>. check_lock: whether to
 * test if another process holds it (false when we hold it ourselves). */
void mb__bc_evaluate(lister *l, const char *builds_dir, const char *id,
                     bool check_lock, mb_build_info *info) {
  mb_arena *a = l->arena;
  char folder[PATH_MAX], state_path[PATH_MAX], leftover[NAME_MAX + 1] = "";
  mb_error err;
  memset(info, 0, sizeof *info);
  memset(&err, 0, sizeof err);
  info->id = mb__bc_adup(a, id);
  if (!mb__bc_path_join(folder, sizeof folder, builds_dir, id) ||
      !mb__bc_path_join(state_path, sizeof state_path, folder,
                        MB_BUILD_STATE_FILE)) {
    info->folder = info->id;
    set_stale(info, a, MB_BUILD_STALE_ORPHAN, "path too long");
    return;
  }
  info->folder = mb__bc_adup(a, folder);
  info->in_use = check_lock && folder_in_use(folder);
  info->disk_bytes = mb__bc_tree_bytes(folder);
  mb_status rs = mb__bc_state_read(state_path, a, &info->state, &err);
  info->has_state = rs == MB_STATUS_OK;
  DIR *d = opendir(folder);
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strncmp(e->d_name, STATE_TMP_PREFIX, strlen(STATE_TMP_PREFIX)) == 0)
      snprintf(leftover, sizeof leftover, "%s", e->d_name);
  if (d)
    closedir(d);
  const mb_build_state *s = &info->state;
  /* A build being made right now has no state or a "building" one, and may
   * have a temporary file: none of that makes it an orphan. */
  bool building =
      info->in_use && (!info->has_state || s->status == MB_BUILD_BUILDING);
  if (building)
    return;
  if (rs == MB_STATUS_NOT_FOUND)
    set_stale(info, a, MB_BUILD_STALE_ORPHAN, "no %s", MB_BUILD_STATE_FILE);
  else if (rs != MB_STATUS_OK)
    set_stale(info, a, MB_BUILD_STALE_ORPHAN, "%s unreadable: %s",
              MB_BUILD_STATE_FILE, err.message);
  else if (s->status == MB_BUILD_BUILDING)
    set_stale(info, a, MB_BUILD_STALE_ORPHAN,
              "build interrupted (crashed or killed mid-build)");
  else if (leftover[0] && !info->in_use)
    set_stale(info, a, MB_BUILD_STALE_ORPHAN, "leftover temporary file %s",
              leftover);
  else if (s->status == MB_BUILD_FAILED)
    set_stale(info, a, MB_BUILD_STALE_FAILED, "failed: %s",
              s->error ? s->error : "unknown error");
  else if (strcmp(mb__bc_key_value(&s->key, MB_BUILD_KEY_tool_version),
                  MB_VERSION_STRING) != 0)
    set_stale(info, a, MB_BUILD_STALE_VERSION,
              "built by modelbench %s (this is %s)",
              mb__bc_key_value(&s->key, MB_BUILD_KEY_tool_version),
              MB_VERSION_STRING);
  else if (s->key.source_script) {
    /* A script's model: its manifest was a temporary file; the build is
     * the script's while the script is there. */
    struct stat st;
    if (stat(s->key.source_script, &st) != 0 || !S_ISREG(st.st_mode))
      set_stale(info, a, MB_BUILD_STALE_ORPHAN, "script %s no longer exists",
                s->key.source_script);
  } else if (s->key.model_path && s->key.model_sha256) {
    const char *verdict = check_model(l, s);
    if (verdict[0])
      set_stale(info, a, MB_BUILD_STALE_ORPHAN, "%s", verdict);
  }
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted names of the sub-folders of dir (no symlinks). *names_out:
 * malloc'd array of arena strings. Returns the count, -1 on OOM. */
static int list_subdirs(mb_arena *a, const char *dir, const char ***names_out) {
  const char **names = NULL;
  int n = 0, cap = 0;
  DIR *d = opendir(dir);
  struct dirent *e;
  *names_out = NULL;
  while (d && (e = readdir(d))) {
    char path[PATH_MAX];
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
        !mb__bc_path_join(path, sizeof path, dir, e->d_name) ||
        !mb__bc_is_dir(path))
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      const char **bigger = realloc(names, (size_t)cap * sizeof *names);
      if (!bigger) {
        n = -1;
        break;
      }
      names = bigger;
    }
    if (!(names[n++] = mb__bc_adup(a, e->d_name))) {
      n = -1;
      break;
    }
  }
  if (d)
    closedir(d);
  if (n < 0) {
    free(names);
    return -1;
  }
  if (n > 1)
    qsort(names, (size_t)n, sizeof *names, compare_names);
  *names_out = names;
  return n;
}

mb_status mb__cache_list(const char *cache_dir, mb_build_list **list_out,
                         mb_error *err) {
  mb_build_list *list = calloc(1, sizeof *list);
  lister l = {0};
  char builds_dir[PATH_MAX];
  const char **models = NULL;
  int cap = 0, cap_empty = 0;
  mb_status status = MB_STATUS_OK;
  *list_out = NULL;
  if (!list || !(list->arena = mb__arena_create())) {
    free(list);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "build cache: out of memory");
  }
  l.arena = list->arena;
  list->cache_dir = mb__bc_adup(list->arena, cache_dir);
  if (!mb__bc_path_join(builds_dir, sizeof builds_dir, cache_dir,
                        MB_BUILD_CACHE_SUBDIR)) {
    status = mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "build cache: path of %s is too long", cache_dir);
    goto fail;
  }
  DIR *probe = opendir(builds_dir);
  if (probe)
    closedir(probe);
  else if (errno != ENOENT) {
    status = mb__error(err, MB_STATUS_IO, "build cache: cannot read %s: %s",
                       builds_dir, strerror(errno));
    goto fail;
  }
  int n_models = list_subdirs(list->arena, builds_dir, &models);
  if (n_models < 0)
    goto oom;
  for (int m = 0; m < n_models; m++) {
    char model_dir[PATH_MAX];
    const char **builds = NULL;
    mb__bc_path_join(model_dir, sizeof model_dir, builds_dir, models[m]);
    int n_builds = list_subdirs(list->arena, model_dir, &builds);
    if (n_builds < 0)
      goto oom;
    if (n_builds == 0) {
      if (list->n_empty_models == cap_empty) {
        cap_empty = cap_empty ? cap_empty * 2 : 8;
        const char **bigger =
            realloc(list->empty_models, (size_t)cap_empty * sizeof *bigger);
        if (!bigger)
          goto oom;
        list->empty_models = bigger;
      }
      list->empty_models[list->n_empty_models++] = models[m];
    }
    for (int i = 0; i < n_builds; i++) {
      char id[PATH_MAX];
      if (list->n_builds == cap) {
        cap = cap ? cap * 2 : 16;
        mb_build_info *bigger =
            realloc(list->builds, (size_t)cap * sizeof *bigger);
        if (!bigger) {
          free(builds);
          goto oom;
        }
        list->builds = bigger;
      }
      snprintf(id, sizeof id, "%s/%s", models[m], builds[i]);
      mb__bc_evaluate(&l, builds_dir, id, true,
                      &list->builds[list->n_builds++]);
    }
    free(builds);
  }
  free(models);
  *list_out = list;
  return MB_STATUS_OK;

oom:
  status =
      mb__error(err, MB_STATUS_OUT_OF_MEMORY, "build cache: out of memory");
fail:
  free(models);
  mb__build_list_free(list);
  return status;
}

void mb__build_list_free(mb_build_list *list) {
  if (!list)
    return;
  free(list->builds);
  free(list->empty_models);
  mb__arena_free(list->arena);
  free(list);
}

static bool hash_prefix(const char *hash, const char *prefix, size_t n) {
  return hash && strlen(hash) >= n && strncasecmp(hash, prefix, n) == 0;
}

bool mb__build_of_model(const mb_build_info *b, const char *model) {
  if (!b->has_state || !model || !model[0])
    return false;
  const mb_build_key *k = &b->state.key;
  char what[PATH_MAX];
  snprintf(what, sizeof what, "%s", model);
  /* "MODEL/CONVERSION": the part after the last '/' names a conversion
   * when the whole is no file. */
  char *slash = strrchr(what, '/');
  struct stat st;
  if (slash && stat(model, &st) != 0) {
    *slash = '\0';
    if (!k->conversion || strcmp(k->conversion, slash + 1) != 0)
      return false;
  }
  size_t n = strlen(what);
  if (n >= 4 && n <= 64 && strspn(what, "0123456789abcdefABCDEF") == n)
    return hash_prefix(k->source_hash, what, n) ||
           hash_prefix(k->model_sha256, what, n);
  char *abs = realpath(what, NULL);
  const char *p = abs ? abs : what;
  bool same = (k->model_path && strcmp(k->model_path, p) == 0) ||
              (k->source_script && strcmp(k->source_script, p) == 0);
  free(abs);
  return same;
}

mb_status mb__build_list_find(const mb_build_list *list, const char *id,
                              const mb_build_info **info_out, mb_error *err) {
  const mb_build_info *found = NULL;
  int matches = 0;
  char names[256] = "";
  size_t len = strlen(id), used = 0;
  *info_out = NULL;
  for (int i = 0; i < list->n_builds; i++) {
    const mb_build_info *b = &list->builds[i];
    if (strcmp(b->id, id) == 0) {
      *info_out = b;
      return MB_STATUS_OK;
    }
    if (len == 0 || strncmp(b->id, id, len) != 0)
      continue;
    found = b;
    if (matches++ < 3) {
      int w = snprintf(names + used, sizeof names - used, "%s%s",
                       used ? ", " : "", b->id);
      if (w > 0)
        used = MB_MIN(sizeof names - 1, used + (size_t)w);
    }
  }
  if (matches == 0)
    return mb__error(err, MB_STATUS_NOT_FOUND,
                     "no build '%s' in %s (see 'modelbench cache list')", id,
                     list->cache_dir);
  if (matches > 1)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "'%s' matches %d builds (%s%s): give more of the id", id,
                     matches, names, matches > 3 ? ", ..." : "");
  *info_out = found;
  return MB_STATUS_OK;
}
