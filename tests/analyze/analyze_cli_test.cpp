// `ddpscope analyze` given what is not one job's traces: the exit code and a message naming the
// file and what is wrong, never a crash or numbers.
#include <gtest/gtest.h>
#include <unistd.h>
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

// A job's rank traced for `steps` steps of 100 us, each with one gloo allreduce of 40 us on the
// library's thread; `base_ns` puts its clock on the wall (Kineto's baseTimeNanoseconds).
std::string kineto_steps(int rank, int world, int steps, int64_t base_ns = 0, const std::string& backend = "gloo") {
  std::string events;
  for (int i = 0; i < steps; ++i) {
    events += fmt::format(
        R"({}{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 1, "tid": 1, "ts": {}, "dur": 100}},
    {{"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1, "tid": 2, "ts": {}, "dur": 40,
      "args": {{"In msg nelems": 1000, "dtype": "Float"}}}})",
        i == 0 ? "" : ",\n    ", i + 1, 100 * i, 100 * i + 50);
  }
  return fmt::format(
      R"({{"distributedInfo": {{"backend": "{}", "rank": {}, "world_size": {}}},{} "traceEvents": [
    {}]}})",
      backend, rank, world, base_ns ? fmt::format(R"( "baseTimeNanoseconds": {},)", base_ns) : "", events);
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
  EXPECT_NE(r.out.find("Note: 2 of the job's 3 ranks have traces here: rank 1 is missing and not analysed"),
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

// An output that names a trace being read (or the other output) would replace it: refused, the
// trace kept. A .gz name gets gzip.
TEST(AnalyzeCli, AnOutputNamingATraceReadIsRefusedAndTheTraceKept) {
  const auto dir = fresh_dir("analyze_cli_outputs_over_inputs");
  std::filesystem::create_directories(dir / "traces");
  write(dir / "traces/rank0.json", kineto_steps(0, 2, 4));
  write(dir / "traces/rank1.json", kineto_steps(1, 2, 4));
  const std::string before = ddp::testing::read_text(dir / "traces/rank0.json");
  CommandResult r = analyze("traces --trace traces/rank0.json", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "ddpscope: error: --trace traces/rank0.json: that is a trace being read; name another file to write\n");
  r = analyze("traces --report ./traces/../traces/rank1.json", dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(ddp::testing::read_text(dir / "traces/rank0.json"), before);
  r = analyze("traces --report out.html --trace out.html", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "ddpscope: error: --report and --trace both name out.html: give each its own file\n");
  r = analyze("traces --report ''", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "ddpscope: error: --report needs a path: --report FILE\n");

  r = analyze("traces --trace merged.json.gz", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  gzFile packed = gzopen((dir / "merged.json.gz").c_str(), "rb");
  ASSERT_NE(packed, nullptr);
  EXPECT_EQ(gzdirect(packed), 0) << "gzip, as its name says";
  std::string text(1 << 16, '\0');
  text.resize(static_cast<std::size_t>(gzread(packed, text.data(), static_cast<unsigned>(text.size()))));
  gzclose(packed);
  // 2 x (3 names, 3 steps, 3 collectives), 2 findings (waiting on gloo, and Python between the steps' ops)
  EXPECT_EQ(nlohmann::json::parse(text)["traceEvents"].size(), 20u);
}

// The answer is printed before any output is written: one that cannot be written takes nothing.
TEST(AnalyzeCli, AnOutputThatCannotBeWrittenLeavesTheAnalysisPrinted) {
  const auto dir = fresh_dir("analyze_cli_output_fails");
  write(dir / "rank0.json", kineto_steps(0, 1, 3));
  const CommandResult r = analyze("rank0.json --report no/such/folder/report.html", dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.substr(0, 48), "1 rank of a job of 1 on CPUs over gloo, 2 steps ");
  EXPECT_NE(r.err.find("no/such/folder/report.html"), std::string::npos) << r.err;
}

// Invalid UTF-8 in a path (Linux allows any bytes) is replaced in the JSON, not a failure.
TEST(AnalyzeCli, InvalidUtf8InAPathIsReplacedInTheJson) {
  const auto dir = fresh_dir("analyze_cli_utf8");
  write(dir / "bad\xff.json", kineto_steps(0, 1, 3));
  const CommandResult r = analyze("--json \"$(printf 'bad\\377.json')\"", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["ranks"][0]["path"], "bad\xef\xbf\xbd.json");
}

// In a folder, what is not a trace (a run's summary.json, analyze's own merged trace) is
// skipped and said; named alone, it is refused.
TEST(AnalyzeCli, AFoldersFilesThatAreNoTraceAreSkippedAndSaid) {
  const auto dir = fresh_dir("analyze_cli_skip");
  std::filesystem::create_directories(dir / "run/traces");
  write(dir / "run/traces/rank0.json", kineto_steps(0, 2, 4));
  write(dir / "run/traces/RANK1.JSON.GZ", kineto_steps(1, 2, 4));  // any letter case (not gzip: read as is)
  write(dir / "run/summary.json", R"({"schema": "ddpscope.summary/1", "wall_seconds": 1.5})");
  ASSERT_EQ(analyze("run/traces --trace run/merged.json", dir).exit_code, 0);
  const CommandResult r = analyze("--json run", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json a = nlohmann::json::parse(r.out);
  EXPECT_EQ(a["ranks"].size(), 2u);
  EXPECT_EQ(a["notes"][0],
            "skipped: run/merged.json: ddpscope analyze's merged trace (its --trace), not a job's own: analyze the "
            "traces it was made from");
  EXPECT_EQ(a["notes"][1].get<std::string>().substr(0, 48), "skipped: run/summary.json: not a trace: a JSON o");
  const CommandResult alone = analyze("run/merged.json", dir);
  EXPECT_EQ(alone.exit_code, 3);
}

// Patterns may name folders; a file named twice (another spelling) is read once; a path that
// begins with '-' goes after --; usage errors point at analyze's own help.
TEST(AnalyzeCli, PatternsFoldersSpellingsAndDashes) {
  const auto dir = fresh_dir("analyze_cli_paths");
  std::filesystem::create_directories(dir / "job_a");
  write(dir / "job_a/rank0.json", kineto_steps(0, 2, 4));
  write(dir / "job_a/rank1.json", kineto_steps(1, 2, 4));
  CommandResult r = analyze("'job_*'", dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  write(dir / "-r0.json", kineto_steps(0, 1, 3));
  r = analyze("-r0.json", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "ddpscope: error: -r0.json is not an option of analyze; a path that begins with '-' is written ./-r0.json "
            "(ddpscope analyze ./-r0.json); run 'ddpscope analyze --help'\n");
  r = analyze("./-r0.json", dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 39), "1 rank of a job of 1 on CPUs over gloo,");
  r = analyze("", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "ddpscope: error: analyze needs traces or a command: name files, folders or patterns (ddpscope "
            "analyze traces/), or run your script after -- (ddpscope analyze -- python train.py)\n");
}

// A subfolder that cannot be listed is named, not its parent (run as another user where this is
// root, who may list anything).
TEST(AnalyzeCli, AnUnreadableSubfolderIsNamed) {
  const auto dir = fresh_dir("analyze_cli_unreadable");
  std::filesystem::create_directories(dir / "traces/locked");
  write(dir / "traces/rank0.json", kineto_steps(0, 1, 3));
  std::filesystem::permissions(dir / "traces/locked", std::filesystem::perms::none);
  const std::string as_other = ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  const CommandResult r = run_command(as_other + DDPSCOPE_BINARY + " analyze traces", dir);
  std::filesystem::permissions(dir / "traces/locked", std::filesystem::perms::owner_all);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "ddpscope: error: traces/locked: cannot list it: Permission denied\n");
}

// --rank-map takes one FILE=RANK each time (the paths after it stay paths), matches the file
// however it is spelt, and refuses an entry that names no trace read or a rank beyond the limit.
TEST(AnalyzeCli, RankMapEntriesNameTracesRead) {
  const auto dir = fresh_dir("analyze_cli_rank_map");
  write(dir / "r0.json", kineto_steps(0, 2, 4));
  write(dir / "legacy.json",
        R"([{"name": "ProfilerStep#1", "ph": "X", "ts": 0, "dur": 5, "pid": 1, "tid": 1},
            {"name": "ProfilerStep#2", "ph": "X", "ts": 5, "dur": 5, "pid": 1, "tid": 1}])");
  CommandResult r = analyze("--rank-map ./legacy.json=1 r0.json legacy.json", dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 21), "2 ranks of a job of 2");
  r = analyze("--rank-map other.json=1 r0.json legacy.json", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "ddpscope: error: --rank-map other.json=1: other.json is not one of the traces read\n");
  r = analyze("--rank-map legacy.json=2147483647 r0.json legacy.json", dir);
  EXPECT_EQ(r.exit_code, 2);
  write(dir / "huge.json", kineto_steps(2000000, 2000001, 3));
  r = analyze("huge.json", dir);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "ddpscope: error: huge.json is rank 2000000: ddpscope reads jobs of up to 1048576 ranks\n");
}

