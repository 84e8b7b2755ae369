#include "analyze/rank_steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "analyze/spans.h"
#include "ddpscope/error.h"

namespace ddp {
namespace {

struct Window {
  long long number = 0;
  int64_t start = 0;
  int64_t end = 0;
};

// A stretch of a host thread's time and the part it belongs to.
struct Segment {
  int64_t start = 0;
  int64_t end = 0;
  StepPart part = StepPart::kPython;
};

std::size_t index(StepPart part) { return static_cast<std::size_t>(part); }

bool is_host(const TraceEvent& e) { return e.kind == EventKind::kHostOp; }

bool is_marker(const TraceFile& t, const TraceEvent& e) { return profiler_step_number(t.names[e.name]).has_value(); }

// Per name: whether it is NCCL's or RCCL's, for kernels without collective metadata.
std::vector<bool> collective_library_names(const TraceFile& t) {
  std::vector<bool> out(t.names.size());
  for (std::size_t i = 0; i < t.names.size(); ++i) {
    std::string name = t.names[static_cast<uint32_t>(i)];
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    out[i] = name.find("nccl") != std::string::npos || name.find("rccl") != std::string::npos;
  }
  return out;
}

// A GPU kernel of a collective: by its metadata (Kineto's "In msg nelems" gives bytes), else
// by the library in its name (older traces carry no metadata).
bool is_collective_kernel(const TraceEvent& e, const std::vector<bool>& library_names) {
  return e.kind == EventKind::kGpuKernel && (e.bytes >= 0 || library_names[e.name]);
}

// The thread with the most events whose names satisfy `is_step`, and their windows.
template <typename IsStep>
std::pair<uint32_t, std::vector<Window>> marked_windows(const TraceFile& t, IsStep is_step) {
  std::map<uint32_t, std::vector<Window>> by_thread;
  for (const TraceEvent& e : t.events) {
    if (!is_host(e)) continue;
    if (const std::optional<long long> n = is_step(t.names[e.name])) {
      by_thread[e.thread].push_back({*n, e.start_ns, e.start_ns + e.duration_ns});
    }
  }
  std::pair<uint32_t, std::vector<Window>> best{0, {}};
  for (auto& [thread, windows] : by_thread) {
    if (windows.size() > best.second.size()) best = {thread, std::move(windows)};
  }
  std::sort(best.second.begin(), best.second.end(), [](const Window& a, const Window& b) { return a.start < b.start; });
  return best;
}

struct Steps {
  uint32_t thread = 0;
  std::vector<Window> windows;
  std::string source;
};

Steps step_windows(const TraceFile& t) {
  auto [thread, windows] = marked_windows(t, [](std::string_view name) { return profiler_step_number(name); });
  if (!windows.empty()) return {thread, std::move(windows), "ProfilerStep#N"};
  long long count = 0;
  std::tie(thread, windows) = marked_windows(t, [&](std::string_view name) -> std::optional<long long> {
    if (name.find("run_training_batch") == std::string_view::npos) return std::nullopt;
    return count++;
  });
  if (!windows.empty()) return {thread, std::move(windows), "run_training_batch"};
  // From one optimizer step's end to the next's: the first has no start and is not a step.
  count = 0;
  std::tie(thread, windows) = marked_windows(t, [&](std::string_view name) -> std::optional<long long> {
    if (!name.starts_with("Optimizer.step#") && name != "optimizer") return std::nullopt;
    return count++;
  });
  std::vector<Window> steps;
  for (std::size_t i = 1; i < windows.size(); ++i)
    steps.push_back({windows[i].number, windows[i - 1].end, windows[i].end});
  return {thread, std::move(steps), "optimizer steps"};
}

// Splits a step of the training thread: each moment goes to the innermost op that names a
// part (an op naming none takes its parent's; one with no named ancestor is unattributed).
// Moments in no op are resolved by resolve_gaps.
class StepSplitter {
 public:
  StepSplitter(const TraceFile& t, std::vector<const TraceEvent*> ops) : t_(t), ops_(std::move(ops)) {
    std::sort(ops_.begin(), ops_.end(), [](const TraceEvent* a, const TraceEvent* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->duration_ns > b->duration_ns;
    });
  }

