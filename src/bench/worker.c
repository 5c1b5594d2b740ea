/* The worker: everything that touches a runtime. In an isolated run it is a
 * child process forked per conversion (engine.c); with --no-isolate the
 * same code runs in the parent.
 *
 * A worker checks its conversion is available, builds the runtime session
 * from the model bytes, measures (measure.c), compares sample 0's outputs
 * with the reference outputs it inherited, and sends its result over a pipe
 * as soon as it exists, before releasing the session, so that a runtime
 * crashing or hanging in cleanup cannot lose the figures. The wire format
 * both ends of the pipe use is wire.c's. */
#include "analysis/quantization.h"
#include "bench/bench_internal.h"

#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

/* ------------------------------------------------------------------------ */
/* Child setup: crash handlers, log redirection                              */
/* ------------------------------------------------------------------------ */

static int crash_fd = -1;
/* A crash from a stack overflow runs the handler on its own stack. 64 KiB
 * is above SIGSTKSZ everywhere we run. */
static char crash_stack[1 << 16];

/* Async-signal-safe: only write(), backtrace (preloaded in setup),
 * signal() and raise(). */
static void crash_handler(int sig) {
  static const struct {
    int sig;
    const char *line;
  } names[] = {
      {SIGSEGV, "SIGSEGV\n"}, {SIGBUS, "SIGBUS\n"},   {SIGFPE, "SIGFPE\n"},
      {SIGILL, "SIGILL\n"},   {SIGABRT, "SIGABRT\n"},
  };
  void *frames[64];
  int n = backtrace(frames, 64);
  for (size_t i = 0; i < MB_ARRAY_COUNT(names); i++)
    if (names[i].sig == sig) {
      static const char banner[] = "modelbench worker: fatal signal ";
      if (write(STDERR_FILENO, banner, sizeof banner - 1) < 0) {
        /* nothing useful to do in a crashing process */
      }
      if (write(STDERR_FILENO, names[i].line, strlen(names[i].line)) < 0) {
      }
    }
  if (crash_fd >= 0)
    backtrace_symbols_fd(frames, n, crash_fd);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  signal(sig, SIG_DFL);
  raise(sig);
}

