/* Graph editing helpers shared by the passes (see edit.h). */
#include "passes/edit.h"

#include "ops/op.h"

#include <stdlib.h>

/* ---- uses ---- */

/* Marks every value of g that a node of `sub` (or a nested subgraph) or
 * one of sub's outputs names. */
static void mark_subgraph_reads(const mb_graph *g, const mb_graph *sub,
                                int *uses, bool *subgraph_read) {
  for (int i = 0; i < sub->n_nodes; i++) {
    const mb_node *n = &sub->nodes[i];
    for (int j = 0; j < n->n_inputs; j++) {
      if (n->inputs[j] < 0)
        continue;
      int v = mb__graph_find_value(g, sub->values[n->inputs[j]].name);
      if (v < 0)
        continue;
      uses[v]++;
      if (subgraph_read)
        subgraph_read[v] = true;
    }
    for (int j = 0; j < n->n_attrs; j++) {
      const mb_attr *a = &n->attrs[j];
      if (a->type == MB_ATTR_GRAPH && a->g)
        mark_subgraph_reads(g, a->g, uses, subgraph_read);
      for (int64_t k = 0; a->type == MB_ATTR_GRAPHS && k < a->n; k++)
        mark_subgraph_reads(g, a->graphs[k], uses, subgraph_read);
    }
  }
  for (int i = 0; i < sub->n_outputs; i++) {
    int v = mb__graph_find_value(g, sub->values[sub->outputs[i]].name);
    if (v < 0)
      continue;
    uses[v]++;
    if (subgraph_read)
      subgraph_read[v] = true;
  }
}

void mb__edit_count_uses(const mb_graph *g, int *uses, bool *subgraph_read) {
  for (int v = 0; v < g->n_values; v++) {
    uses[v] = 0;
    if (subgraph_read)
      subgraph_read[v] = false;
  }
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    for (int j = 0; j < n->n_inputs; j++)
      if (n->inputs[j] >= 0)
        uses[n->inputs[j]]++;
    for (int j = 0; j < n->n_attrs; j++) {
      const mb_attr *a = &n->attrs[j];
      if (a->type == MB_ATTR_GRAPH && a->g)
        mark_subgraph_reads(g, a->g, uses, subgraph_read);
      for (int64_t k = 0; a->type == MB_ATTR_GRAPHS && k < a->n; k++)
        mark_subgraph_reads(g, a->graphs[k], uses, subgraph_read);
    }
  }
  for (int i = 0; i < g->n_outputs; i++)
    uses[g->outputs[i]]++;
}

bool mb__edit_has_subgraph(const mb_node *n) {
  for (int j = 0; j < n->n_attrs; j++)
    if (n->attrs[j].type == MB_ATTR_GRAPH || n->attrs[j].type == MB_ATTR_GRAPHS)
      return true;
  return false;
}

int mb__edit_count_op(const mb_graph *g, const char *op_type) {
  int count = 0;
  for (int i = 0; i < g->n_nodes; i++)
    if (!g->nodes[i].domain[0] && strcmp(g->nodes[i].op_type, op_type) == 0)
      count++;
  return count;
}

/* ---- nodes and values ---- */

/* What an attribute owns (its arrays live in the arena). */
static void attr_release(mb_attr *a) {
  mb_tensor_free(a->t);
  a->t = NULL;
  mb__graph_free(a->g);
  a->g = NULL;
  if (a->type == MB_ATTR_TENSORS || a->type == MB_ATTR_SPARSE_TENSORS)
    for (int64_t k = 0; k < a->n; k++)
      mb_tensor_free(a->tensors[k]);
  if (a->type == MB_ATTR_GRAPHS)
    for (int64_t k = 0; k < a->n; k++)
      mb__graph_free(a->graphs[k]);
  a->n = 0;
}

void mb__edit_remove_nodes(mb_graph *g, const bool *remove) {
  int kept = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    if (remove[i]) {
      for (int j = 0; j < g->nodes[i].n_attrs; j++)
        attr_release(&g->nodes[i].attrs[j]);
      continue;
    }
    g->nodes[kept++] = g->nodes[i];
  }
  g->n_nodes = kept;
  for (int v = 0; v < g->n_values; v++)
    g->values[v].producer = -1;
  for (int i = 0; i < g->n_nodes; i++)
    for (int j = 0; j < g->nodes[i].n_outputs; j++)
      if (g->nodes[i].outputs[j] >= 0)
        g->values[g->nodes[i].outputs[j]].producer = i;
}

void mb__edit_drop_value(mb_graph *g, int v) {
  mb_value *val = &g->values[v];
  MB_ASSERT(val->kind != MB_VALUE_INPUT && !val->is_output);
  mb_tensor_free(val->initializer);
  val->initializer = NULL;
  val->kind = MB_VALUE_INTERMEDIATE;
  val->dtype = MB_DTYPE_UNDEFINED;
  val->rank = -1;
  val->producer = -1;
  val->doc = NULL;
}

