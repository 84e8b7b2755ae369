#include "observe/device_sample.h"

#include "base/check.h"
#include "ddpscope/error.h"

namespace ddp {

void SampleRing::reset(std::size_t capacity) {
  DDP_CHECK_GT(capacity, 0u);
  slots_.clear();
  slots_.reserve(capacity);
  capacity_ = capacity;
  count_ = 0;
}

void SampleRing::push(const DeviceSample& sample) {
  DDP_CHECK_GT(capacity_, 0u);
  if (slots_.size() < capacity_) {
    slots_.push_back(sample);
  } else {
    slots_[count_ % capacity_] = sample;
  }
  ++count_;
}

std::vector<DeviceSample> SampleRing::ordered() const {
  if (count_ <= slots_.size()) return slots_;
  // Wrapped: the oldest kept sample is the slot to be overwritten next.
  const auto oldest = static_cast<std::ptrdiff_t>(count_ % capacity_);
  std::vector<DeviceSample> out(slots_.begin() + oldest, slots_.end());
  out.insert(out.end(), slots_.begin(), slots_.begin() + oldest);
  return out;
}

}  // namespace ddp