int mb__worker_child_setup(int backtrace_fd, const char *log_path) {
  /* Its own process group, so that a timeout kills whatever the runtime
   * spawned too. */
  setpgid(0, 0);
#ifdef __linux__
  /* An orphaned worker must not keep running (and holding a core) after
   * the parent died. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
  crash_fd = backtrace_fd;
  /* backtrace() loads libgcc on first use, which is not safe inside a
   * signal handler: do it now. */
  void *frames[4];
  backtrace(frames, 4);

  stack_t ss;
  memset(&ss, 0, sizeof ss);
  ss.ss_sp = crash_stack;
  ss.ss_size = sizeof crash_stack;
  sigaltstack(&ss, NULL);
  static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
  for (size_t i = 0; i < MB_ARRAY_COUNT(fatal); i++) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = crash_handler;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(fatal[i], &sa, NULL);
  }

  if (log_path && log_path[0]) {
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
      return -1;
    if (dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) {
      close(fd);
      return -1;
    }
    close(fd);
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Running one conversion                                                    */
/* ------------------------------------------------------------------------ */

static const char *const device_names[] = {
#define MB_X(name, str) str,
    MB_DEVICE_LIST(MB_X)
#undef MB_X
};

static const char *device_name(mb_device device) {
  return (unsigned)device < MB_ARRAY_COUNT(device_names) ? device_names[device]
                                                         : "unknown";
}

/* The version of runtime `name` as its probe reports it. Only that
 * runtime is probed: probing libtorch loads it. */
static void runtime_version(const char *name, char *buf, size_t size) {
  const mb_runtime *rt = mb__runtime_find(name);
  mb_runtime_info info;
  memset(&info, 0, sizeof info);
  buf[0] = '\0';
  if (rt) {
    info.name = rt->name;
    rt->probe(&info);
    snprintf(buf, size, "%s", info.version);
  }
}

static void fail_result(mb_bench_result *result, mb_bench_status status,
                        const char *message) {
  result->status = status;
  snprintf(result->error, sizeof result->error, "%s", message);
  /* One line: a runtime's multi-line message keeps its first line. */
  result->error[strcspn(result->error, "\r\n")] = '\0';
}

/* Rows of a classifier-shaped output ([rows, classes], float32, classes
 * >= 2) whose top-1 class matches the reference's; -1 when the output is
 * not classifier-shaped. *rows_out: the rows compared. */
static int64_t top1_matches(const mb_tensor *got, const mb_tensor *want,
                            int64_t *rows_out) {
  *rows_out = 0;
  if (got->dtype != MB_DTYPE_FLOAT || want->dtype != MB_DTYPE_FLOAT ||
      got->rank != 2 || want->rank != 2 || got->dims[1] < 2 ||
      got->dims[0] < 1 || got->numel != want->numel)
    return -1;
  const float *a = got->data, *b = want->data;
  int64_t rows = got->dims[0], classes = got->dims[1], same = 0;
  for (int64_t r = 0; r < rows; r++) {
    int64_t ia = 0, ib = 0;
    for (int64_t c = 1; c < classes; c++) {
      if (a[r * classes + c] > a[r * classes + ia])
        ia = c;
      if (b[r * classes + c] > b[r * classes + ib])
        ib = c;
    }
    same += ia == ib;
  }
  *rows_out = rows;
  return same;
}

/* Rows of sample k: the first dimension of its first input (1 for a
 * scalar or a model without inputs). */
static int64_t sample_rows(const mb_bench_job *job, int64_t k) {
  const mb_tensor *t = job->n_inputs > 0 ? job->samples[k][0] : NULL;
  return t && t->rank > 0 ? t->dims[0] : 1;
}

/* Top-1 of every row of a classifier-shaped output against the labels of
 * those rows; -1 when the output is not [rows, classes] float32. */
static int64_t label_matches(const mb_tensor *out, const int64_t *labels,
                             int64_t rows) {
  if (out->dtype != MB_DTYPE_FLOAT || out->rank != 2 || out->dims[0] != rows ||
      out->dims[1] < 2)
    return -1;
  const float *a = out->data;
  int64_t classes = out->dims[1], same = 0;
  for (int64_t r = 0; r < rows; r++) {
    int64_t best = 0;
    for (int64_t c = 1; c < classes; c++)
      if (a[r * classes + c] > a[r * classes + best])
        best = c;
    same += best == labels[r];
  }
  return same;
}

/* Adds sample k's top-1 matches against the labels of its rows to
 * *task_same and moves *label_row past them; an output without one row
 * per label makes the task accuracy unknown (*label_row = -1). */
static void count_label_matches(const mb_bench_job *job, int64_t k,
                                const mb_tensor *output,
                                mb_bench_result *result, int64_t *label_row,
                                int64_t *task_same) {
  int64_t rows = sample_rows(job, k);
  int64_t same = label_matches(output, job->labels + *label_row, rows);
  if (same < 0) {
    char shape[160];
    mb__result_add_warning(
        result,
        "task accuracy unknown: output %d is %s%s, not float32 [rows, "
        "classes] with one row per label",
        0, mb_dtype_name(output->dtype),
        mb__shape_str(output->rank, output->dims, shape, sizeof shape));
    *label_row = -1;
  } else {
    *task_same += same;
    *label_row += rows;
  }
}

/* Compares sample k's outputs with its reference outputs, keeping per
 * output the worst error and cosine so far (result->accuracy), the count
 * of values beyond rtol/atol (bad) and top-1 matches (top1_same). */
static mb_status compare_sample(const mb_bench_job *job, int64_t k,
                                mb_tensor *const *outputs,
                                mb_bench_result *result, int64_t *bad,
                                int64_t *top1_same, mb_error *err) {
  int n_out = job->n_outputs;
  mb_status status;
  for (int i = 0; i < n_out; i++) {
    const mb_tensor *expected = job->reference[k * n_out + i];
    mb_output_accuracy *acc = &result->accuracy[i];
    mb_compare_result cmp;
    snprintf(acc->name, sizeof acc->name, "%s",
             expected->name ? expected->name : "");
    if ((status = mb_tensor_compare(outputs[i], expected, job->config->rtol,
                                    job->config->atol, &cmp, err))) {
      mb__error_prefix(err, status, "output '%s'", acc->name);
      return status;
    }
    if (!cmp.shape_match) {
      char got[160], want[160];
      return mb__error(
          err, MB_STATUS_MISMATCH,
          "output '%s' is %s%s but the reference %s gives %s%s", acc->name,
          mb_dtype_name(outputs[i]->dtype),
          mb__shape_str(outputs[i]->rank, outputs[i]->dims, got, sizeof got),
          job->reference_name, mb_dtype_name(expected->dtype),
          mb__shape_str(expected->rank, expected->dims, want, sizeof want));
    }
    /* NaN errors must stick: compare so that NaN wins. */
    if (k == 0 || !(cmp.max_abs_err <= acc->max_abs_err))
      acc->max_abs_err = cmp.max_abs_err;
    if (k == 0 || !(cmp.max_rel_err <= acc->max_rel_err))
      acc->max_rel_err = cmp.max_rel_err;
    if (k == 0 || !(cmp.cosine >= acc->cosine))
      acc->cosine = cmp.cosine;
    bad[i] += cmp.n_bad;
    int64_t rows, same = top1_matches(outputs[i], expected, &rows);
    if (same >= 0) {
      top1_same[i] += same;
      acc->top1_rows += rows;
      acc->top1_agreement = (double)top1_same[i] / (double)acc->top1_rows;
    }
  }
  return MB_STATUS_OK;
}

/* After every sample: the result's worst error over outputs, and a
 * warning per output beyond its bound (the cosine criterion, for reduced
 * precisions and every conversion of a pre-quantised model: 1 - cosine
 * over max_error, which flags the result inaccurate; fp32 on a float
 * model: rtol/atol). */
static void judge_accuracy(const mb_bench_job *job,
                           const mb_conversion_def *def, int n_ref,
                           const int64_t *bad, mb_bench_result *result) {
  result->accuracy_criterion =
      mb__accuracy_criterion(def->precision, job->model_quantized);
  bool reduced = result->accuracy_criterion == MB_ACCURACY_COSINE;
  double max_error = job->config->max_error > 0 ? job->config->max_error : 1e-3;
  for (int i = 0; i < job->n_outputs; i++) {
    const mb_output_accuracy *acc = &result->accuracy[i];
    result->max_abs_err = MB_MAX(result->max_abs_err, acc->max_abs_err);
    if (isnan(acc->max_abs_err))
      result->max_abs_err = acc->max_abs_err;
    if (reduced) {
      if (!(1.0 - acc->cosine <= max_error)) {
        result->inaccurate = 1;
        mb__result_add_warning(result,
                               "inaccurate: output '%s' has cosine %.6f "
                               "with the reference (1 - cosine %.2g > "
                               "--max-error %g)",
                               acc->name, acc->cosine, 1.0 - acc->cosine,
                               max_error);
      }
    } else if (bad[i] > 0) {
      mb__result_add_warning(result,
                             "output '%s': %lld of %lld values differ from "
                             "the reference beyond rtol %g, atol %g",
                             acc->name, (long long)bad[i],
                             (long long)(job->reference[i]->numel * n_ref),
                             job->config->rtol, job->config->atol);
    }
  }
}

/* Runs the evaluation samples again and compares every output with the
 * reference: fp32 conversions by rtol/atol, reduced precision by
 * 1 - cosine against config->max_error (flagging the result inaccurate),
 * plus top-1 agreement for classifier-shaped outputs. With labels, every
 * sample is evaluated and the first output's top-1 accuracy against them
 * is the task accuracy. */
static mb_status check_accuracy(const mb_runtime *rt, void *session,
                                const mb_bench_job *job,
                                const mb_conversion_def *def,
                                mb_bench_result *result, mb_error *err) {
  mb_status status = MB_STATUS_OK;
  mb_tensor **outputs = NULL;
  int64_t *bad = NULL, *top1_same = NULL;
  int n_out = job->n_outputs;
  int n_ref = job->reference ? MB_MAX(job->n_reference, 1) : 0;
  bool labelled = job->labels != NULL;
  int64_t n_eval = labelled ? job->n_samples : n_ref;
  int64_t label_row = 0, task_same = 0;
  if (!job->reference && job->reference_note[0])
    mb__result_add_warning(result, "accuracy unknown: %s", job->reference_note);
  if (n_eval == 0)
    return MB_STATUS_OK;
  if (!rt->fetch_outputs || n_out == 0) {
    mb__result_add_warning(result, "accuracy unknown: %s",
                           n_out == 0 ? "the model declares no outputs"
                                      : "the runtime cannot return its "
                                        "outputs");
    return MB_STATUS_OK;
  }
  outputs = calloc((size_t)n_out, sizeof *outputs);
  bad = calloc((size_t)n_out, sizeof *bad);
  top1_same = calloc((size_t)n_out, sizeof *top1_same);
  if (n_ref > 0)
    result->accuracy = calloc((size_t)n_out, sizeof *result->accuracy);
  if (!outputs || !bad || !top1_same || (n_ref > 0 && !result->accuracy)) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "cannot allocate the accuracy check");
    goto done;
  }
  if (n_ref > 0) {
    result->n_outputs = n_out;
    result->max_abs_err = 0.0;
    for (int i = 0; i < n_out; i++) {
      result->accuracy[i].cosine = 1.0;
      result->accuracy[i].top1_agreement = -1.0;
    }
  }
  /* Every sample with reference outputs; per output the worst error and
   * cosine over them, top-1 agreement over all their rows. */
  for (int64_t k = 0; k < n_eval; k++) {
    if ((status =
             rt->run(session, (const mb_tensor *const *)job->samples[k], err)))
      mb__error_prefix(err, status, "accuracy run (sample %lld)", (long long)k);
    else if ((status = rt->fetch_outputs(session, outputs, err)))
      mb__error_prefix(err, status, "fetching outputs");
    if (!status && labelled && label_row >= 0)
      count_label_matches(job, k, outputs[0], result, &label_row, &task_same);
    if (!status && k < n_ref)
      status = compare_sample(job, k, outputs, result, bad, top1_same, err);
    for (int i = 0; i < n_out; i++) {
      mb_tensor_free(outputs[i]);
      outputs[i] = NULL;
    }
    if (status)
      goto done;
  }
  if (labelled && label_row > 0) {
    result->task_accuracy = (double)task_same / (double)label_row;
    result->task_rows = label_row;
  }
  if (n_ref > 0)
    judge_accuracy(job, def, n_ref, bad, result);
  result->has_accuracy = n_ref > 0;

