// Each rule of findings.cpp over synthetic runs: it fires on runs that have its cause, with
// the cost it states, and stays silent on runs that do not. The runs are built from phase
// times alone, so every number in a finding can be worked out by hand here.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "doctor/findings.h"
#include "doctor/run_noise.h"
#include "observe/phase.h"

namespace ddp {
namespace {

using PhaseMap = std::map<std::string, double>;

Phase phase_named(const std::string& name) {
  for (std::size_t p = 0; p < kPhaseCount; ++p) {
    if (kPhaseNames[p] == name) return static_cast<Phase>(p);
  }
  ADD_FAILURE() << "no phase " << name;
  return Phase::kOther;
}

// A run of `devices` ranks on one host, each of which spent `phases` (others 0), for the
// configuration's full epochs (nothing extrapolated), whose steady epochs vary by 1 %.
RunRecord synthetic_run(int devices, double wall, const PhaseMap& phases, int64_t optimizer_steps = 100) {
  RunRecord run;
  run.label = "devices=" + std::to_string(devices);
  run.devices = devices;
  run.ok = true;
  run.summary.config = Config{};  // the defaults: the seed's
  run.wall_seconds = wall;
  run.epochs_run = run.epochs_full = 200;
  PhaseSeconds rank{};
  for (const auto& [name, seconds] : phases) rank[static_cast<std::size_t>(phase_named(name))] = seconds;
  run.summary.world_size = devices;
  run.summary.wall_seconds = wall;
  run.summary.optimizer_steps = optimizer_steps;
  run.summary.hosts.assign(devices, "node1");
  run.summary.phases_per_rank.assign(devices, rank);
  run.summary.epochs = 200;
  run.summary.steady_epochs = {.count = 199, .mean_seconds = wall / 200, .sd_seconds = 0.01 * wall / 200};
  return run;
}

void set_rank_phase(RunRecord& run, int rank, const std::string& phase, double seconds) {
  run.summary.phases_per_rank[rank][static_cast<std::size_t>(phase_named(phase))] = seconds;
}

void set_every_rank_phase(RunRecord& run, const std::string& phase, double seconds) {
  for (int r = 0; r < run.devices; ++r) set_rank_phase(run, r, phase, seconds);
}

// A fitted model of this machine's order: 10 GFLOP/s, 10 us and 1 GB/s per ring step.
ModelParameters synthetic_model() {
  ModelParameters m;
  m.alpha_seconds = 1e-5;
  m.beta_bytes_per_second = 1e9;
  m.flops_per_second = 1e10;
  return m;
}

WorkloadConfig seed_workload(int devices) {
  WorkloadConfig w;  // the seed's: 5000 samples, batch 256, 10-256x3-1, 200 epochs, k = 1
  w.devices = devices;
  return w;
}

// The 1-device run and a 2-device run that scales perfectly, with no start-up, wait,
// sharing or straggler of its own: each test adds one cause to it.
struct Pair {
  RunRecord one = synthetic_run(1, 2.0, {{"startup", 0.1}, {"forward", 0.8}, {"backward", 0.8}});
  RunRecord two = synthetic_run(2, 1.0, {{"startup", 0.1}, {"forward", 0.4}, {"backward", 0.4}});

