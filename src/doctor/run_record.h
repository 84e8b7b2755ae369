#pragma once
// One training run of compare or doctor: how it was started, and what it measured.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ddpscope/config.h"
#include "train/config/run_config.h"
#include "train/records/run_summary.h"

namespace ddp {

struct RunRecord {
  std::string label;  // "devices=2", "devices=2 batch=1024", ...
  int devices = 1;
  Config config;
  std::string command;      // the exact command that reproduces it
  int64_t epochs_run = 0;   // epochs this run trained
  int64_t epochs_full = 0;  // the configuration's epochs; walls are extrapolated to these
  bool ok = false;
  std::string error;        // when !ok: the run's own message
  RunSummary summary;       // its summary.json, when ok
  double wall_seconds = 0;  // measured, or extrapolated to epochs_full
  bool extrapolated = false;
  // A baseline run repeated (doctor --repeats N): the walls of all N, this one's first;
  // empty when it ran once.
  std::vector<double> repeat_wall_seconds;
  // A traced run: the rank of each of the summary's per-rank series, as the traces number them.
  std::vector<int> ranks;
  // A user's command run by ddpscope (doctor -- COMMAND): its whole wall time, start-up
  // included, and the samples all devices took per optimizer step where the script said
  // (Lightning: the batch's first dimension times its micro-batches per step); 0 unknown.
  double command_wall_seconds = 0;
  double samples_per_step = 0;

  // Seconds of a phase, mean over ranks, scaled like wall_seconds (startup is not scaled).
  double phase(Phase phase) const;
  double startup() const { return phase(Phase::kStartup); }
  int64_t optimizer_steps() const;  // at epochs_full
  double seconds_per_step() const;  // the wall over the steps run
};

// Runs `ddpscope train` with config at `devices`, for `epochs` epochs, in <root>/runs/<folder>;
// extrapolates to the config's own epochs from the steady per-epoch time.
RunRecord run_training(const std::string& executable, const Config& config, int devices, int64_t epochs,
                       const std::string& label, const std::filesystem::path& root);

}  // namespace ddp
