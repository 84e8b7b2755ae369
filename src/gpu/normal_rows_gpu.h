#pragma once
// The random and teacher datasets' normals made on the GPU by the CPU's own function
// (data/philox_normal.h): for the same counters, bit for bit what normal_rows() makes, so a
// sample is the same whichever device generated it.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "gpu/step_cursor.h"

namespace ddp {

// As normal_rows() (data/normal_rows.h), on device pointers: rows holds n counters, a is
// (n, width_a), b is (n, width_b); enqueued on stream, one thread per Philox block.
void launch_normal_rows(uint64_t key, uint64_t hi, const int64_t* rows, int64_t n, float* a, int64_t width_a, float* b,
                        int64_t width_b, cudaStream_t stream);

// The same for micro-batch `ahead` of a captured step (gpu/step_cursor.h): its n rows are
// order[(cursor->micro_batch + ahead) * batch_size + r] and hi is cursor->data_hi, both read
// on the device when the kernel runs.
void launch_normal_rows_at(uint64_t key, const StepCursor* cursor, const int64_t* order, int64_t ahead,
                           int64_t batch_size, int64_t n, float* a, int64_t width_a, float* b, int64_t width_b,
                           cudaStream_t stream);

// Host memory in and out, on device 0 (for tests and checks): copies rows in, runs the
// kernel, copies a and b back. Throws Error when CUDA fails.
void normal_rows_on_gpu(uint64_t key, uint64_t hi, const std::vector<int64_t>& rows, float* a, int64_t width_a,
                        float* b, int64_t width_b);

}  // namespace ddp
