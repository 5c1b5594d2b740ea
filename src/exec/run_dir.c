/* The run folder of a run spread over machines, and its run.json.
 *
 *   <run dir>/run.json          what to run, where each task stands
 *   <run dir>/lock              flock: one poller/resubmitter at a time
 *   <run dir>/tasks/N/          one per task: report.json (the task's
 *                               bench --json), exit (its exit code), logs/,
 *                               the executor's own output (slurm-JOB.out,
 *                               ssh.log)
 *
 * run.json is rewritten atomically (temporary file + rename) after each
 * change, so `modelbench jobs status RUN` in another shell always reads a
 * whole file. Folders are made group-readable: on a cluster the tasks may
 * run under the same user on other nodes, never as another user. */
#include "exec/exec.h"

#include "core/cache_dir.h"
#include "core/files.h"
#include "core/json_parse.h"
#include "core/json_write.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RUN_FILE "run.json"
#define RUN_SCHEMA 1

static const char *const task_state_names[] = {
#define MB_X(name, str) str,
    MB_TASK_STATE_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(task_state_names) == MB_TASK_STATE_COUNT,
               "one name per task state");

const char *mb__task_state_name(mb_task_state state) {
  return (unsigned)state < MB_TASK_STATE_COUNT ? task_state_names[state]
                                               : "invalid";
}

/* The executors, by the name a spec starts with. */
static const mb_executor *const executors[] = {
    &mb__executor_slurm,
    &mb__executor_ssh,
};

static void free_strings(char **s, int n) {
  for (int i = 0; s && i < n; i++)
    free(s[i]);
  free(s);
}

mb_status mb__exec_parse_spec(mb_exec_run *run, const char *spec,
                              mb_error *err) {
  const char *colon = strchr(spec, ':');
  size_t name_len = colon ? (size_t)(colon - spec) : strlen(spec);
  for (size_t i = 0; i < MB_ARRAY_COUNT(executors); i++) {
    const mb_executor *ex = executors[i];
    if (strlen(ex->name) != name_len || strncmp(spec, ex->name, name_len))
      continue;
    bool wants_hosts = strcmp(ex->name, "ssh") == 0;
    if (wants_hosts && (!colon || !colon[1]))
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "--executor ssh needs its hosts: ssh:HOST[,HOST...]");
    if (!wants_hosts && colon)
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "--executor %s takes no ':' part (got '%s')", ex->name,
                       spec);
    snprintf(run->executor, sizeof run->executor, "%s", spec);
    run->ex = ex;
    for (const char *h = colon ? colon + 1 : NULL; h && *h;) {
      size_t n = strcspn(h, ",");
      if (n == 0)
        return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                         "--executor '%s': an empty host name", spec);
      char **grown =
          realloc(run->hosts, sizeof *grown * (size_t)(run->n_hosts + 1));
      if (!grown || !(grown[run->n_hosts] = strndup(h, n))) {
        if (grown)
          run->hosts = grown;
        return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
      }
      run->hosts = grown;
      run->n_hosts++;
      mb_status status = mb__exec_ssh_host_check(grown[run->n_hosts - 1], err);
      if (status)
        return status;
      h += n + (h[n] == ',');
    }
    return MB_STATUS_OK;
  }
  return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                   "--executor '%s': expected slurm or ssh:HOST[,HOST...]",
                   spec);
}

const char *mb__exec_task_file(const mb_exec_run *run, int task,
                               const char *name, char *buf, size_t size) {
  snprintf(buf, size, "%s/tasks/%d%s%s", run->dir, task, name[0] ? "/" : "",
           name);
  return buf;
}

/* ---- writing run.json ---- */

static void kv_strings(mb_json *j, const char *key, char *const *s, int n) {
  mb__json_key(j, key);
  mb__json_array_begin(j);
  for (int i = 0; i < n; i++)
    mb__json_string(j, s[i]);
  mb__json_array_end(j);
}

