#pragma once
// Row-major single-precision GEMM through a BLAS, the library chosen per shape by
// measurement (docs/performance.md): C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C.
#include <cstdint>
#include <string_view>

#include "ddpscope/buffer.h"

namespace ddp {

enum class Trans : bool { kNo = false, kYes = true };

enum class GemmBackend { kOpenBlas, kOneDnn };

// Which library gemm() uses for this shape.
GemmBackend gemm_backend_for(int64_t m, int64_t n, int64_t k);
std::string_view gemm_backend_name(GemmBackend backend);

// A is (M,K) stored as given by trans_a (so (K,M) in memory when transposed), lda its row
// stride; likewise B (K,N) and C (M,N), all in host memory.
void gemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Same, forcing one library (benchmarks and tests compare them).
void gemm_with(GemmBackend backend, Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Threads every BLAS may use in this process (one per device by default).
void set_gemm_threads(int threads);

// OpenBLAS starts its threads when the program loads, and each spins about a tenth of a second
// waiting for work, taking a core from whatever the program does first: a command that runs no
// GEMM (reading traces on every core) stops them.
void stop_idle_gemm_threads();

}  // namespace ddp
