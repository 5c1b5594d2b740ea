/* Internals of the benchmark engine, shared by its files and by no other
 * folder (tools/check_layers.py holds every folder to that; what the layers
 * above use is bench.h):
 *
 *   engine.c   the parent: plans the run, materialises inputs, spawns one
 *              worker per conversion, collects results, fills the report.
 *   worker.c   the child side: availability, log redirection, crash
 *              handlers, prepare/measure/accuracy.
 *   wire.c     the wire format that carries results, progress and
 *              reference outputs over the pipe between them (wire.h).
 *   measure.c  the measurement loop (first run, warm-up, timed iterations).
 *   load.c     load scenarios instead (single-stream, server with seeded
 *              Poisson arrivals, offline; find-peak; validity).
 *   stats.c    latency statistics and result warnings.
 *   machine.c  CPU model, cores, ISA flags, OS, governor, load average.
 *   run_logs.c the log folder of a run that names none, and its pruning.
 *
 * The parent never calls into a runtime: it only reads conversion rows
 * (mb__conversion_def) and the model IR. */
#ifndef MB_BENCH_BENCH_INTERNAL_H
#define MB_BENCH_BENCH_INTERNAL_H

#include "bench/bench.h"
#include "bench/wire.h"
#include "conversions/conversion.h"
#include "core/stats.h"
#include "runtime/runtime.h"

/* ---- statistics (stats.c) ---- */

/* Mean, median, min, max, p90/p95/p99, sample standard deviation (n - 1)
 * and CV of n samples (borrowed, any order). n == 0 gives all zeros. */
mb_status mb__latency_stats(const double *samples, int64_t n,
                            mb_latency_stats *stats_out, mb_error *err);

/* Appends a formatted warning to result->warnings. */
mb_status mb__result_add_warning(mb_bench_result *result, const char *fmt, ...)
    MB_PRINTF(2, 3);

/* Adds the warnings a reader needs to trust an ok result's figures: high
 * variance (CV > 5%), a p99 from fewer than 100 iterations, a CPU
 * frequency governor other than `performance`, a busy machine (the load
 * average at the start of the run). machine: borrowed. */
/* The "fresh memory" warning of a timed phase that took `faults` minor page
 * faults over result->iterations inferences, each costing fault_us
 * (mb__page_fault_us; measure.c calls it once the latency statistics are
 * in): said when each inference faults in at least MB_WARN_FAULT_PAGES
 * pages and their estimated kernel time is past MB_WARN_FAULT_SHARE of the
 * median, i.e. when the runtime's allocator hands memory back to the OS
 * and takes it again every run. */
mb_status mb__result_add_fault_warning(mb_bench_result *result,
                                       long long faults, double fault_us);
/* The warnings every ok result gets from its statistics and the machine.
 * others_cores: what other processes used while it was timed
 * (mb__cpu_window_others), -1 when unknown; own_threads: the threads the
 * run itself keeps busy (threads x sessions). The machine is busy when the
 * others did not fit in the cores the run left free (with
 * MB_WARN_OTHERS_SLACK of a core for daemons); without a measurement, when the
 * load average at the start of the run was within half a core of the core
 * count. */
mb_status mb__result_add_stat_warnings(mb_bench_result *result,
                                       const mb_machine_info *machine,
                                       double others_cores, int own_threads);

/* Thresholds of the warnings above, also used by the tests. */
#define MB_WARN_CV 0.05
#define MB_WARN_P99_MIN_ITERATIONS 100
#define MB_WARN_FAULT_PAGES 16
#define MB_WARN_FAULT_SHARE 0.05
#define MB_WARN_OTHERS_SLACK 0.25

/* ---- GPUs (gpu_timing.c) ---- */

/* A conversion's GPU side while measure.c times it: the session's device,
 * NVML's sampler over the timed phase, each timed call's device time. */
typedef struct mb_gpu_timing {
  int on; /* the session runs on a GPU */
  struct mb_gpu_sampler *sampler;
  double *compute_ms; /* per timed call, < 0 unknown; grown with the loop */
  int64_t cap;
} mb_gpu_timing;

