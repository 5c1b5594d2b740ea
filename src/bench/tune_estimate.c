/* modelbench tune: the accuracy of an int8 model with chosen nodes kept in
 * float, estimated on the reference interpreter (tune_internal.h).
 *
 * The float model is optimised ("optimize", the passes every int8 row runs
 * first) and, for static quantisation, calibrated once on the batches
 * bench's build calibrates on; each estimate then quantises a copy of the
 * optimised model with a copy of the calibration, excluding the kept
 * nodes, and runs it on the evaluation samples. A calibration is the
 * costly part (about a hundred runs of the float model), so this is what
 * makes a per-node sensitivity affordable: one calibration, then one run
 * of the quantised model per node.
 *
 * A node kept in float changes only what depends on it: the ranking's
 * estimates (one node each, on the first few samples) rerun only that. The
 * all-int8 model's values on those samples are kept
 * (mb__tune_estimator_cache); an estimate then finds the nodes of its
 * model that are the all-int8 model's own (same operator, attributes,
 * input and output names, every input the same) and runs only the others,
 * from the kept values at their boundary. Swin-T's 77 nodes rerun about
 * half of the model each. */
#include "bench/data.h"
#include "bench/tune_internal.h"
#include "passes/passes.h"
#include "passes/quantize.h"
#include "runtime/flops.h"
#include "runtime/reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct mb_tune_estimator {
  const mb_conversion_def *def;
  bool dynamic;  /* quantize_dynamic, else static (QDQ or parameters) */
  bool products; /* parameters: the engine's int8 products, float between */
  mb_quant_options qo;
  mb_model_files files;
  mb_bench_job job;
  mb_tensor ***samples; /* [n_samples][n_inputs] */
  int n_samples;
  mb_model *optimized;
  mb_quant_params *params; /* static: the calibration */
  mb_tensor **reference;   /* [n_samples * n_outputs] float outputs */
  int n_outputs;
  int n_groups;
  const char **groups; /* names in optimized's arena */
  double *flops;       /* per group */
  double total_flops;  /* of every node; < 0 unknown */
  /* The all-int8 model and, per sample of the first n_cached and per value
   * of its graph, that value after a run (NULL for what no node makes). */
  mb_model *all_int8;
  int *made_by;       /* per value of all_int8: the node making it, or -1 */
  mb_tensor **cached; /* [n_cached * all_int8's n_values] */
  int n_cached;
  bool reuse_off;           /* mb__tune_estimator_set_reuse(false) */
  int last_run, last_nodes; /* nodes the last estimate ran, of its model's */
};

/* How far up boundary_values follows a group's feeders, and how many. */
#define FEED_DEPTH 5
#define FEED_MAX 64
/* The most the kept values may take. Past it the estimates run whole. */
#define CACHE_MAX_BYTES ((size_t)1 << 30)

static mb_status run_model(const mb_tune_estimator *est, const mb_model *model,
                           int n_samples, mb_tensor **outputs, mb_error *err) {
  mb_session_options so = {.threads = MB_MAX(est->job.config->threads, 1)};
  mb_session *session = NULL;
  mb_status status = mb_session_create(model, &so, &session, err);
  for (int s = 0; !status && s < n_samples; s++)
    status = mb_session_run(session, est->job.n_inputs,
                            (const mb_tensor *const *)est->samples[s],
                            est->n_outputs, outputs + s * est->n_outputs, err);
  mb_session_free(session);
  return status;
}

/* FLOPs per node of the optimised model, from shape inference on sample
 * 0's shapes. */
static void count_flops(mb_tune_estimator *est) {
  const mb_graph *g = est->optimized->graph;
  mb_shape_info *shapes = calloc((size_t)g->n_values + 1, sizeof *shapes);
  mb_error ignored;
  est->total_flops = -1;
  for (int i = 0; i < est->n_groups; i++)
    est->flops[i] = -1;
  if (!shapes || mb__infer_shapes(est->optimized,
                                  (const mb_tensor *const *)est->samples[0],
                                  shapes, &ignored)) {
    free(shapes);
    return;
  }
  double total = 0;
  for (int n = 0; n < g->n_nodes; n++) {
    bool formula;
    double f = mb__node_flops(g, &g->nodes[n], shapes, &formula);
    if (f > 0)
      total += f;
    for (int i = 0; i < est->n_groups; i++)
      if (strcmp(est->groups[i], g->nodes[n].name) == 0)
        est->flops[i] = f;
  }
  est->total_flops = total > 0 ? total : -1;
  free(shapes);
}

