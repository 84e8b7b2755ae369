#pragma once
// What the sizes the seed's author tried (more layers, larger batches, wider layers) answer:
// not that more arithmetic takes longer, but whether N devices then beat one. For each size
// ablation that ran at one device and at the largest device count: the speedup of N devices
// over one at that size, beside the baseline's, and the N-device run's samples per second.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "doctor/findings.h"
#include "doctor/run_record.h"

namespace ddp {

struct SizeSpeedup {
  std::string name;  // "width=1024"
  int devices = 0;   // N
  double one_device_wall_seconds = 0;
  double wall_seconds = 0;  // at N devices
  double speedup = 0;       // one_device_wall_seconds / wall_seconds
  double baseline_speedup = 0;
  double samples_per_second = 0;  // at N devices
  std::string error;              // non-empty: a run of the pair (or a baseline) failed; no numbers
};

// `runs`: the doctor's runs by increasing devices (the baselines).
std::vector<SizeSpeedup> size_speedups(const std::vector<AblationResult>& ablations,
                                       const std::vector<RunRecord>& runs);

nlohmann::ordered_json to_json(const SizeSpeedup& s);

// "width=1024: 2 devices beat 1 at 1.45x (the baseline: 0.60x); ..." for the text.
std::string describe(const SizeSpeedup& s);

}  // namespace ddp
