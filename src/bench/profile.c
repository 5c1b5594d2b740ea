/* mb_profile_model: where one conversion spends its time, per segment and
 * per node. A pass of its own (never inside a timed benchmark): prepare
 * with profiling on, warm up, reset the counters, run, collect. The same
 * inputs as `bench` (the input source of the config). Runs in a child
 * process unless config->isolate is 0, so a crashing runtime becomes an
 * error message. */
#include "bench/bench_internal.h"
#include "bench/data.h"
#include "conversions/conversion.h"
#include "passes/quantize.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct profile_job {
  const mb_model *model;
  const char *model_file; /* the file of the conversion's model form */
  const void *model_bytes;
  size_t model_size;
  const mb_bench_config *config;
  const mb_conversion_def *def;
  mb_tensor **inputs; /* sample 0 */
  int iterations;
} profile_job;

/* The profile itself, in this process. */
static mb_status profile_here(const profile_job *job, mb_profile *out,
                              mb_error *err) {
  const mb_conversion_def *def = job->def;
  const mb_runtime *rt = mb__runtime_find(def->runtime);
  const mb_tensor *const *inputs = (const mb_tensor *const *)job->inputs;
  void *session = NULL;
  char profile_path[] = "/tmp/modelbench-profile-XXXXXX";
  int profile_fd = -1;
  mb_status status;
  const mb_model *model = job->model;
  const void *bytes = job->model_bytes;
  size_t size = job->model_size;
  mb_model *converted = NULL;
  void *converted_bytes = NULL;
  mb_quant_params *params = NULL;
  if (!rt || !rt->profile_reset || !rt->profile_collect)
    return mb__error(err, MB_STATUS_UNSUPPORTED,
                     "runtime '%s' cannot profile per node", def->runtime);
  /* The model the conversion runs: its steps applied as in bench (FP16,
   * INT8 with calibration), without the build cache. */
  if (def->steps && def->steps[0]) {
    mb_tensor **sample = job->inputs;
    mb_bench_job bj;
    char summary[256];
    memset(&bj, 0, sizeof bj);
    bj.model = job->model;
    bj.model_bytes = job->model_bytes;
    bj.model_size = job->model_size;
    bj.config = job->config;
    bj.n_inputs = mb_model_input_count(job->model);
    bj.n_outputs = mb_model_output_count(job->model);
    bj.n_samples = 1;
    bj.samples = &sample;
    if ((status = mb__convert_for_job(&bj, def, NULL, &params, &converted_bytes,
                                      &size, summary, sizeof summary, err)) ||
        (status = mb_model_load_memory(converted_bytes, size, NULL, &converted,
                                       err)))
      goto done;
    model = converted;
    bytes = converted_bytes;
  }
  /* ORT writes its profile to a file; the adapter reads it back. */
  if ((profile_fd = mkstemp(profile_path)) < 0) {
    status = mb__error(err, MB_STATUS_IO, "cannot create a profile file: %s",
                       strerror(errno));
    goto done;
  }
  close(profile_fd);
  mb_runtime_options options = {
      .threads = MB_MAX(job->config->threads, 1),
      .opt_level = def->opt_level,
      .device = def->device,
      .profile_path = profile_path,
      .precision = def->precision,
      .example_inputs = inputs,
      .no_fallback = job->config->no_fallback,
      .profile = 1,
      .quant_params = params,
      .conversion = def->name,
      .model_path = job->model_file,
      .seed = job->config->seed,
      .trust_code = job->config->trust_code,
  };
  if ((status = rt->prepare(model, bytes, size, &options, &session, err))) {
    mb__error_prefix(err, status, "preparing %s", def->name);
    goto done;
  }
  for (int i = 0; i < MB_MAX(job->config->warmup_iterations, 1); i++)
    if ((status = rt->run(session, inputs, err)))
      goto done;
  rt->profile_reset(session, 2);
  double t0 = mb__now();
  for (int i = 0; i < job->iterations; i++)
    if ((status = rt->run(session, inputs, err)))
      goto done;
  out->total_mean_ms = (mb__now() - t0) * 1e3 / job->iterations;
  out->iterations = job->iterations;
  snprintf(out->conversion, sizeof out->conversion, "%s", def->name);
  if ((status = rt->profile_collect(session, out, err)))
    goto done;
  mb__profile_finish(out);
done:
  if (session)
    rt->release(session);
  if (profile_fd >= 0)
    unlink(profile_path);
  mb_model_free(converted);
  free(converted_bytes);
  mb__quant_params_free(params);
  return status;
}

