/* The benchmark parent: plans the run, materialises the inputs, spawns one
 * worker per conversion, collects results, fills the report.
 *
 * The parent never initialises a runtime (no probe, no prepare): a runtime
 * that crashes, hangs or leaks can only take its own worker down. It loads
 * the model into our IR (to resolve inputs), generates or reads every input
 * sample before the first fork so that every conversion sees the same
 * bytes, and has the reference outputs computed once in a worker of their
 * own; later workers inherit samples and reference through fork.
 *
 * A worker talks to the parent over two pipes: framed messages (progress,
 * the result, reference outputs) on one, and the crash handler's backtrace
 * on the other. The parent polls both against the per-conversion timeout;
 * when it expires the worker's whole process group is killed. */
#include "analysis/quantization.h"
#include "bench/bench_internal.h"
#include "bench/data.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What report->storage_ points to. */
typedef struct report_storage {
  mb_arena *arena; /* strings and arrays of the report (this struct too) */
  /* A log folder the engine created itself (no config->log_dir): removed
   * with the report, logs and all. "" when the caller chose the folder. */
  char temp_log_dir[512];
  int keep_reference_log; /* the reference worker failed: its log tells why */
} report_storage;

typedef struct engine {
  mb_bench_config config; /* effective: validated, conversions resolved */
  mb_bench_job job;
  mb_bench_report *report;
  mb_model_files files; /* the model in its forms; files.model is the IR */
  mb_input_source *source;
  char log_dir[512];
  int conversion_i; /* position of the running conversion, for progress */
  double timeout;   /* of the worker being run, seconds; <= 0: none */
} engine;

/* What came back from one worker process. */
typedef struct child_outcome {
  int have_result;
  mb_bench_result result;
  int have_tensors;
  mb_tensor **tensors; /* job.n_outputs slots */
  int have_error;
  char error[MB_ERROR_MESSAGE_SIZE];
  int timed_out;
  int exited, exit_code;
  int signaled, signal;
  char *backtrace;
} child_outcome;

/* ------------------------------------------------------------------------ */
/* Signals                                                                   */
/* ------------------------------------------------------------------------ */

static const struct {
  int sig;
  const char *name;
} signal_names[] = {
    {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
    {SIGILL, "SIGILL"},   {SIGABRT, "SIGABRT"}, {SIGKILL, "SIGKILL"},
    {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},   {SIGPIPE, "SIGPIPE"},
    {SIGTRAP, "SIGTRAP"}, {SIGSYS, "SIGSYS"},   {SIGXCPU, "SIGXCPU"},
    {SIGHUP, "SIGHUP"},   {SIGQUIT, "SIGQUIT"},
};

static void describe_signal(int sig, char *buf, size_t size) {
  const char *name = NULL;
  for (size_t i = 0; i < MB_ARRAY_COUNT(signal_names); i++)
    if (signal_names[i].sig == sig)
      name = signal_names[i].name;
  const char *text = strsignal(sig);
  if (name)
    snprintf(buf, size, "%s (%s)", name, text ? text : "");
  else
    snprintf(buf, size, "signal %d (%s)", sig, text ? text : "");
}

/* ------------------------------------------------------------------------ */
/* Progress                                                                  */
/* ------------------------------------------------------------------------ */

static void progress(engine *e, const char *phase, int64_t iterations,
                     double elapsed_s) {
  const mb_bench_config *c = &e->config;
  if (!c->on_progress || e->conversion_i < 0)
    return;
  const mb_conversion_def *def =
      mb__conversion_def(c->conversions[e->conversion_i]);
  c->on_progress(c->user, e->conversion_i, c->n_conversions,
                 def ? def->name : "?", phase, iterations, elapsed_s);
}

/* In-process runs report straight to the callback. */
static void progress_direct(void *ctx, const char *phase, int64_t iterations,
                            double elapsed_s) {
  progress(ctx, phase, iterations, elapsed_s);
}

/* Workers send progress over the result pipe. */
static void progress_to_pipe(void *ctx, const char *phase, int64_t iterations,
                             double elapsed_s) {
  int fd = *(const int *)ctx;
  mb_wire w = {0};
  mb__wire_put_str(&w, phase);
  mb__wire_put_i64(&w, iterations);
  mb__wire_put_f64(&w, elapsed_s);
  if (!w.failed)
    mb__msg_send(fd, MB_MSG_PROGRESS, w.data, (uint32_t)w.size);
  mb__wire_free(&w);
}

/* ------------------------------------------------------------------------ */
/* Running a worker process                                                  */
/* ------------------------------------------------------------------------ */

/* The body of a worker: writes its messages to fd. */
typedef void (*child_body_fn)(engine *e, void *arg, int fd);

static void dispatch(engine *e, uint32_t type, mb_wire *payload,
                     child_outcome *out) {
  mb_error err = {MB_STATUS_OK, ""};
  switch (type) {
  case MB_MSG_PROGRESS: {
    char phase[32];
    mb__wire_get_str_buf(payload, phase, sizeof phase);
    int64_t iterations = mb__wire_get_i64(payload);
    double elapsed = mb__wire_get_f64(payload);
    if (!payload->failed)
      progress(e, phase, iterations, elapsed);
    break;
  }
  case MB_MSG_RESULT:
    if (out->have_result)
      mb__result_clear(&out->result);
    out->have_result =
        mb__wire_get_result(payload, &out->result, &err) == MB_STATUS_OK;
    if (!out->have_result) {
      out->have_error = 1;
      snprintf(out->error, sizeof out->error, "%s", err.message);
    }
    break;
  case MB_MSG_TENSORS:
    if (out->tensors && !out->have_tensors)
      out->have_tensors =
          mb__wire_get_tensors(payload,
                               e->job.n_outputs * MB_MAX(e->job.n_reference, 1),
                               out->tensors, &err) == MB_STATUS_OK;
    if (!out->have_tensors) {
      out->have_error = 1;
      snprintf(out->error, sizeof out->error, "%s", err.message);
    }
    break;
  case MB_MSG_ERROR:
    mb__wire_get_u32(payload);
    mb__wire_get_str_buf(payload, out->error, sizeof out->error);
    out->have_error = 1;
    break;
  default:
    break;
  }
}

/* Appends what is readable on fd to buf; returns 0 at EOF or on error,
 * 1 while the pipe is open. */
static int read_available(int fd, mb_wire *buf) {
  unsigned char chunk[65536];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n > 0) {
      mb__wire_put(buf, chunk, (size_t)n);
      if (buf->failed)
        return 0;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return 1;
    return 0;
  }
}

/* Dispatches every complete message in buf and drops it. Returns 0 on a
 * malformed frame. */
static int parse_messages(engine *e, mb_wire *buf, child_outcome *out) {
  size_t pos = 0;
  int ok = 1;
  while (buf->size - pos >= 8) {
    uint32_t header[2];
    memcpy(header, buf->data + pos, sizeof header);
    if (header[1] > MB_MSG_MAX_PAYLOAD) {
      ok = 0;
      pos = buf->size;
      break;
    }
    if (buf->size - pos - 8 < header[1])
      break;
    mb_wire payload = {buf->data + pos + 8, header[1], header[1], 0, 0};
    dispatch(e, header[0], &payload, out);
    pos += 8 + (size_t)header[1];
  }
  if (pos > 0) {
    memmove(buf->data, buf->data + pos, buf->size - pos);
    buf->size -= pos;
  }
  return ok;
}

