#include <cuda_runtime.h>

#include "ddpscope/error.h"
#include "gpu/axpy.h"
#include "gpu/cuda_check.h"

namespace ddp {
namespace {

__global__ void axpy_kernel(float a, const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __fmaf_rn(a, x[i], y[i]);
}

}  // namespace

std::vector<float> axpy_on_gpu(float a, const std::vector<float>& x, const std::vector<float>& y) {
  DDP_CHECK_EQ(x.size(), y.size());
  const int n = static_cast<int>(x.size());
  const size_t bytes = x.size() * sizeof(float);
  float* dx = nullptr;
  float* dy = nullptr;
  std::vector<float> out(x.size());
  try {
    check_cuda(cudaMalloc(&dx, bytes), "cudaMalloc");
    check_cuda(cudaMalloc(&dy, bytes), "cudaMalloc");
    check_cuda(cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
    check_cuda(cudaMemcpy(dy, y.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
    constexpr int kThreads = 256;
    axpy_kernel<<<(n + kThreads - 1) / kThreads, kThreads>>>(a, dx, dy, n);
    check_cuda(cudaGetLastError(), "the axpy kernel's launch");
    check_cuda(cudaMemcpy(out.data(), dy, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy from the device");
  } catch (...) {
    cudaFree(dx);
    cudaFree(dy);
    throw;
  }
  cudaFree(dx);
  cudaFree(dy);
  return out;
}

}  // namespace ddp
