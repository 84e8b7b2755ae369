#pragma once
// Row-major GEMMs on the device through cuBLASLt, with a bias fused into the
// product (its epilogue). The same arguments as tensor/gemm.h's host gemm:
//   C (m,n) = op(A) (m,k) * op(B) (k,n) + beta * C, all row-major with leading dimensions,
// then + bias[j] on every row when a bias is given. No ReLU epilogue: cuBLASLt's makes a NaN
// 0, where torch.relu keeps it, and a diverged run must show in its loss (gpu/relu_gpu.h).
// cuBLASLt is column-major; a row-major matrix is its column-major transpose, so the call
// computes C^T = op(B)^T op(A)^T: B's buffer is cuBLASLt's A and A's is its B, with m and n
// swapped, and the bias, one per row of cuBLASLt's D, falls on C's columns as it should.
// A heuristic's algorithm is chosen once per shape (and pointer alignment: the flat buffer's
// layers need not start on 16 bytes) and kept; the workspace is allocated once, so a call
// after the first of its shape allocates nothing and can be captured into a CUDA graph.
// The shapes cuBLASLt is not given, or that it refuses, go to gpu/small_gemm.h's kernel.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <tuple>

#include "tensor/gemm.h"

namespace ddp {

// Lightning's --precision names: 32-true is IEEE fp32 products (no TF32), tf32 lets the
// tensor cores round the inputs to TF32, bf16-mixed to bf16 (cuBLAS's 32F_FAST_16BF: storage
// and accumulation stay fp32, so the master weights, gradients and optimizer are fp32; the
// library may take TF32 instead where that is faster, never less precise than bf16).
enum class LtMath { kFp32, kTf32, kBf16 };

// What cublasLtMatmulAlgoGetHeuristic's answer means: an algorithm to use, a shape cuBLASLt
// refuses (gpu/small_gemm.h computes it, slower and never wrong), or an error. A returned
// algorithm whose `state` is not success cannot be used (cublasLt.h): refused too.
enum class HeuristicAnswer { kUse, kRefused, kError };
inline HeuristicAnswer read_heuristic(cublasStatus_t status, int found, cublasStatus_t state) {
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE) return HeuristicAnswer::kRefused;
  if (status != CUBLAS_STATUS_SUCCESS) return HeuristicAnswer::kError;
  return found > 0 && state == CUBLAS_STATUS_SUCCESS ? HeuristicAnswer::kUse : HeuristicAnswer::kRefused;
}

class LtGemm {
 public:
  explicit LtGemm(LtMath math = LtMath::kFp32);
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;
  ~LtGemm();

  // Device pointers; bias: n floats added to every row, or nullptr.
  void gemm(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
            int64_t ldb, float beta, float* c, int64_t ldc, const float* bias, cudaStream_t stream);

 private:
  // One shape's descriptors and algorithm (in cuBLASLt's column-major terms).
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool small = false;  // the heuristic refused it: small_gemm computes it
  };
  // ta, tb, m, n, k, lda, ldb, ldc, with a bias, the pointers' common alignment in bytes
  using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, int>;
  Plan& plan_for(const Key& key, const float* bias);
  void make_plan(const Key& key, const float* bias, Plan& plan);  // fills plan, or throws leaving what it made
  static void destroy(Plan& plan);

  LtMath math_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::map<Key, Plan> plans_;
};

}  // namespace ddp
