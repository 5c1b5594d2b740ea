/* Runtimes built only for tests, to prove the benchmark engine's isolation:
 * each misbehaves in one way and is registered, with a conversion row of its
 * own, through the registries' run-time hooks.
 *
 *   TEST_CRASH        segfaults in run()
 *   TEST_HANG         sleeps forever in prepare()
 *   TEST_LEAK         leaks 1 MiB (touched) per run, reachable from a global
 *                     list so that the leak checker of a sanitizer build stays
 *                     quiet; sleeps 2 ms per run to bound the total
 *   TEST_ERROR        run() fails with a message
 *   TEST_NOOP         does nothing: the harness's own overhead
 *   TEST_WRONG        the reference interpreter's outputs, plus 1
 *   TEST_UNAVAILABLE  its probe says it is not available here
 *
 * Include in one test file and call bench_test_register() before use. */
#ifndef MB_TESTS_BENCH_TEST_RUNTIMES_H
#define MB_TESTS_BENCH_TEST_RUNTIMES_H

#include "conversions/conversion.h"
#include "runtime/runtime.h"

#include "reference_session.h"

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static void test_rt_probe_ok(mb_runtime_info *info) {
  info->available = 1;
  snprintf(info->version, sizeof info->version, "test");
}

static void test_rt_probe_never(mb_runtime_info *info) {
  info->available = 0;
  snprintf(info->reason, sizeof info->reason,
           "test runtime that is never available");
}

/* A session that only remembers the model. */
static mb_status test_rt_prepare_plain(const mb_model *model, const void *bytes,
                                       size_t size,
                                       const mb_runtime_options *options,
                                       void **session_out, mb_error *err) {
  *session_out = (void *)model;
  return MB_STATUS_OK;
}

static void test_rt_release_plain(void *session) {}

static mb_status test_rt_run_noop(void *session, const mb_tensor *const *inputs,
                                  mb_error *err) {
  return MB_STATUS_OK;
}

static mb_status test_rt_run_crash(void *session,
                                   const mb_tensor *const *inputs,
                                   mb_error *err) {
  /* A real invalid access (not NULL, which a UBSan build would catch
   * before the fault). */
  static volatile uintptr_t bad_address = 64;
  *(volatile int *)bad_address = 1;
  return MB_STATUS_OK;
}

static mb_status test_rt_prepare_hang(const mb_model *model, const void *bytes,
                                      size_t size,
                                      const mb_runtime_options *options,
                                      void **session_out, mb_error *err) {
  for (;;)
    test_sleep_ms(1000);
  return MB_STATUS_OK;
}

static mb_status test_rt_run_error(void *session,
                                   const mb_tensor *const *inputs,
                                   mb_error *err) {
  return mb__error(err, MB_STATUS_INTERNAL,
                   "test runtime error: kernel 'Gemm' failed");
}

typedef struct test_leak_block {
  struct test_leak_block *next;
} test_leak_block;
static test_leak_block *test_leak_list;

static mb_status test_rt_run_leak(void *session, const mb_tensor *const *inputs,
                                  mb_error *err) {
  const size_t size = (size_t)1 << 20;
  test_leak_block *b = malloc(size);
  if (!b)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "test leak: out of memory");
  memset(b, 0x5a, size); /* touched, so it counts in the RSS */
  b->next = test_leak_list;
  test_leak_list = b;
  test_sleep_ms(2);
  return MB_STATUS_OK;
}

/* TEST_WRONG: the reference interpreter with every output off by one. */
static mb_status test_rt_prepare_wrong(const mb_model *model, const void *bytes,
                                       size_t size,
                                       const mb_runtime_options *options,
                                       void **session_out, mb_error *err) {
  return test_ref_create(model, 0, session_out, err);
}

static mb_status test_rt_fetch_wrong(void *session, mb_tensor **outputs_out,
                                     mb_error *err) {
  test_ref_session *s = session;
  mb_status status = test_ref_fetch(session, outputs_out, err);
  for (int i = 0; !status && i < s->n_outputs; i++)
    for (int64_t j = 0; j < outputs_out[i]->numel; j++)
      mb__tensor_set_f64(outputs_out[i], j,
                         mb__tensor_get_f64(outputs_out[i], j) + 1.0);
  return status;
}

