/* modelbench tune --output: the winner as a model file, and the record in
 * it that `bench` reads back (docs/json-schema.md, "The tuned model").
 *
 * The model is what `modelbench convert -c WINNER --keep-float ...` writes
 * (mb__convert_model_bytes, the same inputs and calibration options), with
 * one more ModelProto.metadata_props entry, "modelbench.tune", holding the
 * configuration as JSON. The entry is added to the serialised bytes, not
 * through the IR: the model stays byte for byte the convert output (a
 * round trip through our reader and writer could drop what they do not
 * model), and a protobuf message may carry its fields in any order. Only
 * the top level of ModelProto is walked, as protobuf's wire format (tag,
 * length); no protobuf structs are seen here. */
#include "bench/tune_internal.h"
#include "conversions/conversion.h"
#include "core/files.h"
#include "core/json_parse.h"
#include "core/json_write.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define TUNE_METADATA_SCHEMA_VERSION 1
#define MODEL_METADATA_PROPS 14 /* ModelProto.metadata_props */
#define ENTRY_KEY 1             /* StringStringEntryProto.key */
#define ENTRY_VALUE 2           /* StringStringEntryProto.value */
#define WIRE_VARINT 0
#define WIRE_I64 1
#define WIRE_LEN 2
#define WIRE_I32 5

/* ---- protobuf's wire format, the little of it needed here ---- */

static bool get_varint(const uint8_t *p, size_t n, size_t *at, uint64_t *v) {
  *v = 0;
  for (int shift = 0; shift < 64 && *at < n; shift += 7) {
    uint8_t b = p[(*at)++];
    *v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80))
      return true;
  }
  return false;
}

static size_t put_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  do {
    p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  return n;
}

/* One field at *at: its number, wire type and where its payload is (for
 * LEN fields the bytes, else the whole value). Advances *at past it. */
