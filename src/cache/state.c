/* Build cache: state.json (read, written atomically through a temporary
 * file, also for failed builds) and why a build was made again: the key
 * parts that differ from the latest other build of the same conversion
 * and model. */
#include "cache/internal.h"

/* ---- state.json ---- */

char *mb__bc_adup(mb_arena *a, const char *s) {
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
  if (v->is_integer)
    return v->integer;
  /* A fraction or exponent outside int64 (1.8e19 in a hand-edited or
   * corrupt state.json; found by fuzz build_state, UBSan) is not a size or
   * a count: the field is unknown. Written so that NaN fails too. */
  return v->number > -9.2e18 && v->number < 9.2e18 ? (int64_t)v->number
                                                   : fallback;
}

/* A size or a time: negative means unknown (-1), as the writer leaves it
 * out (a hand-edited "bytes": -5 read as -5 came back as -1 after a round
 * trip; found by fuzz build_state). */
static int64_t json_size(const mb_json_value *obj, const char *key) {
  int64_t v = json_int(obj, key, -1);
  return v >= 0 ? v : -1;
}

static double json_double(const mb_json_value *obj, const char *key) {
  const mb_json_value *v = mb__json_find(obj, key);
  return v && v->type == MB_JSON_NUMBER ? v->number : NAN;
}

void mb__bc_state_init(mb_build_state *s) {
  memset(s, 0, sizeof *s);
  s->status = MB_BUILD_BUILDING;
  s->model_bytes = -1;
  s->model_mtime_ns = -1;
  s->build_ms = NAN;
}

/* Parses the JSON file at path, refusing a symlink there: state.json is
 * always a file the cache wrote. */
static mb_status read_state_file(const char *path, mb_json_doc **doc,
                                 mb_error *err) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return mb__error(err, MB_STATUS_IO, "%s: %s", path,
                     errno == ELOOP ? "a symbolic link (not followed)"
                                    : strerror(errno));
  struct stat st;
  char *text = NULL;
  size_t used = 0;
  mb_status status = MB_STATUS_OK;
  /* A state is a few KiB; 16 MiB is far past any real one. */
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size > ((off_t)16 << 20)) {
    status = mb__error(err, MB_STATUS_IO,
                       "%s: not a regular file of at most "
                       "16 MiB",
                       path);
    goto done;
  }
  if (!(text = malloc((size_t)st.st_size + 1))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  while (used < (size_t)st.st_size) {
    ssize_t n = read(fd, text + used, (size_t)st.st_size - used);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    used += (size_t)n;
  }
  status = mb__json_parse(text, used, path, doc, err);
done:
  free(text);
  close(fd);
  return status;
}

/* Reads state.json at path into *state, strings in arena. Fails with
 * MB_STATUS_NOT_FOUND when there is no file, MB_STATUS_PARSE when it is
 * not a state we can read. */
