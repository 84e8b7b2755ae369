// cuBLASLt is loaded on first use (gpu/cublaslt_library.h), not at start, and every function
// the project calls is found in the toolkit's library. Runs without a GPU: loading the
// library and naming a status need no device.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "gpu/cublaslt_library.h"

namespace ddp {
namespace {

TEST(CublasLtLibrary, IsLoadedOnFirstUseWithEveryFunctionTheProjectCalls) {
  // This test links the engine as ddpscope does: a CPU run there does not load it either.
  const std::string name = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  EXPECT_EQ(dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD), nullptr) << name << " was loaded at start";
  const CublasLt& api = cublaslt();
#define DDP_EXPECT_LOADED(function) EXPECT_NE(api.function, nullptr) << #function
  DDP_CUBLASLT_FUNCTIONS(DDP_EXPECT_LOADED)
#undef DDP_EXPECT_LOADED
  EXPECT_EQ(std::string(api.cublasLtGetStatusName(CUBLAS_STATUS_SUCCESS)), "CUBLAS_STATUS_SUCCESS");
  EXPECT_EQ(&cublaslt(), &api) << "loaded once";
  EXPECT_NE(dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD), nullptr);
}

}  // namespace
}  // namespace ddp