static void write_run(mb_json *j, const mb_exec_run *run) {
  mb__json_object_begin(j);
  mb__json_kv_int(j, "schema", RUN_SCHEMA);
  mb__json_kv_string(j, "id", run->id);
  mb__json_kv_string(j, "version", MB_VERSION_STRING);
  mb__json_kv_string(j, "executor", run->executor);
  mb__json_kv_string(j, "ssh_config", run->ssh_config);
  mb__json_kv_string(j, "remote_modelbench", run->remote_modelbench);
  kv_strings(j, "task_command", run->task_command, run->n_task_command);
  mb__json_kv_string(j, "workdir", run->workdir);
  mb__json_kv_int(j, "retries", run->retries);
  mb__json_kv_bool(j, "collected", run->collected);
  kv_strings(j, "jobs", run->jobs, run->n_jobs);

  mb__json_key(j, "args");
  mb__json_array_begin(j);
  for (int i = 0; i < run->n_args; i++) {
    mb__json_object_begin(j);
    mb__json_kv_string(j, "name", run->args[i].name);
    mb__json_kv_string(j, "value", run->args[i].value);
    mb__json_kv_bool(j, "path", run->args[i].path);
    mb__json_object_end(j);
  }
  mb__json_array_end(j);

  const mb_exec_slurm *s = &run->slurm;
  mb__json_key(j, "slurm");
  mb__json_object_begin(j);
  mb__json_kv_string(j, "partition", s->partition);
  mb__json_kv_string(j, "time_limit", s->time_limit);
  mb__json_kv_string(j, "mem", s->mem);
  mb__json_kv_string(j, "cpus_per_task", s->cpus_per_task);
  mb__json_kv_string(j, "account", s->account);
  kv_strings(j, "sbatch_args", s->sbatch_args, s->n_sbatch_args);
  mb__json_object_end(j);

  const mb_exec_output *o = &run->output;
  mb__json_key(j, "output");
  mb__json_object_begin(j);
  mb__json_kv_string(j, "json", o->json);
  mb__json_kv_string(j, "csv", o->csv);
  mb__json_kv_string(j, "markdown", o->markdown);
  mb__json_kv_string(j, "html", o->html);
  mb__json_kv_string(j, "cache_dir", o->cache_dir);
  mb__json_kv_bool(j, "no_record", o->no_record);
  kv_strings(j, "labels", o->labels, o->n_labels);
  mb__json_kv_double(j, "predicted_ms", o->predicted_ms);
  mb__json_kv_bool(j, "traceback", o->traceback);
  mb__json_kv_bool(j, "explicit_conversions", o->explicit_conversions);
  mb__json_object_end(j);

  mb__json_key(j, "tasks");
  mb__json_array_begin(j);
  for (int i = 0; i < run->n_tasks; i++) {
    const mb_exec_task *t = &run->tasks[i];
    mb__json_object_begin(j);
    mb__json_kv_string(j, "model", t->model);
    mb__json_kv_string(j, "conversions", t->conversions);
    mb__json_kv_string(j, "baseline", t->baseline);
    mb__json_kv_bool(j, "split", t->split);
    mb__json_kv_string(j, "state", mb__task_state_name(t->state));
    mb__json_kv_string(j, "where", t->where);
    mb__json_kv_string(j, "node", t->node);
    mb__json_kv_string(j, "slurm_state", t->slurm_state);
    mb__json_kv_string(j, "reason", t->reason);
    mb__json_kv_int(j, "attempts", t->attempts);
    mb__json_object_end(j);
  }
  mb__json_array_end(j);
  mb__json_object_end(j);
}

mb_status mb__exec_run_save(const mb_exec_run *run, mb_error *err) {
  char path[PATH_MAX];
  mb_atomic_file af;
  snprintf(path, sizeof path, "%s/%s", run->dir, RUN_FILE);
  mb_status status = mb__atomic_file_open(
      &af, AT_FDCWD, path, mb__private_file_mode(), "run file", err);
  if (status)
    return status;
  mb_json j;
  mb__json_init(&j, af.f, true);
  write_run(&j, run);
  fputc('\n', af.f);
  return mb__atomic_file_commit(&af, false, err);
}

