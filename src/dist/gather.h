#pragma once
// Variable-sized data from every rank, for what a run gathers once at its end (trace
// spans) or per validation (metric sums). Built from broadcasts: every rank receives every
// part, which costs nothing that matters for a few megabytes once per run and needs no new
// primitive.
#include <cstddef>
#include <span>
#include <vector>

#include "dist/communicator.h"

namespace ddp {

// Collective. Rank zero gets every rank's bytes, indexed by rank; other ranks get {}.
std::vector<std::vector<std::byte>> gather_at_rank_zero(Communicator& comm, std::span<const std::byte> mine);

// Collective. Every rank gets every rank's bytes, indexed by rank.
std::vector<std::vector<std::byte>> gather_at_every_rank(Communicator& comm, std::span<const std::byte> mine);

}  // namespace ddp
