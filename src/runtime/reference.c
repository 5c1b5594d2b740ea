/* The reference interpreter: resolves every node to an operator row once,
 * then runs nodes in topological order, inferring shapes from the actual
 * inputs on every run (so dynamic dimensions need no special handling).
 * Intermediate buffers are kept between runs and reused when large enough,
 * so steady-state runs do not allocate. */
#include "runtime/reference.h"

#include <stdlib.h>

struct mb_session {
  const mb_model *model;
  const mb_graph *graph;
  int threads;
  /* Workers of the kernels, sgemm included (NULL at 1 thread). */
  mb_threadpool *pool;
  const mb_op_def **defs; /* per node */
  int64_t *opsets;        /* per node */
  mb_tensor *values;      /* per graph value: storage or a borrowed view */
  mb_tensor **io_ptrs;    /* per node: its input then output tensor pointers */
  int *io_start;          /* per node: offset into io_ptrs */
  void *scratch[MB_OP_SCRATCH_SLOTS];
  size_t scratch_size[MB_OP_SCRATCH_SLOTS];
  double *node_ms; /* per node, summed while profiling, else NULL */
};

/* A borrowed view of a tensor: same shape and data, owns nothing. */
static void tensor_view(mb_tensor *dst, const mb_tensor *src) {
  *dst = *src;
  dst->capacity = 0;
  dst->name = NULL;
}

static mb_status resolve_node(const mb_model *model, const mb_node *node,
                              const mb_op_def **def_out, int64_t *opset_out,
                              mb_error *err) {
  char label[160];
  int64_t opset = mb__model_opset(model, node->domain);
  if (opset <= 0)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "%s: the model does not import an opset for domain '%s'",
                     mb__node_label(node, label, sizeof label),
                     node->domain[0] ? node->domain : "ai.onnx");
  /* A node that produces nothing is malformed (kernels write somewhere);
   * some operators (RNN's Y) do make their first output optional. */
  bool any_output = false;
  for (int j = 0; j < node->n_outputs; j++)
    any_output |= node->outputs[j] >= 0;
  if (!any_output)
    return mb__error(err, MB_STATUS_PARSE, "%s: has no output",
                     mb__node_label(node, label, sizeof label));
  const mb_op_def *def = mb__op_find(node->domain, node->op_type, opset);
  if (!def)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "%s: operator %s%s%s (opset %lld) is not supported by "
                     "the reference interpreter",
                     mb__node_label(node, label, sizeof label),
                     node->domain[0] ? node->domain : "",
                     node->domain[0] ? ":" : "", node->op_type,
                     (long long)opset);
  *def_out = def;
  *opset_out = opset;
  return MB_STATUS_OK;
}

mb_status mb_session_create(const mb_model *model,
                            const mb_session_options *options,
                            mb_session **session_out, mb_error *err) {
  return mb__session_create_masked(model, options, NULL, session_out, err);
}

mb_status mb__session_create_masked(const mb_model *model,
                                    const mb_session_options *options,
                                    const bool *run_mask,
                                    mb_session **session_out, mb_error *err) {
  mb_status status;
  const mb_graph *g = model->graph;
  size_t total_io = 0;
  mb_session *s = calloc(1, sizeof *s);
  if (!s)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot allocate session");
  s->model = model;
  s->graph = g;
  s->threads = options && options->threads > 0 ? options->threads : 1;
  for (int i = 0; i < g->n_nodes; i++)
    total_io += (size_t)(g->nodes[i].n_inputs + g->nodes[i].n_outputs);
  s->defs = calloc((size_t)g->n_nodes + 1, sizeof *s->defs);
  s->opsets = calloc((size_t)g->n_nodes + 1, sizeof *s->opsets);
  s->values = calloc((size_t)g->n_values + 1, sizeof *s->values);
  s->io_ptrs = calloc(total_io + 1, sizeof *s->io_ptrs);
  s->io_start = calloc((size_t)g->n_nodes + 1, sizeof *s->io_start);
  if (!s->defs || !s->opsets || !s->values || !s->io_ptrs || !s->io_start) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot allocate session");
    goto fail;
  }
  for (int i = 0; i < g->n_nodes; i++) {
    if (run_mask && !run_mask[i])
      continue;
    status = resolve_node(model, &g->nodes[i], &s->defs[i], &s->opsets[i], err);
    if (status)
      goto fail;
  }
  if (s->threads > 1 && !(s->pool = mb__threadpool_create(s->threads))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "cannot create a pool of %d threads", s->threads);
    goto fail;
  }
  for (int v = 0; v < g->n_values; v++)
    if (g->values[v].initializer)
      tensor_view(&s->values[v], g->values[v].initializer);
  total_io = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    s->io_start[i] = (int)total_io;
    for (int j = 0; j < n->n_inputs; j++)
      s->io_ptrs[total_io++] =
          n->inputs[j] >= 0 ? &s->values[n->inputs[j]] : NULL;
    for (int j = 0; j < n->n_outputs; j++)
      s->io_ptrs[total_io++] =
          n->outputs[j] >= 0 ? &s->values[n->outputs[j]] : NULL;
  }
  *session_out = s;
  return MB_STATUS_OK;