  // Segments covering [start, end) exactly, gaps marked with nullopt parts.
  std::vector<std::pair<Segment, bool>> split(int64_t start, int64_t end) {
    struct Open {
      int64_t end;
      StepPart part;
    };
    std::vector<Open> stack;
    std::vector<std::pair<Segment, bool>> out;  // bool: inside some op
    int64_t cursor = start;
    const auto emit = [&](int64_t until) {
      if (until <= cursor) return;
      if (stack.empty())
        out.push_back({{cursor, until, StepPart::kPython}, false});
      else
        out.push_back({{cursor, until, stack.back().part}, true});
      cursor = until;
    };
    const auto close_until = [&](int64_t time) {
      while (!stack.empty() && stack.back().end <= time) {
        emit(stack.back().end);
        stack.pop_back();
      }
    };
    for (const TraceEvent* e : ops_) {
      const int64_t a = std::max(e->start_ns, start);
      int64_t b = std::min(e->start_ns + e->duration_ns, end);
      if (b <= a) continue;
      close_until(a);
      emit(a);
      if (!stack.empty()) b = std::min(b, stack.back().end);  // nesting kept even if the file's is not
      const std::optional<StepPart> own = part_of_op(t_.names[e->name]);
      const StepPart part = own ? *own : (stack.empty() ? StepPart::kUnattributed : stack.back().part);
      stack.push_back({b, part});
    }
    close_until(end);
    emit(end);
    return out;
  }

