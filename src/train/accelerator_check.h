#pragma once
// --accelerator and --precision against what this build and machine can do: refuses what
// cannot run (exit 2, saying why and what to do) and says once when auto leaves a GPU unused.
// Only cuda and auto ask the driver; a cpu run pays no CUDA initialisation.
#include "ddpscope/config.h"

namespace ddp {

// Throws UsageError; train, compare, doctor and predict call it through validate_config.
void check_accelerator(const TrainerOptions& options);

}  // namespace ddp
