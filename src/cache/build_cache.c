/* The build cache (see build_cache.h for the layout and the locking).
 *
 * A build folder is named by a hash of its whole key, so a changed key
 * part never lands in an old folder: it is a new build. To still tell the
 * user why a build was made again, a miss on a folder without state looks
 * for the latest other build of the same conversion and model (same
 * sha256 or same path) and names the key parts that differ. */
#include "cache/build_cache.h"
#include "analysis/json.h"
#include "core/json_parse.h"

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

/* ---- names ---- */

static const char *const policy_names[] = {
#define MB_X(name, str) str,
    MB_REBUILD_POLICY_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(policy_names) == MB_REBUILD_POLICY_COUNT,
               "one name per policy");

static const char *const status_names[] = {
#define MB_X(name, str) str,
    MB_BUILD_STATUS_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(status_names) == MB_BUILD_STATUS_COUNT,
               "one name per build status");

static const char *const stale_names[] = {
#define MB_X(name, str) str,
    MB_BUILD_STALE_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(stale_names) == MB_BUILD_STALE_COUNT,
               "one name per stale kind");

typedef struct key_part_def {
  size_t offset; /* of the field in mb_build_key */
  const char *json, *label;
} key_part_def;

static const key_part_def key_parts[] = {
#define MB_X(field, key, label) {offsetof(mb_build_key, field), key, label},
    MB_BUILD_KEY_PART_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(key_parts) == MB_BUILD_KEY_PART_COUNT,
               "one row per key part");

const char *mb__rebuild_policy_name(mb_rebuild_policy policy) {
  return (unsigned)policy < MB_REBUILD_POLICY_COUNT ? policy_names[policy]
                                                    : "?";
}

bool mb__rebuild_policy_from_name(const char *name, mb_rebuild_policy *out) {
  for (int i = 0; name && i < MB_REBUILD_POLICY_COUNT; i++)
    if (strcmp(name, policy_names[i]) == 0) {
      *out = (mb_rebuild_policy)i;
      return true;
    }
  return false;
}

const char *mb__build_status_name(mb_build_status status) {
  return (unsigned)status < MB_BUILD_STATUS_COUNT ? status_names[status] : "?";
}

static bool status_from_name(const char *name, mb_build_status *out) {
  for (int i = 0; name && i < MB_BUILD_STATUS_COUNT; i++)
    if (strcmp(name, status_names[i]) == 0) {
      *out = (mb_build_status)i;
      return true;
    }
  return false;
}

const char *mb__build_stale_name(mb_build_stale stale) {
  return (unsigned)stale < MB_BUILD_STALE_COUNT ? stale_names[stale] : "?";
}

/* ---- keys ---- */

const char *mb__build_key_get(const mb_build_key *key, mb_build_key_part part) {
  if (!key || (unsigned)part >= MB_BUILD_KEY_PART_COUNT)
    return NULL;
  const char *const *field =
      (const char *const *)(const void *)((const char *)key +
                                          key_parts[part].offset);
  return *field;
}

static void key_set(mb_build_key *key, mb_build_key_part part,
                    const char *value) {
  const char **field =
      (const char **)(void *)((char *)key + key_parts[part].offset);
  *field = value;
}

const char *mb__build_key_part_json(mb_build_key_part part) {
  return (unsigned)part < MB_BUILD_KEY_PART_COUNT ? key_parts[part].json : "?";
}

const char *mb__build_key_part_label(mb_build_key_part part) {
  return (unsigned)part < MB_BUILD_KEY_PART_COUNT ? key_parts[part].label : "?";
}

/* A part as hashed and compared: NULL is "", except the tool version,
 * which defaults to this build's. */
static const char *key_value(const mb_build_key *key, mb_build_key_part part) {
  const char *v = mb__build_key_get(key, part);
  if (!v && part == MB_BUILD_KEY_tool_version)
    return MB_VERSION_STRING;
  return v ? v : "";
}

void mb__build_key_hash(const mb_build_key *key, char hex[65]) {
  static const char tag[] = "modelbench build key 1\n";
  mb_sha256 sha;
  uint8_t digest[32];
  mb__sha256_init(&sha);
  mb__sha256_update(&sha, tag, sizeof tag - 1);
  for (int i = 0; i < MB_BUILD_KEY_PART_COUNT; i++) {
    const char *v = key_value(key, (mb_build_key_part)i);
    char head[96];
    int n =
        snprintf(head, sizeof head, "%s=%zu:", key_parts[i].json, strlen(v));
    mb__sha256_update(&sha, head, (size_t)n);
    mb__sha256_update(&sha, v, strlen(v));
    mb__sha256_update(&sha, "\n", 1);
  }
  mb__sha256_final(&sha, digest);
  mb__sha256_hex(digest, hex);
}

const char *mb__build_machine_string(const mb_machine_info *machine, char *buf,
                                     size_t size) {
  if (size == 0)
    return buf;
  snprintf(buf, size, "%s; %s",
           machine && machine->cpu_model[0] ? machine->cpu_model
                                            : "unknown cpu",
           machine && machine->isa_flags[0] ? machine->isa_flags : "-");
  return buf;
}

mb_status mb__build_input_signature(int n, const mb_input_shape *shapes,
                                    const mb_dtype *dtypes, char **text_out,
                                    mb_error *err) {
  size_t size = 1;
  for (int i = 0; i < n; i++)
    size += strlen(shapes[i].name ? shapes[i].name : "") + 24 +
            21 * MB_MAX_RANK + 2;
  char *text = malloc(size);
  if (!text)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "build cache: out of memory for the input signature");
  size_t used = 0;
  text[0] = '\0';
  for (int i = 0; i < n; i++) {
    char shape[24 + 21 * MB_MAX_RANK];
    mb__shape_str(shapes[i].rank, shapes[i].dims, shape, sizeof shape);
    int w = snprintf(text + used, size - used, "%s%s:%s%s", i ? ";" : "",
                     shapes[i].name ? shapes[i].name : "",
                     dtypes ? mb_dtype_name(dtypes[i]) : "?", shape);
    if (w > 0)
      used = MB_MIN(size - 1, used + (size_t)w);
  }
  *text_out = text;
  return MB_STATUS_OK;
}

/* ---- small file-system helpers ---- */

/* "2025-01-31T12:00:00Z" of now. */
static void utc_now(char buf[32]) {
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static bool path_join(char *buf, size_t size, const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  if (na + nb + 2 > size)
    return false;
  memcpy(buf, a, na);
  buf[na] = '/';
  memcpy(buf + na + 1, b, nb + 1);
  return true;
}

static bool is_dir(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* mkdir -p; EEXIST is fine when a folder is there (another process made
 * it first). */
static mb_status make_dirs(const char *path, mb_error *err) {
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
    if (!is_dir(buf))
      return mb__error(err, MB_STATUS_IO,
                       "build cache: %s exists and is not a folder", buf);
    *p = saved;
    if (saved == '\0')
      return MB_STATUS_OK;
  }
}

/* Bytes of the regular files at or below path (symlinks not followed). */
static int64_t tree_bytes(const char *path) {
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
        !path_join(child, sizeof child, path, e->d_name))
      continue;
    total += tree_bytes(child);
  }
  closedir(d);
  return total;
}

