#include "dist/launcher.h"

#include <algorithm>
#include <chrono>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "base/check.h"
#include "base/excerpt.h"
#include "base/process_tree.h"
#include "base/spawn.h"
#include "base/stop_signal.h"
#include "ddpscope/error.h"
#include "dist/comm_watchdog.h"
#include "dist/gather.h"
#include "dist/job_scratch.h"
#include "dist/mpirun_output.h"

namespace ddp {
namespace {

std::optional<std::string> find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t begin = 0;
  while (begin <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', begin), dirs.size());
    const std::string dir = dirs.substr(begin, end - begin);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    begin = end + 1;
  }
  return std::nullopt;
}

}  // namespace

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

namespace {

std::string signal_description(int signal) {
  const char* text = strsignal(signal);
  return fmt::format("signal {} ({})", signal, text != nullptr ? text : "unknown");
}

// The ranks: the processes below this one that run `self` (mpirun starts them; once it is
// gone they are this process's, as it is their subreaper).
std::vector<pid_t> ranks_below(const std::string& self) {
  std::vector<pid_t> ranks;
  for (const pid_t pid : descendants(getpid())) {
    if (executable_of(pid) == self) ranks.push_back(pid);
  }
  return ranks;
}

void signal_all(const std::vector<pid_t>& pids, int signal) {
  for (const pid_t pid : pids) kill(pid, signal);
}

// Runs mpirun and stays until every process it started has ended: relays its stderr,
// forwards SIGINT/SIGTERM to the ranks themselves (mpirun would turn a SIGINT into a
// SIGTERM and then a SIGKILL), stops the ranks that are left when one fails or mpirun dies,
// and returns the job's exit code.
int supervise(const std::vector<std::string>& args, SpawnOptions spawn, const std::string& self, bool verbose) {
  // Ranks orphaned by a dying mpirun are reparented here, to be stopped and reaped.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  // Until this process has exited (a process supervises one job): a signal that comes as the
  // job ends, after this function has returned, would otherwise kill it by default, turning
  // a finished job into a silent 130 (seen in CI).
  StopSignals::hold_until_exit(SecondSignal::kRecord);
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw DistributedError(fmt::format("pipe() failed: {}", std::strerror(errno)));
  spawn.stderr_fd = pipe_fds[1];
  // Its own process group: a Ctrl-C at the terminal reaches only this process, which hands it
  // to the ranks. If this process is killed, mpirun gets SIGTERM and ends the job.
  spawn.own_process_group = true;
  spawn.parent_death_signal = SIGTERM;
  const pid_t mpirun = spawn_process(args, spawn);
  close(pipe_fds[1]);
  fcntl(pipe_fds[0], F_SETFL, fcntl(pipe_fds[0], F_GETFL) | O_NONBLOCK);

  MpirunOutput output(verbose);
  char buffer[4096];
  auto drain = [&] {
    ssize_t n;
    while ((n = read(pipe_fds[0], buffer, sizeof(buffer))) > 0) output.feed(buffer, static_cast<std::size_t>(n));
  };
  int forwarded = 0;
  int first_signal = 0, last_signal = 0;
  bool stopped_after_failure = false;
  bool ranks_seen = false;
  std::optional<int> mpirun_status;
  for (;;) {
    pollfd fd = {pipe_fds[0], POLLIN, 0};
    poll(&fd, 1, 50);
    drain();
    if (!ranks_seen) ranks_seen = !ranks_below(self).empty();
    // The first signal goes to the ranks, which stop at the next optimizer step with a
    // checkpoint; a second kills them (handed on, it could merge with the first while that
    // is still pending at a rank).
    while (forwarded < StopSignals::count()) {
      const int signal = forwarded == 0 ? StopSignals::pending() : StopSignals::last();
      if (forwarded++ == 0) first_signal = signal;
      last_signal = signal;
      if (!ranks_seen) {
        kill(mpirun, SIGTERM);  // before the ranks started: end the start-up
      } else {
        signal_all(ranks_below(self), forwarded >= 2 ? SIGKILL : signal);  // none left: the job is ending
      }
    }
    if (output.rank_failure() && !stopped_after_failure) {
      signal_all(ranks_below(self), SIGKILL);  // they would wait for the failed rank
      stopped_after_failure = true;
    }
    int status = 0;
    pid_t reaped;
    while ((reaped = waitpid(-1, &status, WNOHANG)) > 0) {
      if (reaped == mpirun) mpirun_status = status;
    }
    if (mpirun_status) {
      const std::vector<pid_t> left = descendants(getpid());
      if (left.empty()) break;
      signal_all(left, SIGKILL);  // orphans of a mpirun that died
    }
  }
  drain();
  output.flush();
  close(pipe_fds[0]);

  const int status = *mpirun_status;
  const std::string hidden =
      output.hidden_lines() > 0
          ? fmt::format(" ({} lines of Open MPI's output hidden; --verbose shows them)", output.hidden_lines())
          : "";
  if (forwarded >= 2) {
    std::fprintf(stderr,
                 "ddpscope: stopped at once by a second %s; the ranks were killed, files already written are "
                 "whole\n",
                 signal_name(last_signal).c_str());
    return 128 + last_signal;
  }
  if (output.rank_failure()) {
    // A rank that was still starting (its signals not yet taken) dies of the signal itself.
    if (forwarded == 1 &&
        output.rank_failure()->find("killed by signal " + std::to_string(first_signal) + " ") != std::string::npos) {
      std::fprintf(stderr, "ddpscope: error: stopped by %s while the ranks were starting; no checkpoint was written\n",
                   signal_name(first_signal).c_str());
      return 128 + first_signal;
    }
    std::fprintf(stderr, "ddpscope: error: %s%s\n", output.rank_failure()->c_str(), hidden.c_str());
    return static_cast<int>(ExitCode::kDistributed);
  }
  // Stopped at an optimizer step (rank zero said so), or it had finished before the signal.
  if (forwarded == 1) return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 128 + first_signal;
  if (WIFSIGNALED(status)) {
    std::fprintf(stderr, "ddpscope: error: mpirun (pid %d) was killed by %s; its ranks were stopped%s\n", mpirun,
                 signal_description(WTERMSIG(status)).c_str(), hidden.c_str());
    return static_cast<int>(ExitCode::kDistributed);
  }
  // mpirun refused to start the job (its arguments, its slots): say why, in Open MPI's words.
  if (WEXITSTATUS(status) != 0 && !ranks_seen && !output.ranks_spoke()) {
    const std::string why = output.first_hidden_paragraph().empty() ? "" : ": " + output.first_hidden_paragraph();
    std::fprintf(stderr, "ddpscope: error: mpirun exited with code %d before starting the ranks%s%s\n",
                 WEXITSTATUS(status), why.c_str(), hidden.c_str());
  }
  return WEXITSTATUS(status);
}

}  // namespace

