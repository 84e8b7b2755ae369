#include <cuda_runtime.h>

#include "gpu/cuda_check.h"
#include "gpu/step_cursor.h"

namespace ddp {
namespace {

__global__ void advance_cursor_kernel(StepCursor* cursor, int64_t micro_batches) {
  cursor->micro_batch += micro_batches;
  cursor->step += 1;
}

}  // namespace

void launch_advance_cursor(StepCursor* cursor, int64_t micro_batches, cudaStream_t stream) {
  advance_cursor_kernel<<<1, 1, 0, stream>>>(cursor, micro_batches);
  check_cuda(cudaGetLastError(), "the step cursor's launch");
}

}  // namespace ddp
