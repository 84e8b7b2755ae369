#include "doctor/findings.h"

#include <fmt/format.h>

#include <cmath>

#include <algorithm>

#include "doctor/findings_catalogue.h"
#include "doctor/findings_gpu.h"
#include "doctor/findings_straggler.h"
#include "doctor/interconnect.h"
#include "doctor/run_noise.h"

namespace ddp {
namespace {

std::string percent(double share) { return fmt::format("{:.0f} %", 100.0 * share); }

// "one host" or "2 hosts (node1, node2)": where a run's ranks ran, from its summary.json.
std::string where_ranks_ran(const RunRecord& run) {
  std::vector<std::string> hosts = run.summary.hosts;
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  if (hosts.size() <= 1) return "one host";
  return fmt::format("{} hosts ({})", hosts.size(), fmt::join(hosts, ", "));
}

// A habit whose time, measured in its own phase, is more than kHabitMinShare of the run;
// the ablation without it is the evidence of what removing it gives back, so only when it
// is measurably faster than the baseline (run_noise.h): a difference the noise could explain,
// or one whose noise is unknown, is no evidence. The ± of the cost is the noise's band, and a
// cost inside it (0.21 ms ± 0.25 ms, seen on a clean 1-device seed run) is no finding either.
void habit_findings(const FindingInputs& in, std::vector<Finding>& out) {
  for (const AblationResult& a : in.ablations) {
    if (a.habit.empty() || !a.run.ok || a.baseline == nullptr || !a.baseline->ok) continue;
    // A habit without a phase of its own (the eager launches spread over every phase) is
    // charged its whole difference in wall time, start-up aside.
    const auto spent = [&](const RunRecord& r) { return a.phase ? r.phase(*a.phase) : r.wall_seconds - r.startup(); };
    const std::string where = a.phase ? fmt::format("the {} phase", phase_name(*a.phase)) : "training (start-up aside)";
    const double cost = spent(*a.baseline) - spent(a.run);
    const double share = cost / a.baseline->wall_seconds;
    if (share <= kHabitMinShare) continue;
    const std::optional<Effect> effect = effect_against_baseline(a);
    if (!effect || !measurable(*effect) || effect->relative >= 0) continue;
    const int64_t steps = std::max<int64_t>(1, a.baseline->optimizer_steps());
    const double band = effect->uncertainty * a.baseline->wall_seconds;
    if (cost <= band) continue;  // a cost within its own band of noise is no finding
    Finding f;
    f.title = fmt::format(
        "{} costs {:.2f} ms (±{:.2f} ms) per optimizer step on each rank: {} (±{:.1f} %) of the run "
        "at {} device{}",
        a.habit, 1e3 * cost / steps, 1e3 * band / steps, percent(share), 100 * effect->uncertainty, a.run.devices,
        a.run.devices > 1 ? "s" : "");
    f.detail = fmt::format(
        "In {} {} took {:.3f} s; with {} it took {:.3f} s. Wall time: {:.2f} s, "
        "and {:.2f} s with {}{}.",
        a.baseline->label, where, spent(*a.baseline), a.name, spent(a.run), a.baseline->wall_seconds,
        a.run.wall_seconds, a.name,
        a.run.extrapolated ? fmt::format(" (extrapolated from {} epochs)", a.run.epochs_run) : "");
    f.cost_seconds = cost;
    f.cost_uncertainty_seconds = band;
    f.share_of_wall = share;
    f.evidence = {a.baseline->label, a.run.label};
    f.fix = a.fix;
    out.push_back(std::move(f));
  }
}

double spread_phase(const RunRecord& run, Phase phase, int* slowest, double* fastest) {
  double max = 0, min = 1e300;
  int r = 0;
  for (const PhaseSeconds& rank : run.summary.phases_per_rank) {
    const double s = rank[static_cast<std::size_t>(phase)];
    if (s > max) {
      max = s;
      *slowest = r;
    }
    min = std::min(min, s);
    ++r;
  }
  *fastest = min;
  return max;
}

void multi_device_findings(const FindingInputs& in, std::vector<Finding>& out) {
  if (in.device_runs.size() < 2) return;
  const RunRecord& one = *in.device_runs.front();
  const RunRecord& many = *in.device_runs.back();
  if (!one.ok || !many.ok || one.devices != 1 || many.devices < 2) return;
  const int n = many.devices;
  const double wall = many.wall_seconds;
  const double speedup = one.wall_seconds / wall;
  const double extra_startup = std::max(0.0, many.startup() - one.startup());
  const double comm_wait = many.phase(Phase::kCommWait);
  const std::vector<std::string> evidence = {one.label, many.label};

  if (speedup < kEfficiencyFloor * n) {
    Finding f;
    f.title = speedup < 1
                  ? fmt::format("{} devices are slower than one: {:.2f} s against {:.2f} s", n, wall, one.wall_seconds)
                  : fmt::format("{} devices are {:.2f}x faster than one, {} of the ideal {}x", n, speedup,
                                percent(speedup / n), n);
    const double ideal = one.wall_seconds / n;
    f.detail = fmt::format(
        "Ideal would be {:.2f} s. The {}-device run spent {:.2f} s starting up ({:.2f} s more than one device), "
        "{:.2f} s waiting for gradients, and {:.2f} s computing (forward, backward, validation) per rank.",
        ideal, n, many.startup(), extra_startup, comm_wait,
        many.phase(Phase::kForward) + many.phase(Phase::kBackward) + many.phase(Phase::kValidation));
    f.cost_seconds = wall - ideal;
    f.share_of_wall = f.cost_seconds / wall;
    f.evidence = evidence;
    const auto batch = smallest_batch_where_n_beats_one(in.model, in.workload, n);
    const auto width = smallest_width_where_n_beats_one(in.model, in.workload, n);
    if (speedup < 1) {
      f.fix = fmt::format(
          "Give each device more work per synchronisation. The fitted model predicts {} devices beat one {}{}.", n,
          batch ? fmt::format("from a per-device batch of {}", *batch) : "at no batch size up to 65536",
          width ? fmt::format(", or from a hidden width of {}", *width) : "");
    } else {
      f.fix = "See the costs below, largest first.";
    }
    out.push_back(std::move(f));
  }

  if (extra_startup / wall > kStartupMinShare) {
    Finding f;
    f.title = fmt::format("Starting {} processes and MPI costs {:.2f} s: {} of the {}-device run", n, extra_startup,
                          percent(extra_startup / wall), n);
    f.detail = fmt::format(
        "Start-up took {:.2f} s at 1 device and {:.2f} s at {} devices (launching under mpirun, "
        "initialising MPI, broadcasting the parameters). It does not shrink with the epochs.",
        one.startup(), many.startup(), n);
    f.cost_seconds = extra_startup;
    f.share_of_wall = extra_startup / wall;
    f.evidence = evidence;
    f.fix = "Amortise it: train longer runs per launch, or keep one process per device alive across experiments.";
    out.push_back(std::move(f));
  }

  if (comm_wait / wall > kCommWaitMinShare) {
    const WorkloadCounts counts = count_workload(in.workload);
    double per_sync = 0;
    for (const int64_t bytes : counts.bucket_bytes) {
      per_sync +=
          ring_allreduce_seconds(n, static_cast<double>(bytes), in.model.alpha_seconds, in.model.beta_bytes_per_second);
    }
    const double transfer = per_sync * counts.syncs_per_epoch * in.workload.epochs;
    Finding f;
    f.title = fmt::format("Waiting for gradients costs {:.2f} s at {} devices: {} of the run", comm_wait, n,
                          percent(comm_wait / wall));
    f.detail = fmt::format(
        "{} gradient synchronisations of {:.0f} KB between ranks on {}. By the measured allreduce (alpha {:.1f} us, "
        "beta {:.2f} GB/s) the transfers take {:.3f} s; the other {:.3f} s is ranks waiting for the slowest one ({} "
        "of the compute between synchronisations on this machine).",
        counts.syncs_per_epoch * in.workload.epochs, counts.parameters * 4 / 1e3, where_ranks_ran(many),
        1e6 * in.model.alpha_seconds, in.model.beta_bytes_per_second / 1e9, transfer,
        std::max(0.0, comm_wait - transfer), percent(in.model.jitter_fraction));
    f.cost_seconds = comm_wait;
    f.share_of_wall = comm_wait / wall;
    f.evidence = {many.label};
    f.fix =
        "Synchronise less often per unit of work: a larger per-device batch or more gradient accumulation; "
        "keep no_sync on during accumulation.";
    out.push_back(std::move(f));
  }

  // Each of N ranks computes 1/N of the 1-device run's steps; what its compute takes beyond
  // that is the ranks slowing each other where they share a host (cores, memory bandwidth,
  // other processes), a cost apart from the network's, which is in the wait above.
  const auto compute = [](const RunRecord& r) {
    return r.phase(Phase::kForward) + r.phase(Phase::kBackward) + r.phase(Phase::kOptimizer);
  };
  const double sharing = compute(many) - compute(one) / n;
  // The difference of two runs must exceed their noise, as every other comparison of runs here.
  const std::optional<RunSample> noise_one = sample_of(one), noise_many = sample_of(many);
  const double sharing_band = noise_one && noise_many ? kNormal95 * std::hypot(noise_many->sample.standard_error,
                                                                               noise_one->sample.standard_error / n)
                                                      : 0.0;
  if (sharing / wall > kSharingMinShare && sharing > sharing_band) {
    Finding f;
    f.title = fmt::format("Ranks slow each other's compute by {:.2f} s at {} devices: {} of the run", sharing, n,
                          percent(sharing / wall));
    f.detail = fmt::format(
        "Forward, backward and optimizer took {:.3f} s per rank on {}, against {:.3f} s for a 1/{} share of the "
        "1-device run: the ranks compete for what they share (cores, memory bandwidth, other processes on the "
        "host). This is not the network; the gradient transfers are counted in the wait for gradients. The two "
        "runs' noise: {}.",
        compute(many), where_ranks_ran(many), compute(one) / n, n,
        noise_one && noise_many ? fmt::format("±{:.3f} s", sharing_band) : std::string("not measured"));
    f.cost_seconds = sharing;
    f.cost_uncertainty_seconds = sharing_band;
    f.share_of_wall = sharing / wall;
    f.evidence = evidence;
    f.fix =
        "Give each rank cores of its own: no more ranks per host than idle cores, pinned, with nothing else "
        "running there; or spread the ranks over more hosts.";
    out.push_back(std::move(f));
  }

  // A phase spread must also exceed the run's own noise band (its repeats' or its epochs').
  const std::optional<RunSample> noise = sample_of(many);
  const double band = noise ? kNormal95 * noise->sample.standard_error : 0.0;
  const int arrival_straggler = arrival_straggler_rank(in).value_or(-1);
  for (const Phase phase : {Phase::kData, Phase::kForward, Phase::kBackward, Phase::kOptimizer, Phase::kValidation,
                            Phase::kLogging, Phase::kMonitor}) {
    int slowest = 0;
    double fastest = 0;
    const double max = spread_phase(many, phase, &slowest, &fastest);
    const double gap = max - fastest;
    if (slowest == arrival_straggler) continue;  // the arrival rule names it, with its cause
    if (max <= 0 || gap <= kStragglerMinSpread * max || gap / many.summary.wall_seconds <= kStragglerMinShare ||
        gap <= band) {
      continue;
    }
    // What it cost the others: their wait at the synchronisations beyond its own.
    const auto wait = [](const PhaseSeconds& p) { return p[static_cast<std::size_t>(Phase::kCommWait)]; };
    const std::vector<PhaseSeconds>& ranks = many.summary.phases_per_rank;
    double others_wait = 0;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      if (static_cast<int>(r) != slowest) others_wait += std::max(0.0, wait(ranks[r]) - wait(ranks[slowest]));
    }
    others_wait /= static_cast<double>(ranks.size() - 1);
    const std::string_view name = phase_name(phase);
    Finding f;
    f.title = fmt::format("Rank {} is a straggler in {}: {:.3f} s more than the fastest rank", slowest, name, gap);
    f.detail = fmt::format(
        "In {}, {} took {:.3f} s on rank {} and {:.3f} s on the fastest rank; the other ranks waited {:.3f} s each "
        "for it at the synchronisations (their comm_wait beyond its own), {} of the run. The spread is beyond the "
        "run's noise ({}).",
        many.label, name, max, slowest, fastest, others_wait, percent(others_wait / many.summary.wall_seconds),
        noise ? fmt::format("±{:.3f} s, from its {}", band, noise->source) : std::string("not measured"));
    f.cost_seconds = gap;
    f.share_of_wall = gap / many.summary.wall_seconds;
    f.evidence = {many.label};
    f.fix = phase == Phase::kLogging
                ? "Rank zero alone writes the logs; log less often (--log-every-n-steps) if this matters."
                : "Check what else runs on that rank's core (other processes, interrupts); pin ranks to idle cores.";
    out.push_back(std::move(f));
  }
}

void fixed_cost_finding(const FindingInputs& in, std::vector<Finding>& out) {
  if (in.device_runs.empty() || !in.device_runs.front()->ok || in.model.flops_per_second <= 0) return;
  const WorkloadCounts counts = count_workload(in.workload);
  const double flops = counts.training_flops_per_sample * in.workload.batch_size;
  const double compute = flops / in.model.flops_per_second;
  const double fixed = fixed_seconds_per_micro_batch(in.model, in.workload, counts);
  const double share = fixed / (fixed + compute);
  if (share <= kFixedCostMinShare) return;
  const RunRecord& run = *in.device_runs.front();
  Finding f;
  f.title = fmt::format("Fixed costs are {} of every micro-batch's compute", percent(share));
  f.detail = fmt::format(
      "A micro-batch of {} samples needs {:.1f} MFLOP, {:.3f} ms at the fitted {:.0f} GFLOP/s, "
      "but also {:.3f} ms that do not depend on its size (kernel calls, bookkeeping).",
      in.workload.batch_size, flops / 1e6, 1e3 * compute, in.model.flops_per_second / 1e9, 1e3 * fixed);
  f.cost_seconds = fixed * counts.micro_batches_per_epoch * in.workload.epochs;
  f.share_of_wall = f.cost_seconds / run.wall_seconds;
  f.evidence = {run.label};
  f.fix = "Use larger batches (or a wider model): the fixed part is paid once per micro-batch whatever its size.";
  out.push_back(std::move(f));
}

}  // namespace

std::vector<Finding> find_problems(const FindingInputs& inputs) {
  std::vector<Finding> out;
  habit_findings(inputs, out);
  catalogue_findings(inputs, out);
  multi_device_findings(inputs, out);
  straggler_findings(inputs, out);
  if (inputs.workload.on_gpu)
    gpu_step_finding(inputs, out);  // says the fixed costs, per launch, among the rest
  else
    fixed_cost_finding(inputs, out);
  std::stable_sort(out.begin(), out.end(),
                   [](const Finding& a, const Finding& b) { return a.cost_seconds > b.cost_seconds; });
  return out;
}

nlohmann::ordered_json to_json(const Finding& f) {
  nlohmann::ordered_json j = {{"title", f.title},
                              {"detail", f.detail},
                              {"cost_seconds", f.cost_seconds},
                              {"share_of_wall", f.share_of_wall},
                              {"evidence", f.evidence},
                              {"fix", f.fix}};
  if (f.cost_uncertainty_seconds > 0) j["cost_uncertainty_seconds"] = f.cost_uncertainty_seconds;
  return j;
}

}  // namespace ddp
