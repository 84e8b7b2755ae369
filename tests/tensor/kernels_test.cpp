#include "tensor/kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace ddp {
namespace {

// (B,O) pairs: the seed's widths, and B*O that is not a multiple of any vector width (the
// remainder loops) or smaller than one vector.
constexpr std::pair<int64_t, int64_t> kShapes[] = {{1, 1},  {3, 5},   {7, 13},  {16, 256},
                                                   {85, 1}, {85, 10}, {256, 1}, {33, 257}};

std::vector<float> random_vector(int64_t size, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(size);
  for (float& x : v) x = dist(rng);
  return v;
}

TEST(KernelsTest, BiasActivationForwardMatchesReference) {
  std::mt19937 rng(1);
  for (auto [b, o] : kShapes) {
    for (bool relu : {false, true}) {
      const std::vector<float> y0 = random_vector(b * o, rng);
      const std::vector<float> bias = random_vector(o, rng);
      std::vector<float> y = y0;
      bias_activation_forward(y.data(), bias.data(), b, o, relu);
      for (int64_t i = 0; i < b; ++i) {
        for (int64_t j = 0; j < o; ++j) {
          double want = static_cast<double>(y0[i * o + j]) + bias[j];
          if (relu) want = std::max(want, 0.0);
          ASSERT_NEAR(y[i * o + j], want, 1e-6) << "B=" << b << " O=" << o << " relu=" << relu;
        }
      }
    }
  }
}

TEST(KernelsTest, ReluAtExactlyZero) {
  // y + bias lands on exactly 0 (and on -0) in the first two columns.
  std::vector<float> y = {0.5f, -0.0f, -1.0f, 2.0f};
  const std::vector<float> bias = {-0.5f, 0.0f, 0.5f, -3.0f};
  bias_activation_forward(y.data(), bias.data(), 1, 4, true);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);  // -0 compares equal to 0; its sign is harmless (relu_backward masks it)
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_EQ(y[3], 0.0f);

  // torch's threshold_backward: the gradient where the output is exactly 0 is 0.
  std::vector<float> dy = {1.0f, 2.0f, 3.0f, 4.0f};
  const std::vector<float> out = {0.0f, -0.0f, 1e-30f, 5.0f};
  relu_backward(dy.data(), out.data(), 1, 4);
  EXPECT_EQ(dy, (std::vector<float>{0.0f, 0.0f, 3.0f, 4.0f}));
}

TEST(KernelsTest, ReluPropagatesNan) {
  std::vector<float> y = {std::numeric_limits<float>::quiet_NaN()};
  const float bias = 0.0f;
  bias_activation_forward(y.data(), &bias, 1, 1, true);
  EXPECT_TRUE(std::isnan(y[0]));
}

TEST(KernelsTest, ReluBackwardMatchesReference) {
  std::mt19937 rng(2);
  for (auto [b, o] : kShapes) {
    std::vector<float> y = random_vector(b * o, rng);
    for (int64_t i = 0; i < b * o; i += 3) y[i] = 0.0f;
    const std::vector<float> dy0 = random_vector(b * o, rng);
    std::vector<float> dy = dy0;
    relu_backward(dy.data(), y.data(), b, o);
    for (int64_t i = 0; i < b * o; ++i) {
      ASSERT_EQ(dy[i], y[i] > 0.0f ? dy0[i] : 0.0f) << "B=" << b << " O=" << o << " at " << i;
    }
  }
}

TEST(KernelsTest, BiasGradAccumulates) {
  std::mt19937 rng(3);
  for (auto [b, o] : kShapes) {
    const std::vector<float> dy = random_vector(b * o, rng);
    const std::vector<float> db0 = random_vector(o, rng);
    std::vector<float> db = db0;
    bias_grad(dy.data(), db.data(), b, o);
    for (int64_t j = 0; j < o; ++j) {
      double want = db0[j];
      double magnitude = std::abs(db0[j]);
      for (int64_t i = 0; i < b; ++i) {
        want += dy[i * o + j];
        magnitude += std::abs(dy[i * o + j]);
      }
      ASSERT_NEAR(db[j], want, 1e-6 * magnitude) << "B=" << b << " O=" << o << " column " << j;
    }
  }
}

TEST(KernelsTest, MseLossMatchesReference) {
  std::mt19937 rng(4);
  for (auto [b, o] : kShapes) {
    for (float scale : {1.0f, 1.0f / 3.0f}) {
      const std::vector<float> pred = random_vector(b * o, rng, -3.0f, 3.0f);
      const std::vector<float> target = random_vector(b * o, rng, -3.0f, 3.0f);
      std::vector<float> dpred(b * o, 123.0f);
      const int64_t count = b * o;
      double want = 0.0;
      for (int64_t i = 0; i < count; ++i) {
        const double diff = static_cast<double>(pred[i]) - target[i];
        want += diff * diff;
      }
      want /= static_cast<double>(count);

      const double loss = mse_loss(pred.data(), target.data(), b, o);
      mse_loss_gradient(pred.data(), target.data(), dpred.data(), b, o, scale);
      EXPECT_NEAR(loss, want, 1e-6 * want) << "B=" << b << " O=" << o;
      for (int64_t i = 0; i < count; ++i) {
        const double want_grad = static_cast<double>(scale) * 2.0 * (static_cast<double>(pred[i]) - target[i]) / count;
        ASSERT_NEAR(dpred[i], want_grad, 1e-6 * std::abs(want_grad) + 1e-12) << "B=" << b << " O=" << o << " at " << i;
      }
    }
  }
}

TEST(KernelsTest, MseLossOfEqualInputsIsZero) {
  const std::vector<float> pred = {1.0f, -2.0f, 3.5f};
  std::vector<float> dpred(3, 1.0f);
  mse_loss_gradient(pred.data(), pred.data(), dpred.data(), 3, 1, 1.0f);
  EXPECT_EQ(dpred, (std::vector<float>{0.0f, 0.0f, 0.0f}));
  EXPECT_EQ(mse_loss(pred.data(), pred.data(), 1, 3), 0.0);
}

}  // namespace
}  // namespace ddp
