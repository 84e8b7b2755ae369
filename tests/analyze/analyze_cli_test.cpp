// `ddpscope analyze` given what is not one job's traces: the exit code and a message naming the
// file and what is wrong, never a crash or numbers.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "support/run_command.h"

namespace ddp {
namespace {

using ::ddp::testing::CommandResult;
using ::ddp::testing::fresh_dir;
using ::ddp::testing::run_command;

std::string kineto(int rank, int world, const std::string& backend = "gloo") {
  return R"({"distributedInfo": {"backend": ")" + backend + R"(", "rank": )" + std::to_string(rank) +
         R"(, "world_size": )" + std::to_string(world) + R"(}, "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1, "tid": 2, "ts": 50, "dur": 40}]})";
}

void write(const std::filesystem::path& path, const std::string& text) { std::ofstream(path) << text; }

CommandResult analyze(const std::string& args, const std::filesystem::path& dir) {
  return run_command(std::string(DDPSCOPE_BINARY) + " analyze " + args, dir);
}

TEST(AnalyzeCli, ReadsOneJobsTracesFromAFolderAndSaysWhichRanksAreMissing) {
  const auto dir = fresh_dir("analyze_cli_ok");
  std::filesystem::create_directories(dir / "traces");
  write(dir / "traces/a.json", kineto(0, 3));
  write(dir / "traces/b.json", kineto(2, 3));
  const CommandResult r = analyze("traces", dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2 ranks of a job of 3 on CPUs over gloo, 1 step each (ProfilerStep#N)."), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("- 2 of the job's 3 ranks have traces here (ranks 0, 2): the others are not analysed"),
            std::string::npos)
      << r.out;
}

TEST(AnalyzeCli, RefusesWhatIsNotOneJobsTraces) {
  const auto dir = fresh_dir("analyze_cli_bad");
  std::filesystem::create_directories(dir / "empty");
  CommandResult r = analyze("empty", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "ddpscope: error: empty: a folder with no trace in it (no *.json or *.json.gz file)\n");

  r = analyze("nothing*.json", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "ddpscope: error: nothing*.json: no such file, folder or matching file\n");

  write(dir / "zero.json", "");
  r = analyze("zero.json", dir);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "ddpscope: error: zero.json: not valid JSON at byte 0: The document is empty.\n");

  write(dir / "r0.json", kineto(0, 2));
  write(dir / "other.json", kineto(1, 4));
  r = analyze("r0.json other.json", dir);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err,
            "ddpscope: error: other.json is of a job of 4 ranks and r0.json of one of 2: the traces are of different "
            "jobs\n");

  write(dir / "nccl.json", kineto(1, 2, "nccl"));
  r = analyze("r0.json nccl.json", dir);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err,
            "ddpscope: error: nccl.json is of a nccl job and r0.json of a gloo job: the traces are of "
            "different jobs\n");

  write(dir / "again.json", kineto(0, 2));
  r = analyze("r0.json again.json", dir);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err,
            "ddpscope: error: again.json and r0.json are both rank 0: give one trace per rank (--rank-map "
            "FILE=RANK where a name misleads)\n");

  write(dir / "legacy.json", R"([{"name": "ProfilerStep#1", "ph": "X", "ts": 0, "dur": 5, "pid": 1, "tid": 1}])");
  r = analyze("r0.json legacy.json", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "ddpscope: error: legacy.json: its rank is unknown (no distributedInfo in it, no \"rank<N>\" in its "
            "name): give it with --rank-map legacy.json=RANK\n");
  r = analyze("r0.json legacy.json --rank-map legacy.json=1", dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;

  r = analyze("r0.json --rank-map legacy.json", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "ddpscope: error: --rank-map legacy.json: expected FILE=RANK, a trace's path and its rank (0 to "
            "1048575)\n");

  write(dir / "own.json", R"({"otherData": {"producer": "ddpscope 0.1.0"}, "traceEvents": []})");
  r = analyze("own.json", dir);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "ddpscope: error: own.json: ddpscope's trace with no rank's events in it\n");

  write(dir / "nostep.json",
        R"({"traceEvents": [{"ph": "X", "name": "aten::mm", "ts": 0, "dur": 1, "pid": 1, "tid": 1}]})");
  r = analyze("nostep.json", dir);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err.substr(0, 52), "ddpscope: error: nostep.json: no training step in it");
}

