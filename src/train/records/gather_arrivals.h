#pragma once
// Collective, at the end of a multi-rank run: every rank's arrival times at the gradient
// collectives (observe/arrival_buffer.h) gathered to rank zero and turned into the
// summary's arrivals: each rank's lag, wait and the waiting it caused, the straggler, and
// each rank's lag per step for the report's chart.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dist/communicator.h"
#include "observe/arrival_buffer.h"
#include "train/records/run_summary.h"

namespace ddp {

// From every rank's arrivals (ns on the common clock), collectives_per_step to a step (> 0).
// Ranks with different numbers of collectives cannot be compared: an empty summary and a
// warning saying so. A trailing partial step is not analysed.
ArrivalSummary summarize_arrivals(std::span<const std::vector<int64_t>> arrival_ns, int64_t collectives_per_step,
                                  std::vector<std::string>& warnings);

// Per rank, the mean lag behind the first arrival over each step's collectives (ms), averaged
// over runs of consecutive steps into at most kArrivalChartPoints points: the report's chart.
// Every rank holds at least per_step * steps arrivals.
std::vector<std::vector<double>> lag_per_step(std::span<const std::vector<int64_t>> arrival_ns, int64_t per_step,
                                              int64_t steps);

// Fills stats.arrivals (and warnings) at rank zero; a no-op on one rank.
void gather_arrivals(Communicator& comm, const ArrivalBuffer& mine, int64_t collectives_per_step, RunSummary& stats);

}  // namespace ddp
