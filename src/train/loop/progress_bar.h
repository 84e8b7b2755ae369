#pragma once
// One line on stderr, redrawn at most ten times a second: epoch, batch, rate, last loss.
#include <chrono>
#include <cstdint>
#include <string>

#include "ddpscope/option_enums.h"

namespace ddp {

class ProgressBar {
 public:
  // kAuto: on when stderr is a terminal.
  explicit ProgressBar(ProgressMode mode);
  bool enabled() const { return enabled_; }
  // Redraws when enough time has passed since the last redraw (or when force).
  void update(int64_t epoch, int64_t max_epochs, int64_t batch, int64_t batches, double loss, bool force = false);
  // Ends the line.
  void finish();

 private:
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
  std::chrono::steady_clock::time_point epoch_start_{};
  int64_t epoch_ = -1;
};

}  // namespace ddp
