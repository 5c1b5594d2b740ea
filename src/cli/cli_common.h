/* Helpers shared by the command files of the modelbench CLI. */
#ifndef MB_CLI_COMMON_H
#define MB_CLI_COMMON_H

#include "core/internal.h"

#include <getopt.h>

/* Exit codes of every command. */
enum {
  MB_EXIT_OK = 0,
  MB_EXIT_FAILURE = 1, /* model error, check mismatch, I/O error */
  MB_EXIT_USAGE = 2,   /* bad command line */
};

/* One row of the command table in main.c. argv[0] is the command name. */
typedef struct mb_cli_command {
  const char *name;
  const char *summary;
  int (*fn)(int argc, char **argv);
} mb_cli_command;

int mb__cli_analyze(int argc, char **argv);
int mb__cli_run(int argc, char **argv);
int mb__cli_check(int argc, char **argv);
int mb__cli_list_ops(int argc, char **argv);
int mb__cli_bench(int argc, char **argv);
int mb__cli_list(int argc, char **argv);
int mb__cli_profile(int argc, char **argv);
int mb__cli_explain(int argc, char **argv);
int mb__cli_history(int argc, char **argv);
int mb__cli_compare(int argc, char **argv);
int mb__cli_cache(int argc, char **argv);
int mb__cli_convert(int argc, char **argv);
int mb__cli_jobs(int argc, char **argv);
int mb__cli_script(int argc, char **argv);
int mb__cli_load(int argc, char **argv);
int mb__cli_machine(int argc, char **argv);
int mb__cli_tune(int argc, char **argv);
/* bench and load are one command with two faces: load runs the scenarios
 * (`cmd` names the command in messages, `help` is its --help text). */
int mb__cli_bench_main(int argc, char **argv, const char *cmd, const char *help,
                       bool load);

/* Parses "[NAME=]LO:HI" (flag names the option in errors) and appends it to
 * *ranges (malloc, grown). arg is modified. Returns an MB_EXIT_ code. */
int mb__cli_add_range(const char *cmd, const char *flag, char *arg,
                      mb_input_range **ranges, int *n_ranges);

/* "modelbench: SUBJECT: message" on stderr (subject may be NULL). */
void mb__cli_error(const char *subject, const char *fmt, ...) MB_PRINTF(2, 3);
/* Prints err's message with SUBJECT prepended unless the message already
 * starts with it. Returns MB_EXIT_FAILURE. */
int mb__cli_fail(const char *subject, const mb_error *err);
/* "modelbench CMD: message (see 'modelbench CMD --help')". Returns
 * MB_EXIT_USAGE. */
int mb__cli_usage_error(const char *cmd, const char *fmt, ...) MB_PRINTF(2, 3);
/* Turns getopt_long's '?' / ':' results into a usage error (call with the
 * value getopt_long returned). Requires optstring to start with ':'. */
int mb__cli_bad_option(const char *cmd, int c, char **argv);

/* Strict number parsing of a whole string; false when malformed or out of
 * [min, max]. */
bool mb__cli_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
bool mb__cli_parse_double(const char *s, double *out);
/* The static int8 calibration options bench, convert and profile share:
 * getopt_long entries whose values are base + MB_CLI_CALIB_*, and one
 * handler for them. */
enum {
  MB_CLI_CALIB_SAMPLES, /* --calibration-samples N */
  MB_CLI_CALIB_INPUTS,  /* --calibration-inputs DIR */
  MB_CLI_CALIB_METHOD,  /* --calibration-method minmax|percentile */
  MB_CLI_CALIB_WEIGHTS, /* --int8-weights 7|8|mixed|auto */
  MB_CLI_CALIB_COUNT
};
#define MB_CLI_CALIBRATION_OPTIONS(base)                                       \
  {"calibration-samples", required_argument, NULL,                             \
   (base) + MB_CLI_CALIB_SAMPLES},                                             \
      {"calibration-inputs", required_argument, NULL,                          \
       (base) + MB_CLI_CALIB_INPUTS},                                          \
      {"calibration-method", required_argument, NULL,                          \
       (base) + MB_CLI_CALIB_METHOD},                                          \
  {                                                                            \
    "int8-weights", required_argument, NULL, (base) + MB_CLI_CALIB_WEIGHTS     \
  }
/* Applies option `which` (MB_CLI_CALIB_*) with arg to config. Returns
 * MB_EXIT_OK or a usage error. */
struct mb_bench_config;
int mb__cli_calibration_option(const char *cmd, int which, const char *arg,
                               struct mb_bench_config *config);