/* rm -rf path (symlinks removed, not followed). ENOENT is success. Leaves
 * errno of the first failure and returns -1 on failure. */
static int remove_tree(const char *path) {
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
      if (!path_join(child, sizeof child, path, e->d_name)) {
        rc = -1;
        saved = ENAMETOOLONG;
        continue;
      }
      if (remove_tree(child) != 0 && rc == 0) {
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

static void fsync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

/* Keeps [A-Za-z0-9._+-] and turns anything else into '_', so a model stem
 * or conversion name is one safe path component. */
static void safe_component(char *out, size_t size, const char *s, size_t n) {
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
static void model_folder_name(const mb_build_key *key, char *out, size_t size) {
  const char *path =
      key->model_path && key->model_path[0] ? key->model_path : "model";
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  size_t len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
  char stem[MAX_STEM + 1];
  safe_component(stem, sizeof stem, base, MB_MIN(len, (size_t)MAX_STEM));
  snprintf(out, size, "%s-%.12s", stem, key->model_sha256);
}

static bool valid_artifact_name(const char *name) {
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

/* ---- state.json ---- */

static char *adup(mb_arena *a, const char *s) {
  return s ? mb__arena_strdup(a, s) : NULL;
}

static const char *json_str(mb_arena *a, const mb_json_value *obj,
                            const char *key) {
  const mb_json_value *v = mb__json_find(obj, key);
  return v && v->type == MB_JSON_STRING ? mb__arena_strdup(a, v->string) : NULL;
}

static int64_t json_int(const mb_json_value *obj, const char *key,
                        int64_t fallback) {
  const mb_json_value *v = mb__json_find(obj, key);
  if (!v || v->type != MB_JSON_NUMBER)
    return fallback;
  return v->is_integer ? v->integer : (int64_t)v->number;
}

static double json_double(const mb_json_value *obj, const char *key) {
  const mb_json_value *v = mb__json_find(obj, key);
  return v && v->type == MB_JSON_NUMBER ? v->number : NAN;
}

static void state_init(mb_build_state *s) {
  memset(s, 0, sizeof *s);
  s->status = MB_BUILD_BUILDING;
  s->model_bytes = -1;
  s->model_mtime_ns = -1;
  s->build_ms = NAN;
}

/* Reads state.json at path into *state, strings in arena. Fails with
 * MB_STATUS_NOT_FOUND when there is no file, MB_STATUS_PARSE when it is
 * not a state we can read. */
static mb_status state_read(const char *path, mb_arena *arena,
                            mb_build_state *state, mb_error *err) {
  mb_json_doc *doc = NULL;
  struct stat st;
  mb_status status;
  state_init(state);
  if (lstat(path, &st) != 0 && errno == ENOENT)
    return mb__error(err, MB_STATUS_NOT_FOUND, "%s: no such file", path);
  status = mb__json_parse_file(path, &doc, err);
  if (status == MB_STATUS_OUT_OF_MEMORY)
    return status;
  if (status) {
    /* Unreadable or malformed: either way not a state we can use. The
     * message already names the file. */
    if (err)
      err->status = MB_STATUS_PARSE;
    return MB_STATUS_PARSE;
  }
  const mb_json_value *root = &doc->root, *v;
  const char *name;
  int64_t format = json_int(root, "format", -1);
  if (root->type != MB_JSON_OBJECT || format < 1 ||
      format > MB_BUILD_STATE_FORMAT) {
    status =
        mb__error(err, MB_STATUS_PARSE, "%s: not a build state of format 1..%d",
                  path, MB_BUILD_STATE_FORMAT);
    goto done;
  }
  name = json_str(arena, root, "status");
  if (!status_from_name(name, &state->status)) {
    status = mb__error(err, MB_STATUS_PARSE, "%s: unknown status '%s'", path,
                       name ? name : "(none)");
    goto done;
  }
  const mb_json_value *key = mb__json_find(root, "key");
  if (!key || key->type != MB_JSON_OBJECT) {
    status = mb__error(err, MB_STATUS_PARSE, "%s: no \"key\" object", path);
    goto done;
  }
  for (int i = 0; i < MB_BUILD_KEY_PART_COUNT; i++)
    key_set(&state->key, (mb_build_key_part)i,
            json_str(arena, key, key_parts[i].json));
  state->error = json_str(arena, root, "error");
  state->key_hash = json_str(arena, root, "key_hash");
  const mb_json_value *model = mb__json_find(root, "model");
  state->key.model_path = json_str(arena, model, "path");
  state->model_bytes = json_int(model, "bytes", -1);
  state->model_mtime_ns = json_int(model, "mtime_ns", -1);
  state->build_ms = json_double(root, "build_ms");
  v = mb__json_find(root, "stages");
  if (v && v->type == MB_JSON_ARRAY && v->count > 0) {
    state->stages = mb__arena_alloc(arena, v->count * sizeof *state->stages);
    for (size_t i = 0; state->stages && i < v->count; i++) {
      const char *stage = json_str(arena, &v->items[i], "name");
      if (stage)
        state->stages[state->n_stages++] =
            (mb_build_stage){stage, json_double(&v->items[i], "ms")};
    }
  }
  v = mb__json_find(root, "artifacts");
  if (v && v->type == MB_JSON_ARRAY && v->count > 0) {
    state->artifacts =
        mb__arena_alloc(arena, v->count * sizeof *state->artifacts);
    for (size_t i = 0; state->artifacts && i < v->count; i++) {
      const char *artifact = json_str(arena, &v->items[i], "name");
      if (artifact)
        state->artifacts[state->n_artifacts++] =
            (mb_build_artifact){artifact, json_int(&v->items[i], "bytes", -1)};
    }
  }
  v = mb__json_find(root, "lean");
  state->lean = v && v->type == MB_JSON_BOOL && v->boolean;
  state->created = json_str(arena, root, "created");
  state->updated = json_str(arena, root, "updated");
  state->last_used = json_str(arena, root, "last_used");
  state->hits = json_int(root, "hits", 0);
  state->builds = json_int(root, "builds", 0);
  status = MB_STATUS_OK;
done:
  mb__json_doc_free(doc);
  return status;
}

/* The state as JSON (the layout state_read reads). */
static void state_write_json(mb_json *j, const char *id,
                             const mb_build_state *s) {
  mb__json_object_begin(j);
  mb__json_kv_int(j, "format", MB_BUILD_STATE_FORMAT);
  mb__json_kv_string(j, "id", id);
  mb__json_kv_string(j, "status", mb__build_status_name(s->status));
  mb__json_kv_string(j, "error", s->error);
  mb__json_key(j, "key");
  mb__json_object_begin(j);
  for (int i = 0; i < MB_BUILD_KEY_PART_COUNT; i++)
    mb__json_kv_string(j, key_parts[i].json,
                       mb__build_key_get(&s->key, (mb_build_key_part)i));
  mb__json_object_end(j);
  mb__json_kv_string(j, "key_hash", s->key_hash);
  mb__json_key(j, "model");
  mb__json_object_begin(j);
  mb__json_kv_string(j, "path", s->key.model_path);
  if (s->model_bytes >= 0)
    mb__json_kv_int(j, "bytes", s->model_bytes);
  if (s->model_mtime_ns >= 0)
    mb__json_kv_int(j, "mtime_ns", s->model_mtime_ns);
  mb__json_object_end(j);
  mb__json_kv_double(j, "build_ms", s->build_ms);
  mb__json_key(j, "stages");
  mb__json_array_begin(j);
  for (int i = 0; i < s->n_stages; i++) {
    mb__json_object_begin(j);
    mb__json_kv_string(j, "name", s->stages[i].name);
    mb__json_kv_double(j, "ms", s->stages[i].ms);
    mb__json_object_end(j);
  }
  mb__json_array_end(j);
  mb__json_key(j, "artifacts");
  mb__json_array_begin(j);
  for (int i = 0; i < s->n_artifacts; i++) {
    mb__json_object_begin(j);
    mb__json_kv_string(j, "name", s->artifacts[i].name);
    mb__json_kv_int(j, "bytes", s->artifacts[i].bytes);
    mb__json_object_end(j);
  }
  mb__json_array_end(j);
  mb__json_kv_bool(j, "lean", s->lean);
  mb__json_kv_string(j, "created", s->created);
  mb__json_kv_string(j, "updated", s->updated);
  mb__json_kv_string(j, "last_used", s->last_used);
  mb__json_kv_int(j, "hits", s->hits);
  mb__json_kv_int(j, "builds", s->builds);
  mb__json_object_end(j);
}

/* Replaces folder/state.json whole: a temporary file, fsync, rename, fsync
 * of the folder. Readers see the old state or the new one, never a mix. */
static mb_status state_write(const char *folder, const char *id,
                             const mb_build_state *state, mb_error *err) {
  char tmp[PATH_MAX], path[PATH_MAX], name[64];
  snprintf(name, sizeof name, STATE_TMP_PREFIX "%ld", (long)getpid());
  if (!path_join(tmp, sizeof tmp, folder, name) ||
      !path_join(path, sizeof path, folder, MB_BUILD_STATE_FILE))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: path of %s is too long", folder);
  unlink(tmp); /* a leftover of a crashed process with our pid */
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return mb__error(err, MB_STATUS_IO, "build cache: cannot create %s: %s",
                     tmp, strerror(errno));
  FILE *f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    unlink(tmp);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "build cache: out of memory writing %s", tmp);
  }
  mb_json j;
  mb__json_init(&j, f, true);
  state_write_json(&j, id, state);
  bool ok = fflush(f) == 0 && !ferror(f) && fsync(fd) == 0;
  int saved = errno;
  ok = fclose(f) == 0 && ok;
  if (ok && rename(tmp, path) != 0) {
    saved = errno;
    ok = false;
  }
  if (!ok) {
    unlink(tmp);
    return mb__error(err, MB_STATUS_IO, "build cache: cannot write %s: %s",
                     path, strerror(saved ? saved : EIO));
  }
  fsync_dir(folder);
  return MB_STATUS_OK;
}

/* ---- why a build is not valid ---- */

/* A value as shown in a reason: sha256s cut to 12 digits, long values to
 * 60 characters. */
static void show_value(char *buf, size_t size, mb_build_key_part part,
                       const char *v) {
  size_t n = strlen(v);
  if (n == 0)
    snprintf(buf, size, "(none)");
  else if (part == MB_BUILD_KEY_model_sha256 && n > 12)
    snprintf(buf, size, "%.12s", v);
  else if (n > 60)
    snprintf(buf, size, "%.57s...", v);
  else
    snprintf(buf, size, "%s", v);
}

/* "modelbench version changed 0.1.0 -> 0.2.0; ..." for every part of
 * `now` that differs from `before` into reason. Returns false when none
 * differs. */
static bool describe_key_change(const mb_build_key *before,
                                const mb_build_key *now, char *reason,
                                size_t size) {
  size_t used = 0;
  reason[0] = '\0';
  for (int i = 0; i < MB_BUILD_KEY_PART_COUNT; i++) {
    const char *a = key_value(before, (mb_build_key_part)i);
    const char *b = key_value(now, (mb_build_key_part)i);
    if (strcmp(a, b) == 0)
      continue;
    char va[72], vb[72];
    show_value(va, sizeof va, (mb_build_key_part)i, a);
    show_value(vb, sizeof vb, (mb_build_key_part)i, b);
    int w = snprintf(reason + used, size - used, "%s%s changed %s -> %s",
                     used ? "; " : "", key_parts[i].label, va, vb);
    if (w > 0)
      used = MB_MIN(size - 1, used + (size_t)w);
  }
  return used > 0;
}

/* The reason of a miss on a folder that has no state: "new", or what
 * changed since the latest other build of this conversion for this model
 * (same sha256 or same path). builds_dir: <cache dir>/builds. */
static void explain_new(const char *builds_dir, const char *own_folder,
                        const mb_build_key *key, const char *conv_safe,
                        char *reason, size_t size) {
  char stem_prefix[MAX_STEM + 2], sha_suffix[16], best_updated[32] = "";
  mb_arena *arena = mb__arena_create();
  mb_build_key best;
  bool found = false;
  char model_dir[PATH_MAX];
  snprintf(reason, size, "new");
  if (!arena)
    return;
  /* Builds record the model's absolute path. */
  char *model_abs = key->model_path ? realpath(key->model_path, NULL) : NULL;
  model_folder_name(key, model_dir, sizeof model_dir);
  /* "<stem>-" and "-<sha12>": only model folders of this model's name or
   * bytes can hold a build of it. */
  snprintf(stem_prefix, sizeof stem_prefix, "%.*s",
           (int)(strrchr(model_dir, '-') - model_dir + 1), model_dir);
  snprintf(sha_suffix, sizeof sha_suffix, "-%.12s", key->model_sha256);
  size_t conv_len = strlen(conv_safe);
  DIR *d = opendir(builds_dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t n = strlen(e->d_name), s = strlen(sha_suffix);
    if (e->d_name[0] == '.' ||
        (strncmp(e->d_name, stem_prefix, strlen(stem_prefix)) != 0 &&
         !(n > s && strcmp(e->d_name + n - s, sha_suffix) == 0)))
      continue;
    char mdir[PATH_MAX];
    if (!path_join(mdir, sizeof mdir, builds_dir, e->d_name))
      continue;
    DIR *md = opendir(mdir);
    struct dirent *be;
    while (md && (be = readdir(md))) {
      char bdir[PATH_MAX], spath[PATH_MAX];
      if (strncmp(be->d_name, conv_safe, conv_len) != 0 ||
          be->d_name[conv_len] != '-' ||
          !path_join(bdir, sizeof bdir, mdir, be->d_name) ||
          strcmp(bdir, own_folder) == 0 ||
          !path_join(spath, sizeof spath, bdir, MB_BUILD_STATE_FILE))
        continue;
      mb_build_state st;
      /* Only a good build is worth explaining a rebuild against. */
      if (state_read(spath, arena, &st, NULL) != MB_STATUS_OK ||
          st.status != MB_BUILD_OK)
        continue;
      bool same_model = strcmp(key_value(&st.key, MB_BUILD_KEY_model_sha256),
                               key->model_sha256) == 0 ||
                        (st.key.model_path && model_abs &&
                         strcmp(st.key.model_path, model_abs) == 0);
      const char *updated = st.updated ? st.updated : "";
      if (!same_model || strcmp(key_value(&st.key, MB_BUILD_KEY_conversion),
                                key->conversion) != 0)
        continue;
      if (!found || strcmp(updated, best_updated) > 0) {
        found = true;
        best = st.key;
        snprintf(best_updated, sizeof best_updated, "%s", updated);
      }
    }
    if (md)
      closedir(md);
  }
  if (d)
    closedir(d);
  if (found && !describe_key_change(&best, key, reason, size))
    snprintf(reason, size, "new");
  free(model_abs);
  mb__arena_free(arena);
}

/* ---- one build ---- */

struct mb_build {
  mb_arena *arena;
  char *folder, *id, *builds_dir;
  int lock_fd;
  mb_build_key key; /* copies; tool_version filled in */
  char key_hash[65];
  bool hit, finished;
  char reason[MB_ERROR_MESSAGE_SIZE];
  mb_build_state state;
  int stage_cap, artifact_cap;
};

/* The key's model file: absolute path, size and mtime, as recorded so that
 * `cache clean` can tell when the file is gone or changed. */
static void record_model(mb_build *b, const char *model_path) {
  b->state.model_bytes = b->state.model_mtime_ns = -1;
  if (!model_path || !model_path[0]) {
    b->state.key.model_path = b->key.model_path;
    return;
  }
  char *abs = realpath(model_path, NULL);
  struct stat st;
  b->state.key.model_path = abs ? adup(b->arena, abs) : b->key.model_path;
  if (stat(abs ? abs : model_path, &st) == 0) {
    b->state.model_bytes = (int64_t)st.st_size;
    b->state.model_mtime_ns =
        (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  }
  free(abs);
}

/* Takes the exclusive lock of the build folder, making it (unless
 * `create` is false: then a missing folder is MB_STATUS_NOT_FOUND). A
 * folder removed while we waited (`cache clean`) is made again. */
static mb_status lock_folder(mb_build *b, bool create, mb_error *err) {
  char lock[PATH_MAX];
  if (!path_join(lock, sizeof lock, b->folder, MB_BUILD_LOCK_FILE))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: path of %s is too long", b->folder);
  for (int attempt = 0; attempt < LOCK_ATTEMPTS; attempt++) {
    if (!create && !is_dir(b->folder))
      return mb__error(err, MB_STATUS_NOT_FOUND, "build cache: no build %s",
                       b->id);
    mb_status status = make_dirs(b->folder, err);
    if (status && attempt + 1 < LOCK_ATTEMPTS)
      continue; /* removed half-way through mkdir -p: again */
    if (status)
      return status;
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (errno == ENOENT)
        continue; /* removed between mkdir and open */
      return mb__error(err, MB_STATUS_IO, "build cache: cannot open %s: %s",
                       lock, strerror(errno));
    }
    int rc;
    while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR)
      ;
    if (rc != 0) {
      int saved = errno;
      close(fd);
      return mb__error(err, MB_STATUS_IO, "build cache: cannot lock %s: %s",
                       lock, strerror(saved));
    }
    /* The lock counts only if its file is still the one at that path. */
    struct stat held, now;
    if (fstat(fd, &held) == 0 && stat(lock, &now) == 0 &&
        held.st_dev == now.st_dev && held.st_ino == now.st_ino) {
      b->lock_fd = fd;
      return MB_STATUS_OK;
    }
    close(fd);
  }
  return mb__error(err, MB_STATUS_IO,
                   "build cache: %s keeps being removed while we wait for it",
                   b->folder);
}

/* Whether the recorded state is a valid build of b's key; if not, why,
 * into b->reason. */
static bool judge_state(mb_build *b, mb_status read_status,
                        const mb_error *read_err, const mb_build_state *old,
                        const char *conv_safe) {
  char *r = b->reason;
  size_t size = sizeof b->reason;
  if (read_status == MB_STATUS_NOT_FOUND) {
    explain_new(b->builds_dir, b->folder, &b->key, conv_safe, r, size);
    return false;
  }
  if (read_status != MB_STATUS_OK) {
    snprintf(r, size, "state unreadable: %.400s", read_err->message);
    return false;
  }
  if (old->status == MB_BUILD_BUILDING) {
    snprintf(r, size, "interrupted before (crashed or killed mid-build)");
    return false;
  }
  if (old->status == MB_BUILD_FAILED) {
    snprintf(r, size, "failed before: %s",
             old->error ? old->error : "unknown error");
    return false;
  }
  if (describe_key_change(&old->key, &b->key, r, size))
    return false;
  if (old->lean) {
    snprintf(r, size, "artifacts removed (lean cache)");
    return false;
  }
  for (int i = 0; i < old->n_artifacts; i++) {
    char path[PATH_MAX];
    struct stat st;
    if (!valid_artifact_name(old->artifacts[i].name) ||
        !path_join(path, sizeof path, b->folder, old->artifacts[i].name) ||
        lstat(path, &st) != 0) {
      snprintf(r, size, "artifact %s is missing", old->artifacts[i].name);
      return false;
    }
  }
  snprintf(r, size, "hit");
  return true;
}

/* A miss: records a "building" state, then deletes the old artifacts and
 * leftover temporary files, so a crash from here on never leaves a state
 * claiming ok behind. */
static mb_status start_build(mb_build *b, const mb_build_state *old,
                             bool had_state, mb_error *err) {
  char now[32];
  utc_now(now);
  state_init(&b->state);
  b->state.key = b->key;
  b->state.key_hash = b->key_hash;
  record_model(b, b->key.model_path);
  b->state.created = b->state.updated = adup(b->arena, now);
  b->state.builds = had_state ? old->builds : 0;
  /* The state first: from here on nothing claims the old build is ok. */
  mb_status status = state_write(b->folder, b->id, &b->state, err);
  if (status)
    return status;
  for (int i = 0; had_state && i < old->n_artifacts; i++) {
    char path[PATH_MAX];
    if (valid_artifact_name(old->artifacts[i].name) &&
        path_join(path, sizeof path, b->folder, old->artifacts[i].name))
      remove_tree(path);
  }
  DIR *d = opendir(b->folder);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char path[PATH_MAX];
    if (strncmp(e->d_name, STATE_TMP_PREFIX, strlen(STATE_TMP_PREFIX)) == 0 &&
        path_join(path, sizeof path, b->folder, e->d_name))
      unlink(path);
  }
  if (d)
    closedir(d);
  return MB_STATUS_OK;
}

