#include "optim/sgd.h"

#include "ddpscope/error.h"

namespace ddp {

Sgd::Sgd(const OptimizerConfig& config, std::size_t num_params, Place place)
    : Optimizer(place),
      config_(config),
      num_params_(num_params),
      momentum_buffer_(config.momentum != 0.0 ? num_params : 0, place) {
  DDP_CHECK_EQ(config.kind, OptimizerKind::kSgd);
}

void Sgd::step(std::span<float> params, std::span<const float> grads) {
  switch (place_) {
    case Place::kHost:
      return step_on_host(params, grads);
  }
  place_not_built(place_);
}

void Sgd::step_on_host(std::span<float> params, std::span<const float> grads) {
  const std::size_t n = num_params_;
  DDP_CHECK_EQ(params.size(), n, "params differ from the optimizer's size");
  DDP_CHECK_EQ(grads.size(), n, "grads differ from the optimizer's size");
  const float lr = static_cast<float>(config_.lr);
  const float weight_decay = static_cast<float>(config_.weight_decay);
  float* __restrict p = params.data();
  const float* __restrict g = grads.data();
  if (config_.momentum == 0.0) {
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i) p[i] -= lr * (g[i] + weight_decay * p[i]);
  } else {
    // PyTorch starts the buffer as a copy of the first gradient; since ours starts at zero,
    // a momentum of 0 on the first step gives exactly that copy.
    const float momentum = steps_ == 0 ? 0.0f : static_cast<float>(config_.momentum);
    float* __restrict buf = momentum_buffer_.data();
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i) {
      const float bi = momentum * buf[i] + (g[i] + weight_decay * p[i]);
      buf[i] = bi;
      p[i] -= lr * bi;
    }
  }
  ++steps_;
}

std::vector<std::pair<std::string, std::span<float>>> Sgd::state() {
  if (momentum_buffer_.size() == 0) return {};
  return {{"momentum_buffer", momentum_buffer_.span()}};
}

}  // namespace ddp
