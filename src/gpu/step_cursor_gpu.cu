#include <cuda_runtime.h>

#include "gpu/cuda_check.h"
#include "gpu/step_cursor.h"

namespace ddp {
namespace {

__global__ void advance_cursor_kernel(StepCursor* cursor, int64_t micro_batches, int64_t* steps_done,
                                      int64_t* steps_done_host) {
  cursor->micro_batch += micro_batches;
  cursor->step += 1;
  const int64_t done = *steps_done + 1;
  *steps_done = done;
  *reinterpret_cast<volatile int64_t*>(steps_done_host) = done;
  __threadfence_system();
}

}  // namespace

void launch_advance_cursor(StepCursor* cursor, int64_t micro_batches, int64_t* steps_done, int64_t* steps_done_host,
                           cudaStream_t stream) {
  advance_cursor_kernel<<<1, 1, 0, stream>>>(cursor, micro_batches, steps_done, steps_done_host);
  check_cuda(cudaGetLastError(), "the step cursor's launch");
}

}  // namespace ddp
