/* The results database (see results_db.h for the schema and the API).
 *
 * Concurrency: WAL lets readers run beside one writer, and every write is a
 * BEGIN IMMEDIATE transaction, which takes the write lock up front and so
 * waits in the busy handler instead of failing half-way (a deferred
 * transaction that upgrades from read to write gets SQLITE_BUSY at once in
 * WAL mode, without waiting). The few statements SQLite runs without the
 * busy handler (switching to WAL while another connection does the same)
 * are retried here until the same timeout. */
#include "db/results_db.h"
#include "core/cache_dir.h"
#include "core/files.h"
#include "core/json_parse.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct mb_db {
  sqlite3 *sql;
  char *path;
};

/* ---- errors and retries ---- */

static mb_status sql_error(mb_db *db, mb_error *err, const char *what) {
  int code = sqlite3_errcode(db->sql);
  /* A locked database after the whole busy timeout is worth saying so. */
  const char *hint = code == SQLITE_BUSY || code == SQLITE_LOCKED
                         ? " (another modelbench kept it locked)"
                         : "";
  return mb__error(err, MB_STATUS_IO, "results database %s: %s: %s%s", db->path,
                   what, sqlite3_errmsg(db->sql), hint);
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* sqlite3_exec, retried while the database is busy (see the top). */
static int exec_retry(mb_db *db, const char *sql) {
  int waited = 0, rc;
  while (((rc = sqlite3_exec(db->sql, sql, NULL, NULL, NULL)) == SQLITE_BUSY ||
          rc == SQLITE_LOCKED) &&
         waited < MB_DB_BUSY_TIMEOUT_MS) {
    sleep_ms(10);
    waited += 10;
  }
  return rc;
}

/* ---- schema ---- */

/* migrations[v] takes a database from schema version v to v + 1. Fields
 * are only ever added in later versions, by new rows here. */
static const char *const migrations[] = {
    /* 0 -> 1 */
    "CREATE TABLE runs ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " time_utc TEXT NOT NULL,"
    " tool_version TEXT NOT NULL,"
    " model_path TEXT NOT NULL,"
    " model_abspath TEXT,"
    " model_sha256 TEXT NOT NULL,"
    " inputs TEXT NOT NULL,"
    " cpu_model TEXT,"
    " machine_json TEXT,"
    " config_json TEXT);"
    "CREATE INDEX runs_by_sha256 ON runs(model_sha256);"
    "CREATE INDEX runs_by_path ON runs(model_path);"
    "CREATE TABLE run_labels ("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " key TEXT NOT NULL,"
    " value TEXT NOT NULL,"
    " PRIMARY KEY (run_id, key)) WITHOUT ROWID;"
    "CREATE INDEX run_labels_by_value ON run_labels(key, value);"
    "CREATE TABLE results ("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " position INTEGER NOT NULL,"
    " conversion TEXT NOT NULL,"
    " conversion_id INTEGER,"
    " status TEXT NOT NULL,"
    " error TEXT,"
    " device TEXT,"
    " runtime TEXT,"
    " runtime_version TEXT,"
    " median_ms REAL, mean_ms REAL, p90_ms REAL, p99_ms REAL,"
    " min_ms REAL, max_ms REAL, stddev_ms REAL,"
    " throughput_sps REAL, max_abs_err REAL, load_ms REAL, peak_rss_mb REAL,"
    " iterations INTEGER NOT NULL,"
    " samples BLOB,"
    " PRIMARY KEY (run_id, position));",
    /* 1 -> 2: what besides the machine changes speed (the report's
     * "environment"), for compare's "environment differs". */
    "ALTER TABLE runs ADD COLUMN environment_json TEXT;",
};
_Static_assert(MB_ARRAY_COUNT(migrations) == MB_DB_SCHEMA_VERSION,
               "one migration per schema version");

static mb_status read_user_version(mb_db *db, int *version_out, mb_error *err) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db->sql, "PRAGMA user_version", -1, &st, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_step(st);
  if (rc != SQLITE_ROW) {
    mb_status status = sql_error(db, err, "cannot read the schema version");
    sqlite3_finalize(st);
    return status;
  }
  *version_out = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  return MB_STATUS_OK;
}

static mb_status check_version(mb_db *db, int version, mb_error *err) {
  if (version < 0 || version > MB_DB_SCHEMA_VERSION)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "results database %s: schema version %d is newer than "
                     "this modelbench's (%d); use a newer modelbench or "
                     "another --cache-dir",
                     db->path, version, MB_DB_SCHEMA_VERSION);
  return MB_STATUS_OK;
}

/* Creates or upgrades the schema under the write lock, re-reading the
 * version there since another process may have just done it. */
