/* The XNNPACK engine in int8 (static quantisation, the parameters the
 * quant_params build step makes) against the reference interpreter in
 * fp32: close, and on the int8 grid where an int8 op wrote; what it
 * refuses stays in float. The fp32 and fp16 cases are in
 * test_engine_xnnpack.c. Everything is skipped (and passes) when the
 * engine's probe says it is unavailable. */
#include "runtime/engine.h"
#include "test.h"

static const mb_engine *engine = &mb__engine_xnnpack;

#include "engine_harness.h"
#include "xnnpack_cases.h"

#include <stdlib.h>

/* How far output j is from the grid of its ACTIVATION entry: the largest
 * distance of y / scale to an integer (0 when an int8 op wrote it; a float
 * op's results lie anywhere). */
static double grid_distance(const mb_tensor *y, const mb_quant_param *q) {
  double worst = 0;
  const float *d = y->data;
  for (int64_t i = 0; i < y->numel; i++) {
    double u = (double)d[i] / q->scales[0];
    worst = fmax(worst, fabs(u - nearbyint(u)));
  }
  return worst;
}

/* Compiles the whole graph in INT8 with `params` at 1 and 2 threads, runs
 * each twice on the prepared inputs, and gives per output the worst
 * normalised error and cosine against the fp32 reference, and the worst
 * distance from its quantisation grid (grid[j] = -1 without an entry). */
static int int8_run(gcase *c, prepared *p, const mb_quant_params *params,
                    mb_tensor **ref, double *err_out, double *cos_out,
                    double *grid_out) {
  mb_tensor *outs[8] = {0};
  void *compiled = NULL;
  int rc = 1;
  ASSERT(p->desc.n_outputs <= 8);
  if (make_outputs(p, outs))
    goto done;
  for (int j = 0; j < p->desc.n_outputs; j++) {
    err_out[j] = 0;
    cos_out[j] = 1;
    grid_out[j] = -1;
  }
  for (int threads = 1; threads <= 2; threads++) {
    mb_engine_options eo = {threads, MB_PRECISION_INT8, 0, params};
    mb_status s = engine->compile(&p->desc, &eo, &compiled, &c->err);
    if (s) {
      fprintf(stderr, "  compile failed: %s\n", c->err.message);
      goto done;
    }
    for (int r = 0; r < 2; r++) {
      for (int j = 0; j < p->desc.n_outputs; j++)
        memset(outs[j]->data, 0xff, outs[j]->nbytes); /* NaN */
      if (engine->run(compiled, (const mb_tensor *const *)p->inputs, outs,
                      &c->err)) {
        fprintf(stderr, "  run failed: %s\n", c->err.message);
        goto done;
      }
      for (int j = 0; j < p->desc.n_outputs; j++) {
        const mb_quant_param *q = mb__quant_params_find(
            params, p->eg.graph->values[p->desc.outputs[j]].name);
        err_out[j] = fmax(err_out[j], normalised_error(outs[j], ref[j]));
        cos_out[j] = fmin(cos_out[j], cosine(outs[j], ref[j]));
        if (q && q->kind == MB_QUANT_KIND_ACTIVATION)
          grid_out[j] = fmax(grid_out[j], grid_distance(outs[j], q));
      }
    }
    engine->release(compiled);
    compiled = NULL;
  }
  rc = 0;
done:
  for (int j = 0; j < p->desc.n_outputs; j++)
    mb_tensor_free(outs[j]);
  engine->release(compiled);
  return rc;
}

/* What check_int8 expects of each output. */
typedef enum int8_expect {
  INT8_WRITTEN, /* by an int8 op: on its output's grid */
  INT8_FLOAT,   /* by a float op after int8 ones: close, not exact */
  INT8_NONE,    /* nothing ran in int8: as exact as fp32 */
} int8_expect;

/* c's graph in INT8 against fp32: close (cosine >= 0.999, normalised
 * error <= 0.05) and, as `expect` says per output, on the int8 grid of
 * the output (an int8 op wrote it) or not fp32-exact (int8 ran before);
 * INT8_NONE: within 1e-4 of fp32. `edit` (may be NULL) may change the
 * parameters first. Frees the case. */
