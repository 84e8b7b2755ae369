#include "analyze/trace_prediction.h"

#include "analyze/trace_analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "doctor/interconnect.h"
#include "doctor/prediction_band.h"
#include "doctor/scaling_model.h"

namespace ddp {
namespace {

std::size_t index(StepPart part) { return static_cast<std::size_t>(part); }

// The link the traces measured: from each matched collective's transfer (its shortest duration
// over the ranks) and size. With one size only, its time is taken as all bandwidth (a gradient
// bucket is megabytes: latency is the smaller part).
std::optional<TraceLink> measured_link(const TraceAnalysis& a) {
  if (!a.collectives || a.collectives->matched == 0 || a.ranks.size() < 2) return std::nullopt;
  const int world = static_cast<int>(a.ranks.size());
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

// compute(N) = c1 * (1 + k (N - 1)) by least squares over the jobs: (c1, k), or nullopt when
// they hold one device count only.
std::optional<std::pair<double, double>> fit_compute(const std::vector<TracedScale>& jobs) {
  double mean_x = 0, mean_y = 0;
  for (const TracedScale& j : jobs) {
    mean_x += j.devices - 1;
    mean_y += j.compute_ms;
  }
  mean_x /= static_cast<double>(jobs.size());
  mean_y /= static_cast<double>(jobs.size());
  double sxx = 0, sxy = 0;
  for (const TracedScale& j : jobs) {
    sxx += (j.devices - 1 - mean_x) * (j.devices - 1 - mean_x);
    sxy += (j.devices - 1 - mean_x) * (j.compute_ms - mean_y);
  }
  if (sxx <= 0) return std::nullopt;
  // Ranks that keep their per-device batch do not speed each other up: a slope below zero is
  // the jobs' noise, and extrapolated it would promise more than linear scaling.
  const double slope = std::max(0.0, sxy / sxx);
  const double c1 = slope > 0 ? mean_y - slope * mean_x : mean_y;
  if (c1 <= 0) return std::nullopt;
  return std::pair{c1, slope / c1};
}

}  // namespace

TracedScale traced_scale(const TraceAnalysis& a) {
  TracedScale out;
  out.devices = static_cast<int>(a.ranks.size());
  for (const RankBreakdown& b : a.ranks) {
    out.compute_ms = std::max(out.compute_ms, b.step_ms - b.part_ms[index(StepPart::kCommWait)]);
    out.spread = std::max(out.spread, b.step_ms > 0 ? b.step_ms_stddev / b.step_ms : 0.0);
  }
  return out;
}

std::optional<TracePrediction> predict_from_traces(const TraceAnalysis& a, std::string& why,
                                                   const std::vector<TracedScale>& others) {
  TracePrediction p;
  const TracedRank& first = a.job.ranks.front();
  const bool sized = std::all_of(first.steps.collectives.begin(), first.steps.collectives.end(),
                                 [](const CollectiveCall& c) { return c.bytes > 0; });
  const bool matched = a.collectives && a.collectives->matched > 0;
  const int world = static_cast<int>(a.ranks.size());
  double comm_wait = 0;
  for (const RankBreakdown& b : a.ranks) comm_wait += b.part_ms[index(StepPart::kCommWait)];
  std::vector<TracedScale> jobs = others;
  jobs.push_back(traced_scale(a));
  p.compute_ms = jobs.back().compute_ms;
  if (const auto fitted = fit_compute(jobs)) {
    std::tie(p.compute_ms, p.contention) = *fitted;
    for (const TracedScale& j : jobs) p.fitted_devices.push_back(j.devices);
    std::sort(p.fitted_devices.begin(), p.fitted_devices.end());
    p.fitted_devices.erase(std::unique(p.fitted_devices.begin(), p.fitted_devices.end()), p.fitted_devices.end());
  }
  const double n = static_cast<double>(a.ranks.size());
  // One step's collectives: the step with the most of them.
  std::vector<std::vector<int64_t>> sizes(first.steps.steps.size());
  for (const CollectiveCall& c : first.steps.collectives) sizes[c.step].push_back(c.bytes);
  for (const auto& s : sizes) {
    if (s.size() > p.bytes_per_step.size()) p.bytes_per_step.assign(s.begin(), s.end());
  }
  double transfer = 0;  // ms per step, measured at the traced world size
  if (matched) {
    for (double ms : a.collectives->transfer_ms_per_step) transfer += ms;
    transfer /= n;
    // A collective is in flight for its transfer and its wait for the others; the training
    // thread is blocked on it for comm_wait of that. Blocked in proportion: on gloo the waiting
    // runs on the library's threads, often under backward, so it cannot be subtracted first.
    double waits = 0;
    for (double ms : a.collectives->wait_ms_per_step) waits += ms;
    const double in_flight = transfer + waits / n;
    p.exposed_share = in_flight > 0 ? std::clamp(comm_wait / n / in_flight, 0.0, 1.0) : 1.0;
  } else {
    p.unknown.push_back("how much of the communication hides under compute (one rank traced: taken as none)");
  }
  if (!sized && !matched) {
    why = fmt::format(
        "rank {}'s trace does not give its collectives' sizes (record_shapes=True, or Kineto's "
        "collective metadata, gives them) and no collective was matched across ranks to time them",
        first.rank);
    return std::nullopt;
  }
  if (sized) {
    if (const std::optional<TraceLink> link = measured_link(a)) p.links.push_back(*link);
    for (const Interconnect& preset : interconnect_presets()) {
      p.links.push_back({preset.name, preset.alpha_seconds, preset.beta_bytes_per_second});
    }
  } else {
    // Without sizes the measured transfer scales as the ring's bytes per rank, 2(N-1)/N.
    p.links.push_back({"measured", 0, 0});
    p.unknown.push_back(
        "the collectives' sizes (record_shapes=True gives them): only the measured link, its time "
        "scaled as a ring's bytes per rank");
  }
  p.unknown.push_back(
      "samples per second (the per-device batch is not in a trace): throughput is relative to one "
      "device");
  const auto ring_share = [](int devices) { return 2.0 * (devices - 1) / devices; };
  // Each traced job is a measured point of the band: it grows with the distance from the nearest.
  const WorkloadConfig same;  // the traces give no sizes: only the device count differs
  std::vector<MeasuredPoint> traced;
  for (const TracedScale& j : jobs) {
    traced.push_back({.devices = j.devices,
                      .batch_size = same.batch_size,
                      .hidden_size = same.hidden_size,
                      .hidden_layers = same.hidden_layers,
                      .error = j.spread});
  }
  const auto compute_at = [&](int devices) { return std::max(0.0, p.compute_ms * (1 + p.contention * (devices - 1))); };
  for (const TraceLink& link : p.links) {
    for (int devices : {1, 2, 3, 4, 8, 16}) {  // 3: the seed's question
      TracePredictionRow row;
      row.devices = devices;
      row.link = link.name;
      WorkloadConfig at = same;
      at.devices = devices;
      row.band = prediction_band(traced, at).relative;
      if (sized) {
        for (int64_t bytes : p.bytes_per_step) {
          row.comm_ms += 1e3 * ring_allreduce_seconds(devices, static_cast<double>(bytes), link.alpha_seconds,
                                                      link.beta_bytes_per_second);
        }
      } else {
        row.comm_ms = transfer * ring_share(devices) / ring_share(world);
      }
      row.step_ms = compute_at(devices) + p.exposed_share * row.comm_ms;
      row.throughput = row.step_ms > 0 ? devices * compute_at(1) / row.step_ms : 0;
      p.rows.push_back(row);
    }
  }
  return p;
}

}  // namespace ddp
