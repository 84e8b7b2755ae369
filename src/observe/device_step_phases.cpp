#include "observe/device_step_phases.h"

#include <fmt/format.h>

#include <algorithm>

#include "ddpscope/error.h"

namespace ddp {
namespace {

// The pieces of a timed step between consecutive marks, in order, with their phases.
std::vector<Phase> piece_phases(int64_t micro_batches) {
  std::vector<Phase> phases = {Phase::kOptimizer};  // start -> grads zeroed
  for (int64_t j = 0; j < micro_batches; ++j) {
    phases.insert(phases.end(), {Phase::kData, Phase::kForward, Phase::kBackward});
  }
  phases.push_back(Phase::kOptimizer);  // last backward -> end
  return phases;
}

int64_t micro_batches_of(const DeviceStepMarks& marks) {
  const std::size_t n = marks.seconds.size();
  if (n < device_step_mark_count(1) || n % 3 != 0) {
    throw DataError(fmt::format("a timed GPU step has {} marks; expected 3 + 3 per micro-batch", n));
  }
  return static_cast<int64_t>(n / 3 - 1);
}

double interval(const DeviceStepMarks& marks, std::size_t i) {
  const double seconds = marks.seconds[i + 1] - marks.seconds[i];
  if (seconds < 0) throw DataError(fmt::format("a timed GPU step's mark {} comes before mark {}", i + 1, i));
  return seconds;
}

}  // namespace

DeviceStepTimes device_step_times(const DeviceStepMarks& marks) {
  DeviceStepTimes times{.micro_batches = micro_batches_of(marks)};
  const std::vector<Phase> phases = piece_phases(times.micro_batches);
  for (std::size_t i = 0; i < phases.size(); ++i) {
    const double seconds = interval(marks, i);
    switch (phases[i]) {
      case Phase::kData:
        times.data += seconds;
        break;
      case Phase::kForward:
        times.forward += seconds;
        break;
      case Phase::kBackward:
        times.backward += seconds;
        break;
      default:
        times.optimizer += seconds;
        break;
    }
  }
  return times;
}

std::vector<Span> device_step_spans(const DeviceStepMarks& marks) {
  const std::vector<Phase> phases = piece_phases(micro_batches_of(marks));
  const auto at = [&](std::size_t i) { return marks.reference_ns + static_cast<int64_t>(marks.seconds[i] * 1e9); };
  std::vector<Span> spans;
  for (std::size_t i = 0; i < phases.size(); ++i) {
    interval(marks, i);  // refuses a step out of order
    spans.push_back({at(i), at(i + 1), static_cast<uint16_t>(phases[i]), TraceThread::kGpu});
  }
  return spans;
}

void DevicePhaseSamples::add_trained(int64_t micro_batches) {
  ++steps_;
  micro_batches_ += micro_batches;
}

void DevicePhaseSamples::add_timed(const DeviceStepTimes& step) {
  ++timed_steps_;
  timed_micro_batches_ += step.micro_batches;
  data_ += step.data;
  forward_ += step.forward;
  backward_ += step.backward;
  optimizer_ += step.optimizer;
}

void DevicePhaseSamples::attribute(PhaseClock& clock) const {
  if (timed_steps_ == 0) return;
  const double per_batch = static_cast<double>(micro_batches_) / static_cast<double>(timed_micro_batches_);
  const double per_step = static_cast<double>(steps_) / static_cast<double>(timed_steps_);
  const std::array<std::pair<Phase, double>, 4> device = {{{Phase::kData, data_ * per_batch},
                                                           {Phase::kForward, forward_ * per_batch},
                                                           {Phase::kBackward, backward_ * per_batch},
                                                           {Phase::kOptimizer, optimizer_ * per_step}}};
  double total = 0;
  for (const auto& [phase, seconds] : device) total += seconds;
  if (total <= 0) return;
  const double other = clock.seconds()[static_cast<std::size_t>(Phase::kOther)];
  const double share = std::min(1.0, other / total);
  for (const auto& [phase, seconds] : device) clock.move_seconds(Phase::kOther, phase, seconds * share);
}

}  // namespace ddp