static bool next_field(const uint8_t *p, size_t n, size_t *at, uint32_t *field,
                       const uint8_t **payload, size_t *payload_size) {
  uint64_t tag, len = 0;
  if (!get_varint(p, n, at, &tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX)
    return false;
  *field = (uint32_t)(tag >> 3);
  size_t start = *at;
  switch (tag & 7) {
  case WIRE_VARINT:
    if (!get_varint(p, n, at, &len))
      return false;
    break;
  case WIRE_I64:
    if (n - *at < 8)
      return false;
    *at += 8;
    break;
  case WIRE_LEN:
    if (!get_varint(p, n, at, &len) || len > n - *at)
      return false;
    start = *at;
    *at += (size_t)len;
    break;
  case WIRE_I32:
    if (n - *at < 4)
      return false;
    *at += 4;
    break;
  default: /* groups: not in onnx.proto */
    return false;
  }
  *payload = p + start;
  *payload_size = *at - start;
  return (tag & 7) == WIRE_LEN || *field != MODEL_METADATA_PROPS;
}

/* The metadata entry (a StringStringEntryProto) whose key is key: its
 * value, or NULL. */
static const uint8_t *entry_value(const uint8_t *e, size_t n, const char *key,
                                  size_t *value_size) {
  const uint8_t *k = NULL, *v = NULL, *payload;
  size_t k_size = 0, v_size = 0, size, at = 0;
  uint32_t field;
  while (at < n && next_field(e, n, &at, &field, &payload, &size)) {
    if (field == ENTRY_KEY)
      k = payload, k_size = size;
    else if (field == ENTRY_VALUE)
      v = payload, v_size = size;
  }
  if (at != n || !k || k_size != strlen(key) || memcmp(k, key, k_size) != 0)
    return NULL;
  *value_size = v_size;
  return v ? v : (const uint8_t *)"";
}

/* Walks a serialised ModelProto's top level. When out is not NULL,
 * copies every field but the metadata entries named key to out (sized
 * n); returns false on bytes that are not a protobuf message. *value,
 * *value_size: the last entry named key (NULL when none). */
static bool walk_model(const uint8_t *p, size_t n, const char *key,
                       uint8_t *out, size_t *out_size, const uint8_t **value,
                       size_t *value_size) {
  size_t at = 0, used = 0;
  *value = NULL;
  while (at < n) {
    size_t begin = at, size;
    const uint8_t *payload;
    uint32_t field;
    if (!next_field(p, n, &at, &field, &payload, &size))
      return false;
    const uint8_t *v = NULL;
    size_t v_size = 0;
    if (field == MODEL_METADATA_PROPS &&
        (v = entry_value(payload, size, key, &v_size))) {
      *value = v;
      *value_size = v_size;
      continue;
    }
    if (out)
      memcpy(out + used, p + begin, at - begin);
    used += at - begin;
  }
  if (out_size)
    *out_size = used;
  return true;
}

/* bytes (a serialised ModelProto) with metadata_props[key] = value: any
 * entry of that key dropped, one appended. *out: malloc'd. */
static mb_status set_metadata(const void *bytes, size_t n, const char *key,
                              const char *value, void **out, size_t *out_n,
                              const char *what, mb_error *err) {
  const uint8_t *old;
  size_t old_size, used, k = strlen(key), v = strlen(value);
  if (!walk_model(bytes, n, key, NULL, &used, &old, &old_size))
    return mb__error(err, MB_STATUS_PARSE,
                     "%s: not an ONNX model (its protobuf does not parse)",
                     what);
  size_t entry = 2 + 10 + k + 10 + v;
  uint8_t *o = malloc(used + entry + 10 + 2);
  if (!o)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s: out of memory", what);
  walk_model(bytes, n, key, o, &used, &old, &old_size);
  uint8_t head[32];
  size_t h = put_varint(head, (uint64_t)ENTRY_KEY << 3 | WIRE_LEN);
  h += put_varint(head + h, k);
  size_t entry_size = h + k;
  h = put_varint(head, (uint64_t)ENTRY_VALUE << 3 | WIRE_LEN);
  h += put_varint(head + h, v);
  entry_size += h + v;
  used += put_varint(o + used, (uint64_t)MODEL_METADATA_PROPS << 3 | WIRE_LEN);
  used += put_varint(o + used, entry_size);
  used += put_varint(o + used, (uint64_t)ENTRY_KEY << 3 | WIRE_LEN);
  used += put_varint(o + used, k);
  memcpy(o + used, key, k);
  used += k;
  used += put_varint(o + used, (uint64_t)ENTRY_VALUE << 3 | WIRE_LEN);
  used += put_varint(o + used, v);
  memcpy(o + used, value, v);
  used += v;
  *out = o;
  *out_n = used;
  return MB_STATUS_OK;
}

/* ---- writing ---- */

/* What `bench` runs on the artifact: a conversion whose steps are all in
 * the file (optimize, to_fp16, quantize_*: a QDQ or fp16 model) leaves the
 * runtime's own conversion to run it (ORT_CPU for INT8_STATIC+ORT_CPU);
 * one with no steps (ORT_CPU, BF16+ONEDNN) or whose int8 lives in the
 * engine (quant_params: the file is the float model) runs as itself. */
/* A row that runs the model as given: no steps, or only the cleanup
 * OPENVINO's rows run (Constant nodes to initializers, inference-mode
 * Dropout and Identity out), none that changes the graph's arithmetic. */
static bool as_given(const mb_conversion_def *d) {
  static const char *const changing[] = {"optimize", "fold_batchnorm",
                                         "fold_constants", "to_fp16", "quant"};
  if (!d->steps)
    return true;
  for (size_t i = 0; i < MB_ARRAY_COUNT(changing); i++)
    if (strstr(d->steps, changing[i]))
      return false;
  return true;
}

static const char *rerun_conversion(const mb_conversion_def *def) {
  if (!def->steps || !def->steps[0] || strstr(def->steps, "quant_params"))
    return def->name;
  for (int i = 0; i < mb_conversion_count(); i++) {
    const mb_conversion_def *d = mb__conversion_def(i);
    if (d && as_given(d) && !d->format && d->precision == MB_PRECISION_FP32 &&
        d->device == def->device && d->opt_level == def->opt_level &&
        strcmp(d->runtime, def->runtime) == 0)
      return d->name;
  }
  return def->name;
}

static void kv_number(mb_json *j, const char *key, double v, bool known) {
  if (known && isfinite(v))
    mb__json_kv_double(j, key, v);
  else
    mb__json_kv_string(j, key, NULL);
}

static bool kept(const mb_tune_step *w, const char *name) {
  for (int k = 0; k < w->n_kept_float; k++)
    if (strcmp(w->kept_float[k], name) == 0)
      return true;
  return false;
}

/* The quantisable nodes of a model tune did not estimate (a winner that
 * is not int8): Conv, MatMul and Gemm with a name, in graph order. */
static mb_status model_groups(const char *model_path, mb_model **model_out,
                              const char ***groups_out, int *n_out,
                              mb_error *err) {
  static const char *const kinds[] = {"Conv", "MatMul", "Gemm"};
  mb_status status = mb_model_load(model_path, model_out, err);
  if (status)
    return status;
  const mb_graph *g = (*model_out)->graph;
  const char **groups = calloc((size_t)g->n_nodes + 1, sizeof *groups);
  if (!groups)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: nodes");
  int n = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *node = &g->nodes[i];
    bool quantisable = false;
    for (size_t k = 0; k < MB_ARRAY_COUNT(kinds); k++)
      quantisable |= !node->domain[0] && strcmp(node->op_type, kinds[k]) == 0;
    if (quantisable && node->name && node->name[0])
      groups[n++] = node->name;
  }
  *groups_out = groups;
  *n_out = n;
  return MB_STATUS_OK;
}

