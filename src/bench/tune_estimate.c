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
 * of the quantised model per node. */
#include "bench/data.h"
#include "bench/tune_internal.h"
#include "passes/passes.h"
#include "passes/quantize.h"
#include "runtime/flops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct mb_tune_estimator {
  const mb_conversion_def *def;
  bool dynamic; /* quantize_dynamic, else static (QDQ or parameters) */
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
};

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
  return dynamic == est->dynamic && weights == est->qo.weights;
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

mb_status mb__tune_estimate(mb_tune_estimator *est, int max_samples, int n_keep,
                            const char *const *keep, double *error_out,
                            double *cosine_out, mb_error *err) {
  mb_model *copy = NULL;
  mb_quant_params *params = NULL;
  mb_quant_options qo = est->qo;
  int n_samples =
      max_samples > 0 ? MB_MIN(max_samples, est->n_samples) : est->n_samples;
  size_t n = (size_t)n_samples * (size_t)est->n_outputs;
  mb_tensor **outputs = calloc(n + 1, sizeof *outputs);
  mb_quant_stats qs;
  mb_status status = MB_STATUS_OK;
  double worst = 0, min_cosine = 1;
  qo.n_exclude = n_keep;
  qo.exclude = keep;
  if (!outputs)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "tune: outputs");
  if ((status = prepare(est, err)))
    goto done;
  if ((status = mb__model_clone(est->optimized, &copy, err)))
    goto done;
  if (est->dynamic)
    status = mb__quantize_dynamic(copy, &qo, &qs, err);
  else if (!(status = params_copy(est->params, &params, err)))
    status = mb__quantize_static(copy, params, &qo, &qs, err);
  if (!status)
    status = run_model(est, copy, n_samples, outputs, err);
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
  mb__quant_params_free(params);
  mb_model_free(copy);
  return status;
}
