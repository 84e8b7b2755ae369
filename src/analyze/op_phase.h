#pragma once
// Which part of a training step an operator or annotation of a PyTorch or Lightning trace
// belongs to, by its name: the one table of such names (tested against real traces).
#include <optional>
#include <string_view>

namespace ddp {

// The parts a step's time is split into. kPython: inside the step, outside any framework op
// (plain Python, such as a per-step NVML probe); kUnattributed: inside framework ops that
// belong to no part here (a loss computed outside forward, a tensor copy between parts).
// kLaunch: on a GPU job, the GPU idle while the host works (launch overhead).
enum class StepPart {
  kData,
  kForward,
  kBackward,
  kCommWait,
  kOptimizer,
  kValidation,
  kLaunch,
  kPython,
  kUnattributed,
};
inline constexpr std::size_t kStepPartCount = 9;
inline constexpr std::string_view kStepPartNames[kStepPartCount] = {
    "data", "forward", "backward", "comm_wait", "optimizer", "validation", "launch", "python", "unattributed"};

// The part an operator's name puts it in, or nullopt for a framework op that names none (it
// takes its enclosing op's part). Collectives (gloo:*, nccl:*, c10d::*) are kCommWait.
std::optional<StepPart> part_of_op(std::string_view name);

// Whether a host event names a collective's own work: "gloo:all_reduce", "nccl:broadcast", and
// ddpscope's "allreduce" spans.
bool is_collective_annotation(std::string_view name);

// Whether a host event of this name is a region the training code marks (a record_function
// range such as DistributedDataParallel.forward or Lightning's [pl][profile]... hooks, a Python
// function) rather than a framework operator (aten::, c10d::, autograd::): a region's own time,
// outside the ops inside it, is the interpreter running the code it marks.
bool is_region(std::string_view name);

// Whether an event of this name can mark a training step: a profiler step, Lightning's
// run_training_batch, an optimizer step (rank_steps.h says which is used).
bool can_mark_step(std::string_view name);

// Whether a GPU kernel's name is NCCL's or RCCL's (for kernels without collective metadata).
bool is_collective_library_name(std::string_view name);

// The step marker's number: "ProfilerStep#12" gives 12; nullopt for any other name.
std::optional<long long> profiler_step_number(std::string_view name);

}  // namespace ddp
