#include "tensor/gemm.h"

#include <cblas.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace ddp {
namespace {

constexpr GemmBackend kBackends[] = {GemmBackend::kOpenBlas, GemmBackend::kOneDnn};
constexpr Trans kTrans[] = {Trans::kNo, Trans::kYes};

// The oracle: C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C in double, with the same
// row-major storage convention as gemm(). Also returns, per element, the magnitude
// |alpha| * sum_k |a||b| + |beta||c| that float rounding error scales with.
void naive_gemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                const std::vector<float>& a, int64_t lda, const std::vector<float>& b, int64_t ldb, double beta,
                const std::vector<float>& c0, int64_t ldc, std::vector<double>& c, std::vector<double>& magnitude) {
  c.assign(c0.size(), 0.0);
  magnitude.assign(c0.size(), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      double abs_sum = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double av = trans_a == Trans::kYes ? a[p * lda + i] : a[i * lda + p];
        const double bv = trans_b == Trans::kYes ? b[j * ldb + p] : b[p * ldb + j];
        sum += av * bv;
        abs_sum += std::abs(av * bv);
      }
      const double cv = c0[i * ldc + j];
      c[i * ldc + j] = alpha * sum + beta * cv;
      magnitude[i * ldc + j] = std::abs(alpha) * abs_sum + std::abs(beta * cv);
    }
  }
}

std::vector<float> random_matrix(int64_t size, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(size);
  for (float& x : v) x = dist(rng);
  return v;
}

std::string describe(GemmBackend backend, Trans ta, Trans tb, int64_t m, int64_t n, int64_t k) {
  return std::string(gemm_backend_name(backend)) + " trans_a=" + (ta == Trans::kYes ? "T" : "N") +
         " trans_b=" + (tb == Trans::kYes ? "T" : "N") + " M=" + std::to_string(m) + " N=" + std::to_string(n) +
         " K=" + std::to_string(k);
}

class GemmTest : public ::testing::Test {
 protected:
  void SetUp() override { set_gemm_threads(1); }
};

// Every backend and transpose combination over the seed's dimensions (batch 1/16/85/256, layer
// widths 1/10/256), with padded leading dimensions and alpha, beta both non-trivial.
TEST_F(GemmTest, MatchesFloat64ReferenceOnSeedShapes) {
  constexpr double kTolerance = 1e-5;
  constexpr float kAlpha = 0.75f;
  constexpr float kBeta = -1.25f;
  std::mt19937 rng(42);
  std::vector<double> expected, magnitude;
  for (int64_t m : {1, 16, 85, 256}) {
    for (int64_t n : {1, 10, 256}) {
      for (int64_t k : {1, 10, 256}) {
        for (Trans ta : kTrans) {
          for (Trans tb : kTrans) {
            const int64_t a_rows = ta == Trans::kYes ? k : m;
            const int64_t lda = (ta == Trans::kYes ? m : k) + 3;
            const int64_t b_rows = tb == Trans::kYes ? n : k;
            const int64_t ldb = (tb == Trans::kYes ? k : n) + 5;
            const int64_t ldc = n + 7;
            const std::vector<float> a = random_matrix(a_rows * lda, rng);
            const std::vector<float> b = random_matrix(b_rows * ldb, rng);
            const std::vector<float> c0 = random_matrix(m * ldc, rng);
            naive_gemm(ta, tb, m, n, k, kAlpha, a, lda, b, ldb, kBeta, c0, ldc, expected, magnitude);
            for (GemmBackend backend : kBackends) {
              std::vector<float> c = c0;
              gemm_with(backend, ta, tb, m, n, k, kAlpha, a.data(), lda, b.data(), ldb, kBeta, c.data(), ldc);
              int failures = 0;
              for (int64_t i = 0; i < m && failures < 3; ++i) {
                for (int64_t j = 0; j < ldc && failures < 3; ++j) {
                  const int64_t at = i * ldc + j;
                  if (j >= n) {
                    // Padding between rows of C must be left alone.
                    if (c[at] != c0[at]) ++failures;
                    EXPECT_EQ(c[at], c0[at])
                        << describe(backend, ta, tb, m, n, k) << " wrote padding at (" << i << "," << j << ")";
                    continue;
                  }
                  const double error = std::abs(c[at] - expected[at]);
                  if (error > kTolerance * magnitude[at]) ++failures;
                  EXPECT_LE(error, kTolerance * magnitude[at])
                      << describe(backend, ta, tb, m, n, k) << " at (" << i << "," << j << "): got " << c[at]
                      << ", want " << expected[at];
                }
              }
            }
          }
        }
      }
    }
  }
}

// With beta = 0 the BLAS contract is that C is not read, so garbage (here NaN) in an
// uninitialised output cannot leak into the result.
TEST_F(GemmTest, BetaZeroIgnoresOldContents) {
  std::mt19937 rng(7);
  constexpr int64_t kM = 16, kN = 256, kK = 10;
  const std::vector<float> a = random_matrix(kM * kK, rng);
  const std::vector<float> b = random_matrix(kK * kN, rng);
  const std::vector<float> nan_c(kM * kN, std::numeric_limits<float>::quiet_NaN());
  std::vector<double> expected, magnitude;
  naive_gemm(Trans::kNo, Trans::kNo, kM, kN, kK, 1.0, a, kK, b, kN, 0.0, std::vector<float>(kM * kN, 0.0f), kN,
             expected, magnitude);
  for (GemmBackend backend : kBackends) {
    std::vector<float> c = nan_c;
    gemm_with(backend, Trans::kNo, Trans::kNo, kM, kN, kK, 1.0f, a.data(), kK, b.data(), kN, 0.0f, c.data(), kN);
    for (int64_t i = 0; i < kM * kN; ++i) {
      ASSERT_NEAR(c[i], expected[i], 1e-5 * magnitude[i]) << gemm_backend_name(backend) << " at " << i;
    }
  }
}

