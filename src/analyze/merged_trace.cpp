// One Chrome trace (Perfetto, chrome://tracing) of every rank's steps and collectives, with
// the findings as annotations. Matched collectives end about together on every rank (within
// the collective's own jitter, up to milliseconds on a busy host): where the ranks' clocks
// already agree to within a tenth of a step at them (one host's clock, or synchronized hosts)
// they are kept; otherwise (the legacy format's per-process time zero, unsynchronized hosts)
// rank r is shifted by the median of rank 0's end minus its own. Without matched collectives
// each rank's first step starts with rank 0's.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include <nlohmann/json.hpp>

#include "analyze/trace_analysis.h"

namespace ddp {
namespace {

std::vector<int64_t> clock_offsets(const TraceAnalysis& a) {
  std::vector<int64_t> offsets(a.ranks.size(), 0);
  const double tenth_of_step_ns = 1e5 * a.ranks[0].step_ms;
  for (std::size_t r = 0; r < a.ranks.size(); ++r) {
    std::vector<int64_t> differences;
    if (a.collectives) {
      for (const std::vector<int64_t>& ends : a.collectives->end_ns) differences.push_back(ends[0] - ends[r]);
    }
    if (differences.empty()) {
      const auto& steps = a.job.ranks[r].steps.steps;
      const auto& first = a.job.ranks[0].steps.steps;
      if (!steps.empty() && !first.empty()) offsets[r] = first.front().start_ns - steps.front().start_ns;
      continue;
    }
    std::nth_element(differences.begin(), differences.begin() + static_cast<std::ptrdiff_t>(differences.size() / 2),
                     differences.end());
    const int64_t median = differences[differences.size() / 2];
    offsets[r] = std::abs(static_cast<double>(median)) < tenth_of_step_ns ? 0 : median;
  }
  return offsets;
}

std::string quoted(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string merged_chrome_trace(const TraceAnalysis& a) {
  const std::vector<int64_t> offsets = clock_offsets(a);
  const int64_t origin = a.job.ranks[0].steps.steps.empty() ? 0 : a.job.ranks[0].steps.steps.front().start_ns;
  fmt::memory_buffer out;
  auto to = std::back_inserter(out);
  bool first = true;
  const auto next = [&] {
    if (!first) fmt::format_to(to, ",\n");
    first = false;
    return to;
  };
  fmt::format_to(to,
                 "{{\"displayTimeUnit\":\"ms\",\"otherData\":{{\"producer\":\"ddpscope {} analyze\"}},"
                 "\"traceEvents\":[\n",
                 DDPSCOPE_VERSION);
  for (std::size_t r = 0; r < a.ranks.size(); ++r) {
    const TracedRank& rank = a.job.ranks[r];
    const auto micros = [&](int64_t ns) { return static_cast<double>(ns + offsets[r] - origin) / 1e3; };
    fmt::format_to(next(), "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"name\":{}}}}}", rank.rank,
                   quoted(fmt::format("rank {} ({})", rank.rank, rank.path)));
    fmt::format_to(next(),
                   "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":\"steps\"}}}}",
                   rank.rank);
    fmt::format_to(
        next(), "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":1,\"args\":{{\"name\":\"collectives\"}}}}",
        rank.rank);
    for (const TraceStep& s : rank.steps.steps) {
      nlohmann::ordered_json parts;
      for (const Phase p : kStepPhases) {
        parts[std::string(phase_name(p)) + "_ms"] = static_cast<double>(s.part_ns[static_cast<std::size_t>(p)]) / 1e6;
      }
      fmt::format_to(next(),
                     "{{\"name\":\"step {}\",\"cat\":\"step\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{},"
                     "\"tid\":0,\"args\":{}}}",
                     s.number, micros(s.start_ns), static_cast<double>(s.duration_ns) / 1e3, rank.rank, parts.dump());
    }
    for (const CollectiveCall& c : rank.steps.collectives) {
      fmt::format_to(next(),
                     "{{\"name\":{},\"cat\":\"collective\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{},"
                     "\"tid\":1,\"args\":{{\"bytes\":{}}}}}",
                     quoted(c.name), micros(c.start_ns), static_cast<double>(c.duration_ns) / 1e3, rank.rank, c.bytes);
    }
  }
  for (const Finding& f : a.result.findings) {
    fmt::format_to(next(),
                   "{{\"name\":{},\"ph\":\"i\",\"s\":\"g\",\"ts\":0,\"pid\":{},\"tid\":0,\"args\":{{\"fix\":{}}}}}",
                   quoted(f.title), a.job.ranks[0].rank, quoted(f.fix));
  }
  fmt::format_to(to, "\n]}}\n");
  return fmt::to_string(out);
}

}  // namespace ddp
