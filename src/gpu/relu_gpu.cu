#include <cuda_runtime.h>

#include "base/check.h"
#include "ddpscope/error.h"
#include "gpu/cuda_check.h"
#include "gpu/relu_gpu.h"

namespace ddp {
namespace {

constexpr int kThreads = 256;

__global__ void relu_kernel(float* y, int64_t count) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = y[i];
    y[i] = v < 0.0f ? 0.0f : v;  // NaN < 0 is false: a NaN stays
  }
}

}  // namespace

void launch_relu(float* y, int64_t count, cudaStream_t stream) {
  DDP_CHECK_GT(count, 0, "an empty layer");
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  relu_kernel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kThreads, 0, stream>>>(y, count);
  check_cuda(cudaGetLastError(), "the ReLU kernel's launch");
}

}  // namespace ddp
