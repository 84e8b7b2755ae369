#pragma once
// The MLP's forward and backward on the device, over the flat parameter and
// gradient buffers in the host's layout (layer_layout), so a checkpoint is the same bytes
// on either. The order of work is nn/mlp.cpp's, one layer at a time:
//   forward, layer l:   y_l (b,out) = x_l (b,in) W_l^T + bias, ReLU but on the last layer
//                       (one cuBLASLt GEMM with the bias epilogue, then gpu/relu_gpu.h's
//                       ReLU, which keeps a NaN as the host's does)
//   backward, l = L-1 .. 0, dy (b,out) = dLoss/dy_l:
//                       dy *= (y_l > 0) but on the last layer; db_l += column sums of dy
//                       (one kernel), dW_l (out,in) += dy^T x_l (a GEMM, beta 1), then the
//                       caller's on_layer_done(l) (the bucket's event: its gradients are
//                       issued), then dx (b,in) = dy W_l for the layer below (a GEMM)
// Everything is enqueued on one stream; nothing is allocated or copied between host and
// device, so a step can be captured into a CUDA graph.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ddpscope/layer_layout.h"
#include "gpu/device_array.h"
#include "gpu/lt_gemm.h"

namespace ddp {

// Device memory for one pass of up to max_batch samples: every layer's output, and two
// gradient buffers that swap as backward moves down a layer (the host Workspace's layout).
struct GpuActivations {
  std::vector<float*> outputs;  // outputs[l]: (max_batch, layers[l].out)
  float* gradient = nullptr;    // (max_batch, widest layer); the loss gradient goes in here
  float* scratch = nullptr;
};

// Owns the memory a GpuActivations points to, for up to max_batch samples of shape.
class GpuActivationMemory {
 public:
  GpuActivationMemory(const MlpShape& shape, int64_t max_batch);
  const GpuActivations& view() const { return view_; }

 private:
  std::vector<std::unique_ptr<DeviceArray<float>>> arrays_;
  GpuActivations view_;
};

// Device pointers throughout. Returns the last layer's output (b, output_dim).
const float* mlp_forward_gpu(LtGemm& lt, const std::vector<LinearLayout>& layers, const float* params, const float* x,
                             int64_t b, const GpuActivations& act, cudaStream_t stream);

// Adds this batch's gradients to grads. act.gradient holds dLoss/d(output) (b, output_dim) on
// entry; both gradient buffers are overwritten.
void mlp_backward_gpu(LtGemm& lt, const std::vector<LinearLayout>& layers, const float* params, float* grads,
                      const float* x, int64_t b, const GpuActivations& act, cudaStream_t stream,
                      const std::function<void(int64_t layer)>& on_layer_done = {});

// Host memory in and out, on device 0 (for tests and checks): the output of forward on x
// (b rows), then backward from output_gradient, added to grads.
struct MlpPassOnGpu {
  std::vector<float> output;
  std::vector<float> grads;
};
MlpPassOnGpu mlp_pass_on_gpu(const MlpShape& shape, LtMath math, const std::vector<float>& params,
                             const std::vector<float>& x, int64_t b, const std::vector<float>& output_gradient,
                             const std::vector<float>& grads);

}  // namespace ddp
