#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "data/philox_normal.h"
#include "gpu/cuda_check.h"
#include "gpu/device_array.h"
#include "gpu/normal_rows_gpu.h"

namespace ddp {
namespace {

// Philox block `group` of one row: normals4 at (hi + group, lo), its elements 4 group .. 4 group + 3.
__device__ void normal_block(uint64_t key, uint64_t hi, int64_t lo, int64_t row, int64_t group, float* a,
                             int64_t width_a, float* b, int64_t width_b) {
  const int64_t width = width_a + width_b;
  float out[4];
  philox_normal::normals4(key, hi + static_cast<uint64_t>(group), static_cast<uint64_t>(lo), out);
  for (int k = 0; k < 4; ++k) {
    const int64_t e = group * 4 + k;
    if (e < width_a) {
      a[row * width_a + e] = out[k];
    } else if (e < width) {
      b[row * width_b + (e - width_a)] = out[k];
    }
  }
}

__global__ void normal_rows_kernel(uint64_t key, uint64_t hi, const int64_t* rows, int64_t n, float* a, int64_t width_a,
                                   float* b, int64_t width_b) {
  const int64_t groups = (width_a + width_b + 3) / 4;
  const int64_t block = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (block >= n * groups) return;
  const int64_t row = block / groups;
  normal_block(key, hi, rows[row], row, block % groups, a, width_a, b, width_b);
}

__global__ void normal_rows_at_kernel(uint64_t key, const StepCursor* cursor, const int64_t* order, int64_t ahead,
                                      int64_t batch_size, int64_t n, float* a, int64_t width_a, float* b,
                                      int64_t width_b) {
  const int64_t groups = (width_a + width_b + 3) / 4;
  const int64_t block = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (block >= n * groups) return;
  const int64_t row = block / groups;
  const int64_t* rows = order + (cursor->micro_batch + ahead) * batch_size;
  normal_block(key, cursor->data_hi, rows[row], row, block % groups, a, width_a, b, width_b);
}

constexpr int kThreads = 256;

unsigned grid_for(int64_t blocks) { return static_cast<unsigned>((blocks + kThreads - 1) / kThreads); }

}  // namespace

void launch_normal_rows(uint64_t key, uint64_t hi, const int64_t* rows, int64_t n, float* a, int64_t width_a, float* b,
                        int64_t width_b, cudaStream_t stream) {
  const int64_t blocks = n * ((width_a + width_b + 3) / 4);
  if (blocks == 0) return;
  normal_rows_kernel<<<grid_for(blocks), kThreads, 0, stream>>>(key, hi, rows, n, a, width_a, b, width_b);
  check_cuda(cudaGetLastError(), "the normal_rows kernel's launch");
}

void launch_normal_rows_at(uint64_t key, const StepCursor* cursor, const int64_t* order, int64_t ahead,
                           int64_t batch_size, int64_t n, float* a, int64_t width_a, float* b, int64_t width_b,
                           cudaStream_t stream) {
  const int64_t blocks = n * ((width_a + width_b + 3) / 4);
  if (blocks == 0) return;
  normal_rows_at_kernel<<<grid_for(blocks), kThreads, 0, stream>>>(key, cursor, order, ahead, batch_size, n, a, width_a,
                                                                   b, width_b);
  check_cuda(cudaGetLastError(), "the normal_rows kernel's launch");
}

void normal_rows_on_gpu(uint64_t key, uint64_t hi, const std::vector<int64_t>& rows, float* a, int64_t width_a,
                        float* b, int64_t width_b) {
  const auto n = static_cast<int64_t>(rows.size());
  const DeviceArray<int64_t> d_rows(rows);
  const DeviceArray<float> d_a(n * width_a), d_b(n * width_b);
  launch_normal_rows(key, hi, d_rows.data(), n, d_a.data(), width_a, d_b.data(), width_b, nullptr);
  const std::vector<float> host_a = d_a.to_host(), host_b = d_b.to_host();
  std::copy(host_a.begin(), host_a.end(), a);
  std::copy(host_b.begin(), host_b.end(), b);
}

}  // namespace ddp