static mb_status ensure_schema(mb_db *db, mb_error *err) {
  int version;
  mb_status status = read_user_version(db, &version, err);
  if (status || (status = check_version(db, version, err)))
    return status;
  if (version == MB_DB_SCHEMA_VERSION)
    return MB_STATUS_OK;
  if (exec_retry(db, "BEGIN IMMEDIATE") != SQLITE_OK)
    return sql_error(db, err, "cannot lock it to create the schema");
  status = read_user_version(db, &version, err);
  if (status || (status = check_version(db, version, err)))
    goto rollback;
  for (; version < MB_DB_SCHEMA_VERSION; version++) {
    char pragma[64];
    snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", version + 1);
    if (sqlite3_exec(db->sql, migrations[version], NULL, NULL, NULL) !=
            SQLITE_OK ||
        sqlite3_exec(db->sql, pragma, NULL, NULL, NULL) != SQLITE_OK) {
      status = sql_error(db, err, "cannot create the schema");
      goto rollback;
    }
  }
  if (exec_retry(db, "COMMIT") != SQLITE_OK) {
    status = sql_error(db, err, "cannot commit the schema");
    goto rollback;
  }
  return MB_STATUS_OK;

rollback:
  sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
  return status;
}

/* ---- open / close ---- */

mb_status mb__db_open(const char *path, bool create, mb_db **db_out,
                      mb_error *err) {
  mb_status status;
  struct stat st;
  if (!path || !path[0] || !db_out)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "results database: no path given");
  if (!create && stat(path, &st) != 0)
    return mb__error(err, MB_STATUS_NOT_FOUND,
                     "no results database at %s (runs are recorded by "
                     "'modelbench bench')",
                     path);
  mb_db *db = calloc(1, sizeof *db);
  if (!db || !(db->path = mb__strdup(path))) {
    free(db);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "results database %s: out of memory", path);
  }
  int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  if (create) {
    /* SQLite would create the file 0644 and give its WAL and shm files
     * the same mode: made here first, private unless the cache is shared
     * (core/files.h). O_EXCL: an existing database keeps its mode. */
    int fd =
        open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      fchmod(fd, mb__private_file_mode());
      close(fd);
    }
  }
  if (sqlite3_open_v2(path, &db->sql, flags, NULL) != SQLITE_OK) {
    status = db->sql ? sql_error(db, err, "cannot open")
                     : mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                                 "results database %s: out of memory", path);
    goto fail;
  }
  sqlite3_busy_timeout(db->sql, MB_DB_BUSY_TIMEOUT_MS);
  /* journal_mode answers with a row; exec discards it. synchronous=NORMAL
   * is durable in WAL mode except for the last commits on power loss. */
  if (exec_retry(db, "PRAGMA journal_mode = WAL") != SQLITE_OK) {
    status = sql_error(db, err, "cannot open");
    goto fail;
  }
  if (exec_retry(db, "PRAGMA synchronous = NORMAL; "
                     "PRAGMA foreign_keys = ON") != SQLITE_OK) {
    status = sql_error(db, err, "cannot configure");
    goto fail;
  }
  status = ensure_schema(db, err);
  if (status)
    goto fail;
  *db_out = db;
  return MB_STATUS_OK;

fail:
  mb__db_close(db);
  return status;
}

void mb__db_close(mb_db *db) {
  if (!db)
    return;
  sqlite3_close(db->sql); /* every statement is finalized by now */
  free(db->path);
  free(db);
}

const char *mb__db_path(const mb_db *db) {
  return db ? db->path : NULL;
}

mb_status mb__db_default_path(const char *cache_dir_override, char *buf,
                              size_t size, mb_error *err) {
  char dir[PATH_MAX];
  mb_status status = mb__cache_dir(cache_dir_override, dir, sizeof dir, err);
  if (status)
    return status;
  int n = snprintf(buf, size, "%s/%s", dir, MB_DB_FILE_NAME);
  if (n < 0 || (size_t)n >= size)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "results database path in %s is too long", dir);
  return MB_STATUS_OK;
}

/* ---- runs: small helpers ---- */

mb_db_run *mb__db_run_create(void) {
  mb_arena *arena = mb__arena_create();
  mb_db_run *run = arena ? mb__arena_alloc(arena, sizeof *run) : NULL;
  if (!run) {
    mb__arena_free(arena);
    return NULL;
  }
  run->arena = arena;
  return run;
}

void mb__db_run_free(mb_db_run *run) {
  if (run)
    mb__arena_free(run->arena); /* the run lives in its own arena */
}

bool mb__db_status_from_name(const char *name, mb_bench_status *status_out) {
  for (int s = 0; name && s < MB_BENCH_STATUS_COUNT; s++)
    if (strcmp(name, mb_bench_status_name((mb_bench_status)s)) == 0) {
      *status_out = (mb_bench_status)s;
      return true;
    }
  return false;
}

