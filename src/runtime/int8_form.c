/* The int8 form: how wide the int8 weights of a conversion may be for the
 * integer kernels of its runtime on this CPU (quantize.h's weight_bits).
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
 * Each runtime answers through its optional int8_weight_bits hook
 * (runtime.h): ONNX Runtime by the CPU's flags as MLAS dispatches on them,
 * oneDNN by the ISA it runs at (ONEDNN_MAX_CPU_ISA may cap it below the
 * CPU's), XNNPACK never saturates (its qs8 kernels widen to 16 bits and
 * multiply-add into 32 with vpmaddwd), and the reference interpreter runs
 * the model ONNX Runtime would, so it follows ONNX Runtime. */
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

int mb__cpu_int8_weight_bits(char *reason, size_t size) {
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
    return 8;
  }
  if (reason && size)
    snprintf(reason, size,
             "this CPU has no VNNI: u8 x s8 products (vpmaddubsw) add in "
             "pairs in 16 bits and saturate");
  return 7;
}
#else
int mb__cpu_int8_weight_bits(char *reason, size_t size) {
  if (reason && size)
    snprintf(reason, size,
             "not x86: int8 products widen before they add, no saturation");
  return 8;
}
#endif

int mb__int8_form(const mb_runtime *rt, int requested, char *reason,
                  size_t size) {
  char why[160];
  int needed =
      rt && rt->int8_weight_bits ? rt->int8_weight_bits(why, sizeof why) : 8;
  if (!(rt && rt->int8_weight_bits))
    snprintf(why, sizeof why, "%s's int8 products cannot saturate",
             rt ? rt->name : "the runtime");
  if (requested != 7 && requested != 8) {
    if (reason && size)
      snprintf(reason, size, "%s", why);
    return needed;
  }
  if (reason && size && requested == needed)
    snprintf(reason, size, "--int8-weights %d, as auto: %s", requested, why);
  else if (reason && size)
    snprintf(reason, size, "--int8-weights %d (auto would choose %d: %s)",
             requested, needed, why);
  return requested;
}