static void kill_worker(pid_t pid) {
  kill(-pid, SIGKILL); /* the worker's process group */
  kill(pid, SIGKILL);
}

/* Forks a worker running body(e, arg, fd), collects its messages and its
 * end. log_path: where its stdout/stderr go ("" keeps them). */
static mb_status run_child(engine *e, child_body_fn body, void *arg,
                           const char *log_path, child_outcome *out,
                           mb_error *err) {
  int msg_pipe[2] = {-1, -1}, bt_pipe[2] = {-1, -1};
  mb_wire msg_buf = {0}, bt_buf = {0};
  mb_status status = MB_STATUS_OK;
  if (pipe(msg_pipe) != 0 || pipe(bt_pipe) != 0) {
    status = mb__error(err, MB_STATUS_IO, "cannot create a pipe: %s",
                       strerror(errno));
    goto done;
  }
  /* Anything buffered would be written twice, once by each process. */
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    status = mb__error(err, MB_STATUS_IO, "cannot start a worker: %s",
                       strerror(errno));
    goto done;
  }
  if (pid == 0) {
    close(msg_pipe[0]);
    close(bt_pipe[0]);
    if (mb__worker_child_setup(bt_pipe[1], log_path) != 0) {
      mb_wire w = {0};
      char message[MB_ERROR_MESSAGE_SIZE];
      snprintf(message, sizeof message, "cannot write the log %s: %s", log_path,
               strerror(errno));
      mb__wire_put_u32(&w, MB_STATUS_IO);
      mb__wire_put_str(&w, message);
      mb__msg_send(msg_pipe[1], MB_MSG_ERROR, w.data, (uint32_t)w.size);
      _exit(3);
    }
    body(e, arg, msg_pipe[1]);
    /* _exit: no atexit handlers or stdio flushes that belong to the
     * parent, and no leak report for what the runtime kept. */
    _exit(0);
  }
  setpgid(pid, pid); /* also done by the child; whichever runs first */
  close(msg_pipe[1]);
  close(bt_pipe[1]);
  msg_pipe[1] = bt_pipe[1] = -1;
  fcntl(msg_pipe[0], F_SETFL, O_NONBLOCK);
  fcntl(bt_pipe[0], F_SETFL, O_NONBLOCK);

  double timeout = e->timeout > 0.0 ? e->timeout : 1e9;
  double deadline = mb__now() + timeout;
  int msg_open = 1, bt_open = 1, status_word = 0;
  for (;;) {
    if (!out->exited && !out->signaled) {
      pid_t r = waitpid(pid, &status_word, WNOHANG);
      if (r < 0 && errno == ECHILD) {
        /* SIGCHLD ignored by the host program: the kernel reaped the
         * worker, so how it ended is unknown. */
        out->exited = 1;
        out->exit_code = -1;
      } else if (r == pid) {
        out->exited = WIFEXITED(status_word);
        out->exit_code = out->exited ? WEXITSTATUS(status_word) : 0;
        out->signaled = WIFSIGNALED(status_word);
        out->signal = out->signaled ? WTERMSIG(status_word) : 0;
      }
    }
    if (out->exited || out->signaled) {
      /* Gone: take what is still in the pipes (they stay open if the
       * worker left a process behind holding them). */
      if (msg_open)
        read_available(msg_pipe[0], &msg_buf);
      if (bt_open)
        read_available(bt_pipe[0], &bt_buf);
      parse_messages(e, &msg_buf, out);
      break;
    }
    double remaining = deadline - mb__now();
    if (remaining <= 0.0) {
      kill_worker(pid);
      waitpid(pid, &status_word, 0);
      out->timed_out = 1;
      if (msg_open)
        read_available(msg_pipe[0], &msg_buf);
      if (bt_open)
        read_available(bt_pipe[0], &bt_buf);
      parse_messages(e, &msg_buf, out);
      break;
    }
    struct pollfd fds[2];
    int n_fds = 0;
    if (msg_open)
      fds[n_fds++] = (struct pollfd){msg_pipe[0], POLLIN, 0};
    if (bt_open)
      fds[n_fds++] = (struct pollfd){bt_pipe[0], POLLIN, 0};
    /* Wake up now and then to notice the worker's exit even when it left
     * the pipes open. */
    int wait_ms = (int)MB_MIN(remaining * 1000.0 + 1.0, 50.0);
    if (poll(fds, (nfds_t)n_fds, wait_ms) < 0 && errno != EINTR) {
      kill_worker(pid);
      waitpid(pid, &status_word, 0);
      status = mb__error(err, MB_STATUS_IO, "waiting for a worker: %s",
                         strerror(errno));
      goto done;
    }
    if (msg_open) {
      msg_open = read_available(msg_pipe[0], &msg_buf);
      if (!parse_messages(e, &msg_buf, out)) {
        out->have_error = 1;
        snprintf(out->error, sizeof out->error,
                 "malformed message from the worker");
        msg_open = 0;
      }
    }
    if (bt_open)
      bt_open = read_available(bt_pipe[0], &bt_buf);
  }
  if (bt_buf.size > 0) {
    mb__wire_put(&bt_buf, "", 1);
    if (!bt_buf.failed) {
      out->backtrace = (char *)bt_buf.data;
      bt_buf.data = NULL;
    }
  }

done:
  for (int i = 0; i < 2; i++) {
    if (msg_pipe[i] >= 0)
      close(msg_pipe[i]);
    if (bt_pipe[i] >= 0)
      close(bt_pipe[i]);
  }
  mb__wire_free(&msg_buf);
  mb__wire_free(&bt_buf);
  return status;
}

/* One line describing how a worker ended without a usable message. */
static mb_bench_status describe_end(const engine *e, const child_outcome *out,
                                    char *buf, size_t size) {
  char sig[96];
  if (out->timed_out) {
    snprintf(buf, size, "timed out after %g s", e->timeout);
    return MB_BENCH_TIMEOUT;
  }
  if (out->signaled) {
    describe_signal(out->signal, sig, sizeof sig);
    if (out->signal == SIGKILL)
      snprintf(buf, size, "killed by %s, likely out of memory", sig);
    else
      snprintf(buf, size, "crashed with %s", sig);
    return MB_BENCH_CRASHED;
  }
  if (out->have_error) {
    snprintf(buf, size, "%s", out->error);
    return MB_BENCH_ERROR;
  }
  snprintf(buf, size, "worker exited with code %d without a result",
           out->exit_code);
  return MB_BENCH_CRASHED;
}

/* ------------------------------------------------------------------------ */
/* Reference outputs                                                         */
/* ------------------------------------------------------------------------ */

static void reference_body(engine *e, void *arg, int fd) {
  mb_error err = {MB_STATUS_OK, ""};
  int n = e->job.n_outputs * MB_MAX(e->job.n_reference, 1);
  mb_tensor **outputs = calloc((size_t)MB_MAX(n, 1), sizeof *outputs);
  mb_wire w = {0};
  mb_status status = outputs
                         ? mb__worker_reference(&e->job, outputs, &err)
                         : mb__error(&err, MB_STATUS_OUT_OF_MEMORY,
                                     "cannot allocate the reference outputs");
  if (!status) {
    mb__wire_put_tensors(&w, n, outputs);
    if (!w.failed && w.size <= MB_MSG_MAX_PAYLOAD)
      mb__msg_send(fd, MB_MSG_TENSORS, w.data, (uint32_t)w.size);
  } else {
    mb__wire_put_u32(&w, (uint32_t)status);
    mb__wire_put_str(&w, err.message);
    mb__msg_send(fd, MB_MSG_ERROR, w.data, (uint32_t)w.size);
  }
  mb__wire_free(&w);
}

