#pragma once
// A `ddpscope train --devices 2` job with one rank faulted mid-training (tests/dist's CLI
// fault tests, and tests/gpu's on GPU ranks): the job is forked with its own marker folder,
// rank 1 (the process mpirun gave OMPI_COMM_WORLD_RANK=1) gets the signal once training is
// well under way, and the job's exit code, time after the fault and stderr are returned.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "support/run_command.h"

namespace ddp::testing {

namespace fault_fs = std::filesystem;
using FaultClock = std::chrono::steady_clock;

inline std::string read_nul_separated(const fault_fs::path& path) {
  std::string text = read_text(path);
  for (char& c : text) c = c == '\0' ? '\n' : c;
  return text;
}

// Live processes whose command line contains marker (and, if given, whose environment
// contains env); zombies excluded.
inline std::vector<pid_t> find_processes(const std::string& marker, const std::string& env = "") {
  std::vector<pid_t> found;
  for (const auto& entry : fault_fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = std::stoi(name);
    if (pid == getpid()) continue;
    if (read_nul_separated(entry.path() / "cmdline").find(marker) == std::string::npos) continue;
    if (!env.empty() && read_nul_separated(entry.path() / "environ").find("\n" + env + "\n") == std::string::npos)
      continue;
    const std::string stat = read_text(entry.path() / "stat");
    const std::size_t paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z') continue;
    found.push_back(pid);
  }
  return found;
}

struct CliFault {
  int exit_code = -1;
  double seconds_after_fault = 0;
  std::string err;
  std::string marker;
};

// binary: the ddpscope to start; extra: arguments after the common ones.
inline CliFault run_with_fault(int signal_number, const std::string& name, const std::string& binary,
                               const std::vector<std::string>& extra = {}) {
  const fault_fs::path dir = fresh_dir("cli_fault_" + name);
  CliFault result;
  result.marker = (dir / "runs").string();  // unique to this test's processes
  const pid_t child = fork();
  if (child == 0) {
    const int err = open((dir / "stderr.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int out = open((dir / "stdout.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(err, STDERR_FILENO);
    dup2(out, STDOUT_FILENO);
    setenv("DDPSCOPE_COMM_TIMEOUT_S", "3", 1);
    std::vector<std::string> args = {binary,           "train", "--strategy",         "ddp",
                                     "--devices",      "2",     "--max-epochs",       "100000",
                                     "--progress-bar", "off",   "--default-root-dir", result.marker};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  // Rank 1 is the process with our marker that mpirun gave OMPI_COMM_WORLD_RANK=1.
  std::vector<pid_t> rank1;
  const auto give_up = FaultClock::now() + std::chrono::seconds(20);
  while (rank1.empty() && FaultClock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    rank1 = find_processes(result.marker, "OMPI_COMM_WORLD_RANK=1");
  }
  EXPECT_EQ(rank1.size(), 1u) << "rank 1 never appeared";
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // well into training
  const auto fault = FaultClock::now();
  for (pid_t pid : rank1) kill(pid, signal_number);
  int status = 0;
  const auto deadline = fault + std::chrono::seconds(40);
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (FaultClock::now() > deadline) {
      ADD_FAILURE() << "still running 40 s after the fault";
      kill(child, SIGKILL);
      for (pid_t pid : find_processes(result.marker)) kill(pid, SIGKILL);
      waitpid(child, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  result.seconds_after_fault = std::chrono::duration<double>(FaultClock::now() - fault).count();
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.err = read_text(dir / "stderr.txt");
  return result;
}

inline void expect_no_survivors(const std::string& marker) {
  std::vector<pid_t> left;
  for (int tries = 0; tries < 20; ++tries) {
    left = find_processes(marker);
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(left.empty()) << left.size() << " process(es) left behind, e.g. pid " << left.front();
  for (pid_t pid : left) kill(pid, SIGKILL);
}

}  // namespace ddp::testing
