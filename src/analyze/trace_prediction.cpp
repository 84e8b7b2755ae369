#include "analyze/trace_prediction.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>

#include "analyze/trace_analysis.h"
#include "ddpscope/error.h"
#include "doctor/interconnect.h"
#include "doctor/prediction_band.h"
#include "doctor/scaling_model.h"

namespace ddp {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::size_t index(Phase part) { return static_cast<std::size_t>(part); }

double comm_wait_ms(const RankBreakdown& b) { return b.part_ms[index(Phase::kCommWait)]; }

// The rank whose step, less its waits for communication, is longest: the pace of the job.
std::size_t slowest_rank(const TraceAnalysis& a) {
  std::size_t slowest = 0;
  for (std::size_t r = 1; r < a.ranks.size(); ++r) {
    if (a.ranks[r].step_ms - comm_wait_ms(a.ranks[r]) > a.ranks[slowest].step_ms - comm_wait_ms(a.ranks[slowest])) {
      slowest = r;
    }
  }
  return slowest;
}

// The link the traces measured: from each matched collective's transfer (its shortest duration
// over the ranks) and size. With one size only, its time is taken as all bandwidth (a gradient
// bucket is megabytes: latency is the smaller part).
std::optional<TraceLink> measured_link(const TraceAnalysis& a) {
  const int world = a.job.world_size;
  std::vector<AllreducePoint> points;
  std::set<int64_t> sizes;
  for (std::size_t i = 0; i < a.collectives->transfer_ns.size(); ++i) {
    const int64_t bytes = a.collectives->bytes[i];
    if (bytes <= 0 || a.collectives->transfer_ns[i] <= 0) continue;
    points.push_back({world, static_cast<double>(bytes), static_cast<double>(a.collectives->transfer_ns[i]) / 1e9});
    sizes.insert(bytes);
  }
  if (points.empty()) return std::nullopt;
  TraceLink link{"measured", 0, 0};
  if (sizes.size() >= 2) {
    const AllreduceFit fit = fit_allreduce(points);
    link.alpha_seconds = fit.alpha_seconds;
    link.beta_bytes_per_second = fit.beta_bytes_per_second;
  } else {
    double bytes = 0, seconds = 0;
    for (const AllreducePoint& p : points) {
      bytes += p.bytes;
      seconds += p.seconds;
    }
    link.beta_bytes_per_second = busbw(world, bytes, seconds);
  }
  return link;
}

// compute(N) = c1 * (1 + k (N - 1)) by least squares over the jobs: (c1, k), or nullopt (and
// why, in `notes`) when they hold one device count only or do not fit the form.
std::optional<std::pair<double, double>> fit_compute(const std::vector<TracedScale>& jobs,
                                                     std::vector<std::string>& notes) {
  std::set<int> counts;
  double mean_x = 0, mean_y = 0;
  for (const TracedScale& j : jobs) {
    counts.insert(j.devices);
    mean_x += j.devices - 1;
    mean_y += j.compute_ms;
  }
  if (counts.size() < 2) return std::nullopt;
  mean_x /= static_cast<double>(jobs.size());
  mean_y /= static_cast<double>(jobs.size());
  double sxx = 0, sxy = 0;
  for (const TracedScale& j : jobs) {
    sxx += (j.devices - 1 - mean_x) * (j.devices - 1 - mean_x);
    sxy += (j.devices - 1 - mean_x) * (j.compute_ms - mean_y);
  }
  // Ranks that keep their per-device batch do not speed each other up: compute that falls with
  // more devices is no scaling to extrapolate, and a line through neither job would hide it.
  if (sxy < 0) {
    std::vector<std::string> points;
    for (const TracedScale& j : jobs) points.push_back(fmt::format("{:.3f} ms at {}", j.compute_ms, j.devices));
    notes.push_back(fmt::format(
        "compute per step falls with more devices across the traced jobs ({}): they differ in more than their "
        "device count, or a busy machine slowed one; not fitted, the what-if takes the traces analysed alone",
        fmt::join(points, ", ")));
    return std::nullopt;
  }
  const double slope = sxy / sxx;
  const double c1 = mean_y - slope * mean_x;
  if (c1 <= 0) return std::nullopt;
  return std::pair{c1, slope / c1};
}

// A --scaling-from job that is plainly another training is refused, naming the difference.
void refuse_another_training(const TracedScale& main, const TracedScale& other) {
  const auto refuse = [&](const std::string& what) {
    throw UsageError(
        fmt::format("--scaling-from {}: {}: not the same training at another device count", other.label, what));
  };
  if (main.on_gpu != other.on_gpu) {
    refuse(fmt::format("a {} job, where the traces analysed are a {} job", other.on_gpu ? "GPU" : "CPU",
                       main.on_gpu ? "GPU" : "CPU"));
  }
  if (!main.backend.empty() && !other.backend.empty() && main.backend != other.backend) {
    refuse(fmt::format("its collectives ran over {}, the traces analysed ran over {}", other.backend, main.backend));
  }
  if (main.gradient_bytes_per_step > 0 && other.gradient_bytes_per_step > 0 &&
      std::fabs(other.gradient_bytes_per_step / main.gradient_bytes_per_step - 1) > 0.01) {
    refuse(fmt::format("it synchronises {:.3f} MB of gradients per step, the traces analysed {:.3f} MB (another model)",
                       other.gradient_bytes_per_step / 1e6, main.gradient_bytes_per_step / 1e6));
  }
}

// Rank 0's collectives over its steps: (sizes, steps), for pricing a mean step.
struct StepCollectives {
  std::vector<int64_t> bytes;
  double steps = 1;
  bool sized = true;
};

StepCollectives collectives_of(const TracedRank& rank) {
  StepCollectives out;
  out.steps = static_cast<double>(std::max<std::size_t>(1, rank.steps.steps.size()));
  for (const CollectiveCall& c : rank.steps.collectives) {
    out.bytes.push_back(c.bytes);
    out.sized &= c.bytes > 0;
  }
  return out;
}

// The ring allreduces of a mean step's collectives on a link, in ms.
double ring_ms(const StepCollectives& c, int devices, const TraceLink& link) {
  double seconds = 0;
  for (int64_t bytes : c.bytes) {
    seconds +=
        ring_allreduce_seconds(devices, static_cast<double>(bytes), link.alpha_seconds, link.beta_bytes_per_second);
  }
  return 1e3 * seconds / c.steps;
}

}  // namespace

