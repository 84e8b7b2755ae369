#pragma once
// --accelerator and --precision against what this build, this machine and the GPU engine can
// do: refuses what cannot run (exit 2, saying why and what to do), decides where auto trains,
// and says it once when a GPU is there. Only cuda and auto ask the driver; a cpu run pays no
// CUDA initialisation.
#include <string>

#include "ddpscope/config.h"
#include "train/config/run_config.h"

namespace ddp {

// Whether the GPU engine makes this --data's samples itself: random, teacher, csv:PATH.
bool gpu_makes_data(const std::string& data);

// Throws UsageError; train, compare, doctor and predict call it through validate_config.
void check_accelerator(const Config& config);

// Where the Trainer trains: on the GPU for cuda, and for auto when there is a visible GPU
// for each of this host's ranks and the engine can train the run; on CPU otherwise. The
// engine trains the built-in regression task on data it makes itself (regression_on_gpu_data),
// in any --precision, on one GPU or several ranks (DDP or ZeRO-1, through host memory until
// NCCL is built). Throws UsageError for a cuda run it cannot train (a program that builds
// its own Trainer has not been through validate_config).
bool trains_on_gpu(const TrainerOptions& options, bool regression_on_gpu_data);

}  // namespace ddp
