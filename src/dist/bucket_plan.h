#pragma once
// Which slices of the flat gradient buffer are all-reduced together.
// Backward finishes layer L-1 first, so bucket 0 is the tail of the buffer and each next
// bucket lies just before the previous one: buckets[i].begin == buckets[i+1].end.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ddpscope/mlp.h"

namespace ddp {

struct GradBucket {
  std::size_t begin = 0;  // [begin, end) in floats of the gradient buffer
  std::size_t end = 0;
  int64_t first_layer = 0;  // the layers it holds, first_layer..last_layer; backward
  int64_t last_layer = 0;   // finishes last_layer first and first_layer last
  std::size_t bytes() const { return (end - begin) * sizeof(float); }
};

// PyTorch DDP's defaults: bucket_cap_mb=25 and a separate 1 MiB first bucket, so that
// communication starts early in backward.
inline constexpr std::size_t kDefaultBucketCapBytes = std::size_t{25} << 20;
inline constexpr std::size_t kDefaultFirstBucketCapBytes = std::size_t{1} << 20;

// Whole layers, walked from the last: a bucket is closed before the layer that would take
// it over its cap (first_cap_bytes for bucket 0, cap_bytes after; the first cap never
// exceeds cap_bytes); a layer larger than the cap is a bucket of its own.
std::vector<GradBucket> plan_buckets(const std::vector<LinearLayout>& layers, std::size_t cap_bytes,
                                     std::size_t first_cap_bytes = kDefaultFirstBucketCapBytes);

}  // namespace ddp
