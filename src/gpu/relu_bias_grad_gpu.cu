#include <cuda_runtime.h>

#include "ddpscope/error.h"
#include "gpu/cuda_check.h"
#include "gpu/relu_bias_grad_gpu.h"

namespace ddp {
namespace {

constexpr int kThreads = 128;

// One thread per column j: consecutive threads read consecutive floats of each row.
__global__ void relu_bias_grad_kernel(float* dy, const float* y, float* db, int64_t b, int64_t out) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= out) return;
  float sum = 0.0f;
  for (int64_t i = 0; i < b; ++i) {
    float g = dy[i * out + j];
    if (y != nullptr && y[i * out + j] <= 0.0f) {
      g = 0.0f;
      dy[i * out + j] = 0.0f;
    }
    sum += g;
  }
  db[j] += sum;
}

}  // namespace

void launch_relu_backward_and_bias_grad(float* dy, const float* y, float* db, int64_t b, int64_t out,
                                        cudaStream_t stream) {
  DDP_CHECK(b > 0 && out > 0, "an empty layer");
  const int64_t blocks = (out + kThreads - 1) / kThreads;
  relu_bias_grad_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(dy, y, db, b, out);
  check_cuda(cudaGetLastError(), "the ReLU and bias gradient kernel's launch");
}

}  // namespace ddp
