#pragma once
// cuBLASLt, loaded on first use with dlopen, as NVML is: its library is over 500 MB, and a
// link to it makes every ddpscope process load it at start, GPU or not (0.45 s a process on
// the development machine, three processes for a two-rank run).
#include <cublasLt.h>

namespace ddp {

#define DDP_CUBLASLT_FUNCTIONS(X)          \
  X(cublasLtCreate);                       \
  X(cublasLtDestroy);                      \
  X(cublasLtGetStatusName);                \
  X(cublasLtGetStatusString);              \
  X(cublasLtMatmul);                       \
  X(cublasLtMatmulAlgoGetHeuristic);       \
  X(cublasLtMatmulDescCreate);             \
  X(cublasLtMatmulDescDestroy);            \
  X(cublasLtMatmulDescSetAttribute);       \
  X(cublasLtMatmulPreferenceCreate);       \
  X(cublasLtMatmulPreferenceDestroy);      \
  X(cublasLtMatmulPreferenceSetAttribute); \
  X(cublasLtMatrixLayoutCreate);           \
  X(cublasLtMatrixLayoutDestroy);

// The functions this project calls, by their own names, from the cuBLASLt of the toolkit it
// was built with (libcublasLt.so.<CUBLAS_VER_MAJOR>).
struct CublasLt {
#define DDP_CUBLASLT_MEMBER(name) decltype(&::name) name = nullptr
  DDP_CUBLASLT_FUNCTIONS(DDP_CUBLASLT_MEMBER)
#undef DDP_CUBLASLT_MEMBER
};

// "libcublasLt.so.13": the library cublaslt() loads, of the toolkit this was built with.
const char* cublaslt_library_name();

// Loads the library once; throws UsageError naming it, the loader's reason and what to
// install when it cannot (a later call tries again).
const CublasLt& cublaslt();

}  // namespace ddp