fail:
  mb_session_free(s);
  return status;
}

void mb_session_free(mb_session *s) {
  if (!s)
    return;
  if (s->values)
    for (int v = 0; v < s->graph->n_values; v++)
      mb__tensor_clear(&s->values[v]);
  for (int i = 0; i < MB_OP_SCRATCH_SLOTS; i++)
    mb__aligned_free(s->scratch[i]);
  mb__threadpool_free(s->pool);
  free(s->node_ms);
  free(s->defs);
  free(s->opsets);
  free(s->values);
  free(s->io_ptrs);
  free(s->io_start);
  free(s);
}

/* Checks a user-supplied input against the graph's declaration. */
static mb_status check_input(const mb_value *decl, const mb_tensor *t,
                             mb_error *err) {
  char have[128], want[160];
  if (!t)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT, "input '%s' is missing",
                     decl->name);
  if (decl->dtype != MB_DTYPE_UNDEFINED && t->dtype != decl->dtype)
    return mb__error(err, MB_STATUS_SHAPE, "input '%s' must be %s, got %s",
                     decl->name, mb_dtype_name(decl->dtype),
                     mb_dtype_name(t->dtype));
  if (t->numel > 0 && !t->data)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT, "input '%s' has no data",
                     decl->name);
  if (decl->rank < 0)
    return MB_STATUS_OK;
  bool ok = decl->rank == t->rank;
  size_t used = (size_t)snprintf(want, sizeof want, "[");
  for (int d = 0; d < decl->rank && used < sizeof want; d++) {
    const mb_dim *dim = &decl->dims[d];
    if (dim->value >= 0) {
      used += (size_t)snprintf(want + used, sizeof want - used, "%s%lld",
                               d ? "," : "", (long long)dim->value);
      if (ok && t->dims[d] != dim->value)
        ok = false;
    } else {
      used += (size_t)snprintf(want + used, sizeof want - used, "%s%s",
                               d ? "," : "", dim->param ? dim->param : "?");
    }
  }
  if (used < sizeof want)
    snprintf(want + used, sizeof want - used, "]");
  if (!ok)
    return mb__error(err, MB_STATUS_SHAPE,
                     "input '%s' must have shape %s, got %s", decl->name, want,
                     mb__shape_str(t->rank, t->dims, have, sizeof have));
  return MB_STATUS_OK;
}

static void make_ctx(mb_session *s, int i, mb_error *err, mb_op_ctx *ctx) {
  const mb_node *n = &s->graph->nodes[i];
  ctx->node = n;
  ctx->graph = s->graph;
  ctx->opset = s->opsets[i];
  ctx->n_inputs = n->n_inputs;
  ctx->inputs = &s->io_ptrs[s->io_start[i]];
  ctx->n_outputs = n->n_outputs;
  ctx->outputs = &s->io_ptrs[s->io_start[i] + n->n_inputs];
  ctx->threads = s->threads;
  ctx->pool = s->pool;
  ctx->err = err;
  ctx->scratch = s->scratch;
  ctx->scratch_size = s->scratch_size;
}

static mb_status alloc_outputs(mb_op_ctx *ctx) {
  for (int j = 0; j < ctx->n_outputs; j++) {
    mb_tensor *t = ctx->outputs[j];
    if (!t)
      continue;
    mb_status status =
        mb__tensor_reset(t, t->dtype, t->rank, t->dims, ctx->err);
    if (status) {
      char label[160];
      return mb__error_prefix(ctx->err, status, "%s: output %d",
                              mb__node_label(ctx->node, label, sizeof label),
                              j);
    }
  }
  return MB_STATUS_OK;
}