  std::vector<Finding> findings() const {
    FindingInputs in;
    in.device_runs = {&one, &two};
    in.model = synthetic_model();
    in.workload = seed_workload(2);
    return find_problems(in);
  }
};

const Finding* titled(const std::vector<Finding>& findings, const std::string& prefix) {
  for (const Finding& f : findings) {
    if (f.title.rfind(prefix, 0) == 0) return &f;
  }
  return nullptr;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(FindingsRules, APerfectlyScalingPairHasNoFinding) { EXPECT_TRUE(Pair().findings().empty()); }

// --- a habit, measured in its own phase by an ablation without it

AblationResult monitor_ablation(const RunRecord& baseline, double monitor_without) {
  AblationResult a;
  a.name = "monitor-background";
  a.habit = "Probing the device every micro-batch";
  a.fix = "Use --monitor-mode background.";
  a.phase = Phase::kMonitor;
  a.run = synthetic_run(1, 9.3, {{"monitor", monitor_without}});
  a.run.label = "devices=1 monitor-background";
  a.baseline = &baseline;
  return a;
}

std::vector<Finding> habit_findings_of(const RunRecord& baseline, const AblationResult& ablation) {
  FindingInputs in;  // no device runs and no fitted rate: only the habit rule can speak
  in.ablations = {ablation};
  in.workload = seed_workload(1);
  return find_problems(in);
}

TEST(FindingsRules, AHabitCostingMoreThanItsThresholdIsFoundWithItsPhaseTime) {
  const RunRecord baseline = synthetic_run(1, 10.0, {{"monitor", 1.0}}, 100);
  const std::vector<Finding> findings = habit_findings_of(baseline, monitor_ablation(baseline, 0.2));
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_NEAR(f.cost_seconds, 0.8, 1e-12);  // 1.0 s of monitor phase down to 0.2 s
  EXPECT_NEAR(f.share_of_wall, 0.08, 1e-12);
  // The ± is the noise's band: 1.96 * 0.93 * sqrt(2) * 0.01 / sqrt(199) = 0.18 % of the 10 s
  // baseline, 0.18 ms per step.
  EXPECT_EQ(f.title,
            "Probing the device every micro-batch costs 8.00 ms (±0.18 ms) per optimizer step on each rank: 8 % "
            "(±0.2 %) of the run at 1 device");
  EXPECT_NEAR(f.cost_uncertainty_seconds, 1.96 * 0.93 * std::sqrt(2.0) * 0.01 / std::sqrt(199.0) * 10, 1e-12);
  EXPECT_TRUE(contains(f.detail, "the monitor phase took 1.000 s; with monitor-background it took 0.200 s"))
      << f.detail;
  EXPECT_EQ(f.fix, "Use --monitor-mode background.");
  EXPECT_EQ(f.evidence, (std::vector<std::string>{"devices=1", "devices=1 monitor-background"}));
}

TEST(FindingsRules, AHabitCostingLessThanItsThresholdIsNotFound) {
  const RunRecord baseline = synthetic_run(1, 10.0, {{"monitor", 1.0}});
  // 0.15 s of a 10 s run: 1.5 %, under kHabitMinShare.
  EXPECT_TRUE(habit_findings_of(baseline, monitor_ablation(baseline, 0.85)).empty());
}

TEST(FindingsRules, AHabitWhoseCostIsInsideItsOwnBandIsNotFound) {
  // Epochs that vary by 15 %: the band is 1.96 * 0.93 * sqrt(2) * 0.15 / sqrt(199) = 2.7 % of
  // the 10 s run. The wall falls 7 % without the habit (measurable), but the phase measures
  // 0.25 s of it, 2.5 %: inside its band, so no finding (on a clean seed run: 0.21 ± 0.25 ms).
  RunRecord baseline = synthetic_run(1, 10.0, {{"monitor", 1.0}});
  baseline.summary.steady_epochs.sd_seconds = 0.15 * baseline.summary.steady_epochs.mean_seconds;
  AblationResult a = monitor_ablation(baseline, 0.75);
  a.run.summary.steady_epochs.sd_seconds = 0.15 * a.run.summary.steady_epochs.mean_seconds;
  EXPECT_TRUE(habit_findings_of(baseline, a).empty());
  a = monitor_ablation(baseline, 0.2);  // 0.8 s: outside the band, found
  a.run.summary.steady_epochs.sd_seconds = 0.15 * a.run.summary.steady_epochs.mean_seconds;
  EXPECT_EQ(habit_findings_of(baseline, a).size(), 1u);
}

TEST(FindingsRules, AnAblationThatIsNoHabitGivesNoHabitFindingHoweverLargeItsEffect) {
  const RunRecord baseline = synthetic_run(1, 10.0, {{"monitor", 1.0}});
  AblationResult size_change = monitor_ablation(baseline, 0.0);
  size_change.habit.clear();  // a size the author tried (batch=1024), not a habit to drop
  EXPECT_TRUE(habit_findings_of(baseline, size_change).empty());
}

TEST(FindingsRules, AFailedAblationOrBaselineGivesNoHabitFinding) {
  RunRecord baseline = synthetic_run(1, 10.0, {{"monitor", 1.0}});
  AblationResult failed = monitor_ablation(baseline, 0.2);
  failed.run.ok = false;
  EXPECT_TRUE(habit_findings_of(baseline, failed).empty());
  const AblationResult ok = monitor_ablation(baseline, 0.2);
  baseline.ok = false;
  EXPECT_TRUE(habit_findings_of(baseline, ok).empty());
}

TEST(FindingsRules, AHabitWithoutAPhaseOfItsOwnIsChargedItsWallTimeStartUpAside) {
  // A GPU's eager launches (--no-cuda-graph) stretch every phase: 10 s with 1 s of start-up
  // against 6 s with the same start-up when one CUDA graph launches each step.
  const RunRecord baseline = synthetic_run(1, 10.0, {{"startup", 1.0}});
  AblationResult graph;
  graph.name = "cuda-graph";
  graph.habit = "Launching every kernel of the step from the host";
  graph.fix = "Drop `--no-cuda-graph`.";
  graph.run = synthetic_run(1, 6.0, {{"startup", 1.0}});
  graph.run.label = "devices=1 cuda-graph";
  graph.baseline = &baseline;
  const std::vector<Finding> findings = habit_findings_of(baseline, graph);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NEAR(findings[0].cost_seconds, 4.0, 1e-12);
  EXPECT_TRUE(contains(findings[0].detail, "training (start-up aside) took 9.000 s; with cuda-graph it took 5.000 s"))
      << findings[0].detail;
}

// --- no habit finding that the noise could explain

TEST(FindingsRules, TheSameHabitCostInsideTheNoiseBandIsNotFound) {
  const RunRecord baseline = synthetic_run(1, 10.0, {{"monitor", 1.0}});
  // The same 0.8 s of monitor phase and 7 % less wall time as above, but from a short ablation
  // whose 3 steady epochs vary by 8 %: the band is 1.96 * 0.93 * sqrt((0.08 / sqrt(3))^2 +
  // (0.01 / sqrt(199))^2) = 8.4 %, wider than the effect.
  AblationResult noisy = monitor_ablation(baseline, 0.2);
  noisy.run.summary.steady_epochs = {.count = 3, .mean_seconds = 0.05, .sd_seconds = 0.004};
  const Effect effect = *effect_against_baseline(noisy);
  EXPECT_NEAR(effect.relative, -0.07, 1e-12);
  EXPECT_NEAR(effect.uncertainty, 0.0842, 1e-4);
  EXPECT_TRUE(habit_findings_of(baseline, noisy).empty());
  EXPECT_EQ(describe_effect(noisy), "no measurable effect (±8.4 %)");
}

TEST(FindingsRules, AHabitWhoseNoiseIsUnknownIsNotFound) {
  const RunRecord baseline = synthetic_run(1, 10.0, {{"monitor", 1.0}});
  AblationResult short_run = monitor_ablation(baseline, 0.2);
  short_run.run.summary.steady_epochs = {};  // 2 epochs: no spread
  short_run.run.summary.epochs = 2;
  EXPECT_FALSE(effect_against_baseline(short_run));
  EXPECT_TRUE(habit_findings_of(baseline, short_run).empty());
  EXPECT_EQ(describe_effect(short_run),
            "-7.0 %, noise unknown: devices=1 monitor-background ran 2 epochs, too few for a spread (3 or more)");
}

TEST(FindingsRules, AHabitWhoseRemovalIsMeasurablySlowerIsNotFound) {
  const RunRecord baseline = synthetic_run(1, 10.0, {{"monitor", 1.0}});
  AblationResult slower = monitor_ablation(baseline, 0.2);
  slower.run.wall_seconds = 10.7;  // its phase shrank, yet the run took longer: no evidence for the habit
  ASSERT_TRUE(measurable(*effect_against_baseline(slower)));
  EXPECT_TRUE(habit_findings_of(baseline, slower).empty());
}

// --- N devices against one

TEST(FindingsRules, NDevicesSlowerThanOneAreExplainedWithTheirDistanceFromTheIdeal) {
  Pair p;
  p.two = synthetic_run(2, 2.4, {{"startup", 0.1}, {"forward", 0.4}, {"backward", 0.4}});
  const std::vector<Finding> findings = p.findings();
  const Finding* f = titled(findings, "2 devices are slower than one");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "2 devices are slower than one: 2.40 s against 2.00 s");
  EXPECT_NEAR(f->cost_seconds, 2.4 - 1.0, 1e-12);  // the wall time beyond the ideal 2.0 / 2
  EXPECT_NEAR(f->share_of_wall, 1.4 / 2.4, 1e-12);
  EXPECT_TRUE(contains(f->detail, "Ideal would be 1.00 s.")) << f->detail;
  EXPECT_TRUE(contains(f->fix, "Give each device more work per synchronisation.")) << f->fix;
  EXPECT_EQ(f->evidence, (std::vector<std::string>{"devices=1", "devices=2"}));
}

TEST(FindingsRules, NDevicesFasterButBelowTheEfficiencyFloorAreExplained) {
  Pair p;
  p.two = synthetic_run(2, 1.5, {{"startup", 0.1}, {"forward", 0.4}, {"backward", 0.4}});
  const std::vector<Finding> findings = p.findings();
  const Finding* f = titled(findings, "2 devices are 1.33x faster than one");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "2 devices are 1.33x faster than one, 67 % of the ideal 2x");
  EXPECT_NEAR(f->cost_seconds, 0.5, 1e-12);
  EXPECT_EQ(f->fix, "See the costs below, largest first.");
}

TEST(FindingsRules, NDevicesAboveTheEfficiencyFloorNeedNoExplaining) {
  Pair p;
  p.two.wall_seconds = 1.2;  // speedup 1.67 of 2: 83 %, above kEfficiencyFloor
  p.two.summary.wall_seconds = 1.2;
  EXPECT_EQ(titled(p.findings(), "2 devices are"), nullptr);
}

// --- start-up

TEST(FindingsRules, ExtraStartUpOfNDevicesIsFoundWithItsCost) {
  Pair p;
  set_every_rank_phase(p.two, "startup", 0.3);
  const std::vector<Finding> findings = p.findings();
  const Finding* f = titled(findings, "Starting 2 processes");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "Starting 2 processes and MPI costs 0.20 s: 20 % of the 2-device run");
  EXPECT_NEAR(f->cost_seconds, 0.2, 1e-12);
  EXPECT_NEAR(f->share_of_wall, 0.2, 1e-12);
}

