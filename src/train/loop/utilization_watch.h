#pragma once
// The device utilization a run logs (the seed's gpu_<i>_utilization, as
// device_<rank>_utilization): sampled by a background monitor, or with --monitor-mode
// per-step by the seed's own habit (initialise, read every device, shut down, every step).
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ddpscope/config.h"
#include "dist/communicator.h"
#include "log/logger.h"
#include "observe/device_monitor.h"
#include "observe/trace_writer.h"

namespace ddp {

class UtilizationWatch {
 public:
  // After the rank is pinned: the monitor watches the cores this process may run on, and
  // with on_gpu the GPU through NVML: the one at gpu_pci_bus_id (GpuTraining::pci_bus_id),
  // else NVML's first. --monitor-interval-ms 0 watches nothing.
  UtilizationWatch(const TrainerOptions& options, bool on_gpu, const std::string& gpu_pci_bus_id = "");
  ~UtilizationWatch();

  // Per step with --monitor-mode per-step, else false.
  bool probes_every_step() const { return probe_ != nullptr; }
  void probe();
  // Collective: device_<rank>_utilization of every rank that has a reading.
  Metrics gather_latest(Communicator& comm) const;
  void stop();
  // What was measured (the background samples, or the probe's readings), on the steady clock.
  std::vector<UtilizationPoint> points() const;
  // Collective: every rank's points as (seconds since start, percent), at most a few
  // hundred per rank, at rank zero (empty elsewhere).
  std::vector<std::vector<std::pair<double, double>>> gather_series(Communicator& comm,
                                                                    std::chrono::steady_clock::time_point start) const;

 private:
  std::unique_ptr<DeviceMonitor> monitor_;  // --monitor-mode background
  std::unique_ptr<PerStepProbe> probe_;     // --monitor-mode per-step
  double probed_utilization_ = -1;
};

}  // namespace ddp
