#pragma once
// y = a*x + y on the GPU: the smallest kernel that proves a build's device code runs (its
// sm_80/sm_90 code or PTX loads, a launch and both copies work); tests/gpu checks it.
#include <vector>

namespace ddp {

// Returns a*x + y computed on device 0. Throws Error when CUDA fails.
std::vector<float> axpy_on_gpu(float a, const std::vector<float>& x, const std::vector<float>& y);

}  // namespace ddp
