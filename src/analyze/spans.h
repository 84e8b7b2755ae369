#pragma once
// Time spans [start, end) in nanoseconds, and the two questions asked of them.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace ddp {

using Span = std::pair<int64_t, int64_t>;

// Sorted, merged.
inline std::vector<Span> merged(std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end());
  std::vector<Span> out;
  for (const Span& s : spans) {
    if (!out.empty() && s.first <= out.back().second) {
      out.back().second = std::max(out.back().second, s.second);
    } else {
      out.push_back(s);
    }
  }
  return out;
}

// How much of [a, b) the merged spans cover.
inline int64_t covered(const std::vector<Span>& spans, int64_t a, int64_t b) {
  int64_t total = 0;
  auto it = std::lower_bound(spans.begin(), spans.end(), Span{a, a},
                             [](const Span& x, const Span& y) { return x.second < y.first; });
  for (; it != spans.end() && it->first < b; ++it)
    total += std::max<int64_t>(0, std::min(b, it->second) - std::max(a, it->first));
  return total;
}

}  // namespace ddp