TEST(FindingsRules, StartUpWithinItsThresholdIsNotFound) {
  Pair p;
  set_every_rank_phase(p.two, "startup", 0.14);  // 0.04 s more, 4 % of the run
  EXPECT_EQ(titled(p.findings(), "Starting"), nullptr);
}

// --- waiting for gradients

TEST(FindingsRules, WaitingForGradientsIsFoundWithTheSynchronisationsItCounts) {
  Pair p;
  set_every_rank_phase(p.two, "comm_wait", 0.1);
  const std::vector<Finding> findings = p.findings();
  const Finding* f = titled(findings, "Waiting for gradients");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "Waiting for gradients costs 0.10 s at 2 devices: 10 % of the run");
  EXPECT_NEAR(f->cost_seconds, 0.1, 1e-12);
  // 2500 samples per rank in 10 micro-batches of 256, one sync per step (k = 1), 200
  // epochs; 134,657 float32 gradients.
  EXPECT_TRUE(contains(f->detail, "2000 gradient synchronisations of 539 KB between ranks on one host")) << f->detail;
  EXPECT_EQ(f->evidence, (std::vector<std::string>{"devices=2"}));
}

TEST(FindingsRules, WaitingWithinItsThresholdIsNotFound) {
  Pair p;
  set_every_rank_phase(p.two, "comm_wait", 0.02);  // 2 % of the run
  EXPECT_EQ(titled(p.findings(), "Waiting for gradients"), nullptr);
}

