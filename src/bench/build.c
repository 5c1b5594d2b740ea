/* The build step of one conversion, in the worker, with the build cache
 * (src/cache/build_cache.h): what a conversion prepares once per model and
 * can keep between runs.
 *
 *   conversions with steps (OPTIMIZE+, FP16+, INT8_DYNAMIC+, INT8_STATIC+):
 *     the converted model (graph passes of src/passes, quantisation with
 *     calibration on generated or the user's inputs), plus the
 *     quantisation parameters. The runtime prepares from the converted
 *     model. This happens with or without the cache; the cache keeps it.
 *   ORT conversions with graph optimisations: ONNX Runtime's optimised
 *     model (SessionOptions' optimized model file path), which later runs
 *     load with optimisations off, as ORT documents for offline
 *     optimisation. Keyed by the machine too: the NCHWc layouts it picks
 *     depend on the CPU.
 *   hybrid conversions (XNNPACK, ONEDNN): the partition plan. Neither
 *     engine has a serialised form in the Debian versions, so their compile
 *     stays in prepare (load_ms).
 *   everything else: nothing to build; the state still records the run.
 *
 * Trouble with the cache itself (unwritable folder, ORT unable to save a
 * model over 2 GB) never fails a conversion: it runs without the cache and
 * says so in a warning. Only --rebuild never without a valid build fails
 * it. */
#include "bench/bench_internal.h"
#include "bench/data.h"
#include "bench/nncf.h"
#include "cache/build_cache.h"
#include "conversions/conversion.h"
#include "core/cache_dir.h"
#include "core/json_write.h"
#include "passes/passes.h"
#include "passes/quantize.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#define ORT_ARTIFACT "ort_optimized.onnx"
#define PARTITION_ARTIFACT "partition.json"
#define CONVERTED_ARTIFACT "model.onnx"
#define QUANT_ARTIFACT "quant_params.json"
#define DEFAULT_CALIBRATION_SAMPLES 100

static const char *const opt_level_names[] = {"disabled", "basic", "extended",
                                              "all"};

static const char *opt_level_name(mb_graph_opt_level level) {
  return (unsigned)level < MB_ARRAY_COUNT(opt_level_names)
             ? opt_level_names[level]
             : "?";
}

/* What the conversion builds, X(kind): one row per runtime kind. */
typedef enum build_kind {
  BUILD_NOTHING,
  BUILD_ORT_OPTIMIZED,
  BUILD_PARTITION,
  BUILD_CONVERT,
  BUILD_HOST, /* the host's prepare converts; the build ends after it */
} build_kind;

static build_kind kind_of(const mb_conversion_def *def, const mb_runtime *rt) {
  if (def->steps && def->steps[0])
    return BUILD_CONVERT;
  if (rt->host)
    return BUILD_HOST;
  if (rt->hybrid)
    return BUILD_PARTITION;
  if (strcmp(def->runtime, "onnxruntime") == 0 &&
      def->opt_level != MB_GRAPH_OPT_DISABLED)
    return BUILD_ORT_OPTIMIZED;
  return BUILD_NOTHING;
}

/* Name of graph input i ("" when unknown). */
static const char *input_name(const mb_model *model, int i) {
  mb_value_info info;
  return mb_model_input_info(model, i, &info, NULL) == MB_STATUS_OK && info.name
             ? info.name
             : "";
}

/* Most graph inputs a build handles (the key, passes and calibration see
 * sample 0's shapes). */
#define MAX_INPUTS 64

/* Sample 0's concrete input shapes (and dtypes when non-NULL): the shapes
 * every build step works with. Fails on more than MAX_INPUTS inputs. */
static mb_status sample_shapes(const mb_bench_job *job, mb_input_shape *shapes,
                               mb_dtype *dtypes, int *n_out, mb_error *err) {
  if (job->n_inputs > MAX_INPUTS)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "building: %d graph inputs, at most %d are supported",
                     job->n_inputs, MAX_INPUTS);
  for (int i = 0; i < job->n_inputs; i++) {
    const mb_tensor *t = job->samples[0][i];
    shapes[i].name = input_name(job->model, i);
    shapes[i].rank = t->rank;
    memcpy(shapes[i].dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
    if (dtypes)
      dtypes[i] = t->dtype;
  }
  *n_out = job->n_inputs;
  return MB_STATUS_OK;
}

/* The input signature of sample 0. */
static mb_status input_signature(const mb_bench_job *job, char **out,
                                 mb_error *err) {
  mb_input_shape shapes[MAX_INPUTS];
  mb_dtype dtypes[MAX_INPUTS];
  int n;
  mb_status status = sample_shapes(job, shapes, dtypes, &n, err);
  if (status)
    return status;
  return mb__build_input_signature(n, shapes, dtypes, out, err);
}

