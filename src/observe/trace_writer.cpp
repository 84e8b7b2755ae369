#include "observe/trace_writer.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstring>

#include "base/check.h"
#include "ddpscope/error.h"
#include "observe/phase.h"

namespace ddp {
namespace {

constexpr std::array<const char*, 5> kThreadNames = {"compute", "comm", "loader", "monitor", "gpu"};

std::string_view span_name(uint16_t name) {
  if (name == kAllreduceSpan) return "allreduce";
  DDP_CHECK_LT(name, kPhaseCount, "unknown span name");
  return kPhaseNames[name];
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

void write_chrome_trace(const std::vector<RankTrace>& ranks, int64_t origin_ns,
                        const std::function<void(std::string_view)>& sink) {
  fmt::memory_buffer out;
  bool first = true;
  // Where the next event goes: after a comma, unless it is the first. A full buffer (1 MiB)
  // goes to the sink first, so the whole trace is never in memory.
  const auto next_event = [&] {
    if (out.size() >= (std::size_t{1} << 20)) {
      sink({out.data(), out.size()});
      out.clear();
    }
    if (!first) out.append(std::string_view(",\n"));
    first = false;
    return std::back_inserter(out);
  };
  // otherData's producer tells `ddpscope analyze` the dialect: every rank in one file, by pid.
  fmt::format_to(std::back_inserter(out),
                 "{{\"displayTimeUnit\":\"ms\",\"otherData\":{{\"producer\":\"ddpscope {}\"}},\"traceEvents\":[\n",
                 DDPSCOPE_VERSION);
  for (const RankTrace& rank : ranks) {
    const int pid = rank.rank;
    const std::string process = nlohmann::json("rank " + std::to_string(pid) + " (" + rank.host + ")")
                                    .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    fmt::format_to(next_event(), "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"name\":{}}}}}", pid,
                   process);
    fmt::format_to(next_event(),
                   "{{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"sort_index\":{}}}}}", pid,
                   pid);
    // The GPU's track is named only where a rank has one (a run on a GPU).
    const bool has_gpu =
        std::any_of(rank.spans.begin(), rank.spans.end(), [](const Span& s) { return s.thread == TraceThread::kGpu; });
    const int tracks = static_cast<int>(kThreadNames.size()) - (has_gpu ? 0 : 1);
    for (int tid = 0; tid < tracks; ++tid) {
      fmt::format_to(next_event(),
                     "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":\"{}\"}}}}",
                     pid, tid, kThreadNames[tid]);
    }
    auto micros = [&](int64_t ns) { return static_cast<double>(ns + rank.clock_offset_ns - origin_ns) / 1e3; };
    for (const Span& s : rank.spans) {
      const double dur = static_cast<double>(s.end_ns - s.start_ns) / 1e3;
      if (s.name == kAllreduceSpan) {
        fmt::format_to(next_event(),
                       "{{\"name\":\"{}\",\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{},\"tid\":{},"
                       "\"args\":{{\"bytes\":{},\"hidden_behind_backward_us\":{}}}}}",
                       span_name(s.name), category(s), micros(s.start_ns), dur, pid, static_cast<int>(s.thread),
                       s.bytes, static_cast<double>(s.hidden_ns) / 1e3);
      } else {
        fmt::format_to(next_event(),
                       "{{\"name\":\"{}\",\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{},\"tid\":{}}}",
                       span_name(s.name), category(s), micros(s.start_ns), dur, pid, static_cast<int>(s.thread));
      }
    }
    for (const UtilizationPoint& u : rank.utilization) {
      fmt::format_to(next_event(),
                     "{{\"name\":\"device_{}_utilization\",\"ph\":\"C\",\"ts\":{},\"pid\":{},\"tid\":{},\"args\":{{"
                     "\"percent\":{}}}}}",
                     pid, micros(u.time_ns), pid, static_cast<int>(TraceThread::kMonitor), u.percent);
    }
    if (rank.dropped > 0) {
      fmt::format_to(
          next_event(),
          "{{\"name\":\"spans dropped (buffer full)\",\"ph\":\"i\",\"s\":\"p\",\"pid\":{},\"tid\":0,\"ts\":0,"
          "\"args\":{{\"dropped\":{}}}}}",
          pid, rank.dropped);
    }
  }
  fmt::format_to(std::back_inserter(out), "]}}\n");
  sink({out.data(), out.size()});
}

std::string chrome_trace_json(const std::vector<RankTrace>& ranks, int64_t origin_ns) {
  std::string json;
  write_chrome_trace(ranks, origin_ns, [&](std::string_view piece) { json += piece; });
  return json;
}

}  // namespace ddp
