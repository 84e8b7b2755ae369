#pragma once
// A dataset's samples made on the GPU (gpu/gpu_data_spec.h): the teacher's weights or a CSV
// file's rows are uploaded once by the constructor; each micro-batch is then one kernel,
// whatever the dataset, enqueued on the step's stream and reading which samples from the
// step's cursor (gpu/step_cursor.h), so a captured step needs nothing from the host.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

#include "gpu/device_array.h"
#include "gpu/gpu_data_spec.h"
#include "gpu/step_cursor.h"

namespace ddp {

class GpuSamples {
 public:
  GpuSamples(const GpuDataSpec& spec, int64_t input_dim, int64_t output_dim);
  GpuSamples(const GpuSamples&) = delete;
  GpuSamples& operator=(const GpuSamples&) = delete;

  int64_t size() const { return spec_.size; }
  // What the cursor's data_hi holds during an epoch (GpuDataSpec::counter_hi).
  uint64_t counter_hi(int64_t epoch) const { return spec_.counter_hi(epoch); }

  // Micro-batch `ahead` of the cursor's step: its n samples, order[(cursor->micro_batch +
  // ahead) * batch_size + r], into x (n, input_dim) and y (n, output_dim), all on the device.
  void enqueue(const StepCursor* cursor, const int64_t* order, int64_t ahead, int64_t batch_size, int64_t n, float* x,
               float* y, cudaStream_t stream) const;

  // Dataset::fill's contract in host memory (for tests and checks; synchronises): the
  // samples of indices with epoch's data, made on the device.
  void fill_on_host(int64_t epoch, std::span<const int64_t> indices, float* x, float* y) const;

 private:
  GpuDataSpec spec_;  // its pointers: the host's; the device's copies are below
  int64_t input_dim_, output_dim_;
  DeviceArray<float> weights_;           // the teacher's w1t, b1, w2, b2, scale, one after another
  TeacherNet device_net_;                // pointing into weights_
  DeviceArray<float> inputs_, targets_;  // a file's rows
};

}  // namespace ddp