/* ---- storing a report ---- */

static int bind_text(sqlite3_stmt *st, int i, const char *s) {
  return s && s[0] ? sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT)
                   : sqlite3_bind_null(st, i);
}

/* A figure that is unknown (not measured, NaN, infinite) is NULL. */
static int bind_measured(sqlite3_stmt *st, int i, double v, bool known) {
  return known && isfinite(v) ? sqlite3_bind_double(st, i, v)
                              : sqlite3_bind_null(st, i);
}

/* "name:dtype[d0,d1] name2:dtype[...]" of the concrete inputs. */
static char *inputs_text(const mb_bench_report *report) {
  size_t size = 1;
  for (int i = 0; report->inputs && i < report->n_inputs; i++)
    size += strlen(report->inputs[i].name ? report->inputs[i].name : "") + 24 +
            21 * MB_MAX_RANK + 1;
  char *text = malloc(size);
  if (!text)
    return NULL;
  size_t used = 0;
  text[0] = '\0';
  for (int i = 0; report->inputs && i < report->n_inputs; i++) {
    const mb_input_shape *s = &report->inputs[i];
    char shape[24 + 21 * MB_MAX_RANK];
    mb__shape_str(s->rank, s->dims, shape, sizeof shape);
    int n = snprintf(
        text + used, size - used, "%s%s:%s%s", i ? " " : "",
        s->name ? s->name : "",
        report->input_dtypes ? mb_dtype_name(report->input_dtypes[i]) : "?",
        shape);
    if (n > 0)
      used = MB_MIN(size - 1, used + (size_t)n);
  }
  return text;
}

/* The report as JSON text, through the one JSON writer we have (which
 * writes files). *text_out: malloc'd, NUL-terminated. */
static mb_status report_json_text(const mb_bench_report *report,
                                  char **text_out, mb_error *err) {
  const char *tmpdir = getenv("TMPDIR");
  char path[PATH_MAX];
  void *data = NULL;
  size_t size = 0;
  snprintf(path, sizeof path, "%s/mb-run-XXXXXX",
           tmpdir && tmpdir[0] ? tmpdir : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0)
    return mb__error(err, MB_STATUS_IO,
                     "results database: cannot create a temporary file %s: "
                     "%s",
                     path, strerror(errno));
  close(fd);
  mb_status status = mb_bench_report_write_json(report, path, err);
  if (status == MB_STATUS_OK)
    status = mb__read_file(path, &data, &size, err);
  unlink(path);
  if (status)
    return status;
  char *text = realloc(data, size + 1);
  if (!text) {
    free(data);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "results database: out of memory");
  }
  text[size] = '\0';
  *text_out = text;
  return MB_STATUS_OK;
}

/* Samples as little-endian float64s, whatever the host's byte order. */
static uint8_t *encode_samples(const double *samples, int64_t n,
                               size_t *size_out) {
  size_t size;
  if (n <= 0 || !samples || !mb__mul_size((size_t)n, 8, &size))
    return NULL;
  uint8_t *blob = malloc(size);
  if (!blob)
    return NULL;
  for (int64_t i = 0; i < n; i++) {
    uint64_t bits;
    memcpy(&bits, &samples[i], sizeof bits);
    for (int b = 0; b < 8; b++)
      blob[i * 8 + b] = (uint8_t)(bits >> (8 * b));
  }
  *size_out = size;
  return blob;
}

static double result_max_abs_err(const mb_bench_result *r, bool *known) {
  *known = r->max_abs_err >= 0;
  if (*known || !r->has_accuracy || !r->accuracy || r->n_outputs <= 0)
    return r->max_abs_err;
  double worst = 0;
  for (int i = 0; i < r->n_outputs; i++)
    worst = fmax(worst, r->accuracy[i].max_abs_err);
  *known = true;
  return worst;
}

static mb_status store_labels(mb_db *db, int64_t run_id,
                              const char *const *labels, int n_labels,
                              mb_error *err) {
  sqlite3_stmt *st = NULL;
  mb_status status = MB_STATUS_OK;
  if (n_labels <= 0)
    return MB_STATUS_OK;
  if (sqlite3_prepare_v2(db->sql,
                         "INSERT INTO run_labels (run_id, key, value) "
                         "VALUES (?1, ?2, ?3)",
                         -1, &st, NULL) != SQLITE_OK)
    return sql_error(db, err, "cannot store labels");
  for (int i = 0; i < n_labels; i++) {
    const char *eq = strchr(labels[i], '=');
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, labels[i], (int)(eq - labels[i]),
                      SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, eq + 1, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_DONE) {
      status = sql_error(db, err, "cannot store labels");
      break;
    }
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  return status;
}

