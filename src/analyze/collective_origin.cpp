#include "analyze/collective_origin.h"

#include <algorithm>

#include "analyze/spans.h"

namespace ddp {

CollectiveOrigins::CollectiveOrigins(const TraceFile& t, const std::vector<TraceEvent>& events,
                                     uint32_t training_thread) {
  backward_.resize(t.threads.size());
  for (const TraceEvent& e : events) {
    const TimeSpan span{e.start_ns, e.start_ns + e.duration_ns};
    if (e.kind == EventKind::kRuntime && e.correlation >= 0)
      runtime_.push_back({e.correlation, {e.start_ns, e.thread}});
    if (e.kind != EventKind::kHostOp) continue;
    if (t.is_collective_launch(e)) host_launches_.emplace_back(e.start_ns, e.thread);
    const std::optional<Phase> part = t.part_of_op(e);
    if (part == Phase::kBackward) backward_[e.thread].push_back(span);
    if (part == Phase::kForward && e.thread == training_thread) forward_.push_back(span);
  }
  for (std::vector<TimeSpan>& spans : backward_) spans = merged(std::move(spans));
  forward_ = merged(std::move(forward_));
  std::sort(host_launches_.begin(), host_launches_.end());
  std::sort(runtime_.begin(), runtime_.end());
}

bool CollectiveOrigins::inside_backward(uint32_t thread, int64_t time) const {
  return thread < backward_.size() && contains(backward_[thread], time);
}

CollectiveOrigins::Launch CollectiveOrigins::launch_of(const TraceEvent& call) const {
  std::optional<std::pair<int64_t, uint32_t>> launch;
  if (call.kind == EventKind::kGpuKernel) {
    const auto it =
        std::lower_bound(runtime_.begin(), runtime_.end(), std::pair{call.correlation, std::pair{INT64_MIN, 0u}});
    if (it != runtime_.end() && it->first == call.correlation) launch = it->second;
  } else {
    // Launched at or before its work started: the latest such launch is its own, or one
    // launched with it (DDP's buckets, queued together in one backward).
    const auto it =
        std::upper_bound(host_launches_.begin(), host_launches_.end(), std::pair{call.start_ns, UINT32_MAX});
    if (it != host_launches_.begin()) launch = *(it - 1);
  }
  if (!launch) return {};
  const auto [at, thread] = *launch;
  return {inside_backward(thread, at) ? CollectiveOrigin::kGradient : CollectiveOrigin::kOther, at};
}

int CollectiveOrigins::forward_passes(int64_t start, int64_t end) const {
  const auto starts_before = [&](int64_t time) {
    return std::lower_bound(forward_.begin(), forward_.end(), TimeSpan{time, INT64_MIN}) - forward_.begin();
  };
  return static_cast<int>(starts_before(end) - starts_before(start));
}

}  // namespace ddp
