#pragma once
// The MLP: Linear layers with ReLU between them, every parameter in one flat buffer and
// every gradient in another of the same layout (PyTorch's order: layers.0.weight,
// layers.0.bias, layers.1.weight, ...). Backward fills gradients last layer first, so the
// tail of the gradient buffer is complete first: buckets are slices from the end.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "tensor/buffer.h"

namespace ddp {

struct MlpShape {
  int64_t input_dim = 10;
  int64_t hidden_size = 256;
  int64_t hidden_layers = 3;  // Linear+ReLU blocks; 0 means one Linear(input, output)
  int64_t output_dim = 1;

  int64_t num_layers() const { return hidden_layers + 1; }
  // [input_dim, hidden_size x hidden_layers, output_dim]
  std::vector<int64_t> widths() const;
};

// Where layer l lives in the flat buffers. weight is (out,in) as in nn.Linear, bias (out).
struct LinearLayout {
  int64_t in = 0;
  int64_t out = 0;
  std::size_t weight_offset = 0;
  std::size_t bias_offset = 0;
};

class Mlp {
 public:
  // max_batch sizes the activation buffers; forward/backward accept any b <= max_batch.
  Mlp(const MlpShape& shape, int64_t max_batch);

  const MlpShape& shape() const { return shape_; }
  const std::vector<LinearLayout>& layers() const { return layers_; }
  std::size_t num_params() const { return params_.size(); }
  int64_t max_batch() const { return max_batch_; }

  std::span<float> params() { return params_.span(); }
  std::span<const float> params() const { return params_.span(); }
  std::span<float> grads() { return grads_.span(); }
  std::span<const float> grads() const { return grads_.span(); }

  // PyTorch nn.Linear's default: weight and bias ~ U(-1/sqrt(in), 1/sqrt(in)), from seed.
  void init_like_pytorch(uint64_t seed);

  // x is (b, input_dim). Returns the (b, output_dim) output, owned by the Mlp and valid
  // until the next forward.
  const float* forward(const float* x, int64_t b);

  // After forward: MSE (mean over all b*output_dim elements) against target (b, output_dim).
  // Stores scale * dLoss/dOutput for backward (scale = 1/accumulate_grad_batches).
  double mse_loss_and_grad(const float* target, int64_t b, float scale);

  // After mse_loss_and_grad: accumulates dLoss/dParams into grads(). on_layer_done(l) runs
  // once layer l's weight and bias gradients are final, for l = L-1 down to 0.
  void backward(const float* x, int64_t b, const std::function<void(int64_t layer)>& on_layer_done = {});

  void zero_grads() { grads_.zero(); }

  // GEMM FLOPs per sample: forward only, and forward + backward (no dX for the first layer).
  double forward_flops_per_sample() const;
  double training_flops_per_sample() const;

 private:
  MlpShape shape_;
  int64_t max_batch_;
  std::vector<LinearLayout> layers_;
  Buffer params_;
  Buffer grads_;
  std::vector<Buffer> activations_;  // activations_[l] is layer l's output (max_batch, out)
  Buffer grad_a_;  // (max_batch, max width): dLoss/dOutput, then dY and dX of each layer
  Buffer grad_b_;  // in turn with grad_a_ as backward moves down a layer
};

}  // namespace ddp
