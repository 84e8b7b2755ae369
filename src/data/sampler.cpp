#include "data/sampler.h"

#include <numeric>
#include <utility>

#include "base/check.h"
#include "ddpscope/error.h"
#include "ddpscope/random.h"

namespace ddp {

std::vector<int64_t> epoch_order(int64_t size, bool shuffle, uint64_t seed, int64_t epoch) {
  DDP_CHECK_GE(size, 0);
  std::vector<int64_t> order(size);
  std::iota(order.begin(), order.end(), 0);
  if (!shuffle) return order;
  // Fisher-Yates with counter-based draws: draw i is random_u64(key, epoch, i). The modulo's
  // bias is below size / 2^64, far under anything measurable.
  const uint64_t key = stream_key(seed, kStreamShuffle);
  for (int64_t i = size - 1; i > 0; --i) {
    const uint64_t j =
        random_u64(key, static_cast<uint64_t>(epoch), static_cast<uint64_t>(i)) % static_cast<uint64_t>(i + 1);
    std::swap(order[i], order[j]);
  }
  return order;
}

std::vector<int64_t> shard_for_rank(const std::vector<int64_t>& order, int world, int rank) {
  DDP_CHECK_GT(world, 0, "rank outside [0, world): the world is empty");
  DDP_CHECK_GE(rank, 0, "rank outside [0, world)");
  DDP_CHECK_LT(rank, world, "rank outside [0, world)");
  // As torch.utils.data.DistributedSampler(drop_last=False): total = ceil(n / W) * W, the
  // padding repeats the order from its start (wrapping again when it is longer than n).
  const int64_t n = static_cast<int64_t>(order.size());
  const int64_t per_rank = (n + world - 1) / world;
  std::vector<int64_t> shard;
  shard.reserve(per_rank);
  for (int64_t k = 0; k < per_rank; ++k) {
    const int64_t position = rank + k * world;
    shard.push_back(order[position % n]);
  }
  return shard;
}

}  // namespace ddp
