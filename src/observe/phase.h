#pragma once
// The phases of a rank's wall time: every moment of a run belongs to one. The engine records the
// first ten; a trace of a user's job (analyze) also tells two of its own: the GPU idle while its
// host launches work (launch), and plain Python inside the step outside any framework op (python),
// such as a per-step probe. What a trace's step holds in framework ops that name no part is other.
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
  kLaunch,
  kPython,
};
inline constexpr std::size_t kPhaseCount = 12;

inline constexpr std::array<std::string_view, kPhaseCount> kPhaseNames = {
    "startup",    "data",    "forward", "backward", "comm_wait", "optimizer",
    "validation", "logging", "monitor", "other",    "launch",    "python"};

// The two phases only a trace tells (the engine's runs have none of them).
constexpr bool traced_only(std::size_t phase) {
  return phase == static_cast<std::size_t>(Phase::kLaunch) || phase == static_cast<std::size_t>(Phase::kPython);
}

constexpr std::string_view phase_name(Phase phase) { return kPhaseNames[static_cast<std::size_t>(phase)]; }

}  // namespace ddp