/* Writes the partition plan of a hybrid conversion as JSON. */
static mb_status write_partition(const mb_bench_job *job,
                                 const mb_conversion_def *def, const char *path,
                                 mb_error *err) {
  mb_input_shape shapes[MAX_INPUTS];
  int n;
  mb_status status = sample_shapes(job, shapes, NULL, &n, err);
  if (status)
    return status;
  mb_shape_spec spec = {0, n, shapes};
  mb_partition *p = NULL;
  status = mb_model_partition(job->model, def->runtime, def->precision, &spec,
                              &p, err);
  if (status)
    return status;
  FILE *f = fopen(path, "w");
  if (!f) {
    mb_partition_free(p);
    return mb__error(err, MB_STATUS_IO, "cannot write %s: %s", path,
                     strerror(errno));
  }
  mb_json j;
  mb__json_init(&j, f, true);
  mb__json_object_begin(&j);
  mb__json_kv_string(&j, "runtime", p->runtime);
  mb__json_kv_int(&j, "nodes", p->n_nodes);
  mb__json_kv_int(&j, "native_nodes", p->n_native_nodes);
  mb__json_kv_int(&j, "folded_nodes", p->n_folded);
  mb__json_key(&j, "segments");
  mb__json_array_begin(&j);
  for (int i = 0; i < p->n_segments; i++) {
    mb__json_object_begin(&j);
    mb__json_kv_string(&j, "runtime", p->segments[i].runtime);
    mb__json_kv_int(&j, "nodes", p->segments[i].n_nodes);
    mb__json_kv_string(&j, "first_node", p->segments[i].first_node);
    mb__json_kv_string(&j, "last_node", p->segments[i].last_node);
    mb__json_object_end(&j);
  }
  mb__json_array_end(&j);
  mb__json_key(&j, "unsupported");
  mb__json_array_begin(&j);
  for (int i = 0; i < p->n_unsupported; i++)
    mb__json_string(&j, p->unsupported[i]);
  mb__json_array_end(&j);
  mb__json_object_end(&j);
  fputc('\n', f);
  mb_partition_free(p);
  if (fclose(f) != 0)
    return mb__error(err, MB_STATUS_IO, "cannot write %s: %s", path,
                     strerror(errno));
  return MB_STATUS_OK;
}

/* ORT: a throwaway session that saves the optimised model. */
static mb_status build_ort(const mb_bench_job *job, const mb_runtime *rt,
                           const mb_runtime_options *options, const char *path,
                           mb_error *err) {
  mb_runtime_options o = *options;
  void *session = NULL;
  o.save_optimized_path = path;
  o.profile = 0;
  o.profile_path = NULL;
  mb_status status = rt->prepare(job->model, job->model_bytes, job->model_size,
                                 &o, &session, err);
  if (session)
    rt->release(session);
  if (!status && access(path, R_OK) != 0)
    status = mb__error(err, MB_STATUS_IO,
                       "onnxruntime did not write its optimised model");
  return status;
}

/* Switches the run to the cached ORT model: its bytes, optimisations off
 * (they are already applied). */
static mb_status use_ort_artifact(mb_worker_build *wb,
                                  mb_runtime_options *options, mb_error *err) {
  char path[PATH_MAX];
  if (!mb__build_path(wb->build, ORT_ARTIFACT, path, sizeof path))
    return mb__error(err, MB_STATUS_INTERNAL, "bad artifact path");
  mb_status status = mb__read_file(path, &wb->bytes, &wb->size, err);
  if (!status)
    options->opt_level = MB_GRAPH_OPT_DISABLED;
  return status;
}

/* ---- model conversion ---- */

/* Calibration batches: config->calibration_dir when set, else the user's
 * inputs when they gave some (--inputs), else config->calibration_samples
 * generated batches (seeded apart from the evaluation inputs, same shapes
 * and ranges). *batches_out: n arrays of n_inputs tensors; *owned_out:
 * whether they must be freed (with mb__calibration_batches_free, also on
 * failure). */
mb_status mb__calibration_batches(const mb_bench_job *job,
                                  mb_tensor ****batches_out, int *n_out,
                                  bool *owned_out, mb_error *err) {
  const mb_bench_config *c = job->config;
  *batches_out = NULL;
  *n_out = 0;
  *owned_out = false;
  if (!c->calibration_dir && (c->inputs_dir || c->loader)) {
    *batches_out = job->samples;
    *n_out = (int)job->n_samples;
    return MB_STATUS_OK;
  }
  mb_input_source *source = NULL;
  mb_bench_config given = *c;
  mb_status status = MB_STATUS_OK;
  int n = c->calibration_samples > 0 ? c->calibration_samples
                                     : DEFAULT_CALIBRATION_SAMPLES;
  if (c->calibration_dir) {
    given.inputs_dir = c->calibration_dir;
    given.loader = NULL;
    given.n_samples =
        c->calibration_samples > 0 ? c->calibration_samples : INT_MAX;
    if ((status = mb__input_source_open(job->model, &given, &source, err))) {
      mb__error_prefix(err, status, "calibration inputs");
      return status;
    }
    n = (int)mb__input_source_count(source);
  }
  mb_input_shape shapes[MAX_INPUTS];
  int n_inputs = 0;
  if (!source && (status = sample_shapes(job, shapes, NULL, &n_inputs, err)))
    return status;
  mb_shape_spec spec = {0, source ? 0 : n_inputs, shapes};
  mb_tensor ***batches = calloc((size_t)n, sizeof *batches);
  if (!batches) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "calibration batches");
    goto done;
  }
  *batches_out = batches;
  *owned_out = true;
  for (int b = 0; b < n && !status; b++) {
    if (!(batches[b] = calloc((size_t)job->n_inputs + 1, sizeof **batches))) {
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "calibration batches");
      break;
    }
    *n_out = b + 1;
    status = source
                 ? mb__input_source_get(source, b, batches[b], err)
                 : mb_inputs_generate(job->model, &spec,
                                      c->seed + 0x5eed0000u + (unsigned)b,
                                      c->n_ranges, c->ranges, batches[b], err);
  }
