#pragma once
// Findings: plain sentences ranked by measured cost, each from a rule over the measurements
// with a documented threshold (docs/scaling-guide.md), never canned: a configuration
// without a problem gets no finding about it.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "doctor/run_record.h"
#include "doctor/scaling_model.h"

namespace ddp {

// Thresholds, as shares of the wall time of the run where the cost is measured.
inline constexpr double kHabitMinShare = 0.02;       // a habit whose removal saves more
inline constexpr double kStartupMinShare = 0.05;     // extra start-up of N devices
inline constexpr double kCommWaitMinShare = 0.03;    // waiting for gradients
inline constexpr double kSharingMinShare = 0.05;     // ranks slowing each other's compute
inline constexpr double kFixedCostMinShare = 0.25;   // fixed part of a micro-batch's compute
inline constexpr double kStragglerMinSpread = 0.10;  // a phase slower on one rank by more
inline constexpr double kStragglerMinShare = 0.06;   // ... and by more than this of the wall (clean: to 4.1 %)
inline constexpr double kEfficiencyFloor = 0.80;     // speedup / N below which scaling is explained

struct Finding {
  std::string title;
  std::string detail;
  double cost_seconds = 0;
  double share_of_wall = 0;
  std::vector<std::string> evidence;  // run labels
  std::string fix;
  // The ± of cost_seconds from the noise, for a finding that rests on two runs; 0 otherwise.
  double cost_uncertainty_seconds = 0;
};

struct AblationResult {
  std::string name;
  std::string habit;  // non-empty: the change removes this habit of the configuration
  std::string fix;
  std::optional<Phase> phase;  // where the habit's time is charged; none: the wall, start-up aside
  RunRecord run;
  const RunRecord* baseline = nullptr;
};

struct FindingInputs {
  std::vector<const RunRecord*> device_runs;  // the compare runs, by increasing devices
  std::vector<AblationResult> ablations;
  ModelParameters model;
  WorkloadConfig workload;  // the configuration at the largest device count
};

std::vector<Finding> find_problems(const FindingInputs& inputs);

nlohmann::ordered_json to_json(const Finding& finding);

}  // namespace ddp
