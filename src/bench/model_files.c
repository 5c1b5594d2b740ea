/* The model a benchmark runs, in the forms it comes in.
 *
 * A model file is one of:
 *   an ONNX file          the IR is its graph; ONNX conversions run it;
 *   a TorchScript archive (torch.jit.save: a zip) the TORCHSCRIPT
 *                         conversion loads; the IR is only a signature of
 *                         the inputs --shape declares;
 *   a pickled module      (torch.save: a zip whose data.pkl is no
 *                         TorchScript's, or a bare pickle): code, loaded
 *                         only with the config's trust_code, as a
 *                         one-form PyTorch model (--shape as above);
 *   a model manifest      JSON naming one model in several forms (the
 *                         Python front writes it for an nn.Module: the
 *                         module's spec, its ONNX export, ...), with the
 *                         signature and the reference conversion;
 *                         docs/model-manifest.md.
 * The IR is the ONNX graph whenever there is one; otherwise an "opaque"
 * model: declared inputs and outputs, no nodes. Input generation and
 * input files work from the IR's inputs either way; each conversion gets
 * the file of its format (runtime options' model_path). */
#include "bench/bench_internal.h"
#include "bench/zip.h"
#include "core/json_parse.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#define MANIFEST_VERSION 1

typedef enum file_kind {
  KIND_ONNX,
  KIND_TORCHSCRIPT,
  KIND_MANIFEST,
  KIND_PICKLE
} file_kind;

/* The largest zip central directory read to tell a TorchScript archive
 * from a torch.save pickle (a name per tensor: far below this). */
#define MAX_ZIP_DIRECTORY (64u << 20)

/* ---- small helpers ---- */

/* Whether `name` ends with `suffix`. */
static bool ends_with(const char *name, size_t len, const char *suffix) {
  size_t n = strlen(suffix);
  return len >= n && memcmp(name + len - n, suffix, n) == 0;
}

/* Whether `name` (len bytes, not terminated) contains `part`. */
static bool contains(const char *name, size_t len, const char *part) {
  size_t n = strlen(part);
  for (size_t i = 0; i + n <= len; i++)
    if (memcmp(name + i, part, n) == 0)
      return true;
  return false;
}

/* mb_zip_read_fn over an open file: a model archive is read where its
 * directory lies, never whole. */
static bool file_read(void *ctx, uint64_t offset, void *buf, size_t n) {
  FILE *f = ctx;
  return offset <= (uint64_t)LONG_MAX &&
         fseek(f, (long)offset, SEEK_SET) == 0 && fread(buf, 1, n, f) == n;
}

/* A zip is a torch.save pickle when it has a data.pkl and none of what
 * torch.jit.save writes beside it (constants.pkl, code/); anything else
 * (TorchScript, a zip we cannot read) stays TORCHSCRIPT, whose loader is
 * libtorch's C++ one, which runs no Python. */
static file_kind zip_kind(FILE *f) {
  uint64_t offset, size, count, pos = 0;
  file_kind kind = KIND_TORCHSCRIPT;
  unsigned char *dir = NULL;
  bool pickle = false, torchscript = false;
  long end;
  if (fseek(f, 0, SEEK_END) != 0 || (end = ftell(f)) < 0 ||
      mb__zip_directory(file_read, f, (uint64_t)end, "", "zip", &offset, &size,
                        &count, NULL) != MB_STATUS_OK ||
      size > MAX_ZIP_DIRECTORY || !(dir = malloc(size ? size : 1)) ||
      !file_read(f, offset, dir, size))
    goto done;
  mb_zip_entry e;
  while (mb__zip_central(dir, size, &pos, &e)) {
    const char *name = (const char *)e.name;
    pickle |= ends_with(name, e.name_len, "data.pkl");
    torchscript |= ends_with(name, e.name_len, "constants.pkl") ||
                   contains(name, e.name_len, "/code/");
  }
  if (pickle && !torchscript)
    kind = KIND_PICKLE;
done:
  free(dir);
  return kind;
}

