#pragma once
// The MSE's gradient per element, written once for the host loop (tensor/kernels.cpp) and
// the GPU's fused loss kernel (gpu/mse_loss_gpu.cu): one subtraction and one product, the
// same bits on either.
#include <cstdint>

#include "ddpscope/host_device.h"

namespace ddp {

// dpred = scale * 2 * (pred - target) / count, folded into one float factor on the host.
inline float mse_gradient_scale(float scale, int64_t count) {
  return static_cast<float>(2.0 * scale / static_cast<double>(count));
}

DDP_HOST_DEVICE inline float mse_gradient(float grad_scale, float pred, float target) {
  return grad_scale * (pred - target);
}

}  // namespace ddp