/* The quantisable nodes: the op types whose weights int8 conversions
 * quantise (dynamic: MatMul and Gemm only), named, in graph order. */
static mb_status find_groups(mb_tune_estimator *est, mb_error *err) {
  static const char *const kinds[] = {"Conv", "MatMul", "Gemm"};
  const mb_graph *g = est->optimized->graph;
  est->groups = calloc((size_t)g->n_nodes + 1, sizeof *est->groups);
  est->flops = calloc((size_t)g->n_nodes + 1, sizeof *est->flops);
  if (!est->groups || !est->flops)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: node groups");
  for (int n = 0; n < g->n_nodes; n++) {
    const mb_node *node = &g->nodes[n];
    bool quantisable = false;
    for (size_t k = est->dynamic ? 1 : 0; k < MB_ARRAY_COUNT(kinds); k++)
      quantisable |= !node->domain[0] && strcmp(node->op_type, kinds[k]) == 0;
    /* The parameters' engines run a product of two activations in float:
     * keeping it in float changes nothing there. */
    if (quantisable && est->products && strcmp(node->op_type, "Conv") != 0)
      quantisable = node->n_inputs > 1 && node->inputs[1] >= 0 &&
                    g->values[node->inputs[1]].initializer;
    if (quantisable && node->name && node->name[0])
      est->groups[est->n_groups++] = node->name;
  }
  return MB_STATUS_OK;
}

/* A deep copy of a calibration: quantize_static marks and adds entries. */
static mb_status params_copy(const mb_quant_params *src, mb_quant_params **out,
                             mb_error *err) {
  mb_quant_params *p = calloc(1, sizeof *p);
  if (!p)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: parameters");
  p->calibration = src->calibration;
  p->percentile = src->percentile;
  p->activations = src->activations;
  p->weights = src->weights;
  p->samples = src->samples;
  for (int i = 0; i < src->count; i++) {
    const mb_quant_param *s = &src->tensors[i];
    int e = mb__quant_params_add(p, s->name, s->kind, err);
    if (e < 0 || mb__qz_param_set_channels(&p->tensors[e], s->channels, err)) {
      mb__quant_params_free(p);
      return err ? err->status : MB_STATUS_OUT_OF_MEMORY;
    }
    mb_quant_param *d = &p->tensors[e];
    d->dtype = s->dtype;
    d->min = s->min;
    d->max = s->max;
    d->count = s->count;
    d->axis = s->axis;
    d->applied = s->applied;
    memcpy(d->scales, s->scales, sizeof *d->scales * (size_t)s->channels);
    memcpy(d->zero_points, s->zero_points,
           sizeof *d->zero_points * (size_t)s->channels);
  }
  *out = p;
  return MB_STATUS_OK;
}