static void free_tensors(mb_tensor **tensors, int n) {
  for (int i = 0; tensors && i < n; i++)
    mb_tensor_free(tensors[i]);
  free(tensors);
}

/* Which conversion gives the reference outputs (job.reference_conversion,
 * -1: the reference interpreter) and its name; or, when nothing can, why
 * (job.reference_note; returns 0). Fails only on a manifest naming an
 * unknown conversion. */
static mb_status choose_reference(engine *e, int *usable_out, mb_error *err) {
  mb_bench_job *job = &e->job;
  const mb_model_files *f = &e->files;
  int index = e->config.reference;
  *usable_out = 0;
  if (index < 0 && f->reference) {
    mb_status status = mb_conversion_find(f->reference, &index, err);
    if (status)
      return mb__error_prefix(err, MB_STATUS_INVALID_ARGUMENT,
                              "the manifest's reference");
  }
  job->reference_conversion = index;
  if (index >= 0) {
    const mb_conversion_def *def = mb__conversion_def(index);
    snprintf(job->reference_name, sizeof job->reference_name, "%s", def->name);
    if (!(f->formats & (1u << def->format))) {
      char why[MB_ERROR_MESSAGE_SIZE];
      snprintf(job->reference_note, sizeof job->reference_note,
               "the reference %s cannot run: %s", def->name,
               mb__model_files_missing(f, def->format, why, sizeof why));
      return MB_STATUS_OK;
    }
    *usable_out = 1;
    return MB_STATUS_OK;
  }
  snprintf(job->reference_name, sizeof job->reference_name, "interpreter");
  if (!(f->formats & (1u << MB_MODEL_FORMAT_ONNX))) {
    snprintf(job->reference_note, sizeof job->reference_note,
             "the reference interpreter runs ONNX models and this one is %s "
             "(--reference NAME compares with a conversion instead)",
             f->formats & (1u << MB_MODEL_FORMAT_TORCHSCRIPT) ? "TorchScript"
                                                              : "not");
    return MB_STATUS_OK;
  }
  /* Cheap and runtime-free: the IR says which operators are missing. */
  char unsupported[256];
  if (mb_model_unsupported_ops(job->model, unsupported, sizeof unsupported) >
      0) {
    snprintf(job->reference_note, sizeof job->reference_note,
             "the reference interpreter cannot run the model (unsupported "
             "operators: %s)",
             unsupported);
    return MB_STATUS_OK;
  }
  *usable_out = 1;
  return MB_STATUS_OK;
}

/* Computes job.reference, or explains in job.reference_note why accuracy
 * will be unknown. Only allocation failures (and a manifest naming an
 * unknown reference) fail the run. */
static mb_status compute_reference(engine *e, mb_error *err) {
  mb_bench_job *job = &e->job;
  int usable = 0;
  mb_status status = choose_reference(e, &usable, err);
  if (status)
    return status;
  if (usable && e->config.build_only) {
    usable = 0; /* nothing runs, so nothing is compared */
    snprintf(job->reference_note, sizeof job->reference_note,
             "build only: no conversion was run");
  }
  snprintf(e->report->reference, sizeof e->report->reference, "%s",
           usable ? job->reference_name : "");
  if (!usable)
    return MB_STATUS_OK;
  /* Accuracy covers the first samples, up to MB_MAX_EVAL_SAMPLES. */
  job->n_reference = (int)MB_MIN(job->n_samples, MB_MAX_EVAL_SAMPLES);
  int n = job->n_outputs * MB_MAX(job->n_reference, 1);
  mb_tensor **outputs = calloc((size_t)MB_MAX(n, 1), sizeof *outputs);
  if (!outputs)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "cannot allocate the reference outputs");
  mb_error ref_err = {MB_STATUS_OK, ""};
  int ok = 0;
  if (e->config.isolate) {
    child_outcome out;
    char log_path[600];
    memset(&out, 0, sizeof out);
    out.tensors = outputs;
    snprintf(log_path, sizeof log_path, "%s/reference-outputs.log", e->log_dir);
    e->timeout = e->config.timeout_seconds;
    status = run_child(e, reference_body, NULL, log_path, &out, err);
    free(out.backtrace);
    if (status) {
      free(outputs);
      return status;
    }
    ok = out.have_tensors;
    if (!ok)
      describe_end(e, &out, ref_err.message, sizeof ref_err.message);
  } else {
    ok = mb__worker_reference(job, outputs, &ref_err) == MB_STATUS_OK;
  }
  if (!ok) {
    ((report_storage *)e->report->storage_)->keep_reference_log = 1;
    e->report->reference[0] = '\0';
    if (snprintf(job->reference_note, sizeof job->reference_note,
                 "the reference %s failed: %s",
                 job->reference_conversion < 0 ? "interpreter"
                                               : job->reference_name,
                 ref_err.message) < 0)
      job->reference_note[0] = '\0';
    free_tensors(outputs, n);
    return MB_STATUS_OK;
  }
  /* Outputs carry the model's output names for the accuracy entries
   * (whatever a runtime called its tensors). */
  for (int i = 0; i < n; i++) {
    mb_value_info info;
    if (mb_model_output_info(job->model, i % job->n_outputs, &info, NULL) ==
            MB_STATUS_OK &&
        info.name) {
      free(outputs[i]->name);
      outputs[i]->name = mb__strdup(info.name);
    }
  }
  job->reference = outputs;
  return MB_STATUS_OK;
}

/* Reads config->labels_path: integer class labels, one per row of the
 * samples (the first dimension of the first input), at least as many as
 * the samples have rows. */
static mb_status load_labels(engine *e, mb_error *err) {
  mb_bench_job *job = &e->job;
  const char *path = e->config.labels_path;
  mb_tensor *t = NULL;
  if (!path)
    return MB_STATUS_OK;
  int64_t rows = 0;
  for (int64_t s = 0; s < job->n_samples; s++)
    rows += job->n_inputs > 0 && job->samples[s][0]->rank > 0
                ? job->samples[s][0]->dims[0]
                : 1;
  mb_status status = mb__npy_load(path, &t, err);
  if (status)
    return mb__error_prefix(err, MB_STATUS_INVALID_ARGUMENT, "labels");
  const mb_dtype dtype = t->dtype;
  if (t->rank != 1 || !(dtype == MB_DTYPE_INT64 || dtype == MB_DTYPE_INT32 ||
                        dtype == MB_DTYPE_INT16 || dtype == MB_DTYPE_UINT8 ||
                        dtype == MB_DTYPE_INT8)) {
    char shape[160];
    status = mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "labels %s: expected a 1-d array of integer classes, "
                       "got %s%s",
                       path, mb_dtype_name(dtype),
                       mb__shape_str(t->rank, t->dims, shape, sizeof shape));
    goto done;
  }
  if (t->numel < rows) {
    status = mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "labels %s: %lld labels for %lld input rows (%lld "
                       "samples); one label per row is needed",
                       path, (long long)t->numel, (long long)rows,
                       (long long)job->n_samples);
    goto done;
  }
  if (!(job->labels = malloc(sizeof *job->labels * (size_t)MB_MAX(rows, 1)))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "labels: out of memory");
    goto done;
  }
  for (int64_t i = 0; i < rows; i++)
    job->labels[i] = dtype == MB_DTYPE_INT64   ? ((const int64_t *)t->data)[i]
                     : dtype == MB_DTYPE_INT32 ? ((const int32_t *)t->data)[i]
                     : dtype == MB_DTYPE_INT16 ? ((const int16_t *)t->data)[i]
                     : dtype == MB_DTYPE_UINT8 ? ((const uint8_t *)t->data)[i]
                                               : ((const int8_t *)t->data)[i];
  job->n_labels = rows;
