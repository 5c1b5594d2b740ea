/* The results database: every `modelbench bench` run, kept in SQLite at
 * <cache dir>/results.db so that `history` can list runs and `compare` can
 * test two of them for a significant change.
 *
 * The database is opened in WAL mode with a busy timeout, so concurrent
 * bench runs (CI jobs sharing a cache) all get their runs stored; writes go
 * in one IMMEDIATE transaction each. The schema is versioned with PRAGMA
 * user_version and created or upgraded on open; a database written by a
 * newer modelbench is refused rather than misread.
 *
 * Tables (schema version 2; version 1 lacked runs.environment_json):
 *   runs(id, time_utc, tool_version, model_path, model_abspath,
 *        model_sha256, inputs, cpu_model, machine_json, config_json,
 *        environment_json)
 *   run_labels(run_id, key, value)
 *   results(run_id, position, conversion, conversion_id, status, error,
 *           device, runtime, runtime_version, median_ms, mean_ms, p90_ms,
 *           p99_ms, min_ms, max_ms, stddev_ms, throughput_sps, max_abs_err,
 *           load_ms, peak_rss_mb, iterations, samples)
 * Unknown figures are NULL; samples is a BLOB of little-endian float64s,
 * one per timed iteration in order. */
#ifndef MB_DB_RESULTS_DB_H
#define MB_DB_RESULTS_DB_H

#include "core/internal.h"
#include "db/environment.h"

/* File name of the database inside the cache folder. */
#define MB_DB_FILE_NAME "results.db"
/* The schema version this build writes (PRAGMA user_version). */
#define MB_DB_SCHEMA_VERSION 2
/* How long a writer waits for another one before giving up. */
#define MB_DB_BUSY_TIMEOUT_MS 10000

typedef struct mb_db mb_db;

/* One conversion's result as stored (or as read from a JSON report).
 * Strings are NULL when unknown; doubles are NAN when unknown. */
typedef struct mb_db_result {
  const char *conversion; /* never NULL */
  int conversion_id;
  mb_bench_status status;
  const char *error; /* NULL when ok */
  const char *device, *runtime, *runtime_version;
  double median_ms, mean_ms, p90_ms, p99_ms, min_ms, max_ms, stddev_ms;
  double throughput_sps, max_abs_err, load_ms, peak_rss_mb;
  int64_t iterations;
  int64_t n_samples;
  double *samples_ms; /* n_samples latencies, in order; NULL when none */
} mb_db_result;

/* One whole run with its results, loaded by mb__db_load_run (or by
 * mb__run_load_json in compare.h). Everything lives in `arena`; release
 * with mb__db_run_free. */
typedef struct mb_db_run {
  int64_t id;               /* 0 when the run did not come from the DB */
  const char *source;       /* "run 12" or the JSON file's path */
  const char *time_utc;     /* "2025-01-31T12:00:00Z", NULL when unknown */
  const char *tool_version; /* NULL when unknown */
  const char *model_path;   /* as given to bench; NULL when unknown */
  const char *model_sha256; /* NULL when unknown */
  const char *inputs;       /* "x:float32[1,3,224,224] ...", or NULL */
  const char *config_json;  /* the report's "config" object, or NULL */
  /* The report's "environment" flattened (db/environment.h); recorded is
   * false for a run stored without one (an older modelbench). */
  bool environment_recorded;
  int n_environment;
  mb_env_entry *environment;
  int n_labels;
  const char **labels; /* "key=value", sorted by key */
  int n_results;
  mb_db_result *results; /* in the run's order */
  mb_arena *arena;
} mb_db_run;

/* One line of `modelbench history`. Strings live in the list's arena. */
typedef struct mb_db_run_summary {
  int64_t id;
  const char *time_utc, *tool_version, *model_path, *model_sha256;
  const char *cpu_model; /* NULL when unknown */
  int n_results, n_ok;
  const char *best_conversion; /* lowest median among ok; NULL if none */
  double best_median_ms;       /* NAN when none */
  int n_labels;
  const char **labels; /* "key=value", sorted by key */
} mb_db_run_summary;

