#pragma once
// Tests that need a GPU start with DDP_REQUIRE_GPU(): without one they are skipped, with the
// reason, so ctest reports them as not run (never as passed).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "gpu/visible_gpus.h"

namespace ddp::testing {

// The first visible GPU, or nullptr (and reason says why there is none).
inline const GpuDevice* first_gpu(std::string& reason) {
  static const VisibleGpus gpus = visible_gpus();
  reason = gpus.none_reason;
  return gpus.devices.empty() ? nullptr : &gpus.devices.front();
}

// The ddpscope the tests start: the build's, or where a bundle's wrapper says its own is
// (bench/gpu/bundle-env.sh sets DDPSCOPE_TEST_BINARY: the build folder is not on that machine).
inline std::string ddpscope_binary() {
  const char* bundled = std::getenv("DDPSCOPE_TEST_BINARY");
  return bundled != nullptr && *bundled != '\0' ? bundled : DDPSCOPE_BINARY;
}

}  // namespace ddp::testing

#define DDP_REQUIRE_GPU()                                          \
  do {                                                             \
    std::string ddp_no_gpu_reason;                                 \
    if (::ddp::testing::first_gpu(ddp_no_gpu_reason) == nullptr) { \
      GTEST_SKIP() << "no GPU visible: " << ddp_no_gpu_reason;     \
    }                                                              \
  } while (0)