done:
  mb_tensor_free(t);
  return status;
}

/* ------------------------------------------------------------------------ */
/* Running one conversion                                                    */
/* ------------------------------------------------------------------------ */

typedef struct conversion_arg {
  mb_bench_result *result; /* pre-filled identity */
} conversion_arg;

static void conversion_body(engine *e, void *arg, int fd) {
  conversion_arg *a = arg;
  mb_progress_sink sink = {progress_to_pipe, &fd};
  /* The worker's peak RSS is its own, not the parent's before the fork. */
  mb__peak_rss_reset();
  mb__worker_run_conversion(&e->job, a->result->conversion_index, &sink, fd,
                            a->result);
}

static const char *const device_names[] = {
#define MB_X(name, str) str,
    MB_DEVICE_LIST(MB_X)
#undef MB_X
};

static void result_init(engine *e, int position, mb_bench_result *r) {
  int index = e->config.conversions[position];
  const mb_conversion_def *def = mb__conversion_def(index);
  memset(r, 0, sizeof *r);
  r->conversion_index = index;
  r->conversion_id = def->id;
  r->conversion = def->name;
  r->status = MB_BENCH_OK;
  if ((unsigned)def->device < MB_ARRAY_COUNT(device_names))
    snprintf(r->device, sizeof r->device, "%s", device_names[def->device]);
  snprintf(r->runtime, sizeof r->runtime, "%s", def->runtime);
  r->batch_size = e->job.batch_size;
  r->max_abs_err = -1.0;
  r->cache_hit = -1;
  r->recompiles = -1;
  r->build_ms = -1.0;
  r->machine = e->job.machine;
  r->precision_share = -1.0;
  r->cost_per_million = -1.0;
  r->cold.iterations_to_steady = -1;
}

/* The per-conversion timeout of the worker at `position`. */
static void set_timeout(engine *e, int position) {
  e->timeout = e->config.timeout_seconds;
  if (e->config.conversion_timeouts &&
      e->config.conversion_timeouts[position] > 0.0)
    e->timeout = e->config.conversion_timeouts[position];
  /* The worker inherits it through fork. */
  e->job.deadline = e->timeout > 0.0 ? mb__now() + e->timeout : 0.0;
}

static mb_status run_worker(engine *e, int position, mb_bench_result *r,
                            mb_error *err) {
  mb_status status = MB_STATUS_OK;
  result_init(e, position, r);
  if (!e->config.isolate) {
    mb_progress_sink sink = {progress_direct, e};
    mb__peak_rss_reset();
    mb__worker_run_conversion(&e->job, r->conversion_index, &sink, -1, r);
    return MB_STATUS_OK;
  }

  /* Conversion names use '+' and '_' only, both fine in file names. */
  if (snprintf(r->log_path, sizeof r->log_path, "%s/%02d-%s.log", e->log_dir,
               position + 1, r->conversion) >= (int)sizeof r->log_path)
    r->log_path[0] = '\0'; /* too long a path: the output stays unlogged */
  child_outcome out;
  memset(&out, 0, sizeof out);
  conversion_arg arg = {r};
  set_timeout(e, position);
  if ((status = run_child(e, conversion_body, &arg, r->log_path, &out, err)))
    goto done;
  if (out.have_result) {
    /* The worker's copy is authoritative; names stay the parent's. */
    mb_bench_result got = out.result;
    got.conversion = r->conversion;
    got.conversion_index = r->conversion_index;
    memset(&out.result, 0, sizeof out.result);
    *r = got;
    char how[MB_ERROR_MESSAGE_SIZE];
    if (out.timed_out || out.signaled) {
      describe_end(e, &out, how, sizeof how);
      mb__result_add_warning(r,
                             "the worker %s after sending its result "
                             "(while releasing the session)",
                             how);
    }
  } else {
    r->status = describe_end(e, &out, r->error, sizeof r->error);
  }
  if (out.backtrace && out.signaled && !r->backtrace) {
    r->backtrace = out.backtrace;
    out.backtrace = NULL;
  }

done:
  if (out.have_result)
    mb__result_clear(&out.result);
  free(out.backtrace);
  return status;
}

/* ---- cold start (config->cold) ---- */

/* The miss worker's log beside the conversion's: NN-NAME.cold-miss.log for
 * NN-NAME.log. False when log_path is "" or the name does not fit. */
static bool miss_log_path(const char *log_path, char *buf, size_t size) {
  size_t n = strlen(log_path);
  if (n < 4 || strcmp(log_path + n - 4, ".log") != 0)
    return false;
  return snprintf(buf, size, "%.*s.cold-miss.log", (int)(n - 4), log_path) <
         (int)size;
}

static void cold_miss_body(engine *e, void *arg, int fd) {
  conversion_arg *a = arg;
  mb_progress_sink sink = {progress_to_pipe, &fd};
  mb__worker_cold_miss(&e->job, a->result->conversion_index, &sink, fd,
                       a->result);
}

/* The miss, in a worker of its own before the conversion's run (so that
 * the run's build is the hit, in a process as fresh as the miss's):
 * *miss gets build_miss_ms and model_read_ms, or note says why not. */
static void cold_miss(engine *e, int position, mb_cold_start *miss) {
  mb_bench_result r;
  mb_error err = {MB_STATUS_OK, ""};
  child_outcome out;
  memset(&out, 0, sizeof out);
  memset(miss, 0, sizeof *miss);
  miss->build_miss_ms = miss->model_read_ms = -1.0;
  result_init(e, position, &r);
  progress(e, "cold miss", 0, 0.0);
  if (!e->config.isolate) {
    mb_progress_sink sink = {progress_direct, e};
    mb__worker_cold_miss(&e->job, r.conversion_index, &sink, -1, &r);
  } else {
    char log[sizeof r.log_path + 16];
    if (snprintf(r.log_path, sizeof r.log_path, "%s/%02d-%s.log", e->log_dir,
                 position + 1, r.conversion) >= (int)sizeof r.log_path ||
        !miss_log_path(r.log_path, log, sizeof log))
      log[0] = '\0';
    conversion_arg arg = {&r};
    set_timeout(e, position);
    if (run_child(e, cold_miss_body, &arg, log, &out, &err)) {
      snprintf(miss->note, sizeof miss->note, "the miss did not run: %.160s",
               err.message);
      goto done;
    }
    if (!out.have_result) {
      describe_end(e, &out, r.error, sizeof r.error);
      snprintf(miss->note, sizeof miss->note, "the miss build failed: %.160s",
               r.error);
      goto done;
    }
    r.cold = out.result.cold;
    r.status = out.result.status;
    snprintf(r.error, sizeof r.error, "%s", out.result.error);
  }
  miss->build_miss_ms = r.cold.build_miss_ms;
  miss->model_read_ms = r.cold.model_read_ms;
  if (r.status != MB_BENCH_OK)
    snprintf(miss->note, sizeof miss->note, "the miss build failed: %.160s",
             r.error);
done:
  if (out.have_result)
    mb__result_clear(&out.result);
  free(out.backtrace);
  mb__result_clear(&r);
}

