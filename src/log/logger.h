#pragma once
// Loggers receive metrics as (name, value) at a training position. Implementations buffer
// and write off the hot loop (flush at epoch ends and at the end of the run).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ddp {

using Metrics = std::vector<std::pair<std::string, double>>;

class Logger {
 public:
  virtual ~Logger() = default;
  virtual void log_metrics(const Metrics& metrics, int64_t epoch, int64_t step) = 0;
  // Makes everything logged so far durable and valid on disk.
  virtual void flush() = 0;
};

}  // namespace ddp
