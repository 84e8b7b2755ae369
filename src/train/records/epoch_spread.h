#pragma once
// A run's own noise: the count, mean and standard deviation of its steady epochs' wall
// times (every completed epoch after the first, whose time holds the start-up and the GEMM
// libraries' first calls), in constant size however long the run. Welford's update, so one
// pass and no list:
//   n += 1;  d = x - mean;  mean += d / n;  m2 += d * (x - mean);  sd = sqrt(m2 / (n - 1))
#include <cstdint>

namespace ddp {

struct EpochSpread {
  int64_t count = 0;  // 0 for a run of fewer than 3 epochs: one steady epoch has no spread
  double mean_seconds = 0;
  double sd_seconds = 0;  // with n - 1
};

bool operator==(const EpochSpread& a, const EpochSpread& b);

class EpochSpreadAccumulator {
 public:
  void add(double seconds);
  // What summary.json keeps: zero-count until two epochs were added.
  EpochSpread spread() const;

 private:
  int64_t count_ = 0;
  double mean_ = 0;
  double m2_ = 0;  // the sum of squared distances from the running mean
};

}  // namespace ddp
