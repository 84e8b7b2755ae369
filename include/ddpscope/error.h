#pragma once
// The errors a user can act on: each carries its message and the documented exit code.
// (Our own bugs are not these: they stop the process with a message that says so.)
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

}  // namespace ddp
