#pragma once
// Integer division rounding up, for batch counts: without the a + b - 1 of the usual idiom,
// which overflows when b (a batch size) is near 2^63.
#include <cstdint>

namespace ddp {

// a >= 0, b > 0.
constexpr int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

}  // namespace ddp