/* The cold start of a finished run: the miss's figures, the run's own
 * (its build step was the hit, its load and first inference, the
 * iterations to steady state measure.c found) and the times to a first
 * result they add up to. */
static void cold_finish(const mb_cold_start *miss, mb_bench_result *r) {
  mb_cold_start *c = &r->cold;
  double hit_ms = c->build_hit_ms;
  int64_t steady = c->iterations_to_steady;
  memset(c, 0, sizeof *c);
  if (r->status != MB_BENCH_OK && r->status != MB_BENCH_BUILT) {
    c->iterations_to_steady = -1;
    return;
  }
  c->measured = 1;
  c->iterations_to_steady = steady;
  c->build_miss_ms = miss->build_miss_ms;
  c->model_read_ms = miss->model_read_ms;
  snprintf(c->note, sizeof c->note, "%s", miss->note);
  c->build_hit_ms = r->cache_hit == 1 ? hit_ms : -1.0;
  if (r->cache_hit != 1 && !c->note[0])
    snprintf(c->note, sizeof c->note, "%s",
             r->cache_hit < 0 ? "no build cache (--no-cache, or trouble with "
                                "it): every build is a miss"
                              : "the run built again: the miss left no build "
                                "to hit");
  c->load_ms = r->load_ms + MB_MAX(c->model_read_ms, 0.0);
  c->first_inference_ms = r->first_run_ms > 0.0 ? r->first_run_ms : -1.0;
  bool first = c->first_inference_ms >= 0.0;
  c->time_to_first_result_ms =
      first && c->build_hit_ms >= 0.0
          ? c->build_hit_ms + c->load_ms + c->first_inference_ms
          : -1.0;
  c->time_to_first_result_miss_ms =
      first && c->build_miss_ms >= 0.0
          ? c->build_miss_ms + c->load_ms + c->first_inference_ms
          : -1.0;
}

static mb_status run_conversion(engine *e, int position, mb_bench_result *r,
                                mb_error *err) {
  mb_cold_start miss;
  if (e->config.cold)
    cold_miss(e, position, &miss);
  mb_status status = run_worker(e, position, r, err);
  if (e->config.cold && !status)
    cold_finish(&miss, r);
  return status;
}

/* ------------------------------------------------------------------------ */
/* Planning                                                                  */
/* ------------------------------------------------------------------------ */

/* The load settings, named by their CLI options. */
static mb_status validate_load(const mb_load_config *l, mb_error *err) {
  if ((unsigned)l->scenario >= MB_LOAD_SCENARIO_COUNT)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "config: scenario %d is not a known scenario",
                     (int)l->scenario);
  if (!(l->qps >= 0) || isinf(l->qps) || !(l->min_duration >= 0) ||
      isinf(l->min_duration) || !(l->qps_tolerance >= 0) ||
      !(l->qps_tolerance < 1))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "config: --qps and --min-duration must be finite and "
                     ">= 0, --qps-tolerance in [0, 1) (got %g, %g, %g)",
                     l->qps, l->min_duration, l->qps_tolerance);
  if (l->concurrency < 1 || l->concurrency > MB_LOAD_MAX_CONCURRENCY)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "config: --concurrency must be between 1 and %d (got "
                     "%d)",
                     MB_LOAD_MAX_CONCURRENCY, l->concurrency);
  if (l->min_queries < 1)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "config: --min-queries must be >= 1 (got %lld)",
                     (long long)l->min_queries);
  if (l->slo_percentile < 0 || l->slo_percentile > 100 ||
      (l->slo_percentile > 0 && !(l->slo_ms > 0 && isfinite(l->slo_ms))))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "config: the SLO needs a percentile in (0, 100] and a "
                     "latency > 0 (got p%g=%g ms)",
                     l->slo_percentile, l->slo_ms);
  if (l->find_peak && (l->scenario != MB_LOAD_SERVER || l->slo_percentile <= 0))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "config: --find-peak searches a server's QPS under an "
                     "SLO: it needs --scenario server and --slo");
  if (l->scenario == MB_LOAD_SERVER && !l->find_peak && !(l->qps > 0))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "config: the server scenario needs --qps (the mean "
                     "arrival rate) or --find-peak");
  if (l->scenario == MB_LOAD_SINGLE_STREAM && l->concurrency > 1)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "config: single-stream issues one query at a time; "
                     "--concurrency applies to server and offline");
  return MB_STATUS_OK;
}

/* Range checks with messages naming the setting (by its CLI/JSON key).
 * A max_time or timeout of 0 means none; when min_time exceeds max_time the
 * cap wins. */
static mb_status validate_config(const mb_bench_config *c, mb_error *err) {
  static const struct {
    const char *name;
    size_t offset;
    double min;
  } doubles[] = {
      {"warmup_time", offsetof(mb_bench_config, warmup_seconds), 0.0},
      {"min_time", offsetof(mb_bench_config, min_seconds), 0.0},
      {"max_time", offsetof(mb_bench_config, max_seconds), 0.0},
      {"timeout", offsetof(mb_bench_config, timeout_seconds), 0.0},
      {"rtol", offsetof(mb_bench_config, rtol), 0.0},
      {"atol", offsetof(mb_bench_config, atol), 0.0},
  };
  static const struct {
    const char *name;
    size_t offset;
    int min;
  } ints[] = {
      {"batch_size", offsetof(mb_bench_config, batch_size), 1},
      {"n_samples", offsetof(mb_bench_config, n_samples), 1},
      {"warmup", offsetof(mb_bench_config, warmup_iterations), 0},
      {"min_iterations", offsetof(mb_bench_config, min_iterations), 0},
  };
  for (size_t i = 0; i < MB_ARRAY_COUNT(doubles); i++) {
    double v;
    memcpy(&v, (const char *)c + doubles[i].offset, sizeof v);
    if (!(v >= doubles[i].min) || isinf(v))
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "config: %s must be a finite number >= %g (got %g)",
                       doubles[i].name, doubles[i].min, v);
  }
  for (size_t i = 0; i < MB_ARRAY_COUNT(ints); i++) {
    int v;
    memcpy(&v, (const char *)c + ints[i].offset, sizeof v);
    if (v < ints[i].min)
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "config: %s must be >= %d (got %d)", ints[i].name,
                       ints[i].min, v);
  }
  if (!(c->ci_target >= 0 && c->ci_target < 1))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "config: ci_target must be a share in [0, 1) (got %g)",
                     c->ci_target);
  /* Without a cap a target that is never met would run into the
   * conversion's timeout and lose the result. */
  if (c->ci_target > 0 && !(c->max_seconds > 0))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "config: ci_target %g needs a max_time (got 0: none)",
                     c->ci_target);
  mb_status status = validate_load(&c->load, err);
  if (status)
    return status;
  if (c->reference >= 0 && !mb__conversion_def(c->reference))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "config: reference %d is not a registry index (0..%d)",
                     c->reference, mb_conversion_count() - 1);
  if ((unsigned)c->device >= MB_DEVICE_COUNT)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "config: device %d is not a known device", c->device);
  if (c->n_conversions < 0 || (c->n_conversions > 0 && !c->conversions))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "config: conversions: %d entries but no array",
                     c->n_conversions);
  for (int i = 0; i < c->n_conversions; i++)
    if (!mb__conversion_def(c->conversions[i]))
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "config: conversions[%d] = %d is not a registry index "
                       "(0..%d)",
                       i, c->conversions[i], mb_conversion_count() - 1);
  return MB_STATUS_OK;
}