mb_status mb__build_open(const char *cache_dir, const mb_build_key *key,
                         mb_rebuild_policy policy, mb_build **build_out,
                         mb_error *err) {
  mb_build *b = NULL;
  mb_status status, read_status;
  mb_error read_err;
  mb_build_state old;
  char model_dir[PATH_MAX], conv_safe[MAX_CONVERSION_NAME + 1];
  char folder[PATH_MAX], state_path[PATH_MAX], builds_dir[PATH_MAX];
  memset(&read_err, 0, sizeof read_err);
  if (!cache_dir || !cache_dir[0] || !key || !build_out)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: no cache folder or key given");
  if (!key->model_sha256 || strlen(key->model_sha256) < 12 ||
      strspn(key->model_sha256, "0123456789abcdef") !=
          strlen(key->model_sha256))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: the key needs the model's sha256 (hex)");
  if (!key->conversion || !key->conversion[0])
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: the key needs a conversion name");
  if ((unsigned)policy >= MB_REBUILD_POLICY_COUNT)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: unknown rebuild policy %d", (int)policy);
  *build_out = NULL;

  b = calloc(1, sizeof *b);
  if (!b || !(b->arena = mb__arena_create())) {
    free(b);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "build cache: out of memory");
  }
  b->lock_fd = -1;
  for (int i = 0; i < MB_BUILD_KEY_PART_COUNT; i++)
    key_set(&b->key, (mb_build_key_part)i,
            adup(b->arena, key_value(key, (mb_build_key_part)i)));
  b->key.model_path = adup(b->arena, key->model_path);
  mb__build_key_hash(&b->key, b->key_hash);
  model_folder_name(&b->key, model_dir, sizeof model_dir);
  safe_component(conv_safe, sizeof conv_safe, key->conversion,
                 MAX_CONVERSION_NAME);
  char id[PATH_MAX];
  int n =
      snprintf(id, sizeof id, "%s/%s-%.12s", model_dir, conv_safe, b->key_hash);
  if (n < 0 || (size_t)n >= sizeof id ||
      !path_join(builds_dir, sizeof builds_dir, cache_dir,
                 MB_BUILD_CACHE_SUBDIR) ||
      !path_join(folder, sizeof folder, builds_dir, id) ||
      !path_join(state_path, sizeof state_path, folder, MB_BUILD_STATE_FILE)) {
    status = mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "build cache: path under %s is too long", cache_dir);
    goto fail;
  }
  b->id = adup(b->arena, id);
  b->folder = adup(b->arena, folder);
  b->builds_dir = adup(b->arena, builds_dir);
  if (!b->id || !b->folder || !b->builds_dir || !b->key.conversion) {
    status =
        mb__error(err, MB_STATUS_OUT_OF_MEMORY, "build cache: out of memory");
    goto fail;
  }

  status = lock_folder(b, policy != MB_REBUILD_NEVER, err);
  if (status == MB_STATUS_NOT_FOUND) {
    explain_new(b->builds_dir, b->folder, &b->key, conv_safe, b->reason,
                sizeof b->reason);
    status = mb__error(err, MB_STATUS_NOT_FOUND,
                       "no cached build of %s for %s (%s) and --rebuild "
                       "never forbids building it",
                       key->conversion,
                       key->model_path ? key->model_path : key->model_sha256,
                       b->reason);
    goto fail;
  }
  if (status)
    goto fail;
  read_status = state_read(state_path, b->arena, &old, &read_err);
  if (read_status == MB_STATUS_OUT_OF_MEMORY) {
    status = mb__error(err, read_status, "%s", read_err.message);
    goto fail;
  }
  b->hit = judge_state(b, read_status, &read_err, &old, conv_safe);
  if (policy == MB_REBUILD_NEVER && !b->hit) {
    status = mb__error(err, MB_STATUS_NOT_FOUND,
                       "no valid cached build of %s for %s (%s) and --rebuild "
                       "never forbids building it",
                       key->conversion,
                       key->model_path ? key->model_path : key->model_sha256,
                       b->reason);
    goto fail;
  }
  if (policy == MB_REBUILD_ALWAYS) {
    b->hit = false;
    snprintf(b->reason, sizeof b->reason, "--rebuild always");
  }
  if (b->hit) {
    b->state = old;
    b->stage_cap = old.n_stages;
    b->artifact_cap = old.n_artifacts;
  } else {
    status = start_build(b, &old, read_status == MB_STATUS_OK, err);
    if (status)
      goto fail;
  }
  *build_out = b;
  return MB_STATUS_OK;