/* Before the timed loop: is the session on a GPU (device "cuda" and the
 * runtime describes it), and if so the sampler started. Never fails: a
 * GPU's state that cannot be sampled says why in the result. */
void mb__gpu_timing_begin(const mb_runtime *rt, void *session,
                          mb_bench_result *result, mb_gpu_timing *t);
/* After timed call i (0-based), outside the timed region: its device time. */
void mb__gpu_timing_note(const mb_runtime *rt, void *session, int64_t i,
                         mb_gpu_timing *t);
/* After the loop (n timed calls): the sampler stopped, the device
 * described, the device times' statistics, the copies timed on sample
 * `inputs`, host latency, the state's warnings. Fails only when out of
 * memory; frees what begin took either way. */
mb_status mb__gpu_timing_end(const mb_runtime *rt, void *session,
                             const mb_tensor *const *inputs, int64_t n,
                             mb_bench_result *result, mb_gpu_timing *t,
                             mb_error *err);
/* After a failed loop: the sampler stopped, what begin took freed. */
void mb__gpu_timing_abort(mb_gpu_timing *t);
/* How many copies each way gpu_timing_end times. */
#define MB_GPU_COPIES 50

/* ---- cold start (stats.c) ---- */

/* Iterations before latency settled, from a run's latencies in order (the
 * first run, the warm-up's, then the timed ones): the smallest s such that
 * series[s] is within MB_STEADY_TOLERANCE of steady_ms (the timed phase's
 * median) and so is the median of every window of MB_STEADY_WINDOW
 * consecutive latencies starting at s or later. A lone slow iteration
 * inside a window does not move its median; one at s does. -1 when no s
 * fits (or n < MB_STEADY_WINDOW, or steady_ms <= 0). */
#define MB_STEADY_WINDOW 5
#define MB_STEADY_TOLERANCE 0.10
/* Timed latencies the series keeps after the warm-up's: a late hiccup of a
 * long run says nothing about warming up. */
#define MB_STEADY_TIMED 100
int64_t mb__steady_iterations(const double *series, int64_t n,
                              double steady_ms);

/* ---- energy and cost (energy.c) ---- */

#define MB_ENERGY_MAX_DOMAINS 8
/* RAPL package counters read at the start of a window. */
typedef struct mb_energy_window {
  int ok; /* 0: unavailable says why */
  int n;
  struct {
    char zone[32]; /* first: the zones sort by name */
    unsigned long long before_uj, range_uj;
  } domains[MB_ENERGY_MAX_DOMAINS];
  char unavailable[192];
} mb_energy_window;
/* Reads every package zone's energy_uj under /sys/class/powercap
 * ($MODELBENCH_POWERCAP_DIR when set). */
void mb__energy_start(mb_energy_window *w);
/* Reads them again: *out gets the joules since the start and per
 * inference (over `inferences`, iterations x batch), or why not. */
void mb__energy_stop(const mb_energy_window *w, int64_t inferences,
                     mb_energy *out);
/* One counter's microjoules from before to after, once wrapped past range
 * (max_energy_range_uj) to 0 when after < before. */
double mb__energy_delta_uj(unsigned long long before, unsigned long long after,
                           unsigned long long range);
/* price x cores x (1 / throughput_sps) / 3600 x 1e6: what a million
 * inferences cost; -1 without a price, a core or a throughput. */
double mb__cost_per_million(double price_per_core_hour, int cores,
                            double throughput_sps);

/* ---- run log folders (run_logs.c) ---- */

/* How many runs' log folders <cache>/logs keeps, and how long (seconds
 * since last touched) a folder is spared whatever its rank. */
#define MB_RUN_LOGS_KEEP 20
#define MB_RUN_LOGS_GRACE_S 3600

/* Creates the log folder of a run whose caller named none:
 * <cache>/logs/run-<UTC time>-XXXXXX (cache_override: a config's cache_dir,
 * borrowed, NULL for the default), after removing the oldest runs' folders
 * past MB_RUN_LOGS_KEEP; $TMPDIR/modelbench-logs-... when the cache folder
 * cannot be had. buf: caller-owned, receives the path. */
