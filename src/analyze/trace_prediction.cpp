#include "analyze/trace_prediction.h"

#include "analyze/trace_analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

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

}  // namespace

std::optional<TracePrediction> predict_from_traces(const TraceAnalysis& a, std::string& why) {
  TracePrediction p;
  const TracedRank& first = a.job.ranks.front();
  const bool sized = std::all_of(first.steps.collectives.begin(), first.steps.collectives.end(),
                                 [](const CollectiveCall& c) { return c.bytes > 0; });
  const bool matched = a.collectives && a.collectives->matched > 0;
  const int world = static_cast<int>(a.ranks.size());
  double comm_wait = 0;
  for (const RankBreakdown& b : a.ranks) {
    comm_wait += b.part_ms[index(StepPart::kCommWait)];
    p.compute_ms = std::max(p.compute_ms, b.step_ms - b.part_ms[index(StepPart::kCommWait)]);
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
    // What the ranks waited beyond the others' lateness is the transfer they could not hide.
    double waits = 0;
    for (double ms : a.collectives->wait_ms_per_step) waits += ms;
    const double exposed_transfer = std::max(0.0, comm_wait / n - waits / n);
    p.exposed_share = transfer > 0 ? std::clamp(exposed_transfer / transfer, 0.0, 1.0) : 1.0;
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
  double spread = 0;  // the ranks' largest step-to-step standard deviation, relative to their step
  for (const RankBreakdown& b : a.ranks) spread = std::max(spread, b.step_ms > 0 ? b.step_ms_stddev / b.step_ms : 0.0);
  const WorkloadConfig same;  // the traces give no sizes: only the device count differs
  const MeasuredPoint traced{.devices = static_cast<int>(n),
                             .batch_size = same.batch_size,
                             .hidden_size = same.hidden_size,
                             .hidden_layers = same.hidden_layers,
                             .error = spread};
  for (const TraceLink& link : p.links) {
    for (int devices : {1, 2, 4, 8, 16}) {
      TracePredictionRow row;
      row.devices = devices;
      row.link = link.name;
      WorkloadConfig at = same;
      at.devices = devices;
      row.band = prediction_band({traced}, at).relative;
      if (sized) {
        for (int64_t bytes : p.bytes_per_step) {
          row.comm_ms += 1e3 * ring_allreduce_seconds(devices, static_cast<double>(bytes), link.alpha_seconds,
                                                      link.beta_bytes_per_second);
        }
      } else {
        row.comm_ms = transfer * ring_share(devices) / ring_share(world);
      }
      row.step_ms = p.compute_ms + p.exposed_share * row.comm_ms;
      row.throughput = row.step_ms > 0 ? devices * p.compute_ms / row.step_ms : 0;
      p.rows.push_back(row);
    }
  }
  return p;
}

}  // namespace ddp