static int check_int8_with(gcase *c, const mb_quant_options *qo,
                           const int8_expect *expect,
                           void (*edit)(mb_quant_params *)) {
  prepared p;
  mb_tensor *ref[8] = {0};
  mb_quant_params *params = NULL;
  double e[8], cs[8], grid[8];
  int rc = 1;
  if (prepare(c, &p) || run_reference(c, &p, ref) ||
      int8_params(c, &p, qo, &params))
    goto done;
  if (edit)
    edit(params);
  if (int8_run(c, &p, params, ref, e, cs, grid))
    goto done;
  for (int j = 0; j < p.desc.n_outputs; j++) {
    const char *name = c->g->values[p.desc.outputs[j]].name;
    printf("  %s: cosine %.6f, normalised error %.3g, grid distance %.3g\n",
           name, cs[j], e[j], grid[j]);
    bool ok = cs[j] >= 0.999 && e[j] <= 0.05;
    if (expect[j] == INT8_WRITTEN)
      ok = ok && grid[j] >= 0 && grid[j] <= 1e-3 && e[j] > 1e-6;
    else if (expect[j] == INT8_FLOAT)
      ok = ok && e[j] > 1e-6;
    else
      ok = e[j] <= 1e-4;
    if (!ok) {
      fprintf(stderr, "  output %s is not as expected (%d)\n", name,
              (int)expect[j]);
      goto done;
    }
  }
  rc = 0;
done:
  mb__quant_params_free(params);
  for (int j = 0; j < 8; j++)
    mb_tensor_free(ref[j]);
  prepared_free(&p);
  gc_free(c);
  return rc;
}

static int check_int8(gcase *c, int per_tensor_weights,
                      const int8_expect *expect) {
  mb_quant_options qo = {.per_tensor_weights = per_tensor_weights};
  return check_int8_with(c, &qo, expect, NULL);
}

static void gc_conv(gcase *c, const char *ins, const char *out, int64_t group) {
  const int64_t pads[4] = {1, 1, 1, 1};
  gc_node(c, "Conv", ins, out);
  gc_ints(c, "pads", 4, pads);
  if (group > 1)
    gc_int(c, "group", group);
}

/* Conv (signed input: a source zero point) -> Relu -> Conv -> Clip(0, 6)
 * -> depthwise Conv, with r1 also a graph output (an int8 value read
 * inside and exported), then grouped Conv -> Add (float) with the
 * depthwise output. Biases are large enough that a mis-scaled int8 bias
 * shows. Outputs: r1, d (int8-written), y (float). */
static void build_int8_convs(gcase *c) {
  int64_t x[4] = {1, 8, 12, 12}, w1[4] = {16, 8, 3, 3}, w2[4] = {16, 16, 3, 3};
  int64_t wd[4] = {16, 1, 3, 3}, wg[4] = {16, 4, 3, 3}, b[1] = {16};
  gc_init(c, 13);
  gc_input(c, "x", 4, x);
  gc_const(c, "w1", 4, w1, NULL, -0.3f, 0.3f);
  gc_const(c, "b1", 1, b, NULL, -1, 1);
  gc_const(c, "w2", 4, w2, NULL, -0.2f, 0.2f);
  gc_const(c, "b2", 1, b, NULL, -1, 1);
  gc_const(c, "wd", 4, wd, NULL, -0.5f, 0.5f);
  gc_const(c, "bd", 1, b, NULL, -1, 1);
  gc_const(c, "wg", 4, wg, NULL, -0.3f, 0.3f);
  gc_const(c, "lo", 0, NULL, (const float[]){0.0f}, 0, 0);
  gc_const(c, "hi", 0, NULL, (const float[]){6.0f}, 0, 0);
  gc_conv(c, "x,w1,b1", "c1", 1);
  gc_node(c, "Relu", "c1", "r1");
  gc_conv(c, "r1,w2,b2", "c2", 1);
  gc_node(c, "Clip", "c2,lo,hi", "k2");
  gc_conv(c, "k2,wd,bd", "d", 16);
  gc_conv(c, "d,wg", "g", 4);
  gc_node(c, "Add", "g,d", "y");
  gc_output(c, "r1");
  gc_output(c, "d");
  gc_output(c, "y");
}

