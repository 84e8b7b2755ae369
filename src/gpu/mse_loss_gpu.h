#pragma once
// The MSE loss and its gradient in one kernel (a fused loss), with the loss kept on
// the device: each launch adds the micro-batch's sum of squared differences to a device
// accumulator and raises a device flag for a non-finite difference, so the host reads them at
// logging steps and at the epoch's end instead of syncing every step.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "gpu/step_cursor.h"

namespace ddp {

// On device pointers, enqueued on stream: pred, target, dpred are count floats; dpred =
// grad_scale * (pred - target) (tensor/mse_rule.h); *sum_squares += the sum of
// (pred - target)^2 in double; *nonfinite = 1 when a difference is NaN or infinite.
void launch_mse_loss_and_gradient(const float* pred, const float* target, float* dpred, int64_t count, float grad_scale,
                                  double* sum_squares, int* nonfinite, cudaStream_t stream);

// The same for micro-batch `ahead` of a captured step (gpu/step_cursor.h): its sum goes to
// sums[cursor->micro_batch + ahead], read on the device when the kernel runs, so the host
// can read every micro-batch's loss after the steps. A non-finite difference makes that sum
// non-finite (a square of a float is finite in double), so it needs no flag of its own.
void launch_mse_loss_at(const float* pred, const float* target, float* dpred, int64_t count, float grad_scale,
                        const StepCursor* cursor, int64_t ahead, double* sums, cudaStream_t stream);

struct MseOnGpu {
  double loss = 0;  // the mean over the elements, as mse_loss()
  std::vector<float> dpred;
  bool nonfinite = false;
};

// Host memory in and out, on device 0 (for tests and checks); scale as mse_loss_gradient's.
MseOnGpu mse_loss_and_gradient_on_gpu(const std::vector<float>& pred, const std::vector<float>& target, float scale);

}  // namespace ddp
