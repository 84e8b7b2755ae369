#pragma once
// One rank's training steps found in its trace, each split into the parts of op_phase.h so
// that the parts add up to the step. Steps come from the profiler's ProfilerStep#N markers;
// where a trace has none, from Lightning's run_training_batch, else from one optimizer step's
// end to the next's. The first of three or more steps is dropped as warm-up (it holds
// first-call costs: DDP's initial broadcast, allocator growth) and a last step shorter than half
// the median of the others as cut by the end of the profile; both are counted.
//
// On a CPU job a step's parts are the training thread's time. On a GPU job they are the GPU's
// time in the step: kernels by the part of the host op that launched them, communication
// kernels not hidden under compute, and idle time by what the host was doing then (loading
// data, plain Python, else launching: kLaunch).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "analyze/collective_origin.h"
#include "analyze/op_phase.h"
#include "analyze/trace_file.h"

namespace ddp {

using StepParts = std::array<int64_t, kPhaseCount>;  // ns, indexed by Phase

struct TraceStep {
  long long number = 0;  // ProfilerStep#N's N, else the step's index
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  StepParts part_ns{};     // adds up to duration_ns
  int forward_passes = 0;  // of the training thread, begun in the step (micro-batches)
};

// A collective as one rank ran it: matched across ranks by (group, name) and order.
struct CollectiveCall {
  std::string name;   // "gloo:all_reduce", or a GPU kernel's name
  std::string group;  // process group, where the trace says
  int64_t bytes = -1;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  std::size_t step = 0;  // index into RankSteps::steps
  CollectiveOrigin origin = CollectiveOrigin::kUnknown;
  int after_forward = 0;  // forward passes its step had begun when it was launched
};

// A step's events (what overlaps it) are held while it is split: more than this is refused.
inline constexpr std::size_t kMaxStepEvents = std::size_t{1} << 21;

struct RankSteps {
  std::vector<TraceStep> steps;  // the steps kept, in order
  std::string step_source;       // "ProfilerStep#N", "run_training_batch" or "optimizer steps"
  int dropped_warmup = 0;
  int dropped_partial = 0;
  int repeated_steps = 0;                   // step markers that appear twice in the file, read once
  int64_t repeated_events = 0;              // events that appear twice (every field alike), read once
  bool on_gpu = false;                      // the trace has GPU kernels
  std::vector<CollectiveCall> collectives;  // inside the steps kept, in start order
};

// Throws DataError naming the file when it holds no step, when two steps overlap, or when a
// step holds more than kMaxStepEvents events.
RankSteps find_steps(TraceFile& trace);

}  // namespace ddp