done:
  for (int i = 0; outputs && i < n_out; i++)
    mb_tensor_free(outputs[i]);
  free(outputs);
  free(bad);
  free(top1_same);
  if (!result->has_accuracy) {
    free(result->accuracy);
    result->accuracy = NULL;
    result->n_outputs = 0;
    result->max_abs_err = -1.0;
  }
  return status;
}

/* Untimed pass after the benchmark: where a hybrid conversion's time goes,
 * per segment. A few runs, at most about a second. */
/* A reduced-precision hybrid conversion's segments may have run in fp32
 * (or on the reference interpreter, as unsupported nodes always do): the
 * share of FLOPs at the conversion's precision, and a warning when engine
 * segments fell back to fp32. */
static void precision_share(mb_bench_result *result, const char *note) {
  const mb_conversion_def *def = mb__conversion_def(result->conversion_index);
  double total = 0.0, reduced = 0.0;
  int fp32 = 0;
  if (!def || def->precision == MB_PRECISION_FP32)
    return;
  const char *want = mb_precision_name(def->precision);
  for (int i = 0; i < result->n_segments; i++) {
    const mb_segment_stats *s = &result->segments[i];
    if (s->gflops < 0 || !s->precision[0])
      return; /* not a hybrid profile */
    total += s->gflops;
    if (strcmp(s->precision, want) == 0)
      reduced += s->gflops;
    else if (strcmp(s->runtime, "reference") != 0)
      fp32++; /* an engine segment that fell back */
  }
  if (total <= 0.0)
    return;
  result->precision_share = reduced / total;
  if (fp32 == 0)
    return;
  char line[512];
  snprintf(line, sizeof line,
           "%s for %.0f%% of the FLOPs: %d %s segment%s ran in fp32, which "
           "the engine could not compile in %s (%s)",
           want, 100.0 * result->precision_share, fp32, result->runtime,
           fp32 == 1 ? "" : "s", want, note && note[0] ? note : "no reason");
  char **grown = realloc(result->warnings,
                         sizeof *grown * (size_t)(result->n_warnings + 1));
  if (grown && (grown[result->n_warnings] = mb__strdup(line))) {
    result->warnings = grown;
    result->n_warnings++;
  } else if (grown) {
    result->warnings = grown;
  }
}

