/* Branch-free float32 math that the compiler can vectorise, shared by the
 * operator families (libm's expf is a scalar call that keeps activation and
 * softmax loops from vectorising). */
#ifndef MB_OPS_VMATH_H
#define MB_OPS_VMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* exp: Cody-Waite reduction x = n ln2 + r, |r| <= ln2 / 2, degree-7 Taylor
 * polynomial (truncation error below 0.1 ulp), scaled by 2^n through the
 * exponent bits. Results below 2^-125 flush to 0. */
static inline float mb__exp_f32(float x) {
  const float hi = 88.7228393f, lo = -86.6433563f; /* ln FLT_MAX, -125 ln2 */
  const float round = 12582912.0f;                 /* 1.5 * 2^23 */
  float xc = x > hi ? hi : x < lo ? lo : x;
  float t = xc * 1.44269504088896341f + round; /* n in the low bits */
  float n = t - round;
  float r = xc - n * 0.693359375f - n * -2.12194440e-4f;
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  uint32_t bits;
  memcpy(&bits, &t, sizeof bits);
  bits = (bits - 0x4B400000u + 126u) << 23; /* 2^(n-1), n in [-125, 128] */
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  float y = p * scale * 2.0f;
  y = x > hi ? INFINITY : x < lo ? 0.0f : y;
  return x != x ? x : y;
}

#endif /* MB_OPS_VMATH_H */