/* A run folder holds the run's commands, logs and reports: private to
 * the user unless the cache is shared (core/files.h). */
static mb_status make_dir(const char *path, mb_error *err) {
  if (mb__mkdir_private_at(AT_FDCWD, path) != 0 && errno != EEXIST)
    return mb__error(err, MB_STATUS_IO, "cannot create %s: %s", path,
                     strerror(errno));
  return MB_STATUS_OK;
}

mb_status mb__exec_run_create(mb_exec_run *run, const char *parent,
                              mb_error *err) {
  mb_status status;
  char path[PATH_MAX];
  /* <parent> may not exist yet (a fresh cache folder). */
  snprintf(path, sizeof path, "%s", parent);
  for (char *p = path + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      if ((status = make_dir(path, err)))
        return status;
      *p = '/';
    }
  if ((status = make_dir(path, err)))
    return status;
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  snprintf(run->id, sizeof run->id, "%s-%ld", stamp, (long)getpid());
  if (snprintf(run->dir, sizeof run->dir, "%s/%s", parent, run->id) >=
      (int)sizeof run->dir)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "run folder path too long: %s", parent);
  if (mb__mkdir_private_at(AT_FDCWD, run->dir) != 0)
    return mb__error(err, MB_STATUS_IO, "cannot create the run folder %s: %s",
                     run->dir, strerror(errno));
  snprintf(path, sizeof path, "%s/tasks", run->dir);
  if ((status = make_dir(path, err)))
    return status;
  for (int i = 0; i < run->n_tasks; i++)
    if ((status =
             make_dir(mb__exec_task_file(run, i, "", path, sizeof path), err)))
      return status;
  return mb__exec_run_save(run, err);
}

int mb__exec_run_lock(const mb_exec_run *run, mb_error *err) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/lock", run->dir);
  int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
                mb__private_file_mode());
  if (fd < 0) {
    mb__error(err, MB_STATUS_IO, "cannot open %s: %s", path, strerror(errno));
    return -1;
  }
  while (flock(fd, LOCK_EX) != 0)
    if (errno != EINTR) {
      mb__error(err, MB_STATUS_IO, "cannot lock %s: %s", path, strerror(errno));
      close(fd);
      return -1;
    }
  return fd;
}

void mb__exec_run_unlock(int fd) {
  if (fd >= 0)
    close(fd); /* releases the flock */
}

/* ---- reading run.json ---- */

typedef struct reader {
  const char *path;
  mb_error *err;
  mb_status status;
} reader;

