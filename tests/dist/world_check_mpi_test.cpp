// check_world and check_same_config in a real world of 2 and 3 ranks.
#include <gtest/gtest.h>

#include <string>

#include "ddpscope/error.h"
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

TEST(CheckSameConfigMpi, NamesTheRanksThatDifferFromRankZero) {
  auto comm = make_mpi_communicator();
  check_same_config(*comm, 0x1234);
  try {
    check_same_config(*comm, comm->rank() == 0 ? 0xabc : 0xdef);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    const std::string ranks = comm->size() == 2 ? "1" : "1, 2";
    EXPECT_EQ(std::string(e.what()), "the ranks were started with different configurations: rank(s) " + ranks +
                                         " differ from rank 0 (configuration hash 0000000000000abc); start every "
                                         "rank with the same options");
  }
}

}  // namespace
}  // namespace ddp