TEST(int8_convolutions) {
  SKIP_UNLESS_AVAILABLE();
  static const int8_expect expect[] = {INT8_WRITTEN, INT8_WRITTEN, INT8_FLOAT};
  for (int per_tensor = 0; per_tensor < 2; per_tensor++) {
    gcase c;
    build_int8_convs(&c);
    if (check_int8(&c, per_tensor, expect))
      TEST_FAIL_("int8 convolutions (per-tensor weights %d) failed",
                 per_tensor);
  }
  return 0;
}

TEST(int8_symmetric_activations) {
  SKIP_UNLESS_AVAILABLE();
  static const int8_expect expect[] = {INT8_WRITTEN, INT8_WRITTEN, INT8_FLOAT};
  mb_quant_options qo = {.activations = MB_QUANT_ACTIVATIONS_INT8_SYMMETRIC};
  gcase c;
  build_int8_convs(&c);
  return check_int8_with(&c, &qo, expect, NULL);
}

TEST(int8_gemm_and_matmul) {
  SKIP_UNLESS_AVAILABLE();
  static const int8_expect written[] = {INT8_WRITTEN};
  gcase c;
  int64_t a[2] = {6, 24}, bt[2] = {10, 24}, cb[1] = {10}, w2[2] = {10, 7};
  gc_init(&c, 13); /* Gemm (transB, alpha, bias) -> Relu -> Gemm */
  gc_input(&c, "a", 2, a);
  gc_const(&c, "b", 2, bt, NULL, -1, 1);
  gc_const(&c, "c", 1, cb, NULL, -4, 4);
  gc_const(&c, "w2", 2, w2, NULL, -1, 1);
  gc_node(&c, "Gemm", "a,b,c", "t");
  gc_int(&c, "transB", 1);
  gc_float(&c, "alpha", 0.5f);
  gc_node(&c, "Relu", "t", "r");
  gc_node(&c, "Gemm", "r,w2", "y");
  gc_output(&c, "y");
  if (check_int8(&c, 0, written))
    TEST_FAIL_("int8 Gemm failed");

  int64_t a3[3] = {2, 5, 24}, w[2] = {24, 9};
  gc_init(&c, 13); /* MatMul [2,5,24] x [24,9] */
  gc_input(&c, "a", 3, a3);
  gc_const(&c, "w", 2, w, NULL, -1, 1);
  gc_node(&c, "MatMul", "a,w", "y");
  gc_output(&c, "y");
  if (check_int8(&c, 1, written))
    TEST_FAIL_("int8 MatMul failed");
  return 0;
}

/* Every Conv geometry of conv_variants, and every Gemm form: int8 where
 * XNNPACK has the form (a C that varies along M stays float). */
TEST(int8_conv_and_gemm_variants) {
  SKIP_UNLESS_AVAILABLE();
  static const int8_expect written[] = {INT8_WRITTEN};
  static const int8_expect none[] = {INT8_NONE};
  for (size_t i = 0; i < MB_ARRAY_COUNT(conv_specs); i++) {
    gcase c;
    build_conv(&c, &conv_specs[i]);
    if (check_int8(&c, 0, written))
      TEST_FAIL_("int8 conv spec %zu failed", i);
  }
  for (size_t i = 0; i < MB_ARRAY_COUNT(gemm_specs); i++) {
    const struct gemm_spec *s = &gemm_specs[i];
    bool per_m = s->c_rank == 2 && s->c_dims[0] > 1;
    gcase c;
    build_gemm(&c, s);
    if (check_int8(&c, (int)(i % 2), per_m ? none : written))
      TEST_FAIL_("int8 gemm spec %zu failed", i);
  }
  return 0;
}

