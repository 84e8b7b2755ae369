#include "train/records/trace_size.h"

#include <algorithm>

#include "observe/span_buffer.h"

namespace ddp {

double TraceSize::bytes() const { return 4.0 * static_cast<double>(step_spans + fill_spans) * sizeof(Span); }

TraceSize trace_size(const EpochPlan& plan, int64_t epochs, int64_t buckets) {
  if (epochs < 0) return {kMaxTraceSpans, kMaxTraceSpans};
  // Per micro-batch: the phase switches (data, forward, loss, backward, optimizer, ...) and
  // one allreduce per bucket; per epoch, validation and the epoch's bookkeeping.
  const double per_epoch = static_cast<double>(plan.micro_batches) * static_cast<double>(8 + buckets) + 16;
  const double steps = static_cast<double>(epochs) * per_epoch + 64;
  const double fills = static_cast<double>(epochs) * static_cast<double>(plan.micro_batches) + 16;
  const auto capped = [](double spans) {
    return static_cast<int64_t>(std::min(spans, static_cast<double>(kMaxTraceSpans)));
  };
  return {capped(steps), capped(fills)};
}

}  // namespace ddp