static void put_profile(mb_wire *w, const mb_profile *p) {
  mb__wire_put_str(w, p->conversion);
  mb__wire_put_u32(w, (uint32_t)p->iterations);
  mb__wire_put_f64(w, p->total_mean_ms);
  mb__wire_put_str(w, p->note);
  mb__wire_put_u32(w, (uint32_t)p->n_segments);
  mb__wire_put(w, p->segments, sizeof *p->segments * (size_t)p->n_segments);
  mb__wire_put_u32(w, (uint32_t)p->n_nodes);
  mb__wire_put(w, p->nodes, sizeof *p->nodes * (size_t)p->n_nodes);
}

static mb_status get_profile(mb_wire *w, mb_profile *p, mb_error *err) {
  mb__wire_get_str_buf(w, p->conversion, sizeof p->conversion);
  p->iterations = (int)mb__wire_get_u32(w);
  p->total_mean_ms = mb__wire_get_f64(w);
  mb__wire_get_str_buf(w, p->note, sizeof p->note);
  uint32_t n = mb__wire_get_u32(w);
  if (!w->failed && n <= (w->size - w->pos) / sizeof *p->segments) {
    if (n && !(p->segments = malloc(sizeof *p->segments * n)))
      w->failed = 1;
    else if (n) {
      p->n_segments = (int)n;
      mb__wire_get(w, p->segments, sizeof *p->segments * n);
    }
  } else {
    w->failed = 1;
  }
  n = mb__wire_get_u32(w);
  if (!w->failed && n <= (w->size - w->pos) / sizeof *p->nodes) {
    if (n && !(p->nodes = malloc(sizeof *p->nodes * n)))
      w->failed = 1;
    else if (n) {
      p->n_nodes = (int)n;
      mb__wire_get(w, p->nodes, sizeof *p->nodes * n);
    }
  } else {
    w->failed = 1;
  }
  if (w->failed) {
    mb__profile_clear(p);
    return mb__error(err, MB_STATUS_INTERNAL,
                     "malformed profile from the worker");
  }
  return MB_STATUS_OK;
}

/* Child: runs the profile and writes one message (status, message,
 * profile) to fd. */
static void child_body(const profile_job *job, int fd) {
  mb_profile p;
  mb_error err = {MB_STATUS_OK, ""};
  mb_wire w = {0};
  memset(&p, 0, sizeof p);
  mb_status status = profile_here(job, &p, &err);
  mb__wire_put_u32(&w, (uint32_t)status);
  mb__wire_put_str(&w, err.message);
  if (!status)
    put_profile(&w, &p);
  if (!w.failed)
    mb__msg_send(fd, MB_MSG_RESULT, w.data, (uint32_t)w.size);
  mb__wire_free(&w);
  mb__profile_clear(&p);
}

