#pragma once
// Starting another program: the one fork/exec of ddpscope (the doctor's child runs, the
// launcher's mpirun), so that every child gets the same care: the signal mask this process
// had before it took SIGINT/SIGTERM, standard input from /dev/null unless given, and only
// async-signal-safe calls between fork and exec (this process has threads).
#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace ddp {

struct SpawnOptions {
  int stdout_fd = -1;  // -1: this process's
  int stderr_fd = -1;
  std::vector<std::pair<std::string, std::string>> environment;  // set or replaced in the child
  bool own_process_group = false;                                // a terminal's Ctrl-C then reaches only this process
  int parent_death_signal = 0;                                   // sent to the child when this process dies (Linux)
};

// Starts args[0] (an absolute path) with args. Throws Error(kOther) when fork fails; a
// program that cannot be executed exits 127 after naming itself on the child's stderr.
pid_t spawn_process(const std::vector<std::string>& args, const SpawnOptions& options = {});

// The command that starts this program again (the launcher's ranks, the doctor's runs):
// $DDPSCOPE_EXECUTABLE when set, else /proc/self/exe. The variable is for a relocated bundle
// (bench/gpu/pack.sh), whose wrapper runs the binary through its own dynamic loader, so that
// /proc/self/exe names the loader. Throws Error(kOther) when /proc/self/exe cannot be read.
std::string own_executable();

// Waits for pid (retrying on EINTR) and returns its exit code: 128 + signal when killed.
int wait_for_exit(pid_t pid);

}  // namespace ddp
