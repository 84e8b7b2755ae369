#pragma once
// The end-of-run table in the spirit of Lightning's SimpleProfiler, across ranks:
// Action | Mean (ms) | Calls | Total (s) | % | min/max over ranks, and the slowest rank
// named where ranks differ by more than 10 % (stragglers are what users ask about most),
// with its host when the ranks run on several.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "observe/phase.h"

namespace ddp {

struct RankPhases {
  std::array<double, kPhaseCount> seconds{};
  std::array<int64_t, kPhaseCount> calls{};
  std::string host;  // named with the rank where the ranks run on more than one host
};

inline constexpr double kStragglerThreshold = 0.10;

std::string profiler_table(const std::vector<RankPhases>& ranks, double wall_seconds);

}  // namespace ddp
