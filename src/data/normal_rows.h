#pragma once
// Standard normals from Philox counters, many at a time. The values follow normal4() (same
// counters, same Box-Muller) with log/sin/cos/sqrt replaced by polynomials that the compiler
// vectorises (data/philox_normal.h, shared with the GPU, which makes the same bits): within
// 2e-6 of normal4 and about 3x faster. Every value depends only on its own counter, never on
// its neighbours, so a sample is the same in any batch.
#include <cstdint>
#include <span>

namespace ddp {

// rows: n counters `lo`. Row j holds width_a + width_b normals, element e taken from
// normal4(key, hi + e / 4, rows[j])[e % 4]; the first width_a go to a (n, width_a), the
// rest to b (n, width_b). Either width may be 0.
void normal_rows(uint64_t key, uint64_t hi, std::span<const int64_t> rows, float* a, int64_t width_a, float* b,
                 int64_t width_b);

}  // namespace ddp
