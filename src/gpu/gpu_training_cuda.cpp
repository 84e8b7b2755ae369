#include <algorithm>
#include <exception>

#include "base/check.h"
#include "ddpscope/error.h"
#include "gpu/cuda_check.h"
#include "gpu/gpu_training.h"
#include "gpu/train_step_gpu.h"

namespace ddp {
namespace {

// Makes spec.device this process's current GPU, before the step allocates anything on it.
void use_device(const GpuStepSpec& spec) {
  DDP_CHECK(spec.world == 1 || spec.reduce_gradients || spec.nccl_id, "more than one rank needs a gradient average");
  check_cuda(cudaSetDevice(spec.device), "cudaSetDevice");
}

}  // namespace

GpuTraining::GpuTraining(const GpuStepSpec& spec, std::span<const float> params, Optimizer& optimizer)
    : device_(spec.device) {
  use_device(spec);
  if (spec.nccl_id) nccl_ = std::make_unique<NcclComm>(*spec.nccl_id, spec.world, spec.rank);
  step_ = std::make_unique<GpuTrainStep>(spec, params, nccl_.get());
  std::vector<std::span<const float>> state;
  for (const auto& [name, buffer] : optimizer.state()) state.emplace_back(buffer);
  step_->load_optimizer_state(state);
}

GpuTraining::~GpuTraining() {
  // Unwinding, a peer may be gone with collectives still queued for it, and freeing the step's
  // buffers (cudaFree can synchronize) would wait for them: the graphs go first, then the
  // communicator is aborted so its kernels return; only then are the buffers freed.
  if (nccl_ && std::uncaught_exceptions() > 0) {
    step_->release_graphs();
    nccl_->abort();
  }
}

void GpuTraining::start_epoch(int64_t epoch, std::span<const int64_t> order, int64_t steps_before, int64_t steps) {
  step_->start_epoch(epoch, order, steps_before, steps);
}

void GpuTraining::step(const std::vector<int64_t>& micro_batch_sizes, bool timed) {
  step_->step(micro_batch_sizes, timed);
}

std::optional<DeviceStepMarks> GpuTraining::take_timed_step() { return step_->take_timed_step(); }

std::vector<double> GpuTraining::epoch_sum_squares() const { return step_->epoch_sum_squares(); }

double GpuTraining::validation_sum_squares(int64_t epoch) {
  const int64_t samples = step_->validation_samples();
  if (samples == 0) return 0;  // a rank past a validation set smaller than the world
  return step_->validate(epoch, samples).sum_squares;
}

int64_t GpuTraining::validation_samples() const { return step_->validation_samples(); }

double GpuTraining::gemm_peak_flops() { return step_->gemm_peak_flops(); }

std::string GpuTraining::pci_bus_id() const {
  char id[32] = {};  // "0000:3b:00.0": 13 bytes with the terminator
  check_cuda(cudaDeviceGetPCIBusId(id, static_cast<int>(sizeof(id)), device_), "cudaDeviceGetPCIBusId");
  return id;
}

void GpuTraining::copy_to_host(std::span<float> params, Optimizer& optimizer) const {
  const std::vector<float> device_params = step_->params();
  DDP_CHECK_EQ(device_params.size(), params.size());
  std::copy(device_params.begin(), device_params.end(), params.begin());
  const std::vector<std::vector<float>> device_state = step_->optimizer_state();
  const auto host_state = optimizer.state();
  DDP_CHECK_EQ(device_state.size(), host_state.size());
  for (std::size_t i = 0; i < host_state.size(); ++i) {
    DDP_CHECK_EQ(device_state[i].size(), host_state[i].second.size());
    std::copy(device_state[i].begin(), device_state[i].end(), host_state[i].second.begin());
  }
}

}  // namespace ddp
