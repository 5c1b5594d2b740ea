/* oneDNN engine: the library state (status names, OpenMP's thread count),
 * a compiled segment at run time (run(), per-primitive profiles) and its
 * release. */
#ifdef MB_HAVE_DNNL

#include "runtime/onednn/internal.h"

#include <dlfcn.h>
#include <pthread.h>

/* glibc spells it only under _GNU_SOURCE; its value is fixed by the ABI. */
#ifndef RTLD_DEFAULT
#define RTLD_DEFAULT ((void *)0)
#endif

#define DN_STATUS_LIST(X)                                                      \
  X(success)                                                                   \
  X(out_of_memory)                                                             \
  X(invalid_arguments)                                                         \
  X(unimplemented)                                                             \
  X(iterator_ends)                                                             \
  X(runtime_error)                                                             \
  X(not_required)

const char *mb__dn_status_name(dnnl_status_t status) {
  static const struct {
    dnnl_status_t status;
    const char *name;
  } names[] = {
#define MB_X(name) {dnnl_##name, "dnnl_" #name},
      DN_STATUS_LIST(MB_X)
#undef MB_X
  };
  for (size_t i = 0; i < MB_ARRAY_COUNT(names); i++)
    if (names[i].status == status)
      return names[i].name;
  return "dnnl_status_unknown";
}

/* oneDNN's thread count is OpenMP's: omp_set_num_threads on the calling
 * thread. libgomp comes in as libdnnl's dependency, not ours, so the
 * symbol is looked up at run time instead of linked (a oneDNN built for
 * another threading runtime simply has none, and keeps its default). */
typedef void (*omp_set_num_threads_fn)(int);
static pthread_once_t omp_once = PTHREAD_ONCE_INIT;
static omp_set_num_threads_fn omp_set_threads;

static void omp_lookup(void) {
  void *sym = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
  memcpy(&omp_set_threads, &sym, sizeof sym);
}

void mb__dn_set_threads(int threads) {
  pthread_once(&omp_once, omp_lookup);
  if (omp_set_threads)
    omp_set_threads(MB_MAX(threads, 1));
}

void mb__dn_segment_free(dn_segment *s) {
  if (!s)
    return;
  for (int i = 0; i < s->n_steps; i++)
    if (s->steps[i].prim)
      dnnl_primitive_destroy(s->steps[i].prim);
  for (int i = 0; i < s->n_mems; i++)
    dnnl_memory_destroy(s->mems[i].mem);
  for (int i = 0; i < s->n_bufs; i++)
    if (s->bufs[i].owned)
      mb__aligned_free(s->bufs[i].data);
  if (s->stream)
    dnnl_stream_destroy(s->stream);
  if (s->engine)
    dnnl_engine_destroy(s->engine);
  free(s->steps);
  free(s->mems);
  free(s->io_mems);
  free(s->bufs);
  free(s->inputs);
  free(s->outputs);
  free(s->prof);
  free(s);
}

void mb__dn_release(void *compiled) {
  mb__dn_segment_free(compiled);
}

/* Removes profile entries no step uses (nodes lowered to views) and
 * renumbers the steps'. */
void mb__dn_prof_compact(dn_segment *s) {
  int *map = calloc((size_t)s->n_prof + 1, sizeof *map), k = 0;
  if (!map)
    return;
  for (int i = 0; i < s->n_steps; i++)
    if (s->steps[i].prof >= 0)
      map[s->steps[i].prof] = 1;
  for (int i = 0; i < s->n_prof; i++) {
    if (map[i]) {
      s->prof[k] = s->prof[i];
      map[i] = k++;
    }
  }
  for (int i = 0; i < s->n_steps; i++)
    if (s->steps[i].prof >= 0)
      s->steps[i].prof = map[s->steps[i].prof];
  s->n_prof = k;
  free(map);
}

/* A segment output that is a constant keeps its own element type (the
 * Shape of a static tensor is an int64 graph output); everything else is
 * float32. */
