/* Folding passes: Constant nodes to initializers, constant subgraphs to
 * initializers (computed with the reference interpreter's kernels), and
 * shape subgraphs to constants once the input shapes are pinned. */
#include "passes/edit.h"
#include "runtime/reference.h"

#include <stdlib.h>

/* Ops never folded: random ones (a value per run, not per model) and the
 * quantisation ops, whose constant inputs are quantised weights that must
 * stay quantised for the runtime to fuse them. */
static const char *const never_fold[] = {
    "RandomNormal",      "RandomUniform",    "RandomNormalLike",
    "RandomUniformLike", "Bernoulli",        "Multinomial",
    "QuantizeLinear",    "DequantizeLinear", "DynamicQuantizeLinear",
};

static bool foldable_op(const mb_node *n) {
  for (size_t i = 0; i < MB_ARRAY_COUNT(never_fold); i++)
    if (strcmp(n->op_type, never_fold[i]) == 0)
      return false;
  return !mb__edit_has_subgraph(n);
}

static bool writes_graph_output(const mb_graph *g, const mb_node *n) {
  for (int j = 0; j < n->n_outputs; j++)
    if (n->outputs[j] >= 0 && g->values[n->outputs[j]].is_output)
      return true;
  return false;
}

/* ---- constant_to_initializer ---- */

/* The tensor a Constant node holds, taken from (or built out of) its
 * attribute; NULL for string constants and malformed nodes. */
static mb_tensor *constant_tensor(mb_node *n) {
  if (n->n_attrs != 1)
    return NULL;
  mb_attr *a = &n->attrs[0];
  mb_tensor *t = NULL;
  int64_t dims[1] = {a->n};
  if ((a->type == MB_ATTR_TENSOR || a->type == MB_ATTR_SPARSE_TENSOR) && a->t) {
    if (a->t->dtype == MB_DTYPE_STRING)
      return NULL;
    t = a->t; /* the node is removed: take its tensor */
    a->t = NULL;
  } else if (a->type == MB_ATTR_FLOAT && strcmp(a->name, "value_float") == 0) {
    if (!mb_tensor_create(MB_DTYPE_FLOAT, 0, NULL, &t, NULL))
      *(float *)t->data = a->f;
  } else if (a->type == MB_ATTR_INT && strcmp(a->name, "value_int") == 0) {
    if (!mb_tensor_create(MB_DTYPE_INT64, 0, NULL, &t, NULL))
      *(int64_t *)t->data = a->i;
  } else if (a->type == MB_ATTR_FLOATS &&
             strcmp(a->name, "value_floats") == 0) {
    if (!mb_tensor_create(MB_DTYPE_FLOAT, 1, dims, &t, NULL) && a->n)
      memcpy(t->data, a->floats, sizeof(float) * (size_t)a->n);
  } else if (a->type == MB_ATTR_INTS && strcmp(a->name, "value_ints") == 0) {
    if (!mb_tensor_create(MB_DTYPE_INT64, 1, dims, &t, NULL) && a->n)
      memcpy(t->data, a->ints, sizeof(int64_t) * (size_t)a->n);
  }
  return t;
}

static mb_status constant_to_initializer(mb_model *model,
                                         const mb_pass_options *opt,
                                         mb_pass_stats *stats, mb_error *err) {
  mb_graph *g = model->graph;
  mb_pass_record *rec = mb__pass_record(stats);
  bool *remove = calloc((size_t)g->n_nodes + 1, sizeof *remove);
  mb_status status = MB_STATUS_OK;
  int converted = 0, kept = 0;
  if (!remove)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < g->n_nodes; i++) {
    mb_node *n = &g->nodes[i];
    if (n->domain[0] || strcmp(n->op_type, "Constant") != 0)
      continue;
    if (n->n_outputs != 1 || n->outputs[0] < 0 || writes_graph_output(g, n)) {
      kept++;
      continue;
    }
    mb_tensor *t = constant_tensor(n);
    if (!t) {
      kept++;
      continue;
    }
    if ((status = mb__edit_set_initializer(g, n->outputs[0], t, err)))
      goto done;
    remove[i] = true;
    converted++;
  }
  mb__edit_remove_nodes(g, remove);
  rec->changed = converted;
  if (converted || kept)
    snprintf(rec->detail, sizeof rec->detail,
             "%d Constant nodes became initializers, %d kept", converted, kept);