// --- ranks sharing a host

TEST(FindingsRules, SharingStatesTheComputeBeyondAFairShareAsItsCost) {
  Pair p;
  p.two = synthetic_run(2, 1.0, {{"startup", 0.1}, {"forward", 0.5}, {"backward", 0.4}});
  const std::vector<Finding> findings = p.findings();
  const Finding* f = titled(findings, "Ranks slow each other's compute");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->cost_seconds, 0.9 - 1.6 / 2, 1e-12);
  EXPECT_NEAR(f->share_of_wall, 0.1, 1e-12);
}

// --- stragglers

TEST(FindingsRules, ARankSlowerInAPhaseIsNamedWithItsGap) {
  Pair p;
  set_rank_phase(p.two, 0, "data", 0.05);
  set_rank_phase(p.two, 1, "data", 0.2);
  const std::vector<Finding> findings = p.findings();
  const Finding* f = titled(findings, "Rank 1 is a straggler");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "Rank 1 is a straggler in data: 0.150 s more than the fastest rank");
  EXPECT_NEAR(f->cost_seconds, 0.15, 1e-12);
  EXPECT_NEAR(f->share_of_wall, 0.15, 1e-12);
  EXPECT_TRUE(contains(f->fix, "Check what else runs on that rank's core")) << f->fix;
}

TEST(FindingsRules, AStragglerFindingSaysWhatTheOtherRanksWaitedForIt) {
  Pair p;
  set_rank_phase(p.two, 0, "data", 0.05);
  set_rank_phase(p.two, 1, "data", 0.2);
  set_rank_phase(p.two, 0, "comm_wait", 0.16);
  set_rank_phase(p.two, 1, "comm_wait", 0.02);
  const std::vector<Finding> findings = p.findings();
  const Finding* f = titled(findings, "Rank 1 is a straggler");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(contains(f->detail, "the other ranks waited 0.140 s each for it at the synchronisations")) << f->detail;
  EXPECT_TRUE(contains(f->detail, "beyond the run's noise (±0.001 s, from its epochs)")) << f->detail;
}

