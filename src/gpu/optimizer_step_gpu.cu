#include <cuda_runtime.h>

#include "base/check.h"
#include "ddpscope/error.h"
#include "gpu/cuda_check.h"
#include "gpu/device_array.h"
#include "gpu/optimizer_step_gpu.h"

namespace ddp {
namespace {

constexpr int kThreads = 256;

// Grid-stride loops: one launch covers any n. The scalars come by value (eager calls) or from
// a table row chosen by the step cursor (captured steps).
__device__ void adam_elements(const AdamScalars& s, float* p, const float* g, float* m, float* v, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    adam_update(s, p[i], g[i], m[i], v[i]);
  }
}

__device__ void sgd_elements(const SgdScalars& s, float* p, const float* g, float* b, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (b == nullptr) {
      sgd_update(s, p[i], g[i]);
    } else {
      sgd_momentum_update(s, p[i], g[i], b[i]);
    }
  }
}

__global__ void adam_kernel(AdamScalars s, float* p, const float* g, float* m, float* v, int64_t n) {
  adam_elements(s, p, g, m, v, n);
}

__global__ void adam_at_kernel(const AdamScalars* table, const StepCursor* cursor, float* p, const float* g, float* m,
                               float* v, int64_t n) {
  const AdamScalars s = table[cursor->step];  // a copy: p's stores could alias the table
  adam_elements(s, p, g, m, v, n);
}

__global__ void sgd_kernel(SgdScalars s, float* p, const float* g, float* b, int64_t n) { sgd_elements(s, p, g, b, n); }

__global__ void sgd_at_kernel(const SgdScalars* table, const StepCursor* cursor, float* p, const float* g, float* b,
                              int64_t n) {
  const SgdScalars s = table[cursor->step];
  sgd_elements(s, p, g, b, n);
}

unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
}

}  // namespace

void launch_adam_step(const AdamScalars& s, float* params, const float* grads, float* m, float* v, int64_t n,
                      cudaStream_t stream) {
  if (n == 0) return;
  adam_kernel<<<grid_for(n), kThreads, 0, stream>>>(s, params, grads, m, v, n);
  check_cuda(cudaGetLastError(), "the Adam kernel's launch");
}

void launch_sgd_step(const SgdScalars& s, float* params, const float* grads, float* b, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  sgd_kernel<<<grid_for(n), kThreads, 0, stream>>>(s, params, grads, b, n);
  check_cuda(cudaGetLastError(), "the SGD kernel's launch");
}

void launch_adam_step_at(const AdamScalars* table, const StepCursor* cursor, float* params, const float* grads,
                         float* m, float* v, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  adam_at_kernel<<<grid_for(n), kThreads, 0, stream>>>(table, cursor, params, grads, m, v, n);
  check_cuda(cudaGetLastError(), "the Adam kernel's launch");
}

void launch_sgd_step_at(const SgdScalars* table, const StepCursor* cursor, float* params, const float* grads, float* b,
                        int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  sgd_at_kernel<<<grid_for(n), kThreads, 0, stream>>>(table, cursor, params, grads, b, n);
  check_cuda(cudaGetLastError(), "the SGD kernel's launch");
}

void adam_step_on_gpu(const AdamScalars& s, std::vector<float>& params, const std::vector<float>& grads,
                      std::vector<float>& m, std::vector<float>& v) {
  DDP_CHECK_EQ(params.size(), grads.size());
  const DeviceArray<float> p(params), g(grads), dm(m), dv(v);
  launch_adam_step(s, p.data(), g.data(), dm.data(), dv.data(), static_cast<int64_t>(params.size()), nullptr);
  p.copy_to(params);
  dm.copy_to(m);
  dv.copy_to(v);
}

void sgd_step_on_gpu(const SgdScalars& s, std::vector<float>& params, const std::vector<float>& grads,
                     std::vector<float>& b) {
  DDP_CHECK_EQ(params.size(), grads.size());
  const DeviceArray<float> p(params), g(grads), db(b);
  launch_sgd_step(s, p.data(), g.data(), b.empty() ? nullptr : db.data(), static_cast<int64_t>(params.size()), nullptr);
  p.copy_to(params);
  db.copy_to(b);
}

}  // namespace ddp