// A command that runs no GEMM stops OpenBLAS's idle threads; a GEMM after it, on several
// threads, starts them again and is still right.
TEST_F(GemmTest, AfterTheIdleThreadsAreStoppedAGemmOnThreadsIsRight) {
  stop_idle_gemm_threads();
  stop_idle_gemm_threads();  // twice: nothing left to stop
  set_gemm_threads(2);
  std::mt19937 rng(11);
  constexpr int64_t kM = 512, kN = 512, kK = 256;  // large enough for OpenBLAS to split it
  const std::vector<float> a = random_matrix(kM * kK, rng);
  const std::vector<float> b = random_matrix(kK * kN, rng);
  std::vector<double> expected, magnitude;
  naive_gemm(Trans::kNo, Trans::kNo, kM, kN, kK, 1.0, a, kK, b, kN, 0.0, std::vector<float>(kM * kN, 0.0f), kN,
             expected, magnitude);
  std::vector<float> c(kM * kN);
  gemm_with(GemmBackend::kOpenBlas, Trans::kNo, Trans::kNo, kM, kN, kK, 1.0f, a.data(), kK, b.data(), kN, 0.0f,
            c.data(), kN);
  for (int64_t i = 0; i < kM * kN; ++i) ASSERT_NEAR(c[i], expected[i], 1e-5 * magnitude[i]) << i;
  set_gemm_threads(1);
}

// K = 0 is an empty sum: C = beta * C.
TEST_F(GemmTest, EmptyInnerDimensionScalesC) {
  const float a = 0.0f, b = 0.0f;
  for (GemmBackend backend : kBackends) {
    std::vector<float> c = {1.0f, -2.0f, 3.0f, 4.0f};
    gemm_with(backend, Trans::kNo, Trans::kNo, 2, 2, 0, 1.0f, &a, 1, &b, 2, 0.5f, c.data(), 2);
    EXPECT_EQ(c, (std::vector<float>{0.5f, -1.0f, 1.5f, 2.0f})) << gemm_backend_name(backend);

    std::vector<float> nan_c(4, std::numeric_limits<float>::quiet_NaN());
    gemm_with(backend, Trans::kNo, Trans::kNo, 2, 2, 0, 1.0f, &a, 1, &b, 2, 0.0f, nan_c.data(), 2);
    EXPECT_EQ(nan_c, (std::vector<float>(4, 0.0f))) << gemm_backend_name(backend);
  }
}

TEST_F(GemmTest, DispatchingGemmMatchesChosenBackend) {
  std::mt19937 rng(3);
  for (auto [m, n, k] :
       {std::tuple<int64_t, int64_t, int64_t>{256, 256, 256}, {256, 1, 256}, {256, 10, 256}, {16, 256, 10}}) {
    const std::vector<float> a = random_matrix(m * k, rng);
    const std::vector<float> b = random_matrix(n * k, rng);
    std::vector<float> via_gemm(m * n, 0.0f), via_backend(m * n, 0.0f);
    gemm(Trans::kNo, Trans::kYes, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, via_gemm.data(), n);
    gemm_with(gemm_backend_for(m, n, k), Trans::kNo, Trans::kYes, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f,
              via_backend.data(), n);
    EXPECT_EQ(via_gemm, via_backend) << "M=" << m << " N=" << n << " K=" << k;
  }
}

// The rule of docs/performance.md on the seed's training GEMMs (B = 256; layers 10->256,
// 256->256, 256->1): fwd (B,out,in), dX (B,in,out), dW (out,in,B). The degenerate shapes go
// to OpenBLAS only where it runs an AVX-512 kernel (not its Haswell fallback on Zen 5).
TEST_F(GemmTest, BackendRuleOnSeedShapes) {
  const std::string_view core = openblas_get_corename();
  const GemmBackend degenerate = core == "SkylakeX" || core == "Cooperlake" || core == "SapphireRapids"
                                     ? GemmBackend::kOpenBlas
                                     : GemmBackend::kOneDnn;
  EXPECT_EQ(gemm_backend_for(256, 256, 10), GemmBackend::kOneDnn);   // layer 1 fwd
  EXPECT_EQ(gemm_backend_for(256, 256, 256), GemmBackend::kOneDnn);  // hidden layers
  EXPECT_EQ(gemm_backend_for(16, 256, 256), GemmBackend::kOneDnn);   // hidden, B = 16
  EXPECT_EQ(gemm_backend_for(256, 10, 256), degenerate);             // layer 1 dX and dW
  EXPECT_EQ(gemm_backend_for(256, 1, 256), degenerate);              // output fwd
  EXPECT_EQ(gemm_backend_for(256, 256, 1), degenerate);              // output dX
  EXPECT_EQ(gemm_backend_for(1, 256, 256), degenerate);              // output dW
}

TEST_F(GemmTest, BackendNames) {
  EXPECT_EQ(gemm_backend_name(GemmBackend::kOpenBlas), "openblas");
  EXPECT_EQ(gemm_backend_name(GemmBackend::kOneDnn), "onednn");
}

TEST(GemmDeathTest, LeadingDimensionTooSmallIsAnInternalError) {
  const std::vector<float> a(16), b(16);
  std::vector<float> c(16);
  for (GemmBackend backend : kBackends) {
    EXPECT_DEATH(gemm_with(backend, Trans::kNo, Trans::kNo, 4, 4, 4, 1.0f, a.data(), 3, b.data(), 4, 0.0f, c.data(), 4),
                 "lda is smaller than A's row length");
  }
}

}  // namespace
}  // namespace ddp
