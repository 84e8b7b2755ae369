#pragma once
// A resolved configuration as the shortest `ddpscope train` arguments that reproduce it:
// every option that differs from the defaults, so the commands in reports stay readable.
#include <string>
#include <vector>

#include "ddpscope/config.h"
#include "train/config/run_config.h"

namespace ddp {

std::vector<std::string> train_arguments(const Config& config);

// For display: quoted where needed.
std::string shell_command(const std::vector<std::string>& args);

}  // namespace ddp
