// On a GPU machine: the device MLP's forward against the float64 reference and its backward
// against the host Mlp's (itself checked against float64 finite differences in
// tests/nn/mlp_test.cpp), in fp32 within 1e-5 of the largest value and in TF32 and bf16
// within 1e-3 and 1e-2 per layer (each layer's GEMM rounds its inputs again, and the errors
// of the layers below reach it), gradients added to what was there (accumulation), and a NaN
// weight reaching the output. Skipped where no GPU is visible.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ddpscope/mlp.h"
#include "ddpscope/workspace.h"
#include "gpu/mlp_gpu.h"
#include "gpu_test_support.h"
#include "support/mlp_reference.h"

namespace ddp {
namespace {

std::vector<float> normal_floats(std::size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& value : v) value = dist(gen);
  return v;
}

template <typename A, typename B>
void expect_close(const std::vector<A>& actual, const std::vector<B>& expected, double tolerance, const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double largest = 0;
  for (const B& e : expected) largest = std::max(largest, std::abs(static_cast<double>(e)));
  ASSERT_GT(largest, 0.0) << what;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    ASSERT_NEAR(static_cast<double>(actual[i]), static_cast<double>(expected[i]), tolerance * largest)
        << what << ", element " << i;
  }
}

struct HostPass {
  std::vector<float> output;
  std::vector<float> grads;
};

// The host Mlp's forward and backward from the same parameters, output gradient and grads.
HostPass host_pass(const MlpShape& shape, const std::vector<float>& params, const std::vector<float>& x, int64_t b,
                   const std::vector<float>& output_gradient, const std::vector<float>& grads) {
  Mlp mlp(shape);
  std::copy(params.begin(), params.end(), mlp.params().begin());
  std::copy(grads.begin(), grads.end(), mlp.grads().begin());
  Workspace work(shape, b);
  const float* y = mlp.forward(x.data(), b, work);
  HostPass out{{y, y + b * shape.output_dim}, {}};
  std::copy(output_gradient.begin(), output_gradient.end(), work.output_gradient());
  mlp.backward(x.data(), b, work);
  out.grads.assign(mlp.grads().begin(), mlp.grads().end());
  return out;
}

struct Case {
  MlpShape shape;
  int64_t batch;
};

class GpuMlp : public ::testing::TestWithParam<Case> {};

TEST_P(GpuMlp, ForwardIsTheFloat64ReferencesAndBackwardTheHostsInFp32Tf32AndBf16) {
  DDP_REQUIRE_GPU();
  const auto [shape, b] = GetParam();
  Mlp init(shape);
  init.init_like_pytorch(7);
  const std::vector<float> params(init.params().begin(), init.params().end());
  const std::vector<float> x = normal_floats(static_cast<std::size_t>(b * shape.input_dim), 1);
  const std::vector<float> dout = normal_floats(static_cast<std::size_t>(b * shape.output_dim), 2, 0.01f);
  const std::vector<float> grads = normal_floats(params.size(), 3, 0.001f);  // an earlier micro-batch's
  const std::vector<double> reference =
      testing::Reference(layer_layout(shape), params).forward(std::vector<double>(x.begin(), x.end()), b);
  const HostPass host = host_pass(shape, params, x, b, dout, grads);

  const MlpPassOnGpu fp32 = mlp_pass_on_gpu(shape, LtMath::kFp32, params, x, b, dout, grads);
  expect_close(fp32.output, reference, 1e-5, "fp32 output");
  expect_close(fp32.grads, host.grads, 1e-5, "fp32 gradients");
  const auto layers = static_cast<double>(shape.num_layers());
  const MlpPassOnGpu tf32 = mlp_pass_on_gpu(shape, LtMath::kTf32, params, x, b, dout, grads);
  expect_close(tf32.output, reference, 1e-3 * layers, "tf32 output");
  expect_close(tf32.grads, host.grads, 1e-3 * layers, "tf32 gradients");
  const MlpPassOnGpu bf16 = mlp_pass_on_gpu(shape, LtMath::kBf16, params, x, b, dout, grads);
  expect_close(bf16.output, reference, 1e-2 * layers, "bf16 output");
  expect_close(bf16.grads, host.grads, 1e-2 * layers, "bf16 gradients");
}

// The seed's shape; odd widths, whose layers start off 16-byte boundaries in the flat
// buffer; no hidden layer; one sample.
INSTANTIATE_TEST_SUITE_P(Shapes, GpuMlp,
                         ::testing::Values(Case{MlpShape{10, 256, 3, 1}, 256}, Case{MlpShape{13, 37, 2, 3}, 100},
                                           Case{MlpShape{6, 9, 0, 2}, 5}, Case{MlpShape{10, 64, 1, 1}, 1}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const MlpShape& s = info.param.shape;
                           return "in" + std::to_string(s.input_dim) + "_hidden" + std::to_string(s.hidden_size) + "x" +
                                  std::to_string(s.hidden_layers) + "_out" + std::to_string(s.output_dim) + "_batch" +
                                  std::to_string(info.param.batch);
                         });

TEST(GpuMlpNan, ANanWeightInAHiddenLayerReachesTheOutput) {
  DDP_REQUIRE_GPU();
  // The host keeps NaN through its ReLU (torch.relu does): a diverged run must show in the
  // loss. The layer with the NaN is one cuBLASLt computes (8 -> 8, its weights and bias on
  // 16-byte boundaries), whose ReLU epilogue would make the NaN 0.
  const MlpShape shape{4, 8, 2, 1};
  Mlp init(shape);
  init.init_like_pytorch(1);
  std::vector<float> params(init.params().begin(), init.params().end());
  params[init.layers()[1].weight_offset] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = normal_floats(4 * 3, 5), dout(3, 0.0f), grads(params.size(), 0.0f);
  const MlpPassOnGpu pass = mlp_pass_on_gpu(shape, LtMath::kFp32, params, x, 3, dout, grads);
  for (const float y : pass.output) EXPECT_TRUE(std::isnan(y));
}

}  // namespace
}  // namespace ddp