mb_status mb__bc_state_read(const char *path, mb_arena *arena,
                            mb_build_state *state, mb_error *err) {
  mb_json_doc *doc = NULL;
  struct stat st;
  mb_status status;
  mb__bc_state_init(state);
  if (lstat(path, &st) != 0 && errno == ENOENT)
    return mb__error(err, MB_STATUS_NOT_FOUND, "%s: no such file", path);
  status = read_state_file(path, &doc, err);
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
  if (!mb__bc_status_from_name(name, &state->status)) {
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
    mb__bc_key_set(&state->key, (mb_build_key_part)i,
                   json_str(arena, key, mb__bc_key_parts[i].json));
  state->error = json_str(arena, root, "error");
  state->key_hash = json_str(arena, root, "key_hash");
  const mb_json_value *model = mb__json_find(root, "model");
  state->key.model_path = json_str(arena, model, "path");
  const mb_json_value *source = mb__json_find(root, "source");
  state->key.source_script = json_str(arena, source, "script");
  state->key.source_class = json_str(arena, source, "class");
  state->key.source_hash = json_str(arena, source, "model_hash");
  state->model_bytes = json_size(model, "bytes");
  state->model_mtime_ns = json_size(model, "mtime_ns");
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
            (mb_build_artifact){artifact, json_size(&v->items[i], "bytes")};
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
    mb__json_kv_string(j, mb__bc_key_parts[i].json,
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
  if (s->key.source_script) {
    mb__json_key(j, "source");
    mb__json_object_begin(j);
    mb__json_kv_string(j, "script", s->key.source_script);
    mb__json_kv_string(j, "class", s->key.source_class);
    mb__json_kv_string(j, "model_hash", s->key.source_hash);
    mb__json_object_end(j);
  }
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

/* Replaces folder/state.json whole: a temporary file (O_EXCL|O_NOFOLLOW,
 * core/files.h), fsync, rename, fsync of the folder. Readers see the old
 * state or the new one, never a mix. */
mb_status mb__bc_state_write_at(int dirfd, const char *folder, const char *id,
                                const mb_build_state *state, mb_error *err) {
  mb_atomic_file af;
  mb_error e = {MB_STATUS_OK, ""};
  mb_status status =
      mb__atomic_file_open(&af, dirfd, MB_BUILD_STATE_FILE,
                           mb__private_file_mode(), "build state", &e);
  if (!status) {
    mb_json j;
    mb__json_init(&j, af.f, true);
    state_write_json(&j, id, state);
    status = mb__atomic_file_commit(&af, true, &e);
  }
  if (status)
    return mb__error(err, status, "build cache: %s: %s", folder, e.message);
  return MB_STATUS_OK;
}

mb_status mb__bc_state_write(const char *folder, const char *id,
                             const mb_build_state *state, mb_error *err) {
  int fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return mb__error(err, MB_STATUS_IO, "build cache: cannot open %s: %s",
                     folder, strerror(errno));
  mb_status status = mb__bc_state_write_at(fd, folder, id, state, err);
  close(fd);
  return status;
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
bool mb__bc_describe_key_change(const mb_build_key *before,
                                const mb_build_key *now, char *reason,
                                size_t size) {
  size_t used = 0;
  reason[0] = '\0';
  for (int i = 0; i < MB_BUILD_KEY_PART_COUNT; i++) {
    const char *a = mb__bc_key_value(before, (mb_build_key_part)i);
    const char *b = mb__bc_key_value(now, (mb_build_key_part)i);
    if (strcmp(a, b) == 0)
      continue;
    char va[72], vb[72];
    show_value(va, sizeof va, (mb_build_key_part)i, a);
    show_value(vb, sizeof vb, (mb_build_key_part)i, b);
    int w = snprintf(reason + used, size - used, "%s%s changed %s -> %s",
                     used ? "; " : "", mb__bc_key_parts[i].label, va, vb);
    if (w > 0)
      used = MB_MIN(size - 1, used + (size_t)w);
  }
  return used > 0;
}

/* The reason of a miss on a folder that has no state: "new", or what
 * changed since the latest other build of this conversion for this model
 * (same sha256 or same path). builds_dir: <cache dir>/builds. */
void mb__bc_explain_new(const char *builds_dir, const char *own_folder,
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
  mb__bc_model_folder_name(key, model_dir, sizeof model_dir);
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
    if (!mb__bc_path_join(mdir, sizeof mdir, builds_dir, e->d_name))
      continue;
    DIR *md = opendir(mdir);
    struct dirent *be;
    while (md && (be = readdir(md))) {
      char bdir[PATH_MAX], spath[PATH_MAX];
      if (strncmp(be->d_name, conv_safe, conv_len) != 0 ||
          be->d_name[conv_len] != '-' ||
          !mb__bc_path_join(bdir, sizeof bdir, mdir, be->d_name) ||
          strcmp(bdir, own_folder) == 0 ||
          !mb__bc_path_join(spath, sizeof spath, bdir, MB_BUILD_STATE_FILE))
        continue;
      mb_build_state st;
      /* Only a good build is worth explaining a rebuild against. */
      if (mb__bc_state_read(spath, arena, &st, NULL) != MB_STATUS_OK ||
          st.status != MB_BUILD_OK)
        continue;
      bool same_model =
          strcmp(mb__bc_key_value(&st.key, MB_BUILD_KEY_model_sha256),
                 key->model_sha256) == 0 ||
          (st.key.model_path && model_abs &&
           strcmp(st.key.model_path, model_abs) == 0) ||
          (st.key.source_hash && key->source_hash &&
           strcmp(st.key.source_hash, key->source_hash) == 0);
      const char *updated = st.updated ? st.updated : "";
      if (!same_model ||
          strcmp(mb__bc_key_value(&st.key, MB_BUILD_KEY_conversion),
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
  if (found && !mb__bc_describe_key_change(&best, key, reason, size))
    snprintf(reason, size, "new");
  free(model_abs);
  mb__arena_free(arena);
}
