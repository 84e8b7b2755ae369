#pragma once
// Which phase of a training step (observe/phase.h) an operator or annotation of a PyTorch or
// Lightning trace belongs to, by its name: the one table of such names (tested against real
// traces). A step's time outside any op is python; inside framework ops that name no phase and
// have no named ancestor, other.
#include <array>
#include <optional>
#include <string_view>

#include "observe/phase.h"

namespace ddp {

// The phases a traced step is split into (its startup, logging and monitor are not in a trace),
// in the order the text, the JSON and the merged trace show them.
inline constexpr std::array<Phase, 9> kStepPhases = {Phase::kData,     Phase::kForward,   Phase::kBackward,
                                                     Phase::kCommWait, Phase::kOptimizer, Phase::kValidation,
                                                     Phase::kLaunch,   Phase::kPython,    Phase::kOther};

// The part an operator's name puts it in, or nullopt for a framework op that names none (it
// takes its enclosing op's part). Collectives (gloo:*, nccl:*, c10d::*) are kCommWait.
std::optional<Phase> part_of_op(std::string_view name);

// Whether a host event names a collective's own work: "gloo:all_reduce", "nccl:broadcast", and
// ddpscope's "allreduce" spans.
bool is_collective_annotation(std::string_view name);

// Whether a host op of this name hands a collective to the communication library: the
// dispatcher's c10d ops (gloo on CPU), record_param_comms and ProcessGroupNCCL's nccl:*
// annotation (torch 2).
bool is_collective_launch(std::string_view name);

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
