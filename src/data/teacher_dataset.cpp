#include "data/teacher_dataset.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/check.h"
#include "data/normal_rows.h"
#include "ddpscope/error.h"
#include "ddpscope/random.h"

namespace ddp {
namespace {

// Counter ranges (hi) within the teacher's key, 2^32 element groups apart.
constexpr uint64_t kHiLayer1 = uint64_t{1} << 32;
constexpr uint64_t kHiLayer2 = uint64_t{2} << 32;
constexpr uint64_t kHiProbe = uint64_t{4} << 32;
// Inputs used once to measure the raw output's mean and spread.
constexpr int64_t kProbeSamples = 4096;

}  // namespace

double TeacherDataset::setup_floats(int64_t input_dim, int64_t output_dim) {
  const double in = static_cast<double>(input_dim), out = static_cast<double>(output_dim);
  // w1t_ and w1 (I x kHidden each), b1_, w2_ (O x kHidden), b2_, scale_, px, py.
  return 2 * in * kHidden + kHidden + out * kHidden + 2 * out + kProbeSamples * (in + out);
}

TeacherDataset::TeacherDataset(int64_t size, int64_t input_dim, int64_t output_dim, uint64_t seed)
    : size_(size),
      input_dim_(input_dim),
      output_dim_(output_dim),
      key_(stream_key(seed, kStreamTeacher)),
      w1t_(input_dim * kHidden),
      b1_(kHidden),
      w2_(output_dim * kHidden),
      b2_(output_dim, 0.0f),
      scale_(output_dim, 1.0f) {
  // He-style scales keep the hidden layer alive for x ~ N(0,1); the bias spreads the kinks.
  std::vector<int64_t> rows(std::max(kHidden, kProbeSamples));
  std::iota(rows.begin(), rows.end(), 0);
  std::vector<float> w1(kHidden * input_dim);
  normal_rows(key_, kHiLayer1, std::span(rows).first(kHidden), w1.data(), input_dim, b1_.data(), 1);
  const float s1 = std::sqrt(2.0f / static_cast<float>(input_dim));
  for (int64_t h = 0; h < kHidden; ++h) {
    for (int64_t i = 0; i < input_dim; ++i) w1t_[i * kHidden + h] = s1 * w1[h * input_dim + i];
    b1_[h] *= 0.5f;
  }
  // Layer 2 needs no scale or bias of its own: the standardisation below sets both.
  normal_rows(key_, kHiLayer2, std::span(rows).first(output_dim), w2_.data(), kHidden, nullptr, 0);

  // Standardise each output over probe inputs (drawn apart from the samples): y = (raw - mean) / std.
  std::vector<float> px(kProbeSamples * input_dim), py(kProbeSamples * output_dim);
  normal_rows(key_, kHiProbe, std::span(rows).first(kProbeSamples), px.data(), input_dim, nullptr, 0);
  for (int64_t n = 0; n < kProbeSamples; ++n) teacher_forward(net(), &px[n * input_dim], 0.0f, &py[n * output_dim]);
  for (int64_t o = 0; o < output_dim; ++o) {
    double sum = 0, sum2 = 0;
    for (int64_t n = 0; n < kProbeSamples; ++n) {
      sum += py[n * output_dim + o];
      sum2 += double{py[n * output_dim + o]} * py[n * output_dim + o];
    }
    const double mean = sum / kProbeSamples;
    const double var = std::max(sum2 / kProbeSamples - mean * mean, 1e-12);
    scale_[o] = static_cast<float>(1.0 / std::sqrt(var));
    b2_[o] = static_cast<float>(-mean / std::sqrt(var));
  }
}

void TeacherDataset::teacher(const float* x, float* y) const { teacher_forward(net(), x, 0.0f, y); }

TeacherNet TeacherDataset::net() const {
  return {.w1t = w1t_.data(),
          .b1 = b1_.data(),
          .w2 = w2_.data(),
          .b2 = b2_.data(),
          .scale = scale_.data(),
          .input_dim = input_dim_,
          .output_dim = output_dim_};
}

void TeacherDataset::fill(int64_t /*epoch*/, std::span<const int64_t> indices, float* x, float* y) const {
  for (const int64_t index : indices) {
    DDP_CHECK_GE(index, 0, "sample index out of range");
    DDP_CHECK_LT(index, size_, "sample index out of range");
  }
  // Inputs to x and the unit noise to y, then y = teacher(x) + kNoise * noise in place.
  normal_rows(key_, kSamplesHi, indices, x, input_dim_, y, output_dim_);
  const TeacherNet teacher = net();
  for (size_t j = 0; j < indices.size(); ++j) teacher_forward(teacher, &x[j * input_dim_], kNoise, &y[j * output_dim_]);
}

}  // namespace ddp
