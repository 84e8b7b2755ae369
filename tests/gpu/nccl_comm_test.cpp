// NCCL for GPU ranks (gpu/nccl_comm.h): loaded on first use, with every function the project
// calls; a communicator's id made without a GPU; on a GPU, a world of one that averages in
// place on its stream (allreduce, and ZeRO-1's reduce and broadcast of ranges), and a wait
// for the device that ends with exit 4 once past its bound, also while a CUDA graph holds
// the communicator's work (NCCL 2.26 and later abort only once no graph holds it).
#include "gpu/nccl_comm.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ddpscope/error.h"
#include "gpu/cuda_graph.h"
#include "gpu/cuda_stream.h"
#include "gpu/device_array.h"
#include "gpu/nccl_library.h"
#include "gpu_test_support.h"

namespace ddp {
namespace {

TEST(NcclLibrary, IsLoadedOnFirstUseWithEveryFunctionTheProjectCalls) {
  // This test links the engine as ddpscope does: a run that never averages over NCCL does
  // not load it either.
  EXPECT_EQ(dlopen(kNcclLibrary, RTLD_NOW | RTLD_NOLOAD), nullptr) << kNcclLibrary << " was loaded at start";
  EXPECT_EQ(nccl_unavailable(), "") << "the development machines' CUDA toolkit has NCCL";
  const Nccl& api = nccl();
#define DDP_EXPECT_LOADED(function) EXPECT_NE(api.function, nullptr) << #function
  DDP_NCCL_FUNCTIONS(DDP_EXPECT_LOADED)
#undef DDP_EXPECT_LOADED
  EXPECT_GE(api.version, NCCL_VERSION(2, 10, 0)) << "ncclAvg";
  EXPECT_EQ(std::string(api.ncclGetErrorString(ncclSuccess)), "no error");
  EXPECT_NE(dlopen(kNcclLibrary, RTLD_NOW | RTLD_NOLOAD), nullptr);
}

TEST(NcclLibrary, MakesADifferentIdForEachCommunicatorWithoutAGpu) {
  const NcclId a = new_nccl_id(), b = new_nccl_id();
  EXPECT_NE(a, b);
  EXPECT_NE(a, NcclId{});
}

// Without a GPU, joining fails with NCCL's reason and exit 4, not a crash or a hang.
TEST(NcclComm, JoiningWithoutAGpuIsADistributedErrorNamingTheCall) {
  std::string reason;
  if (testing::first_gpu(reason) != nullptr) GTEST_SKIP() << "a GPU is visible: the other tests join";
  try {
    NcclComm comm(new_nccl_id(), 1, 0);
    ADD_FAILURE() << "joined without a GPU";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("NCCL: ncclCommInitRank failed: "), std::string::npos) << e.what();
  }
}

TEST(NcclComm, AWorldOfOneAveragesInPlaceOnItsStream) {
  DDP_REQUIRE_GPU();
  check_cuda(cudaSetDevice(0), "cudaSetDevice");
  NcclComm comm(new_nccl_id(), 1, 0);
  EXPECT_EQ(comm.version().substr(0, 2), "2.");
  const std::vector<float> values = {1.5f, -2.25f, 3.0e-8f, 7.0f};
  DeviceArray<float> data(values.size());
  data.copy_from(values.data(), values.size());
  CudaStream stream;
  comm.allreduce_mean(data.data(), values.size(), stream.get());
  comm.synchronize(stream.get(), 10.0);
  EXPECT_EQ(data.to_host(), values);  // the mean of one rank's values is its values
  // ZeRO-1's halves, one range: this rank's, reduced to it and broadcast from it.
  const std::vector<int> counts = {static_cast<int>(values.size())};
  comm.reduce_scatter_mean(data.data(), counts, stream.get());
  comm.allgather_ranges(data.data(), counts, stream.get());
  comm.synchronize(stream.get(), 10.0);
  EXPECT_EQ(data.to_host(), values);
}

TEST(NcclComm, AWaitPastItsBoundAbortsTheCommunicatorWithCode4) {
  DDP_REQUIRE_GPU();
  check_cuda(cudaSetDevice(0), "cudaSetDevice");
  NcclComm comm(new_nccl_id(), 1, 0);
  CudaStream stream;
  // The stream's work outlasts the bound, as an allreduce waiting for a stopped rank would.
  check_cuda(cudaLaunchHostFunc(
                 stream.get(), [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(800)); }, nullptr),
             "cudaLaunchHostFunc");
  const auto start = std::chrono::steady_clock::now();
  try {
    comm.synchronize(stream.get(), 0.2);
    ADD_FAILURE() << "the wait outlasted its bound without an error";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("has not finished after 0.2 s (DDPSCOPE_COMM_TIMEOUT_S)"), std::string::npos)
        << e.what();
  }
  // The bound and the abort; a margin for the abort's own freeing of NCCL's memory.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  check_cuda(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
}

TEST(NcclComm, AWaitPastItsBoundAbortsOnceTheGraphsHoldingItsWorkAreReleased) {
  DDP_REQUIRE_GPU();
  check_cuda(cudaSetDevice(0), "cudaSetDevice");
  NcclComm comm(new_nccl_id(), 1, 0);
  CudaStream stream;
  DeviceArray<float> data(1024);
  comm.allreduce_mean(data.data(), data.count(), stream.get());  // eagerly first, as the step does
  comm.synchronize(stream.get(), 10.0);
  auto graph =
      std::make_unique<CudaGraph>(stream.get(), [&] { comm.allreduce_mean(data.data(), data.count(), stream.get()); });
  check_cuda(cudaLaunchHostFunc(
                 stream.get(), [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(800)); }, nullptr),
             "cudaLaunchHostFunc");
  graph->launch(stream.get());
  bool released = false;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(comm.synchronize(stream.get(), 0.2,
                                [&] {
                                  graph.reset();
                                  released = true;
                                }),
               DistributedError);
  EXPECT_TRUE(released);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0)
      << "the abort waited for the graph";
  check_cuda(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
}

}  // namespace
}  // namespace ddp
