// A build without CUDA (DDPSCOPE_CUDA=OFF, or no nvcc found): no GPU can be used.
#include "gpu/visible_gpus.h"

namespace ddp {

GpuBuild gpu_build() { return {}; }

VisibleGpus visible_gpus() {
  VisibleGpus none;
  none.none_reason = "this ddpscope was built without CUDA; to get a CUDA build, " + how_to_get_a_cuda_build();
  return none;
}

}  // namespace ddp
