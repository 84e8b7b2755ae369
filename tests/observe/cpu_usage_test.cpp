#include "observe/cpu_usage.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace ddp {
namespace {

// Shaped like a real /proc/stat: the aggregate line, per-core lines, then other counters.
constexpr std::string_view kProcStat =
    "cpu  100 0 50 800 50 0 0 0 0 0\n"
    "cpu0 60 0 30 400 10 0 0 0 0 0\n"
    "cpu1 40 0 20 400 40 0 0 0 0 0\n"
    "intr 12345 0 0 7\n"
    "ctxt 999\n"
    "btime 1700000000\n";

TEST(ParseProcStatTest, SumsTheRequestedCores) {
  const std::vector<int> core0{0}, core1{1}, both{0, 1};
  const auto a = parse_proc_stat(kProcStat, core0);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->total, 500u);
  EXPECT_EQ(a->busy, 90u);  // 500 minus idle 400 and iowait 10
  const auto b = parse_proc_stat(kProcStat, core1);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->total, 500u);
  EXPECT_EQ(b->busy, 60u);
  const auto sum = parse_proc_stat(kProcStat, both);
  ASSERT_TRUE(sum.has_value());
  EXPECT_EQ(sum->total, 1000u);
  EXPECT_EQ(sum->busy, 150u);
}

TEST(ParseProcStatTest, LeavesGuestTimeOutBecauseUserAlreadyCountsIt) {
  // user nice system idle iowait irq softirq steal guest guest_nice
  const std::vector<int> core0{0};
  const auto j = parse_proc_stat("cpu0 10 2 3 80 5 0 0 1 7 1\n", core0);
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->total, 101u);
  EXPECT_EQ(j->busy, 16u);
}

TEST(ParseProcStatTest, AcceptsOldKernelsWithFourFields) {
  const std::vector<int> core0{0};
  const auto j = parse_proc_stat("cpu0 10 0 5 85", core0);  // no iowait, no final newline
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->total, 100u);
  EXPECT_EQ(j->busy, 15u);
}

TEST(ParseProcStatTest, MatchesWholeCoreNumbers) {
  const std::vector<int> core1{1};
  const auto j = parse_proc_stat("cpu 9 9 9 9\ncpu10 7 0 0 3\ncpu1 1 0 0 9\n", core1);
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->total, 10u);
  EXPECT_EQ(j->busy, 1u);
}

TEST(ParseProcStatTest, RejectsMissingCoresAndMalformedLines) {
  const std::vector<int> core0{0}, core7{7}, none{};
  EXPECT_FALSE(parse_proc_stat(kProcStat, core7).has_value());
  EXPECT_FALSE(parse_proc_stat(kProcStat, none).has_value());
  EXPECT_FALSE(parse_proc_stat("", core0).has_value());
  EXPECT_FALSE(parse_proc_stat("cpu0 10 x 5 85\n", core0).has_value());
  EXPECT_FALSE(parse_proc_stat("cpu0 10 20 30\n", core0).has_value());
  EXPECT_FALSE(parse_proc_stat("cpu0 10 20 30 40 -5\n", core0).has_value());
  EXPECT_FALSE(parse_proc_stat("cpu 1 2 3 4\n", core0).has_value());  // the aggregate is not core 0
}

TEST(BusyPercentTest, IsTheBusyShareOfTheElapsedJiffies) {
  const auto p = busy_percent({.busy = 90, .total = 500}, {.busy = 140, .total = 600});
  ASSERT_TRUE(p.has_value());
  EXPECT_DOUBLE_EQ(*p, 50.0);
  EXPECT_DOUBLE_EQ(*busy_percent({0, 0}, {0, 10}), 0.0);
  EXPECT_DOUBLE_EQ(*busy_percent({0, 0}, {10, 10}), 100.0);
  EXPECT_DOUBLE_EQ(*busy_percent({0, 0}, {20, 10}), 100.0);  // clamped
}

TEST(BusyPercentTest, SaysNothingWithoutAnElapsedJiffyOrWhenCountersGoBack) {
  EXPECT_FALSE(busy_percent({5, 100}, {5, 100}).has_value());
  EXPECT_FALSE(busy_percent({5, 100}, {6, 90}).has_value());
  EXPECT_FALSE(busy_percent({5, 100}, {4, 110}).has_value());
}

TEST(ParseProcPidStatTest, FindsUtimeAndStimeAfterAnyCommand) {
  // The command name may hold spaces and parentheses; utime and stime are fields 14 and 15.
  EXPECT_EQ(parse_proc_pid_stat_ticks("1234 (my (odd) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 37 5 0 0 20 0 "
                                      "1 0 12345 1000 50\n"),
            42u);
  EXPECT_EQ(parse_proc_pid_stat_ticks("1 (init) S 0 1 1 0 -1 4194560 1 2 3 4 1000 2000 0 0"), 3000u);
}

TEST(ParseProcPidStatTest, RejectsTruncatedOrMalformedText) {
  EXPECT_FALSE(parse_proc_pid_stat_ticks("").has_value());
  EXPECT_FALSE(parse_proc_pid_stat_ticks("1234 no parenthesis S 1").has_value());
  EXPECT_FALSE(parse_proc_pid_stat_ticks("1234 (x) S 1 1234 1234 0 -1 4194560 100 0 0 0 37").has_value());
  EXPECT_FALSE(parse_proc_pid_stat_ticks("1234 (x) S 1 1234 1234 0 -1 4194560 100 0 0 0 a7 5").has_value());
}

TEST(ProcReadersTest, ReadThisMachine) {
  const std::vector<int> cores = affinity_cores();
  ASSERT_FALSE(cores.empty());
  std::string buffer;
  const auto jiffies = read_core_jiffies(cores, buffer);
  ASSERT_TRUE(jiffies.has_value());
  EXPECT_GT(jiffies->total, 0u);
  EXPECT_LE(jiffies->busy, jiffies->total);

  // Burn a little CPU so both clocks have something to show, then compare them: /proc
  // counts in ticks (10 ms), the kernel clock in nanoseconds.
  volatile double x = 0;
  for (int i = 0; i < 20'000'000; ++i) x = x + std::sqrt(static_cast<double>(i));
  const auto from_proc = read_process_cpu_seconds_proc(buffer);
  const double from_clock = process_cpu_seconds();
  ASSERT_TRUE(from_proc.has_value());
  EXPECT_GT(from_clock, 0.0);
  EXPECT_NEAR(*from_proc, from_clock, 0.1);
}

TEST(ProcReadersTest, ReadTextFileFailsCleanly) {
  std::string buffer = "stale";
  EXPECT_FALSE(read_text_file("/nonexistent/ddpscope/file", buffer));
  EXPECT_TRUE(buffer.empty());
  ASSERT_TRUE(read_text_file("/proc/self/stat", buffer));
  EXPECT_TRUE(parse_proc_pid_stat_ticks(buffer).has_value());
}

}  // namespace
}  // namespace ddp
