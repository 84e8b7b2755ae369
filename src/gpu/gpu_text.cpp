// The words shared by both builds: how a GPU is named, and how to get a CUDA build.
#include <fmt/format.h>

#include "gpu/visible_gpus.h"

namespace ddp {

std::string describe_gpu(const GpuDevice& device) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  return fmt::format("{} (sm_{}{}, {:.1f} GiB)", device.name, device.major, device.minor,
                     static_cast<double>(device.memory_bytes) / kGiB);
}

std::string how_to_get_a_cuda_build() {
  return "install the CUDA toolkit so that CMake finds nvcc (or give -DCUDAToolkit_ROOT=DIR and "
         "-DCMAKE_CUDA_COMPILER=DIR/bin/nvcc), then configure and build again; see docs/usage.md";
}

}  // namespace ddp
