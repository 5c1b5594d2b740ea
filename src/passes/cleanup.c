/* Cleanup passes: Identity and inference-mode Dropout removal, and dead
 * node elimination. */
#include "passes/edit.h"

#include <stdlib.h>

/* ---- remove_identity ---- */

/* True when constant ratio input t of a Dropout is 0: it drops nothing,
 * training or not. */
static bool ratio_is_zero(const mb_tensor *t) {
  if (!t || t->numel != 1)
    return false;
  if (t->dtype == MB_DTYPE_FLOAT)
    return *(const float *)t->data == 0.0f;
  if (t->dtype == MB_DTYPE_DOUBLE)
    return *(const double *)t->data == 0.0;
  return false;
}

/* True when Dropout node n is an identity at inference: its mask output is
 * unused and it is not told to train (training_mode absent or a constant
 * false; opset < 7 spells inference as is_test = 1), or its ratio is a
 * constant 0 (exporters write training_mode = true with ratio 0 for
 * attention dropout; runtimes such as OpenVINO refuse any training mode). */
static bool dropout_is_identity(const mb_model *model, const mb_node *n,
                                const int *uses) {
  const mb_graph *g = model->graph;
  if (n->n_outputs > 1 && n->outputs[1] >= 0 &&
      (uses[n->outputs[1]] > 0 || g->values[n->outputs[1]].is_output))
    return false;
  if (mb__model_opset(model, "") >= 12 && n->n_inputs > 1 &&
      n->inputs[1] >= 0 && ratio_is_zero(g->values[n->inputs[1]].initializer))
    return true;
  if (mb__model_opset(model, "") < 7 && mb__node_attr_int(n, "is_test", 0) != 1)
    return false;
  if (n->n_inputs > 2 && n->inputs[2] >= 0) {
    const mb_tensor *t = g->values[n->inputs[2]].initializer;
    if (!t || t->numel != 1 || t->dtype != MB_DTYPE_BOOL ||
        *(const uint8_t *)t->data != 0)
      return false;
  }
  return true;
}

/* The output slot of node p that writes value v. */
static int output_slot(const mb_node *p, int v) {
  for (int j = 0; j < p->n_outputs; j++)
    if (p->outputs[j] == v)
      return j;
  return -1;
}

