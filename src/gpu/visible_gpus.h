#pragma once
// What this build can do on a GPU and which GPUs this process sees: the facts that
// --accelerator cuda|auto, --precision and `ddpscope devices` decide and report from.
// Asking costs a CUDA initialisation (a driver load), so only code that needs a GPU asks.
#include <cstdint>
#include <string>
#include <vector>

namespace ddp {

struct GpuDevice {
  int index = 0;
  std::string name;  // "NVIDIA H200"
  int major = 0;     // compute capability, e.g. 9.0 for Hopper
  int minor = 0;
  uint64_t memory_bytes = 0;
};

// How this ddpscope was built: with CUDA or not, which toolkit, which architectures.
struct GpuBuild {
  bool with_cuda = false;
  std::string cuda_version;   // "13.0"; empty without CUDA
  std::string architectures;  // CMake's CUDA_ARCHITECTURES, e.g. "80-real 90-real 90-virtual"
  std::string cublaslt;       // the library a GPU run loads, "libcublasLt.so.13"; empty without CUDA
  std::string nccl;           // the one GPU ranks load to average over NCCL, "libnccl.so.2"; empty without
};

struct VisibleGpus {
  std::vector<GpuDevice> devices;
  std::string none_reason;          // why devices is empty, in the user's words; empty when it is not
  std::string driver_cuda_version;  // the newest CUDA the driver supports, "13.0"; empty without one
};

GpuBuild gpu_build();
VisibleGpus visible_gpus();

// "NVIDIA H200 (sm_90, 139.8 GiB)"
std::string describe_gpu(const GpuDevice& device);

// What a user does to get a build with the GPU path (the message of a refusal without one).
std::string how_to_get_a_cuda_build();

}  // namespace ddp
