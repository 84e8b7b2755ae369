#include "train/loop/utilization_watch.h"

#include <cstring>
#include <optional>
#include <string>

#include "dist/gather.h"

namespace ddp {

UtilizationWatch::UtilizationWatch(const TrainerOptions& options, bool on_gpu, const std::string& gpu_pci_bus_id) {
  if (options.monitor_interval_ms == 0) return;
  MonitorOptions monitor_options;
  monitor_options.interval_ms = options.monitor_interval_ms;
  monitor_options.device_cores = options.threads_per_device;
  monitor_options.gpu = on_gpu;
  if (on_gpu && !gpu_pci_bus_id.empty()) {
    // The rank's GPU in NVML's numbering; where NVML cannot say, the monitor reports why.
    const NvmlSession nvml = NvmlSession::open(monitor_options.nvml_library, nullptr);
    if (const std::optional<unsigned int> index = nvml.index_of(gpu_pci_bus_id)) {
      monitor_options.device_index = static_cast<int>(*index);
    }
  }
  if (options.monitor_mode == MonitorMode::kPerStep) {
    // The seed's habit in full: NVML is loaded, initialised and shut down in every step,
    // whether or not a GPU is there (without a driver the failed load is paid each time).
    monitor_options.gpu = true;
    probe_ = std::make_unique<PerStepProbe>(monitor_options);
  } else {
    monitor_ = std::make_unique<DeviceMonitor>(monitor_options);
    monitor_->start();
  }
}

UtilizationWatch::~UtilizationWatch() = default;

void UtilizationWatch::probe() { probed_utilization_ = probe_->probe_once().utilization(); }

Metrics UtilizationWatch::gather_latest(Communicator& comm) const {
  if (!monitor_ && !probe_) return {};
  const double mine = monitor_ ? monitor_->latest().utilization() : probed_utilization_;
  const std::vector<double> all = comm.allgather(mine);
  Metrics out;
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r] >= 0) out.emplace_back("device_" + std::to_string(r) + "_utilization", all[r]);
  }
  return out;
}

void UtilizationWatch::stop() {
  if (monitor_) monitor_->stop();
}

std::vector<UtilizationPoint> UtilizationWatch::points() const {
  std::vector<UtilizationPoint> points;
  if (!monitor_ && !probe_) return points;
  const int64_t started = steady_ns(monitor_ ? monitor_->started_at() : probe_->started_at());
  for (const DeviceSample& s : monitor_ ? monitor_->samples() : probe_->samples()) {
    if (s.utilization() >= 0) points.push_back({started + static_cast<int64_t>(s.seconds * 1e9), s.utilization()});
  }
  return points;
}

std::vector<std::vector<std::pair<double, double>>> UtilizationWatch::gather_series(
    Communicator& comm, std::chrono::steady_clock::time_point start) const {
  constexpr std::size_t kMaxPoints = 300;
  const std::vector<UtilizationPoint> all = points();
  const std::size_t stride = all.size() / kMaxPoints + 1;
  std::vector<std::pair<double, double>> mine;
  for (std::size_t i = 0; i < all.size(); i += stride) {
    mine.emplace_back((all[i].time_ns - steady_ns(start)) * 1e-9, all[i].percent);
  }
  std::vector<std::vector<std::pair<double, double>>> series;
  for (const auto& part : gather_at_rank_zero(comm, std::as_bytes(std::span(mine)))) {
    std::vector<std::pair<double, double>> one(part.size() / sizeof(std::pair<double, double>));
    if (!part.empty()) std::memcpy(static_cast<void*>(one.data()), part.data(), part.size());
    series.push_back(std::move(one));
  }
  return series;
}

}  // namespace ddp
