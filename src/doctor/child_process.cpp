#include "doctor/child_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/error.h"

namespace ddp {

std::string own_executable() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw Error(ExitCode::kOther, "cannot find this executable (/proc/self/exe): " + error.message());
  return self.string();
}

ChildResult run_child(const std::vector<std::string>& args, const std::filesystem::path& stdout_file,
                      const std::filesystem::path& stderr_file) {
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) throw Error(ExitCode::kOther, fmt::format("fork() failed: {}", std::strerror(errno)));
  if (pid == 0) {
    const int out = ::open(stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0) _exit(126);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    const int in = ::open("/dev/null", O_RDONLY);
    if (in >= 0) dup2(in, STDIN_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw Error(ExitCode::kOther, fmt::format("waitpid() failed: {}", std::strerror(errno)));
  }
  ChildResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream in(stderr_file);
  std::stringstream text;
  text << in.rdbuf();
  result.stderr_text = text.str();
  return result;
}

}  // namespace ddp
