/* oneDNN's GEMM throughput for the machine's peaks: one plain matmul
 * primitive per precision, timed (runtime/peaks.h). */
#include "runtime/peaks.h"

#ifndef MB_HAVE_DNNL

mb_status mb__dn_gemm_gflops(mb_precision precision, int threads, int n,
                             int reps, double *gflops_out, mb_error *err) {
  (void)threads, (void)n, (void)reps;
  *gflops_out = 0.0;
  return mb__error(err, MB_STATUS_UNAVAILABLE,
                   "%s GEMM: modelbench was built without oneDNN",
                   mb_precision_name(precision));
}

#else /* MB_HAVE_DNNL */

#include "runtime/onednn/internal.h"

#include <stdlib.h>

typedef struct gemm_types {
  mb_precision precision;
  dnnl_data_type_t src, weights, dst;
  size_t src_size, weights_size, dst_size;
} gemm_types;

static const gemm_types gemm_table[] = {
    {MB_PRECISION_FP32, dnnl_f32, dnnl_f32, dnnl_f32, 4, 4, 4},
    {MB_PRECISION_INT8, dnnl_u8, dnnl_s8, dnnl_s32, 1, 1, 4},
    {MB_PRECISION_BF16, dnnl_bf16, dnnl_bf16, dnnl_f32, 2, 2, 4},
};

/* One operand in plain row-major layout, its buffer owned by oneDNN. */
static dnnl_status_t operand(dnnl_memory_t *mem, dnnl_memory_desc_t *md, int n,
                             dnnl_data_type_t dt, dnnl_engine_t eng) {
  dnnl_dims_t dims = {n, n};
  dnnl_status_t st = dnnl_memory_desc_init_by_tag(md, 2, dims, dt, dnnl_ab);
  return st ? st : dnnl_memory_create(mem, md, eng, DNNL_MEMORY_ALLOCATE);
}

/* Fills a buffer with small values: zeros would let no kernel go faster,
 * but denormal or NaN patterns from uninitialised memory might. */
static void fill(dnnl_memory_t mem, size_t bytes) {
  void *p = NULL;
  if (dnnl_memory_get_data_handle(mem, &p) == dnnl_success && p)
    memset(p, 1, bytes);
}

mb_status mb__dn_gemm_gflops(mb_precision precision, int threads, int n,
                             int reps, double *gflops_out, mb_error *err) {
  const gemm_types *t = NULL;
  for (size_t i = 0; i < MB_ARRAY_COUNT(gemm_table); i++)
    if (gemm_table[i].precision == precision)
      t = &gemm_table[i];
  *gflops_out = 0.0;
  if (!t)
    return mb__error(err, MB_STATUS_UNSUPPORTED, "%s GEMM: not measured",
                     mb_precision_name(precision));
  mb__dn_set_threads(threads);
  dnnl_engine_t eng = NULL;
  dnnl_stream_t stream = NULL;
  dnnl_memory_t a = NULL, b = NULL, c = NULL;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_t prim = NULL;
  dnnl_memory_desc_t a_md, b_md, c_md;
  dnnl_matmul_desc_t desc;
  const char *step = "dnnl_engine_create";
  dnnl_status_t st = dnnl_engine_create(&eng, dnnl_cpu, 0);
  if (!st &&
      !(st = dnnl_stream_create(&stream, eng, dnnl_stream_default_flags)))
    step = "dnnl_memory_create";
  if (!st && !(st = operand(&a, &a_md, n, t->src, eng)) &&
      !(st = operand(&b, &b_md, n, t->weights, eng)) &&
      !(st = operand(&c, &c_md, n, t->dst, eng)))
    step = "dnnl_primitive_desc_create(matmul)";
  if (!st && !(st = dnnl_matmul_desc_init(&desc, &a_md, &b_md, NULL, &c_md)) &&
      !(st = dnnl_primitive_desc_create(&pd, &desc, NULL, eng, NULL)))
    step = "dnnl_primitive_create";
  if (!st)
    st = dnnl_primitive_create(&prim, pd);
  if (!st) {
    size_t cells = (size_t)n * (size_t)n;
    fill(a, cells * t->src_size);
    fill(b, cells * t->weights_size);
    dnnl_exec_arg_t args[] = {
        {DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}};
    step = "dnnl_primitive_execute(matmul)";
    double best = 0.0;
    for (int r = 0; !st && r <= reps; r++) {
      double t0 = mb__now();
      st = dnnl_primitive_execute(prim, stream, 3, args);
      if (!st)
        st = dnnl_stream_wait(stream);
      double s = mb__now() - t0;
      /* Repetition 0 warms the caches and OpenMP's threads up. */
      if (!st && r > 0 && s > 0.0) {
        double gflops = 2.0 * (double)n * n * n / s / 1e9;
        best = gflops > best ? gflops : best;
      }
    }
    *gflops_out = best;
  }
  mb_status status = MB_STATUS_OK;
  if (st)
    status = mb__error(
        err,
        st == dnnl_unimplemented ? MB_STATUS_UNSUPPORTED : MB_STATUS_INTERNAL,
        "%s GEMM on oneDNN: %s returned %s", mb_precision_name(precision), step,
        mb__dn_status_name(st));
  if (prim)
    dnnl_primitive_destroy(prim);
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (a)
    dnnl_memory_destroy(a);
  if (b)
    dnnl_memory_destroy(b);
  if (c)
    dnnl_memory_destroy(c);
  if (stream)
    dnnl_stream_destroy(stream);
  if (eng)
    dnnl_engine_destroy(eng);
  return status;
}

#endif /* MB_HAVE_DNNL */
