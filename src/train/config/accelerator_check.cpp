#include "train/config/accelerator_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "ddpscope/error.h"
#include "dist/mpi_communicator.h"
#include "gpu/visible_gpus.h"
#include "train/config/run_config.h"

namespace ddp {
namespace {

// What each precision other than 32-true needs that a CPU does not have.
const char* gpu_feature(Precision precision) {
  return precision == Precision::kTf32 ? "TF32 tensor cores" : "bf16 compute on a GPU";
}

// The options that only a GPU run has: a precision other than 32-true, --no-cuda-graph,
// NCCL (CPU ranks average over MPI, which is what mpi names).
void refuse_gpu_options_on_cpu(const TrainerOptions& options, const std::string& why_cpu) {
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
  if (options.process_group_backend == ProcessGroupBackend::kNccl) {
    throw UsageError(fmt::format(
        "--process-group-backend nccl needs --accelerator cuda (NCCL averages gradients on GPUs); {}, where ranks "
        "average over MPI (auto or mpi)",
        why_cpu));
  }
}

// Why the GPU engine cannot train this run, as the end of a refusal ("" when it can): it
// trains the built-in regression task on the data it makes itself (issues 12 and 13), and
// its ranks average once per optimizer step (no ablation of no_sync).
std::string gpu_engine_lacks(const TrainerOptions& options, bool regression_on_gpu_data) {
  if (!regression_on_gpu_data) {
    return "the GPU engine trains the built-in regression task on --data random, teacher or csv:PATH (it makes "
           "their samples on the GPU); train custom modules and datasets with --accelerator cpu";
  }
  if (options.sync_every_micro_batch) {
    return "--sync-every-micro-batch ablates the CPU reducer's no_sync, and the GPU engine's ranks average once per "
           "optimizer step; run that ablation with --accelerator cpu";
  }
  return "";
}

// Why auto trains on CPU though gpus are visible ("" when it takes them): what the engine
// lacks, or fewer GPUs than this host's ranks (Lightning's devices=N needs N GPUs; cuda
// shares them, and says so).
std::string auto_lacks(const TrainerOptions& options, bool regression_on_gpu_data, std::size_t gpus) {
  const std::string lacks = gpu_engine_lacks(options, regression_on_gpu_data);
  const int devices = std::max(options.devices, 1);
  if (!lacks.empty() || gpus >= static_cast<std::size_t>(devices)) return lacks;
  return fmt::format("--devices {} wants a GPU per rank and {} visible; --accelerator cuda shares them", devices,
                     gpus == 1 ? "1 is" : fmt::format("{} are", gpus));
}

}  // namespace

bool gpu_makes_data(const std::string& data) {
  return data == "random" || data == "teacher" || data.starts_with("csv:");
}

void check_accelerator(const Config& config) {
  const TrainerOptions& options = config.trainer;
  if (options.accelerator == Accelerator::kCpu) {
    refuse_gpu_options_on_cpu(options, "this run is on CPU (--accelerator cpu)");
    return;
  }
  const bool regression_on_gpu_data = gpu_makes_data(config.data.data);
  if (options.accelerator == Accelerator::kCuda) {
    trains_on_gpu(options, regression_on_gpu_data);  // or refuses, saying why
    return;
  }
  const VisibleGpus gpus = visible_gpus();
  if (gpus.devices.empty()) {
    refuse_gpu_options_on_cpu(options, "--accelerator auto found no GPU and trains on CPU");
    return;
  }
  const std::string lacks = auto_lacks(options, regression_on_gpu_data, gpus.devices.size());
  const GpuDevice& gpu = gpus.devices.front();
  if (!lacks.empty()) {
    refuse_gpu_options_on_cpu(options, fmt::format("--accelerator auto found {} but trains on CPU", describe_gpu(gpu)));
  }
  // Lightning's "GPU available: True (cuda), used: ...": said once, by the process that was
  // started (the ranks it launches under mpirun check again, silently).
  static bool said = false;
  if (!said && !launched_by_mpi()) {
    said = true;
    if (lacks.empty()) {
      std::fprintf(stderr, "GPU available: %s (sm_%d%d); using cuda\n", gpu.name.c_str(), gpu.major, gpu.minor);
    } else {
      std::fprintf(stderr, "GPU available: %s (sm_%d%d), but %s; using cpu\n", gpu.name.c_str(), gpu.major, gpu.minor,
                   lacks.c_str());
    }
  }
}

bool trains_on_gpu(const TrainerOptions& options, bool regression_on_gpu_data) {
  if (options.accelerator == Accelerator::kCpu) return false;
  if (options.accelerator == Accelerator::kAuto) {
    const VisibleGpus gpus = visible_gpus();
    return !gpus.devices.empty() && auto_lacks(options, regression_on_gpu_data, gpus.devices.size()).empty();
  }
  const std::string lacks = gpu_engine_lacks(options, regression_on_gpu_data);
  if (!lacks.empty()) throw UsageError("--accelerator cuda: " + lacks);
  const VisibleGpus gpus = visible_gpus();
  if (gpus.devices.empty()) {
    throw UsageError(gpu_build().with_cuda ? "--accelerator cuda: no CUDA device was found: " + gpus.none_reason
                                           : "--accelerator cuda: " + gpus.none_reason);
  }
  return true;
}

}  // namespace ddp
