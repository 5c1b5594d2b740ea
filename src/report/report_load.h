/* Reading a JSON report (docs/json-schema.md) back into mb_bench_report
 * values, so that what `modelbench bench --json` wrote on another machine
 * (a Slurm task, an SSH host) becomes a report again: printed as a table,
 * merged with others, written as CSV or HTML, stored in the results
 * database. Every field the writer writes is read; unknown keys are
 * ignored (fields are only ever added to the schema). */
#ifndef MB_REPORT_REPORT_LOAD_H
#define MB_REPORT_REPORT_LOAD_H

#include "core/internal.h"

/* Loads the report(s) of a JSON file: one report, or the {"reports": [...]}
 * form of a multi-model run. Fails with MB_STATUS_IO / MB_STATUS_PARSE
 * naming the file (and line and column of a malformed field). path:
 * borrowed. *reports_out: malloc'd array of *n_out reports, each released
 * with mb_bench_report_free, then free() the array. */
mb_status mb__reports_load_json(const char *path,
                                mb_bench_report ***reports_out, int *n_out,
                                mb_error *err);

/* Frees n reports and the array holding them; NULL is a no-op. */
void mb__reports_free(mb_bench_report **reports, int n);

#endif /* MB_REPORT_REPORT_LOAD_H */
