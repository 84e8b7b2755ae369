#include "ddpscope/optimizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "ddpscope/error.h"

namespace ddp {
namespace {

constexpr std::size_t kParams = 300;
constexpr int kSteps = 12;

// Gradient of element i at step t: varying sign, size and frequency, including zeros.
std::vector<float> gradient(int t) {
  std::vector<float> g(kParams);
  for (std::size_t i = 0; i < kParams; ++i) {
    const double scale = std::pow(10.0, static_cast<double>(i % 7) - 4.0);  // 1e-4 .. 1e2
    g[i] = i % 50 == 0 ? 0.0f : static_cast<float>(scale * std::sin(0.37 * static_cast<double>(i) + 1.3 * t));
  }
  return g;
}

std::vector<float> initial_params() {
  std::vector<float> p(kParams);
  for (std::size_t i = 0; i < kParams; ++i) p[i] = static_cast<float>(std::cos(0.11 * static_cast<double>(i)));
  return p;
}

// torch.optim.Adam / AdamW written out in float64, element by element.
struct AdamReference {
  OptimizerConfig config;
  std::vector<double> m = std::vector<double>(kParams, 0.0);
  std::vector<double> v = std::vector<double>(kParams, 0.0);
  int t = 0;

  void step(std::vector<double>& p, const std::vector<float>& grads) {
    ++t;
    const double lr = config.lr, wd = config.weight_decay, b1 = config.beta1, b2 = config.beta2;
    for (std::size_t i = 0; i < p.size(); ++i) {
      double g = grads[i];
      if (config.kind == OptimizerKind::kAdamW) {
        p[i] *= 1.0 - lr * wd;
      } else if (wd != 0.0) {
        g += wd * p[i];
      }
      m[i] = b1 * m[i] + (1.0 - b1) * g;
      v[i] = b2 * v[i] + (1.0 - b2) * g * g;
      const double step_size = lr / (1.0 - std::pow(b1, t));
      const double denom = std::sqrt(v[i]) / std::sqrt(1.0 - std::pow(b2, t)) + config.eps;
      p[i] -= step_size * m[i] / denom;
    }
  }
};

// torch.optim.SGD (dampening 0, no Nesterov) in float64.
struct SgdReference {
  OptimizerConfig config;
  std::vector<double> buf = std::vector<double>(kParams, 0.0);
  bool first = true;

  void step(std::vector<double>& p, const std::vector<float>& grads) {
    for (std::size_t i = 0; i < p.size(); ++i) {
      double g = grads[i] + config.weight_decay * p[i];
      if (config.momentum != 0.0) {
        buf[i] = first ? g : config.momentum * buf[i] + g;
        g = buf[i];
      }
      p[i] -= config.lr * g;
    }
    first = false;
  }
};

// Rounding in float grows with the size of the terms, not of the result: a parameter that
// moved far and came back near zero carries the error of the large steps. So the tolerance
// is relative to |expected| plus the distance the value travelled (zero for the states).
void expect_close(std::span<const float> actual, const std::vector<double>& expected, const char* what, int step,
                  const std::vector<double>& travelled = {}) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double magnitude = std::abs(expected[i]) + (travelled.empty() ? 0.0 : travelled[i]);
    ASSERT_NEAR(actual[i], expected[i], 1e-5 * magnitude + 1e-9) << what << "[" << i << "] after step " << step;
  }
}

template <typename Ref>
void check_against_reference(const OptimizerConfig& config, Ref ref) {
  std::unique_ptr<Optimizer> opt = make_optimizer(config, kParams);
  std::vector<float> params = initial_params();
  std::vector<double> expected(params.begin(), params.end());
  std::vector<double> travelled(kParams, 0.0);
  for (int t = 1; t <= kSteps; ++t) {
    const std::vector<float> g = gradient(t);
    const std::vector<double> before = expected;
    opt->step(params, g);
    ref.step(expected, g);
    for (std::size_t i = 0; i < kParams; ++i) travelled[i] += std::abs(expected[i] - before[i]);
    EXPECT_EQ(opt->steps(), t);
    expect_close(params, expected, "param", t, travelled);
  }
  auto state = opt->state();
  if constexpr (std::is_same_v<Ref, AdamReference>) {
    ASSERT_EQ(state.size(), 2u);
    expect_close(state[0].second, ref.m, "exp_avg", kSteps);
    expect_close(state[1].second, ref.v, "exp_avg_sq", kSteps);
  } else if (config.momentum != 0.0) {
    ASSERT_EQ(state.size(), 1u);
    expect_close(state[0].second, ref.buf, "momentum_buffer", kSteps);
  }
}

OptimizerConfig config_of(OptimizerKind kind, double lr, double weight_decay, double momentum = 0.0) {
  OptimizerConfig config;
  config.kind = kind;
  config.lr = lr;
  config.weight_decay = weight_decay;
  config.momentum = momentum;
  return config;
}

TEST(Optimizer, AdamMatchesPyTorchEquations) {
  const OptimizerConfig config = config_of(OptimizerKind::kAdam, 0.01, 0.0);
  check_against_reference(config, AdamReference{config});
}

TEST(Optimizer, AdamWithL2WeightDecay) {
  const OptimizerConfig config = config_of(OptimizerKind::kAdam, 0.01, 0.05);
  check_against_reference(config, AdamReference{config});
}