static char *arena_strdup_or_null(mb_arena *arena, const char *s) {
  return s ? mb__arena_strdup(arena, s) : NULL;
}

/* The effective config: the caller's settings with the conversion list
 * resolved and every string and array copied into the report, so the
 * report's copy stays valid after the call. Callbacks are not kept. */
static mb_status plan(engine *e, const mb_bench_config *config, mb_error *err) {
  mb_arena *arena = ((report_storage *)e->report->storage_)->arena;
  mb_bench_config *c = &e->config;
  *c = *config;
  if (c->threads < 1)
    c->threads = 1;
  mb_status status = validate_config(c, err);
  if (status)
    return status;
  int n = c->n_conversions;
  if (n == 0)
    for (int i = 0; i < mb_conversion_count(); i++)
      n += mb__conversion_def(i)->in_default_set != 0;
  if (n == 0)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "no conversions to run: the list is empty and no "
                     "conversion is in the default set");
  int *indices = mb__arena_alloc(arena, sizeof(int) * (size_t)n);
  if (!indices)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot plan the run");
  if (c->n_conversions > 0) {
    memcpy(indices, c->conversions, sizeof(int) * (size_t)n);
  } else {
    int k = 0;
    for (int i = 0; i < mb_conversion_count(); i++)
      if (mb__conversion_def(i)->in_default_set)
        indices[k++] = i;
  }
  c->n_conversions = n;
  c->conversions = indices;
  if (c->baseline < 0)
    c->baseline = 0;
  if (c->baseline >= n)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "config: baseline %d is not one of the %d conversions",
                     c->baseline, n);

  /* The report's copy: strings and arrays owned by the report. */
  mb_bench_config *copy = &e->report->config;
  *copy = *c;
  copy->on_progress = NULL;
  copy->on_result = NULL;
  copy->user = NULL;
  copy->loader = NULL;
  copy->loader_user = NULL;
  copy->inputs_dir = arena_strdup_or_null(arena, c->inputs_dir);
  copy->labels_path = arena_strdup_or_null(arena, c->labels_path);
  copy->labels = NULL; /* the report's merged labels, once the model is open */
  copy->n_labels = 0;
  if (c->conversion_timeouts) {
    double *timeouts = mb__arena_alloc(arena, sizeof *timeouts * (size_t)n);
    if (!timeouts)
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot plan the run");
    memcpy(timeouts, c->conversion_timeouts, sizeof *timeouts * (size_t)n);
    copy->conversion_timeouts = timeouts;
  }
  copy->log_dir = NULL; /* set once the folder exists */
  if (c->n_ranges > 0 && c->ranges) {
    mb_input_range *ranges =
        mb__arena_alloc(arena, sizeof *ranges * (size_t)c->n_ranges);
    if (!ranges)
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot plan the run");
    for (int i = 0; i < c->n_ranges; i++) {
      ranges[i] = c->ranges[i];
      ranges[i].name = arena_strdup_or_null(arena, c->ranges[i].name);
    }
    copy->ranges = ranges;
  } else {
    copy->n_ranges = 0;
    copy->ranges = NULL;
  }
  if (c->shapes.n_shapes > 0 && c->shapes.shapes) {
    mb_input_shape *shapes =
        mb__arena_alloc(arena, sizeof *shapes * (size_t)c->shapes.n_shapes);
    if (!shapes)
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot plan the run");
    for (int i = 0; i < c->shapes.n_shapes; i++) {
      shapes[i] = c->shapes.shapes[i];
      shapes[i].name = arena_strdup_or_null(arena, c->shapes.shapes[i].name);
    }
    copy->shapes.shapes = shapes;
  } else {
    copy->shapes.n_shapes = 0;
    copy->shapes.shapes = NULL;
  }
  if (c->shapes.n_dims > 0 && c->shapes.dims) {
    mb_dim_value *dims =
        mb__arena_alloc(arena, sizeof *dims * (size_t)c->shapes.n_dims);
    if (!dims)
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot plan the run");
    for (int i = 0; i < c->shapes.n_dims; i++) {
      dims[i] = c->shapes.dims[i];
      dims[i].name = arena_strdup_or_null(arena, c->shapes.dims[i].name);
    }
    copy->shapes.dims = dims;
  } else {
    copy->shapes.n_dims = 0;
    copy->shapes.dims = NULL;
  }
  copy->sweep_point = arena_strdup_or_null(arena, c->sweep_point);
  copy->n_keep_float = 0;
  copy->keep_float = NULL;
  if (c->n_keep_float > 0 && c->keep_float) {
    const char **kept =
        mb__arena_alloc(arena, sizeof *kept * (size_t)c->n_keep_float);
    if (!kept)
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot plan the run");
    for (int i = 0; i < c->n_keep_float; i++)
      if (!(kept[i] = arena_strdup_or_null(arena, c->keep_float[i])))
        return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot plan the run");
    copy->keep_float = kept;
    copy->n_keep_float = c->n_keep_float;
  }
  snprintf(e->report->sweep_point, sizeof e->report->sweep_point, "%s",
           c->sweep_point ? c->sweep_point : "");
  return MB_STATUS_OK;
}

static mb_status prepare_log_dir(engine *e, mb_error *err) {
  report_storage *storage = e->report->storage_;
  const char *dir = e->config.log_dir;
  if (dir && dir[0]) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
      return mb__error(err, MB_STATUS_IO, "cannot create the log folder %s: %s",
                       dir, strerror(errno));
    snprintf(e->log_dir, sizeof e->log_dir, "%s", dir);
  } else {
    mb_status status = mb__run_logs_create(e->config.cache_dir, e->log_dir,
                                           sizeof e->log_dir, err);
    if (status)
      return status;
    snprintf(storage->temp_log_dir, sizeof storage->temp_log_dir, "%s",
             e->log_dir);
  }
  e->report->config.log_dir = mb__arena_strdup(storage->arena, e->log_dir);
  return MB_STATUS_OK;
}

/* Whether "key=..." labels hold `label`'s key. */
static bool has_label_key(const char *const *labels, int n, const char *label) {
  size_t key = strcspn(label, "=");
  for (int i = 0; i < n; i++)
    if (strncmp(labels[i], label, key) == 0 && labels[i][key] == '=')
      return true;
  return false;
}

/* What the report says of where the model came from: a manifest's source
 * (script, location, labels) and its inputs folder, with the config's
 * labels first. */
