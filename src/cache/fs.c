/* Build cache: small file-system helpers (paths, walking and removing
 * below a folder without following symlinks, sizes of trees, fsync of a
 * folder, safe folder names). */
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

/* ---- walking below a folder, never through a symlink ----
 *
 * A build folder's contents come from state.json and from whoever can
 * write the cache (in a shared cache, other users). Every path inside it is
 * opened one component at a time with O_NOFOLLOW|O_DIRECTORY and every
 * removal is an unlinkat() relative to the folder that holds the entry, so
 * a component swapped for a symlink (even between a check and its use)
 * stops the walk instead of leading it out of the cache. */

int mb__bc_open_dir_at(int dirfd, const char *rel, bool create,
                       size_t *bad_len) {
  int fd = dup(dirfd);
  const char *p = rel;
  if (bad_len)
    *bad_len = 0;
  while (fd >= 0 && *p) {
    size_t n = strcspn(p, "/");
    char name[NAME_MAX + 1];
    if (n == 0 || n > NAME_MAX || (n == 1 && p[0] == '.') ||
        (n == 2 && p[0] == '.' && p[1] == '.')) {
      close(fd);
      errno = n > NAME_MAX ? ENAMETOOLONG : EINVAL;
      fd = -1;
    } else {
      memcpy(name, p, n);
      name[n] = '\0';
      if (create && mb__mkdir_private_at(fd, name) != 0 && errno != EEXIST) {
        int saved = errno;
        close(fd);
        errno = saved;
        fd = -1;
      } else {
        int next =
            openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int saved = errno;
        close(fd);
        errno = saved;
        fd = next;
      }
    }
    if (fd < 0 && bad_len)
      *bad_len = (size_t)(p - rel) + n;
    p += n;
    if (*p == '/')
      p++;
  }
  return fd;
}

/* "a symbolic link" or what else stopped a walk at the component ending at
 * rel[bad_len], for a message. */
static const char *why_not_walked(int dirfd, const char *rel, size_t bad_len,
                                  int error) {
  char prefix[PATH_MAX];
  struct stat st;
  snprintf(prefix, sizeof prefix, "%.*s", (int)bad_len, rel);
  if (fstatat(dirfd, prefix, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode))
      return "a symbolic link (not followed)";
    if (!S_ISDIR(st.st_mode))
      return "not a folder";
  }
  return strerror(error);
}

void mb__bc_describe_walk(int dirfd, const char *shown, const char *rel,
                          size_t bad_len, int error, char *why, size_t size) {
  snprintf(why, size, "%s%s%.*s is %s", shown ? shown : "", shown ? "/" : "",
           (int)bad_len, rel, why_not_walked(dirfd, rel, bad_len, error));
}

/* mkdir -p of the cache folder itself (private folders); EEXIST is fine
 * when a folder is there (another process made it first). */
static void make_dirs(const char *path) {
  char buf[PATH_MAX];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf)
    return;
  memcpy(buf, path, n + 1);
  for (char *p = buf + 1;; p++) {
    char saved = *p;
    if (saved != '/' && saved != '\0')
      continue;
    *p = '\0';
    mb__mkdir_private_at(AT_FDCWD, buf);
    *p = saved;
    if (saved == '\0')
      return;
  }
}

int mb__bc_open_below(const char *base, const char *rel, bool create, char *why,
                      size_t size) {
  int root = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0 && errno == ENOENT && create) {
    make_dirs(base);
    root = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  if (root < 0) {
    int saved = errno;
    if (why)
      snprintf(why, size, "%s: %s", base, strerror(saved));
    errno = saved;
    return -1;
  }
  size_t bad = 0;
  int fd = mb__bc_open_dir_at(root, rel, create, &bad);
  int saved = errno;
  if (fd < 0 && why)
    mb__bc_describe_walk(root, base, rel, bad, saved, why, size);
  close(root);
  errno = saved;
  return fd;
}

int mb__bc_parent_at(int dirfd, const char *name, const char **leaf,
                     size_t *bad_len) {
  const char *slash = strrchr(name, '/');
  char dir[PATH_MAX];
  *leaf = slash ? slash + 1 : name;
  if (!slash)
    return mb__bc_open_dir_at(dirfd, "", false, bad_len);
  if ((size_t)(slash - name) >= sizeof dir) {
    errno = ENAMETOOLONG;
    return -1;
  }
  snprintf(dir, sizeof dir, "%.*s", (int)(slash - name), name);
  return mb__bc_open_dir_at(dirfd, dir, false, bad_len);
}

int mb__bc_open_file_at(int dirfd, const char *name, int flags) {
  int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC,
                  mb__private_file_mode() & 0600);
  /* A shared cache's lock files must open read-write for the group; the
   * umask took group write off. Fails, harmlessly, on another's file. */
  if (fd >= 0 && (flags & O_CREAT) && mb__cache_shared())
    fchmod(fd, mb__private_file_mode());
  return fd;
}

int64_t mb__bc_tree_bytes_at(int at, const char *name) {
  struct stat st;
  if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
    return 0;
  if (!S_ISDIR(st.st_mode))
    return S_ISREG(st.st_mode) ? (int64_t)st.st_size : 0;
  int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0)
      close(fd);
    return 0;
  }
  int64_t total = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
      total += mb__bc_tree_bytes_at(dirfd(d), e->d_name);
  closedir(d);
  return total;
}

/* Bytes of the regular files at or below path (symlinks not followed). */
int64_t mb__bc_tree_bytes(const char *path) {
  return mb__bc_tree_bytes_at(AT_FDCWD, path);
}

int mb__bc_remove_at(int at, const char *name) {
  if (unlinkat(at, name, 0) == 0 || errno == ENOENT)
    return 0;
  if (errno != EISDIR && errno != EPERM)
    return -1;
  /* A folder: emptied through its own fd, so that a child swapped for a
   * symlink meanwhile is unlinked, never entered. */
  int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    int saved = errno;
    if (fd >= 0)
      close(fd);
    errno = saved;
    return saved == ENOENT ? 0 : -1;
  }
  int rc = 0, saved = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if (mb__bc_remove_at(dirfd(d), e->d_name) != 0 && rc == 0) {
      rc = -1;
      saved = errno;
    }
  }
  closedir(d);
  if (unlinkat(at, name, AT_REMOVEDIR) != 0 && errno != ENOENT && rc == 0) {
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
