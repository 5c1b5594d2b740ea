/* This machine's peaks for the roofline (`modelbench machine`, each
 * result's mb_roofline): GEMM at each precision the CPU has and memory
 * bandwidth, at a thread count. Measured in a child process, so that the
 * parent of a bench run never starts OpenMP's or OpenBLAS's threads
 * before it forks its workers, and cached per CPU and thread count in
 * <cache>/machine/: measuring takes a few seconds, reading the file none. */
#include "runtime/peaks.h"
#include "bench/bench.h"
#include "bench/bench_internal.h"
#include "core/cache_dir.h"
#include "core/files.h"
#include "core/json_parse.h"
#include "core/json_write.h"
#include "ops/op.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The GEMMs are square, n x n by n x n: large enough that every kernel
 * runs at its steady state, small enough that a repetition at 2 threads
 * takes tens of milliseconds. */
#define PEAK_GEMM_N 1024
#define PEAK_GEMM_REPS 4
/* Triad arrays: each at least this, and twice the last-level cache, so
 * that every pass streams from memory; capped to spare a small machine. */
#define PEAK_STREAM_MIN_BYTES ((size_t)32 << 20)
#define PEAK_STREAM_MAX_BYTES ((size_t)128 << 20)
#define PEAK_STREAM_REPS 5
#define PEAKS_FOLDER "machine"

/* ---- measuring ---- */

