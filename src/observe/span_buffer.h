#pragma once
// Spans for the trace: recorded into a buffer allocated before training, so recording in
// the loop costs a clock read and a store and never allocates. When the buffer is full,
// further spans are counted as dropped (and said in the trace), never grown.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ddp {

// The threads of a rank, as the trace names them.
// kGpu: the device's timed steps (observe/device_step_phases.h).
enum class TraceThread : uint8_t { kCompute, kComm, kLoader, kMonitor, kGpu };

struct Span {
  int64_t start_ns = 0;  // steady clock
  int64_t end_ns = 0;
  uint16_t name = 0;  // a Phase, or kAllreduceSpan
  TraceThread thread = TraceThread::kCompute;
  int64_t bytes = 0;      // allreduce payload
  int64_t hidden_ns = 0;  // allreduce time that ran while backward was still computing
};

inline constexpr uint16_t kAllreduceSpan = 1000;

inline int64_t steady_ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
inline int64_t steady_now_ns() { return steady_ns(std::chrono::steady_clock::now()); }

class SpanBuffer {
 public:
  explicit SpanBuffer(std::size_t capacity) : spans_(capacity) {}
  void add(const Span& span) noexcept {
    if (size_ < spans_.size()) {
      spans_[size_++] = span;
    } else {
      ++dropped_;
    }
  }
  const Span* begin() const { return spans_.data(); }
  const Span* end() const { return spans_.data() + size_; }
  std::size_t size() const { return size_; }
  std::size_t dropped() const { return dropped_; }
  // The recorded spans, without a copy; the buffer is empty afterwards.
  std::vector<Span> release() && {
    spans_.resize(size_);
    size_ = 0;
    return std::move(spans_);
  }

 private:
  std::vector<Span> spans_;
  std::size_t size_ = 0;
  std::size_t dropped_ = 0;
};

}  // namespace ddp
