#include "ddpscope/loss.h"

#include "base/check.h"
#include "ddpscope/error.h"
#include "tensor/kernels.h"

namespace ddp {

Loss Loss::mse(double value, const float* prediction, const float* target, int64_t rows, int64_t cols) {
  DDP_CHECK(prediction != nullptr && target != nullptr && rows > 0 && cols > 0);
  return Loss(value, prediction, target, rows, cols);
}

void Loss::write_gradient(float* gradient, float scale) const {
  DDP_CHECK(has_gradient(), "a Loss without a gradient cannot seed backward");
  mse_loss_gradient(prediction_, target_, gradient, rows_, cols_, scale);
}

}  // namespace ddp
