#include "optim/sgd.h"

#include "base/check.h"
#include "ddpscope/error.h"
#include "optim/update_scalars.h"

namespace ddp {

Sgd::Sgd(const OptimizerConfig& config, std::size_t num_params)
    : config_(config), num_params_(num_params), momentum_buffer_(config.momentum != 0.0 ? num_params : 0) {
  DDP_CHECK_EQ(config.kind, OptimizerKind::kSgd);
}

void Sgd::step(std::span<float> params, std::span<const float> grads) {
  const std::size_t n = num_params_;
  DDP_CHECK_EQ(params.size(), n, "params differ from the optimizer's size");
  DDP_CHECK_EQ(grads.size(), n, "grads differ from the optimizer's size");
  const SgdScalars s = sgd_scalars(config_, steps_);
  float* __restrict p = params.data();
  const float* __restrict g = grads.data();
  if (config_.momentum == 0.0) {
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i) sgd_update(s, p[i], g[i]);
  } else {
    float* __restrict buf = momentum_buffer_.data();
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i) sgd_momentum_update(s, p[i], g[i], buf[i]);
  }
  ++steps_;
}

std::vector<std::pair<std::string, std::span<float>>> Sgd::state() {
  if (momentum_buffer_.size() == 0) return {};
  return {{"momentum_buffer", momentum_buffer_.span()}};
}

}  // namespace ddp
