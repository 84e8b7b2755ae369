#pragma once
// Lightning's CSVLogger format: metrics.csv with a header of the union of all keys, epoch
// and step first, one row per logged event, empty cells where a key was not logged.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "log/logger.h"

namespace ddp {

class CsvLogger : public Logger {
 public:
  explicit CsvLogger(std::filesystem::path path);
  ~CsvLogger() override;
  void log_metrics(const Metrics& metrics, int64_t epoch, int64_t step) override;
  void flush() override;

 private:
  struct Row {
    int64_t epoch;
    int64_t step;
    Metrics metrics;
  };
  std::string format_row(const Row& row) const;

  std::filesystem::path path_;
  std::vector<std::string> keys_;  // metric keys in order of first appearance
  std::vector<Row> rows_;          // rows not yet written
  std::size_t keys_written_ = 0;   // keys in the file's header
  bool file_started_ = false;
};

}  // namespace ddp
