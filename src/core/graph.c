/* The graph IR: construction, name lookup, topological ordering, queries. */
#include "core/ir.h"

#include <stdlib.h>

/* ---- model ---- */

mb_model *mb__model_create(void) {
  mb_model *m = calloc(1, sizeof *m);
  if (!m)
    return NULL;
  m->arena = mb__arena_create();
  if (!m->arena)
    goto fail;
  m->graph = mb__graph_create(m, NULL);
  if (!m->graph)
    goto fail;
  m->ir_version = 8;
  m->producer_name = "";
  m->producer_version = "";
  m->domain = "";
  m->doc = "";
  return m;
fail:
  mb__arena_free(m->arena);
  free(m);
  return NULL;
}

static const char *normalize_domain(const char *domain) {
  if (!domain || strcmp(domain, "ai.onnx") == 0)
    return "";
  return domain;
}

mb_status mb__model_set_opset(mb_model *m, const char *domain, int64_t version,
                              mb_error *err) {
  domain = normalize_domain(domain);
  for (int i = 0; i < m->n_opsets; i++)
    if (strcmp(m->opsets[i].domain, domain) == 0) {
      m->opsets[i].version = version;
      return MB_STATUS_OK;
    }
  mb_opset *grown =
      mb__arena_alloc(m->arena, sizeof(mb_opset) * (size_t)(m->n_opsets + 1));
  if (!grown)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot add an opset");
  if (m->n_opsets)
    memcpy(grown, m->opsets, sizeof(mb_opset) * (size_t)m->n_opsets);
  grown[m->n_opsets].domain = mb__arena_strdup(m->arena, domain);
  grown[m->n_opsets].version = version;
  if (!grown[m->n_opsets].domain)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot add an opset");
  m->opsets = grown;
  m->n_opsets++;
  return MB_STATUS_OK;
}

int64_t mb__model_opset(const mb_model *m, const char *domain) {
  domain = normalize_domain(domain);
  for (int i = 0; i < m->n_opsets; i++)
    if (strcmp(m->opsets[i].domain, domain) == 0)
      return m->opsets[i].version;
  return 0;
}

const char *mb_model_sha256(const mb_model *model) {
  return model->sha256_hex;
}

/* ---- graph ---- */

mb_graph *mb__graph_create(mb_model *m, mb_graph *parent) {
  mb_graph *g = calloc(1, sizeof *g);
  if (!g)
    return NULL;
  g->model = m;
  g->parent = parent;
  g->name = "";
  g->doc = "";
  return g;
}

static void attr_release(mb_attr *a) {
  mb_tensor_free(a->t);
  mb__graph_free(a->g);
  if (a->type == MB_ATTR_TENSORS || a->type == MB_ATTR_SPARSE_TENSORS)
    for (int64_t i = 0; i < a->n; i++)
      mb_tensor_free(a->tensors[i]);
  if (a->type == MB_ATTR_GRAPHS)
    for (int64_t i = 0; i < a->n; i++)
      mb__graph_free(a->graphs[i]);
}

void mb__graph_free(mb_graph *g) {
  if (!g)
    return;
  for (int i = 0; i < g->n_values; i++)
    mb_tensor_free(g->values[i].initializer);
  for (int i = 0; i < g->n_nodes; i++)
    for (int j = 0; j < g->nodes[i].n_attrs; j++)
      attr_release(&g->nodes[i].attrs[j]);
  free(g->values);
  free(g->nodes);
  free(g->inputs);
  free(g->outputs);
  free(g->hash);
  free(g);
}

static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static bool hash_insert(int *table, int cap, const mb_value *values,
                        int index) {
  uint64_t h = hash_name(values[index].name);
  for (int probe = 0; probe < cap; probe++) {
    int slot = (int)((h + (uint64_t)probe) & (uint64_t)(cap - 1));
    if (table[slot] < 0) {
      table[slot] = index;
      return true;
    }
  }
  return false;
}

static bool hash_grow(mb_graph *g) {
  int cap = g->hash_cap ? g->hash_cap * 2 : 64;
  int *table = malloc(sizeof(int) * (size_t)cap);
  if (!table)
    return false;
  for (int i = 0; i < cap; i++)
    table[i] = -1;
  for (int i = 0; i < g->n_values; i++)
    hash_insert(table, cap, g->values, i);
  free(g->hash);
  g->hash = table;
  g->hash_cap = cap;
  return true;
}

