#include "tensor/gemm.h"

#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <limits>

#include "base/check.h"
#include "ddpscope/error.h"

// OpenBLAS's own shutdown of its thread pool (what it runs before a fork); weak, so that a BLAS
// without a pool (OpenBLAS built for OpenMP, or serial) leaves it null.
extern "C" int blas_thread_shutdown_() __attribute__((weak));  // NOLINT(readability-identifier-naming)

namespace ddp {

namespace {

// The rule, from bench/gemm_bench (docs/performance.md): oneDNN everywhere, except that the
// degenerate shapes go to OpenBLAS when OpenBLAS runs one of its AVX-512 kernels. Degenerate
// means a result with fewer than 16 rows or columns or an inner dimension below 8: the
// 256->1 output layer (N=1 forward, K=1 dX, M=1 dW) and dX, dW of the 10-input first layer
// (N=10). On most of those OpenBLAS's AVX-512 kernels beat oneDNN, by up to 3x; the 256-wide
// GEMMs, which carry over 99 % of a step's FLOPs, are oneDNN's. OpenBLAS 0.3.21 predates
// Zen 5 and falls back to its AVX2 Haswell kernels there (unless OPENBLAS_CORETYPE says
// otherwise), which lose to oneDNN on nearly every shape, so then oneDNN takes them all.
constexpr int64_t kOneDnnMinRows = 16;  // M and N
constexpr int64_t kOneDnnMinDepth = 8;  // K

bool openblas_runs_avx512() {
  static const bool kAvx512 = [] {
    const std::string_view core = openblas_get_corename();
    return core == "SkylakeX" || core == "Cooperlake" || core == "SapphireRapids";
  }();
  return kAvx512;
}

// Shapes are checked here rather than left to each library: OpenBLAS reports a bad leading
// dimension through xerbla (a printed line, then it returns), oneDNN through a status, and
// both are our own bugs.
void check_shape(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc) {
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  DDP_CHECK_GE(m, 0, "GEMM dimensions must be non-negative");
  DDP_CHECK_GE(n, 0, "GEMM dimensions must be non-negative");
  DDP_CHECK_GE(k, 0, "GEMM dimensions must be non-negative");
  DDP_CHECK(m <= kIntMax && n <= kIntMax && k <= kIntMax && lda <= kIntMax && ldb <= kIntMax && ldc <= kIntMax,
            "OpenBLAS takes 32-bit dimensions");
  // Row-major: a stored (M,K) matrix has K columns; transposed it is stored (K,M).
  const int64_t a_cols = trans_a == Trans::kYes ? m : k;
  const int64_t b_cols = trans_b == Trans::kYes ? k : n;
  DDP_CHECK_GE(lda, std::max<int64_t>(1, a_cols), "lda is smaller than A's row length");
  DDP_CHECK_GE(ldb, std::max<int64_t>(1, b_cols), "ldb is smaller than B's row length");
  DDP_CHECK_GE(ldc, std::max<int64_t>(1, n), "ldc is smaller than C's row length");
}

void gemm_openblas(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  // cblas_sgemm returns nothing; check_shape() has ruled out everything it could reject.
  cblas_sgemm(CblasRowMajor, trans_a == Trans::kYes ? CblasTrans : CblasNoTrans,
              trans_b == Trans::kYes ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}

void gemm_onednn(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  // dnnl_sgemm is row-major, like us, so the arguments pass straight through.
  const dnnl_status_t status = dnnl_sgemm(trans_a == Trans::kYes ? 'T' : 'N', trans_b == Trans::kYes ? 'T' : 'N', m, n,
                                          k, alpha, a, lda, b, ldb, beta, c, ldc);
  DDP_CHECK_EQ(status, dnnl_success, "dnnl_sgemm failed on arguments that passed check_shape");
}

// C[M,N] = beta * C for an empty inner dimension. oneDNN 2.6.3 returns success without
// touching C when K = 0 (gemm_test's EmptyInnerDimensionScalesC), so the BLAS meaning is
// kept here for every backend. beta = 0 writes zeros rather than multiplying, as BLAS does.
void scale_c(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) row[j] = beta == 0.0f ? 0.0f : beta * row[j];
  }
}

}  // namespace

GemmBackend gemm_backend_for(int64_t m, int64_t n, int64_t k) {
  const bool degenerate = m < kOneDnnMinRows || n < kOneDnnMinRows || k < kOneDnnMinDepth;
  return degenerate && openblas_runs_avx512() ? GemmBackend::kOpenBlas : GemmBackend::kOneDnn;
}

std::string_view gemm_backend_name(GemmBackend backend) {
  switch (backend) {
    case GemmBackend::kOpenBlas:
      return "openblas";
    case GemmBackend::kOneDnn:
      return "onednn";
  }
  DDP_CHECK(false, "unknown GemmBackend");
  return {};
}

void gemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  gemm_with(gemm_backend_for(m, n, k), trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm_with(GemmBackend backend, Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  check_shape(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  if (m == 0 || n == 0) return;
  if (k == 0) {
    scale_c(m, n, beta, c, ldc);
    return;
  }
  switch (backend) {
    case GemmBackend::kOpenBlas:
      gemm_openblas(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
    case GemmBackend::kOneDnn:
      gemm_onednn(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
  }
  DDP_CHECK(false, "unknown GemmBackend");
}

void set_gemm_threads(int threads) {
  DDP_CHECK_GE(threads, 1, "set_gemm_threads needs at least one thread");
  openblas_set_num_threads(threads);
  // oneDNN runs on OpenMP. omp_set_num_threads sets the calling thread's team size, so call
  // this from the thread that will run the GEMMs.
  omp_set_num_threads(threads);
}

void stop_idle_gemm_threads() {
  if (blas_thread_shutdown_ != nullptr) blas_thread_shutdown_();
}

}  // namespace ddp
