#include "observe/sched_stats.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "observe/cpu_usage.h"

namespace ddp {
namespace {

TEST(ParseSchedstatTest, ReadsRunWaitAndTimeslices) {
  const auto s = parse_schedstat("123456789 987654 321\n");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->run_ns, 123456789u);
  EXPECT_EQ(s->wait_ns, 987654u);
  EXPECT_EQ(s->timeslices, 321u);
  EXPECT_EQ(parse_schedstat("1 2 3")->wait_ns, 2u);  // no final newline
}

TEST(ParseSchedstatTest, RejectsMalformedText) {
  for (const std::string_view text : {"", "\n1 2 3\n" /* only the first line counts */, "1 2\n", "1 2 3 4\n",
                                      "1 -2 3\n", "1 2x 3\n", "1 2 99999999999999999999999\n"}) {
    EXPECT_FALSE(parse_schedstat(text).has_value()) << text;
  }
}

// Shaped like a real /proc/<pid>/task/<tid>/status, cut down.
constexpr std::string_view kStatus =
    "Name:\tddpscope\n"
    "State:\tR (running)\n"
    "Cpus_allowed_list:\t0-1\n"
    "voluntary_ctxt_switches:\t150\n"
    "nonvoluntary_ctxt_switches:\t42\n";

TEST(ParseCtxtSwitchesTest, ReadsBothCounters) {
  const auto c = parse_ctxt_switches(kStatus);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->voluntary, 150u);
  EXPECT_EQ(c->involuntary, 42u);
}

TEST(ParseCtxtSwitchesTest, RejectsMissingOrMalformedCounters) {
  for (const std::string_view text : {"", "Name:\tx\nvoluntary_ctxt_switches:\t1\n", "nonvoluntary_ctxt_switches:\t1\n",
                                      "voluntary_ctxt_switches:\t\nnonvoluntary_ctxt_switches:\t1\n",
                                      "voluntary_ctxt_switches:\t1 2\nnonvoluntary_ctxt_switches:\t1\n",
                                      "voluntary_ctxt_switches:\t1\nnonvoluntary_ctxt_switches:\tmany"}) {
    EXPECT_FALSE(parse_ctxt_switches(text).has_value()) << text;
  }
}

// user nice system idle iowait irq softirq steal guest guest_nice
constexpr std::string_view kProcStat =
    "cpu  100 0 50 800 50 0 0 9 0 0\n"
    "cpu0 60 0 30 400 10 0 0 4 0 0\n"
    "cpu1 40 0 20 400 40 0 0 5 0 0\n"
    "cpu10 40 0 20 400 40 0 0 70 0 0\n"
    "intr 12345 0 0 7\n"
    "ctxt 999\n";

TEST(ParseStealTicksTest, SumsTheStealOfTheRequestedCores) {
  const std::vector<int> core0{0}, core1{1}, core10{10}, three{0, 1, 10};
  EXPECT_EQ(parse_steal_ticks(kProcStat, core0), 4u);
  EXPECT_EQ(parse_steal_ticks(kProcStat, core1), 5u);
  EXPECT_EQ(parse_steal_ticks(kProcStat, core10), 70u);
  EXPECT_EQ(parse_steal_ticks(kProcStat, three), 79u);
}

TEST(ParseStealTicksTest, CountsNoStealWhereTheKernelHasNoField) {
  const std::vector<int> core0{0};
  EXPECT_EQ(parse_steal_ticks("cpu0 10 0 5 85\n", core0), 0u);
  EXPECT_EQ(parse_steal_ticks("cpu0 10 0 5 85 1 2 3", core0), 0u);
  EXPECT_EQ(parse_steal_ticks("cpu0 10 0 5 85 1 2 3 6", core0), 6u);
}