done:
  if (source)
    mb__input_source_close(source);
  return status;
}

/* What identifies the calibration data in the build key: how many
 * generated batches and their seed, or the sha256 of the given data (so
 * that new data rebuilds). */
static mb_status calibration_key(const mb_bench_job *job, char *out,
                                 size_t size, mb_error *err);

void mb__calibration_batches_free(mb_tensor ***batches, int n, int n_inputs,
                                  bool owned) {
  if (!owned)
    return;
  for (int b = 0; b < n; b++) {
    for (int i = 0; batches[b] && i < n_inputs; i++)
      mb_tensor_free(batches[b][i]);
    free(batches[b]);
  }
  free(batches);
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void mb__keep_float_key(const mb_bench_config *c, char *out, size_t size) {
  int n = c->keep_float ? MB_MAX(c->n_keep_float, 0) : 0;
  const char **sorted = n ? malloc(sizeof *sorted * (size_t)n) : NULL;
  out[0] = '\0';
  if (!n || !sorted) {
    /* Out of memory: the names in the given order, a key that may miss a
     * build but never confuses two lists. */
    if (n)
      snprintf(out, size, ";keep_float=%d unsorted", n);
    return;
  }
  memcpy(sorted, c->keep_float, sizeof *sorted * (size_t)n);
  qsort(sorted, (size_t)n, sizeof *sorted, compare_names);
  /* A set: the order and repeats of the list do not change the build. */
  mb_sha256 ctx;
  uint8_t digest[32];
  char hex[65];
  int distinct = 0;
  mb__sha256_init(&ctx);
  for (int i = 0; i < n; i++) {
    if (i > 0 && strcmp(sorted[i], sorted[i - 1]) == 0)
      continue;
    distinct++;
    mb__sha256_update(&ctx, sorted[i], strlen(sorted[i]) + 1);
  }
  mb__sha256_final(&ctx, digest);
  mb__sha256_hex(digest, hex);
  snprintf(out, size, ";keep_float=%d sha256 %.16s", distinct, hex);
  free(sorted);
}

mb_status mb__keep_float_check(const mb_model *model, const mb_bench_config *c,
                               mb_error *err) {
  const mb_graph *g = model ? model->graph : NULL;
  for (int k = 0; c->keep_float && k < c->n_keep_float; k++) {
    const char *name = c->keep_float[k];
    bool found = false;
    if (!name || !name[0])
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "--keep-float: an empty node name");
    for (int i = 0; g && i < g->n_nodes && !found; i++)
      found = g->nodes[i].name && strcmp(g->nodes[i].name, name) == 0;
    if (found)
      continue;
    /* The three nearest node names by edit distance, as conversion names
     * are suggested. */
    const char *best[3] = {NULL, NULL, NULL};
    int dist[3] = {INT_MAX, INT_MAX, INT_MAX};
    for (int i = 0; g && i < g->n_nodes; i++) {
      const char *cand = g->nodes[i].name;
      if (!cand || !cand[0])
        continue;
      int d = mb__edit_distance(name, cand);
      for (int s = 0; s < 3; s++)
        if (d < dist[s]) {
          for (int t = 2; t > s; t--) {
            dist[t] = dist[t - 1];
            best[t] = best[t - 1];
          }
          dist[s] = d;
          best[s] = cand;
          break;
        }
    }
    if (!best[0])
      return mb__error(err, MB_STATUS_NOT_FOUND,
                       "--keep-float: the model has no node named '%s' (it "
                       "has no named nodes)",
                       name);
    return mb__error(err, MB_STATUS_NOT_FOUND,
                     "--keep-float: the model has no node named '%s' (did "
                     "you mean %s%s%s%s%s?)",
                     name, best[0], best[1] ? ", " : "", best[1] ? best[1] : "",
                     best[2] ? ", " : "", best[2] ? best[2] : "");
  }
  return MB_STATUS_OK;
}

mb_int8_weights mb__job_int8_form(const mb_bench_job *job,
                                  const mb_conversion_def *def, char *reason,
                                  size_t size) {
  if (reason && size)
    reason[0] = '\0';
  if (!mb__conversion_quantizes(def))
    return MB_INT8_WEIGHTS_AUTO;
  return mb__int8_form(mb__runtime_find(def->runtime),
                       job->config->int8_weights, reason, size);
}

/* Whether quantize_nncf quantises with NNCF here (true, *tool filled) or
 * with modelbench's own calibration (false, why in why): NNCF must be
 * found, and the int8 form must be one NNCF has (7-bit or 8-bit weights;
 * --int8-weights mixed is modelbench's alone). */
