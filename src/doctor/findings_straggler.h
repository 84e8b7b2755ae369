#pragma once
// The rank that holds the others back, found from when the ranks arrive at the gradient
// collectives (summary.json's arrivals), and why, from what that rank saw against the
// others: waiting for its core, steal, its loader, or else its own compute. Thresholds
// are documented in docs/scaling-guide.md ("Which rank is slow, and why").
#include <optional>
#include <string>
#include <vector>

#include "doctor/findings.h"

namespace ddp {

inline constexpr double kArrivalStragglerMinShare =
    0.10;                                           // the others' wait for it, of the wall (clean runs: up to 8 %)
inline constexpr double kCoreWaitMinShare = 0.15;   // its wait_share for its core at least ...
inline constexpr double kCoreWaitMinExcess = 0.10;  // ... and this much above every other rank's
inline constexpr double kCauseMinExplained = 0.5;   // steal or loader wait beyond the others' >= this of the cost

// The rank the arrival rule names in the largest multi-device run, if any: the phase-spread
// rule of findings.cpp leaves that rank to it, so one straggler is never reported twice.
std::optional<int> arrival_straggler_rank(const FindingInputs& inputs);

// Why the straggler was late, where the caller knows it better than the run's record says
// (analyze, from the part of the straggler's step that is slower): the finding's cause.
struct StragglerCause {
  std::string why;
  std::string fix;
  bool measured = true;  // false: only its compute was slower, nothing that says why
};

void straggler_findings(const FindingInputs& inputs, std::vector<Finding>& out,
                        const std::optional<StragglerCause>& known = std::nullopt);

}  // namespace ddp
