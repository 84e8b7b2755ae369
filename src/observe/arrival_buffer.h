#pragma once
// When this rank arrived at each gradient collective (started a bucket's allreduce), on a
// clock common to all ranks: steady-clock ns minus an origin every rank takes right after
// one barrier as training starts, so the ranks' times agree within the barrier's exit skew
// (microseconds on one host). Recorded into a buffer sized before training, like the span
// buffers: a clock read and a store in the loop, never an allocation; when full, later
// arrivals are counted as dropped, never grown. arrival_lag.h turns every rank's times into
// lags and the straggler.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ddp {

class ArrivalBuffer {
 public:
  explicit ArrivalBuffer(std::size_t capacity) : times_ns_(capacity) {}
  void set_origin(int64_t steady_origin_ns) { origin_ns_ = steady_origin_ns; }
  void add(int64_t steady_ns) noexcept {
    if (size_ < times_ns_.size()) {
      times_ns_[size_++] = steady_ns - origin_ns_;
    } else {
      ++dropped_;
    }
  }
  std::span<const int64_t> times_ns() const { return {times_ns_.data(), size_}; }
  std::size_t dropped() const { return dropped_; }

 private:
  std::vector<int64_t> times_ns_;
  int64_t origin_ns_ = 0;
  std::size_t size_ = 0;
  std::size_t dropped_ = 0;
};

}  // namespace ddp
