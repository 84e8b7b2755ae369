#pragma once
// Lightning's Trainer for MLPs: fit() runs the epochs, the training steps with gradient
// accumulation, validation, logging and timing. Where it trains (alone or as one rank of an
// MPI world) is decided before it, by join_world (ddpscope/world_join.h). It writes its logs,
// checkpoints and summary.json under log_dir().
#include <cstdint>
#include <filesystem>
#include <memory>

#include "ddpscope/config.h"
#include "ddpscope/module.h"
#include "ddpscope/training_stats.h"
#include "ddpscope/world_join.h"

namespace ddp {

struct RunSummary;

class Trainer {
 public:
  // The wall clock of the run starts here, as the seed's timer starts before the Trainer (a
  // rank that ddpscope launched counts from the launch). hparams: the resolved options to
  // record in hparams.yaml, summary.json and the checkpoints.
  Trainer(TrainerOptions options, World world, OptionTexts hparams = {});
  ~Trainer();

  void fit(LightningModule& module, LightningDataModule& data);

  bool is_global_zero() const;
  int world_size() const;
  const std::filesystem::path& log_dir() const;
  int64_t global_step() const;
  // After fit(): what it measured.
  TrainingStats stats() const;
  // After fit's setup: the checkpoint being resumed is already at --max-epochs or --max-steps.
  bool nothing_left_to_train() const;

 private:
  class Run;  // one fit(): the loop's state and its helpers
  std::unique_ptr<Run> run_;
  // The whole record, for ddpscope's own command line and tests: not part of the library.
  friend const RunSummary& run_summary(const Trainer& trainer);
};

}  // namespace ddp
