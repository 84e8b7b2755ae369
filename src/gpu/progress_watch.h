#pragma once
// When a wait for the GPU has made no progress for too long. A long wait that keeps making
// progress (a large model's epoch of queued steps, an epoch-end read) is legitimate; one whose
// counter has not moved for timeout_s is a peer that stopped taking part in the collectives.
// The counter is any number that grows as the device works: the steps it has finished.
#include <chrono>
#include <cstdint>

namespace ddp {

class ProgressWatch {
 public:
  using Clock = std::chrono::steady_clock;

  ProgressWatch(double timeout_s, Clock::time_point now, int64_t count)
      : timeout_s_(timeout_s), last_move_(now), count_(count) {}

  // Whether `count` has stood still for longer than timeout_s at `now`.
  bool stalled(Clock::time_point now, int64_t count) {
    if (count != count_) {
      count_ = count;
      last_move_ = now;
      return false;
    }
    return std::chrono::duration<double>(now - last_move_).count() > timeout_s_;
  }

  // Since the counter last moved.
  double still_for(Clock::time_point now) const { return std::chrono::duration<double>(now - last_move_).count(); }

 private:
  double timeout_s_;
  Clock::time_point last_move_;
  int64_t count_;
};

}  // namespace ddp
