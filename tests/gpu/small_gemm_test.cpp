// The GEMM for the shapes cuBLASLt is not given (gpu/small_gemm.h). On the host, every build
// with CUDA: its lanes' shares, added and stored, are the host GEMM's result, in every
// transposition, with and without beta and bias; C is not read when beta is 0; a NaN in A
// reaches its row's output; which shapes it takes. On a GPU machine: the kernel against the
// same reference, in both lane counts (skipped where no GPU is visible).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpu/device_array.h"
#include "gpu/small_gemm.h"
#include "gpu/small_gemm_gpu.h"
#include "gpu_test_support.h"
#include "tensor/gemm.h"

namespace ddp {
namespace {

struct Shape {
  bool trans_a, trans_b;
  int64_t m, n, k;
};

std::string name(const Shape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + (s.trans_a ? " A^T" : "") +
         (s.trans_b ? " B^T" : "");
}

// Operands of a shape, stored as its transpositions say, with spare columns (ld > width).
struct Operands {
  Shape shape;
  std::vector<float> a, b, c, bias;
  int64_t lda, ldb, ldc;

  explicit Operands(const Shape& s, uint32_t seed) : shape(s) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const auto fill = [&](std::vector<float>& v, int64_t count) {
      v.resize(static_cast<std::size_t>(count));
      for (float& x : v) x = normal(gen);
    };
    lda = (s.trans_a ? s.m : s.k) + 3;
    ldb = (s.trans_b ? s.k : s.n) + 2;
    ldc = s.n + 1;
    fill(a, (s.trans_a ? s.k : s.m) * lda);
    fill(b, (s.trans_b ? s.n : s.k) * ldb);
    fill(c, s.m * ldc);
    fill(bias, s.n);
  }

  SmallGemm gemm(float beta, bool with_bias, float* c_data) const {
    return SmallGemm{.trans_a = shape.trans_a,
                     .trans_b = shape.trans_b,
                     .m = shape.m,
                     .n = shape.n,
                     .k = shape.k,
                     .a = a.data(),
                     .lda = lda,
                     .b = b.data(),
                     .ldb = ldb,
                     .beta = beta,
                     .c = c_data,
                     .ldc = ldc,
                     .bias = with_bias ? bias.data() : nullptr};
  }

  // The host GEMM, then the bias.
  std::vector<float> reference(float beta, bool with_bias) const {
    std::vector<float> out = c;
    ddp::gemm(shape.trans_a ? Trans::kYes : Trans::kNo, shape.trans_b ? Trans::kYes : Trans::kNo, shape.m, shape.n,
              shape.k, 1.0f, a.data(), lda, b.data(), ldb, beta, out.data(), ldc);
    for (int64_t i = 0; i < shape.m; ++i) {
      for (int64_t j = 0; j < shape.n; ++j) {
        if (with_bias) out[static_cast<std::size_t>(i * ldc + j)] += bias[static_cast<std::size_t>(j)];
      }
    }
    return out;
  }
};

// The kernel's work on the host: each output's lanes' shares added, then stored.
void run_on_host(const SmallGemm& g) {
  const int lanes = small_gemm_lanes(g.k);
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t j = 0; j < g.n; ++j) {
      float sum = 0.0f;
      for (int lane = 0; lane < lanes; ++lane) sum += small_gemm_share(g, i, j, lane, lanes);
      small_gemm_store(g, i, j, sum);
    }
  }
}

void expect_close(const std::vector<float>& actual, const std::vector<float>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], 1e-5 * (1.0 + std::abs(expected[i]))) << what << ", element " << i;
  }
}

// The seed's output layer's three GEMMs, a one-sample micro-batch's, and sums of either lane count.
const std::vector<Shape> kShapes = {
    {false, true, 256, 1, 256},   // forward of 256 -> 1: y = x W^T
    {true, false, 1, 256, 256},   // its weight gradient: dW = dy^T x
    {false, false, 256, 256, 1},  // its input gradient: dx = dy W
    {false, true, 1, 64, 10},     // one sample's forward
    {true, true, 7, 5, 40},      {false, false, 3, 9, 31},
};

TEST(SmallGemm, SharesAddedAreTheHostGemmInEveryTranspositionWithBetaAndBias) {
  for (const Shape& shape : kShapes) {
    const Operands ops(shape, 11);
    for (const float beta : {0.0f, 1.0f}) {
      for (const bool with_bias : {false, true}) {
        std::vector<float> c = ops.c;
        run_on_host(ops.gemm(beta, with_bias, c.data()));
        expect_close(c, ops.reference(beta, with_bias),
                     name(shape) + " beta " + std::to_string(beta) + (with_bias ? " bias" : ""));
      }
    }
  }
}

TEST(SmallGemm, WithBetaZeroCIsNotReadAndANanReachesItsRowsOutput) {
  const Operands ops({false, true, 4, 1, 40}, 3);
  std::vector<float> c(ops.c.size(), std::numeric_limits<float>::quiet_NaN());
  run_on_host(ops.gemm(0.0f, true, c.data()));
  for (int64_t i = 0; i < 4; ++i) EXPECT_FALSE(std::isnan(c[static_cast<std::size_t>(i * ops.ldc)])) << i;

  Operands poisoned({false, true, 2, 1, 40}, 4);
  poisoned.a[5] = std::numeric_limits<float>::quiet_NaN();  // row 0's
  std::vector<float> out = poisoned.c;
  run_on_host(poisoned.gemm(0.0f, true, out.data()));
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_FALSE(std::isnan(out[static_cast<std::size_t>(poisoned.ldc)]));
}

TEST(SmallGemm, TakesShapesWithADimensionOfOneAndBiasesOffSixteenBytes) {
  alignas(16) float bias[8] = {};
  EXPECT_FALSE(small_gemm_takes(256, 256, 256, bias));
  EXPECT_FALSE(small_gemm_takes(256, 256, 10, nullptr));
  EXPECT_TRUE(small_gemm_takes(256, 1, 256, bias));
  EXPECT_TRUE(small_gemm_takes(1, 256, 256, nullptr));
  EXPECT_TRUE(small_gemm_takes(256, 256, 1, nullptr));
  EXPECT_TRUE(small_gemm_takes(256, 256, 256, bias + 1));
  EXPECT_FALSE(small_gemm_takes(256, 256, 256, bias + 4));
}

TEST(SmallGemmGpu, TheKernelIsTheHostGemmInBothLaneCounts) {
  DDP_REQUIRE_GPU();
  for (const Shape& shape : kShapes) {
    const Operands ops(shape, 12);
    const DeviceArray<float> a(ops.a), b(ops.b), bias(ops.bias);
    for (const float beta : {0.0f, 1.0f}) {
      const DeviceArray<float> c(ops.c);
      SmallGemm g = ops.gemm(beta, true, c.data());
      g.a = a.data();
      g.b = b.data();
      g.bias = bias.data();
      launch_small_gemm(g, nullptr);
      expect_close(c.to_host(), ops.reference(beta, true), name(shape) + " on the GPU");
    }
  }
}

}  // namespace
}  // namespace ddp
