#pragma once
// TensorBoard scalars: run_dir/events.out.tfevents.<unix seconds>.<hostname>, a sequence of
// records (TFRecord framing) each holding one Event message. The first Event names the
// format ("brain.Event:2"); then one Event per log_metrics call, a Summary with one
// simple_value per metric, tagged with the metric's name.
#include <cstdint>
#include <filesystem>
#include <string>

#include "log/logger.h"

namespace ddp {

class TensorBoardLogger : public Logger {
 public:
  // Creates the event file with its version record, so an unwritable folder fails here,
  // before training, as an Error naming the file.
  explicit TensorBoardLogger(const std::filesystem::path& run_dir);
  ~TensorBoardLogger() override;
  void log_metrics(const Metrics& metrics, int64_t epoch, int64_t step) override;
  // Appends the buffered records in one write. On failure the file is cut back to its last
  // whole record, the records stay buffered for the next flush, and an Error is thrown.
  void flush() override;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::string pending_;  // whole framed records not yet written
};

}  // namespace ddp
