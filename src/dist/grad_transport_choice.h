#pragma once
// How a GPU world's ranks average their gradients, one choice for every rank
// since every rank of a collective must be on the same transport: what
// --process-group-backend asks for, against what the placement and the ranks' NCCL allow.
//   nccl: NCCL on the GPUs, also in a world of one (a check of the path); refused, naming
//         why, when NCCL cannot run: ranks sharing a GPU (NCCL's init fails with
//         "Duplicate GPU detected") or a rank that cannot load NCCL.
//   mpi:  through host memory over MPI.
//   auto: NCCL where it can run, else MPI, said at start-up with the reason.
#include <string>

#include "ddpscope/option_enums.h"
#include "dist/gpu_placement.h"

namespace ddp {

struct NcclReadiness {
  int first_rank_without = -1;  // the lowest rank that cannot use NCCL; -1: every rank can
  std::string why;              // that rank's reason
};

struct GradTransportChoice {
  GradTransport transport = GradTransport::kNone;
  std::string line;  // what rank 0 says at start-up ("" for one rank on its own)
};

// Throws UsageError when nccl was asked for and cannot run.
GradTransportChoice choose_grad_transport(ProcessGroupBackend backend, const GpuPlacement& placement, int world_size,
                                          const NcclReadiness& nccl);

}  // namespace ddp
