#include "observe/arrival_lag.h"

#include <algorithm>

#include "base/check.h"
#include "ddpscope/error.h"

namespace ddp {

ArrivalLags arrival_lags(std::span<const std::vector<int64_t>> arrival_ns) {
  DDP_CHECK(!arrival_ns.empty(), "arrivals of no rank");
  const std::size_t world = arrival_ns.size();
  const std::size_t collectives = arrival_ns[0].size();
  for (const std::vector<int64_t>& rank : arrival_ns) {
    DDP_CHECK_EQ(rank.size(), collectives, "ranks with different numbers of collectives");
  }

  ArrivalLags lags;
  lags.last_rank.resize(collectives, -1);
  lags.spread_ns.resize(collectives, 0);
  lags.ranks.resize(world);
  for (std::size_t c = 0; c < collectives; ++c) {
    int64_t first = arrival_ns[0][c];
    int64_t last = arrival_ns[0][c];
    std::size_t last_rank = 0;
    int at_last = 0;
    for (std::size_t r = 0; r < world; ++r) {
      const int64_t t = arrival_ns[r][c];
      first = std::min(first, t);
      if (t > last) last = t, last_rank = r, at_last = 0;
      if (t == last) ++at_last;
    }
    lags.spread_ns[c] = last - first;
    int64_t others_wait = 0;
    for (std::size_t r = 0; r < world; ++r) {
      RankArrival& rank = lags.ranks[r];
      rank.lag_ns += arrival_ns[r][c] - first;
      rank.wait_ns += last - arrival_ns[r][c];
      others_wait += last - arrival_ns[r][c];  // the last rank's own term is 0
    }
    if (world >= 2 && at_last == 1) {
      lags.last_rank[c] = static_cast<int>(last_rank);
      ++lags.ranks[last_rank].times_last;
      lags.ranks[last_rank].caused_wait_ns += others_wait;
    }
  }
  return lags;
}

std::optional<Straggler> find_straggler(const ArrivalLags& lags, int64_t steps) {
  DDP_CHECK_GT(steps, 0, "collectives over no step");
  if (lags.ranks.size() < 2) return std::nullopt;
  const auto less_caused = [](const RankArrival& a, const RankArrival& b) {
    return a.caused_wait_ns < b.caused_wait_ns;
  };
  const auto most = std::max_element(lags.ranks.begin(), lags.ranks.end(), less_caused);
  int64_t all_caused = 0;
  for (const RankArrival& rank : lags.ranks) all_caused += rank.caused_wait_ns;
  if (all_caused <= 0 || 3 * most->caused_wait_ns < 2 * all_caused) return std::nullopt;

  const int64_t collectives = static_cast<int64_t>(lags.last_rank.size());
  const double caused_seconds = 1e-9 * static_cast<double>(most->caused_wait_ns);
  const double waiting = static_cast<double>(lags.ranks.size() - 1) * static_cast<double>(most->times_last);
  return Straggler{.rank = static_cast<int>(most - lags.ranks.begin()),
                   .last_share = static_cast<double>(most->times_last) / static_cast<double>(collectives),
                   .late_seconds = caused_seconds / waiting,
                   .cost_seconds_per_step = caused_seconds / static_cast<double>(steps)};
}

}  // namespace ddp
