#pragma once
// A CUDA event owned for a scope, without timing: an order between two streams (one records,
// the other waits), which a stream capture turns into an edge of the graph.
#include <cuda_runtime_api.h>

#include "gpu/cuda_check.h"

namespace ddp {

class CudaEvent {
 public:
  CudaEvent() { check_cuda(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreateWithFlags"); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  ~CudaEvent() { cudaEventDestroy(event_); }

  // What `from` has been given so far comes before what `to` is given next.
  void order(cudaStream_t from, cudaStream_t to) const {
    check_cuda(cudaEventRecord(event_, from), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(to, event_, 0), "cudaStreamWaitEvent");
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace ddp