fail:
  b->finished = true; /* nothing to record on close */
  mb__build_close(b);
  return status;
}

bool mb__build_hit(const mb_build *b) {
  return b && b->hit;
}
const char *mb__build_reason(const mb_build *b) {
  return b->reason;
}
const char *mb__build_folder(const mb_build *b) {
  return b->folder;
}
const char *mb__build_id(const mb_build *b) {
  return b->id;
}
const mb_build_state *mb__build_state(const mb_build *b) {
  return &b->state;
}

const char *mb__build_path(const mb_build *b, const char *name, char *buf,
                           size_t size) {
  if (!b || !valid_artifact_name(name) ||
      !path_join(buf, size, b->folder, name))
    return NULL;
  return buf;
}

static bool in_progress(const mb_build *b) {
  return !b->hit && !b->finished;
}

/* Grows an arena array of `elem` bytes to hold one more than *n. */
static void *grow(mb_arena *a, void *items, int n, int *cap, size_t elem) {
  if (n < *cap)
    return items;
  int new_cap = *cap ? *cap * 2 : 8;
  void *bigger = mb__arena_alloc(a, (size_t)new_cap * elem);
  if (!bigger)
    return NULL;
  if (n)
    memcpy(bigger, items, (size_t)n * elem);
  *cap = new_cap;
  return bigger;
}

