/* A test runtime's session that computes with the reference interpreter:
 * bench_test_runtimes.h's TEST_WRONG (its outputs then off by one) and
 * test_tune_search.c's runtimes of a set speed (each run then sleeps
 * sleep_ms). Include in one test file (through bench_test_runtimes.h, or
 * alone). */
#ifndef MB_TESTS_REFERENCE_SESSION_H
#define MB_TESTS_REFERENCE_SESSION_H

#include "runtime/runtime.h"

#include <stdlib.h>
#include <time.h>

typedef struct test_ref_session {
  mb_session *session;
  int n_inputs, n_outputs;
  mb_tensor **outputs; /* of the last run */
  long sleep_ms;       /* after each run; 0: none */
} test_ref_session;

static void test_sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static void test_ref_release(void *session) {
  test_ref_session *s = session;
  if (!s)
    return;
  for (int i = 0; s->outputs && i < s->n_outputs; i++)
    mb_tensor_free(s->outputs[i]);
  free(s->outputs);
  mb_session_free(s->session);
  free(s);
}

/* A session of `model` that sleeps sleep_ms after each run. */
static mb_status test_ref_create(const mb_model *model, long sleep_ms,
                                 void **session_out, mb_error *err) {
  test_ref_session *s = calloc(1, sizeof *s);
  if (!s)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "test session: no memory");
  s->sleep_ms = sleep_ms;
  s->n_inputs = mb_model_input_count(model);
  s->n_outputs = mb_model_output_count(model);
  s->outputs = calloc((size_t)s->n_outputs + 1, sizeof *s->outputs);
  mb_status status = s->outputs
                         ? mb_session_create(model, NULL, &s->session, err)
                         : mb__error(err, MB_STATUS_OUT_OF_MEMORY, "no memory");
  if (status) {
    test_ref_release(s);
    return status;
  }
  *session_out = s;
  return MB_STATUS_OK;
}

static mb_status test_ref_run(void *session, const mb_tensor *const *inputs,
                              mb_error *err) {
  test_ref_session *s = session;
  for (int i = 0; i < s->n_outputs; i++) {
    mb_tensor_free(s->outputs[i]);
    s->outputs[i] = NULL;
  }
  mb_status status = mb_session_run(s->session, s->n_inputs, inputs,
                                    s->n_outputs, s->outputs, err);
  if (s->sleep_ms > 0)
    test_sleep_ms(s->sleep_ms);
  return status;
}

/* The last run's outputs, cloned. */
static mb_status test_ref_fetch(void *session, mb_tensor **outputs_out,
                                mb_error *err) {
  test_ref_session *s = session;
  for (int i = 0; i < s->n_outputs; i++) {
    mb_status status = mb_tensor_clone(s->outputs[i], &outputs_out[i], err);
    if (status)
      return status;
  }
  return MB_STATUS_OK;
}

#endif /* MB_TESTS_REFERENCE_SESSION_H */
