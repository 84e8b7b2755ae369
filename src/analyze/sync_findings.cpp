#include "analyze/sync_findings.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace ddp {

RankSyncs syncs_of(const RankSteps& r) {
  RankSyncs s;
  if (r.steps.empty()) return s;
  std::map<std::string, int> other_names;
  std::set<std::pair<std::size_t, int>> synced;  // (step, micro-batch)
  for (const CollectiveCall& c : r.collectives) {
    const double ms = static_cast<double>(c.duration_ns) / 1e6;
    if (c.origin == CollectiveOrigin::kGradient) {
      s.gradient_calls += 1;
      s.gradient_ms += ms;
      synced.insert({c.step, c.after_forward});
    } else if (c.origin == CollectiveOrigin::kOther) {
      s.other_calls += 1;
      s.other_ms += ms;
      ++other_names[c.name];
    }
  }
  for (const TraceStep& step : r.steps) s.forward_passes += step.forward_passes;
  s.gradient_syncs = static_cast<double>(synced.size());
  const double n = static_cast<double>(r.steps.size());
  for (double* mean :
       {&s.forward_passes, &s.gradient_calls, &s.gradient_syncs, &s.other_calls, &s.gradient_ms, &s.other_ms})
    *mean /= n;
  int most = 0;
  for (const auto& [name, count] : other_names) {
    if (count > most) std::tie(s.other_name, most) = std::tie(name, count);
  }
  return s;
}

void sync_findings(const JobSyncs& job, double wall_seconds, const std::string& evidence, std::vector<Finding>& out) {
  const RankSyncs& mean = job.mean;
  if (job.step_ms <= 0) return;
  const auto add = [&](double ms, std::string title, std::string fix) {
    Finding f;
    f.title = std::move(title);
    f.share_of_wall = ms / job.step_ms;
    f.cost_seconds = f.share_of_wall * wall_seconds;
    f.evidence = {evidence};
    f.fix = std::move(fix);
    out.push_back(std::move(f));
  };
  // Half a collective per step or more: a per-step habit, not a one-off (a checkpoint's barrier).
  if (mean.other_calls >= 0.5 &&
      (job.other_cost_ms - job.other_cost_noise_ms) / job.step_ms >= kExtraCollectiveMinShare) {
    add(job.other_cost_ms,
        fmt::format("Collectives outside the gradient synchronisation: {:.1f} per step ({}), {:.2f} ms per step{}, "
                    "{:.0f} % of the step",
                    mean.other_calls, mean.other_name.empty() ? "unnamed" : mean.other_name, job.other_cost_ms,
                    job.other_cost_noise_ms > 0 ? fmt::format(" (±{:.2f})", job.other_cost_noise_ms) : "",
                    100 * job.other_cost_ms / job.step_ms),
        std::string("Each one stops every rank until all arrive. Reduce metrics for logging every N steps or once "
                    "per epoch (Lightning: self.log(..., sync_dist=False) in training_step, sync_dist=True only for "
                    "epoch-level metrics), and keep barriers and broadcasts out of the step.") +
            (mean.other_name.find("broadcast") != std::string::npos
                 ? " A broadcast after each batch in a Lightning job is Lightning's own SIGTERM check "
                   "(_broadcast_sigterm_tensor, Lightning-AI/pytorch-lightning#21487), not your code."
                 : ""));
  }
  // Gradients synchronised after more than one micro-batch of a step: each backward but the
  // last reduced gradients that the next micro-batch changes again.
  if (mean.forward_passes >= 2 && mean.gradient_syncs >= 1.5) {
    const double wasted_ms = job.gradient_cost_ms * (mean.gradient_syncs - 1) / mean.gradient_syncs;
    if (wasted_ms / job.step_ms >= kUnsyncedAccumulationMinShare) {
      add(wasted_ms,
          fmt::format("Gradient accumulation without no_sync: gradients synchronised after {:.1f} of {:.1f} "
                      "micro-batches per step, {:.2f} ms per step spent on all but the last, {:.0f} % of the step",
                      mean.gradient_syncs, mean.forward_passes, wasted_ms, 100 * wasted_ms / job.step_ms),
          "Only the last micro-batch's gradients need synchronising: run the others' forward and backward "
          "inside `with model.no_sync():` (DistributedDataParallel). Lightning's accumulate_grad_batches does "
          "this for you.");
    }
  }
}

}  // namespace ddp
