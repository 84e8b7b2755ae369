#pragma once
// The teacher's forward pass (data/teacher_dataset.h), written once for the CPU and the GPU
// (gpu/dataset_rows_gpu.cu) as data/philox_normal.h is: every product that feeds a sum is an
// explicit fused multiply-add, in a fixed order, so both make the same bits. nvcc compiles
// this header as C++17: pointers, no spans.
#include <cstdint>

#include "data/philox_normal.h"

namespace ddp {

struct TeacherNet {
  static constexpr int64_t kHidden = 32;
  const float* w1t = nullptr;    // (input_dim, kHidden): transposed so the hidden loop is contiguous
  const float* b1 = nullptr;     // (kHidden)
  const float* w2 = nullptr;     // (output_dim, kHidden)
  const float* b2 = nullptr;     // (output_dim)
  const float* scale = nullptr;  // (output_dim): standardises the raw output
  int64_t input_dim = 0, output_dim = 0;
};

// y = teacher(x) + noise * y: y's old value is the unit noise, ignored when noise is 0.
DDP_HOST_DEVICE inline void teacher_forward(const TeacherNet& net, const float* x, float noise, float* y) {
  using philox_normal::fused;
  float hidden[TeacherNet::kHidden];
  for (int64_t h = 0; h < TeacherNet::kHidden; ++h) hidden[h] = net.b1[h];
  for (int64_t i = 0; i < net.input_dim; ++i) {
    const float* w = &net.w1t[i * TeacherNet::kHidden];
    for (int64_t h = 0; h < TeacherNet::kHidden; ++h) hidden[h] = fused(x[i], w[h], hidden[h]);
  }
  for (float& h : hidden) h = h < 0.0f ? 0.0f : h;
  for (int64_t o = 0; o < net.output_dim; ++o) {
    const float* w = &net.w2[o * TeacherNet::kHidden];
    float sum = 0.0f;
    for (int64_t h = 0; h < TeacherNet::kHidden; ++h) sum = fused(w[h], hidden[h], sum);
    const float clean = fused(sum, net.scale[o], net.b2[o]);
    y[o] = noise == 0.0f ? clean : fused(noise, y[o], clean);
  }
}

}  // namespace ddp