int mb__graph_find_value(const mb_graph *g, const char *name) {
  if (!name || !name[0] || !g->hash_cap)
    return -1;
  uint64_t h = hash_name(name);
  for (int probe = 0; probe < g->hash_cap; probe++) {
    int slot = (int)((h + (uint64_t)probe) & (uint64_t)(g->hash_cap - 1));
    int idx = g->hash[slot];
    if (idx < 0)
      return -1;
    if (strcmp(g->values[idx].name, name) == 0)
      return idx;
  }
  return -1;
}

int mb__graph_value(mb_graph *g, const char *name, mb_error *err) {
  int idx = mb__graph_find_value(g, name);
  if (idx >= 0)
    return idx;
  if (!name || !name[0]) {
    mb__error(err, MB_STATUS_INVALID_ARGUMENT, "value name is empty");
    return -1;
  }
  if (g->n_values == g->cap_values) {
    int cap = g->cap_values ? g->cap_values * 2 : 32;
    mb_value *grown = realloc(g->values, sizeof(mb_value) * (size_t)cap);
    if (!grown)
      goto oom;
    g->values = grown;
    g->cap_values = cap;
  }
  if ((g->n_values + 1) * 2 > g->hash_cap && !hash_grow(g))
    goto oom;
  mb_value *v = &g->values[g->n_values];
  memset(v, 0, sizeof *v);
  v->name = mb__arena_strdup(g->model->arena, name);
  if (!v->name)
    goto oom;
  v->kind = MB_VALUE_INTERMEDIATE;
  v->rank = -1;
  v->producer = -1;
  idx = g->n_values++;
  hash_insert(g->hash, g->hash_cap, g->values, idx);
  return idx;
oom:
  mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot add value '%s'", name);
  return -1;
}

int mb__graph_add_initializer(mb_graph *g, const char *name, mb_tensor *tensor,
                              mb_error *err) {
  int idx = mb__graph_value(g, name, err);
  if (idx < 0) {
    mb_tensor_free(tensor);
    return -1;
  }
  mb_value *v = &g->values[idx];
  if (v->initializer) {
    mb_tensor_free(tensor);
    mb__error(err, MB_STATUS_PARSE, "initializer '%s' is defined twice", name);
    return -1;
  }
  v->kind = MB_VALUE_INITIALIZER;
  v->initializer = tensor;
  v->dtype = tensor->dtype;
  v->rank = tensor->rank;
  for (int i = 0; i < tensor->rank; i++) {
    v->dims[i].value = tensor->dims[i];
    v->dims[i].param = NULL;
  }
  /* An input that also has an initializer is a constant with a default,
   * not something the user feeds. */
  for (int i = 0; i < g->n_inputs; i++)
    if (g->inputs[i] == idx) {
      memmove(&g->inputs[i], &g->inputs[i + 1],
              sizeof(int) * (size_t)(g->n_inputs - i - 1));
      g->n_inputs--;
      break;
    }
  return idx;
}

static void set_value_type(mb_graph *g, mb_value *v, mb_dtype dtype, int rank,
                           const int64_t *dims, const char *const *params) {
  v->dtype = dtype;
  v->rank = rank;
  for (int i = 0; i < rank && i < MB_MAX_RANK; i++) {
    v->dims[i].value = dims ? dims[i] : -1;
    v->dims[i].param = params && params[i]
                           ? mb__arena_strdup(g->model->arena, params[i])
                           : NULL;
  }
}

static int append_index(int **array, int *count, int value) {
  int *grown = realloc(*array, sizeof(int) * (size_t)(*count + 1));
  if (!grown)
    return -1;
  grown[(*count)++] = value;
  *array = grown;
  return 0;
}

