/* Hybrid runtimes: one per native engine (MB_ENGINE_LIST). A model is cut
 * into segments: maximal runs of nodes the engine accepts, compiled once
 * by the engine for the benchmark's input shapes, with the reference
 * interpreter running every other node in between. So every model runs
 * under every CPU conversion, and `--no-fallback` turns the fallback into
 * an error that lists the nodes.
 *
 * The reference session is the value store: segment inputs are read from
 * it and segment outputs written into it (ONNX layout at every boundary).
 *
 * Constant folding: values that do not depend on input data (Constant
 * nodes, Shape -> Gather -> Concat chains for static shapes) are computed
 * once at prepare time; nodes producing only such values never run, and
 * engines see the values as constants (a Reshape's target shape).
 *
 * Partitioning: nodes are re-sorted topologically, preferring at each step
 * a ready node of the same kind (engine / reference) as the last one, so
 * independent branches (a Shape->Gather chain beside a Conv chain) do not
 * split segments needlessly. Graphs with subgraph-carrying nodes (If,
 * Loop) keep the loader's order, since their outer-scope reads are not
 * visible as inputs.
 *
 * Precision: a segment the engine cannot compile at the conversion's
 * reduced precision (XNNPACK without an fp16 operator for one of its
 * nodes, oneDNN without an int8 form) is compiled in fp32 instead, and one
 * it cannot compile at all runs on the reference interpreter; the profile
 * says which precision each segment ran at, with its FLOPs (flops.c's
 * per-node formulas, pure functions of the IR), so a report can
 * say "fp16 (83% of FLOPs)". With --no-fallback both are errors. */
#include "runtime/engine.h"

#include "runtime/flops.h"

#include <stdlib.h>

static const mb_engine *const engines[] = {
#define MB_X(name) &mb__engine_##name,
    MB_ENGINE_LIST(MB_X)
#undef MB_X
};

/* ---- the functions of an engine built without its library ---- */

#define UNBUILT "this engine was built without its library"

int mb__engine_unbuilt_node(const mb_engine_graph *eg, int node,
                            const mb_engine_options *options, char *reason,
                            size_t size) {
  (void)eg;
  (void)node;
  (void)options;
  if (reason && size)
    snprintf(reason, size, "%s", UNBUILT);
  return 0;
}

mb_status mb__engine_unbuilt_compile(const mb_segment_desc *segment,
                                     const mb_engine_options *options,
                                     void **compiled_out, mb_error *err) {
  (void)segment;
  (void)options;
  *compiled_out = NULL;
  return mb__error(err, MB_STATUS_UNAVAILABLE, "%s", UNBUILT);
}

mb_status mb__engine_unbuilt_run(void *compiled, const mb_tensor *const *inputs,
                                 mb_tensor *const *outputs, mb_error *err) {
  (void)compiled;
  (void)inputs;
  (void)outputs;
  return mb__error(err, MB_STATUS_UNAVAILABLE, "%s", UNBUILT);
}

void mb__engine_unbuilt_release(void *compiled) {
  (void)compiled;
}

