/* `bench --executor`: turns bench's command line into a run (src/exec/),
 * submits it, and (unless --no-wait) waits, merges and shows the reports
 * exactly as a local run would: the same table, report files, results
 * database and exit code. `modelbench jobs collect` finishes a run the same
 * way (mb__cli_exec_finish). */
#include "cli/exec_cli.h"
#include "conversions/conversion.h"
#include "core/cache_dir.h"
#include "db/results_db.h"
#include "exec/exec.h"
#include "report/report_load.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

/* Seconds between two looks at the executor. */
#define POLL_SECONDS 1.0

const char mb__cli_exec_help[] =
    "Other machines (docs/executors.md):\n"
    "      --executor slurm       run on a Slurm cluster: one job array, one\n"
    "                             task per model, the same modelbench on each\n"
    "                             node; results merged here (the cache folder\n"
    "                             must be on storage the nodes share)\n"
    "      --executor ssh:H1,H2   run on these hosts over OpenSSH (models\n"
    "                             spread over them; each host's modelbench\n"
    "                             must be this version)\n"
    "      --split conversions    one task per model x conversion\n"
    "      --partition P, --time-limit T, --mem M, --cpus-per-task N,\n"
    "      --account A            passed to sbatch as given\n"
    "      --sbatch-arg ARG       any other sbatch option (repeatable)\n"
    "      --retries N            resubmit a task that failed, timed out,\n"
    "                             was cancelled or lost its node, N times\n"
    "      --no-wait              print the run id and return; follow it\n"
    "                             with 'modelbench jobs status|collect RUN'\n"
    "      --run-dir DIR          where run folders go (default: runs/ in\n"
    "                             the cache folder)\n"
    "      --ssh-config FILE      ssh and scp read FILE (ssh -F)\n"
    "      --remote-modelbench CMD  the hosts' modelbench, words split at\n"
    "                             spaces (default modelbench on their PATH;\n"
    "                             'python3 -m modelbench' for PyTorch "
    "models)\n";

/* ---- options ---- */

static int parse_count(const char *cmd, const char *opt, const char *arg,
                       int *out) {
  int64_t v;
  if (!mb__cli_parse_i64(arg, 0, 100, &v))
    return mb__cli_usage_error(cmd, "%s '%s': expected an integer in 0..100",
                               opt, arg);
  *out = (int)v;
  return MB_EXIT_OK;
}

int mb__cli_exec_option(mb_cli_exec *x, const char *cmd, int which,
                        const char *arg) {
  const char **slot = NULL;
  switch (which) {
  case MB_CLI_EXEC_EXECUTOR:
    slot = &x->executor;
    break;
  case MB_CLI_EXEC_SPLIT:
    if (strcmp(arg, "conversions") != 0 && strcmp(arg, "models") != 0)
      return mb__cli_usage_error(
          cmd, "--split '%s': expected conversions (or models)", arg);
    x->split = strcmp(arg, "conversions") == 0;
    return MB_EXIT_OK;
  case MB_CLI_EXEC_PARTITION:
    slot = &x->partition;
    break;
  case MB_CLI_EXEC_TIME_LIMIT:
    slot = &x->time_limit;
    break;
  case MB_CLI_EXEC_MEM:
    slot = &x->mem;
    break;
  case MB_CLI_EXEC_CPUS_PER_TASK:
    slot = &x->cpus_per_task;
    break;
  case MB_CLI_EXEC_ACCOUNT:
    slot = &x->account;
    break;
  case MB_CLI_EXEC_SBATCH_ARG: {
    const char **grown =
        realloc(x->sbatch_args, sizeof *grown * (size_t)(x->n_sbatch_args + 1));
    if (!grown) {
      mb__cli_error(NULL, "out of memory");
      return MB_EXIT_FAILURE;
    }
    x->sbatch_args = grown;
    x->sbatch_args[x->n_sbatch_args++] = arg;
    return MB_EXIT_OK;
  }
  case MB_CLI_EXEC_RETRIES:
    return parse_count(cmd, "--retries", arg, &x->retries);
  case MB_CLI_EXEC_NO_WAIT:
    x->no_wait = true;
    return MB_EXIT_OK;
  case MB_CLI_EXEC_RUN_DIR:
    slot = &x->run_dir;
    break;
  case MB_CLI_EXEC_SSH_CONFIG:
    slot = &x->ssh_config;
    break;
  case MB_CLI_EXEC_REMOTE_MODELBENCH:
    slot = &x->remote_modelbench;
    break;
  default:
    return MB_EXIT_USAGE;
  }
  if (!arg[0])
    return mb__cli_usage_error(cmd, "an empty value for an executor option");
  *slot = arg;
  return MB_EXIT_OK;
}

