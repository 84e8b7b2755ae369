// Which transport a GPU world's gradients take, for each --process-group-backend.
#include "dist/grad_transport_choice.h"

#include <gtest/gtest.h>

#include <string>

#include "ddpscope/error.h"

namespace ddp {
namespace {

GpuPlacement own_gpus() { return {.gpu = 0, .ranks_on_this_gpu = 1, .max_ranks_per_gpu = 1}; }
GpuPlacement shared_gpu(int ranks) { return {.gpu = 0, .ranks_on_this_gpu = ranks, .max_ranks_per_gpu = ranks}; }
const NcclReadiness kNcclEverywhere{};

std::string refusal(ProcessGroupBackend backend, const GpuPlacement& placement, int world, const NcclReadiness& nccl) {
  try {
    choose_grad_transport(backend, placement, world, nccl);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(GradTransportChoice, AGpuPerRankWithNcclEverywhereIsNcclAndSaysSo) {
  for (const ProcessGroupBackend backend : {ProcessGroupBackend::kAuto, ProcessGroupBackend::kNccl}) {
    const GradTransportChoice c = choose_grad_transport(backend, own_gpus(), 3, kNcclEverywhere);
    EXPECT_EQ(c.transport, GradTransport::kNccl);
    EXPECT_EQ(c.line, "ddpscope: --devices 3: NCCL averages the gradients on the GPUs, one rank per GPU");
  }
}

TEST(GradTransportChoice, OneRankCommunicatesNothingUnlessNcclIsAskedFor) {
  EXPECT_EQ(choose_grad_transport(ProcessGroupBackend::kAuto, own_gpus(), 1, kNcclEverywhere).transport,
            GradTransport::kNone);
  EXPECT_EQ(choose_grad_transport(ProcessGroupBackend::kMpi, own_gpus(), 1, kNcclEverywhere).line, "");
  // A NCCL world of one: the whole path, on a machine with one GPU.
  EXPECT_EQ(choose_grad_transport(ProcessGroupBackend::kNccl, own_gpus(), 1, kNcclEverywhere).transport,
            GradTransport::kNccl);
}

TEST(GradTransportChoice, AutoFallsBackToHostMemorySayingWhy) {
  const GradTransportChoice shared =
      choose_grad_transport(ProcessGroupBackend::kAuto, shared_gpu(3), 3, kNcclEverywhere);
  EXPECT_EQ(shared.transport, GradTransport::kHostMpi);
  EXPECT_EQ(shared.line,
            "ddpscope: --devices 3: --devices 3 puts up to 3 ranks on one GPU (ranks share a host's GPUs round-robin), "
            "and NCCL takes one rank per GPU, so gradients travel through host memory over MPI; correct, and slower "
            "than NCCL with a GPU per rank");
  const GradTransportChoice missing =
      choose_grad_transport(ProcessGroupBackend::kAuto, own_gpus(), 2, {1, "libnccl.so.2 could not be loaded"});
  EXPECT_EQ(missing.transport, GradTransport::kHostMpi);
  EXPECT_NE(missing.line.find("rank 1 cannot use NCCL: libnccl.so.2 could not be loaded, so gradients travel through "
                              "host memory"),
            std::string::npos)
      << missing.line;
}

TEST(GradTransportChoice, MpiIsHostMemoryEvenWhereNcclCouldRun) {
  const GradTransportChoice c = choose_grad_transport(ProcessGroupBackend::kMpi, own_gpus(), 2, kNcclEverywhere);
  EXPECT_EQ(c.transport, GradTransport::kHostMpi);
  EXPECT_NE(c.line.find("--process-group-backend mpi, so gradients travel through host memory"), std::string::npos)
      << c.line;
}

TEST(GradTransportChoice, NcclAskedForWhereItCannotRunIsRefusedNamingWhy) {
  EXPECT_EQ(refusal(ProcessGroupBackend::kNccl, shared_gpu(2), 2, kNcclEverywhere),
            "--process-group-backend nccl: --devices 2 puts up to 2 ranks on one GPU (ranks share a host's GPUs "
            "round-robin), and NCCL takes one rank per GPU; use --process-group-backend mpi (or auto, which picks it) "
            "instead");
  EXPECT_EQ(refusal(ProcessGroupBackend::kNccl, own_gpus(), 4, {2, "no libnccl.so.2"}),
            "--process-group-backend nccl: rank 2 cannot use NCCL: no libnccl.so.2; use --process-group-backend mpi "
            "(or auto, which picks it) instead");
}

}  // namespace
}  // namespace ddp