const mb_engine *mb__engine_find(const char *name) {
  for (size_t i = 0; i < MB_ARRAY_COUNT(engines); i++)
    if (strcmp(engines[i]->name, name) == 0)
      return engines[i];
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* Analysis shared by prepare and mb_model_partition                         */
/* ------------------------------------------------------------------------ */

/* Static facts about the model for one set of input shapes. */
typedef struct hybrid_graph {
  mb_engine_graph eg;
  mb_shape_info *shapes;       /* per value */
  const mb_tensor **constants; /* per value: an initializer (borrowed) or
                                  a folded tensor (in folded) */
  mb_tensor **folded;          /* per value, owned: computed at prepare */
  bool *skip;                  /* per node: every output folded, never run */
  int n_order;                 /* nodes that run */
  bool *native;                /* per node: the engine runs it */
  bool *reduced;  /* per native node: at the conversion's reduced precision
                     (else fp32); all false at fp32 */
  char **reasons; /* per node: why not (malloc), or NULL */
  int *order;     /* execution order of node indices */
  int n_groups;
  struct hybrid_group *groups;
} hybrid_graph;

/* A run of consecutive steps in `order` on one side. */
typedef struct hybrid_group {
  bool native;
  bool reduced;     /* native, at the conversion's reduced precision */
  bool split;       /* made by splitting a group that failed to compile */
  int first, count; /* range in order[] */
} hybrid_group;

static void hybrid_graph_clear(hybrid_graph *hg, const mb_graph *g) {
  if (hg->reasons)
    for (int i = 0; i < g->n_nodes; i++)
      free(hg->reasons[i]);
  if (hg->folded)
    for (int v = 0; v < g->n_values; v++)
      mb_tensor_free(hg->folded[v]);
  free(hg->folded);
  free(hg->skip);
  free(hg->reasons);
  free(hg->shapes);
  free(hg->constants);
  free(hg->native);
  free(hg->reduced);
  free(hg->order);
  free(hg->groups);
  memset(hg, 0, sizeof *hg);
}

static bool value_known(const hybrid_graph *hg, int v) {
  return v < 0 || hg->shapes[v].known;
}

static bool has_subgraph(const mb_node *n) {
  for (int a = 0; a < n->n_attrs; a++)
    if (n->attrs[a].type == MB_ATTR_GRAPH || n->attrs[a].type == MB_ATTR_GRAPHS)
      return true;
  return false;
}

/* True when a subgraph of node n (at any depth) reads the enclosing
 * graph's value `name`: the node needs it though no input names it. */
static bool subgraph_reads(const mb_node *n, const char *name) {
  for (int a = 0; a < n->n_attrs; a++) {
    const mb_attr *at = &n->attrs[a];
    int64_t count = at->type == MB_ATTR_GRAPH && at->g ? 1
                    : at->type == MB_ATTR_GRAPHS       ? at->n
                                                       : 0;
    for (int64_t k = 0; k < count; k++) {
      const mb_graph *sub = at->type == MB_ATTR_GRAPH ? at->g : at->graphs[k];
      int v = mb__graph_find_value(sub, name);
      if (v >= 0 && sub->values[v].producer < 0 &&
          sub->values[v].kind == MB_VALUE_INTERMEDIATE &&
          !sub->values[v].initializer)
        return true;
      for (int i = 0; i < sub->n_nodes; i++)
        if (subgraph_reads(&sub->nodes[i], name))
          return true;
    }
  }
  return false;
}

/* Kahn's algorithm preferring the kind of the previous node (reference,
 * engine at reduced precision, engine in fp32); ties go to the lowest
 * index, so an all-one-kind graph keeps the loader's order. */
static mb_status order_nodes(const mb_graph *g, const bool *native,
                             const bool *reduced, const bool *skip, int *order,
                             int *n_order, mb_error *err) {
  int n = g->n_nodes;
  int *pending = calloc((size_t)n + 1, sizeof *pending);
  bool *done = calloc((size_t)n + 1, sizeof *done);
  mb_status status = MB_STATUS_OK;
  bool keep = false;
  if (!pending || !done) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot order nodes");
    goto done;
  }
  for (int i = 0; i < n && !keep; i++)
    keep = has_subgraph(&g->nodes[i]);
  *n_order = 0;
  if (keep) {
    for (int i = 0; i < n; i++)
      if (!skip[i])
        order[(*n_order)++] = i;
    goto done;
  }
  for (int i = 0; i < n; i++) {
    const mb_node *node = &g->nodes[i];
    for (int j = 0; j < node->n_inputs; j++) {
      int v = node->inputs[j];
      if (v >= 0 && g->values[v].producer >= 0)
        pending[i]++;
    }
  }
  /* Folded nodes never run: their outputs are there from the start. */
  int to_order = 0;
  for (int i = 0; i < n; i++)
    to_order += !skip[i];
  for (int i = 0; i < n; i++) {
    const mb_node *node = &g->nodes[i];
    for (int j = 0; j < node->n_inputs; j++) {
      int v = node->inputs[j];
      if (v >= 0 && g->values[v].producer >= 0 && skip[g->values[v].producer])
        pending[i]--;
    }
  }
#define KIND(i) ((native[i] ? 1 : 0) + (reduced[i] ? 2 : 0))
  int last_kind = 0;
  for (int i = 0; i < n; i++)
    if (!skip[i]) {
      last_kind = KIND(i);
      break;
    }
  for (int k = 0; k < to_order; k++) {
    int pick = -1, other = -1;
    for (int i = 0; i < n && pick < 0; i++) {
      if (skip[i] || done[i] || pending[i] > 0)
        continue;
      if (KIND(i) == last_kind)
        pick = i;
      else if (other < 0)
        other = i;
    }
    if (pick < 0)
      pick = other;
    if (pick < 0) {
      status = mb__error(err, MB_STATUS_INTERNAL,
                         "the graph has a cycle the loader did not catch");
      goto done;
    }
    order[k] = pick;
    *n_order = k + 1;
    done[pick] = true;
    last_kind = KIND(pick);
    /* Each input edge counted once per input slot, so release the same. */
    for (int i = 0; i < n; i++) {
      if (done[i])
        continue;
      const mb_node *node = &g->nodes[i];
      for (int j = 0; j < node->n_inputs; j++) {
        int v = node->inputs[j];
        if (v >= 0 && g->values[v].producer == pick)
          pending[i]--;
      }
    }
  }
#undef KIND
done:
  free(pending);
  free(done);
  return status;
}

