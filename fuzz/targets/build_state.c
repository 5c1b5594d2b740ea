/* The build cache's state.json reader. Whatever it accepts must survive a
 * round trip: written back by the cache's own writer and read again, it
 * gives the same state (a writer that produced a file its reader refuses
 * would orphan every build that hit it). */
#include "cache/internal.h"
#include "targets.h"

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
done:
  mb__arena_free(arena);
  return 0;
}