static mb_status collect_segments(const mb_runtime *rt, void *session,
                                  const mb_bench_job *job,
                                  mb_bench_result *result, mb_error *err) {
  mb_profile profile;
  mb_status status = MB_STATUS_OK;
  double median_s = result->latency_ms.median * 1e-3;
  int runs = median_s > 0 ? (int)MB_MIN(20.0, MB_MAX(3.0, 1.0 / median_s)) : 3;
  memset(&profile, 0, sizeof profile);
  rt->profile_reset(session, 1);
  for (int i = 0; i < runs && !status; i++)
    status = rt->run(session,
                     (const mb_tensor *const *)job->samples[i % job->n_samples],
                     err);
  if (!status) {
    profile.iterations = runs;
    status = rt->profile_collect(session, &profile, err);
  }
  rt->profile_reset(session, 0);
  if (status) {
    mb__profile_clear(&profile);
    return mb__error_prefix(err, status, "segment profile");
  }
  mb__profile_finish(&profile);
  if (profile.n_segments > 0 &&
      (result->segments =
           calloc((size_t)profile.n_segments, sizeof *result->segments))) {
    result->n_segments = profile.n_segments;
    for (int i = 0; i < profile.n_segments; i++) {
      snprintf(result->segments[i].runtime, sizeof result->segments[i].runtime,
               "%s", profile.segments[i].runtime);
      result->segments[i].nodes = profile.segments[i].nodes;
      result->segments[i].mean_ms = profile.segments[i].mean_ms;
      snprintf(result->segments[i].precision,
               sizeof result->segments[i].precision, "%s",
               profile.segments[i].precision);
      result->segments[i].gflops = profile.segments[i].gflops;
    }
    precision_share(result, profile.note);
  }
  mb__profile_clear(&profile);
  return MB_STATUS_OK;
}

static void send_result(int fd, const mb_bench_result *result) {
  if (fd < 0)
    return;
  mb_wire w = {0};
  mb__wire_put_result(&w, result);
  if (!w.failed && w.size <= MB_MSG_MAX_PAYLOAD)
    mb__msg_send(fd, MB_MSG_RESULT, w.data, (uint32_t)w.size);
  mb__wire_free(&w);
}

static void report(const mb_progress_sink *progress, const char *phase) {
  if (progress && progress->fn)
    progress->fn(progress->ctx, phase, 0, 0.0);
}

/* A prepared conversion: what worker_prepare makes and worker_finish
 * releases. */
typedef struct prepared {
  const mb_conversion_def *def;
  const mb_runtime *rt;
  void *session; /* sessions[0] */
  /* Load runs with --concurrency N: N sessions prepared alike. */
  void *sessions[MB_LOAD_MAX_CONCURRENCY];
  int n_sessions;
  mb_worker_build wb;
  /* The build step's wall time, ms: the cache lookup and either the build
   * or reading what the cache kept (a host runtime's conversion, made in
   * its prepare, counts on a miss). The cold start's figure. */
  double build_step_ms;
} prepared;

