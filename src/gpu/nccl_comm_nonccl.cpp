// A build without NCCL's header (nccl.h): GPU ranks average through host memory.
#include "base/check.h"
#include "ddpscope/error.h"
#include "gpu/nccl_comm.h"

namespace ddp {
namespace {

constexpr const char* kNoNccl =
    "this ddpscope was built without NCCL (CMake found no nccl.h): install NCCL's development files (or give "
    "-DNCCL_ROOT=...) and build again, or average through host memory with --process-group-backend mpi";

}  // namespace

std::string nccl_unavailable() { return kNoNccl; }

const char* nccl_library_name() { return ""; }

NcclId new_nccl_id() { throw UsageError(kNoNccl); }

NcclComm::NcclComm(const NcclId&, int, int) { throw UsageError(kNoNccl); }
NcclComm::~NcclComm() = default;
void NcclComm::allreduce_mean(float*, std::size_t, CUstream_st*) { DDP_CHECK(false, "no NCCL in this build"); }
void NcclComm::reduce_scatter_mean(float*, std::span<const int>, CUstream_st*) {
  DDP_CHECK(false, "no NCCL in this build");
}
void NcclComm::allgather_ranges(float*, std::span<const int>, CUstream_st*) {
  DDP_CHECK(false, "no NCCL in this build");
}
void NcclComm::synchronize(CUstream_st*, double, const std::function<void()>&, const std::function<int64_t()>&) {
  DDP_CHECK(false, "no NCCL in this build");
}
void NcclComm::abort() {}
void NcclComm::abort_with(const std::string& why, const std::function<void()>&) { throw DistributedError(why); }
std::string NcclComm::version() const { return ""; }

}  // namespace ddp
