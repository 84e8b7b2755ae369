// On a GPU machine: the fused optimizer kernel makes the host loops' bits, step after step,
// for Adam, AdamW and SGD with and without momentum (both compile the same update rules,
// optim/update_rules.h, with fusing off). Skipped where no GPU is visible.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "ddpscope/optimizer.h"
#include "gpu/optimizer_step_gpu.h"
#include "gpu_test_support.h"
#include "optim/update_scalars.h"
#include "support/float_bits.h"

namespace ddp {
namespace {

using testing::float_bits;

void expect_same_bits(const std::vector<float>& gpu, std::span<const float> cpu, const char* what, int step) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    ASSERT_EQ(float_bits(gpu[i]), float_bits(cpu[i])) << what << "[" << i << "] after step " << step;
  }
}

void check(const OptimizerConfig& config) {
  constexpr int kCount = 70001;  // several blocks and a partial one
  std::vector<float> params(kCount);
  for (int i = 0; i < kCount; ++i) params[i] = std::sin(0.01f * static_cast<float>(i));
  std::vector<float> host_params = params;
  const std::unique_ptr<Optimizer> host = make_optimizer(config, kCount);
  const bool adam = config.kind != OptimizerKind::kSgd, momentum = config.momentum != 0.0;
  std::vector<float> state0(adam || momentum ? kCount : 0), state1(adam ? kCount : 0);
  for (int step = 1; step <= 5; ++step) {
    std::vector<float> grads(kCount);
    for (int i = 0; i < kCount; ++i) grads[i] = std::cos(0.37f * static_cast<float>(i * step)) * 0.1f;
    host->step(host_params, grads);
    if (adam) {
      adam_step_on_gpu(adam_scalars(config, step), params, grads, state0, state1);
    } else {
      sgd_step_on_gpu(sgd_scalars(config, step - 1), params, grads, state0);
    }
    expect_same_bits(params, host_params, "params", step);
    const auto state = host->state();
    if (!state.empty()) expect_same_bits(state0, state[0].second, "state 0", step);
    if (state.size() > 1) expect_same_bits(state1, state[1].second, "state 1", step);
  }
}

TEST(GpuOptimizerStep, AdamIsTheHostsBitForBit) {
  DDP_REQUIRE_GPU();
  check({.kind = OptimizerKind::kAdam, .lr = 1e-3, .weight_decay = 0.01});
}

TEST(GpuOptimizerStep, AdamWIsTheHostsBitForBit) {
  DDP_REQUIRE_GPU();
  check({.kind = OptimizerKind::kAdamW, .lr = 1e-3, .weight_decay = 0.01});
}

TEST(GpuOptimizerStep, SgdWithAndWithoutMomentumIsTheHostsBitForBit) {
  DDP_REQUIRE_GPU();
  check({.kind = OptimizerKind::kSgd, .lr = 0.05});
  check({.kind = OptimizerKind::kSgd, .lr = 0.05, .momentum = 0.9, .weight_decay = 1e-4});
}

}  // namespace
}  // namespace ddp