/* What the first bytes say: a zip is a TorchScript archive or a torch.save
 * pickle (zip_kind), a pickle's protocol byte a pickle, '{' a manifest,
 * anything else is parsed as ONNX (whose loader then explains what is
 * wrong with it). */
static mb_status sniff(const char *path, file_kind *kind_out, mb_error *err) {
  unsigned char head[64];
  FILE *f = fopen(path, "rb");
  if (!f)
    return mb__error(err, MB_STATUS_IO, "%s: %s", path, strerror(errno));
  size_t n = fread(head, 1, sizeof head, f);
  *kind_out = KIND_ONNX;
  if (n >= 4 && memcmp(head, "PK\x03\x04", 4) == 0)
    *kind_out = zip_kind(f);
  else if (n >= 2 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5)
    *kind_out = KIND_PICKLE; /* torch.save's legacy format, pickle.dump */
  fclose(f);
  if (*kind_out != KIND_ONNX)
    return MB_STATUS_OK;
  size_t i = 0;
  while (i < n && isspace(head[i]))
    i++;
  if (i < n && head[i] == '{')
    *kind_out = KIND_MANIFEST;
  return MB_STATUS_OK;
}

/* `rel` resolved against the folder of `base_file` (absolute paths stay). */
static char *resolve_path(const char *base_file, const char *rel) {
  if (rel[0] == '/')
    return mb__strdup(rel);
  const char *slash = strrchr(base_file, '/');
  size_t dir_len = slash ? (size_t)(slash - base_file) + 1 : 0;
  size_t n = dir_len + strlen(rel) + 1;
  char *path = malloc(n);
  if (path)
    snprintf(path, n, "%.*s%s", (int)dir_len, base_file, rel);
  return path;
}

/* The file name without folder and extension: names the model in reports
 * and cache folders. */
static void file_stem(const char *path, char *buf, size_t size) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  int len = dot && dot > base ? (int)(dot - base) : (int)strlen(base);
  snprintf(buf, size, "%.*s", len, base);
}

mb_status mb__file_sha256(const char *path, char hex[65], mb_error *err) {
  void *bytes = NULL;
  size_t size = 0;
  mb_status status = mb__read_file(path, &bytes, &size, err);
  if (status)
    return status;
  mb_sha256 ctx;
  uint8_t digest[32];
  mb__sha256_init(&ctx);
  mb__sha256_update(&ctx, bytes, size);
  mb__sha256_final(&ctx, digest);
  mb__sha256_hex(digest, hex);
  free(bytes);
  return MB_STATUS_OK;
}

static mb_model *opaque_model(const char *sha256, mb_error *err) {
  mb_model *m = mb__model_create();
  if (!m) {
    mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot create the model");
    return NULL;
  }
  snprintf(m->sha256_hex, sizeof m->sha256_hex, "%s", sha256);
  m->producer_name = "modelbench (opaque model)";
  return m;
}

/* ---- TorchScript: the signature comes from --shape ---- */

/* what: "a TorchScript model", for the message asking for --shape. */
static mb_status open_torchscript(const char *path, const char *what,
                                  const mb_bench_config *config,
                                  mb_model_files *f, mb_error *err) {
  mb_status status = mb__file_sha256(path, f->sha256, err);
  if (status)
    return status;
  if (config->shapes.n_shapes <= 0)
    return mb__error(err, MB_STATUS_DYNAMIC,
                     "%s is %s, which does not declare its "
                     "inputs: give --shape NAME=D0,D1,... for each argument "
                     "of forward(), in order",
                     path, what);
  if (!(f->model = opaque_model(f->sha256, err)))
    return MB_STATUS_OUT_OF_MEMORY;
  for (int i = 0; i < config->shapes.n_shapes; i++) {
    const mb_input_shape *s = &config->shapes.shapes[i];
    if (mb__graph_add_input(f->model->graph, s->name, MB_DTYPE_FLOAT, s->rank,
                            s->dims, NULL, err) < 0)
      return err ? err->status : MB_STATUS_INTERNAL;
  }
  f->formats = 1u << MB_MODEL_FORMAT_TORCHSCRIPT;
  f->paths[MB_MODEL_FORMAT_TORCHSCRIPT] = mb__strdup(path);
  if (!f->paths[MB_MODEL_FORMAT_TORCHSCRIPT])
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  return MB_STATUS_OK;
}