/* Sessions a run needs: --concurrency for server and offline loads. */
static int sessions_needed(const mb_bench_config *c) {
  if (c->load.scenario != MB_LOAD_SERVER && c->load.scenario != MB_LOAD_OFFLINE)
    return 1;
  return MB_MIN(MB_MAX(c->load.concurrency, 1), MB_LOAD_MAX_CONCURRENCY);
}

/* Keeps a host runtime's detail (a traceback) of the failure just seen
 * with the result, unless a crash already gave it a backtrace. */
static void take_detail(const mb_runtime *rt, mb_bench_result *result) {
  char *detail = rt && rt->take_error_detail ? rt->take_error_detail() : NULL;
  if (detail && !result->backtrace)
    result->backtrace = detail;
  else
    free(detail);
}

/* A form the Python front made that its runtime runs as it is (a
 * TorchScript file, an AOTInductor package): making it was the
 * conversion's build, so the result reports the front's record of it (its
 * milliseconds, 0 on a build-cache hit) rather than the empty build here. */
static void note_form_build(const mb_bench_job *job,
                            const mb_conversion_def *def,
                            mb_bench_result *result) {
  static const mb_model_format made_whole[] = {MB_MODEL_FORMAT_TORCHSCRIPT,
                                               MB_MODEL_FORMAT_AOTI};
  const mb_model_files *f = job->files;
  for (size_t i = 0; f && i < MB_ARRAY_COUNT(made_whole); i++)
    if (def->format == made_whole[i] && (f->built & (1u << def->format))) {
      result->build_ms = f->build_ms[def->format];
      if (f->cache_hit[def->format] >= 0)
        result->cache_hit = f->cache_hit[def->format];
    }
}

/* Availability, device, runtime, the build step and prepare of conversion
 * `index`, filling result (device, runtime_version, build fields,
 * load_ms). On failure the result says why (status, error) and 0 is
 * returned; p->session is then NULL. */
static int worker_prepare(const mb_bench_job *job, int index,
                          const mb_progress_sink *progress,
                          mb_bench_result *result, prepared *p) {
  const mb_bench_config *c = job->config;
  const mb_conversion_def *def = mb__conversion_def(index);
  mb_error err = {MB_STATUS_OK, ""};
  mb_conversion_info info;
  char message[MB_ERROR_MESSAGE_SIZE];
  mb_status status;
  memset(p, 0, sizeof *p);
  p->def = def;
  if (!def) {
    fail_result(result, MB_BENCH_ERROR, "conversion index out of range");
    return 0;
  }
  if ((status = mb_conversion_get(index, &info, &err))) {
    fail_result(result, MB_BENCH_ERROR, err.message);
    return 0;
  }
  if (!info.available) {
    fail_result(result, MB_BENCH_UNAVAILABLE,
                info.reason[0] ? info.reason : "not available here");
    return 0;
  }
  if (!(job->files->formats & (1u << def->format))) {
    fail_result(result, MB_BENCH_ERROR,
                mb__model_files_missing(job->files, def->format, message,
                                        sizeof message));
    return 0;
  }
  mb_device placed;
  if (!mb__conversion_place(&info, c->device, c->allow_device_override, &placed,
                            message, sizeof message)) {
    fail_result(result, MB_BENCH_ERROR, message);
    return 0;
  }
  if (message[0])
    mb__result_add_warning(result, "%s", message);
  snprintf(result->device, sizeof result->device, "%s", device_name(placed));
  const mb_runtime *rt = mb__runtime_find(def->runtime);
  if (!rt || !rt->prepare || !rt->run) {
    snprintf(message, sizeof message, "runtime '%s' is not built in",
             def->runtime);
    fail_result(result, MB_BENCH_ERROR, message);
    return 0;
  }
  p->rt = rt;
  runtime_version(def->runtime, result->runtime_version,
                  sizeof result->runtime_version);

  mb_runtime_options options = {
      .threads = MB_MAX(c->threads, 1),
      .opt_level = def->opt_level,
      .parallel_execution = 0,
      .device = placed,
      .verbose = c->log_level >= MB_LOG_DEBUG,
      .profile_path = NULL,
      .precision = def->precision,
      .example_inputs = (const mb_tensor *const *)job->samples[0],
      .no_fallback = c->no_fallback,
      .conversion = def->name,
      .model_path = job->files->paths[def->format],
      .seed = c->seed,
      .trust_code = c->trust_code,
  };
  /* Runtimes that quantise the model themselves (PyTorch's int8)
   * calibrate on the data INT8_STATIC uses. */
  mb_tensor ***calibration = NULL;
  int n_calibration = 0;
  bool owned = false;
  if (def->format != MB_MODEL_FORMAT_ONNX &&
      def->precision == MB_PRECISION_INT8 &&
      (status = mb__calibration_batches(job, &calibration, &n_calibration,
                                        &owned, &err))) {
    fail_result(result, MB_BENCH_ERROR, err.message);
    goto done;
  }
  options.n_calibration = n_calibration;
  options.calibration = (const mb_tensor *const *const *)calibration;
  report(progress, "build");
  double build_t0 = mb__now();
  if ((status =
           mb__worker_build(job, def, rt, &options, result, &p->wb, &err))) {
    fail_result(result, MB_BENCH_ERROR, err.message);
    goto done;
  }
  p->build_step_ms = (mb__now() - build_t0) * 1e3;
  note_form_build(job, def, result);
  report(progress, "load");
  mb_host_set_error_detail(NULL);
  double t0 = mb__now();
  status = rt->prepare(p->wb.model ? p->wb.model : job->model,
                       p->wb.bytes ? p->wb.bytes : job->model_bytes,
                       p->wb.bytes ? p->wb.size : job->model_size, &options,
                       &p->session, &err);
  result->load_ms = (mb__now() - t0) * 1e3;
  if (!status) {
    p->sessions[0] = p->session;
    p->n_sessions = 1;
  }
  /* More sessions for a concurrent load run, from the same build. */
  for (int k = 1; !status && k < sessions_needed(c); k++) {
    status = rt->prepare(p->wb.model ? p->wb.model : job->model,
                         p->wb.bytes ? p->wb.bytes : job->model_bytes,
                         p->wb.bytes ? p->wb.size : job->model_size, &options,
                         &p->sessions[k], &err);
    if (status)
      mb__error_prefix(&err, status, "session %d of %d", k + 1,
                       sessions_needed(c));
    else
      p->n_sessions = k + 1;
  }
  mb__worker_build_prepared(&p->wb, result, status,
                            status ? err.message : NULL);
  if (result->cache_hit == 0 && result->build_ms > p->build_step_ms)
    p->build_step_ms = result->build_ms;
  mb__worker_build_done(&p->wb, c);
  if (status) {
    mb__error_prefix(&err, status, "preparing %s", def->name);
    fail_result(result, MB_BENCH_ERROR, err.message);
    take_detail(rt, result);
    for (int k = 0; k < p->n_sessions; k++)
      rt->release(p->sessions[k]);
    p->n_sessions = 0;
    p->session = NULL;
  }

done:
  mb__calibration_batches_free(calibration, n_calibration, job->n_inputs,
                               owned);
  return p->session != NULL;
}

