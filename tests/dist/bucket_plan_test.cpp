#include "dist/bucket_plan.h"

#include <gtest/gtest.h>

namespace ddp {
namespace {

// Layer sizes in floats (weight + bias): 10->64: 704, 64->64: 4160, 64->64: 4160, 64->1: 65.
const MlpShape kShape{.input_dim = 10, .hidden_size = 64, .hidden_layers = 3, .output_dim = 1};

void expect_valid_plan(const std::vector<GradBucket>& buckets, const Mlp& model, std::size_t cap,
                       std::size_t first_cap) {
  ASSERT_FALSE(buckets.empty());
  EXPECT_EQ(buckets.front().end, model.num_params());  // backward order: the tail first
  EXPECT_EQ(buckets.back().begin, 0u);
  EXPECT_EQ(buckets.front().last_layer, model.shape().num_layers() - 1);
  EXPECT_EQ(buckets.back().first_layer, 0);
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    const GradBucket& b = buckets[i];
    EXPECT_LT(b.begin, b.end);
    EXPECT_EQ(b.begin, model.layers()[b.first_layer].weight_offset);  // whole layers
    if (i + 1 < buckets.size()) {
      EXPECT_EQ(b.begin, buckets[i + 1].end);  // contiguous
      EXPECT_EQ(b.first_layer, buckets[i + 1].last_layer + 1);
    }
    const std::size_t limit = i == 0 ? std::min(cap, first_cap) : cap;
    EXPECT_TRUE(b.bytes() <= limit || b.first_layer == b.last_layer) << "bucket " << i << " over its cap";
  }
}

TEST(BucketPlan, OneBucketWhenTheModelFitsTheFirstCap) {
  Mlp model(kShape);
  const auto buckets = plan_buckets(model.layers(), kDefaultBucketCapBytes);
  ASSERT_EQ(buckets.size(), 1u);
  expect_valid_plan(buckets, model, kDefaultBucketCapBytes, kDefaultFirstBucketCapBytes);
}

TEST(BucketPlan, SmallCapsMakeContiguousBucketsOfWholeLayersInBackwardOrder) {
  Mlp model(kShape);
  // 20,000 bytes = 5,000 floats: {65 + 4160} and {4160 + 704}.
  auto buckets = plan_buckets(model.layers(), 20000, 20000);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].first_layer, 2);
  EXPECT_EQ(buckets[1].last_layer, 1);
  expect_valid_plan(buckets, model, 20000, 20000);
  // A small first bucket (PyTorch's 1 MiB, scaled down): only the last layer fits.
  buckets = plan_buckets(model.layers(), 20000, 1000);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].first_layer, 3);
  expect_valid_plan(buckets, model, 20000, 1000);
  // Caps below a layer: one layer per bucket.
  buckets = plan_buckets(model.layers(), 4, 4);
  EXPECT_EQ(buckets.size(), 4u);
  expect_valid_plan(buckets, model, 4, 4);
}

}  // namespace
}  // namespace ddp
