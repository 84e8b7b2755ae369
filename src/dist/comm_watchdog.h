#pragma once
// Bounds every blocking collective, so that a job never hangs. Blocking MPI calls cannot
// time out, so a thread per rank watches them: a collective that makes no progress for
// timeout_s ends the job with MPI_Abort(MPI_COMM_WORLD, 4) and a message naming the ranks
// that stopped responding.
//
// Naming them: every rank counts the collectives it has entered. When rank R's collective
// #k stalls, R's watchdog asks every other rank's watchdog (small point-to-point messages
// on a communicator of their own) for its count. A rank that does not answer within a
// grace period is stopped or dead (SIGSTOP, killed, hung in the kernel); one that answers
// with a count below k is running but never reached collective #k (stuck in compute). The
// watchdog threads answer while their main threads sit inside MPI, which is why the
// communicator asks for MPI_THREAD_MULTIPLE. The same thread also serves queries when
// idle; it polls every kPollSeconds, so it costs nothing measurable.
#include "dist/mpi_c.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ddp {

// DDPSCOPE_COMM_TIMEOUT_S (seconds, > 0), default kDefaultCommTimeoutSeconds. The default
// keeps detection + diagnosis + abort within 30 s: a stuck collective ends the job, it never hangs.
inline constexpr double kDefaultCommTimeoutSeconds = 20.0;
double comm_timeout_from_env();

class CommWatchdog {
 public:
  static constexpr double kPollSeconds = 0.05;
  static constexpr double kGraceSeconds = 2.0;  // for the other ranks' answers

  // diag_comm: a communicator used only by the watchdogs (same group as the watched one).
  CommWatchdog(MPI_Comm diag_comm, double timeout_s);
  ~CommWatchdog();
  CommWatchdog(const CommWatchdog&) = delete;
  CommWatchdog& operator=(const CommWatchdog&) = delete;

  // begin(): a collective was entered (blocking, or the start of a nonblocking one); it
  // returns the collective's number. arm()/disarm() bracket the time a thread blocks in
  // collective `number`; operation is a string literal. One armed at a time per process.
  // No clock is read here: the watchdog thread times how long one number stays armed, so
  // the hot path costs an atomic add and two stores (about 10 ns).
  int64_t begin() { return entered_.fetch_add(1, std::memory_order_relaxed) + 1; }
  void arm(int64_t number, const char* operation) {
    operation_.store(operation, std::memory_order_relaxed);
    armed_.store(number, std::memory_order_release);
  }
  void disarm() { armed_.store(0, std::memory_order_release); }

  double timeout_s() const { return timeout_s_; }
  int64_t collectives_entered() const { return entered_.load(); }

 private:
  struct Reply {
    MPI_Request request = MPI_REQUEST_NULL;
    int64_t entered = 0;
  };

  void run();
  void serve_queries();
  [[noreturn]] void diagnose_and_abort(const char* operation);

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<std::string> hosts_;  // by rank, to name a silent rank's host
  double timeout_s_;

  std::atomic<int64_t> entered_{0};
  std::atomic<int64_t> armed_{0};  // the collective a thread blocks in; 0 while none
  std::atomic<const char*> operation_{nullptr};

  // Touched only by the watchdog thread (and by the destructor after joining it).
  int64_t watched_ = 0;  // the armed collective seen at the last poll, and since when
  int64_t watched_since_ns_ = 0;
  int64_t query_value_ = 0;
  MPI_Request query_request_ = MPI_REQUEST_NULL;
  std::list<Reply> replies_;  // answers in flight; a list keeps their buffers in place

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ddp