mb_status mb__run_logs_create(const char *cache_override, char *buf,
                              size_t size, mb_error *err);

/* Removes run-* folders of `logs` (borrowed) past the newest `keep`, oldest
 * first, sparing any touched within MB_RUN_LOGS_GRACE_S. */
void mb__run_logs_prune(const char *logs, int keep);

/* ---- machine (machine.c) ---- */

/* Fills info from /proc, sysconf, uname and sysfs; unknown fields stay "",
 * 0 or -1 (load average). Never fails. */
void mb__machine_info(mb_machine_info *info);

/* ---- environment (environment.c) ---- */

/* Fills env with what besides the machine changes speed: CPU flags' hash,
 * governor, SMT, kernel, affinity, OpenBLAS's build and the variables of
 * environ that runtimes read (mb__environment_variable_matters), their
 * strings in arena. A fact that cannot be read says why. Fails only when
 * the arena is out of memory. */
mb_status mb__environment_capture(mb_environment *env, mb_arena *arena,
                                  mb_error *err);
/* 16 hex digits of the sha256 of /proc/cpuinfo's flags line; "" none. */
void mb__cpu_flags_sha256(char out[17]);
/* mb__calibrate through the calibration cache (calibration_cache.c):
 * the ranges of a model that `source` became after `passes_before`
 * ("optimize"), over these batches with opt's method and activations, read
 * from <cache>/calibration when config->build_cache and an earlier build
 * calibrated alike (*hit_out true), else calibrated and kept there.
 * config may be NULL (no cache). *params_out: release with
 * mb__quant_params_free. */
struct mb_quant_options;
struct mb_quant_params;
mb_status mb__calibrate_cached(const mb_bench_config *config,
                               const mb_model *source,
                               const char *passes_before, const mb_model *model,
                               const mb_tensor *const *const *batches,
                               int n_batches, int n_inputs,
                               const struct mb_quant_options *opt,
                               struct mb_quant_params **params_out,
                               bool *hit_out, mb_error *err);
/* The sha256 of a file's bytes as 64 hex digits (model_files.c). Fails
 * with mb__read_file's status naming the path. */
mb_status mb__file_sha256(const char *path, char hex[65], mb_error *err);
/* The CPUs this process may run on (its affinity mask: taskset, a
 * cgroup's cpuset), else the online ones; at least 1. */
int mb__cpus_allowed(void);
/* Whether an environment variable of this name changes how fast a run
 * goes (OMP_*, MKL_*, ..., LD_PRELOAD): the prefix table of environment.c. */
bool mb__environment_variable_matters(const char *name, size_t len);

/* Peak resident set size of this process in MB since the last
 * mb__peak_rss_reset (VmHWM, or getrusage's ru_maxrss). */
double mb__peak_rss_mb(void);
/* Resets the peak RSS to the current RSS where the kernel allows it
 * (/proc/self/clear_refs "5"), so a worker reports its own peak and not
 * the parent's before the fork. Returns 0 when it could not. */
int mb__peak_rss_reset(void);

/* mb__now(): core/internal.h */
/* CPU time (user + system, all threads) of this process in seconds. */
double mb__cpu_time(void);
/* What other processes took of the machine's CPUs over a window, e.g.
 * the timed phase: machine-wide busy time (/proc/stat) less this
 * process's own (all its threads). The load average cannot tell this: it
 * counts this process's own threads, and as a one-minute average it still
 * holds the previous conversion's or build's work when a run starts. */
typedef struct mb_cpu_window {
  double wall, own, busy; /* at the start; busy -1 when unknown */
} mb_cpu_window;
#define MB_CPU_WINDOW_MIN_S 0.2
void mb__cpu_window_start(mb_cpu_window *w);
/* Cores' worth of CPU that other processes used since the start (0 when
 * none), or -1 when unknown: no /proc/stat, or a window shorter than
 * MB_CPU_WINDOW_MIN_S. */
