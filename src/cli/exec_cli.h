/* `bench --executor slurm|ssh:HOST,...`: the command-line side of running
 * a bench on other machines (src/exec/ does the running). bench.c adds the
 * options below to its own, records every other option it applies (the
 * tasks get them), and hands the run over here when --executor is given;
 * `modelbench jobs` (jobs.c) follows and collects runs later. */
#ifndef MB_CLI_EXEC_CLI_H
#define MB_CLI_EXEC_CLI_H

#include "cli/cli_common.h"

/* X(NAME, "option", has_arg) */
#define MB_CLI_EXEC_OPTION_LIST(X)                                             \
  X(EXECUTOR, "executor", required_argument)                                   \
  X(SPLIT, "split", required_argument)                                         \
  X(PARTITION, "partition", required_argument)                                 \
  X(TIME_LIMIT, "time-limit", required_argument)                               \
  X(MEM, "mem", required_argument)                                             \
  X(CPUS_PER_TASK, "cpus-per-task", required_argument)                         \
  X(ACCOUNT, "account", required_argument)                                     \
  X(SBATCH_ARG, "sbatch-arg", required_argument)                               \
  X(RETRIES, "retries", required_argument)                                     \
  X(NO_WAIT, "no-wait", no_argument)                                           \
  X(RUN_DIR, "run-dir", required_argument)                                     \
  X(SSH_CONFIG, "ssh-config", required_argument)                               \
  X(REMOTE_MODELBENCH, "remote-modelbench", required_argument)

enum {
#define MB_X(name, option, has_arg) MB_CLI_EXEC_##name,
  MB_CLI_EXEC_OPTION_LIST(MB_X)
#undef MB_X
      MB_CLI_EXEC_COUNT
};

/* getopt_long entries whose values are base + MB_CLI_EXEC_*. */
#define MB_CLI_EXEC_OPTION_ENTRY(name, option, has_arg)                        \
  {option, has_arg, NULL, MB_CLI_EXEC_BASE_ + MB_CLI_EXEC_##name},
#define MB_CLI_EXEC_OPTIONS MB_CLI_EXEC_OPTION_LIST(MB_CLI_EXEC_OPTION_ENTRY)

/* The help text of these options, for `bench --help`. */
extern const char mb__cli_exec_help[];

/* How an option of bench reaches the tasks. */
typedef enum mb_cli_exec_arg_kind {
  MB_CLI_EXEC_ARG_KEEP, /* as given */
  MB_CLI_EXEC_ARG_PATH, /* a local file or folder: absolute; copied over ssh */
  MB_CLI_EXEC_ARG_DROP, /* the submitter's own (outputs, records) */
} mb_cli_exec_arg_kind;

typedef struct mb_cli_exec {
  const char *executor; /* NULL: a local run */
  bool split;           /* --split conversions */
  const char *partition, *time_limit, *mem, *cpus_per_task, *account;
  const char **sbatch_args; /* point into argv (malloc'd array) */
  int n_sbatch_args;
  int retries;
  bool no_wait;
  const char *run_dir; /* parent of run folders; NULL: <cache dir>/runs */
  const char *ssh_config, *remote_modelbench;
  /* Every bench option given, for the tasks (names static, values
   * malloc'd copies). */
  struct mb_cli_exec_given {
    const char *name;
    char *value;
    mb_cli_exec_arg_kind kind;
  } * given;
  int n_given;
} mb_cli_exec;

/* Applies executor option `which` (MB_CLI_EXEC_*). Returns an exit code. */
int mb__cli_exec_option(mb_cli_exec *x, const char *cmd, int which,
                        const char *arg);
/* Records a bench option for the tasks (name: static; value: NULL for a
 * flag). Returns an exit code. */
int mb__cli_exec_keep(mb_cli_exec *x, const char *name, const char *value,
                      mb_cli_exec_arg_kind kind);
/* Checks the executor options against each other (usage errors). */
int mb__cli_exec_check(const mb_cli_exec *x, const char *cmd);
void mb__cli_exec_free(mb_cli_exec *x);

/* One model of a run with its planned conversions. */
typedef struct mb_cli_exec_model {
  const char *path;
  int n_conversions;
  const int *conversions; /* registry indices, in run order */
  int baseline;           /* index into conversions, -1: the first */
} mb_cli_exec_model;

/* Runs a bench on the executor: builds the run folder, submits, and
 * unless --no-wait waits, merges and shows the reports like a local run.
 * Returns the exit code (0, 1; 2 for usage errors found on the way). */
int mb__cli_exec_bench(const mb_cli_exec *x, const mb_cli_report_output *output,
                       const mb_cli_exec_model *models, int n_models);

/* Waits for a run's tasks (resubmitting failed ones while retries are
 * left), merges them and shows the reports like a local bench. run:
 * a struct mb_exec_run (src/exec/exec.h). Returns the exit code. */
struct mb_exec_run;
int mb__cli_exec_finish(struct mb_exec_run *run);

#endif /* MB_CLI_EXEC_CLI_H */
