#include <dlfcn.h>
#include <fmt/format.h>

#include <string>

#include "ddpscope/error.h"
#include "gpu/cublaslt_library.h"

namespace ddp {
namespace {

CublasLt load() {
  const std::string name = cublaslt_library_name();
  void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    throw UsageError(fmt::format(
        "a GPU run needs cuBLASLt, but {} could not be loaded ({}); install CUDA {}'s cuBLAS (the CUDA toolkit, or "
        "the nvidia-cublas wheel) or add the folder that has it to LD_LIBRARY_PATH",
        name, dlerror(), CUBLAS_VER_MAJOR));
  }
  CublasLt api;
  const auto find = [&](const char* function) {
    void* address = dlsym(library, function);
    if (address == nullptr) {
      throw UsageError(
          fmt::format("{} has no {}: it is not the cuBLASLt of CUDA {}", name, function, CUBLAS_VER_MAJOR));
    }
    return address;
  };
#define DDP_CUBLASLT_LOAD(function) api.function = reinterpret_cast<decltype(&::function)>(find(#function))
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
