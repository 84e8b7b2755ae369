// A rank's steps and their parts, on events built here: the parts add up to the step, and
// each rule of rank_steps.h decides what it says.
#include "analyze/rank_steps.h"

#include <gtest/gtest.h>

#include <numeric>

#include "ddpscope/error.h"

namespace ddp {
namespace {

constexpr int64_t kUs = 1000;

class Events {
 public:
  Events& host(const std::string& name, int64_t start_us, int64_t dur_us, const std::string& thread = "1/1") {
    return add(name, start_us, dur_us, thread, EventKind::kHostOp);
  }
  Events& add(const std::string& name, int64_t start_us, int64_t dur_us, const std::string& thread, EventKind kind,
              int64_t bytes = -1, int64_t correlation = -1) {
    TraceEvent e;
    e.name = t.names.intern(name);
    const std::size_t before = t.threads.size();
    e.thread = t.threads.intern(thread);
    if (t.threads.size() > before) t.thread_pid.push_back(-1);
    e.start_ns = start_us * kUs;
    e.duration_ns = dur_us * kUs;
    e.kind = kind;
    e.bytes = bytes;
    e.correlation = correlation;
    t.add(e);
    return *this;
  }
  TraceFile t;
};

int64_t part(const TraceStep& s, Phase p) { return s.part_ns[static_cast<std::size_t>(p)] / kUs; }

int64_t sum(const TraceStep& s) { return std::accumulate(s.part_ns.begin(), s.part_ns.end(), int64_t{0}); }

// One CPU step of 100 us: data 0-10, forward 10-40 (a broadcast inside at 20-25), loss 40-45
// outside any part, backward ops 50-60 and 62-70 (a 2 us gap between them), nothing 70-95 with
// an allreduce on the gloo thread 72-90, optimizer 95-100.
Events one_cpu_step(int64_t at_us) {
  Events e;
  e.host("ProfilerStep#" + std::to_string(at_us / 100), at_us, 100)
      .host("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", at_us, 10)
      .host("DistributedDataParallel.forward", at_us + 10, 30)
      .host("aten::linear", at_us + 12, 5)
      .host("c10d::broadcast_", at_us + 20, 5)
      .host("aten::mse_loss", at_us + 40, 5)
      .host("autograd::engine::evaluate_function: AddmmBackward0", at_us + 50, 10)
      .host("autograd::engine::evaluate_function: AccumulateGrad", at_us + 62, 8)
      .host("gloo:all_reduce", at_us + 72, 18, "1/2")
      .host("Optimizer.step#Adam.step", at_us + 95, 5);
  return e;
}

TEST(RankSteps, SplitsAStepIntoPartsThatAddUpToIt) {
  Events e = one_cpu_step(0);
  const RankSteps r = find_steps(e.t);
  ASSERT_EQ(r.steps.size(), 1u);
  const TraceStep& s = r.steps[0];
  EXPECT_EQ(s.duration_ns, 100 * kUs);
  EXPECT_EQ(sum(s), s.duration_ns);
  EXPECT_EQ(part(s, Phase::kData), 10);
  EXPECT_EQ(part(s, Phase::kForward), 25);           // the broadcast inside it is communication
  EXPECT_EQ(part(s, Phase::kCommWait), 5 + 18);      // ... and so is the wait while the allreduce ran
  EXPECT_EQ(part(s, Phase::kOther), 5);              // the loss, outside forward
  EXPECT_EQ(part(s, Phase::kBackward), 10 + 2 + 8);  // the gap between two backward ops is backward's
  EXPECT_EQ(part(s, Phase::kOptimizer), 5);
  // 45-50 (loss to backward), 70-72 and 90-95 (backward to optimizer, no collective): Python.
  EXPECT_EQ(part(s, Phase::kPython), 5 + 2 + 5);
  ASSERT_EQ(r.collectives.size(), 1u);
  EXPECT_EQ(r.collectives[0].name, "gloo:all_reduce");
  EXPECT_EQ(r.step_source, "ProfilerStep#N");
}

TEST(RankSteps, DropsTheFirstOfThreeStepsAsWarmUpAndALastCutStep) {
  Events e;
  for (int64_t i = 0; i < 4; ++i) e.host("ProfilerStep#" + std::to_string(i), i * 100, 100);
  e.host("ProfilerStep#4", 400, 10);  // the profile ended in it
  const RankSteps r = find_steps(e.t);
  EXPECT_EQ(r.dropped_warmup, 1);
  EXPECT_EQ(r.dropped_partial, 1);
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_EQ(r.steps.front().number, 1);
  EXPECT_EQ(r.steps.back().number, 3);
}

TEST(RankSteps, WithoutStepMarkersAStepRunsFromOneOptimizerStepsEndToTheNext) {
  Events e;
  e.host("Optimizer.step#SGD.step", 0, 10)
      .host("Optimizer.step#SGD.step", 90, 10)
      .host("Optimizer.step#SGD.step", 190, 10);
  const RankSteps r = find_steps(e.t);
  EXPECT_EQ(r.step_source, "optimizer steps");
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[0].start_ns, 10 * kUs);
  EXPECT_EQ(r.steps[0].duration_ns, 90 * kUs);
}

TEST(RankSteps, ATraceWithoutStepsIsRefusedNamingTheFile) {
  Events e;
  e.t.path = "x.json";
  e.host("aten::mm", 0, 10);
  try {
    find_steps(e.t);
    FAIL();
  } catch (const DataError& error) {
    EXPECT_EQ(std::string(error.what()),
              "x.json: no training step in it: no ProfilerStep#N (torch.profiler's schedule with prof.step() in the "
              "loop), no Lightning run_training_batch and fewer than two optimizer steps");
  }
}

// A GPU step of 100 us: forward launched at 10 runs a kernel 20-50, the optimizer's kernel runs
// 60-70, an allreduce kernel 40-80 overlaps the forward kernel for 10 us; the GPU is idle 0-20
// (the host in data loading 0-10, then launching) and 80-100 (the host in plain Python).
TEST(RankSteps, AGpuStepIsTheGpusTimeByLaunchingPartExposedCommunicationAndIdleTime) {
  Events e;
  e.host("ProfilerStep#1", 0, 100)
      .host("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 0, 10)
      .host("DistributedDataParallel.forward", 10, 20)
      .add("cudaLaunchKernel", 12, 2, "1/1", EventKind::kRuntime, -1, 1)
      .host("Optimizer.step#Adam.step", 40, 5)
      .add("cudaLaunchKernel", 41, 2, "1/1", EventKind::kRuntime, -1, 2)
      .add("void gemm_kernel<float>()", 20, 30, "0/7", EventKind::kGpuKernel, -1, 1)
      .add("void adam_kernel()", 60, 10, "0/7", EventKind::kGpuKernel, -1, 2)
      .add("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 40, 40, "0/20", EventKind::kGpuKernel, 4096);
  const RankSteps r = find_steps(e.t);
  ASSERT_TRUE(r.on_gpu);
  ASSERT_EQ(r.steps.size(), 1u);
  const TraceStep& s = r.steps[0];
  EXPECT_EQ(sum(s), s.duration_ns);
  EXPECT_EQ(part(s, Phase::kForward), 30);
  EXPECT_EQ(part(s, Phase::kOptimizer), 10);
  EXPECT_EQ(part(s, Phase::kCommWait), 20);  // 50-60 and 70-80: not under a compute kernel
  EXPECT_EQ(part(s, Phase::kData), 10);
  EXPECT_EQ(part(s, Phase::kLaunch), 10);
  EXPECT_EQ(part(s, Phase::kPython), 20);
  ASSERT_EQ(r.collectives.size(), 1u);
  EXPECT_EQ(r.collectives[0].bytes, 4096);
}

}  // namespace
}  // namespace ddp
