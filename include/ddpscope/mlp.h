#pragma once
// The MLP: Linear layers with ReLU between them, every parameter in one flat buffer and
// every gradient in another of the same layout (layer_layout.h: PyTorch's order,
// layers.0.weight, layers.0.bias, layers.1.weight, ...). Backward fills gradients last
// layer first, so the tail of the gradient buffer is complete first: buckets are slices
// from the end. The activations of a pass live in a Workspace the caller owns.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "ddpscope/buffer.h"
#include "ddpscope/layer_layout.h"
#include "ddpscope/workspace.h"

namespace ddp {

class Mlp {
 public:
  explicit Mlp(const MlpShape& shape = {});

  const MlpShape& shape() const { return shape_; }
  const std::vector<LinearLayout>& layers() const { return layers_; }
  std::size_t num_params() const { return params_.size(); }

  std::span<float> params() { return params_.span(); }
  std::span<const float> params() const { return params_.span(); }
  std::span<float> grads() { return grads_.span(); }
  std::span<const float> grads() const { return grads_.span(); }

  // PyTorch nn.Linear's default: weight and bias ~ U(-1/sqrt(in), 1/sqrt(in)), from seed.
  void init_like_pytorch(uint64_t seed);

  // x is (b, input_dim), b <= work.max_batch(). Returns the (b, output_dim) output, held in
  // work and valid until its next forward.
  const float* forward(const float* x, int64_t b, Workspace& work) const;

  // After forward of the same x and a loss gradient in work.output_gradient(): accumulates
  // dLoss/dParams into grads(). on_layer_done(l) runs once layer l's weight and bias
  // gradients are final, for l = L-1 down to 0.
  void backward(const float* x, int64_t b, Workspace& work,
                const std::function<void(int64_t layer)>& on_layer_done = {});

  void zero_grads() { grads_.zero(); }

  // GEMM FLOPs per sample: forward only, and forward + backward (no dX for the first layer).
  double forward_flops_per_sample() const;
  double training_flops_per_sample() const;

 private:
  MlpShape shape_;
  std::vector<LinearLayout> layers_;
  Buffer params_;
  Buffer grads_;
};

}  // namespace ddp