mb_status mb__build_add_artifact(mb_build *b, const char *name, mb_error *err) {
  if (!in_progress(b))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: %s: no build in progress to add %s to",
                     b->id, name ? name : "(null)");
  if (!valid_artifact_name(name))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: '%s' is not a valid artifact name (a "
                     "relative path inside the build folder)",
                     name ? name : "(null)");
  mb_build_state *s = &b->state;
  for (int i = 0; i < s->n_artifacts; i++)
    if (strcmp(s->artifacts[i].name, name) == 0)
      return MB_STATUS_OK;
  mb_build_artifact *items = grow(b->arena, s->artifacts, s->n_artifacts,
                                  &b->artifact_cap, sizeof *items);
  const char *copy = adup(b->arena, name);
  if (!items || !copy)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "build cache: out of memory");
  s->artifacts = items;
  s->artifacts[s->n_artifacts++] = (mb_build_artifact){copy, -1};
  return MB_STATUS_OK;
}

mb_status mb__build_stage(mb_build *b, const char *name, double ms,
                          mb_error *err) {
  if (!in_progress(b))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: %s: no build in progress to time", b->id);
  if (!name || !name[0])
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: a stage needs a name");
  mb_build_state *s = &b->state;
  for (int i = 0; i < s->n_stages; i++)
    if (strcmp(s->stages[i].name, name) == 0) {
      s->stages[i].ms += ms;
      return MB_STATUS_OK;
    }
  mb_build_stage *items =
      grow(b->arena, s->stages, s->n_stages, &b->stage_cap, sizeof *items);
  const char *copy = adup(b->arena, name);
  if (!items || !copy)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "build cache: out of memory");
  s->stages = items;
  s->stages[s->n_stages++] = (mb_build_stage){copy, ms};
  return MB_STATUS_OK;
}

