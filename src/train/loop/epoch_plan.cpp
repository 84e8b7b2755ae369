#include "train/loop/epoch_plan.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "base/ceil_div.h"
#include "base/check.h"
#include "ddpscope/error.h"

namespace ddp {

int64_t samples_per_rank(int64_t dataset_size, int world_size) {
  DDP_CHECK_GE(dataset_size, 0);
  DDP_CHECK_GT(world_size, 0);
  return ceil_div(dataset_size, world_size);
}

EpochPlan plan_epoch(int64_t rank_samples, int64_t batch_size, BatchLimit limit, int64_t accumulate) {
  DDP_CHECK_GE(rank_samples, 0);
  DDP_CHECK_GT(batch_size, 0);
  DDP_CHECK_GT(accumulate, 0);
  EpochPlan plan;
  plan.full_batches = ceil_div(rank_samples, batch_size);
  // Compared as doubles: a count near 2^63 does not convert back to int64_t.
  const double limited =
      limit.count ? static_cast<double>(*limit.count) : std::max(1.0, std::floor(plan.full_batches * limit.fraction));
  plan.micro_batches =
      limited >= static_cast<double>(plan.full_batches) ? plan.full_batches : static_cast<int64_t>(limited);
  plan.optimizer_steps = ceil_div(plan.micro_batches, accumulate);
  return plan;
}

std::vector<std::vector<int64_t>> step_micro_batch_sizes(int64_t rank_samples, int64_t batch_size,
                                                         const EpochPlan& plan, int64_t accumulate) {
  std::vector<std::vector<int64_t>> steps;
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < plan.micro_batches; ++i) {
    sizes.push_back(std::min(batch_size, rank_samples - i * batch_size));
    if (steps_optimizer(i, plan.micro_batches, accumulate)) steps.push_back(std::exchange(sizes, {}));
  }
  return steps;
}

int64_t epochs_to_run(int64_t max_epochs, int64_t max_steps, const EpochPlan& plan) {
  if (max_steps <= 0 || plan.optimizer_steps == 0) return max_epochs;
  const int64_t needed = ceil_div(max_steps, plan.optimizer_steps);
  return max_epochs < 0 ? needed : std::min(max_epochs, needed);
}

}  // namespace ddp
