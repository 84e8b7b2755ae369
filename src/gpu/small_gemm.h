#pragma once
// The GEMMs that cuBLASLt is not given (gpu/lt_gemm.h): those with a dimension of 1, which
// are the seed's 256->1 output layer (its forward a matrix-vector product, its weight
// gradient one row, its input gradient an outer product) and a micro-batch of one sample.
// PyTorch keeps such shapes away from cuBLASLt's bias epilogue, whose heuristic answers
// CUBLAS_STATUS_INVALID_VALUE for them (pytorch/pytorch, aten/src/ATen/native/cuda/Blas.cpp:
// "if mat2 has only 1 row or column"). Also those whose bias is off a 16-byte boundary,
// which the epilogue can fault on (marian-nmt, src/tensors/gpu/prod.cpp), and any shape the
// heuristic finds no algorithm for.
// Row-major arguments and epilogues as LtGemm::gemm. Each output is the sum of `lanes`
// threads' shares (32, one warp, for a long sum; 1 for a short one) combined in a fixed
// order, so a run repeats its bits. The shares are computed by small_gemm_share, which the
// host tests against its own GEMM.
#include <cstdint>

#include "ddpscope/host_device.h"

namespace ddp {

struct SmallGemm {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;
  int64_t lda = 0;
  const float* b = nullptr;
  int64_t ldb = 0;
  float beta = 0;  // 0: C is not read
  float* c = nullptr;
  int64_t ldc = 0;
  const float* bias = nullptr;  // n floats, or none
};

// Threads per output: a warp's lanes share a sum of 32 products or more.
DDP_HOST_DEVICE inline int small_gemm_lanes(int64_t k) { return k >= 32 ? 32 : 1; }

// Lane `lane` of `lanes`' share of output (i, j): products p = lane, lane + lanes, ...
DDP_HOST_DEVICE inline float small_gemm_share(const SmallGemm& g, int64_t i, int64_t j, int lane, int lanes) {
  float sum = 0.0f;
  for (int64_t p = lane; p < g.k; p += lanes) {
    const float a = g.trans_a ? g.a[p * g.lda + i] : g.a[i * g.lda + p];
    const float b = g.trans_b ? g.b[j * g.ldb + p] : g.b[p * g.ldb + j];
    sum += a * b;
  }
  return sum;
}

// Writes output (i, j) from its product, with beta * C and the bias added.
DDP_HOST_DEVICE inline void small_gemm_store(const SmallGemm& g, int64_t i, int64_t j, float product) {
  float& out = g.c[i * g.ldc + j];
  float value = g.beta == 0.0f ? product : product + g.beta * out;
  if (g.bias != nullptr) value += g.bias[j];
  out = value;
}

// Whether a GEMM goes to small_gemm rather than cuBLASLt, by its shape and bias alone (the
// heuristic's own refusals are found when a shape is first planned).
inline bool small_gemm_takes(int64_t m, int64_t n, int64_t k, const float* bias) {
  const bool bias_unaligned = bias != nullptr && reinterpret_cast<std::uintptr_t>(bias) % 16 != 0;
  return m == 1 || n == 1 || k == 1 || bias_unaligned;
}

}  // namespace ddp
