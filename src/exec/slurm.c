/* The Slurm executor: one job array per submission.
 *
 * submit writes <run dir>/task.sh (a POSIX shell script: array task N runs
 * `modelbench bench` on task N's model with the run's options, its report
 * into tasks/N/report.json, its exit code into tasks/N/exit) and hands it
 * to `sbatch --array`, with --partition, --time, --mem, --cpus-per-task,
 * --account and every --sbatch-arg as the user gave them. A retry is one
 * more array of just the failed indices.
 *
 * poll asks `squeue -r --states=all` (one line per array task, finished
 * ones included while slurmctld keeps them, MinJobAge); a task that has
 * left the queue is looked up in `sacct` when the cluster keeps
 * accounting, and is done when it left its exit file. Slurm's state
 * (COMPLETED, FAILED, TIMEOUT, CANCELLED, NODE_FAIL, OUT_OF_MEMORY, ...)
 * and reason are kept with the task; Slurm decides everything, we only
 * read. */
#include "exec/exec.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* How long one Slurm command may take before the cluster is "not
 * answering" (slurmctld retries for a while when it is down). */
#define SLURM_COMMAND_TIMEOUT_S 60

/* Slurm job states (squeue %T, sacct State) and what they mean here. */
static const struct {
  const char *slurm;
  mb_task_state state;
  const char *meaning; /* for a failed task's reason */
} slurm_states[] = {
    {"PENDING", MB_TASK_PENDING, NULL},
    {"CONFIGURING", MB_TASK_PENDING, NULL},
    {"REQUEUED", MB_TASK_PENDING, NULL},
    {"REQUEUE_HOLD", MB_TASK_PENDING, NULL},
    {"RESIZING", MB_TASK_PENDING, NULL},
    {"RUNNING", MB_TASK_RUNNING, NULL},
    {"COMPLETING", MB_TASK_RUNNING, NULL},
    {"SUSPENDED", MB_TASK_RUNNING, NULL},
    {"STOPPED", MB_TASK_RUNNING, NULL},
    {"SIGNALING", MB_TASK_RUNNING, NULL},
    {"STAGE_OUT", MB_TASK_RUNNING, NULL},
    {"COMPLETED", MB_TASK_DONE, NULL},
    {"FAILED", MB_TASK_FAILED, "the task's command failed"},
    {"TIMEOUT", MB_TASK_FAILED, "the time limit (--time-limit) ran out"},
    {"DEADLINE", MB_TASK_FAILED, "its deadline passed"},
    {"CANCELLED", MB_TASK_FAILED, "cancelled (scancel, or an administrator)"},
    {"NODE_FAIL", MB_TASK_FAILED, "its node failed"},
    {"BOOT_FAIL", MB_TASK_FAILED, "its node failed to boot"},
    {"OUT_OF_MEMORY", MB_TASK_FAILED, "over its memory limit (--mem)"},
    {"PREEMPTED", MB_TASK_FAILED, "preempted by another job"},
    {"REVOKED", MB_TASK_FAILED, "revoked (federation)"},
    {"SPECIAL_EXIT", MB_TASK_FAILED, "held after a special exit"},
};

static int find_state(const char *slurm) {
  for (size_t i = 0; i < MB_ARRAY_COUNT(slurm_states); i++)
    if (strncmp(slurm, slurm_states[i].slurm, strlen(slurm_states[i].slurm)) ==
        0)
      return (int)i; /* sacct writes "CANCELLED by 0" */
  return -1;
}

/* Runs a Slurm command; its output in *out (malloc). A command that
 * cannot start or exits non-zero fails with a message naming it. */
static mb_status slurm_command(char *const *argv, int *exit_out, char **out,
                               mb_error *err) {
  mb_status status =
      mb__exec_capture(argv, SLURM_COMMAND_TIMEOUT_S, exit_out, out, err);
  const char *conf = getenv("SLURM_CONF");
  if (status == MB_STATUS_NOT_FOUND)
    return mb__error(err, status,
                     "slurm: cannot run %s: not found (install Debian's "
                     "slurm-client, or start a local cluster with "
                     "scripts/local-slurm.sh start)",
                     argv[0]);
  if (status)
    return mb__error(err, status, "slurm: %s (SLURM_CONF=%s)", err->message,
                     conf ? conf : "unset");
  return MB_STATUS_OK;
}

