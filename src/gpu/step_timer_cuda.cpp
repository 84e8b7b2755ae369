#include "gpu/step_timer.h"

#include "base/check.h"
#include "ddpscope/error.h"
#include "gpu/cuda_check.h"

namespace ddp {

StepTimer::StepTimer(int64_t max_micro_batches) : marks_(device_step_mark_count(max_micro_batches), nullptr) {
  check_cuda(cudaEventCreate(&reference_), "cudaEventCreate");
  for (cudaEvent_t& event : marks_) check_cuda(cudaEventCreate(&event), "cudaEventCreate");
}

StepTimer::~StepTimer() {
  cudaEventDestroy(reference_);
  for (cudaEvent_t event : marks_) cudaEventDestroy(event);
}

void StepTimer::reference(cudaStream_t stream) {
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  check_cuda(cudaEventRecord(reference_, stream), "cudaEventRecord");
  reference_ns_ = steady_now_ns();  // the idle stream records it at once
}

void StepTimer::mark(cudaStream_t stream, std::size_t i) const {
  DDP_CHECK_LT(i, marks_.size());
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  check_cuda(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing");
  // The external flag is what makes a captured record a node; outside a capture it is invalid.
  const unsigned flags = capture == cudaStreamCaptureStatusActive ? cudaEventRecordExternal : cudaEventRecordDefault;
  check_cuda(cudaEventRecordWithFlags(marks_[i], stream, flags), "cudaEventRecordWithFlags");
}

DeviceStepMarks StepTimer::read(std::size_t count) const {
  DDP_CHECK_LE(count, marks_.size());
  // Each interval from its own pair: a float of milliseconds since an epoch's start would
  // round a microsecond's piece away.
  const auto seconds_between = [](cudaEvent_t from, cudaEvent_t to) {
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, from, to), "cudaEventElapsedTime");
    return static_cast<double>(ms) / 1e3;
  };
  DeviceStepMarks marks{.reference_ns = reference_ns_, .seconds = {}};
  for (std::size_t i = 0; i < count; ++i) {
    marks.seconds.push_back(i == 0 ? seconds_between(reference_, marks_[0])
                                   : marks.seconds.back() + seconds_between(marks_[i - 1], marks_[i]));
  }
  return marks;
}

}  // namespace ddp
