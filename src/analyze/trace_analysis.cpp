#include "analyze/trace_analysis.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "doctor/findings_straggler.h"
#include "doctor/ranks_shown.h"
#include "train/records/gather_arrivals.h"

namespace ddp {
namespace {

std::size_t index(Phase part) { return static_cast<std::size_t>(part); }

RankBreakdown breakdown(const TracedRank& r) {
  RankBreakdown b;
  b.rank = r.rank;
  b.path = r.path;
  b.steps = static_cast<int64_t>(r.steps.steps.size());
  if (b.steps == 0) return b;
  for (const TraceStep& s : r.steps.steps) {
    b.step_ms += static_cast<double>(s.duration_ns) / 1e6;
    for (std::size_t p = 0; p < kPhaseCount; ++p) b.part_ms[p] += static_cast<double>(s.part_ns[p]) / 1e6;
  }
  const double n = static_cast<double>(b.steps);
  b.step_ms /= n;
  for (double& ms : b.part_ms) ms /= n;
  double squares = 0;
  std::array<double, kPhaseCount> part_squares{};
  for (const TraceStep& s : r.steps.steps) {
    squares += std::pow(static_cast<double>(s.duration_ns) / 1e6 - b.step_ms, 2);
    for (std::size_t p = 0; p < kPhaseCount; ++p) {
      part_squares[p] += std::pow(static_cast<double>(s.part_ns[p]) / 1e6 - b.part_ms[p], 2);
    }
  }
  if (b.steps > 1) {
    b.step_ms_stddev = std::sqrt(squares / (n - 1));
    for (std::size_t p = 0; p < kPhaseCount; ++p) b.part_ms_stddev[p] = std::sqrt(part_squares[p] / (n - 1));
  }
  b.syncs = syncs_of(r.steps);
  return b;
}

// Per rank, its lag behind the first arrival per step, from the matched collectives (arrivals
// counted back from their common end), as the engine's runs chart theirs.
std::vector<std::vector<double>> lag_series(const CollectiveMatch& c) {
  if (c.matched == 0 || c.steps == 0) return {};
  const int64_t per_step = std::max<int64_t>(1, c.matched / c.steps);
  std::vector<std::vector<int64_t>> arrival_ns(c.duration_ns.front().size());
  for (const std::vector<int64_t>& collective : c.duration_ns) {
    for (std::size_t r = 0; r < arrival_ns.size(); ++r) arrival_ns[r].push_back(-collective[r]);
  }
  return lag_per_step(arrival_ns, per_step, c.matched / per_step);
}

RunRecord record_of(const TraceAnalysis& a) {
  RunRecord run;
  run.label = "the traces";
  run.devices = a.job.world_size;
  run.ok = true;
  for (const RankBreakdown& b : a.ranks) run.ranks.push_back(b.rank);
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
    for (std::size_t p = 0; p < kPhaseCount; ++p) phases[p] = b.part_ms[p] * static_cast<double>(b.steps) / 1e3;
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
    s.arrivals.lag_ms_per_rank = lag_series(*a.collectives);
  }
  return run;
}

// What the traces tell of the job, in place of a configuration.
OptionTexts setup_of(const TraceAnalysis& a) {
  OptionTexts setup = {{"world size", std::to_string(a.job.world_size)},
                       {"backend", a.job.backend.empty() ? "—" : a.job.backend},
                       {"ranks traced", std::to_string(a.ranks.size())}};
  for (const RankBreakdown& b : a.ranks) setup.emplace_back(fmt::format("rank {}", b.rank), b.path);
  return setup;
}

// The prediction's rows as the doctor's, per step; the traced point measured.
std::vector<PredictionRow> prediction_rows(const TraceAnalysis& a) {
  std::vector<PredictionRow> rows;
  if (!a.prediction) return rows;
  double measured_ms = 0;
  for (const RankBreakdown& b : a.ranks) measured_ms += b.step_ms / static_cast<double>(a.ranks.size());
  for (const TracePredictionRow& r : a.prediction->rows) {
    PredictionRow row;
    row.per_step = true;
    row.workload.devices = r.devices;
    row.workload.interconnect = r.link;
    row.predicted_wall_seconds = r.step_ms / 1e3;
    row.predicted_speedup = r.throughput;
    if (std::isfinite(r.band)) row.band = r.band;
    if (r.devices == a.job.world_size && r.link == "measured") row.measured_wall_seconds = measured_ms / 1e3;
    rows.push_back(std::move(row));
  }
  return rows;
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

// The parts the straggler spends longer in than every other rank (collective waits aside) by more
// than the part's noise and `floor_ms`, largest excess first.
std::vector<SlowPart> slower_parts(const std::vector<RankBreakdown>& ranks, std::size_t straggler, double floor_ms) {
  std::vector<SlowPart> out;
  for (std::size_t p = 0; p < kPhaseCount; ++p) {
    if (static_cast<Phase>(p) == Phase::kCommWait) continue;
    std::optional<std::size_t> other;  // the slowest other rank in this part
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      if (r != straggler && (!other || ranks[r].part_ms[p] > ranks[*other].part_ms[p])) other = r;
    }
    if (!other) continue;
    const double excess = ranks[straggler].part_ms[p] - ranks[*other].part_ms[p];
    if (excess > std::max(part_noise_ms(ranks[straggler], ranks[*other], p), floor_ms)) {
      out.push_back({static_cast<Phase>(p), excess});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const SlowPart& a, const SlowPart& b) { return a.excess_ms_per_step > b.excess_ms_per_step; });
  return out;
}

// Parts whose excess on one rank is a cause of its own: its input, its plain Python. Slower torch
// ops (forward, backward, the optimizer) are the core's speed as much as the rank's work.
bool names_a_cause(Phase part) { return part == Phase::kData || part == Phase::kPython; }

// Whether the straggler's slowest part is slower, relative to the slowest other rank's, by
// kOneCauseFactor times the rest of its step (collective waits aside), or the rest is no slower.
bool slower_beyond_the_rest(const std::vector<RankBreakdown>& ranks, std::size_t straggler, const SlowPart& slow) {
  const auto p = static_cast<std::size_t>(slow.part);
  double mine = 0, others = 0, part_of_others = 0;
  for (std::size_t q = 0; q < kPhaseCount; ++q) {
    double slowest_other = 0;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      if (r != straggler) slowest_other = std::max(slowest_other, ranks[r].part_ms[q]);
    }
    if (q == p) part_of_others = slowest_other;
    if (q == p || static_cast<Phase>(q) == Phase::kCommWait) continue;
    mine += ranks[straggler].part_ms[q];
    others += slowest_other;
  }
  const double rest = others > 0 ? mine / others - 1 : 0;
  if (rest <= 0 || part_of_others <= 0) return true;
  return slow.excess_ms_per_step / part_of_others >= kOneCauseFactor * rest;
}