static mb_status metadata_json(const mb_tune_artifact_args *a, char **out,
                               mb_error *err) {
  const mb_tune_result *r = a->result;
  const mb_tune_step *w = &r->steps[r->winner];
  int index;
  mb_status status = mb_conversion_find(w->conversion, &index, err);
  if (status)
    return status;
  const mb_conversion_def *def = mb__conversion_def(index);
  char sha[65];
  if ((status = mb__file_sha256(a->model_path, sha, err)))
    return status;
  mb_model *model = NULL;
  const char **groups = (const char **)a->groups, **own = NULL;
  int n_groups = a->n_groups;
  if (!groups &&
      (status = model_groups(a->model_path, &model, &own, &n_groups, err))) {
    mb_model_free(model);
    return status;
  }
  if (own)
    groups = own;
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  if (!f) {
    free(own);
    mb_model_free(model);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: metadata");
  }
  mb_json j;
  mb__json_init(&j, f, false);
  mb__json_object_begin(&j);
  mb__json_kv_int(&j, "schema_version", TUNE_METADATA_SCHEMA_VERSION);
  mb__json_kv_string(&j, "tool", "modelbench");
  mb__json_kv_string(&j, "version", MB_VERSION_STRING);
  mb__json_kv_string(&j, "conversion", w->conversion);
  mb__json_kv_string(&j, "bench_conversion", rerun_conversion(def));
  mb__json_kv_int(&j, "threads", w->threads);
  mb__json_kv_int(&j, "batch_size", MB_MAX(w->batch_size, 1));
  mb__json_key(&j, "kept_float");
  mb__json_array_begin(&j);
  for (int k = 0; k < w->n_kept_float; k++)
    mb__json_string(&j, w->kept_float[k]);
  mb__json_array_end(&j);
  mb__json_key(&j, "node_precision");
  mb__json_object_begin(&j);
  for (int i = 0; i < n_groups; i++)
    mb__json_kv_string(&j, groups[i],
                       kept(w, groups[i]) ? mb_precision_name(MB_PRECISION_FP32)
                                          : mb_precision_name(def->precision));
  mb__json_object_end(&j);
  mb__json_kv_double(&j, "max_error", r->max_error);
  /* A task-accuracy budget (--max-accuracy-drop): it, the baseline it was
   * measured against and the winner's own task accuracy. */
  bool drop = r->max_accuracy_drop > 0;
  kv_number(&j, "max_accuracy_drop", r->max_accuracy_drop, drop);
  mb__json_kv_string(&j, "baseline",
                     drop && r->baseline[0] ? r->baseline : NULL);
  kv_number(&j, "baseline_task_accuracy", r->baseline_task_accuracy,
            drop && r->baseline_task_accuracy >= 0);
  kv_number(&j, "task_accuracy", w->task_accuracy, w->task_accuracy >= 0);
  kv_number(&j, "error", w->error, w->error >= 0);
  kv_number(&j, "cosine", w->cosine, w->cosine >= -1);
  kv_number(&j, "median_ms", w->median_ms, w->median_ms >= 0);
  kv_number(&j, "int8_flops_share", w->int8_flops_share,
            w->int8_flops_share >= 0);
  mb__json_kv_string(&j, "model_path", a->model_path);
  mb__json_kv_string(&j, "model_sha256", sha);
  mb__json_object_end(&j);
  bool failed = fclose(f) != 0 || !text;
  free(own);
  mb_model_free(model);
  if (failed) {
    free(text);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: metadata");
  }
  *out = text;
  return MB_STATUS_OK;
}

mb_status mb__tune_write_artifact(const mb_tune_artifact_args *a,
                                  mb_error *err) {
  const mb_tune_result *r = a->result;
  if (!r->found || r->winner < 0)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "--output %s: no configuration met the budget, so no "
                     "model is written",
                     a->out_path);
  const mb_tune_step *w = &r->steps[r->winner];
  mb_bench_config config = *a->config;
  config.keep_float = w->kept_float;
  config.n_keep_float = w->n_kept_float;
  char *json = NULL, line[512];
  void *bytes = NULL, *tagged = NULL;
  size_t size = 0, tagged_size = 0;
  mb_atomic_file af;
  mb_status status;
  if ((status = metadata_json(a, &json, err)) ||
      (status = mb__convert_model_bytes(a->model_path, w->conversion, &config,
                                        a->out_path, &bytes, &size, line,
                                        sizeof line, err)) ||
      (status = set_metadata(bytes, size, MB_TUNE_METADATA_KEY, json, &tagged,
                             &tagged_size, a->out_path, err)))
    goto done;
  if ((status = mb__atomic_file_open(&af, AT_FDCWD, a->out_path,
                                     MB_FILE_MODE_UMASK, "tuned model", err)))
    goto done;
  if (fwrite(tagged, 1, tagged_size, af.f) != tagged_size) {
    mb__atomic_file_abort(&af);
    status = mb__error(err, MB_STATUS_IO, "%s: write failed", a->out_path);
    goto done;
  }
  status = mb__atomic_file_commit(&af, false, err);
