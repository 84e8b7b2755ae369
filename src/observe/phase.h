#pragma once
// The phases of a rank's wall time. Every moment of a run belongs to one.
#include <array>
#include <cstddef>
#include <string_view>

namespace ddp {

enum class Phase : std::size_t {
  kStartup,
  kData,
  kForward,
  kBackward,
  kCommWait,
  kOptimizer,
  kValidation,
  kLogging,
  kMonitor,
  kOther,
};
inline constexpr std::size_t kPhaseCount = 10;

inline constexpr std::array<std::string_view, kPhaseCount> kPhaseNames = {
    "startup", "data", "forward", "backward", "comm_wait", "optimizer", "validation", "logging", "monitor", "other"};

constexpr std::string_view phase_name(Phase phase) { return kPhaseNames[static_cast<std::size_t>(phase)]; }

}  // namespace ddp
