#pragma once
// run_dir/metrics.jsonl: one JSON object per log_metrics call, one per line,
// {"epoch": E, "step": S, "<name>": value, ...} in the order given; non-finite values as null.
#include <cstdint>
#include <filesystem>
#include <string>

#include "log/logger.h"

namespace ddp {

class JsonlLogger : public Logger {
 public:
  // Creates the (empty) file, so an unwritable folder fails here, before training.
  explicit JsonlLogger(const std::filesystem::path& run_dir);
  ~JsonlLogger() override;
  void log_metrics(const Metrics& metrics, int64_t epoch, int64_t step) override;
  // Appends the buffered lines in one write. On failure the file is cut back to its last
  // whole line, the lines stay buffered for the next flush, and an Error is thrown.
  void flush() override;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::string pending_;  // whole lines not yet written
};

}  // namespace ddp
