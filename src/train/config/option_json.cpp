#include "train/config/option_json.h"

#include <fmt/format.h>

#include <charconv>

#include "ddpscope/error.h"
#include "train/config/options.h"

namespace ddp {
namespace {

nlohmann::ordered_json typed(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  const char* end = text.data() + text.size();
  int64_t integer = 0;
  if (auto [p, ec] = std::from_chars(text.data(), end, integer); ec == std::errc() && p == end && !text.empty()) {
    return integer;
  }
  double real = 0;
  if (auto [p, ec] = std::from_chars(text.data(), end, real); ec == std::errc() && p == end && !text.empty()) {
    return real;
  }
  return text;
}

std::string option_text(const nlohmann::ordered_json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

}  // namespace

nlohmann::ordered_json config_json(const OptionTexts& options) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [key, value] : options) out[key] = typed(value);
  return out;
}

nlohmann::ordered_json config_json(const Config& config) { return config_json(resolved_options(config)); }

OptionTexts options_from_json(const nlohmann::ordered_json& config) {
  OptionTexts options;
  for (const auto& [key, value] : config.items()) options.emplace_back(key, option_text(value));
  return options;
}

Config typed_config(const OptionTexts& options, std::string_view where) {
  Config config;
  for (const auto& [key, text] : options) {
    try {
      if (key == "preset")
        config.preset = text;  // the name only: its values are in the other options
      else
        apply_option(config, key, text);
    } catch (const UsageError& e) {
      throw DataError(fmt::format("{} field \"{}\": {}", where, key, e.what()));
    }
  }
  return config;
}

Config config_from_json(const nlohmann::ordered_json& config, std::string_view where) {
  if (!config.is_object())
    throw DataError(fmt::format("{} is {}, expected an object of options", where, config.dump()));
  return typed_config(options_from_json(config), where);
}

}  // namespace ddp
