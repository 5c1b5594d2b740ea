/* `modelbench compare` reading JSON reports (docs/json-schema.md): the
 * bytes as run A, compared with themselves and with an empty run. */
#include "db/compare.h"
#include "db/results_db.h"
#include "modelbench.h"
#include "targets.h"

#include <stdlib.h>

int mb__fuzz_compare_json(const uint8_t *data, size_t size) {
  const char *path = mb__fuzz_write_file("report.json", data, size);
  mb_db_run *run = NULL;
  mb_compare_options options;
  mb_compare_row *rows = NULL;
  int n_rows = 0;
  mb_error err;
  if (!path || mb__run_load_json(path, &run, &err) != MB_STATUS_OK)
    return 0;
  mb__compare_options_init(&options);
  options.fail_on_regression_pct = 5;
  if (mb__compare_runs(run, run, &options, &rows, &n_rows, &err) ==
      MB_STATUS_OK) {
    /* A run against itself has no row that regressed. */
    for (int i = 0; i < n_rows; i++)
      if (rows[i].regression)
        abort();
    free(rows);
  }
  mb_db_run empty = {.source = "empty"};
  rows = NULL;
  if (mb__compare_runs(run, &empty, &options, &rows, &n_rows, &err) ==
      MB_STATUS_OK)
    free(rows);
  mb__db_run_free(run);
  return 0;
}
