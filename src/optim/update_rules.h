#pragma once
// The element-wise updates of torch.optim.Adam, AdamW and SGD (single-tensor path), written
// once for the host loops (optim/adam.cpp, optim/sgd.cpp) and the GPU's fused kernel
// (gpu/optimizer_step_gpu.cu). The per-step scalars come from optim/update_scalars.h, in
// double on the host as PyTorch computes them; the update runs in float. Both sides compile these with fusing off
// (CMakeLists.txt, cmake/cuda.cmake), and add, multiply, divide and sqrt are correctly
// rounded on both, so a step makes the same bits on either and a checkpoint moves exactly.
#include <cmath>

#include "ddpscope/host_device.h"

namespace ddp {

struct AdamScalars {
  float l2, decay, beta1, beta2, one_minus_beta1, one_minus_beta2, step_size, bias_correction2_sqrt, eps;
};

// p, m (exp_avg) and v (exp_avg_sq) of one element, updated in place from its gradient g.
DDP_HOST_DEVICE inline void adam_update(const AdamScalars& s, float& p, float g, float& m, float& v) {
  const float gi = g + s.l2 * p;
  const float pi = p * s.decay;
  m = s.beta1 * m + s.one_minus_beta1 * gi;
  v = s.beta2 * v + s.one_minus_beta2 * gi * gi;
#if defined(__CUDA_ARCH__)
  const float root = sqrtf(v);  // correctly rounded, as std::sqrt on the host
#else
  const float root = std::sqrt(v);
#endif
  const float denom = root / s.bias_correction2_sqrt + s.eps;
  p = pi - s.step_size * (m / denom);
}

struct SgdScalars {
  float lr, weight_decay, momentum;
};

// Without momentum (no buffer).
DDP_HOST_DEVICE inline void sgd_update(const SgdScalars& s, float& p, float g) { p -= s.lr * (g + s.weight_decay * p); }

// With momentum: b is the element's momentum buffer.
DDP_HOST_DEVICE inline void sgd_momentum_update(const SgdScalars& s, float& p, float g, float& b) {
  b = s.momentum * b + (g + s.weight_decay * p);
  p -= s.lr * b;
}

}  // namespace ddp
