#pragma once
// Backward's elementwise part of one layer on the device: dy *= (y > 0) where the layer has a
// ReLU (torch's threshold_backward, as tensor/kernels' relu_backward), then the bias gradient
// db += the column sums of dy. One kernel where cuBLASLt's epilogues cannot serve: its
// bias-gradient epilogues write db instead of adding to it, and gradients accumulate over
// micro-batches; its ReLU-gradient epilogue needs the forward's bit mask, where y is at hand.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ddp {

// dy and y (b, out) row-major, db (out); y == nullptr: no ReLU (the last layer).
void launch_relu_backward_and_bias_grad(float* dy, const float* y, float* db, int64_t b, int64_t out,
                                        cudaStream_t stream);

}  // namespace ddp
