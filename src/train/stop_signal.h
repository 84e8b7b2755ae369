#pragma once
// Graceful stop on SIGINT/SIGTERM (Lightning's behaviour on a keyboard interrupt, plus a
// checkpoint): the first signal asks the Trainer to finish the current optimizer step,
// write a checkpoint and exit 128 + signal; a second one exits at once. Files are written
// atomically, so exiting at once never leaves a half-written one behind.
#include "base/error.h"

namespace ddp {

// Installs the handlers for as long as it lives, restoring the previous ones after.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  // The signal received (SIGINT or SIGTERM), or 0.
  static int pending();
};

// Thrown when training stopped on a signal; carries exit code 128 + signal.
struct StopRequested : Error {
  StopRequested(int signal, const std::string& message) : Error(static_cast<ExitCode>(128 + signal), message) {}
};

}  // namespace ddp
