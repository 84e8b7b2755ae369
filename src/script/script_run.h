#pragma once
// One run of a user's command (doctor -- COMMAND, analyze -- COMMAND): started with the hook,
// its output kept in its folder, supervised to its end, and every process it started gone
// when this returns. A stop signal (Ctrl-C) is handed to its processes as SIGINT; those still
// running after a grace get SIGTERM, then SIGKILL. What the hook wrote stays.
#include <filesystem>
#include <string>
#include <vector>

#include "script/device_count.h"
#include "script/python_hook.h"

namespace ddp {

struct ScriptRun {
  int devices = 0;  // 0: the command's own count (analyze)
  CommandAtDevices command;
  std::filesystem::path folder;  // stdout.txt, stderr.txt, and what the hook wrote
  int exit_code = 0;             // 128 + signal when killed
  double wall_seconds = 0;       // start to exit, start-up included
  bool stopped = false;          // by a stop signal this process took
  std::string stderr_tail;       // its last lines, for a failure's message
  std::vector<HookFacts> ranks;  // what the hook saw, by rank
};

// Runs `command` with the hook in `hook_folder` (python_hook.h) and `settings` (its out is the
// run's folder). UsageError where the program is not found.
ScriptRun run_script(const CommandAtDevices& command, int devices, const std::filesystem::path& folder,
                     const std::filesystem::path& hook_folder, const HookSettings& settings);

// The program's absolute path: as given where it names a folder, else found on PATH.
std::string program_path(const std::string& program);

}  // namespace ddp
