/* XNNPACK engine: the library state (status names, initialisation, the
 * thread pools segments share), the boundary of a compiled segment (slots,
 * owned buffers, NCHW <-> NHWC transposes), run() and release. */
#ifdef MB_HAVE_XNNPACK

#include "runtime/xnnpack/internal.h"

#include <pthread.h>

#define XNN_STATUS_LIST(X)                                                     \
  X(success)                                                                   \
  X(uninitialized)                                                             \
  X(invalid_parameter)                                                         \
  X(invalid_state)                                                             \
  X(unsupported_parameter)                                                     \
  X(unsupported_hardware)                                                      \
  X(out_of_memory)

const char *mb__xnn_status_name(enum xnn_status status) {
  static const struct {
    enum xnn_status status;
    const char *name;
  } names[] = {
#define MB_X(name) {xnn_status_##name, "xnn_status_" #name},
      XNN_STATUS_LIST(MB_X)
#undef MB_X
  };
  for (size_t i = 0; i < MB_ARRAY_COUNT(names); i++)
    if (names[i].status == status)
      return names[i].name;
  return "xnn_status_unknown";
}

static pthread_once_t xnn_once = PTHREAD_ONCE_INIT;
static enum xnn_status xnn_init_status = xnn_status_uninitialized;

/* xnn_initialize once per process; it is never deinitialised, as segments
 * may be compiled at any time until the process exits. */
static void xnn_init_once(void) {
  xnn_init_status = xnn_initialize(NULL);
}

enum xnn_status mb__xnn_ready(void) {
  pthread_once(&xnn_once, xnn_init_once);
  return xnn_init_status;
}

/* Thread pools, one per thread count, shared by every segment of the
 * process. pthreadpool's workers spin for a while after each job: with a
 * pool per segment, a model cut into many segments had the idle workers of
 * earlier segments spinning on the cores the running one needed
 * (squeezenet, 17 segments: 153 ms at 2 threads against 2.3 ms at 1).
 * Segments of one session run one after another; pthreadpool serialises
 * jobs from different sessions itself. */
#define XNN_MAX_POOLS 8

static pthread_mutex_t pools_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct {
  size_t threads;
  pthreadpool_t pool;
  int refs;
} pools[XNN_MAX_POOLS];

/* A pool of `threads` threads (NULL for 1 thread, and when out of memory:
 * *failed says which). Release with pool_release. */
pthreadpool_t mb__xnn_pool_acquire(int threads, bool *failed) {
  pthreadpool_t pool = NULL;
  *failed = false;
  if (threads <= 1)
    return NULL;
  pthread_mutex_lock(&pools_mutex);
  int free_slot = -1;
  for (int i = 0; i < XNN_MAX_POOLS && !pool; i++) {
    if (pools[i].refs > 0 && pools[i].threads == (size_t)threads) {
      pools[i].refs++;
      pool = pools[i].pool;
    } else if (pools[i].refs == 0 && free_slot < 0) {
      free_slot = i;
    }
  }
  if (!pool) {
    pool = pthreadpool_create((size_t)threads);
    if (pool && free_slot >= 0) {
      pools[free_slot].threads = (size_t)threads;
      pools[free_slot].pool = pool;
      pools[free_slot].refs = 1;
    }
    *failed = pool == NULL;
  }
  pthread_mutex_unlock(&pools_mutex);
  return pool;
}

static void pool_release(pthreadpool_t pool) {
  bool shared = false;
  if (!pool)
    return;
  pthread_mutex_lock(&pools_mutex);
  for (int i = 0; i < XNN_MAX_POOLS && !shared; i++) {
    if (pools[i].refs > 0 && pools[i].pool == pool) {
      shared = true;
      if (--pools[i].refs == 0) {
        pthreadpool_destroy(pool);
        pools[i].pool = NULL;
      }
    }
  }
  pthread_mutex_unlock(&pools_mutex);
  /* More distinct thread counts than slots: the pool was private. */
  if (!shared)
    pthreadpool_destroy(pool);
}

void mb__xnn_segment_free(xnn_segment *s) {
  if (!s)
    return;
  if (s->runtime)
    xnn_delete_runtime(s->runtime);
  pool_release(s->pool);
  for (int i = 0; i < s->n_inputs; i++)
    mb__aligned_free(s->inputs[i].buffer);
  for (int i = 0; i < s->n_outputs; i++)
    mb__aligned_free(s->outputs[i].buffer);
  for (int i = 0; i < s->n_statics; i++)
    mb__aligned_free(s->statics[i]);
  free(s->statics);
  free(s->inputs);
  free(s->outputs);
  free(s->external);
  free(s);
}

