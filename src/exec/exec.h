/* Executors: `bench` spread over other machines (issue 15).
 *
 * A run is a folder (the run folder, on storage every machine sees for
 * Slurm) holding run.json (what to run and how far it got) and one
 * tasks/N/ folder per task: a model, or a model x conversion with
 * `--split conversions`. Each task runs the same `modelbench bench` with
 * the run's settings on some machine and leaves its JSON report in
 * tasks/N/report.json; the submitter (or `modelbench jobs collect RUN`,
 * from any shell) waits, resubmits failed tasks (--retries), and merges the
 * task reports into one report per model (merge.c).
 *
 * An executor is one file behind `mb_executor`, as runtimes are:
 *   slurm.c   one job array per submission (sbatch), states from squeue,
 *             sacct when a job has left the queue
 *   ssh.c     OpenSSH: per host, one child process that copies each
 *             model's files (scp), runs the remote modelbench and brings
 *             the report back
 * run_dir.c holds the run folder and run.json, driver.c the wait loop,
 * progress and retries, merge.c the merge, spawn.c running a command and
 * capturing its output. Nothing here schedules, retries on a timer or
 * moves bytes itself: Slurm and OpenSSH do. */
#ifndef MB_EXEC_EXEC_H
#define MB_EXEC_EXEC_H

#include "core/internal.h"
#include "core/spawn.h"

/* X(NAME, "name"): where a task stands. */
#define MB_TASK_STATE_LIST(X)                                                  \
  X(PENDING, "pending")                                                        \
  X(RUNNING, "running")                                                        \
  X(DONE, "done")     /* ran to its end: its report says the rest */           \
  X(FAILED, "failed") /* the executor saw it fail: slurm_state, reason */

typedef enum mb_task_state {
#define MB_X(name, str) MB_TASK_##name,
  MB_TASK_STATE_LIST(MB_X)
#undef MB_X
      MB_TASK_STATE_COUNT
} mb_task_state;
const char *mb__task_state_name(mb_task_state state);

/* One task: a model and the conversions it runs. */
typedef struct mb_exec_task {
  char *model;       /* absolute path (malloc) */
  char *conversions; /* "A,B": the planned run list (malloc) */
  char *baseline;    /* the model's baseline conversion, or NULL */
  bool split;        /* runs only `conversions` (-c), not the
                        run's own conversion options */
  mb_task_state state;
  char where[64];       /* Slurm job "12_3", or the SSH host */
  char node[64];        /* the machine it ran on, "" unknown */
  char slurm_state[32]; /* "COMPLETED", "TIMEOUT", ...; "" unknown */
  char reason[256];     /* why it failed (Slurm's reason, ssh's error) */
  int attempts;         /* submissions so far */
} mb_exec_task;

/* One option every task gets, in long form ("--min-time=0.5"). */
typedef struct mb_exec_arg {
  char *name;  /* "min-time" (malloc) */
  char *value; /* NULL for a flag (malloc) */
  bool path;   /* a local file or folder: copied to SSH hosts */
} mb_exec_arg;

/* What the submitter does with the merged reports (the bench options
 * that stay on the submitting side). */
typedef struct mb_exec_output {
  char *json, *csv, *markdown, *html; /* report files or NULL (malloc) */
  char *cache_dir;                    /* resolved, absolute (malloc) */
  bool no_record;
  char **labels; /* --label KEY=VALUE (malloc) */
  int n_labels;
  double predicted_ms;
  bool traceback;
  bool explicit_conversions; /* an unavailable conversion is a failure */
} mb_exec_output;

/* Slurm's options, passed through to sbatch as given. */
typedef struct mb_exec_slurm {
  char *partition, *time_limit, *mem, *cpus_per_task, *account; /* or NULL */
  char **sbatch_args; /* --sbatch-arg, each one argument */
  int n_sbatch_args;
} mb_exec_slurm;

typedef struct mb_executor mb_executor;

typedef struct mb_exec_run {
  char id[64];    /* "20250131-120000-4242" */
  char dir[3072]; /* the run folder, absolute (paths under it fit PATH_MAX) */
  char executor[1024]; /* "slurm" or "ssh:HOST,HOST" as given */
  const mb_executor *ex;
  char **hosts; /* ssh: the hosts (malloc) */
  int n_hosts;
  char *ssh_config;        /* ssh -F FILE, or NULL */
  char *remote_modelbench; /* ssh: the remote command (default modelbench) */
  char **task_command;     /* how a task starts modelbench (argv prefix) */
  int n_task_command;
  char *workdir; /* the submitter's working directory */
  int n_tasks;
  mb_exec_task *tasks;
  int n_args;
  mb_exec_arg *args;
  mb_exec_slurm slurm;
  mb_exec_output output;
  int retries;    /* resubmissions allowed per failed task */
  bool collected; /* merged and recorded once already */
  char **jobs;    /* Slurm job ids submitted, in order */
  int n_jobs;
} mb_exec_run;