TracedScale traced_scale(const TraceAnalysis& a, const std::string& label) {
  TracedScale out;
  out.label = label;
  out.devices = a.job.world_size;
  out.on_gpu = !a.job.ranks.empty() && a.job.ranks.front().steps.on_gpu;
  out.backend = a.job.backend;
  for (const RankBreakdown& b : a.ranks) {
    out.compute_ms = std::max(out.compute_ms, b.step_ms - comm_wait_ms(b));
    out.spread = b.steps < 2 ? kNaN : std::max(out.spread, b.step_ms > 0 ? b.step_ms_stddev / b.step_ms : 0.0);
  }
  if (!a.job.ranks.empty()) {
    const RankSteps& first = a.job.ranks.front().steps;
    double bytes = 0;
    bool known = false;
    for (const CollectiveCall& c : first.collectives) {
      if (c.origin != CollectiveOrigin::kGradient) continue;
      known = c.bytes > 0;
      if (!known) break;
      bytes += static_cast<double>(c.bytes);
    }
    if (known && !first.steps.empty()) out.gradient_bytes_per_step = bytes / static_cast<double>(first.steps.size());
  }
  return out;
}

std::optional<TracePrediction> predict_from_traces(const TraceAnalysis& a, std::string& why,
                                                   const std::vector<TracedScale>& others) {
  TracePrediction p;
  const TracedRank& first = a.job.ranks.front();
  const StepCollectives collectives = collectives_of(first);
  const bool matched = a.collectives && a.collectives->matched > 0;
  const int world = a.job.world_size;
  const TracedScale main = traced_scale(a);
  for (const TracedScale& other : others) {
    refuse_another_training(main, other);
    if (other.devices == main.devices) {
      p.notes.push_back(fmt::format(
          "--scaling-from {} is at the same device count ({}) as the traces analysed: a second measurement of "
          "that count, no new scaling point",
          other.label, other.devices));
    }
  }
  if (main.compute_ms <= 0) {
    why = "the traced steps have no duration outside their communication waits: nothing to scale";
    return std::nullopt;
  }
  if (collectives.bytes.empty()) {
    why = a.ranks.size() >= 2
              ? fmt::format(
                    "the {} ranks' traces hold no collective (gloo's and NCCL's are recorded with the "
                    "profiler's CPU and CUDA activities): what the communication costs is unknown",
                    a.ranks.size())
              : fmt::format(
                    "rank {}'s trace holds no collective (a job of one device synchronises nothing): what "
                    "synchronising its gradients would cost is unknown; trace it on two devices",
                    first.rank);
    return std::nullopt;
  }
  if (!collectives.sized && !matched) {
    why = fmt::format(
        "rank {}'s trace does not give its collectives' sizes (record_shapes=True, or Kineto's "
        "collective metadata, gives them) and no collective was matched across ranks to time them",
        first.rank);
    return std::nullopt;
  }
  std::vector<TracedScale> jobs = others;
  jobs.push_back(main);
  p.compute_ms = main.compute_ms;
  if (const auto fitted = fit_compute(jobs, p.notes)) {
    std::tie(p.compute_ms, p.contention) = *fitted;
    for (const TracedScale& j : jobs) p.fitted_devices.push_back(j.devices);
    std::sort(p.fitted_devices.begin(), p.fitted_devices.end());
    p.fitted_devices.erase(std::unique(p.fitted_devices.begin(), p.fitted_devices.end()), p.fitted_devices.end());
  }
  const auto compute_at = [&](int devices) { return std::max(0.0, p.compute_ms * (1 + p.contention * (devices - 1))); };
  p.collectives_per_step = static_cast<double>(collectives.bytes.size()) / collectives.steps;
  if (collectives.sized) {
    double bytes = 0;
    for (int64_t b : collectives.bytes) bytes += static_cast<double>(b);
    p.bytes_per_step = bytes / collectives.steps;
  }

  double transfer = 0;  // ms per step, measured at the traced world size
  if (matched) {
    transfer = a.collectives->transfer_ms_per_step.front();
    // The slowest rank sets the pace: its training thread's block on communication, per ms of
    // the collectives' transfer, is what grows with their cost elsewhere.
    const std::size_t r = slowest_rank(a);
    p.blocked_per_transfer = transfer > 0 ? comm_wait_ms(a.ranks[r]) / transfer : 1.0;
  } else {
    p.unknown.push_back(fmt::format(
        "how much of the communication hides under compute ({} of the job's {} ranks traced, no collective matched "
        "across ranks: taken as none)",
        a.ranks.size(), world));
  }
  if (matched) {
    if (collectives.sized) {
      if (const std::optional<TraceLink> link = measured_link(a)) p.links.push_back(*link);
    } else {
      p.links.push_back({"measured", 0, 0});
    }
  }
  if (collectives.sized) {
    for (const Interconnect& preset : interconnect_presets()) {
      p.links.push_back({preset.name, preset.alpha_seconds, preset.beta_bytes_per_second});
    }
  } else {
    p.unknown.push_back(
        "the collectives' sizes (record_shapes=True gives them): only the measured link, its time "
        "scaled as a ring's bytes per rank");
  }
  p.unknown.push_back(
      "samples per second (the per-device batch is not in a trace): throughput is relative to one "
      "device");
  // On the measured link the ring's cost is scaled from the measured transfer, so the traced
  // device count's row is the step the traces measured.
  const auto ring_share = [](int devices) { return 2.0 * (devices - 1) / devices; };
  const auto measured_ms = [&](const TraceLink& link, int devices) {
    if (!collectives.sized) return transfer * ring_share(devices) / ring_share(world);
    const double at_world = ring_ms(collectives, world, link);
    return at_world > 0 ? transfer * ring_ms(collectives, devices, link) / at_world : 0.0;
  };

  // Each traced job is a measured point of the band: it grows with the distance from the nearest.
  const WorkloadConfig same;  // the traces give no sizes: only the device count differs
  std::vector<MeasuredPoint> traced;
  bool spread_known = true;
  for (const TracedScale& j : jobs) {
    spread_known &= std::isfinite(j.spread);
    traced.push_back({.devices = j.devices,
                      .batch_size = same.batch_size,
                      .hidden_size = same.hidden_size,
                      .hidden_layers = same.hidden_layers,
                      .error = std::isfinite(j.spread) ? j.spread : 0.0});
  }
  if (!spread_known) p.unknown.push_back("the bands (a job traced for one step has no step-to-step spread)");
  std::set<int> counts{1, 2, 3, 4, 8, 16, world};  // 3: the seed's question
  for (const TracedScale& j : jobs) counts.insert(j.devices);
  for (const TraceLink& link : p.links) {
    for (int devices : counts) {
      TracePredictionRow row;
      row.devices = devices;
      row.link = link.name;
      WorkloadConfig at = same;
      at.devices = devices;
      row.band = spread_known ? prediction_band(traced, at).relative : kNaN;
      row.comm_ms = link.name == "measured" ? measured_ms(link, devices) : ring_ms(collectives, devices, link);
      row.step_ms = compute_at(devices) + p.blocked_per_transfer * row.comm_ms;
      row.throughput = row.step_ms > 0 ? devices * compute_at(1) / row.step_ms : 0;
      p.rows.push_back(row);
    }
  }
  // A fit that misses a traced job by more than that job's own spread is said.
  if (!p.fitted_devices.empty()) {
    for (const TracedScale& j : jobs) {
      const double error = compute_at(j.devices) / j.compute_ms - 1;
      const double band = std::max(std::isfinite(j.spread) ? j.spread : 0.0, kBandFloor);
      if (std::fabs(error) > band) {
        p.notes.push_back(fmt::format(
            "the compute fitted across the jobs misses {} (traced at {} devices) by {:+.0f} %, beyond its steps' "
            "±{:.0f} %: the jobs' compute does not grow as one line with the devices",
            j.label, j.devices, 100 * error, 100 * band));
      }
    }
  }
  return p;
}

}  // namespace ddp
