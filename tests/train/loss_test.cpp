// The Loss a training step returns carries the gradient backward starts from.
#include "ddpscope/loss.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tensor/kernels.h"

namespace ddp {
namespace {

TEST(Loss, MseCarriesItsValueAndWritesTheScaledGradient) {
  const std::vector<float> pred = {1.0f, 2.0f, -1.0f, 0.5f};
  const std::vector<float> target = {0.0f, 2.5f, 1.0f, 0.5f};
  const double value = mse_loss(pred.data(), target.data(), 2, 2);
  const Loss loss = Loss::mse(value, pred.data(), target.data(), 2, 2);
  EXPECT_TRUE(loss.has_gradient());
  EXPECT_EQ(loss.value(), value);
  EXPECT_EQ(loss.rows(), 2);
  std::vector<float> gradient(4, 99.0f);
  loss.write_gradient(gradient.data(), 1.0f / 3.0f);
  const float factor = static_cast<float>(2.0 * (1.0f / 3.0f) / 4.0);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(gradient[i], factor * (pred[i] - target[i])) << i;
}

TEST(Loss, ANumberAloneHasNoGradient) {
  EXPECT_FALSE(Loss(0.25).has_gradient());
  EXPECT_EQ(Loss(0.25).value(), 0.25);
  EXPECT_FALSE(Loss().has_gradient());
  EXPECT_TRUE(std::isnan(Loss().value()));
}

TEST(LossDeathTest, WritingTheGradientOfANumberIsAnInternalError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  float gradient = 0;
  EXPECT_DEATH(Loss(1.0).write_gradient(&gradient, 1.0f), "a Loss without a gradient cannot seed backward");
}

}  // namespace
}  // namespace ddp
