/* Model statistics: metadata, op histogram, parameters, FLOPs.
 *
 * Everything the stats point to lives in one arena (stats->storage_), so
 * they stay valid after the model is freed and are released in one call. */
#include "analysis/quantization.h"
#include "runtime/flops.h"

#include <stdlib.h>

#define UNSUPPORTED_LIST_SIZE 4096

typedef struct analysis {
  mb_arena *arena;
  mb_model_stats *stats;
  mb_error *err;
} analysis;

static mb_status oom(mb_error *err) {
  return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
}

static const char *copy_str(mb_arena *arena, const char *s) {
  return mb__arena_strdup(arena, s ? s : "");
}

static mb_status alloc_infos(analysis *a, int n, mb_value_info **infos_out) {
  *infos_out =
      mb__arena_alloc(a->arena, sizeof **infos_out * (size_t)(n > 0 ? n : 1));
  return *infos_out ? MB_STATUS_OK : oom(a->err);
}

/* Deep-copies a value info's strings into the arena. */
static mb_status copy_info(analysis *a, const mb_value_info *src,
                           mb_value_info *dst) {
  *dst = *src;
  dst->name = copy_str(a->arena, src->name);
  if (!dst->name)
    return oom(a->err);
  for (int d = 0; d < src->rank && d < MB_MAX_RANK; d++) {
    if (!src->dim_params[d])
      continue;
    dst->dim_params[d] = copy_str(a->arena, src->dim_params[d]);
    if (!dst->dim_params[d])
      return oom(a->err);
  }
  return MB_STATUS_OK;
}

static mb_status collect_metadata(analysis *a, const mb_model *model) {
  mb_model_stats *s = a->stats;
  s->producer_name = copy_str(a->arena, model->producer_name);
  s->producer_version = copy_str(a->arena, model->producer_version);
  if (!s->producer_name || !s->producer_version)
    return oom(a->err);
  s->ir_version = model->ir_version;
  s->n_opsets = model->n_opsets;
  s->opsets = mb__arena_alloc(
      a->arena,
      sizeof *s->opsets * (size_t)(model->n_opsets > 0 ? model->n_opsets : 1));
  if (!s->opsets)
    return oom(a->err);
  for (int i = 0; i < model->n_opsets; i++) {
    s->opsets[i].domain = copy_str(a->arena, model->opsets[i].domain);
    if (!s->opsets[i].domain)
      return oom(a->err);
    s->opsets[i].version = model->opsets[i].version;
  }
  const char *sha = mb_model_sha256(model);
  snprintf(s->sha256, sizeof s->sha256, "%s", sha ? sha : "");

  s->n_inputs = mb_model_input_count(model);
  s->n_outputs = mb_model_output_count(model);
  mb_status status = alloc_infos(a, s->n_inputs, &s->inputs);
  if (status == MB_STATUS_OK)
    status = alloc_infos(a, s->n_outputs, &s->outputs);
  for (int i = 0; status == MB_STATUS_OK && i < s->n_inputs; i++) {
    mb_value_info info;
    status = mb_model_input_info(model, i, &info, a->err);
    if (status == MB_STATUS_OK)
      status = copy_info(a, &info, &s->inputs[i]);
  }
  for (int i = 0; status == MB_STATUS_OK && i < s->n_outputs; i++) {
    mb_value_info info;
    status = mb_model_output_info(model, i, &info, a->err);
    if (status == MB_STATUS_OK)
      status = copy_info(a, &info, &s->outputs[i]);
  }
  if (status != MB_STATUS_OK)
    return status;

  mb__graph_param_stats(model->graph, &s->param_count, &s->param_bytes);

  char *list = mb__arena_alloc(a->arena, UNSUPPORTED_LIST_SIZE);
  if (!list)
    return oom(a->err);
  s->n_unsupported =
      mb_model_unsupported_ops(model, list, UNSUPPORTED_LIST_SIZE);
  s->unsupported_ops = list;
  return MB_STATUS_OK;
}

static bool is_default_domain(const char *domain) {
  return !domain || domain[0] == '\0' || strcmp(domain, "ai.onnx") == 0;
}

/* Index of (domain, op_type) in s->ops, appending a row when new. */
static int op_index(analysis *a, const mb_node *node) {
  mb_model_stats *s = a->stats;
  const char *domain = is_default_domain(node->domain) ? "" : node->domain;
  for (int i = 0; i < s->n_ops; i++)
    if (strcmp(s->ops[i].op_type, node->op_type) == 0 &&
        strcmp(s->ops[i].domain, domain) == 0)
      return i;
  mb_op_stats *op = &s->ops[s->n_ops];
  op->domain = copy_str(a->arena, domain);
  op->op_type = copy_str(a->arena, node->op_type);
  if (!op->domain || !op->op_type)
    return -1;
  return s->n_ops++;
}

typedef struct sorted_op {
  mb_op_stats op;
  int old_index;
} sorted_op;

