#include "base/stop_signal.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

namespace ddp {
namespace {

std::atomic<int> armed{0};  // StopSignals alive (they nest)
std::atomic<SecondSignal> second_signal{SecondSignal::kExitNow};
std::atomic<int> first_received{0};
std::atomic<int> last_received{0};
std::atomic<int> received_count{0};
std::atomic<bool> taken{false};
std::atomic<int> decided_exit_code{-1};  // set once the process's outcome is printed
sigset_t mask_before;                    // written once, before the watcher starts

sigset_t stop_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);  // a closed terminal or SSH session: stop as on Ctrl-C, with a checkpoint
  return set;
}

struct sigaction before_int, before_term, before_hup;

struct sigaction& before(int signal) {
  return signal == SIGINT ? before_int : signal == SIGTERM ? before_term : before_hup;
}
bool speaks_for_the_job = true;  // false on ranks other than zero, where rank zero speaks

// Paths that the signal thread reads on the way out: each written whole before its flag is set.
struct PathSlot {
  std::atomic<bool> set{false};
  char path[4096] = {};

  void store(const char* text) {
    set = false;
    if (text == nullptr || std::strlen(text) >= sizeof(path)) return;
    std::strcpy(path, text);
    set = true;
  }
};
PathSlot file_in_progress;  // a temporary file being filled: removed on the way out
PathSlot last_checkpoint;   // where a stopped run resumes from

// No StopSignals lives: the signal does what it did before it was taken (ends the process,
// or nothing where it was ignored).
void act_as_before(int signal) {
  if (before(signal).sa_handler == SIG_IGN) return;
  if (file_in_progress.set) ::unlink(file_in_progress.path);  // the process ends: leave no temporary file
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(signal, &fallback, nullptr);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, signal);
  raise(signal);  // pending on this thread until unblocked here
  pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
}

void say(const char* text) { [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, text, std::strlen(text)); }

[[noreturn]] void exit_now(int signal) {
  if (file_in_progress.set) ::unlink(file_in_progress.path);
  static constexpr char kInt[] = "ddpscope: stopped at once by a second SIGINT; files already written are whole\n";
  static constexpr char kTerm[] = "ddpscope: stopped at once by a second SIGTERM; files already written are whole\n";
  static constexpr char kHup[] = "ddpscope: stopped at once by a second SIGHUP; files already written are whole\n";
  if (speaks_for_the_job) {
    say(signal == SIGINT ? kInt : signal == SIGTERM ? kTerm : kHup);
    if (last_checkpoint.set) {
      say("ddpscope: resume with the same options and --ckpt-path ");
      say(last_checkpoint.path);
      say("\n");
    }
  }
  _exit(128 + signal);
}

// Async-signal-safe: it also runs as the handler, in the few threads that have the signals
// unblocked because they started before main (OpenBLAS starts its threads as it loads).
void on_stop_signal(int signal) {
  if (const int code = decided_exit_code.load(); code >= 0) {
    // The stop's own signal, not received here before, is the copy every rank was sent, taken
    // late: a rank busy in a collective can stop on the ranks' agreement before its watcher
    // thread runs. Ending now would leave before the others and make mpirun kill rank zero
    // before it says why the job stopped (seen in CI). Any other signal is the job ending.
    if (signal != code - 128 || received_count.fetch_add(1) > 0) _exit(code);
    return;
  }
  if (armed.load() == 0) return act_as_before(signal);
  last_received = signal;
  int none = 0;
  first_received.compare_exchange_strong(none, signal);
  const int count = received_count.fetch_add(1) + 1;
  if (count >= 2 && second_signal.load() == SecondSignal::kExitNow) exit_now(signal);
}

void watch() {
  const sigset_t set = stop_set();
  for (;;) {
    siginfo_t info;
    const int signal = sigwaitinfo(&set, &info);
    if (signal > 0) on_stop_signal(signal);  // else EINTR: a signal this thread does not take
  }
}

}  // namespace

void take_stop_signals() {
  static std::once_flag once;
  std::call_once(once, [] {
    const sigset_t set = stop_set();
    pthread_sigmask(SIG_BLOCK, &set, &mask_before);
    // Under mpirun rank zero speaks for every rank.
    const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
    speaks_for_the_job = rank == nullptr || std::string(rank) == "0";
    // A handler, not SIG_IGN (an ignored signal is discarded even while blocked, and a
    // script's background job starts with SIGINT ignored); SA_RESTART for the threads it
    // may run in.
    struct sigaction handler {};
    handler.sa_handler = on_stop_signal;
    handler.sa_flags = SA_RESTART;
    sigemptyset(&handler.sa_mask);
    for (const int signal : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal, &handler, &before(signal));
    std::thread watcher(watch);
    pthread_setname_np(watcher.native_handle(), "ddp-signals");
    watcher.detach();  // lives as long as the process
    taken = true;
  });
}

void restore_signals_for_child() {
  if (!taken.load()) return;
  for (const int signal : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal, &before(signal), nullptr);
  pthread_sigmask(SIG_SETMASK, &mask_before, nullptr);
}

StopSignals::StopSignals(SecondSignal second) { arm(second); }

void StopSignals::hold_until_exit(SecondSignal second) { arm(second); }

void StopSignals::arm(SecondSignal second) {
  take_stop_signals();
  if (armed.load() > 0) {  // nested: the outermost one's signals and mode hold
    ++armed;
    return;
  }
  first_received = 0;
  last_received = 0;
  received_count = 0;
  second_signal = second;
  ++armed;
}

StopSignals::~StopSignals() { --armed; }

void StopSignals::end_quietly_with(int exit_code) { decided_exit_code = exit_code; }

int StopSignals::pending() { return first_received.load(std::memory_order_relaxed); }
int StopSignals::count() { return received_count.load(std::memory_order_relaxed); }
int StopSignals::last() { return last_received.load(std::memory_order_relaxed); }

void set_file_in_progress(const char* path) { file_in_progress.store(path); }
void set_last_checkpoint(const char* path) { last_checkpoint.store(path); }

std::string signal_name(int signal) {
  if (signal == SIGINT) return "SIGINT";
  if (signal == SIGTERM) return "SIGTERM";
  if (signal == SIGHUP) return "SIGHUP";
  return "signal " + std::to_string(signal);
}

}  // namespace ddp