static mb_status remove_identity(mb_model *model, const mb_pass_options *opt,
                                 mb_pass_stats *stats, mb_error *err) {
  mb_graph *g = model->graph;
  mb_pass_record *rec = mb__pass_record(stats);
  bool *remove = calloc((size_t)g->n_nodes + 1, sizeof *remove);
  int *uses = calloc((size_t)g->n_values + 1, sizeof *uses);
  bool *sub_read = calloc((size_t)g->n_values + 1, sizeof *sub_read);
  int identities = 0, dropouts = 0, kept = 0;
  if (!remove || !uses || !sub_read) {
    free(remove);
    free(uses);
    free(sub_read);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  mb__edit_count_uses(g, uses, sub_read);
  for (int i = 0; i < g->n_nodes; i++) {
    mb_node *n = &g->nodes[i];
    bool identity = strcmp(n->op_type, "Identity") == 0;
    bool dropout = strcmp(n->op_type, "Dropout") == 0;
    if (n->domain[0] || !(identity || dropout) || n->n_inputs < 1 ||
        n->n_outputs < 1 || n->inputs[0] < 0 || n->outputs[0] < 0)
      continue;
    if (dropout && !dropout_is_identity(model, n, uses)) {
      kept++;
      continue;
    }
    int x = n->inputs[0], y = n->outputs[0];
    mb_value *vx = &g->values[x], *vy = &g->values[y];
    if (!vy->is_output && !sub_read[y]) {
      /* Readers of y read x instead. */
      mb__edit_replace_uses(g, y, x);
    } else if (vx->producer >= 0 && !remove[vx->producer] && !vx->is_output &&
               !sub_read[x] && vx->kind == MB_VALUE_INTERMEDIATE) {
      /* y must keep its name (a graph output, or read by name from a
       * subgraph): x's producer writes y directly and x's readers read y. */
      mb_node *p = &g->nodes[vx->producer];
      p->outputs[output_slot(p, x)] = y;
      mb__edit_replace_uses(g, x, y);
      vy->producer = vx->producer;
      vx->producer = -1;
    } else {
      kept++;
      continue;
    }
    remove[i] = true;
    identities += identity;
    dropouts += dropout;
  }
  mb__edit_remove_nodes(g, remove);
  rec->changed = identities + dropouts;
  if (identities || dropouts || kept)
    snprintf(rec->detail, sizeof rec->detail,
             "%d Identity and %d Dropout removed, %d kept", identities,
             dropouts, kept);
  free(remove);
  free(uses);
  free(sub_read);
  return MB_STATUS_OK;
}

const mb_pass mb__pass_remove_identity = {
    "remove_identity",
    "removes Identity and inference-mode Dropout nodes, keeping graph output "
    "names; counts nodes removed",
    remove_identity,
};

/* ---- eliminate_dead ---- */

/* Marks the values of g that subgraph `sub` reads from outside. */
static void mark_outer_reads(const mb_graph *g, const mb_graph *sub,
                             bool *needed) {
  for (int i = 0; i < sub->n_nodes; i++) {
    const mb_node *n = &sub->nodes[i];
    for (int j = 0; j < n->n_inputs; j++) {
      int v = n->inputs[j] >= 0
                  ? mb__graph_find_value(g, sub->values[n->inputs[j]].name)
                  : -1;
      if (v >= 0)
        needed[v] = true;
    }
    for (int j = 0; j < n->n_attrs; j++) {
      const mb_attr *a = &n->attrs[j];
      if (a->type == MB_ATTR_GRAPH && a->g)
        mark_outer_reads(g, a->g, needed);
      for (int64_t k = 0; a->type == MB_ATTR_GRAPHS && k < a->n; k++)
        mark_outer_reads(g, a->graphs[k], needed);
    }
  }
  for (int i = 0; i < sub->n_outputs; i++) {
    int v = mb__graph_find_value(g, sub->values[sub->outputs[i]].name);
    if (v >= 0)
      needed[v] = true;
  }
}

static mb_status eliminate_dead(mb_model *model, const mb_pass_options *opt,
                                mb_pass_stats *stats, mb_error *err) {
  mb_graph *g = model->graph;
  mb_pass_record *rec = mb__pass_record(stats);
  bool *needed = calloc((size_t)g->n_values + 1, sizeof *needed);
  bool *remove = calloc((size_t)g->n_nodes + 1, sizeof *remove);
  int dead_nodes = 0, dead_inits = 0;
  int64_t dead_bytes = 0;
  if (!needed || !remove) {
    free(needed);
    free(remove);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  for (int i = 0; i < g->n_outputs; i++)
    needed[g->outputs[i]] = true;
  /* The graph is topologically sorted: readers come after writers. */
  for (int i = g->n_nodes - 1; i >= 0; i--) {
    const mb_node *n = &g->nodes[i];
    bool live = false;
    for (int j = 0; j < n->n_outputs && !live; j++)
      live = n->outputs[j] >= 0 && needed[n->outputs[j]];
    if (!live) {
      remove[i] = true;
      dead_nodes++;
      continue;
    }
    for (int j = 0; j < n->n_inputs; j++)
      if (n->inputs[j] >= 0)
        needed[n->inputs[j]] = true;
    for (int j = 0; j < n->n_attrs; j++) {
      const mb_attr *a = &n->attrs[j];
      if (a->type == MB_ATTR_GRAPH && a->g)
        mark_outer_reads(g, a->g, needed);
      for (int64_t k = 0; a->type == MB_ATTR_GRAPHS && k < a->n; k++)
        mark_outer_reads(g, a->graphs[k], needed);
    }
  }
  for (int i = 0; i < g->n_nodes; i++)
    for (int j = 0; remove[i] && j < g->nodes[i].n_outputs; j++)
      if (g->nodes[i].outputs[j] >= 0)
        mb__edit_drop_value(g, g->nodes[i].outputs[j]);
  mb__edit_remove_nodes(g, remove);
  for (int v = 0; v < g->n_values; v++) {
    mb_value *val = &g->values[v];
    if (!needed[v] && val->initializer && !val->is_output) {
      dead_inits++;
      dead_bytes += (int64_t)val->initializer->nbytes;
      mb__edit_drop_value(g, v);
    }
  }
  rec->changed = dead_nodes;
  if (dead_nodes || dead_inits)
    snprintf(rec->detail, sizeof rec->detail,
             "%d nodes and %d initializers (%lld bytes) removed", dead_nodes,
             dead_inits, (long long)dead_bytes);
  free(needed);
  free(remove);
  return MB_STATUS_OK;
}

const mb_pass mb__pass_eliminate_dead = {
    "eliminate_dead",
    "removes nodes no graph output depends on and unused initializers; "
    "counts nodes removed",
    eliminate_dead,
};
