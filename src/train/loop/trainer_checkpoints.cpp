// The run's checkpoints, and its stop on a signal: every rank stops at the same optimizer
// step, with a checkpoint that resumes it.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "base/stop_signal.h"
#include "train/loop/stop_agreement.h"
#include "train/loop/trainer_run.h"

namespace ddp {

// The position after `next_batch` micro-batches of `epoch` (an epoch's end: the next epoch).
void Trainer::Run::save_checkpoints(LightningModule& module, int64_t epoch, int64_t next_batch, bool periodic) {
  if (gpu_.training) copy_gpu_to_host(module);
  const TrainingPosition at{epoch, next_batch, global_step(), comm_.size(), options_.seed};
  if (!optim_.shard->sharded()) {
    outputs_.save_checkpoints(module.network(), *optim_.optimizer, optim_.config.kind, at, periodic);
    return;
  }
  const std::unique_ptr<Optimizer> whole = optim_.shard->gather(*optim_.optimizer, optim_.config);  // on every rank
  outputs_.save_checkpoints(module.network(), *whole, optim_.config.kind, at, periodic);
}

// After an optimizer step: when any rank was signalled, all stop at this step with a checkpoint.
void Trainer::Run::stop_if_signalled(LightningModule& module, int64_t epoch, int64_t next_batch) {
  const int signal = agreed_stop_signal(comm_);
  if (signal == 0) return;
  progress_.finish();
  save_checkpoints(module, epoch, next_batch, /*periodic=*/false);
  outputs_.flush();
  const std::string path = outputs_.last_checkpoint().string();
  throw StopRequested(signal, fmt::format("stopped by {} at epoch {}, optimizer step {}; the checkpoint {} holds the "
                                          "position. Resume with the same options and --ckpt-path {}",
                                          signal_name(signal), epoch, global_step(), path, path));
}

}  // namespace ddp
