/* Build cache: small file-system helpers (paths, folders, whole trees,
 * fsync of a folder, safe folder names). */
#include "cache/internal.h"

/* ---- small file-system helpers ---- */

/* "2025-01-31T12:00:00Z" of now. */
void mb__bc_utc_now(char buf[32]) {
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

bool mb__bc_path_join(char *buf, size_t size, const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  if (na + nb + 2 > size)
    return false;
  memcpy(buf, a, na);
  buf[na] = '/';
  memcpy(buf + na + 1, b, nb + 1);
  return true;
}

bool mb__bc_is_dir(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* mkdir -p; EEXIST is fine when a folder is there (another process made
 * it first). */
mb_status mb__bc_make_dirs(const char *path, mb_error *err) {
  char buf[PATH_MAX];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: bad folder path '%s'", path);
  memcpy(buf, path, n + 1);
  for (char *p = buf + 1;; p++) {
    char saved = *p;
    if (saved != '/' && saved != '\0')
      continue;
    *p = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
      return mb__error(err, MB_STATUS_IO, "build cache: cannot create %s: %s",
                       buf, strerror(errno));
    if (!mb__bc_is_dir(buf))
      return mb__error(err, MB_STATUS_IO,
                       "build cache: %s exists and is not a folder", buf);
    *p = saved;
    if (saved == '\0')
      return MB_STATUS_OK;
  }
}

/* Bytes of the regular files at or below path (symlinks not followed). */
int64_t mb__bc_tree_bytes(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0)
    return 0;
  if (!S_ISDIR(st.st_mode))
    return S_ISREG(st.st_mode) ? (int64_t)st.st_size : 0;
  int64_t total = 0;
  DIR *d = opendir(path);
  if (!d)
    return 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    char child[PATH_MAX];
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
        !mb__bc_path_join(child, sizeof child, path, e->d_name))
      continue;
    total += mb__bc_tree_bytes(child);
  }
  closedir(d);
  return total;
}

/* rm -rf path (symlinks removed, not followed). ENOENT is success. Leaves
 * errno of the first failure and returns -1 on failure. */
int mb__bc_remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0)
    return errno == ENOENT ? 0 : -1;
  if (!S_ISDIR(st.st_mode))
    return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
  DIR *d = opendir(path);
  int rc = 0, saved = 0;
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      char child[PATH_MAX];
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      if (!mb__bc_path_join(child, sizeof child, path, e->d_name)) {
        rc = -1;
        saved = ENAMETOOLONG;
        continue;
      }
      if (mb__bc_remove_tree(child) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
      }
    }
    closedir(d);
  }
  if (rmdir(path) != 0 && errno != ENOENT && rc == 0) {
    rc = -1;
    saved = errno;
  }
  if (rc)
    errno = saved;
  return rc;
}

void mb__bc_fsync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

/* Keeps [A-Za-z0-9._+-] and turns anything else into '_', so a model stem
 * or conversion name is one safe path component. */
void mb__bc_safe_component(char *out, size_t size, const char *s, size_t n) {
  size_t o = 0;
  for (size_t i = 0; i < n && s[i] && o + 1 < size; i++) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '+' ||
              c == '-';
    out[o] = ok && !(o == 0 && c == '.') ? c : '_';
    o++;
  }
  out[o] = '\0';
  if (o == 0)
    snprintf(out, size, "_");
}

/* "<stem>-<sha12>" of a key. */
void mb__bc_model_folder_name(const mb_build_key *key, char *out, size_t size) {
  if (key->source_script && key->source_script[0] && key->source_hash &&
      strlen(key->source_hash) >= 12) {
    /* A script's model: "<script stem>-<class>-<model hash12>". */
    const char *base = strrchr(key->source_script, '/');
    base = base ? base + 1 : key->source_script;
    const char *dot = strrchr(base, '.');
    size_t len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    char stem[MAX_STEM + 1], cls[MAX_STEM + 1];
    mb__bc_safe_component(stem, sizeof stem, base,
                          MB_MIN(len, (size_t)MAX_STEM));
    const char *c =
        key->source_class && key->source_class[0] ? key->source_class : "model";
    mb__bc_safe_component(cls, sizeof cls, c,
                          MB_MIN(strlen(c), (size_t)MAX_STEM));
    snprintf(out, size, "%s-%s-%.12s", stem, cls, key->source_hash);
    return;
  }
  const char *path = key->model_path && key->model_path[0]   ? key->model_path
                     : key->model_name && key->model_name[0] ? key->model_name
                                                             : "model";
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  size_t len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
  char stem[MAX_STEM + 1];
  mb__bc_safe_component(stem, sizeof stem, base, MB_MIN(len, (size_t)MAX_STEM));
  snprintf(out, size, "%s-%.12s", stem, key->model_sha256);
}

bool mb__bc_valid_artifact_name(const char *name) {
  if (!name || !name[0] || name[0] == '/' ||
      strcmp(name, MB_BUILD_STATE_FILE) == 0 ||
      strcmp(name, MB_BUILD_LOCK_FILE) == 0 ||
      strncmp(name, STATE_TMP_PREFIX, strlen(STATE_TMP_PREFIX)) == 0)
    return false;
  /* No empty, "." or ".." component: an artifact stays inside its folder. */
  for (const char *p = name; *p;) {
    size_t n = strcspn(p, "/");
    if (n == 0 || (n == 1 && p[0] == '.') ||
        (n == 2 && p[0] == '.' && p[1] == '.'))
      return false;
    p += n;
    if (*p == '/' && !*++p)
      return false;
  }
  return true;
}
