#pragma once
// What a finished fit() measured, as a library user reads it from Trainer::stats(). The
// command line writes the whole record (summary.json: phases per rank, collectives' arrivals,
// threads) beside the logs.
#include <cstdint>
#include <optional>

#include "ddpscope/option_enums.h"

namespace ddp {

struct TrainingStats {
  int world_size = 1;
  Strategy strategy = Strategy::kSingle;        // what ran: single, ddp or ddp_zero1, never auto
  Accelerator accelerator = Accelerator::kCpu;  // what ran: cpu or cuda, never auto
  int64_t epochs = 0;                           // completed
  int64_t optimizer_steps = 0;                  // the global step: a resumed run counts from its checkpoint's
  int64_t train_samples = 0;                    // trained by this run, over all ranks
  double wall_seconds = 0;        // from the Trainer's construction (a launched rank: the launch) to fit()'s end
  double samples_per_second = 0;  // train_samples / wall_seconds
  std::optional<double> final_train_loss;
  std::optional<double> final_val_loss;
  int64_t gradient_allreduces = 0;  // rank zero's, over the run
  int64_t gradient_bytes = 0;       // what they reduced
};

}  // namespace ddp