typedef struct mb_db_run_list {
  int n_runs;
  mb_db_run_summary *runs; /* newest first */
  mb_arena *arena;
} mb_db_run_list;

/* Which runs mb__db_list_runs returns. Every pointer is borrowed. */
typedef struct mb_db_run_filter {
  /* When either is set, a run matches if model_path equals its path as
   * given or its absolute path, OR model_sha256 equals its sha256 or (4+
   * hex digits) is a prefix of it. Both NULL: every model. */
  const char *model_path;
  const char *model_sha256;
  const char *const *labels; /* "key=value"; a run must carry all */
  int n_labels;
  int limit; /* at most this many runs; <= 0: all */
} mb_db_run_filter;

/* Opens (and with `create`, creates) the database at path, sets WAL mode
 * and the busy timeout, and creates or upgrades the schema. Without
 * `create`, a missing file fails with MB_STATUS_NOT_FOUND. A database of a
 * newer schema fails with MB_STATUS_UNSUPPORTED; a file that is not a
 * database with MB_STATUS_IO. path: borrowed. *db_out: release with
 * mb__db_close. */
mb_status mb__db_open(const char *path, bool create, mb_db **db_out,
                      mb_error *err);
/* Closes the database; NULL is a no-op. */
void mb__db_close(mb_db *db);
/* The path the database was opened with (owned by db). */
const char *mb__db_path(const mb_db *db);

/* Stores a bench report, its labels and every result with its samples in
 * one transaction, stamped with the current UTC time. report, labels:
 * borrowed. labels: n_labels "key=value" strings (checked with
 * mb__check_label; a key given twice is an error). run_id_out may be
 * NULL. Fails with MB_STATUS_INVALID_ARGUMENT on a bad label, MB_STATUS_IO
 * when SQLite fails (the transaction is rolled back). */
mb_status mb__db_store_report(mb_db *db, const mb_bench_report *report,
                              const char *const *labels, int n_labels,
                              int64_t *run_id_out, mb_error *err);

/* The whole store for `bench`: resolves the cache folder (see
 * mb__cache_dir), opens or creates <cache dir>/results.db, stores the
 * report and closes. cache_dir_override: a --cache-dir value or NULL.
 * db_path_out (may be NULL): receives the database path. */
mb_status mb__db_record_report(const char *cache_dir_override,
                               const mb_bench_report *report,
                               const char *const *labels, int n_labels,
                               int64_t *run_id_out, char *db_path_out,
                               size_t db_path_size, mb_error *err);

/* <cache dir>/results.db into buf, creating the cache folder. */
mb_status mb__db_default_path(const char *cache_dir_override, char *buf,
                              size_t size, mb_error *err);

/* The runs matching filter (NULL: all), newest first. *list_out: release
 * with mb__db_run_list_free. */
mb_status mb__db_list_runs(mb_db *db, const mb_db_run_filter *filter,
                           mb_db_run_list **list_out, mb_error *err);
void mb__db_run_list_free(mb_db_run_list *list);

/* Loads run `id` with every result and its samples. Fails with
 * MB_STATUS_NOT_FOUND when there is no such run. *run_out: release with
 * mb__db_run_free. */
mb_status mb__db_load_run(mb_db *db, int64_t id, mb_db_run **run_out,
                          mb_error *err);
void mb__db_run_free(mb_db_run *run);

/* Allocates an empty run with its arena (for loaders of other sources).
 * NULL on OOM. */
mb_db_run *mb__db_run_create(void);

/* Parses a status name as mb_bench_status_name prints it; false when
 * unknown. */
bool mb__db_status_from_name(const char *name, mb_bench_status *status_out);

#endif /* MB_DB_RESULTS_DB_H */
