// The arrival straggler rule over synthetic runs: it names the rank that arrives last and
// what the others wait for it, then the cause from what that rank saw (its core, steal, its
// loader, else its own compute); it is silent without a straggler, under its thresholds and
// on one rank, and the phase-spread rule never reports the same rank again.
#include "doctor/findings_straggler.h"

#include <gtest/gtest.h>

#include <string>

namespace ddp {
namespace {

constexpr std::size_t kData = static_cast<std::size_t>(Phase::kData);
constexpr std::size_t kForward = static_cast<std::size_t>(Phase::kForward);

// 2 ranks, 10 s measured, 1000 steps; rank 1 arrives last at 90 % of the collectives and each
// costs rank 0 `wait_ms` per step. Both ranks' cores are quiet and their phases equal.
RunRecord late_rank_one(double wait_ms) {
  RunRecord run;
  run.label = "devices=2";
  run.devices = 2;
  run.ok = true;
  run.summary.config = Config{};  // the defaults: the seed's
  run.wall_seconds = 20.0;        // extrapolated to twice the measured epochs
  run.summary.world_size = 2;
  run.summary.wall_seconds = 10.0;
  PhaseSeconds phases{};
  phases[kData] = 0.2;
  phases[kForward] = 3.0;
  run.summary.phases_per_rank = {phases, phases};
  const SchedDelta quiet{.run_seconds = 9.0, .wait_seconds = 0.1, .wait_share = 0.1 / 9.1, .steal_seconds = 0.0};
  run.summary.sched_per_rank = {quiet, quiet};
  run.summary.cores_per_rank = {{0}, {1}};
  ArrivalSummary& a = run.summary.arrivals;
  a.collectives = a.steps = 1000;
  a.per_rank = {{.times_last = 100}, {.times_last = 900}};
  a.straggler = Straggler{
      .rank = 1, .last_share = 0.9, .late_seconds = 1e-3 * wait_ms / 0.9, .cost_seconds_per_step = 1e-3 * wait_ms};
  return run;
}

std::vector<Finding> findings_of(const RunRecord& run) {
  FindingInputs in;
  in.device_runs = {&run};  // the straggler rule needs only the largest multi-device run
  return find_problems(in);
}

const Finding* arrival_finding(const std::vector<Finding>& findings) {
  for (const Finding& f : findings) {
    if (f.title.find("holds the others back") != std::string::npos) return &f;
  }
  return nullptr;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(FindingsStraggler, ARankSharingItsCoreIsNamedWithTheWaitItCausesAndTheProcessThatSharesIt) {
  RunRecord run = late_rank_one(2.0);  // 2 s of the 10 s: 20 %
  run.summary.sched_per_rank[1].wait_share = 0.31;
  run.summary.sched_per_rank[1].involuntary_switches = 4200;
  const std::vector<Finding> findings = findings_of(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(
      f.title,
      "Rank 1 holds the others back: they wait 2.00 ms per step for it (20 % of the run), arriving last at 90 % of "
      "the collectives");
  EXPECT_TRUE(contains(f.detail,
                       "rank 1 waited 31 % of its time for its core (core 1) against at most 1 % on the "
                       "others, with 4200 involuntary context switches: another process shares it"))
      << f.detail;
  EXPECT_TRUE(contains(f.fix, "Find what else runs on rank 1's core (core 1)")) << f.fix;
  EXPECT_NEAR(f.share_of_wall, 0.2, 1e-12);
  EXPECT_NEAR(f.cost_seconds, 4.0, 1e-12);  // the share of the extrapolated wall
  EXPECT_EQ(f.evidence, std::vector<std::string>{"devices=2"});
}

TEST(FindingsStraggler, AWaitForTheCoreNotWellAboveTheOthersIsNoCoreSharing) {
  RunRecord run = late_rank_one(2.0);
  run.summary.sched_per_rank[0].wait_share = 0.25;  // the whole host is busy, not rank 1's core
  run.summary.sched_per_rank[1].wait_share = 0.31;
  const std::vector<Finding> findings = findings_of(run);
  const Finding* f = arrival_finding(findings);
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(contains(f->detail, "another process shares it")) << f->detail;
  EXPECT_TRUE(contains(f->detail, "Its own compute was slower")) << f->detail;
}

TEST(FindingsStraggler, StealThatExplainsTheWaitIsNamedAsTheHypervisors) {
  RunRecord run = late_rank_one(2.0);
  run.summary.sched_per_rank[1].steal_seconds = 1.5;  // the others waited 2 s: steal explains half or more
  const std::vector<Finding> findings = findings_of(run);
  const Finding* f = arrival_finding(findings);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(contains(f->detail, "the hypervisor gave its core to another guest for 1.50 s")) << f->detail;
  EXPECT_FALSE(contains(f->detail, "another process shares it")) << f->detail;
  EXPECT_TRUE(contains(f->fix, "Steal is the host's")) << f->fix;
  run.summary.sched_per_rank[1].steal_seconds = 0.5;  // a quarter of the wait: not the explanation
  const std::vector<Finding> without = findings_of(run);
  ASSERT_NE(arrival_finding(without), nullptr);
  EXPECT_FALSE(contains(arrival_finding(without)->detail, "hypervisor"));
}

TEST(FindingsStraggler, ALongerDataPhaseIsALoaderWait) {
  RunRecord run = late_rank_one(2.0);
  run.summary.phases_per_rank[1][kData] = 1.4;  // 1.2 s more than rank 0: over half of the 2 s
  const std::vector<Finding> findings = findings_of(run);
  const Finding* f = arrival_finding(findings);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(contains(f->detail, "It waited for its loader: its data phase took 1.400 s against at most 0.200 s"))
      << f->detail;
  EXPECT_TRUE(contains(f->fix, "--num-workers")) << f->fix;
}

TEST(FindingsStraggler, WithoutAnyOtherCauseItsOwnComputeWasSlower) {
  RunRecord run = late_rank_one(2.0);
  run.summary.phases_per_rank[1][kForward] = 5.0;
  const std::vector<Finding> findings = findings_of(run);
  const Finding* f = arrival_finding(findings);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(contains(f->detail,
                       "Its own compute was slower (no wait for its core, no steal, no loader wait): forward, backward "
                       "and optimizer took 5.000 s on it against at most 3.000 s on the others."))
      << f->detail;
  EXPECT_TRUE(contains(f->fix, "Check that rank's core")) << f->fix;
}

// Slower compute alone, on a host where other processes took at least the others' wait, is no
// evidence against the rank; a measured cause (its core shared) still is.
TEST(FindingsStraggler, SlowerComputeOnAHostOthersKeptBusyIsNoFinding) {
  RunRecord run = late_rank_one(2.0);  // 2 ms per step over 1000 steps: 2 s waited
  run.summary.phases_per_rank[1][kForward] = 5.0;
  run.summary.host_load = {{.host = "vm", .cores = 2, .busy_core_seconds = 22.0, .ranks_cpu_seconds = 19.5}};
  EXPECT_EQ(arrival_finding(findings_of(run)), nullptr);
  run.summary.host_load[0].busy_core_seconds = 21.0;  // 1.5 core-seconds: less than the wait
  EXPECT_NE(arrival_finding(findings_of(run)), nullptr);
  run.summary.host_load[0].busy_core_seconds = 22.0;
  run.summary.sched_per_rank[1] = {.run_seconds = 6.0, .wait_seconds = 3.0, .wait_share = 0.5, .steal_seconds = 0.0};
  EXPECT_NE(arrival_finding(findings_of(run)), nullptr);  // its core was shared: said as such
}

TEST(FindingsStraggler, ThePhaseSpreadRuleLeavesTheNamedRankToTheArrivalRule) {
  RunRecord run = late_rank_one(2.0);
  run.summary.phases_per_rank[1][kForward] = 5.0;  // a phase spread the old rule would report
  const RunRecord one = [] {
    RunRecord r;
    r.label = "devices=1";
    r.ok = true;
    r.wall_seconds = r.summary.wall_seconds = 20.0;
    r.summary.phases_per_rank = {PhaseSeconds{}};
    return r;
  }();
  FindingInputs in;
  in.device_runs = {&one, &run};
  in.workload.devices = 2;
  const std::vector<Finding> findings = find_problems(in);
  ASSERT_NE(arrival_finding(findings), nullptr);
  for (const Finding& f : findings) EXPECT_FALSE(contains(f.title, "is a straggler")) << f.title;
  // Without the arrival finding, the phase-spread rule speaks as before.
  run.summary.arrivals.straggler.reset();
  bool spread = false;
  for (const Finding& f : find_problems(in)) spread = spread || contains(f.title, "Rank 1 is a straggler in forward");
  EXPECT_TRUE(spread);
}

TEST(FindingsStraggler, NoStragglerACheapOneOrARarelyLastOneGivesNoFinding) {
  RunRecord none = late_rank_one(2.0);
  none.summary.arrivals.straggler.reset();
  EXPECT_EQ(arrival_finding(findings_of(none)), nullptr);
  const RunRecord cheap = late_rank_one(1.0);  // 1 s of 10 s: at kArrivalStragglerMinShare
  EXPECT_EQ(arrival_finding(findings_of(cheap)), nullptr);
  EXPECT_NE(arrival_finding(findings_of(late_rank_one(1.01))), nullptr);
  // Equal ranks split the waiting they cause: find_straggler names none (arrival_lag_test).
}

TEST(FindingsStraggler, OneRankHasNoStraggler) {
  RunRecord run;
  run.label = "devices=1";
  run.devices = 1;
  run.ok = true;
  run.summary.config = Config{};
  run.wall_seconds = run.summary.wall_seconds = 10.0;
  run.summary.phases_per_rank = {PhaseSeconds{}};
  EXPECT_FALSE(arrival_straggler_rank(FindingInputs{.device_runs = {&run}}));
  EXPECT_EQ(arrival_finding(findings_of(run)), nullptr);
}

}  // namespace
}  // namespace ddp
