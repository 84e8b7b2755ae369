#pragma once
// Attributes wall time to phases: the clock is always in exactly one phase, and switching
// charges the time since the last switch to the phase being left. So the phases sum to
// the time since start() by construction of the intervals, and cost one clock read each.
#include <array>
#include <chrono>
#include <cstdint>

#include "observe/phase.h"
#include "observe/span_buffer.h"

namespace ddp {

class PhaseClock {
 public:
  using Clock = std::chrono::steady_clock;

  void start(Phase phase = Phase::kStartup, Clock::time_point at = Clock::now()) {
    seconds_.fill(0);
    calls_.fill(0);
    current_ = phase;
    last_ = at;
    calls_[index(phase)] = 1;
  }

  // Also records every phase interval as a span (for --profiler trace).
  void record_spans(SpanBuffer* spans) { spans_ = spans; }

  // Leaves the current phase and enters `phase`; returns the phase left.
  Phase enter(Phase phase) {
    const Clock::time_point now = Clock::now();
    seconds_[index(current_)] += std::chrono::duration<double>(now - last_).count();
    if (spans_ != nullptr) {
      spans_->add({steady_ns(last_), steady_ns(now), static_cast<uint16_t>(current_), TraceThread::kCompute});
    }
    last_ = now;
    const Phase left = current_;
    current_ = phase;
    ++calls_[index(phase)];
    return left;
  }

  // Charges `seconds` of what `from` holds to `to` instead: for time that another clock (a
  // GPU's events, observe/device_step_phases.h) splits finer than this one saw it.
  void move_seconds(Phase from, Phase to, double seconds) {
    seconds_[index(from)] -= seconds;
    seconds_[index(to)] += seconds;
  }

  Phase current() const { return current_; }
  // Seconds per phase up to the last switch (call enter() first to close the current one).
  const std::array<double, kPhaseCount>& seconds() const { return seconds_; }
  const std::array<int64_t, kPhaseCount>& calls() const { return calls_; }

 private:
  static std::size_t index(Phase p) { return static_cast<std::size_t>(p); }
  std::array<double, kPhaseCount> seconds_{};
  std::array<int64_t, kPhaseCount> calls_{};
  Phase current_ = Phase::kOther;
  Clock::time_point last_{};
  SpanBuffer* spans_ = nullptr;
};

}  // namespace ddp