static const char insert_result_sql[] =
    "INSERT INTO results (run_id, position, conversion, conversion_id, "
    "status, error, device, runtime, runtime_version, median_ms, mean_ms, "
    "p90_ms, p99_ms, min_ms, max_ms, stddev_ms, throughput_sps, max_abs_err, "
    "load_ms, peak_rss_mb, iterations, samples) VALUES (?1, ?2, ?3, ?4, ?5, "
    "?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
    "?21, ?22)";

static mb_status store_result(mb_db *db, sqlite3_stmt *st, int64_t run_id,
                              int position, const mb_bench_result *r,
                              mb_error *err) {
  bool ok = r->status == MB_BENCH_OK, timed = r->iterations > 0, abs_known;
  const mb_latency_stats *l = &r->latency_ms;
  double max_abs_err = result_max_abs_err(r, &abs_known);
  size_t blob_size = 0;
  uint8_t *blob = encode_samples(r->samples_ms, r->n_samples_ms, &blob_size);
  if (!blob && r->n_samples_ms > 0 && r->samples_ms)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "results database: out of memory for %lld samples",
                     (long long)r->n_samples_ms);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  sqlite3_bind_int64(st, 1, run_id);
  sqlite3_bind_int(st, 2, position);
  sqlite3_bind_text(st, 3, r->conversion ? r->conversion : "", -1,
                    SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 4, r->conversion_id);
  sqlite3_bind_text(st, 5, mb_bench_status_name(r->status), -1, SQLITE_STATIC);
  bind_text(st, 6, ok ? NULL : (r->error[0] ? r->error : "unknown error"));
  bind_text(st, 7, r->device);
  bind_text(st, 8, r->runtime);
  bind_text(st, 9, r->runtime_version);
  bind_measured(st, 10, l->median, timed);
  bind_measured(st, 11, l->mean, timed);
  bind_measured(st, 12, l->p90, timed);
  bind_measured(st, 13, l->p99, timed);
  bind_measured(st, 14, l->min, timed);
  bind_measured(st, 15, l->max, timed);
  bind_measured(st, 16, l->stddev, timed);
  bind_measured(st, 17, r->throughput_sps, timed);
  bind_measured(st, 18, max_abs_err, abs_known);
  bind_measured(st, 19, r->load_ms, ok || r->load_ms > 0);
  bind_measured(st, 20, r->peak_rss_mb, r->peak_rss_mb > 0);
  sqlite3_bind_int64(st, 21, r->iterations);
  if (blob && blob_size <= INT_MAX)
    sqlite3_bind_blob(st, 22, blob, (int)blob_size, SQLITE_STATIC);
  else
    sqlite3_bind_null(st, 22);
  mb_status status = MB_STATUS_OK;
  if (sqlite3_step(st) != SQLITE_DONE)
    status = sql_error(db, err, "cannot store a result");
  sqlite3_reset(st); /* drops the blob binding before the blob is freed */
  sqlite3_clear_bindings(st);
  free(blob);
  return status;
}

static mb_status check_labels(const char *const *labels, int n_labels,
                              mb_error *err) {
  for (int i = 0; i < n_labels; i++) {
    mb_status status = mb__check_label(labels[i], err);
    if (status)
      return status;
    size_t key_len = (size_t)(strchr(labels[i], '=') - labels[i]);
    for (int k = 0; k < i; k++)
      if (strncmp(labels[k], labels[i], key_len + 1) == 0)
        return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                         "label key '%.*s' given twice", (int)key_len,
                         labels[i]);
  }
  return MB_STATUS_OK;
}

static const char insert_run_sql[] =
    "INSERT INTO runs (time_utc, tool_version, model_path, model_abspath, "
    "model_sha256, inputs, cpu_model, machine_json, config_json, "
    "environment_json) VALUES "
    "(?1, ?2, ?3, ?4, ?5, ?6, ?7, json_extract(?8, '$.machine'), "
    "json_extract(?8, '$.config'), json_extract(?8, '$.environment'))";

