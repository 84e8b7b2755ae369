#include "doctor/findings_straggler.h"

#include <fmt/format.h>

#include <algorithm>

namespace ddp {
namespace {

// The largest multi-device run when it ran and names a straggler worth a finding.
const RunRecord* straggler_run(const FindingInputs& in) {
  if (in.device_runs.empty()) return nullptr;
  const RunRecord& run = *in.device_runs.back();
  if (!run.ok || run.devices < 2 || run.summary.wall_seconds <= 0) return nullptr;
  const ArrivalSummary& a = run.summary.arrivals;
  if (!a.straggler || a.steps <= 0) return nullptr;
  return &run;
}

// What each other rank waited for the straggler per step: its caused wait is summed over them.
double wait_per_rank_per_step(const RunRecord& run) {
  const Straggler& s = *run.summary.arrivals.straggler;
  return s.cost_seconds_per_step / static_cast<double>(run.summary.arrivals.per_rank.size() - 1);
}

double share_of_wall(const RunRecord& run) {
  return wait_per_rank_per_step(run) * static_cast<double>(run.summary.arrivals.steps) / run.summary.wall_seconds;
}

// The largest value of `of` over the ranks other than `rank`.
template <typename T, typename F>
double max_of_others(const std::vector<T>& per_rank, int rank, F of) {
  double most = 0;
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    if (static_cast<int>(r) != rank) most = std::max(most, of(per_rank[r]));
  }
  return most;
}

// Why `rank` was late, from what it saw against the others; `cost` is the others' total wait.
StragglerCause cause_of(const RunRecord& run, int rank, double cost) {
  const RunSummary& s = run.summary;
  std::vector<std::string> why;
  std::vector<std::string> fix;
  if (s.sched_per_rank.size() == s.phases_per_rank.size() && static_cast<std::size_t>(rank) < s.sched_per_rank.size()) {
    const SchedDelta& mine = s.sched_per_rank[rank];
    const double others = max_of_others(s.sched_per_rank, rank, [](const SchedDelta& d) { return d.wait_share; });
    if (mine.wait_share >= kCoreWaitMinShare && mine.wait_share >= others + kCoreWaitMinExcess) {
      const std::string cores =
          static_cast<std::size_t>(rank) < s.cores_per_rank.size() && !s.cores_per_rank[rank].empty()
              ? fmt::format(" (core {})", fmt::join(s.cores_per_rank[rank], ", "))
              : "";
      why.push_back(fmt::format(
          "rank {} waited {:.0f} % of its time for its core{} against at most {:.0f} % on the others, with {} "
          "involuntary context switches: another process shares it",
          rank, 100 * mine.wait_share, cores, 100 * others, mine.involuntary_switches));
      fix.push_back(fmt::format(
          "Find what else runs on rank {}'s core{} (ps -eLo psr,pid,comm | sort -n) and move it elsewhere, or bind "
          "the ranks to idle cores (mpirun --bind-to core --cpu-set).",
          rank, cores));
    }
    const double others_steal =
        max_of_others(s.sched_per_rank, rank, [](const SchedDelta& d) { return d.steal_seconds.value_or(0.0); });
    if (mine.steal_seconds && *mine.steal_seconds - others_steal >= kCauseMinExplained * cost) {
      why.push_back(fmt::format("the hypervisor gave its core to another guest for {:.2f} s", *mine.steal_seconds));
      fix.push_back(
          "Steal is the host's, not this machine's: use dedicated or less overcommitted instances, or move that "
          "rank to another host.");
    }
  }
  if (!why.empty()) return {fmt::format("{}.", fmt::join(why, "; ")), fmt::format("{}", fmt::join(fix, " "))};

  const auto data = [](const PhaseSeconds& p) { return p[static_cast<std::size_t>(Phase::kData)]; };
  const double my_data = data(s.phases_per_rank[rank]);
  const double others_data = max_of_others(s.phases_per_rank, rank, data);
  if (my_data - others_data >= kCauseMinExplained * cost) {
    return {fmt::format("It waited for its loader: its data phase took {:.3f} s against at most {:.3f} s on the "
                        "others.",
                        my_data, others_data),
            "Give its loader more workers (--num-workers) or faster storage, and check that rank's shard of the data "
            "(larger or slower to read than the others')."};
  }
  const auto compute = [](const PhaseSeconds& p) {
    return p[static_cast<std::size_t>(Phase::kForward)] + p[static_cast<std::size_t>(Phase::kBackward)] +
           p[static_cast<std::size_t>(Phase::kOptimizer)];
  };
  // What was ruled out: a trace (ddpscope analyze) has no scheduler statistics to rule out a shared core.
  const bool sched_known = s.sched_per_rank.size() == s.phases_per_rank.size();
  return {fmt::format("Its own compute was slower ({}): forward, backward and optimizer took {:.3f} s on it against at "
                      "most {:.3f} s on the others.",
                      sched_known ? "no wait for its core, no steal, no loader wait"
                                  : "no loader wait; whether its core was shared is not in the record",
                      compute(s.phases_per_rank[rank]), max_of_others(s.phases_per_rank, rank, compute)),
          "Check that rank's core (clock, thermal throttling, memory placement: numactl --hardware) and its data; "
          "a slower machine holds every rank at its pace. On a shared virtual machine a core can be slower in one "
          "run and not the next (a busy sibling hyperthread on the host is not counted as steal): repeat the run "
          "(doctor --repeats) to see whether the same rank is slow each time.",
          false};
}

// The core-seconds that processes other than the ranks took on the run's hosts.
double others_core_seconds(const RunSummary& s) {
  double total = 0;
  for (const HostLoad& host : s.host_load) total += host.others_core_seconds();
  return total;
}

}  // namespace