int mb__cli_exec_keep(mb_cli_exec *x, const char *name, const char *value,
                      mb_cli_exec_arg_kind kind) {
  if (kind == MB_CLI_EXEC_ARG_DROP)
    return MB_EXIT_OK;
  struct mb_cli_exec_given *grown =
      realloc(x->given, sizeof *grown * (size_t)(x->n_given + 1));
  char *copy = value ? mb__strdup(value) : NULL;
  if (grown)
    x->given = grown;
  if (!grown || (value && !copy)) {
    free(copy);
    mb__cli_error(NULL, "out of memory");
    return MB_EXIT_FAILURE;
  }
  x->given[x->n_given++] = (struct mb_cli_exec_given){name, copy, kind};
  return MB_EXIT_OK;
}

int mb__cli_exec_check(const mb_cli_exec *x, const char *cmd) {
  mb_exec_run probe;
  mb_error err;
  if (!x->executor) {
    const char *given = x->split           ? "--split"
                        : x->no_wait       ? "--no-wait"
                        : x->retries       ? "--retries"
                        : x->partition     ? "--partition"
                        : x->time_limit    ? "--time-limit"
                        : x->mem           ? "--mem"
                        : x->n_sbatch_args ? "--sbatch-arg"
                                           : NULL;
    return given ? mb__cli_usage_error(cmd, "%s needs --executor", given)
                 : MB_EXIT_OK;
  }
  memset(&probe, 0, sizeof probe);
  mb_status status = mb__exec_parse_spec(&probe, x->executor, &err);
  bool detached = !status && probe.ex->detached;
  bool slurm = !status && strcmp(probe.ex->name, "slurm") == 0;
  mb__exec_run_free(&probe);
  if (status)
    return mb__cli_usage_error(cmd, "%s", err.message);
  if (x->no_wait && !detached)
    return mb__cli_usage_error(cmd, "--no-wait needs --executor slurm (ssh "
                                    "tasks end with the submitting process)");
  if (!slurm && (x->partition || x->time_limit || x->mem || x->cpus_per_task ||
                 x->account || x->n_sbatch_args))
    return mb__cli_usage_error(cmd, "--partition, --time-limit, --mem, "
                                    "--cpus-per-task, --account and "
                                    "--sbatch-arg are Slurm's: give them with "
                                    "--executor slurm");
  return MB_EXIT_OK;
}

void mb__cli_exec_free(mb_cli_exec *x) {
  free(x->sbatch_args);
  for (int i = 0; i < x->n_given; i++)
    free(x->given[i].value);
  free(x->given);
}

/* ---- building the run ---- */

static char *dup_or_null(const char *s) {
  return s ? mb__strdup(s) : NULL;
}

/* An absolute form of a local path (realpath when it exists). */
static char *absolute(const char *path) {
  char buf[PATH_MAX], cwd[PATH_MAX];
  if (!path)
    return NULL;
  if (realpath(path, buf))
    return mb__strdup(buf);
  if (path[0] == '/' || !getcwd(cwd, sizeof cwd))
    return mb__strdup(path);
  char *joined = malloc(strlen(cwd) + strlen(path) + 2);
  if (joined)
    sprintf(joined, "%s/%s", cwd, path);
  return joined;
}

/* "A,B,C": the names of a model's planned conversions. */
static char *conversion_names(const int *list, int from, int to) {
  size_t size = 1;
  for (int i = from; i < to; i++)
    size += strlen(mb__conversion_def(list[i])->name) + 1;
  char *names = malloc(size), *o = names;
  if (!names)
    return NULL;
  *o = '\0';
  for (int i = from; i < to; i++)
    o += sprintf(o, "%s%s", i > from ? "," : "",
                 mb__conversion_def(list[i])->name);
  return names;
}