void mb__xnn_release(void *compiled) {
  mb__xnn_segment_free(compiled);
}

/* Fills the segment's boundary slots (shapes, layouts, owned buffers). */
mb_status mb__xnn_io_init(build_ctx *b) {
  const mb_segment_desc *d = b->seg_desc;
  xnn_segment *s = b->seg;
  s->n_inputs = d->n_inputs;
  s->n_outputs = d->n_outputs;
  s->inputs = calloc((size_t)MB_MAX(d->n_inputs, 1), sizeof *s->inputs);
  s->outputs = calloc((size_t)MB_MAX(d->n_outputs, 1), sizeof *s->outputs);
  if (!s->inputs || !s->outputs)
    return mb__xnn_oom(b);
  for (int k = 0; k < d->n_inputs + d->n_outputs; k++) {
    bool is_in = k < d->n_inputs;
    int v = is_in ? d->inputs[k] : d->outputs[k - d->n_inputs];
    io_slot *io = is_in ? &s->inputs[k] : &s->outputs[k - d->n_inputs];
    const mb_shape_info *sh = &b->eg->shapes[v];
    io->value = v;
    io->id = XNN_INVALID_VALUE_ID;
    if (!is_in && (io->constant = mb__engine_constant(b->eg, v)) != NULL)
      continue;
    if (!sh->known || sh->dtype != MB_DTYPE_FLOAT || sh->rank > XNN_RANK_MAX) {
      /* An input only a Reshape's shape reads is never used; value_id
       * refuses it as data. */
      if (is_in) {
        io->rank = -1;
        continue;
      }
      return mb__error(b->err, MB_STATUS_UNSUPPORTED,
                       "xnnpack: segment output '%s' is not a float32 tensor "
                       "of static shape",
                       b->eg->graph->values[v].name);
    }
    io->rank = sh->rank;
    memcpy(io->dims, sh->dims, sizeof io->dims);
    io->nbytes = (size_t)mb__engine_numel(sh->rank, sh->dims) * sizeof(float);
    io->transpose = is_nhwc(sh->rank) && !layouts_agree(sh->dims);
    if (is_in)
      b->input_slot[v] = k;
    else
      b->output_slot[v] = k - d->n_inputs;
  }
  /* Outputs nothing inside reads, in ONNX layout, go straight into the
   * caller's tensors; the others (read again inside, where XNNPACK may
   * read past their end, or transposed) get a buffer of their own. */
  for (int j = 0; j < s->n_outputs; j++) {
    io_slot *io = &s->outputs[j];
    if (io->constant)
      continue;
    bool read_inside = mb__segment_readers(d, io->value, NULL, 0) > 0;
    io->direct = !io->transpose && !read_inside;
  }
  for (int k = 0; k < s->n_inputs + s->n_outputs; k++) {
    io_slot *io =
        k < s->n_inputs ? &s->inputs[k] : &s->outputs[k - s->n_inputs];
    if (io->constant || io->direct || io->rank < 0)
      continue;
    io->buffer = mb__aligned_alloc(io->nbytes + XNN_EXTRA_BYTES);
    if (!io->buffer)
      return mb__xnn_oom(b);
    memset(io->buffer, 0, io->nbytes + XNN_EXTRA_BYTES);
  }
  return MB_STATUS_OK;
}

/* ---- layout conversion at the boundary ---- */

#define XNN_TILE 32

typedef struct transpose_job {
  const float *src;
  float *dst;
  size_t rows, cols; /* of src, per image */
  size_t tiles_r, tiles_c;
} transpose_job;

/* One tile of dst[c][r] = src[r][c] for one image (index = image, tile). */
static void transpose_tile(void *ctx, size_t index) {
  const transpose_job *j = ctx;
  size_t per_image = j->tiles_r * j->tiles_c;
  size_t img = index / per_image, t = index % per_image;
  size_t r0 = (t / j->tiles_c) * XNN_TILE, c0 = (t % j->tiles_c) * XNN_TILE;
  size_t r1 = MB_MIN(r0 + XNN_TILE, j->rows),
         c1 = MB_MIN(c0 + XNN_TILE, j->cols);
  const float *src = j->src + img * j->rows * j->cols;
  float *dst = j->dst + img * j->rows * j->cols;
  for (size_t r = r0; r < r1; r++)
    for (size_t c = c0; c < c1; c++)
      dst[c * j->rows + r] = src[r * j->cols + c];
}

