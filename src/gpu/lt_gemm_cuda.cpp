#include "gpu/lt_gemm.h"

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <initializer_list>

#include "ddpscope/error.h"
#include "gpu/cublaslt_library.h"
#include "gpu/cuda_check.h"
#include "gpu/small_gemm_gpu.h"

namespace ddp {
namespace {

// 32 MiB: what cuBLAS asks for on Hopper to reach its fastest kernels.
constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

void check_lt(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw Error(ExitCode::kOther,
              fmt::format("cuBLASLt: {} failed: {} ({})", call, cublaslt().cublasLtGetStatusString(status),
                          cublaslt().cublasLtGetStatusName(status)));
}

template <typename T>
void set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value) {
  check_lt(cublaslt().cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)),
           "cublasLtMatmulDescSetAttribute");
}

cublasOperation_t op(bool transposed) { return transposed ? CUBLAS_OP_T : CUBLAS_OP_N; }

// The largest power of two up to 16 that divides every address.
int alignment(std::initializer_list<const void*> pointers) {
  int bytes = 16;
  for (const void* p : pointers) {
    if (p == nullptr) continue;
    while (reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(bytes) != 0) bytes /= 2;
  }
  return bytes;
}

}  // namespace

LtGemm::LtGemm(LtMath math) : math_(math) {
  check_lt(cublaslt().cublasLtCreate(&handle_), "cublasLtCreate");
  const cudaError_t status = cudaMalloc(&workspace_, kWorkspaceBytes);
  if (status != cudaSuccess) {
    cublaslt().cublasLtDestroy(handle_);  // no destructor runs for a constructor that throws
    check_cuda(status, "cudaMalloc (the cuBLASLt workspace)");
  }
}

LtGemm::~LtGemm() {
  for (auto& [key, plan] : plans_) destroy(plan);
  cudaFree(workspace_);
  cublaslt().cublasLtDestroy(handle_);
}

void LtGemm::destroy(Plan& plan) {
  for (cublasLtMatrixLayout_t layout : {plan.a, plan.b, plan.c}) {
    if (layout != nullptr) cublaslt().cublasLtMatrixLayoutDestroy(layout);
  }
  if (plan.desc != nullptr) cublaslt().cublasLtMatmulDescDestroy(plan.desc);
}

LtGemm::Plan& LtGemm::plan_for(const Key& key, const float* bias) {
  if (auto found = plans_.find(key); found != plans_.end()) return found->second;
  Plan plan;
  try {
    make_plan(key, bias, plan);
  } catch (...) {
    destroy(plan);  // what was created before cuBLASLt refused
    throw;
  }
  return plans_.emplace(key, plan).first->second;
}

void LtGemm::make_plan(const Key& key, const float* bias, Plan& plan) {
  const auto [ta, tb, m, n, k, lda, ldb, ldc, with_bias, aligned] = key;
  const cublasComputeType_t compute = math_ == LtMath::kTf32   ? CUBLAS_COMPUTE_32F_FAST_TF32
                                      : math_ == LtMath::kBf16 ? CUBLAS_COMPUTE_32F_FAST_16BF
                                                               : CUBLAS_COMPUTE_32F;
  check_lt(cublaslt().cublasLtMatmulDescCreate(&plan.desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  // cuBLASLt's A is our B and its B our A (the header's transpose): its m is our n.
  set(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, op(tb));
  set(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, op(ta));
  set(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, with_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);
  if (bias != nullptr) set(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);  // the heuristic reads its alignment
  // Stored shapes, column-major: a row-major (r, c) matrix is a column-major (c, r) one.
  check_lt(cublaslt().cublasLtMatrixLayoutCreate(&plan.a, CUDA_R_32F, static_cast<uint64_t>(tb ? k : n),
                                                 static_cast<uint64_t>(tb ? n : k), ldb),
           "cublasLtMatrixLayoutCreate (B)");
  check_lt(cublaslt().cublasLtMatrixLayoutCreate(&plan.b, CUDA_R_32F, static_cast<uint64_t>(ta ? m : k),
                                                 static_cast<uint64_t>(ta ? k : m), lda),
           "cublasLtMatrixLayoutCreate (A)");
  check_lt(cublaslt().cublasLtMatrixLayoutCreate(&plan.c, CUDA_R_32F, static_cast<uint64_t>(n),
                                                 static_cast<uint64_t>(m), ldc),
           "cublasLtMatrixLayoutCreate (C)");

  cublasLtMatmulPreference_t preference = nullptr;
  check_lt(cublaslt().cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  const uint64_t workspace = kWorkspaceBytes;
  const auto bytes = static_cast<uint32_t>(aligned);
  cublasStatus_t status = cublaslt().cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace));
  for (const auto attribute :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    if (status == CUBLAS_STATUS_SUCCESS)
      status = cublaslt().cublasLtMatmulPreferenceSetAttribute(preference, attribute, &bytes, sizeof(bytes));
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (status == CUBLAS_STATUS_SUCCESS) {
    status = cublaslt().cublasLtMatmulAlgoGetHeuristic(handle_, plan.desc, plan.a, plan.b, plan.c, plan.c, preference,
                                                       1, &result, &found);
  }
  cublaslt().cublasLtMatmulPreferenceDestroy(preference);
  const HeuristicAnswer answer = read_heuristic(status, found, result.state);
  // What to name in the message: the failed state of an algorithm returned.
  if (status == CUBLAS_STATUS_SUCCESS && found > 0) status = result.state;
  if (answer == HeuristicAnswer::kRefused) {
    // Slower, never wrong: said once per shape, so that a user who sees the step slow knows why.
    std::fprintf(stderr,
                 "ddpscope: cuBLASLt has no algorithm for a %lldx%lldx%lld GEMM with this bias and %d-byte "
                 "alignment (%s); ddpscope's own kernel computes it\n",
                 static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), aligned,
                 status == CUBLAS_STATUS_SUCCESS ? "none found" : cublaslt().cublasLtGetStatusName(status));
    plan.small = true;
    return;
  }
  check_lt(status, "cublasLtMatmulAlgoGetHeuristic");
  plan.algo = result.algo;
}

void LtGemm::gemm(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                  int64_t ldb, float beta, float* c, int64_t ldc, const float* bias, cudaStream_t stream) {
  Plan* plan = nullptr;
  if (!small_gemm_takes(m, n, k, bias)) {
    const Key key{ta == Trans::kYes, tb == Trans::kYes,         m, n, k, lda, ldb, ldc,
                  bias != nullptr,   alignment({a, b, c, bias})};
    plan = &plan_for(key, bias);
  }
  if (plan == nullptr || plan->small) {
    launch_small_gemm({.trans_a = ta == Trans::kYes,
                       .trans_b = tb == Trans::kYes,
                       .m = m,
                       .n = n,
                       .k = k,
                       .a = a,
                       .lda = lda,
                       .b = b,
                       .ldb = ldb,
                       .beta = beta,
                       .c = c,
                       .ldc = ldc,
                       .bias = bias},
                      stream);
    return;
  }
  if (bias != nullptr) set(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  const float alpha = 1.0f;
  check_lt(cublaslt().cublasLtMatmul(handle_, plan->desc, &alpha, b, plan->a, a, plan->b, &beta, c, plan->c, c, plan->c,
                                     &plan->algo, workspace_, kWorkspaceBytes, stream),
           "cublasLtMatmul");
}

}  // namespace ddp
