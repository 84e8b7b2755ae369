#include "ddpscope/mlp.h"
#include "tensor/kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <ostream>
#include <random>
#include <vector>

#include "support/mlp_reference.h"

namespace ddp {
namespace {

using testing::Reference;

std::vector<float> random_floats(std::size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& value : v) value = dist(gen);
  return v;
}

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// After forward: the MSE against target (b, o), and scale * its gradient where backward
// starts (the workspace's output gradient), as the Trainer seeds it.
double loss_gradient(Workspace& work, const std::vector<float>& target, int64_t b, int64_t o, float scale) {
  mse_loss_gradient(work.output(), target.data(), work.output_gradient(), b, o, scale);
  return mse_loss(work.output(), target.data(), b, o);
}

TEST(MlpShape, Widths) {
  EXPECT_EQ((MlpShape{10, 256, 3, 1}.widths()), (std::vector<int64_t>{10, 256, 256, 256, 1}));
  EXPECT_EQ((MlpShape{10, 256, 0, 1}.widths()), (std::vector<int64_t>{10, 1}));
  EXPECT_EQ((MlpShape{}.num_layers()), 4);
}

TEST(Mlp, SeedModelHas134657ParamsInPyTorchOrder) {
  const Mlp mlp(MlpShape{10, 256, 3, 1});
  EXPECT_EQ(mlp.num_params(), 134657u);
  EXPECT_EQ(mlp.grads().size(), 134657u);
  const std::vector<LinearLayout>& layers = mlp.layers();
  ASSERT_EQ(layers.size(), 4u);
  const int64_t ins[] = {10, 256, 256, 256}, outs[] = {256, 256, 256, 1};
  std::size_t offset = 0;
  for (std::size_t l = 0; l < 4; ++l) {
    EXPECT_EQ(layers[l].in, ins[l]);
    EXPECT_EQ(layers[l].out, outs[l]);
    EXPECT_EQ(layers[l].weight_offset, offset);
    offset += static_cast<std::size_t>(ins[l] * outs[l]);
    EXPECT_EQ(layers[l].bias_offset, offset);
    offset += static_cast<std::size_t>(outs[l]);
  }
  EXPECT_EQ(offset, mlp.num_params());
}

TEST(Mlp, NoHiddenLayerIsOneLinear) {
  const Mlp mlp(MlpShape{10, 256, 0, 1});
  ASSERT_EQ(mlp.layers().size(), 1u);
  EXPECT_EQ(mlp.layers()[0].in, 10);
  EXPECT_EQ(mlp.layers()[0].out, 1);
  EXPECT_EQ(mlp.layers()[0].bias_offset, 10u);
  EXPECT_EQ(mlp.num_params(), 11u);
}

TEST(Mlp, OneHiddenLayer) {
  const Mlp mlp(MlpShape{10, 256, 1, 1});
  ASSERT_EQ(mlp.layers().size(), 2u);
  EXPECT_EQ(mlp.layers()[1].weight_offset, 2816u);
  EXPECT_EQ(mlp.layers()[1].bias_offset, 3072u);
  EXPECT_EQ(mlp.num_params(), 3073u);
}

TEST(Mlp, FlopsOfTheSeedModel) {
  const Mlp mlp(MlpShape{10, 256, 3, 1});
  EXPECT_EQ(mlp.forward_flops_per_sample(), 267776.0);
  EXPECT_EQ(mlp.training_flops_per_sample(), 798208.0);
  const Mlp single(MlpShape{10, 256, 0, 1});
  EXPECT_EQ(single.forward_flops_per_sample(), 20.0);
  EXPECT_EQ(single.training_flops_per_sample(), 40.0);
}

TEST(Mlp, InitIsWithinPyTorchBoundsAndDeterministic) {
  Mlp a(MlpShape{10, 256, 3, 1});
  Mlp b(MlpShape{10, 256, 3, 1});
  Mlp c(MlpShape{10, 256, 3, 1});
  a.init_like_pytorch(42);
  b.init_like_pytorch(42);
  c.init_like_pytorch(43);
  EXPECT_TRUE(std::equal(a.params().begin(), a.params().end(), b.params().begin()));
  std::size_t same = 0;
  for (std::size_t i = 0; i < a.num_params(); ++i) same += a.params()[i] == c.params()[i];
  EXPECT_LT(same, a.num_params() / 1000);

  for (const LinearLayout& layer : a.layers()) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(layer.in));
    const std::size_t end = layer.bias_offset + static_cast<std::size_t>(layer.out);
    for (std::size_t i = layer.weight_offset; i < end; ++i) {
      ASSERT_LE(std::abs(a.params()[i]), bound) << "parameter " << i;
    }
  }
}

