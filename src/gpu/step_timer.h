#pragma once
// CUDA events between a step's pieces (observe/device_step_phases.h says which). Recorded
// inside a stream capture they become the graph's event-record nodes (cudaEventRecordExternal),
// so a captured step is timed on every replay of its graph, at no host cost. A reference event,
// recorded on an idle stream, ties the device's times to the host's steady clock.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "observe/device_step_phases.h"

namespace ddp {

class StepTimer {
 public:
  explicit StepTimer(int64_t max_micro_batches);
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;
  ~StepTimer();

  // Synchronises the stream, then records the reference event on it and notes the host's clock.
  void reference(cudaStream_t stream);
  // Records mark i (device_step_phases.h's order), as a graph node while the stream is captured.
  void mark(cudaStream_t stream, std::size_t i) const;
  // The first `count` marks, from the reference (the stream must have run them).
  DeviceStepMarks read(std::size_t count) const;

 private:
  cudaEvent_t reference_ = nullptr;
  int64_t reference_ns_ = 0;
  std::vector<cudaEvent_t> marks_;
};

}  // namespace ddp
