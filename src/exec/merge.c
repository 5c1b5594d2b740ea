/* Merging the task reports of a run into one report per model.
 *
 * Each task left tasks/N/report.json (bench's own JSON, read back with
 * src/report/report_load.c), or nothing when it failed before writing one.
 * A model split over several tasks (--split conversions) becomes one
 * report with its results in the planned order, its baseline's speed-ups
 * recomputed; a planned conversion without a result (its task timed out,
 * was cancelled, its node or host died) is recorded as a failed result
 * carrying the executor's state and reason, so that nothing is silently
 * missing and every finished result is kept. Each result keeps the machine
 * it ran on. */
#include "exec/exec.h"

#include "bench/bench.h"
#include "conversions/conversion.h"
#include "report/report_load.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* The newest *.out / *.log file of a task folder (the executor's capture of
 * the task's output), into buf; "" when none. */
static void task_output(const mb_exec_run *run, int task, char *buf,
                        size_t size) {
  char dir[PATH_MAX], path[PATH_MAX + 256];
  mb__exec_task_file(run, task, "", dir, sizeof dir);
  buf[0] = '\0';
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *e;
  time_t newest = 0;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n < 5 || (strcmp(e->d_name + n - 4, ".out") &&
                  strcmp(e->d_name + n - 4, ".log")))
      continue;
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_mtime >= newest &&
        strlen(path) < size) {
      newest = st.st_mtime;
      memcpy(buf, path, strlen(path) + 1);
    }
  }
  closedir(d);
}

/* Prints the last lines of a task's output: why its model left no report. */
static void print_task_tail(const mb_exec_run *run, int task) {
  char path[PATH_MAX];
  task_output(run, task, path, sizeof path);
  FILE *f = path[0] ? fopen(path, "r") : NULL;
  if (!f)
    return;
  char lines[8][512];
  int n = 0;
  while (fgets(lines[n % 8], sizeof lines[0], f))
    n++;
  fclose(f);
  fprintf(stderr, "--- task %d: %s (last lines) ---\n", task, path);
  for (int i = n > 8 ? n - 8 : 0; i < n; i++)
    fputs(lines[i % 8], stderr);
}

/* A result for a planned conversion that has none. */
static void placeholder(const mb_exec_run *run, const mb_exec_task *t, int task,
                        const char *name, mb_bench_result *r) {
  memset(r, 0, sizeof *r);
  int index = -1;
  mb_error ignored;
  static const char unknown[] = "unknown";
  if (mb_conversion_find(name, &index, &ignored) == MB_STATUS_OK) {
    const mb_conversion_def *def = mb__conversion_def(index);
    r->conversion = def->name;
    r->conversion_id = def->id;
    snprintf(r->runtime, sizeof r->runtime, "%s", def->runtime);
    snprintf(r->device, sizeof r->device, "%s", mb_device_name(def->device));
  } else {
    r->conversion = unknown;
  }
  r->conversion_index = index;
  bool timed_out = strcmp(t->slurm_state, "TIMEOUT") == 0 ||
                   strcmp(t->slurm_state, "DEADLINE") == 0;
  r->status = timed_out ? MB_BENCH_TIMEOUT : MB_BENCH_ERROR;
  if (t->state == MB_TASK_FAILED)
    snprintf(r->error, sizeof r->error, "%s: task %d: %s", run->ex->name, task,
             t->reason);
  else
    snprintf(r->error, sizeof r->error,
             "%s: task %d ended without a result for it (see tasks/%d in "
             "run %s)",
             run->ex->name, task, task, run->id);
  r->max_abs_err = -1.0;
  r->cache_hit = -1;
  r->recompiles = -1;
  r->build_ms = -1.0;
  snprintf(r->machine.host, sizeof r->machine.host, "%s", t->node);
}

/* Moves the result named `name` out of report (leaving an empty slot
 * behind); false when it has none. */
static bool take_result(mb_bench_report *report, const char *name,
                        mb_bench_result *out) {
  for (int i = 0; report && i < report->n_results; i++) {
    mb_bench_result *r = &report->results[i];
    if (r->conversion && strcmp(r->conversion, name) == 0) {
      *out = *r;
      memset(r, 0, sizeof *r);
      r->conversion = "";
      return true;
    }
  }
  return false;
}

static mb_status append(mb_bench_result **results, int *n, int *cap,
                        const mb_bench_result *r, mb_error *err) {
  if (*n == *cap) {
    int grown_cap = *cap ? *cap * 2 : 8;
    mb_bench_result *grown =
        realloc(*results, sizeof *grown * (size_t)grown_cap);
    if (!grown)
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    *results = grown;
    *cap = grown_cap;
  }
  (*results)[(*n)++] = *r;
  return MB_STATUS_OK;
}

/* Speed-ups against the model's baseline, as the engine computes them. */
static void set_speedups(mb_bench_report *report, const char *baseline) {
  report->baseline_result = report->n_results > 0 ? 0 : -1;
  for (int i = 0; baseline && i < report->n_results; i++)
    if (strcmp(report->results[i].conversion, baseline) == 0)
      report->baseline_result = i;
  const mb_bench_result *base = report->baseline_result >= 0
                                    ? &report->results[report->baseline_result]
                                    : NULL;
  mb__set_speedups(base, report->results, report->n_results);
  report->config.baseline = report->baseline_result;
}

