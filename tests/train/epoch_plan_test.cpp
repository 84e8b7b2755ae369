// The one epoch plan: micro-batches, optimizer steps, --limit-train-batches, max_steps.
#include "train/loop/epoch_plan.h"

#include <gtest/gtest.h>

namespace ddp {
namespace {

TEST(EpochPlan, TheSeedTakesTwentyMicroBatchesAndSevenStepsOnOneRank) {
  const EpochPlan plan = plan_epoch(samples_per_rank(5000, 1), 256, {}, 3);
  EXPECT_EQ(plan.full_batches, 20);
  EXPECT_EQ(plan.micro_batches, 20);
  EXPECT_EQ(plan.optimizer_steps, 7);  // steps at 3, 6, ..., 18 and the last batch
}

TEST(EpochPlan, ThreeRanksShareTheEpochWithPadding) {
  EXPECT_EQ(samples_per_rank(5000, 3), 1667);  // DistributedSampler pads 5000 to 5001
  const EpochPlan plan = plan_epoch(samples_per_rank(5000, 3), 256, {}, 3);
  EXPECT_EQ(plan.micro_batches, 7);
  EXPECT_EQ(plan.optimizer_steps, 3);
}

TEST(EpochPlan, LimitIsACountOrAFractionOfAtLeastOneBatch) {
  EXPECT_EQ(plan_epoch(100, 16, {.count = 3}, 1).micro_batches, 3);
  EXPECT_EQ(plan_epoch(100, 16, {.count = 30}, 1).micro_batches, 7);      // never more than the epoch
  EXPECT_EQ(plan_epoch(100, 16, {.fraction = 0.5}, 1).micro_batches, 3);  // floor(7 * 0.5)
  EXPECT_EQ(plan_epoch(100, 16, {.fraction = 0.01}, 1).micro_batches, 1);
  EXPECT_EQ(plan_epoch(100, 16, {.fraction = 0.5}, 2).optimizer_steps, 2);
}

TEST(EpochPlan, TheOptimizerStepsOnEveryKthAndTheLastMicroBatch) {
  std::vector<int64_t> steps;
  for (int64_t i = 0; i < 7; ++i) {
    if (steps_optimizer(i, 7, 3)) steps.push_back(i);
  }
  EXPECT_EQ(steps, (std::vector<int64_t>{2, 5, 6}));
}

TEST(EpochPlan, EachStepsMicroBatchSizesEndWithTheEpochsShortBatch) {
  using Steps = std::vector<std::vector<int64_t>>;
  const Steps seed = step_micro_batch_sizes(5000, 256, plan_epoch(5000, 256, {}, 3), 3);
  ASSERT_EQ(seed.size(), 7u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(seed[i], (std::vector<int64_t>{256, 256, 256})) << "step " << i;
  EXPECT_EQ(seed[6], (std::vector<int64_t>{256, 136}));
  EXPECT_EQ(step_micro_batch_sizes(100, 16, plan_epoch(100, 16, {.count = 3}, 2), 2),
            (Steps{{16, 16}, {16}}));  // a limit ends the epoch before its short batch
  EXPECT_EQ(step_micro_batch_sizes(32, 16, plan_epoch(32, 16, {}, 1), 1), (Steps{{16}, {16}}));
  EXPECT_TRUE(step_micro_batch_sizes(0, 16, plan_epoch(0, 16, {}, 1), 1).empty());
}

TEST(EpochPlan, MaxStepsShortensTheEpochsToRun) {
  const EpochPlan plan = plan_epoch(5000, 256, {}, 3);  // 7 steps per epoch
  EXPECT_EQ(epochs_to_run(200, -1, plan), 200);
  EXPECT_EQ(epochs_to_run(200, 15, plan), 3);
  EXPECT_EQ(epochs_to_run(2, 15, plan), 2);
  EXPECT_EQ(epochs_to_run(-1, 14, plan), 2);
}

}  // namespace
}  // namespace ddp
