#pragma once
// The ablations of the doctor: each changes one thing of the configuration (one habit of
// the seed's script, or one size the seed's author tried), run at 1 device and at the
// largest device count.
#include <functional>
#include <string>
#include <vector>

#include "ddpscope/config.h"

namespace ddp {

struct Ablation {
  std::string name;  // "monitor-per-step", "batch=1024", ...
  // What the change does, in a sentence for the report.
  std::string description;
  // Set when the change switches a habit of the configuration off: the habit, as a finding
  // names it, and the fix it recommends.
  std::string habit;
  std::string fix;
  // The phase that carries the habit's time (monitor, data, comm_wait): its cost is measured
  // there directly, not as a difference of two runs' noisy wall times.
  std::string phase;
  bool multi_device_only = false;
  std::function<void(Config&)> apply;
};

// The ablations that make sense for this configuration: each habit switched to its other
// setting, batch sizes 16..1024, widths 64..1024, 4 and 8 extra hidden layers (values equal
// to the configuration's own are skipped).
std::vector<Ablation> plan_ablations(const Config& config, int max_devices);

}  // namespace ddp