/* Releases what worker_prepare made. */
static void worker_finish(const mb_bench_job *job, prepared *p) {
  mb__worker_build_done(&p->wb, job->config);
  for (int k = 0; k < p->n_sessions; k++)
    p->rt->release(p->sessions[k]);
  mb__worker_build_free(&p->wb);
  memset(p, 0, sizeof *p);
}

/* A conversion that compiles on the fly and compiled again in the timed
 * loop: those iterations timed compilation, not inference. */
static void note_recompiles(const mb_runtime *rt, void *session,
                            mb_bench_result *result) {
  if (!rt->recompiles || !session)
    return;
  result->recompiles = rt->recompiles(session);
  if (result->recompiles > 0)
    mb__result_add_warning(
        result,
        "recompiled %d time%s during the timed loop (guard failures or new "
        "input shapes): those iterations include compilation",
        result->recompiles, result->recompiles == 1 ? "" : "s");
}

/* What made the ONNX model: the "modelbench.exporter" metadata the Python
 * front writes into its exports, else the file's producer. */
static void note_exporter(const mb_model *model, mb_bench_result *result) {
  for (int i = 0; i < model->n_metadata; i++)
    if (model->metadata[i].key && model->metadata[i].value &&
        strcmp(model->metadata[i].key, "modelbench.exporter") == 0) {
      snprintf(result->exporter, sizeof result->exporter, "%s",
               model->metadata[i].value);
      return;
    }
  if (model->producer_name && model->producer_name[0])
    snprintf(result->exporter, sizeof result->exporter, "%s%s%s",
             model->producer_name,
             model->producer_version && model->producer_version[0] ? " " : "",
             model->producer_version ? model->producer_version : "");
}

/* Cost per million inferences from the price of a core-hour, and a word
 * on the energy figure when other processes shared the package. */
static void note_cost_and_energy(const mb_bench_config *c, int n_sessions,
                                 double others_cores, mb_bench_result *result) {
  int cores = MB_MAX(c->threads, 1) * MB_MAX(n_sessions, 1);
  result->cost_per_million = mb__cost_per_million(c->price_per_core_hour, cores,
                                                  result->throughput_sps);
  if (result->energy.available && others_cores > MB_WARN_OTHERS_SLACK)
    mb__result_add_warning(result,
                           "energy: RAPL counts the whole package, and other "
                           "processes used %.1f cores while this was timed: "
                           "joules per inference include their work",
                           others_cores);
}

