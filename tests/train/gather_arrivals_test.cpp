// From every rank's arrival times at the gradient collectives to the summary's arrivals:
// lags, the straggler, the per-step chart series, and the refusal of records that disagree.
#include "train/records/gather_arrivals.h"

#include <gtest/gtest.h>

namespace ddp {
namespace {

constexpr int64_t kMs = 1'000'000;

// `steps` steps of `per_step` collectives 10 ms apart; rank 1 arrives `late` ns after rank 0.
std::vector<std::vector<int64_t>> two_ranks(int64_t steps, int64_t per_step, int64_t late) {
  std::vector<std::vector<int64_t>> arrival_ns(2);
  for (int64_t c = 0; c < steps * per_step; ++c) {
    arrival_ns[0].push_back(10 * kMs * c);
    arrival_ns[1].push_back(10 * kMs * c + late);
  }
  return arrival_ns;
}

TEST(SummarizeArrivals, NamesTheLateRankAndWhatItCostsPerStep) {
  std::vector<std::string> warnings;
  const ArrivalSummary a = summarize_arrivals(two_ranks(3, 2, kMs), 2, warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(a.collectives, 6);
  EXPECT_EQ(a.steps, 3);
  ASSERT_EQ(a.per_rank.size(), 2u);
  EXPECT_EQ(a.per_rank[1].times_last, 6);
  EXPECT_EQ(a.per_rank[1].lag_ns, 6 * kMs);
  EXPECT_EQ(a.per_rank[0].wait_ns, 6 * kMs);
  ASSERT_TRUE(a.straggler);
  EXPECT_EQ(a.straggler->rank, 1);
  EXPECT_DOUBLE_EQ(a.straggler->last_share, 1.0);
  EXPECT_DOUBLE_EQ(a.straggler->cost_seconds_per_step, 2e-3);  // 1 ms at each of 2 collectives
  ASSERT_EQ(a.lag_ms_per_rank.size(), 2u);
  EXPECT_EQ(a.lag_ms_per_rank[0], std::vector<double>(3, 0.0));
  EXPECT_EQ(a.lag_ms_per_rank[1], std::vector<double>(3, 1.0));  // mean over a step's collectives
}

TEST(SummarizeArrivals, EqualArrivalsNameNoStraggler) {
  std::vector<std::string> warnings;
  const ArrivalSummary a = summarize_arrivals(two_ranks(4, 1, 0), 1, warnings);
  EXPECT_FALSE(a.straggler);
  EXPECT_EQ(a.per_rank[0].times_last + a.per_rank[1].times_last, 0);
}

TEST(SummarizeArrivals, TheChartSeriesAveragesConsecutiveStepsIntoAtMost200Points) {
  std::vector<std::vector<int64_t>> arrival_ns = two_ranks(500, 1, 0);
  for (std::size_t c = 0; c < arrival_ns[1].size(); ++c) arrival_ns[1][c] += static_cast<int64_t>(c % 2) * 2 * kMs;
  std::vector<std::string> warnings;
  const ArrivalSummary a = summarize_arrivals(arrival_ns, 1, warnings);
  ASSERT_EQ(a.lag_ms_per_rank[1].size(), kArrivalChartPoints);
  // 500 steps over 200 points: 2 or 3 steps each, alternating 0 and 2 ms of lag.
  for (double point : a.lag_ms_per_rank[1]) {
    EXPECT_GE(point, 2.0 / 3.0 - 1e-12);
    EXPECT_LE(point, 4.0 / 3.0 + 1e-12);
  }
}

TEST(SummarizeArrivals, ATrailingPartialStepIsLeftOut) {
  std::vector<std::vector<int64_t>> arrival_ns = two_ranks(2, 3, kMs);
  for (auto& rank : arrival_ns) rank.pop_back();
  std::vector<std::string> warnings;
  const ArrivalSummary a = summarize_arrivals(arrival_ns, 3, warnings);
  EXPECT_EQ(a.steps, 1);
  EXPECT_EQ(a.collectives, 3);
  EXPECT_EQ(a.lag_ms_per_rank[1].size(), 1u);
}

TEST(SummarizeArrivals, RanksThatDisagreeOnTheCollectivesAreNotComparedAndTheWarningSaysSo) {
  std::vector<std::vector<int64_t>> arrival_ns = two_ranks(3, 1, kMs);
  arrival_ns[1].pop_back();
  std::vector<std::string> warnings;
  const ArrivalSummary a = summarize_arrivals(arrival_ns, 1, warnings);
  EXPECT_EQ(a.collectives, 0);
  EXPECT_TRUE(a.per_rank.empty());
  EXPECT_FALSE(a.straggler);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "the ranks recorded different numbers of gradient collectives (3, 2): their arrivals are not compared");
}

TEST(SummarizeArrivals, OneRankHasNothingToCompare) {
  std::vector<std::string> warnings;
  const std::vector<std::vector<int64_t>> one = {{1, 2, 3}};
  const ArrivalSummary a = summarize_arrivals(one, 1, warnings);
  EXPECT_EQ(a.collectives, 0);
  EXPECT_TRUE(a.per_rank.empty());
  EXPECT_TRUE(a.lag_ms_per_rank.empty());
  EXPECT_TRUE(warnings.empty());
}

}  // namespace
}  // namespace ddp
