#pragma once
// A CUDA stream owned for a scope. Blocking (cudaStreamCreate's default), so the synchronous
// copies of DeviceArray, on the default stream, are ordered after its work. The price: while
// one is being captured into a graph, the default stream is unusable in the whole process, so
// no other thread may call CUDA on it then (none does: the device monitor reads NVML only).
#include <cuda_runtime_api.h>

#include "gpu/cuda_check.h"

namespace ddp {

class CudaStream {
 public:
  CudaStream() { check_cuda(cudaStreamCreate(&stream_), "cudaStreamCreate"); }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream() { cudaStreamDestroy(stream_); }

  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace ddp
