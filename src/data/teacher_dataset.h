#pragma once
// A learnable task: targets are a fixed random ReLU MLP (I -> 32 -> O) of the inputs plus
// 0.01 * N(0,1) noise. Inputs and noise depend only on (seed, index), not the epoch, so the
// dataset is a fixed set of samples; targets are scaled to mean ~0, variance ~1 per output.
// Samples are computed when asked (a few hundred flops each) rather than stored, so any
// --dataset-size costs no memory.
#include <vector>

#include "data/teacher_net.h"
#include "ddpscope/dataset.h"

namespace ddp {

class TeacherDataset : public Dataset {
 public:
  static constexpr int64_t kHidden = TeacherNet::kHidden;
  static constexpr float kNoise = 0.01f;

  TeacherDataset(int64_t size, int64_t input_dim, int64_t output_dim, uint64_t seed);
  // Floats the constructor allocates (the teacher, and probe samples while scaling it).
  static double setup_floats(int64_t input_dim, int64_t output_dim);
  int64_t size() const override { return size_; }
  int64_t input_dim() const override { return input_dim_; }
  int64_t output_dim() const override { return output_dim_; }
  void fill(int64_t epoch, std::span<const int64_t> indices, float* x, float* y) const override;

  // The scaled teacher without noise: x is (input_dim), y (output_dim).
  void teacher(const float* x, float* y) const;

  // What a GPU needs to make the same samples: the weights (pointing into this dataset), the
  // Philox key, and the samples' counter hi (the same every epoch: a fixed set of samples).
  TeacherNet net() const;
  uint64_t key() const { return key_; }
  static constexpr uint64_t kSamplesHi = uint64_t{3} << 32;

 private:
  int64_t size_, input_dim_, output_dim_;
  uint64_t key_;
  std::vector<float> w1t_;    // (I, kHidden): transposed so the hidden loop is contiguous
  std::vector<float> b1_;     // (kHidden)
  std::vector<float> w2_;     // (O, kHidden)
  std::vector<float> b2_;     // (O)
  std::vector<float> scale_;  // (O): standardises the raw output
};

}  // namespace ddp
