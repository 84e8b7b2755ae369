// The fault tests through the command line: `ddpscope train --devices 2` re-launches
// itself under mpirun; one rank is killed (SIGKILL) or stopped (SIGSTOP) mid-training. The
// job must exit with code 4 within 30 s, name rank 1, and leave no process behind.
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

namespace ddp {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string read_nul_separated(const fs::path& path) {
  std::string text = testing::read_text(path);
  for (char& c : text) c = c == '\0' ? '\n' : c;
  return text;
}

// Live processes whose command line contains marker (and, if given, whose environment
// contains env); zombies excluded.
std::vector<pid_t> find_processes(const std::string& marker, const std::string& env = "") {
  std::vector<pid_t> found;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = std::stoi(name);
    if (pid == getpid()) continue;
    if (read_nul_separated(entry.path() / "cmdline").find(marker) == std::string::npos) continue;
    if (!env.empty() && read_nul_separated(entry.path() / "environ").find("\n" + env + "\n") == std::string::npos)
      continue;
    const std::string stat = testing::read_text(entry.path() / "stat");
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

CliFault run_with_fault(int signal_number, const std::string& name) {
  const fs::path dir = testing::fresh_dir("cli_fault_" + name);
  CliFault result;
  result.marker = (dir / "runs").string();  // unique to this test's processes
  const pid_t child = fork();
  if (child == 0) {
    const int err = open((dir / "stderr.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int out = open((dir / "stdout.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(err, STDERR_FILENO);
    dup2(out, STDOUT_FILENO);
    setenv("DDPSCOPE_COMM_TIMEOUT_S", "3", 1);
    execl(DDPSCOPE_BINARY, DDPSCOPE_BINARY, "train", "--strategy", "ddp", "--devices", "2", "--max-epochs", "100000",
          "--progress-bar", "off", "--default-root-dir", result.marker.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Rank 1 is the process with our marker that mpirun gave OMPI_COMM_WORLD_RANK=1.
  std::vector<pid_t> rank1;
  const auto give_up = Clock::now() + std::chrono::seconds(20);
  while (rank1.empty() && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    rank1 = find_processes(result.marker, "OMPI_COMM_WORLD_RANK=1");
  }
  EXPECT_EQ(rank1.size(), 1u) << "rank 1 never appeared";
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // well into training
  const auto fault = Clock::now();
  for (pid_t pid : rank1) kill(pid, signal_number);
  int status = 0;
  const auto deadline = fault + std::chrono::seconds(40);
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      ADD_FAILURE() << "still running 40 s after the fault";
      kill(child, SIGKILL);
      for (pid_t pid : find_processes(result.marker)) kill(pid, SIGKILL);
      waitpid(child, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  result.seconds_after_fault = std::chrono::duration<double>(Clock::now() - fault).count();
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.err = testing::read_text(dir / "stderr.txt");
  return result;
}

void expect_no_survivors(const std::string& marker) {
  std::vector<pid_t> left;
  for (int tries = 0; tries < 20; ++tries) {
    left = find_processes(marker);
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(left.empty()) << left.size() << " process(es) left behind, e.g. pid " << left.front();
  for (pid_t pid : left) kill(pid, SIGKILL);
}

TEST(CliFault, KilledRankEndsTheJobWithCode4NamingIt) {
  const CliFault run = run_with_fault(SIGKILL, "kill");
  EXPECT_EQ(run.exit_code, 4) << run.err;
  EXPECT_LT(run.seconds_after_fault, 30.0);
  EXPECT_NE(run.err.find("ddpscope: error: rank 1 (on "), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(") was killed by signal 9 (Killed)"), std::string::npos) << run.err;
  expect_no_survivors(run.marker);
}

TEST(CliFault, StoppedRankEndsTheJobWithCode4NamingIt) {
  const CliFault run = run_with_fault(SIGSTOP, "stop");
  EXPECT_EQ(run.exit_code, 4) << run.err;
  EXPECT_LT(run.seconds_after_fault, 30.0);
  EXPECT_NE(run.err.find("made no progress for 3 s; rank(s) 1 (on " + testing::this_host() +
                         ") stopped responding (hung, killed or cut off)"),
            std::string::npos)
      << run.err;
  expect_no_survivors(run.marker);
}

}  // namespace
}  // namespace ddp
