#include "analyze/trace_analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "doctor/findings_straggler.h"

namespace ddp {
namespace {

std::size_t index(StepPart part) { return static_cast<std::size_t>(part); }

RankBreakdown breakdown(const TracedRank& r) {
  RankBreakdown b;
  b.rank = r.rank;
  b.path = r.path;
  b.steps = static_cast<int64_t>(r.steps.steps.size());
  if (b.steps == 0) return b;
  for (const TraceStep& s : r.steps.steps) {
    b.step_ms += static_cast<double>(s.duration_ns) / 1e6;
    for (std::size_t p = 0; p < kStepPartCount; ++p) b.part_ms[p] += static_cast<double>(s.part_ns[p]) / 1e6;
  }
  const double n = static_cast<double>(b.steps);
  b.step_ms /= n;
  for (double& ms : b.part_ms) ms /= n;
  double squares = 0;
  std::array<double, kStepPartCount> part_squares{};
  for (const TraceStep& s : r.steps.steps) {
    squares += std::pow(static_cast<double>(s.duration_ns) / 1e6 - b.step_ms, 2);
    for (std::size_t p = 0; p < kStepPartCount; ++p) {
      part_squares[p] += std::pow(static_cast<double>(s.part_ns[p]) / 1e6 - b.part_ms[p], 2);
    }
  }
  if (b.steps > 1) {
    b.step_ms_stddev = std::sqrt(squares / (n - 1));
    for (std::size_t p = 0; p < kStepPartCount; ++p) b.part_ms_stddev[p] = std::sqrt(part_squares[p] / (n - 1));
  }
  b.syncs = syncs_of(r.steps);
  return b;
}

// The doctor's phases from a step's parts: what no doctor phase names goes to "other".
Phase phase_of(StepPart part) {
  switch (part) {
    case StepPart::kData:
      return Phase::kData;
    case StepPart::kForward:
      return Phase::kForward;
    case StepPart::kBackward:
      return Phase::kBackward;
    case StepPart::kCommWait:
      return Phase::kCommWait;
    case StepPart::kOptimizer:
      return Phase::kOptimizer;
    case StepPart::kValidation:
      return Phase::kValidation;
    default:
      return Phase::kOther;
  }
}

RunRecord record_of(const TraceAnalysis& a) {
  RunRecord run;
  run.label = "the traces";
  run.devices = a.job.world_size;
  run.ok = true;
  RunSummary& s = run.summary;
  s.world_size = static_cast<int>(a.ranks.size());
  s.accelerator = a.job.ranks.front().steps.on_gpu ? Accelerator::kCuda : Accelerator::kCpu;
  s.strategy = a.ranks.size() > 1 ? Strategy::kDdp : Strategy::kSingle;
  if (const auto said = from_spelling<GradientTransport>(a.job.backend))
    s.gradient_transport = *said;
  else
    s.gradient_transport = a.ranks.size() > 1 ? GradientTransport::kUnknown : GradientTransport::kNone;
  double wall = 0;
  for (const RankBreakdown& b : a.ranks) {
    PhaseSeconds phases{};
    for (std::size_t p = 0; p < kStepPartCount; ++p) {
      phases[static_cast<std::size_t>(phase_of(static_cast<StepPart>(p)))] +=
          b.part_ms[p] * static_cast<double>(b.steps) / 1e3;
    }
    s.phases_per_rank.push_back(phases);
    wall += b.step_ms * static_cast<double>(b.steps) / 1e3;
  }
  s.wall_seconds = wall / static_cast<double>(a.ranks.size());
  s.optimizer_steps_run = a.ranks.front().steps;
  s.optimizer_steps = s.optimizer_steps_run;
  run.wall_seconds = s.wall_seconds;
  if (a.collectives) {
    s.arrivals.collectives = a.collectives->matched;
    s.arrivals.steps = a.collectives->steps;
    s.arrivals.per_rank = a.collectives->lags.ranks;
    s.arrivals.straggler = a.collectives->straggler;
  }
  return run;
}

// Twice the standard error of the difference between two ranks' mean time in one part: a
// difference below it is within what that part's own step-to-step variation gives (a rank
// descheduled in a few steps raises its mean, and this noise with it).
double part_noise_ms(const RankBreakdown& a, const RankBreakdown& b, std::size_t part) {
  const auto variance_of_mean = [part](const RankBreakdown& r) {
    return r.steps > 1 ? r.part_ms_stddev[part] * r.part_ms_stddev[part] / static_cast<double>(r.steps) : 0.0;
  };
  return 2 * std::sqrt(variance_of_mean(a) + variance_of_mean(b));
}

// The part the straggler spends longest in beyond every other rank (collective waits aside),
// among those where that excess is above the part's noise and `floor_ms`.
std::optional<SlowPart> slowest_part(const std::vector<RankBreakdown>& ranks, std::size_t straggler, double floor_ms) {
  std::optional<SlowPart> best;
  for (std::size_t p = 0; p < kStepPartCount; ++p) {
    if (static_cast<StepPart>(p) == StepPart::kCommWait) continue;
    std::optional<std::size_t> other;  // the slowest other rank in this part
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      if (r != straggler && (!other || ranks[r].part_ms[p] > ranks[*other].part_ms[p])) other = r;
    }
    if (!other) continue;
    const double excess = ranks[straggler].part_ms[p] - ranks[*other].part_ms[p];
    if (excess <= std::max(part_noise_ms(ranks[straggler], ranks[*other], p), floor_ms)) continue;
    if (!best || excess > best->excess_ms_per_step) best = SlowPart{static_cast<StepPart>(p), excess};
  }
  return best;
}

// A part whose mean share of the step, over the ranks, is above its threshold. `less_ms` per
// rank is taken off first (for communication: the wait for a late rank, which is the
// straggler's cost, not the link's).
void part_finding(const TraceAnalysis& a, StepPart part, double min_share, const std::string& what,
                  const std::string& fix, std::vector<Finding>& out, const std::vector<double>& less_ms = {}) {
  double ms = 0, step = 0;
  for (std::size_t r = 0; r < a.ranks.size(); ++r) {
    ms += std::max(0.0, a.ranks[r].part_ms[index(part)] - (r < less_ms.size() ? less_ms[r] : 0.0));
    step += a.ranks[r].step_ms;
  }
  if (step <= 0 || ms / step < min_share) return;
  const double n = static_cast<double>(a.ranks.size());
  Finding f;
  f.title = fmt::format("{}: {:.2f} ms per step, {:.0f} % of the step", what, ms / n, 100 * ms / step);
  f.share_of_wall = ms / step;
  f.cost_seconds = f.share_of_wall * a.record.wall_seconds;
  f.evidence = {a.record.label};
  f.fix = fix;
  out.push_back(std::move(f));
}

JobSyncs job_syncs(const TraceAnalysis& a) {
  JobSyncs job;
  RankSyncs& m = job.mean;
  for (const RankBreakdown& b : a.ranks) {
    m.forward_passes += b.syncs.forward_passes;
    m.gradient_calls += b.syncs.gradient_calls;
    m.gradient_syncs += b.syncs.gradient_syncs;
    m.other_calls += b.syncs.other_calls;
    m.gradient_ms += b.syncs.gradient_ms;
    m.other_ms += b.syncs.other_ms;
    job.step_ms += b.step_ms;
  }
  const double n = static_cast<double>(a.ranks.size());
  for (double* x : {&m.forward_passes, &m.gradient_calls, &m.gradient_syncs, &m.other_calls, &m.gradient_ms,
                    &m.other_ms, &job.step_ms})
    *x /= n;
  m.other_name = a.ranks.front().syncs.other_name;
  job.gradient_cost_ms = m.gradient_ms;
  job.other_cost_ms = m.other_ms;
  if (a.collectives && a.collectives->matched > 0 && a.collectives->steps > 0) {
    const CollectiveMatch& c = *a.collectives;
    job.gradient_cost_ms = job.other_cost_ms = 0;
    for (std::size_t i = 0; i < c.transfer_ns.size(); ++i) {
      const double ms = static_cast<double>(c.transfer_ns[i]) / 1e6 / static_cast<double>(c.steps);
      if (c.origin[i] == CollectiveOrigin::kGradient) job.gradient_cost_ms += ms;
      if (c.origin[i] == CollectiveOrigin::kOther) job.other_cost_ms += ms;
    }
  }
  return job;
}

std::vector<Finding> findings_of(const TraceAnalysis& a) {
  std::vector<Finding> out;
  // The doctor's straggler finding names ranks by position: only where that is their number.
  bool numbered_from_zero = true;
  for (std::size_t i = 0; i < a.ranks.size(); ++i) numbered_from_zero &= a.ranks[i].rank == static_cast<int>(i);
  if (numbered_from_zero && a.straggler_part) straggler_findings({{&a.record}, {}, {}, {}}, out);
  part_finding(a, StepPart::kPython, kPythonMinShare, "Plain Python inside the step, outside any framework op",
               "Move per-step work that is not training out of the step (a GPU utilization probe such as "
               "pynvml's init/query/shutdown, printing, metric bookkeeping), or do it every N steps.",
               out);
  part_finding(a, StepPart::kData, kDataMinShare, "The step waits for its input",
               "Load data in worker processes (DataLoader num_workers > 0, pin_memory on GPUs, persistent_workers), "
               "or prepare it once before training.",
               out);
  part_finding(a, StepPart::kCommWait, kCommExposedMinShare, "Communication not hidden behind compute",
               "Give each device more work per synchronisation: a larger per-device batch, or gradient accumulation "
               "with DDP's no_sync() on all but the last micro-batch; fewer, larger buckets (bucket_cap_mb) where "
               "there are many small collectives.",
               out, a.collectives ? a.collectives->wait_ms_per_step : std::vector<double>{});
  part_finding(a, StepPart::kLaunch, kLaunchMinShare, "The GPU waits for its host to launch work",
               "The host cannot launch kernels as fast as the GPU runs them: more work per kernel (a larger "
               "per-device batch), fewer kernels (torch.compile, fused optimizers: foreach or fused=True), or the "
               "whole step as one CUDA graph (torch.compile mode=\"reduce-overhead\", torch.cuda.graphs).",
               out);
  sync_findings(job_syncs(a), a.record.wall_seconds, a.record.label, out);
  std::stable_sort(out.begin(), out.end(),
                   [](const Finding& x, const Finding& y) { return x.cost_seconds > y.cost_seconds; });
  return out;
}

}  // namespace

