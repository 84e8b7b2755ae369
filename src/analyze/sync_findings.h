#pragma once
// What a rank's collectives say about how its steps synchronise: DDP's gradient
// synchronisation against the training code's own collectives, and how many of a step's
// micro-batches synchronised gradients. Two findings come of it: collectives outside the
// gradient synchronisation (a metric reduced each step), and gradient accumulation without
// DDP's no_sync (every micro-batch's backward synchronising).
#include <string>
#include <vector>

#include "analyze/rank_steps.h"
#include "doctor/findings.h"

namespace ddp {

// Shares of the step below which neither finding is made (docs/scaling-guide.md).
inline constexpr double kExtraCollectiveMinShare = 0.02;
inline constexpr double kUnsyncedAccumulationMinShare = 0.02;

// Means per step over one rank's steps.
struct RankSyncs {
  double forward_passes = 0;  // micro-batches, where the trace marks forward passes
  double gradient_calls = 0;  // collectives launched inside backward
  double gradient_syncs = 0;  // micro-batches whose backward launched any of them
  double other_calls = 0;     // collectives launched outside backward
  double gradient_ms = 0;     // their time on this rank (transfer and waiting)
  double other_ms = 0;
  std::string other_name;  // the commonest collective outside backward
};

RankSyncs syncs_of(const RankSteps& steps);

// The job's means per step over its ranks, and what each kind of collective costs a step:
// with two or more ranks matched, its transfer (the shortest duration over the ranks: a late
// rank's waiting would move to the next synchronisation, not go away); with one rank, its
// duration.
struct JobSyncs {
  RankSyncs mean;
  double step_ms = 0;
  double gradient_cost_ms = 0;
  double other_cost_ms = 0;
  double other_cost_noise_ms = 0;  // twice the standard error of other_cost_ms, where known
};

// Appends the two findings where they hold (the training code's own collectives where their cost
// less its noise is above the threshold); `wall_seconds` prices a share of the step.
void sync_findings(const JobSyncs& job, double wall_seconds, const std::string& evidence, std::vector<Finding>& out);

}  // namespace ddp