TEST(Optimizer, AdamWWithDecoupledWeightDecay) {
  const OptimizerConfig config = config_of(OptimizerKind::kAdamW, 0.01, 0.1);
  check_against_reference(config, AdamReference{config});
}

TEST(Optimizer, AdamWithOtherBetasAndEps) {
  OptimizerConfig config = config_of(OptimizerKind::kAdam, 0.003, 0.0);
  config.beta1 = 0.8;
  config.beta2 = 0.95;
  config.eps = 1e-6;
  check_against_reference(config, AdamReference{config});
}

TEST(Optimizer, PlainSgd) {
  const OptimizerConfig config = config_of(OptimizerKind::kSgd, 0.01, 0.0);
  check_against_reference(config, SgdReference{config});
}

TEST(Optimizer, SgdWithWeightDecay) {
  const OptimizerConfig config = config_of(OptimizerKind::kSgd, 0.01, 0.01);
  check_against_reference(config, SgdReference{config});
}

TEST(Optimizer, SgdWithMomentumAndWeightDecay) {
  const OptimizerConfig config = config_of(OptimizerKind::kSgd, 0.01, 0.01, 0.9);
  check_against_reference(config, SgdReference{config});
}

TEST(Optimizer, DefaultsArePyTorchs) {
  const OptimizerConfig config;
  EXPECT_EQ(config.kind, OptimizerKind::kAdam);
  EXPECT_EQ(config.beta1, 0.9);
  EXPECT_EQ(config.beta2, 0.999);
  EXPECT_EQ(config.eps, 1e-8);
  EXPECT_EQ(config.weight_decay, 0.0);
  EXPECT_EQ(config.momentum, 0.0);
  EXPECT_EQ(config.lr, 0.01);  // the seed's learning rate
}

TEST(Optimizer, Names) {
  EXPECT_EQ(optimizer_name(OptimizerKind::kAdam), "adam");
  EXPECT_EQ(optimizer_name(OptimizerKind::kAdamW), "adamw");
  EXPECT_EQ(optimizer_name(OptimizerKind::kSgd), "sgd");
}

TEST(Optimizer, StateNamesAndSizes) {
  auto adam = make_optimizer(config_of(OptimizerKind::kAdamW, 0.01, 0.01), kParams);
  auto state = adam->state();
  ASSERT_EQ(state.size(), 2u);
  EXPECT_EQ(state[0].first, "exp_avg");
  EXPECT_EQ(state[1].first, "exp_avg_sq");
  EXPECT_EQ(state[0].second.size(), kParams);
  EXPECT_EQ(state[1].second.size(), kParams);

  auto sgd = make_optimizer(config_of(OptimizerKind::kSgd, 0.01, 0.0, 0.9), kParams);
  state = sgd->state();
  ASSERT_EQ(state.size(), 1u);
  EXPECT_EQ(state[0].first, "momentum_buffer");
  EXPECT_EQ(state[0].second.size(), kParams);

  // Like PyTorch, plain SGD keeps no state.
  EXPECT_TRUE(make_optimizer(config_of(OptimizerKind::kSgd, 0.01, 0.0), kParams)->state().empty());
}

// A resumed optimizer (state copied, steps set) continues the same trajectory bit for bit.
void check_resume(const OptimizerConfig& config) {
  auto original = make_optimizer(config, kParams);
  std::vector<float> params = initial_params();
  for (int t = 1; t <= 5; ++t) original->step(params, gradient(t));
  EXPECT_EQ(original->steps(), 5);

  auto resumed = make_optimizer(config, kParams);
  auto from = original->state();
  auto to = resumed->state();
  ASSERT_EQ(from.size(), to.size());
  for (std::size_t s = 0; s < from.size(); ++s)
    std::copy(from[s].second.begin(), from[s].second.end(), to[s].second.begin());
  resumed->set_steps(original->steps());
  std::vector<float> resumed_params = params;
  for (int t = 6; t <= 10; ++t) {
    original->step(params, gradient(t));
    resumed->step(resumed_params, gradient(t));
  }
  EXPECT_EQ(resumed->steps(), 10);
  EXPECT_EQ(params, resumed_params);
}

TEST(Optimizer, ResumeContinuesTheTrajectory) {
  check_resume(config_of(OptimizerKind::kAdam, 0.01, 0.0));
  check_resume(config_of(OptimizerKind::kSgd, 0.01, 0.0, 0.9));
}

TEST(Optimizer, InvalidHyperparametersAreUsageErrors) {
  auto message = [](const OptimizerConfig& config) {
    try {
      make_optimizer(config, kParams);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(config_of(OptimizerKind::kAdam, -1.0, 0.0)), "--lr -1 is invalid: must be >= 0");
  EXPECT_EQ(message(config_of(OptimizerKind::kAdamW, 0.01, -0.5)), "--weight-decay -0.5 is invalid: must be >= 0");
  EXPECT_EQ(message(config_of(OptimizerKind::kSgd, 0.01, 0.0, -0.9)), "--momentum -0.9 is invalid: must be >= 0");
  OptimizerConfig betas = config_of(OptimizerKind::kAdam, 0.01, 0.0);
  betas.beta2 = 1.0;
  EXPECT_EQ(message(betas), "--betas (second) 1 is invalid: must be in [0, 1)");
  betas.beta2 = 0.999;
  betas.eps = -1e-8;
  EXPECT_EQ(message(betas), "--eps -1e-08 is invalid: must be >= 0");
}

}  // namespace
}  // namespace ddp