// Why the straggler is late, from the part of its step that is slower (names_a_cause): the
// doctor's finding's cause.
StragglerCause cause_of(const SlowPart& slow) {
  const std::string ms = fmt::format("{:.3f} ms per step more than the slowest other rank", slow.excess_ms_per_step);
  if (slow.part == Phase::kData) {
    return {fmt::format("It waits for its input: its data part took {}.", ms),
            "Give that rank's loader more workers (DataLoader num_workers, persistent_workers) or faster storage, "
            "and check its shard of the data (larger or slower to read than the others')."};
  }
  return {fmt::format("It runs plain Python that no torch op covers, {} (a per-step probe, logging, a sleep or a "
                      "wait inside the step).",
                      ms),
          "Find what that rank alone does in its step (a rank-zero-only print, save or metric, a probe) and take it "
          "out of the step, or do it every N steps."};
}

// A part whose mean share of the step, over the ranks, is above its threshold. `less_ms` per
// rank is taken off first (for communication: the wait for a late rank, which is the
// straggler's cost, not the link's).
void part_finding(const TraceAnalysis& a, Phase part, double min_share, const std::string& what, const std::string& fix,
                  std::vector<Finding>& out, const std::vector<double>& less_ms = {}) {
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
  f.cost_seconds = f.share_of_wall * a.record().wall_seconds;
  f.evidence = {a.record().label};
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
    // Each kind's transfers summed per step; the training code's own collectives also with twice
    // their standard error, which a busy machine's outliers widen (one scalar allreduce was priced
    // 2.53 ms a step in one run and 0.29 ms in the next).
    const CollectiveMatch& c = *a.collectives;
    const double steps = static_cast<double>(c.steps);
    std::vector<double> other;
    job.gradient_cost_ms = 0;
    for (std::size_t i = 0; i < c.transfer_ns.size(); ++i) {
      const double ms = static_cast<double>(c.transfer_ns[i]) / 1e6;
      if (c.origin[i] == CollectiveOrigin::kGradient) job.gradient_cost_ms += ms / steps;
      if (c.origin[i] == CollectiveOrigin::kOther) other.push_back(ms);
    }
    job.other_cost_ms = 0;
    for (double ms : other) job.other_cost_ms += ms / steps;
    if (other.size() >= 2) {
      const double n = static_cast<double>(other.size()), mean = job.other_cost_ms * steps / n;
      double squares = 0;
      for (double ms : other) squares += (ms - mean) * (ms - mean);
      job.other_cost_noise_ms = 2 * (n / steps) * std::sqrt(squares / (n - 1) / n);
    }
  }
  return job;
}

