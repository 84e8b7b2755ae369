#include "train/records/gather_arrivals.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "dist/gather.h"

namespace ddp {

std::vector<std::vector<double>> lag_per_step(std::span<const std::vector<int64_t>> arrival_ns, int64_t per_step,
                                              int64_t steps) {
  const std::size_t world = arrival_ns.size();
  const int64_t points = std::min<int64_t>(steps, static_cast<int64_t>(kArrivalChartPoints));
  std::vector<std::vector<double>> sums(world, std::vector<double>(static_cast<std::size_t>(points), 0.0));
  std::vector<int64_t> steps_in_point(static_cast<std::size_t>(points), 0);
  std::vector<std::vector<int64_t>> step(world);
  for (int64_t s = 0; s < steps; ++s) {
    for (std::size_t r = 0; r < world; ++r) {
      const auto begin = arrival_ns[r].begin() + s * per_step;
      step[r].assign(begin, begin + per_step);
    }
    const ArrivalLags lags = arrival_lags(step);
    const auto point = static_cast<std::size_t>(s * points / steps);  // steps split evenly over the points
    ++steps_in_point[point];
    for (std::size_t r = 0; r < world; ++r) {
      sums[r][point] += 1e-6 * static_cast<double>(lags.ranks[r].lag_ns) / static_cast<double>(per_step);
    }
  }
  for (std::vector<double>& series : sums) {
    for (std::size_t p = 0; p < series.size(); ++p) series[p] /= static_cast<double>(steps_in_point[p]);
  }
  return sums;
}

ArrivalSummary summarize_arrivals(std::span<const std::vector<int64_t>> arrival_ns, int64_t collectives_per_step,
                                  std::vector<std::string>& warnings) {
  ArrivalSummary out;
  if (arrival_ns.size() < 2 || collectives_per_step <= 0) return out;
  const std::size_t count = arrival_ns[0].size();
  for (const std::vector<int64_t>& rank : arrival_ns) {
    if (rank.size() != count) {
      std::vector<std::size_t> counts;
      for (const std::vector<int64_t>& r : arrival_ns) counts.push_back(r.size());
      warnings.push_back(fmt::format(
          "the ranks recorded different numbers of gradient collectives ({}): their arrivals are not compared",
          fmt::join(counts, ", ")));
      return out;
    }
  }
  out.steps = static_cast<int64_t>(count) / collectives_per_step;
  out.collectives = out.steps * collectives_per_step;
  if (out.steps == 0) return out;
  std::vector<std::vector<int64_t>> whole(arrival_ns.size());
  for (std::size_t r = 0; r < arrival_ns.size(); ++r) {
    whole[r].assign(arrival_ns[r].begin(), arrival_ns[r].begin() + out.collectives);
  }
  const ArrivalLags lags = arrival_lags(whole);
  out.per_rank = lags.ranks;
  out.straggler = find_straggler(lags, out.steps);
  out.lag_ms_per_rank = lag_per_step(whole, collectives_per_step, out.steps);
  return out;
}

void gather_arrivals(Communicator& comm, const ArrivalBuffer& mine, int64_t collectives_per_step, RunSummary& stats) {
  if (comm.size() < 2) return;
  const std::vector<uint64_t> dropped = comm.allgather(static_cast<uint64_t>(mine.dropped()));
  const std::vector<std::vector<std::byte>> parts = gather_at_rank_zero(comm, std::as_bytes(mine.times_ns()));
  if (comm.rank() != 0) return;
  std::vector<std::vector<int64_t>> arrival_ns;
  for (const auto& part : parts) {
    std::vector<int64_t>& rank = arrival_ns.emplace_back(part.size() / sizeof(int64_t));
    if (!rank.empty()) std::memcpy(rank.data(), part.data(), rank.size() * sizeof(int64_t));  // ZeRO-1 records none
  }
  stats.arrivals = summarize_arrivals(arrival_ns, collectives_per_step, stats.warnings);
  for (uint64_t d : dropped) stats.arrivals.dropped += static_cast<int64_t>(d);
  if (stats.arrivals.dropped > 0) {
    stats.warnings.push_back(
        fmt::format("{} arrivals at gradient collectives did not fit the buffer and were dropped: "
                    "the arrival analysis covers the run's first {} steps",
                    stats.arrivals.dropped, stats.arrivals.steps));
  }
}

}  // namespace ddp
