/* The build cache: the prepared artifact of one conversion for one model
 * (converted ONNX files, a runtime's serialised model, quantisation
 * parameters, a partition plan), kept so that the next benchmark of the
 * same model under the same conversion skips the build.
 *
 * Layout, under the cache folder (core/cache_dir.h):
 *   builds/<model-stem>-<sha12>/<CONVERSION>-<keyhash12>/
 *     .lock        flock()ed while a process holds the build
 *     state.json   what was built, from what, when, how it went
 *     ...          the artifacts, named by the builder
 * <sha12> is the start of the model's sha256 and <keyhash12> the start of
 * the sha256 of every key part (mb_build_key). The build id that the CLI
 * shows and accepts is "<model-stem>-<sha12>/<CONVERSION>-<keyhash12>".
 *
 * Concurrency: mb__build_open takes an exclusive lock on the build's .lock
 * and holds it until mb__build_close, so when two processes need the same
 * build, one builds and the other waits, then finds the finished build (a
 * hit). Different builds proceed in parallel. state.json is only ever
 * replaced whole (temporary file, fsync, rename), so readers never see a
 * torn file; a miss replaces it with a "building" state before anything
 * else is touched, so a crash mid-build leaves a state that says so, never
 * one that claims ok.
 *
 * Nothing here loads a runtime: the builder (the benchmark worker) writes
 * the artifacts itself and reports them with mb__build_add_artifact. */
#ifndef MB_CACHE_BUILD_CACHE_H
#define MB_CACHE_BUILD_CACHE_H

#include "core/internal.h"

/* Folder of the builds inside the cache folder. */
#define MB_BUILD_CACHE_SUBDIR "builds"
/* Files of a build folder that are not artifacts. */
#define MB_BUILD_STATE_FILE "state.json"
#define MB_BUILD_LOCK_FILE ".lock"
/* Version of state.json's layout; a newer one is refused as unreadable. */
#define MB_BUILD_STATE_FORMAT 1

/* The parts of a build's key, X(field, "json key", "label in messages").
 * Every part is hashed into the key; a change of any one is a new build.
 * The model's path is not a part (the same bytes elsewhere are the same
 * model): it is recorded beside the key so `cache clean` can tell when the
 * model is gone. */
#define MB_BUILD_KEY_PART_LIST(X)                                              \
  X(model_sha256, "model_sha256", "model sha256")                              \
  X(inputs, "inputs", "input signature")                                       \
  X(conversion, "conversion", "conversion")                                    \
  X(steps, "steps", "conversion steps")                                        \
  X(options, "options", "build options")                                       \
  X(tool_version, "modelbench_version", "modelbench version")                  \
  X(runtime, "runtime", "runtime")                                             \
  X(runtime_version, "runtime_version", "runtime version")                     \
  X(machine, "machine", "machine")

typedef enum mb_build_key_part {
#define MB_X(field, key, label) MB_BUILD_KEY_##field,
  MB_BUILD_KEY_PART_LIST(MB_X)
#undef MB_X
      MB_BUILD_KEY_PART_COUNT
} mb_build_key_part;

/* What a build depends on. Every pointer is borrowed (mb__build_open copies
 * what it keeps). NULL parts are taken as "" except where noted. */
typedef struct mb_build_key {
  const char *model_path; /* as benchmarked; recorded, not hashed; may be
                             NULL (a model that is no file: a host's
                             PyTorch module; never judged orphaned) */
  const char *model_name; /* names the model's folder when model_path
                             is NULL; not hashed */
  /* A model a script ran (a manifest's "source"), recorded, not hashed:
   * the model folder is "<script stem>-<class>-<source_hash12>", `cache
   * list/stats/delete` find it by that hash, and the build stays while the
   * script exists (the manifest itself is a temporary file). NULL: none. */
  const char *source_script;   /* absolute path of the script */
  const char *source_class;    /* the model's class name */
  const char *source_hash;     /* the model hash the script front shows */
  const char *model_sha256;    /* mb_model_sha256: 64 hex digits; required */
  const char *inputs;          /* "x:float32[1,3,224,224];y:int64[1,8]" */
  const char *conversion;      /* "FP16+XNNPACK"; required */
  const char *steps;           /* the conversion's steps, e.g. "FP16;XNNPACK" */
  const char *options;         /* build-affecting options, "" when none */
  const char *tool_version;    /* NULL: MB_VERSION_STRING */
  const char *runtime;         /* "onnxruntime" */
  const char *runtime_version; /* "1.20.1" */
  const char *machine;         /* mb__build_machine_string */
} mb_build_key;