/* A residual block as ResNet's: Conv -> Relu (r0, the block input) ->
 * Conv -> Relu -> Conv -> Add(r0) -> Relu. With the Add in int8 (the Relu
 * fused into it) y is on its grid; a float Add would not put it there. */
static void build_int8_residual(gcase *c) {
  int64_t x[4] = {1, 8, 10, 10}, w0[4] = {16, 8, 3, 3}, w[4] = {16, 16, 3, 3};
  int64_t b[1] = {16};
  gc_init(c, 13);
  gc_input(c, "x", 4, x);
  gc_const(c, "w0", 4, w0, NULL, -0.3f, 0.3f);
  gc_const(c, "b0", 1, b, NULL, -0.5f, 0.5f);
  gc_const(c, "w1", 4, w, NULL, -0.2f, 0.2f);
  gc_const(c, "b1", 1, b, NULL, -0.5f, 0.5f);
  gc_const(c, "w2", 4, w, NULL, -0.2f, 0.2f);
  gc_const(c, "b2", 1, b, NULL, -0.5f, 0.5f);
  gc_conv(c, "x,w0,b0", "c0", 1);
  gc_node(c, "Relu", "c0", "r0");
  gc_conv(c, "r0,w1,b1", "c1", 1);
  gc_node(c, "Relu", "c1", "r1");
  gc_conv(c, "r1,w2,b2", "c2", 1);
  gc_node(c, "Add", "c2,r0", "s");
  gc_node(c, "Relu", "s", "y");
  gc_output(c, "y");
}

TEST(int8_residual_block) {
  SKIP_UNLESS_AVAILABLE();
  static const int8_expect written[] = {INT8_WRITTEN};
  gcase c;
  build_int8_residual(&c);
  if (check_int8(&c, 0, written))
    TEST_FAIL_("int8 residual block failed");
  mb_quant_options qo = {.activations = MB_QUANT_ACTIVATIONS_INT8_SYMMETRIC};
  build_int8_residual(&c);
  if (check_int8_with(&c, &qo, written, NULL))
    TEST_FAIL_("int8 residual block (symmetric activations) failed");
  return 0;
}

/* Pools after int8 convolutions: Conv -> Relu -> MaxPool (3x3, stride 2,
 * padded; int8 with the input's quantisation, which is exact either way)
 * -> Conv -> Relu (r1) -> GlobalAveragePool (g: int8, on its grid) ->
 * Flatten (int8, the input's quantisation) -> Gemm (y: reads the qint8
 * value through a reshape); AveragePool (a) has no qs8 node in this
 * XNNPACK and stays float after the int8 Relu. */
static void build_int8_pools(gcase *c) {
  int64_t x[4] = {1, 8, 13, 13}, w0[4] = {16, 8, 3, 3}, w1[4] = {24, 16, 3, 3};
  int64_t b0[1] = {16}, b1[1] = {24}, wf[2] = {10, 24}, bf[1] = {10};
  const int64_t k3[2] = {3, 3}, s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1};
  const int64_t k2[2] = {2, 2};
  gc_init(c, 13);
  gc_input(c, "x", 4, x);
  gc_const(c, "w0", 4, w0, NULL, -0.3f, 0.3f);
  gc_const(c, "b0", 1, b0, NULL, -0.5f, 0.5f);
  gc_const(c, "w1", 4, w1, NULL, -0.2f, 0.2f);
  gc_const(c, "b1", 1, b1, NULL, -0.5f, 0.5f);
  gc_const(c, "wf", 2, wf, NULL, -0.5f, 0.5f);
  gc_const(c, "bf", 1, bf, NULL, -0.5f, 0.5f);
  gc_conv(c, "x,w0,b0", "c0", 1);
  gc_node(c, "Relu", "c0", "r0");
  gc_node(c, "MaxPool", "r0", "m");
  gc_ints(c, "kernel_shape", 2, k3);
  gc_ints(c, "strides", 2, s2);
  gc_ints(c, "pads", 4, p1);
  gc_conv(c, "m,w1,b1", "c1", 1);
  gc_node(c, "Relu", "c1", "r1");
  gc_node(c, "GlobalAveragePool", "r1", "g");
  gc_node(c, "Flatten", "g", "f");
  gc_node(c, "Gemm", "f,wf,bf", "y");
  gc_int(c, "transB", 1);
  gc_node(c, "AveragePool", "r1", "a");
  gc_ints(c, "kernel_shape", 2, k2);
  gc_ints(c, "strides", 2, k2);
  gc_output(c, "g");
  gc_output(c, "y");
  gc_output(c, "a");
}

