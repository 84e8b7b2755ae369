// --profiler trace and the phase accounting through the command line, on 1, 2 and 3 ranks.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "support/run_command.h"

namespace ddp {
namespace {

using testing::fresh_dir;
using testing::read_text;
using testing::run_command;

class TraceAcrossRanks : public ::testing::TestWithParam<int> {};

TEST_P(TraceAcrossRanks, PhasesSumToWallOnEveryRankAndTheTraceShowsEveryRank) {
  const int devices = GetParam();
  const auto dir = fresh_dir("trace_" + std::to_string(devices));
  const auto r = run_command(std::string(DDPSCOPE_BINARY) + " train --devices " + std::to_string(devices) +
                                 " --data teacher --dataset-size 600 --batch-size 32 --hidden-size 32"
                                 " --accumulate-grad-batches 2 --max-epochs 3 --bucket-cap-mb 0.004"
                                 " --loader-workers 1 --profiler trace --progress-bar off",
                             dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Profiler report"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Throughput:"), std::string::npos) << r.out;
  const auto run = dir / "ddpscope_logs/version_0";
  const auto summary = nlohmann::json::parse(read_text(run / "summary.json"));
  const double wall = summary["wall_seconds"];
  ASSERT_EQ(summary["phases_per_rank"].size(), static_cast<std::size_t>(devices));
  for (const auto& rank : summary["phases_per_rank"]) {
    double sum = 0;
    for (const auto& [phase, seconds] : rank.items()) sum += seconds.get<double>();
    EXPECT_NEAR(sum, wall, 0.02 * wall);
  }
  EXPECT_GT(summary["throughput"]["model_flops_per_second"].get<double>(), 0);
  EXPECT_GT(summary["throughput"]["flop_share_of_peak"].get<double>(), 0);

  const auto trace = nlohmann::json::parse(read_text(run / "trace.json"));
  std::set<int> named;
  std::map<int, int> allreduces;
  std::set<std::string> kinds;
  std::map<int, int> loader_fills;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["tid"] == 2) ++loader_fills[e["pid"].get<int>()];
    if (e["ph"] == "M" && e["name"] == "process_name") named.insert(e["pid"].get<int>());
    if (e["ph"] == "X") kinds.insert(e["name"].get<std::string>());
    if (e["ph"] == "X" && e["name"] == "allreduce") ++allreduces[e["pid"].get<int>()];
  }
  EXPECT_EQ(named.size(), static_cast<std::size_t>(devices));
  for (const char* kind : {"startup", "data", "forward", "backward", "optimizer", "validation"}) {
    EXPECT_TRUE(kinds.count(kind)) << kind;
  }
  for (int rank = 0; rank < devices; ++rank) {
    EXPECT_EQ(allreduces[rank], summary["allreduce_per_rank"][rank]["calls"].get<int>()) << rank;
    EXPECT_GT(loader_fills[rank], 0) << "rank " << rank << ": no batch fills on the loader thread's track";
  }
  if (devices > 1) {
    EXPECT_TRUE(kinds.count("comm_wait"));
    EXPECT_GT(allreduces[0], 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, TraceAcrossRanks, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace ddp
