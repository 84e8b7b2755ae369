#pragma once
// Four standard normals from one Philox block, written once for the CPU (data/normal_rows.cpp,
// vectorised) and the GPU (gpu/normal_rows.cu): Box-Muller with log, sqrt, sin and cos as
// polynomials (within 2e-6 of normal4() in ddpscope/random.h).
//
// Bit-identical on both because nothing is left to the compiler's choice: every product
// that feeds a sum is an explicit fused multiply-add, so no compiler can contract it
// differently (GCC with -march=native and nvcc both fuse a*b+c by default, each where it
// likes); float add, multiply and fma are correctly rounded on both; there is no division
// and no library call.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "ddpscope/philox.h"

namespace ddp::philox_normal {

DDP_HOST_DEVICE inline float fused(float a, float b, float c) {  // a * b + c, rounded once
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// A value's bits as another type of the same size (memcpy: nvcc compiles it for the device too).
template <typename To, typename From>
DDP_HOST_DEVICE inline To bit_copy(From from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  memcpy(&to, &from, sizeof to);
  return to;
}

// ln(u) for u in (0, 1]: u = m * 2^e with m in [sqrt(1/2), sqrt(2)), then Cephes' logf
// polynomial for ln(m) (relative error ~1e-7).
DDP_HOST_DEVICE inline float log_unit(float u) {
  const uint32_t bits = bit_copy<uint32_t>(u);
  float e = static_cast<float>(static_cast<int32_t>(bits >> 23) - 126);
  float m = bit_copy<float>((bits & 0x007FFFFFu) | 0x3F000000u);  // [0.5, 1)
  const bool small = m < 0.70710678f;
  e = small ? e - 1.0f : e;
  m = small ? m + m - 1.0f : m - 1.0f;
  const float z = m * m;
  float y = 7.0376836292e-2f;
  y = fused(y, m, -1.1514610310e-1f);
  y = fused(y, m, 1.1676998740e-1f);
  y = fused(y, m, -1.2420140846e-1f);
  y = fused(y, m, 1.4249322787e-1f);
  y = fused(y, m, -1.6668057665e-1f);
  y = fused(y, m, 2.0000714765e-1f);
  y = fused(y, m, -2.4999993993e-1f);
  y = fused(y, m, 3.3333331174e-1f);
  y = y * m * z;
  y = fused(-2.12194440e-4f, e, y);
  y = fused(-0.5f, z, y);
  return fused(0.693359375f, e, m + y);
}

// sqrt(v) for v in [0, 64): the reciprocal-square-root guess plus three Newton steps
// (relative error ~1e-7); std::sqrt may set errno, which keeps GCC from vectorising it.
DDP_HOST_DEVICE inline float sqrt_small(float v) {
  float y = bit_copy<float>(0x5F3759DFu - (bit_copy<uint32_t>(v) >> 1));
  for (int i = 0; i < 3; ++i) y = y * fused(-(0.5f * v * y), y, 1.5f);
  return v > 0.0f ? v * y : 0.0f;  // at v = 0 the guess overflows; the select drops that lane
}

// cos and sin of 2*pi*t for t in (0, 1]: the quadrant comes from t exactly (t is in turns,
// so no reduction by an inexact pi), then Cephes' polynomials on [-pi/4, pi/4].
DDP_HOST_DEVICE inline void sincos_turns(float t, float& c, float& s) {
  const int quadrant4 = static_cast<int>(fused(4.0f, t, 0.5f));  // nearest quarter turn, 0..4
  const float x = fused(-0.25f, static_cast<float>(quadrant4), t) * 6.28318530717958647692f;
  const float z = x * x;
  float sp = fused(-1.9515295891e-4f, z, 8.3321608736e-3f);
  sp = fused(sp, z, -1.6666654611e-1f);
  sp = fused(sp * z, x, x);
  float cp = fused(2.443315711809948e-5f, z, -1.388731625493765e-3f);
  cp = fused(cp, z, 4.166664568298827e-2f);
  cp = fused(cp * z, z, fused(-0.5f, z, 1.0f));
  const int quadrant = quadrant4 & 3;
  const float c_abs = (quadrant & 1) ? sp : cp, s_abs = (quadrant & 1) ? cp : sp;
  c = (quadrant == 1 || quadrant == 2) ? -c_abs : c_abs;
  s = (quadrant >= 2) ? -s_abs : s_abs;
}

// Normals k = 0..3 of block (c0..c3): radius from c0 (k = 0, 1) and c2 (k = 2, 3), angle
// from c1 and c3; out[0] = r0 cos, out[1] = r0 sin, out[2] = r1 cos, out[3] = r1 sin.
DDP_HOST_DEVICE inline void box_muller(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, float* out) {
  const float r0 = sqrt_small(-2.0f * log_unit(uniform_open0(c0)));
  const float r1 = sqrt_small(-2.0f * log_unit(uniform_open0(c2)));
  float cos0, sin0, cos1, sin1;
  sincos_turns(uniform_open0(c1), cos0, sin0);
  sincos_turns(uniform_open0(c3), cos1, sin1);
  out[0] = r0 * cos0;
  out[1] = r0 * sin0;
  out[2] = r1 * cos1;
  out[3] = r1 * sin1;
}

// The four normals of counter (lo, hi) under key, as normal_rows() computes them.
DDP_HOST_DEVICE inline void normals4(uint64_t key, uint64_t hi, uint64_t lo, float* out) {
  const PhiloxBlock r = philox4x32_10(lo, hi, key);
  box_muller(r.v[0], r.v[1], r.v[2], r.v[3], out);
}

}  // namespace ddp::philox_normal
