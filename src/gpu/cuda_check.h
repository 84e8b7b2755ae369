#pragma once
// A failed CUDA runtime call as an Error naming the call and CUDA's own words.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "ddpscope/error.h"

namespace ddp {

inline void check_cuda(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  throw Error(ExitCode::kOther,
              fmt::format("CUDA: {} failed: {} ({})", call, cudaGetErrorString(status), cudaGetErrorName(status)));
}

}  // namespace ddp