static mb_status analyze(const mb_model *model, const mb_engine *engine,
                         const mb_engine_options *options,
                         const mb_tensor *const *inputs, hybrid_graph *hg,
                         mb_error *err) {
  const mb_graph *g = model->graph;
  mb_status status;
  size_t nv = (size_t)g->n_values + 1, nn = (size_t)g->n_nodes + 1;
  memset(hg, 0, sizeof *hg);
  hg->shapes = calloc(nv, sizeof *hg->shapes);
  hg->constants = calloc(nv, sizeof *hg->constants);
  hg->native = calloc(nn, sizeof *hg->native);
  hg->reduced = calloc(nn, sizeof *hg->reduced);
  hg->reasons = calloc(nn, sizeof *hg->reasons);
  hg->order = calloc(nn, sizeof *hg->order);
  hg->groups = calloc(nn, sizeof *hg->groups);
  hg->folded = calloc(nv, sizeof *hg->folded);
  hg->skip = calloc(nn, sizeof *hg->skip);
  if (!hg->shapes || !hg->constants || !hg->native || !hg->reduced ||
      !hg->reasons || !hg->order || !hg->groups || !hg->folded || !hg->skip) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "cannot allocate the partition");
    goto fail;
  }
  if ((status =
           mb__infer_shapes_fold(model, inputs, hg->shapes, hg->folded, err)))
    goto fail;
  for (int v = 0; v < g->n_values; v++)
    hg->constants[v] =
        g->values[v].initializer ? g->values[v].initializer : hg->folded[v];
  /* A node whose outputs are all folded (Constant, Shape -> Gather ->
   * Concat chains) never runs. Graph outputs are always computed. */
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    bool all = n->n_outputs > 0;
    for (int j = 0; j < n->n_outputs && all; j++) {
      int v = n->outputs[j];
      all = v < 0 || (hg->folded[v] && !g->values[v].is_output);
    }
    hg->skip[i] = all;
  }
  hg->eg.model = model;
  hg->eg.graph = g;
  hg->eg.shapes = hg->shapes;
  hg->eg.constants = hg->constants;

  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    char reason[256] = "", label[160];
    bool known = true;
    for (int j = 0; j < n->n_inputs; j++)
      known &= value_known(hg, n->inputs[j]);
    for (int j = 0; j < n->n_outputs; j++)
      known &= value_known(hg, n->outputs[j]);
    if (hg->skip[i])
      continue;
    if (!known)
      snprintf(reason, sizeof reason,
               "its shapes depend on data known only at run time");
    else if (engine->supports_node(&hg->eg, i, options, reason, sizeof reason))
      hg->native[i] = true;
    hg->reduced[i] = hg->native[i] && options->precision != MB_PRECISION_FP32;
    if (!hg->native[i]) {
      size_t size = strlen(reason) + 200;
      if (!(hg->reasons[i] = malloc(size))) {
        status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                           "cannot allocate the partition");
        goto fail;
      }
      snprintf(hg->reasons[i], size, "%s: %s",
               mb__node_label(n, label, sizeof label),
               reason[0] ? reason : "not supported");
    }
  }
  if ((status = order_nodes(g, hg->native, hg->reduced, hg->skip, hg->order,
                            &hg->n_order, err)))
    goto fail;
  for (int k = 0; k < hg->n_order; k++) {
    bool nat = hg->native[hg->order[k]], red = hg->reduced[hg->order[k]];
    if (hg->n_groups == 0 || hg->groups[hg->n_groups - 1].native != nat ||
        hg->groups[hg->n_groups - 1].reduced != red)
      hg->groups[hg->n_groups++] = (hybrid_group){nat, red, false, k, 0};
    hg->groups[hg->n_groups - 1].count++;
  }
  return MB_STATUS_OK;
fail:
  hybrid_graph_clear(hg, g);
  return status;
}

/* ------------------------------------------------------------------------ */
/* The runtime                                                               */
/* ------------------------------------------------------------------------ */

typedef struct hybrid_segment {
  mb_segment_desc desc;
  int *nodes, *inputs, *outputs; /* owned arrays behind desc */
  void *compiled;
  mb_precision precision; /* what it was compiled for */
  const mb_tensor **in;   /* per run: session values */
  mb_tensor **out;
} hybrid_segment;

typedef struct hybrid_session {
  const mb_engine *engine;
  const mb_model *model;
  mb_engine_options options;
  hybrid_graph hg;
  mb_session *ref;
  int n_segments;
  hybrid_segment *segments; /* one per native group, in group order */
  int profile_level;
  int64_t profile_runs;
  double *group_ms;    /* per group, summed while profiling */
  double *group_flops; /* per group, one inference (unknown counts 0) */
  /* Why the first segment that fell back (to fp32 or the reference) did,
   * for the profile's note; "" when none did. */
  char fallback_note[256];
} hybrid_session;

static void segment_free(hybrid_session *hs, hybrid_segment *seg) {
  if (seg->compiled)
    hs->engine->release(seg->compiled);
  free(seg->nodes);
  free(seg->inputs);
  free(seg->outputs);
  free(seg->in);
  free(seg->out);
  memset(seg, 0, sizeof *seg);
}

static void hybrid_release(void *session) {
  hybrid_session *hs = session;
  if (!hs)
    return;
  for (int i = 0; i < hs->n_segments; i++)
    segment_free(hs, &hs->segments[i]);
  free(hs->segments);
  free(hs->group_ms);
  free(hs->group_flops);
  mb_session_free(hs->ref);
  hybrid_graph_clear(&hs->hg, hs->model->graph);
  free(hs);
}

