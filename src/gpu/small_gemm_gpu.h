#pragma once
// gpu/small_gemm.h's GEMM as one kernel on the device.
#include <cuda_runtime_api.h>

#include "gpu/small_gemm.h"

namespace ddp {

// Enqueues g (device pointers) on stream; nothing is allocated, so it can be captured.
void launch_small_gemm(const SmallGemm& g, cudaStream_t stream);

}  // namespace ddp
