// The GPU step's finding: from the fitted prices, what one optimizer step of the seed spends
// beyond its arithmetic, and the fix for the largest part. Every number is worked out here.
#include "doctor/findings_gpu.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "observe/phase.h"

namespace ddp {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// One GPU run of the seed: 20 steps an epoch for 200 epochs, 0.5 s of start-up, 0.3 s in all.
RunRecord gpu_run() {
  RunRecord run;
  run.label = "devices=1";
  run.devices = 1;
  run.ok = true;
  run.summary.config = Config{};  // the defaults: the seed's
  run.wall_seconds = 0.5 + 4000 * 60e-6;
  run.epochs_run = run.epochs_full = 200;
  run.summary.world_size = 1;
  run.summary.optimizer_steps = 4000;
  run.summary.phases_per_rank.assign(1, PhaseSeconds{});
  run.summary.phases_per_rank[0][static_cast<std::size_t>(Phase::kStartup)] = 0.5;
  return run;
}

// An H200's order: 50 TFLOP/s on the seed's GEMMs, 2 us per launch in a graph, 10 us of host.
ModelParameters gpu_model() {
  ModelParameters m;
  m.flops_per_second = 5e13;
  m.seconds_per_kernel = 2e-6;
  m.host_seconds_per_step = 10e-6;
  return m;
}

WorkloadConfig seed_on_a_gpu() {
  WorkloadConfig w;  // the seed's: 10-256x3-1, batch 256, k = 1: 20 launches a micro-batch, 3 a step
  w.on_gpu = true;
  return w;
}

std::vector<Finding> findings_of(const RunRecord& run, const ModelParameters& model, const WorkloadConfig& w) {
  FindingInputs in;
  in.device_runs = {&run};
  in.model = model;
  in.workload = w;
  return find_problems(in);
}

TEST(FindingsGpu, TheSeedsStepIsLaunchesAndHostNotArithmetic) {
  const RunRecord run = gpu_run();
  const std::vector<Finding> findings = findings_of(run, gpu_model(), seed_on_a_gpu());
  ASSERT_EQ(findings.size(), 1u);  // and no CPU "fixed costs" finding beside it
  const Finding& f = findings[0];
  // 256 x 798,208 FLOP at 50 TFLOP/s = 4.09 us; 20 launches x 2 us = 40 us; 10 us of host.
  const double arithmetic = 256 * 798208.0 / 5e13;
  const double overhead = 40e-6 + 10e-6;
  EXPECT_EQ(f.title, "A GPU step costs 54.1 µs, 4.1 µs of it arithmetic: 92 % goes to launches, the host");
  EXPECT_NEAR(f.cost_seconds, overhead * 4000, 1e-9);
  EXPECT_NEAR(f.share_of_wall, overhead * 4000 / run.wall_seconds, 1e-12);
  EXPECT_TRUE(contains(f.detail, "1 micro-batch of 256 samples, 23 launches")) << f.detail;
  EXPECT_TRUE(contains(f.detail, "40.0 µs fixed in the forward and backward launches")) << f.detail;
  EXPECT_TRUE(contains(f.detail, "devices=1 measured 60.0 µs per step, start-up excluded")) << f.detail;
  EXPECT_TRUE(contains(f.fix, "Give each launch more work")) << f.fix;
  EXPECT_EQ(f.evidence, (std::vector<std::string>{"devices=1"}));
  EXPECT_NEAR(gpu_step_parts(gpu_model(), seed_on_a_gpu()).arithmetic, arithmetic, 1e-15);
}

TEST(FindingsGpu, AccumulationMultipliesTheMicroBatchesLaunches) {
  WorkloadConfig w = seed_on_a_gpu();
  w.accumulate_grad_batches = 4;
  const GpuStepParts p = gpu_step_parts(gpu_model(), w);
  EXPECT_EQ(p.launches, 4 * 20 + 3);
  EXPECT_NEAR(p.launch_fixed, 4 * 40e-6, 1e-15);
  EXPECT_NEAR(p.host, 10e-6, 1e-15);  // once a step
}

TEST(FindingsGpu, EagerLaunchesAreTheLargestPartAndTheFixDropsNoCudaGraph) {
  WorkloadConfig w = seed_on_a_gpu();
  w.cuda_graph = false;
  ModelParameters m = gpu_model();
  m.eager_seconds_per_kernel = 5e-6;  // 23 launches: 115 us
  const std::vector<Finding> findings = findings_of(gpu_run(), m, w);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_TRUE(contains(findings[0].detail, "115.0 µs launching each kernel from the host")) << findings[0].detail;
  EXPECT_TRUE(contains(findings[0].fix, "Drop `--no-cuda-graph`")) << findings[0].fix;
}

TEST(FindingsGpu, ThePerStepProbeIsNamedWhenItIsTheLargestPart) {
  WorkloadConfig w = seed_on_a_gpu();
  w.monitor_per_step = true;
  ModelParameters m = gpu_model();
  m.monitor_seconds_per_micro_batch = 2e-3;  // nvmlInit and shutdown in every step
  const std::vector<Finding> findings = findings_of(gpu_run(), m, w);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_TRUE(contains(findings[0].title, "the host and the probe")) << findings[0].title;
  EXPECT_TRUE(contains(findings[0].fix, "--monitor-mode background")) << findings[0].fix;
}

TEST(FindingsGpu, AStepOfArithmeticNeedsNoFinding) {
  ModelParameters m = gpu_model();
  m.flops_per_second = 1e11;  // 2 ms of arithmetic beside 44 us: 2 % overhead, under 25 %
  EXPECT_TRUE(findings_of(gpu_run(), m, seed_on_a_gpu()).empty());
}

TEST(FindingsGpu, AFailedRunGivesNoFinding) {
  RunRecord run = gpu_run();
  run.ok = false;
  EXPECT_TRUE(findings_of(run, gpu_model(), seed_on_a_gpu()).empty());
}

}  // namespace
}  // namespace ddp