// Traces of two jobs, their steps days apart on the wall clock, are refused; ranks that traced
// different numbers of steps are said, and the header says the range.
TEST(AnalyzeCli, TracesOfJobsDaysApartAreRefusedAndUnequalStepCountsSaid) {
  const auto dir = fresh_dir("analyze_cli_apart");
  const int64_t day = 86400LL * 1000000000LL;
  write(dir / "rank0.json", kineto_steps(0, 2, 8, 1790000000LL * 1000000000LL));
  write(dir / "rank1.json", kineto_steps(1, 2, 20, 1790000000LL * 1000000000LL + 3 * day));
  CommandResult r = analyze("rank0.json rank1.json", dir);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err,
            "ddpscope: error: rank0.json traced steps from 2026-09-21 14:13 UTC and rank1.json from 2026-09-24 14:13 "
            "UTC, 72 hours apart: the traces are of different jobs\n");
  write(dir / "rank1.json", kineto_steps(1, 2, 20, 1790000000LL * 1000000000LL));
  r = analyze("rank0.json rank1.json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 63), "2 ranks of a job of 2 on CPUs over gloo, 7 to 19 steps each (Pr");
  EXPECT_NE(r.out.find("Note: the ranks traced different numbers of steps (7 to 19)"), std::string::npos) << r.out;
}

// --scaling-from: a whole job of the same training at another device count.
TEST(AnalyzeCli, AScalingPointMustBeAnotherWholeJobOfTheSameTraining) {
  const auto dir = fresh_dir("analyze_cli_scaling");
  for (const char* job : {"two", "nccl", "one"}) std::filesystem::create_directories(dir / job);
  write(dir / "two/rank0.json", kineto_steps(0, 2, 5));
  write(dir / "two/rank1.json", kineto_steps(1, 2, 5));
  write(dir / "nccl/rank0.json", kineto_steps(0, 2, 5, 0, "nccl"));
  write(dir / "nccl/rank1.json", kineto_steps(1, 2, 5, 0, "nccl"));
  write(dir / "one/rank0.json", kineto_steps(0, 1, 5));
  CommandResult r = analyze("two --scaling-from two/rank1.json", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "ddpscope: error: --scaling-from two/rank1.json: two/rank1.json is among the traces analysed; give the "
            "same training traced at another device count\n");
  std::filesystem::copy(dir / "two/rank1.json", dir / "rank1_copy.json");
  r = analyze("two --scaling-from rank1_copy.json", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "ddpscope: error: --scaling-from rank1_copy.json: 1 of its job's 2 ranks have traces there; a scaling "
            "point needs every rank's trace (its step is the slowest rank's)\n");
  r = analyze("two --scaling-from nccl", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "ddpscope: error: --scaling-from nccl: its collectives ran over nccl, the traces analysed ran over gloo: "
            "not the same training at another device count\n");
  r = analyze("two --scaling-from one", dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fitted across the traced jobs at 1, 2 devices"), std::string::npos) << r.out;
}

// One rank of a 300-rank job: the what-if's traced point is 300 devices, not the one file read.
TEST(AnalyzeCli, OneRankOfALargeJobIsPredictedAtTheJobsWorldSize) {
  const auto dir = fresh_dir("analyze_cli_one_of_many");
  const CommandResult r = analyze("--json '" + std::string(DDPSCOPE_SOURCE_DIR) +
                                      "/tests/analyze/fixtures/cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz'",
                                  dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json a = nlohmann::json::parse(r.out);
  ASSERT_FALSE(a["predictions"].empty()) << a.dump(2);
  bool at_world = false;
  for (const nlohmann::json& row : a["predictions"]) {
    EXPECT_EQ(row["per"], "step");
    at_world |= row["devices"] == 300;
  }
  EXPECT_TRUE(at_world) << a["predictions"].dump(2);
  // One step traced: no spread, so no band, said.
  EXPECT_TRUE(a["predictions"][0]["band"].is_null());
}

// What a trace cannot price is said: a job of one device gets no advice about devices, a job
// whose traces hold no collective and one whose steps have no length get no what-if.
TEST(AnalyzeCli, NoAdviceOrPredictionTheTracesCannotSupport) {
  const auto dir = fresh_dir("analyze_cli_unsupported");
  write(dir / "single.json", kineto_steps(0, 1, 4));  // 40 % of each step waiting on gloo
  CommandResult r = analyze("single.json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("Communication not hidden"), std::string::npos) << r.out;
  for (int rank : {0, 1}) {
    write(dir / fmt::format("rank{}.json", rank),
          fmt::format(R"({{"distributedInfo": {{"rank": {}, "world_size": 2}}, "traceEvents": [
             {{"ph": "X", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100}},
             {{"ph": "X", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 100, "dur": 100}}]}})",
                      rank));
  }
  r = analyze("rank0.json rank1.json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("No prediction for other devices: the 2 ranks' traces hold no collective"), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace ddp
