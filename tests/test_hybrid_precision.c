/* Reduced precision on the hybrid runtimes: a segment the engine cannot
 * compile at the conversion's precision runs in fp32 (cut at the nodes the
 * engine has no reduced form for, when it can say which), the profile says
 * which precision each segment ran at and its FLOPs, and --no-fallback
 * (no_fallback) still makes it an error. Plus the registry's view: a
 * precision this CPU only emulates leaves tier 2, with a note. */
#include "conversions/conversion.h"
#include "op_harness.h"
#include "runtime/engine.h"

#define V(...)                                                                 \
  (const double[]) {                                                           \
    __VA_ARGS__                                                                \
  }

/* Conv -> HardSwish -> Conv: XNNPACK's fp16 rewrite aborts on HardSwish,
 * so modelbench never gives it to XNNPACK in fp16. */
static mb_model *conv_hardswish_conv(mb_tensor **input) {
  graph_builder b;
  int64_t xd[4] = {1, 4, 8, 8}, wd[4] = {4, 4, 3, 3};
  double w[144];
  for (int i = 0; i < 144; i++)
    w[i] = ((i * 37) % 17 - 8) * 0.02;
  gb_init(&b, 14);
  gb_input(&b, "x", MB_DTYPE_FLOAT, 4, xd);
  const char *w1 = gb_const(&b, MB_DTYPE_FLOAT, 4, wd, w);
  const char *w2 = gb_const(&b, MB_DTYPE_FLOAT, 4, wd, w);
  const char *c1 = GB_OP(&b, "Conv", "x", w1);
  gb_ints(&b, "pads", 4, (const int64_t[]){1, 1, 1, 1});
  const char *h = GB_OP(&b, "HardSwish", c1);
  const char *c2 = GB_OP(&b, "Conv", h, w2);
  gb_ints(&b, "pads", 4, (const int64_t[]){1, 1, 1, 1});
  gb_output(&b, c2, MB_DTYPE_FLOAT, 4, xd);
  double xs[256];
  for (int i = 0; i < 256; i++)
    xs[i] = ((i * 13) % 29 - 14) * 0.07;
  *input = tensor_of(MB_DTYPE_FLOAT, 4, xd, xs);
  return gb_finish(&b);
}

static const mb_runtime *xnnpack_here(void) {
  const mb_runtime *rt = mb__runtime_find("xnnpack");
  mb_runtime_info info = {0};
  if (!rt)
    return NULL;
  rt->probe(&info);
  return info.available ? rt : NULL;
}

