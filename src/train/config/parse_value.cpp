#include "train/config/parse_value.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "base/excerpt.h"
#include "ddpscope/error.h"

namespace ddp {

void reject_value(std::string_view option, std::string_view value, std::string_view accepted) {
  throw UsageError(fmt::format("--{}: '{}' is not accepted; expected {}", option, excerpt(value), accepted));
}

int64_t parse_int(std::string_view option, const std::string& value, int64_t min, int64_t max) {
  const std::string accepted = max == std::numeric_limits<int64_t>::max()
                                   ? fmt::format("an integer >= {}", min)
                                   : fmt::format("an integer from {} to {}", min, max);
  return parse_int(option, value, min, max, accepted);
}

int64_t parse_int(std::string_view option, const std::string& value, int64_t min, int64_t max,
                  std::string_view accepted) {
  int64_t parsed = 0;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, parsed);
  if (value.empty() || ec != std::errc() || ptr != end || parsed < min || parsed > max) {
    reject_value(option, value, accepted);
  }
  return parsed;
}

std::vector<int> parse_count_list(std::string_view option, const std::string& value, int most,
                                  std::string_view accepted) {
  std::vector<int> counts;
  std::size_t start = 0;
  while (start <= value.size()) {
    const std::size_t comma = std::min(value.find(',', start), value.size());
    int64_t count = 0;
    try {
      count = parse_int(option, value.substr(start, comma - start), 1, most);
    } catch (const UsageError&) {
      reject_value(option, value, accepted);
    }
    if (!counts.empty() && count <= counts.back()) reject_value(option, value, accepted);
    counts.push_back(static_cast<int>(count));
    start = comma + 1;
  }
  return counts;
}

double parse_real(std::string_view option, const std::string& value) {
  double parsed = 0;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, parsed);
  if (value.empty() || ec != std::errc() || ptr != end || !std::isfinite(parsed)) {
    reject_value(option, value, "a finite number");
  }
  return parsed;
}

bool parse_bool(std::string_view option, const std::string& value) {
  if (value == "true" || value == "1" || value == "on" || value == "yes") return true;
  if (value == "false" || value == "0" || value == "off" || value == "no") return false;
  reject_value(option, value, "true or false");
}

std::string parse_choice(std::string_view option, const std::string& value,
                         std::initializer_list<std::string_view> choices) {
  std::string list;
  for (std::string_view choice : choices) {
    if (value == choice) return value;
    list += list.empty() ? "one of " : ", ";
    list += choice;
  }
  reject_value(option, value, list);
}

std::string format_real(double value) { return fmt::format("{}", value); }

}  // namespace ddp