/* ---- a pickled module: code, run only when the user trusts it ---- */

/* A torch.save file: the one-form PyTorch model the host runtime loads
 * (EAGER and the other PyTorch conversions; EAGER is the reference), its
 * inputs from --shape as for TorchScript. Refused without trust_code:
 * unpickling the file runs whatever code it names. */
static mb_status open_pickle(const char *path, const mb_bench_config *config,
                             mb_model_files *f, mb_error *err) {
  if (!config->trust_code)
    return mb__error(
        err, MB_STATUS_UNSUPPORTED,
        "%s is a pickled PyTorch model (torch.save), which runs code when "
        "loaded: give --trust-code if you trust the file (modelbench runs a "
        "model's code only when told to; its PyTorch conversions need the "
        "Python front, python3 -m modelbench bench); better, save it with "
        "torch.jit.save or export it to ONNX",
        path);
  mb_status status =
      open_torchscript(path, "a pickled PyTorch model", config, f, err);
  if (status)
    return status;
  free(f->paths[MB_MODEL_FORMAT_TORCHSCRIPT]);
  f->paths[MB_MODEL_FORMAT_TORCHSCRIPT] = NULL;
  f->formats = 1u << MB_MODEL_FORMAT_PYTORCH;
  f->paths[MB_MODEL_FORMAT_PYTORCH] = mb__strdup(path);
  f->reference = mb__strdup("EAGER");
  if (!f->paths[MB_MODEL_FORMAT_PYTORCH] || !f->reference)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  return MB_STATUS_OK;
}

/* ---- the manifest ---- */

/* Fails naming the manifest, the place and what is wrong. */
static mb_status bad(mb_error *err, const char *path, const mb_json_value *v,
                     const char *what, const char *detail) {
  return mb__error(err, MB_STATUS_PARSE, "%s:%d:%d: %s%s%s", path,
                   v ? v->line : 1, v ? v->column : 1, what,
                   detail && detail[0] ? ": " : "", detail ? detail : "");
}

/* Keys allowed in an object; the first unknown one fails. */
static mb_status check_keys(const char *path, const mb_json_value *object,
                            const char *const *keys, size_t n_keys,
                            const char *where, mb_error *err) {
  for (size_t m = 0; m < object->count; m++) {
    bool known = false;
    for (size_t k = 0; k < n_keys && !known; k++)
      known = strcmp(object->members[m].key, keys[k]) == 0;
    if (!known) {
      char what[160];
      snprintf(what, sizeof what, "unknown key '%s' in %s",
               object->members[m].key, where);
      return bad(err, path, &object->members[m].value, what, NULL);
    }
  }
  return MB_STATUS_OK;
}