/* The merged report of one model, from tasks[0..n). */
static mb_status merge_model(const mb_exec_run *run, const int *tasks, int n,
                             mb_bench_report **out, mb_error *err) {
  mb_status status = MB_STATUS_OK;
  mb_bench_report **loaded = calloc((size_t)n, sizeof *loaded);
  mb_bench_result *results = NULL;
  int n_results = 0, cap = 0;
  mb_bench_report *merged = NULL;
  if (!loaded)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int k = 0; k < n; k++) {
    char path[PATH_MAX];
    mb_bench_report **reports = NULL;
    int count = 0;
    mb_error load_err;
    mb__exec_task_file(run, tasks[k], "report.json", path, sizeof path);
    if (access(path, R_OK) != 0)
      continue;
    if (mb__reports_load_json(path, &reports, &count, &load_err)) {
      fprintf(stderr, "modelbench: task %d: %s\n", tasks[k], load_err.message);
      continue;
    }
    if (count > 0) {
      loaded[k] = reports[0];
      reports[0] = NULL;
    }
    mb__reports_free(reports, count);
  }
  /* The first task with a report gives the model, inputs and settings. */
  int base = -1;
  for (int k = 0; k < n && base < 0; k++)
    if (loaded[k])
      base = k;
  bool any_failed = false;
  for (int k = 0; k < n; k++)
    any_failed |= run->tasks[tasks[k]].state == MB_TASK_FAILED;
  if (base < 0 && !any_failed) {
    /* Every task ran to its end and none left a report: the model itself
     * failed (it does not load, a dynamic input without --shape). */
    for (int k = 0; k < n; k++)
      print_task_tail(run, tasks[k]);
    *out = NULL;
    goto done;
  }
  if (base >= 0) {
    merged = loaded[base];
    loaded[base] = NULL;
    /* A host ran it from a copy: the report names the model as given. */
    snprintf(merged->model_path, sizeof merged->model_path, "%s",
             run->tasks[tasks[0]].model);
  } else {
    mb_arena *arena;
    if (!(merged = mb__bench_report_create(&arena))) {
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
    mb_bench_config_init(&merged->config);
    snprintf(merged->tool_version, sizeof merged->tool_version, "%s",
             MB_VERSION_STRING);
    snprintf(merged->model_path, sizeof merged->model_path, "%s",
             run->tasks[tasks[0]].model);
    snprintf(merged->machine.host, sizeof merged->machine.host, "%s",
             run->tasks[tasks[0]].node);
  }
  /* Results in the planned order, each from its own task's report. */
  for (int k = 0; k < n && !status; k++) {
    const mb_exec_task *t = &run->tasks[tasks[k]];
    mb_bench_report *source = k == base ? merged : loaded[k];
    for (const char *c = t->conversions ? t->conversions : ""; *c && !status;) {
      size_t len = strcspn(c, ",");
      char name[128];
      snprintf(name, sizeof name, "%.*s", (int)len, c);
      c += len + (c[len] == ',');
      mb_bench_result r;
      if (!take_result(source, name, &r))
        placeholder(run, t, tasks[k], name, &r);
      status = append(&results, &n_results, &cap, &r, err);
    }
    /* A task may have run conversions we did not plan (a node with
     * another set available): keep them too. */
    for (int i = 0; source && i < source->n_results && !status; i++)
      if (source->results[i].conversion && source->results[i].conversion[0]) {
        mb_bench_result r;
        if (take_result(source, source->results[i].conversion, &r))
          status = append(&results, &n_results, &cap, &r, err);
      }
  }
  if (status)
    goto done;
  /* The old slots were all moved out (or never owned anything). */
  for (int i = 0; i < merged->n_results; i++)
    mb__result_clear(&merged->results[i]);
  free(merged->results);
  merged->results = results;
  merged->n_results = n_results;
  results = NULL;
  int *list = mb__arena_alloc(mb__bench_report_arena(merged),
                              sizeof *list * (size_t)(n_results + 1));
  if (!list) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < n_results; i++)
    list[i] = merged->results[i].conversion_index;
  merged->config.conversions = list;
  merged->config.n_conversions = n_results;
  merged->config.conversion_timeouts = NULL;
  set_speedups(merged, run->tasks[tasks[0]].baseline);
  *out = merged;
  merged = NULL;

done:
  for (int i = 0; results && i < n_results; i++)
    mb__result_clear(&results[i]);
  free(results);
  mb_bench_report_free(merged);
  for (int k = 0; k < n; k++)
    mb_bench_report_free(loaded[k]);
  free(loaded);
  return status;
}

mb_status mb__exec_merge(const mb_exec_run *run, mb_bench_report ***reports_out,
                         int *n_out, int *n_failed_models_out, mb_error *err) {
  mb_status status = MB_STATUS_OK;
  mb_bench_report **reports = calloc((size_t)run->n_tasks + 1, sizeof *reports);
  int *tasks = calloc((size_t)run->n_tasks + 1, sizeof *tasks);
  bool *seen = calloc((size_t)run->n_tasks + 1, sizeof *seen);
  int n = 0, failed = 0;
  if (!reports || !tasks || !seen) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < run->n_tasks && !status; i++) {
    if (seen[i])
      continue;
    int n_tasks = 0;
    for (int k = i; k < run->n_tasks; k++)
      if (!seen[k] && strcmp(run->tasks[k].model, run->tasks[i].model) == 0) {
        seen[k] = true;
        tasks[n_tasks++] = k;
      }
    mb_bench_report *report = NULL;
    status = merge_model(run, tasks, n_tasks, &report, err);
    if (!status && report)
      reports[n++] = report;
    else if (!status) {
      fprintf(stderr,
              "modelbench: %s: no report (the model failed in its "
              "task; its output is above)\n",
              run->tasks[i].model);
      failed++;
    }
  }
  if (status)
    goto done;
  *reports_out = reports;
  *n_out = n;
  *n_failed_models_out = failed;
  reports = NULL;
done:
  mb__reports_free(reports, n);
  free(tasks);
  free(seen);
  return status;
}