 private:
  const TraceFile& t_;
  std::vector<const TraceEvent*> ops_;
};

// A moment in no op: waiting for a collective while one is in flight; between two ops of one
// part, that part's own interpreter time; else plain Python.
std::vector<Segment> resolve_gaps(const std::vector<std::pair<Segment, bool>>& raw,
                                  const std::vector<std::pair<int64_t, int64_t>>& in_flight) {
  std::vector<Segment> out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const auto& [seg, in_op] = raw[i];
    if (in_op) {
      out.push_back(seg);
      continue;
    }
    std::optional<StepPart> before, after;
    for (std::size_t j = i; j-- > 0;) {
      if (raw[j].second) {
        before = raw[j].first.part;
        break;
      }
    }
    for (std::size_t j = i + 1; j < raw.size(); ++j) {
      if (raw[j].second) {
        after = raw[j].first.part;
        break;
      }
    }
    const StepPart idle =
        before && after && *before == *after && *before != StepPart::kUnattributed ? *before : StepPart::kPython;
    // Walk the gap through the in-flight collectives.
    int64_t cursor = seg.start;
    auto it = std::lower_bound(in_flight.begin(), in_flight.end(), std::pair<int64_t, int64_t>{cursor, cursor},
                               [](const auto& x, const auto& y) { return x.second <= y.first; });
    for (; it != in_flight.end() && it->first < seg.end; ++it) {
      const int64_t a = std::max(cursor, it->first);
      const int64_t b = std::min(seg.end, it->second);
      if (a > cursor) out.push_back({cursor, a, idle});
      if (b > a) out.push_back({a, b, StepPart::kCommWait});
      cursor = std::max(cursor, b);
    }
    if (seg.end > cursor) out.push_back({cursor, seg.end, idle});
  }
  return out;
}

// The host part at a moment, from the steps' segments (sorted); kLaunch outside them.
StepPart host_part_at(const std::vector<Segment>& segments, int64_t time) {
  auto it =
      std::upper_bound(segments.begin(), segments.end(), time, [](int64_t t, const Segment& s) { return t < s.start; });
  if (it == segments.begin()) return StepPart::kLaunch;
  --it;
  return time < it->end ? it->part : StepPart::kLaunch;
}

// A GPU step: the GPU's window split into compute kernels (by the part of the host op that
// launched them), communication not hidden under compute, and idle time (by what the host
// was doing: loading data, plain Python, else launching work).
// (correlation, the launch's start on the host), sorted: how a kernel finds its launch.
using LaunchTimes = std::vector<std::pair<int64_t, int64_t>>;

struct GpuWork {
  std::vector<const TraceEvent*> by_start;  // kernels, copies and sets
  int64_t longest_ns = 0;
};

StepParts gpu_parts(const std::vector<bool>& library_names, const Window& w, const std::vector<Segment>& host,
                    const LaunchTimes& launch_time, const GpuWork& gpu) {
  std::vector<std::pair<int64_t, int64_t>> comm;
  std::vector<std::pair<std::pair<int64_t, int64_t>, StepPart>> compute;
  auto first = std::lower_bound(gpu.by_start.begin(), gpu.by_start.end(), w.start - gpu.longest_ns,
                                [](const TraceEvent* e, int64_t time) { return e->start_ns < time; });
  for (auto it = first; it != gpu.by_start.end() && (*it)->start_ns < w.end; ++it) {
    const TraceEvent& e = **it;
    const int64_t a = std::max(e.start_ns, w.start);
    const int64_t b = std::min(e.start_ns + e.duration_ns, w.end);
    if (b <= a) continue;
    if (is_collective_kernel(e, library_names)) {
      comm.emplace_back(a, b);
      continue;
    }
    const auto launched = std::lower_bound(launch_time.begin(), launch_time.end(), std::pair{e.correlation, INT64_MIN});
    const StepPart part = launched == launch_time.end() || launched->first != e.correlation
                              ? StepPart::kUnattributed
                              : host_part_at(host, launched->second);
    compute.push_back(
        {{a, b}, part == StepPart::kPython || part == StepPart::kLaunch ? StepPart::kUnattributed : part});
  }
  std::sort(compute.begin(), compute.end());
  StepParts parts{};
  std::vector<std::pair<int64_t, int64_t>> busy;
  int64_t covered_until = w.start;
  for (const auto& [span, part] : compute) {
    const int64_t a = std::max(span.first, covered_until);
    if (span.second > a) {
      parts[index(part)] += span.second - a;
      covered_until = span.second;
    }
    busy.push_back(span);
  }
  busy = merged(std::move(busy));
  const auto comm_merged = merged(std::move(comm));
  int64_t exposed = 0;
  for (const auto& c : comm_merged) exposed += (c.second - c.first) - covered(busy, c.first, c.second);
  parts[index(StepPart::kCommWait)] += exposed;
  // Idle: walk the gaps between busy and exposed-communication time.
  auto taken = busy;
  taken.insert(taken.end(), comm_merged.begin(), comm_merged.end());
  taken = merged(std::move(taken));
  int64_t cursor = w.start;
  // Idle GPU time goes to what the host was doing then: loading data, plain Python, else launching.
  const auto idle = [&](int64_t a, int64_t b) {
    auto seg = std::upper_bound(host.begin(), host.end(), a, [](int64_t t, const Segment& s) { return t < s.end; });
    int64_t cursor = a;
    for (; seg != host.end() && seg->start < b; ++seg) {
      const int64_t x = std::max(cursor, seg->start);
      const int64_t y = std::min(b, seg->end);
      if (y <= x) continue;
      parts[index(StepPart::kLaunch)] += x - cursor;
      const bool waiting = seg->part == StepPart::kData || seg->part == StepPart::kPython;
      parts[index(waiting ? seg->part : StepPart::kLaunch)] += y - x;
      cursor = y;
    }
    parts[index(StepPart::kLaunch)] += b - cursor;
  };
  for (const auto& s : taken) {
    if (s.first > cursor) idle(cursor, std::min(s.first, w.end));
    cursor = std::max(cursor, s.second);
  }
  if (w.end > cursor) idle(cursor, w.end);
  return parts;
}

int64_t median_duration(const std::vector<Window>& w) {
  std::vector<int64_t> d;
  for (const Window& x : w) d.push_back(x.end - x.start);
  std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
  return d[d.size() / 2];
}

}  // namespace

