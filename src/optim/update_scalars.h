#pragma once
// The per-step scalars of optim/update_rules.h from an optimizer's configuration, computed on
// the host in double as PyTorch computes them (host only: the GPU gets them as arguments).
#include <cmath>
#include <cstdint>

#include "ddpscope/optimizer.h"
#include "optim/update_rules.h"

namespace ddp {

// For optimizer step t (1 for the first). Adam adds weight decay to the gradient (L2),
// AdamW decays the parameter (decoupled).
inline AdamScalars adam_scalars(const OptimizerConfig& config, int64_t t) {
  const double bias_correction1 = 1.0 - std::pow(config.beta1, static_cast<double>(t));
  const double bias_correction2 = 1.0 - std::pow(config.beta2, static_cast<double>(t));
  const bool decoupled = config.kind == OptimizerKind::kAdamW;
  return {decoupled ? 0.0f : static_cast<float>(config.weight_decay),
          decoupled ? static_cast<float>(1.0 - config.lr * config.weight_decay) : 1.0f,
          static_cast<float>(config.beta1),
          static_cast<float>(config.beta2),
          static_cast<float>(1.0 - config.beta1),
          static_cast<float>(1.0 - config.beta2),
          static_cast<float>(config.lr / bias_correction1),
          static_cast<float>(std::sqrt(bias_correction2)),
          static_cast<float>(config.eps)};
}

// For the step after `steps_before` steps. PyTorch starts the momentum buffer as a copy of
// the first gradient; since ours starts at zero, a momentum of 0 on the first step gives
// exactly that copy.
inline SgdScalars sgd_scalars(const OptimizerConfig& config, int64_t steps_before) {
  return {static_cast<float>(config.lr), static_cast<float>(config.weight_decay),
          steps_before == 0 ? 0.0f : static_cast<float>(config.momentum)};
}

}  // namespace ddp