double mb__cpu_window_others(const mb_cpu_window *w);
/* CPU seconds the hypervisor took from this machine's CPUs since boot
 * (/proc/stat's steal, all CPUs; 0 on bare metal), -1 when unknown. */
double mb__steal_seconds(void);
/* Minor page faults of this process so far (getrusage), -1 when unknown. */
long long mb__minor_faults(void);
/* What one minor fault on fresh anonymous memory costs here, in
 * microseconds: the best of a few rounds of mapping, touching and
 * unmapping 64 pages (~0.3 us on bare metal, ~10 us in some VMs). 0 when
 * it cannot be measured. Takes up to a few ms. */
double mb__page_fault_us(void);

/* ---- the model in its forms (model_files.c) ---- */

/* A model file opened for a benchmark: an ONNX file, a TorchScript
 * archive or a model manifest (docs/model-manifest.md). */
typedef struct mb_model_files {
  /* The IR: the ONNX graph when the model has one, else an opaque model
   * (declared inputs and outputs, no nodes). Owned. */
  mb_model *model;
  void *onnx_bytes; /* the ONNX file's bytes, or NULL */
  size_t onnx_size;
  unsigned formats;                   /* 1u << mb_model_format offered */
  char *paths[MB_MODEL_FORMAT_COUNT]; /* each format's file, or NULL */
  /* Why a manifest lacks a format (its ONNX export failed: the exporter's
   * message), or NULL. */
  char *errors[MB_MODEL_FORMAT_COUNT];
  /* A manifest form's build record, when it says one (the Python front's
   * export: its milliseconds, 0 on a cache hit, and whether it was one):
   * `built` is a mask of (1u << format) with build_ms set; cache_hit is -1
   * where unknown. */
  unsigned built;
  double build_ms[MB_MODEL_FORMAT_COUNT];
  int cache_hit[MB_MODEL_FORMAT_COUNT];
  char *reference; /* the manifest's reference conversion, or NULL */
  char name[128];  /* the manifest's name, else the file's stem */
  char sha256[65]; /* identity: the manifest's, else the file's */
  /* A manifest's "content_sha256" (the module's code and weights, when its
   * "sha256" leaves the weights out: a script's model hash), else "". */
  char content_sha256[65];
  /* A manifest's "inputs_dir" (resolved against the manifest), used when
   * config->inputs_dir is not set; or NULL. */
  char *inputs_dir;
  /* A manifest's "source": the script that ran the model, where it was
   * built ("file:line") and the script's labels ("key=value"); NULL or
   * empty when not said. */
  char *script;
  char *location;
  char **labels;
  int n_labels;
} mb_model_files;

/* Opens `path`. A TorchScript file takes its inputs from
 * config->shapes (all float32; each --shape names one argument of
 * forward(), in order). Fails with a message naming the file (and for a
 * manifest the line, column and key at fault). f: caller storage, release
 * with mb__model_files_close (also after a failure). */
mb_status mb__model_files_open(const char *path, const mb_bench_config *config,
                               mb_model_files *f, mb_error *err);
void mb__model_files_close(mb_model_files *f);
/* Why a conversion of `format` cannot run on this model, into buf. */
const char *mb__model_files_missing(const mb_model_files *f,
                                    mb_model_format format, char *buf,
                                    size_t size);

/* ---- the job every worker shares ---- */

typedef struct mb_bench_job {
  const mb_model *model;       /* parsed once in the parent: files->model */
  const mb_model_files *files; /* the model's forms */
  const char *model_path;      /* as given; recorded with cached builds */
  const void *model_bytes;     /* the model file's bytes */
  size_t model_size;
  const mb_bench_config *config; /* effective, validated */
  int n_inputs, n_outputs;
  int64_t n_samples;
  mb_tensor ***samples; /* [n_samples][n_inputs], all materialised */
  int batch_size;       /* of one sample, for throughput */
  /* Reference outputs of the first n_reference samples (at most
   * MB_MAX_EVAL_SAMPLES): n_reference * n_outputs tensors, sample-major,
   * or NULL. Accuracy is checked on every one of them. */
  mb_tensor **reference;
  int n_reference;
  char reference_note[MB_ERROR_MESSAGE_SIZE]; /* why NULL, else "" */
  /* What the reference outputs come from: -1 the reference interpreter,
   * else a registry index (EAGER for a PyTorch model). Its name. */
  int reference_conversion;
  char reference_name[64];
  /* Labels for task accuracy (config->labels_path): one class per row of
   * the samples, in order; n_labels rows, or NULL. */
  int64_t *labels;
  int64_t n_labels;
  /* The model is pre-quantised (analysis/quantization.h): every
   * conversion's outputs are judged by the cosine criterion. */
  bool model_quantized;
  mb_machine_info machine;
  /* When the parent kills this worker (mb__now() clock), 0 for never:
   * long searches (find-peak) stop in time. */
  double deadline;
} mb_bench_job;

