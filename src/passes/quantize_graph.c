/* Quantisation passes: graph helpers both passes use (constants through
 * Identity, uses, new values, initializers and nodes, attributes, removing
 * nodes and pruning what nothing reads) and symmetric int8 weight
 * quantisation. */
#include "passes/quantize_internal.h"

/* The node producing value v in the main graph when it is a node of the
 * default domain named op_type, else NULL. */
static const mb_node *produced_by(const mb_graph *g, int v,
                                  const char *op_type) {
  if (v < 0 || g->values[v].producer < 0 ||
      g->values[v].kind != MB_VALUE_INTERMEDIATE ||
      g->values[v].producer >= g->n_nodes)
    return NULL;
  const mb_node *p = &g->nodes[g->values[v].producer];
  return strcmp(p->op_type, op_type) == 0 && !p->domain[0] ? p : NULL;
}

/* The value holding the data of v when v is a constant: v itself for an
 * initializer or the output of a Constant node with a tensor `value`, or
 * what an Identity chain starting at v copies (exporters write shared
 * weights that way). -1 when v is no constant. */
int mb__qz_constant_source(const mb_graph *g, int v) {
  for (int depth = 0; v >= 0 && depth < 64; depth++) {
    if (g->values[v].initializer)
      return v;
    const mb_node *p = produced_by(g, v, "Constant");
    if (p) {
      const mb_attr *a = mb__node_attr(p, "value");
      return a && a->type == MB_ATTR_TENSOR && a->t ? v : -1;
    }
    p = produced_by(g, v, "Identity");
    v = p && p->n_inputs == 1 ? p->inputs[0] : -1;
  }
  return -1;
}

/* The data of constant v (see constant_source), or NULL. */
const mb_tensor *mb__qz_constant_of(const mb_graph *g, int v) {
  v = mb__qz_constant_source(g, v);
  if (v < 0)
    return NULL;
  if (g->values[v].initializer)
    return g->values[v].initializer;
  return mb__node_attr(&g->nodes[g->values[v].producer], "value")->t;
}

bool mb__qz_is_float_constant(const mb_graph *g, int v) {
  const mb_tensor *t = mb__qz_constant_of(g, v);
  return t && t->dtype == MB_DTYPE_FLOAT && (t->numel == 0 || t->data);
}

bool mb__qz_is_graph_output(const mb_graph *g, int v) {
  return v >= 0 && g->values[v].is_output;
}

bool mb__qz_is_graph_input(const mb_graph *g, int v) {
  return v >= 0 && g->values[v].kind == MB_VALUE_INPUT;
}

/* Marks the values of g that subgraphs (at any depth) read by name. */
static void mark_subgraph_reads(const mb_graph *g, const mb_graph *sub,
                                bool *read) {
  for (int i = 0; i < sub->n_nodes; i++) {
    const mb_node *n = &sub->nodes[i];
    if (sub != g)
      for (int j = 0; j < n->n_inputs; j++) {
        int v = n->inputs[j] >= 0
                    ? mb__graph_find_value(g, sub->values[n->inputs[j]].name)
                    : -1;
        if (v >= 0)
          read[v] = true;
      }
    for (int a = 0; a < n->n_attrs; a++) {
      const mb_attr *attr = &n->attrs[a];
      if (attr->type == MB_ATTR_GRAPH && attr->g)
        mark_subgraph_reads(g, attr->g, read);
      for (int64_t k = 0; attr->type == MB_ATTR_GRAPHS && k < attr->n; k++)
        mark_subgraph_reads(g, attr->graphs[k], read);
    }
  }
}

/* uses[v]: node input slots of g reading v (nodes with skip[i] set are not
 * counted; skip may be NULL). sub_read[v]: a subgraph reads v by name. */
void mb__qz_count_uses(const mb_graph *g, const bool *skip, int *uses,
                       bool *sub_read) {
  memset(uses, 0, sizeof *uses * (size_t)g->n_values);
  memset(sub_read, 0, sizeof *sub_read * (size_t)g->n_values);
  for (int i = 0; i < g->n_nodes; i++) {
    if (skip && skip[i])
      continue;
    for (int j = 0; j < g->nodes[i].n_inputs; j++)
      if (g->nodes[i].inputs[j] >= 0)
        uses[g->nodes[i].inputs[j]]++;
  }
  mark_subgraph_reads(g, g, sub_read);
}

static bool name_used(const mb_graph *g, const char *name) {
  if (mb__graph_find_value(g, name) >= 0)
    return true;
  for (int i = 0; i < g->n_nodes; i++)
    for (int a = 0; a < g->nodes[i].n_attrs; a++) {
      const mb_attr *attr = &g->nodes[i].attrs[a];
      if (attr->type == MB_ATTR_GRAPH && attr->g && name_used(attr->g, name))
        return true;
      for (int64_t k = 0; attr->type == MB_ATTR_GRAPHS && k < attr->n; k++)
        if (name_used(attr->graphs[k], name))
          return true;
    }
  return false;
}

