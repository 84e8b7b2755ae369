#pragma once
// SIGINT, SIGTERM and SIGHUP, taken by one thread of their own (Lightning's behaviour on a keyboard
// interrupt, plus a checkpoint): the first asks the Trainer to finish the current optimizer
// step, write a checkpoint and exit 128 + signal; a second one ends the process at once.
//
// Why a thread: a handler runs on whichever thread the kernel picks (a loader, the monitor,
// an OpenMP, oneDNN or Open MPI worker) and, without SA_RESTART, makes the system call that
// thread was in fail with EINTR. take_stop_signals() blocks both signals before any other
// thread of ours exists, so every thread inherits the block and none is interrupted; the
// watcher thread takes them with sigwaitinfo. (Threads that libraries start while they load,
// before main, keep them unblocked; there the same code runs as an SA_RESTART handler that
// only stores atomics.) Processes this one starts get the mask back
// (restore_signals_for_child()).
#include "ddpscope/error.h"

namespace ddp {

// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread and starts the watcher. Call it first in
// main, before any thread is started. Idempotent; StopSignals calls it as well (threads
// started before that keep the signals unblocked and end the process by default).
void take_stop_signals();

// In a child between fork and exec: the signal mask and dispositions this process had
// before take_stop_signals(), so that the program it runs can be interrupted as usual.
void restore_signals_for_child();

// What a second signal does while a StopSignals lives.
enum class SecondSignal {
  kExitNow,  // the process ends at once with 128 + signal (files are written atomically)
  kRecord,   // it is only counted (the launcher forwards every signal to its ranks)
};

// While one lives, SIGINT/SIGTERM are recorded instead of ending the process. Without one a
// signal ends the process as by default. They nest: the outermost one's record and mode hold.
class StopSignals {
 public:
  explicit StopSignals(SecondSignal second = SecondSignal::kExitNow);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  // As a StopSignals that is never destroyed: signals are taken until the process has
  // exited, static destructors included.
  static void hold_until_exit(SecondSignal second = SecondSignal::kExitNow);
  // The process has stopped on a signal and said so; only its exit is left. From now on a
  // signal ends it at once with exit_code and says nothing more: under mpirun the first rank
  // to exit makes mpirun send SIGTERM to the others, which must not report a second signal.
  // Only the stop's own signal (exit_code - 128), when it is the first this process receives,
  // is its late copy and ends nothing.
  static void end_quietly_with(int exit_code);
  // The first signal received (SIGINT, SIGTERM or SIGHUP), or 0.
  static int pending();
  // Signals received so far, and the last of them (0 if none).
  static int count();
  static int last();

 private:
  static void arm(SecondSignal second);
};

// Thrown when training stopped on a signal; carries exit code 128 + signal.
struct StopRequested : Error {
  StopRequested(int signal, const std::string& message) : Error(static_cast<ExitCode>(128 + signal), message) {}
};

// What an exit on a second signal leaves: the temporary file being filled now (nullptr when
// none) is removed, and the last checkpoint written is named as where to resume.
void set_file_in_progress(const char* path);
void set_last_checkpoint(const char* path);

// "SIGINT", "SIGTERM", "SIGHUP", or "signal N".
std::string signal_name(int signal);

}  // namespace ddp