int relaunch_under_mpirun(int argc, char** argv, const LaunchOptions& launch) {
  const int devices = launch.devices, threads_per_device = launch.threads_per_device;
  DDP_CHECK_GE(devices, 1);
  DDP_CHECK_GE(threads_per_device, 1);
  DDP_CHECK_GE(argc, 1);
  comm_timeout_from_env();  // refused here, where its message cannot be lost to a rank's exit
  const char* launched = std::getenv("DDPSCOPE_LAUNCHED");
  if (launched != nullptr && std::string(launched) == "1") {
    throw DistributedError(
        "this process was started by ddpscope's own mpirun (DDPSCOPE_LAUNCHED=1) but sees no MPI job in its "
        "environment; refusing to launch again");
  }
  const std::optional<std::string> mpirun = find_on_path("mpirun");
  if (!mpirun) {
    throw UsageError(fmt::format(
        "--devices {} runs one process per device under Open MPI's mpirun, which is not on PATH; install it "
        "(Debian/Ubuntu: apt-get install openmpi-bin) or use --devices 1",
        devices));
  }
  const std::string self = own_executable();

  std::vector<std::string> args = {*mpirun, "-np", std::to_string(devices)};
  const int cores = available_cores();
  if (cores >= devices * threads_per_device) {
    if (threads_per_device > 1) args.insert(args.end(), {"--map-by", fmt::format("slot:PE={}", threads_per_device)});
    args.insert(args.end(), {"--bind-to", "core"});
  } else {
    // Binding more ranks than cores is an error in Open MPI, so they run unpinned.
    std::fprintf(stderr,
                 "ddpscope: --devices %d needs %d cores but only %d are available: oversubscribing (ranks share "
                 "cores, unpinned; expect each to run slower)\n",
                 devices, devices * threads_per_device, cores);
    args.insert(args.end(), {"--oversubscribe", "--bind-to", "none"});
  }
  if (geteuid() == 0) args.push_back("--allow-run-as-root");
  // All ranks are on this machine: shared memory (vader) through ob1. Left to choose, Open
  // MPI probes its network stacks (UCX, OFI) first: MPI_Init took 0.28 s instead of 0.07 s
  // here, a tenth of the seed's whole run on two cores.
  args.insert(args.end(), {"--mca", "pml", "ob1", "--mca", "btl", "self,vader"});
  // DDPSCOPE_MPIRUN_ARGS (doctor --mpirun-args): the job spans the hosts those arguments name
  // (a hostfile, TCP), so they replace this host's binding and shared memory above; mpirun
  // refuses an --mca given twice.
  // On this host alone, Open MPI's files of the job go into a folder this process removes
  // however mpirun ends (dist/job_scratch.h).
  std::optional<JobScratch> scratch;
  if (const char* extra = std::getenv("DDPSCOPE_MPIRUN_ARGS"); extra != nullptr && *extra != '\0') {
    args.resize(3);  // mpirun -np N
    if (geteuid() == 0) args.push_back("--allow-run-as-root");
    std::istringstream words(extra);
    for (std::string word; words >> word;) args.push_back(word);
  } else {
    scratch.emplace();
    const std::vector<std::string> files = scratch->mpirun_args();
    args.insert(args.end(), files.begin(), files.end());
  }
  // When a job ends early, mpirun sends SIGTERM and waits this long before SIGKILL, twice,
  // even when the ranks are gone: 2 s added to every stop. Graceful stops are the
  // launcher's (it signals the ranks itself), so mpirun need not wait.
  args.insert(args.end(), {"--mca", "odls_base_sigkill_timeout", "0"});
  args.insert(args.end(), {"-x", "DDPSCOPE_LAUNCHED", "-x", "DDPSCOPE_LAUNCH_REALTIME_NS", "-x",
                           "DDPSCOPE_STDERR_IS_TERMINAL", self});
  // The ranks count their wall time from here, so that start-up includes the launch.
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const std::string launch_ns = std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);

  SpawnOptions spawn;
  spawn.environment = {{"DDPSCOPE_LAUNCHED", "1"},
                       {"DDPSCOPE_LAUNCH_REALTIME_NS", launch_ns},
                       {"DDPSCOPE_STDERR_IS_TERMINAL", ::isatty(STDERR_FILENO) == 1 ? "1" : "0"}};
  if (geteuid() == 0) {
    spawn.environment.insert(spawn.environment.end(),
                             {{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}});
  }
  return supervise(args, spawn, self, launch.verbose);
}

