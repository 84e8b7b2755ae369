#include "data/normal_rows.h"

#include <algorithm>

#include "data/philox_normal.h"

namespace ddp {
namespace {

// One chunk is kLanes Philox blocks computed side by side; the loops over lanes have a fixed
// trip count so that they vectorise without a scalar tail (a tail could round differently).
constexpr int kLanes = 16;

// out[k * kLanes + l] = normal4(key, hi[l], lo[l])[k], up to the polynomials.
void normal_chunk(uint64_t key, const uint64_t (&hi)[kLanes], const uint64_t (&lo)[kLanes], float (&out)[4 * kLanes]) {
  // Philox stays scalar (GCC does not vectorise its 32x32->64 products); the Box-Muller loop
  // below is the expensive half and vectorises.
  uint32_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    const PhiloxBlock r = philox4x32_10(lo[l], hi[l], key);
    c0[l] = r.v[0];
    c1[l] = r.v[1];
    c2[l] = r.v[2];
    c3[l] = r.v[3];
  }
  for (int l = 0; l < kLanes; ++l) {
    float normals[4];
    philox_normal::box_muller(c0[l], c1[l], c2[l], c3[l], normals);
    for (int k = 0; k < 4; ++k) out[k * kLanes + l] = normals[k];
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
