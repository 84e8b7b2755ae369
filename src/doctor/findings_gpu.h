#pragma once
// What one optimizer step of a GPU run spends its time on, from the fitted prices: the
// arithmetic, the launches' fixed cost, the host, the probe. At the seed's size a GPU step
// costs what its launches and the host cost, not its FLOPs; the threshold is documented in
// docs/scaling-guide.md ("A GPU step").
#include <vector>

#include "doctor/findings.h"

namespace ddp {

inline constexpr double kGpuOverheadMinShare = 0.25;  // a step's time beyond its arithmetic, of the step

// One GPU step's parts at the configuration's size, seconds per optimizer step.
struct GpuStepParts {
  int64_t micro_batches = 1;
  int64_t launches = 0;
  double arithmetic = 0;  // the GEMMs' FLOPs at the fitted rate
  double launch_fixed = 0;
  double data = 0;
  double optimizer = 0;
  double host = 0;   // what the device waited for the host
  double eager = 0;  // launches from the host (--no-cuda-graph)
  double monitor = 0;
  double total() const { return arithmetic + launch_fixed + data + optimizer + host + eager + monitor; }
};

GpuStepParts gpu_step_parts(const ModelParameters& model, const WorkloadConfig& workload);

// On a GPU, when the step spends more than kGpuOverheadMinShare beyond its arithmetic: one
// finding that says where, with the fix for the largest part.
void gpu_step_finding(const FindingInputs& inputs, std::vector<Finding>& out);

}  // namespace ddp