// The others' wait for a rank slower throughout its step: a finding, without naming a cause.
void slower_rank_finding(const TraceAnalysis& a, std::vector<Finding>& out) {
  const SlowerRank& slow = *a.slower_rank;
  const Straggler& s = *a.collectives->straggler;
  const double wait_ms = 1e3 * s.cost_seconds_per_step / static_cast<double>(a.ranks.size() - 1);
  double step = 0;
  for (const RankBreakdown& b : a.ranks) step += b.step_ms / static_cast<double>(a.ranks.size());
  std::vector<std::string> parts;
  for (const SlowPart& p : slow.parts) {
    parts.push_back(fmt::format("{} +{:.3f} ms", kPhaseNames[index(p.part)], p.excess_ms_per_step));
  }
  Finding f;
  f.title = fmt::format(
      "Rank {} holds the others back: they wait {:.2f} ms per step for it ({:.0f} % of the step); it is slower in "
      "{}, which the traces cannot tell from a shared or slower core",
      slow.rank, wait_ms, 100 * wait_ms / step, kPhaseNames[index(slow.parts.front().part)]);
  f.detail = fmt::format(
      "It arrived last at {:.0f} % of the collectives, slower than the slowest other rank by {} per step. Other "
      "processes on its core, a slower core and more work on that rank (an uneven batch) all look so in a trace, "
      "which records no scheduler statistics.",
      100 * s.last_share, fmt::join(parts, ", "));
  f.fix =
      "Trace again on a quiet machine with one core per rank (taskset, mpirun --bind-to core, OMP_NUM_THREADS): a "
      "rank that is slow again on another core is slow itself; then check its batches against the others'. "
      "ddpscope doctor's own runs measure each rank's wait for its core.";
  f.share_of_wall = step > 0 ? wait_ms / step : 0;
  f.cost_seconds = f.share_of_wall * a.record().wall_seconds;
  f.evidence = {a.record().label};
  out.push_back(std::move(f));
}

std::vector<Finding> findings_of(const TraceAnalysis& a) {
  std::vector<Finding> out;
  // The doctor's straggler finding names ranks by position: only where that is their number.
  bool numbered_from_zero = true;
  for (std::size_t i = 0; i < a.ranks.size(); ++i) numbered_from_zero &= a.ranks[i].rank == static_cast<int>(i);
  if (numbered_from_zero && a.straggler_part) {
    straggler_findings({{&a.record()}, {}, {}, {}}, out, cause_of(*a.straggler_part));
  }
  if (a.slower_rank) slower_rank_finding(a, out);
  part_finding(a, Phase::kPython, kPythonMinShare, "Plain Python inside the step, outside any framework op",
               "Move per-step work that is not training out of the step (a GPU utilization probe such as "
               "pynvml's init/query/shutdown, printing, metric bookkeeping), or do it every N steps.",
               out);
  part_finding(a, Phase::kData, kDataMinShare, "The step waits for its input",
               "Load data in worker processes (DataLoader num_workers > 0, pin_memory on GPUs, persistent_workers), "
               "or prepare it once before training.",
               out);
  part_finding(a, Phase::kLaunch, kLaunchMinShare, "The GPU waits for its host to launch work",
               "The host cannot launch kernels as fast as the GPU runs them: more work per kernel (a larger "
               "batch), fewer kernels (torch.compile, fused optimizers: foreach or fused=True), or the "
               "whole step as one CUDA graph (torch.compile mode=\"reduce-overhead\", torch.cuda.graphs).",
               out);
  // A job of one device synchronises nothing: advice about devices is no advice to it.
  if (a.job.world_size > 1) {
    part_finding(a, Phase::kCommWait, kCommExposedMinShare, "Communication not hidden behind compute",
                 "Give each device more work per synchronisation: a larger per-device batch, or gradient "
                 "accumulation with DDP's no_sync() on all but the last micro-batch; fewer, larger buckets "
                 "(bucket_cap_mb) where there are many small collectives.",
                 out, a.collectives ? a.collectives->wait_ms_per_step : std::vector<double>{});
    sync_findings(job_syncs(a), a.record().wall_seconds, a.record().label, out);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Finding& x, const Finding& y) { return x.cost_seconds > y.cost_seconds; });
  return out;
}

