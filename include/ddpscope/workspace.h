#pragma once
// The activations of one forward and backward pass of an Mlp, for batches of up to
// max_batch rows. Kept apart from the parameters, gradients and optimizer state, which
// live as long as the model: a workspace is sized for a run's largest batch once (no
// allocation inside the loop) and, on a device, is the memory that can be reused or
// shrunk without touching what a checkpoint holds.
#include <cstdint>
#include <vector>

#include "ddpscope/buffer.h"
#include "ddpscope/layer_layout.h"

namespace ddp {

class Workspace {
 public:
  Workspace() = default;  // holds no batch: max_batch() == 0
  Workspace(const MlpShape& shape, int64_t max_batch);

  int64_t max_batch() const { return max_batch_; }
  // Layer l's output, (max_batch, out_l); the last one is the network's output.
  float* activation(std::size_t layer) { return activations_[layer].data(); }
  const float* activation(std::size_t layer) const { return activations_[layer].data(); }
  const float* output() const { return activations_.back().data(); }
  // dLoss/dOutput, (max_batch, output_dim): the loss gradient writes it, backward starts
  // from it. Backward then uses it and gradient_scratch() in turn for each layer's dY, dX.
  float* output_gradient() { return grad_a_.data(); }
  float* gradient_scratch() { return grad_b_.data(); }

 private:
  int64_t max_batch_ = 0;
  std::vector<Buffer> activations_;
  Buffer grad_a_;  // (max_batch, max width)
  Buffer grad_b_;
};

}  // namespace ddp