/* A new value named base + suffix (+ "_2", "_3" ... until unused). Returns
 * its index or -1. */
int mb__qz_new_value(mb_graph *g, const char *base, const char *suffix,
                     mb_error *err) {
  size_t len = strlen(base) + strlen(suffix) + 16;
  char *name = malloc(len);
  if (!name) {
    mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    return -1;
  }
  snprintf(name, len, "%s%s", base, suffix);
  for (int k = 2; name_used(g, name); k++)
    snprintf(name, len, "%s%s_%d", base, suffix, k);
  int v = mb__graph_value(g, name, err);
  free(name);
  return v;
}

/* A new initializer named base + suffix that takes `t` (also on failure).
 * Returns its index or -1. */
int mb__qz_new_initializer(mb_graph *g, const char *base, const char *suffix,
                           mb_tensor *t, mb_error *err) {
  int v = mb__qz_new_value(g, base, suffix, err);
  if (v < 0) {
    mb_tensor_free(t);
    return -1;
  }
  /* g->values[v].name is in the arena: stable while the arrays grow. */
  return mb__graph_add_initializer(g, g->values[v].name, t, err);
}

/* Appends a node over value indices (-1: omitted). Returns its index. */
int mb__qz_add_node(mb_graph *g, const char *op_type, const char *name,
                    int n_inputs, const int *inputs, int n_outputs,
                    const int *outputs, mb_error *err) {
  const char *in[8], *out[8];
  MB_ASSERT(n_inputs <= 8 && n_outputs <= 8);
  for (int i = 0; i < n_inputs; i++)
    in[i] = inputs[i] >= 0 ? g->values[inputs[i]].name : "";
  for (int i = 0; i < n_outputs; i++)
    out[i] = outputs[i] >= 0 ? g->values[outputs[i]].name : "";
  return mb__graph_add_node(g, op_type, "", name, n_inputs, in, n_outputs, out,
                            err);
}

/* Sets float attribute `name` of node i, adding it when absent. */
mb_status mb__qz_set_float_attr(mb_graph *g, int i, const char *name, float v,
                                mb_error *err) {
  mb_node *n = &g->nodes[i];
  for (int a = 0; a < n->n_attrs; a++)
    if (strcmp(n->attrs[a].name, name) == 0) {
      n->attrs[a].type = MB_ATTR_FLOAT;
      n->attrs[a].f = v;
      return MB_STATUS_OK;
    }
  return mb__node_set_float(g, i, name, v, err);
}

static void free_node_attrs(mb_node *n) {
  for (int a = 0; a < n->n_attrs; a++) {
    mb_attr *attr = &n->attrs[a];
    mb_tensor_free(attr->t);
    attr->t = NULL;
    if (attr->g)
      mb__graph_free(attr->g);
    attr->g = NULL;
    for (int64_t k = 0; attr->type == MB_ATTR_TENSORS && k < attr->n; k++)
      mb_tensor_free(attr->tensors[k]);
    for (int64_t k = 0; attr->type == MB_ATTR_GRAPHS && k < attr->n; k++)
      mb__graph_free(attr->graphs[k]);
    attr->n = 0;
  }
}

/* Removes the nodes marked in `remove` (the first n_marked nodes may be
 * marked; later ones are kept), then the Constant nodes nobody reads, then
 * drops initializers nobody reads and clears the declared type of values
 * nothing produces or reads, so that the writer emits none of them. Value
 * producers are left for mb__graph_finalize. */
mb_status mb__qz_remove_and_prune(mb_graph *g, const bool *remove, int n_marked,
                                  mb_error *err) {
  int *uses = calloc((size_t)g->n_values + 1, sizeof *uses);
  bool *sub_read = calloc((size_t)g->n_values + 1, sizeof *sub_read);
  bool *produced = calloc((size_t)g->n_values + 1, sizeof *produced);
  bool *dead = calloc((size_t)g->n_nodes + 1, sizeof *dead);
  if (!uses || !sub_read || !produced || !dead) {
    free(uses);
    free(sub_read);
    free(produced);
    free(dead);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  for (int i = 0; i < n_marked && remove; i++)
    dead[i] = remove[i];
  /* Constant and Identity nodes whose outputs nobody reads any more (the
   * weights they carried were quantised), until none is left. */
  for (bool again = true; again;) {
    again = false;
    mb__qz_count_uses(g, dead, uses, sub_read);
    for (int i = 0; i < g->n_nodes; i++) {
      const mb_node *n = &g->nodes[i];
      if (dead[i] || n->domain[0] || n->n_outputs != 1 || n->outputs[0] < 0 ||
          (strcmp(n->op_type, "Constant") != 0 &&
           strcmp(n->op_type, "Identity") != 0))
        continue;
      int v = n->outputs[0];
      if (uses[v] == 0 && !sub_read[v] && !mb__qz_is_graph_output(g, v))
        dead[i] = again = true;
    }
  }
  int kept = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    if (dead[i]) {
      free_node_attrs(&g->nodes[i]);
      continue;
    }
    g->nodes[kept++] = g->nodes[i];
  }
  g->n_nodes = kept;
  mb__qz_count_uses(g, NULL, uses, sub_read);
  for (int i = 0; i < g->n_nodes; i++)
    for (int j = 0; j < g->nodes[i].n_outputs; j++)
      if (g->nodes[i].outputs[j] >= 0)
        produced[g->nodes[i].outputs[j]] = true;
  for (int v = 0; v < g->n_values; v++) {
    mb_value *val = &g->values[v];
    if (uses[v] || sub_read[v] || val->is_output || val->kind == MB_VALUE_INPUT)
      continue;
    if (val->initializer) {
      mb_tensor_free(val->initializer);
      val->initializer = NULL;
    } else if (produced[v] || val->kind != MB_VALUE_INTERMEDIATE) {
      continue;
    }
    val->producer = -1;
    val->dtype = MB_DTYPE_UNDEFINED;
    val->rank = -1;
  }
  free(uses);
  free(sub_read);
  free(produced);
  free(dead);
  return MB_STATUS_OK;
}

