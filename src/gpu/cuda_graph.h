#pragma once
// A stream's work captured once as a CUDA graph and replayed with one launch (a
// step costs one launch instead of one per kernel).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>

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

// One graph per shape of work (a step's micro-batch sizes, a validation's size). A shape's
// first run is eager, which makes what the libraries plan on first use (cuBLASLt's
// algorithms); its second is captured; later ones replay the graph.
template <typename Shape>
class GraphsByShape {
 public:
  // Returns whether the work ran as a graph (false: this shape's eager first run).
  bool run(const Shape& shape, cudaStream_t stream, const std::function<void()>& enqueue) {
    auto [entry, first] = graphs_.try_emplace(shape);
    if (first) {
      enqueue();
      return false;
    }
    if (entry->second == nullptr) entry->second = std::make_unique<CudaGraph>(stream, enqueue);
    entry->second->launch(stream);
    return true;
  }
  // Destroys every graph (one still running is freed when it ends); shapes run eagerly again.
  void clear() { graphs_.clear(); }
  int64_t captured() const {
    int64_t count = 0;
    for (const auto& [shape, graph] : graphs_) count += graph != nullptr;
    return count;
  }

 private:
  std::map<Shape, std::unique_ptr<CudaGraph>> graphs_;  // null: run once, not captured yet
};

}  // namespace ddp