done:
  free(remove);
  return status;
}

const mb_pass mb__pass_constant_to_initializer = {
    "constant_to_initializer",
    "Constant nodes become initializers; counts the nodes converted",
    constant_to_initializer,
};

/* ---- fold_constants ---- */

static mb_status fold_constants(mb_model *model, const mb_pass_options *opt,
                                mb_pass_stats *stats, mb_error *err) {
  mb_graph *g = model->graph;
  mb_pass_record *rec = mb__pass_record(stats);
  size_t limit = opt->fold_limit_bytes ? opt->fold_limit_bytes
                                       : MB_PASS_FOLD_LIMIT_DEFAULT;
  bool *remove = calloc((size_t)g->n_nodes + 1, sizeof *remove);
  int *uses = calloc((size_t)g->n_values + 1, sizeof *uses);
  mb_tensor **outs = NULL;
  mb_status status = MB_STATUS_OK;
  int folded = 0, too_large = 0, failed = 0, max_outputs = 1;
  int64_t bytes_added = 0;

  for (int i = 0; i < g->n_nodes; i++)
    max_outputs = MB_MAX(max_outputs, g->nodes[i].n_outputs);
  outs = calloc((size_t)max_outputs, sizeof *outs);
  if (!remove || !uses || !outs) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  mb__edit_count_uses(g, uses, NULL);
  /* Nodes are in topological order, so a chain of constant nodes folds
   * link by link in one sweep. */
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    bool constant =
        n->n_outputs > 0 && foldable_op(n) && !writes_graph_output(g, n);
    size_t in_bytes = 0;
    for (int j = 0; j < n->n_inputs && constant; j++) {
      int v = n->inputs[j];
      if (v < 0)
        continue;
      if (!g->values[v].initializer)
        constant = false;
      else
        in_bytes += g->values[v].initializer->nbytes;
    }
    if (!constant)
      continue;
    mb_error local = {0};
    mb_status eval =
        mb__edit_eval_node(model, i, MB_MAX(limit, in_bytes), outs, &local);
    if (eval == MB_STATUS_OVERFLOW) {
      too_large++;
      continue;
    }
    if (eval == MB_STATUS_OUT_OF_MEMORY) {
      status = mb__error(err, eval, "%s", local.message);
      goto done;
    }
    if (eval) {
      /* Unsupported here or invalid: leave it to the runtime, which
       * reports real errors itself. */
      mb__log(MB_LOG_DEBUG, "fold_constants: not folded: %s", local.message);
      failed++;
      continue;
    }
    for (int j = 0; j < n->n_outputs; j++) {
      int v = n->outputs[j];
      mb_tensor *t = outs[j];
      outs[j] = NULL;
      if (v < 0) {
        mb_tensor_free(t);
        continue;
      }
      if (uses[v] == 0) {
        mb_tensor_free(t);
        mb__edit_drop_value(g, v);
        continue;
      }
      bytes_added += (int64_t)t->nbytes;
      if ((status = mb__edit_set_initializer(g, v, t, err))) {
        for (int k = j + 1; k < n->n_outputs; k++) {
          mb_tensor_free(outs[k]);
          outs[k] = NULL;
        }
        goto done;
      }
    }
    remove[i] = true;
    folded++;
  }
  mb__edit_remove_nodes(g, remove);
  rec->changed = folded;
  if (folded || too_large || failed)
    snprintf(rec->detail, sizeof rec->detail,
             "%d nodes folded into %lld bytes of initializers; not folded: %d "
             "too large, %d not computable",
             folded, (long long)bytes_added, too_large, failed);
done:
  free(remove);
  free(uses);
  free(outs);
  return status;
}

const mb_pass mb__pass_fold_constants = {
    "fold_constants",
    "nodes whose inputs are all constant become initializers (reference "
    "kernels; no random or quantisation ops; size cap); counts nodes folded",
    fold_constants,
};

