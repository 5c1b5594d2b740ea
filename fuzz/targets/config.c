/* The JSON config parser (`--config FILE`): any bytes give a config or an
 * error naming the key, never a crash; what is stored stays readable. */
#include "modelbench.h"
#include "targets.h"

#include <stdlib.h>
#include <string.h>

int mb__fuzz_config(const uint8_t *data, size_t size) {
  const char *path = mb__fuzz_write_file("config.json", data, size);
  mb_bench_config config;
  void *storage = NULL;
  mb_error err;
  if (!path)
    return 0;
  mb_bench_config_init(&config);
  if (mb_bench_config_load_json(path, &config, &storage, &err) ==
      MB_STATUS_OK) {
    /* Read everything the config points into storage, where ASan sees
     * any pointer that escaped it; indices must be the registry's. */
    size_t total = 0;
    for (int i = 0; i < config.n_conversions; i++)
      if (config.conversions[i] < 0 ||
          config.conversions[i] >= mb_conversion_count())
        abort();
    for (int i = 0; i < config.shapes.n_shapes; i++)
      total += strlen(config.shapes.shapes[i].name);
    for (int i = 0; i < config.n_ranges; i++)
      total += config.ranges[i].name ? strlen(config.ranges[i].name) : 0;
    total += config.inputs_dir ? strlen(config.inputs_dir) : 0;
    total += config.log_dir ? strlen(config.log_dir) : 0;
    (void)total;
  }
  free(storage);
  return 0;
}