/* One {"name", "dtype", "shape"} entry into the graph's inputs/outputs. */
static mb_status add_declared(mb_model *m, const char *path,
                              const mb_json_value *v, bool input,
                              mb_error *err) {
  static const char *const keys[] = {"name", "dtype", "shape"};
  const char *where = input ? "an input" : "an output";
  if (v->type != MB_JSON_OBJECT)
    return bad(err, path, v, where,
               "expected {\"name\", \"dtype\", \"shape\"}");
  mb_status status =
      check_keys(path, v, keys, MB_ARRAY_COUNT(keys), where, err);
  if (status)
    return status;
  const mb_json_value *name = mb__json_find(v, "name");
  const mb_json_value *dtype = mb__json_find(v, "dtype");
  const mb_json_value *shape = mb__json_find(v, "shape");
  if (!name || name->type != MB_JSON_STRING || !name->string[0])
    return bad(err, path, v, where, "\"name\" must be a non-empty string");
  mb_dtype type = MB_DTYPE_FLOAT;
  if (dtype) {
    if (dtype->type != MB_JSON_STRING ||
        (type = mb_dtype_from_name(dtype->string)) == MB_DTYPE_UNDEFINED)
      return bad(err, path, dtype, "unknown dtype",
                 dtype->type == MB_JSON_STRING ? dtype->string : "");
  }
  int rank = -1;
  int64_t dims[MB_MAX_RANK];
  const char *params[MB_MAX_RANK];
  if (shape && shape->type != MB_JSON_NULL) {
    if (shape->type != MB_JSON_ARRAY || shape->count > MB_MAX_RANK)
      return bad(err, path, shape, "\"shape\" must be an array of at most 8",
                 "integers, or strings/null for dynamic dimensions");
    rank = (int)shape->count;
    for (int d = 0; d < rank; d++) {
      const mb_json_value *dim = &shape->items[d];
      params[d] = NULL;
      if (dim->type == MB_JSON_NUMBER && dim->is_integer && dim->integer >= 0)
        dims[d] = dim->integer;
      else if (dim->type == MB_JSON_STRING || dim->type == MB_JSON_NULL ||
               (dim->type == MB_JSON_NUMBER && dim->is_integer &&
                dim->integer == -1)) {
        dims[d] = -1;
        params[d] = dim->type == MB_JSON_STRING ? dim->string : NULL;
      } else
        return bad(err, path, dim, "bad dimension",
                   "expected a size >= 0, -1, null or a name");
    }
  }
  int index = input ? mb__graph_add_input(m->graph, name->string, type, rank,
                                          dims, params, err)
                    : mb__graph_add_output(m->graph, name->string, type, rank,
                                           dims, params, err);
  return index < 0 ? (err ? err->status : MB_STATUS_INTERNAL) : MB_STATUS_OK;
}

static mb_status read_formats(const char *path, const mb_json_value *formats,
                              mb_model_files *f, mb_error *err) {
  static const char *const keys[] = {"path", "error", "build_ms", "cache_hit"};
  if (formats->type != MB_JSON_OBJECT)
    return bad(err, path, formats, "\"formats\" must be an object",
               "{\"onnx\": {\"path\": \"model.onnx\"}, ...}");
  for (size_t m = 0; m < formats->count; m++) {
    const mb_json_member *member = &formats->members[m];
    int format = -1;
    for (int k = 0; k < MB_MODEL_FORMAT_COUNT; k++)
      if (strcmp(member->key, mb_model_format_name((mb_model_format)k)) == 0)
        format = k;
    if (format < 0)
      return bad(err, path, &member->value, "unknown format",
                 "expected onnx, torchscript or pytorch");
    const mb_json_value *v = &member->value;
    mb_status status;
    if (v->type != MB_JSON_OBJECT)
      return bad(err, path, v, "a format must be an object",
                 "{\"path\": FILE} or {\"error\": WHY}");
    if ((status =
             check_keys(path, v, keys, MB_ARRAY_COUNT(keys), "a format", err)))
      return status;
    const mb_json_value *file = mb__json_find(v, "path");
    const mb_json_value *why = mb__json_find(v, "error");
    const mb_json_value *ms = mb__json_find(v, "build_ms");
    const mb_json_value *hit = mb__json_find(v, "cache_hit");
    if ((file && file->type != MB_JSON_STRING) ||
        (why && why->type != MB_JSON_STRING) || (!file == !why))
      return bad(err, path, v, "a format needs a string \"path\" or a string",
                 "\"error\" (why the model lacks it)");
    if (ms && (ms->type != MB_JSON_NUMBER || !(ms->number >= 0)))
      return bad(err, path, ms, "\"build_ms\" must be a number >= 0",
                 "the milliseconds the form took to make");
    if (hit && hit->type != MB_JSON_BOOL)
      return bad(err, path, hit, "\"cache_hit\" must be true or false",
                 "whether the form came from the build cache");
    f->cache_hit[format] = hit ? hit->boolean : -1;
    if (ms) {
      f->built |= 1u << format;
      f->build_ms[format] = ms->number;
    }
    if (file) {
      if (!(f->paths[format] = resolve_path(path, file->string)))
        return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
      f->formats |= 1u << format;
    } else if (!(f->errors[format] = mb__strdup(why->string))) {
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    }
  }
  if (!f->formats)
    return bad(err, path, formats, "the manifest offers no format",
               "at least one needs a \"path\"");
  return MB_STATUS_OK;
}

