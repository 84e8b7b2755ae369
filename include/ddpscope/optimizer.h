#pragma once
// Optimizers over flat buffers with exactly PyTorch's update equations and defaults
// (torch.optim.Adam, AdamW, SGD; single-tensor path). One fused loop per step.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ddpscope/buffer.h"

namespace ddp {

enum class OptimizerKind { kAdam, kAdamW, kSgd };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdam;
  double lr = 0.01;
  double momentum = 0.0;      // SGD only
  double weight_decay = 0.0;  // Adam/SGD: L2 added to the gradient; AdamW: decoupled
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

std::string_view optimizer_name(OptimizerKind kind);

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update of params from grads (same layout and length as at construction).
  virtual void step(std::span<float> params, std::span<const float> grads) = 0;
  // Named state buffers (Adam: exp_avg, exp_avg_sq; SGD: momentum_buffer) for checkpoints.
  virtual std::vector<std::pair<std::string, std::span<float>>> state() = 0;
  int64_t steps() const { return steps_; }
  void set_steps(int64_t steps) { steps_ = steps; }

 protected:
  int64_t steps_ = 0;
};

// The optimizer of config with its state for num_params parameters.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, std::size_t num_params);

}  // namespace ddp
