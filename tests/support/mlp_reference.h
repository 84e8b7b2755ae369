#pragma once
// The float64 oracle of the MLP tests (host and GPU): the same MLP written naively, reading
// the engine's layout.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "ddpscope/mlp.h"

namespace ddp::testing {

struct Reference {
  std::vector<LinearLayout> layers;
  std::vector<double> params;

  explicit Reference(const Mlp& mlp) : layers(mlp.layers()), params(mlp.params().begin(), mlp.params().end()) {}
  Reference(std::vector<LinearLayout> layers_in, const std::vector<float>& params_in)
      : layers(std::move(layers_in)), params(params_in.begin(), params_in.end()) {}

  // x is (b, in0); returns (b, out_last).
  std::vector<double> forward(const std::vector<double>& x, int64_t b) const {
    std::vector<double> a = x;
    for (std::size_t l = 0; l < layers.size(); ++l) {
      const LinearLayout& layer = layers[l];
      std::vector<double> y(static_cast<std::size_t>(b * layer.out));
      for (int64_t r = 0; r < b; ++r) {
        for (int64_t o = 0; o < layer.out; ++o) {
          double sum = params[layer.bias_offset + o];
          for (int64_t i = 0; i < layer.in; ++i) {
            sum += a[r * layer.in + i] * params[layer.weight_offset + o * layer.in + i];
          }
          y[r * layer.out + o] = (l + 1 == layers.size()) ? sum : std::max(sum, 0.0);
        }
      }
      a = std::move(y);
    }
    return a;
  }

  double loss(const std::vector<double>& x, const std::vector<double>& target, int64_t b) const {
    const std::vector<double> y = forward(x, b);
    double sum = 0.0;
    for (std::size_t i = 0; i < y.size(); ++i) sum += (y[i] - target[i]) * (y[i] - target[i]);
    return sum / static_cast<double>(y.size());
  }

  // Central differences of the loss for every parameter.
  std::vector<double> finite_difference_grads(const std::vector<double>& x, const std::vector<double>& target,
                                              int64_t b) {
    constexpr double kEps = 1e-6;
    std::vector<double> grads(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      const double saved = params[i];
      params[i] = saved + kEps;
      const double plus = loss(x, target, b);
      params[i] = saved - kEps;
      const double minus = loss(x, target, b);
      params[i] = saved;
      grads[i] = (plus - minus) / (2.0 * kEps);
    }
    return grads;
  }
};

}  // namespace ddp::testing
