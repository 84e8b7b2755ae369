#include "log/csv_logger.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "ddpscope/error.h"
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
  if (rows_.empty() && keys_written_ == keys_.size()) return;
  std::string text;
  if (keys_written_ != keys_.size() || !file_started_) {
    // The header changed: the rows on disk get empty cells for the new keys (they did not
    // log them), and the whole file is rewritten atomically so it is never half-old. Rows
    // are not kept in memory once written, so a long run's memory stays flat.
    text = "epoch,step";
    for (const std::string& key : keys_) text += "," + key;
    text += '\n';
    if (file_started_) {
      std::ifstream old(path_);
      std::string line;
      std::getline(old, line);  // the old header
      const std::string padding(keys_.size() - keys_written_, ',');
      while (std::getline(old, line)) text += line + padding + '\n';
    }
    for (const Row& row : rows_) text += format_row(row);
    write_file_atomically(path_, text);
    file_started_ = true;
  } else {
    for (const Row& row : rows_) text += format_row(row);
    append_to_file(path_, text);
  }
  rows_.clear();
  keys_written_ = keys_.size();
}

}  // namespace ddp
