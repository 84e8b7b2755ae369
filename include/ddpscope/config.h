#pragma once
// The options of a run a library user sets, as plain structs with the seed's defaults: the
// Trainer's (Lightning's Trainer arguments) and the data's. The command line parses and
// validates them (with the model's and optimizer's) in one place, the option table behind
// --help, and prints them into hparams.yaml and summary.json.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ddpscope/option_enums.h"

namespace ddp {

struct DataOptions {
  std::string data = "random";  // random | teacher | csv:PATH
  int64_t dataset_size = 5000;
  int64_t batch_size = 256;  // per device, as in Lightning
  bool shuffle = true;
  int loader_workers = 0;
  uint64_t seed = 0;
};

// --limit-train-batches: a count of micro-batches per epoch, or a fraction of the epoch's (at
// least one).
struct BatchLimit {
  double fraction = 1.0;         // used when count is not set
  std::optional<int64_t> count;  // micro-batches
  bool operator==(const BatchLimit&) const = default;
};

// Lightning's Trainer arguments. Field order lets the seed write
// Trainer({.strategy = Strategy::kDdp, .devices = 3, .max_epochs = 200, .accumulate_grad_batches = 3}).
struct TrainerOptions {
  Accelerator accelerator = Accelerator::kCpu;
  Precision precision = Precision::k32True;
  Strategy strategy = Strategy::kAuto;
  int devices = 0;  // 0: auto (the MPI world's size under mpirun, else 1)
  int num_nodes = 1;
  int64_t max_epochs = 200;
  int64_t max_steps = -1;  // -1: no limit
  int64_t accumulate_grad_batches = 1;
  int64_t check_val_every_n_epoch = 1;
  BatchLimit limit_train_batches;
  int64_t log_every_n_steps = 50;  // counted in optimizer steps
  int threads_per_device = 1;
  uint64_t seed = 0;  // the samplers' shuffle seed
  // ddp
  double bucket_cap_mb = 25.0;
  bool no_overlap = false;
  bool sync_every_micro_batch = false;
  // gpu
  bool no_cuda_graph = false;  // launch a step's kernels one by one (the eager ablation)
  ProcessGroupBackend process_group_backend = ProcessGroupBackend::kAuto;  // GPU ranks' gradients
  // observability and outputs
  Profiler profiler = Profiler::kSimple;
  int monitor_interval_ms = 100;
  MonitorMode monitor_mode = MonitorMode::kBackground;
  LoggerList logger = {LoggerKind::kCsv};  // empty: none
  std::string default_root_dir = ".";
  std::string name = "ddpscope_logs";
  std::string version;     // empty: the next free version_<n>
  bool overwrite = false;  // replace the --version folder when it exists
  ProgressMode progress_bar = ProgressMode::kAuto;
  // checkpoints
  std::string ckpt_path;
  int64_t checkpoint_every_n_epochs = 0;
  std::string init_from;
};

// Options as (snake_case name, text as typed), e.g. {"batch_size", "256"}: the resolved options in
// the option table's order are what hparams.yaml, summary.json and checkpoints record and what
// ranks compare before they train together (Lightning's hparams).
using OptionTexts = std::vector<std::pair<std::string, std::string>>;

}  // namespace ddp