static mb_status describe_source(engine *e, mb_arena *arena, mb_error *err) {
  mb_bench_report *report = e->report;
  const mb_model_files *f = &e->files;
  snprintf(report->model_script, sizeof report->model_script, "%s",
           f->script ? f->script : "");
  snprintf(report->model_location, sizeof report->model_location, "%s",
           f->location ? f->location : "");
  if (!e->config.inputs_dir && f->inputs_dir) {
    e->config.inputs_dir = f->inputs_dir;
    if (!(report->config.inputs_dir = mb__arena_strdup(arena, f->inputs_dir)))
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  int n_config = e->config.labels ? MB_MAX(e->config.n_labels, 0) : 0;
  int n = n_config + f->n_labels;
  if (n == 0)
    return MB_STATUS_OK;
  const char **labels = mb__arena_alloc(arena, sizeof *labels * (size_t)n);
  if (!labels)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  int k = 0;
  for (int i = 0; i < n_config; i++)
    if (!(labels[k++] = mb__arena_strdup(arena, e->config.labels[i])))
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < f->n_labels; i++)
    if (!has_label_key(labels, n_config, f->labels[i]) &&
        !(labels[k++] = mb__arena_strdup(arena, f->labels[i])))
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  report->labels = labels;
  report->config.labels = labels;
  report->n_labels = report->config.n_labels = k;
  return MB_STATUS_OK;
}

/* The roofline's model figures (report->model_flops, ...) from the
 * analysis at the run's concrete input shapes; unknown (-1) when shapes
 * do not resolve. Fails only on OOM. */
static mb_status model_figures(engine *e, mb_error *err) {
  mb_bench_report *report = e->report;
  report->model_flops = report->model_weight_bytes = -1.0;
  report->model_input_bytes = report->model_activation_bytes = -1.0;
  if (!e->config.roofline || e->config.build_only || !e->job.model)
    return MB_STATUS_OK;
  mb_shape_spec spec = {1, report->n_inputs, report->inputs, 0, NULL};
  mb_model_stats stats;
  mb_error local = {MB_STATUS_OK, ""};
  mb_status status = mb_model_analyze(e->job.model, &spec, &stats, &local);
  if (status == MB_STATUS_OUT_OF_MEMORY)
    return mb__error(err, status, "%s", local.message);
  if (status)
    return MB_STATUS_OK; /* no figures: the roofline stays unknown */
  if (stats.total_flops > 0 && stats.unknown_flops_nodes == 0)
    report->model_flops = stats.total_flops;
  report->model_weight_bytes = (double)stats.param_bytes;
  report->model_input_bytes = stats.input_bytes;
  report->model_activation_bytes = stats.activation_bytes;
  mb_model_stats_free(&stats);
  return MB_STATUS_OK;
}

/* This machine's peaks at the run's threads (peaks.c: the cache, else a
 * child measures them). Never fails the run: without peaks every
 * roofline is unknown and peaks.note says why. */
static void machine_peaks(engine *e) {
  mb_machine_peaks *peaks = &e->report->peaks;
  const char *off = getenv(MB_NO_ROOFLINE_ENV);
  if (!e->config.roofline || (off && strcmp(off, "1") == 0)) {
    snprintf(peaks->note, sizeof peaks->note, "not measured: %s",
             e->config.roofline ? MB_NO_ROOFLINE_ENV "=1" : "--no-roofline");
    return;
  }
  /* Nothing to place on the roofline: no seconds spent measuring. */
  if (e->config.build_only || e->report->model_flops <= 0.0) {
    snprintf(peaks->note, sizeof peaks->note, "not measured: %s",
             e->config.build_only ? "--build-only measures nothing"
                                  : "the model's FLOPs are not known (shapes "
                                    "or operators without a FLOPs count)");
    return;
  }
  mb_error err = {MB_STATUS_OK, ""};
  if (mb__peaks_get(e->config.cache_dir, e->config.threads, false, peaks, &err))
    snprintf(peaks->note, sizeof peaks->note, "not measured: %.240s",
             err.message);
}

/* Loads the model and materialises every input sample. */
static mb_status load_inputs(engine *e, const char *model_path, mb_error *err) {
  mb_bench_job *job = &e->job;
  mb_bench_report *report = e->report;
  mb_arena *arena = ((report_storage *)report->storage_)->arena;
  mb_status status;
  if ((status = mb__model_files_open(model_path, &e->config, &e->files, err)))
    return status;
  mb_model *model = e->files.model;
  job->files = &e->files;
  job->model = model;
  job->model_bytes = e->files.onnx_bytes;
  job->model_size = e->files.onnx_size;
  job->model_path = model_path;
  job->config = &e->config;
  job->n_inputs = mb_model_input_count(model);
  job->n_outputs = mb_model_output_count(model);
  snprintf(report->model_path, sizeof report->model_path, "%s", model_path);
  snprintf(report->model_sha256, sizeof report->model_sha256, "%s",
           e->files.sha256);
  snprintf(report->model_name, sizeof report->model_name, "%s", e->files.name);
  report->model_formats = e->files.formats;
  /* A pre-quantised model: every conversion is judged by the cosine
   * criterion (the worker reads job->model_quantized). */
  job->model_quantized = mb__model_quantization(
      model, report->model_quantization, sizeof report->model_quantization);
  report->model_quantized = job->model_quantized;
  if ((status = mb__keep_float_check(model, &e->config, err)))
    return status;
  if ((status = describe_source(e, arena, err)))
    return status;

  if ((status = mb__input_source_open(model, &e->config, &e->source, err)))
    return status;
  job->n_samples = mb__input_source_count(e->source);
  if (job->n_samples < 1)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "the input source has no samples");
  const mb_input_shape *shapes = mb__input_source_shapes(e->source);
  report->n_inputs = job->n_inputs;
  report->inputs = mb__arena_alloc(arena, sizeof *report->inputs *
                                              (size_t)MB_MAX(job->n_inputs, 1));
  report->input_dtypes = mb__arena_alloc(
      arena, sizeof *report->input_dtypes * (size_t)MB_MAX(job->n_inputs, 1));
  job->samples = calloc((size_t)job->n_samples, sizeof *job->samples);
  if (!report->inputs || !report->input_dtypes || !job->samples)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "cannot allocate %lld input samples",
                     (long long)job->n_samples);
  for (int i = 0; i < job->n_inputs; i++) {
    mb_value_info info;
    if ((status = mb_model_input_info(model, i, &info, err)))
      return status;
    report->inputs[i] = shapes[i];
    report->inputs[i].name = mb__arena_strdup(arena, shapes[i].name);
    report->input_dtypes[i] = info.dtype;
  }
  /* Throughput counts samples of the batch dimension: the first dim of the
   * first input (the dynamic dim --batch-size fills, or the model's own). */
  job->batch_size = job->n_inputs > 0 && shapes[0].rank >= 1
                        ? (int)MB_MAX(shapes[0].dims[0], 1)
                        : e->config.batch_size;
  for (int64_t s = 0; s < job->n_samples; s++) {
    job->samples[s] =
        calloc((size_t)MB_MAX(job->n_inputs, 1), sizeof *job->samples[s]);
    if (!job->samples[s])
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "cannot allocate input sample %lld", (long long)s);
    if ((status = mb__input_source_get(e->source, s, job->samples[s], err)))
      return mb__error_prefix(err, status, "input sample %lld", (long long)s);
  }
  report->config.n_samples = (int)job->n_samples;
  if ((status = model_figures(e, err)))
    return status;
  /* The source keeps its own copy of every sample: drop it before the
   * workers inherit (and count) the parent's memory. */
  mb__input_source_close(e->source);
  e->source = NULL;
  return MB_STATUS_OK;
}

/* Resamples of the speed-up's bootstrap, and its seed: fixed, so that a
 * report shows the same interval every time it is written. */
#define MB_SPEEDUP_RESAMPLES 2000
#define MB_SPEEDUP_SEED 0x7370656564757073ULL /* "speedups" */

