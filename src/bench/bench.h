/* What the layers above the benchmark engine (reports' reader, the
 * executors, the CLI) use of it beyond include/modelbench.h: making a
 * report that is filled from elsewhere, and the option syntax of load
 * scenarios. Everything else of src/bench/ is bench_internal.h's, private
 * to this folder. */
#ifndef MB_BENCH_BENCH_H
#define MB_BENCH_BENCH_H

#include "core/internal.h"

/* ---- reports (engine.c) ---- */

/* An empty report that mb_bench_report_free releases, for code that fills
 * one from elsewhere (a JSON report read back, the merge of a run spread
 * over machines). Its strings and arrays go into *arena_out (freed with
 * the report); `results` must be malloc'd, and each result's own arrays
 * (warnings, accuracy, samples, backtrace, segments) too, as the engine's
 * are. NULL on OOM. */
mb_bench_report *mb__bench_report_create(mb_arena **arena_out);
/* The arena of a report made by the engine or mb__bench_report_create. */
mb_arena *mb__bench_report_arena(mb_bench_report *report);

/* ---- results (stats.c) ---- */

/* Frees what a result owns (accuracy, warnings, samples, backtrace) and
 * leaves those pointers NULL and counts 0. */
void mb__result_clear(mb_bench_result *result);

/* ---- settings (config.c) ---- */

/* Parses a --ci-target, "2%" or the share 0.02, into a share in (0, 1);
 * errors name the text. */
mb_status mb__ci_target_parse(const char *text, double *share_out,
                              mb_error *err);

/* Adds the speed-up of every ok result over `baseline` and its bootstrap
 * 95% interval (speedup_vs_baseline, speedup_ci) from their samples;
 * baseline may be NULL (no speed-ups). The engine and the executors' merge
 * both call it, so saved and merged reports agree. */
void mb__set_speedups(const mb_bench_result *baseline, mb_bench_result *results,
                      int n_results);

/* ---- load scenarios (load.c) ---- */

/* Sessions a load run may serve queries with (--concurrency). */
#define MB_LOAD_MAX_CONCURRENCY 64

/* Parses an SLO, "p99=20ms" ("p90=0.5s", "p99.9=20": milliseconds when no
 * unit), into its percentile (0, 100] and milliseconds > 0. */
mb_status mb__slo_parse(const char *text, double *percentile_out,
                        double *ms_out, mb_error *err);

#endif /* MB_BENCH_BENCH_H */