static mb_status slurm_check(mb_exec_run *run, mb_error *err) {
  (void)run;
  char *argv[] = {"scontrol", "ping", NULL};
  char *out = NULL;
  int code;
  mb_status status = slurm_command(argv, &code, &out, err);
  if (!status && (code != 0 || !out || !strstr(out, "UP"))) {
    char line[256];
    const char *conf = getenv("SLURM_CONF");
    mb__exec_last_line(out, line, sizeof line);
    status = mb__error(err, MB_STATUS_UNAVAILABLE,
                       "slurm: no controller answers (tried 'scontrol ping' "
                       "with SLURM_CONF=%s: %s); start one with "
                       "scripts/local-slurm.sh start, or point SLURM_CONF at "
                       "your cluster's slurm.conf",
                       conf ? conf : "unset (/etc/slurm/slurm.conf)",
                       line[0] ? line : "no output");
  }
  free(out);
  return status;
}

/* ---- the batch script ---- */

typedef struct text {
  char *s;
  size_t len, cap;
  bool oom;
} text;

static void put(text *t, const char *s) {
  size_t n = strlen(s);
  if (t->oom)
    return;
  if (t->len + n + 1 > t->cap) {
    size_t cap = MB_MAX(t->cap * 2, t->len + n + 256);
    char *p = realloc(t->s, cap);
    if (!p) {
      t->oom = true;
      return;
    }
    t->s = p;
    t->cap = cap;
  }
  memcpy(t->s + t->len, s, n + 1);
  t->len += n;
}

static void put_quoted(text *t, const char *s) {
  if (!t->oom && !mb__exec_shell_quote(&t->s, &t->len, &t->cap, s))
    t->oom = true;
}

/* "--name=value" (or "--name") quoted. */
static void put_arg(text *t, const char *name, const char *value) {
  char *arg = malloc(strlen(name) + (value ? strlen(value) : 0) + 4);
  if (!arg) {
    t->oom = true;
    return;
  }
  sprintf(arg, "--%s%s%s", name, value ? "=" : "", value ? value : "");
  put(t, " ");
  put_quoted(t, arg);
  free(arg);
}

