#pragma once
// Text to typed option values; a bad value is a UsageError naming the option, the value
// and what is accepted.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace ddp {

[[noreturn]] void reject_value(std::string_view option, std::string_view value, std::string_view accepted);

int64_t parse_int(std::string_view option, const std::string& value, int64_t min, int64_t max);
// The same, with the accepted values in words where [min, max] alone would mislead.
int64_t parse_int(std::string_view option, const std::string& value, int64_t min, int64_t max,
                  std::string_view accepted);
double parse_real(std::string_view option, const std::string& value);
// A comma list of increasing, distinct counts from 1 to `most` ("1,2,3"): --devices, --devices-list.
// `accepted` says it in words for the message.
std::vector<int> parse_count_list(std::string_view option, const std::string& value, int most,
                                  std::string_view accepted);
bool parse_bool(std::string_view option, const std::string& value);
// value must be one of choices.
std::string parse_choice(std::string_view option, const std::string& value,
                         std::initializer_list<std::string_view> choices);

// Shortest text that reads back as the same double.
std::string format_real(double value);

}  // namespace ddp
