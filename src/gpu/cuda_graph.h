#pragma once
// A stream's work captured once as a CUDA graph and replayed with one launch (issue 12: a
// step costs one launch instead of one per kernel).
#include <cuda_runtime_api.h>

#include <functional>

namespace ddp {

class CudaGraph {
 public:
  // Captures what enqueue puts on stream (nothing runs) and instantiates it. Throws Error
  // when CUDA refuses, leaving the stream out of capture.
  CudaGraph(cudaStream_t stream, const std::function<void()>& enqueue);
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  ~CudaGraph();

  void launch(cudaStream_t stream) const;

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace ddp
