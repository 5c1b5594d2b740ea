/* The build cache's state.json reader. Whatever it accepts must survive a
 * round trip: written back by the cache's own writer and read again, it
 * gives the same state (a writer that produced a file its reader refuses
 * would orphan every build that hit it). And every artifact it names is
 * removed as a rebuild removes it, below a scratch build folder holding
 * "link", a symlink to a folder with a canary: the canary must survive
 * (issue 27: nothing from state.json is followed out of its folder). */
#include "cache/internal.h"
#include "targets.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool same_string(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void check_same(const mb_build_state *a, const mb_build_state *b) {
  bool same = a->status == b->status && same_string(a->error, b->error) &&
              same_string(a->key_hash, b->key_hash) &&
              same_string(a->key.model_path, b->key.model_path) &&
              a->model_bytes == b->model_bytes &&
              a->model_mtime_ns == b->model_mtime_ns &&
              a->n_stages == b->n_stages && a->n_artifacts == b->n_artifacts &&
              a->lean == b->lean && a->hits == b->hits &&
              a->builds == b->builds;
  for (int i = 0; i < MB_BUILD_KEY_PART_COUNT; i++)
    same = same && same_string(mb__bc_key_value(&a->key, (mb_build_key_part)i),
                               mb__bc_key_value(&b->key, (mb_build_key_part)i));
  for (int i = 0; same && i < a->n_stages; i++)
    same = same_string(a->stages[i].name, b->stages[i].name);
  for (int i = 0; same && i < a->n_artifacts; i++)
    same = same_string(a->artifacts[i].name, b->artifacts[i].name) &&
           a->artifacts[i].bytes == b->artifacts[i].bytes;
  if (!same)
    abort();
}

static void check_removal(const mb_build_state *s) {
  static int entry_fd = -1;
  static char link[PATH_MAX], outside[PATH_MAX], canary[PATH_MAX];
  const char *dir = mb__fuzz_scratch_dir();
  char entry[PATH_MAX];
  if (entry_fd < 0) {
    if (!mb__bc_path_join(entry, sizeof entry, dir, "entry") ||
        !mb__bc_path_join(outside, sizeof outside, dir, "outside") ||
        !mb__bc_path_join(canary, sizeof canary, outside, "canary") ||
        !mb__bc_path_join(link, sizeof link, entry, "link"))
      return;
    mkdir(entry, 0700);
    mkdir(outside, 0700);
    FILE *f = fopen(canary, "w");
    if (f)
      fclose(f);
    entry_fd = open(entry, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (entry_fd < 0)
      return;
  }
  /* Again, after a name removed it (EEXIST otherwise). */
  int made = symlink(outside, link);
  (void)made;
  for (int i = 0; i < s->n_artifacts; i++) {
    const char *leaf;
    if (!mb__bc_valid_artifact_name(s->artifacts[i].name))
      continue;
    int fd = mb__bc_parent_at(entry_fd, s->artifacts[i].name, &leaf, NULL);
    if (fd >= 0) {
      mb__bc_remove_at(fd, leaf);
      close(fd);
    }
  }
  if (access(canary, F_OK) != 0)
    abort();
}

int mb__fuzz_build_state(const uint8_t *data, size_t size) {
  const char *path = mb__fuzz_write_file("state.json", data, size);
  const char *dir = mb__fuzz_scratch_dir();
  mb_arena *arena = mb__arena_create();
  mb_build_state first, again;
  mb_error err;
  if (!path || !arena)
    goto done;
  if (mb__bc_state_read(path, arena, &first, &err) != MB_STATUS_OK)
    goto done;
  if (mb__bc_state_write(dir, "fuzz", &first, &err) != MB_STATUS_OK)
    goto done;
  if (mb__bc_state_read(path, arena, &again, &err) != MB_STATUS_OK)
    abort();
  check_same(&first, &again);
  check_removal(&first);
done:
  mb__arena_free(arena);
  return 0;
}