void mb__edit_drop_orphans(mb_graph *g) {
  for (int v = 0; v < g->n_values; v++)
    g->values[v].producer = -1;
  /* producer doubles as a "touched" mark here; recomputed below. */
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    for (int j = 0; j < n->n_inputs; j++)
      if (n->inputs[j] >= 0 && g->values[n->inputs[j]].producer < 0)
        g->values[n->inputs[j]].producer = -2;
    for (int j = 0; j < n->n_outputs; j++)
      if (n->outputs[j] >= 0)
        g->values[n->outputs[j]].producer = i;
  }
  for (int v = 0; v < g->n_values; v++) {
    mb_value *val = &g->values[v];
    bool touched = val->producer != -1;
    if (val->producer == -2)
      val->producer = -1;
    if (!touched && val->kind == MB_VALUE_INTERMEDIATE && !val->is_output &&
        (val->dtype != MB_DTYPE_UNDEFINED || val->rank >= 0))
      mb__edit_drop_value(g, v);
  }
}

mb_status mb__edit_set_initializer(mb_graph *g, int v, mb_tensor *tensor,
                                   mb_error *err) {
  mb_value *val = &g->values[v];
  if (val->kind == MB_VALUE_INPUT || tensor->rank > MB_MAX_RANK) {
    mb_tensor_free(tensor);
    return mb__error(err, MB_STATUS_INTERNAL,
                     "value '%s' cannot become an initializer", val->name);
  }
  mb_tensor_free(val->initializer);
  val->initializer = tensor;
  val->kind = MB_VALUE_INITIALIZER;
  val->dtype = tensor->dtype;
  val->rank = tensor->rank;
  for (int d = 0; d < tensor->rank; d++) {
    val->dims[d].value = tensor->dims[d];
    val->dims[d].param = NULL;
  }
  val->producer = -1;
  return MB_STATUS_OK;
}

static bool name_used(const mb_graph *g, const char *name) {
  if (mb__graph_find_value(g, name) >= 0)
    return true;
  for (int i = 0; i < g->n_nodes; i++)
    for (int j = 0; j < g->nodes[i].n_attrs; j++) {
      const mb_attr *a = &g->nodes[i].attrs[j];
      if (a->type == MB_ATTR_GRAPH && a->g && name_used(a->g, name))
        return true;
      for (int64_t k = 0; a->type == MB_ATTR_GRAPHS && k < a->n; k++)
        if (name_used(a->graphs[k], name))
          return true;
    }
  return false;
}

int mb__edit_new_value(mb_graph *g, const char *base, const char *suffix,
                       mb_error *err) {
  size_t size = strlen(base) + strlen(suffix) + 24;
  char *name = malloc(size);
  if (!name) {
    mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot name a new value");
    return -1;
  }
  snprintf(name, size, "%s%s", base, suffix);
  for (int k = 2; name_used(g, name); k++)
    snprintf(name, size, "%s%s_%d", base, suffix, k);
  int v = mb__graph_value(g, name, err);
  free(name);
  return v;
}

void mb__edit_replace_uses(mb_graph *g, int from, int to) {
  for (int i = 0; i < g->n_nodes; i++)
    for (int j = 0; j < g->nodes[i].n_inputs; j++)
      if (g->nodes[i].inputs[j] == from)
        g->nodes[i].inputs[j] = to;
}

mb_status mb__edit_set_inputs(mb_graph *g, int node, int n, const int *inputs,
                              mb_error *err) {
  int *array = mb__arena_alloc(g->model->arena, sizeof(int) * (size_t)(n + 1));
  if (!array)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot rewire a node");
  memcpy(array, inputs, sizeof(int) * (size_t)n);
  g->nodes[node].inputs = array;
  g->nodes[node].n_inputs = n;
  return MB_STATUS_OK;
}

/* ---- evaluation ---- */

