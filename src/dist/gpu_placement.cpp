#include "dist/gpu_placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "base/check.h"
#include "ddpscope/error.h"

namespace ddp {

GpuPlacement place_on_gpus(const std::vector<RankGpus>& ranks, int rank) {
  DDP_CHECK(rank >= 0 && rank < static_cast<int>(ranks.size()), "rank out of range");
  GpuPlacement placement;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].visible_gpus <= 0) {
      throw UsageError(fmt::format(
          "--accelerator cuda: rank {} sees no GPU on its host; every host of the job needs at least one visible "
          "GPU (check CUDA_VISIBLE_DEVICES there), or use --accelerator cpu",
          r));
    }
    // r's local rank: how many ranks before it share its host.
    const auto before = std::count_if(ranks.begin(), ranks.begin() + static_cast<std::ptrdiff_t>(r),
                                      [&](const RankGpus& other) { return other.host == ranks[r].host; });
    const auto on_host =
        std::count_if(ranks.begin(), ranks.end(), [&](const RankGpus& other) { return other.host == ranks[r].host; });
    const int gpus = ranks[r].visible_gpus;
    const int per_gpu = static_cast<int>((on_host + gpus - 1) / gpus);
    placement.max_ranks_per_gpu = std::max(placement.max_ranks_per_gpu, per_gpu);
    if (static_cast<int>(r) == rank) {
      placement.gpu = static_cast<int>(before % gpus);
      // Local ranks gpu, gpu + gpus, gpu + 2 gpus, ... below on_host.
      placement.ranks_on_this_gpu = static_cast<int>((on_host - placement.gpu + gpus - 1) / gpus);
    }
  }
  if (ranks.size() > 1) {
    placement.transport = placement.max_ranks_per_gpu > 1 ? GradTransport::kHostMpi : GradTransport::kNccl;
  }
  return placement;
}

GpuPlacement place_on_gpus(Communicator& comm, int visible_gpus) {
  const std::vector<uint64_t> hosts = comm.allgather(static_cast<uint64_t>(std::hash<std::string>{}(comm.host_name())));
  const std::vector<uint64_t> gpus = comm.allgather(static_cast<uint64_t>(std::max(visible_gpus, 0)));
  std::vector<RankGpus> ranks(hosts.size());
  for (std::size_t r = 0; r < ranks.size(); ++r) ranks[r] = {hosts[r], static_cast<int>(gpus[r])};
  return place_on_gpus(ranks, comm.rank());
}

}  // namespace ddp
