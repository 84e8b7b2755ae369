#include <cuda_runtime.h>

#include "data/philox_normal.h"
#include "gpu/cuda_check.h"
#include "gpu/dataset_rows_gpu.h"

namespace ddp {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(int64_t threads) { return static_cast<unsigned>((threads + kThreads - 1) / kThreads); }

__device__ const int64_t* micro_batch_rows(const StepCursor* cursor, const int64_t* order, int64_t ahead,
                                           int64_t batch_size) {
  return order + (cursor->micro_batch + ahead) * batch_size;
}

__global__ void teacher_rows_kernel(TeacherNet net, uint64_t key, float noise, const StepCursor* cursor,
                                    const int64_t* order, int64_t ahead, int64_t batch_size, int64_t n, float* x,
                                    float* y) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= n) return;
  const auto lo = static_cast<uint64_t>(micro_batch_rows(cursor, order, ahead, batch_size)[row]);
  const int64_t in = net.input_dim, width = net.input_dim + net.output_dim;
  float* x_row = x + row * in;
  float* y_row = y + row * net.output_dim;
  // As normal_rows(): element e of the row is normals4(key, hi + e / 4, lo)[e % 4], inputs first.
  for (int64_t group = 0; group * 4 < width; ++group) {
    float out[4];
    philox_normal::normals4(key, cursor->data_hi + static_cast<uint64_t>(group), lo, out);
    for (int k = 0; k < 4; ++k) {
      const int64_t e = group * 4 + k;
      if (e < in) {
        x_row[e] = out[k];
      } else if (e < width) {
        y_row[e - in] = out[k];
      }
    }
  }
  teacher_forward(net, x_row, noise, y_row);
}

__global__ void gather_rows_kernel(const float* inputs, const float* targets, int64_t input_dim, int64_t output_dim,
                                   const StepCursor* cursor, const int64_t* order, int64_t ahead, int64_t batch_size,
                                   int64_t n, float* x, float* y) {
  const int64_t width = input_dim + output_dim;
  const int64_t value = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (value >= n * width) return;
  const int64_t row = value / width, e = value % width;
  const int64_t source = micro_batch_rows(cursor, order, ahead, batch_size)[row];
  if (e < input_dim) {
    x[row * input_dim + e] = inputs[source * input_dim + e];
  } else {
    y[row * output_dim + (e - input_dim)] = targets[source * output_dim + (e - input_dim)];
  }
}

}  // namespace

void launch_teacher_rows_at(const TeacherNet& net, uint64_t key, float noise, const StepCursor* cursor,
                            const int64_t* order, int64_t ahead, int64_t batch_size, int64_t n, float* x, float* y,
                            cudaStream_t stream) {
  if (n == 0) return;
  teacher_rows_kernel<<<grid_for(n), kThreads, 0, stream>>>(net, key, noise, cursor, order, ahead, batch_size, n, x, y);
  check_cuda(cudaGetLastError(), "the teacher_rows kernel's launch");
}

void launch_gather_rows_at(const float* inputs, const float* targets, int64_t input_dim, int64_t output_dim,
                           const StepCursor* cursor, const int64_t* order, int64_t ahead, int64_t batch_size, int64_t n,
                           float* x, float* y, cudaStream_t stream) {
  const int64_t values = n * (input_dim + output_dim);
  if (values == 0) return;
  gather_rows_kernel<<<grid_for(values), kThreads, 0, stream>>>(inputs, targets, input_dim, output_dim, cursor, order,
                                                                ahead, batch_size, n, x, y);
  check_cuda(cudaGetLastError(), "the gather_rows kernel's launch");
}

}  // namespace ddp