/* Ops fail with a message naming the node; a bare status from a helper gets
 * a generic one so the user never sees an empty error. */
static mb_status node_failed(mb_op_ctx *ctx, mb_status status,
                             const char *phase) {
  char label[160];
  if (ctx->err && ctx->err->message[0] == '\0')
    mb__error(ctx->err, status, "%s: %s failed: %s",
              mb__node_label(ctx->node, label, sizeof label), phase,
              mb_status_string(status));
  return status;
}

mb_status mb__session_bind_inputs(mb_session *s, const mb_tensor *const *inputs,
                                  mb_error *err) {
  const mb_graph *g = s->graph;
  for (int i = 0; i < g->n_inputs; i++) {
    const mb_value *decl = &g->values[g->inputs[i]];
    mb_status status = check_input(decl, inputs[i], err);
    if (status)
      return status;
    tensor_view(&s->values[g->inputs[i]], inputs[i]);
  }
  /* sgemm runs on the session's pool (see blas.c). */
  mb__blas_set_threads(1);
  return MB_STATUS_OK;
}

mb_status mb__session_run_node(mb_session *s, int i, mb_error *err) {
  mb_op_ctx ctx;
  mb_status status;
  double t0 = s->node_ms ? mb__now() : 0.0;
  if (!s->defs[i]) {
    char label[160];
    return mb__error(err, MB_STATUS_INTERNAL,
                     "%s: not prepared for the reference interpreter",
                     mb__node_label(&s->graph->nodes[i], label, sizeof label));
  }
  make_ctx(s, i, err, &ctx);
  status = s->defs[i]->infer(&ctx);
  if (status == MB_STATUS_DYNAMIC) /* all data is known at run time */
    status = mb__op_error(&ctx, MB_STATUS_INTERNAL,
                          "shape inference needs data that is missing");
  if (status)
    return node_failed(&ctx, status, "shape inference");
  if ((status = alloc_outputs(&ctx)))
    return status;
  if ((status = s->defs[i]->run(&ctx)))
    return node_failed(&ctx, status, "execution");
  if (s->node_ms)
    s->node_ms[i] += (mb__now() - t0) * 1e3;
  return MB_STATUS_OK;
}

mb_tensor *mb__session_value(mb_session *s, int value) {
  return &s->values[value];
}

mb_status mb__session_set_profiling(mb_session *s, bool on, mb_error *err) {
  free(s->node_ms);
  s->node_ms = NULL;
  if (on &&
      !(s->node_ms = calloc((size_t)s->graph->n_nodes + 1, sizeof *s->node_ms)))
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "cannot allocate the profile");
  return MB_STATUS_OK;
}

const double *mb__session_node_ms(const mb_session *s) {
  return s->node_ms;
}

mb_status mb__session_run_keep(mb_session *s, const mb_tensor *const *inputs,
                               mb_error *err) {
  const mb_graph *g = s->graph;
  mb_status status;
  mb_error local;
  if (!err)
    err = &local;
  err->message[0] = '\0';
  err->status = MB_STATUS_OK;
  if ((status = mb__session_bind_inputs(s, inputs, err)))
    return status;
  for (int i = 0; i < g->n_nodes; i++)
    if ((status = mb__session_run_node(s, i, err)))
      return status;
  return MB_STATUS_OK;
}

const mb_tensor *mb__session_output(const mb_session *s, int index) {
  return &s->values[s->graph->outputs[index]];
}

mb_status mb_session_run(mb_session *s, int n_inputs,
                         const mb_tensor *const *inputs, int n_outputs,
                         mb_tensor **outputs, mb_error *err) {
  const mb_graph *g = s->graph;
  mb_status status;
  for (int i = 0; i < n_outputs; i++)
    outputs[i] = NULL;
  if (n_inputs != g->n_inputs)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "the model has %d inputs, %d were given", g->n_inputs,
                     n_inputs);
  if (n_outputs != g->n_outputs)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "the model has %d outputs, %d slots were given",
                     g->n_outputs, n_outputs);
  if ((status = mb__session_run_keep(s, inputs, err)))
    return status;
  for (int i = 0; i < n_outputs; i++) {
    status = mb_tensor_clone(mb__session_output(s, i), &outputs[i], err);
    if (status)
      goto fail;
    free(outputs[i]->name);
    outputs[i]->name = mb__strdup(g->values[g->outputs[i]].name);
  }
  return MB_STATUS_OK;
