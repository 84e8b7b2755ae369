#pragma once
// Where a collective came from: DDP's gradient synchronisation, launched by its hooks while
// backward runs, or the training code's own (a metric reduced each step, a barrier), launched
// outside backward. And which forward pass of its step it follows, so that a step that
// synchronises gradients after each of several micro-batches (accumulation without no_sync)
// can be told from one that synchronises once.
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "analyze/spans.h"
#include "analyze/trace_file.h"

namespace ddp {

enum class CollectiveOrigin : uint8_t {
  kUnknown,   // no launch found for it (ddpscope's own traces, a trace without host ops)
  kGradient,  // launched inside backward
  kOther,     // launched outside backward
};

class CollectiveOrigins {
 public:
  // Over `events` of `t` (one step's, with what overlaps it); `training_thread`: the thread that
  // runs the steps (its forward passes are counted).
  CollectiveOrigins(const TraceFile& t, const std::vector<TraceEvent>& events, uint32_t training_thread);

  struct Launch {
    CollectiveOrigin origin = CollectiveOrigin::kUnknown;
    int64_t at_ns = 0;  // when it was launched, on the host
  };
  // A GPU kernel by the runtime call that launched it (correlation); a host annotation of a
  // collective's work (gloo's thread) by the latest launch op that started before it.
  Launch launch_of(const TraceEvent& call) const;

  // How many forward passes of the training thread start in [start, end).
  int forward_passes(int64_t start, int64_t end) const;

 private:
  bool inside_backward(uint32_t thread, int64_t time) const;

  std::vector<std::vector<TimeSpan>> backward_;                            // per thread, merged
  std::vector<TimeSpan> forward_;                                          // the training thread's, merged
  std::vector<std::pair<int64_t, uint32_t>> host_launches_;                // (start, thread), sorted
  std::vector<std::pair<int64_t, std::pair<int64_t, uint32_t>>> runtime_;  // correlation → (start, thread)
};

}  // namespace ddp
