#pragma once
// A float's bits, for tests that compare values bit for bit (0.0 and -0.0 differ, NaN equals itself).
#include <cstdint>
#include <cstring>

namespace ddp::testing {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

}  // namespace ddp::testing
