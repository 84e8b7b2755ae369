// check_world, check_same_config and the GPU placement in a real world of 2 and 3 ranks.
#include <gtest/gtest.h>

#include <string>

#include "ddpscope/error.h"
#include "dist/gpu_placement.h"
#include "dist/launcher.h"
#include "dist/mpi_communicator.h"

namespace ddp {
namespace {

TEST(CheckWorldMpi, AcceptsMatchingOrOmittedDevicesAndRefusesOthersOnEveryRank) {
  auto comm = make_mpi_communicator();
  const int w = comm->size();
  check_world(*comm, 0, 1);
  check_world(*comm, w, 1);
  try {
    check_world(*comm, w + 1, 1);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "--devices " + std::to_string(w + 1) + " but this job was started with " +
                                         std::to_string(w) + " rank(s) (mpirun -np / srun -n " + std::to_string(w) +
                                         "); omit --devices or make them agree");
  }
}

TEST(CheckSameConfigMpi, NamesTheRanksThatDifferFromRankZeroAndTheOption) {
  auto comm = make_mpi_communicator();
  check_same_config(*comm, {{"batch_size", "16"}, {"lr", "0.01"}});
  try {
    check_same_config(*comm, {{"batch_size", comm->rank() == 0 ? "16" : "32"}, {"lr", "0.01"}});
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    const std::string ranks = comm->size() == 2 ? "1" : "1, 2";
    EXPECT_EQ(std::string(e.what()),
              "the ranks were started with different options: rank 1 has --batch-size 32 where rank 0 has "
              "--batch-size 16 (rank(s) " +
                  ranks + " differ from rank 0); start every rank with the same options");
  }
}

TEST(GpuPlacementMpi, RanksOfOneHostTakeItsGpusInRankOrderOrShareThemThroughHostMemory) {
  auto comm = make_mpi_communicator();
  const int w = comm->size();
  const GpuPlacement own = place_on_gpus(*comm, w);  // as many GPUs as ranks: one each, NCCL
  EXPECT_EQ(own.gpu, comm->rank());
  EXPECT_EQ(own.transport, GradTransport::kNccl);
  const GpuPlacement shared = place_on_gpus(*comm, 1);  // the one-GPU machine
  EXPECT_EQ(shared.gpu, 0);
  EXPECT_EQ(shared.max_ranks_per_gpu, w);
  EXPECT_EQ(shared.transport, GradTransport::kHostMpi);
}

}  // namespace
}  // namespace ddp