/* Fills a segment's node, input and output lists from group `gi`. */
static mb_status describe_segment(hybrid_session *hs, int gi,
                                  hybrid_segment *seg, mb_error *err) {
  const mb_graph *g = hs->model->graph;
  const hybrid_group *grp = &hs->hg.groups[gi];
  int *inside = NULL; /* per node: 1 when in this segment */
  int cap_in = 0, cap_out = 0;
  mb_status status = MB_STATUS_OK;
  inside = calloc((size_t)g->n_nodes + 1, sizeof *inside);
  seg->nodes = malloc(((size_t)grp->count + 1) * sizeof *seg->nodes);
  if (!inside || !seg->nodes)
    goto oom;
  for (int k = 0; k < grp->count; k++) {
    int node = hs->hg.order[grp->first + k];
    seg->nodes[k] = node;
    inside[node] = 1;
    cap_in += g->nodes[node].n_inputs;
    cap_out += g->nodes[node].n_outputs;
  }
  seg->inputs = malloc(((size_t)cap_in + 1) * sizeof *seg->inputs);
  seg->outputs = malloc(((size_t)cap_out + 1) * sizeof *seg->outputs);
  if (!seg->inputs || !seg->outputs)
    goto oom;
  seg->desc.eg = &hs->hg.eg;
  seg->desc.n_nodes = grp->count;
  seg->desc.nodes = seg->nodes;
  for (int k = 0; k < grp->count; k++) {
    const mb_node *n = &g->nodes[seg->nodes[k]];
    for (int j = 0; j < n->n_inputs; j++) {
      int v = n->inputs[j], p;
      if (v < 0 || hs->hg.constants[v])
        continue;
      p = g->values[v].producer;
      if (p >= 0 && inside[p])
        continue;
      bool seen = false;
      for (int q = 0; q < seg->desc.n_inputs && !seen; q++)
        seen = seg->inputs[q] == v;
      if (!seen)
        seg->inputs[seg->desc.n_inputs++] = v;
    }
    for (int j = 0; j < n->n_outputs; j++) {
      int v = n->outputs[j];
      bool used_outside = v >= 0 && g->values[v].is_output;
      for (int m = 0; v >= 0 && m < g->n_nodes && !used_outside; m++) {
        /* Folded nodes (a Shape of a static tensor) never run: what they
         * read need not leave the segment. */
        if (inside[m] || hs->hg.skip[m])
          continue;
        for (int q = 0; q < g->nodes[m].n_inputs && !used_outside; q++)
          used_outside = g->nodes[m].inputs[q] == v;
        used_outside =
            used_outside || subgraph_reads(&g->nodes[m], g->values[v].name);
      }
      if (used_outside)
        seg->outputs[seg->desc.n_outputs++] = v;
    }
  }
  seg->desc.inputs = seg->inputs;
  seg->desc.outputs = seg->outputs;
  seg->in = calloc((size_t)seg->desc.n_inputs + 1, sizeof *seg->in);
  seg->out = calloc((size_t)seg->desc.n_outputs + 1, sizeof *seg->out);
  if (!seg->in || !seg->out)
    goto oom;
  goto done;
oom:
  status =
      mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot allocate segment %d", gi);
done:
  free(inside);
  return status;
}

/* Compiles seg at the session's precision, else (a reduced precision the
 * engine cannot give this segment, and fallback allowed) in fp32. */
static mb_status compile_segment(hybrid_session *hs, hybrid_segment *seg,
                                 bool reduced, bool no_fallback,
                                 mb_error *err) {
  mb_engine_options options = hs->options;
  if (!reduced) { /* nodes the engine runs only in fp32 */
    options.precision = MB_PRECISION_FP32;
    options.quant = NULL;
  }
  seg->precision = options.precision;
  mb_status status =
      hs->engine->compile(&seg->desc, &options, &seg->compiled, err);
  if (status != MB_STATUS_UNSUPPORTED || no_fallback ||
      options.precision == MB_PRECISION_FP32)
    return status;
  seg->compiled = NULL;
  mb__log(MB_LOG_INFO, "%s segment %d (%d nodes) runs in fp32: %s",
          hs->engine->name, hs->n_segments, seg->desc.n_nodes, err->message);
  if (!hs->fallback_note[0])
    snprintf(hs->fallback_note, sizeof hs->fallback_note,
             "segment %d (%d nodes) ran in fp32: %.200s", hs->n_segments,
             seg->desc.n_nodes, err->message);
  options.precision = MB_PRECISION_FP32;
  options.quant = NULL;
  seg->precision = MB_PRECISION_FP32;
  err->status = MB_STATUS_OK;
  err->message[0] = '\0';
  status = hs->engine->compile(&seg->desc, &options, &seg->compiled, err);
  if (status)
    seg->compiled = NULL;
  return status;
}

/* Cuts native group gi into runs of nodes the engine does and does not
 * run at the reduced precision (engine->node_precision), in place; returns
 * how many groups it became (1: left whole). */
static int split_group(hybrid_session *hs, int gi) {
  hybrid_graph *hg = &hs->hg;
  hybrid_group whole = hg->groups[gi];
  hybrid_group *parts = calloc((size_t)whole.count, sizeof *parts);
  int n = 0;
  hg->groups[gi].split = true;
  if (!parts)
    return 1; /* out of memory: left whole (it will run in fp32) */
  for (int k = 0; k < whole.count; k++) {
    int node = hg->order[whole.first + k];
    bool red = hs->engine->node_precision(&hg->eg, node, &hs->options) != 0;
    if (n == 0 || parts[n - 1].reduced != red)
      parts[n++] = (hybrid_group){true, red, true, whole.first + k, 0};
    parts[n - 1].count++;
  }
  if (n < 2) {
    free(parts);
    return 1;
  }
  memmove(&hg->groups[gi + n], &hg->groups[gi + 1],
          sizeof *hg->groups * (size_t)(hg->n_groups - gi - 1));
  memcpy(&hg->groups[gi], parts, sizeof *parts * (size_t)n);
  hg->n_groups += n - 1;
  for (int p = 0; p < n; p++)
    for (int k = 0; k < parts[p].count; k++)
      hg->reduced[hg->order[parts[p].first + k]] = parts[p].reduced;
  free(parts);
  return n;
}

static mb_status unsupported_error(const hybrid_graph *hg, const mb_graph *g,
                                   const char *engine, int count,
                                   mb_error *err) {
  char list[MB_ERROR_MESSAGE_SIZE];
  size_t used = 0;
  int shown = 0;
  list[0] = '\0';
  for (int i = 0; i < g->n_nodes && used < sizeof list; i++) {
    if (hg->native[i] || hg->skip[i] || !hg->reasons[i])
      continue;
    if (shown == 4) {
      used += (size_t)snprintf(list + used, sizeof list - used, "; and %d more",
                               count - shown);
      break;
    }
    used += (size_t)snprintf(list + used, sizeof list - used, "%s%s",
                             shown ? "; " : "", hg->reasons[i]);
    shown++;
  }
  return mb__error(err, MB_STATUS_UNSUPPORTED,
                   "%d node%s cannot run on %s and fallback is off: %s", count,
                   count == 1 ? "" : "s", engine, list);
}