// What each rank's steps say of the file they came from: one note for all the ranks it is
// true of (a job of hundreds of ranks has one line, not hundreds).
void step_notes(const TraceAnalysis& a, std::vector<std::string>& notes) {
  std::size_t fewest = SIZE_MAX, most = 0;
  std::vector<std::pair<std::string, std::vector<int>>> said;  // a note's text and its ranks, in order
  std::vector<std::string> repeated;                           // one per file: each names its file
  const auto say = [&](std::string text, int rank) {
    for (auto& [known, ranks] : said) {
      if (known == text) return ranks.push_back(rank);
    }
    said.emplace_back(std::move(text), std::vector<int>{rank});
  };
  for (const TracedRank& r : a.job.ranks) {
    const RankSteps& s = r.steps;
    fewest = std::min(fewest, s.steps.size());
    most = std::max(most, s.steps.size());
    if (s.dropped_warmup + s.dropped_partial > 0) {
      say(fmt::format("{} steps analysed ({}), {} dropped as warm-up and {} as cut by the profile's end",
                      s.steps.size(), s.step_source, s.dropped_warmup, s.dropped_partial),
          r.rank);
    }
    if (s.repeated_steps > 0 || s.repeated_events > 0) {
      repeated.push_back(fmt::format(
          "rank {}: {} holds {} events twice, {} step markers among them (every field alike, as when one trace is "
          "written into a file twice): each read once",
          r.rank, r.path, s.repeated_events, s.repeated_steps));
    }
  }
  for (const auto& [text, ranks] : said) notes.push_back(fmt::format("{}: {}", rank_runs(ranks, true), text));
  notes.insert(notes.end(), repeated.begin(), repeated.end());
  if (most > fewest) {
    notes.push_back(fmt::format(
        "the ranks traced different numbers of steps ({} to {}): ranks of one job profile the same steps, so "
        "some traces may be cut short or of another run",
        fewest, most));
  }
}

}  // namespace

TraceAnalysis analyze_job(TraceJob job, const std::vector<TracedScale>& others) {
  TraceAnalysis a;
  a.job = std::move(job);
  a.result.source = RunSource::kTraces;
  a.result.notes = a.job.notes;
  for (const TracedRank& r : a.job.ranks) a.ranks.push_back(breakdown(r));
  step_notes(a, a.result.notes);
  if (a.job.ranks.size() >= 2) {
    std::vector<const RankSteps*> steps;
    for (const TracedRank& r : a.job.ranks) steps.push_back(&r.steps);
    a.collectives = match_collectives(steps);
    a.result.notes.insert(a.result.notes.end(), a.collectives->notes.begin(), a.collectives->notes.end());
    if (a.collectives->matched == 0)
      a.result.notes.push_back("no collective matched across the ranks: no straggler can be told");
  }
  a.result.runs.push_back(record_of(a));
  a.result.setup = setup_of(a);
  // The arrival rule indexes ranks in the order of the traces: position i is a.ranks[i]. A
  // straggler is named only where some part of its step is slower than the others' by more
  // than that part's noise and than the doctor's floor share of the step (ranks sharing cores
  // wait for each other at random, and a balanced job's ranks differ by a few per cent); its
  // cause only where that part names one and is slower beyond the rest of its step.
  if (const std::optional<int> i = arrival_straggler_rank({{&a.record()}, {}, {}, {}})) {
    const auto at = static_cast<std::size_t>(*i);
    const RankBreakdown& rank = a.ranks[at];
    const double floor = kStragglerMinShare * rank.step_ms;
    const std::vector<SlowPart> slower = slower_parts(a.ranks, at, floor);
    if (slower.empty()) {
      a.result.runs.front().summary.arrivals.straggler.reset();  // the chart marks no one
      a.result.notes.push_back(fmt::format(
          "rank {} waited least at the collectives, but no part of its step is slower than the others' by more "
          "than twice the standard error of the difference over the steps and {:.0f} % of its step ({:.3f} ms): "
          "no straggler",
          rank.rank, 100 * kStragglerMinShare, floor));
    } else if (names_a_cause(slower.front().part) && slower_beyond_the_rest(a.ranks, at, slower.front())) {
      a.straggler_part = slower.front();
    } else {
      a.slower_rank = SlowerRank{rank.rank, slower};
    }
  }
  a.result.findings = findings_of(a);
  // Two of the doctor's findings need what no trace holds: said, so that silence is not read
  // as their absence.
  if (!a.ranks.empty() && !a.job.ranks.front().steps.on_gpu) {
    a.result.notes.push_back(
        "thread oversubscription not judged: a trace records neither the threads each rank asked for "
        "(torch.get_num_threads()) nor the host's cores; their product over a host's ranks should not "
        "exceed its cores");
  }
  a.result.notes.push_back(
      "start-up not judged: the profiler's window opens after the processes and the process "
      "group have started");
  a.prediction = predict_from_traces(a, a.no_prediction, others);
  if (a.prediction) a.result.notes.insert(a.result.notes.end(), a.prediction->notes.begin(), a.prediction->notes.end());
  a.result.predictions = prediction_rows(a);
  return a;
}

}  // namespace ddp
