#pragma once
// How many micro-batches and optimizer steps one rank's epoch has: the one place that
// applies DistributedSampler's sharding, --limit-train-batches and Lightning's stepping rule
// (every accumulate-th micro-batch and the epoch's last). Plain functions of plain values,
// for the trainer's loop, the trace's sizing and the doctor's workload counts alike.
#include <cstdint>
#include <vector>

#include "ddpscope/config.h"

namespace ddp {

struct EpochPlan {
  int64_t full_batches = 0;     // of the rank's samples, before the limit
  int64_t micro_batches = 0;    // what the epoch runs: min(full, limit)
  int64_t optimizer_steps = 0;  // ceil(micro_batches / accumulate)
};

// DistributedSampler(drop_last=False): every rank gets ceil(n / W) samples, padded.
int64_t samples_per_rank(int64_t dataset_size, int world_size);

EpochPlan plan_epoch(int64_t rank_samples, int64_t batch_size, BatchLimit limit, int64_t accumulate);

// Lightning steps the optimizer on every accumulate-th micro-batch and on the last one.
inline bool steps_optimizer(int64_t micro_batch, int64_t micro_batches, int64_t accumulate) {
  return (micro_batch + 1) % accumulate == 0 || micro_batch + 1 == micro_batches;
}

// Each optimizer step's micro-batch sizes over the plan's micro-batches of rank_samples,
// batch_size at a time (the epoch's last micro-batch may be short): the shapes a GPU step is
// captured for. The seed on one GPU: 6 steps of {256, 256, 256}, then {256, 136}.
std::vector<std::vector<int64_t>> step_micro_batch_sizes(int64_t rank_samples, int64_t batch_size,
                                                         const EpochPlan& plan, int64_t accumulate);

// The epochs a run reaches: max_epochs (-1: no limit), or fewer when max_steps (> 0) ends
// it first. -1 only when neither limits the run.
int64_t epochs_to_run(int64_t max_epochs, int64_t max_steps, const EpochPlan& plan);

}  // namespace ddp