static mb_status check_tensor(const dn_io *io, const mb_tensor *t,
                              const char *what, int index, mb_error *err) {
  mb_dtype dtype = io->constant ? io->constant->dtype : MB_DTYPE_FLOAT;
  return mb__engine_check_tensor("onednn", dtype, io->rank, io->dims,
                                 io->nbytes, t, what, index, err);
}

static void run_erf(const dn_step *step) {
  void *src = NULL, *dst = NULL;
  dnnl_memory_get_data_handle(step->src, &src);
  dnnl_memory_get_data_handle(step->dst, &dst);
  const float *x = src;
  float *y = dst;
  for (size_t i = 0; i < step->count; i++)
    y[i] = erff(x[i]);
}

mb_status mb__dn_run(void *compiled, const mb_tensor *const *inputs,
                     mb_tensor *const *outputs, mb_error *err) {
  dn_segment *s = compiled;
  mb_status status;
  dnnl_status_t st;
  mb__dn_set_threads(s->threads);
  for (int i = 0; i < s->n_inputs; i++)
    if (s->inputs[i].used &&
        (status = check_tensor(&s->inputs[i], inputs[i], "input", i, err)))
      return status;
  for (int i = 0; i < s->n_outputs; i++)
    if ((status = check_tensor(&s->outputs[i], outputs[i], "output", i, err)))
      return status;
  for (int i = 0; i < s->n_io_mems; i++) {
    const dn_memory *m = &s->mems[s->io_mems[i]];
    const dn_buffer *b = &s->bufs[m->buf];
    /* Inputs are only ever read. */
    void *data = b->kind == DN_BUF_INPUT ? (void *)inputs[b->slot]->data
                                         : outputs[b->slot]->data;
    if ((st = dnnl_memory_set_data_handle(m->mem, data)) != dnnl_success)
      return mb__error(err, MB_STATUS_INTERNAL,
                       "onednn: dnnl_memory_set_data_handle failed: %s",
                       mb__dn_status_name(st));
  }
  int threads = s->threads;
  for (int i = 0; i < s->n_steps; i++) {
    const dn_step *step = &s->steps[i];
    double t0 = s->profile ? mb__now() : 0.0;
    if (step->threads != threads)
      mb__dn_set_threads(threads = step->threads);
    if (step->kind == DN_STEP_ERF) {
      run_erf(step);
    } else if ((st = dnnl_primitive_execute(step->prim, s->stream, step->n_args,
                                            step->args)) != dnnl_success) {
      const mb_engine_node_time *t =
          step->prof >= 0 ? &s->prof[step->prof] : NULL;
      return mb__error(err, MB_STATUS_INTERNAL,
                       "onednn: %s '%s': dnnl_primitive_execute failed: %s",
                       t ? t->op_type : "primitive", t ? t->name : "",
                       mb__dn_status_name(st));
    }
    if (s->profile) {
      dnnl_stream_wait(s->stream);
      if (step->prof >= 0)
        s->prof[step->prof].total_ms += (mb__now() - t0) * 1e3;
    }
  }
  if ((st = dnnl_stream_wait(s->stream)) != dnnl_success)
    return mb__error(err, MB_STATUS_INTERNAL,
                     "onednn: dnnl_stream_wait failed: %s",
                     mb__dn_status_name(st));
  if (s->profile)
    for (int i = 0; i < s->n_prof; i++)
      s->prof[i].runs++;
  for (int i = 0; i < s->n_outputs; i++)
    if (s->outputs[i].constant)
      memcpy(outputs[i]->data, s->outputs[i].constant->data,
             s->outputs[i].nbytes);
  return MB_STATUS_OK;
}

int mb__dn_node_profile(void *compiled, mb_engine_node_time *out, int max) {
  const dn_segment *s = compiled;
  for (int i = 0; i < s->n_prof && i < max; i++)
    out[i] = s->prof[i];
  return s->n_prof;
}

void mb__dn_node_profile_reset(void *compiled) {
  dn_segment *s = compiled;
  for (int i = 0; i < s->n_prof; i++) {
    s->prof[i].total_ms = 0.0;
    s->prof[i].runs = 0;
  }
}

#endif /* MB_HAVE_DNNL */