static bool nncf_for(const mb_bench_job *job, const mb_conversion_def *def,
                     mb_nncf_tool *tool, char *why, size_t size) {
  memset(tool, 0, sizeof *tool);
  if (mb__job_int8_form(job, def, NULL, 0) == MB_INT8_WEIGHTS_MIXED) {
    snprintf(why, size,
             "NNCF has no mixed int8 form (--int8-weights mixed): 7-bit or "
             "8-bit weights");
    return false;
  }
  return mb__nncf_find(tool, why, size);
}

/* Applies def->steps to a copy of the model: graph passes (src/passes) and
 * the quantisation steps. Writes the converted model's bytes to *bytes_out
 * (malloc) and, for static quantisation, the parameters to quant_path when
 * given. */
mb_status mb__convert_for_job(const mb_bench_job *job,
                              const mb_conversion_def *def,
                              const char *quant_path,
                              mb_quant_params **params_out, void **bytes_out,
                              size_t *size_out, char *summary, size_t ssize,
                              mb_error *err) {
  mb_input_shape shapes[MAX_INPUTS];
  int n_inputs;
  mb_status status = sample_shapes(job, shapes, NULL, &n_inputs, err);
  if (status)
    return status;
  mb_pass_options po = {.n_input_shapes = n_inputs, .input_shapes = shapes};
  mb_quant_options qo = {
      .threads = job->config->threads,
      .calibration = job->config->calibration_method == 1
                         ? MB_QUANT_CALIBRATION_PERCENTILE
                         : MB_QUANT_CALIBRATION_MINMAX,
      .weights = mb__job_int8_form(job, def, NULL, 0),
      .n_exclude = job->config->keep_float ? job->config->n_keep_float : 0,
      .exclude = job->config->keep_float,
  };
  mb_pass_stats stats;
  mb_quant_stats qs;
  mb_quant_params *params = NULL;
  mb_tensor ***batches = NULL;
  int n_batches = 0;
  bool owned = false;
  mb_model *model = NULL, *copy = NULL;
  char steps[256], *save = NULL, passes_before[256] = "";
  bool calibration_hit = false;
  if (params_out)
    *params_out = NULL;
  memset(&stats, 0, sizeof stats);
  memset(&qs, 0, sizeof qs);
  summary[0] = '\0';
  snprintf(steps, sizeof steps, "%s", def->steps);
  if ((status = mb__model_clone(job->model, &model, err)))
    return status;
  for (char *step = strtok_r(steps, ",", &save); step && !status;
       step = strtok_r(NULL, ",", &save)) {
    size_t used = strlen(summary);
    mb_nncf_tool nncf;
    char why[600] = "";
    if (strcmp(step, "quantize_nncf") == 0 &&
        nncf_for(job, def, &nncf, why, sizeof why)) {
      /* NNCF quantises the model (nncf.h); its summary, then the
       * calibration's below. */
      int placed = -1;
      status = mb__calibration_batches(job, &batches, &n_batches, &owned, err);
      if (!status)
        status = mb__nncf_quantize(
            &nncf, &model, (const mb_tensor *const *const *)batches, n_batches,
            qo.weights,
            job->config->keep_float ? job->config->keep_float : NULL,
            job->config->keep_float ? MB_MAX(job->config->n_keep_float, 0) : 0,
            job->config->timeout_seconds, &placed, err);
      if (!status)
        snprintf(summary + used, ssize - used,
                 "%squantize_nncf: NNCF %s placed %d QuantizeLinear nodes",
                 used ? "; " : "", nncf.version, placed);
    } else if (strcmp(step, "quantize_dynamic") == 0) {
      status = mb__quantize_dynamic(model, &qo, &qs, err);
    } else if (strcmp(step, "quantize_static") == 0 ||
               strcmp(step, "quant_params") == 0 ||
               strcmp(step, "quantize_nncf") == 0) {
      /* quantize_nncf without NNCF: modelbench's own calibration, and the
       * summary says why. */
      if (why[0])
        snprintf(summary + used, ssize - used,
                 "%sNNCF unavailable (%s): modelbench's calibration instead",
                 used ? "; " : "", why);
      used = strlen(summary);
      /* quant_params: the same calibration and quantisation, on a copy. */
      bool keep_float = strcmp(step, "quant_params") == 0;
      mb__quant_params_free(params);
      params = NULL;
      status = mb__calibration_batches(job, &batches, &n_batches, &owned, err);
      if (!status)
        status = mb__calibrate_cached(
            job->config, job->model, passes_before, model,
            (const mb_tensor *const *const *)batches, n_batches, job->n_inputs,
            &qo, &params, &calibration_hit, err);
      if (!status && keep_float)
        status = mb__model_clone(model, &copy, err);
      if (!status)
        status = mb__quantize_static(keep_float ? copy : model, params, &qo,
                                     &qs, err);
      mb_model_free(copy);
      copy = NULL;
      if (!status && quant_path)
        status = mb__quant_params_write_json(params, quant_path, err);
    } else {
      status = mb__passes_run(model, step, &po, &stats, err);
      if (!status)
        snprintf(summary + used, ssize - used, "%s%s: %d -> %d nodes",
                 used ? "; " : "", step, stats.nodes_before, stats.nodes_after);
      /* The passes run so far, for the calibration cache's key. */
      size_t n = strlen(passes_before);
      snprintf(passes_before + n, sizeof passes_before - n, "%s%s",
               n ? "," : "", step);
      continue;
    }
    if (!status && !(strcmp(step, "quantize_nncf") == 0 && !why[0]))
      snprintf(summary + used, ssize - used,
               "%s%s: %d nodes quantised, %d left in float, %s",
               used ? "; " : "", step, qs.nodes_quantized, qs.nodes_skipped,
               mb__int8_weights_words(qo.weights));
    if (!status && n_batches) {
      used = strlen(summary);
      snprintf(summary + used, ssize - used, " (%d calibration batches, %s%s)",
               n_batches,
               job->config->calibration_dir ? "--calibration-inputs"
               : owned                      ? "generated"
                                            : "the given inputs",
               calibration_hit ? "; the calibration from the cache" : "");
    }
    used = strlen(passes_before);
    snprintf(passes_before + used, sizeof passes_before - used, "%s%s",
             used ? "," : "", step);
  }
  if (!status)
    status = mb__model_serialize(model, bytes_out, size_out, err);
  if (status)
    mb__error_prefix(err, status, "converting (%s)", def->steps);
  mb__calibration_batches_free(batches, n_batches, job->n_inputs, owned);
  if (!status && params_out) {
    *params_out = params;
    params = NULL;
  }
  mb__quant_params_free(params);
  mb_model_free(model);
  return status;
}