mb_status mb__db_store_report(mb_db *db, const mb_bench_report *report,
                              const char *const *labels, int n_labels,
                              int64_t *run_id_out, mb_error *err) {
  mb_status status;
  sqlite3_stmt *st = NULL;
  char *json = NULL, *inputs = NULL, *abspath = NULL;
  char time_utc[32];
  if (!db || !report || (n_labels > 0 && !labels))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "results database: no database or report given");
  status = check_labels(labels, n_labels, err);
  if (status)
    return status;
  status = report_json_text(report, &json, err);
  if (status)
    return status;
  inputs = inputs_text(report);
  if (!inputs) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "results database: out of memory");
    goto done;
  }
  abspath = report->model_path[0] ? realpath(report->model_path, NULL) : NULL;
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(time_utc, sizeof time_utc, "%Y-%m-%dT%H:%M:%SZ", &tm);

  if (exec_retry(db, "BEGIN IMMEDIATE") != SQLITE_OK) {
    status = sql_error(db, err, "cannot lock it to store a run");
    goto done;
  }
  if (sqlite3_prepare_v2(db->sql, insert_run_sql, -1, &st, NULL) != SQLITE_OK) {
    status = sql_error(db, err, "cannot store a run");
    goto rollback;
  }
  sqlite3_bind_text(st, 1, time_utc, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(
      st, 2, report->tool_version[0] ? report->tool_version : MB_VERSION_STRING,
      -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, report->model_path, -1, SQLITE_TRANSIENT);
  bind_text(st, 4, abspath);
  sqlite3_bind_text(st, 5, report->model_sha256, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 6, inputs, -1, SQLITE_TRANSIENT);
  bind_text(st, 7, report->machine.cpu_model);
  sqlite3_bind_text(st, 8, json, -1, SQLITE_STATIC);
  if (sqlite3_step(st) != SQLITE_DONE) {
    status = sql_error(db, err, "cannot store a run");
    goto rollback;
  }
  sqlite3_finalize(st);
  st = NULL;
  int64_t run_id = sqlite3_last_insert_rowid(db->sql);
  status = store_labels(db, run_id, labels, n_labels, err);
  if (status)
    goto rollback;
  if (sqlite3_prepare_v2(db->sql, insert_result_sql, -1, &st, NULL) !=
      SQLITE_OK) {
    status = sql_error(db, err, "cannot store a result");
    goto rollback;
  }
  for (int i = 0; report->results && i < report->n_results; i++) {
    status = store_result(db, st, run_id, i, &report->results[i], err);
    if (status)
      goto rollback;
  }
  sqlite3_finalize(st);
  st = NULL;
  if (exec_retry(db, "COMMIT") != SQLITE_OK) {
    status = sql_error(db, err, "cannot commit a run");
    goto rollback;
  }
  if (run_id_out)
    *run_id_out = run_id;
  goto done;

rollback:
  sqlite3_finalize(st);
  sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
done:
  free(abspath);
  free(inputs);
  free(json);
  return status;
}

mb_status mb__db_record_report(const char *cache_dir_override,
                               const mb_bench_report *report,
                               const char *const *labels, int n_labels,
                               int64_t *run_id_out, char *db_path_out,
                               size_t db_path_size, mb_error *err) {
  char path[PATH_MAX];
  mb_db *db = NULL;
  mb_status status =
      mb__db_default_path(cache_dir_override, path, sizeof path, err);
  if (status)
    return status;
  if (db_path_out && db_path_size)
    snprintf(db_path_out, db_path_size, "%s", path);
  status = mb__db_open(path, true, &db, err);
  if (status)
    return status;
  status = mb__db_store_report(db, report, labels, n_labels, run_id_out, err);
  mb__db_close(db);
  return status;
}

/* ---- reading ---- */

static const char *column_text(mb_arena *arena, sqlite3_stmt *st, int i) {
  const unsigned char *s = sqlite3_column_text(st, i);
  return s ? mb__arena_strdup(arena, (const char *)s) : NULL;
}

/* Hands out the text of a NOT NULL column: "" when SQLite has none. */
static const char *column_text_nn(mb_arena *arena, sqlite3_stmt *st, int i) {
  const char *s = column_text(arena, st, i);
  return s ? s : mb__arena_strdup(arena, "");
}

static double column_measured(sqlite3_stmt *st, int i) {
  return sqlite3_column_type(st, i) == SQLITE_NULL
             ? NAN
             : sqlite3_column_double(st, i);
}

/* Loads the sorted "key=value" labels of a run into arena. */
static mb_status load_labels(mb_db *db, sqlite3_stmt *st, mb_arena *arena,
                             int64_t run_id, const char ***labels_out,
                             int *n_out, mb_error *err) {
  int n = 0, cap = 0, rc;
  const char **labels = NULL;
  sqlite3_reset(st);
  sqlite3_bind_int64(st, 1, run_id);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (n == cap) {
      cap = cap ? cap * 2 : 4;
      const char **grown = mb__arena_alloc(arena, sizeof *grown * (size_t)cap);
      if (!grown)
        goto oom;
      if (n)
        memcpy(grown, labels, sizeof *grown * (size_t)n);
      labels = grown;
    }
    const char *key = (const char *)sqlite3_column_text(st, 0);
    const char *value = (const char *)sqlite3_column_text(st, 1);
    size_t size = strlen(key ? key : "") + strlen(value ? value : "") + 2;
    char *label = mb__arena_alloc(arena, size);
    if (!label)
      goto oom;
    snprintf(label, size, "%s=%s", key ? key : "", value ? value : "");
    labels[n++] = label;
  }
  sqlite3_reset(st);
  if (rc != SQLITE_DONE)
    return sql_error(db, err, "cannot read labels");
  *labels_out = labels;
  *n_out = n;
  return MB_STATUS_OK;