static mb_status write_script(const mb_exec_run *run, char *path, size_t size,
                              mb_error *err) {
  text t = {0};
  char tasks[PATH_MAX + 16];
  snprintf(tasks, sizeof tasks, "%s/tasks", run->dir);
  put(&t, "#!/bin/sh\n# modelbench run ");
  put(&t, run->id);
  put(&t, ", submitted by `modelbench bench --executor slurm`: array task N\n"
          "# benchmarks task N of run.json. It exits 0 when bench ran to its "
          "end\n# (its report says which conversions failed), else with "
          "bench's code.\ndir=");
  put_quoted(&t, tasks);
  put(&t, "/$SLURM_ARRAY_TASK_ID\nmkdir -p \"$dir/logs\"\n"
          "case $SLURM_ARRAY_TASK_ID in\n");
  for (int i = 0; i < run->n_tasks; i++) {
    char n[32];
    snprintf(n, sizeof n, "%d) set --", i);
    put(&t, n);
    put(&t, " ");
    put_quoted(&t, run->tasks[i].model);
    if (run->tasks[i].split)
      put_arg(&t, "conversions", run->tasks[i].conversions);
    put(&t, " ;;\n");
  }
  put(&t, "*) echo \"modelbench: run ");
  put(&t, run->id);
  put(&t, " has no task $SLURM_ARRAY_TASK_ID\" >&2; exit 2 ;;\nesac\n"
          "hostname >\"$dir/node\"\n");
  for (int i = 0; i < run->n_task_command; i++) {
    put_quoted(&t, run->task_command[i]);
    put(&t, " ");
  }
  put(&t, "bench \"$@\"");
  for (int i = 0; i < run->n_args; i++)
    put_arg(&t, run->args[i].name, run->args[i].value);
  put(&t, " --json=\"$dir/report.json\" --log-dir=\"$dir/logs\" --no-record");
  put_arg(&t, "cache-dir", run->output.cache_dir);
  put(&t, "\nrc=$?\necho $rc >\"$dir/exit\"\n[ $rc -le 1 ] || exit $rc\n");
  if (t.oom) {
    free(t.s);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  snprintf(path, size, "%s/task.sh", run->dir);
  mb_status status = mb__write_file(path, t.s, t.len, err);
  free(t.s);
  if (!status)
    chmod(path, 0755);
  return status;
}

/* ---- submit ---- */

static mb_status slurm_submit(mb_exec_run *run, const int *tasks, int n,
                              mb_error *err) {
  char script[PATH_MAX], file[PATH_MAX];
  mb_status status = write_script(run, script, sizeof script, err);
  if (status)
    return status;
  /* "--array=0,2,5": Slurm takes a list as well as a range. */
  size_t cap = (size_t)n * 12 + 16;
  char *array = malloc(cap);
  char *out = NULL;
  const char **argv =
      calloc((size_t)(24 + run->slurm.n_sbatch_args), sizeof *argv);
  char job_name[96], output[PATH_MAX + 64], chdir_arg[PATH_MAX + 16];
  char opts[5][512];
  if (!array || !argv) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  size_t used = (size_t)snprintf(array, cap, "--array=");
  for (int i = 0; i < n; i++)
    used += (size_t)snprintf(array + used, cap - used, "%s%d", i ? "," : "",
                             tasks[i]);
  /* Each attempt of each task keeps its own output file. */
  snprintf(job_name, sizeof job_name, "--job-name=modelbench-%s", run->id);
  snprintf(output, sizeof output, "--output=%s/tasks/%%a/slurm-%%A_%%a.out",
           run->dir);
  snprintf(chdir_arg, sizeof chdir_arg, "--chdir=%s",
           run->workdir ? run->workdir : run->dir);
  int a = 0;
  argv[a++] = "sbatch";
  argv[a++] = "--parsable";
  argv[a++] = job_name;
  argv[a++] = array;
  argv[a++] = output;
  argv[a++] = chdir_arg;
  const struct {
    const char *flag;
    const char *value;
  } passed[] = {
      {"--partition", run->slurm.partition},
      {"--time", run->slurm.time_limit},
      {"--mem", run->slurm.mem},
      {"--cpus-per-task", run->slurm.cpus_per_task},
      {"--account", run->slurm.account},
  };
  for (size_t i = 0; i < MB_ARRAY_COUNT(passed); i++)
    if (passed[i].value) {
      snprintf(opts[i], sizeof opts[i], "%s=%s", passed[i].flag,
               passed[i].value);
      argv[a++] = opts[i];
    }
  for (int i = 0; i < run->slurm.n_sbatch_args; i++)
    argv[a++] = run->slurm.sbatch_args[i];
  argv[a++] = script;
  argv[a] = NULL;

  /* A retried task starts clean: no stale exit file or report. */
  for (int i = 0; i < n; i++) {
    unlink(mb__exec_task_file(run, tasks[i], "exit", file, sizeof file));
    unlink(mb__exec_task_file(run, tasks[i], "report.json", file, sizeof file));
  }
  int code;
  if ((status = slurm_command((char *const *)argv, &code, &out, err)))
    goto done;
  char line[512];
  mb__exec_last_line(out, line, sizeof line);
  long job = strtol(line, NULL, 10);
  if (code != 0 || job <= 0) {
    const char *conf = getenv("SLURM_CONF");
    status = mb__error(err, MB_STATUS_UNAVAILABLE,
                       "slurm: sbatch failed (exit %d: %s); tried: %s "
                       "(SLURM_CONF=%s)",
                       code, line[0] ? line : "no output",
                       mb__exec_argv_string((char *const *)argv),
                       conf ? conf : "unset");
    goto done;
  }
  char id[32];
  snprintf(id, sizeof id, "%ld", job);
  char **grown = realloc(run->jobs, sizeof *grown * (size_t)(run->n_jobs + 1));
  if (!grown || !(grown[run->n_jobs] = mb__strdup(id))) {
    if (grown)
      run->jobs = grown;
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  run->jobs = grown;
  run->n_jobs++;
  for (int i = 0; i < n; i++) {
    mb_exec_task *t = &run->tasks[tasks[i]];
    snprintf(t->where, sizeof t->where, "%ld_%d", job, tasks[i]);
    t->state = MB_TASK_PENDING;
    t->attempts++;
    t->node[0] = t->slurm_state[0] = t->reason[0] = '\0';
  }

done:
  free(out);
  free(argv);
  free(array);
  return status;
}

/* ---- poll ---- */

/* What the task left: its exit code (-1 when none) and node. */
static int task_exit(const mb_exec_run *run, int i, mb_exec_task *t) {
  char path[PATH_MAX], buf[64] = "";
  FILE *f = fopen(mb__exec_task_file(run, i, "node", path, sizeof path), "r");
  if (f) {
    if (fgets(buf, sizeof buf, f) && !t->node[0]) {
      buf[strcspn(buf, "\n")] = '\0';
      snprintf(t->node, sizeof t->node, "%s", buf);
    }
    fclose(f);
  }
  f = fopen(mb__exec_task_file(run, i, "exit", path, sizeof path), "r");
  int code = -1;
  if (f) {
    if (fscanf(f, "%d", &code) != 1)
      code = -1;
    fclose(f);
  }
  return code;
}

/* Fills a task's state from a Slurm state word and reason. */
static void set_state(const mb_exec_run *run, int i, const char *slurm,
                      const char *reason, const char *node) {
  mb_exec_task *t = &run->tasks[i];
  int row = find_state(slurm);
  snprintf(t->slurm_state, sizeof t->slurm_state, "%.*s",
           (int)strcspn(slurm, " "), slurm);
  if (node && node[0] && strcmp(node, "(null)") != 0)
    snprintf(t->node, sizeof t->node, "%s", node);
  t->state = row >= 0 ? slurm_states[row].state : MB_TASK_RUNNING;
  if (t->state != MB_TASK_FAILED)
    return;
  int code = task_exit(run, i, t);
  char detail[160] = "";
  if (code >= 0)
    snprintf(detail, sizeof detail, ", modelbench exit code %d", code);
  snprintf(t->reason, sizeof t->reason, "%s%s%s%s%s%s, job %s", t->slurm_state,
           reason && reason[0] && strcmp(reason, "None") ? " (" : "",
           reason && strcmp(reason, "None") ? reason : "",
           reason && reason[0] && strcmp(reason, "None") ? ")" : "",
           row >= 0 && slurm_states[row].meaning ? ": " : "",
           row >= 0 && slurm_states[row].meaning ? slurm_states[row].meaning
                                                 : "",
           t->where);
  if (detail[0] && strlen(t->reason) + strlen(detail) < sizeof t->reason)
    strcat(t->reason, detail);
}

/* A task squeue no longer shows: its exit file, else sacct, else lost. */
static void settle_gone(const mb_exec_run *run, int i) {
  mb_exec_task *t = &run->tasks[i];
  int code = task_exit(run, i, t);
  if (code >= 0 && code <= 1) {
    t->state = MB_TASK_DONE;
    snprintf(t->slurm_state, sizeof t->slurm_state, "COMPLETED");
    return;
  }
  char *argv[] = {"sacct",          "-n", "-P", "-X", "-j", t->where, "-o",
                  "State,NodeList", NULL};
  char *out = NULL, line[96];
  int exit_code = -1;
  mb_error err;
  if (mb__exec_capture(argv, SLURM_COMMAND_TIMEOUT_S, &exit_code, &out, &err) ==
          MB_STATUS_OK &&
      exit_code == 0 && out && out[0] && strchr(out, '|')) {
    char *bar = strchr(out, '|');
    *bar = '\0';
    bar[1 + strcspn(bar + 1, "\n")] = '\0';
    set_state(run, i, out, NULL, bar + 1);
    if (t->state == MB_TASK_DONE || t->state == MB_TASK_FAILED) {
      free(out);
      return;
    }
  }
  mb__exec_last_line(out, line, sizeof line);
  free(out);
  t->state = MB_TASK_FAILED;
  snprintf(t->slurm_state, sizeof t->slurm_state, "UNKNOWN");
  snprintf(t->reason, sizeof t->reason,
           "job %s left the queue without a result (cancelled while "
           "pending, or purged; sacct: %s)",
           t->where, line[0] ? line : "no record");
}

static mb_status slurm_poll(mb_exec_run *run, mb_error *err) {
  mb_status status = MB_STATUS_OK;
  for (int j = 0; j < run->n_jobs && !status; j++) {
    bool wanted = false;
    size_t job_len = strlen(run->jobs[j]);
    for (int i = 0; i < run->n_tasks; i++) {
      const mb_exec_task *t = &run->tasks[i];
      wanted |= (t->state == MB_TASK_PENDING || t->state == MB_TASK_RUNNING) &&
                strncmp(t->where, run->jobs[j], job_len) == 0 &&
                t->where[job_len] == '_';
    }
    if (!wanted)
      continue;
    char *argv[] = {"squeue",       "-h",          "-r",
                    "--states=all", "-j",          run->jobs[j],
                    "-o",           "%i|%T|%r|%N", NULL};
    char *out = NULL;
    int code;
    if ((status = slurm_command(argv, &code, &out, err)))
      break;
    /* A job slurmctld has purged is "Invalid job id": its tasks are
     * settled one by one below. */
    if (code != 0 && !(out && strstr(out, "Invalid job id"))) {
      char line[256];
      mb__exec_last_line(out, line, sizeof line);
      status = mb__error(err, MB_STATUS_UNAVAILABLE,
                         "slurm: squeue failed (exit %d: %s)", code, line);
      free(out);
      break;
    }
    for (int i = 0; i < run->n_tasks; i++) {
      mb_exec_task *t = &run->tasks[i];
      if ((t->state != MB_TASK_PENDING && t->state != MB_TASK_RUNNING) ||
          strncmp(t->where, run->jobs[j], job_len) != 0 ||
          t->where[job_len] != '_')
        continue;
      bool seen = false;
      size_t where_len = strlen(t->where);
      /* One line per array task: "JOB_N|STATE|REASON|NODE". */
      for (const char *line = code == 0 ? out : NULL; line && *line && !seen;) {
        size_t len = strcspn(line, "\n");
        if (len > where_len && strncmp(line, t->where, where_len) == 0 &&
            line[where_len] == '|') {
          char copy[512], *fields[3] = {NULL, NULL, NULL};
          snprintf(copy, sizeof copy, "%.*s", (int)(len - where_len - 1),
                   line + where_len + 1);
          char *p = copy;
          for (int f = 0; f < 3 && p; f++) {
            fields[f] = p;
            p = strchr(p, '|');
            if (p)
              *p++ = '\0';
          }
          set_state(run, i, fields[0], fields[1], fields[2]);
          seen = true;
        }
        line += len + (line[len] == '\n');
      }
      if (!seen)
        settle_gone(run, i);
      /* A COMPLETED task whose script never wrote its exit code did not
       * get to run bench (a broken node, a full disk). */
      if (t->state == MB_TASK_DONE && task_exit(run, i, t) < 0) {
        t->state = MB_TASK_FAILED;
        snprintf(t->reason, sizeof t->reason,
                 "job %s completed without running modelbench (no exit file; "
                 "see tasks/%d/slurm-*.out)",
                 t->where, i);
      }
    }
    free(out);
  }
  return status;
}

const mb_executor mb__executor_slurm = {
    .name = "slurm",
    .check = slurm_check,
    .submit = slurm_submit,
    .poll = slurm_poll,
    .detached = true,
};