static void set_speedup(const mb_bench_result *baseline, mb_bench_result *r) {
  r->speedup_vs_baseline = 0.0;
  r->speedup_ci[0] = r->speedup_ci[1] = 0.0;
  if (!baseline || baseline->status != MB_BENCH_OK ||
      r->status != MB_BENCH_OK || !(r->latency_ms.median > 0.0))
    return;
  r->speedup_vs_baseline = baseline->latency_ms.median / r->latency_ms.median;
  /* Without samples (an older report) the interval stays unknown; so it
   * does when a sample is not positive, which the bootstrap refuses. */
  double lo, hi;
  mb_error err = {0};
  if (baseline->samples_ms && baseline->n_samples_ms > 0 && r->samples_ms &&
      r->n_samples_ms > 0 &&
      mb__bootstrap_median_ratio(baseline->samples_ms, baseline->n_samples_ms,
                                 r->samples_ms, r->n_samples_ms,
                                 MB_SPEEDUP_RESAMPLES, 0.95, MB_SPEEDUP_SEED,
                                 &lo, &hi, &err) == MB_STATUS_OK) {
    r->speedup_ci[0] = lo;
    r->speedup_ci[1] = hi;
  }
}

void mb__set_speedups(const mb_bench_result *baseline, mb_bench_result *results,
                      int n_results) {
  for (int i = 0; i < n_results; i++)
    set_speedup(baseline, &results[i]);
}

static void engine_cleanup(engine *e) {
  mb_bench_job *job = &e->job;
  for (int64_t s = 0; job->samples && s < job->n_samples; s++) {
    for (int i = 0; job->samples[s] && i < job->n_inputs; i++)
      mb_tensor_free(job->samples[s][i]);
    free(job->samples[s]);
  }
  free(job->samples);
  free_tensors(job->reference, job->n_outputs * MB_MAX(job->n_reference, 1));
  free(job->labels);
  if (e->source)
    mb__input_source_close(e->source);
  mb__model_files_close(&e->files);
}

mb_bench_report *mb__bench_report_create(mb_arena **arena_out) {
  mb_bench_report *report = calloc(1, sizeof *report);
  mb_arena *arena = report ? mb__arena_create() : NULL;
  report_storage *storage =
      arena ? mb__arena_alloc(arena, sizeof *storage) : NULL;
  if (!storage) {
    mb__arena_free(arena);
    free(report);
    return NULL;
  }
  memset(storage, 0, sizeof *storage);
  storage->arena = arena;
  report->storage_ = storage;
  report->baseline_result = -1;
  *arena_out = arena;
  return report;
}

mb_arena *mb__bench_report_arena(mb_bench_report *report) {
  return ((report_storage *)report->storage_)->arena;
}

mb_status mb_benchmark_model(const char *model_path,
                             const mb_bench_config *config,
                             mb_bench_report **report_out, mb_error *err) {
  engine e;
  mb_status status;
  memset(&e, 0, sizeof e);
  e.conversion_i = -1;
  if (!model_path || !config || !report_out)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "mb_benchmark_model: model_path, config and report_out "
                     "are required");
  mb_arena *arena;
  mb_bench_report *report = mb__bench_report_create(&arena);
  if (!report)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "cannot allocate the report");
  e.report = report;
  snprintf(report->tool_version, sizeof report->tool_version, "%s",
           MB_VERSION_STRING);
  mb__machine_info(&report->machine);
  e.job.machine = report->machine;

  if ((status = mb__environment_capture(&report->environment, arena, err)) ||
      (status = plan(&e, config, err)) ||
      (status = load_inputs(&e, model_path, err)) ||
      (status = load_labels(&e, err)) || (status = prepare_log_dir(&e, err)) ||
      (status = compute_reference(&e, err)))
    goto fail;
  machine_peaks(&e);

  int n = e.config.n_conversions;
  report->results = calloc((size_t)n, sizeof *report->results);
  if (!report->results) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "cannot allocate %d results", n);
    goto fail;
  }
  report->baseline_result = e.config.baseline;
  const char *failed = NULL; /* the conversion that stopped a fail-fast run */
  for (int i = 0; i < n; i++) {
    mb_bench_result *r = &report->results[i];
    e.conversion_i = i;
    if (failed) {
      result_init(&e, i, r);
      r->status = MB_BENCH_SKIPPED;
      snprintf(r->error, sizeof r->error,
               "skipped: %s failed and fail-fast is on", failed);
    } else {
      mb_error run_err = {MB_STATUS_OK, ""};
      /* A worker that cannot even start (fork, pipe) fails its conversion
       * only; the others may still run. */
      if (run_conversion(&e, i, r, &run_err)) {
        r->status = MB_BENCH_ERROR;
        snprintf(r->error, sizeof r->error, "%s", run_err.message);
      }
    }
    r->machine = e.job.machine; /* whatever the worker sent */
    report->n_results = i + 1;
    if (e.config.baseline <= i)
      set_speedup(&report->results[e.config.baseline], r);
    mb__roofline_fill(report, r);
    progress(&e, "done", r->iterations, r->elapsed_seconds);
    if (e.config.on_result)
      e.config.on_result(e.config.user, r);
    if (e.config.fail_fast && !failed && mb_bench_status_failed(r->status))
      failed = r->conversion;
  }
  /* Results before a later baseline get their speedup now. */
  for (int i = 0; i < n; i++)
    set_speedup(&report->results[e.config.baseline], &report->results[i]);
  engine_cleanup(&e);
  *report_out = report;
  return MB_STATUS_OK;

fail:
  engine_cleanup(&e);
  mb_bench_report_free(report);
  return status;
}

/* Tidies a log folder the engine created itself: the logs of conversions
 * that failed stay (they are the evidence of why), the others go, and so
 * does the folder once empty. */
static void remove_temp_logs(const mb_bench_report *report,
                             const report_storage *storage) {
  static const int keep[MB_BENCH_STATUS_COUNT] = {
      [MB_BENCH_ERROR] = 1, [MB_BENCH_TIMEOUT] = 1, [MB_BENCH_CRASHED] = 1};
  char path[600];
  for (int i = 0; report->results && i < report->n_results; i++) {
    const mb_bench_result *r = &report->results[i];
    if (r->log_path[0] && (unsigned)r->status < MB_BENCH_STATUS_COUNT &&
        !keep[r->status])
      unlink(r->log_path);
    /* --cold's miss worker: its log goes too, unless the miss failed. */
    char miss[sizeof r->log_path + 16];
    if (r->cold.measured && r->cold.build_miss_ms >= 0 &&
        (unsigned)r->status < MB_BENCH_STATUS_COUNT && !keep[r->status] &&
        miss_log_path(r->log_path, miss, sizeof miss))
      unlink(miss);
  }
  if (!storage->keep_reference_log &&
      snprintf(path, sizeof path, "%s/reference-outputs.log",
               storage->temp_log_dir) < (int)sizeof path)
    unlink(path);
  rmdir(storage->temp_log_dir); /* fails, as it should, when not empty */
}

void mb_bench_report_free(mb_bench_report *report) {
  if (!report)
    return;
  report_storage *storage = report->storage_;
  if (storage && storage->temp_log_dir[0])
    remove_temp_logs(report, storage);
  for (int i = 0; report->results && i < report->n_results; i++)
    mb__result_clear(&report->results[i]);
  free(report->results);
  if (storage)
    mb__arena_free(storage->arena); /* storage lives in its own arena */
  free(report);
}
