#pragma once
// The utilization of the device this rank drives, measured two ways:
// - DeviceMonitor samples on its own thread every interval_ms, so the training thread pays
//   only for reading the latest sample (a short lock);
// - PerStepProbe is the seed's habit, kept to measure its cost: inside every training step
//   it opens everything, reads every device and closes it again, synchronously.
// Both keep their readings in a SampleRing, for traces, summaries and reports.
// On CPU ranks a device is the rank's compute cores (MonitorOptions::device_cores): the busy
// share of the cores it may run on from /proc/stat, and the process's own CPU time against its
// device's cores. On GPU ranks NVML adds the GPU's utilization and memory.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "observe/cpu_usage.h"
#include "observe/device_sample.h"
#include "observe/nvml_probe.h"

namespace ddp {

struct MonitorOptions {
  int interval_ms = 100;  // 0: off
  // The cores one CPU device is: the rank's compute threads (--threads-per-device), at most the
  // cores it may run on. Its utilization is the process's CPU time against these, so that one
  // rank training flat out reads near 100 % whether or not it is pinned to them (0: every core it
  // may run on).
  int device_cores = 0;
  bool gpu = false;      // also read NVML
  int device_index = 0;  // the GPU this rank drives, in NVML's numbering
  std::string nvml_library = kNvmlLibrary;
  // Samples kept (the latest ones), reserved up front: 109 minutes at 100 ms, or 65,536
  // per-step probes; 2.5 MiB.
  std::size_t max_samples = std::size_t{1} << 16;
};

class DeviceMonitor {
 public:
  explicit DeviceMonitor(MonitorOptions options = {});
  ~DeviceMonitor();  // stops
  DeviceMonitor(const DeviceMonitor&) = delete;
  DeviceMonitor& operator=(const DeviceMonitor&) = delete;

  // Starts the sampler thread; the cores watched are the calling thread's affinity, so call
  // it after the rank is pinned. Nothing happens when interval_ms is 0. Calling start()
  // again after stop() begins a new recording. The first sample comes kFirstSampleDelay
  // after start (or one interval, when that is shorter), then one every interval.
  void start();
  // Wakes the sampler, which takes a last sample (the end of the run), and joins it
  // (prompt: it does not wait out the interval). Idempotent.
  void stop();
  bool running() const { return thread_.joinable(); }

  // The last sample (all -1 before the first one). Safe from any thread while sampling.
  DeviceSample latest() const;
  // The kept samples, oldest first (for traces and reports).
  std::vector<DeviceSample> samples() const;
  // Samples taken since start(), including any the ring dropped as it wrapped around.
  std::size_t sample_count() const;

  const MonitorOptions& options() const { return options_; }
  // The time DeviceSample::seconds counts from: the last start(). For placing samples on
  // other clocks (trace counters).
  std::chrono::steady_clock::time_point started_at() const { return started_; }

  // Two jiffies: the kernel's per-core counters have surely moved by then, so even a run
  // shorter than one interval gets a measured sample at its start.
  static constexpr std::chrono::milliseconds kFirstSampleDelay{20};

 private:
  using Clock = std::chrono::steady_clock;
  void run();

  MonitorOptions options_;
  Clock::time_point started_{};

  // The sampler thread waits on wake_ for the next tick or for stop().
  std::mutex stop_mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;

  // Guarded by data_mutex_, held for a copy only.
  mutable std::mutex data_mutex_;
  SampleRing ring_;
  DeviceSample latest_;
};

// The seed's per-step probe. probe_once() runs the whole cycle synchronously every call:
// open, read and close /proc/stat and /proc/self/stat; with options.gpu also NVML's init,
// a read of every device and its shutdown, as pynvml does them (the library loaded once per
// process; when it is absent the failed dlopen is paid every time, as pynvml pays it). The
// cost is the point: the Trainer charges it to the `monitor` phase. Each result is also
// kept, in a ring reserved at construction.
class PerStepProbe {
 public:
  // Reads the baselines that the first probe_once() measures against, and reserves
  // max_samples. interval_ms is unused.
  explicit PerStepProbe(MonitorOptions options = {});

  // The CPU values cover the time since the last call that saw the cores' counters move:
  // they move in whole jiffies (10 ms), so probes closer together than that repeat the last
  // value (-1 until the first move). GPU values are device_index's (all devices are read).
  DeviceSample probe_once();

  // The kept results, oldest first, and how many probes ran (as DeviceMonitor's).
  std::vector<DeviceSample> samples() const { return ring_.ordered(); }
  std::size_t sample_count() const { return ring_.count(); }
  // The time DeviceSample::seconds counts from: construction.
  std::chrono::steady_clock::time_point started_at() const { return started_; }

 private:
  using Clock = std::chrono::steady_clock;

  MonitorOptions options_;
  std::vector<int> cores_;
  std::string buffer_;
  Clock::time_point started_;
  // The readings the next result is measured from, and the last result.
  std::optional<CoreJiffies> base_jiffies_;
  std::optional<double> base_process_seconds_;
  Clock::time_point base_time_;
  DeviceSample last_;
  SampleRing ring_;
};

}  // namespace ddp
