#pragma once
// Which samples an epoch visits, in which order, on which rank.
#include <cstdint>
#include <vector>

namespace ddp {

// 0..size-1, or a permutation that is a pure function of (seed, epoch) when shuffle.
std::vector<int64_t> epoch_order(int64_t size, bool shuffle, uint64_t seed, int64_t epoch);

// PyTorch DistributedSampler (drop_last=False): order padded by wrap-around to a multiple
// of world, rank takes positions rank, rank+world, ...
std::vector<int64_t> shard_for_rank(const std::vector<int64_t>& order, int world, int rank);

}  // namespace ddp