TEST(ParseStealTicksTest, RejectsMissingCoresAndMalformedLines) {
  const std::vector<int> core0{0}, core7{7}, none{};
  EXPECT_FALSE(parse_steal_ticks(kProcStat, core7).has_value());
  EXPECT_FALSE(parse_steal_ticks(kProcStat, none).has_value());
  for (const std::string_view text :
       {"", "cpu 1 2 3 4 5 6 7 8\n" /* the aggregate is not core 0 */, "cpu0", "cpu0x 1 2 3 4 5 6 7 8\n",
        "cpu0 10 20 30\n", "cpu0 10 20 30 40 50 60 70 -8\n", "cpu0 10 20 30 40 50 60 70 8z\n"}) {
    EXPECT_FALSE(parse_steal_ticks(text, core0).has_value()) << text;
  }
}

SchedSnapshot snapshot(uint64_t run_ns, uint64_t wait_ns, uint64_t voluntary, uint64_t involuntary,
                       std::optional<double> steal_seconds) {
  return {.tid = 7,
          .sched = {.run_ns = run_ns, .wait_ns = wait_ns, .timeslices = 0},
          .switches = {.voluntary = voluntary, .involuntary = involuntary},
          .steal_seconds = steal_seconds};
}

TEST(SchedDeltaTest, IsTheDifferenceWithTheWaitShare) {
  const SchedSnapshot before = snapshot(1'000'000'000, 500'000'000, 10, 20, 1.5);
  const SchedSnapshot after = snapshot(1'300'000'000, 600'000'000, 12, 50, 1.75);
  const SchedDelta d = after - before;
  EXPECT_DOUBLE_EQ(d.run_seconds, 0.3);
  EXPECT_DOUBLE_EQ(d.wait_seconds, 0.1);
  EXPECT_DOUBLE_EQ(d.wait_share, 0.25);
  EXPECT_EQ(d.voluntary_switches, 2u);
  EXPECT_EQ(d.involuntary_switches, 30u);
  ASSERT_TRUE(d.steal_seconds.has_value());
  EXPECT_DOUBLE_EQ(*d.steal_seconds, 0.25);
}

TEST(SchedDeltaTest, NoTimeMeansNoWaitShareAndMissingStealStaysMissing) {
  const SchedSnapshot s = snapshot(5, 5, 1, 1, std::nullopt);
  const SchedDelta d = delta(s, s);
  EXPECT_EQ(d.wait_share, 0.0);
  EXPECT_FALSE(d.steal_seconds.has_value());
  EXPECT_FALSE(delta(snapshot(5, 5, 1, 1, 2.0), snapshot(6, 6, 1, 1, 1.0)).steal_seconds.has_value());
}

TEST(SchedDeltaTest, SnapshotsOfTwoThreadsOrOutOfOrderAreOurBug) {
  SchedSnapshot other = snapshot(5, 5, 1, 1, std::nullopt);
  other.tid = 8;
  EXPECT_DEATH(delta(snapshot(5, 5, 1, 1, std::nullopt), other), "two threads");
  EXPECT_DEATH(delta(snapshot(6, 5, 1, 1, std::nullopt), snapshot(5, 5, 1, 1, std::nullopt)), "out of order");
  EXPECT_DEATH(delta(snapshot(5, 5, 1, 2, std::nullopt), snapshot(5, 5, 1, 1, std::nullopt)), "out of order");
}

// Pins the calling thread to one core while alive, then gives it its old cores back.
class PinToCore {
 public:
  explicit PinToCore(int core) {
    sched_getaffinity(0, sizeof(old_), &old_);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(core, &one);
    EXPECT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  }
  ~PinToCore() { sched_setaffinity(0, sizeof(old_), &old_); }
  PinToCore(const PinToCore&) = delete;
  PinToCore& operator=(const PinToCore&) = delete;

 private:
  cpu_set_t old_;
};

void spin_for(std::chrono::milliseconds duration) {
  const auto end = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < end) {
  }
}

// The allowed core that other processes used least over a short look: this machine is
// shared, and a lone spinner waits only for what else runs on its core.
int quietest_core() {
  const std::vector<int> cores = affinity_cores();
  std::string buffer;
  std::vector<CoreJiffies> before;
  for (const int core : cores) before.push_back(read_core_jiffies(std::span(&core, 1), buffer).value());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  int best = cores.front();
  uint64_t least = UINT64_MAX;
  for (std::size_t i = 0; i < cores.size(); ++i) {
    const uint64_t busy = read_core_jiffies(std::span(&cores[i], 1), buffer).value().busy - before[i].busy;
    if (busy < least) least = busy, best = cores[i];
  }
  return best;
}

double seconds_per_tick() { return 1.0 / static_cast<double>(sysconf(_SC_CLK_TCK)); }

constexpr auto kSpin = std::chrono::milliseconds(300);

TEST(SchedSnapshotTest, ALoneSpinnerWaitsOnlyForWhatElseRunsOnItsCore) {
  const int core = quietest_core();
  PinToCore pin(core);
  std::string buffer;
  const CoreJiffies core_before = read_core_jiffies(std::span(&core, 1), buffer).value();
  const auto start = std::chrono::steady_clock::now();
  const auto before = take_sched_snapshot();
  spin_for(kSpin);
  const auto after = take_sched_snapshot();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const CoreJiffies core_after = read_core_jiffies(std::span(&core, 1), buffer).value();
  ASSERT_TRUE(before.has_value() && after.has_value());
  const SchedDelta d = *after - *before;

  // Always runnable, so always either on the core or waiting for it.
  EXPECT_NEAR(d.run_seconds + d.wait_seconds, wall, 0.1 * wall + 0.02);
  // The others' share of the core, from its busy ticks less this thread's run time.
  const double others = std::clamp(
      (static_cast<double>(core_after.busy - core_before.busy) * seconds_per_tick() - d.run_seconds) / wall, 0.0, 1.0);
  EXPECT_LT(d.wait_share, 0.1 + others) << "core " << core << ", others' share " << others;
  ASSERT_TRUE(d.steal_seconds.has_value());  // this machine's /proc/stat lists its cores
  EXPECT_GE(*d.steal_seconds, 0.0);
}

TEST(SchedSnapshotTest, TwoSpinnersOnOneCoreWaitForEachOther) {
  const int core = affinity_cores().front();
  PinToCore pin(core);
  std::atomic<int> rival_tid{0};
  std::atomic<bool> stop{false};
  std::thread rival([&] {
    PinToCore rival_pin(core);
    rival_tid = static_cast<int>(gettid());
    while (!stop) {
    }
  });
  while (rival_tid == 0) std::this_thread::yield();

  const auto start = std::chrono::steady_clock::now();
  const auto before = take_sched_snapshot();
  const auto rival_before = take_sched_snapshot(rival_tid);
  spin_for(kSpin);
  const auto after = take_sched_snapshot();
  const auto rival_after = take_sched_snapshot(rival_tid);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stop = true;
  rival.join();
  ASSERT_TRUE(before && after && rival_before && rival_after);
  const SchedDelta d = *after - *before;
  const SchedDelta rival_d = *rival_after - *rival_before;

  // Half each when nothing else runs there; more waiting when something does.
  EXPECT_GT(d.wait_share, 0.2);
  EXPECT_GT(rival_d.wait_share, 0.2);
  EXPECT_NEAR(d.run_seconds + d.wait_seconds, wall, 0.1 * wall + 0.02);
  // Each took the core from the other by preemption, never by blocking.
  EXPECT_GE(d.involuntary_switches, 5u);
  EXPECT_GT(d.involuntary_switches, d.voluntary_switches);
  EXPECT_GE(rival_d.involuntary_switches, 5u);
}

TEST(SchedSnapshotTest, AnEndedOrUnknownThreadHasNone) {
  EXPECT_FALSE(take_sched_snapshot(-1).has_value());
  EXPECT_FALSE(take_sched_snapshot(static_cast<int>(getpid()) + 1'000'000'000).has_value());
}

}  // namespace
}  // namespace ddp
