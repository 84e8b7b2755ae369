#pragma once
// Which rank holds the others back at collectives. With the allreduce inside backward every
// rank's phases last the same, so durations cannot find a slow rank; arrival times can.
//
// arrival_ns[r][c] is when rank r arrived at collective c (ns, one clock for all ranks);
// c runs over one step's collectives, or over a whole run's, in order. With
//   first_c = min_r arrival[r][c],  last_c = max_r arrival[r][c]:
//   lag[r]    = sum_c (arrival[r][c] - first_c)   how late r was
//   wait[r]   = sum_c (last_c - arrival[r][c])    how long r waited for the last one
//   caused[r] = sum over the c where r alone arrived last of sum_{q != r} (last_c - arrival[q][c])
//             = the others' waiting that r caused
// The straggler is the rank that alone caused at least 2/3 of all the waiting (a tie at the
// latest arrival causes none: two ranks late together are not one straggler, and ranks
// equal but for noise split it); what it cost the others per step is caused[straggler] /
// steps. Not the rank last most often: a rank whose core is shared is very late at the
// collectives where the other process has the core and a little early at the rest (measured:
// last at 45 % of them, causing 96 % of the waiting).
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ddp {

struct RankArrival {
  int64_t times_last = 0;  // collectives at which this rank alone arrived last
  int64_t lag_ns = 0;
  int64_t wait_ns = 0;
  int64_t caused_wait_ns = 0;
};

struct ArrivalLags {
  std::vector<int> last_rank;      // per collective; -1 when no rank alone arrived last
  std::vector<int64_t> spread_ns;  // per collective: last_c - first_c
  std::vector<RankArrival> ranks;  // per rank
};

// At least one rank, every rank the same number of collectives (checked: our own records).
ArrivalLags arrival_lags(std::span<const std::vector<int64_t>> arrival_ns);

struct Straggler {
  int rank = -1;
  double last_share = 0;             // of the collectives
  double late_seconds = 0;           // mean wait of each other rank where it was last
  double cost_seconds_per_step = 0;  // caused[rank] / steps: summed over the other ranks
};

// nullopt when no rank caused 2/3 of the waiting (or one rank ran).
// `steps` is how many steps the collectives span (checked > 0).
std::optional<Straggler> find_straggler(const ArrivalLags& lags, int64_t steps);

}  // namespace ddp