/* Progress sink of the measurement loop: the worker forwards to the pipe
 * (isolated) or straight to config->on_progress (in-process). */
typedef struct mb_progress_sink {
  void (*fn)(void *ctx, const char *phase, int64_t iterations,
             double elapsed_s);
  void *ctx;
} mb_progress_sink;

/* ---- the build step (build.c) ---- */

typedef struct mb_worker_build {
  struct mb_build *build; /* held (locked) until mb__worker_build_done */
  void *bytes;            /* a model to prepare from instead, or NULL */
  size_t size;
  mb_model *model; /* the converted model (conversions with steps), or NULL */
  /* Static quantisation parameters for the engines' int8 (conversions
   * with the quant_params step), or NULL. options->quant_params points
   * here. */
  struct mb_quant_params *params;
  /* A host runtime's build in progress (a miss): its prepare converts and
   * saves into the build folder, then mb__worker_build_prepared ends it. */
  int host_pending;
  double host_t0;
} mb_worker_build;

/* Before prepare, when config->build_cache: finds or makes the
 * conversion's build in the cache and fills result->cache_hit, build_ms,
 * build_id, build_reason. It may switch options (ORT: optimisations off)
 * and give wb->bytes to prepare from (ORT's optimised model). Trouble with
 * the cache is a warning on result, never a failure, except a missing
 * build under --rebuild never (MB_STATUS_NOT_FOUND). job, def, rt:
 * borrowed. wb: caller storage, released with mb__worker_build_done after
 * prepare. */
struct mb_conversion_def;
mb_status mb__worker_build(const mb_bench_job *job,
                           const struct mb_conversion_def *def,
                           const mb_runtime *rt, mb_runtime_options *options,
                           mb_bench_result *result, mb_worker_build *wb,
                           mb_error *err);
/* Right after prepare (status: prepare's; error: its message or NULL):
 * ends a host runtime's build in progress, ok with the files its prepare
 * saved in the build folder as artifacts, or failed with the error. A
 * host conversion that saved nothing reuses nothing: result->cache_hit is
 * then -1 and build_ms unknown. */
void mb__worker_build_prepared(mb_worker_build *wb, mb_bench_result *result,
                               mb_status status, const char *error);
/* After prepare: --lean-cache drops the artifacts, then the lock is
 * released. The converted model stays (the session borrows it). */
void mb__worker_build_done(mb_worker_build *wb, const mb_bench_config *c);
/* After the session is released: frees the converted model and bytes. */
void mb__worker_build_free(mb_worker_build *wb);
/* The batches static int8 calibrates on: config->calibration_dir when
 * set, else the user's inputs (--inputs, a loader), else
 * config->calibration_samples generated batches (seeded apart from the
 * evaluation inputs). *batches_out: *n_out arrays of job->n_inputs
 * tensors; free with mb__calibration_batches_free(..., *owned_out), also
 * after a failure. */
mb_status mb__calibration_batches(const mb_bench_job *job,
                                  mb_tensor ****batches_out, int *n_out,
                                  bool *owned_out, mb_error *err);
void mb__calibration_batches_free(mb_tensor ***batches, int n, int n_inputs,
                                  bool owned);
