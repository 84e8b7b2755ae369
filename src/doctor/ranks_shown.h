#pragma once
// Which ranks a job's text and report show row by row. Up to kEveryRankUpTo, all; beyond, the
// ranks that matter (the one the others wait for, the slowest, the fastest, the one that waits
// most) and the spread of all as a distribution: a job of hundreds of ranks reads as one answer,
// not hundreds of rows. doctor.json and analyze --json keep every rank.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace ddp {

inline constexpr std::size_t kEveryRankUpTo = 8;

struct ShownRank {
  std::size_t index = 0;  // into the per-rank lists given
  std::string why;        // "waited for", "slowest", "fastest", "waits most"; empty when all are shown
};

// By index. `step_ms` and `wait_ms` are per rank (wait_ms may be empty); `waited_for` is the
// rank the others wait for, where one is named.
std::vector<ShownRank> ranks_to_show(const std::vector<double>& step_ms, const std::vector<double>& wait_ms,
                                     std::optional<std::size_t> waited_for);

// Ranks as runs, "3, 17-20" ("rank 3" or "ranks 3, 17-20" with `noun`); `ranks` sorted.
std::string rank_runs(const std::vector<int>& ranks, bool noun = false);

// A distribution's summary: "min 25.1, median 25.6, 90th percentile 26.0, max 45.2".
struct Spread {
  double min = 0, median = 0, p90 = 0, max = 0;
};
Spread spread_of(std::vector<double> values);  // values must not be empty
std::string spread_text(const Spread& s, const char* unit);

}  // namespace ddp
