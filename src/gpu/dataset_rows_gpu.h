#pragma once
// The teacher's and a CSV file's samples made on the GPU for micro-batch `ahead` of a captured
// step, as launch_normal_rows_at (gpu/normal_rows_gpu.h) makes the random dataset's: its n rows
// are order[(cursor->micro_batch + ahead) * batch_size + r], read on the device when the
// kernel runs, x is (n, input_dim) and y (n, output_dim). One launch each.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "data/teacher_net.h"
#include "gpu/step_cursor.h"

namespace ddp {

// The teacher's samples (data/teacher_dataset.cpp's fill, bit for bit): the inputs and the
// unit noise from Philox counters (key, cursor->data_hi + group, row), then
// y = teacher(x) + noise * noise_unit. net points to device memory; one thread per row.
void launch_teacher_rows_at(const TeacherNet& net, uint64_t key, float noise, const StepCursor* cursor,
                            const int64_t* order, int64_t ahead, int64_t batch_size, int64_t n, float* x, float* y,
                            cudaStream_t stream);

// Rows gathered from the device's copy of a file: inputs (rows, input_dim), targets (rows,
// output_dim); one thread per value.
void launch_gather_rows_at(const float* inputs, const float* targets, int64_t input_dim, int64_t output_dim,
                           const StepCursor* cursor, const int64_t* order, int64_t ahead, int64_t batch_size, int64_t n,
                           float* x, float* y, cudaStream_t stream);

}  // namespace ddp
