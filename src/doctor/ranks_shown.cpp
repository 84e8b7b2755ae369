#include "doctor/ranks_shown.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

namespace ddp {

std::vector<ShownRank> ranks_to_show(const std::vector<double>& step_ms, const std::vector<double>& wait_ms,
                                     std::optional<std::size_t> waited_for) {
  std::vector<ShownRank> out;
  const std::size_t n = step_ms.size();
  if (n <= kEveryRankUpTo) {
    for (std::size_t i = 0; i < n; ++i) out.push_back({i, ""});
    return out;
  }
  const auto add = [&](std::size_t index, const char* why) {
    for (const ShownRank& s : out)
      if (s.index == index) return;
    out.push_back({index, why});
  };
  if (waited_for && *waited_for < n) add(*waited_for, "waited for");
  std::vector<std::size_t> by_step(n);
  std::iota(by_step.begin(), by_step.end(), std::size_t{0});
  std::stable_sort(by_step.begin(), by_step.end(),
                   [&](std::size_t a, std::size_t b) { return step_ms[a] > step_ms[b]; });
  for (std::size_t k = 0; k < 3; ++k) add(by_step[k], "slowest");
  add(by_step.back(), "fastest");
  if (wait_ms.size() == n) {
    add(static_cast<std::size_t>(std::max_element(wait_ms.begin(), wait_ms.end()) - wait_ms.begin()), "waits most");
  }
  std::sort(out.begin(), out.end(), [](const ShownRank& a, const ShownRank& b) { return a.index < b.index; });
  return out;
}

std::string rank_runs(const std::vector<int>& ranks, bool noun) {
  std::vector<std::string> runs;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    runs.push_back(j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]));
    i = j + 1;
  }
  const std::string list = fmt::format("{}", fmt::join(runs, ", "));
  if (!noun) return list;
  return (ranks.size() == 1 ? "rank " : "ranks ") + list;
}

Spread spread_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const auto at = [&](double q) {
    return values[static_cast<std::size_t>(q * static_cast<double>(values.size() - 1) + 0.5)];
  };
  return {values.front(), at(0.5), at(0.9), values.back()};
}

std::string spread_text(const Spread& s, const char* unit) {
  return fmt::format("min {:.3f}{u}, median {:.3f}{u}, 90th percentile {:.3f}{u}, max {:.3f}{u}", s.min, s.median,
                     s.p90, s.max, fmt::arg("u", unit));
}

}  // namespace ddp