/* "source": {"script", "location", "labels": {"key": "value", ...}}: where
 * the model came from (the Python front's `script` command writes it). */
static mb_status read_source(const char *path, const mb_json_value *source,
                             mb_model_files *f, mb_error *err) {
  static const char *const keys[] = {"script", "location", "labels"};
  if (source->type != MB_JSON_OBJECT)
    return bad(err, path, source, "\"source\" must be an object",
               "{\"script\", \"location\", \"labels\"}");
  mb_status status =
      check_keys(path, source, keys, MB_ARRAY_COUNT(keys), "\"source\"", err);
  if (status)
    return status;
  const mb_json_value *script = mb__json_find(source, "script");
  const mb_json_value *location = mb__json_find(source, "location");
  const mb_json_value *labels = mb__json_find(source, "labels");
  if ((script && script->type != MB_JSON_STRING) ||
      (location && location->type != MB_JSON_STRING) ||
      (labels && labels->type != MB_JSON_OBJECT))
    return bad(err, path, source, "bad value in \"source\"",
               "\"script\" and \"location\" are strings, \"labels\" an "
               "object of strings");
  if ((script && !(f->script = mb__strdup(script->string))) ||
      (location && !(f->location = mb__strdup(location->string))))
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  if (!labels || labels->count == 0)
    return MB_STATUS_OK;
  if (!(f->labels = calloc(labels->count, sizeof *f->labels)))
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (size_t i = 0; i < labels->count; i++) {
    const mb_json_member *m = &labels->members[i];
    if (m->value.type != MB_JSON_STRING)
      return bad(err, path, &m->value, "a label's value must be a string",
                 m->key);
    size_t n = strlen(m->key) + strlen(m->value.string) + 2;
    char *label = malloc(n);
    if (!label)
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    snprintf(label, n, "%s=%s", m->key, m->value.string);
    f->labels[f->n_labels++] = label;
    mb_error why;
    if (mb__check_label(label, &why) != MB_STATUS_OK)
      return bad(err, path, &m->value, "bad label", why.message);
  }
  return MB_STATUS_OK;
}

static bool is_sha256(const char *s) {
  size_t n = 0;
  for (; s[n]; n++)
    if (!isxdigit((unsigned char)s[n]) || isupper((unsigned char)s[n]))
      return false;
  return n == 64;
}

