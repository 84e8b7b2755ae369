#include "tensor/kernels.h"

#include "base/check.h"
#include "ddpscope/error.h"
#include "tensor/mse_rule.h"

// Plain loops over __restrict__ pointers: g++ -O3 -march=native vectorises every inner loop
// (checked with -fopt-info-vec). The double-precision reductions need `omp simd` to allow
// reordering the sum; the library is built with OpenMP, so the pragma is honoured.

namespace ddp {

// y is (B,O), bias is (O).
void bias_activation_forward(float* __restrict__ y, const float* __restrict__ bias, int64_t b, int64_t o, bool relu) {
  DDP_CHECK_GE(b, 0);
  DDP_CHECK_GE(o, 0);
  for (int64_t i = 0; i < b; ++i) {
    float* __restrict__ row = y + i * o;
    if (relu) {
      // `v < 0 ? 0 : v` rather than std::max(v, 0): a NaN stays NaN, as in torch.relu, so a
      // diverged run shows up in the loss instead of being clamped away.
      for (int64_t j = 0; j < o; ++j) {
        const float v = row[j] + bias[j];
        row[j] = v < 0.0f ? 0.0f : v;
      }
    } else {
      for (int64_t j = 0; j < o; ++j) row[j] += bias[j];
    }
  }
}

// dy and y are (B,O). Zero where y <= 0, as torch's threshold_backward: the gradient at
// exactly 0 is 0.
void relu_backward(float* __restrict__ dy, const float* __restrict__ y, int64_t b, int64_t o) {
  DDP_CHECK_GE(b, 0);
  DDP_CHECK_GE(o, 0);
  const int64_t count = b * o;
  for (int64_t i = 0; i < count; ++i) dy[i] = y[i] <= 0.0f ? 0.0f : dy[i];
}

// dy is (B,O), db is (O). Row by row so the inner loop runs along contiguous memory.
void bias_grad(const float* __restrict__ dy, float* __restrict__ db, int64_t b, int64_t o) {
  DDP_CHECK_GE(b, 0);
  DDP_CHECK_GE(o, 0);
  for (int64_t i = 0; i < b; ++i) {
    const float* __restrict__ row = dy + i * o;
    for (int64_t j = 0; j < o; ++j) db[j] += row[j];
  }
}

double mse_loss(const float* __restrict__ pred, const float* __restrict__ target, int64_t b, int64_t o) {
  DDP_CHECK_GT(b, 0, "the MSE of an empty batch is undefined");
  DDP_CHECK_GT(o, 0, "the MSE of an empty batch is undefined");
  const int64_t count = b * o;
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < count; ++i) {
    // The difference in float, as mse_loss_gradient takes it.
    const float diff = pred[i] - target[i];
    sum += static_cast<double>(diff) * diff;
  }
  return sum / static_cast<double>(count);
}

// pred, target, dpred are (B,O), contiguous, so treated as one vector of B*O. The scale is
// folded into one float factor, so each element costs one subtraction and one product.
void mse_loss_gradient(const float* __restrict__ pred, const float* __restrict__ target, float* __restrict__ dpred,
                       int64_t b, int64_t o, float scale) {
  DDP_CHECK_GT(b, 0, "the MSE of an empty batch is undefined");
  DDP_CHECK_GT(o, 0, "the MSE of an empty batch is undefined");
  const int64_t count = b * o;
  const float grad_scale = mse_gradient_scale(scale, count);
  for (int64_t i = 0; i < count; ++i) dpred[i] = mse_gradient(grad_scale, pred[i], target[i]);
}

}  // namespace ddp