mb_status mb__build_finish(mb_build *b, mb_status status, const char *error,
                           double build_ms, mb_error *err) {
  if (!in_progress(b))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: %s: no build in progress to finish", b->id);
  mb_build_state *s = &b->state;
  const char *missing = NULL;
  for (int i = 0; i < s->n_artifacts; i++) {
    char path[PATH_MAX];
    struct stat st;
    path_join(path, sizeof path, b->folder, s->artifacts[i].name);
    if (lstat(path, &st) != 0) {
      s->artifacts[i].bytes = -1;
      missing = missing ? missing : s->artifacts[i].name;
    } else {
      s->artifacts[i].bytes = tree_bytes(path);
    }
  }
  char now[32], msg[MB_ERROR_MESSAGE_SIZE];
  utc_now(now);
  s->status = status == MB_STATUS_OK ? MB_BUILD_OK : MB_BUILD_FAILED;
  s->error = NULL;
  if (status != MB_STATUS_OK) {
    s->error =
        adup(b->arena, error && error[0] ? error : mb_status_string(status));
  } else if (missing) {
    snprintf(msg, sizeof msg, "artifact %s was not written", missing);
    s->status = MB_BUILD_FAILED;
    s->error = adup(b->arena, msg);
  }
  s->build_ms = build_ms >= 0 ? build_ms : NAN;
  s->updated = s->last_used = adup(b->arena, now);
  s->hits = 0;
  s->builds++;
  b->finished = true;
  mb_status written = state_write(b->folder, b->id, s, err);
  if (written)
    return written;
  if (status == MB_STATUS_OK && missing)
    return mb__error(err, MB_STATUS_IO, "build cache: %s: %s", b->id, msg);
  return MB_STATUS_OK;
}

mb_status mb__build_mark_hit(mb_build *b, mb_error *err) {
  if (!b->hit)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: %s: not a hit", b->id);
  char now[32];
  utc_now(now);
  b->state.hits++;
  b->state.last_used = adup(b->arena, now);
  if (b->key.model_path)
    record_model(b, b->key.model_path);
  return state_write(b->folder, b->id, &b->state, err);
}

mb_status mb__build_lean(mb_build *b, mb_error *err) {
  if (in_progress(b))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "build cache: %s: finish the build before leaning it",
                     b->id);
  mb_build_state *s = &b->state;
  for (int i = 0; i < s->n_artifacts; i++) {
    char path[PATH_MAX];
    if (!valid_artifact_name(s->artifacts[i].name) ||
        !path_join(path, sizeof path, b->folder, s->artifacts[i].name))
      continue;
    if (remove_tree(path) != 0)
      return mb__error(err, MB_STATUS_IO, "build cache: cannot remove %s: %s",
                       path, strerror(errno));
  }
  s->lean = true;
  return state_write(b->folder, b->id, s, err);
}

void mb__build_close(mb_build *b) {
  if (!b)
    return;
  if (in_progress(b))
    mb__build_finish(b, MB_STATUS_INTERNAL,
                     "build was not finished (the builder stopped without "
                     "recording why)",
                     -1, NULL);
  if (b->lock_fd >= 0) {
    flock(b->lock_fd, LOCK_UN);
    close(b->lock_fd);
  }
  mb__arena_free(b->arena);
  free(b);
}

/* ---- listing ---- */

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

/* sha256 of the file's bytes; false when it cannot be read. */
static bool file_sha256(const char *path, char hex[65]) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return false;
  enum { CHUNK = 1 << 16 };
  mb_sha256 sha;
  uint8_t digest[32];
  uint8_t *chunk = malloc(CHUNK);
  size_t n;
  if (!chunk) {
    fclose(f);
    return false;
  }
  mb__sha256_init(&sha);
  while ((n = fread(chunk, 1, CHUNK, f)) > 0)
    mb__sha256_update(&sha, chunk, n);
  bool ok = !ferror(f);
  fclose(f);
  free(chunk);
  mb__sha256_final(&sha, digest);
  mb__sha256_hex(digest, hex);
  return ok;
}

/* "" when the model file still has the recorded sha256, else why not. A
 * file of the recorded size and mtime is taken as unchanged; else its
 * bytes are hashed, and when that differs (the sha256 covers external data
 * files too) the model is loaded to hash it the way bench does. */
static const char *check_model(lister *l, const mb_build_state *s) {
  const char *path = s->key.model_path, *sha = s->key.model_sha256;
  for (int i = 0; i < l->n_checks; i++)
    if (strcmp(l->checks[i].path, path) == 0 &&
        strcmp(l->checks[i].sha256, sha) == 0)
      return l->checks[i].verdict;
  model_check *checks =
      grow(l->arena, l->checks, l->n_checks, &l->cap_checks, sizeof *checks);
  if (!checks)
    return "";
  l->checks = checks;
  model_check *c = &l->checks[l->n_checks];
  c->path = path;
  c->sha256 = sha;
  c->verdict[0] = '\0';
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(c->verdict, sizeof c->verdict, "model file %s no longer exists",
             path);
  } else if (!(s->model_bytes >= 0 && s->model_bytes == (int64_t)st.st_size &&
               s->model_mtime_ns == (int64_t)st.st_mtim.tv_sec * 1000000000 +
                                        st.st_mtim.tv_nsec)) {
    char hex[65] = "";
    bool same = file_sha256(path, hex) && strcmp(hex, sha) == 0;
    if (!same) {
      mb_model *model = NULL;
      same = mb_model_load(path, &model, NULL) == MB_STATUS_OK &&
             strcmp(mb_model_sha256(model), sha) == 0;
      mb_model_free(model);
    }
    if (!same)
      snprintf(c->verdict, sizeof c->verdict,
               "model file %s changed (no longer sha256 %.12s)", path, sha);
  }
  l->n_checks++;
  return c->verdict;
}

/* Whether another process holds the folder's lock (tested without
 * waiting). */
static bool folder_in_use(const char *folder) {
  char lock[PATH_MAX];
  if (!path_join(lock, sizeof lock, folder, MB_BUILD_LOCK_FILE))
    return false;
  int fd = open(lock, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  bool busy = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd); /* drops our shared lock, if we got it */
  return busy;
}

static void set_stale(mb_build_info *info, mb_arena *a, mb_build_stale stale,
                      const char *fmt, ...) MB_PRINTF(4, 5);
