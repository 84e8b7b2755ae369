// On a GPU machine: each dataset the GPU engine trains on, made on the device, is the CPU's
// Dataset::fill bit for bit (a sample is the same whichever device made it). Skipped
// where no GPU is visible.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <vector>

#include "data/csv_dataset.h"
#include "data/random_dataset.h"
#include "data/teacher_dataset.h"
#include "gpu/gpu_samples.h"
#include "gpu_test_support.h"
#include "support/float_bits.h"

namespace ddp {
namespace {

using testing::float_bits;

// The samples of a shuffled subset, in two epochs, from the CPU and from the GPU.
void expect_gpu_fills_like_cpu(const Dataset& dataset) {
  const std::optional<GpuDataSpec> spec = gpu_data_spec(dataset);
  ASSERT_TRUE(spec.has_value());
  const GpuSamples samples(*spec, dataset.input_dim(), dataset.output_dim());
  std::vector<int64_t> indices(static_cast<std::size_t>(dataset.size()));
  std::iota(indices.begin(), indices.end(), int64_t{0});
  std::reverse(indices.begin(), indices.end());
  const auto n = static_cast<int64_t>(indices.size());
  for (const int64_t epoch : {0, 3}) {
    std::vector<float> cpu_x(n * dataset.input_dim()), cpu_y(n * dataset.output_dim());
    std::vector<float> gpu_x(cpu_x.size()), gpu_y(cpu_y.size());
    dataset.fill(epoch, indices, cpu_x.data(), cpu_y.data());
    samples.fill_on_host(epoch, indices, gpu_x.data(), gpu_y.data());
    for (std::size_t i = 0; i < cpu_x.size(); ++i) ASSERT_EQ(float_bits(gpu_x[i]), float_bits(cpu_x[i])) << "x " << i;
    for (std::size_t i = 0; i < cpu_y.size(); ++i) ASSERT_EQ(float_bits(gpu_y[i]), float_bits(cpu_y[i])) << "y " << i;
  }
}

TEST(GpuSamples, RandomDataIsTheCpusBitForBit) {
  DDP_REQUIRE_GPU();
  expect_gpu_fills_like_cpu(RandomDataset(700, 10, 1, 42));
}

TEST(GpuSamples, TeacherDataIsTheCpusBitForBit) {
  DDP_REQUIRE_GPU();
  expect_gpu_fills_like_cpu(TeacherDataset(700, 10, 1, 42));
  expect_gpu_fills_like_cpu(TeacherDataset(300, 13, 3, 7));  // rows that end inside a Philox block
}

TEST(GpuSamples, CsvRowsAreTheFilesBitForBit) {
  DDP_REQUIRE_GPU();
  const auto path = std::filesystem::temp_directory_path() / "ddpscope_gpu_samples.csv";
  {
    std::ofstream file(path);
    file << "a,b,c,target\n";
    for (int r = 0; r < 300; ++r) file << r * 0.5 << "," << -r << "," << 1e-3 * r << "," << r % 7 << "\n";
  }
  expect_gpu_fills_like_cpu(CsvDataset(path.string(), 3, 1));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ddp
