#include <gtest/gtest.h>

#include <vector>

#include "dist/communicator.h"

namespace ddp {
namespace {

TEST(LocalCommunicator, IsAOneRankWorldWhereSumsAreTheData) {
  auto comm = make_local_communicator();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  std::vector<float> f = {1.5f, -2.0f};
  std::vector<double> d = {3.25};
  comm->allreduce_sum(std::span<float>(f));
  comm->allreduce_sum(std::span<double>(d));
  EXPECT_EQ(f, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(d, (std::vector<double>{3.25}));
  std::vector<std::byte> bytes = {std::byte{7}};
  comm->broadcast(bytes, 0);
  comm->barrier();
  EXPECT_EQ(bytes[0], std::byte{7});
  EXPECT_EQ(comm->allgather(2.5), (std::vector<double>{2.5}));
  EXPECT_EQ(comm->allgather(uint64_t{9}), (std::vector<uint64_t>{9}));
  EXPECT_FALSE(comm->host_name().empty());
}

TEST(LocalCommunicator, TheMeanOverOneRankIsTheData) {
  auto comm = make_local_communicator();
  std::vector<float> f = {1.5f, -2.0f};
  comm->allreduce_mean(f);
  EXPECT_TRUE(comm->allreduce_mean_async(f)->test());
  EXPECT_EQ(f, (std::vector<float>{1.5f, -2.0f}));
}

}  // namespace
}  // namespace ddp