/* Part `part` of key (NULL when unset), and its names. */
const char *mb__build_key_get(const mb_build_key *key, mb_build_key_part part);
const char *mb__build_key_part_json(mb_build_key_part part);
const char *mb__build_key_part_label(mb_build_key_part part);

/* The key's hash: sha256 over every part (each length-prefixed, so no two
 * different keys hash the same bytes), as 64 hex digits. */
void mb__build_key_hash(const mb_build_key *key, char hex[65]);

/* "<cpu model>; <isa flags>": ORT's NCHWc layouts and the kernels XNNPACK
 * and oneDNN pick depend on both. machine: borrowed. Returns buf. */
const char *mb__build_machine_string(const mb_machine_info *machine, char *buf,
                                     size_t size);
/* "x:float32[1,3,224,224];y:int64[1,8]" of n concrete inputs. shapes,
 * dtypes: borrowed, n entries each (dtypes may be NULL: "?"). *text_out:
 * malloc'd, caller frees. Fails only with MB_STATUS_OUT_OF_MEMORY. */
mb_status mb__build_input_signature(int n, const mb_input_shape *shapes,
                                    const mb_dtype *dtypes, char **text_out,
                                    mb_error *err);

/* When to build again, X(NAME, "name") (the names of --rebuild). */
#define MB_REBUILD_POLICY_LIST(X)                                              \
  X(IF_NEEDED, "if-needed")                                                    \
  X(ALWAYS, "always")                                                          \
  X(NEVER, "never")

typedef enum mb_rebuild_policy {
#define MB_X(name, str) MB_REBUILD_##name,
  MB_REBUILD_POLICY_LIST(MB_X)
#undef MB_X
      MB_REBUILD_POLICY_COUNT
} mb_rebuild_policy;

const char *mb__rebuild_policy_name(mb_rebuild_policy policy);
/* Parses a name as mb__rebuild_policy_name prints it; false when unknown. */
bool mb__rebuild_policy_from_name(const char *name, mb_rebuild_policy *out);

/* ---- the state of one build, as recorded in its state.json ---- */

/* X(NAME, "name") */
#define MB_BUILD_STATUS_LIST(X)                                                \
  X(OK, "ok")                                                                  \
  X(FAILED, "failed")                                                          \
  X(BUILDING, "building")

typedef enum mb_build_status {
#define MB_X(name, str) MB_BUILD_##name,
  MB_BUILD_STATUS_LIST(MB_X)
#undef MB_X
      MB_BUILD_STATUS_COUNT
} mb_build_status;

const char *mb__build_status_name(mb_build_status status);

typedef struct mb_build_stage {
  const char *name; /* "convert", "optimize", "quantize", ... */
  double ms;
} mb_build_stage;

typedef struct mb_build_artifact {
  const char *name; /* relative to the build folder: "model.onnx" */
  int64_t bytes;    /* files below it included when it is a folder */
} mb_build_artifact;

/* Strings are NULL when unknown; build_ms is NAN when unknown. */
typedef struct mb_build_state {
  mb_build_status status;
  const char *error; /* why it failed; NULL when ok */
  mb_build_key key;  /* the recorded parts; key.model_path as recorded */
  const char *key_hash;
  int64_t model_bytes;    /* of key.model_path when recorded; -1 unknown */
  int64_t model_mtime_ns; /* idem */
  double build_ms;
  int n_stages;
  mb_build_stage *stages;
  int n_artifacts;
  mb_build_artifact *artifacts;
  bool lean; /* artifacts deleted by mb__build_lean */
  const char *created, *updated, *last_used; /* "2025-01-31T12:00:00Z" */
  int64_t hits;   /* times the build was used without building */
  int64_t builds; /* times this folder was built (rebuilds included) */
} mb_build_state;

/* ---- one build, held by this process ---- */

typedef struct mb_build mb_build;

