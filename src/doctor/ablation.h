#pragma once
// The ablations of the doctor: each changes one thing of the configuration (one habit of
// the seed's script, or one size the seed's author tried), run at 1 device and at the
// largest device count.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ddpscope/config.h"
#include "observe/phase.h"
#include "train/config/run_config.h"

namespace ddp {

// The fix for launching each kernel from the host, in its ablation and the GPU step's finding.
inline constexpr const char* kCudaGraphFix =
    "Drop `--no-cuda-graph`: one CUDA graph per step launches the whole step at once.";

struct Ablation {
  std::string name;  // "monitor-per-step", "batch=1024", ...
  // What the change does, in a sentence for the report.
  std::string description;
  // Set when the change switches a habit of the configuration off: the habit, as a finding
  // names it, and the fix it recommends.
  std::string habit;
  std::string fix;
  // The phase that carries the habit's time (monitor, data, comm_wait): its cost is measured
  // there directly, not as a difference of two runs' noisy wall times. Empty for a habit
  // spread over every phase (a GPU's eager launches): then it is the wall's difference.
  std::optional<Phase> phase;
  bool multi_device_only = false;
  std::function<void(Config&)> apply;
};

// The ablations that make sense for this configuration: each habit switched to its other
// setting, batch sizes 16..1024, widths 64..1024, 4 and 8 extra hidden layers (values equal
// to the configuration's own are skipped).
// On a CPU, then the catalogue's, for this machine's cores (available_cores()). On a GPU
// (accelerator cuda, one device), the habits are the per-step probe and the CUDA graph
// (--no-cuda-graph), then the precision (32-true against tf32) and the sizes.
std::vector<Ablation> plan_ablations(const Config& config, int max_devices);

// Whether an ablation of that name changes the work (a size the seed's author tried: "batch=",
// "width=", "layers+"), not a habit: its wall against the baseline says only that more
// arithmetic takes longer (doctor/size_speedup.h says what it tells).
bool changes_work(std::string_view ablation_name);

// The catalogue's ablations (docs/scaling-guide.md) on a machine where the job may use
// `cores` per host:
//   threads-per-device=F   F = max(1, cores / ranks per host), when threads_per_device exceeds it
//   loader-workers=W+1     with W > 0 workers, when the host has a core for another one
//   bucket_cap_mb=X        caps giving about 2, 4 and 8 buckets, when the gradient is at least
//                          kBucketSweepMinGradientBytes (findings_catalogue.h) and N > 1
std::vector<Ablation> plan_catalogue_ablations(const Config& config, int max_devices, int cores);

// The bucket caps (MB) of the sweep for this configuration on `devices` ranks, by increasing
// bucket count; empty below kBucketSweepMinGradientBytes.
std::vector<double> bucket_sweep_caps_mb(const Config& config, int devices);

}  // namespace ddp