/* A conversion of another ONNX form than the model's graph (ONNX_DYNAMO:
 * the module's dynamo export): *local becomes job with that form's model
 * and bytes in place of the graph's, owned by *model_out and *bytes_out.
 * It must have the graph's inputs and outputs in number: the inputs and
 * the reference outputs are the graph's. */
static mb_status use_other_onnx_form(const mb_bench_job *job,
                                     mb_model_format format,
                                     mb_bench_job *local, mb_model **model_out,
                                     void **bytes_out, mb_error *err) {
  const char *path = job->files ? job->files->paths[format] : NULL;
  if (!path)
    return MB_STATUS_OK; /* worker_prepare says the form is missing */
  size_t size = 0;
  mb_status status = mb_model_load(path, model_out, err);
  if (!status)
    status = mb__read_file(path, bytes_out, &size, err);
  if (status)
    return mb__error_prefix(err, status, "the %s form",
                            mb_model_format_name(format));
  if (mb_model_input_count(*model_out) != job->n_inputs ||
      mb_model_output_count(*model_out) != job->n_outputs)
    return mb__error(
        err, MB_STATUS_SHAPE,
        "the %s form has %d inputs and %d outputs, the model %d "
        "and %d",
        mb_model_format_name(format), mb_model_input_count(*model_out),
        mb_model_output_count(*model_out), job->n_inputs, job->n_outputs);
  *local = *job;
  local->model = *model_out;
  local->model_bytes = *bytes_out;
  local->model_size = size;
  return MB_STATUS_OK;
}

void mb__worker_run_conversion(const mb_bench_job *job, int index,
                               const mb_progress_sink *progress, int send_fd,
                               mb_bench_result *result) {
  mb_error err = {MB_STATUS_OK, ""};
  mb_status status = MB_STATUS_OK;
  prepared p;
  mb_bench_job other;
  mb_model *other_model = NULL;
  void *other_bytes = NULL;
  const mb_conversion_def *def = mb__conversion_def(index);

  memset(&p, 0, sizeof p);
  result->status = MB_BENCH_OK;
  result->max_abs_err = -1.0;
  result->cache_hit = -1;
  result->recompiles = -1;
  result->build_ms = -1.0;
  result->precision_share = -1.0;
  result->cost_per_million = -1.0;
  result->cold.iterations_to_steady = -1;
  result->cold.build_hit_ms = -1.0;
  if (def && def->format == MB_MODEL_FORMAT_ONNX_DYNAMO) {
    if ((status = use_other_onnx_form(job, def->format, &other, &other_model,
                                      &other_bytes, &err))) {
      fail_result(result, MB_BENCH_ERROR, err.message);
      goto done;
    }
    if (other_model)
      job = &other;
  }
  if (def &&
      (def->format == MB_MODEL_FORMAT_ONNX ||
       def->format == MB_MODEL_FORMAT_ONNX_DYNAMO) &&
      job->files && (job->files->formats & (1u << def->format)))
    note_exporter(job->model, result);
  if (!worker_prepare(job, index, progress, result, &p))
    goto done;
  if (job->config->build_only) {
    result->status = MB_BENCH_BUILT; /* built and loaded; nothing is run */
    goto done;
  }
  result->cold.build_hit_ms = p.build_step_ms; /* the engine judges */
  mb_cpu_window timed;
  mb__cpu_window_start(&timed);
  if (job->config->load.scenario != MB_LOAD_NONE) {
    status = mb__load_measure(p.rt, p.sessions, p.n_sessions, job, progress,
                              result, &err);
    snprintf(result->energy.unavailable, sizeof result->energy.unavailable,
             "not measured in load scenarios: only bench's timed loop");
  } else {
    status = mb__measure(p.rt, p.session, job, progress, result, &err);
  }
  double others_cores = mb__cpu_window_others(&timed);
  if (status)
    goto failed;
  note_cost_and_energy(job->config, p.n_sessions, others_cores, result);
  /* Realistic phases come after the steady state, outside its CPU window,
   * on the session it warmed. */
  if (job->config->load.scenario == MB_LOAD_NONE &&
      (status =
           mb__measure_realistic(p.rt, p.session, job, progress, result, &err)))
    goto failed;
  note_recompiles(p.rt, p.session, result);
  report(progress, "accuracy");
  if ((status = check_accuracy(p.rt, p.session, job, p.def, result, &err)))
    goto failed;
  if (job->config->segments && p.rt->hybrid && p.rt->profile_reset &&
      p.rt->profile_collect) {
    report(progress, "segments");
    if ((status = collect_segments(p.rt, p.session, job, result, &err)))
      goto failed;
  }
  mb__result_add_stat_warnings(result, &job->machine, others_cores,
                               MB_MAX(job->config->threads, 1) * p.n_sessions);
  goto done;

failed:
  fail_result(result, MB_BENCH_ERROR, err.message);
  take_detail(p.rt, result);
done:
  result->peak_rss_mb = mb__peak_rss_mb();
  send_result(send_fd, result);
  worker_finish(job, &p);
  mb_model_free(other_model);
  free(other_bytes);
}