static mb_status profile_isolated(const profile_job *job, mb_profile *out,
                                  mb_error *err) {
  int fds[2];
  mb_wire buf = {0};
  mb_status status = MB_STATUS_OK;
  int word = 0;
  double timeout =
      job->config->timeout_seconds > 0 ? job->config->timeout_seconds : 1e9;
  if (pipe(fds) != 0)
    return mb__error(err, MB_STATUS_IO, "cannot create a pipe: %s",
                     strerror(errno));
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return mb__error(err, MB_STATUS_IO, "cannot start a worker: %s",
                     strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    mb__worker_child_setup(-1, NULL);
    child_body(job, fds[1]);
    _exit(0);
  }
  close(fds[1]);
  double deadline = mb__now() + timeout;
  for (;;) {
    double left = deadline - mb__now();
    if (left <= 0) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &word, 0);
      close(fds[0]);
      mb__wire_free(&buf);
      return mb__error(err, MB_STATUS_UNAVAILABLE,
                       "profiling %s timed out after %g s", job->def->name,
                       timeout);
    }
    struct pollfd pfd = {fds[0], POLLIN, 0};
    int r = poll(&pfd, 1, (int)MB_MIN(left * 1000.0 + 1.0, 1000.0));
    if (r < 0 && errno != EINTR)
      break;
    if (r <= 0)
      continue;
    unsigned char chunk[65536];
    ssize_t got = read(fds[0], chunk, sizeof chunk);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      break;
    mb__wire_put(&buf, chunk, (size_t)got);
  }
  close(fds[0]);
  waitpid(pid, &word, 0);
  if (WIFSIGNALED(word)) {
    status =
        mb__error(err, MB_STATUS_INTERNAL,
                  "profiling %s crashed: the worker died from signal %d "
                  "(%s)",
                  job->def->name, WTERMSIG(word), strsignal(WTERMSIG(word)));
    goto done;
  }
  /* header: type, size; then status, message, profile */
  mb_wire w = {buf.data, buf.size, buf.cap, 0, 0};
  uint32_t type = mb__wire_get_u32(&w), size = mb__wire_get_u32(&w);
  if (w.failed || type != MB_MSG_RESULT || size != buf.size - 8) {
    status =
        mb__error(err, MB_STATUS_INTERNAL,
                  "profiling %s: the worker ended (exit %d) without a "
                  "result",
                  job->def->name, WIFEXITED(word) ? WEXITSTATUS(word) : -1);
    goto done;
  }
  status = (mb_status)mb__wire_get_u32(&w);
  char *message = mb__wire_get_str(&w);
  if (status) {
    mb__error(err, status, "%s", message ? message : "profiling failed");
  } else {
    status = get_profile(&w, out, err);
  }
  free(message);
done:
  mb__wire_free(&buf);
  return status;
}

mb_status mb_profile_model(const char *model_path, const char *conversion,
                           const mb_bench_config *config,
                           mb_profile **profile_out, mb_error *err) {
  mb_bench_config defaults;
  mb_model_files files;
  mb_input_source *source = NULL;
  mb_profile *p = NULL;
  profile_job job;
  mb_conversion_info info;
  int index, n_inputs = 0;
  mb_status status;
  memset(&job, 0, sizeof job);
  memset(&files, 0, sizeof files);
  *profile_out = NULL;
  if (!config) {
    mb_bench_config_init(&defaults);
    config = &defaults;
  }
  if (!model_path || !conversion)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "a model and a conversion are needed");
  if ((status = mb_conversion_find(conversion, &index, err)))
    return status;
  if ((status = mb_conversion_get(index, &info, err)))
    return status;
  if (!info.available)
    return mb__error(err, MB_STATUS_UNAVAILABLE, "%s is not available here: %s",
                     info.name, info.reason);
  /* An ONNX file, a TorchScript file or a manifest, as bench takes. */
  if ((status = mb__model_files_open(model_path, config, &files, err)))
    goto done;
  job.def = mb__conversion_def(index);
  if (!(files.formats & (1u << job.def->format))) {
    char why[MB_ERROR_MESSAGE_SIZE];
    status = mb__error(
        err, MB_STATUS_UNSUPPORTED, "%s: %s", info.name,
        mb__model_files_missing(&files, job.def->format, why, sizeof why));
    goto done;
  }
  if ((status = mb__keep_float_check(files.model, config, err)) ||
      (status = mb__input_source_open(files.model, config, &source, err)))
    goto done;
  n_inputs = mb_model_input_count(files.model);
  if (!(job.inputs = calloc((size_t)n_inputs + 1, sizeof *job.inputs))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot allocate inputs");
    goto done;
  }
  if ((status = mb__input_source_get(source, 0, job.inputs, err)))
    goto done;
  job.model = files.model;
  job.model_bytes = files.onnx_bytes;
  job.model_size = files.onnx_size;
  job.model_file = files.paths[job.def->format];
  job.config = config;
  job.iterations = config->min_iterations > 0 ? config->min_iterations : 50;
  if (!(p = calloc(1, sizeof *p))) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot allocate");
    goto done;
  }
  status = config->isolate ? profile_isolated(&job, p, err)
                           : profile_here(&job, p, err);
  if (!status) {
    *profile_out = p;
    p = NULL;
  }
done:
  mb_profile_free(p);
  for (int i = 0; job.inputs && i < n_inputs; i++)
    mb_tensor_free(job.inputs[i]);
  free(job.inputs);
  if (source)
    mb__input_source_close(source);
  mb__model_files_close(&files);
  return status;
}