mb_status mb__edit_eval_node(const mb_model *model, int node, size_t max_bytes,
                             mb_tensor **outputs_out, mb_error *err) {
  const mb_graph *g = model->graph;
  const mb_node *n = &g->nodes[node];
  char label[160];
  mb_status status = MB_STATUS_OK;
  void *scratch[MB_OP_SCRATCH_SLOTS] = {0};
  size_t scratch_size[MB_OP_SCRATCH_SLOTS] = {0};
  mb_tensor *views = calloc((size_t)n->n_inputs + 1, sizeof *views);
  mb_tensor **in = calloc((size_t)n->n_inputs + 1, sizeof *in);
  mb_tensor **out = calloc((size_t)n->n_outputs + 1, sizeof *out);

  for (int j = 0; j < n->n_outputs; j++)
    outputs_out[j] = NULL;
  if (!views || !in || !out) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot evaluate %s",
                       mb__node_label(n, label, sizeof label));
    goto done;
  }
  int64_t opset = mb__model_opset(model, n->domain);
  const mb_op_def *def = mb__op_find(n->domain, n->op_type, opset);
  if (!def) {
    status = mb__error(
        err, MB_STATUS_UNSUPPORTED, "%s: no reference kernel at opset %lld",
        mb__node_label(n, label, sizeof label), (long long)opset);
    goto done;
  }
  for (int j = 0; j < n->n_inputs; j++) {
    int v = n->inputs[j];
    if (v < 0)
      continue;
    const mb_tensor *t = g->values[v].initializer;
    if (!t) {
      status =
          mb__error(err, MB_STATUS_INTERNAL,
                    "%s: input '%s' is not a "
                    "constant",
                    mb__node_label(n, label, sizeof label), g->values[v].name);
      goto done;
    }
    /* A view: kernels never write their inputs, and it owns nothing. */
    views[j] = *t;
    views[j].capacity = 0;
    views[j].name = NULL;
    in[j] = &views[j];
  }
  for (int j = 0; j < n->n_outputs; j++)
    if (n->outputs[j] >= 0 && !(out[j] = calloc(1, sizeof *out[j]))) {
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot evaluate %s",
                         mb__node_label(n, label, sizeof label));
      goto done;
    }
  mb_op_ctx ctx = {
      .node = n,
      .graph = g,
      .opset = opset,
      .n_inputs = n->n_inputs,
      .inputs = in,
      .n_outputs = n->n_outputs,
      .outputs = out,
      .threads = 1,
      .pool = NULL,
      .err = err,
      .scratch = scratch,
      .scratch_size = scratch_size,
  };
  if (err)
    err->message[0] = '\0';
  if ((status = def->infer(&ctx))) {
    if (err && !err->message[0])
      mb__error(err, status, "%s: shape inference failed",
                mb__node_label(n, label, sizeof label));
    goto done;
  }
  size_t bytes = 0;
  for (int j = 0; j < n->n_outputs; j++)
    if (out[j])
      bytes += out[j]->nbytes;
  if (bytes > max_bytes) {
    status =
        mb__error(err, MB_STATUS_OVERFLOW,
                  "%s: outputs take %zu bytes, above the limit of %zu",
                  mb__node_label(n, label, sizeof label), bytes, max_bytes);
    goto done;
  }
  for (int j = 0; j < n->n_outputs && !status; j++)
    if (out[j])
      status = mb__tensor_reset(out[j], out[j]->dtype, out[j]->rank,
                                out[j]->dims, err);
  if (status)
    goto done;
  if ((status = def->run(&ctx))) {
    if (err && !err->message[0])
      mb__error(err, status, "%s: execution failed",
                mb__node_label(n, label, sizeof label));
    goto done;
  }
  for (int j = 0; j < n->n_outputs; j++) {
    outputs_out[j] = out[j];
    out[j] = NULL;
  }
done:
  for (int j = 0; out && j < n->n_outputs; j++)
    mb_tensor_free(out[j]);
  for (int i = 0; i < MB_OP_SCRATCH_SLOTS; i++)
    mb__aligned_free(scratch[i]);
  free(views);
  free(in);
  free(out);
  return status;
}

/* ---- input shapes ---- */

mb_status mb__edit_input_shapes(const mb_model *model,
                                const mb_pass_options *opt, bool require,
                                mb_tensor *tensors_out, mb_error *err) {
  const mb_graph *g = model->graph;
  for (int i = 0; i < g->n_inputs; i++) {
    const mb_value *v = &g->values[g->inputs[i]];
    const mb_input_shape *given = NULL;
    int64_t dims[MB_MAX_RANK];
    for (int k = 0; opt && k < opt->n_input_shapes; k++)
      if (opt->input_shapes[k].name &&
          strcmp(opt->input_shapes[k].name, v->name) == 0)
        given = &opt->input_shapes[k];
    int rank = given ? given->rank : v->rank;
    if (rank < 0 || rank > MB_MAX_RANK)
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "graph input '%s' has no declared shape and none was "
                       "given",
                       v->name);
    if (given && v->rank >= 0 && given->rank != v->rank)
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "graph input '%s': the given shape has rank %d, the "
                       "model declares rank %d",
                       v->name, given->rank, v->rank);
    for (int d = 0; d < rank; d++) {
      int64_t declared = v->rank >= 0 ? v->dims[d].value : -1;
      dims[d] = given ? given->dims[d] : declared;
      if (given && (dims[d] < 0 || (declared >= 0 && dims[d] != declared)))
        return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                         "graph input '%s': dim %d is %lld, the model "
                         "declares %lld",
                         v->name, d, (long long)dims[d], (long long)declared);
      if (dims[d] < 0) {
        if (require)
          return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                           "graph input '%s': dim %d (%s) is dynamic and no "
                           "concrete shape was given",
                           v->name, d,
                           v->dims[d].param ? v->dims[d].param : "?");
        dims[d] = 1;
      }
    }
    memset(&tensors_out[i], 0, sizeof tensors_out[i]);
    mb_status status = mb__tensor_set_shape(
        &tensors_out[i],
        v->dtype != MB_DTYPE_UNDEFINED ? v->dtype : MB_DTYPE_FLOAT, rank, dims,
        err);
    if (status)
      return mb__error_prefix(err, status, "graph input '%s'", v->name);
  }
  return MB_STATUS_OK;
}
