#pragma once
// Fused elementwise kernels of the MLP. Shapes: B rows (batch), O columns (features),
// row-major and contiguous, in host memory (the GPU's kernels are src/gpu/'s).
#include <cstdint>

namespace ddp {

// y is (B,O), bias is (O): y += bias per row, then y = max(y, 0) when relu.
void bias_activation_forward(float* y, const float* bias, int64_t b, int64_t o, bool relu);

// dy and y are (B,O), y the ReLU output: dy = 0 where y <= 0.
void relu_backward(float* dy, const float* y, int64_t b, int64_t o);

// dy is (B,O), db is (O): db += sum over rows of dy (accumulates into db).
void bias_grad(const float* dy, float* db, int64_t b, int64_t o);

// MSE over all B*O elements (PyTorch's reduction='mean'), in double. pred, target are (B,O).
double mse_loss(const float* pred, const float* target, int64_t b, int64_t o);

// Its gradient, scaled: dpred = scale * 2 * (pred - target) / (B*O). pred, target, dpred
// are (B,O); scale is 1/accumulate_grad_batches, as Lightning divides the loss by k.
void mse_loss_gradient(const float* pred, const float* target, float* dpred, int64_t b, int64_t o, float scale);

}  // namespace ddp