/* Serving questions (serving.c): the options bench and load share
 * (--sweep, --dim, --slo) and load's own (--scenario, --qps, ...), as
 * getopt_long entries whose values are base + MB_CLI_SERVE_*. */
enum {
  MB_CLI_SERVE_SWEEP,         /* --sweep KEY=V1,V2,... */
  MB_CLI_SERVE_DIM,           /* --dim NAME=V */
  MB_CLI_SERVE_SLO,           /* --slo p99=20ms */
  MB_CLI_SERVE_SCENARIO,      /* load: --scenario S */
  MB_CLI_SERVE_QPS,           /* load: --qps X */
  MB_CLI_SERVE_CONCURRENCY,   /* load: --concurrency N */
  MB_CLI_SERVE_MIN_DURATION,  /* load: --min-duration S */
  MB_CLI_SERVE_MIN_QUERIES,   /* load: --min-queries N */
  MB_CLI_SERVE_QPS_TOLERANCE, /* load: --qps-tolerance X */
  MB_CLI_SERVE_FIND_PEAK,     /* load: --find-peak */
  MB_CLI_SERVE_COUNT
};
#define MB_CLI_SERVING_OPTIONS(base)                                           \
  {"sweep", required_argument, NULL, (base) + MB_CLI_SERVE_SWEEP},             \
      {"dim", required_argument, NULL, (base) + MB_CLI_SERVE_DIM},             \
      {"slo", required_argument, NULL, (base) + MB_CLI_SERVE_SLO},             \
      {"scenario", required_argument, NULL, (base) + MB_CLI_SERVE_SCENARIO},   \
      {"qps", required_argument, NULL, (base) + MB_CLI_SERVE_QPS},             \
      {"concurrency", required_argument, NULL,                                 \
       (base) + MB_CLI_SERVE_CONCURRENCY},                                     \
      {"min-duration", required_argument, NULL,                                \
       (base) + MB_CLI_SERVE_MIN_DURATION},                                    \
      {"min-queries", required_argument, NULL,                                 \
       (base) + MB_CLI_SERVE_MIN_QUERIES},                                     \
      {"qps-tolerance", required_argument, NULL,                               \
       (base) + MB_CLI_SERVE_QPS_TOLERANCE},                                   \
  {                                                                            \
    "find-peak", no_argument, NULL, (base) + MB_CLI_SERVE_FIND_PEAK            \
  }

/* One --sweep axis. */
typedef enum mb_cli_axis_kind {
  MB_CLI_AXIS_BATCH,
  MB_CLI_AXIS_THREADS,
  MB_CLI_AXIS_CONCURRENCY,
  MB_CLI_AXIS_QPS,
  MB_CLI_AXIS_DIM,
} mb_cli_axis_kind;

typedef struct mb_cli_axis {
  mb_cli_axis_kind kind;
  const char *dim; /* MB_CLI_AXIS_DIM: the symbolic dimension (into argv) */
  int n;
  double *values; /* owned */
} mb_cli_axis;

typedef struct mb_cli_serving {
  bool load;             /* the load command: its options are allowed */
  const char *load_only; /* a load option given to bench, for the error */
  mb_cli_axis *axes;     /* owned, in the order given */
  int n_axes;
  mb_dim_value *dims; /* --dim (owned array, names into argv) */
  int n_dims;
  mb_dim_value *point_dims; /* --dim plus the point's dim axes (owned) */
  char label[160];          /* the current point, "batch=4 threads=2 seq=64" */
} mb_cli_serving;

/* Applies option `which` (MB_CLI_SERVE_*) with arg. Returns an exit code. */
int mb__cli_serving_option(mb_cli_serving *s, const char *cmd, int which,
                           char *arg, struct mb_bench_config *config);
/* After parsing: load options outside load, sweeps that cannot apply.
 * Returns an exit code. */
int mb__cli_serving_check(mb_cli_serving *s, const char *cmd,
                          const struct mb_bench_config *config);
/* Points of the sweep (the product of the axes; 1 without --sweep). */
int mb__cli_sweep_count(const mb_cli_serving *s);
/* Sets config (batch, threads, concurrency, qps, dims, sweep_point) for
 * point `point` and s->label. Returns an exit code. */
int mb__cli_sweep_apply(mb_cli_serving *s, int point,
                        struct mb_bench_config *config);
void mb__cli_serving_free(mb_cli_serving *s);

