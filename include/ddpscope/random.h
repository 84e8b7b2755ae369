#pragma once
// Counter-based random numbers: every value is a pure function of (key, counter), so data
// and shuffles are identical whatever the number of ranks or loader threads.
// Philox4x32-10 (Salmon et al., SC'11; ddpscope/philox.h, shared with the GPU) because the
// standard library of C++20 has no counter-based engine and the algorithm is ten lines.
#include <array>
#include <cmath>
#include <cstdint>

#include "ddpscope/philox.h"

namespace ddp {

// Four standard normals from one Philox block via Box-Muller.
inline std::array<float, 4> normal4(uint64_t key, uint64_t hi, uint64_t lo) {
  const PhiloxBlock block = philox4x32_10(lo, hi, key);
  const uint32_t* r = block.v;
  constexpr float kTwoPi = 6.28318530717958647692f;
  const float r0 = std::sqrt(-2.0f * std::log(uniform_open0(r[0])));
  const float r1 = std::sqrt(-2.0f * std::log(uniform_open0(r[2])));
  const float a0 = kTwoPi * uniform_open0(r[1]), a1 = kTwoPi * uniform_open0(r[3]);
  return {r0 * std::cos(a0), r0 * std::sin(a0), r1 * std::cos(a1), r1 * std::sin(a1)};
}

// Uniform 64-bit value for (key, hi, lo).
inline uint64_t random_u64(uint64_t key, uint64_t hi, uint64_t lo) {
  const PhiloxBlock r = philox4x32_10(lo, hi, key);
  return (uint64_t{r.v[0]} << 32) | r.v[1];
}

// Distinct streams: key = mix(seed, purpose) so that data, shuffle and init never collide.
inline uint64_t stream_key(uint64_t seed, uint64_t purpose) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (purpose + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

enum StreamPurpose : uint64_t { kStreamData = 1, kStreamShuffle = 2, kStreamInit = 3, kStreamTeacher = 4 };

}  // namespace ddp
