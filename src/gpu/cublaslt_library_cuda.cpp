#include <fmt/format.h>

#include <string>

#include "gpu/cublaslt_library.h"
#include "gpu/loaded_library.h"

namespace ddp {
namespace {

CublasLt load() {
  const LoadedLibrary library(cublaslt_library_name(), "a GPU run needs cuBLASLt",
                              fmt::format("install CUDA {}'s cuBLAS (the CUDA toolkit, or the nvidia-cublas wheel) or "
                                          "add the folder that has it to LD_LIBRARY_PATH",
                                          CUBLAS_VER_MAJOR));
  const std::string not_it = fmt::format("it is not the cuBLASLt of CUDA {}", CUBLAS_VER_MAJOR);
  CublasLt api;
#define DDP_CUBLASLT_LOAD(function) \
  api.function = reinterpret_cast<decltype(&::function)>(library.symbol(#function, not_it))
  DDP_CUBLASLT_FUNCTIONS(DDP_CUBLASLT_LOAD)
#undef DDP_CUBLASLT_LOAD
  return api;  // the library stays loaded for the process's life
}

}  // namespace

const char* cublaslt_library_name() {
#define DDP_TEXT(value) #value
#define DDP_SONAME(major) "libcublasLt.so." DDP_TEXT(major)
  return DDP_SONAME(CUBLAS_VER_MAJOR);
#undef DDP_SONAME
#undef DDP_TEXT
}

const CublasLt& cublaslt() {
  static const CublasLt kApi = load();
  return kApi;
}

}  // namespace ddp