TraceAnalysis analyze_job(TraceJob job, const std::vector<TracedScale>& others) {
  TraceAnalysis a;
  a.job = std::move(job);
  a.notes = a.job.notes;
  for (const TracedRank& r : a.job.ranks) {
    a.ranks.push_back(breakdown(r));
    const RankSteps& s = r.steps;
    if (s.dropped_warmup + s.dropped_partial > 0) {
      a.notes.push_back(
          fmt::format("rank {}: {} steps analysed ({}), {} dropped as warm-up and {} as cut by the "
                      "profile's end",
                      r.rank, s.steps.size(), s.step_source, s.dropped_warmup, s.dropped_partial));
    }
  }
  if (a.job.ranks.size() >= 2) {
    std::vector<const RankSteps*> steps;
    for (const TracedRank& r : a.job.ranks) steps.push_back(&r.steps);
    a.collectives = match_collectives(steps);
    a.notes.insert(a.notes.end(), a.collectives->notes.begin(), a.collectives->notes.end());
    if (a.collectives->matched == 0)
      a.notes.push_back("no collective matched across the ranks: no straggler can be told");
  }
  a.record = record_of(a);
  // The arrival rule indexes ranks in the order of the traces: position i is a.ranks[i]. A
  // straggler is named only where some part of its step is slower than the others' by more
  // than that part's noise and than the doctor's floor share of the step: ranks sharing cores
  // wait for each other at random, and a balanced job's ranks differ by a few per cent.
  if (const std::optional<int> i = arrival_straggler_rank({{&a.record}, {}, {}, {}})) {
    const RankBreakdown& rank = a.ranks[static_cast<std::size_t>(*i)];
    const double floor = kStragglerMinShare * rank.step_ms;
    a.straggler_part = slowest_part(a.ranks, static_cast<std::size_t>(*i), floor);
    if (!a.straggler_part) {
      a.notes.push_back(fmt::format(
          "rank {} waited least at the collectives, but no part of its step is slower than the others' by more "
          "than twice the standard error of the difference over the steps and {:.0f} % of its step ({:.3f} ms): "
          "no straggler",
          rank.rank, 100 * kStragglerMinShare, floor));
    }
  }
  a.findings = findings_of(a);
  // Two of the doctor's findings need what no trace holds: said, so that silence is not read
  // as their absence.
  if (!a.ranks.empty() && !a.job.ranks.front().steps.on_gpu) {
    a.notes.push_back(
        "thread oversubscription not judged: a trace records neither the threads each rank asked for "
        "(torch.get_num_threads()) nor the host's cores; their product over a host's ranks should not "
        "exceed its cores");
  }
  a.notes.push_back(
      "start-up not judged: the profiler's window opens after the processes and the process "
      "group have started");
  a.prediction = predict_from_traces(a, a.no_prediction, others);
  return a;
}

}  // namespace ddp
