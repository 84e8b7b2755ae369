#include "observe/device_monitor.h"

#include <fmt/format.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <utility>

#include "base/check.h"
#include "ddpscope/error.h"

namespace ddp {
namespace {

double seconds_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// CPU time over wall time, shared out over the pinned cores: 100 % when the process keeps
// all of them busy. Clamped because threads outside the mask (or rounding) can exceed it.
// The cores one device is: its compute threads, at most the cores the process may run on.
std::size_t device_cores(const MonitorOptions& options, std::size_t affinity) {
  return options.device_cores > 0 ? std::min(affinity, static_cast<std::size_t>(options.device_cores)) : affinity;
}

double process_percent(double cpu_seconds, double wall_seconds, std::size_t cores) {
  if (!(wall_seconds > 0) || cores == 0) return -1;
  return std::clamp(100.0 * cpu_seconds / (wall_seconds * static_cast<double>(cores)), 0.0, 100.0);
}

void report_cpu_unavailable() {
  static std::atomic<bool> reported{false};
  if (reported.exchange(true)) return;
  std::fprintf(stderr,
               "ddpscope: warning: CPU metrics are unavailable: cannot read the cores' counters in /proc/stat\n");
  std::fflush(stderr);
}

// Opens NVML and checks that the rank's GPU is among its devices; says once why not.
NvmlSession open_gpu(const MonitorOptions& options) {
  std::string why_not;
  NvmlSession nvml = NvmlSession::open(options.nvml_library, &why_not);
  if (nvml.is_open() && static_cast<unsigned int>(options.device_index) >= nvml.device_count()) {
    why_not = fmt::format("GPU {} is not among the {} devices NVML sees", options.device_index, nvml.device_count());
    nvml.close();
  }
  if (!nvml.is_open()) report_gpu_unavailable(why_not);
  return nvml;
}

}  // namespace

DeviceMonitor::DeviceMonitor(MonitorOptions options) : options_(std::move(options)) {
  DDP_CHECK_GE(options_.interval_ms, 0);
  DDP_CHECK_GE(options_.device_index, 0);
  DDP_CHECK_GT(options_.max_samples, 0u);
}

DeviceMonitor::~DeviceMonitor() { stop(); }

void DeviceMonitor::start() {
  if (options_.interval_ms == 0 || running()) return;
  {
    std::lock_guard lock(data_mutex_);
    ring_.reset(options_.max_samples);
    latest_ = DeviceSample{};
  }
  {
    std::lock_guard lock(stop_mutex_);
    stop_ = false;
  }
  started_ = Clock::now();
  thread_ = std::thread([this] { run(); });
  pthread_setname_np(thread_.native_handle(), "ddp-monitor");  // shows in top -H and gdb
}

void DeviceMonitor::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(stop_mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

DeviceSample DeviceMonitor::latest() const {
  std::lock_guard lock(data_mutex_);
  return latest_;
}

std::vector<DeviceSample> DeviceMonitor::samples() const {
  std::lock_guard lock(data_mutex_);
  return ring_.ordered();
}

std::size_t DeviceMonitor::sample_count() const {
  std::lock_guard lock(data_mutex_);
  return ring_.count();
}

void DeviceMonitor::run() {
  // The thread inherits the creator's affinity, so these are the rank's pinned cores.
  const std::vector<int> cores = affinity_cores();
  std::string buffer;
  buffer.reserve(16384);
  NvmlSession nvml;
  if (options_.gpu) nvml = open_gpu(options_);

  std::optional<CoreJiffies> base_jiffies = read_core_jiffies(cores, buffer);
  if (!base_jiffies) report_cpu_unavailable();
  double base_cpu = process_cpu_seconds();
  Clock::time_point base_time = Clock::now();
  double core_busy = -1, process_cpu = -1;

  // Measures the window since the previous sample and records it; returns its time. The last
  // sample measures whatever window is left: there is nothing after it to merge with.
  auto take_sample = [&](bool last) {
    const Clock::time_point now = Clock::now();
    DeviceSample sample;
    sample.seconds = seconds_between(started_, now);

    // A window shorter than kMinUtilizationWindow says little (the counters move in jiffies):
    // keep the last values and let the window grow until it is long enough.
    const std::optional<CoreJiffies> jiffies = read_core_jiffies(cores, buffer);
    if (last || now - base_time >= kMinUtilizationWindow) {
      if (jiffies && base_jiffies) {
        if (const std::optional<double> busy = busy_percent(*base_jiffies, *jiffies)) core_busy = *busy;
      }
      base_jiffies = jiffies;
      const double cpu = process_cpu_seconds();
      process_cpu =
          process_percent(cpu - base_cpu, seconds_between(base_time, now), device_cores(options_, cores.size()));
      base_cpu = cpu;
      base_time = now;
    }
    sample.core_busy_percent = core_busy;
    sample.process_cpu_percent = process_cpu;

    if (nvml.is_open()) {
      if (const std::optional<GpuReading> gpu = nvml.read(static_cast<unsigned int>(options_.device_index))) {
        sample.gpu_percent = gpu->utilization_percent;
        sample.gpu_memory_mb = gpu->memory_used_mb;
      }
    }

    std::lock_guard data_lock(data_mutex_);
    ring_.push(sample);
    latest_ = sample;
    return now;
  };

  const std::chrono::milliseconds interval(options_.interval_ms);
  Clock::time_point next = started_ + std::min(interval, kFirstSampleDelay);
  std::unique_lock lock(stop_mutex_);
  while (!wake_.wait_until(lock, next, [this] { return stop_; })) {
    lock.unlock();
    const Clock::time_point now = take_sample(false);
    // Ticks stay on the grid started_ + k * interval; after a stall (a busy machine) skip
    // the missed ones instead of sampling in a burst.
    next = started_ + interval * ((now - started_) / interval + 1);
    lock.lock();
  }
  lock.unlock();
  take_sample(true);  // the end of the recording, however short it was
}

PerStepProbe::PerStepProbe(MonitorOptions options)
    : options_(std::move(options)), cores_(affinity_cores()), started_(Clock::now()) {
  DDP_CHECK_GE(options_.device_index, 0);
  DDP_CHECK_GT(options_.max_samples, 0u);
  buffer_.reserve(16384);
  ring_.reset(options_.max_samples);
  base_jiffies_ = read_core_jiffies(cores_, buffer_);
  base_process_seconds_ = read_process_cpu_seconds_proc(buffer_);
  base_time_ = Clock::now();
}

DeviceSample PerStepProbe::probe_once() {
  DeviceSample sample = last_;
  const Clock::time_point now = Clock::now();
  sample.seconds = seconds_between(started_, now);

  const std::optional<CoreJiffies> jiffies = read_core_jiffies(cores_, buffer_);
  const std::optional<double> process_seconds = read_process_cpu_seconds_proc(buffer_);
  // Both counters move in jiffies: measure over a window of kMinUtilizationWindow at least
  // (a step of 1-2 ms would read 0 or 100 %); a shorter one repeats the last values.
  bool moved = false;
  if (now - base_time_ >= kMinUtilizationWindow) {
    moved = true;
    if (jiffies && base_jiffies_) {
      if (const std::optional<double> busy = busy_percent(*base_jiffies_, *jiffies)) sample.core_busy_percent = *busy;
    }
  }
  if (moved) {
    if (process_seconds && base_process_seconds_) {
      sample.process_cpu_percent =
          process_percent(*process_seconds - *base_process_seconds_, seconds_between(base_time_, now),
                          device_cores(options_, cores_.size()));
    }
    base_jiffies_ = jiffies;
    base_process_seconds_ = process_seconds;
    base_time_ = now;
  }

  if (options_.gpu) {
    // The seed's cycle: nvmlInit, every device's utilization, nvmlShutdown, every step.
    sample.gpu_percent = -1;
    sample.gpu_memory_mb = -1;
    std::string why_not;
    NvmlSession nvml = NvmlSession::open(options_.nvml_library, &why_not);
    for (unsigned int i = 0; i < nvml.device_count(); ++i) {
      const std::optional<GpuReading> gpu = nvml.read(i, &why_not);
      if (gpu && i == static_cast<unsigned int>(options_.device_index)) {
        sample.gpu_percent = gpu->utilization_percent;
        sample.gpu_memory_mb = gpu->memory_used_mb;
      }
    }
    if (nvml.is_open() && static_cast<unsigned int>(options_.device_index) >= nvml.device_count()) {
      why_not = fmt::format("GPU {} is not among the {} devices NVML sees", options_.device_index, nvml.device_count());
    }
    nvml.close();
    if (sample.gpu_percent < 0) report_gpu_unavailable(why_not);
  }
  last_ = sample;
  ring_.push(sample);
  return sample;
}

}  // namespace ddp
