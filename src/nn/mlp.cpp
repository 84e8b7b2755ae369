#include "ddpscope/mlp.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "base/check.h"
#include "ddpscope/error.h"
#include "ddpscope/random.h"
#include "tensor/gemm.h"
#include "tensor/kernels.h"

namespace ddp {

namespace {

// Options are validated where they enter (the config); a bad shape here is our own bug.
const MlpShape& checked(const MlpShape& shape) {
  DDP_CHECK(shape.input_dim > 0 && shape.output_dim > 0 && shape.hidden_layers >= 0 &&
            (shape.hidden_layers == 0 || shape.hidden_size > 0));
  return shape;
}

void check_batch(int64_t b, const Workspace& work) {
  DDP_CHECK_GT(b, 0, "an empty batch");
  DDP_CHECK_LE(b, work.max_batch(), "batch larger than the workspace was sized for");
}

}  // namespace

Mlp::Mlp(const MlpShape& shape)
    : shape_(checked(shape)),
      layers_(layer_layout(shape_)),
      params_(parameter_count(layers_)),
      grads_(parameter_count(layers_)) {}

void Mlp::init_like_pytorch(uint64_t seed) {
  // nn.Linear's kaiming_uniform_(a=sqrt(5)) for the weight and its bias init both reduce to
  // U(-1/sqrt(in), 1/sqrt(in)). Each value depends only on (seed, flat index), so any
  // rank or a resumed run gets the same parameters without sharing a generator.
  const uint64_t key = stream_key(seed, kStreamInit);
  float* p = params_.data();
  for (const LinearLayout& layer : layers_) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(layer.in));
    const std::size_t end = layer.bias_offset + static_cast<std::size_t>(layer.out);
    for (std::size_t i = layer.weight_offset; i < end; ++i) {
      const double u = static_cast<double>(random_u64(key, 0, i) >> 11) * 0x1p-53;  // [0, 1)
      p[i] = static_cast<float>((2.0 * u - 1.0) * bound);
    }
  }
}

const float* Mlp::forward(const float* x, int64_t b, Workspace& work) const {
  check_batch(b, work);
  const float* p = params_.data();
  const float* input = x;
  const std::size_t last = layers_.size() - 1;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const LinearLayout& layer = layers_[l];
    float* y = work.activation(l);
    // y (b,out) = input (b,in) * W^T, W is (out,in)
    gemm(Trans::kNo, Trans::kYes, b, layer.out, layer.in, 1.0f, input, layer.in, p + layer.weight_offset, layer.in,
         0.0f, y, layer.out);
    bias_activation_forward(y, p + layer.bias_offset, b, layer.out, l != last);
    input = y;
  }
  return input;
}

void Mlp::backward(const float* x, int64_t b, Workspace& work,
                   const std::function<void(int64_t layer)>& on_layer_done) {
  check_batch(b, work);
  const float* p = params_.data();
  float* g = grads_.data();
  // dy is dLoss/d(layer output), (b,out); dx is dLoss/d(layer input), (b,in). They swap
  // between the workspace's two gradient buffers as the pass moves down a layer.
  float* dy = work.output_gradient();
  float* dx = work.gradient_scratch();
  const int64_t num_layers = static_cast<int64_t>(layers_.size());
  for (int64_t l = num_layers - 1; l >= 0; --l) {
    const LinearLayout& layer = layers_[static_cast<std::size_t>(l)];
    const float* input = l == 0 ? x : work.activation(static_cast<std::size_t>(l - 1));
    if (l != num_layers - 1) relu_backward(dy, work.activation(static_cast<std::size_t>(l)), b, layer.out);
    // dW (out,in) += dy^T (out,b) * input (b,in)
    gemm(Trans::kYes, Trans::kNo, layer.out, layer.in, b, 1.0f, dy, layer.out, input, layer.in, 1.0f,
         g + layer.weight_offset, layer.in);
    bias_grad(dy, g + layer.bias_offset, b, layer.out);
    // Report before computing dx so that communication of this layer overlaps the rest.
    if (on_layer_done) on_layer_done(l);
    if (l == 0) break;  // nobody needs dLoss/dX
    // dx (b,in) = dy (b,out) * W (out,in)
    gemm(Trans::kNo, Trans::kNo, b, layer.in, layer.out, 1.0f, dy, layer.out, p + layer.weight_offset, layer.in, 0.0f,
         dx, layer.in);
    std::swap(dy, dx);
  }
}

double Mlp::forward_flops_per_sample() const {
  double flops = 0.0;
  for (const LinearLayout& layer : layers_) flops += 2.0 * static_cast<double>(layer.in * layer.out);
  return flops;
}

double Mlp::training_flops_per_sample() const {
  // forward, dW for every layer, dX for all but the first
  double flops = 2.0 * forward_flops_per_sample();
  for (std::size_t l = 1; l < layers_.size(); ++l) {
    flops += 2.0 * static_cast<double>(layers_[l].in * layers_[l].out);
  }
  return flops;
}

}  // namespace ddp
