// On a GPU machine: discovery, a kernel of src/gpu against the CPU, and `ddpscope devices`
// naming the GPU. Skipped (not run) where no GPU is visible.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gpu/axpy.h"
#include "gpu/visible_gpus.h"
#include "gpu_test_support.h"
#include "support/run_command.h"

namespace ddp {
namespace {

TEST(VisibleGpus, ListsADeviceOfComputeCapabilityEightOrNewerWithMemory) {
  DDP_REQUIRE_GPU();
  const VisibleGpus gpus = visible_gpus();
  ASSERT_FALSE(gpus.devices.empty());
  EXPECT_TRUE(gpus.none_reason.empty()) << gpus.none_reason;
  for (const GpuDevice& d : gpus.devices) {
    EXPECT_GE(d.major, 8) << describe_gpu(d) << ": this build has code for sm_80 and newer only";
    EXPECT_GT(d.memory_bytes, 0U) << describe_gpu(d);
    EXPECT_FALSE(d.name.empty());
  }
}

TEST(GpuAxpy, ComputesExactlyWhatTheCpuComputes) {
  DDP_REQUIRE_GPU();
  constexpr int kCount = 5000;  // more than one block, and a partial last block
  std::vector<float> x(kCount), y(kCount);
  for (int i = 0; i < kCount; ++i) {
    x[i] = std::sin(0.37f * static_cast<float>(i)) * 3.0f;
    y[i] = std::cos(0.11f * static_cast<float>(i)) - 0.5f;
  }
  const float a = -1.75f;
  const std::vector<float> gpu = axpy_on_gpu(a, x, y);
  ASSERT_EQ(gpu.size(), x.size());
  for (int i = 0; i < kCount; ++i) {
    ASSERT_EQ(gpu[i], std::fma(a, x[i], y[i])) << "element " << i;  // one rounding on both
  }
}

TEST(GpuCli, DevicesNamesTheGpu) {
  DDP_REQUIRE_GPU();
  std::string reason;
  const GpuDevice& gpu = *testing::first_gpu(reason);
  const auto devices =
      testing::run_command(testing::ddpscope_binary() + " devices", std::filesystem::temp_directory_path());
  EXPECT_EQ(devices.exit_code, 0);
  EXPECT_NE(devices.out.find("GPU 0: " + describe_gpu(gpu)), std::string::npos) << devices.out;
}

}  // namespace
}  // namespace ddp