/* Reads and parses the conversion's model file as a process starting cold
 * would; its milliseconds, or -1 when it has no file of its own. */
static double model_read_ms(const mb_bench_job *job,
                            const mb_conversion_def *def) {
  const char *path = job->files ? job->files->paths[def->format] : NULL;
  void *bytes = NULL;
  size_t size = 0;
  mb_model *model = NULL;
  mb_error err = {MB_STATUS_OK, ""};
  if (!path || !path[0])
    return -1.0;
  bool onnx = def->format == MB_MODEL_FORMAT_ONNX ||
              def->format == MB_MODEL_FORMAT_ONNX_DYNAMO;
  double t0 = mb__now();
  mb_status status = onnx ? mb_model_load(path, &model, &err)
                          : mb__read_file(path, &bytes, &size, &err);
  double ms = (mb__now() - t0) * 1e3;
  mb_model_free(model);
  free(bytes);
  return status ? -1.0 : ms;
}

void mb__worker_cold_miss(const mb_bench_job *job, int index,
                          const mb_progress_sink *progress, int send_fd,
                          mb_bench_result *result) {
  mb_bench_job local = *job, other;
  mb_bench_config config = *job->config;
  const mb_conversion_def *def = mb__conversion_def(index);
  mb_model *other_model = NULL;
  void *other_bytes = NULL;
  mb_error err = {MB_STATUS_OK, ""};
  prepared p;
  memset(&p, 0, sizeof p);
  config.rebuild = 1; /* always: the miss */
  local.config = &config;
  result->status = MB_BENCH_OK;
  result->cache_hit = -1;
  result->build_ms = -1.0;
  result->cold.build_miss_ms = -1.0;
  result->cold.model_read_ms = def ? model_read_ms(job, def) : -1.0;
  /* The form the run builds, as mb__worker_run_conversion picks it: the
   * miss must fill the build the run then hits. */
  if (def && def->format == MB_MODEL_FORMAT_ONNX_DYNAMO &&
      use_other_onnx_form(&local, def->format, &other, &other_model,
                          &other_bytes, &err)) {
    fail_result(result, MB_BENCH_ERROR, err.message);
    goto done;
  }
  if (other_model)
    local = other;
  if (worker_prepare(&local, index, progress, result, &p))
    result->cold.build_miss_ms = p.build_step_ms;
done:
  send_result(send_fd, result);
  worker_finish(&local, &p);
  mb_model_free(other_model);
  free(other_bytes);
}

/* The reference outputs from a conversion (EAGER for a PyTorch model):
 * prepared as when benchmarked, but without the build cache, so that the
 * benchmark's own build statistics stay its own. */
static mb_status conversion_reference(const mb_bench_job *job,
                                      mb_tensor **outputs_out, mb_error *err) {
  mb_bench_job local = *job;
  mb_bench_config config = *job->config;
  mb_bench_result result;
  prepared p;
  mb_status status = MB_STATUS_OK;
  config.build_cache = 0;
  local.config = &config;
  memset(&result, 0, sizeof result);
  if (!worker_prepare(&local, job->reference_conversion, NULL, &result, &p)) {
    status = mb__error(err, MB_STATUS_UNAVAILABLE, "%s", result.error);
    goto done;
  }
  int n = MB_MAX(job->n_reference, 1);
  for (int k = 0; k < n && !status; k++) {
    status =
        p.rt->run(p.session, (const mb_tensor *const *)job->samples[k], err);
    if (!status)
      status =
          p.rt->fetch_outputs(p.session, outputs_out + k * job->n_outputs, err);
    if (status && n > 1)
      mb__error_prefix(err, status, "sample %d", k);
  }
done:
  worker_finish(&local, &p);
  mb__result_clear(&result);
  return status;
}

mb_status mb__worker_reference(const mb_bench_job *job, mb_tensor **outputs_out,
                               mb_error *err) {
  int n = MB_MAX(job->n_reference, 1);
  for (int i = 0; i < n * job->n_outputs; i++)
    outputs_out[i] = NULL;
  if (job->reference_conversion >= 0)
    return conversion_reference(job, outputs_out, err);
  const mb_runtime *rt = mb__runtime_find("reference");
  mb_runtime_options options = {.threads = MB_MAX(job->config->threads, 1),
                                .opt_level = MB_GRAPH_OPT_DISABLED,
                                .device = MB_DEVICE_CPU};
  void *session = NULL;
  mb_status status;
  if (!rt)
    return mb__error(err, MB_STATUS_INTERNAL,
                     "the reference runtime is not registered");
  if ((status = rt->prepare(job->model, job->model_bytes, job->model_size,
                            &options, &session, err)))
    return status;
  for (int k = 0; k < n && !status; k++) {
    status = rt->run(session, (const mb_tensor *const *)job->samples[k], err);
    if (!status)
      status =
          rt->fetch_outputs(session, outputs_out + k * job->n_outputs, err);
    if (status && n > 1)
      mb__error_prefix(err, status, "sample %d", k);
  }
  rt->release(session);
  return status;
}
