/* mb_runner: one conversion of an ONNX model prepared and run in the calling
 * process, outside any benchmark. The Python front's function profiles use
 * it to run a module's ONNX export under ORT_CPU, ONEDNN, ... in place of
 * the module (validate=True), where the engine's workers cannot be.
 *
 * The model the conversion runs is made as mb_profile_model makes it: the
 * row's steps (OPTIMIZE+, FP16+, INT8_*+) applied to the graph, calibrated
 * on the example inputs, without the build cache. */
#include "bench/bench_internal.h"
#include "conversions/conversion.h"
#include "passes/quantize.h"

#include <stdlib.h>
#include <string.h>

struct mb_runner {
  const mb_conversion_def *def;
  const mb_runtime *rt;
  mb_model_files files;
  mb_model *converted; /* the model after the row's steps, or NULL */
  void *converted_bytes;
  mb_quant_params *params;
  void *session;
  int n_inputs, n_outputs;
  /* The example inputs' shapes: a hybrid runtime compiled for them. */
  int *ranks;
  int64_t (*dims)[MB_MAX_RANK];
};

/* The model after the row's steps, as bench builds it (no cache). */
static mb_status convert_steps(mb_runner *r, const mb_bench_config *config,
                               mb_tensor **example, size_t *size,
                               mb_error *err) {
  mb_bench_job job;
  char summary[256];
  mb_status status;
  memset(&job, 0, sizeof job);
  job.model = r->files.model;
  job.files = &r->files;
  job.model_bytes = r->files.onnx_bytes;
  job.model_size = r->files.onnx_size;
  job.config = config;
  job.n_inputs = r->n_inputs;
  job.n_outputs = r->n_outputs;
  job.n_samples = 1;
  job.samples = &example;
  if ((status = mb__convert_for_job(&job, r->def, NULL, &r->params,
                                    &r->converted_bytes, size, summary,
                                    sizeof summary, err)))
    return status;
  return mb_model_load_memory(r->converted_bytes, *size, NULL, &r->converted,
                              err);
}

mb_status mb_runner_create(const char *model_path, const char *conversion,
                           int threads, int n_inputs,
                           const mb_tensor *const *example_inputs,
                           mb_runner **runner_out, mb_error *err) {
  mb_bench_config defaults, *config = &defaults;
  mb_conversion_info info;
  mb_runner *r = NULL;
  mb_tensor **example = NULL;
  int index;
  mb_status status;
  if (!runner_out)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT, "runner_out is NULL");
  *runner_out = NULL;
  if (!model_path || !conversion)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "a model and a conversion are needed");
  mb_bench_config_init(&defaults);
  defaults.threads = MB_MAX(threads, 1);
  if ((status = mb_conversion_find(conversion, &index, err)) ||
      (status = mb_conversion_get(index, &info, err)))
    return status;
  if (info.format != MB_MODEL_FORMAT_ONNX)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "%s runs the %s form of a model, not its ONNX graph: "
                     "a runner runs ONNX conversions only",
                     info.name, mb_model_format_name(info.format));
  if (!info.available)
    return mb__error(err, MB_STATUS_UNAVAILABLE, "%s is not available here: %s",
                     info.name, info.reason);
  if (!(r = calloc(1, sizeof *r)))
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot allocate a runner");
  r->def = mb__conversion_def(index);
  r->rt = mb__runtime_find(r->def->runtime);
  if (!r->rt || !r->rt->prepare || !r->rt->run || !r->rt->fetch_outputs) {
    status = mb__error(err, MB_STATUS_UNSUPPORTED,
                       "runtime '%s' of %s cannot run in a runner",
                       r->def->runtime, r->def->name);
    goto done;
  }
  if ((status = mb__model_files_open(model_path, config, &r->files, err)))
    goto done;
  if (!(r->files.formats & (1u << MB_MODEL_FORMAT_ONNX)) ||
      !r->files.onnx_bytes) {
    status =
        mb__error(err, MB_STATUS_UNSUPPORTED, "%s: no ONNX graph", model_path);
    goto done;
  }
  r->n_inputs = mb_model_input_count(r->files.model);
  r->n_outputs = mb_model_output_count(r->files.model);
  if (n_inputs != r->n_inputs || !example_inputs) {
    status = mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "%s takes %d inputs, %d example inputs given",
                       model_path, r->n_inputs, example_inputs ? n_inputs : 0);
    goto done;
  }
  if (!(r->ranks = calloc((size_t)n_inputs + 1, sizeof *r->ranks)) ||
      !(r->dims = calloc((size_t)n_inputs + 1, sizeof *r->dims))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot allocate shapes");
    goto done;
  }
  for (int i = 0; i < n_inputs; i++) {
    if (!example_inputs[i]) {
      status = mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                         "example input %d is NULL", i);
      goto done;
    }
    r->ranks[i] = example_inputs[i]->rank;
    memcpy(r->dims[i], example_inputs[i]->dims,
           sizeof(int64_t) * (size_t)example_inputs[i]->rank);
  }
  /* The job's samples are not const; they are only read. */
  if (!(example = calloc((size_t)n_inputs + 1, sizeof *example))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot allocate inputs");
    goto done;
  }
  memcpy(example, example_inputs, sizeof *example * (size_t)n_inputs);
  const mb_model *model = r->files.model;
  const void *bytes = r->files.onnx_bytes;
  size_t size = r->files.onnx_size;
  if (r->def->steps && r->def->steps[0]) {
    if ((status = convert_steps(r, config, example, &size, err)))
      goto done;
    model = r->converted;
    bytes = r->converted_bytes;
  }
  mb_runtime_options options = {
      .threads = MB_MAX(config->threads, 1),
      .opt_level = r->def->opt_level,
      .device = r->def->device,
      .precision = r->def->precision,
      .example_inputs = example_inputs,
      .no_fallback = config->no_fallback,
      .quant_params = r->params,
      .conversion = r->def->name,
      .model_path = r->files.paths[MB_MODEL_FORMAT_ONNX],
      .seed = config->seed,
  };
  if ((status =
           r->rt->prepare(model, bytes, size, &options, &r->session, err))) {
    r->session = NULL;
    mb__error_prefix(err, status, "preparing %s", r->def->name);
    goto done;
  }
  *runner_out = r;
  r = NULL;
