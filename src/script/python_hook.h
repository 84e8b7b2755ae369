#pragma once
// The start-up hook that traces a user's unmodified PyTorch or Lightning script
// (hook/sitecustomize.py, compiled into ddpscope): written into a folder of the run, put first
// on the command's PYTHONPATH, and what it saw in each process read back.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ddp {

// What the hook is asked to do in each process of one run.
struct HookSettings {
  std::filesystem::path out;   // where each rank's trace and facts go
  int trace_steps = 10;        // optimizer steps recorded
  int wait_steps = 4;          // skipped before the one step of warm-up
  int64_t max_steps = 0;       // end training after this many optimizer steps; 0: run to the end
  std::optional<int> devices;  // override a Lightning Trainer's devices
};

// Writes the hook as <folder>/sitecustomize.py, private to the user (folder 0700, file 0600).
void write_python_hook(const std::filesystem::path& folder);

// The variables the command runs with: the hook's folder first on PYTHONPATH (before the
// user's own), and the settings.
std::vector<std::pair<std::string, std::string>> hook_environment(const std::filesystem::path& folder,
                                                                  const HookSettings& settings);

// One process's rank<R>.<pid>.hook.json: what the hook saw.
struct HookFacts {
  int rank = 0;
  std::optional<int> world_size;
  int pid = 0;
  int64_t steps = 0;                           // optimizer steps it saw
  std::optional<std::string> trace;            // its trace's file name, in the run's folder
  bool own_profiler = false;                   // the script ran a profiler of its own
  std::vector<std::string> own_traces;         // the files that profiler exported
  std::optional<std::string> lightning_asked;  // a Lightning Trainer's devices as the script gave them
  std::optional<int> lightning_used;
  std::optional<int64_t> batch_size;  // the first training batch's first dimension (Lightning)
  int64_t micro_batches = 0;          // Lightning's training batches
  std::optional<int64_t> cut_at;      // --max-steps ended training here
  std::vector<std::string> errors;    // the hook's own failures ("no_device_control": refused)
  std::string python, torch;          // the interpreter and torch's version
};

// Every process's facts in `out`, by rank. DataError naming a file that is not the hook's.
std::vector<HookFacts> read_hook_facts(const std::filesystem::path& out);

}  // namespace ddp