static int add_io(mb_graph *g, const char *name, mb_dtype dtype, int rank,
                  const int64_t *dims, const char *const *params, bool input,
                  mb_error *err) {
  if (rank > MB_MAX_RANK) {
    mb__error(err, MB_STATUS_UNSUPPORTED,
              "graph %s '%s' has rank %d; at most %d is supported",
              input ? "input" : "output", name ? name : "", rank, MB_MAX_RANK);
    return -1;
  }
  int idx = mb__graph_value(g, name, err);
  if (idx < 0)
    return -1;
  mb_value *v = &g->values[idx];
  if (input && v->initializer) /* declared after its initializer: a constant */
    return idx;
  if (!v->initializer &&
      (dtype != MB_DTYPE_UNDEFINED || rank >= 0 || v->rank < 0))
    set_value_type(g, v, dtype, rank, dims, params);
  if (input) {
    v->kind = MB_VALUE_INPUT;
    if (append_index(&g->inputs, &g->n_inputs, idx))
      goto oom;
  } else {
    v->is_output = 1;
    if (append_index(&g->outputs, &g->n_outputs, idx))
      goto oom;
  }
  return idx;
oom:
  mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot add graph input/output");
  return -1;
}

int mb__graph_add_input(mb_graph *g, const char *name, mb_dtype dtype, int rank,
                        const int64_t *dims, const char *const *params,
                        mb_error *err) {
  return add_io(g, name, dtype, rank, dims, params, true, err);
}

int mb__graph_add_output(mb_graph *g, const char *name, mb_dtype dtype,
                         int rank, const int64_t *dims,
                         const char *const *params, mb_error *err) {
  return add_io(g, name, dtype, rank, dims, params, false, err);
}

int mb__graph_add_node(mb_graph *g, const char *op_type, const char *domain,
                       const char *name, int n_inputs,
                       const char *const *inputs, int n_outputs,
                       const char *const *outputs, mb_error *err) {
  mb_arena *arena = g->model->arena;
  mb_node node;
  memset(&node, 0, sizeof node);
  if (!op_type || !op_type[0]) {
    mb__error(err, MB_STATUS_PARSE, "node '%s' has an empty op_type",
              name ? name : "");
    return -1;
  }
  node.op_type = mb__arena_strdup(arena, op_type);
  node.domain = mb__arena_strdup(arena, normalize_domain(domain));
  node.name = mb__arena_strdup(arena, name ? name : "");
  node.doc = "";
  node.n_inputs = n_inputs;
  node.n_outputs = n_outputs;
  node.inputs = mb__arena_alloc(arena, sizeof(int) * (size_t)(n_inputs + 1));
  node.outputs = mb__arena_alloc(arena, sizeof(int) * (size_t)(n_outputs + 1));
  if (!node.op_type || !node.domain || !node.name || !node.inputs ||
      !node.outputs)
    goto oom;
  for (int i = 0; i < n_inputs; i++) {
    node.inputs[i] = -1;
    if (inputs[i] && inputs[i][0] &&
        (node.inputs[i] = mb__graph_value(g, inputs[i], err)) < 0)
      return -1;
  }
  for (int i = 0; i < n_outputs; i++) {
    node.outputs[i] = -1;
    if (outputs[i] && outputs[i][0] &&
        (node.outputs[i] = mb__graph_value(g, outputs[i], err)) < 0)
      return -1;
  }
  if (g->n_nodes == g->cap_nodes) {
    int cap = g->cap_nodes ? g->cap_nodes * 2 : 32;
    mb_node *grown = realloc(g->nodes, sizeof(mb_node) * (size_t)cap);
    if (!grown)
      goto oom;
    g->nodes = grown;
    g->cap_nodes = cap;
  }
  g->nodes[g->n_nodes] = node;
  return g->n_nodes++;
oom:
  mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot add node '%s'",
            name ? name : op_type);
  return -1;
}

mb_status mb__node_add_attr(mb_graph *g, int node_index, const mb_attr *attr,
                            mb_error *err) {
  mb_node *n = &g->nodes[node_index];
  mb_attr *grown = mb__arena_alloc(g->model->arena,
                                   sizeof(mb_attr) * (size_t)(n->n_attrs + 1));
  if (!grown)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot add attribute");
  if (n->n_attrs)
    memcpy(grown, n->attrs, sizeof(mb_attr) * (size_t)n->n_attrs);
  grown[n->n_attrs] = *attr;
  n->attrs = grown;
  n->n_attrs++;
  return MB_STATUS_OK;
}