fail:
  for (int i = 0; i < n_outputs; i++) {
    mb_tensor_free(outputs[i]);
    outputs[i] = NULL;
  }
  return status;
}

int mb_model_unsupported_ops(const mb_model *model, char *buf, size_t size) {
  const mb_graph *g = model->graph;
  int count = 0;
  size_t used = 0;
  if (size)
    buf[0] = '\0';
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    const mb_op_def *def;
    int64_t opset;
    if (resolve_node(model, n, &def, &opset, NULL) == MB_STATUS_OK)
      continue;
    bool seen = false;
    for (int j = 0; j < i && !seen; j++) {
      const mb_node *m = &g->nodes[j];
      seen = strcmp(m->op_type, n->op_type) == 0 &&
             strcmp(m->domain, n->domain) == 0;
    }
    if (seen)
      continue;
    count++;
    if (used < size)
      used += (size_t)snprintf(buf + used, size - used, "%s%s%s%s",
                               count > 1 ? ", " : "", n->domain,
                               n->domain[0] ? ":" : "", n->op_type);
  }
  return count;
}

/* ---- static shape inference ---- */

/* Outputs of at most this many bytes are computed during inference when all
 * inputs are known, so that shape subgraphs resolve to constants. */
#define MB_FOLD_LIMIT_BYTES ((size_t)1 << 20)

mb_status mb__infer_shapes(const mb_model *model,
                           const mb_tensor *const *inputs,
                           mb_shape_info *shapes_out, mb_error *err) {
  return mb__infer_shapes_fold(model, inputs, shapes_out, NULL, err);
}