/* Applies def->steps (graph passes, quantisation with calibration) to a
 * copy of job->model: the serialised result in *bytes_out (malloc, caller
 * frees), a one-line summary, and for static quantisation (quantize_static
 * or quant_params) the parameters written to quant_path when non-NULL and
 * returned in *params_out when that is non-NULL (caller frees with
 * mb__quant_params_free; NULL when no step made any). The quant_params
 * step calibrates and works out the parameters a quantize_static would
 * use, on a copy, leaving the model float: the native engines quantise
 * with them themselves. job->samples[0] gives the input
 * shapes; with config->inputs_dir or a loader, job->samples also serve as
 * calibration data. */
/* config->keep_float as part of a build key (bench/build.c):
 * ";keep_float=N sha256 H" over the sorted, distinct names, so that the same
 * set in another order is the same build; "" when the list is empty. */
void mb__keep_float_key(const mb_bench_config *config, char *out, size_t size);
/* Fails with MB_STATUS_NOT_FOUND naming the first name of
 * config->keep_float that no node of model has, with the nearest node
 * names; MB_STATUS_INVALID_ARGUMENT for an empty name. */
mb_status mb__keep_float_check(const mb_model *model,
                               const mb_bench_config *config, mb_error *err);
/* The int8 form of conversion def in this job (bench/build.c): W8, W7 or
 * MIXED (mb__int8_form for its runtime and config->int8_weights), with why
 * in reason; AUTO and "" when def does not quantise. reason may be NULL. */
mb_int8_weights mb__job_int8_form(const mb_bench_job *job,
                                  const mb_conversion_def *def, char *reason,
                                  size_t size);
mb_status mb__convert_for_job(const mb_bench_job *job,
                              const struct mb_conversion_def *def,
                              const char *quant_path,
                              struct mb_quant_params **params_out,
                              void **bytes_out, size_t *size_out, char *summary,
                              size_t ssize, mb_error *err);
/* mb_convert_model_file's model, in memory (convert.c): the bytes
 * `modelbench convert` would write to out_path (engines' int8 writes its
 * OUT.quant_params.json beside out_path, as convert does). *bytes_out:
 * malloc'd, the caller frees; untouched on failure. */
mb_status mb__convert_model_bytes(const char *model_path,
                                  const char *conversion,
                                  const mb_bench_config *config,
                                  const char *out_path, void **bytes_out,
                                  size_t *size_out, char *summary,
                                  size_t summary_size, mb_error *err);

/* ---- measurement (measure.c) ---- */

/* First run, warm-up and the timed loop on a prepared session. Fills
 * result: first_run_ms, iterations, samples_ms, inference_seconds,
 * elapsed_seconds, throughput_sps, latency_ms, batch_size. A failing run()
 * returns its status with the message (phase named). */
mb_status mb__measure(const mb_runtime *rt, void *session,
                      const mb_bench_job *job, const mb_progress_sink *progress,
                      mb_bench_result *result, mb_error *err);

/* ---- realistic phases (realistic.c) ---- */

/* The last-level cache of cpu0 in bytes, from sysfs; 32 MiB when unknown. */
int64_t mb__llc_bytes(void);

/* After mb__measure, on the same session: the fresh-inputs and cold-cache
 * phases the config asks for (none: returns at once), filling
 * result->fresh_inputs and result->cold_cache beside the steady state. */
mb_status mb__measure_realistic(const mb_runtime *rt, void *session,
                                const mb_bench_job *job,
                                const mb_progress_sink *progress,
                                mb_bench_result *result, mb_error *err);

/* ---- load scenarios (load.c) ---- */

/* find-peak bisects until the bracket is this close (share of the lower
 * end). */
#define MB_FIND_PEAK_PRECISION 0.02

/* The arrival times of a server run, in seconds from its start: seeded
 * exponential gaps of mean 1/qps (a Poisson process), until there are
 * min_queries arrivals and the last is at or past min_duration, none past
 * max_seconds (<= 0: no cap). The same seed gives the same draws at every
 * rate, so schedules at two rates are one pattern scaled. *arrivals_out:
 * *n_out entries, malloc'd (caller frees). */
