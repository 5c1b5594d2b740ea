/* What `bench MODEL` makes of a model file before any runtime sees it:
 * the sniffing of a zip (a TorchScript archive or a torch.save pickle,
 * from its end record, zip64 locator and central directory names), a bare
 * pickle, and the model manifest (JSON: formats, inputs, outputs,
 * reference). Opened with --trust-code and one --shape, so that a pickle
 * and a TorchScript file get as far as a one-form model. */
#include "bench/bench_internal.h"
#include "modelbench.h"
#include "targets.h"

int mb__fuzz_model_files(const uint8_t *data, size_t size) {
  mb_error err;
  const char *path = mb__fuzz_write_file("model.pt", data, size);
  if (!path)
    return 0;
  unsigned formats = 0;
  (void)mb_model_file_formats(path, &formats, &err);
  mb_bench_config config;
  mb_bench_config_init(&config);
  config.trust_code = 1;
  mb_input_shape shape = {"x", 2, {1, 4}};
  config.shapes.shapes = &shape;
  config.shapes.n_shapes = 1;
  mb_model_files files;
  if (mb__model_files_open(path, &config, &files, &err) == MB_STATUS_OK)
    mb__model_files_close(&files);
  return 0;
}
