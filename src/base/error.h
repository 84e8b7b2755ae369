#pragma once
// Two kinds of errors (STYLE.md §6): DDP_CHECK aborts with file:line for our own bugs;
// Error carries a message the user can act on and the documented exit code.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace ddp {

enum class ExitCode : int {
  kOk = 0,
  kOther = 1,
  kUsage = 2,        // bad option or configuration
  kData = 3,         // bad input data: file, line, column, reason
  kDistributed = 4,  // a rank died, hung or disagreed
};

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

struct UsageError : Error {
  explicit UsageError(const std::string& message) : Error(ExitCode::kUsage, message) {}
};
struct DataError : Error {
  explicit DataError(const std::string& message) : Error(ExitCode::kData, message) {}
};
struct DistributedError : Error {
  explicit DistributedError(const std::string& message) : Error(ExitCode::kDistributed, message) {}
};

[[noreturn]] inline void check_failed(const char* expr, const char* file, int line, const char* msg) {
  std::fprintf(stderr, "ddpscope internal error: %s:%d: check '%s' failed%s%s\n", file, line, expr,
               msg[0] ? ": " : "", msg);
  std::abort();
}

}  // namespace ddp

// DDP_CHECK(cond) or DDP_CHECK(cond, "why"): an invariant of our own code.
#define DDP_CHECK(cond, ...) \
  ((cond) ? (void)0 : ::ddp::check_failed(#cond, __FILE__, __LINE__, "" __VA_ARGS__))