static mb_status calibration_key(const mb_bench_job *job, char *out,
                                 size_t size, mb_error *err) {
  const mb_bench_config *c = job->config;
  if (!c->calibration_dir && !(c->inputs_dir || c->loader)) {
    snprintf(out, size, ";calibration=%d generated, seed %llu",
             c->calibration_samples > 0 ? c->calibration_samples
                                        : DEFAULT_CALIBRATION_SAMPLES,
             (unsigned long long)c->seed);
    return MB_STATUS_OK;
  }
  mb_tensor ***batches = NULL;
  int n = 0;
  bool owned = false;
  mb_status status = mb__calibration_batches(job, &batches, &n, &owned, err);
  if (!status) {
    mb_sha256 ctx;
    uint8_t digest[32];
    char hex[65];
    mb__sha256_init(&ctx);
    for (int b = 0; b < n; b++)
      for (int i = 0; i < job->n_inputs; i++) {
        const mb_tensor *t = batches[b][i];
        mb__sha256_update(&ctx, &t->dtype, sizeof t->dtype);
        mb__sha256_update(&ctx, t->dims, (size_t)t->rank * sizeof *t->dims);
        mb__sha256_update(&ctx, t->data, t->nbytes);
      }
    mb__sha256_final(&ctx, digest);
    mb__sha256_hex(digest, hex);
    snprintf(out, size, ";calibration=%d given batches, sha256 %.16s", n, hex);
  }
  mb__calibration_batches_free(batches, n, job->n_inputs, owned);
  return status;
}

/* Does the conversion calibrate (static quantisation)? */
static bool calibrating(const mb_conversion_def *def) {
  return def->steps && (strstr(def->steps, "quantize_static") ||
                        strstr(def->steps, "quant_params") ||
                        strstr(def->steps, "quantize_nncf"));
}

/* Does its runtime need the parameters (the engines' own int8)? */
static bool needs_params(const mb_conversion_def *def) {
  return def->steps && strstr(def->steps, "quant_params");
}

/* Makes wb->model from wb->bytes (the converted model). */
static mb_status load_converted(mb_worker_build *wb, mb_error *err) {
  return mb_model_load_memory(wb->bytes, wb->size, NULL, &wb->model, err);
}

/* Converting without the cache: in memory only. */
static mb_status convert_uncached(const mb_bench_job *job,
                                  const mb_conversion_def *def,
                                  mb_runtime_options *options,
                                  mb_bench_result *result, mb_worker_build *wb,
                                  mb_error *err) {
  char summary[1024];
  double t0 = mb__now();
  mb_status status =
      mb__convert_for_job(job, def, NULL, &wb->params, &wb->bytes, &wb->size,
                          summary, sizeof summary, err);
  if (!status)
    status = load_converted(wb, err);
  options->quant_params = wb->params;
  result->build_ms = (mb__now() - t0) * 1e3;
  if (!status && summary[0])
    mb__log(MB_LOG_INFO, "%s: %s", def->name, summary);
  return status;
}

static void warn(mb_bench_result *result, const char *what,
                 const mb_error *err) {
  mb__result_add_warning(result, "build cache: %s: %s (ran without it)", what,
                         err->message);
}

/* Without the cache (none asked for, or trouble with it): a conversion
 * still converts, in memory; every other kind builds nothing. */
static mb_status build_without_cache(build_kind kind, const mb_bench_job *job,
                                     const mb_conversion_def *def,
                                     mb_runtime_options *options,
                                     mb_bench_result *result,
                                     mb_worker_build *wb, mb_error *err) {
  return kind == BUILD_CONVERT
             ? convert_uncached(job, def, options, result, wb, err)
             : MB_STATUS_OK;
}