static void set_stale(mb_build_info *info, mb_arena *a, mb_build_stale stale,
                      const char *fmt, ...) {
  char buf[PATH_MAX + 256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  info->stale = stale;
  info->stale_reason = adup(a, buf);
}

/* Fills info for the build folder <builds>/<id>. check_lock: whether to
 * test if another process holds it (false when we hold it ourselves). */
static void evaluate(lister *l, const char *builds_dir, const char *id,
                     bool check_lock, mb_build_info *info) {
  mb_arena *a = l->arena;
  char folder[PATH_MAX], state_path[PATH_MAX], leftover[NAME_MAX + 1] = "";
  mb_error err;
  memset(info, 0, sizeof *info);
  memset(&err, 0, sizeof err);
  info->id = adup(a, id);
  if (!path_join(folder, sizeof folder, builds_dir, id) ||
      !path_join(state_path, sizeof state_path, folder, MB_BUILD_STATE_FILE)) {
    info->folder = info->id;
    set_stale(info, a, MB_BUILD_STALE_ORPHAN, "path too long");
    return;
  }
  info->folder = adup(a, folder);
  info->in_use = check_lock && folder_in_use(folder);
  info->disk_bytes = tree_bytes(folder);
  mb_status rs = state_read(state_path, a, &info->state, &err);
  info->has_state = rs == MB_STATUS_OK;
  DIR *d = opendir(folder);
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strncmp(e->d_name, STATE_TMP_PREFIX, strlen(STATE_TMP_PREFIX)) == 0)
      snprintf(leftover, sizeof leftover, "%s", e->d_name);
  if (d)
    closedir(d);
  const mb_build_state *s = &info->state;
  /* A build being made right now has no state or a "building" one, and may
   * have a temporary file: none of that makes it an orphan. */
  bool building =
      info->in_use && (!info->has_state || s->status == MB_BUILD_BUILDING);
  if (building)
    return;
  if (rs == MB_STATUS_NOT_FOUND)
    set_stale(info, a, MB_BUILD_STALE_ORPHAN, "no %s", MB_BUILD_STATE_FILE);
  else if (rs != MB_STATUS_OK)
    set_stale(info, a, MB_BUILD_STALE_ORPHAN, "%s unreadable: %s",
              MB_BUILD_STATE_FILE, err.message);
  else if (s->status == MB_BUILD_BUILDING)
    set_stale(info, a, MB_BUILD_STALE_ORPHAN,
              "build interrupted (crashed or killed mid-build)");
  else if (leftover[0] && !info->in_use)
    set_stale(info, a, MB_BUILD_STALE_ORPHAN, "leftover temporary file %s",
              leftover);
  else if (s->status == MB_BUILD_FAILED)
    set_stale(info, a, MB_BUILD_STALE_FAILED, "failed: %s",
              s->error ? s->error : "unknown error");
  else if (strcmp(key_value(&s->key, MB_BUILD_KEY_tool_version),
                  MB_VERSION_STRING) != 0)
    set_stale(info, a, MB_BUILD_STALE_VERSION,
              "built by modelbench %s (this is %s)",
              key_value(&s->key, MB_BUILD_KEY_tool_version), MB_VERSION_STRING);
  else if (s->key.model_path && s->key.model_sha256) {
    const char *verdict = check_model(l, s);
    if (verdict[0])
      set_stale(info, a, MB_BUILD_STALE_ORPHAN, "%s", verdict);
  }
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted names of the sub-folders of dir (no symlinks). *names_out:
 * malloc'd array of arena strings. Returns the count, -1 on OOM. */
static int list_subdirs(mb_arena *a, const char *dir, const char ***names_out) {
  const char **names = NULL;
  int n = 0, cap = 0;
  DIR *d = opendir(dir);
  struct dirent *e;
  *names_out = NULL;
  while (d && (e = readdir(d))) {
    char path[PATH_MAX];
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
        !path_join(path, sizeof path, dir, e->d_name) || !is_dir(path))
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      const char **bigger = realloc(names, (size_t)cap * sizeof *names);
      if (!bigger) {
        n = -1;
        break;
      }
      names = bigger;
    }
    if (!(names[n++] = adup(a, e->d_name))) {
      n = -1;
      break;
    }
  }
  if (d)
    closedir(d);
  if (n < 0) {
    free(names);
    return -1;
  }
  if (n > 1)
    qsort(names, (size_t)n, sizeof *names, compare_names);
  *names_out = names;
  return n;
}

mb_status mb__cache_list(const char *cache_dir, mb_build_list **list_out,
                         mb_error *err) {
  mb_build_list *list = calloc(1, sizeof *list);
  lister l = {0};
  char builds_dir[PATH_MAX];
  const char **models = NULL;
  int cap = 0, cap_empty = 0;
  mb_status status = MB_STATUS_OK;
  *list_out = NULL;
  if (!list || !(list->arena = mb__arena_create())) {
    free(list);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "build cache: out of memory");
  }
  l.arena = list->arena;
  list->cache_dir = adup(list->arena, cache_dir);
  if (!path_join(builds_dir, sizeof builds_dir, cache_dir,
                 MB_BUILD_CACHE_SUBDIR)) {
    status = mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "build cache: path of %s is too long", cache_dir);
    goto fail;
  }
  DIR *probe = opendir(builds_dir);
  if (probe)
    closedir(probe);
  else if (errno != ENOENT) {
    status = mb__error(err, MB_STATUS_IO, "build cache: cannot read %s: %s",
                       builds_dir, strerror(errno));
    goto fail;
  }
  int n_models = list_subdirs(list->arena, builds_dir, &models);
  if (n_models < 0)
    goto oom;
  for (int m = 0; m < n_models; m++) {
    char model_dir[PATH_MAX];
    const char **builds = NULL;
    path_join(model_dir, sizeof model_dir, builds_dir, models[m]);
    int n_builds = list_subdirs(list->arena, model_dir, &builds);
    if (n_builds < 0)
      goto oom;
    if (n_builds == 0) {
      if (list->n_empty_models == cap_empty) {
        cap_empty = cap_empty ? cap_empty * 2 : 8;
        const char **bigger =
            realloc(list->empty_models, (size_t)cap_empty * sizeof *bigger);
        if (!bigger)
          goto oom;
        list->empty_models = bigger;
      }
      list->empty_models[list->n_empty_models++] = models[m];
    }
    for (int i = 0; i < n_builds; i++) {
      char id[PATH_MAX];
      if (list->n_builds == cap) {
        cap = cap ? cap * 2 : 16;
        mb_build_info *bigger =
            realloc(list->builds, (size_t)cap * sizeof *bigger);
        if (!bigger) {
          free(builds);
          goto oom;
        }
        list->builds = bigger;
      }
      snprintf(id, sizeof id, "%s/%s", models[m], builds[i]);
      evaluate(&l, builds_dir, id, true, &list->builds[list->n_builds++]);
    }
    free(builds);
  }
  free(models);
  *list_out = list;
  return MB_STATUS_OK;

oom:
  status =
      mb__error(err, MB_STATUS_OUT_OF_MEMORY, "build cache: out of memory");
fail:
  free(models);
  mb__build_list_free(list);
  return status;
}

void mb__build_list_free(mb_build_list *list) {
  if (!list)
    return;
  free(list->builds);
  free(list->empty_models);
  mb__arena_free(list->arena);
  free(list);
}

mb_status mb__build_list_find(const mb_build_list *list, const char *id,
                              const mb_build_info **info_out, mb_error *err) {
  const mb_build_info *found = NULL;
  int matches = 0;
  char names[256] = "";
  size_t len = strlen(id), used = 0;
  *info_out = NULL;
  for (int i = 0; i < list->n_builds; i++) {
    const mb_build_info *b = &list->builds[i];
    if (strcmp(b->id, id) == 0) {
      *info_out = b;
      return MB_STATUS_OK;
    }
    if (len == 0 || strncmp(b->id, id, len) != 0)
      continue;
    found = b;
    if (matches++ < 3) {
      int w = snprintf(names + used, sizeof names - used, "%s%s",
                       used ? ", " : "", b->id);
      if (w > 0)
        used = MB_MIN(sizeof names - 1, used + (size_t)w);
    }
  }
  if (matches == 0)
    return mb__error(err, MB_STATUS_NOT_FOUND,
                     "no build '%s' in %s (see 'modelbench cache list')", id,
                     list->cache_dir);
  if (matches > 1)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "'%s' matches %d builds (%s%s): give more of the id", id,
                     matches, names, matches > 3 ? ", ..." : "");
  *info_out = found;
  return MB_STATUS_OK;
}

/* ---- removal ---- */

/* Splits an id into its model folder and build folder names, checking it
 * names exactly two plain path components. */