/* An executor: one file, one row in the table of run_dir.c. */
struct mb_executor {
  const char *name; /* "slurm", "ssh" */
  /* Checks that the executor can work here (tools found, hosts answer)
   * before the run folder is filled; may be NULL. */
  mb_status (*check)(mb_exec_run *run, mb_error *err);
  /* Starts the given tasks (their first attempt or a retry); updates
   * their `where`, `attempts` and the run's `jobs`. */
  mb_status (*submit)(mb_exec_run *run, const int *tasks, int n, mb_error *err);
  /* Updates the state of every task not yet DONE or FAILED. A failure
   * means the executor cannot be asked now (its message says why); the
   * states are left as they were. */
  mb_status (*poll)(mb_exec_run *run, mb_error *err);
  /* true: tasks go on without the submitting process (--no-wait). */
  bool detached;
};

extern const mb_executor mb__executor_slurm;
extern const mb_executor mb__executor_ssh;
/* Refuses an SSH host that is not HOST or USER@HOST made of letters,
 * digits, '.', '-' and '_' (ssh.c): a host starting with '-' (an ssh
 * option), a port, an IPv6 address, blanks, control or shell characters;
 * the message names the host. Ports and addresses go in --ssh-config. */
mb_status mb__exec_ssh_host_check(const char *host, mb_error *err);

/* ---- the run folder (run_dir.c) ---- */

/* Finds the executor of a spec ("slurm", "ssh:HOST[,HOST...]") and fills
 * run->executor, run->ex, run->hosts. */
mb_status mb__exec_parse_spec(mb_exec_run *run, const char *spec,
                              mb_error *err);
/* Creates <parent>/<id>/ with tasks/N/ for every task and writes
 * run.json. parent: borrowed. */
mb_status mb__exec_run_create(mb_exec_run *run, const char *parent,
                              mb_error *err);
/* Writes run.json atomically. */
mb_status mb__exec_run_save(const mb_exec_run *run, mb_error *err);
/* Loads a run: RUN is a run folder, or an id under <cache dir>/runs.
 * cache_dir: --cache-dir or NULL. */
mb_status mb__exec_run_load(const char *run_or_id, const char *cache_dir,
                            mb_exec_run *run, mb_error *err);
/* Frees what the run owns (not the struct). */
void mb__exec_run_free(mb_exec_run *run);
/* "<run dir>/tasks/<i>/<name>" into buf. */
const char *mb__exec_task_file(const mb_exec_run *run, int task,
                               const char *name, char *buf, size_t size);
/* flock on <run dir>/lock: one process at a time polls and resubmits. */
int mb__exec_run_lock(const mb_exec_run *run, mb_error *err);
void mb__exec_run_unlock(int fd);

/* ---- the wait loop (driver.c) ---- */

/* Polls until every task is DONE or FAILED, resubmitting FAILED tasks
 * while they have retries left, with a progress line on stderr (a TTY) or
 * a line per change. poll_seconds: between polls. */
mb_status mb__exec_wait(mb_exec_run *run, double poll_seconds, mb_error *err);
/* Polls once (and resubmits what may be); prints nothing. */
mb_status mb__exec_poll(mb_exec_run *run, mb_error *err);
/* true when every task is DONE or FAILED with no retry left. */
bool mb__exec_finished(const mb_exec_run *run);
/* Prints one line per task and a summary to out (a FILE *). */
void mb__exec_print_status(const mb_exec_run *run, void *out);

/* ---- merging (merge.c) ---- */

/* One report per model of the run, in the run's model order: the task
 * reports merged (a model split over several tasks becomes one report, in
 * its planned conversion order, speedups against its baseline), and every
 * planned conversion without a result recorded as failed with the task's
 * Slurm state and reason. *reports_out: free with mb__reports_free.
 * *n_failed_models_out: models that left no report at all (they failed to
 * load; their tasks' output says why, printed on stderr). */
mb_status mb__exec_merge(const mb_exec_run *run, mb_bench_report ***reports_out,
                         int *n_out, int *n_failed_models_out, mb_error *err);

/* Running commands: core/spawn.h (mb__exec_capture and its helpers). */

#endif /* MB_EXEC_EXEC_H */
