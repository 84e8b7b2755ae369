#include "observe/arrival_lag.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace ddp {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSteps = 4;
constexpr int64_t kPerStep = 2;  // collectives per step (two buckets)
constexpr int64_t kCollectives = kSteps * kPerStep;

// Arrivals of `world` ranks at kCollectives collectives 10 ms apart, each rank delayed by
// late(rank, collective) ns.
template <class Late>
std::vector<std::vector<int64_t>> arrivals(int world, Late late) {
  std::vector<std::vector<int64_t>> a(world);
  for (int r = 0; r < world; ++r) {
    for (int64_t c = 0; c < kCollectives; ++c) a[r].push_back(1'000 * kMs + 10 * kMs * c + late(r, c));
  }
  return a;
}

TEST(ArrivalLagTest, ARankAlways2msLateIsNamedWithItsCost) {
  const auto a = arrivals(3, [](int r, int64_t) { return r == 1 ? 2 * kMs : 0; });
  const ArrivalLags lags = arrival_lags(a);
  for (int64_t c = 0; c < kCollectives; ++c) {
    EXPECT_EQ(lags.last_rank[c], 1);
    EXPECT_EQ(lags.spread_ns[c], 2 * kMs);
  }
  EXPECT_EQ(lags.ranks[1].times_last, kCollectives);
  EXPECT_EQ(lags.ranks[1].lag_ns, kCollectives * 2 * kMs);
  EXPECT_EQ(lags.ranks[1].wait_ns, 0);
  EXPECT_EQ(lags.ranks[1].caused_wait_ns, kCollectives * 2 * 2 * kMs);  // two ranks wait 2 ms each
  for (const int r : {0, 2}) {
    EXPECT_EQ(lags.ranks[r].times_last, 0);
    EXPECT_EQ(lags.ranks[r].lag_ns, 0);
    EXPECT_EQ(lags.ranks[r].wait_ns, kCollectives * 2 * kMs);
    EXPECT_EQ(lags.ranks[r].caused_wait_ns, 0);
  }

  const auto straggler = find_straggler(lags, kSteps);
  ASSERT_TRUE(straggler.has_value());
  EXPECT_EQ(straggler->rank, 1);
  EXPECT_DOUBLE_EQ(straggler->last_share, 1.0);
  EXPECT_DOUBLE_EQ(straggler->late_seconds, 0.002);
  EXPECT_DOUBLE_EQ(straggler->cost_seconds_per_step, kPerStep * 2 * 0.002);  // 8 ms
}

TEST(ArrivalLagTest, JitterDoesNotHideAConsistentStraggler) {
  // Ranks arrive within 0..0.3 ms of each other by a fixed pattern; rank 2 adds 2 ms.
  const auto a = arrivals(3, [](int r, int64_t c) {
    const int64_t jitter = (r * 7 + c * 3) % 4 * kMs / 10;
    return jitter + (r == 2 ? 2 * kMs : 0);
  });
  const auto straggler = find_straggler(arrival_lags(a), kSteps);
  ASSERT_TRUE(straggler.has_value());
  EXPECT_EQ(straggler->rank, 2);
  EXPECT_DOUBLE_EQ(straggler->last_share, 1.0);
  EXPECT_NEAR(straggler->late_seconds, 0.002, 0.0003);
  EXPECT_NEAR(straggler->cost_seconds_per_step, kPerStep * 2 * 0.002, kPerStep * 2 * 0.0003);
}

TEST(ArrivalLagTest, EqualArrivalsNameNoStraggler) {
  const ArrivalLags lags = arrival_lags(arrivals(3, [](int, int64_t) { return 0; }));
  for (int64_t c = 0; c < kCollectives; ++c) {
    EXPECT_EQ(lags.last_rank[c], -1);
    EXPECT_EQ(lags.spread_ns[c], 0);
  }
  for (const RankArrival& rank : lags.ranks) {
    EXPECT_EQ(rank.times_last, 0);
    EXPECT_EQ(rank.lag_ns, 0);
    EXPECT_EQ(rank.wait_ns, 0);
    EXPECT_EQ(rank.caused_wait_ns, 0);
  }
  EXPECT_FALSE(find_straggler(lags, kSteps).has_value());
}

TEST(ArrivalLagTest, TwoRanksLateTogetherAreNotOneStraggler) {
  const ArrivalLags lags = arrival_lags(arrivals(3, [](int r, int64_t) { return r == 0 ? 0 : 2 * kMs; }));
  EXPECT_EQ(lags.last_rank[0], -1);
  EXPECT_EQ(lags.ranks[0].wait_ns, kCollectives * 2 * kMs);
  EXPECT_EQ(lags.ranks[1].lag_ns, kCollectives * 2 * kMs);
  EXPECT_FALSE(find_straggler(lags, kSteps).has_value());
}

TEST(ArrivalLagTest, AStragglerThatAlternatesIsNoOneRank) {
  // Rank 0 is 2 ms late at even collectives, rank 1 at odd ones: the lateness is shared.
  const auto a = arrivals(2, [](int r, int64_t c) { return c % 2 == r ? 2 * kMs : 0; });
  const ArrivalLags lags = arrival_lags(a);
  for (int64_t c = 0; c < kCollectives; ++c) EXPECT_EQ(lags.last_rank[c], c % 2);
  for (const RankArrival& rank : lags.ranks) {
    EXPECT_EQ(rank.times_last, kCollectives / 2);
    EXPECT_EQ(rank.caused_wait_ns, kCollectives / 2 * 2 * kMs);
    EXPECT_EQ(rank.wait_ns, kCollectives / 2 * 2 * kMs);
  }
  EXPECT_FALSE(find_straggler(lags, kSteps).has_value());
}

TEST(ArrivalLagTest, AMostlyLateRankIsNamedWithTheCostOfItsOwnLateness) {
  // Rank 2 is 3 ms late at 6 of 8 collectives; rank 0 is 1 ms late at the other two.
  const auto a = arrivals(3, [](int r, int64_t c) {
    if (c % 4 == 3) return r == 0 ? kMs : 0;
    return r == 2 ? 3 * kMs : 0;
  });
  const ArrivalLags lags = arrival_lags(a);
  EXPECT_EQ(lags.ranks[0].times_last, 2);
  EXPECT_EQ(lags.ranks[0].caused_wait_ns, 2 * 2 * kMs);
  const auto straggler = find_straggler(lags, kSteps);
  ASSERT_TRUE(straggler.has_value());
  EXPECT_EQ(straggler->rank, 2);
  EXPECT_DOUBLE_EQ(straggler->last_share, 0.75);
  EXPECT_DOUBLE_EQ(straggler->late_seconds, 0.003);
  EXPECT_DOUBLE_EQ(straggler->cost_seconds_per_step, 6 * 2 * 0.003 / kSteps);
}

TEST(ArrivalLagTest, OneStepsSliceGivesThatStepsLags) {
  // The report's per-step chart: arrival_lags over one step's collectives.
  const auto a = arrivals(2, [](int r, int64_t c) { return r == 1 ? c * kMs : 0; });
  for (int64_t step = 0; step < kSteps; ++step) {
    std::vector<std::vector<int64_t>> slice(2);
    for (int r = 0; r < 2; ++r) slice[r].assign(a[r].begin() + step * kPerStep, a[r].begin() + (step + 1) * kPerStep);
    const ArrivalLags lags = arrival_lags(slice);
    EXPECT_EQ(lags.ranks[1].lag_ns, (2 * step * kPerStep + 1) * kMs);  // collectives 2s and 2s+1
    EXPECT_EQ(lags.ranks[0].lag_ns, 0);
  }
}

TEST(ArrivalLagTest, OneRankHasNoStraggler) {
  const ArrivalLags lags = arrival_lags(arrivals(1, [](int, int64_t) { return 0; }));
  EXPECT_EQ(lags.ranks[0].times_last, 0);
  EXPECT_EQ(lags.last_rank[0], -1);
  EXPECT_FALSE(find_straggler(lags, kSteps).has_value());
}

TEST(ArrivalLagTest, MalformedArrivalsAreOurBug) {
  const std::vector<std::vector<int64_t>> none, ragged{{1, 2}, {1}};
  EXPECT_DEATH(arrival_lags(none), "no rank");
  EXPECT_DEATH(arrival_lags(ragged), "different numbers of collectives");
  EXPECT_DEATH(find_straggler(arrival_lags(arrivals(2, [](int, int64_t) { return 0; })), 0), "no step");
}

}  // namespace
}  // namespace ddp
