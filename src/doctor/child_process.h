#pragma once
// Runs another program (ddpscope itself, for each run of compare and doctor) and waits for
// it: its stdout and stderr go to files, so a failed run can be reported with its error. A
// stop signal this process takes while it waits is handed on to the child, once.
#include <filesystem>
#include <string>
#include <vector>

namespace ddp {

struct ChildResult {
  int exit_code = -1;  // 128 + signal when killed
  std::string stderr_text;
};

ChildResult run_child(const std::vector<std::string>& args, const std::filesystem::path& stdout_file,
                      const std::filesystem::path& stderr_file);

}  // namespace ddp
