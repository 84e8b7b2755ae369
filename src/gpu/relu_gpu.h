#pragma once
// The hidden layers' ReLU on the device, in place and NaN kept (v < 0 ? 0 : v, as
// tensor/kernels' host ReLU and torch.relu): a diverged run must show in its loss. Not
// cuBLASLt's ReLU epilogue, which makes a NaN 0 (NVIDIA developer forum, "Incorrect result
// of cublasLtMatmul with CUBLASLT_EPILOGUE_RELU when input is NaN").
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ddp {

// y (count floats, device) = max(y, 0) with NaN kept, enqueued on stream.
void launch_relu(float* y, int64_t count, cudaStream_t stream);

}  // namespace ddp
