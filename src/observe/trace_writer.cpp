#include "observe/trace_writer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstring>

#include "ddpscope/error.h"
#include "observe/phase.h"

namespace ddp {
namespace {

constexpr std::array<const char*, 5> kThreadNames = {"compute", "comm", "loader", "monitor", "gpu"};

std::string span_name(uint16_t name) {
  if (name == kAllreduceSpan) return "allreduce";
  DDP_CHECK_LT(name, kPhaseCount, "unknown span name");
  return std::string(kPhaseNames[name]);
}

// Plain bytes: [header][spans][utilization][host]; both ends run the same build.
struct Header {
  int32_t rank;
  int64_t clock_offset_ns;
  uint64_t spans, dropped, points, host_bytes;
};

template <typename T>
void append(std::vector<std::byte>& out, const T* data, std::size_t count) {
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  out.insert(out.end(), bytes, bytes + count * sizeof(T));
}

template <typename T>
const std::byte* take(const std::byte* in, T* data, std::size_t count) {
  std::memcpy(static_cast<void*>(data), in, count * sizeof(T));
  return in + count * sizeof(T);
}

const char* category(const Span& s) {
  if (s.name == kAllreduceSpan) return "comm";
  return s.thread == TraceThread::kGpu ? "gpu" : "phase";
}

}  // namespace

std::vector<std::byte> serialize_rank_trace(const RankTrace& t) {
  const Header h{t.rank, t.clock_offset_ns, t.spans.size(), t.dropped, t.utilization.size(), t.host.size()};
  std::vector<std::byte> out;
  append(out, &h, 1);
  append(out, t.spans.data(), t.spans.size());
  append(out, t.utilization.data(), t.utilization.size());
  append(out, t.host.data(), t.host.size());
  return out;
}

RankTrace deserialize_rank_trace(const std::vector<std::byte>& bytes) {
  Header h{};
  DDP_CHECK_GE(bytes.size(), sizeof(h));
  const std::byte* in = take(bytes.data(), &h, 1);
  DDP_CHECK_EQ(bytes.size(), sizeof(h) + h.spans * sizeof(Span) + h.points * sizeof(UtilizationPoint) + h.host_bytes);
  RankTrace t;
  t.rank = h.rank;
  t.clock_offset_ns = h.clock_offset_ns;
  t.dropped = h.dropped;
  t.spans.resize(h.spans);
  t.utilization.resize(h.points);
  t.host.resize(h.host_bytes);
  in = take(in, t.spans.data(), h.spans);
  in = take(in, t.utilization.data(), h.points);
  take(in, t.host.data(), h.host_bytes);
  return t;
}

std::string chrome_trace_json(const std::vector<RankTrace>& ranks, int64_t origin_ns) {
  nlohmann::json events = nlohmann::json::array();
  for (const RankTrace& rank : ranks) {
    const int pid = rank.rank;
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"args", {{"name", "rank " + std::to_string(pid) + " (" + rank.host + ")"}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
    // The GPU's track is named only where a rank has one (a run on a GPU).
    const bool has_gpu =
        std::any_of(rank.spans.begin(), rank.spans.end(), [](const Span& s) { return s.thread == TraceThread::kGpu; });
    const int tracks = static_cast<int>(kThreadNames.size()) - (has_gpu ? 0 : 1);
    for (int tid = 0; tid < tracks; ++tid) {
      events.push_back(
          {{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", kThreadNames[tid]}}}});
    }
    auto micros = [&](int64_t ns) { return static_cast<double>(ns + rank.clock_offset_ns - origin_ns) / 1e3; };
    for (const Span& s : rank.spans) {
      nlohmann::json e = {{"name", span_name(s.name)},
                          {"cat", category(s)},
                          {"ph", "X"},
                          {"ts", micros(s.start_ns)},
                          {"dur", static_cast<double>(s.end_ns - s.start_ns) / 1e3},
                          {"pid", pid},
                          {"tid", static_cast<int>(s.thread)}};
      if (s.name == kAllreduceSpan) {
        e["args"] = {{"bytes", s.bytes}, {"hidden_behind_backward_us", static_cast<double>(s.hidden_ns) / 1e3}};
      }
      events.push_back(std::move(e));
    }
    const std::string counter = "device_" + std::to_string(pid) + "_utilization";
    for (const UtilizationPoint& u : rank.utilization) {
      events.push_back({{"name", counter},
                        {"ph", "C"},
                        {"ts", micros(u.time_ns)},
                        {"pid", pid},
                        {"tid", static_cast<int>(TraceThread::kMonitor)},
                        {"args", {{"percent", u.percent}}}});
    }
    if (rank.dropped > 0) {
      events.push_back({{"name", "spans dropped (buffer full)"},
                        {"ph", "i"},
                        {"s", "p"},
                        {"pid", pid},
                        {"tid", 0},
                        {"ts", 0},
                        {"args", {{"dropped", rank.dropped}}}});
    }
  }
  nlohmann::json trace = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  return trace.dump() + "\n";
}

}  // namespace ddp