static mb_status set_attr(mb_graph *g, int node_index, mb_attr *a,
                          const char *name, mb_error *err) {
  a->name = mb__arena_strdup(g->model->arena, name);
  if (!a->name)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot add attribute");
  return mb__node_add_attr(g, node_index, a, err);
}

mb_status mb__node_set_int(mb_graph *g, int node_index, const char *name,
                           int64_t v, mb_error *err) {
  mb_attr a = {.type = MB_ATTR_INT, .i = v};
  return set_attr(g, node_index, &a, name, err);
}

mb_status mb__node_set_float(mb_graph *g, int node_index, const char *name,
                             float v, mb_error *err) {
  mb_attr a = {.type = MB_ATTR_FLOAT, .f = v};
  return set_attr(g, node_index, &a, name, err);
}

mb_status mb__node_set_string(mb_graph *g, int node_index, const char *name,
                              const char *v, mb_error *err) {
  mb_attr a = {.type = MB_ATTR_STRING};
  a.s = mb__arena_strdup(g->model->arena, v);
  a.s_len = v ? strlen(v) : 0;
  if (!a.s)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot add attribute");
  return set_attr(g, node_index, &a, name, err);
}

mb_status mb__node_set_ints(mb_graph *g, int node_index, const char *name,
                            int n, const int64_t *v, mb_error *err) {
  mb_attr a = {.type = MB_ATTR_INTS, .n = n};
  a.ints = mb__arena_alloc(g->model->arena, sizeof(int64_t) * (size_t)n);
  if (!a.ints)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot add attribute");
  if (n)
    memcpy(a.ints, v, sizeof(int64_t) * (size_t)n);
  return set_attr(g, node_index, &a, name, err);
}

mb_status mb__node_set_floats(mb_graph *g, int node_index, const char *name,
                              int n, const float *v, mb_error *err) {
  mb_attr a = {.type = MB_ATTR_FLOATS, .n = n};
  a.floats = mb__arena_alloc(g->model->arena, sizeof(float) * (size_t)n);
  if (!a.floats)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot add attribute");
  if (n)
    memcpy(a.floats, v, sizeof(float) * (size_t)n);
  return set_attr(g, node_index, &a, name, err);
}

mb_status mb__node_set_tensor(mb_graph *g, int node_index, const char *name,
                              mb_tensor *tensor, mb_error *err) {
  mb_attr a = {.type = MB_ATTR_TENSOR, .t = tensor};
  mb_status status = set_attr(g, node_index, &a, name, err);
  if (status)
    mb_tensor_free(tensor);
  return status;
}

/* ---- finalisation ---- */

/* True when `name` is visible from an enclosing graph. */
static bool outer_scope_has(const mb_graph *g, const char *name) {
  for (const mb_graph *p = g->parent; p; p = p->parent) {
    int idx = mb__graph_find_value(p, name);
    if (idx >= 0 && (p->values[idx].producer >= 0 ||
                     p->values[idx].kind != MB_VALUE_INTERMEDIATE))
      return true;
  }
  return false;
}

static mb_status finalize_subgraphs(mb_graph *g, mb_error *err) {
  for (int i = 0; i < g->n_nodes; i++) {
    mb_node *n = &g->nodes[i];
    for (int j = 0; j < n->n_attrs; j++) {
      mb_attr *a = &n->attrs[j];
      mb_status status = MB_STATUS_OK;
      if (a->type == MB_ATTR_GRAPH && a->g)
        status = mb__graph_finalize(a->g, err);
      for (int64_t k = 0; !status && a->type == MB_ATTR_GRAPHS && k < a->n; k++)
        status = mb__graph_finalize(a->graphs[k], err);
      if (status) {
        char label[160];
        return mb__error_prefix(err, status, "%s, subgraph attribute '%s'",
                                mb__node_label(n, label, sizeof label),
                                a->name);
      }
    }
  }
  return MB_STATUS_OK;
}

/* Appends to deps the producers (in g) of every value a subgraph reads from
 * an enclosing scope, recursing into nested subgraphs: a node with a
 * subgraph must run after whatever its body reads. */
