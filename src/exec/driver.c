/* Waiting for a run: poll the executor, resubmit failed tasks while they
 * have retries left, and show progress. Several processes may follow one
 * run (the submitter, `modelbench jobs status` in another shell): each poll
 * happens under the run folder's lock on the latest run.json, so a failed
 * task is resubmitted once, by whoever sees it first. */
#include "exec/exec.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Give up following a run whose executor has not answered for this long
 * (the tasks go on; `modelbench jobs collect RUN` picks them up). */
#define POLL_GIVE_UP_S 120.0

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool task_final(const mb_exec_run *run, const mb_exec_task *t) {
  return t->state == MB_TASK_DONE ||
         (t->state == MB_TASK_FAILED && t->attempts > run->retries);
}

bool mb__exec_finished(const mb_exec_run *run) {
  for (int i = 0; i < run->n_tasks; i++)
    if (!task_final(run, &run->tasks[i]))
      return false;
  return true;
}

/* Takes what another process may have changed (task states, jobs) from
 * run.json on disk. */
static mb_status refresh(mb_exec_run *run, mb_error *err) {
  mb_exec_run disk;
  mb_status status = mb__exec_run_load(run->dir, NULL, &disk, err);
  if (status)
    return status;
  if (disk.n_tasks == run->n_tasks) {
    for (int i = 0; i < run->n_tasks; i++) {
      mb_exec_task *t = &run->tasks[i], *d = &disk.tasks[i];
      t->state = d->state;
      t->attempts = d->attempts;
      memcpy(t->where, d->where, sizeof t->where);
      memcpy(t->node, d->node, sizeof t->node);
      memcpy(t->slurm_state, d->slurm_state, sizeof t->slurm_state);
      memcpy(t->reason, d->reason, sizeof t->reason);
    }
    char **jobs = run->jobs;
    int n_jobs = run->n_jobs;
    run->jobs = disk.jobs;
    run->n_jobs = disk.n_jobs;
    disk.jobs = jobs;
    disk.n_jobs = n_jobs;
    run->collected = disk.collected;
  }
  mb__exec_run_free(&disk);
  return MB_STATUS_OK;
}

mb_status mb__exec_poll(mb_exec_run *run, mb_error *err) {
  int lock = mb__exec_run_lock(run, err);
  if (lock < 0)
    return err->status;
  mb_status status = refresh(run, err);
  if (!status)
    status = run->ex->poll(run, err);
  int *retry = status ? NULL : calloc((size_t)run->n_tasks, sizeof *retry);
  int n_retry = 0;
  for (int i = 0; retry && i < run->n_tasks; i++) {
    const mb_exec_task *t = &run->tasks[i];
    if (t->state == MB_TASK_FAILED && t->attempts <= run->retries) {
      fprintf(stderr,
              "modelbench: task %d (%s) failed: %s; resubmitting (attempt "
              "%d of %d)\n",
              i, t->model, t->reason, t->attempts + 1, run->retries + 1);
      retry[n_retry++] = i;
    }
  }
  if (n_retry > 0)
    status = run->ex->submit(run, retry, n_retry, err);
  free(retry);
  mb_error save_err;
  if (mb__exec_run_save(run, &save_err) && !status)
    *err = save_err, status = save_err.status;
  mb__exec_run_unlock(lock);
  return status;
}

static void count_states(const mb_exec_run *run, int counts[]) {
  for (int s = 0; s < MB_TASK_STATE_COUNT; s++)
    counts[s] = 0;
  for (int i = 0; i < run->n_tasks; i++)
    counts[run->tasks[i].state]++;
}

static void progress_line(const mb_exec_run *run, const int counts[], char *buf,
                          size_t size) {
  size_t used =
      (size_t)snprintf(buf, size, "%s run %s: %d task%s:", run->ex->name,
                       run->id, run->n_tasks, run->n_tasks == 1 ? "" : "s");
  for (int s = 0; s < MB_TASK_STATE_COUNT && used < size; s++)
    used += (size_t)snprintf(buf + used, size - used, "%s %d %s", s ? "," : "",
                             counts[s], mb__task_state_name((mb_task_state)s));
}

