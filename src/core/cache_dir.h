/* Where modelbench keeps what outlives a run: the results database and the
 * build cache. */
#ifndef MB_CORE_CACHE_DIR_H
#define MB_CORE_CACHE_DIR_H

#include "core/internal.h"

/* The environment variable naming the cache folder. */
#define MB_CACHE_DIR_ENV "MODELBENCH_CACHE_DIR"

/* Resolves the cache folder: `override` (a --cache-dir value) when non-NULL
 * and non-empty, else $MODELBENCH_CACHE_DIR when set and non-empty, else
 * $HOME/.cache/modelbench. Creates it, parents included, when missing.
 * override: borrowed. buf: caller-owned, receives the path (size >= 2).
 * Fails with MB_STATUS_INVALID_ARGUMENT when HOME is unset and nothing else
 * names a folder or the path does not fit in buf, MB_STATUS_IO when the
 * folder cannot be created or a non-folder is in the way. */
mb_status mb__cache_dir(const char *override, char *buf, size_t size,
                        mb_error *err);

#endif /* MB_CORE_CACHE_DIR_H */