/* How a task starts modelbench: $MODELBENCH_TASK_COMMAND (words split at
 * spaces; the Python front sets "python3 -m modelbench" so that tasks
 * get its host runtimes), else this very executable. */
static mb_status task_command(mb_exec_run *run, mb_error *err) {
  const char *env = getenv("MODELBENCH_TASK_COMMAND");
  char self[PATH_MAX];
  if (!env || !env[0]) {
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
      return mb__error(err, MB_STATUS_IO,
                       "cannot find this modelbench's path (/proc/self/exe)");
    self[n] = '\0';
    env = self;
  }
  for (const char *p = env; *p;) {
    p += strspn(p, " ");
    size_t n = strcspn(p, " ");
    if (!n)
      break;
    char **grown = realloc(run->task_command,
                           sizeof *grown * (size_t)(run->n_task_command + 1));
    if (!grown || !(grown[run->n_task_command] = strndup(p, n))) {
      if (grown)
        run->task_command = grown;
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    run->task_command = grown;
    run->n_task_command++;
    p += n;
  }
  return MB_STATUS_OK;
}

static mb_status add_task(mb_exec_run *run, const char *model, char *names,
                          const char *baseline, bool split, mb_error *err) {
  mb_exec_task *grown =
      realloc(run->tasks, sizeof *grown * (size_t)(run->n_tasks + 1));
  if (!grown) {
    free(names);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  run->tasks = grown;
  mb_exec_task *t = &run->tasks[run->n_tasks++];
  memset(t, 0, sizeof *t);
  t->model = absolute(model);
  t->conversions = names;
  t->baseline = dup_or_null(baseline);
  t->split = split;
  if (!t->model || !names || (baseline && !t->baseline))
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  return MB_STATUS_OK;
}

/* Options that a split task must not get: its own -c replaces them. */
static bool split_drops(const char *name) {
  static const char *const dropped[] = {"conversions", "tier", "baseline"};
  for (size_t i = 0; i < MB_ARRAY_COUNT(dropped); i++)
    if (strcmp(name, dropped[i]) == 0)
      return true;
  return false;
}

static mb_status build_run(const mb_cli_exec *x,
                           const mb_cli_report_output *output,
                           const mb_cli_exec_model *models, int n_models,
                           mb_exec_run *run, mb_error *err) {
  mb_status status;
  char cache[PATH_MAX], cwd[PATH_MAX];
  if ((status = mb__exec_parse_spec(run, x->executor, err)) ||
      (status = task_command(run, err)) ||
      (status = mb__cache_dir(output->cache_dir, cache, sizeof cache, err)))
    return status;
  run->workdir = getcwd(cwd, sizeof cwd) ? mb__strdup(cwd) : NULL;
  run->ssh_config = absolute(x->ssh_config);
  run->remote_modelbench = dup_or_null(x->remote_modelbench);
  run->retries = x->retries;
  for (int m = 0; m < n_models && !status; m++) {
    const mb_cli_exec_model *model = &models[m];
    const char *baseline =
        model->n_conversions > 0
            ? mb__conversion_def(model->conversions[MB_MAX(model->baseline, 0)])
                  ->name
            : NULL;
    if (!x->split || model->n_conversions == 0)
      status = add_task(
          run, model->path,
          conversion_names(model->conversions, 0, model->n_conversions),
          baseline, false, err);
    for (int c = 0; x->split && c < model->n_conversions && !status; c++)
      status = add_task(run, model->path,
                        conversion_names(model->conversions, c, c + 1),
                        baseline, true, err);
  }
  if (status)
    return status;
  if (x->n_given > 0 &&
      !(run->args = calloc((size_t)x->n_given, sizeof *run->args)))
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < x->n_given; i++) {
    const struct mb_cli_exec_given *g = &x->given[i];
    if (x->split && split_drops(g->name))
      continue;
    mb_exec_arg *a = &run->args[run->n_args++];
    a->name = mb__strdup(g->name);
    a->path = g->kind == MB_CLI_EXEC_ARG_PATH;
    a->value = a->path ? absolute(g->value) : dup_or_null(g->value);
    if (!a->name || (g->value && !a->value))
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  mb_exec_slurm *s = &run->slurm;
  s->partition = dup_or_null(x->partition);
  s->time_limit = dup_or_null(x->time_limit);
  s->mem = dup_or_null(x->mem);
  s->cpus_per_task = dup_or_null(x->cpus_per_task);
  s->account = dup_or_null(x->account);
  if (x->n_sbatch_args > 0 &&
      !(s->sbatch_args = calloc((size_t)x->n_sbatch_args, sizeof(char *))))
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < x->n_sbatch_args; i++)
    if ((s->sbatch_args[s->n_sbatch_args++] = mb__strdup(x->sbatch_args[i])) ==
        NULL)
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  mb_exec_output *o = &run->output;
  o->json = absolute(output->json_path);
  o->csv = absolute(output->csv_path);
  o->markdown = absolute(output->markdown_path);
  o->html = absolute(output->html_path);
  o->cache_dir = absolute(cache);
  o->no_record = output->no_record;
  o->predicted_ms = output->predicted_ms;
  o->traceback = output->traceback;
  o->explicit_conversions = output->explicit_conversions;
  if (output->n_labels > 0 &&
      !(o->labels = calloc((size_t)output->n_labels, sizeof(char *))))
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < output->n_labels; i++)
    if (!(o->labels[o->n_labels++] = mb__strdup(output->labels[i])))
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  return MB_STATUS_OK;
}

