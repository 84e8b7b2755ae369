#pragma once
// A GPU step's phases as the device ran them: CUDA events recorded between the
// step's pieces, read once the host has waited for the device anyway (at logging steps and
// epoch ends). A step's kernels are enqueued, not run, by the host, so the host's clock sees
// only launching and waiting (the phase "other"); the events say which part of that time the
// device spent on data, forward, backward and the optimizer.
//
// One step after each of those reads is timed (the others run without events), so a run's
// device phases are the timed steps' means times the steps it trained: sampled, as a
// profiler samples, and exact when every step is alike. The device's share is then moved out
// of the host's "other", which keeps the rest: the host's launches and waits that the device
// did not fill. The phases still sum to the wall time.
#include <array>
#include <cstdint>
#include <vector>

#include "observe/phase.h"
#include "observe/phase_clock.h"
#include "observe/span_buffer.h"

namespace ddp {

// The events of one timed step, in the order the step records them: start, grads zeroed,
// then (data, forward, backward) for each micro-batch, then end (after the optimizer).
struct DeviceStepMarks {
  int64_t reference_ns = 0;     // the steady clock when the reference event was recorded
  std::vector<double> seconds;  // from the reference event to each mark, 3 + 3 * micro-batches
};

inline constexpr std::size_t device_step_mark_count(int64_t micro_batches) {
  return static_cast<std::size_t>(3 + 3 * micro_batches);
}

// The device phases of a step: data, forward (with the loss), backward, optimizer (zeroing
// the gradients, and the update after the last backward). A step measured out of order (an
// interval below zero) is a DataError.
struct DeviceStepTimes {
  int64_t micro_batches = 0;
  double data = 0, forward = 0, backward = 0, optimizer = 0;
};
DeviceStepTimes device_step_times(const DeviceStepMarks& marks);

// The trace's GPU track: one span per piece of a timed step, at the host's clock.
std::vector<Span> device_step_spans(const DeviceStepMarks& marks);

// The steps a run trained on its GPU, and the timed ones among them.
class DevicePhaseSamples {
 public:
  void add_trained(int64_t micro_batches);
  void add_timed(const DeviceStepTimes& step);

  // Moves, from the clock's "other", the device's time over every step trained (the timed
  // means per micro-batch and per step) into data, forward, backward and optimizer; at most
  // what "other" holds, shared in proportion. Nothing without a timed step.
  void attribute(PhaseClock& clock) const;

 private:
  int64_t steps_ = 0, micro_batches_ = 0;
  int64_t timed_steps_ = 0, timed_micro_batches_ = 0;
  double data_ = 0, forward_ = 0, backward_ = 0, optimizer_ = 0;
};

}  // namespace ddp
