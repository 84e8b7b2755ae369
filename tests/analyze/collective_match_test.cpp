// Matching collectives across ranks without comparing their clocks.
#include "analyze/collective_match.h"

#include <gtest/gtest.h>

namespace ddp {
namespace {

RankSteps rank_with(const std::vector<int64_t>& durations_us, const std::string& name = "gloo:all_reduce") {
  RankSteps r;
  r.steps.resize(durations_us.size());
  for (std::size_t i = 0; i < durations_us.size(); ++i) {
    // Each rank's own clock: rank-specific offsets must not matter.
    r.collectives.push_back({name, "", 4096, static_cast<int64_t>(i) * 1000000 + 777, durations_us[i] * 1000, i});
  }
  return r;
}

TEST(CollectiveMatch, TheRankThatWaitsLeastIsTheOneTheOthersWaitFor) {
  // Rank 1 arrives late: its collectives are short (it barely waits), rank 0's and 2's long.
  const RankSteps r0 = rank_with({900, 1000, 950, 980}), r1 = rank_with({100, 100, 120, 90}),
                  r2 = rank_with({870, 990, 960, 1000});
  const CollectiveMatch m = match_collectives({&r0, &r1, &r2});
  EXPECT_EQ(m.matched, 4);
  EXPECT_EQ(m.steps, 4);
  ASSERT_TRUE(m.straggler.has_value());
  EXPECT_EQ(m.straggler->rank, 1);
  // Transfer: the shortest duration of each collective (100, 100, 120, 90 us): 0.1025 ms per step.
  EXPECT_NEAR(m.transfer_ms_per_step[0], 0.1025, 1e-9);
  EXPECT_NEAR(m.wait_ms_per_step[1], 0.0, 1e-9);
  EXPECT_NEAR(m.wait_ms_per_step[0], (800 + 900 + 830 + 890) / 4.0 / 1000, 1e-9);
  EXPECT_TRUE(m.notes.empty());
}

TEST(CollectiveMatch, BalancedRanksHaveNoStraggler) {
  const RankSteps r0 = rank_with({100, 130, 100, 120}), r1 = rank_with({130, 100, 120, 100});
  EXPECT_FALSE(match_collectives({&r0, &r1}).straggler.has_value());
}

TEST(CollectiveMatch, SaysWhenTheRanksRanDifferentCollectives) {
  const RankSteps r0 = rank_with({100, 100, 100}), r1 = rank_with({100, 100});
  const CollectiveMatch m = match_collectives({&r0, &r1});
  EXPECT_EQ(m.matched, 2);
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_EQ(m.notes[0],
            "rank 0 ran 3 \"gloo:all_reduce\" collectives in the steps analysed and rank 1 ran 2: the first 2 of each "
            "are matched");
}

}  // namespace
}  // namespace ddp