/* ---- simplify_shapes ---- */

static mb_status simplify_shapes(mb_model *model, const mb_pass_options *opt,
                                 mb_pass_stats *stats, mb_error *err) {
  mb_graph *g = model->graph;
  mb_pass_record *rec = mb__pass_record(stats);
  mb_tensor *inputs = calloc((size_t)g->n_inputs + 1, sizeof *inputs);
  const mb_tensor **input_ptrs =
      calloc((size_t)g->n_inputs + 1, sizeof *input_ptrs);
  mb_shape_info *shapes = calloc((size_t)g->n_values + 1, sizeof *shapes);
  mb_tensor **folded = calloc((size_t)g->n_values + 1, sizeof *folded);
  int *uses = calloc((size_t)g->n_values + 1, sizeof *uses);
  bool *full = calloc((size_t)g->n_nodes + 1, sizeof *full);
  bool *remove = calloc((size_t)g->n_nodes + 1, sizeof *remove);
  mb_status status = MB_STATUS_OK;
  int made_constant = 0, pinned = 0;

  if (!inputs || !input_ptrs || !shapes || !folded || !uses || !full ||
      !remove) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  if ((status = mb__edit_input_shapes(model, opt, true, inputs, err)))
    goto done;
  /* Pin the inputs: the model now accepts exactly these shapes. */
  for (int i = 0; i < g->n_inputs; i++) {
    mb_value *v = &g->values[g->inputs[i]];
    bool changed = v->rank != inputs[i].rank;
    v->rank = inputs[i].rank;
    for (int d = 0; d < inputs[i].rank; d++) {
      changed |= v->dims[d].value != inputs[i].dims[d];
      v->dims[d].value = inputs[i].dims[d];
      v->dims[d].param = NULL;
    }
    pinned += changed;
    input_ptrs[i] = &inputs[i];
  }
  if ((status = mb__infer_shapes_fold(model, input_ptrs, shapes, folded, err)))
    goto done;
  mb__edit_count_uses(g, uses, NULL);
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    bool all = n->n_outputs > 0 && foldable_op(n) && !writes_graph_output(g, n);
    for (int j = 0; j < n->n_outputs && all; j++)
      if (n->outputs[j] >= 0 && !folded[n->outputs[j]])
        all = false;
    full[i] = all;
  }
  /* Only the frontier becomes constant: folded nodes read by a node that
   * stays. What lies behind them is dead and left to eliminate_dead. */
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    if (full[i])
      continue;
    for (int j = 0; j < n->n_inputs; j++) {
      int v = n->inputs[j];
      int p = v >= 0 ? g->values[v].producer : -1;
      if (p >= 0 && full[p])
        remove[p] = true;
    }
  }
  for (int i = 0; i < g->n_nodes; i++) {
    if (!remove[i])
      continue;
    const mb_node *n = &g->nodes[i];
    for (int j = 0; j < n->n_outputs; j++) {
      int v = n->outputs[j];
      if (v < 0)
        continue;
      if (uses[v] == 0) {
        mb__edit_drop_value(g, v);
        continue;
      }
      mb_tensor *t = folded[v];
      folded[v] = NULL;
      if ((status = mb__edit_set_initializer(g, v, t, err)))
        goto done;
      made_constant++;
    }
  }
  mb__edit_remove_nodes(g, remove);
  rec->changed = made_constant;
  snprintf(rec->detail, sizeof rec->detail,
           "%d inputs pinned, %d values made constant", pinned, made_constant);
done:
  if (folded)
    for (int v = 0; v < g->n_values; v++)
      mb_tensor_free(folded[v]);
  free(inputs);
  free(input_ptrs);
  free(shapes);
  free(folded);
  free(uses);
  free(full);
  free(remove);
  return status;
}

const mb_pass mb__pass_simplify_shapes = {
    "simplify_shapes",
    "pins graph inputs to the given shapes and replaces what then becomes "
    "constant (Shape->Gather->Concat->Reshape ...) by initializers; counts "
    "values made constant",
    simplify_shapes,
};
