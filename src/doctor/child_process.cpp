#include "doctor/child_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/spawn.h"
#include "base/stop_signal.h"
#include "ddpscope/error.h"

namespace ddp {
namespace {

// Waits for the child, giving it the first stop signal this process takes (StopSignals):
// it stops as a run stops on Ctrl-C, and the doctor summarises what ran.
int wait_handing_on_a_stop(pid_t pid) {
  bool handed_on = false;
  for (;;) {
    int status = 0;
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (done < 0 && errno != EINTR)
      throw Error(ExitCode::kOther, std::string("waitpid() failed: ") + std::strerror(errno));
    if (!handed_on && StopSignals::pending() != 0) {
      kill(pid, StopSignals::pending());
      handed_on = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

ChildResult run_child(const std::vector<std::string>& args, const std::filesystem::path& stdout_file,
                      const std::filesystem::path& stderr_file) {
  const int out = ::open(stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err = ::open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0 || err < 0) {
    const std::string why = std::strerror(errno);
    if (out >= 0) ::close(out);
    if (err >= 0) ::close(err);
    throw Error(ExitCode::kOther,
                fmt::format("cannot create {} or {}: {}", stdout_file.string(), stderr_file.string(), why));
  }
  SpawnOptions options;
  options.stdout_fd = out;
  options.stderr_fd = err;
  // A terminal's Ctrl-C reaches the doctor alone, which hands it on once (a child that got
  // it twice would stop at once, without its checkpoint); if the doctor dies, so does the run.
  options.own_process_group = true;
  options.parent_death_signal = SIGTERM;
  pid_t pid = -1;
  try {
    pid = spawn_process(args, options);
  } catch (...) {
    ::close(out);
    ::close(err);
    throw;
  }
  ::close(out);
  ::close(err);
  const int exit_code = wait_handing_on_a_stop(pid);
  ChildResult result;
  result.exit_code = exit_code;
  std::ifstream in(stderr_file);
  std::stringstream text;
  text << in.rdbuf();
  result.stderr_text = text.str();
  return result;
}

}  // namespace ddp
