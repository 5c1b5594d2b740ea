/* The int8 form: how wide the int8 weights of a conversion may be for the
 * integer kernels of its runtime on this CPU (mb_int8_weights).
 *
 * x86 CPUs without VNNI multiply uint8 activations by int8 weights with
 * vpmaddubsw, which adds each pair of adjacent products in 16 bits and
 * saturates: 2 x 255 x 127 = 64770 does not fit in 32767. ONNX Runtime's
 * MLAS and oneDNN both use it below VNNI (their documentation says so and
 * recommends 7-bit weights: ORT's reduce_range, oneDNN's 0.5 weight scale).
 * VNNI (vpdpbusd, AVX512-VNNI or AVX-VNNI) and AMX (tdpbusd) add the four
 * products of a group in 32 bits and cannot saturate. With weights of at
 * most 64 in magnitude a pair is at most 2 x 255 x 64 = 32640: exact.
 *
 * Where products saturate, a runtime's automatic form is MIXED: 7-bit
 * weights for the products whose input is signed, 8-bit for those whose
 * input is non-negative. A signed input's uint8 values sit around its zero
 * point (about 128), so two adjacent ones with large weights of one sign
 * overflow routinely: INT8_STATIC+ONEDNN on a transformer encoder at
 * ONEDNN_MAX_CPU_ISA=AVX2 gave cosine 0.986 with 8-bit weights, 0.99994
 * with 7. A non-negative input (a ReLU's) is mostly small: overflow needs
 * two adjacent values above half their range meeting two near-maximal
 * weights of one sign, and 7 bits everywhere cost more than that: ResNet-18
 * there gave 0.99908 with 8-bit weights, 0.99878 with 7 everywhere and
 * 0.99957 MIXED (0.99960 with VNNI). W7 (every product exact) stays one
 * option away (--int8-weights 7).
 *
 * Each runtime answers through its optional int8_weights hook (runtime.h):
 * ONNX Runtime by the CPU's flags as MLAS dispatches on them, oneDNN by the
 * ISA it runs at (ONEDNN_MAX_CPU_ISA may cap it below the CPU's), XNNPACK
 * never saturates (its qs8 kernels widen to 16 bits and multiply-add into
 * 32 with vpmaddwd), and the reference interpreter runs the model ONNX
 * Runtime would, so it follows ONNX Runtime. */
#include "runtime/runtime.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

/* XCR0: which register states the OS saves (AVX: 0x6; AVX-512: 0xe6). */
static uint64_t xcr0(void) {
  uint32_t a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) /* OSXSAVE */
    return 0;
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

mb_int8_weights mb__cpu_int8_weights(char *reason, size_t size) {
  uint32_t a = 0, b = 0, c = 0, d = 0, a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  uint64_t os = xcr0();
  bool leaf7 = __get_cpuid_count(7, 0, &a, &b, &c, &d);
  if (leaf7 && a >= 1)
    __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1);
  bool avx512 = (os & 0xe6) == 0xe6, avx = (os & 0x6) == 0x6;
  const char *has = leaf7 && (d & (1u << 25)) && avx512   ? "AMX-INT8"
                    : leaf7 && (c & (1u << 11)) && avx512 ? "AVX512-VNNI"
                    : (a1 & (1u << 4)) && avx             ? "AVX-VNNI"
                                                          : NULL;
  if (has) {
    if (reason && size)
      snprintf(reason, size,
               "this CPU has %s: int8 products add in 32 bits and cannot "
               "saturate",
               has);
    return MB_INT8_WEIGHTS_W8;
  }
  if (reason && size)
    snprintf(reason, size,
             "this CPU has no VNNI: u8 x s8 products (vpmaddubsw) add in "
             "pairs in 16 bits and saturate");
  return MB_INT8_WEIGHTS_MIXED;
}
#else
mb_int8_weights mb__cpu_int8_weights(char *reason, size_t size) {
  if (reason && size)
    snprintf(reason, size,
             "not x86: int8 products widen before they add, no saturation");
  return MB_INT8_WEIGHTS_W8;
}
#endif

const char *mb__int8_weights_words(mb_int8_weights weights) {
  switch (weights) {
  case MB_INT8_WEIGHTS_W8:
    return "8-bit weights";
  case MB_INT8_WEIGHTS_W7:
    return "7-bit weights";
  case MB_INT8_WEIGHTS_MIXED:
    return "7-bit weights where a product's input is signed, 8-bit where "
           "it is non-negative";
  default:
    return "weights of the runtime's choice";
  }
}

mb_int8_weights mb__int8_form(const mb_runtime *rt, mb_int8_weights requested,
                              char *reason, size_t size) {
  char why[320];
  mb_int8_weights needed = MB_INT8_WEIGHTS_W8;
  if (rt && rt->int8_weights)
    needed = rt->int8_weights(why, sizeof why);
  else
    snprintf(why, sizeof why, "%s's int8 products cannot saturate",
             rt ? rt->name : "the runtime");
  if (requested <= MB_INT8_WEIGHTS_AUTO || requested >= MB_INT8_WEIGHTS_COUNT) {
    if (reason && size)
      snprintf(reason, size, "%s", why);
    return needed;
  }
  if (reason && size && requested == needed)
    snprintf(reason, size, "--int8-weights %s, as auto: %s",
             mb_int8_weights_name(requested), why);
  else if (reason && size)
    snprintf(reason, size, "--int8-weights %s (auto would choose %s: %s)",
             mb_int8_weights_name(requested), mb_int8_weights_name(needed),
             why);
  return requested;
}
