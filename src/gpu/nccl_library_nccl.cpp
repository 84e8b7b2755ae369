#include <fmt/format.h>

#include <string>

#include "ddpscope/error.h"
#include "gpu/loaded_library.h"
#include "gpu/nccl_library.h"

namespace ddp {
namespace {

Nccl load() {
  const LoadedLibrary library(kNcclLibrary, "GPU ranks averaging over NCCL need it",
                              "install NCCL 2 (the libnccl2 package, or the nvidia-nccl wheel) or add the folder that "
                              "has it to LD_LIBRARY_PATH; or average through host memory with "
                              "--process-group-backend mpi");
  const std::string not_it = fmt::format("it is not an NCCL {}", NCCL_MAJOR);
  Nccl api;
#define DDP_NCCL_LOAD(function) \
  api.function = reinterpret_cast<decltype(&::function)>(library.symbol(#function, not_it))
  DDP_NCCL_FUNCTIONS(DDP_NCCL_LOAD)
#undef DDP_NCCL_LOAD
  // ncclAvg needs 2.10; the header's own version is what the calls were compiled against.
  if (api.ncclGetVersion(&api.version) != ncclSuccess || api.version < NCCL_VERSION(NCCL_MAJOR, 10, 0)) {
    throw UsageError(fmt::format("{} is NCCL version code {}; ddpscope needs NCCL {}.10 or newer", kNcclLibrary,
                                 api.version, NCCL_MAJOR));
  }
  return api;  // the library stays loaded for the process's life
}

}  // namespace

const Nccl& nccl() {
  static const Nccl kApi = load();
  return kApi;
}

}  // namespace ddp
