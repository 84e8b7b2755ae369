#pragma once
// Counter-based random numbers: every value is a pure function of (key, counter), so data
// and shuffles are identical whatever the number of ranks or loader threads.
// Philox4x32-10 (Salmon et al., SC'11) is written here because the standard library of
// C++20 has no counter-based engine and the algorithm is ten lines.
#include <array>
#include <cmath>
#include <cstdint>

namespace ddp {

using Philox = std::array<uint32_t, 4>;

inline Philox philox4x32(Philox ctr, uint64_t key64) {
  uint32_t k0 = static_cast<uint32_t>(key64), k1 = static_cast<uint32_t>(key64 >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53} * ctr[0];
    const uint64_t p1 = uint64_t{0xCD9E8D57} * ctr[2];
    ctr = {static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ k0, static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ k1, static_cast<uint32_t>(p0)};
    k0 += 0x9E3779B9;
    k1 += 0xBB67AE85;
  }
  return ctr;
}

// Uniform in (0, 1], never 0 so that log() is finite.
inline float uniform_open0(uint32_t bits) { return (static_cast<float>(bits >> 8) + 1.0f) * 0x1p-24f; }

// Four standard normals from one Philox block via Box-Muller.
inline std::array<float, 4> normal4(uint64_t key, uint64_t hi, uint64_t lo) {
  const Philox r = philox4x32({static_cast<uint32_t>(lo), static_cast<uint32_t>(lo >> 32), static_cast<uint32_t>(hi),
                               static_cast<uint32_t>(hi >> 32)},
                              key);
  constexpr float kTwoPi = 6.28318530717958647692f;
  const float r0 = std::sqrt(-2.0f * std::log(uniform_open0(r[0])));
  const float r1 = std::sqrt(-2.0f * std::log(uniform_open0(r[2])));
  const float a0 = kTwoPi * uniform_open0(r[1]), a1 = kTwoPi * uniform_open0(r[3]);
  return {r0 * std::cos(a0), r0 * std::sin(a0), r1 * std::cos(a1), r1 * std::sin(a1)};
}

// Uniform 64-bit value for (key, hi, lo).
inline uint64_t random_u64(uint64_t key, uint64_t hi, uint64_t lo) {
  const Philox r = philox4x32({static_cast<uint32_t>(lo), static_cast<uint32_t>(lo >> 32), static_cast<uint32_t>(hi),
                               static_cast<uint32_t>(hi >> 32)},
                              key);
  return (uint64_t{r[0]} << 32) | r[1];
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