mb_status mb__tune_estimator_open(const char *model_path,
                                  const mb_bench_config *config,
                                  const mb_conversion_def *def,
                                  mb_tune_estimator **out, mb_error *err) {
  mb_tune_estimator *est = calloc(1, sizeof *est);
  mb_input_source *source = NULL;
  mb_status status;
  *out = NULL;
  if (!est)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: estimator");
  est->def = def;
  est->dynamic = def->steps && strstr(def->steps, "quantize_dynamic");
  est->products = def->steps && strstr(def->steps, "quant_params");
  if ((status = mb__model_files_open(model_path, config, &est->files, err)))
    goto fail;
  mb_bench_job *job = &est->job;
  job->model = est->files.model;
  job->files = &est->files;
  job->model_path = model_path;
  job->model_bytes = est->files.onnx_bytes;
  job->model_size = est->files.onnx_size;
  job->config = config;
  job->n_inputs = mb_model_input_count(est->files.model);
  job->n_outputs = est->n_outputs = mb_model_output_count(est->files.model);
  est->qo = (mb_quant_options){
      .threads = MB_MAX(config->threads, 1),
      .calibration = config->calibration_method == 1
                         ? MB_QUANT_CALIBRATION_PERCENTILE
                         : MB_QUANT_CALIBRATION_MINMAX,
      /* The engines of the parameters' rows quantise a product's input and
       * weights only, its float bias added to the accumulator, float
       * between products: the QDQ model of ORT's quantiser also rounds
       * every Add, Mul, pooling and Concat (ViT: 1 - cosine 0.25 with all
       * its products in float, against INT8_STATIC+ONEDNN's 0.0022). */
      .products_only = est->products,
      .float_bias = est->products,
  };
  /* The evaluation samples, as bench checks accuracy on them. */
  if ((status = mb__input_source_open(est->files.model, config, &source, err)))
    goto fail;
  int64_t count = mb__input_source_count(source);
  est->n_samples = (int)MB_MIN(MB_MAX(count, 1), MB_MAX_EVAL_SAMPLES);
  if (!(est->samples = calloc((size_t)est->n_samples, sizeof *est->samples))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: samples");
    goto fail;
  }
  for (int s = 0; s < est->n_samples; s++) {
    if (!(est->samples[s] =
              calloc((size_t)job->n_inputs + 1, sizeof **est->samples))) {
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: samples");
      goto fail;
    }
    if ((status = mb__input_source_get(source, s, est->samples[s], err)))
      goto fail;
  }
  job->samples = est->samples;
  job->n_samples = est->n_samples;
  est->qo.weights = mb__job_int8_form(job, def, NULL, 0);

  /* The optimised float model, as the int8 rows' first step makes it. */
  mb_input_shape shapes[64];
  int n_shapes = MB_MIN(job->n_inputs, (int)MB_ARRAY_COUNT(shapes));
  for (int i = 0; i < n_shapes; i++) {
    const mb_tensor *t = est->samples[0][i];
    mb_value_info info;
    if ((status = mb_model_input_info(est->files.model, i, &info, err)))
      goto fail;
    shapes[i].name = info.name;
    shapes[i].rank = t->rank;
    memcpy(shapes[i].dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
  }
  mb_pass_options po = {.n_input_shapes = n_shapes, .input_shapes = shapes};
  if ((status = mb__model_clone(est->files.model, &est->optimized, err)) ||
      (status = mb__passes_run(est->optimized, "optimize", &po, NULL, err)))
    goto fail;
  if ((status = find_groups(est, err)))
    goto fail;
  count_flops(est);
  mb__input_source_close(source);
  *out = est;
  return MB_STATUS_OK;
fail:
  mb__input_source_close(source);
  mb__tune_estimator_close(est);
  return mb__error_prefix(err, status, "tune: estimating %s", def->name);
}

/* The costly part, on the first estimate: the calibration (static) and
 * the float model's outputs. */
static mb_status prepare(mb_tune_estimator *est, mb_error *err) {
  mb_tensor ***batches = NULL;
  int n_batches = 0;
  bool owned = false;
  mb_status status = MB_STATUS_OK;
  if (est->reference)
    return MB_STATUS_OK;
  if (!est->dynamic) {
    if (!(status = mb__calibration_batches(&est->job, &batches, &n_batches,
                                           &owned, err))) {
      /* The same ranges as the int8 rows' build ("optimize" then the
       * calibration): from the calibration cache when they calibrated. */
      bool hit;
      status = mb__calibrate_cached(
          est->job.config, est->files.model, "optimize", est->optimized,
          (const mb_tensor *const *const *)batches, n_batches,
          est->job.n_inputs, &est->qo, &est->params, &hit, err);
    }
    mb__calibration_batches_free(batches, n_batches, est->job.n_inputs, owned);
    if (status)
      return mb__error_prefix(err, status, "tune: calibrating %s",
                              est->def->name);
  }
  est->reference = calloc((size_t)est->n_samples * (size_t)est->n_outputs + 1,
                          sizeof *est->reference);
  if (!est->reference)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: reference");
  if ((status = run_model(est, est->optimized, est->n_samples, est->reference,
                          err))) {
    for (int i = 0; i < est->n_samples * est->n_outputs; i++)
      mb_tensor_free(est->reference[i]);
    free(est->reference);
    est->reference = NULL;
  }
  return status;
}

static void drop_cache(mb_tune_estimator *est) {
  if (est->cached) {
    size_t n = (size_t)est->n_cached * (size_t)est->all_int8->graph->n_values;
    for (size_t i = 0; i < n; i++)
      mb_tensor_free(est->cached[i]);
  }
  free(est->cached);
  est->cached = NULL;
  est->n_cached = 0;
  mb_model_free(est->all_int8);
  est->all_int8 = NULL;
  free(est->made_by);
  est->made_by = NULL;
}

void mb__tune_estimator_close(mb_tune_estimator *est) {
  if (!est)
    return;
  for (int i = 0; est->reference && i < est->n_samples * est->n_outputs; i++)
    mb_tensor_free(est->reference[i]);
  free(est->reference);
  for (int s = 0; est->samples && s < est->n_samples; s++) {
    for (int i = 0; est->samples[s] && i < est->job.n_inputs; i++)
      mb_tensor_free(est->samples[s][i]);
    free(est->samples[s]);
  }
  free(est->samples);
  drop_cache(est);
  mb__quant_params_free(est->params);
  free(est->groups);
  free(est->flops);
  mb_model_free(est->optimized);
  mb__model_files_close(&est->files);
  free(est);
}

bool mb__tune_estimator_matches(const mb_tune_estimator *est,
                                const mb_conversion_def *def,
                                mb_int8_weights weights) {
  bool dynamic = def->steps && strstr(def->steps, "quantize_dynamic");
  bool products = def->steps && strstr(def->steps, "quant_params");
  return dynamic == est->dynamic && products == est->products &&
         weights == est->qo.weights;
}

int mb__tune_estimator_groups(const mb_tune_estimator *est) {
  return est->n_groups;
}

const char *mb__tune_estimator_group(const mb_tune_estimator *est, int i) {
  return i >= 0 && i < est->n_groups ? est->groups[i] : NULL;
}

static bool kept(int n_keep, const char *const *keep, const char *name) {
  for (int k = 0; k < n_keep; k++)
    if (strcmp(keep[k], name) == 0)
      return true;
  return false;
}

double mb__tune_estimator_int8_share(const mb_tune_estimator *est, int n_keep,
                                     const char *const *keep) {
  double int8 = 0;
  if (est->total_flops <= 0)
    return -1;
  for (int i = 0; i < est->n_groups; i++) {
    if (est->flops[i] < 0)
      return -1;
    if (!kept(n_keep, keep, est->groups[i]))
      int8 += est->flops[i];
  }
  return MB_MIN(int8 / est->total_flops, 1.0);
}

int mb__tune_estimator_samples(const mb_tune_estimator *est) {
  return est->n_samples;
}

/* The int8 model with the nodes of keep in float: a new model in *out. */
static mb_status quantized(mb_tune_estimator *est, int n_keep,
                           const char *const *keep, mb_model **out,
                           mb_error *err) {
  mb_model *copy = NULL;
  mb_quant_params *params = NULL;
  mb_quant_options qo = est->qo;
  mb_quant_stats qs;
  mb_status status;
  qo.n_exclude = n_keep;
  qo.exclude = keep;
  *out = NULL;
  if ((status = mb__model_clone(est->optimized, &copy, err)))
    return status;
  if (est->dynamic)
    status = mb__quantize_dynamic(copy, &qo, &qs, err);
  else if (!(status = params_copy(est->params, &params, err)))
    status = mb__quantize_static(copy, params, &qo, &qs, err);
  mb__quant_params_free(params);
  if (status)
    mb_model_free(copy);
  else
    *out = copy;
  return status;
}

/* The all-int8 model's values that a one-node estimate may read from
 * what it kept: per group, the values that the nodes downstream of it
 * (from the node that makes the group's output on) and the two levels of
 * nodes that feed it (its quantisation) read from elsewhere; and the
 * outputs. Keeping every value instead took over 1 GiB a sample on Swin-T.
 * A value an estimate needs but this left out makes that estimate run
 * whole (run_changed), so this choice affects speed only. */
static mb_status boundary_values(const mb_tune_estimator *est, bool **out,
                                 mb_error *err) {
  const mb_graph *q = est->all_int8->graph, *f = est->optimized->graph;
  bool *want = calloc((size_t)q->n_values + 1, sizeof *want);
  bool *down = calloc((size_t)q->n_nodes + 1, sizeof *down);
  bool *feed = calloc((size_t)q->n_nodes + 1, sizeof *feed);
  if (!want || !down || !feed) {
    free(want);
    free(down);
    free(feed);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: kept values");
  }
  for (int o = 0; o < q->n_outputs; o++)
    want[q->outputs[o]] = true;
  for (int gi = 0; gi < est->n_groups; gi++) {
    int fv = -1;
    for (int n = 0; n < f->n_nodes && fv < 0; n++)
      if (strcmp(f->nodes[n].name, est->groups[gi]) == 0 &&
          f->nodes[n].n_outputs > 0)
        fv = f->nodes[n].outputs[0];
    /* The group's node: by its name (static forms keep it), else what
     * makes its output (dynamic ones rename it). */
    int p = -1;
    for (int n = 0; n < q->n_nodes && p < 0; n++)
      if (strcmp(q->nodes[n].name, est->groups[gi]) == 0)
        p = n;
    int qv = fv >= 0 ? mb__graph_find_value(q, f->values[fv].name) : -1;
    if (p < 0 && qv >= 0)
      p = est->made_by[qv];
    if (p < 0)
      continue;
    memset(down, 0, sizeof *down * (size_t)q->n_nodes);
    memset(feed, 0, sizeof *feed * (size_t)q->n_nodes);
    down[p] = true;
    for (int n = p + 1; n < q->n_nodes; n++)
      for (int j = 0; !down[n] && j < q->nodes[n].n_inputs; j++) {
        int v = q->nodes[n].inputs[j];
        down[n] = v >= 0 && est->made_by[v] >= 0 && down[est->made_by[v]];
      }
    /* What feeds p, FEED_DEPTH nodes up (its quantisation: Add <- Mul <-
     * Cast <- MatMulInteger <- DynamicQuantizeLinear for a dynamic Gemm
     * with a bias). */
    int queue[FEED_MAX], depth[FEED_MAX], n_queue = 0;
    queue[n_queue] = p;
    depth[n_queue++] = 0;
    for (int a = 0; a < n_queue; a++) {
      const mb_node *n = &q->nodes[queue[a]];
      for (int j = 0; depth[a] < FEED_DEPTH && j < n->n_inputs; j++) {
        int v = n->inputs[j], m = v >= 0 ? est->made_by[v] : -1;
        if (m < 0 || feed[m] || n_queue == FEED_MAX)
          continue;
        feed[m] = true;
        queue[n_queue] = m;
        depth[n_queue++] = depth[a] + 1;
      }
    }
    for (int n = 0; n < q->n_nodes; n++) {
      if (!down[n] && !feed[n])
        continue;
      for (int j = 0; j < q->nodes[n].n_inputs; j++) {
        int v = q->nodes[n].inputs[j];
        if (v >= 0 && est->made_by[v] >= 0 && !down[est->made_by[v]])
          want[v] = true;
      }
    }
  }
  free(down);
  free(feed);
  *out = want;
  return MB_STATUS_OK;
}

mb_status mb__tune_estimator_cache(mb_tune_estimator *est, int n_samples,
                                   mb_error *err) {
  mb_session_options so = {.threads = MB_MAX(est->job.config->threads, 1)};
  mb_session *session = NULL;
  mb_status status;
  size_t bytes = 0;
  bool *want = NULL;
  n_samples = MB_MIN(n_samples, est->n_samples);
  if (est->reuse_off || est->n_cached >= n_samples)
    return MB_STATUS_OK;
  drop_cache(est);
  if ((status = prepare(est, err)) ||
      (status = quantized(est, 0, NULL, &est->all_int8, err)))
    return status;
  const mb_graph *g = est->all_int8->graph;
  /* From the nodes: the passes leave mb_value.producer stale. */
  if (!(est->made_by =
            malloc(sizeof *est->made_by * ((size_t)g->n_values + 1)))) {
    drop_cache(est);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: kept values");
  }
  for (int v = 0; v < g->n_values; v++)
    est->made_by[v] = -1;
  for (int n = 0; n < g->n_nodes; n++)
    for (int j = 0; j < g->nodes[n].n_outputs; j++)
      if (g->nodes[n].outputs[j] >= 0)
        est->made_by[g->nodes[n].outputs[j]] = n;
  est->cached =
      calloc((size_t)n_samples * (size_t)g->n_values + 1, sizeof *est->cached);
  if (!est->cached || (status = boundary_values(est, &want, err))) {
    status = status
                 ? status
                 : mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: kept values");
    goto done;
  }
  est->n_cached = n_samples;
  if ((status = mb_session_create(est->all_int8, &so, &session, err)))
    goto done;
  for (int s = 0; s < n_samples && !status; s++) {
    if ((status = mb__session_bind_inputs(
             session, (const mb_tensor *const *)est->samples[s], err)))
      break;
    for (int n = 0; n < g->n_nodes && !status; n++)
      status = mb__session_run_node(session, n, err);
    for (int v = 0; v < g->n_values && !status; v++) {
      if (!want[v] || est->made_by[v] < 0)
        continue;
      /* Sequences and optionals are not kept: no shortcut then. */
      if (g->values[v].type != MB_VALUE_TYPE_TENSOR ||
          (bytes += mb__session_value(session, v)->nbytes) > CACHE_MAX_BYTES) {
        drop_cache(est);
        goto done;
      }
      status = mb_tensor_clone(
          mb__session_value(session, v),
          &est->cached[(size_t)s * (size_t)g->n_values + (size_t)v], err);
    }
  }
done:
  free(want);
  mb_session_free(session);
  if (status)
    drop_cache(est);
  return status;
}

void mb__tune_estimator_set_reuse(mb_tune_estimator *est, bool on) {
  est->reuse_off = !on;
  if (!on)
    drop_cache(est);
}

int mb__tune_estimator_last_run(const mb_tune_estimator *est, int *nodes_out) {
  *nodes_out = est->last_nodes;
  return est->last_run;
}

static bool same_tensor(const mb_tensor *a, const mb_tensor *b) {
  if (!a || !b)
    return a == b;
  if (a->dtype != b->dtype || a->rank != b->rank || a->nbytes != b->nbytes ||
      a->dtype == MB_DTYPE_STRING ||
      memcmp(a->dims, b->dims, sizeof *a->dims * (size_t)a->rank) != 0)
    return false;
  return a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0;
}

/* Attributes alike, in order; graphs and lists of tensors or graphs never
 * are (a node with them always runs). */
static bool same_attrs(const mb_node *a, const mb_node *b) {
  if (a->n_attrs != b->n_attrs)
    return false;
  for (int i = 0; i < a->n_attrs; i++) {
    const mb_attr *x = &a->attrs[i], *y = &b->attrs[i];
    if (x->type != y->type || strcmp(x->name, y->name) != 0 ||
        (x->ref_attr_name || y->ref_attr_name) || x->g || x->graphs ||
        x->tensors || y->g || y->graphs || y->tensors ||
        memcmp(&x->f, &y->f, sizeof x->f) != 0 || x->i != y->i ||
        x->s_len != y->s_len || (x->s_len && memcmp(x->s, y->s, x->s_len)) ||
        x->n != y->n || !same_tensor(x->t, y->t))
      return false;
    for (int64_t k = 0; k < x->n; k++)
      if ((x->ints && x->ints[k] != y->ints[k]) ||
          (x->floats && memcmp(&x->floats[k], &y->floats[k], sizeof(float))) ||
          (x->strings && strcmp(x->strings[k], y->strings[k]) != 0))
        return false;
  }
  return true;
}

static const char *value_name(const mb_graph *g, int v) {
  return v >= 0 ? g->values[v].name : "";
}

/* Whether node n of model g is the all-int8 model q's own: a node of q
 * makes its first output, with the same operator, attributes and input
 * and output names; its inputs' sameness is the caller's. */
static bool same_node(const mb_graph *g, const mb_node *n, const mb_graph *q,
                      const int *made_by) {
  if (n->n_outputs < 1 || n->outputs[0] < 0)
    return false;
  int qv = mb__graph_find_value(q, value_name(g, n->outputs[0]));
  if (qv < 0 || made_by[qv] < 0)
    return false;
  const mb_node *m = &q->nodes[made_by[qv]];
  if (strcmp(n->op_type, m->op_type) != 0 ||
      strcmp(n->domain, m->domain) != 0 || n->n_inputs != m->n_inputs ||
      n->n_outputs != m->n_outputs || !same_attrs(n, m))
    return false;
  for (int j = 0; j < n->n_inputs; j++)
    if ((n->inputs[j] < 0) != (m->inputs[j] < 0) ||
        strcmp(value_name(g, n->inputs[j]), value_name(q, m->inputs[j])) != 0)
      return false;
  for (int j = 0; j < n->n_outputs; j++)
    if ((n->outputs[j] < 0) != (m->outputs[j] < 0) ||
        strcmp(value_name(g, n->outputs[j]), value_name(q, m->outputs[j])) != 0)
      return false;
  return true;
}

/* Runs model's outputs on the first n_samples samples from the kept values
 * of the all-int8 model: only the nodes that differ from its own, and
 * what depends on them. *ran: false when the shortcut does not apply
 * (then nothing is set). */
static mb_status run_changed(mb_tune_estimator *est, const mb_model *model,
                             int n_samples, mb_tensor **outputs, bool *ran,
                             mb_error *err) {
  const mb_graph *g = model->graph, *q = est->all_int8->graph;
  bool *same = calloc((size_t)g->n_values + 1, sizeof *same);
  bool *run = calloc((size_t)g->n_nodes + 1, sizeof *run);
  int *from = malloc(sizeof *from * ((size_t)g->n_values + 1));
  mb_session *session = NULL;
  mb_status status = MB_STATUS_OK;
  *ran = false;
  if (!same || !run || !from) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: changed nodes");
    goto done;
  }
  /* Which values hold what they hold in the all-int8 model: the inputs,
   * equal initializers, and the outputs of its own nodes. from[v]: the
   * kept value to copy, for what a changed node reads. */
  for (int v = 0; v < g->n_values; v++) {
    const mb_value *val = &g->values[v];
    int qv = mb__graph_find_value(q, val->name);
    from[v] = -1;
    if (val->kind == MB_VALUE_INPUT && !val->initializer)
      same[v] = qv >= 0 && q->values[qv].kind == MB_VALUE_INPUT;
    else if (val->initializer)
      same[v] =
          qv >= 0 && same_tensor(val->initializer, q->values[qv].initializer);
  }
  int n_run = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const mb_node *n = &g->nodes[i];
    bool own = same_node(g, n, q, est->made_by);
    for (int j = 0; own && j < n->n_inputs; j++)
      own = n->inputs[j] < 0 || same[n->inputs[j]];
    run[i] = !own;
    n_run += !own;
    for (int j = 0; j < n->n_outputs; j++)
      if (n->outputs[j] >= 0) {
        same[n->outputs[j]] = own;
        from[n->outputs[j]] =
            own ? mb__graph_find_value(q, value_name(g, n->outputs[j])) : -1;
      }
  }
  /* Every value read from the kept ones must have been kept (see
   * boundary_values), else the estimate runs whole. */
  for (int o = 0; o < g->n_outputs; o++) {
    int v = g->outputs[o];
    if (same[v] && (from[v] < 0 || !est->cached[from[v]]))
      goto done;
  }
  for (int i = 0; i < g->n_nodes; i++)
    for (int j = 0; run[i] && j < g->nodes[i].n_inputs; j++) {
      int v = g->nodes[i].inputs[j];
      if (v >= 0 && from[v] >= 0 && !est->cached[from[v]])
        goto done;
    }
  mb_session_options so = {.threads = MB_MAX(est->job.config->threads, 1)};
  if ((status = mb__session_create_masked(model, &so, run, &session, err)))
    goto done;
  for (int s = 0; s < n_samples && !status; s++) {
    mb_tensor *const *kept = est->cached + (size_t)s * (size_t)q->n_values;
    if ((status = mb__session_bind_inputs(
             session, (const mb_tensor *const *)est->samples[s], err)))
      break;
    /* The kept values at the boundary: what changed nodes read and the
     * outputs that did not change. */
    for (int i = 0; i < g->n_nodes && !status; i++)
      for (int j = 0; run[i] && j < g->nodes[i].n_inputs && !status; j++) {
        int v = g->nodes[i].inputs[j];
        if (v < 0 || from[v] < 0)
          continue;
        const mb_tensor *src = kept[from[v]];
        mb_tensor *dst = mb__session_value(session, v);
        if (!(status = mb__tensor_reset(dst, src->dtype, src->rank, src->dims,
                                        err)) &&
            src->nbytes)
          memcpy(dst->data, src->data, src->nbytes);
      }
    for (int i = 0; i < g->n_nodes && !status; i++)
      if (run[i])
        status = mb__session_run_node(session, i, err);
    for (int o = 0; o < g->n_outputs && !status; o++) {
      int v = g->outputs[o];
      const mb_tensor *t =
          from[v] >= 0 ? kept[from[v]] : mb__session_value(session, v);
      status = mb_tensor_clone(t, &outputs[s * est->n_outputs + o], err);
    }
  }
  if (!status) {
    *ran = true;
    est->last_run = n_run;
    est->last_nodes = g->n_nodes;
  }
