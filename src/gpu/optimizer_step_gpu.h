#pragma once
// One fused kernel for an optimizer step over the flat buffers: Adam, AdamW or SGD by the
// update rules the host loops use (optim/update_rules.h), one launch per optimizer step. The
// step's scalars come from optim/update_scalars.h on the host.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "gpu/step_cursor.h"
#include "optim/update_rules.h"

namespace ddp {

// On device pointers, enqueued on stream: params and grads (n), Adam's exp_avg m and
// exp_avg_sq v, SGD's momentum buffer b (nullptr without momentum).
void launch_adam_step(const AdamScalars& s, float* params, const float* grads, float* m, float* v, int64_t n,
                      cudaStream_t stream);
void launch_sgd_step(const SgdScalars& s, float* params, const float* grads, float* b, int64_t n, cudaStream_t stream);

// The same inside a captured step (gpu/step_cursor.h): the scalars are row cursor->step of a
// device table the host filled for the epoch's steps, read when the kernel runs.
void launch_adam_step_at(const AdamScalars* table, const StepCursor* cursor, float* params, const float* grads,
                         float* m, float* v, int64_t n, cudaStream_t stream);
void launch_sgd_step_at(const SgdScalars* table, const StepCursor* cursor, float* params, const float* grads, float* b,
                        int64_t n, cudaStream_t stream);

// Host memory in and out, on device 0 (for tests and checks): copies in, runs one step,
// copies params and the state back. For SGD an empty b means no momentum.
void adam_step_on_gpu(const AdamScalars& s, std::vector<float>& params, const std::vector<float>& grads,
                      std::vector<float>& m, std::vector<float>& v);
void sgd_step_on_gpu(const SgdScalars& s, std::vector<float>& params, const std::vector<float>& grads,
                     std::vector<float>& b);

}  // namespace ddp