#define TEST_RUNTIME(var, rt_name, probe_fn, prepare_fn, run_fn, fetch_fn,     \
                     release_fn)                                               \
  static const mb_runtime var = {.name = rt_name,                              \
                                 .probe = probe_fn,                            \
                                 .prepare = prepare_fn,                        \
                                 .run = run_fn,                                \
                                 .fetch_outputs = fetch_fn,                    \
                                 .release = release_fn}

TEST_RUNTIME(test_rt_crash, "test_crash", test_rt_probe_ok,
             test_rt_prepare_plain, test_rt_run_crash, NULL,
             test_rt_release_plain);
TEST_RUNTIME(test_rt_hang, "test_hang", test_rt_probe_ok, test_rt_prepare_hang,
             test_rt_run_noop, NULL, test_rt_release_plain);
TEST_RUNTIME(test_rt_leak, "test_leak", test_rt_probe_ok, test_rt_prepare_plain,
             test_rt_run_leak, NULL, test_rt_release_plain);
TEST_RUNTIME(test_rt_error, "test_error", test_rt_probe_ok,
             test_rt_prepare_plain, test_rt_run_error, NULL,
             test_rt_release_plain);
TEST_RUNTIME(test_rt_noop, "test_noop", test_rt_probe_ok, test_rt_prepare_plain,
             test_rt_run_noop, NULL, test_rt_release_plain);
TEST_RUNTIME(test_rt_wrong, "test_wrong", test_rt_probe_ok,
             test_rt_prepare_wrong, test_ref_run, test_rt_fetch_wrong,
             test_ref_release);
TEST_RUNTIME(test_rt_unavailable, "test_unavailable", test_rt_probe_never,
             test_rt_prepare_plain, test_rt_run_noop, NULL,
             test_rt_release_plain);

/* id, name, runtime: test ids start at 9001, far from the real rows. */
#define BENCH_TEST_CONVERSIONS(X)                                              \
  X(9001, TEST_CRASH, test_rt_crash)                                           \
  X(9002, TEST_HANG, test_rt_hang)                                             \
  X(9003, TEST_LEAK, test_rt_leak)                                             \
  X(9004, TEST_ERROR, test_rt_error)                                           \
  X(9005, TEST_NOOP, test_rt_noop)                                             \
  X(9006, TEST_WRONG, test_rt_wrong)                                           \
  X(9007, TEST_UNAVAILABLE, test_rt_unavailable)

/* Registry index of every test conversion, filled by bench_test_register. */
#define MB_X(id, name, rt) static int name = -1;
BENCH_TEST_CONVERSIONS(MB_X)
#undef MB_X

/* Registers the test runtimes and conversions once. Returns 0 on success. */
static int bench_test_register(void) {
  /* The registries keep the pointers: rows live as long as the process. */
  static mb_conversion_def defs[16];
  static int done;
  int n = 0;
  mb_error err;
  if (done)
    return 0;
#define MB_X(conv_id, conv, rt)                                                \
  defs[n] = (mb_conversion_def){.id = conv_id,                                 \
                                .name = #conv,                                 \
                                .runtime = rt.name,                            \
                                .device = MB_DEVICE_CPU,                       \
                                .precision = MB_PRECISION_FP32,                \
                                .opt_level = MB_GRAPH_OPT_ALL,                 \
                                .description = "test-only conversion"};        \
  if (mb__runtime_register(&rt, &err) != MB_STATUS_OK ||                       \
      (conv = mb__conversion_register(&defs[n], &err)) < 0) {                  \
    fprintf(stderr, "registering %s: %s\n", #conv, err.message);               \
    return 1;                                                                  \
  }                                                                            \
  n++;
  BENCH_TEST_CONVERSIONS(MB_X)
#undef MB_X
  done = 1;
  return 0;
}

#endif /* MB_TESTS_BENCH_TEST_RUNTIMES_H */
