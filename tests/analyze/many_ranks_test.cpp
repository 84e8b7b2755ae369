// A job of many ranks, made from the 2-rank torch 2 fixture (rank 1 sleeps 20 ms in forward):
// read in parallel, answered in one screen (the ranks that matter, the spread, one note for all
// the ranks it is true of, the missing ranks as runs), every rank kept in --json, and the
// report's rows and charts the ranks that matter plus one chart of every rank.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "support/run_command.h"

namespace ddp {
namespace {

namespace fs = std::filesystem;
using ::ddp::testing::fresh_dir;
using ::ddp::testing::read_text;
using ::ddp::testing::run_command;

// A fixture rank's trace as a rank of a job of `world`: its rank left to its file's name.
std::string as_rank_of_world(const std::string& fixture, int world) {
  gzFile f = gzopen(
      (fs::path(DDPSCOPE_SOURCE_DIR) / "tests/analyze/fixtures/torch2_gloo_slow_forward" / fixture).c_str(), "rb");
  std::string text;
  char buffer[1 << 16];
  for (int got; (got = gzread(f, buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(got));
  gzclose(f);
  nlohmann::json trace = nlohmann::json::parse(text);
  trace["distributedInfo"].erase("rank");
  trace["distributedInfo"]["world_size"] = world;
  return trace.dump();
}

TEST(ManyRanks, AJobOfAHundredRanksIsOneScreenWithItsStragglerNamedAndEveryRankInItsJson) {
  const auto dir = fresh_dir("many_ranks");
  constexpr int kWorld = 100;
  const std::set<int> missing = {10, 11, 50, 99};
  std::ofstream(dir / "normal.json") << as_rank_of_world("rank0.pt.trace.json.gz", kWorld);
  std::ofstream(dir / "slow.json") << as_rank_of_world("rank1.pt.trace.json.gz", kWorld);
  fs::create_directories(dir / "job");
  for (int r = 0; r < kWorld; ++r) {
    if (missing.contains(r)) continue;
    fs::create_hard_link(dir / (r == 37 ? "slow.json" : "normal.json"),
                         dir / "job" / ("rank" + std::to_string(r) + ".pt.trace.json"));
  }
  const std::string analyze = std::string(DDPSCOPE_BINARY) + " analyze job";
  const auto r = run_command(analyze + " --report report.html", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("96 ranks of a job of 100"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Straggler: rank 37."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("   37 "), std::string::npos) << "the straggler's row";
  EXPECT_NE(r.out.find("waited for\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Step over all 96 ranks: min "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ranks 10-11, 50, 99 are missing and not analysed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Note: ranks 0-9, 12-49, 51-98: "), std::string::npos) << "one note for every rank";
  EXPECT_LT(std::count(r.out.begin(), r.out.end(), '\n'), 45) << r.out;

  const std::string report = read_text(dir / "report.html");
  EXPECT_NE(report.find("id=\"rank-chart\""), std::string::npos);
  std::size_t rows = 0;
  for (std::size_t at = report.find("<tr"); at != std::string::npos; at = report.find("<tr", at + 1)) ++rows;
  EXPECT_LT(rows, 60U) << "the ranks that matter, not a row per rank";
  const std::size_t chart = report.find("id=\"rank-chart\"");
  const std::string rank_chart = report.substr(chart, report.find("</figure>", chart) - chart);
  std::size_t points = 0;
  for (std::size_t at = rank_chart.find("<circle"); at != std::string::npos; at = rank_chart.find("<circle", at + 1))
    ++points;
  EXPECT_EQ(points, 96U) << "every rank in the rank chart";

  const auto json = run_command(analyze + " --json", dir);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["ranks"].size(), 96U);
}

}  // namespace
}  // namespace ddp
