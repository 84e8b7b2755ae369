#include "dist/grad_transport_choice.h"

#include <fmt/format.h>

#include "ddpscope/error.h"

namespace ddp {
namespace {

// Why NCCL cannot average this world's gradients ("" when it can), as the end of a sentence.
std::string nccl_blocked(const GpuPlacement& placement, int world_size, const NcclReadiness& nccl) {
  if (placement.max_ranks_per_gpu > 1) {
    return fmt::format(
        "--devices {} puts up to {} ranks on one GPU (ranks share a host's GPUs round-robin), and NCCL "
        "takes one rank per GPU",
        world_size, placement.max_ranks_per_gpu);
  }
  if (nccl.first_rank_without >= 0)
    return fmt::format("rank {} cannot use NCCL: {}", nccl.first_rank_without, nccl.why);
  return "";
}

std::string through_host(int world_size, const std::string& why) {
  return fmt::format(
      "ddpscope: --devices {}: {}, so gradients travel through host memory over MPI; correct, and slower than NCCL "
      "with a GPU per rank",
      world_size, why);
}

GradTransportChoice over_nccl(int world_size) {
  return {GradTransport::kNccl,
          fmt::format("ddpscope: --devices {}: NCCL averages the gradients on the GPUs, one rank per GPU", world_size)};
}

}  // namespace

GradTransportChoice choose_grad_transport(ProcessGroupBackend backend, const GpuPlacement& placement, int world_size,
                                          const NcclReadiness& nccl) {
  const std::string blocked = nccl_blocked(placement, world_size, nccl);
  switch (backend) {
    case ProcessGroupBackend::kMpi:
      if (world_size == 1) return {};
      return {GradTransport::kHostMpi,
              through_host(world_size, blocked.empty() ? "--process-group-backend mpi" : blocked)};
    case ProcessGroupBackend::kNccl:
      if (!blocked.empty()) {
        throw UsageError(fmt::format(
            "--process-group-backend nccl: {}; use --process-group-backend mpi (or auto, which picks it) instead",
            blocked));
      }
      return over_nccl(world_size);
    case ProcessGroupBackend::kAuto:
      if (world_size == 1) return {};
      if (!blocked.empty()) return {GradTransport::kHostMpi, through_host(world_size, blocked)};
      return over_nccl(world_size);
  }
  return {};
}

}  // namespace ddp