/* The key's options: everything besides the model that changes what is
 * built, written into opts. Fails only when the calibration data cannot
 * be read to hash it. */
static mb_status build_options(const mb_bench_job *job,
                               const mb_conversion_def *def,
                               const mb_runtime *rt,
                               mb_int8_weights int8_weights, char *opts,
                               size_t size, mb_error *err) {
  const mb_bench_config *c = job->config;
  /* Calibration inputs for static quantisation (generated: how many and
   * the seed; given: the data). */
  bool calibrates = calibrating(def);
  char calib[200] = "";
  mb_status status = calibrates ? calibration_key(job, calib, sizeof calib, err)
                                : MB_STATUS_OK;
  if (status)
    return status;
  if (calibrates && c->calibration_method == 1) {
    size_t used = strlen(calib);
    snprintf(calib + used, sizeof calib - used, ";method=percentile");
  }
  /* Which quantiser: NNCF's version, or modelbench's own where NNCF is
   * missing; a build by one is not reused for the other. */
  if (def->steps && strstr(def->steps, "quantize_nncf")) {
    mb_nncf_tool nncf;
    char why[600];
    size_t used = strlen(calib);
    snprintf(calib + used, sizeof calib - used, ";quantizer=%s%s",
             nncf_for(job, def, &nncf, why, sizeof why) ? "nncf-"
                                                        : "modelbench",
             nncf.version);
  }
  /* The int8 form: a model quantised for one CPU's kernels is not reused
   * on a CPU (or an ISA cap) that needs the other. */
  if (int8_weights != MB_INT8_WEIGHTS_AUTO) {
    size_t used = strlen(calib);
    snprintf(calib + used, sizeof calib - used, ";int8_weights=%s",
             mb_int8_weights_name(int8_weights));
  }
  char kept[64] = "";
  if (mb__conversion_quantizes(def))
    mb__keep_float_key(c, kept, sizeof kept);
  snprintf(opts, size, "opt_level=%s;precision=%s%s%s%s",
           opt_level_name(def->opt_level), mb_precision_name(def->precision),
           rt->hybrid && c->no_fallback ? ";no_fallback" : "", calib, kept);
  return MB_STATUS_OK;
}

/* Opens the conversion's build in the cache under its key. A host build
 * that kept nothing is opened again, to be rebuilt. cache_dir, inputs,
 * opts, runtime_version: borrowed. *build_out: mb__build_close. */
static mb_status open_build(const mb_bench_job *job,
                            const mb_conversion_def *def, build_kind kind,
                            const char *cache_dir, const char *inputs,
                            const char *opts, const char *runtime_version,
                            mb_rebuild_policy policy, mb_build **build_out,
                            mb_error *err) {
  char machine[512];
  const mb_model_files *files = job->files;
  bool scripted = files && files->script && files->script[0];
  mb_build_key key = {
      .model_path = job->model_path,
      .source_script = scripted ? files->script : NULL,
      .source_class = scripted ? files->name : NULL,
      .source_hash = scripted ? files->sha256 : NULL,
      /* A host conversion builds from the module whatever other forms the
       * manifest offers: its key is the module's content, the same whether
       * or not an ONNX export was made (and hashed into job->model). */
      .model_sha256 = kind == BUILD_HOST && files
                          ? (files->content_sha256[0] ? files->content_sha256
                                                      : files->sha256)
                          : mb_model_sha256(job->model),
      .inputs = inputs,
      .conversion = def->name,
      .steps = def->name,
      .options = opts,
      .runtime = def->runtime,
      .runtime_version = runtime_version,
      .machine =
          mb__build_machine_string(&job->machine, machine, sizeof machine),
  };
  mb_status status = mb__build_open(cache_dir, &key, policy, build_out, err);
  if (!status && mb__build_hit(*build_out) && kind == BUILD_HOST &&
      policy != MB_REBUILD_NEVER &&
      mb__build_state(*build_out)->n_artifacts == 0) {
    /* A host build that kept nothing (an older modelbench's record, or an
     * option with nothing to save) reuses nothing: convert again, and keep
     * what the conversion saves now. */
    mb__build_close(*build_out);
    *build_out = NULL;
    status = mb__build_open(cache_dir, &key, MB_REBUILD_ALWAYS, build_out, err);
  }
  return status;
}

/* A hit: points the runtime at what the build kept. What cannot be read
 * back is a warning, and the conversion is made without the cache. */
