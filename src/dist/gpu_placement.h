#pragma once
// Which GPU each rank trains on, and how gradients travel between the ranks.
// A host's ranks take its visible GPUs round-robin by local rank (rank order among the
// ranks of that host), as torchrun's LOCAL_RANK -> cuda:LOCAL_RANK does when there are as
// many GPUs as ranks. NCCL refuses two ranks on one GPU (its init fails with "Duplicate GPU
// detected"), so when any host has more ranks than GPUs, every rank's gradients travel
// through host memory over MPI instead: one choice for the whole world, since every rank of
// a collective must be on the same transport. One rank needs no transport at all.
#include <cstdint>
#include <string>
#include <vector>

#include "dist/communicator.h"

namespace ddp {

enum class GradTransport { kNone, kNccl, kHostMpi };

// What one rank tells the others: its host (as a hash, as check_world gathers it) and how
// many GPUs it sees there.
struct RankGpus {
  uint64_t host = 0;
  int visible_gpus = 0;
};

struct GpuPlacement {
  int gpu = 0;                // this rank's device, an index among its host's visible GPUs
  int ranks_on_this_gpu = 1;  // this rank and the others of its host on the same GPU
  int max_ranks_per_gpu = 1;  // over the whole world; above 1 the transport is kHostMpi
  GradTransport transport = GradTransport::kNone;
};

// The placement of `rank`, from every rank's RankGpus (indexed by rank). Throws UsageError
// naming the rank when a host has no visible GPU.
GpuPlacement place_on_gpus(const std::vector<RankGpus>& ranks, int rank);

// The same, with the world gathered over comm (a collective: every rank calls it).
GpuPlacement place_on_gpus(Communicator& comm, int visible_gpus);

}  // namespace ddp
