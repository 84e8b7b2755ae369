#include <cuda_runtime.h>

#include "base/check.h"
#include "ddpscope/error.h"
#include "gpu/cuda_check.h"
#include "gpu/device_array.h"
#include "gpu/mse_loss_gpu.h"
#include "tensor/mse_rule.h"

namespace ddp {
namespace {

constexpr int kThreads = 256;

// One partial sum per block (a tree in shared memory), then one double atomicAdd per block,
// into sums[0], or with a cursor into sums[cursor->micro_batch + ahead]. nonfinite may be null.
__global__ void mse_kernel(const float* pred, const float* target, float* dpred, int64_t count, float grad_scale,
                           const StepCursor* cursor, int64_t ahead, double* sums, int* nonfinite) {
  __shared__ double partial[kThreads];
  double sum = 0;
  bool bad = false;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float diff = pred[i] - target[i];  // in float, as the host's mse_loss takes it
    bad = bad || !isfinite(diff);
    sum += static_cast<double>(diff) * diff;
    dpred[i] = mse_gradient(grad_scale, pred[i], target[i]);
  }
  if (bad && nonfinite != nullptr) *nonfinite = 1;
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(sums + (cursor != nullptr ? cursor->micro_batch + ahead : 0), partial[0]);
}

unsigned blocks_for(int64_t count) {
  DDP_CHECK_GT(count, 0, "the MSE of an empty batch is undefined");
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1024 ? blocks : 1024);
}

}  // namespace

void launch_mse_loss_and_gradient(const float* pred, const float* target, float* dpred, int64_t count, float grad_scale,
                                  double* sum_squares, int* nonfinite, cudaStream_t stream) {
  mse_kernel<<<blocks_for(count), kThreads, 0, stream>>>(pred, target, dpred, count, grad_scale, nullptr, 0,
                                                         sum_squares, nonfinite);
  check_cuda(cudaGetLastError(), "the MSE kernel's launch");
}

void launch_mse_loss_at(const float* pred, const float* target, float* dpred, int64_t count, float grad_scale,
                        const StepCursor* cursor, int64_t ahead, double* sums, cudaStream_t stream) {
  mse_kernel<<<blocks_for(count), kThreads, 0, stream>>>(pred, target, dpred, count, grad_scale, cursor, ahead, sums,
                                                         nullptr);
  check_cuda(cudaGetLastError(), "the MSE kernel's launch");
}

MseOnGpu mse_loss_and_gradient_on_gpu(const std::vector<float>& pred, const std::vector<float>& target, float scale) {
  DDP_CHECK_EQ(pred.size(), target.size());
  const auto count = static_cast<int64_t>(pred.size());
  const DeviceArray<float> d_pred(pred), d_target(target), d_grad(pred.size());
  const DeviceArray<double> d_sum(1);
  const DeviceArray<int> d_flag(1);
  launch_mse_loss_and_gradient(d_pred.data(), d_target.data(), d_grad.data(), count, mse_gradient_scale(scale, count),
                               d_sum.data(), d_flag.data(), nullptr);
  MseOnGpu out;
  out.dpred = d_grad.to_host();
  out.loss = d_sum.to_host()[0] / static_cast<double>(count);
  out.nonfinite = d_flag.to_host()[0] != 0;
  return out;
}

}  // namespace ddp