static mb_status collect_outer_deps(const mb_graph *g, const mb_graph *sub,
                                    int **deps, int *n_deps, int *cap_deps) {
  for (int i = 0; i < sub->n_nodes; i++) {
    const mb_node *n = &sub->nodes[i];
    for (int j = 0; j < n->n_inputs; j++) {
      int v = n->inputs[j];
      if (v < 0)
        continue;
      int outer = mb__graph_find_value(g, sub->values[v].name);
      if (outer < 0 || g->values[outer].producer < 0)
        continue;
      if (*n_deps == *cap_deps) {
        int cap = *cap_deps ? *cap_deps * 2 : 16;
        int *grown = realloc(*deps, sizeof(int) * (size_t)cap);
        if (!grown)
          return MB_STATUS_OUT_OF_MEMORY;
        *deps = grown;
        *cap_deps = cap;
      }
      (*deps)[(*n_deps)++] = g->values[outer].producer;
    }
    for (int j = 0; j < n->n_attrs; j++) {
      const mb_attr *a = &n->attrs[j];
      mb_status status = MB_STATUS_OK;
      if (a->type == MB_ATTR_GRAPH && a->g)
        status = collect_outer_deps(g, a->g, deps, n_deps, cap_deps);
      for (int64_t k = 0; !status && a->type == MB_ATTR_GRAPHS && k < a->n; k++)
        status = collect_outer_deps(g, a->graphs[k], deps, n_deps, cap_deps);
      if (status)
        return status;
    }
  }
  return MB_STATUS_OK;
}

/* Dependencies of node i: producers of its inputs and of the outer-scope
 * values its subgraphs read. */
static mb_status node_deps(const mb_graph *g, int i, int **deps, int *n_deps,
                           int *cap_deps) {
  const mb_node *n = &g->nodes[i];
  *n_deps = 0;
  if (*cap_deps < n->n_inputs + 1) {
    int *grown = realloc(*deps, sizeof(int) * (size_t)(n->n_inputs + 1));
    if (!grown)
      return MB_STATUS_OUT_OF_MEMORY;
    *deps = grown;
    *cap_deps = n->n_inputs + 1;
  }
  for (int j = 0; j < n->n_inputs; j++)
    if (n->inputs[j] >= 0 && g->values[n->inputs[j]].producer >= 0)
      (*deps)[(*n_deps)++] = g->values[n->inputs[j]].producer;
  for (int j = 0; j < n->n_attrs; j++) {
    const mb_attr *a = &n->attrs[j];
    mb_status status = MB_STATUS_OK;
    if (a->type == MB_ATTR_GRAPH && a->g)
      status = collect_outer_deps(g, a->g, deps, n_deps, cap_deps);
    for (int64_t k = 0; !status && a->type == MB_ATTR_GRAPHS && k < a->n; k++)
      status = collect_outer_deps(g, a->graphs[k], deps, n_deps, cap_deps);
    if (status)
      return status;
  }
  return MB_STATUS_OK;
}