TEST(AnalyzeCli, WritesTheReportAndOneTraceOfAllRanksAlignedByTheirCollectives) {
  const auto dir = fresh_dir("analyze_cli_outputs");
  const std::string traces = std::string(DDPSCOPE_SOURCE_DIR) + "/tests/analyze/fixtures/torch2_gloo_slow_forward";
  const CommandResult r = analyze("'" + traces + "' --report 'my report.html' --trace merged.json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = ddp::testing::read_text(dir / "my report.html");
  EXPECT_NE(html.find("ddpscope analyze report"), std::string::npos);
  EXPECT_NE(html.find("Rank 1 holds the others back"), std::string::npos);
  EXPECT_NE(html.find("--report &#39;my report.html&#39;"), std::string::npos) << "the command, quoted";
  // The what-if rows with their bands; the traced count's row beside the measured step.
  const std::size_t table = html.find("<table id=\"predictions\">");
  ASSERT_NE(table, std::string::npos);
  const std::string rows = html.substr(table, html.find("</table>", table) - table);
  EXPECT_NE(rows.find("predicted step"), std::string::npos);
  EXPECT_NE(rows.find("<td class=\"num\">2</td><td>measured</td>"), std::string::npos) << rows;
  EXPECT_NE(rows.find(" ± "), std::string::npos) << rows;

  const nlohmann::json merged = nlohmann::json::parse(ddp::testing::read_text(dir / "merged.json"));
  // 2 x (3 names, 3 steps, 3 collectives), 2 findings (the straggler, and its sleep as Python in the step)
  EXPECT_EQ(merged["traceEvents"].size(), 20u);
}

// ddpscope's own trace.json (every rank in one file) reads like a user's.
TEST(AnalyzeCli, ReadsDdpscopesOwnTraceOfEveryRank) {
  const auto dir = fresh_dir("analyze_cli_own");
  const CommandResult trained = run_command(
      std::string(DDPSCOPE_BINARY) + " train --devices 2 --max-epochs 3 --profiler trace --progress-bar off", dir);
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  const CommandResult r = analyze("--json ddpscope_logs/version_0/trace.json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json a = nlohmann::json::parse(r.out);
  ASSERT_EQ(a["ranks"].size(), 2u);
  EXPECT_EQ(a["ranks"][1]["rank"], 1);
  EXPECT_EQ(a["ranks"][0]["step_source"], "optimizer steps");
  EXPECT_GT(a["ranks"][0]["steps"].get<int>(), 10);
  EXPECT_EQ(a["collectives"]["matched"], a["collectives"]["steps"]);  // one gradient allreduce per step
}

// Two ranks whose clocks differ by 5 s (as the legacy format's per-process time zero can): the
// merged trace puts their collectives' ends together.
TEST(AnalyzeCli, TheMergedTraceAlignsRanksWhoseClocksDiffer) {
  const auto dir = fresh_dir("analyze_cli_align");
  for (int rank : {0, 1}) {
    const int64_t zero = rank == 0 ? 0 : 5000000;  // us
    const int64_t late = rank == 1 ? 0 : 30;       // rank 0 waits 30 us longer: rank 1 arrives late
    std::string events;
    for (int step = 1; step <= 4; ++step) {
      const int64_t at = zero + step * 1000;
      events +=
          (step > 1 ? "," : "") +
          fmt::format(
              R"({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 1, "tid": 1, "ts": {}, "dur": 1000}},)"
              R"({{"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1, "tid": 2, "ts": {}, "dur": {}}})",
              step, at, at + 900 - late - 40, 40 + late);
    }
    write(dir / fmt::format("rank{}.json", rank), R"({"traceEvents": [)" + events + "]}");
  }
  const CommandResult r = analyze("rank0.json rank1.json --trace merged.json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json merged = nlohmann::json::parse(ddp::testing::read_text(dir / "merged.json"));
  std::map<int, std::vector<double>> ends;
  for (const nlohmann::json& e : merged["traceEvents"]) {
    if (e.value("cat", "") == "collective")
      ends[e["pid"].get<int>()].push_back(e["ts"].get<double>() + e["dur"].get<double>());
  }
  ASSERT_EQ(ends[0].size(), 3u);  // the first step dropped as warm-up
  ASSERT_EQ(ends[1].size(), 3u);
  for (std::size_t c = 0; c < 3; ++c) EXPECT_NEAR(ends[0][c], ends[1][c], 1e-6);
}

}  // namespace
}  // namespace ddp