/* Symmetric int8 quantisation of float tensor w, one scale per index of
 * `axis` (or one for all when axis < 0), as ORT quantises weights: scale =
 * max|w| / qmax, values rounded half to even and clamped to [-qmax, qmax]
 * (qmax 127, or 64 for 7-bit weights: mb__quant_weight_qmax).
 * *q_out: a new int8 tensor of w's shape. scales_out: `channels` entries.
 * Also returns the data's min and max. */
mb_status mb__qz_quantize_symmetric(const mb_tensor *w, int axis, int qmax,
                                    mb_tensor **q_out, float *scales_out,
                                    double *min_out, double *max_out,
                                    mb_error *err) {
  int64_t channels = axis >= 0 ? w->dims[axis] : 1, inner = 1;
  for (int d = axis + 1; axis >= 0 && d < w->rank; d++)
    inner *= w->dims[d];
  const float *x = w->data;
  double lo = 0.0, hi = 0.0;
  /* Row by row of `run` elements that share a scale (all of w without an
   * axis): no division per element. */
  int64_t run = axis >= 0 ? inner : w->numel;
  int64_t rows = run > 0 ? w->numel / run : 0;
  for (int64_t c = 0; c < channels; c++)
    scales_out[c] = 0.0f;
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * run;
    float most = 0.0f, least = 0.0f, top = 0.0f;
    for (int64_t i = 0; i < run; i++) {
      /* x - x is 0 for finite x, NaN for an infinity or NaN */
      bool finite = xr[i] - xr[i] == 0.0f;
      float v = finite ? xr[i] : 0.0f;
      least = v < least ? v : least;
      top = v > top ? v : top;
    }
    most = MB_MAX(-least, top);
    int64_t c = axis >= 0 ? r % channels : 0;
    if (most > scales_out[c])
      scales_out[c] = most; /* max |w| for now */
    lo = MB_MIN(lo, (double)least);
    hi = MB_MAX(hi, (double)top);
  }
  for (int64_t c = 0; c < channels; c++) {
    /* As mb__quant_scale_zero_point for INT8, over [-qmax, qmax]. */
    double scale = (double)scales_out[c] / qmax;
    scales_out[c] = scale >= FLT_MIN && scale <= FLT_MAX ? (float)scale : 1.0f;
  }
  const float lim = (float)qmax;
  mb_tensor *q = NULL;
  mb_status status = mb_tensor_create(MB_DTYPE_INT8, w->rank, w->dims, &q, err);
  if (status)
    return status;
  int8_t *y = q->data;
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * run;
    float s = scales_out[axis >= 0 ? r % channels : 0];
    int8_t *yr = y + r * run;
    for (int64_t i = 0; i < run; i++) {
      /* Clamped to [-qmax, qmax] (integers, so before rounding is the same
       * as after), then rounded half to even by adding and subtracting
       * 1.5 * 2^23, as nearbyintf would in the default rounding mode but
       * without a libm call per element; NaN becomes 0. */
      float v = xr[i] / s;
      float c = v > -lim ? v : -lim;
      c = c < lim ? c : lim;
      c = (c + 12582912.0f) - 12582912.0f;
      yr[i] = (int8_t)(v == v ? c : 0.0f);
    }
  }
  *q_out = q;
  *min_out = lo;
  *max_out = hi;
  return MB_STATUS_OK;
}

/* A 1-D (channels > 1 or per_channel) or scalar tensor of `dtype` with
 * every element from values (float) or zero (values NULL). */
mb_status mb__qz_small_tensor(mb_dtype dtype, int64_t channels,
                              bool per_channel, const float *values,
                              mb_tensor **out, mb_error *err) {
  int64_t dims[1] = {channels};
  mb_status status =
      mb_tensor_create(dtype, per_channel ? 1 : 0, dims, out, err);
  if (status)
    return status;
  for (int64_t c = 0; values && c < channels; c++)
    mb__tensor_set_f64(*out, c, values[c]);
  return MB_STATUS_OK;
}
