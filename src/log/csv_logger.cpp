#include "log/csv_logger.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "base/error.h"
#include "log/file_io.h"

namespace ddp {

CsvLogger::CsvLogger(std::filesystem::path path) : path_(std::move(path)) {}

CsvLogger::~CsvLogger() {
  try {
    flush();
  } catch (...) {  // a destructor must not throw; the trainer flushed and reported already
  }
}

void CsvLogger::log_metrics(const Metrics& metrics, int64_t epoch, int64_t step) {
  for (const auto& [key, value] : metrics) {
    if (std::find(keys_.begin(), keys_.end(), key) == keys_.end()) keys_.push_back(key);
  }
  rows_.push_back({epoch, step, metrics});
}

std::string CsvLogger::format_row(const Row& row) const {
  std::string line = fmt::format("{},{}", row.epoch, row.step);
  for (const std::string& key : keys_) {
    line += ',';
    for (const auto& [name, value] : row.metrics) {
      if (name == key) line += fmt::format("{}", value);
    }
  }
  return line + '\n';
}

void CsvLogger::flush() {
  if (rows_written_ == rows_.size() && keys_written_ == keys_.size()) return;
  if (keys_written_ != keys_.size() || rows_written_ == 0) {
    // The header changed: rewrite the whole file atomically so it is never half-old.
    std::string text = "epoch,step";
    for (const std::string& key : keys_) text += "," + key;
    text += '\n';
    for (const Row& row : rows_) text += format_row(row);
    write_file_atomically(path_, text);
  } else {
    std::string text;
    for (std::size_t i = rows_written_; i < rows_.size(); ++i) text += format_row(rows_[i]);
    append_to_file(path_, text);
  }
  rows_written_ = rows_.size();
  keys_written_ = keys_.size();
}

}  // namespace ddp
