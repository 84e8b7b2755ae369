#include "ddpscope/optimizer.h"

#include <fmt/format.h>

#include <cmath>

#include "base/check.h"
#include "ddpscope/error.h"
#include "optim/adam.h"
#include "optim/sgd.h"

namespace ddp {

std::string_view optimizer_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kAdam:
      return "adam";
    case OptimizerKind::kAdamW:
      return "adamw";
    case OptimizerKind::kSgd:
      return "sgd";
  }
  DDP_CHECK(false, "unknown OptimizerKind");
  return {};
}

namespace {

// The ranges torch.optim accepts, with the option that sets each value.
void validate(const OptimizerConfig& config) {
  auto require = [](bool ok, const char* option, double value, const char* accepted) {
    if (!ok) {
      throw UsageError(fmt::format("{} {} is invalid: must be {}", option, value, accepted));
    }
  };
  require(std::isfinite(config.lr) && config.lr >= 0.0, "--lr", config.lr, ">= 0");
  require(std::isfinite(config.weight_decay) && config.weight_decay >= 0.0, "--weight-decay", config.weight_decay,
          ">= 0");
  if (config.kind == OptimizerKind::kSgd) {
    require(std::isfinite(config.momentum) && config.momentum >= 0.0, "--momentum", config.momentum, ">= 0");
  } else {
    require(config.beta1 >= 0.0 && config.beta1 < 1.0, "--betas (first)", config.beta1, "in [0, 1)");
    require(config.beta2 >= 0.0 && config.beta2 < 1.0, "--betas (second)", config.beta2, "in [0, 1)");
    require(std::isfinite(config.eps) && config.eps >= 0.0, "--eps", config.eps, ">= 0");
  }
}

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, std::size_t num_params) {
  validate(config);
  if (config.kind == OptimizerKind::kSgd) return std::make_unique<Sgd>(config, num_params);
  return std::make_unique<Adam>(config, num_params);
}

}  // namespace ddp
