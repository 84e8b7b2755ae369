#pragma once
// One reading of the device a rank drives, and the bounded ring that keeps the latest
// readings of a run. Both the background monitor and the per-step probe record into one.
#include <cstddef>
#include <vector>

namespace ddp {

// Percentages are 0..100; -1 means not measured (off, unavailable, or no clock tick yet).
struct DeviceSample {
  double seconds = 0;               // since the recording started
  double core_busy_percent = -1;    // the pinned cores' non-idle share, all processes
  double process_cpu_percent = -1;  // this process's CPU time over wall time, per pinned core
  double gpu_percent = -1;
  double gpu_memory_mb = -1;  // MiB used on the GPU, all processes

  // The seed's device_<i>_utilization: the GPU's when it was read; on a CPU rank what its own
  // threads used of its cores (the cores' busy share counts every process, and a rank's cores
  // need not be its alone), else the cores' busy share where the process's time is unknown.
  double utilization() const {
    if (gpu_percent >= 0) return gpu_percent;
    return process_cpu_percent >= 0 ? process_cpu_percent : core_busy_percent;
  }
};

// The latest `capacity` samples, in storage reserved by reset(): push() never allocates,
// so it can run inside every training step. Not thread-safe; owners lock around it.
class SampleRing {
 public:
  void reset(std::size_t capacity);
  void push(const DeviceSample& sample);
  // The kept samples, oldest first.
  std::vector<DeviceSample> ordered() const;
  // Samples pushed since reset(), including any the ring dropped as it wrapped around.
  std::size_t count() const { return count_; }

 private:
  std::vector<DeviceSample> slots_;
  std::size_t capacity_ = 0;
  std::size_t count_ = 0;  // slots_[count_ % capacity_] is the next slot once full
};

}  // namespace ddp