/* A copy of string member `key` (NULL when missing or null). */
static char *dup_member(reader *r, const mb_json_value *obj, const char *key) {
  const mb_json_value *v = mb__json_find(obj, key);
  if (!v || v->type == MB_JSON_NULL || r->status)
    return NULL;
  if (v->type != MB_JSON_STRING) {
    r->status = mb__error(r->err, MB_STATUS_PARSE,
                          "%s:%d:%d: \"%s\": expected a string", r->path,
                          v->line, v->column, key);
    return NULL;
  }
  char *s = mb__strdup(v->string);
  if (!s)
    r->status = mb__error(r->err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  return s;
}

static void copy_member(reader *r, const mb_json_value *obj, const char *key,
                        char *buf, size_t size) {
  char *s = dup_member(r, obj, key);
  snprintf(buf, size, "%s", s ? s : "");
  free(s);
}

static bool bool_member(const mb_json_value *obj, const char *key) {
  const mb_json_value *v = mb__json_find(obj, key);
  return v && v->type == MB_JSON_BOOL && v->boolean;
}

static int64_t int_member(const mb_json_value *obj, const char *key) {
  const mb_json_value *v = mb__json_find(obj, key);
  return v && v->is_integer ? v->integer : 0;
}

static char **strings_member(reader *r, const mb_json_value *obj,
                             const char *key, int *n_out) {
  const mb_json_value *v = mb__json_find(obj, key);
  *n_out = 0;
  if (!v || v->type != MB_JSON_ARRAY || v->count == 0 || r->status)
    return NULL;
  char **s = calloc(v->count, sizeof *s);
  if (!s) {
    r->status = mb__error(r->err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  for (size_t i = 0; i < v->count; i++)
    if (v->items[i].type == MB_JSON_STRING &&
        (s[*n_out] = mb__strdup(v->items[i].string)))
      (*n_out)++;
  return s;
}

static void read_run(reader *r, const mb_json_value *root, mb_exec_run *run) {
  copy_member(r, root, "id", run->id, sizeof run->id);
  char *spec = dup_member(r, root, "executor");
  if (!r->status && spec)
    r->status = mb__exec_parse_spec(run, spec, r->err);
  else if (!r->status)
    r->status =
        mb__error(r->err, MB_STATUS_PARSE,
                  "%s: not a modelbench run (no \"executor\")", r->path);
  free(spec);
  run->ssh_config = dup_member(r, root, "ssh_config");
  run->remote_modelbench = dup_member(r, root, "remote_modelbench");
  run->task_command =
      strings_member(r, root, "task_command", &run->n_task_command);
  run->workdir = dup_member(r, root, "workdir");
  run->retries = (int)int_member(root, "retries");
  run->collected = bool_member(root, "collected");
  run->jobs = strings_member(r, root, "jobs", &run->n_jobs);

  const mb_json_value *args = mb__json_find(root, "args");
  if (args && args->type == MB_JSON_ARRAY && args->count > 0 && !r->status) {
    if (!(run->args = calloc(args->count, sizeof *run->args)))
      r->status = mb__error(r->err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; run->args && i < args->count; i++) {
      mb_exec_arg *a = &run->args[run->n_args++];
      a->name = dup_member(r, &args->items[i], "name");
      a->value = dup_member(r, &args->items[i], "value");
      a->path = bool_member(&args->items[i], "path");
    }
  }
  const mb_json_value *slurm = mb__json_find(root, "slurm");
  if (slurm && slurm->type == MB_JSON_OBJECT) {
    mb_exec_slurm *s = &run->slurm;
    s->partition = dup_member(r, slurm, "partition");
    s->time_limit = dup_member(r, slurm, "time_limit");
    s->mem = dup_member(r, slurm, "mem");
    s->cpus_per_task = dup_member(r, slurm, "cpus_per_task");
    s->account = dup_member(r, slurm, "account");
    s->sbatch_args = strings_member(r, slurm, "sbatch_args", &s->n_sbatch_args);
  }
  const mb_json_value *out = mb__json_find(root, "output");
  if (out && out->type == MB_JSON_OBJECT) {
    mb_exec_output *o = &run->output;
    o->json = dup_member(r, out, "json");
    o->csv = dup_member(r, out, "csv");
    o->markdown = dup_member(r, out, "markdown");
    o->html = dup_member(r, out, "html");
    o->cache_dir = dup_member(r, out, "cache_dir");
    o->no_record = bool_member(out, "no_record");
    o->labels = strings_member(r, out, "labels", &o->n_labels);
    const mb_json_value *p = mb__json_find(out, "predicted_ms");
    o->predicted_ms = p && p->type == MB_JSON_NUMBER ? p->number : 0;
    o->traceback = bool_member(out, "traceback");
    o->explicit_conversions = bool_member(out, "explicit_conversions");
  }
  const mb_json_value *tasks = mb__json_find(root, "tasks");
  if (!tasks || tasks->type != MB_JSON_ARRAY || tasks->count == 0) {
    if (!r->status)
      r->status =
          mb__error(r->err, MB_STATUS_PARSE, "%s: no \"tasks\"", r->path);
    return;
  }
  if (!(run->tasks = calloc(tasks->count, sizeof *run->tasks))) {
    r->status = mb__error(r->err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
    return;
  }
  for (size_t i = 0; i < tasks->count && !r->status; i++) {
    const mb_json_value *tv = &tasks->items[i];
    mb_exec_task *t = &run->tasks[run->n_tasks++];
    t->model = dup_member(r, tv, "model");
    t->conversions = dup_member(r, tv, "conversions");
    t->baseline = dup_member(r, tv, "baseline");
    t->split = bool_member(tv, "split");
    char state[32];
    copy_member(r, tv, "state", state, sizeof state);
    for (int s = 0; s < MB_TASK_STATE_COUNT; s++)
      if (strcmp(state, task_state_names[s]) == 0)
        t->state = (mb_task_state)s;
    copy_member(r, tv, "where", t->where, sizeof t->where);
    copy_member(r, tv, "node", t->node, sizeof t->node);
    copy_member(r, tv, "slurm_state", t->slurm_state, sizeof t->slurm_state);
    copy_member(r, tv, "reason", t->reason, sizeof t->reason);
    t->attempts = (int)int_member(tv, "attempts");
    if (!t->model && !r->status)
      r->status = mb__error(r->err, MB_STATUS_PARSE,
                            "%s: task %zu has no \"model\"", r->path, i);
  }
}

mb_status mb__exec_run_load(const char *run_or_id, const char *cache_dir,
                            mb_exec_run *run, mb_error *err) {
  char path[PATH_MAX];
  struct stat st;
  memset(run, 0, sizeof *run);
  if (stat(run_or_id, &st) == 0 && S_ISDIR(st.st_mode)) {
    if (!realpath(run_or_id, path) || strlen(path) >= sizeof run->dir)
      return mb__error(err, MB_STATUS_IO, "%s: %s", run_or_id, strerror(errno));
    memcpy(run->dir, path, strlen(path) + 1);
  } else {
    char cache[PATH_MAX];
    mb_status status = mb__cache_dir(cache_dir, cache, sizeof cache, err);
    if (status)
      return status;
    if (snprintf(run->dir, sizeof run->dir, "%s/runs/%s", cache, run_or_id) >=
            (int)sizeof run->dir ||
        stat(run->dir, &st) != 0 || !S_ISDIR(st.st_mode))
      return mb__error(err, MB_STATUS_NOT_FOUND,
                       "no run '%s': neither a run folder nor a run id under "
                       "%s/runs",
                       run_or_id, cache);
  }
  snprintf(path, sizeof path, "%s/%s", run->dir, RUN_FILE);
  mb_json_doc *doc = NULL;
  mb_status status = mb__json_parse_file(path, &doc, err);
  if (status)
    return status;
  reader r = {path, err, MB_STATUS_OK};
  if (doc->root.type != MB_JSON_OBJECT)
    r.status =
        mb__error(err, MB_STATUS_PARSE, "%s: not a modelbench run", path);
  else
    read_run(&r, &doc->root, run);
  mb__json_doc_free(doc);
  if (r.status)
    mb__exec_run_free(run);
  return r.status;
}

void mb__exec_run_free(mb_exec_run *run) {
  free_strings(run->hosts, run->n_hosts);
  free(run->ssh_config);
  free(run->remote_modelbench);
  free_strings(run->task_command, run->n_task_command);
  free(run->workdir);
  for (int i = 0; run->tasks && i < run->n_tasks; i++) {
    free(run->tasks[i].model);
    free(run->tasks[i].conversions);
    free(run->tasks[i].baseline);
  }
  free(run->tasks);
  for (int i = 0; run->args && i < run->n_args; i++) {
    free(run->args[i].name);
    free(run->args[i].value);
  }
  free(run->args);
  mb_exec_slurm *s = &run->slurm;
  free(s->partition);
  free(s->time_limit);
  free(s->mem);
  free(s->cpus_per_task);
  free(s->account);
  free_strings(s->sbatch_args, s->n_sbatch_args);
  mb_exec_output *o = &run->output;
  free(o->json);
  free(o->csv);
  free(o->markdown);
  free(o->html);
  free(o->cache_dir);
  free_strings(o->labels, o->n_labels);
  free_strings(run->jobs, run->n_jobs);
  memset(run, 0, sizeof *run);
}
