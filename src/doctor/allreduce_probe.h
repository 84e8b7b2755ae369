#pragma once
// The built-in allreduce probe: times MPI allreduce at a few sizes on the ranks of a job,
// so the scaling model gets its latency alpha and bandwidth beta from this machine.
#include <cstdint>
#include <vector>

#include "dist/communicator.h"

namespace ddp {

struct ProbePoint {
  int ranks = 1;
  int64_t bytes = 0;
  double seconds = 0;  // median over repetitions of the slowest rank's time
};

// Collective. Each size is warmed up, then timed `repetitions` times between barriers.
std::vector<ProbePoint> probe_allreduce(Communicator& comm, const std::vector<int64_t>& sizes, int repetitions = 25);

}  // namespace ddp