/* Refuses what prepare cannot compile for: no example inputs, a precision
 * the engine cannot compute in, int8 without quantisation parameters. */
static mb_status check_prepare_options(const mb_engine *engine,
                                       const mb_runtime_options *options,
                                       mb_error *err) {
  char reason[256] = "";
  if (!options || !options->example_inputs)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "%s compiles for concrete input shapes; none were given",
                     engine->name);
  if (!engine->supports_precision(options->precision, reason, sizeof reason))
    return mb__error(err, MB_STATUS_UNSUPPORTED, "%s cannot compute in %s: %s",
                     engine->name, mb_precision_name(options->precision),
                     reason[0] ? reason : "not supported");
  if (options->precision == MB_PRECISION_INT8 && !options->quant_params)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "%s in int8 needs quantisation parameters (a conversion "
                     "with the quant_params step calibrates them)",
                     engine->name);
  return MB_STATUS_OK;
}

/* Group gi's segment (the last one made) compiled in no form: it is
 * dropped and its nodes run on the reference interpreter. */
static void segment_to_reference(hybrid_session *hs, int gi,
                                 hybrid_segment *seg, mb_error *err) {
  hybrid_group *grp = &hs->hg.groups[gi];
  mb__log(MB_LOG_INFO,
          "%s segment %d (%d nodes) runs on the reference interpreter: "
          "%s",
          hs->engine->name, hs->n_segments, seg->desc.n_nodes, err->message);
  snprintf(hs->fallback_note, sizeof hs->fallback_note,
           "segment %d (%d nodes) ran on the reference interpreter: "
           "%.180s",
           hs->n_segments, seg->desc.n_nodes, err->message);
  segment_free(hs, seg);
  hs->n_segments--;
  grp->native = grp->reduced = false;
  for (int k = 0; k < grp->count; k++)
    hs->hg.native[hs->hg.order[grp->first + k]] = false;
  err->status = MB_STATUS_OK;
  err->message[0] = '\0';
}

/* Describes and compiles a segment per native group. A reduced-precision
 * segment that fails is cut where the engine runs nodes only in fp32 and
 * retried in parts, else compiled in fp32; one that fails even then joins
 * the reference side, unless no_fallback. */
static mb_status compile_segments(hybrid_session *hs, bool no_fallback,
                                  mb_error *err) {
  const mb_engine *engine = hs->engine;
  mb_status status = MB_STATUS_OK;
  for (int gi = 0; gi < hs->hg.n_groups; gi++) {
    hybrid_group *grp = &hs->hg.groups[gi];
    if (!grp->native)
      continue;
    hybrid_segment *seg = &hs->segments[hs->n_segments];
    if ((status = describe_segment(hs, gi, seg, err)))
      return status;
    hs->n_segments++;
    /* A reduced-precision segment that fails is cut where the engine runs
     * nodes only in fp32, when it can say which, and retried in parts. */
    bool may_split =
        grp->reduced && !grp->split && !no_fallback && engine->node_precision;
    status =
        compile_segment(hs, seg, grp->reduced, no_fallback || may_split, err);
    if (status == MB_STATUS_UNSUPPORTED && may_split &&
        split_group(hs, gi) > 1) {
      mb__log(MB_LOG_INFO,
              "%s segment %d (%d nodes) is cut at its nodes without %s: %s",
              engine->name, hs->n_segments, seg->desc.n_nodes,
              mb_precision_name(hs->options.precision), err->message);
      if (!hs->fallback_note[0])
        snprintf(hs->fallback_note, sizeof hs->fallback_note,
                 "nodes without %s run in fp32 segments: %.200s",
                 mb_precision_name(hs->options.precision), err->message);
      segment_free(hs, seg);
      hs->n_segments--;
      err->status = MB_STATUS_OK;
      err->message[0] = '\0';
      gi--; /* compile its first part next */
      continue;
    }
    if (status == MB_STATUS_UNSUPPORTED && may_split) /* nothing to cut */
      status = compile_segment(hs, seg, true, false, err);
    if (status == MB_STATUS_UNSUPPORTED && !no_fallback) {
      /* Not even in fp32: these nodes run on the reference interpreter. */
      segment_to_reference(hs, gi, seg, err);
      status = MB_STATUS_OK;
      continue;
    }
    if (status) {
      mb__error_prefix(err, status, "%s segment %d (%d nodes)", engine->name,
                       hs->n_segments, seg->desc.n_nodes);
      return status;
    }
  }
  return status;
}

/* The FLOPs of each group (hs->group_flops), for per-segment reports. */
static void count_group_flops(hybrid_session *hs) {
  const mb_graph *g = hs->model->graph;
  for (int gi = 0; gi < hs->hg.n_groups; gi++) {
    const hybrid_group *grp = &hs->hg.groups[gi];
    for (int k = 0; k < grp->count; k++) {
      bool formula;
      double f = mb__node_flops(g, &g->nodes[hs->hg.order[grp->first + k]],
                                hs->hg.shapes, &formula);
      hs->group_flops[gi] += f > 0 ? f : 0.0;
    }
  }
}

