#include "doctor/findings_catalogue.h"

#include "doctor/noise.h"
#include "doctor/run_noise.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "doctor/noise.h"
#include "doctor/run_noise.h"
#include "doctor/workload_counts.h"

namespace ddp {
namespace {

std::string percent(double share) { return fmt::format("{:.0f} %", 100.0 * share); }

// A run's measured seconds scaled like its wall_seconds (extrapolated to the full epochs).
double scale_of(const RunRecord& run) {
  return run.summary.wall_seconds > 0 ? run.wall_seconds / run.summary.wall_seconds : 1.0;
}

// The ablation of `run` whose name starts with `prefix`, when it ran.
const AblationResult* ablation_of(const FindingInputs& in, const RunRecord& run, std::string_view prefix) {
  for (const AblationResult& a : in.ablations) {
    if (a.baseline == &run && a.run.ok && a.name.starts_with(prefix)) return &a;
  }
  return nullptr;
}

int64_t micro_batches_per_rank(const RunSummary& s) {
  return std::max<int64_t>(1, count_workload(workload_from_summary(s)).micro_batches_per_epoch * s.epochs);
}

// The ranks of one host, with the cores they may use together (the union of their
// affinities, RunSummary::cores_per_rank); cores is 0 where the summary does not say.
struct HostRanks {
  std::string host;
  std::vector<int> ranks;
  int cores = 0;
};

std::vector<HostRanks> hosts_of(const RunSummary& s) {
  std::vector<HostRanks> hosts;
  for (int r = 0; r < s.world_size; ++r) {
    const std::string host = static_cast<std::size_t>(r) < s.hosts.size() ? s.hosts[r] : "";
    auto it = std::find_if(hosts.begin(), hosts.end(), [&](const HostRanks& h) { return h.host == host; });
    if (it == hosts.end()) it = hosts.insert(hosts.end(), HostRanks{host, {}, 0});
    it->ranks.push_back(r);
  }
  for (HostRanks& h : hosts) {
    std::set<int> cores;
    for (const int r : h.ranks) {
      if (static_cast<std::size_t>(r) < s.cores_per_rank.size())
        cores.insert(s.cores_per_rank[r].begin(), s.cores_per_rank[r].end());
    }
    h.cores = static_cast<int>(cores.size());
  }
  return hosts;
}

// The threads a rank asks for: its --threads-per-device, or more where OpenMP or BLAS were
// set to start more (an OMP_NUM_THREADS of the environment, a library's own default).
int threads_asked(const RunRecord& run, int rank) {
  int threads = run.config.trainer.threads_per_device;
  const auto& census = run.summary.threads_per_rank;
  if (static_cast<std::size_t>(rank) < census.size()) {
    threads = std::max({threads, census[rank].omp_threads, census[rank].blas_threads});
  }
  return threads;
}

// Ranks on a host asking for more threads than the host's cores, confirmed by the run-queue
// delay their training threads measured (when measured).
bool oversubscribed_finding(const FindingInputs& in, const RunRecord& run, std::vector<Finding>& out) {
  const RunSummary& s = run.summary;
  for (const HostRanks& host : hosts_of(s)) {
    int asked = 0, most = 0;
    for (const int r : host.ranks) {
      asked += threads_asked(run, r);
      most = std::max(most, threads_asked(run, r));
    }
    if (host.cores == 0 || asked <= host.cores) continue;
    const int ranks = static_cast<int>(host.ranks.size());
    const bool measured = s.sched_per_rank.size() == static_cast<std::size_t>(s.world_size);
    double wait_share = 0, wait_seconds = 0;
    if (measured) {
      for (const int r : host.ranks) {
        wait_share += s.sched_per_rank[r].wait_share / ranks;
        wait_seconds += s.sched_per_rank[r].wait_seconds / ranks;
      }
      if (wait_share <= kOversubscribedMinWaitShare) continue;
    }
    const int fair = std::max(1, host.cores / ranks);
    int counted = 0;
    for (const int r : host.ranks) {
      if (static_cast<std::size_t>(r) < s.threads_per_rank.size())
        counted = std::max(counted, s.threads_per_rank[r].threads);
    }
    Finding f;
    f.title = measured ? fmt::format("{} threads x {} ranks on {} cores: each thread waited {} of its time for a core",
                                     most, ranks, host.cores, percent(wait_share))
                       : fmt::format("{} threads x {} ranks on {} cores (the wait for a core was not measured)", most,
                                     ranks, host.cores);
    std::string detail = fmt::format(
        "In {}, the {} ranks on {} ask for {} threads (--threads-per-device {}{}) and may use {} cores: a fair "
        "share is {} per rank.",
        run.label, ranks, host.host.empty() ? "one host" : host.host, asked, run.config.trainer.threads_per_device,
        most > run.config.trainer.threads_per_device ? fmt::format(", OpenMP or BLAS set to {}", most) : "", host.cores,
        fair);
    if (counted > 0) detail += fmt::format(" A rank ran up to {} threads near the end of training.", counted);
    if (measured) {
      detail += fmt::format(" Each training thread waited {:.3f} s in the run queue ({} of its runnable time).",
                            wait_seconds * scale_of(run), percent(wait_share));
    }
    if (const AblationResult* a = ablation_of(in, run, "threads-per-device=")) {
      detail += fmt::format(" With {}: {}.", a->name, describe_effect(*a));
    }
    f.detail = std::move(detail);
    f.cost_seconds = wait_seconds * scale_of(run);
    f.share_of_wall = f.cost_seconds / run.wall_seconds;
    f.evidence = {run.label};
    f.fix = fmt::format(
        "Use at most {} thread{} per device on this host (--threads-per-device {}; OMP_NUM_THREADS and "
        "OPENBLAS_NUM_THREADS for libraries that start their own), or fewer ranks per host.",
        fair, fair > 1 ? "s" : "", fair);
    out.push_back(std::move(f));
    return true;
  }
  return false;
}

// A rank whose data phase (waiting for its loader, or loading in the training thread) is a
// large share of its wall. Where the loader-workers habit finding (findings.cpp) already
// counts the loading it moves off the training thread, only the wait that remains is counted.
bool starvation_finding(const FindingInputs& in, const RunRecord& run, std::vector<Finding>& out) {
  const RunSummary& s = run.summary;
  const auto data = static_cast<std::size_t>(Phase::kData);
  int worst = 0;
  for (int r = 0; r < static_cast<int>(s.phases_per_rank.size()); ++r) {
    if (s.phases_per_rank[r][data] > s.phases_per_rank[worst][data]) worst = r;
  }
  if (s.phases_per_rank.empty() || s.wall_seconds <= 0) return false;
  const double worst_seconds = s.phases_per_rank[worst][data];
  if (worst_seconds / s.wall_seconds <= kStarvedMinDataShare) return false;
  const int workers = run.config.data.loader_workers;
  double cost = worst_seconds * scale_of(run);
  std::string ablated;
  if (const AblationResult* a = ablation_of(in, run, "loader-workers=");
      a != nullptr && a->run.config.data.loader_workers > workers) {
    const double remaining = a->run.phase(Phase::kData);
    ablated = fmt::format(" With {} the data phase took {:.3f} s per rank; wall {}.", a->name, remaining,
                          describe_effect(*a));
    if (!a->habit.empty() && (run.phase(Phase::kData) - remaining) / run.wall_seconds > kHabitMinShare) {
      cost = remaining;  // the habit's finding counts the rest
      if (cost / run.wall_seconds <= kStarvedMinDataShare) return false;
    }
  }
  const double per_batch = worst_seconds / static_cast<double>(micro_batches_per_rank(s));
  const std::vector<HostRanks> hosts = hosts_of(s);
  const auto host = std::find_if(hosts.begin(), hosts.end(), [&](const HostRanks& h) {
    return std::find(h.ranks.begin(), h.ranks.end(), worst) != h.ranks.end();
  });
  const int ranks_here = host == hosts.end() ? 1 : static_cast<int>(host->ranks.size());
  const bool spare_core =
      host != hosts.end() && host->cores >= ranks_here * (run.config.trainer.threads_per_device + workers + 1);
  Finding f;
  f.title =
      fmt::format("Input starvation: rank {} spends {:.2f} ms per micro-batch {}: {} of the run", worst,
                  1e3 * per_batch, workers > 0 ? "waiting for its loader" : "loading its batch in the training thread",
                  percent(worst_seconds / s.wall_seconds));
  f.detail = fmt::format(
      "In {}, the data phase took {:.3f} s on rank {} of a {:.2f} s run, over {} micro-batches, with {} loader "
      "worker{}.{}",
      run.label, worst_seconds, worst, s.wall_seconds, micro_batches_per_rank(s), workers, workers == 1 ? "" : "s",
      ablated);
  f.cost_seconds = cost;
  f.share_of_wall = cost / run.wall_seconds;
  f.evidence = {run.label};
  const std::string cheaper = "make producing a batch cheaper (a simpler transform, the data in memory, a faster disk)";
  f.fix = spare_core
              ? fmt::format(
                    "Fill batches ahead with more loader workers (--loader-workers {}): the host has a "
                    "core for one; if one batch takes longer than a step even so, {}.",
                    workers + 1, cheaper)
              : fmt::format("The host has no core for {} loader worker: {}.", workers > 0 ? "another" : "a", cheaper);
  out.push_back(std::move(f));
  return true;
}

// More gradient allreduces per optimizer step than the bucket plan needs. With
// --sync-every-micro-batch and its no_sync ablation, the habit's finding reports it instead.
bool extra_collectives_finding(const FindingInputs& in, const RunRecord& run, std::vector<Finding>& out) {
  const RunSummary& s = run.summary;
  const TrainerOptions& t = run.config.trainer;
  if (s.world_size < 2 || s.optimizer_steps_run <= 0 || s.allreduce.calls <= 0) return false;
  const WorkloadCounts counts = count_workload(workload_from_summary(s));
  const int64_t buckets = static_cast<int64_t>(counts.bucket_bytes.size());
  const int64_t needed = t.no_overlap ? 1 : buckets;
  const double measured = static_cast<double>(s.allreduce.calls) / static_cast<double>(s.optimizer_steps_run);
  if (measured <= kExtraCollectivesMinRatio * static_cast<double>(needed)) return false;
  if (t.sync_every_micro_batch && ablation_of(in, run, "no_sync") != nullptr) return false;
  const double extra_share = 1 - static_cast<double>(needed) / measured;
  const double extra = s.allreduce.seconds * extra_share * scale_of(run);
  Finding f;
  f.title = fmt::format(
      "{:.1f} gradient allreduces per optimizer step where the bucket plan needs {}: {:.3f} s of extra communication "
      "at {} devices",
      measured, needed, extra, s.world_size);
  f.detail = fmt::format(
      "In {}, rank 0 made {} allreduces in {} optimizer steps; {} bucket{} of the {:.0f} KB gradient{} make {} per "
      "step. {} Its allreduces took {:.3f} s in all, so the extra {} of them cost about {:.3f} s.",
      run.label, s.allreduce.calls, s.optimizer_steps_run, buckets, buckets == 1 ? "" : "s",
      counts.parameters * 4 / 1e3, t.no_overlap ? ", reduced in one allreduce after backward (--no-overlap)," : "",
      needed,
      t.sync_every_micro_batch
          ? fmt::format("--sync-every-micro-batch all-reduces on each of the {} micro-batches of a step (no_sync off).",
                        t.accumulate_grad_batches)
          : std::string("The configuration does not explain the others."),
      s.allreduce.seconds * scale_of(run), percent(extra_share), extra);
  f.cost_seconds = extra;
  f.share_of_wall = extra / run.wall_seconds;
  f.evidence = {run.label};
  f.fix = t.sync_every_micro_batch
              ? "Keep Lightning's no_sync during accumulation (drop `--sync-every-micro-batch`)."
              : "Each optimizer step should reduce each bucket once: look for collectives outside the reducer.";
  out.push_back(std::move(f));
  return true;
}

// The rules above apply to one run each: the largest device count where they fire.
template <typename Rule>
void first_run_that_fires(const FindingInputs& in, Rule rule, std::vector<Finding>& out) {
  for (auto it = in.device_runs.rbegin(); it != in.device_runs.rend(); ++it) {
    if ((*it)->ok && rule(in, **it, out)) return;
  }
}

// Lightning's batch_size is per device: N devices take N x the samples per iteration, so
// seconds per iteration compare different work across device counts; samples/s do not.
void batch_semantics_finding(const FindingInputs& in, std::vector<Finding>& out) {
  std::vector<const RunRecord*> runs;
  for (const RunRecord* r : in.device_runs) {
    // Without measured samples there is no samples/s to state.
    if (r->ok && r->summary.samples_per_second() > 0) runs.push_back(r);
  }
  if (runs.size() < 2 || runs.front()->devices == runs.back()->devices) return;
  const RunRecord& one = *runs.front();
  const RunRecord& many = *runs.back();
  const auto seconds_per_it = [](const RunRecord& r) {
    return r.summary.wall_seconds / static_cast<double>(micro_batches_per_rank(r.summary));
  };
  std::vector<std::string> rows;
  for (const RunRecord* r : runs) {
    rows.push_back(fmt::format("{}: {:.0f} samples/s, {:.3f} ms/it ({} samples per it)", r->label,
                               r->summary.samples_per_second(), 1e3 * seconds_per_it(*r),
                               r->config.data.batch_size * r->devices));
  }
  const double by_samples = many.summary.samples_per_second() / one.summary.samples_per_second();
  const double by_it = seconds_per_it(one) / seconds_per_it(many);
  const double ratio = static_cast<double>(many.devices) / std::max(1, one.devices);
  Finding f;
  f.title = fmt::format(
      "Batch size is per device: at {} devices an iteration takes {:g}x the samples; compare samples/s ({:.2f}x), "
      "not s/it ({:.2f}x)",
      many.devices, ratio, by_samples, by_it);
  f.detail = fmt::format(
      "{}. An iteration (a training batch of each rank, as Lightning's progress bar counts) at {} devices is {} x {} "
      "samples, and an epoch has 1/{:g} of the iterations, so seconds per iteration compare different work: read as "
      "a speedup they say {:.2f}x where the same data trains {:.2f}x faster. Samples per second, or the wall time "
      "of the same epochs, answers whether more devices train faster.",
      fmt::join(rows, "; "), many.devices, many.devices, many.config.data.batch_size, ratio, by_it, by_samples);
  f.cost_seconds = 0;  // a reading, not a cost
  f.share_of_wall = 0;
  f.evidence = {one.label, many.label};
  f.fix = fmt::format(
      "Compare samples/s or time per epoch across device counts. To train the same optimizer steps as {} device{}, "
      "divide --batch-size by {:g} (or scale the learning rate for the {:g}x global batch).",
      one.devices, one.devices > 1 ? "s" : "", ratio, ratio);
  out.push_back(std::move(f));
}

// The bucket_cap_mb ablations at the largest device count: the fastest cap, when it beat the
// configuration's own by more than kBucketSweepMinGain.
void bucket_sweep_finding(const FindingInputs& in, std::vector<Finding>& out) {
  if (in.device_runs.empty() || !in.device_runs.back()->ok) return;
  const RunRecord& base = *in.device_runs.back();
  const auto buckets = [](const RunRecord& r) {
    return count_workload(workload_from_summary(r.summary)).bucket_bytes.size();
  };
  std::vector<std::string> rows = {fmt::format("{} MB (the configuration's, {} buckets): {:.2f} s",
                                               base.config.trainer.bucket_cap_mb, buckets(base), base.wall_seconds)};
  const AblationResult* fastest = nullptr;
  for (const AblationResult& a : in.ablations) {
    if (a.baseline != &base || !a.run.ok || !a.name.starts_with("bucket_cap_mb=")) continue;
    rows.push_back(fmt::format("{} MB ({} buckets): {:.2f} s", a.run.config.trainer.bucket_cap_mb, buckets(a.run),
                               a.run.wall_seconds));
    if (fastest == nullptr || a.run.wall_seconds < fastest->run.wall_seconds) fastest = &a;
  }
  if (fastest == nullptr) return;
  const double gain = 1 - fastest->run.wall_seconds / base.wall_seconds;
  if (gain <= kBucketSweepMinGain) return;
  // Never a finding the noise could explain; with the noise unknown the detail says so.
  if (const auto effect = effect_against_baseline(*fastest); effect && !measurable(*effect)) return;
  Finding f;
  f.title = fmt::format("Gradient buckets of {} MB were fastest at {} devices: {:.1f} % faster than {} MB",
                        fastest->run.config.trainer.bucket_cap_mb, base.devices, 100 * gain,
                        base.config.trainer.bucket_cap_mb);
  f.detail =
      fmt::format("The bucket-size sweep of {}: {}. {}.", base.label, fmt::join(rows, "; "), describe_effect(*fastest));
  f.cost_seconds = base.wall_seconds - fastest->run.wall_seconds;
  f.share_of_wall = gain;
  f.evidence = {base.label, fastest->run.label};
  f.fix = fmt::format(
      "--bucket-cap-mb {} (DDP's bucket_cap_mb): more, smaller buckets overlap more of the "
      "communication with backward, fewer pay less per-call latency.",
      fastest->run.config.trainer.bucket_cap_mb);
  out.push_back(std::move(f));
}

}  // namespace

void catalogue_findings(const FindingInputs& in, std::vector<Finding>& out) {
  first_run_that_fires(in, oversubscribed_finding, out);
  first_run_that_fires(in, starvation_finding, out);
  first_run_that_fires(in, extra_collectives_finding, out);
  batch_semantics_finding(in, out);
  bucket_sweep_finding(in, out);
}

}  // namespace ddp
