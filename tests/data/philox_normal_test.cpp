// The generator shared by the CPU and the GPU (ddpscope/philox.h, data/philox_normal.h):
// Philox4x32-10 against the known answers of its authors (Random123's kat_vectors), and the
// vectorised batch path against the scalar function the GPU kernel runs, bit for bit.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "data/normal_rows.h"
#include "data/philox_normal.h"
#include "ddpscope/random.h"
#include "support/float_bits.h"

namespace ddp {
namespace {

using testing::float_bits;

TEST(Philox, MatchesRandom123sKnownAnswers) {
  struct Case {
    uint32_t ctr[4], key[2], out[4];
  };
  const Case cases[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Case& c : cases) {
    const PhiloxBlock r = philox4x32_10(c.ctr[0] | uint64_t{c.ctr[1]} << 32, c.ctr[2] | uint64_t{c.ctr[3]} << 32,
                                        c.key[0] | uint64_t{c.key[1]} << 32);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(r.v[i], c.out[i]) << "word " << i << " of counter " << c.ctr[0];
  }
}

// normal_rows (16 lanes, vectorised, -O3) and normals4 (one block, as each GPU thread calls
// it) make the same bits: nothing in the shared code is left for a compiler to fuse.
TEST(PhiloxNormal, BatchAndScalarPathsAgreeBitForBit) {
  const uint64_t key = stream_key(42, kStreamData), hi = uint64_t{3} << 32;
  for (const int64_t width_a : {1, 4, 10, 13}) {
    const int64_t width_b = width_a % 3;
    std::vector<int64_t> rows(3001);
    std::iota(rows.begin(), rows.end(), int64_t{1000});
    std::vector<float> a(rows.size() * width_a), b(rows.size() * width_b);
    normal_rows(key, hi, rows, a.data(), width_a, b.data(), width_b);
    for (std::size_t j = 0; j < rows.size(); ++j) {
      for (int64_t e = 0; e < width_a + width_b; ++e) {
        float four[4];
        philox_normal::normals4(key, hi + e / 4, static_cast<uint64_t>(rows[j]), four);
        const float got = e < width_a ? a[j * width_a + e] : b[j * width_b + (e - width_a)];
        ASSERT_EQ(float_bits(got), float_bits(four[e % 4]))
            << "row " << rows[j] << " element " << e << " width " << width_a;
      }
    }
  }
}

// The polynomials stay within 2e-6 of the library's log, sqrt, sin and cos (normal4).
TEST(PhiloxNormal, FollowsTheLibrarysBoxMuller) {
  const uint64_t key = stream_key(7, kStreamTeacher);
  for (uint64_t lo = 0; lo < 20000; ++lo) {
    float four[4];
    philox_normal::normals4(key, 5, lo, four);
    const std::array<float, 4> reference = normal4(key, 5, lo);
    for (int k = 0; k < 4; ++k) ASSERT_NEAR(four[k], reference[k], 2e-6f * std::max(1.0f, std::abs(reference[k])));
  }
}

}  // namespace
}  // namespace ddp