/* Creates the reference session (hs->ref), masked to the nodes that run
 * neither in a segment nor folded; it holds every value, folded ones as
 * views of the analysis's tensors. */
static mb_status create_reference(hybrid_session *hs, mb_error *err) {
  const mb_graph *g = hs->model->graph;
  bool *ref_mask = calloc((size_t)g->n_nodes + 1, sizeof *ref_mask);
  if (!ref_mask)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot allocate session");
  for (int i = 0; i < g->n_nodes; i++)
    ref_mask[i] = !hs->hg.native[i] && !hs->hg.skip[i];
  mb_session_options ropts = {hs->options.threads};
  mb_status status =
      mb__session_create_masked(hs->model, &ropts, ref_mask, &hs->ref, err);
  free(ref_mask);
  if (status)
    return status;
  /* Folded values are read in place (views; the session frees nothing). */
  for (int v = 0; v < g->n_values; v++)
    if (hs->hg.folded[v]) {
      mb_tensor *t = mb__session_value(hs->ref, v);
      *t = *hs->hg.folded[v];
      t->capacity = 0;
      t->name = NULL;
    }
  return MB_STATUS_OK;
}

static mb_status hybrid_prepare(const mb_engine *engine, const mb_model *model,
                                const mb_runtime_options *options,
                                void **session_out, mb_error *err) {
  const mb_graph *g = model->graph;
  hybrid_session *hs = NULL;
  mb_status status;
  mb_error local = {0};
  if (!err) /* a segment's failure is read back below */
    err = &local;
  if ((status = check_prepare_options(engine, options, err)))
    return status;
  if (!(hs = calloc(1, sizeof *hs)))
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot allocate session");
  hs->engine = engine;
  hs->model = model;
  hs->options.threads = MB_MAX(options->threads, 1);
  hs->options.precision = options->precision;
  hs->options.profile = options->profile;
  hs->options.quant = options->quant_params;
  if ((status = analyze(model, engine, &hs->options, options->example_inputs,
                        &hs->hg, err)))
    goto fail;
  int fallback = 0;
  for (int i = 0; i < g->n_nodes; i++)
    fallback += !hs->hg.native[i] && !hs->hg.skip[i];
  if (options->no_fallback && fallback > 0) {
    status = unsupported_error(&hs->hg, g, engine->name, fallback, err);
    goto fail;
  }
  /* Splitting may add groups: room for one per node. */
  size_t max_groups = (size_t)g->n_nodes + 1;
  if (!(hs->group_ms = calloc(max_groups, sizeof *hs->group_ms)) ||
      !(hs->group_flops = calloc(max_groups, sizeof *hs->group_flops)) ||
      !(hs->segments = calloc(max_groups, sizeof *hs->segments))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot allocate session");
    goto fail;
  }
  /* Segments first: one that cannot be compiled may join the reference
   * side, whose session is made for the nodes it ends up with. */
  bool log_compile = options->verbose && engine->log_compile;
  if (log_compile)
    engine->log_compile(1);
  status = compile_segments(hs, options->no_fallback, err);
  if (log_compile)
    engine->log_compile(0);
  if (status)
    goto fail;
  count_group_flops(hs);
  if ((status = create_reference(hs, err)))
    goto fail;
  *session_out = hs;
  return MB_STATUS_OK;
fail:
  hybrid_release(hs);
  return status;
}

static mb_status run_segment(hybrid_session *hs, hybrid_segment *seg,
                             mb_error *err) {
  const mb_shape_info *shapes = hs->hg.shapes;
  mb_status status;
  for (int k = 0; k < seg->desc.n_inputs; k++)
    seg->in[k] = mb__session_value(hs->ref, seg->inputs[k]);
  for (int k = 0; k < seg->desc.n_outputs; k++) {
    const mb_shape_info *si = &shapes[seg->outputs[k]];
    mb_tensor *t = mb__session_value(hs->ref, seg->outputs[k]);
    if ((status = mb__tensor_reset(t, si->dtype, si->rank, si->dims, err)))
      return mb__error_prefix(err, status, "output '%s' of a %s segment",
                              hs->model->graph->values[seg->outputs[k]].name,
                              hs->engine->name);
    seg->out[k] = t;
  }
  return hs->engine->run(seg->compiled, seg->in, seg->out, err);
}

static mb_status hybrid_run(void *session, const mb_tensor *const *inputs,
                            mb_error *err) {
  hybrid_session *hs = session;
  mb_status status;
  int si = 0;
  if ((status = mb__session_bind_inputs(hs->ref, inputs, err)))
    return status;
  for (int gi = 0; gi < hs->hg.n_groups; gi++) {
    const hybrid_group *grp = &hs->hg.groups[gi];
    double t0 = hs->profile_level ? mb__now() : 0.0;
    if (grp->native) {
      if ((status = run_segment(hs, &hs->segments[si++], err)))
        return status;
    } else {
      for (int k = 0; k < grp->count; k++)
        if ((status = mb__session_run_node(hs->ref,
                                           hs->hg.order[grp->first + k], err)))
          return status;
    }
    if (hs->profile_level)
      hs->group_ms[gi] += (mb__now() - t0) * 1e3;
  }
  if (hs->profile_level)
    hs->profile_runs++;
  return MB_STATUS_OK;
}

