#include "data/normal_rows.h"

#include <algorithm>
#include <bit>

#include "ddpscope/random.h"

namespace ddp {
namespace {

// One chunk is kLanes Philox blocks computed side by side; the loops over lanes have a fixed
// trip count so that they vectorise without a scalar tail (a tail could round differently).
constexpr int kLanes = 16;

// ln(u) for u in (0, 1]: u = m * 2^e with m in [sqrt(1/2), sqrt(2)), then Cephes' logf
// polynomial for ln(m) (relative error ~1e-7).
inline float log_unit(float u) {
  const uint32_t bits = std::bit_cast<uint32_t>(u);
  float e = static_cast<float>(static_cast<int32_t>(bits >> 23) - 126);
  float m = std::bit_cast<float>((bits & 0x007FFFFFu) | 0x3F000000u);  // [0.5, 1)
  const bool small = m < 0.70710678f;
  e = small ? e - 1.0f : e;
  m = small ? m + m - 1.0f : m - 1.0f;
  const float z = m * m;
  float y = 7.0376836292e-2f;
  y = y * m - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  y += -2.12194440e-4f * e;
  y += -0.5f * z;
  return m + y + 0.693359375f * e;
}

// sqrt(v) for v in [0, 64): std::sqrt may set errno, which keeps GCC from vectorising it
// without -fno-math-errno, so the classic reciprocal-square-root guess plus three Newton steps
// (relative error ~1e-7) stands in for it.
inline float sqrt_small(float v) {
  float y = std::bit_cast<float>(0x5F3759DFu - (std::bit_cast<uint32_t>(v) >> 1));
  for (int i = 0; i < 3; ++i) y = y * (1.5f - 0.5f * v * y * y);
  return v > 0.0f ? v * y : 0.0f;  // at v = 0 the guess overflows; the select drops that lane
}

// cos and sin of 2*pi*t for t in (0, 1]: the quadrant comes from t exactly (t is in turns,
// so no reduction by an inexact pi), then Cephes' polynomials on [-pi/4, pi/4].
inline void sincos_turns(float t, float& c, float& s) {
  const int quadrant4 = static_cast<int>(4.0f * t + 0.5f);  // nearest quarter turn, 0..4
  const float x = (t - 0.25f * static_cast<float>(quadrant4)) * 6.28318530717958647692f;
  const float z = x * x;
  const float sp = ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * x + x;
  const float cp =
      ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z + 4.166664568298827e-2f) * z * z - 0.5f * z + 1.0f;
  const int quadrant = quadrant4 & 3;
  const float c_abs = (quadrant & 1) ? sp : cp, s_abs = (quadrant & 1) ? cp : sp;
  c = (quadrant == 1 || quadrant == 2) ? -c_abs : c_abs;
  s = (quadrant >= 2) ? -s_abs : s_abs;
}

// out[k * kLanes + l] = normal4(key, hi[l], lo[l])[k], up to the polynomials.
void normal_chunk(uint64_t key, const uint64_t (&hi)[kLanes], const uint64_t (&lo)[kLanes], float (&out)[4 * kLanes]) {
  // Philox stays scalar (GCC does not vectorise its 32x32->64 products); the Box-Muller loop
  // below is the expensive half and vectorises.
  uint32_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    const Philox r = philox4x32({static_cast<uint32_t>(lo[l]), static_cast<uint32_t>(lo[l] >> 32),
                                 static_cast<uint32_t>(hi[l]), static_cast<uint32_t>(hi[l] >> 32)},
                                key);
    c0[l] = r[0];
    c1[l] = r[1];
    c2[l] = r[2];
    c3[l] = r[3];
  }
  for (int l = 0; l < kLanes; ++l) {
    const float r0 = sqrt_small(-2.0f * log_unit(uniform_open0(c0[l])));
    const float r1 = sqrt_small(-2.0f * log_unit(uniform_open0(c2[l])));
    float cos0, sin0, cos1, sin1;
    sincos_turns(uniform_open0(c1[l]), cos0, sin0);
    sincos_turns(uniform_open0(c3[l]), cos1, sin1);
    out[0 * kLanes + l] = r0 * cos0;
    out[1 * kLanes + l] = r0 * sin0;
    out[2 * kLanes + l] = r1 * cos1;
    out[3 * kLanes + l] = r1 * sin1;
  }
}

}  // namespace

void normal_rows(uint64_t key, uint64_t hi, std::span<const int64_t> rows, float* a, int64_t width_a, float* b,
                 int64_t width_b) {
  const int64_t width = width_a + width_b;
  const int64_t groups = (width + 3) / 4;
  const int64_t blocks = static_cast<int64_t>(rows.size()) * groups;
  uint64_t hi_lanes[kLanes], lo_lanes[kLanes];
  float out[4 * kLanes];
  for (int64_t first = 0; first < blocks; first += kLanes) {
    const int live = static_cast<int>(std::min<int64_t>(kLanes, blocks - first));
    for (int l = 0; l < kLanes; ++l) {
      // Lanes past the end repeat the last block; their results are dropped.
      const int64_t block = first + std::min(l, live - 1);
      lo_lanes[l] = static_cast<uint64_t>(rows[block / groups]);
      hi_lanes[l] = hi + static_cast<uint64_t>(block % groups);
    }
    normal_chunk(key, hi_lanes, lo_lanes, out);
    for (int l = 0; l < live; ++l) {
      const int64_t block = first + l;
      const int64_t row = block / groups;
      const int64_t e0 = (block % groups) * 4;
      for (int k = 0; k < 4; ++k) {
        const int64_t e = e0 + k;
        if (e < width_a) {
          a[row * width_a + e] = out[k * kLanes + l];
        } else if (e < width) {
          b[row * width_b + (e - width_a)] = out[k * kLanes + l];
        }
      }
    }
  }
}

}  // namespace ddp