mb_status mb__graph_finalize(mb_graph *g, mb_error *err) {
  int n = g->n_nodes;
  int *order = NULL, *state = NULL, *dep_start = NULL, *dep_list = NULL;
  int *deps = NULL, n_deps = 0, cap_deps = 0;
  int *stack_node = NULL, *stack_next = NULL;
  mb_node *sorted = NULL;
  mb_status status = MB_STATUS_OK;
  char label[160];

  for (int v = 0; v < g->n_values; v++)
    g->values[v].producer = -1;
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < g->nodes[i].n_outputs; j++) {
      int v = g->nodes[i].outputs[j];
      if (v < 0)
        continue;
      if (g->values[v].producer >= 0)
        return mb__error(err, MB_STATUS_PARSE,
                         "%s: output '%s' is also produced by another node",
                         mb__node_label(&g->nodes[i], label, sizeof label),
                         g->values[v].name);
      if (g->values[v].kind != MB_VALUE_INTERMEDIATE)
        return mb__error(err, MB_STATUS_PARSE,
                         "%s: output '%s' overwrites a graph input or "
                         "initializer",
                         mb__node_label(&g->nodes[i], label, sizeof label),
                         g->values[v].name);
      g->values[v].producer = i;
    }
  }
  /* Every input must come from somewhere. */
  for (int i = 0; i < n; i++) {
    const mb_node *node = &g->nodes[i];
    for (int j = 0; j < node->n_inputs; j++) {
      int v = node->inputs[j];
      if (v < 0)
        continue;
      const mb_value *val = &g->values[v];
      if (val->producer < 0 && val->kind == MB_VALUE_INTERMEDIATE &&
          !outer_scope_has(g, val->name))
        return mb__error(err, MB_STATUS_PARSE,
                         "%s: input '%s' is never produced (not a graph "
                         "input, initializer or output of another node)",
                         mb__node_label(node, label, sizeof label), val->name);
    }
  }
  for (int i = 0; i < g->n_outputs; i++) {
    const mb_value *val = &g->values[g->outputs[i]];
    if (val->producer < 0 && val->kind == MB_VALUE_INTERMEDIATE &&
        !outer_scope_has(g, val->name))
      return mb__error(err, MB_STATUS_PARSE,
                       "graph output '%s' is never produced", val->name);
  }
  if (n == 0)
    return finalize_subgraphs(g, err);

  /* Dependency lists in one CSR array. */
  dep_start = calloc((size_t)n + 1, sizeof(int));
  order = malloc(sizeof(int) * (size_t)n);
  state = calloc((size_t)n, sizeof(int));
  stack_node = malloc(sizeof(int) * (size_t)n);
  stack_next = malloc(sizeof(int) * (size_t)n);
  sorted = malloc(sizeof(mb_node) * (size_t)n);
  if (!dep_start || !order || !state || !stack_node || !stack_next || !sorted)
    goto oom;
  {
    size_t total = 0, cap = 0;
    for (int i = 0; i < n; i++) {
      if (node_deps(g, i, &deps, &n_deps, &cap_deps))
        goto oom;
      if (total + (size_t)n_deps > cap) {
        size_t new_cap = (total + (size_t)n_deps) * 2 + 16;
        int *grown = realloc(dep_list, sizeof(int) * new_cap);
        if (!grown)
          goto oom;
        dep_list = grown;
        cap = new_cap;
      }
      if (n_deps)
        memcpy(dep_list + total, deps, sizeof(int) * (size_t)n_deps);
      total += (size_t)n_deps;
      dep_start[i + 1] = (int)total;
    }
  }
  /* Depth-first post-order over dependencies, starting from nodes in their
   * original order: an already sorted graph keeps its order exactly, and the
   * explicit stack keeps long chains off the C stack. */
  {
    int count = 0;
    for (int root = 0; root < n; root++) {
      if (state[root])
        continue;
      int top = 0;
      stack_node[0] = root;
      stack_next[0] = dep_start[root];
      state[root] = 1;
      while (top >= 0) {
        int i = stack_node[top];
        if (stack_next[top] < dep_start[i + 1]) {
          int d = dep_list[stack_next[top]++];
          if (state[d] == 1) {
            status =
                mb__error(err, MB_STATUS_PARSE, "graph has a cycle through %s",
                          mb__node_label(&g->nodes[d], label, sizeof label));
            goto done;
          }
          if (state[d] == 0) {
            state[d] = 1;
            top++;
            stack_node[top] = d;
            stack_next[top] = dep_start[d];
          }
          continue;
        }
        state[i] = 2;
        order[count++] = i;
        top--;
      }
    }
    MB_ASSERT(count == n);
  }
  for (int i = 0; i < n; i++)
    sorted[i] = g->nodes[order[i]];
  memcpy(g->nodes, sorted, sizeof(mb_node) * (size_t)n);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < g->nodes[i].n_outputs; j++)
      if (g->nodes[i].outputs[j] >= 0)
        g->values[g->nodes[i].outputs[j]].producer = i;
  status = finalize_subgraphs(g, err);
  goto done;
oom:
  status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot sort graph");
done:
  free(order);
  free(state);
  free(dep_start);
  free(dep_list);
  free(deps);
  free(stack_node);
  free(stack_next);
  free(sorted);
  return status;
}

/* ---- queries ---- */

