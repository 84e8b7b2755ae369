#pragma once
// Which rank the others wait for, without comparing clocks across ranks. Collectives are
// matched across ranks by their order within (process group, name), checked by size where
// the traces have it. A collective ends on every rank together, so a rank's duration is its
// transfer plus its wait: the shortest duration over the ranks is the transfer, the rest of
// each rank's is waiting, and the rank that waits least is the one the others wait for.
// Arrivals relative to the common end (minus the duration) feed observe/arrival_lag.h, the
// same rule the doctor applies to its own runs' arrival times.
#include <optional>
#include <string>
#include <vector>

#include "analyze/rank_steps.h"
#include "observe/arrival_lag.h"

namespace ddp {

struct CollectiveMatch {
  int64_t matched = 0;                            // collectives matched on every rank
  int64_t steps = 0;                              // the steps they span
  std::vector<double> wait_ms_per_step;           // per rank: its waiting at collectives
  std::vector<double> transfer_ms_per_step;       // per rank: the shortest durations, summed
  std::vector<int64_t> transfer_ns;               // per matched collective, in order
  std::vector<int64_t> bytes;                     // per matched collective: rank 0's size, -1 unknown
  std::vector<CollectiveOrigin> origin;           // per matched collective: rank 0's
  std::vector<std::vector<int64_t>> duration_ns;  // per matched collective, per rank
  std::vector<std::vector<int64_t>> end_ns;       // the same, its end on each rank's own clock
  ArrivalLags lags;
  std::optional<Straggler> straggler;
  std::vector<std::string> notes;  // counts or sizes that differ between ranks
};

// `ranks` in rank order, at least two.
CollectiveMatch match_collectives(const std::vector<const RankSteps*>& ranks);

}  // namespace ddp