static mb_status use_hit(const mb_bench_job *job, const mb_conversion_def *def,
                         build_kind kind, mb_runtime_options *options,
                         mb_bench_result *result, mb_worker_build *wb,
                         mb_error *err) {
  mb_error e = {MB_STATUS_OK, ""};
  result->cache_hit = 1;
  result->build_ms = 0.0;
  if (kind == BUILD_HOST) {
    options->build_dir = mb__build_folder(wb->build);
    options->build_hit = 1;
  }
  if (kind == BUILD_ORT_OPTIMIZED && use_ort_artifact(wb, options, &e)) {
    warn(result, "cannot read the cached ORT model", &e);
    options->opt_level = def->opt_level;
  }
  if (kind == BUILD_CONVERT) {
    char path[PATH_MAX], qpath[PATH_MAX];
    if (!mb__build_path(wb->build, CONVERTED_ARTIFACT, path, sizeof path) ||
        mb__read_file(path, &wb->bytes, &wb->size, &e) ||
        load_converted(wb, &e) ||
        (needs_params(def) &&
         (!mb__build_path(wb->build, QUANT_ARTIFACT, qpath, sizeof qpath) ||
          mb__quant_params_read_json(qpath, &wb->params, &e)))) {
      warn(result, "cannot load the cached converted model", &e);
      free(wb->bytes);
      wb->bytes = NULL;
      mb_model_free(wb->model);
      wb->model = NULL;
      return convert_uncached(job, def, options, result, wb, err);
    }
    options->quant_params = wb->params;
  }
  if (mb__build_mark_hit(wb->build, &e))
    warn(result, "cannot record the hit", &e);
  return MB_STATUS_OK;
}

/* A miss's conversion: converts, keeps the model (and our quantisation
 * parameters) as artifacts, and loads the converted model. */
static mb_status build_converted(const mb_bench_job *job,
                                 const mb_conversion_def *def, const char *path,
                                 mb_runtime_options *options,
                                 mb_worker_build *wb, mb_error *err) {
  char qpath[PATH_MAX], summary[1024];
  /* NNCF's model has no parameters of ours to keep. */
  const char *q =
      calibrating(def) && !strstr(def->steps, "quantize_nncf") &&
              mb__build_path(wb->build, QUANT_ARTIFACT, qpath, sizeof qpath)
          ? qpath
          : NULL;
  mb_status status =
      mb__convert_for_job(job, def, q, &wb->params, &wb->bytes, &wb->size,
                          summary, sizeof summary, err);
  options->quant_params = wb->params;
  if (!status)
    status = mb__write_file(path, wb->bytes, wb->size, err);
  if (!status && q)
    status = mb__build_add_artifact(wb->build, QUANT_ARTIFACT, err);
  if (!status)
    status = load_converted(wb, err);
  if (!status && summary[0])
    mb__log(MB_LOG_INFO, "%s: %s", def->name, summary);
  return status;
}

/* A miss: builds now and records the build, ok or failed. A failed
 * conversion fails; any other failed build is a warning. */
static mb_status build_now(const mb_bench_job *job,
                           const mb_conversion_def *def, const mb_runtime *rt,
                           build_kind kind, mb_runtime_options *options,
                           mb_bench_result *result, mb_worker_build *wb,
                           mb_error *err) {
  char path[PATH_MAX];
  mb_error e = {MB_STATUS_OK, ""};
  mb_status status = MB_STATUS_OK;
  result->cache_hit = 0;
  double t0 = mb__now();
  if (kind == BUILD_HOST) {
    /* The host's prepare is the conversion: it saves into the folder, and
     * mb__worker_build_prepared ends the build. */
    options->build_dir = mb__build_folder(wb->build);
    options->build_hit = 0;
    wb->host_pending = 1;
    wb->host_t0 = t0;
    return MB_STATUS_OK;
  }
  const char *artifact = kind == BUILD_ORT_OPTIMIZED ? ORT_ARTIFACT
                         : kind == BUILD_PARTITION   ? PARTITION_ARTIFACT
                         : kind == BUILD_CONVERT     ? CONVERTED_ARTIFACT
                                                     : NULL;
  const char *stage = kind == BUILD_ORT_OPTIMIZED ? "optimize"
                      : kind == BUILD_PARTITION   ? "partition"
                      : kind == BUILD_CONVERT     ? "convert"
                                                  : "record";
  if (artifact && !mb__build_path(wb->build, artifact, path, sizeof path))
    status = mb__error(&e, MB_STATUS_INTERNAL, "bad artifact path");
  if (!status && kind == BUILD_ORT_OPTIMIZED)
    status = build_ort(job, rt, options, path, &e);
  if (!status && kind == BUILD_PARTITION)
    status = write_partition(job, def, path, &e);
  if (!status && kind == BUILD_CONVERT)
    status = build_converted(job, def, path, options, wb, &e);
  if (!status && artifact)
    status = mb__build_add_artifact(wb->build, artifact, &e);
  double ms = (mb__now() - t0) * 1e3;
  mb__build_stage(wb->build, stage, ms, NULL);
  mb_error fe = {MB_STATUS_OK, ""};
  if (mb__build_finish(wb->build, status, status ? e.message : NULL, ms, &fe) &&
      !status)
    warn(result, "cannot record the build", &fe);
  result->build_ms = ms;
  if (status && kind == BUILD_CONVERT) {
    /* The conversion itself failed: that is the conversion's error. */
    *err = e;
    return status;
  }
  if (status) {
    warn(result, "build failed", &e);
    return MB_STATUS_OK;
  }
  if (kind == BUILD_ORT_OPTIMIZED && use_ort_artifact(wb, options, &e)) {
    warn(result, "cannot read the ORT model just built", &e);
    options->opt_level = def->opt_level;
  }
  return MB_STATUS_OK;
}

