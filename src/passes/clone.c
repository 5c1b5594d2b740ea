/* Model copies: a deep copy of the IR (so passes can rewrite a private
 * model) and serialisation to bytes (for runtimes that prepare from bytes).
 */
#include "passes/passes.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct cloner {
  mb_model *dst;
  mb_error *err;
  bool failed;
} cloner;

static const char *dup_str(cloner *c, const char *s) {
  if (!s)
    return NULL;
  char *copy = mb__arena_strdup(c->dst->arena, s);
  if (!copy)
    c->failed = true;
  return copy;
}

static void *dup_bytes(cloner *c, const void *src, size_t bytes) {
  if (!src)
    return NULL;
  void *copy = mb__arena_alloc(c->dst->arena, bytes ? bytes : 1);
  if (!copy) {
    c->failed = true;
    return NULL;
  }
  if (bytes)
    memcpy(copy, src, bytes);
  return copy;
}

static mb_tensor *dup_tensor(cloner *c, const mb_tensor *t) {
  mb_tensor *copy = NULL;
  if (!t)
    return NULL;
  if (mb_tensor_clone(t, &copy, NULL)) {
    c->failed = true;
    return NULL;
  }
  return copy;
}

static mb_graph *clone_graph(cloner *c, const mb_graph *src, mb_graph *parent);

static void clone_attr(cloner *c, const mb_attr *src, mb_attr *dst,
                       mb_graph *owner) {
  *dst = *src;
  dst->name = dup_str(c, src->name);
  dst->ref_attr_name = dup_str(c, src->ref_attr_name);
  /* Strings may hold NULs (bytes and TypeProtos): copy s_len + 1. */
  dst->s = dup_bytes(c, src->s, src->s ? src->s_len + 1 : 0);
  dst->t = dup_tensor(c, src->t);
  dst->g = src->g ? clone_graph(c, src->g, owner) : NULL;
  if (src->g && !dst->g)
    c->failed = true;
  dst->floats = dup_bytes(c, src->floats, sizeof(float) * (size_t)src->n);
  dst->ints = dup_bytes(c, src->ints, sizeof(int64_t) * (size_t)src->n);
  dst->strings = NULL;
  dst->tensors = NULL;
  dst->graphs = NULL;
  if (src->strings) {
    dst->strings =
        mb__arena_alloc(c->dst->arena, sizeof(char *) * (size_t)(src->n + 1));
    for (int64_t k = 0; dst->strings && k < src->n; k++)
      dst->strings[k] = dup_str(c, src->strings[k]);
    if (!dst->strings) {
      c->failed = true;
      dst->n = 0;
    }
  }
  if (src->tensors) {
    dst->tensors = mb__arena_alloc(c->dst->arena,
                                   sizeof(mb_tensor *) * (size_t)(src->n + 1));
    for (int64_t k = 0; dst->tensors && k < src->n; k++)
      if (!(dst->tensors[k] = dup_tensor(c, src->tensors[k])))
        c->failed = true;
    if (!dst->tensors) {
      c->failed = true;
      dst->n = 0;
    }
  }
  if (src->graphs) {
    dst->graphs = mb__arena_alloc(c->dst->arena,
                                  sizeof(mb_graph *) * (size_t)(src->n + 1));
    for (int64_t k = 0; dst->graphs && k < src->n; k++)
      if (!(dst->graphs[k] = clone_graph(c, src->graphs[k], owner)))
        c->failed = true;
    if (!dst->graphs) {
      c->failed = true;
      dst->n = 0;
    }
  }
}

static int *dup_indices(const int *src, int n) {
  int *copy = malloc(sizeof(int) * (size_t)(n + 1));
  if (copy && n)
    memcpy(copy, src, sizeof(int) * (size_t)n);
  return copy;
}

