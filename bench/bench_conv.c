/* bench_conv: latency of single Conv / pooling / Gemm layers with the shapes
 * of ResNet-18 and MobileNetV2 (batch 1, 224x224 input), straight through
 * the operator rows (no session, no graph), to see each kernel path apart.
 *
 *   bench_conv [--threads 1,2] [--min-seconds S] [--filter SUBSTR]
 *
 * For every layer and thread count: two warm-up runs, then timed runs until
 * both MIN_ITERS runs and --min-seconds have passed. Prints the median and
 * minimum milliseconds and GFLOP/s at the median (multiply-adds count 2). */
#include "ops/op.h"

#include <stdlib.h>
#include <time.h>

#define MAX_THREAD_COUNTS 8
#define MIN_ITERS 5
#define MAX_ITERS 2000
#define WARMUP_RUNS 2

typedef struct layer {
  const char *name;
  const char *op; /* Conv, MaxPool, GlobalAveragePool, Gemm */
  int64_t c_in, c_out, h, w, k, stride, pad, group;
} layer;

/* ResNet-18 and MobileNetV2 layers at batch 1. For Gemm: c_in = K,
 * c_out = N, h = M. */
static const layer layers[] = {
    {"r18 stem 3->64 7x7/2 @224", "Conv", 3, 64, 224, 224, 7, 2, 3, 1},
    {"r18 maxpool 3x3/2 @112", "MaxPool", 64, 64, 112, 112, 3, 2, 1, 1},
    {"r18 64->64 3x3 @56", "Conv", 64, 64, 56, 56, 3, 1, 1, 1},
    {"r18 64->128 3x3/2 @56", "Conv", 64, 128, 56, 56, 3, 2, 1, 1},
    {"r18 64->128 1x1/2 @56", "Conv", 64, 128, 56, 56, 1, 2, 0, 1},
    {"r18 128->128 3x3 @28", "Conv", 128, 128, 28, 28, 3, 1, 1, 1},
    {"r18 256->256 3x3 @14", "Conv", 256, 256, 14, 14, 3, 1, 1, 1},
    {"r18 512->512 3x3 @7", "Conv", 512, 512, 7, 7, 3, 1, 1, 1},
    {"r18 global avgpool 512 @7", "GlobalAveragePool", 512, 512, 7, 7, 7, 1, 0,
     1},
    {"r18 fc 512->1000", "Gemm", 512, 1000, 1, 1, 1, 1, 0, 1},
    {"mv2 stem 3->32 3x3/2 @224", "Conv", 3, 32, 224, 224, 3, 2, 1, 1},
    {"mv2 dw 32 3x3 @112", "Conv", 32, 32, 112, 112, 3, 1, 1, 32},
    {"mv2 pw 32->16 @112", "Conv", 32, 16, 112, 112, 1, 1, 0, 1},
    {"mv2 pw 16->96 @112", "Conv", 16, 96, 112, 112, 1, 1, 0, 1},
    {"mv2 dw 96 3x3/2 @112", "Conv", 96, 96, 112, 112, 3, 2, 1, 96},
    {"mv2 pw 24->144 @56", "Conv", 24, 144, 56, 56, 1, 1, 0, 1},
    {"mv2 dw 144 3x3 @56", "Conv", 144, 144, 56, 56, 3, 1, 1, 144},
    {"mv2 pw 144->24 @56", "Conv", 144, 24, 56, 56, 1, 1, 0, 1},
    {"mv2 dw 144 3x3/2 @56", "Conv", 144, 144, 56, 56, 3, 2, 1, 144},
    {"mv2 dw 192 3x3 @28", "Conv", 192, 192, 28, 28, 3, 1, 1, 192},
    {"mv2 dw 576 3x3 @14", "Conv", 576, 576, 14, 14, 3, 1, 1, 576},
    {"mv2 dw 960 3x3 @7", "Conv", 960, 960, 7, 7, 3, 1, 1, 960},
    {"mv2 pw 320->1280 @7", "Conv", 320, 1280, 7, 7, 1, 1, 0, 1},
};

