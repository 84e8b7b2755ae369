#include "data/random_dataset.h"

#include "base/check.h"
#include "data/normal_rows.h"
#include "ddpscope/error.h"
#include "ddpscope/random.h"

namespace ddp {

RandomDataset::RandomDataset(int64_t size, int64_t input_dim, int64_t output_dim, uint64_t seed)
    : size_(size), input_dim_(input_dim), output_dim_(output_dim), key_(stream_key(seed, kStreamData)) {}

void RandomDataset::fill(int64_t epoch, std::span<const int64_t> indices, float* x, float* y) const {
  for (const int64_t index : indices) {
    DDP_CHECK_GE(index, 0, "sample index out of range");
    DDP_CHECK_LT(index, size_, "sample index out of range");
  }
  // Counter: hi = (epoch, element group), lo = index. A sample's row is x then y.
  normal_rows(key_, counter_hi(epoch), indices, x, input_dim_, y, output_dim_);
}

}  // namespace ddp