std::optional<int> arrival_straggler_rank(const FindingInputs& in) {
  const RunRecord* run = straggler_run(in);
  if (run == nullptr || share_of_wall(*run) <= kArrivalStragglerMinShare) return std::nullopt;
  return run->summary.arrivals.straggler->rank;
}

void straggler_findings(const FindingInputs& in, std::vector<Finding>& out,
                        const std::optional<StragglerCause>& known) {
  const std::optional<int> rank = arrival_straggler_rank(in);
  if (!rank) return;
  const RunRecord& run = *straggler_run(in);
  const Straggler& s = *run.summary.arrivals.straggler;
  const double share = share_of_wall(run);
  const double cost = wait_per_rank_per_step(run) * static_cast<double>(run.summary.arrivals.steps);
  const StragglerCause cause = known ? *known : cause_of(run, *rank, cost);
  // A rank whose compute was merely slower, on hosts where other processes took at least the
  // time the others waited, may have been theirs to slow: no evidence against the rank (seen in
  // one of two clean doctor runs here: 0.025 s waited, 0.03 core-seconds taken by others).
  if (!cause.measured && others_core_seconds(run.summary) >= cost) return;
  Finding f;
  f.title = fmt::format(
      "Rank {} holds the others back: they wait {:.2f} ms per step for it ({:.0f} % of the run), arriving last "
      "at {:.0f} % of the collectives",
      *rank, 1e3 * wait_per_rank_per_step(run), 100 * share, 100 * s.last_share);
  f.detail = fmt::format(
      "In {}, over {} synchronising steps, rank {} started its gradient allreduces last {:.0f} % of the time, "
      "{:.2f} ms after the others on average. {}",
      run.label, run.summary.arrivals.steps, *rank, 100 * s.last_share, 1e3 * s.late_seconds, cause.why);
  f.cost_seconds = share * run.wall_seconds;
  f.share_of_wall = share;
  f.evidence = {run.label};
  f.fix = cause.fix;
  out.push_back(std::move(f));
}

}  // namespace ddp