/* --shape NAME=D0,D1,... and --batch-size, accumulated into a spec. */
typedef struct mb_cli_shapes {
  mb_shape_spec spec;
  mb_input_shape *shapes; /* owned; names point into argv */
  int n, cap;
} mb_cli_shapes;
/* Parses one --shape argument; returns MB_EXIT_OK or a usage error. */
int mb__cli_add_shape(mb_cli_shapes *shapes, const char *cmd, char *arg);
int mb__cli_set_batch(mb_cli_shapes *shapes, const char *cmd, const char *arg);
void mb__cli_shapes_free(mb_cli_shapes *shapes);
/* Exit code for a failed mb_model_resolve_input_shapes / analyze with the
 * user's spec: the command line is at fault. */
int mb__cli_shape_error(const char *model_path, const mb_error *err);

/* Loads a model, printing the error. Returns an exit code. */
int mb__cli_load_model(const char *path, mb_model **model_out);

/* Loads DIR/input_N.pb (prefix "input") or output_N.pb for N = 0.. while
 * the files exist. *tensors_out: malloc'd array of *count_out tensors.
 * Prints errors; returns an exit code. `status_out` (may be NULL) receives
 * the failing status. */
int mb__cli_load_pb_set(const char *dir, const char *prefix,
                        mb_tensor ***tensors_out, int *count_out,
                        mb_status *status_out);
void mb__cli_free_tensors(mb_tensor **tensors, int count);

/* Checks that `t` (read from `file`) fits model input `index`. */
int mb__cli_check_input(const mb_model *model, int index, const mb_tensor *t,
                        const char *file);

/* "[batch,3,224,224]" for a declared shape; "?" for unknown dims. */
const char *mb__cli_info_shape(const mb_value_info *info, char *buf,
                               size_t size);
/* 1234567 -> "1.23 M" (SI prefixes). */
const char *mb__cli_si(double v, char *buf, size_t size);
/* Bytes -> "44.6 MiB". */
const char *mb__cli_bytes(double v, char *buf, size_t size);
/* Text from a file or database (names, paths, reasons) for one printf
 * argument, control characters escaped (mb__term_text): s itself when
 * clean, else one of 8 static buffers used in turn, so that up to 8 calls
 * may stand in one printf. "-" for NULL. Not thread-safe: the CLI's
 * printing only. */
const char *mb__cli_text(const char *s);

/* Sorted names of entries of dir that start with prefix and are
 * directories. *names_out: malloc'd array of malloc'd strings. Returns -1
 * (errno set) when dir cannot be read. */
int mb__cli_list_subdirs(const char *dir, const char *prefix,
                         char ***names_out);
void mb__cli_free_names(char **names, int count);
bool mb__cli_is_dir(const char *path);
bool mb__cli_file_exists(const char *path);

/* The models named by specs (argv entries): a file; a folder's *.onnx
 * files, sorted (sub-folders too with `recursive`); "PATH::HASH" keeps the
 * models under PATH whose sha256 starts with HASH (4 to 64 hex digits).
 * *paths_out: malloc'd array of *n_out malloc'd paths (free with
 * mb__cli_free_names). Prints errors; returns an exit code (usage error
 * when a folder holds no model or a filter matches none). */
int mb__cli_expand_models(const char *cmd, char *const *specs, int n_specs,
                          bool recursive, char ***paths_out, int *n_out);

/* What `bench` does with a finished report (report_output.c): a local run
 * and a run merged from other machines (--executor, `jobs collect`) share
 * it. Every pointer is borrowed. */
typedef struct mb_cli_report_output {
  const char *json_path, *csv_path, *markdown_path, *html_path; /* or NULL */
  const char *cache_dir; /* --cache-dir or NULL */
  bool no_record;
  const char *const *labels; /* "key=value" stored with each run */
  int n_labels;
  double predicted_ms;
  bool traceback;
  int log_level;
  bool explicit_conversions; /* an unavailable conversion is a failure */
} mb_cli_report_output;
/* Prints the table and recommendation, stores the run in the results
 * database (unless no_record) and the details --traceback asks for.
 * Returns MB_EXIT_FAILURE when a conversion failed, else MB_EXIT_OK. */
int mb__cli_report_show(const mb_cli_report_output *output,
                        const mb_bench_report *report, bool color);
/* Writes the report files of `output` over n reports. Returns an exit
 * code. */
int mb__cli_reports_write(const mb_cli_report_output *output,
                          mb_bench_report *const *reports, int n);

/* --keep-float NODE[,NODE...] (bench, convert, profile): the names given
 * so far, pointing into `texts` (one copy of each option's value, split at
 * commas). */