/* By FLOPs, then count (descending), then name, for a stable listing. */
static int compare_ops(const void *pa, const void *pb) {
  const mb_op_stats *a = &((const sorted_op *)pa)->op;
  const mb_op_stats *b = &((const sorted_op *)pb)->op;
  if (a->flops != b->flops)
    return a->flops < b->flops ? 1 : -1;
  if (a->count != b->count)
    return a->count < b->count ? 1 : -1;
  int c = strcmp(a->op_type, b->op_type);
  return c ? c : strcmp(a->domain, b->domain);
}

/* Sorts the histogram and remaps the nodes' indices into it. */
static mb_status sort_ops(analysis *a) {
  mb_model_stats *s = a->stats;
  size_t n = (size_t)(s->n_ops > 0 ? s->n_ops : 1);
  sorted_op *sorted = malloc(sizeof *sorted * n);
  int *new_index = malloc(sizeof *new_index * n);
  if (!sorted || !new_index) {
    free(sorted);
    free(new_index);
    return oom(a->err);
  }
  for (int i = 0; i < s->n_ops; i++) {
    sorted[i].op = s->ops[i];
    sorted[i].old_index = i;
  }
  qsort(sorted, (size_t)s->n_ops, sizeof *sorted, compare_ops);
  for (int i = 0; i < s->n_ops; i++) {
    s->ops[i] = sorted[i].op;
    new_index[sorted[i].old_index] = i;
  }
  for (int i = 0; i < s->n_nodes; i++)
    s->nodes[i].op_index = new_index[s->nodes[i].op_index];
  free(sorted);
  free(new_index);
  return MB_STATUS_OK;
}

/* Builds the histogram and per-node FLOPs; shapes NULL means unknown. */
static mb_status collect_nodes(analysis *a, const mb_graph *g,
                               const mb_shape_info *shapes) {
  mb_model_stats *s = a->stats;
  size_t n = (size_t)(g->n_nodes > 0 ? g->n_nodes : 1);
  s->node_count = g->n_nodes;
  s->ops = mb__arena_alloc(a->arena, sizeof *s->ops * n);
  s->nodes = mb__arena_alloc(a->arena, sizeof *s->nodes * n);
  if (!s->ops || !s->nodes)
    return oom(a->err);
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *node = &g->nodes[i];
    int k = op_index(a, node);
    if (k < 0)
      return oom(a->err);
    bool has_formula;
    double flops = mb__node_flops(g, node, shapes, &has_formula);
    mb_op_stats *op = &s->ops[k];
    op->count++;
    op->has_formula = has_formula;
    if (flops < 0) {
      op->unknown_count++;
      s->unknown_flops_nodes++;
    } else {
      op->flops += flops;
      s->total_flops += flops;
    }
    s->nodes[i].name = copy_str(a->arena, node->name);
    if (!s->nodes[i].name)
      return oom(a->err);
    s->nodes[i].op_index = k;
    s->nodes[i].flops = flops;
  }
  s->n_nodes = g->n_nodes;
  return sort_ops(a);
}

/* Resolves input shapes and infers every value's shape. On success
 * *shapes_out holds g->n_values entries (malloc) or is NULL when shapes are
 * unknown; the reason is then in stats->shape_note. Fails only for an
 * invalid spec or OOM. */
static mb_status infer(analysis *a, const mb_model *model,
                       const mb_shape_spec *spec, mb_shape_info **shapes_out) {
  mb_model_stats *s = a->stats;
  const mb_graph *g = model->graph;
  size_t n_in = (size_t)(s->n_inputs > 0 ? s->n_inputs : 1);
  mb_error local;
  mb_status status;
  mb_tensor *tensors = NULL;
  const mb_tensor **ptrs = NULL;
  mb_shape_info *shapes = NULL;

  *shapes_out = NULL;
  s->input_shapes = mb__arena_alloc(a->arena, sizeof *s->input_shapes * n_in);
  if (!s->input_shapes)
    return oom(a->err);
  memset(&local, 0, sizeof local);
  status = mb_model_resolve_input_shapes(model, spec, s->input_shapes, &local);
  if (status == MB_STATUS_DYNAMIC) {
    snprintf(s->shape_note, sizeof s->shape_note, "%s", local.message);
    s->input_shapes = NULL;
    return MB_STATUS_OK;
  }
  if (status != MB_STATUS_OK) {
    if (a->err)
      *a->err = local;
    return status;
  }
  for (int i = 0; i < s->n_inputs; i++) {
    s->input_shapes[i].name = s->inputs[i].name; /* the arena copy */
  }

  tensors = calloc(n_in, sizeof *tensors);
  ptrs = calloc(n_in, sizeof *ptrs);
  shapes = calloc((size_t)(g->n_values > 0 ? g->n_values : 1), sizeof *shapes);
  if (!tensors || !ptrs || !shapes) {
    status = oom(a->err);
    goto done;
  }
  for (int i = 0; i < s->n_inputs; i++) {
    status = mb__tensor_set_shape(&tensors[i], s->inputs[i].dtype,
                                  s->input_shapes[i].rank,
                                  s->input_shapes[i].dims, &local);
    if (status != MB_STATUS_OK) {
      snprintf(s->shape_note, sizeof s->shape_note, "input '%.100s': %.380s",
               s->inputs[i].name, local.message);
      goto unknown;
    }
    ptrs[i] = &tensors[i];
  }
  memset(&local, 0, sizeof local);
  status =
      mb__infer_shapes(model, (const mb_tensor *const *)ptrs, shapes, &local);
  if (status == MB_STATUS_OUT_OF_MEMORY) {
    if (a->err)
      *a->err = local;
    goto done;
  }
  if (status != MB_STATUS_OK) {
    /* Keep what inference got before it stopped: the shapes array was
     * zeroed, so values it never reached read as unknown. */
    snprintf(s->shape_note, sizeof s->shape_note, "shape inference: %.480s",
             local.message[0] ? local.message : mb_status_string(status));
  }
  *shapes_out = shapes;
  shapes = NULL;
  status = MB_STATUS_OK;
  goto done;

unknown:
  status = MB_STATUS_OK;
done:
  free(tensors);
  free(ptrs);
  free(shapes);
  return status;
}

