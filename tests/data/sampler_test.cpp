#include "data/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

namespace ddp {
namespace {

bool is_permutation_of_range(std::vector<int64_t> order) {
  std::sort(order.begin(), order.end());
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

TEST(EpochOrder, IdentityWithoutShuffle) {
  std::vector<int64_t> expected(100);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(epoch_order(100, false, 7, 3), expected);
  EXPECT_TRUE(epoch_order(0, true, 7, 3).empty());
  EXPECT_EQ(epoch_order(1, true, 7, 3), std::vector<int64_t>{0});
}

TEST(EpochOrder, ShuffleIsAPermutationPerEpochAndSeed) {
  const auto e0 = epoch_order(5000, true, 1, 0);
  const auto e1 = epoch_order(5000, true, 1, 1);
  EXPECT_TRUE(is_permutation_of_range(e0));
  EXPECT_TRUE(is_permutation_of_range(e1));
  EXPECT_NE(e0, e1);
  EXPECT_EQ(e0, epoch_order(5000, true, 1, 0));
  EXPECT_NE(e0, epoch_order(5000, true, 2, 0));
  // Well mixed: few elements stay in place (1 expected for a random permutation).
  int fixed = 0;
  for (int64_t i = 0; i < 5000; ++i) fixed += e0[i] == i;
  EXPECT_LT(fixed, 10);
}

TEST(EpochOrder, EveryPositionIsReachable) {
  // Over many epochs, element 0 lands in each of 4 positions roughly equally often.
  int counts[4] = {};
  for (int64_t epoch = 0; epoch < 4000; ++epoch) {
    const auto order = epoch_order(4, true, 3, epoch);
    counts[std::find(order.begin(), order.end(), 0) - order.begin()]++;
  }
  for (const int c : counts) EXPECT_NEAR(c, 1000, 120);
}

TEST(ShardForRank, DisjointEqualAndCoveringWhenDivisible) {
  const auto order = epoch_order(300, true, 5, 2);
  std::set<int64_t> seen;
  for (int rank = 0; rank < 3; ++rank) {
    const auto shard = shard_for_rank(order, 3, rank);
    ASSERT_EQ(shard.size(), 100u);
    for (size_t k = 0; k < shard.size(); ++k) {
      EXPECT_EQ(shard[k], order[rank + 3 * k]);
      EXPECT_TRUE(seen.insert(shard[k]).second) << "index " << shard[k] << " twice";
    }
  }
  EXPECT_EQ(seen.size(), 300u);
  EXPECT_EQ(shard_for_rank(order, 1, 0), order);
}

TEST(ShardForRank, PadsLikePyTorch) {
  // 5000 over 3: 1667 each, total 5001, the one padded index is order[0], last on rank 2.
  const auto order = epoch_order(5000, true, 0, 0);
  std::set<int64_t> seen;
  for (int rank = 0; rank < 3; ++rank) {
    const auto shard = shard_for_rank(order, 3, rank);
    ASSERT_EQ(shard.size(), 1667u);
    seen.insert(shard.begin(), shard.end());
  }
  EXPECT_EQ(seen.size(), 5000u);
  EXPECT_EQ(shard_for_rank(order, 3, 2).back(), order[0]);
  EXPECT_EQ(shard_for_rank(order, 3, 0).back(), order[4998]);
  EXPECT_EQ(shard_for_rank(order, 3, 1).back(), order[4999]);
}

TEST(ShardForRank, WrapsSeveralTimesOnTinyEpochs) {
  // PyTorch: n=2, world=5 -> padded [a, b, a, b, a], one index per rank.
  const std::vector<int64_t> order = {8, 3};
  const std::vector<int64_t> expected = {8, 3, 8, 3, 8};
  for (int rank = 0; rank < 5; ++rank) EXPECT_EQ(shard_for_rank(order, 5, rank), std::vector<int64_t>{expected[rank]});
  // n=3, world=8: [a b c a b c a b].
  const std::vector<int64_t> three = {0, 1, 2};
  EXPECT_EQ(shard_for_rank(three, 8, 6), std::vector<int64_t>{0});
  EXPECT_EQ(shard_for_rank(three, 8, 7), std::vector<int64_t>{1});
  // n=7, world=3: 3 each, padding 2 -> [.. 6, 0, 1]; rank 1 gets positions 1, 4, 7.
  std::vector<int64_t> seven(7);
  std::iota(seven.begin(), seven.end(), 10);
  EXPECT_EQ(shard_for_rank(seven, 3, 1), (std::vector<int64_t>{11, 14, 10}));
  EXPECT_EQ(shard_for_rank(seven, 3, 2), (std::vector<int64_t>{12, 15, 11}));
  EXPECT_TRUE(shard_for_rank({}, 4, 3).empty());
}

TEST(ShardForRank, BadRankIsAnInternalError) {
  const std::vector<int64_t> order = {0, 1, 2};
  EXPECT_DEATH(shard_for_rank(order, 0, 0), "rank outside");
  EXPECT_DEATH(shard_for_rank(order, 2, 2), "rank outside");
  EXPECT_DEATH(shard_for_rank(order, 2, -1), "rank outside");
}

}  // namespace
}  // namespace ddp