TEST(Mlp, InitIsRoughlyUniform) {
  Mlp mlp(MlpShape{10, 256, 3, 1});
  mlp.init_like_pytorch(7);
  // layers.1.weight: 65536 values of U(-1/16, 1/16), mean 0 and variance bound^2/3.
  const LinearLayout& layer = mlp.layers()[1];
  const double bound = 1.0 / 16.0;
  const std::size_t n = static_cast<std::size_t>(layer.in * layer.out);
  double sum = 0.0, sum_sq = 0.0;
  std::size_t below_half = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double w = mlp.params()[layer.weight_offset + i];
    sum += w;
    sum_sq += w * w;
    below_half += std::abs(w) < bound / 2;
  }
  const double mean = sum / static_cast<double>(n);
  const double variance = sum_sq / static_cast<double>(n) - mean * mean;
  const double expected_variance = bound * bound / 3.0;
  EXPECT_LT(std::abs(mean), 5.0 * std::sqrt(expected_variance / static_cast<double>(n)));
  EXPECT_NEAR(variance / expected_variance, 1.0, 0.02);
  EXPECT_NEAR(static_cast<double>(below_half) / static_cast<double>(n), 0.5, 0.01);
}

TEST(Mlp, InitValuesDependOnlyOnSeedAndIndex) {
  // layers.0 has the same shape and offsets in both models, so the same values.
  Mlp deep(MlpShape{10, 256, 3, 1});
  Mlp shallow(MlpShape{10, 256, 1, 1});
  deep.init_like_pytorch(5);
  shallow.init_like_pytorch(5);
  EXPECT_TRUE(std::equal(deep.params().begin(), deep.params().begin() + 2816, shallow.params().begin()));
}

TEST(Mlp, ForwardMatchesFloat64Reference) {
  const int64_t b = 7;
  Mlp mlp(MlpShape{10, 256, 3, 1});
  Workspace work(MlpShape{10, 256, 3, 1}, 16);
  mlp.init_like_pytorch(1);
  const std::vector<float> x = random_floats(static_cast<std::size_t>(b * 10), 2);
  const float* y = mlp.forward(x.data(), b, work);
  const std::vector<double> expected = Reference(mlp).forward(to_double(x), b);
  for (int64_t i = 0; i < b; ++i) EXPECT_NEAR(y[i], expected[i], 1e-5 + 1e-4 * std::abs(expected[i]));
}

struct GradCase {
  MlpShape shape;
  int64_t batch;
};

void PrintTo(const GradCase& c, std::ostream* os) {
  *os << "shape (" << c.shape.input_dim << ", " << c.shape.hidden_size << " x " << c.shape.hidden_layers << ", "
      << c.shape.output_dim << ") batch " << c.batch;
}

class MlpGradient : public ::testing::TestWithParam<GradCase> {};

