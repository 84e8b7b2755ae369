#include "doctor/command_line.h"

#include <algorithm>

#include "train/config/options.h"
#include "train/config/run_config.h"

namespace ddp {

std::vector<std::string> train_arguments(const Config& config) {
  const auto defaults = resolved_options(Config{});
  const auto options = resolved_options(config);
  std::vector<std::string> args;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const auto& [key, value] = options[i];
    if (key == "preset" || value == defaults[i].second) continue;
    std::string name = key;
    std::replace(name.begin(), name.end(), '_', '-');
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& s : option_specs()) {
      if (s.name == name) spec = &s;
    }
    if (spec != nullptr && spec->is_flag) {
      if (value == "true")
        args.push_back("--" + name);
      else if (!spec->negation.empty())
        args.push_back("--" + spec->negation);
      continue;
    }
    args.push_back("--" + name);
    args.push_back(value);
  }
  return args;
}

std::string shell_command(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& arg : args) {
    if (!out.empty()) out += ' ';
    const bool plain = !arg.empty() && arg.find_first_not_of(
                                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789-_.,/:=+") == std::string::npos;
    if (plain) {
      out += arg;
      continue;
    }
    out += '\'';
    for (const char c : arg)
      out += c == '\'' ? std::string("'\\''") : std::string(1, c);  // ' ends, \' is one, ' resumes
    out += '\'';
  }
  return out;
}

}  // namespace ddp
