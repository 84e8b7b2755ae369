#include "ddpscope/option_enums.h"

#include <algorithm>

namespace ddp {

std::optional<LoggerList> parse_logger_list(const std::string& text, std::string& expected) {
  std::vector<std::string> names;
  for (size_t start = 0; start <= text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    names.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  LoggerList loggers;
  for (const std::string& name : names) {
    const std::optional<LoggerKind> kind = from_spelling<LoggerKind>(name);
    if (!kind && name != "none") {
      expected = "a comma list of csv, tensorboard, jsonl, or none";
      return std::nullopt;
    }
    if (std::count(names.begin(), names.end(), name) > 1 || (name == "none" && names.size() > 1)) {
      expected = "each of csv, tensorboard, jsonl at most once, or none alone";
      return std::nullopt;
    }
    if (kind) loggers.push_back(*kind);
  }
  return loggers;
}

std::string logger_list_text(const LoggerList& loggers) {
  if (loggers.empty()) return "none";
  std::string text;
  for (LoggerKind kind : loggers) {
    if (!text.empty()) text += ',';
    text += spelling(kind);
  }
  return text;
}

}  // namespace ddp
