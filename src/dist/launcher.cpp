#include "dist/launcher.h"

#include <chrono>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"

namespace ddp {
namespace {

volatile sig_atomic_t g_mpirun_pid = 0;

void forward_signal(int signal_number) {
  if (g_mpirun_pid > 0) kill(g_mpirun_pid, signal_number);
}

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

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

// What mpirun says when it takes the job down because of one rank (Open MPI 4.1):
//   "mpirun noticed that process rank 1 with PID 123 on node vm exited on signal 9 (Killed)."
//   "mpirun has exited due to process rank 1 with PID 0 on" (exit without MPI_Finalize)
struct RankFailure {
  std::string message;
};

std::optional<RankFailure> parse_mpirun_line(const std::string& line) {
  static const std::regex signalled(R"(process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+)( \(([^)]*)\))?)");
  static const std::regex improper(R"(mpirun has exited due to process rank (\d+) with PID)");
  std::smatch m;
  if (std::regex_search(line, m, signalled)) {
    return RankFailure{fmt::format("rank {} (on {}) was killed by signal {}{}; mpirun stopped the other ranks",
                                   m[1].str(), m[2].str(), m[3].str(), m[5].matched ? " (" + m[5].str() + ")" : "")};
  }
  if (std::regex_search(line, m, improper)) {
    return RankFailure{fmt::format("rank {} exited without finishing (no MPI_Finalize); mpirun stopped the other ranks",
                                   m[1].str())};
  }
  return std::nullopt;
}

// Copies mpirun's stderr through to ours line by line, remembering the first rank failure.
class StderrRelay {
 public:
  void feed(const char* data, std::size_t n) {
    pending_.append(data, n);
    std::size_t newline;
    while ((newline = pending_.find('\n')) != std::string::npos) {
      line(pending_.substr(0, newline + 1));
      pending_.erase(0, newline + 1);
    }
  }
  void flush() {
    if (!pending_.empty()) line(pending_);
    pending_.clear();
  }
  const std::optional<RankFailure>& failure() const { return failure_; }

 private:
  void line(const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
    if (!failure_) failure_ = parse_mpirun_line(text);
  }
  std::string pending_;
  std::optional<RankFailure> failure_;
};

}  // namespace

int relaunch_under_mpirun(int argc, char** argv, int devices, int threads_per_device) {
  DDP_CHECK(devices >= 1 && threads_per_device >= 1 && argc >= 1);
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
  std::error_code error;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", error).string();
  if (error) throw DistributedError("cannot find this executable (/proc/self/exe): " + error.message());

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
  if (const char* extra = std::getenv("DDPSCOPE_MPIRUN_ARGS"); extra != nullptr && *extra != '\0') {
    args.resize(3);  // mpirun -np N
    if (geteuid() == 0) args.push_back("--allow-run-as-root");
    std::istringstream words(extra);
    for (std::string word; words >> word;) args.push_back(word);
  }
  args.insert(args.end(), {"-x", "DDPSCOPE_LAUNCHED", "-x", "DDPSCOPE_LAUNCH_REALTIME_NS", self});
  // The ranks count their wall time from here, so that start-up includes the launch.
  const auto launch = std::chrono::system_clock::now().time_since_epoch();
  setenv("DDPSCOPE_LAUNCH_REALTIME_NS",
         std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(launch).count()).c_str(), 1);
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);

  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) throw DistributedError(fmt::format("pipe() failed: {}", std::strerror(errno)));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) throw DistributedError(fmt::format("fork() failed: {}", std::strerror(errno)));
  if (pid == 0) {
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    setenv("DDPSCOPE_LAUNCHED", "1", 1);
    if (geteuid() == 0) {
      setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
      setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    }
    std::vector<char*> c_args;
    for (std::string& a : args) c_args.push_back(a.data());
    c_args.push_back(nullptr);
    execv(c_args[0], c_args.data());
    std::fprintf(stderr, "ddpscope: error: cannot run %s: %s\n", c_args[0], std::strerror(errno));
    _exit(static_cast<int>(ExitCode::kDistributed));
  }
  close(pipe_fds[1]);
  g_mpirun_pid = pid;
  struct sigaction forward = {}, old_int = {}, old_term = {};
  forward.sa_handler = forward_signal;
  sigemptyset(&forward.sa_mask);
  sigaction(SIGINT, &forward, &old_int);
  sigaction(SIGTERM, &forward, &old_term);

  // Relay until mpirun has exited, then drain what is left. mpirun's children could hold
  // the pipe open after it is gone, so its exit, not EOF, ends the loop.
  StderrRelay relay;
  char buffer[4096];
  int status = 0;
  bool exited = false;
  fcntl(pipe_fds[0], F_SETFL, fcntl(pipe_fds[0], F_GETFL) | O_NONBLOCK);
  for (;;) {
    pollfd fd = {pipe_fds[0], POLLIN, 0};
    poll(&fd, 1, 100);
    ssize_t n;
    while ((n = read(pipe_fds[0], buffer, sizeof(buffer))) > 0) relay.feed(buffer, static_cast<std::size_t>(n));
    if (exited) break;
    if (waitpid(pid, &status, WNOHANG) == pid) exited = true;  // one more pass drains the pipe
  }
  relay.flush();
  close(pipe_fds[0]);
  g_mpirun_pid = 0;
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);

  if (relay.failure()) {
    std::fprintf(stderr, "ddpscope: error: %s\n", relay.failure()->message.c_str());
    return static_cast<int>(ExitCode::kDistributed);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

std::chrono::steady_clock::time_point job_start_time() {
  const auto now = std::chrono::steady_clock::now();
  const char* launch = std::getenv("DDPSCOPE_LAUNCH_REALTIME_NS");
  if (launch == nullptr) return now;
  const auto since_launch = std::chrono::system_clock::now().time_since_epoch() -
                            std::chrono::nanoseconds(std::strtoll(launch, nullptr, 10));
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

void check_same_config(Communicator& comm, uint64_t config_hash) {
  const std::vector<uint64_t> hashes = comm.allgather(config_hash);
  std::string differing;
  for (std::size_t r = 1; r < hashes.size(); ++r) {
    if (hashes[r] != hashes[0]) differing += (differing.empty() ? "" : ", ") + std::to_string(r);
  }
  if (!differing.empty()) {
    throw UsageError(fmt::format(
        "the ranks were started with different configurations: rank(s) {} differ from rank 0 (configuration hash "
        "{:016x}); start every rank with the same options",
        differing, hashes[0]));
  }
}

}  // namespace ddp
