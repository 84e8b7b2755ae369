#pragma once
// The memory a configuration allocates, counted from the options before anything is
// allocated or any run folder made: a run that cannot fit is refused with the sizes and
// the limit, not left to fail with std::bad_alloc halfway through its setup.
#include <string>

#include "ddpscope/config.h"
#include "train/config/run_config.h"

namespace ddp {

// Bytes one rank (process) allocates, by what holds them.
struct MemoryNeed {
  double model = 0;    // parameters, gradients, optimizer state
  double batches = 0;  // activations and loader batches of min(batch, dataset) rows
  double data = 0;     // sample orders, a CSV file's text, the teacher's network
  double trace = 0;    // --profiler trace's spans (train/trace_size.h)
  double total() const { return model + batches + data + trace; }
};

MemoryNeed memory_need(const Config& config);

// The memory this process may use: physical memory, or the cgroup's limit when lower.
// what_limits says which ("physical memory", "the cgroup's memory.max").
double memory_limit(std::string* what_limits);

// Throws UsageError when the ranks of this machine need more than memory_limit().
void check_memory(const Config& config);

}  // namespace ddp
