#pragma once
// The seed's SimpleDataset: pure noise, new on every access. Unlike torch.randn, a value is a
// pure function of (seed, epoch, index), so it is the same whatever the ranks, loader threads
// or batch composition, and epochs still differ.
#include "ddpscope/dataset.h"

namespace ddp {

class RandomDataset : public Dataset {
 public:
  RandomDataset(int64_t size, int64_t input_dim, int64_t output_dim, uint64_t seed);
  int64_t size() const override { return size_; }
  int64_t input_dim() const override { return input_dim_; }
  int64_t output_dim() const override { return output_dim_; }
  void fill(int64_t epoch, std::span<const int64_t> indices, float* x, float* y) const override;
  // The Philox key its samples are made from: a GPU makes the same ones from it.
  uint64_t key() const { return key_; }
  // The counter hi of an epoch's samples (element group 0): new data every epoch.
  static uint64_t counter_hi(int64_t epoch) { return static_cast<uint64_t>(epoch) << 32; }

 private:
  int64_t size_, input_dim_, output_dim_;
  uint64_t key_;
};

}  // namespace ddp
