#include <cuda_runtime.h>

#include <vector>

#include "data/philox_normal.h"
#include "gpu/cuda_check.h"
#include "gpu/normal_rows_gpu.h"

namespace ddp {
namespace {

__global__ void normal_rows_kernel(uint64_t key, uint64_t hi, const int64_t* rows, int64_t n, float* a, int64_t width_a,
                                   float* b, int64_t width_b) {
  const int64_t width = width_a + width_b, groups = (width + 3) / 4;
  const int64_t block = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (block >= n * groups) return;
  const int64_t row = block / groups, group = block % groups;
  float out[4];
  philox_normal::normals4(key, hi + static_cast<uint64_t>(group), static_cast<uint64_t>(rows[row]), out);
  for (int k = 0; k < 4; ++k) {
    const int64_t e = group * 4 + k;
    if (e < width_a) {
      a[row * width_a + e] = out[k];
    } else if (e < width) {
      b[row * width_b + (e - width_a)] = out[k];
    }
  }
}

// Frees what it holds however the scope ends.
struct DeviceBuffers {
  void* pointers[3] = {nullptr, nullptr, nullptr};
  ~DeviceBuffers() {
    for (void* p : pointers) cudaFree(p);
  }
};

}  // namespace

void launch_normal_rows(uint64_t key, uint64_t hi, const int64_t* rows, int64_t n, float* a, int64_t width_a, float* b,
                        int64_t width_b, cudaStream_t stream) {
  const int64_t blocks = n * ((width_a + width_b + 3) / 4);
  if (blocks == 0) return;
  constexpr int kThreads = 256;
  normal_rows_kernel<<<static_cast<unsigned>((blocks + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      key, hi, rows, n, a, width_a, b, width_b);
  check_cuda(cudaGetLastError(), "the normal_rows kernel's launch");
}

void normal_rows_on_gpu(uint64_t key, uint64_t hi, const std::vector<int64_t>& rows, float* a, int64_t width_a,
                        float* b, int64_t width_b) {
  const auto n = static_cast<int64_t>(rows.size());
  const size_t a_bytes = n * width_a * sizeof(float), b_bytes = n * width_b * sizeof(float);
  DeviceBuffers device;  // + 1: never a zero-size allocation
  check_cuda(cudaMalloc(&device.pointers[0], rows.size() * sizeof(int64_t) + 1), "cudaMalloc");
  check_cuda(cudaMalloc(&device.pointers[1], a_bytes + 1), "cudaMalloc");
  check_cuda(cudaMalloc(&device.pointers[2], b_bytes + 1), "cudaMalloc");
  check_cuda(cudaMemcpy(device.pointers[0], rows.data(), rows.size() * sizeof(int64_t), cudaMemcpyHostToDevice),
             "cudaMemcpy to the device");
  launch_normal_rows(key, hi, static_cast<const int64_t*>(device.pointers[0]), n,
                     static_cast<float*>(device.pointers[1]), width_a, static_cast<float*>(device.pointers[2]), width_b,
                     nullptr);
  if (a_bytes > 0) check_cuda(cudaMemcpy(a, device.pointers[1], a_bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  if (b_bytes > 0) check_cuda(cudaMemcpy(b, device.pointers[2], b_bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
}

}  // namespace ddp
