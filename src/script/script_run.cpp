#include "script/script_run.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/process_tree.h"
#include "base/spawn.h"
#include "base/stop_signal.h"
#include "ddpscope/error.h"

namespace ddp {
namespace {

using Clock = std::chrono::steady_clock;

// After a stop signal: SIGINT lets Python raise KeyboardInterrupt and the launchers stop their
// workers; whatever is left is terminated, then killed.
constexpr auto kInterruptGrace = std::chrono::seconds(10);
constexpr auto kTerminateGrace = std::chrono::seconds(5);
// After the command's first process exits: workers it left behind get as long to end.
constexpr auto kLeftoverGrace = std::chrono::seconds(5);
constexpr int kTailLines = 12;

// The last lines of a file, each as a terminal shows it (a progress bar's \r-rewritten line
// as its last state).
std::string tail_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (const std::size_t cr = line.find_last_of('\r', line.size() > 1 ? line.size() - 2 : 0);
        cr != std::string::npos && cr + 1 < line.size())
      line = line.substr(cr + 1);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    lines.push_back(line);
    if (lines.size() > kTailLines) lines.erase(lines.begin());
  }
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

int open_output(const std::filesystem::path& file) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(ExitCode::kOther, fmt::format("cannot create {}: {}", file.string(), std::strerror(errno)));
  return fd;
}

// Whether any process of the group, or any descendant of this process, is still alive.
bool any_left(pid_t group) { return kill(-group, 0) == 0 || !descendants(getpid()).empty(); }

void signal_everything(pid_t group, int signal) {
  kill(-group, signal);
  for (const pid_t pid : descendants(getpid())) kill(pid, signal);  // those that left the group
}

}  // namespace

std::string program_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return std::filesystem::absolute(program).string();
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::filesystem::path candidate = std::filesystem::path(dir.empty() ? "." : dir) / program;
    if (access(candidate.c_str(), X_OK) == 0) return std::filesystem::absolute(candidate).string();
  }
  throw UsageError(
      fmt::format("{}: not found on PATH; give the command to run after -- (ddpscope doctor -- python "
                  "train.py)",
                  program));
}

ScriptRun run_script(const CommandAtDevices& command, int devices, const std::filesystem::path& folder,
                     const std::filesystem::path& hook_folder, const HookSettings& settings) {
  ScriptRun run;
  run.devices = devices;
  run.command = command;
  run.folder = folder;
  std::filesystem::create_directories(folder);
  std::vector<std::string> args = command.args;
  args[0] = program_path(args[0]);

  // Processes that leave the command's group (a launcher's workers in sessions of their own)
  // are reparented here when their parent dies, to be found and ended.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  SpawnOptions spawn;
  spawn.stdout_fd = open_output(folder / "stdout.txt");
  spawn.stderr_fd = open_output(folder / "stderr.txt");
  spawn.environment = hook_environment(hook_folder, settings);
  // Its own process group: a terminal's Ctrl-C reaches ddpscope alone, which hands it on.
  spawn.own_process_group = true;
  spawn.parent_death_signal = SIGTERM;
  const Clock::time_point start = Clock::now();
  pid_t pid = -1;
  try {
    pid = spawn_process(args, spawn);
  } catch (...) {
    ::close(spawn.stdout_fd);
    ::close(spawn.stderr_fd);
    throw;
  }
  ::close(spawn.stdout_fd);
  ::close(spawn.stderr_fd);

  std::optional<Clock::time_point> interrupted, exited;
  int escalation = 0;  // 0: none, 1: SIGINT, 2: SIGTERM, 3: SIGKILL
  for (;;) {
    // The command's first process, and any orphan reparented here.
    int status = 0;
    for (pid_t done; (done = waitpid(-1, &status, WNOHANG)) > 0;) {
      if (done != pid) continue;
      run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      run.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
      exited = Clock::now();
    }
    if (exited && !any_left(pid)) break;
    const Clock::time_point now = Clock::now();
    if (!interrupted && StopSignals::pending() != 0) {
      interrupted = now;
      run.stopped = true;
      signal_everything(pid, SIGINT);
      escalation = 1;
    }
    // Escalation: after a stop, or when the command's first process has exited and left others.
    const std::optional<Clock::time_point> since = interrupted ? interrupted : exited;
    if (since) {
      const auto waited = now - *since;
      const auto first = interrupted ? kInterruptGrace : kLeftoverGrace;
      if (escalation < 2 && waited > first) {
        signal_everything(pid, SIGTERM);
        escalation = 2;
      } else if (escalation < 3 && waited > first + kTerminateGrace) {
        signal_everything(pid, SIGKILL);
        escalation = 3;
      } else if (escalation >= 3 || StopSignals::count() >= 2) {
        signal_everything(pid, SIGKILL);  // a second Ctrl-C: at once
        escalation = 3;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  run.stderr_tail = tail_of(folder / "stderr.txt");
  run.ranks = read_hook_facts(folder);
  return run;
}

}  // namespace ddp
