#pragma once
// A whole run's configuration, as the command line, a --config YAML file and summary.json give
// it: the public option structs, and what parsing them needs to remember.
#include <string>

#include "ddpscope/config.h"
#include "ddpscope/mlp.h"
#include "ddpscope/optimizer.h"

namespace ddp {

struct Config {
  MlpShape model;
  std::string activation = "relu";
  DataOptions data;
  OptimizerConfig optimizer;
  bool weight_decay_given = false;  // else PyTorch's default for the optimizer (AdamW: 0.01)
  // The last --logger text when it was not a valid list, and what was expected instead:
  // refused by validate_config after the checks that come before it, as a later --logger
  // that is valid replaces it.
  std::string refused_logger;
  std::string refused_logger_expected;
  TrainerOptions trainer;
  std::string preset;       // "" or "seed"
  std::string config_file;  // --config FILE.yaml, when given
};

}  // namespace ddp