/* ---- finishing a run ---- */

/* The run's labels plus executor=NAME and run=ID (unless the user gave
 * those keys). *out: malloc'd array of borrowed and malloc'd strings; the
 * added ones are in *owned (2 entries). */
static int run_labels(const mb_exec_run *run, const char ***out,
                      char *owned[2]) {
  int n = run->output.n_labels;
  const char **labels = calloc((size_t)n + 2, sizeof *labels);
  if (!labels)
    return -1;
  bool has_executor = false, has_run = false;
  for (int i = 0; i < n; i++) {
    labels[i] = run->output.labels[i];
    has_executor |= strncmp(labels[i], "executor=", 9) == 0;
    has_run |= strncmp(labels[i], "run=", 4) == 0;
  }
  owned[0] = owned[1] = NULL;
  if (!has_executor && (owned[0] = malloc(strlen(run->ex->name) + 16))) {
    sprintf(owned[0], "executor=%s", run->ex->name);
    labels[n++] = owned[0];
  }
  if (!has_run && (owned[1] = malloc(strlen(run->id) + 8))) {
    sprintf(owned[1], "run=%s", run->id);
    labels[n++] = owned[1];
  }
  *out = labels;
  return n;
}

int mb__cli_exec_finish(mb_exec_run *run) {
  mb_error err;
  if (!mb__exec_finished(run) && mb__exec_wait(run, POLL_SECONDS, &err)) {
    mb__cli_fail(NULL, &err);
    return MB_EXIT_FAILURE;
  }
  mb_bench_report **reports = NULL;
  int n = 0, failed_models = 0;
  if (mb__exec_merge(run, &reports, &n, &failed_models, &err))
    return mb__cli_fail(run->dir, &err);
  const char **labels = NULL;
  char *owned[2] = {NULL, NULL};
  int n_labels = run_labels(run, &labels, owned);
  if (n_labels < 0) {
    mb__reports_free(reports, n);
    mb__cli_error(NULL, "out of memory");
    return MB_EXIT_FAILURE;
  }
  bool record = !run->output.no_record && !run->collected;
  if (!run->output.no_record && run->collected)
    fprintf(stderr,
            "modelbench: run %s was collected before: not recorded "
            "in the results database again\n",
            run->id);
  mb_cli_report_output output = {
      .json_path = run->output.json,
      .csv_path = run->output.csv,
      .markdown_path = run->output.markdown,
      .html_path = run->output.html,
      .cache_dir = run->output.cache_dir,
      .no_record = !record,
      .labels = labels,
      .n_labels = n_labels,
      .predicted_ms = run->output.predicted_ms,
      .traceback = run->output.traceback,
      .log_level = (int)mb__log_get_level(),
      .explicit_conversions = run->output.explicit_conversions,
  };
  const char *no_color = getenv("NO_COLOR");
  bool color = !(no_color && no_color[0]);
  int rc = failed_models > 0 ? MB_EXIT_FAILURE : MB_EXIT_OK;
  for (int i = 0; i < n; i++) {
    if (n > 1)
      printf("%s[%d/%d] %s\n", i ? "\n" : "", i + 1, n, reports[i]->model_path);
    fflush(stdout);
    int model_rc = mb__cli_report_show(&output, reports[i], color);
    rc = MB_MAX(rc, model_rc);
  }
  if (mb__cli_reports_write(&output, reports, n) != MB_EXIT_OK)
    rc = MB_MAX(rc, MB_EXIT_FAILURE);
  if (n + failed_models > 1)
    printf("\n%d model%s benchmarked, %d failed to load or run\n", n,
           n == 1 ? "" : "s", failed_models);
  if (record) {
    int lock = mb__exec_run_lock(run, &err);
    run->collected = true;
    if (lock < 0 || mb__exec_run_save(run, &err))
      mb__cli_error(NULL, "warning: %s", err.message);
    mb__exec_run_unlock(lock);
  }
  free(owned[0]);
  free(owned[1]);
  free(labels);
  mb__reports_free(reports, n);
  return rc;
}

