#include "base/spawn.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "base/check.h"
#include "base/stop_signal.h"
#include "ddpscope/error.h"

extern char** environ;

namespace ddp {
namespace {

// environ with `overrides` set, built before fork: the child may not allocate.
std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> out;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    bool replaced = false;
    for (const auto& [name, value] : overrides) replaced |= text.compare(0, name.size() + 1, name + "=") == 0;
    if (!replaced) out.push_back(text);
  }
  for (const auto& [name, value] : overrides) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string own_executable() {
  if (const char* wrapper = std::getenv("DDPSCOPE_EXECUTABLE"); wrapper != nullptr && *wrapper != '\0') return wrapper;
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw Error(ExitCode::kOther, "cannot find this executable (/proc/self/exe): " + error.message());
  return self.string();
}

pid_t spawn_process(const std::vector<std::string>& args, const SpawnOptions& options) {
  DDP_CHECK(!args.empty() && args[0].starts_with("/"), "spawn_process needs an absolute path");
  std::vector<std::string> arg_strings = args;
  std::vector<std::string> env_strings = child_environment(options.environment);
  const std::vector<char*> argv = pointers(arg_strings);
  const std::vector<char*> envp = pointers(env_strings);
  const std::string cannot_run = "ddpscope: error: cannot run " + args[0] + ": ";
  const pid_t parent = getpid();
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) throw Error(ExitCode::kOther, std::string("fork() failed: ") + std::strerror(errno));
  if (pid != 0) return pid;

  // The child: async-signal-safe calls only.
  if (options.parent_death_signal != 0) {
    prctl(PR_SET_PDEATHSIG, options.parent_death_signal);
    if (getppid() != parent) _exit(128 + options.parent_death_signal);  // the parent died before prctl
  }
  if (options.own_process_group) setpgid(0, 0);
  const int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
  if (options.stdout_fd >= 0) dup2(options.stdout_fd, STDOUT_FILENO);
  if (options.stderr_fd >= 0) dup2(options.stderr_fd, STDERR_FILENO);
  restore_signals_for_child();
  execve(argv[0], argv.data(), envp.data());
  const char* why = std::strerror(errno);
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, cannot_run.data(), cannot_run.size());
  n = ::write(STDERR_FILENO, why, std::strlen(why));
  n = ::write(STDERR_FILENO, "\n", 1);
  _exit(127);
}

int wait_for_exit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw Error(ExitCode::kOther, std::string("waitpid() failed: ") + std::strerror(errno));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace ddp