static mb_status open_manifest(const char *path, mb_model_files *f,
                               mb_error *err) {
  static const char *const keys[] = {
      "modelbench_model", "name",    "sha256",        "description",
      "inputs",           "outputs", "formats",       "reference",
      "inputs_dir",       "source",  "content_sha256"};
  mb_json_doc *doc = NULL;
  mb_status status = mb__json_parse_file(path, &doc, err);
  if (status)
    return status;
  const mb_json_value *root = &doc->root;
  const mb_json_value *version = mb__json_find(root, "modelbench_model");
  const mb_json_value *name = mb__json_find(root, "name");
  const mb_json_value *sha = mb__json_find(root, "sha256");
  const mb_json_value *content = mb__json_find(root, "content_sha256");
  const mb_json_value *inputs = mb__json_find(root, "inputs");
  const mb_json_value *outputs = mb__json_find(root, "outputs");
  const mb_json_value *formats = mb__json_find(root, "formats");
  const mb_json_value *reference = mb__json_find(root, "reference");
  const mb_json_value *inputs_dir = mb__json_find(root, "inputs_dir");
  const mb_json_value *source = mb__json_find(root, "source");
  if (root->type != MB_JSON_OBJECT || !version) {
    status = bad(err, path, root, "not a model manifest",
                 "expected a JSON object with \"modelbench_model\": 1 "
                 "(docs/model-manifest.md)");
    goto done;
  }
  if (version->type != MB_JSON_NUMBER || !version->is_integer ||
      version->integer != MANIFEST_VERSION) {
    status = bad(err, path, version, "unsupported manifest version",
                 "this modelbench reads version 1");
    goto done;
  }
  if ((status = check_keys(path, root, keys, MB_ARRAY_COUNT(keys),
                           "the manifest", err)))
    goto done;
  if (!inputs || inputs->type != MB_JSON_ARRAY || !formats) {
    status = bad(err, path, root, "the manifest needs",
                 "\"inputs\" (an array) and \"formats\"");
    goto done;
  }
  if ((name && name->type != MB_JSON_STRING) ||
      (reference && reference->type != MB_JSON_STRING) ||
      (sha && (sha->type != MB_JSON_STRING || !is_sha256(sha->string))) ||
      (content &&
       (content->type != MB_JSON_STRING || !is_sha256(content->string))) ||
      (outputs && outputs->type != MB_JSON_ARRAY) ||
      (inputs_dir && inputs_dir->type != MB_JSON_STRING)) {
    status = bad(err, path, root, "bad value",
                 "\"name\", \"reference\" and \"inputs_dir\" are strings, "
                 "\"sha256\" and \"content_sha256\" 64 lowercase hex digits, "
                 "\"outputs\" an array");
    goto done;
  }
  if (inputs_dir && !(f->inputs_dir = resolve_path(path, inputs_dir->string))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  if (source && (status = read_source(path, source, f, err)))
    goto done;
  if ((status = read_formats(path, formats, f, err)))
    goto done;
  if (sha)
    snprintf(f->sha256, sizeof f->sha256, "%s", sha->string);
  else if ((status = mb__file_sha256(path, f->sha256, err)))
    goto done;
  if (content)
    snprintf(f->content_sha256, sizeof f->content_sha256, "%s",
             content->string);
  if (name)
    snprintf(f->name, sizeof f->name, "%s", name->string);
  if (reference && !(f->reference = mb__strdup(reference->string))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }

  if (f->paths[MB_MODEL_FORMAT_ONNX]) {
    /* The ONNX export is the IR: its graph is what ONNX conversions, the
     * reference interpreter and the build steps work on. */
    const char *onnx = f->paths[MB_MODEL_FORMAT_ONNX];
    mb_error onnx_err = {0};
    mb_status onnx_status = mb_model_load(onnx, &f->model, &onnx_err);
    if (!onnx_status && mb_model_input_count(f->model) != (int)inputs->count)
      onnx_status =
          mb__error(&onnx_err, MB_STATUS_PARSE,
                    "%s declares %zu inputs but its ONNX model %s has %d", path,
                    inputs->count, onnx, mb_model_input_count(f->model));
    if (!onnx_status)
      onnx_status =
          mb__read_file(onnx, &f->onnx_bytes, &f->onnx_size, &onnx_err);
    if (!onnx_status)
      goto done;
    if (f->formats == 1u << MB_MODEL_FORMAT_ONNX) {
      *err = onnx_err; /* the model has nothing else to run */
      status = onnx_status;
      goto done;
    }
    /* A bad export (an exporter that dropped an unused input, a file that
     * does not parse) fails the ONNX conversions, with why; the model's
     * other formats (EAGER, TORCHSCRIPT) still run on the declared
     * signature. */
    if (!(f->errors[MB_MODEL_FORMAT_ONNX] = mb__strdup(onnx_err.message))) {
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
    free(f->paths[MB_MODEL_FORMAT_ONNX]);
    f->paths[MB_MODEL_FORMAT_ONNX] = NULL;
    f->formats &= ~(1u << MB_MODEL_FORMAT_ONNX);
    mb_model_free(f->model);
    f->model = NULL;
    free(f->onnx_bytes);
    f->onnx_bytes = NULL;
    f->onnx_size = 0;
  }
  if (!(f->model = opaque_model(f->sha256, err))) {
    status = MB_STATUS_OUT_OF_MEMORY;
    goto done;
  }
  for (size_t i = 0; !status && i < inputs->count; i++)
    status = add_declared(f->model, path, &inputs->items[i], true, err);
  for (size_t i = 0; !status && outputs && i < outputs->count; i++)
    status = add_declared(f->model, path, &outputs->items[i], false, err);

done:
  mb__json_doc_free(doc);
  return status;
}

/* ---- the API ---- */

mb_status mb__model_files_open(const char *path, const mb_bench_config *config,
                               mb_model_files *f, mb_error *err) {
  file_kind kind;
  memset(f, 0, sizeof *f);
  mb_status status = sniff(path, &kind, err);
  if (status)
    return status;
  file_stem(path, f->name, sizeof f->name);
  switch (kind) {
  case KIND_TORCHSCRIPT:
    status = open_torchscript(path, "a TorchScript model", config, f, err);
    break;
  case KIND_PICKLE:
    status = open_pickle(path, config, f, err);
    break;
  case KIND_MANIFEST:
    status = open_manifest(path, f, err);
    break;
  case KIND_ONNX:
    if ((status = mb_model_load(path, &f->model, err)) ||
        (status = mb__read_file(path, &f->onnx_bytes, &f->onnx_size, err)))
      break;
    f->formats = 1u << MB_MODEL_FORMAT_ONNX;
    if (!(f->paths[MB_MODEL_FORMAT_ONNX] = mb__strdup(path)))
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    snprintf(f->sha256, sizeof f->sha256, "%s", mb_model_sha256(f->model));
    break;
  }
  if (status)
    mb__model_files_close(f);
  return status;
}

void mb__model_files_close(mb_model_files *f) {
  mb_model_free(f->model);
  free(f->onnx_bytes);
  for (int i = 0; i < MB_MODEL_FORMAT_COUNT; i++) {
    free(f->paths[i]);
    free(f->errors[i]);
  }
  free(f->reference);
  free(f->inputs_dir);
  free(f->script);
  free(f->location);
  for (int i = 0; i < f->n_labels; i++)
    free(f->labels[i]);
  free(f->labels);
  memset(f, 0, sizeof *f);
}

const char *mb__model_files_missing(const mb_model_files *f,
                                    mb_model_format format, char *buf,
                                    size_t size) {
  if ((unsigned)format >= MB_MODEL_FORMAT_COUNT)
    return "unknown model format";
  if (f->errors[format]) {
    snprintf(buf, size, "no %s model: %s", mb_model_format_name(format),
             f->errors[format]);
    return buf;
  }
  size_t used = 0;
  used += (size_t)snprintf(buf, size, "needs a %s model; this model is ",
                           mb_model_format_name(format));
  for (int k = 0, first = 1; k < MB_MODEL_FORMAT_COUNT && used < size; k++)
    if (f->formats & (1u << k)) {
      used += (size_t)snprintf(buf + used, size - used, "%s%s",
                               first ? "" : " and ",
                               mb_model_format_name((mb_model_format)k));
      first = 0;
    }
  if (format == MB_MODEL_FORMAT_PYTORCH && used < size)
    snprintf(buf + used, size - used,
             " (PyTorch conversions take an nn.Module: use the Python "
             "front, modelbench.benchmark_model)");
  return buf;
}

mb_status mb_model_file_formats(const char *path, unsigned *formats_out,
                                mb_error *err) {
  file_kind kind;
  if (!path || !formats_out)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "mb_model_file_formats: path and formats_out are "
                     "required");
  mb_status status = sniff(path, &kind, err);
  if (status)
    return status;
  if (kind != KIND_MANIFEST) {
    static const mb_model_format by_kind[] = {
        [KIND_ONNX] = MB_MODEL_FORMAT_ONNX,
        [KIND_TORCHSCRIPT] = MB_MODEL_FORMAT_TORCHSCRIPT,
        [KIND_PICKLE] = MB_MODEL_FORMAT_PYTORCH,
    };
    *formats_out = 1u << by_kind[kind];
    return MB_STATUS_OK;
  }
  mb_model_files f;
  memset(&f, 0, sizeof f);
  mb_json_doc *doc = NULL;
  if ((status = mb__json_parse_file(path, &doc, err)))
    return status;
  const mb_json_value *formats = mb__json_find(&doc->root, "formats");
  status = formats ? read_formats(path, formats, &f, err)
                   : bad(err, path, &doc->root, "not a model manifest",
                         "no \"formats\"");
  if (!status)
    *formats_out = f.formats;
  mb__json_doc_free(doc);
  f.model = NULL;
  mb__model_files_close(&f);
  return status;
}