TEST(fp16_segment_falls_back_to_fp32) {
  const mb_runtime *rt = xnnpack_here();
  if (!rt) {
    fprintf(stderr, "  XNNPACK unavailable: skipped\n");
    return 0;
  }
  mb_tensor *x = NULL;
  mb_model *m = conv_hardswish_conv(&x);
  ASSERT(m);
  mb_tensor *in[1] = {x}, *want[1] = {0}, *got[1] = {0};
  ASSERT_EQ(run_reference(m, in, want), 0);
  mb_runtime_options opts = {.threads = 1,
                             .precision = MB_PRECISION_FP16,
                             .example_inputs = (const mb_tensor *const *)in};
  mb_error err = {0};
  void *session = NULL;
  /* --no-fallback: the HardSwish segment is an error naming fp16. */
  opts.no_fallback = 1;
  ASSERT_NE(rt->prepare(m, NULL, 0, &opts, &session, &err), MB_STATUS_OK);
  ASSERT_CONTAINS(err.message, "fp16");
  ASSERT_CONTAINS(err.message, "HardSwish");
  /* With fallback: it runs, the HardSwish part in fp32. */
  opts.no_fallback = 0;
  err = (mb_error){0};
  ASSERT_OK(rt->prepare(m, NULL, 0, &opts, &session, &err), &err);
  ASSERT_OK(rt->run(session, (const mb_tensor *const *)in, &err), &err);
  ASSERT_OK(rt->fetch_outputs(session, got, &err), &err);
  double worst = 0, scale = 1;
  for (int64_t i = 0; i < want[0]->numel; i++) {
    scale = fmax(scale, fabs(mb__tensor_get_f64(want[0], i)));
    worst = fmax(worst, fabs(mb__tensor_get_f64(got[0], i) -
                             mb__tensor_get_f64(want[0], i)));
  }
  ASSERT(worst <= 2e-2 * scale); /* fp16 */
  mb_profile prof;
  memset(&prof, 0, sizeof prof);
  rt->profile_reset(session, 1);
  ASSERT_OK(rt->run(session, (const mb_tensor *const *)in, &err), &err);
  prof.iterations = 1;
  ASSERT_OK(rt->profile_collect(session, &prof, &err), &err);
  int fp16 = 0, fp32 = 0;
  double flops16 = 0, flops = 0;
  for (int i = 0; i < prof.n_segments; i++) {
    const mb_profile_segment *s = &prof.segments[i];
    ASSERT_STR_EQ(s->runtime, "xnnpack");
    ASSERT(s->gflops >= 0);
    flops += s->gflops;
    if (strcmp(s->precision, "fp16") == 0) {
      fp16++;
      flops16 += s->gflops;
    } else {
      ASSERT_STR_EQ(s->precision, "fp32");
      fp32++;
    }
  }
  /* Both convolutions in fp16, HardSwish alone in fp32. */
  ASSERT_EQ(fp16, 2);
  ASSERT_EQ(fp32, 1);
  ASSERT(flops16 > 0.9 * flops);
  ASSERT_CONTAINS(prof.note, "fp32");
  mb__profile_clear(&prof);
  rt->release(session);
  mb_tensor_free(x);
  free_tensors(want, 1);
  free_tensors(got, 1);
  mb_model_free(m);
  return 0;
}

/* The words a report shows for a result's precision. */
TEST(precision_label) {
  mb_bench_result r;
  char buf[64];
  memset(&r, 0, sizeof r);
  r.conversion = "FP16+XNNPACK";
  r.conversion_index = -1;
  r.precision_share = 0.83;
  ASSERT_STR_EQ(mb_bench_result_precision(&r, buf, sizeof buf),
                "fp16 (83% of FLOPs)");
  r.precision_share = 1.0;
  ASSERT_STR_EQ(mb_bench_result_precision(&r, buf, sizeof buf), "fp16");
  r.precision_share = -1.0;
  ASSERT_STR_EQ(mb_bench_result_precision(&r, buf, sizeof buf), "fp16");
  return 0;
}

/* FP16+XNNPACK is tier 2 where XNNPACK has fp16 arithmetic (Arm with
 * asimdhp), else tier 3, available, with "emulated on this CPU": always on
 * x86, whose fp16 kernels in this XNNPACK convert around fp32. */
TEST(emulated_precision_leaves_tier_2) {
#if defined(__x86_64__) || defined(__i386__)
  int native = 0;
#else
  static const char *const asimdhp[] = {"asimdhp"};
  int native = mb__engine_cpu_has(asimdhp, 1) > 0;
#endif
  int index = -1;
  mb_conversion_info info;
  mb_error err = {0};
  ASSERT_OK(mb_conversion_find("FP16+XNNPACK", &index, &err), &err);
  ASSERT_OK(mb_conversion_get(index, &info, &err), &err);
  if (!xnnpack_here()) {
    ASSERT(!info.available);
    return 0;
  }
  ASSERT(info.available);
  if (native) {
    ASSERT_EQ(info.tier, 2);
    ASSERT_STR_EQ(info.reason, "");
  } else {
    ASSERT_EQ(info.tier, 3);
    ASSERT_CONTAINS(info.reason, "emulated on this CPU");
  }
  return 0;
}

TEST_MAIN(TEST_ENTRY(fp16_segment_falls_back_to_fp32),
          TEST_ENTRY(precision_label),
          TEST_ENTRY(emulated_precision_leaves_tier_2))
