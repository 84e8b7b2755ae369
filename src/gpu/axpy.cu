#include <cuda_runtime.h>

#include "base/check.h"
#include "ddpscope/error.h"
#include "gpu/axpy.h"
#include "gpu/cuda_check.h"
#include "gpu/device_array.h"

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
  const DeviceArray<float> dx(x), dy(y);
  constexpr int kThreads = 256;
  axpy_kernel<<<(n + kThreads - 1) / kThreads, kThreads>>>(a, dx.data(), dy.data(), n);
  check_cuda(cudaGetLastError(), "the axpy kernel's launch");
  return dy.to_host();
}

}  // namespace ddp
