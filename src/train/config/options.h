#pragma once
// The option table: one entry per option of a run, shared by the command line, the
// YAML config reader and hparams.yaml, so the three can never disagree.
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ddpscope/config.h"
#include "train/config/run_config.h"

namespace ddp {

struct OptionSpec {
  std::string name;   // kebab-case without dashes: "batch-size"
  std::string group;  // for --help
  std::string help;
  bool is_flag = false;                                  // a switch: --name sets "true"
  std::string negation;                                  // a switch's off form, e.g. "no-shuffle"; empty if none
  std::function<void(Config&, const std::string&)> set;  // throws UsageError on bad values
  std::function<std::string(const Config&)> get;
};

const std::vector<OptionSpec>& option_specs();

// Sets one option from its text; name may use dashes or underscores.
void apply_option(Config& config, std::string_view name, const std::string& value);

// Named presets; "seed" is the seed's Trainer: ddp on 3 devices, accumulation 3.
void apply_preset(Config& config, std::string_view preset);

// Option (name, value) pairs of a YAML mapping (values as text; lists joined by commas).
OptionTexts read_yaml_options(const std::string& path);

// Defaults, then the preset (given on the command line or in the file), then the YAML
// file, then the command line's own options: later sources override earlier ones.
Config resolve_config(const OptionTexts& command_line, const std::string& preset, const std::string& config_file);

// Checks across options, and refuses what this build cannot do yet. Throws UsageError.
void validate_config(const Config& config);

// The resolved options as (snake_case name, text) in table order: hparams.yaml, summary.
OptionTexts resolved_options(const Config& config);

}  // namespace ddp
