#include "log/jsonl_logger.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "log/file_io.h"

namespace ddp {

JsonlLogger::JsonlLogger(const std::filesystem::path& run_dir) : path_(run_dir / "metrics.jsonl") {
  write_file_atomically(path_, "");
}

JsonlLogger::~JsonlLogger() {
  try {
    flush();
  } catch (...) {  // a destructor must not throw; the trainer flushed and reported already
  }
}

void JsonlLogger::log_metrics(const Metrics& metrics, int64_t epoch, int64_t step) {
  nlohmann::ordered_json line;  // ordered: epoch and step first, then the metrics as given
  line["epoch"] = epoch;
  line["step"] = step;
  for (const auto& [name, value] : metrics) {
    line[name] = std::isfinite(value) ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr);
  }
  // replace: a metric name that is not UTF-8 must not throw in the training loop.
  pending_ += line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  pending_ += '\n';
}

void JsonlLogger::flush() {
  if (pending_.empty()) return;
  append_to_file(path_, pending_);  // all or nothing: a failed append is cut back
  pending_.clear();
}

}  // namespace ddp
