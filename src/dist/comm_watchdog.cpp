#include "dist/comm_watchdog.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>
#include <vector>

#include "ddpscope/error.h"

namespace ddp {
namespace {

constexpr int kQueryTag = 1;
constexpr int kReplyTag = 2;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The watchdog thread cannot throw to anyone: an MPI failure there ends the job.
void check_or_abort(int rc, const char* call, int rank) {
  if (rc == MPI_SUCCESS) return;
  std::fprintf(stderr, "ddpscope: error: rank %d: %s failed in the communication watchdog (MPI error %d)\n", rank, call,
               rc);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, static_cast<int>(ExitCode::kDistributed));
  std::_Exit(static_cast<int>(ExitCode::kDistributed));
}

// "1 (on node2), 3 (on node4)": on a cluster the host is what the user goes to look at.
std::string rank_list(const std::vector<int>& ranks, const std::vector<std::string>& hosts) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    out += fmt::format("{}{} (on {})", i ? ", " : "", ranks[i], hosts[static_cast<std::size_t>(ranks[i])]);
  }
  return out;
}

// Every rank's host name, gathered once at start (collective), while every rank answers.
std::vector<std::string> gather_host_names(MPI_Comm comm, int rank, int size) {
  constexpr int kNameBytes = 256;
  std::vector<char> mine(kNameBytes, '\0'), all(static_cast<std::size_t>(kNameBytes) * size, '\0');
  if (gethostname(mine.data(), kNameBytes - 1) != 0) std::snprintf(mine.data(), kNameBytes, "localhost");
  check_or_abort(MPI_Allgather(mine.data(), kNameBytes, MPI_CHAR, all.data(), kNameBytes, MPI_CHAR, comm),
                 "MPI_Allgather", rank);
  std::vector<std::string> hosts;
  for (int r = 0; r < size; ++r) hosts.emplace_back(all.data() + static_cast<std::size_t>(r) * kNameBytes);
  return hosts;
}

}  // namespace

double comm_timeout_from_env() {
  const char* text = std::getenv("DDPSCOPE_COMM_TIMEOUT_S");
  if (text == nullptr || *text == '\0') return kDefaultCommTimeoutSeconds;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (*end != '\0' || !(value > 0) || value > 1e6) {
    throw UsageError(fmt::format("DDPSCOPE_COMM_TIMEOUT_S='{}' is not a number of seconds in (0, 1e6]", text));
  }
  return value;
}

CommWatchdog::CommWatchdog(MPI_Comm diag_comm, double timeout_s) : comm_(diag_comm), timeout_s_(timeout_s) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  hosts_ = gather_host_names(comm_, rank_, size_);
  check_or_abort(MPI_Irecv(&query_value_, 1, MPI_INT64_T, MPI_ANY_SOURCE, kQueryTag, comm_, &query_request_),
                 "MPI_Irecv", rank_);
  thread_ = std::thread([this] { run(); });
}

CommWatchdog::~CommWatchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
  // MPI_Finalize requires every request completed or cancelled.
  MPI_Cancel(&query_request_);
  MPI_Wait(&query_request_, MPI_STATUS_IGNORE);
  for (Reply& reply : replies_) MPI_Wait(&reply.request, MPI_STATUS_IGNORE);
}

void CommWatchdog::run() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, std::chrono::duration<double>(kPollSeconds), [this] { return stop_; })) {
    serve_queries();
    const int64_t armed = armed_.load(std::memory_order_acquire);
    if (armed != watched_) {  // idle, or a collective this poll has not seen yet
      watched_ = armed;
      watched_since_ns_ = now_ns();
      continue;
    }
    if (armed == 0) continue;
    const double stalled_s = static_cast<double>(now_ns() - watched_since_ns_) * 1e-9;
    if (stalled_s >= timeout_s_) diagnose_and_abort(operation_.load());
  }
}

// Answers "how many collectives have you entered?" from any rank, then listens again.
void CommWatchdog::serve_queries() {
  for (;;) {
    int done = 0;
    MPI_Status status;
    check_or_abort(MPI_Test(&query_request_, &done, &status), "MPI_Test", rank_);
    if (!done) break;
    Reply& reply = replies_.emplace_back();
    reply.entered = entered_.load();
    check_or_abort(MPI_Isend(&reply.entered, 1, MPI_INT64_T, status.MPI_SOURCE, kReplyTag, comm_, &reply.request),
                   "MPI_Isend", rank_);
    check_or_abort(MPI_Irecv(&query_value_, 1, MPI_INT64_T, MPI_ANY_SOURCE, kQueryTag, comm_, &query_request_),
                   "MPI_Irecv", rank_);
  }
  for (auto it = replies_.begin(); it != replies_.end();) {
    int done = 0;
    check_or_abort(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE), "MPI_Test", rank_);
    it = done ? replies_.erase(it) : std::next(it);
  }
}

void CommWatchdog::diagnose_and_abort(const char* operation) {
  const int64_t mine = watched_;  // the stalled collective's number
  std::vector<Reply> answers(static_cast<std::size_t>(size_));
  std::vector<MPI_Request> queries(static_cast<std::size_t>(size_), MPI_REQUEST_NULL);
  int64_t question = mine;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    check_or_abort(MPI_Irecv(&answers[r].entered, 1, MPI_INT64_T, r, kReplyTag, comm_, &answers[r].request),
                   "MPI_Irecv", rank_);
    check_or_abort(MPI_Isend(&question, 1, MPI_INT64_T, r, kQueryTag, comm_, &queries[r]), "MPI_Isend", rank_);
  }
  // Keep answering while waiting: another rank may be asking us the same question.
  const int64_t deadline = now_ns() + static_cast<int64_t>(kGraceSeconds * 1e9);
  std::vector<bool> answered(static_cast<std::size_t>(size_), false);
  answered[rank_] = true;
  int missing = size_ - 1;
  while (missing > 0 && now_ns() < deadline) {
    serve_queries();
    for (int r = 0; r < size_; ++r) {
      if (answered[r]) continue;
      int done = 0;
      check_or_abort(MPI_Test(&answers[r].request, &done, MPI_STATUS_IGNORE), "MPI_Test", rank_);
      if (done) answered[r] = true, --missing;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::vector<int> silent, behind;
  for (int r = 0; r < size_; ++r) {
    if (!answered[r])
      silent.push_back(r);
    else if (r != rank_ && answers[r].entered < mine)
      behind.push_back(r);
  }
  std::string cause;
  if (!silent.empty()) {
    cause = fmt::format("rank(s) {} stopped responding (hung, killed or cut off)", rank_list(silent, hosts_));
    if (!behind.empty()) cause += fmt::format("; rank(s) {} still run but never reached it", rank_list(behind, hosts_));
  } else if (!behind.empty()) {
    cause = fmt::format(
        "rank(s) {} stopped responding (hung or killed): still running but never reached this {} (collective #{})",
        rank_list(behind, hosts_), operation, mine);
  } else {
    cause = "every rank is inside it, so the transport between them stopped delivering";
  }
  std::fprintf(stderr, "ddpscope: error: rank %d: %s made no progress for %s s; %s\n", rank_, operation,
               fmt::format("{:g}", timeout_s_).c_str(), cause.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, static_cast<int>(ExitCode::kDistributed));
  std::_Exit(static_cast<int>(ExitCode::kDistributed));
}

}  // namespace ddp
