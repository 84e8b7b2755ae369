// A build without CUDA: check_accelerator refuses every GPU run (saying how to get a CUDA
// build) before a Trainer could construct one, so reaching here is our own bug.
#include "base/check.h"
#include "ddpscope/error.h"
#include "gpu/gpu_training.h"

namespace ddp {

class GpuTrainStep {};

GpuTraining::GpuTraining(const GpuStepSpec& /*spec*/, std::span<const float> /*params*/, Optimizer& /*optimizer*/) {
  DDP_CHECK(false, "a GPU run in a build without CUDA: check_accelerator refuses it first");
}

GpuTraining::~GpuTraining() = default;
void GpuTraining::start_epoch(int64_t, std::span<const int64_t>, int64_t, int64_t) {}
void GpuTraining::step(const std::vector<int64_t>&, bool) {}
std::optional<DeviceStepMarks> GpuTraining::take_timed_step() { return std::nullopt; }
std::vector<double> GpuTraining::epoch_sum_squares() const { return {}; }
double GpuTraining::validation_sum_squares(int64_t) { return 0; }
int64_t GpuTraining::validation_samples() const { return 0; }
void GpuTraining::copy_to_host(std::span<float>, Optimizer&) const {}
std::string GpuTraining::pci_bus_id() const { return ""; }
double GpuTraining::gemm_peak_flops() { return 0; }

}  // namespace ddp
