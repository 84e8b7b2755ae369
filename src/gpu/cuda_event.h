#pragma once
// A CUDA event owned for a scope. Without timing: an order between two streams (one records,
// the other waits), which a stream capture turns into an edge of the graph. With timing: a
// mark on a stream, whose distance from another is read on the host.
#include <cuda_runtime_api.h>

#include "gpu/cuda_check.h"

namespace ddp {

class CudaEvent {
 public:
  enum class Timing { kOff, kOn };

  explicit CudaEvent(Timing timing = Timing::kOff) {
    check_cuda(cudaEventCreateWithFlags(&event_, timing == Timing::kOn ? cudaEventDefault : cudaEventDisableTiming),
               "cudaEventCreateWithFlags");
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  ~CudaEvent() { cudaEventDestroy(event_); }

  // What `from` has been given so far comes before what `to` is given next.
  void order(cudaStream_t from, cudaStream_t to) const {
    record(from);
    check_cuda(cudaStreamWaitEvent(to, event_, 0), "cudaStreamWaitEvent");
  }

  void record(cudaStream_t stream) const { check_cuda(cudaEventRecord(event_, stream), "cudaEventRecord"); }

  // Seconds from `earlier` to this, both timing events; waits until this one has happened.
  double seconds_after(const CudaEvent& earlier) const {
    check_cuda(cudaEventSynchronize(event_), "cudaEventSynchronize");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, earlier.event_, event_), "cudaEventElapsedTime");
    return static_cast<double>(ms) / 1e3;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace ddp
