#include "observe/profiler_table.h"

#include <gtest/gtest.h>

namespace ddp {
namespace {

RankPhases phases(double forward, double backward, int64_t steps) {
  RankPhases r;
  r.seconds[static_cast<std::size_t>(Phase::kForward)] = forward;
  r.seconds[static_cast<std::size_t>(Phase::kBackward)] = backward;
  r.calls[static_cast<std::size_t>(Phase::kForward)] = steps;
  r.calls[static_cast<std::size_t>(Phase::kBackward)] = steps;
  return r;
}

TEST(ProfilerTable, OneRankListsPhasesByTotalWithMeanCallsAndShare) {
  const std::string table = profiler_table({phases(1.0, 3.0, 100)}, 5.0);
  EXPECT_NE(table.find("Action      |  Mean (ms) |    Calls |  Total (s) |      %"), std::string::npos) << table;
  EXPECT_NE(table.find("backward    |     30.000 |      100 |      3.000 |   60.0"), std::string::npos) << table;
  EXPECT_NE(table.find("forward     |     10.000 |      100 |      1.000 |   20.0"), std::string::npos) << table;
  EXPECT_LT(table.find("backward"), table.find("forward"));  // largest first
  EXPECT_EQ(table.find("straggler"), std::string::npos);     // no cross-rank columns for one rank
  EXPECT_EQ(table.find("comm_wait"), std::string::npos);     // phases without time are left out
}

TEST(ProfilerTable, NamesTheSlowestRankOnlyBeyondTenPercent) {
  const std::string table = profiler_table({phases(1.0, 2.0, 10), phases(1.25, 2.1, 10)}, 4.0);
  EXPECT_NE(table.find("min (s) |   max (s) | straggler"), std::string::npos) << table;
  const auto forward = table.substr(table.find("forward"));
  EXPECT_NE(forward.substr(0, forward.find('\n')).find("rank 1 (+25 % over the fastest)"), std::string::npos) << table;
  const auto backward = table.substr(table.find("backward"));
  EXPECT_EQ(backward.substr(0, backward.find('\n')).find("rank"), std::string::npos) << table;  // 5 %: not named
}

TEST(ProfilerTable, NamesTheStragglersHostWhenRanksRunOnSeveralHosts) {
  RankPhases fast = phases(1.0, 2.0, 10), slow = phases(1.5, 2.0, 10);
  fast.host = "node1";
  slow.host = "node2";
  const std::string table = profiler_table({fast, slow}, 4.0);
  EXPECT_NE(table.find("Profiler report (2 ranks on 2 hosts, wall 4.000 s"), std::string::npos) << table;
  EXPECT_NE(table.find("rank 1 on node2 (+50 % over the fastest)"), std::string::npos) << table;
  slow.host = "node1";  // one host: its name adds nothing
  EXPECT_NE(profiler_table({fast, slow}, 4.0).find("| rank 1 (+50 %"), std::string::npos);
}

}  // namespace
}  // namespace ddp
