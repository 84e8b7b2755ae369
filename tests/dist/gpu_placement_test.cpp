// Which GPU each rank takes and which transport the world's gradients use.
#include "dist/gpu_placement.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ddpscope/error.h"

namespace ddp {
namespace {

constexpr uint64_t kHostA = 0xa;
constexpr uint64_t kHostB = 0xb;

std::vector<int> gpus_of_all(const std::vector<RankGpus>& ranks) {
  std::vector<int> gpus;
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) gpus.push_back(place_on_gpus(ranks, r).gpu);
  return gpus;
}

TEST(GpuPlacement, OneRankTakesTheFirstGpuAndCommunicatesNothing) {
  const GpuPlacement p = place_on_gpus({{kHostA, 4}}, 0);
  EXPECT_EQ(p.gpu, 0);
  EXPECT_EQ(p.transport, GradTransport::kNone);
}

TEST(GpuPlacement, AGpuPerRankOnEachHostIsNcclWithLocalRanksAsDevices) {
  const std::vector<RankGpus> ranks = {{kHostA, 2}, {kHostA, 2}, {kHostB, 2}, {kHostB, 2}};
  EXPECT_EQ(gpus_of_all(ranks), (std::vector<int>{0, 1, 0, 1}));
  for (int r = 0; r < 4; ++r) {
    const GpuPlacement p = place_on_gpus(ranks, r);
    EXPECT_EQ(p.transport, GradTransport::kNccl) << "rank " << r;
    EXPECT_EQ(p.ranks_on_this_gpu, 1);
    EXPECT_EQ(p.max_ranks_per_gpu, 1);
  }
}

TEST(GpuPlacement, LocalRankIsTheOrderAmongTheRanksOfTheSameHost) {
  // srun and mpirun --map-by node interleave hosts: ranks 0, 2 on A and 1, 3 on B.
  const std::vector<RankGpus> ranks = {{kHostA, 2}, {kHostB, 2}, {kHostA, 2}, {kHostB, 2}};
  EXPECT_EQ(gpus_of_all(ranks), (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(place_on_gpus(ranks, 3).transport, GradTransport::kNccl);
}

TEST(GpuPlacement, MoreRanksThanGpusShareThemRoundRobinThroughHostMemory) {
  // The seed's devices=3 on a machine with one GPU, and with two.
  const std::vector<RankGpus> one_gpu(3, {kHostA, 1});
  EXPECT_EQ(gpus_of_all(one_gpu), (std::vector<int>{0, 0, 0}));
  const GpuPlacement p = place_on_gpus(one_gpu, 1);
  EXPECT_EQ(p.ranks_on_this_gpu, 3);
  EXPECT_EQ(p.max_ranks_per_gpu, 3);
  EXPECT_EQ(p.transport, GradTransport::kHostMpi);

  const std::vector<RankGpus> two_gpus(3, {kHostA, 2});
  EXPECT_EQ(gpus_of_all(two_gpus), (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(place_on_gpus(two_gpus, 0).ranks_on_this_gpu, 2);
  EXPECT_EQ(place_on_gpus(two_gpus, 1).ranks_on_this_gpu, 1);
  EXPECT_EQ(place_on_gpus(two_gpus, 2).max_ranks_per_gpu, 2);
}

TEST(GpuPlacement, OneSharedHostPutsTheWholeWorldOnHostMemory) {
  // Host A has a GPU per rank, host B does not: a collective needs one transport, so A's
  // ranks, which NCCL would take, go through host memory too.
  const std::vector<RankGpus> ranks = {{kHostA, 2}, {kHostA, 2}, {kHostB, 1}, {kHostB, 1}};
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(place_on_gpus(ranks, r).transport, GradTransport::kHostMpi) << "rank " << r;
    EXPECT_EQ(place_on_gpus(ranks, r).max_ranks_per_gpu, 2) << "rank " << r;
  }
  EXPECT_EQ(place_on_gpus(ranks, 0).ranks_on_this_gpu, 1);
  EXPECT_EQ(place_on_gpus(ranks, 3).ranks_on_this_gpu, 2);
}

TEST(GpuPlacement, AHostWithoutAGpuIsRefusedNamingTheRank) {
  const std::vector<RankGpus> ranks = {{kHostA, 1}, {kHostB, 0}};
  for (int r = 0; r < 2; ++r) {  // every rank refuses, so none waits for the others in a collective
    try {
      place_on_gpus(ranks, r);
      ADD_FAILURE() << "no error on rank " << r;
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()),
                "--accelerator cuda: rank 1 sees no GPU on its host; every host of the job needs at least one visible "
                "GPU (check CUDA_VISIBLE_DEVICES there), or use --accelerator cpu");
    }
  }
}

TEST(GpuPlacement, GatheredOverALocalCommunicatorIsOneRankAlone) {
  auto comm = make_local_communicator();
  const GpuPlacement p = place_on_gpus(*comm, 8);
  EXPECT_EQ(p.gpu, 0);
  EXPECT_EQ(p.transport, GradTransport::kNone);
}

}  // namespace
}  // namespace ddp
