#include "doctor/child_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/spawn.h"
#include "ddpscope/error.h"

namespace ddp {

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
  const int exit_code = wait_for_exit(pid);
  ChildResult result;
  result.exit_code = exit_code;
  std::ifstream in(stderr_file);
  std::stringstream text;
  text << in.rdbuf();
  result.stderr_text = text.str();
  return result;
}

}  // namespace ddp
