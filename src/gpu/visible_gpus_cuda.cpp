// A CUDA build: the GPUs cudart (linked statically) finds through the driver, or why none.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "gpu/cublaslt_library.h"
#include "gpu/nccl_comm.h"
#include "gpu/visible_gpus.h"

namespace ddp {
namespace {

std::string version_text(int cuda_version) {  // 13000 -> "13.0"
  return fmt::format("{}.{}", cuda_version / 1000, cuda_version % 1000 / 10);
}

// cudaGetDeviceCount's failure in words a user can act on.
std::string no_device_reason(cudaError_t status) {
  const std::string built_for = version_text(CUDART_VERSION);
  switch (status) {
    case cudaErrorInsufficientDriver:
      return fmt::format(
          "no NVIDIA driver that supports CUDA {} is installed (cudaErrorInsufficientDriver): this machine "
          "has no driver, or one older than this build's CUDA needs; nvidia-smi shows the driver",
          built_for);
    case cudaErrorNoDevice:
      return "the NVIDIA driver sees no CUDA device (cudaErrorNoDevice); check nvidia-smi and CUDA_VISIBLE_DEVICES";
    case cudaErrorInvalidDevice:
      return "CUDA_VISIBLE_DEVICES names no device the driver has (cudaErrorInvalidDevice)";
    case cudaErrorSystemDriverMismatch:
      return "the NVIDIA driver and its kernel module are of different versions (cudaErrorSystemDriverMismatch); "
             "reboot or reinstall the driver";
    default:
      return fmt::format("CUDA could not list the devices: {} ({})", cudaGetErrorString(status),
                         cudaGetErrorName(status));
  }
}

}  // namespace

GpuBuild gpu_build() {
  GpuBuild build;
  build.with_cuda = true;
  build.cuda_version = version_text(CUDART_VERSION);
  build.architectures = DDPSCOPE_CUDA_ARCHITECTURES;
  build.cublaslt = cublaslt_library_name();
  build.nccl = nccl_library_name();
  return build;
}

VisibleGpus visible_gpus() {
  VisibleGpus gpus;
  int driver = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) gpus.driver_cuda_version = version_text(driver);
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // the failure is reported here; later calls must not see it again
    gpus.none_reason = no_device_reason(status);
    return gpus;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    gpus.devices.push_back({i, prop.name, prop.major, prop.minor, static_cast<uint64_t>(prop.totalGlobalMem)});
  }
  if (gpus.devices.empty()) gpus.none_reason = "the NVIDIA driver reports no usable CUDA device";
  return gpus;
}

}  // namespace ddp