std::chrono::steady_clock::time_point job_start_time() {
  const auto now = std::chrono::steady_clock::now();
  const char* launch = std::getenv("DDPSCOPE_LAUNCH_REALTIME_NS");
  if (launch == nullptr) return now;
  const auto since_launch =
      std::chrono::system_clock::now().time_since_epoch() - std::chrono::nanoseconds(std::strtoll(launch, nullptr, 10));
  // A clock step or a stale variable must not produce a negative or absurd start-up.
  if (since_launch < std::chrono::nanoseconds(0) || since_launch > std::chrono::seconds(60)) return now;
  return now - std::chrono::duration_cast<std::chrono::steady_clock::duration>(since_launch);
}

void check_world(Communicator& comm, int devices_requested, int num_nodes) {
  // Host names travel as 64-bit hashes: allgather carries fixed-size values.
  const std::string host = comm.host_name();
  const std::vector<uint64_t> hosts = comm.allgather(static_cast<uint64_t>(std::hash<std::string>{}(host)));
  const std::size_t distinct = std::set<uint64_t>(hosts.begin(), hosts.end()).size();
  if (devices_requested != 0 && devices_requested != comm.size()) {
    throw UsageError(fmt::format(
        "--devices {} but this job was started with {} rank(s) (mpirun -np / srun -n {}); omit --devices or make "
        "them agree",
        devices_requested, comm.size(), comm.size()));
  }
  if (num_nodes != static_cast<int>(distinct)) {
    throw UsageError(fmt::format("--num-nodes {} but this job's {} rank(s) run on {} host(s); set --num-nodes {}",
                                 num_nodes, comm.size(), distinct, distinct));
  }
}

void check_same_config(Communicator& comm, const OptionTexts& options) {
  // Every rank's options at every rank: a few kilobytes, once per job.
  std::string text;
  for (const auto& [name, value] : options) text += name + '\0' + value + '\0';
  const std::vector<std::vector<std::byte>> all = gather_at_every_rank(comm, std::as_bytes(std::span(text)));
  std::vector<int> differing;
  for (std::size_t r = 1; r < all.size(); ++r) {
    if (all[r] != all[0]) differing.push_back(static_cast<int>(r));
  }
  if (differing.empty()) return;
  // Every rank lists the same options in the same order: the first that differs is named.
  const auto words = [](const std::vector<std::byte>& bytes) {
    std::vector<std::string> out;
    std::string word;
    for (const std::byte b : bytes) {
      if (b != std::byte{0}) {
        word += static_cast<char>(b);
      } else {
        out.push_back(std::exchange(word, {}));
      }
    }
    return out;
  };
  const std::vector<std::string> zero = words(all[0]), other = words(all[differing[0]]);
  std::string difference = "other options";
  for (std::size_t i = 0; i + 1 < zero.size() && i + 1 < other.size(); i += 2) {
    if (zero[i] == other[i] && zero[i + 1] == other[i + 1]) continue;
    std::string option = zero[i];
    std::replace(option.begin(), option.end(), '_', '-');
    difference =
        fmt::format("--{} {} where rank 0 has --{} {}", option, excerpt(other[i + 1]), option, excerpt(zero[i + 1]));
    break;
  }
  throw UsageError(fmt::format(
      "the ranks were started with different options: rank {} has {} (rank(s) {} differ from rank 0); start every "
      "rank with the same options",
      differing[0], difference, fmt::join(differing, ", ")));
}

}  // namespace ddp