oom:
  sqlite3_reset(st);
  return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                   "results database: out of memory");
}

static const char labels_sql[] =
    "SELECT key, value FROM run_labels WHERE run_id = ?1 ORDER BY key";

/* The best ok result of run r: lowest median, first in run order on ties. */
#define BEST_RESULT_SQL(column)                                                \
  "(SELECT " column " FROM results WHERE run_id = r.id AND status = 'ok' "     \
  "AND median_ms IS NOT NULL ORDER BY median_ms, position LIMIT 1)"

static const char list_sql_head[] =
    "SELECT r.id, r.time_utc, r.tool_version, r.model_path, r.model_sha256, "
    "r.cpu_model, "
    "(SELECT COUNT(*) FROM results WHERE run_id = r.id), "
    "(SELECT COUNT(*) FROM results WHERE run_id = r.id AND status = "
    "'ok'), " BEST_RESULT_SQL("conversion") ", " BEST_RESULT_SQL(
        "median_ms") " "
                     "FROM runs r WHERE 1";

/* Appends to a growing SQL string; false on OOM. */
static bool sql_append(char **sql, size_t *len, const char *fmt, ...)
    MB_PRINTF(3, 4);
static bool sql_append(char **sql, size_t *len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *grown = n >= 0 ? realloc(*sql, *len + (size_t)n + 1) : NULL;
  if (!grown)
    return false;
  va_start(ap, fmt);
  vsnprintf(grown + *len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  *sql = grown;
  *len += (size_t)n;
  return true;
}

/* The WHERE clauses of a filter, with named parameters bound by
 * bind_filter. */
static bool filter_sql(const mb_db_run_filter *f, char **sql, size_t *len) {
  bool ok = true;
  if (f->model_path || f->model_sha256) {
    ok = ok && sql_append(sql, len, " AND (0");
    if (f->model_path)
      ok = ok && sql_append(sql, len,
                            " OR r.model_path = :path"
                            " OR r.model_abspath = :abspath");
    if (f->model_sha256 && strlen(f->model_sha256) >= 4)
      ok = ok && sql_append(sql, len,
                            " OR substr(r.model_sha256, 1, length(:sha)) = "
                            "lower(:sha)");
    ok = ok && sql_append(sql, len, ")");
  }
  for (int i = 0; i < f->n_labels; i++)
    ok = ok && sql_append(sql, len,
                          " AND r.id IN (SELECT run_id FROM run_labels"
                          " WHERE key = :k%d AND value = :v%d)",
                          i, i);
  ok = ok && sql_append(sql, len, " ORDER BY r.id DESC LIMIT :limit");
  return ok;
}

static void bind_named(sqlite3_stmt *st, const char *name, const char *s,
                       int len) {
  int i = sqlite3_bind_parameter_index(st, name);
  if (i > 0)
    sqlite3_bind_text(st, i, s, len, SQLITE_TRANSIENT);
}

static void bind_filter(sqlite3_stmt *st, const mb_db_run_filter *f) {
  if (f->model_path) {
    char *abspath = realpath(f->model_path, NULL);
    bind_named(st, ":path", f->model_path, -1);
    bind_named(st, ":abspath", abspath ? abspath : f->model_path, -1);
    free(abspath);
  }
  if (f->model_sha256)
    bind_named(st, ":sha", f->model_sha256, -1);
  for (int i = 0; i < f->n_labels; i++) {
    char name[32];
    const char *eq = strchr(f->labels[i], '=');
    snprintf(name, sizeof name, ":k%d", i);
    bind_named(st, name, f->labels[i], (int)(eq - f->labels[i]));
    snprintf(name, sizeof name, ":v%d", i);
    bind_named(st, name, eq + 1, -1);
  }
  sqlite3_bind_int64(st, sqlite3_bind_parameter_index(st, ":limit"),
                     f->limit > 0 ? f->limit : -1);
}

void mb__db_run_list_free(mb_db_run_list *list) {
  if (!list)
    return;
  free(list->runs);
  mb__arena_free(list->arena);
  free(list);
}

mb_status mb__db_list_runs(mb_db *db, const mb_db_run_filter *filter,
                           mb_db_run_list **list_out, mb_error *err) {
  static const mb_db_run_filter all = {0};
  const mb_db_run_filter *f = filter ? filter : &all;
  mb_status status = MB_STATUS_OK;
  sqlite3_stmt *st = NULL, *labels_st = NULL;
  char *sql = NULL;
  size_t len = 0;
  int cap = 0, rc;
  for (int i = 0; i < f->n_labels; i++)
    if ((status = mb__check_label(f->labels[i], err)))
      return status;
  mb_db_run_list *list = calloc(1, sizeof *list);
  if (!list || !(list->arena = mb__arena_create()) ||
      !sql_append(&sql, &len, "%s", list_sql_head) ||
      !filter_sql(f, &sql, &len)) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "results database: out of memory");
    goto fail;
  }
  if (sqlite3_prepare_v2(db->sql, sql, -1, &st, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db->sql, labels_sql, -1, &labels_st, NULL) !=
          SQLITE_OK) {
    status = sql_error(db, err, "cannot list runs");
    goto fail;
  }
  bind_filter(st, f);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (list->n_runs == cap) {
      cap = cap ? cap * 2 : 16;
      mb_db_run_summary *grown =
          realloc(list->runs, sizeof *grown * (size_t)cap);
      if (!grown) {
        status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                           "results database: out of memory");
        goto fail;
      }
      list->runs = grown;
    }
    mb_db_run_summary *s = &list->runs[list->n_runs];
    mb_arena *a = list->arena;
    memset(s, 0, sizeof *s);
    s->id = sqlite3_column_int64(st, 0);
    s->time_utc = column_text_nn(a, st, 1);
    s->tool_version = column_text_nn(a, st, 2);
    s->model_path = column_text_nn(a, st, 3);
    s->model_sha256 = column_text_nn(a, st, 4);
    s->cpu_model = column_text(a, st, 5);
    s->n_results = sqlite3_column_int(st, 6);
    s->n_ok = sqlite3_column_int(st, 7);
    s->best_conversion = column_text(a, st, 8);
    s->best_median_ms = column_measured(st, 9);
    if (!s->time_utc || !s->tool_version || !s->model_path ||
        !s->model_sha256) {
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                         "results database: out of memory");
      goto fail;
    }
    status =
        load_labels(db, labels_st, a, s->id, &s->labels, &s->n_labels, err);
    if (status)
      goto fail;
    list->n_runs++;
  }
  if (rc != SQLITE_DONE) {
    status = sql_error(db, err, "cannot list runs");
    goto fail;
  }
  sqlite3_finalize(st);
  sqlite3_finalize(labels_st);
  free(sql);
  *list_out = list;
  return MB_STATUS_OK;

