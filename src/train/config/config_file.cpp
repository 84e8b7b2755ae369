// The YAML config reader, option resolution and cross-option validation.
#include <fmt/format.h>
#include <unistd.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "ddpscope/error.h"
#include "io/read_file.h"
#include "train/config/accelerator_check.h"
#include "train/config/memory_check.h"
#include "train/config/options.h"
#include "train/config/parse_value.h"
#include "train/config/run_config.h"

namespace ddp {
namespace {

std::string scalar_text(const YAML::Node& node, const std::string& key, const std::string& path) {
  if (node.IsScalar()) return node.Scalar();
  if (node.IsSequence()) {
    std::string joined;
    for (const YAML::Node& item : node) {
      if (!item.IsScalar()) {
        throw UsageError(fmt::format("--config {}: key '{}' (line {}) must be a value or a list of plain values", path,
                                     key, item.Mark().line + 1));
      }
      joined += (joined.empty() ? "" : ",") + item.Scalar();
    }
    return joined;
  }
  throw UsageError(fmt::format("--config {}: key '{}' (line {}) must be a value or a list of values", path, key,
                               node.Mark().line + 1));
}

// A key as the command line spells its option: batch_size and batch-size are --batch-size.
std::string option_name(const std::string& key) {
  std::string name = key;
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

bool is_known_option(const std::string& key) {
  const std::string name = option_name(key);
  if (name == "preset") return true;
  for (const OptionSpec& spec : option_specs()) {
    if (spec.name == name || (!spec.negation.empty() && spec.negation == name)) return true;
  }
  return false;
}

// Parse events are not needed to count documents.
struct IgnoreEvents : YAML::EventHandler {
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// Whether the text holds a second document. Bounded, unlike YAML::LoadAll, which yaml-cpp 0.7
// never finishes on some malformed text (",[" yields empty documents without end).
bool has_second_document(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  IgnoreEvents ignore;
  return parser.HandleNextDocument(ignore) && parser.HandleNextDocument(ignore);
}

}  // namespace

OptionTexts read_yaml_options(const std::string& path) {
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored)) {
    throw UsageError(fmt::format("--config: '{}' is a folder; expected a YAML file", path));
  }
  if (::access(path.c_str(), R_OK) != 0) {
    throw UsageError(fmt::format("--config: cannot read '{}': no such file or not readable", path));
  }
  std::string text;
  try {
    text = read_input_file(path, "a YAML file");  // a FIFO, a device, an unreadable /proc file
  } catch (const DataError& e) {
    throw UsageError(fmt::format("--config: {}", e.what()));
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
    if (has_second_document(text)) {
      throw UsageError(
          fmt::format("--config {}: holds more than one YAML document (separated by ---); expected one mapping of "
                      "option names to values",
                      path));
    }
  } catch (const YAML::Exception& e) {
    throw UsageError(
        fmt::format("--config {}: line {}, column {}: {}", path, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  OptionTexts options;
  if (root.IsNull()) return options;  // an empty file sets nothing
  if (!root.IsMap()) {
    throw UsageError(
        fmt::format("--config {}: expected a mapping of option names to values, e.g. 'batch_size: 256'", path));
  }
  std::map<std::string, int> first_line;  // by option name: batch-size and batch_size are one option
  for (const auto& entry : root) {
    const int line = entry.first.Mark().line + 1;
    if (!entry.first.IsScalar()) {
      throw UsageError(fmt::format("--config {}: line {}: keys must be option names, e.g. batch_size", path, line));
    }
    const std::string key = entry.first.Scalar();
    if (!is_known_option(key)) {
      throw UsageError(fmt::format(
          "--config {}: unknown key '{}' (line {}); keys are the option names without dashes, e.g. batch_size", path,
          key, line));
    }
    const auto [seen, first] = first_line.emplace(option_name(key), line);
    if (!first) {
      throw UsageError(fmt::format("--config {}: key '{}' (line {}) sets '{}' again (line {}); give each option once",
                                   path, key, line, seen->first, seen->second));
    }
    options.emplace_back(key, scalar_text(entry.second, key, path));
  }
  return options;
}

Config resolve_config(const OptionTexts& command_line, const std::string& preset, const std::string& config_file) {
  Config config;
  OptionTexts from_file;
  if (!config_file.empty()) from_file = read_yaml_options(config_file);
  std::string chosen_preset = preset;
  for (const auto& [key, value] : from_file) {
    if (key == "preset" && chosen_preset.empty()) chosen_preset = value;
  }
  if (!chosen_preset.empty()) apply_preset(config, chosen_preset);
  for (const auto& [key, value] : from_file) {
    if (key == "preset") continue;
    try {
      apply_option(config, key, value);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("--config {}: {}", config_file, e.what()));
    }
  }
  for (const auto& [key, value] : command_line) apply_option(config, key, value);
  config.config_file = config_file;
  // PyTorch's defaults differ per optimizer: AdamW decays by 0.01 unless told otherwise.
  if (!config.weight_decay_given && config.optimizer.kind == OptimizerKind::kAdamW) {
    config.optimizer.weight_decay = 0.01;
  }
  return config;
}

void validate_config(const Config& c) {
  const TrainerOptions& t = c.trainer;
  if (t.max_epochs == -1 && t.max_steps == -1) {
    throw UsageError(
        "--max-epochs -1 trains until --max-steps, which is not set: give --max-steps N or --max-epochs N");
  }
  if (c.optimizer.momentum != 0 && c.optimizer.kind != OptimizerKind::kSgd) {
    throw UsageError(fmt::format("--momentum {} applies to --optimizer sgd only (the optimizer is {})",
                                 format_real(c.optimizer.momentum), optimizer_name(c.optimizer.kind)));
  }
  if (c.data.data.rfind("csv:", 0) != 0 && c.data.data != "random" && c.data.data != "teacher") {
    reject_value("data", c.data.data, "random, teacher or csv:PATH");
  }
  if (c.data.data == "csv:") reject_value("data", c.data.data, "csv:PATH with a file path");
  // The logger list: known names, no duplicates, 'none' alone (parsed by the option table).
  if (!c.refused_logger_expected.empty()) {
    reject_value("logger", c.refused_logger, c.refused_logger_expected);
  }
  // One folder each inside the root: '.' or '..' would put the run's files beside or above it.
  const auto is_dots = [](const std::string& folder) { return folder == "." || folder == ".."; };
  constexpr std::size_t kLongestName = 255;  // bytes of one folder name on Linux's file systems
  if (t.name.empty() || t.name.find('/') != std::string::npos || is_dots(t.name) || t.name.size() > kLongestName) {
    reject_value("name", t.name, "a non-empty folder name without '/', other than '.' and '..', of at most 255 bytes");
  }
  if (t.version.find('/') != std::string::npos || is_dots(t.version) || t.version.size() > kLongestName) {
    reject_value("version", t.version, "a folder name without '/', other than '.' and '..', of at most 255 bytes");
  }
  if (!t.ckpt_path.empty() && !t.init_from.empty()) {
    throw UsageError(
        fmt::format("--init-from {} and --ckpt-path {} contradict: --ckpt-path restores the parameters, "
                    "the optimizer state and the position; give one of them",
                    t.init_from, t.ckpt_path));
  }

  // What this build, this machine and the GPU engine cannot run is refused.
  check_accelerator(c);
  if (t.strategy == Strategy::kSingle && t.devices > 1) {
    throw UsageError(
        fmt::format("--strategy single trains on one device, but --devices is {}; use --strategy ddp", t.devices));
  }
  if (t.strategy == Strategy::kDdpZero1 && t.sync_every_micro_batch) {
    throw UsageError(
        "--sync-every-micro-batch allreduces every micro-batch's gradients, but --strategy ddp_zero1 "
        "reduce-scatters them once per optimizer step; use --strategy ddp with it");
  }
  check_memory(c);
}

}  // namespace ddp
