#pragma once
// What a training step returns: the loss, and the gradient backward starts from. Lightning
// runs loss.backward() on the tensor training_step returns; here the Loss carries what that
// gradient is made of (the prediction and target it was computed from), so the Trainer can
// seed backward with it, scaled for gradient accumulation, in plain sight. A Loss made from
// a bare number has no gradient, and the Trainer refuses to run backward from it.
#include <cstdint>
#include <limits>

#include "ddpscope/buffer.h"

namespace ddp {

class Loss {
 public:
  Loss() = default;
  // A value only (a validation step may return one): no gradient.
  explicit Loss(double value) : value_(value) {}
  // MSELoss()(prediction, target) == value; prediction and target are (rows, cols) and must
  // stay unchanged until the gradient is written (the next forward overwrites prediction).
  static Loss mse(double value, const float* prediction, const float* target, int64_t rows, int64_t cols);

  double value() const { return value_; }
  bool has_gradient() const { return prediction_ != nullptr; }
  int64_t rows() const { return rows_; }
  // scale * dLoss/dPrediction into gradient (rows, cols). Needs has_gradient().
  void write_gradient(float* gradient, float scale) const;

 private:
  Loss(double value, const float* prediction, const float* target, int64_t rows, int64_t cols)
      : value_(value), prediction_(prediction), target_(target), rows_(rows), cols_(cols) {}

  double value_ = std::numeric_limits<double>::quiet_NaN();
  const float* prediction_ = nullptr;
  const float* target_ = nullptr;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
};

}  // namespace ddp
