#pragma once
// Where the training is, in device memory (one CUDA graph per optimizer step). A
// captured graph's kernel arguments are fixed, so what changes from step to step (which
// samples a micro-batch takes, the optimizer's per-step scalars) is read by the kernels from
// here, and one small kernel at the end of each step moves it on. The host writes it once
// per epoch, before the epoch's first step.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ddp {

struct StepCursor {
  uint64_t data_hi = 0;     // the dataset's counter for this epoch: epoch << 32 (data/random_dataset.cpp)
  int64_t micro_batch = 0;  // the epoch's micro-batches already taken (its order, batch_size at a time)
  int64_t step = 0;         // the epoch's optimizer steps already taken (a row of its scalar tables)
};

// Enqueued on stream, one thread: micro_batch += micro_batches, step += 1, and the count of
// steps the device finished, *steps_done, plus one, also written to steps_done_host (mapped host
// memory, gpu/mapped_counter.h): how the host sees the device make progress.
void launch_advance_cursor(StepCursor* cursor, int64_t micro_batches, int64_t* steps_done, int64_t* steps_done_host,
                           cudaStream_t stream);

}  // namespace ddp
