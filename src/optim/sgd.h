#pragma once
// torch.optim.SGD (single-tensor path, dampening 0, no Nesterov) over one flat buffer.
#include <cstddef>

#include "ddpscope/buffer.h"
#include "ddpscope/optimizer.h"

namespace ddp {

class Sgd final : public Optimizer {
 public:
  Sgd(const OptimizerConfig& config, std::size_t num_params);

  void step(std::span<float> params, std::span<const float> grads) override;
  // momentum_buffer when momentum != 0, as PyTorch keeps none without momentum.
  std::vector<std::pair<std::string, std::span<float>>> state() override;

 private:
  OptimizerConfig config_;
  std::size_t num_params_;
  Buffer momentum_buffer_;  // (num_params), empty without momentum
};

}  // namespace ddp
