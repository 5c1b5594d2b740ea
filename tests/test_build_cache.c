/* The build cache (src/cache/build_cache.h): a finished build is a hit;
 * a change of any key part is a miss that names the part; failed,
 * interrupted, unfinished and leaned builds are misses with their reason;
 * the rebuild policies; state.json is always whole and never claims ok
 * for a build that did not finish; two processes wanting one build get
 * one build and one hit; listing, stale and orphan detection, removal and
 * cleaning.
 *
 * Also a helper for tests/cli_cache.sh (bench does not fill the cache
 * yet):
 *   test_build_cache --make-build CACHE MODEL CONVERSION [--fail MSG]
 *       [--version V] [--runtime-version V] [--hits N] [--lean]
 *     makes one build (artifact model.onnx) and prints its id;
 *   test_build_cache --make-result CACHE MODEL CONVERSION STATUS MEDIAN_MS
 *       [ERROR]
 *     records a run with that one result in CACHE/results.db. */
#include "cache/build_cache.h"
#include "core/json_parse.h"
#include "db/results_db.h"
#include "modelbench.h"
#include "test.h"
#include "test_files.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Paths here are short temporary ones; GCC cannot know that snprintf
 * into PATH_MAX buffers never truncates them. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

/* ---- helpers ---- */

static int make_tmpdir(char *dir, size_t size) {
  snprintf(dir, size, "/tmp/mb_test_cache_XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int read_text(const char *path, char *buf, size_t size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, size - 1, f);
  buf[n] = '\0';
  fclose(f);
  return 0;
}

static bool exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

static void file_sha256(const char *path, char hex[65]) {
  char buf[4096];
  size_t n;
  mb_sha256 sha;
  uint8_t digest[32];
  FILE *f = fopen(path, "rb");
  mb__sha256_init(&sha);
  while (f && (n = fread(buf, 1, sizeof buf, f)) > 0)
    mb__sha256_update(&sha, buf, n);
  if (f)
    fclose(f);
  mb__sha256_final(&sha, digest);
  mb__sha256_hex(digest, hex);
}

/* A temp cache folder with a model file and a key for it. */
typedef struct fixture {
  char dir[PATH_MAX];   /* the temp folder */
  char cache[PATH_MAX]; /* dir/cache */
  char model[PATH_MAX]; /* dir/net.onnx */
  char sha[65];
  mb_build_key key;
} fixture;

static int fixture_init(fixture *f) {
  memset(f, 0, sizeof *f);
  if (make_tmpdir(f->dir, sizeof f->dir))
    return -1;
  snprintf(f->cache, sizeof f->cache, "%s/cache", f->dir);
  snprintf(f->model, sizeof f->model, "%s/net.onnx", f->dir);
  if (test_write_text(f->model, "pretend this is an onnx model"))
    return -1;
  file_sha256(f->model, f->sha);
  f->key = (mb_build_key){
      .model_path = f->model,
      .model_sha256 = f->sha,
      .inputs = "x:float32[1,3,224,224]",
      .conversion = "ORT_CPU",
      .steps = "ORT_CPU",
      .options = "opt_level=all",
      .tool_version = NULL, /* this build's */
      .runtime = "onnxruntime",
      .runtime_version = "1.20.1",
      .machine = "Test CPU; avx2 fma",
  };
  return 0;
}

static void fixture_free(fixture *f) {
  test_remove_tree(f->dir);
}

/* Opens key, and on a miss builds it: writes model.onnx with `content`,
 * times two stages, finishes ok. *hit_out (may be NULL) says which. */
static int build_ok(const char *cache, const mb_build_key *key,
                    const char *content, bool *hit_out) {
  mb_build *b = NULL;
  mb_error err = {0};
  char path[PATH_MAX];
  if (mb__build_open(cache, key, MB_REBUILD_IF_NEEDED, &b, &err)) {
    fprintf(stderr, "  open: %s\n", err.message);
    return -1;
  }
  if (hit_out)
    *hit_out = mb__build_hit(b);
  if (!mb__build_hit(b)) {
    if (!mb__build_path(b, "model.onnx", path, sizeof path) ||
        test_write_text(path, content) ||
        mb__build_add_artifact(b, "model.onnx", &err) ||
        mb__build_stage(b, "convert", 1.5, &err) ||
        mb__build_stage(b, "optimize", 2.0, &err) ||
        mb__build_finish(b, MB_STATUS_OK, NULL, 3.5, &err)) {
      fprintf(stderr, "  build: %s\n", err.message);
      mb__build_close(b);
      return -1;
    }
  } else if (mb__build_mark_hit(b, &err)) {
    mb__build_close(b);
    return -1;
  }
  mb__build_close(b);
  return 0;
}

/* Opens key and returns the reason (copied), closing without building
 * (the build is then recorded as unfinished, which the callers do not
 * mind: they open the next key). */
static int open_reason(const char *cache, const mb_build_key *key,
                       mb_rebuild_policy policy, bool *hit, char *reason,
                       size_t size) {
  mb_build *b = NULL;
  mb_error err = {0};
  if (mb__build_open(cache, key, policy, &b, &err)) {
    snprintf(reason, size, "%s", err.message);
    return -1;
  }
  *hit = mb__build_hit(b);
  snprintf(reason, size, "%s", mb__build_reason(b));
  mb__build_close(b);
  return 0;
}

static int count_tmp_files(const char *folder) {
  int n = 0;
  DIR *d = opendir(folder);
  struct dirent *e;
  while (d && (e = readdir(d)))
    n += strncmp(e->d_name, "state.json.tmp", 14) == 0;
  if (d)
    closedir(d);
  return n;
}

static const mb_build_info *find_info(const mb_build_list *list,
                                      const char *id) {
  for (int i = 0; i < list->n_builds; i++)
    if (strcmp(list->builds[i].id, id) == 0)
      return &list->builds[i];
  return NULL;
}

/* The id of key's build (opened on a hit only, so nothing changes). */
static void build_id(const char *cache, const mb_build_key *key, char *id,
                     size_t size) {
  mb_build *b = NULL;
  id[0] = '\0';
  if (mb__build_open(cache, key, MB_REBUILD_NEVER, &b, NULL) == MB_STATUS_OK)
    snprintf(id, size, "%s", mb__build_id(b));
  mb__build_close(b);
}

/* ---- tests ---- */

TEST(miss_then_hit) {
  fixture f;
  mb_build *b = NULL;
  mb_error err = {0};
  char path[PATH_MAX], text[256];
  ASSERT_EQ(fixture_init(&f), 0);
  ASSERT_OK(mb__build_open(f.cache, &f.key, MB_REBUILD_IF_NEEDED, &b, &err),
            &err);
  ASSERT(!mb__build_hit(b));
  ASSERT_STR_EQ(mb__build_reason(b), "new");
  /* The folder sits where the header says. */
  char expect[PATH_MAX];
  snprintf(expect, sizeof expect, "%s/builds/net-%.12s/ORT_CPU-", f.cache,
           f.sha);
  ASSERT(strncmp(mb__build_folder(b), expect, strlen(expect)) == 0);
  ASSERT_EQ(strlen(mb__build_folder(b)), strlen(expect) + 12);
  snprintf(expect, sizeof expect, "net-%.12s/ORT_CPU-", f.sha);
  ASSERT(strncmp(mb__build_id(b), expect, strlen(expect)) == 0);
  /* While building, the state says so. */
  snprintf(path, sizeof path, "%s/state.json", mb__build_folder(b));
  ASSERT_EQ(read_text(path, text, sizeof text), 0);
  ASSERT_CONTAINS(text, "\"status\": \"building\"");
  ASSERT(mb__build_path(b, "model.onnx", path, sizeof path));
  ASSERT_EQ(test_write_text(path, "converted"), 0);
  ASSERT_OK(mb__build_add_artifact(b, "model.onnx", &err), &err);
  ASSERT_OK(mb__build_add_artifact(b, "model.onnx", &err), &err);
  ASSERT_OK(mb__build_stage(b, "convert", 1.0, &err), &err);
  ASSERT_OK(mb__build_stage(b, "convert", 0.5, &err), &err);
  ASSERT_OK(mb__build_finish(b, MB_STATUS_OK, NULL, 2.5, &err), &err);
  /* Only once. */
  ASSERT_EQ(mb__build_finish(b, MB_STATUS_OK, NULL, 2.5, &err),
            MB_STATUS_INVALID_ARGUMENT);
  const mb_build_state *s = mb__build_state(b);
  ASSERT_EQ(s->status, MB_BUILD_OK);
  ASSERT_EQ(s->n_artifacts, 1);
  ASSERT_EQ(s->artifacts[0].bytes, 9);
  ASSERT_EQ(s->n_stages, 1);
  ASSERT_NEAR(s->stages[0].ms, 1.5, 1e-12);
  ASSERT_EQ(s->builds, 1);
  mb__build_close(b);

  ASSERT_OK(mb__build_open(f.cache, &f.key, MB_REBUILD_IF_NEEDED, &b, &err),
            &err);
  ASSERT(mb__build_hit(b));
  ASSERT_STR_EQ(mb__build_reason(b), "hit");
  ASSERT(mb__build_path(b, "model.onnx", path, sizeof path));
  ASSERT_EQ(read_text(path, text, sizeof text), 0);
  ASSERT_STR_EQ(text, "converted");
  /* A hit is not a build in progress. */
  ASSERT_EQ(mb__build_add_artifact(b, "x.bin", &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(mb__build_finish(b, MB_STATUS_OK, NULL, 1, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_OK(mb__build_mark_hit(b, &err), &err);
  ASSERT_OK(mb__build_mark_hit(b, &err), &err);
  ASSERT_EQ(mb__build_state(b)->hits, 2);
  mb__build_close(b);

  /* state.json holds every key part, readable, and the rest. */
  mb_json_doc *doc = NULL;
  char dir[PATH_MAX];
  build_id(f.cache, &f.key, text, sizeof text);
  snprintf(dir, sizeof dir, "%s/builds/%s/state.json", f.cache, text);
  ASSERT_OK(mb__json_parse_file(dir, &doc, &err), &err);
  const mb_json_value *key = mb__json_find(&doc->root, "key");
  ASSERT(key && key->count == MB_BUILD_KEY_PART_COUNT);
  ASSERT_STR_EQ(mb__json_find(key, "inputs")->string, "x:float32[1,3,224,224]");
  ASSERT_STR_EQ(mb__json_find(key, "modelbench_version")->string,
                MB_VERSION_STRING);
  ASSERT_STR_EQ(mb__json_find(key, "machine")->string, "Test CPU; avx2 fma");
  ASSERT_STR_EQ(mb__json_find(key, "runtime_version")->string, "1.20.1");
  ASSERT_STR_EQ(mb__json_find(&doc->root, "status")->string, "ok");
  ASSERT_EQ(mb__json_find(&doc->root, "hits")->integer, 2);
  ASSERT_NEAR(mb__json_find(&doc->root, "build_ms")->number, 2.5, 1e-12);
  ASSERT_STR_EQ(
      mb__json_find(mb__json_find(&doc->root, "model"), "path")->string,
      f.model);
  const mb_json_value *arts = mb__json_find(&doc->root, "artifacts");
  ASSERT(arts && arts->count == 1);
  ASSERT_STR_EQ(mb__json_find(&arts->items[0], "name")->string, "model.onnx");
  ASSERT_EQ(mb__json_find(&arts->items[0], "bytes")->integer, 9);
  ASSERT(mb__json_find(&doc->root, "created")->type == MB_JSON_STRING);
  ASSERT(mb__json_find(&doc->root, "last_used")->type == MB_JSON_STRING);
  mb__json_doc_free(doc);
  fixture_free(&f);
  return 0;
}

TEST(key_part_changes) {
  /* part, new value, the reason expected */
  static const struct {
    mb_build_key_part part;
    const char *value, *reason;
  } cases[] = {
      {MB_BUILD_KEY_inputs, "x:float32[8,3,224,224]",
       "input signature changed x:float32[1,3,224,224] -> "
       "x:float32[8,3,224,224]"},
      {MB_BUILD_KEY_steps, "OPTIMIZE;ORT_CPU",
       "conversion steps changed ORT_CPU -> OPTIMIZE;ORT_CPU"},
      {MB_BUILD_KEY_options, "opt_level=basic",
       "build options changed opt_level=all -> opt_level=basic"},
      {MB_BUILD_KEY_tool_version, "0.2.0",
       "modelbench version changed " MB_VERSION_STRING " -> 0.2.0"},
      {MB_BUILD_KEY_runtime, "onnxruntime-gpu",
       "runtime changed onnxruntime -> onnxruntime-gpu"},
      {MB_BUILD_KEY_runtime_version, "1.21.0",
       "runtime version changed 1.20.1 -> 1.21.0"},
      {MB_BUILD_KEY_machine, "Other CPU; avx512f",
       "machine changed Test CPU; avx2 fma -> Other CPU; avx512f"},
  };
  fixture f;
  char reason[MB_ERROR_MESSAGE_SIZE], base_id[PATH_MAX];
  bool hit;
  ASSERT_EQ(fixture_init(&f), 0);
  ASSERT_EQ(build_ok(f.cache, &f.key, "base", NULL), 0);
  build_id(f.cache, &f.key, base_id, sizeof base_id);
  for (size_t i = 0; i < MB_ARRAY_COUNT(cases); i++) {
    mb_build_key key = f.key;
    const char **field = NULL;
    switch (cases[i].part) {
    case MB_BUILD_KEY_inputs:
      field = &key.inputs;
      break;
    case MB_BUILD_KEY_steps:
      field = &key.steps;
      break;
    case MB_BUILD_KEY_options:
      field = &key.options;
      break;
    case MB_BUILD_KEY_tool_version:
      field = &key.tool_version;
      break;
    case MB_BUILD_KEY_runtime:
      field = &key.runtime;
      break;
    case MB_BUILD_KEY_runtime_version:
      field = &key.runtime_version;
      break;
    default:
      field = &key.machine;
      break;
    }
    *field = cases[i].value;
    ASSERT_STR_EQ(mb__build_key_get(&key, cases[i].part), cases[i].value);
    char h1[65], h2[65];
    mb__build_key_hash(&f.key, h1);
    mb__build_key_hash(&key, h2);
    ASSERT(strcmp(h1, h2) != 0);
    ASSERT_EQ(open_reason(f.cache, &key, MB_REBUILD_IF_NEEDED, &hit, reason,
                          sizeof reason),
              0);
    ASSERT(!hit);
    ASSERT_STR_EQ(reason, cases[i].reason);
  }
  /* A different model (same path, other bytes): another model folder. */
  mb_build_key key = f.key;
  char other_sha[65];
  memset(other_sha, 'b', 64);
  other_sha[64] = '\0';
  key.model_sha256 = other_sha;
  ASSERT_EQ(open_reason(f.cache, &key, MB_REBUILD_IF_NEEDED, &hit, reason,
                        sizeof reason),
            0);
  ASSERT(!hit);
  char expect[128];
  snprintf(expect, sizeof expect, "model sha256 changed %.12s -> bbbbbbbbbbbb",
           f.sha);
  ASSERT_STR_EQ(reason, expect);
  /* Another conversion of the same model is simply new. */
  key = f.key;
  key.conversion = "REFERENCE";
  ASSERT_EQ(open_reason(f.cache, &key, MB_REBUILD_IF_NEEDED, &hit, reason,
                        sizeof reason),
            0);
  ASSERT_STR_EQ(reason, "new");
  /* Two parts at once are both named. */
  key = f.key;
  key.tool_version = "9.9.9";
  key.runtime_version = "2.0.0";
  ASSERT_EQ(open_reason(f.cache, &key, MB_REBUILD_IF_NEEDED, &hit, reason,
                        sizeof reason),
            0);
  ASSERT_CONTAINS(reason, "modelbench version changed");
  ASSERT_CONTAINS(reason, "; runtime version changed 1.20.1 -> 2.0.0");
  /* None of that touched the first build. */
  ASSERT_EQ(build_ok(f.cache, &f.key, "unused", &hit), 0);
  ASSERT(hit);
  /* The model path is not part of the key: a copy elsewhere hits. */
  char copy[PATH_MAX];
  snprintf(copy, sizeof copy, "%s/copy.onnx", f.dir);
  ASSERT_EQ(test_write_text(copy, "pretend this is an onnx model"), 0);
  key = f.key;
  key.model_path = copy;
  char h1[65], h2[65];
  mb__build_key_hash(&f.key, h1);
  mb__build_key_hash(&key, h2);
  ASSERT_STR_EQ(h1, h2);
  fixture_free(&f);
  return 0;
}

TEST(failed_build_is_recorded) {
  fixture f;
  mb_build *b = NULL;
  mb_error err = {0};
  char reason[MB_ERROR_MESSAGE_SIZE];
  bool hit;
  ASSERT_EQ(fixture_init(&f), 0);
  ASSERT_OK(mb__build_open(f.cache, &f.key, MB_REBUILD_IF_NEEDED, &b, &err),
            &err);
  ASSERT_OK(mb__build_stage(b, "convert", 4.0, &err), &err);
  ASSERT_OK(mb__build_finish(b, MB_STATUS_UNSUPPORTED,
                             "node 'n3' (FancyOp): unsupported", 4.0, &err),
            &err);
  ASSERT_EQ(mb__build_state(b)->status, MB_BUILD_FAILED);
  mb__build_close(b);
  ASSERT_EQ(open_reason(f.cache, &f.key, MB_REBUILD_IF_NEEDED, &hit, reason,
                        sizeof reason),
            0);
  ASSERT(!hit);
  ASSERT_STR_EQ(reason, "failed before: node 'n3' (FancyOp): unsupported");
  /* That open never finished: recorded as failed, not left "building". */
  ASSERT_EQ(open_reason(f.cache, &f.key, MB_REBUILD_IF_NEEDED, &hit, reason,
                        sizeof reason),
            0);
  ASSERT_CONTAINS(reason, "failed before: build was not finished");
  /* Error NULL: the status's text. */
  ASSERT_OK(mb__build_open(f.cache, &f.key, MB_REBUILD_IF_NEEDED, &b, &err),
            &err);
  ASSERT_OK(mb__build_finish(b, MB_STATUS_OUT_OF_MEMORY, NULL, -1, &err), &err);
  ASSERT(isnan(mb__build_state(b)->build_ms));
  mb__build_close(b);
  ASSERT_EQ(open_reason(f.cache, &f.key, MB_REBUILD_IF_NEEDED, &hit, reason,
                        sizeof reason),
            0);
  ASSERT_STR_EQ(reason, "failed before: out of memory");
  /* An ok build whose artifact was never written is a failed one. */
  char path[PATH_MAX];
  ASSERT_OK(mb__build_open(f.cache, &f.key, MB_REBUILD_IF_NEEDED, &b, &err),
            &err);
  ASSERT_OK(mb__build_add_artifact(b, "never.bin", &err), &err);
  ASSERT_EQ(mb__build_finish(b, MB_STATUS_OK, NULL, 1, &err), MB_STATUS_IO);
  ASSERT_CONTAINS(err.message, "never.bin");
  snprintf(path, sizeof path, "%s", mb__build_folder(b));
  mb__build_close(b);
  ASSERT_EQ(open_reason(f.cache, &f.key, MB_REBUILD_IF_NEEDED, &hit, reason,
                        sizeof reason),
            0);
  ASSERT_STR_EQ(reason, "failed before: artifact never.bin was not written");
  /* And then a good build replaces all that. */
  ASSERT_EQ(build_ok(f.cache, &f.key, "good", &hit), 0);
  ASSERT(!hit);
  ASSERT_EQ(build_ok(f.cache, &f.key, "good", &hit), 0);
  ASSERT(hit);
  fixture_free(&f);
  return 0;
}

TEST(crash_mid_build_never_claims_ok) {
  fixture f;
  char reason[MB_ERROR_MESSAGE_SIZE], folder[PATH_MAX], path[PATH_MAX],
      text[4096];
  bool hit;
  ASSERT_EQ(fixture_init(&f), 0);
  /* A good build first, so a crash during the rebuild has an "ok" state
   * to (wrongly) leave behind. */
  ASSERT_EQ(build_ok(f.cache, &f.key, "old", NULL), 0);
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    mb_build *b = NULL;
    if (mb__build_open(f.cache, &f.key, MB_REBUILD_ALWAYS, &b, NULL))
      _exit(2);
    mb__build_path(b, "model.onnx", path, sizeof path);
    test_write_text(path, "half writ");
    mb__build_add_artifact(b, "model.onnx", NULL);
    _exit(0); /* killed mid-build: no finish, no close */
  }
  int ws = 0;
  ASSERT_EQ(waitpid(pid, &ws, 0), pid);
  ASSERT(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  build_id(f.cache, &f.key, text, sizeof text); /* a miss now: no id */
  ASSERT_STR_EQ(text, "");
  mb_build_list *list = NULL;
  mb_error err = {0};
  ASSERT_OK(mb__cache_list(f.cache, &list, &err), &err);
  ASSERT_EQ(list->n_builds, 1);
  snprintf(folder, sizeof folder, "%s", list->builds[0].folder);
  ASSERT_EQ(list->builds[0].stale, MB_BUILD_STALE_ORPHAN);
  ASSERT_CONTAINS(list->builds[0].stale_reason, "interrupted");
  mb__build_list_free(list);
  snprintf(path, sizeof path, "%s/state.json", folder);
  ASSERT_EQ(read_text(path, text, sizeof text), 0);
  ASSERT_CONTAINS(text, "\"status\": \"building\"");
  ASSERT_EQ(open_reason(f.cache, &f.key, MB_REBUILD_IF_NEEDED, &hit, reason,
                        sizeof reason),
            0);
  ASSERT(!hit);
  ASSERT_STR_EQ(reason, "interrupted before (crashed or killed mid-build)");
  fixture_free(&f);
  return 0;
}

TEST(lean_and_missing_artifacts) {
  fixture f;
  mb_build *b = NULL;
  mb_error err = {0};
  char reason[MB_ERROR_MESSAGE_SIZE], path[PATH_MAX], log[PATH_MAX];
  bool hit;
  ASSERT_EQ(fixture_init(&f), 0);
  ASSERT_OK(mb__build_open(f.cache, &f.key, MB_REBUILD_IF_NEEDED, &b, &err),
            &err);
  /* Leaning a build in progress makes no sense. */
  ASSERT_EQ(mb__build_lean(b, &err), MB_STATUS_INVALID_ARGUMENT);
  ASSERT(mb__build_path(b, "sub/weights.bin", path, sizeof path));
  char sub[PATH_MAX];
  snprintf(sub, sizeof sub, "%s/sub", mb__build_folder(b));
  ASSERT_EQ(mkdir(sub, 0755), 0);
  ASSERT_EQ(test_write_text(path, "0123456789"), 0);
  ASSERT_OK(mb__build_add_artifact(b, "sub", &err), &err);
  snprintf(log, sizeof log, "%s/build.log", mb__build_folder(b));
  ASSERT_EQ(test_write_text(log, "log lines"), 0);
  ASSERT_OK(mb__build_finish(b, MB_STATUS_OK, NULL, 1, &err), &err);
  ASSERT_EQ(mb__build_state(b)->artifacts[0].bytes, 10);
  ASSERT_OK(mb__build_lean(b, &err), &err);
  ASSERT(!exists(sub));
  ASSERT(exists(log)); /* logs stay */
  mb__build_close(b);
  ASSERT_EQ(open_reason(f.cache, &f.key, MB_REBUILD_IF_NEEDED, &hit, reason,
                        sizeof reason),
            0);
  ASSERT(!hit);
  ASSERT_STR_EQ(reason, "artifacts removed (lean cache)");
  /* Lean on a hit works too. */
  ASSERT_EQ(build_ok(f.cache, &f.key, "full", &hit), 0);
  ASSERT(!hit);
  ASSERT_OK(mb__build_open(f.cache, &f.key, MB_REBUILD_IF_NEEDED, &b, &err),
            &err);
  ASSERT(mb__build_hit(b));
  ASSERT_OK(mb__build_lean(b, &err), &err);
  mb__build_close(b);
  ASSERT_EQ(build_ok(f.cache, &f.key, "full", &hit), 0);
  ASSERT(!hit);
  /* An artifact deleted behind the cache's back. */
  ASSERT_OK(mb__build_open(f.cache, &f.key, MB_REBUILD_IF_NEEDED, &b, &err),
            &err);
  ASSERT(mb__build_hit(b));
  mb__build_path(b, "model.onnx", path, sizeof path);
  mb__build_close(b);
  ASSERT_EQ(unlink(path), 0);
  ASSERT_EQ(open_reason(f.cache, &f.key, MB_REBUILD_IF_NEEDED, &hit, reason,
                        sizeof reason),
            0);
  ASSERT(!hit);
  ASSERT_STR_EQ(reason, "artifact model.onnx is missing");
  fixture_free(&f);
  return 0;
}

/* Issue 27, finding 4: a state.json naming "sub/victim.txt" with "sub" a
 * symlink out of the cache must not make the next open (or `cache rm`,
 * `cache clean`, lean) delete the target: the walk stops at the symlink,
 * removes the link itself and says so. */
TEST(symlinks_never_followed) {
  fixture f;
  mb_build *b = NULL;
  mb_error err = {0};
  char path[PATH_MAX], sub[PATH_MAX], outside[PATH_MAX], victim[PATH_MAX];
  ASSERT_EQ(fixture_init(&f), 0);
  snprintf(outside, sizeof outside, "%s/outside", f.dir);
  snprintf(victim, sizeof victim, "%s/victim.txt", outside);
  ASSERT_EQ(mkdir(outside, 0700), 0);
  ASSERT_EQ(test_write_text(victim, "keep me"), 0);
  /* Two recorded builds whose artifact sits in "sub": one ok, one failed
   * (a failed build's artifacts are removed without being judged). */
  for (int failed = 0; failed < 2; failed++) {
    mb_build_key key = f.key;
    key.options = failed ? "opt_level=basic" : "opt_level=all";
    ASSERT_OK(mb__build_open(f.cache, &key, MB_REBUILD_IF_NEEDED, &b, &err),
              &err);
    snprintf(sub, sizeof sub, "%s/sub", mb__build_folder(b));
    ASSERT_EQ(mkdir(sub, 0700), 0);
    ASSERT(mb__build_path(b, "sub/victim.txt", path, sizeof path));
    ASSERT_EQ(test_write_text(path, "ours"), 0);
    ASSERT_OK(mb__build_add_artifact(b, "sub/victim.txt", &err), &err);
    mb__build_finish(b, failed ? MB_STATUS_INTERNAL : MB_STATUS_OK, "boom", 1,
                     NULL);
    mb__build_close(b);
    /* What a hostile writer of the cache leaves: sub -> outside. */
    ASSERT_EQ(unlink(path), 0);
    ASSERT_EQ(rmdir(sub), 0);
    ASSERT_EQ(symlink(outside, sub), 0);
    ASSERT_OK(mb__build_open(f.cache, &key, MB_REBUILD_IF_NEEDED, &b, &err),
              &err);
    ASSERT(!mb__build_hit(b));
    ASSERT_CONTAINS(mb__build_reason(b),
                    "artifact sub/victim.txt: sub is a symbolic link (not "
                    "followed)");
    ASSERT_CONTAINS(mb__build_warning(b), "sub is a symbolic link");
    if (failed)
      ASSERT_CONTAINS(mb__build_reason(b), "failed before: boom");
    ASSERT(exists(victim));
    ASSERT(!exists(sub)); /* the link itself is gone */
    mb__build_close(b);
  }
  /* A link planted in a build folder being made. */
  ASSERT_OK(mb__build_open(f.cache, &f.key, MB_REBUILD_IF_NEEDED, &b, &err),
            &err);
  snprintf(sub, sizeof sub, "%s/sub", mb__build_folder(b));
  ASSERT_EQ(symlink(outside, sub), 0);
  ASSERT(!mb__build_path(b, "sub/victim.txt", path, sizeof path));
  ASSERT(mb__build_path(b, "new/x.bin", path, sizeof path)); /* not there yet */
  /* A builder asking for a path through it gets none; an artifact
   * through it counts as not written; lean refuses to walk it. */
  ASSERT_OK(mb__build_add_artifact(b, "sub/victim.txt", &err), &err);
  ASSERT_EQ(mb__build_finish(b, MB_STATUS_OK, NULL, 1, &err), MB_STATUS_IO);
  ASSERT_CONTAINS(err.message, "artifact sub/victim.txt was not written");
  ASSERT_EQ(mb__build_lean(b, &err), MB_STATUS_IO);
  ASSERT_CONTAINS(err.message, "sub is a symbolic link");
  ASSERT(exists(victim));
  mb__build_close(b);

  /* `cache rm` of an id whose model folder is a symlink out of the cache:
   * refused, nothing there removed. */
  char builds[PATH_MAX], evil[PATH_MAX], fake[PATH_MAX], keep[PATH_MAX];
  snprintf(builds, sizeof builds, "%s/builds", f.cache);
  snprintf(evil, sizeof evil, "%s/evil-000000000000", builds);
  snprintf(fake, sizeof fake, "%s/b", outside);
  snprintf(keep, sizeof keep, "%s/keep.txt", fake);
  ASSERT_EQ(mkdir(fake, 0700), 0);
  ASSERT_EQ(test_write_text(keep, "keep me too"), 0);
  ASSERT_EQ(symlink(outside, evil), 0);
  ASSERT_EQ(mb__build_remove(f.cache, "evil-000000000000/b", &err),
            MB_STATUS_IO);
  ASSERT_CONTAINS(err.message, "evil-000000000000 is a symbolic link");
  ASSERT(exists(keep));
  ASSERT(exists(victim));

  /* `cache clean --all`-style removal of every stale build: the failed
   * build holds a link to outside; the link goes, the target stays. */
  mb_build_key key = f.key;
  key.options = "opt_level=basic";
  ASSERT_OK(mb__build_open(f.cache, &key, MB_REBUILD_IF_NEEDED, &b, &err),
            &err);
  snprintf(sub, sizeof sub, "%s/link", mb__build_folder(b));
  ASSERT_EQ(symlink(outside, sub), 0);
  mb__build_finish(b, MB_STATUS_INTERNAL, "boom", 1, NULL);
  mb__build_close(b);
  int removed = 0;
  mb__cache_clean(f.cache, false, NULL, NULL, &removed, NULL, &err);
  ASSERT(removed >= 1);
  ASSERT(!exists(sub));
  ASSERT(exists(victim));
  ASSERT(exists(keep));
  fixture_free(&f);
  return 0;
}

TEST(rebuild_policies) {
  fixture f;
  mb_build *b = NULL;
  mb_error err = {0};
  char reason[MB_ERROR_MESSAGE_SIZE], builds[PATH_MAX];
  bool hit;
  ASSERT_EQ(fixture_init(&f), 0);
  /* NEVER without a build: not found, and nothing created. */
  ASSERT_EQ(mb__build_open(f.cache, &f.key, MB_REBUILD_NEVER, &b, &err),
            MB_STATUS_NOT_FOUND);
  ASSERT(b == NULL);
  ASSERT_CONTAINS(err.message, "--rebuild never");
  ASSERT_CONTAINS(err.message, "ORT_CPU");
  snprintf(builds, sizeof builds, "%s/builds", f.cache);
  ASSERT(!exists(builds));
  ASSERT_EQ(build_ok(f.cache, &f.key, "v1", NULL), 0);
  /* NEVER with a build: a hit. */
  ASSERT_EQ(open_reason(f.cache, &f.key, MB_REBUILD_NEVER, &hit, reason,
                        sizeof reason),
            0);
  ASSERT(hit);
  /* ALWAYS: a miss even so, and the old artifact is gone. */
  ASSERT_OK(mb__build_open(f.cache, &f.key, MB_REBUILD_ALWAYS, &b, &err), &err);
  ASSERT(!mb__build_hit(b));
  ASSERT_STR_EQ(mb__build_reason(b), "--rebuild always");
  char path[PATH_MAX];
  mb__build_path(b, "model.onnx", path, sizeof path);
  ASSERT(!exists(path));
  ASSERT_OK(mb__build_finish(b, MB_STATUS_IO, "disk full", 1, &err), &err);
  ASSERT_EQ(mb__build_state(b)->builds, 2);
  mb__build_close(b);
  /* NEVER with a failed build: not found, saying why. */
  ASSERT_EQ(mb__build_open(f.cache, &f.key, MB_REBUILD_NEVER, &b, &err),
            MB_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(err.message, "failed before: disk full");
  /* Names. */
  mb_rebuild_policy p;
  ASSERT(mb__rebuild_policy_from_name("always", &p) && p == MB_REBUILD_ALWAYS);
  ASSERT(mb__rebuild_policy_from_name("if-needed", &p) &&
         p == MB_REBUILD_IF_NEEDED);
  ASSERT(!mb__rebuild_policy_from_name("sometimes", &p));
  ASSERT_STR_EQ(mb__rebuild_policy_name(MB_REBUILD_NEVER), "never");
  fixture_free(&f);
  return 0;
}

TEST(bad_keys_and_names) {
  fixture f;
  mb_build *b = NULL;
  mb_error err = {0};
  char path[PATH_MAX];
  ASSERT_EQ(fixture_init(&f), 0);
  mb_build_key key = f.key;
  key.model_sha256 = NULL;
  ASSERT_EQ(mb__build_open(f.cache, &key, MB_REBUILD_IF_NEEDED, &b, &err),
            MB_STATUS_INVALID_ARGUMENT);
  key.model_sha256 = "../../etc";
  ASSERT_EQ(mb__build_open(f.cache, &key, MB_REBUILD_IF_NEEDED, &b, &err),
            MB_STATUS_INVALID_ARGUMENT);
  key = f.key;
  key.conversion = "";
  ASSERT_EQ(mb__build_open(f.cache, &key, MB_REBUILD_IF_NEEDED, &b, &err),
            MB_STATUS_INVALID_ARGUMENT);
  /* Odd characters in names stay inside one path component. */
  key = f.key;
  key.conversion = "../FP16+X/Y";
  key.model_path = "/tmp/my model.v2.onnx";
  ASSERT_OK(mb__build_open(f.cache, &key, MB_REBUILD_IF_NEEDED, &b, &err),
            &err);
  char expect[64];
  snprintf(expect, sizeof expect, "my_model.v2-%.12s/_._FP16+X_Y-", f.sha);
  ASSERT(strncmp(mb__build_id(b), expect, strlen(expect)) == 0);
  static const char *const bad[] = {
      "",   "/etc/passwd", "../x",  "a/../b", "a//b",
      "a/", "state.json",  ".lock", "./a",    "state.json.tmp.1"};
  for (size_t i = 0; i < MB_ARRAY_COUNT(bad); i++) {
    ASSERT(mb__build_path(b, bad[i], path, sizeof path) == NULL);
    ASSERT_EQ(mb__build_add_artifact(b, bad[i], &err),
              MB_STATUS_INVALID_ARGUMENT);
  }
  ASSERT(mb__build_path(b, "sub/dir/w.bin", path, sizeof path));
  ASSERT(mb__build_path(b, "model.onnx", path, 8) == NULL); /* too small */
  ASSERT_EQ(mb__build_stage(b, "", 1, &err), MB_STATUS_INVALID_ARGUMENT);
  mb__build_close(b);
  fixture_free(&f);
  return 0;
}

TEST(helpers) {
  mb_machine_info m;
  char buf[512], *sig = NULL;
  mb_error err = {0};
  memset(&m, 0, sizeof m);
  snprintf(m.cpu_model, sizeof m.cpu_model, "Some CPU @ 2GHz");
  snprintf(m.isa_flags, sizeof m.isa_flags, "avx2 fma");
  ASSERT_STR_EQ(mb__build_machine_string(&m, buf, sizeof buf),
                "Some CPU @ 2GHz; avx2 fma");
  mb_input_shape shapes[2] = {{"x", 4, {1, 3, 224, 224}}, {"ids", 2, {1, 8}}};
  mb_dtype dtypes[2] = {MB_DTYPE_FLOAT, MB_DTYPE_INT64};
  ASSERT_OK(mb__build_input_signature(2, shapes, dtypes, &sig, &err), &err);
  ASSERT_STR_EQ(sig, "x:float32[1,3,224,224];ids:int64[1,8]");
  free(sig);
  /* Hashes are stable (a change here orphans every user's cache). */
  mb_build_key key = {.model_sha256 = "00", .conversion = "REFERENCE"};
  char h1[65], h2[65];
  mb__build_key_hash(&key, h1);
  key.tool_version = MB_VERSION_STRING;
  mb__build_key_hash(&key, h2);
  ASSERT_STR_EQ(h1, h2); /* NULL version is this version */
  /* Length prefixes: moving a character from one part to the next
   * changes the hash. */
  mb_build_key a = {.model_sha256 = "00", .conversion = "AB", .steps = "C"};
  mb_build_key b = {.model_sha256 = "00", .conversion = "A", .steps = "BC"};
  mb__build_key_hash(&a, h1);
  mb__build_key_hash(&b, h2);
  ASSERT(strcmp(h1, h2) != 0);
  return 0;
}

/* Two processes ask for one build at once: one builds, the other waits
 * and then hits; neither fails. */
TEST(fork_same_key_builds_once) {
  enum { N = 4, BUILT = 10, HIT = 11 };
  fixture f;
  pid_t pids[N];
  ASSERT_EQ(fixture_init(&f), 0);
  for (int i = 0; i < N; i++) {
    pids[i] = fork();
    ASSERT(pids[i] >= 0);
    if (pids[i] == 0) {
      mb_build *b = NULL;
      char path[PATH_MAX], text[64];
      if (mb__build_open(f.cache, &f.key, MB_REBUILD_IF_NEEDED, &b, NULL))
        _exit(1);
      mb__build_path(b, "model.onnx", path, sizeof path);
      int rc;
      if (mb__build_hit(b)) {
        rc = read_text(path, text, sizeof text) == 0 &&
                     strcmp(text, "built once") == 0 &&
                     mb__build_mark_hit(b, NULL) == MB_STATUS_OK
                 ? HIT
                 : 2;
      } else {
        /* Slow enough that the others are waiting on the lock. */
        test_write_text(path, "built");
        usleep(100 * 1000);
        test_write_text(path, "built once");
        rc = mb__build_add_artifact(b, "model.onnx", NULL) == MB_STATUS_OK &&
                     mb__build_finish(b, MB_STATUS_OK, NULL, 100, NULL) ==
                         MB_STATUS_OK
                 ? BUILT
                 : 3;
      }
      mb__build_close(b);
      _exit(rc);
    }
  }
  int built = 0, hits = 0;
  for (int i = 0; i < N; i++) {
    int ws = 0;
    ASSERT_EQ(waitpid(pids[i], &ws, 0), pids[i]);
    ASSERT(WIFEXITED(ws));
    built += WEXITSTATUS(ws) == BUILT;
    hits += WEXITSTATUS(ws) == HIT;
  }
  ASSERT_EQ(built, 1);
  ASSERT_EQ(hits, N - 1);
  mb_build *b = NULL;
  mb_error err = {0};
  ASSERT_OK(mb__build_open(f.cache, &f.key, MB_REBUILD_NEVER, &b, &err), &err);
  ASSERT_EQ(mb__build_state(b)->hits, N - 1);
  ASSERT_EQ(mb__build_state(b)->builds, 1);
  ASSERT_EQ(count_tmp_files(mb__build_folder(b)), 0);
  mb__build_close(b);
  fixture_free(&f);
  return 0;
}

/* Builds of different keys in parallel all succeed. */
TEST(fork_unrelated_keys) {
  enum { N = 4 };
  static const char *const conversions[N] = {"REFERENCE", "ORT_CPU", "XNNPACK",
                                             "FP16+XNNPACK"};
  fixture f;
  pid_t pids[N];
  ASSERT_EQ(fixture_init(&f), 0);
  for (int i = 0; i < N; i++) {
    pids[i] = fork();
    ASSERT(pids[i] >= 0);
    if (pids[i] == 0) {
      mb_build_key key = f.key;
      key.conversion = conversions[i];
      bool hit = true;
      _exit(build_ok(f.cache, &key, conversions[i], &hit) == 0 && !hit ? 0 : 1);
    }
  }
  for (int i = 0; i < N; i++) {
    int ws = 0;
    ASSERT_EQ(waitpid(pids[i], &ws, 0), pids[i]);
    ASSERT(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  }
  mb_build_list *list = NULL;
  mb_error err = {0};
  ASSERT_OK(mb__cache_list(f.cache, &list, &err), &err);
  ASSERT_EQ(list->n_builds, N);
  for (int i = 0; i < N; i++) {
    ASSERT(list->builds[i].has_state);
    ASSERT_EQ(list->builds[i].state.status, MB_BUILD_OK);
    ASSERT_EQ(list->builds[i].stale, MB_BUILD_STALE_NONE);
  }
  mb__build_list_free(list);
  fixture_free(&f);
  return 0;
}

/* A reader never sees a torn state.json while a writer keeps replacing
 * it, and no temporary file is left behind. */
TEST(state_is_never_torn) {
  enum { WRITES = 300 };
  fixture f;
  char state[PATH_MAX], folder[PATH_MAX];
  mb_error err = {0};
  ASSERT_EQ(fixture_init(&f), 0);
  ASSERT_EQ(build_ok(f.cache, &f.key, "x", NULL), 0);
  mb_build *b = NULL;
  ASSERT_OK(mb__build_open(f.cache, &f.key, MB_REBUILD_NEVER, &b, &err), &err);
  snprintf(folder, sizeof folder, "%s", mb__build_folder(b));
  snprintf(state, sizeof state, "%s/state.json", folder);
  mb__build_close(b);
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    mb_build *w = NULL;
    if (mb__build_open(f.cache, &f.key, MB_REBUILD_NEVER, &w, NULL))
      _exit(1);
    for (int i = 0; i < WRITES; i++)
      if (mb__build_mark_hit(w, NULL))
        _exit(2);
    mb__build_close(w);
    _exit(0);
  }
  int64_t last = -1;
  int reads = 0;
  for (;;) {
    int ws = 0;
    pid_t done = waitpid(pid, &ws, WNOHANG);
    mb_json_doc *doc = NULL;
    ASSERT_OK(mb__json_parse_file(state, &doc, &err), &err);
    int64_t hits = mb__json_find(&doc->root, "hits")->integer;
    mb__json_doc_free(doc);
    ASSERT(hits >= last);
    last = hits;
    reads++;
    if (done == pid) {
      ASSERT(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
      break;
    }
  }
  ASSERT_EQ(last, WRITES);
  ASSERT(reads > 0);
  ASSERT_EQ(count_tmp_files(folder), 0);
  fixture_free(&f);
  return 0;
}

/* A build folder removed while another process waits for its lock (a
 * `cache clean` racing a bench) is made again by the waiter. */
TEST(folder_removed_while_waiting) {
  fixture f;
  mb_build *b = NULL;
  mb_error err = {0};
  ASSERT_EQ(fixture_init(&f), 0);
  ASSERT_OK(mb__build_open(f.cache, &f.key, MB_REBUILD_IF_NEEDED, &b, &err),
            &err);
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    bool hit = true;
    _exit(build_ok(f.cache, &f.key, "again", &hit) == 0 && !hit ? 0 : 1);
  }
  usleep(100 * 1000); /* let the child wait on the lock (either way works) */
  char folder[PATH_MAX];
  snprintf(folder, sizeof folder, "%s", mb__build_folder(b));
  test_remove_tree(folder);
  mb__build_close(b); /* its state write fails quietly: folder gone */
  int ws = 0;
  ASSERT_EQ(waitpid(pid, &ws, 0), pid);
  ASSERT(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  bool hit = false;
  ASSERT_EQ(build_ok(f.cache, &f.key, "unused", &hit), 0);
  ASSERT(hit);
  fixture_free(&f);
  return 0;
}

TEST(list_stale_and_orphans) {
  fixture f;
  mb_error err = {0};
  mb_build_list *list = NULL;
  char id_ok[PATH_MAX], id_failed[PATH_MAX], id_version[PATH_MAX],
      id_gone[PATH_MAX], id_changed[PATH_MAX], id_tmp[PATH_MAX],
      path[PATH_MAX * 2];
  ASSERT_EQ(fixture_init(&f), 0);
  /* Empty cache: empty list. */
  ASSERT_OK(mb__cache_list(f.cache, &list, &err), &err);
  ASSERT_EQ(list->n_builds, 0);
  mb__build_list_free(list);

  ASSERT_EQ(build_ok(f.cache, &f.key, "ok", NULL), 0);
  build_id(f.cache, &f.key, id_ok, sizeof id_ok);
  mb_build_key key = f.key;
  key.conversion = "FAILS";
  mb_build *b = NULL;
  ASSERT_OK(mb__build_open(f.cache, &key, MB_REBUILD_IF_NEEDED, &b, &err),
            &err);
  snprintf(id_failed, sizeof id_failed, "%s", mb__build_id(b));
  ASSERT_OK(mb__build_finish(b, MB_STATUS_UNSUPPORTED, "no kernel", 1, &err),
            &err);
  mb__build_close(b);
  key = f.key;
  key.tool_version = "0.0.1";
  ASSERT_EQ(build_ok(f.cache, &key, "old", NULL), 0);
  build_id(f.cache, &key, id_version, sizeof id_version);
  key = f.key;
  key.conversion = "TMP";
  ASSERT_EQ(build_ok(f.cache, &key, "tmp", NULL), 0);
  build_id(f.cache, &key, id_tmp, sizeof id_tmp);
  snprintf(path, sizeof path, "%s/builds/%s/state.json.tmp.99999", f.cache,
           id_tmp);
  ASSERT_EQ(test_write_text(path, "{"), 0);
  /* A model that is then deleted, and one that is then changed. */
  char gone[PATH_MAX], changed[PATH_MAX], sha_gone[65], sha_changed[65];
  snprintf(gone, sizeof gone, "%s/gone.onnx", f.dir);
  snprintf(changed, sizeof changed, "%s/changed.onnx", f.dir);
  ASSERT_EQ(test_write_text(gone, "model that goes away"), 0);
  ASSERT_EQ(test_write_text(changed, "model that changes"), 0);
  file_sha256(gone, sha_gone);
  file_sha256(changed, sha_changed);
  key = f.key;
  key.model_path = gone;
  key.model_sha256 = sha_gone;
  ASSERT_EQ(build_ok(f.cache, &key, "g", NULL), 0);
  build_id(f.cache, &key, id_gone, sizeof id_gone);
  key.model_path = changed;
  key.model_sha256 = sha_changed;
  ASSERT_EQ(build_ok(f.cache, &key, "c", NULL), 0);
  build_id(f.cache, &key, id_changed, sizeof id_changed);
  ASSERT_EQ(unlink(gone), 0);
  ASSERT_EQ(test_write_text(changed, "model that changed!"), 0);
  /* Folders without a state, and with an unreadable one. */
  char nostate[PATH_MAX], badstate[PATH_MAX], empty_model[PATH_MAX];
  snprintf(nostate, sizeof nostate, "%s/builds/net-%.12s/X-000000000000",
           f.cache, f.sha);
  ASSERT_EQ(mkdir(nostate, 0755), 0);
  snprintf(badstate, sizeof badstate, "%s/builds/net-%.12s/Y-000000000000",
           f.cache, f.sha);
  ASSERT_EQ(mkdir(badstate, 0755), 0);
  snprintf(path, sizeof path, "%s/state.json", badstate);
  ASSERT_EQ(test_write_text(path, "{\"format\": 1, \"status\": \"ok\""), 0);
  snprintf(empty_model, sizeof empty_model, "%s/builds/empty-000000000000",
           f.cache);
  ASSERT_EQ(mkdir(empty_model, 0755), 0);

  ASSERT_OK(mb__cache_list(f.cache, &list, &err), &err);
  ASSERT_EQ(list->n_builds, 8);
  ASSERT_EQ(list->n_empty_models, 1);
  ASSERT_STR_EQ(list->empty_models[0], "empty-000000000000");
  for (int i = 1; i < list->n_builds; i++)
    ASSERT(strcmp(list->builds[i - 1].id, list->builds[i].id) < 0);
  const mb_build_info *info = find_info(list, id_ok);
  ASSERT(info && info->has_state && info->stale == MB_BUILD_STALE_NONE);
  ASSERT(info->stale_reason == NULL);
  ASSERT(!info->in_use);
  ASSERT(info->disk_bytes > 2); /* artifact + state */
  ASSERT_EQ(info->state.hits, 0);
  info = find_info(list, id_failed);
  ASSERT(info && info->stale == MB_BUILD_STALE_FAILED);
  ASSERT_STR_EQ(info->stale_reason, "failed: no kernel");
  info = find_info(list, id_version);
  ASSERT(info && info->stale == MB_BUILD_STALE_VERSION);
  ASSERT_STR_EQ(info->stale_reason,
                "built by modelbench 0.0.1 (this is " MB_VERSION_STRING ")");
  info = find_info(list, id_tmp);
  ASSERT(info && info->stale == MB_BUILD_STALE_ORPHAN);
  ASSERT_STR_EQ(info->stale_reason,
                "leftover temporary file state.json.tmp.99999");
  info = find_info(list, id_gone);
  ASSERT(info && info->stale == MB_BUILD_STALE_ORPHAN);
  ASSERT_CONTAINS(info->stale_reason, "gone.onnx no longer exists");
  info = find_info(list, id_changed);
  ASSERT(info && info->stale == MB_BUILD_STALE_ORPHAN);
  ASSERT_CONTAINS(info->stale_reason, "changed.onnx changed");
  const char *rel = strstr(nostate, "/builds/") + 8;
  info = find_info(list, rel);
  ASSERT(info && !info->has_state && info->stale == MB_BUILD_STALE_ORPHAN);
  ASSERT_STR_EQ(info->stale_reason, "no state.json");
  info = find_info(list, strstr(badstate, "/builds/") + 8);
  ASSERT(info && !info->has_state && info->stale == MB_BUILD_STALE_ORPHAN);
  ASSERT_CONTAINS(info->stale_reason, "state.json unreadable");

  /* Lookup by id and unique prefix. */
  const mb_build_info *found = NULL;
  ASSERT_OK(mb__build_list_find(list, id_ok, &found, &err), &err);
  ASSERT(found == find_info(list, id_ok));
  char prefix[PATH_MAX];
  snprintf(prefix, sizeof prefix, "%.*s", (int)(strlen(id_ok) - 6), id_ok);
  ASSERT_OK(mb__build_list_find(list, prefix, &found, &err), &err);
  ASSERT(found == find_info(list, id_ok));
  ASSERT_EQ(mb__build_list_find(list, "net-", &found, &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(err.message, "matches");
  ASSERT_EQ(mb__build_list_find(list, "nope", &found, &err),
            MB_STATUS_NOT_FOUND);
  mb__build_list_free(list);

  /* A model touched but with the same bytes is still the same model. */
  ASSERT_EQ(test_write_text(changed, "model that changes"), 0);
  ASSERT_OK(mb__cache_list(f.cache, &list, &err), &err);
  info = find_info(list, id_changed);
  ASSERT(info && info->stale == MB_BUILD_STALE_NONE);
  mb__build_list_free(list);
  ASSERT_EQ(test_write_text(changed, "model that changed!"), 0);

  /* A build held by someone is in use, and not judged by its missing
   * state while it is being made. */
  key = f.key;
  key.conversion = "HELD";
  ASSERT_OK(mb__build_open(f.cache, &key, MB_REBUILD_IF_NEEDED, &b, &err),
            &err);
  ASSERT_OK(mb__cache_list(f.cache, &list, &err), &err);
  info = find_info(list, mb__build_id(b));
  ASSERT(info && info->in_use && info->stale == MB_BUILD_STALE_NONE);
  ASSERT_EQ(info->state.status, MB_BUILD_BUILDING);
  mb__build_list_free(list);

  /* clean --dry-run: says, removes nothing. */
  int removed = 0;
  int64_t bytes = 0;
  ASSERT_OK(mb__cache_clean(f.cache, true, NULL, NULL, &removed, &bytes, &err),
            &err);
  ASSERT_EQ(removed, 8); /* 7 stale builds + the empty model folder */
  ASSERT(bytes > 0);
  ASSERT(exists(nostate));
  ASSERT(exists(empty_model));
  /* clean: removes them, keeps the good one and the held one. */
  ASSERT_OK(mb__cache_clean(f.cache, false, NULL, NULL, &removed, &bytes, &err),
            &err);
  ASSERT_EQ(removed, 8);
  ASSERT(!exists(nostate));
  ASSERT(!exists(badstate));
  ASSERT(!exists(empty_model));
  ASSERT_OK(mb__cache_list(f.cache, &list, &err), &err);
  ASSERT_EQ(list->n_builds, 2);
  ASSERT(find_info(list, id_ok));
  ASSERT(find_info(list, mb__build_id(b)));
  ASSERT_EQ(list->n_empty_models, 0);
  mb__build_list_free(list);
  /* The model folders of the gone and changed models went with their
   * builds. */
  snprintf(path, sizeof path, "%s/builds/gone-%.12s", f.cache, sha_gone);
  ASSERT(!exists(path));
  /* A held build cannot be removed; once released it can. */
  char held_id[PATH_MAX];
  snprintf(held_id, sizeof held_id, "%s", mb__build_id(b));
  ASSERT_EQ(mb__build_remove(f.cache, held_id, &err), MB_STATUS_UNAVAILABLE);
  ASSERT_CONTAINS(err.message, "in use");
  mb__build_close(b); /* recorded as failed: "not finished" */
  ASSERT_OK(mb__build_remove(f.cache, held_id, &err), &err);
  ASSERT_EQ(mb__build_remove(f.cache, held_id, &err), MB_STATUS_NOT_FOUND);
  ASSERT_EQ(mb__build_remove(f.cache, "../../etc", &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(mb__build_remove(f.cache, "a/../../b", &err),
            MB_STATUS_INVALID_ARGUMENT);
  ASSERT_OK(mb__build_remove(f.cache, id_ok, &err), &err);
  snprintf(path, sizeof path, "%s/builds/net-%.12s", f.cache, f.sha);
  ASSERT(!exists(path)); /* its model folder emptied and went too */
  /* Nothing left to clean. */
  ASSERT_OK(mb__cache_clean(f.cache, false, NULL, NULL, &removed, &bytes, &err),
            &err);
  ASSERT_EQ(removed, 0);
  fixture_free(&f);
  return 0;
}

typedef struct clean_log {
  int removed, skipped;
  char last_skip[256];
} clean_log;

static void log_clean(void *user, const mb_cache_clean_item *item) {
  clean_log *l = user;
  if (item->action == MB_CLEAN_REMOVED)
    l->removed++;
  if (item->action == MB_CLEAN_SKIPPED) {
    l->skipped++;
    snprintf(l->last_skip, sizeof l->last_skip, "%s: %s", item->id,
             item->error);
  }
}

/* A failed build that another process holds is skipped by clean. */
TEST(clean_skips_builds_in_use) {
  fixture f;
  mb_error err = {0};
  mb_build *b = NULL;
  clean_log log = {0};
  int removed = 0;
  ASSERT_EQ(fixture_init(&f), 0);
  ASSERT_OK(mb__build_open(f.cache, &f.key, MB_REBUILD_IF_NEEDED, &b, &err),
            &err);
  ASSERT_OK(mb__build_finish(b, MB_STATUS_IO, "broken", 1, &err), &err);
  /* Still held: in use. */
  ASSERT_OK(
      mb__cache_clean(f.cache, false, log_clean, &log, &removed, NULL, &err),
      &err);
  ASSERT_EQ(log.removed, 0);
  ASSERT_EQ(log.skipped, 1);
  ASSERT_CONTAINS(log.last_skip, "in use");
  ASSERT(exists(mb__build_folder(b)));
  mb__build_close(b);
  memset(&log, 0, sizeof log);
  ASSERT_OK(
      mb__cache_clean(f.cache, false, log_clean, &log, &removed, NULL, &err),
      &err);
  ASSERT_EQ(log.removed, 1);
  ASSERT_EQ(removed, 1);
  fixture_free(&f);
  return 0;
}

/* ---- helper modes for tests/cli_cache.sh ---- */

static int make_build(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr,
            "usage: %s --make-build CACHE MODEL CONVERSION [--fail "
            "MSG] [--version V] [--runtime-version V] [--hits N] "
            "[--lean]\n",
            argv[0]);
    return 2;
  }
  const char *cache = argv[2], *model = argv[3], *fail = NULL;
  char sha[65];
  int hits = 0;
  bool lean = false;
  file_sha256(model, sha);
  mb_build_key key = {.model_path = model,
                      .model_sha256 = sha,
                      .inputs = "x:float32[1,3,8,8]",
                      .conversion = argv[4],
                      .steps = argv[4],
                      .options = "",
                      .runtime = "test",
                      .runtime_version = "1.0",
                      .machine = "Test CPU; avx2"};
  for (int i = 5; i < argc; i++) {
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--fail") == 0 && next)
      fail = argv[++i];
    else if (strcmp(argv[i], "--version") == 0 && next)
      key.tool_version = argv[++i];
    else if (strcmp(argv[i], "--runtime-version") == 0 && next)
      key.runtime_version = argv[++i];
    else if (strcmp(argv[i], "--hits") == 0 && next)
      hits = atoi(argv[++i]);
    else if (strcmp(argv[i], "--lean") == 0)
      lean = true;
    else {
      fprintf(stderr, "--make-build: bad argument '%s'\n", argv[i]);
      return 2;
    }
  }
  mb_build *b = NULL;
  mb_error err = {0};
  char path[PATH_MAX];
  if (mb__build_open(cache, &key, MB_REBUILD_ALWAYS, &b, &err) ||
      !mb__build_path(b, "model.onnx", path, sizeof path) ||
      test_write_text(path, "converted model bytes") ||
      mb__build_add_artifact(b, "model.onnx", &err) ||
      mb__build_stage(b, "convert", 12.5, &err) ||
      mb__build_finish(b, fail ? MB_STATUS_UNSUPPORTED : MB_STATUS_OK, fail,
                       12.5, &err) ||
      (lean && mb__build_lean(b, &err))) {
    fprintf(stderr, "--make-build: %s\n", err.message);
    mb__build_close(b);
    return 1;
  }
  printf("%s\n", mb__build_id(b));
  mb__build_close(b);
  for (int i = 0; i < hits; i++) {
    if (mb__build_open(cache, &key, MB_REBUILD_NEVER, &b, &err) ||
        mb__build_mark_hit(b, &err)) {
      fprintf(stderr, "--make-build: %s\n", err.message);
      mb__build_close(b);
      return 1;
    }
    mb__build_close(b);
  }
  return 0;
}

static int make_result(int argc, char **argv) {
  if (argc < 7) {
    fprintf(stderr,
            "usage: %s --make-result CACHE MODEL CONVERSION STATUS "
            "MEDIAN_MS [ERROR]\n",
            argv[0]);
    return 2;
  }
  mb_bench_report report;
  mb_bench_result result;
  mb_input_shape input = {"x", 4, {1, 3, 8, 8}};
  mb_dtype dtype = MB_DTYPE_FLOAT;
  mb_error err = {0};
  memset(&report, 0, sizeof report);
  memset(&result, 0, sizeof result);
  snprintf(report.tool_version, sizeof report.tool_version, "%s",
           MB_VERSION_STRING);
  snprintf(report.model_path, sizeof report.model_path, "%s", argv[3]);
  file_sha256(argv[3], report.model_sha256);
  report.n_inputs = 1;
  report.inputs = &input;
  report.input_dtypes = &dtype;
  snprintf(report.machine.cpu_model, sizeof report.machine.cpu_model,
           "Test CPU");
  mb_bench_config_init(&report.config);
  result.conversion_index = -1;
  result.conversion = argv[4];
  if (!mb__db_status_from_name(argv[5], &result.status)) {
    fprintf(stderr, "--make-result: unknown status '%s'\n", argv[5]);
    return 2;
  }
  double median = atof(argv[6]);
  result.max_abs_err = -1;
  if (result.status == MB_BENCH_OK) {
    result.latency_ms = (mb_latency_stats){median,
                                           median,
                                           median * 0.9,
                                           median * 1.2,
                                           median * 1.1,
                                           0,
                                           median * 1.15,
                                           0,
                                           0};
    result.iterations = 10;
    result.batch_size = 1;
    result.throughput_sps = 1000.0 / median;
    result.max_abs_err = 2.5e-6;
  } else {
    snprintf(result.error, sizeof result.error, "%s",
             argc > 7 ? argv[7] : "it failed");
  }
  report.n_results = 1;
  report.results = &result;
  if (mb__db_record_report(argv[2], &report, NULL, 0, NULL, NULL, 0, &err)) {
    fprintf(stderr, "--make-result: %s\n", err.message);
    return 1;
  }
  return 0;
}

static const mb_test_case cases[] = {
    TEST_ENTRY(miss_then_hit),
    TEST_ENTRY(key_part_changes),
    TEST_ENTRY(failed_build_is_recorded),
    TEST_ENTRY(crash_mid_build_never_claims_ok),
    TEST_ENTRY(lean_and_missing_artifacts),
    TEST_ENTRY(symlinks_never_followed),
    TEST_ENTRY(rebuild_policies),
    TEST_ENTRY(bad_keys_and_names),
    TEST_ENTRY(helpers),
    TEST_ENTRY(fork_same_key_builds_once),
    TEST_ENTRY(fork_unrelated_keys),
    TEST_ENTRY(state_is_never_torn),
    TEST_ENTRY(folder_removed_while_waiting),
    TEST_ENTRY(list_stale_and_orphans),
    TEST_ENTRY(clean_skips_builds_in_use),
};

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--make-build") == 0)
    return make_build(argc, argv);
  if (argc > 1 && strcmp(argv[1], "--make-result") == 0)
    return make_result(argc, argv);
  return mb_test_main(argc, argv, cases, MB_ARRAY_COUNT(cases));
}