static bool split_id(const char *id, char *model, char *build, size_t size) {
  const char *slash = strchr(id, '/');
  if (!slash || strchr(slash + 1, '/') || slash == id || !slash[1] ||
      (size_t)(slash - id) >= size || strlen(slash + 1) >= size)
    return false;
  snprintf(model, size, "%.*s", (int)(slash - id), id);
  snprintf(build, size, "%s", slash + 1);
  return strcmp(model, ".") && strcmp(model, "..") && strcmp(build, ".") &&
         strcmp(build, "..");
}

/* Takes the lock of folder without waiting. Returns the fd, -1 with
 * *busy set when another process holds it, -1 on other errors. */
static int try_lock(const char *folder, bool *busy) {
  char lock[PATH_MAX];
  *busy = false;
  if (!path_join(lock, sizeof lock, folder, MB_BUILD_LOCK_FILE))
    return -1;
  int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return -1;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    *busy = errno == EWOULDBLOCK;
    close(fd);
    return -1;
  }
  return fd;
}

/* Removes a locked build folder: its contents, then the lock file, then the
 * folder, so that a process waiting for the lock finds its file gone and
 * starts over (lock_folder). Then the model folder, if now empty. */
static int remove_locked(const char *folder, const char *model_dir) {
  int rc = 0, saved = 0;
  DIR *d = opendir(folder);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char path[PATH_MAX];
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
        strcmp(e->d_name, MB_BUILD_LOCK_FILE) == 0 ||
        !path_join(path, sizeof path, folder, e->d_name))
      continue;
    if (remove_tree(path) != 0 && rc == 0) {
      rc = -1;
      saved = errno;
    }
  }
  if (d)
    closedir(d);
  if (rc == 0) {
    char lock[PATH_MAX];
    path_join(lock, sizeof lock, folder, MB_BUILD_LOCK_FILE);
    unlink(lock);
    if (rmdir(folder) != 0 && errno != ENOENT) {
      rc = -1;
      saved = errno;
    }
  }
  rmdir(model_dir); /* fails, as it should, while other builds are there */
  if (rc)
    errno = saved;
  return rc;
}

mb_status mb__build_remove(const char *cache_dir, const char *id,
                           mb_error *err) {
  char model[NAME_MAX + 1], build[NAME_MAX + 1], model_dir[PATH_MAX],
      folder[PATH_MAX], builds_dir[PATH_MAX];
  if (!split_id(id, model, build, sizeof model) ||
      !path_join(builds_dir, sizeof builds_dir, cache_dir,
                 MB_BUILD_CACHE_SUBDIR) ||
      !path_join(model_dir, sizeof model_dir, builds_dir, model) ||
      !path_join(folder, sizeof folder, model_dir, build))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "'%s' is not a build id (MODEL-SHA/CONVERSION-HASH)", id);
  if (!is_dir(folder))
    return mb__error(err, MB_STATUS_NOT_FOUND, "no build '%s' in %s", id,
                     cache_dir);
  bool busy;
  int fd = try_lock(folder, &busy);
  if (fd < 0)
    return busy ? mb__error(err, MB_STATUS_UNAVAILABLE,
                            "build %s is in use by another modelbench", id)
                : mb__error(err, MB_STATUS_IO, "cannot lock build %s: %s", id,
                            strerror(errno));
  int rc = remove_locked(folder, model_dir);
  int saved = errno;
  close(fd);
  if (rc)
    return mb__error(err, MB_STATUS_IO, "cannot remove %s: %s", folder,
                     strerror(saved));
  return MB_STATUS_OK;
}

mb_status mb__cache_clean(const char *cache_dir, bool dry_run,
                          mb_cache_clean_fn fn, void *user, int *removed_out,
                          int64_t *bytes_out, mb_error *err) {
  mb_build_list *list = NULL;
  int removed = 0, failed = 0;
  int64_t bytes = 0;
  char builds_dir[PATH_MAX];
  mb_status status = mb__cache_list(cache_dir, &list, err);
  if (status)
    return status;
  path_join(builds_dir, sizeof builds_dir, cache_dir, MB_BUILD_CACHE_SUBDIR);
  lister l = {.arena = list->arena};
  for (int i = 0; i < list->n_builds; i++) {
    const mb_build_info *info = &list->builds[i];
    if (info->stale == MB_BUILD_STALE_NONE)
      continue;
    mb_cache_clean_item item = {info->id, info->stale_reason, info->disk_bytes,
                                MB_CLEAN_WOULD_REMOVE, NULL};
    char model[NAME_MAX + 1], build[NAME_MAX + 1], model_dir[PATH_MAX];
    split_id(info->id, model, build, sizeof model);
    path_join(model_dir, sizeof model_dir, builds_dir, model);
    if (info->in_use) {
      item.action = MB_CLEAN_SKIPPED;
      item.error = "in use by another modelbench";
    } else if (!dry_run) {
      bool busy;
      int fd = try_lock(info->folder, &busy);
      mb_build_info again;
      if (fd < 0) {
        item.action = busy ? MB_CLEAN_SKIPPED : MB_CLEAN_FAILED;
        item.error = busy ? "in use by another modelbench" : strerror(errno);
        failed += !busy;
      } else {
        /* Judged again under the lock: it may have been rebuilt since. */
        evaluate(&l, builds_dir, info->id, false, &again);
        item.bytes = again.disk_bytes;
        if (again.stale == MB_BUILD_STALE_NONE) {
          item.action = MB_CLEAN_SKIPPED;
          item.error = "no longer stale";
        } else if (remove_locked(info->folder, model_dir) != 0) {
          item.action = MB_CLEAN_FAILED;
          item.error = strerror(errno);
          failed++;
        } else {
          item.action = MB_CLEAN_REMOVED;
          item.reason = again.stale_reason;
        }
        close(fd);
      }
    }
    if (item.action == MB_CLEAN_REMOVED ||
        item.action == MB_CLEAN_WOULD_REMOVE) {
      removed++;
      bytes += item.bytes;
    }
    if (fn)
      fn(user, &item);
  }
  for (int i = 0; i < list->n_empty_models; i++) {
    char model_dir[PATH_MAX];
    mb_cache_clean_item item = {list->empty_models[i],
                                "empty model folder (no builds)", 0,
                                MB_CLEAN_WOULD_REMOVE, NULL};
    path_join(model_dir, sizeof model_dir, builds_dir, list->empty_models[i]);
    if (!dry_run) {
      item.bytes = tree_bytes(model_dir);
      /* rmdir, not rm -r: a build made meanwhile keeps its folder. */
      if (rmdir(model_dir) == 0 || errno == ENOENT) {
        item.action = MB_CLEAN_REMOVED;
      } else if (errno == ENOTEMPTY || errno == EEXIST) {
        item.action = MB_CLEAN_SKIPPED;
        item.error = "no longer empty";
      } else {
        item.action = MB_CLEAN_FAILED;
        item.error = strerror(errno);
        failed++;
      }
    }
    if (item.action == MB_CLEAN_REMOVED || item.action == MB_CLEAN_WOULD_REMOVE)
      removed++;
    if (fn)
      fn(user, &item);
  }
  mb__build_list_free(list);
  if (removed_out)
    *removed_out = removed;
  if (bytes_out)
    *bytes_out = bytes;
  if (failed)
    return mb__error(err, MB_STATUS_IO,
                     "build cache: %d stale build%s could not be removed",
                     failed, failed == 1 ? "" : "s");
  return MB_STATUS_OK;
}
