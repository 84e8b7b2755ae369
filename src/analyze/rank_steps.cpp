#include "analyze/rank_steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <iterator>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>
#include <unordered_set>

#include "analyze/spans.h"
#include "base/serial_worker.h"
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
  Phase part = Phase::kPython;
};

std::size_t index(Phase part) { return static_cast<std::size_t>(part); }

bool is_host(const TraceEvent& e) { return e.kind == EventKind::kHostOp; }

bool is_marker(const TraceFile& t, const TraceEvent& e) { return t.is_profiler_step(e); }

// The thread with the most events whose names satisfy `is_step`, and their windows.
template <typename IsStep>
std::pair<uint32_t, std::vector<Window>> marked_windows(const TraceFile& t, IsStep is_step) {
  std::map<uint32_t, std::vector<Window>> by_thread;
  for (const TraceEvent& e : t.step_markers) {
    if (!is_host(e)) continue;
    if (const std::optional<long long> n = is_step(t.names[e.name])) {
      by_thread[e.thread].push_back({*n, e.start_ns, e.start_ns + e.duration_ns});
    }
  }
  std::pair<uint32_t, std::vector<Window>> best{0, {}};
  for (auto& [thread, windows] : by_thread) {
    if (windows.size() > best.second.size()) best = {thread, std::move(windows)};
  }
  std::sort(best.second.begin(), best.second.end(),
            [](const Window& a, const Window& b) { return std::tie(a.start, a.end) < std::tie(b.start, b.end); });
  return best;
}

struct Steps {
  uint32_t thread = 0;
  std::vector<Window> windows;
  std::string source;
  int repeated = 0;  // markers that repeat another's start and end: the file's events appear twice
};

// One step per marker: a marker that repeats another's start and end is counted and dropped; two
// that overlap are refused (a rank's steps follow one another), which keeps each step's events,
// and the time and memory to split them, the step's own.
void drop_repeated_and_refuse_overlapping(const TraceFile& t, Steps& found) {
  std::vector<Window> kept;
  for (const Window& w : found.windows) {
    if (!kept.empty() && w.start == kept.back().start && w.end == kept.back().end) {
      ++found.repeated;
      continue;
    }
    if (!kept.empty() && w.start < kept.back().end) {
      throw DataError(fmt::format(
          "{}: step {} begins {:.3f} ms before step {} ends ({}): a rank's steps follow one another; is the file "
          "two traces joined, or two profilers stepped in one process?",
          t.path, w.number, static_cast<double>(kept.back().end - w.start) / 1e6, kept.back().number, found.source));
    }
    kept.push_back(w);
  }
  found.windows = std::move(kept);
}

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
  for (std::size_t i = 1; i < windows.size(); ++i) {
    if (windows[i].start == windows[i - 1].start && windows[i].end == windows[i - 1].end) continue;  // repeated
    if (windows[i].end > windows[i - 1].end) steps.push_back({windows[i].number, windows[i - 1].end, windows[i].end});
  }
  return {thread, std::move(steps), "optimizer steps"};
}

// A stretch of the training thread's time as the splitter finds it: inside an op (taking the
// part of the innermost op that names one), or in none (resolved by resolve_gaps). `own` marks
// a region's own time (op_phase.h's is_region), outside every op inside it.
struct RawSegment {
  Segment segment;
  bool in_op = false;
  bool own = false;
};

// Splits a step of the training thread: each moment goes to the innermost op that names a
// part (an op naming none takes its parent's; one with no named ancestor is other).
class StepSplitter {
 public:
  StepSplitter(const TraceFile& t, std::vector<const TraceEvent*> ops) : t_(t), ops_(std::move(ops)) {
    std::sort(ops_.begin(), ops_.end(), [](const TraceEvent* a, const TraceEvent* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->duration_ns > b->duration_ns;
    });
  }

  // Segments covering [start, end) exactly.
  std::vector<RawSegment> split(int64_t start, int64_t end) {
    struct Open {
      int64_t end;
      Phase part;
      bool region;
    };
    std::vector<Open> stack;
    std::vector<RawSegment> out;
    int64_t cursor = start;
    const auto emit = [&](int64_t until) {
      if (until <= cursor) return;
      if (stack.empty())
        out.push_back({{cursor, until, Phase::kPython}, false, false});
      else
        out.push_back({{cursor, until, stack.back().part}, true, stack.back().region});
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
      const std::optional<Phase> own = t_.part_of_op(*e);
      const Phase part = own ? *own : (stack.empty() ? Phase::kOther : stack.back().part);
      stack.push_back({b, part, t_.is_region(*e)});
    }
    close_until(end);
    emit(end);
    return out;
  }

 private:
  const TraceFile& t_;
  std::vector<const TraceEvent*> ops_;
};

