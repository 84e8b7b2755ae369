#include "train/accelerator_check.h"

#include <fmt/format.h>

#include <cstdio>

#include "ddpscope/error.h"
#include "dist/mpi_communicator.h"
#include "gpu/visible_gpus.h"

namespace ddp {
namespace {

// What each precision other than 32-true needs that a CPU does not have.
const char* gpu_feature(Precision precision) {
  return precision == Precision::kTf32 ? "TF32 tensor cores" : "bf16 compute on a GPU";
}

// The options that only a GPU run has: a precision other than 32-true, --no-cuda-graph.
void refuse_gpu_options_on_cpu(const TrainerOptions& options, const char* why_cpu) {
  if (options.precision != Precision::k32True) {
    throw UsageError(fmt::format("--precision {} needs --accelerator cuda ({}); {}, where only 32-true is accepted",
                                 spelling(options.precision), gpu_feature(options.precision), why_cpu));
  }
  if (options.no_cuda_graph) {
    throw UsageError(fmt::format(
        "--no-cuda-graph needs --accelerator cuda (it launches a GPU step's kernels one by one); {}, where a step "
        "has no CUDA graph to leave out",
        why_cpu));
  }
}

[[noreturn]] void refuse_gpu_training(const GpuDevice& gpu) {
  throw UsageError(
      fmt::format("--accelerator cuda: found {}, but GPU training is not built yet in this version of ddpscope; "
                  "use --accelerator cpu (or auto); see docs/usage.md",
                  describe_gpu(gpu)));
}

}  // namespace

void check_accelerator(const TrainerOptions& options) {
  if (options.accelerator == Accelerator::kCpu) {
    refuse_gpu_options_on_cpu(options, "this run is on CPU (--accelerator cpu)");
    return;
  }
  const VisibleGpus gpus = visible_gpus();
  if (gpus.devices.empty()) {
    if (options.accelerator == Accelerator::kCuda) {
      throw UsageError(gpu_build().with_cuda ? "--accelerator cuda: no CUDA device was found: " + gpus.none_reason
                                             : "--accelerator cuda: " + gpus.none_reason);
    }
    refuse_gpu_options_on_cpu(options, "--accelerator auto found no GPU and trains on CPU");
    return;
  }
  if (options.accelerator == Accelerator::kCuda || options.precision != Precision::k32True || options.no_cuda_graph) {
    refuse_gpu_training(gpus.devices.front());
  }
  // Lightning's "GPU available: True (cuda), used: False": said once, by the process that
  // was started (the ranks it launches under mpirun check again, silently).
  static bool said = false;
  if (!said && !launched_by_mpi()) {
    said = true;
    const GpuDevice& gpu = gpus.devices.front();
    std::fprintf(stderr, "GPU available: %s (sm_%d%d), but this version trains on CPU; using cpu\n", gpu.name.c_str(),
                 gpu.major, gpu.minor);
  }
}

}  // namespace ddp
