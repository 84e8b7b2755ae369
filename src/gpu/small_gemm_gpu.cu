#include <cuda_runtime.h>

#include "base/check.h"
#include "ddpscope/error.h"
#include "gpu/cuda_check.h"
#include "gpu/small_gemm_gpu.h"

namespace ddp {
namespace {

constexpr int kThreads = 256;

// Lanes threads per output, consecutive: with 32 a warp holds one output, so every lane of
// a warp passes or fails the bound together and the shuffles see all 32.
template <int kLanes>
__global__ void small_gemm_kernel(SmallGemm g) {
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t output = thread / kLanes;
  if (output >= g.m * g.n) return;
  const int64_t i = output / g.n, j = output % g.n;
  const int lane = static_cast<int>(thread % kLanes);
  float sum = small_gemm_share(g, i, j, lane, kLanes);
  for (int offset = kLanes / 2; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (lane == 0) small_gemm_store(g, i, j, sum);
}

}  // namespace

void launch_small_gemm(const SmallGemm& g, cudaStream_t stream) {
  DDP_CHECK(g.m > 0 && g.n > 0 && g.k > 0, "an empty GEMM");
  const int lanes = small_gemm_lanes(g.k);
  const int64_t blocks = (g.m * g.n * lanes + kThreads - 1) / kThreads;
  if (lanes == 32) {
    small_gemm_kernel<32><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(g);
  } else {
    small_gemm_kernel<1><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(g);
  }
  check_cuda(cudaGetLastError(), "the small GEMM kernel's launch");
}

}  // namespace ddp