static mb_status collect_output_shapes(analysis *a, const mb_graph *g,
                                       const mb_shape_info *shapes) {
  mb_model_stats *s = a->stats;
  size_t n = (size_t)(s->n_outputs > 0 ? s->n_outputs : 1);
  s->output_shapes = mb__arena_alloc(a->arena, sizeof *s->output_shapes * n);
  if (!s->output_shapes)
    return oom(a->err);
  for (int i = 0; i < s->n_outputs; i++) {
    mb_input_shape *o = &s->output_shapes[i];
    o->name = s->outputs[i].name;
    o->rank = -1;
    int v = i < g->n_outputs ? g->outputs[i] : -1;
    if (v >= 0 && v < g->n_values && shapes[v].known && shapes[v].rank >= 0 &&
        shapes[v].rank <= MB_MAX_RANK) {
      o->rank = shapes[v].rank;
      memcpy(o->dims, shapes[v].dims, sizeof o->dims);
    }
  }
  return MB_STATUS_OK;
}

/* Bytes of a shape, < 0 when unknown. */
static double shape_bytes(mb_dtype dtype, int rank, const int64_t *dims) {
  size_t size = mb_dtype_size(dtype);
  if (size == 0 || rank < 0)
    return -1.0;
  double bytes = (double)size;
  for (int d = 0; d < rank; d++) {
    if (dims[d] < 0)
      return -1.0;
    bytes *= (double)dims[d];
  }
  return bytes;
}

/* The roofline's bytes (mb_model_stats.input_bytes, activation_bytes):
 * the inputs at their resolved shapes, every node output at its inferred
 * shape; -1 when any is unknown. */
static void collect_bytes(mb_model_stats *s, const mb_graph *g,
                          const mb_shape_info *shapes) {
  s->input_bytes = s->activation_bytes = -1.0;
  if (!shapes || !s->input_shapes)
    return;
  double in = 0.0, act = 0.0;
  for (int i = 0; i < s->n_inputs; i++) {
    double b = shape_bytes(s->inputs[i].dtype, s->input_shapes[i].rank,
                           s->input_shapes[i].dims);
    if (b < 0)
      return;
    in += b;
  }
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_outputs; k++) {
      int v = g->nodes[i].outputs[k];
      if (v < 0 || v >= g->n_values)
        continue;
      const mb_shape_info *si = &shapes[v];
      double b = si->known ? shape_bytes(si->dtype, si->rank, si->dims) : -1.0;
      if (b < 0)
        return;
      act += b;
    }
  s->input_bytes = in;
  s->activation_bytes = act;
}

mb_status mb_model_analyze(const mb_model *model, const mb_shape_spec *spec,
                           mb_model_stats *stats_out, mb_error *err) {
  mb_model_stats stats;
  mb_shape_info *shapes = NULL;
  mb_status status;
  memset(&stats, 0, sizeof stats);
  memset(stats_out, 0, sizeof *stats_out);
  analysis a = {mb__arena_create(), &stats, err};
  if (!a.arena)
    return oom(err);
  stats.storage_ = a.arena;

  status = collect_metadata(&a, model);
  if (status != MB_STATUS_OK)
    goto fail;
  status = infer(&a, model, spec, &shapes);
  if (status != MB_STATUS_OK)
    goto fail;
  if (shapes) {
    status = collect_output_shapes(&a, model->graph, shapes);
    if (status != MB_STATUS_OK)
      goto fail;
  }
  status = collect_nodes(&a, model->graph, shapes);
  if (status != MB_STATUS_OK)
    goto fail;
  collect_bytes(&stats, model->graph, shapes);
  stats.quantized = mb__model_quantization(model, stats.quantization,
                                           sizeof stats.quantization);
  free(shapes);
  *stats_out = stats;
  return MB_STATUS_OK;

fail:
  free(shapes);
  mb_model_stats_free(&stats);
  return status;
}

void mb_model_stats_free(mb_model_stats *stats) {
  if (!stats)
    return;
  mb__arena_free(stats->storage_);
  memset(stats, 0, sizeof *stats);
}
