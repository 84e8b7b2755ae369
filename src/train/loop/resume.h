#pragma once
// Where a run starts: --init-from (parameters only) and --ckpt-path (the whole training
// position), and what the Trainer says when a checkpoint leaves nothing to train.
#include <cstdint>

#include "ddpscope/config.h"
#include "ddpscope/mlp.h"
#include "ddpscope/optimizer.h"
#include "dist/communicator.h"

namespace ddp {

// Where the loop is: set from a checkpoint at the start, advanced as training goes.
struct LoopPosition {
  int64_t epoch = 0;
  int64_t next_batch = 0;  // micro-batches of that epoch a resumed checkpoint had done
  int64_t global_step = 0;
};

// --init-from on rank zero (its parameters are broadcast later); --ckpt-path on every rank,
// so each has the optimizer state too. A checkpoint written inside an epoch by another
// number of ranks resumes at the start of that epoch (the shards differ), said on stderr;
// one written inside an epoch with other data, batch size, seed or accumulation (which order
// and cut that epoch differently; `hparams`, this run's, against the checkpoint's) is refused.
LoopPosition restore_start(const TrainerOptions& options, const OptionTexts& hparams, Communicator& comm, Mlp& network,
                           Optimizer& optimizer, OptimizerKind kind);

// The resumed checkpoint is already at --max-epochs or --max-steps.
bool nothing_left_to_train(const TrainerOptions& options, const LoopPosition& at);
// Rank zero's line for it: which limit was reached, and what to raise.
void print_nothing_left(const TrainerOptions& options, const LoopPosition& at);

}  // namespace ddp
