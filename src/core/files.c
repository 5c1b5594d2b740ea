/* Files that cannot be turned against their owner (see files.h). */
#include "core/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

bool mb__cache_shared(void) {
  const char *v = getenv(MB_CACHE_SHARED_ENV);
  return v && strcmp(v, "1") == 0;
}

mode_t mb__private_dir_mode(void) {
  return mb__cache_shared() ? 02770 : 0700;
}

mode_t mb__private_file_mode(void) {
  return mb__cache_shared() ? 0660 : 0600;
}

int mb__mkdir_private_at(int dirfd, const char *name) {
  mode_t mode = mb__private_dir_mode();
  if (mkdirat(dirfd, name, mode & 0777) != 0)
    return -1;
  if (mode != 0700) {
    /* Made by us a moment ago: O_NOFOLLOW keeps a swapped-in symlink from
     * passing its target's mode change on. */
    int fd =
        openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
      return -1;
    int rc = fchmod(fd, mode);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
  }
  return 0;
}

/* The folder `name` is in, for its fsync after the rename. */
static int parent_fd(int dirfd, const char *name) {
  if (dirfd != AT_FDCWD)
    return dup(dirfd);
  const char *slash = strrchr(name, '/');
  if (!slash)
    return open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  size_t n = slash == name ? 1 : (size_t)(slash - name);
  char *dir = malloc(n + 1);
  if (!dir)
    return -1;
  memcpy(dir, name, n);
  dir[n] = '\0';
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  free(dir);
  return fd;
}

mb_status mb__atomic_file_open(mb_atomic_file *af, int dirfd, const char *name,
                               mode_t mode, const char *what, mb_error *err) {
  memset(af, 0, sizeof *af);
  af->dirfd = dirfd;
  af->name = name;
  af->what = what;
  if (!name || !name[0])
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT, "%s: no path given",
                     what);
  /* Beside the target, so that rename() stays on one file system. */
  size_t size = strlen(name) + 32;
  if (!(af->tmp = malloc(size)))
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s %s: out of memory", what,
                     name);
  snprintf(af->tmp, size, "%s.tmp.%ld", name, (long)getpid());
  int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  mode_t create_mode = mode == MB_FILE_MODE_UMASK ? 0666 : (mode & 0600);
  int fd = openat(dirfd, af->tmp, flags, create_mode);
  if (fd < 0 && errno == EEXIST) {
    /* A leftover of a crashed process with our pid, or something planted
     * there: unlinkat removes a symlink itself, never its target. */
    if (unlinkat(dirfd, af->tmp, 0) == 0 || errno == ENOENT)
      fd = openat(dirfd, af->tmp, flags, create_mode);
    else
      errno = EEXIST;
  }
  int saved = errno;
  if (fd >= 0 && mode != MB_FILE_MODE_UMASK && fchmod(fd, mode) != 0) {
    saved = errno;
    close(fd);
    unlinkat(dirfd, af->tmp, 0);
    fd = -1;
  }
  if (fd >= 0 && !(af->f = fdopen(fd, "w"))) {
    saved = errno;
    close(fd);
    unlinkat(dirfd, af->tmp, 0);
    fd = -1;
  }
  if (fd < 0) {
    mb_status status = mb__error(err, MB_STATUS_IO, "cannot write %s %s: %s",
                                 what, af->tmp, strerror(saved));
    free(af->tmp);
    af->tmp = NULL;
    return status;
  }
  return MB_STATUS_OK;
}

void mb__atomic_file_abort(mb_atomic_file *af) {
  if (af->f)
    fclose(af->f);
  if (af->tmp)
    unlinkat(af->dirfd, af->tmp, 0);
  free(af->tmp);
  af->f = NULL;
  af->tmp = NULL;
}

mb_status mb__atomic_file_commit(mb_atomic_file *af, bool sync, mb_error *err) {
  mb_status status = MB_STATUS_OK;
  if (fflush(af->f) != 0 || ferror(af->f) || (sync && fsync(fileno(af->f)))) {
    status = mb__error(err, MB_STATUS_IO, "cannot write %s %s: %s", af->what,
                       af->tmp, strerror(errno ? errno : EIO));
    goto fail;
  }
  int rc = fclose(af->f);
  af->f = NULL;
  if (rc != 0) {
    status = mb__error(err, MB_STATUS_IO, "cannot write %s %s: %s", af->what,
                       af->tmp, strerror(errno));
    goto fail;
  }
  if (renameat(af->dirfd, af->tmp, af->dirfd, af->name) != 0) {
    status =
        mb__error(err, MB_STATUS_IO, "cannot move %s %s into place as %s: %s",
                  af->what, af->tmp, af->name, strerror(errno));
    goto fail;
  }
  if (sync) {
    int dfd = parent_fd(af->dirfd, af->name);
    if (dfd >= 0) {
      fsync(dfd);
      close(dfd);
    }
  }
  free(af->tmp);
  af->tmp = NULL;
  return MB_STATUS_OK;

fail:
  mb__atomic_file_abort(af);
  return status;
}
