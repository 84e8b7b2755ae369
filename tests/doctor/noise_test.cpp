#include "doctor/noise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace ddp {
namespace {

TEST(SummarizeTest, IsTheMeanAndItsStandardError) {
  const std::vector<double> values{9, 11};  // sd = sqrt(2), se = sqrt(2) / sqrt(2)
  const Sample s = summarize(values);
  EXPECT_DOUBLE_EQ(s.mean, 10.0);
  EXPECT_DOUBLE_EQ(s.standard_error, 1.0);
  const std::vector<double> four{1, 2, 3, 6};  // mean 3, squares 4+1+0+9, sd = sqrt(14/3)
  EXPECT_DOUBLE_EQ(summarize(four).standard_error, std::sqrt(14.0 / 3.0) / 2.0);
}

TEST(SummarizeTest, OneRunTakesItsRelativeErrorFromItsEpochs) {
  const std::vector<double> epochs{1.9, 2.1};  // mean 2, se 0.1: 5 %
  const Sample run = run_with_epoch_spread(20, epochs);
  EXPECT_DOUBLE_EQ(run.mean, 20.0);
  EXPECT_NEAR(run.standard_error, 1.0, 1e-12);
}

TEST(SummarizeTest, ASummaryJsonsSteadyEpochsGiveTheSameSampleAsTheirTimes) {
  const std::vector<double> epochs{1.9, 2.1, 2.3};  // mean 2.1, sd 0.2
  const EpochSpread spread{.count = 3, .mean_seconds = 2.1, .sd_seconds = 0.2};
  const Sample from_times = run_with_epoch_spread(20, epochs);
  const Sample from_spread = run_with_epoch_spread(20, spread);
  EXPECT_DOUBLE_EQ(from_spread.mean, 20.0);
  EXPECT_NEAR(from_spread.standard_error, from_times.standard_error, 1e-12);
  EXPECT_NEAR(from_spread.standard_error, 20 * (0.2 / std::sqrt(3.0)) / 2.1, 1e-12);
}

TEST(EffectTest, InsideTheBandIsNoMeasurableEffect) {
  // 12/10 - 1 = 0.2; 1.96 * 1.2 * sqrt((1/12)^2 + (1/10)^2) = 0.30616
  const std::vector<double> baseline{9, 11}, ablation{11, 13};
  const Effect e = effect_of(baseline, ablation);
  EXPECT_NEAR(e.relative, 0.2, 1e-12);
  EXPECT_NEAR(e.uncertainty, 0.306162, 1e-6);
  EXPECT_FALSE(measurable(e));
  EXPECT_EQ(describe(e), "no measurable effect (±30.6 %)");
}

TEST(EffectTest, OutsideTheBandIsSlowerOrFaster) {
  const std::vector<double> baseline{9.9, 10.1}, slower{12.9, 13.1}, faster{8.9, 9.1};
  // 1.96 * 1.3 * sqrt((0.1/13)^2 + (0.1/10)^2) = 0.032146
  const Effect s = effect_of(baseline, slower);
  EXPECT_NEAR(s.relative, 0.3, 1e-12);
  EXPECT_NEAR(s.uncertainty, 0.032146, 1e-6);
  EXPECT_TRUE(measurable(s));
  EXPECT_EQ(describe(s), "30.0 % slower (±3.2 %)");
  // 1.96 * 0.9 * sqrt((0.1/9)^2 + (0.1/10)^2) = 0.026369
  const Effect f = effect_of(baseline, faster);
  EXPECT_NEAR(f.relative, -0.1, 1e-12);
  EXPECT_NEAR(f.uncertainty, 0.026369, 1e-6);
  EXPECT_TRUE(measurable(f));
  EXPECT_EQ(describe(f), "10.0 % faster (±2.6 %)");
}

TEST(EffectTest, TwoSingleRunsUseTheirEpochSpread) {
  const std::vector<double> baseline_epochs{1.9, 2.1}, ablation_epochs{2.09, 2.31};  // both 5 %
  const Effect e = effect_of(run_with_epoch_spread(20, baseline_epochs), run_with_epoch_spread(22, ablation_epochs));
  EXPECT_NEAR(e.relative, 0.1, 1e-12);
  EXPECT_NEAR(e.uncertainty, 1.96 * 1.1 * std::sqrt(2 * 0.05 * 0.05), 1e-9);  // 0.152
  EXPECT_EQ(describe(e), "no measurable effect (±15.2 %)");
}

TEST(EffectTest, TheIssuesSyncEveryMicroBatchResultIsNoise) {
  EXPECT_EQ(describe({.relative = -0.028, .uncertainty = 0.031}), "no measurable effect (±3.1 %)");
  EXPECT_EQ(describe({.relative = -0.028, .uncertainty = 0.021}), "2.8 % faster (±2.1 %)");
  EXPECT_FALSE(measurable({.relative = 0.05, .uncertainty = 0.05}));  // on the edge is inside
  EXPECT_EQ(describe({.relative = 0.123, .uncertainty = 0.021}), "12.3 % slower (±2.1 %)");
}

TEST(EffectTest, WithoutVarianceAnyChangeIsMeasurable) {
  const std::vector<double> same{2, 2, 2}, longer{2.2, 2.2};
  const Effect e = effect_of(same, longer);
  EXPECT_NEAR(e.relative, 0.1, 1e-12);
  EXPECT_EQ(e.uncertainty, 0.0);
  EXPECT_EQ(describe(e), "10.0 % slower (±0.0 %)");
  const Effect none = effect_of(same, same);
  EXPECT_EQ(none.relative, 0.0);
  EXPECT_FALSE(measurable(none));
  EXPECT_EQ(describe(none), "no measurable effect (±0.0 %)");
}

TEST(EffectTest, BadSamplesAreOurBug) {
  const std::vector<double> empty{}, one{1.0}, negative{1.0, -1.0}, zero{0.0, 1.0},
      nan{1.0, std::numeric_limits<double>::quiet_NaN()}, fine{1.0, 1.1};
  EXPECT_DEATH(summarize(empty), "two values or more");
  EXPECT_DEATH(summarize(one), "two values or more");
  EXPECT_DEATH(summarize(negative), "finite and positive");
  EXPECT_DEATH(summarize(zero), "finite and positive");
  EXPECT_DEATH(summarize(nan), "finite and positive");
  EXPECT_DEATH(effect_of(empty, fine), "two values or more");
  EXPECT_DEATH(run_with_epoch_spread(0, fine), "finite and positive");
  EXPECT_DEATH(run_with_epoch_spread(5, one), "two values or more");
  EXPECT_DEATH(run_with_epoch_spread(5, EpochSpread{.count = 1, .mean_seconds = 1, .sd_seconds = 0}),
               "two values or more");
  EXPECT_DEATH(run_with_epoch_spread(5, EpochSpread{.count = 3, .mean_seconds = 0, .sd_seconds = 0}), "positive");
  EXPECT_DEATH(effect_of(Sample{}, Sample{.mean = 1, .standard_error = 0}), "positive");
}

}  // namespace
}  // namespace ddp
