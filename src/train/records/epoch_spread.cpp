#include "train/records/epoch_spread.h"

#include <cmath>

namespace ddp {

bool operator==(const EpochSpread& a, const EpochSpread& b) {
  return a.count == b.count && a.mean_seconds == b.mean_seconds && a.sd_seconds == b.sd_seconds;
}

void EpochSpreadAccumulator::add(double seconds) {
  ++count_;
  const double distance = seconds - mean_;
  mean_ += distance / static_cast<double>(count_);
  m2_ += distance * (seconds - mean_);
}

EpochSpread EpochSpreadAccumulator::spread() const {
  if (count_ < 2) return {};
  return {.count = count_, .mean_seconds = mean_, .sd_seconds = std::sqrt(m2_ / static_cast<double>(count_ - 1))};
}

}  // namespace ddp