mb_status mb__load_schedule(uint64_t seed, double qps, double min_duration,
                            int64_t min_queries, double max_seconds,
                            double **arrivals_out, int64_t *n_out,
                            mb_error *err);

/* The ideal FIFO queue: query i arrives at arrivals[i] (ascending) and
 * takes service[i]; `servers` servers, each query to the one free
 * earliest (Lindley's recursion for one server). latency_out[i]: its start
 * (the later of its arrival and that server's free time) plus its service
 * minus its arrival, in the inputs' unit. All arrays n entries; borrowed.
 * Fails with MB_STATUS_INVALID_ARGUMENT for servers < 1, or
 * MB_STATUS_OUT_OF_MEMORY. */
mb_status mb__load_ideal_queue(const double *arrivals, const double *service,
                               int64_t n, int servers, double *latency_out,
                               mb_error *err);

/* p50, p99 and max of values[0..n) (sorted in place); zeros when n <= 0. */
void mb__load_delay_summary(double *values, int64_t n, mb_load_delay_us *out);

/* The harness's delays of one query, in seconds: the generator's lateness
 * (issued - arrival) and the hand-off (start - max(issued, free), free
 * being when the session that ran it became free). */
double mb__load_lateness(double arrival, double issued);
double mb__load_handoff(double issued, double session_free, double start);

/* The server harness's spin margin (seconds) from a thread's timer
 * wake-ups: late[k] of them were late by [k, k + 1) * 10 us (the last bin:
 * later), `wakeups` in all. The p99.5 bin's upper edge plus 50 us, within
 * [50, 250] us; 200 us while fewer than 64 are known (load.c). */
#define LOAD_WAKE_BINS 32
double mb__load_spin_margin(const uint32_t late[LOAD_WAKE_BINS],
                            int64_t wakeups);

/* First run, warm-up of every session, then the run (or the find-peak
 * search) of job->config->load on the n_sessions prepared sessions. Fills
 * result->load and, for the run (find-peak: the one proving the peak),
 * latency_ms, samples_ms, iterations, throughput_sps, elapsed_seconds,
 * inference_seconds, batch_size, first_run_ms. */
mb_status mb__load_measure(const mb_runtime *rt, void *const *sessions,
                           int n_sessions, const mb_bench_job *job,
                           const mb_progress_sink *progress,
                           mb_bench_result *result, mb_error *err);

/* ---- the worker (worker.c) ---- */

/* The cold start's miss (config->cold), before the conversion's run: the
 * model file read and parsed (result->cold.model_read_ms), then the
 * conversion built with the cache rebuilt and loaded (build_miss_ms: the
 * build step's wall time; load_ms). Sends result like
 * mb__worker_run_conversion; nothing is run. */
void mb__worker_cold_miss(const mb_bench_job *job, int index,
                          const mb_progress_sink *progress, int send_fd,
                          mb_bench_result *result);

/* Runs one conversion start to end in this process: availability, prepare,
 * measure, accuracy. Always fills result (status, error) and returns; never
 * exits. When `send_fd` >= 0 the result is written to it as soon as it
 * exists, before the session is released. index: registry index. */
void mb__worker_run_conversion(const mb_bench_job *job, int index,
                               const mb_progress_sink *progress, int send_fd,
                               mb_bench_result *result);

/* Samples the accuracy check covers (--n-samples beyond it are timed
 * only). */
#define MB_MAX_EVAL_SAMPLES 64

/* Computes the reference outputs of the first job->n_reference samples
 * with job->reference_conversion (the reference interpreter when < 0).
 * outputs_out: n_reference * n_outputs slots (sample-major) receiving new
 * tensors. */
mb_status mb__worker_reference(const mb_bench_job *job, mb_tensor **outputs_out,
                               mb_error *err);

/* Child-process setup: own process group, crash handlers writing the
 * signal name and backtrace to `backtrace_fd` (and stderr), stdout/stderr
 * to log_path ("" keeps them). Returns 0 on success. */
int mb__worker_child_setup(int backtrace_fd, const char *log_path);

#endif /* MB_BENCH_BENCH_INTERNAL_H */