static const char *const attr_type_names[] = {
    [MB_ATTR_UNDEFINED] = "undefined",
    [MB_ATTR_FLOAT] = "float",
    [MB_ATTR_INT] = "int",
    [MB_ATTR_STRING] = "string",
    [MB_ATTR_TENSOR] = "tensor",
    [MB_ATTR_GRAPH] = "graph",
    [MB_ATTR_FLOATS] = "floats",
    [MB_ATTR_INTS] = "ints",
    [MB_ATTR_STRINGS] = "strings",
    [MB_ATTR_TENSORS] = "tensors",
    [MB_ATTR_GRAPHS] = "graphs",
    [MB_ATTR_SPARSE_TENSOR] = "sparse_tensor",
    [MB_ATTR_SPARSE_TENSORS] = "sparse_tensors",
    [MB_ATTR_TYPE_PROTO] = "type_proto",
    [MB_ATTR_TYPE_PROTOS] = "type_protos",
};

const char *mb__attr_type_name(mb_attr_type type) {
  if ((unsigned)type >= MB_ARRAY_COUNT(attr_type_names) ||
      !attr_type_names[type])
    return "unknown";
  return attr_type_names[type];
}

const mb_attr *mb__node_attr(const mb_node *n, const char *name) {
  for (int i = 0; i < n->n_attrs; i++)
    if (strcmp(n->attrs[i].name, name) == 0)
      return &n->attrs[i];
  return NULL;
}

int64_t mb__node_attr_int(const mb_node *n, const char *name, int64_t def) {
  const mb_attr *a = mb__node_attr(n, name);
  return a && a->type == MB_ATTR_INT ? a->i : def;
}

float mb__node_attr_float(const mb_node *n, const char *name, float def) {
  const mb_attr *a = mb__node_attr(n, name);
  if (a && a->type == MB_ATTR_FLOAT)
    return a->f;
  if (a && a->type == MB_ATTR_INT) /* some exporters write 0 for 0.0 */
    return (float)a->i;
  return def;
}

const char *mb__node_attr_string(const mb_node *n, const char *name,
                                 const char *def) {
  const mb_attr *a = mb__node_attr(n, name);
  return a && a->type == MB_ATTR_STRING ? a->s : def;
}

int64_t mb__node_attr_ints(const mb_node *n, const char *name,
                           const int64_t **values_out) {
  const mb_attr *a = mb__node_attr(n, name);
  if (!a || a->type != MB_ATTR_INTS) {
    *values_out = NULL;
    return -1;
  }
  *values_out = a->ints;
  return a->n;
}

int64_t mb__node_attr_floats(const mb_node *n, const char *name,
                             const float **values_out) {
  const mb_attr *a = mb__node_attr(n, name);
  if (!a || a->type != MB_ATTR_FLOATS) {
    *values_out = NULL;
    return -1;
  }
  *values_out = a->floats;
  return a->n;
}

const char *mb__node_label(const mb_node *n, char *buf, size_t size) {
  if (n->name && n->name[0])
    snprintf(buf, size, "%s%s%s '%s'", n->domain[0] ? n->domain : "",
             n->domain[0] ? ":" : "", n->op_type, n->name);
  else
    snprintf(buf, size, "%s%s%s (unnamed)", n->domain[0] ? n->domain : "",
             n->domain[0] ? ":" : "", n->op_type);
  return buf;
}

void mb__graph_param_stats(const mb_graph *g, int64_t *count_out,
                           int64_t *bytes_out) {
  int64_t count = 0, bytes = 0;
  for (int i = 0; i < g->n_values; i++) {
    const mb_tensor *t = g->values[i].initializer;
    if (t) {
      count += t->numel;
      bytes += (int64_t)t->nbytes;
    }
  }
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    for (int j = 0; j < n->n_attrs; j++) {
      const mb_attr *a = &n->attrs[j];
      int64_t c = 0, b = 0;
      if (a->type == MB_ATTR_TENSOR && a->t &&
          strcmp(n->op_type, "Constant") == 0) {
        count += a->t->numel;
        bytes += (int64_t)a->t->nbytes;
      }
      if (a->type == MB_ATTR_GRAPH && a->g) {
        mb__graph_param_stats(a->g, &c, &b);
        count += c;
        bytes += b;
      }
      for (int64_t k = 0; a->type == MB_ATTR_GRAPHS && k < a->n; k++) {
        mb__graph_param_stats(a->graphs[k], &c, &b);
        count += c;
        bytes += b;
      }
    }
  }
  *count_out = count;
  *bytes_out = bytes;
}
