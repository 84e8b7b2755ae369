#include "train/loop/resume.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "dist/root_outcome.h"
#include "train/config/option_json.h"
#include "train/loop/checkpoint.h"

namespace ddp {
namespace {

// A position inside an epoch counts micro-batches of that epoch's order: it means the same
// samples only with the options that make the order and cut it into batches.
void check_same_epoch_cut(const LoadedCheckpoint& checkpoint, const OptionTexts& now) {
  const auto& at = checkpoint.position;
  const auto config = checkpoint.metadata.find("config");
  if (config == checkpoint.metadata.end()) return;
  const nlohmann::ordered_json written =
      nlohmann::ordered_json::parse(config->second, nullptr, /*allow_exceptions=*/false);
  if (!written.is_object()) return;
  std::map<std::string, std::string> then;
  for (auto& [name, text] : options_from_json(written)) then[name] = std::move(text);
  std::vector<std::string> changed, restore;
  for (const auto& [name, value] : now) {
    static const std::set<std::string> kCut = {
        "data", "dataset_size", "batch_size", "shuffle", "seed", "accumulate_grad_batches", "limit_train_batches"};
    const auto it = then.find(name);
    if (kCut.count(name) == 0 || it == then.end()) continue;
    const std::string& was = it->second;
    if (was == value) continue;
    std::string option = name;
    std::replace(option.begin(), option.end(), '_', '-');
    changed.push_back(fmt::format("--{} {}", option, value));
    restore.push_back(fmt::format("--{} {}", option, was));
  }
  if (changed.empty()) return;
  throw UsageError(fmt::format(
      "checkpoint {} was written inside epoch {}, after {} micro-batches, which this run's {} would order or cut "
      "differently; resume with the checkpoint's {}, or start from its parameters alone with --init-from {}",
      checkpoint.path.string(), at.epoch, at.next_batch, fmt::join(changed, ", "), fmt::join(restore, ", "),
      checkpoint.path.string()));
}

}  // namespace

LoopPosition restore_start(const TrainerOptions& options, const OptionTexts& hparams, Communicator& comm, Mlp& network,
                           Optimizer& optimizer, OptimizerKind kind) {
  if (!options.init_from.empty()) {
    run_on_root_fail_everywhere(comm, 0, [&] { load_parameters(options.init_from, network); });
  }
  if (options.ckpt_path.empty()) return {};
  const LoadedCheckpoint checkpoint = read_checkpoint(options.ckpt_path);
  restore_checkpoint(checkpoint, network, optimizer, kind);
  const TrainingPosition& at = checkpoint.position;
  LoopPosition start{at.epoch, at.next_batch, at.global_step};
  if (at.world_size != comm.size() && at.next_batch > 0) {
    // Another world shards the epoch differently: its micro-batch count does not carry over.
    if (comm.rank() == 0) {
      std::fprintf(stderr,
                   "ddpscope: the checkpoint was written by %d rank(s) inside epoch %lld; with %d rank(s) training "
                   "resumes at the start of that epoch\n",
                   at.world_size, static_cast<long long>(at.epoch), comm.size());
    }
    start.next_batch = 0;
  }
  if (start.next_batch > 0) check_same_epoch_cut(checkpoint, hparams);
  return start;
}

// A checkpoint at --max-epochs or --max-steps leaves nothing to do: fit() says so and
// returns, with no run folder and no throughput of zero work.
bool nothing_left_to_train(const TrainerOptions& options, const LoopPosition& at) {
  if (options.ckpt_path.empty()) return false;
  return (options.max_epochs >= 0 && at.epoch >= options.max_epochs) ||
         (options.max_steps > 0 && at.global_step >= options.max_steps);
}

void print_nothing_left(const TrainerOptions& options, const LoopPosition& at) {
  const bool by_steps = options.max_steps > 0 && at.global_step >= options.max_steps;
  const char* limit = by_steps ? "--max-steps" : "--max-epochs";
  std::printf(
      "Nothing left to train: the checkpoint %s is at epoch %lld, optimizer step %lld, which %s %lld "
      "has reached; raise %s to train further\n",
      options.ckpt_path.c_str(), static_cast<long long>(at.epoch), static_cast<long long>(at.global_step), limit,
      static_cast<long long>(by_steps ? options.max_steps : options.max_epochs), limit);
}

}  // namespace ddp