// A clean 2-device seed run here spread a phase by up to 4.1 % of its wall (2 of 4 runs).
TEST(FindingsRules, ASpreadLikeACleanRunsIsNoStraggler) {
  Pair p;
  set_rank_phase(p.two, 0, "backward", 0.40);
  set_rank_phase(p.two, 1, "backward", 0.45);  // 12 % of the phase, 5 % of the run
  EXPECT_EQ(titled(p.findings(), "Rank"), nullptr);
}

TEST(FindingsRules, ASpreadWithinTheRunsNoiseBandIsNoStraggler) {
  Pair p;
  set_rank_phase(p.two, 0, "data", 0.05);
  set_rank_phase(p.two, 1, "data", 0.15);  // 10 % of the run
  EXPECT_NE(titled(p.findings(), "Rank 1 is a straggler"), nullptr);
  // Epochs that vary by 80 % of their mean: the wall's band is ±1.96 * 0.8 / sqrt(199) = ±0.11 s.
  p.two.summary.steady_epochs.sd_seconds = 0.8 * p.two.summary.steady_epochs.mean_seconds;
  EXPECT_EQ(titled(p.findings(), "Rank"), nullptr);
}

TEST(FindingsRules, ALoggingStragglerIsToldThatRankZeroWritesTheLogs) {
  Pair p;
  set_rank_phase(p.two, 0, "logging", 0.1);
  const std::vector<Finding> findings = p.findings();
  const Finding* f = titled(findings, "Rank 0 is a straggler in logging");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->cost_seconds, 0.1, 1e-12);
  EXPECT_TRUE(contains(f->fix, "Rank zero alone writes the logs")) << f->fix;
}

TEST(FindingsRules, ASpreadSmallInItsPhaseOrInTheRunIsNoStraggler) {
  Pair small_in_phase;  // 5 ms on 105 ms: under kStragglerMinSpread
  set_rank_phase(small_in_phase.two, 0, "data", 0.1);
  set_rank_phase(small_in_phase.two, 1, "data", 0.105);
  EXPECT_EQ(titled(small_in_phase.findings(), "Rank"), nullptr);
  Pair small_in_run;  // 3 of 4 ms, but 0.3 % of the run: under kStragglerMinShare
  set_rank_phase(small_in_run.two, 0, "data", 0.001);
  set_rank_phase(small_in_run.two, 1, "data", 0.004);
  EXPECT_EQ(titled(small_in_run.findings(), "Rank"), nullptr);
}

// --- fixed costs per micro-batch

std::vector<Finding> fixed_cost_findings_of(double fixed_seconds_per_step) {
  const RunRecord one = synthetic_run(1, 100.0, {{"forward", 40.0}, {"backward", 40.0}});
  FindingInputs in;
  in.device_runs = {&one};  // one run: no multi-device rule
  in.model = synthetic_model();
  in.model.fixed_seconds_per_step = fixed_seconds_per_step;
  in.workload = seed_workload(1);
  return find_problems(in);
}

TEST(FindingsRules, FixedCostsAboveTheirShareOfAMicroBatchAreFoundWithTheirTotal) {
  const std::vector<Finding> findings = fixed_cost_findings_of(0.02);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  // A micro-batch of 256 needs 204.3 MFLOP: 20.43 ms at 10 GFLOP/s, beside 20 ms fixed.
  const double compute = 798208.0 * 256 / 1e10;
  EXPECT_EQ(f.title, "Fixed costs are 49 % of every micro-batch's compute");
  EXPECT_NEAR(0.02 / (0.02 + compute), 0.495, 0.001);
  EXPECT_NEAR(f.cost_seconds, 0.02 * 20 * 200, 1e-9);  // 20 micro-batches a epoch, 200 epochs
  EXPECT_NEAR(f.share_of_wall, 0.8, 1e-12);
  EXPECT_EQ(f.evidence, (std::vector<std::string>{"devices=1"}));
}

TEST(FindingsRules, FixedCostsWithinTheirShareAreNotFound) {
  EXPECT_TRUE(fixed_cost_findings_of(0.002).empty());  // 9 % of a micro-batch
}

// --- ranking

TEST(FindingsRules, FindingsAreRankedByCostLargestFirst) {
  Pair p;
  set_every_rank_phase(p.two, "startup", 0.3);     // 0.2 s
  set_every_rank_phase(p.two, "comm_wait", 0.35);  // 0.35 s
  const std::vector<Finding> findings = p.findings();
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_TRUE(contains(findings[0].title, "Waiting for gradients")) << findings[0].title;
  EXPECT_TRUE(contains(findings[1].title, "Starting 2 processes")) << findings[1].title;
}

}  // namespace
}  // namespace ddp
