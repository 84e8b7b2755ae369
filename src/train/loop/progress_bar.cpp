#include "train/loop/progress_bar.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace ddp {

namespace {

// A rank that ddpscope launched writes to mpirun's pipe; the launcher says whether its own
// stderr, where the bar ends up, is a terminal.
bool stderr_is_terminal() {
  if (const char* launcher = std::getenv("DDPSCOPE_STDERR_IS_TERMINAL")) return std::string(launcher) == "1";
  return ::isatty(STDERR_FILENO) == 1;
}

}  // namespace

ProgressBar::ProgressBar(ProgressMode mode)
    : enabled_(mode == ProgressMode::kOn || (mode == ProgressMode::kAuto && stderr_is_terminal())) {}

void ProgressBar::update(int64_t epoch, int64_t max_epochs, int64_t batch, int64_t batches, double loss, bool force) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (epoch != epoch_) {
    epoch_ = epoch;
    epoch_start_ = now;
  }
  if (!force && drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  drawn_ = true;
  constexpr int kWidth = 24;
  const int filled = batches > 0 ? static_cast<int>(kWidth * batch / batches) : 0;
  const double seconds = std::chrono::duration<double>(now - epoch_start_).count();
  const std::string epochs =
      max_epochs > 0 ? fmt::format("{}/{}", epoch + 1, max_epochs) : fmt::format("{}", epoch + 1);
  std::fprintf(stderr, "\rEpoch %s [%s%s] %lld/%lld  %.1f it/s  train_loss=%.4g   ", epochs.c_str(),
               std::string(filled, '#').c_str(), std::string(kWidth - filled, '.').c_str(),
               static_cast<long long>(batch), static_cast<long long>(batches), seconds > 0 ? batch / seconds : 0.0,
               loss);
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (enabled_ && drawn_) std::fputc('\n', stderr);
  drawn_ = false;
}

}  // namespace ddp