done:
  free(json);
  free(bytes);
  free(tagged);
  return status;
}

/* ---- reading ---- */

void mb__tune_recorded_free(mb_tune_recorded *rec) {
  if (!rec)
    return;
  for (int k = 0; k < rec->n_keep_float; k++)
    free(rec->keep_float[k]);
  free(rec->keep_float);
  memset(rec, 0, sizeof *rec);
}

static mb_status parse_recorded(const char *path, const char *text, size_t size,
                                mb_tune_recorded *rec, mb_error *err) {
  char source[1100];
  mb_json_doc *doc = NULL;
  snprintf(source, sizeof source, "%s: metadata %s", path,
           MB_TUNE_METADATA_KEY);
  mb_status status = mb__json_parse(text, size, source, &doc, err);
  if (status)
    return status;
  const mb_json_value *conv = mb__json_find(&doc->root, "bench_conversion");
  const mb_json_value *threads = mb__json_find(&doc->root, "threads");
  const mb_json_value *keep = mb__json_find(&doc->root, "kept_float");
  const mb_json_value *batch = mb__json_find(&doc->root, "batch_size");
  if (!conv || conv->type != MB_JSON_STRING) {
    status = mb__json_value_error(err, source, conv ? conv : &doc->root,
                                  "expected \"bench_conversion\", a string");
    goto done;
  }
  if (!threads || !threads->is_integer || threads->integer < 1 ||
      threads->integer > 1024) {
    status = mb__json_value_error(err, source, threads ? threads : &doc->root,
                                  "expected \"threads\", an integer in "
                                  "1..1024");
    goto done;
  }
  if (batch && (!batch->is_integer || batch->integer < 1 ||
                batch->integer > MB_TUNE_MAX_BATCH)) {
    status = mb__json_value_error(err, source, batch,
                                  "\"batch_size\": expected an integer in "
                                  "1..%d",
                                  MB_TUNE_MAX_BATCH);
    goto done;
  }
  if (keep && keep->type != MB_JSON_ARRAY) {
    status = mb__json_value_error(err, source, keep,
                                  "\"kept_float\": expected an array");
    goto done;
  }
  snprintf(rec->conversion, sizeof rec->conversion, "%s", conv->string);
  rec->threads = (int)threads->integer;
  rec->batch_size = batch ? (int)batch->integer : 0;
  size_t n = keep ? keep->count : 0;
  if (n && !(rec->keep_float = calloc(n, sizeof *rec->keep_float))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s", source);
    goto done;
  }
  for (size_t k = 0; k < n; k++) {
    if (keep->items[k].type != MB_JSON_STRING) {
      status = mb__json_value_error(err, source, &keep->items[k],
                                    "\"kept_float\": expected node names");
      goto done;
    }
    if (!(rec->keep_float[rec->n_keep_float] = strdup(keep->items[k].string))) {
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "%s", source);
      goto done;
    }
    rec->n_keep_float++;
  }
  rec->found = true;
done:
  if (status)
    mb__tune_recorded_free(rec);
  mb__json_doc_free(doc);
  return status;
}

mb_status mb__tune_recorded_read(const char *path, mb_tune_recorded *rec,
                                 mb_error *err) {
  memset(rec, 0, sizeof *rec);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0)
    return mb__error(err, MB_STATUS_IO, "%s: %s", path, strerror(errno));
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
    close(fd);
    return MB_STATUS_OK; /* a folder or a manifest's device: not ONNX */
  }
  /* Mapped, not read: the walk touches only the top-level field headers,
   * the graph's pages are skipped by length. */
  size_t n = (size_t)st.st_size;
  void *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED)
    return mb__error(err, MB_STATUS_IO, "%s: %s", path, strerror(errno));
  const uint8_t *value = NULL;
  size_t value_size = 0;
  mb_status status = MB_STATUS_OK;
  /* A file that is not a protobuf (TorchScript, a manifest) has none. */
  if (walk_model(p, n, MB_TUNE_METADATA_KEY, NULL, NULL, &value, &value_size) &&
      value)
    status = parse_recorded(path, (const char *)value, value_size, rec, err);
  munmap(p, n);
  return status;
}
