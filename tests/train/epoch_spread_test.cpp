// Welford's one-pass spread against the two-pass textbook one.
#include "train/records/epoch_spread.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace ddp {
namespace {

TEST(EpochSpread, IsTheMeanAndTheSampleStandardDeviation) {
  const std::vector<double> epochs{0.52, 0.49, 0.61, 0.50, 0.55};
  EpochSpreadAccumulator accumulator;
  for (const double e : epochs) accumulator.add(e);
  double mean = 0;
  for (const double e : epochs) mean += e / epochs.size();
  double squares = 0;
  for (const double e : epochs) squares += (e - mean) * (e - mean);
  const EpochSpread spread = accumulator.spread();
  EXPECT_EQ(spread.count, 5);
  EXPECT_NEAR(spread.mean_seconds, mean, 1e-15);
  EXPECT_NEAR(spread.sd_seconds, std::sqrt(squares / 4), 1e-15);
}

TEST(EpochSpread, StaysAccurateForLongRunsOfNearlyEqualEpochs) {
  // A naive sum of squares loses every digit here; Welford's keeps them.
  EpochSpreadAccumulator accumulator;
  for (int i = 0; i < 100000; ++i) accumulator.add(1e4 + (i % 2 == 0 ? 1e-3 : -1e-3));
  const EpochSpread spread = accumulator.spread();
  EXPECT_NEAR(spread.mean_seconds, 1e4, 1e-9);
  EXPECT_NEAR(spread.sd_seconds, 1e-3, 1e-7);
}

TEST(EpochSpread, FewerThanTwoEpochsHaveNoSpread) {
  EpochSpreadAccumulator accumulator;
  EXPECT_EQ(accumulator.spread(), EpochSpread{});
  accumulator.add(0.5);
  EXPECT_EQ(accumulator.spread(), EpochSpread{});  // zero-count, as summary.json leaves it out
  accumulator.add(0.7);
  EXPECT_EQ(accumulator.spread().count, 2);
  EXPECT_NEAR(accumulator.spread().sd_seconds, std::sqrt(0.02), 1e-15);
}

}  // namespace
}  // namespace ddp
