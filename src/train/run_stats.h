#pragma once
// What a run measured, turned into summary.json (schema ddpscope.summary/1, DESIGN §2).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dist/grad_reducer.h"
#include "observe/phase.h"

namespace ddp {

using PhaseSeconds = std::array<double, kPhaseCount>;

struct RunStats {
  std::string accelerator = "cpu";
  std::string strategy = "single";
  int world_size = 1;
  std::vector<std::string> hosts;  // every rank's host name, indexed by rank
  int64_t epochs = 0;  // completed
  // Since the start, at the end of the first and of the last completed epoch: what the
  // doctor needs to extrapolate from steady epochs (a list would grow with the run).
  double first_epoch_end_seconds = 0;
  double last_epoch_end_seconds = 0;
  int64_t optimizer_steps = 0;      // the global step: a resumed run counts from its checkpoint's
  int64_t optimizer_steps_run = 0;  // by this process: what its throughput counts, as train_samples
  int64_t train_samples = 0;  // over all ranks
  double wall_seconds = 0;
  std::optional<double> final_train_loss;
  std::optional<double> final_val_loss;
  std::vector<PhaseSeconds> phases_per_rank;
  std::vector<std::array<int64_t, kPhaseCount>> phase_calls_per_rank;
  double training_flops_per_sample = 0;  // model GEMM FLOPs, forward and backward
  double gemm_peak_flops_per_second = 0;  // measured on this core at the end of the run
  // Per rank: (seconds since the run started, device utilization %), at most a few hundred.
  std::vector<std::vector<std::pair<double, double>>> utilization_per_rank;
  AllreduceStats allreduce;  // rank zero's
  std::vector<AllreduceStats> allreduce_per_rank;
};

// config: the resolved options as text; numbers and booleans become JSON numbers/booleans.
nlohmann::ordered_json summary_json(const RunStats& stats,
                                    const std::vector<std::pair<std::string, std::string>>& config);

// The same options as a JSON object (also used by later tools that embed a config).
nlohmann::ordered_json config_json(const std::vector<std::pair<std::string, std::string>>& config);

}  // namespace ddp