fail:
  sqlite3_finalize(st);
  sqlite3_finalize(labels_st);
  free(sql);
  mb__db_run_list_free(list);
  return status;
}

static const char run_sql[] =
    "SELECT time_utc, tool_version, model_path, model_sha256, inputs, "
    "config_json, environment_json FROM runs WHERE id = ?1";

static const char results_sql[] =
    "SELECT conversion, conversion_id, status, error, device, runtime, "
    "runtime_version, median_ms, mean_ms, p90_ms, p99_ms, min_ms, max_ms, "
    "stddev_ms, throughput_sps, max_abs_err, load_ms, peak_rss_mb, "
    "iterations, samples FROM results WHERE run_id = ?1 ORDER BY position";

static mb_status decode_samples(mb_db *db, mb_arena *arena, sqlite3_stmt *st,
                                int column, mb_db_result *r, mb_error *err) {
  const uint8_t *blob = sqlite3_column_blob(st, column);
  size_t size = (size_t)sqlite3_column_bytes(st, column);
  if (!blob || size == 0)
    return MB_STATUS_OK;
  if (size % 8 != 0)
    return mb__error(err, MB_STATUS_PARSE,
                     "results database %s: samples of %s are corrupt "
                     "(%zu bytes)",
                     db->path, r->conversion, size);
  r->n_samples = (int64_t)(size / 8);
  r->samples_ms = mb__arena_alloc(arena, size);
  if (!r->samples_ms)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "results database: out of memory");
  for (int64_t i = 0; i < r->n_samples; i++) {
    uint64_t bits = 0;
    for (int b = 0; b < 8; b++)
      bits |= (uint64_t)blob[i * 8 + b] << (8 * b);
    memcpy(&r->samples_ms[i], &bits, sizeof bits);
  }
  return MB_STATUS_OK;
}

