#pragma once
// How many spans --profiler trace keeps per rank: sized for the planned run before it
// starts, so that recording never allocates, and capped, so that a long run's trace stays
// bounded. Spans beyond the cap are counted as dropped, and the trace says how many.
#include <cstdint>

#include "train/loop/epoch_plan.h"

namespace ddp {

// 1 Mi spans (40 MB) per buffer, about 100 thousand optimizer steps of a small MLP; the
// seed's whole run needs about 3 thousand.
inline constexpr int64_t kMaxTraceSpans = int64_t{1} << 20;

struct TraceSize {
  int64_t step_spans = 0;  // the training thread's phases and the allreduces
  int64_t fill_spans = 0;  // the loader workers' batch fills
  // What tracing holds at its peak, per rank: the buffers, the copy sent to rank zero, and
  // (on rank zero, counted once per rank) that copy and its parsed form.
  double bytes() const;
};

// epochs < 0 (a run without an end) gets the cap.
TraceSize trace_size(const EpochPlan& plan, int64_t epochs, int64_t buckets);

}  // namespace ddp
