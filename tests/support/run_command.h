#pragma once
// Runs a shell command for the command-line tests and captures its exit code and output.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ddp::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `command` in `dir` (created if needed) with stdin closed.
inline CommandResult run_command(const std::string& command, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const std::filesystem::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  const std::string full =
      "cd '" + dir.string() + "' && " + command + " </dev/null >'" + out.string() + "' 2>'" + err.string() + "'";
  const int status = std::system(full.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_text(out);
  result.err = read_text(err);
  return result;
}

// This machine's host name, as ddpscope's messages name a rank's host.
inline std::string this_host() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

// A fresh folder for one test under the system's temporary folder.
inline std::filesystem::path fresh_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("ddpscope_test_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace ddp::testing