typedef struct bench_options {
  int n_threads;
  int threads[MAX_THREAD_COUNTS];
  double min_seconds;
  const char *filter;
} bench_options;

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One prepared layer: a one-node graph, its tensors and an op context. */
typedef struct bench_case {
  mb_model *model;
  const mb_op_def *def;
  mb_tensor *inputs[3];
  mb_tensor output;
  mb_tensor *outputs[1];
  void *scratch[MB_OP_SCRATCH_SLOTS];
  size_t scratch_size[MB_OP_SCRATCH_SLOTS];
  mb_error err;
  mb_op_ctx ctx;
  double flops;
} bench_case;

static mb_tensor *random_tensor(int rank, const int64_t *dims, mb_error *err) {
  mb_tensor *t = NULL;
  if (mb_tensor_create(MB_DTYPE_FLOAT, rank, dims, &t, err))
    return NULL;
  uint32_t s = 7;
  for (int64_t i = 0; i < t->numel; i++) {
    s = s * 1664525u + 1013904223u;
    ((float *)t->data)[i] = (float)(s >> 9) / 4194304.0f - 1.0f;
  }
  return t;
}

static void case_free(bench_case *c) {
  for (int i = 0; i < 3; i++)
    mb_tensor_free(c->inputs[i]);
  mb__tensor_clear(&c->output);
  for (int i = 0; i < MB_OP_SCRATCH_SLOTS; i++)
    mb__aligned_free(c->scratch[i]);
  mb_model_free(c->model);
}

static mb_status case_init(bench_case *c, const layer *l) {
  static const char *const in_names[] = {"x", "w", "b"};
  static const char *const out_names[] = {"y"};
  mb_graph *g;
  mb_status st;
  int n_in = 1;
  memset(c, 0, sizeof *c);
  c->model = mb__model_create();
  if (!c->model)
    return mb__error(&c->err, MB_STATUS_OUT_OF_MEMORY, "no memory");
  g = c->model->graph;
  int64_t xd[4] = {1, l->c_in, l->h, l->w};
  if (strcmp(l->op, "Conv") == 0) {
    int64_t wd[4] = {l->c_out, l->c_in / l->group, l->k, l->k};
    int64_t bd[1] = {l->c_out};
    c->inputs[0] = random_tensor(4, xd, &c->err);
    c->inputs[1] = random_tensor(4, wd, &c->err);
    c->inputs[2] = random_tensor(1, bd, &c->err);
    n_in = 3;
    int64_t oh = (l->h + 2 * l->pad - l->k) / l->stride + 1;
    int64_t ow = (l->w + 2 * l->pad - l->k) / l->stride + 1;
    c->flops = 2.0 * (double)(l->c_out * oh * ow) *
               (double)(l->c_in / l->group * l->k * l->k);
  } else if (strcmp(l->op, "Gemm") == 0) {
    int64_t ad[2] = {l->h, l->c_in}, bd[2] = {l->c_out, l->c_in};
    int64_t cd[1] = {l->c_out};
    c->inputs[0] = random_tensor(2, ad, &c->err);
    c->inputs[1] = random_tensor(2, bd, &c->err);
    c->inputs[2] = random_tensor(1, cd, &c->err);
    n_in = 3;
    c->flops = 2.0 * (double)(l->h * l->c_in * l->c_out);
  } else {
    c->inputs[0] = random_tensor(4, xd, &c->err);
    c->flops = (double)(l->c_in * l->h * l->w); /* one op per input read */
  }
  for (int i = 0; i < n_in; i++)
    if (!c->inputs[i])
      return c->err.status;
  int node = mb__graph_add_node(g, l->op, "", "layer", n_in, in_names, 1,
                                out_names, &c->err);
  if (node < 0)
    return c->err.status;
  int64_t k2[2] = {l->k, l->k}, s2[2] = {l->stride, l->stride};
  int64_t p4[4] = {l->pad, l->pad, l->pad, l->pad};
  if (strcmp(l->op, "Conv") == 0 || strcmp(l->op, "MaxPool") == 0) {
    if ((st = mb__node_set_ints(g, node, "strides", 2, s2, &c->err)) ||
        (st = mb__node_set_ints(g, node, "pads", 4, p4, &c->err)))
      return st;
  }
  if (strcmp(l->op, "Conv") == 0 &&
      (st = mb__node_set_int(g, node, "group", l->group, &c->err)))
    return st;
  if (strcmp(l->op, "MaxPool") == 0 &&
      (st = mb__node_set_ints(g, node, "kernel_shape", 2, k2, &c->err)))
    return st;
  if (strcmp(l->op, "Gemm") == 0 &&
      (st = mb__node_set_int(g, node, "transB", 1, &c->err)))
    return st;
  c->def = mb__op_find("", l->op, 13);
  if (!c->def)
    return mb__error(&c->err, MB_STATUS_UNSUPPORTED, "no %s row", l->op);
  c->outputs[0] = &c->output;
  c->ctx.node = &g->nodes[node];
  c->ctx.graph = g;
  c->ctx.opset = 13;
  c->ctx.n_inputs = n_in;
  c->ctx.inputs = c->inputs;
  c->ctx.n_outputs = 1;
  c->ctx.outputs = c->outputs;
  c->ctx.threads = 1;
  c->ctx.err = &c->err;
  c->ctx.scratch = c->scratch;
  c->ctx.scratch_size = c->scratch_size;
  if ((st = c->def->infer(&c->ctx)))
    return st;
  return mb__tensor_reset(&c->output, c->output.dtype, c->output.rank,
                          c->output.dims, &c->err);
}

