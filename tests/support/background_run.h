#pragma once
// A ddpscope run started in the background by the signal and launcher tests, which need its
// PID to signal it, and its processes to check that none outlives it.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "base/process_tree.h"
#include "support/run_command.h"

namespace ddp::testing {

// Running or sleeping, not gone and not a zombie waiting to be reaped.
inline bool is_alive(pid_t pid) {
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

class BackgroundRun {
 public:
  // Runs `command` (a shell command line) in `dir`, stdout and stderr to out.txt, err.txt.
  BackgroundRun(const std::string& command, const std::filesystem::path& dir) : dir_(dir) {
    std::filesystem::create_directories(dir);
    pid_ = fork();
    if (pid_ == 0) {
      const std::string line = "exec " + command + " >out.txt 2>err.txt </dev/null";
      if (::chdir(dir.c_str()) != 0) _exit(126);
      execl("/bin/sh", "sh", "-c", line.c_str(), nullptr);
      _exit(127);
    }
  }
  ~BackgroundRun() {
    if (exit_code_ < 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  BackgroundRun(const BackgroundRun&) = delete;
  BackgroundRun& operator=(const BackgroundRun&) = delete;

  pid_t pid() const { return pid_; }

  // Waits until `file` (relative to dir) exists, e.g. the run's hparams.yaml, which rank zero
  // writes once training is about to start; false if the run ended first or 60 s passed.
  bool wait_for(const std::filesystem::path& file) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!std::filesystem::exists(dir_ / file)) {
      if (std::chrono::steady_clock::now() > deadline || waitpid(pid_, &status_, WNOHANG) == pid_) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }

  // Every process of the run now: the process started and what it started.
  std::vector<pid_t> processes() const {
    std::vector<pid_t> all = descendants(pid_);
    all.push_back(pid_);
    return all;
  }

  // Waits for the run to end: its exit code (128 + signal when killed).
  int wait() {
    if (exit_code_ >= 0) return exit_code_;
    if (status_ == -1) waitpid(pid_, &status_, 0);
    exit_code_ = WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
    return exit_code_;
  }

  std::string err() const { return read_text(dir_ / "err.txt"); }
  std::string out() const { return read_text(dir_ / "out.txt"); }

 private:
  std::filesystem::path dir_;
  pid_t pid_ = -1;
  int status_ = -1;
  int exit_code_ = -1;
};

}  // namespace ddp::testing
