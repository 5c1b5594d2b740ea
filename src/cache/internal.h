/* What the files of the build cache share (build_cache.c has the map):
 * limits of folder names, the key-part table, the lister of `cache list`,
 * and the functions one file calls in another (mb__bc_*). */
#ifndef MB_CACHE_INTERNAL_H
#define MB_CACHE_INTERNAL_H

#include "cache/build_cache.h"

#include "core/files.h"
#include "core/json_parse.h"
#include "core/json_write.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Prefix of the temporary files state.json is written through. */
#define STATE_TMP_PREFIX MB_BUILD_STATE_FILE ".tmp."
/* Longest model stem and conversion kept in folder names. */
#define MAX_STEM 64
#define MAX_CONVERSION_NAME 96
/* Tries at taking the lock of a folder that keeps being removed under us
 * (a concurrent `cache clean`). */
#define LOCK_ATTEMPTS 50

/* One key part: where it is in mb_build_key and its two names. */
typedef struct key_part_def {
  size_t offset; /* of the field in mb_build_key */
  const char *json, *label;
} key_part_def;

/* What became of one model file since it was recorded; judged once per
 * path per listing. */
typedef struct model_check {
  const char *path, *sha256;
  char verdict[PATH_MAX + 96]; /* "" when unchanged */
} model_check;

typedef struct lister {
  mb_arena *arena;
  model_check *checks;
  int n_checks, cap_checks;
} lister;

/* keys.c */
bool mb__bc_status_from_name(const char *name, mb_build_status *out);
void mb__bc_key_set(mb_build_key *key, mb_build_key_part part,
                    const char *value);
const char *mb__bc_key_value(const mb_build_key *key, mb_build_key_part part);
extern const key_part_def mb__bc_key_parts[];

/* fs.c */
void mb__bc_utc_now(char buf[32]);
bool mb__bc_path_join(char *buf, size_t size, const char *a, const char *b);
bool mb__bc_is_dir(const char *path);
/* Opens the folder `rel` ("a/b", "" for dirfd itself) below the folder
 * dirfd one component at a time with O_NOFOLLOW|O_DIRECTORY, making
 * missing ones (private mode) when `create`. Returns an fd, or -1 with
 * errno and *bad_len (may be NULL) the length of rel up to the component
 * that stopped it. Components "", "." and ".." are refused (EINVAL). */
int mb__bc_open_dir_at(int dirfd, const char *rel, bool create,
                       size_t *bad_len);
/* The same below `base`, which is opened following symlinks (the cache
 * folder is the user's choice); why (may be NULL) gets "base/a is a
 * symbolic link (not followed)" or the error. */
int mb__bc_open_below(const char *base, const char *rel, bool create, char *why,
                      size_t size);
/* Why a walk of rel below dirfd stopped at bad_len (with errno `error`),
 * as "shown/rel-prefix is a symbolic link (not followed)". */
void mb__bc_describe_walk(int dirfd, const char *shown, const char *rel,
                          size_t bad_len, int error, char *why, size_t size);
/* The folder holding `name` (a relative path) below dirfd, walked as
 * mb__bc_open_dir_at does; *leaf points at name's last component. */
int mb__bc_parent_at(int dirfd, const char *name, const char **leaf,
                     size_t *bad_len);
/* openat(dirfd, name, flags | O_NOFOLLOW) with the cache's file mode. */
int mb__bc_open_file_at(int dirfd, const char *name, int flags);
/* Bytes of the regular files at or below name (symlinks not followed). */
int64_t mb__bc_tree_bytes_at(int dirfd, const char *name);
int64_t mb__bc_tree_bytes(const char *path);
/* rm -rf of the entry `name` (one component) of dirfd: symlinks are
 * removed, never followed, folders emptied through their own fd. ENOENT is
 * success; -1 with errno of the first failure. */
int mb__bc_remove_at(int dirfd, const char *name);
void mb__bc_fsync_dir(const char *dir);
void mb__bc_safe_component(char *out, size_t size, const char *s, size_t n);
void mb__bc_model_folder_name(const mb_build_key *key, char *out, size_t size);
bool mb__bc_valid_artifact_name(const char *name);

/* state.c */
char *mb__bc_adup(mb_arena *a, const char *s);
void mb__bc_state_init(mb_build_state *s);
mb_status mb__bc_state_read(const char *path, mb_arena *arena,
                            mb_build_state *state, mb_error *err);
mb_status mb__bc_state_write(const char *folder, const char *id,
                             const mb_build_state *state, mb_error *err);
/* The same into the open folder dirfd; folder names it in messages. */
mb_status mb__bc_state_write_at(int dirfd, const char *folder, const char *id,
                                const mb_build_state *state, mb_error *err);
bool mb__bc_describe_key_change(const mb_build_key *before,
                                const mb_build_key *now, char *reason,
                                size_t size);
void mb__bc_explain_new(const char *builds_dir, const char *own_folder,
                        const mb_build_key *key, const char *conv_safe,
                        char *reason, size_t size);

/* build_cache.c */
void *mb__bc_grow(mb_arena *a, void *items, int n, int *cap, size_t elem);

/* list.c */
void mb__bc_evaluate(lister *l, const char *builds_dir, const char *id,
                     bool check_lock, mb_build_info *info);

#endif /* MB_CACHE_INTERNAL_H */