mb_status mb__infer_shapes_fold(const mb_model *model,
                                const mb_tensor *const *inputs,
                                mb_shape_info *shapes_out,
                                mb_tensor **folded_out, mb_error *err) {
  const mb_graph *g = model->graph;
  mb_status status = MB_STATUS_OK;
  mb_session *s = NULL;
  bool *known = calloc((size_t)g->n_values + 1, sizeof(bool));
  /* Values that do not depend on the data of user inputs: initializers,
   * outputs of shape-only ops on known shapes, and what is computed from
   * those alone. */
  bool *is_const = calloc((size_t)g->n_values + 1, sizeof(bool));
  if (folded_out)
    for (int v = 0; v < g->n_values; v++)
      folded_out[v] = NULL;
  if (!is_const) {
    free(known);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot infer shapes");
  }
  mb_session_options opts = {1};
  mb_error local;
  if (!known)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot infer shapes");
  /* A session gives us value storage and io pointers; unresolvable nodes
   * are tolerated here, so build it by hand when creation fails. */
  s = calloc(1, sizeof *s);
  if (!s) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot infer shapes");
    goto done;
  }
  {
    size_t total_io = 0;
    s->model = model;
    s->graph = g;
    s->threads = opts.threads;
    for (int i = 0; i < g->n_nodes; i++)
      total_io += (size_t)(g->nodes[i].n_inputs + g->nodes[i].n_outputs);
    s->defs = calloc((size_t)g->n_nodes + 1, sizeof *s->defs);
    s->opsets = calloc((size_t)g->n_nodes + 1, sizeof *s->opsets);
    s->values = calloc((size_t)g->n_values + 1, sizeof *s->values);
    s->io_ptrs = calloc(total_io + 1, sizeof *s->io_ptrs);
    s->io_start = calloc((size_t)g->n_nodes + 1, sizeof *s->io_start);
    if (!s->defs || !s->opsets || !s->values || !s->io_ptrs || !s->io_start) {
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot infer shapes");
      goto done;
    }
    total_io = 0;
    for (int i = 0; i < g->n_nodes; i++) {
      const mb_node *n = &g->nodes[i];
      if (resolve_node(model, n, &s->defs[i], &s->opsets[i], NULL))
        s->defs[i] = NULL;
      s->io_start[i] = (int)total_io;
      for (int j = 0; j < n->n_inputs; j++)
        s->io_ptrs[total_io++] =
            n->inputs[j] >= 0 ? &s->values[n->inputs[j]] : NULL;
      for (int j = 0; j < n->n_outputs; j++)
        s->io_ptrs[total_io++] =
            n->outputs[j] >= 0 ? &s->values[n->outputs[j]] : NULL;
    }
  }
  for (int v = 0; v < g->n_values; v++)
    if (g->values[v].initializer) {
      tensor_view(&s->values[v], g->values[v].initializer);
      known[v] = true;
      is_const[v] = true;
    }
  for (int i = 0; i < g->n_inputs; i++) {
    const mb_tensor *t = inputs[i];
    mb_tensor *dst = &s->values[g->inputs[i]];
    status = mb__tensor_set_shape(dst, t->dtype, t->rank, t->dims, err);
    if (status) {
      mb__error_prefix(err, status, "input '%s'", g->values[g->inputs[i]].name);
      goto done;
    }
    dst->data = t->data;
    dst->capacity = 0;
    known[g->inputs[i]] = true;
  }
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    mb_op_ctx ctx;
    bool inputs_known = s->defs[i] != NULL, have_data = true;
    bool all_const = true;
    for (int j = 0; j < n->n_inputs && inputs_known; j++) {
      int v = n->inputs[j];
      if (v < 0)
        continue;
      if (!known[v])
        inputs_known = false;
      else if (s->values[v].numel > 0 && !s->values[v].data)
        have_data = false;
      all_const &= is_const[v];
    }
    if (!inputs_known)
      continue;
    make_ctx(s, i, err, &ctx);
    local.message[0] = '\0';
    ctx.err = &local;
    status = s->defs[i]->infer(&ctx);
    if (status == MB_STATUS_DYNAMIC || status == MB_STATUS_UNSUPPORTED) {
      status = MB_STATUS_OK;
      continue;
    }
    if (status) {
      if (err)
        *err = local;
      node_failed(&ctx, status, "shape inference");
      goto done;
    }
    size_t out_bytes = 0;
    for (int j = 0; j < n->n_outputs; j++)
      if (ctx.outputs[j])
        out_bytes += ctx.outputs[j]->nbytes;
    bool fold = (have_data || (s->defs[i]->flags & MB_OP_SHAPE_ONLY)) &&
                out_bytes <= MB_FOLD_LIMIT_BYTES;
    if (fold && alloc_outputs(&ctx) == MB_STATUS_OK &&
        s->defs[i]->run(&ctx) == MB_STATUS_OK) {
      /* outputs now hold data; constant when the inputs were (or only
       * their shapes were read) */
      bool random = strncmp(n->op_type, "Random", 6) == 0 ||
                    strcmp(n->op_type, "Bernoulli") == 0;
      bool constant =
          !random && (all_const || (s->defs[i]->flags & MB_OP_SHAPE_ONLY));
      for (int j = 0; j < n->n_outputs && constant; j++) {
        int v = n->outputs[j];
        if (v < 0)
          continue;
        is_const[v] = true;
        if (folded_out && !folded_out[v] &&
            mb_tensor_clone(&s->values[v], &folded_out[v], NULL) !=
                MB_STATUS_OK)
          folded_out[v] = NULL; /* out of memory: just not folded */
      }
    } else {
      for (int j = 0; j < n->n_outputs; j++)
        if (ctx.outputs[j]) {
          mb_tensor *t = ctx.outputs[j];
          if (t->capacity)
            mb__aligned_free(t->data);
          t->data = NULL;
          t->capacity = 0;
        }
    }
    for (int j = 0; j < n->n_outputs; j++)
      if (n->outputs[j] >= 0)
        known[n->outputs[j]] = true;
  }
  for (int v = 0; v < g->n_values; v++) {
    mb_shape_info *si = &shapes_out[v];
    memset(si, 0, sizeof *si);
    si->known = known[v];
    if (known[v]) {
      si->dtype = s->values[v].dtype;
      si->rank = s->values[v].rank;
      memcpy(si->dims, s->values[v].dims, sizeof si->dims);
    } else {
      si->rank = -1;
    }
  }
  status = MB_STATUS_OK;
done:
  mb_session_free(s);
  free(known);
  free(is_const);
  if (status && folded_out)
    for (int v = 0; v < g->n_values; v++) {
      mb_tensor_free(folded_out[v]);
      folded_out[v] = NULL;
    }
  return status;
}