RankSteps find_steps(const TraceFile& t) {
  Steps found = step_windows(t);
  if (found.windows.empty()) {
    throw DataError(
        fmt::format("{}: no training step in it: no ProfilerStep#N (torch.profiler's schedule with "
                    "prof.step() in the loop), no Lightning run_training_batch and fewer than two "
                    "optimizer steps",
                    t.path));
  }
  RankSteps out;
  out.step_source = found.source;
  std::vector<Window>& w = found.windows;
  if (w.size() >= 2) {
    const int64_t median = median_duration({w.begin(), w.end() - 1});
    if (w.back().end - w.back().start < median / 2) {
      w.pop_back();
      out.dropped_partial = 1;
    }
  }
  if (w.size() >= 3) {
    w.erase(w.begin());
    out.dropped_warmup = 1;
  }

  // Collectives in flight: GPU kernels where there are any, else the host's annotations.
  const std::vector<bool> library_names = collective_library_names(t);
  std::vector<const TraceEvent*> calls;
  for (const TraceEvent& e : t.events) {
    if (e.kind == EventKind::kGpuKernel) out.on_gpu = true;
    if (is_collective_kernel(e, library_names)) calls.push_back(&e);
  }
  if (calls.empty()) {
    for (const TraceEvent& e : t.events) {
      if (is_host(e) && e.thread != found.thread && is_collective_annotation(t.names[e.name])) calls.push_back(&e);
    }
  }
  std::vector<std::pair<int64_t, int64_t>> in_flight;
  if (!out.on_gpu) {
    for (const TraceEvent* e : calls) in_flight.emplace_back(e->start_ns, e->start_ns + e->duration_ns);
  }
  in_flight = merged(std::move(in_flight));

  std::vector<const TraceEvent*> ops;
  LaunchTimes launch_time;
  for (const TraceEvent& e : t.events) {
    if (is_host(e) && e.thread == found.thread && !is_marker(t, e)) ops.push_back(&e);
    if (e.kind == EventKind::kRuntime && e.correlation >= 0) launch_time.push_back({e.correlation, e.start_ns});
  }
  std::sort(launch_time.begin(), launch_time.end());
  StepSplitter splitter(t, std::move(ops));
  std::vector<std::vector<Segment>> host_steps;
  std::vector<Segment> host;
  for (const Window& s : w) {
    host_steps.push_back(resolve_gaps(splitter.split(s.start, s.end), in_flight));
    host.insert(host.end(), host_steps.back().begin(), host_steps.back().end());
  }
  // The GPU's own step windows, by number, where the trace has them.
  std::map<long long, Window> gpu_windows;
  GpuWork gpu;
  for (const TraceEvent& e : t.events) {
    if (e.kind == EventKind::kGpuKernel || e.kind == EventKind::kGpuMemory) {
      gpu.by_start.push_back(&e);
      gpu.longest_ns = std::max(gpu.longest_ns, e.duration_ns);
    }
    if (e.kind != EventKind::kGpuAnnotation) continue;
    if (const std::optional<long long> n = profiler_step_number(t.names[e.name])) {
      gpu_windows[*n] = {*n, e.start_ns, e.start_ns + e.duration_ns};
    }
  }
  std::sort(gpu.by_start.begin(), gpu.by_start.end(),
            [](const TraceEvent* a, const TraceEvent* b) { return a->start_ns < b->start_ns; });
  for (std::size_t i = 0; i < w.size(); ++i) {
    TraceStep step;
    step.number = w[i].number;
    if (out.on_gpu) {
      const auto g = gpu_windows.find(w[i].number);
      const Window window = g != gpu_windows.end() && g->second.end > g->second.start ? g->second : w[i];
      step.start_ns = window.start;
      step.duration_ns = window.end - window.start;
      step.part_ns = gpu_parts(library_names, window, host, launch_time, gpu);
    } else {
      step.start_ns = w[i].start;
      step.duration_ns = w[i].end - w[i].start;
      for (const Segment& s : host_steps[i]) step.part_ns[index(s.part)] += s.end - s.start;
    }
    out.steps.push_back(step);
  }
  // Each call belongs to the step it starts in (steps are sorted and disjoint).
  const CollectiveOrigins origins(t, found.thread);
  for (std::size_t i = 0; i < w.size(); ++i) out.steps[i].forward_passes = origins.forward_passes(w[i].start, w[i].end);
  for (const TraceEvent* e : calls) {
    auto after = std::upper_bound(out.steps.begin(), out.steps.end(), e->start_ns,
                                  [](int64_t time, const TraceStep& s) { return time < s.start_ns; });
    if (after == out.steps.begin()) continue;
    const TraceStep& s = *(after - 1);
    if (e->start_ns >= s.start_ns + s.duration_ns) continue;
    const std::size_t step = static_cast<std::size_t>(after - 1 - out.steps.begin());
    const CollectiveOrigins::Launch launch = origins.launch_of(*e);
    out.collectives.push_back({t.names[e->name], t.names[e->process_group], e->bytes, e->start_ns, e->duration_ns, step,
                               launch.origin, origins.forward_passes(w[step].start, launch.at_ns)});
  }
  std::sort(out.collectives.begin(), out.collectives.end(),
            [](const CollectiveCall& a, const CollectiveCall& b) { return a.start_ns < b.start_ns; });
  return out;
}

}  // namespace ddp
