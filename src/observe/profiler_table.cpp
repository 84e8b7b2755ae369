#include "observe/profiler_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>

namespace ddp {

std::string profiler_table(const std::vector<RankPhases>& ranks, double wall_seconds) {
  struct Row {
    std::size_t phase;
    double mean_total, min_total, max_total, mean_ms;
    int64_t calls;
    int slowest;
  };
  std::vector<Row> rows;
  const double n = static_cast<double>(ranks.size());
  for (std::size_t p = 0; p < kPhaseCount; ++p) {
    if (traced_only(p)) continue;  // a training run of the engine has none of them
    Row row{p, 0, 1e300, 0, 0, 0, 0};
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      const double total = ranks[r].seconds[p];
      row.mean_total += total / n;
      row.min_total = std::min(row.min_total, total);
      if (total > row.max_total) {
        row.max_total = total;
        row.slowest = static_cast<int>(r);
      }
      row.calls += ranks[r].calls[p];
      if (ranks[r].calls[p] > 0) row.mean_ms += 1e3 * total / ranks[r].calls[p] / n;
    }
    if (row.max_total > 0) rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.mean_total > b.mean_total; });

  const bool several = ranks.size() > 1;
  std::set<std::string> hosts;
  for (const RankPhases& rank : ranks) hosts.insert(rank.host);
  const bool several_hosts = hosts.size() > 1;
  auto rank_name = [&](int r) {
    return several_hosts ? fmt::format("rank {} on {}", r, ranks[r].host) : fmt::format("rank {}", r);
  };
  std::string out =
      fmt::format("Profiler report ({} rank{}{}, wall {:.3f} s; totals are means over ranks)\n", ranks.size(),
                  several ? "s" : "", several_hosts ? fmt::format(" on {} hosts", hosts.size()) : "", wall_seconds);
  std::string header =
      fmt::format("{:<12}| {:>10} | {:>8} | {:>10} | {:>6}", "Action", "Mean (ms)", "Calls", "Total (s)", "%");
  if (several) header += fmt::format(" | {:>9} | {:>9} | {}", "min (s)", "max (s)", "straggler");
  out += header + "\n" + std::string(header.size(), '-') + "\n";
  for (const Row& row : rows) {
    const double share = wall_seconds > 0 ? 100.0 * row.mean_total / wall_seconds : 0.0;
    std::string line = fmt::format("{:<12}| {:>10.3f} | {:>8} | {:>10.3f} | {:>6.1f}", kPhaseNames[row.phase],
                                   row.mean_ms, row.calls / static_cast<int64_t>(ranks.size()), row.mean_total, share);
    if (several) {
      const bool straggler = row.max_total > 0 && (row.max_total - row.min_total) > kStragglerThreshold * row.max_total;
      line += fmt::format(" | {:>9.3f} | {:>9.3f} | {}", row.min_total, row.max_total,
                          !straggler          ? std::string()
                          : row.min_total > 0 ? fmt::format("{} (+{:.0f} % over the fastest)", rank_name(row.slowest),
                                                            100.0 * (row.max_total / row.min_total - 1.0))
                                              : fmt::format("{} (only it spends time here)", rank_name(row.slowest)));
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace ddp