TEST(int8_pools) {
  SKIP_UNLESS_AVAILABLE();
  static const int8_expect expect[] = {INT8_WRITTEN, INT8_WRITTEN, INT8_FLOAT};
  for (int per_tensor = 0; per_tensor < 2; per_tensor++) {
    gcase c;
    build_int8_pools(&c);
    if (check_int8(&c, per_tensor, expect))
      TEST_FAIL_("int8 pools (per-tensor weights %d) failed", per_tensor);
  }
  return 0;
}

/* Add and Mul of two int8 values of different quantisations (convolutions
 * whose outputs differ in range about 10x), written on their grids; an Add
 * of two graph inputs (nothing at hand in int8) stays float. */
static void build_int8_binaries(gcase *c) {
  int64_t x[4] = {1, 8, 9, 9}, w[4] = {16, 8, 3, 3}, b[1] = {16};
  gc_init(c, 13);
  gc_input(c, "x", 4, x);
  gc_input(c, "u", 4, x);
  gc_input(c, "v", 4, x);
  gc_const(c, "wa", 4, w, NULL, -0.3f, 0.3f);
  gc_const(c, "ba", 1, b, NULL, -0.5f, 0.5f);
  gc_const(c, "wb", 4, w, NULL, -3.0f, 3.0f);
  gc_const(c, "bb", 1, b, NULL, -5.0f, 5.0f);
  gc_conv(c, "x,wa,ba", "ca", 1);
  gc_conv(c, "x,wb,bb", "cb", 1);
  gc_node(c, "Add", "ca,cb", "s");
  gc_node(c, "Mul", "ca,cb", "p");
  gc_node(c, "Add", "u,v", "q");
  gc_output(c, "s");
  gc_output(c, "p");
  gc_output(c, "q");
}

TEST(int8_add_mul_of_different_scales) {
  SKIP_UNLESS_AVAILABLE();
  static const int8_expect expect[] = {INT8_WRITTEN, INT8_WRITTEN, INT8_NONE};
  gcase c;
  build_int8_binaries(&c);
  return check_int8(&c, 0, expect);
}

/* Output scales that put the Add's and Mul's rescaling out of XNNPACK's
 * range keep them in float (the segment still compiles, the convolutions
 * stay int8): */
static void huge_binary_output_scales(mb_quant_params *params) {
  static const char *const names[] = {"s", "p", "y"};
  for (size_t i = 0; i < MB_ARRAY_COUNT(names); i++) {
    mb_quant_param *q = mb__quant_params_find(params, names[i]);
    if (q)
      q->scales[0] *= 4096.0f;
  }
}

TEST(int8_binary_refusals_stay_float) {
  SKIP_UNLESS_AVAILABLE();
  static const int8_expect floats[] = {INT8_FLOAT, INT8_FLOAT, INT8_NONE};
  static const int8_expect one_float[] = {INT8_FLOAT};
  mb_quant_options qo = {0};
  gcase c;
  build_int8_binaries(&c);
  if (check_int8_with(&c, &qo, floats, huge_binary_output_scales))
    TEST_FAIL_("out-of-range Add/Mul scales did not keep them in float");
  build_int8_residual(&c);
  if (check_int8_with(&c, &qo, one_float, huge_binary_output_scales))
    TEST_FAIL_("out-of-range residual Add scale did not keep it in float");
  return 0;
}

/* Scales XNNPACK refuses keep the nodes in float: the segment compiles
 * and is as exact as FP32. Zero activation scales: */