// Python in forward: a stretch of a forward region's own time longer than this, and than
// kUnusualGapFactor times the step's median such stretch, is code that is not the model's
// forward (a per-step probe in Lightning's training_step runs inside DDP's forward). The usual
// stretches, the interpreter between one op and the next, are 10-250 us.
constexpr int64_t kPythonInForwardNs = 1'000'000;
constexpr int64_t kUnusualGapFactor = 10;

// Forward regions' own stretches beyond the usual ones become plain Python.
void python_in_forward(std::vector<RawSegment>& raw) {
  std::vector<int64_t> own;
  for (const RawSegment& r : raw) {
    if (r.own && r.segment.part == Phase::kForward) own.push_back(r.segment.end - r.segment.start);
  }
  if (own.empty()) return;
  std::nth_element(own.begin(), own.begin() + static_cast<std::ptrdiff_t>(own.size() / 2), own.end());
  const int64_t longest_usual = std::max(kPythonInForwardNs, kUnusualGapFactor * own[own.size() / 2]);
  for (RawSegment& r : raw) {
    if (r.own && r.segment.part == Phase::kForward && r.segment.end - r.segment.start > longest_usual) {
      r.segment.part = Phase::kPython;
    }
  }
}

// A moment in no op: waiting for a collective while one is in flight; between two ops of one
// part, that part's own interpreter time; else plain Python.
std::vector<Segment> resolve_gaps(const std::vector<RawSegment>& raw,
                                  const std::vector<std::pair<int64_t, int64_t>>& in_flight) {
  std::vector<Segment> out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const Segment& seg = raw[i].segment;
    if (raw[i].in_op) {
      out.push_back(seg);
      continue;
    }
    std::optional<Phase> before, after;
    for (std::size_t j = i; j-- > 0;) {
      if (raw[j].in_op) {
        before = raw[j].segment.part;
        break;
      }
    }
    for (std::size_t j = i + 1; j < raw.size(); ++j) {
      if (raw[j].in_op) {
        after = raw[j].segment.part;
        break;
      }
    }
    const Phase idle = before && after && *before == *after && *before != Phase::kOther ? *before : Phase::kPython;
    // Walk the gap through the in-flight collectives.
    int64_t cursor = seg.start;
    auto it = std::lower_bound(in_flight.begin(), in_flight.end(), std::pair<int64_t, int64_t>{cursor, cursor},
                               [](const auto& x, const auto& y) { return x.second <= y.first; });
    for (; it != in_flight.end() && it->first < seg.end; ++it) {
      const int64_t a = std::max(cursor, it->first);
      const int64_t b = std::min(seg.end, it->second);
      if (a > cursor) out.push_back({cursor, a, idle});
      if (b > a) out.push_back({a, b, Phase::kCommWait});
      cursor = std::max(cursor, b);
    }
    if (seg.end > cursor) out.push_back({cursor, seg.end, idle});
  }
  return out;
}

