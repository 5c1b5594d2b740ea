/* Files that cannot be turned against their owner: the one writer of
 * "temporary file, then rename" (never following or reusing what another
 * process put at the temporary path), and the modes of what modelbench
 * keeps (the cache, the results database, run folders): private to the
 * user unless $MODELBENCH_CACHE_SHARED asks for a group-shared cache. */
#ifndef MB_CORE_FILES_H
#define MB_CORE_FILES_H

#include "core/internal.h"

#include <stdio.h>
#include <sys/types.h>

/* "1": the cache, the results database and run folders are shared with
 * the group (folders 02770, setgid so new files keep the group; files
 * 0660). Anything else or unset: private (0700 and 0600). */
#define MB_CACHE_SHARED_ENV "MODELBENCH_CACHE_SHARED"

/* Whether $MODELBENCH_CACHE_SHARED is "1". */
bool mb__cache_shared(void);
/* The mode of a folder or a file modelbench keeps: 0700/0600, or
 * 02770/0660 for a shared cache. */
mode_t mb__private_dir_mode(void);
mode_t mb__private_file_mode(void);

/* mkdirat(dirfd, name) with mb__private_dir_mode(). A shared folder gets
 * its mode by chmod too, since mkdir drops setgid and the umask would drop
 * group write. Returns 0, or -1 with errno (EEXIST when anything, a
 * symlink included, is at that name). dirfd: AT_FDCWD or a folder. */
int mb__mkdir_private_at(int dirfd, const char *name);

/* A file written whole or not at all: `name` below `dirfd` (AT_FDCWD for a
 * path) is written through "<name>.tmp.<pid>", created with
 * O_CREAT|O_EXCL|O_NOFOLLOW, and renamed over `name` on commit. A symlink
 * or file another process planted at the temporary path is removed (never
 * written through); one at `name` is replaced by rename, not followed. */
typedef struct mb_atomic_file {
  FILE *f;          /* write the contents here */
  int dirfd;        /* borrowed */
  const char *name; /* borrowed; names the file in messages */
  const char *what; /* static: "JSON report", "run file", ... */
  char *tmp;        /* owned */
} mb_atomic_file;

/* Mode argument of mb__atomic_file_open: 0666 less the umask, as a file
 * the user asked for (a report) is created by other tools. */
#define MB_FILE_MODE_UMASK 0

/* Opens af's temporary file. mode: MB_FILE_MODE_UMASK, or the exact mode
 * (the umask does not apply: mb__private_file_mode() for what the cache
 * keeps). Errors name `what` and the temporary file. */
mb_status mb__atomic_file_open(mb_atomic_file *af, int dirfd, const char *name,
                               mode_t mode, const char *what, mb_error *err);
/* Flushes (and with `sync`, fsyncs the file and its folder), closes and
 * renames into place; on failure removes the temporary file. Always
 * releases af. */
mb_status mb__atomic_file_commit(mb_atomic_file *af, bool sync, mb_error *err);
/* Closes and removes the temporary file (after a failed write). */
void mb__atomic_file_abort(mb_atomic_file *af);

#endif /* MB_CORE_FILES_H */
