#pragma once
// Time spans [start, end) in nanoseconds, and the questions asked of them.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace ddp {

using TimeSpan = std::pair<int64_t, int64_t>;

// Sorted, merged.
inline std::vector<TimeSpan> merged(std::vector<TimeSpan> spans) {
  std::sort(spans.begin(), spans.end());
  std::vector<TimeSpan> out;
  for (const TimeSpan& s : spans) {
    if (!out.empty() && s.first <= out.back().second) {
      out.back().second = std::max(out.back().second, s.second);
    } else {
      out.push_back(s);
    }
  }
  return out;
}

// How much of [a, b) the merged spans cover.
inline int64_t covered(const std::vector<TimeSpan>& spans, int64_t a, int64_t b) {
  int64_t total = 0;
  auto it = std::lower_bound(spans.begin(), spans.end(), TimeSpan{a, a},
                             [](const TimeSpan& x, const TimeSpan& y) { return x.second < y.first; });
  for (; it != spans.end() && it->first < b; ++it)
    total += std::max<int64_t>(0, std::min(b, it->second) - std::max(a, it->first));
  return total;
}

// Whether the merged spans hold the moment `time`.
inline bool contains(const std::vector<TimeSpan>& spans, int64_t time) {
  auto it =
      std::upper_bound(spans.begin(), spans.end(), time, [](int64_t t, const TimeSpan& s) { return t < s.first; });
  return it != spans.begin() && time < (it - 1)->second;
}

}  // namespace ddp