mb_status mb__worker_build(const mb_bench_job *job,
                           const mb_conversion_def *def, const mb_runtime *rt,
                           mb_runtime_options *options, mb_bench_result *result,
                           mb_worker_build *wb, mb_error *err) {
  const mb_bench_config *c = job->config;
  char cache_dir[PATH_MAX], opts[256];
  char *inputs = NULL;
  mb_error e = {MB_STATUS_OK, ""};
  memset(wb, 0, sizeof *wb);
  result->cache_hit = -1;
  result->build_ms = -1.0;
  result->int8_weights =
      mb__job_int8_form(job, def, result->int8_form, sizeof result->int8_form);
  build_kind kind = kind_of(def, rt);
  /* INT8_STATIC+OPENVINO without NNCF still runs, quantised by modelbench's
   * own calibration: the result says so. */
  if (def->steps && strstr(def->steps, "quantize_nncf")) {
    mb_nncf_tool nncf;
    char why[600];
    if (!nncf_for(job, def, &nncf, why, sizeof why))
      mb__result_add_warning(
          result, "quantised by modelbench's calibration, not NNCF: %s", why);
  }
  if (!c->build_cache)
    return build_without_cache(kind, job, def, options, result, wb, err);
  if (mb__cache_dir(c->cache_dir, cache_dir, sizeof cache_dir, &e)) {
    warn(result, "no cache folder", &e);
    return build_without_cache(kind, job, def, options, result, wb, err);
  }
  if (input_signature(job, &inputs, &e)) {
    warn(result, "input signature", &e);
    return build_without_cache(kind, job, def, options, result, wb, err);
  }
  if (build_options(job, def, rt, result->int8_weights, opts, sizeof opts,
                    &e)) {
    free(inputs);
    warn(result, "calibration data", &e);
    return convert_uncached(job, def, options, result, wb, err);
  }
  /* A build for a GPU (a module traced or compiled there) is not a CPU's:
   * the device is part of the key; CPU keys stay as they were. */
  if (options->device != MB_DEVICE_CPU) {
    size_t used = strlen(opts);
    snprintf(opts + used, sizeof opts - used, ";device=%s",
             mb_device_name(options->device));
  }
  mb_rebuild_policy policy = c->rebuild == 1   ? MB_REBUILD_ALWAYS
                             : c->rebuild == 2 ? MB_REBUILD_NEVER
                                               : MB_REBUILD_IF_NEEDED;
  mb_status status =
      open_build(job, def, kind, cache_dir, inputs, opts,
                 result->runtime_version, policy, &wb->build, &e);
  free(inputs);
  if (status == MB_STATUS_NOT_FOUND && policy == MB_REBUILD_NEVER)
    return mb__error(err, status, "build cache: %s", e.message);
  if (status) {
    warn(result, "cannot open the build", &e);
    return build_without_cache(kind, job, def, options, result, wb, err);
  }
  snprintf(result->build_id, sizeof result->build_id, "%s",
           mb__build_id(wb->build));
  snprintf(result->build_reason, sizeof result->build_reason, "%s",
           mb__build_reason(wb->build));
  if (mb__build_warning(wb->build)[0])
    mb__result_add_warning(result, "build cache: %s",
                           mb__build_warning(wb->build));
  if (mb__build_hit(wb->build))
    return use_hit(job, def, kind, options, result, wb, err);
  return build_now(job, def, rt, kind, options, result, wb, err);
}

/* Lists the files the host saved in the build folder as its artifacts;
 * returns how many. */
static int add_host_artifacts(mb_build *build) {
  DIR *d = opendir(mb__build_folder(build));
  struct dirent *entry;
  char path[PATH_MAX];
  int n = 0;
  while (d && (entry = readdir(d)))
    if (entry->d_name[0] != '.' &&
        mb__build_path(build, entry->d_name, path, sizeof path) &&
        mb__build_add_artifact(build, entry->d_name, NULL) == MB_STATUS_OK)
      n++;
  if (d)
    closedir(d);
  return n;
}

void mb__worker_build_prepared(mb_worker_build *wb, mb_bench_result *result,
                               mb_status status, const char *error) {
  if (!wb->host_pending || !wb->build)
    return;
  wb->host_pending = 0;
  double ms = (mb__now() - wb->host_t0) * 1e3;
  int n = status ? 0 : add_host_artifacts(wb->build);
  mb__build_stage(wb->build, "convert", ms, NULL);
  mb_error fe = {MB_STATUS_OK, ""};
  if (mb__build_finish(wb->build, status, status ? error : NULL, ms, &fe) &&
      !status)
    warn(result, "cannot record the build", &fe);
  if (status == MB_STATUS_OK && n == 0) {
    result->cache_hit = -1; /* nothing kept: nothing a later run reuses */
    result->build_ms = -1.0;
  } else {
    result->build_ms = ms;
  }
}

void mb__worker_build_done(mb_worker_build *wb, const mb_bench_config *c) {
  if (wb->build && c->lean_cache)
    mb__build_lean(wb->build, NULL);
  mb__build_close(wb->build);
  wb->build = NULL;
}

void mb__worker_build_free(mb_worker_build *wb) {
  mb__build_close(wb->build);
  mb__quant_params_free(wb->params);
  mb_model_free(wb->model);
  free(wb->bytes);
  memset(wb, 0, sizeof *wb);
}