typedef struct mb_cli_keep_float {
  const char **names;
  int n;
  char **texts;
  int n_texts;
} mb_cli_keep_float;
/* Adds arg's names. Returns an MB_EXIT_ code. */
int mb__cli_add_keep_float(mb_cli_keep_float *list, const char *cmd,
                           const char *arg);
void mb__cli_keep_float_free(mb_cli_keep_float *list);
#define MB_CLI_KEEP_FLOAT_HELP                                                 \
  "      --keep-float NODE[,NODE...]  int8 conversions leave these nodes\n"    \
  "                             (names as in the model) in float32\n"          \
  "                             (repeatable; 'modelbench tune' finds\n"        \
  "                             them)\n"

/* The profiling-pass options profile and explain share: getopt_long
 * entries whose values are base + MB_CLI_PROF_*, one handler for them,
 * and their help lines (MB_CLI_PROFILE_HELP). */
enum {
  MB_CLI_PROF_ITERATIONS, /* --iterations N */
  MB_CLI_PROF_WARMUP,     /* --warmup N */
  MB_CLI_PROF_THREADS,    /* --threads N */
  MB_CLI_PROF_BATCH,      /* --batch-size N */
  MB_CLI_PROF_SHAPE,      /* --shape NAME=D0,D1,.. */
  MB_CLI_PROF_SEED,       /* --seed N */
  MB_CLI_PROF_TIMEOUT,    /* --timeout S */
  MB_CLI_PROF_NO_ISOLATE, /* --no-isolate */
  MB_CLI_PROF_INPUTS,     /* --inputs DIR */
  MB_CLI_PROF_KEEP_FLOAT, /* --keep-float NODE[,NODE...] */
  MB_CLI_PROF_COUNT
};
#define MB_CLI_PROFILE_OPTIONS(base)                                           \
  {"iterations", required_argument, NULL, (base) + MB_CLI_PROF_ITERATIONS},    \
      {"warmup", required_argument, NULL, (base) + MB_CLI_PROF_WARMUP},        \
      {"threads", required_argument, NULL, (base) + MB_CLI_PROF_THREADS},      \
      {"batch-size", required_argument, NULL, (base) + MB_CLI_PROF_BATCH},     \
      {"shape", required_argument, NULL, (base) + MB_CLI_PROF_SHAPE},          \
      {"seed", required_argument, NULL, (base) + MB_CLI_PROF_SEED},            \
      {"timeout", required_argument, NULL, (base) + MB_CLI_PROF_TIMEOUT},      \
      {"no-isolate", no_argument, NULL, (base) + MB_CLI_PROF_NO_ISOLATE},      \
      {"inputs", required_argument, NULL, (base) + MB_CLI_PROF_INPUTS}, {      \
    "keep-float", required_argument, NULL, (base) + MB_CLI_PROF_KEEP_FLOAT     \
  }
#define MB_CLI_PROFILE_HELP                                                    \
  "      --iterations N         profiled inferences (default 50)\n"            \
  "      --warmup N             warm-up inferences (default 5)\n"              \
  "      --threads N            intra-op threads (default 1)\n"                \
  "      --batch-size N         size of a dynamic first dim (default 1)\n"     \
  "      --shape NAME=D0,D1,..  shape of input NAME (repeatable)\n"            \
  "      --seed N               seed of generated inputs (default 0)\n"        \
  "      --inputs DIR           real inputs (as in 'bench'; sample 0)\n"       \
  "      --calibration-samples N, --calibration-inputs DIR,\n"                 \
  "      --calibration-method M, --int8-weights 7|8|auto\n"                    \
  "                             int8 calibration and weights, as in "          \
  "'bench'\n" MB_CLI_KEEP_FLOAT_HELP                                           \
  "      --timeout S            kill a profiling pass after S seconds\n"       \
  "                             (default 300)\n"                               \
  "      --no-isolate           profile in this process\n"
/* What the profiling options set: the config, and the shapes and
 * --keep-float names it will point into once parsing is done
 * (mb__cli_profile_finish). */
typedef struct mb_cli_profile_args {
  struct mb_bench_config *config;
  mb_cli_shapes *shapes;
  mb_cli_keep_float *keep_float;
} mb_cli_profile_args;
/* Applies option `which` (MB_CLI_PROF_*) with arg. Returns MB_EXIT_OK or a
 * usage error naming the option and value. */
int mb__cli_profile_option(const char *cmd, int which, char *arg,
                           mb_cli_profile_args *args);
/* Points the config at the parsed shapes and --keep-float names. */
void mb__cli_profile_finish(mb_cli_profile_args *args);

/* Monotonic clock in seconds. */
double mb__cli_now(void);

#endif
