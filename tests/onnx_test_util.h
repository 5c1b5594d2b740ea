/* Helpers the ONNX I/O tests share (test_onnx_io, test_onnx_testdata):
 * a scratch folder removed at exit, whole-file reads and writes, and a
 * field-by-field comparison of two models that says where they differ.
 * Header-only, like test.h. */
#ifndef MB_TEST_ONNX_UTIL_H
#define MB_TEST_ONNX_UTIL_H

#include "core/ir.h"
#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#define TESTDATA "/usr/share/libonnx-testdata/data"
#define CONV_MODEL TESTDATA "/node/test_conv_with_strides_padding/model.onnx"

/* ---- scratch folder ---- */

static char g_tmpdir[64];

static inline void remove_tmpdir(void);

/* A path in this run's scratch folder (created on first use, removed at
 * exit). Returns one of 8 rotating static buffers. */
static inline const char *tmp_path(const char *name) {
  static char paths[8][512];
  static int next;
  if (!g_tmpdir[0]) {
    snprintf(g_tmpdir, sizeof g_tmpdir, "/tmp/mb-onnx-io-XXXXXX");
    if (!mkdtemp(g_tmpdir)) {
      perror("mkdtemp");
      exit(1);
    }
    atexit(remove_tmpdir);
  }
  char *p = paths[next++ % 8];
  snprintf(p, 512, "%s/%s", g_tmpdir, name);
  return p;
}

static inline void remove_tmpdir(void) {
  DIR *d;
  struct dirent *e;
  char path[600];
  if (!g_tmpdir[0] || !(d = opendir(g_tmpdir)))
    return;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(path, sizeof path, "%s/%s", g_tmpdir, e->d_name);
      unlink(path);
    }
  closedir(d);
  rmdir(g_tmpdir);
}

static inline int write_bytes(const char *path, const void *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  size_t n = size ? fwrite(data, 1, size, f) : 0;
  return fclose(f) == 0 && n == size ? 0 : -1;
}

static inline void *read_bytes(const char *path, size_t *size_out) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *data = malloc(size > 0 ? (size_t)size : 1);
  if (data && size > 0 && fread(data, 1, (size_t)size, f) != (size_t)size) {
    free(data);
    data = NULL;
  }
  fclose(f);
  *size_out = (size_t)size;
  return data;
}

/* ---- comparing two models field by field ---- */

static char g_diff[1024];

#define DIFFER(...) (snprintf(g_diff, sizeof g_diff, __VA_ARGS__), 1)

static inline bool str_eq(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : "") == 0;
}

static inline int tensor_differs(const mb_tensor *a, const mb_tensor *b,
                                 const char *what) {
  if (!a || !b)
    return a != b ? DIFFER("%s: tensor missing on one side", what) : 0;
  if (a->dtype != b->dtype || a->rank != b->rank || a->numel != b->numel ||
      a->nbytes != b->nbytes)
    return DIFFER("%s: tensor type/shape differ", what);
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i])
      return DIFFER("%s: dim %d differs", what, i);
  if (a->nbytes && memcmp(a->data, b->data, a->nbytes) != 0)
    return DIFFER("%s: tensor data differs", what);
  /* Builders may leave initializer tensors unnamed; the value is named. */
  if (a->name && b->name && strcmp(a->name, b->name) != 0)
    return DIFFER("%s: tensor name '%s' vs '%s'", what, a->name, b->name);
  return 0;
}

static inline int graph_differs(const mb_graph *a, const mb_graph *b,
                                const char *where);

static inline int attr_differs(const mb_attr *a, const mb_attr *b,
                               const char *where) {
  char what[600];
  snprintf(what, sizeof what, "%.400s attr '%.100s'", where, a->name);
  if (!str_eq(a->name, b->name) || a->type != b->type)
    return DIFFER("%s: name/type differ (%s %d vs %s %d)", what, a->name,
                  a->type, b->name, b->type);
  if (!str_eq(a->ref_attr_name, b->ref_attr_name))
    return DIFFER("%s: ref_attr_name differs", what);
  switch (a->type) {
  case MB_ATTR_FLOAT:
    return memcmp(&a->f, &b->f, sizeof a->f) ? DIFFER("%s: f", what) : 0;
  case MB_ATTR_INT:
    return a->i != b->i ? DIFFER("%s: i", what) : 0;
  case MB_ATTR_STRING:
  case MB_ATTR_TYPE_PROTO:
    return a->s_len != b->s_len || memcmp(a->s, b->s, a->s_len)
               ? DIFFER("%s: s", what)
               : 0;
  case MB_ATTR_TENSOR:
  case MB_ATTR_SPARSE_TENSOR:
    return tensor_differs(a->t, b->t, what);
  case MB_ATTR_GRAPH:
    return graph_differs(a->g, b->g, what);
  default:
    break;
  }
  if (a->n != b->n)
    return DIFFER("%s: %lld vs %lld entries", what, (long long)a->n,
                  (long long)b->n);
  for (int64_t k = 0; k < a->n; k++) {
    int bad = 0;
    if (a->type == MB_ATTR_FLOATS)
      bad = memcmp(&a->floats[k], &b->floats[k], sizeof(float)) != 0;
    else if (a->type == MB_ATTR_INTS)
      bad = a->ints[k] != b->ints[k];
    else if (a->type == MB_ATTR_STRINGS)
      bad = !str_eq(a->strings[k], b->strings[k]);
    else if (a->type == MB_ATTR_TENSORS)
      bad = tensor_differs(a->tensors[k], b->tensors[k], what);
    else if (a->type == MB_ATTR_GRAPHS)
      bad = graph_differs(a->graphs[k], b->graphs[k], what);
    if (bad)
      return g_diff[0] ? 1 : DIFFER("%s: entry %lld", what, (long long)k);
  }
  return 0;
}

