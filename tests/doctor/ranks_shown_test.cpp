// Which ranks a large job's text and report show, and how the rest is summarised.
#include "doctor/ranks_shown.h"

#include <gtest/gtest.h>

#include <vector>

namespace ddp {
namespace {

std::vector<std::size_t> indices(const std::vector<ShownRank>& shown) {
  std::vector<std::size_t> out;
  for (const ShownRank& s : shown) out.push_back(s.index);
  return out;
}

TEST(RanksShown, ASmallJobShowsEveryRankWithoutReasons) {
  const std::vector<ShownRank> shown = ranks_to_show({3, 1, 2}, {}, std::nullopt);
  EXPECT_EQ(indices(shown), (std::vector<std::size_t>{0, 1, 2}));
  for (const ShownRank& s : shown) EXPECT_EQ(s.why, "");
}

TEST(RanksShown, ALargeJobShowsTheRanksThatMatterByRankEachWithItsReason) {
  std::vector<double> step(100, 10.0), wait(100, 5.0);
  step[7] = 14, step[50] = 13, step[90] = 12, step[3] = 8;  // the three slowest, the fastest
  wait[42] = 9;                                             // waits most
  const std::vector<ShownRank> shown = ranks_to_show(step, wait, std::size_t{61});
  EXPECT_EQ(indices(shown), (std::vector<std::size_t>{3, 7, 42, 50, 61, 90}));
  EXPECT_EQ(shown[0].why, "fastest");
  EXPECT_EQ(shown[1].why, "slowest");
  EXPECT_EQ(shown[2].why, "waits most");
  EXPECT_EQ(shown[4].why, "waited for");
  // The one waited for among the slowest is said once, as waited for.
  EXPECT_EQ(indices(ranks_to_show(step, wait, std::size_t{7})), (std::vector<std::size_t>{3, 7, 42, 50, 90}));
}

TEST(RanksShown, RanksAreWrittenAsRunsAndTheSpreadByItsQuantiles) {
  EXPECT_EQ(rank_runs({3}, true), "rank 3");
  EXPECT_EQ(rank_runs({0, 1, 2, 5, 7, 8}, true), "ranks 0-2, 5, 7-8");
  EXPECT_EQ(rank_runs({4, 9}), "4, 9");
  std::vector<double> values;
  for (int i = 1; i <= 11; ++i) values.push_back(i);
  const Spread s = spread_of(values);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.median, 6);
  EXPECT_EQ(s.p90, 10);
  EXPECT_EQ(s.max, 11);
  EXPECT_EQ(spread_text(s, " ms"), "min 1.000 ms, median 6.000 ms, 90th percentile 10.000 ms, max 11.000 ms");
}

}  // namespace
}  // namespace ddp