TEST_P(MlpGradient, LossAndEveryGradientMatchFiniteDifferences) {
  const GradCase& c = GetParam();
  Mlp mlp(c.shape);
  Workspace work(c.shape, 32);
  mlp.init_like_pytorch(11);
  const std::vector<float> x = random_floats(static_cast<std::size_t>(c.batch * c.shape.input_dim), 3);
  const std::vector<float> target = random_floats(static_cast<std::size_t>(c.batch * c.shape.output_dim), 4);

  mlp.zero_grads();
  mlp.forward(x.data(), c.batch, work);
  const double loss = loss_gradient(work, target, c.batch, mlp.shape().output_dim, 1.0f);
  mlp.backward(x.data(), c.batch, work);

  Reference ref(mlp);
  const double expected_loss = ref.loss(to_double(x), to_double(target), c.batch);
  EXPECT_NEAR(loss, expected_loss, 1e-5 * expected_loss);

  const std::vector<double> expected = ref.finite_difference_grads(to_double(x), to_double(target), c.batch);
  double largest = 0.0;
  for (double g : expected) largest = std::max(largest, std::abs(g));
  ASSERT_GT(largest, 1e-3);
  for (std::size_t l = 0; l < mlp.layers().size(); ++l) {
    const LinearLayout& layer = mlp.layers()[l];
    const std::size_t end = layer.bias_offset + static_cast<std::size_t>(layer.out);
    for (std::size_t i = layer.weight_offset; i < end; ++i) {
      EXPECT_NEAR(mlp.grads()[i], expected[i], 1e-3 * std::abs(expected[i]) + 1e-5 * largest)
          << "layer " << l << (i < layer.bias_offset ? " weight" : " bias") << ", flat index " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MlpGradient,
                         ::testing::Values(GradCase{MlpShape{4, 8, 2, 3}, 1}, GradCase{MlpShape{4, 8, 2, 3}, 5},
                                           GradCase{MlpShape{4, 8, 2, 3}, 17}, GradCase{MlpShape{5, 7, 1, 2}, 5},
                                           GradCase{MlpShape{6, 9, 0, 2}, 5}, GradCase{MlpShape{3, 16, 3, 1}, 17}),
                         [](const ::testing::TestParamInfo<GradCase>& info) {
                           const MlpShape& s = info.param.shape;
                           return "in" + std::to_string(s.input_dim) + "_h" + std::to_string(s.hidden_size) + "x" +
                                  std::to_string(s.hidden_layers) + "_out" + std::to_string(s.output_dim) + "_b" +
                                  std::to_string(info.param.batch);
                         });

// forward + loss + backward of one batch into mlp's (accumulating) gradients.
void train_step(Mlp& mlp, Workspace& work, const std::vector<float>& x, const std::vector<float>& target, int64_t b,
                float scale, const std::function<void(int64_t)>& on_layer_done = {}) {
  mlp.forward(x.data(), b, work);
  loss_gradient(work, target, b, mlp.shape().output_dim, scale);
  mlp.backward(x.data(), b, work, on_layer_done);
}

TEST(Mlp, GradientsAccumulateAcrossBackwardCallsAndZeroClears) {
  const MlpShape shape{6, 32, 2, 2};
  Mlp mlp(shape);
  Workspace work(shape, 16);
  mlp.init_like_pytorch(3);
  const std::vector<float> x1 = random_floats(16 * 6, 5), t1 = random_floats(16 * 2, 6);
  const std::vector<float> x2 = random_floats(9 * 6, 7), t2 = random_floats(9 * 2, 8);

  train_step(mlp, work, x1, t1, 16, 1.0f);
  const std::vector<float> g1(mlp.grads().begin(), mlp.grads().end());
  mlp.zero_grads();
  train_step(mlp, work, x2, t2, 9, 1.0f);
  const std::vector<float> g2(mlp.grads().begin(), mlp.grads().end());
  mlp.zero_grads();
  EXPECT_TRUE(std::all_of(mlp.grads().begin(), mlp.grads().end(), [](float g) { return g == 0.0f; }));

  train_step(mlp, work, x1, t1, 16, 1.0f);
  train_step(mlp, work, x2, t2, 9, 1.0f);
  for (std::size_t i = 0; i < mlp.num_params(); ++i) {
    ASSERT_NEAR(mlp.grads()[i], g1[i] + g2[i], 1e-6f + 1e-5f * std::abs(g1[i] + g2[i])) << i;
  }
}

TEST(Mlp, ScaleScalesTheGradientsNotTheLoss) {
  Mlp mlp(MlpShape{6, 32, 2, 2});
  Workspace work(MlpShape{6, 32, 2, 2}, 8);
  mlp.init_like_pytorch(4);
  const std::vector<float> x = random_floats(8 * 6, 9), t = random_floats(8 * 2, 10);
  mlp.forward(x.data(), 8, work);
  const double loss = loss_gradient(work, t, 8, 2, 1.0f);
  mlp.backward(x.data(), 8, work);
  const std::vector<float> full(mlp.grads().begin(), mlp.grads().end());
  mlp.zero_grads();
  mlp.forward(x.data(), 8, work);
  EXPECT_DOUBLE_EQ(loss_gradient(work, t, 8, 2, 1.0f / 3.0f), loss);
  mlp.backward(x.data(), 8, work);
  for (std::size_t i = 0; i < mlp.num_params(); ++i) {
    ASSERT_NEAR(mlp.grads()[i], full[i] / 3.0f, 1e-7f + 1e-5f * std::abs(full[i])) << i;
  }
}

TEST(Mlp, OnLayerDoneRunsOncePerLayerLastFirstWithFinalGradients) {
  Mlp mlp(MlpShape{6, 32, 3, 2});
  Workspace work(MlpShape{6, 32, 3, 2}, 8);
  mlp.init_like_pytorch(5);
  const std::vector<float> x = random_floats(8 * 6, 11), t = random_floats(8 * 2, 12);
  std::vector<int64_t> calls;
  std::vector<std::vector<float>> seen;  // each layer's weight and bias grads at its callback
  train_step(mlp, work, x, t, 8, 1.0f, [&](int64_t l) {
    calls.push_back(l);
    const LinearLayout& layer = mlp.layers()[static_cast<std::size_t>(l)];
    const auto begin = mlp.grads().begin() + static_cast<std::ptrdiff_t>(layer.weight_offset);
    seen.emplace_back(begin, begin + layer.in * layer.out + layer.out);
  });
  EXPECT_EQ(calls, (std::vector<int64_t>{3, 2, 1, 0}));
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const LinearLayout& layer = mlp.layers()[static_cast<std::size_t>(calls[k])];
    EXPECT_TRUE(std::equal(seen[k].begin(), seen[k].end(),
                           mlp.grads().begin() + static_cast<std::ptrdiff_t>(layer.weight_offset)))
        << "layer " << calls[k];
  }
}

TEST(Mlp, SmallerBatchesReuseTheBuffers) {
  Mlp mlp(MlpShape{10, 64, 2, 1});
  Workspace work(MlpShape{10, 64, 2, 1}, 32);
  mlp.init_like_pytorch(6);
  const std::vector<float> x = random_floats(32 * 10, 13);
  const Reference ref(mlp);
  for (int64_t b : {32, 3, 32, 1}) {
    const float* y = mlp.forward(x.data(), b, work);
    const std::vector<double> expected = ref.forward(to_double(std::vector<float>(x.begin(), x.begin() + b * 10)), b);
    for (int64_t i = 0; i < b; ++i) ASSERT_NEAR(y[i], expected[i], 1e-5 + 1e-4 * std::abs(expected[i]));
  }
}

TEST(MlpDeathTest, BatchAboveMaxBatchIsAnInternalError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Mlp mlp(MlpShape{4, 8, 1, 1});
  Workspace work(MlpShape{4, 8, 1, 1}, 4);
  const std::vector<float> x(5 * 4, 0.0f);
  EXPECT_DEATH(mlp.forward(x.data(), 5, work),
               "check 'b <= work.max_batch\\(\\)' failed \\(5 vs 4\\): batch larger than the workspace was sized for");
}

}  // namespace
}  // namespace ddp
