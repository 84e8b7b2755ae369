#pragma once
// The catalogue's findings (docs/scaling-guide.md, one section each): oversubscribed
// threads, input starvation, extra collectives per step, per-device batch semantics and the
// bucket-size sweep. Rules over the same FindingInputs as findings.h, called by find_problems.
#include <cstdint>
#include <vector>

#include "doctor/findings.h"

namespace ddp {

// Oversubscribed threads: the configuration asks for more threads on a host than it has
// cores, and each training thread waited more than this share of its runnable time for one.
inline constexpr double kOversubscribedMinWaitShare = 0.05;
// Input starvation: the data phase (waiting for the loader, or loading) exceeds this share
// of the wall on some rank.
inline constexpr double kStarvedMinDataShare = 0.10;
// Extra collectives: gradient allreduces per optimizer step above this multiple of what the
// bucket plan needs.
inline constexpr double kExtraCollectivesMinRatio = 1.05;
// Bucket-size sweep: planned only for a gradient of at least this size (the seed's 0.54 MB
// gets none); a cap is reported when its run was faster than the configuration's own by more
// than this share of the wall (a raw difference: the doctor's noise is not yet measured).
inline constexpr int64_t kBucketSweepMinGradientBytes = int64_t{4} << 20;
inline constexpr double kBucketSweepMinGain = 0.03;

void catalogue_findings(const FindingInputs& inputs, std::vector<Finding>& out);

}  // namespace ddp
