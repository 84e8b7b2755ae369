#include "optim/adam.h"

#include <cmath>

#include "ddpscope/error.h"

namespace ddp {

Adam::Adam(const OptimizerConfig& config, std::size_t num_params, Place place)
    : Optimizer(place), config_(config), exp_avg_(num_params, place), exp_avg_sq_(num_params, place) {
  DDP_CHECK(config.kind == OptimizerKind::kAdam || config.kind == OptimizerKind::kAdamW);
}

void Adam::step(std::span<float> params, std::span<const float> grads) {
  switch (place_) {
    case Place::kHost:
      return step_on_host(params, grads);
  }
  place_not_built(place_);
}

void Adam::step_on_host(std::span<float> params, std::span<const float> grads) {
  const std::size_t n = exp_avg_.size();
  DDP_CHECK_EQ(params.size(), n, "params differ from the optimizer's size");
  DDP_CHECK_EQ(grads.size(), n, "grads differ from the optimizer's size");
  ++steps_;
  // Per-step scalars in double as PyTorch computes them on the host; the loop runs in float.
  const double t = static_cast<double>(steps_);
  const double bias_correction1 = 1.0 - std::pow(config_.beta1, t);
  const double bias_correction2 = 1.0 - std::pow(config_.beta2, t);
  const bool decoupled = config_.kind == OptimizerKind::kAdamW;
  const float decay = decoupled ? static_cast<float>(1.0 - config_.lr * config_.weight_decay) : 1.0f;
  const float l2 = decoupled ? 0.0f : static_cast<float>(config_.weight_decay);
  const float beta1 = static_cast<float>(config_.beta1);
  const float beta2 = static_cast<float>(config_.beta2);
  const float one_minus_beta1 = static_cast<float>(1.0 - config_.beta1);
  const float one_minus_beta2 = static_cast<float>(1.0 - config_.beta2);
  const float step_size = static_cast<float>(config_.lr / bias_correction1);
  const float bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  const float eps = static_cast<float>(config_.eps);

  float* __restrict p = params.data();
  const float* __restrict g = grads.data();
  float* __restrict m = exp_avg_.data();
  float* __restrict v = exp_avg_sq_.data();
  // GCC vectorises this loop only with -fno-math-errno (std::sqrt may set errno otherwise):
  // about 10x faster on the seed model's 134,657 parameters.
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) {
    const float gi = g[i] + l2 * p[i];
    const float pi = p[i] * decay;
    const float mi = beta1 * m[i] + one_minus_beta1 * gi;
    const float vi = beta2 * v[i] + one_minus_beta2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) / bias_correction2_sqrt + eps;
    p[i] = pi - step_size * (mi / denom);
  }
}

std::vector<std::pair<std::string, std::span<float>>> Adam::state() {
  return {{"exp_avg", exp_avg_.span()}, {"exp_avg_sq", exp_avg_sq_.span()}};
}

}  // namespace ddp