/* Per image: [rows, cols] -> [cols, rows]. */
static void transpose_images(pthreadpool_t pool, uint32_t flags,
                             const float *src, float *dst, size_t images,
                             size_t rows, size_t cols) {
  transpose_job j = {src,
                     dst,
                     rows,
                     cols,
                     (rows + XNN_TILE - 1) / XNN_TILE,
                     (cols + XNN_TILE - 1) / XNN_TILE};
  size_t tiles = images * j.tiles_r * j.tiles_c;
  /* Small tensors are not worth waking the pool for. */
  if (images * rows * cols < ((size_t)1 << 15))
    pool = NULL;
  pthreadpool_parallelize_1d(pool, transpose_tile, &j, tiles, flags);
}

static mb_status check_tensor(const io_slot *io, const mb_tensor *t,
                              const char *what, int index, mb_error *err) {
  return mb__engine_check_tensor("xnnpack", MB_DTYPE_FLOAT, io->rank, io->dims,
                                 io->nbytes, t, what, index, err);
}

mb_status mb__xnn_run(void *compiled, const mb_tensor *const *inputs,
                      mb_tensor *const *outputs, mb_error *err) {
  xnn_segment *s = compiled;
  mb_status status;
  bool changed = !s->setup_done;
  for (int i = 0; i < s->n_inputs; i++) {
    io_slot *io = &s->inputs[i];
    if (io->id == XNN_INVALID_VALUE_ID)
      continue;
    if ((status = check_tensor(io, inputs[i], "input", i, err)))
      return status;
    if (io->transpose)
      transpose_images(s->pool, 0, inputs[i]->data, io->buffer,
                       (size_t)io->dims[0], (size_t)io->dims[1],
                       (size_t)(io->dims[2] * io->dims[3]));
    else
      memcpy(io->buffer, inputs[i]->data, io->nbytes);
  }
  for (int j = 0; j < s->n_outputs; j++) {
    io_slot *io = &s->outputs[j];
    if (io->constant) {
      if (!outputs[j] || outputs[j]->nbytes != io->constant->nbytes)
        return mb__error(err, MB_STATUS_SHAPE,
                         "xnnpack: segment output %d has the wrong size", j);
      continue;
    }
    if ((status = check_tensor(io, outputs[j], "output", j, err)))
      return status;
    if (io->direct && s->external[io->id].data != outputs[j]->data) {
      s->external[io->id].data = outputs[j]->data;
      changed = true;
    }
  }
  if (s->runtime) {
    enum xnn_status xs;
    /* Setting up recomputes every operator's indirection buffers: only
     * when a pointer changed. */
    if (changed) {
      xs = xnn_setup_runtime(s->runtime, (size_t)s->n_external, s->external);
      if (xs != xnn_status_success)
        return mb__error(err, MB_STATUS_INTERNAL,
                         "xnnpack: xnn_setup_runtime returned %s",
                         mb__xnn_status_name(xs));
      s->setup_done = true;
    }
    xs = xnn_invoke_runtime(s->runtime);
    if (xs != xnn_status_success)
      return mb__error(err, MB_STATUS_INTERNAL,
                       "xnnpack: xnn_invoke_runtime returned %s",
                       mb__xnn_status_name(xs));
  }
  for (int j = 0; j < s->n_outputs; j++) {
    io_slot *io = &s->outputs[j];
    if (io->constant)
      memcpy(outputs[j]->data, io->constant->data, io->constant->nbytes);
    else if (io->transpose)
      transpose_images(s->pool, PTHREADPOOL_FLAG_YIELD_WORKERS, io->buffer,
                       outputs[j]->data, (size_t)io->dims[0],
                       (size_t)(io->dims[2] * io->dims[3]),
                       (size_t)io->dims[1]);
    else if (!io->direct)
      memcpy(outputs[j]->data, io->buffer, io->nbytes);
  }
  return MB_STATUS_OK;
}

#endif /* MB_HAVE_XNNPACK */
