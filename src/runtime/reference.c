/* The reference interpreter: resolves every node to an operator row once,
 * then runs nodes in topological order, inferring shapes from the actual
 * inputs on every run (so dynamic dimensions need no special handling).
 * Intermediate buffers are kept between runs and reused when large enough,
 * so steady-state runs do not allocate.
 *
 * Values are tensors, or sequences and optionals (a record in `seqs` beside
 * each tensor, see core/sequence.h). Every graph attribute of a node (If's
 * branches, Loop's and Scan's bodies) gets a child session, created with
 * its parent and run through the operator context's run_subgraph hook; a
 * child resolves outer-scope names to the enclosing sessions' storage, so
 * it always reads their current values. */
#include "runtime/reference.h"

#include <stdlib.h>

typedef struct sub_session {
  const mb_graph *graph; /* the attribute's graph */
  mb_session *session;
  mb_op_value *outputs; /* graph->n_outputs, filled after each run */
} sub_session;

struct mb_session {
  const mb_model *model;
  const mb_graph *graph;
  const mb_session *parent; /* enclosing session of a subgraph, else NULL */
  int threads;
  /* Workers of the kernels, sgemm included (NULL at 1 thread); a child
   * session borrows its root's. */
  mb_threadpool *pool;
  bool owns_pool;
  const mb_op_def **defs; /* per node */
  int64_t *opsets;        /* per node */
  mb_tensor *values;      /* per graph value: storage or a borrowed view */
  mb__sequence *seqs;     /* per graph value: its sequence record */
  /* Per graph value, where it lives: &values[v] and &seqs[v], or an
   * enclosing session's storage for an outer-scope name. */
  mb_tensor **value_at;
  mb__sequence **seq_at;
  mb_tensor **io_ptrs;    /* per node: its input then output tensor pointers */
  mb__sequence **io_seqs; /* the same for their sequence records */
  int *io_start;          /* per node: offset into io_ptrs */
  sub_session *subs;      /* child sessions of every graph attribute */
  int n_subs;
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

/* Index of `name` among the values an enclosing session can see, with that
 * session; -1 when none has it. */
static int outer_value(const mb_session *parent, const char *name,
                       const mb_session **owner_out) {
  for (const mb_session *p = parent; p; p = p->parent) {
    int idx = mb__graph_find_value(p->graph, name);
    if (idx >= 0) {
      *owner_out = p;
      return idx;
    }
  }
  return -1;
}

/* A value of a subgraph that nothing in it defines: read from outside. */
static bool is_outer_ref(const mb_graph *g, int v) {
  const mb_value *val = &g->values[v];
  return g->parent && val->producer < 0 && val->kind == MB_VALUE_INTERMEDIATE &&
         !val->initializer;
}

static mb_status session_create_graph(const mb_model *model, const mb_graph *g,
                                      const mb_session *parent, int threads,
                                      mb_threadpool *pool, const bool *run_mask,
                                      bool tolerate_unresolved,
                                      mb_session **session_out, mb_error *err);

/* Child sessions for the graph attributes of the nodes that resolved. */
static mb_status create_subs(mb_session *s, bool tolerate_unresolved,
                             mb_error *err) {
  const mb_graph *g = s->graph;
  int count = 0;
  for (int i = 0; i < g->n_nodes; i++)
    for (int j = 0; s->defs[i] && j < g->nodes[i].n_attrs; j++) {
      const mb_attr *a = &g->nodes[i].attrs[j];
      count += a->type == MB_ATTR_GRAPH && a->g ? 1
               : a->type == MB_ATTR_GRAPHS      ? (int)a->n
                                                : 0;
    }
  if (count == 0)
    return MB_STATUS_OK;
  if (!(s->subs = calloc((size_t)count, sizeof *s->subs)))
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot allocate session");
  for (int i = 0; i < g->n_nodes; i++) {
    for (int j = 0; s->defs[i] && j < g->nodes[i].n_attrs; j++) {
      const mb_attr *a = &g->nodes[i].attrs[j];
      int n = a->type == MB_ATTR_GRAPH && a->g ? 1
              : a->type == MB_ATTR_GRAPHS      ? (int)a->n
                                               : 0;
      for (int k = 0; k < n; k++) {
        sub_session *sub = &s->subs[s->n_subs];
        sub->graph = a->type == MB_ATTR_GRAPH ? a->g : a->graphs[k];
        mb_status status =
            session_create_graph(s->model, sub->graph, s, s->threads, s->pool,
                                 NULL, tolerate_unresolved, &sub->session, err);
        if (status == MB_STATUS_OK &&
            !(sub->outputs = calloc((size_t)sub->graph->n_outputs + 1,
                                    sizeof *sub->outputs)))
          status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                             "cannot allocate session");
        if (status) {
          char label[160];
          mb_session_free(sub->session);
          sub->session = NULL;
          if (tolerate_unresolved) { /* the node just cannot run */
            s->defs[i] = NULL;
            continue;
          }
          return mb__error_prefix(
              err, status, "%s, subgraph '%s'",
              mb__node_label(&g->nodes[i], label, sizeof label), a->name);
        }
        s->n_subs++;
      }
    }
  }
  return MB_STATUS_OK;
}

