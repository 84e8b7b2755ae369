#include "dist/bucket_plan.h"

#include <algorithm>

#include "base/check.h"
#include "ddpscope/error.h"

namespace ddp {

std::vector<GradBucket> plan_buckets(const std::vector<LinearLayout>& layers, std::size_t cap_bytes,
                                     std::size_t first_cap_bytes) {
  std::vector<GradBucket> buckets;
  const int64_t num_layers = static_cast<int64_t>(layers.size());
  for (int64_t l = num_layers - 1; l >= 0; --l) {
    const LinearLayout& layer = layers[static_cast<std::size_t>(l)];
    // Mlp's layout: weight (out*in) then bias (out), layer after layer, no gaps.
    const std::size_t begin = layer.weight_offset;
    const std::size_t end = layer.bias_offset + static_cast<std::size_t>(layer.out);
    DDP_CHECK_EQ(layer.bias_offset, begin + static_cast<std::size_t>(layer.in * layer.out));
    if (!buckets.empty()) {
      GradBucket& open = buckets.back();
      DDP_CHECK_EQ(open.begin, end, "layers must be contiguous in the flat buffer");
      const std::size_t cap = buckets.size() == 1 ? std::min(first_cap_bytes, cap_bytes) : cap_bytes;
      if ((open.end - begin) * sizeof(float) <= cap) {
        open.begin = begin;
        open.first_layer = l;
        continue;
      }
    }
    buckets.push_back({begin, end, l, l});
  }
  return buckets;
}

}  // namespace ddp