static mb_graph *clone_graph(cloner *c, const mb_graph *src, mb_graph *parent) {
  mb_graph *g = mb__graph_create(c->dst, parent);
  if (!g) {
    c->failed = true;
    return NULL;
  }
  g->name = dup_str(c, src->name);
  g->doc = dup_str(c, src->doc);
  /* Values in the same order, so every index stays valid. */
  for (int i = 0; i < src->n_values && !c->failed; i++) {
    const mb_value *sv = &src->values[i];
    int idx = mb__graph_value(g, sv->name, c->err);
    if (idx != i) {
      c->failed = true;
      break;
    }
    mb_value *v = &g->values[idx];
    const char *name = v->name;
    *v = *sv;
    v->name = name;
    v->doc = dup_str(c, sv->doc);
    for (int d = 0; d < sv->rank && d < MB_MAX_RANK; d++)
      v->dims[d].param = dup_str(c, sv->dims[d].param);
    v->initializer = NULL;
    if (sv->initializer && !(v->initializer = dup_tensor(c, sv->initializer)))
      c->failed = true;
  }
  g->inputs = dup_indices(src->inputs, src->n_inputs);
  g->outputs = dup_indices(src->outputs, src->n_outputs);
  g->nodes = malloc(sizeof(mb_node) * (size_t)(src->n_nodes + 1));
  if (!g->inputs || !g->outputs || !g->nodes) {
    c->failed = true;
    mb__graph_free(g);
    return NULL;
  }
  g->n_inputs = src->n_inputs;
  g->n_outputs = src->n_outputs;
  g->cap_nodes = src->n_nodes + 1;
  for (int i = 0; i < src->n_nodes && !c->failed; i++) {
    const mb_node *sn = &src->nodes[i];
    mb_node *n = &g->nodes[i];
    memset(n, 0, sizeof *n);
    n->name = dup_str(c, sn->name);
    n->op_type = dup_str(c, sn->op_type);
    n->domain = dup_str(c, sn->domain);
    n->doc = dup_str(c, sn->doc);
    n->inputs = dup_bytes(c, sn->inputs, sizeof(int) * (size_t)sn->n_inputs);
    n->outputs = dup_bytes(c, sn->outputs, sizeof(int) * (size_t)sn->n_outputs);
    n->n_inputs = sn->n_inputs;
    n->n_outputs = sn->n_outputs;
    n->attrs = mb__arena_alloc(c->dst->arena,
                               sizeof(mb_attr) * (size_t)(sn->n_attrs + 1));
    if (!n->attrs) {
      c->failed = true;
      break;
    }
    /* Counted as they are filled, so a failure frees only what exists. */
    g->n_nodes = i + 1;
    for (int j = 0; j < sn->n_attrs; j++) {
      clone_attr(c, &sn->attrs[j], &n->attrs[j], g);
      n->n_attrs = j + 1;
    }
  }
  if (c->failed) {
    mb__graph_free(g);
    return NULL;
  }
  return g;
}

mb_status mb__model_clone(const mb_model *src, mb_model **model_out,
                          mb_error *err) {
  cloner c = {.err = err};
  mb_model *m = mb__model_create();
  if (!m)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot copy the model");
  c.dst = m;
  m->ir_version = src->ir_version;
  m->producer_name = dup_str(&c, src->producer_name);
  m->producer_version = dup_str(&c, src->producer_version);
  m->domain = dup_str(&c, src->domain);
  m->doc = dup_str(&c, src->doc);
  m->model_version = src->model_version;
  for (int i = 0; i < src->n_opsets && !c.failed; i++)
    if (mb__model_set_opset(m, src->opsets[i].domain, src->opsets[i].version,
                            NULL))
      c.failed = true;
  if (src->n_metadata) {
    m->metadata = mb__arena_alloc(m->arena, sizeof(mb_metadata_prop) *
                                                (size_t)src->n_metadata);
    for (int i = 0; m->metadata && i < src->n_metadata; i++) {
      m->metadata[i].key = dup_str(&c, src->metadata[i].key);
      m->metadata[i].value = dup_str(&c, src->metadata[i].value);
    }
    if (!m->metadata)
      c.failed = true;
    else
      m->n_metadata = src->n_metadata;
  }
  memcpy(m->sha256_hex, src->sha256_hex, sizeof m->sha256_hex);
  m->path = dup_str(&c, src->path);
  m->base_dir = dup_str(&c, src->base_dir);
  if (!c.failed) {
    mb_graph *g = clone_graph(&c, src->graph, NULL);
    if (g) {
      mb__graph_free(m->graph);
      m->graph = g;
    }
  }
  if (c.failed) {
    mb_model_free(m);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot copy the model");
  }
  *model_out = m;
  return MB_STATUS_OK;
}

/* ---- serialisation ---- */

mb_status mb__model_serialize(const mb_model *model, void **bytes_out,
                              size_t *size_out, mb_error *err) {
  const char *tmp = getenv("TMPDIR");
  char dir[4096], path[4200], data[4300];
  mb_status status;
  if (!tmp || !tmp[0])
    tmp = "/tmp";
  snprintf(dir, sizeof dir, "%s/mb-model-XXXXXX", tmp);
  if (!mkdtemp(dir))
    return mb__error(err, MB_STATUS_IO,
                     "cannot create a temporary folder in %s", tmp);
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  snprintf(data, sizeof data, "%s/model.onnx.data", dir);
  status = mb_model_save(model, path, NULL, err);
  if (!status && access(data, F_OK) == 0)
    status = mb__error(err, MB_STATUS_UNSUPPORTED,
                       "the model's tensors exceed the 2 GiB limit of an "
                       "in-memory ONNX model");
  if (!status)
    status = mb__read_file(path, bytes_out, size_out, err);
  unlink(path);
  unlink(data);
  rmdir(dir);
  return status;
}
