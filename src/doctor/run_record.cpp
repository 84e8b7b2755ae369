#include "doctor/run_record.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "ddpscope/error.h"
#include "doctor/child_process.h"
#include "doctor/command_line.h"
#include "train/config/run_config.h"

namespace ddp {

double RunRecord::phase(Phase phase) const {
  if (!ok) return 0;
  const double seconds = summary.mean_phase(phase);
  if (phase == Phase::kStartup || epochs_run == 0) return seconds;
  return seconds * static_cast<double>(epochs_full) / static_cast<double>(epochs_run);
}

int64_t RunRecord::optimizer_steps() const {
  if (!ok || epochs_run == 0) return 0;
  return summary.optimizer_steps * epochs_full / epochs_run;
}

double RunRecord::seconds_per_step() const {
  return summary.optimizer_steps_run > 0 ? summary.wall_seconds / static_cast<double>(summary.optimizer_steps_run) : 0;
}

RunRecord run_training(const std::string& executable, const Config& config, int devices, int64_t epochs,
                       const std::string& label, const std::filesystem::path& root) {
  RunRecord run;
  run.label = label;
  run.devices = devices;
  run.config = config;
  run.config.trainer.devices = devices;
  // --num-nodes H with one slot per host (the local cluster's hostfile): d < H ranks fill d hosts.
  run.config.trainer.num_nodes = std::min(devices, config.trainer.num_nodes);
  const bool zero1 = config.trainer.strategy == Strategy::kDdpZero1;
  run.config.trainer.strategy = devices <= 1 ? Strategy::kAuto : zero1 ? Strategy::kDdpZero1 : Strategy::kDdp;
  run.epochs_full = config.trainer.max_epochs;
  run.epochs_run = epochs;

  std::string folder = label;
  std::replace(folder.begin(), folder.end(), ' ', '_');
  Config to_run = run.config;
  to_run.trainer.max_epochs = epochs;
  to_run.trainer.progress_bar = ProgressMode::kOff;
  to_run.trainer.default_root_dir = root.string();
  to_run.trainer.name = "runs";
  to_run.trainer.version = folder;
  std::vector<std::string> args = {executable, "train"};
  for (const std::string& arg : train_arguments(to_run)) args.push_back(arg);
  Config shown = run.config;  // the command a user would type: full epochs, their own folders
  std::vector<std::string> shown_args = {"ddpscope", "train"};
  for (const std::string& arg : train_arguments(shown)) shown_args.push_back(arg);
  run.command = shell_command(shown_args);

  const std::filesystem::path dir = root / "runs" / folder;  // made by the child, which refuses one that exists
  std::filesystem::create_directories(root / "runs");
  const ChildResult child = run_child(args, root / "runs" / (folder + ".out"), root / "runs" / (folder + ".err"));
  if (child.exit_code != 0) {
    run.error = fmt::format("exit code {}: {}", child.exit_code,
                            child.stderr_text.empty() ? "(no message)" : child.stderr_text);
    while (!run.error.empty() && run.error.back() == '\n') run.error.pop_back();
    return run;
  }
  std::ifstream in(dir / "summary.json");
  const nlohmann::ordered_json summary = nlohmann::ordered_json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (summary.is_discarded()) {
    run.error = "its summary.json could not be read";
    return run;
  }
  try {
    run.summary = summary.get<RunSummary>();
  } catch (const DataError& e) {
    run.error = fmt::format("its summary.json could not be read: {}", e.what());
    return run;
  }
  run.ok = true;
  // Extrapolated from the steady per-epoch time: the first epoch (with the GEMM libraries'
  // first calls for each shape) and the time after the last one are counted once.
  const double measured = run.summary.wall_seconds;
  const int64_t completed = run.summary.epochs;
  run.extrapolated = epochs != run.epochs_full && completed >= 2;
  run.wall_seconds = measured;
  if (run.extrapolated) {
    const double first = run.summary.first_epoch_end_seconds;
    const double last = run.summary.last_epoch_end_seconds;
    const double steady = (last - first) / static_cast<double>(completed - 1);
    run.wall_seconds = first + steady * static_cast<double>(run.epochs_full - 1) + (measured - last);
  }
  return run;
}

}  // namespace ddp