int mb__cli_exec_bench(const mb_cli_exec *x, const mb_cli_report_output *output,
                       const mb_cli_exec_model *models, int n_models) {
  mb_exec_run run;
  mb_error err;
  char parent[PATH_MAX];
  int rc = MB_EXIT_OK;
  int *all = NULL;
  memset(&run, 0, sizeof run);
  if (build_run(x, output, models, n_models, &run, &err) ||
      (run.ex->check && run.ex->check(&run, &err))) {
    rc = err.status == MB_STATUS_INVALID_ARGUMENT ? MB_EXIT_USAGE
                                                  : MB_EXIT_FAILURE;
    mb__cli_fail(NULL, &err);
    goto done;
  }
  if (x->run_dir)
    snprintf(parent, sizeof parent, "%s", x->run_dir);
  else
    snprintf(parent, sizeof parent, "%s/runs", run.output.cache_dir);
  if (!(all = calloc((size_t)run.n_tasks, sizeof *all))) {
    rc = MB_EXIT_FAILURE;
    mb__cli_error(NULL, "out of memory");
    goto done;
  }
  for (int i = 0; i < run.n_tasks; i++)
    all[i] = i;
  if (mb__exec_run_create(&run, parent, &err)) {
    rc = mb__cli_fail(NULL, &err);
    goto done;
  }
  int lock = mb__exec_run_lock(&run, &err);
  mb_status status =
      lock < 0 ? err.status : run.ex->submit(&run, all, run.n_tasks, &err);
  if (lock >= 0) {
    mb_error save_err;
    if (mb__exec_run_save(&run, &save_err) && !status)
      err = save_err, status = save_err.status;
  }
  mb__exec_run_unlock(lock);
  if (status) {
    rc = mb__cli_fail(NULL, &err);
    goto done;
  }
  fprintf(stderr, "modelbench: run %s: %d task%s on %s%s%s; folder %s\n",
          run.id, run.n_tasks, run.n_tasks == 1 ? "" : "s", run.executor,
          run.n_jobs > 0 ? ", job " : "",
          run.n_jobs > 0 ? run.jobs[run.n_jobs - 1] : "", run.dir);
  if (x->no_wait) {
    printf("%s\n", run.id);
    fprintf(stderr,
            "modelbench: follow it with 'modelbench jobs status %s', merge "
            "it with 'modelbench jobs collect %s'\n",
            run.id, run.id);
    goto done;
  }
  rc = mb__cli_exec_finish(&run);

done:
  free(all);
  mb__exec_run_free(&run);
  return rc;
}