static mb_status hybrid_fetch_outputs(void *session, mb_tensor **outputs_out,
                                      mb_error *err) {
  hybrid_session *hs = session;
  int n = hs->model->graph->n_outputs;
  for (int i = 0; i < n; i++)
    outputs_out[i] = NULL;
  for (int i = 0; i < n; i++) {
    mb_status status =
        mb_tensor_clone(mb__session_output(hs->ref, i), &outputs_out[i], err);
    if (status) {
      for (int j = 0; j < i; j++) {
        mb_tensor_free(outputs_out[j]);
        outputs_out[j] = NULL;
      }
      return status;
    }
  }
  return MB_STATUS_OK;
}

static void hybrid_profile_reset(void *session, int level) {
  hybrid_session *hs = session;
  hs->profile_level = level;
  hs->profile_runs = 0;
  memset(hs->group_ms, 0, (size_t)hs->hg.n_groups * sizeof *hs->group_ms);
  /* The engine's per-node times restart too: until then they held the
   * warm-up, whose first run compiles each primitive. */
  for (int gi = 0, si = 0; gi < hs->hg.n_groups; gi++) {
    if (!hs->hg.groups[gi].native)
      continue;
    void *compiled = hs->segments[si++].compiled;
    if (hs->engine->node_profile_reset)
      hs->engine->node_profile_reset(compiled);
  }
  mb__session_set_profiling(hs->ref, level >= 2, NULL);
}

#define MB_MAX_PRIMITIVES 4096

static mb_status hybrid_profile_collect(void *session, mb_profile *out,
                                        mb_error *err) {
  hybrid_session *hs = session;
  const mb_graph *g = hs->model->graph;
  const double *node_ms = mb__session_node_ms(hs->ref);
  mb_engine_node_time *prims = NULL;
  mb_status status = MB_STATUS_OK;
  char label[160];
  int si = 0;
  for (int gi = 0; gi < hs->hg.n_groups; gi++) {
    const hybrid_group *grp = &hs->hg.groups[gi];
    const mb_node *first = &g->nodes[hs->hg.order[grp->first]];
    if ((status = mb__profile_add_segment(
             out, grp->native ? hs->engine->name : "reference", grp->count,
             mb__node_label(first, label, sizeof label), hs->profile_runs,
             hs->group_ms[gi], err)))
      goto done;
    /* The reference side computes the float32 model. */
    mb_profile_segment *ps = &out->segments[out->n_segments - 1];
    snprintf(ps->precision, sizeof ps->precision, "%s",
             mb_precision_name(grp->native ? hs->segments[si++].precision
                                           : MB_PRECISION_FP32));
    ps->gflops = hs->group_flops[gi] * 1e-9;
  }
  si = 0;
  if (hs->fallback_note[0] && !out->note[0])
    snprintf(out->note, sizeof out->note, "%s", hs->fallback_note);
  if (hs->profile_level < 2)
    goto done;
  for (int gi = 0; gi < hs->hg.n_groups; gi++) {
    const hybrid_group *grp = &hs->hg.groups[gi];
    if (grp->native) {
      hybrid_segment *seg = &hs->segments[si++];
      int n = 0;
      if (!hs->engine->node_profile) {
        snprintf(out->note, sizeof out->note,
                 "%s reports no per-operator times in this version; its "
                 "segments are timed as a whole",
                 hs->engine->name);
        continue;
      }
      if (!prims && !(prims = calloc(MB_MAX_PRIMITIVES, sizeof *prims))) {
        status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                           "cannot allocate the profile");
        goto done;
      }
      n = MB_MIN(
          hs->engine->node_profile(seg->compiled, prims, MB_MAX_PRIMITIVES),
          MB_MAX_PRIMITIVES);
      for (int k = 0; k < n; k++)
        if ((status = mb__profile_add_node(
                 out, hs->engine->name, prims[k].op_type, prims[k].name,
                 prims[k].kernel, prims[k].runs, prims[k].total_ms, err)))
          goto done;
      if (!hs->options.profile)
        snprintf(out->note, sizeof out->note,
                 "prepared without per-primitive profiling");
    } else if (node_ms) {
      for (int k = 0; k < grp->count; k++) {
        const mb_node *n = &g->nodes[hs->hg.order[grp->first + k]];
        if ((status = mb__profile_add_node(
                 out, "reference", n->op_type, n->name, NULL, hs->profile_runs,
                 node_ms[hs->hg.order[grp->first + k]], err)))
          goto done;
      }
    }
  }
done:
  free(prims);
  return status;
}

static void hybrid_probe(const mb_engine *engine, mb_runtime_info *info) {
  engine->probe(info);
}

static mb_int8_weights hybrid_int8_weights(const mb_engine *engine,
                                           char *reason, size_t size) {
  if (engine->int8_weights)
    return engine->int8_weights(reason, size);
  if (reason && size)
    snprintf(reason, size, "%s's int8 products cannot saturate", engine->name);
  return MB_INT8_WEIGHTS_W8;
}

/* One mb_runtime per engine: thin trampolines carrying the engine. */
#define MB_X(eng)                                                              \
  static void probe_##eng(mb_runtime_info *info) {                             \
    hybrid_probe(&mb__engine_##eng, info);                                     \
  }                                                                            \
  static mb_status prepare_##eng(                                              \
      const mb_model *model, const void *bytes, size_t size,                   \
      const mb_runtime_options *options, void **session_out, mb_error *err) {  \
    (void)bytes;                                                               \
    (void)size;                                                                \
    return hybrid_prepare(&mb__engine_##eng, model, options, session_out,      \
                          err);                                                \
  }                                                                            \
  static mb_int8_weights int8_weights_##eng(char *reason, size_t size) {       \
    return hybrid_int8_weights(&mb__engine_##eng, reason, size);               \
  }                                                                            \
  const mb_runtime mb__runtime_##eng = {                                       \
      .name = #eng,                                                            \
      .hybrid = 1,                                                             \
      .int8_weights = int8_weights_##eng,                                      \
      .probe = probe_##eng,                                                    \
      .prepare = prepare_##eng,                                                \
      .run = hybrid_run,                                                       \
      .fetch_outputs = hybrid_fetch_outputs,                                   \
      .release = hybrid_release,                                               \
      .profile_reset = hybrid_profile_reset,                                   \
      .profile_collect = hybrid_profile_collect,                               \
  };