mb_status mb__exec_wait(mb_exec_run *run, double poll_seconds, mb_error *err) {
  bool tty = isatty(STDERR_FILENO);
  char shown[256] = "", line[256];
  double failing_since = 0;
  /* Tasks whose final failure was shown. */
  bool *reported = calloc((size_t)run->n_tasks + 1, sizeof *reported);
  if (!reported)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (;;) {
    mb_error poll_err;
    mb_status status = mb__exec_poll(run, &poll_err);
    if (status) {
      double t = now_s();
      if (failing_since == 0) {
        failing_since = t;
        fprintf(stderr, "%smodelbench: %s (retrying)\n", tty ? "\r\033[K" : "",
                poll_err.message);
      } else if (t - failing_since > POLL_GIVE_UP_S) {
        free(reported);
        return mb__error(err, status,
                         "%s; gave up after %.0f s (the tasks go on: "
                         "'modelbench jobs collect %s' picks them up)",
                         poll_err.message, POLL_GIVE_UP_S, run->dir);
      }
    } else {
      failing_since = 0;
    }
    int counts[MB_TASK_STATE_COUNT];
    count_states(run, counts);
    progress_line(run, counts, line, sizeof line);
    if (tty) {
      fprintf(stderr, "\r\033[K%s", line);
    } else if (strcmp(line, shown) != 0) {
      fprintf(stderr, "%s\n", line);
      snprintf(shown, sizeof shown, "%s", line);
    }
    /* Tasks that failed for good are reported as they happen. */
    for (int i = 0; i < run->n_tasks; i++) {
      const mb_exec_task *t = &run->tasks[i];
      if (t->state == MB_TASK_FAILED && t->attempts > run->retries &&
          !reported[i]) {
        fprintf(stderr, "%smodelbench: task %d (%s) failed: %s\n",
                tty ? "\r\033[K" : "", i, t->model, t->reason);
        reported[i] = true;
      }
    }
    fflush(stderr);
    if (!status && mb__exec_finished(run))
      break;
    usleep((useconds_t)(poll_seconds * 1e6));
  }
  free(reported);
  if (tty)
    fputs("\r\033[K", stderr);
  fprintf(stderr, "%s\n", line);
  return MB_STATUS_OK;
}

void mb__exec_print_status(const mb_exec_run *run, void *out_file) {
  FILE *out = out_file;
  int counts[MB_TASK_STATE_COUNT];
  char line[256];
  fprintf(out, "run %s (%s), folder %s\n", run->id, run->executor, run->dir);
  if (run->n_jobs > 0) {
    fprintf(out, "Slurm job%s:", run->n_jobs == 1 ? "" : "s");
    for (int j = 0; j < run->n_jobs; j++)
      fprintf(out, " %s", run->jobs[j]);
    fputc('\n', out);
  }
  fprintf(out, "\n%-4s  %-8s  %-16s  %-12s  %-3s  %s\n", "task", "state",
          "where", "node", "try", "model [conversions]");
  for (int i = 0; i < run->n_tasks; i++) {
    const mb_exec_task *t = &run->tasks[i];
    /* run.json is data: its text is printed escaped. */
    char where[MB_TERM_TEXT_SIZE], node[MB_TERM_TEXT_SIZE];
    fprintf(out, "%-4d  %-8s  %-16s  %-12s  %-3d  ", i,
            mb__task_state_name(t->state),
            t->where[0] ? mb__term_text(t->where, where, sizeof where) : "-",
            t->node[0] ? mb__term_text(t->node, node, sizeof node) : "-",
            t->attempts);
    mb__term_put(out, t->model);
    if (t->split) {
      fputs(" [", out);
      mb__term_put(out, t->conversions);
      fputc(']', out);
    }
    fputc('\n', out);
    if (t->state == MB_TASK_FAILED && t->reason[0]) {
      fputs("      ", out);
      mb__term_put(out, t->reason);
      fprintf(out, "%s\n",
              t->attempts <= run->retries ? " (to be retried)" : "");
    }
  }
  count_states(run, counts);
  progress_line(run, counts, line, sizeof line);
  fprintf(out, "\n%s%s\n", line,
          run->collected ? " (collected)"
          : mb__exec_finished(run)
              ? " (finished: 'modelbench jobs collect' merges it)"
              : "");
}
