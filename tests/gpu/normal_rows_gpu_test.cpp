// On a GPU machine: the datasets' normals made on the device are the CPU's, bit for bit
// (a sample is the same whichever device made it). Skipped where no GPU is visible.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "data/normal_rows.h"
#include "ddpscope/random.h"
#include "gpu/normal_rows_gpu.h"
#include "gpu_test_support.h"
#include "support/float_bits.h"

namespace ddp {
namespace {

using testing::float_bits;

TEST(GpuNormalRows, AreTheCpusBitForBit) {
  DDP_REQUIRE_GPU();
  const uint64_t key = stream_key(1234, kStreamData);
  // The seed's rows (10 inputs, 1 target), a teacher's hidden layer (10 + 1), widths that
  // end inside a Philox block, and one of 5000 rows (many thread blocks).
  for (const auto& [n, width_a, width_b] : std::vector<std::array<int64_t, 3>>{
           {5000, 10, 1}, {64, 10, 1}, {33, 1, 0}, {17, 13, 2}, {1, 4, 0}, {250, 3, 5}}) {
    std::vector<int64_t> rows(n);
    std::iota(rows.begin(), rows.end(), int64_t{7} * n);
    std::vector<float> cpu_a(n * width_a), cpu_b(n * width_b), gpu_a(n * width_a), gpu_b(n * width_b);
    const uint64_t hi = uint64_t{3} << 32;
    normal_rows(key, hi, rows, cpu_a.data(), width_a, cpu_b.data(), width_b);
    normal_rows_on_gpu(key, hi, rows, gpu_a.data(), width_a, gpu_b.data(), width_b);
    for (std::size_t i = 0; i < cpu_a.size(); ++i) {
      ASSERT_EQ(float_bits(gpu_a[i]), float_bits(cpu_a[i])) << "a[" << i << "] of " << n << "x" << width_a;
    }
    for (std::size_t i = 0; i < cpu_b.size(); ++i) {
      ASSERT_EQ(float_bits(gpu_b[i]), float_bits(cpu_b[i])) << "b[" << i << "] of " << n << "x" << width_b;
    }
  }
}

}  // namespace
}  // namespace ddp