MB_ENGINE_LIST(MB_X)
#undef MB_X

/* ------------------------------------------------------------------------ */
/* mb_model_partition                                                        */
/* ------------------------------------------------------------------------ */

void mb_partition_free(mb_partition *p) {
  if (!p)
    return;
  for (int i = 0; i < p->n_unsupported; i++)
    free(p->unsupported[i]);
  free(p->unsupported);
  free(p->segments);
  free(p);
}

mb_status mb_model_partition(const mb_model *model, const char *runtime,
                             mb_precision precision, const mb_shape_spec *spec,
                             mb_partition **partition_out, mb_error *err) {
  const mb_engine *engine = runtime ? mb__engine_find(runtime) : NULL;
  const mb_graph *g;
  int n_inputs;
  mb_tensor **inputs = NULL;
  mb_input_shape *shapes = NULL;
  mb_partition *p = NULL;
  hybrid_graph hg;
  mb_status status;
  mb_runtime_info info;
  char reason[256] = "";
  memset(&hg, 0, sizeof hg);
  *partition_out = NULL;
  if (!model)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT, "no model");
  g = model->graph;
  if (!engine) {
    char names[128] = "";
    size_t used = 0;
    for (size_t i = 0; i < MB_ARRAY_COUNT(engines) && used < sizeof names; i++)
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                               i ? ", " : "", engines[i]->name);
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "'%s' is not a hybrid runtime (those are: %s)",
                     runtime ? runtime : "(null)", names);
  }
  memset(&info, 0, sizeof info);
  info.name = engine->name;
  engine->probe(&info);
  if (!info.available)
    return mb__error(err, MB_STATUS_UNSUPPORTED, "%s is not available: %s",
                     engine->name, info.reason);
  if (!engine->supports_precision(precision, reason, sizeof reason))
    return mb__error(err, MB_STATUS_UNSUPPORTED, "%s cannot compute in %s: %s",
                     engine->name, mb_precision_name(precision), reason);
  n_inputs = mb_model_input_count(model);
  shapes = calloc((size_t)n_inputs + 1, sizeof *shapes);
  inputs = calloc((size_t)n_inputs + 1, sizeof *inputs);
  if (!shapes || !inputs) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot partition");
    goto done;
  }
  if ((status = mb_model_resolve_input_shapes(model, spec, shapes, err)))
    goto done;
  /* Shapes only: inference never reads the data of user inputs except for
   * value-dependent shapes, which then stay unknown and fall back. */
  for (int i = 0; i < n_inputs; i++) {
    const mb_value *decl = &g->values[g->inputs[i]];
    if (!(inputs[i] = calloc(1, sizeof *inputs[i]))) {
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot partition");
      goto done;
    }
    if ((status = mb__tensor_set_shape(inputs[i], decl->dtype, shapes[i].rank,
                                       shapes[i].dims, err)))
      goto done;
  }
  {
    mb_engine_options options = {1, precision, 0};
    if ((status = analyze(model, engine, &options,
                          (const mb_tensor *const *)inputs, &hg, err)))
      goto done;
  }
  if (!(p = calloc(1, sizeof *p)) ||
      !(p->segments = calloc((size_t)hg.n_groups + 1, sizeof *p->segments)) ||
      !(p->unsupported =
            calloc((size_t)g->n_nodes + 1, sizeof *p->unsupported))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot partition");
    goto done;
  }
  snprintf(p->runtime, sizeof p->runtime, "%s", engine->name);
  p->n_nodes = g->n_nodes;
  p->n_folded = g->n_nodes - hg.n_order;
  for (int gi = 0; gi < hg.n_groups; gi++) {
    const hybrid_group *grp = &hg.groups[gi];
    mb_partition_segment *seg = &p->segments[p->n_segments++];
    snprintf(seg->runtime, sizeof seg->runtime, "%s",
             grp->native ? engine->name : "reference");
    seg->n_nodes = grp->count;
    mb__node_label(&g->nodes[hg.order[grp->first]], seg->first_node,
                   sizeof seg->first_node);
    mb__node_label(&g->nodes[hg.order[grp->first + grp->count - 1]],
                   seg->last_node, sizeof seg->last_node);
    if (grp->native)
      p->n_native_nodes += grp->count;
  }
  for (int k = 0; k < hg.n_order; k++) {
    int i = hg.order[k];
    if (!hg.native[i] && hg.reasons[i]) {
      p->unsupported[p->n_unsupported++] = hg.reasons[i];
      hg.reasons[i] = NULL;
    }
  }
  *partition_out = p;
  p = NULL;
  status = MB_STATUS_OK;
done:
  if (g)
    hybrid_graph_clear(&hg, g);
  mb_partition_free(p);
  for (int i = 0; inputs && i < n_inputs; i++)
    mb_tensor_free(inputs[i]);
  free(inputs);
  free(shapes);
  return status;
}
