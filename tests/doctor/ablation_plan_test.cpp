// Which ablations the doctor plans for a configuration: the strategy's, and a GPU's.
#include "doctor/ablation.h"
#include "train/config/run_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace ddp {
namespace {

const Ablation* find(const std::vector<Ablation>& plan, const std::string& name) {
  const auto it = std::find_if(plan.begin(), plan.end(), [&](const Ablation& a) { return a.name == name; });
  return it == plan.end() ? nullptr : &*it;
}

TEST(AblationPlan, ShardsTheSeedsAdamStateAndSaysHowLittleThatSaves) {
  Config c;  // the seed's model: 134,657 parameters, Adam: 2 x 4 B each = 1.03 MiB of state
  const auto plan = plan_ablations(c, 3);
  const Ablation* zero1 = find(plan, "strategy=ddp_zero1");
  ASSERT_NE(zero1, nullptr);
  EXPECT_TRUE(zero1->multi_device_only);
  EXPECT_NE(zero1->description.find("0.34 MiB per rank at 3 devices instead of 1.03 MiB"), std::string::npos)
      << zero1->description;
  Config applied = c;
  zero1->apply(applied);
  EXPECT_EQ(applied.trainer.strategy, Strategy::kDdpZero1);
  EXPECT_EQ(find(plan_ablations(c, 1), "strategy=ddp_zero1"), nullptr);  // one device: nothing to shard across
}

TEST(AblationPlan, PlainSgdHasNoStateToShard) {
  Config c;
  c.optimizer.kind = OptimizerKind::kSgd;
  EXPECT_EQ(find(plan_ablations(c, 2), "strategy=ddp_zero1"), nullptr);
  c.optimizer.momentum = 0.9;
  EXPECT_NE(find(plan_ablations(c, 2), "strategy=ddp_zero1"), nullptr);
}

TEST(AblationPlan, AZero1ConfigurationIsAblatedAgainstPlainDdpAndNeverWithSyncOrOverlapChanges) {
  Config c;
  c.trainer.strategy = Strategy::kDdpZero1;
  c.trainer.accumulate_grad_batches = 3;
  const auto plan = plan_ablations(c, 3);
  const Ablation* ddp = find(plan, "strategy=ddp");
  ASSERT_NE(ddp, nullptr);
  EXPECT_FALSE(ddp->habit.empty());
  EXPECT_EQ(ddp->phase, Phase::kCommWait);
  for (const char* refused : {"sync-every-micro-batch", "no-overlap", "strategy=ddp_zero1"}) {
    EXPECT_EQ(find(plan, refused), nullptr) << refused;
  }
}

TEST(AblationPlan, SyncingEveryMicroBatchIsNotCombinedWithZero1) {
  Config c;
  c.trainer.accumulate_grad_batches = 3;
  c.trainer.sync_every_micro_batch = true;  // --strategy ddp_zero1 refuses it
  EXPECT_EQ(find(plan_ablations(c, 3), "strategy=ddp_zero1"), nullptr);
}

TEST(AblationPlan, OneGpuAblatesTheProbeTheGraphThePrecisionAndTheSizesAndNothingOfACpu) {
  Config c;
  c.trainer.accelerator = Accelerator::kCuda;
  c.trainer.monitor_mode = MonitorMode::kPerStep;
  const auto plan = plan_ablations(c, 1);
  for (const char* planned :
       {"monitor-background", "no-cuda-graph", "precision=tf32", "precision=bf16-mixed", "batch=1024", "width=1024"}) {
    EXPECT_NE(find(plan, planned), nullptr) << planned;
  }
  for (const char* refused : {"loader-workers=1", "strategy=ddp_zero1", "precision=32-true", "cuda-graph"}) {
    EXPECT_EQ(find(plan, refused), nullptr) << refused;
  }
  for (const Ablation& a : plan) {
    EXPECT_FALSE(a.multi_device_only) << a.name;  // one GPU: nothing to ablate across devices
    EXPECT_EQ(a.name.find("threads"), std::string::npos) << a.name;
  }
  Config applied = c;
  find(plan, "precision=tf32")->apply(applied);
  EXPECT_EQ(applied.trainer.precision, Precision::kTf32);
  find(plan, "precision=bf16-mixed")->apply(applied);
  EXPECT_EQ(applied.trainer.precision, Precision::kBf16Mixed);
  // A bf16 run ablates back to fp32, and not to itself.
  c.trainer.precision = Precision::kBf16Mixed;
  EXPECT_NE(find(plan_ablations(c, 1), "precision=32-true"), nullptr);
  EXPECT_EQ(find(plan_ablations(c, 1), "precision=bf16-mixed"), nullptr);
}

TEST(AblationPlan, EagerLaunchesAreAHabitSpreadOverEveryPhase) {
  Config c;
  c.trainer.accelerator = Accelerator::kCuda;
  c.trainer.no_cuda_graph = true;
  const auto plan = plan_ablations(c, 1);
  const Ablation* graph = find(plan, "cuda-graph");
  ASSERT_NE(graph, nullptr);
  EXPECT_FALSE(graph->habit.empty());
  EXPECT_FALSE(graph->phase);  // charged its difference in wall time, start-up aside
  Config applied = c;
  graph->apply(applied);
  EXPECT_FALSE(applied.trainer.no_cuda_graph);
  EXPECT_EQ(find(plan, "no-cuda-graph"), nullptr);
}

}  // namespace
}  // namespace ddp
