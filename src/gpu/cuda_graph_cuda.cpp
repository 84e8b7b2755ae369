#include "gpu/cuda_graph.h"

#include "gpu/cuda_check.h"

namespace ddp {

CudaGraph::CudaGraph(cudaStream_t stream, const std::function<void()>& enqueue) {
  // Thread-local: another thread's CUDA calls (a monitor, a test) do not break the capture.
  check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  try {
    enqueue();
  } catch (...) {
    cudaGraph_t partial = nullptr;
    cudaStreamEndCapture(stream, &partial);
    if (partial != nullptr) cudaGraphDestroy(partial);
    throw;
  }
  check_cuda(cudaStreamEndCapture(stream, &graph_), "cudaStreamEndCapture");
  const cudaError_t status = cudaGraphInstantiate(&exec_, graph_, 0);
  if (status != cudaSuccess) {
    cudaGraphDestroy(graph_);
    check_cuda(status, "cudaGraphInstantiate");
  }
}

CudaGraph::~CudaGraph() {
  cudaGraphExecDestroy(exec_);
  cudaGraphDestroy(graph_);
}

void CudaGraph::launch(cudaStream_t stream) const { check_cuda(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch"); }

}  // namespace ddp