static inline int value_differs(const mb_value *a, const mb_value *b,
                                const char *where) {
  if (a->kind != b->kind || a->dtype != b->dtype || a->rank != b->rank ||
      a->is_output != b->is_output)
    return DIFFER("%s value '%s': kind %d/%d dtype %d/%d rank %d/%d out %d/%d",
                  where, a->name, a->kind, b->kind, a->dtype, b->dtype, a->rank,
                  b->rank, a->is_output, b->is_output);
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d].value != b->dims[d].value ||
        !str_eq(a->dims[d].param, b->dims[d].param))
      return DIFFER("%s value '%s': dim %d differs", where, a->name, d);
  if (!str_eq(a->doc, b->doc))
    return DIFFER("%s value '%s': doc differs", where, a->name);
  return tensor_differs(a->initializer, b->initializer, a->name);
}

static inline int graph_differs(const mb_graph *a, const mb_graph *b,
                                const char *where) {
  char what[700];
  g_diff[0] = '\0';
  if (!a || !b)
    return a != b ? DIFFER("%s: graph missing on one side", where) : 0;
  if (!str_eq(a->name, b->name) || !str_eq(a->doc, b->doc))
    return DIFFER("%s: graph name/doc differ", where);
  if (a->n_values != b->n_values || a->n_nodes != b->n_nodes ||
      a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs)
    return DIFFER("%s: counts differ: values %d/%d nodes %d/%d inputs %d/%d "
                  "outputs %d/%d",
                  where, a->n_values, b->n_values, a->n_nodes, b->n_nodes,
                  a->n_inputs, b->n_inputs, a->n_outputs, b->n_outputs);
  for (int i = 0; i < a->n_values; i++) {
    int j = mb__graph_find_value(b, a->values[i].name);
    if (j < 0)
      return DIFFER("%s: value '%s' missing", where, a->values[i].name);
    if (value_differs(&a->values[i], &b->values[j], where))
      return 1;
  }
  for (int i = 0; i < a->n_inputs; i++)
    if (!str_eq(a->values[a->inputs[i]].name, b->values[b->inputs[i]].name))
      return DIFFER("%s: input %d differs", where, i);
  for (int i = 0; i < a->n_outputs; i++)
    if (!str_eq(a->values[a->outputs[i]].name, b->values[b->outputs[i]].name))
      return DIFFER("%s: output %d differs", where, i);
  for (int i = 0; i < a->n_nodes; i++) {
    const mb_node *na = &a->nodes[i], *nb = &b->nodes[i];
    snprintf(what, sizeof what, "%.400s node %d (%.100s)", where, i,
             na->op_type);
    if (!str_eq(na->op_type, nb->op_type) || !str_eq(na->domain, nb->domain) ||
        !str_eq(na->name, nb->name) || !str_eq(na->doc, nb->doc))
      return DIFFER("%s: op/domain/name/doc differ", what);
    if (na->n_inputs != nb->n_inputs || na->n_outputs != nb->n_outputs ||
        na->n_attrs != nb->n_attrs)
      return DIFFER("%s: arity differs", what);
    for (int k = 0; k < na->n_inputs; k++)
      if ((na->inputs[k] < 0) != (nb->inputs[k] < 0) ||
          (na->inputs[k] >= 0 && !str_eq(a->values[na->inputs[k]].name,
                                         b->values[nb->inputs[k]].name)))
        return DIFFER("%s: input %d differs", what, k);
    for (int k = 0; k < na->n_outputs; k++)
      if ((na->outputs[k] < 0) != (nb->outputs[k] < 0) ||
          (na->outputs[k] >= 0 && !str_eq(a->values[na->outputs[k]].name,
                                          b->values[nb->outputs[k]].name)))
        return DIFFER("%s: output %d differs", what, k);
    for (int k = 0; k < na->n_attrs; k++)
      if (attr_differs(&na->attrs[k], &nb->attrs[k], what))
        return 1;
  }
  return 0;
}

static inline int model_differs(const mb_model *a, const mb_model *b) {
  g_diff[0] = '\0';
  if (a->ir_version != b->ir_version || a->model_version != b->model_version)
    return DIFFER("ir/model version differ");
  if (!str_eq(a->producer_name, b->producer_name) ||
      !str_eq(a->producer_version, b->producer_version) ||
      !str_eq(a->domain, b->domain) || !str_eq(a->doc, b->doc))
    return DIFFER("producer/domain/doc differ");
  if (a->n_opsets != b->n_opsets)
    return DIFFER("opset count differs");
  for (int i = 0; i < a->n_opsets; i++)
    if (mb__model_opset(b, a->opsets[i].domain) != a->opsets[i].version)
      return DIFFER("opset '%s' differs", a->opsets[i].domain);
  if (a->n_metadata != b->n_metadata)
    return DIFFER("metadata count differs");
  for (int i = 0; i < a->n_metadata; i++)
    if (!str_eq(a->metadata[i].key, b->metadata[i].key) ||
        !str_eq(a->metadata[i].value, b->metadata[i].value))
      return DIFFER("metadata %d differs", i);
  return graph_differs(a->graph, b->graph, "main graph");
}

#endif