static mb_status session_create_graph(const mb_model *model, const mb_graph *g,
                                      const mb_session *parent, int threads,
                                      mb_threadpool *pool, const bool *run_mask,
                                      bool tolerate_unresolved,
                                      mb_session **session_out, mb_error *err) {
  mb_status status;
  size_t total_io = 0;
  mb_session *s = calloc(1, sizeof *s);
  if (!s)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot allocate session");
  s->model = model;
  s->graph = g;
  s->parent = parent;
  s->threads = threads;
  s->pool = pool;
  for (int i = 0; i < g->n_nodes; i++)
    total_io += (size_t)(g->nodes[i].n_inputs + g->nodes[i].n_outputs);
  s->defs = calloc((size_t)g->n_nodes + 1, sizeof *s->defs);
  s->opsets = calloc((size_t)g->n_nodes + 1, sizeof *s->opsets);
  s->values = calloc((size_t)g->n_values + 1, sizeof *s->values);
  s->seqs = calloc((size_t)g->n_values + 1, sizeof *s->seqs);
  s->value_at = calloc((size_t)g->n_values + 1, sizeof *s->value_at);
  s->seq_at = calloc((size_t)g->n_values + 1, sizeof *s->seq_at);
  s->io_ptrs = calloc(total_io + 1, sizeof *s->io_ptrs);
  s->io_seqs = calloc(total_io + 1, sizeof *s->io_seqs);
  s->io_start = calloc((size_t)g->n_nodes + 1, sizeof *s->io_start);
  if (!s->defs || !s->opsets || !s->values || !s->seqs || !s->value_at ||
      !s->seq_at || !s->io_ptrs || !s->io_seqs || !s->io_start) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot allocate session");
    goto fail;
  }
  for (int i = 0; i < g->n_nodes; i++) {
    if (run_mask && !run_mask[i])
      continue;
    status = resolve_node(model, &g->nodes[i], &s->defs[i], &s->opsets[i],
                          tolerate_unresolved ? NULL : err);
    if (status && tolerate_unresolved)
      s->defs[i] = NULL;
    else if (status)
      goto fail;
  }
  if (!parent && threads > 1 && !(s->pool = mb__threadpool_create(threads))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "cannot create a pool of %d threads", threads);
    goto fail;
  }
  s->owns_pool = !parent;
  for (int v = 0; v < g->n_values; v++) {
    s->value_at[v] = &s->values[v];
    s->seq_at[v] = &s->seqs[v];
    if (g->values[v].initializer)
      tensor_view(&s->values[v], g->values[v].initializer);
    const mb_session *owner;
    int outer;
    if (parent && is_outer_ref(g, v) &&
        (outer = outer_value(parent, g->values[v].name, &owner)) >= 0) {
      s->value_at[v] = owner->value_at[outer];
      s->seq_at[v] = owner->seq_at[outer];
    }
  }
  total_io = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    s->io_start[i] = (int)total_io;
    for (int j = 0; j < n->n_inputs; j++, total_io++) {
      s->io_ptrs[total_io] =
          n->inputs[j] >= 0 ? s->value_at[n->inputs[j]] : NULL;
      s->io_seqs[total_io] = n->inputs[j] >= 0 ? s->seq_at[n->inputs[j]] : NULL;
    }
    for (int j = 0; j < n->n_outputs; j++, total_io++) {
      s->io_ptrs[total_io] =
          n->outputs[j] >= 0 ? s->value_at[n->outputs[j]] : NULL;
      s->io_seqs[total_io] =
          n->outputs[j] >= 0 ? s->seq_at[n->outputs[j]] : NULL;
    }
  }
  if ((status = create_subs(s, tolerate_unresolved, err)))
    goto fail;
  *session_out = s;
  return MB_STATUS_OK;
