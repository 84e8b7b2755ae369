#include "analyze/collective_match.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

namespace ddp {

CollectiveMatch match_collectives(const std::vector<const RankSteps*>& ranks) {
  CollectiveMatch out;
  const std::size_t world = ranks.size();
  using Key = std::pair<std::string, std::string>;  // (group, name)
  std::vector<std::map<Key, std::vector<const CollectiveCall*>>> by_key(world);
  for (std::size_t r = 0; r < world; ++r) {
    for (const CollectiveCall& c : ranks[r]->collectives) by_key[r][{c.group, c.name}].push_back(&c);
  }
  // Rank zero's order of the keys decides the order of the matched collectives.
  struct Matched {
    int64_t first_start;
    int64_t bytes;
    CollectiveOrigin origin;
    std::vector<int64_t> duration_ns;
    std::vector<int64_t> end_ns;
  };
  std::vector<Matched> matched;
  for (const auto& [key, calls] : by_key[0]) {
    std::size_t count = calls.size();
    for (std::size_t r = 1; r < world; ++r) {
      const auto found = by_key[r].find(key);
      const std::size_t theirs = found == by_key[r].end() ? 0 : found->second.size();
      if (theirs != calls.size()) {
        out.notes.push_back(
            fmt::format("rank 0 ran {} \"{}\" collectives in the steps analysed and rank {} ran {}: "
                        "the first {} of each are matched",
                        calls.size(), key.second, r, theirs, std::min(count, theirs)));
      }
      count = std::min(count, theirs);
    }
    bool sizes_differ = false;
    for (std::size_t i = 0; i < count; ++i) {
      Matched m{calls[i]->start_ns, calls[i]->bytes, calls[i]->origin, {}, {}};
      for (std::size_t r = 0; r < world; ++r) {
        const CollectiveCall* c = by_key[r].at(key)[i];
        if (c->bytes >= 0 && calls[i]->bytes >= 0 && c->bytes != calls[i]->bytes) sizes_differ = true;
        m.duration_ns.push_back(c->duration_ns);
        m.end_ns.push_back(c->start_ns + c->duration_ns);
      }
      matched.push_back(std::move(m));
    }
    if (sizes_differ) {
      out.notes.push_back(
          fmt::format("\"{}\" collectives matched by order have different sizes on different ranks: "
                      "the traces may not be of one job, or of the same steps",
                      key.second));
    }
  }
  std::sort(matched.begin(), matched.end(),
            [](const Matched& a, const Matched& b) { return a.first_start < b.first_start; });
  out.matched = static_cast<int64_t>(matched.size());
  std::size_t steps = std::numeric_limits<std::size_t>::max();
  for (const RankSteps* r : ranks) steps = std::min(steps, r->steps.size());
  out.steps = static_cast<int64_t>(steps);
  out.wait_ms_per_step.assign(world, 0);
  out.transfer_ms_per_step.assign(world, 0);
  if (matched.empty() || steps == 0) return out;

  std::vector<std::vector<int64_t>> arrival(world);
  for (const Matched& m : matched) {
    const int64_t transfer = *std::min_element(m.duration_ns.begin(), m.duration_ns.end());
    out.transfer_ns.push_back(transfer);
    out.bytes.push_back(m.bytes);
    out.origin.push_back(m.origin);
    out.duration_ns.push_back(m.duration_ns);
    out.end_ns.push_back(m.end_ns);
    for (std::size_t r = 0; r < world; ++r) {
      arrival[r].push_back(-m.duration_ns[r]);
      out.wait_ms_per_step[r] += static_cast<double>(m.duration_ns[r] - transfer) / 1e6;
      out.transfer_ms_per_step[r] += static_cast<double>(transfer) / 1e6;
    }
  }
  for (std::size_t r = 0; r < world; ++r) {
    out.wait_ms_per_step[r] /= static_cast<double>(steps);
    out.transfer_ms_per_step[r] /= static_cast<double>(steps);
  }
  out.lags = arrival_lags(arrival);
  out.straggler = find_straggler(out.lags, out.steps);
  return out;
}

}  // namespace ddp
