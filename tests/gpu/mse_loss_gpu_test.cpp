// On a GPU machine: the fused MSE kernel's gradient is the host's bit for bit, its loss (a
// double sum, summed in another order) within 1e-12, and a non-finite difference raises its
// flag. Skipped where no GPU is visible.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "gpu/mse_loss_gpu.h"
#include "gpu_test_support.h"
#include "support/float_bits.h"
#include "tensor/kernels.h"

namespace ddp {
namespace {

using testing::float_bits;

TEST(GpuMseLoss, GradientIsTheHostsBitForBitAndTheLossAgrees) {
  DDP_REQUIRE_GPU();
  const int64_t b = 1000, o = 3;  // more than one block of threads
  std::vector<float> pred(b * o), target(b * o), host_grad(b * o);
  for (int64_t i = 0; i < b * o; ++i) {
    pred[i] = std::sin(0.3f * static_cast<float>(i));
    target[i] = std::cos(0.7f * static_cast<float>(i));
  }
  const float scale = 1.0f / 3;  // accumulate_grad_batches = 3
  const double host_loss = mse_loss(pred.data(), target.data(), b, o);
  mse_loss_gradient(pred.data(), target.data(), host_grad.data(), b, o, scale);
  const MseOnGpu gpu = mse_loss_and_gradient_on_gpu(pred, target, scale);
  EXPECT_NEAR(gpu.loss, host_loss, 1e-12 * host_loss);
  EXPECT_FALSE(gpu.nonfinite);
  for (std::size_t i = 0; i < host_grad.size(); ++i) {
    ASSERT_EQ(float_bits(gpu.dpred[i]), float_bits(host_grad[i])) << "element " << i;
  }
}

TEST(GpuMseLoss, ANonFiniteDifferenceRaisesTheFlag) {
  DDP_REQUIRE_GPU();
  std::vector<float> pred(600, 1.0f), target(600, 0.5f);
  pred[517] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(mse_loss_and_gradient_on_gpu(pred, target, 1.0f).nonfinite);
}

}  // namespace
}  // namespace ddp
