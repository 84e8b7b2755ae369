#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <exception>
#include <thread>

#include "ddpscope/error.h"
#include "gpu/cuda_check.h"
#include "gpu/nccl_comm.h"
#include "gpu/nccl_library.h"
#include "gpu/progress_watch.h"

namespace ddp {
namespace {

static_assert(sizeof(ncclUniqueId) == kNcclIdBytes);

void check_nccl(ncclResult_t result, const char* call) {
  if (result == ncclSuccess) return;
  throw DistributedError(fmt::format("NCCL: {} failed: {} ({})", call, nccl().ncclGetErrorString(result),
                                     nccl().ncclGetLastError(nullptr)));
}

// call(begin, count, owner) for each rank's range, in rank order, as one grouped NCCL launch.
template <typename Call>
void per_range(std::span<const int> counts, const Call& call) {
  check_nccl(nccl().ncclGroupStart(), "ncclGroupStart");
  std::size_t begin = 0;
  for (std::size_t owner = 0; owner < counts.size(); ++owner) {
    const auto count = static_cast<std::size_t>(counts[owner]);
    call(begin, count, static_cast<int>(owner));
    begin += count;
  }
  check_nccl(nccl().ncclGroupEnd(), "ncclGroupEnd");
}

}  // namespace

std::string nccl_unavailable() {
  try {
    nccl();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

const char* nccl_library_name() { return kNcclLibrary; }

NcclId new_nccl_id() {
  ncclUniqueId id;
  check_nccl(nccl().ncclGetUniqueId(&id), "ncclGetUniqueId");
  NcclId bytes;
  std::memcpy(bytes.data(), &id, sizeof(id));
  return bytes;
}

NcclComm::NcclComm(const NcclId& id, int world, int rank) {
  ncclUniqueId unique;
  std::memcpy(&unique, id.data(), sizeof(unique));
  check_nccl(nccl().ncclCommInitRank(&comm_, world, unique, rank), "ncclCommInitRank");
}

NcclComm::~NcclComm() {
  if (comm_ == nullptr || aborted_) return;
  if (std::uncaught_exceptions() > 0) {
    nccl().ncclCommAbort(comm_);
  } else {
    nccl().ncclCommDestroy(comm_);
  }
}

void NcclComm::allreduce_mean(float* data, std::size_t count, CUstream_st* stream) {
  check_nccl(nccl().ncclAllReduce(data, data, count, ncclFloat32, ncclAvg, comm_, stream), "ncclAllReduce");
}

void NcclComm::reduce_scatter_mean(float* data, std::span<const int> counts, CUstream_st* stream) {
  per_range(counts, [&](std::size_t begin, std::size_t count, int owner) {
    check_nccl(nccl().ncclReduce(data + begin, data + begin, count, ncclFloat32, ncclAvg, owner, comm_, stream),
               "ncclReduce");
  });
}

void NcclComm::allgather_ranges(float* data, std::span<const int> counts, CUstream_st* stream) {
  per_range(counts, [&](std::size_t begin, std::size_t count, int owner) {
    check_nccl(nccl().ncclBroadcast(data + begin, data + begin, count, ncclFloat32, owner, comm_, stream),
               "ncclBroadcast");
  });
}

void NcclComm::synchronize(CUstream_st* stream, double timeout_s, const std::function<void()>& release_graphs,
                           const std::function<int64_t()>& progress) {
  using Clock = ProgressWatch::Clock;
  const Clock::time_point start = Clock::now();
  const auto count = [&]() -> int64_t { return progress ? progress() : 0; };
  ProgressWatch watch(timeout_s, start, count());
  // Spin briefly (a read at a logging step waits microseconds), then poll without a core.
  constexpr auto kSpin = std::chrono::milliseconds(2);
  constexpr auto kPoll = std::chrono::microseconds(100);
  for (;;) {
    const cudaError_t status = cudaStreamQuery(stream);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) check_cuda(status, "cudaStreamQuery");
    // "Not ready" is no failure, but the runtime keeps it as the thread's last error, where the
    // next launch's check (cudaGetLastError) would read it as its own: take it back out.
    const cudaError_t last = cudaGetLastError();
    if (last != cudaSuccess && last != cudaErrorNotReady) check_cuda(last, "a launch before the wait");
    ncclResult_t async = ncclSuccess;
    check_nccl(nccl().ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError");
    if (async != ncclSuccess && async != ncclInProgress) {
      abort_with(fmt::format("NCCL reported {} ({}) while the GPU averaged gradients", nccl().ncclGetErrorString(async),
                             nccl().ncclGetLastError(comm_)),
                 release_graphs);
    }
    const Clock::time_point now = Clock::now();
    if (watch.stalled(now, count())) {
      abort_with(fmt::format("the GPU's work, with its NCCL allreduces, has made no progress for {:g} s "
                             "(DDPSCOPE_COMM_TIMEOUT_S): a rank has stopped taking part in the collectives",
                             timeout_s),
                 release_graphs);
    }
    if (now - start < kSpin) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(kPoll);
    }
  }
}

void NcclComm::abort() {
  if (comm_ == nullptr || aborted_) return;
  aborted_ = true;
  nccl().ncclCommAbort(comm_);
}

void NcclComm::abort_with(const std::string& why, const std::function<void()>& release_graphs) {
  // A graph still in flight is freed when it ends, which the abort makes its kernels do.
  if (release_graphs) release_graphs();
  abort();  // its kernels return, so the process can end
  throw DistributedError(why);
}

std::string NcclComm::version() const {
  const int v = nccl().version;  // NCCL_VERSION(X, Y, Z): X * 10000 + Y * 100 + Z since 2.9
  return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

}  // namespace ddp
