/* mb_convert_model_file: the converted model of one conversion, written
 * out for deployment (`modelbench convert`). The same conversion code as
 * the benchmark's build step, on the same inputs. */
#include "bench/bench_internal.h"
#include "bench/data.h"
#include "conversions/conversion.h"

#include <stdlib.h>

mb_status mb__convert_model_bytes(const char *model_path,
                                  const char *conversion,
                                  const mb_bench_config *config,
                                  const char *out_path, void **bytes_out,
                                  size_t *size_out, char *summary,
                                  size_t summary_size, mb_error *err) {
  mb_bench_config defaults;
  mb_model *model = NULL;
  mb_input_source *source = NULL;
  mb_tensor **inputs = NULL, ***samples = NULL;
  void *bytes = NULL;
  size_t size = 0;
  int64_t n_samples = 0;
  int index, n_inputs = 0;
  char line[512] = "", *qpath = NULL;
  mb_status status;
  if (!config) {
    mb_bench_config_init(&defaults);
    config = &defaults;
  }
  if (!model_path || !conversion || !out_path)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "a model, a conversion and an output path are needed");
  if ((status = mb_conversion_find(conversion, &index, err)))
    return status;
  const mb_conversion_def *def = mb__conversion_def(index);
  if ((status = mb_model_load(model_path, &model, err)))
    return status;
  if ((status = mb__keep_float_check(model, config, err)))
    goto done;
  if (!def->steps || !def->steps[0]) {
    /* Nothing to convert: the model as it is. */
    status = mb__read_file(model_path, &bytes, &size, err);
    snprintf(line, sizeof line,
             "%s has no conversion steps: the model as "
             "given",
             def->name);
    goto done;
  }
  if ((status = mb__input_source_open(model, config, &source, err)))
    goto done;
  n_inputs = mb_model_input_count(model);
  /* Real inputs calibrate (every sample); generated ones give shapes. */
  n_samples =
      config->inputs_dir || config->loader ? mb__input_source_count(source) : 1;
  if (!(samples = calloc((size_t)n_samples, sizeof *samples))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot allocate inputs");
    goto done;
  }
  for (int64_t i = 0; i < n_samples; i++) {
    if (!(samples[i] = calloc((size_t)n_inputs + 1, sizeof **samples))) {
      status =
          mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot allocate inputs");
      goto done;
    }
    if ((status = mb__input_source_get(source, i, samples[i], err)))
      goto done;
  }
  mb_bench_job job;
  memset(&job, 0, sizeof job);
  job.model = model;
  job.model_path = model_path;
  job.config = config;
  job.n_inputs = n_inputs;
  job.n_outputs = mb_model_output_count(model);
  job.n_samples = n_samples;
  job.samples = samples;
  /* Engines' int8 (the quant_params step): the float model plus the
   * parameters they quantise with, beside it as OUT.quant_params.json. */
  if (def->steps && strstr(def->steps, "quant_params")) {
    size_t len = strlen(out_path);
    if (len > 5 && strcmp(out_path + len - 5, ".onnx") == 0)
      len -= 5;
    if (!(qpath = malloc(len + sizeof ".quant_params.json"))) {
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
    snprintf(qpath, len + sizeof ".quant_params.json", "%.*s.quant_params.json",
             (int)len, out_path);
  }
  if ((status = mb__convert_for_job(&job, def, qpath, NULL, &bytes, &size, line,
                                    sizeof line, err)))
    goto done;
  if (qpath) {
    size_t used = strlen(line);
    snprintf(line + used, sizeof line - used,
             "; float model, quantisation parameters in %s", qpath);
  }
done:
  if (summary && summary_size)
    snprintf(summary, summary_size, "%s", status ? "" : line);
  for (int64_t i = 0; samples && i < n_samples; i++) {
    for (int k = 0; samples[i] && k < n_inputs; k++)
      mb_tensor_free(samples[i][k]);
    free(samples[i]);
  }
  free(samples);
  free(inputs);
  free(qpath);
  if (source)
    mb__input_source_close(source);
  if (!status) {
    *bytes_out = bytes;
    *size_out = size;
  } else {
    free(bytes);
  }
  mb_model_free(model);
  return status;
}

mb_status mb_convert_model_file(const char *model_path, const char *conversion,
                                const mb_bench_config *config,
                                const char *out_path, char *summary,
                                size_t summary_size, mb_error *err) {
  void *bytes = NULL;
  size_t size = 0;
  mb_status status =
      mb__convert_model_bytes(model_path, conversion, config, out_path, &bytes,
                              &size, summary, summary_size, err);
  if (!status)
    status = mb__write_file(out_path, bytes, size, err);
  if (status && summary && summary_size)
    summary[0] = '\0';
  free(bytes);
  return status;
}