static void zero_activation_scales(mb_quant_params *params) {
  for (int i = 0; i < params->count; i++)
    if (params->tensors[i].kind == MB_QUANT_KIND_ACTIVATION)
      params->tensors[i].scales[0] = 0.0f;
}

/* Weight scales that make every requantisation scale (input scale x
 * weight scale / output scale) far larger than XNNPACK's 256: */
static void huge_weight_scales(mb_quant_params *params) {
  for (int i = 0; i < params->count; i++)
    if (params->tensors[i].kind == MB_QUANT_KIND_WEIGHT)
      for (int64_t ch = 0; ch < params->tensors[i].channels; ch++)
        params->tensors[i].scales[ch] = 1e6f;
}

/* Weight entries whose channel count is not the node's stay unused. */
static void wrong_weight_channels(mb_quant_params *params) {
  for (int i = 0; i < params->count; i++)
    if (params->tensors[i].kind == MB_QUANT_KIND_WEIGHT &&
        params->tensors[i].channels > 1)
      params->tensors[i].channels--;
}

TEST(int8_refusals_stay_float) {
  SKIP_UNLESS_AVAILABLE();
  static const int8_expect none[] = {INT8_NONE, INT8_NONE, INT8_NONE};
  mb_quant_options qo = {0};
  gcase c;
  build_int8_convs(&c);
  if (check_int8_with(&c, &qo, none, zero_activation_scales))
    TEST_FAIL_("zero scales did not keep the nodes in float");
  build_int8_convs(&c);
  if (check_int8_with(&c, &qo, none, huge_weight_scales))
    TEST_FAIL_("huge requantisation scales did not keep the nodes in float");
  build_int8_convs(&c);
  if (check_int8_with(&c, &qo, none, wrong_weight_channels))
    TEST_FAIL_("mismatched weight entries did not keep the nodes in float");
  return 0;
}

/* Nodes without parameters run in fp32 (as exact as FP32), and INT8
 * without any parameters is an error, not a crash. */
TEST(int8_without_parameters) {
  SKIP_UNLESS_AVAILABLE();
  gcase c;
  prepared p;
  mb_tensor *ref[8] = {0};
  mb_quant_params empty;
  double e[8], cs[8], grid[8];
  int rc = 1;
  memset(&empty, 0, sizeof empty);
  build_int8_convs(&c);
  if (prepare(&c, &p) || run_reference(&c, &p, ref) ||
      int8_run(&c, &p, &empty, ref, e, cs, grid))
    goto done;
  for (int j = 0; j < p.desc.n_outputs; j++) {
    if (!(e[j] <= 1e-4)) {
      fprintf(stderr, "  uncalibrated output %d: normalised error %g\n", j,
              e[j]);
      goto done;
    }
  }
  {
    mb_engine_options eo = {1, MB_PRECISION_INT8, 0, NULL};
    void *compiled = NULL;
    mb_status st = engine->compile(&p.desc, &eo, &compiled, &c.err);
    if (st != MB_STATUS_INVALID_ARGUMENT || compiled ||
        !strstr(c.err.message, "quantisation parameters")) {
      fprintf(stderr, "  INT8 without parameters: status %d, '%s'\n", st,
              c.err.message);
      engine->release(compiled);
      goto done;
    }
  }
  rc = 0;
done:
  for (int j = 0; j < 8; j++)
    mb_tensor_free(ref[j]);
  prepared_free(&p);
  gc_free(&c);
  return rc;
}

TEST_MAIN(TEST_ENTRY(int8_convolutions), TEST_ENTRY(int8_symmetric_activations),
          TEST_ENTRY(int8_gemm_and_matmul),
          TEST_ENTRY(int8_conv_and_gemm_variants),
          TEST_ENTRY(int8_residual_block), TEST_ENTRY(int8_pools),
          TEST_ENTRY(int8_add_mul_of_different_scales),
          TEST_ENTRY(int8_binary_refusals_stay_float),
          TEST_ENTRY(int8_refusals_stay_float),
          TEST_ENTRY(int8_without_parameters))