fail:
  mb_session_free(s);
  return status;
}

mb_status mb__session_create_masked(const mb_model *model,
                                    const mb_session_options *options,
                                    const bool *run_mask,
                                    mb_session **session_out, mb_error *err) {
  int threads = options && options->threads > 0 ? options->threads : 1;
  return session_create_graph(model, model->graph, NULL, threads, NULL,
                              run_mask, false, session_out, err);
}

void mb_session_free(mb_session *s) {
  if (!s)
    return;
  for (int i = 0; i < s->n_subs; i++) {
    mb_session_free(s->subs[i].session);
    free(s->subs[i].outputs);
  }
  free(s->subs);
  if (s->values)
    for (int v = 0; v < s->graph->n_values; v++)
      mb__tensor_clear(&s->values[v]);
  if (s->seqs)
    for (int v = 0; v < s->graph->n_values; v++)
      mb__sequence_free(&s->seqs[v]);
  for (int i = 0; i < MB_OP_SCRATCH_SLOTS; i++)
    mb__aligned_free(s->scratch[i]);
  if (s->owns_pool)
    mb__threadpool_free(s->pool);
  free(s->node_ms);
  free(s->defs);
  free(s->opsets);
  free(s->values);
  free(s->seqs);
  free(s->value_at);
  free(s->seq_at);
  free(s->io_ptrs);
  free(s->io_seqs);
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

static mb_status run_subgraph(mb_op_ctx *ctx, const mb_graph *body,
                              int n_inputs, const mb_op_value *inputs,
                              const mb_op_value **outputs_out,
                              int *n_outputs_out);

static void make_ctx(mb_session *s, int i, mb_error *err, mb_op_ctx *ctx) {
  const mb_node *n = &s->graph->nodes[i];
  memset(ctx, 0, sizeof *ctx);
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
  ctx->in_seqs = &s->io_seqs[s->io_start[i]];
  ctx->out_seqs = &s->io_seqs[s->io_start[i] + n->n_inputs];
  ctx->run_subgraph = run_subgraph;
  ctx->subgraph_user = s;
}

static mb_status alloc_outputs(mb_op_ctx *ctx, const mb_op_def *def) {
  if (def->flags & MB_OP_ALLOCATES)
    return MB_STATUS_OK;
  for (int j = 0; j < ctx->n_outputs; j++) {
    mb_tensor *t = ctx->outputs[j];
    if (!t || (ctx->out_seqs[j] && ctx->out_seqs[j]->kind != MB__KIND_TENSOR))
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

/* Operators without MB_OP_VALUES take tensors only. */
/* What every node must satisfy before its infer runs: its first output
 * exists unless the row says it is optional (infer and run write it
 * unchecked: a fuzzed Squeeze with outputs ["", "Y_h"] wrote through NULL),
 * and a tensor operator gets tensors. */
static mb_status check_input_kinds(mb_op_ctx *ctx, const mb_op_def *def) {
  if (!(def->flags & (MB_OP_OPTIONAL_FIRST_OUTPUT | MB_OP_ALLOCATES)) &&
      (ctx->n_outputs < 1 || ctx->node->outputs[0] < 0))
    return mb__op_error(ctx, MB_STATUS_PARSE,
                        "output 0 is required but the node omits it");
  if (def->flags & MB_OP_VALUES)
    return MB_STATUS_OK;
  for (int j = 0; j < ctx->n_inputs; j++) {
    mb__kind kind = mb__op_input_kind(ctx, j);
    if (ctx->inputs[j] && kind != MB__KIND_TENSOR)
      return mb__op_error(ctx, MB_STATUS_SHAPE,
                          "input %d ('%s') is a %s; this operator takes "
                          "tensors",
                          j, ctx->graph->values[ctx->node->inputs[j]].name,
                          kind == MB__KIND_NONE ? "empty optional"
                                                : mb__kind_name(kind));
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

/* Binds graph input value v to `in` (borrowed until the next bind). */
static mb_status bind_value(mb_session *s, int v, const mb_op_value *in,
                            bool check_shape, mb_error *err) {
  const mb_value *decl = &s->graph->values[v];
  mb__kind kind = in->seq ? in->seq->kind : MB__KIND_TENSOR;
  bool want_seq = decl->type == MB_VALUE_TYPE_SEQUENCE ||
                  decl->type == MB_VALUE_TYPE_OPTIONAL_SEQUENCE;
  bool optional = decl->type == MB_VALUE_TYPE_OPTIONAL_TENSOR ||
                  decl->type == MB_VALUE_TYPE_OPTIONAL_SEQUENCE;
  static const char *const type_names[] = {
      "a tensor", "a sequence", "an optional tensor", "an optional sequence"};
  if ((kind == MB__KIND_NONE && !optional) ||
      (kind == MB__KIND_SEQUENCE && !want_seq) ||
      (kind == MB__KIND_TENSOR && want_seq && check_shape))
    return mb__error(err, MB_STATUS_SHAPE, "input '%s' must be %s, got a %s",
                     decl->name, type_names[decl->type],
                     kind == MB__KIND_NONE ? "empty optional"
                                           : mb__kind_name(kind));
  mb__sequence_free(&s->seqs[v]);
  if (kind == MB__KIND_SEQUENCE) {
    mb__sequence_view(&s->seqs[v], in->seq);
    return MB_STATUS_OK;
  }
  if (kind == MB__KIND_NONE) {
    s->seqs[v].kind = MB__KIND_NONE;
    return MB_STATUS_OK;
  }
  if (check_shape) {
    mb_status status = check_input(decl, in->tensor, err);
    if (status)
      return status;
  } else if (!in->tensor || (decl->dtype != MB_DTYPE_UNDEFINED &&
                             in->tensor->dtype != decl->dtype)) {
    return mb__error(err, MB_STATUS_SHAPE, "input '%s' must be %s, got %s",
                     decl->name, mb_dtype_name(decl->dtype),
                     in->tensor ? mb_dtype_name(in->tensor->dtype) : "nothing");
  }
  tensor_view(&s->values[v], in->tensor);
  return MB_STATUS_OK;
}

mb_status mb__session_bind_inputs(mb_session *s, const mb_tensor *const *inputs,
                                  mb_error *err) {
  const mb_graph *g = s->graph;
  for (int i = 0; i < g->n_inputs; i++) {
    const mb_value *decl = &g->values[g->inputs[i]];
    if (decl->type != MB_VALUE_TYPE_TENSOR)
      return mb__error(err, MB_STATUS_UNSUPPORTED,
                       "input '%s' is a sequence or an optional; only tensor "
                       "inputs can be given here",
                       decl->name);
    mb_op_value in = {(mb_tensor *)inputs[i], NULL};
    mb_status status = bind_value(s, g->inputs[i], &in, true, err);
    if (status)
      return status;
  }
  /* sgemm runs on the session's pool (see blas.c). */
  mb__blas_set_threads(1);
  return MB_STATUS_OK;
}

mb_status mb__session_run_node(mb_session *s, int i, mb_error *err) {
  mb_op_ctx ctx;
  mb_status status;
  double t0 = s->node_ms ? mb__now() : 0.0;
  const mb_op_def *def = s->defs[i];
  if (!def) {
    char label[160];
    return mb__error(err, MB_STATUS_INTERNAL,
                     "%s: not prepared for the reference interpreter",
                     mb__node_label(&s->graph->nodes[i], label, sizeof label));
  }
  make_ctx(s, i, err, &ctx);
  if ((status = check_input_kinds(&ctx, def)))
    return status;
  status = def->infer(&ctx);
  if (status == MB_STATUS_DYNAMIC) /* all data is known at run time */
    status = mb__op_error(&ctx, MB_STATUS_INTERNAL,
                          "shape inference needs data that is missing");
  if (status)
    return node_failed(&ctx, status, "shape inference");
  if ((status = alloc_outputs(&ctx, def)))
    return status;
  if ((status = def->run(&ctx)))
    return node_failed(&ctx, status, "execution");
  if (s->node_ms)
    s->node_ms[i] += (mb__now() - t0) * 1e3;
  return MB_STATUS_OK;
}

static mb_status run_subgraph(mb_op_ctx *ctx, const mb_graph *body,
                              int n_inputs, const mb_op_value *inputs,
                              const mb_op_value **outputs_out,
                              int *n_outputs_out) {
  mb_session *s = ctx->subgraph_user;
  sub_session *sub = NULL;
  for (int i = 0; i < s->n_subs && !sub; i++)
    if (s->subs[i].graph == body)
      sub = &s->subs[i];
  if (!sub)
    return mb__op_error(ctx, MB_STATUS_INTERNAL, "subgraph '%s' has no session",
                        body->name);
  if (n_inputs != body->n_inputs)
    return mb__op_error(ctx, MB_STATUS_SHAPE,
                        "subgraph '%s' takes %d inputs, %d given", body->name,
                        body->n_inputs, n_inputs);
  mb_session *c = sub->session;
  mb_status status = MB_STATUS_OK;
  char label[160];
  for (int k = 0; k < n_inputs && !status; k++)
    status = bind_value(c, body->inputs[k], &inputs[k], false, ctx->err);
  for (int i = 0; i < body->n_nodes && !status; i++)
    status = mb__session_run_node(c, i, ctx->err);
  if (status)
    return mb__error_prefix(ctx->err, status, "%s, subgraph '%s'",
                            mb__node_label(ctx->node, label, sizeof label),
                            body->name);
  for (int k = 0; k < body->n_outputs; k++) {
    int v = body->outputs[k];
    sub->outputs[k].tensor = c->value_at[v];
    sub->outputs[k].seq = c->seq_at[v];
  }
  *outputs_out = sub->outputs;
  *n_outputs_out = body->n_outputs;
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

static mb_status run_nodes(mb_session *s, mb_error *err) {
  for (int i = 0; i < s->graph->n_nodes; i++) {
    mb_status status = mb__session_run_node(s, i, err);
    if (status)
      return status;
  }
  return MB_STATUS_OK;
}

mb_status mb__session_run_keep(mb_session *s, const mb_tensor *const *inputs,
                               mb_error *err) {
  mb_status status;
  mb_error local;
  if (!err)
    err = &local;
  err->message[0] = '\0';
  err->status = MB_STATUS_OK;
  if ((status = mb__session_bind_inputs(s, inputs, err)))
    return status;
  return run_nodes(s, err);
}

mb_status mb__session_run_values(mb_session *s, const mb_op_value *inputs,
                                 mb_error *err) {
  const mb_graph *g = s->graph;
  mb_status status;
  mb_error local;
  if (!err)
    err = &local;
  err->message[0] = '\0';
  err->status = MB_STATUS_OK;
  for (int i = 0; i < g->n_inputs; i++)
    if ((status = bind_value(s, g->inputs[i], &inputs[i], true, err)))
      return status;
  mb__blas_set_threads(1);
  return run_nodes(s, err);
}

mb_op_value mb__session_output_value(const mb_session *s, int index) {
  int v = s->graph->outputs[index];
  mb_op_value out = {s->value_at[v], s->seq_at[v]};
  return out;
}

const mb_tensor *mb__session_output(const mb_session *s, int index) {
  return s->value_at[s->graph->outputs[index]];
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
    const mb__sequence *seq = s->seq_at[g->outputs[i]];
    if (seq->kind != MB__KIND_TENSOR) {
      status =
          mb__error(err, MB_STATUS_UNSUPPORTED,
                    "output '%s' is a %s; only tensor outputs can be "
                    "returned",
                    g->values[g->outputs[i]].name,
                    seq->kind == MB__KIND_NONE ? "empty optional" : "sequence");
      goto fail;
    }
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

/* Appends the unsupported operators of g and its subgraphs to buf. */
static void unsupported_in(const mb_model *model, const mb_graph *g, char *buf,
                           size_t size, size_t *used, int *count) {
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    const mb_op_def *def;
    int64_t opset;
    for (int j = 0; j < n->n_attrs; j++) {
      const mb_attr *a = &n->attrs[j];
      if (a->type == MB_ATTR_GRAPH && a->g)
        unsupported_in(model, a->g, buf, size, used, count);
      for (int64_t k = 0; a->type == MB_ATTR_GRAPHS && k < a->n; k++)
        unsupported_in(model, a->graphs[k], buf, size, used, count);
    }
    if (resolve_node(model, n, &def, &opset, NULL) == MB_STATUS_OK)
      continue;
    char op[200];
    snprintf(op, sizeof op, "%s%s%s", n->domain, n->domain[0] ? ":" : "",
             n->op_type);
    /* Listed once: look for ", op," in ", <list>,". */
    char needle[210];
    snprintf(needle, sizeof needle, ", %s,", op);
    char *listed = malloc(*used + 4);
    if (listed) {
      snprintf(listed, *used + 4, ", %s,", buf);
      bool seen = strstr(listed, needle) != NULL;
      free(listed);
      if (seen)
        continue;
    }
    (*count)++;
    if (*used < size)
      *used += (size_t)snprintf(buf + *used, size - *used, "%s%s",
                                *count > 1 ? ", " : "", op);
  }
}

int mb_model_unsupported_ops(const mb_model *model, char *buf, size_t size) {
  int count = 0;
  size_t used = 0;
  if (size)
    buf[0] = '\0';
  unsupported_in(model, model->graph, buf, size, &used, &count);
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

/* What shape inference keeps per value while it walks the nodes. */
typedef struct infer_state {
  mb_session *s;      /* value storage and io pointers */
  bool *known;        /* the value's type and shape are known */
  bool *is_const;     /* it does not depend on the data of user inputs */
  mb_tensor **folded; /* clones of constant values, or NULL */
} infer_state;

/* Binds the inputs' shapes and data to the session's values; sequences
 * and optionals stay unknown. */
static mb_status bind_inference_inputs(infer_state *st,
                                       const mb_tensor *const *inputs,
                                       mb_error *err) {
  const mb_graph *g = st->s->graph;
  for (int i = 0; i < g->n_inputs; i++) {
    const mb_tensor *t = inputs[i];
    mb_tensor *dst = &st->s->values[g->inputs[i]];
    if (g->values[g->inputs[i]].type != MB_VALUE_TYPE_TENSOR)
      continue; /* sequences and optionals stay unknown */
    mb_status status =
        mb__tensor_set_shape(dst, t->dtype, t->rank, t->dims, err);
    if (status) {
      mb__error_prefix(err, status, "input '%s'", g->values[g->inputs[i]].name);
      return status;
    }
    dst->data = t->data;
    dst->capacity = 0;
    st->known[g->inputs[i]] = true;
  }
  return MB_STATUS_OK;
}

/* Computes node n's outputs (infer already set their shapes) when that
 * is cheap, marking them constant (and cloning them into st->folded) when
 * they are; otherwise drops what was allocated, leaving shapes only. */
static void fold_node(infer_state *st, mb_op_ctx *ctx, const mb_op_def *def,
                      const mb_node *n, bool have_data, bool all_const) {
  size_t out_bytes = 0;
  for (int j = 0; j < n->n_outputs; j++)
    if (ctx->outputs[j])
      out_bytes += ctx->outputs[j]->nbytes;
  bool fold = (have_data || (def->flags & MB_OP_SHAPE_ONLY)) &&
              out_bytes <= MB_FOLD_LIMIT_BYTES;
  if (fold && alloc_outputs(ctx, def) == MB_STATUS_OK &&
      def->run(ctx) == MB_STATUS_OK) {
    /* outputs now hold data; constant when the inputs were (or only
     * their shapes were read) */
    bool random = strncmp(n->op_type, "Random", 6) == 0 ||
                  strcmp(n->op_type, "Bernoulli") == 0 ||
                  strcmp(n->op_type, "Multinomial") == 0;
    bool constant = !random && (all_const || (def->flags & MB_OP_SHAPE_ONLY));
    for (int j = 0; j < n->n_outputs && constant; j++) {
      int v = n->outputs[j];
      if (v < 0)
        continue;
      st->is_const[v] = true;
      if (st->folded && !st->folded[v] &&
          st->s->seqs[v].kind == MB__KIND_TENSOR &&
          mb_tensor_clone(&st->s->values[v], &st->folded[v], NULL) !=
              MB_STATUS_OK)
        st->folded[v] = NULL; /* out of memory: just not folded */
    }
    return;
  }
  for (int j = 0; j < n->n_outputs; j++)
    if (ctx->outputs[j]) {
      mb_tensor *t = ctx->outputs[j];
      if (t->capacity)
        mb__aligned_free(t->data);
      t->data = NULL;
      t->capacity = 0;
      /* A sequence not computed is not known. */
      if (ctx->out_seqs[j]->kind != MB__KIND_TENSOR)
        mb__sequence_free(ctx->out_seqs[j]);
    }
}

/* Infers node i's output shapes when its inputs are known, and folds it
 * (fold_node). A node that cannot say (dynamic, unsupported) leaves its
 * outputs unknown; any other failure fails inference. */
static mb_status infer_node(infer_state *st, int i, mb_error *err) {
  mb_session *s = st->s;
  const mb_node *n = &s->graph->nodes[i];
  const mb_op_def *def = s->defs[i];
  mb_op_ctx ctx;
  mb_error local;
  /* Control flow's outputs come from running subgraphs, whose outer
   * values may be unknown here: leave them unknown. */
  bool inputs_known = def && !(def->flags & MB_OP_ALLOCATES);
  bool have_data = true, all_const = true;
  for (int j = 0; j < n->n_inputs && inputs_known; j++) {
    int v = n->inputs[j];
    if (v < 0)
      continue;
    if (!st->known[v])
      inputs_known = false;
    else if (s->values[v].numel > 0 && !s->values[v].data)
      have_data = false;
    all_const &= st->is_const[v];
  }
  if (!inputs_known)
    return MB_STATUS_OK;
  make_ctx(s, i, err, &ctx);
  local.message[0] = '\0';
  ctx.err = &local;
  mb_status status = check_input_kinds(&ctx, def);
  if (status == MB_STATUS_OK)
    status = def->infer(&ctx);
  if (status == MB_STATUS_DYNAMIC || status == MB_STATUS_UNSUPPORTED)
    return MB_STATUS_OK;
  if (status) {
    if (err)
      *err = local;
    node_failed(&ctx, status, "shape inference");
    return status;
  }
  fold_node(st, &ctx, def, n, have_data, all_const);
  /* Known: a tensor whose type infer set, or a computed sequence. */
  for (int j = 0; j < n->n_outputs; j++) {
    int v = n->outputs[j];
    if (v >= 0)
      st->known[v] = s->seqs[v].kind != MB__KIND_TENSOR ||
                     s->values[v].dtype != MB_DTYPE_UNDEFINED;
  }
  return MB_STATUS_OK;
}

mb_status mb__infer_shapes_fold(const mb_model *model,
                                const mb_tensor *const *inputs,
                                mb_shape_info *shapes_out,
                                mb_tensor **folded_out, mb_error *err) {
  const mb_graph *g = model->graph;
  mb_status status = MB_STATUS_OK;
  infer_state st = {
      .known = calloc((size_t)g->n_values + 1, sizeof(bool)),
      /* Values that do not depend on the data of user inputs:
       * initializers, outputs of shape-only ops on known shapes, and what
       * is computed from those alone. */
      .is_const = calloc((size_t)g->n_values + 1, sizeof(bool)),
      .folded = folded_out,
  };
  if (folded_out)
    for (int v = 0; v < g->n_values; v++)
      folded_out[v] = NULL;
  if (!st.known || !st.is_const) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot infer shapes");
    goto done;
  }
  /* A session gives us value storage and io pointers; nodes that do not
   * resolve are tolerated here (their outputs stay unknown). */
  status =
      session_create_graph(model, g, NULL, 1, NULL, NULL, true, &st.s, err);
  if (status)
    goto done;
  for (int v = 0; v < g->n_values; v++)
    if (g->values[v].initializer) {
      st.known[v] = true;
      st.is_const[v] = true;
    }
  if ((status = bind_inference_inputs(&st, inputs, err)))
    goto done;
  for (int i = 0; i < g->n_nodes; i++)
    if ((status = infer_node(&st, i, err)))
      goto done;
  for (int v = 0; v < g->n_values; v++) {
    mb_shape_info *si = &shapes_out[v];
    const mb_tensor *t = &st.s->values[v];
    memset(si, 0, sizeof *si);
    si->known = st.known[v] && st.s->seqs[v].kind == MB__KIND_TENSOR &&
                t->dtype != MB_DTYPE_UNDEFINED;
    if (si->known) {
      si->dtype = t->dtype;
      si->rank = t->rank;
      memcpy(si->dims, t->dims, sizeof si->dims);
    } else {
      si->rank = -1;
    }
  }
done:
  mb_session_free(st.s);
  free(st.known);
  free(st.is_const);
  if (status && folded_out)
    for (int v = 0; v < g->n_values; v++) {
      mb_tensor_free(folded_out[v]);
      folded_out[v] = NULL;
    }
  return status;
}
