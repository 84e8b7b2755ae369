#pragma once
// NCCL, loaded on first use with dlopen, as cuBLASLt is: a build finds NCCL's header (in the
// CUDA toolkit on the development machines), and a run takes the libnccl.so.2 of wherever the
// machine keeps it (a system package, or the nvidia-nccl wheel's folder on LD_LIBRARY_PATH).
// A process that never averages over NCCL never loads it.
#include <nccl.h>

namespace ddp {

#define DDP_NCCL_FUNCTIONS(X) \
  X(ncclGetVersion);          \
  X(ncclGetErrorString);      \
  X(ncclGetLastError);        \
  X(ncclGetUniqueId);         \
  X(ncclCommInitRank);        \
  X(ncclCommDestroy);         \
  X(ncclCommAbort);           \
  X(ncclCommGetAsyncError);   \
  X(ncclAllReduce);           \
  X(ncclReduce);              \
  X(ncclBroadcast);           \
  X(ncclGroupStart);          \
  X(ncclGroupEnd);

struct Nccl {
#define DDP_NCCL_MEMBER(name) decltype(&::name) name = nullptr
  DDP_NCCL_FUNCTIONS(DDP_NCCL_MEMBER)
#undef DDP_NCCL_MEMBER
  int version = 0;  // ncclGetVersion's: 22807 for 2.28.7
};

inline constexpr const char* kNcclLibrary = "libnccl.so.2";

// Loads the library once; throws UsageError naming it, the loader's reason and what to
// install when it cannot (a later call tries again), or when it is older than the header's
// NCCL major version.
const Nccl& nccl();

}  // namespace ddp
