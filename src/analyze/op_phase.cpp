#include "analyze/op_phase.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <string>
#include <utility>

namespace ddp {
namespace {

struct Rule {
  enum class Match { kExact, kPrefix, kContains, kSuffix } match;
  std::string_view text;
  Phase part;
};

// First match wins: more specific names first. PyTorch (eager and DDP), Lightning's
// profiler annotations ([Strategy], [LightningModule], [_TrainingEpochLoop]) and the
// "## forward ##" markers of PyTorch's own profiling examples.
constexpr std::array kRules = {
    Rule{Rule::Match::kPrefix, "gloo:", Phase::kCommWait},
    Rule{Rule::Match::kPrefix, "nccl:", Phase::kCommWait},
    Rule{Rule::Match::kPrefix, "c10d::", Phase::kCommWait},
    Rule{Rule::Match::kPrefix, "record_param_comms", Phase::kCommWait},
    Rule{Rule::Match::kPrefix, "enumerate(DataLoader)", Phase::kData},
    Rule{Rule::Match::kContains, "train_dataloader_next", Phase::kData},
    Rule{Rule::Match::kPrefix, "## forward ##", Phase::kForward},
    Rule{Rule::Match::kPrefix, "## backward ##", Phase::kBackward},
    Rule{Rule::Match::kPrefix, "## optimizer ##", Phase::kOptimizer},
    Rule{Rule::Match::kPrefix, "Optimizer.step#", Phase::kOptimizer},
    Rule{Rule::Match::kPrefix, "Optimizer.zero_grad#", Phase::kOptimizer},
    Rule{Rule::Match::kContains, "optimizer_step", Phase::kOptimizer},
    Rule{Rule::Match::kContains, "optimizer_zero_grad", Phase::kOptimizer},
    Rule{Rule::Match::kContains, "validation_step", Phase::kValidation},
    Rule{Rule::Match::kPrefix, "autograd::engine::evaluate_function", Phase::kBackward},
    Rule{Rule::Match::kContains, ".backward", Phase::kBackward},
    Rule{Rule::Match::kSuffix, "Backward0", Phase::kBackward},
    Rule{Rule::Match::kSuffix, "Backward1", Phase::kBackward},
    Rule{Rule::Match::kPrefix, "DistributedDataParallel.forward", Phase::kForward},
    Rule{Rule::Match::kContains, "training_step", Phase::kForward},
    // ddpscope's own trace.json names its spans by phase, exactly.
    Rule{Rule::Match::kExact, "data", Phase::kData},
    Rule{Rule::Match::kExact, "forward", Phase::kForward},
    Rule{Rule::Match::kExact, "backward", Phase::kBackward},
    Rule{Rule::Match::kExact, "comm_wait", Phase::kCommWait},
    Rule{Rule::Match::kExact, "optimizer", Phase::kOptimizer},
    Rule{Rule::Match::kExact, "validation", Phase::kValidation},
};

bool matches(const Rule& rule, std::string_view name) {
  switch (rule.match) {
    case Rule::Match::kExact:
      return name == rule.text;
    case Rule::Match::kPrefix:
      return name.starts_with(rule.text);
    case Rule::Match::kContains:
      return name.find(rule.text) != std::string_view::npos;
    case Rule::Match::kSuffix:
      return name.ends_with(rule.text);
  }
  return false;
}

}  // namespace

std::optional<Phase> part_of_op(std::string_view name) {
  for (const Rule& rule : kRules) {
    if (matches(rule, name)) return rule.part;
  }
  return std::nullopt;
}

bool is_collective_annotation(std::string_view name) {
  return name.starts_with("gloo:") || name.starts_with("nccl:") || name == "allreduce";
}

bool is_region(std::string_view name) { return name.find("::") == std::string_view::npos; }

bool can_mark_step(std::string_view name) {
  return profiler_step_number(name) || name.find("run_training_batch") != std::string_view::npos ||
         name.starts_with("Optimizer.step#") || name == "optimizer";
}

bool is_collective_library_name(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("nccl") != std::string::npos || lower.find("rccl") != std::string::npos;
}

std::optional<long long> profiler_step_number(std::string_view name) {
  constexpr std::string_view kMarker = "ProfilerStep#";
  if (!name.starts_with(kMarker)) return std::nullopt;
  const std::string_view digits = name.substr(kMarker.size());
  long long number = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return number;
}

bool is_collective_launch(std::string_view name) {
  return name.starts_with("c10d::") || name.starts_with("record_param_comms") || name.starts_with("nccl:");
}

}  // namespace ddp
