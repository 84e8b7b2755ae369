#include "dist/gather.h"

#include <algorithm>

namespace ddp {
namespace {

// keep_everywhere false: ranks other than zero keep one part at a time, not the whole.
std::vector<std::vector<std::byte>> gather(Communicator& comm, std::span<const std::byte> mine, bool keep_everywhere) {
  const std::vector<uint64_t> sizes = comm.allgather(static_cast<uint64_t>(mine.size()));
  std::vector<std::vector<std::byte>> parts;
  for (int r = 0; r < comm.size(); ++r) {
    std::vector<std::byte> part(sizes[r]);
    if (r == comm.rank()) std::copy(mine.begin(), mine.end(), part.begin());
    if (comm.size() > 1 && !part.empty()) comm.broadcast(part, r);
    if (keep_everywhere || comm.rank() == 0) parts.push_back(std::move(part));
  }
  return parts;
}

}  // namespace

std::vector<std::vector<std::byte>> gather_at_rank_zero(Communicator& comm, std::span<const std::byte> mine) {
  return gather(comm, mine, /*keep_everywhere=*/false);
}

std::vector<std::vector<std::byte>> gather_at_every_rank(Communicator& comm, std::span<const std::byte> mine) {
  return gather(comm, mine, /*keep_everywhere=*/true);
}

}  // namespace ddp
