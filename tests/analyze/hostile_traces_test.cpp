// `ddpscope analyze` on files made to exhaust it: nesting, a long string, steps that overlap or
// repeat, under a memory limit. Each is refused with exit 3 and a message, or read as what it
// is, in bounded memory; none crashes. (Before these limits a 100 KB gzip of nesting and a 300 KB
// gzip holding one string each crashed the reader under a 600 MB limit.)
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/sanitizer_build.h"

namespace ddp {
namespace {

using ::ddp::testing::CommandResult;
using ::ddp::testing::fresh_dir;
using ::ddp::testing::run_command;

// A limit on the address space (KiB), in the release build: the sanitizers reserve terabytes.
CommandResult analyze_within(const std::string& args, const std::filesystem::path& dir, int kib = 600000) {
  const std::string limit = testing::kSanitizerBuild ? "" : fmt::format("ulimit -v {}; ", kib);
  return run_command(limit + DDPSCOPE_BINARY + " analyze " + args, dir);
}

// A gzip file of `head`, `middle` `times` times, then `tail`: gigabytes inflated from a small file.
void write_gzip(const std::filesystem::path& path, const std::string& head, const std::string& middle, int times,
                const std::string& tail) {
  gzFile f = gzopen(path.c_str(), "wb9");
  gzwrite(f, head.data(), static_cast<unsigned>(head.size()));
  for (int i = 0; i < times; ++i) gzwrite(f, middle.data(), static_cast<unsigned>(middle.size()));
  gzwrite(f, tail.data(), static_cast<unsigned>(tail.size()));
  gzclose(f);
}

TEST(HostileTraces, DeepNestingIsRefusedAtADepthLimitNotByMemory) {
  const auto dir = fresh_dir("hostile_deep");
  // 100 MiB of '[': the reader's stack grew 12 bytes a level, 1.2 GB.
  write_gzip(dir / "deep.json.gz", R"({"traceEvents": [)", std::string(1 << 20, '['), 100, "");
  const CommandResult r = analyze_within("deep.json.gz", dir);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.err,
            "ddpscope: error: deep.json.gz: nested more than 64 levels deep at byte 79, which no profiler writes: not "
            "a trace\n");
}

TEST(HostileTraces, AStringOfHundredsOfMegabytesIsRefusedNotHeld) {
  const auto dir = fresh_dir("hostile_string");
  // One name of 300 MiB: the parser held about 5 times a string's size.
  write_gzip(dir / "long.json.gz", R"({"traceEvents": [{"ph": "X", "name": ")", std::string(1 << 20, 'a'), 300,
             R"("}]})");
  const CommandResult r = analyze_within("long.json.gz", dir);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.err,
            "ddpscope: error: long.json.gz: holds a string of more than 10 MiB, which no profiler writes: not a "
            "trace (or a damaged one)\n");
}

std::string step(int number, int64_t ts_us, int64_t dur_us) {
  return fmt::format(
      R"({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 1, "tid": 1, "ts": {}, "dur": {}}})",
      number, ts_us, dur_us);
}
std::string op(const std::string& name, int64_t ts_us, int64_t dur_us, int tid = 1) {
  return fmt::format(R"({{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 1, "tid": {}, "ts": {}, "dur": {}}})", name,
                     tid, ts_us, dur_us);
}

// 3000 steps that all overlap, over 30,000 ops: time and memory grew with steps x ops (1.7 GB).
TEST(HostileTraces, OverlappingStepsAreRefusedNamingThem) {
  const auto dir = fresh_dir("hostile_overlap");
  std::string events;
  for (int i = 0; i < 3000; ++i) events += step(i, i, 100000) + ",";
  for (int i = 0; i < 30000; ++i) events += op("aten::mm", 3 * i, 2) + ",";
  events.pop_back();
  std::ofstream(dir / "overlap.json") << R"({"traceEvents": [)" << events << "]}";
  const CommandResult r = analyze_within("overlap.json", dir);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.err,
            "ddpscope: error: overlap.json: step 1 begins 99.999 ms before step 0 ends (ProfilerStep#N): a rank's "
            "steps follow one another; is the file two traces joined, or two profilers stepped in one process?\n");
}

// A file whose every event appears twice (one trace written into it twice) is read as the trace
// it repeats, and said.
TEST(HostileTraces, AFileWhoseEventsAppearTwiceIsReadOnceAndSaid) {
  const auto dir = fresh_dir("hostile_twice");
  std::string events;
  for (int i = 0; i < 4; ++i) {
    events += step(i, 1000 * i, 1000) + "," + op("aten::mm", 1000 * i + 100, 500) + "," +
              op("gloo:all_reduce", 1000 * i + 700, 200, 2) + ",";
  }
  events.pop_back();
  std::ofstream(dir / "once.json") << R"({"traceEvents": [)" << events << "]}";
  std::ofstream(dir / "twice.json") << R"({"traceEvents": [)" << events << "," << events << "]}";
  const CommandResult once = analyze_within("--json once.json", dir);
  const CommandResult twice = analyze_within("--json twice.json", dir);
  ASSERT_EQ(once.exit_code, 0) << once.err;
  ASSERT_EQ(twice.exit_code, 0) << twice.err;
  const nlohmann::json a = nlohmann::json::parse(once.out), b = nlohmann::json::parse(twice.out);
  EXPECT_EQ(a["ranks"][0]["parts_ms"], b["ranks"][0]["parts_ms"]);
  EXPECT_EQ(a["ranks"][0]["collectives_per_step"], b["ranks"][0]["collectives_per_step"]);
  EXPECT_EQ(b["notes"][2],
            "rank 0: twice.json holds 12 events twice, 4 step markers among them (every field alike, as when one "
            "trace is written into a file twice): each read once");
}

// One step holding more events than any profiler writes in one is refused, not held.
TEST(HostileTraces, AStepOfMoreEventsThanTheLimitIsRefused) {
  const auto dir = fresh_dir("hostile_crowded");
  gzFile f = gzopen((dir / "crowded.json.gz").c_str(), "wb1");
  const std::string head = R"({"traceEvents": [)" + step(0, 0, 10000000);
  gzwrite(f, head.data(), static_cast<unsigned>(head.size()));
  for (int i = 0; i <= (1 << 21); ++i) {
    const std::string event = "," + op("aten::add", 10 + i, 1);
    gzwrite(f, event.data(), static_cast<unsigned>(event.size()));
  }
  gzwrite(f, "]}", 2);
  gzclose(f);
  const CommandResult r = analyze_within("crowded.json.gz", dir);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.err,
            "ddpscope: error: crowded.json.gz: step 0 holds more than 2097152 events, which no profiler writes in one "
            "step\n");
}

}  // namespace
}  // namespace ddp