/* Opens the build of `key` under cache_dir, creating its folder, and waits
 * for the exclusive lock on it (another process building it finishes
 * first). Then:
 *   hit:  the state says ok, the recorded key equals `key` and every
 *         recorded artifact exists: use the artifacts, call
 *         mb__build_mark_hit, then mb__build_close.
 *   miss: anything else (mb__build_reason says why: "new", "failed
 *         before: ...", "modelbench version changed 0.1.0 -> 0.2.0",
 *         "artifacts removed (lean cache)", "--rebuild always", ...). The
 *         old artifacts are deleted and the state says "building"; write
 *         the artifacts (mb__build_path), list them (mb__build_add_artifact),
 *         then call mb__build_finish, ok or failed, then mb__build_close.
 * policy ALWAYS makes every open a miss; NEVER fails with
 * MB_STATUS_NOT_FOUND (touching nothing) when there is no valid build.
 * Fails with MB_STATUS_INVALID_ARGUMENT on a key without sha256 or
 * conversion, MB_STATUS_IO when the folder or lock cannot be made.
 * cache_dir, key: borrowed. *build_out: release with mb__build_close. */
mb_status mb__build_open(const char *cache_dir, const mb_build_key *key,
                         mb_rebuild_policy policy, mb_build **build_out,
                         mb_error *err);

/* True when mb__build_open found a valid build. */
bool mb__build_hit(const mb_build *b);
/* Why it was a miss ("new", ...); "hit" on a hit. Owned by b. */
const char *mb__build_reason(const mb_build *b);
/* "" or what in the build folder was not followed: a recorded artifact
 * whose path goes through a symlink ("artifact sub/x: sub is a symbolic
 * link (not followed)"); the symlink itself was removed, never its target.
 * The caller shows it as a warning. Owned by b. */
const char *mb__build_warning(const mb_build *b);
/* The build folder (absolute when cache_dir was) and the build id. Owned
 * by b. */
const char *mb__build_folder(const mb_build *b);
const char *mb__build_id(const mb_build *b);
/* The state as last read or written. Owned by b; valid until the next
 * call on b. */
const mb_build_state *mb__build_state(const mb_build *b);

/* "<folder>/<name>" into buf. Returns buf, or NULL when name is not a valid
 * artifact name (empty, absolute, with a ".." component, or one of the
 * cache's own files) or the path does not fit. */
const char *mb__build_path(const mb_build *b, const char *name, char *buf,
                           size_t size);
/* Lists an artifact (a file or folder under the build folder) of the build
 * in progress; a name given twice is listed once. Its size is taken by
 * mb__build_finish. Fails with MB_STATUS_INVALID_ARGUMENT on a bad name or
 * a hit. name: borrowed. */
mb_status mb__build_add_artifact(mb_build *b, const char *name, mb_error *err);
/* Adds ms to the time of stage `name` ("convert", "optimize", ...), kept
 * in the order first seen. name: borrowed. */
mb_status mb__build_stage(mb_build *b, const char *name, double ms,
                          mb_error *err);
/* Ends the build in progress: writes state.json atomically with status ok
 * (status == MB_STATUS_OK) or failed (with `error`, or the status's text
 * when error is NULL), the key, stage times, build_ms (< 0: unknown), the
 * artifacts and their sizes, and the times. An ok build whose artifact is
 * missing is recorded as failed and the call fails with MB_STATUS_IO.
 * Fails with MB_STATUS_INVALID_ARGUMENT on a hit or a second call. */
mb_status mb__build_finish(mb_build *b, mb_status status, const char *error,
                           double build_ms, mb_error *err);
/* Records one more use of a hit: hits + 1, last_used = now, and the key's
 * model path (the file this run hashed). */
mb_status mb__build_mark_hit(mb_build *b, mb_error *err);
/* Deletes the artifacts (for --lean-cache), keeping state.json and logs;
 * the state says lean, so the next open is a miss "artifacts removed (lean
 * cache)". Call it after mb__build_finish or on a hit. */
mb_status mb__build_lean(mb_build *b, mb_error *err);
/* Releases the lock and frees b. A build in progress that was never
 * finished is recorded as failed ("not finished"). NULL is a no-op. */
void mb__build_close(mb_build *b);

/* ---- the whole cache: listing, removal, cleaning ---- */

/* Why a build is worth removing, X(NAME, "name"). */
#define MB_BUILD_STALE_LIST(X)                                                 \
  X(NONE, "fresh")                                                             \
  X(FAILED, "failed")                                                          \
  X(VERSION, "other modelbench version")                                       \
  X(ORPHAN, "orphaned")