static double best_sgemm_gflops(int threads) {
  const int64_t n = PEAK_GEMM_N;
  size_t cells = (size_t)n * (size_t)n;
  float *a = mb__aligned_alloc(cells * sizeof *a);
  float *b = mb__aligned_alloc(cells * sizeof *b);
  float *c = mb__aligned_alloc(cells * sizeof *c);
  mb_threadpool *pool = threads > 1 ? mb__threadpool_create(threads) : NULL;
  double best = 0.0;
  if (a && b && c && (threads <= 1 || pool)) {
    for (size_t i = 0; i < cells; i++) {
      a[i] = (float)(i % 7) * 0.125f;
      b[i] = (float)(i % 5) * 0.25f;
    }
    /* As the interpreter runs it: OpenBLAS at one thread, the product
     * split over the pool (ops/blas.c says why). */
    mb__blas_set_threads(1);
    for (int r = 0; r <= PEAK_GEMM_REPS; r++) {
      double t0 = mb__now();
      mb__sgemm(pool, false, false, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
      double s = mb__now() - t0;
      if (r > 0 && s > 0.0) /* repetition 0 warms up */
        best = MB_MAX(best, 2.0 * (double)n * n * n / s / 1e9);
    }
  }
  mb__threadpool_free(pool);
  mb__aligned_free(a);
  mb__aligned_free(b);
  mb__aligned_free(c);
  return best;
}

typedef struct triad_job {
  double *a;
  const double *b, *c;
  double scalar;
  size_t count;
  int chunks;
  bool init;
} triad_job;

static void triad_chunk(void *ctx, int64_t begin, int64_t end) {
  triad_job *t = ctx;
  size_t per = (t->count + (size_t)t->chunks - 1) / (size_t)t->chunks;
  size_t lo = (size_t)begin * per;
  size_t hi = MB_MIN((size_t)end * per, t->count);
  if (t->init) {
    /* First touch by the thread that streams it later (NUMA). */
    double *b = (double *)t->b, *c = (double *)t->c;
    for (size_t i = lo; i < hi; i++) {
      t->a[i] = 0.0;
      b[i] = 1.0;
      c[i] = 2.0;
    }
    return;
  }
  for (size_t i = lo; i < hi; i++)
    t->a[i] = t->b[i] + t->scalar * t->c[i];
}

static size_t last_level_cache_bytes(void) {
  size_t best = 0;
  for (int index = 0; index < 8; index++) {
    char path[96], text[32] = "";
    snprintf(path, sizeof path,
             "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
    FILE *f = fopen(path, "r");
    if (!f)
      break;
    if (fgets(text, sizeof text, f)) {
      char *end;
      unsigned long long v = strtoull(text, &end, 10);
      size_t unit = *end == 'K' ? 1024 : *end == 'M' ? 1024 * 1024 : 1;
      best = MB_MAX(best, (size_t)v * unit);
    }
    fclose(f);
  }
  return best;
}

/* STREAM's triad, a = b + s * c, over `threads` threads: 24 bytes moved
 * per element (two reads, one write; the write's allocating read is not
 * counted, as STREAM does not). */
static double triad_gbs(int threads) {
  size_t bytes = MB_MAX(2 * last_level_cache_bytes(), PEAK_STREAM_MIN_BYTES);
  bytes = MB_MIN(bytes, PEAK_STREAM_MAX_BYTES);
  size_t count = bytes / sizeof(double);
  triad_job t = {mb__aligned_alloc(bytes),
                 mb__aligned_alloc(bytes),
                 mb__aligned_alloc(bytes),
                 3.0,
                 count,
                 MB_MAX(threads, 1),
                 true};
  mb_threadpool *pool = threads > 1 ? mb__threadpool_create(threads) : NULL;
  double best = 0.0;
  if (t.a && t.b && t.c && (threads <= 1 || pool)) {
    mb__parallel_for(pool, t.chunks, triad_chunk, &t);
    t.init = false;
    for (int r = 0; r <= PEAK_STREAM_REPS; r++) {
      double t0 = mb__now();
      mb__parallel_for(pool, t.chunks, triad_chunk, &t);
      double s = mb__now() - t0;
      if (r > 0 && s > 0.0)
        best = MB_MAX(best, 3.0 * (double)bytes / s / 1e9);
    }
  }
  mb__threadpool_free(pool);
  mb__aligned_free(t.a);
  mb__aligned_free((double *)t.b);
  mb__aligned_free((double *)t.c);
  return best;
}

static bool has_flag(const char *flags, const char *flag) {
  size_t n = strlen(flag);
  for (const char *p = flags; (p = strstr(p, flag)) != NULL; p += n)
    if ((p == flags || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
      return true;
  return false;
}

void mb__peaks_measure(int threads, mb_machine_peaks *peaks) {
  memset(peaks, 0, sizeof *peaks);
  threads = MB_MAX(threads, 1);
  peaks->threads = threads;
  mb_machine_info machine;
  mb__machine_info(&machine);
  snprintf(peaks->cpu_model, sizeof peaks->cpu_model, "%s", machine.cpu_model);
  mb__cpu_flags_sha256(peaks->cpu_flags_sha256);

  mb_cpu_window window;
  mb__cpu_window_start(&window);
  peaks->fp32_gflops = best_sgemm_gflops(threads);
  snprintf(peaks->fp32_source, sizeof peaks->fp32_source, "openblas sgemm");
  mb_error err = {MB_STATUS_OK, ""};
  double gflops = 0.0;
  if (mb__dn_gemm_gflops(MB_PRECISION_FP32, threads, PEAK_GEMM_N,
                         PEAK_GEMM_REPS, &gflops, &err) == MB_STATUS_OK &&
      gflops > peaks->fp32_gflops) {
    peaks->fp32_gflops = gflops;
    snprintf(peaks->fp32_source, sizeof peaks->fp32_source, "onednn matmul");
  }
  err.message[0] = '\0';
  if (mb__dn_gemm_gflops(MB_PRECISION_INT8, threads, PEAK_GEMM_N,
                         PEAK_GEMM_REPS, &peaks->int8_gops, &err))
    snprintf(peaks->int8_note, sizeof peaks->int8_note, "%s", err.message);
  /* oneDNN emulates bf16 on other AVX-512 CPUs; an emulated figure is no
   * peak of this machine. */
  if (!has_flag(machine.isa_flags, "avx512_bf16") &&
      !has_flag(machine.isa_flags, "amx_bf16")) {
    snprintf(peaks->bf16_note, sizeof peaks->bf16_note,
             "not supported by this CPU: no avx512_bf16/amx_bf16");
  } else {
    err.message[0] = '\0';
    if (mb__dn_gemm_gflops(MB_PRECISION_BF16, threads, PEAK_GEMM_N,
                           PEAK_GEMM_REPS, &peaks->bf16_gflops, &err))
      snprintf(peaks->bf16_note, sizeof peaks->bf16_note, "%s", err.message);
  }
  peaks->bandwidth_gbs = triad_gbs(threads);
  peaks->measured_at = (double)time(NULL);
  /* Peaks taken while other processes held the cores are low: say so
   * (the note is kept in the cache; --remeasure replaces it). */
  double others = mb__cpu_window_others(&window);
  if (machine.cores > 0 &&
      others > machine.cores - threads + MB_WARN_OTHERS_SLACK)
    snprintf(peaks->note, sizeof peaks->note,
             "measured while other processes used %.1f of %d cores: these "
             "peaks are low; measure again on an idle machine (modelbench "
             "machine --remeasure)",
             others, machine.cores);
  peaks->measured = peaks->fp32_gflops > 0.0 && peaks->bandwidth_gbs > 0.0;
  if (!peaks->measured)
    snprintf(peaks->note, sizeof peaks->note,
             "measuring failed: fp32 %.3g GFLOP/s, bandwidth %.3g GB/s",
             peaks->fp32_gflops, peaks->bandwidth_gbs);
}

/* ---- JSON ---- */

typedef enum peak_field_kind {
  FIELD_INT,
  FIELD_DOUBLE,
  FIELD_TEXT
} peak_field_kind;

/* The peaks' keys in the order they are written (docs/json-schema.md,
 * "peaks"); from_cache is the reader's, not the file's. */
#define PEAK_FIELD_LIST(X)                                                     \
  X(measured, FIELD_INT)                                                       \
  X(threads, FIELD_INT)                                                        \
  X(fp32_gflops, FIELD_DOUBLE)                                                 \
  X(fp32_source, FIELD_TEXT)                                                   \
  X(int8_gops, FIELD_DOUBLE)                                                   \
  X(int8_note, FIELD_TEXT)                                                     \
  X(bf16_gflops, FIELD_DOUBLE)                                                 \
  X(bf16_note, FIELD_TEXT)                                                     \
  X(bandwidth_gbs, FIELD_DOUBLE)                                               \
  X(cpu_model, FIELD_TEXT)                                                     \
  X(cpu_flags_sha256, FIELD_TEXT)                                              \
  X(measured_at, FIELD_DOUBLE)                                                 \
  X(from_cache, FIELD_INT)                                                     \
  X(note, FIELD_TEXT)

static const struct peak_field {
  const char *key;
  peak_field_kind kind;
  size_t offset, size;
} peak_fields[] = {
#define MB_X(name, kind)                                                       \
  {#name, kind, offsetof(mb_machine_peaks, name),                              \
   sizeof(((mb_machine_peaks *)0)->name)},
    PEAK_FIELD_LIST(MB_X)
#undef MB_X
};

void mb__peaks_write_json(mb_json *j, const mb_machine_peaks *peaks) {
  const char *base = (const char *)peaks;
  mb__json_object_begin(j);
  for (size_t i = 0; i < MB_ARRAY_COUNT(peak_fields); i++) {
    const struct peak_field *f = &peak_fields[i];
    if (f->kind == FIELD_INT)
      mb__json_kv_int(j, f->key, *(const int *)(base + f->offset));
    else if (f->kind == FIELD_DOUBLE)
      mb__json_kv_double(j, f->key, *(const double *)(base + f->offset));
    else
      mb__json_kv_string(j, f->key, base + f->offset);
  }
  mb__json_object_end(j);
}

mb_status mb__peaks_read_json(const mb_json_value *v, const char *path,
                              mb_machine_peaks *peaks, mb_error *err) {
  memset(peaks, 0, sizeof *peaks);
  if (!v || v->type != MB_JSON_OBJECT)
    return mb__json_value_error(err, path, v, "peaks: expected an object");
  char *base = (char *)peaks;
  for (size_t i = 0; i < MB_ARRAY_COUNT(peak_fields); i++) {
    const struct peak_field *f = &peak_fields[i];
    const mb_json_value *m = mb__json_find(v, f->key);
    if (!m || m->type == MB_JSON_NULL)
      continue; /* absent: 0 or "" (a report written before the key) */
    mb_json_type want = f->kind == FIELD_TEXT ? MB_JSON_STRING : MB_JSON_NUMBER;
    if (m->type != want)
      return mb__json_value_error(err, path, m, "peaks.%s: expected a %s",
                                  f->key, mb__json_type_name(want));
    if (f->kind == FIELD_INT)
      *(int *)(base + f->offset) = (int)m->number;
    else if (f->kind == FIELD_DOUBLE)
      *(double *)(base + f->offset) = m->number;
    else
      snprintf(base + f->offset, f->size, "%s", m->string);
  }
  return MB_STATUS_OK;
}

/* ---- the cache ---- */

static void peaks_file_name(char *buf, size_t size, const char *flags_sha256,
                            int threads) {
  snprintf(buf, size, "peaks-%s-t%d.json",
           flags_sha256[0] ? flags_sha256 : "noflags", threads);
}

/* The cached peaks when the file is there, parses and its key matches;
 * false otherwise (the caller measures again). */
static bool cache_read(const char *path, const mb_machine_peaks *key,
                       mb_machine_peaks *peaks) {
  mb_json_doc *doc = NULL;
  mb_error err = {MB_STATUS_OK, ""};
  bool ok =
      mb__json_parse_file(path, &doc, &err) == MB_STATUS_OK &&
      mb__peaks_read_json(&doc->root, path, peaks, &err) == MB_STATUS_OK &&
      peaks->measured && peaks->threads == key->threads &&
      strcmp(peaks->cpu_model, key->cpu_model) == 0 &&
      strcmp(peaks->cpu_flags_sha256, key->cpu_flags_sha256) == 0;
  mb__json_doc_free(doc);
  if (ok)
    peaks->from_cache = 1;
  return ok;
}

static mb_status cache_write(const char *folder, const char *name,
                             const mb_machine_peaks *peaks, mb_error *err) {
  int fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return mb__error(err, MB_STATUS_IO, "cannot open %s: %s", folder,
                     strerror(errno));
  mb_atomic_file af;
  mb_status status = mb__atomic_file_open(
      &af, fd, name, mb__private_file_mode(), "machine peaks", err);
  if (!status) {
    mb_json j;
    mb__json_init(&j, af.f, true);
    mb_machine_peaks copy = *peaks;
    copy.from_cache = 0;
    mb__peaks_write_json(&j, &copy);
    fputc('\n', af.f);
    status = mb__atomic_file_commit(&af, false, err);
  }
  close(fd);
  return status;
}

/* Measures in a child: it sends the struct back through a pipe. A child
 * that dies leaves peaks unmeasured, with a note. */
static mb_status measure_in_child(int threads, mb_machine_peaks *peaks,
                                  mb_error *err) {
  int fds[2];
  if (pipe(fds) != 0)
    return mb__error(err, MB_STATUS_IO, "machine peaks: pipe: %s",
                     strerror(errno));
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(fds[0]);
    close(fds[1]);
    return mb__error(err, MB_STATUS_IO, "machine peaks: fork: %s", strerror(e));
  }
  if (pid == 0) {
    close(fds[0]);
    mb_machine_peaks p;
    mb__peaks_measure(threads, &p);
    const char *at = (const char *)&p;
    size_t left = sizeof p;
    while (left > 0) {
      ssize_t w = write(fds[1], at, left);
      if (w <= 0 && errno != EINTR)
        _exit(1);
      if (w > 0)
        at += w, left -= (size_t)w;
    }
    _exit(0);
  }
  close(fds[1]);
  char *at = (char *)peaks;
  size_t got = 0;
  while (got < sizeof *peaks) {
    ssize_t r = read(fds[0], at + got, sizeof *peaks - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  close(fds[0]);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (got != sizeof *peaks) {
    memset(peaks, 0, sizeof *peaks);
    peaks->threads = threads;
    if (WIFSIGNALED(wstatus))
      snprintf(peaks->note, sizeof peaks->note,
               "measuring the peaks failed: the child died of signal %d",
               WTERMSIG(wstatus));
    else
      snprintf(peaks->note, sizeof peaks->note,
               "measuring the peaks failed: the child exited with %d",
               WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
  }
  return MB_STATUS_OK;
}

mb_status mb__peaks_get(const char *cache_dir, int threads, bool remeasure,
                        mb_machine_peaks *peaks_out, mb_error *err) {
  threads = MB_MAX(threads, 1);
  mb_machine_peaks key;
  memset(&key, 0, sizeof key);
  key.threads = threads;
  mb_machine_info machine;
  mb__machine_info(&machine);
  snprintf(key.cpu_model, sizeof key.cpu_model, "%s", machine.cpu_model);
  mb__cpu_flags_sha256(key.cpu_flags_sha256);

  char root[1024], folder[1100], name[64], path[1200];
  mb_error cache_err = {MB_STATUS_OK, ""};
  bool have_folder = false;
  /* $MODELBENCH_PEAKS_DIR keeps the peaks apart from the cache folder: a
   * machine's peaks outlive a cache that is wiped, and runs with caches of
   * their own (a test suite's) measure them once, not once each. */
  const char *peaks_dir = getenv("MODELBENCH_PEAKS_DIR");
  folder[0] = '\0';
  if (peaks_dir && peaks_dir[0])
    snprintf(folder, sizeof folder, "%s", peaks_dir);
  else if (mb__cache_dir(cache_dir, root, sizeof root, &cache_err) ==
           MB_STATUS_OK)
    snprintf(folder, sizeof folder, "%s/%s", root, PEAKS_FOLDER);
  if (folder[0]) {
    have_folder =
        mb__mkdir_private_at(AT_FDCWD, folder) == 0 || errno == EEXIST;
    if (!have_folder)
      snprintf(cache_err.message, sizeof cache_err.message,
               "cannot create %.300s: %s", folder, strerror(errno));
  }
  peaks_file_name(name, sizeof name, key.cpu_flags_sha256, threads);
  snprintf(path, sizeof path, "%s/%s", have_folder ? folder : "", name);
  if (have_folder && !remeasure && cache_read(path, &key, peaks_out))
    return MB_STATUS_OK;

  mb_status status = measure_in_child(threads, peaks_out, err);
  if (status || !peaks_out->measured)
    return status;
  if (have_folder)
    cache_write(folder, name, peaks_out, &cache_err);
  if (cache_err.message[0])
    snprintf(peaks_out->note, sizeof peaks_out->note, "not cached: %.200s",
             cache_err.message);
  return MB_STATUS_OK;
}
