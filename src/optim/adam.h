#pragma once
// torch.optim.Adam and AdamW (single-tensor path) over one flat buffer. AdamW differs only
// in where weight decay goes, so one class serves both.
#include <cstddef>

#include "ddpscope/buffer.h"
#include "ddpscope/optimizer.h"

namespace ddp {

class Adam final : public Optimizer {
 public:
  // config.kind is kAdam (L2 added to the gradient) or kAdamW (decoupled decay).
  Adam(const OptimizerConfig& config, std::size_t num_params);

  void step(std::span<float> params, std::span<const float> grads) override;
  std::vector<std::pair<std::string, std::span<float>>> state() override;

 private:
  OptimizerConfig config_;
  Buffer exp_avg_;     // m, (num_params)
  Buffer exp_avg_sq_;  // v, (num_params)
};

}  // namespace ddp