typedef enum mb_build_stale {
#define MB_X(name, str) MB_BUILD_STALE_##name,
  MB_BUILD_STALE_LIST(MB_X)
#undef MB_X
      MB_BUILD_STALE_COUNT
} mb_build_stale;

const char *mb__build_stale_name(mb_build_stale stale);

typedef struct mb_build_info {
  const char *id;     /* "<model-stem>-<sha12>/<CONVERSION>-<keyhash12>" */
  const char *folder; /* <cache dir>/builds/<id> */
  bool has_state;     /* state.json was read; `state` is valid */
  mb_build_state state;
  bool in_use;        /* another process holds the lock right now */
  int64_t disk_bytes; /* every file in the folder */
  mb_build_stale stale;
  const char *stale_reason; /* NULL when fresh, else one line */
} mb_build_info;

typedef struct mb_build_list {
  const char *cache_dir;
  int n_builds;
  mb_build_info *builds; /* sorted by id */
  int n_empty_models;
  const char **empty_models; /* model folders without builds */
  mb_arena *arena;           /* everything above */
} mb_build_list;

/* Every build under cache_dir with its parsed state, size and stale
 * verdict: failed builds, builds of another modelbench version, and
 * orphans (no or unreadable state.json, a leftover temporary file, an
 * interrupted build, or a model file that is gone or changed since; a file
 * whose size and mtime are unchanged is taken as unchanged, else it is
 * hashed again). A cache without builds is an empty list. cache_dir:
 * borrowed. *list_out: release with mb__build_list_free. */
mb_status mb__cache_list(const char *cache_dir, mb_build_list **list_out,
                         mb_error *err);
void mb__build_list_free(mb_build_list *list);

/* Whether build b is of `model`, "MODEL[/CONVERSION]": MODEL is a prefix
 * (4 to 64 hex digits) of the model hash a script front shows
 * (key.source_hash) or of the model's sha256, or the path of the model file
 * or of the script; CONVERSION, when given, is the build's conversion. */
bool mb__build_of_model(const mb_build_info *b, const char *model);

/* The build whose id is `id` or starts with it (when only one does).
 * Fails with MB_STATUS_NOT_FOUND when none matches and
 * MB_STATUS_INVALID_ARGUMENT (naming a few) when several do. */
mb_status mb__build_list_find(const mb_build_list *list, const char *id,
                              const mb_build_info **info_out, mb_error *err);

/* Removes the build `id` (exact) and its model folder when that empties.
 * Fails with MB_STATUS_UNAVAILABLE when another process holds it,
 * MB_STATUS_NOT_FOUND when there is no such build, MB_STATUS_IO when
 * something cannot be removed. */
mb_status mb__build_remove(const char *cache_dir, const char *id,
                           mb_error *err);

/* What mb__cache_clean did with one stale build or empty model folder. */
typedef enum mb_cache_clean_action {
  MB_CLEAN_REMOVED,
  MB_CLEAN_WOULD_REMOVE, /* dry run */
  MB_CLEAN_SKIPPED,      /* in use, or no longer stale once locked */
  MB_CLEAN_FAILED,       /* could not remove: `error` says why */
} mb_cache_clean_action;

typedef struct mb_cache_clean_item {
  const char *id;     /* build id, or model folder name */
  const char *reason; /* why it is stale */
  int64_t bytes;
  mb_cache_clean_action action;
  const char *error; /* MB_CLEAN_FAILED / SKIPPED: why; else NULL */
} mb_cache_clean_item;

/* Called once per stale build or empty model folder; item is borrowed
 * for the call. */
typedef void (*mb_cache_clean_fn)(void *user, const mb_cache_clean_item *item);

/* Removes every stale build (see mb__cache_list) and empty model folder,
 * judging each again under its lock (builds in use are skipped). With
 * dry_run, removes nothing. fn (may be NULL) hears about each one;
 * removed_out / bytes_out (may be NULL) receive the count and bytes freed
 * (or that would be). Fails when the cache cannot be listed; a build that
 * cannot be removed is reported through fn and the call goes on, then
 * fails with MB_STATUS_IO. */
mb_status mb__cache_clean(const char *cache_dir, bool dry_run,
                          mb_cache_clean_fn fn, void *user, int *removed_out,
                          int64_t *bytes_out, mb_error *err);

#endif /* MB_CACHE_BUILD_CACHE_H */