/* Times one layer at one thread count; returns non-zero on failure. */
static int bench_layer(const layer *l, int threads, double min_seconds) {
  bench_case c;
  double *times = NULL;
  int rc = 1, n = 0;
  if (case_init(&c, l)) {
    fprintf(stderr, "bench_conv: %s: %s\n", l->name, c.err.message);
    goto done;
  }
  c.ctx.threads = threads;
  /* As the interpreter does: OpenBLAS on one thread, the pool for all. */
  mb__blas_set_threads(1);
  if (threads > 1 && !(c.ctx.pool = mb__threadpool_create(threads)))
    goto done;
  times = malloc(sizeof(double) * MAX_ITERS);
  if (!times)
    goto done;
  for (int i = 0; i < WARMUP_RUNS; i++)
    if (c.def->infer(&c.ctx) || c.def->run(&c.ctx)) {
      fprintf(stderr, "bench_conv: %s: %s\n", l->name, c.err.message);
      goto done;
    }
  double start = now_seconds();
  while (n < MAX_ITERS &&
         (n < MIN_ITERS || now_seconds() - start < min_seconds)) {
    double t0 = now_seconds();
    /* infer + run, as the interpreter does per node and run */
    if (c.def->infer(&c.ctx) || c.def->run(&c.ctx))
      goto done;
    times[n++] = (now_seconds() - t0) * 1e3;
  }
  qsort(times, (size_t)n, sizeof(double), compare_double);
  double median = times[n / 2];
  printf("%-28s %-18s %7d %10.3f %10.3f %9.1f\n", l->name, l->op, threads,
         median, times[0], c.flops / (median * 1e-3) * 1e-9);
  fflush(stdout);
  rc = 0;
done:
  free(times);
  mb__threadpool_free(c.ctx.pool);
  case_free(&c);
  return rc;
}

static int parse_threads(const char *s, bench_options *o) {
  o->n_threads = 0;
  while (*s && o->n_threads < MAX_THREAD_COUNTS) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 1 || v > 256)
      return 1;
    o->threads[o->n_threads++] = (int)v;
    s = *end == ',' ? end + 1 : end;
    if (*end && *end != ',')
      return 1;
  }
  return o->n_threads == 0;
}

int main(int argc, char **argv) {
  bench_options o = {2, {1, 2}, 0.3, NULL};
  for (int i = 1; i < argc; i++) {
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--threads") == 0 && next) {
      if (parse_threads(next, &o))
        goto usage;
      i++;
    } else if (strcmp(argv[i], "--min-seconds") == 0 && next) {
      o.min_seconds = strtod(next, NULL);
      i++;
    } else if (strcmp(argv[i], "--filter") == 0 && next) {
      o.filter = next;
      i++;
    } else {
      goto usage;
    }
  }
  printf("%-28s %-18s %7s %10s %10s %9s\n", "layer", "op", "threads",
         "median_ms", "min_ms", "GFLOP/s");
  int failed = 0;
  for (int t = 0; t < o.n_threads; t++)
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++)
      if (!o.filter || strstr(layers[i].name, o.filter))
        failed |= bench_layer(&layers[i], o.threads[t], o.min_seconds);
  return failed;
usage:
  fprintf(stderr, "usage: bench_conv [--threads 1,2] [--min-seconds S] "
                  "[--filter SUBSTR]\n");
  return 2;
}