static mb_status load_results(mb_db *db, mb_db_run *run, mb_error *err) {
  sqlite3_stmt *st = NULL;
  mb_status status = MB_STATUS_OK;
  mb_arena *a = run->arena;
  int cap = 0, rc;
  if (sqlite3_prepare_v2(db->sql, results_sql, -1, &st, NULL) != SQLITE_OK)
    return sql_error(db, err, "cannot read results");
  sqlite3_bind_int64(st, 1, run->id);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (run->n_results == cap) {
      cap = cap ? cap * 2 : 8;
      mb_db_result *grown = mb__arena_alloc(a, sizeof *grown * (size_t)cap);
      if (!grown)
        goto oom;
      if (run->n_results)
        memcpy(grown, run->results, sizeof *grown * (size_t)run->n_results);
      run->results = grown;
    }
    mb_db_result *r = &run->results[run->n_results];
    r->conversion = column_text_nn(a, st, 0);
    r->conversion_id = sqlite3_column_int(st, 1);
    const char *status_name = (const char *)sqlite3_column_text(st, 2);
    if (!mb__db_status_from_name(status_name, &r->status))
      r->status = MB_BENCH_ERROR; /* a status this build does not know */
    r->error = column_text(a, st, 3);
    r->device = column_text(a, st, 4);
    r->runtime = column_text(a, st, 5);
    r->runtime_version = column_text(a, st, 6);
    double *figures[] = {&r->median_ms, &r->mean_ms,        &r->p90_ms,
                         &r->p99_ms,    &r->min_ms,         &r->max_ms,
                         &r->stddev_ms, &r->throughput_sps, &r->max_abs_err,
                         &r->load_ms,   &r->peak_rss_mb};
    for (size_t k = 0; k < MB_ARRAY_COUNT(figures); k++)
      *figures[k] = column_measured(st, 7 + (int)k);
    r->iterations = sqlite3_column_int64(st, 18);
    if (!r->conversion)
      goto oom;
    status = decode_samples(db, a, st, 19, r, err);
    if (status)
      goto done;
    run->n_results++;
  }
  if (rc != SQLITE_DONE)
    status = sql_error(db, err, "cannot read results");
  goto done;
oom:
  status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "results database: out of memory");
done:
  sqlite3_finalize(st);
  return status;
}

/* The stored "environment" object (NULL: a run stored without one). */
static mb_status load_environment(mb_db_run *run, const char *json,
                                  const char *db_path, mb_error *err) {
  mb_json_doc *doc = NULL;
  char source[PATH_MAX + 64];
  if (!json)
    return MB_STATUS_OK;
  snprintf(source, sizeof source, "%s: run %lld environment", db_path,
           (long long)run->id);
  mb_status status = mb__json_parse(json, strlen(json), source, &doc, err);
  if (!status)
    status =
        mb__environment_from_json(run->arena, &doc->root, source,
                                  &run->environment, &run->n_environment, err);
  run->environment_recorded = status == MB_STATUS_OK;
  mb__json_doc_free(doc);
  return status;
}

mb_status mb__db_load_run(mb_db *db, int64_t id, mb_db_run **run_out,
                          mb_error *err) {
  sqlite3_stmt *st = NULL, *labels_st = NULL;
  mb_status status = MB_STATUS_OK;
  mb_db_run *run = mb__db_run_create();
  if (!run)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "results database: out of memory");
  run->id = id;
  if (sqlite3_prepare_v2(db->sql, run_sql, -1, &st, NULL) != SQLITE_OK) {
    status = sql_error(db, err, "cannot read a run");
    goto fail;
  }
  sqlite3_bind_int64(st, 1, id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) {
    status = mb__error(err, MB_STATUS_NOT_FOUND,
                       "no run %lld in the results database %s "
                       "(see 'modelbench history')",
                       (long long)id, db->path);
    goto fail;
  }
  if (rc != SQLITE_ROW) {
    status = sql_error(db, err, "cannot read a run");
    goto fail;
  }
  mb_arena *a = run->arena;
  char source[48];
  snprintf(source, sizeof source, "run %lld", (long long)id);
  run->source = mb__arena_strdup(a, source);
  run->time_utc = column_text(a, st, 0);
  run->tool_version = column_text(a, st, 1);
  run->model_path = column_text(a, st, 2);
  run->model_sha256 = column_text(a, st, 3);
  run->inputs = column_text(a, st, 4);
  run->config_json = column_text(a, st, 5);
  status = load_environment(run, (const char *)sqlite3_column_text(st, 6),
                            db->path, err);
  sqlite3_finalize(st);
  st = NULL;
  if (status)
    goto fail;
  if (!run->source) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "results database: out of memory");
    goto fail;
  }
  if (sqlite3_prepare_v2(db->sql, labels_sql, -1, &labels_st, NULL) !=
      SQLITE_OK) {
    status = sql_error(db, err, "cannot read labels");
    goto fail;
  }
  status = load_labels(db, labels_st, a, id, &run->labels, &run->n_labels, err);
  if (status)
    goto fail;
  status = load_results(db, run, err);
  if (status)
    goto fail;
  sqlite3_finalize(labels_st);
  *run_out = run;
  return MB_STATUS_OK;

fail:
  sqlite3_finalize(st);
  sqlite3_finalize(labels_st);
  mb__db_run_free(run);
  return status;
}
