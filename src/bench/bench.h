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

/* ---- the roofline (peaks.c, roofline.c) ---- */

/* $MODELBENCH_NO_ROOFLINE=1 turns the roofline off like --no-roofline. */
#define MB_NO_ROOFLINE_ENV "MODELBENCH_NO_ROOFLINE"

/* The folder of kept calibrations under the cache folder
 * (calibration_cache.c): <key>.json each; `cache delete --all` empties
 * it. */
#define MB_CALIBRATION_CACHE_SUBDIR "calibration"

/* This machine's peaks at `threads` (mb_machine_peaks): read from
 * <cache>/machine/peaks-<flags hash>-t<threads>.json when its key (CPU
 * model, flags' hash, threads) matches and `remeasure` is false, else
 * measured in a child process (a few seconds) and written there
 * atomically (0600). A missing, corrupt or mismatched file is measured
 * again, never an error. cache_dir: NULL for the default folder. Fails
 * only when nothing could be measured (fork, out of memory); writing the
 * cache failing leaves a note and succeeds. */
mb_status mb__peaks_get(const char *cache_dir, int threads, bool remeasure,
                        mb_machine_peaks *peaks_out, mb_error *err);
/* Measures the peaks in this process (what the child of mb__peaks_get
 * runs). */
void mb__peaks_measure(int threads, mb_machine_peaks *peaks);
/* The peaks' JSON object (the cache file, reports' "peaks"), and back:
 * reading fails with MB_STATUS_PARSE naming the key at fault. */
struct mb_json;
struct mb_json_value;
void mb__peaks_write_json(struct mb_json *j, const mb_machine_peaks *peaks);
mb_status mb__peaks_read_json(const struct mb_json_value *v, const char *path,
                              mb_machine_peaks *peaks, mb_error *err);

/* The roofline of one result (mb_roofline): flops per run (the batch
 * included), bytes moved per run, median latency in ms, and the
 * precision the result ran at with the share of FLOPs at that precision
 * (< 0: all of them; the rest ran in fp32), against peaks. Pure: every
 * figure comes from the arguments. */
void mb__roofline_compute(double flops, double bytes, double median_ms,
                          mb_precision precision, double precision_share,
                          const mb_machine_peaks *peaks, mb_roofline *out);
/* Bytes a run moves at `precision`: the share of weights at that
 * precision (precision_share, < 0 all) at its width (int8 1 byte,
 * fp16/bf16 2) unless the model is pre-quantised, the rest as stored;
 * inputs once; activations twice (written, then read) as stored; < 0
 * when any part is unknown. */
double mb__roofline_bytes(const mb_bench_report *report, mb_precision precision,
                          double precision_share);
/* Fills result->roofline from the report's peaks and model figures. */
void mb__roofline_fill(const mb_bench_report *report, mb_bench_result *result);

/* ---- tuned models (tune_artifact.c) ---- */

/* The metadata_props key of `tune --output`'s model: JSON, docs/json-schema.md
 * "The tuned model". */
#define MB_TUNE_METADATA_KEY "modelbench.tune"

/* The configuration a tuned model records, for `bench` to run it again. */
typedef struct mb_tune_recorded {
  bool found;           /* the file carries MB_TUNE_METADATA_KEY */
  char conversion[128]; /* "bench_conversion": what runs the file */
  int threads;
  int batch_size; /* "batch_size"; 0 when the file does not say */
  int n_keep_float;
  char **keep_float; /* owned: mb__tune_recorded_free */
} mb_tune_recorded;

/* Reads path's MB_TUNE_METADATA_KEY. A file without it, or not an ONNX
 * model at all (TorchScript, a manifest), gives MB_STATUS_OK with found
 * false; a record that does not parse fails with MB_STATUS_PARSE naming
 * the file and the field. *rec: release with mb__tune_recorded_free. */
mb_status mb__tune_recorded_read(const char *path, mb_tune_recorded *rec,
                                 mb_error *err);
void mb__tune_recorded_free(mb_tune_recorded *rec);

#endif /* MB_BENCH_BENCH_H */
