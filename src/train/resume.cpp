#include "train/resume.h"

#include <cstdio>

#include "dist/root_outcome.h"
#include "train/checkpoint.h"

namespace ddp {

StartPoint restore_start(const TrainerOptions& options, Communicator& comm, Mlp& network, Optimizer& optimizer,
                         OptimizerKind kind) {
  if (!options.init_from.empty()) {
    run_on_root_fail_everywhere(comm, 0, [&] { load_parameters(options.init_from, network); });
  }
  if (options.ckpt_path.empty()) return {};
  const LoadedCheckpoint checkpoint = read_checkpoint(options.ckpt_path);
  restore_checkpoint(checkpoint, network, optimizer, kind);
  const TrainingPosition& at = checkpoint.position;
  StartPoint start{at.epoch, at.next_batch, at.global_step};
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
  return start;
}

// A checkpoint at --max-epochs or --max-steps leaves nothing to do: fit() says so and
// returns, with no run folder and no throughput of zero work.
bool nothing_left_to_train(const TrainerOptions& options, const StartPoint& at) {
  if (options.ckpt_path.empty()) return false;
  return (options.max_epochs >= 0 && at.epoch >= options.max_epochs) ||
         (options.max_steps > 0 && at.global_step >= options.max_steps);
}

void print_nothing_left(const TrainerOptions& options, const StartPoint& at) {
  const bool by_steps = options.max_steps > 0 && at.global_step >= options.max_steps;
  const char* limit = by_steps ? "--max-steps" : "--max-epochs";
  std::printf(
      "Nothing left to train: the checkpoint %s is at epoch %lld, optimizer step %lld, which %s %lld "
      "has reached; raise %s to train further\n",
      options.ckpt_path.c_str(), static_cast<long long>(at.epoch), static_cast<long long>(at.global_step), limit,
      static_cast<long long>(by_steps ? options.max_steps : options.max_epochs), limit);
}

}  // namespace ddp