done:
  mb_session_free(session);
  free(same);
  free(run);
  free(from);
  return status;
}

mb_status mb__tune_estimate(mb_tune_estimator *est, int max_samples, int n_keep,
                            const char *const *keep, double *error_out,
                            double *cosine_out, mb_error *err) {
  mb_model *copy = NULL;
  int n_samples =
      max_samples > 0 ? MB_MIN(max_samples, est->n_samples) : est->n_samples;
  size_t n = (size_t)n_samples * (size_t)est->n_outputs;
  mb_tensor **outputs = calloc(n + 1, sizeof *outputs);
  mb_status status = MB_STATUS_OK;
  double worst = 0, min_cosine = 1;
  bool ran = false;
  if (!outputs)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: outputs");
  if ((status = prepare(est, err)) ||
      (status = quantized(est, n_keep, keep, &copy, err)))
    goto done;
  if (est->cached && n_samples <= est->n_cached)
    status = run_changed(est, copy, n_samples, outputs, &ran, err);
  if (!status && !ran) {
    est->last_run = est->last_nodes = copy->graph->n_nodes;
    status = run_model(est, copy, n_samples, outputs, err);
  }
  for (size_t i = 0; !status && i < n; i++) {
    mb_compare_result cmp;
    if ((status =
             mb_tensor_compare(outputs[i], est->reference[i], 0, 0, &cmp, err)))
      break;
    double e = isfinite(cmp.cosine) ? 1.0 - cmp.cosine : 2.0;
    worst = MB_MAX(worst, e);
    min_cosine = MB_MIN(min_cosine, isfinite(cmp.cosine) ? cmp.cosine : -1);
  }
  if (!status) {
    *error_out = worst;
    *cosine_out = min_cosine;
  }
done:
  for (size_t i = 0; i < n; i++)
    mb_tensor_free(outputs[i]);
  free(outputs);
  mb_model_free(copy);
  return status;
}