done:
  free(example);
  mb_runner_free(r);
  return status;
}

int mb_runner_output_count(const mb_runner *runner) {
  return runner ? runner->n_outputs : 0;
}

mb_status mb_runner_run(mb_runner *runner, int n_inputs,
                        const mb_tensor *const *inputs, int n_outputs,
                        mb_tensor **outputs, mb_error *err) {
  mb_status status;
  if (!runner || !inputs || !outputs)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "runner, inputs and outputs are needed");
  for (int i = 0; i < n_outputs; i++)
    outputs[i] = NULL;
  if (n_inputs != runner->n_inputs || n_outputs != runner->n_outputs)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "%s: %d inputs and %d outputs given, the model has %d "
                     "and %d",
                     runner->def->name, n_inputs, n_outputs, runner->n_inputs,
                     runner->n_outputs);
  for (int i = 0; i < n_inputs; i++) {
    if (!inputs[i])
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT, "input %d is NULL", i);
    /* A hybrid runtime compiled its segments for the example's shapes. */
    if (runner->rt->hybrid &&
        (inputs[i]->rank != runner->ranks[i] ||
         memcmp(inputs[i]->dims, runner->dims[i],
                sizeof(int64_t) * (size_t)runner->ranks[i])))
      return mb__error(err, MB_STATUS_UNSUPPORTED,
                       "%s was prepared for the example inputs' shapes; "
                       "input %d has another shape",
                       runner->def->name, i);
  }
  if ((status = runner->rt->run(runner->session, inputs, err)) ||
      (status = runner->rt->fetch_outputs(runner->session, outputs, err)))
    mb__error_prefix(err, status, "running %s", runner->def->name);
  return status;
}

void mb_runner_free(mb_runner *runner) {
  if (!runner)
    return;
  if (runner->session)
    runner->rt->release(runner->session);
  mb_model_free(runner->converted);
  free(runner->converted_bytes);
  mb__quant_params_free(runner->params);
  mb__model_files_close(&runner->files);
  free(runner->ranks);
  free(runner->dims);
  free(runner);
}