// The host part at a moment, from the steps' segments (sorted); kLaunch outside them.
Phase host_part_at(const std::vector<Segment>& segments, int64_t time) {
  auto it =
      std::upper_bound(segments.begin(), segments.end(), time, [](int64_t t, const Segment& s) { return t < s.start; });
  if (it == segments.begin()) return Phase::kLaunch;
  --it;
  return time < it->end ? it->part : Phase::kLaunch;
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

StepParts gpu_parts(const TraceFile& t, const Window& w, const std::vector<Segment>& host,
                    const LaunchTimes& launch_time, const GpuWork& gpu) {
  std::vector<std::pair<int64_t, int64_t>> comm;
  std::vector<std::pair<std::pair<int64_t, int64_t>, Phase>> compute;
  auto first = std::lower_bound(gpu.by_start.begin(), gpu.by_start.end(), w.start - gpu.longest_ns,
                                [](const TraceEvent* e, int64_t time) { return e->start_ns < time; });
  for (auto it = first; it != gpu.by_start.end() && (*it)->start_ns < w.end; ++it) {
    const TraceEvent& e = **it;
    const int64_t a = std::max(e.start_ns, w.start);
    const int64_t b = std::min(e.start_ns + e.duration_ns, w.end);
    if (b <= a) continue;
    if (t.is_collective_kernel(e)) {
      comm.emplace_back(a, b);
      continue;
    }
    const auto launched = std::lower_bound(launch_time.begin(), launch_time.end(), std::pair{e.correlation, INT64_MIN});
    const Phase part = launched == launch_time.end() || launched->first != e.correlation
                           ? Phase::kOther
                           : host_part_at(host, launched->second);
    compute.push_back({{a, b}, part == Phase::kPython || part == Phase::kLaunch ? Phase::kOther : part});
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
  parts[index(Phase::kCommWait)] += exposed;
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
      parts[index(Phase::kLaunch)] += x - cursor;
      const bool waiting = seg->part == Phase::kData || seg->part == Phase::kPython;
      parts[index(waiting ? seg->part : Phase::kLaunch)] += y - x;
      cursor = y;
    }
    parts[index(Phase::kLaunch)] += b - cursor;
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

// One step to split: the training thread's window, the window its parts cover (the GPU's own on
// a GPU job, where the trace has it), and the span of time whose events it needs.
struct StepPlan {
  Window host;
  Window parts;
  int64_t from = 0;
  int64_t to = 0;
};

// Splits one step, given the events that overlap its plan (in start order).
class StepMaker {
 public:
  StepMaker(const TraceFile& t, uint32_t thread, bool on_gpu)
      : t_(t), thread_(thread), on_gpu_(on_gpu), kernel_calls_(t.collective_kernels > 0) {}

  void make(const StepPlan& plan, const std::vector<TraceEvent>& events, TraceStep& step, RankSteps& out) {
    // Collectives: GPU kernels where there are any, else the host's annotations.
    std::vector<const TraceEvent*> calls, ops;
    std::vector<TimeSpan> in_flight;
    LaunchTimes launch_time;
    GpuWork gpu;
    for (const TraceEvent& e : events) {
      const bool call = kernel_calls_ ? t_.is_collective_kernel(e)
                                      : is_host(e) && e.thread != thread_ && t_.is_collective_annotation(e);
      if (call) calls.push_back(&e);
      if (call && !on_gpu_) in_flight.emplace_back(e.start_ns, e.start_ns + e.duration_ns);
      if (is_host(e) && e.thread == thread_ && !is_marker(t_, e)) ops.push_back(&e);
      if (e.kind == EventKind::kRuntime && e.correlation >= 0) launch_time.push_back({e.correlation, e.start_ns});
      if (e.kind == EventKind::kGpuKernel || e.kind == EventKind::kGpuMemory) {
        gpu.by_start.push_back(&e);
        gpu.longest_ns = std::max(gpu.longest_ns, e.duration_ns);
      }
    }
    std::sort(launch_time.begin(), launch_time.end());
    std::vector<RawSegment> raw = StepSplitter(t_, std::move(ops)).split(plan.host.start, plan.host.end);
    python_in_forward(raw);
    std::vector<Segment> host = resolve_gaps(raw, merged(std::move(in_flight)));
    step.number = plan.host.number;
    step.start_ns = plan.parts.start;
    step.duration_ns = plan.parts.end - plan.parts.start;
    if (on_gpu_) {
      // A kernel may run a step after its launch: the previous step's host time is kept for it.
      std::vector<Segment> both = previous_host_;
      both.insert(both.end(), host.begin(), host.end());
      step.part_ns = gpu_parts(t_, plan.parts, both, launch_time, gpu);
      previous_host_ = std::move(host);
    } else {
      for (const Segment& s : host) step.part_ns[index(s.part)] += s.end - s.start;
    }
    const CollectiveOrigins origins(t_, events, thread_);
    step.forward_passes = origins.forward_passes(plan.host.start, plan.host.end);
    // Each call belongs to the step it starts in (steps are disjoint).
    const auto step_index = static_cast<std::size_t>(&step - out.steps.data());
    for (const TraceEvent* e : calls) {
      if (e->start_ns < step.start_ns || e->start_ns >= step.start_ns + step.duration_ns) continue;
      const CollectiveOrigins::Launch launch = origins.launch_of(*e);
      out.collectives.push_back({t_.names[e->name], t_.names[e->process_group], e->bytes, e->start_ns, e->duration_ns,
                                 step_index, launch.origin, origins.forward_passes(plan.host.start, launch.at_ns)});
    }
  }

 private:
  const TraceFile& t_;
  uint32_t thread_;
  bool on_gpu_;
  bool kernel_calls_;
  std::vector<Segment> previous_host_;
};

// Events read in start order that repeat one already read (every field alike): a file whose
// events appear twice (two exports joined) is read as if each appeared once.
class RepeatFilter {
 public:
  bool seen_before(const TraceEvent& e) {
    if (e.start_ns != start_) {
      start_ = e.start_ns;
      few_.clear();
      if (!many_.empty()) many_ = {};  // clear() costs every bucket: after a crowded moment, start afresh
    }
    const Key key = key_of(e);
    // A few events start together, looked through in a list; a crowd (a hostile file) is hashed.
    bool repeated = std::find(few_.begin(), few_.end(), key) != few_.end();
    if (!repeated && few_.size() < kFew) {
      few_.push_back(key_of(e));  // not `key`: a copy of what was just stored stalls on the stores
    } else if (!repeated) {
      repeated = !many_.insert(key).second;
    }
    count_ += repeated ? 1 : 0;
    return repeated;
  }
  int64_t count() const { return count_; }

 private:
  static constexpr std::size_t kFew = 16;
  using Key = std::tuple<int64_t, int64_t, int64_t, uint32_t, uint32_t, uint32_t, uint8_t>;
  static Key key_of(const TraceEvent& e) {
    return {e.duration_ns, e.bytes, e.correlation, e.name, e.thread, e.process_group, static_cast<uint8_t>(e.kind)};
  }
  struct Hash {
    std::size_t operator()(const Key& k) const {
      std::size_t h = 0;
      const auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
      mix(static_cast<std::size_t>(std::get<0>(k)));
      mix(static_cast<std::size_t>(std::get<1>(k)));
      mix(static_cast<std::size_t>(std::get<2>(k)));
      mix(std::get<3>(k));
      mix(std::get<4>(k));
      mix(std::get<5>(k));
      mix(std::get<6>(k));
      return h;
    }
  };
  int64_t start_ = INT64_MIN;
  std::vector<Key> few_;
  std::unordered_set<Key, Hash> many_;
  int64_t count_ = 0;
};

}  // namespace

RankSteps find_steps(TraceFile& t) {
  Steps found = step_windows(t);
  if (found.windows.empty()) {
    throw NotATraceError(
        fmt::format("{}: no training step in it: no ProfilerStep#N (torch.profiler's schedule with "
                    "prof.step() in the loop), no Lightning run_training_batch and fewer than two "
                    "optimizer steps",
                    t.path));
  }
  drop_repeated_and_refuse_overlapping(t, found);
  RankSteps out;
  out.step_source = found.source;
  out.repeated_steps = found.repeated;
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
  out.on_gpu = t.gpu_kernels > 0;
  // The GPU's own step windows, by number, where the trace has them.
  std::map<long long, Window> gpu_windows;
  for (const TraceEvent& e : t.step_markers) {
    if (e.kind != EventKind::kGpuAnnotation) continue;
    if (const std::optional<long long> n = profiler_step_number(t.names[e.name])) {
      gpu_windows[*n] = {*n, e.start_ns, e.start_ns + e.duration_ns};
    }
  }
  std::vector<StepPlan> plans;
  for (const Window& host : w) {
    StepPlan p{host, host, host.start, host.end};
    const auto g = gpu_windows.find(host.number);
    if (out.on_gpu && g != gpu_windows.end() && g->second.end > g->second.start) p.parts = g->second;
    p.from = std::min(p.host.start, p.parts.start);
    p.to = std::max(p.host.end, p.parts.end);
    plans.push_back(p);
  }
  // One pass over the events in start order, keeping only those that overlap a step not yet
  // made: memory holds a step's events, not the file's.
  std::vector<std::size_t> order(plans.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return plans[a].from < plans[b].from; });
  out.steps.resize(plans.size());
  StepMaker maker(t, found.thread, out.on_gpu);
  // Steps are made on a thread of their own, in order, while this one reads on: a step's events
  // go to it once the last of them is read (memory holds a few steps' events).
  SerialWorker making(1);
  std::vector<TraceEvent> pending;
  RepeatFilter repeats;
  std::size_t next = 0;
  const auto make_next = [&] {
    const std::size_t step = order[next];
    const int64_t from = ++next < order.size() ? plans[order[next]].from : INT64_MAX;
    std::vector<TraceEvent> events;  // of this step that the next one needs too
    std::copy_if(pending.begin(), pending.end(), std::back_inserter(events),
                 [&](const TraceEvent& e) { return e.start_ns + e.duration_ns >= from; });
    std::swap(events, pending);
    pending.reserve(events.size());
    making.give([&, step, events = std::move(events)] { maker.make(plans[step], events, out.steps[step], out); });
  };
  t.events.for_each([&](const TraceEvent& e) {
    if (repeats.seen_before(e)) return;
    while (next < order.size() && e.start_ns >= plans[order[next]].to) make_next();
    if (next < order.size() && e.start_ns + e.duration_ns >= plans[order[next]].from) {
      if (pending.size() == kMaxStepEvents) {
        throw DataError(fmt::format("{}: step {} holds more than {} events, which no profiler writes in one step",
                                    t.path, plans[order[next]].host.number, kMaxStepEvents));
      }
      pending.push_back(e);
    }
  });
  out.repeated_events = repeats.count();
  while (next < order.size()) make_next();
  making.finish();
  std::sort(out.collectives.begin(), out.collectives.end(),
            [](const CollectiveCall& a, const CollectiveCall& b) { return a.start_ns < b.start_ns; });
  return out;
}

}  // namespace ddp
